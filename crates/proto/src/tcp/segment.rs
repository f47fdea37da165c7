//! What TCP puts in a packet: a data segment, or a pure ACK.

use super::config::BASE_HEADER_BYTES;
use crate::time::Instant;

/// At most this many SACK blocks ride in one ACK (RFC 2018: four without
/// timestamps, three with them; we keep room for four).
pub const MAX_SACK_BLOCKS: usize = 4;

/// One SACK block: the half-open byte range `[start, end)` held out of order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackBlock {
    pub start: u64,
    pub end: u64,
}

/// A TCP segment. Sequence numbers are 64-bit byte offsets from the start of
/// the stream, so they never wrap inside a run; a wire encoding would carry
/// their low 32 bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// First payload byte (data segments); the sender's `snd_nxt` on pure ACKs.
    pub seq: u64,
    /// Payload bytes; zero for a pure ACK.
    pub len: u32,
    /// Cumulative acknowledgement: the next byte expected (ACKs only).
    pub ack: u64,
    /// Advertised receive window, bytes (ACKs only).
    pub window: u32,
    /// SACK blocks, most recent first; `sack_len` of them are valid.
    pub sack: [SackBlock; MAX_SACK_BLOCKS],
    pub sack_len: u8,
    /// The timestamp option (RFC 7323), when it is on: our clock and the echoed one.
    pub timestamp: Option<Timestamps>,
    /// When the sender first transmitted these payload bytes. Measurement
    /// metadata for end-to-end delay, not a header field: a wire encoding drops it.
    pub first_sent: Instant,
}

/// TSval and TSecr, in the sender's nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timestamps {
    pub value: Instant,
    pub echo: Instant,
}

impl Segment {
    /// A data segment carrying `[seq, seq + len)`.
    pub fn data(seq: u64, len: u32, first_sent: Instant) -> Segment {
        Segment {
            seq,
            len,
            ack: 0,
            window: 0,
            sack: [SackBlock::default(); MAX_SACK_BLOCKS],
            sack_len: 0,
            timestamp: None,
            first_sent,
        }
    }

    /// A pure ACK.
    pub fn ack(ack: u64, window: u32) -> Segment {
        Segment { ack, window, ..Segment::data(0, 0, Instant::ZERO) }
    }

    pub fn is_ack(&self) -> bool {
        self.len == 0
    }

    pub fn end(&self) -> u64 {
        self.seq + self.len as u64
    }

    pub fn sack_blocks(&self) -> &[SackBlock] {
        &self.sack[..self.sack_len as usize]
    }

    /// Bytes on the wire: IPv4 and TCP headers, options padded to 4 bytes, payload.
    pub fn wire_bytes(&self) -> u32 {
        let mut options = 0;
        if self.timestamp.is_some() {
            options += 10;
        }
        if self.sack_len > 0 {
            options += 2 + 8 * self.sack_len as u32;
        }
        BASE_HEADER_BYTES + options.div_ceil(4) * 4 + self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_sizes_match_the_option_layouts() {
        assert_eq!(Segment::data(0, 1000, Instant::ZERO).wire_bytes(), 1040);
        let mut ack = Segment::ack(1, 0);
        ack.timestamp = Some(Timestamps { value: Instant(1), echo: Instant(0) });
        assert_eq!(ack.wire_bytes(), 52); // 40 + 12, as every Linux ACK
        ack.sack_len = 3;
        assert_eq!(ack.wire_bytes(), 40 + 36); // 10 + 26 option bytes
    }
}
