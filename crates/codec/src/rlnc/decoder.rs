use super::{check_coefficients, check_generation, check_payload, CodecError, Received};
use crate::{coefficients, prng::SplitMix64};
use ncmesh_gf::Field;

/// Progressive Gauss-Jordan elimination over one generation.
///
/// Row `i` of the matrix, when present, has its first non-zero coefficient,
/// the *pivot*, at column `i`, scaled to one: the decoder has *seen* symbol
/// `i` in the sense of Sundararajan et al. (it holds `s_i + sum_{j>i} c_j s_j`).
/// The coefficient rows are kept in reduced row echelon form, so a symbol is
/// decoded the moment its row becomes a unit vector.
///
/// Clearing a new pivot column from the older rows is delayed: up to
/// [`PENDING_ROWS`] new rows wait, reduced against everything, and are then
/// cleared from the older rows in one matrix product, which reads each new
/// row once per four older ones instead of once per row.
///
/// Payloads are never touched during elimination. Each row also carries the
/// weights that express it as a combination of the innovative payloads
/// received so far, which are stored as they arrived. A payload is computed
/// once, when its symbol is asked for, as one multi-row sum: elimination
/// then costs a few vector operations of 2g bytes per symbol instead of
/// O(g) passes over 1500-byte payloads, and recoding costs what encoding does.
#[derive(Clone, Debug)]
pub struct Decoder {
    field: Field,
    symbols: usize,
    symbol_bytes: usize,
    /// Row length: `symbols` coefficients, then (with payloads) `symbols` weights.
    width: usize,
    /// `symbols x width`; row `i` is meaningful when `pivot[i]`.
    rows: Vec<u8>,
    pivot: Vec<bool>,
    rank: usize,
    /// The innovative payloads, in arrival order (`rank x symbol_bytes`).
    received: Vec<u8>,
    /// Decoded payloads by symbol index, valid where `materialized`.
    decoded: Vec<u8>,
    materialized: Vec<bool>,
    /// Pivots of rows not yet cleared from the older rows.
    pending: Vec<usize>,
    is_pending: Vec<bool>,
    scratch: Vec<u8>,
    factors: Vec<(u8, usize)>,
}

/// How many new rows wait before they are cleared from the older ones.
pub const PENDING_ROWS: usize = 16;

impl Decoder {
    /// A decoder for `symbols` symbols of `symbol_bytes` bytes.
    /// `symbol_bytes == 0` makes a virtual decoder that tracks coefficients only.
    pub fn new(field: Field, symbols: usize, symbol_bytes: usize) -> Result<Decoder, CodecError> {
        check_generation(field, symbols, symbol_bytes)?;
        let width = if symbol_bytes > 0 { 2 * symbols } else { symbols };
        Ok(Decoder {
            field,
            symbols,
            symbol_bytes,
            width,
            rows: vec![0; symbols * width],
            pivot: vec![false; symbols],
            rank: 0,
            received: Vec::with_capacity(symbols * symbol_bytes),
            decoded: vec![0; symbols * symbol_bytes],
            materialized: vec![false; symbols],
            pending: Vec::with_capacity(PENDING_ROWS),
            is_pending: vec![false; symbols],
            scratch: vec![0; width],
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

    /// Whether symbol `index` is decoded: its row, once cleared of the
    /// pending pivots, has no other non-zero coefficient.
    pub fn is_symbol_decoded(&self, index: usize) -> bool {
        if !self.is_symbol_seen(index) {
            return false;
        }
        if self.is_complete() && self.pending.is_empty() {
            return true; // a full-rank reduced echelon form is the identity
        }
        let unit = |row: &[u8]| row.iter().enumerate().all(|(j, &c)| j == index || c == 0);
        let row = self.coefficients(index);
        if self.is_pending[index] || self.pending.iter().all(|&p| row[p] == 0) {
            return unit(row);
        }
        let mut cleared = row.to_vec();
        let terms = self.pending.iter().map(|&p| (row[p], self.coefficients(p)));
        self.field.axpy_sum(terms, &mut cleared);
        unit(&cleared)
    }

    /// The number of decoded symbols.
    pub fn symbols_decoded(&self) -> usize {
        (0..self.symbols).filter(|&i| self.is_symbol_decoded(i)).count()
    }

    /// The decoded symbol `index`, if it is decoded.
    pub fn symbol(&mut self, index: usize) -> Option<&[u8]> {
        if !self.is_symbol_decoded(index) {
            return None;
        }
        self.clear_pending();
        self.materialize(index);
        let s = self.symbol_bytes;
        Some(&self.decoded[index * s..(index + 1) * s])
    }

    /// The whole generation once complete, symbols in order.
    pub fn data(&mut self) -> Option<&[u8]> {
        if !self.is_complete() {
            return None;
        }
        self.clear_pending();
        self.materialize_all();
        Some(&self.decoded)
    }

    /// The coefficient row whose pivot is `index`, if symbol `index` is seen.
    pub fn coefficient_row(&self, index: usize) -> Option<&[u8]> {
        self.is_symbol_seen(index).then(|| self.coefficients(index))
    }

    fn row(&self, i: usize) -> &[u8] {
        &self.rows[i * self.width..(i + 1) * self.width]
    }

    fn coefficients(&self, i: usize) -> &[u8] {
        &self.row(i)[..self.symbols]
    }

    /// The received payloads weighted by `weights`, summed into `out`.
    fn combine_received(&self, weights: &[u8], out: &mut [u8]) {
        let s = self.symbol_bytes;
        let terms = weights.iter().copied().zip(self.received.chunks_exact(s));
        self.field.symbol_axpy_sum(terms, out);
    }

    fn materialize(&mut self, i: usize) {
        if self.materialized[i] || self.symbol_bytes == 0 {
            return;
        }
        let s = self.symbol_bytes;
        let mut out = std::mem::take(&mut self.decoded);
        out[i * s..(i + 1) * s].fill(0);
        self.combine_received(&self.row(i)[self.symbols..], &mut out[i * s..(i + 1) * s]);
        self.decoded = out;
        self.materialized[i] = true;
    }

    /// Computes every decoded payload not yet computed, as one matrix product.
    fn materialize_all(&mut self) {
        let (g, s, r) = (self.symbols, self.symbol_bytes, self.rank);
        if s == 0 {
            return;
        }
        // Rows of few weights (systematic symbols have one) are summed
        // directly, skipping zeros; the dense rest go through one product.
        let sparse = |row: &[u8]| row.iter().filter(|&&c| c != 0).count() * 8 <= r;
        let mut dense = vec![false; g];
        let mut weights = Vec::with_capacity(g * r);
        for i in 0..g {
            if self.materialized[i] || !self.is_symbol_decoded(i) {
                continue;
            }
            let row = &self.row(i)[g..g + r];
            if sparse(row) {
                self.materialize(i);
            } else {
                dense[i] = true;
                weights.extend_from_slice(row);
            }
        }
        if weights.is_empty() {
            return;
        }
        let received: Vec<&[u8]> = self.received.chunks_exact(s).collect();
        let mut outputs: Vec<&mut [u8]> =
            self.decoded.chunks_exact_mut(s).zip(&dense).filter(|(_, &d)| d).map(|(out, _)| out).collect();
        outputs.iter_mut().for_each(|out| out.fill(0));
        self.field.symbol_matmul(&weights, &received, &mut outputs);
        self.materialized.iter_mut().zip(&dense).for_each(|(m, &d)| *m |= d);
    }

    /// Adds the coded symbol `payload = sum coefficients[i] * s_i`.
    pub fn consume(&mut self, coefficients: &[u8], payload: &[u8]) -> Result<Received, CodecError> {
        check_coefficients(self.field, coefficients, self.symbols)?;
        check_payload(payload, self.symbol_bytes)?;
        if self.is_complete() {
            return Ok(Received::NotInnovative);
        }
        self.scratch[..self.symbols].copy_from_slice(coefficients);
        Ok(self.insert_scratch(payload))
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
        self.scratch[..self.symbols].fill(0);
        self.scratch[index] = 1;
        Ok(self.insert_scratch(payload))
    }

    /// Reduces the scratch row against every pivot and keeps it if anything is left.
    fn insert_scratch(&mut self, payload: &[u8]) -> Received {
        let (g, w, field) = (self.symbols, self.width, self.field);
        // The new payload would be received number `rank`.
        self.scratch[g..].fill(0);
        if w > g {
            self.scratch[g + self.rank] = 1;
        }
        // Older rows are reduced among themselves, so their pivot columns are
        // cleared in one sum with the scratch row's original entries as
        // factors; that leaves entries at pending pivots, cleared in a second.
        let used = if w > g { g + self.rank + 1 } else { g };
        for older in [false, true] {
            self.factors.clear();
            for j in 0..g {
                let c = self.scratch[j];
                if c != 0 && self.pivot[j] && self.is_pending[j] == older {
                    self.factors.push((c, j));
                }
            }
            let rows = &self.rows;
            let terms = self.factors.iter().map(|&(c, j)| (c, &rows[j * w..j * w + used]));
            field.axpy_sum(terms, &mut self.scratch[..used]);
        }
        let Some(p) = self.scratch[..g].iter().position(|&c| c != 0) else {
            return Received::NotInnovative;
        };
        field.scale(field.inv(self.scratch[p]), &mut self.scratch[..used]);
        // Pending rows stay fully reduced: clear the new pivot from them now.
        let scratch = &self.scratch[..used];
        let is_pending = &self.is_pending;
        let waiting = self.rows.chunks_exact_mut(w).enumerate().filter(|(i, r)| is_pending[*i] && r[p] != 0);
        field.axpy_fanout(scratch, waiting.map(|(_, r)| (r[p], &mut r[..used])));
        self.rows[p * w..(p + 1) * w].copy_from_slice(&self.scratch);
        self.received.extend_from_slice(payload);
        self.pivot[p] = true;
        self.is_pending[p] = true;
        self.pending.push(p);
        self.rank += 1;
        if self.pending.len() == PENDING_ROWS || self.is_complete() {
            self.clear_pending();
        }
        if self.is_complete() {
            Received::Complete
        } else {
            Received::Innovative
        }
    }

    /// Clears the pending pivot columns from the older rows in one product.
    fn clear_pending(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let (g, w) = (self.symbols, self.width);
        let used = if w > g { g + self.rank } else { g };
        let mut waiting = Vec::with_capacity(self.pending.len() * used);
        for &p in &self.pending {
            waiting.extend_from_slice(&self.rows[p * w..p * w + used]);
        }
        let mut factors = Vec::with_capacity(self.rank * self.pending.len());
        let mut outputs: Vec<&mut [u8]> = Vec::with_capacity(self.rank);
        for (i, row) in self.rows.chunks_exact_mut(w).enumerate() {
            if self.pivot[i] && !self.is_pending[i] && self.pending.iter().any(|&p| row[p] != 0) {
                for &p in &self.pending {
                    factors.push(row[p]);
                }
                outputs.push(&mut row[..used]);
            }
        }
        let inputs: Vec<&[u8]> = waiting.chunks_exact(used).collect();
        self.field.matmul(&factors, &inputs, &mut outputs);
        for &p in &self.pending {
            self.is_pending[p] = false;
        }
        self.pending.clear();
    }

    /// Writes a random combination of the received symbols, expressed over
    /// the source symbols: what a relay forwards without decoding.
    pub fn recode(&self, rng: &mut SplitMix64, coefficients: &mut [u8], payload: &mut [u8]) -> Result<(), CodecError> {
        self.recode_batch(rng, coefficients, payload)
    }

    /// As [`Decoder::recode`] for as many symbols as `coefficients` holds
    /// rows (`count x symbols`); `payloads` is `count x symbol_bytes`.
    pub fn recode_batch(&self, rng: &mut SplitMix64, coefficients: &mut [u8], payloads: &mut [u8]) -> Result<(), CodecError> {
        let mut mix = vec![0u8; coefficients.len() / self.symbols * self.rank];
        for m in mix.chunks_exact_mut(self.rank.max(1)) {
            coefficients::generate_nonzero(self.field, rng, m);
        }
        self.recode_with(&mix, coefficients, payloads)
    }

    /// Recodes with chosen mixes: row k of `mix` (`count x rank`) weighs the
    /// seen rows in order of their pivots.
    pub fn recode_with(&self, mix: &[u8], coefficients: &mut [u8], payloads: &mut [u8]) -> Result<(), CodecError> {
        let (g, s, r) = (self.symbols, self.symbol_bytes, self.rank);
        if r == 0 {
            return Err(CodecError::NothingToRecode);
        }
        let count = coefficients.len() / g;
        check_coefficients(self.field, mix, count * r)?;
        if coefficients.len() != count * g {
            return Err(CodecError::CoefficientLength { got: coefficients.len(), expected: count * g });
        }
        check_payload(payloads, count * s)?;
        // Each output's row over [coefficients | weights] is its mix of the seen rows.
        let mut combined = vec![0u8; count * self.width];
        let seen: Vec<&[u8]> = (0..g).filter(|&i| self.pivot[i]).map(|i| self.row(i)).collect();
        let mut outputs: Vec<&mut [u8]> = combined.chunks_exact_mut(self.width).collect();
        self.field.matmul(mix, &seen, &mut outputs);
        let mut weights = Vec::with_capacity(count * r);
        for (c, row) in coefficients.chunks_exact_mut(g).zip(combined.chunks_exact(self.width)) {
            c.copy_from_slice(&row[..g]);
            if s > 0 {
                weights.extend_from_slice(&row[g..g + r]);
            }
        }
        if s > 0 {
            payloads.fill(0);
            let received: Vec<&[u8]> = self.received.chunks_exact(s).collect();
            let mut outputs: Vec<&mut [u8]> = payloads.chunks_exact_mut(s).collect();
            self.field.symbol_matmul(&weights, &received, &mut outputs);
        }
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

    /// See [`Decoder::recode_batch`].
    pub fn recode_batch(&self, rng: &mut SplitMix64, coefficients: &mut [u8], payloads: &mut [u8]) -> Result<(), CodecError> {
        self.decoder.recode_batch(rng, coefficients, payloads)
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
