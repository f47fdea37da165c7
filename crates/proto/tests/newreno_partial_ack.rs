//! Three losses in one window: NewReno (RFC 6582) repairs them in one
//! recovery episode, one partial ACK per further hole, without a timeout.
//! Reno, which leaves recovery on the first new ACK, cannot.

use ncmesh_proto::tcp::{TcpConfig, Variant};
use ncmesh_proto::testing::{drop_first_transmission, Link, Pair};
use ncmesh_proto::time::{Duration, Instant};

const MSS: u64 = 1000;
const HOLES: [u64; 3] = [5 * MSS, 9 * MSS, 13 * MSS];

fn pair(variant: Variant) -> Pair {
    let config = TcpConfig { variant, initial_cwnd: 20, slow_start: false, rcv_window: 200, ..TcpConfig::default() };
    let fwd = Link::new(Duration::from_millis(25)).with_rate(10_000_000).with_drop(drop_first_transmission(HOLES));
    let mut p = Pair::new(&config, fwd, Link::new(Duration::from_millis(25)));
    p.push(200 * MSS);
    p
}

#[test]
fn newreno_repairs_three_holes_in_one_episode() {
    let mut p = pair(Variant::NewReno);
    let mut partial_deadlines = vec![];
    let mut episodes = 0;
    let mut was_in_recovery = false;
    while !p.sender.is_finished() {
        let (partials, cwnd, una) = (p.sender.stats().partial_acks, p.sender.cwnd(), p.sender.snd_una());
        assert!(p.step());
        assert!(p.now < Instant::from_secs_f64(30.0));
        if p.sender.stats().partial_acks > partials {
            // Deflate by the newly acknowledged bytes, add one MSS back.
            let acked = p.sender.snd_una() - una;
            assert_eq!(p.sender.cwnd(), cwnd - acked + MSS);
            partial_deadlines.push(p.sender.poll_timeout().unwrap());
        }
        if p.sender.in_recovery() && !was_in_recovery {
            episodes += 1;
        }
        was_in_recovery = p.sender.in_recovery();
    }
    let s = p.sender.stats();
    assert_eq!(episodes, 1);
    assert_eq!(s.fast_retransmits, 1);
    assert_eq!(s.partial_acks, 2);
    assert_eq!(s.timeouts, 0);
    assert_eq!(s.retransmits, 3);
    for h in HOLES {
        assert_eq!(p.transmissions_of(h).len(), 2, "hole at {h}");
    }
    // The timer is restarted on the first partial ACK only.
    assert_eq!(partial_deadlines[0], partial_deadlines[1]);
    assert_eq!(p.delivered_bytes, 200 * MSS);
}

#[test]
fn reno_needs_more_than_one_halving_or_a_timeout() {
    let mut p = pair(Variant::Reno);
    assert!(p.run_to_finish(Instant::from_secs_f64(60.0)));
    let s = p.sender.stats();
    assert!(s.fast_retransmits + s.timeouts >= 2, "{s:?}");
    assert_eq!(p.delivered_bytes, 200 * MSS);
}

/// RFC 6582 section 3.2, step 2: after a timeout, duplicate ACKs below
/// `recover` echo go-back-N retransmissions of segments the receiver
/// already holds, and must not start a fast retransmit.
#[test]
fn duplicate_acks_below_recover_after_a_timeout_start_no_fast_retransmit() {
    use ncmesh_proto::testing::offset_of;
    use std::collections::HashMap;

    let config = TcpConfig {
        variant: Variant::NewReno,
        initial_cwnd: 20,
        slow_start: false,
        rcv_window: 200,
        ..TcpConfig::default()
    };
    // Segment 5 loses its first transmission and its fast retransmission,
    // so the timer fires; segment 9 loses its first, so that the recovery
    // after the timeout resends segments 10 and on, which the receiver holds.
    let mut sent: HashMap<u64, u32> = HashMap::new();
    let drop = Box::new(move |_: Instant, s: &ncmesh_proto::tcp::Segment| {
        let Some(offset) = offset_of(s) else { return false };
        let n = sent.entry(offset).or_insert(0);
        *n += 1;
        (offset == 5 * MSS && *n <= 2) || (offset == 9 * MSS && *n == 1)
    });
    let fwd = Link::new(Duration::from_millis(25)).with_rate(10_000_000).with_drop(drop);
    let mut p = Pair::new(&config, fwd, Link::new(Duration::from_millis(25)));
    p.push(60 * MSS);
    assert!(p.run_to_finish(Instant::from_secs_f64(30.0)));
    let s = p.sender.stats();
    assert_eq!(s.timeouts, 1);
    assert!(s.dupacks > 3, "duplicate ACKs came after the timeout too ({} in all)", s.dupacks);
    assert_eq!(s.fast_retransmits, 1, "only the first loss starts a fast retransmit");
    assert_eq!(p.delivered_bytes, 60 * MSS);
}
