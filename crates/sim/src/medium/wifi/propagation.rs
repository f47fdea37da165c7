//! Where nodes are and how much of a transmitter's power reaches each
//! receiver: placement helpers and path-loss models.
//!
//! - Log-distance: L(d) = L0 + 10 n log10(d / d0) for d > d0, L0 below
//!   (Rappaport, *Wireless Communications*, 2nd ed., eq. 4.68).
//! - Two-ray ground reflection: Friis free space up to the crossover
//!   distance dc = 4 pi ht hr / lambda, then Pr = Pt ht^2 hr^2 / (d^4 L)
//!   (Rappaport eq. 4.52; the crossover as ns-2 and ns-3 place it).
//! - Rayleigh fading: the received power times a unit-mean exponential
//!   gain, drawn per frame and receiver.

use crate::rng::Rng;
use std::f64::consts::PI;

/// Speed of light, m/s: propagation delays are distance / c.
pub const LIGHT: f64 = 299_792_458.0;

/// Thermal noise density at 290 K: -174 dBm/Hz.
const THERMAL_DBM_PER_HZ: f64 = -174.0;

/// A point on the plane, metres.
pub type Point = [f64; 2];

pub fn distance(a: Point, b: Point) -> f64 {
    ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2)).sqrt()
}

/// `n` points `spacing` apart along the x axis from `origin`.
pub fn line(n: usize, origin: Point, spacing: f64) -> Vec<Point> {
    (0..n).map(|i| [origin[0] + spacing * i as f64, origin[1]]).collect()
}

/// `n` points evenly around a circle of `radius` about `centre`, the first
/// at angle 0; with `centre_first`, the first point is the centre itself
/// and the other `n - 1` go around it.
pub fn circle(n: usize, centre: Point, radius: f64, centre_first: bool) -> Vec<Point> {
    let around = if centre_first { n.saturating_sub(1) } else { n };
    let ring = (0..around).map(|i| {
        let angle = 2.0 * PI * i as f64 / around as f64;
        [centre[0] + radius * angle.cos(), centre[1] + radius * angle.sin()]
    });
    if centre_first {
        std::iter::once(centre).chain(ring).take(n).collect()
    } else {
        ring.collect()
    }
}

/// `n` points over a `width` x `height` area cut into `columns` x `rows`
/// equal cells: node i goes to cell i mod cells (row by row), uniformly at
/// random within it.
pub fn grid(n: usize, width: f64, height: f64, columns: usize, rows: usize, rng: &mut Rng) -> Vec<Point> {
    let (cell_w, cell_h) = (width / columns as f64, height / rows as f64);
    (0..n)
        .map(|i| {
            let cell = i % (columns * rows);
            let (cx, cy) = ((cell % columns) as f64, (cell / columns) as f64);
            [(cx + rng.next_f64()) * cell_w, (cy + rng.next_f64()) * cell_h]
        })
        .collect()
}

/// A path-loss model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PathLoss {
    LogDistance { exponent: f64, reference_distance: f64, reference_loss_db: f64 },
    TwoRay { frequency_hz: f64, height_tx: f64, height_rx: f64, system_loss: f64 },
}

impl PathLoss {
    /// Loss in dB at distance `d` metres.
    pub fn loss_db(&self, d: f64) -> f64 {
        match *self {
            PathLoss::LogDistance { exponent, reference_distance, reference_loss_db } => {
                if d <= reference_distance {
                    reference_loss_db
                } else {
                    reference_loss_db + 10.0 * exponent * (d / reference_distance).log10()
                }
            }
            PathLoss::TwoRay { frequency_hz, height_tx, height_rx, system_loss } => {
                let lambda = LIGHT / frequency_hz;
                let d = d.max(1e-3);
                let crossover = 4.0 * PI * height_tx * height_rx / lambda;
                let gain = if d < crossover {
                    lambda * lambda / ((4.0 * PI * d).powi(2) * system_loss)
                } else {
                    (height_tx * height_rx).powi(2) / (d.powi(4) * system_loss)
                };
                -10.0 * gain.log10()
            }
        }
    }
}

/// Noise power in dBm: thermal noise in `bandwidth_hz` plus the receiver's noise figure.
pub fn noise_dbm(bandwidth_hz: f64, noise_figure_db: f64) -> f64 {
    THERMAL_DBM_PER_HZ + 10.0 * bandwidth_hz.log10() + noise_figure_db
}

pub fn db_to_linear(db: f64) -> f64 {
    10f64.powf(db / 10.0)
}

/// A unit-mean exponential gain: Rayleigh fading of the power.
pub fn rayleigh_gain(rng: &mut Rng) -> f64 {
    rng.exponential(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Purpose;

    #[test]
    fn log_distance_adds_ten_n_decibels_per_decade() {
        let model = PathLoss::LogDistance { exponent: 3.0, reference_distance: 1.0, reference_loss_db: 46.6777 };
        assert_eq!(model.loss_db(0.5), 46.6777);
        assert!((model.loss_db(10.0) - 76.6777).abs() < 1e-9);
        assert!((model.loss_db(100.0) - 106.6777).abs() < 1e-9);
    }

    #[test]
    fn two_ray_is_friis_then_falls_as_the_fourth_power() {
        let model = PathLoss::TwoRay { frequency_hz: 2.4e9, height_tx: 1.5, height_rx: 1.5, system_loss: 1.0 };
        let lambda = LIGHT / 2.4e9;
        // Friis at 10 m: 20 log10(4 pi d / lambda).
        let friis = 20.0 * (4.0 * PI * 10.0 / lambda).log10();
        assert!((model.loss_db(10.0) - friis).abs() < 1e-9);
        // Beyond the crossover (about 226 m) doubling the distance costs 12.04 dB.
        assert!((model.loss_db(800.0) - model.loss_db(400.0) - 40.0 * 2f64.log10()).abs() < 1e-9);
        // At 400 m: 40 log10(d) - 20 log10(ht hr).
        assert!((model.loss_db(400.0) - (40.0 * 400f64.log10() - 20.0 * (2.25f64).log10())).abs() < 1e-9);
    }

    #[test]
    fn placements_put_nodes_where_they_say() {
        assert_eq!(line(3, [0.0, 0.0], 9.0), vec![[0.0, 0.0], [9.0, 0.0], [18.0, 0.0]]);
        let ring = circle(5, [1.0, 1.0], 2.0, true);
        assert_eq!(ring[0], [1.0, 1.0]);
        assert!(ring[1..].iter().all(|&p| (distance(p, [1.0, 1.0]) - 2.0).abs() < 1e-12));
        assert!((distance(ring[1], ring[3]) - 4.0).abs() < 1e-12, "opposite points are a diameter apart");
        let mut rng = Rng::stream(1, Purpose::Placement, 0);
        let cells = grid(32, 800.0, 800.0, 4, 4, &mut rng);
        for (i, p) in cells.iter().enumerate() {
            let cell = i % 16;
            let (cx, cy) = ((cell % 4) as f64 * 200.0, (cell / 4) as f64 * 200.0);
            assert!(p[0] >= cx && p[0] < cx + 200.0 && p[1] >= cy && p[1] < cy + 200.0, "{i}: {p:?}");
        }
    }

    #[test]
    fn noise_floor_of_a_22_mhz_channel() {
        // -174 + 73.42 + 7 = -93.58 dBm.
        assert!((noise_dbm(22e6, 7.0) + 93.575).abs() < 1e-3);
    }
}
