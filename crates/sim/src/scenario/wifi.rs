//! The `[wifi]` section: a shared 802.11 channel, where its nodes stand,
//! who reaches and senses whom, how frames fail, and the MAC's parameters.

use super::{NodeId, Rate, Seconds};
use crate::medium::wifi::phy::{Mode, Phy, Preamble, Standard};
use crate::medium::wifi::propagation::{self, db_to_linear, distance, noise_dbm, PathLoss};
use crate::medium::wifi::{Channel, Geometry, Interference, WifiConfig};
use crate::rng::{Purpose, Rng};
use ncmesh_proto::params::{Invalid, KeyPath};
use schemars::JsonSchema;
use serde::de::{SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::HashSet;

/// The link class of the channel's interfaces, as `coding.hop_classes` names it.
pub const WIFI_CLASS: &str = "wifi";

/// A shared 802.11 channel. See `docs/scenarios.md#the-shared-80211-channel`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WifiSpec {
    /// The nodes on the channel, in the order placements and matrices use; every node by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<Vec<NodeId>>,
    #[serde(default)]
    pub standard: Standard,
    #[serde(default)]
    pub preamble: Preamble,
    /// Unicast data frames; the standard's highest rate by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_rate: Option<Rate>,
    /// RTS, CTS and ACK frames; the standard's lowest rate by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_rate: Option<Rate>,
    /// Broadcast frames; the standard's lowest rate by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broadcast_rate: Option<Rate>,
    /// aSlotTime and aSIFSTime; the standard's by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<Seconds>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sifs: Option<Seconds>,
    /// The contention window bounds; CWmin is the standard's by default (31 or 15).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cw_min: Option<u32>,
    #[serde(default = "default_cw_max")]
    pub cw_max: u32,
    /// Attempts of a frame (or its RTS) before it is dropped.
    #[serde(default = "default_short_retry_limit")]
    pub short_retry_limit: u32,
    /// Attempts of a data frame sent after RTS/CTS.
    #[serde(default = "default_long_retry_limit")]
    pub long_retry_limit: u32,
    /// Unicast frames whose MPDU is longer than this go after RTS/CTS.
    #[serde(default = "default_rts_threshold")]
    pub rts_threshold: u32,
    /// The MAC queue of each node, in packets, and its discipline.
    #[serde(default = "default_queue")]
    pub queue: u32,
    #[serde(default = "default_qdisc")]
    pub qdisc: String,
    /// Where the nodes stand, metres.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
    /// Who decodes whom: a range in metres, or a 0/1 matrix (row: transmitter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reach: Option<PerPair>,
    /// Who senses (and is interfered with by) whom: a range or a matrix; `reach` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sense: Option<PerPair>,
    /// Frame error rate of data frames: one for every pair, or a matrix (row: transmitter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fer: Option<PerPair>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub propagation: Option<PropagationSpec>,
    #[serde(default)]
    pub interference: InterferenceKind,
    /// Under SINR, a frame this many dB stronger than the one being received captures the receiver.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture_db: Option<f64>,
}

fn default_cw_max() -> u32 {
    1023
}
fn default_short_retry_limit() -> u32 {
    7
}
fn default_long_retry_limit() -> u32 {
    4
}
fn default_rts_threshold() -> u32 {
    65_535
}
fn default_queue() -> u32 {
    100
}
fn default_qdisc() -> String {
    "droptail".to_string()
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum InterferenceKind {
    #[default]
    Protocol,
    Sinr,
}

/// Node positions.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Placement {
    /// `[x, y]` per node.
    Coordinates { at: Vec<[f64; 2]> },
    /// Along the x axis, `spacing` apart.
    Line {
        spacing: f64,
        #[serde(default)]
        origin: [f64; 2],
    },
    /// Evenly around a circle; with `centre_first`, the first node at the centre.
    Circle {
        radius: f64,
        #[serde(default)]
        centre: [f64; 2],
        #[serde(default)]
        centre_first: bool,
    },
    /// A `width` x `height` area in `columns` x `rows` cells; node i in cell
    /// i mod cells, uniformly at random within it (from the run's seed).
    Grid { width: f64, height: f64, columns: u32, rows: u32 },
}

/// A path-loss model and the radio around it.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PropagationSpec {
    pub model: PathLossKind,
    /// Log-distance: exponent, reference distance (m) and loss there (dB).
    #[serde(default = "default_exponent")]
    pub exponent: f64,
    #[serde(default = "one")]
    pub reference_distance: f64,
    #[serde(default = "default_reference_loss")]
    pub reference_loss_db: f64,
    /// Two-ray ground: carrier frequency, antenna heights (m), system loss (linear, >= 1).
    #[serde(default = "default_frequency")]
    pub frequency_hz: f64,
    #[serde(default = "default_height")]
    pub antenna_height: f64,
    #[serde(default = "one")]
    pub system_loss: f64,
    #[serde(default = "default_tx_power")]
    pub tx_power_dbm: f64,
    #[serde(default = "default_noise_figure")]
    pub noise_figure_db: f64,
    /// Pairs whose mean received power reaches this decode each other (unless `reach` is given).
    #[serde(default = "default_rx_threshold")]
    pub rx_threshold_dbm: f64,
    /// Pairs whose mean received power reaches this sense each other (unless `sense` is given).
    #[serde(default = "default_cs_threshold")]
    pub cs_threshold_dbm: f64,
    /// Fade each frame's power at each receiver by a unit-mean exponential (Rayleigh) gain.
    #[serde(default)]
    pub rayleigh: bool,
    /// Shift every pair's SNR by one offset so that the mean frame loss of
    /// data frames over the pairs in reach is this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_loss: Option<f64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PathLossKind {
    LogDistance,
    TwoRay,
}

fn default_exponent() -> f64 {
    3.0
}
fn one() -> f64 {
    1.0
}
/// Friis loss at 1 m and 5.15 GHz, ns-3's LogDistancePropagationLossModel default.
fn default_reference_loss() -> f64 {
    46.6777
}
fn default_frequency() -> f64 {
    2.4e9
}
fn default_height() -> f64 {
    1.5
}
/// 16.0206 dBm (40 mW), ns-3's default transmit power.
fn default_tx_power() -> f64 {
    16.0206
}
fn default_noise_figure() -> f64 {
    7.0
}
/// ns-3's receive sensitivity.
fn default_rx_threshold() -> f64 {
    -101.0
}
fn default_cs_threshold() -> f64 {
    -101.0
}

/// A value for every pair, or a matrix with one row per transmitter.
#[derive(Clone, Debug, PartialEq)]
pub enum PerPair {
    All(f64),
    Matrix(Vec<Vec<f64>>),
}

impl<'de> Deserialize<'de> for PerPair {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct PerPairVisitor;
        impl<'de> Visitor<'de> for PerPairVisitor {
            type Value = PerPair;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a number, or a matrix (an array of rows of numbers)")
            }
            fn visit_f64<E>(self, v: f64) -> Result<PerPair, E> {
                Ok(PerPair::All(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<PerPair, E> {
                Ok(PerPair::All(v as f64))
            }
            fn visit_u64<E>(self, v: u64) -> Result<PerPair, E> {
                Ok(PerPair::All(v as f64))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<PerPair, A::Error> {
                let mut rows = Vec::new();
                while let Some(row) = seq.next_element::<Vec<f64>>()? {
                    rows.push(row);
                }
                Ok(PerPair::Matrix(rows))
            }
        }
        d.deserialize_any(PerPairVisitor)
    }
}

impl Serialize for PerPair {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            PerPair::All(v) => s.serialize_f64(*v),
            PerPair::Matrix(rows) => rows.serialize(s),
        }
    }
}

impl JsonSchema for PerPair {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "PerPair".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "One number for every pair, or a matrix with a row per transmitter.",
            "anyOf": [
                {"type": "number"},
                {"type": "array", "items": {"type": "array", "items": {"type": "number"}}}
            ]
        })
    }
}

type Check = Result<(), Invalid>;

fn fail(path: KeyPath, message: impl Into<String>) -> Check {
    Err(Invalid::new(path, message))
}

fn mbps(bps: u64) -> String {
    format!("{}", bps as f64 / 1e6)
}

impl WifiSpec {
    /// The nodes on the channel.
    pub fn members(&self, all: &[NodeId]) -> Vec<NodeId> {
        self.nodes.clone().unwrap_or_else(|| all.to_vec())
    }

    /// Checks what types cannot say; `at` is the section's path and `all` the scenario's nodes.
    pub fn validate(&self, at: &KeyPath, all: &[NodeId]) -> Check {
        let members = self.members(all);
        let known: HashSet<NodeId> = all.iter().copied().collect();
        let mut seen = HashSet::new();
        for (i, id) in members.iter().enumerate() {
            if !known.contains(id) {
                fail(at.key("nodes").index(i), format!("no node {id}; expected one of the labels in `nodes`"))?;
            }
            if !seen.insert(*id) {
                fail(at.key("nodes").index(i), format!("node {id} is listed twice"))?;
            }
        }
        if members.len() < 2 {
            fail(at.key("nodes"), "expected at least two nodes on the channel")?;
        }
        let n = members.len();
        let rates = self.standard.modes().iter().map(|m| mbps(m.bps)).collect::<Vec<_>>().join(", ");
        for (key, rate) in [
            ("data_rate", self.data_rate),
            ("control_rate", self.control_rate),
            ("broadcast_rate", self.broadcast_rate),
        ] {
            if let Some(r) = rate {
                if self.standard.mode(r.0).is_none() {
                    fail(
                        at.key(key),
                        format!(
                            "no rate of {} Mbit/s in {}; expected one of {rates} Mbit/s",
                            mbps(r.0),
                            self.standard.name()
                        ),
                    )?;
                }
            }
        }
        if let Some(cw) = self.cw_min {
            if cw == 0 || cw > 32_767 {
                fail(at.key("cw_min"), format!("expected 1 to 32767 slots, found {cw}"))?;
            }
        }
        let cw_min = self.cw_min.unwrap_or(self.standard.cw_min());
        if self.cw_max < cw_min || self.cw_max > 32_767 {
            fail(at.key("cw_max"), format!("expected cw_min ({cw_min}) to 32767 slots, found {}", self.cw_max))?;
        }
        for (key, limit) in [("short_retry_limit", self.short_retry_limit), ("long_retry_limit", self.long_retry_limit)]
        {
            if limit == 0 || limit > 1_000_000 {
                fail(at.key(key), format!("expected 1 to 1000000 attempts, found {limit}"))?;
            }
        }
        for (key, t) in [("slot", self.slot), ("sifs", self.sifs)] {
            if t.is_some_and(|t| t.0.as_nanos() == 0 || t.0.as_nanos() > 1_000_000_000) {
                fail(at.key(key), "expected a positive time of at most 1 s")?;
            }
        }
        if self.queue == 0 {
            fail(at.key("queue"), "expected a queue of at least 1 packet")?;
        }
        if let Some(p) = &self.placement {
            validate_placement(p, &at.key("placement"), n)?;
        }
        if let Some(c) = self.capture_db {
            if !c.is_finite() || c < 0.0 {
                fail(at.key("capture_db"), format!("expected a non-negative margin in dB, found {c}"))?;
            }
        }
        let positioned = self.placement.is_some();
        for key in ["reach", "sense"] {
            let value = if key == "reach" { &self.reach } else { &self.sense };
            match value {
                Some(PerPair::All(metres)) => {
                    if !(metres.is_finite() && *metres > 0.0) {
                        fail(at.key(key), format!("expected a positive range in metres, found {metres}"))?;
                    }
                    if !positioned {
                        fail(at.key(key), "a range in metres needs wifi.placement; give a 0/1 matrix instead")?;
                    }
                }
                Some(PerPair::Matrix(rows)) => matrix(rows, &at.key(key), n, "0 or 1", |v| v == 0.0 || v == 1.0)?,
                None => {}
            }
        }
        if let (Some(PerPair::All(reach)), Some(PerPair::All(sense))) = (&self.reach, &self.sense) {
            if sense < reach {
                fail(
                    at.key("sense"),
                    format!("expected a sense range of at least the reach ({reach} m), found {sense}"),
                )?;
            }
        }
        match &self.fer {
            Some(PerPair::All(p)) if !(0.0..=1.0).contains(p) => {
                fail(at.key("fer"), format!("expected a probability in [0, 1], found {p}"))?
            }
            Some(PerPair::Matrix(rows)) => {
                matrix(rows, &at.key("fer"), n, "a probability in [0, 1]", |v| (0.0..=1.0).contains(&v))?
            }
            _ => {}
        }
        if let Some(p) = &self.propagation {
            validate_propagation(p, &at.key("propagation"))?;
            if !positioned {
                fail(at.key("propagation"), "a propagation model needs wifi.placement")?;
            }
        } else {
            if self.reach.is_none() {
                fail(
                    at.key("reach"),
                    "expected a range or a matrix, or a propagation model to decide who decodes whom",
                )?;
            }
            if self.interference == InterferenceKind::Sinr {
                fail(at.key("interference"), "the SINR model needs received powers: give wifi.propagation")?;
            }
        }
        Ok(())
    }
}

fn validate_placement(p: &Placement, at: &KeyPath, n: usize) -> Check {
    let positive = |key: &str, v: f64| -> Check {
        if v.is_finite() && v > 0.0 {
            Ok(())
        } else {
            fail(at.key(key), format!("expected a positive length in metres, found {v}"))
        }
    };
    match p {
        Placement::Coordinates { at: points } => {
            if points.len() != n {
                fail(
                    at.key("at"),
                    format!("expected {n} points, one per node on the channel, found {}", points.len()),
                )?;
            }
            for (i, point) in points.iter().enumerate() {
                if !point.iter().all(|c| c.is_finite()) {
                    fail(at.key("at").index(i), "expected finite coordinates")?;
                }
            }
            Ok(())
        }
        Placement::Line { spacing, .. } => positive("spacing", *spacing),
        Placement::Circle { radius, .. } => positive("radius", *radius),
        Placement::Grid { width, height, columns, rows } => {
            positive("width", *width)?;
            positive("height", *height)?;
            if *columns == 0 || *rows == 0 {
                fail(at.key(if *columns == 0 { "columns" } else { "rows" }), "expected at least one cell")?;
            }
            Ok(())
        }
    }
}

fn validate_propagation(p: &PropagationSpec, at: &KeyPath) -> Check {
    let positive = [
        ("exponent", p.exponent),
        ("reference_distance", p.reference_distance),
        ("frequency_hz", p.frequency_hz),
        ("antenna_height", p.antenna_height),
    ];
    for (key, v) in positive {
        if !(v.is_finite() && v > 0.0) {
            fail(at.key(key), format!("expected a positive number, found {v}"))?;
        }
    }
    if !(p.system_loss.is_finite() && p.system_loss >= 1.0) {
        fail(at.key("system_loss"), format!("expected a linear loss of at least 1, found {}", p.system_loss))?;
    }
    for (key, v) in [
        ("reference_loss_db", p.reference_loss_db),
        ("tx_power_dbm", p.tx_power_dbm),
        ("noise_figure_db", p.noise_figure_db),
        ("rx_threshold_dbm", p.rx_threshold_dbm),
        ("cs_threshold_dbm", p.cs_threshold_dbm),
    ] {
        if !v.is_finite() {
            fail(at.key(key), format!("expected a finite number, found {v}"))?;
        }
    }
    if let Some(loss) = p.mean_loss {
        if !(0.0..1.0).contains(&loss) || loss == 0.0 {
            fail(at.key("mean_loss"), format!("expected a probability in (0, 1), found {loss}"))?;
        }
    }
    Ok(())
}

/// An n x n matrix whose entries satisfy `ok`; the diagonal is not read.
fn matrix(rows: &[Vec<f64>], at: &KeyPath, n: usize, what: &str, ok: impl Fn(f64) -> bool) -> Check {
    if rows.len() != n {
        fail(
            at.clone(),
            format!("expected a {n} x {n} matrix, one row per node on the channel, found {} rows", rows.len()),
        )?;
    }
    for (i, row) in rows.iter().enumerate() {
        if row.len() != n {
            fail(at.index(i), format!("expected {n} entries, one per node on the channel, found {}", row.len()))?;
        }
        for (j, &v) in row.iter().enumerate() {
            if i != j && !ok(v) {
                fail(at.index(i).index(j), format!("expected {what}, found {v}"))?;
            }
        }
    }
    Ok(())
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

impl WifiSpec {
    /// The channel of a validated section; `all` are the scenario's nodes.
    pub fn resolve(&self, all: &[NodeId], seed: u64) -> Channel {
        let spec = self;
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
        let rate = |r: Option<Rate>, default: Mode| r.and_then(|r| standard.mode(r.0)).unwrap_or(default);
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
        let mean_loss = spec.propagation.as_ref().and_then(|p| p.mean_loss);
        let geometry = Geometry { members, positions, reach, sense, power_mw };
        Channel::new(geometry, fer, rayleigh, config, mean_loss)
    }
}
