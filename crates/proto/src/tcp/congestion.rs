//! The congestion-control interface between a [`TcpSender`](super::TcpSender)
//! and an algorithm.
//!
//! The shape follows ns-3's `TcpCongestionOps` and quinn's `Controller`: the
//! sender owns the window ([`Window`]) and loss recovery, and calls hooks
//! with default no-op bodies, so that an algorithm only writes what it
//! changes. Keeping the window outside the algorithm lets recovery code
//! (fast recovery inflation, RTO collapse) stay in one place for all of them.

use std::fmt::Debug;

use super::rate::RateSample;
use crate::time::{Duration, Instant};

/// The per-flow window state the algorithms read and write, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub cwnd: u64,
    pub ssthresh: u64,
    pub mss: u64,
}

impl Window {
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }
}

/// What an ACK of new data tells the algorithm, outside loss recovery. The
/// default is an ACK at time zero with no samples: tests set what they need.
#[derive(Clone, Copy, Debug, Default)]
pub struct AckEvent {
    pub now: Instant,
    /// Bytes newly acknowledged cumulatively.
    pub acked: u64,
    /// The RTT sample this ACK gave, if Karn's rule allowed one.
    pub rtt: Option<Duration>,
    /// The RTT of the newest segment it acknowledges, if never resent: the
    /// delay signal Linux gives its congestion controls (`ca_rtt_us`),
    /// free of the delayed-ACK hold that a timestamp echo includes.
    pub ca_rtt: Option<Duration>,
    /// The smoothed RTT after this ACK, if any sample exists yet.
    pub srtt: Option<Duration>,
    /// The cumulative ACK after this ACK.
    pub snd_una: u64,
    /// One past the highest byte ever sent: Vegas ends its per-RTT cycle
    /// when the ACK passes the value this had at the start of the cycle.
    pub snd_max: u64,
    /// Bytes in flight before this ACK was processed.
    pub prior_in_flight: u64,
}

/// A congestion-control algorithm. Hooks are called by the sender:
///
/// * `on_rtt_sample` for every valid RTT sample, also during recovery;
/// * `on_ack` for each ACK of new data while not in loss recovery;
/// * `ssthresh_after_loss` once when a loss is detected (fast retransmit
///   or the first of a series of timeouts);
/// * `on_recovery_exit` when fast recovery ends and the sender has set
///   `cwnd = ssthresh`;
/// * `on_timeout` after an RTO has collapsed the window.
pub trait CongestionControl: Debug + Send {
    fn name(&self) -> &'static str;

    fn on_rtt_sample(&mut self, _now: Instant, _rtt: Duration) {}

    fn on_ack(&mut self, w: &mut Window, ack: &AckEvent);

    /// The slow-start threshold after a loss. The sender sets the window.
    fn ssthresh_after_loss(&mut self, w: &Window, in_flight: u64, now: Instant) -> u64;

    fn on_recovery_exit(&mut self, _w: &mut Window, _now: Instant) {}

    fn on_timeout(&mut self, _w: &mut Window, _now: Instant) {}

    /// A timeout proved spurious: the window to go back to, given the one
    /// before it (Linux's `undo_cwnd`; `tcp_reno_undo_cwnd` for most).
    fn undo_cwnd(&mut self, w: &Window, prior_cwnd: u64) -> u64 {
        w.cwnd.max(prior_cwnd)
    }

    /// Whether the algorithm sets the window itself from delivery-rate
    /// samples (Linux's `cong_control`, which BBR fills in). If so, the
    /// sender estimates the delivery rate, calls `on_rate_sample` after
    /// every ACK (in recovery too) and after every timeout, and leaves cwnd
    /// alone on entering and leaving recovery (no PRR, no inflation):
    /// the algorithm answers for it. Read once, when the sender is made.
    fn controls_window(&self) -> bool {
        false
    }

    /// The delivery-rate sample of an ACK, once loss recovery has processed
    /// it; or, with `timeout`, after a retransmission timeout has marked
    /// everything lost. Returns true to mark the data in flight
    /// application-limited, so that its samples do not lower a max filter.
    fn on_rate_sample(&mut self, _w: &mut Window, _rs: &RateSample, _timeout: bool) -> bool {
        false
    }

    /// The rate to pace at, bytes per second; `None` sends as the window
    /// allows. The sender asks after each ACK and timeout.
    fn pacing_rate(&self) -> Option<u64> {
        None
    }
}

/// Watches slow start and may end it before a loss does: Linux's HyStart
/// (`hystart.rs`) and HyStart++ (`hystart_pp.rs`). The sender asks it
/// about every ACK of new data while `cwnd < ssthresh`, before the
/// congestion control grows the window.
pub trait SlowStartWatch: Debug + Send {
    /// May end slow start by lowering `w.ssthresh` to `w.cwnd`. Returns
    /// the divisor of this ACK's growth: 1, or more in a gentler phase
    /// (HyStart++'s conservative slow start).
    fn on_ack(&mut self, w: &mut Window, ack: &AckEvent) -> u64;

    /// A loss was detected; `timeout` if by the retransmission timer.
    fn on_congestion(&mut self, _timeout: bool) {}
}

/// RFC 5681 slow start: at most `limit` bytes per ACK (RFC 3465's L
/// segments; `u64::MAX` for as many as the ACK covers, as Linux's
/// `tcp_slow_start`), so that ACK division (acking many small pieces)
/// cannot inflate the window. Returns the acknowledged bytes slow start
/// did not use, for the caller to spend in congestion avoidance when the
/// window crosses ssthresh.
pub fn slow_start(w: &mut Window, acked: u64, limit: u64) -> u64 {
    let room = w.ssthresh.saturating_sub(w.cwnd);
    let inc = acked.min(limit);
    w.cwnd += inc.min(room);
    if inc > room {
        acked.saturating_sub(room)
    } else {
        0
    }
}
