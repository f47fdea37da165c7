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
//! [`Channel`] is who reaches and senses whom and how frames fail, as a
//! scenario's `[wifi]` section resolves into it; it builds the medium.

pub mod dcf;
pub mod error;
pub mod medium;
pub mod phy;
pub mod propagation;

pub use medium::{FrameErrors, Interference, Kind, Link, PairStats, RadioStats, Transmission, Wifi, WifiConfig};

#[cfg(test)]
mod tests;

use crate::rng::{Purpose, Rng};
use crate::routing::NodeId;
use ncmesh_proto::Duration;
use phy::DATA_OVERHEAD;
use propagation::{db_to_linear, distance, Point, LIGHT};
use std::net::Ipv4Addr;

/// The IP packet size the mean loss of a calibrated channel refers to.
pub const CALIBRATION_PACKET: u32 = 1500;

/// A channel: who reaches and senses whom, how frames fail, and the MAC's parameters.
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

/// Where the stations are and who reaches and senses whom, as a scenario resolves it.
#[derive(Clone, Debug)]
pub struct Geometry {
    /// The stations' scenario labels, in port order.
    pub members: Vec<NodeId>,
    pub positions: Option<Vec<Point>>,
    /// `reach[i][j]`: j decodes i's frames.
    pub reach: Vec<Vec<bool>>,
    /// `sense[i][j]`: j senses i's transmissions; it includes `reach`.
    pub sense: Vec<Vec<bool>>,
    /// Mean received power, mW, where a propagation model gives one.
    pub power_mw: Vec<Vec<f64>>,
}

impl Channel {
    /// A channel over `geometry`. Frame errors are `fer` where given,
    /// otherwise the error model's at each pair's SNR, with the noise floor
    /// moved so that the mean loss is `mean_loss` where that is given.
    pub fn new(
        geometry: Geometry,
        fer: Option<Vec<Vec<f64>>>,
        rayleigh: bool,
        config: WifiConfig,
        mean_loss: Option<f64>,
    ) -> Channel {
        let Geometry { members, positions, reach, sense, power_mw } = geometry;
        let bytes = CALIBRATION_PACKET + DATA_OVERHEAD;
        let phy = config.phy;
        let table =
            fer.is_none().then(|| error::FerTable::new(phy.standard, phy.preamble, config.data, bytes, rayleigh));
        let mut channel = Channel { members, positions, reach, sense, power_mw, fer, rayleigh, config, table };
        if let Some(target) = mean_loss {
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
