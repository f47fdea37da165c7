use super::symbols::Symbols;
use super::{check_coefficients, check_generation, check_payload, CodecError};
use crate::coefficients;
use ncmesh_gf::{Field, SlicedRows};

/// Holds one generation of source symbols and produces combinations of them.
#[derive(Clone, Debug)]
pub struct Encoder {
    field: Field,
    symbols: usize,
    symbol_bytes: usize,
    data: Symbols,
    /// Over GF(2), where the CPU has the bit-sliced product, the generation
    /// as that product reads it: batches of [`SlicedRows::MIN_OUTPUTS`] or
    /// more combinations are computed from it, and slicing once per
    /// generation instead of once per batch makes them twice as fast.
    sliced: Option<SlicedRows>,
    systematic: bool,
    /// Source symbols already sent uncoded in systematic mode.
    sent_uncoded: usize,
}

/// What [`Encoder::produce`] wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Produced {
    /// Source symbol `index`, uncoded (its coefficient vector is the unit vector).
    Uncoded(usize),
    /// A combination whose coefficients were drawn from the given seed.
    Coded(u64),
}

impl Encoder {
    /// An encoder for `symbols` symbols of `symbol_bytes` bytes, all zero until set.
    /// `symbol_bytes == 0` makes a virtual encoder. The generation is
    /// allocated here: a size the machine cannot hold is an error.
    pub fn new(field: Field, symbols: usize, symbol_bytes: usize) -> Result<Encoder, CodecError> {
        check_generation(field, symbols, symbol_bytes)?;
        Ok(Encoder {
            field,
            symbols,
            symbol_bytes,
            data: Symbols::zeroed(symbol_bytes, symbols)?,
            sliced: if field == Field::GF2 && symbol_bytes > 0 {
                SlicedRows::zeroed(symbols, symbol_bytes)
            } else {
                None
            },
            systematic: false,
            sent_uncoded: 0,
        })
    }

    pub fn field(&self) -> Field {
        self.field
    }
    pub fn symbols(&self) -> usize {
        self.symbols
    }
    pub fn symbol_bytes(&self) -> usize {
        self.symbol_bytes
    }
    /// The generation's capacity in bytes.
    pub fn block_bytes(&self) -> usize {
        self.symbols * self.symbol_bytes
    }

    /// In systematic mode [`Encoder::produce`] first sends every source symbol
    /// uncoded, then combinations: with little loss most symbols need no decoding.
    pub fn set_systematic(&mut self, on: bool) {
        self.systematic = on;
    }

    pub fn is_systematic(&self) -> bool {
        self.systematic
    }

    /// Copies `data` in as the generation, zero-padding the rest.
    pub fn set_data(&mut self, data: &[u8]) -> Result<(), CodecError> {
        if data.len() > self.block_bytes() {
            return Err(CodecError::DataTooLarge { got: data.len(), capacity: self.block_bytes() });
        }
        let mut parts = data.chunks(self.symbol_bytes.max(1));
        for row in self.data.rows_mut() {
            let part = parts.next().unwrap_or_default();
            row[..part.len()].copy_from_slice(part);
            row[part.len()..].fill(0);
        }
        if let Some(sliced) = &mut self.sliced {
            sliced.set_rows(&self.data.rows(), 0);
        }
        self.sent_uncoded = 0;
        Ok(())
    }

    /// Replaces source symbol `index`.
    pub fn set_symbol(&mut self, index: usize, symbol: &[u8]) -> Result<(), CodecError> {
        self.check_index(index)?;
        check_payload(symbol, self.symbol_bytes)?;
        self.data.get_mut(index).copy_from_slice(symbol);
        if let Some(sliced) = &mut self.sliced {
            let first = index / 8 * 8;
            sliced.set_rows(&self.data.rows()[first..self.symbols.min(first + 8)], first);
        }
        Ok(())
    }

    /// Source symbol `index`.
    pub fn symbol(&self, index: usize) -> Option<&[u8]> {
        (index < self.symbols).then(|| self.data.get(index))
    }

    fn check_index(&self, index: usize) -> Result<(), CodecError> {
        if index >= self.symbols {
            return Err(CodecError::IndexOutOfRange { index: index as u64, limit: self.symbols as u64 });
        }
        Ok(())
    }

    /// Writes `sum coefficients[i] * symbol[i]` into `payload`.
    pub fn encode(&self, coefficients: &[u8], payload: &mut [u8]) -> Result<(), CodecError> {
        check_coefficients(self.field, coefficients, self.symbols)?;
        check_payload(payload, self.symbol_bytes)?;
        payload.fill(0);
        if self.symbol_bytes > 0 {
            self.field.symbol_axpy_multi(coefficients, &self.data.rows(), payload);
        }
        Ok(())
    }

    /// Encodes a batch: `payloads` receives one combination per row of
    /// `coefficients` (`count x symbols`, row-major). Sending a block's
    /// worth of combinations at once, as TCP-HONC does, reads each source
    /// symbol once per group of outputs.
    pub fn encode_batch(&self, coefficients: &[u8], payloads: &mut [u8]) -> Result<(), CodecError> {
        let count = coefficients.len() / self.symbols;
        check_coefficients(self.field, coefficients, count * self.symbols)?;
        check_payload(payloads, count * self.symbol_bytes)?;
        if self.symbol_bytes == 0 {
            return Ok(());
        }
        let mut outputs: Vec<&mut [u8]> = payloads.chunks_exact_mut(self.symbol_bytes).collect();
        match &self.sliced {
            Some(sliced) if count >= SlicedRows::MIN_OUTPUTS => sliced.matmul_into(coefficients, &mut outputs),
            _ => self.field.symbol_matmul_into(coefficients, &self.data.rows(), &mut outputs),
        }
        Ok(())
    }

    /// Draws the coefficient vector for `seed` into `coefficients` and encodes with it.
    pub fn encode_seeded(&self, seed: u64, coefficients: &mut [u8], payload: &mut [u8]) -> Result<(), CodecError> {
        if coefficients.len() != self.symbols {
            return Err(CodecError::CoefficientLength { got: coefficients.len(), expected: self.symbols });
        }
        coefficients::generate(self.field, seed, coefficients);
        self.encode(coefficients, payload)
    }

    /// The next symbol to send: in systematic mode the next uncoded source
    /// symbol while any remain, otherwise a combination drawn from `seed`.
    /// `coefficients` receives the symbol's coefficient vector either way.
    pub fn produce(&mut self, seed: u64, coefficients: &mut [u8], payload: &mut [u8]) -> Result<Produced, CodecError> {
        if self.systematic && self.sent_uncoded < self.symbols {
            let index = self.sent_uncoded;
            check_payload(payload, self.symbol_bytes)?;
            if coefficients.len() != self.symbols {
                return Err(CodecError::CoefficientLength { got: coefficients.len(), expected: self.symbols });
            }
            coefficients.fill(0);
            coefficients[index] = 1;
            payload.copy_from_slice(self.symbol(index).expect("index checked"));
            self.sent_uncoded += 1;
            return Ok(Produced::Uncoded(index));
        }
        self.encode_seeded(seed, coefficients, payload)?;
        Ok(Produced::Coded(seed))
    }
}
