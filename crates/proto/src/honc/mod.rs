//! TCP-HONC (Liu and Gu, "TCP with hop-oriented network coding in
//! multi-radio multi-channel wireless mesh networks", IET Networks 2012,
//! seed 000): a layer below IP on every mesh node that codes blocks of
//! packets sharing a next hop, over one hop at a time.
//!
//! Every wireless hop (m, n) runs several *codec pairs*: node m picks L_mn
//! packets uniformly from its per-flow buffers for n (eq. 1), sends
//! [R_mn L_mn] random linear combinations over GF(2^8) (eq. 2; floor or
//! ceiling, see [`Rounding`]), and keeps the block until n's ACK-NCB says it
//! decoded it; an ACK-NCB with rank r < L buys the missing combinations. How
//! many pairs run at once follows eqs. (9)-(11); when a new block may start,
//! conditions (12)-(15). Node n decodes and hands the packets to IP, which
//! forwards them to the next hop, where the same happens again; where a flow
//! leaves the coded region it is put back in sequence first. The node
//! where a flow enters the coded region spoofs TCP ACKs to the sender
//! (Fig. 4); the node where it leaves swallows the real ones. See
//! `docs/protocols/honc.md` for the equations, the readings of the garbled
//! ones and every deviation.

mod node;
mod path;
pub mod wire;

pub use node::{HoncNode, LinkInfo, NodeStats};
pub use path::{path_cost, select_next_hop, PathCosts, COST_LIFETIME};
pub use wire::{AckNcb, Coded, Frame, ACK_BYTES, COST_BYTES, FRAME_HEADER_BYTES, STALLED_BYTES};

use crate::node::HopLayer;
use crate::packet::{Kind, Message, ParseFn};
use crate::params::{check, Invalid, Validate};
use crate::scheme::{HopContext, Scheme};
use crate::time::Instant;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How R L, a real number, becomes a number of combinations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Rounding {
    /// ceil(R L), one reading of the brackets of section 4.1.
    Ceil,
    /// floor(R L), as Alg. 1, Alg. 2 and eq. (10) print it.
    #[default]
    Floor,
}

/// How many combinations an ACK-NCB with rank r < L buys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Retransmit {
    /// N - r, with N the first round (Alg. 2 step 5b, as printed).
    Paper,
    /// round(R (L - r)), at least L - r: the missing rank with the hop's redundancy.
    #[default]
    Deficit,
}

/// Parameters of TCP-HONC. Defaults are the paper's where it gives one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct HoncParams {
    /// l of eq. (1): the smallest block, in packets.
    pub l: u32,
    /// P_th of eq. (11).
    pub p_th: f64,
    /// alpha of eqs. (18)-(19).
    pub alpha: f64,
    /// Use this loss rate on every wireless hop instead of the estimate (Fig. 6).
    pub fixed_loss: Option<f64>,
    /// Use this propagation delay, seconds, in eq. (9) instead of the estimate (Fig. 7).
    pub fixed_delay: Option<f64>,
    /// Combinations per block: ceil or floor of R L.
    pub rounding: Rounding,
    /// Combinations bought by an ACK-NCB reporting rank r < L.
    pub retransmit: Retransmit,
    /// Packets of one flow the ingress node holds before its spoofed ACKs
    /// close the TCP sender's window.
    pub spoof_window: u32,
    /// A block with fewer than L packets leaves once its oldest packet has
    /// waited this long, seconds (the paper never sends partial blocks).
    pub flush_after: f64,
    /// Upper bound on B_mn of eq. (11).
    pub max_codec_pairs: u32,
}

impl Default for HoncParams {
    fn default() -> Self {
        HoncParams {
            l: 4,
            p_th: 0.8,
            alpha: 0.875,
            fixed_loss: None,
            fixed_delay: None,
            rounding: Rounding::Floor,
            retransmit: Retransmit::Deficit,
            spoof_window: 4,
            flush_after: 0.2,
            max_codec_pairs: 64,
        }
    }
}

impl Validate for HoncParams {
    fn validate(&self) -> Result<(), Invalid> {
        check((1..=255).contains(&self.l), "l", || format!("expected a block size l in 1..=255, found {}", self.l))?;
        check(self.p_th > 0.0 && self.p_th < 1.0, "p_th", || format!("expected P_th in (0, 1), found {}", self.p_th))?;
        check((0.0..1.0).contains(&self.alpha), "alpha", || format!("expected alpha in [0, 1), found {}", self.alpha))?;
        if let Some(p) = self.fixed_loss {
            check((0.0..=0.99).contains(&p), "fixed_loss", || format!("expected a loss rate in [0, 0.99], found {p}"))?;
        }
        if let Some(d) = self.fixed_delay {
            check((0.0..=60.0).contains(&d), "fixed_delay", || {
                format!("expected a delay in [0, 60] seconds, found {d}")
            })?;
        }
        check(self.spoof_window > 0, "spoof_window", || "expected at least 1 packet".into())?;
        check((0.0..=60.0).contains(&self.flush_after), "flush_after", || {
            format!("expected [0, 60] seconds, found {}", self.flush_after)
        })?;
        check((1..=4096).contains(&self.max_codec_pairs), "max_codec_pairs", || {
            format!("expected 1..=4096, found {}", self.max_codec_pairs)
        })
    }
}

/// TCP-HONC as a scenario names it: a hop layer at every node.
#[derive(Debug)]
pub struct Honc;

impl Scheme for Honc {
    type Params = HoncParams;
    const NAME: &'static str = "honc";
    const PARAMS: &'static str = "honc";
    const CODES_HOPS: bool = true;

    fn hop_layer(params: &HoncParams, ctx: &HopContext<'_>) -> Option<Box<dyn HopLayer>> {
        Some(Box::new(HoncNode::new(params, ctx)))
    }

    /// Seed 000 codes the wireless hops of a mesh; wired ones stay FIFOs.
    fn default_hop_classes() -> Option<Vec<String>> {
        Some(vec!["wireless".to_string()])
    }

    fn messages() -> Vec<(Kind, ParseFn)> {
        vec![(wire::KIND, |b| Ok(Box::new(Frame::parse(b)?) as Box<dyn Message>))]
    }
}

/// Eq. (1): L_mn = max(N_mn, l).
pub fn block_size(flows: u32, l: u32) -> u32 {
    flows.max(l).max(1)
}

/// Eq. (2): R_mn = 1/(1 - p_mn).
pub fn redundancy(loss: f64) -> f64 {
    1.0 / (1.0 - loss.clamp(0.0, 0.99))
}

/// The first round of a block of `size` packets: R L rounded, at least L.
/// The tolerance keeps an exact product such as 12.000000000000002 at 12.
pub fn first_round(r: f64, size: u32, rounding: Rounding) -> u32 {
    let x = r * size as f64;
    let n = match rounding {
        Rounding::Ceil => (x - 1e-9).ceil(),
        Rounding::Floor => (x + 1e-9).floor(),
    };
    (n as u32).max(size)
}

/// Eq. (9): B'_mn = ceil((2 d + L_data L / c) / (L_data L / c)), the pairs
/// that keep a loss-free hop busy while each block's ACK-NCB is on its way.
pub fn codec_pairs_ideal(delay_s: f64, packet_bits: f64, size: u32, capacity_bps: f64) -> u32 {
    let tx = packet_bits * size as f64 / capacity_bps;
    let ratio = (2.0 * delay_s.max(0.0) + tx) / tx;
    // Rounded before the ceiling as python/ncmesh/models/honc.py does, so an exact 3.0000000000000004 stays 3.
    ((ratio * 1e9).round() / 1e9).ceil().max(1.0) as u32
}

/// P(X >= k) for X ~ Binomial(n, s), summed in log space so large n does not underflow.
pub fn binomial_sf(k: u32, n: u32, s: f64) -> f64 {
    if k == 0 {
        return 1.0;
    }
    if k > n {
        return 0.0;
    }
    if s <= 0.0 {
        return 0.0;
    }
    if s >= 1.0 {
        return 1.0;
    }
    let (ls, lf) = (s.ln(), (1.0 - s).ln());
    let mut log_choose = 0.0; // ln C(n, j), built up from j = 0
    let mut total = 0.0;
    for j in 0..=n {
        if j > 0 {
            log_choose += ((n - j + 1) as f64).ln() - (j as f64).ln();
        }
        if j >= k {
            total += (log_choose + j as f64 * ls + (n - j) as f64 * lf).exp();
        }
    }
    total.min(1.0)
}

/// Eq. (10), read with the binomial's arguments the right way round: the
/// probability that at least L of the N combinations of a first round
/// arrive, each with probability 1 - p.
pub fn decoding_probability(loss: f64, size: u32, sent: u32) -> f64 {
    binomial_sf(size, sent, 1.0 - loss)
}

/// Eq. (11), read as python/ncmesh/models/honc.py reads it: the least B >= B'
/// such that P(Binomial(B, P_b) >= B') >= P_th, each pair decoding in its first
/// round with the probability P_b of eq. (10). Capped at `cap`.
pub fn codec_pairs(b_ideal: u32, success: f64, p_th: f64, cap: u32) -> u32 {
    let cap = cap.max(b_ideal);
    (b_ideal..=cap).find(|&b| binomial_sf(b_ideal, b, success) >= p_th).unwrap_or(cap)
}

/// The smoothed estimate of eqs. (18)-(19): new = alpha old + (1 - alpha) sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ewma {
    pub value: f64,
    pub alpha: f64,
}

impl Ewma {
    pub fn update(&mut self, sample: f64) {
        self.value = self.alpha * self.value + (1.0 - self.alpha) * sample;
    }
}

/// A deadline that is only meaningful when set.
pub(crate) fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_size_follows_eq_1() {
        assert_eq!(block_size(1, 4), 4);
        assert_eq!(block_size(4, 4), 4);
        assert_eq!(block_size(7, 4), 7);
    }

    #[test]
    fn first_round_rounds_r_l() {
        let r = redundancy(0.35); // 6.15 for L = 4
        assert_eq!(first_round(r, 4, Rounding::Ceil), 7);
        assert_eq!(first_round(r, 4, Rounding::Floor), 6);
        // R = 1.25, L = 4: exactly 5 either way despite floating point.
        assert_eq!(first_round(redundancy(0.2), 4, Rounding::Ceil), 5);
        assert_eq!(first_round(redundancy(0.2), 4, Rounding::Floor), 5);
        assert_eq!(first_round(1.0, 4, Rounding::Floor), 4);
    }

    #[test]
    fn eq_9_matches_hand_computation() {
        // 1060-byte frames, L = 4, 1 Mbit/s: 33.92 ms per block; 200 ms of round trip: 6.9 -> 7.
        assert_eq!(codec_pairs_ideal(0.1, 8480.0, 4, 1e6), 7);
        // No propagation delay: one pair suffices.
        assert_eq!(codec_pairs_ideal(0.0, 8480.0, 4, 1e6), 1);
        // 2d exactly twice the block time: 3, not 4.
        assert_eq!(codec_pairs_ideal(0.01, 1e4, 1, 1e6), 3);
    }

    #[test]
    fn binomial_sf_agrees_with_direct_sums() {
        // P(Bin(7, 0.65) >= 4) = 0.800 (computed term by term by hand: 0.2679+0.2985+0.1848+0.0490).
        assert!((binomial_sf(4, 7, 0.65) - 0.8002).abs() < 1e-3);
        assert!((binomial_sf(1, 3, 0.5) - 0.875).abs() < 1e-12);
        assert_eq!(binomial_sf(0, 3, 0.1), 1.0);
        assert_eq!(binomial_sf(4, 3, 0.9), 0.0);
    }

    #[test]
    fn codec_pairs_match_an_independent_computation() {
        let lossless = decoding_probability(0.0, 4, 4);
        assert_eq!(lossless, 1.0);
        assert_eq!(codec_pairs(7, lossless, 0.8, 64), 7);
        // (p, floor(R L), P_b, B) from exact binomial sums (Python's math.comb), B' = 7, L = 4.
        // B does not grow monotonically with p: floor(R L) jumps from 4 to 5 between 0.1 and 0.2.
        for (p, n, pb, b) in
            [(0.1, 4, 0.6561, 12), (0.2, 5, 0.73728, 11), (0.35, 6, 0.647085, 13), (0.5, 8, 0.636719, 13)]
        {
            assert_eq!(first_round(redundancy(p), 4, Rounding::Floor), n, "p {p}");
            let got = decoding_probability(p, 4, n);
            assert!((got - pb).abs() < 1e-6, "p {p}: P_b {got}");
            assert_eq!(codec_pairs(7, got, 0.8, 64), b, "p {p}");
        }
        // The cap holds when P_th cannot be reached.
        assert_eq!(codec_pairs(7, 0.01, 0.8, 20), 20);
    }

    #[test]
    fn parameters_are_refused_outside_their_ranges_by_name() {
        let ok = HoncParams::default();
        assert_eq!(ok.validate(), Ok(()));
        let edges = [
            HoncParams { l: 1, p_th: 1e-9, alpha: 0.0, fixed_loss: Some(0.0), fixed_delay: Some(0.0), ..ok.clone() },
            HoncParams { l: 255, p_th: 1.0 - 1e-9, fixed_loss: Some(0.99), fixed_delay: Some(60.0), ..ok.clone() },
            HoncParams { spoof_window: 1, flush_after: 0.0, max_codec_pairs: 1, ..ok.clone() },
            HoncParams { flush_after: 60.0, max_codec_pairs: 4096, ..ok.clone() },
        ];
        for params in edges {
            assert_eq!(params.validate(), Ok(()), "{params:?}");
        }
        let refused = [
            (HoncParams { l: 0, ..ok.clone() }, "l", "expected a block size l in 1..=255, found 0"),
            (HoncParams { l: 256, ..ok.clone() }, "l", "expected a block size l in 1..=255, found 256"),
            (HoncParams { p_th: 0.0, ..ok.clone() }, "p_th", "expected P_th in (0, 1), found 0"),
            (HoncParams { p_th: 1.0, ..ok.clone() }, "p_th", "expected P_th in (0, 1), found 1"),
            (HoncParams { p_th: f64::NAN, ..ok.clone() }, "p_th", "expected P_th in (0, 1), found NaN"),
            (HoncParams { alpha: 1.0, ..ok.clone() }, "alpha", "expected alpha in [0, 1), found 1"),
            (
                HoncParams { fixed_loss: Some(1.0), ..ok.clone() },
                "fixed_loss",
                "expected a loss rate in [0, 0.99], found 1",
            ),
            (
                HoncParams { fixed_delay: Some(-1.0), ..ok.clone() },
                "fixed_delay",
                "expected a delay in [0, 60] seconds, found -1",
            ),
            (HoncParams { spoof_window: 0, ..ok.clone() }, "spoof_window", "expected at least 1 packet"),
            (HoncParams { flush_after: 61.0, ..ok.clone() }, "flush_after", "expected [0, 60] seconds, found 61"),
            (HoncParams { max_codec_pairs: 0, ..ok.clone() }, "max_codec_pairs", "expected 1..=4096, found 0"),
        ];
        for (params, key, message) in refused {
            let e = params.validate().expect_err(key);
            assert_eq!((e.path.to_string(), e.message.as_str()), (key.to_string(), message));
        }
    }

    #[test]
    fn only_wireless_hops_are_coded_unless_a_scenario_says_otherwise() {
        let registry = crate::scheme::Registry::builtin();
        let honc = registry.scheme("honc").expect("registered");
        assert_eq!(honc.default_hop_classes(), Some(vec!["wireless".to_string()]));
    }

    #[test]
    fn ewma_weights_the_old_value_by_alpha() {
        let mut e = Ewma { value: 0.0, alpha: 0.875 };
        e.update(1.0);
        assert!((e.value - 0.125).abs() < 1e-12);
        e.update(1.0);
        assert!((e.value - (0.875 * 0.125 + 0.125)).abs() < 1e-12);
        // From 0.234375 towards 4: 0.875 * 0.234375 + 0.125 * 4 = 0.705078125.
        e.update(4.0);
        assert!((e.value - 0.705_078_125).abs() < 1e-12);
    }

    #[test]
    fn the_earliest_deadline_is_the_one_set_first_to_come() {
        let (a, b) = (Instant::from_secs_f64(1.0), Instant::from_secs_f64(2.0));
        assert_eq!(earliest(Some(b), Some(a)), Some(a));
        assert_eq!(earliest(Some(a), Some(b)), Some(a));
        assert_eq!(earliest(None, Some(b)), Some(b));
        assert_eq!(earliest(Some(b), None), Some(b));
        assert_eq!(earliest(None, None), None);
    }
}
