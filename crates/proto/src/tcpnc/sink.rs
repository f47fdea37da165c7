//! TCP/NC's sink: acknowledges what it has seen, delivers what it has decoded.

use super::{payload_of, Combination, SegmentMeta, TcpNcParams};
use crate::packet::{Body, Direction, HostLayer, Packet};
use crate::tcp::{Segment, BASE_HEADER_BYTES};
use crate::time::Instant;
use ncmesh_codec::rlnc::sliding::SlidingDecoder;
use ncmesh_codec::rlnc::Received;
use ncmesh_codec::Field;
use std::collections::VecDeque;

/// The coding layer under the TCP receiver.
#[derive(Debug)]
pub struct NcSink {
    decoder: SlidingDecoder,
    flow: u32,
    window_bytes: u32,
    flow_seed: Option<u64>,
    /// Metadata of packets from index `meta_base`, as combinations announce them.
    meta: VecDeque<Option<SegmentMeta>>,
    meta_base: u64,
    to_network: VecDeque<Packet>,
    to_transport: VecDeque<Packet>,
    pub innovative: u64,
    pub not_innovative: u64,
    /// Decoded payloads that differ from what the source coded (real payloads only).
    pub corrupt: u64,
}

impl NcSink {
    /// `window_bytes` is what its ACKs advertise (the TCP receive window);
    /// `seed` is the source's, to check real payloads.
    pub fn new(params: &TcpNcParams, flow: u32, mss: u32, window_bytes: u32, seed: u64) -> NcSink {
        let field = Field::new(params.field).expect("the scenario checks the field");
        let symbol_bytes = if params.real_payloads { mss as usize } else { 0 };
        NcSink {
            decoder: SlidingDecoder::new(field, symbol_bytes).expect("checked parameters"),
            flow,
            window_bytes,
            flow_seed: params.real_payloads.then_some(seed),
            meta: VecDeque::new(),
            meta_base: 0,
            to_network: VecDeque::new(),
            to_transport: VecDeque::new(),
            innovative: 0,
            not_innovative: 0,
            corrupt: 0,
        }
    }

    fn learn(&mut self, c: &Combination) {
        for (k, m) in c.segments.iter().enumerate() {
            let index = c.start + k as u64;
            let Some(slot) = index.checked_sub(self.meta_base) else { continue };
            let slot = slot as usize;
            if self.meta.len() <= slot {
                self.meta.resize(slot + 1, None);
            }
            self.meta[slot].get_or_insert(*m);
        }
    }

    fn meta_of(&self, index: u64) -> Option<SegmentMeta> {
        index.checked_sub(self.meta_base).and_then(|i| self.meta.get(i as usize).copied().flatten())
    }

    /// The byte ACK for "everything before packet `index` is seen".
    fn ack_bytes(&self, index: u64) -> u64 {
        match index.checked_sub(1).and_then(|i| self.meta_of(i)) {
            Some(m) => m.seq + m.len as u64,
            None => 0,
        }
    }
}

impl HostLayer for NcSink {
    /// The TCP receiver's own ACKs stop here: the sink acknowledges seen
    /// packets itself, which is what keeps TCP's window sliding over losses.
    fn handle_transmit(&mut self, _now: Instant, _packet: Packet) {}

    fn handle_receive(&mut self, _now: Instant, packet: Packet) {
        let Body::Combination(c) = packet.body else {
            return self.to_transport.push_back(packet);
        };
        self.decoder.forget_below(c.start);
        self.learn(&c);
        let received = self.decoder.consume(c.start, &c.coefficients, &c.payload).unwrap_or(Received::NotInnovative);
        if received == Received::NotInnovative {
            self.not_innovative += 1;
            return;
        }
        self.innovative += 1;
        let mut decoded = Vec::new();
        while let Some((index, payload)) = self.decoder.poll_decoded() {
            let bad = self.flow_seed.is_some_and(|s| payload != payload_of(s, index, payload.len()).as_slice());
            decoded.push((index, bad));
        }
        for (index, bad) in decoded {
            self.corrupt += bad as u64;
            let Some(m) = self.meta_of(index) else { continue };
            let segment = Segment::data(m.seq, m.len, m.first_sent);
            self.to_transport.push_back(Packet { flow: self.flow, direction: Direction::Forward, bytes: BASE_HEADER_BYTES + m.len, body: Body::Tcp(segment) });
        }
        let ack = Segment::ack(self.ack_bytes(self.decoder.first_unseen()), self.window_bytes);
        self.to_network.push_back(Packet { flow: self.flow, direction: Direction::Reverse, bytes: ack.wire_bytes(), body: Body::Tcp(ack) });
        // Metadata below the decoder's window is no longer needed.
        let keep_from = self.decoder.next_delivery().saturating_sub(1).min(c.start);
        while self.meta_base < keep_from && !self.meta.is_empty() {
            self.meta.pop_front();
            self.meta_base += 1;
        }
    }

    fn poll_transmit(&mut self, _now: Instant) -> Option<Packet> {
        self.to_network.pop_front()
    }

    fn poll_receive(&mut self, _now: Instant) -> Option<Packet> {
        self.to_transport.pop_front()
    }
}
