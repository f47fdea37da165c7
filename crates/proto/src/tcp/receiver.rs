//! The receiving half of a one-way TCP connection: reassembly, delivery and ACKs.

use std::collections::VecDeque;

use super::autotune::{Autotune, Held as Buffered};
use super::config::{AckPolicy, TcpConfig};
use super::handshake::{self, SynTimer};
use super::quickack::QuickAck;
use super::sack::SackBlock;
use super::wire::{self, Flags, Segment, Timestamps, MAX_SACK_BLOCKS};
use super::{Connection, TsClock};
use crate::data::Data;
use crate::time::{Duration, Instant};

/// In-order stream bytes handed to the application.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// Where the bytes start in the stream.
    pub offset: u64,
    pub data: Data,
}

/// Data held above a hole.
#[derive(Clone, Debug)]
struct Held {
    start: u64,
    end: u64,
    data: Data,
}

/// A TCP receiver. Like the sender it keeps 64-bit stream offsets and
/// unwraps the 32-bit sequence numbers of arriving segments around `rcv_nxt`.
///
/// Driver contract: after `handle_segment` or `handle_timeout`, call
/// `poll_transmit` until `None` and `poll_delivery` until `None`; call
/// `handle_timeout` once `now >= poll_timeout()`.
#[derive(Debug)]
pub struct TcpReceiver {
    conn: Connection,
    config: TcpConfig,
    /// Where the connection is: listening for a SYN, its SYN-ACK out, or open.
    phase: Listening,
    syn_ack: SynTimer,
    /// The sequence number of the peer's stream offset 0: its ISN, plus one for the SYN.
    rcv_base: u32,
    /// Our own sequence number: the ISN, plus one once the SYN-ACK is out.
    snd_seq: u32,
    /// Where the peer's FIN sits in its stream, once seen.
    fin_at: Option<u64>,
    /// The FIN is in order and acknowledged: every ACK now carries our FIN too.
    fin_received: bool,
    /// The handshake's RTT (SYN-ACK to its ACK), for the `linux` delayed-ACK timer.
    handshake_rtt: Option<Duration>,
    quick: Option<QuickAck>,
    /// The peer's SYN offered window scaling, so our SYN-ACK answers it.
    peer_scales: bool,
    window_scale: u8,
    /// The window advertised without autotuning.
    window: u64,
    autotune: Option<Autotune>,
    delayed_ack: bool,
    delayed_ack_timeout: Duration,
    timestamps: bool,
    sack: bool,
    rcv_nxt: u64,
    /// Out-of-order data, sorted and disjoint.
    held: VecDeque<Held>,
    held_bytes: u64,
    /// Bytes delivered by the segment being handled: an ACK sent for it
    /// goes out before the application reads them.
    unread: u64,
    /// Blocks reported most recently first (RFC 2018 section 4).
    sack_history: [SackBlock; MAX_SACK_BLOCKS],
    sack_history_len: usize,
    /// In-order segments received and not yet acknowledged.
    unacked_segments: u32,
    delack_deadline: Option<Instant>,
    ts_clock: TsClock,
    /// RFC 7323 TS.Recent and Last.ACK.sent.
    ts_recent: Option<u32>,
    last_ack_sent: u64,
    acks: VecDeque<Segment>,
    deliveries: VecDeque<Delivery>,
    stats: ReceiverStats,
}

/// The receiver's side of the handshake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Listening {
    Listen,
    SynReceived,
    Established,
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
    pub fn new(config: &TcpConfig, conn: Connection) -> TcpReceiver {
        TcpReceiver {
            conn,
            config: config.clone(),
            phase: if config.handshake { Listening::Listen } else { Listening::Established },
            syn_ack: SynTimer::new(config),
            rcv_base: conn.remote_isn,
            snd_seq: conn.local_isn,
            fin_at: None,
            fin_received: false,
            handshake_rtt: None,
            quick: (config.ack_policy == AckPolicy::Linux).then(|| QuickAck::new(config.rcv_window.min(u32::MAX / 2))),
            peer_scales: false,
            window_scale: config.window_scale(),
            window: config.window_bytes().min((u16::MAX as u64) << config.window_scale()),
            autotune: config.rcv_autotune.then(|| {
                let truesize = config.rcv_truesize as u64;
                Autotune::new(
                    config.rcv_buffer as u64,
                    (config.rcv_window as u64 * truesize).min(config.rcv_buffer_max as u64),
                    truesize,
                    config.mss as u64,
                    config.window_scale(),
                    conn.ts_clock(),
                )
            }),
            delayed_ack: config.delayed_ack,
            delayed_ack_timeout: config.delayed_ack_timeout,
            timestamps: config.timestamps,
            sack: config.sack,
            rcv_nxt: 0,
            held: VecDeque::new(),
            held_bytes: 0,
            unread: 0,
            sack_history: [SackBlock::default(); MAX_SACK_BLOCKS],
            sack_history_len: 0,
            unacked_segments: 0,
            delack_deadline: None,
            ts_clock: conn.ts_clock(),
            ts_recent: None,
            last_ack_sent: 0,
            acks: VecDeque::new(),
            deliveries: VecDeque::new(),
            stats: ReceiverStats::default(),
        }
    }

    pub fn handle_segment(&mut self, now: Instant, seg: &Segment) {
        if self.config.handshake && seg.flags.contains(Flags::SYN) {
            return self.on_syn(now, seg);
        }
        match self.phase {
            Listening::Listen => return,
            Listening::SynReceived if seg.flags.contains(Flags::ACK) => {
                self.phase = Listening::Established;
                // `tcp_synack_rtt_meas`, then `tcp_ack_update_rtt`'s timestamp sample.
                let echo = seg.timestamp.filter(|_| self.timestamps).map(|t| t.echo);
                self.handshake_rtt = self.syn_ack.sample_echoed(now, echo, self.ts_clock);
                self.syn_ack.deadline = None;
                if let Some(a) = self.autotune.as_mut() {
                    a.on_established(now, self.rcv_nxt);
                }
            }
            _ => {}
        }
        // Without a handshake there is no teardown either (ns-2's agents):
        // a FIN bit is noise, as damaged bytes can set it.
        let fin = self.config.handshake && seg.flags.contains(Flags::FIN);
        if seg.is_empty() && !fin {
            return; // a pure ACK: a one-way receiver has nothing to learn from it
        }
        self.stats.segments_received += 1;
        // The offset within 2^31 of rcv_nxt; data from before the stream is old.
        let delta = seg.seq.wrapping_sub(self.rcv_base.wrapping_add(self.rcv_nxt as u32)) as i32 as i64;
        let Some(start) = self.rcv_nxt.checked_add_signed(delta) else {
            self.stats.duplicate_segments += 1;
            self.ack_now(now);
            return;
        };
        let end = start + seg.len() as u64;
        if fin {
            self.fin_at = Some(end);
            if seg.is_empty() {
                // A FIN alone: taken if in order, else answered as a duplicate.
                self.take_fin();
                self.ack_now(now);
                return;
            }
        }
        let right_edge = self.autotune.as_ref().map_or(self.rcv_nxt + self.window, Autotune::right_edge);
        if end > right_edge {
            // RFC 9293 section 3.10.7.4: unacceptable, answered with an ACK.
            self.stats.discarded_segments += 1;
            self.ack_now(now);
            return;
        }
        // RFC 7323 section 4.3: take TSval from the segment that covers
        // the left edge last acknowledged, so that a delayed ACK echoes
        // the earliest unacknowledged segment and an out-of-order one does not count.
        if let Some(ts) = seg.timestamp {
            if start <= self.last_ack_sent && self.ts_recent.is_none_or(|r| ts.value.wrapping_sub(r) as i32 >= 0) {
                self.ts_recent = Some(ts.value);
            }
        }
        if end <= self.rcv_nxt {
            self.stats.duplicate_segments += 1;
            // Linux: the sender resent what arrived, so our ACKs were lost or late.
            if let Some(q) = self.quick.as_mut() {
                q.enter();
            }
            self.ack_now(now);
            return;
        }
        let rto = self.rto();
        if let Some(q) = self.quick.as_mut() {
            q.on_data(now, rto);
        }
        if start <= self.rcv_nxt {
            let had_holes = !self.held.is_empty();
            let skip = (self.rcv_nxt - start) as usize;
            let before = self.rcv_nxt;
            let queued = self.deliveries.len();
            self.deliver(seg.data.slice(skip, seg.data.len()));
            self.pull_held();
            self.unread = self.rcv_nxt - before;
            let (len, echo) = (seg.len() as u64, seg.timestamp.map(|t| t.echo));
            self.tune(|a, rcv_nxt, buffered| a.on_data(now, len, echo, true, rcv_nxt, buffered));
            let quick = self.quick.is_some_and(|q| q.in_quick_mode());
            let fin = self.take_fin();
            let mut ack_after_read = false;
            if had_holes || !self.delayed_ack || quick || fin {
                // RFC 5681 section 4.2: ACK at once when a segment fills a hole.
                self.ack_now(now);
            } else {
                self.unacked_segments += 1;
                if self.unacked_segments >= 2 {
                    let mut waits = false;
                    self.tune(|a, _, buffered| waits = a.ack_waits_for_read(buffered));
                    if waits {
                        ack_after_read = true;
                    } else {
                        self.ack_now(now);
                    }
                } else if self.delack_deadline.is_none() {
                    let delay = match &self.quick {
                        Some(q) => q.delay(self.handshake_rtt, self.delayed_ack_timeout),
                        None => self.delayed_ack_timeout,
                    };
                    self.delack_deadline = Some(now + delay);
                }
            }
            // The application reads what was delivered, a segment at a
            // time: Linux measures after each one it copies, so when a
            // filled hole releases many, the first one read may take the
            // measure.
            for i in queued..self.deliveries.len() {
                let read = self.deliveries[i].offset + self.deliveries[i].data.len() as u64;
                self.unread = self.rcv_nxt - read;
                self.tune(|a, rcv_nxt, buffered| a.on_read(now, read, rcv_nxt, buffered));
            }
            if ack_after_read {
                self.ack_now(now);
            }
        } else {
            let fresh = self.hold(start, end, &seg.data);
            if fresh {
                self.report_block(start);
            } else {
                self.stats.duplicate_segments += 1;
            }
            let (len, echo) = (seg.len() as u64, seg.timestamp.map(|t| t.echo));
            self.tune(|a, rcv_nxt, buffered| a.on_data(now, len, echo, false, rcv_nxt, buffered));
            // Out of order: ACK at once, so the sender counts a duplicate.
            self.ack_now(now);
        }
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        if self.delack_deadline.is_some_and(|d| now >= d) {
            self.ack_now(now);
        }
        if self.phase == Listening::SynReceived && self.syn_ack.is_due(now) {
            if self.syn_ack.expire() {
                self.send_syn_ack(now);
            } else {
                self.phase = Listening::Listen;
            }
        }
    }

    pub fn poll_transmit(&mut self, _now: Instant) -> Option<Segment> {
        self.acks.pop_front()
    }

    pub fn poll_timeout(&self) -> Option<Instant> {
        match (self.delack_deadline, self.syn_ack.deadline.filter(|_| self.phase == Listening::SynReceived)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether the peer's FIN has arrived in order: its stream is complete.
    pub fn fin_received(&self) -> bool {
        self.fin_received
    }

    /// Whether the connection is open (at once, without a handshake).
    pub fn is_established(&self) -> bool {
        self.phase == Listening::Established
    }

    /// A SYN: settle the options and answer with a SYN-ACK, again for a repeated SYN.
    fn on_syn(&mut self, now: Instant, syn: &Segment) {
        if syn.flags.contains(Flags::ACK) {
            return;
        }
        if self.phase == Listening::Listen {
            let settled = handshake::settle(&self.config, syn);
            self.rcv_base = syn.seq.wrapping_add(1);
            self.sack = settled.sack;
            self.timestamps = settled.timestamps;
            self.window_scale = settled.window_scale;
            self.peer_scales = syn.syn_options.window_scale.is_some();
            self.window = self.window.min((u16::MAX as u64) << settled.window_scale);
            if let Some(a) = self.autotune.as_mut() {
                a.set_window_scale(settled.window_scale);
            }
            self.ts_recent = syn.timestamp.map(|t| t.value);
            self.phase = Listening::SynReceived;
        }
        if self.phase == Listening::SynReceived {
            self.send_syn_ack(now);
        }
    }

    fn send_syn_ack(&mut self, now: Instant) {
        self.syn_ack.sent(now);
        let mut s = Segment::new(self.conn.local_port, self.conn.remote_port);
        s.seq = self.conn.local_isn;
        s.ack = self.rcv_base;
        s.flags = Flags::SYN | Flags::ACK;
        // RFC 7323 2.2: the window of a SYN is never scaled.
        s.window = self.autotune.as_ref().map_or(self.window, Autotune::initial_window).min(u16::MAX as u64) as u16;
        let offer = handshake::offer(&self.config);
        s.syn_options.mss = offer.mss;
        s.syn_options.sack_permitted = self.sack;
        // RFC 7323 2.2: answer the option only if the SYN carried it.
        s.syn_options.window_scale = self.peer_scales.then_some(self.window_scale);
        if self.timestamps {
            s.timestamp = Some(Timestamps { value: self.ts_clock.read(now), echo: self.ts_recent.unwrap_or(0) });
        }
        self.snd_seq = self.conn.local_isn.wrapping_add(1);
        self.stats.acks_sent += 1;
        self.acks.push_back(s);
    }

    /// Takes the FIN if all before it has arrived; true if it was taken now.
    fn take_fin(&mut self) -> bool {
        if self.fin_received || self.fin_at != Some(self.rcv_nxt) {
            return false;
        }
        self.fin_received = true;
        true
    }

    /// The retransmission timeout this end would use, from the handshake's
    /// RTT (RFC 6298 2.2's first sample), for Linux's `ato` bounds.
    fn rto(&self) -> Duration {
        self.handshake_rtt.map_or(self.config.initial_rto, |r| (r + r.saturating_mul(2)).max(self.config.min_rto))
    }

    pub fn poll_delivery(&mut self) -> Option<Delivery> {
        self.deliveries.pop_front()
    }

    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }

    /// Bytes held out of order.
    pub fn held_bytes(&self) -> u64 {
        self.held_bytes
    }

    /// Hands the autotuned buffer, if any, to `f` with `rcv_nxt` and what
    /// takes memory in it.
    fn tune(&mut self, f: impl FnOnce(&mut Autotune, u64, Buffered)) {
        if let Some(a) = self.autotune.as_mut() {
            let end = self.held.back().map_or(self.rcv_nxt, |h| h.end);
            f(a, self.rcv_nxt, Buffered { bytes: self.held_bytes + self.unread, end });
        }
    }

    /// The receive buffer, when it is autotuned.
    pub fn autotune(&self) -> Option<&Autotune> {
        self.autotune.as_ref()
    }

    pub fn stats(&self) -> &ReceiverStats {
        &self.stats
    }

    /// Hands `data`, which starts at `rcv_nxt`, to the application.
    fn deliver(&mut self, data: Data) {
        let len = data.len() as u64;
        if len > 0 {
            self.deliveries.push_back(Delivery { offset: self.rcv_nxt, data });
            self.stats.bytes_delivered += len;
            self.rcv_nxt += len;
        }
    }

    fn pull_held(&mut self) {
        while let Some(h) = self.held.front() {
            if h.start > self.rcv_nxt {
                break;
            }
            let h = self.held.pop_front().expect("just seen");
            self.held_bytes -= h.end - h.start;
            if h.end > self.rcv_nxt {
                let skip = (self.rcv_nxt - h.start) as usize;
                self.deliver(h.data.slice(skip, h.data.len()));
            }
        }

        let rcv_nxt = self.rcv_nxt;
        self.retain_blocks(|b| b.start > rcv_nxt);
    }

    /// Stores the parts of `data` (at `[start, end)`) not already held; true if any were new.
    fn hold(&mut self, start: u64, end: u64, data: &Data) -> bool {
        let mut fresh = false;
        let mut cur = start;
        let mut i = self.held.partition_point(|h| h.end <= cur);
        while cur < end {
            let next = self.held.get(i).map(|h| (h.start, h.end));
            match next {
                Some((h_start, h_end)) if h_start <= cur => {
                    cur = h_end;
                    i += 1;
                }
                _ => {
                    let piece_end = next.map_or(end, |(h_start, _)| h_start.min(end));
                    let piece = if (cur, piece_end) == (start, end) {
                        data.clone()
                    } else {
                        data.slice((cur - start) as usize, (piece_end - start) as usize)
                    };
                    self.held.insert(i, Held { start: cur, end: piece_end, data: piece });
                    self.held_bytes += piece_end - cur;
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

    fn seq_of(&self, offset: u64) -> u32 {
        self.rcv_base.wrapping_add(offset as u32)
    }

    fn ack_now(&mut self, now: Instant) {
        let mut ack = Segment::new(self.conn.local_port, self.conn.remote_port);
        ack.seq = self.snd_seq;
        ack.ack = self.seq_of(self.rcv_nxt).wrapping_add(self.fin_received as u32);
        // Once the peer's FIN is in, we close too (this end has nothing to
        // send): every ACK carries our FIN, so a repeated FIN gets it again.
        ack.flags = if self.fin_received { Flags::FIN | Flags::ACK } else { Flags::ACK };
        if let Some(q) = self.quick.as_mut() {
            q.on_ack_sent();
        }
        let mut window = self.window;
        self.tune(|a, rcv_nxt, buffered| window = a.select_window(rcv_nxt, buffered));
        ack.window = (window >> self.window_scale) as u16;
        if self.timestamps {
            ack.timestamp = Some(Timestamps { value: self.ts_clock.read(now), echo: self.ts_recent.unwrap_or(0) });
        }
        if self.sack && !self.held.is_empty() {
            // RFC 2018 section 3: three blocks fit beside the timestamp option.
            let room = if self.timestamps { 3 } else { MAX_SACK_BLOCKS };
            let n = self.sack_history_len.min(room);
            for (wire, b) in ack.sack.iter_mut().zip(&self.sack_history[..n]) {
                *wire = wire::SackBlock { start: self.seq_of(b.start), end: self.seq_of(b.end) };
            }
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

    fn conn(isn: u32) -> Connection {
        Connection { local_port: 2, remote_port: 1, local_isn: 7, remote_isn: isn }
    }

    fn seg_at(isn: u32, i: u64) -> Segment {
        let mut s = Segment::new(1, 2);
        s.seq = isn.wrapping_add((i * 100) as u32);
        s.data = Data::Virtual { len: 100, offset: i * 100 };
        s
    }

    fn seg(i: u64) -> Segment {
        seg_at(0, i)
    }

    fn drain(r: &mut TcpReceiver) -> Vec<Segment> {
        std::iter::from_fn(|| r.poll_transmit(Instant::ZERO)).collect()
    }

    fn blocks(a: &Segment) -> Vec<(u32, u32)> {
        a.sack_blocks().iter().map(|b| (b.start, b.end)).collect()
    }

    #[test]
    fn reorders_delivers_once_and_sacks_newest_first() {
        let mut r = TcpReceiver::new(&cfg(), conn(0));
        let now = Instant::ZERO;
        r.handle_segment(now, &seg(0));
        r.handle_segment(now, &seg(2));
        r.handle_segment(now, &seg(5));
        r.handle_segment(now, &seg(3));
        let acks = drain(&mut r);
        assert_eq!(acks.len(), 4);
        assert!(acks
            .iter()
            .all(|a| a.ack == 100 && a.window == 1000 && a.seq == 7 && (a.src_port, a.dst_port) == (2, 1)));
        assert_eq!(blocks(&acks[3]), vec![(200, 400), (500, 600)]);
        r.handle_segment(now, &seg(1));
        let a = drain(&mut r);
        assert_eq!(a[0].ack, 400);
        assert_eq!(blocks(&a[0]), vec![(500, 600)]);
        r.handle_segment(now, &seg(2)); // duplicate
        assert_eq!(drain(&mut r).len(), 1);
        let d: Vec<_> = std::iter::from_fn(|| r.poll_delivery()).collect();
        assert_eq!(
            d.iter().map(|d| (d.offset, d.data.len())).collect::<Vec<_>>(),
            vec![(0, 100), (100, 100), (200, 100), (300, 100)]
        );
        assert_eq!(d[3].data, Data::Virtual { len: 100, offset: 300 });
        // Beyond rcv_nxt + window (400 + 1000): discarded.
        r.handle_segment(now, &seg(14));
        assert_eq!(r.stats().discarded_segments, 1);
    }

    #[test]
    fn an_autotuned_window_shrinks_by_what_is_held_but_never_pulls_its_edge_back() {
        // A largest buffer of 512 KB: a scale of 4, 16-byte units.
        let config = TcpConfig {
            rcv_autotune: true,
            rcv_window: 1000,
            rcv_buffer_max: 1 << 19,
            mss: 1000,
            ..TcpConfig::default()
        };
        let scale = config.window_scale();
        assert_eq!(scale, 4);
        let mut r = TcpReceiver::new(&config, conn(0));
        let full = |i: u64| {
            let mut s = Segment::new(1, 2);
            s.seq = (i * 1000) as u32;
            s.data = Data::Virtual { len: 1000, offset: i * 1000 };
            s
        };
        let edges = |r: &mut TcpReceiver| -> Vec<u64> {
            drain(r).iter().map(|a| a.ack as u64 + ((a.window as u64) << scale)).collect()
        };
        // The first window, half of 131072 bytes in whole segments, holds
        // its edge after the first segment sets the ratio (1000 * 256 / 2304
        // = 111) and the clamp with it (131072 * 111 / 256 = 56832).
        r.handle_segment(Instant::ZERO, &full(0));
        assert_eq!(edges(&mut r), vec![65_000]);
        // Past that edge, the window is the clamp less the segment the ACK
        // answers, which the application has not read when the ACK leaves:
        // (131072 - 2304) * 111 / 256 = 55833, in units of 16 bytes.
        for i in 1..70 {
            r.handle_segment(Instant::ZERO, &full(i));
        }
        assert_eq!(edges(&mut r).last(), Some(&(70_000 + 55_840)));
        // Ten segments held above a hole take 23040 bytes of buffer: the
        // free window, (131072 - 23040) * 111 / 256 = 46842, is less than
        // what is left of the window offered, and the edge stays.
        for i in 71..81 {
            r.handle_segment(Instant::ZERO, &full(i));
        }
        assert_eq!(edges(&mut r), vec![70_000 + 55_840; 10]);
    }

    #[test]
    fn a_window_held_back_from_shrinking_is_rounded_up_to_its_unit() {
        // Linux's scale for a 32 MB buffer is 10: a window that may not
        // shrink is offered as `ALIGN(cur_win, 1024)`, so with one
        // 1000-byte segment per ACK the edge moves on by the whole segment
        // each time, as the kernel's receiver did on the emulated chain
        // (65,536 bytes offered after each of its first segments).
        let config = TcpConfig { rcv_autotune: true, mss: 1000, ..TcpConfig::default() };
        let scale = config.window_scale();
        assert_eq!(scale, 10);
        let mut r = TcpReceiver::new(&config, conn(0));
        r.handle_segment(Instant::ZERO, &{
            let mut s = Segment::new(1, 2);
            s.data = Data::Virtual { len: 1000, offset: 0 };
            s
        });
        let ack = drain(&mut r).pop().unwrap();
        assert_eq!(ack.ack, 1000);
        assert_eq!((ack.window as u64) << scale, 64_512, "64,000 left of 65,000, rounded up to 1024");
    }

    #[test]
    fn the_echo_times_a_resent_syn_ack() {
        // A 1.006 s round trip: the SYN-ACK goes again after Linux's 1 s,
        // and the ACK echoes the first. Linux's server takes that sample
        // (its RTO, 3 s from it, decides when a pause in the data puts it
        // back in quick-ACK mode); Karn's rule alone would leave none.
        let config = TcpConfig { mss: 1000, ..TcpConfig::profile(crate::tcp::Profile::Linux) };
        let mut r =
            TcpReceiver::new(&config, Connection { local_port: 2, remote_port: 1, local_isn: 77, remote_isn: 9 });
        let mut syn = Segment::new(1, 2);
        syn.flags = Flags::SYN;
        syn.seq = 9;
        syn.timestamp = Some(Timestamps { value: 5, echo: 0 });
        r.handle_segment(Instant::ZERO, &syn);
        let first = drain(&mut r).pop().unwrap().timestamp.unwrap().value;
        let resent = Instant::from_secs_f64(1.0);
        assert_eq!(r.poll_timeout(), Some(resent));
        r.handle_timeout(resent);
        assert_eq!(drain(&mut r).len(), 1, "the SYN-ACK again");
        let mut ack = Segment::new(1, 2);
        ack.flags = Flags::ACK;
        ack.seq = 10;
        ack.ack = 78;
        ack.timestamp = Some(Timestamps { value: 6, echo: first });
        r.handle_segment(Instant::from_secs_f64(1.006), &ack);
        assert_eq!(r.handshake_rtt, Some(Duration::from_millis(1006)));
    }

    #[test]
    fn real_data_is_reassembled_across_the_wrap() {
        let isn = u32::MAX - 150;
        let mut r = TcpReceiver::new(&cfg(), conn(isn));
        let content: Vec<u8> = (0..400u32).map(|i| (i * 7) as u8).collect();
        let real = |i: u64| {
            let mut s = seg_at(isn, i);
            s.data = Data::Real(content[i as usize * 100..(i as usize + 1) * 100].to_vec());
            s
        };
        for i in [3, 1, 0, 2] {
            r.handle_segment(Instant::ZERO, &real(i));
        }
        let acks = drain(&mut r);
        assert_eq!(acks.last().unwrap().ack, isn.wrapping_add(400));
        // Newest block first: [100, 200) arrived after [300, 400).
        assert_eq!(
            blocks(&acks[1]),
            vec![(isn.wrapping_add(100), isn.wrapping_add(200)), (isn.wrapping_add(300), isn.wrapping_add(400))]
        );
        let mut got = vec![];
        while let Some(d) = r.poll_delivery() {
            assert_eq!(d.offset, got.len() as u64);
            got.extend_from_slice(d.data.bytes().unwrap());
        }
        assert_eq!(got, content);
    }

    #[test]
    fn delayed_ack_every_second_segment_or_on_the_timer() {
        let config = TcpConfig { delayed_ack: true, ..cfg() };
        let mut r = TcpReceiver::new(&config, conn(0));
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
        let mut r = TcpReceiver::new(&config, conn(0));
        let ts = |v| Some(Timestamps { value: v, echo: 0 });
        let mut s = seg(0);
        s.timestamp = ts(10);
        r.handle_segment(Instant(0), &s);
        let mut s = seg(2);
        s.timestamp = ts(30);
        r.handle_segment(Instant(0), &s);
        let acks = drain(&mut r);
        // The out-of-order segment does not update TS.Recent.
        assert_eq!(acks[1].timestamp.unwrap().echo, 10);
        let mut s = seg(1);
        s.timestamp = ts(50);
        r.handle_segment(Instant(0), &s);
        assert_eq!(drain(&mut r)[0].timestamp.unwrap().echo, 50);
    }

    #[test]
    fn at_most_four_blocks_or_three_beside_timestamps() {
        for (timestamps, room) in [(false, 4), (true, 3)] {
            let mut r = TcpReceiver::new(&TcpConfig { timestamps, ..cfg() }, conn(0));
            for i in [1, 3, 5, 7, 9] {
                r.handle_segment(Instant::ZERO, &seg(i));
            }
            let last = drain(&mut r).pop().unwrap();
            let starts: Vec<u32> = last.sack_blocks().iter().map(|b| b.start).collect();
            let want: Vec<u32> = [900, 700, 500, 300][..room].to_vec();
            assert_eq!(starts, want);
            // Filling 4 merges [300, 400) and [500, 600) into the first block.
            r.handle_segment(Instant::ZERO, &seg(4));
            let a = drain(&mut r).pop().unwrap();
            assert_eq!(blocks(&a)[..2], [(300, 600), (900, 1000)]);
        }
    }
}
