//! The TCP segment on the wire (RFC 9293 section 3.1): the 20-byte header,
//! the options this TCP uses, and the data.
//!
//! Options are laid out as Linux lays them out: timestamps as NOP, NOP,
//! TS (12 bytes), SACK as NOP, NOP, SACK (4 + 8 per block); on a SYN, MSS,
//! then SACK-permitted and TS together (or NOP, NOP, SACK-permitted), then
//! NOP and window scale. A parser skips any option it does not know, by its
//! length.

use crate::data::Data;
use crate::wire::{checksum, need, u16_at, u32_at, WireError};
use std::net::Ipv4Addr;

/// The IP protocol number.
pub const PROTOCOL: u8 = 6;

/// Bytes of the header without options.
pub const HEADER_LEN: usize = 20;

/// At most this many SACK blocks ride in one segment (RFC 2018: four
/// without timestamps, three beside them).
pub const MAX_SACK_BLOCKS: usize = 4;

/// Bytes of IPv4 and TCP headers without options.
pub const BASE_HEADER_BYTES: u32 = 40;

/// The control bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags(pub u8);

impl Flags {
    pub const FIN: Flags = Flags(0x01);
    pub const SYN: Flags = Flags(0x02);
    pub const RST: Flags = Flags(0x04);
    pub const PSH: Flags = Flags(0x08);
    pub const ACK: Flags = Flags(0x10);

    pub fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for Flags {
    type Output = Flags;
    fn bitor(self, other: Flags) -> Flags {
        Flags(self.0 | other.0)
    }
}

/// One SACK block: the sequence numbers `[start, end)` held out of order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackBlock {
    pub start: u32,
    pub end: u32,
}

/// TSval and TSecr (RFC 7323), in microseconds of the sender's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timestamps {
    pub value: u32,
    pub echo: u32,
}

/// A TCP segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub src_port: u16,
    pub dst_port: u16,
    /// Sequence number of the first data byte.
    pub seq: u32,
    /// The next sequence number expected from the peer, when `ACK` is set.
    pub ack: u32,
    pub flags: Flags,
    /// The receive window, right-shifted by the window scale of its sender.
    pub window: u16,
    pub timestamp: Option<Timestamps>,
    /// SACK blocks, most recent first; `sack_len` of them are valid.
    pub sack: [SackBlock; MAX_SACK_BLOCKS],
    pub sack_len: u8,
    /// The options a SYN announces (RFC 9293 3.7.1, RFC 2018, RFC 7323).
    pub syn_options: SynOptions,
    pub data: Data,
}

/// What a SYN or SYN-ACK offers: the largest segment its sender takes, the
/// shift it applies to the windows it advertises, and whether it can SACK.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SynOptions {
    pub mss: Option<u16>,
    pub window_scale: Option<u8>,
    pub sack_permitted: bool,
}

impl Segment {
    /// A segment from `src_port` to `dst_port` with nothing set.
    pub fn new(src_port: u16, dst_port: u16) -> Segment {
        Segment {
            src_port,
            dst_port,
            seq: 0,
            ack: 0,
            flags: Flags::default(),
            window: 0,
            timestamp: None,
            sack: [SackBlock::default(); MAX_SACK_BLOCKS],
            sack_len: 0,
            syn_options: SynOptions::default(),
            data: Data::EMPTY,
        }
    }

    /// Data bytes.
    pub fn len(&self) -> u32 {
        self.data.len() as u32
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The sequence number after the data.
    pub fn end(&self) -> u32 {
        self.seq.wrapping_add(self.len())
    }

    pub fn sack_blocks(&self) -> &[SackBlock] {
        &self.sack[..self.sack_len as usize]
    }

    fn options_len(&self) -> usize {
        let o = self.syn_options;
        let mut n = 4 * (o.mss.is_some() as usize + o.window_scale.is_some() as usize);
        if self.timestamp.is_some() {
            n += 12;
        } else if o.sack_permitted {
            n += 4;
        }
        if self.sack_len > 0 {
            n += 4 + 8 * self.sack_len as usize;
        }
        n
    }

    /// Header and options.
    pub fn header_len(&self) -> usize {
        HEADER_LEN + self.options_len()
    }

    /// Bytes of the segment: header, options and data.
    pub fn wire_len(&self) -> usize {
        self.header_len() + self.data.len()
    }

    /// Writes the segment into `buf[..wire_len()]`, with the checksum over
    /// the pseudo-header of `src` and `dst`.
    pub fn emit(&self, src: Ipv4Addr, dst: Ipv4Addr, buf: &mut [u8]) -> Result<(), WireError> {
        let header = self.header_len();
        if header > 60 {
            return Err(WireError::Invalid {
                field: "data offset",
                offset: 12,
                expected: "options of at most 40 bytes",
                found: (header - HEADER_LEN) as u64,
            });
        }
        let len = self.wire_len();
        need(buf, 0, len, "segment")?;
        let data = self.data.bytes().ok_or(WireError::Virtual { what: "TCP segment" })?;
        let b = &mut buf[..len];
        b[0..2].copy_from_slice(&self.src_port.to_be_bytes());
        b[2..4].copy_from_slice(&self.dst_port.to_be_bytes());
        b[4..8].copy_from_slice(&self.seq.to_be_bytes());
        b[8..12].copy_from_slice(&self.ack.to_be_bytes());
        b[12] = ((header / 4) as u8) << 4;
        b[13] = self.flags.0;
        b[14..16].copy_from_slice(&self.window.to_be_bytes());
        b[16..20].fill(0);
        let mut at = HEADER_LEN;
        let o = self.syn_options;
        if let Some(mss) = o.mss {
            b[at..at + 4].copy_from_slice(&[2, 4, (mss >> 8) as u8, mss as u8]);
            at += 4;
        }
        if o.sack_permitted && self.timestamp.is_none() {
            b[at..at + 4].copy_from_slice(&[1, 1, 4, 2]);
            at += 4;
        }
        if let Some(ts) = self.timestamp {
            let lead = if o.sack_permitted { [4, 2] } else { [1, 1] };
            b[at..at + 4].copy_from_slice(&[lead[0], lead[1], 8, 10]);
            b[at + 4..at + 8].copy_from_slice(&ts.value.to_be_bytes());
            b[at + 8..at + 12].copy_from_slice(&ts.echo.to_be_bytes());
            at += 12;
        }
        if self.sack_len > 0 {
            b[at..at + 4].copy_from_slice(&[1, 1, 5, 2 + 8 * self.sack_len]);
            at += 4;
            for block in self.sack_blocks() {
                b[at..at + 4].copy_from_slice(&block.start.to_be_bytes());
                b[at + 4..at + 8].copy_from_slice(&block.end.to_be_bytes());
                at += 8;
            }
        }
        if let Some(shift) = o.window_scale {
            b[at..at + 4].copy_from_slice(&[1, 3, 3, shift]);
        }
        b[header..].copy_from_slice(data);
        let c = checksum::finish(checksum::pseudo_header(src, dst, PROTOCOL, len) + checksum::sum(b));
        b[16..18].copy_from_slice(&c.to_be_bytes());
        Ok(())
    }

    /// Reads a segment from `bytes` (exactly the IP payload); checks the
    /// checksum against the pseudo-header when `verify` is set.
    pub fn parse(bytes: &[u8], src: Ipv4Addr, dst: Ipv4Addr, verify: bool) -> Result<Segment, WireError> {
        need(bytes, 0, HEADER_LEN, "header")?;
        let header = (bytes[12] >> 4) as usize * 4;
        if header < HEADER_LEN {
            return Err(WireError::Invalid {
                field: "data offset",
                offset: 12,
                expected: "at least 5 words",
                found: (header / 4) as u64,
            });
        }
        need(bytes, 0, header, "options")?;
        if verify
            && checksum::finish(checksum::pseudo_header(src, dst, PROTOCOL, bytes.len()) + checksum::sum(bytes)) != 0
        {
            return Err(WireError::Checksum { what: "TCP segment" });
        }
        let mut seg = Segment::new(u16_at(bytes, 0, "source port")?, u16_at(bytes, 2, "destination port")?);
        seg.seq = u32_at(bytes, 4, "sequence number")?;
        seg.ack = u32_at(bytes, 8, "acknowledgement number")?;
        seg.flags = Flags(bytes[13]);
        seg.window = u16_at(bytes, 14, "window")?;
        parse_options(&bytes[HEADER_LEN..header], &mut seg)?;
        seg.data = Data::Real(bytes[header..].to_vec());
        Ok(seg)
    }
}

fn parse_options(options: &[u8], seg: &mut Segment) -> Result<(), WireError> {
    let mut at = 0;
    while at < options.len() {
        let offset = HEADER_LEN + at;
        match options[at] {
            0 => break,
            1 => at += 1,
            kind => {
                let Some(&len) = options.get(at + 1) else {
                    return Err(WireError::Truncated { field: "option length", offset: offset + 1, need: 1, have: 0 });
                };
                let len = len as usize;
                if len < 2 || at + len > options.len() {
                    return Err(WireError::Invalid {
                        field: "option length",
                        offset: offset + 1,
                        expected: "2 or more, within the header",
                        found: len as u64,
                    });
                }
                let body = &options[at + 2..at + len];
                let expect = |ok: bool, expected: &'static str| {
                    if ok {
                        Ok(())
                    } else {
                        Err(WireError::Invalid {
                            field: "option length",
                            offset: offset + 1,
                            expected,
                            found: len as u64,
                        })
                    }
                };
                match kind {
                    2 => {
                        expect(len == 4, "4 for MSS")?;
                        seg.syn_options.mss = Some(u16::from_be_bytes([body[0], body[1]]));
                    }
                    3 => {
                        expect(len == 3, "3 for window scale")?;
                        seg.syn_options.window_scale = Some(body[0]);
                    }
                    4 => {
                        expect(len == 2, "2 for SACK-permitted")?;
                        seg.syn_options.sack_permitted = true;
                    }
                    5 => {
                        expect(
                            (len - 2).is_multiple_of(8) && (1..=MAX_SACK_BLOCKS).contains(&((len - 2) / 8)),
                            "2 + 8 per block, 1 to 4 blocks, for SACK",
                        )?;
                        // A later SACK option replaces an earlier one whole, leaving no stale blocks.
                        seg.sack = [SackBlock::default(); MAX_SACK_BLOCKS];
                        for (i, b) in body.chunks_exact(8).enumerate() {
                            seg.sack[i] = SackBlock {
                                start: u32::from_be_bytes(b[0..4].try_into().expect("4 bytes")),
                                end: u32::from_be_bytes(b[4..8].try_into().expect("4 bytes")),
                            };
                        }
                        seg.sack_len = ((len - 2) / 8) as u8;
                    }
                    8 => {
                        expect(len == 10, "10 for timestamps")?;
                        seg.timestamp = Some(Timestamps {
                            value: u32::from_be_bytes(body[0..4].try_into().expect("4 bytes")),
                            echo: u32::from_be_bytes(body[4..8].try_into().expect("4 bytes")),
                        });
                    }
                    _ => {}
                }
                at += len;
            }
        }
    }
    Ok(())
}

// A segment as a coded symbol: what coded transports (TCP/NC, TCP-Forward)
// combine, so that a sink rebuilds the very segment TCP sent.

/// Bytes of a coded symbol for `tcp`'s segments: a segment's length (2),
/// its TCP header with the options `tcp` uses, and a full segment's data.
pub fn coded_symbol_bytes(tcp: &super::TcpConfig) -> usize {
    2 + HEADER_LEN + if tcp.timestamps { 12 } else { 0 } + tcp.mss as usize
}

/// Writes `segment` as a coded symbol of `out.len()` bytes: its length, its
/// bytes, zeros. False if it does not fit.
pub fn encode_segment(segment: &Segment, src: Ipv4Addr, dst: Ipv4Addr, out: &mut [u8]) -> bool {
    let len = segment.wire_len();
    if 2 + len > out.len() {
        return false;
    }
    out.fill(0);
    out[..2].copy_from_slice(&(len as u16).to_be_bytes());
    segment.emit(src, dst, &mut out[2..2 + len]).is_ok()
}

/// Reads the segment a decoded symbol holds, checking its checksum.
pub fn decode_segment(symbol: &[u8], src: Ipv4Addr, dst: Ipv4Addr) -> Result<Segment, WireError> {
    let len = u16_at(symbol, 0, "segment length")? as usize;
    need(symbol, 2, len, "segment")?;
    Segment::parse(&symbol[2..2 + len], src, dst, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
    const B: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

    fn emit(seg: &Segment) -> Vec<u8> {
        let mut buf = vec![0; seg.wire_len()];
        seg.emit(A, B, &mut buf).unwrap();
        buf
    }

    #[test]
    fn header_sizes_match_the_option_layouts() {
        let mut s = Segment::new(1, 2);
        s.data = Data::Virtual { len: 1000, offset: 0 };
        assert_eq!(s.wire_len() + 20, 1040);
        let mut ack = Segment::new(1, 2);
        ack.timestamp = Some(Timestamps { value: 1, echo: 0 });
        assert_eq!(ack.wire_len() + 20, 52, "every Linux ACK");
        ack.sack_len = 3;
        assert_eq!(ack.wire_len(), 60, "three blocks beside timestamps fill the 40 option bytes");
        ack.timestamp = None;
        ack.sack_len = 4;
        assert_eq!(ack.wire_len(), 56);
    }

    #[test]
    fn round_trips_every_field() {
        let mut s = Segment::new(10_000, 5001);
        s.seq = 0xFFFF_FF00;
        s.ack = 7;
        s.flags = Flags::ACK | Flags::PSH;
        s.window = 50_000;
        s.timestamp = Some(Timestamps { value: 123_456, echo: 99 });
        s.sack[0] = SackBlock { start: 5, end: 9 };
        s.sack[1] = SackBlock { start: 20, end: 30 };
        s.sack_len = 2;
        s.data = Data::Real(b"some data".to_vec());
        let bytes = emit(&s);
        assert_eq!(bytes[12] >> 4, 13, "20 header, 12 timestamp and 20 SACK bytes: 13 words");
        assert_eq!(Segment::parse(&bytes, A, B, true).unwrap(), s);
    }

    #[test]
    fn syn_options_round_trip_in_the_linux_layout() {
        let mut s = Segment::new(10_000, 5001);
        s.flags = Flags::SYN;
        s.syn_options = SynOptions { mss: Some(1460), window_scale: Some(7), sack_permitted: true };
        s.timestamp = Some(Timestamps { value: 5, echo: 0 });
        s.data = Data::Real(vec![]);
        let bytes = emit(&s);
        // MSS 4, SACK-permitted + TS 12, NOP + window scale 4: 40 bytes, as Linux's SYN.
        assert_eq!(bytes.len(), 40);
        assert_eq!(&bytes[20..26], &[2, 4, 0x05, 0xB4, 4, 2]);
        assert_eq!(&bytes[36..40], &[1, 3, 3, 7]);
        assert_eq!(Segment::parse(&bytes, A, B, true).unwrap(), s);
        s.timestamp = None;
        let bytes = emit(&s);
        assert_eq!(bytes.len(), 32, "MSS, NOP NOP SACK-permitted, NOP window scale");
        assert_eq!(Segment::parse(&bytes, A, B, true).unwrap(), s);
    }

    #[test]
    fn the_checksum_covers_the_pseudo_header_and_the_data() {
        let mut s = Segment::new(1, 2);
        s.data = Data::Real(vec![0xAB; 1001]);
        let mut bytes = emit(&s);
        assert!(Segment::parse(&bytes, A, B, true).is_ok());
        assert!(Segment::parse(&bytes, B, A, true).is_ok(), "swapping the addresses keeps the sum");
        assert_eq!(
            Segment::parse(&bytes, A, Ipv4Addr::new(10, 0, 0, 3), true),
            Err(WireError::Checksum { what: "TCP segment" })
        );
        bytes[500] ^= 1;
        assert_eq!(Segment::parse(&bytes, A, B, true), Err(WireError::Checksum { what: "TCP segment" }));
        assert!(Segment::parse(&bytes, A, B, false).is_ok());
    }

    #[test]
    fn malformed_options_are_refused_not_panicked_on() {
        let mut s = Segment::new(1, 2);
        s.timestamp = Some(Timestamps { value: 1, echo: 2 });
        let good = emit(&s);
        let mut bad = good.clone();
        bad[HEADER_LEN + 3] = 11; // TS length runs past the options
        assert!(matches!(Segment::parse(&bad, A, B, false), Err(WireError::Invalid { field: "option length", .. })));
        let mut bad = good.clone();
        bad[12] = 0x40; // data offset 4 words
        assert!(matches!(Segment::parse(&bad, A, B, false), Err(WireError::Invalid { field: "data offset", .. })));
        assert!(matches!(Segment::parse(&good[..25], A, B, false), Err(WireError::Truncated { .. })));
        let mut unknown = good.clone();
        unknown[HEADER_LEN + 2] = 30; // an option it does not know, of the right length, is skipped
        let parsed = Segment::parse(&unknown, A, B, false).unwrap();
        assert_eq!(parsed.timestamp, None);
    }

    #[test]
    fn a_repeated_sack_option_replaces_the_earlier_one_whole() {
        // SACK with two blocks, then SACK with one, as the packet_parse fuzz
        // target's round trip caught it: the parsed segment must hold only
        // what its bytes say, so that it emits and parses back equal.
        let mut bytes = vec![0u8; 48];
        bytes[12] = 12 << 4;
        bytes[13] = Flags::ACK.0;
        bytes[20..22].copy_from_slice(&[5, 18]);
        for (i, v) in [1u32, 2, 3, 4].iter().enumerate() {
            bytes[22 + 4 * i..26 + 4 * i].copy_from_slice(&v.to_be_bytes());
        }
        bytes[38..40].copy_from_slice(&[5, 10]);
        bytes[40..44].copy_from_slice(&5u32.to_be_bytes());
        bytes[44..48].copy_from_slice(&6u32.to_be_bytes());
        let parsed = Segment::parse(&bytes, A, B, false).unwrap();
        assert_eq!(parsed.sack_blocks(), &[SackBlock { start: 5, end: 6 }]);
        assert_eq!(Segment::parse(&emit(&parsed), A, B, true).unwrap(), parsed);
    }

    #[test]
    fn a_segment_survives_its_symbol() {
        let (a, b) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 9));
        let mut s = Segment::new(10_000, 5001);
        s.seq = 99;
        s.flags = Flags::ACK;
        s.data = Data::Real(vec![1, 2, 3]);
        let mut symbol = vec![0; 2 + 20 + 1000];
        assert!(encode_segment(&s, a, b, &mut symbol));
        assert_eq!(decode_segment(&symbol, a, b).unwrap(), s);
        symbol[2 + 22] ^= 1; // the last data byte
        assert_eq!(decode_segment(&symbol, a, b), Err(WireError::Checksum { what: "TCP segment" }));
        assert!(!encode_segment(&s, a, b, &mut [0; 24]), "too long for the symbol");
    }
}
