//! The event queue: a binary heap ordered by time, simultaneous events by
//! their own order, so that a run depends neither on heap internals nor on
//! the order in which a driver happened to schedule things.

use ncmesh_proto::Instant;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Pending events of kind `E`, earliest first; events at the same time pop in
/// the order of `E` (its `Ord`), and equal events in the order they were pushed.
#[derive(Debug)]
pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<Entry<E>>>,
    pushed: u64,
}

#[derive(Debug)]
struct Entry<E> {
    at: Instant,
    order: u64,
    event: E,
}

impl<E: Ord> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}
impl<E: Ord> Eq for Entry<E> {}
impl<E: Ord> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<E: Ord> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, &self.event, self.order).cmp(&(other.at, &other.event, other.order))
    }
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue { heap: BinaryHeap::new(), pushed: 0 }
    }
}

impl<E: Ord> EventQueue<E> {
    pub fn push(&mut self, at: Instant, event: E) {
        self.heap.push(Reverse(Entry { at, order: self.pushed, event }));
        self.pushed += 1;
    }

    /// The earliest event if it is due at or before `until`.
    pub fn pop_until(&mut self, until: Instant) -> Option<(Instant, E)> {
        if self.heap.peek()?.0.at > until {
            return None;
        }
        self.heap.pop().map(|Reverse(e)| (e.at, e.event))
    }

    pub fn peek_time(&self) -> Option<Instant> {
        self.heap.peek().map(|e| e.0.at)
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

/// One wake-up slot per component, so that a component whose deadline keeps
/// moving later (an RTO restarted on every ACK) costs no heap traffic: the
/// queue holds at most one live entry per component, and an entry whose time
/// no longer matches its slot is stale and skipped.
#[derive(Debug)]
pub struct Alarms {
    armed: Vec<Instant>,
}

impl Alarms {
    pub fn new(components: usize) -> Alarms {
        Alarms { armed: vec![Instant::MAX; components] }
    }

    /// Asks for a wake-up at `deadline`; returns true when the caller must
    /// push an event, because nothing earlier is already queued.
    pub fn arm(&mut self, component: usize, deadline: Instant) -> bool {
        if deadline < self.armed[component] {
            self.armed[component] = deadline;
            true
        } else {
            false
        }
    }

    /// Claims a popped wake-up; false when it is stale.
    pub fn fire(&mut self, component: usize, at: Instant) -> bool {
        if self.armed[component] == at {
            self.armed[component] = Instant::MAX;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_pop_in_event_order_then_push_order() {
        /// An event ordered by its key alone, tagged to see the push order.
        #[derive(Debug, PartialEq, Eq)]
        struct Tagged(char, u8);
        impl PartialOrd for Tagged {
            fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }
        impl Ord for Tagged {
            fn cmp(&self, other: &Self) -> std::cmp::Ordering {
                self.0.cmp(&other.0)
            }
        }
        let mut q = EventQueue::default();
        for (t, key, tag) in [(5, 'c', 0), (3, 'd', 0), (5, 'a', 0), (3, 'b', 1), (4, 'e', 0), (3, 'b', 0)] {
            q.push(Instant(t), Tagged(key, tag));
        }
        let order: Vec<(char, u8)> = std::iter::from_fn(|| q.pop_until(Instant::MAX).map(|(_, e)| (e.0, e.1))).collect();
        assert_eq!(order, [('b', 1), ('b', 0), ('d', 0), ('e', 0), ('a', 0), ('c', 0)]);
    }

    #[test]
    fn pop_until_leaves_later_events() {
        let mut q = EventQueue::default();
        q.push(Instant(10), ());
        assert!(q.pop_until(Instant(9)).is_none());
        assert_eq!(q.pop_until(Instant(10)), Some((Instant(10), ())));
    }

    #[test]
    fn alarms_keep_one_live_entry() {
        let mut a = Alarms::new(1);
        assert!(a.arm(0, Instant(10)));
        assert!(!a.arm(0, Instant(20)), "a later deadline waits for the queued one");
        assert!(a.arm(0, Instant(5)));
        assert!(a.fire(0, Instant(5)));
        assert!(!a.fire(0, Instant(10)), "the superseded entry is stale");
    }
}
