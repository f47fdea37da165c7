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
    SplitMix64::new(seed).fill_bytes(out);
    let mask = field.max_element();
    if mask != 0xff {
        out.iter_mut().for_each(|c| *c &= mask);
    }
}

/// Fills `out` with a coefficient vector that is not all zero, drawing from
/// `rng`; a zero vector carries no information and would be wasted air time.
pub fn generate_nonzero(field: Field, rng: &mut SplitMix64, out: &mut [u8]) {
    if out.is_empty() {
        return;
    }
    loop {
        generate(field, rng.next_u64(), out);
        // An OR fold, not `any`: with no early exit it vectorizes.
        if out.iter().fold(0, |acc, &c| acc | c) != 0 {
            return;
        }
    }
}
