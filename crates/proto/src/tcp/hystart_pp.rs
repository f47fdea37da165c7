//! HyStart++ (RFC 9406): slow start turns into a conservative slow start
//! (a quarter of the growth) when a round's least RTT rises by a threshold
//! over the previous round's, and ends after `CSS_ROUNDS` such rounds
//! unless the RTT falls back.

use super::congestion::{AckEvent, SlowStartWatch, Window};
use crate::time::Duration;

/// Section 4.3 constants.
const MIN_RTT_THRESH: Duration = Duration::from_micros(4000);
const MAX_RTT_THRESH: Duration = Duration::from_micros(16_000);
const MIN_RTT_DIVISOR: u64 = 8;
const N_RTT_SAMPLE: u32 = 8;
pub const CSS_GROWTH_DIVISOR: u64 = 4;
pub const CSS_ROUNDS: u32 = 5;

/// The state of section 4.2.
#[derive(Clone, Debug, Default)]
pub struct HyStartPlusPlus {
    last_round_min_rtt: Option<Duration>,
    current_round_min_rtt: Option<Duration>,
    rtt_sample_count: u32,
    /// The stream offset whose acknowledgement ends the round.
    window_end: Option<u64>,
    /// In conservative slow start: its baseline RTT and the rounds it has run.
    css: Option<(Duration, u32)>,
    /// Slow start has ended once: later ones are standard (section 4.3).
    done: bool,
}

impl HyStartPlusPlus {
    pub fn new() -> HyStartPlusPlus {
        HyStartPlusPlus::default()
    }

    pub fn in_css(&self) -> bool {
        self.css.is_some()
    }

    /// The RTT threshold: an eighth of the last round's least RTT, within [4 ms, 16 ms].
    pub fn rtt_thresh(last_round_min_rtt: Duration) -> Duration {
        Duration(last_round_min_rtt.0 / MIN_RTT_DIVISOR).clamp(MIN_RTT_THRESH, MAX_RTT_THRESH)
    }
}

impl SlowStartWatch for HyStartPlusPlus {
    fn on_ack(&mut self, w: &mut Window, ack: &AckEvent) -> u64 {
        if self.done {
            return 1;
        }
        if self.window_end.is_none_or(|end| ack.snd_una >= end) {
            // A round ends: CSS counts it, and the next one starts.
            if let Some((_, rounds)) = self.css.as_mut() {
                *rounds += 1;
                if *rounds >= CSS_ROUNDS {
                    self.done = true;
                    self.css = None;
                    w.ssthresh = w.cwnd;
                    return 1;
                }
            }
            self.last_round_min_rtt = self.current_round_min_rtt.take();
            self.rtt_sample_count = 0;
            self.window_end = Some(ack.snd_max);
        }
        if let Some(rtt) = ack.rtt {
            self.current_round_min_rtt = Some(self.current_round_min_rtt.map_or(rtt, |m| m.min(rtt)));
            self.rtt_sample_count += 1;
        }
        if self.rtt_sample_count >= N_RTT_SAMPLE {
            if let (Some(current), Some(last)) = (self.current_round_min_rtt, self.last_round_min_rtt) {
                match self.css {
                    None if current >= last + HyStartPlusPlus::rtt_thresh(last) => self.css = Some((current, 0)),
                    // A false start: the delay fell back, resume slow start.
                    Some((baseline, _)) if current < baseline => self.css = None,
                    _ => {}
                }
            }
        }
        if self.css.is_some() {
            CSS_GROWTH_DIVISOR
        } else {
            1
        }
    }

    /// A loss ends slow start (or CSS) for good.
    fn on_congestion(&mut self, _timeout: bool) {
        self.done = true;
        self.css = None;
    }
}
