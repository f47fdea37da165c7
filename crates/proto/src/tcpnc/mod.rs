//! TCP/NC (Sundararajan et al., "Network coding meets TCP"): a coding layer
//! between TCP and IP that masks random losses from TCP's congestion control.
//!
//! The source codes over TCP's unacknowledged segments and sends R random
//! linear combinations per segment TCP hands it ([`NcSource`]). The sink
//! acknowledges every innovative combination with the first packet it has
//! not yet *seen* and hands decoded segments to TCP in order ([`NcSink`]).
//! In the hop-by-hop variant every node on the path also recodes what it
//! holds before each transmission ([`Relay`]). See `docs/protocols/tcpnc.md`.

mod relay;
mod sink;
mod source;

pub use relay::Relay;
pub use sink::NcSink;
pub use source::NcSource;

use crate::time::Instant;
use ncmesh_codec::prng::SplitMix64;
use ncmesh_codec::Field;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One TCP segment in the coding window, as the sink must rebuild it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentMeta {
    pub seq: u64,
    pub len: u32,
    pub first_sent: Instant,
}

/// A random linear combination of packets `start..start + coefficients.len()`
/// of one flow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Combination {
    pub start: u64,
    pub coefficients: Vec<u8>,
    /// Sent as a seed (the source) or as a dense vector (a recoding relay):
    /// only the header size depends on it.
    pub seeded: bool,
    /// The coded payload; empty with virtual payloads.
    pub payload: Vec<u8>,
    /// What the combined segments are, one per coefficient. Simulation
    /// metadata, not on the wire: with virtual payloads it stands for the
    /// TCP headers a real sink would decode.
    pub segments: Vec<SegmentMeta>,
}

impl Combination {
    /// Bytes of the coding header in the ncmesh wire format, version 1
    /// (`docs/wire.md`): 17 for a sliding-window symbol, plus an 8-byte seed
    /// or the bit-packed vector; plus the 2-byte length that starts each
    /// coded segment, since a sink must know where each decoded segment ends.
    pub fn header_bytes(&self, field: Field) -> u32 {
        let coding = if self.seeded { 8 } else { (self.coefficients.len() as u32 * field.degree()).div_ceil(8) };
        17 + coding + 2
    }
}

/// Parameters of TCP/NC, end to end or hop by hop.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct TcpNcParams {
    /// Combinations sent per segment from TCP (end to end), or per
    /// combination received (per hop). Absent: (1 + margin)/(1-p) from the
    /// configured loss p of the path (end to end) or of the outgoing link
    /// (per hop).
    pub redundancy: Option<f64>,
    /// The margin above 1/(1-p) of the automatic redundancy. At exactly
    /// 1/(1-p) the sink's shortfall of degrees of freedom is a random walk
    /// without drift, and decoding stalls for ever longer stretches.
    pub margin: f64,
    /// The field GF(2^q).
    pub field: u32,
    /// Code real payload bytes, and check them at the sink, instead of
    /// tracking coefficient vectors only. Slower; results are identical.
    pub real_payloads: bool,
    /// Packets a relay holds for each outgoing link, and the most
    /// combinations it owes a link.
    pub relay_queue: u32,
}

impl Default for TcpNcParams {
    fn default() -> Self {
        TcpNcParams { redundancy: None, margin: 0.1, field: 8, real_payloads: false, relay_queue: 50 }
    }
}

impl TcpNcParams {
    /// The redundancy over something that loses a fraction `loss`.
    pub fn redundancy_for(&self, loss: f64) -> f64 {
        self.redundancy.unwrap_or_else(|| (1.0 + self.margin) / (1.0 - loss.clamp(0.0, 0.99)))
    }
}

/// The bytes of packet `index` of a flow with real payloads: a function of
/// the flow's seed and the index, so the sink can check what it decodes.
pub fn payload_of(flow_seed: u64, index: u64, len: usize) -> Vec<u8> {
    let mut out = vec![0; len];
    SplitMix64::new(flow_seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15)).fill_bytes(&mut out);
    out
}

/// Index of the first packet not covered by a cumulative byte ACK, when
/// every packet but the stream's last is `mss` long.
fn packet_index(ack: u64, mss: u32) -> u64 {
    ack.div_ceil(mss as u64)
}

/// Adds `r` to `credit` and returns how many whole transmissions it buys,
/// keeping the fraction: R = 1.25 sends 1, 1, 1, 2, ...
fn spend(credit: &mut f64, r: f64) -> u32 {
    *credit += r;
    let whole = credit.floor();
    *credit -= whole;
    whole as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Body, Direction, HostLayer, Packet};
    use crate::tcp::Segment;

    fn data(seq: u64) -> Packet {
        Packet { flow: 0, direction: Direction::Forward, bytes: 1040, body: Body::Tcp(Segment::data(seq, 1000, Instant::ZERO)) }
    }

    #[test]
    fn lossless_pair_delivers_each_segment_once_decoded() {
        let params = TcpNcParams::default();
        let mut src = NcSource::new(&params, 1000, 1.0, 0, 7);
        let mut sink = NcSink::new(&params, 0, 1000, 100_000, 7);
        let now = Instant::ZERO;
        let mut delivered = vec![];
        for k in 0..50u64 {
            src.handle_transmit(now, data(k * 1000));
            while let Some(p) = src.poll_transmit(now) {
                sink.handle_receive(now, p);
            }
            while let Some(p) = sink.poll_receive(now) {
                let Body::Tcp(s) = p.body else { panic!() };
                delivered.push(s.seq);
            }
            // Every other ACK is lost; the later ones cover it.
            while let Some(ack) = sink.poll_transmit(now) {
                if k % 2 == 0 {
                    src.handle_receive(now, ack);
                }
            }
        }
        assert_eq!(delivered, (0..50).map(|k| k * 1000).collect::<Vec<_>>());
    }

    /// Source, relay and sink joined by lossy pipes, with real payloads: the
    /// sink delivers every segment once, in order, with the bytes the source
    /// coded.
    #[test]
    fn real_payloads_survive_loss_and_recoding() {
        use crate::packet::HopLayer;
        use std::collections::BTreeMap;
        let params = TcpNcParams { real_payloads: true, ..TcpNcParams::default() };
        let mut src = NcSource::new(&params, 1000, 1.0, 0, 11);
        let mut relay = Relay::new(&params, BTreeMap::from([(1, 1.6)]), 12);
        let mut sink = NcSink::new(&params, 0, 1000, 100_000, 11);
        let mut rng = SplitMix64::new(3);
        let now = Instant::ZERO;
        let mut delivered = vec![];
        let mut next = 0u64;
        let mut last_progress = 0;
        for round in 0..6000 {
            if round % 2 == 0 && next < 300 && next < delivered.len() as u64 + 20 {
                src.handle_transmit(now, data(next * 1000));
                next += 1;
                last_progress = round;
            } else if round - last_progress > 50 && (delivered.len() as u64) < next {
                // What TCP's retransmission timer would do: resend the oldest segment.
                src.handle_transmit(now, data(delivered.len() as u64 * 1000));
                last_progress = round;
            }
            while let Some(p) = src.poll_transmit(now) {
                relay.handle_forward(now, 1, p);
            }
            if let Some(p) = relay.poll_frame(now, 1) {
                if rng.next_u64() % 100 >= 30 {
                    sink.handle_receive(now, p);
                }
            }
            while let Some(p) = sink.poll_receive(now) {
                let Body::Tcp(s) = p.body else { panic!() };
                delivered.push(s.seq);
                last_progress = round;
            }
            while let Some(ack) = sink.poll_transmit(now) {
                relay.handle_forward(now, 0, ack.clone());
                src.handle_receive(now, ack);
            }
            while relay.poll_frame(now, 0).is_some() {}
            while src.poll_receive(now).is_some() {}
        }
        assert_eq!(delivered, (0..300).map(|k| k * 1000).collect::<Vec<_>>());
        assert_eq!(sink.corrupt, 0);
        assert!(sink.innovative >= 300);
    }
}
