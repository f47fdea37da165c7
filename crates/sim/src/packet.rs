//! What moves between nodes.

use ncmesh_proto::tcp::Segment;
use ncmesh_proto::Instant;

/// Index of a node in the simulation (not its label in the scenario).
pub type NodeIndex = u32;

/// Which way a packet travels along its flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// From the flow's source to its destination.
    Forward = 0,
    /// From the destination back to the source: TCP's ACKs.
    Reverse = 1,
}

/// A packet in the network. Routing uses only `flow` and `direction`: each
/// flow carries its own next-hop table, so forwarding is one array lookup.
#[derive(Clone, Debug)]
pub struct Packet {
    pub flow: u32,
    pub direction: Direction,
    /// Bytes on the wire, headers included; what a link serialises.
    pub bytes: u32,
    pub body: Body,
}

#[derive(Clone, Debug)]
pub enum Body {
    Tcp(Segment),
    Udp { payload: u32, sent_at: Instant },
}

/// IPv4 and UDP headers.
pub const UDP_HEADER_BYTES: u32 = 28;
