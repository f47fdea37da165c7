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

/// A link frame, as a handle to its fields on the heap like [`Packet`]. A
/// frame passes from a node through the driver and a medium to every node
/// that hears it: as one pointer it moves in registers, where a struct of
/// its size is copied through the stack at every step, in other pieces
/// than it was written in, which stalls the processor each time.
#[derive(Clone)]
pub struct Frame(Box<FrameFields>);

#[derive(Clone, Debug)]
pub struct FrameFields {
    pub transmitter: Ipv4Addr,
    pub receivers: Receivers,
    pub body: Body,
}

heap_handle!(Frame, FrameFields);

impl Frame {
    /// An IP packet for neighbour `next`; the node fills in the transmitter.
    pub fn packet(next: Ipv4Addr, packet: Packet) -> Frame {
        Frame::from(FrameFields {
            transmitter: Ipv4Addr::UNSPECIFIED,
            receivers: Receivers::One(next),
            body: Body::Packet(packet),
        })
    }

    /// A link-local message for `receivers`; the node fills in the transmitter.
    pub fn message(receivers: Receivers, message: Box<dyn Message>) -> Frame {
        Frame::from(FrameFields { transmitter: Ipv4Addr::UNSPECIFIED, receivers, body: Body::Message(message) })
    }

    /// The fields, out of their handle.
    pub fn into_fields(self) -> FrameFields {
        *self.0
    }

    /// The IP packet the frame carries; the frame back if it carries anything else.
    pub fn into_packet(self) -> Result<Packet, Frame> {
        match &self.body {
            Body::Packet(_) => match self.into_fields().body {
                Body::Packet(p) => Ok(p),
                _ => unreachable!("checked above"),
            },
            _ => Err(self),
        }
    }

    /// The link-local message the frame carries, as a `T`; the frame back
    /// if it carries anything else.
    pub fn into_message<T: Message>(self) -> Result<Box<T>, Frame> {
        match &self.body {
            Body::Message(m) if m.as_any().is::<T>() => match self.into_fields().body {
                Body::Message(m) => Ok(m.downcast().expect("checked above")),
                _ => unreachable!("checked above"),
            },
            _ => Err(self),
        }
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
    pub fn into_bytes(mut self) -> Result<Frame, WireError> {
        let (kind, bytes) = match &self.body {
            Body::Packet(p) => (IP, p.emit()?),
            Body::Message(m) => {
                let mut buf = vec![0; m.wire_len()];
                m.emit(&mut buf)?;
                (m.kind(), buf)
            }
            Body::Bytes { .. } => return Ok(self),
        };
        self.body = Body::Bytes { kind, bytes: bytes.into() };
        Ok(self)
    }

    /// The frame with a typed body, parsing bytes if it has them. A packet
    /// for `local` also has its transport checksum checked, as a host
    /// checks it and a router does not.
    pub fn parsed(mut self, parsers: &Parsers, local: Ipv4Addr) -> Result<Frame, WireError> {
        let Body::Bytes { kind, bytes } = &self.body else { return Ok(self) };
        self.body = match *kind {
            Kind::Ip(_) => {
                let for_us = bytes.get(16..20).is_some_and(|d| d == local.octets());
                Body::Packet(Packet::parse_shared(bytes.clone(), parsers, for_us)?)
            }
            kind => Body::Message(parsers.parse(kind, bytes)?),
        };
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Data;
    use crate::packet::Payload;
    use crate::wire::udp::Datagram;

    /// Two message types of two link kinds, to tell apart.
    #[derive(Clone, Debug)]
    struct Ping(u8);
    #[derive(Clone, Debug)]
    struct Pong;

    impl Message for Ping {
        fn kind(&self) -> Kind {
            Kind::Link(1)
        }
        fn wire_len(&self) -> usize {
            1
        }
        fn emit(&self, buf: &mut [u8]) -> Result<(), WireError> {
            buf[0] = self.0;
            Ok(())
        }
        crate::message_boilerplate!();
    }

    impl Message for Pong {
        fn kind(&self) -> Kind {
            Kind::Link(2)
        }
        fn wire_len(&self) -> usize {
            0
        }
        fn emit(&self, _buf: &mut [u8]) -> Result<(), WireError> {
            Ok(())
        }
        crate::message_boilerplate!();
    }

    const A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
    const B: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

    #[test]
    fn a_frame_gives_up_what_it_carries_and_comes_back_whole_otherwise() {
        let ping = || Frame::message(Receivers::One(B), Box::new(Ping(7)));
        let Err(back) = ping().into_message::<Pong>() else { panic!("a Ping is not a Pong") };
        assert!(matches!(&back.body, Body::Message(m) if m.downcast_ref::<Ping>().is_some_and(|p| p.0 == 7)));
        assert_eq!(back.receivers, Receivers::One(B));
        assert!(back.into_packet().is_err());
        assert_eq!(ping().into_message::<Ping>().map(|p| p.0).ok(), Some(7));

        let packet = Packet::new(A, B, Payload::Udp(Datagram::new(1, 2, Data::EMPTY)));
        let frame = Frame::packet(B, packet);
        let Err(back) = frame.into_message::<Ping>() else { panic!("a packet is no message") };
        assert_eq!(back.into_packet().map(|p| (p.src, p.dst)).ok(), Some((A, B)));
    }

    #[test]
    fn receivers_include_their_members() {
        let set = Receivers::Set(Arc::from([A]));
        assert!(Receivers::One(A).includes(A) && !Receivers::One(A).includes(B));
        assert!(set.includes(A) && !set.includes(B));
        assert!(Receivers::All.includes(B));
    }
}
