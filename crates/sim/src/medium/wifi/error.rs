//! From signal-to-noise ratio to frame error rate, per rate.
//!
//! Bit errors come from the AWGN formulas of each modulation (Proakis,
//! *Digital Communications*, 4th ed., sections 5.2 and 5.4), at the
//! Eb/N0 that the SNR in the channel bandwidth B gives at bit rate R,
//! Eb/N0 = SNR B / R:
//!
//! - DBPSK (1 Mbit/s): Pb = exp(-Eb/N0) / 2.
//! - DQPSK (2 Mbit/s): Pb = Q(sqrt(1.17 Eb/N0)), coherent QPSK less the
//!   2.3 dB that differential detection costs at high SNR.
//! - CCK (5.5 and 11 Mbit/s): Pb = Q(sqrt(2 Eb/N0)), coherent QPSK at the
//!   same Eb/N0; this ignores CCK's coding gain, so it errs pessimistic.
//! - OFDM: the subcarrier constellation's Gray-coded bit error rate p at the
//!   symbol SNR (BPSK Q(sqrt(2 SNR)), QPSK Q(sqrt(SNR)), 16-QAM
//!   3/4 Q(sqrt(SNR/5)), 64-QAM 7/12 Q(sqrt(SNR/21))), then the union
//!   bound of hard-decision Viterbi decoding, Pb <= (1/b) sum_d c_d D^d
//!   with the Bhattacharyya parameter D = sqrt(4 p (1 - p)) and the first
//!   terms of the information-weight spectrum c_d of the (133, 171) code
//!   and its punctured rates 2/3 and 3/4 (b = 1, 2, 3), as tabulated by
//!   Frenger, Orten and Ottosson (IEEE Comm. Letters 3(11), 1999) and used
//!   by the model of Pei and Henderson (ns-3 validation, 2010).
//!
//! A frame of n bytes then survives with probability (1 - Pb)^(8 n), and
//! its PLCP header with that of its bits at the header's rate (48 bits of
//! DBPSK for DSSS, 24 of BPSK rate 1/2 for OFDM).

use super::phy::{CodeRate, Constellation, Mode, Modulation, Preamble, Standard};

/// The complementary error function, within 1.2e-7 relative error
/// (Numerical Recipes, 2nd ed., section 6.2, `erfcc`).
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98 + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// The Gaussian tail Q(x) = erfc(x / sqrt 2) / 2.
pub fn q(x: f64) -> f64 {
    0.5 * erfc(x / std::f64::consts::SQRT_2)
}

/// The first terms of the information-weight spectrum (c_d from d_free on,
/// odd and even d as the punctured codes have them) and the puncturing period b.
fn spectrum(code: CodeRate) -> (u32, &'static [f64], f64) {
    match code {
        CodeRate::Half => (10, &[36.0, 0.0, 211.0, 0.0, 1404.0, 0.0, 11633.0], 1.0),
        CodeRate::TwoThirds => (6, &[3.0, 70.0, 285.0, 1276.0, 6160.0, 27128.0], 2.0),
        CodeRate::ThreeQuarters => (5, &[42.0, 201.0, 1492.0, 10469.0, 62935.0], 3.0),
    }
}

fn constellation_ber(c: Constellation, snr: f64) -> f64 {
    match c {
        Constellation::Bpsk => q((2.0 * snr).sqrt()),
        Constellation::Qpsk => q(snr.sqrt()),
        Constellation::Qam16 => 0.75 * q((snr / 5.0).sqrt()),
        Constellation::Qam64 => 7.0 / 12.0 * q((snr / 21.0).sqrt()),
    }
}

fn coded_ber(p: f64, code: CodeRate) -> f64 {
    let (d_free, weights, b) = spectrum(code);
    let d = (4.0 * p * (1.0 - p)).sqrt();
    let sum: f64 = weights.iter().enumerate().map(|(i, c)| c * d.powi((d_free + i as u32) as i32)).sum();
    (sum / b).min(0.5)
}

/// Bit error rate of `mode` at `snr` (linear, in the standard's bandwidth).
pub fn ber(standard: Standard, mode: Mode, snr: f64) -> f64 {
    let eb_n0 = snr * standard.bandwidth_hz() / mode.bps as f64;
    let p = match mode.modulation {
        Modulation::Dbpsk => 0.5 * (-eb_n0).exp(),
        Modulation::Dqpsk => q((1.17 * eb_n0).sqrt()),
        Modulation::Cck => q((2.0 * eb_n0).sqrt()),
        Modulation::Ofdm { constellation, code, .. } => coded_ber(constellation_ber(constellation, snr), code),
    };
    p.clamp(0.0, 0.5)
}

/// Probability that a frame of `bytes` at `mode`, header included, is received at `snr`.
pub fn success(standard: Standard, preamble: Preamble, mode: Mode, bytes: u32, snr: f64) -> f64 {
    let (header_mode, header_bits) = match (mode.modulation, preamble) {
        (Modulation::Ofdm { .. }, _) => (standard.lowest(), 24),
        (Modulation::Dbpsk, _) | (_, Preamble::Long) => (standard.lowest(), 48),
        (_, Preamble::Short) => (standard.modes()[1], 48),
    };
    let header = (1.0 - ber(standard, header_mode, snr)).powi(header_bits);
    header * (1.0 - ber(standard, mode, snr)).powf(8.0 * bytes as f64)
}

/// The frame error rate at mean SNR `snr`: under Rayleigh fading,
/// averaged over the exponential distribution of the power gain g,
/// E\[FER\] = integral of FER(snr g) e^-g dg, taken over x = snr g on a
/// logarithmic grid from -40 to +50 dB (below, every frame is taken as
/// lost; above, none); otherwise at `snr` itself.
pub fn mean_fer(standard: Standard, preamble: Preamble, mode: Mode, bytes: u32, snr: f64, rayleigh: bool) -> f64 {
    let fer = |x: f64| 1.0 - success(standard, preamble, mode, bytes, x);
    if !rayleigh {
        return fer(snr);
    }
    const POINTS: usize = 900;
    let (low, high) = (1e-4f64.ln(), 1e5f64.ln());
    let step = (high - low) / POINTS as f64;
    // Below the grid: P(snr g < 1e-4) = 1 - exp(-1e-4 / snr).
    let mut total = -(-1e-4 / snr).exp_m1();
    for i in 0..POINTS {
        let x = (low + (i as f64 + 0.5) * step).exp();
        total += fer(x) * (-x / snr).exp() * x / snr * step;
    }
    total.clamp(0.0, 1.0)
}

/// Frame error rates of one rate and frame size over a grid of mean SNRs,
/// from -30 to +70 dB in steps of 0.05 dB, read by linear interpolation:
/// a channel asks for many pairs' losses, and under fading each is an integral.
#[derive(Clone, Debug)]
pub struct FerTable {
    fer: Vec<f64>,
}

const TABLE_LOW_DB: f64 = -30.0;
const TABLE_STEP_DB: f64 = 0.05;
const TABLE_POINTS: usize = 2001;

impl FerTable {
    pub fn new(standard: Standard, preamble: Preamble, mode: Mode, bytes: u32, rayleigh: bool) -> FerTable {
        let fer = (0..TABLE_POINTS)
            .map(|i| {
                let db = TABLE_LOW_DB + i as f64 * TABLE_STEP_DB;
                mean_fer(standard, preamble, mode, bytes, 10f64.powf(db / 10.0), rayleigh)
            })
            .collect();
        FerTable { fer }
    }

    /// The frame error rate at mean SNR `snr` (linear).
    pub fn at(&self, snr: f64) -> f64 {
        let db = 10.0 * snr.max(1e-300).log10();
        let position = ((db - TABLE_LOW_DB) / TABLE_STEP_DB).clamp(0.0, (TABLE_POINTS - 1) as f64);
        let i = (position as usize).min(TABLE_POINTS - 2);
        let frac = position - i as f64;
        self.fer[i] * (1.0 - frac) + self.fer[i + 1] * frac
    }
}

/// The offset in dB, added to every SNR, at which `fer(offset)` (a
/// decreasing function) equals `target`: bisection over [-100, 100] dB.
pub fn calibrate(target: f64, fer: impl Fn(f64) -> f64) -> f64 {
    let (mut low, mut high) = (-100.0, 100.0);
    for _ in 0..100 {
        let mid = 0.5 * (low + high);
        if fer(mid) > target {
            low = mid;
        } else {
            high = mid;
        }
    }
    0.5 * (low + high)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erfc_matches_tabulated_values() {
        // erfc(0) = 1, erfc(1) = 0.157299207, erfc(2) = 0.004677735, erfc(-1) = 1.842700793.
        for (x, want) in [(0.0, 1.0), (1.0, 0.157_299_207), (2.0, 0.004_677_735), (-1.0, 1.842_700_793)] {
            assert!((erfc(x) - want).abs() < 2e-7 * want.max(1e-3) + 1e-9, "erfc({x}) = {}", erfc(x));
        }
        // Q(1.96) = 0.025 (the two-sided 95% point).
        assert!((q(1.959_964) - 0.025).abs() < 1e-6);
    }

    #[test]
    fn dbpsk_is_its_closed_form() {
        let one = Standard::B.mode(1_000_000).unwrap();
        // SNR 0 dB in 22 MHz at 1 Mbit/s: Eb/N0 = 22, Pb = exp(-22)/2.
        assert!((ber(Standard::B, one, 1.0) - 0.5 * (-22f64).exp()).abs() < 1e-15);
    }

    #[test]
    fn errors_fall_with_snr_and_rise_with_rate() {
        for standard in [Standard::B, Standard::A] {
            let modes = standard.modes();
            for snr_db in [-5.0, 0.0, 5.0, 10.0, 15.0, 20.0] {
                let snr = 10f64.powf(snr_db / 10.0);
                let fers: Vec<f64> =
                    modes.iter().map(|&m| 1.0 - success(standard, Preamble::Long, m, 1536, snr)).collect();
                // 9 Mbit/s (BPSK, rate 3/4) is known to need more SNR than 12
                // (QPSK, rate 1/2): compare OFDM rates of one code rate.
                let ordered = |i: usize, j: usize| fers[i] <= fers[j] + 1e-12;
                let pairs: &[(usize, usize)] = match standard {
                    Standard::B => &[(0, 1), (1, 2), (2, 3)],
                    _ => &[(0, 2), (2, 4), (1, 3), (3, 5), (5, 7), (6, 7)],
                };
                assert!(pairs.iter().all(|&(i, j)| ordered(i, j)), "{standard:?} at {snr_db} dB: {fers:?}");
            }
            for &m in modes {
                let at = |db: f64| 1.0 - success(standard, Preamble::Long, m, 1536, 10f64.powf(db / 10.0));
                assert!((0..60).all(|i| at(i as f64 * 0.5) >= at(i as f64 * 0.5 + 0.5)), "{m:?}");
                assert!(at(40.0) < 1e-9, "{m:?} still loses frames at 40 dB");
            }
        }
    }

    #[test]
    fn rayleigh_fading_costs_more_than_its_mean() {
        let eleven = Standard::B.mode(11_000_000).unwrap();
        let flat_at = |db: f64| mean_fer(Standard::B, Preamble::Long, eleven, 1536, 10f64.powf(db / 10.0), false);
        // Just above the cliff, where a steady signal loses 1% of frames, a
        // fade loses the frame and a boost cannot win one back.
        let db = calibrate(0.01, flat_at);
        let faded = mean_fer(Standard::B, Preamble::Long, eleven, 1536, 10f64.powf(db / 10.0), true);
        assert!(faded > 0.2, "{faded}");
        // The table interpolates the same integral.
        let table = FerTable::new(Standard::B, Preamble::Long, eleven, 1536, true);
        assert!((table.at(10f64.powf(db / 10.0)) - faded).abs() < 0.01);
        // Deep in the good region, Rayleigh loss falls as 1/SNR: ten times the SNR, a tenth of the loss.
        let high = mean_fer(Standard::B, Preamble::Long, eleven, 1536, 1e4, true);
        let higher = mean_fer(Standard::B, Preamble::Long, eleven, 1536, 1e5, true);
        assert!((high / higher - 10.0).abs() < 0.5, "{high} {higher}");
    }

    #[test]
    fn calibration_finds_the_offset_that_gives_the_target() {
        let eleven = Standard::B.mode(11_000_000).unwrap();
        let fer = |offset: f64| mean_fer(Standard::B, Preamble::Long, eleven, 1536, 10f64.powf(offset / 10.0), true);
        let offset = calibrate(0.15, fer);
        assert!((fer(offset) - 0.15).abs() < 1e-6, "{}", fer(offset));
    }
}
