//! TCP/NC's source: the coding window and the redundancy R.

use super::wire::{self, Ack, Coding, Combination, Symbol};
use super::{spend, TcpNcParams};
use crate::data::Data;
use crate::node::EndLayer;
use crate::packet::{FlowKey, Packet, Payload};
use crate::tcp::{self, Flags, Segment, TcpConfig};
use crate::time::Instant;
use ncmesh_codec::prng::SplitMix64;
use ncmesh_codec::rlnc::sliding::SlidingEncoder;
use ncmesh_codec::Field;
use std::collections::VecDeque;
use std::sync::Arc;

/// The coding layer under the TCP sender.
#[derive(Debug)]
pub struct NcSource {
    field: Field,
    flow: FlowKey,
    window_scale: u8,
    redundancy: f64,
    credit: f64,
    real_payloads: bool,
    symbol_bytes: usize,
    encoder: SlidingEncoder,
    /// The segments in the encoder's window (their data virtual): what
    /// translates the sink's acknowledgements, and, with virtual payloads,
    /// what a combination stands for.
    window: VecDeque<Segment>,
    /// The window as the last combination carried it, until the window changes.
    members: Option<Arc<[Segment]>>,
    /// The sequence number after the last byte TCP has handed over.
    stream_end: Option<u32>,
    /// The sequence number after the last packet that left the window.
    acked_end: u32,
    rng: SplitMix64,
    to_network: VecDeque<Packet>,
    to_transport: VecDeque<Packet>,
    /// Combinations sent so far.
    pub combinations_sent: u64,
}

impl NcSource {
    /// `redundancy` is R; `seed` draws the coefficient seeds.
    pub fn new(
        params: &TcpNcParams,
        tcp: &TcpConfig,
        flow: FlowKey,
        redundancy: f64,
        real_payloads: bool,
        seed: u64,
    ) -> NcSource {
        let field = Field::new(params.field).expect("checked parameters");
        let symbol_bytes = tcp::wire::coded_symbol_bytes(tcp);
        NcSource {
            field,
            flow,
            window_scale: tcp.window_scale(),
            redundancy,
            credit: 0.0,
            real_payloads,
            symbol_bytes,
            encoder: SlidingEncoder::new(field, if real_payloads { symbol_bytes } else { 0 })
                .expect("checked parameters"),
            window: VecDeque::new(),
            members: None,
            stream_end: None,
            acked_end: 0,
            rng: SplitMix64::new(seed),
            to_network: VecDeque::new(),
            to_transport: VecDeque::new(),
            combinations_sent: 0,
        }
    }

    fn take_segment(&mut self, segment: &Segment) {
        let mut symbol = vec![0; self.encoder.symbol_bytes()];
        if self.real_payloads && !tcp::wire::encode_segment(segment, self.flow.src, self.flow.dst, &mut symbol) {
            return; // longer than a symbol: TCP's MSS and the layer disagree
        }
        self.encoder.push(&symbol).expect("sizes match");
        let mut kept = segment.clone();
        if self.real_payloads {
            kept.data = Data::Virtual { len: segment.len(), offset: 0 };
        }
        if self.stream_end.is_none() {
            self.acked_end = segment.seq;
        }
        self.stream_end = Some(segment.end());
        self.window.push_back(kept);
        self.members = None;
    }

    fn combine(&mut self) -> Packet {
        let mut coefficients = Vec::with_capacity(self.window.len());
        let mut payload = vec![0; self.encoder.symbol_bytes()];
        // Skip seeds that give the newest packet a zero coefficient: such a
        // combination cannot reveal it, and at R = 1 the sink would stay one
        // degree of freedom short until TCP pauses. The seed still fully
        // specifies the vector on the wire.
        let (seed, start) = loop {
            let seed = self.rng.next_u64();
            let start =
                self.encoder.encode(seed, &mut coefficients, &mut payload).expect("sizes match, a packet waits");
            if coefficients.last() != Some(&0) {
                break (seed, start);
            }
        };
        let symbol = if self.real_payloads {
            Symbol::Real(payload)
        } else {
            let window = &self.window;
            let members = self.members.get_or_insert_with(|| window.iter().cloned().collect()).clone();
            Symbol::Virtual { len: self.symbol_bytes, members }
        };
        let c = Combination {
            src_port: self.flow.src_port,
            dst_port: self.flow.dst_port,
            field: self.field,
            start,
            coefficients,
            coding: Coding::Seeded(seed),
            symbol,
        };
        self.combinations_sent += 1;
        wire::packet(self.flow.src, self.flow.dst, Box::new(c))
    }

    /// The TCP ACK that says what the sink's acknowledgement says: every
    /// byte of the packets below `seen`.
    fn translate(&mut self, ack: &Ack) -> Packet {
        let before = self.encoder.start();
        let seen = ack.seen.min(self.encoder.end());
        let acked = if seen > before { self.window[(seen - 1 - before) as usize].end() } else { self.acked_end };
        self.encoder.acknowledge(seen).expect("seen is at most the window's end");
        let gone = (self.encoder.start() - before) as usize;
        if gone > 0 {
            self.acked_end = self.window[gone - 1].end();
            self.window.drain(..gone);
            self.members = None;
        }
        let mut segment = Segment::new(self.flow.dst_port, self.flow.src_port);
        segment.ack = acked;
        segment.flags = Flags::ACK;
        segment.window = (ack.window as u64 >> self.window_scale).min(u16::MAX as u64) as u16;
        Packet::new(self.flow.dst, self.flow.src, Payload::Tcp(segment))
    }
}

impl EndLayer for NcSource {
    fn handle_transmit(&mut self, _now: Instant, packet: Packet) {
        let Payload::Tcp(segment) = &packet.payload else {
            return self.to_network.push_back(packet);
        };
        if segment.is_empty() {
            // SYN, the handshake's ACK, FIN: control segments pass uncoded.
            return self.to_network.push_back(packet);
        }
        if !segment.is_empty() && self.stream_end.is_none_or(|end| segment.seq == end) {
            let segment = segment.clone();
            self.take_segment(&segment);
        }
        // New data and retransmissions alike buy R combinations: a TCP
        // retransmission means the sink is short of degrees of freedom.
        for _ in 0..spend(&mut self.credit, self.redundancy) {
            if self.encoder.is_empty() {
                break;
            }
            let p = self.combine();
            self.to_network.push_back(p);
        }
    }

    fn handle_receive(&mut self, _now: Instant, packet: Packet) {
        let translated = match &packet.payload {
            Payload::Other(m) => m.downcast_ref::<Ack>().map(|ack| self.translate(ack)),
            _ => None,
        };
        self.to_transport.push_back(translated.unwrap_or(packet));
    }

    fn poll_transmit(&mut self, _now: Instant) -> Option<Packet> {
        self.to_network.pop_front()
    }

    fn poll_receive(&mut self, _now: Instant) -> Option<Packet> {
        self.to_transport.pop_front()
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("combinations_sent", self.combinations_sent)]
    }
}
