//! Two `Node`s joined by an in-memory link, with a TCP sender and receiver
//! as their hosts, and no simulator: the shape a daemon drives them in. In
//! real-payload runs the bytes crossing the link are the packets'
//! encodings, the receiver checks the content it is delivered, and a byte
//! flipped on the link is caught by a checksum and repaired by TCP.

use ncmesh_proto::tcp::{Connection, TcpConfig, TcpReceiver, TcpSender};
use ncmesh_proto::testing::mesh::{addr, LinkSpec, Mesh, MeshBuilder};
use ncmesh_proto::{Data, Duration, FlowKey, Frame, Instant, Packet, Payload};
use std::sync::Arc;

const BYTES: u64 = 300_000;

/// The byte at `offset` of the stream the sender's application writes.
fn stream_byte(offset: u64) -> u8 {
    (offset.wrapping_mul(0x9E37_79B9) >> 13) as u8
}

/// The hosts of a transfer of `BYTES` from node 0 to node 1.
struct Hosts {
    key: FlowKey,
    sender: TcpSender,
    receiver: TcpReceiver,
    real: bool,
    /// Stream bytes delivered in order, and those of them that were wrong.
    delivered: u64,
    wrong: u64,
}

impl Hosts {
    /// What the hosts do at each instant: take deliveries, run their
    /// timers, answer and send. Returns their next deadline.
    fn step(&mut self, mesh: &mut Mesh) -> Option<Instant> {
        let now = mesh.now;
        for (_, packet) in std::mem::take(&mut mesh.delivered[1]) {
            let Payload::Tcp(segment) = &packet.payload else { panic!("only TCP crosses the link") };
            self.receiver.handle_segment(now, segment);
        }
        for (_, packet) in std::mem::take(&mut mesh.delivered[0]) {
            let Payload::Tcp(segment) = &packet.payload else { panic!("only TCP crosses the link") };
            self.sender.handle_ack(now, segment);
        }
        if self.sender.poll_timeout().is_some_and(|t| t <= now) {
            self.sender.handle_timeout(now);
        }
        if self.receiver.poll_timeout().is_some_and(|t| t <= now) {
            self.receiver.handle_timeout(now);
        }
        while let Some(d) = self.receiver.poll_delivery() {
            assert_eq!(d.offset, self.delivered, "deliveries are in order");
            match &d.data {
                Data::Real(bytes) => {
                    self.wrong +=
                        bytes.iter().enumerate().filter(|&(i, &b)| b != stream_byte(d.offset + i as u64)).count() as u64
                }
                Data::Virtual { offset, .. } => {
                    assert!(!self.real && *offset == d.offset, "virtual data names its place")
                }
            }
            self.delivered += d.data.len() as u64;
        }
        while let Some(ack) = self.receiver.poll_transmit(now) {
            mesh.send(1, Packet::new(self.key.dst, self.key.src, Payload::Tcp(ack)));
        }
        while let Some(mut segment) = self.sender.poll_transmit(now) {
            if let (true, Data::Virtual { len, offset }) = (self.real, &segment.data) {
                segment.data = Data::Real((*offset..offset + *len as u64).map(stream_byte).collect());
            }
            mesh.send(0, Packet::new(self.key.src, self.key.dst, Payload::Tcp(segment)));
        }
        if self.sender.is_finished() {
            return None;
        }
        [self.sender.poll_timeout(), self.receiver.poll_timeout()].into_iter().flatten().min()
    }
}

/// Two nodes and their hosts, ready to transfer.
fn transfer(real: bool, loss: f64) -> (Mesh, Hosts) {
    let link = LinkSpec { loss, queue: 64, ..LinkSpec::new(10_000_000, Duration::from_millis(5)) };
    let mut builder = MeshBuilder::new(2).link(0, 1, link);
    builder.real_payloads = real;
    let mut mesh = builder.build(7, |_, _| None);
    let key = FlowKey { src: addr(0), dst: addr(1), protocol: 6, src_port: 10_000, dst_port: 5001 };
    mesh.route(key, &[0, 1]);
    let config = TcpConfig::default();
    let conn = Connection { local_port: 10_000, remote_port: 5001, local_isn: 0x89AB_CDEF, remote_isn: 0x0123_4567 };
    let mut sender = TcpSender::new(&config, conn);
    sender.push(BYTES);
    (mesh, Hosts { key, sender, receiver: TcpReceiver::new(&config, conn.reversed()), real, delivered: 0, wrong: 0 })
}

/// Runs until the sender has every byte acknowledged; returns when.
fn run(mesh: &mut Mesh, hosts: &mut Hosts) -> Instant {
    mesh.run_hosts(Instant::ZERO + Duration::from_secs(60), |m| hosts.step(m));
    mesh.now
}

#[test]
fn a_transfer_crosses_two_nodes_in_both_payload_modes_alike() {
    let mut finished = Vec::new();
    for real in [false, true] {
        let (mut mesh, mut hosts) = transfer(real, 0.02);
        let at = run(&mut mesh, &mut hosts);
        assert!(hosts.sender.is_finished(), "real = {real}: the transfer finishes");
        assert_eq!((hosts.delivered, hosts.wrong), (BYTES, 0), "real = {real}: every byte arrives and checks out");
        assert!(mesh.lost > 0, "the link lost frames, which TCP repaired");
        assert_eq!(mesh.nodes[1].stats().malformed, 0, "real = {real}: nothing on a clean link fails to parse");
        finished.push((at, mesh.lost, mesh.carried(0, 1)));
    }
    assert_eq!(finished[0], finished[1], "the payload mode changes no timing, loss or count");
}

#[test]
fn a_byte_flipped_on_the_link_is_caught_and_repaired() {
    let (mut mesh, mut hosts) = transfer(true, 0.0);
    let mut frames = 0;
    mesh.mangle = Some(Box::new(move |from, _, frame: &mut Frame| {
        frames += 1;
        // The 20th frame from the sender: flip a byte of its TCP payload.
        if from != 0 || frames != 20 {
            return;
        }
        let Some(bytes) = frame.bytes_mut() else { panic!("a real-payload link carries bytes") };
        let mut flipped = bytes.to_vec();
        flipped[100] ^= 0x40;
        *bytes = Arc::from(flipped);
    }));
    run(&mut mesh, &mut hosts);
    assert!(hosts.sender.is_finished());
    assert_eq!((hosts.delivered, hosts.wrong), (BYTES, 0), "the damaged segment is dropped and sent again");
    assert_eq!(mesh.nodes[1].stats().malformed, 1, "the receiving node counts the frame it refused");
}
