//! Link frames: what a node hands an interface and a medium carries.
//!
//! A frame names its transmitter and its receivers (one node, a set, or
//! everyone in range) and carries either an IP packet or a link-local
//! message of a hop protocol. A medium delivers a transmission to every
//! node that hears it, marked addressed or overheard; how it encodes the
//! addressing is the medium's business, so a frame's length is its body's.

use crate::packet::{Kind, Message, Packet, Parsers};
use crate::wire::WireError;
use std::borrow::Cow;
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

/// A link frame's fields, all of them: what [`Frame::from`] takes and
/// [`Frame::into_fields`] gives back.
#[derive(Clone, Debug)]
pub struct FrameFields {
    pub transmitter: Ipv4Addr,
    pub receivers: Receivers,
    pub body: Body,
}

/// A link frame. Nearly every frame is an IP packet for one neighbour, and
/// that one is two words: its addresses and the packet's handle, which
/// move in registers from a node through the driver and a medium to the
/// next node, with no allocation. Any other frame is a handle to its
/// fields on the heap. (Frames of the fields' size were copied through the
/// stack at every step, in other pieces than they were written in, which
/// stalls the processor each time.)
#[derive(Clone)]
pub struct Frame(Repr);

#[derive(Clone)]
enum Repr {
    Unicast { addrs: Addrs, packet: Packet },
    Boxed(Box<FrameFields>),
}

/// A unicast frame's transmitter and receiver as one word, written and
/// read whole: two 4-byte stores read back as one 8-byte load cannot be
/// forwarded from the store buffer, and that stall was the costliest
/// instruction of a frame's hand-off to its medium.
#[derive(Clone, Copy)]
struct Addrs(u64);

impl Addrs {
    fn new(transmitter: Ipv4Addr, next: Ipv4Addr) -> Addrs {
        Addrs(u64::from(u32::from(transmitter)) << 32 | u64::from(u32::from(next)))
    }

    fn transmitter(self) -> Ipv4Addr {
        Ipv4Addr::from((self.0 >> 32) as u32)
    }

    fn next(self) -> Ipv4Addr {
        Ipv4Addr::from(self.0 as u32)
    }
}

impl From<FrameFields> for Frame {
    fn from(fields: FrameFields) -> Frame {
        match fields {
            FrameFields { transmitter, receivers: Receivers::One(next), body: Body::Packet(packet) } => {
                Frame(Repr::Unicast { addrs: Addrs::new(transmitter, next), packet })
            }
            fields => Frame(Repr::Boxed(Box::new(fields))),
        }
    }
}

/// Prints the fields, in either form.
impl std::fmt::Debug for Frame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut s = f.debug_struct("Frame");
        s.field("transmitter", &self.transmitter()).field("receivers", &self.receivers());
        match &self.0 {
            Repr::Unicast { packet, .. } => s.field("packet", packet),
            Repr::Boxed(fields) => s.field("body", &fields.body),
        };
        s.finish()
    }
}

impl Frame {
    /// An IP packet for neighbour `next`; the node fills in the transmitter.
    pub fn packet(next: Ipv4Addr, packet: Packet) -> Frame {
        Frame(Repr::Unicast { addrs: Addrs::new(Ipv4Addr::UNSPECIFIED, next), packet })
    }

    /// A link-local message for `receivers`; the node fills in the transmitter.
    pub fn message(receivers: Receivers, message: Box<dyn Message>) -> Frame {
        Frame::from(FrameFields { transmitter: Ipv4Addr::UNSPECIFIED, receivers, body: Body::Message(message) })
    }

    /// The fields, out of their handle.
    pub fn into_fields(self) -> FrameFields {
        match self.0 {
            Repr::Unicast { addrs, packet } => FrameFields {
                transmitter: addrs.transmitter(),
                receivers: Receivers::One(addrs.next()),
                body: Body::Packet(packet),
            },
            Repr::Boxed(fields) => *fields,
        }
    }

    pub fn transmitter(&self) -> Ipv4Addr {
        match &self.0 {
            Repr::Unicast { addrs, .. } => addrs.transmitter(),
            Repr::Boxed(fields) => fields.transmitter,
        }
    }

    pub fn set_transmitter(&mut self, addr: Ipv4Addr) {
        match &mut self.0 {
            Repr::Unicast { addrs, .. } => *addrs = Addrs::new(addr, addrs.next()),
            Repr::Boxed(fields) => fields.transmitter = addr,
        }
    }

    pub fn receivers(&self) -> Cow<'_, Receivers> {
        match &self.0 {
            Repr::Unicast { addrs, .. } => Cow::Owned(Receivers::One(addrs.next())),
            Repr::Boxed(fields) => Cow::Borrowed(&fields.receivers),
        }
    }

    /// Whether `addr` is one of the receivers.
    pub fn is_for(&self, addr: Ipv4Addr) -> bool {
        match &self.0 {
            Repr::Unicast { addrs, .. } => addrs.next() == addr,
            Repr::Boxed(fields) => fields.receivers.includes(addr),
        }
    }

    /// The IP packet the frame carries, if it carries one typed.
    pub fn as_packet(&self) -> Option<&Packet> {
        match &self.0 {
            Repr::Unicast { packet, .. } => Some(packet),
            Repr::Boxed(fields) => match &fields.body {
                Body::Packet(p) => Some(p),
                _ => None,
            },
        }
    }

    /// The link-local message the frame carries, if it carries one typed.
    pub fn as_message(&self) -> Option<&dyn Message> {
        match &self.0 {
            Repr::Boxed(fields) => match &fields.body {
                Body::Message(m) => Some(&**m),
                _ => None,
            },
            Repr::Unicast { .. } => None,
        }
    }

    /// The encoding the frame carries, with its kind, in real-payload runs.
    pub fn as_bytes(&self) -> Option<(Kind, &Arc<[u8]>)> {
        match &self.0 {
            Repr::Boxed(fields) => match &fields.body {
                Body::Bytes { kind, bytes } => Some((*kind, bytes)),
                _ => None,
            },
            Repr::Unicast { .. } => None,
        }
    }

    /// The encoding the frame carries, to change (a medium's corruption).
    pub fn bytes_mut(&mut self) -> Option<&mut Arc<[u8]>> {
        match &mut self.0 {
            Repr::Boxed(fields) => match &mut fields.body {
                Body::Bytes { bytes, .. } => Some(bytes),
                _ => None,
            },
            Repr::Unicast { .. } => None,
        }
    }

    /// The IP packet the frame carries; the frame back if it carries anything else.
    pub fn into_packet(self) -> Result<Packet, Frame> {
        match self.0 {
            Repr::Unicast { packet, .. } => Ok(packet),
            Repr::Boxed(fields) if matches!(fields.body, Body::Packet(_)) => match fields.body {
                Body::Packet(p) => Ok(p),
                _ => unreachable!("checked above"),
            },
            boxed => Err(Frame(boxed)),
        }
    }

    /// The link-local message the frame carries, as a `T`; the frame back
    /// if it carries anything else.
    pub fn into_message<T: Message>(self) -> Result<Box<T>, Frame> {
        if !self.as_message().is_some_and(|m| m.as_any().is::<T>()) {
            return Err(self);
        }
        match self.into_fields().body {
            Body::Message(m) => Ok(m.downcast().expect("checked above")),
            _ => unreachable!("checked above"),
        }
    }

    /// Bytes of the body.
    pub fn wire_len(&self) -> usize {
        match &self.0 {
            Repr::Unicast { packet, .. } => packet.wire_len(),
            Repr::Boxed(fields) => match &fields.body {
                Body::Packet(p) => p.wire_len(),
                Body::Message(m) => m.wire_len(),
                Body::Bytes { bytes, .. } => bytes.len(),
            },
        }
    }

    /// The frame with its body as bytes.
    pub fn into_bytes(self) -> Result<Frame, WireError> {
        let (kind, bytes) = match (self.as_packet(), self.as_message()) {
            (Some(p), _) => (IP, p.emit()?),
            (_, Some(m)) => {
                let mut buf = vec![0; m.wire_len()];
                m.emit(&mut buf)?;
                (m.kind(), buf)
            }
            _ => return Ok(self),
        };
        let FrameFields { transmitter, receivers, .. } = self.into_fields();
        Ok(Frame(Repr::Boxed(Box::new(FrameFields {
            transmitter,
            receivers,
            body: Body::Bytes { kind, bytes: bytes.into() },
        }))))
    }

    /// The frame with a typed body, parsing bytes if it has them. A packet
    /// for `local` also has its transport checksum checked, as a host
    /// checks it and a router does not.
    pub fn parsed(self, parsers: &Parsers, local: Ipv4Addr) -> Result<Frame, WireError> {
        let Some((kind, bytes)) = self.as_bytes() else { return Ok(self) };
        let body = match kind {
            Kind::Ip(_) => {
                let for_us = bytes.get(16..20).is_some_and(|d| d == local.octets());
                Body::Packet(Packet::parse_shared(bytes.clone(), parsers, for_us)?)
            }
            kind => Body::Message(parsers.parse(kind, bytes)?),
        };
        let FrameFields { transmitter, receivers, .. } = self.into_fields();
        Ok(Frame::from(FrameFields { transmitter, receivers, body }))
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
        assert!(back.as_message().and_then(|m| m.downcast_ref::<Ping>()).is_some_and(|p| p.0 == 7));
        assert_eq!(*back.receivers(), Receivers::One(B));
        assert!(back.into_packet().is_err());
        assert_eq!(ping().into_message::<Ping>().map(|p| p.0).ok(), Some(7));

        let packet = Packet::new(A, B, Payload::Udp(Datagram::new(1, 2, Data::EMPTY)));
        let frame = Frame::packet(B, packet);
        let Err(back) = frame.into_message::<Ping>() else { panic!("a packet is no message") };
        assert_eq!(back.into_packet().map(|p| (p.src, p.dst)).ok(), Some((A, B)));
    }

    #[test]
    fn a_unicast_packet_frame_is_two_words_and_keeps_its_fields() {
        assert_eq!(std::mem::size_of::<Frame>(), 16);
        let packet = Packet::new(A, B, Payload::Udp(Datagram::new(1, 2, Data::EMPTY)));
        let mut frame = Frame::packet(B, packet);
        frame.set_transmitter(A);
        assert_eq!((frame.transmitter(), &*frame.receivers()), (A, &Receivers::One(B)));
        assert!(frame.is_for(B) && !frame.is_for(A) && frame.as_message().is_none());
        assert!(format!("{frame:?}").starts_with("Frame { transmitter: 10.0.0.1, receivers: One(10.0.0.2), packet:"));
        // Through its fields and back: the same frame, in either form.
        let mut fields = frame.into_fields();
        let again = Frame::from(fields.clone());
        assert_eq!((again.transmitter(), again.as_packet().map(|p| p.dst)), (A, Some(B)));
        fields.receivers = Receivers::All;
        let all = Frame::from(fields);
        assert!(all.is_for(B) && all.is_for(A) && *all.receivers() == Receivers::All);
        assert_eq!(all.into_packet().map(|p| p.src).ok(), Some(A));
    }

    #[test]
    fn receivers_include_their_members() {
        let set = Receivers::Set(Arc::from([A]));
        assert!(Receivers::One(A).includes(A) && !Receivers::One(A).includes(B));
        assert!(set.includes(A) && !set.includes(B));
        assert!(Receivers::All.includes(B));
    }
}
