//! Nodes joined by in-memory point-to-point links under virtual time: how a
//! driver runs [`Node`]s without the simulator, as the daemon will over
//! sockets. Links serialise at a rate, lose frames at random or by a hook,
//! delay them (with jitter, which reorders) and may alter their bytes.

use super::SplitMix64;
use crate::frame::Frame;
use crate::node::DropTail;
use crate::node::{HopLayer, IfaceId, Interface, InterfaceInfo, NextHop, Node, NodeConfig, Outcome};
use crate::packet::{FlowKey, Packet, Parsers};
use crate::scheme::{FlowInfo, HopContext};
use crate::time::{Duration, Instant};
use std::fmt;
use std::net::Ipv4Addr;
use std::sync::Arc;

/// One direction of a link.
#[derive(Clone, Copy, Debug)]
pub struct LinkSpec {
    pub rate: u64,
    pub delay: Duration,
    pub loss: f64,
    /// Each frame is delayed by up to this much more, uniformly.
    pub jitter: Duration,
    pub queue: usize,
    /// The hop layer codes on it.
    pub coded: bool,
}

impl LinkSpec {
    pub fn new(rate: u64, delay: Duration) -> LinkSpec {
        LinkSpec { rate, delay, loss: 0.0, jitter: Duration::ZERO, queue: 100, coded: true }
    }
}

struct Pipe {
    from: (usize, IfaceId),
    to: (usize, IfaceId),
    spec: LinkSpec,
    /// When the frame being sent finishes.
    busy_until: Option<Instant>,
    in_flight: Vec<(Instant, Frame)>,
    /// Frames put on the pipe, lost ones included.
    carried: u64,
}

/// Decides whether the link from one node to another loses a frame.
pub type DropHook = Box<dyn FnMut(usize, usize, &Frame) -> bool>;
/// Changes a frame on the link from one node to another.
pub type MangleHook = Box<dyn FnMut(usize, usize, &mut Frame)>;

/// The address of node `i` of a mesh.
pub fn addr(i: usize) -> Ipv4Addr {
    Ipv4Addr::from(0x0A00_0001 + i as u32)
}

/// How a mesh is built: its nodes and links, then each node's hop layer.
#[derive(Debug, Default)]
pub struct MeshBuilder {
    nodes: usize,
    links: Vec<(usize, usize, LinkSpec)>,
    pub flows: Vec<FlowInfo>,
    pub real_payloads: bool,
    pub parsers: Arc<Parsers>,
}

impl MeshBuilder {
    pub fn new(nodes: usize) -> MeshBuilder {
        MeshBuilder { nodes, ..MeshBuilder::default() }
    }

    /// A full-duplex link between `a` and `b`, the same both ways.
    pub fn link(mut self, a: usize, b: usize, spec: LinkSpec) -> MeshBuilder {
        self.links.push((a, b, spec));
        self
    }

    /// Builds the nodes; `hop` gives node `i` its hop layer, `None` for plain forwarding.
    pub fn build(self, seed: u64, mut hop: impl FnMut(usize, &HopContext<'_>) -> Option<Box<dyn HopLayer>>) -> Mesh {
        let mut infos: Vec<Vec<InterfaceInfo>> = vec![Vec::new(); self.nodes];
        let mut ends = Vec::new();
        for &(a, b, spec) in &self.links {
            for (from, to) in [(a, b), (b, a)] {
                infos[from].push(InterfaceInfo {
                    class: if spec.coded { "wireless" } else { "wired" }.into(),
                    neighbours: vec![addr(to)],
                    capacity_bps: spec.rate,
                    delay: spec.delay,
                    loss: spec.loss,
                    coded: spec.coded,
                    queue: spec.queue,
                });
                ends.push((from, infos[from].len() - 1));
            }
        }
        let mut pipes = Vec::new();
        for (k, &(_, _, spec)) in self.links.iter().enumerate() {
            let (x, y) = (ends[2 * k], ends[2 * k + 1]);
            pipes.push(Pipe { from: x, to: y, spec, busy_until: None, in_flight: Vec::new(), carried: 0 });
            pipes.push(Pipe { from: y, to: x, spec, busy_until: None, in_flight: Vec::new(), carried: 0 });
        }
        let nodes = (0..self.nodes)
            .map(|i| {
                let ctx = HopContext {
                    addr: addr(i),
                    interfaces: &infos[i],
                    flows: &self.flows,
                    seed: seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9),
                    real_payloads: self.real_payloads,
                    parsers: &self.parsers,
                };
                let layer = hop(i, &ctx);
                let ifaces = infos[i]
                    .iter()
                    .map(|info| Interface::new(info.clone(), Box::new(DropTail::new(info.queue))))
                    .collect();
                Node::new(
                    NodeConfig { addr: addr(i), real_payloads: self.real_payloads, parsers: self.parsers.clone() },
                    ifaces,
                    layer,
                )
            })
            .collect();
        let mut tx = vec![Vec::new(); self.nodes];
        for (p, pipe) in pipes.iter().enumerate() {
            let (n, iface) = pipe.from;
            let len = tx[n].len().max(iface + 1);
            tx[n].resize(len, usize::MAX);
            tx[n][iface] = p;
        }
        Mesh {
            now: Instant::ZERO,
            nodes,
            pipes,
            tx,
            delivered: vec![Vec::new(); self.nodes],
            rng: SplitMix64(seed),
            lost: 0,
            drop: Box::new(|_, _, _| false),
            mangle: None,
        }
    }
}

/// A running mesh.
pub struct Mesh {
    pub now: Instant,
    pub nodes: Vec<Node>,
    pipes: Vec<Pipe>,
    /// Per node and interface: its pipe.
    tx: Vec<Vec<usize>>,
    /// What each node's host was delivered, and when.
    pub delivered: Vec<Vec<(Instant, Packet)>>,
    rng: SplitMix64,
    /// Frames the links lost, at random or by `drop`.
    pub lost: u64,
    pub drop: DropHook,
    pub mangle: Option<MangleHook>,
}

impl fmt::Debug for Mesh {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mesh")
            .field("now", &self.now)
            .field("nodes", &self.nodes.len())
            .field("lost", &self.lost)
            .finish()
    }
}

impl Mesh {
    /// Routes `flow` along the node path `path`, and its reverse back.
    pub fn route(&mut self, flow: FlowKey, path: &[usize]) {
        for (key, hops) in [(flow, path.to_vec()), (flow.reversed(), path.iter().rev().copied().collect())] {
            for w in hops.windows(2) {
                let iface = self.iface_to(w[0], w[1]);
                self.nodes[w[0]].routes_mut().add_flow(key, vec![NextHop { iface, neighbour: addr(w[1]) }]);
            }
        }
    }

    /// The interface of node `from` that reaches node `to`.
    pub fn iface_to(&self, from: usize, to: usize) -> IfaceId {
        self.nodes[from]
            .interfaces()
            .iter()
            .position(|i| i.info.neighbours.contains(&addr(to)))
            .expect("the nodes are linked")
    }

    /// Frames the link from node `from` to node `to` has carried.
    pub fn carried(&self, from: usize, to: usize) -> u64 {
        self.pipes.iter().filter(|p| p.from.0 == from && p.to.0 == to).map(|p| p.carried).sum()
    }

    /// Node `n`'s host sends `packet` now.
    pub fn send(&mut self, n: usize, packet: Packet) {
        self.nodes[n].handle_local(self.now, packet);
        self.drain(n);
    }

    fn drain(&mut self, n: usize) {
        let now = self.now;
        while let Some((iface, mut frame)) = self.nodes[n].poll_transmit(now) {
            let p = self.tx[n][iface];
            let pipe = &mut self.pipes[p];
            let to = pipe.to.0;
            pipe.carried += 1;
            let done = now + Duration::transmission(frame.wire_len() as u64, pipe.spec.rate);
            pipe.busy_until = Some(done);
            let jitter = Duration((self.rng.next_f64() * pipe.spec.jitter.0 as f64) as u64);
            if self.rng.next_f64() < pipe.spec.loss || (self.drop)(n, to, &frame) {
                self.lost += 1;
                continue;
            }
            if let Some(mangle) = self.mangle.as_mut() {
                mangle(n, to, &mut frame);
            }
            pipe.in_flight.push((done + pipe.spec.delay + jitter, frame));
        }
        while let Some(p) = self.nodes[n].poll_delivery() {
            self.delivered[n].push((now, p));
        }
    }

    /// Everything due now: arrivals, transmitters done, timers.
    fn settle(&mut self) {
        let now = self.now;
        for p in 0..self.pipes.len() {
            if self.pipes[p].busy_until.is_some_and(|t| t <= now) {
                self.pipes[p].busy_until = None;
                let (n, iface) = self.pipes[p].from;
                self.nodes[n].handle_sent(now, iface, Outcome::Sent);
                self.drain(n);
            }
        }
        for p in 0..self.pipes.len() {
            let (n, iface) = self.pipes[p].to;
            let pipe = &mut self.pipes[p];
            let (due, later): (Vec<_>, Vec<_>) =
                std::mem::take(&mut pipe.in_flight).into_iter().partition(|(t, _)| *t <= now);
            pipe.in_flight = later;
            for (_, frame) in due {
                self.nodes[n].handle_frame(now, iface, frame, true);
                self.drain(n);
            }
        }
        for n in 0..self.nodes.len() {
            if self.nodes[n].poll_timeout().is_some_and(|t| t <= now) {
                self.nodes[n].handle_timeout(now);
                self.drain(n);
            }
        }
    }

    fn next_event(&self) -> Option<Instant> {
        let pipes = self.pipes.iter().flat_map(|p| p.busy_until.into_iter().chain(p.in_flight.iter().map(|(t, _)| *t)));
        let timers = self.nodes.iter().filter_map(Node::poll_timeout);
        pipes.chain(timers).map(|t| t.max(self.now)).min()
    }

    /// Runs until `until` or until nothing is left to happen, calling
    /// `host` after everything due at each instant (to let hosts react).
    pub fn run(&mut self, until: Instant, mut host: impl FnMut(&mut Mesh)) {
        self.run_hosts(until, |mesh| {
            host(mesh);
            None
        });
    }

    /// As `run`, for hosts with timers of their own: `host` returns its
    /// next deadline, and is called then even if nothing else happens.
    pub fn run_hosts(&mut self, until: Instant, mut host: impl FnMut(&mut Mesh) -> Option<Instant>) {
        loop {
            self.settle();
            let timer = host(self);
            match self.next_event().into_iter().chain(timer.map(|t| t.max(self.now))).min() {
                Some(t) if t <= until => self.now = t.max(self.now),
                _ => break,
            }
            if self.now > until {
                break;
            }
        }
    }
}
