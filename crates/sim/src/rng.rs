//! Seeded random streams, one per purpose, so that adding a flow does not
//! change another link's losses.

use ncmesh_codec::prng::SplitMix64;

/// What a stream is for; with an index, it names the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
pub enum Purpose {
    /// The loss process of one direction of one link.
    LinkLoss = 1,
    /// An application's random arrivals.
    Application = 2,
    /// A coding layer's coefficients.
    Coding = 3,
    /// The initial sequence numbers of a TCP connection.
    Isn = 4,
    /// The byte stream a flow's application sends.
    Content = 5,
    /// The bit errors of one direction of one link.
    Corruption = 6,
    /// A station's backoff draws on a shared 802.11 channel, per node.
    Backoff = 7,
    /// Frame errors and fading from one transmitter to one receiver, per pair.
    Reception = 8,
    /// Random placement of nodes.
    Placement = 9,
}

/// xoshiro256++ (Blackman and Vigna 2019): fast, non-linear output, 2^256 period.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// The stream of `purpose` number `index` in the run seeded by `seed`.
    /// Seeds are mixed through SplitMix64, so nearby seeds give unrelated streams.
    pub fn stream(seed: u64, purpose: Purpose, index: u64) -> Rng {
        let mut mix = SplitMix64::new(seed);
        let a = mix.next_u64();
        let mut mix = SplitMix64::new(a ^ (purpose as u64).wrapping_mul(0xA076_1D64_78BD_642F));
        let b = mix.next_u64();
        let mut mix = SplitMix64::new(b ^ index.wrapping_mul(0xE703_7ED1_A0B4_28DB));
        Rng { s: [mix.next_u64(), mix.next_u64(), mix.next_u64(), mix.next_u64()] }
    }

    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1) with 53 bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.next_f64() < p
    }

    /// Uniform in [0, n), without bias (Lemire's multiply and reject); `n > 0`.
    pub fn below(&mut self, n: u64) -> u64 {
        let threshold = n.wrapping_neg() % n;
        loop {
            let product = self.next_u64() as u128 * n as u128;
            if product as u64 >= threshold {
                return (product >> 64) as u64;
            }
        }
    }

    /// Exponential with the given mean.
    pub fn exponential(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.next_f64()).ln()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn below_is_uniform() {
        let mut rng = Rng::stream(9, Purpose::Corruption, 0);
        let mut counts = [0u32; 7];
        for _ in 0..70_000 {
            counts[rng.below(7) as usize] += 1;
        }
        // Each count is Binomial(70000, 1/7): mean 10000, sd 93.
        assert!(counts.iter().all(|&c| (9_600..=10_400).contains(&c)), "{counts:?}");
        assert_eq!(Rng::stream(9, Purpose::Corruption, 0).below(1), 0);
    }

    use super::*;

    #[test]
    fn streams_are_distinct_and_repeatable() {
        let a: Vec<u64> = (0..4).map(|_| Rng::stream(1, Purpose::LinkLoss, 0).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        let x = Rng::stream(1, Purpose::LinkLoss, 0).next_u64();
        assert_ne!(x, Rng::stream(1, Purpose::LinkLoss, 1).next_u64());
        assert_ne!(x, Rng::stream(1, Purpose::Application, 0).next_u64());
        assert_ne!(x, Rng::stream(2, Purpose::LinkLoss, 0).next_u64());
    }

    #[test]
    fn bernoulli_frequency_is_close_to_p() {
        let mut r = Rng::stream(7, Purpose::LinkLoss, 3);
        let n = 200_000;
        let hits = (0..n).filter(|_| r.chance(0.3)).count() as f64;
        // Standard deviation of the count is sqrt(n p (1-p)) ~ 205; allow 5 sigma.
        assert!((hits - 0.3 * n as f64).abs() < 5.0 * 205.0, "{hits}");
        let mean = (0..n).map(|_| r.exponential(2.0)).sum::<f64>() / n as f64;
        assert!((mean - 2.0).abs() < 0.03, "{mean}");
    }
}
