//! Arbitrary bytes as a TCP-HONC link frame (Coded or ACK-NCB): read by
//! `honc::Frame::parse` and, as a `Body::Bytes` of the HONC link kind, by
//! `Frame::parsed` with the built-in parsers, which must agree. A frame that
//! parses emits `wire_len()` bytes equal to its input's first `wire_len()`
//! with the reserved byte zeroed, re-parses equal (float path costs
//! compared by their bits), and `Frame::into_bytes` gives those same bytes.
#![no_main]

use ncmesh_proto::frame::{self, Body, FrameFields, Receivers};
use ncmesh_proto::honc::wire::{self, AckNcb, Frame, Symbol};
use ncmesh_proto::packet::{Message, Parsers};
use ncmesh_proto::Registry;
use std::net::Ipv4Addr;
use std::sync::{Arc, OnceLock};

fn parsers() -> &'static Parsers {
    static PARSERS: OnceLock<Arc<Parsers>> = OnceLock::new();
    PARSERS.get_or_init(|| Registry::builtin().parsers().clone())
}

#[allow(clippy::type_complexity)]
fn ack_key(a: &AckNcb) -> (u32, u8, u32, u32, u64, u32, u32, u32, &[(u32, u8)], Vec<(u32, u32)>) {
    let costs: Vec<(u32, u32)> = a.costs.iter().map(|&(f, c)| (f, c.to_bits())).collect();
    (a.block, a.rank, a.received, a.newest, a.hold.0, a.backlog, a.finished_below, a.finished_mask, &a.stalled, costs)
}

fn same(x: &Frame, y: &Frame) -> bool {
    match (x, y) {
        (Frame::Coded(a), Frame::Coded(b)) => {
            let bytes = |s: &Symbol| match s {
                Symbol::Real(b) => b.clone(),
                Symbol::Virtual { .. } => panic!("a parsed frame has a virtual symbol"),
            };
            (a.block, a.size, a.hop_seq, a.seed, bytes(&a.symbol))
                == (b.block, b.size, b.hop_seq, b.seed, bytes(&b.symbol))
        }
        (Frame::Ack(a), Frame::Ack(b)) => ack_key(a) == ack_key(b),
        _ => false,
    }
}

fn emit(f: &Frame) -> Vec<u8> {
    let mut buf = vec![0; f.wire_len()];
    f.emit(&mut buf).unwrap_or_else(|e| panic!("a parsed frame does not emit: {e}\n{f:?}"));
    buf
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let direct = Frame::parse(data);

    let link = frame::Frame::from(FrameFields {
        transmitter: Ipv4Addr::new(10, 0, 0, 1),
        receivers: Receivers::All,
        body: Body::Bytes { kind: wire::KIND, bytes: Arc::from(data) },
    });
    match (link.parsed(parsers(), Ipv4Addr::new(10, 0, 0, 2)).map(frame::Frame::into_fields), &direct) {
        (Ok(FrameFields { body: Body::Message(m), .. }), Ok(f)) => {
            let g = m.downcast_ref::<Frame>().expect("the HONC kind parses to a HONC frame");
            assert!(same(f, g));
        }
        (Err(e), Err(d)) => assert_eq!(&e, d),
        (got, _) => panic!("Frame::parsed and honc::Frame::parse disagree: {got:?} vs {direct:?}"),
    }

    let Ok(f) = direct else { return };
    let bytes = emit(&f);
    let mut expected = data[..f.wire_len()].to_vec();
    expected[3] = 0;
    assert_eq!(bytes, expected);
    let back = Frame::parse(&bytes).expect("an emitted frame parses");
    assert!(same(&f, &back), "the frame changed on its way through bytes:\n{f:?}\n{back:?}");
    assert_eq!(emit(&back), bytes);

    let message = frame::Frame::message(Receivers::All, Box::new(f));
    match message.into_bytes().expect("the frame emitted").into_fields().body {
        Body::Bytes { kind, bytes: b } => assert!(kind == wire::KIND && *b == bytes[..]),
        other => panic!("into_bytes left {other:?}"),
    }
});
