//! TCP-Forward's receiver (seed 004 section IV.B): a decoder per window,
//! segments shared between overlapping windows, an acknowledgement per
//! decoded segment, delivery to TCP in order.

use super::wire::{self, Ack, Coded, Header, Symbol};
use super::{mark, TcpForwardParams};
use crate::marks::FlowMarks;
use crate::node::EndLayer;
use crate::packet::{FlowKey, Packet, Payload};
use crate::tcp::{self, Segment, TcpConfig};
use crate::time::Instant;
use ncmesh_codec::fountain::{Fountain, FountainDecoder};
use ncmesh_codec::Received;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// Windows decoded at once; a peer that names more loses the oldest.
const MAX_WINDOWS: usize = 64;
/// How far past the next segment to deliver a window may reach, in segments.
const MAX_SPAN: u64 = 1 << 16;

/// A segment decoded and not yet forgotten.
#[derive(Debug)]
struct Known {
    /// What goes up to TCP, until it has.
    segment: Option<Segment>,
    /// Its coded form, to XOR out of the windows that include it.
    bytes: Vec<u8>,
}

/// One window's decoder.
#[derive(Debug)]
struct Window {
    decoder: Box<dyn FountainDecoder>,
    /// How much of the decoder's decode order has been taken.
    taken: usize,
    /// The window's segments, as its virtual symbols carry them.
    members: Option<Arc<[Segment]>>,
    timing: Option<WindowTiming>,
}

/// A window's first encoding, and whether it has decoded a segment it lacked.
#[derive(Debug)]
struct WindowTiming {
    encoded: Instant,
    known_at_first_symbol: usize,
    first: bool,
}

/// The coding layer under the TCP receiver.
#[derive(Debug)]
pub struct ForwardSink {
    flow: FlowKey,
    fountain: Arc<dyn Fountain>,
    real_payloads: bool,
    symbol_bytes: usize,
    window_bytes: u32,
    marks: FlowMarks,
    windows: BTreeMap<(u64, u16), Window>,
    /// Segments from stream index `known_base`: decoded (`Some`) or not.
    /// Delivered ones stay while a window may still need them.
    known: VecDeque<Option<Known>>,
    known_base: u64,
    /// The next segment to hand TCP.
    next: u64,
    /// The timestamp of the symbol being taken in, for the acks it causes.
    echo: u32,
    /// The highest "acknowledged below" the sender has announced: no window
    /// it codes starts below it, so segments below it can be forgotten.
    acked_below: u64,
    to_network: VecDeque<Packet>,
    to_transport: VecDeque<Packet>,
    pub symbols: u64,
    pub innovative: u64,
    pub decoded: u64,
    /// Symbols that named windows reaching below what is kept, or too far ahead.
    pub stale: u64,
    /// Decoded symbols that did not hold a valid segment (real payloads only): corruption.
    pub malformed: u64,
    /// Sums (ns) and counts of the latencies the flow's marks allow.
    timing: Timing,
}

#[derive(Debug, Default)]
struct Timing {
    decode_ns: u64,
    decoded: u64,
    deliver_ns: u64,
    delivered: u64,
    window_first_ns: u64,
    window_all_ns: u64,
    windows: u64,
}

impl ForwardSink {
    pub fn new(
        params: &TcpForwardParams,
        tcp: &TcpConfig,
        flow: FlowKey,
        real_payloads: bool,
        marks: FlowMarks,
    ) -> ForwardSink {
        ForwardSink {
            flow,
            fountain: params.fountain(),
            real_payloads,
            symbol_bytes: if real_payloads { tcp::wire::coded_symbol_bytes(tcp) } else { 0 },
            window_bytes: tcp.window_bytes().min(u32::MAX as u64) as u32,
            marks,
            windows: BTreeMap::new(),
            known: VecDeque::new(),
            known_base: 0,
            next: 0,
            acked_below: 0,
            echo: 0,
            to_network: VecDeque::new(),
            to_transport: VecDeque::new(),
            symbols: 0,
            innovative: 0,
            decoded: 0,
            stale: 0,
            malformed: 0,
            timing: Timing::default(),
        }
    }

    fn known(&self, index: u64) -> Option<&Known> {
        if index < self.known_base {
            return None;
        }
        self.known.get((index - self.known_base) as usize).and_then(Option::as_ref)
    }

    fn is_decoded(&self, index: u64) -> bool {
        index < self.next || self.known(index).is_some()
    }

    fn receive(&mut self, now: Instant, Coded { header, symbol }: &Coded) {
        let c = header;
        self.symbols += 1;
        self.acked_below = self.acked_below.max(c.acked_below);
        let forget = self.acked_below.min(self.next);
        while self.known_base < forget && !self.known.is_empty() {
            self.known.pop_front();
            self.known_base += 1;
        }
        self.known_base = self.known_base.max(forget);
        self.echo = c.timestamp;
        let (start, end) = (c.start, c.start + c.k as u64);
        if end <= self.next || start < self.known_base || end > self.next + MAX_SPAN {
            self.stale += 1;
            return self.repeat_ack(c);
        }
        let key = (start, c.k);
        let Some(window) = self.window(c, symbol) else {
            self.malformed += 1;
            return;
        };
        match window.decoder.consume(c.esi, symbol.bytes()) {
            Ok(Received::NotInnovative) => {
                // A window all of whose segments were known when it was made is done at once.
                self.windows.retain(|_, w| !w.decoder.is_complete());
                return self.repeat_ack(c);
            }
            Ok(_) => self.innovative += 1,
            Err(_) => {
                self.malformed += 1;
                return;
            }
        }
        // What one window decodes, the windows it overlaps learn, which may decode more.
        let mut learnt = self.take_decoded(now, key);
        while let Some(index) = learnt.pop() {
            let bytes = self.known(index).map(|k| k.bytes.clone()).unwrap_or_default();
            let holders: Vec<(u64, u16)> = self
                .windows
                .range(..=(index, u16::MAX))
                .map(|(&k, _)| k)
                .filter(|&(s, k)| index < s + k as u64)
                .collect();
            for holder in holders {
                let w = self.windows.get_mut(&holder).expect("listed");
                let _ = w.decoder.consume_source((index - holder.0) as usize, &bytes);
                learnt.extend(self.take_decoded(now, holder));
            }
        }
        self.time_windows(now);
        self.windows.retain(|_, w| !w.decoder.is_complete());
        self.deliver(now);
    }

    /// The decoder of the symbol's window; a new one is told what is known already.
    fn window(&mut self, c: &Header, symbol: &Symbol) -> Option<&mut Window> {
        let key = (c.start, c.k);
        if !self.windows.contains_key(&key) {
            let seed = wire::code_seed(c.start, c.k);
            let mut decoder = self.fountain.decoder(c.k as usize, self.symbol_bytes, seed).ok()?;
            for i in 0..c.k as u64 {
                if let Some(k) = self.known(c.start + i) {
                    decoder.consume_source(i as usize, &k.bytes).ok()?;
                }
            }
            let members = match symbol {
                Symbol::Virtual { members, .. } => Some(members.clone()),
                Symbol::Real(_) => None,
            };
            let timing = (!c.retransmission).then(|| self.marks.get(mark::WINDOW, c.start)).flatten().map(|encoded| {
                WindowTiming { encoded, known_at_first_symbol: decoder.decode_order().len(), first: false }
            });
            if self.windows.len() >= MAX_WINDOWS {
                self.windows.pop_first();
            }
            let taken = decoder.decode_order().len();
            self.windows.insert(key, Window { decoder, taken, members, timing });
        }
        self.windows.get_mut(&key)
    }

    /// Takes what window `key` decoded since last asked; returns the
    /// segments that are new to the sink, each acknowledged.
    ///
    /// A decoded segment that fails its TCP checksum means a corrupted
    /// symbol reached the window's decoder (damage the message checksum
    /// missed), and every segment solved through it may be wrong: the
    /// window's decoder is dropped, the segment is neither kept nor
    /// acknowledged, and the window decodes again from later symbols, with
    /// the segments that passed their checksums. Kept, it would be
    /// acknowledged and never delivered, and TCP would wait for it forever.
    fn take_decoded(&mut self, now: Instant, key: (u64, u16)) -> Vec<u64> {
        let mut learnt = Vec::new();
        let Some(w) = self.windows.get_mut(&key) else { return learnt };
        let fresh: Vec<u32> = w.decoder.decode_order()[w.taken..].to_vec();
        w.taken += fresh.len();
        for i in fresh {
            let index = key.0 + i as u64;
            if self.is_decoded(index) {
                continue;
            }
            let w = self.windows.get_mut(&key).expect("present");
            let bytes = w.decoder.symbol(i as usize).map(<[u8]>::to_vec).unwrap_or_default();
            let segment = match self.real_payloads {
                true => tcp::wire::decode_segment(&bytes, self.flow.src, self.flow.dst).ok(),
                false => w.members.as_ref().and_then(|m| m.get(i as usize).cloned()),
            };
            if segment.is_none() {
                self.malformed += 1;
                self.windows.remove(&key);
                break;
            }
            let slot = (index - self.known_base) as usize;
            if self.known.len() <= slot {
                self.known.resize_with(slot + 1, || None);
            }
            self.known[slot] = Some(Known { segment, bytes });
            self.decoded += 1;
            if let Some(at) = self.marks.get(mark::ENCODED, index) {
                self.timing.decode_ns += (now - at).0;
                self.timing.decoded += 1;
            }
            self.acknowledge(index);
            learnt.push(index);
        }
        learnt
    }

    /// Per window: when it decodes the first segment it lacked at its first
    /// symbol, and when it has them all, from its first encoding.
    fn time_windows(&mut self, now: Instant) {
        for w in self.windows.values_mut() {
            let Some(t) = &mut w.timing else { continue };
            if !t.first && w.decoder.decode_order().len() > t.known_at_first_symbol {
                t.first = true;
                self.timing.window_first_ns += (now - t.encoded).0;
            }
            if w.decoder.is_complete() {
                self.timing.window_all_ns += (now - t.encoded).0;
                self.timing.windows += 1;
                w.timing = None;
            }
        }
    }

    /// Tells the sender segment `index` is decoded, with everything else it knows.
    fn acknowledge(&mut self, index: u64) {
        let mut next = self.next;
        while self.is_decoded(next) {
            next += 1;
        }
        let mask = (0..64).filter(|&b| self.is_decoded(next + 1 + b)).fold(0u64, |m, b| m | 1 << b);
        let ack = Ack {
            src_port: self.flow.dst_port,
            dst_port: self.flow.src_port,
            decoded: index,
            next,
            mask,
            window: self.window_bytes,
            echo: self.echo,
        };
        self.to_network.push_back(Packet::new(self.flow.dst, self.flow.src, Payload::Other(Box::new(ack))));
    }

    /// A symbol that taught nothing. If the sender sent it because it heard
    /// nothing back (a retransmission round), an acknowledgement may have
    /// been lost: say again what is decoded.
    fn repeat_ack(&mut self, c: &Header) {
        if !c.retransmission {
            return;
        }
        if let Some(index) = (c.start..c.start + c.k as u64).rev().find(|&i| self.is_decoded(i)) {
            self.acknowledge(index);
        }
    }

    fn deliver(&mut self, now: Instant) {
        while let Some(known) = self.known.get_mut((self.next - self.known_base) as usize).and_then(Option::as_mut) {
            if let Some(segment) = known.segment.take() {
                self.to_transport.push_back(Packet::new(self.flow.src, self.flow.dst, Payload::Tcp(segment)));
            }
            if let Some(at) = self.marks.take(mark::ENCODED, self.next) {
                self.timing.deliver_ns += (now - at).0;
                self.timing.delivered += 1;
            }
            self.next += 1;
            if self.next.is_multiple_of(256) {
                self.marks.forget_below(mark::WINDOW, self.next.saturating_sub(MAX_SPAN));
            }
        }
    }
}

impl EndLayer for ForwardSink {
    /// The TCP receiver's own ACKs stop here: the sink acknowledges each
    /// decoded segment itself.
    fn handle_transmit(&mut self, _now: Instant, _packet: Packet) {}

    fn handle_receive(&mut self, now: Instant, packet: Packet) {
        match &packet.payload {
            Payload::Other(m) => match m.downcast_ref::<Coded>() {
                Some(c) => self.receive(now, c),
                None => self.to_transport.push_back(packet),
            },
            _ => self.to_transport.push_back(packet),
        }
    }

    fn poll_transmit(&mut self, _now: Instant) -> Option<Packet> {
        self.to_network.pop_front()
    }

    fn poll_receive(&mut self, _now: Instant) -> Option<Packet> {
        self.to_transport.pop_front()
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let t = &self.timing;
        vec![
            ("symbols_received", self.symbols),
            ("symbols_innovative", self.innovative),
            ("segments_decoded", self.decoded),
            ("stale_symbols", self.stale),
            ("malformed", self.malformed),
            ("segment_decode_ns", t.decode_ns),
            ("segments_decode_timed", t.decoded),
            ("segment_delivery_ns", t.deliver_ns),
            ("segments_delivery_timed", t.delivered),
            ("window_first_ns", t.window_first_ns),
            ("window_all_ns", t.window_all_ns),
            ("windows_timed", t.windows),
        ]
    }
}
