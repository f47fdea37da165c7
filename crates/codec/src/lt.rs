//! LT codes (Luby 2002), the fountain code of TCP-Forward (seed 004, section IV).
//!
//! From seed 004 this module implements:
//!
//! - eq. (1), Definition IV.1, the Ideal Soliton distribution:
//!   `rho(1) = 1/k`, `rho(i) = 1/(i(i-1))` for `i = 2..=k` ([`Distribution::ideal`]);
//! - eq. (2), Definition IV.2, the extra mass of the Robust Soliton distribution,
//!   with `R = c ln(k/delta) sqrt(k)`: `tau(i) = R/(ik)` below the spike at
//!   `i = k/R`, `tau(k/R) = R ln(R/delta)/k`, and zero above it;
//! - eq. (3), `mu(i) = (rho(i) + tau(i)) / beta` with `beta = sum_i (rho(i) + tau(i))`
//!   ([`Distribution::robust`]);
//! - section IV.B, the receiver's peeling decoder ([`Decoder`]).
//!
//! Choices and deviations:
//!
//! - Eq. (2) treats `k/R` as an integer, and neither seed 004 nor Luby says how
//!   to round it. The spike sits at `k/R` rounded to the nearest integer
//!   (halves away from zero), clamped into `1..=k`; the `R/(ik)` part covers
//!   the degrees below wherever the spike lands.
//! - When `R < delta`, which needs `k c` tiny, the spike weight `R ln(R/delta)/k`
//!   is negative; it is clamped to zero, leaving the Ideal Soliton shape.
//! - The seed's "R/ik" is read as `R/(i k)`, as in Luby.
//! - The seed's receiver gives up when no symbol of degree one is left and waits
//!   for retransmissions. [`Decoder::solve_stalled`] can instead finish the job
//!   by inactivation decoding, as Raptor codes are decoded (RFC 6330, 5.4.2):
//!   it decodes whatever the received symbols determine over GF(2).
//! - The seed gives no values for `c` and `delta`; [`DEFAULT_C`] and
//!   [`DEFAULT_DELTA`] explain ours.
//!
//! A coded symbol is named by its encoding symbol id (ESI). Its degree and its
//! neighbours are a function of the code's seed and the ESI alone
//! ([`neighbours`]), so a packet need only carry the ESI. That function is
//! part of the wire format.

use crate::alloc;
use crate::prng::SplitMix64;
use crate::rlnc::{self, Received};
use crate::Field;
use std::mem;

/// The largest `k`. It bounds what a code allocates up front: the degree
/// table (16 bytes per degree) and the decoder's per-source index.
pub const MAX_SYMBOLS: usize = 1 << 20;

/// The default Robust Soliton `c`. Seed 004 gives no value. Measured with
/// [`overhead_trials`] over a grid of `c` in 0.03..=0.1 and `delta` in
/// {0.5, 0.9}, `c = 0.05, delta = 0.5` comes within one point of the lowest
/// mean peeling overhead at `k` = 256 and 1000 (four at `k = 64`), and at
/// `k = 1000` decodes 99% of codes within `1.3 k` symbols where the common
/// `c = 0.03` manages 97%. Smaller `c` leaves the ripple too thin; larger `c`
/// spends symbols on degree one. At `k = 1000`, `R ≈ 12` and the spike sits at 83.
pub const DEFAULT_C: f64 = 0.05;

/// The default Robust Soliton `delta` (see [`DEFAULT_C`]). Luby's analysis
/// reads `delta` as a failure probability, but its bound is loose: small
/// `delta` raises `R` and wastes symbols on degree one.
pub const DEFAULT_DELTA: f64 = 0.5;

/// Misuse of an LT code, or input that cannot belong to it.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum LtError {
    /// A code needs between 1 and [`MAX_SYMBOLS`] source symbols.
    #[error("k = {0} is out of range: expected 1..={MAX_SYMBOLS} source symbols")]
    InvalidSymbols(usize),
    /// The Robust Soliton constant `c` must be positive and finite.
    #[error("c = {0} is out of range: expected a finite c > 0")]
    InvalidC(f64),
    /// The Robust Soliton `delta` is a probability strictly between 0 and 1.
    #[error("delta = {0} is out of range: expected 0 < delta < 1")]
    InvalidDelta(f64),
    /// A coder and its degree distribution must agree on `k`.
    #[error("the distribution is over degrees 1..={distribution} but k = {symbols}: expected the same k")]
    DistributionMismatch { distribution: usize, symbols: usize },
    /// `k * symbol_bytes` must be addressable.
    #[error("k = {symbols} symbols of symbol_bytes = {symbol_bytes} overflow usize")]
    GenerationTooLarge { symbols: usize, symbol_bytes: usize },
    /// A coder allocates its `k` symbols when it is built, and the machine refused.
    #[error("out of memory: {bytes} bytes could not be allocated for k = {symbols} symbols of symbol_bytes = {symbol_bytes}")]
    OutOfMemory { bytes: usize, symbols: usize, symbol_bytes: usize },
    /// A payload or output buffer must be exactly one symbol long.
    #[error("payload has {got} bytes, expected symbol_bytes = {expected}")]
    PayloadLength { got: usize, expected: usize },
    /// The data given to an encoder must fit in its `k` symbols.
    #[error("data of {got} bytes does not fit k * symbol_bytes = {capacity} bytes")]
    DataTooLarge { got: usize, capacity: usize },
    /// A source symbol's index must be below `k`.
    #[error("source index {index} is out of range: expected below k = {symbols}")]
    SourceOutOfRange { index: usize, symbols: usize },
}

fn check_symbols(k: usize) -> Result<(), LtError> {
    if k == 0 || k > MAX_SYMBOLS {
        return Err(LtError::InvalidSymbols(k));
    }
    Ok(())
}

fn check_payload(payload: &[u8], expected: usize) -> Result<(), LtError> {
    if payload.len() != expected {
        return Err(LtError::PayloadLength { got: payload.len(), expected });
    }
    Ok(())
}

/// Checks a coder's shape and allocates its `k` symbols, zero: a size the
/// machine cannot hold is an error, not an abort.
fn allocate_code(k: usize, symbol_bytes: usize, dist: &Distribution) -> Result<Vec<u8>, LtError> {
    check_symbols(k)?;
    if dist.symbols() != k {
        return Err(LtError::DistributionMismatch { distribution: dist.symbols(), symbols: k });
    }
    let bytes = k.checked_mul(symbol_bytes).ok_or(LtError::GenerationTooLarge { symbols: k, symbol_bytes })?;
    alloc::try_zeroed(bytes).map_err(|r| LtError::OutOfMemory { bytes: r.bytes, symbols: k, symbol_bytes })
}

/// A degree distribution over `1..=k`.
///
/// Encoder and decoder must build it from the same parameters: it is sampled
/// by comparing a uniform number against the CDF, so the degree of a symbol
/// depends on the last bits of `ln` and `sqrt`. IEEE 754 makes `sqrt` exact;
/// `ln` from two libms may differ in its last bit, which moves a sample only if
/// the uniform draw falls within an ulp of a CDF step (probability ~2^-50).
#[derive(Clone, Debug, PartialEq)]
pub struct Distribution {
    /// `pmf[d - 1]` is the probability of degree `d`.
    pmf: Vec<f64>,
    /// `cdf[d - 1]` is the probability of a degree `<= d`; the last entry is exactly 1.
    cdf: Vec<f64>,
}

impl Distribution {
    /// The Ideal Soliton distribution, eq. (1). Peeling with it stalls often:
    /// its expected ripple is one symbol.
    pub fn ideal(k: usize) -> Result<Distribution, LtError> {
        check_symbols(k)?;
        Ok(Distribution::normalised((1..=k).map(|d| ideal_soliton(k, d)).collect()))
    }

    /// The Robust Soliton distribution, eqs. (2) and (3).
    pub fn robust(k: usize, c: f64, delta: f64) -> Result<Distribution, LtError> {
        check_symbols(k)?;
        if !(c > 0.0 && c.is_finite()) {
            return Err(LtError::InvalidC(c));
        }
        if !(delta > 0.0 && delta < 1.0) {
            return Err(LtError::InvalidDelta(delta));
        }
        let kf = k as f64;
        let r = c * (kf / delta).ln() * kf.sqrt();
        // `k as f64` is exact up to MAX_SYMBOLS, so the cast back cannot truncate.
        let spike = (kf / r).round().clamp(1.0, kf) as usize;
        let tau = |d: usize| match d.cmp(&spike) {
            std::cmp::Ordering::Less => r / (d as f64 * kf),
            std::cmp::Ordering::Equal => (r * (r / delta).ln() / kf).max(0.0),
            std::cmp::Ordering::Greater => 0.0,
        };
        Ok(Distribution::normalised((1..=k).map(|d| ideal_soliton(k, d) + tau(d)).collect()))
    }

    /// Divides `weights` (of degrees `1..=k`) by their sum, `beta` in eq. (3).
    fn normalised(weights: Vec<f64>) -> Distribution {
        let beta: f64 = weights.iter().sum();
        let mut running = 0.0;
        let mut cdf: Vec<f64> = weights
            .iter()
            .map(|w| {
                running += w;
                running / beta
            })
            .collect();
        if let Some(last) = cdf.last_mut() {
            *last = 1.0;
        }
        let pmf = weights.iter().map(|w| w / beta).collect();
        Distribution { pmf, cdf }
    }

    /// `k`: the largest degree.
    pub fn symbols(&self) -> usize {
        self.pmf.len()
    }

    /// The probability of degree `d`, zero outside `1..=k`.
    pub fn pmf(&self, d: usize) -> f64 {
        d.checked_sub(1).and_then(|i| self.pmf.get(i)).copied().unwrap_or(0.0)
    }

    /// The expected degree: the XORs an encoder spends per coded symbol.
    pub fn mean_degree(&self) -> f64 {
        self.pmf.iter().zip(1..).map(|(p, d)| p * d as f64).sum()
    }

    /// Draws a degree: the smallest `d` whose CDF exceeds one [`SplitMix64::unit_f64`].
    pub fn sample(&self, rng: &mut SplitMix64) -> usize {
        let u = rng.unit_f64();
        // The last CDF entry is exactly 1 > u, so the index stays below k.
        self.cdf.partition_point(|&p| p <= u) + 1
    }
}

fn ideal_soliton(k: usize, d: usize) -> f64 {
    if d == 1 {
        1.0 / k as f64
    } else {
        1.0 / (d as f64 * (d - 1) as f64)
    }
}

/// Writes into `out` the source symbols that coded symbol `esi` XORs together.
///
/// This is the wire format's definition of a coded symbol, with
/// `k = dist.symbols()`:
///
/// 1. `rng = SplitMix64::new(seed ^ esi as u64)`, as seeded RLNC coefficients
///    start from state `seed` (`docs/codec.md`): SplitMix64's output function
///    makes neighbouring states' streams unrelated.
/// 2. `d = dist.sample(&mut rng)`.
/// 3. Floyd's sampling of `d` distinct indices: for `j` in `k - d..k`, draw
///    `t = rng.below(j + 1)`; take `t` unless already taken, else take `j`.
///    `out` lists the indices in the order taken.
pub fn neighbours(dist: &Distribution, seed: u64, esi: u32, out: &mut Vec<u32>) {
    let k = dist.symbols();
    let mut rng = SplitMix64::new(seed ^ u64::from(esi));
    let d = dist.sample(&mut rng);
    out.clear();
    // Which set answers "already taken" does not change the result; a bitmap
    // keeps the rare high degrees (up to k) linear.
    let mut taken = if d > 64 { vec![false; k] } else { Vec::new() };
    for j in k - d..k {
        let t = rng.below(j as u64 + 1) as usize;
        let is_taken = if taken.is_empty() { out.contains(&(t as u32)) } else { taken[t] };
        let pick = if is_taken { j } else { t };
        if !taken.is_empty() {
            taken[pick] = true;
        }
        out.push(pick as u32);
    }
}

/// An LT encoder: an endless stream of coded symbols over `k` source symbols.
#[derive(Clone, Debug)]
pub struct Encoder {
    dist: Distribution,
    symbol_bytes: usize,
    seed: u64,
    /// `k x symbol_bytes`, zero until [`Encoder::set_symbols`].
    symbols: Vec<u8>,
}

impl Encoder {
    /// An encoder of `k` symbols of `symbol_bytes` bytes whose coded symbols
    /// are drawn from `dist` and `seed`; the decoder needs the same three.
    pub fn new(k: usize, symbol_bytes: usize, dist: Distribution, seed: u64) -> Result<Encoder, LtError> {
        let symbols = allocate_code(k, symbol_bytes, &dist)?;
        Ok(Encoder { dist, symbol_bytes, seed, symbols })
    }

    pub fn symbols(&self) -> usize {
        self.dist.symbols()
    }
    pub fn symbol_bytes(&self) -> usize {
        self.symbol_bytes
    }
    pub fn distribution(&self) -> &Distribution {
        &self.dist
    }

    /// Loads the source data, padding the last symbol with zeros (seed 004
    /// pads short segments the same way).
    pub fn set_symbols(&mut self, data: &[u8]) -> Result<(), LtError> {
        let capacity = self.symbols.len();
        if data.len() > capacity {
            return Err(LtError::DataTooLarge { got: data.len(), capacity });
        }
        self.symbols[..data.len()].copy_from_slice(data);
        self.symbols[data.len()..].fill(0);
        Ok(())
    }

    /// The source symbols that coded symbol `esi` combines.
    pub fn neighbours(&self, esi: u32) -> Vec<u32> {
        let mut out = Vec::new();
        neighbours(&self.dist, self.seed, esi, &mut out);
        out
    }

    /// Writes coded symbol `esi`, the XOR of its [`neighbours`], into `out`:
    /// one multi-row sum, which keeps a run of `out` in registers while it
    /// reads every neighbour, where a XOR per neighbour would load and
    /// store `out` again each time.
    pub fn encode(&self, esi: u32, out: &mut [u8]) -> Result<(), LtError> {
        check_payload(out, self.symbol_bytes)?;
        out.fill(0);
        let s = self.symbol_bytes;
        let rows = self.neighbours(esi).into_iter().map(|i| (1, &self.symbols[i as usize * s..][..s]));
        Field::GF2.symbol_axpy_sum(rows, out);
        Ok(())
    }
}

/// A received coded symbol that still covers two or more undecoded sources.
#[derive(Clone, Debug)]
struct Pending {
    /// How many of its sources are undecoded.
    unresolved: u32,
    /// The XOR of the indices of its undecoded sources: the one left once
    /// `unresolved == 1`, found without searching a list.
    unresolved_xor: u32,
    /// The coded payload with every decoded source XORed out.
    payload: Vec<u8>,
}

/// A peeling (belief-propagation) LT decoder, with inactivation decoding
/// for when peeling stalls ([`Decoder::solve_stalled`]).
///
/// Each decoded source is XORed out of the pending symbols that cover it,
/// found through a per-source index, so a decode costs the number of graph
/// edges rather than `k` times the number of pending symbols.
#[derive(Clone, Debug)]
pub struct Decoder {
    dist: Distribution,
    symbol_bytes: usize,
    seed: u64,
    fallback: bool,
    /// `k x symbol_bytes`, source `i` meaningful once `decoded[i]`.
    sources: Vec<u8>,
    decoded: Vec<bool>,
    order: Vec<u32>,
    by_elimination: usize,
    by_inactivation: usize,
    /// Whole-symbol XORs made so far ([`Decoder::symbol_xors`]).
    xors: usize,
    /// Slots of pending symbols; `None` is a free slot, listed in `free_slots`.
    pending: Vec<Option<Pending>>,
    free_slots: Vec<usize>,
    /// For each source, the slots of the pending symbols that cover it.
    covering: Vec<Vec<usize>>,
    /// Decoded sources not yet XORed out of the pending symbols.
    unsubstituted: Vec<u32>,
    /// Payload buffers of resolved symbols, reused to spare the allocator.
    spare: Vec<Vec<u8>>,
    scratch: Vec<u32>,
    received: usize,
    /// Symbols received when the last source was decoded.
    needed: Option<usize>,
    /// Sources given by `consume_source`.
    learnt: usize,
    /// How many symbols must be received (sources learnt elsewhere
    /// included) before an automatic solve could complete the code: `k`,
    /// then after each attempt that count plus the rank the attempt fell
    /// short by (a symbol adds at most one).
    elimination_due: usize,
    /// After an automatic solve that fell short of full rank, the rank of
    /// what has been received since, kept from its plan: the next solve
    /// waits until it is full.
    rank: Option<Rank>,
}

impl Decoder {
    /// A decoder matching `Encoder::new(k, symbol_bytes, dist, seed)`.
    /// `symbol_bytes == 0` tracks the graph only, for simulation.
    pub fn new(k: usize, symbol_bytes: usize, dist: Distribution, seed: u64) -> Result<Decoder, LtError> {
        let sources = allocate_code(k, symbol_bytes, &dist)?;
        Ok(Decoder::checked(dist, symbol_bytes, seed, sources))
    }

    /// [`Decoder::new`] once `allocate_code` has made `sources`.
    fn checked(dist: Distribution, symbol_bytes: usize, seed: u64, sources: Vec<u8>) -> Decoder {
        let k = dist.symbols();
        Decoder {
            dist,
            symbol_bytes,
            seed,
            fallback: false,
            sources,
            decoded: vec![false; k],
            order: Vec::with_capacity(k),
            by_elimination: 0,
            by_inactivation: 0,
            xors: 0,
            pending: Vec::new(),
            free_slots: Vec::new(),
            covering: vec![Vec::new(); k],
            unsubstituted: Vec::new(),
            spare: Vec::new(),
            scratch: Vec::new(),
            received: 0,
            needed: None,
            learnt: 0,
            elimination_due: k,
            rank: None,
        }
    }

    /// Whether [`Decoder::consume`] (and [`Decoder::consume_source`]) solves
    /// a stalled graph by itself when that could complete the code: at least
    /// `k` symbols received or sources learnt, as many pending symbols as
    /// undecoded sources, and, after an attempt that fell short of full rank,
    /// once the symbols since have made it full (the attempt's plan keeps the
    /// rank, a few word operations a symbol). Completion is detected on the
    /// very symbol that allows it. Such a solve decodes only when it completes
    /// the code: sources that a short rank already determines are left to
    /// peeling or to a call of [`Decoder::solve_stalled`], which would pay
    /// the payload work of a solve again at the next. Off by default: plain
    /// LT, as seed 004 decodes.
    pub fn set_fallback(&mut self, enabled: bool) {
        self.fallback = enabled;
    }

    pub fn symbols(&self) -> usize {
        self.decoded.len()
    }
    pub fn symbol_bytes(&self) -> usize {
        self.symbol_bytes
    }
    pub fn is_complete(&self) -> bool {
        self.order.len() == self.decoded.len()
    }
    pub fn decoded_count(&self) -> usize {
        self.order.len()
    }
    pub fn is_symbol_decoded(&self, index: usize) -> bool {
        self.decoded.get(index).copied().unwrap_or(false)
    }
    /// Decoded source symbol `index`; empty in a virtual decoder.
    pub fn symbol(&self, index: usize) -> Option<&[u8]> {
        self.is_symbol_decoded(index).then(|| self.source(index as u32))
    }
    /// All `k` symbols, in order and with the encoder's padding, once complete.
    pub fn data(&self) -> Option<&[u8]> {
        self.is_complete().then_some(self.sources.as_slice())
    }
    /// Coded symbols consumed, the ones after completion excepted.
    pub fn symbols_received(&self) -> usize {
        self.received
    }
    /// Source indices in the order they were decoded: TCP-Forward acknowledges
    /// each segment as it is decoded, out of sequence order. A solve of a
    /// stalled graph appends the inactivated sources it decodes, in the order
    /// they were inactivated, then the peeled ones, in the order they peeled.
    pub fn decode_order(&self) -> &[u32] {
        &self.order
    }
    /// How many sources the solves of stalled graphs decoded
    /// ([`Decoder::solve_stalled`], inactivation and elimination) rather than
    /// peeling as symbols arrived: the entries of [`Decoder::decode_order`]
    /// that each solve appended.
    pub fn decoded_by_elimination(&self) -> usize {
        self.by_elimination
    }
    /// How many of [`Decoder::decoded_by_elimination`] the dense system
    /// decoded: sources that were inactivated, rather than peeled past a
    /// stall. The system is that large; about 35 to 45 at `k = 1000`.
    pub fn decoded_by_inactivation(&self) -> usize {
        self.by_inactivation
    }
    /// Whole-symbol XORs made so far: the work of decoding. Each decoded
    /// source summed into an arriving symbol or XORed into a pending one
    /// counts one, as does each term of a sum and each set coefficient of a
    /// GF(2) product in a solve (products run several times faster per
    /// coefficient than XORs one at a time). Zero in a virtual decoder.
    pub fn symbol_xors(&self) -> usize {
        self.xors
    }
    /// Received coded symbols kept for later because they cover two or more
    /// undecoded sources.
    pub fn pending_symbols(&self) -> usize {
        self.pending.len() - self.free_slots.len()
    }
    /// `received / k - 1` once complete: the fraction of extra symbols the
    /// code needed beyond an ideal erasure code.
    pub fn overhead(&self) -> Option<f64> {
        self.needed.map(|n| n as f64 / self.symbols() as f64 - 1.0)
    }

    fn source(&self, index: u32) -> &[u8] {
        let s = self.symbol_bytes;
        &self.sources[index as usize * s..(index as usize + 1) * s]
    }

    /// Adds coded symbol `esi`.
    ///
    /// `Innovative` means it decoded a source or was kept for later;
    /// `NotInnovative` means every source it covers was already decoded (or
    /// the decoder is complete). Peeling cannot tell whether a kept symbol is
    /// a combination of others, so a repeated ESI is kept again, harmlessly.
    pub fn consume(&mut self, esi: u32, payload: &[u8]) -> Result<Received, LtError> {
        check_payload(payload, self.symbol_bytes)?;
        if self.is_complete() {
            return Ok(Received::NotInnovative);
        }
        self.received += 1;
        // A new buffer is a copy, not zeroed and then overwritten.
        let mut reduced = match self.spare.pop() {
            Some(mut spare) => {
                spare.copy_from_slice(payload);
                spare
            }
            None => payload.to_vec(),
        };
        let mut sources = mem::take(&mut self.scratch);
        neighbours(&self.dist, self.seed, esi, &mut sources);
        if let Some(rank) = &mut self.rank {
            rank.add(&sources);
        }
        let (mut unresolved, mut unresolved_xor) = (0, 0);
        for &i in sources.iter().filter(|&&i| !self.decoded[i as usize]) {
            unresolved += 1;
            unresolved_xor ^= i;
        }
        let known = sources.iter().filter(|&&i| self.decoded[i as usize]).map(|&i| (1, self.source(i)));
        Field::GF2.symbol_axpy_sum(known, &mut reduced);
        if self.symbol_bytes > 0 {
            self.xors += sources.len() - unresolved as usize;
        }
        let outcome = match unresolved {
            0 => {
                self.spare.push(reduced);
                Received::NotInnovative
            }
            1 => {
                self.mark_decoded(unresolved_xor, &reduced);
                self.spare.push(reduced);
                self.peel();
                Received::Innovative
            }
            _ => {
                let slot = self.free_slots.pop().unwrap_or(self.pending.len());
                let symbol = Pending { unresolved, unresolved_xor, payload: reduced };
                match self.pending.get_mut(slot) {
                    Some(free) => *free = Some(symbol),
                    None => self.pending.push(Some(symbol)),
                }
                for &i in sources.iter().filter(|&&i| !self.decoded[i as usize]) {
                    self.covering[i as usize].push(slot);
                }
                Received::Innovative
            }
        };
        self.scratch = sources;
        Ok(self.settle(outcome))
    }

    /// Adds source symbol `index`, learnt elsewhere: TCP-Forward's windows
    /// overlap, and a segment one window decodes is known to the next. It is
    /// XORed out of the pending symbols as a decoded source is, which may
    /// decode others. It is not a coded symbol, so `symbols_received` does
    /// not count it.
    pub fn consume_source(&mut self, index: usize, payload: &[u8]) -> Result<Received, LtError> {
        if index >= self.symbols() {
            return Err(LtError::SourceOutOfRange { index, symbols: self.symbols() });
        }
        check_payload(payload, self.symbol_bytes)?;
        if self.decoded[index] {
            return Ok(Received::NotInnovative);
        }
        self.learnt += 1;
        if let Some(rank) = &mut self.rank {
            rank.add(&[index as u32]);
        }
        self.mark_decoded(index as u32, payload);
        self.peel();
        Ok(self.settle(Received::Innovative))
    }

    /// Runs the automatic solve if it is due, and reports completion.
    fn settle(&mut self, outcome: Received) -> Received {
        let undecoded = self.symbols() - self.decoded_count();
        if self.fallback
            && undecoded > 0
            && self.received + self.learnt >= self.elimination_due
            && self.pending_symbols() >= undecoded
            && self.rank.as_ref().is_none_or(Rank::is_full)
        {
            self.solve(false);
        }
        if self.is_complete() {
            self.needed.get_or_insert(self.received);
            return Received::Complete;
        }
        outcome
    }

    fn mark_decoded(&mut self, index: u32, payload: &[u8]) {
        let s = self.symbol_bytes;
        let i = index as usize;
        self.sources[i * s..(i + 1) * s].copy_from_slice(payload);
        self.decoded[i] = true;
        self.order.push(index);
        self.unsubstituted.push(index);
    }

    /// XORs decoded sources out of the pending symbols that cover them,
    /// decoding the sources of those left with one, until none is left to do.
    /// Each source is XORed into all the symbols covering it in one fan-out,
    /// which reads it once for all of them.
    fn peel(&mut self) {
        let s = self.symbol_bytes;
        let mut sorted = Vec::new();
        while let Some(source) = self.unsubstituted.pop() {
            let i = source as usize;
            let slots = mem::take(&mut self.covering[i]);
            if s > 0 {
                // Slots resolved since they were indexed are skipped.
                sorted.clear();
                sorted.extend(slots.iter().copied().filter(|&slot| self.pending[slot].is_some()));
                sorted.sort_unstable();
                let payloads = slots_mut(&mut self.pending, &sorted).map(|p| (1, p.payload.as_mut_slice()));
                Field::GF2.symbol_axpy_fanout(&self.sources[i * s..(i + 1) * s], payloads);
                self.xors += sorted.len();
            }
            for slot in slots {
                let Some(symbol) = &mut self.pending[slot] else {
                    continue; // resolved since it was indexed
                };
                symbol.unresolved -= 1;
                symbol.unresolved_xor ^= source;
                if symbol.unresolved > 1 {
                    continue;
                }
                let Some(symbol) = self.pending[slot].take() else { continue };
                self.free_slots.push(slot);
                // Its last source may be decoded already, waiting in `unsubstituted`.
                let last = symbol.unresolved_xor;
                if symbol.unresolved == 1 && !self.decoded[last as usize] {
                    self.mark_decoded(last, &symbol.payload);
                }
                self.spare.push(symbol.payload);
            }
        }
    }

    /// Decodes what the received symbols determine but peeling cannot reach,
    /// by inactivation decoding. Returns whether any source was decoded.
    ///
    /// Peeling the stalled graph goes on past each stall by *inactivating*
    /// a source: it is carried as an unknown, each peeled source keeping a
    /// GF(2) bit vector of the inactivated ones it depends on, so the graph
    /// peels to the end. The symbols left over then give a small dense
    /// system over the inactivated sources alone (35 of the 689 sources left
    /// at `k = 1000` in the benchmark's code, where elimination on all 689
    /// would be cubic in them), solved by Gauss-Jordan elimination, and the
    /// solution is substituted back into the peeled sources. All of this runs
    /// on bit vectors first; payloads are combined only once the plan is
    /// known, each written a few times, and the dense parts as GF(2) matrix
    /// products. A source is decoded when the received symbols determine it,
    /// whether or not the whole code is. Each call starts from the pending
    /// symbols anew, at `O(e + i^2 (i + m) / 64)` word operations for `e`
    /// edges, `i` inactivated sources and `m` symbols left over. Does nothing
    /// if more than [`rlnc::MAX_SYMBOLS`] sources would be inactivated.
    pub fn solve_stalled(&mut self) -> bool {
        self.solve(true)
    }

    /// [`Decoder::solve_stalled`]; if `partial` is false, sources are
    /// decoded only if all of them are.
    fn solve(&mut self, partial: bool) -> bool {
        if self.is_complete() || self.pending_symbols() == 0 {
            return false;
        }
        self.rank = None;
        let Some(plan) = Plan::new(self) else { return false };
        let dense = Dense::new(&plan);
        self.elimination_due = self.received + self.learnt + plan.inactive.len() - dense.rank();
        let complete = dense.rank() == plan.inactive.len();
        if !complete {
            // The plan stays valid as symbols arrive and sources decode: each
            // adds one equation over its inactivated sources.
            self.rank = Some(Rank::new(&plan, &dense, self.symbols()));
            if !partial {
                return false;
            }
        }
        // Which sources the symbols determine: an inactivated one if its
        // reduced row is a unit vector, a peeled one if its dependency on
        // the inactivated ones lies in the row space of the dense system.
        let inactive: Vec<usize> =
            (0..plan.inactive.len()).filter(|&c| complete || dense.determines_inactive(c)).collect();
        let peeled: Vec<usize> =
            (0..plan.peeled.len()).filter(|&j| complete || dense.determines(plan.depends(j))).collect();
        if inactive.is_empty() && peeled.is_empty() {
            return false;
        }
        if self.symbol_bytes > 0 {
            self.substitute(&plan, &dense, &inactive, &peeled);
        }
        let decoded: Vec<u32> = inactive
            .iter()
            .map(|&c| plan.inactive[c])
            .chain(peeled.iter().map(|&j| plan.peeled[j].0))
            .map(|c| plan.columns[c as usize])
            .collect();
        for &i in &decoded {
            self.decoded[i as usize] = true;
            self.order.push(i);
        }
        self.by_elimination += decoded.len();
        self.by_inactivation += inactive.len();
        if self.is_complete() {
            // Every pending symbol is resolved: dropped, not XORed into.
            self.pending.clear();
            self.free_slots.clear();
            plan.columns.iter().for_each(|&i| self.covering[i as usize].clear());
        } else {
            self.unsubstituted.extend(decoded);
            self.peel();
        }
        true
    }

    /// Computes the payloads of the `inactive` and `peeled` sources of
    /// `plan` that `dense` determines (indices into `plan.inactive` and
    /// `plan.peeled`) into `self.sources`.
    ///
    /// 1. Each peeled source, in peeling order, as if every inactivated
    ///    source were zero: its defining symbol XOR the sources peeled
    ///    before it that the symbol covers, one multi-row sum each.
    /// 2. The same for the left-over symbols the dense system combines.
    /// 3. The dense system's right-hand sides: one GF(2) product.
    /// 4. The inactivated sources' share of each peeled source: one more.
    ///
    /// Sources undetermined in a partial solve are written too (as
    /// intermediate values); they are not marked decoded.
    fn substitute(&mut self, plan: &Plan, dense: &Dense, inactive: &[usize], peeled: &[usize]) {
        let s = self.symbol_bytes;
        let payload = |row: u32| &self.pending[plan.rows[row as usize]].as_ref().expect("a pending row").payload;
        let mut xors = 0;
        for &(c, row) in &plan.peeled {
            let target = plan.columns[c as usize] as usize;
            let (before, rest) = self.sources.split_at_mut(target * s);
            let (out, after) = rest.split_at_mut(s);
            out.copy_from_slice(payload(row));
            let terms = plan.row(row).iter().filter(|&&c2| c2 != c && plan.is_peeled(c2)).map(|&c2| {
                xors += 1;
                let i = plan.columns[c2 as usize] as usize;
                let x = if i < target { &before[i * s..][..s] } else { &after[(i - target - 1) * s..][..s] };
                (1, x)
            });
            Field::GF2.symbol_axpy_sum(terms, out);
        }
        // The left-over symbols that the pivot rows combine.
        let used = dense.used_rows();
        let mut sums: Vec<Vec<u8>> = used
            .iter()
            .map(|&t| {
                let row = plan.leftover[t];
                let mut out = payload(row).clone();
                let terms = plan
                    .row(row)
                    .iter()
                    .filter(|&&c| plan.is_peeled(c))
                    .inspect(|_| xors += 1)
                    .map(|&c| (1, &self.sources[plan.columns[c as usize] as usize * s..][..s]));
                Field::GF2.symbol_axpy_sum(terms, &mut out);
                out
            })
            .collect();
        // Right-hand sides of the reduced rows: values of the pivots' rows.
        let rank = dense.rank();
        let mut values = vec![vec![0u8; s]; rank];
        {
            let a = dense.transform(&used);
            xors += a.iter().filter(|&&c| c != 0).count();
            let xs: Vec<&[u8]> = sums.iter().map(Vec::as_slice).collect();
            let mut ys: Vec<&mut [u8]> = values.iter_mut().map(Vec::as_mut_slice).collect();
            Field::GF2.symbol_matmul_into(&a, &xs, &mut ys);
        }
        sums.clear();
        for &c in inactive {
            let i = plan.columns[plan.inactive[c] as usize] as usize;
            let p = dense.pivot(c).expect("a determined source has a pivot");
            self.sources[i * s..][..s].copy_from_slice(&values[p]);
        }
        // x_p += sum over the pivots in its dependency of their values.
        let mut a = Vec::new();
        let mut targets = vec![false; self.symbols()];
        for &j in peeled {
            let depends = plan.depends(j);
            if depends.iter().any(|&w| w != 0) {
                targets[plan.columns[plan.peeled[j].0 as usize] as usize] = true;
            }
        }
        // Rows in source order, as `chunks_exact_mut` yields them.
        let mut rows_of = vec![usize::MAX; self.symbols()];
        for (j, &(c, _)) in plan.peeled.iter().enumerate() {
            rows_of[plan.columns[c as usize] as usize] = j;
        }
        let mut ys: Vec<&mut [u8]> = Vec::new();
        for (i, chunk) in self.sources.chunks_exact_mut(s).enumerate() {
            if targets[i] {
                let depends = plan.depends(rows_of[i]);
                a.extend((0..rank).map(|p| u8::from(bit(depends, dense.column(p)))));
                ys.push(chunk);
            }
        }
        let xs: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
        Field::GF2.symbol_matmul(&a, &xs, &mut ys);
        self.xors += xors + a.iter().filter(|&&c| c != 0).count();
    }
}

/// The rank of the received symbols, kept from a [`Plan`] that fell short:
/// each later symbol over the plan's sources is a sum of their values, each
/// a known payload plus a vector over the inactivated ones, so it raises the
/// rank exactly when the sum of those vectors is independent of the rows
/// the plan's dense system had and of the symbols since.
#[derive(Clone, Debug)]
struct Rank {
    /// The plan's column of each source (`u32::MAX` if decoded before it).
    column_of: Vec<u32>,
    fate: Vec<Fate>,
    words: usize,
    depends: Vec<u64>,
    /// Rows in reduced row echelon form, `words` each, and their pivot columns.
    rows: Vec<u64>,
    pivots: Vec<usize>,
    /// Columns of the dense system: the rank at which the code is complete.
    inactive: usize,
    scratch: Vec<u64>,
}

impl Rank {
    fn new(plan: &Plan, dense: &Dense, k: usize) -> Rank {
        let mut column_of = vec![u32::MAX; k];
        for (c, &i) in (0..).zip(&plan.columns) {
            column_of[i as usize] = c;
        }
        let words = plan.words;
        let rows = (0..dense.rank()).flat_map(|p| dense.row(p)[..words].iter().copied()).collect();
        Rank {
            column_of,
            fate: plan.fate.clone(),
            words,
            depends: plan.depends.clone(),
            rows,
            pivots: dense.pivot_columns.clone(),
            inactive: plan.inactive.len(),
            scratch: vec![0; words],
        }
    }

    fn is_full(&self) -> bool {
        self.pivots.len() == self.inactive
    }

    /// Adds the equation that XORs `sources` together.
    fn add(&mut self, sources: &[u32]) {
        let words = self.words;
        let mut v = mem::take(&mut self.scratch);
        v.fill(0);
        for &i in sources {
            match self.fate.get(self.column_of[i as usize] as usize) {
                Some(&Fate::Inactive(c)) => flip(&mut v, c as usize),
                Some(&Fate::Peeled(j)) => {
                    let j = j as usize * words;
                    v.iter_mut().zip(&self.depends[j..j + words]).for_each(|(a, b)| *a ^= b);
                }
                _ => {} // decoded before the plan, a known term
            }
        }
        for (row, &c) in self.rows.chunks_exact(words.max(1)).zip(&self.pivots) {
            if bit(&v, c) {
                v.iter_mut().zip(row).for_each(|(a, b)| *a ^= b);
            }
        }
        if let Some(c) = (0..words).find(|&w| v[w] != 0).map(|w| w * 64 + v[w].trailing_zeros() as usize) {
            // Clears the new pivot from the other rows, keeping them reduced.
            for row in self.rows.chunks_exact_mut(words) {
                if bit(row, c) {
                    row.iter_mut().zip(&v).for_each(|(a, b)| *a ^= b);
                }
            }
            self.rows.extend_from_slice(&v);
            self.pivots.push(c);
        }
        self.scratch = v;
    }
}

/// Whether bit `i` of `words` is set.
fn bit(words: &[u64], i: usize) -> bool {
    words[i / 64] >> (i % 64) & 1 != 0
}

fn flip(words: &mut [u64], i: usize) {
    words[i / 64] ^= 1 << (i % 64);
}

/// Where a column of a [`Plan`] ended.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Fate {
    Unresolved,
    /// The `j`-th peeled.
    Peeled(u32),
    /// The `c`-th inactivated: column `c` of the dense system.
    Inactive(u32),
}

/// The stalled graph of a decoder (its undecoded sources, the *columns*, and
/// its pending symbols, the *rows*) peeled with inactivation, on bit
/// vectors alone.
struct Plan {
    /// The source of each column.
    columns: Vec<u32>,
    /// The pending slot of each row.
    rows: Vec<usize>,
    /// The columns of row `r` are `row_columns[row_start[r]..row_start[r + 1]]`.
    row_start: Vec<usize>,
    row_columns: Vec<u32>,
    fate: Vec<Fate>,
    /// Columns in peeling order, each with the row that defined it.
    peeled: Vec<(u32, u32)>,
    /// Columns in inactivation order.
    inactive: Vec<u32>,
    /// Rows that defined no column.
    leftover: Vec<u32>,
    /// Words of a bit vector over the inactivated columns.
    words: usize,
    /// For each peeled column, in order, the inactivated columns its value
    /// depends on: the sum of the vectors of the inactivated and peeled
    /// columns its row covers besides itself.
    depends: Vec<u64>,
}

impl Plan {
    /// Peels `decoder`'s stalled graph, inactivating a column at each stall,
    /// until every column is resolved; `None` if more than
    /// [`rlnc::MAX_SYMBOLS`] columns would be inactivated.
    ///
    /// The column inactivated is the unresolved one covered by the most rows
    /// of two unresolved columns, each of which it turns into a row of one,
    /// so that peeling restarts at once; ties go to the column covered by
    /// the most rows. Over 40 codes at `k = 1000`, each at the symbol of full
    /// rank, this inactivated 44.9 columns on average where taking the column
    /// covered by the most rows inactivated 50.4 (and taking it from a row of
    /// fewest unresolved columns 49.2), and each peeled column depended on
    /// 6.4 inactivated ones, against 7.6 (7.5).
    fn new(decoder: &Decoder) -> Option<Plan> {
        let k = decoder.symbols();
        let columns: Vec<u32> = (0..k as u32).filter(|&i| !decoder.decoded[i as usize]).collect();
        let rows: Vec<usize> = (0..decoder.pending.len()).filter(|&slot| decoder.pending[slot].is_some()).collect();
        let mut row_of_slot = vec![u32::MAX; decoder.pending.len()];
        for (r, &slot) in (0..).zip(&rows) {
            row_of_slot[slot] = r;
        }
        // Columns' rows from the per-source index, then their transpose.
        let mut column_start = Vec::with_capacity(columns.len() + 1);
        let mut column_rows: Vec<u32> = Vec::new();
        column_start.push(0);
        for &i in &columns {
            column_rows.extend(decoder.covering[i as usize].iter().map(|&slot| row_of_slot[slot]));
            column_start.push(column_rows.len());
        }
        debug_assert!(column_rows.iter().all(|&r| r != u32::MAX), "the index lists pending symbols only");
        let mut row_start = vec![0; rows.len() + 1];
        column_rows.iter().for_each(|&r| row_start[r as usize + 1] += 1);
        for r in 0..rows.len() {
            row_start[r + 1] += row_start[r];
        }
        let mut fill = row_start.clone();
        let mut row_columns = vec![0; column_rows.len()];
        for c in 0..columns.len() {
            for &r in &column_rows[column_start[c]..column_start[c + 1]] {
                row_columns[fill[r as usize]] = c as u32;
                fill[r as usize] += 1;
            }
        }
        let mut plan = Plan {
            columns,
            rows,
            row_start,
            row_columns,
            fate: Vec::new(),
            peeled: Vec::new(),
            inactive: Vec::new(),
            leftover: Vec::new(),
            words: 0,
            depends: Vec::new(),
        };
        plan.peel(&column_start, &column_rows)?;
        plan.dependencies();
        Some(plan)
    }

    fn row(&self, r: u32) -> &[u32] {
        &self.row_columns[self.row_start[r as usize]..self.row_start[r as usize + 1]]
    }

    fn is_peeled(&self, c: u32) -> bool {
        matches!(self.fate[c as usize], Fate::Peeled(_))
    }

    /// The dependency vector of the `j`-th peeled column.
    fn depends(&self, j: usize) -> &[u64] {
        &self.depends[j * self.words..(j + 1) * self.words]
    }

    /// Resolves every column, filling `fate`, `peeled`, `inactive` and `leftover`.
    fn peel(&mut self, column_start: &[usize], column_rows: &[u32]) -> Option<()> {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let (n_columns, n_rows) = (self.columns.len(), self.rows.len());
        let covered = |c: usize| (column_start[c + 1] - column_start[c]) as u32;
        let mut degree: Vec<u32> = (0..n_rows).map(|r| (self.row_start[r + 1] - self.row_start[r]) as u32).collect();
        let mut xor: Vec<u32> = (0..n_rows as u32).map(|r| self.row(r).iter().fold(0, |x, &c| x ^ c)).collect();
        // Rows of two unresolved columns covering each column.
        let mut pairs = vec![0u32; n_columns];
        for r in (0..n_rows).filter(|&r| degree[r] == 2) {
            self.row(r as u32).iter().for_each(|&c| pairs[c as usize] += 1);
        }
        // Candidates for inactivation, best last; an entry is current while
        // its count of pairs is.
        let mut candidates: BinaryHeap<(u32, u32, Reverse<u32>)> =
            (0..n_columns).map(|c| (pairs[c], covered(c), Reverse(c as u32))).collect();
        let mut ripple: Vec<u32> = (0..n_rows as u32).filter(|&r| degree[r as usize] == 1).collect();
        let mut defines = vec![false; n_rows];
        self.fate = vec![Fate::Unresolved; n_columns];
        let mut resolved = 0;
        while resolved < n_columns {
            let c = if let Some(r) = ripple.pop() {
                if degree[r as usize] != 1 {
                    continue; // its last column was resolved by another row
                }
                let c = xor[r as usize];
                self.fate[c as usize] = Fate::Peeled(self.peeled.len() as u32);
                self.peeled.push((c, r));
                defines[r as usize] = true;
                c
            } else {
                let c = loop {
                    let (count, _, Reverse(c)) = candidates.pop().expect("every unresolved column is a candidate");
                    if self.fate[c as usize] == Fate::Unresolved && count == pairs[c as usize] {
                        break c;
                    }
                };
                if self.inactive.len() == rlnc::MAX_SYMBOLS {
                    return None;
                }
                self.fate[c as usize] = Fate::Inactive(self.inactive.len() as u32);
                self.inactive.push(c);
                c
            };
            resolved += 1;
            for &r in &column_rows[column_start[c as usize]..column_start[c as usize + 1]] {
                let r = r as usize;
                degree[r] -= 1;
                xor[r] ^= c;
                match degree[r] {
                    // Its last column is peeled before the next stall.
                    1 => ripple.push(r as u32),
                    2 => {
                        let (start, end) = (self.row_start[r], self.row_start[r + 1]);
                        for &c2 in &self.row_columns[start..end] {
                            if self.fate[c2 as usize] == Fate::Unresolved {
                                pairs[c2 as usize] += 1;
                                candidates.push((pairs[c2 as usize], covered(c2 as usize), Reverse(c2)));
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        self.leftover = (0..n_rows as u32).filter(|&r| !defines[r as usize]).collect();
        Some(())
    }

    /// Fills `depends`, in peeling order.
    fn dependencies(&mut self) {
        let words = self.inactive.len().div_ceil(64);
        self.words = words;
        let mut depends = vec![0u64; self.peeled.len() * words];
        for (j, &(c, r)) in self.peeled.iter().enumerate() {
            let (done, rest) = depends.split_at_mut(j * words);
            let v = &mut rest[..words];
            for &c2 in self.row(r).iter().filter(|&&c2| c2 != c) {
                self.add_column(c2, done, v);
            }
        }
        self.depends = depends;
    }

    /// Adds column `c`'s vector over the inactivated columns to `v`, given
    /// the vectors of the peeled columns `done` so far.
    fn add_column(&self, c: u32, done: &[u64], v: &mut [u64]) {
        match self.fate[c as usize] {
            Fate::Inactive(i) => flip(v, i as usize),
            Fate::Peeled(p) => {
                let p = p as usize * self.words;
                v.iter_mut().zip(&done[p..p + self.words]).for_each(|(a, b)| *a ^= b);
            }
            Fate::Unresolved => unreachable!("every column is resolved"),
        }
    }
}

/// The left-over rows of a [`Plan`] as equations over its inactivated
/// columns, in reduced row echelon form, each beside the combination of
/// left-over rows it is.
struct Dense {
    /// Words of a row's coefficients, and of its combination.
    words: usize,
    combination_words: usize,
    /// `rank` reduced rows, then the rows that reduced to zero.
    rows: Vec<u64>,
    /// The column of each of the first `rank` rows.
    pivot_columns: Vec<usize>,
    /// The row whose pivot is column `c`.
    pivot_rows: Vec<Option<usize>>,
}

impl Dense {
    fn new(plan: &Plan) -> Dense {
        let (words, m) = (plan.words, plan.leftover.len());
        let combination_words = m.div_ceil(64);
        let width = words + combination_words;
        let mut rows = vec![0u64; m * width];
        for (t, &r) in plan.leftover.iter().enumerate() {
            let row = &mut rows[t * width..(t + 1) * width];
            let (coefficients, combination) = row.split_at_mut(words);
            for &c in plan.row(r) {
                plan.add_column(c, &plan.depends, coefficients);
            }
            flip(combination, t);
        }
        let mut dense = Dense { words, combination_words, rows, pivot_columns: Vec::new(), pivot_rows: Vec::new() };
        dense.reduce(plan.inactive.len(), m);
        dense
    }

    fn width(&self) -> usize {
        self.words + self.combination_words
    }

    fn row(&self, t: usize) -> &[u64] {
        &self.rows[t * self.width()..(t + 1) * self.width()]
    }

    /// Gauss-Jordan elimination of the `m` rows over `n` columns.
    fn reduce(&mut self, n: usize, m: usize) {
        let width = self.width();
        self.pivot_rows = vec![None; n];
        for c in 0..n {
            let rank = self.pivot_columns.len();
            let Some(t) = (rank..m).find(|&t| bit(&self.rows[t * width..], c)) else { continue };
            for w in 0..width {
                self.rows.swap(rank * width + w, t * width + w);
            }
            let (above, rest) = self.rows.split_at_mut(rank * width);
            let (pivot, below) = rest.split_at_mut(width);
            for row in above.chunks_exact_mut(width).chain(below.chunks_exact_mut(width)) {
                if bit(row, c) {
                    row.iter_mut().zip(pivot.iter()).for_each(|(a, b)| *a ^= b);
                }
            }
            self.pivot_rows[c] = Some(rank);
            self.pivot_columns.push(c);
        }
    }

    fn rank(&self) -> usize {
        self.pivot_columns.len()
    }

    /// The column of reduced row `p`.
    fn column(&self, p: usize) -> usize {
        self.pivot_columns[p]
    }

    fn pivot(&self, c: usize) -> Option<usize> {
        self.pivot_rows[c]
    }

    /// Whether inactivated column `c` is determined: its reduced row is a unit vector.
    fn determines_inactive(&self, c: usize) -> bool {
        self.pivot_rows[c].is_some_and(|p| {
            let row = &self.row(p)[..self.words];
            row.iter().enumerate().all(|(w, &x)| x == if w == c / 64 { 1 << (c % 64) } else { 0 })
        })
    }

    /// Whether `v` (over the inactivated columns) is a sum of reduced rows.
    /// In reduced form each pivot column is set in its own row alone, so the
    /// rows are those of the pivots set in `v`.
    fn determines(&self, v: &[u64]) -> bool {
        let mut rest = v.to_vec();
        for (p, &c) in self.pivot_columns.iter().enumerate() {
            if bit(v, c) {
                rest.iter_mut().zip(&self.row(p)[..self.words]).for_each(|(a, b)| *a ^= b);
            }
        }
        rest.iter().all(|&w| w == 0)
    }

    /// The left-over rows (indices into `Plan::leftover`) that the reduced
    /// rows combine, ascending.
    fn used_rows(&self) -> Vec<usize> {
        let mut any = vec![0u64; self.combination_words];
        for p in 0..self.rank() {
            any.iter_mut().zip(&self.row(p)[self.words..]).for_each(|(a, b)| *a |= b);
        }
        (0..any.len() * 64).filter(|&t| bit(&any, t)).collect()
    }

    /// The `rank x used.len()` matrix, a coefficient a byte, that gives
    /// the reduced rows' right-hand sides from the `used` left-over rows'.
    fn transform(&self, used: &[usize]) -> Vec<u8> {
        (0..self.rank()).flat_map(|p| used.iter().map(move |&t| u8::from(bit(&self.row(p)[self.words..], t)))).collect()
    }
}

/// The pending symbols in `slots` (ascending, distinct, all occupied),
/// borrowed together.
fn slots_mut<'a>(pending: &'a mut [Option<Pending>], slots: &'a [usize]) -> impl Iterator<Item = &'a mut Pending> {
    let mut rest = pending;
    let mut next = 0;
    slots.iter().map(move |&slot| {
        let tail = mem::take(&mut rest).split_at_mut(slot - next).1;
        let (symbol, tail) = tail.split_first_mut().expect("the slot exists");
        rest = tail;
        next = slot + 1;
        symbol.as_mut().expect("the slot is occupied")
    })
}

/// The coded symbols a virtual [`Decoder`] needed to complete, in each of
/// `trials` independent codes (seeds drawn from `seed`). Losses need no
/// simulation: an erasure channel delivers i.i.d. symbols just the same.
pub fn overhead_trials(dist: &Distribution, trials: usize, seed: u64, fallback: bool) -> Vec<usize> {
    let mut seeds = SplitMix64::new(seed);
    (0..trials)
        .map(|_| {
            // A distribution is always a valid code over its own k, and
            // virtual sources take no bytes.
            let mut decoder = Decoder::checked(dist.clone(), 0, seeds.next_u64(), Vec::new());
            decoder.set_fallback(fallback);
            let mut esis = 0..=u32::MAX;
            while !decoder.is_complete() {
                let Some(esi) = esis.next() else { break };
                let _ = decoder.consume(esi, &[]);
            }
            decoder.symbols_received()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn assert_close(got: f64, expected: f64, tolerance: f64) {
        assert!((got - expected).abs() <= tolerance, "got {got}, expected {expected}");
    }

    #[test]
    fn ideal_soliton_is_eq_1() {
        let k = 50;
        let dist = Distribution::ideal(k).unwrap();
        assert_close(dist.pmf(1), 1.0 / 50.0, 1e-15);
        for d in 2..=k {
            assert_close(dist.pmf(d), 1.0 / (d * (d - 1)) as f64, 1e-15);
        }
        assert_eq!((dist.pmf(0), dist.pmf(k + 1)), (0.0, 0.0));
        // sum_d d rho(d) = 1/k + sum_{d=2}^{k} 1/(d-1) = 1/k + H(k-1).
        let harmonic: f64 = (1..k).map(|i| 1.0 / i as f64).sum();
        assert_close(dist.mean_degree(), 1.0 / k as f64 + harmonic, 1e-12);
    }

    #[test]
    fn robust_soliton_matches_a_hand_computation_with_the_spike_clamped_to_k() {
        // k = 10, c = 0.1, delta = 0.5:
        //   R = 0.1 ln(20) sqrt(10) = 0.1 * 2.9957323 * 3.1622777 = 0.9473337
        //   k/R = 10.556 rounds to 11, clamped to a spike at d = 10.
        //   tau(d) = R/(10 d) for d = 1..9; tau(10) = R ln(R/0.5)/10 = 0.0947334 * 0.6390404 = 0.0605381
        //   rho = 1/10, 1/2, 1/6, 1/12, 1/20, 1/30, 1/42, 1/56, 1/72, 1/90 (sum 1)
        //   beta = 1 + (R/10) H(9) + tau(10) = 1 + 0.0947334 * 2.8289683 + 0.0605381 = 1.3285364
        //   mu(1) = (0.1 + 0.0947334) / beta = 0.1465774, mu(2) = (0.5 + 0.0473667) / beta = 0.4120073, ...
        let expected = [
            0.146577367050,
            0.412007282933,
            0.149220188841,
            0.080552308353,
            0.051896713371,
            0.036974694486,
            0.028108271471,
            0.022354535160,
            0.018377229669,
            0.053931408666,
        ];
        let dist = Distribution::robust(10, 0.1, 0.5).unwrap();
        for (d, &mu) in (1..).zip(&expected) {
            assert_close(dist.pmf(d), mu, 1e-11);
        }
        assert_close(dist.mean_degree(), 3.302096801876, 1e-11);
    }

    #[test]
    fn robust_spike_rounds_k_over_r_to_nearest() {
        // k = 100, c = 0.1, delta = 0.5: R = 0.1 ln(200) 10 = 5.2983174, k/R = 18.87:
        // the spike is at 19 (flooring would put it at 18).
        // beta = 1.3102506; mu(18) = (1/306 + R/1800)/beta, mu(19) = (1/342 + R ln(R/0.5)/100)/beta.
        let dist = Distribution::robust(100, 0.1, 0.5).unwrap();
        assert_close(dist.pmf(1), 0.048069561746, 1e-11);
        assert_close(dist.pmf(2), 0.401825096595, 1e-11);
        assert_close(dist.pmf(18), (1.0 / 306.0 + 5.298317366548 / 1800.0) / 1.310250632164, 1e-11);
        assert_close(dist.pmf(19), 0.097685654441, 1e-11);
        assert_close(dist.pmf(20), 1.0 / 380.0 / 1.310250632164, 1e-11);
    }

    #[test]
    fn robust_spike_below_one_moves_to_one() {
        // k = 4, c = 2, delta = 0.1: R = 2 ln(40) 2 = 14.755518, k/R = 0.27 rounds to 0:
        // the spike moves to 1, tau(1) = R ln(R/0.1)/4 = 18.423010, beta = 1 + tau(1).
        let dist = Distribution::robust(4, 2.0, 0.1).unwrap();
        assert_close(dist.pmf(1), (0.25 + 18.423009867111) / 19.423009867111, 1e-11);
        assert_close(dist.pmf(2), 0.5 / 19.423009867111, 1e-11);
    }

    #[test]
    fn robust_spike_weight_is_clamped_when_r_is_below_delta() {
        // k = 2, c = 0.01, delta = 0.9: R = 0.0112926 < delta, so R ln(R/delta)/k < 0.
        // Spike at 2 with weight 0; tau(1) = R/2, beta = 1 + R/2.
        let dist = Distribution::robust(2, 0.01, 0.9).unwrap();
        assert_close(dist.pmf(2), 0.5 / 1.005646302068, 1e-11);
        assert_close(dist.pmf(1), 0.502807300169, 1e-11);
    }

    #[test]
    fn robust_pmf_is_a_distribution() {
        for k in [1, 2, 3, 10, 64, 999, 1000, 10_000] {
            for (c, delta) in [(0.01, 0.01), (DEFAULT_C, DEFAULT_DELTA), (0.3, 0.9), (5.0, 0.5)] {
                let dist = Distribution::robust(k, c, delta).unwrap();
                let pmf: Vec<f64> = (1..=k).map(|d| dist.pmf(d)).collect();
                assert!(pmf.iter().all(|&p| p >= 0.0), "k={k} c={c} delta={delta}");
                assert_close(pmf.iter().sum(), 1.0, 1e-12);
                assert_eq!(dist.cdf.last(), Some(&1.0));
                assert!(dist.mean_degree() >= 1.0 && dist.mean_degree() <= k as f64);
            }
        }
    }

    #[test]
    fn parameters_out_of_range_are_refused_by_name() {
        assert_eq!(Distribution::ideal(0), Err(LtError::InvalidSymbols(0)));
        assert_eq!(Distribution::robust(MAX_SYMBOLS + 1, 0.1, 0.5), Err(LtError::InvalidSymbols(MAX_SYMBOLS + 1)));
        for c in [0.0, -1.0, f64::INFINITY] {
            assert_eq!(Distribution::robust(10, c, 0.5), Err(LtError::InvalidC(c)));
        }
        assert!(matches!(Distribution::robust(10, f64::NAN, 0.5), Err(LtError::InvalidC(_))));
        for delta in [0.0, 1.0, -0.5, 2.0] {
            assert_eq!(Distribution::robust(10, 0.1, delta), Err(LtError::InvalidDelta(delta)));
        }
        assert!(matches!(Distribution::robust(10, 0.1, f64::NAN), Err(LtError::InvalidDelta(_))));
        let message = |e: LtError| e.to_string();
        assert!(message(LtError::InvalidSymbols(0)).starts_with("k = 0 "));
        assert!(
            message(LtError::InvalidC(-1.0)).contains("c = -1") && message(LtError::InvalidC(-1.0)).contains("c > 0")
        );
        assert!(message(LtError::InvalidDelta(1.0)).contains("0 < delta < 1"));
    }

    #[test]
    fn samples_follow_the_pmf() {
        let dist = Distribution::robust(100, DEFAULT_C, DEFAULT_DELTA).unwrap();
        let n = 200_000;
        let mut counts = vec![0usize; 101];
        let mut rng = SplitMix64::new(3);
        for _ in 0..n {
            counts[dist.sample(&mut rng)] += 1;
        }
        assert_eq!(counts[0], 0);
        for (d, &count) in counts.iter().enumerate().skip(1) {
            let p = dist.pmf(d);
            let sigma = (p * (1.0 - p) / n as f64).sqrt();
            assert_close(count as f64 / n as f64, p, 5.0 * sigma + 1e-6);
        }
    }

    #[test]
    fn neighbours_follow_the_documented_wire_format() {
        // Steps 1-3 of `neighbours`, with a different set for "already taken".
        let reference = |dist: &Distribution, seed: u64, esi: u32| {
            let k = dist.symbols();
            let mut rng = SplitMix64::new(seed ^ esi as u64);
            let d = dist.sample(&mut rng);
            let mut taken = BTreeSet::new();
            let mut out = Vec::new();
            for j in k - d..k {
                let t = rng.below(j as u64 + 1) as u32;
                let pick = if taken.contains(&t) { j as u32 } else { t };
                taken.insert(pick);
                out.push(pick);
            }
            out
        };
        // The spike at 83 exercises the bitmap path, degrees below 65 the list.
        let dist = Distribution::robust(1000, DEFAULT_C, DEFAULT_DELTA).unwrap();
        let mut out = Vec::new();
        let mut high = 0;
        for esi in 0..3000 {
            neighbours(&dist, 0xC0DE, esi, &mut out);
            assert_eq!(out, reference(&dist, 0xC0DE, esi), "esi {esi}");
            high += usize::from(out.len() > 64);
        }
        assert!(high > 30, "only {high} symbols of degree > 64");
    }

    #[test]
    fn neighbours_are_frozen() {
        // Part of the wire format: a change here breaks interoperability.
        let dist = Distribution::ideal(10).unwrap();
        let sets: Vec<Vec<u32>> = (0..4)
            .map(|esi| {
                let mut out = Vec::new();
                neighbours(&dist, 42, esi, &mut out);
                out
            })
            .collect();
        assert_eq!(sets, FROZEN);
    }
    const FROZEN: [&[u32]; 4] = [&[1, 2, 3], &[4, 3, 8], &[8, 6], &[5]];

    #[test]
    fn neighbours_are_distinct_uniform_and_of_sampled_degree() {
        let k = 20;
        let dist = Distribution::robust(k, DEFAULT_C, DEFAULT_DELTA).unwrap();
        let n = 40_000;
        let mut by_source = vec![0usize; k];
        let mut by_degree = vec![0usize; k + 1];
        let mut out = Vec::new();
        for esi in 0..n {
            neighbours(&dist, 9, esi, &mut out);
            let distinct: BTreeSet<u32> = out.iter().copied().collect();
            assert_eq!(distinct.len(), out.len());
            assert!(out.iter().all(|&i| (i as usize) < k));
            by_degree[out.len()] += 1;
            out.iter().for_each(|&i| by_source[i as usize] += 1);
        }
        for (d, &count) in by_degree.iter().enumerate().skip(1) {
            let p = dist.pmf(d);
            assert_close(count as f64 / n as f64, p, 5.0 * (p / n as f64).sqrt() + 1e-6);
        }
        let edges: usize = by_source.iter().sum();
        let p = 1.0 / k as f64;
        for &count in &by_source {
            assert_close(count as f64 / edges as f64, p, 5.0 * (p / edges as f64).sqrt());
        }
    }

    /// The first ESIs of `seed` whose neighbour sets are `wanted`, in order.
    fn find_esis(dist: &Distribution, seed: u64, wanted: &[&[u32]]) -> Vec<u32> {
        let mut out = Vec::new();
        wanted
            .iter()
            .map(|set| {
                let set: BTreeSet<u32> = set.iter().copied().collect();
                (0..10_000)
                    .find(|&esi| {
                        neighbours(dist, seed, esi, &mut out);
                        out.iter().copied().collect::<BTreeSet<u32>>() == set
                    })
                    .unwrap()
            })
            .collect()
    }

    fn coded(encoder: &Encoder, esi: u32) -> Vec<u8> {
        let mut out = vec![0; encoder.symbol_bytes()];
        encoder.encode(esi, &mut out).unwrap();
        out
    }

    #[test]
    fn elimination_finishes_what_peeling_cannot_start() {
        // {0,1}, {1,2}, {0,1,2}: no symbol of degree one, yet full rank over GF(2).
        let dist = Distribution::ideal(3).unwrap();
        let esis = find_esis(&dist, 5, &[&[0, 1], &[1, 2], &[0, 1, 2]]);
        let mut encoder = Encoder::new(3, 4, dist.clone(), 5).unwrap();
        encoder.set_symbols(b"abcdefghijkl").unwrap();

        let mut decoder = Decoder::new(3, 4, dist.clone(), 5).unwrap();
        for &esi in &esis {
            assert_eq!(decoder.consume(esi, &coded(&encoder, esi)), Ok(Received::Innovative));
        }
        assert_eq!((decoder.decoded_count(), decoder.pending_symbols()), (0, 3));
        assert!(decoder.solve_stalled());
        assert_eq!(decoder.data(), Some(&b"abcdefghijkl"[..]));
        assert_eq!(decoder.decoded_by_elimination(), 3);
        assert_eq!(decoder.pending_symbols(), 0);
        assert!(!decoder.solve_stalled());

        let mut automatic = Decoder::new(3, 4, dist, 5).unwrap();
        automatic.set_fallback(true);
        let outcomes: Vec<_> = esis.iter().map(|&esi| automatic.consume(esi, &coded(&encoder, esi)).unwrap()).collect();
        assert_eq!(outcomes, [Received::Innovative, Received::Innovative, Received::Complete]);
        assert_eq!(automatic.data(), Some(&b"abcdefghijkl"[..]));
        assert_eq!(automatic.overhead(), Some(0.0));
    }

    #[test]
    fn elimination_decodes_what_is_determined_and_peeling_resumes() {
        // {0,1} and {0,1,2} determine source 2 alone; a later {0} peels the rest.
        let dist = Distribution::ideal(3).unwrap();
        let esis = find_esis(&dist, 8, &[&[0, 1], &[0, 1, 2], &[0]]);
        let mut encoder = Encoder::new(3, 2, dist.clone(), 8).unwrap();
        encoder.set_symbols(b"xyzuvw").unwrap();
        let mut decoder = Decoder::new(3, 2, dist, 8).unwrap();
        decoder.consume(esis[0], &coded(&encoder, esis[0])).unwrap();
        decoder.consume(esis[1], &coded(&encoder, esis[1])).unwrap();
        assert!(decoder.solve_stalled());
        assert_eq!(decoder.decode_order(), [2]);
        assert_eq!(decoder.symbol(2), Some(&b"vw"[..]));
        assert_eq!((decoder.symbol(0), decoder.decoded_by_elimination()), (None, 1));
        assert!(!decoder.solve_stalled());
        assert_eq!(decoder.consume(esis[2], &coded(&encoder, esis[2])), Ok(Received::Complete));
        assert_eq!(decoder.decode_order(), [2, 0, 1]);
        assert_eq!(decoder.data(), Some(&b"xyzuvw"[..]));
    }

    #[test]
    fn misuse_is_an_error_and_changes_nothing() {
        let dist = Distribution::ideal(4).unwrap();
        assert_eq!(
            Encoder::new(5, 8, dist.clone(), 0).err(),
            Some(LtError::DistributionMismatch { distribution: 4, symbols: 5 })
        );
        assert_eq!(Decoder::new(0, 8, dist.clone(), 0).err(), Some(LtError::InvalidSymbols(0)));
        let huge = Distribution::ideal(4).unwrap();
        assert_eq!(
            Decoder::new(4, usize::MAX, huge.clone(), 0).err(),
            Some(LtError::GenerationTooLarge { symbols: 4, symbol_bytes: usize::MAX })
        );
        assert_eq!(
            Encoder::new(4, usize::MAX / 2, huge, 0).err(),
            Some(LtError::GenerationTooLarge { symbols: 4, symbol_bytes: usize::MAX / 2 })
        );

        let mut encoder = Encoder::new(4, 8, dist.clone(), 0).unwrap();
        assert_eq!(encoder.set_symbols(&[1; 33]), Err(LtError::DataTooLarge { got: 33, capacity: 32 }));
        assert_eq!(encoder.encode(0, &mut [0; 7]), Err(LtError::PayloadLength { got: 7, expected: 8 }));

        let mut decoder = Decoder::new(4, 8, dist, 0).unwrap();
        assert_eq!(decoder.consume(0, &[0; 9]), Err(LtError::PayloadLength { got: 9, expected: 8 }));
        assert_eq!(decoder.symbols_received(), 0);
        assert_eq!((decoder.symbol(4), decoder.is_symbol_decoded(usize::MAX)), (None, false));
        assert_eq!(decoder.overhead(), None);
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri stops at an allocation past its memory instead of failing it")]
    fn a_code_past_memory_is_an_error_not_an_abort() {
        // 2^62 bytes: no machine has that much address space to give.
        let (k, symbol_bytes) = (4, 1 << 60);
        let dist = Distribution::ideal(k).unwrap();
        let out_of_memory = LtError::OutOfMemory { bytes: 1 << 62, symbols: k, symbol_bytes };
        assert_eq!(Encoder::new(k, symbol_bytes, dist.clone(), 0).err(), Some(out_of_memory.clone()));
        assert_eq!(Decoder::new(k, symbol_bytes, dist, 0).err(), Some(out_of_memory.clone()));
        let message = out_of_memory.to_string();
        assert!(message.contains(&format!("{} bytes", 1u64 << 62)) && message.contains("k = 4 "), "{message}");
    }

    #[test]
    fn repeated_and_late_symbols_are_harmless() {
        let k = 30;
        let dist = Distribution::robust(k, DEFAULT_C, DEFAULT_DELTA).unwrap();
        let mut encoder = Encoder::new(k, 3, dist.clone(), 1).unwrap();
        let data: Vec<u8> = (0..90).collect();
        encoder.set_symbols(&data).unwrap();
        let mut decoder = Decoder::new(k, 3, dist, 1).unwrap();
        let mut esi = 0;
        while !decoder.is_complete() {
            for _ in 0..2 {
                decoder.consume(esi, &coded(&encoder, esi)).unwrap();
            }
            esi += 1;
        }
        assert_eq!(decoder.data(), Some(&data[..]));
        let received = decoder.symbols_received();
        assert_eq!(decoder.overhead(), Some(received as f64 / k as f64 - 1.0));
        assert_eq!(decoder.consume(0, &coded(&encoder, 0)), Ok(Received::NotInnovative));
        assert_eq!(decoder.symbols_received(), received);
    }

    /// Bit rows over `k` sources, reduced by plain Gaussian elimination over
    /// GF(2), independently of the decoder.
    #[derive(Default)]
    struct Span {
        /// Rows with distinct leading bits, each clear in the others.
        rows: Vec<Vec<u64>>,
    }

    impl Span {
        fn row(k: usize, sources: &[u32]) -> Vec<u64> {
            let mut row = vec![0u64; k.div_ceil(64)];
            sources.iter().for_each(|&i| row[i as usize / 64] ^= 1 << (i % 64));
            row
        }

        fn reduce(&self, mut v: Vec<u64>) -> Vec<u64> {
            for row in &self.rows {
                let lead = lead(row).unwrap();
                if v[lead / 64] >> (lead % 64) & 1 == 1 {
                    v.iter_mut().zip(row).for_each(|(a, b)| *a ^= b);
                }
            }
            v
        }

        /// Adds `v`; returns whether it raised the rank.
        fn add(&mut self, v: Vec<u64>) -> bool {
            let v = self.reduce(v);
            let Some(lead) = lead(&v) else { return false };
            for row in &mut self.rows {
                if row[lead / 64] >> (lead % 64) & 1 == 1 {
                    row.iter_mut().zip(&v).for_each(|(a, b)| *a ^= b);
                }
            }
            self.rows.push(v);
            true
        }

        fn contains(&self, v: Vec<u64>) -> bool {
            lead(&self.reduce(v)).is_none()
        }
    }

    fn lead(v: &[u64]) -> Option<usize> {
        v.iter().position(|&w| w != 0).map(|i| i * 64 + v[i].trailing_zeros() as usize)
    }

    #[test]
    fn decodes_random_subsets_of_every_size() {
        for k in [1, 2, 10, 100, 1000] {
            let dist = Distribution::robust(k, DEFAULT_C, DEFAULT_DELTA).unwrap();
            for trial in 0..4u64 {
                let seed = k as u64 * 100 + trial;
                let mut rng = SplitMix64::new(seed);
                let mut data = vec![0; k * 8];
                rng.fill_bytes(&mut data);
                let mut encoder = Encoder::new(k, 8, dist.clone(), seed).unwrap();
                encoder.set_symbols(&data).unwrap();
                let mut decoder = Decoder::new(k, 8, dist.clone(), seed).unwrap();
                decoder.set_fallback(true);
                // A random subset of ESIs in random order, as any loss and reordering leave.
                let mut esis: Vec<u32> = (0..4 * k as u32 + 20).collect();
                for i in (1..esis.len()).rev() {
                    esis.swap(i, rng.below(i as u64 + 1) as usize);
                }
                let mut span = Span::default();
                for &esi in &esis {
                    span.add(Span::row(k, &encoder.neighbours(esi)));
                    decoder.consume(esi, &coded(&encoder, esi)).unwrap();
                    assert_eq!(decoder.is_complete(), span.rows.len() == k, "k={k} trial {trial}");
                    if decoder.is_complete() {
                        break;
                    }
                }
                assert_eq!(decoder.data(), Some(&data[..]), "k={k} trial {trial}");
            }
        }
    }

    #[test]
    fn k_1000_completes_on_the_symbol_of_full_rank_within_ten_percent() {
        // Any decoder that completes at full rank needs exactly these counts,
        // so the overhead is what the elimination fallback had.
        let dist = Distribution::robust(1000, DEFAULT_C, DEFAULT_DELTA).unwrap();
        let needed = overhead_trials(&dist, 8, 3, true);
        let mut seeds = SplitMix64::new(3);
        for &n in &needed {
            let seed = seeds.next_u64();
            let mut span = Span::default();
            let mut out = Vec::new();
            let full = (0..)
                .position(|esi| {
                    neighbours(&dist, seed, esi, &mut out);
                    span.add(Span::row(1000, &out));
                    span.rows.len() == 1000
                })
                .unwrap();
            assert_eq!(n, full + 1, "seed {seed}");
        }
        let mean = needed.iter().sum::<usize>() as f64 / needed.len() as f64 / 1000.0 - 1.0;
        assert!(mean <= 0.10, "mean overhead {mean}");
    }

    #[test]
    fn a_solve_reports_the_inactivated_sources_and_counts_its_xors() {
        let k = 1000;
        let dist = Distribution::robust(k, DEFAULT_C, DEFAULT_DELTA).unwrap();
        let mut encoder = Encoder::new(k, 16, dist.clone(), 4).unwrap();
        let mut data = vec![0; k * 16];
        SplitMix64::new(4).fill_bytes(&mut data);
        encoder.set_symbols(&data).unwrap();
        let mut decoder = Decoder::new(k, 16, dist.clone(), 4).unwrap();
        decoder.set_fallback(true);
        let mut esi = 0;
        while !decoder.is_complete() {
            decoder.consume(esi, &coded(&encoder, esi)).unwrap();
            esi += 1;
        }
        assert_eq!(decoder.data(), Some(&data[..]));
        let (solved, inactivated) = (decoder.decoded_by_elimination(), decoder.decoded_by_inactivation());
        assert!(solved > 500 && (10..=100).contains(&inactivated), "{solved} solved, {inactivated} inactivated");
        let xors = decoder.symbol_xors();
        assert!((5_000..20_000).contains(&xors), "{xors} XORs");
        let mut virtual_decoder = Decoder::new(k, 0, dist, 4).unwrap();
        virtual_decoder.set_fallback(true);
        for esi in 0..esi {
            virtual_decoder.consume(esi, &[]).unwrap();
        }
        assert!(virtual_decoder.is_complete());
        assert_eq!(virtual_decoder.decoded_by_inactivation(), inactivated);
        assert_eq!(virtual_decoder.symbol_xors(), 0);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// The decoder completes exactly when the symbols it has have full
        /// rank over GF(2); a solve then decodes exactly the sources they
        /// determine, with the right payloads.
        #[test]
        fn decodes_exactly_what_the_received_symbols_determine(
            k in 1usize..40,
            ideal: bool,
            loss in 0.0f64..0.9,
            symbols in 0usize..120,
            seed: u64,
        ) {
            let dist = if ideal {
                Distribution::ideal(k).unwrap()
            } else {
                Distribution::robust(k, DEFAULT_C, DEFAULT_DELTA).unwrap()
            };
            let mut rng = SplitMix64::new(seed);
            let mut data = vec![0; k * 3];
            rng.fill_bytes(&mut data);
            let mut encoder = Encoder::new(k, 3, dist.clone(), seed).unwrap();
            encoder.set_symbols(&data).unwrap();
            let mut decoder = Decoder::new(k, 3, dist.clone(), seed).unwrap();
            decoder.set_fallback(true);
            let mut span = Span::default();
            for esi in 0..symbols as u32 {
                if rng.unit_f64() < loss {
                    continue;
                }
                if decoder.is_complete() {
                    break;
                }
                span.add(Span::row(k, &encoder.neighbours(esi)));
                decoder.consume(esi, &coded(&encoder, esi)).unwrap();
                proptest::prop_assert_eq!(decoder.is_complete(), span.rows.len() == k);
            }
            decoder.solve_stalled();
            for i in 0..k {
                let determined = span.contains(Span::row(k, &[i as u32]));
                proptest::prop_assert_eq!(decoder.is_symbol_decoded(i), determined, "source {}", i);
                if determined {
                    proptest::prop_assert_eq!(decoder.symbol(i), Some(&data[i * 3..(i + 1) * 3]));
                }
            }
            let order: BTreeSet<u32> = decoder.decode_order().iter().copied().collect();
            proptest::prop_assert_eq!(order.len(), decoder.decoded_count());
        }
    }
}
