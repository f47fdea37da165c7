//! Link frames: what a node hands an interface and a medium carries.
//!
//! A frame names its transmitter and its receivers (one node, a set, or
//! everyone in range) and carries either an IP packet or a link-local
//! message of a hop protocol. A medium delivers a transmission to every
//! node that hears it, marked addressed or overheard; how it encodes the
//! addressing is the medium's business, so a frame's length is its body's.

use crate::packet::{Kind, Message, Packet, Parsers};
use crate::wire::WireError;
use std::net::Ipv4Addr;
use std::sync::Arc;

/// Who a frame is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Receivers {
    One(Ipv4Addr),
    /// Several next hops at once (pseudo-broadcast, as COPE sends).
    Set(Arc<[Ipv4Addr]>),
    /// Every node in range.
    All,
}

impl Receivers {
    pub fn includes(&self, addr: Ipv4Addr) -> bool {
        match self {
            Receivers::One(a) => *a == addr,
            Receivers::Set(set) => set.contains(&addr),
            Receivers::All => true,
        }
    }
}

/// What a frame carries.
#[derive(Clone, Debug)]
pub enum Body {
    Packet(Packet),
    /// A hop protocol's link-local message; its `kind()` is a link kind.
    Message(Box<dyn Message>),
    /// The encoding of one of the above, in real-payload runs: IP for
    /// `Kind::Ip(_)` (any protocol number), else the message of that link kind.
    Bytes {
        kind: Kind,
        bytes: Arc<[u8]>,
    },
}

/// The link kind of frames that carry IP.
pub const IP: Kind = Kind::Ip(0);

#[derive(Clone, Debug)]
pub struct Frame {
    pub transmitter: Ipv4Addr,
    pub receivers: Receivers,
    pub body: Body,
}

impl Frame {
    /// An IP packet for neighbour `next`; the node fills in the transmitter.
    pub fn packet(next: Ipv4Addr, packet: Packet) -> Frame {
        Frame { transmitter: Ipv4Addr::UNSPECIFIED, receivers: Receivers::One(next), body: Body::Packet(packet) }
    }

    /// A link-local message for `receivers`; the node fills in the transmitter.
    pub fn message(receivers: Receivers, message: Box<dyn Message>) -> Frame {
        Frame { transmitter: Ipv4Addr::UNSPECIFIED, receivers, body: Body::Message(message) }
    }

    /// Bytes of the body.
    pub fn wire_len(&self) -> usize {
        match &self.body {
            Body::Packet(p) => p.wire_len(),
            Body::Message(m) => m.wire_len(),
            Body::Bytes { bytes, .. } => bytes.len(),
        }
    }

    /// The frame with its body as bytes.
    pub fn to_bytes(&self) -> Result<Frame, WireError> {
        let (kind, bytes) = match &self.body {
            Body::Packet(p) => (IP, p.emit()?),
            Body::Message(m) => {
                let mut buf = vec![0; m.wire_len()];
                m.emit(&mut buf)?;
                (m.kind(), buf)
            }
            Body::Bytes { .. } => return Ok(self.clone()),
        };
        Ok(Frame {
            transmitter: self.transmitter,
            receivers: self.receivers.clone(),
            body: Body::Bytes { kind, bytes: bytes.into() },
        })
    }

    /// The frame with a typed body, parsing bytes if it has them. A packet
    /// for `local` also has its transport checksum checked, as a host
    /// checks it and a router does not.
    pub fn parsed(self, parsers: &Parsers, local: Ipv4Addr) -> Result<Frame, WireError> {
        let body = match self.body {
            Body::Bytes { kind: Kind::Ip(_), bytes } => {
                let for_us = bytes.get(16..20).is_some_and(|d| d == local.octets());
                Body::Packet(Packet::parse_shared(bytes, parsers, for_us)?)
            }
            Body::Bytes { kind, bytes } => Body::Message(parsers.parse(kind, &bytes)?),
            typed => typed,
        };
        Ok(Frame { body, ..self })
    }
}
