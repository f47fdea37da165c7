//! What moves between nodes: IP datagrams ([`Packet`]) whose payload is a
//! TCP segment, a UDP datagram, or a message of a registered protocol
//! ([`Message`]), each with its wire format.
//!
//! Packets move typed through a node. A node with real payloads emits them
//! to bytes at its interfaces and parses what arrives, so that the bytes
//! that cross a medium are exactly what a daemon would send.

use crate::tcp::{self, Segment};
use crate::wire::ipv4;
use crate::wire::udp::{self, Datagram};
use crate::wire::{need, WireError};
use std::any::Any;
use std::collections::HashMap;
use std::fmt::Debug;
use std::net::Ipv4Addr;
use std::sync::Arc;

/// An IP datagram, as a handle to its fields on the heap: a packet moves
/// through queues, frames and media as one pointer, whatever its payload
/// (the shape of ns-3's `Ptr<Packet>`). Its fields are read and written
/// through it; [`Packet::into_fields`] takes them out.
#[derive(Clone)]
pub struct Packet(Box<PacketFields>);

/// What an IP datagram holds.
#[derive(Clone, Debug)]
pub struct PacketFields {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub ttl: u8,
    pub payload: Payload,
    /// The bytes it was parsed from, if it was: a forwarding node sends
    /// these on, with only the TTL and the header checksum rewritten, as a
    /// router does. So the destination checks the transport checksum over
    /// what the source sent, and header fields and options this stack does
    /// not model cross it intact. A layer that changes a received packet
    /// must clear it.
    pub received: Option<Arc<[u8]>>,
}

impl std::ops::Deref for Packet {
    type Target = PacketFields;
    fn deref(&self) -> &PacketFields {
        &self.0
    }
}

impl std::ops::DerefMut for Packet {
    fn deref_mut(&mut self) -> &mut PacketFields {
        &mut self.0
    }
}

impl Debug for Packet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl From<PacketFields> for Packet {
    fn from(fields: PacketFields) -> Packet {
        Packet(Box::new(fields))
    }
}

/// What an IP datagram carries.
#[derive(Clone, Debug)]
pub enum Payload {
    Tcp(Segment),
    Udp(Datagram),
    /// A message of a registered protocol: its IP protocol number is its `kind()`.
    Other(Box<dyn Message>),
}

impl Packet {
    pub fn new(src: Ipv4Addr, dst: Ipv4Addr, payload: Payload) -> Packet {
        Packet::from(PacketFields { src, dst, ttl: ipv4::DEFAULT_TTL, payload, received: None })
    }

    /// The fields, out of their handle.
    pub fn into_fields(self) -> PacketFields {
        *self.0
    }

    /// The IP protocol number.
    pub fn protocol(&self) -> u8 {
        match &self.payload {
            Payload::Tcp(_) => tcp::PROTOCOL,
            Payload::Udp(_) => udp::PROTOCOL,
            Payload::Other(m) => match m.kind() {
                Kind::Ip(p) => p,
                Kind::Link(_) => unreachable!("a link frame is not an IP payload"),
            },
        }
    }

    /// Bytes on the wire: IP header and payload.
    pub fn wire_len(&self) -> usize {
        if let Some(bytes) = &self.received {
            return bytes.len();
        }
        ipv4::HEADER_LEN
            + match &self.payload {
                Payload::Tcp(s) => s.wire_len(),
                Payload::Udp(d) => d.wire_len(),
                Payload::Other(m) => m.wire_len(),
            }
    }

    /// The transport flow this packet belongs to, as seen in its direction of travel.
    pub fn flow(&self) -> Option<FlowKey> {
        let (protocol, src_port, dst_port) = match &self.payload {
            Payload::Tcp(s) => (tcp::PROTOCOL, s.src_port, s.dst_port),
            Payload::Udp(d) => (udp::PROTOCOL, d.src_port, d.dst_port),
            Payload::Other(m) => m.flow()?,
        };
        Some(FlowKey { src: self.src, dst: self.dst, protocol, src_port, dst_port })
    }

    /// The packet's bytes: IP header and payload.
    pub fn emit(&self) -> Result<Vec<u8>, WireError> {
        let mut buf = vec![0; self.wire_len()];
        self.emit_into(&mut buf)?;
        Ok(buf)
    }

    /// Writes the packet into `buf[..wire_len()]`.
    pub fn emit_into(&self, buf: &mut [u8]) -> Result<(), WireError> {
        if let Some(bytes) = &self.received {
            need(buf, 0, bytes.len(), "packet")?;
            let buf = &mut buf[..bytes.len()];
            buf.copy_from_slice(bytes);
            return ipv4::forward(buf, self.ttl);
        }
        let header = ipv4::Repr {
            src: self.src,
            dst: self.dst,
            protocol: self.protocol(),
            ttl: self.ttl,
            payload_len: self.wire_len() - ipv4::HEADER_LEN,
        };
        header.emit(buf)?;
        let body = &mut buf[ipv4::HEADER_LEN..header.buffer_len()];
        match &self.payload {
            Payload::Tcp(s) => s.emit(self.src, self.dst, body),
            Payload::Udp(d) => d.emit(self.src, self.dst, body),
            Payload::Other(m) => m.emit(body),
        }
    }

    /// Reads a packet, keeping its bytes in `received`. `verify_transport`
    /// checks TCP and UDP checksums, which only the destination does; the
    /// IPv4 header checksum is always checked.
    pub fn parse(bytes: &[u8], parsers: &Parsers, verify_transport: bool) -> Result<Packet, WireError> {
        let (packet, len) = Packet::parse_fields(bytes, parsers, verify_transport)?;
        Ok(Packet::from(PacketFields { received: Some(Arc::from(&bytes[..len])), ..packet }))
    }

    /// As `parse`, from shared bytes: kept without a copy when they are
    /// exactly the packet.
    pub fn parse_shared(bytes: Arc<[u8]>, parsers: &Parsers, verify_transport: bool) -> Result<Packet, WireError> {
        let (packet, len) = Packet::parse_fields(&bytes, parsers, verify_transport)?;
        let received = if len == bytes.len() { bytes } else { Arc::from(&bytes[..len]) };
        Ok(Packet::from(PacketFields { received: Some(received), ..packet }))
    }

    /// The packet without its bytes, and how many bytes it is.
    fn parse_fields(
        bytes: &[u8],
        parsers: &Parsers,
        verify_transport: bool,
    ) -> Result<(PacketFields, usize), WireError> {
        let view = ipv4::Packet::new_checked(bytes)?;
        let header = ipv4::Repr::parse(&view)?;
        let body = view.payload();
        let payload = match header.protocol {
            tcp::PROTOCOL => Payload::Tcp(Segment::parse(body, header.src, header.dst, verify_transport)?),
            udp::PROTOCOL => Payload::Udp(Datagram::parse(body, header.src, header.dst, verify_transport)?),
            p => Payload::Other(parsers.parse(Kind::Ip(p), body)?),
        };
        Ok((
            PacketFields { src: header.src, dst: header.dst, ttl: header.ttl, payload, received: None },
            view.total_len(),
        ))
    }
}

/// A transport flow: addresses, protocol and ports, in one direction.
///
/// Flows order by ports first: the simulator numbers its flows by source
/// port, so per-flow state kept in ordered maps is served in that order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowKey {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    /// The transport protocol (TCP or UDP), also for coded packets of the flow.
    pub protocol: u8,
    pub src_port: u16,
    pub dst_port: u16,
}

impl FlowKey {
    /// The same flow in the other direction: where a TCP flow's ACKs go.
    pub fn reversed(self) -> FlowKey {
        FlowKey {
            src: self.dst,
            dst: self.src,
            protocol: self.protocol,
            src_port: self.dst_port,
            dst_port: self.src_port,
        }
    }

    /// A 32-bit name for the flow, the same at every node, for protocols
    /// that report per-flow state to neighbours in little space.
    pub fn id(&self) -> u32 {
        let mut h: u64 = 0xCBF2_9CE4_8422_2325;
        let bytes = self
            .src
            .octets()
            .into_iter()
            .chain(self.dst.octets())
            .chain([self.protocol])
            .chain(self.src_port.to_be_bytes())
            .chain(self.dst_port.to_be_bytes());
        for b in bytes {
            h = (h ^ b as u64).wrapping_mul(0x0100_0000_01B3);
        }
        (h ^ (h >> 32)) as u32
    }

    /// The key as two words, to hash it in two steps: routes are looked
    /// up by flow for every packet forwarded.
    fn words(&self) -> (u64, u64) {
        let addrs = (u32::from(self.src) as u64) << 32 | u32::from(self.dst) as u64;
        let rest = (self.protocol as u64) << 32 | (self.src_port as u64) << 16 | self.dst_port as u64;
        (addrs, rest)
    }

    fn order(&self) -> (u16, u16, u8, Ipv4Addr, Ipv4Addr) {
        (self.src_port, self.dst_port, self.protocol, self.src, self.dst)
    }
}

impl std::hash::Hash for FlowKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let (addrs, rest) = self.words();
        state.write_u64(addrs);
        state.write_u64(rest);
    }
}

impl PartialOrd for FlowKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for FlowKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.order().cmp(&other.order())
    }
}

/// Where a message sits: an IP protocol number, or a link frame kind of a
/// protocol that speaks only to neighbours.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Ip(u8),
    Link(u16),
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Kind::Ip(p) => write!(f, "IP protocol {p}"),
            Kind::Link(k) => write!(f, "link frame kind {k:#06x}"),
        }
    }
}

/// A message of a registered protocol. Protocols downcast to their own types.
///
/// In virtual-payload runs a message may stand in for bytes it does not
/// have (a coded symbol's content, say); such a message reports its length
/// but refuses to emit.
pub trait Message: Debug + Send + Sync + 'static {
    fn kind(&self) -> Kind;
    /// Bytes on the wire, the same whether the payload is real or virtual.
    fn wire_len(&self) -> usize;
    /// Writes exactly `wire_len()` bytes into `buf`.
    fn emit(&self, buf: &mut [u8]) -> Result<(), WireError>;
    /// The transport flow it carries, as (protocol, source port, destination
    /// port), so that routing and per-flow coding treat it as that flow's.
    fn flow(&self) -> Option<(u8, u16, u16)> {
        None
    }
    fn clone_message(&self) -> Box<dyn Message>;
    fn as_any(&self) -> &dyn Any;
    fn into_any(self: Box<Self>) -> Box<dyn Any + Send>;
}

impl Clone for Box<dyn Message> {
    fn clone(&self) -> Self {
        self.clone_message()
    }
}

impl dyn Message {
    pub fn downcast_ref<T: Message>(&self) -> Option<&T> {
        self.as_any().downcast_ref()
    }

    /// The message as `T`, or itself back if it is another type.
    pub fn downcast<T: Message>(self: Box<Self>) -> Result<Box<T>, Box<dyn Message>> {
        if self.as_any().is::<T>() {
            Ok(self.into_any().downcast().expect("checked above"))
        } else {
            Err(self)
        }
    }
}

/// Implements the boilerplate of [`Message`] for a `Clone` type.
#[macro_export]
macro_rules! message_boilerplate {
    () => {
        fn clone_message(&self) -> Box<dyn $crate::packet::Message> {
            Box::new(self.clone())
        }
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
        fn into_any(self: Box<Self>) -> Box<dyn std::any::Any + Send> {
            self
        }
    };
}

/// Reads the bytes of one kind of message.
pub type ParseFn = fn(&[u8]) -> Result<Box<dyn Message>, WireError>;

/// The parsers of every registered message kind, for nodes that receive bytes.
#[derive(Clone, Debug, Default)]
pub struct Parsers {
    by_kind: HashMap<Kind, ParseFn>,
}

impl Parsers {
    /// Adds a parser; false if `kind` already has one.
    pub fn add(&mut self, kind: Kind, parse: ParseFn) -> bool {
        if self.by_kind.contains_key(&kind) || matches!(kind, Kind::Ip(tcp::PROTOCOL | udp::PROTOCOL)) {
            return false;
        }
        self.by_kind.insert(kind, parse);
        true
    }

    pub fn parse(&self, kind: Kind, bytes: &[u8]) -> Result<Box<dyn Message>, WireError> {
        let parse = self.by_kind.get(&kind).ok_or_else(|| WireError::Unknown { kind: kind.to_string() })?;
        parse(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Data;
    use crate::tcp::Flags;

    const A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
    const B: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

    #[test]
    fn a_tcp_packet_round_trips_through_its_bytes() {
        let mut s = Segment::new(10_000, 5001);
        s.seq = 42;
        s.flags = Flags::ACK;
        s.data = Data::Real(vec![7; 1000]);
        let p = Packet::new(A, B, Payload::Tcp(s.clone()));
        assert_eq!(p.wire_len(), 1040);
        let bytes = p.emit().unwrap();
        let back = Packet::parse(&bytes, &Parsers::default(), true).unwrap();
        assert_eq!((back.src, back.dst, back.ttl), (A, B, 64));
        let Payload::Tcp(t) = &back.payload else { panic!("a TCP payload") };
        assert_eq!(*t, s);
        assert_eq!(p.flow().unwrap().reversed().reversed(), p.flow().unwrap());
    }

    #[test]
    fn unknown_protocols_are_named() {
        let mut bytes = Packet::new(A, B, Payload::Udp(Datagram::new(1, 2, Data::Real(vec![])))).emit().unwrap();
        bytes[9] = 200;
        bytes[10..12].fill(0);
        let c = crate::wire::checksum::finish(crate::wire::checksum::sum(&bytes[..20]));
        bytes[10..12].copy_from_slice(&c.to_be_bytes());
        assert_eq!(
            Packet::parse(&bytes, &Parsers::default(), false).unwrap_err(),
            WireError::Unknown { kind: "IP protocol 200".into() }
        );
    }

    #[test]
    fn flows_order_by_port_first_and_have_stable_ids() {
        let f = |src, port| FlowKey { src, dst: B, protocol: 6, src_port: port, dst_port: 5001 };
        assert!(f(B, 10_000) < f(A, 10_001));
        assert_eq!(f(A, 1).id(), f(A, 1).id());
        assert_ne!(f(A, 1).id(), f(A, 2).id());
    }
}
