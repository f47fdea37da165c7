//! The two places a coding protocol sits in a node.

use super::iface::{IfaceId, Interface};
use super::routes::NextHop;
use crate::frame::Frame;
use crate::packet::Packet;
use crate::time::Instant;
use std::fmt::Debug;

/// A coding layer between transport and IP at one end of one flow (TCP/NC's
/// source and sink, TCP-Forward, intra-flow coding at a source or sink).
/// The node hands it what the host sends on the flow and what arrives for
/// the host on it, and drains both directions after every call.
pub trait EndLayer: Debug + Send + std::any::Any {
    /// The host sends `packet`; drain `poll_transmit` afterwards.
    fn handle_transmit(&mut self, now: Instant, packet: Packet);
    /// The network delivered `packet` of this flow; drain `poll_receive` and `poll_transmit` afterwards.
    fn handle_receive(&mut self, now: Instant, packet: Packet);
    /// Called when `now >= poll_timeout()`.
    fn handle_timeout(&mut self, _now: Instant) {}
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    /// The next packet for the network.
    fn poll_transmit(&mut self, now: Instant) -> Option<Packet>;
    /// The next packet for the host.
    fn poll_receive(&mut self, now: Instant) -> Option<Packet>;
    /// Named counters, for run results.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}

/// What became of a frame an interface sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// An attempt to send it went on the air (each retransmission again);
    /// the interface still holds it. Media that retransmit say this; a
    /// point-to-point link does not.
    Started,
    /// It left; the medium says nothing of its fate (a point-to-point link, a broadcast).
    Sent,
    /// The addressee acknowledged it.
    Acked,
    /// The medium gave up on it (retries exhausted).
    Failed,
}

/// A coding layer between IP and the interfaces of one node (hop-by-hop
/// TCP/NC, TCP-HONC, COPE). Every method has a default that forwards
/// plainly, so a protocol writes only what it changes: `Forwarding` is the
/// layer that changes nothing.
///
/// The node calls `poll_frame` whenever an interface can send, so a
/// protocol may code at the last moment, and gives it every frame that
/// arrives, overheard ones included.
pub trait HopLayer: Debug + Send + std::any::Any {
    /// IP forwards `packet` to `next`, a neighbour on interface `iface`.
    fn handle_forward(&mut self, now: Instant, packet: Packet, next: NextHop, iface: &mut Interface) {
        iface.enqueue(now, packet, next.neighbour);
    }

    /// A frame arrived on `iface`, for this node (`addressed`) or heard in
    /// passing. Return it to let the node route an IP packet in it (it
    /// drops what was overheard); keep it to consume it.
    fn handle_frame(&mut self, _now: Instant, _iface: IfaceId, frame: Frame, _addressed: bool) -> Option<Frame> {
        Some(frame)
    }

    /// A packet for IP at this node: to route onwards or deliver here.
    fn poll_packet(&mut self, _now: Instant) -> Option<Packet> {
        None
    }

    /// Whether `poll_frame` may have a frame for an interface whose queue is
    /// empty: true for a layer that keeps queues of its own. The node asks
    /// once, when it is built, and does not ask a layer that says no about
    /// interfaces with nothing queued.
    fn holds_frames(&self) -> bool {
        false
    }

    /// Interface `id` can send: the frame to send now, if any.
    fn poll_frame(&mut self, now: Instant, _id: IfaceId, iface: &mut Interface) -> Option<Frame> {
        iface.dequeue(now).map(|q| Frame::packet(q.next(), q.packet))
    }

    /// What became of the last frame interface `id` sent: it went on the
    /// air (`Started`, the interface still busy), or the medium is done with it.
    fn handle_sent(&mut self, _now: Instant, _id: IfaceId, _outcome: Outcome) {}

    /// Called when `now >= poll_timeout()`.
    fn handle_timeout(&mut self, _now: Instant) {}

    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    /// Where routing offers `packet` several next hops (in its order of
    /// preference), which one it takes, by index. `None` keeps
    /// routing's first, which keeps each flow on one path: a layer that
    /// answers must cope with the reordering that spreading a flow causes.
    fn choose_next_hop(&mut self, _now: Instant, _packet: &Packet, _candidates: &[NextHop]) -> Option<usize> {
        None
    }

    /// Packets the layer holds for interface `id` beside its queue, for probes.
    fn held(&self, _id: IfaceId) -> usize {
        0
    }

    /// Named counters, for run results.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}

/// What a node that does not code does: every default of [`HopLayer`].
/// A node built without a hop layer calls it directly, not through a trait object.
#[derive(Clone, Copy, Debug, Default)]
pub struct Forwarding;

impl HopLayer for Forwarding {}
