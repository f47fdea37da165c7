//! The coded-symbol wire format, version 1.
//!
//! One packet carries one coded symbol: a 9-byte fixed header, the window
//! start of a sliding-window symbol, the coefficient encoding, then the
//! payload, which runs to the end of the packet. `docs/wire.md` gives the
//! layout byte by byte.
//!
//! As in smoltcp, [`Packet`] is a view of bytes and [`Repr`] the typed
//! symbol. [`Packet::new_checked`] validates every length, so no accessor can
//! panic after it; [`Repr::parse`] validates every value; [`Repr::emit`]
//! writes the one canonical encoding, so a packet that parses emits back to
//! the same bytes.
//!
//! ```
//! use ncmesh_codec::rlnc::{Decoder, Encoder, Received};
//! use ncmesh_codec::wire::{Packet, Repr};
//! use ncmesh_codec::Field;
//!
//! let field = Field::GF256;
//! let mut encoder = Encoder::new(field, 2, 4)?;
//! encoder.set_data(b"abcdefgh")?;
//! let mut decoder = Decoder::new(field, 2, 4)?;
//! let (mut coefficients, mut payload, mut buf) = (vec![0; 2], vec![0; 4], vec![0; 64]);
//! for seed in 1.. {
//!     let produced = encoder.produce(seed, &mut coefficients, &mut payload)?;
//!     let repr = Repr { field, generation: 7, symbols: 2, window_start: None, coding: produced.into(), payload: &payload };
//!     let len = repr.emit(&mut buf)?;
//!
//!     let received = Repr::parse(&Packet::new_checked(&buf[..len])?)?;
//!     received.coefficients_into(&mut coefficients)?;
//!     if decoder.consume(&coefficients, received.payload)? == Received::Complete {
//!         break;
//!     }
//! }
//! assert_eq!(decoder.data(), Some(b"abcdefgh".to_vec()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::coefficients;
use crate::rlnc::{Produced, MAX_SYMBOLS};
use ncmesh_gf::Field;

/// The version this module reads and writes, in byte 0.
pub const VERSION: u8 = 1;

/// The largest packet parsed or emitted: what a 16-bit length field (IP,
/// UDP) can describe, so a receiver can size its buffers once.
pub const MAX_PACKET_BYTES: usize = 65535;

/// The fixed header: version, flags, field degree, symbol count, generation.
pub const HEADER_LEN: usize = 9;

/// Byte offsets of the fields that every version-1 packet has.
mod layout {
    use std::ops::Range;

    pub const VERSION: usize = 0;
    pub const FLAGS: usize = 1;
    pub const DEGREE: usize = 2;
    pub const SYMBOLS: Range<usize> = 3..5;
    pub const GENERATION: Range<usize> = 5..9;
    /// Present when the sliding flag is set.
    pub const WINDOW_START: Range<usize> = 9..17;
}

/// The bits of the flags byte.
mod flag {
    /// Bits 0-1: the coefficient encoding.
    pub const CODING: u8 = 0b0000_0011;
    pub const SYSTEMATIC: u8 = 0;
    pub const SEEDED: u8 = 1;
    pub const DENSE: u8 = 2;
    /// Bit 2: a sliding-window symbol, with the window start after the fixed header.
    pub const SLIDING: u8 = 0b0000_0100;
    /// Bits 3-7 must be zero; giving them a meaning takes a new version.
    pub const RESERVED: u8 = 0b1111_1000;
}

/// Malformed input to [`Packet::new_checked`] and [`Repr::parse`], or a
/// [`Repr`] that cannot be put on the wire. Offsets count from byte 0 of the packet.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The packet ends inside a field.
    #[error("truncated: {field} needs {needed} byte{} at offset {offset}, {remaining} remain", if *needed == 1 { "" } else { "s" })]
    Truncated { field: &'static str, offset: usize, needed: usize, remaining: usize },
    /// The packet is larger than [`MAX_PACKET_BYTES`].
    #[error("packet of {len} bytes is too long: expected at most {MAX_PACKET_BYTES}")]
    TooLong { len: usize },
    /// Byte 0 names a version this module cannot read; nothing after it is looked at.
    #[error("unknown version {0} at offset 0, expected {VERSION}")]
    UnknownVersion(u8),
    /// The flags byte sets reserved bits (3-7), which must be zero in version 1.
    #[error("flags {flags:#04x} at offset 1 set reserved bits {:#04x}, expected them zero", flags & flag::RESERVED)]
    ReservedFlags { flags: u8 },
    /// The coefficient encoding in bits 0-1 of the flags is 3, which is reserved.
    #[error("coefficient encoding 3 at offset 1 is reserved, expected 0 (systematic), 1 (seeded) or 2 (dense)")]
    ReservedCoding,
    /// Byte 2 is not a field degree this crate supports.
    #[error("field degree {0} at offset 2 out of range 1..=8")]
    DegreeOutOfRange(u8),
    /// The symbol count is zero: a generation or window holds at least one symbol.
    #[error("symbol count 0 at offset 3, expected 1..={MAX_SYMBOLS}")]
    NoSymbols,
    /// A window's end, `start + symbols`, does not fit in a u64.
    #[error("window start {start} at offset 9 plus {symbols} symbols overflows u64")]
    WindowOverflow { start: u64, symbols: u16 },
    /// A systematic symbol's index is not below the symbol count.
    #[error("systematic index {index} at offset {offset} out of range: expected below the symbol count {symbols}")]
    IndexOutOfRange { index: u16, symbols: u16, offset: usize },
    /// The bits after the last dense coefficient are not zero; they must be,
    /// so that every coefficient vector has exactly one encoding.
    #[error("coefficient padding bits not zero in byte {byte:#04x} at offset {offset}")]
    CoefficientPadding { byte: u8, offset: usize },
    /// A [`Coding::Dense`] given to [`Repr::emit`] is not `ceil(symbols * q / 8)` bytes long.
    #[error("dense coefficient vector of {got} bytes, expected {expected} for {symbols} coefficients of {q} bits")]
    CoefficientLength { got: usize, expected: usize, symbols: u16, q: u32 },
    /// An element given to [`pack`] is not below 2^q.
    #[error("coefficient {value} at index {index} is not an element of {field:?}")]
    CoefficientOutOfField { index: usize, value: u8, field: Field },
    /// The payload cannot be a symbol of this field: for q in {3, 5, 6, 7}
    /// symbols are q bit planes, so their length is a multiple of q.
    #[error(
        "payload of {len} bytes at offset {offset} is not a multiple of {granularity}, as {field:?} symbols require"
    )]
    PayloadGranularity { len: usize, offset: usize, field: Field, granularity: usize },
    /// The buffer given to [`Repr::emit`] is shorter than [`Repr::buffer_len`].
    #[error("buffer of {available} bytes is too small: the packet needs {needed}")]
    BufferTooSmall { needed: usize, available: usize },
}

/// Bytes of `count` coefficients of `q` bits, bit-packed.
fn packed_len(q: u32, count: usize) -> usize {
    (count * q as usize).div_ceil(8)
}

/// Fails unless `len` bytes hold `needed` bytes at `offset`.
fn need(len: usize, field: &'static str, offset: usize, needed: usize) -> Result<(), WireError> {
    if len < offset + needed {
        return Err(WireError::Truncated { field, offset, needed, remaining: len.saturating_sub(offset) });
    }
    Ok(())
}

/// A read-only view of a coded-symbol packet.
///
/// Accessors may panic on a packet made with [`Packet::new_unchecked`] that
/// [`Packet::check_len`] would refuse; after [`Packet::new_checked`] none can.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps `buffer` without looking at it.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps `buffer` after [`Packet::check_len`].
    pub fn new_checked(buffer: T) -> Result<Packet<T>, WireError> {
        let packet = Packet::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks everything the layout depends on: the size bound, the version,
    /// the flags, the field degree, and that every field fits. Fields are
    /// checked in the order they appear, so an error names the first bad one.
    pub fn check_len(&self) -> Result<(), WireError> {
        let data = self.buffer.as_ref();
        let len = data.len();
        if len > MAX_PACKET_BYTES {
            return Err(WireError::TooLong { len });
        }
        need(len, "version", layout::VERSION, 1)?;
        if data[layout::VERSION] != VERSION {
            return Err(WireError::UnknownVersion(data[layout::VERSION]));
        }
        need(len, "flags", layout::FLAGS, 1)?;
        let flags = data[layout::FLAGS];
        if flags & flag::RESERVED != 0 {
            return Err(WireError::ReservedFlags { flags });
        }
        if flags & flag::CODING == flag::CODING {
            return Err(WireError::ReservedCoding);
        }
        need(len, "field degree", layout::DEGREE, 1)?;
        let degree = data[layout::DEGREE];
        if !(1..=8).contains(&degree) {
            return Err(WireError::DegreeOutOfRange(degree));
        }
        need(len, "symbol count", layout::SYMBOLS.start, layout::SYMBOLS.len())?;
        need(len, "generation", layout::GENERATION.start, layout::GENERATION.len())?;
        if flags & flag::SLIDING != 0 {
            need(len, "window start", layout::WINDOW_START.start, layout::WINDOW_START.len())?;
        }
        let name = match flags & flag::CODING {
            flag::SYSTEMATIC => "systematic index",
            flag::SEEDED => "coefficient seed",
            _ => "coefficient vector",
        };
        need(len, name, self.coding_offset(), self.coding_len())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn bytes<const N: usize>(&self, at: usize) -> [u8; N] {
        let mut out = [0; N];
        out.copy_from_slice(&self.buffer.as_ref()[at..at + N]);
        out
    }

    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[layout::VERSION]
    }

    /// The raw flags byte: coefficient encoding in bits 0-1, sliding window in bit 2.
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[layout::FLAGS]
    }

    /// The field degree q of GF(2^q).
    pub fn degree(&self) -> u8 {
        self.buffer.as_ref()[layout::DEGREE]
    }

    /// The number of symbols in the generation or window.
    pub fn symbols(&self) -> u16 {
        u16::from_be_bytes(self.bytes(layout::SYMBOLS.start))
    }

    pub fn generation(&self) -> u32 {
        u32::from_be_bytes(self.bytes(layout::GENERATION.start))
    }

    /// The first sequence number of a sliding-window symbol's window.
    pub fn window_start(&self) -> Option<u64> {
        (self.flags() & flag::SLIDING != 0).then(|| u64::from_be_bytes(self.bytes(layout::WINDOW_START.start)))
    }

    /// The offset of the coefficient encoding: the fixed header plus the window start, if any.
    fn coding_offset(&self) -> usize {
        if self.flags() & flag::SLIDING != 0 {
            layout::WINDOW_START.end
        } else {
            HEADER_LEN
        }
    }

    /// The bytes before the payload.
    pub fn header_len(&self) -> usize {
        self.coding_offset() + self.coding_len()
    }

    /// The length of the coefficient encoding: 2 bytes of systematic index,
    /// 8 bytes of seed, or `ceil(symbols * q / 8)` bytes of packed coefficients.
    pub fn coding_len(&self) -> usize {
        match self.flags() & flag::CODING {
            flag::SYSTEMATIC => 2,
            flag::SEEDED => 8,
            _ => packed_len(u32::from(self.degree()), usize::from(self.symbols())),
        }
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// The coefficient encoding's bytes.
    pub fn coding(&self) -> &'a [u8] {
        &self.buffer.as_ref()[self.coding_offset()..self.header_len()]
    }

    /// The payload: every byte after the coefficient encoding.
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[self.header_len()..]
    }
}

/// How a symbol's coefficient vector travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Coding<'a> {
    /// Source symbol `index`, uncoded: the unit vector. In a window, the
    /// index counts from the window start.
    Systematic { index: u16 },
    /// The vector [`coefficients::generate`] draws from `seed`: 8 bytes
    /// whatever the generation size.
    Seeded { seed: u64 },
    /// The vector itself, bit-packed as [`pack`] writes it: what a recoder
    /// sends, since its combinations have no seed.
    Dense(&'a [u8]),
}

/// What an encoder produced is what goes on the wire.
impl From<Produced> for Coding<'_> {
    fn from(produced: Produced) -> Self {
        match produced {
            // An encoder's indices are below its symbol count, so they fit;
            // were one not to, u16::MAX is never a valid index and emit refuses it.
            Produced::Uncoded(index) => Coding::Systematic { index: u16::try_from(index).unwrap_or(u16::MAX) },
            Produced::Coded(seed) => Coding::Seeded { seed },
        }
    }
}

/// A coded symbol, as [`Repr::parse`] reads it and [`Repr::emit`] writes it.
/// The version is implied: this is a version-1 symbol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repr<'a> {
    /// GF(2^q) of the coefficients and the payload.
    pub field: Field,
    /// The block code's generation, or the sliding window's stream: receivers
    /// keep one decoder per value.
    pub generation: u32,
    /// Symbols in the generation or window, `1..=MAX_SYMBOLS`: the length of the coefficient vector.
    pub symbols: u16,
    /// `Some(start)` for a sliding-window symbol over sequence numbers
    /// `start..start + symbols`; `None` for a block-code symbol.
    pub window_start: Option<u64>,
    pub coding: Coding<'a>,
    /// The coded payload; empty for a virtual symbol.
    pub payload: &'a [u8],
}

impl<'a> Repr<'a> {
    /// Reads a symbol, refusing any value version 1 does not allow.
    /// Safe on an unchecked packet: it runs [`Packet::check_len`] first.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&'a T>) -> Result<Repr<'a>, WireError> {
        packet.check_len()?;
        let field = Field::new(u32::from(packet.degree())).map_err(|_| WireError::DegreeOutOfRange(packet.degree()))?;
        let coding = packet.coding();
        let coding = match packet.flags() & flag::CODING {
            flag::SYSTEMATIC => Coding::Systematic { index: u16::from_be_bytes([coding[0], coding[1]]) },
            flag::SEEDED => {
                let mut seed = [0; 8];
                seed.copy_from_slice(coding);
                Coding::Seeded { seed: u64::from_be_bytes(seed) }
            }
            _ => Coding::Dense(coding),
        };
        let repr = Repr {
            field,
            generation: packet.generation(),
            symbols: packet.symbols(),
            window_start: packet.window_start(),
            coding,
            payload: packet.payload(),
        };
        repr.check()?;
        Ok(repr)
    }

    /// The bytes before the payload.
    pub fn header_len(&self) -> usize {
        let coding = match self.coding {
            Coding::Systematic { .. } => 2,
            Coding::Seeded { .. } => 8,
            Coding::Dense(_) => packed_len(self.field.degree(), usize::from(self.symbols)),
        };
        self.coding_offset() + coding
    }

    /// The length of the packet [`Repr::emit`] writes.
    pub fn buffer_len(&self) -> usize {
        self.header_len() + self.payload.len()
    }

    /// Writes the packet into the first [`Repr::buffer_len`] bytes of `buf`
    /// and returns its length. Refuses what [`Repr::parse`] would refuse.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        self.check()?;
        let len = self.buffer_len();
        let available = buf.len();
        let buf = buf.get_mut(..len).ok_or(WireError::BufferTooSmall { needed: len, available })?;
        let code = match self.coding {
            Coding::Systematic { .. } => flag::SYSTEMATIC,
            Coding::Seeded { .. } => flag::SEEDED,
            Coding::Dense(_) => flag::DENSE,
        };
        let sliding = if self.window_start.is_some() { flag::SLIDING } else { 0 };
        buf[layout::VERSION] = VERSION;
        buf[layout::FLAGS] = code | sliding;
        // Field degrees are 1..=8.
        buf[layout::DEGREE] = self.field.degree() as u8;
        buf[layout::SYMBOLS].copy_from_slice(&self.symbols.to_be_bytes());
        buf[layout::GENERATION].copy_from_slice(&self.generation.to_be_bytes());
        if let Some(start) = self.window_start {
            buf[layout::WINDOW_START].copy_from_slice(&start.to_be_bytes());
        }
        let (at, end) = (self.coding_offset(), self.header_len());
        match self.coding {
            Coding::Systematic { index } => buf[at..end].copy_from_slice(&index.to_be_bytes()),
            Coding::Seeded { seed } => buf[at..end].copy_from_slice(&seed.to_be_bytes()),
            Coding::Dense(packed) => buf[at..end].copy_from_slice(packed),
        }
        buf[end..].copy_from_slice(self.payload);
        Ok(len)
    }

    /// Expands the coefficient encoding into `out`, one element a byte, as
    /// [`crate::rlnc::Decoder::consume`] and
    /// [`crate::rlnc::sliding::SlidingDecoder::consume`] take it.
    pub fn coefficients_into(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        self.check()?;
        out.clear();
        out.resize(usize::from(self.symbols), 0);
        match self.coding {
            Coding::Systematic { index } => out[usize::from(index)] = 1,
            Coding::Seeded { seed } => coefficients::generate(self.field, seed, out),
            Coding::Dense(packed) => unpack(self.field, packed, out),
        }
        Ok(())
    }

    fn coding_offset(&self) -> usize {
        match self.window_start {
            Some(_) => layout::WINDOW_START.end,
            None => HEADER_LEN,
        }
    }

    /// The value checks shared by parse and emit, so that whatever emits parses.
    fn check(&self) -> Result<(), WireError> {
        let symbols = self.symbols;
        if symbols == 0 {
            return Err(WireError::NoSymbols);
        }
        if let Some(start) = self.window_start {
            if start.checked_add(u64::from(symbols)).is_none() {
                return Err(WireError::WindowOverflow { start, symbols });
            }
        }
        let offset = self.coding_offset();
        match self.coding {
            Coding::Systematic { index } if index >= symbols => {
                return Err(WireError::IndexOutOfRange { index, symbols, offset });
            }
            Coding::Dense(packed) => {
                let q = self.field.degree();
                let expected = packed_len(q, usize::from(symbols));
                if packed.len() != expected {
                    return Err(WireError::CoefficientLength { got: packed.len(), expected, symbols, q });
                }
                // Only the last byte can hold padding; `expected >= 1`.
                let used = (usize::from(symbols) * q as usize) % 8;
                let byte = packed[expected - 1];
                if used != 0 && byte >> used != 0 {
                    return Err(WireError::CoefficientPadding { byte, offset: offset + expected - 1 });
                }
            }
            _ => {}
        }
        let granularity = self.field.symbol_granularity();
        if !self.payload.len().is_multiple_of(granularity) {
            let (len, offset, field) = (self.payload.len(), self.header_len(), self.field);
            return Err(WireError::PayloadGranularity { len, offset, field, granularity });
        }
        let len = self.buffer_len();
        if len > MAX_PACKET_BYTES {
            return Err(WireError::TooLong { len });
        }
        Ok(())
    }
}

/// Bit-packs a coefficient vector (one element a byte) into `out` as
/// [`Coding::Dense`] carries it: element `i` is bits `i*q .. i*q + q` of the
/// packed bit string, whose bit `k` is bit `k % 8` (least significant first)
/// of byte `k / 8`; the bits after the last element are zero. For q in
/// {1, 2, 4, 8} this is the layout of a symbol (`ncmesh_gf`).
pub fn pack(field: Field, elements: &[u8], out: &mut Vec<u8>) -> Result<(), WireError> {
    let max = field.max_element();
    if let Some(index) = elements.iter().position(|&e| e > max) {
        return Err(WireError::CoefficientOutOfField { index, value: elements[index], field });
    }
    out.clear();
    let q = field.degree();
    if q == 8 {
        out.extend_from_slice(elements);
        return Ok(());
    }
    out.reserve(packed_len(q, elements.len()));
    // Fewer than 8 pending bits, plus at most 8 new ones, fit in 16.
    let (mut acc, mut bits) = (0u16, 0u32);
    for &e in elements {
        acc |= u16::from(e) << bits;
        bits += q;
        if bits >= 8 {
            out.push(acc as u8);
            acc >>= 8;
            bits -= 8;
        }
    }
    if bits > 0 {
        out.push(acc as u8);
    }
    Ok(())
}

/// The inverse of [`pack`] for `out.len()` elements. `packed` has been checked
/// to be `packed_len` bytes; a shorter one would read as zero-padded.
fn unpack(field: Field, packed: &[u8], out: &mut [u8]) {
    let q = field.degree();
    if q == 8 {
        out.iter_mut().zip(packed).for_each(|(o, &p)| *o = p);
        return;
    }
    let mask = u16::from(field.max_element());
    let mut bytes = packed.iter().copied();
    let (mut acc, mut bits) = (0u16, 0u32);
    for o in out {
        if bits < q {
            acc |= u16::from(bytes.next().unwrap_or(0)) << bits;
            bits += 8;
        }
        *o = (acc & mask) as u8;
        acc >>= q;
        bits -= q;
    }
}

/// The fuzz harnesses: the cargo-fuzz targets in `fuzz/` and the
/// stable-toolchain runner in this module's tests call these same functions.
/// Each reads arbitrary bytes; any error the codecs return is fine, and a
/// panic is a bug, either in the codecs or in an invariant asserted here.
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing {
    use super::{pack, Coding, Packet, Repr, MAX_PACKET_BYTES};
    use crate::lt;
    use crate::prng::SplitMix64;
    use crate::rlnc::sliding::{SlidingDecoder, SlidingEncoder};
    use crate::rlnc::{CodecError, Decoder, Encoder, Received, Recoder};
    use ncmesh_gf::Field;
    use std::collections::VecDeque;

    /// A fuzzer's bytes read as a stream of choices; past the end, reads give zeros.
    struct Input<'a>(&'a [u8]);

    impl<'a> Input<'a> {
        fn is_empty(&self) -> bool {
            self.0.is_empty()
        }

        fn byte(&mut self) -> u8 {
            let Some((&b, rest)) = self.0.split_first() else { return 0 };
            self.0 = rest;
            b
        }

        /// Up to `n` bytes: fewer when the input runs out.
        fn bytes(&mut self, n: usize) -> &'a [u8] {
            let (head, rest) = self.0.split_at(n.min(self.0.len()));
            self.0 = rest;
            head
        }

        fn u64(&mut self) -> u64 {
            let mut b = [0; 8];
            let s = self.bytes(8);
            b[..s.len()].copy_from_slice(s);
            u64::from_le_bytes(b)
        }
    }

    /// Parses bytes as a packet and checks what a receiver relies on: `parse`
    /// refuses exactly what `new_checked` refuses plus bad values, a parsed
    /// packet emits back to the same bytes and parses equal, prefixes cut
    /// inside the header are refused, and the coefficients expand.
    pub fn wire_parse(data: &[u8]) {
        let parsed = Repr::parse(&Packet::new_unchecked(data));
        let packet = match Packet::new_checked(data) {
            Ok(packet) => packet,
            Err(e) => {
                assert_eq!(parsed, Err(e), "parse refuses what new_checked refuses, with the same error");
                return;
            }
        };
        let (header, payload) = (packet.header_len(), packet.payload());
        assert_eq!(header + payload.len(), data.len());
        assert_eq!(packet.coding().len(), packet.coding_len());
        let _ = (packet.version(), packet.symbols(), packet.generation(), packet.window_start());
        for len in 0..header {
            assert!(Packet::new_checked(&data[..len]).is_err(), "a prefix of {len} bytes cuts the header");
        }
        let Ok(repr) = parsed else { return };
        assert_eq!(repr.buffer_len(), data.len());
        assert_eq!(repr.header_len(), header);
        assert_eq!(repr.payload, payload);
        let mut out = vec![0; data.len()];
        assert_eq!(repr.emit(&mut out), Ok(data.len()));
        assert_eq!(out, data, "a parsed packet emits back to its bytes");
        let again = Repr::parse(&Packet::new_checked(&out[..]).expect("emitted packets are well formed"));
        assert_eq!(again, Ok(repr));
        let mut coefficients = Vec::new();
        repr.coefficients_into(&mut coefficients).expect("a parsed symbol has coefficients");
        assert_eq!(coefficients.len(), usize::from(repr.symbols));
        assert!(coefficients.iter().all(|&c| c <= repr.field.max_element()));
        if let Coding::Dense(packed) = repr.coding {
            let mut repacked = Vec::new();
            pack(repr.field, &coefficients, &mut repacked).expect("unpacked coefficients are in the field");
            assert_eq!(repacked, packed, "pack inverts unpack");
        }
    }

    /// Feeds the block and sliding-window decoders. The first byte picks the
    /// field and one of four drivers: arbitrary symbols (raw coefficients,
    /// wire packets, systematic symbols, recoding into a second decoder)
    /// checked against a reference rank and, once decoded, against every
    /// innovative symbol; or a real transfer, source to relay to sink over the
    /// wire, whose decoded symbols must equal the source's.
    pub fn decoder_consume(data: &[u8]) {
        let mut input = Input(data);
        let mode = input.byte();
        let field = Field::new(1 + u32::from(mode % 8)).expect("degrees 1..=8 exist");
        let symbol_bytes = field.symbol_granularity() * usize::from(input.byte() % 4);
        match (mode >> 3) % 4 {
            0 => block_arbitrary(field, symbol_bytes, &mut input),
            1 => block_transfer(field, symbol_bytes, &mut input),
            2 => sliding_arbitrary(field, symbol_bytes, &mut input),
            _ => sliding_transfer(field, symbol_bytes, &mut input),
        }
    }

    /// A wire packet of up to 255 bytes from the input, if it parses.
    fn packet<'a>(input: &mut Input<'a>) -> Option<Repr<'a>> {
        let len = usize::from(input.byte());
        Repr::parse(&Packet::new_checked(input.bytes(len)).ok()?).ok()
    }

    /// Emits `repr` into `buf` and parses it back, as a receiver would see it.
    fn over_the_wire<'b>(repr: &Repr, buf: &'b mut Vec<u8>) -> Repr<'b> {
        buf.resize(repr.buffer_len(), 0);
        let len = repr.emit(buf).expect("the harness emits valid symbols");
        let received = Repr::parse(&Packet::new_checked(&buf[..len]).expect("emitted packets are well formed"));
        let received = received.expect("emitted packets parse");
        assert_eq!(&received, repr);
        received
    }

    /// The span of the vectors inserted so far, by plain elimination with
    /// scalar field operations: an oracle for the decoder's rank that shares
    /// neither its kernels nor its bookkeeping.
    struct Span {
        field: Field,
        /// Each row is 1 at its pivot and 0 at the pivots of the rows before it.
        rows: Vec<(usize, Vec<u8>)>,
    }

    impl Span {
        /// Adds `v` and returns whether it raised the rank.
        fn insert(&mut self, v: &[u8]) -> bool {
            let f = self.field;
            let mut v = v.to_vec();
            for (p, row) in &self.rows {
                let c = v[*p];
                v.iter_mut().zip(row).for_each(|(x, &r)| *x ^= f.mul(c, r));
            }
            let Some(p) = v.iter().position(|&c| c != 0) else { return false };
            let inverse = f.inv(v[p]);
            v.iter_mut().for_each(|x| *x = f.mul(inverse, *x));
            self.rows.push((p, v));
            true
        }
    }

    /// The decoder's structural invariants.
    fn check_block(decoder: &Decoder) {
        let g = decoder.symbols();
        assert!(decoder.rank() <= g);
        assert_eq!(decoder.is_complete(), decoder.rank() == g);
        assert_eq!((0..g).filter(|&i| decoder.is_symbol_seen(i)).count(), decoder.rank(), "one pivot per rank");
        assert!((0..g).all(|i| decoder.is_symbol_seen(i) || !decoder.is_symbol_decoded(i)));
        assert!(decoder.symbols_decoded() <= decoder.rank());
    }

    fn block_arbitrary(field: Field, symbol_bytes: usize, input: &mut Input) {
        let g = 1 + usize::from(input.byte() % 32);
        let mut decoder = Decoder::new(field, g, symbol_bytes).expect("a valid generation");
        // Fed with the decoder's recoded symbols.
        let mut sink = Decoder::new(field, g, symbol_bytes).expect("a valid generation");
        let mut span = Span { field, rows: Vec::new() };
        // The symbols that raised the rank, which decoded data must satisfy.
        let mut innovative: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut expanded = Vec::new();
        while !input.is_empty() {
            let before = decoder.rank();
            let (vector, payload, result) = match input.byte() % 4 {
                0 => {
                    let (c, p) = (input.bytes(g), input.bytes(symbol_bytes));
                    (c.to_vec(), p.to_vec(), decoder.consume(c, p))
                }
                1 => {
                    let Some(repr) = packet(input) else { continue };
                    repr.coefficients_into(&mut expanded).expect("a parsed symbol has coefficients");
                    (expanded.clone(), repr.payload.to_vec(), decoder.consume(&expanded, repr.payload))
                }
                2 => {
                    let index = usize::from(input.byte()) % (g + 1);
                    let p = input.bytes(symbol_bytes);
                    let mut unit = vec![0; g];
                    if let Some(u) = unit.get_mut(index) {
                        *u = 1;
                    }
                    (unit, p.to_vec(), decoder.consume_systematic(index, p))
                }
                _ => {
                    let mut rng = SplitMix64::new(input.u64());
                    let (mut c, mut p) = (vec![0; g], vec![0; symbol_bytes]);
                    match decoder.recode(&mut rng, &mut c, &mut p) {
                        Ok(()) => {
                            sink.consume(&c, &p).expect("a recoded symbol fits its generation");
                            assert!(sink.rank() <= decoder.rank(), "recoding cannot create rank");
                        }
                        Err(e) => {
                            assert!(before == 0 && e == CodecError::NothingToRecode, "recoding at rank {before}: {e}")
                        }
                    }
                    continue;
                }
            };
            let Ok(received) = result else {
                assert_eq!(decoder.rank(), before, "a refused symbol changes nothing");
                continue;
            };
            let raised = span.insert(&vector);
            assert_eq!(decoder.rank(), span.rows.len(), "rank agrees with the reference");
            match received {
                Received::Innovative => assert!(raised && decoder.rank() == before + 1 && decoder.rank() < g),
                Received::NotInnovative => assert!(!raised),
                Received::Complete => assert!(raised && decoder.rank() == g),
            }
            if raised {
                innovative.push((vector, payload));
            }
            check_block(&decoder);
        }
        check_block(&sink);
        for i in 0..g {
            if let Some(s) = sink.symbol(i).map(<[u8]>::to_vec) {
                assert_eq!(decoder.symbol(i), Some(&s[..]), "symbol {i} decoded from recoded symbols differs");
            }
        }
        if let Some(data) = decoder.data() {
            let mut encoder = Encoder::new(field, g, symbol_bytes).expect("a valid generation");
            encoder.set_data(&data).expect("the data fits its generation");
            let mut out = vec![0; symbol_bytes];
            for (c, p) in &innovative {
                encoder.encode(c, &mut out).expect("accepted coefficients are valid");
                assert_eq!(&out, p, "decoded data re-encodes to every innovative symbol");
            }
        }
    }

    fn block_transfer(field: Field, symbol_bytes: usize, input: &mut Input) {
        let g = 1 + usize::from(input.byte() % 64);
        let mut rng = SplitMix64::new(input.u64());
        let mut data = vec![0; g * symbol_bytes];
        rng.fill_bytes(&mut data);
        let mut encoder = Encoder::new(field, g, symbol_bytes).expect("a valid generation");
        encoder.set_data(&data).expect("the data fits");
        encoder.set_systematic(input.byte() & 1 != 0);
        let generation = rng.next_u64() as u32;
        let mut relay = Recoder::new(field, g, symbol_bytes).expect("a valid generation");
        let mut sink = Decoder::new(field, g, symbol_bytes).expect("a valid generation");
        let (mut c, mut p, mut packed, mut buf) = (vec![0; g], vec![0; symbol_bytes], Vec::new(), Vec::new());
        let symbols = u16::try_from(g).expect("g <= 64");
        while !input.is_empty() {
            let op = input.byte();
            let (to_sink, repr) = if op % 4 == 3 {
                if relay.rank() == 0 {
                    continue;
                }
                relay.recode(&mut rng, &mut c, &mut p).expect("the relay holds symbols");
                pack(field, &c, &mut packed).expect("recoded coefficients are in the field");
                (
                    true,
                    Repr {
                        field,
                        generation,
                        symbols,
                        window_start: None,
                        coding: Coding::Dense(&packed),
                        payload: &p,
                    },
                )
            } else {
                let produced = encoder.produce(rng.next_u64(), &mut c, &mut p).expect("buffers fit");
                let coding = produced.into();
                (op % 4 == 1, Repr { field, generation, symbols, window_start: None, coding, payload: &p })
            };
            if op.is_multiple_of(4) {
                continue; // lost
            }
            let received = over_the_wire(&repr, &mut buf);
            let mut coefficients = Vec::new();
            received.coefficients_into(&mut coefficients).expect("a parsed symbol has coefficients");
            assert_eq!(coefficients, c, "the coefficients survive the wire");
            let result = if to_sink {
                sink.consume(&coefficients, received.payload)
            } else {
                relay.consume(&coefficients, received.payload)
            };
            result.expect("a symbol of this generation");
            check_block(&sink);
        }
        // The whole generation first: a complete fresh decoder from g = 32
        // then decodes in place, which asking for one symbol would not.
        if let Some(decoded) = sink.data() {
            assert_eq!(decoded, data);
        }
        for i in 0..g {
            if let Some(s) = sink.symbol(i) {
                assert_eq!(Some(s), encoder.symbol(i), "symbol {i} decodes to the source's");
            }
        }
    }

    /// The decoder's sequence-number invariants, after draining what it delivers.
    fn drain_sliding(
        decoder: &mut SlidingDecoder,
        first_unseen: &mut u64,
        delivered: &mut Vec<Vec<u8>>,
        symbol_bytes: usize,
    ) {
        let now = decoder.first_unseen();
        assert!(now >= *first_unseen, "acknowledgements never go back");
        *first_unseen = now;
        assert!(!decoder.is_seen(now));
        assert!(now == 0 || decoder.is_seen(now - 1));
        while let Some((seq, payload)) = decoder.poll_decoded() {
            assert_eq!(seq, delivered.len() as u64, "delivery is in order, once each");
            assert_eq!(payload.len(), symbol_bytes);
            delivered.push(payload.to_vec());
        }
        assert!(decoder.next_delivery() <= now, "only seen packets are delivered");
    }

    fn sliding_arbitrary(field: Field, symbol_bytes: usize, input: &mut Input) {
        let mut decoder = SlidingDecoder::new(field, symbol_bytes).expect("a valid symbol size");
        let mut innovative: Vec<(u64, Vec<u8>, Vec<u8>)> = Vec::new();
        let mut delivered: Vec<Vec<u8>> = Vec::new();
        let (mut first_unseen, mut expanded) = (0u64, Vec::new());
        while !input.is_empty() {
            let op = input.byte();
            let (start, coefficients, payload) = match op % 4 {
                0 => {
                    // Near the front of the window, where elimination happens.
                    let start = first_unseen.saturating_sub(u64::from(op >> 5)) + u64::from(input.byte() % 8);
                    let len = usize::from(input.byte() % 12);
                    (start, input.bytes(len).to_vec(), input.bytes(symbol_bytes).to_vec())
                }
                1 => {
                    // Anywhere: spans past the decoder's bound must be refused.
                    let start = input.u64();
                    let len = usize::from(input.byte());
                    (start, input.bytes(len).to_vec(), input.bytes(symbol_bytes).to_vec())
                }
                2 => {
                    let Some(repr) = packet(input) else { continue };
                    let Some(start) = repr.window_start else { continue };
                    repr.coefficients_into(&mut expanded).expect("a parsed symbol has coefficients");
                    (start, expanded.clone(), repr.payload.to_vec())
                }
                _ => {
                    decoder.forget_below(u64::from(input.byte()));
                    continue;
                }
            };
            match decoder.consume(start, &coefficients, &payload) {
                Ok(Received::Innovative) => innovative.push((start, coefficients, payload)),
                Ok(Received::NotInnovative) => assert_eq!(decoder.first_unseen(), first_unseen),
                Ok(Received::Complete) => panic!("a sliding window is never complete"),
                Err(_) => assert_eq!(decoder.first_unseen(), first_unseen, "a refused symbol changes nothing"),
            }
            drain_sliding(&mut decoder, &mut first_unseen, &mut delivered, symbol_bytes);
        }
        // Delivered packets satisfy every innovative symbol over them alone.
        for (start, coefficients, payload) in innovative {
            let delivered_by = |j: usize| start.checked_add(j as u64).is_some_and(|seq| seq < delivered.len() as u64);
            let covered = coefficients.iter().enumerate().filter(|(_, &c)| c != 0).all(|(j, _)| delivered_by(j));
            if !covered {
                continue;
            }
            let mut sum = vec![0; symbol_bytes];
            let terms = coefficients.iter().enumerate().filter(|(_, &c)| c != 0);
            terms.for_each(|(j, &c)| field.symbol_axpy(c, &delivered[(start as usize) + j], &mut sum));
            assert_eq!(sum, payload, "delivered packets re-encode to the symbol at {start}");
        }
    }

    fn sliding_transfer(field: Field, symbol_bytes: usize, input: &mut Input) {
        let mut rng = SplitMix64::new(input.u64());
        let mut encoder = SlidingEncoder::new(field, symbol_bytes).expect("a valid symbol size");
        let mut decoder = SlidingDecoder::new(field, symbol_bytes).expect("a valid symbol size");
        let (mut sent, mut delivered, mut acks) = (Vec::new(), Vec::new(), VecDeque::new());
        let (mut first_unseen, mut c, mut p, mut buf) = (0u64, Vec::new(), vec![0; symbol_bytes], Vec::new());
        let generation = rng.next_u64() as u32;
        while !input.is_empty() {
            let op = input.byte();
            match op % 4 {
                0 if encoder.len() < 64 => {
                    let mut packet = vec![0; symbol_bytes];
                    rng.fill_bytes(&mut packet);
                    assert_eq!(encoder.push(&packet), Ok(sent.len() as u64));
                    sent.push(packet);
                }
                1 if !encoder.is_empty() => {
                    let seed = rng.next_u64();
                    let start = encoder.encode(seed, &mut c, &mut p).expect("buffers fit");
                    let symbols = u16::try_from(c.len()).expect("at most 64 packets in flight");
                    let coding = Coding::Seeded { seed };
                    let repr = Repr { field, generation, symbols, window_start: Some(start), coding, payload: &p };
                    if op & 4 != 0 {
                        continue; // lost
                    }
                    let received = over_the_wire(&repr, &mut buf);
                    let mut coefficients = Vec::new();
                    received.coefficients_into(&mut coefficients).expect("a parsed symbol has coefficients");
                    assert_eq!(coefficients, c, "the coefficients survive the wire");
                    let window = received.window_start.expect("a window symbol");
                    decoder.consume(window, &coefficients, received.payload).expect("a symbol of this stream");
                    decoder.forget_below(window);
                    drain_sliding(&mut decoder, &mut first_unseen, &mut delivered, symbol_bytes);
                    acks.push_back(first_unseen);
                }
                // Acknowledgements arrive late, or not at all.
                2 => {
                    if let Some(ack) = acks.pop_front() {
                        encoder.acknowledge(ack).expect("the receiver saw only packets pushed");
                    }
                }
                3 => {
                    acks.pop_front();
                }
                _ => {}
            }
        }
        assert_eq!(delivered, sent[..delivered.len()], "delivered packets are the sent ones, in order");
    }

    /// Feeds an LT decoder symbols that are either its encoder's (whose decoded
    /// sources must then be the encoder's) or arbitrary, with and without the
    /// fallback (inactivation decoding).
    pub fn lt_consume(data: &[u8]) {
        let mut input = Input(data);
        let k = 1 + usize::from(input.byte() % 64);
        let symbol_bytes = usize::from(input.byte() % 4);
        let mode = input.byte();
        let dist = if mode & 1 == 0 {
            lt::Distribution::ideal(k)
        } else {
            lt::Distribution::robust(k, lt::DEFAULT_C, lt::DEFAULT_DELTA)
        };
        let dist = dist.expect("a valid k");
        let seed = input.u64();
        let mut encoder = lt::Encoder::new(k, symbol_bytes, dist.clone(), seed).expect("a valid code");
        let mut source = vec![0; k * symbol_bytes];
        SplitMix64::new(input.u64()).fill_bytes(&mut source);
        encoder.set_symbols(&source).expect("the data fits");
        let mut decoder = lt::Decoder::new(k, symbol_bytes, dist, seed).expect("a valid code");
        decoder.set_fallback(mode & 2 != 0);
        let arbitrary = mode & 4 != 0;
        let mut payload = vec![0; symbol_bytes];
        while !input.is_empty() {
            let before = decoder.decoded_count();
            let op = input.byte();
            let esi = u32::from(input.byte()) | u32::from(op >> 6) << 8;
            if op % 8 == 7 {
                decoder.solve_stalled();
            } else if arbitrary {
                let len = if op & 8 == 0 { symbol_bytes } else { usize::from(op >> 4) % 6 };
                let _ = decoder.consume(esi, input.bytes(len));
            } else {
                encoder.encode(esi, &mut payload).expect("buffers fit");
                decoder.consume(esi, &payload).expect("a symbol of this code");
            }
            assert!(decoder.decoded_count() >= before, "decoded sources stay decoded");
            assert!(decoder.decoded_count() <= k);
            assert_eq!(decoder.decode_order().len(), decoder.decoded_count());
            assert_eq!(decoder.is_complete(), decoder.decoded_count() == k);
        }
        let mut order = decoder.decode_order().to_vec();
        order.sort_unstable();
        order.dedup();
        assert_eq!(order.len(), decoder.decoded_count(), "each source decodes once");
        assert!(order.iter().all(|&i| decoder.is_symbol_decoded(i as usize)));
        if !arbitrary {
            for i in 0..k {
                if let Some(s) = decoder.symbol(i) {
                    assert_eq!(
                        s,
                        &source[i * symbol_bytes..(i + 1) * symbol_bytes],
                        "source {i} decodes to the encoder's"
                    );
                }
            }
        }
    }

    /// Inputs worth mutating for the stable runner, which has no coverage
    /// feedback to find the valid packets and mode bytes by itself.
    pub fn seed_inputs(target: &str, rng: &mut SplitMix64) -> Vec<u8> {
        match target {
            "wire_parse" => random_packet(rng),
            "decoder_consume" => {
                let mut out = vec![rng.next_u64() as u8, rng.next_u64() as u8, rng.next_u64() as u8];
                for _ in 0..rng.below(40) {
                    out.push(rng.next_u64() as u8);
                    if rng.below(3) == 0 {
                        let packet = random_packet(rng);
                        if packet.len() <= 255 {
                            out.push(packet.len() as u8);
                            out.extend_from_slice(&packet);
                        }
                    }
                }
                out
            }
            _ => {
                let mut out = vec![0; rng.below(300) as usize];
                rng.fill_bytes(&mut out);
                out
            }
        }
    }

    /// A valid packet with a small random shape.
    fn random_packet(rng: &mut SplitMix64) -> Vec<u8> {
        let field = Field::new(1 + rng.below(8) as u32).expect("degrees 1..=8 exist");
        let largest = if rng.below(4) == 0 { 65535 } else { 40 };
        let symbols = 1 + rng.below(largest) as u16;
        let mut elements = vec![0; usize::from(symbols)];
        crate::coefficients::generate(field, rng.next_u64(), &mut elements);
        let mut packed = Vec::new();
        pack(field, &elements, &mut packed).expect("generated coefficients are in the field");
        let coding = match rng.below(3) {
            0 => Coding::Systematic { index: rng.below(u64::from(symbols)) as u16 },
            1 => Coding::Seeded { seed: rng.next_u64() },
            _ => Coding::Dense(&packed),
        };
        let window_start = (rng.below(2) == 0).then(|| rng.below(u64::MAX - 65535));
        let mut payload = vec![0; field.symbol_granularity() * rng.below(8) as usize];
        rng.fill_bytes(&mut payload);
        let generation = rng.next_u64() as u32;
        let repr = Repr { field, generation, symbols, window_start, coding, payload: &payload };
        let mut out = vec![0; repr.buffer_len().min(MAX_PACKET_BYTES)];
        match repr.emit(&mut out) {
            Ok(_) => out,
            Err(_) => vec![1],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fuzzing;
    use super::*;
    use crate::prng::SplitMix64;
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use std::time::{Duration, Instant};

    fn refused(bytes: &[u8]) -> String {
        Repr::parse(&Packet::new_unchecked(bytes)).expect_err("malformed").to_string()
    }

    #[test]
    fn errors_name_the_field_the_offset_and_the_expectation() {
        // Dense over GF(2^8), 32 symbols: 32 coefficient bytes from offset 9.
        let mut dense = vec![1, 2, 8, 0, 32, 0, 0, 0, 7];
        dense.extend_from_slice(&[5; 7]);
        assert_eq!(refused(&dense), "truncated: coefficient vector needs 32 bytes at offset 9, 7 remain");
        assert_eq!(refused(&[]), "truncated: version needs 1 byte at offset 0, 0 remain");
        assert_eq!(refused(&[3, 0]), "unknown version 3 at offset 0, expected 1");
        assert_eq!(refused(&[1, 0x21]), "flags 0x21 at offset 1 set reserved bits 0x20, expected them zero");
        assert_eq!(
            refused(&[1, 3]),
            "coefficient encoding 3 at offset 1 is reserved, expected 0 (systematic), 1 (seeded) or 2 (dense)"
        );
        assert_eq!(refused(&[1, 0, 9]), "field degree 9 at offset 2 out of range 1..=8");
        assert_eq!(refused(&[1, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0]), "symbol count 0 at offset 3, expected 1..=65535");
        assert_eq!(
            refused(&[1, 4, 8, 0, 2, 0, 0, 0, 0, 255, 255, 255, 255, 255, 255, 255, 254, 0, 0]),
            "window start 18446744073709551614 at offset 9 plus 2 symbols overflows u64"
        );
        assert_eq!(
            refused(&[1, 0, 8, 0, 2, 0, 0, 0, 0, 0, 2]),
            "systematic index 2 at offset 9 out of range: expected below the symbol count 2"
        );
        // Three GF(2^3) coefficients fill 9 bits: 7 bits of padding in byte 10.
        assert_eq!(
            refused(&[1, 2, 3, 0, 3, 0, 0, 0, 0, 0xff, 0x03]),
            "coefficient padding bits not zero in byte 0x03 at offset 10"
        );
        assert_eq!(
            refused(&[1, 2, 3, 0, 3, 0, 0, 0, 0, 0xff, 0x01, 0xaa]),
            "payload of 1 bytes at offset 11 is not a multiple of 3, as GF(2^3) symbols require"
        );
        assert_eq!(
            refused(&vec![1; MAX_PACKET_BYTES + 1]),
            "packet of 65536 bytes is too long: expected at most 65535"
        );
    }

    #[test]
    fn emit_refuses_what_parse_would_and_short_buffers() {
        let base = Repr {
            field: Field::GF16,
            generation: 1,
            symbols: 3,
            window_start: None,
            coding: Coding::Seeded { seed: 9 },
            payload: &[1, 2],
        };
        assert_eq!(base.emit(&mut [0; 18]), Err(WireError::BufferTooSmall { needed: 19, available: 18 }));
        let dense = Repr { coding: Coding::Dense(&[0x21]), ..base };
        assert_eq!(
            dense.emit(&mut [0; 64]),
            Err(WireError::CoefficientLength { got: 1, expected: 2, symbols: 3, q: 4 })
        );
        let padded = Repr { coding: Coding::Dense(&[0x21, 0x13]), ..base };
        assert_eq!(padded.emit(&mut [0; 64]), Err(WireError::CoefficientPadding { byte: 0x13, offset: 10 }));
        let systematic = Repr { coding: Coding::Systematic { index: 3 }, ..base };
        assert_eq!(systematic.emit(&mut [0; 64]), Err(WireError::IndexOutOfRange { index: 3, symbols: 3, offset: 9 }));
        let big = vec![0; MAX_PACKET_BYTES];
        assert_eq!(
            Repr { payload: &big, ..base }.emit(&mut []),
            Err(WireError::TooLong { len: MAX_PACKET_BYTES + 17 })
        );
        let mut out = Vec::new();
        assert_eq!(
            pack(Field::GF16, &[1, 16], &mut out),
            Err(WireError::CoefficientOutOfField { index: 1, value: 16, field: Field::GF16 })
        );
    }

    /// Random inputs: a quarter plain random bytes, the rest valid seeds
    /// mutated by bit flips, byte overwrites, truncation, insertion,
    /// deletion and duplication. Returns the number of inputs run.
    type Harness = fn(&[u8]);

    fn run(name: &str, target: Harness, seed: u64, until: impl Fn(u64) -> bool) -> u64 {
        let mut rng = SplitMix64::new(seed);
        let mut runs = 0;
        while !until(runs) {
            let mut input = if rng.below(4) == 0 {
                let longest = if rng.below(2) == 0 { 32 } else { 1024 };
                let mut bytes = vec![0; rng.below(longest) as usize];
                rng.fill_bytes(&mut bytes);
                bytes
            } else {
                fuzzing::seed_inputs(name, &mut rng)
            };
            for _ in 0..rng.below(5) {
                mutate(&mut rng, &mut input);
            }
            if catch_unwind(AssertUnwindSafe(|| target(&input))).is_err() {
                let hex: String = input.iter().map(|b| format!("{b:02x}")).collect();
                panic!("{name} failed after {runs} inputs (seed {seed}) on input {hex}");
            }
            runs += 1;
        }
        runs
    }

    fn mutate(rng: &mut SplitMix64, input: &mut Vec<u8>) {
        let len = input.len() as u64;
        let at = rng.below(len + 1) as usize;
        match rng.below(6) {
            0 if at < input.len() => input[at] ^= 1 << rng.below(8),
            1 if at < input.len() => input[at] = [0, 1, 2, 3, 7, 8, 9, 0x7f, 0x80, 0xff][rng.below(10) as usize],
            2 => input.truncate(at),
            3 => {
                let mut extra = vec![0; 1 + rng.below(8) as usize];
                rng.fill_bytes(&mut extra);
                input.splice(at..at, extra);
            }
            4 => {
                let end = (at + 1 + rng.below(8) as usize).min(input.len());
                input.drain(at.min(end)..end);
            }
            _ => {
                let end = (at + 1 + rng.below(16) as usize).min(input.len());
                let copy = input[at.min(end)..end].to_vec();
                let to = rng.below(len + 1) as usize;
                input.splice(to..to, copy);
            }
        }
    }

    const TARGETS: [(&str, Harness); 3] = [
        ("wire_parse", fuzzing::wire_parse),
        ("decoder_consume", fuzzing::decoder_consume),
        ("lt_consume", fuzzing::lt_consume),
    ];

    #[test]
    fn fuzz_harnesses_run_clean_on_a_sample() {
        // Under Miri, which interprets every byte operation, a few dozen each.
        let inputs = if cfg!(miri) { 40 } else { 3000 };
        for (name, target) in TARGETS {
            run(name, target, 1, |runs| runs == inputs);
        }
    }

    /// The stable-toolchain fuzzer: every target for `NCMESH_FUZZ_SECONDS`
    /// (default 600) each, or only `NCMESH_FUZZ_TARGET`; see `docs/wire.md`.
    #[test]
    #[ignore = "runs for minutes; see docs/wire.md"]
    fn stable_fuzz() {
        let seconds =
            std::env::var("NCMESH_FUZZ_SECONDS").map_or(600, |s| s.parse().expect("NCMESH_FUZZ_SECONDS is a number"));
        let only = std::env::var("NCMESH_FUZZ_TARGET").ok();
        let seed =
            std::env::var("NCMESH_FUZZ_SEED").map_or(0x5eed, |s| s.parse().expect("NCMESH_FUZZ_SEED is a number"));
        for (name, target) in TARGETS.into_iter().filter(|(name, _)| only.as_deref().is_none_or(|o| o == *name)) {
            let start = Instant::now();
            let deadline = start + Duration::from_secs(seconds);
            // Look at the clock every 1024 inputs.
            let runs = run(name, target, seed, |runs| runs % 1024 == 0 && Instant::now() >= deadline);
            println!("{name}: {runs} inputs in {:.0} s, seed {seed}: clean", start.elapsed().as_secs_f64());
        }
    }
}
