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

#[derive(Clone, Debug)]
pub struct Timers {
    /// Pending wake-ups as (time, slot), a binary min-heap.
    heap: Vec<(Instant, u32)>,
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
        match self.position[slot] {
            ABSENT => {
                self.heap.push((at, slot as u32));
                self.sift_up(self.heap.len() - 1);
            }
            i => {
                let i = i as usize;
                if at < self.heap[i].0 {
                    self.heap[i].0 = at;
                    self.sift_up(i);
                }
            }
        }
    }

    /// Removes and returns the earliest wake-up if it is due at or before `until`.
    pub fn pop_until(&mut self, until: Instant) -> Option<(Instant, Slot)> {
        let (at, slot) = *self.heap.first()?;
        let slot = slot as usize;
        if at > until {
            return None;
        }
        let last = self.heap.pop().expect("not empty");
        self.position[slot] = ABSENT;
        if !self.heap.is_empty() {
            self.heap[0] = last;
            self.sift_down(0);
        }
        Some((at, slot))
    }

    pub fn peek_time(&self) -> Option<Instant> {
        self.heap.first().map(|e| e.0)
    }

    /// Pending wake-ups.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    fn sift_up(&mut self, mut i: usize) {
        let entry = self.heap[i];
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.heap[parent] <= entry {
                break;
            }
            self.put(i, self.heap[parent]);
            i = parent;
        }
        self.put(i, entry);
    }

    fn sift_down(&mut self, mut i: usize) {
        let entry = self.heap[i];
        let n = self.heap.len();
        loop {
            let left = 2 * i + 1;
            if left >= n {
                break;
            }
            let child = if left + 1 < n && self.heap[left + 1] < self.heap[left] { left + 1 } else { left };
            if entry <= self.heap[child] {
                break;
            }
            self.put(i, self.heap[child]);
            i = child;
        }
        self.put(i, entry);
    }

    /// Puts `entry` at `i` of the heap, and notes where it is.
    fn put(&mut self, i: usize, entry: (Instant, u32)) {
        self.heap[i] = entry;
        self.position[entry.1 as usize] = i as u32;
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
