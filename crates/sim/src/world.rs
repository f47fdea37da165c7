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

use crate::engine::{Alarms, EventQueue};
use crate::medium::{Event, Phase};
use crate::metrics::jain_index;
use crate::network::{End, Network};
use crate::result::{Counter, FlowSummary, LinkSummary, RunResult, Series};
use crate::scenario::{AppKind, QueueProbe, Scenario};
use ncmesh_proto::{Duration, Instant, Packet};

/// What the event queue holds, in the order simultaneous ones run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Wake {
    Start(u32),
    Stop(u32),
    Probe,
    /// A component's deadline: see [`Simulation::component`].
    Component(u32),
}

/// Which component an alarm slot belongs to. Slots are laid out as the
/// media's departures, two per flow (source, sink), one per node, then the
/// media's arrivals.
#[derive(Clone, Copy)]
enum Component {
    Departures(usize),
    Endpoint(usize, End),
    Node(usize),
    Arrivals(usize),
}

/// One simulation run in progress.
#[derive(Debug)]
pub struct Simulation {
    now: Instant,
    end: Instant,
    queue: EventQueue<Wake>,
    alarms: Alarms,
    net: Network,
    probe_interval: Duration,
    /// The media whose transmitters' backlogs are sampled.
    probed_queues: Vec<usize>,
    probe_cwnd: bool,
    probe_rtt: bool,
    queues: Series,
    cwnd: Series,
    rtt: Series,
    events: u64,
}

impl Simulation {
    /// Builds the network of a validated scenario.
    pub fn new(scenario: &Scenario) -> Simulation {
        let spec = &scenario.spec;
        let net = Network::new(scenario);
        let end = Instant(spec.duration.0.as_nanos());
        let probed_queues = match &spec.probes.queues {
            QueueProbe::All(true) => (0..net.media.len()).collect(),
            QueueProbe::All(false) => vec![],
            QueueProbe::Links(links) => links.iter().filter_map(|[a, b]| net.links.iter().position(|l| (l.from, l.to) == (*a, *b))).collect(),
        };
        let mut queue = EventQueue::default();
        for (f, flow) in net.flows.iter().enumerate() {
            queue.push(flow.start, Wake::Start(f as u32));
            if flow.stop < end {
                queue.push(flow.stop, Wake::Stop(f as u32));
            }
        }
        queue.push(Instant::ZERO, Wake::Probe);
        let slots = 2 * net.media.len() + 2 * net.flows.len() + net.nodes.len();
        Simulation {
            now: Instant::ZERO,
            end,
            queue,
            alarms: Alarms::new(slots),
            net,
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
                Wake::Stop(f) => self.net.flows[f as usize].ends[End::Source as usize].stop(self.now),
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
        let m = self.net.media.len();
        let f = 2 * self.net.flows.len();
        let n = self.net.nodes.len();
        if slot < m {
            Component::Departures(slot)
        } else if slot < m + f {
            let e = if (slot - m) % 2 == 0 { End::Source } else { End::Sink };
            Component::Endpoint((slot - m) / 2, e)
        } else if slot < m + f + n {
            Component::Node(slot - m - f)
        } else {
            Component::Arrivals(slot - m - f - n)
        }
    }

    fn slot(&self, component: Component) -> usize {
        let m = self.net.media.len();
        let f = 2 * self.net.flows.len();
        match component {
            Component::Departures(i) => i,
            Component::Endpoint(flow, e) => m + 2 * flow + e as usize,
            Component::Node(i) => m + f + i,
            Component::Arrivals(i) => m + f + self.net.nodes.len() + i,
        }
    }

    fn deadline(&self, component: Component) -> Option<Instant> {
        match component {
            Component::Departures(m) => self.net.media[m].poll_timeout(Phase::Departure),
            Component::Arrivals(m) => self.net.media[m].poll_timeout(Phase::Arrival),
            Component::Endpoint(f, e) => self.net.flows[f].ends[e as usize].poll_timeout(),
            Component::Node(n) => self.net.nodes[n].poll_timeout(),
        }
    }

    /// Makes sure the component is woken at its current deadline.
    fn rearm(&mut self, component: Component) {
        if let Some(t) = self.deadline(component) {
            let t = t.max(self.now);
            let slot = self.slot(component);
            if self.alarms.arm(slot, t) {
                self.queue.push(t, Wake::Component(slot as u32));
            }
        }
    }

    fn wake(&mut self, slot: usize) {
        let now = self.now;
        let component = self.component(slot);
        let due = self.deadline(component).is_some_and(|t| t <= now);
        match component {
            Component::Departures(m) | Component::Arrivals(m) => {
                let phase = if matches!(component, Component::Departures(_)) { Phase::Departure } else { Phase::Arrival };
                if due {
                    self.net.media[m].handle_timeout(now, phase);
                }
                self.medium_events(m);
                self.rearm(Component::Arrivals(m));
            }
            Component::Endpoint(f, e) => {
                if due {
                    let flow = &mut self.net.flows[f];
                    flow.ends[e as usize].handle_timeout(now, &mut flow.record);
                }
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
        self.rearm(component);
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
        let now = self.now;
        loop {
            if let Some((iface, frame)) = self.net.nodes[n].poll_transmit() {
                let (m, port) = self.net.tx[n][iface];
                self.net.media[m].transmit(now, port, frame);
                self.rearm(Component::Departures(m));
            } else if let Some(packet) = self.net.nodes[n].poll_delivery() {
                self.to_host(n, packet);
            } else {
                break;
            }
        }
        self.rearm(Component::Node(n));
    }

    /// Node `n` delivered `packet` to its host: to the endpoint of its flow,
    /// whose answer goes to the node (the caller drains it).
    fn to_host(&mut self, n: usize, packet: Packet) {
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
        }
        self.rearm(Component::Endpoint(f, e));
    }

    /// Sends what an endpoint has ready, and what that causes at its node.
    fn drain_endpoint(&mut self, f: usize, e: End) {
        self.send_from(f, e);
        self.drain_node(self.net.flows[f].nodes[e as usize]);
    }

    fn start_flow(&mut self, f: usize) {
        self.net.flows[f].ends[End::Source as usize].start(self.now);
        self.drain_endpoint(f, End::Source);
    }

    fn probe(&mut self) {
        let t = self.now.as_secs_f64();
        for &m in &self.probed_queues {
            let link = &self.net.links[m];
            self.queues.push(t, link.from, link.to, self.net.nodes[link.node].backlog(link.iface) as f64);
        }
        for (f, flow) in self.net.flows.iter().enumerate() {
            if let Some((cwnd, srtt)) = flow.ends[End::Source as usize].probe() {
                if self.probe_cwnd {
                    self.cwnd.push(t, f as u32 + 1, 0, cwnd);
                }
                if self.probe_rtt {
                    self.rtt.push(t, f as u32 + 1, 0, srtt);
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
                let active = until.saturating_since(flow.start).as_secs_f64();
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
                    dropped: self.net.nodes[l.node].interfaces()[l.iface].stats.dropped,
                }
            })
            .collect();
        let counters = self
            .net
            .nodes
            .iter()
            .zip(&self.net.labels)
            .flat_map(|(node, &label)| node.counters().into_iter().map(move |(name, value)| Counter { node: label, name: name.to_string(), value }))
            .collect();
        let fairness = jain_index(&flows.iter().map(|f| f.goodput_bps).collect::<Vec<_>>());
        RunResult { flows, links, counters, goodput, queues: self.queues, cwnd: self.cwnd, rtt: self.rtt, fairness, events: self.events, sim_time_s: end.as_secs_f64() }
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
