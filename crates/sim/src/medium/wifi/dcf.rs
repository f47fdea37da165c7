//! The rules of the distributed coordination function that belong to one
//! station (IEEE 802.11-2016 10.3): the backoff counter and how it freezes
//! while the medium is busy, the contention window, and the retry counters.
//! What concerns the channel (carrier sense, NAV, EIFS, responses) lives in
//! `medium.rs`.

use crate::rng::Rng;
use ncmesh_proto::{Duration, Instant};

/// A backoff counter, kept as the slots left when it last stopped and
/// when it started counting again, so that nothing runs per slot.
///
/// It counts down one slot per `slot` of idle medium, from the later of the
/// end of the interframe space and the moment it was drawn; a slot counts
/// only once whole. While the medium is busy it is frozen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Backoff {
    slots: u32,
    /// When counting started, or `None` while frozen.
    counting_from: Option<Instant>,
    /// Slots are not counted before the counter was drawn.
    drawn_at: Instant,
}

impl Backoff {
    /// Draws a counter uniformly from [0, cw] at `now`; it counts from
    /// `idle_from` (the end of the interframe space) if the medium is idle.
    pub fn draw(&mut self, cw: u32, rng: &mut Rng, now: Instant, idle_from: Option<Instant>) {
        self.slots = rng.below(cw as u64 + 1) as u32;
        self.drawn_at = now;
        self.counting_from = idle_from.map(|t| t.max(now));
    }

    /// Slots left at `now`.
    pub fn remaining(&self, now: Instant, slot: Duration) -> u32 {
        match self.counting_from {
            Some(from) if now > from => {
                let elapsed = (now - from).as_nanos() / slot.as_nanos();
                self.slots.saturating_sub(elapsed.min(u32::MAX as u64) as u32)
            }
            _ => self.slots,
        }
    }

    /// The medium turned busy at `now`: keep the slots left, stop counting.
    pub fn freeze(&mut self, now: Instant, slot: Duration) {
        self.slots = self.remaining(now, slot);
        self.counting_from = None;
    }

    /// The medium has been idle, and its interframe space ends at `ifs_end`: count from then on.
    pub fn resume(&mut self, ifs_end: Instant) {
        self.counting_from = Some(ifs_end.max(self.drawn_at));
    }

    /// When the counter reaches zero, if it is counting.
    pub fn expiry(&self, slot: Duration) -> Option<Instant> {
        self.counting_from.map(|from| from + slot.saturating_mul(self.slots as u64))
    }
}

/// The contention window and retry counters of the frame a station holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retries {
    pub cw: u32,
    cw_min: u32,
    cw_max: u32,
    /// Failed attempts of frames sent without RTS, and of RTS frames.
    pub short: u32,
    /// Failed data attempts that followed a successful RTS/CTS exchange.
    pub long: u32,
    short_limit: u32,
    long_limit: u32,
}

/// What a failed attempt leads to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterFailure {
    Retry,
    /// The retry limit is reached: the frame is dropped.
    Drop,
}

impl Retries {
    /// The limits count attempts, the first included (dot11ShortRetryLimit
    /// and dot11LongRetryLimit, as ns-3's MaxSsrc and MaxSlrc count them).
    pub fn new(cw_min: u32, cw_max: u32, short_limit: u32, long_limit: u32) -> Retries {
        Retries { cw: cw_min, cw_min, cw_max, short: 0, long: 0, short_limit, long_limit }
    }

    /// An attempt failed; `long` says whether it was a data frame sent after
    /// RTS/CTS. The window doubles, CW = min(2 (CW + 1) - 1, CWmax), until
    /// a limit is reached; then the frame is dropped and everything resets.
    pub fn failed(&mut self, long: bool) -> AfterFailure {
        if long {
            self.long += 1;
        } else {
            self.short += 1;
        }
        if self.short >= self.short_limit || self.long >= self.long_limit {
            self.reset();
            return AfterFailure::Drop;
        }
        self.cw = (2 * (self.cw + 1) - 1).min(self.cw_max);
        AfterFailure::Retry
    }

    /// An RTS was answered: the short counter restarts (10.3.4.4).
    pub fn rts_answered(&mut self) {
        self.short = 0;
    }

    /// The frame got through (or was given up): back to CWmin and no retries.
    pub fn reset(&mut self) {
        self.cw = self.cw_min;
        self.short = 0;
        self.long = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Purpose;

    const SLOT: Duration = Duration::from_micros(20);

    fn at(us: u64) -> Instant {
        Instant(us * 1000)
    }

    fn counter(slots: u32) -> Backoff {
        Backoff { slots, counting_from: None, drawn_at: Instant::ZERO }
    }

    #[test]
    fn backoff_freezes_while_the_medium_is_busy() {
        // 10 slots, counting from the end of DIFS at 50 µs.
        let mut b = counter(10);
        b.resume(at(50));
        assert_eq!(b.expiry(SLOT), Some(at(250)));
        // Busy at 125 µs: 3 whole slots (50-110) went by, the fourth is lost.
        b.freeze(at(125), SLOT);
        assert_eq!(b.remaining(at(900), SLOT), 7, "frozen: time does not count");
        assert_eq!(b.expiry(SLOT), None);
        // Idle again, DIFS ends at 1050 µs: 7 slots to go.
        b.resume(at(1050));
        assert_eq!(b.expiry(SLOT), Some(at(1050 + 140)));
        // A slot that ends exactly as the medium turns busy counts.
        b.freeze(at(1050 + 40), SLOT);
        assert_eq!(b.remaining(at(1050 + 40), SLOT), 5);
    }

    #[test]
    fn backoff_counts_from_when_it_was_drawn() {
        let mut rng = Rng::stream(1, Purpose::Backoff, 0);
        let mut b = Backoff::default();
        // Drawn at 300 µs while the interframe space ended at 50 µs: slots count from 300.
        b.draw(31, &mut rng, at(300), Some(at(50)));
        let slots = b.remaining(at(300), SLOT);
        assert!(slots <= 31);
        assert_eq!(b.expiry(SLOT), Some(at(300) + SLOT.saturating_mul(slots as u64)));
        b.freeze(at(310), SLOT);
        b.resume(at(200));
        assert_eq!(b.expiry(SLOT), Some(at(300) + SLOT.saturating_mul(slots as u64)), "never before it was drawn");
    }

    #[test]
    fn backoff_draws_are_uniform_over_the_window() {
        let mut rng = Rng::stream(5, Purpose::Backoff, 2);
        let mut counts = [0u32; 32];
        let mut b = Backoff::default();
        for _ in 0..64_000 {
            b.draw(31, &mut rng, Instant::ZERO, None);
            counts[b.remaining(Instant::ZERO, SLOT) as usize] += 1;
        }
        // Binomial(64000, 1/32): mean 2000, sd 44; allow 5 sd.
        assert!(counts.iter().all(|&c| (1780..=2220).contains(&c)), "{counts:?}");
    }

    #[test]
    fn the_window_doubles_up_to_cw_max_and_resets() {
        let mut r = Retries::new(31, 1023, 100, 100);
        let windows: Vec<u32> = (0..7)
            .map(|_| {
                r.failed(false);
                r.cw
            })
            .collect();
        assert_eq!(windows, [63, 127, 255, 511, 1023, 1023, 1023]);
        r.reset();
        assert_eq!(r.cw, 31);
    }

    #[test]
    fn short_and_long_retry_limits_count_attempts() {
        // dot11ShortRetryLimit 7: the seventh failed attempt drops the frame.
        let mut r = Retries::new(31, 1023, 7, 4);
        let outcomes: Vec<AfterFailure> = (0..7).map(|_| r.failed(false)).collect();
        assert!(outcomes[..6].iter().all(|&o| o == AfterFailure::Retry));
        assert_eq!(outcomes[6], AfterFailure::Drop);
        assert_eq!((r.cw, r.short, r.long), (31, 0, 0), "a drop resets the window and the counts");
        // dot11LongRetryLimit 4: data after RTS/CTS is dropped at its fourth failure.
        let outcomes: Vec<AfterFailure> = (0..4).map(|_| r.failed(true)).collect();
        assert_eq!(outcomes, [AfterFailure::Retry, AfterFailure::Retry, AfterFailure::Retry, AfterFailure::Drop]);
        // An answered RTS restarts the short count but not the long one.
        r.failed(false);
        r.failed(true);
        r.rts_answered();
        assert_eq!((r.short, r.long), (0, 1));
    }
}
