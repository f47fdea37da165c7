//! The node: IP forwarding, interfaces with their queue disciplines, and
//! the two coding slots, as one sans-IO state machine that the simulator
//! and the daemon drive the same way.
//!
//! ```text
//!   host (applications, TCP, UDP)     handle_local  /  poll_delivery
//!        end layer, per flow end
//!   IP: routes, TTL
//!        hop layer
//!   interfaces: queue disciplines     poll_transmit /  handle_frame, handle_sent
//! ```
//!
//! Driver contract: after every `handle_*` call, drain `poll_transmit`
//! (frames for interfaces whose medium can take one) and `poll_delivery`
//! (packets for the host), then re-arm the timer at `poll_timeout()`. Tell
//! the node with `handle_sent` when an interface's medium can take its
//! next frame; an interface starts ready. The hop layer is asked for a
//! frame only when the driver polls, so it has seen everything an input
//! brought before it decides what to send.

mod iface;
mod layer;
mod routes;

pub use iface::{DropTail, IfaceId, Interface, InterfaceInfo, InterfaceStats, QueueDisc, Queued};
pub use layer::{EndLayer, Forwarding, HopLayer, Outcome};
pub use routes::{NextHop, Route, Routes};

use crate::frame::Frame;
use crate::packet::{FlowKey, Packet, Parsers};
use crate::time::Instant;
use rustc_hash::FxHashMap;
use std::collections::VecDeque;
use std::net::Ipv4Addr;
use std::sync::Arc;

/// Counters of a node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeStats {
    /// Packets sent on towards another node.
    pub forwarded: u64,
    /// Packets handed to the host.
    pub delivered: u64,
    /// Packets with no route, dropped.
    pub no_route: u64,
    /// Packets whose TTL ran out, dropped.
    pub ttl_expired: u64,
    /// Frames whose bytes did not parse (corrupted on a medium, or a
    /// protocol this node does not know), dropped.
    pub malformed: u64,
    /// Frames that could not be emitted (a virtual payload in a real run: a bug), dropped.
    pub unemitted: u64,
}

/// How a node is set up.
#[derive(Clone, Debug)]
pub struct NodeConfig {
    pub addr: Ipv4Addr,
    /// Frames leave as bytes and arriving bytes are parsed; otherwise typed
    /// frames move between nodes and coded payloads stay virtual.
    pub real_payloads: bool,
    /// The message kinds this node can parse.
    pub parsers: Arc<Parsers>,
}

#[derive(Debug)]
pub struct Node {
    config: NodeConfig,
    ifaces: Vec<Interface>,
    routes: Routes,
    ends: Vec<Box<dyn EndLayer>>,
    end_of: FxHashMap<FlowKey, usize>,
    /// None for a node that does not code: it forwards as [`Forwarding`]
    /// does, with no call through a trait object on its hot path.
    hop: Option<Box<dyn HopLayer>>,
    /// What `hop.holds_frames()` answered when the node was built.
    hop_holds_frames: bool,
    /// The first interface not yet offered a frame since the last input:
    /// each input lets every interface that can send be asked once.
    unoffered: IfaceId,
    deliveries: VecDeque<Packet>,
    /// Set while the hop layer's packets are routed, so that what routing
    /// causes is picked up by the same loop rather than a nested one.
    routing_hop_packets: bool,
    stats: NodeStats,
}

impl Node {
    /// A node with interfaces `ifaces` and, if it codes per hop, its hop layer.
    pub fn new(config: NodeConfig, ifaces: Vec<Interface>, hop: Option<Box<dyn HopLayer>>) -> Node {
        Node {
            config,
            ifaces,
            routes: Routes::default(),
            ends: Vec::new(),
            end_of: FxHashMap::default(),
            hop_holds_frames: hop.as_ref().is_some_and(|h| h.holds_frames()),
            unoffered: 0,
            hop,
            deliveries: VecDeque::new(),
            routing_hop_packets: false,
            stats: NodeStats::default(),
        }
    }

    pub fn addr(&self) -> Ipv4Addr {
        self.config.addr
    }

    pub fn routes_mut(&mut self) -> &mut Routes {
        &mut self.routes
    }

    /// Puts `layer` at this node's end of `flow`: it sees the flow's packets
    /// the host sends and those that arrive for the host, both directions.
    pub fn add_end_layer(&mut self, flow: FlowKey, layer: Box<dyn EndLayer>) {
        let i = self.ends.len();
        self.ends.push(layer);
        self.end_of.insert(flow, i);
        self.end_of.insert(flow.reversed(), i);
    }

    /// The end layer of `flow` (either direction), for inspection (downcast it through `&dyn Any`).
    pub fn end_layer(&self, flow: FlowKey) -> Option<&dyn EndLayer> {
        self.end_of.get(&flow).map(|&i| &*self.ends[i])
    }

    /// The hop layer, for inspection (downcast it through `&dyn Any`).
    pub fn hop(&self) -> Option<&dyn HopLayer> {
        self.hop.as_deref()
    }

    /// Whether a coding layer sits in this node. Only layers set timers, so
    /// a driver need not ask a node without one for its deadline.
    #[inline]
    pub fn has_layers(&self) -> bool {
        self.hop.is_some() || !self.ends.is_empty()
    }

    pub fn interfaces(&self) -> &[Interface] {
        &self.ifaces
    }

    /// Packets waiting for interface `id`: its queue and what the hop layer holds for it.
    pub fn backlog(&self, id: IfaceId) -> usize {
        self.ifaces[id].queue().len() + self.hop.as_ref().map_or(0, |h| h.held(id))
    }

    pub fn stats(&self) -> NodeStats {
        self.stats
    }

    /// The node's counters and its layers', summed by name over the end layers.
    pub fn counters(&self) -> Vec<(&'static str, u64)> {
        let s = self.stats;
        let mut out = vec![
            ("forwarded", s.forwarded),
            ("delivered", s.delivered),
            ("no_route", s.no_route),
            ("ttl_expired", s.ttl_expired),
            ("malformed", s.malformed),
            ("unemitted", s.unemitted),
        ];
        let hop = self.hop.as_ref().map(|h| h.counters()).unwrap_or_default();
        for (name, value) in hop.into_iter().chain(self.ends.iter().flat_map(|e| e.counters())) {
            match out.iter_mut().find(|(n, _)| *n == name) {
                Some(entry) => entry.1 += value,
                None => out.push((name, value)),
            }
        }
        out
    }

    /// The host sends `packet`.
    pub fn handle_local(&mut self, now: Instant, packet: Packet) {
        match self.end_layer_of(&packet) {
            Some(i) => {
                self.ends[i].handle_transmit(now, packet);
                self.drain_end(now, i);
            }
            None => self.route(now, packet),
        }
        self.settle(now);
    }

    /// A frame arrived on interface `iface`, addressed to this node or overheard.
    pub fn handle_frame(&mut self, now: Instant, iface: IfaceId, frame: Frame, addressed: bool) {
        let frame = if frame.as_bytes().is_some() {
            match frame.parsed(&self.config.parsers, self.config.addr) {
                Ok(f) => f,
                Err(_) => {
                    self.stats.malformed += 1;
                    return;
                }
            }
        } else {
            frame
        };
        let kept = match &mut self.hop {
            Some(hop) => hop.handle_frame(now, iface, frame, addressed),
            None => Forwarding.handle_frame(now, iface, frame, addressed),
        };
        if let Some(Ok(packet)) = kept.filter(|_| addressed).map(Frame::into_packet) {
            self.route(now, packet);
        }
        self.settle(now);
    }

    /// Interface `iface`'s medium is done with its frame and can take the
    /// next, or (`Outcome::Started`) has just put an attempt at it on the air.
    #[inline]
    pub fn handle_sent(&mut self, now: Instant, iface: IfaceId, outcome: Outcome) {
        if outcome != Outcome::Started {
            self.ifaces[iface].ready = true;
        }
        if let Some(hop) = &mut self.hop {
            hop.handle_sent(now, iface, outcome);
        }
        self.settle(now);
    }

    /// Called when `now >= poll_timeout()`, or at an earlier deadline that
    /// has since moved later: each layer runs only if it is due.
    pub fn handle_timeout(&mut self, now: Instant) {
        if let Some(hop) = self.hop.as_mut().filter(|h| h.poll_timeout().is_some_and(|t| t <= now)) {
            hop.handle_timeout(now);
        }
        for i in 0..self.ends.len() {
            if self.ends[i].poll_timeout().is_some_and(|t| t <= now) {
                self.ends[i].handle_timeout(now);
                self.drain_end(now, i);
            }
        }
        self.settle(now);
    }

    /// The next frame for a medium, with the interface it leaves by: the hop
    /// layer's choice for the next interface that can send and may have one.
    /// After each input, every such interface is asked once, in order.
    #[inline]
    pub fn poll_transmit(&mut self, now: Instant) -> Option<(IfaceId, Frame)> {
        while self.unoffered < self.ifaces.len() {
            let id = self.unoffered;
            self.unoffered += 1;
            let iface = &mut self.ifaces[id];
            if !iface.ready || !(self.hop_holds_frames || iface.maybe_queued) {
                continue;
            }
            let frame = match &mut self.hop {
                Some(hop) => hop.poll_frame(now, id, iface),
                None => Forwarding.poll_frame(now, id, iface),
            };
            let Some(mut frame) = frame else {
                self.ifaces[id].maybe_queued = false;
                continue;
            };
            frame.set_transmitter(self.config.addr);
            if self.config.real_payloads {
                match frame.into_bytes() {
                    Ok(f) => frame = f,
                    Err(_) => {
                        self.stats.unemitted += 1;
                        continue;
                    }
                }
            }
            let iface = &mut self.ifaces[id];
            iface.ready = false;
            iface.stats.sent += 1;
            return Some((id, frame));
        }
        None
    }

    /// The next packet for the host.
    #[inline]
    pub fn poll_delivery(&mut self) -> Option<Packet> {
        self.deliveries.pop_front()
    }

    pub fn poll_timeout(&self) -> Option<Instant> {
        let mut next = self.hop.as_ref().and_then(|h| h.poll_timeout());
        for end in &self.ends {
            if let Some(t) = end.poll_timeout() {
                next = Some(next.map_or(t, |n| n.min(t)));
            }
        }
        next
    }

    fn end_layer_of(&self, packet: &Packet) -> Option<usize> {
        if self.ends.is_empty() {
            return None;
        }
        packet.flow().and_then(|f| self.end_of.get(&f).copied())
    }

    /// Moves what an end layer produced: down to IP, up to the host.
    fn drain_end(&mut self, now: Instant, i: usize) {
        loop {
            if let Some(p) = self.ends[i].poll_transmit(now) {
                self.route(now, p);
            } else if let Some(p) = self.ends[i].poll_receive(now) {
                self.stats.delivered += 1;
                self.deliveries.push_back(p);
            } else {
                break;
            }
        }
    }

    /// IP: deliver here, through the flow's end layer if it has one, or forward.
    fn route(&mut self, now: Instant, packet: Packet) {
        if packet.dst != self.config.addr {
            return self.forward(now, packet);
        }
        match self.end_layer_of(&packet) {
            Some(i) => {
                self.ends[i].handle_receive(now, packet);
                self.drain_end(now, i);
            }
            None => {
                self.stats.delivered += 1;
                self.deliveries.push_back(packet);
            }
        }
    }

    fn forward(&mut self, now: Instant, mut packet: Packet) {
        if packet.src != self.config.addr {
            packet.ttl = packet.ttl.saturating_sub(1);
            if packet.ttl == 0 {
                self.stats.ttl_expired += 1;
                return;
            }
        }
        let Some(route) = self.routes.lookup(&packet) else {
            self.stats.no_route += 1;
            return;
        };
        let mut next = route.first;
        if let (false, Some(hop)) = (route.candidates.is_empty(), &mut self.hop) {
            if let Some(i) = hop.choose_next_hop(now, &packet, &route.candidates) {
                next = route.candidates[i.min(route.candidates.len() - 1)];
            }
        }
        self.stats.forwarded += 1;
        let iface = &mut self.ifaces[next.iface];
        match &mut self.hop {
            Some(hop) => hop.handle_forward(now, packet, next, iface),
            None => Forwarding.handle_forward(now, packet, next, iface),
        }
    }

    /// Ends an input: routes what the hop layer has for IP (a packet it
    /// decoded or released may make it release more), and lets every
    /// interface be offered a frame again.
    fn settle(&mut self, now: Instant) {
        self.unoffered = 0;
        if self.hop.is_none() || std::mem::replace(&mut self.routing_hop_packets, true) {
            return;
        }
        while let Some(packet) = self.hop.as_mut().and_then(|h| h.poll_packet(now)) {
            self.route(now, packet);
        }
        self.routing_hop_packets = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Data;
    use crate::packet::Payload;
    use crate::time::Duration;
    use crate::wire::udp::Datagram;
    use std::sync::Mutex;

    /// A hop layer that forwards plainly and remembers every outcome it hears.
    #[derive(Debug, Default)]
    struct Outcomes(Arc<Mutex<Vec<Outcome>>>);

    impl HopLayer for Outcomes {
        fn handle_sent(&mut self, _now: Instant, _id: IfaceId, outcome: Outcome) {
            self.0.lock().unwrap().push(outcome);
        }
    }

    #[test]
    fn an_attempt_on_the_air_keeps_the_interface_busy_and_the_hop_layer_hears_every_outcome() {
        let neighbour = Ipv4Addr::new(10, 0, 0, 2);
        let info = InterfaceInfo {
            class: "wifi".into(),
            neighbours: vec![neighbour],
            capacity_bps: 11_000_000,
            delay: Duration::ZERO,
            loss: 0.0,
            coded: true,
            queue: 10,
        };
        let heard = Arc::new(Mutex::new(Vec::new()));
        let config = NodeConfig {
            addr: Ipv4Addr::new(10, 0, 0, 1),
            real_payloads: false,
            parsers: Arc::new(Parsers::default()),
        };
        let mut node = Node::new(
            config,
            vec![Interface::new(info, Box::new(DropTail::new(10)))],
            Some(Box::new(Outcomes(heard.clone()))),
        );
        node.routes_mut().add_destination(neighbour, vec![NextHop { iface: 0, neighbour }]);
        let packet = || {
            Packet::new(
                Ipv4Addr::new(10, 0, 0, 1),
                neighbour,
                Payload::Udp(Datagram::new(1, 2, Data::Virtual { len: 100, offset: 0 })),
            )
        };
        let now = Instant::ZERO;
        node.handle_local(now, packet());
        node.handle_local(now, packet());
        assert!(node.poll_transmit(now).is_some());
        assert!(node.poll_transmit(now).is_none(), "one frame at a time");
        for outcome in [Outcome::Started, Outcome::Started] {
            node.handle_sent(now, 0, outcome);
            assert!(node.poll_transmit(now).is_none(), "still sending after {outcome:?}");
        }
        node.handle_sent(now, 0, Outcome::Acked);
        assert!(node.poll_transmit(now).is_some(), "done: the next frame goes");
        node.handle_sent(now, 0, Outcome::Failed);
        assert_eq!(*heard.lock().unwrap(), [Outcome::Started, Outcome::Started, Outcome::Acked, Outcome::Failed]);
    }
}
