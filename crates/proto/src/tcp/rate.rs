//! Delivery-rate estimation (draft-cheng-iccrg-delivery-rate-estimation-02,
//! as Linux's `net/ipv4/tcp_rate.c` in 6.18 runs it): what a model-based
//! congestion control (BBR) reads instead of losses.
//!
//! The sender stamps each segment it sends with its delivery state
//! ([`TxRate`]); when the segment is delivered (cumulatively ACKed or
//! SACKed), the stamp of the most recently sent segment an ACK delivers
//! gives the sample: the bytes delivered since that segment left, over the
//! longer of its send phase and its ACK phase. The longer of the two keeps
//! ACK compression from inflating the rate. Counts are bytes, where the
//! kernel counts packets.

use crate::time::{Duration, Instant};

/// The delivery state a segment carries from its (last) transmission:
/// Linux's `tcp_skb_cb.tx`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxRate {
    /// The connection's `delivered` when the segment was sent.
    pub delivered: u64,
    /// When `delivered` last grew, as of the send (`delivered_mstamp`).
    pub delivered_time: Instant,
    /// When the first segment of this segment's flight was sent (`first_tx_mstamp`).
    pub first_sent: Instant,
    /// The sender had nothing more to send: its rate says little of the path.
    pub app_limited: bool,
    /// Still to give a sample: cleared once a SACK has taken it, so that the
    /// cumulative ACK that later covers it does not take it again.
    pub unsampled: bool,
}

/// What one ACK says about the delivery rate: Linux's `struct rate_sample`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateSample {
    pub now: Instant,
    /// Bytes delivered over `interval`; with no interval, no rate.
    pub delivered: u64,
    /// The longer of the send and ACK phases; `None` when the ACK gave no
    /// valid sample (nothing new delivered, or a phase shorter than the
    /// minimum RTT, which only a bad clock or ACK decimation can give).
    pub interval: Option<Duration>,
    /// The connection's `delivered` when the sampled segment was sent.
    pub prior_delivered: u64,
    /// Bytes newly ACKed or SACKed by this ACK; with `count_packets`, each
    /// segment counted as a full one, as are all the delivery counts here.
    pub acked_sacked: u64,
    /// Bytes newly marked lost while processing this ACK.
    pub losses: u64,
    /// The sampled segment was sent while the sender was application-limited.
    pub is_app_limited: bool,
    /// The sampled segment was a retransmission.
    pub is_retrans: bool,
    /// The RTT of the sampled segment, unless it was ever retransmitted.
    pub rtt: Option<Duration>,
    /// The ACK covered at most one segment and no SACK (Linux's
    /// `FLAG_ACK_MAYBE_DELAYED`): its RTT may include a delayed-ACK hold.
    pub is_ack_delayed: bool,
    /// Bytes in flight before the ACK (`prior_in_flight`) and after it.
    pub prior_in_flight: u64,
    pub in_flight: u64,
    /// The connection's totals after the ACK: bytes delivered and marked lost, ever.
    pub total_delivered: u64,
    pub total_lost: u64,
    /// When `total_delivered` last grew.
    pub delivered_time: Instant,
    /// The sender's loss-recovery state after the ACK.
    pub state: CaState,
    /// The earliest time the pacer lets the next segment go (Linux's
    /// `tcp_wstamp_ns`), `now` if it may go now.
    pub next_send: Instant,
    pub mss: u64,
}

impl RateSample {
    /// The delivery rate in bytes per second, if the sample has one.
    pub fn rate(&self) -> Option<u64> {
        let interval = self.interval?.as_nanos();
        (interval > 0).then(|| (self.delivered as u128 * 1_000_000_000 / interval as u128) as u64)
    }
}

/// Linux's congestion-avoidance states, as far as a congestion control that
/// sets the window itself needs them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum CaState {
    #[default]
    Open,
    /// Fast recovery (`TCP_CA_Recovery`).
    Recovery,
    /// After a retransmission timeout, until what was outstanding then is
    /// acknowledged (`TCP_CA_Loss`).
    Loss,
}

/// The connection's delivery state, and the sample under construction
/// while an ACK is processed.
#[derive(Clone, Debug)]
pub struct DeliveryRate {
    delivered: u64,
    delivered_time: Instant,
    first_sent: Instant,
    /// Application-limited until `delivered` passes this (`tp->app_limited`).
    app_limited_until: Option<u64>,
    lost: u64,
    min_rtt: Option<Duration>,
    /// The most recently sent segment the current ACK delivered: its stamp,
    /// send time, end and whether it was ever retransmitted.
    latest: Option<(TxRate, Instant, u64, bool)>,
    /// The latest sample with a rate that was not application-limited, or
    /// one faster: what Linux reports as `delivery_rate`.
    reported: Option<(u64, Duration, bool)>,
}

impl DeliveryRate {
    /// A connection that starts at `now`. Its first flight is marked
    /// application-limited, as Linux initialises `app_limited` to ~0: the
    /// initial window says nothing of the path.
    pub fn new(now: Instant) -> DeliveryRate {
        DeliveryRate {
            delivered: 0,
            delivered_time: now,
            first_sent: now,
            app_limited_until: Some(0),
            lost: 0,
            min_rtt: None,
            latest: None,
            reported: None,
        }
    }

    /// A segment leaves; `outstanding` bytes were sent and not yet
    /// cumulatively acknowledged before it. Returns its stamp
    /// (`tcp_rate_skb_sent`): with nothing outstanding, a new flight starts
    /// now, so that an idle period is not counted as sending time.
    pub fn on_send(&mut self, now: Instant, outstanding: u64) -> TxRate {
        if outstanding == 0 {
            self.first_sent = now;
            self.delivered_time = now;
        }
        TxRate {
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent: self.first_sent,
            app_limited: self.app_limited_until.is_some(),
            unsampled: true,
        }
    }

    /// The current ACK delivered a segment sent at `sent`, ending at `end`,
    /// with stamp `tx` (`tcp_rate_skb_delivered`). Keeps the most recently
    /// sent one (ties to the higher end); a stamp already sampled is ignored.
    pub fn on_delivered(&mut self, tx: TxRate, sent: Instant, end: u64, retransmitted: bool) {
        if !tx.unsampled {
            return;
        }
        if self.latest.is_none_or(|(_, s, e, _)| (sent, end) > (s, e)) {
            self.latest = Some((tx, sent, end, retransmitted));
        }
    }

    /// An RTT sample for the minimum that bounds a valid interval (the
    /// kernel's `tcp_min_rtt`, a 5-minute windowed minimum; here the minimum
    /// of the connection, which differs only in runs longer than that).
    /// Each sample's own RTT is taken before its interval is judged.
    pub fn on_rtt(&mut self, rtt: Duration) {
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
    }

    /// Ends the current ACK (`tcp_rate_gen`): `delivered` bytes newly ACKed
    /// or SACKed and `lost` newly marked lost. Fills in `rs`'s rate fields
    /// and the connection totals.
    pub fn generate(&mut self, now: Instant, delivered: u64, lost: u64, rs: &mut RateSample) {
        let latest = self.latest.take();
        self.delivered += delivered;
        self.lost += lost;
        if self.app_limited_until.is_some_and(|until| self.delivered > until) {
            self.app_limited_until = None;
        }
        if delivered > 0 {
            self.delivered_time = now;
        }
        rs.now = now;
        rs.acked_sacked = delivered;
        rs.losses = lost;
        rs.total_delivered = self.delivered;
        rs.total_lost = self.lost;
        rs.delivered_time = self.delivered_time;
        rs.interval = None;
        rs.delivered = 0;
        let Some((tx, sent, _, retransmitted)) = latest else { return };
        // The send phase runs from the first to the last transmission of
        // the flight; the ACK phase from the ACK before it to this one.
        self.first_sent = sent;
        rs.prior_delivered = tx.delivered;
        rs.is_app_limited = tx.app_limited;
        rs.is_retrans = retransmitted;
        rs.rtt = (!retransmitted).then(|| now - sent);
        if let Some(rtt) = rs.rtt {
            self.on_rtt(rtt);
        }
        rs.delivered = self.delivered - tx.delivered;
        let send = sent.saturating_since(tx.first_sent);
        let ack = now.saturating_since(tx.delivered_time);
        let interval = send.max(ack);
        if self.min_rtt.is_some_and(|m| interval < m) || interval == Duration::ZERO {
            return;
        }
        rs.interval = Some(interval);
        let faster = self.reported.is_none_or(|(d, i, _)| {
            rs.delivered as u128 * i.as_nanos() as u128 >= d as u128 * interval.as_nanos() as u128
        });
        if !rs.is_app_limited || faster {
            self.reported = Some((rs.delivered, interval, rs.is_app_limited));
        }
    }

    /// Nothing more to send while the window has room
    /// (`tcp_rate_check_app_limited`), or a congestion control that wants
    /// the samples of the next round ignored (BBR's ProbeRTT): samples of
    /// segments sent from now until what is in flight is delivered are
    /// application-limited.
    pub fn mark_app_limited(&mut self, in_flight: u64) {
        self.app_limited_until = Some((self.delivered + in_flight).max(1));
    }

    pub fn is_app_limited(&self) -> bool {
        self.app_limited_until.is_some()
    }

    /// Bytes delivered (ACKed or SACKed) so far.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// Bytes marked lost so far, retransmissions lost again included.
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// When `delivered` last grew.
    pub fn delivered_time(&self) -> Instant {
        self.delivered_time
    }

    /// What Linux reports as `delivery_rate`: the latest sample not
    /// application-limited, or faster than that one, in bytes per second.
    pub fn reported_rate(&self) -> Option<u64> {
        let (d, i, _) = self.reported?;
        Some((d as u128 * 1_000_000_000 / i.as_nanos().max(1) as u128) as u64)
    }
}
