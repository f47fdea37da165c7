//! The TCP-HONC layer of one node: Alg. 1 (sending) and Alg. 2 (receiving)
//! for every hop the node has.

use super::wire::{self, AckNcb, Coded, Symbol, ACK_BYTES, FRAME_HEADER_BYTES};
use super::{
    block_size, codec_pairs, codec_pairs_ideal, decoding_probability, earliest, first_round, path_cost, redundancy,
    select_next_hop, Ewma, HoncParams, PathCosts, Retransmit,
};
use crate::frame::{Frame, Receivers};
use crate::node::{HopLayer, IfaceId, Interface, NextHop};
use crate::packet::{FlowKey, Packet, Parsers, Payload};
use crate::scheme::HopContext;
use crate::tcp::{Flags, Segment, BASE_HEADER_BYTES};
use crate::time::{Duration, Instant};
use ncmesh_codec::coefficients;
use ncmesh_codec::prng::SplitMix64;
use ncmesh_codec::rlnc::{Decoder, Encoder, Received};
use ncmesh_codec::Field;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::net::Ipv4Addr;
use std::sync::Arc;

/// What a node knows of the link to one neighbour, from its configuration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkInfo {
    pub neighbour: Ipv4Addr,
    /// Coded hop (seed 000 codes wireless hops only) or plain FIFO.
    pub wireless: bool,
    pub capacity_bps: u64,
    pub delay: Duration,
    /// The configured loss rate, for diagnostics only: a node cannot know
    /// it, so the layer estimates its own (eq. 18) or takes `fixed_loss`.
    pub loss: f64,
    /// DropTail limit of the FIFO on a wired hop, packets.
    pub queue: u32,
}

/// Counters of one node's layer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeStats {
    pub blocks_formed: u64,
    pub blocks_acked: u64,
    pub blocks_decoded: u64,
    pub frames_sent: u64,
    /// Combinations sent after a block's first round (ACK-NCB with r < L, or sender timeout).
    pub frames_resent: u64,
    /// Sender timeouts: no ACK-NCB came back for a block.
    pub ack_timeouts: u64,
    /// Times a free link found no new block allowed by (14), by (12), or by (15).
    pub held_by_pairs: u64,
    pub held_by_backlog: u64,
    pub held_by_queue: u64,
    pub acks_sent: u64,
    pub spoofed_acks: u64,
    /// Real end-to-end TCP ACKs stopped where they would enter the coded region.
    pub swallowed_acks: u64,
    /// TCP retransmissions refused at the ingress because the data was already taken.
    pub duplicates: u64,
    /// Packets refused by a wired hop's FIFO.
    pub dropped: u64,
    /// Real-payload mode: decoded symbols that do not hold a valid packet (corruption).
    pub malformed: u64,
}

/// A block on its way over a hop, kept until its ACK-NCB reports full rank.
#[derive(Debug)]
struct SendBlock {
    id: u32,
    size: u32,
    /// With virtual payloads, the packets the combinations stand for.
    members: Option<Arc<[Packet]>>,
    /// Bytes of a coded symbol: the block's largest packet.
    symbol_len: usize,
    encoder: Encoder,
    /// N = round(R L) at formation: what a round sends, and what Alg. 2 step 5b subtracts r from.
    first_round: u32,
    /// Combinations still to put on the link (this block's share of Q_s).
    owed: u32,
    /// When the sender gives up waiting for an ACK-NCB and sends one more combination.
    deadline: Option<Instant>,
    backoff: u32,
    /// Hop sequence number of the latest combination sent: a rank report
    /// that has not seen it is stale.
    last_frame: u32,
}

/// A codec pair's decoding end.
#[derive(Debug)]
struct RecvBlock {
    decoder: Decoder,
    members: Option<Arc<[Packet]>>,
    /// Receiving Timer (k, i) of Alg. 1.
    deadline: Option<Instant>,
    /// The timer expired and no combination has come since.
    stalled: bool,
}

/// Both directions of this node's hop to one neighbour.
#[derive(Debug)]
struct Neighbour {
    link: LinkInfo,
    // Sending over (m, n).
    /// Q_e: per-flow buffers of original packets waiting for a block.
    queues: BTreeMap<FlowKey, VecDeque<(Instant, Packet)>>,
    queued: usize,
    /// The flow the last block's round robin ended on.
    turn: Option<FlowKey>,
    /// Codec pairs in use (B''), oldest block first.
    blocks: Vec<SendBlock>,
    /// The block whose round is being sent: a round goes out back to back, so
    /// that the receiver's timer sees no gap inside it.
    current: Option<u32>,
    next_block: u32,
    hop_seq: u32,
    /// When recent frames left, by hop sequence number, for delay samples.
    sent_log: VecDeque<(u32, Instant)>,
    /// Uncoded hop: the FIFO. Coded: packets that are not coded (UDP, ACKs).
    passing: VecDeque<Packet>,
    loss: Ewma,
    delay: Ewma,
    last_report: Option<(u32, u32)>,
    /// The neighbour's last reported backlog, eq. (12).
    backlog: u32,
    b_ideal: u32,
    b: u32,
    /// Flows seen on this hop and when, for N_mn of eq. (1).
    active: BTreeMap<FlowKey, Instant>,
    largest_packet: u32,
    // Receiving over (n, m).
    rx: BTreeMap<u32, RecvBlock>,
    finished_below: u32,
    finished: BTreeSet<u32>,
    /// ACK-NCBs to send back: (block, rank, backlog to report).
    acks: VecDeque<(u32, u8, u32)>,
    /// The backlog last reported to this neighbour.
    reported: u32,
    rx_count: u32,
    rx_newest: u32,
    rx_newest_at: Instant,
    /// Delta T of Alg. 1: the smoothed gap between frames from this neighbour, seconds.
    gap: Ewma,
    last_arrival: Option<Instant>,
}

impl Neighbour {
    fn new(link: LinkInfo, params: &HoncParams) -> Neighbour {
        let mut n = Neighbour {
            link,
            queues: BTreeMap::new(),
            queued: 0,
            turn: None,
            blocks: Vec::new(),
            current: None,
            next_block: 0,
            hop_seq: 0,
            sent_log: VecDeque::new(),
            passing: VecDeque::new(),
            loss: Ewma { value: 0.0, alpha: params.alpha },
            delay: Ewma { value: link.delay.as_secs_f64(), alpha: params.alpha },
            last_report: None,
            backlog: 0,
            b_ideal: 1,
            b: 1,
            active: BTreeMap::new(),
            largest_packet: 1000 + BASE_HEADER_BYTES,
            rx: BTreeMap::new(),
            finished_below: 0,
            finished: BTreeSet::new(),
            acks: VecDeque::new(),
            reported: 0,
            rx_count: 0,
            rx_newest: 0,
            rx_newest_at: Instant::ZERO,
            gap: Ewma { value: 0.0, alpha: params.alpha },
            last_arrival: None,
        };
        n.gap.value = n.frame_time().as_secs_f64();
        n.recompute(params, params.l);
        n
    }

    fn frame_bits(&self) -> f64 {
        ((self.largest_packet + FRAME_HEADER_BYTES) * 8) as f64
    }

    fn frame_time(&self) -> Duration {
        Duration::transmission((self.largest_packet + FRAME_HEADER_BYTES) as u64, self.link.capacity_bps)
    }

    fn loss_estimate(&self, params: &HoncParams) -> f64 {
        params.fixed_loss.unwrap_or(self.loss.value)
    }

    /// Q_e + Q_s of this hop, in packets.
    fn backlog_here(&self) -> u32 {
        (self.queued + self.passing.len()) as u32 + self.blocks.iter().map(|b| b.owed).sum::<u32>()
    }

    /// Eqs. (9)-(11) from the current estimates.
    fn recompute(&mut self, params: &HoncParams, size: u32) {
        let d = params.fixed_delay.unwrap_or(self.delay.value);
        self.b_ideal = codec_pairs_ideal(d, self.frame_bits(), size, self.link.capacity_bps as f64)
            .min(params.max_codec_pairs.max(1));
        let p = self.loss_estimate(params);
        let n = first_round(redundancy(p), size, params.rounding);
        self.b =
            codec_pairs(self.b_ideal, decoding_probability(p, size, n), params.p_th, params.max_codec_pairs.max(1));
    }

    fn is_finished(&self, block: u32) -> bool {
        block < self.finished_below || self.finished.contains(&block)
    }

    fn finish(&mut self, block: u32) {
        self.finished.insert(block);
        while self.finished.remove(&self.finished_below) {
            self.finished_below += 1;
        }
    }

    fn queue_ack(&mut self, block: u32, rank: u8, backlog: u32) {
        match self.acks.iter_mut().find(|(b, _, _)| *b == block) {
            Some(entry) => entry.1 = entry.1.max(rank),
            None => self.acks.push_back((block, rank, backlog)),
        }
    }

    fn finished_mask(&self) -> u32 {
        (0..32).filter(|k| self.finished.contains(&(self.finished_below + 1 + k))).fold(0, |m, k| m | 1 << k)
    }

    /// How long the sender waits for an ACK-NCB after a round: the round
    /// trip, the receiver's timer (Delta T L, with Delta T at most two frame
    /// times) and a round's worth of slack.
    fn ack_timeout(&self, size: u32, backoff: u32) -> Duration {
        let tx = self.frame_time();
        let base = self.delay.value.max(self.link.delay.as_secs_f64()) * 2.0;
        let wait = Duration::from_secs_f64(base) + tx.saturating_mul(4 * size as u64 + 4);
        wait.saturating_mul(1 << backoff.min(4))
    }
}

/// What the layer keeps per flow.
#[derive(Debug, Default)]
struct FlowState {
    /// Packets of the flow reached this node coded: it is not the flow's ingress.
    decoded_here: bool,
    ingress: Option<Ingress>,
    /// The neighbour (interface) the flow's data last left by.
    next: Option<IfaceId>,
    /// N_s(m) of eq. (16), as routing last offered it: empty where the
    /// flow has one next hop.
    candidates: Vec<IfaceId>,
    /// Packets this node has chosen a next hop for, to take turns among ties.
    choices: u32,
    /// Q_em: decoded packets wait here until they are in sequence: the next
    /// sequence number due, its offset in the stream, and what waits by offset.
    expected: u32,
    expected_offset: u64,
    waiting: BTreeMap<u64, Packet>,
    /// The window scale the flow's receiver announced, for spoofed ACKs.
    window_scale: u8,
}

/// The ingress side of Fig. 4: what has been taken from the TCP sender.
#[derive(Debug)]
struct Ingress {
    /// End of the contiguous data taken; every spoofed ACK acknowledges it.
    accepted: u32,
    mss: u32,
    next: IfaceId,
    /// The last (ack, window) advertised, to skip redundant updates.
    advertised: (u32, u32),
}

/// Q_em: releases the data segment `packet` into `out` once every earlier
/// byte of its flow has been, dropping what was already released.
fn resequence(state: &mut FlowState, packet: Packet, out: &mut VecDeque<Packet>) {
    let Payload::Tcp(segment) = &packet.payload else {
        out.push_back(packet);
        return;
    };
    let ahead = segment.seq.wrapping_sub(state.expected) as i32;
    if ahead < 0 {
        return;
    }
    if ahead > 0 {
        state.waiting.insert(state.expected_offset + ahead as u64, packet);
        return;
    }
    let mut packet = packet;
    loop {
        let len = match &packet.payload {
            Payload::Tcp(s) => s.len(),
            _ => 0,
        };
        state.expected = state.expected.wrapping_add(len);
        state.expected_offset += len as u64;
        out.push_back(packet);
        match state.waiting.first_entry() {
            Some(entry) if *entry.key() == state.expected_offset => packet = entry.remove(),
            _ => break,
        }
    }
}

/// The TCP-HONC layer of one node. Sans-IO: drive it through [`HopLayer`].
#[derive(Debug)]
pub struct HoncNode {
    params: HoncParams,
    addr: Ipv4Addr,
    real_payloads: bool,
    parsers: Arc<Parsers>,
    field: Field,
    rng: SplitMix64,
    /// One per interface: seed 000's hops are point to point.
    neighbours: Vec<Neighbour>,
    /// What the flows' handshakes settled: the initial sequence number and
    /// the receiver's window scale, by flow.
    tcp: BTreeMap<FlowKey, (u32, u8)>,
    flows: BTreeMap<FlowKey, FlowState>,
    to_ip: VecDeque<Packet>,
    costs: PathCosts,
    stats: NodeStats,
    scratch: Vec<u8>,
    /// The last `handle_timeout`: partial-block deadlines already served are not reported again.
    last_wake: Option<Instant>,
}

/// How long a flow counts towards N_mn after its last packet on a hop.
const ACTIVE_FOR: Duration = Duration::from_secs(1);
/// The block of an ACK-NCB that only refreshes the piggybacked fields.
const UPDATE_ONLY: u32 = u32::MAX;
/// Frames whose send time is kept for delay samples.
const SENT_LOG: usize = 4096;

impl HoncNode {
    /// The layer of the node `ctx` describes: one neighbour per interface,
    /// a coded hop where the interface is coded, a FIFO elsewhere.
    pub fn new(params: &HoncParams, ctx: &HopContext<'_>) -> HoncNode {
        let links = ctx.interfaces.iter().map(|i| LinkInfo {
            neighbour: i.neighbours.first().copied().unwrap_or(Ipv4Addr::UNSPECIFIED),
            wireless: i.coded,
            capacity_bps: i.capacity_bps,
            delay: i.delay,
            loss: i.loss,
            queue: i.queue as u32,
        });
        HoncNode {
            addr: ctx.addr,
            real_payloads: ctx.real_payloads,
            parsers: ctx.parsers.clone(),
            field: Field::new(8).expect("GF(2^8) exists"),
            rng: SplitMix64::new(ctx.seed),
            neighbours: links.map(|l| Neighbour::new(l, params)).collect(),
            tcp: ctx
                .flows
                .iter()
                .filter_map(|f| Some((f.key, (f.tcp.as_ref()?.isn, f.tcp.as_ref()?.config.window_scale()))))
                .collect(),
            params: params.clone(),
            flows: BTreeMap::new(),
            to_ip: VecDeque::new(),
            costs: PathCosts::default(),
            stats: NodeStats::default(),
            scratch: Vec::new(),
            last_wake: None,
        }
    }

    pub fn stats(&self) -> NodeStats {
        self.stats
    }

    /// (B'_mn, B_mn, B''_mn) towards the neighbour on interface `next`.
    pub fn codec_pairs(&self, next: IfaceId) -> Option<(u32, u32, u32)> {
        let n = self.neighbours.get(next)?;
        Some((n.b_ideal, n.b, n.blocks.len() as u32))
    }

    /// The estimated loss rate and propagation delay (seconds) towards `next`, eqs. (18)-(19).
    pub fn estimates(&self, next: IfaceId) -> Option<(f64, f64)> {
        let n = self.neighbours.get(next)?;
        Some((n.loss_estimate(&self.params), self.params.fixed_delay.unwrap_or(n.delay.value)))
    }

    /// Whether block `block` towards `next` is still held (not yet acknowledged).
    pub fn holds_block(&self, next: IfaceId, block: u32) -> bool {
        self.neighbours.get(next).is_some_and(|n| n.blocks.iter().any(|b| b.id == block))
    }

    /// Eq. (16): the next hop among the interfaces `candidates` for `flow`.
    /// Pure: the node reaches it through [`HopLayer::choose_next_hop`],
    /// which also remembers the candidates for eq. (17).
    pub fn best_next_hop(&self, flow: &FlowKey, candidates: &[IfaceId], now: Instant) -> Option<IfaceId> {
        let terms: Vec<(u32, f64)> =
            candidates.iter().filter_map(|&c| Some((c as u32, self.hop_cost(flow, c, now)?))).collect();
        select_next_hop(&terms).map(|(n, _)| n as IfaceId)
    }

    /// Eq. (17): C_m^s through n(s), the cheapest of the flow's next hops
    /// (its only one, where it has one); zero where the coded region ends
    /// (a wired next hop or none).
    pub fn cost(&self, flow: &FlowKey, now: Instant) -> f64 {
        let Some(state) = self.flows.get(flow) else {
            return 0.0;
        };
        // Candidates recorded for the flow's ACKs (where the node only sees
        // them) do not count: its data leaves by one of the forward ones.
        if state.next.is_some_and(|n| state.candidates.contains(&n)) {
            let terms: Vec<(u32, f64)> =
                state.candidates.iter().filter_map(|&c| Some((c as u32, self.hop_cost(flow, c, now)?))).collect();
            return select_next_hop(&terms).map_or(0.0, |(_, c)| c);
        }
        state.next.and_then(|n| self.hop_cost(flow, n, now)).unwrap_or(0.0)
    }

    fn hop_cost(&self, flow: &FlowKey, next: IfaceId, now: Instant) -> Option<f64> {
        let n = self.neighbours.get(next)?;
        if !n.link.wireless {
            return Some(0.0);
        }
        let pps = n.link.capacity_bps as f64 / n.frame_bits();
        Some(path_cost(
            n.backlog_here(),
            pps,
            n.loss_estimate(&self.params),
            self.costs.downstream(next as u32, flow.id(), now),
        ))
    }

    /// The left side of eq. (12) as this node reports it to `except`: its
    /// backlog on every other hop.
    fn backlog_except(&self, except: usize) -> u32 {
        self.neighbours.iter().enumerate().filter(|&(i, _)| i != except).map(|(_, n)| n.backlog_here()).sum()
    }

    /// Backlog reports go out with ACK-NCBs, which stop when (12) stops the
    /// upstream sender: once the backlog has fallen by half a block since the
    /// last report, a fresh one is sent on its own, or the upstream hop would
    /// wait on a stale value.
    fn refresh_reports(&mut self, sent_on: usize) {
        for j in 0..self.neighbours.len() {
            let n = &self.neighbours[j];
            if j == sent_on || !n.link.wireless || n.rx_count == 0 || !n.acks.is_empty() || n.reported <= self.params.l
            {
                continue;
            }
            if self.backlog_except(j) + (self.params.l / 2).max(1) <= n.reported {
                self.neighbours[j].queue_ack(UPDATE_ONLY, 0, u32::MAX);
            }
        }
    }

    /// Fig. 4: acknowledge everything taken from the flow's sender, and open
    /// its window by the room left in the flow's buffer.
    fn spoof(&mut self, flow: FlowKey, force: bool) {
        let Some(state) = self.flows.get_mut(&flow) else {
            return;
        };
        let Some(ing) = state.ingress.as_mut() else {
            return;
        };
        // The flow's buffer is Q_e over every next hop eq. (16) spreads it
        // on, and each of them needs a block's worth to code without waiting
        // for flush_after: the window is spoof_window per next hop.
        let hops = if state.candidates.contains(&ing.next) { state.candidates.len() as u32 } else { 1 };
        let held = self.neighbours.iter().filter_map(|n| n.queues.get(&flow)).map(VecDeque::len).sum::<usize>() as u32;
        let room = (self.params.spoof_window * hops).saturating_sub(held) * ing.mss;
        if !force && ing.advertised == (ing.accepted, room) {
            return;
        }
        ing.advertised = (ing.accepted, room);
        self.stats.spoofed_acks += 1;
        let mut ack = Segment::new(flow.dst_port, flow.src_port);
        ack.ack = ing.accepted;
        ack.flags = Flags::ACK;
        ack.window = (room >> state.window_scale).min(u16::MAX as u32) as u16;
        self.to_ip.push_back(Packet::new(flow.dst, flow.src, Payload::Tcp(ack)));
    }

    /// The flow's state, started with what its handshake settled.
    fn flow_state(&mut self, flow: FlowKey) -> &mut FlowState {
        let tcp = &self.tcp;
        self.flows.entry(flow).or_insert_with(|| {
            let (isn, window_scale) = tcp.get(&flow).copied().unwrap_or((0, 0));
            FlowState { expected: isn, window_scale, ..FlowState::default() }
        })
    }

    /// A TCP data packet for a wireless next hop: Alg. 2 step 2.
    fn take_data(&mut self, now: Instant, i: usize, flow: FlowKey, packet: Packet, segment: &Segment) {
        let isn = self.tcp.get(&flow).map_or(segment.seq, |t| t.0);
        let state = self.flow_state(flow);
        state.next = Some(i);
        let ingress = !state.decoded_here;
        if ingress {
            let ing = state.ingress.get_or_insert(Ingress {
                accepted: isn,
                mss: segment.len(),
                next: i,
                advertised: (isn, 0),
            });
            ing.next = i;
            ing.mss = ing.mss.max(segment.len());
            if segment.seq != ing.accepted {
                // A retransmission of data already taken (or data beyond a gap,
                // which an in-order sender never makes): remind the sender.
                self.stats.duplicates += 1;
                self.spoof(flow, true);
                return;
            }
            ing.accepted = segment.end();
        }
        let n = &mut self.neighbours[i];
        n.largest_packet = n.largest_packet.max(packet.wire_len() as u32);
        n.active.insert(flow, now);
        n.queues.entry(flow).or_default().push_back((now, packet));
        n.queued += 1;
        if ingress {
            self.spoof(flow, false);
        }
    }

    /// Conditions (12)-(15) and, when they hold, a new block from the
    /// per-flow buffers, picked round robin (Alg. 1 step 1).
    fn form_block(&mut self, now: Instant, i: usize) -> Option<usize> {
        let params = &self.params;
        let n = &mut self.neighbours[i];
        if n.queued == 0 {
            return None;
        }
        n.active.retain(|_, t| now.saturating_since(*t) <= ACTIVE_FOR);
        let size = block_size(n.active.len() as u32, params.l);
        n.recompute(params, size);
        // (14), and (12) unless no block is in flight: with nothing in flight
        // no ACK-NCB can come to refresh a stale backlog.
        if n.blocks.len() as u32 >= n.b {
            self.stats.held_by_pairs += 1;
            return None;
        }
        if !n.blocks.is_empty() && n.backlog > (n.b - n.b_ideal + 1) * size {
            self.stats.held_by_backlog += 1;
            return None;
        }
        // (15), or a partial block whose oldest packet has waited flush_after.
        if (n.queued as u32) < size {
            let oldest = n.queues.values().filter_map(|q| q.front().map(|(t, _)| *t)).min()?;
            if now.saturating_since(oldest).as_secs_f64() < params.flush_after {
                self.stats.held_by_queue += 1;
                return None;
            }
        }
        let take = size.min(n.queued as u32) as usize;
        let mut members = Vec::with_capacity(take);
        let mut touched = Vec::new();
        while members.len() < take {
            let after = n.turn;
            let flow = n
                .queues
                .iter()
                .filter(|(_, q)| !q.is_empty())
                .map(|(&f, _)| f)
                .find(|&f| after.is_none_or(|a| f > a))
                .or_else(|| n.queues.iter().find(|(_, q)| !q.is_empty()).map(|(&f, _)| f))?;
            let (_, p) = n.queues.get_mut(&flow).and_then(VecDeque::pop_front)?;
            n.queued -= 1;
            n.turn = Some(flow);
            members.push(p);
            if !touched.contains(&flow) {
                touched.push(flow);
            }
        }
        // A symbol is a whole IP packet, padded with zeros to the block's largest.
        let symbol_len = members.iter().map(Packet::wire_len).max().unwrap_or(0);
        let mut encoder = Encoder::new(self.field, take, if self.real_payloads { symbol_len } else { 0 })
            .expect("a block of 1..=L packets");
        if self.real_payloads {
            let mut buf = vec![0; symbol_len];
            for (k, p) in members.iter().enumerate() {
                buf.fill(0);
                // A member that cannot be emitted (a bug) codes as zeros and
                // fails to parse where it decodes.
                let _ = p.emit_into(&mut buf[..p.wire_len()]);
                encoder.set_symbol(k, &buf).expect("one symbol");
            }
        }
        let p = n.loss_estimate(params);
        let rounds = first_round(redundancy(p), take as u32, params.rounding);
        let id = n.next_block;
        n.next_block = n.next_block.wrapping_add(1);
        n.blocks.push(SendBlock {
            id,
            size: take as u32,
            members: (!self.real_payloads).then(|| members.into()),
            symbol_len,
            encoder,
            first_round: rounds,
            owed: rounds,
            deadline: None,
            backoff: 0,
            last_frame: 0,
        });
        self.stats.blocks_formed += 1;
        let index = n.blocks.len() - 1;
        for flow in touched {
            self.spoof(flow, false);
        }
        Some(index)
    }

    /// The next combination of block `b` towards neighbour `i`.
    fn combination(&mut self, now: Instant, i: usize, b: usize) -> Frame {
        let seed = self.rng.next_u64();
        let n = &mut self.neighbours[i];
        let timeout = n.ack_timeout(n.blocks[b].size, n.blocks[b].backoff);
        let block = &mut n.blocks[b];
        let size = block.size as usize;
        self.scratch.resize(size, 0);
        let mut payload = vec![0; block.encoder.symbol_bytes()];
        block.encoder.encode_seeded(seed, &mut self.scratch[..size], &mut payload).expect("shapes match the encoder");
        block.owed -= 1;
        n.current = (block.owed > 0).then_some(block.id);
        if block.owed == 0 {
            block.deadline = Some(now + timeout);
        }
        block.last_frame = n.hop_seq;
        let symbol = match &block.members {
            Some(members) => Symbol::Virtual { len: block.symbol_len, members: members.clone() },
            None => Symbol::Real(payload),
        };
        let frame = Coded { block: block.id, size: block.size as u8, hop_seq: n.hop_seq, seed, symbol };
        n.sent_log.push_back((n.hop_seq, now));
        if n.sent_log.len() > SENT_LOG {
            n.sent_log.pop_front();
        }
        n.hop_seq = n.hop_seq.wrapping_add(1);
        self.stats.frames_sent += 1;
        Frame::message(Receivers::One(n.link.neighbour), Box::new(wire::Frame::Coded(frame)))
    }

    /// Alg. 2 step 4: a combination from neighbour `i`.
    fn receive_coded(&mut self, now: Instant, i: usize, c: Coded) {
        let field = self.field;
        let n = &mut self.neighbours[i];
        n.rx_count = n.rx_count.wrapping_add(1);
        n.rx_newest = c.hop_seq;
        n.rx_newest_at = now;
        let tx = n.frame_time().as_secs_f64();
        if let Some(last) = n.last_arrival {
            // Idle periods are not packet spacing: cap the sample.
            n.gap.update(now.saturating_since(last).as_secs_f64().clamp(tx, 2.0 * tx));
        }
        n.last_arrival = Some(now);
        let size = c.size as usize;
        if n.is_finished(c.block) {
            // Its ACK-NCB was lost: say again that it decoded.
            let backlog = self.backlog_except(i);
            self.neighbours[i].queue_ack(c.block, size as u8, backlog);
            return;
        }
        let backlog = self.backlog_except(i);
        let n = &mut self.neighbours[i];
        let (symbol_bytes, payload, members) = match &c.symbol {
            Symbol::Real(bytes) => (bytes.len(), &bytes[..], None),
            Symbol::Virtual { members, .. } => (0, &[][..], Some(members.clone())),
        };
        let entry = n.rx.entry(c.block).or_insert_with(|| RecvBlock {
            decoder: Decoder::new(field, size, symbol_bytes).expect("a block of 1..=L packets"),
            members,
            deadline: None,
            stalled: false,
        });
        entry.stalled = false;
        self.scratch.resize(size, 0);
        coefficients::generate(field, c.seed, &mut self.scratch[..size]);
        let outcome = entry.decoder.consume(&self.scratch[..size], payload).unwrap_or(Received::NotInnovative);
        if outcome != Received::Complete {
            let wait = Duration::from_secs_f64(n.gap.value.max(tx) * size as f64);
            entry.deadline = Some(now + wait);
            return;
        }
        let mut done = n.rx.remove(&c.block).expect("just inserted");
        n.finish(c.block);
        n.queue_ack(c.block, size as u8, backlog);
        self.stats.blocks_decoded += 1;
        // Real symbols hold whole IP packets, each with its own length;
        // virtual ones stand for the packets the block's frames carried.
        let decoded: Vec<Packet> = match done.members.take() {
            Some(members) => members.to_vec(),
            None => (0..size)
                .filter_map(|k| {
                    let bytes = done.decoder.symbol(k).unwrap_or(&[]);
                    let for_us = bytes.get(16..20).is_some_and(|d| d == self.addr.octets());
                    let parsed = Packet::parse(bytes, &self.parsers, for_us);
                    self.stats.malformed += parsed.is_err() as u64;
                    parsed.ok()
                })
                .collect(),
        };
        for p in decoded {
            self.release(p);
        }
    }

    /// Hands IP a decoded packet. Transit nodes pass packets on in the
    /// order blocks decode; only where a flow leaves the coded region (its
    /// destination here, or a wired next hop in `handle_forward`) is it put
    /// back in sequence (Q_em), so a block waiting for a retransmission does
    /// not hold up the blocks behind it at every hop.
    fn release(&mut self, packet: Packet) {
        let Some(flow) = data_flow(&packet) else {
            return self.to_ip.push_back(packet);
        };
        let local = packet.dst == self.addr;
        let state = self.flow_state(flow);
        state.decoded_here = true;
        if local && is_data(&packet) {
            let state = self.flows.get_mut(&flow).expect("just made");
            resequence(state, packet, &mut self.to_ip);
        } else {
            self.to_ip.push_back(packet);
        }
    }

    /// Alg. 2 step 5: an ACK-NCB from neighbour `i`.
    fn receive_ack(&mut self, now: Instant, i: usize, a: AckNcb) {
        let params = &self.params;
        for &(flow, cost) in &a.costs {
            self.costs.report(i as u32, flow, cost as f64, now);
        }
        let n = &mut self.neighbours[i];
        // Eq. (18): p_this = 1 - r/s over the frames sent since the last report,
        // up to the newest one the receiver has seen (later ones may be in flight).
        // A report always ends on a received frame, so a short span is biased
        // towards no loss: a sample waits until it spans 2 l frames.
        let (sent, got) = match n.last_report {
            Some((newest, received)) => (a.newest.wrapping_sub(newest), a.received.wrapping_sub(received)),
            None => (a.newest.wrapping_add(1), a.received),
        };
        if sent >= 2 * params.l && sent < 1 << 30 {
            // The newest frame is in the span because it arrived: leave it out.
            n.loss.update((1.0 - (got as f64 - 1.0) / (sent as f64 - 1.0)).clamp(0.0, 1.0));
            n.last_report = Some((a.newest, a.received));
        }
        // Eq. (19), with d_this from the echo of the newest frame.
        if let Some(&(_, at)) = n.sent_log.iter().rev().find(|(s, _)| *s == a.newest) {
            let rtt = now.saturating_since(at) - a.hold - n.frame_time();
            let ack_time = Duration::transmission(ACK_BYTES as u64, n.link.capacity_bps);
            n.delay.update((rtt - ack_time).as_secs_f64() / 2.0);
        }
        n.backlog = a.backlog;
        // Step 5a: free the pairs of decoded blocks (B''--).
        let (below, mask) = (a.finished_below, a.finished_mask);
        let decoded = |id: u32| {
            let ahead = id.wrapping_sub(below);
            ahead >= 1 << 31 || (1..=32).contains(&ahead) && mask & (1 << (ahead - 1)) != 0
        };
        let before = n.blocks.len();
        n.blocks.retain(|b| !(decoded(b.id) || b.id == a.block && a.rank as u32 >= b.size));
        self.stats.blocks_acked += (before - n.blocks.len()) as u64;
        if n.current.is_some_and(|c| !n.blocks.iter().any(|b| b.id == c)) {
            n.current = None;
        }
        // Step 5b for the block that triggered this ACK-NCB and every other stalled one.
        let r = redundancy(n.loss_estimate(params));
        for &(id, rank) in std::iter::once(&(a.block, a.rank)).chain(&a.stalled) {
            let Some(block) = n.blocks.iter_mut().find(|b| b.id == id) else {
                continue;
            };
            // Only a report that has seen the block's latest combination asks for
            // more: an older one (or the same one twice) would buy the gap twice.
            if rank as u32 >= block.size || block.owed > 0 || a.newest.wrapping_sub(block.last_frame) >= 1 << 31 {
                continue;
            }
            let more = match params.retransmit {
                Retransmit::Paper => block.first_round.saturating_sub(rank as u32),
                Retransmit::Deficit => first_round(r, block.size - rank as u32, params.rounding),
            }
            .max(1);
            block.owed += more;
            block.deadline = None;
            block.backoff = 0;
            self.stats.frames_resent += more as u64;
        }
    }

    fn ack_frame(&mut self, now: Instant, i: usize, block: u32, rank: u8, backlog: u32) -> Frame {
        let backlog = if backlog == u32::MAX { self.backlog_except(i) } else { backlog };
        let flows: Vec<FlowKey> =
            self.flows.iter().filter(|(_, s)| s.next.is_some_and(|n| n != i)).map(|(&f, _)| f).collect();
        let costs: Vec<(u32, f32)> = flows.into_iter().map(|f| (f.id(), self.cost(&f, now) as f32)).collect();
        self.neighbours[i].reported = backlog;
        let n = &self.neighbours[i];
        let stalled: Vec<(u32, u8)> =
            n.rx.iter()
                .filter(|(&id, r)| r.stalled && id != block)
                .map(|(&id, r)| (id, r.decoder.rank() as u8))
                .collect();
        let ack = AckNcb {
            block,
            rank,
            received: n.rx_count,
            newest: n.rx_newest,
            hold: now.saturating_since(n.rx_newest_at),
            backlog,
            finished_below: n.finished_below,
            finished_mask: n.finished_mask(),
            stalled,
            costs,
        };
        self.stats.acks_sent += 1;
        Frame::message(Receivers::One(n.link.neighbour), Box::new(wire::Frame::Ack(ack)))
    }

    fn stat_counters(&self) -> Vec<(&'static str, u64)> {
        let s = self.stats;
        vec![
            ("blocks_formed", s.blocks_formed),
            ("blocks_acked", s.blocks_acked),
            ("blocks_decoded", s.blocks_decoded),
            ("frames_sent", s.frames_sent),
            ("frames_resent", s.frames_resent),
            ("ack_timeouts", s.ack_timeouts),
            ("held_by_pairs", s.held_by_pairs),
            ("held_by_backlog", s.held_by_backlog),
            ("held_by_queue", s.held_by_queue),
            ("acks_sent", s.acks_sent),
            ("spoofed_acks", s.spoofed_acks),
            ("swallowed_acks", s.swallowed_acks),
            ("duplicates", s.duplicates),
            ("dropped", s.dropped),
            ("malformed", s.malformed),
        ]
    }
}

/// The flow a packet's data belongs to: a pure TCP ACK belongs to the flow
/// in the other direction.
fn data_flow(packet: &Packet) -> Option<FlowKey> {
    let flow = packet.flow()?;
    Some(if is_data(packet) || !matches!(packet.payload, Payload::Tcp(_)) { flow } else { flow.reversed() })
}

/// A segment that only acknowledges: no data, no SYN, FIN or RST.
fn is_pure_ack(segment: &Segment) -> bool {
    segment.is_empty() && segment.flags.0 & (Flags::SYN.0 | Flags::FIN.0 | Flags::RST.0) == 0
}

/// A TCP segment with data.
fn is_data(packet: &Packet) -> bool {
    matches!(&packet.payload, Payload::Tcp(s) if !s.is_empty())
}

impl HopLayer for HoncNode {
    fn handle_forward(&mut self, now: Instant, packet: Packet, next: NextHop, _iface: &mut Interface) {
        let i = next.iface;
        let wireless = self.neighbours[i].link.wireless;
        let flow = data_flow(&packet);
        match (&packet.payload, flow) {
            (Payload::Tcp(segment), Some(flow)) if wireless && !segment.is_empty() => {
                let segment = segment.clone();
                self.take_data(now, i, flow, packet, &segment);
            }
            (Payload::Tcp(segment), _) if wireless && is_pure_ack(segment) => {
                // Alg. 2 step 3: the sender already has its spoofed ACKs, and
                // HONC delivers reliably hop by hop: the real ACK ends here.
                // SYNs and FINs are the ends' to settle and pass below.
                self.stats.swallowed_acks += 1;
            }
            _ => {
                // Decoded packets leaving the coded region are the gateway's
                // Q_em: HONC has already delivered them reliably and the
                // sender will not resend them, so they are never dropped.
                // Anything else meets the hop's DropTail limit.
                if let Some(state) =
                    flow.and_then(|f| self.flows.get_mut(&f)).filter(|f| f.decoded_here && is_data(&packet))
                {
                    resequence(state, packet, &mut self.neighbours[i].passing);
                    return;
                }
                let n = &mut self.neighbours[i];
                if n.passing.len() >= n.link.queue as usize {
                    self.stats.dropped += 1;
                } else {
                    n.passing.push_back(packet);
                }
            }
        }
    }

    /// HONC frames are the layer's; an IP packet joins the decoded ones on
    /// their way to IP, in the order they came.
    fn handle_frame(&mut self, now: Instant, iface: IfaceId, frame: Frame, addressed: bool) -> Option<Frame> {
        let frame = match frame.into_message::<wire::Frame>() {
            Ok(f) => {
                match *f {
                    wire::Frame::Coded(c) => self.receive_coded(now, iface, c),
                    wire::Frame::Ack(a) => self.receive_ack(now, iface, a),
                }
                return None;
            }
            Err(frame) => frame,
        };
        match frame.into_packet() {
            Ok(p) if addressed => self.to_ip.push_back(p),
            Ok(_) => {}
            Err(frame) => return Some(frame),
        }
        None
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.last_wake = Some(now);
        for n in &mut self.neighbours {
            for b in &mut n.blocks {
                if b.deadline.is_some_and(|t| t <= now) {
                    // No ACK-NCB came back: one more combination, whose arrival
                    // makes the receiver report (or re-acknowledge) the block.
                    b.deadline = None;
                    b.owed += 1;
                    b.backoff += 1;
                    self.stats.frames_resent += 1;
                    self.stats.ack_timeouts += 1;
                }
            }
            let mut fired = Vec::new();
            for (&id, r) in &mut n.rx {
                if r.deadline.is_some_and(|t| t <= now) {
                    r.deadline = None;
                    r.stalled = true;
                    fired.push((id, r.decoder.rank() as u8));
                }
            }
            for (id, rank) in fired {
                n.queue_ack(id, rank, u32::MAX);
            }
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let mut next = None;
        for n in &self.neighbours {
            for b in &n.blocks {
                next = earliest(next, b.deadline);
            }
            for r in n.rx.values() {
                next = earliest(next, r.deadline);
            }
            if n.queued > 0 && n.link.wireless {
                let oldest = n.queues.values().filter_map(|q| q.front().map(|(t, _)| *t)).min();
                let flush = oldest.map(|t| t + Duration::from_secs_f64(self.params.flush_after));
                next = earliest(next, flush.filter(|&t| self.last_wake.is_none_or(|w| t > w)));
            }
        }
        next
    }

    fn holds_frames(&self) -> bool {
        true
    }

    fn poll_frame(&mut self, now: Instant, i: IfaceId, _iface: &mut Interface) -> Option<Frame> {
        if let Some((block, rank, backlog)) = self.neighbours[i].acks.pop_front() {
            return Some(self.ack_frame(now, i, block, rank, backlog));
        }
        let n = &mut self.neighbours[i];
        if let Some(p) = n.passing.pop_front() {
            return Some(Frame::packet(n.link.neighbour, p));
        }
        if !n.link.wireless {
            return None;
        }
        let owing = n
            .current
            .and_then(|c| n.blocks.iter().position(|b| b.id == c && b.owed > 0))
            .or_else(|| n.blocks.iter().position(|b| b.owed > 0));
        // (13): a new block only when no combination is waiting to be sent.
        let b = match owing {
            Some(b) => b,
            None => self.form_block(now, i)?,
        };
        let frame = self.combination(now, i, b);
        self.refresh_reports(i);
        Some(frame)
    }

    fn poll_packet(&mut self, _now: Instant) -> Option<Packet> {
        self.to_ip.pop_front()
    }

    /// Eq. (16) per packet, as Alg. 2 step 2 does: the flows' decoded
    /// packets are put back in sequence where they leave the coded region,
    /// so TCP never sees the reordering that spreading them causes.
    /// Ties, common while the queues are empty, are taken in turn: sending
    /// them all to routing's first candidate would keep each flow mostly on
    /// the path its flow number picks, and the flows on the busier one slower.
    fn choose_next_hop(&mut self, now: Instant, packet: &Packet, candidates: &[NextHop]) -> Option<usize> {
        let flow = data_flow(packet)?;
        let candidates: Vec<IfaceId> = candidates.iter().map(|c| c.iface).collect();
        let state = self.flow_state(flow);
        if state.candidates != candidates {
            state.candidates = candidates.clone();
        }
        let turn = state.choices as usize;
        state.choices = state.choices.wrapping_add(1);
        let terms: Vec<(u32, f64)> =
            candidates.iter().filter_map(|&c| Some((c as u32, self.hop_cost(&flow, c, now)?))).collect();
        let (_, best) = select_next_hop(&terms)?;
        let tied: Vec<u32> = terms.iter().filter(|&&(_, c)| c <= best).map(|&(n, _)| n).collect();
        let chosen = tied[turn % tied.len()] as IfaceId;
        candidates.iter().position(|&c| c == chosen)
    }

    fn held(&self, id: IfaceId) -> usize {
        self.neighbours.get(id).map_or(0, |n| n.backlog_here() as usize)
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        self.stat_counters()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 1 Mbit/s hop of 20 ms.
    fn neighbour() -> Neighbour {
        let link = LinkInfo {
            neighbour: Ipv4Addr::new(10, 0, 0, 2),
            wireless: true,
            capacity_bps: 1_000_000,
            delay: Duration::from_millis(20),
            loss: 0.0,
            queue: 50,
        };
        Neighbour::new(link, &HoncParams::default())
    }

    /// The receiver's record of decoded blocks, as ACK-NCBs carry it: every
    /// block below `finished_below`, and the 32 above it by a mask whose
    /// bit k - 1 is block `finished_below + k`.
    #[test]
    fn finished_blocks_are_a_bound_and_a_mask_above_it() {
        let mut n = neighbour();
        assert!(!n.is_finished(0));
        assert_eq!((n.finished_below, n.finished_mask()), (0, 0));
        for block in [0, 2, 3, 33] {
            n.finish(block);
        }
        let finished: Vec<u32> = (0..40).filter(|&b| n.is_finished(b)).collect();
        assert_eq!(finished, [0, 2, 3, 33]);
        // Bound 1; blocks 2 and 3 are 1 and 2 above it, block 33 is 32 above.
        assert_eq!(n.finished_below, 1);
        assert_eq!(n.finished_mask(), 0b11 | 1 << 31);
        // Block 1 closes the gap: the bound passes every contiguous block.
        n.finish(1);
        assert_eq!((n.finished_below, n.finished_mask()), (4, 1 << 28));
        let finished: Vec<u32> = (0..40).filter(|&b| n.is_finished(b)).collect();
        assert_eq!(finished, [0, 1, 2, 3, 33]);
        // Finishing a block again changes nothing.
        n.finish(2);
        assert_eq!((n.finished_below, n.finished_mask()), (4, 1 << 28));
    }

    /// Twice the hop delay, plus 4 L + 4 frame times, doubled per backoff
    /// up to 16 times; a delay estimate above the link's own stretches it.
    #[test]
    fn the_ack_timeout_is_the_round_trip_and_the_receivers_wait() {
        let mut n = neighbour();
        let frame_s = f64::from((1000 + BASE_HEADER_BYTES + FRAME_HEADER_BYTES) * 8) / 1e6;
        let want = |delay_s: f64, size: u32, factor: f64| (2.0 * delay_s + frame_s * f64::from(4 * size + 4)) * factor;
        for (size, backoff, factor) in [(4, 0, 1.0), (4, 1, 2.0), (10, 3, 8.0), (10, 4, 16.0), (10, 9, 16.0)] {
            let got = n.ack_timeout(size, backoff).as_secs_f64();
            assert!((got - want(0.02, size, factor)).abs() < 1e-6, "L = {size}, backoff {backoff}: {got}");
        }
        n.delay.value = 0.05;
        assert!((n.ack_timeout(4, 0).as_secs_f64() - want(0.05, 4, 1.0)).abs() < 1e-6);
        n.delay.value = 0.01;
        assert!((n.ack_timeout(4, 0).as_secs_f64() - want(0.02, 4, 1.0)).abs() < 1e-6, "never below the link's delay");
    }
}
