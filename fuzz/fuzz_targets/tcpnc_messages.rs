//! Arbitrary bytes as TCP/NC messages: `Combination::parse`, `Ack::parse`
//! and `decode_segment` (a decoded symbol's segment). A combination that
//! parses emits back to identical bytes (its encoding is canonical); an Ack
//! emits its first 20 bytes with the reserved ones zeroed; both re-parse
//! equal, report `wire_len()` as the bytes emitted, and survive a trip
//! through an IP packet (`Packet::emit`, `Packet::parse` with the built-in
//! parsers). A segment `decode_segment` reads is re-encoded by
//! `encode_segment` into a symbol of the same size and decodes equal.
#![no_main]

use ncmesh_proto::packet::{Message, Parsers};
use ncmesh_proto::tcp::wire::{decode_segment, encode_segment};
use ncmesh_proto::tcpnc::wire::{self, Ack, Combination};
use ncmesh_proto::{Packet, Payload, Registry};
use std::net::Ipv4Addr;
use std::sync::{Arc, OnceLock};

const A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const B: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 9);

fn parsers() -> &'static Parsers {
    static PARSERS: OnceLock<Arc<Parsers>> = OnceLock::new();
    PARSERS.get_or_init(|| Registry::builtin().parsers().clone())
}

fn same_combination(x: &Combination, y: &Combination) -> bool {
    (x.src_port, x.dst_port, x.field, x.start, &x.coefficients, &x.coding, x.symbol.bytes())
        == (y.src_port, y.dst_port, y.field, y.start, &y.coefficients, &y.coding, y.symbol.bytes())
}

fn emit(m: &dyn Message) -> Vec<u8> {
    let mut buf = vec![0; m.wire_len()];
    m.emit(&mut buf).unwrap_or_else(|e| panic!("a parsed message does not emit: {e}\n{m:?}"));
    buf
}

/// The message in an IP packet, through bytes and back.
fn through_ip(m: Box<dyn Message>) -> Box<dyn Message> {
    let p = wire::packet(A, B, m);
    let bytes = p.emit().unwrap_or_else(|e| panic!("a packet of a parsed message does not emit: {e}"));
    assert_eq!(bytes.len(), p.wire_len());
    let back =
        Packet::parse(&bytes, parsers(), true).unwrap_or_else(|e| panic!("an emitted packet does not parse: {e}"));
    assert_eq!((back.src, back.dst), (A, B));
    match back.into_fields().payload {
        Payload::Other(m) => m,
        other => panic!("a TCP/NC message came back as {other:?}"),
    }
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(c) = Combination::parse(data) {
        let bytes = emit(&c);
        assert_eq!(bytes, data, "a combination's encoding is canonical");
        assert_eq!(c.coefficients.len(), u16::from_be_bytes([data[3], data[4]]) as usize);
        let back = Combination::parse(&bytes).expect("an emitted combination parses");
        assert!(same_combination(&c, &back));
        let m = through_ip(Box::new(c.clone()));
        let back = m.downcast_ref::<Combination>().expect("protocol 253 is a combination");
        assert!(same_combination(&c, back));
    }

    if let Ok(a) = Ack::parse(data) {
        let bytes = emit(&a);
        let mut expected = data[..wire::ACK_LEN].to_vec();
        expected[1] = 0;
        expected[6..8].fill(0);
        assert_eq!(bytes, expected);
        assert_eq!(Ack::parse(&bytes), Ok(a));
        let m = through_ip(Box::new(a));
        assert_eq!(m.downcast_ref::<Ack>(), Some(&a), "protocol 254 is an acknowledgement");
    }

    if let Ok(s) = decode_segment(data, A, B) {
        let mut symbol = vec![0; data.len()];
        assert!(encode_segment(&s, A, B, &mut symbol), "a decoded segment fits its symbol again");
        assert_eq!(decode_segment(&symbol, A, B), Ok(s));
    }
});
