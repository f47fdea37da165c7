//! TCP Vegas (Brakmo and Peterson 1995), in the form ns-3's `TcpVegas` has.

use super::config::VegasParams;
use super::congestion::{slow_start, AckEvent, CongestionControl, Window};
use super::reno::additive_increase;
use crate::time::{Duration, Instant};

/// Vegas estimates the segments it keeps queued in the network,
/// `diff = cwnd * (rtt - base_rtt) / rtt`, once per RTT, with `rtt` the
/// smallest sample of that RTT and `base_rtt` the smallest ever seen, and
/// steers it into `[alpha, beta]`.
///
/// As in ns-3: a cycle ends when the cumulative ACK passes what was the
/// highest sent byte when it began; with two or fewer samples in a cycle
/// it behaves as Reno; slow start ends when `diff > gamma`, with the window
/// cut to the expected rate plus one segment; after each cycle ssthresh is
/// at least 3/4 of cwnd; and after a loss
/// `ssthresh = max(min(ssthresh, cwnd - mss), 2 mss)` (ns-3's
/// `TcpVegas::GetSsThresh`), which is gentler than Reno's halving. Unlike
/// ns-3, `diff` is kept fractional rather than truncated to whole segments.
#[derive(Debug)]
pub struct Vegas {
    params: VegasParams,
    base_rtt: Option<Duration>,
    min_rtt: Option<Duration>,
    samples: u32,
    /// Vegas is off during loss recovery and until the next ACK after it.
    enabled: bool,
    cycle_end: u64,
    carry: u64,
    /// The latest per-cycle estimate, for probes and tests.
    last_diff: Option<f64>,
}

impl Vegas {
    pub fn new(params: VegasParams) -> Vegas {
        Vegas {
            params,
            base_rtt: None,
            min_rtt: None,
            samples: 0,
            enabled: true,
            cycle_end: 0,
            carry: 0,
            last_diff: None,
        }
    }

    pub fn base_rtt(&self) -> Option<Duration> {
        self.base_rtt
    }

    pub fn last_diff(&self) -> Option<f64> {
        self.last_diff
    }

    fn reno_increase(&mut self, w: &mut Window, acked: u64) {
        let mut acked = acked;
        if w.in_slow_start() {
            acked = slow_start(w, acked, w.mss);
            if acked == 0 {
                return;
            }
        }
        additive_increase(w, &mut self.carry, acked);
    }

    fn vegas_ssthresh(w: &Window) -> u64 {
        w.ssthresh.min(w.cwnd.saturating_sub(w.mss)).max(2 * w.mss)
    }
}

impl CongestionControl for Vegas {
    fn name(&self) -> &'static str {
        "vegas"
    }

    fn on_rtt_sample(&mut self, _now: Instant, rtt: Duration) {
        if rtt == Duration::ZERO {
            return;
        }
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        self.base_rtt = Some(self.base_rtt.map_or(rtt, |m| m.min(rtt)));
        self.samples += 1;
    }

    fn on_ack(&mut self, w: &mut Window, ack: &AckEvent) {
        if !self.enabled {
            self.enabled = true;
            self.cycle_end = ack.snd_max;
            self.samples = 0;
            self.min_rtt = None;
        }
        if ack.snd_una >= self.cycle_end {
            self.cycle_end = ack.snd_max;
            match (self.base_rtt, self.min_rtt) {
                (Some(base), Some(rtt)) if self.samples > 2 => {
                    let seg_cwnd = (w.cwnd / w.mss) as f64;
                    let expected = seg_cwnd * base.as_secs_f64() / rtt.as_secs_f64();
                    let diff = seg_cwnd - expected;
                    self.last_diff = Some(diff);
                    if diff > self.params.gamma && w.in_slow_start() {
                        let target = (expected.floor() as u64 + 1).min(w.cwnd / w.mss);
                        w.cwnd = target.max(1) * w.mss;
                        w.ssthresh = Self::vegas_ssthresh(w);
                    } else if w.in_slow_start() {
                        slow_start(w, ack.acked, w.mss);
                    } else if diff > self.params.beta {
                        w.cwnd = (w.cwnd / w.mss).saturating_sub(1).max(2) * w.mss;
                        w.ssthresh = Self::vegas_ssthresh(w);
                    } else if diff < self.params.alpha {
                        w.cwnd = (w.cwnd / w.mss + 1) * w.mss;
                    }
                    w.ssthresh = w.ssthresh.max(3 * w.cwnd / 4);
                }
                _ => self.reno_increase(w, ack.acked),
            }
            self.samples = 0;
            self.min_rtt = None;
        } else if w.in_slow_start() {
            slow_start(w, ack.acked, w.mss);
        }
    }

    fn ssthresh_after_loss(&mut self, w: &Window, _in_flight: u64, _now: Instant) -> u64 {
        self.enabled = false;
        Self::vegas_ssthresh(w)
    }

    fn on_timeout(&mut self, _w: &mut Window, _now: Instant) {
        self.enabled = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(snd_una: u64, snd_max: u64) -> AckEvent {
        AckEvent { acked: 1000, snd_una, snd_max, ..AckEvent::default() }
    }

    fn cycle(v: &mut Vegas, w: &mut Window, rtt_ms: u64, end: u64) {
        for _ in 0..3 {
            v.on_rtt_sample(Instant::ZERO, Duration::from_millis(rtt_ms));
        }
        v.on_ack(w, &ack(end, end + 10_000));
    }

    #[test]
    fn steers_the_queue_estimate_between_alpha_and_beta() {
        let mut v = Vegas::new(VegasParams::default());
        let mut w = Window { cwnd: 20_000, ssthresh: 10_000, mss: 1000 };
        // base 100 ms; at 100 ms diff = 0 < alpha: +1 segment.
        cycle(&mut v, &mut w, 100, 0);
        assert_eq!(w.cwnd, 21_000);
        // 21 * (1 - 100/125) = 4.2 > beta: -1 segment.
        cycle(&mut v, &mut w, 125, 10_000);
        assert_eq!(w.cwnd, 20_000);
        // 20 * (1 - 100/115) = 2.6, inside [2, 4]: unchanged.
        cycle(&mut v, &mut w, 115, 20_000);
        assert_eq!(w.cwnd, 20_000);
        // An ACK inside the cycle does nothing in congestion avoidance.
        v.on_ack(&mut w, &ack(25_000, 40_000));
        assert_eq!(w.cwnd, 20_000);
    }

    #[test]
    fn leaves_slow_start_when_more_than_gamma_is_queued() {
        let mut v = Vegas::new(VegasParams::default());
        let mut w = Window { cwnd: 10_000, ssthresh: u64::MAX, mss: 1000 };
        cycle(&mut v, &mut w, 100, 0);
        // The first cycle has no queue and slow start adds a segment; then
        // 11 * (1 - 100/150) = 3.7 > 1: cwnd = floor(7.33) + 1 = 8 segments.
        assert_eq!(w.cwnd, 11_000);
        cycle(&mut v, &mut w, 150, 10_000);
        assert_eq!(w.cwnd, 8000);
        assert!(!w.in_slow_start());
    }

    #[test]
    fn loss_takes_one_segment_off() {
        let mut v = Vegas::new(VegasParams::default());
        let w = Window { cwnd: 20_000, ssthresh: 30_000, mss: 1000 };
        assert_eq!(v.ssthresh_after_loss(&w, 20_000, Instant::ZERO), 19_000);
        let w = Window { cwnd: 20_000, ssthresh: 8_000, mss: 1000 };
        assert_eq!(v.ssthresh_after_loss(&w, 20_000, Instant::ZERO), 8_000);
    }
}
