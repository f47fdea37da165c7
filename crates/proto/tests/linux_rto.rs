//! Linux's RTO estimator (`tcp_rtt_estimator`, `__tcp_set_rto`): RTO =
//! SRTT + the variance term, which starts at 2 RTT (three RTTs in all),
//! never falls below `TCP_RTO_MIN`, follows the largest deviation of each
//! round trip, and falls only a quarter of the way per round trip.

use ncmesh_proto::tcp::RttEstimator;
use ncmesh_proto::time::Duration;

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

fn linux() -> RttEstimator {
    RttEstimator::new(ms(1000), ms(200), ms(120_000)).linux()
}

#[test]
fn the_first_sample_gives_three_rtts() {
    let mut e = linux();
    e.on_sample(ms(1000), 0, 10);
    assert_eq!(e.rto(), ms(3000));
    // A short path: the variance term is at least TCP_RTO_MIN.
    let mut e = linux();
    e.on_sample(ms(50), 0, 10);
    assert_eq!(e.rto(), ms(250));
}

/// Samples of `rtt`, one per segment acknowledged, ten segments in flight:
/// a round trip ends every eleventh sample. Returns the RTO after each.
fn settle(e: &mut RttEstimator, rtt: Duration, rounds: u64) -> Vec<Duration> {
    (0..rounds * 11)
        .map(|una| {
            e.on_sample(rtt, una, una + 10);
            e.rto()
        })
        .collect()
}

#[test]
fn steady_samples_bring_it_down_a_quarter_per_round_trip_to_srtt_plus_the_minimum() {
    let rtos = settle(&mut linux(), ms(1000), 14);
    // The first round keeps the start's 2000 ms (its peak); then the
    // variance falls a quarter of its distance to TCP_RTO_MIN per round.
    let mut steps: Vec<Duration> = rtos.clone();
    steps.dedup();
    assert_eq!(steps[0], ms(3000));
    assert_eq!(steps[1], ms(1000) + ms(200) + ms(1350));
    for w in steps[1..].windows(2) {
        let (a, b) = (w[0] - ms(1200), w[1] - ms(1200));
        assert!(b.0.abs_diff(a.0 - a.0 / 4) <= 1, "{a} then {b}");
    }
    assert!(steps.len() >= 10, "one step per round trip: {steps:?}");
    assert!(*rtos.last().unwrap() < ms(1300));
    // RFC 6298's variance decays per sample, to SRTT with nothing added.
    let rfc = settle(&mut RttEstimator::new(ms(1000), ms(200), ms(120_000)), ms(1000), 14);
    assert!(*rfc.last().unwrap() < ms(1010), "{}", rfc.last().unwrap());
}

#[test]
fn a_rising_rtt_raises_it_at_once_and_a_falling_one_does_not() {
    let mut rising = linux();
    let settled = *settle(&mut rising, ms(1000), 30).last().unwrap();
    rising.on_sample(ms(2000), 400, 410);
    assert!(rising.rto() >= settled + ms(700), "{} from {settled}", rising.rto());
    // A sample far below: Linux's deviation moves an eighth as much, so the
    // RTO falls with SRTT; RFC 6298's rises with the deviation.
    let mut falling = linux();
    settle(&mut falling, ms(1000), 30);
    falling.on_sample(ms(1), 400, 410);
    assert!(falling.rto() < settled, "{} from {settled}", falling.rto());
    let mut rfc = RttEstimator::new(ms(1000), ms(200), ms(120_000));
    let rfc_settled = *settle(&mut rfc, ms(1000), 30).last().unwrap();
    rfc.on_sample(ms(1), 400, 410);
    assert!(rfc.rto() > rfc_settled + ms(500), "{} from {rfc_settled}", rfc.rto());
}
