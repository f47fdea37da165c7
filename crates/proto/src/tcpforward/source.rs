//! TCP-Forward's sender (seed 004 section IV.A and IV.C): the coding
//! buffer, the sliding coding window, credits, the translated ACK, the
//! elapsed-time trigger of eq. (4) and the adaptive redundancy.

use super::wire::{self, Ack, Coded, Header, Symbol, MAX_WINDOW};
use super::{mark, Budget, Rtt, TcpForwardParams, Trigger};
use crate::data::Data;
use crate::marks::FlowMarks;
use crate::node::EndLayer;
use crate::packet::{FlowKey, Packet, Payload};
use crate::tcp::{self, Flags, Segment, TcpConfig, Timestamps};
use crate::time::{Duration, Instant};
use ncmesh_codec::fountain::{self, Fountain};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// ESIs tried for a symbol that meets the window's rules before the rules
/// give way: at k = 16 a degree-one symbol turns up one time in eight.
const SEARCH: u32 = 4096;

/// One symbol's worth of credit.
pub const CREDIT: u64 = 1_000_000;

/// A segment in the coding buffer.
#[derive(Debug)]
struct Entry {
    segment: Segment,
    /// When TCP handed it over.
    pushed: Instant,
    /// Its coded form (length, TCP header, data, zeros) with real payloads.
    symbol: Vec<u8>,
    acked: bool,
    /// Since when it has been in a coding window (reset by a retransmission
    /// round): ElapsedTime_p of eq. (4) counts from here.
    entered: Option<Instant>,
    /// Its Diff passed the threshold and no retransmission round has answered yet.
    timed_out: bool,
    /// It was in a retransmission round: its elapsed time no longer says
    /// how long decoding takes (Karn's rule, for min ElapsedTime).
    retransmitted: bool,
}

/// The window being coded: the code `(k, seed)` over the segments from `start`.
#[derive(Debug)]
struct Round {
    start: u64,
    k: u16,
    seed: u64,
    retransmission: bool,
    next_esi: u32,
    sent: u32,
    budget: u32,
    /// Whether some symbol sent so far covers each window member.
    covered: Vec<bool>,
    /// The members no earlier window coded: the receiver is surest to lack them.
    fresh: Vec<bool>,
    /// The members, for virtual symbols to stand for.
    members: Option<Arc<[Segment]>>,
}

/// The coding layer under the TCP sender.
#[derive(Debug)]
pub struct ForwardSource {
    flow: FlowKey,
    fountain: Arc<dyn Fountain>,
    params: TcpForwardParams,
    mss: u32,
    timestamps: bool,
    /// TCP's timestamp clock less this layer's clock, both in microseconds:
    /// a symbol carries TCP's time, so that the echo the sink returns with
    /// the `symbol` round trip is one TCP can subtract from its own clock.
    /// Each end's clock starts at an offset of its own (RFC 7323 section
    /// 5.4), learnt here from the TSval of what TCP sends.
    ts_offset: u32,
    window_scale: u8,
    real_payloads: bool,
    symbol_bytes: usize,
    marks: FlowMarks,
    /// The coding buffer: segments from stream index `base`. Acknowledged
    /// ones leave when they reach the front and no window combines them.
    buffer: VecDeque<Entry>,
    base: u64,
    round: Option<Round>,
    /// Where the next window starts once the current one slides.
    next_start: u64,
    /// The next ESI of each code a round has used, so that a later round
    /// of the same code sends new symbols.
    next_esi: BTreeMap<(u64, u16), u32>,
    /// Credits in millionths of a symbol, so that they add up exactly.
    credit: u64,
    /// The sequence number after the last byte TCP handed over.
    stream_end: Option<u32>,
    /// Segments acknowledged so far, and the TCP sequence number their
    /// translated ACKs have reached: one segment per acknowledged one.
    translated: u64,
    translated_end: u32,
    /// min ElapsedTime_i of eq. (4): the shortest time a segment that was
    /// never retransmitted took from entering a window to its acknowledgement.
    min_elapsed: Option<Duration>,
    next_deadline: Option<Instant>,
    /// Since when the next window has been waiting to fill.
    waiting_since: Option<Instant>,
    to_network: VecDeque<Packet>,
    to_transport: VecDeque<Packet>,
    /// N_segments and N_timeout of the adaptive redundancy.
    pub segments_coded: u64,
    pub timeouts: u64,
    /// Credits earned (R per segment TCP sent, in millionths of a symbol)
    /// and the symbols they released.
    pub credits_earned: u64,
    pub symbols_sent: u64,
    /// Symbols of retransmission rounds, sent outside the credits.
    pub retransmission_symbols: u64,
    pub retransmission_rounds: u64,
    /// TCP retransmissions of segments already in the coding buffer, absorbed.
    pub absorbed: u64,
}

impl ForwardSource {
    pub fn new(
        params: &TcpForwardParams,
        tcp: &TcpConfig,
        flow: FlowKey,
        real_payloads: bool,
        marks: FlowMarks,
    ) -> ForwardSource {
        ForwardSource {
            flow,
            fountain: params.fountain(),
            params: params.clone(),
            mss: tcp.mss,
            timestamps: tcp.timestamps,
            ts_offset: 0,
            window_scale: tcp.window_scale(),
            real_payloads,
            symbol_bytes: tcp::wire::coded_symbol_bytes(tcp),
            marks,
            buffer: VecDeque::new(),
            base: 0,
            round: None,
            next_start: 0,
            next_esi: BTreeMap::new(),
            credit: 0,
            stream_end: None,
            translated: 0,
            translated_end: 0,
            min_elapsed: None,
            next_deadline: None,
            waiting_since: None,
            to_network: VecDeque::new(),
            to_transport: VecDeque::new(),
            segments_coded: 0,
            timeouts: 0,
            credits_earned: 0,
            symbols_sent: 0,
            retransmission_symbols: 0,
            retransmission_rounds: 0,
            absorbed: 0,
        }
    }

    /// The redundancy R = N_segments / (N_segments - N_timeout), within its bounds.
    pub fn redundancy(&self) -> f64 {
        let (lo, hi) = (self.params.min_redundancy, self.params.max_redundancy);
        if self.timeouts >= self.segments_coded {
            return if self.segments_coded == 0 { lo } else { hi };
        }
        (self.segments_coded as f64 / (self.segments_coded - self.timeouts) as f64).clamp(lo, hi)
    }

    /// The stream index after the last segment TCP handed over.
    fn pushed(&self) -> u64 {
        self.base + self.buffer.len() as u64
    }

    /// The oldest segment the receiver has not acknowledged.
    fn first_unacked(&self) -> u64 {
        self.base + self.buffer.iter().position(|e| !e.acked).unwrap_or(self.buffer.len()) as u64
    }

    fn entry(&self, index: u64) -> Option<&Entry> {
        index.checked_sub(self.base).and_then(|i| self.buffer.get(i as usize))
    }

    fn is_acked(&self, index: u64) -> bool {
        self.entry(index).is_none_or(|e| e.acked)
    }

    /// A new segment from TCP joins the coding buffer and earns R credits.
    fn take_segment(&mut self, now: Instant, segment: &Segment) {
        let mut symbol = Vec::new();
        if self.real_payloads {
            symbol = vec![0; self.symbol_bytes];
            if !tcp::wire::encode_segment(segment, self.flow.src, self.flow.dst, &mut symbol) {
                return; // longer than a symbol: TCP's MSS and the layer disagree
            }
        }
        // The buffer keeps a segment's bytes in `symbol`; the segment itself only says how many.
        let data = Data::Virtual { len: segment.len(), offset: 0 };
        let segment = if self.real_payloads { Segment { data, ..segment.clone() } } else { segment.clone() };
        if self.stream_end.is_none() {
            self.translated_end = segment.seq;
        }
        self.stream_end = Some(segment.end());
        self.buffer.push_back(Entry {
            segment,
            pushed: now,
            symbol,
            acked: false,
            entered: None,
            timed_out: false,
            retransmitted: false,
        });
        self.earn();
    }

    /// R credits for a segment TCP pushed.
    fn earn(&mut self) {
        let r = self.redundancy();
        let r = (r * CREDIT as f64).round() as u64;
        self.credit += r;
        self.credits_earned += r;
    }

    /// Starts the next window if the current one is done; false if no
    /// segment is there to code.
    fn ensure_round(&mut self, now: Instant) -> bool {
        if let Some(r) = &self.round {
            let all_acked = (r.start..r.start + r.k as u64).all(|i| self.is_acked(i));
            if r.sent < r.budget && !all_acked {
                return true;
            }
            // Seed 004 slides the window by floor(N/2); one segment at least, or a window of one would never move.
            self.next_start = r.start + (r.k as u64 / 2).max(1);
            self.end_round();
        }
        let mut start = self.next_start.max(self.base);
        while start < self.pushed() && self.is_acked(start) {
            start += 1;
        }
        self.next_start = start;
        let k = (self.pushed() - start).min(self.params.window as u64) as u16;
        if k == 0 {
            return false;
        }
        let slide = (k as u64 / 2).max(1) as f64;
        let budget = match self.params.budget {
            Budget::Slide => slide * self.redundancy(),
            Budget::Window => k as f64 * self.redundancy(),
        };
        let budget = budget.ceil() as u32;
        // A window waits for N segments, or as long as `fill` lets the
        // oldest of them wait: TCP may have no more to give until some are decoded.
        if (k as u32) < self.params.window {
            let since = *self.waiting_since.get_or_insert(self.buffer[(start - self.base) as usize].pushed);
            if now < since + self.fill_time() {
                return false;
            }
        }
        self.waiting_since = None;
        self.begin_round(now, start, k, budget, false);
        true
    }

    /// How long a window may wait to fill: `fill` times min ElapsedTime.
    fn fill_time(&self) -> Duration {
        Duration::from_secs_f64(self.min_elapsed().as_secs_f64() * self.params.fill)
    }

    fn min_elapsed(&self) -> Duration {
        self.min_elapsed.unwrap_or(Duration::from_secs_f64(self.params.initial_elapsed))
    }

    fn begin_round(&mut self, now: Instant, start: u64, k: u16, budget: u32, retransmission: bool) {
        let mut fresh = vec![false; k as usize];
        for i in start..start + k as u64 {
            let e = &mut self.buffer[(i - self.base) as usize];
            if e.entered.is_none() {
                fresh[(i - start) as usize] = true;
                self.segments_coded += 1;
                self.marks.note(mark::ENCODED, i, now);
            }
            if e.entered.is_none() {
                e.entered = Some(now);
            }
        }
        if !retransmission {
            self.marks.note(mark::WINDOW, start, now);
        }
        let members = (!self.real_payloads).then(|| {
            self.buffer
                .range((start - self.base) as usize..(start - self.base) as usize + k as usize)
                .map(|e| e.segment.clone())
                .collect()
        });
        self.round = Some(Round {
            start,
            k,
            seed: wire::code_seed(start, k),
            retransmission,
            next_esi: self.next_esi.get(&(start, k)).copied().unwrap_or(0),
            sent: 0,
            budget,
            covered: vec![false; k as usize],
            fresh,
            members,
        });
    }

    fn end_round(&mut self) {
        if let Some(r) = self.round.take() {
            self.next_esi.insert((r.start, r.k), r.next_esi);
        }
    }

    /// The next symbol of the current round, chosen so that the window's
    /// first symbol has degree one (on a segment new to this window, if it
    /// has one), every symbol covers a segment not yet acknowledged, and
    /// the round's last symbols cover the members no symbol has covered
    /// yet (seed 004's two guarantees).
    fn next_symbol(&mut self, now: Instant) -> Packet {
        let r = self.round.as_ref().expect("a round is open");
        let (start, k, seed) = (r.start, r.k as usize, r.seed);
        let is_open = |i: u32| !self.is_acked(start + i as u64);
        let uncovered = (0..k as u32).filter(|&i| !r.covered[i as usize] && is_open(i)).count() as u32;
        let must_cover = uncovered >= r.budget.saturating_sub(r.sent);
        let any_fresh = r.fresh.iter().any(|&f| f);
        let (mut list, mut chosen, mut fallback) = (Vec::new(), None, None);
        for esi in r.next_esi..r.next_esi.saturating_add(SEARCH) {
            self.fountain.sources(k, seed, esi, &mut list);
            if !list.iter().any(|&i| is_open(i)) {
                continue;
            }
            fallback.get_or_insert(esi);
            let first = r.sent == 0 && (list.len() != 1 || (any_fresh && !r.fresh[list[0] as usize]));
            let covers_new = list.iter().any(|&i| !r.covered[i as usize] && is_open(i));
            if !first && (!must_cover || covers_new) {
                chosen = Some(esi);
                break;
            }
        }
        let esi = chosen.or(fallback).unwrap_or(r.next_esi);
        self.fountain.sources(k, seed, esi, &mut list);
        let symbol = if self.real_payloads {
            let mut payload = vec![0; self.symbol_bytes];
            let first = (start - self.base) as usize;
            fountain::combine(&list, |i| self.buffer.get(first + i).map(|e| &e.symbol), &mut payload);
            Symbol::Real(payload)
        } else {
            Symbol::Virtual { len: self.symbol_bytes, members: r.members.clone().expect("virtual rounds keep members") }
        };
        let header = Header {
            src_port: self.flow.src_port,
            dst_port: self.flow.dst_port,
            retransmission: r.retransmission,
            k: k as u16,
            esi,
            start,
            // A window may start on a segment decoded since it was formed;
            // the sink may forget below whichever comes first.
            acked_below: self.first_unacked().min(start),
            timestamp: tcp::micros(now).wrapping_add(self.ts_offset),
        };
        let coded = Coded { header, symbol };
        let r = self.round.as_mut().expect("a round is open");
        list.iter().for_each(|&i| r.covered[i as usize] = true);
        r.next_esi = esi.saturating_add(1);
        r.sent += 1;
        Packet::new(self.flow.src, self.flow.dst, Payload::Other(Box::new(coded)))
    }

    /// Spends whole credits on symbols of the current window. The window
    /// slides when it is done even without a credit, so that the segments
    /// it takes in start their ElapsedTime.
    fn release(&mut self, now: Instant) {
        while self.ensure_round(now) && self.credit >= CREDIT {
            let p = self.next_symbol(now);
            self.to_network.push_back(p);
            self.credit -= CREDIT;
            self.symbols_sent += 1;
        }
    }

    /// How long a segment of `len` bytes may stay in the window: Diff_p of
    /// eq. (4) exceeds the Timeout fraction `theta` of the expected rate
    /// W / min_elapsed once ElapsedTime_p passes this.
    fn patience(&self, len: u32) -> Duration {
        let min = self.min_elapsed();
        let theta = self.params.timeout;
        let share = match self.params.trigger {
            // W/min - W/e > theta W/min  <=>  e > min / (1 - theta)
            Trigger::Window => 1.0,
            // W/min - s/e > theta W/min  <=>  e > (s/W) min / (1 - theta)
            Trigger::Segment => len.max(1) as f64 / (self.params.window as f64 * self.mss as f64),
        };
        Duration::from_secs_f64(min.as_secs_f64() * share / (1.0 - theta))
    }

    fn deadline(&self, e: &Entry) -> Option<Instant> {
        (!e.acked && !e.timed_out).then_some(e.entered?).map(|at| at + self.patience(e.segment.len()))
    }

    fn refresh_deadline(&mut self) {
        let fill = self.waiting_since.map(|since| since + self.fill_time());
        self.next_deadline = self.buffer.iter().filter_map(|e| self.deadline(e)).chain(fill).min();
    }

    /// Eq. (4) fired: a round of symbols over the unacknowledged segments
    /// behind the window (and the window up to the late segment, if it is
    /// there), sent at once, outside the credits.
    fn retransmit(&mut self, now: Instant, last_late: u64) {
        let window_start = self.round.as_ref().map_or(self.next_start, |r| r.start);
        let end = window_start.max(last_late + 1).min(self.pushed());
        let from = self.first_unacked();
        let len = (end - from).min(MAX_WINDOW as u64) as u16;
        let open = (from..from + len as u64).filter(|&i| !self.is_acked(i)).count();
        if open == 0 {
            return;
        }
        let budget = (open as f64 * self.redundancy()).ceil() as u32;
        let interrupted = self.round.take();
        self.begin_round(now, from, len, budget, true);
        for _ in 0..budget {
            let p = self.next_symbol(now);
            self.to_network.push_back(p);
        }
        self.end_round();
        self.round = interrupted;
        self.retransmission_symbols += budget as u64;
        self.retransmission_rounds += 1;
        // The round answers every late segment, and the others it covered
        // start a new ElapsedTime with it.
        for (i, e) in (self.base..).zip(self.buffer.iter_mut()).filter(|(_, e)| !e.acked) {
            if i < from + len as u64 || e.timed_out {
                e.entered = Some(now);
                e.timed_out = false;
                e.retransmitted = true;
            }
        }
    }

    /// The sink decoded what `ack` says: drop it from the buffer, and tell
    /// TCP one segment acknowledged per segment newly decoded.
    fn acknowledge(&mut self, now: Instant, ack: &Ack) {
        let mut newly = 0u64;
        let mut segment_echo = None;
        for (i, e) in (self.base..).zip(self.buffer.iter_mut()) {
            if e.acked || !ack.covers(i) {
                continue;
            }
            e.acked = true;
            newly += 1;
            if let (false, Some(at)) = (e.retransmitted, e.entered) {
                let elapsed = now - at;
                self.min_elapsed = Some(self.min_elapsed.map_or(elapsed, |m| m.min(elapsed)));
            }
            if segment_echo.is_none() || i == ack.decoded {
                segment_echo = e.segment.timestamp.map(|t| t.value);
            }
        }
        if newly == 0 {
            return; // nothing new: TCP sees no duplicate ACK
        }
        for _ in 0..newly {
            self.translated_end = self.buffer[(self.translated - self.base) as usize].segment.end();
            self.translated += 1;
        }
        // Acknowledged segments leave the buffer from the front, unless the
        // window being sent still combines them.
        while self.buffer.front().is_some_and(|e| e.acked) && self.round.as_ref().is_none_or(|r| self.base < r.start) {
            self.buffer.pop_front();
            self.base += 1;
        }
        self.next_esi = self.next_esi.split_off(&(self.base, 0));
        let mut segment = Segment::new(self.flow.dst_port, self.flow.src_port);
        segment.ack = self.translated_end;
        segment.flags = Flags::ACK;
        segment.window = (ack.window as u64 >> self.window_scale).min(u16::MAX as u64) as u16;
        if self.timestamps {
            // Vegas's round trip: that of the symbol that decoded the
            // segment, or of the segment since TCP sent it; without an echo,
            // TCP would time the oldest outstanding segment.
            let echo = match self.params.rtt {
                Rtt::Symbol => Some(ack.echo),
                Rtt::Segment => segment_echo,
            };
            segment.timestamp = echo.map(|echo| Timestamps { value: tcp::micros(now), echo });
        }
        self.to_transport.push_back(Packet::new(self.flow.dst, self.flow.src, Payload::Tcp(segment)));
    }
}

impl EndLayer for ForwardSource {
    fn handle_transmit(&mut self, now: Instant, packet: Packet) {
        let Payload::Tcp(segment) = &packet.payload else {
            return self.to_network.push_back(packet);
        };
        if let Some(ts) = segment.timestamp {
            self.ts_offset = ts.value.wrapping_sub(tcp::micros(now));
        }
        if segment.is_empty() {
            return self.to_network.push_back(packet);
        }
        if self.stream_end.is_some_and(|end| segment.seq != end) {
            // TCP's own timer fired. The segment is in the buffer already,
            // but TCP pushed it from its window all the same: it earns its
            // credits, which keep the windows coded while TCP recovers.
            self.absorbed += 1;
            self.earn();
        } else {
            let segment = segment.clone();
            self.take_segment(now, &segment);
        }
        self.release(now);
        self.refresh_deadline();
    }

    fn handle_receive(&mut self, now: Instant, packet: Packet) {
        match &packet.payload {
            Payload::Other(m) => match m.downcast_ref::<Ack>() {
                Some(ack) => {
                    let ack = *ack;
                    self.acknowledge(now, &ack);
                    self.release(now);
                    self.refresh_deadline();
                }
                None => self.to_transport.push_back(packet),
            },
            _ => self.to_transport.push_back(packet),
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        let mut last_late = None;
        for i in 0..self.buffer.len() {
            if self.deadline(&self.buffer[i]).is_some_and(|t| t <= now) {
                // N_timeout counts every time a Diff passes the threshold,
                // a segment late again after a retransmission round included.
                self.buffer[i].timed_out = true;
                self.timeouts += 1;
                last_late = Some(self.base + i as u64);
            }
        }
        if let Some(last) = last_late {
            self.retransmit(now, last);
        }
        self.release(now);
        self.refresh_deadline();
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.next_deadline
    }

    fn poll_transmit(&mut self, _now: Instant) -> Option<Packet> {
        self.to_network.pop_front()
    }

    fn poll_receive(&mut self, _now: Instant) -> Option<Packet> {
        self.to_transport.pop_front()
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("segments_coded", self.segments_coded),
            ("coding_timeouts", self.timeouts),
            ("symbols_sent", self.symbols_sent),
            ("retransmission_symbols", self.retransmission_symbols),
            ("retransmission_rounds", self.retransmission_rounds),
            ("tcp_retransmits_absorbed", self.absorbed),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn source(params: &TcpForwardParams) -> ForwardSource {
        let flow = FlowKey {
            src: Ipv4Addr::new(10, 0, 0, 1),
            dst: Ipv4Addr::new(10, 0, 0, 3),
            protocol: 6,
            src_port: 1,
            dst_port: 2,
        };
        ForwardSource::new(params, &TcpConfig::default(), flow, false, FlowMarks::default())
    }

    #[test]
    fn redundancy_rises_with_the_share_of_timeouts_within_its_bounds() {
        let params = TcpForwardParams { min_redundancy: 1.25, max_redundancy: 8.0, ..TcpForwardParams::default() };
        let mut s = source(&params);
        assert_eq!(s.redundancy(), 1.25, "R_min before anything is coded");
        s.segments_coded = 100;
        let mut last = 0.0;
        for timeouts in 0..=250 {
            s.timeouts = timeouts;
            let r = s.redundancy();
            assert!((1.25..=8.0).contains(&r) && r >= last, "{timeouts} timeouts: R = {r}");
            last = r;
            // Inside its bounds R is N_segments / (N_segments - N_timeout).
            if (25..=87).contains(&timeouts) {
                assert!((r - 100.0 / (100.0 - timeouts as f64)).abs() < 1e-12);
            }
        }
        assert_eq!(last, 8.0, "capped once timeouts reach the segments");
    }

    #[test]
    fn patience_is_eq_4_solved_for_the_elapsed_time() {
        // Diff_p > theta W / m  <=>  e_p > m / (1 - theta) (window form),
        // e_p > (s_p / W) m / (1 - theta) (segment form); W = 16 x 1000 bytes.
        let mut s = source(&TcpForwardParams { timeout: 0.75, ..TcpForwardParams::default() });
        s.min_elapsed = Some(Duration::from_millis(400));
        assert_eq!(s.patience(1000), Duration::from_millis(1600));
        s.params.trigger = Trigger::Segment;
        assert_eq!(s.patience(1000), Duration::from_millis(100));
        assert_eq!(s.patience(500), Duration::from_millis(50));
        s.min_elapsed = None;
        assert_eq!(s.patience(16_000), Duration::from_secs(4), "initial_elapsed before any sample");
    }
}
