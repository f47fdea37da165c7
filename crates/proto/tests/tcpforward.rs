//! TCP-Forward between a TCP Vegas sender and receiver on a 3-node tandem
//! of in-memory links under virtual time: what arrives, and what the two
//! layers do to TCP on the way.

use ncmesh_proto::marks::FlowMarks;
use ncmesh_proto::scheme::Registry;
use ncmesh_proto::tcp::{Connection, TcpConfig, TcpReceiver, TcpSender, Variant};
use ncmesh_proto::tcpforward::{ForwardSink, ForwardSource, TcpForwardParams, CREDIT};
use ncmesh_proto::testing::mesh::{addr, LinkSpec, Mesh, MeshBuilder};
use ncmesh_proto::{Data, Duration, FlowKey, Instant, Packet, Payload};
use std::any::Any;

const MSS: u32 = 1000;

fn flow() -> FlowKey {
    FlowKey { src: addr(0), dst: addr(2), protocol: 6, src_port: 10_000, dst_port: 5001 }
}

fn tcp() -> TcpConfig {
    TcpConfig { variant: Variant::Vegas, mss: MSS, timestamps: true, rcv_window: 100, ..TcpConfig::default() }
}

/// Byte `offset` of the stream.
fn content(offset: u64) -> u8 {
    (offset.wrapping_mul(0x9E37_79B9) >> 7) as u8
}

struct Transfer {
    mesh: Mesh,
    sender: TcpSender,
    receiver: TcpReceiver,
    real: bool,
    /// The highest sequence number TCP sent, and every translated ACK TCP got, in order.
    sent_end: u32,
    acks: Vec<(u32, u32)>,
    /// What the receiving application got: offset and bytes.
    delivered: Vec<(u64, Data)>,
}

impl Transfer {
    fn new(link: LinkSpec, params: &TcpForwardParams, real: bool, bytes: u64, seed: u64) -> Transfer {
        let mut b = MeshBuilder::new(3).link(0, 1, link).link(1, 2, link);
        b.real_payloads = real;
        b.parsers = Registry::builtin().parsers().clone();
        let mut mesh = b.build(seed, |_, _| None);
        mesh.route(flow(), &[0, 1, 2]);
        let marks = FlowMarks::default();
        mesh.nodes[0].add_end_layer(flow(), Box::new(ForwardSource::new(params, &tcp(), flow(), real, marks.clone())));
        mesh.nodes[2].add_end_layer(flow().reversed(), Box::new(ForwardSink::new(params, &tcp(), flow(), real, marks)));
        let conn = Connection { local_port: 10_000, remote_port: 5001, local_isn: 7, remote_isn: 0 };
        let mut sender = TcpSender::new(&tcp(), conn);
        sender.push(bytes);
        let receiver = TcpReceiver::new(&tcp(), conn.reversed());
        Transfer { mesh, sender, receiver, real, sent_end: 7, acks: Vec::new(), delivered: Vec::new() }
    }

    /// Runs until the sender is done or `until`.
    fn run(&mut self, until: Instant) {
        let (sender, receiver) = (&mut self.sender, &mut self.receiver);
        let (sent_end, acks, delivered, real) = (&mut self.sent_end, &mut self.acks, &mut self.delivered, self.real);
        self.mesh.run_hosts(until, |mesh| {
            let now = mesh.now;
            for (_, p) in mesh.delivered[0].drain(..) {
                let Payload::Tcp(ack) = &p.payload else { panic!("only translated ACKs reach the sender") };
                acks.push((ack.ack, *sent_end));
                sender.handle_ack(now, ack);
            }
            if sender.poll_timeout().is_some_and(|t| t <= now) {
                sender.handle_timeout(now);
            }
            while let Some(mut s) = sender.poll_transmit(now) {
                if let (true, Data::Virtual { len, offset }) = (real, &s.data) {
                    s.data = Data::Real((0..*len as u64).map(|i| content(offset + i)).collect());
                }
                if (s.end().wrapping_sub(*sent_end) as i32) > 0 {
                    *sent_end = s.end();
                }
                mesh.send(0, Packet::new(flow().src, flow().dst, Payload::Tcp(s)));
            }
            for (_, p) in mesh.delivered[2].drain(..) {
                let Payload::Tcp(s) = &p.payload else { panic!("only segments reach the receiver") };
                receiver.handle_segment(now, s);
            }
            if receiver.poll_timeout().is_some_and(|t| t <= now) {
                receiver.handle_timeout(now);
            }
            while let Some(ack) = receiver.poll_transmit(now) {
                mesh.send(2, Packet::new(flow().dst, flow().src, Payload::Tcp(ack)));
            }
            while let Some(d) = receiver.poll_delivery() {
                delivered.push((d.offset, d.data));
            }
            if sender.is_finished() {
                return None;
            }
            [sender.poll_timeout(), receiver.poll_timeout()].into_iter().flatten().min()
        });
    }

    fn source(&self) -> &ForwardSource {
        let layer = self.mesh.nodes[0].end_layer(flow()).expect("the source's layer");
        (layer as &dyn Any).downcast_ref().expect("a TCP-Forward source")
    }

    /// Every byte of `total`, once, in order, and (with real payloads) as sent.
    fn assert_delivered(&self, total: u64) {
        let mut at = 0;
        for (offset, data) in &self.delivered {
            assert_eq!(*offset, at, "delivered in order, once");
            if let Some(bytes) = data.bytes() {
                assert!(bytes.iter().zip(at..).all(|(&b, i)| b == content(i)), "bytes as sent at {at}");
            }
            at += data.len() as u64;
        }
        assert_eq!(at, total);
    }
}

/// A hop of 1 Mbit/s and 100 ms losing `loss` of its frames each way, with
/// up to `jitter_ms` of extra delay per frame, which reorders them.
fn hop(loss: f64, jitter_ms: u64) -> LinkSpec {
    LinkSpec { loss, jitter: Duration::from_millis(jitter_ms), ..LinkSpec::new(1_000_000, Duration::from_millis(100)) }
}

#[test]
fn every_byte_arrives_once_in_order_and_intact_under_loss_and_reordering() {
    for (real, loss, seed) in [(true, 0.0, 1), (true, 0.15, 2), (false, 0.15, 3), (true, 0.3, 4)] {
        let total = 300_000;
        let mut t = Transfer::new(hop(loss, 15), &TcpForwardParams::default(), real, total, seed);
        t.run(Instant::from_secs_f64(600.0));
        assert!(t.sender.is_finished(), "loss {loss}: the transfer finishes");
        t.assert_delivered(total);
        assert!(loss == 0.0 || t.mesh.lost > 50, "the links lost {} frames", t.mesh.lost);
    }
}

#[test]
fn translated_acks_move_tcp_one_segment_per_decoded_segment_and_never_past_what_it_sent() {
    let mut t = Transfer::new(hop(0.2, 10), &TcpForwardParams::default(), false, 200_000, 5);
    t.run(Instant::from_secs_f64(600.0));
    assert!(t.sender.is_finished());
    let mut last = 7u32;
    for &(ack, sent_end) in &t.acks {
        assert!((sent_end.wrapping_sub(ack) as i32) >= 0, "ACK {ack} beyond the data TCP sent ({sent_end})");
        let step = ack.wrapping_sub(last);
        assert!(step > 0 && step.is_multiple_of(MSS), "each ACK moves TCP by whole segments, {step} bytes");
        last = ack;
    }
    // One segment per decoded segment: the ACKs advance 200 segments in all.
    assert_eq!(last.wrapping_sub(7), 200_000);
}

#[test]
fn credits_release_at_most_r_symbols_per_segment_and_retransmissions_raise_r() {
    let params = TcpForwardParams { min_redundancy: 1.1, ..TcpForwardParams::default() };
    let mut r = Vec::new();
    for loss in [0.0, 0.2, 0.4] {
        let mut t = Transfer::new(hop(loss, 0), &params, false, 150_000, 6);
        t.run(Instant::from_secs_f64(900.0));
        assert!(t.sender.is_finished(), "loss {loss}");
        let s = t.source();
        // Every symbol the credits release is paid for: at most R per segment TCP pushed.
        assert!(
            s.symbols_sent * CREDIT <= s.credits_earned,
            "{} symbols, {} credits",
            s.symbols_sent,
            s.credits_earned
        );
        let pushed = 150 + s.absorbed;
        assert!(s.credits_earned <= pushed * (params.max_redundancy * CREDIT as f64) as u64);
        let redundancy = s.redundancy();
        assert!((params.min_redundancy..=params.max_redundancy).contains(&redundancy));
        r.push((s.timeouts as f64 / s.segments_coded as f64, redundancy));
    }
    // More loss, more segments late, and R follows: R = N_seg / (N_seg - N_timeout).
    assert!(r[0].0 < r[1].0 && r[1].0 < r[2].0, "timeout rates {r:?}");
    assert!(r[0].1 <= r[1].1 && r[1].1 < r[2].1, "redundancies {r:?}");
}

#[test]
fn real_and_virtual_payloads_make_the_same_transfer() {
    // The same frames and the same ACKs: a virtual run counts the bytes a real one sends.
    let params = TcpForwardParams::default();
    let [v, r] = [false, true].map(|real| {
        let mut t = Transfer::new(hop(0.1, 5), &params, real, 100_000, 8);
        t.run(Instant::from_secs_f64(300.0));
        t.assert_delivered(100_000);
        t
    });
    assert_eq!((v.mesh.carried(0, 1), v.mesh.carried(1, 2)), (r.mesh.carried(0, 1), r.mesh.carried(1, 2)));
    assert_eq!(v.acks, r.acks);
}

mod peers {
    //! Whatever a peer sends, neither layer panics, and the source never
    //! acknowledges to TCP a byte TCP did not send.
    use super::*;
    use ncmesh_proto::node::EndLayer;
    use ncmesh_proto::tcp::{Flags, Segment};
    use ncmesh_proto::tcpforward::wire::{Ack, Coded, Header, Symbol};
    use proptest::prelude::*;
    use std::sync::Arc;

    fn header() -> impl Strategy<Value = Header> {
        (any::<bool>(), 1u16..=1024, any::<u32>(), 0u64..300, 0u64..300, any::<u32>()).prop_map(
            |(retransmission, k, esi, start, below, timestamp)| Header {
                src_port: 10_000,
                dst_port: 5001,
                retransmission,
                k,
                esi,
                start,
                acked_below: below.min(start),
                timestamp,
            },
        )
    }

    fn ack() -> impl Strategy<Value = Ack> {
        (0u64..200, 0u64..200, any::<u64>()).prop_map(|(decoded, next, mask)| Ack {
            src_port: 5001,
            dst_port: 10_000,
            decoded,
            next,
            mask,
            window: 100_000,
            echo: 0,
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn arbitrary_messages_leave_both_layers_standing(
            symbols in prop::collection::vec((header(), prop_oneof![3 => Just(1034usize), 1 => 0usize..1100]), 0..40),
            acks in prop::collection::vec(ack(), 0..40),
            real: bool,
        ) {
            let params = TcpForwardParams::default();
            let marks = FlowMarks::default();
            let mut sink = ForwardSink::new(&params, &tcp(), flow(), real, marks.clone());
            let mut source = ForwardSource::new(&params, &tcp(), flow(), real, marks);
            for (i, (h, len)) in symbols.into_iter().enumerate() {
                let now = Instant(i as u64 * 1_000_000);
                let symbol = if real { Symbol::Real(vec![i as u8; len]) } else { Symbol::Virtual { len, members: Arc::from(vec![]) } };
                let p = Packet::new(flow().src, flow().dst, Payload::Other(Box::new(Coded { header: h, symbol })));
                sink.handle_receive(now, p);
                while sink.poll_transmit(now).is_some() || sink.poll_receive(now).is_some() {}
            }
            let mut sent_end = 7;
            for i in 0..50u32 {
                let mut s = Segment::new(10_000, 5001);
                (s.seq, s.flags, s.data) = (7 + i * MSS, Flags::ACK, Data::Virtual { len: MSS, offset: (i * MSS) as u64 });
                sent_end = s.end();
                source.handle_transmit(Instant(i as u64), Packet::new(flow().src, flow().dst, Payload::Tcp(s)));
            }
            let mut told = 7;
            for (i, a) in acks.into_iter().enumerate() {
                let now = Instant(100 + i as u64 * 10_000_000);
                source.handle_receive(now, Packet::new(flow().dst, flow().src, Payload::Other(Box::new(a))));
                if source.poll_timeout().is_some_and(|t| t <= now) {
                    source.handle_timeout(now);
                }
                while source.poll_transmit(now).is_some() {}
                while let Some(p) = source.poll_receive(now) {
                    let Payload::Tcp(ack) = &p.payload else { panic!("translated ACKs only") };
                    prop_assert!(ack.ack > told && ack.ack <= sent_end, "ACK {} after {told}, sent {sent_end}", ack.ack);
                    told = ack.ack;
                }
            }
        }
    }
}
