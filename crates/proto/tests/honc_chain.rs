//! TCP-HONC layers in a chain, joined by lossy one-way pipes under virtual
//! time: node 0 is the flows' ingress (it speaks to a stand-in TCP sender
//! through spoofed ACKs), the last node is their destination.

use ncmesh_proto::honc::{
    codec_pairs_ideal, Frame, HoncNode, HoncParams, LinkInfo, FRAME_HEADER_BYTES,
};
use ncmesh_proto::tcp::Segment;
use ncmesh_proto::testing::SplitMix64;
use ncmesh_proto::{Body, Direction, Duration, HopLayer, Instant, Packet};
use std::cell::Cell;
use std::rc::Rc;

const MSS: u32 = 1000;

/// One direction of a hop: serialisation at `rate`, then `delay` plus up to
/// `jitter` (which reorders), lost with probability `loss`.
struct Pipe {
    from: usize,
    to: usize,
    rate: u64,
    delay: Duration,
    jitter: Duration,
    loss: f64,
    busy_until: Instant,
    in_flight: Vec<(Instant, Packet)>,
}

/// A TCP sender reduced to what the ingress sees: in-order segments within
/// the window the spoofed ACKs advertise.
struct Source {
    next: u64,
    acked: u64,
    window: u64,
    total: u64,
}

/// Decides, for a frame from one node to another, whether the pipe loses it.
pub type DropHook = Box<dyn FnMut(usize, usize, &Packet) -> bool>;

#[allow(missing_debug_implementations)]
pub struct Chain {
    pub nodes: Vec<HoncNode>,
    pipes: Vec<Pipe>,
    sources: Vec<Source>,
    rng: SplitMix64,
    pub now: Instant,
    /// Sequence numbers delivered at the last node, per flow, in delivery order.
    pub delivered: Vec<Vec<u64>>,
    /// Frames taken off each pipe by loss.
    pub lost: u64,
    /// Hook run on every frame before it enters a pipe; `true` drops it.
    pub drop: DropHook,
    gateway: bool,
}

impl Chain {
    /// `hops` wireless hops of `rate` bit/s and `delay`, each way losing `loss`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        hops: usize,
        rate: u64,
        delay: Duration,
        loss: f64,
        jitter: Duration,
        flows: usize,
        total: u64,
        params: &HoncParams,
        seed: u64,
    ) -> Chain {
        Chain::build(
            hops, rate, delay, loss, jitter, flows, total, params, seed, false,
        )
    }

    /// As [`Chain::new`], but the last node is a gateway: the flows leave it
    /// over a wired hop (a FIFO of 5 packets) to a host behind it.
    #[allow(clippy::too_many_arguments)]
    pub fn with_gateway(
        hops: usize,
        rate: u64,
        delay: Duration,
        loss: f64,
        jitter: Duration,
        flows: usize,
        total: u64,
        params: &HoncParams,
        seed: u64,
    ) -> Chain {
        Chain::build(
            hops, rate, delay, loss, jitter, flows, total, params, seed, true,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn build(
        hops: usize,
        rate: u64,
        delay: Duration,
        loss: f64,
        jitter: Duration,
        flows: usize,
        total: u64,
        params: &HoncParams,
        seed: u64,
        gateway: bool,
    ) -> Chain {
        let mut nodes = Vec::new();
        for i in 0..=hops {
            let mut links = Vec::new();
            for j in [i.wrapping_sub(1), i + 1] {
                if j <= hops {
                    links.push(LinkInfo {
                        neighbour: j as u32,
                        wireless: true,
                        capacity_bps: rate,
                        delay,
                        loss,
                        queue: 50,
                    });
                }
            }
            if i == hops && gateway {
                links.push(LinkInfo {
                    neighbour: i as u32 + 1,
                    wireless: false,
                    capacity_bps: 100_000_000,
                    delay: Duration::from_millis(1),
                    loss: 0.0,
                    queue: 5,
                });
            }
            let local: Vec<u32> = if i == hops && !gateway {
                (0..flows as u32).collect()
            } else {
                vec![]
            };
            nodes.push(HoncNode::new(
                params,
                links,
                local,
                seed ^ ((i as u64 + 1) * 0x9E37),
            ));
        }
        let mut pipes = Vec::new();
        for i in 0..hops {
            for (from, to) in [(i, i + 1), (i + 1, i)] {
                pipes.push(Pipe {
                    from,
                    to,
                    rate,
                    delay,
                    jitter,
                    loss,
                    busy_until: Instant::ZERO,
                    in_flight: Vec::new(),
                });
            }
        }
        let sources = (0..flows)
            .map(|_| Source {
                next: 0,
                acked: 0,
                window: MSS as u64,
                total,
            })
            .collect();
        Chain {
            nodes,
            pipes,
            sources,
            rng: SplitMix64(seed),
            now: Instant::ZERO,
            delivered: vec![Vec::new(); flows],
            lost: 0,
            drop: Box::new(|_, _, _| false),
            gateway,
        }
    }

    fn settle(&mut self) {
        let now = self.now;
        let last = self.nodes.len() - 1;
        loop {
            let mut progress = false;
            // Arrivals.
            for p in 0..self.pipes.len() {
                let (from, to) = (self.pipes[p].from, self.pipes[p].to);
                let mut k = 0;
                while k < self.pipes[p].in_flight.len() {
                    if self.pipes[p].in_flight[k].0 <= now {
                        let (_, frame) = self.pipes[p].in_flight.remove(k);
                        self.nodes[to].handle_frame(now, from as u32, frame);
                        progress = true;
                    } else {
                        k += 1;
                    }
                }
            }
            // Timers.
            for n in &mut self.nodes {
                if n.poll_timeout().is_some_and(|t| t <= now) {
                    n.handle_timeout(now);
                    progress = true;
                }
            }
            // IP at every node.
            for i in 0..self.nodes.len() {
                while let Some(p) = self.nodes[i].poll_packet(now) {
                    progress = true;
                    let Body::Tcp(s) = &p.body else {
                        panic!("only TCP leaves a layer")
                    };
                    match p.direction {
                        Direction::Forward if i == last && !self.gateway => {
                            self.delivered[p.flow as usize].push(s.seq)
                        }
                        Direction::Forward => self.nodes[i].handle_forward(now, i as u32 + 1, p),
                        Direction::Reverse => {
                            assert_eq!(i, 0, "spoofed ACKs come from the ingress only");
                            let src = &mut self.sources[p.flow as usize];
                            src.acked = src.acked.max(s.ack);
                            src.window = s.window as u64;
                        }
                    }
                }
            }
            // The stand-in TCP senders.
            for (f, src) in self.sources.iter_mut().enumerate() {
                while src.next < src.total && src.next + MSS as u64 <= src.acked + src.window {
                    let seg = Segment::data(src.next, MSS, now);
                    src.next += MSS as u64;
                    self.nodes[0].handle_forward(
                        now,
                        1,
                        Packet {
                            flow: f as u32,
                            direction: Direction::Forward,
                            bytes: seg.wire_bytes(),
                            body: Body::Tcp(seg),
                        },
                    );
                    progress = true;
                }
            }
            // The wired hop behind a gateway is fast enough to take everything at once.
            if self.gateway {
                while let Some(p) = self.nodes[last].poll_frame(now, last as u32 + 1) {
                    let Body::Tcp(s) = &p.body else {
                        panic!("a wired hop carries TCP")
                    };
                    self.delivered[p.flow as usize].push(s.seq);
                    progress = true;
                }
            }
            // Idle links take a frame.
            for p in 0..self.pipes.len() {
                let pipe = &self.pipes[p];
                if pipe.busy_until > now {
                    continue;
                }
                let (from, to) = (pipe.from, pipe.to);
                let Some(frame) = self.nodes[from].poll_frame(now, to as u32) else {
                    continue;
                };
                progress = true;
                let pipe = &mut self.pipes[p];
                let done = now + Duration::transmission(frame.bytes as u64, pipe.rate);
                pipe.busy_until = done;
                let jitter = Duration((self.rng.next_f64() * pipe.jitter.0 as f64) as u64);
                let lost = self.rng.next_f64() < pipe.loss || (self.drop)(from, to, &frame);
                if lost {
                    self.lost += 1;
                } else {
                    pipe.in_flight.push((done + pipe.delay + jitter, frame));
                }
            }
            if !progress {
                break;
            }
        }
    }

    fn next_event(&self) -> Option<Instant> {
        let mut t: Option<Instant> = None;
        let mut consider = |x: Instant| t = Some(t.map_or(x, |y: Instant| y.min(x)));
        for p in &self.pipes {
            if p.busy_until > self.now {
                consider(p.busy_until);
            }
            for (at, _) in &p.in_flight {
                consider(*at);
            }
        }
        for n in &self.nodes {
            if let Some(at) = n.poll_timeout() {
                consider(at.max(self.now));
            }
        }
        t
    }

    /// Runs until `until` or until nothing is left to happen.
    pub fn run(&mut self, until: Instant) {
        loop {
            self.settle();
            match self.next_event() {
                Some(t) if t <= until => self.now = t.max(self.now),
                _ => break,
            }
        }
    }

    pub fn run_steps(&mut self, until: Instant, mut each: impl FnMut(&Chain)) {
        loop {
            self.settle();
            each(self);
            match self.next_event() {
                Some(t) if t <= until => self.now = t.max(self.now),
                _ => break,
            }
        }
    }
}

fn in_order_exactly_once(delivered: &[u64], total: u64) {
    let want: Vec<u64> = (0..total.div_ceil(MSS as u64))
        .map(|k| k * MSS as u64)
        .collect();
    assert_eq!(delivered, &want[..]);
}

#[test]
fn lossless_chain_delivers_everything_once_in_order() {
    let params = HoncParams::default();
    let mut c = Chain::new(
        3,
        1_000_000,
        Duration::from_millis(100),
        0.0,
        Duration::ZERO,
        4,
        200_000,
        &params,
        1,
    );
    c.run(Instant::from_secs_f64(100.0));
    for f in &c.delivered {
        in_order_exactly_once(f, 200_000);
    }
}

#[test]
fn lossy_reordering_chain_delivers_everything_once_in_order() {
    for (seed, real) in [(1, false), (2, false), (3, true)] {
        let params = HoncParams {
            real_payloads: real,
            ..HoncParams::default()
        };
        // Jitter of 30 ms against 8.5 ms frames: frames overtake each other.
        let mut c = Chain::new(
            3,
            1_000_000,
            Duration::from_millis(50),
            0.3,
            Duration::from_millis(30),
            3,
            300_000,
            &params,
            seed,
        );
        c.run(Instant::from_secs_f64(400.0));
        for f in &c.delivered {
            in_order_exactly_once(f, 300_000);
        }
        assert!(c.lost > 100, "the pipes lost only {}", c.lost);
        for n in &c.nodes {
            assert_eq!(n.stats().payload_mismatches, 0);
        }
    }
}

fn is_ack(frame: &Packet) -> bool {
    matches!(&frame.body, Body::Honc(f) if matches!(**f, Frame::Ack(_)))
}

#[test]
fn no_block_is_deleted_before_its_ack_ncb() {
    let params = HoncParams::default();
    let mut c = Chain::new(
        1,
        1_000_000,
        Duration::from_millis(20),
        0.0,
        Duration::ZERO,
        1,
        100_000,
        &params,
        5,
    );
    let deaf = Rc::new(Cell::new(true));
    let d = deaf.clone();
    c.drop = Box::new(move |_, _, frame| d.get() && is_ack(frame));
    c.run(Instant::from_secs_f64(3.0));
    // The receiver decoded blocks, but with every ACK-NCB lost the sender
    // still holds each of them (B of them: it may start no more).
    let (_, b, in_use) = c.nodes[0].codec_pairs(1).unwrap();
    assert!(
        c.nodes[1].stats().blocks_decoded >= b as u64,
        "{:?}",
        c.nodes[1].stats()
    );
    assert_eq!(c.nodes[0].stats().blocks_acked, 0);
    assert_eq!(in_use, b);
    for block in 0..b {
        assert!(
            c.nodes[0].holds_block(1, block),
            "block {block} was dropped unacknowledged"
        );
    }
    // Its timeouts keep probing; once ACK-NCBs get through, the blocks go and the transfer ends.
    assert!(c.nodes[0].stats().ack_timeouts > 0);
    deaf.set(false);
    c.run(Instant::from_secs_f64(60.0));
    in_order_exactly_once(&c.delivered[0], 100_000);
    assert!(!c.nodes[0].holds_block(1, 0));
    assert_eq!(c.nodes[0].codec_pairs(1).unwrap().2, 0);
}

#[test]
fn codec_pairs_follow_eq_9_without_loss() {
    // 1040-byte packets in 1060-byte frames, L = 4, 1 Mbit/s: 33.92 ms per block.
    // d = 100 ms: (200 + 33.92) / 33.92 = 6.9 -> 7. d = 50 ms: 3.95 -> 4.
    for (delay_ms, want) in [(100, 7), (50, 4)] {
        assert_eq!(
            codec_pairs_ideal(
                delay_ms as f64 / 1e3,
                ((1040 + FRAME_HEADER_BYTES) * 8) as f64,
                4,
                1e6
            ),
            want
        );
        let params = HoncParams::default();
        let mut c = Chain::new(
            2,
            1_000_000,
            Duration::from_millis(delay_ms),
            0.0,
            Duration::ZERO,
            4,
            400_000,
            &params,
            9,
        );
        let mut most = 0;
        let mut pairs = None;
        c.run_steps(Instant::from_secs_f64(30.0), |c| {
            let (ideal, b, in_use) = c.nodes[0].codec_pairs(1).unwrap();
            most = most.max(in_use);
            pairs = Some((ideal, b));
        });
        // Without loss B = B' (eq. 11), and the ingress, never short of packets, uses all of them.
        assert_eq!(pairs, Some((want, want)), "d = {delay_ms} ms");
        assert_eq!(most, want, "d = {delay_ms} ms");
        for f in &c.delivered {
            in_order_exactly_once(f, 400_000);
        }
    }
}

/// A source node 0 with two wireless next hops, 1 and 2, towards the same
/// destination. Neighbour 1's ACK-NCBs never arrive (its reverse channel is
/// jammed), so its pairs stay busy and its queue grows.
#[test]
fn path_selection_moves_traffic_off_a_congested_hop() {
    let params = HoncParams {
        spoof_window: 1000,
        ..HoncParams::default()
    };
    let link = |n| LinkInfo {
        neighbour: n,
        wireless: true,
        capacity_bps: 1_000_000,
        delay: Duration::from_millis(10),
        loss: 0.0,
        queue: 50,
    };
    let mut source = HoncNode::new(&params, vec![link(1), link(2)], [], 1);
    let mut relays = [
        HoncNode::new(&params, vec![link(0)], [], 2),
        HoncNode::new(&params, vec![link(0)], [], 3),
    ];
    let step = Duration::from_millis(1);
    let mut now = Instant::ZERO;
    let mut in_flight: Vec<(Instant, usize, usize, Packet)> = Vec::new(); // (arrival, from, to, frame)
    let mut busy = [[Instant::ZERO; 3]; 3];
    let mut choices = Vec::new();
    let mut seq = 0;
    for _ in 0..30_000 {
        // One packet every 12 ms: less than either hop carries.
        if now.0 % 12_000_000 == 0 {
            let next = source.choose_next_hop(0, &[1, 2]).unwrap();
            choices.push(next);
            let s = Segment::data(seq, MSS, now);
            seq += MSS as u64;
            source.handle_forward(
                now,
                next,
                Packet {
                    flow: 0,
                    direction: Direction::Forward,
                    bytes: s.wire_bytes(),
                    body: Body::Tcp(s),
                },
            );
        }
        while source.poll_packet(now).is_some() {}
        for (r, relay) in relays.iter_mut().enumerate() {
            while relay.poll_packet(now).is_some() {} // decoded: onwards, out of this test
            if relay.poll_timeout().is_some_and(|t| t <= now) {
                relay.handle_timeout(now);
            }
            if busy[r + 1][0] <= now {
                if let Some(f) = relay.poll_frame(now, 0) {
                    busy[r + 1][0] = now + Duration::transmission(f.bytes as u64, 1_000_000);
                    if r == 1 {
                        in_flight.push((busy[r + 1][0] + Duration::from_millis(10), r + 1, 0, f));
                    }
                }
            }
        }
        if source.poll_timeout().is_some_and(|t| t <= now) {
            source.handle_timeout(now);
        }
        for to in [1, 2] {
            if busy[0][to] <= now {
                if let Some(f) = source.poll_frame(now, to as u32) {
                    busy[0][to] = now + Duration::transmission(f.bytes as u64, 1_000_000);
                    in_flight.push((busy[0][to] + Duration::from_millis(10), 0, to, f));
                }
            }
        }
        let (due, later): (Vec<_>, Vec<_>) = in_flight.into_iter().partition(|(t, ..)| *t <= now);
        in_flight = later;
        for (_, from, to, f) in due {
            match to {
                0 => source.handle_frame(now, from as u32, f),
                r => relays[r - 1].handle_frame(now, 0, f),
            }
        }
        now += step;
    }
    // Ties go to the first candidate, so the flow starts on hop 1 ...
    assert_eq!(choices[0], 1);
    // ... which fills: (14) stops it once its B pairs are unacknowledged.
    let (_, b, in_use) = source.codec_pairs(1).unwrap();
    assert_eq!(in_use, b);
    // From then on eq. (16) sends (nearly) everything by hop 2.
    let tail = &choices[choices.len() / 2..];
    let via_2 = tail.iter().filter(|&&n| n == 2).count();
    assert!(
        via_2 * 100 >= tail.len() * 95,
        "{via_2} of {} by hop 2",
        tail.len()
    );
    assert!(
        source.cost(0) < source.queue_len(1) as f64 / 100.0,
        "C_m^s follows the cheaper hop"
    );
}

#[test]
fn a_gateway_delivers_in_order_past_its_small_wired_queue() {
    // 3 flows of 101 packets: 303 is no multiple of L = 4, so the last block
    // leaves partial after flush_after. The wired FIFO holds 5 packets, far
    // fewer than a reordered burst: the gateway's Q_em must not lose any.
    let params = HoncParams::default();
    let mut c = Chain::with_gateway(
        2,
        1_000_000,
        Duration::from_millis(50),
        0.3,
        Duration::from_millis(30),
        3,
        101_000,
        &params,
        11,
    );
    c.run(Instant::from_secs_f64(300.0));
    for f in &c.delivered {
        in_order_exactly_once(f, 101_000);
    }
    let gateway = c.nodes[2].stats();
    assert_eq!(gateway.dropped, 0);
    assert!(gateway.blocks_decoded > 0);
}
