//! Hop-by-hop TCP/NC: every node recodes each flow's combinations before
//! they leave it, with a redundancy matched to the outgoing link.

use super::wire::{self, Coding, Combination, Symbol};
use super::TcpNcParams;
use crate::frame::Frame;
use crate::node::{HopLayer, IfaceId, Interface, NextHop};
use crate::packet::{FlowKey, Packet, Payload};
use crate::scheme::HopContext;
use crate::tcp::Segment;
use crate::time::Instant;
use ncmesh_codec::prng::SplitMix64;
use ncmesh_codec::rlnc::sliding::SlidingDecoder;
use ncmesh_codec::rlnc::Received;
use ncmesh_codec::Field;
use std::collections::{BTreeMap, VecDeque};
use std::net::Ipv4Addr;
use std::sync::Arc;

/// What a relay holds of one flow.
#[derive(Debug)]
struct FlowBuffer {
    decoder: SlidingDecoder,
    /// With virtual payloads, the segments from packet `meta_base` on.
    meta: VecDeque<Option<Segment>>,
    meta_base: u64,
    next: NextHop,
    /// Recoded combinations owed to the next hop, oldest first: the pivot of
    /// the innovative combination that earned them and how many.
    owed: VecDeque<(u64, f64)>,
    /// The fraction of a transmission left over from paid debts, carried to
    /// the next one so that R = 1.2 sends one extra combination in five.
    carry: f64,
    symbol_len: usize,
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
    real_payloads: bool,
    rng: SplitMix64,
    /// R towards each interface, and whether it codes at all.
    redundancy: Vec<f64>,
    coded: Vec<bool>,
    flows: BTreeMap<FlowKey, FlowBuffer>,
    /// Everything that is not recoded (ACKs) waits here, per interface.
    passing: Vec<VecDeque<(Ipv4Addr, Packet)>>,
    /// Round-robin position among flows, per interface.
    turn: Vec<Option<FlowKey>>,
    /// Packets that arrived, on their way to IP in the order they came.
    to_ip: VecDeque<Packet>,
}

impl Relay {
    pub fn new(params: &TcpNcParams, ctx: &HopContext<'_>) -> Relay {
        let n = ctx.interfaces.len();
        Relay {
            field: Field::new(params.field).expect("checked parameters"),
            params: *params,
            real_payloads: ctx.real_payloads,
            rng: SplitMix64::new(ctx.seed),
            redundancy: ctx.interfaces.iter().map(|i| params.redundancy_for(i.loss)).collect(),
            coded: ctx.interfaces.iter().map(|i| i.coded).collect(),
            flows: BTreeMap::new(),
            passing: (0..n).map(|_| VecDeque::new()).collect(),
            turn: vec![None; n],
            to_ip: VecDeque::new(),
        }
    }

    fn absorb(&mut self, next: NextHop, flow: FlowKey, c: &Combination) {
        let field = self.field;
        let symbol_bytes = if self.real_payloads { c.symbol.len() } else { 0 };
        let buffer = self.flows.entry(flow).or_insert_with(|| FlowBuffer {
            decoder: SlidingDecoder::new(field, symbol_bytes).expect("checked parameters"),
            meta: VecDeque::new(),
            meta_base: c.start,
            next,
            owed: VecDeque::new(),
            carry: 0.0,
            symbol_len: c.symbol.len(),
            upstream_start: c.start,
        });
        buffer.next = next;
        buffer.upstream_start = buffer.upstream_start.max(c.start);
        buffer.prune();
        if let Symbol::Virtual { members: segments, .. } = &c.symbol {
            for (k, s) in segments.iter().enumerate() {
                let Some(slot) = (c.start + k as u64).checked_sub(buffer.meta_base) else { continue };
                if buffer.meta.len() <= slot as usize {
                    buffer.meta.resize(slot as usize + 1, None);
                }
                buffer.meta[slot as usize].get_or_insert_with(|| s.clone());
            }
        }
        let innovative =
            buffer.decoder.consume(c.start, &c.coefficients, c.symbol.bytes()).unwrap_or(Received::NotInnovative)
                == Received::Innovative;
        // An innovative combination earns R transmissions on the next link.
        // One that is not innovative here earns a single one: upstream sends
        // such redundancy when the sink is short (a TCP retransmission is
        // the sign), and a relay that already holds everything must pass the
        // need on, or the sink's shortfall would never close.
        let r = if innovative { self.redundancy[next.iface] } else { 1.0 };
        if !innovative && !self.params.pass_on_shortfall {
            return;
        }
        // A full relay buffer drops the oldest debt: those packets are
        // the likeliest to be covered by later combinations.
        if buffer.owed.len() >= self.params.relay_queue as usize {
            buffer.owed.pop_front();
        }
        let credit = r + std::mem::take(&mut buffer.carry);
        let pivot = if innovative {
            buffer.decoder.last_pivot()
        } else {
            buffer.owed.back().map_or(buffer.decoder.last_pivot(), |d| d.0)
        };
        buffer.owed.push_back((pivot, credit));
    }

    fn recode(&mut self, flow: FlowKey) -> Option<Frame> {
        let real = self.real_payloads;
        let b = self.flows.get_mut(&flow)?;
        let mut coefficients = Vec::new();
        let mut payload = vec![0; if real { b.symbol_len } else { 0 }];
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
        let symbol = if real {
            Symbol::Real(payload)
        } else {
            let segments: Option<Arc<[Segment]>> = (0..coefficients.len() as u64)
                .map(|k| (start + k).checked_sub(b.meta_base).and_then(|s| b.meta.get(s as usize).cloned().flatten()))
                .collect();
            Symbol::Virtual { len: b.symbol_len, members: segments? }
        };
        let c = Combination {
            src_port: flow.src_port,
            dst_port: flow.dst_port,
            field: self.field,
            start,
            coefficients,
            coding: Coding::Dense,
            symbol,
        };
        Some(Frame::packet(b.next.neighbour, wire::packet(flow.src, flow.dst, Box::new(c))))
    }
}

impl HopLayer for Relay {
    fn handle_forward(&mut self, _now: Instant, packet: Packet, next: NextHop, _iface: &mut Interface) {
        if let (Payload::Other(m), Some(flow), true) = (&packet.payload, packet.flow(), self.coded[next.iface]) {
            if let Some(c) = m.downcast_ref::<Combination>() {
                return self.absorb(next, flow, c);
            }
        }
        let queue = &mut self.passing[next.iface];
        if queue.len() < self.params.relay_queue as usize {
            queue.push_back((next.neighbour, packet));
        }
    }

    fn handle_frame(&mut self, _now: Instant, _iface: IfaceId, frame: Frame, addressed: bool) -> Option<Frame> {
        match frame.into_packet() {
            Ok(p) if addressed => self.to_ip.push_back(p),
            Ok(_) => {}
            Err(frame) => return Some(frame),
        }
        None
    }

    fn poll_packet(&mut self, _now: Instant) -> Option<Packet> {
        self.to_ip.pop_front()
    }

    fn holds_frames(&self) -> bool {
        true
    }

    fn poll_frame(&mut self, _now: Instant, id: IfaceId, _iface: &mut Interface) -> Option<Frame> {
        if let Some((next, p)) = self.passing[id].pop_front() {
            return Some(Frame::packet(next, p));
        }
        // The flows owed a combination on this interface, in turn after the last served.
        let after = self.turn[id];
        let due = |(&f, b): (&FlowKey, &FlowBuffer)| (b.next.iface == id && !b.owed.is_empty()).then_some(f);
        let flow = self
            .flows
            .iter()
            .filter_map(due)
            .find(|&f| after.is_none_or(|a| f > a))
            .or_else(|| self.flows.iter().filter_map(due).next())?;
        self.turn[id] = Some(flow);
        self.recode(flow)
    }

    fn held(&self, id: IfaceId) -> usize {
        let owed: f64 =
            self.flows.values().filter(|b| b.next.iface == id).flat_map(|b| b.owed.iter().map(|o| o.1)).sum();
        self.passing[id].len() + owed.floor() as usize
    }
}
