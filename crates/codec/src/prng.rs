//! The one pseudo-random generator of the codecs: SplitMix64.
//!
//! Its output function multiplies, so the bits it produces are not a
//! GF(2)-linear function of the seed. A linear generator (xorshift, LFSR)
//! would confine coefficient vectors drawn from consecutive seeds to a
//! subspace of dimension at most its state size and cap the rank a decoder
//! can reach; see `docs/codec.md`.

/// SplitMix64 (Steele, Lea and Flood 2014), exactly as in Java's `SplittableRandom`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub const fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Fills `out` with the little-endian bytes of successive outputs.
    pub fn fill_bytes(&mut self, out: &mut [u8]) {
        self.fill_masked(out, u64::MAX);
    }

    /// As [`SplitMix64::fill_bytes`], with each output ANDed with `mask`
    /// first: masking a word at a time costs nothing beside drawing it.
    /// Returns the OR of the words written (of the bytes written, for the
    /// last), which is zero exactly when all of `out` is.
    pub fn fill_masked(&mut self, out: &mut [u8], mask: u64) -> u64 {
        let mut any = 0;
        let mut chunks = out.chunks_exact_mut(8);
        for c in &mut chunks {
            let word = self.next_u64() & mask;
            c.copy_from_slice(&word.to_le_bytes());
            any |= word;
        }
        let rest = chunks.into_remainder();
        if !rest.is_empty() {
            let n = rest.len();
            let word = self.next_u64() & mask & (u64::MAX >> (64 - 8 * n));
            rest.copy_from_slice(&word.to_le_bytes()[..n]);
            any |= word;
        }
        any
    }

    /// A uniform integer in `0..n` (Lemire's multiply-shift with rejection), `n > 0`.
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        let threshold = n.wrapping_neg() % n;
        loop {
            let m = (self.next_u64() as u128) * (n as u128);
            if (m as u64) >= threshold {
                return (m >> 64) as u64;
            }
        }
    }

    /// A uniform float in `[0, 1)` with 53 random bits.
    pub fn unit_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_published_reference_sequence() {
        // First outputs for seed 1234567 from the reference C implementation
        // (Vigna, splitmix64.c).
        let mut r = SplitMix64::new(1234567);
        assert_eq!(r.next_u64(), 6457827717110365317);
        assert_eq!(r.next_u64(), 3203168211198807973);
        assert_eq!(r.next_u64(), 9817491932198370423);
    }

    /// The OR `fill_masked` returns is zero exactly when the bytes it wrote
    /// are, counting only the bytes of a last part word.
    #[test]
    fn fill_masked_reports_whether_it_wrote_anything() {
        for len in 0..=20 {
            for mask in [0, 1, 0xFF << 40, u64::MAX] {
                let mut out = vec![0xAA; len];
                let any = SplitMix64::new(len as u64).fill_masked(&mut out, mask);
                assert_eq!(any == 0, out.iter().all(|&b| b == 0), "len {len}, mask {mask:#x}");
            }
        }
    }

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let mut r = SplitMix64::new(7);
        let mut seen = [0u32; 7];
        for _ in 0..7000 {
            seen[r.below(7) as usize] += 1;
        }
        assert!(seen.iter().all(|&c| (800..1200).contains(&c)), "{seen:?}");
    }
}
