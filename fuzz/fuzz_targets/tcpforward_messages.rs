//! Arbitrary bytes as TCP-Forward messages. A coded symbol that parses
//! emits back to identical bytes, an ack to its first 40 (both encodings
//! are canonical), and both survive a trip through an IP packet. Then the
//! input, cut into records of a 2-byte length and a message, drives a sink
//! (coded symbols) and a source that has 40 segments in its buffer (acks):
//! neither may panic, whatever a peer sends, and the source never tells TCP
//! a byte is acknowledged that TCP did not send. Every message is read
//! twice, as given and with its checksum made to match, so that the checks
//! behind the checksum are reached too.
#![no_main]

use ncmesh_proto::marks::FlowMarks;
use ncmesh_proto::node::EndLayer;
use ncmesh_proto::packet::{Message, Parsers};
use ncmesh_proto::tcp::{Flags, Segment, TcpConfig, Variant};
use ncmesh_proto::tcpforward::wire::{self, Ack, Coded, ACK_LEN};
use ncmesh_proto::tcpforward::{ForwardSink, ForwardSource, TcpForwardParams};
use ncmesh_proto::wire::checksum;
use ncmesh_proto::{Data, FlowKey, Instant, Packet, Payload, Registry};
use std::net::Ipv4Addr;
use std::sync::{Arc, OnceLock};

const A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const B: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 9);
const FLOW: FlowKey = FlowKey { src: A, dst: B, protocol: 6, src_port: 10_000, dst_port: 5001 };

fn parsers() -> &'static Parsers {
    static PARSERS: OnceLock<Arc<Parsers>> = OnceLock::new();
    PARSERS.get_or_init(|| Registry::builtin().parsers().clone())
}

fn emit(m: &dyn Message) -> Vec<u8> {
    let mut buf = vec![0; m.wire_len()];
    m.emit(&mut buf).unwrap_or_else(|e| panic!("a parsed message does not emit: {e}\n{m:?}"));
    buf
}

fn through_ip(m: Box<dyn Message>) -> Box<dyn Message> {
    let p = Packet::new(A, B, Payload::Other(m));
    let bytes = p.emit().unwrap_or_else(|e| panic!("a packet of a parsed message does not emit: {e}"));
    let back =
        Packet::parse(&bytes, parsers(), true).unwrap_or_else(|e| panic!("an emitted packet does not parse: {e}"));
    match back.into_fields().payload {
        Payload::Other(m) => m,
        other => panic!("a TCP-Forward message came back as {other:?}"),
    }
}

/// `bytes` with the checksum of a TCP-Forward message (an ack's first
/// [`ACK_LEN`] bytes, or all of them) written over bytes 6 and 7.
fn sealed(bytes: &[u8]) -> Vec<u8> {
    let mut b = bytes.to_vec();
    if b.len() >= 8 {
        b[6..8].fill(0);
        let len = if b[1] == 2 { b.len().min(ACK_LEN) } else { b.len() };
        let sum = checksum::finish(checksum::sum(&b[..len]));
        b[6..8].copy_from_slice(&sum.to_be_bytes());
    }
    b
}

fn round_trip(data: &[u8]) {
    if let Ok(m) = wire::parse(data) {
        let bytes = emit(&*m);
        if let Some(c) = m.downcast_ref::<Coded>() {
            assert_eq!(bytes, data, "a coded symbol's encoding is canonical");
            let back = through_ip(m.clone());
            let back = back.downcast_ref::<Coded>().expect("a coded symbol comes back as one");
            assert_eq!((back.header, back.symbol.bytes()), (c.header, c.symbol.bytes()));
        } else {
            let a = *m.downcast_ref::<Ack>().expect("the other message is an ack");
            assert_eq!(bytes, data[..ACK_LEN]);
            assert_eq!(through_ip(m).downcast_ref::<Ack>(), Some(&a));
        }
    }
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    round_trip(data);
    round_trip(&sealed(data));

    let tcp = TcpConfig { variant: Variant::Vegas, timestamps: true, ..TcpConfig::default() };
    let params = TcpForwardParams::default();
    let marks = FlowMarks::default();
    let mut sink = ForwardSink::new(&params, &tcp, FLOW, true, marks.clone());
    let mut source = ForwardSource::new(&params, &tcp, FLOW, true, marks);
    let mut sent_end = 0;
    for i in 0..40u32 {
        let mut s = Segment::new(FLOW.src_port, FLOW.dst_port);
        (s.seq, s.flags, s.data) = (i * 100, Flags::ACK, Data::Real(vec![i as u8; 100]));
        sent_end = s.end();
        source.handle_transmit(Instant(i as u64), Packet::new(A, B, Payload::Tcp(s)));
    }
    let mut rest = data;
    let mut now = Instant(1_000);
    while rest.len() >= 2 {
        let len = (u16::from_be_bytes([rest[0], rest[1]]) as usize).min(rest.len() - 2);
        let Ok(m) = wire::parse(&sealed(&rest[2..2 + len])) else {
            rest = &rest[2 + len..];
            continue;
        };
        rest = &rest[2 + len..];
        now = Instant(now.0 + 1_000_000);
        let packet = Packet::new(B, A, Payload::Other(m));
        if packet.flow().is_some_and(|f| f.dst_port == FLOW.dst_port) {
            sink.handle_receive(now, packet);
        } else {
            source.handle_receive(now, packet);
        }
        while sink.poll_transmit(now).is_some() || sink.poll_receive(now).is_some() {}
        while source.poll_transmit(now).is_some() {}
        while let Some(p) = source.poll_receive(now) {
            if let Payload::Tcp(ack) = &p.payload {
                assert!(ack.ack <= sent_end, "ACK {} beyond the data TCP sent ({sent_end})", ack.ack);
            }
        }
        if source.poll_timeout().is_some_and(|t| t <= now) {
            source.handle_timeout(now);
        }
    }
});
