//! What a run returns: flow summaries, link counters and time series, all
//! plain columns so the Python side turns them into DataFrames directly.

use serde::Serialize;

/// One flow's summary.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FlowSummary {
    /// 1-based, in scenario order after `count` expansion.
    pub id: u32,
    pub src: u32,
    pub dst: u32,
    pub app: &'static str,
    /// In-order application bytes delivered per second over the flow's active
    /// time: from its start to its stop (or the end of the run), or to its
    /// completion for a sized transfer.
    pub goodput_bps: f64,
    pub delivered_bytes: u64,
    /// Delivered bytes that were not the flow's content at their place in
    /// its stream (real payloads), or were delivered out of place.
    pub corrupt_bytes: u64,
    /// Bytes the TCP sender saw acknowledged (its `snd_una`): what TCP
    /// believes it delivered. Coded transports acknowledge what the sink has
    /// seen, which can run ahead of what it has decoded.
    pub acked_bytes: u64,
    /// End-to-end delay of delivered data, from its first transmission to its in-order delivery.
    pub delay_mean_s: f64,
    pub delay_std_s: f64,
    pub delay_p50_s: f64,
    pub delay_p95_s: f64,
    pub delay_p99_s: f64,
    /// When a sized transfer was fully acknowledged, seconds from the start of the run.
    pub completion_s: Option<f64>,
    /// Data packets the source sent, retransmissions included.
    pub packets_sent: u64,
    /// The TCP sender's smoothed RTT averaged over ACKs (NaN for UDP).
    pub rtt_mean_s: f64,
    /// Its retransmission timeout before backoff, max(min_rto, SRTT + 4 RTTVAR), averaged over ACKs.
    pub rto_mean_s: f64,
    pub retransmits: u64,
    pub timeouts: u64,
}

/// Counters of one direction of a link.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LinkSummary {
    pub from: u32,
    pub to: u32,
    pub class: String,
    pub transmitted: u64,
    pub transmitted_bytes: u64,
    pub lost: u64,
    pub dropped: u64,
}

/// A counter of a node or of one of its coding layers.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Counter {
    pub node: u32,
    pub name: String,
    pub value: u64,
}

/// Time series, one row per sample, as columns.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Series {
    pub time_s: Vec<f64>,
    /// The flow id, or the link's `from` node for queue samples.
    pub key: Vec<u32>,
    /// The link's `to` node for queue samples; zero otherwise.
    pub key2: Vec<u32>,
    pub value: Vec<f64>,
}

impl Series {
    pub fn push(&mut self, time_s: f64, key: u32, key2: u32, value: f64) {
        self.time_s.push(time_s);
        self.key.push(key);
        self.key2.push(key2);
        self.value.push(value);
    }
}

/// Everything a run measured. Deterministic: the same scenario and seed give
/// an identical value (wall-clock time is measured by the caller).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RunResult {
    pub flows: Vec<FlowSummary>,
    pub links: Vec<LinkSummary>,
    /// Counters of every node and its coding layers (packets forwarded,
    /// malformed frames, coding statistics), one row per node and name.
    pub counters: Vec<Counter>,
    /// Goodput per flow per probe interval, bit/s.
    pub goodput: Series,
    /// Output queue length per sampled interface, packets.
    pub queues: Series,
    /// Congestion window per TCP flow, bytes (when probed).
    pub cwnd: Series,
    /// Smoothed RTT per TCP flow, seconds (when probed; NaN before the first sample).
    pub rtt: Series,
    /// Jain's index over the flows' goodputs.
    pub fairness: f64,
    pub events: u64,
    pub sim_time_s: f64,
}
