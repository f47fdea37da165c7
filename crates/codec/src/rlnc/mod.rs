//! Random linear network coding over GF(2^q).
//!
//! A *generation* of `symbols` source symbols of `symbol_bytes` bytes each is
//! coded into combinations `sum c_i * s_i`. Coefficient vectors hold one
//! element per byte. `symbol_bytes == 0` gives a virtual codec that tracks
//! coefficients only.

mod decoder;
mod encoder;
mod packing;
pub mod sliding;
mod symbols;

pub use decoder::{Decoder, Recoder};
pub use encoder::{Encoder, Produced};

use ncmesh_gf::Field;

/// The largest generation: coefficient indices travel as 16-bit numbers.
///
/// Symbol sizes have no bound of their own: what fits depends on the
/// machine, so a codec allocates its generation when it is built and
/// returns [`CodecError::OutOfMemory`] if the allocation fails, or
/// [`CodecError::GenerationTooLarge`] if its size overflows `usize`.
pub const MAX_SYMBOLS: usize = u16::MAX as usize;

/// What a decoder made of one coded symbol. These are normal outcomes, not errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Received {
    /// It raised the rank.
    Innovative,
    /// It was a combination of what the decoder already held.
    NotInnovative,
    /// It raised the rank to full: every symbol is now decoded.
    Complete,
}

/// Misuse of a codec, or input that cannot belong to its generation.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    /// A generation must hold between 1 and [`MAX_SYMBOLS`] symbols.
    #[error("generation size {0} is out of range: expected 1..={MAX_SYMBOLS} symbols")]
    InvalidSymbols(usize),
    /// Bit-sliced fields need symbols whose size is a multiple of q.
    #[error("symbol size {symbol_bytes} is not a multiple of {granularity}, as {field:?} requires")]
    InvalidSymbolBytes { field: Field, symbol_bytes: usize, granularity: usize },
    /// A coefficient vector must have one entry per symbol of the generation.
    #[error("coefficient vector has {got} entries, expected {expected}")]
    CoefficientLength { got: usize, expected: usize },
    /// A coefficient must be an element of the field: below 2^q.
    #[error("coefficient {value} at index {index} is not an element of {field:?}")]
    CoefficientOutOfField { index: usize, value: u8, field: Field },
    /// A payload must be exactly one symbol long.
    #[error("payload has {got} bytes, expected {expected}")]
    PayloadLength { got: usize, expected: usize },
    /// A symbol index must lie inside the generation (or window).
    #[error("symbol index {index} is out of range: expected below {limit}")]
    IndexOutOfRange { index: u64, limit: u64 },
    /// The data given to an encoder is larger than the generation.
    #[error("data of {got} bytes does not fit a generation of {capacity} bytes")]
    DataTooLarge { got: usize, capacity: usize },
    /// A recoder needs at least one received symbol to combine.
    #[error("nothing to recode: no symbol has been received")]
    NothingToRecode,
    /// A sliding-window encoder needs at least one packet in its window.
    #[error("nothing to encode: the window is empty")]
    EmptyWindow,
    /// An acknowledgement can reach at most one past the last packet pushed.
    #[error("acknowledgement of {seq} is past the end of the window: expected at most {end}, one past the last packet pushed")]
    AcknowledgementPastEnd { seq: u64, end: u64 },
    /// A generation's buffers must have a size that `usize` can hold.
    #[error("symbols = {symbols} of symbol_bytes = {symbol_bytes} overflow usize: expected a generation that fits in memory")]
    GenerationTooLarge { symbols: usize, symbol_bytes: usize },
    /// A codec allocates its buffers when it is built, and the machine refused.
    #[error(
        "out of memory: {bytes} bytes could not be allocated for symbols = {symbols} of symbol_bytes = {symbol_bytes}"
    )]
    OutOfMemory { bytes: usize, symbols: usize, symbol_bytes: usize },
}

/// Checks the shape of a generation shared by encoders and decoders.
fn check_generation(field: Field, symbols: usize, symbol_bytes: usize) -> Result<(), CodecError> {
    if symbols == 0 || symbols > MAX_SYMBOLS {
        return Err(CodecError::InvalidSymbols(symbols));
    }
    let granularity = field.symbol_granularity();
    if !symbol_bytes.is_multiple_of(granularity) {
        return Err(CodecError::InvalidSymbolBytes { field, symbol_bytes, granularity });
    }
    Ok(())
}

/// Checks that `coefficients` is a vector of `expected` field elements.
fn check_coefficients(field: Field, coefficients: &[u8], expected: usize) -> Result<(), CodecError> {
    if coefficients.len() != expected {
        return Err(CodecError::CoefficientLength { got: coefficients.len(), expected });
    }
    // Elements are the values up to 2^q - 1: the bits of the OR of all of
    // them say whether any is outside, in one pass that vectorizes.
    let max = field.max_element();
    if coefficients.iter().fold(0, |bits, &c| bits | c) & !max == 0 {
        return Ok(());
    }
    let index = coefficients.iter().position(|&c| c > max).expect("some coefficient has a bit above q");
    Err(CodecError::CoefficientOutOfField { index, value: coefficients[index], field })
}

fn check_payload(payload: &[u8], expected: usize) -> Result<(), CodecError> {
    if payload.len() != expected {
        return Err(CodecError::PayloadLength { got: payload.len(), expected });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generation_whose_size_overflows_usize_is_an_error() {
        for field in [Field::GF2, Field::GF256] {
            for (symbols, symbol_bytes) in [(4, usize::MAX), (4, usize::MAX - 63), (4, 1 << 62), (MAX_SYMBOLS, 1 << 49)]
            {
                let too_large = Some(CodecError::GenerationTooLarge { symbols, symbol_bytes });
                assert_eq!(Encoder::new(field, symbols, symbol_bytes).err(), too_large);
                assert_eq!(Decoder::new(field, symbols, symbol_bytes).err(), too_large);
                assert_eq!(Recoder::new(field, symbols, symbol_bytes).err(), too_large);
            }
        }
        let message = CodecError::GenerationTooLarge { symbols: 4, symbol_bytes: usize::MAX }.to_string();
        assert!(message.contains("symbols = 4 ") && message.contains(&format!("symbol_bytes = {}", usize::MAX)));
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri stops at an allocation past its memory instead of failing it")]
    fn a_generation_past_memory_is_an_error_not_an_abort() {
        // 2^62 bytes: no machine has that much address space to give.
        let (symbols, symbol_bytes) = (4, 1 << 60);
        let bytes = symbols * symbol_bytes + 63;
        let out_of_memory = CodecError::OutOfMemory { bytes, symbols, symbol_bytes };
        for field in [Field::GF2, Field::GF256] {
            assert_eq!(Encoder::new(field, symbols, symbol_bytes).err(), Some(out_of_memory.clone()));
            assert_eq!(Decoder::new(field, symbols, symbol_bytes).err(), Some(out_of_memory.clone()));
        }
        let message = out_of_memory.to_string();
        assert!(message.contains(&format!("{bytes} bytes")) && message.contains("symbols = 4 "), "{message}");
        // 2^42 bytes: more than most machines have. A decoder only reserves
        // its payloads' room, so where the allocator grants the address
        // space anyway (`vm.overcommit_memory = 1`) it is built untouched.
        let symbol_bytes = 1 << 40;
        match Decoder::new(Field::GF256, symbols, symbol_bytes) {
            Ok(decoder) => assert_eq!(decoder.symbol_bytes(), symbol_bytes),
            Err(e) => {
                assert_eq!(e, CodecError::OutOfMemory { bytes: symbols * symbol_bytes + 63, symbols, symbol_bytes })
            }
        }
    }
}
