//! What the `ns3` profile copies of ns-3's NewReno after a loss, each
//! behind its own setting: congestion avoidance that adds MSS^2/cwnd on
//! every ACK from the window the last ACK left (`ca_counting = "acks"`,
//! `TcpNewReno::CongestionAvoidance`), and the exit from `CA_LOSS` that
//! counts only the segments past the recovery point (`rto_exit_beyond_point`,
//! `TcpSocketBase::ProcessAck`). Figures are ns-3 3.44's, from its traces of
//! the lossy chain (docs/validation.md).

use ncmesh_proto::tcp::{
    AckEvent, CongestionControl, Connection, Counting, Flags, Profile, Reno, Segment, TcpConfig, TcpSender, Window,
};
use ncmesh_proto::time::Instant;

const MSS: u64 = 1000;

fn ack_event(acked: u64) -> AckEvent {
    AckEvent {
        now: Instant::ZERO,
        acked,
        rtt: None,
        ca_rtt: None,
        srtt: None,
        snd_una: 0,
        snd_max: 0,
        prior_in_flight: 0,
    }
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

const CONN: Connection = Connection { local_port: 1, remote_port: 2, local_isn: 0, remote_isn: 0 };

fn drain(s: &mut TcpSender, now: Instant) -> Vec<Segment> {
    std::iter::from_fn(|| s.poll_transmit(now)).collect()
}

fn ack(n: u64) -> Segment {
    let mut a = Segment::new(2, 1);
    a.flags = Flags::ACK;
    a.ack = n as u32;
    a.window = (50 * MSS) as u16;
    a
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
    s.handle_ack(t + ncmesh_proto::time::Duration::from_secs(1), &ack(2 * MSS));
    assert_eq!(s.cwnd(), MSS, "no growth on leaving the loss state");
    assert_eq!(s.ssthresh(), 2 * MSS);
    // Without the setting, slow start counts that ACK.
    let (mut s, t) = timed_out(2, false);
    s.handle_ack(t + ncmesh_proto::time::Duration::from_secs(1), &ack(2 * MSS));
    assert_eq!(s.cwnd(), 2 * MSS);
}

#[test]
fn acks_below_the_recovery_point_grow_the_window_as_before() {
    let (mut s, t) = timed_out(4, true);
    let later = |ms| t + ncmesh_proto::time::Duration::from_millis(ms);
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
    let later = |ms| t + ncmesh_proto::time::Duration::from_millis(ms);
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

#[test]
fn the_ns3_profile_sets_both_and_the_ns2_profile_neither() {
    let ns3 = TcpConfig::profile(Profile::Ns3);
    assert_eq!((ns3.ca_counting, ns3.rto_exit_beyond_point), (Counting::Acks, true));
    let ns2 = TcpConfig::profile(Profile::Ns2);
    assert_eq!((ns2.ca_counting, ns2.rto_exit_beyond_point), (Counting::Bytes, false));
    let linux = TcpConfig::profile(Profile::Linux);
    assert!(!linux.rto_exit_beyond_point);
}
