//! TCP/NC's source: the coding window and the redundancy R.

use super::{payload_of, packet_index, spend, Combination, SegmentMeta, TcpNcParams};
use crate::packet::{Body, HostLayer, Packet};
use crate::packet::Direction;
use crate::tcp::BASE_HEADER_BYTES;
use crate::time::Instant;
use ncmesh_codec::prng::SplitMix64;
use ncmesh_codec::rlnc::sliding::SlidingEncoder;
use ncmesh_codec::Field;
use std::collections::VecDeque;

/// The coding layer under the TCP sender.
#[derive(Debug)]
pub struct NcSource {
    field: Field,
    mss: u32,
    redundancy: f64,
    credit: f64,
    encoder: SlidingEncoder,
    /// Metadata of the packets in the encoder's window.
    window: VecDeque<SegmentMeta>,
    /// One past the last byte TCP has handed over.
    stream_end: u64,
    rng: SplitMix64,
    flow_seed: Option<u64>,
    to_network: VecDeque<Packet>,
    to_transport: VecDeque<Packet>,
    flow: u32,
    /// Combinations sent so far.
    pub combinations_sent: u64,
}

impl NcSource {
    /// `redundancy` is R; `seed` draws the coefficient seeds and, with real
    /// payloads, the data.
    pub fn new(params: &TcpNcParams, mss: u32, redundancy: f64, flow: u32, seed: u64) -> NcSource {
        let field = Field::new(params.field).expect("the scenario checks the field");
        let symbol_bytes = if params.real_payloads { mss as usize } else { 0 };
        NcSource {
            field,
            mss,
            redundancy,
            credit: 0.0,
            encoder: SlidingEncoder::new(field, symbol_bytes).expect("checked parameters"),
            window: VecDeque::new(),
            stream_end: 0,
            rng: SplitMix64::new(seed),
            flow_seed: params.real_payloads.then_some(seed),
            to_network: VecDeque::new(),
            to_transport: VecDeque::new(),
            flow,
            combinations_sent: 0,
        }
    }

    fn combine(&mut self) -> Packet {
        let mut coefficients = Vec::with_capacity(self.window.len());
        let mut payload = vec![0; self.encoder.symbol_bytes()];
        // Skip seeds that give the newest packet a zero coefficient: such a
        // combination cannot reveal it, and at R = 1 the sink would stay one
        // degree of freedom short until TCP pauses. The seed still fully
        // specifies the vector on the wire.
        let start = loop {
            let seed = self.rng.next_u64();
            let start = self.encoder.encode(seed, &mut coefficients, &mut payload).expect("sizes match");
            if coefficients.last() != Some(&0) {
                break start;
            }
        };
        let c = Combination { start, coefficients, seeded: true, payload, segments: self.window.iter().copied().collect() };
        let bytes = BASE_HEADER_BYTES + c.header_bytes(self.field) + self.mss;
        self.combinations_sent += 1;
        Packet { flow: self.flow, direction: Direction::Forward, bytes, body: Body::Combination(Box::new(c)) }
    }
}

impl HostLayer for NcSource {
    fn handle_transmit(&mut self, _now: Instant, packet: Packet) {
        let Body::Tcp(segment) = &packet.body else {
            return self.to_network.push_back(packet);
        };
        if segment.end() > self.stream_end && segment.seq == self.stream_end {
            let index = self.encoder.end();
            let data = match self.flow_seed {
                Some(s) => payload_of(s, index, self.mss as usize),
                None => Vec::new(),
            };
            self.encoder.push(&data).expect("sizes match");
            self.window.push_back(SegmentMeta { seq: segment.seq, len: segment.len, first_sent: segment.first_sent });
            self.stream_end = segment.end();
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
        if let Body::Tcp(ack) = &packet.body {
            let before = self.encoder.start();
            self.encoder.acknowledge(packet_index(ack.ack, self.mss).min(self.encoder.end()));
            self.window.drain(..(self.encoder.start() - before) as usize);
        }
        self.to_transport.push_back(packet);
    }

    fn poll_transmit(&mut self, _now: Instant) -> Option<Packet> {
        self.to_network.pop_front()
    }

    fn poll_receive(&mut self, _now: Instant) -> Option<Packet> {
        self.to_transport.pop_front()
    }
}
