//! Coefficient vectors drawn from a seed.
//!
//! The mapping is part of the wire format, so it is fixed here and in
//! `docs/codec.md`: coefficient `i` of the vector for `seed` over GF(2^q) is
//! byte `i` of the little-endian concatenation of the SplitMix64 outputs
//! started from state `seed`, masked to its low q bits. A sender can then
//! put eight bytes on the wire instead of g coefficients.

use crate::prng::SplitMix64;
use ncmesh_gf::Field;

/// Writes the coefficient vector for `seed` into `out` (one element a byte).
pub fn generate(field: Field, seed: u64, out: &mut [u8]) {
    draw(field, seed, out);
}

/// Fills `out` with a coefficient vector that is not all zero, drawing from
/// `rng`; a zero vector carries no information and would be wasted air time.
pub fn generate_nonzero(field: Field, rng: &mut SplitMix64, out: &mut [u8]) {
    while !out.is_empty() && draw(field, rng.next_u64(), out) == 0 {}
}

/// [`generate`], returning zero exactly when the vector is zero. Masked as
/// drawn, a word at a time: a pass over the bytes afterwards, to mask or to
/// test for zero, cost a third to a half of drawing a GF(2) vector of 16.
fn draw(field: Field, seed: u64, out: &mut [u8]) -> u64 {
    SplitMix64::new(seed).fill_masked(out, u64::from_le_bytes([field.max_element(); 8]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The documented mapping, a byte at a time.
    fn by_definition(field: Field, seed: u64, len: usize) -> Vec<u8> {
        let mut rng = SplitMix64::new(seed);
        let bytes: Vec<u8> = (0..len.div_ceil(8)).flat_map(|_| rng.next_u64().to_le_bytes()).collect();
        bytes[..len].iter().map(|b| b & field.max_element()).collect()
    }

    #[test]
    fn generate_follows_the_documented_mapping() {
        for q in 1..=8 {
            let field = Field::new(q).unwrap();
            for len in 0..=40 {
                for seed in [0, 1, 1234567, u64::MAX] {
                    let mut out = vec![0xAA; len];
                    generate(field, seed, &mut out);
                    assert_eq!(out, by_definition(field, seed, len), "q = {q}, len = {len}, seed = {seed}");
                }
            }
        }
        // Known answer: the first SplitMix64 output for seed 1234567 is
        // 6457827717110365317 (Vigna's reference), little-endian.
        let mut out = [0; 8];
        generate(Field::GF256, 1234567, &mut out);
        assert_eq!(out, 6457827717110365317u64.to_le_bytes());
    }
}
