//! TCP/NC's sink: acknowledges what it has seen, delivers what it has decoded.

use super::wire::{self, Ack, Combination, Symbol};
use super::TcpNcParams;
use crate::node::EndLayer;
use crate::packet::{FlowKey, Packet, Payload};
use crate::tcp::{self, Flags, Segment, TcpConfig};
use crate::time::Instant;
use ncmesh_codec::rlnc::sliding::SlidingDecoder;
use ncmesh_codec::rlnc::Received;
use ncmesh_codec::Field;
use std::collections::VecDeque;

/// The coding layer under the TCP receiver.
#[derive(Debug)]
pub struct NcSink {
    decoder: SlidingDecoder,
    flow: FlowKey,
    window_bytes: u32,
    real_payloads: bool,
    /// With virtual payloads, the segments from packet `meta_base` on, as
    /// combinations announce them: what a decoded packet stands for.
    meta: VecDeque<Option<Segment>>,
    meta_base: u64,
    to_network: VecDeque<Packet>,
    to_transport: VecDeque<Packet>,
    pub innovative: u64,
    pub not_innovative: u64,
    /// Decoded symbols that do not hold a valid segment (real payloads only): corruption.
    pub malformed: u64,
}

impl NcSink {
    pub fn new(params: &TcpNcParams, tcp: &TcpConfig, flow: FlowKey, real_payloads: bool) -> NcSink {
        let field = Field::new(params.field).expect("checked parameters");
        NcSink {
            decoder: SlidingDecoder::new(field, if real_payloads { tcp::wire::coded_symbol_bytes(tcp) } else { 0 })
                .expect("checked parameters"),
            flow,
            window_bytes: tcp.window_bytes().min(u32::MAX as u64) as u32,
            real_payloads,
            meta: VecDeque::new(),
            meta_base: 0,
            to_network: VecDeque::new(),
            to_transport: VecDeque::new(),
            innovative: 0,
            not_innovative: 0,
            malformed: 0,
        }
    }

    fn learn(&mut self, c: &Combination) {
        let Symbol::Virtual { members: segments, .. } = &c.symbol else { return };
        for (k, s) in segments.iter().enumerate() {
            let index = c.start + k as u64;
            let Some(slot) = index.checked_sub(self.meta_base) else { continue };
            let slot = slot as usize;
            if self.meta.len() <= slot {
                self.meta.resize(slot + 1, None);
            }
            self.meta[slot].get_or_insert_with(|| s.clone());
        }
    }

    fn meta_of(&self, index: u64) -> Option<Segment> {
        index.checked_sub(self.meta_base).and_then(|i| self.meta.get(i as usize).cloned().flatten())
    }

    fn receive(&mut self, c: &Combination) {
        self.decoder.forget_below(c.start);
        self.learn(c);
        let received =
            self.decoder.consume(c.start, &c.coefficients, c.symbol.bytes()).unwrap_or(Received::NotInnovative);
        if received == Received::NotInnovative {
            self.not_innovative += 1;
            return;
        }
        self.innovative += 1;
        // A real symbol decodes to bytes that must hold a segment; a virtual
        // one stands for the segment its combinations announced.
        let (flow, real) = (self.flow, self.real_payloads);
        let mut decoded = Vec::new();
        while let Some((index, payload)) = self.decoder.poll_decoded() {
            decoded.push((index, real.then(|| tcp::wire::decode_segment(payload, flow.src, flow.dst))));
        }
        for (index, parsed) in decoded {
            let segment = match parsed {
                Some(Ok(s)) => s,
                Some(Err(_)) => {
                    self.malformed += 1;
                    continue;
                }
                None => match self.meta_of(index) {
                    Some(s) => s,
                    None => continue,
                },
            };
            self.to_transport.push_back(Packet::new(self.flow.src, self.flow.dst, Payload::Tcp(segment)));
        }
        let ack = Ack {
            src_port: self.flow.dst_port,
            dst_port: self.flow.src_port,
            seen: self.decoder.first_unseen(),
            window: self.window_bytes,
        };
        self.to_network.push_back(wire::packet(self.flow.dst, self.flow.src, Box::new(ack)));
        // Metadata below the decoder's window is no longer needed.
        let keep_from = self.decoder.next_delivery().saturating_sub(1).min(c.start);
        while self.meta_base < keep_from && !self.meta.is_empty() {
            self.meta.pop_front();
            self.meta_base += 1;
        }
    }
}

impl EndLayer for NcSink {
    /// The TCP receiver's own ACKs stop here: the sink acknowledges seen
    /// packets itself, which is what keeps TCP's window sliding over losses.
    /// Its SYN-ACK and FIN pass, uncoded.
    fn handle_transmit(&mut self, _now: Instant, packet: Packet) {
        if matches!(&packet.payload, Payload::Tcp(s) if s.flags.contains(Flags::SYN) || s.flags.contains(Flags::FIN)) {
            self.to_network.push_back(packet);
        }
    }

    fn handle_receive(&mut self, _now: Instant, packet: Packet) {
        match &packet.payload {
            Payload::Other(m) => match m.downcast_ref::<Combination>() {
                Some(c) => self.receive(c),
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
        vec![("innovative", self.innovative), ("not_innovative", self.not_innovative), ("malformed", self.malformed)]
    }
}
