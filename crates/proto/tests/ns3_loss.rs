//! What the `ns3` profile copies of ns-3's NewReno after a loss, each
//! behind its own setting: congestion avoidance that adds MSS^2/cwnd on
//! every ACK from the window the last ACK left (`ca_counting = "acks"`,
//! `TcpNewReno::CongestionAvoidance`); the exit from `CA_LOSS` that counts
//! only the segments past the recovery point (`rto_exit_beyond_point`,
//! `TcpSocketBase::ProcessAck`); the SACK scoreboard kept across a timeout
//! (`keep_sack_after_rto`, `TcpTxBuffer::SetSentListLost`) with only the holes
//! below the highest SACK resent (`resend_below_highest_sack`, `NextSeg`); no RTT
//! sample after a timeout before new data is acknowledged
//! (`rto_clears_rtt_history`, `m_history`); and PRR's credit for duplicate
//! ACKs (`prr_dupack_credit`, `TcpPrrRecovery::DoRecovery`). Figures are
//! ns-3 3.44's, from its traces of the lossy chain (docs/validation.md).

use ncmesh_proto::tcp::{
    AckEvent, CongestionControl, Counting, Profile, Reno, Segment, TcpConfig, TcpSender, Timestamps, Window,
};
use ncmesh_proto::testing::{drain, CONN};
use ncmesh_proto::time::{Duration, Instant};

const MSS: u64 = 1000;

fn ack_event(acked: u64) -> AckEvent {
    AckEvent { acked, ..AckEvent::default() }
}

/// The windows after each of `acks` ACKs of `each` bytes, from 2 segments in congestion avoidance.
fn avoidance(counting: Counting, each: u64, acks: usize) -> Vec<u64> {
    let mut reno = Reno::new(1, counting);
    let mut w = Window { cwnd: 2 * MSS, ssthresh: 2 * MSS, mss: MSS };
    (0..acks)
        .map(|_| {
            reno.on_ack(&mut w, &ack_event(each));
            w.cwnd
        })
        .collect()
}

#[test]
fn each_ack_adds_mss_squared_over_the_window_it_finds() {
    // ns-3's CongestionWindow trace on the chain after an RTO with ssthresh
    // at 2 segments, one delayed ACK of two segments after another.
    let ns3 = [2500, 2900, 3244, 3552, 3833, 4093, 4337, 4567, 4785, 4993, 5193];
    assert_eq!(avoidance(Counting::Acks, 2 * MSS, 11), ns3);
    // One MSS per window's worth of one-segment ACKs, the increment held
    // back until it is whole, reaches 5 segments after 2 + 3 + 4 = 9 ACKs.
    let whole = avoidance(Counting::Bytes, MSS, 9);
    assert_eq!(whole, [2000, 3000, 3000, 3000, 4000, 4000, 4000, 4000, 5000]);
}

#[test]
fn an_ack_covering_many_segments_counts_once() {
    let mut reno = Reno::new(1, Counting::Acks);
    let mut w = Window { cwnd: 4 * MSS, ssthresh: 2 * MSS, mss: MSS };
    reno.on_ack(&mut w, &ack_event(10 * MSS));
    assert_eq!(w.cwnd, 4250);
}

fn ack(n: u64) -> Segment {
    ncmesh_proto::testing::ack(n, (50 * MSS) as u16, &[])
}

/// An ns3-profile sender without the handshake, `initial_cwnd` segments
/// sent and timed out: the window is one segment and the head is resent.
fn timed_out(initial_cwnd: u32, rto_exit_beyond_point: bool) -> (TcpSender, Instant) {
    let config = TcpConfig {
        handshake: false,
        timestamps: false,
        initial_cwnd,
        rcv_window: 50,
        rto_exit_beyond_point,
        ..TcpConfig::profile(Profile::Ns3)
    };
    let mut s = TcpSender::new(&config, CONN);
    s.push(u64::MAX);
    assert_eq!(drain(&mut s, Instant::ZERO).len(), initial_cwnd as usize);
    let t = s.poll_timeout().unwrap();
    s.handle_timeout(t);
    let out = drain(&mut s, t);
    assert_eq!((out.len(), out[0].seq, s.cwnd()), (1, 0, MSS));
    (s, t)
}

#[test]
fn the_ack_that_reaches_the_recovery_point_grows_by_the_segments_past_it() {
    // Two segments out at the timeout; the resent head fills the hole and the
    // ACK covers both: ns-3 leaves CA_LOSS with segsAcked = 0, so one segment.
    let (mut s, t) = timed_out(2, true);
    s.handle_ack(t + Duration::from_secs(1), &ack(2 * MSS));
    assert_eq!(s.cwnd(), MSS, "no growth on leaving the loss state");
    assert_eq!(s.ssthresh(), 2 * MSS);
    // Without the setting, slow start counts that ACK.
    let (mut s, t) = timed_out(2, false);
    s.handle_ack(t + Duration::from_secs(1), &ack(2 * MSS));
    assert_eq!(s.cwnd(), 2 * MSS);
}

#[test]
fn acks_below_the_recovery_point_grow_the_window_as_before() {
    let (mut s, t) = timed_out(4, true);
    let later = |ms| t + Duration::from_millis(ms);
    s.handle_ack(later(1000), &ack(MSS));
    assert_eq!(s.cwnd(), 2 * MSS, "slow start below the point");
    drain(&mut s, later(1000));
    // Reaching the point exactly: nothing past it, no growth.
    s.handle_ack(later(2000), &ack(4 * MSS));
    assert_eq!(s.cwnd(), 2 * MSS);
    drain(&mut s, later(2000));
    // From then on, congestion avoidance as usual (ssthresh is 2 segments).
    s.handle_ack(later(3000), &ack(5 * MSS));
    assert_eq!(s.cwnd(), 2500);
}

#[test]
fn an_ack_past_the_point_counts_whole_segments_beyond_it() {
    let (mut s, t) = timed_out(3, true);
    let later = |ms| t + Duration::from_millis(ms);
    s.handle_ack(later(1000), &ack(MSS));
    assert_eq!(s.cwnd(), 2 * MSS);
    let out = drain(&mut s, later(1000));
    assert_eq!(out.iter().map(|x| x.seq).collect::<Vec<_>>(), [1000, 2000], "go back N");
    // At ssthresh: congestion avoidance, and room for one new segment.
    s.handle_ack(later(1500), &ack(2 * MSS));
    assert_eq!(s.cwnd(), 2500);
    let out = drain(&mut s, later(1500));
    assert_eq!(out.iter().map(|x| x.seq).collect::<Vec<_>>(), [3000]);
    // Half a segment past the point at 3000: no whole segment, no growth.
    s.handle_ack(later(2000), &ack(3500));
    assert_eq!(s.cwnd(), 2500);
    // Out of the loss state, every ACK counts again.
    s.handle_ack(later(2100), &ack(4000));
    assert_eq!(s.cwnd(), 2900);
}

/// An ACK of `n` bytes with SACK blocks `[start, end)` and, if given, a timestamp echo.
fn sack(n: u64, blocks: &[(u64, u64)], echo: Option<(Instant, Instant)>) -> Segment {
    let mut a = ncmesh_proto::testing::ack(n, (50 * MSS) as u16, blocks);
    a.timestamp = echo.map(|(now, sent)| Timestamps { value: micros(now), echo: micros(sent) });
    a
}

fn micros(t: Instant) -> u32 {
    (t.0 / 1000) as u32
}

fn ns3(f: impl FnOnce(&mut TcpConfig)) -> TcpConfig {
    let mut c = TcpConfig { handshake: false, timestamps: false, rcv_window: 50, ..TcpConfig::profile(Profile::Ns3) };
    f(&mut c);
    c
}

fn seqs(out: &[Segment]) -> Vec<u32> {
    out.iter().map(|x| x.seq).collect()
}

#[test]
fn after_a_timeout_sacked_segments_stay_sacked_and_only_holes_below_them_are_resent() {
    let run = |keep: bool, below: bool| {
        let config = ns3(|c| {
            (c.initial_cwnd, c.keep_sack_after_rto, c.resend_below_highest_sack) = (6, keep, below);
        });
        let mut s = TcpSender::new(&config, CONN);
        s.push(u64::MAX);
        assert_eq!(drain(&mut s, Instant::ZERO).len(), 6);
        // Segments 2 and 3 arrive: too few SACKs for a fast retransmit.
        let t = Instant::from_secs_f64(0.5);
        s.handle_ack(t, &sack(0, &[(2000, 4000)], None));
        assert!(!s.in_recovery());
        let rto = s.poll_timeout().unwrap();
        s.handle_timeout(rto);
        assert_eq!(seqs(&drain(&mut s, rto)), [0]);
        let sacked_after_rto = s.sacked_bytes();
        // The resent head arrives; the receiver still holds 2 and 3.
        let t = rto + Duration::from_secs(1);
        s.handle_ack(t, &sack(1000, &[(2000, 4000)], None));
        (sacked_after_rto, seqs(&drain(&mut s, t)))
    };
    // ns-3: segment 1 lies below the highest SACKed segment and is resent;
    // 4 and 5 lie above it, stay marked lost, and new data goes in their place.
    assert_eq!(run(true, true), (2000, vec![1000, 6000]));
    // Linux: the SACKs are kept and every other segment is resent, 4 and 5 too.
    assert_eq!(run(true, false), (2000, vec![1000, 4000]));
    // RFC 2018 section 8: the SACKs are forgotten and the sender goes back N
    // (the next ACK SACKs 2 and 3 again).
    assert_eq!(run(false, false), (0, vec![1000, 4000]));
}

#[test]
fn after_a_timeout_no_rtt_sample_until_new_data_is_acknowledged() {
    let run = |clears: bool| {
        let config = ns3(|c| (c.initial_cwnd, c.timestamps, c.rto_clears_rtt_history) = (2, true, clears));
        let mut s = TcpSender::new(&config, CONN);
        s.push(u64::MAX);
        drain(&mut s, Instant::ZERO);
        let rto = s.poll_timeout().unwrap();
        s.handle_timeout(rto);
        assert_eq!(seqs(&drain(&mut s, rto)), [0]);
        let mut samples = vec![];
        // The resent head, then the resent second segment with the first
        // new one, then that new one, each acknowledged after 1.2 s.
        let mut sent = rto;
        for n in [1000, 2000, 3000] {
            let t = sent + Duration::from_millis(1200);
            s.handle_ack(t, &sack(n, &[], Some((t, sent))));
            samples.push(s.stats().rtt_samples);
            drain(&mut s, t);
            sent = t;
        }
        (samples, s.srtt())
    };
    let (samples, srtt) = run(true);
    assert_eq!(samples, [0, 0, 1], "the ACK of segment 2, the first sent after the RTO, is the first sample");
    assert_eq!(srtt, Some(Duration::from_millis(1200)));
    assert_eq!(run(false).0, [1, 2, 3], "with timestamps every ACK of new data is a sample (RFC 7323)");
}

#[test]
fn prr_counts_a_duplicate_ack_one_segment_more_than_it_delivered() {
    // 20 segments out, the first lost. The first two SACKs each let a new
    // segment out (pipe falls below cwnd, as in ns-3's CA_DISORDER); the
    // third starts recovery with 22 outstanding, 3 SACKed and 1 lost: pipe
    // 18 segments, ssthresh 9. Each further ACK SACKs one segment more.
    let run = |credit: bool| {
        let config = ns3(|c| (c.initial_cwnd, c.prr_dupack_credit) = (20, credit));
        let mut s = TcpSender::new(&config, CONN);
        s.push(u64::MAX);
        drain(&mut s, Instant::ZERO);
        let mut sent = vec![];
        for k in 1..=9u64 {
            let t = Instant::from_secs_f64(1.0 + k as f64 / 100.0);
            s.handle_ack(t, &sack(0, &[(1000, 1000 + k * MSS)], None));
            sent.push(drain(&mut s, t).len());
        }
        assert_eq!(s.ssthresh(), 9 * MSS);
        sent
    };
    // ns-3: one segment per duplicate ACK (the retransmission first), the
    // window held at the 19 segments in flight once the head is resent.
    assert_eq!(run(true), [1, 1, 1, 1, 1, 1, 1, 1, 1]);
    // RFC 6937: ssthresh / RecoverFS = one segment per two delivered.
    assert_eq!(run(false), [1, 1, 1, 0, 0, 1, 0, 1, 0]);
}

#[test]
fn the_ns3_profile_sets_each_and_the_ns2_profile_none() {
    let ns3 = TcpConfig::profile(Profile::Ns3);
    assert_eq!(ns3.ca_counting, Counting::Acks);
    assert!(ns3.rto_exit_beyond_point && ns3.keep_sack_after_rto && ns3.resend_below_highest_sack);
    assert!(ns3.rto_clears_rtt_history && ns3.prr_dupack_credit);
    for other in [Profile::Ns2, Profile::Linux] {
        let c = TcpConfig::profile(other);
        assert_eq!(c.ca_counting, Counting::Bytes);
        assert!(!c.rto_exit_beyond_point && !c.resend_below_highest_sack);
        assert!(!c.rto_clears_rtt_history && !c.prr_dupack_credit);
    }
    // Linux keeps its SACK marks over a timeout as ns-3 does (`tcp_timeout_mark_lost`).
    assert!(TcpConfig::profile(Profile::Linux).keep_sack_after_rto);
    assert!(!TcpConfig::profile(Profile::Ns2).keep_sack_after_rto);
}
