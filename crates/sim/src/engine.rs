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
use std::fmt::Debug;

/// Index of a slot.
pub type Slot = usize;

const ABSENT: u32 = u32::MAX;

/// A pending wake-up as one integer: the time in the high bits, the slot
/// in the low `shift` bits, so that one comparison orders by time, then
/// slot. A run keys its wake-ups in 64 bits where its slots and its end
/// leave room (every shipped scenario): the heap then moves and compares
/// half as many bytes as with 128.
pub trait Key: Copy + Ord + Debug {
    fn new(at: u64, slot: Slot, shift: u32) -> Self;
    fn time(self, shift: u32) -> Instant;
    /// The slot, from the low bits that `mask` selects.
    fn slot(self, mask: u64) -> Slot;
}

impl Key for u64 {
    #[inline]
    fn new(at: u64, slot: Slot, shift: u32) -> u64 {
        at << shift | slot as u64
    }
    #[inline]
    fn time(self, shift: u32) -> Instant {
        Instant(self >> shift)
    }
    #[inline]
    fn slot(self, mask: u64) -> Slot {
        (self & mask) as Slot
    }
}

impl Key for u128 {
    #[inline]
    fn new(at: u64, slot: Slot, shift: u32) -> u128 {
        (at as u128) << shift | slot as u128
    }
    #[inline]
    fn time(self, shift: u32) -> Instant {
        Instant((self >> shift) as u64)
    }
    #[inline]
    fn slot(self, mask: u64) -> Slot {
        (self as u64 & mask) as Slot
    }
}

/// The wake-ups of a run, keyed in as few bits as it allows.
#[derive(Clone, Debug)]
pub enum Timers {
    Narrow(Heap<u64>),
    Wide(Heap<u128>),
}

impl Timers {
    /// Timers for `slots` slots, of which nothing at or after `horizon`
    /// will be popped (the end of the run).
    pub fn new(slots: usize, horizon: Instant) -> Timers {
        assert!(slots < ABSENT as usize, "too many slots");
        let shift = (usize::BITS - slots.saturating_sub(1).leading_zeros()).max(1);
        let latest = u64::MAX >> shift;
        if horizon.0 <= latest {
            Timers::Narrow(Heap::new(slots, shift, latest))
        } else {
            Timers::Wide(Heap::new(slots, 32, u64::MAX))
        }
    }

    /// Asks for a wake-up of `slot` at `at`, unless one no later is pending.
    /// A deadline that moved later is left to its earlier wake-up: the woken
    /// component finds nothing due and reports its new deadline then.
    #[inline]
    pub fn arm(&mut self, slot: Slot, at: Instant) {
        match self {
            Timers::Narrow(h) => h.arm(slot, at),
            Timers::Wide(h) => h.arm(slot, at),
        }
    }

    /// Removes and returns the earliest wake-up if it is due at or before
    /// `until`, which must be before the horizon.
    #[inline]
    pub fn pop_until(&mut self, until: Instant) -> Option<(Instant, Slot)> {
        match self {
            Timers::Narrow(h) => h.pop_until(until),
            Timers::Wide(h) => h.pop_until(until),
        }
    }

    /// Pending wake-ups.
    pub fn len(&self) -> usize {
        match self {
            Timers::Narrow(h) => h.heap.len(),
            Timers::Wide(h) => h.heap.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// An indexed binary min-heap of keys, one per slot at most.
#[derive(Clone, Debug)]
pub struct Heap<K> {
    /// Pending wake-ups, a binary min-heap.
    heap: Vec<K>,
    /// Where each slot sits in `heap`, or `ABSENT`.
    position: Vec<u32>,
    /// Bits of the slot in a key, and a mask of them.
    shift: u32,
    mask: u64,
    /// The latest time a key holds: later wake-ups are kept at it, which
    /// is at or after the horizon, so they never pop.
    latest: u64,
}

impl<K: Key> Heap<K> {
    fn new(slots: usize, shift: u32, latest: u64) -> Heap<K> {
        Heap { heap: Vec::with_capacity(slots), position: vec![ABSENT; slots], shift, mask: (1 << shift) - 1, latest }
    }

    #[inline]
    fn key(&self, at: Instant, slot: Slot) -> K {
        K::new(at.0.min(self.latest), slot, self.shift)
    }

    fn arm(&mut self, slot: Slot, at: Instant) {
        let entry = self.key(at, slot);
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

    fn pop_until(&mut self, until: Instant) -> Option<(Instant, Slot)> {
        debug_assert!(until.0 < self.latest, "nothing at the horizon pops");
        let top = *self.heap.first()?;
        if top.time(self.shift) > until {
            return None;
        }
        let slot = top.slot(self.mask);
        self.position[slot] = ABSENT;
        let last = self.heap.pop().expect("not empty");
        if !self.heap.is_empty() {
            self.sift_down(last);
        }
        Some((top.time(self.shift), slot))
    }

    /// Places `entry` at `i` or above it.
    fn sift_up(&mut self, mut i: usize, entry: K) {
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
    fn sift_down(&mut self, entry: K) {
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
    #[inline]
    fn put(&mut self, i: usize, entry: K) {
        self.heap[i] = entry;
        self.position[entry.slot(self.mask)] = i as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HORIZON: Instant = Instant(1_000_000);

    /// The same timers keyed both ways: 64 bits with a near horizon, 128 with none.
    fn both(slots: usize) -> [Timers; 2] {
        let narrow = Timers::new(slots, HORIZON);
        let wide = Timers::new(slots, Instant::MAX);
        assert!(matches!((&narrow, &wide), (Timers::Narrow(_), Timers::Wide(_))));
        [narrow, wide]
    }

    fn drain(t: &mut Timers) -> Vec<(u64, usize)> {
        std::iter::from_fn(|| t.pop_until(Instant(HORIZON.0 - 1)).map(|(at, s)| (at.0, s))).collect()
    }

    #[test]
    fn pops_by_time_then_slot() {
        for mut t in both(6) {
            for (slot, at) in [(5, 3), (2, 5), (4, 3), (0, 5), (1, 4), (3, 3)] {
                t.arm(slot, Instant(at));
            }
            assert_eq!(drain(&mut t), [(3, 3), (3, 4), (3, 5), (4, 1), (5, 0), (5, 2)]);
        }
    }

    #[test]
    fn a_slot_keeps_its_earliest_wake_up() {
        for mut t in both(2) {
            t.arm(0, Instant(10));
            t.arm(0, Instant(20));
            t.arm(1, Instant(15));
            t.arm(0, Instant(5));
            assert_eq!(t.len(), 2, "one entry per slot");
            assert_eq!(drain(&mut t), [(5, 0), (15, 1)]);
            t.arm(0, Instant(30));
            assert_eq!(drain(&mut t), [(30, 0)], "a popped slot can be armed again");
        }
    }

    #[test]
    fn pop_until_leaves_later_wake_ups() {
        for mut t in both(1) {
            t.arm(0, Instant(10));
            assert!(t.pop_until(Instant(9)).is_none());
            assert_eq!(t.len(), 1);
            assert_eq!(t.pop_until(Instant(10)), Some((Instant(10), 0)));
            assert!(t.is_empty());
        }
    }

    #[test]
    fn keys_are_as_narrow_as_the_slots_and_horizon_allow() {
        // 3 slots take 2 bits, which leave 62 bits of nanoseconds.
        assert!(matches!(Timers::new(3, Instant(u64::MAX >> 2)), Timers::Narrow(_)));
        assert!(matches!(Timers::new(3, Instant((u64::MAX >> 2) + 1)), Timers::Wide(_)));
        assert!(matches!(Timers::new(1, Instant(u64::MAX >> 1)), Timers::Narrow(_)));
    }

    #[test]
    fn wake_ups_past_the_horizon_wait_and_keep_their_slot_and_its_place() {
        // 2 slots: 1 bit of slot, so the latest time a key holds is 2^63 - 1.
        let mut t = Timers::new(2, Instant(u64::MAX >> 1));
        t.arm(1, Instant(u64::MAX));
        t.arm(0, Instant(u64::MAX - 1));
        t.arm(1, Instant(7));
        assert_eq!(t.pop_until(Instant(100)), Some((Instant(7), 1)), "an earlier arm still moves it");
        assert!(t.pop_until(Instant((u64::MAX >> 1) - 1)).is_none());
        assert_eq!(t.len(), 1);
    }

    /// Against a sorted reference, under random arms and pops.
    #[test]
    fn agrees_with_a_sorted_reference() {
        for mut t in both(40) {
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
            assert!(now < HORIZON.0, "the walk stays before the narrow horizon");
        }
    }
}
