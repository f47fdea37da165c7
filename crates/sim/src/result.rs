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
    /// Frames that arrived with a byte changed (`corrupt`).
    pub corrupted: u64,
    pub dropped: u64,
}

/// What one node's radio on the wireless channel did.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RadioSummary {
    pub node: u32,
    /// Time spent transmitting, control frames included.
    pub airtime_s: f64,
    /// Data frames put on the air, retransmissions included.
    pub data_frames: u64,
    pub broadcasts: u64,
    /// Failed attempts that were tried again.
    pub retries: u64,
    pub acked: u64,
    /// Frames dropped at the retry limit.
    pub retry_drops: u64,
    /// Unicast attempts lost to a collision at their addressee.
    pub collisions: u64,
    /// Data frames delivered to the node, and how many of them it overheard.
    pub received: u64,
    pub overheard: u64,
    /// Retransmissions of frames it had already received, not delivered again.
    pub duplicates: u64,
}

/// Data frames from one node of the wireless channel as another in its reach saw them, every attempt counted.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PairSummary {
    pub from: u32,
    pub to: u32,
    pub sent: u64,
    pub received: u64,
    /// Lost to another transmission, or to the receiver sending.
    pub collided: u64,
    /// Lost to frame errors with nothing overlapping.
    pub errored: u64,
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
    /// One row per node on the wireless channel.
    pub radios: Vec<RadioSummary>,
    /// One row per ordered pair of nodes in reach on the wireless channel.
    pub pairs: Vec<PairSummary>,
    /// Goodput per flow per probe interval, bit/s.
    pub goodput: Series,
    /// Output queue length per sampled interface, packets.
    pub queues: Series,
    /// Congestion window per TCP flow, bytes (when probed).
    pub cwnd: Series,
    /// Smoothed RTT per TCP flow, seconds (when probed; NaN before the first sample).
    pub rtt: Series,
    /// Pacing rate per pacing TCP flow (BBR), bit/s (probed with cwnd).
    pub pacing: Series,
    /// Jain's index over the flows' goodputs.
    pub fairness: f64,
    pub events: u64,
    pub sim_time_s: f64,
}

/// One column of a result table, typed by what it holds.
#[derive(Clone, Debug, PartialEq)]
pub enum Column {
    U64(Vec<u64>),
    U32(Vec<u32>),
    F64(Vec<f64>),
    /// `None` where the value is missing, as a transfer that never completed.
    OptF64(Vec<Option<f64>>),
    Str(Vec<String>),
}

impl Column {
    pub fn len(&self) -> usize {
        match self {
            Column::U64(v) => v.len(),
            Column::U32(v) => v.len(),
            Column::F64(v) => v.len(),
            Column::OptF64(v) => v.len(),
            Column::Str(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl From<Vec<u64>> for Column {
    fn from(v: Vec<u64>) -> Column {
        Column::U64(v)
    }
}

impl From<Vec<u32>> for Column {
    fn from(v: Vec<u32>) -> Column {
        Column::U32(v)
    }
}

impl From<Vec<f64>> for Column {
    fn from(v: Vec<f64>) -> Column {
        Column::F64(v)
    }
}

impl From<Vec<Option<f64>>> for Column {
    fn from(v: Vec<Option<f64>>) -> Column {
        Column::OptF64(v)
    }
}

impl From<Vec<String>> for Column {
    fn from(v: Vec<String>) -> Column {
        Column::Str(v)
    }
}

impl From<Vec<&str>> for Column {
    fn from(v: Vec<&str>) -> Column {
        Column::Str(v.into_iter().map(str::to_owned).collect())
    }
}

/// A named table of equally long, named columns: how a result crosses into
/// columnar consumers (Arrow, in the Python bindings).
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    pub name: &'static str,
    pub columns: Vec<(&'static str, Column)>,
}

/// Builds a table from rows, one column per call, so that a new field of a
/// summary struct is one more `.add` line.
struct Columns<'a, R> {
    rows: &'a [R],
    table: Table,
}

impl<'a, R> Columns<'a, R> {
    fn new(name: &'static str, rows: &'a [R]) -> Self {
        Columns { rows, table: Table { name, columns: Vec::new() } }
    }

    fn add<V>(mut self, name: &'static str, value: impl Fn(&R) -> V) -> Self
    where
        Column: From<Vec<V>>,
    {
        let column = self.rows.iter().map(value).collect::<Vec<V>>();
        self.table.columns.push((name, Column::from(column)));
        self
    }
}

impl FlowSummary {
    /// The flows table; columns in field order, named as the fields.
    pub fn table(rows: &[FlowSummary]) -> Table {
        Columns::new("flows", rows)
            .add("id", |f| f.id)
            .add("src", |f| f.src)
            .add("dst", |f| f.dst)
            .add("app", |f| f.app)
            .add("goodput_bps", |f| f.goodput_bps)
            .add("delivered_bytes", |f| f.delivered_bytes)
            .add("corrupt_bytes", |f| f.corrupt_bytes)
            .add("acked_bytes", |f| f.acked_bytes)
            .add("delay_mean_s", |f| f.delay_mean_s)
            .add("delay_std_s", |f| f.delay_std_s)
            .add("delay_p50_s", |f| f.delay_p50_s)
            .add("delay_p95_s", |f| f.delay_p95_s)
            .add("delay_p99_s", |f| f.delay_p99_s)
            .add("completion_s", |f| f.completion_s)
            .add("packets_sent", |f| f.packets_sent)
            .add("rtt_mean_s", |f| f.rtt_mean_s)
            .add("rto_mean_s", |f| f.rto_mean_s)
            .add("retransmits", |f| f.retransmits)
            .add("timeouts", |f| f.timeouts)
            .table
    }
}

impl LinkSummary {
    /// The links table; columns in field order, named as the fields.
    pub fn table(rows: &[LinkSummary]) -> Table {
        Columns::new("links", rows)
            .add("from", |l| l.from)
            .add("to", |l| l.to)
            .add("class", |l| l.class.clone())
            .add("transmitted", |l| l.transmitted)
            .add("transmitted_bytes", |l| l.transmitted_bytes)
            .add("lost", |l| l.lost)
            .add("corrupted", |l| l.corrupted)
            .add("dropped", |l| l.dropped)
            .table
    }
}

impl RadioSummary {
    /// The radios table; columns in field order, named as the fields.
    pub fn table(rows: &[RadioSummary]) -> Table {
        Columns::new("radios", rows)
            .add("node", |r| r.node)
            .add("airtime_s", |r| r.airtime_s)
            .add("data_frames", |r| r.data_frames)
            .add("broadcasts", |r| r.broadcasts)
            .add("retries", |r| r.retries)
            .add("acked", |r| r.acked)
            .add("retry_drops", |r| r.retry_drops)
            .add("collisions", |r| r.collisions)
            .add("received", |r| r.received)
            .add("overheard", |r| r.overheard)
            .add("duplicates", |r| r.duplicates)
            .table
    }
}

impl PairSummary {
    /// The pairs table; columns in field order, named as the fields.
    pub fn table(rows: &[PairSummary]) -> Table {
        Columns::new("pairs", rows)
            .add("from", |p| p.from)
            .add("to", |p| p.to)
            .add("sent", |p| p.sent)
            .add("received", |p| p.received)
            .add("collided", |p| p.collided)
            .add("errored", |p| p.errored)
            .table
    }
}

impl Counter {
    /// The counters table; columns in field order, named as the fields.
    pub fn table(rows: &[Counter]) -> Table {
        Columns::new("counters", rows)
            .add("node", |c| c.node)
            .add("name", |c| c.name.clone())
            .add("value", |c| c.value)
            .table
    }
}

impl Series {
    /// The series as a table `time_s, key, [key2,] value` under the given
    /// column names; `key2` is left out when `keys` names only `key`. The
    /// vectors move, uncopied.
    pub fn into_table(self, name: &'static str, keys: &[&'static str], value: &'static str) -> Table {
        let mut columns = vec![("time_s", Column::F64(self.time_s))];
        match *keys {
            [key] => columns.push((key, Column::U32(self.key))),
            [key, key2] => columns.extend([(key, Column::U32(self.key)), (key2, Column::U32(self.key2))]),
            _ => panic!("a series has one or two key columns, not {}", keys.len()),
        }
        columns.push((value, Column::F64(self.value)));
        Table { name, columns }
    }
}

impl RunResult {
    /// Its tables as named columns: flows, links, counters, goodput,
    /// queues, cwnd, rtt, radios, pairs and pacing, in that order. Time series move out without a copy.
    pub fn into_tables(self) -> Vec<Table> {
        vec![
            FlowSummary::table(&self.flows),
            LinkSummary::table(&self.links),
            Counter::table(&self.counters),
            self.goodput.into_table("goodput", &["flow"], "goodput_bps"),
            self.queues.into_table("queues", &["from", "to"], "packets"),
            self.cwnd.into_table("cwnd", &["flow"], "cwnd_bytes"),
            self.rtt.into_table("rtt", &["flow"], "srtt_s"),
            RadioSummary::table(&self.radios),
            PairSummary::table(&self.pairs),
            self.pacing.into_table("pacing", &["flow"], "pacing_bps"),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow() -> FlowSummary {
        FlowSummary {
            id: 1,
            src: 1,
            dst: 2,
            app: "bulk",
            goodput_bps: 1.0,
            delivered_bytes: 2,
            corrupt_bytes: 0,
            acked_bytes: 3,
            delay_mean_s: 0.1,
            delay_std_s: 0.2,
            delay_p50_s: 0.3,
            delay_p95_s: 0.4,
            delay_p99_s: 0.5,
            completion_s: None,
            packets_sent: 4,
            rtt_mean_s: 0.6,
            rto_mean_s: 0.7,
            retransmits: 5,
            timeouts: 6,
        }
    }

    fn link() -> LinkSummary {
        LinkSummary {
            from: 1,
            to: 2,
            class: "wireless".into(),
            transmitted: 1,
            transmitted_bytes: 2,
            lost: 3,
            corrupted: 5,
            dropped: 4,
        }
    }

    /// The serialised field names, in order: a field added to a summary
    /// struct but not to its table fails here.
    fn field_names(row: &impl Serialize) -> Vec<String> {
        match serde_json::to_value(row).expect("serialises") {
            serde_json::Value::Object(map) => map.keys().cloned().collect(),
            other => panic!("not a struct: {other}"),
        }
    }

    fn column_names(table: &Table) -> Vec<String> {
        table.columns.iter().map(|(name, _)| name.to_string()).collect()
    }

    #[test]
    fn summary_tables_have_a_column_per_field() {
        let mut flow_fields = field_names(&flow());
        let mut flow_columns = column_names(&FlowSummary::table(&[flow()]));
        // serde_json's map orders keys unless preserve_order is on; compare as sets of names.
        flow_fields.sort();
        flow_columns.sort();
        assert_eq!(flow_columns, flow_fields);
        let mut link_fields = field_names(&link());
        let mut link_columns = column_names(&LinkSummary::table(&[link()]));
        link_fields.sort();
        link_columns.sort();
        assert_eq!(link_columns, link_fields);
        let radio = RadioSummary {
            node: 1,
            airtime_s: 0.5,
            data_frames: 2,
            broadcasts: 3,
            retries: 4,
            acked: 5,
            retry_drops: 6,
            collisions: 7,
            received: 8,
            overheard: 9,
            duplicates: 10,
        };
        let mut radio_fields = field_names(&radio);
        let mut radio_columns = column_names(&RadioSummary::table(&[radio]));
        radio_fields.sort();
        radio_columns.sort();
        assert_eq!(radio_columns, radio_fields);
        let pair = PairSummary { from: 1, to: 2, sent: 3, received: 4, collided: 5, errored: 6 };
        let mut pair_fields = field_names(&pair);
        let mut pair_columns = column_names(&PairSummary::table(&[pair]));
        pair_fields.sort();
        pair_columns.sort();
        assert_eq!(pair_columns, pair_fields);
        let counter = Counter { node: 1, name: "forwarded".into(), value: 3 };
        let mut counter_fields = field_names(&counter);
        let mut counter_columns = column_names(&Counter::table(&[counter]));
        counter_fields.sort();
        counter_columns.sort();
        assert_eq!(counter_columns, counter_fields);
    }

    #[test]
    fn columns_hold_the_rows_in_order() {
        let mut late = flow();
        late.id = 2;
        late.completion_s = Some(9.5);
        let table = FlowSummary::table(&[flow(), late]);
        let column =
            |name: &str| table.columns.iter().find(|(n, _)| *n == name).map(|(_, c)| c.clone()).expect("column");
        assert_eq!(column("id"), Column::U32(vec![1, 2]));
        assert_eq!(column("completion_s"), Column::OptF64(vec![None, Some(9.5)]));
        assert_eq!(column("app"), Column::Str(vec!["bulk".into(), "bulk".into()]));
        assert!(table.columns.iter().all(|(_, c)| c.len() == 2));
    }

    #[test]
    fn series_tables_name_their_keys_and_move_their_values() {
        let mut s = Series::default();
        s.push(1.0, 3, 4, 5.0);
        s.push(2.0, 3, 4, 6.0);
        let values = s.value.as_ptr();
        let queues = s.clone().into_table("queues", &["from", "to"], "packets");
        assert_eq!(column_names(&queues), ["time_s", "from", "to", "packets"]);
        assert_eq!(queues.columns[2].1, Column::U32(vec![4, 4]));
        let goodput = s.into_table("goodput", &["flow"], "goodput_bps");
        assert_eq!(column_names(&goodput), ["time_s", "flow", "goodput_bps"]);
        match &goodput.columns[2].1 {
            Column::F64(v) => assert_eq!(v.as_ptr(), values, "the values were copied"),
            other => panic!("{other:?}"),
        }
    }
}
