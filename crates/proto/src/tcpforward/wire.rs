//! TCP-Forward on the wire: coded symbols and the sink's acknowledgements,
//! one IP protocol number with a type byte. Seed 004 gives no format; this
//! one carries what each side needs to rebuild the other's view.
//!
//! Common to both (8 bytes): version (1), type (1: coded, 2: ack), source
//! port (2), destination port (2), the ports of the TCP flow in its data
//! direction for a coded symbol and in its ACK direction for an ack, and a
//! checksum (2): the Internet checksum of the whole message, symbol
//! included, with these two bytes zero. Seed 004 ran over UDP, whose
//! checksum this stands in for: without it, a symbol damaged past the link
//! layer would poison its window's decoder, and a damaged ack would
//! acknowledge segments that were never decoded.
//!
//! Coded symbol (34 bytes, then the symbol): window length and flags (2;
//! bit 15: sent by a retransmission round; bits 11-14 zero; bits 0-10 the
//! window length `k`, 1..=[`MAX_WINDOW`]), encoding symbol id (4), window start (8:
//! the stream index of the window's first segment), acknowledged below (8:
//! every segment below it is acknowledged to the sender; at most the
//! window start), timestamp (4: the sender's clock in microseconds, as
//! TCP's TSval). The symbol is the XOR of the segments the code `(k,
//! code_seed(start, k))` lists for the ESI, each coded as its length (2),
//! its TCP header and data, then zeros up to the symbol size.
//!
//! Ack (40 bytes): decoded (8: the segment whose
//! decoding sent it), next (8: every segment below is decoded), mask (8:
//! bit `i` set when segment `next + 1 + i` is decoded), window (4: the
//! receiver's window in bytes), echo (4: the timestamp of the symbol whose
//! arrival decoded the segment, as TCP's TSecr).
//!
//! [`Packet`] is a checked view of the bytes and [`Repr`] the typed
//! message, as in smoltcp: nothing read through a `Packet` can panic once
//! `new_checked` has passed.

use crate::message_boilerplate;
use crate::packet::{Kind, Message};
use crate::tcp::{self, Segment};
use crate::wire::{checksum, need, u32_at, u64_at, WireError};
use ncmesh_codec::prng::SplitMix64;

/// The IP protocol number: one of those IANA leaves unassigned (143-252),
/// as a laboratory protocol takes. Seed 004's implementation ran over UDP,
/// which a deployment across the Internet would do too.
pub const PROTOCOL: u8 = 150;
/// The message kind of both messages.
pub const KIND: Kind = Kind::Ip(PROTOCOL);

const VERSION: u8 = 1;
const CODED: u8 = 1;
const ACK: u8 = 2;
/// The bit of a coded symbol's window length field that flags a retransmission.
const RETRANSMISSION: u16 = 1 << 15;
/// The bits of that field that hold the window length.
const WINDOW_LEN: u16 = 0x07FF;
/// Where the checksum is, in both messages.
const CHECKSUM: std::ops::Range<usize> = 6..8;

/// Bytes of a coded symbol's header.
pub const CODED_HEADER_LEN: usize = 34;
/// Bytes of an ack.
pub const ACK_LEN: usize = 40;
/// The longest window a symbol may combine.
pub const MAX_WINDOW: usize = 1024;

/// The seed of the code over the `k` segments from `start`: the first
/// output of SplitMix64 started from `start` XOR `k` rotated right by 16 bits.
pub fn code_seed(start: u64, k: u16) -> u64 {
    SplitMix64::new(start ^ (k as u64).rotate_right(16)).next_u64()
}

/// A coded payload: the XOR of window members, or in virtual runs the window's segments.
pub type Symbol = crate::data::Symbol<Segment>;

/// A coded symbol of one window.
#[derive(Clone, Debug)]
pub struct Coded {
    pub header: Header,
    pub symbol: Symbol,
}

/// The sink's acknowledgement of a decoded segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ack {
    pub src_port: u16,
    pub dst_port: u16,
    pub decoded: u64,
    pub next: u64,
    pub mask: u64,
    pub window: u32,
    pub echo: u32,
}

impl Ack {
    /// Whether it says segment `index` is decoded.
    pub fn covers(&self, index: u64) -> bool {
        index < self.next
            || index == self.decoded
            || index.checked_sub(self.next + 1).is_some_and(|bit| bit < 64 && self.mask >> bit & 1 == 1)
    }
}

/// Which message a packet holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Type {
    Coded,
    Ack,
}

/// A checked view of a TCP-Forward message.
#[derive(Clone, Copy, Debug)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
    kind: Type,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Checks the version, the type and that every field is there.
    pub fn new_checked(buffer: T) -> Result<Packet<T>, WireError> {
        let bytes = buffer.as_ref();
        need(bytes, 0, 2, "version and type")?;
        if bytes[0] != VERSION {
            return Err(WireError::Invalid { field: "version", offset: 0, expected: "1", found: bytes[0] as u64 });
        }
        let kind = match bytes[1] {
            CODED => {
                need(bytes, 0, CODED_HEADER_LEN, "coded symbol header")?;
                Type::Coded
            }
            ACK => {
                need(bytes, 0, ACK_LEN, "ack")?;
                Type::Ack
            }
            other => {
                return Err(WireError::Invalid {
                    field: "type",
                    offset: 1,
                    expected: "1 (coded) or 2 (ack)",
                    found: other as u64,
                })
            }
        };
        Ok(Packet { buffer, kind })
    }

    fn bytes(&self) -> &[u8] {
        self.buffer.as_ref()
    }
    fn u16(&self, at: usize) -> u16 {
        u16::from_be_bytes([self.bytes()[at], self.bytes()[at + 1]])
    }
    fn u32(&self, at: usize) -> u32 {
        u32_at(self.bytes(), at, "").expect("checked by new_checked")
    }
    fn u64(&self, at: usize) -> u64 {
        u64_at(self.bytes(), at, "").expect("checked by new_checked")
    }

    pub fn kind(&self) -> Type {
        self.kind
    }
    pub fn src_port(&self) -> u16 {
        self.u16(2)
    }
    pub fn dst_port(&self) -> u16 {
        self.u16(4)
    }
    pub fn checksum(&self) -> u16 {
        self.u16(CHECKSUM.start)
    }
    /// The message's bytes: an ack's first [`ACK_LEN`], or the whole symbol.
    fn message(&self) -> &[u8] {
        match self.kind {
            Type::Coded => self.bytes(),
            Type::Ack => &self.bytes()[..ACK_LEN],
        }
    }
    /// Whether the checksum matches the message's bytes.
    pub fn verify_checksum(&self) -> bool {
        checksum::finish(checksum::sum(self.message())) == 0
    }
    // Coded symbols.
    pub fn retransmission(&self) -> bool {
        self.u16(8) & RETRANSMISSION != 0
    }
    pub fn window_len(&self) -> u16 {
        self.u16(8) & WINDOW_LEN
    }
    pub fn esi(&self) -> u32 {
        self.u32(10)
    }
    pub fn window_start(&self) -> u64 {
        self.u64(14)
    }
    pub fn acked_below(&self) -> u64 {
        self.u64(22)
    }
    pub fn timestamp(&self) -> u32 {
        self.u32(30)
    }
    pub fn payload(&self) -> &[u8] {
        &self.bytes()[CODED_HEADER_LEN..]
    }
    // Acks.
    pub fn decoded(&self) -> u64 {
        self.u64(8)
    }
    pub fn next(&self) -> u64 {
        self.u64(16)
    }
    pub fn mask(&self) -> u64 {
        self.u64(24)
    }
    pub fn window(&self) -> u32 {
        self.u32(32)
    }
    pub fn echo(&self) -> u32 {
        self.u32(36)
    }
}

/// A TCP-Forward message, typed; a coded symbol borrows its payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Repr<'a> {
    Coded { header: Header, payload: &'a [u8] },
    Ack(Ack),
}

/// A coded symbol's fields before its payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub src_port: u16,
    pub dst_port: u16,
    /// Sent by a retransmission round (eq. 4), outside the credits.
    pub retransmission: bool,
    /// Segments in the window.
    pub k: u16,
    pub esi: u32,
    pub start: u64,
    pub acked_below: u64,
    pub timestamp: u32,
}

impl<'a> Repr<'a> {
    /// Checks every value.
    pub fn parse(packet: &Packet<&'a [u8]>) -> Result<Repr<'a>, WireError> {
        let bytes: &'a [u8] = packet.buffer;
        if !packet.verify_checksum() {
            return Err(WireError::Checksum { what: "TCP-Forward message" });
        }
        match packet.kind() {
            Type::Coded => {
                let field = packet.u16(8);
                if field & !(RETRANSMISSION | WINDOW_LEN) != 0 {
                    return Err(WireError::Invalid {
                        field: "window length and flags",
                        offset: 8,
                        expected: "bits 11-14 zero",
                        found: field as u64,
                    });
                }
                let k = packet.window_len();
                if k == 0 || k as usize > MAX_WINDOW {
                    return Err(WireError::Invalid {
                        field: "window length",
                        offset: 8,
                        expected: "1 to 1024 segments",
                        found: k as u64,
                    });
                }
                let start = packet.window_start();
                if start.checked_add(k as u64).is_none() {
                    return Err(WireError::Invalid {
                        field: "window start",
                        offset: 14,
                        expected: "a window whose end fits in 64 bits",
                        found: start,
                    });
                }
                if packet.acked_below() > start {
                    return Err(WireError::Invalid {
                        field: "acknowledged below",
                        offset: 22,
                        expected: "at most the window start",
                        found: packet.acked_below(),
                    });
                }
                Ok(Repr::Coded {
                    header: Header {
                        src_port: packet.src_port(),
                        dst_port: packet.dst_port(),
                        retransmission: packet.retransmission(),
                        k,
                        esi: packet.esi(),
                        start,
                        acked_below: packet.acked_below(),
                        timestamp: packet.timestamp(),
                    },
                    payload: &bytes[CODED_HEADER_LEN..],
                })
            }
            Type::Ack => Ok(Repr::Ack(Ack {
                src_port: packet.src_port(),
                dst_port: packet.dst_port(),
                decoded: packet.decoded(),
                next: packet.next(),
                mask: packet.mask(),
                window: packet.window(),
                echo: packet.echo(),
            })),
        }
    }

    /// Bytes of its encoding.
    pub fn buffer_len(&self) -> usize {
        match self {
            Repr::Coded { payload, .. } => CODED_HEADER_LEN + payload.len(),
            Repr::Ack(_) => ACK_LEN,
        }
    }

    /// Writes exactly `buffer_len()` bytes.
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), WireError> {
        need(buf, 0, self.buffer_len(), "message")?;
        let buf = &mut buf[..self.buffer_len()];
        buf.fill(0);
        buf[0] = VERSION;
        match self {
            Repr::Coded { header: h, payload } => {
                if h.k == 0 || h.k as usize > MAX_WINDOW || h.acked_below > h.start {
                    return Err(WireError::Invalid {
                        field: "window length",
                        offset: 8,
                        expected: "1 to 1024 segments, acknowledged below the start",
                        found: h.k as u64,
                    });
                }
                buf[1] = CODED;
                buf[2..4].copy_from_slice(&h.src_port.to_be_bytes());
                buf[4..6].copy_from_slice(&h.dst_port.to_be_bytes());
                let flags = if h.retransmission { RETRANSMISSION } else { 0 };
                buf[8..10].copy_from_slice(&(h.k | flags).to_be_bytes());
                buf[10..14].copy_from_slice(&h.esi.to_be_bytes());
                buf[14..22].copy_from_slice(&h.start.to_be_bytes());
                buf[22..30].copy_from_slice(&h.acked_below.to_be_bytes());
                buf[30..34].copy_from_slice(&h.timestamp.to_be_bytes());
                buf[CODED_HEADER_LEN..].copy_from_slice(payload);
            }
            Repr::Ack(a) => {
                buf[1] = ACK;
                buf[2..4].copy_from_slice(&a.src_port.to_be_bytes());
                buf[4..6].copy_from_slice(&a.dst_port.to_be_bytes());
                buf[8..16].copy_from_slice(&a.decoded.to_be_bytes());
                buf[16..24].copy_from_slice(&a.next.to_be_bytes());
                buf[24..32].copy_from_slice(&a.mask.to_be_bytes());
                buf[32..36].copy_from_slice(&a.window.to_be_bytes());
                buf[36..40].copy_from_slice(&a.echo.to_be_bytes());
            }
        }
        let sum = checksum::finish(checksum::sum(buf));
        buf[CHECKSUM].copy_from_slice(&sum.to_be_bytes());
        Ok(())
    }
}

/// Reads either message, for the registry.
pub fn parse(bytes: &[u8]) -> Result<Box<dyn Message>, WireError> {
    let packet = Packet::new_checked(bytes)?;
    Ok(match Repr::parse(&packet)? {
        Repr::Coded { header, payload } => Box::new(Coded { header, symbol: Symbol::Real(payload.to_vec()) }),
        Repr::Ack(ack) => Box::new(ack),
    })
}

impl Message for Coded {
    fn kind(&self) -> Kind {
        KIND
    }
    fn wire_len(&self) -> usize {
        CODED_HEADER_LEN + self.symbol.len()
    }
    fn emit(&self, buf: &mut [u8]) -> Result<(), WireError> {
        let Symbol::Real(payload) = &self.symbol else {
            return Err(WireError::Virtual { what: "TCP-Forward symbol" });
        };
        Repr::Coded { header: self.header, payload }.emit(buf)
    }
    fn flow(&self) -> Option<(u8, u16, u16)> {
        Some((tcp::PROTOCOL, self.header.src_port, self.header.dst_port))
    }
    message_boilerplate!();
}

impl Message for Ack {
    fn kind(&self) -> Kind {
        KIND
    }
    fn wire_len(&self) -> usize {
        ACK_LEN
    }
    fn emit(&self, buf: &mut [u8]) -> Result<(), WireError> {
        Repr::Ack(*self).emit(buf)
    }
    fn flow(&self) -> Option<(u8, u16, u16)> {
        Some((tcp::PROTOCOL, self.src_port, self.dst_port))
    }
    message_boilerplate!();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn coded() -> Coded {
        let header = Header {
            src_port: 10_001,
            dst_port: 5001,
            retransmission: true,
            k: 16,
            esi: 0xDEAD_BEEF,
            start: 1 << 40,
            acked_below: (1 << 40) - 3,
            timestamp: 123_456,
        };
        Coded { header, symbol: Symbol::Real(vec![7; 33]) }
    }

    fn bytes(m: &dyn Message) -> Vec<u8> {
        let mut buf = vec![0; m.wire_len()];
        m.emit(&mut buf).unwrap();
        buf
    }

    #[test]
    fn both_messages_round_trip_through_their_bytes() {
        let c = coded();
        let buf = bytes(&c);
        assert_eq!(buf.len(), CODED_HEADER_LEN + 33);
        assert_eq!(&buf[..6], &[1, 1, 0x27, 0x11, 0x13, 0x89]);
        assert_eq!(&buf[8..10], &[0x80, 16], "the retransmission flag and k = 16");
        assert_eq!(checksum::finish(checksum::sum(&buf)), 0, "the checksum covers the whole message");
        let back = parse(&buf).unwrap();
        let back = back.downcast_ref::<Coded>().unwrap();
        assert_eq!((back.header, back.symbol.bytes()), (c.header, c.symbol.bytes()));
        assert_eq!(bytes(back), buf, "one encoding per value");

        let a = Ack { src_port: 5001, dst_port: 10_001, decoded: 77, next: 70, mask: 0b101, window: 100_000, echo: 9 };
        let buf = bytes(&a);
        assert_eq!(buf.len(), ACK_LEN);
        assert_eq!(parse(&buf).unwrap().downcast_ref::<Ack>(), Some(&a));
        let covered: Vec<u64> = (60..80).filter(|&i| a.covers(i)).collect();
        assert_eq!(covered, [60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 71, 73, 77]);
    }

    /// Writes the checksum of `b` over what it was.
    fn seal(b: &mut [u8]) {
        b[CHECKSUM].fill(0);
        let sum = checksum::finish(checksum::sum(b));
        b[CHECKSUM].copy_from_slice(&sum.to_be_bytes());
    }

    #[test]
    fn any_changed_byte_is_refused_by_the_checksum() {
        let ack =
            Ack { src_port: 5001, dst_port: 10_001, decoded: 77, next: 70, mask: 0b101, window: 100_000, echo: 9 };
        for good in [bytes(&coded()), bytes(&ack)] {
            for at in 0..good.len() {
                for flip in [0x01, 0x80, 0xFF] {
                    let mut b = good.clone();
                    b[at] ^= flip;
                    assert!(parse(&b).is_err(), "byte {at} ^ {flip:#x} was accepted");
                }
            }
            let mut b = good.clone();
            b[CHECKSUM.start] ^= 1;
            assert_eq!(parse(&b).err(), Some(WireError::Checksum { what: "TCP-Forward message" }));
        }
    }

    #[test]
    fn malformed_bytes_are_refused_by_field() {
        let good = bytes(&coded());
        // Each field's check, behind a checksum that matches.
        let refuse = |mutate: &dyn Fn(&mut Vec<u8>), field: &str| {
            let mut b = good.clone();
            mutate(&mut b);
            if b.len() >= CHECKSUM.end {
                seal(&mut b);
            }
            match parse(&b) {
                Err(WireError::Invalid { field: f, .. }) | Err(WireError::Truncated { field: f, .. }) => {
                    assert_eq!(f, field)
                }
                other => panic!("expected {field} refused, got {other:?}"),
            }
        };
        refuse(&|b| b[0] = 2, "version");
        refuse(&|b| b[1] = 3, "type");
        refuse(&|b| b[8] |= 0x40, "window length and flags");
        refuse(&|b| b[8..10].copy_from_slice(&0u16.to_be_bytes()), "window length");
        refuse(&|b| b[8..10].copy_from_slice(&0x8000u16.to_be_bytes()), "window length");
        refuse(&|b| b[8..10].copy_from_slice(&1025u16.to_be_bytes()), "window length");
        refuse(&|b| b[14..22].copy_from_slice(&u64::MAX.to_be_bytes()), "window start");
        refuse(&|b| b[22..30].copy_from_slice(&u64::MAX.to_be_bytes()), "acknowledged below");
        refuse(&|b| b.truncate(33), "coded symbol header");
        refuse(&|b| b.truncate(1), "version and type");
        let ack = bytes(&Ack { src_port: 1, dst_port: 2, decoded: 0, next: 0, mask: 0, window: 0, echo: 0 });
        assert!(matches!(parse(&ack[..39]), Err(WireError::Truncated { field: "ack", .. })));
        let virtual_ = Coded { symbol: Symbol::Virtual { len: 10, members: std::sync::Arc::from(vec![]) }, ..coded() };
        assert_eq!(virtual_.wire_len(), CODED_HEADER_LEN + 10);
        assert_eq!(virtual_.emit(&mut [0; 40]), Err(WireError::Virtual { what: "TCP-Forward symbol" }));
    }

    #[test]
    fn code_seeds_differ_by_start_and_length() {
        let seeds: std::collections::BTreeSet<u64> =
            (0..100u64).flat_map(|s| (1..20u16).map(move |k| code_seed(s, k))).collect();
        assert_eq!(seeds.len(), 100 * 19);
        assert_eq!(code_seed(5, 3), SplitMix64::new(5 ^ (3u64 << 48)).next_u64());
    }
}
