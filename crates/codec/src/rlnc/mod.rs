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
