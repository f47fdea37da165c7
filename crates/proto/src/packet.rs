//! What moves between nodes, and the two places a coding layer sits in a
//! node's stack.

use crate::tcp::Segment;
use crate::tcpnc::Combination;
use crate::Instant;
use std::fmt::Debug;

/// Which way a packet travels along its flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// From the flow's source to its destination.
    Forward = 0,
    /// From the destination back to the source: TCP's ACKs.
    Reverse = 1,
}

/// A packet in the network. Routing uses only `flow` and `direction`.
#[derive(Clone, Debug)]
pub struct Packet {
    pub flow: u32,
    pub direction: Direction,
    /// Bytes on the wire, headers included: what a link serialises.
    pub bytes: u32,
    pub body: Body,
}

#[derive(Clone, Debug)]
pub enum Body {
    Tcp(Segment),
    Udp { payload: u32, sent_at: Instant },
    /// TCP/NC: a random linear combination of one flow's segments.
    Combination(Box<Combination>),
    /// TCP-HONC: a link-local frame (a coded block member or an ACK-NCB); never routed.
    Honc(Box<crate::honc::Frame>),
}

/// IPv4 and UDP headers.
pub const UDP_HEADER_BYTES: u32 = 28;

/// A coding layer between transport and IP at a flow's end host (TCP/NC's
/// source and sink). Sans-IO: the driver hands it what transport sends and
/// what the network delivers, and drains both directions after every call.
pub trait HostLayer: Debug + Send {
    /// Transport sends `packet`; call `poll_transmit` until `None` afterwards.
    fn handle_transmit(&mut self, now: Instant, packet: Packet);
    /// The network delivered `packet` of this flow to this host; drain `poll_receive` and `poll_transmit` afterwards.
    fn handle_receive(&mut self, now: Instant, packet: Packet);
    /// Called when `now >= poll_timeout()`.
    fn handle_timeout(&mut self, _now: Instant) {}
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    /// The next packet for the network.
    fn poll_transmit(&mut self, now: Instant) -> Option<Packet>;
    /// The next packet for transport.
    fn poll_receive(&mut self, now: Instant) -> Option<Packet>;
}

/// A coding layer between IP and the links of one node (hop-by-hop TCP/NC,
/// TCP-HONC). It owns the node's output queues: the driver offers it what
/// IP forwards, asks it for a frame whenever a link to a neighbour is free
/// (so it codes at the last moment, as a per-hop coder must), and hands it
/// every frame that arrives. Neighbours are named by their node index.
pub trait HopLayer: Debug + Send {
    /// IP forwards `packet` to neighbour `next`.
    fn handle_forward(&mut self, now: Instant, next: u32, packet: Packet);
    /// A frame arrived from neighbour `from`.
    fn handle_frame(&mut self, now: Instant, from: u32, frame: Packet);
    /// Called when `now >= poll_timeout()`.
    fn handle_timeout(&mut self, _now: Instant) {}
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    /// The frame to put on the free link to `next`, if any.
    fn poll_frame(&mut self, now: Instant, next: u32) -> Option<Packet>;
    /// A packet for IP at this node: to route onwards or deliver locally.
    fn poll_packet(&mut self, now: Instant) -> Option<Packet>;
    /// Packets waiting for the link to `next`, for queue probes.
    fn queue_len(&self, next: u32) -> usize;
    /// Where routing offers `flow` several next hops (neighbours, in the
    /// routing's order of preference), which one this packet takes; called
    /// just before `handle_forward`. `None` leaves the choice to routing,
    /// which keeps each flow on one path: a layer that returns `Some` must
    /// cope with the reordering that spreading one flow over paths causes.
    fn choose_next_hop(&mut self, _now: Instant, _flow: u32, _candidates: &[u32]) -> Option<u32> {
        None
    }
}
