//! Fountain codes as one trait, so that a transport codes with any of them.
//!
//! A fountain (rateless) code turns `k` source symbols into an endless
//! stream of coded symbols, each named by its encoding symbol id (ESI); a
//! receiver decodes from any large enough set of them. TCP-Forward (seed
//! 004) codes each window of its stream with such a code and names the code
//! by the window, so a code here is a function of `(k, seed)`: the window's
//! length and a seed both ends derive from the window.
//!
//! Every code here combines sources by XOR: a coded symbol is the XOR of the
//! sources [`Fountain::sources`] lists, which is all an encoder needs. Seed
//! 004 chose LT codes because Raptor and Online codes build on them; such a
//! code plugs in by implementing the two traits:
//!
//! - [`Lt`]: Luby's LT code with the Robust Soliton distribution, decoded by
//!   peeling (with inactivation decoding when peeling stalls, if asked);
//! - [`RandomLinear`]: the random linear fountain over GF(2) (MacKay 2005,
//!   ch. 50): every source is in a coded symbol with probability 1/2, and
//!   decoding is Gaussian elimination. Its overhead is about 1.6 symbols at
//!   any `k`, against tens of percent for LT at small `k`, for a decoding
//!   cost of O(k^2) row operations.

use crate::lt::{self, Distribution, LtError};
use crate::prng::SplitMix64;
use crate::rlnc::{self, CodecError, Received};
use crate::Field;
use std::fmt::Debug;
use std::sync::OnceLock;

/// A fountain code whose coded symbols are XORs of source symbols.
pub trait Fountain: Debug + Send + Sync {
    /// The largest `k` it codes.
    fn max_symbols(&self) -> usize;

    /// Writes into `out` the distinct sources (indices below `k`) that coded
    /// symbol `esi` of the code `(k, seed)` XORs together. `k` must be in
    /// `1..=max_symbols()`.
    fn sources(&self, k: usize, seed: u64, esi: u32, out: &mut Vec<u32>);

    /// A decoder of the code `(k, seed)` for symbols of `symbol_bytes` bytes
    /// (0: coefficients only, for simulation).
    fn decoder(&self, k: usize, symbol_bytes: usize, seed: u64) -> Result<Box<dyn FountainDecoder>, CodecError>;
}

/// The receiving side of a [`Fountain`] code.
pub trait FountainDecoder: Debug + Send {
    /// `k`.
    fn symbols(&self) -> usize;

    /// Adds coded symbol `esi`.
    fn consume(&mut self, esi: u32, payload: &[u8]) -> Result<Received, CodecError>;

    /// Adds source `index`, learnt elsewhere.
    fn consume_source(&mut self, index: usize, payload: &[u8]) -> Result<Received, CodecError>;

    /// The decoded sources, in the order they were decoded (those given to
    /// `consume_source` included): a caller that remembers how many it has
    /// seen finds the new ones at the end.
    fn decode_order(&self) -> &[u32];

    /// Decoded source `index`; empty for a decoder of virtual symbols.
    fn symbol(&mut self, index: usize) -> Option<&[u8]>;

    fn is_complete(&self) -> bool {
        self.decode_order().len() == self.symbols()
    }
}

/// Writes into `out` the coded symbol that combines `listed` (what
/// [`Fountain::sources`] gave) of the window's `members`: their XOR.
pub fn combine<'a, M: AsRef<[u8]> + 'a>(listed: &[u32], members: impl Fn(usize) -> Option<&'a M>, out: &mut [u8]) {
    out.fill(0);
    for &i in listed {
        if let Some(member) = members(i as usize) {
            ncmesh_gf::xor(member.as_ref(), out);
        }
    }
}

impl From<LtError> for CodecError {
    fn from(e: LtError) -> CodecError {
        match e {
            LtError::InvalidSymbols(k) => CodecError::InvalidSymbols(k),
            LtError::PayloadLength { got, expected } => CodecError::PayloadLength { got, expected },
            LtError::SourceOutOfRange { index, symbols } => {
                CodecError::IndexOutOfRange { index: index as u64, limit: symbols as u64 }
            }
            LtError::GenerationTooLarge { symbols, symbol_bytes } => {
                CodecError::GenerationTooLarge { symbols, symbol_bytes }
            }
            LtError::OutOfMemory { bytes, symbols, symbol_bytes } => {
                CodecError::OutOfMemory { bytes, symbols, symbol_bytes }
            }
            LtError::DataTooLarge { got, capacity } => CodecError::DataTooLarge { got, capacity },
            // The distribution's parameters are checked when an `Lt` is built.
            LtError::InvalidC(_) | LtError::InvalidDelta(_) | LtError::DistributionMismatch { .. } => {
                unreachable!("an Lt code checks its distribution when it is built")
            }
        }
    }
}

/// LT codes with the Robust Soliton distribution of `k` (seed 004 eqs. 1-3),
/// for every `k` up to a bound. Distributions are built on first use.
#[derive(Debug)]
pub struct Lt {
    c: f64,
    delta: f64,
    fallback: bool,
    /// `distributions[k - 1]`, once some code over `k` sources needed it.
    distributions: Vec<OnceLock<Distribution>>,
}

impl Lt {
    /// Robust Soliton codes with constants `c` and `delta` for `k` up to
    /// `max_symbols`. With `fallback`, decoders finish by inactivation
    /// decoding what peeling cannot (`lt::Decoder::set_fallback`).
    pub fn robust(c: f64, delta: f64, max_symbols: usize, fallback: bool) -> Result<Lt, LtError> {
        if max_symbols == 0 || max_symbols > lt::MAX_SYMBOLS {
            return Err(LtError::InvalidSymbols(max_symbols));
        }
        Distribution::robust(1, c, delta)?;
        Ok(Lt { c, delta, fallback, distributions: (0..max_symbols).map(|_| OnceLock::new()).collect() })
    }

    fn distribution(&self, k: usize) -> &Distribution {
        self.distributions[k - 1]
            .get_or_init(|| Distribution::robust(k, self.c, self.delta).expect("checked when the code was built"))
    }

    fn check(&self, k: usize) -> Result<(), CodecError> {
        if k == 0 || k > self.max_symbols() {
            return Err(CodecError::InvalidSymbols(k));
        }
        Ok(())
    }
}

impl Fountain for Lt {
    fn max_symbols(&self) -> usize {
        self.distributions.len()
    }

    fn sources(&self, k: usize, seed: u64, esi: u32, out: &mut Vec<u32>) {
        lt::neighbours(self.distribution(k), seed, esi, out);
    }

    fn decoder(&self, k: usize, symbol_bytes: usize, seed: u64) -> Result<Box<dyn FountainDecoder>, CodecError> {
        self.check(k)?;
        let mut decoder = lt::Decoder::new(k, symbol_bytes, self.distribution(k).clone(), seed)?;
        decoder.set_fallback(self.fallback);
        Ok(Box::new(decoder))
    }
}

impl FountainDecoder for lt::Decoder {
    fn symbols(&self) -> usize {
        lt::Decoder::symbols(self)
    }
    fn consume(&mut self, esi: u32, payload: &[u8]) -> Result<Received, CodecError> {
        Ok(lt::Decoder::consume(self, esi, payload)?)
    }
    fn consume_source(&mut self, index: usize, payload: &[u8]) -> Result<Received, CodecError> {
        Ok(lt::Decoder::consume_source(self, index, payload)?)
    }
    fn decode_order(&self) -> &[u32] {
        lt::Decoder::decode_order(self)
    }
    fn symbol(&mut self, index: usize) -> Option<&[u8]> {
        lt::Decoder::symbol(self, index)
    }
}

/// The random linear fountain over GF(2): coded symbol `esi` of `(k, seed)`
/// holds source `i` when bit `i` of the SplitMix64 stream started from
/// `seed ^ esi` is set (bit `i % 64` of output `i / 64`, little-endian); a
/// draw with no bit set among the first `k` is replaced by the next.
#[derive(Clone, Copy, Debug)]
pub struct RandomLinear {
    max_symbols: usize,
}

impl RandomLinear {
    pub fn new(max_symbols: usize) -> Result<RandomLinear, CodecError> {
        if max_symbols == 0 || max_symbols > rlnc::MAX_SYMBOLS {
            return Err(CodecError::InvalidSymbols(max_symbols));
        }
        Ok(RandomLinear { max_symbols })
    }

    /// The symbol's coefficient vector over GF(2), one element a byte.
    fn coefficients(k: usize, seed: u64, esi: u32, out: &mut Vec<u8>) {
        let mut rng = SplitMix64::new(seed ^ u64::from(esi));
        out.clear();
        out.resize(k, 0);
        loop {
            let mut any = 0;
            for chunk in out.chunks_mut(64) {
                let word = rng.next_u64();
                for (i, c) in chunk.iter_mut().enumerate() {
                    *c = (word >> i & 1) as u8;
                    any |= *c;
                }
            }
            if any != 0 {
                return;
            }
        }
    }
}

impl Fountain for RandomLinear {
    fn max_symbols(&self) -> usize {
        self.max_symbols
    }

    fn sources(&self, k: usize, seed: u64, esi: u32, out: &mut Vec<u32>) {
        let mut coefficients = Vec::new();
        RandomLinear::coefficients(k, seed, esi, &mut coefficients);
        out.clear();
        out.extend((0..k as u32).filter(|&i| coefficients[i as usize] == 1));
    }

    fn decoder(&self, k: usize, symbol_bytes: usize, seed: u64) -> Result<Box<dyn FountainDecoder>, CodecError> {
        if k == 0 || k > self.max_symbols {
            return Err(CodecError::InvalidSymbols(k));
        }
        let decoder = rlnc::Decoder::new(Field::GF2, k, symbol_bytes)?;
        Ok(Box::new(RandomLinearDecoder {
            decoder,
            seed,
            order: Vec::new(),
            listed: vec![false; k],
            coefficients: Vec::new(),
        }))
    }
}

/// Gaussian elimination over GF(2) on the random linear fountain's symbols.
#[derive(Debug)]
struct RandomLinearDecoder {
    decoder: rlnc::Decoder,
    seed: u64,
    order: Vec<u32>,
    /// Whether each source is in `order`.
    listed: Vec<bool>,
    coefficients: Vec<u8>,
}

impl RandomLinearDecoder {
    /// Appends to the decode order the sources the last symbol decoded.
    fn note_decoded(&mut self, received: Received) -> Received {
        if received != Received::NotInnovative {
            for i in 0..self.listed.len() {
                if !self.listed[i] && self.decoder.is_symbol_decoded(i) {
                    self.listed[i] = true;
                    self.order.push(i as u32);
                }
            }
        }
        received
    }
}

impl FountainDecoder for RandomLinearDecoder {
    fn symbols(&self) -> usize {
        self.decoder.symbols()
    }
    fn consume(&mut self, esi: u32, payload: &[u8]) -> Result<Received, CodecError> {
        RandomLinear::coefficients(self.decoder.symbols(), self.seed, esi, &mut self.coefficients);
        let received = self.decoder.consume(&self.coefficients, payload)?;
        Ok(self.note_decoded(received))
    }
    fn consume_source(&mut self, index: usize, payload: &[u8]) -> Result<Received, CodecError> {
        let received = self.decoder.consume_systematic(index, payload)?;
        Ok(self.note_decoded(received))
    }
    fn decode_order(&self) -> &[u32] {
        &self.order
    }
    fn symbol(&mut self, index: usize) -> Option<&[u8]> {
        self.decoder.symbol(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sends coded symbols of `(k, seed)` over a channel that loses every
    /// third, until the decoder completes; checks every decoded source.
    fn round_trip(code: &dyn Fountain, k: usize, seed: u64) -> usize {
        let symbol_bytes = 5;
        let sources: Vec<Vec<u8>> = (0..k).map(|i| vec![i as u8 ^ 0x5A; symbol_bytes]).collect();
        let mut decoder = code.decoder(k, symbol_bytes, seed).unwrap();
        let mut list = Vec::new();
        let mut sent = 0;
        for esi in 0..u32::MAX {
            if esi % 3 == 2 {
                continue;
            }
            code.sources(k, seed, esi, &mut list);
            assert!(!list.is_empty() && list.iter().all(|&i| (i as usize) < k));
            let mut payload = vec![0; symbol_bytes];
            combine(&list, |i| sources.get(i), &mut payload);
            sent += 1;
            if decoder.consume(esi, &payload).unwrap() == Received::Complete {
                break;
            }
            assert!(sent < 20 * k + 100, "stuck");
        }
        assert!(decoder.is_complete());
        let mut order = decoder.decode_order().to_vec();
        order.sort_unstable();
        assert_eq!(order, (0..k as u32).collect::<Vec<_>>());
        for (i, source) in sources.iter().enumerate() {
            assert_eq!(decoder.symbol(i), Some(&source[..]));
        }
        sent
    }

    #[test]
    fn every_code_decodes_what_it_encoded() {
        let lt = Lt::robust(lt::DEFAULT_C, lt::DEFAULT_DELTA, 64, false).unwrap();
        let lt_fallback = Lt::robust(lt::DEFAULT_C, lt::DEFAULT_DELTA, 64, true).unwrap();
        let random = RandomLinear::new(64).unwrap();
        for k in [1, 2, 7, 16, 64] {
            for seed in 0..5 {
                round_trip(&lt, k, seed);
                round_trip(&lt_fallback, k, seed);
                // An ideal erasure code needs k; the random linear fountain
                // about 1.6 more on average, and rarely 12 more (2^-12).
                let needed = round_trip(&random, k, seed);
                assert!(needed >= k && needed <= k + 12, "k {k}: {needed}");
            }
        }
    }

    #[test]
    fn sources_learnt_elsewhere_finish_a_window() {
        // Half the sources known from an overlapping window: the rest
        // decode from fewer coded symbols than a fresh decoder needs.
        let code = Lt::robust(lt::DEFAULT_C, lt::DEFAULT_DELTA, 16, false).unwrap();
        let k = 16;
        let mut list = Vec::new();
        let mut decoder = code.decoder(k, 0, 3).unwrap();
        for i in 0..8 {
            assert_eq!(decoder.consume_source(i, &[]).unwrap(), Received::Innovative);
        }
        assert_eq!(decoder.consume_source(0, &[]).unwrap(), Received::NotInnovative);
        assert_eq!(decoder.decode_order(), &[0, 1, 2, 3, 4, 5, 6, 7]);
        let mut esi = 0;
        while !decoder.is_complete() {
            code.sources(k, 3, esi, &mut list);
            decoder.consume(esi, &[]).unwrap();
            esi += 1;
        }
        assert!(esi < 200);
        assert!(matches!(decoder.consume_source(16, &[]), Err(CodecError::IndexOutOfRange { index: 16, limit: 16 })));
    }

    #[test]
    fn codes_refuse_sizes_they_cannot_have() {
        let code = Lt::robust(0.05, 0.5, 8, false).unwrap();
        assert_eq!(code.decoder(9, 0, 0).unwrap_err(), CodecError::InvalidSymbols(9));
        assert_eq!(code.decoder(0, 0, 0).unwrap_err(), CodecError::InvalidSymbols(0));
        let too_large = CodecError::GenerationTooLarge { symbols: 8, symbol_bytes: usize::MAX };
        assert_eq!(code.decoder(8, usize::MAX, 0).unwrap_err(), too_large);
        assert_eq!(RandomLinear::new(8).unwrap().decoder(8, usize::MAX, 0).unwrap_err(), too_large);
        assert_eq!(Lt::robust(0.0, 0.5, 8, false).unwrap_err(), LtError::InvalidC(0.0));
        assert_eq!(Lt::robust(0.05, 0.5, 0, false).unwrap_err(), LtError::InvalidSymbols(0));
        assert_eq!(RandomLinear::new(0).unwrap_err(), CodecError::InvalidSymbols(0));
        let mut d = RandomLinear::new(4).unwrap().decoder(4, 3, 1).unwrap();
        assert_eq!(d.consume(0, &[0; 2]).unwrap_err(), CodecError::PayloadLength { got: 2, expected: 3 });
    }

    #[test]
    fn the_random_linear_fountain_follows_its_definition() {
        // Bit i of the stream from seed ^ esi, by hand for k = 70 (two words).
        let mut list = Vec::new();
        let code = RandomLinear::new(70).unwrap();
        code.sources(70, 9, 4, &mut list);
        let mut rng = SplitMix64::new(9 ^ 4);
        let (a, b) = (rng.next_u64(), rng.next_u64());
        let want: Vec<u32> =
            (0..70).filter(|&i| if i < 64 { a >> i & 1 == 1 } else { b >> (i - 64) & 1 == 1 }).collect();
        assert_eq!(list, want);
        // Each source is in about half the symbols.
        let mut counts = [0usize; 8];
        for esi in 0..4000 {
            code.sources(8, 1, esi, &mut list);
            list.iter().for_each(|&i| counts[i as usize] += 1);
        }
        assert!(counts.iter().all(|&c| (1800..2300).contains(&c)), "{counts:?}");
    }
}
