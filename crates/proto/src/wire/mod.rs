//! Wire formats of the node stack: IPv4 and UDP here, TCP in `tcp/wire.rs`,
//! and each coding protocol's own messages beside its code.
//!
//! Every format follows the Packet/Repr split of smoltcp: a `Packet` is a
//! checked view of bytes whose accessors cannot panic once `new_checked`
//! has passed, a `Repr` is the typed value, `Repr::parse` validates values
//! and `Repr::emit` writes the one canonical encoding. Multi-byte integers
//! are big-endian, as everywhere in IP.

pub mod ipv4;
pub mod udp;

/// Malformed bytes, or a value that has no encoding. Offsets count from the
/// first byte of the message that failed to parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The bytes end before a field does.
    #[error("truncated: {field} needs {need} bytes at offset {offset}, {have} remain")]
    Truncated { field: &'static str, offset: usize, need: usize, have: usize },
    /// A field holds a value the format does not allow.
    #[error("{field} at offset {offset}: expected {expected}, found {found}")]
    Invalid { field: &'static str, offset: usize, expected: &'static str, found: u64 },
    /// The checksum does not match the bytes.
    #[error("{what}: checksum mismatch")]
    Checksum { what: &'static str },
    /// A message with a virtual payload has no bytes to emit: only real-payload runs emit.
    #[error("{what} has a virtual payload, which has no bytes")]
    Virtual { what: &'static str },
    /// No protocol is registered for this IP protocol number or link frame kind.
    #[error("no protocol registered for {kind}")]
    Unknown { kind: String },
    /// A coded symbol in the codec's wire format (`docs/wire.md`) is malformed.
    #[error("coded symbol: {0}")]
    Symbol(#[from] ncmesh_codec::wire::WireError),
}

// Readers for wire formats, public so that protocols outside this crate
// refuse short input with the same errors.

/// Reads `N` bytes at `at`, naming `field` if they are not there.
pub fn field<const N: usize>(bytes: &[u8], at: usize, field: &'static str) -> Result<[u8; N], WireError> {
    bytes.get(at..at + N).map(|b| b.try_into().expect("the slice has N bytes")).ok_or(WireError::Truncated {
        field,
        offset: at,
        need: N,
        have: bytes.len().saturating_sub(at),
    })
}

/// A big-endian `u16` at `at`.
pub fn u16_at(bytes: &[u8], at: usize, name: &'static str) -> Result<u16, WireError> {
    field::<2>(bytes, at, name).map(u16::from_be_bytes)
}

/// A big-endian `u32` at `at`.
pub fn u32_at(bytes: &[u8], at: usize, name: &'static str) -> Result<u32, WireError> {
    field::<4>(bytes, at, name).map(u32::from_be_bytes)
}

/// A big-endian `u64` at `at`.
pub fn u64_at(bytes: &[u8], at: usize, name: &'static str) -> Result<u64, WireError> {
    field::<8>(bytes, at, name).map(u64::from_be_bytes)
}

/// Checks that `bytes` holds at least `need` bytes from `at`.
pub fn need(bytes: &[u8], at: usize, need: usize, field: &'static str) -> Result<(), WireError> {
    if bytes.len() >= at && bytes.len() - at >= need {
        Ok(())
    } else {
        Err(WireError::Truncated { field, offset: at, need, have: bytes.len().saturating_sub(at) })
    }
}

/// The Internet checksum (RFC 1071): the ones' complement of the ones'
/// complement sum of 16-bit words.
pub mod checksum {
    use std::net::Ipv4Addr;

    /// The ones' complement sum of `data` as 16-bit big-endian words (an odd
    /// last byte is padded with zero), not yet folded.
    pub fn sum(data: &[u8]) -> u64 {
        let mut total = 0u64;
        let mut words = data.chunks_exact(8);
        for w in &mut words {
            let x = u64::from_be_bytes(w.try_into().expect("8 bytes"));
            total += (x >> 48) + ((x >> 32) & 0xFFFF) + ((x >> 16) & 0xFFFF) + (x & 0xFFFF);
        }
        let rest = words.remainder();
        let mut pairs = rest.chunks_exact(2);
        for p in &mut pairs {
            total += u16::from_be_bytes([p[0], p[1]]) as u64;
        }
        if let [last] = pairs.remainder() {
            total += (*last as u64) << 8;
        }
        total
    }

    /// Folds a sum to 16 bits and complements it: the value to store.
    pub fn finish(mut total: u64) -> u16 {
        while total >> 16 != 0 {
            total = (total & 0xFFFF) + (total >> 16);
        }
        !(total as u16)
    }

    /// The sum of the TCP/UDP pseudo-header (RFC 9293 section 3.1, RFC 768).
    pub fn pseudo_header(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, length: usize) -> u64 {
        sum(&src.octets()) + sum(&dst.octets()) + protocol as u64 + length as u64
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn rfc_1071_example() {
            // RFC 1071 section 3: the words 0001 f203 f4f5 f6f7 sum to 0xddf2.
            let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
            assert_eq!(finish(sum(&data)), !0xddf2);
            // Any split into words gives the same sum, odd tails padded with zero.
            assert_eq!(sum(&data[..3]), 0x0001 + 0xf200);
            let long: Vec<u8> = (0..1501u32).map(|i| (i * 7 + 3) as u8).collect();
            let slow: u64 = long.chunks(2).map(|c| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u64).sum();
            assert_eq!(sum(&long), slow);
        }

        #[test]
        fn a_checksummed_buffer_sums_to_zero() {
            let mut data: Vec<u8> = (0..40u8).collect();
            data.extend([0, 0]);
            let c = finish(sum(&data));
            let n = data.len();
            data[n - 2..].copy_from_slice(&c.to_be_bytes());
            assert_eq!(finish(sum(&data)), 0);
        }
    }
}
