use super::{check_coefficients, check_generation, check_payload, CodecError, Received};
use crate::{coefficients, prng::SplitMix64};
use ncmesh_gf::Field;

/// Progressive Gaussian elimination over one generation.
///
/// Row `i` of the matrix, when present, has its first non-zero coefficient,
/// the *pivot*, at column `i`, scaled to one: the decoder has *seen* symbol
/// `i` in the sense of Sundararajan et al. (it holds `s_i + sum_{j>i} c_j s_j`).
/// Incoming symbols are reduced against every pivot, so rows stay in echelon
/// form. Back-substitution is deferred to [`Decoder::reduce`], which runs by
/// itself on completion: eliminating forward only halves the work of keeping
/// the matrix fully reduced after every symbol, and lets each row update
/// be one multi-row kernel call.
#[derive(Clone, Debug)]
pub struct Decoder {
    field: Field,
    symbols: usize,
    symbol_bytes: usize,
    /// `symbols x symbols` coefficients, row `i` meaningful when `pivot[i]`.
    coefficients: Vec<u8>,
    /// `symbols x symbol_bytes` payloads, aligned with `coefficients`.
    payloads: Vec<u8>,
    pivot: Vec<bool>,
    rank: usize,
    /// Rows were added since the last back-substitution.
    dirty: bool,
    scratch_coefficients: Vec<u8>,
    scratch_payload: Vec<u8>,
    factors: Vec<(u8, usize)>,
}

impl Decoder {
    /// A decoder for `symbols` symbols of `symbol_bytes` bytes.
    /// `symbol_bytes == 0` makes a virtual decoder that tracks coefficients only.
    pub fn new(field: Field, symbols: usize, symbol_bytes: usize) -> Result<Decoder, CodecError> {
        check_generation(field, symbols, symbol_bytes)?;
        Ok(Decoder {
            field,
            symbols,
            symbol_bytes,
            coefficients: vec![0; symbols * symbols],
            payloads: vec![0; symbols * symbol_bytes],
            pivot: vec![false; symbols],
            rank: 0,
            dirty: false,
            scratch_coefficients: vec![0; symbols],
            scratch_payload: vec![0; symbol_bytes],
            factors: Vec::with_capacity(symbols),
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
    /// The number of linearly independent symbols received.
    pub fn rank(&self) -> usize {
        self.rank
    }
    pub fn is_complete(&self) -> bool {
        self.rank == self.symbols
    }

    /// Whether symbol `index` is seen: some row has its pivot there (Kodo's
    /// `is_symbol_pivot`). TCP/NC acknowledges seen symbols.
    pub fn is_symbol_seen(&self, index: usize) -> bool {
        self.pivot.get(index).copied().unwrap_or(false)
    }

    /// Whether symbol `index` is decoded: its row has no other non-zero
    /// coefficient. Symbols that are decodable but not yet back-substituted
    /// become decoded on [`Decoder::reduce`].
    pub fn is_symbol_decoded(&self, index: usize) -> bool {
        self.is_symbol_seen(index) && self.row(index).iter().enumerate().all(|(j, &c)| j == index || c == 0)
    }

    /// The number of decoded symbols.
    pub fn symbols_decoded(&self) -> usize {
        (0..self.symbols).filter(|&i| self.is_symbol_decoded(i)).count()
    }

    /// The decoded symbol `index`, if it is decoded.
    pub fn symbol(&self, index: usize) -> Option<&[u8]> {
        self.is_symbol_decoded(index).then(|| self.payload(index))
    }

    /// The coefficient row whose pivot is `index`, if symbol `index` is seen.
    pub fn coefficient_row(&self, index: usize) -> Option<&[u8]> {
        self.is_symbol_seen(index).then(|| self.row(index))
    }

    /// The whole generation once complete, symbols in order.
    pub fn data(&self) -> Option<&[u8]> {
        self.is_complete().then_some(self.payloads.as_slice())
    }

    fn row(&self, i: usize) -> &[u8] {
        &self.coefficients[i * self.symbols..(i + 1) * self.symbols]
    }

    fn payload(&self, i: usize) -> &[u8] {
        &self.payloads[i * self.symbol_bytes..(i + 1) * self.symbol_bytes]
    }

    /// Adds the coded symbol `payload = sum coefficients[i] * s_i`.
    pub fn consume(&mut self, coefficients: &[u8], payload: &[u8]) -> Result<Received, CodecError> {
        check_coefficients(self.field, coefficients, self.symbols)?;
        check_payload(payload, self.symbol_bytes)?;
        if self.is_complete() {
            return Ok(Received::NotInnovative);
        }
        self.scratch_coefficients.copy_from_slice(coefficients);
        self.scratch_payload.copy_from_slice(payload);
        Ok(self.insert_scratch())
    }

    /// Adds source symbol `index`, uncoded (a systematic symbol).
    pub fn consume_systematic(&mut self, index: usize, payload: &[u8]) -> Result<Received, CodecError> {
        if index >= self.symbols {
            return Err(CodecError::IndexOutOfRange { index: index as u64, limit: self.symbols as u64 });
        }
        check_payload(payload, self.symbol_bytes)?;
        if self.is_complete() || self.is_symbol_decoded(index) {
            return Ok(Received::NotInnovative);
        }
        self.scratch_coefficients.fill(0);
        self.scratch_coefficients[index] = 1;
        self.scratch_payload.copy_from_slice(payload);
        Ok(self.insert_scratch())
    }

    /// Reduces the scratch row against every pivot and keeps it if anything is left.
    fn insert_scratch(&mut self) -> Received {
        let (n, field) = (self.symbols, self.field);
        self.factors.clear();
        let mut new_pivot = None;
        for j in 0..n {
            let c = self.scratch_coefficients[j];
            if c == 0 {
                continue;
            }
            if self.pivot[j] {
                // Row j is zero before j, so only the tail changes.
                field.axpy(c, &self.coefficients[j * n + j..(j + 1) * n], &mut self.scratch_coefficients[j..]);
                self.factors.push((c, j));
            } else if new_pivot.is_none() {
                new_pivot = Some(j);
            }
        }
        let Some(p) = new_pivot else {
            return Received::NotInnovative;
        };
        let s = self.symbol_bytes;
        let payloads = &self.payloads;
        field.symbol_axpy_sum(
            self.factors.iter().map(|&(c, j)| (c, &payloads[j * s..(j + 1) * s])),
            &mut self.scratch_payload,
        );
        let inverse = field.inv(self.scratch_coefficients[p]);
        field.scale(inverse, &mut self.scratch_coefficients[p..]);
        field.symbol_scale(inverse, &mut self.scratch_payload);
        self.coefficients[p * n..(p + 1) * n].copy_from_slice(&self.scratch_coefficients);
        self.payloads[p * s..(p + 1) * s].copy_from_slice(&self.scratch_payload);
        self.pivot[p] = true;
        self.rank += 1;
        self.dirty = true;
        if self.is_complete() {
            self.reduce();
            Received::Complete
        } else {
            Received::Innovative
        }
    }

    /// Back-substitutes so that every row is zero at every other pivot
    /// column: each symbol that the rows determine becomes decoded.
    pub fn reduce(&mut self) {
        if !self.dirty {
            return;
        }
        let (n, s, field) = (self.symbols, self.symbol_bytes, self.field);
        for i in (0..n).rev().filter(|&i| self.pivot[i]) {
            // Rows below i are already reduced, so one pass clears row i.
            self.factors.clear();
            let row = &self.coefficients[i * n..(i + 1) * n];
            self.factors.extend((i + 1..n).filter(|&j| self.pivot[j] && row[j] != 0).map(|j| (row[j], j)));
            if self.factors.is_empty() {
                continue;
            }
            let (head, tail) = self.coefficients.split_at_mut((i + 1) * n);
            let rows_below = |j: usize| &tail[(j - i - 1) * n..(j - i) * n];
            field.axpy_sum(self.factors.iter().map(|&(c, j)| (c, rows_below(j))), &mut head[i * n..]);
            let (head, tail) = self.payloads.split_at_mut((i + 1) * s);
            let payloads_below = |j: usize| &tail[(j - i - 1) * s..(j - i) * s];
            field.symbol_axpy_sum(self.factors.iter().map(|&(c, j)| (c, payloads_below(j))), &mut head[i * s..]);
        }
        self.dirty = false;
    }

    /// Writes a random combination of the received symbols, expressed over
    /// the source symbols: what a relay forwards without decoding.
    pub fn recode(&self, rng: &mut SplitMix64, coefficients: &mut [u8], payload: &mut [u8]) -> Result<(), CodecError> {
        let mut mix = vec![0u8; self.rank];
        coefficients::generate_nonzero(self.field, rng, &mut mix);
        self.recode_with(&mix, coefficients, payload)
    }

    /// As [`Decoder::recode`] with a chosen mix: `mix[k]` weighs the k-th seen row.
    pub fn recode_with(&self, mix: &[u8], coefficients: &mut [u8], payload: &mut [u8]) -> Result<(), CodecError> {
        if self.rank == 0 {
            return Err(CodecError::NothingToRecode);
        }
        check_coefficients(self.field, mix, self.rank)?;
        if coefficients.len() != self.symbols {
            return Err(CodecError::CoefficientLength { got: coefficients.len(), expected: self.symbols });
        }
        check_payload(payload, self.symbol_bytes)?;
        coefficients.fill(0);
        payload.fill(0);
        let seen = || (0..self.symbols).filter(|&i| self.pivot[i]);
        self.field.axpy_sum(mix.iter().copied().zip(seen().map(|i| self.row(i))), coefficients);
        self.field.symbol_axpy_sum(mix.iter().copied().zip(seen().map(|i| self.payload(i))), payload);
        Ok(())
    }
}

/// A relay's coder: it stores what it receives, as a decoder does, and sends
/// fresh combinations of it without waiting to decode.
#[derive(Clone, Debug)]
pub struct Recoder {
    decoder: Decoder,
}

impl Recoder {
    pub fn new(field: Field, symbols: usize, symbol_bytes: usize) -> Result<Recoder, CodecError> {
        Ok(Recoder { decoder: Decoder::new(field, symbols, symbol_bytes)? })
    }

    /// Stores a coded symbol; see [`Decoder::consume`].
    pub fn consume(&mut self, coefficients: &[u8], payload: &[u8]) -> Result<Received, CodecError> {
        self.decoder.consume(coefficients, payload)
    }

    /// See [`Decoder::recode`].
    pub fn recode(&self, rng: &mut SplitMix64, coefficients: &mut [u8], payload: &mut [u8]) -> Result<(), CodecError> {
        self.decoder.recode(rng, coefficients, payload)
    }

    /// The rank: a recoder cannot send more independent symbols than this.
    pub fn rank(&self) -> usize {
        self.decoder.rank()
    }

    pub fn decoder(&self) -> &Decoder {
        &self.decoder
    }

    pub fn into_decoder(self) -> Decoder {
        self.decoder
    }
}

/// A partially filled decoder becomes a recoder with everything it holds.
impl From<Decoder> for Recoder {
    fn from(decoder: Decoder) -> Recoder {
        Recoder { decoder }
    }
}
