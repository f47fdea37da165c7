//! The simulation: nodes, channels and flows built from a scenario, and the
//! event loop that drives them.
//!
//! Every component is woken the same way: it reports its next deadline
//! (`poll_timeout`), the loop wakes it then (`handle_timeout`), and
//! whatever it produces is drained at once (`poll_transmit`,
//! `poll_delivery`). Channels, TCP endpoints and UDP sources differ only in
//! what they produce.
//!
//! Coding layers plug in at two places:
//! - end to end, between transport and IP ([`HostLayer`]): what a flow's
//!   endpoint emits passes through the flow's host layer at that end before
//!   IP ([`Simulation::transmit`]), and what arrives for the endpoint passes
//!   through it first ([`Simulation::deliver`]) (TCP/NC);
//! - per hop, between IP and the links ([`HopLayer`]): a node with a hop
//!   layer hands it what IP forwards instead of queueing it, gives it every
//!   frame its links deliver, and asks it for a frame whenever one of its
//!   links falls idle ([`Simulation::service`]) (hop-by-hop TCP/NC,
//!   TCP-HONC).

use crate::app::UdpSource;
use crate::channel::{Channel, LossModel, PointToPoint};
use crate::engine::{Alarms, EventQueue};
use crate::metrics::{jain_index, Histogram, Moments, Series as Bins};
use crate::queue::DropTail;
use crate::result::{FlowSummary, LinkSummary, RunResult, Series};
use crate::rng::{Purpose, Rng};
use crate::routing::{ChannelIndex, FlowRoutes, NodeIndex, Topology, NO_ROUTE};
use crate::scenario::{AppKind, QueueProbe, Scenario, ScenarioSpec, Scheme};
use ncmesh_proto::packet::UDP_HEADER_BYTES;
use ncmesh_proto::tcp::{TcpReceiver, TcpSender};
use ncmesh_proto::tcpnc::{NcSink, NcSource, Relay};
use ncmesh_proto::{Body, Direction, Duration, HopLayer, HostLayer, Instant, Packet};
use std::collections::BTreeMap;

/// What the event queue holds. Simultaneous events run in this order:
/// flow starts and stops, the probe, then components by slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Wake {
    Start(u32),
    Stop(u32),
    Probe,
    /// A component's deadline: see [`Simulation::component`].
    Component(u32),
}

#[derive(Debug)]
enum Endpoints {
    Tcp { sender: TcpSender, receiver: TcpReceiver },
    Udp { source: UdpSource },
}

#[derive(Debug)]
struct Flow {
    /// The coding layers under the endpoints at the source and at the destination.
    layers: [Option<Box<dyn HostLayer>>; 2],
    /// Set while a layer is being drained, so that what its output causes
    /// (an endpoint answering) is picked up by the same loop, not a nested one.
    draining: [bool; 2],
    src: NodeIndex,
    dst: NodeIndex,
    app: AppKind,
    bytes: Option<u64>,
    start: Instant,
    stop: Instant,
    /// Next hops per node, for each direction.
    routes: [FlowRoutes; 2],
    endpoints: Endpoints,
    delivered: u64,
    goodput: Bins,
    delay: Moments,
    delay_histogram: Histogram,
    packets_sent: u64,
    completed: Option<Instant>,
    /// The sender's smoothed RTT and unbacked-off RTO, sampled at every ACK:
    /// what Padhye's model calls RTT and T0.
    srtt: Moments,
    base_rto: Moments,
    min_rto: Duration,
}

/// One simulation run in progress.
#[derive(Debug)]
pub struct Simulation {
    now: Instant,
    end: Instant,
    queue: EventQueue<Wake>,
    alarms: Alarms,
    channels: Vec<PointToPoint>,
    channel_class: Vec<String>,
    topology: Topology,
    flows: Vec<Flow>,
    /// Each node's hop layer, if coding runs per hop.
    hops: Vec<Option<Box<dyn HopLayer>>>,
    /// Set while a node's hop layer is serviced (see `Flow::draining`).
    servicing: Vec<bool>,
    probe_interval: Duration,
    probed_queues: Vec<ChannelIndex>,
    probe_cwnd: bool,
    probe_rtt: bool,
    queues: Series,
    cwnd: Series,
    rtt: Series,
    events: u64,
}

/// Which component an alarm slot belongs to. Slots are laid out as the
/// channels' departures, four per flow (sender, receiver, the host layers at
/// the source and at the destination), one per node (its hop layer), then
/// the channels' arrivals. Simultaneous wake-ups run in slot order: at each
/// instant, a transmitter that finishes a frame takes its next one from what
/// it held before the instant, then timers due at the instant fire, then
/// frames that end at the instant are received.
#[derive(Clone, Copy)]
enum Component {
    Arrivals(usize),
    Departures(usize),
    Sender(usize),
    Receiver(usize),
    HostLayer(usize, usize),
    HopLayer(usize),
}

/// Where a flow's end sits: 0 at the source, 1 at the destination.
fn end_of(direction: Direction, arriving: bool) -> usize {
    match (direction, arriving) {
        (Direction::Forward, false) | (Direction::Reverse, true) => 0,
        (Direction::Forward, true) | (Direction::Reverse, false) => 1,
    }
}

impl Simulation {
    /// Builds the network of a validated scenario.
    pub fn new(scenario: &Scenario) -> Simulation {
        let spec = &scenario.spec;
        let topology = Topology::new(spec);
        let seed = spec.seed;
        let mut channels = Vec::with_capacity(topology.channels.len());
        let mut channel_class = Vec::with_capacity(topology.channels.len());
        for (i, link) in spec.links.iter().enumerate() {
            for side in 0..2 {
                let c = 2 * i + side;
                let (_, to) = topology.channels[c];
                let loss = match link.gilbert_elliott {
                    Some(g) => LossModel::GilbertElliott { p_good_to_bad: g.p_good_to_bad, p_bad_to_good: g.p_bad_to_good, loss_good: g.loss_good, loss_bad: g.loss_bad, bad: false },
                    None if side == 1 => LossModel::Bernoulli { p: link.reverse_loss.unwrap_or(link.loss) },
                    None => LossModel::Bernoulli { p: link.loss },
                };
                let rng = Rng::stream(seed, Purpose::LinkLoss, c as u64);
                channels.push(PointToPoint::new(to, link.capacity.0, link.delay.0, loss, rng, Box::new(DropTail::new(link.queue as usize))));
                channel_class.push(link.class.clone().unwrap_or_default());
            }
        }

        let end = Instant(spec.duration.0.as_nanos());
        let mut flows = Vec::new();
        for spec_flow in &spec.flows {
            for _ in 0..spec_flow.count {
                let f = flows.len() as u32;
                let (src, dst) = (topology.index[&spec_flow.src], topology.index[&spec_flow.dst]);
                let no_route = || FlowRoutes::single(vec![NO_ROUTE; topology.labels.len()]);
                let routes = match &spec_flow.paths {
                    Some(paths) => {
                        let there: Vec<Vec<NodeIndex>> = paths.iter().map(|p| p.iter().map(|n| topology.index[n]).collect()).collect();
                        let back: Vec<Vec<NodeIndex>> = there.iter().map(|p| p.iter().rev().copied().collect()).collect();
                        [topology.multipath(f, &there).unwrap_or_else(|_| no_route()), topology.multipath(f, &back).unwrap_or_else(|_| no_route())]
                    }
                    None => {
                        let path: Option<Vec<NodeIndex>> = spec_flow.path.as_ref().map(|p| p.iter().map(|n| topology.index[n]).collect());
                        let back: Option<Vec<NodeIndex>> = path.as_ref().map(|p| p.iter().rev().copied().collect());
                        let route = |from, to, pinned: Option<&[NodeIndex]>| topology.route(f, from, to, pinned).map(|r| FlowRoutes::single(topology.table(&r))).unwrap_or_else(|_| no_route());
                        [route(src, dst, path.as_deref()), route(dst, src, back.as_deref())]
                    }
                };
                let start = Instant(spec_flow.start.0.as_nanos());
                let stop = spec_flow.stop.map_or(end, |s| Instant(s.0.as_nanos())).min(end);
                let rate = spec_flow.rate.map_or(0, |r| r.0);
                let endpoints = match spec_flow.app {
                    AppKind::Bulk | AppKind::Sized => Endpoints::Tcp { sender: TcpSender::new(&spec_flow.tcp, start), receiver: TcpReceiver::new(&spec_flow.tcp) },
                    AppKind::Cbr => Endpoints::Udp { source: UdpSource::cbr(spec_flow.packet_size, rate) },
                    AppKind::OnOff => {
                        let rng = Rng::stream(seed, Purpose::Application, f as u64);
                        Endpoints::Udp { source: UdpSource::on_off(spec_flow.packet_size, rate, spec_flow.on_time.0, spec_flow.off_time.0, rng) }
                    }
                };
                let layers = host_layers(spec, &topology, &channels, &routes[0].table, spec_flow, f, seed);
                flows.push(Flow {
                    layers,
                    draining: [false; 2],
                    src,
                    dst,
                    app: spec_flow.app,
                    bytes: spec_flow.bytes,
                    start,
                    stop,
                    routes,
                    endpoints,
                    delivered: 0,
                    goodput: Bins::new(spec.probes.interval.0),
                    delay: Moments::default(),
                    delay_histogram: Histogram::default(),
                    packets_sent: 0,
                    completed: None,
                    srtt: Moments::default(),
                    base_rto: Moments::default(),
                    min_rto: spec_flow.tcp.min_rto,
                });
            }
        }

        let probed_queues = match &spec.probes.queues {
            QueueProbe::All(true) => (0..channels.len() as ChannelIndex).collect(),
            QueueProbe::All(false) => vec![],
            QueueProbe::Links(links) => links
                .iter()
                .filter_map(|[a, b]| topology.channel(topology.index[a], topology.index[b]))
                .collect(),
        };
        let mut queue = EventQueue::default();
        for (f, flow) in flows.iter().enumerate() {
            queue.push(flow.start, Wake::Start(f as u32));
            if flow.stop < end {
                queue.push(flow.stop, Wake::Stop(f as u32));
            }
        }
        queue.push(Instant::ZERO, Wake::Probe);
        let hops = hop_layers(spec, &topology, &channels, seed);
        let components = 2 * channels.len() + 4 * flows.len() + hops.len();
        Simulation {
            now: Instant::ZERO,
            end,
            queue,
            alarms: Alarms::new(components),
            channels,
            channel_class,
            topology,
            flows,
            servicing: vec![false; hops.len()],
            hops,
            probe_interval: spec.probes.interval.0,
            probed_queues,
            probe_cwnd: spec.probes.cwnd,
            probe_rtt: spec.probes.rtt,
            queues: Series::default(),
            cwnd: Series::default(),
            rtt: Series::default(),
            events: 0,
        }
    }

    pub fn now(&self) -> Instant {
        self.now
    }

    pub fn end(&self) -> Instant {
        self.end
    }

    pub fn events(&self) -> u64 {
        self.events
    }

    pub fn is_done(&self) -> bool {
        self.now >= self.end
    }

    /// Runs every event up to and including `until`; a run covers
    /// `[0, end)`, so nothing at or after its end happens.
    pub fn run_until(&mut self, until: Instant) {
        let until = until.min(self.end);
        let last = until.min(Instant(self.end.0.saturating_sub(1)));
        while let Some((at, wake)) = self.queue.pop_until(last) {
            self.now = at;
            match wake {
                Wake::Component(slot) => {
                    if !self.alarms.fire(slot as usize, at) {
                        continue;
                    }
                    self.wake(slot as usize);
                }
                Wake::Start(f) => self.start_flow(f as usize),
                Wake::Stop(f) => self.stop_flow(f as usize),
                Wake::Probe => self.probe(),
            }
            self.events += 1;
        }
        self.now = self.now.max(until);
    }

    /// Runs to the end and summarises.
    pub fn run(mut self) -> RunResult {
        self.run_until(self.end);
        self.finish()
    }

    fn component(&self, slot: usize) -> Component {
        let c = self.channels.len();
        let f = 4 * self.flows.len();
        let n = self.hops.len();
        if slot < c {
            Component::Departures(slot)
        } else if slot >= c + f + n {
            Component::Arrivals(slot - c - f - n)
        } else if slot < c + f {
            let (flow, role) = ((slot - c) / 4, (slot - c) % 4);
            match role {
                0 => Component::Sender(flow),
                1 => Component::Receiver(flow),
                end => Component::HostLayer(flow, end - 2),
            }
        } else {
            Component::HopLayer(slot - c - f)
        }
    }

    fn slot(&self, component: Component) -> usize {
        let c = self.channels.len();
        match component {
            Component::Departures(i) => i,
            Component::Arrivals(i) => c + 4 * self.flows.len() + self.hops.len() + i,
            Component::Sender(f) => c + 4 * f,
            Component::Receiver(f) => c + 4 * f + 1,
            Component::HostLayer(f, end) => c + 4 * f + 2 + end,
            Component::HopLayer(n) => c + 4 * self.flows.len() + n,
        }
    }

    fn deadline(&self, slot: usize) -> Option<Instant> {
        match self.component(slot) {
            Component::Arrivals(c) => self.channels[c].poll_arrival(),
            Component::Departures(c) => self.channels[c].poll_departure(),
            Component::Sender(f) => match &self.flows[f].endpoints {
                Endpoints::Tcp { sender, .. } => sender.poll_timeout(),
                Endpoints::Udp { source } => source.poll_timeout(),
            },
            Component::Receiver(f) => match &self.flows[f].endpoints {
                Endpoints::Tcp { receiver, .. } => receiver.poll_timeout(),
                Endpoints::Udp { .. } => None,
            },
            Component::HostLayer(f, end) => self.flows[f].layers[end].as_ref().and_then(|l| l.poll_timeout()),
            Component::HopLayer(n) => self.hops[n].as_ref().and_then(|h| h.poll_timeout()),
        }
    }

    /// Makes sure the component is woken at its current deadline.
    fn rearm(&mut self, slot: usize) {
        if let Some(t) = self.deadline(slot) {
            let t = t.max(self.now);
            if self.alarms.arm(slot, t) {
                self.queue.push(t, Wake::Component(slot as u32));
            }
        }
    }

    fn wake(&mut self, slot: usize) {
        let now = self.now;
        let due = self.deadline(slot).is_some_and(|t| t <= now);
        match self.component(slot) {
            Component::Arrivals(c) => {
                while let Some((node, packet)) = self.channels[c].poll_delivery(now) {
                    let from = self.topology.channels[c].0;
                    self.arrive(node, from, packet);
                }
            }
            Component::Departures(c) => {
                if due {
                    self.channels[c].handle_timeout(now);
                    self.rearm(self.slot(Component::Arrivals(c)));
                }
                let from = self.topology.channels[c].0 as usize;
                if self.hops[from].is_some() && self.channels[c].is_idle() {
                    self.service(from);
                }
            }
            Component::Sender(f) => {
                if due {
                    if let Endpoints::Tcp { sender, .. } = &mut self.flows[f].endpoints {
                        sender.handle_timeout(now);
                    }
                }
                self.drain_source(f);
            }
            Component::Receiver(f) => {
                if due {
                    if let Endpoints::Tcp { receiver, .. } = &mut self.flows[f].endpoints {
                        receiver.handle_timeout(now);
                    }
                }
                self.drain_sink(f);
            }
            Component::HostLayer(f, end) => {
                if due {
                    if let Some(layer) = self.flows[f].layers[end].as_mut() {
                        layer.handle_timeout(now);
                    }
                }
                self.drain_layer(f, end);
            }
            Component::HopLayer(n) => {
                if due {
                    if let Some(hop) = self.hops[n].as_mut() {
                        hop.handle_timeout(now);
                    }
                }
                self.service(n);
            }
        }
        self.rearm(slot);
    }

    fn sender_slot(&self, f: usize) -> usize {
        self.slot(Component::Sender(f))
    }

    fn start_flow(&mut self, f: usize) {
        let now = self.now;
        let flow = &mut self.flows[f];
        match &mut flow.endpoints {
            Endpoints::Tcp { sender, .. } => sender.push(flow.bytes.unwrap_or(u64::MAX)),
            Endpoints::Udp { source } => source.start(now),
        }
        self.drain_source(f);
        self.rearm(self.sender_slot(f));
    }

    fn stop_flow(&mut self, f: usize) {
        match &mut self.flows[f].endpoints {
            Endpoints::Tcp { sender, .. } => sender.close(),
            Endpoints::Udp { source } => source.stop(),
        }
    }

    /// Sends everything the flow's source has ready.
    fn drain_source(&mut self, f: usize) {
        let now = self.now;
        loop {
            let flow = &mut self.flows[f];
            let packet = match &mut flow.endpoints {
                Endpoints::Tcp { sender, .. } => sender.poll_transmit(now).map(|s| Packet { flow: f as u32, direction: Direction::Forward, bytes: s.wire_bytes(), body: Body::Tcp(s) }),
                Endpoints::Udp { source } => source.poll_transmit(now).map(|payload| Packet {
                    flow: f as u32,
                    direction: Direction::Forward,
                    bytes: payload + UDP_HEADER_BYTES,
                    body: Body::Udp { payload, sent_at: now },
                }),
            };
            let Some(packet) = packet else { break };
            flow.packets_sent += 1;
            self.transmit(f, 0, packet);
        }
    }

    /// Sends the receiver's ACKs and records its deliveries.
    fn drain_sink(&mut self, f: usize) {
        let now = self.now;
        let flow = &mut self.flows[f];
        let Endpoints::Tcp { receiver, .. } = &mut flow.endpoints else { return };
        while let Some(d) = receiver.poll_delivery() {
            flow.delivered += d.bytes;
            flow.goodput.add(now, d.bytes);
            let delay = now - d.first_sent;
            flow.delay.add(delay.as_secs_f64());
            flow.delay_histogram.add(delay);
        }
        while let Some(ack) = match &mut self.flows[f].endpoints {
            Endpoints::Tcp { receiver, .. } => receiver.poll_transmit(now),
            Endpoints::Udp { .. } => None,
        } {
            self.transmit(f, 1, Packet { flow: f as u32, direction: Direction::Reverse, bytes: ack.wire_bytes(), body: Body::Tcp(ack) });
        }
    }

    /// An endpoint at `end` of flow `f` sends a packet: through the flow's
    /// host layer there, if any, then into the network.
    fn transmit(&mut self, f: usize, end: usize, packet: Packet) {
        let now = self.now;
        match self.flows[f].layers[end].as_mut() {
            Some(layer) => {
                layer.handle_transmit(now, packet);
                self.drain_layer(f, end);
            }
            None => {
                let node = self.node_of(f, end);
                self.forward(node, packet);
            }
        }
    }

    fn node_of(&self, f: usize, end: usize) -> NodeIndex {
        if end == 0 {
            self.flows[f].src
        } else {
            self.flows[f].dst
        }
    }

    /// Moves what a host layer produced: down into the network, up to the endpoint.
    fn drain_layer(&mut self, f: usize, end: usize) {
        if std::mem::replace(&mut self.flows[f].draining[end], true) {
            return;
        }
        let now = self.now;
        let node = self.node_of(f, end);
        loop {
            let Some(layer) = self.flows[f].layers[end].as_mut() else { break };
            if let Some(p) = layer.poll_transmit(now) {
                self.forward(node, p);
            } else if let Some(p) = layer.poll_receive(now) {
                self.hand_to_endpoint(f, p);
            } else {
                break;
            }
        }
        self.flows[f].draining[end] = false;
        self.rearm(self.slot(Component::HostLayer(f, end)));
    }

    /// A channel delivers a packet from neighbour `from` to `node`.
    fn arrive(&mut self, node: NodeIndex, from: NodeIndex, packet: Packet) {
        match self.hops[node as usize].as_mut() {
            Some(hop) => {
                hop.handle_frame(self.now, from, packet);
                self.service(node as usize);
            }
            None => self.route(node, packet),
        }
    }

    /// IP at `node`: deliver locally or forward.
    fn route(&mut self, node: NodeIndex, packet: Packet) {
        let f = packet.flow as usize;
        let end = end_of(packet.direction, true);
        if node != self.node_of(f, end) {
            return self.forward(node, packet);
        }
        self.deliver(f, end, packet);
    }

    /// A packet reaches the end host `end` of flow `f`: through its host layer, if any, to the endpoint.
    fn deliver(&mut self, f: usize, end: usize, packet: Packet) {
        let now = self.now;
        match self.flows[f].layers[end].as_mut() {
            Some(layer) => {
                layer.handle_receive(now, packet);
                self.drain_layer(f, end);
            }
            None => self.hand_to_endpoint(f, packet),
        }
    }

    /// Transport at one end of flow `f` takes a packet.
    fn hand_to_endpoint(&mut self, f: usize, packet: Packet) {
        let now = self.now;
        let slot = self.sender_slot(f);
        let flow = &mut self.flows[f];
        match (packet.body, &mut flow.endpoints) {
            (Body::Tcp(segment), Endpoints::Tcp { receiver, .. }) if packet.direction == Direction::Forward => {
                receiver.handle_segment(now, &segment);
                self.drain_sink(f);
                self.rearm(slot + 1);
            }
            (Body::Tcp(segment), Endpoints::Tcp { sender, .. }) => {
                sender.handle_ack(now, &segment);
                if let Some(srtt) = sender.srtt() {
                    flow.srtt.add(srtt.as_secs_f64());
                    let rto = (srtt + sender.rttvar().saturating_mul(4)).max(flow.min_rto);
                    flow.base_rto.add(rto.as_secs_f64());
                }
                if flow.completed.is_none() && flow.bytes.is_some() && sender.is_finished() {
                    flow.completed = Some(now);
                }
                self.drain_source(f);
                self.rearm(slot);
            }
            (Body::Udp { payload, sent_at }, _) => {
                flow.delivered += payload as u64;
                flow.goodput.add(now, payload as u64);
                let delay = now - sent_at;
                flow.delay.add(delay.as_secs_f64());
                flow.delay_histogram.add(delay);
            }
            (body, _) => debug_assert!(false, "flow {f} has no endpoint for {body:?}"),
        }
    }

    /// Lets a node's hop layer move what it can: packets up to IP, and a
    /// frame onto each of its idle links.
    fn service(&mut self, n: usize) {
        if std::mem::replace(&mut self.servicing[n], true) {
            return;
        }
        let now = self.now;
        while let Some(packet) = self.hops[n].as_mut().and_then(|h| h.poll_packet(now)) {
            self.route(n as NodeIndex, packet);
        }
        for i in 0..self.topology.out[n].len() {
            let (next, c) = self.topology.out[n][i];
            if !self.channels[c as usize].is_idle() {
                continue;
            }
            let Some(frame) = self.hops[n].as_mut().and_then(|h| h.poll_frame(now, next)) else { continue };
            self.channels[c as usize].enqueue(now, frame);
            self.rearm(self.slot(Component::Departures(c as usize)));
        }
        self.servicing[n] = false;
        self.rearm(self.slot(Component::HopLayer(n)));
    }

    /// Sends a packet from `node` along its flow's route: to the node's hop
    /// layer if it has one, to the channel's queue otherwise. Where the
    /// flow's paths part, the hop layer may pick the next hop per packet;
    /// without one, or when it declines, the table's choice stands, which
    /// keeps each flow on one path.
    fn forward(&mut self, node: NodeIndex, packet: Packet) {
        let routes = &self.flows[packet.flow as usize].routes[packet.direction as usize];
        let mut c = routes.table[node as usize];
        debug_assert_ne!(c, NO_ROUTE, "routes are checked when the scenario loads");
        let now = self.now;
        if let (Some(branch), Some(hop)) = (routes.branch(node), self.hops[node as usize].as_mut()) {
            if let Some(next) = hop.choose_next_hop(now, packet.flow, &branch.next) {
                let picked = branch.next.iter().position(|&n| n == next);
                debug_assert!(picked.is_some(), "a hop layer picks among the candidates it is given");
                c = picked.map_or(c, |i| branch.channels[i]);
            }
        }
        match self.hops[node as usize].as_mut() {
            Some(hop) => {
                hop.handle_forward(now, self.topology.channels[c as usize].1, packet);
                self.service(node as usize);
            }
            None => {
                self.channels[c as usize].enqueue(now, packet);
                self.rearm(self.slot(Component::Departures(c as usize)));
            }
        }
    }

    fn probe(&mut self) {
        let t = self.now.as_secs_f64();
        for &c in &self.probed_queues {
            let (from, to) = self.topology.channels[c as usize];
            let labels = &self.topology.labels;
            let held = self.hops[from as usize].as_ref().map_or(0, |h| h.queue_len(to));
            self.queues.push(t, labels[from as usize], labels[to as usize], (self.channels[c as usize].queue_len() + held) as f64);
        }
        for (f, flow) in self.flows.iter().enumerate() {
            if let Endpoints::Tcp { sender, .. } = &flow.endpoints {
                if self.probe_cwnd {
                    self.cwnd.push(t, f as u32 + 1, 0, sender.cwnd() as f64);
                }
                if self.probe_rtt {
                    self.rtt.push(t, f as u32 + 1, 0, sender.srtt().map_or(f64::NAN, |d| d.as_secs_f64()));
                }
            }
        }
        let next = self.now + self.probe_interval;
        if next < self.end {
            self.queue.push(next, Wake::Probe);
        }
    }

    /// Summarises the run so far.
    pub fn finish(self) -> RunResult {
        let end = self.now;
        let labels = &self.topology.labels;
        let mut goodput = Series::default();
        let interval = self.probe_interval.as_secs_f64();
        let flows: Vec<FlowSummary> = self
            .flows
            .iter()
            .enumerate()
            .map(|(f, flow)| {
                for (t, bytes) in flow.goodput.bins(end) {
                    goodput.push(t.as_secs_f64(), f as u32 + 1, 0, bytes as f64 * 8.0 / interval);
                }
                let until = flow.completed.unwrap_or(flow.stop.min(end));
                let active = until.saturating_since(flow.start).as_secs_f64();
                let (retransmits, timeouts, acked_bytes) = match &flow.endpoints {
                    Endpoints::Tcp { sender, .. } => (sender.stats().retransmits, sender.stats().timeouts, sender.snd_una()),
                    Endpoints::Udp { .. } => (0, 0, flow.delivered),
                };
                FlowSummary {
                    id: f as u32 + 1,
                    src: labels[flow.src as usize],
                    dst: labels[flow.dst as usize],
                    app: app_name(flow.app),
                    goodput_bps: if active > 0.0 { flow.delivered as f64 * 8.0 / active } else { 0.0 },
                    delivered_bytes: flow.delivered,
                    acked_bytes,
                    delay_mean_s: flow.delay.mean(),
                    delay_std_s: flow.delay.std(),
                    delay_p50_s: flow.delay_histogram.quantile(0.5),
                    delay_p95_s: flow.delay_histogram.quantile(0.95),
                    delay_p99_s: flow.delay_histogram.quantile(0.99),
                    completion_s: flow.completed.map(|t| t.as_secs_f64()),
                    packets_sent: flow.packets_sent,
                    rtt_mean_s: flow.srtt.mean(),
                    rto_mean_s: flow.base_rto.mean(),
                    retransmits,
                    timeouts,
                }
            })
            .collect();
        let links = self
            .channels
            .iter()
            .enumerate()
            .map(|(c, ch)| {
                let (from, to) = self.topology.channels[c];
                let s = ch.stats();
                LinkSummary {
                    from: labels[from as usize],
                    to: labels[to as usize],
                    class: self.channel_class[c].clone(),
                    transmitted: s.transmitted,
                    transmitted_bytes: s.transmitted_bytes,
                    lost: s.lost,
                    dropped: s.dropped,
                }
            })
            .collect();
        let fairness = jain_index(&flows.iter().map(|f| f.goodput_bps).collect::<Vec<_>>());
        RunResult { flows, links, goodput, queues: self.queues, cwnd: self.cwnd, rtt: self.rtt, fairness, events: self.events, sim_time_s: end.as_secs_f64() }
    }
}

fn app_name(app: AppKind) -> &'static str {
    match app {
        AppKind::Bulk => "bulk",
        AppKind::Sized => "sized",
        AppKind::Cbr => "cbr",
        AppKind::OnOff => "onoff",
    }
}

/// The host layers of one TCP flow under the scenario's coding scheme.
fn host_layers(spec: &ScenarioSpec, topology: &Topology, channels: &[PointToPoint], forward: &[ChannelIndex], flow: &crate::scenario::FlowSpec, f: u32, seed: u64) -> [Option<Box<dyn HostLayer>>; 2] {
    if !matches!(flow.app, AppKind::Bulk | AppKind::Sized) {
        return [None, None];
    }
    let params = &spec.coding.tcpnc;
    let redundancy = match flow.coding.unwrap_or(spec.coding.scheme) {
        // TCP-HONC runs per hop only; its ingress node speaks to TCP itself.
        Scheme::None | Scheme::Honc => return [None, None],
        // Per hop, the relays add the redundancy; the source codes at R = 1.
        Scheme::TcpNcHopByHop => 1.0,
        Scheme::TcpNcEndToEnd => {
            // The path's delivery probability is the product over its channels.
            let mut delivered = 1.0;
            let (src, dst) = (topology.index[&flow.src], topology.index[&flow.dst]);
            let mut at = src;
            while at != dst {
                let c = forward[at as usize] as usize;
                delivered *= 1.0 - channels[c].loss_rate();
                at = topology.channels[c].1;
            }
            params.redundancy_for(1.0 - delivered)
        }
    };
    let layer_seed = Rng::stream(seed, Purpose::Coding, f as u64).next_u64();
    let tcp = &flow.tcp;
    let source = NcSource::new(params, tcp.mss, redundancy, f, layer_seed);
    let sink = NcSink::new(params, f, tcp.mss, tcp.rcv_window * tcp.mss, layer_seed);
    [Some(Box::new(source)), Some(Box::new(sink))]
}

/// Each node's hop layer under the scenario's coding scheme.
fn hop_layers(spec: &ScenarioSpec, topology: &Topology, channels: &[PointToPoint], seed: u64) -> Vec<Option<Box<dyn HopLayer>>> {
    let n = topology.labels.len();
    match spec.coding.scheme {
        Scheme::None | Scheme::TcpNcEndToEnd => (0..n).map(|_| None).collect(),
        Scheme::TcpNcHopByHop => (0..n)
            .map(|node| {
                let params = &spec.coding.tcpnc;
                let redundancy: BTreeMap<u32, f64> = topology.out[node]
                    .iter()
                    .map(|&(next, c)| (next, params.redundancy_for(channels[c as usize].loss_rate())))
                    .collect();
                let layer_seed = Rng::stream(seed, Purpose::Coding, (1 << 32) + node as u64).next_u64();
                Some(Box::new(Relay::new(params, redundancy, layer_seed)) as Box<dyn HopLayer>)
            })
            .collect(),
        Scheme::Honc => (0..n)
            .map(|node| {
                let params = &spec.coding.honc;
                // Link i of the scenario gives channels 2i and 2i + 1, both with its parameters.
                let links = topology.out[node]
                    .iter()
                    .map(|&(next, c)| {
                        let link = &spec.links[c as usize / 2];
                        ncmesh_proto::honc::LinkInfo {
                            neighbour: next,
                            wireless: link.class.as_deref() == Some(params.wireless_class.as_str()),
                            capacity_bps: link.capacity.0,
                            delay: link.delay.0,
                            loss: channels[c as usize].loss_rate(),
                            queue: link.queue,
                        }
                    })
                    .collect();
                // Flows are numbered in scenario order, `count` per entry, as `Simulation::new` does.
                let local = spec.flows.iter().flat_map(|f| std::iter::repeat_n(f.dst, f.count as usize)).enumerate().filter(|&(_, dst)| topology.index[&dst] as usize == node).map(|(f, _)| f as u32);
                let layer_seed = Rng::stream(seed, Purpose::Coding, (2 << 32) + node as u64).next_u64();
                Some(Box::new(ncmesh_proto::honc::HoncNode::new(params, links, local, layer_seed)) as Box<dyn HopLayer>)
            })
            .collect(),
    }
}
