//! The event loop: it runs nodes, media and the flows' endpoints, and names
//! no protocol.
//!
//! Every component is woken the same way: it reports its next deadline,
//! the loop wakes it then, and whatever it produces is passed on at once:
//! frames a node sends go to the medium of their interface, frames a
//! medium delivers go to the node attached, packets a node delivers go to
//! the endpoint of their flow, and packets an endpoint sends go to its node.
//!
//! Simultaneous wake-ups run in a fixed order of slots: media whose
//! transmitter finishes a frame (it takes its next one from what its node
//! held before the instant), then the endpoints' timers, then the nodes'
//! timers, then media whose frames arrive. Flow starts and stops and the
//! probe come before all of them.

use crate::engine::{Slot, Timers};
use crate::medium::{AnyMedium, Event, Medium, Phase};
use crate::metrics::jain_index;
use crate::network::{End, Network};
use crate::result::{Counter, FlowSummary, LinkSummary, PairSummary, RadioSummary, RunResult, Series};
use crate::scenario::{AppKind, QueueProbe, Scenario};
use ncmesh_proto::{Duration, Instant, Packet};

/// The phases of a medium whose deadlines may have moved.
const DEPARTURES: u8 = 1;
const ARRIVALS: u8 = 2;

/// What a slot of the timers wakes. Slots are laid out in this order, so
/// that simultaneous wake-ups run in it: flow starts, flow stops, the
/// probe, the media's departures, two endpoints per flow (source, sink),
/// one per node, then the media's arrivals.
#[derive(Clone, Copy, Debug)]
enum Component {
    Start(usize),
    Stop(usize),
    Probe,
    Departures(usize),
    Endpoint(usize, End),
    Node(usize),
    Arrivals(usize),
}

/// The slot numbering: where each kind of component starts, and which
/// component each slot wakes.
#[derive(Clone, Debug)]
struct Layout {
    flows: usize,
    probe: Slot,
    departures: Slot,
    endpoints: Slot,
    nodes: Slot,
    arrivals: Slot,
    components: Vec<Component>,
}

impl Layout {
    fn new(net: &Network) -> Layout {
        let flows = net.flows.len();
        let probe = 2 * flows;
        let departures = probe + 1;
        let endpoints = departures + net.media.len();
        let nodes = endpoints + 2 * flows;
        let arrivals = nodes + net.nodes.len();
        let components = (0..flows)
            .map(Component::Start)
            .chain((0..flows).map(Component::Stop))
            .chain([Component::Probe])
            .chain((0..net.media.len()).map(Component::Departures))
            .chain((0..flows).flat_map(|f| [Component::Endpoint(f, End::Source), Component::Endpoint(f, End::Sink)]))
            .chain((0..net.nodes.len()).map(Component::Node))
            .chain((0..net.media.len()).map(Component::Arrivals))
            .collect();
        Layout { flows, probe, departures, endpoints, nodes, arrivals, components }
    }

    fn slots(&self) -> usize {
        self.components.len()
    }

    fn slot(&self, component: Component) -> Slot {
        match component {
            Component::Start(f) => f,
            Component::Stop(f) => self.flows + f,
            Component::Probe => self.probe,
            Component::Departures(m) => self.departures + m,
            Component::Endpoint(f, e) => self.endpoints + 2 * f + e as usize,
            Component::Node(n) => self.nodes + n,
            Component::Arrivals(m) => self.arrivals + m,
        }
    }

    fn component(&self, slot: Slot) -> Component {
        self.components[slot]
    }
}

/// One simulation run in progress.
#[derive(Debug)]
pub struct Simulation {
    now: Instant,
    end: Instant,
    timers: Timers,
    layout: Layout,
    /// Components whose deadline may have moved since the last event,
    /// re-armed once each when the event is done: media with the phases
    /// touched (bit 0 departures, bit 1 arrivals), endpoints (2 f + end),
    /// and nodes. Kept by kind, so that re-arming needs no lookup of what a
    /// slot wakes.
    touched_media: Vec<u32>,
    media_phases: Vec<u8>,
    touched_endpoints: Vec<u32>,
    is_touched_endpoint: Vec<bool>,
    touched_nodes: Vec<u32>,
    is_touched_node: Vec<bool>,
    /// Per node: whether it has a coding layer, the only source of a
    /// node's deadlines; the others are never re-armed.
    node_timed: Vec<bool>,
    net: Network,
    probe_interval: Duration,
    /// The interfaces whose backlogs are sampled: (from, to) as the series
    /// keys them (to is 0 for a wireless interface), node and interface.
    probed_queues: Vec<(u32, u32, usize, usize)>,
    probe_cwnd: bool,
    probe_rtt: bool,
    queues: Series,
    cwnd: Series,
    rtt: Series,
    pacing: Series,
    events: u64,
}

impl Simulation {
    /// Builds the network of a validated scenario.
    pub fn new(scenario: &Scenario) -> Simulation {
        let spec = &scenario.spec;
        let net = Network::new(scenario);
        let end = Instant(spec.duration.0.as_nanos());
        let link = |l: &crate::network::LinkEnd| (l.from, l.to, l.node, l.iface);
        let probed_queues = match &spec.probes.queues {
            QueueProbe::All(true) => net.links.iter().map(link).chain(net.wireless_interfaces()).collect(),
            QueueProbe::All(false) => vec![],
            // A pair on the wireless channel samples its first node's MAC queue.
            QueueProbe::Links(links) => links
                .iter()
                .filter_map(|&[a, b]| {
                    let wired = net.links.iter().find(|l| (l.from, l.to) == (a, b)).map(link);
                    wired.or_else(|| net.wireless_interfaces().find(|w| w.0 == a).map(|(_, _, n, i)| (a, b, n, i)))
                })
                .collect(),
        };
        let layout = Layout::new(&net);
        let mut timers = Timers::new(layout.slots(), end);
        for (f, flow) in net.flows.iter().enumerate() {
            timers.arm(layout.slot(Component::Start(f)), flow.connect);
            if flow.stop < end {
                timers.arm(layout.slot(Component::Stop(f)), flow.stop);
            }
        }
        timers.arm(layout.slot(Component::Probe), Instant::ZERO);
        Simulation {
            now: Instant::ZERO,
            end,
            timers,
            touched_media: Vec::new(),
            media_phases: vec![0; net.media.len()],
            touched_endpoints: Vec::new(),
            is_touched_endpoint: vec![false; 2 * net.flows.len()],
            touched_nodes: Vec::new(),
            is_touched_node: vec![false; net.nodes.len()],
            node_timed: net.nodes.iter().map(|n| n.has_layers()).collect(),
            layout,
            net,
            probe_interval: spec.probes.interval.0,
            probed_queues,
            probe_cwnd: spec.probes.cwnd,
            probe_rtt: spec.probes.rtt,
            queues: Series::default(),
            cwnd: Series::default(),
            rtt: Series::default(),
            pacing: Series::default(),
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
        while let Some((at, slot)) = self.timers.pop_until(last) {
            self.now = at;
            self.wake(slot);
            self.arm_touched();
            self.events += 1;
        }
        self.now = self.now.max(until);
    }

    /// Runs to the end and summarises.
    pub fn run(mut self) -> RunResult {
        self.run_until(self.end);
        self.finish()
    }

    /// Notes that an endpoint's deadline may have moved; see `arm_touched`.
    #[inline]
    fn touch_endpoint(&mut self, f: usize, e: End) {
        let i = 2 * f + e as usize;
        if !std::mem::replace(&mut self.is_touched_endpoint[i], true) {
            self.touched_endpoints.push(i as u32);
        }
    }

    /// Notes that a node's deadline may have moved, if it has any.
    #[inline]
    fn touch_node(&mut self, n: usize) {
        if self.node_timed[n] && !std::mem::replace(&mut self.is_touched_node[n], true) {
            self.touched_nodes.push(n as u32);
        }
    }

    #[inline]
    fn touch_medium(&mut self, m: usize, phases: u8) {
        let touched = &mut self.media_phases[m];
        if *touched == 0 {
            self.touched_media.push(m as u32);
        }
        *touched |= phases;
    }

    /// Makes sure every touched component is woken at its current deadline.
    fn arm_touched(&mut self) {
        let now = self.now;
        while let Some(m) = self.touched_media.pop() {
            let m = m as usize;
            let phases = std::mem::take(&mut self.media_phases[m]);
            let medium = &self.net.media[m];
            if phases & DEPARTURES != 0 {
                if let Some(t) = medium.poll_timeout(Phase::Departure) {
                    self.timers.arm(self.layout.departures + m, t.max(now));
                }
            }
            if phases & ARRIVALS != 0 {
                if let Some(t) = medium.poll_timeout(Phase::Arrival) {
                    self.timers.arm(self.layout.arrivals + m, t.max(now));
                }
            }
        }
        while let Some(i) = self.touched_endpoints.pop() {
            let i = i as usize;
            self.is_touched_endpoint[i] = false;
            if let Some(t) = self.net.flows[i / 2].ends[i % 2].poll_timeout() {
                self.timers.arm(self.layout.endpoints + i, t.max(now));
            }
        }
        while let Some(n) = self.touched_nodes.pop() {
            let n = n as usize;
            self.is_touched_node[n] = false;
            if let Some(t) = self.net.nodes[n].poll_timeout() {
                self.timers.arm(self.layout.nodes + n, t.max(now));
            }
        }
    }

    /// Wakes a component whose slot fired. Each checks for itself what is
    /// due: a slot may fire at a deadline that has since moved later.
    fn wake(&mut self, slot: Slot) {
        let now = self.now;
        // Media's wake-ups are nearly all of a run's: they are told apart
        // by the slot's range, two predictable comparisons, before the
        // rest go through a match.
        let layout = &self.layout;
        let medium = if slot >= layout.arrivals {
            Some((slot - layout.arrivals, Phase::Arrival))
        } else if slot >= layout.departures && slot < layout.endpoints {
            Some((slot - layout.departures, Phase::Departure))
        } else {
            None
        };
        if let Some((m, phase)) = medium {
            self.net.media[m].handle_timeout(now, phase);
            self.medium_events(m);
            // A departure can start a frame's propagation; an arrival
            // moves only the arrivals.
            self.touch_medium(m, if phase == Phase::Departure { DEPARTURES | ARRIVALS } else { ARRIVALS });
            return;
        }
        // Flow starts and stops and the probe are armed where they are set
        // up; endpoints and nodes are re-armed by the drains below.
        match self.layout.component(slot) {
            Component::Start(f) => self.start_flow(f),
            Component::Stop(f) => self.net.flows[f].ends[End::Source as usize].stop(now),
            Component::Probe => self.probe(),
            Component::Departures(_) | Component::Arrivals(_) => unreachable!("media are woken above"),
            Component::Endpoint(f, e) => {
                let flow = &mut self.net.flows[f];
                flow.ends[e as usize].handle_timeout(now, &mut flow.record);
                self.drain_endpoint(f, e);
            }
            Component::Node(n) => {
                // A node checks which of its layers are due itself; woken at
                // a deadline that has since moved, it still gives its hop
                // layer a turn.
                self.net.nodes[n].handle_timeout(now);
                self.drain_node(n);
            }
        }
    }

    /// Passes on what a medium reports to the nodes attached to it.
    fn medium_events(&mut self, m: usize) {
        let now = self.now;
        while let Some(event) = self.net.media[m].poll_event() {
            let n = match event {
                Event::Received { port, frame, addressed } => {
                    let (n, iface) = self.net.ports[m][port];
                    self.net.nodes[n].handle_frame(now, iface, frame, addressed);
                    n
                }
                Event::Sent { port, outcome } => {
                    let (n, iface) = self.net.ports[m][port];
                    self.net.nodes[n].handle_sent(now, iface, outcome);
                    n
                }
            };
            self.drain_node(n);
        }
    }

    /// Passes on what node `n` produced: frames to media, packets to
    /// endpoints, and what those endpoints send in turn, until nothing is
    /// left (a loop, not a recursion: a burst of deliveries is long).
    fn drain_node(&mut self, n: usize) {
        loop {
            self.transmit_from(n);
            let Some(packet) = self.net.nodes[n].poll_delivery() else { break };
            self.deliver_to_host(n, packet);
        }
        self.touch_node(n);
    }

    /// Hands the frames node `n` can send now to the media of their interfaces.
    fn transmit_from(&mut self, n: usize) {
        let now = self.now;
        while let Some((iface, frame)) = self.net.nodes[n].poll_transmit(now) {
            let (m, port) = self.net.tx[n][iface];
            self.net.media[m].transmit(now, port, frame);
            self.touch_medium(m, DEPARTURES);
        }
    }

    /// Node `n` delivered `packet` to its host: to the endpoint of its flow,
    /// whose answer goes to the node (the caller drains it).
    fn deliver_to_host(&mut self, n: usize, packet: Packet) {
        let Some(&(f, e)) = packet.flow().and_then(|key| self.net.hosts[n].get(&key)) else { return };
        let flow = &mut self.net.flows[f];
        flow.ends[e as usize].handle_packet(self.now, packet, &mut flow.record);
        self.send_from(f, e);
    }

    /// Hands what an endpoint has ready to its node.
    fn send_from(&mut self, f: usize, e: End) {
        let now = self.now;
        let n = self.net.flows[f].nodes[e as usize];
        loop {
            let flow = &mut self.net.flows[f];
            let Some(packet) = flow.ends[e as usize].poll_transmit(now, &mut flow.record) else { break };
            self.net.nodes[n].handle_local(now, packet);
            // Frames leave as they are made, so that the node's hop layer
            // is asked for one after each packet, as after any input.
            self.transmit_from(n);
        }
        self.touch_endpoint(f, e);
    }

    /// Sends what an endpoint has ready, and what that causes at its node.
    fn drain_endpoint(&mut self, f: usize, e: End) {
        self.send_from(f, e);
        self.drain_node(self.net.flows[f].nodes[e as usize]);
    }

    /// A flow's start timer: first at its connection, if that comes
    /// earlier, then at its data.
    fn start_flow(&mut self, f: usize) {
        let flow = &mut self.net.flows[f];
        if self.now < flow.start {
            flow.ends[End::Source as usize].open(self.now);
            self.timers.arm(self.layout.slot(Component::Start(f)), flow.start);
        } else {
            flow.ends[End::Source as usize].start(self.now);
        }
        self.drain_endpoint(f, End::Source);
    }

    fn probe(&mut self) {
        let t = self.now.as_secs_f64();
        for &(from, to, node, iface) in &self.probed_queues {
            self.queues.push(t, from, to, self.net.nodes[node].backlog(iface) as f64);
        }
        for (f, flow) in self.net.flows.iter().enumerate() {
            if let Some((cwnd, srtt, pacing)) = flow.ends[End::Source as usize].probe() {
                if self.probe_cwnd {
                    self.cwnd.push(t, f as u32 + 1, 0, cwnd);
                    if !pacing.is_nan() {
                        self.pacing.push(t, f as u32 + 1, 0, pacing);
                    }
                }
                if self.probe_rtt {
                    self.rtt.push(t, f as u32 + 1, 0, srtt);
                }
            }
        }
        let next = self.now + self.probe_interval;
        if next < self.end {
            self.timers.arm(self.layout.slot(Component::Probe), next);
        }
    }

    /// Summarises the run so far.
    pub fn finish(self) -> RunResult {
        let end = self.now;
        let mut goodput = Series::default();
        let interval = self.probe_interval.as_secs_f64();
        let flows: Vec<FlowSummary> = self
            .net
            .flows
            .iter()
            .enumerate()
            .map(|(f, flow)| {
                let r = &flow.record;
                for (t, bytes) in r.goodput.bins(end) {
                    goodput.push(t.as_secs_f64(), f as u32 + 1, 0, bytes as f64 * 8.0 / interval);
                }
                let until = r.completed.unwrap_or(flow.stop.min(end));
                let active = until.saturating_since(r.data_started.unwrap_or(flow.start)).as_secs_f64();
                let mut summary = FlowSummary {
                    id: f as u32 + 1,
                    src: flow.labels[0],
                    dst: flow.labels[1],
                    app: app_name(flow.app),
                    goodput_bps: if active > 0.0 { r.delivered as f64 * 8.0 / active } else { 0.0 },
                    delivered_bytes: r.delivered,
                    corrupt_bytes: r.corrupt,
                    acked_bytes: 0,
                    delay_mean_s: r.delay.mean(),
                    delay_std_s: r.delay.std(),
                    delay_p50_s: r.delay_histogram.quantile(0.5),
                    delay_p95_s: r.delay_histogram.quantile(0.95),
                    delay_p99_s: r.delay_histogram.quantile(0.99),
                    completion_s: r.completed.map(|t| t.as_secs_f64()),
                    packets_sent: r.packets_sent,
                    rtt_mean_s: r.srtt.mean(),
                    rto_mean_s: r.base_rto.mean(),
                    retransmits: 0,
                    timeouts: 0,
                };
                for e in &flow.ends {
                    e.summarize(r, &mut summary);
                }
                summary
            })
            .collect();
        let links = self
            .net
            .links
            .iter()
            .enumerate()
            .map(|(m, l)| {
                let s = self.net.media[m].stats(0);
                LinkSummary {
                    from: l.from,
                    to: l.to,
                    class: l.class.clone(),
                    transmitted: s.transmitted,
                    transmitted_bytes: s.transmitted_bytes,
                    lost: s.lost,
                    corrupted: s.corrupted,
                    dropped: self.net.nodes[l.node].interfaces()[l.iface].stats.dropped,
                }
            })
            .collect();
        let counters = self
            .net
            .nodes
            .iter()
            .zip(&self.net.labels)
            .flat_map(|(node, &label)| {
                node.counters().into_iter().map(move |(name, value)| Counter {
                    node: label,
                    name: name.to_string(),
                    value,
                })
            })
            .collect();
        let fairness = jain_index(&flows.iter().map(|f| f.goodput_bps).collect::<Vec<_>>());
        let (mut radios, mut pairs) = (Vec::new(), Vec::new());
        for (m, medium) in self.net.media.iter().enumerate() {
            let AnyMedium::Wifi(wifi) = medium else { continue };
            let label = |port: usize| self.net.labels[self.net.ports[m][port].0];
            for port in 0..self.net.ports[m].len() {
                let r = wifi.radio(port);
                radios.push(RadioSummary {
                    node: label(port),
                    airtime_s: r.airtime.as_secs_f64(),
                    data_frames: r.data_frames,
                    broadcasts: r.broadcasts,
                    retries: r.retries,
                    acked: r.acked,
                    retry_drops: r.retry_drops,
                    collisions: r.collisions,
                    received: r.received,
                    overheard: r.overheard,
                    duplicates: r.duplicates,
                });
            }
            for (from, to, p) in wifi.pairs() {
                pairs.push(PairSummary {
                    from: label(from),
                    to: label(to),
                    sent: p.sent,
                    received: p.received,
                    collided: p.collided,
                    errored: p.errored,
                });
            }
        }
        RunResult {
            flows,
            links,
            counters,
            radios,
            pairs,
            goodput,
            queues: self.queues,
            cwnd: self.cwnd,
            rtt: self.rtt,
            pacing: self.pacing,
            fairness,
            events: self.events,
            sim_time_s: end.as_secs_f64(),
        }
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
