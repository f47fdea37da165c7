//! HyStart as Linux's CUBIC runs it (`net/ipv4/tcp_cubic.c`, 6.x): slow
//! start ends, with ssthresh = cwnd, when the ACKs of a round come back as
//! one long train, or when a round's least RTT rises clearly above the
//! least ever seen.

use super::congestion::{AckEvent, SlowStartWatch, Window};
use crate::time::{Duration, Instant};

/// `hystart_low_window`: HyStart watches only windows of at least this many segments.
const LOW_WINDOW: u64 = 16;
/// `hystart_ack_delta_us`: ACKs closer than this belong to one train.
const ACK_DELTA: Duration = Duration::from_micros(2000);
/// `HYSTART_MIN_SAMPLES`: RTT samples a round takes before it judges delay.
const MIN_SAMPLES: u32 = 8;
/// `HYSTART_DELAY_MIN`, `HYSTART_DELAY_MAX`: the bounds of the delay threshold.
const DELAY_MIN: Duration = Duration::from_micros(4000);
const DELAY_MAX: Duration = Duration::from_micros(16_000);
/// `hystart_ack_delay()`: the ACK delay a train allows for; Linux bounds it
/// by 1 ms, which it reaches at every rate below about 2 Gbit/s.
const ACK_DELAY: Duration = Duration::from_micros(1000);

/// Linux's HyStart state (`struct bictcp`'s `round_start`, `last_ack`,
/// `end_seq`, `curr_rtt`, `sample_cnt`, `delay_min`, `found`).
#[derive(Clone, Debug, Default)]
pub struct HyStart {
    found: bool,
    delay_min: Option<Duration>,
    /// Where the current round started and ends (a stream offset), if begun.
    round: Option<(Instant, u64)>,
    last_ack: Instant,
    curr_rtt: Option<Duration>,
    sample_cnt: u32,
}

impl HyStart {
    pub fn new() -> HyStart {
        HyStart::default()
    }

    /// Whether HyStart has ended slow start.
    pub fn found(&self) -> bool {
        self.found
    }

    /// `bictcp_hystart_reset`.
    fn reset(&mut self, now: Instant, snd_max: u64) {
        self.round = Some((now, snd_max));
        self.last_ack = now;
        self.curr_rtt = None;
        self.sample_cnt = 0;
    }

    /// `hystart_update`.
    fn update(&mut self, w: &mut Window, ack: &AckEvent, delay: Duration, delay_min: Duration) {
        match self.round {
            Some((_, end)) if ack.snd_una <= end => {}
            _ => self.reset(ack.now, ack.snd_max),
        }
        let (round_start, _) = self.round.expect("just set");
        // The ACK train: ACKs back to back for longer than half the path's delay.
        if ack.now.saturating_since(self.last_ack) <= ACK_DELTA {
            self.last_ack = ack.now;
            let threshold = Duration((delay_min + ACK_DELAY).0 / 2);
            if ack.now.saturating_since(round_start) > threshold {
                self.exit(w);
            }
        }
        // The delay increase, once the round has enough samples.
        self.curr_rtt = Some(self.curr_rtt.map_or(delay, |c| c.min(delay)));
        if self.sample_cnt < MIN_SAMPLES {
            self.sample_cnt += 1;
        } else if self.curr_rtt.is_some_and(|c| c > delay_min + Duration(delay_min.0 / 8).clamp(DELAY_MIN, DELAY_MAX)) {
            self.exit(w);
        }
    }

    fn exit(&mut self, w: &mut Window) {
        self.found = true;
        w.ssthresh = w.cwnd;
    }
}

impl SlowStartWatch for HyStart {
    /// `cubictcp_acked`: every ACK with an RTT sample updates the least
    /// delay; HyStart runs while in slow start from 16 segments on.
    fn on_ack(&mut self, w: &mut Window, ack: &AckEvent) -> u64 {
        let Some(delay) = ack.ca_rtt else { return 1 };
        let delay = delay.max(Duration::from_micros(1));
        let delay_min = self.delay_min.map_or(delay, |d| d.min(delay));
        self.delay_min = Some(delay_min);
        if !self.found && w.in_slow_start() && w.cwnd >= LOW_WINDOW * w.mss {
            self.update(w, ack, delay, delay_min);
        }
        1
    }

    /// `cubictcp_state` on `TCP_CA_Loss`: a timeout lets HyStart watch the
    /// slow start that follows.
    fn on_congestion(&mut self, timeout: bool) {
        if timeout {
            self.found = false;
            self.round = None;
        }
    }
}
