//! After a loss, CUBIC's window follows RFC 9438's curve
//! `W_cubic(t) = C (t - K)^3 + W_max`, or the Reno-friendly `W_est` where
//! that is larger, both computed here from the RFC's formulas.

use ncmesh_proto::tcp::{TcpConfig, Variant};
use ncmesh_proto::testing::{drop_first_transmission, Link, Pair};
use ncmesh_proto::time::Duration;

const MSS: u64 = 1000;
const C: f64 = 0.4;
const BETA: f64 = 0.7;
/// No bottleneck: the RTT is the two 50 ms propagation delays.
const RTT: f64 = 0.1;

fn run(sack: bool) {
    let config = TcpConfig {
        variant: Variant::Cubic,
        sack,
        initial_cwnd: 100,
        slow_start: false,
        rcv_window: 5000,
        ..TcpConfig::default()
    };
    let fwd = Link::new(Duration::from_millis(50)).with_drop(drop_first_transmission([150 * MSS]));
    let mut p = Pair::new(&config, fwd, Link::new(Duration::from_millis(50)));
    p.push(u64::MAX);

    let mut cwnd_at_loss = 0;
    while !p.sender.in_recovery() {
        cwnd_at_loss = p.sender.cwnd();
        assert!(p.step());
    }
    let w_max = cwnd_at_loss as f64 / MSS as f64;
    assert_eq!(p.sender.ssthresh(), (cwnd_at_loss as f64 * BETA) as u64);
    while p.sender.in_recovery() {
        assert!(p.step());
    }
    // The epoch starts with the first ACK in congestion avoidance; without a
    // bottleneck it arrives together with the one that ended recovery.
    let t0 = p.now;
    let k = (w_max * (1.0 - BETA) / C).cbrt();
    let w_cubic = |t: f64| C * (t - k).powi(3) + w_max;
    // Equation 4 with alpha = 3 (1 - beta) / (1 + beta) per RTT, and 1 once
    // W_est has passed W_max.
    let alpha = 3.0 * (1.0 - BETA) / (1.0 + BETA);
    let w_est = |t: f64| {
        let start = w_max * BETA;
        let rtts = t / RTT;
        let to_max = (w_max - start) / alpha;
        if rtts <= to_max {
            start + alpha * rtts
        } else {
            w_max + (rtts - to_max)
        }
    };

    let mut worst: f64 = 0.0;
    let mut cubic_region = 0;
    for i in 1..=40 {
        let t = 0.25 * i as f64;
        let at = t0 + Duration::from_secs_f64(t);
        while p.next_event().is_some_and(|e| e <= at) {
            p.step();
        }
        let cwnd = p.sender.cwnd() as f64 / MSS as f64;
        let expected = w_cubic(t).max(w_est(t));
        if w_cubic(t) > w_est(t) {
            cubic_region += 1;
        }
        let err = (cwnd - expected).abs();
        worst = worst.max(err / expected);
        assert!(
            err <= 3.0f64.max(0.04 * expected),
            "t = {t}: cwnd {cwnd:.1}, expected {expected:.1} (W_cubic {:.1}, W_est {:.1})",
            w_cubic(t),
            w_est(t)
        );
    }
    // The comparison covered the concave and the convex part of the curve.
    assert!(cubic_region >= 20);
    assert!(10.0 > k);
    assert_eq!(p.sender.stats().fast_retransmits, 1);
    assert_eq!(p.sender.stats().timeouts, 0);
    assert!(worst < 0.03, "worst relative error {worst}");
}

#[test]
fn window_follows_w_cubic_after_a_loss_with_sack() {
    run(true);
}

#[test]
fn window_follows_w_cubic_after_a_loss_with_newreno_recovery() {
    run(false);
}
