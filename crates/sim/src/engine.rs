//! The event engine: one wake-up time per slot, earliest first.
//!
//! Everything the simulator schedules is a slot with at most one pending
//! wake-up: a flow's start, a medium's next departure, a node's timer. So
//! the queue is an indexed binary heap over the slots rather than a heap of
//! events: bringing a deadline forward moves its entry instead of adding
//! one, nothing stale piles up, and the heap never holds more entries than
//! there are slots. Simultaneous wake-ups pop in slot order, so a run
//! depends neither on heap internals nor on the order in which a driver
//! happened to arm its slots.

use ncmesh_proto::Instant;

/// Index of a slot.
pub type Slot = usize;

const ABSENT: u32 = u32::MAX;

/// A pending wake-up as one integer: the time in the high 64 bits, the slot
/// in the low 32, so that one comparison orders by time, then slot.
type Key = u128;

fn key(at: Instant, slot: Slot) -> Key {
    (at.0 as u128) << 32 | slot as u128
}

fn time_of(key: Key) -> Instant {
    Instant((key >> 32) as u64)
}

fn slot_of(key: Key) -> usize {
    key as u32 as usize
}

#[derive(Clone, Debug)]
pub struct Timers {
    /// Pending wake-ups, a binary min-heap.
    heap: Vec<Key>,
    /// Where each slot sits in `heap`, or `ABSENT`.
    position: Vec<u32>,
}

impl Timers {
    pub fn new(slots: usize) -> Timers {
        assert!(slots < ABSENT as usize, "too many slots");
        Timers { heap: Vec::with_capacity(slots), position: vec![ABSENT; slots] }
    }

    /// Asks for a wake-up of `slot` at `at`, unless one no later is pending.
    /// A deadline that moved later is left to its earlier wake-up: the woken
    /// component finds nothing due and reports its new deadline then.
    pub fn arm(&mut self, slot: Slot, at: Instant) {
        let entry = key(at, slot);
        match self.position[slot] {
            ABSENT => {
                self.heap.push(entry);
                self.sift_up(self.heap.len() - 1, entry);
            }
            i => {
                let i = i as usize;
                if entry < self.heap[i] {
                    self.sift_up(i, entry);
                }
            }
        }
    }

    /// Removes and returns the earliest wake-up if it is due at or before `until`.
    pub fn pop_until(&mut self, until: Instant) -> Option<(Instant, Slot)> {
        let top = *self.heap.first()?;
        if time_of(top) > until {
            return None;
        }
        self.position[slot_of(top)] = ABSENT;
        let last = self.heap.pop().expect("not empty");
        if !self.heap.is_empty() {
            self.sift_down(last);
        }
        Some((time_of(top), slot_of(top)))
    }

    pub fn peek_time(&self) -> Option<Instant> {
        self.heap.first().map(|&k| time_of(k))
    }

    /// Pending wake-ups.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Places `entry` at `i` or above it.
    fn sift_up(&mut self, mut i: usize, entry: Key) {
        while i > 0 {
            let parent = (i - 1) / 2;
            let above = self.heap[parent];
            if above <= entry {
                break;
            }
            self.put(i, above);
            i = parent;
        }
        self.put(i, entry);
    }

    /// Fills the hole at the root with `entry`: moves the smaller child up
    /// until `entry` fits.
    fn sift_down(&mut self, entry: Key) {
        let n = self.heap.len();
        let mut i = 0;
        loop {
            let left = 2 * i + 1;
            if left >= n {
                break;
            }
            let mut child = left;
            let mut smaller = self.heap[left];
            if left + 1 < n && self.heap[left + 1] < smaller {
                child = left + 1;
                smaller = self.heap[child];
            }
            if entry <= smaller {
                break;
            }
            self.put(i, smaller);
            i = child;
        }
        self.put(i, entry);
    }

    /// Puts `entry` at `i` of the heap, and notes where it is.
    fn put(&mut self, i: usize, entry: Key) {
        self.heap[i] = entry;
        self.position[slot_of(entry)] = i as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(t: &mut Timers) -> Vec<(u64, usize)> {
        std::iter::from_fn(|| t.pop_until(Instant::MAX).map(|(at, s)| (at.0, s))).collect()
    }

    #[test]
    fn pops_by_time_then_slot() {
        let mut t = Timers::new(6);
        for (slot, at) in [(5, 3), (2, 5), (4, 3), (0, 5), (1, 4), (3, 3)] {
            t.arm(slot, Instant(at));
        }
        assert_eq!(drain(&mut t), [(3, 3), (3, 4), (3, 5), (4, 1), (5, 0), (5, 2)]);
    }

    #[test]
    fn a_slot_keeps_its_earliest_wake_up() {
        let mut t = Timers::new(2);
        t.arm(0, Instant(10));
        t.arm(0, Instant(20));
        t.arm(1, Instant(15));
        t.arm(0, Instant(5));
        assert_eq!(t.len(), 2, "one entry per slot");
        assert_eq!(drain(&mut t), [(5, 0), (15, 1)]);
        t.arm(0, Instant(30));
        assert_eq!(drain(&mut t), [(30, 0)], "a popped slot can be armed again");
    }

    #[test]
    fn pop_until_leaves_later_wake_ups() {
        let mut t = Timers::new(1);
        t.arm(0, Instant(10));
        assert!(t.pop_until(Instant(9)).is_none());
        assert_eq!(t.peek_time(), Some(Instant(10)));
        assert_eq!(t.pop_until(Instant(10)), Some((Instant(10), 0)));
        assert!(t.is_empty());
    }

    /// Against a sorted reference, under random arms and pops.
    #[test]
    fn agrees_with_a_sorted_reference() {
        let mut t = Timers::new(40);
        let mut reference: Vec<Option<u64>> = vec![None; 40];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut now = 0;
        for _ in 0..20_000 {
            if next() % 3 == 0 {
                let expected = reference.iter().enumerate().filter_map(|(s, at)| at.map(|a| (a, s))).min();
                let got = t.pop_until(Instant(now + 50)).map(|(at, s)| (at.0, s));
                let expected = expected.filter(|&(a, _)| a <= now + 50);
                assert_eq!(got, expected);
                if let Some((a, s)) = got {
                    reference[s] = None;
                    now = a;
                }
            } else {
                let slot = (next() % 40) as usize;
                let at = now + next() % 100;
                t.arm(slot, Instant(at));
                if reference[slot].is_none_or(|r| at < r) {
                    reference[slot] = Some(at);
                }
            }
        }
    }
}
