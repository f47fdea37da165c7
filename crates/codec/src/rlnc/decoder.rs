use super::packing::{set_word, word_at, xor_masked, Packing};
use super::symbols::Symbols;
use super::{check_coefficients, check_generation, check_payload, CodecError, Received};
use crate::alloc::{self, zeroed};
use crate::{coefficients, prng::SplitMix64};
use ncmesh_gf::{Field, SlicedRows};

/// Progressive Gauss-Jordan elimination over one generation.
///
/// Row `i` of the matrix, when present, has its first non-zero coefficient,
/// the *pivot*, at column `i`, scaled to one: the decoder has *seen* symbol
/// `i` in the sense of Sundararajan et al. (it holds `s_i + sum_{j>i} c_j s_j`).
/// The coefficient rows are kept in reduced row echelon form, so a symbol is
/// decoded the moment its row becomes a unit vector.
///
/// Clearing a new pivot column from the older rows is delayed: up to
/// `PENDING_ROWS` (16) new rows wait, reduced against everything, and are then
/// cleared from the older rows in one matrix product, which reads each new
/// row once per group of older ones instead of once per row.
///
/// Payloads are never touched during elimination. Each row also carries the
/// weights that express it as a combination of the innovative payloads
/// received so far, which are stored as they arrived. A payload is computed
/// once, when its symbol is asked for, as one multi-row sum: elimination
/// then costs a few vector operations on rows of 2g elements per symbol
/// instead of O(g) passes over 1500-byte payloads. Rows are packed as
/// symbols are when q divides 8, so a GF(2) row of 2g elements is 2g/8 bytes.
/// GF(2) rows are then so short that none waits: each new pivot is cleared
/// from the others at once, a word at a time.
#[derive(Clone, Debug)]
pub struct Decoder {
    field: Field,
    packing: Packing,
    symbols: usize,
    symbol_bytes: usize,
    /// Bytes of a row's coefficient part, and of its weight part.
    part: usize,
    /// Row length in bytes: coefficients, then (with payloads) weights.
    width: usize,
    /// `symbols x width`; row `i` is meaningful when `pivot[i]`.
    rows: Vec<u8>,
    pivot: Vec<bool>,
    rank: usize,
    /// The innovative payloads, in arrival order (`rank x symbol_bytes`).
    received: Symbols,
    /// Their coefficient vectors as they arrived (`rank x symbols`, one
    /// element a byte): a basis of the received span for recoding, with no
    /// elimination needed.
    received_coefficients: Vec<u8>,
    /// Decoded payloads by symbol index, valid where `materialized`;
    /// allocated when the first one is, or else, once decoded in place, the
    /// buffer `received` had (which is then left empty until `reset`).
    decoded: Symbols,
    materialized: Vec<bool>,
    /// Pivots of rows not yet cleared from the older rows, ascending; at
    /// most [`PENDING_ROWS`], and never any over GF(2).
    pending: Vec<usize>,
    /// Bit j of word j / 64 is set when row j is seen and cleared from the
    /// others: the rows a new one is reduced against in one sum.
    older: Vec<u64>,
    scratch: Vec<u8>,
    /// The scratch row's coefficients, one a byte, read while it is reduced
    /// (empty over GF(2), which reduces words and needs neither these nor
    /// `selected`; a decoder per generation then allocates less).
    factors: Vec<u8>,
    /// The pivots whose rows reduce the scratch row.
    selected: Vec<usize>,
    /// Over GF(2), the decoded generation as [`SlicedRows`] keeps it, for
    /// recoding batches as fast as an encoder does; current when
    /// `sliced_is_current`, and kept allocated across `reset`.
    sliced: Option<SlicedRows>,
    sliced_is_current: bool,
}

/// How many new rows wait before they are cleared from the older ones.
pub const PENDING_ROWS: usize = 16;

/// The most outputs [`Decoder::recode_batch`] computes in one product. The
/// scratch of a product (the weights drawn, the list of outputs) grows with
/// its outputs, and a product of more would read each input no less often:
/// runs of this many keep a batch's memory to its buffers, whatever its count.
const RECODE_RUN: usize = 1024;

/// The generation size from which a fresh decoder decodes in place where
/// that costs a copy of the received payloads ([`Field::symbol_matmul_in_place`]):
/// the copy costs a load and a store per input vector, against at least
/// g/2 operations per input vector in the product.
const IN_PLACE_FROM: usize = 32;

impl Decoder {
    /// A decoder for `symbols` symbols of `symbol_bytes` bytes.
    /// `symbol_bytes == 0` makes a virtual decoder that tracks coefficients only.
    ///
    /// The buffers that grow with the generation, its rows, received
    /// payloads and coefficients, are allocated here: a size the machine
    /// cannot hold is an error. The rest are at most a few words per symbol.
    pub fn new(field: Field, symbols: usize, symbol_bytes: usize) -> Result<Decoder, CodecError> {
        check_generation(field, symbols, symbol_bytes)?;
        let packing = Packing::new(field);
        let part = packing.bytes(symbols);
        let width = packing.padded(if symbol_bytes > 0 { 2 * part } else { part });
        let general = if field == Field::GF2 { 0 } else { symbols };
        let too_large = || CodecError::GenerationTooLarge { symbols, symbol_bytes };
        let out_of_memory = |r: alloc::Refused| CodecError::OutOfMemory { bytes: r.bytes, symbols, symbol_bytes };
        let matrix = symbols.checked_mul(width).ok_or_else(too_large)?;
        let square = symbols.checked_mul(symbols).ok_or_else(too_large)?;
        // The payloads first: their size is the one a caller may get wrong.
        let received = Symbols::with_capacity(symbol_bytes, symbols)?;
        Ok(Decoder {
            field,
            packing,
            symbols,
            symbol_bytes,
            part,
            width,
            rows: alloc::try_zeroed(matrix).map_err(out_of_memory)?,
            pivot: zeroed(symbols),
            rank: 0,
            received,
            received_coefficients: alloc::try_with_capacity(square).map_err(out_of_memory)?,
            decoded: Symbols::with_capacity(symbol_bytes, 0)?,
            materialized: zeroed(symbols),
            pending: Vec::with_capacity(PENDING_ROWS.min(general)),
            older: zeroed(symbols.div_ceil(64)),
            scratch: zeroed(width),
            factors: zeroed(general),
            selected: zeroed(general),
            sliced: None,
            sliced_is_current: false,
        })
    }

    /// Forgets everything received, to decode the next generation of the
    /// same shape without allocating: a receiver of a stream of generations
    /// keeps one decoder.
    pub fn reset(&mut self) {
        if self.received.capacity() == 0 && self.symbol_bytes > 0 {
            // The last generation was decoded in place. A decoder kept for
            // more generations keeps a second buffer, warm from one to the
            // next, and so skips the copy that decoding in place costs.
            let second = self.generation_buffer();
            self.received = std::mem::replace(&mut self.decoded, second);
        }
        self.rank = 0;
        self.pivot.fill(false);
        self.received.clear();
        self.received_coefficients.clear();
        self.materialized.fill(false);
        self.pending.clear();
        self.older.fill(0);
        self.sliced_is_current = false;
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
        let (k, row) = (self.packing, self.coefficients(index));
        if self.is_pending(index) || self.pending.iter().all(|&p| k.get(row, p) == 0) {
            return k.is_unit_except(row, index);
        }
        let mut cleared = row.to_vec();
        let terms = self.pending.iter().map(|&p| (k.get(row, p), self.coefficients(p)));
        k.axpy_sum(terms, &mut cleared);
        k.is_unit_except(&cleared, index)
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
        Some(self.decoded.get(index))
    }

    /// Every symbol, in order, once the generation is complete.
    pub fn decoded_symbols(&mut self) -> Option<Vec<&[u8]>> {
        if !self.is_complete() {
            return None;
        }
        if self.symbol_bytes == 0 {
            return Some(vec![&[]; self.symbols]);
        }
        self.clear_pending();
        self.materialize_all();
        Some(self.decoded.rows())
    }

    /// The whole generation once complete, as one buffer: a copy, since
    /// symbols are stored a cache line apart.
    pub fn data(&mut self) -> Option<Vec<u8>> {
        self.decoded_symbols().map(|symbols| symbols.concat())
    }

    /// The coefficient row whose pivot is `index`, one element a byte, if
    /// symbol `index` is seen.
    pub fn coefficient_row(&self, index: usize) -> Option<Vec<u8>> {
        self.is_symbol_seen(index).then(|| {
            let mut row = vec![0; self.symbols];
            self.packing.unpack(self.coefficients(index), &mut row);
            row
        })
    }

    fn is_pending(&self, i: usize) -> bool {
        self.pending.binary_search(&i).is_ok()
    }

    fn row(&self, i: usize) -> &[u8] {
        &self.rows[i * self.width..(i + 1) * self.width]
    }

    /// The packed coefficient part of row `i`.
    fn coefficients(&self, i: usize) -> &[u8] {
        &self.row(i)[..self.part]
    }

    /// The first `rank` weights of row `i`, one a byte, into `out`.
    fn weights(&self, i: usize, out: &mut [u8]) {
        self.packing.unpack(&self.row(i)[self.part..], out);
    }

    /// Bytes of a row in use once `received` payloads have arrived: the
    /// coefficients, and (with payloads) the weights up to `received`.
    /// The bytes past a row's end are zero in every row, so this is rounded
    /// up as the row length is.
    fn used(&self, received: usize) -> usize {
        let used = if self.symbol_bytes > 0 { self.part + self.packing.bytes(received) } else { self.part };
        self.packing.padded(used).min(self.width)
    }

    fn materialize(&mut self, i: usize) {
        if self.materialized[i] || self.symbol_bytes == 0 {
            return;
        }
        self.allocate_decoded();
        let mut weights = vec![0; self.rank];
        self.weights(i, &mut weights);
        let (received, out) = (&self.received, self.decoded.get_mut(i));
        out.fill(0);
        // Sparse rows are why a symbol is summed alone: visit their terms only.
        let terms = weights.iter().enumerate().filter(|&(_, &c)| c != 0).map(|(j, &c)| (c, received.get(j)));
        self.field.symbol_axpy_sum(terms, out);
        self.materialized[i] = true;
    }

    fn allocate_decoded(&mut self) {
        if self.decoded.len() == 0 {
            self.decoded = self.generation_buffer();
        }
    }

    /// A second buffer of the size `new` reserved for the received payloads.
    /// It is allocated when first needed, since decoding in place needs
    /// none; if memory has run out since `new`, that is a panic.
    fn generation_buffer(&self) -> Symbols {
        Symbols::zeroed(self.symbol_bytes, self.symbols).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Computes every decoded payload not yet computed, as one matrix product.
    fn materialize_all(&mut self) {
        let (g, s, r) = (self.symbols, self.symbol_bytes, self.rank);
        if s == 0 {
            return;
        }
        // Rows of few weights (systematic symbols have one) are summed
        // directly, skipping zeros; the dense rest go through one product.
        let mut dense: Vec<bool> = zeroed(g);
        let mut weights: Vec<u8> = zeroed(g * r);
        let mut rows = 0;
        for (i, is_dense) in dense.iter_mut().enumerate() {
            if self.materialized[i] || !self.is_symbol_decoded(i) {
                continue;
            }
            if self.packing.count_nonzero(&self.row(i)[self.part..], r) * 8 <= r {
                self.materialize(i);
            } else {
                self.weights(i, &mut weights[rows * r..(rows + 1) * r]);
                *is_dense = true;
                rows += 1;
            }
        }
        if rows == 0 {
            return;
        }
        let in_place = g >= IN_PLACE_FROM || self.field.in_place_without_copy(g);
        if rows == g && self.decoded.len() == 0 && in_place {
            return self.decode_in_place(&weights);
        }
        self.allocate_decoded();
        let received = self.received.rows();
        let mut outputs: Vec<&mut [u8]> =
            self.decoded.rows_mut().into_iter().zip(&dense).filter(|(_, &d)| d).map(|(out, _)| out).collect();
        self.field.symbol_matmul_into(&weights[..rows * r], &received, &mut outputs);
        self.materialized.iter_mut().zip(&dense).for_each(|(m, &d)| *m |= d);
    }

    /// Computes every symbol over the received payloads they are made of,
    /// and keeps them there: a fresh decoder would otherwise fault in a
    /// second generation-sized buffer for one use.
    fn decode_in_place(&mut self, weights: &[u8]) {
        self.field.symbol_matmul_in_place(weights, &mut self.received.rows_mut());
        std::mem::swap(&mut self.decoded, &mut self.received);
        self.materialized.fill(true);
    }

    /// Adds the coded symbol `payload = sum coefficients[i] * s_i`.
    pub fn consume(&mut self, coefficients: &[u8], payload: &[u8]) -> Result<Received, CodecError> {
        check_coefficients(self.field, coefficients, self.symbols)?;
        check_payload(payload, self.symbol_bytes)?;
        if self.is_complete() {
            return Ok(Received::NotInnovative);
        }
        self.received_coefficients.extend_from_slice(coefficients);
        Ok(self.insert(payload))
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
        let at = self.received_coefficients.len();
        self.received_coefficients.resize(at + self.symbols, 0);
        self.received_coefficients[at + index] = 1;
        Ok(self.insert(payload))
    }

    /// Takes the symbol whose coefficients were just appended to
    /// `received_coefficients`: reduces them against every pivot and keeps
    /// the row if anything is left.
    fn insert(&mut self, payload: &[u8]) -> Received {
        if self.field.degree() == 1 {
            return self.insert_binary(payload);
        }
        let (g, w, k) = (self.symbols, self.width, self.packing);
        let used = self.used(self.rank + 1);
        let arrived = &self.received_coefficients[self.rank * g..];
        k.pack(arrived, &mut self.scratch[..self.part]);
        self.factors.copy_from_slice(arrived);
        // The new payload would be received number `rank`.
        self.scratch[self.part..].fill(0);
        if self.symbol_bytes > 0 {
            k.set_in_zeroed(&mut self.scratch[self.part..], self.rank, 1);
        }
        // Older rows are reduced among themselves, so their pivot columns are
        // cleared in one sum with the scratch row's original entries as
        // factors; that leaves entries at pending pivots, cleared in a second.
        // The older rows with a non-zero factor are found 64 columns at a
        // time, from bit masks: no branch per column, which over GF(2) would
        // mispredict every other time.
        let (rows, factors, scratch) = (&self.rows, &mut self.factors, &mut self.scratch[..used]);
        let mut older = 0;
        for (word, &mask) in self.older.iter().enumerate() {
            let mut bits = mask & nonzero_bits(&factors[64 * word..g.min(64 * word + 64)]);
            while bits != 0 {
                self.selected[older] = 64 * word + bits.trailing_zeros() as usize;
                older += 1;
                bits &= bits - 1;
            }
        }
        let older = self.selected[..older].iter();
        k.axpy_sum(older.map(|&j| (factors[j], &rows[j * w..j * w + used])), scratch);
        for &j in &self.pending {
            factors[j] = k.get(scratch, j);
        }
        let pending = self.pending.iter().filter(|&&j| factors[j] != 0);
        k.axpy_sum(pending.map(|&j| (factors[j], &rows[j * w..j * w + used])), scratch);
        let Some(p) = k.first_nonzero(scratch, g) else {
            self.received_coefficients.truncate(self.rank * g);
            return Received::NotInnovative;
        };
        k.scale(self.field.inv(k.get(scratch, p)), scratch);
        // Pending rows stay fully reduced: clear the new pivot from them now.
        let waiting = rows_mut(&mut self.rows, w, &self.pending).map(|row| (k.get(row, p), &mut row[..used]));
        k.axpy_fanout(scratch, waiting.filter(|(c, _)| *c != 0));
        self.rows[p * w..(p + 1) * w].copy_from_slice(&self.scratch);
        self.received.push(payload);
        self.pivot[p] = true;
        let at = self.pending.partition_point(|&q| q < p);
        self.pending.insert(at, p);
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

    /// [`Decoder::insert`] over GF(2), where a row is a few words. Clearing
    /// the new pivot from every row at once costs less than batching it
    /// through a product, so no row is ever pending.
    fn insert_binary(&mut self, payload: &[u8]) -> Received {
        let (g, w) = (self.symbols, self.width);
        let arrived = &self.received_coefficients[self.rank * g..];
        let weight = (self.symbol_bytes > 0).then_some(8 * self.part + self.rank);
        let pivot = match w / 8 {
            1 => insert_words::<1>(&mut self.rows, &self.older, g, arrived, weight),
            2 => insert_words::<2>(&mut self.rows, &self.older, g, arrived, weight),
            _ => {
                // The row is written a word at a time, as it is read: a word
                // loaded from bytes stored one by one would wait for all of them.
                self.scratch.fill(0);
                for (k, elements) in arrived.chunks(64).enumerate() {
                    set_word(&mut self.scratch, k, nonzero_bits(elements));
                }
                if let Some(bit) = weight {
                    let word = word_at(&self.scratch, bit / 64) | 1 << (bit % 64);
                    set_word(&mut self.scratch, bit / 64, word);
                }
                let used = self.used(self.rank + 1);
                let reduce = if used == 64 { reduce_binary::<8> } else { reduce_binary::<0> };
                let p = reduce(&mut self.rows, w, &self.older, &mut self.scratch[..used], g);
                if let Some(p) = p {
                    self.rows[p * w..(p + 1) * w].copy_from_slice(&self.scratch);
                }
                p
            }
        };
        let Some(p) = pivot else {
            self.received_coefficients.truncate(self.rank * g);
            return Received::NotInnovative;
        };
        self.received.push(payload);
        self.pivot[p] = true;
        self.older[p / 64] |= 1 << (p % 64);
        self.rank += 1;
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
        let (w, k, used) = (self.width, self.packing, self.used(self.rank));
        let mut waiting = Vec::with_capacity(self.pending.len() * used);
        for &p in &self.pending {
            waiting.extend_from_slice(&self.rows[p * w..p * w + used]);
        }
        let mut factors = Vec::with_capacity(self.rank * self.pending.len());
        let mut outputs: Vec<&mut [u8]> = Vec::with_capacity(self.rank);
        for (i, row) in self.rows.chunks_exact_mut(w).enumerate() {
            if self.older[i / 64] >> (i % 64) & 1 != 0 {
                let at = factors.len();
                factors.extend(self.pending.iter().map(|&p| k.get(row, p)));
                if factors[at..].iter().all(|&c| c == 0) {
                    factors.truncate(at);
                } else {
                    outputs.push(&mut row[..used]);
                }
            }
        }
        let inputs: Vec<&[u8]> = waiting.chunks_exact(used).collect();
        k.matmul(&factors, &inputs, &mut outputs);
        for &p in &self.pending {
            self.older[p / 64] |= 1 << (p % 64);
        }
        self.pending.clear();
    }

    /// The complete generation in the sliced form, over GF(2) where the CPU
    /// has the sliced product; sliced at the first call after completion.
    fn sliced_decoded(&mut self) -> Option<&SlicedRows> {
        if self.field != Field::GF2 || !self.is_complete() {
            return None;
        }
        if !self.sliced_is_current {
            self.clear_pending();
            self.materialize_all();
            if self.sliced.is_none() {
                self.sliced = SlicedRows::zeroed(self.symbols, self.symbol_bytes);
            }
            self.sliced.as_mut()?.set_rows(&self.decoded.rows(), 0);
            self.sliced_is_current = true;
        }
        self.sliced.as_ref()
    }

    /// Writes a random combination of the received symbols, expressed over
    /// the source symbols: what a relay forwards without decoding.
    pub fn recode(
        &mut self,
        rng: &mut SplitMix64,
        coefficients: &mut [u8],
        payload: &mut [u8],
    ) -> Result<(), CodecError> {
        self.recode_batch(rng, coefficients, payload)
    }

    /// As [`Decoder::recode`] for as many symbols as `coefficients` holds
    /// rows (`count x symbols`); `payloads` is `count x symbol_bytes`.
    ///
    /// A partial decoder mixes the symbols it received, at a cost of
    /// `count x rank x (symbols + symbol_bytes)`. A complete one decodes
    /// once and then encodes from the decoded symbols, which costs exactly
    /// what an [`Encoder`](super::Encoder) does.
    pub fn recode_batch(
        &mut self,
        rng: &mut SplitMix64,
        coefficients: &mut [u8],
        payloads: &mut [u8],
    ) -> Result<(), CodecError> {
        let (g, s, r) = (self.symbols, self.symbol_bytes, self.rank);
        if r == 0 {
            return Err(CodecError::NothingToRecode);
        }
        let count = coefficients.len() / g;
        if coefficients.len() != count * g {
            return Err(CodecError::CoefficientLength { got: coefficients.len(), expected: count * g });
        }
        check_payload(payloads, count * s)?;
        // Each output's draws come from `rng` in turn, so runs give what
        // one product of the whole batch would.
        for first in (0..count).step_by(RECODE_RUN) {
            let n = RECODE_RUN.min(count - first);
            self.recode_run(rng, &mut coefficients[first * g..][..n * g], &mut payloads[first * s..][..n * s]);
        }
        Ok(())
    }

    /// [`Decoder::recode_batch`] of a run of at most [`RECODE_RUN`] outputs,
    /// once the shapes are checked.
    fn recode_run(&mut self, rng: &mut SplitMix64, coefficients: &mut [u8], payloads: &mut [u8]) {
        let (g, s, r) = (self.symbols, self.symbol_bytes, self.rank);
        let count = coefficients.len() / g;
        if self.is_complete() && s > 0 {
            for c in coefficients.chunks_exact_mut(g) {
                coefficients::generate_nonzero(self.field, rng, c);
            }
            let mut outputs: Vec<&mut [u8]> = payloads.chunks_exact_mut(s).collect();
            if count >= SlicedRows::MIN_OUTPUTS {
                if let Some(sliced) = self.sliced_decoded() {
                    sliced.matmul_into(coefficients, &mut outputs);
                    return;
                }
            }
            let field = self.field;
            let decoded = self.decoded_symbols().expect("complete");
            field.symbol_matmul_into(coefficients, &decoded, &mut outputs);
            return;
        }
        let mut mix = vec![0u8; count * r];
        for m in mix.chunks_exact_mut(r) {
            coefficients::generate_nonzero(self.field, rng, m);
        }
        coefficients.fill(0);
        let basis: Vec<&[u8]> = self.received_coefficients.chunks_exact(g).collect();
        let mut outputs: Vec<&mut [u8]> = coefficients.chunks_exact_mut(g).collect();
        self.field.matmul(&mix, &basis, &mut outputs);
        if s > 0 {
            let basis = self.received.rows();
            let mut outputs: Vec<&mut [u8]> = payloads.chunks_exact_mut(s).collect();
            self.field.symbol_matmul_into(&mix, &basis, &mut outputs);
        }
    }
}

/// Bit b set where `bytes[b]` is non-zero, for up to 64 bytes, eight at a
/// time: the top bit of each byte of `x | (x & 0x7f..) + 0x7f..` is set
/// exactly when the byte is non-zero, and one multiplication gathers them.
fn nonzero_bits(bytes: &[u8]) -> u64 {
    const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    let eight = |x: u64| {
        let tops = (x | ((x & LOW7) + LOW7)) & !LOW7;
        (tops >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56
    };
    let mut chunks = bytes.chunks_exact(8);
    let mut bits = 0;
    for (k, c) in (&mut chunks).enumerate() {
        bits |= eight(u64::from_le_bytes(c.try_into().expect("eight bytes"))) << (8 * k);
    }
    let mut last = [0u8; 8];
    last[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    bits | eight(u64::from_le_bytes(last)) << (8 * (bytes.len() / 8) % 64)
}

/// Inserts into GF(2) rows of `N` words, held in registers meanwhile, the
/// row of coefficients `arrived` (one a byte) and, if given, the weight bit
/// `weight`: reduces it, and if anything is left, clears its pivot from
/// every row, stores it as the row of that pivot and returns the pivot.
/// Each row with a pivot is zero at every other pivot column, so the new
/// row's own bits at the pivots select all the rows that reduce it; and
/// rows without a pivot are never read, so the pivot is cleared from every
/// row in one pass with a mask, which vectorizes, rather than from the
/// rows with a pivot alone.
fn insert_words<const N: usize>(
    rows: &mut [u8],
    older: &[u64],
    symbols: usize,
    arrived: &[u8],
    weight: Option<usize>,
) -> Option<usize> {
    let mut new = [0u64; N];
    for (word, elements) in new.iter_mut().zip(arrived.chunks(64)) {
        *word = nonzero_bits(elements);
    }
    if let Some(bit) = weight {
        new[bit / 64] |= 1 << (bit % 64);
    }
    // Only the rows selected are loaded: a mask over every row becomes,
    // in the compiler's hands, a branch per row that mispredicts half the time.
    let mut row = new;
    for (k, &seen) in older.iter().enumerate() {
        let mut bits = new[k] & seen;
        while bits != 0 {
            let old = &rows[(64 * k + bits.trailing_zeros() as usize) * 8 * N..];
            row.iter_mut().enumerate().for_each(|(w, r)| *r ^= word_at(old, w));
            bits &= bits - 1;
        }
    }
    let coefficients = |k: usize| match symbols.saturating_sub(64 * k) {
        0 => 0,
        n if n >= 64 => !0,
        n => (1u64 << n) - 1,
    };
    let p = (0..N).find_map(|k| {
        let left = row[k] & coefficients(k);
        (left != 0).then(|| 64 * k + left.trailing_zeros() as usize)
    })?;
    for old in rows.chunks_exact_mut(8 * N) {
        let has_pivot = (word_at(old, p / 64) >> (p % 64) & 1).wrapping_neg();
        for (k, &r) in row.iter().enumerate() {
            set_word(old, k, word_at(old, k) ^ (r & has_pivot));
        }
    }
    for (k, &r) in row.iter().enumerate() {
        set_word(&mut rows[p * 8 * N..], k, r);
    }
    Some(p)
}

/// Reduces the GF(2) row `scratch` against the rows `older` marks and, if
/// anything is left, clears its pivot from them and returns the pivot.
/// Rows are `width` bytes apart and `scratch.len()` of their bytes are in
/// use, which is `8 * N` unless `N` is 0: a known length unrolls the loops.
fn reduce_binary<const N: usize>(
    rows: &mut [u8],
    width: usize,
    older: &[u64],
    scratch: &mut [u8],
    symbols: usize,
) -> Option<usize> {
    let used = if N > 0 { 8 * N } else { scratch.len() };
    let scratch = &mut scratch[..used];
    // Every row is zero at the other pivot columns, so reducing by one row
    // leaves the entries at the other pivots as they were: they can be read
    // a word at a time as the reduction goes.
    for (word, &mask) in older.iter().enumerate() {
        let mut bits = mask & word_at(scratch, word);
        while bits != 0 {
            let j = 64 * word + bits.trailing_zeros() as usize;
            xor_masked(&rows[j * width..][..used], scratch, !0);
            bits &= bits - 1;
        }
    }
    let first = scratch.iter().position(|&b| b != 0)?;
    let p = 8 * first + scratch[first].trailing_zeros() as usize;
    if p >= symbols {
        return None;
    }
    // Half the rows hold the new pivot: a branch on it would mispredict
    // every other row, where a mask costs one AND a word.
    let (byte, shift) = (p / 8, p % 8);
    for (word, &mask) in older.iter().enumerate() {
        let mut bits = mask;
        while bits != 0 {
            let row = &mut rows[(64 * word + bits.trailing_zeros() as usize) * width..][..used];
            let has_pivot = u64::from(row[byte] >> shift & 1);
            bits &= bits - 1;
            // Rows of many words cost more to add than a mispredict.
            if N == 0 && has_pivot == 0 {
                continue;
            }
            xor_masked(scratch, row, has_pivot.wrapping_neg());
        }
    }
    Some(p)
}

/// The rows `indices` (ascending, distinct) of a row-major matrix of
/// `width`-byte rows, borrowed together.
fn rows_mut<'a>(rows: &'a mut [u8], width: usize, indices: &'a [usize]) -> impl Iterator<Item = &'a mut [u8]> {
    let mut rest = rows;
    let mut next = 0;
    indices.iter().map(move |&i| {
        let tail = std::mem::take(&mut rest).split_at_mut((i - next) * width).1;
        let (row, tail) = tail.split_at_mut(width);
        rest = tail;
        next = i + 1;
        row
    })
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
    pub fn recode(
        &mut self,
        rng: &mut SplitMix64,
        coefficients: &mut [u8],
        payload: &mut [u8],
    ) -> Result<(), CodecError> {
        self.decoder.recode(rng, coefficients, payload)
    }

    /// See [`Decoder::recode_batch`].
    pub fn recode_batch(
        &mut self,
        rng: &mut SplitMix64,
        coefficients: &mut [u8],
        payloads: &mut [u8],
    ) -> Result<(), CodecError> {
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

#[cfg(test)]
mod tests {
    use super::{nonzero_bits, Decoder, RECODE_RUN};
    use crate::prng::SplitMix64;
    use ncmesh_gf::Field;

    #[test]
    #[cfg_attr(miri, ignore = "thousands of outputs through kernels the other tests check")]
    fn a_batch_longer_than_a_run_recodes_as_symbols_one_at_a_time() {
        let (g, s) = (4, 8);
        let count = 2 * RECODE_RUN + 3;
        for (field, held) in [(Field::GF256, 2), (Field::GF256, g), (Field::GF2, 3), (Field::GF2, g)] {
            let mut decoder = Decoder::new(field, g, s).unwrap();
            let mut rng = SplitMix64::new(7);
            while decoder.rank() < held {
                let mut unit = vec![0; g];
                unit[decoder.rank()] = 1;
                let payload: Vec<u8> = (0..s).map(|_| rng.next_u64() as u8).collect();
                decoder.consume(&unit, &payload).unwrap();
            }
            let (mut c, mut p) = (vec![0; count * g], vec![0; count * s]);
            decoder.recode_batch(&mut SplitMix64::new(11), &mut c, &mut p).unwrap();
            let mut one_by_one = SplitMix64::new(11);
            for (k, (c, p)) in c.chunks_exact(g).zip(p.chunks_exact(s)).enumerate() {
                let (mut c1, mut p1) = (vec![0; g], vec![0; s]);
                decoder.recode(&mut one_by_one, &mut c1, &mut p1).unwrap();
                assert_eq!((c, p), (&c1[..], &p1[..]), "{field:?}, rank {held}, output {k}");
            }
        }
    }

    #[test]
    fn nonzero_bits_marks_every_non_zero_byte() {
        let mut rng = crate::prng::SplitMix64::new(9);
        for len in [0usize, 1, 7, 8, 9, 63, 64] {
            for _ in 0..200 {
                // Mostly zeros and small values, with some high bytes.
                let bytes: Vec<u8> = (0..len).map(|_| [0, 0, 1, 0x80, 0x7F, 0xFF][rng.below(6) as usize]).collect();
                let want = bytes.iter().enumerate().fold(0u64, |m, (b, &c)| m | (u64::from(c != 0) << b));
                assert_eq!(nonzero_bits(&bytes), want, "{bytes:?}");
            }
        }
    }
}
