//! HyStart++ (RFC 9406): RttThresh = clamp(lastRoundMinRTT / 8, 4 ms,
//! 16 ms); a round whose least RTT (of at least 8 samples) reaches
//! lastRoundMinRTT + RttThresh starts conservative slow start, a quarter of
//! the growth; a round back below the baseline resumes slow start;
//! CSS_ROUNDS rounds of CSS end it; only the first slow start is watched.

use ncmesh_proto::tcp::{AckEvent, HyStartPlusPlus, SlowStartExit, SlowStartWatch, TcpConfig, Variant, Window};
use ncmesh_proto::testing::{Link, Pair};
use ncmesh_proto::time::{Duration, Instant};

const MSS: u64 = 1000;

struct Run {
    h: HyStartPlusPlus,
    w: Window,
    una: u64,
    end: u64,
}

impl Run {
    fn new() -> Run {
        Run { h: HyStartPlusPlus::new(), w: Window { cwnd: 10 * MSS, ssthresh: u64::MAX, mss: MSS }, una: 0, end: 0 }
    }

    /// One round of `n` ACKs with `rtt_ms`; returns the last growth divisor.
    fn round(&mut self, n: u64, rtt_ms: f64) -> u64 {
        self.end += n * MSS;
        let rtt = Some(Duration::from_secs_f64(rtt_ms / 1000.0));
        let mut divisor = 0;
        for _ in 0..n {
            // The ACK that reaches the previous round's end starts this round.
            let ack = AckEvent {
                now: Instant::ZERO,
                acked: MSS,
                rtt,
                ca_rtt: rtt,
                srtt: rtt,
                snd_una: self.una,
                snd_max: self.end,
                prior_in_flight: 0,
            };
            divisor = self.h.on_ack(&mut self.w, &ack);
            self.una += MSS;
        }
        divisor
    }
}

#[test]
fn rtt_thresh_is_an_eighth_within_4_and_16_ms() {
    let ms = Duration::from_millis;
    assert_eq!(HyStartPlusPlus::rtt_thresh(ms(100)), Duration::from_micros(12_500));
    assert_eq!(HyStartPlusPlus::rtt_thresh(ms(20)), ms(4));
    assert_eq!(HyStartPlusPlus::rtt_thresh(ms(400)), ms(16));
}

#[test]
fn a_delay_rise_enters_css_and_css_rounds_end_slow_start() {
    let mut r = Run::new();
    assert_eq!(r.round(10, 100.0), 1);
    // 112 ms is below 100 + 12.5: still slow start.
    assert_eq!(r.round(10, 112.0), 1);
    assert!(!r.h.in_css());
    // The last round's least RTT is now 112: the threshold is 112 + 14.
    assert_eq!(r.round(10, 126.5), 4, "CSS grows a quarter as fast");
    assert!(r.h.in_css());
    // CSS_ROUNDS = 5 rounds in CSS, then congestion avoidance at cwnd.
    for _ in 0..4 {
        assert_eq!(r.round(10, 127.0), 4);
        assert_eq!(r.w.ssthresh, u64::MAX);
    }
    r.round(1, 127.0);
    assert_eq!(r.w.ssthresh, r.w.cwnd);
    assert!(!r.h.in_css());
}

#[test]
fn fewer_than_eight_samples_decide_nothing() {
    let mut r = Run::new();
    r.round(10, 100.0);
    assert_eq!(r.round(7, 150.0), 1);
    assert!(!r.h.in_css());
}

#[test]
fn an_rtt_back_below_the_baseline_resumes_slow_start() {
    let mut r = Run::new();
    r.round(10, 100.0);
    r.round(10, 120.0);
    assert!(r.h.in_css());
    // The baseline is 120 ms; a round whose least RTT is below it was jitter.
    assert_eq!(r.round(10, 110.0), 1);
    assert!(!r.h.in_css());
    assert_eq!(r.w.ssthresh, u64::MAX);
}

#[test]
fn after_a_loss_slow_start_is_standard() {
    let mut r = Run::new();
    r.round(10, 100.0);
    r.h.on_congestion(false);
    r.round(10, 100.0);
    assert_eq!(r.round(10, 200.0), 1);
    assert!(!r.h.in_css());
}

#[test]
fn newreno_with_hystart_pp_cuts_the_slow_start_overshoot() {
    let run = |exit, queue| {
        let config = TcpConfig {
            variant: Variant::NewReno,
            slow_start_exit: exit,
            initial_cwnd: 10,
            rcv_window: 1000,
            ..TcpConfig::default()
        };
        let fwd = Link::new(Duration::from_millis(50)).with_rate(10_000_000).with_queue_limit(queue);
        let mut p = Pair::new(&config, fwd, Link::new(Duration::from_millis(50)));
        p.push(u64::MAX);
        p.run_until(Instant::from_secs_f64(3.0), |_| false);
        p.forward.overflowed
    };
    // A queue of 1.7 bandwidth-delay products: plain slow start doubles
    // past it; HyStart++ enters CSS a round earlier and loses a third as much.
    let (pp, plain) = (run(SlowStartExit::HyStartPlusPlus, 200), run(SlowStartExit::Off, 200));
    assert!(pp * 3 < plain + plain / 10, "HyStart++ {pp}, plain {plain}");
}
