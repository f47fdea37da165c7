//! CUBIC congestion control (RFC 9438).

use super::config::CubicParams;
use super::congestion::{slow_start, AckEvent, CongestionControl, Window};
use crate::time::Instant;

/// CUBIC, computed in segments with `f64` as RFC 9438 writes it.
///
/// The cubic curve `W_cubic(t) = C (t - K)^3 + W_max` starts at the first
/// ACK of each congestion-avoidance stage (RFC 9438 section 4.2), with
/// `K = cbrt((W_max - cwnd_epoch) / C)`, which is
/// `cbrt(W_max (1 - beta) / C)` right after a loss. Each ACK moves cwnd a
/// fraction `(target - cwnd) / cwnd` per acknowledged segment towards
/// `target = W_cubic(t + srtt)` clamped to `[cwnd, 1.5 cwnd]` (4.4, 4.5),
/// unless the Reno-friendly estimate `W_est` (4.3, equation 4) is above the
/// curve, in which case cwnd follows `W_est`. Slow start is Reno's; the
/// sender runs HyStart beside it when configured (`hystart.rs`).
#[derive(Debug)]
pub struct Cubic {
    params: CubicParams,
    /// W_max in segments; zero until the first congestion event.
    w_max: f64,
    epoch: Option<Epoch>,
    after_timeout: bool,
    /// Fractional bytes of window growth not yet added to cwnd.
    carry: f64,
    /// Segments slow start adds per ACK at most; 0 for no limit.
    slow_start_limit: u64,
}

#[derive(Clone, Copy, Debug)]
struct Epoch {
    start: Instant,
    k: f64,
    /// The plateau the curve is centred on; W_max, or the epoch's cwnd when above it.
    origin: f64,
    w_est: f64,
}

impl Cubic {
    pub fn new(params: CubicParams) -> Cubic {
        Cubic { params, w_max: 0.0, epoch: None, after_timeout: false, carry: 0.0, slow_start_limit: 1 }
    }

    /// With slow start adding at most `limit` segments per ACK (0: no limit).
    pub fn with_slow_start_limit(mut self, limit: u32) -> Cubic {
        self.slow_start_limit = limit as u64;
        self
    }

    pub fn w_max_segments(&self) -> f64 {
        self.w_max
    }

    /// K of the current epoch, seconds.
    pub fn k(&self) -> Option<f64> {
        self.epoch.map(|e| e.k)
    }

    fn alpha(&self, w_est: f64) -> f64 {
        let b = self.params.beta;
        // Section 4.3: once W_est passes the window before the loss, behave as Reno.
        if w_est >= self.w_max {
            1.0
        } else {
            3.0 * (1.0 - b) / (1.0 + b)
        }
    }

    fn congestion_avoidance(&mut self, w: &mut Window, now: Instant, acked: u64, srtt: f64) {
        let mss = w.mss as f64;
        let cwnd = w.cwnd as f64 / mss;
        let c = self.params.c;
        let epoch = match self.epoch {
            Some(e) => e,
            None => {
                if self.after_timeout {
                    // Section 4.8: the first stage after an RTO has K = 0 and
                    // W_max = the cwnd it starts with.
                    self.w_max = cwnd;
                    self.after_timeout = false;
                }
                let (k, origin) =
                    if self.w_max > cwnd { (((self.w_max - cwnd) / c).cbrt(), self.w_max) } else { (0.0, cwnd) };
                let e = Epoch { start: now, k, origin, w_est: cwnd };
                self.epoch = Some(e);
                self.carry = 0.0;
                e
            }
        };
        let t = now.saturating_since(epoch.start).as_secs_f64();
        let w_cubic = |t: f64| c * (t - epoch.k).powi(3) + epoch.origin;
        let segs = acked as f64 / mss;
        let w_est = epoch.w_est + self.alpha(epoch.w_est) * segs / cwnd;
        if let Some(e) = self.epoch.as_mut() {
            e.w_est = w_est;
        }
        let next = if w_cubic(t) < w_est {
            w_est.max(cwnd)
        } else {
            let target = w_cubic(t + srtt).clamp(cwnd, 1.5 * cwnd);
            cwnd + (target - cwnd) / cwnd * segs
        };
        let grow = (next - cwnd) * mss + self.carry;
        let whole = grow.floor().max(0.0);
        self.carry = grow - whole;
        w.cwnd += whole as u64;
    }
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    fn on_ack(&mut self, w: &mut Window, ack: &AckEvent) {
        let mut acked = ack.acked;
        if w.in_slow_start() {
            acked = slow_start(w, acked, super::reno::limit_bytes(w, self.slow_start_limit));
            if acked == 0 {
                return;
            }
        }
        let srtt = ack.srtt.or(ack.rtt).map_or(0.0, |d| d.as_secs_f64());
        self.congestion_avoidance(w, ack.now, acked, srtt);
    }

    fn ssthresh_after_loss(&mut self, w: &Window, _in_flight: u64, _now: Instant) -> u64 {
        let cwnd = w.cwnd as f64 / w.mss as f64;
        let b = self.params.beta;
        // Section 4.7: a flow whose window is below its last plateau yields.
        self.w_max = if self.params.fast_convergence && cwnd < self.w_max { cwnd * (1.0 + b) / 2.0 } else { cwnd };
        self.epoch = None;
        ((w.cwnd as f64 * b) as u64).max(2 * w.mss)
    }

    fn on_timeout(&mut self, _w: &mut Window, _now: Instant) {
        self.epoch = None;
        self.after_timeout = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Duration;

    #[test]
    fn loss_sets_w_max_and_fast_convergence_lowers_it() {
        let mut c = Cubic::new(CubicParams::default());
        let w = Window { cwnd: 100_000, ssthresh: u64::MAX, mss: 1000 };
        assert_eq!(c.ssthresh_after_loss(&w, 0, Instant::ZERO), 70_000);
        assert_eq!(c.w_max_segments(), 100.0);
        let w = Window { cwnd: 80_000, ssthresh: 70_000, mss: 1000 };
        c.ssthresh_after_loss(&w, 0, Instant::ZERO);
        assert!((c.w_max_segments() - 68.0).abs() < 1e-9);
    }

    #[test]
    fn epoch_k_matches_the_closed_form() {
        let mut c = Cubic::new(CubicParams::default());
        let mut w = Window { cwnd: 100_000, ssthresh: u64::MAX, mss: 1000 };
        w.ssthresh = c.ssthresh_after_loss(&w, 0, Instant::ZERO);
        w.cwnd = w.ssthresh;
        let ack = AckEvent {
            now: Instant::from_secs_f64(1.0),
            acked: 1000,
            srtt: Some(Duration::from_millis(100)),
            ..AckEvent::default()
        };
        c.on_ack(&mut w, &ack);
        // K = cbrt(100 * 0.3 / 0.4) = cbrt(75).
        assert!((c.k().unwrap() - 75f64.cbrt()).abs() < 1e-9);
        assert!(w.cwnd > 70_000 && w.cwnd < 71_000);
    }
}
