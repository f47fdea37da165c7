//! HyStart as Linux's CUBIC runs it (`tcp_cubic.c`): a round's least RTT
//! above `delay_min + clamp(delay_min / 8, 4 ms, 16 ms)` after 8 samples,
//! or ACKs back to back for half the least delay, ends slow start with
//! ssthresh = cwnd; nothing happens below 16 segments.

use ncmesh_proto::tcp::{AckEvent, HyStart, SlowStartExit, SlowStartWatch, TcpConfig, Variant, Window};
use ncmesh_proto::testing::{Link, Pair};
use ncmesh_proto::time::{Duration, Instant};

const MSS: u64 = 1000;

fn ack(now: Instant, snd_una: u64, snd_max: u64, rtt_ms: f64) -> AckEvent {
    let rtt = Duration::from_secs_f64(rtt_ms / 1000.0);
    AckEvent {
        now,
        acked: MSS,
        rtt: Some(rtt),
        ca_rtt: Some(rtt),
        srtt: Some(rtt),
        snd_una,
        snd_max,
        prior_in_flight: 0,
    }
}

fn window(segments: u64) -> Window {
    Window { cwnd: segments * MSS, ssthresh: u64::MAX, mss: MSS }
}

/// Feeds a round of `n` ACKs, 10 ms apart (no train), each with `rtt_ms`,
/// starting at `t`; the round ends when the ACKs pass `end`.
fn round(h: &mut HyStart, w: &mut Window, t: &mut Instant, una: &mut u64, end: u64, n: u64, rtt_ms: f64) {
    for _ in 0..n {
        *t += Duration::from_millis(10);
        *una += MSS;
        h.on_ack(w, &ack(*t, *una, end, rtt_ms));
    }
}

#[test]
fn a_round_clearly_slower_than_the_least_delay_ends_slow_start() {
    for (rtt, exits) in [(112.0, false), (113.0, true)] {
        let (mut h, mut w) = (HyStart::new(), window(20));
        let (mut t, mut una) = (Instant::ZERO, 0);
        // Round one at 100 ms sets delay_min; the threshold is 100/8 = 12.5 ms.
        round(&mut h, &mut w, &mut t, &mut una, 20 * MSS, 20, 100.0);
        assert!(!h.found());
        // Round two: eight samples are taken before the delay is judged.
        round(&mut h, &mut w, &mut t, &mut una, 40 * MSS, 8, rtt);
        assert!(!h.found(), "judged only after eight samples");
        round(&mut h, &mut w, &mut t, &mut una, 40 * MSS, 1, rtt);
        assert_eq!(h.found(), exits, "rtt {rtt}");
        assert_eq!(w.ssthresh == w.cwnd, exits);
    }
}

#[test]
fn the_threshold_is_clamped_to_4_and_16_ms() {
    for (base, just_over, found) in
        [(20.0, 24.5, true), (20.0, 23.5, false), (400.0, 416.5, true), (400.0, 415.5, false)]
    {
        let (mut h, mut w) = (HyStart::new(), window(20));
        let (mut t, mut una) = (Instant::ZERO, 0);
        round(&mut h, &mut w, &mut t, &mut una, 20 * MSS, 20, base);
        round(&mut h, &mut w, &mut t, &mut una, 40 * MSS, 9, just_over);
        assert_eq!(h.found(), found, "{base} then {just_over}");
    }
}

#[test]
fn an_ack_train_half_the_least_delay_long_ends_slow_start() {
    let (mut h, mut w) = (HyStart::new(), window(32));
    // delay_min 20 ms: a train must last (20 + 1) / 2 = 10.5 ms.
    let mut t = Instant::ZERO;
    h.on_ack(&mut w, &ack(t, MSS, 64 * MSS, 20.0));
    let mut when = None;
    for i in 2..=20 {
        t += Duration::from_millis(1);
        h.on_ack(&mut w, &ack(t, i * MSS, 64 * MSS, 20.0));
        if h.found() && when.is_none() {
            when = Some(i);
        }
    }
    assert_eq!(when, Some(12), "the first ACK more than 10.5 ms into the train");
}

#[test]
fn small_windows_are_left_alone() {
    let (mut h, mut w) = (HyStart::new(), window(15));
    let (mut t, mut una) = (Instant::ZERO, 0);
    round(&mut h, &mut w, &mut t, &mut una, 20 * MSS, 20, 100.0);
    round(&mut h, &mut w, &mut t, &mut una, 40 * MSS, 20, 200.0);
    assert!(!h.found());
}

/// CUBIC over a 10 Mbit/s, 100 ms path whose queue holds less than the
/// window slow start would reach: HyStart leaves slow start as the queue
/// builds, before it overflows; plain slow start loses packets.
fn losses_in_the_first_seconds(exit: SlowStartExit) -> u64 {
    let config = TcpConfig {
        variant: Variant::Cubic,
        slow_start_exit: exit,
        slow_start_limit: 0,
        initial_cwnd: 10,
        rcv_window: 1000,
        ..TcpConfig::default()
    };
    let fwd = Link::new(Duration::from_millis(50)).with_rate(10_000_000).with_queue_limit(100);
    let mut p = Pair::new(&config, fwd, Link::new(Duration::from_millis(50)));
    p.push(u64::MAX);
    p.run_until(Instant::from_secs_f64(3.0), |_| false);
    p.forward.overflowed
}

#[test]
fn hystart_leaves_slow_start_before_the_queue_overflows() {
    assert_eq!(losses_in_the_first_seconds(SlowStartExit::HyStart), 0);
    assert!(losses_in_the_first_seconds(SlowStartExit::Off) > 10);
}
