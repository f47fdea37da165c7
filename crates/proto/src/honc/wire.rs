//! TCP-HONC's frames on a hop: coded block members and ACK-NCBs, one link
//! frame kind with a type byte. Multi-byte integers are big-endian.
//!
//! Coded (20 bytes, then the symbol): version (1), type 1, block size L,
//! flags (0), block index (4), hop sequence number (4), coefficient seed
//! (8). The symbol is the combination of the block's IP packets, each
//! padded with zeros to the largest; a decoded packet's own length field
//! says where it ends.
//!
//! ACK-NCB (40 bytes, then the lists): version (1), type 2, rank (1),
//! reserved (1), stalled blocks (2), path costs (2), block index (4),
//! frames received (4), newest hop sequence seen (4), hold time in
//! nanoseconds (8), downstream backlog (4), cumulative acknowledgement
//! (4 + 4); then per stalled block its index (4) and rank (1), and per path
//! cost the flow's 32-bit id and the cost in seconds as a float (4 + 4).

use crate::message_boilerplate;
use crate::packet::{Kind, Message, Packet};
use crate::time::Duration;
use crate::wire::{need, u16_at, u32_at, u64_at, WireError};

/// The link frame kind.
pub const KIND: Kind = Kind::Link(0x4843);

const VERSION: u8 = 1;
const CODED: u8 = 1;
const ACK: u8 = 2;

/// Bytes of a coded frame's header.
pub const FRAME_HEADER_BYTES: u32 = 20;
/// Bytes of an ACK-NCB without stalled blocks or path costs.
pub const ACK_BYTES: u32 = 40;
/// Bytes per stalled block reported.
pub const STALLED_BYTES: u32 = 5;
/// Bytes per piggybacked path cost.
pub const COST_BYTES: u32 = 8;

/// What travels on a hop between two HONC layers. Link-local: it never
/// reaches IP routing.
#[derive(Clone, Debug)]
pub enum Frame {
    Coded(Coded),
    Ack(AckNcb),
}

/// A coded payload: the combination of a block's IP packets.
pub type Symbol = crate::data::Symbol<Packet>;

/// One random linear combination of a block.
#[derive(Clone, Debug)]
pub struct Coded {
    /// Index of the block on this hop; it names the codec pair's decoder.
    pub block: u32,
    /// Packets in the block, L.
    pub size: u8,
    /// Counts every frame the sender put on this hop, so that the receiver
    /// can say how many it has seen and the sender can estimate the loss rate.
    pub hop_seq: u32,
    /// The coefficient vector is `ncmesh_codec::coefficients::generate(GF(256), seed)`.
    pub seed: u64,
    pub symbol: Symbol,
}

/// An acknowledgement of a network-coding block, sent back on the reverse link.
#[derive(Clone, Debug, PartialEq)]
pub struct AckNcb {
    pub block: u32,
    /// Rank of the receiver's coefficient matrix for the block (= L when decoded).
    pub rank: u8,
    /// Frames received on this hop so far, and the newest hop sequence number among them.
    pub received: u32,
    pub newest: u32,
    /// How long the newest frame had been held when this ACK left: the
    /// sender subtracts it from the round trip to estimate the delay.
    pub hold: Duration,
    /// Sum over the receiver's other hops of Q_e + Q_s (the left side of eq. 12),
    /// before the packets of a block this ACK-NCB reports decoded joined them.
    pub backlog: u32,
    /// Cumulative acknowledgement, so that one lost ACK-NCB does not hold a
    /// codec pair until the sender's timeout: every block below
    /// `finished_below` is decoded, and so is `finished_below + 1 + k` for
    /// each bit k of `finished_mask`.
    pub finished_below: u32,
    pub finished_mask: u32,
    /// Rank of every other block whose Receiving Timer has expired.
    pub stalled: Vec<(u32, u8)>,
    /// C_n^s of eq. (17) for the flows the receiver forwards, by flow id, in seconds.
    pub costs: Vec<(u32, f32)>,
}

impl Frame {
    pub fn parse(bytes: &[u8]) -> Result<Frame, WireError> {
        need(bytes, 0, 2, "version and type")?;
        if bytes[0] != VERSION {
            return Err(WireError::Invalid { field: "version", offset: 0, expected: "1", found: bytes[0] as u64 });
        }
        match bytes[1] {
            CODED => {
                need(bytes, 0, FRAME_HEADER_BYTES as usize, "coded frame header")?;
                if bytes[2] == 0 {
                    return Err(WireError::Invalid { field: "block size", offset: 2, expected: "1 to 255", found: 0 });
                }
                Ok(Frame::Coded(Coded {
                    size: bytes[2],
                    block: u32_at(bytes, 4, "block")?,
                    hop_seq: u32_at(bytes, 8, "hop sequence number")?,
                    seed: u64_at(bytes, 12, "seed")?,
                    symbol: Symbol::Real(bytes[FRAME_HEADER_BYTES as usize..].to_vec()),
                }))
            }
            ACK => {
                need(bytes, 0, ACK_BYTES as usize, "ACK-NCB")?;
                let stalled_n = u16_at(bytes, 4, "stalled count")? as usize;
                let costs_n = u16_at(bytes, 6, "cost count")? as usize;
                let lists = stalled_n * STALLED_BYTES as usize + costs_n * COST_BYTES as usize;
                need(bytes, ACK_BYTES as usize, lists, "stalled blocks and path costs")?;
                let mut at = ACK_BYTES as usize;
                let mut stalled = Vec::with_capacity(stalled_n);
                for _ in 0..stalled_n {
                    stalled.push((u32_at(bytes, at, "stalled block")?, bytes[at + 4]));
                    at += STALLED_BYTES as usize;
                }
                let mut costs = Vec::with_capacity(costs_n);
                for _ in 0..costs_n {
                    costs.push((u32_at(bytes, at, "flow id")?, f32::from_bits(u32_at(bytes, at + 4, "cost")?)));
                    at += COST_BYTES as usize;
                }
                Ok(Frame::Ack(AckNcb {
                    rank: bytes[2],
                    block: u32_at(bytes, 8, "block")?,
                    received: u32_at(bytes, 12, "frames received")?,
                    newest: u32_at(bytes, 16, "newest hop sequence number")?,
                    hold: Duration(u64_at(bytes, 20, "hold time")?),
                    backlog: u32_at(bytes, 28, "backlog")?,
                    finished_below: u32_at(bytes, 32, "finished below")?,
                    finished_mask: u32_at(bytes, 36, "finished mask")?,
                    stalled,
                    costs,
                }))
            }
            t => Err(WireError::Invalid {
                field: "type",
                offset: 1,
                expected: "1 (coded) or 2 (ACK-NCB)",
                found: t as u64,
            }),
        }
    }
}

impl Message for Frame {
    fn kind(&self) -> Kind {
        KIND
    }

    fn wire_len(&self) -> usize {
        match self {
            Frame::Coded(c) => FRAME_HEADER_BYTES as usize + c.symbol.len(),
            Frame::Ack(a) => {
                (ACK_BYTES + STALLED_BYTES * a.stalled.len() as u32 + COST_BYTES * a.costs.len() as u32) as usize
            }
        }
    }

    fn emit(&self, buf: &mut [u8]) -> Result<(), WireError> {
        let len = self.wire_len();
        need(buf, 0, len, "frame")?;
        let b = &mut buf[..len];
        b[0] = VERSION;
        match self {
            Frame::Coded(c) => {
                let Symbol::Real(payload) = &c.symbol else {
                    return Err(WireError::Virtual { what: "HONC coded frame" });
                };
                b[1] = CODED;
                b[2] = c.size;
                b[3] = 0;
                b[4..8].copy_from_slice(&c.block.to_be_bytes());
                b[8..12].copy_from_slice(&c.hop_seq.to_be_bytes());
                b[12..20].copy_from_slice(&c.seed.to_be_bytes());
                b[20..].copy_from_slice(payload);
            }
            Frame::Ack(a) => {
                let count = |n: usize, field| {
                    u16::try_from(n).map_err(|_| WireError::Invalid {
                        field,
                        offset: 4,
                        expected: "at most 65535 entries",
                        found: n as u64,
                    })
                };
                b[1] = ACK;
                b[2] = a.rank;
                b[3] = 0;
                b[4..6].copy_from_slice(&count(a.stalled.len(), "stalled count")?.to_be_bytes());
                b[6..8].copy_from_slice(&count(a.costs.len(), "cost count")?.to_be_bytes());
                b[8..12].copy_from_slice(&a.block.to_be_bytes());
                b[12..16].copy_from_slice(&a.received.to_be_bytes());
                b[16..20].copy_from_slice(&a.newest.to_be_bytes());
                b[20..28].copy_from_slice(&a.hold.0.to_be_bytes());
                b[28..32].copy_from_slice(&a.backlog.to_be_bytes());
                b[32..36].copy_from_slice(&a.finished_below.to_be_bytes());
                b[36..40].copy_from_slice(&a.finished_mask.to_be_bytes());
                let mut at = ACK_BYTES as usize;
                for &(block, rank) in &a.stalled {
                    b[at..at + 4].copy_from_slice(&block.to_be_bytes());
                    b[at + 4] = rank;
                    at += STALLED_BYTES as usize;
                }
                for &(flow, cost) in &a.costs {
                    b[at..at + 4].copy_from_slice(&flow.to_be_bytes());
                    b[at + 4..at + 8].copy_from_slice(&cost.to_bits().to_be_bytes());
                    at += COST_BYTES as usize;
                }
            }
        }
        Ok(())
    }

    message_boilerplate!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn round_trip(f: &Frame) -> Frame {
        let mut buf = vec![0; f.wire_len()];
        f.emit(&mut buf).unwrap();
        Frame::parse(&buf).unwrap()
    }

    #[test]
    fn both_frames_round_trip_at_their_documented_sizes() {
        let c = Frame::Coded(Coded {
            block: 7,
            size: 4,
            hop_seq: 99,
            seed: 0xDEAD_BEEF,
            symbol: Symbol::Real(vec![5; 1040]),
        });
        assert_eq!(c.wire_len(), 1060);
        let Frame::Coded(back) = round_trip(&c) else { panic!("a coded frame") };
        assert_eq!((back.block, back.size, back.hop_seq, back.seed, back.symbol.len()), (7, 4, 99, 0xDEAD_BEEF, 1040));
        let a = AckNcb {
            block: 3,
            rank: 2,
            received: 10,
            newest: 12,
            hold: Duration(123_456_789),
            backlog: 8,
            finished_below: 2,
            finished_mask: 0b101,
            stalled: vec![(4, 1), (6, 3)],
            costs: vec![(0xABCD, 0.25)],
        };
        assert_eq!(Frame::Ack(a.clone()).wire_len(), 40 + 10 + 8);
        let Frame::Ack(back) = round_trip(&Frame::Ack(a.clone())) else { panic!("an ACK-NCB") };
        assert_eq!(back, a);
    }

    #[test]
    fn refuses_truncated_lists_and_unknown_types() {
        let a = Frame::Ack(AckNcb {
            block: 0,
            rank: 0,
            received: 0,
            newest: 0,
            hold: Duration::ZERO,
            backlog: 0,
            finished_below: 0,
            finished_mask: 0,
            stalled: vec![(1, 1)],
            costs: vec![],
        });
        let mut buf = vec![0; a.wire_len()];
        a.emit(&mut buf).unwrap();
        assert!(matches!(Frame::parse(&buf[..44]), Err(WireError::Truncated { .. })));
        buf[1] = 9;
        assert!(matches!(Frame::parse(&buf), Err(WireError::Invalid { field: "type", .. })));
        let virtual_ = Frame::Coded(Coded {
            block: 0,
            size: 1,
            hop_seq: 0,
            seed: 0,
            symbol: Symbol::Virtual { len: 3, members: Arc::from(vec![]) },
        });
        assert_eq!(virtual_.emit(&mut [0; 23]), Err(WireError::Virtual { what: "HONC coded frame" }));
    }
}
