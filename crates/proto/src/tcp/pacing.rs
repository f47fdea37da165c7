//! Pacing: segments leave no earlier than a schedule set by a rate, as
//! Linux's TCP paces for BBR (`tcp_update_skb_after_send` and
//! `tcp_pacing_check` in 6.18). Only a congestion control that names a rate
//! gets a pacer; the others send as the window allows, at no cost.

use crate::time::{Duration, Instant};

/// Segments that leave unpaced at the start of a connection, as Linux
/// paces only once `data_segs_out` reaches 10: the initial window goes at once.
pub const UNPACED_SEGMENTS: u64 = 10;

/// The pacing schedule of one sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pacer {
    /// Bytes per second; 0 does not pace.
    pub rate: u64,
    /// The earliest the next segment may leave (`tcp_wstamp_ns`).
    next: Instant,
    /// The sender held a segment back until then: its timer must wake it.
    wait: Option<Instant>,
}

impl Pacer {
    pub fn new(rate: u64) -> Pacer {
        Pacer { rate, next: Instant::ZERO, wait: None }
    }

    /// The earliest the next segment may leave.
    pub fn next_send(&self) -> Instant {
        self.next
    }

    /// Whether a segment may leave at `now`; if not, the sender is to be
    /// woken when it may.
    pub fn may_send(&mut self, now: Instant) -> bool {
        if now >= self.next {
            return true;
        }
        self.wait = Some(self.next);
        false
    }

    /// A segment of `len` payload bytes left at `now`, the `sent`-th data
    /// segment of the connection. The next may leave `len / rate` later;
    /// if this one left late, up to half of that is forgiven, so that a
    /// late timer does not lower the average rate (Linux's credit for
    /// scheduling jitter).
    pub fn on_send(&mut self, now: Instant, len: u64, sent: u64) {
        let prior = self.next;
        self.next = self.next.max(now);
        if sent < UNPACED_SEGMENTS || self.rate == 0 {
            return;
        }
        let gap = (len as u128 * 1_000_000_000 / self.rate as u128) as u64;
        let credit = self.next.saturating_since(prior).as_nanos();
        self.next += Duration::from_nanos(gap - credit.min(gap / 2));
    }

    /// When the sender's timer must wake it to send what pacing held back.
    pub fn deadline(&self) -> Option<Instant> {
        self.wait
    }

    /// No segment waits any longer.
    pub fn cancel_wait(&mut self) {
        self.wait = None;
    }

    /// The timer fired at `now`.
    pub fn on_timeout(&mut self, now: Instant) {
        if self.wait.is_some_and(|w| now >= w) {
            self.wait = None;
        }
    }
}
