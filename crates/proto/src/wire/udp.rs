//! UDP (RFC 768): the 8-byte header and a datagram's data.

use super::{checksum, need, u16_at, WireError};
use crate::data::Data;
use std::net::Ipv4Addr;

pub const HEADER_LEN: usize = 8;

/// The IP protocol number.
pub const PROTOCOL: u8 = 17;

/// A UDP datagram: ports and data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Datagram {
    pub src_port: u16,
    pub dst_port: u16,
    pub data: Data,
}

impl Datagram {
    pub fn new(src_port: u16, dst_port: u16, data: Data) -> Datagram {
        Datagram { src_port, dst_port, data }
    }

    pub fn wire_len(&self) -> usize {
        HEADER_LEN + self.data.len()
    }

    /// Writes header and data into `buf[..wire_len()]`, with the checksum
    /// over the pseudo-header of `src` and `dst`.
    pub fn emit(&self, src: Ipv4Addr, dst: Ipv4Addr, buf: &mut [u8]) -> Result<(), WireError> {
        let len = self.wire_len();
        if len > u16::MAX as usize {
            return Err(WireError::Invalid {
                field: "length",
                offset: 4,
                expected: "at most 65535",
                found: len as u64,
            });
        }
        need(buf, 0, len, "datagram")?;
        let data = self.data.bytes().ok_or(WireError::Virtual { what: "UDP datagram" })?;
        buf[0..2].copy_from_slice(&self.src_port.to_be_bytes());
        buf[2..4].copy_from_slice(&self.dst_port.to_be_bytes());
        buf[4..6].copy_from_slice(&(len as u16).to_be_bytes());
        buf[6..8].fill(0);
        buf[HEADER_LEN..len].copy_from_slice(data);
        let c = checksum::finish(checksum::pseudo_header(src, dst, PROTOCOL, len) + checksum::sum(&buf[..len]));
        // RFC 768: a computed zero is sent as all ones; zero means "no checksum".
        let c = if c == 0 { 0xFFFF } else { c };
        buf[6..8].copy_from_slice(&c.to_be_bytes());
        Ok(())
    }

    /// Reads a datagram from `bytes` (exactly the IP payload); checks the
    /// checksum against the pseudo-header when `verify` is set.
    pub fn parse(bytes: &[u8], src: Ipv4Addr, dst: Ipv4Addr, verify: bool) -> Result<Datagram, WireError> {
        need(bytes, 0, HEADER_LEN, "header")?;
        let len = u16_at(bytes, 4, "length")? as usize;
        if len < HEADER_LEN || len > bytes.len() {
            return Err(WireError::Invalid {
                field: "length",
                offset: 4,
                expected: "between 8 and the IP payload length",
                found: len as u64,
            });
        }
        let stored = u16_at(bytes, 6, "checksum")?;
        if verify
            && stored != 0
            && checksum::finish(checksum::pseudo_header(src, dst, PROTOCOL, len) + checksum::sum(&bytes[..len])) != 0
        {
            return Err(WireError::Checksum { what: "UDP datagram" });
        }
        Ok(Datagram {
            src_port: u16_at(bytes, 0, "source port")?,
            dst_port: u16_at(bytes, 2, "destination port")?,
            data: Data::Real(bytes[HEADER_LEN..len].to_vec()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_checks_its_checksum() {
        let (a, b) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        let d = Datagram::new(1000, 5001, Data::Real(b"hello".to_vec()));
        let mut buf = vec![0; d.wire_len()];
        d.emit(a, b, &mut buf).unwrap();
        assert_eq!(&buf[..6], &[0x03, 0xE8, 0x13, 0x89, 0, 13]);
        assert_eq!(Datagram::parse(&buf, a, b, true).unwrap(), d);
        buf[9] ^= 0x40;
        assert_eq!(Datagram::parse(&buf, a, b, true), Err(WireError::Checksum { what: "UDP datagram" }));
        assert!(Datagram::parse(&buf, a, b, false).is_ok(), "a router does not check");
        assert!(matches!(Datagram::parse(&buf[..7], a, b, false), Err(WireError::Truncated { .. })));
        let virtual_ = Datagram { data: Data::Virtual { len: 5, offset: 0 }, ..d };
        assert_eq!(virtual_.emit(a, b, &mut buf), Err(WireError::Virtual { what: "UDP datagram" }));
    }
}
