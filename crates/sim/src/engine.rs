//! The event engine: one wake-up time per slot, earliest first.
//!
//! Everything the simulator schedules is a slot with at most one pending
//! wake-up: a flow's start, a medium's next departure, a node's timer. So
//! the queue is a tournament tree over the slots rather than a heap of
//! events: each leaf holds its slot's wake-up, each inner node the earliest
//! below it. Arming walks from a leaf to the root and popping reads the
//! root, each walk a fixed number of steps with no data-dependent branch,
//! which a binary heap's sifting cannot offer: its comparisons mispredict
//! about half the time, and they cost more than the walk's extra steps.
//! Nothing stale piles up, and simultaneous wake-ups pop in slot order, so
//! a run depends neither on the tree's shape nor on the order in which a
//! driver happened to arm its slots.

use ncmesh_proto::Instant;
use std::fmt::Debug;

/// Index of a slot.
pub type Slot = usize;

/// A pending wake-up as one integer: the time in the high bits, the slot
/// in the low `shift` bits, so that one comparison orders by time, then
/// slot. A run keys its wake-ups in 64 bits where its slots and its end
/// leave room (every shipped scenario): the tree then moves and compares
/// half as many bytes as with 128.
pub trait Key: Copy + Ord + Debug {
    /// Greater than every key of a wake-up: a slot with nothing pending.
    const NONE: Self;
    fn new(at: u64, slot: Slot, shift: u32) -> Self;
    fn time(self, shift: u32) -> Instant;
    /// The slot, from the low bits that `mask` selects.
    fn slot(self, mask: u64) -> Slot;
}

impl Key for u64 {
    const NONE: u64 = u64::MAX;
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
    const NONE: u128 = u128::MAX;
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
    Narrow(Tree<u64>),
    Wide(Tree<u128>),
}

impl Timers {
    /// Timers for `slots` slots, of which nothing at or after `horizon`
    /// will be popped (the end of the run).
    pub fn new(slots: usize, horizon: Instant) -> Timers {
        assert!(slots <= u32::MAX as usize, "too many slots");
        let shift = (usize::BITS - slots.saturating_sub(1).leading_zeros()).max(1);
        let latest = u64::MAX >> shift;
        if horizon.0 <= latest {
            Timers::Narrow(Tree::new(slots, shift, latest))
        } else {
            Timers::Wide(Tree::new(slots, 32, u64::MAX))
        }
    }

    /// Asks for a wake-up of `slot` at `at`, unless one no later is pending.
    /// A deadline that moved later is left to its earlier wake-up: the woken
    /// component finds nothing due and reports its new deadline then.
    #[inline]
    pub fn arm(&mut self, slot: Slot, at: Instant) {
        match self {
            Timers::Narrow(t) => t.arm(slot, at),
            Timers::Wide(t) => t.arm(slot, at),
        }
    }

    /// Removes and returns the earliest wake-up if it is due at or before
    /// `until`, which must be before the horizon.
    #[inline]
    pub fn pop_until(&mut self, until: Instant) -> Option<(Instant, Slot)> {
        match self {
            Timers::Narrow(t) => t.pop_until(until),
            Timers::Wide(t) => t.pop_until(until),
        }
    }

    /// Pending wake-ups.
    pub fn len(&self) -> usize {
        match self {
            Timers::Narrow(t) => t.len(),
            Timers::Wide(t) => t.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A tournament tree of keys, one leaf per slot.
#[derive(Clone, Debug)]
pub struct Tree<K> {
    /// Node 1 is the root, node `i` has children `2i` and `2i + 1`, and the
    /// leaves are `leaves..2 * leaves`; node 0 is unused. A leaf holds its
    /// slot's key or `NONE`, an inner node the least key below it.
    tree: Vec<K>,
    leaves: usize,
    /// The leaf emptied by the last pop whose ancestors still hold its key.
    /// Most woken components arm their own slot again at once, so the walk
    /// that repairs the ancestors is put off until then and done once.
    stale: Option<usize>,
    /// Bits of the slot in a key, and a mask of them.
    shift: u32,
    mask: u64,
    /// The latest time a key holds: later wake-ups are kept at it, which
    /// is at or after the horizon, so they never pop.
    latest: u64,
}

impl<K: Key> Tree<K> {
    fn new(slots: usize, shift: u32, latest: u64) -> Tree<K> {
        let leaves = slots.max(1).next_power_of_two();
        Tree { tree: vec![K::NONE; 2 * leaves], leaves, stale: None, shift, mask: (1 << shift) - 1, latest }
    }

    fn len(&self) -> usize {
        self.tree[self.leaves..].iter().filter(|&&k| k != K::NONE).count()
    }

    #[inline]
    fn arm(&mut self, slot: Slot, at: Instant) {
        let key = K::new(at.0.min(self.latest), slot, self.shift);
        let leaf = self.leaves + slot;
        if self.stale == Some(leaf) {
            self.stale = None;
            self.tree[leaf] = key;
            return self.repair(leaf);
        }
        self.repair_stale();
        if key >= self.tree[leaf] {
            return;
        }
        // Every ancestor takes the key if it is earlier than what it holds.
        let mut i = leaf;
        while i > 0 {
            self.tree[i] = self.tree[i].min(key);
            i >>= 1;
        }
    }

    #[inline]
    fn pop_until(&mut self, until: Instant) -> Option<(Instant, Slot)> {
        debug_assert!(until.0 < self.latest, "nothing at the horizon pops");
        self.repair_stale();
        let top = self.tree[1];
        // An empty tree's root is `NONE`, whose time is past any `until`.
        if top.time(self.shift) > until {
            return None;
        }
        let slot = top.slot(self.mask);
        let leaf = self.leaves + slot;
        self.tree[leaf] = K::NONE;
        self.stale = Some(leaf);
        Some((top.time(self.shift), slot))
    }

    #[inline]
    fn repair_stale(&mut self) {
        if let Some(leaf) = self.stale.take() {
            self.repair(leaf);
        }
    }

    /// Recomputes the ancestors of `leaf` from their children.
    #[inline]
    fn repair(&mut self, leaf: usize) {
        let mut i = leaf;
        let mut least = self.tree[i];
        while i > 1 {
            least = least.min(self.tree[i ^ 1]);
            i >>= 1;
            self.tree[i] = least;
        }
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
                        // Most woken components arm their own slot again
                        // at once, before or after arming others.
                        if next() % 2 == 0 {
                            let at = now + next() % 100;
                            t.arm(s, Instant(at));
                            reference[s] = Some(at);
                        }
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
