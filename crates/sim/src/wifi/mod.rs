//! The shared 802.11 channel of seeds 001 and 003: one radio and one DCF
//! MAC per node, carrier sense with NAV and EIFS, collisions, MAC
//! acknowledgements and retries to one addressee, per-pair frame errors,
//! and every decoded frame delivered to its receiver marked addressed or
//! overheard.
//!
//! - `phy`: rates, frame durations, interframe spaces.
//! - `dcf`: a station's backoff counter, contention window and retry counters.
//! - `error`: SNR to frame error rate, per rate.
//! - `propagation`: placement and path loss.
//! - `medium`: the channel, a `Medium` of the simulator.
//!
//! [`Channel`] resolves a scenario's `[wifi]` section into who reaches and
//! senses whom and how frames fail, and builds the medium from it.

pub mod dcf;
pub mod error;
pub mod medium;
pub mod phy;
pub mod propagation;

pub use medium::{FrameErrors, Interference, Kind, Link, PairStats, RadioStats, Transmission, Wifi, WifiConfig};

#[cfg(test)]
mod tests;

use crate::rng::{Purpose, Rng};
use crate::scenario::wifi::{InterferenceKind, PathLossKind, PerPair, Placement, WifiSpec};
use crate::scenario::NodeId;
use ncmesh_proto::Duration;
use phy::{Phy, DATA_OVERHEAD};
use propagation::{db_to_linear, distance, noise_dbm, PathLoss, Point, LIGHT};
use std::net::Ipv4Addr;

/// The IP packet size the mean loss of a calibrated channel refers to.
pub const CALIBRATION_PACKET: u32 = 1500;

/// A channel resolved from its scenario section.
#[derive(Clone, Debug)]
pub struct Channel {
    /// The stations' scenario labels, in port order.
    pub members: Vec<NodeId>,
    pub positions: Option<Vec<Point>>,
    /// `reach[i][j]`: j decodes i's frames.
    pub reach: Vec<Vec<bool>>,
    /// `sense[i][j]`: j senses i's transmissions (and is interfered with by them).
    pub sense: Vec<Vec<bool>>,
    /// Mean received power, mW, where a propagation model gives one.
    pub power_mw: Vec<Vec<f64>>,
    /// Explicit frame error rates, else errors come from the SNR.
    pub fer: Option<Vec<Vec<f64>>>,
    pub rayleigh: bool,
    pub config: WifiConfig,
    /// The loss of a data frame by mean SNR, where errors come from the SNR.
    table: Option<error::FerTable>,
}

fn per_pair(value: &PerPair, n: usize, of_distance: impl Fn(usize, usize, f64) -> bool) -> Vec<Vec<bool>> {
    (0..n)
        .map(|i| {
            (0..n)
                .map(|j| {
                    i != j
                        && match value {
                            PerPair::All(x) => of_distance(i, j, *x),
                            PerPair::Matrix(m) => m[i][j] != 0.0,
                        }
                })
                .collect()
        })
        .collect()
}

impl Channel {
    /// Resolves a validated section; `all` are the scenario's nodes.
    pub fn resolve(spec: &WifiSpec, all: &[NodeId], seed: u64) -> Channel {
        let members = spec.members(all);
        let n = members.len();
        let standard = spec.standard;
        let positions = spec.placement.as_ref().map(|p| match *p {
            Placement::Coordinates { ref at } => at.clone(),
            Placement::Line { spacing, origin } => propagation::line(n, origin, spacing),
            Placement::Circle { radius, centre, centre_first } => propagation::circle(n, centre, radius, centre_first),
            Placement::Grid { width, height, columns, rows } => {
                let mut rng = Rng::stream(seed, Purpose::Placement, 0);
                propagation::grid(n, width, height, columns as usize, rows as usize, &mut rng)
            }
        });
        let within = |i: usize, j: usize, range: f64| positions.as_ref().is_some_and(|p| distance(p[i], p[j]) <= range);
        let mut noise_mw = 1.0;
        let mut power_mw = vec![vec![0.0; n]; n];
        let mut heard = None;
        if let (Some(prop), Some(points)) = (&spec.propagation, &positions) {
            let model = match prop.model {
                PathLossKind::LogDistance => PathLoss::LogDistance {
                    exponent: prop.exponent,
                    reference_distance: prop.reference_distance,
                    reference_loss_db: prop.reference_loss_db,
                },
                PathLossKind::TwoRay => PathLoss::TwoRay {
                    frequency_hz: prop.frequency_hz,
                    height_tx: prop.antenna_height,
                    height_rx: prop.antenna_height,
                    system_loss: prop.system_loss,
                },
            };
            noise_mw = db_to_linear(noise_dbm(standard.bandwidth_hz(), prop.noise_figure_db));
            let dbm: Vec<Vec<f64>> = (0..n)
                .map(|i| (0..n).map(|j| prop.tx_power_dbm - model.loss_db(distance(points[i], points[j]))).collect())
                .collect();
            power_mw = dbm.iter().map(|row| row.iter().map(|&d| db_to_linear(d)).collect()).collect();
            heard = Some((dbm, prop.rx_threshold_dbm, prop.cs_threshold_dbm));
        }
        let by_power = |threshold: f64| -> Vec<Vec<bool>> {
            let (dbm, _, _) = heard.as_ref().expect("validated: a propagation model decides");
            (0..n).map(|i| (0..n).map(|j| i != j && dbm[i][j] >= threshold).collect()).collect()
        };
        let reach = match &spec.reach {
            Some(value) => per_pair(value, n, within),
            None => by_power(heard.as_ref().map_or(0.0, |h| h.1)),
        };
        let mut sense = match (&spec.sense, &spec.reach) {
            (Some(value), _) => per_pair(value, n, within),
            (None, None) => by_power(heard.as_ref().map_or(0.0, |h| h.2)),
            (None, Some(_)) => reach.clone(),
        };
        for i in 0..n {
            for j in 0..n {
                sense[i][j] |= reach[i][j];
            }
        }
        let fer = spec.fer.as_ref().map(|value| match value {
            PerPair::All(p) => vec![vec![*p; n]; n],
            PerPair::Matrix(m) => m.clone(),
        });
        let fer = fer.or_else(|| spec.propagation.is_none().then(|| vec![vec![0.0; n]; n]));
        let rate = |r: Option<crate::scenario::Rate>, default: phy::Mode| {
            r.and_then(|r| standard.mode(r.0)).unwrap_or(default)
        };
        let modes = standard.modes();
        let phy = Phy {
            standard,
            preamble: spec.preamble,
            slot: spec.slot.map_or(standard.slot(), |s| s.0),
            sifs: spec.sifs.map_or(standard.sifs(), |s| s.0),
        };
        let config = WifiConfig {
            phy,
            data: rate(spec.data_rate, modes[modes.len() - 1]),
            control: rate(spec.control_rate, standard.lowest()),
            broadcast: rate(spec.broadcast_rate, standard.lowest()),
            cw_min: spec.cw_min.unwrap_or(standard.cw_min()),
            cw_max: spec.cw_max,
            short_retry_limit: spec.short_retry_limit,
            long_retry_limit: spec.long_retry_limit,
            rts_threshold: spec.rts_threshold,
            interference: match spec.interference {
                InterferenceKind::Protocol => Interference::Protocol,
                InterferenceKind::Sinr => Interference::Sinr { capture_db: spec.capture_db },
            },
            noise_mw,
        };
        let rayleigh = spec.propagation.as_ref().is_some_and(|p| p.rayleigh);
        let bytes = CALIBRATION_PACKET + DATA_OVERHEAD;
        let table = fer.is_none().then(|| error::FerTable::new(standard, spec.preamble, config.data, bytes, rayleigh));
        let mut channel = Channel { members, positions, reach, sense, power_mw, fer, rayleigh, config, table };
        if let Some(target) = spec.propagation.as_ref().and_then(|p| p.mean_loss) {
            channel.calibrate(target);
        }
        channel
    }

    /// Moves the noise floor so that data frames of a 1500-byte packet are
    /// lost at rate `target` on average over the pairs in reach.
    fn calibrate(&mut self, target: f64) {
        let pairs: Vec<(usize, usize)> = self.reach_pairs().collect();
        if pairs.is_empty() || self.fer.is_some() {
            return;
        }
        let noise = self.config.noise_mw;
        let table = self.table.as_ref().expect("errors come from the SNR");
        let offset = error::calibrate(target, |offset_db| {
            let gain = db_to_linear(offset_db) / noise;
            pairs.iter().map(|&(i, j)| table.at(self.power_mw[i][j] * gain)).sum::<f64>() / pairs.len() as f64
        });
        self.config.noise_mw = noise / db_to_linear(offset);
    }

    fn reach_pairs(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        let n = self.members.len();
        (0..n).flat_map(move |i| (0..n).filter(move |&j| self.reach[i][j]).map(move |j| (i, j)))
    }

    /// The mean loss of a data frame holding a 1500-byte packet from `i` at `j`, with nothing overlapping it.
    pub fn loss(&self, i: usize, j: usize) -> f64 {
        if !self.reach[i][j] {
            return 1.0;
        }
        match (&self.fer, &self.table) {
            (Some(fer), _) => fer[i][j],
            (None, Some(table)) => table.at(self.power_mw[i][j] / self.config.noise_mw),
            (None, None) => unreachable!("a channel has explicit errors or a table"),
        }
    }

    /// Pairs of ports that routing may use: each decodes the other and not every frame is lost.
    pub fn links(&self) -> Vec<[usize; 2]> {
        let n = self.members.len();
        (0..n)
            .flat_map(|i| (i + 1..n).map(move |j| [i, j]))
            .filter(|&[i, j]| self.reach[i][j] && self.reach[j][i] && self.loss(i, j) < 1.0 && self.loss(j, i) < 1.0)
            .collect()
    }

    /// The medium, for stations with these addresses and node indices (which name their random streams).
    pub fn build(&self, addresses: &[Ipv4Addr], nodes: &[usize], seed: u64) -> Wifi {
        let n = self.members.len();
        let delay = |i: usize, j: usize| {
            self.positions.as_ref().map_or(Duration::ZERO, |p| Duration::from_secs_f64(distance(p[i], p[j]) / LIGHT))
        };
        let links = (0..n)
            .map(|i| {
                (0..n)
                    .filter(|&j| self.sense[i][j])
                    .map(|j| Link {
                        to: j,
                        delay: delay(i, j),
                        reach: self.reach[i][j],
                        errors: match &self.fer {
                            Some(fer) => FrameErrors::Fer(fer[i][j]),
                            None => FrameErrors::Snr,
                        },
                        power_mw: self.power_mw[i][j],
                        rayleigh: self.rayleigh,
                        rng: Rng::stream(seed, Purpose::Reception, (nodes[i] as u64) << 32 | nodes[j] as u64),
                        stats: PairStats::default(),
                    })
                    .collect()
            })
            .collect();
        let stations = (0..n).map(|i| (addresses[i], Rng::stream(seed, Purpose::Backoff, nodes[i] as u64))).collect();
        Wifi::new(self.config, stations, links)
    }
}
