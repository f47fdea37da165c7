//! The scenario file: one TOML document describing nodes, links, routes,
//! flows, protocol parameters, duration, seed and probes.
//!
//! Loading is three steps, each of which names the offending key and line:
//! parse the TOML, apply `--set` overrides and expand link classes and TCP
//! defaults, then deserialize into these types (unknown keys refused) and
//! validate what types cannot say (ranges, references, routes).

mod load;
mod units;
mod validate;
pub mod wifi;

pub use crate::routing::NodeId;
pub use load::{Scenario, ScenarioError, Source};
pub use units::{Rate, Seconds};

use crate::medium::wifi::Channel;
use crate::routing::{StaticRoute, TopologySpec};
use ncmesh_proto::scheme::{Registry, NONE};
use ncmesh_proto::tcp::TcpConfig;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use wifi::WifiSpec;

/// The document, as written. See `docs/scenarios.md`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScenarioSpec {
    /// A short name, used in reports.
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Simulated time to run.
    pub duration: Seconds,
    /// The run's seed: every random stream derives from it.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Node labels.
    pub nodes: Vec<NodeId>,
    /// Named sets of link parameters; a link takes its class's values and overrides any of them.
    #[serde(default)]
    pub link_class: BTreeMap<String, LinkClass>,
    #[serde(default)]
    pub links: Vec<LinkSpec>,
    /// A shared 802.11 channel between (some of) the nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wifi: Option<WifiSpec>,
    /// Static routes that replace shortest paths at one node towards one destination.
    #[serde(default)]
    pub routes: Vec<RouteSpec>,
    /// TCP parameters shared by every TCP flow; a flow's own `tcp` table overrides them.
    #[serde(default)]
    pub tcp: TcpConfig,
    #[serde(default)]
    pub flows: Vec<FlowSpec>,
    /// The coding scheme and its parameters.
    #[serde(default)]
    pub coding: CodingSpec,
    /// Code and carry real bytes ("real"), checked by the receiving
    /// applications, or track coefficient vectors only ("virtual", faster).
    /// Both give the same run.
    #[serde(default)]
    pub payloads: Payloads,
    #[serde(default)]
    pub probes: ProbeSpec,
    /// What `ncmesh emulate` runs in the nodes' network namespaces.
    #[serde(default)]
    pub emulate: EmulateSpec,
}

/// `ncmesh emulate`'s settings: the TUN devices' MTU and the commands to
/// run in nodes' namespaces. The simulator ignores them.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct EmulateSpec {
    /// The MTU of every link's TUN devices, bytes: 1052 makes kernel TCP
    /// with timestamps send 1000-byte segments, as an `mss = 1000` run does.
    pub mtu: u32,
    pub commands: Vec<CommandSpec>,
}

impl Default for EmulateSpec {
    fn default() -> Self {
        EmulateSpec { mtu: 1500, commands: Vec::new() }
    }
}

/// A command run in one node's namespace through `sh -c`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommandSpec {
    pub node: NodeId,
    pub run: String,
    /// When it starts, after the links are up.
    #[serde(default)]
    pub start: Seconds,
    /// A server: the emulation does not wait for it, and ends it at the close.
    #[serde(default)]
    pub background: bool,
}

/// What routing sees of a scenario: its nodes; its links, then every pair
/// of stations on the wireless channel that decode each other, as links
/// of their own (link `links.len() + k` is the channel's k-th pair); and
/// its static routes.
#[derive(Clone, Copy, Debug)]
pub struct Layout<'a> {
    pub spec: &'a ScenarioSpec,
    pub channel: Option<&'a Channel>,
}

impl TopologySpec for Layout<'_> {
    fn nodes(&self) -> &[NodeId] {
        &self.spec.nodes
    }

    fn links(&self) -> impl Iterator<Item = [NodeId; 2]> {
        let wireless = self.channel.map(|c| c.links().into_iter().map(|[i, j]| [c.members[i], c.members[j]]));
        self.spec.links.iter().map(|link| link.between).chain(wireless.into_iter().flatten())
    }

    fn static_routes(&self) -> impl Iterator<Item = StaticRoute<'_>> {
        self.spec.routes.iter().map(|r| StaticRoute { at: r.at, to: r.to, via: &r.via })
    }
}

/// What moves through the network.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Payloads {
    #[default]
    Virtual,
    Real,
}

/// Which coding scheme runs, where, and the parameter tables of the schemes.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct CodingSpec {
    /// The scheme every flow is coded with end to end and every node per
    /// hop, as far as the scheme codes there: "none", or a registered name.
    #[serde(default = "no_scheme")]
    pub scheme: String,
    /// The nodes that run the scheme's hop layer; every node by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hop_nodes: Option<Vec<NodeId>>,
    /// The link classes whose interfaces the hop layer codes; the scheme's
    /// own choice by default (every class, or for TCP-HONC "wireless").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hop_classes: Option<Vec<String>>,
    /// One table of parameters per scheme family, by its name (`tcpnc`, `honc`, ...).
    #[serde(flatten)]
    pub params: BTreeMap<String, toml::Value>,
}

impl Default for CodingSpec {
    fn default() -> Self {
        CodingSpec { scheme: no_scheme(), hop_nodes: None, hop_classes: None, params: BTreeMap::new() }
    }
}

fn no_scheme() -> String {
    NONE.to_string()
}

impl JsonSchema for CodingSpec {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "CodingSpec".into()
    }

    /// The registered schemes and their parameter tables.
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let registry = Registry::builtin();
        let names: Vec<&str> = std::iter::once(NONE).chain(registry.names()).collect();
        let mut properties = serde_json::Map::new();
        properties.insert("scheme".into(), serde_json::json!({"type": "string", "enum": names, "default": NONE, "description": "The scheme every flow is coded with end to end and every node per hop, as far as the scheme codes there."}));
        properties.insert("hop_nodes".into(), serde_json::json!({"type": "array", "items": {"type": "integer", "minimum": 0}, "description": "The nodes that run the scheme's hop layer; every node by default."}));
        properties.insert("hop_classes".into(), serde_json::json!({"type": "array", "items": {"type": "string"}, "description": "The link classes whose interfaces the hop layer codes."}));
        for scheme in registry.params_tables() {
            properties.insert(scheme.params_key().into(), scheme.params_schema(generator).to_value());
        }
        schemars::json_schema!({"type": "object", "properties": properties, "additionalProperties": false})
    }
}

fn default_seed() -> u64 {
    1
}

/// Link parameters that a class can provide.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkClass {
    pub capacity: Option<Rate>,
    pub delay: Option<Seconds>,
    /// Bernoulli loss probability per packet, in [0, 1).
    pub loss: Option<f64>,
    /// Loss from the second node of `between` to the first, when it differs.
    pub reverse_loss: Option<f64>,
    pub gilbert_elliott: Option<GilbertElliottSpec>,
    /// Output queue size in packets, per direction.
    pub queue: Option<u32>,
    /// The queue discipline of both ends' interfaces.
    pub qdisc: Option<String>,
    /// Probability that a frame arrives with one byte changed.
    pub corrupt: Option<f64>,
}

/// A full-duplex link: one channel each way with the same parameters.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// The two ends.
    pub between: [NodeId; 2],
    /// The link class it takes defaults from.
    #[serde(default)]
    pub class: Option<String>,
    pub capacity: Rate,
    /// One-way propagation delay.
    pub delay: Seconds,
    /// Bernoulli loss probability per packet, in [0, 1). Ignored when `gilbert_elliott` is set.
    #[serde(default)]
    pub loss: f64,
    /// Loss from the second node of `between` to the first; `loss` when absent.
    #[serde(default)]
    pub reverse_loss: Option<f64>,
    /// Bursty loss instead of Bernoulli.
    #[serde(default)]
    pub gilbert_elliott: Option<GilbertElliottSpec>,
    /// Output queue size in packets, per direction.
    #[serde(default = "default_queue")]
    pub queue: u32,
    /// The queue discipline of both ends' interfaces.
    #[serde(default = "default_qdisc")]
    pub qdisc: String,
    /// Probability, in [0, 1], that a frame that is not lost arrives with
    /// one byte changed: bit errors that the receiver's checksums must
    /// catch. Real-payload runs only.
    #[serde(default)]
    pub corrupt: f64,
}

fn default_qdisc() -> String {
    "droptail".to_string()
}

fn default_queue() -> u32 {
    100
}

/// The Gilbert-Elliott channel, stepped once per packet.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GilbertElliottSpec {
    pub p_good_to_bad: f64,
    pub p_bad_to_good: f64,
    #[serde(default)]
    pub loss_good: f64,
    #[serde(default = "one")]
    pub loss_bad: f64,
}

fn one() -> f64 {
    1.0
}

/// At node `at`, packets for `to` leave towards the neighbours `via`.
/// Several neighbours split flows among them by flow number, keeping each
/// flow on one path.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouteSpec {
    pub at: NodeId,
    pub to: NodeId,
    pub via: Vec<NodeId>,
}

/// What a flow's application does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AppKind {
    /// TCP, always something to send (FTP).
    Bulk,
    /// TCP, a transfer of `bytes`.
    Sized,
    /// UDP at a constant bit rate.
    Cbr,
    /// UDP at `rate` during exponentially distributed on periods, silent during off periods.
    OnOff,
}

/// One flow, or `count` identical ones.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    pub src: NodeId,
    pub dst: NodeId,
    pub app: AppKind,
    /// How many identical flows this entry stands for.
    #[serde(default = "one_u32")]
    pub count: u32,
    #[serde(default)]
    pub start: Seconds,
    /// When a TCP application opens its connection, if before `start`:
    /// the connection then idles until its data (iperf3's streams wait out
    /// its control exchange so).
    #[serde(default)]
    pub connect: Option<Seconds>,
    /// Bytes a TCP application writes as soon as its connection is open,
    /// ahead of its data (iperf3's 37-byte cookie on each stream). Not
    /// counted in the flow's goodput, delay or transfer size.
    #[serde(default)]
    pub prefix: u64,
    /// When the application stops offering data; the end of the run by default.
    #[serde(default)]
    pub stop: Option<Seconds>,
    /// Transfer size for `sized`.
    #[serde(default)]
    pub bytes: Option<u64>,
    /// Sending rate for `cbr` and `onoff`.
    #[serde(default)]
    pub rate: Option<Rate>,
    /// UDP payload bytes per packet; the first 8 say where the datagram sits in the flow's stream.
    #[serde(default = "default_packet_size")]
    pub packet_size: u32,
    /// Mean on and off periods for `onoff`.
    #[serde(default = "one_second")]
    pub on_time: Seconds,
    #[serde(default = "one_second")]
    pub off_time: Seconds,
    /// Pin the flow to this node path (source to destination); ACKs take it backwards.
    #[serde(default)]
    pub path: Option<Vec<NodeId>>,
    /// Pin the flow to several node paths instead. Flows split among them
    /// by flow number (each flow on one path, ACKs on its reverse), unless a
    /// hop layer picks among the next hops where the paths part (TCP-HONC).
    #[serde(default)]
    pub paths: Option<Vec<Vec<NodeId>>>,
    /// This flow's TCP parameters: the scenario's `[tcp]` with these keys overridden.
    #[serde(default)]
    pub tcp: TcpConfig,
    /// This flow's end-to-end coding, instead of `coding.scheme`'s: "none",
    /// or a scheme that codes at the ends of flows.
    #[serde(default)]
    pub coding: Option<String>,
}

fn one_u32() -> u32 {
    1
}
fn default_packet_size() -> u32 {
    1000
}
fn one_second() -> Seconds {
    Seconds(ncmesh_proto::Duration::from_secs(1))
}

/// What to record besides the flow summaries and link counters.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ProbeSpec {
    /// Sampling interval of every time series.
    pub interval: Seconds,
    /// Sample output queue lengths: `true` for every interface, or a list of `[from, to]` links.
    pub queues: QueueProbe,
    /// Sample each TCP flow's congestion window, and its pacing rate if it paces.
    pub cwnd: bool,
    /// Sample each TCP flow's smoothed RTT.
    pub rtt: bool,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum QueueProbe {
    All(bool),
    Links(Vec<[NodeId; 2]>),
}

impl Default for ProbeSpec {
    fn default() -> Self {
        ProbeSpec { interval: one_second(), queues: QueueProbe::All(false), cwnd: false, rtt: false }
    }
}

/// The JSON Schema of scenario files, for editors.
pub fn json_schema() -> String {
    serde_json::to_string_pretty(&schemars::schema_for!(ScenarioSpec)).expect("a schema serialises")
}
