//! The receiving half of a one-way TCP connection: reassembly, delivery and ACKs.

use std::collections::VecDeque;

use super::config::TcpConfig;
use super::segment::{SackBlock, Segment, Timestamps, MAX_SACK_BLOCKS};
use crate::time::{Duration, Instant};

/// In-order bytes handed to the application.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivery {
    pub bytes: u64,
    /// When the sender first transmitted these bytes: end-to-end delay is
    /// the delivery time minus this.
    pub first_sent: Instant,
}

/// Data held above a hole.
#[derive(Clone, Copy, Debug)]
struct Held {
    start: u64,
    end: u64,
    first_sent: Instant,
}

/// A TCP receiver.
///
/// Driver contract: after `handle_segment` or `handle_timeout`, call
/// `poll_transmit` until `None` and `poll_delivery` until `None`; call
/// `handle_timeout` once `now >= poll_timeout()`.
#[derive(Debug)]
pub struct TcpReceiver {
    window: u64,
    delayed_ack: bool,
    delayed_ack_timeout: Duration,
    timestamps: bool,
    sack: bool,
    rcv_nxt: u64,
    /// Out-of-order data, sorted and disjoint.
    held: VecDeque<Held>,
    /// Blocks reported most recently first (RFC 2018 section 4).
    sack_history: [SackBlock; MAX_SACK_BLOCKS],
    sack_history_len: usize,
    /// In-order segments received and not yet acknowledged.
    unacked_segments: u32,
    delack_deadline: Option<Instant>,
    /// RFC 7323 TS.Recent and Last.ACK.sent.
    ts_recent: Option<Instant>,
    last_ack_sent: u64,
    acks: VecDeque<Segment>,
    deliveries: VecDeque<Delivery>,
    stats: ReceiverStats,
}

/// Counters for probes and tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReceiverStats {
    pub segments_received: u64,
    /// Segments all of whose bytes had been received before.
    pub duplicate_segments: u64,
    /// Segments beyond the receive window, dropped.
    pub discarded_segments: u64,
    pub acks_sent: u64,
    pub bytes_delivered: u64,
}

impl TcpReceiver {
    pub fn new(config: &TcpConfig) -> TcpReceiver {
        let mss = config.mss.max(1) as u64;
        TcpReceiver {
            window: (config.rcv_window as u64 * mss).min(u32::MAX as u64),
            delayed_ack: config.delayed_ack,
            delayed_ack_timeout: config.delayed_ack_timeout,
            timestamps: config.timestamps,
            sack: config.sack,
            rcv_nxt: 0,
            held: VecDeque::new(),
            sack_history: [SackBlock::default(); MAX_SACK_BLOCKS],
            sack_history_len: 0,
            unacked_segments: 0,
            delack_deadline: None,
            ts_recent: None,
            last_ack_sent: 0,
            acks: VecDeque::new(),
            deliveries: VecDeque::new(),
            stats: ReceiverStats::default(),
        }
    }

    pub fn handle_segment(&mut self, now: Instant, seg: &Segment) {
        if seg.len == 0 {
            return; // no data; a one-way receiver has nothing to learn from a pure ACK
        }
        self.stats.segments_received += 1;
        let (start, end) = (seg.seq, seg.end());
        if end > self.rcv_nxt + self.window {
            // RFC 9293 section 3.10.7.4: unacceptable, answered with an ACK.
            self.stats.discarded_segments += 1;
            self.ack_now(now);
            return;
        }
        // RFC 7323 section 4.3: take TSval from the segment that covers
        // the left edge last acknowledged, so that a delayed ACK echoes
        // the earliest unacknowledged segment and an out-of-order one does not count.
        if let Some(ts) = seg.timestamp {
            if start <= self.last_ack_sent && self.ts_recent.is_none_or(|r| ts.value >= r) {
                self.ts_recent = Some(ts.value);
            }
        }
        if end <= self.rcv_nxt {
            self.stats.duplicate_segments += 1;
            self.ack_now(now);
            return;
        }
        if start <= self.rcv_nxt {
            let had_holes = !self.held.is_empty();
            self.deliver(self.rcv_nxt, end, seg.first_sent);
            self.pull_held();
            if had_holes || !self.delayed_ack {
                // RFC 5681 section 4.2: ACK at once when a segment fills a hole.
                self.ack_now(now);
            } else {
                self.unacked_segments += 1;
                if self.unacked_segments >= 2 {
                    self.ack_now(now);
                } else if self.delack_deadline.is_none() {
                    self.delack_deadline = Some(now + self.delayed_ack_timeout);
                }
            }
        } else {
            let fresh = self.hold(start, end, seg.first_sent);
            if fresh {
                self.report_block(start);
            } else {
                self.stats.duplicate_segments += 1;
            }
            // Out of order: ACK at once, so the sender counts a duplicate.
            self.ack_now(now);
        }
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        if self.delack_deadline.is_some_and(|d| now >= d) {
            self.ack_now(now);
        }
    }

    pub fn poll_transmit(&mut self, _now: Instant) -> Option<Segment> {
        self.acks.pop_front()
    }

    pub fn poll_timeout(&self) -> Option<Instant> {
        self.delack_deadline
    }

    pub fn poll_delivery(&mut self) -> Option<Delivery> {
        self.deliveries.pop_front()
    }

    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }

    /// Bytes held out of order.
    pub fn held_bytes(&self) -> u64 {
        self.held.iter().map(|h| h.end - h.start).sum()
    }

    pub fn stats(&self) -> &ReceiverStats {
        &self.stats
    }

    fn deliver(&mut self, from: u64, end: u64, first_sent: Instant) {
        if end > from {
            self.deliveries.push_back(Delivery { bytes: end - from, first_sent });
            self.stats.bytes_delivered += end - from;
            self.rcv_nxt = end;
        }
    }

    fn pull_held(&mut self) {
        while let Some(&h) = self.held.front() {
            if h.start > self.rcv_nxt {
                break;
            }
            self.held.pop_front();
            self.deliver(self.rcv_nxt.max(h.start), h.end.max(self.rcv_nxt), h.first_sent);
        }
        let rcv_nxt = self.rcv_nxt;
        self.retain_blocks(|b| b.start > rcv_nxt);
    }

    /// Stores the parts of `[start, end)` not already held; true if any were new.
    fn hold(&mut self, start: u64, end: u64, first_sent: Instant) -> bool {
        let mut fresh = false;
        let mut cur = start;
        let mut i = self.held.partition_point(|h| h.end <= cur);
        while cur < end {
            let next = self.held.get(i).copied();
            match next {
                Some(h) if h.start <= cur => {
                    cur = h.end;
                    i += 1;
                }
                _ => {
                    let piece_end = next.map_or(end, |h| h.start.min(end));
                    self.held.insert(i, Held { start: cur, end: piece_end, first_sent });
                    fresh = true;
                    cur = piece_end;
                    i += 1;
                }
            }
        }
        fresh
    }

    /// The contiguous run of held data around `seq`.
    fn run_around(&self, seq: u64) -> SackBlock {
        let i = self.held.partition_point(|h| h.end <= seq);
        let (mut lo, mut hi) = (i, i);
        while lo > 0 && self.held[lo - 1].end == self.held[lo].start {
            lo -= 1;
        }
        while hi + 1 < self.held.len() && self.held[hi].end == self.held[hi + 1].start {
            hi += 1;
        }
        SackBlock { start: self.held[lo].start, end: self.held[hi].end }
    }

    /// RFC 2018 section 4: the block holding the newest segment first, then
    /// the blocks reported before, newest first, without repeats.
    fn report_block(&mut self, seq: u64) {
        if !self.sack {
            return;
        }
        let first = self.run_around(seq);
        let mut next = [SackBlock::default(); MAX_SACK_BLOCKS];
        next[0] = first;
        let mut n = 1;
        for b in &self.sack_history[..self.sack_history_len] {
            if n == MAX_SACK_BLOCKS {
                break;
            }
            let overlaps = b.start <= first.end && first.start <= b.end;
            if !overlaps {
                next[n] = *b;
                n += 1;
            }
        }
        self.sack_history = next;
        self.sack_history_len = n;
    }

    fn retain_blocks(&mut self, keep: impl Fn(&SackBlock) -> bool) {
        let mut n = 0;
        for i in 0..self.sack_history_len {
            let b = self.sack_history[i];
            if keep(&b) {
                self.sack_history[n] = b;
                n += 1;
            }
        }
        self.sack_history_len = n;
    }

    fn ack_now(&mut self, now: Instant) {
        let mut ack = Segment::ack(self.rcv_nxt, self.window as u32);
        if self.timestamps {
            ack.timestamp = Some(Timestamps { value: now, echo: self.ts_recent.unwrap_or(Instant::ZERO) });
        }
        if self.sack && !self.held.is_empty() {
            // RFC 2018 section 3: three blocks fit beside the timestamp option.
            let room = if self.timestamps { 3 } else { MAX_SACK_BLOCKS };
            let n = self.sack_history_len.min(room);
            ack.sack[..n].copy_from_slice(&self.sack_history[..n]);
            ack.sack_len = n as u8;
        }
        self.last_ack_sent = self.rcv_nxt;
        self.unacked_segments = 0;
        self.delack_deadline = None;
        self.stats.acks_sent += 1;
        self.acks.push_back(ack);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> TcpConfig {
        TcpConfig { mss: 100, rcv_window: 10, ..TcpConfig::default() }
    }

    fn seg(i: u64) -> Segment {
        Segment::data(i * 100, 100, Instant(i))
    }

    fn drain(r: &mut TcpReceiver) -> Vec<Segment> {
        std::iter::from_fn(|| r.poll_transmit(Instant::ZERO)).collect()
    }

    #[test]
    fn reorders_delivers_once_and_sacks_newest_first() {
        let mut r = TcpReceiver::new(&cfg());
        let now = Instant::ZERO;
        r.handle_segment(now, &seg(0));
        r.handle_segment(now, &seg(2));
        r.handle_segment(now, &seg(5));
        r.handle_segment(now, &seg(3));
        let acks = drain(&mut r);
        assert_eq!(acks.len(), 4);
        assert!(acks.iter().all(|a| a.ack == 100 && a.window == 1000));
        let last = acks[3].sack_blocks();
        assert_eq!(last, &[SackBlock { start: 200, end: 400 }, SackBlock { start: 500, end: 600 }]);
        r.handle_segment(now, &seg(1));
        let a = drain(&mut r);
        assert_eq!(a[0].ack, 400);
        assert_eq!(a[0].sack_blocks(), &[SackBlock { start: 500, end: 600 }]);
        r.handle_segment(now, &seg(2)); // duplicate
        assert_eq!(drain(&mut r).len(), 1);
        let d: Vec<_> = std::iter::from_fn(|| r.poll_delivery()).collect();
        assert_eq!(d.iter().map(|d| d.bytes).sum::<u64>(), 400);
        assert_eq!(d.iter().map(|d| d.first_sent.0).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
        // Beyond rcv_nxt + window (400 + 1000): discarded.
        r.handle_segment(now, &seg(14));
        assert_eq!(r.stats().discarded_segments, 1);
    }

    #[test]
    fn delayed_ack_every_second_segment_or_on_the_timer() {
        let config = TcpConfig { delayed_ack: true, ..cfg() };
        let mut r = TcpReceiver::new(&config);
        r.handle_segment(Instant(0), &seg(0));
        assert!(drain(&mut r).is_empty());
        assert_eq!(r.poll_timeout(), Some(Instant(0) + config.delayed_ack_timeout));
        r.handle_segment(Instant(1), &seg(1));
        assert_eq!(drain(&mut r).len(), 1);
        assert_eq!(r.poll_timeout(), None);
        r.handle_segment(Instant(2), &seg(2));
        r.handle_timeout(Instant(2) + config.delayed_ack_timeout);
        assert_eq!(drain(&mut r)[0].ack, 300);
    }

    #[test]
    fn timestamps_echo_the_segment_at_the_left_edge() {
        let config = TcpConfig { timestamps: true, ..cfg() };
        let mut r = TcpReceiver::new(&config);
        let ts = |v| Some(Timestamps { value: Instant(v), echo: Instant::ZERO });
        let mut s = seg(0);
        s.timestamp = ts(10);
        r.handle_segment(Instant(0), &s);
        let mut s = seg(2);
        s.timestamp = ts(30);
        r.handle_segment(Instant(0), &s);
        let acks = drain(&mut r);
        // The out-of-order segment does not update TS.Recent.
        assert_eq!(acks[1].timestamp.unwrap().echo, Instant(10));
        let mut s = seg(1);
        s.timestamp = ts(50);
        r.handle_segment(Instant(0), &s);
        assert_eq!(drain(&mut r)[0].timestamp.unwrap().echo, Instant(50));
    }

    #[test]
    fn at_most_four_blocks_or_three_beside_timestamps() {
        for (timestamps, room) in [(false, 4), (true, 3)] {
            let mut r = TcpReceiver::new(&TcpConfig { timestamps, ..cfg() });
            for i in [1, 3, 5, 7, 9] {
                r.handle_segment(Instant::ZERO, &seg(i));
            }
            let last = drain(&mut r).pop().unwrap();
            let starts: Vec<u64> = last.sack_blocks().iter().map(|b| b.start).collect();
            let want: Vec<u64> = [900, 700, 500, 300][..room].to_vec();
            assert_eq!(starts, want);
            // Filling 4 merges [300, 400) and [500, 600) into the first block.
            r.handle_segment(Instant::ZERO, &seg(4));
            let a = drain(&mut r).pop().unwrap();
            assert_eq!(a.sack_blocks()[0], SackBlock { start: 300, end: 600 });
            assert_eq!(a.sack_blocks()[1], SackBlock { start: 900, end: 1000 });
        }
    }
}
