//! BBR version 1 as Linux 6.18's `net/ipv4/tcp_bbr.c` runs it (Cardwell et
//! al., "BBR: Congestion-Based Congestion Control", ACM Queue 2016, and
//! draft-cardwell-iccrg-bbr-congestion-control-00).
//!
//! BBR models the path by two numbers, the bottleneck bandwidth (the
//! windowed maximum of delivery-rate samples over 10 round trips) and the
//! round-trip propagation time (the minimum RTT over 10 s), and sends at
//! `pacing_gain x bandwidth` with at most `cwnd_gain x bandwidth x min_rtt`
//! in flight. It moves through four modes: Startup doubles the rate each
//! round (gain 2/ln 2) until three rounds fail to raise the bandwidth by
//! 25%; Drain (gain ln 2 / 2) empties the queue Startup built; ProbeBW
//! cycles eight gains (5/4, 3/4, then six of 1) to probe for more
//! bandwidth and drain what the probe queued; ProbeRTT holds cwnd at four
//! segments for 200 ms when the minimum RTT is 10 s old, to measure it
//! again. A long-term sampler finds token-bucket policers (intervals with
//! 20% loss delivering at a steady rate) and paces at their rate.
//!
//! Losses do not lower the model. In recovery BBR conserves packets for one
//! round (cwnd = in flight + delivered) and then grows again; after
//! recovery cwnd returns to what it was. Quantities are bytes and bytes per
//! second, where the kernel counts packets; gains keep its fixed point of
//! 1/256 so that each is the kernel's exact value.

use super::congestion::{AckEvent, CongestionControl, Window};
use super::rate::{CaState, RateSample};
use crate::time::{Duration, Instant};

/// Gains are in units of 1/256 (`BBR_UNIT`).
pub const UNIT: u64 = 256;
/// Startup's pacing and cwnd gain, 2/ln 2 (`bbr_high_gain`): the least gain
/// that doubles the delivery rate every round.
pub const HIGH_GAIN: u64 = UNIT * 2885 / 1000 + 1;
/// Drain's pacing gain, its inverse (`bbr_drain_gain`).
pub const DRAIN_GAIN: u64 = UNIT * 1000 / 2885;
/// ProbeBW's cwnd gain, room for twice the BDP (`bbr_cwnd_gain`).
pub const CWND_GAIN: u64 = UNIT * 2;
/// ProbeBW's pacing gain cycle (`bbr_pacing_gain`).
pub const PACING_GAINS: [u64; 8] = [UNIT * 5 / 4, UNIT * 3 / 4, UNIT, UNIT, UNIT, UNIT, UNIT, UNIT];
/// Phases a new ProbeBW cycle may start from are all but the 3/4 one.
const CYCLE_RAND: u64 = 7;
/// The smallest cwnd BBR keeps, and ProbeRTT's, in segments.
pub const MIN_CWND_SEGMENTS: u64 = 4;
/// Startup ends after this many rounds without this much growth.
pub const FULL_BW_THRESH: u64 = UNIT * 5 / 4;
pub const FULL_BW_ROUNDS: u32 = 3;
/// The bandwidth filter's window: one gain cycle plus two rounds.
pub const BW_WINDOW_ROUNDS: u64 = PACING_GAINS.len() as u64 + 2;
/// How long a minimum RTT stands before ProbeRTT measures it again.
pub const MIN_RTT_WINDOW: Duration = Duration::from_secs(10);
/// How long ProbeRTT holds the window down (at least a round too).
pub const PROBE_RTT_TIME: Duration = Duration::from_millis(200);
/// Long-term sampling: an interval lasts 4 to 16 rounds, ends with a loss
/// and counts if at least 50/256 (20%) of its data was lost.
const LT_MIN_ROUNDS: u32 = 4;
const LT_LOSS_THRESH: u64 = 50;
/// Two intervals within 1/8 or 4 kbit/s of each other show a policer.
const LT_BW_RATIO: u64 = UNIT / 8;
const LT_BW_DIFF: u64 = 4000 / 8;
/// The policer's rate is used for this many rounds, then probed again.
const LT_MAX_ROUNDS: u32 = 48;
/// ACK aggregation: the extra data ACKs bring beyond the bandwidth, kept
/// as a maximum over 5 to 10 rounds and capped at 100 ms of bandwidth.
const EXTRA_ACKED_GAIN: u64 = UNIT;
const EXTRA_ACKED_WINDOW_ROUNDS: u32 = 5;
const EXTRA_ACKED_MAX: Duration = Duration::from_millis(100);
const ACK_EPOCH_RESET_SEGMENTS: u64 = 1 << 20;
/// Pacing runs 1% below the model, to drain queues the model missed.
const PACING_MARGIN_PERCENT: u64 = 1;
/// Below 1.2 Mbit/s one segment per burst, else two (`bbr_min_tso_rate`).
const MIN_TSO_RATE: u64 = 1_200_000 / 8;
/// Linux sizes bursts to 1 ms of pacing (`sk_pacing_shift` 10) up to 64 KB.
const PACING_SHIFT: u32 = 10;
const MAX_BURST_BYTES: u64 = 65_536 - 1 - 320;
/// `TCP_INIT_CWND`: the window before any RTT is known.
const INIT_CWND_SEGMENTS: u64 = 10;

/// BBR's modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// Kathleen Nichols' windowed running maximum (Linux's `lib/minmax.c`):
/// the best, second best and third best samples of the window, each newer
/// than the one before, so that when the best ages out the next is known.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MaxFilter {
    /// `(time, value)`, best first.
    s: [(u64, u64); 3],
}

impl MaxFilter {
    pub fn get(&self) -> u64 {
        self.s[0].1
    }

    fn reset(&mut self, t: u64, v: u64) -> u64 {
        self.s = [(t, v); 3];
        v
    }

    /// Takes the sample `v` at time `t` (rounds, for BBR's bandwidth) into a
    /// window of length `win`; returns the maximum.
    pub fn update(&mut self, win: u64, t: u64, v: u64) -> u64 {
        let sample = (t, v);
        if v >= self.s[0].1 || t.wrapping_sub(self.s[2].0) > win {
            return self.reset(t, v);
        }
        if v >= self.s[1].1 {
            self.s[2] = sample;
            self.s[1] = sample;
        } else if v >= self.s[2].1 {
            self.s[2] = sample;
        }
        // Age the window's choices: a best older than the window gives way,
        // and the second and third are refreshed at a quarter and a half
        // of the window so that they are not all as old as the best.
        let dt = t.wrapping_sub(self.s[0].0);
        if dt > win {
            self.s = [self.s[1], self.s[2], sample];
            if t.wrapping_sub(self.s[0].0) > win {
                self.s = [self.s[1], self.s[2], sample];
            }
        } else if self.s[1].0 == self.s[0].0 && dt > win / 4 {
            self.s[2] = sample;
            self.s[1] = sample;
        } else if self.s[2].0 == self.s[1].0 && dt > win / 2 {
            self.s[2] = sample;
        }
        self.s[0].1
    }
}

/// The long-term sampler of policed bandwidth.
#[derive(Clone, Copy, Debug, Default)]
struct LongTerm {
    is_sampling: bool,
    use_bw: bool,
    bw: u64,
    rounds: u32,
    /// Where the interval began: milliseconds, bytes delivered, bytes lost.
    last_ms: u64,
    last_delivered: u64,
    last_lost: u64,
}

/// BBR's state for one connection. See the module documentation.
#[derive(Clone, Debug)]
pub struct Bbr {
    mss: u64,
    initial_cwnd: u64,
    mode: Mode,
    /// The bottleneck bandwidth filter, bytes per second over rounds.
    bw: MaxFilter,
    round_count: u64,
    /// A round ends when a segment sent after this much was delivered is.
    next_round_delivered: u64,
    round_start: bool,
    min_rtt: Option<Duration>,
    min_rtt_stamp: Instant,
    probe_rtt_done: Option<Instant>,
    probe_rtt_round_done: bool,
    /// The window before recovery or ProbeRTT, to return to.
    prior_cwnd: u64,
    prev_state: CaState,
    packet_conservation: bool,
    full_bw: u64,
    full_bw_count: u32,
    full_bw_reached: bool,
    cycle_idx: usize,
    cycle_stamp: Instant,
    pacing_gain: u64,
    cwnd_gain: u64,
    /// Bytes per second.
    pacing_rate: u64,
    has_seen_rtt: bool,
    lt: LongTerm,
    ack_epoch_stamp: Instant,
    ack_epoch_acked: u64,
    extra_acked: [u64; 2],
    extra_acked_rounds: u32,
    extra_acked_idx: usize,
    /// `now` and the delivery clock of the sample being processed.
    now: Instant,
    delivered_time: Instant,
    /// Chooses the phase a ProbeBW cycle starts in.
    rng: u64,
    /// An undo restarts long-term sampling from the next sample's counts.
    lt_reset_due: bool,
}

impl Bbr {
    /// A connection with segments of `mss` bytes and an initial window of
    /// `initial_cwnd` segments; `seed` picks the ProbeBW phases.
    pub fn new(mss: u64, initial_cwnd: u64, seed: u64) -> Bbr {
        let mss = mss.max(1);
        let mut bbr = Bbr {
            mss,
            initial_cwnd: initial_cwnd.max(1),
            mode: Mode::Startup,
            bw: MaxFilter::default(),
            round_count: 0,
            next_round_delivered: 0,
            round_start: false,
            min_rtt: None,
            min_rtt_stamp: Instant::ZERO,
            probe_rtt_done: None,
            probe_rtt_round_done: false,
            prior_cwnd: 0,
            prev_state: CaState::Open,
            packet_conservation: false,
            full_bw: 0,
            full_bw_count: 0,
            full_bw_reached: false,
            cycle_idx: 0,
            cycle_stamp: Instant::ZERO,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            pacing_rate: 0,
            has_seen_rtt: false,
            lt: LongTerm::default(),
            ack_epoch_stamp: Instant::ZERO,
            ack_epoch_acked: 0,
            extra_acked: [0; 2],
            extra_acked_rounds: 0,
            extra_acked_idx: 0,
            now: Instant::ZERO,
            delivered_time: Instant::ZERO,
            rng: seed ^ 0x9e37_79b9_7f4a_7c15,
            lt_reset_due: false,
        };
        // No RTT yet: the kernel assumes 1 ms.
        bbr.init_pacing_rate(Duration::from_millis(1));
        bbr
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The bandwidth estimate in use, bytes per second: the policer's
    /// rate once one is found, else the filter's maximum.
    pub fn bandwidth(&self) -> u64 {
        if self.lt.use_bw {
            self.lt.bw
        } else {
            self.bw.get()
        }
    }

    /// The filter's maximum, bytes per second.
    pub fn max_bandwidth(&self) -> u64 {
        self.bw.get()
    }

    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }

    pub fn pacing_gain(&self) -> u64 {
        self.pacing_gain
    }

    pub fn cwnd_gain(&self) -> u64 {
        self.cwnd_gain
    }

    /// The ProbeBW phase, an index into [`PACING_GAINS`].
    pub fn cycle_index(&self) -> usize {
        self.cycle_idx
    }

    pub fn full_bandwidth_reached(&self) -> bool {
        self.full_bw_reached
    }

    /// Rounds counted so far.
    pub fn rounds(&self) -> u64 {
        self.round_count
    }

    /// The policer's rate, bytes per second, while it is in use.
    pub fn policed_bandwidth(&self) -> Option<u64> {
        self.lt.use_bw.then_some(self.lt.bw)
    }

    fn next_random(&mut self) -> u64 {
        // SplitMix64: a seeded stream, so that runs repeat.
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// `bw x gain`, less the pacing margin, bytes per second (`bbr_rate_bytes_per_sec`).
    fn rate(bw: u64, gain: u64) -> u64 {
        (bw as u128 * gain as u128 / UNIT as u128 * (100 - PACING_MARGIN_PERCENT) as u128 / 100) as u64
    }

    fn init_pacing_rate(&mut self, rtt: Duration) {
        let cwnd = self.initial_cwnd * self.mss;
        let bw = (cwnd as u128 * 1_000_000_000 / rtt.as_nanos().max(1) as u128) as u64;
        self.pacing_rate = Bbr::rate(bw, HIGH_GAIN);
    }

    fn set_pacing_rate(&mut self, bw: u64, gain: u64) {
        let rate = Bbr::rate(bw, gain);
        // Until Startup is over the rate only rises: a slow sample early
        // on must not throttle the search.
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    /// Segments the kernel would put in one burst (`bbr_tso_segs_goal`):
    /// about 1 ms of pacing, at least one or two.
    fn burst_segments(&self) -> u64 {
        let bytes = (self.pacing_rate >> PACING_SHIFT).min(MAX_BURST_BYTES);
        let floor = if self.pacing_rate < MIN_TSO_RATE { 1 } else { 2 };
        (bytes / self.mss).max(floor).min(0x7f)
    }

    /// `gain x bw x min_rtt` in whole segments, bytes (`bbr_bdp`).
    fn bdp(&self, bw: u64, gain: u64) -> u64 {
        let Some(rtt) = self.min_rtt else { return INIT_CWND_SEGMENTS * self.mss };
        let num = bw as u128 * rtt.as_nanos() as u128 * gain as u128;
        let den = UNIT as u128 * 1_000_000_000 * self.mss as u128;
        num.div_ceil(den) as u64 * self.mss
    }

    /// Room for the bursts the sender's offload and pacing make: three of
    /// them, an even number of segments, two more in the 5/4 phase
    /// (`bbr_quantization_budget`).
    fn quantization_budget(&self, cwnd: u64) -> u64 {
        let mut segments = cwnd.div_ceil(self.mss) + 3 * self.burst_segments();
        segments = (segments + 1) & !1;
        if self.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            segments += 2;
        }
        segments * self.mss
    }

    /// The data in flight a gain aims at (`bbr_inflight`).
    fn inflight(&self, bw: u64, gain: u64) -> u64 {
        if self.min_rtt.is_none() {
            return INIT_CWND_SEGMENTS * self.mss;
        }
        self.quantization_budget(self.bdp(bw, gain))
    }

    /// What will still be in the network when the next segment leaves
    /// (`bbr_packets_in_net_at_edt`): the pacer may hold it back, and
    /// meanwhile the path delivers at the estimated rate.
    fn in_net_at_departure(&self, in_flight: u64, rs: &RateSample) -> u64 {
        let wait = rs.next_send.saturating_since(rs.now);
        let delivered = (self.bandwidth() as u128 * wait.as_nanos() as u128 / 1_000_000_000) as u64;
        let mut at_departure = in_flight;
        if self.pacing_gain > UNIT {
            at_departure += self.burst_segments() * self.mss;
        }
        at_departure.saturating_sub(delivered)
    }

    fn save_cwnd(&mut self, w: &Window) {
        self.prior_cwnd = if self.prev_state < CaState::Recovery && self.mode != Mode::ProbeRtt {
            w.cwnd
        } else {
            self.prior_cwnd.max(w.cwnd)
        };
    }

    fn reset_mode(&mut self) {
        if self.full_bw_reached {
            self.reset_probe_bw();
        } else {
            self.mode = Mode::Startup;
        }
    }

    /// Enters ProbeBW at a random phase other than the 3/4 one.
    fn reset_probe_bw(&mut self) {
        self.mode = Mode::ProbeBw;
        let r = self.next_random() % CYCLE_RAND;
        self.cycle_idx = PACING_GAINS.len() - 1 - r as usize;
        self.advance_cycle();
    }

    fn advance_cycle(&mut self) {
        self.cycle_idx = (self.cycle_idx + 1) % PACING_GAINS.len();
        self.cycle_stamp = self.delivered_time;
    }

    /// Whether the current gain phase is over (`bbr_is_next_cycle_phase`):
    /// each lasts a min RTT; the 5/4 phase longer, until it has filled
    /// the 5/4 BDP or seen a loss; the 3/4 phase less, once it has drained
    /// to the BDP.
    fn is_next_cycle_phase(&self, rs: &RateSample) -> bool {
        let elapsed = rs.delivered_time.saturating_since(self.cycle_stamp);
        let full_length = self.min_rtt.is_some_and(|m| elapsed > m);
        if self.pacing_gain == UNIT {
            return full_length;
        }
        let in_net = self.in_net_at_departure(rs.prior_in_flight, rs);
        let bw = self.max_bandwidth();
        if self.pacing_gain > UNIT {
            return full_length && (rs.losses > 0 || in_net >= self.inflight(bw, self.pacing_gain));
        }
        full_length || in_net <= self.inflight(bw, UNIT)
    }

    fn reset_lt_interval(&mut self, rs: &RateSample) {
        self.lt.last_ms = rs.delivered_time.0 / 1_000_000;
        self.lt.last_delivered = rs.total_delivered;
        self.lt.last_lost = rs.total_lost;
        self.lt.rounds = 0;
    }

    fn reset_lt(&mut self, rs: &RateSample) {
        self.lt.bw = 0;
        self.lt.use_bw = false;
        self.lt.is_sampling = false;
        self.reset_lt_interval(rs);
    }

    /// An interval ended at rate `bw`: two in a row that agree show a policer.
    fn lt_interval_done(&mut self, bw: u64, rs: &RateSample) {
        if self.lt.bw > 0 {
            let diff = bw.abs_diff(self.lt.bw);
            if diff * UNIT <= LT_BW_RATIO * self.lt.bw || Bbr::rate(diff, UNIT) <= LT_BW_DIFF {
                self.lt.bw = (bw + self.lt.bw) / 2;
                self.lt.use_bw = true;
                self.pacing_gain = UNIT;
                self.lt.rounds = 0;
                return;
            }
        }
        self.lt.bw = bw;
        self.reset_lt_interval(rs);
    }

    /// Long-term sampling (`bbr_lt_bw_sampling`): from the first loss,
    /// intervals of 4 to 16 rounds that end in a loss and lost 20% of
    /// their data give the rate a policer allows.
    fn lt_sampling(&mut self, rs: &RateSample) {
        if self.lt.use_bw {
            if self.mode == Mode::ProbeBw && self.round_start {
                self.lt.rounds += 1;
                if self.lt.rounds >= LT_MAX_ROUNDS {
                    self.reset_lt(rs);
                    self.reset_probe_bw();
                }
            }
            return;
        }
        if !self.lt.is_sampling {
            if rs.losses == 0 {
                return;
            }
            self.reset_lt_interval(rs);
            self.lt.is_sampling = true;
        }
        if rs.is_app_limited {
            return self.reset_lt(rs);
        }
        if self.round_start {
            self.lt.rounds += 1;
        }
        if self.lt.rounds < LT_MIN_ROUNDS {
            return;
        }
        if self.lt.rounds > 4 * LT_MIN_ROUNDS {
            return self.reset_lt(rs);
        }
        if rs.losses == 0 {
            return;
        }
        let lost = rs.total_lost - self.lt.last_lost;
        let delivered = rs.total_delivered - self.lt.last_delivered;
        if delivered == 0 || lost * UNIT < LT_LOSS_THRESH * delivered {
            return;
        }
        let ms = (rs.delivered_time.0 / 1_000_000).saturating_sub(self.lt.last_ms);
        if ms < 1 {
            return;
        }
        self.lt_interval_done(delivered * 1000 / ms, rs);
    }

    /// Round counting and the bandwidth filter (`bbr_update_bw`).
    fn update_bw(&mut self, rs: &RateSample) {
        self.round_start = false;
        let Some(bw) = rs.rate() else { return };
        if rs.prior_delivered >= self.next_round_delivered {
            self.next_round_delivered = rs.total_delivered;
            self.round_count += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_sampling(rs);
        // An application-limited sample says only that the path carries at
        // least this much: it may raise the estimate, never lower it.
        if !rs.is_app_limited || bw >= self.max_bandwidth() {
            self.bw.update(BW_WINDOW_ROUNDS, self.round_count, bw);
        }
    }

    /// How much more than the bandwidth predicts the ACKs have brought
    /// (`bbr_update_ack_aggregation`), for cwnd to cover ACK bursts.
    fn update_ack_aggregation(&mut self, w: &Window, rs: &RateSample) {
        if rs.acked_sacked == 0 || rs.interval.is_none() {
            return;
        }
        if self.round_start {
            self.extra_acked_rounds = (self.extra_acked_rounds + 1).min(0x1f);
            if self.extra_acked_rounds >= EXTRA_ACKED_WINDOW_ROUNDS {
                self.extra_acked_rounds = 0;
                self.extra_acked_idx ^= 1;
                self.extra_acked[self.extra_acked_idx] = 0;
            }
        }
        let epoch = rs.delivered_time.saturating_since(self.ack_epoch_stamp);
        let mut expected = (self.bandwidth() as u128 * epoch.as_nanos() as u128 / 1_000_000_000) as u64;
        if self.ack_epoch_acked <= expected
            || self.ack_epoch_acked + rs.acked_sacked >= ACK_EPOCH_RESET_SEGMENTS * self.mss
        {
            self.ack_epoch_acked = 0;
            self.ack_epoch_stamp = rs.delivered_time;
            expected = 0;
        }
        self.ack_epoch_acked = (self.ack_epoch_acked + rs.acked_sacked).min(0xfffff * self.mss);
        let extra = self.ack_epoch_acked.saturating_sub(expected).min(w.cwnd);
        let slot = &mut self.extra_acked[self.extra_acked_idx];
        *slot = (*slot).max(extra);
    }

    fn ack_aggregation_cwnd(&self) -> u64 {
        if !self.full_bw_reached {
            return 0;
        }
        let cap = (self.bandwidth() as u128 * EXTRA_ACKED_MAX.as_nanos() as u128 / 1_000_000_000) as u64;
        let extra = self.extra_acked[0].max(self.extra_acked[1]);
        (EXTRA_ACKED_GAIN * extra / UNIT).min(cap)
    }

    /// Startup is over once three rounds in a row fail to grow the
    /// bandwidth by 25% (`bbr_check_full_bw_reached`).
    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }
        let bw = self.max_bandwidth();
        if bw as u128 * UNIT as u128 >= self.full_bw as u128 * FULL_BW_THRESH as u128 {
            self.full_bw = bw;
            self.full_bw_count = 0;
            return;
        }
        self.full_bw_count += 1;
        self.full_bw_reached = self.full_bw_count >= FULL_BW_ROUNDS;
    }

    fn check_drain(&mut self, w: &mut Window, rs: &RateSample) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            w.ssthresh = self.inflight(self.max_bandwidth(), UNIT);
        }
        if self.mode == Mode::Drain
            && self.in_net_at_departure(rs.in_flight, rs) <= self.inflight(self.max_bandwidth(), UNIT)
        {
            self.reset_probe_bw();
        }
    }

    fn check_probe_rtt_done(&mut self, w: &mut Window) {
        if self.probe_rtt_done.is_some_and(|d| self.now > d) {
            self.min_rtt_stamp = self.now;
            w.cwnd = w.cwnd.max(self.prior_cwnd);
            self.reset_mode();
        }
    }

    /// The min-RTT filter and ProbeRTT (`bbr_update_min_rtt`). Returns
    /// true while ProbeRTT wants its samples marked application-limited.
    fn update_min_rtt(&mut self, w: &mut Window, rs: &RateSample) -> bool {
        let expired = self.now > self.min_rtt_stamp + MIN_RTT_WINDOW;
        if let Some(rtt) = rs.rtt {
            if self.min_rtt.is_none_or(|m| rtt < m) || (expired && !rs.is_ack_delayed) {
                self.min_rtt = Some(rtt);
                self.min_rtt_stamp = self.now;
            }
        }
        if expired && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd(w);
            self.probe_rtt_done = None;
        }
        if self.mode != Mode::ProbeRtt {
            return false;
        }
        if self.probe_rtt_done.is_none() && rs.in_flight <= MIN_CWND_SEGMENTS * self.mss {
            self.probe_rtt_done = Some(self.now + PROBE_RTT_TIME);
            self.probe_rtt_round_done = false;
            self.next_round_delivered = rs.total_delivered;
        } else if self.probe_rtt_done.is_some() {
            if self.round_start {
                self.probe_rtt_round_done = true;
            }
            if self.probe_rtt_round_done {
                self.check_probe_rtt_done(w);
            }
        }
        true
    }

    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            Mode::Startup => (HIGH_GAIN, HIGH_GAIN),
            Mode::Drain => (DRAIN_GAIN, HIGH_GAIN),
            Mode::ProbeBw if self.lt.use_bw => (UNIT, CWND_GAIN),
            Mode::ProbeBw => (PACING_GAINS[self.cycle_idx], CWND_GAIN),
            Mode::ProbeRtt => (UNIT, UNIT),
        };
    }

    /// Packet conservation in the first round of recovery, and the window
    /// given back after it (`bbr_set_cwnd_to_recover_or_restore`). Returns
    /// the window and whether conservation decides it.
    fn recover_or_restore(&mut self, w: &Window, rs: &RateSample, acked: u64) -> (u64, bool) {
        let (prev, state) = (self.prev_state, rs.state);
        let mut cwnd = w.cwnd;
        if rs.losses > 0 {
            cwnd = cwnd.saturating_sub(rs.losses).max(self.mss);
        }
        if state == CaState::Recovery && prev != CaState::Recovery {
            self.packet_conservation = true;
            self.next_round_delivered = rs.total_delivered;
            cwnd = rs.in_flight + acked;
        } else if prev >= CaState::Recovery && state < CaState::Recovery {
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_state = state;
        if self.packet_conservation {
            return (cwnd.max(rs.in_flight + acked), true);
        }
        (cwnd, false)
    }

    /// `bbr_set_cwnd`: towards `gain x BDP` plus the ACK aggregation
    /// allowance, by at most what was delivered; in Startup it only grows.
    fn set_cwnd(&mut self, w: &mut Window, rs: &RateSample, bw: u64, gain: u64) {
        let acked = rs.acked_sacked;
        if acked > 0 {
            let (mut cwnd, conserving) = self.recover_or_restore(w, rs, acked);
            if !conserving {
                let target = self.quantization_budget(self.bdp(bw, gain) + self.ack_aggregation_cwnd());
                if self.full_bw_reached {
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || rs.total_delivered < INIT_CWND_SEGMENTS * self.mss {
                    cwnd += acked;
                }
                cwnd = cwnd.max(MIN_CWND_SEGMENTS * self.mss);
            }
            w.cwnd = cwnd;
        }
        if self.mode == Mode::ProbeRtt {
            w.cwnd = w.cwnd.min(MIN_CWND_SEGMENTS * self.mss);
        }
    }
}

impl CongestionControl for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }

    /// The first RTT (the handshake's, if any) sets the initial pacing
    /// rate and the first min RTT, as `bbr_init` does once connected.
    fn on_rtt_sample(&mut self, now: Instant, rtt: Duration) {
        if !self.has_seen_rtt {
            self.has_seen_rtt = true;
            self.init_pacing_rate(rtt);
            if self.min_rtt.is_none() {
                self.min_rtt = Some(rtt);
                self.min_rtt_stamp = now;
            }
        }
    }

    /// BBR does not grow the window per ACK; `on_rate_sample` sets it.
    fn on_ack(&mut self, _w: &mut Window, _ack: &AckEvent) {}

    /// Remembers the window to return to after recovery; the threshold
    /// stays as it is, for BBR does not take loss as congestion.
    fn ssthresh_after_loss(&mut self, w: &Window, _in_flight: u64, _now: Instant) -> u64 {
        self.save_cwnd(w);
        w.ssthresh
    }

    fn controls_window(&self) -> bool {
        true
    }

    /// `bbr_undo_cwnd`: the slowdown was spurious, so Startup looks for
    /// full bandwidth afresh and long-term sampling starts over; the window
    /// stays, and leaving the loss state restores the one saved.
    fn undo_cwnd(&mut self, w: &Window, _prior_cwnd: u64) -> u64 {
        self.full_bw = 0;
        self.full_bw_count = 0;
        self.lt_reset_due = true;
        w.cwnd
    }

    fn on_rate_sample(&mut self, w: &mut Window, rs: &RateSample, timeout: bool) -> bool {
        self.now = rs.now;
        self.delivered_time = rs.delivered_time;
        self.mss = rs.mss.max(1);
        if std::mem::take(&mut self.lt_reset_due) {
            self.reset_lt(rs);
        }
        if timeout {
            // `bbr_set_state(TCP_CA_Loss)`: a timeout ends a round and
            // restarts the search for full bandwidth.
            self.prev_state = CaState::Loss;
            self.full_bw = 0;
            self.round_start = true;
            let rs = RateSample { losses: rs.losses.max(1), is_app_limited: false, ..*rs };
            self.lt_sampling(&rs);
            return false;
        }
        self.update_bw(rs);
        self.update_ack_aggregation(w, rs);
        if self.mode == Mode::ProbeBw && self.is_next_cycle_phase(rs) {
            self.advance_cycle();
        }
        self.check_full_bw_reached(rs);
        self.check_drain(w, rs);
        let app_limited = self.update_min_rtt(w, rs);
        self.update_gains();
        let bw = self.bandwidth();
        self.set_pacing_rate(bw, self.pacing_gain);
        self.set_cwnd(w, rs, bw, self.cwnd_gain);
        app_limited
    }

    fn pacing_rate(&self) -> Option<u64> {
        Some(self.pacing_rate)
    }
}
