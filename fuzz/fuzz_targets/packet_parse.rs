//! Arbitrary bytes as an IP datagram read by `Packet::parse` with the
//! built-in parsers (TCP, UDP and every registered protocol's messages), with and without
//! transport checksums checked, directly and through `Frame::parsed`.
//! A parsed packet keeps its bytes and emits them (`Packet::emit`,
//! `Frame::into_bytes`) as it received them; forwarded with another TTL, it
//! emits bytes that differ only in the TTL and header checksum and parse to
//! an equal packet; built afresh from its fields (`received: None`), it
//! emits `wire_len()` bytes that parse, checksums checked, to an equal
//! packet, which emits the same bytes again. A packet that parses with
//! checksums checked parses equal without. The first input byte picks the
//! mode: the rest as a whole datagram, or as a payload the harness puts
//! behind a valid header; the harness may also fix up the header and the
//! checksums, so that the fuzzer reaches the payload parsers.
#![no_main]

use ncmesh_proto::frame::{Body, Frame, FrameFields, Receivers, IP};
use ncmesh_proto::packet::{Kind, Message, Parsers};
use ncmesh_proto::wire::{checksum, ipv4};
use ncmesh_proto::{Packet, Payload, Registry};
use std::net::Ipv4Addr;
use std::sync::{Arc, OnceLock};

fn parsers() -> &'static Parsers {
    static PARSERS: OnceLock<Arc<Parsers>> = OnceLock::new();
    PARSERS.get_or_init(|| Registry::builtin().parsers().clone())
}

/// Rewrites the IPv4 header as an unfragmented 20-byte one whose total length is the input's.
fn normalise_header(b: &mut [u8]) {
    if b.len() >= 20 {
        b[0] = 0x45;
        let total = b.len().min(u16::MAX as usize) as u16;
        b[2..4].copy_from_slice(&total.to_be_bytes());
        b[6] &= 0x40;
        b[7] = 0;
    }
}

fn fix_ip_checksum(b: &mut [u8]) {
    let header = (b.first().copied().unwrap_or(0) & 0x0F) as usize * 4;
    if header >= 20 && b.len() >= header {
        b[10..12].fill(0);
        let c = checksum::finish(checksum::sum(&b[..header]));
        b[10..12].copy_from_slice(&c.to_be_bytes());
    }
}

fn fix_transport_checksum(b: &mut [u8]) {
    let header = (b.first().copied().unwrap_or(0) & 0x0F) as usize * 4;
    if header < 20 || b.len() < header {
        return;
    }
    let total = (u16::from_be_bytes([b[2], b[3]]) as usize).min(b.len());
    if total < header {
        return;
    }
    let src = Ipv4Addr::new(b[12], b[13], b[14], b[15]);
    let dst = Ipv4Addr::new(b[16], b[17], b[18], b[19]);
    let protocol = b[9];
    let body = &mut b[header..total];
    match protocol {
        6 if body.len() >= 20 => {
            body[16..18].fill(0);
            let c = checksum::finish(checksum::pseudo_header(src, dst, 6, body.len()) + checksum::sum(body));
            body[16..18].copy_from_slice(&c.to_be_bytes());
        }
        17 if body.len() >= 8 => {
            let len = u16::from_be_bytes([body[4], body[5]]) as usize;
            if (8..=body.len()).contains(&len) {
                body[6..8].fill(0);
                let c = checksum::finish(checksum::pseudo_header(src, dst, 17, len) + checksum::sum(&body[..len]));
                body[6..8].copy_from_slice(&(if c == 0 { 0xFFFF } else { c }).to_be_bytes());
            }
        }
        _ => {}
    }
}

/// Two messages of any registered protocol are the same when they are of one
/// kind and flow and emit the same bytes: a new protocol needs no case here.
fn same_message(a: &dyn Message, b: &dyn Message) -> bool {
    let bytes = |m: &dyn Message| {
        let mut buf = vec![0; m.wire_len()];
        m.emit(&mut buf).map(|()| buf)
    };
    (a.kind(), a.flow()) == (b.kind(), b.flow())
        && bytes(a).expect("a parsed message emits") == bytes(b).expect("a parsed message emits")
}

fn same(a: &Packet, b: &Packet) -> bool {
    (a.src, a.dst, a.ttl) == (b.src, b.dst, b.ttl)
        && match (&a.payload, &b.payload) {
            (Payload::Tcp(x), Payload::Tcp(y)) => x == y,
            (Payload::Udp(x), Payload::Udp(y)) => x == y,
            (Payload::Other(x), Payload::Other(y)) => same_message(&**x, &**y),
            _ => false,
        }
}

/// The bytes with the IPv4 header checksum blanked: a header sum of 0xFFFF
/// without it has two valid checksums, and emitting writes the one of them.
fn blank_checksum(bytes: &[u8]) -> Vec<u8> {
    let mut b = bytes.to_vec();
    b[10..12].fill(0);
    b
}

/// Checks what a packet parsed from `input` emits: as received, forwarded
/// with another TTL, and built afresh from its fields.
fn round_trip(p: &Packet, input: &[u8], verify: bool) -> Vec<u8> {
    let len = p.wire_len();
    assert_eq!(p.received.as_deref(), Some(&input[..len]), "a parsed packet keeps the bytes it was parsed from");
    let as_received = p.emit().unwrap_or_else(|e| panic!("a received packet does not emit: {e}\n{p:?}"));
    assert_eq!(
        blank_checksum(&as_received),
        blank_checksum(&input[..len]),
        "unchanged, it emits what it was parsed from"
    );

    let mut hop = p.clone();
    hop.ttl = p.ttl.wrapping_sub(1);
    let forwarded = hop.emit().unwrap_or_else(|e| panic!("a forwarded packet does not emit: {e}\n{p:?}"));
    let back = Packet::parse(&forwarded, parsers(), verify)
        .unwrap_or_else(|e| panic!("a forwarded packet does not parse: {e}\n{p:?}"));
    assert!(same(&hop, &back), "the packet changed on its way through a router:\n{hop:?}\n{back:?}");
    let mut expected = blank_checksum(&input[..len]);
    expected[8] = hop.ttl;
    assert_eq!(blank_checksum(&forwarded), expected, "forwarding changes the TTL and the header checksum only");

    let mut fresh = p.clone();
    fresh.received = None;
    let bytes = fresh.emit().unwrap_or_else(|e| panic!("a parsed packet does not emit afresh: {e}\n{p:?}"));
    assert_eq!(bytes.len(), fresh.wire_len());
    assert_eq!(bytes[9], fresh.protocol());
    let back = Packet::parse(&bytes, parsers(), true)
        .unwrap_or_else(|e| panic!("an emitted packet does not parse: {e}\n{p:?}"));
    assert!(same(p, &back), "the packet changed on its way through bytes:\n{p:?}\n{back:?}");
    let mut back = back;
    back.received = None;
    assert_eq!(back.emit().expect("it emitted once"), bytes, "emitting is not canonical");
    let _ = p.flow().map(|f| f.id());
    as_received
}

/// The payload in a valid IPv4 header: the first byte picks the protocol
/// (TCP, UDP, Combination, Ack, or itself from 0x80), the second the TTL.
fn wrap(rest: &[u8]) -> Vec<u8> {
    let (selector, ttl, payload) = match rest {
        [s, t, payload @ ..] => (*s, *t, payload),
        _ => return rest.to_vec(),
    };
    let protocol = if selector >= 0x80 { selector } else { [6, 17, 253, 254][selector as usize % 4] };
    let payload = &payload[..payload.len().min(u16::MAX as usize - ipv4::HEADER_LEN)];
    let header = ipv4::Repr {
        src: Ipv4Addr::new(10, 0, 0, 1),
        dst: Ipv4Addr::new(10, 0, 0, 2),
        protocol,
        ttl,
        payload_len: payload.len(),
    };
    let mut bytes = vec![0; header.buffer_len()];
    header.emit(&mut bytes).expect("the header fits");
    bytes[ipv4::HEADER_LEN..].copy_from_slice(payload);
    bytes
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let verify = mode & 1 != 0;
    let mut bytes = if mode & 2 != 0 { wrap(rest) } else { rest.to_vec() };
    if mode & 2 == 0 && mode & 8 != 0 {
        normalise_header(&mut bytes);
    }
    if mode & 4 != 0 {
        fix_transport_checksum(&mut bytes);
    }
    if mode & 2 == 0 && mode & 0x10 != 0 {
        fix_ip_checksum(&mut bytes);
    }

    let parsed = Packet::parse(&bytes, parsers(), verify);
    if verify {
        if let Ok(p) = &parsed {
            let lax = Packet::parse(&bytes, parsers(), false).expect("what parses checked parses unchecked");
            assert!(same(p, &lax));
        }
    }
    if let Ok(p) = &parsed {
        let emitted = round_trip(p, &bytes, verify);
        let frame = Frame::packet(p.dst, p.clone()).into_bytes().expect("the packet emitted");
        match frame.as_bytes() {
            Some((kind, bytes)) => assert!(kind == IP && **bytes == emitted[..]),
            None => panic!("into_bytes left {frame:?}"),
        }
    }

    // The same bytes as a frame body: the frame checks transport checksums
    // only when the packet is for `local`.
    let local = if verify && bytes.len() >= 20 {
        Ipv4Addr::new(bytes[16], bytes[17], bytes[18], bytes[19])
    } else {
        Ipv4Addr::new(10, 9, 9, 9)
    };
    let for_us = bytes.get(16..20).is_some_and(|d| d == local.octets());
    let kind = if mode & 0x20 != 0 { Kind::Ip(mode >> 6) } else { IP };
    let frame = Frame::from(FrameFields {
        transmitter: Ipv4Addr::new(10, 0, 0, 1),
        receivers: Receivers::All,
        body: Body::Bytes { kind, bytes: Arc::from(&bytes[..]) },
    });
    let for_local = Packet::parse(&bytes, parsers(), for_us);
    match frame.parsed(parsers(), local).map(Frame::into_packet) {
        Ok(Ok(p)) => {
            let direct = for_local.expect("the frame parsed");
            assert!(same(&p, &direct));
            round_trip(&p, &bytes, for_us);
        }
        Ok(Err(other)) => panic!("an IP frame parsed to {other:?}"),
        Err(e) => assert_eq!(Err(e), for_local.map(|_| ())),
    }
});
