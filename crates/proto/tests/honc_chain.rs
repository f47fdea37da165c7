//! TCP-HONC layers in a chain, joined by lossy one-way pipes under virtual
//! time: node 0 is the flows' ingress (it speaks to a stand-in TCP sender
//! through spoofed ACKs), the last node is their destination.

use ncmesh_proto::honc::{HoncNode, HoncParams, LinkInfo};
use ncmesh_proto::tcp::Segment;
use ncmesh_proto::testing::SplitMix64;
use ncmesh_proto::{Body, Direction, Duration, HopLayer, Instant, Packet};

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
    pub drop: Box<dyn FnMut(usize, usize, &Packet) -> bool>,
}

impl Chain {
    /// `hops` wireless hops of `rate` bit/s and `delay`, each way losing `loss`.
    pub fn new(hops: usize, rate: u64, delay: Duration, loss: f64, jitter: Duration, flows: usize, total: u64, params: &HoncParams, seed: u64) -> Chain {
        let mut nodes = Vec::new();
        for i in 0..=hops {
            let mut links = Vec::new();
            for j in [i.wrapping_sub(1), i + 1] {
                if j <= hops {
                    links.push(LinkInfo { neighbour: j as u32, wireless: true, capacity_bps: rate, delay, loss, queue: 50 });
                }
            }
            let local: Vec<u32> = if i == hops { (0..flows as u32).collect() } else { vec![] };
            nodes.push(HoncNode::new(params, links, local, seed ^ (i as u64 + 1) * 0x9E37));
        }
        let mut pipes = Vec::new();
        for i in 0..hops {
            for (from, to) in [(i, i + 1), (i + 1, i)] {
                pipes.push(Pipe { from, to, rate, delay, jitter, loss, busy_until: Instant::ZERO, in_flight: Vec::new() });
            }
        }
        let sources = (0..flows).map(|_| Source { next: 0, acked: 0, window: MSS as u64, total }).collect();
        Chain { nodes, pipes, sources, rng: SplitMix64(seed), now: Instant::ZERO, delivered: vec![Vec::new(); flows], lost: 0, drop: Box::new(|_, _, _| false) }
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
                    let Body::Tcp(s) = &p.body else { panic!("only TCP leaves a layer") };
                    match p.direction {
                        Direction::Forward if i == last => self.delivered[p.flow as usize].push(s.seq),
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
                    self.nodes[0].handle_forward(now, 1, Packet { flow: f as u32, direction: Direction::Forward, bytes: seg.wire_bytes(), body: Body::Tcp(seg) });
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
                let Some(frame) = self.nodes[from].poll_frame(now, to as u32) else { continue };
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
    let want: Vec<u64> = (0..total / MSS as u64).map(|k| k * MSS as u64).collect();
    assert_eq!(delivered, &want[..]);
}

#[test]
fn lossless_chain_delivers_everything_once_in_order() {
    let params = HoncParams::default();
    let mut c = Chain::new(3, 1_000_000, Duration::from_millis(100), 0.0, Duration::ZERO, 4, 200_000, &params, 1);
    c.run(Instant::from_secs_f64(100.0));
    for f in &c.delivered {
        in_order_exactly_once(f, 200_000);
    }
}

#[test]
fn lossy_reordering_chain_delivers_everything_once_in_order() {
    for (seed, real) in [(1, false), (2, false), (3, true)] {
        let params = HoncParams { real_payloads: real, ..HoncParams::default() };
        // Jitter of 30 ms against 8.5 ms frames: frames overtake each other.
        let mut c = Chain::new(3, 1_000_000, Duration::from_millis(50), 0.3, Duration::from_millis(30), 3, 300_000, &params, seed);
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

#[test]
#[ignore]
fn debug_throughput() {
    use ncmesh_proto::honc::{Retransmit, Rounding};
    for (rounding, retransmit, loss) in [(Rounding::Ceil, Retransmit::Paper, 0.35), (Rounding::Floor, Retransmit::Paper, 0.35), (Rounding::Floor, Retransmit::Deficit, 0.35), (Rounding::Ceil, Retransmit::Deficit, 0.35), (Rounding::Floor, Retransmit::Deficit, 0.2), (Rounding::Floor, Retransmit::Deficit, 0.0)] {
        let params = HoncParams { rounding, retransmit, ..HoncParams::default() };
        print!("{rounding:?} {retransmit:?} ");
        let mut c = Chain::new(4, 1_000_000, Duration::from_millis(100), loss, Duration::ZERO, 4, 100_000_000, &params, 1);
        c.run(Instant::from_secs_f64(100.0));
        let total: usize = c.delivered.iter().map(Vec::len).sum();
        println!("loss {loss}: {} kbit/s", total as f64 * 8.0 / 100.0);
        for (i, n) in c.nodes.iter().enumerate() {
            println!("  node {i} {:?} pairs {:?} est {:?} q {}", n.stats(), n.codec_pairs(i as u32 + 1), n.estimates(i as u32 + 1), n.queue_len(i as u32 + 1));
        }
    }
}
