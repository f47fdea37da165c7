//! TCP/NC on the wire: a coded combination of segments (IP protocol 253)
//! and the sink's acknowledgement of what it has seen (IP protocol 254),
//! the two experimental numbers of RFC 3692.
//!
//! A combination is a sliding-window symbol of the codec wire format
//! (`docs/wire.md`) whose generation field names the flow: source port in
//! the high 16 bits, destination port in the low. Its payload is the
//! combination of the window's coded segments, each coded as its length
//! (2 bytes), its TCP header and data, then zeros up to the symbol size.

use crate::message_boilerplate;
use crate::packet::{Kind, Message, Packet, Payload};
use crate::tcp;
use crate::wire::{need, u16_at, u32_at, u64_at, WireError};
use ncmesh_codec::wire as codec_wire;
use ncmesh_codec::Field;
use std::net::Ipv4Addr;

/// IP protocol number of a combination.
pub const COMBINATION: u8 = 253;
/// IP protocol number of an acknowledgement.
pub const ACK: u8 = 254;
/// Bytes of an acknowledgement after the IP header.
pub const ACK_LEN: usize = 20;

/// How a combination's coefficients travel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Coding {
    /// Drawn from a seed (the source).
    Seeded(u64),
    /// Sent as they are, bit-packed (a recoding relay, whose combinations have no seed).
    Dense,
}

/// A coded payload: the combination of a window of segments, one per coefficient.
pub type Symbol = crate::data::Symbol<tcp::Segment>;

/// A random linear combination of packets `start..start + coefficients.len()` of one flow.
#[derive(Clone, Debug)]
pub struct Combination {
    pub src_port: u16,
    pub dst_port: u16,
    pub field: Field,
    pub start: u64,
    /// One element a byte, whatever the field.
    pub coefficients: Vec<u8>,
    pub coding: Coding,
    pub symbol: Symbol,
}

impl Combination {
    fn coding_len(&self) -> usize {
        match self.coding {
            Coding::Seeded(_) => 8,
            Coding::Dense => (self.coefficients.len() * self.field.degree() as usize).div_ceil(8),
        }
    }

    pub fn parse(bytes: &[u8]) -> Result<Combination, WireError> {
        let view = codec_wire::Packet::new_checked(bytes)?;
        let repr = codec_wire::Repr::parse(&view)?;
        let Some(start) = repr.window_start else {
            return Err(WireError::Invalid {
                field: "flags",
                offset: 1,
                expected: "the sliding-window flag",
                found: bytes[1] as u64,
            });
        };
        let coding = match repr.coding {
            codec_wire::Coding::Seeded { seed } => Coding::Seeded(seed),
            codec_wire::Coding::Dense(_) => Coding::Dense,
            codec_wire::Coding::Systematic { .. } => {
                return Err(WireError::Invalid {
                    field: "flags",
                    offset: 1,
                    expected: "seeded or dense coefficients",
                    found: bytes[1] as u64,
                })
            }
        };
        let mut coefficients = Vec::new();
        repr.coefficients_into(&mut coefficients)?;
        Ok(Combination {
            src_port: (repr.generation >> 16) as u16,
            dst_port: repr.generation as u16,
            field: repr.field,
            start,
            coefficients,
            coding,
            symbol: Symbol::Real(repr.payload.to_vec()),
        })
    }
}

impl Message for Combination {
    fn kind(&self) -> Kind {
        Kind::Ip(COMBINATION)
    }

    fn wire_len(&self) -> usize {
        17 + self.coding_len() + self.symbol.len()
    }

    fn emit(&self, buf: &mut [u8]) -> Result<(), WireError> {
        let Symbol::Real(payload) = &self.symbol else { return Err(WireError::Virtual { what: "TCP/NC combination" }) };
        let mut packed = Vec::new();
        let coding = match self.coding {
            Coding::Seeded(seed) => codec_wire::Coding::Seeded { seed },
            Coding::Dense => {
                codec_wire::pack(self.field, &self.coefficients, &mut packed)?;
                codec_wire::Coding::Dense(&packed)
            }
        };
        let symbols = u16::try_from(self.coefficients.len()).map_err(|_| WireError::Invalid {
            field: "symbol count",
            offset: 3,
            expected: "at most 65535",
            found: self.coefficients.len() as u64,
        })?;
        let repr = codec_wire::Repr {
            field: self.field,
            generation: (self.src_port as u32) << 16 | self.dst_port as u32,
            symbols,
            window_start: Some(self.start),
            coding,
            payload,
        };
        repr.emit(buf)?;
        Ok(())
    }

    fn flow(&self) -> Option<(u8, u16, u16)> {
        Some((tcp::PROTOCOL, self.src_port, self.dst_port))
    }

    message_boilerplate!();
}

/// The sink's acknowledgement: every packet below `seen` is seen.
///
/// Layout: version (1), reserved (1), source port (2), destination port
/// (2), reserved (2), seen (8), window in bytes (4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ack {
    pub src_port: u16,
    pub dst_port: u16,
    pub seen: u64,
    pub window: u32,
}

impl Ack {
    pub fn parse(bytes: &[u8]) -> Result<Ack, WireError> {
        need(bytes, 0, ACK_LEN, "acknowledgement")?;
        if bytes[0] != 1 {
            return Err(WireError::Invalid { field: "version", offset: 0, expected: "1", found: bytes[0] as u64 });
        }
        Ok(Ack {
            src_port: u16_at(bytes, 2, "source port")?,
            dst_port: u16_at(bytes, 4, "destination port")?,
            seen: u64_at(bytes, 8, "seen")?,
            window: u32_at(bytes, 16, "window")?,
        })
    }
}

impl Message for Ack {
    fn kind(&self) -> Kind {
        Kind::Ip(ACK)
    }

    fn wire_len(&self) -> usize {
        ACK_LEN
    }

    fn emit(&self, buf: &mut [u8]) -> Result<(), WireError> {
        need(buf, 0, ACK_LEN, "acknowledgement")?;
        buf[..ACK_LEN].fill(0);
        buf[0] = 1;
        buf[2..4].copy_from_slice(&self.src_port.to_be_bytes());
        buf[4..6].copy_from_slice(&self.dst_port.to_be_bytes());
        buf[8..16].copy_from_slice(&self.seen.to_be_bytes());
        buf[16..20].copy_from_slice(&self.window.to_be_bytes());
        Ok(())
    }

    fn flow(&self) -> Option<(u8, u16, u16)> {
        Some((tcp::PROTOCOL, self.src_port, self.dst_port))
    }

    message_boilerplate!();
}

/// A packet carrying a TCP/NC message.
pub fn packet(src: Ipv4Addr, dst: Ipv4Addr, message: Box<dyn Message>) -> Packet {
    Packet::new(src, dst, Payload::Other(message))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn both_messages_round_trip() {
        let c = Combination {
            src_port: 10_001,
            dst_port: 5001,
            field: Field::new(8).unwrap(),
            start: 1 << 40,
            coefficients: vec![3, 0, 250],
            coding: Coding::Dense,
            symbol: Symbol::Real(vec![9; 40]),
        };
        let mut buf = vec![0; c.wire_len()];
        c.emit(&mut buf).unwrap();
        assert_eq!(buf.len(), 17 + 3 + 40);
        let back = Combination::parse(&buf).unwrap();
        assert_eq!(
            (back.src_port, back.dst_port, back.start, &back.coefficients, back.coding.clone()),
            (10_001, 5001, 1 << 40, &c.coefficients, Coding::Dense)
        );
        assert_eq!(back.symbol.bytes(), c.symbol.bytes());
        let seeded = Combination {
            coding: Coding::Seeded(77),
            coefficients: {
                let mut v = vec![0; 3];
                ncmesh_codec::coefficients::generate(c.field, 77, &mut v);
                v
            },
            ..c.clone()
        };
        let mut buf = vec![0; seeded.wire_len()];
        seeded.emit(&mut buf).unwrap();
        assert_eq!(buf.len(), 17 + 8 + 40);
        assert_eq!(Combination::parse(&buf).unwrap().coefficients, seeded.coefficients);

        let a = Ack { src_port: 5001, dst_port: 10_001, seen: 12345, window: 100_000 };
        let mut buf = [0; ACK_LEN];
        a.emit(&mut buf).unwrap();
        assert_eq!(Ack::parse(&buf).unwrap(), a);
        assert!(matches!(Ack::parse(&buf[..19]), Err(WireError::Truncated { .. })));
        let virtual_ = Combination { symbol: Symbol::Virtual { len: 40, members: Arc::from(vec![]) }, ..c };
        assert_eq!(virtual_.wire_len(), 17 + 3 + 40);
        assert_eq!(virtual_.emit(&mut [0; 60]), Err(WireError::Virtual { what: "TCP/NC combination" }));
    }
}
