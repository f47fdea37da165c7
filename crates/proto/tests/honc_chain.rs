//! TCP-HONC layers on the nodes of a chain, joined by lossy in-memory links
//! under virtual time: node 0 is the flows' ingress (it speaks to stand-in
//! TCP senders through spoofed ACKs), the last node is their destination,
//! or a gateway with a host behind a wired hop.

use ncmesh_proto::honc::{codec_pairs_ideal, Frame, Honc, HoncNode, HoncParams, FRAME_HEADER_BYTES};
use ncmesh_proto::node::NextHop;
use ncmesh_proto::packet::{Message, Parsers};
use ncmesh_proto::scheme::{FlowInfo, Registry, Scheme, TcpInfo};
use ncmesh_proto::tcp::{Flags, Segment, TcpConfig};
use ncmesh_proto::testing::mesh::{addr, LinkSpec, Mesh, MeshBuilder};
use ncmesh_proto::{Data, Duration, FlowKey, Instant, Packet, Payload};
use std::any::Any;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

const MSS: u32 = 1000;

/// A TCP sender reduced to what the ingress sees: in-order segments within
/// the window the spoofed ACKs advertise.
struct Source {
    flow: FlowKey,
    next: u32,
    acked: u32,
    window: u32,
    total: u32,
}

fn flow(f: usize, dst: usize) -> FlowKey {
    FlowKey { src: addr(0), dst: addr(dst), protocol: 6, src_port: 10_000 + f as u16, dst_port: 5001 }
}

/// The flows' TCP: ISN 0, a window that needs no scaling.
fn tcp() -> TcpConfig {
    TcpConfig { rcv_window: 60, mss: MSS, ..TcpConfig::default() }
}

struct Chain {
    mesh: Mesh,
    sources: Vec<Source>,
    /// The node whose host receives the flows.
    sink: usize,
}

struct Spec {
    hops: usize,
    link: LinkSpec,
    flows: usize,
    total: u32,
    params: HoncParams,
    seed: u64,
    real: bool,
    /// A host behind the last node, over a wired hop with this queue.
    gateway: Option<usize>,
    /// The flows' initial sequence number.
    isn: u32,
}

/// A coded hop of `rate` bit/s and `delay_ms`, losing `loss` of its frames
/// and delaying each by up to `jitter_ms` more.
fn lossy(rate: u64, delay_ms: u64, loss: f64, jitter_ms: u64) -> LinkSpec {
    LinkSpec {
        loss,
        jitter: Duration::from_millis(jitter_ms),
        queue: 50,
        ..LinkSpec::new(rate, Duration::from_millis(delay_ms))
    }
}

impl Spec {
    /// `hops` coded hops of `link`; `flows` flows of `total` bytes each.
    fn new(hops: usize, link: LinkSpec, flows: usize, total: u32, seed: u64) -> Spec {
        Spec { hops, link, flows, total, params: HoncParams::default(), seed, real: false, gateway: None, isn: 0 }
    }

    fn build(self) -> Chain {
        let nodes = self.hops + 1 + self.gateway.is_some() as usize;
        let sink = nodes - 1;
        let mut b = MeshBuilder::new(nodes);
        for i in 0..self.hops {
            b = b.link(i, i + 1, self.link);
        }
        if let Some(queue) = self.gateway {
            b = b.link(
                self.hops,
                sink,
                LinkSpec { queue, coded: false, ..LinkSpec::new(100_000_000, Duration::from_millis(1)) },
            );
        }
        b.flows = (0..self.flows)
            .map(|f| FlowInfo { key: flow(f, sink), tcp: Some(TcpInfo { config: tcp(), isn: self.isn }) })
            .collect();
        b.real_payloads = self.real;
        b.parsers = Registry::builtin().parsers().clone();
        let params = self.params;
        let mut mesh = b.build(self.seed, |_, ctx| Honc::hop_layer(&params, ctx));
        let path: Vec<usize> = (0..nodes).collect();
        let sources = (0..self.flows)
            .map(|f| {
                mesh.route(flow(f, sink), &path);
                let isn = self.isn;
                Source { flow: flow(f, sink), next: isn, acked: isn, window: MSS, total: isn.wrapping_add(self.total) }
            })
            .collect();
        Chain { mesh, sources, sink }
    }
}

impl Chain {
    fn run(&mut self, until: Instant) {
        self.run_each(until, |_| {});
    }

    /// Runs, calling `each` after every instant.
    fn run_each(&mut self, until: Instant, mut each: impl FnMut(&Mesh)) {
        let sources = &mut self.sources;
        self.mesh.run(until, |mesh| {
            // Spoofed ACKs reach the senders at the ingress.
            for (_, p) in mesh.delivered[0].drain(..) {
                let Payload::Tcp(ack) = &p.payload else { panic!("only spoofed ACKs reach the sender") };
                let src = sources.iter_mut().find(|s| s.flow.src_port == ack.dst_port).expect("a flow's ACK");
                src.acked = src.acked.max(ack.ack);
                src.window = ack.window as u32;
            }
            for src in sources.iter_mut() {
                while src.next < src.total && src.next + MSS <= src.acked + src.window {
                    let mut s = Segment::new(src.flow.src_port, src.flow.dst_port);
                    s.seq = src.next;
                    s.flags = Flags::ACK;
                    s.data = Data::Real((0..MSS).map(|i| (src.next + i) as u8).collect());
                    src.next += MSS;
                    mesh.send(0, Packet::new(src.flow.src, src.flow.dst, Payload::Tcp(s)));
                }
            }
            each(mesh);
        });
    }

    /// The sequence numbers the sink's host got, per flow, in order.
    fn delivered(&self) -> Vec<Vec<u32>> {
        let mut out = vec![Vec::new(); self.sources.len()];
        for (_, p) in &self.mesh.delivered[self.sink] {
            let Payload::Tcp(s) = &p.payload else { panic!("the flows are TCP") };
            let f = self.sources.iter().position(|src| src.flow.src_port == s.src_port).expect("a known flow");
            assert_eq!(s.data.bytes().map(|b| b[0]), Some(s.seq as u8), "real bytes arrive intact");
            out[f].push(s.seq);
        }
        out
    }

    fn honc(&self, n: usize) -> &HoncNode {
        (self.mesh.nodes[n].hop().expect("every node runs TCP-HONC") as &dyn Any)
            .downcast_ref()
            .expect("every node runs TCP-HONC")
    }
}

fn in_order_exactly_once(delivered: &[u32], total: u32) {
    let want: Vec<u32> = (0..total.div_ceil(MSS)).map(|k| k * MSS).collect();
    assert_eq!(delivered, &want[..]);
}

fn counter(h: &HoncNode, name: &str) -> u64 {
    use ncmesh_proto::node::HopLayer;
    h.counters().into_iter().find(|(n, _)| *n == name).map_or(0, |(_, v)| v)
}

#[test]
fn lossless_chain_delivers_everything_once_in_order() {
    let mut c = Spec::new(3, lossy(1_000_000, 100, 0.0, 0), 4, 200_000, 1).build();
    c.run(Instant::from_secs_f64(100.0));
    for f in c.delivered() {
        in_order_exactly_once(&f, 200_000);
    }
}

#[test]
fn lossy_reordering_chain_delivers_everything_once_in_order() {
    for (seed, real) in [(1, false), (2, false), (3, true)] {
        // Jitter of 30 ms against 8.5 ms frames: frames overtake each other.
        let mut c = Spec { real, ..Spec::new(3, lossy(1_000_000, 50, 0.3, 30), 3, 300_000, seed) }.build();
        c.run(Instant::from_secs_f64(400.0));
        for f in c.delivered() {
            in_order_exactly_once(&f, 300_000);
        }
        assert!(c.mesh.lost > 100, "the links lost only {}", c.mesh.lost);
        for n in 0..4 {
            assert_eq!(counter(c.honc(n), "malformed"), 0, "real = {real}: every decoded packet parses");
        }
    }
}

/// Flows whose sequence numbers start far from 0: the destination puts
/// packets back in order from each flow's own ISN.
#[test]
fn flows_are_resequenced_from_their_isn() {
    let isn = 3_000_000_000;
    let mut c = Spec { isn, ..Spec::new(2, lossy(1_000_000, 20, 0.2, 10), 2, 100_000, 8) }.build();
    c.run(Instant::from_secs_f64(200.0));
    for f in c.delivered() {
        let from_isn: Vec<u32> = f.iter().map(|s| s - isn).collect();
        in_order_exactly_once(&from_isn, 100_000);
    }
}

/// Condition (15)'s exception: a partial block goes once its oldest packet
/// has waited flush_after (0.2 s), not at some later event. One packet on a
/// 20 ms hop: formed at 0.2 s, it arrives 20 ms and a frame time (8.5 ms)
/// later; nothing else happens meanwhile that could form it.
#[test]
fn a_partial_block_leaves_when_flush_after_expires() {
    let mut c = Spec::new(1, lossy(1_000_000, 20, 0.0, 0), 1, MSS, 6).build();
    c.run(Instant::from_secs_f64(0.2 + 0.02));
    assert!(c.delivered()[0].is_empty(), "delivered before flush_after and the hop's delay");
    assert!(counter(c.honc(0), "held_by_queue") > 0, "(15) held the packet");
    c.run(Instant::from_secs_f64(0.2 + 0.02 + 0.0085 + 0.001));
    assert_eq!(c.delivered()[0], [0]);
}

fn is_ack(frame: &ncmesh_proto::Frame) -> bool {
    matches!(frame.as_message().and_then(|m| m.downcast_ref::<Frame>()), Some(Frame::Ack(_)))
}

#[test]
fn no_block_is_deleted_before_its_ack_ncb() {
    let mut c = Spec::new(1, lossy(1_000_000, 20, 0.0, 0), 1, 100_000, 5).build();
    let deaf = Rc::new(Cell::new(true));
    let d = deaf.clone();
    c.mesh.drop = Box::new(move |_, _, frame| d.get() && is_ack(frame));
    c.run(Instant::from_secs_f64(3.0));
    // The receiver decoded blocks, but with every ACK-NCB lost the sender
    // still holds each of them (B of them: it may start no more).
    let (_, b, in_use) = c.honc(0).codec_pairs(0).unwrap();
    assert!(counter(c.honc(1), "blocks_decoded") >= b as u64);
    assert_eq!(counter(c.honc(0), "blocks_acked"), 0);
    assert_eq!(in_use, b);
    assert!(counter(c.honc(0), "held_by_pairs") > 0, "(14) held packets back");
    for block in 0..b {
        assert!(c.honc(0).holds_block(0, block), "block {block} was dropped unacknowledged");
    }
    // Its timeouts keep probing; once ACK-NCBs get through, the blocks go and the transfer ends.
    assert!(counter(c.honc(0), "ack_timeouts") > 0);
    deaf.set(false);
    c.run(Instant::from_secs_f64(60.0));
    in_order_exactly_once(&c.delivered()[0], 100_000);
    assert!(!c.honc(0).holds_block(0, 0));
    assert_eq!(c.honc(0).codec_pairs(0).unwrap().2, 0);
}

#[test]
fn codec_pairs_follow_eq_9_without_loss() {
    // 1040-byte packets in 1060-byte frames, L = 4, 1 Mbit/s: 33.92 ms per block.
    // d = 100 ms: (200 + 33.92) / 33.92 = 6.9 -> 7. d = 50 ms: 3.95 -> 4.
    for (delay_ms, want) in [(100, 7), (50, 4)] {
        assert_eq!(codec_pairs_ideal(delay_ms as f64 / 1e3, ((1040 + FRAME_HEADER_BYTES) * 8) as f64, 4, 1e6), want);
        let mut c = Spec::new(2, lossy(1_000_000, delay_ms, 0.0, 0), 4, 400_000, 9).build();
        let mut most = 0;
        let mut pairs = None;
        c.run_each(Instant::from_secs_f64(30.0), |mesh| {
            let h: &HoncNode = (mesh.nodes[0].hop().expect("node 0 runs TCP-HONC") as &dyn Any).downcast_ref().unwrap();
            let (ideal, b, in_use) = h.codec_pairs(0).unwrap();
            most = most.max(in_use);
            pairs = Some((ideal, b));
        });
        // Without loss B = B' (eq. 11), and the ingress, never short of packets, uses all of them.
        assert_eq!(pairs, Some((want, want)), "d = {delay_ms} ms");
        assert_eq!(most, want, "d = {delay_ms} ms");
        for f in c.delivered() {
            in_order_exactly_once(&f, 400_000);
        }
    }
}

/// A source node 0 with two wireless next hops, 1 and 2, towards a
/// destination beyond them. Neighbour 1's ACK-NCBs never arrive (its
/// reverse link is jammed), so its pairs stay busy and its queue grows.
#[test]
fn path_selection_moves_traffic_off_a_congested_hop() {
    let params = HoncParams { spoof_window: 1000, ..HoncParams::default() };
    let link = LinkSpec::new(1_000_000, Duration::from_millis(10));
    let mut b = MeshBuilder::new(3).link(0, 1, link).link(0, 2, link);
    let key = FlowKey { src: addr(0), dst: addr(9), protocol: 6, src_port: 10_000, dst_port: 5001 };
    b.flows = vec![FlowInfo { key, tcp: Some(TcpInfo { config: tcp(), isn: 0 }) }];
    b.parsers = Arc::new(Parsers::default());
    let mut mesh = b.build(1, |_, ctx| Honc::hop_layer(&params, ctx));
    let hops = vec![
        NextHop { iface: mesh.iface_to(0, 1), neighbour: addr(1) },
        NextHop { iface: mesh.iface_to(0, 2), neighbour: addr(2) },
    ];
    mesh.nodes[0].routes_mut().add_flow(key, hops);
    mesh.drop = Box::new(|from, to, _| (from, to) == (1, 0));
    let mut seq = 0;
    let mut taken = Vec::new();
    let mut carried = (0, 0);
    mesh.run(Instant::from_secs_f64(30.0), |mesh| {
        // One packet every 12 ms: less than either hop carries.
        while (seq / MSS) as u64 * 12_000_000 <= mesh.now.0 && seq / MSS < 2500 {
            let mut s = Segment::new(key.src_port, key.dst_port);
            s.seq = seq;
            s.data = Data::Virtual { len: MSS, offset: seq as u64 };
            seq += MSS;
            mesh.send(0, Packet::new(key.src, key.dst, Payload::Tcp(s)));
            let now = (mesh.carried(0, 1), mesh.carried(0, 2));
            taken.push(now);
        }
        carried = (mesh.carried(0, 1), mesh.carried(0, 2));
    });
    let h: &HoncNode = (mesh.nodes[0].hop().expect("node 0 runs TCP-HONC") as &dyn Any).downcast_ref().unwrap();
    // Hop 1 fills: (14) stops it once its B pairs are unacknowledged ...
    let (_, b, in_use) = h.codec_pairs(mesh.iface_to(0, 1)).unwrap();
    assert_eq!(in_use, b);
    // ... and from then on eq. (16) sends (nearly) everything by hop 2: in
    // the second half of the run, hop 1 carries only timeout probes.
    let half = taken[taken.len() / 2];
    let (via_1, via_2) = (carried.0 - half.0, carried.1 - half.1);
    assert!(via_2 > 1000 && via_1 * 20 < via_2, "second half: {via_1} frames by hop 1, {via_2} by hop 2");
    assert!(
        h.cost(&key, mesh.now) < mesh.nodes[0].backlog(mesh.iface_to(0, 1)) as f64 / 100.0,
        "C_m^s follows the cheaper hop"
    );
}

#[test]
fn a_gateway_delivers_in_order_past_its_small_wired_queue() {
    // 3 flows of 101 packets: 303 is no multiple of L = 4, so the last block
    // leaves partial after flush_after. The wired FIFO holds 5 packets, far
    // fewer than a reordered burst: the gateway's Q_em must not lose any.
    let mut c = Spec { gateway: Some(5), ..Spec::new(2, lossy(1_000_000, 50, 0.3, 30), 3, 101_000, 11) }.build();
    c.run(Instant::from_secs_f64(300.0));
    for f in c.delivered() {
        in_order_exactly_once(&f, 101_000);
    }
    assert_eq!(counter(c.honc(2), "dropped"), 0);
    assert!(counter(c.honc(2), "blocks_decoded") > 0);
}

/// Eq. (1): L = max(N, l), N the flows active on the hop. Six flows share
/// one hop with l = 4: while all of them send, a block holds six packets.
#[test]
fn a_block_holds_a_packet_of_every_active_flow() {
    let mut c = Spec { real: true, ..Spec::new(1, lossy(1_000_000, 20, 0.0, 0), 6, 60_000, 4) }.build();
    let sizes = Rc::new(RefCell::new(Vec::new()));
    let s = sizes.clone();
    c.mesh.mangle = Some(Box::new(move |_, _, frame| {
        if let Some((kind, bytes)) = frame.as_bytes() {
            if kind == ncmesh_proto::honc::wire::KIND {
                if let Ok(Frame::Coded(coded)) = Frame::parse(bytes) {
                    s.borrow_mut().push(coded.size);
                }
            }
        }
    }));
    c.run(Instant::from_secs_f64(30.0));
    for f in c.delivered() {
        in_order_exactly_once(&f, 60_000);
    }
    let sizes = sizes.borrow();
    assert_eq!(sizes.iter().max(), Some(&6));
    // All but the tail's blocks: 6 x 60 packets make 60 full blocks.
    let full = sizes.iter().filter(|&&n| n == 6).count();
    assert!(full * 10 > sizes.len() * 9, "{full} of {} frames in blocks of 6", sizes.len());
}

/// Alg. 1 step 1: blocks take the flows' packets round robin. Six flows
/// always backlogged on a hop of l = 4: every block of six holds one
/// packet of each.
#[test]
fn blocks_take_the_flows_in_turn() {
    let mut c = Spec::new(1, lossy(1_000_000, 20, 0.0, 0), 6, 60_000, 4).build();
    let blocks = Rc::new(RefCell::new(Vec::new()));
    let seen = blocks.clone();
    c.mesh.drop = Box::new(move |_, _, frame| {
        if let Some(m) = frame.as_message() {
            if let Some(Frame::Coded(coded)) = m.downcast_ref::<Frame>() {
                if let ncmesh_proto::honc::wire::Symbol::Virtual { members, .. } = &coded.symbol {
                    let ports: Vec<u16> = members
                        .iter()
                        .map(|p| match &p.payload {
                            Payload::Tcp(s) => s.src_port,
                            _ => panic!("blocks hold the flows' segments"),
                        })
                        .collect();
                    seen.borrow_mut().push((coded.block, ports));
                }
            }
        }
        false
    });
    c.run(Instant::from_secs_f64(30.0));
    let blocks = blocks.borrow();
    let full: Vec<&Vec<u16>> = blocks.iter().filter(|(_, p)| p.len() == 6).map(|(_, p)| p).collect();
    assert!(full.len() > 50, "{} frames of full blocks", full.len());
    for ports in full {
        let mut sorted = ports.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 6, "a block of six holds a packet of each flow: {ports:?}");
    }
}

/// Condition (12): with blocks in flight, a hop whose next node reports a
/// backlog above (B - B' + 1) L forms no new block. A 1 Mbit/s hop feeds a
/// 250 kbit/s one twice what it carries, so node 1's backlog builds and
/// node 0 holds blocks back.
#[test]
fn a_hop_holds_blocks_back_while_the_next_node_is_backlogged() {
    let params = HoncParams { spoof_window: 1000, ..HoncParams::default() };
    let fast = LinkSpec::new(1_000_000, Duration::from_millis(10));
    let slow = LinkSpec::new(250_000, Duration::from_millis(10));
    let mut b = MeshBuilder::new(3).link(0, 1, fast).link(1, 2, slow);
    let key = flow(0, 2);
    b.flows = vec![FlowInfo { key, tcp: Some(TcpInfo { config: tcp(), isn: 0 }) }];
    b.parsers = Arc::new(Parsers::default());
    let mut mesh = b.build(1, |_, ctx| Honc::hop_layer(&params, ctx));
    mesh.route(key, &[0, 1, 2]);
    let mut seq = 0;
    mesh.run(Instant::from_secs_f64(20.0), |mesh| {
        // One packet every 15 ms: twice what the slow hop carries.
        while (seq / MSS) as u64 * 15_000_000 <= mesh.now.0 && seq / MSS < 1000 {
            let mut s = Segment::new(key.src_port, key.dst_port);
            s.seq = seq;
            s.data = Data::Virtual { len: MSS, offset: seq as u64 };
            seq += MSS;
            mesh.send(0, Packet::new(key.src, key.dst, Payload::Tcp(s)));
        }
    });
    let h: &HoncNode = (mesh.nodes[0].hop().expect("node 0 runs TCP-HONC") as &dyn Any).downcast_ref().unwrap();
    assert!(counter(h, "held_by_backlog") > 0, "(12) never held a block back");
}

#[test]
fn frames_are_what_the_wire_format_says() {
    // Every frame the chain sends, emitted, parses back to the same length.
    let mut c = Spec { real: true, ..Spec::new(2, lossy(1_000_000, 10, 0.1, 0), 1, 20_000, 3) }.build();
    let seen = Rc::new(Cell::new(0));
    let s = seen.clone();
    c.mesh.mangle = Some(Box::new(move |_, _, frame| {
        if let Some((kind, bytes)) = frame.as_bytes() {
            if kind == ncmesh_proto::honc::wire::KIND {
                let parsed = Frame::parse(bytes).expect("a HONC frame parses");
                assert_eq!(parsed.wire_len(), bytes.len());
                s.set(s.get() + 1);
            }
        }
    }));
    c.run(Instant::from_secs_f64(30.0));
    in_order_exactly_once(&c.delivered()[0], 20_000);
    assert!(seen.get() > 20);
}

/// Node 0 reaches node 3 through 1 or through 2. Hop (1, 3) goes dark from
/// 2 s to 5 s: node 1's backlog grows, the cost it piggybacks on its
/// ACK-NCBs rises, and node 0 moves the flow to node 2. Node 1 then gets
/// nothing more, so it reports nothing more: its last, high cost must lapse
/// for the flow to come back to a path that has long recovered.
#[test]
fn a_path_whose_cost_went_stale_is_used_again() {
    let params = HoncParams { spoof_window: 1000, ..HoncParams::default() };
    let link = LinkSpec::new(1_000_000, Duration::from_millis(10));
    let mut b = MeshBuilder::new(4).link(0, 1, link).link(0, 2, link).link(1, 3, link).link(2, 3, link);
    let key = FlowKey { src: addr(0), dst: addr(3), protocol: 6, src_port: 10_000, dst_port: 5001 };
    b.flows = vec![FlowInfo { key, tcp: Some(TcpInfo { config: tcp(), isn: 0 }) }];
    b.parsers = Arc::new(Parsers::default());
    let mut mesh = b.build(2, |_, ctx| Honc::hop_layer(&params, ctx));
    let hops = vec![
        NextHop { iface: mesh.iface_to(0, 1), neighbour: addr(1) },
        NextHop { iface: mesh.iface_to(0, 2), neighbour: addr(2) },
    ];
    mesh.nodes[0].routes_mut().add_flow(key, hops);
    for relay in [1, 2] {
        let iface = mesh.iface_to(relay, 3);
        mesh.nodes[relay].routes_mut().add_flow(key, vec![NextHop { iface, neighbour: addr(3) }]);
    }
    let dark = Rc::new(Cell::new(false));
    let d = dark.clone();
    mesh.drop = Box::new(move |from, to, _| d.get() && (from, to) == (1, 3));
    let mut seq = 0u32;
    let mut at_10s = None;
    mesh.run(Instant::from_secs_f64(20.0), |mesh| {
        dark.set((2.0..5.0).contains(&mesh.now.as_secs_f64()));
        // One packet every 12 ms: either hop alone carries it.
        while seq as u64 / MSS as u64 * 12_000_000 <= mesh.now.0 {
            let mut s = Segment::new(key.src_port, key.dst_port);
            s.seq = seq;
            s.data = Data::Virtual { len: MSS, offset: seq as u64 };
            seq += MSS;
            mesh.send(0, Packet::new(key.src, key.dst, Payload::Tcp(s)));
        }
        if at_10s.is_none() && mesh.now >= Instant::from_secs_f64(10.0) {
            at_10s = Some(mesh.carried(0, 1));
        }
    });
    let late = mesh.carried(0, 1) - at_10s.unwrap();
    // 10 s of one packet in 12 ms is 833 packets. With the stale cost held,
    // the hop through node 1 carries none of them; once it lapses, that hop
    // takes a share again (one in six packets, measured).
    assert!(late > 80, "only {late} frames through node 1 in the last 10 s");
}

#[test]
fn delay_and_loss_estimates_follow_eqs_18_and_19() {
    // Lossless: each ACK-NCB echoes the newest frame and how long it was held, so
    // eq. (19)'s sample is the propagation delay itself, and eq. (18) sees no loss.
    let mut c = Spec::new(1, lossy(1_000_000, 20, 0.0, 0), 1, 100_000, 5).build();
    c.run(Instant::from_secs_f64(10.0));
    let (loss, delay) = c.honc(0).estimates(0).unwrap();
    assert_eq!(loss, 0.0);
    assert!((delay - 0.020).abs() < 1e-6, "estimated d = {delay} s");
    // Three hops losing 30% of their frames: each sender's estimate, averaged
    // over the transfer, is that rate.
    let mut c = Spec::new(3, lossy(1_000_000, 20, 0.3, 0), 1, 400_000, 7).build();
    let mut sums = [0.0; 3];
    let mut samples = 0;
    c.run_each(Instant::from_secs_f64(60.0), |mesh| {
        if mesh.now < Instant::from_secs_f64(2.0) {
            return;
        }
        for (n, sum) in sums.iter_mut().enumerate() {
            let h: &HoncNode =
                (mesh.nodes[n].hop().expect("every node runs TCP-HONC") as &dyn Any).downcast_ref().unwrap();
            *sum += h.estimates(mesh.iface_to(n, n + 1)).unwrap().0;
        }
        samples += 1;
    });
    for (n, sum) in sums.iter().enumerate() {
        let mean = sum / samples as f64;
        assert!((mean - 0.3).abs() < 0.05, "hop {n}: mean estimate {mean}");
    }
}

/// The HONC frame a link frame carries, if any.
fn honc_frame(frame: &ncmesh_proto::Frame) -> Option<&Frame> {
    frame.as_message()?.downcast_ref::<Frame>()
}

/// 400 packets, 100 blocks or more, over one lossless hop, losing the first
/// `block_0` combinations of block 0 and the first ACK-NCBs that report the
/// blocks `acks` decoded; the sender's timeouts and the frames lost.
fn with_losses(block_0: u32, acks: &[u32]) -> (u64, u32) {
    let acks = acks.to_vec();
    let mut c = Spec::new(1, lossy(1_000_000, 20, 0.0, 0), 1, 400_000, 5).build();
    let lost = Rc::new(RefCell::new((0, Vec::new())));
    let l = lost.clone();
    c.mesh.drop = Box::new(move |_, _, frame| {
        let (of_0, acks_lost) = &mut *l.borrow_mut();
        match honc_frame(frame) {
            Some(Frame::Coded(coded)) if coded.block == 0 && *of_0 < block_0 => *of_0 += 1,
            Some(Frame::Ack(a)) if acks.contains(&a.block) && a.rank == 4 && !acks_lost.contains(&a.block) => {
                acks_lost.push(a.block)
            }
            _ => return false,
        }
        true
    });
    c.run(Instant::from_secs_f64(60.0));
    in_order_exactly_once(&c.delivered()[0], 400_000);
    let sender = c.honc(0);
    assert!(counter(sender, "blocks_formed") >= 100);
    assert_eq!(counter(sender, "blocks_acked"), counter(sender, "blocks_formed"));
    let (of_0, acks_lost) = &*lost.borrow();
    (counter(sender, "ack_timeouts"), of_0 + acks_lost.len() as u32)
}

#[test]
fn a_lost_ack_ncb_is_made_good_by_the_next_ones_cumulative_part() {
    // The ACK-NCBs after a lost one say that every block below a bound decoded
    // (1 and 40 here), and, by a mask, which of the 32 blocks above it did (1,
    // while block 0 waits for the combinations it lost): the blocks whose own
    // ACK-NCB was lost wait for no timeout of the sender.
    assert_eq!(with_losses(0, &[1, 40]), (0, 2));
    let (timeouts, dropped) = with_losses(6, &[]);
    assert_eq!(dropped, 6);
    assert_eq!(with_losses(6, &[1]), (timeouts, 7));
}
