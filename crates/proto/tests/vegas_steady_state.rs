//! Vegas over a bottleneck with a known base RTT: it settles with between
//! alpha and beta of its segments queued at the bottleneck, and never
//! loses, where Reno fills the same buffer until it overflows.

use ncmesh_proto::tcp::{TcpConfig, Variant};
use ncmesh_proto::testing::{Link, Pair};
use ncmesh_proto::time::{Duration, Instant};

const RATE: u64 = 10_000_000;
const BUFFER: usize = 100;

fn pair(variant: Variant) -> Pair {
    let config = TcpConfig { variant, initial_cwnd: 2, rcv_window: 400, ..TcpConfig::default() };
    let fwd = Link::new(Duration::from_millis(10)).with_rate(RATE).with_queue_limit(BUFFER);
    let mut p = Pair::new(&config, fwd, Link::new(Duration::from_millis(10)));
    p.push(u64::MAX);
    p
}

/// Queue length sampled every millisecond from `from` to `to`.
fn sample_queue(p: &mut Pair, from: Instant, to: Instant) -> Vec<usize> {
    let mut out = vec![];
    let mut t = from;
    while t < to {
        while p.next_event().is_some_and(|e| e <= t) {
            p.step();
        }
        out.push(p.forward.queue_len(t));
        t += Duration::from_millis(1);
    }
    out
}

#[test]
fn vegas_keeps_alpha_to_beta_segments_queued_without_loss() {
    let mut p = pair(Variant::Vegas);
    let secs = Instant::from_secs_f64;
    sample_queue(&mut p, Instant::ZERO, secs(10.0));
    let q = sample_queue(&mut p, secs(10.0), secs(30.0));
    let mean = q.iter().sum::<usize>() as f64 / q.len() as f64;
    let (min, max) = (*q.iter().min().unwrap(), *q.iter().max().unwrap());
    // The packet being serialised counts in queue_len, and Vegas's estimate
    // rounds the window to whole segments: allow one segment either side.
    assert!((2.0..=4.0 + 1.0).contains(&mean), "mean queue {mean}, range {min}..={max}");
    assert!(min >= 2 && max <= 4 + 1, "queue range {min}..={max}, mean {mean}");

    // The window settled near the bandwidth-delay product plus the queue.
    let v = p.sender.congestion_control();
    assert_eq!(v.name(), "vegas");
    let base = 0.020 + 1040.0 * 8.0 / RATE as f64;
    let bdp = RATE as f64 / (1040.0 * 8.0) * base;
    let cwnd = p.sender.cwnd() as f64 / 1000.0;
    assert!(cwnd >= bdp + 1.0 && cwnd <= bdp + 6.0, "cwnd {cwnd} segments, bdp {bdp}");

    let s = p.sender.stats();
    assert_eq!(p.forward.overflowed, 0);
    assert_eq!((s.retransmits, s.timeouts), (0, 0));
}

#[test]
fn reno_overflows_the_same_buffer() {
    let mut p = pair(Variant::NewReno);
    p.run_until(Instant::from_secs_f64(30.0), |_| false);
    assert!(p.forward.overflowed > 0);
    assert!(p.sender.stats().retransmits > 0);
}
