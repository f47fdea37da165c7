//! Linux's delayed ACKs (`tcp_input.c`, `tcp_output.c`): quick-ACK mode at
//! the start of the data (`tcp_incr_quickack` on the first segment) and
//! after a spurious retransmission (`tcp_enter_quickack_mode`), every
//! segment acknowledged at once while it lasts, then every second segment
//! or after `ato`, which starts at `TCP_ATO_MIN` (40 ms) and follows the
//! gaps between segments.

use ncmesh_proto::data::Data;
use ncmesh_proto::tcp::{AckPolicy, Connection, QuickAck, Segment, TcpConfig, TcpReceiver};
use ncmesh_proto::time::{Duration, Instant};

const MSS: u64 = 1000;

fn receiver(policy: AckPolicy) -> TcpReceiver {
    let config = TcpConfig { delayed_ack: true, ack_policy: policy, rcv_window: 100, ..TcpConfig::default() };
    TcpReceiver::new(&config, Connection { local_port: 2, remote_port: 1, local_isn: 0, remote_isn: 0 })
}

fn seg(i: u64) -> Segment {
    let mut s = Segment::new(1, 2);
    s.seq = (i * MSS) as u32;
    s.data = Data::Virtual { len: MSS as u32, offset: i * MSS };
    s
}

/// Feeds segments `from..to`, `gap` apart from `*t`; returns the ACKs sent at once.
fn feed(r: &mut TcpReceiver, t: &mut Instant, from: u64, to: u64, gap: Duration) -> usize {
    let mut acks = 0;
    for i in from..to {
        *t += gap;
        r.handle_segment(*t, &seg(i));
        acks += std::iter::from_fn(|| r.poll_transmit(*t)).count();
    }
    acks
}

#[test]
fn the_first_sixteen_segments_are_acknowledged_one_by_one() {
    let gap = Duration::from_millis(8);
    let mut t = Instant::ZERO;
    let mut r = receiver(AckPolicy::Linux);
    // rcv_wnd / (2 rcv_mss) = 50 quick ACKs allowed, TCP_MAX_QUICKACKS = 16 given.
    assert_eq!(feed(&mut r, &mut t, 0, 16, gap), 16);
    assert_eq!(feed(&mut r, &mut t, 16, 26, gap), 5, "then every second segment");
    // RFC 5681 alone delays from the first segment.
    let mut t = Instant::ZERO;
    let mut r = receiver(AckPolicy::Rfc5681);
    assert_eq!(feed(&mut r, &mut t, 0, 16, gap), 8);
}

#[test]
fn a_segment_received_twice_starts_quick_acks_again() {
    let gap = Duration::from_millis(8);
    let mut t = Instant::ZERO;
    let mut r = receiver(AckPolicy::Linux);
    feed(&mut r, &mut t, 0, 30, gap);
    // The sender resent segment 29: it missed our ACKs.
    assert_eq!(feed(&mut r, &mut t, 29, 30, gap), 1);
    assert_eq!(feed(&mut r, &mut t, 30, 40, gap), 10, "quick ACKs after a duplicate");
}

#[test]
fn a_lone_segment_waits_ato_which_starts_at_40_ms() {
    let mut t = Instant::ZERO;
    let mut r = receiver(AckPolicy::Linux);
    feed(&mut r, &mut t, 0, 20, Duration::from_millis(8));
    let at = t + Duration::from_millis(8);
    r.handle_segment(at, &seg(20));
    assert_eq!(r.poll_transmit(at), None);
    // Segments 8 ms apart keep ato at TCP_ATO_MIN.
    assert_eq!(r.poll_timeout(), Some(at + Duration::from_millis(40)));
}

#[test]
fn ato_follows_the_gaps_between_segments() {
    let ms = Duration::from_millis;
    let rto = Duration::from_secs(1);
    let mut q = QuickAck::new(100);
    let mut t = Instant::ZERO;
    q.on_data(t, rto);
    // Gaps of 100 ms are longer than ato: ato stays.
    t += ms(100);
    q.on_data(t, rto);
    assert_eq!(q.delay(None, ms(200)), ms(40));
    // A gap of 30 ms (between 20 ms and ato): ato = ato / 2 + gap = 50 ms.
    t += ms(30);
    q.on_data(t, rto);
    assert_eq!(q.delay(None, ms(200)), ms(50));
    // A gap of 5 ms pulls it back: ato / 2 + 20 ms = 45 ms.
    t += ms(5);
    q.on_data(t, rto);
    assert_eq!(q.delay(None, ms(200)), ms(45));
    // Past 40 ms it is bounded by the smoothed RTT and TCP_DELACK_MAX.
    assert_eq!(q.delay(Some(ms(42)), ms(200)), ms(42));
    assert_eq!(q.delay(None, ms(44)), ms(44));
}

#[test]
fn an_idle_gap_longer_than_the_rto_starts_quick_acks_again() {
    let mut t = Instant::ZERO;
    let mut r = receiver(AckPolicy::Linux);
    feed(&mut r, &mut t, 0, 30, Duration::from_millis(8));
    assert_eq!(feed(&mut r, &mut t, 30, 32, Duration::from_millis(8)), 1);
    // The RTO without a handshake sample is the initial 1 s.
    assert_eq!(feed(&mut r, &mut t, 32, 33, Duration::from_secs(2)), 1);
    assert_eq!(feed(&mut r, &mut t, 33, 36, Duration::from_millis(8)), 3);
}
