//! RFC 5681 additive increase, multiplicative decrease.

use super::config::Counting;
use super::congestion::{slow_start, AckEvent, CongestionControl, Window};
use crate::time::Instant;

/// Reno AIMD. Congestion avoidance counts acknowledged bytes (RFC 3465
/// appropriate byte counting with L = 1 in slow start): one MSS per window's
/// worth of acknowledged bytes. For an ACK of one MSS that is the
/// RFC 5681 `mss * mss / cwnd`, and the remainder is carried rather than
/// rounded away, so the growth is exactly one MSS per RTT, also with
/// delayed ACKs (as Linux; ns-2 counts ACKs instead).
#[derive(Debug)]
pub struct Reno {
    /// Bytes acknowledged in congestion avoidance not yet turned into window.
    acked_carry: u64,
    /// Segments slow start adds per ACK at most; 0 for no limit.
    slow_start_limit: u64,
    counting: Counting,
}

impl Default for Reno {
    fn default() -> Reno {
        Reno::new(1, Counting::Bytes)
    }
}

impl Reno {
    pub fn new(slow_start_limit: u32, counting: Counting) -> Reno {
        Reno { acked_carry: 0, slow_start_limit: slow_start_limit as u64, counting }
    }
}

/// Slow start's per-ACK limit in bytes: `limit` segments, 0 for none.
pub(crate) fn limit_bytes(w: &Window, limit: u64) -> u64 {
    if limit == 0 {
        u64::MAX
    } else {
        limit.saturating_mul(w.mss)
    }
}

/// Congestion avoidance shared with the algorithms that fall back to Reno.
pub(crate) fn additive_increase(w: &mut Window, carry: &mut u64, acked: u64) {
    *carry += acked;
    if *carry >= w.cwnd {
        let steps = *carry / w.cwnd.max(1);
        *carry -= steps * w.cwnd.max(1);
        w.cwnd += steps * w.mss;
    }
}

/// RFC 5681 equation (4).
pub(crate) fn half_flight(w: &Window, in_flight: u64) -> u64 {
    (in_flight / 2).max(2 * w.mss)
}

impl CongestionControl for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }

    fn on_ack(&mut self, w: &mut Window, ack: &AckEvent) {
        let mut acked = ack.acked;
        if w.in_slow_start() {
            acked = slow_start(w, acked, limit_bytes(w, self.slow_start_limit));
            self.acked_carry = 0;
            if acked == 0 {
                return;
            }
        }
        if self.counting == Counting::Acks {
            // ns-3's `TcpNewReno::CongestionAvoidance` (and ns-2's
            // `opencwnd`): MSS^2/cwnd per ACK, whatever it covers, with the
            // window updated at once, so each increment is taken from the
            // window the previous one left; whole bytes, at least one.
            w.cwnd += (w.mss * w.mss / w.cwnd.max(1)).max(1);
            return;
        }
        additive_increase(w, &mut self.acked_carry, acked);
    }

    fn ssthresh_after_loss(&mut self, w: &Window, in_flight: u64, _now: Instant) -> u64 {
        self.acked_carry = 0;
        half_flight(w, in_flight)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(acked: u64) -> AckEvent {
        AckEvent { acked, ..AckEvent::default() }
    }

    #[test]
    fn slow_start_then_one_mss_per_window() {
        let mut r = Reno::default();
        let mut w = Window { cwnd: 1000, ssthresh: 4000, mss: 1000 };
        for _ in 0..3 {
            r.on_ack(&mut w, &ack(1000));
        }
        assert_eq!(w.cwnd, 4000);
        // Four ACKs of 1000 bytes: exactly one MSS, never more.
        for _ in 0..3 {
            r.on_ack(&mut w, &ack(1000));
            assert_eq!(w.cwnd, 4000);
        }
        r.on_ack(&mut w, &ack(1000));
        assert_eq!(w.cwnd, 5000);
        // An ACK of 2 MSS (delayed ACK) counts double: 5 full-sized ACKs' worth in 3 ACKs.
        r.on_ack(&mut w, &ack(2000));
        r.on_ack(&mut w, &ack(2000));
        assert_eq!(w.cwnd, 5000);
        r.on_ack(&mut w, &ack(1000));
        assert_eq!(w.cwnd, 6000);
    }

    #[test]
    fn slow_start_is_capped_per_ack() {
        let mut r = Reno::default();
        let mut w = Window { cwnd: 1000, ssthresh: u64::MAX, mss: 1000 };
        r.on_ack(&mut w, &ack(5000));
        assert_eq!(w.cwnd, 2000);
    }

    #[test]
    fn loss_halves_the_flight_with_a_floor() {
        let mut r = Reno::default();
        let w = Window { cwnd: 10_000, ssthresh: 1, mss: 1000 };
        assert_eq!(r.ssthresh_after_loss(&w, 9000, Instant::ZERO), 4500);
        assert_eq!(r.ssthresh_after_loss(&w, 3000, Instant::ZERO), 2000);
    }
}
