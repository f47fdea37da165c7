//! Hop-by-hop TCP/NC: every node recodes each flow's combinations before
//! they leave it, with a redundancy matched to the outgoing link.

use super::{Combination, SegmentMeta, TcpNcParams};
use crate::packet::{Body, HopLayer, Packet};
use crate::tcp::BASE_HEADER_BYTES;
use crate::time::Instant;
use ncmesh_codec::prng::SplitMix64;
use ncmesh_codec::rlnc::sliding::SlidingDecoder;
use ncmesh_codec::rlnc::Received;
use ncmesh_codec::Field;
use std::collections::{BTreeMap, VecDeque};

/// What a relay holds of one flow.
#[derive(Debug)]
struct FlowBuffer {
    decoder: SlidingDecoder,
    meta: VecDeque<Option<SegmentMeta>>,
    meta_base: u64,
    next: u32,
    /// Recoded combinations owed to the next hop, oldest first: the pivot of
    /// the innovative combination that earned them and how many.
    owed: VecDeque<(u64, f64)>,
    /// The fraction of a transmission left over from paid debts, carried to
    /// the next one so that R = 1.2 sends one extra combination in five.
    carry: f64,
    mss: u32,
    /// Where the latest combination from upstream started: upstream will
    /// never again send anything below it.
    upstream_start: u64,
}

impl FlowBuffer {
    /// Drops what upstream will never send again. Upstream moves its
    /// window past a packet only once the sink's ACK for it has come back
    /// through this relay, so this is also never ahead of the sink; dropping
    /// at that ACK itself would be too early, since combinations already on
    /// their way from upstream still include those packets.
    fn prune(&mut self) {
        let below = self.upstream_start;
        self.decoder.discard_below(below);
        while self.meta_base < below && !self.meta.is_empty() {
            self.meta.pop_front();
            self.meta_base += 1;
        }
        self.meta_base = self.meta_base.max(below);
    }
}

/// The hop layer of hop-by-hop TCP/NC at one node.
#[derive(Debug)]
pub struct Relay {
    field: Field,
    params: TcpNcParams,
    rng: SplitMix64,
    /// Redundancy towards each neighbour.
    redundancy: BTreeMap<u32, f64>,
    flows: BTreeMap<u32, FlowBuffer>,
    /// Everything that is not a combination (TCP ACKs) waits here, per neighbour.
    passing: BTreeMap<u32, VecDeque<Packet>>,
    /// Round-robin position among flows, per neighbour.
    turn: BTreeMap<u32, u32>,
    to_ip: VecDeque<Packet>,
}

impl Relay {
    /// `redundancy` gives R towards each neighbour.
    pub fn new(params: &TcpNcParams, redundancy: BTreeMap<u32, f64>, seed: u64) -> Relay {
        Relay {
            field: Field::new(params.field).expect("the scenario checks the field"),
            params: *params,
            rng: SplitMix64::new(seed),
            redundancy,
            flows: BTreeMap::new(),
            passing: BTreeMap::new(),
            turn: BTreeMap::new(),
            to_ip: VecDeque::new(),
        }
    }

    fn absorb(&mut self, next: u32, flow: u32, c: &Combination, bytes: u32) {
        let symbol_bytes = c.payload.len();
        let header = BASE_HEADER_BYTES + c.header_bytes(self.field);
        let field = self.field;
        let buffer = self.flows.entry(flow).or_insert_with(|| FlowBuffer {
            decoder: SlidingDecoder::new(field, symbol_bytes).expect("checked parameters"),
            meta: VecDeque::new(),
            meta_base: c.start,
            next,
            owed: VecDeque::new(),
            carry: 0.0,
            mss: bytes.saturating_sub(header),
            upstream_start: c.start,
        });
        buffer.next = next;
        buffer.upstream_start = buffer.upstream_start.max(c.start);
        buffer.prune();
        for (k, m) in c.segments.iter().enumerate() {
            let Some(slot) = (c.start + k as u64).checked_sub(buffer.meta_base) else { continue };
            if buffer.meta.len() <= slot as usize {
                buffer.meta.resize(slot as usize + 1, None);
            }
            buffer.meta[slot as usize].get_or_insert(*m);
        }
        let innovative = buffer.decoder.consume(c.start, &c.coefficients, &c.payload).unwrap_or(Received::NotInnovative) == Received::Innovative;
        // An innovative combination earns R transmissions on the next link.
        // One that is not innovative here earns a single one: upstream sends
        // such redundancy when the sink is short (a TCP retransmission is
        // the sign), and a relay that already holds everything must pass the
        // need on, or the sink's shortfall would never close.
        let r = if innovative { self.redundancy.get(&next).copied().unwrap_or(1.0) } else { 1.0 };
        // A full relay buffer drops the oldest debt: those packets are
        // the likeliest to be covered by later combinations.
        if buffer.owed.len() >= self.params.relay_queue as usize {
            buffer.owed.pop_front();
        }
        let credit = r + std::mem::take(&mut buffer.carry);
        let pivot = if innovative { buffer.decoder.last_pivot() } else { buffer.owed.back().map_or(buffer.decoder.last_pivot(), |d| d.0) };
        buffer.owed.push_back((pivot, credit));
    }

    fn recode(&mut self, flow: u32) -> Option<Packet> {
        let b = self.flows.get_mut(&flow)?;
        let mut coefficients = Vec::new();
        let mut payload = vec![0; if self.params.real_payloads { b.mss as usize } else { 0 }];
        let (pivot, credit) = b.owed.front_mut()?;
        let limit = *pivot + 1;
        // Spend one transmission; a fractional remainder carries to the next debt.
        *credit -= 1.0;
        if *credit < 1.0 {
            b.carry += credit.max(0.0);
            b.owed.pop_front();
            if let Some(next) = b.owed.front_mut() {
                next.1 += std::mem::take(&mut b.carry);
            }
        }
        let start = b.decoder.recode(self.rng.next_u64(), limit, &mut coefficients, &mut payload).ok()??;
        let segments = (0..coefficients.len() as u64)
            .map(|k| {
                let slot = (start + k).checked_sub(b.meta_base).map(|s| s as usize);
                slot.and_then(|s| b.meta.get(s).copied().flatten()).unwrap_or(SegmentMeta { seq: 0, len: 0, first_sent: Instant::ZERO })
            })
            .collect();
        let c = Combination { start, coefficients, seeded: false, payload, segments };
        let bytes = BASE_HEADER_BYTES + c.header_bytes(self.field) + b.mss;
        Some(Packet { flow, direction: crate::packet::Direction::Forward, bytes, body: Body::Combination(Box::new(c)) })
    }
}

impl HopLayer for Relay {
    fn handle_forward(&mut self, _now: Instant, next: u32, packet: Packet) {
        match &packet.body {
            Body::Combination(c) => self.absorb(next, packet.flow, c, packet.bytes),
            _ => {
                let queue = self.passing.entry(next).or_default();
                if queue.len() < self.params.relay_queue as usize {
                    queue.push_back(packet);
                }
            }
        }
    }

    fn handle_frame(&mut self, _now: Instant, _from: u32, frame: Packet) {
        self.to_ip.push_back(frame);
    }

    fn poll_frame(&mut self, _now: Instant, next: u32) -> Option<Packet> {
        if let Some(p) = self.passing.get_mut(&next).and_then(VecDeque::pop_front) {
            return Some(p);
        }
        // The flows owed a combination on this link, in turn after the last served.
        let after = self.turn.get(&next).copied();
        let due = |(&f, b): (&u32, &FlowBuffer)| (b.next == next && !b.owed.is_empty()).then_some(f);
        let flow = self
            .flows
            .iter()
            .filter_map(due)
            .find(|&f| after.is_none_or(|a| f > a))
            .or_else(|| self.flows.iter().filter_map(due).next())?;
        self.turn.insert(next, flow);
        self.recode(flow)
    }

    fn poll_packet(&mut self, _now: Instant) -> Option<Packet> {
        self.to_ip.pop_front()
    }

    fn queue_len(&self, next: u32) -> usize {
        let owed: f64 = self.flows.values().filter(|b| b.next == next).flat_map(|b| b.owed.iter().map(|o| o.1)).sum();
        self.passing.get(&next).map_or(0, VecDeque::len) + owed.floor() as usize
    }
}
