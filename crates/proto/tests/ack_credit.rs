//! What an ACK that advances snd.una credits to window growth
//! (`ack_credit`). RFC 5681 counts every byte it cumulatively acknowledges;
//! Linux (`tcp_newly_delivered`, the `acked_sacked` its `cong_avoid` gets)
//! and ns-3 (`currentDelivered`) count the bytes newly delivered, SACKed
//! ones when they are SACKed, so that each segment counts once. The
//! difference shows after a timeout: the receiver's SACKed run behind a
//! resent hole no longer doubles the window on one ACK.

use ncmesh_proto::tcp::{AckCredit, Profile, Segment, TcpConfig, TcpSender, Variant};
use ncmesh_proto::testing::{drain, CONN};
use ncmesh_proto::time::{Duration, Instant};

const MSS: u64 = 1000;

/// The linux profile with Reno, no handshake, no timestamps and no RACK, so
/// that only the credit differs between runs.
fn sender(credit: AckCredit, initial_cwnd: u32) -> TcpSender {
    let config = TcpConfig {
        variant: Variant::Reno,
        handshake: false,
        timestamps: false,
        rack: false,
        initial_cwnd,
        mss: MSS as u32,
        ack_credit: credit,
        ..TcpConfig::profile(Profile::Linux)
    };
    let mut s = TcpSender::new(&config, CONN);
    s.push(u64::MAX);
    assert_eq!(drain(&mut s, Instant::ZERO).len(), initial_cwnd as usize);
    s
}

/// `ms` milliseconds after the first ACK of every case, at 0.5 s.
fn at(ms: u64) -> Instant {
    Instant::from_secs_f64(0.5) + Duration::from_millis(ms)
}

/// An ACK of `n` bytes with SACK blocks `[start, end)`.
fn ack(n: u64, blocks: &[(u64, u64)]) -> Segment {
    ncmesh_proto::testing::ack(n, u16::MAX, blocks)
}

#[test]
fn after_a_timeout_the_resent_hole_counts_once_not_the_sacked_run_behind_it() {
    let run = |credit| {
        // Four segments out; 1 to 3 arrive and are SACKed, the head is lost.
        let mut s = sender(credit, 4);
        s.handle_ack(at(0), &ack(0, &[(1000, 4000)]));
        let rto = s.poll_timeout().unwrap();
        s.handle_timeout(rto);
        assert_eq!(drain(&mut s, rto).iter().map(|x| x.seq).collect::<Vec<_>>(), [0]);
        assert_eq!((s.cwnd(), s.ssthresh()), (MSS, 2 * MSS));
        // The resent head arrives: the ACK covers all four.
        s.handle_ack(rto + Duration::from_secs(1), &ack(4000, &[]));
        s.cwnd()
    };
    // Linux's trace of this moment on the lossy chain: cwnd 1, then 2.
    assert_eq!(run(AckCredit::Delivered), 2 * MSS);
    // RFC 5681's N: slow start to ssthresh (2), and 2000 bytes of
    // congestion avoidance's 2000 more make a third segment.
    assert_eq!(run(AckCredit::Cumulative), 3 * MSS);
}

#[test]
fn sacked_bytes_count_when_sacked_and_not_again_when_acknowledged() {
    let run = |credit| {
        let mut s = sender(credit, 4);
        // Segment 0 and, out of order, 2 and 3 arrive; 1 is late.
        s.handle_ack(at(0), &ack(1000, &[(2000, 4000)]));
        let first = s.cwnd();
        drain(&mut s, at(0));
        s.handle_ack(at(10), &ack(4000, &[]));
        (first, s.cwnd())
    };
    // Slow start: 4 segments, then +3 delivered (0, 2, 3), then +1 (segment 1).
    assert_eq!(run(AckCredit::Delivered), (7 * MSS, 8 * MSS));
    // +1 for segment 0, then +3 for 1 to 3: the same total, a round later.
    assert_eq!(run(AckCredit::Cumulative), (5 * MSS, 8 * MSS));
}

#[test]
fn an_ack_over_sacked_bytes_only_grows_nothing() {
    let run = |credit| {
        let mut s = sender(credit, 4);
        s.handle_ack(at(0), &ack(1000, &[(2000, 4000)]));
        let before = s.cwnd();
        // Segment 1 arrives late and is SACKed; snd.una stays.
        s.handle_ack(at(5), &ack(1000, &[(1000, 4000)]));
        let after_sack = s.cwnd();
        // Then an ACK covers 1 to 3, every one of them SACKed before.
        s.handle_ack(at(10), &ack(4000, &[]));
        (before, after_sack, s.cwnd())
    };
    // Delivered: segment 1 is credited on the ACK that SACKs it, which does
    // not advance snd.una and so grows nothing (Linux's `tcp_may_raise_cwnd`
    // wants `FLAG_DATA_ACKED`), and not again on the ACK that covers it.
    assert_eq!(run(AckCredit::Delivered), (7 * MSS, 7 * MSS, 7 * MSS));
    assert_eq!(run(AckCredit::Cumulative), (5 * MSS, 5 * MSS, 8 * MSS));
}

/// The first flight after a short write: iperf3 writes a 37-byte cookie,
/// and the data follows once it is acknowledged.
fn first_flight_after_a_cookie(variant: Variant, count_packets: bool) -> usize {
    let config = TcpConfig {
        variant,
        handshake: false,
        timestamps: false,
        mss: MSS as u32,
        count_packets,
        ..TcpConfig::profile(Profile::Linux)
    };
    let mut s = TcpSender::new(&config, CONN);
    s.push(37);
    assert_eq!(drain(&mut s, Instant::ZERO).len(), 1);
    s.handle_ack(at(0), &ack(37, &[]));
    s.push(u64::MAX);
    // BBR paces all but the first ten segments, the cookie among them: run
    // the pacing timer for a while, no ACK arriving.
    let mut sent = drain(&mut s, at(0)).len();
    while let Some(t) = s.poll_timeout().filter(|&t| t < at(400)) {
        s.handle_timeout(t);
        sent += drain(&mut s, t).len();
    }
    sent
}

#[test]
fn linux_counts_the_ack_of_a_short_segment_as_a_whole_one() {
    // Linux's kernel BBR and CUBIC sent 11 segments after iperf3's cookie
    // on the emulated chain (`packets_out` at the first data ACK, 26 of 29
    // traced runs): the cookie's ACK grows the window by one packet.
    for variant in [Variant::Bbr, Variant::Cubic] {
        assert_eq!(first_flight_after_a_cookie(variant, true), 11, "{variant:?}");
        assert_eq!(first_flight_after_a_cookie(variant, false), 10, "{variant:?}: 37 bytes more");
    }
}
