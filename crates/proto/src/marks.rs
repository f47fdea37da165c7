//! Times one end of a flow notes for the other.
//!
//! Some measurements span both ends of a flow: how long a segment waits
//! between its first encoding at the source and its decoding at the sink.
//! In a simulation both ends run on one clock, and the driver gives the two
//! end layers of a flow one [`FlowMarks`]: the source notes when its part
//! happened, the sink takes the note when its part happens. (ns-3 carries
//! such times in packet tags; here they stay beside the packets, and never
//! change what a layer does.) A driver whose ends have clocks of their own
//! gives each end its own marks, and nothing is matched.

use crate::time::Instant;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// Notes keyed by a kind (a protocol's own numbering) and a number.
#[derive(Clone, Debug, Default)]
pub struct FlowMarks(Arc<Mutex<BTreeMap<(u8, u64), Instant>>>);

impl FlowMarks {
    fn notes(&self) -> MutexGuard<'_, BTreeMap<(u8, u64), Instant>> {
        // A panic elsewhere cannot leave a map of times half-updated.
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Notes that `key` of `kind` happened at `at`, unless it was noted already.
    pub fn note(&self, kind: u8, key: u64, at: Instant) {
        self.notes().entry((kind, key)).or_insert(at);
    }

    pub fn get(&self, kind: u8, key: u64) -> Option<Instant> {
        self.notes().get(&(kind, key)).copied()
    }

    pub fn take(&self, kind: u8, key: u64) -> Option<Instant> {
        self.notes().remove(&(kind, key))
    }

    /// Forgets the notes of `kind` below `key`.
    pub fn forget_below(&self, kind: u8, key: u64) {
        let mut notes = self.notes();
        let kept = notes.split_off(&(kind, key));
        notes.retain(|&(k, _), _| k != kind);
        notes.extend(kept);
    }

    /// How many notes are held.
    pub fn len(&self) -> usize {
        self.notes().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_note_stays_until_taken_or_forgotten() {
        let marks = FlowMarks::default();
        let other_end = marks.clone();
        marks.note(1, 5, Instant(10));
        marks.note(1, 5, Instant(20));
        marks.note(1, 6, Instant(30));
        marks.note(2, 1, Instant(40));
        assert_eq!(other_end.get(1, 5), Some(Instant(10)));
        assert_eq!(other_end.take(1, 5), Some(Instant(10)));
        assert_eq!(other_end.take(1, 5), None);
        marks.note(1, 2, Instant(50));
        marks.forget_below(1, 6);
        assert_eq!((marks.get(1, 2), marks.get(1, 6), marks.get(2, 1)), (None, Some(Instant(30)), Some(Instant(40))));
        assert_eq!(marks.len(), 2);
    }
}
