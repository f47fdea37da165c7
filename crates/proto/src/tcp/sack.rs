//! The retransmission queue and its SACK scoreboard (RFC 6675).
//!
//! Every sender keeps one: the segments sent and not yet cumulatively
//! acknowledged, each with its send times and three marks. Without SACK
//! only the recovery code marks segments lost (the head on fast
//! retransmit or partial ACK, everything on RTO), so the same queue does
//! go-back-N after a timeout and SACK-based recovery alike.

use std::collections::VecDeque;

use super::rate::TxRate;
use crate::time::{Duration, Instant};

/// A SACK block as stream offsets `[start, end)`, after the sender has
/// unwrapped the 32-bit sequence numbers of the wire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackBlock {
    pub start: u64,
    pub end: u64,
}

const SACKED: u8 = 1;
const LOST: u8 = 2;
/// A retransmission of this segment is in flight (this recovery episode).
const RETRANS: u8 = 4;
/// Ever retransmitted: its ACK is ambiguous for RTT (Karn).
const EVER_RETRANS: u8 = 8;

/// What one pass of RACK's loss marking found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RackMarks {
    /// How long the next candidate still has to wait, for the reordering timer.
    pub wait: Option<Duration>,
    /// A resend in flight was marked lost (Linux's `FLAG_LOST_RETRANS`).
    pub lost_resend: bool,
}

#[derive(Clone, Copy, Debug)]
pub struct SentSegment {
    pub seq: u64,
    pub len: u32,
    pub last_sent: Instant,
    flags: u8,
    /// The delivery state at the last transmission, for rate samples.
    pub tx: TxRate,
}

impl SentSegment {
    pub fn end(&self) -> u64 {
        self.seq + self.len as u64
    }
    pub fn is_sacked(&self) -> bool {
        self.flags & SACKED != 0
    }
    pub fn is_lost(&self) -> bool {
        self.flags & LOST != 0
    }
    pub fn was_ever_retransmitted(&self) -> bool {
        self.flags & EVER_RETRANS != 0
    }
    fn delivered(&self) -> Delivered {
        Delivered { sent: self.last_sent, end: self.end(), retransmitted: self.was_ever_retransmitted(), tx: self.tx }
    }
    fn is_pending(&self) -> bool {
        self.flags & (SACKED | LOST | RETRANS) == LOST
    }
}

/// Byte counts by mark, kept exact on every mark change so that pipe is O(1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Counts {
    /// SACKed.
    sacked: u64,
    /// Lost and not SACKed.
    lost: u64,
    /// Retransmitted in this episode and not SACKed.
    retrans: u64,
    /// Lost, not SACKed and not yet retransmitted: waiting to be resent.
    pending: u64,
}

impl Counts {
    fn apply(&mut self, flags: u8, len: u64, add: bool) {
        let mut c = Counts::default();
        if flags & SACKED != 0 {
            c.sacked = len;
        } else {
            if flags & LOST != 0 {
                c.lost = len;
                if flags & RETRANS == 0 {
                    c.pending = len;
                }
            }
            if flags & RETRANS != 0 {
                c.retrans = len;
            }
        }
        if add {
            self.sacked += c.sacked;
            self.lost += c.lost;
            self.retrans += c.retrans;
            self.pending += c.pending;
        } else {
            self.sacked -= c.sacked;
            self.lost -= c.lost;
            self.retrans -= c.retrans;
            self.pending -= c.pending;
        }
    }
}

/// What a cumulative ACK removed from the queue.
#[derive(Clone, Copy, Debug, Default)]
pub struct Acked {
    pub bytes: u64,
    /// Of `bytes`, those no earlier ACK had SACKed.
    pub unsacked_bytes: u64,
    /// Some removed segment had been retransmitted: no Karn-safe RTT sample.
    pub retransmitted: bool,
    /// When the newest fully acknowledged segment was last sent.
    pub newest_sent: Option<Instant>,
    /// The most recently sent segment delivered (for RACK).
    pub latest: Option<Delivered>,
    /// The lowest end of a never-resent segment it delivered (for F-RTO).
    pub original_end: Option<u64>,
}

/// What SACK blocks newly marked.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sacked {
    pub bytes: u64,
    /// The most recently sent segment newly SACKed (for RACK).
    pub latest: Option<Delivered>,
    /// The lowest end of a never-resent segment newly SACKed (for F-RTO).
    pub original_end: Option<u64>,
}

/// A segment newly delivered (acknowledged or SACKed): what RACK keeps of
/// the most recently sent one (RFC 8985 6.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivered {
    pub sent: Instant,
    pub end: u64,
    pub retransmitted: bool,
    /// Its delivery state when sent, for the rate sample it gives.
    pub tx: TxRate,
}

impl Delivered {
    /// Keeps the later sent of the two; ties go to the higher end (RFC 8985 6.2 step 2).
    fn latest(a: Option<Delivered>, b: Delivered) -> Option<Delivered> {
        Some(match a {
            Some(a) if (a.sent, a.end) >= (b.sent, b.end) => a,
            _ => b,
        })
    }
}

#[derive(Debug, Default)]
pub struct Scoreboard {
    segs: VecDeque<SentSegment>,
    counts: Counts,
    /// HighACK of RFC 6675 in spirit: one past the highest SACKed byte.
    high_sacked: u64,
    /// One past the highest byte retransmitted this episode (HighRxt).
    high_rxt: u64,
    /// No segment below this is waiting to be resent (a scan hint).
    pending_from: u64,
    /// No segment below this qualifies for NextSeg rule 3 (a scan hint).
    rule3_from: u64,
    /// Bytes ever marked lost, retransmissions lost again included
    /// (Linux's `tp->lost`): what a delivery-rate reader compares with delivery.
    lost_total: u64,
    /// Segments ever delivered, SACKed or cumulatively acknowledged
    /// (Linux's `tp->delivered`, which counts packets).
    delivered_segments: u64,
    /// NextSeg rule 1 resends only segments below the highest SACKed one
    /// (its condition 1.b), also after a timeout (see `TcpConfig::keep_sack_after_rto`).
    rule1_below_sacked: bool,
}

impl Scoreboard {
    pub fn new() -> Scoreboard {
        Scoreboard::default()
    }

    /// A scoreboard whose rule 1 keeps to segments below the highest SACKed
    /// one (RFC 6675 condition 1.b), as ns-3's `TcpTxBuffer::NextSeg` does.
    pub fn with_rule1_below_sacked() -> Scoreboard {
        Scoreboard { rule1_below_sacked: true, ..Scoreboard::default() }
    }

    pub fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }

    pub fn get(&self, i: usize) -> &SentSegment {
        &self.segs[i]
    }

    pub fn sacked_bytes(&self) -> u64 {
        self.counts.sacked
    }

    pub fn lost_bytes(&self) -> u64 {
        self.counts.lost
    }

    /// Nothing SACKed, marked lost or resent since the last cumulative ACK:
    /// Linux's `TCP_CA_Open` as against `TCP_CA_Disorder` (`tcp_try_keep_open`).
    pub fn is_undisturbed(&self) -> bool {
        self.counts.sacked == 0
            && self.counts.lost == 0
            && self.counts.retrans == 0
            && self.segs.front().is_none_or(|s| !s.was_ever_retransmitted())
    }

    /// Bytes between the first unacknowledged and one past the last sent.
    pub fn outstanding(&self) -> u64 {
        match (self.segs.front(), self.segs.back()) {
            (Some(f), Some(b)) => b.end() - f.seq,
            _ => 0,
        }
    }

    /// RFC 6675 `pipe`: outstanding bytes not SACKed and not lost, plus
    /// retransmissions in flight.
    pub fn in_flight(&self) -> u64 {
        self.outstanding() - self.counts.sacked - self.counts.lost + self.counts.retrans
    }

    /// Bytes ever marked lost and waiting to be resent.
    pub fn lost_total(&self) -> u64 {
        self.lost_total
    }

    /// Segments ever delivered: a segment acknowledged only in part counts
    /// once its last byte is.
    pub fn delivered_segments(&self) -> u64 {
        self.delivered_segments
    }

    pub fn push(&mut self, seq: u64, len: u32, now: Instant, tx: TxRate) {
        debug_assert!(self.segs.back().is_none_or(|b| b.end() == seq));
        self.segs.push_back(SentSegment { seq, len, last_sent: now, flags: 0, tx });
    }

    /// The first segment whose end is above `seq`.
    fn index_of(&self, seq: u64) -> usize {
        self.segs.partition_point(|s| s.end() <= seq)
    }

    fn set_flags(&mut self, i: usize, flags: u8) {
        let s = &mut self.segs[i];
        let waiting = |f: u8| f & (SACKED | LOST | RETRANS) == LOST;
        if waiting(flags) && !waiting(s.flags) {
            self.lost_total += s.len as u64;
        }
        self.counts.apply(s.flags, s.len as u64, false);
        s.flags = flags;
        self.counts.apply(flags, s.len as u64, true);
    }

    /// Drops everything below `ack`.
    pub fn ack(&mut self, ack: u64) -> Acked {
        let mut out = Acked::default();
        while let Some(&s) = self.segs.front() {
            if s.end() <= ack {
                self.counts.apply(s.flags, s.len as u64, false);
                out.bytes += s.len as u64;
                out.retransmitted |= s.was_ever_retransmitted();
                out.newest_sent = Some(s.last_sent);
                if !s.is_sacked() {
                    self.delivered_segments += 1;
                    out.unsacked_bytes += s.len as u64;
                    out.latest = Delivered::latest(out.latest, s.delivered());
                    if !s.was_ever_retransmitted() {
                        out.original_end = out.original_end.or(Some(s.end()));
                    }
                }
                self.segs.pop_front();
            } else {
                if s.seq < ack {
                    // An ACK inside a segment: keep the rest with its marks.
                    let cut = ack - s.seq;
                    self.counts.apply(s.flags, s.len as u64, false);
                    let f = &mut self.segs[0];
                    f.seq = ack;
                    f.len -= cut as u32;
                    self.counts.apply(f.flags, f.len as u64, true);
                    out.bytes += cut;
                    out.unsacked_bytes += cut;
                    out.retransmitted |= s.was_ever_retransmitted();
                }
                break;
            }
        }
        if self.segs.is_empty() {
            self.high_sacked = self.high_sacked.min(ack);
        }
        out
    }

    /// Marks the segments wholly inside the blocks SACKed. Segments only
    /// partly covered stay unSACKed.
    pub fn apply_sack(&mut self, blocks: &[SackBlock]) -> Sacked {
        let mut out = Sacked::default();
        let Some(una) = self.segs.front().map(|s| s.seq) else { return out };
        for b in blocks {
            if b.end <= una || b.end <= b.start {
                continue;
            }
            let mut i = self.index_of(b.start.max(una));
            while i < self.segs.len() && self.segs[i].end() <= b.end {
                let s = self.segs[i];
                if s.seq >= b.start && !s.is_sacked() {
                    self.set_flags(i, s.flags | SACKED);
                    // Its sample is taken now, not again at the cumulative ACK.
                    self.segs[i].tx.unsampled = false;
                    self.delivered_segments += 1;
                    out.bytes += s.len as u64;
                    self.high_sacked = self.high_sacked.max(s.end());
                    out.latest = Delivered::latest(out.latest, s.delivered());
                    if !s.was_ever_retransmitted() {
                        out.original_end = Some(out.original_end.map_or(s.end(), |e| e.min(s.end())));
                    }
                }
                i += 1;
            }
        }
        out
    }

    /// RACK's loss marking (RFC 8985 6.2 step 5): every segment neither
    /// SACKed nor already waiting to be resent that was last sent before
    /// `before` (and `before_end` on a tie) and `wait` ago is lost; a
    /// retransmission so marked is due again.
    pub fn mark_lost_sent_before(
        &mut self,
        before: Instant,
        before_end: u64,
        now: Instant,
        wait: Duration,
    ) -> RackMarks {
        let mut marks = RackMarks::default();
        for i in 0..self.segs.len() {
            let s = self.segs[i];
            if s.is_sacked() || s.is_pending() || (s.last_sent, s.end()) >= (before, before_end) {
                continue;
            }
            let due = s.last_sent + wait;
            if due <= now {
                marks.lost_resend |= s.flags & RETRANS != 0;
                self.set_flags(i, (s.flags | LOST) & !RETRANS);
                self.pending_from = self.pending_from.min(s.seq);
            } else {
                let left = due - now;
                marks.wait = Some(marks.wait.map_or(left, |n| n.max(left)));
            }
        }
        marks
    }

    /// The last segment sent, for a tail loss probe to resend.
    pub fn last_index(&self) -> Option<usize> {
        self.segs.len().checked_sub(1)
    }

    /// RFC 6675 `IsLost` applied to every unSACKed segment below HighACK:
    /// lost when `dupthresh` SACKed segments, or more than
    /// `(dupthresh - 1) * mss` SACKed bytes, lie above it.
    pub fn mark_lost_by_sack(&mut self, dupthresh: u32, mss: u64) {
        let top = self.segs.partition_point(|s| s.seq < self.high_sacked);
        let (mut count, mut bytes) = (0u32, 0u64);
        let limit = (dupthresh.saturating_sub(1) as u64) * mss;
        for i in (0..top).rev() {
            let s = self.segs[i];
            if s.is_sacked() {
                count += 1;
                bytes += s.len as u64;
            } else if s.is_lost() {
                // Lost marks are closed downwards: everything below is marked.
                break;
            } else if count >= dupthresh || bytes > limit {
                self.set_flags(i, s.flags | LOST);
                self.pending_from = self.pending_from.min(s.seq);
            }
        }
    }

    /// Marks the first unacknowledged segment lost (fast retransmit, partial ACK).
    pub fn mark_front_lost(&mut self) {
        if let Some(&s) = self.segs.front() {
            if !s.is_sacked() {
                self.set_flags(0, (s.flags | LOST) & !RETRANS);
                self.pending_from = self.pending_from.min(s.seq);
            }
        }
    }

    /// After an RTO: every segment is to be resent and SACK information is
    /// forgotten, since the receiver may have reneged (RFC 2018 section 8).
    pub fn mark_all_lost(&mut self) {
        for i in 0..self.segs.len() {
            let f = self.segs[i].flags;
            self.set_flags(i, (f & EVER_RETRANS) | LOST);
        }
        let una = self.segs.front().map_or(0, |s| s.seq);
        self.high_sacked = una;
        self.new_episode(una);
    }

    /// After an RTO, keeping what was SACKed (RFC 6675 section 5.1 allows
    /// it): every other segment is to be resent, and no retransmission is
    /// in flight any more (ns-3's `TcpTxBuffer::SetSentListLost(false)`).
    pub fn mark_unsacked_lost(&mut self) {
        for i in 0..self.segs.len() {
            let f = self.segs[i].flags;
            let kept = if f & SACKED != 0 { f & !RETRANS } else { (f & EVER_RETRANS) | LOST };
            self.set_flags(i, kept);
        }
        let una = self.segs.front().map_or(0, |s| s.seq);
        self.new_episode(una);
    }

    /// Takes back every lost mark, as after a timeout found spurious
    /// (Linux's `tcp_undo_cwnd_reduction` with `unmark_loss`): what was
    /// resent stays in flight, the rest is in flight again.
    pub fn unmark_lost(&mut self) {
        for i in 0..self.segs.len() {
            let f = self.segs[i].flags;
            self.set_flags(i, f & !LOST);
        }
        let una = self.segs.front().map_or(0, |s| s.seq);
        self.pending_from = una;
    }

    /// Forget the previous episode's retransmission marks' position.
    pub fn new_episode(&mut self, una: u64) {
        self.high_rxt = una;
        self.pending_from = una;
        self.rule3_from = una;
    }

    /// Whether the first unacknowledged segment is marked lost.
    pub fn front_is_lost(&self) -> bool {
        self.segs.front().is_some_and(|s| s.is_lost() && !s.is_sacked())
    }

    /// NextSeg rule 1: the lowest segment marked lost and not yet resent.
    pub fn next_pending(&mut self) -> Option<usize> {
        if self.counts.pending == 0 {
            return None;
        }
        let mut i = self.index_of(self.pending_from);
        // Rule 1.b: below the highest SACKed segment, if anything is SACKed.
        let below = match self.segs.front() {
            Some(f) if self.rule1_below_sacked && self.high_sacked > f.seq => self.high_sacked,
            _ => u64::MAX,
        };
        while i < self.segs.len() && self.segs[i].end() <= below {
            if self.segs[i].is_pending() {
                self.pending_from = self.segs[i].seq;
                return Some(i);
            }
            i += 1;
        }
        debug_assert!(below != u64::MAX, "pending bytes counted but no pending segment");
        None
    }

    /// NextSeg rule 3: the lowest segment above HighRxt and below HighACK
    /// neither SACKed, lost nor resent.
    pub fn next_rule3(&mut self) -> Option<usize> {
        let mut i = self.index_of(self.rule3_from.max(self.high_rxt));
        while i < self.segs.len() && self.segs[i].end() <= self.high_sacked {
            let s = self.segs[i];
            if s.flags & (SACKED | LOST | RETRANS) == 0 {
                self.rule3_from = s.seq;
                return Some(i);
            }
            i += 1;
        }
        if let Some(s) = self.segs.get(i) {
            self.rule3_from = s.seq;
        }
        None
    }

    /// Records a retransmission of segment `i`.
    pub fn on_retransmit(&mut self, i: usize, now: Instant, tx: TxRate) -> SentSegment {
        let f = self.segs[i].flags;
        self.set_flags(i, f | RETRANS | EVER_RETRANS);
        let s = &mut self.segs[i];
        s.last_sent = now;
        s.tx = tx;
        self.high_rxt = self.high_rxt.max(s.end());
        *s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board(n: u64) -> Scoreboard {
        let mut b = Scoreboard::new();
        for i in 0..n {
            b.push(i * 1000, 1000, Instant(i), TxRate::default());
        }
        b
    }

    fn blk(start: u64, end: u64) -> SackBlock {
        SackBlock { start, end }
    }

    #[test]
    fn pipe_counts_sacked_lost_and_retransmitted() {
        let mut b = board(10);
        assert_eq!(b.in_flight(), 10_000);
        // Segment 0 lost; 1..=3 SACKed: 0 is lost by the segment count.
        assert_eq!(b.apply_sack(&[blk(1000, 4000)]).bytes, 3000);
        b.mark_lost_by_sack(3, 1000);
        assert!(b.front_is_lost());
        assert_eq!(b.in_flight(), 10_000 - 3000 - 1000);
        let i = b.next_pending().unwrap();
        assert_eq!(i, 0);
        b.on_retransmit(i, Instant(50), TxRate::default());
        assert_eq!(b.in_flight(), 7000);
        assert_eq!(b.next_pending(), None);
        // Rule 3 has nothing below HighACK: segments 1-3 are SACKed.
        assert_eq!(b.next_rule3(), None);
        let acked = b.ack(4000);
        assert!(acked.retransmitted);
        assert_eq!(acked.bytes, 4000);
        assert_eq!(b.in_flight(), 6000);
    }

    #[test]
    fn is_lost_needs_dupthresh_segments_above() {
        let mut b = board(10);
        b.apply_sack(&[blk(2000, 3000), blk(4000, 5000)]);
        b.mark_lost_by_sack(3, 1000);
        assert_eq!(b.lost_bytes(), 0);
        // Rule 3 offers segment 0, then 1, then 3.
        assert_eq!(b.next_rule3(), Some(0));
        b.on_retransmit(0, Instant(9), TxRate::default());
        assert_eq!(b.next_rule3(), Some(1));
        b.apply_sack(&[blk(6000, 7000)]);
        b.mark_lost_by_sack(3, 1000);
        // Three SACKed segments lie above 0 and 1; two above 3.
        assert_eq!(b.lost_bytes(), 2000);
        assert!(!b.get(3).is_lost());
        // A retransmitted non-lost segment counts twice, a lost one once.
        assert_eq!(b.in_flight(), 10_000 - 3000 - 2000 + 1000);
    }

    #[test]
    fn rto_forgets_sacks_and_marks_everything() {
        let mut b = board(4);
        b.apply_sack(&[blk(2000, 4000)]);
        b.mark_all_lost();
        assert_eq!(b.sacked_bytes(), 0);
        assert_eq!(b.in_flight(), 0);
        assert_eq!(b.next_pending(), Some(0));
    }
}
