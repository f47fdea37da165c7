//! IPv4 (RFC 791): the 20-byte header without options, as every packet of
//! the node stack carries. Options are skipped on parse, never emitted;
//! fragments are refused, since no node of ncmesh fragments.

use super::{checksum, field, need, u16_at, WireError};
use std::net::Ipv4Addr;

/// Bytes of the header ncmesh emits.
pub const HEADER_LEN: usize = 20;

/// The TTL of packets a host sends.
pub const DEFAULT_TTL: u8 = 64;

/// A checked view of an IPv4 datagram: once [`Packet::new_checked`] has
/// passed, the header, its options and the payload are within the buffer.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    pub fn new_checked(buffer: T) -> Result<Packet<T>, WireError> {
        let bytes = buffer.as_ref();
        let first = field::<1>(bytes, 0, "version and header length")?[0];
        if first >> 4 != 4 {
            return Err(WireError::Invalid { field: "version", offset: 0, expected: "4", found: (first >> 4) as u64 });
        }
        let header_len = (first & 0x0F) as usize * 4;
        if header_len < HEADER_LEN {
            return Err(WireError::Invalid {
                field: "header length",
                offset: 0,
                expected: "at least 5 words",
                found: (header_len / 4) as u64,
            });
        }
        need(bytes, 0, header_len, "header")?;
        let total = u16_at(bytes, 2, "total length")? as usize;
        if total < header_len {
            return Err(WireError::Invalid {
                field: "total length",
                offset: 2,
                expected: "at least the header length",
                found: total as u64,
            });
        }
        need(bytes, 0, total, "payload")?;
        Ok(Packet { buffer })
    }

    fn bytes(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    pub fn header_len(&self) -> usize {
        (self.bytes()[0] & 0x0F) as usize * 4
    }

    pub fn total_len(&self) -> usize {
        u16::from_be_bytes([self.bytes()[2], self.bytes()[3]]) as usize
    }

    /// Flags and fragment offset: bit 13 is MF, bits 0-12 the offset.
    pub fn fragment(&self) -> u16 {
        u16::from_be_bytes([self.bytes()[6], self.bytes()[7]])
    }

    pub fn ttl(&self) -> u8 {
        self.bytes()[8]
    }

    pub fn protocol(&self) -> u8 {
        self.bytes()[9]
    }

    pub fn src(&self) -> Ipv4Addr {
        let b = self.bytes();
        Ipv4Addr::new(b[12], b[13], b[14], b[15])
    }

    pub fn dst(&self) -> Ipv4Addr {
        let b = self.bytes();
        Ipv4Addr::new(b[16], b[17], b[18], b[19])
    }

    pub fn checksum_ok(&self) -> bool {
        checksum::finish(checksum::sum(&self.bytes()[..self.header_len()])) == 0
    }

    /// The bytes after the header, up to the total length.
    pub fn payload(&self) -> &[u8] {
        &self.bytes()[self.header_len()..self.total_len()]
    }
}

/// Rewrites the TTL of the datagram in `buf` and its header checksum, as a
/// router does to what it forwards.
pub fn forward(buf: &mut [u8], ttl: u8) -> Result<(), WireError> {
    let header_len = Packet::new_checked(&*buf)?.header_len();
    buf[8] = ttl;
    buf[10..12].fill(0);
    let c = checksum::finish(checksum::sum(&buf[..header_len]));
    buf[10..12].copy_from_slice(&c.to_be_bytes());
    Ok(())
}

/// The header fields the node stack uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repr {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub protocol: u8,
    pub ttl: u8,
    pub payload_len: usize,
}

impl Repr {
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr, WireError> {
        if !packet.checksum_ok() {
            return Err(WireError::Checksum { what: "IPv4 header" });
        }
        let fragment = packet.fragment();
        if fragment & 0x3FFF != 0 {
            return Err(WireError::Invalid {
                field: "flags and fragment offset",
                offset: 6,
                expected: "an unfragmented datagram",
                found: fragment as u64,
            });
        }
        Ok(Repr {
            src: packet.src(),
            dst: packet.dst(),
            protocol: packet.protocol(),
            ttl: packet.ttl(),
            payload_len: packet.total_len() - packet.header_len(),
        })
    }

    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.payload_len
    }

    /// Writes the 20-byte header into `buf[..HEADER_LEN]`, checksum included.
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), WireError> {
        let total = self.buffer_len();
        if total > u16::MAX as usize {
            return Err(WireError::Invalid {
                field: "total length",
                offset: 2,
                expected: "at most 65535",
                found: total as u64,
            });
        }
        need(buf, 0, HEADER_LEN, "header")?;
        let h = &mut buf[..HEADER_LEN];
        h[0] = 0x45;
        h[1] = 0;
        h[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        // Identification zero with Don't Fragment, as RFC 6864 allows for atomic datagrams.
        h[4..6].fill(0);
        h[6..8].copy_from_slice(&0x4000u16.to_be_bytes());
        h[8] = self.ttl;
        h[9] = self.protocol;
        h[10..12].fill(0);
        h[12..16].copy_from_slice(&self.src.octets());
        h[16..20].copy_from_slice(&self.dst.octets());
        let c = checksum::finish(checksum::sum(h));
        h[10..12].copy_from_slice(&c.to_be_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repr() -> Repr {
        Repr { src: Ipv4Addr::new(10, 0, 0, 1), dst: Ipv4Addr::new(10, 0, 0, 2), protocol: 6, ttl: 64, payload_len: 3 }
    }

    #[test]
    fn emits_a_header_that_parses_back() {
        let mut buf = vec![0; 23];
        repr().emit(&mut buf).unwrap();
        buf[20..].copy_from_slice(b"abc");
        // A hand-checked header: 45 00 0017 0000 4000 40 06 cksum 0a000001 0a000002.
        assert_eq!(&buf[..10], &[0x45, 0, 0, 23, 0, 0, 0x40, 0, 64, 6]);
        let packet = Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(Repr::parse(&packet).unwrap(), repr());
        assert_eq!(packet.payload(), b"abc");
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        let mut buf = vec![0; 23];
        repr().emit(&mut buf).unwrap();
        assert!(matches!(Packet::new_checked(&buf[..22]), Err(WireError::Truncated { field: "payload", .. })));
        let mut bad = buf.clone();
        bad[0] = 0x65;
        assert!(matches!(Packet::new_checked(&bad[..]), Err(WireError::Invalid { field: "version", .. })));
        let mut bad = buf.clone();
        bad[15] ^= 1;
        assert_eq!(
            Repr::parse(&Packet::new_checked(&bad[..]).unwrap()),
            Err(WireError::Checksum { what: "IPv4 header" })
        );
        let mut bad = buf.clone();
        bad[6] = 0x20; // MF
        let c = checksum::finish(checksum::sum(&{
            let mut h = bad[..20].to_vec();
            h[10] = 0;
            h[11] = 0;
            h
        }))
        .to_be_bytes();
        bad[10..12].copy_from_slice(&c);
        assert!(matches!(
            Repr::parse(&Packet::new_checked(&bad[..]).unwrap()),
            Err(WireError::Invalid { field: "flags and fragment offset", .. })
        ));
    }
}
