//! TCP parameters: every knob with its default, as a scenario names them.

use crate::params::{check, Invalid, KeyPath, Validate};
use crate::time::Duration;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A TCP flavour as the seed papers name them: a congestion control paired
/// with a loss recovery. ns-2's agents of the same names pair them the same way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Variant {
    /// AIMD with fast retransmit and fast recovery that ends at the first new ACK (RFC 5681).
    Reno,
    /// AIMD with NewReno partial-ACK recovery (RFC 6582).
    #[default]
    NewReno,
    /// AIMD with SACK-based loss recovery (RFC 2018, RFC 6675).
    Sack,
    /// Vegas delay-based congestion avoidance (Brakmo and Peterson 1995) with NewReno recovery.
    Vegas,
    /// CUBIC (RFC 9438) with SACK recovery when SACK is on, NewReno otherwise.
    Cubic,
    /// BBR version 1 as Linux's `tcp_bbr.c` runs it, with pacing, and SACK
    /// recovery when SACK is on, NewReno otherwise.
    Bbr,
}

/// The loss recovery a sender runs once it detects a loss.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Recovery {
    /// Fast recovery that ends at the first new ACK (RFC 5681 3.2).
    Reno,
    /// Partial-ACK recovery (RFC 6582).
    NewReno,
    /// The SACK scoreboard's `pipe` against cwnd = ssthresh (RFC 6675).
    #[serde(rename = "rfc6675")]
    Sack,
    /// The SACK scoreboard with Proportional Rate Reduction setting cwnd
    /// on every ACK (RFC 6937): ns-3's `TcpPrrRecovery`, Linux's recovery.
    Prr,
}

/// A TCP stack whose defaults a configuration starts from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// ns-2's one-way agents, as the seed papers ran them: no handshake,
    /// an ACK per segment, initial window 1. ncmesh's historical defaults,
    /// which count bytes in congestion avoidance where ns-2 counts ACKs
    /// (the same with an ACK per segment, but not after a hole is filled).
    #[default]
    Ns2,
    /// ns-3 3.44's `TcpSocketBase` with its attribute defaults.
    Ns3,
    /// Linux's TCP (6.x) with its sysctl defaults.
    Linux,
}

/// How a sender decides to leave slow start before a loss.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum SlowStartExit {
    /// Only a loss ends slow start.
    #[default]
    #[serde(rename = "off")]
    Off,
    /// HyStart as Linux's CUBIC runs it (`tcp_cubic.c`): ACK trains and
    /// delay increase; CUBIC only.
    #[serde(rename = "hystart")]
    HyStart,
    /// HyStart++ (RFC 9406): delay increase, then conservative slow start.
    #[serde(rename = "hystart++")]
    HyStartPlusPlus,
}

/// When a receiver acknowledges.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AckPolicy {
    /// RFC 5681 4.2: every second full segment, or when the timer fires.
    #[default]
    Rfc5681,
    /// Linux's: RFC 5681 plus quick-ACK mode (every segment acknowledged at
    /// once) at the start of the data and after a loss, and a timer that
    /// adapts to the inter-arrival time between 40 ms and `delayed_ack_timeout`.
    Linux,
}

/// What a loss halves (or multiplies by CUBIC's beta, for algorithms that
/// take the amount in flight).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LossBasis {
    /// FlightSize, the outstanding data (RFC 5681 equation 4).
    #[default]
    Flight,
    /// RFC 6675's `pipe` once the loss is marked: outstanding less SACKed
    /// and lost (ns-3's `BytesInFlight` in `EnterRecovery` and `ReTxTimeout`).
    Pipe,
    /// The congestion window (Linux's `tcp_reno_ssthresh`).
    Cwnd,
}

/// How the retransmission timeout is estimated from RTT samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RtoEstimator {
    /// `max(SRTT + 4 RTTVAR, min_rto)` (RFC 6298).
    #[default]
    Rfc6298,
    /// `SRTT + max(peak 4 mdev over the last round trip, min_rto)`, falling
    /// slowly (Linux's `tcp_rtt_estimator`).
    Linux,
}

/// How congestion avoidance counts acknowledgements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Counting {
    /// One MSS per cwnd bytes acknowledged (RFC 3465; Linux's `tcp_cong_avoid_ai`).
    #[default]
    Bytes,
    /// MSS^2 / cwnd per ACK of new data, whatever it covers, from the
    /// window as the previous ACK left it (ns-2, ns-3's
    /// `TcpNewReno::CongestionAvoidance`): half the growth with delayed
    /// ACKs, and a little less than one MSS per window's worth of ACKs,
    /// which shows at windows of a few segments (from 2 segments, 5 take
    /// 11 ACKs rather than 9).
    Acks,
}

/// What an ACK that advances snd.una credits to window growth.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AckCredit {
    /// Every byte it cumulatively acknowledges, SACKed before or not (RFC
    /// 5681's N).
    #[default]
    Cumulative,
    /// The bytes it newly delivers: those it SACKs and those it
    /// acknowledges that no earlier ACK had SACKed, so that each segment
    /// counts once (Linux's `tcp_newly_delivered`, ns-3's
    /// `currentDelivered`). After a timeout whose holes the receiver had
    /// SACKed around, the ACK of the resent segment grows the window by one
    /// segment, not by the whole SACKed run behind it.
    Delivered,
}

/// The congestion control proper: how the window grows and what it falls to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    Reno,
    Vegas,
    Cubic,
    Bbr,
}

impl Variant {
    pub fn control(self) -> Control {
        match self {
            Variant::Reno | Variant::NewReno | Variant::Sack => Control::Reno,
            Variant::Vegas => Control::Vegas,
            Variant::Cubic => Control::Cubic,
            Variant::Bbr => Control::Bbr,
        }
    }

    /// The recovery this variant runs; SACK recovery needs SACK negotiated.
    pub fn recovery(self, sack: bool) -> Recovery {
        match self {
            Variant::Reno => Recovery::Reno,
            Variant::NewReno | Variant::Vegas => Recovery::NewReno,
            Variant::Sack | Variant::Cubic | Variant::Bbr if sack => Recovery::Sack,
            Variant::Sack | Variant::Cubic | Variant::Bbr => Recovery::NewReno,
        }
    }
}

/// Vegas thresholds, in segments of queue occupancy.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct VegasParams {
    /// Grow the window by one segment per RTT while fewer than alpha segments are queued.
    pub alpha: f64,
    /// Shrink it by one segment per RTT while more than beta are queued.
    pub beta: f64,
    /// Leave slow start once more than gamma segments are queued.
    pub gamma: f64,
}

impl Default for VegasParams {
    /// ns-2's and ns-3's defaults.
    fn default() -> Self {
        VegasParams { alpha: 2.0, beta: 4.0, gamma: 1.0 }
    }
}

/// CUBIC constants (RFC 9438 section 4).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct CubicParams {
    /// C, in segments per second cubed.
    pub c: f64,
    /// The multiplicative decrease factor beta_cubic.
    pub beta: f64,
    /// Fast convergence (RFC 9438 section 4.7).
    pub fast_convergence: bool,
}

impl Default for CubicParams {
    fn default() -> Self {
        CubicParams { c: 0.4, beta: 0.7, fast_convergence: true }
    }
}

/// Everything configurable about one TCP connection. Both ends read it.
///
/// `profile` names the stack the defaults come from; in a scenario, the
/// keys given beside it override that stack's values (see
/// [`TcpConfig::profile`] for every value and its source).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct TcpConfig {
    pub profile: Profile,
    pub variant: Variant,
    /// The loss recovery; absent, the variant's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery: Option<Recovery>,
    /// Open with SYN, SYN-ACK, ACK and close with FIN (RFC 9293); without
    /// it the connection exists from the start, as ns-2's one-way agents.
    pub handshake: bool,
    /// The SYN's retransmission timeout before backoff, seconds.
    #[serde(with = "crate::time::serde_secs")]
    #[schemars(with = "f64")]
    pub syn_timeout: Duration,
    /// SYN (and SYN-ACK) retransmissions before the connection is given up.
    pub syn_retries: u32,
    /// Consecutive retransmission timeouts before the connection is
    /// aborted; 0 never aborts.
    pub max_timeouts: u32,
    /// Detect losses by time and probe lost tails (RACK-TLP, RFC 8985), in
    /// place of duplicate-ACK counting; needs a SACK-based recovery.
    pub rack: bool,
    /// Leave slow start early on rising delay.
    pub slow_start_exit: SlowStartExit,
    /// Segments slow start may add per ACK (RFC 3465's L); 0: as many as it acknowledges.
    pub slow_start_limit: u32,
    pub ca_counting: Counting,
    pub ack_credit: AckCredit,
    /// Count what an ACK delivers in segments, a short one as a full one,
    /// as Linux counts packets (`tcp_skb_pcount`): in the window's growth
    /// under `ack_credit = "delivered"`, in PRR and in delivery-rate
    /// samples. The ACK of iperf3's 37-byte cookie grows Linux's window by
    /// a whole segment.
    pub count_packets: bool,
    /// What Reno's and Vegas's loss reaction halves.
    pub loss_basis: LossBasis,
    pub rto_estimator: RtoEstimator,
    pub ack_policy: AckPolicy,
    /// Maximum segment size: payload bytes per full segment.
    pub mss: u32,
    /// Initial congestion window, in segments (RFC 6928 allows 10; ns-2 used 1).
    pub initial_cwnd: u32,
    /// Initial slow-start threshold, in segments; 0 means unbounded (RFC 5681).
    pub initial_ssthresh: u32,
    /// Skip slow start: start in congestion avoidance at `initial_cwnd`.
    pub slow_start: bool,
    /// Receive window, in segments. It is also the receiver's buffer for
    /// out-of-order data: segments beyond it are discarded. With
    /// `rcv_autotune`, the most the window may grow to.
    pub rcv_window: u32,
    /// Size the window as Linux's receive-buffer autotuning does
    /// (`net.ipv4.tcp_moderate_rcvbuf`, see `autotune.rs`): from a buffer
    /// of `rcv_buffer` bytes of memory, in which each received segment
    /// takes `rcv_truesize`, grown with what the application reads.
    pub rcv_autotune: bool,
    /// The buffer a connection starts with, bytes (`net.ipv4.tcp_rmem[1]`).
    pub rcv_buffer: u32,
    /// The most the buffer may grow to, bytes (`net.ipv4.tcp_rmem[2]`),
    /// and below that `rcv_window * rcv_truesize`. Linux scales the window
    /// for it, so it also sets the window scale.
    pub rcv_buffer_max: u32,
    /// Memory one received segment takes in the buffer, bytes: its
    /// `truesize`, a 2 KB packet buffer and its `sk_buff` for a
    /// 1500-byte MTU.
    pub rcv_truesize: u32,
    /// Acknowledge every second full segment, or when the delayed-ACK timer fires.
    pub delayed_ack: bool,
    /// The delayed-ACK timer, seconds.
    #[serde(with = "crate::time::serde_secs")]
    #[schemars(with = "f64")]
    pub delayed_ack_timeout: Duration,
    pub sack: bool,
    /// The timestamp option (RFC 7323): 12 more header bytes and an RTT sample on every ACK.
    pub timestamps: bool,
    /// Lower bound of the retransmission timeout, seconds (RFC 6298 says 1 s; Linux uses 0.2 s).
    #[serde(with = "crate::time::serde_secs")]
    #[schemars(with = "f64")]
    pub min_rto: Duration,
    /// Upper bound of the retransmission timeout after backoff, seconds.
    #[serde(with = "crate::time::serde_secs")]
    #[schemars(with = "f64")]
    pub max_rto: Duration,
    /// The timeout before the first RTT sample, seconds.
    #[serde(with = "crate::time::serde_secs")]
    #[schemars(with = "f64")]
    pub initial_rto: Duration,
    /// Duplicate ACKs that trigger fast retransmit.
    pub dupthresh: u32,
    /// Drop the timer's exponential backoff on any ACK of new data, as ns-3
    /// does, instead of keeping it until an unambiguous RTT sample (Karn's
    /// rule as RFC 6298 section 5 reads, and ns-2). Matters where most ACKs
    /// cover retransmissions: heavy loss, and coded transports.
    pub reset_backoff_on_new_ack: bool,
    /// After a retransmission timeout the window grows as usual until the
    /// cumulative ACK reaches the highest byte sent before the timeout; the
    /// ACK that reaches it grows the window only by the whole segments it
    /// acknowledges beyond that byte (ns-3's exit from `CA_LOSS` in
    /// `TcpSocketBase::ProcessAck`). A timeout with one segment outstanding
    /// leaves the window at one segment for another round trip.
    pub rto_exit_beyond_point: bool,
    /// Keep the SACK scoreboard across a retransmission timeout (RFC 6675
    /// section 5.1 allows it) and resend after it only the unSACKed
    /// segments, as ns-3's `TcpTxBuffer::SetSentListLost` and Linux's
    /// `tcp_timeout_mark_lost` do; otherwise a timeout forgets the SACKs
    /// (RFC 2018 section 8) and goes back N.
    pub keep_sack_after_rto: bool,
    /// F-RTO (RFC 5682, its SACK variant as Linux's `tcp_frto` = 2 runs
    /// it): after a timeout, new data goes out once the first resend is
    /// acknowledged, and if data sent before the timeout and never resent
    /// is then acknowledged or SACKed the timeout was spurious and is
    /// undone. Needs SACK.
    pub frto: bool,
    /// A paced sender arms its retransmission and probe timers from when
    /// its pacer lets the next segment leave, not from now, as Linux's
    /// `tcp_reset_xmit_timer` adds `tcp_pacing_delay`: a slow pacer's timer
    /// then does not fire while what it waits for could not have left. The
    /// timer rearmed when one fires starts from now.
    pub timers_after_pacing: bool,
    /// Resend a segment marked lost only while a SACKed one lies above it
    /// (RFC 6675 NextSeg rule 1.b), new data going in place of the rest, as
    /// ns-3's `TcpTxBuffer::NextSeg` does; otherwise every segment marked
    /// lost, as Linux's `tcp_xmit_retransmit_queue` does.
    pub resend_below_highest_sack: bool,
    /// After a retransmission timeout, take no RTT sample, timestamps or
    /// not, until an ACK covers the first segment sent after the timeout:
    /// ns-3 empties its RTT history (`m_history`) on a timeout and samples
    /// only ACKs that cover the oldest segment in it, which a
    /// retransmission never enters.
    pub rto_clears_rtt_history: bool,
    /// PRR as ns-3's `TcpPrrRecovery` counts delivery: an ACK with new SACK
    /// information during recovery is a duplicate ACK and counts one
    /// segment more than it delivered, while less than RecoverFS has been
    /// counted (`DoRecovery`'s `isDupAck`), and one that also advances
    /// snd.una by a segment or more is counted a second time as a partial
    /// ACK (`TcpSocketBase::DupAck`, then `ProcessAck`). The window comes
    /// down more slowly than RFC 6937's.
    pub prr_dupack_credit: bool,
    pub vegas: VegasParams,
    pub cubic: CubicParams,
}

impl Default for TcpConfig {
    /// The `ns2` profile.
    fn default() -> Self {
        TcpConfig {
            profile: Profile::Ns2,
            variant: Variant::NewReno,
            recovery: None,
            handshake: false,
            syn_timeout: Duration::from_secs(3),
            syn_retries: 6,
            max_timeouts: 0,
            rack: false,
            slow_start_exit: SlowStartExit::Off,
            slow_start_limit: 1,
            ca_counting: Counting::Bytes,
            ack_credit: AckCredit::Cumulative,
            count_packets: false,
            loss_basis: LossBasis::Flight,
            rto_estimator: RtoEstimator::Rfc6298,
            ack_policy: AckPolicy::Rfc5681,
            mss: 1000,
            initial_cwnd: 1,
            initial_ssthresh: 0,
            slow_start: true,
            rcv_window: 100,
            rcv_autotune: false,
            rcv_buffer: 131_072,
            rcv_buffer_max: 33_554_432,
            rcv_truesize: 2304,
            delayed_ack: false,
            delayed_ack_timeout: Duration::from_millis(40),
            sack: true,
            timestamps: false,
            min_rto: Duration::from_millis(200),
            max_rto: Duration::from_secs(60),
            initial_rto: Duration::from_secs(1),
            dupthresh: 3,
            reset_backoff_on_new_ack: false,
            rto_exit_beyond_point: false,
            keep_sack_after_rto: false,
            frto: false,
            timers_after_pacing: false,
            resend_below_highest_sack: false,
            rto_clears_rtt_history: false,
            prr_dupack_credit: false,
            vegas: VegasParams::default(),
            cubic: CubicParams::default(),
        }
    }
}

impl TcpConfig {
    /// Every default as `profile`'s stack has it.
    ///
    /// ns-3 (3.44; attribute and default): `TcpL4Protocol::SocketType`
    /// NewReno (the configuration; ns-3's own default CUBIC is not
    /// taken), `RecoveryType` `TcpPrrRecovery`, `TcpSocket::InitialCwnd` 10,
    /// `DelAckCount` 2, `DelAckTimeout` 200 ms, `ConnTimeout` 3 s,
    /// `ConnCount` 6, `DataRetries` 6, `TcpSocketBase::MinRto` 1 s,
    /// `Sack` and `Timestamp` true, `ReTxThreshold` 3, the RTO estimator's
    /// `InitialEstimation` 1 s and its 60 s cap, the backoff dropped on every
    /// new ACK (`TcpSocketBase::NewAck`), one MSS per ACK in slow start and
    /// MSS^2/cwnd per ACK in congestion avoidance (`TcpNewReno`).
    /// `SegmentSize` (536) and `RcvBufSize` (131072 bytes) are not taken:
    /// give `mss` and `rcv_window` for the path.
    ///
    /// Linux (6.x; constant or sysctl and default): CUBIC with HyStart
    /// (`net.ipv4.tcp_congestion_control`, `hystart`), PRR recovery over
    /// SACK, `TCP_INIT_CWND` 10, `TCP_RTO_MIN` 200 ms, `TCP_RTO_MAX` 120 s,
    /// `TCP_TIMEOUT_INIT` 1 s for the SYN and before the first sample,
    /// `tcp_syn_retries` 6, `tcp_retries2` 15, `tcp_sack` and
    /// `tcp_timestamps` 1, the quick-ACK and `ato` delayed-ACK engine
    /// (`TCP_ATO_MIN` 40 ms, `TCP_DELACK_MAX` 200 ms), slow start by all
    /// it acknowledges (`tcp_slow_start`), congestion avoidance by bytes
    /// (`tcp_cong_avoid_ai`), each ACK crediting what it newly delivers
    /// (`tcp_newly_delivered`), SACK marks kept over a timeout
    /// (`tcp_timeout_mark_lost`), MSS 1448 (a 1500-byte MTU with timestamps),
    /// and the receive window autotuned (`tcp_moderate_rcvbuf`) from a
    /// 131072-byte buffer (`tcp_rmem[1]`) up to 4096 segments.
    pub fn profile(profile: Profile) -> TcpConfig {
        match profile {
            Profile::Ns2 => TcpConfig::default(),
            Profile::Ns3 => TcpConfig {
                profile,
                variant: Variant::NewReno,
                recovery: Some(Recovery::Prr),
                handshake: true,
                syn_timeout: Duration::from_secs(3),
                syn_retries: 6,
                max_timeouts: 6,
                initial_cwnd: 10,
                delayed_ack: true,
                delayed_ack_timeout: Duration::from_millis(200),
                sack: true,
                timestamps: true,
                min_rto: Duration::from_secs(1),
                max_rto: Duration::from_secs(60),
                initial_rto: Duration::from_secs(1),
                reset_backoff_on_new_ack: true,
                rto_exit_beyond_point: true,
                keep_sack_after_rto: true,
                resend_below_highest_sack: true,
                rto_clears_rtt_history: true,
                prr_dupack_credit: true,
                slow_start_limit: 1,
                ca_counting: Counting::Acks,
                loss_basis: LossBasis::Pipe,
                ..TcpConfig::default()
            },
            Profile::Linux => TcpConfig {
                profile,
                variant: Variant::Cubic,
                recovery: Some(Recovery::Prr),
                handshake: true,
                syn_timeout: Duration::from_secs(1),
                syn_retries: 6,
                max_timeouts: 15,
                rack: true,
                slow_start_exit: SlowStartExit::HyStart,
                slow_start_limit: 0,
                ca_counting: Counting::Bytes,
                ack_credit: AckCredit::Delivered,
                count_packets: true,
                keep_sack_after_rto: true,
                frto: true,
                timers_after_pacing: true,
                loss_basis: LossBasis::Cwnd,
                rto_estimator: RtoEstimator::Linux,
                ack_policy: AckPolicy::Linux,
                mss: 1448,
                initial_cwnd: 10,
                rcv_window: 4096,
                rcv_autotune: true,
                delayed_ack: true,
                delayed_ack_timeout: Duration::from_millis(200),
                sack: true,
                timestamps: true,
                min_rto: Duration::from_millis(200),
                max_rto: Duration::from_secs(120),
                initial_rto: Duration::from_secs(1),
                reset_backoff_on_new_ack: false,
                ..TcpConfig::default()
            },
        }
    }

    /// The recovery the sender runs: the configured one, else the
    /// variant's; SACK-based recoveries fall back to NewReno without SACK.
    pub fn recovery(&self) -> Recovery {
        match self.recovery {
            Some(Recovery::Sack | Recovery::Prr) if !self.sack => Recovery::NewReno,
            Some(r) => r,
            None => self.variant.recovery(self.sack),
        }
    }

    /// The receive window in bytes.
    pub fn window_bytes(&self) -> u64 {
        self.rcv_window as u64 * self.mss as u64
    }

    /// The window scale (RFC 7323) a receiver with this configuration
    /// announces: the smallest shift that fits its window in the 16-bit
    /// field, or with `rcv_autotune` Linux's, for the largest buffer
    /// (`tcp_select_initial_window`: `tcp_rmem[2]`, which exceeds
    /// `rmem_max`). Without a handshake both ends, and any middlebox that
    /// speaks for one of them, read it from the configuration they share.
    pub fn window_scale(&self) -> u8 {
        if self.rcv_autotune {
            return self.rcv_buffer_max.max(1).ilog2().saturating_sub(15).min(14) as u8;
        }
        let mut shift = 0;
        while self.window_bytes() >> shift > u16::MAX as u64 && shift < 14 {
            shift += 1;
        }
        shift
    }
}

impl Validate for TcpConfig {
    fn validate(&self) -> Result<(), Invalid> {
        for (key, value) in [
            ("mss", self.mss),
            ("initial_cwnd", self.initial_cwnd),
            ("rcv_window", self.rcv_window),
            ("dupthresh", self.dupthresh),
        ] {
            check(value > 0, key, || "expected at least 1".into())?;
        }
        check(self.mss <= 65_000, "mss", || format!("expected at most 65000 bytes, found {}", self.mss))?;
        check(self.window_bytes() <= (u16::MAX as u64) << 14, "rcv_window", || {
            format!(
                "expected rcv_window * mss of at most 1 GiB (the largest scaled TCP window), found {} bytes",
                self.window_bytes()
            )
        })?;
        if self.rcv_autotune {
            check(self.rcv_truesize > self.mss, "rcv_truesize", || {
                format!(
                    "expected more than mss ({}) bytes: a segment takes its payload and the kernel's overhead, found {}",
                    self.mss, self.rcv_truesize
                )
            })?;
            check(self.rcv_buffer as u64 >= 2 * self.rcv_truesize as u64, "rcv_buffer", || {
                format!(
                    "expected room for two segments, at least 2 * rcv_truesize ({}) bytes, found {}",
                    2 * self.rcv_truesize as u64,
                    self.rcv_buffer
                )
            })?;
            check(self.rcv_buffer_max >= self.rcv_buffer, "rcv_buffer_max", || {
                format!("expected at least rcv_buffer ({}) bytes, found {}", self.rcv_buffer, self.rcv_buffer_max)
            })?;
        }
        check(self.min_rto <= self.max_rto, "min_rto", || "expected min_rto <= max_rto".into())?;
        check(self.min_rto.as_nanos() > 0, "min_rto", || "expected a positive minimum RTO".into())?;
        check(self.syn_timeout.as_nanos() > 0, "syn_timeout", || "expected a positive SYN timeout".into())?;
        let beta = self.cubic.beta;
        check(beta > 0.0 && beta < 1.0, "cubic", || format!("expected beta in (0, 1), found {beta}"))
            .map_err(|e| Invalid::new(KeyPath::default().key("cubic").key("beta"), e.message))?;
        check(self.cubic.c > 0.0, "cubic", || "expected C > 0".into())
            .map_err(|e| Invalid::new(KeyPath::default().key("cubic").key("c"), e.message))?;
        let v = self.vegas;
        check(v.alpha >= 0.0 && v.alpha <= v.beta && v.gamma >= 0.0, "vegas", || {
            format!(
                "expected 0 <= alpha <= beta and gamma >= 0, found alpha {} beta {} gamma {}",
                v.alpha, v.beta, v.gamma
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_scale_is_the_least_that_fits() {
        let c = |rcv_window, mss| TcpConfig { rcv_window, mss, ..TcpConfig::default() };
        assert_eq!(c(65, 1000).window_scale(), 0);
        assert_eq!(c(100, 1000).window_scale(), 1, "100000 bytes need one shift");
        assert_eq!(c(1000, 1460).window_scale(), 5, "1460000 >> 5 = 45625");
        assert_eq!(c(u32::MAX, 65_000).window_scale(), 14);
    }

    #[test]
    fn an_autotuned_window_is_scaled_for_the_largest_buffer() {
        // Linux 6.18's receiver, with `tcp_rmem[2]` = 33554432, announced
        // a scale of 10 on the emulated chain, whatever the window it
        // offered: ilog2(33554432) - 15.
        let linux = TcpConfig { mss: 1000, ..TcpConfig::profile(Profile::Linux) };
        assert_eq!(linux.window_scale(), 10);
        assert_eq!(TcpConfig { rcv_buffer_max: 6 << 20, ..linux }.window_scale(), 7, "6 MB, older kernels' default");
        assert_eq!(TcpConfig { rcv_buffer_max: u32::MAX, ..linux }.window_scale(), 14);
    }

    #[test]
    fn checks_name_the_key() {
        let bad = TcpConfig { mss: 0, ..TcpConfig::default() };
        assert_eq!(bad.validate().unwrap_err().to_string(), "mss: expected at least 1");
        let bad = TcpConfig { cubic: CubicParams { beta: 1.5, ..CubicParams::default() }, ..TcpConfig::default() };
        assert_eq!(bad.validate().unwrap_err().path.to_string(), "cubic.beta");
        assert!(TcpConfig::default().validate().is_ok());
        let autotuned = TcpConfig { rcv_autotune: true, rcv_truesize: 900, ..TcpConfig::default() };
        assert_eq!(autotuned.validate().unwrap_err().path.to_string(), "rcv_truesize");
        let autotuned = TcpConfig { rcv_autotune: true, rcv_buffer: 4000, ..TcpConfig::default() };
        assert_eq!(autotuned.validate().unwrap_err().path.to_string(), "rcv_buffer");
        let autotuned = TcpConfig { rcv_autotune: true, rcv_buffer_max: 100_000, ..TcpConfig::default() };
        assert_eq!(autotuned.validate().unwrap_err().path.to_string(), "rcv_buffer_max");
        // Read only when autotuning.
        assert!(TcpConfig { rcv_truesize: 900, ..TcpConfig::default() }.validate().is_ok());
        assert!(TcpConfig::profile(Profile::Linux).validate().is_ok());
        let huge = TcpConfig { rcv_autotune: true, rcv_truesize: u32::MAX, ..TcpConfig::default() };
        assert_eq!(huge.validate().unwrap_err().path.to_string(), "rcv_buffer");
    }
}
