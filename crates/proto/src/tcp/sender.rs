//! The sending half of a one-way TCP connection.

use super::config::{AckCredit, Recovery, RtoEstimator, TcpConfig};
use super::congestion::{AckEvent, CongestionControl, SlowStartWatch, Window};
use super::controls::{new_control, new_slow_start_watch};
use super::handshake::{self, SynTimer};
use super::pacing::Pacer;
use super::prr::Prr;
use super::rack::Rack;
use super::rate::{CaState, DeliveryRate, RateSample};
use super::rtt::RttEstimator;
use super::sack::{SackBlock, Scoreboard};
use super::wire::{Flags, Segment, Timestamps, MAX_SACK_BLOCKS};
use super::{Connection, TsClock};
use crate::data::Data;
use crate::time::{Duration, Instant};

/// Counters for probes and tests. They only grow.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SenderStats {
    /// Data segments handed to `poll_transmit`'s caller, retransmissions included.
    pub segments_sent: u64,
    /// Payload bytes in those segments.
    pub bytes_sent: u64,
    /// Segments sent again, for any reason.
    pub retransmits: u64,
    pub bytes_retransmitted: u64,
    /// Loss recovery episodes entered on duplicate ACKs or SACK information.
    pub fast_retransmits: u64,
    /// NewReno partial ACKs.
    pub partial_acks: u64,
    /// Retransmission timer expiries.
    pub timeouts: u64,
    /// Timeouts F-RTO found spurious and undid (Linux's `TCPSpuriousRTOs`).
    pub spurious_timeouts: u64,
    pub rtt_samples: u64,
    pub acks_received: u64,
    pub dupacks: u64,
    /// SYNs sent again after their timer expired.
    pub syn_retransmits: u64,
}

/// Where the connection is, seen from the sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Nothing offered yet: the SYN leaves with the first data offered.
    Closed,
    /// The SYN is out, unanswered.
    SynSent,
    /// Data flows (from the start, without a handshake).
    Established,
    /// Given up: the SYN went unanswered `syn_retries` times, or
    /// `max_timeouts` retransmission timeouts came in a row.
    Aborted,
}

/// The sender's FIN: sent once every byte of a closed stream has been, and
/// resent by the retransmission timer until acknowledged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fin {
    Unsent,
    Sent { resend: bool },
    Acked,
}

/// Where the sender is in loss recovery.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    Open,
    /// Fast recovery, until the cumulative ACK reaches `point` (RFC 6582's
    /// `recover`, RFC 6675's RecoveryPoint: one past the highest byte sent
    /// when it began).
    Recovery {
        point: u64,
        partial_seen: bool,
    },
}

/// A TCP sender: window, retransmission timer and loss recovery.
///
/// Internally every sequence number is a 64-bit offset from the start of
/// the stream, so nothing wraps; segments on the wire carry
/// `isn + offset` modulo 2^32, and ACKs are unwrapped around `snd_una`.
///
/// Driver contract: after `push`, `close`, `handle_ack` or `handle_timeout`,
/// call `poll_transmit` until it returns `None`; call `handle_timeout` once
/// `now >= poll_timeout()`. Segments carry virtual data (its length and
/// offset in the stream); a driver with real payloads fills in the bytes.
#[derive(Debug)]
pub struct TcpSender {
    conn: Connection,
    config: TcpConfig,
    phase: Phase,
    syn: SynTimer,
    /// The sequence number of stream offset 0: the ISN, plus one for the SYN.
    seq_base: u32,
    /// The next sequence number expected from the peer: our segments' ACK field.
    peer_next: u32,
    /// A pure ACK is due: the handshake's third segment, or the answer to the peer's FIN.
    ack_due: bool,
    fin: Fin,
    /// Retransmission timeouts since the last ACK of new data.
    pub(crate) timeouts_in_a_row: u32,
    pub(crate) prr: Prr,
    pub(crate) rack: Rack,
    /// The probe timer fired: the next `poll_transmit` sends the probe.
    probe_due: bool,
    /// The shift the receiver applies to the windows it advertises.
    window_scale: u8,
    pub(crate) mss: u64,
    pub(crate) dupthresh: u32,
    pub(crate) recovery: Recovery,
    timestamps: bool,
    reset_backoff_on_new_ack: bool,
    pub(crate) w: Window,
    pub(crate) cc: Box<dyn CongestionControl>,
    pub(crate) slow_start_watch: Option<Box<dyn SlowStartWatch>>,
    /// Delivery-rate estimation, for a congestion control that sets the
    /// window itself from it; such a control answers for cwnd in recovery.
    pub(crate) rate: Option<DeliveryRate>,
    /// The pacing schedule, for a congestion control that names a rate.
    pacer: Option<Pacer>,
    /// After a timeout, until the ACK passes what was sent before it:
    /// Linux's `TCP_CA_Loss`, which a window-setting control is told of.
    loss_until: Option<u64>,
    /// F-RTO (RFC 5682 with SACK, as Linux's `tcp_process_loss`) watches
    /// this timeout recovery for a sign that the timeout was spurious.
    frto: bool,
    /// F-RTO's step 2b on this ACK: new data goes before retransmissions.
    frto_sends_new: bool,
    /// The window and threshold before the timeout, to return to if F-RTO
    /// finds it spurious (Linux's `prior_cwnd` and `prior_ssthresh`).
    undo: Option<(u64, u64)>,
    pub(crate) rtt: RttEstimator,
    pub(crate) board: Scoreboard,
    pub(crate) snd_una: u64,
    /// One past the highest byte ever sent; new data starts here.
    pub(crate) snd_max: u64,
    /// One past the last byte offered; `u64::MAX` for unlimited.
    stream_end: u64,
    closed: bool,
    /// The receiver's advertised window, bytes.
    rwnd: u64,
    pub(crate) dupacks: u32,
    pub(crate) state: State,
    /// No new fast retransmit until the cumulative ACK passes this
    /// (RFC 6582 section 3.2 step 2; also set by every RTO).
    pub(crate) recover: Option<u64>,
    /// One past the highest byte sent at the last RTO, until the cumulative
    /// ACK reaches it (ns-3's `CA_LOSS`); kept with `rto_exit_beyond_point`.
    loss_point: Option<u64>,
    /// No RTT sample until the cumulative ACK passes the first segment sent
    /// after the last RTO, from this offset (`rto_clears_rtt_history`).
    rtt_hold: Option<u64>,
    /// snd_una at the last RTO: a repeat timeout keeps ssthresh (RFC 5681 eq. 4 note).
    last_timeout_una: Option<u64>,
    /// Send the first lost segment even if the window is full (fast retransmit).
    pub(crate) force_retransmit: bool,
    pub(crate) rto_deadline: Option<Instant>,
    ts_clock: TsClock,
    /// The receiver's latest TSval, echoed as TSecr.
    ts_recent: Option<u32>,
    pub(crate) stats: SenderStats,
}

/// The scoreboard as an ACK found it, before its SACK blocks and its
/// cumulative acknowledgement.
struct Prior {
    una: u64,
    sacked: u64,
    segments: u64,
}

impl TcpSender {
    pub fn new(config: &TcpConfig, conn: Connection) -> TcpSender {
        let mss = config.mss.max(1) as u64;
        let cwnd = config.initial_cwnd.max(1) as u64 * mss;
        let ssthresh = if !config.slow_start {
            cwnd
        } else if config.initial_ssthresh == 0 {
            u64::MAX
        } else {
            config.initial_ssthresh as u64 * mss
        };
        // The connection's identity seeds what an algorithm randomises
        // (BBR's ProbeBW phases), so that a run repeats.
        let seed = ((conn.local_isn as u64) << 32) | ((conn.local_port as u64) << 16) | conn.remote_port as u64;
        let cc = new_control(config, seed);
        let rate = cc.controls_window().then(|| DeliveryRate::new(Instant::ZERO));
        let pacer = cc.pacing_rate().map(Pacer::new);
        TcpSender {
            conn,
            config: config.clone(),
            phase: if config.handshake { Phase::Closed } else { Phase::Established },
            syn: SynTimer::new(config),
            seq_base: conn.local_isn.wrapping_add(config.handshake as u32),
            peer_next: conn.remote_isn,
            ack_due: false,
            fin: Fin::Unsent,
            timeouts_in_a_row: 0,
            prr: Prr::default(),
            rack: Rack::default(),
            probe_due: false,
            window_scale: config.window_scale(),
            mss,
            dupthresh: config.dupthresh.max(1),
            recovery: config.recovery(),
            timestamps: config.timestamps,
            reset_backoff_on_new_ack: config.reset_backoff_on_new_ack,
            w: Window { cwnd, ssthresh, mss },
            cc,
            slow_start_watch: new_slow_start_watch(config),
            rate,
            pacer,
            loss_until: None,
            frto: false,
            frto_sends_new: false,
            undo: None,
            rtt: {
                let rtt = RttEstimator::new(config.initial_rto, config.min_rto, config.max_rto);
                if config.rto_estimator == RtoEstimator::Linux {
                    rtt.linux()
                } else {
                    rtt
                }
            },
            board: if config.resend_below_highest_sack {
                Scoreboard::with_rule1_below_sacked()
            } else {
                Scoreboard::new()
            },
            snd_una: 0,
            snd_max: 0,
            stream_end: 0,
            closed: false,
            rwnd: config.rcv_window as u64 * mss,
            dupacks: 0,
            state: State::Open,
            recover: None,
            loss_point: None,
            rtt_hold: None,
            last_timeout_una: None,
            force_retransmit: false,
            rto_deadline: None,
            ts_clock: conn.ts_clock(),
            ts_recent: None,
            stats: SenderStats::default(),
        }
    }

    /// Opens the connection before any data is offered: the SYN leaves at
    /// the next `poll_transmit`, as a `connect` before the first write.
    /// Without a handshake there is nothing to open.
    pub fn open(&mut self) {
        if self.phase == Phase::Closed {
            self.phase = Phase::SynSent;
        }
    }

    pub fn push(&mut self, bytes: u64) {
        if !self.closed {
            self.stream_end = self.stream_end.saturating_add(bytes);
        }
    }

    /// From now on the stream ends at what has been sent; that much is
    /// still delivered reliably, and `is_finished` turns true once it is.
    pub fn close(&mut self) {
        self.closed = true;
        self.stream_end = self.snd_max;
    }

    /// The stream ends after what has been offered: the application has
    /// written its last byte (a sized transfer).
    pub fn finish(&mut self) {
        self.closed = true;
    }

    /// The stream offset a sequence number of ours stands for, taking the
    /// one within 2^31 of `near`; `None` if that would be before the stream.
    fn unwrap(&self, seq: u32, near: u64) -> Option<u64> {
        let delta = seq.wrapping_sub(self.seq_base.wrapping_add(near as u32)) as i32 as i64;
        near.checked_add_signed(delta)
    }

    /// One past the last sequence offset sent: the FIN counts one.
    fn seq_max(&self) -> u64 {
        self.snd_max + matches!(self.fin, Fin::Sent { .. } | Fin::Acked) as u64
    }

    pub fn handle_ack(&mut self, now: Instant, ack: &Segment) {
        self.stats.acks_received += 1;
        if !ack.flags.contains(Flags::ACK) {
            return;
        }
        match self.phase {
            Phase::SynSent if ack.flags.contains(Flags::SYN) => return self.establish(now, ack),
            Phase::Established => {}
            _ => return,
        }
        if self.config.handshake && ack.flags.contains(Flags::SYN) {
            // The peer did not hear our third segment: say it again.
            self.ack_due = true;
            return;
        }
        if self.config.handshake && ack.flags.contains(Flags::FIN) {
            self.peer_next = ack.seq.wrapping_add(1);
            self.ack_due = true;
        }
        let Some(mut acked) = self.unwrap(ack.ack, self.snd_una).filter(|&a| a >= self.snd_una && a <= self.seq_max())
        else {
            return; // acknowledges data never sent, or stale
        };
        if acked > self.snd_max {
            self.fin = Fin::Acked;
            acked = self.snd_max;
            if self.snd_una == self.snd_max {
                self.rto_deadline = None;
            }
        }
        if let Some(ts) = ack.timestamp {
            if self.ts_recent.is_none_or(|r| ts.value.wrapping_sub(r) as i32 >= 0) {
                self.ts_recent = Some(ts.value);
            }
        }
        let window = (ack.window as u64) << self.window_scale;
        let window_changed = window != self.rwnd;
        self.rwnd = window;
        let prior_in_flight = self.bytes_in_flight();
        let prior_lost = self.board.lost_bytes();
        let prior_lost_total = self.board.lost_total();
        let prior =
            Prior { una: self.snd_una, sacked: self.board.sacked_bytes(), segments: self.board.delivered_segments() };
        let prior_loss_until = self.loss_until;
        let outstanding = self.snd_max - self.snd_una;
        self.frto_sends_new = false;

        let mut newly_sacked = 0;
        let (mut sacked_original, mut acked_original) = (None, None);
        if self.uses_sack() && ack.sack_len > 0 {
            let mut blocks = [SackBlock::default(); MAX_SACK_BLOCKS];
            let mut n = 0;
            for b in ack.sack_blocks() {
                if let (Some(start), Some(end)) = (self.unwrap(b.start, self.snd_una), self.unwrap(b.end, self.snd_una))
                {
                    blocks[n] = SackBlock { start, end };
                    n += 1;
                }
            }
            let sacked = self.board.apply_sack(&blocks[..n]);
            (newly_sacked, sacked_original) = (sacked.bytes, sacked.original_end);
            let latest = sacked.latest;
            if let (Some(rate), Some(d)) = (self.rate.as_mut(), latest) {
                rate.on_delivered(d.tx, d.sent, d.end, d.retransmitted);
            }
            if self.rack_enabled() {
                if let Some(d) = latest {
                    self.rack.on_delivered(d, now);
                }
            } else if newly_sacked > 0 {
                self.board.mark_lost_by_sack(self.dupthresh, self.mss);
            }
        }

        if acked > self.snd_una {
            acked_original = self.on_new_ack(now, acked, ack.timestamp, prior_in_flight, &prior);
        } else if !self.rack_enabled() {
            // RFC 5681 section 2 (without SACK) or RFC 6675 section 2 (with it).
            let is_dup = outstanding > 0
                && ack.is_empty()
                && !ack.flags.contains(Flags::FIN)
                && if self.uses_sack() { newly_sacked > 0 } else { !window_changed };
            if is_dup {
                self.stats.dupacks += 1;
                self.dupacks += 1;
                self.on_dupack(now, outstanding);
            }
            if self.uses_sack()
                && self.state == State::Open
                && self.board.front_is_lost()
                && self.may_fast_retransmit(acked)
                && self.dupacks > 0
            {
                self.enter_recovery(now, outstanding);
            }
        }
        if let Some(high) = prior_loss_until.filter(|_| self.frto) {
            let is_dup = self.snd_una == prior.una && !window_changed;
            let original_end = [sacked_original, acked_original].into_iter().flatten().min();
            self.frto_on_ack(high, prior.una, original_end, newly_sacked > 0 || is_dup);
        }
        if self.rack_enabled() {
            self.rack_on_ack(now, acked);
            self.rack_detect_loss(now, outstanding, false);
            self.arm_probe(now);
        }
        if self.rate.is_some() {
            let maybe_delayed = self.snd_una > prior.una
                && self.snd_una - prior.una < self.mss
                && prior.sacked == 0
                && newly_sacked == 0;
            self.on_rate_sample(now, &prior, prior_lost_total, prior_in_flight, maybe_delayed);
        } else if self.recovery == Recovery::Prr && self.in_recovery() {
            let delivered = self.newly_delivered(&prior);
            let safe = self.snd_una > prior.una && self.board.lost_bytes() <= prior_lost;
            let (ssthresh, mss) = (self.w.ssthresh, self.mss);
            if self.config.prr_dupack_credit {
                // ns-3: `DupAck` runs PRR for an ACK with new SACK information,
                // with a segment's credit, and `ProcessAck` runs it again for
                // a partial ACK of a whole segment or more.
                if newly_sacked > 0 {
                    let credit = self.prr.dupack_credit(mss);
                    self.w.cwnd = self.prr.on_ack(delivered + credit, self.bytes_in_flight(), ssthresh, mss, safe);
                }
                if self.snd_una > prior.una && delivered >= mss {
                    self.w.cwnd = self.prr.on_ack(delivered, self.bytes_in_flight(), ssthresh, mss, safe);
                }
            } else {
                self.w.cwnd = self.prr.on_ack(delivered, self.bytes_in_flight(), ssthresh, mss, safe);
            }
        }
    }

    /// Whether recovery runs on the SACK scoreboard (RFC 6675, and PRR over it).
    pub(crate) fn uses_sack(&self) -> bool {
        matches!(self.recovery, Recovery::Sack | Recovery::Prr)
    }

    /// `prior`: the scoreboard before this ACK, whose SACK blocks it has
    /// already applied. Returns the lowest end of a never-resent segment it
    /// acknowledged, for F-RTO.
    fn on_new_ack(
        &mut self,
        now: Instant,
        ack: u64,
        timestamp: Option<Timestamps>,
        prior_in_flight: u64,
        prior: &Prior,
    ) -> Option<u64> {
        let acked = self.board.ack(ack);
        if let (true, Some(d)) = (self.rack_enabled(), acked.latest) {
            self.rack.on_delivered(d, now);
        }
        if let (Some(rate), Some(d)) = (self.rate.as_mut(), acked.latest) {
            rate.on_delivered(d.tx, d.sent, d.end, d.retransmitted);
        }
        if self.loss_until.is_some_and(|p| ack >= p) {
            self.loss_until = None;
        }
        self.snd_una = ack;
        self.dupacks = 0;
        self.last_timeout_una = None;
        self.timeouts_in_a_row = 0;

        // RFC 7323 section 4.1: with timestamps every ACK of new data is an
        // unambiguous sample; otherwise Karn's rule.
        let mut sample = match timestamp {
            Some(ts) if self.timestamps => self.ts_clock.since(now, ts.echo),
            _ if acked.retransmitted => None,
            _ => acked.newest_sent.map(|t| now - t),
        };
        if let Some(first) = self.rtt_hold {
            // ns-3 samples only once the first segment sent after the timeout is acknowledged.
            if ack >= first + self.mss {
                self.rtt_hold = None;
            } else {
                sample = None;
            }
        }
        let ca_rtt = if acked.retransmitted { None } else { acked.newest_sent.map(|t| now - t) };
        if let Some(r) = sample {
            self.rtt.on_sample(r, self.snd_una, self.snd_max);
            self.cc.on_rtt_sample(now, r);
            self.stats.rtt_samples += 1;
        } else if self.reset_backoff_on_new_ack {
            self.rtt.clear_backoff();
        }

        let mut restart_timer = true;
        match self.state {
            State::Open => {
                let credit = match self.config.ack_credit {
                    AckCredit::Cumulative => acked.bytes,
                    AckCredit::Delivered => self.newly_delivered(prior),
                };
                let mut ev = AckEvent {
                    now,
                    acked: credit,
                    rtt: sample,
                    ca_rtt,
                    srtt: self.rtt.srtt(),
                    snd_una: self.snd_una,
                    snd_max: self.snd_max,
                    prior_in_flight,
                };
                if let Some(point) = self.loss_point.filter(|&p| self.snd_una >= p) {
                    // ns-3 leaves CA_LOSS counting the segments past the point only.
                    self.loss_point = None;
                    ev.acked = (self.snd_una - point) / self.mss * self.mss;
                }
                if ev.acked > 0 {
                    if self.w.in_slow_start() {
                        if let Some(watch) = self.slow_start_watch.as_mut() {
                            ev.acked /= watch.on_ack(&mut self.w, &ev).max(1);
                        }
                    }
                    self.cc.on_ack(&mut self.w, &ev);
                }
            }
            State::Recovery { point, partial_seen } => {
                if self.snd_una >= point {
                    self.exit_recovery(now);
                } else {
                    match self.recovery {
                        Recovery::Reno => self.exit_recovery(now),
                        Recovery::NewReno => {
                            restart_timer = !partial_seen;
                            self.on_partial_ack(acked.bytes);
                        }
                        Recovery::Sack | Recovery::Prr => {}
                    }
                }
            }
        }

        // RFC 6298 section 5.2 and 5.3.
        if self.snd_una == self.snd_max && self.fin != (Fin::Sent { resend: false }) {
            self.rto_deadline = None;
        } else if restart_timer {
            self.rto_deadline = Some(self.timer_from(now, self.rtt.rto()));
        }
        acked.original_end
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        if self.phase == Phase::SynSent {
            if self.syn.is_due(now) {
                if self.syn.expire() {
                    self.stats.syn_retransmits += 1;
                } else {
                    self.phase = Phase::Aborted;
                }
            }
            return;
        }
        if let Some(pacer) = self.pacer.as_mut() {
            pacer.on_timeout(now);
            // What the pacer releases later is not sent on the ACK: Linux's
            // `tcp_tsq_write` resends lost segments first.
            self.frto_sends_new = false;
        }
        if self.rack.reordering_deadline.is_some_and(|d| now >= d) {
            self.rack.reordering_deadline = None;
            let outstanding = self.snd_max - self.snd_una;
            self.rack_detect_loss(now, outstanding, true);
        }
        // A probe due no later than the RTO goes first (Linux replaces the RTO timer with it).
        if let Some(probe) = self.rack.probe_deadline.filter(|&d| now >= d && self.rto_deadline.is_none_or(|r| d <= r))
        {
            let _ = probe;
            self.rack.probe_deadline = None;
            self.probe_due = true;
            return;
        }
        match self.rto_deadline {
            Some(d) if now >= d => {}
            _ => return,
        }
        if self.board.is_empty() {
            self.rto_deadline = None;
            if let Fin::Sent { .. } = self.fin {
                // Only the FIN is outstanding: send it again, backing off.
                self.fin = Fin::Sent { resend: true };
                self.rtt.on_timeout();
                self.rto_deadline = Some(now + self.rtt.rto());
            }
            return;
        }
        self.on_rto(now);
    }

    pub fn poll_transmit(&mut self, now: Instant) -> Option<Segment> {
        match self.phase {
            Phase::Established => {}
            Phase::Closed if self.stream_end > 0 || self.closed => return Some(self.send_syn(now)),
            Phase::SynSent if self.syn.deadline.is_none() => return Some(self.send_syn(now)),
            _ => return None,
        }
        if std::mem::take(&mut self.ack_due) {
            let mut ack = self.segment(self.seq_max(), 0, now);
            ack.data = Data::EMPTY;
            return Some(ack);
        }
        if let Some(pacer) = self.pacer.as_mut() {
            if self.snd_una == self.snd_max && self.snd_max >= self.stream_end && !self.probe_due {
                // Everything sent is acknowledged and nothing is left: no
                // segment waits for the pacer, so it must not wake the sender.
                pacer.cancel_wait();
            } else if !pacer.may_send(now) {
                return None;
            }
        }
        if std::mem::take(&mut self.probe_due) {
            if let Some(probe) = self.send_probe(now) {
                return Some(probe);
            }
        }
        let segment = self.poll_data(now);
        if segment.is_some() {
            return segment;
        }
        self.poll_fin(now)
    }

    /// One past the last byte offered.
    pub(crate) fn stream_end(&self) -> u64 {
        self.stream_end
    }

    /// The receiver's advertised window, bytes.
    pub(crate) fn rwnd(&self) -> u64 {
        self.rwnd
    }

    fn poll_data(&mut self, now: Instant) -> Option<Segment> {
        if self.force_retransmit {
            self.force_retransmit = false;
            if let Some(i) = self.board.next_pending() {
                return Some(self.retransmit(i, now));
            }
        }
        let room = self.w.cwnd.saturating_sub(self.bytes_in_flight());
        if self.frto_sends_new {
            let len = self.mss.min(self.stream_end - self.snd_max);
            if len > 0 && len <= room && self.snd_max + len <= self.snd_una + self.rwnd {
                return Some(self.send_new(len as u32, now));
            }
            // `tcp_xmit_recovery`: new data sent on this ACK, nothing resent
            // on it; none sent, F-RTO gives up and the lost are resent.
            self.frto_sends_new = false;
            if self.loss_until.is_some_and(|high| self.snd_max > high) {
                return None;
            }
            self.frto = false;
        }
        // NextSeg rule 1 (and go-back-N after a timeout).
        if let Some(i) = self.board.next_pending() {
            if self.board.get(i).len as u64 <= room {
                return Some(self.retransmit(i, now));
            }
            return None;
        }
        // Rule 2: new data, within both windows.
        let len = self.mss.min(self.stream_end - self.snd_max);
        if len == 0 && room > 0 {
            // The application, not the network, limits what is in flight.
            let in_flight = self.in_flight_counted();
            if let Some(rate) = self.rate.as_mut() {
                rate.mark_app_limited(in_flight);
            }
        }
        if len > 0 {
            if len <= room && self.snd_max + len <= self.snd_una + self.rwnd {
                return Some(self.send_new(len as u32, now));
            }
            if len > room {
                return None;
            }
        }
        // Rule 3: during SACK recovery, resend what is neither SACKed nor
        // presumed lost but lies below the highest SACKed byte.
        if self.uses_sack() && matches!(self.state, State::Recovery { .. }) {
            if let Some(i) = self.board.next_rule3() {
                if self.board.get(i).len as u64 <= room {
                    return Some(self.retransmit(i, now));
                }
            }
        }
        None
    }

    pub fn poll_timeout(&self) -> Option<Instant> {
        match self.phase {
            Phase::SynSent => self.syn.deadline,
            Phase::Established => [
                self.rto_deadline,
                self.rack.probe_deadline,
                self.rack.reordering_deadline,
                self.pacer.and_then(|p| p.deadline()),
            ]
            .into_iter()
            .flatten()
            .min(),
            _ => None,
        }
    }

    /// The FIN, once a closed stream has been sent whole (RFC 9293 3.6).
    /// With no handshake the connection never closes, as ns-2's agents.
    fn poll_fin(&mut self, now: Instant) -> Option<Segment> {
        if !self.config.handshake || !self.closed || self.snd_max < self.stream_end {
            return None;
        }
        match self.fin {
            Fin::Unsent => {}
            Fin::Sent { resend: true } => {}
            _ => return None,
        }
        self.fin = Fin::Sent { resend: false };
        self.arm_timer(now);
        let mut fin = self.segment(self.snd_max, 0, now);
        fin.data = Data::EMPTY;
        fin.flags = Flags::FIN | Flags::ACK;
        Some(fin)
    }

    fn send_syn(&mut self, now: Instant) -> Segment {
        self.phase = Phase::SynSent;
        self.syn.sent(now);
        let mut syn = Segment::new(self.conn.local_port, self.conn.remote_port);
        syn.seq = self.conn.local_isn;
        syn.flags = Flags::SYN;
        syn.window = self.config.window_bytes().min(u16::MAX as u64) as u16;
        syn.syn_options = handshake::offer(&self.config);
        if self.config.timestamps {
            syn.timestamp = Some(Timestamps { value: self.ts_clock.read(now), echo: 0 });
        }
        syn
    }

    /// The SYN-ACK arrived: settle the options, take the handshake's RTT
    /// sample (RFC 6298 2.2, Karn's rule unless timestamps say which SYN
    /// it answers), and owe the peer our third segment.
    fn establish(&mut self, now: Instant, syn_ack: &Segment) {
        if syn_ack.ack != self.conn.local_isn.wrapping_add(1) {
            return;
        }
        let settled = handshake::settle(&self.config, syn_ack);
        self.peer_next = syn_ack.seq.wrapping_add(1);
        self.window_scale = settled.peer_window_scale;
        // RFC 7323 2.2: the window of a SYN is never scaled.
        self.rwnd = syn_ack.window as u64;
        self.timestamps = settled.timestamps;
        if !settled.sack && matches!(self.recovery, Recovery::Sack | Recovery::Prr) {
            self.recovery = Recovery::NewReno;
        }
        if settled.mss != self.mss {
            self.mss = settled.mss;
            self.w.mss = settled.mss;
            self.w.cwnd = self.config.initial_cwnd.max(1) as u64 * settled.mss;
            if !self.config.slow_start {
                self.w.ssthresh = self.w.cwnd;
            } else if self.config.initial_ssthresh > 0 {
                self.w.ssthresh = self.config.initial_ssthresh as u64 * settled.mss;
            }
        }
        self.ts_recent = syn_ack.timestamp.map(|t| t.value);
        let echo = syn_ack.timestamp.filter(|_| settled.timestamps).map(|t| t.echo);
        let sample = self.syn.sample_echoed(now, echo, self.ts_clock);
        match sample {
            Some(r) => {
                self.rtt.on_sample(r, self.snd_una, self.snd_max);
                self.cc.on_rtt_sample(now, r);
                // A control that paces takes its first rate from this RTT
                // (`bbr_init` runs once connected): the data is paced by it.
                self.update_pacing_rate();
                self.stats.rtt_samples += 1;
                // The handshake's round trip is the first least RTT RACK
                // knows (`tcp_update_rtt_min` on `FLAG_SYN_ACKED`), timed by
                // the echo if the SYN was sent again, as Linux times it.
                self.rack.note_rtt(r);
            }
            // RFC 6298 5.7: the SYN was sent again and nothing says which
            // copy was answered, so data starts with a 3 s RTO at least.
            None => self.rtt.fall_back(Duration::from_secs(3)),
        }
        self.phase = Phase::Established;
        self.ack_due = true;
    }

    /// A segment carrying stream bytes `[offset, offset + len)`.
    fn segment(&self, offset: u64, len: u32, now: Instant) -> Segment {
        let mut seg = Segment::new(self.conn.local_port, self.conn.remote_port);
        seg.seq = self.seq_base.wrapping_add(offset as u32);
        seg.ack = self.peer_next;
        seg.flags = Flags::ACK;
        seg.data = Data::Virtual { len, offset };
        if self.timestamps {
            seg.timestamp = Some(Timestamps { value: self.ts_clock.read(now), echo: self.ts_recent.unwrap_or(0) });
        }
        seg
    }

    fn arm_timer(&mut self, now: Instant) {
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(self.timer_from(now, self.rtt.rto()));
        }
    }

    /// When a timer of `span` armed at `now` fires: `span` after the
    /// pacer's next departure with `timers_after_pacing`, else after `now`.
    pub(crate) fn timer_from(&self, now: Instant, span: Duration) -> Instant {
        let start = match &self.pacer {
            Some(pacer) if self.config.timers_after_pacing => pacer.next_send().max(now),
            _ => now,
        };
        start + span
    }

    pub(crate) fn send_new(&mut self, len: u32, now: Instant) -> Segment {
        let seg = self.segment(self.snd_max, len, now);
        let outstanding = self.snd_max - self.snd_una;
        let tx = self.rate.as_mut().map(|r| r.on_send(now, outstanding)).unwrap_or_default();
        self.board.push(self.snd_max, len, now, tx);
        self.snd_max += len as u64;
        self.prr.on_send(len as u64);
        self.stats.segments_sent += 1;
        if let Some(pacer) = self.pacer.as_mut() {
            pacer.on_send(now, len as u64, self.stats.segments_sent);
        }
        self.stats.bytes_sent += len as u64;
        self.arm_timer(now);
        seg
    }

    pub(crate) fn retransmit(&mut self, i: usize, now: Instant) -> Segment {
        let outstanding = self.snd_max - self.snd_una;
        let tx = self.rate.as_mut().map(|r| r.on_send(now, outstanding)).unwrap_or_default();
        let s = self.board.on_retransmit(i, now, tx);
        self.prr.on_send(s.len as u64);
        let seg = self.segment(s.seq, s.len, now);
        self.stats.segments_sent += 1;
        if let Some(pacer) = self.pacer.as_mut() {
            pacer.on_send(now, s.len as u64, self.stats.segments_sent);
        }
        self.stats.bytes_sent += s.len as u64;
        self.stats.retransmits += 1;
        self.stats.bytes_retransmitted += s.len as u64;
        if i == 0 && self.rack_enabled() {
            // Linux (`tcp_xmit_retransmit_queue`) restarts the RTO when it
            // resends the head, in recovery and after a timeout alike,
            // leaving RACK an RTO to find a lost retransmission before the
            // timer does.
            self.rto_deadline = Some(self.timer_from(now, self.rtt.rto()));
        }
        self.arm_timer(now);
        seg
    }

    pub fn cwnd(&self) -> u64 {
        self.w.cwnd
    }

    pub fn ssthresh(&self) -> u64 {
        self.w.ssthresh
    }

    pub fn window(&self) -> Window {
        self.w
    }

    pub fn srtt(&self) -> Option<Duration> {
        self.rtt.srtt()
    }

    pub fn rttvar(&self) -> Duration {
        self.rtt.rttvar()
    }

    /// The retransmission timeout in force, backoff included.
    pub fn rto(&self) -> Duration {
        self.rtt.rto()
    }

    /// RFC 6675 `pipe`; without SACK, outstanding bytes less those marked
    /// lost and not yet resent (after a timeout).
    pub fn bytes_in_flight(&self) -> u64 {
        self.board.in_flight()
    }

    pub fn snd_una(&self) -> u64 {
        self.snd_una
    }

    /// One past the highest byte sent.
    pub fn snd_max(&self) -> u64 {
        self.snd_max
    }

    /// Bytes the scoreboard holds as SACKed.
    pub fn sacked_bytes(&self) -> u64 {
        self.board.sacked_bytes()
    }

    /// Bytes presumed lost and not SACKed.
    pub fn lost_bytes(&self) -> u64 {
        self.board.lost_bytes()
    }

    pub fn in_recovery(&self) -> bool {
        matches!(self.state, State::Recovery { .. })
    }

    /// After a timeout, until what was sent before it is acknowledged (Linux's `TCP_CA_Loss`).
    pub(crate) fn in_timeout_recovery(&self) -> bool {
        self.loss_until.is_some()
    }

    /// Every byte of a finite stream is acknowledged (and its FIN, with a handshake).
    pub fn is_finished(&self) -> bool {
        self.stream_end != u64::MAX
            && self.snd_una >= self.stream_end
            && (!self.config.handshake || !self.closed || self.fin == Fin::Acked)
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The loss recovery in force: the configured one, or NewReno if the peer did not offer SACK.
    pub fn recovery(&self) -> Recovery {
        self.recovery
    }

    /// The MSS in use: the configured one, or less if the peer asked.
    pub fn mss(&self) -> u64 {
        self.mss
    }

    pub fn stats(&self) -> &SenderStats {
        &self.stats
    }

    pub fn congestion_control(&self) -> &dyn CongestionControl {
        &*self.cc
    }

    pub(crate) fn config(&self) -> &TcpConfig {
        &self.config
    }

    pub(crate) fn on_rto(&mut self, now: Instant) {
        self.stats.timeouts += 1;
        if self.gives_up_after_timeout() {
            self.phase = Phase::Aborted;
            self.rto_deadline = None;
            return;
        }
        // `tcp_enter_loss`: F-RTO watches a timeout out of the open state,
        // or one more in a row (RFC 5682 section 3.2).
        let new_episode = !self.in_recovery() && !self.in_timeout_recovery();
        self.frto = self.config.frto && self.uses_sack() && (new_episode || self.timeouts_in_a_row > 1);
        // RFC 5681 section 3.1: ssthresh is not lowered again when the same
        // segment times out repeatedly.
        if self.last_timeout_una != Some(self.snd_una) {
            self.undo = Some((self.w.cwnd, self.w.ssthresh));
            let basis = self.loss_basis(self.snd_max - self.snd_una);
            self.w.ssthresh = self.cc.ssthresh_after_loss(&self.w, basis, now);
            self.last_timeout_una = Some(self.snd_una);
        }
        self.w.cwnd = self.mss;
        self.rack_on_timeout();
        self.cc.on_timeout(&mut self.w, now);
        let prior_lost_total = self.board.lost_total();
        if let Some(watch) = self.slow_start_watch.as_mut() {
            watch.on_congestion(true);
        }
        self.rtt.on_timeout();
        if self.config.keep_sack_after_rto {
            self.board.mark_unsacked_lost();
        } else {
            self.board.mark_all_lost();
        }
        self.state = State::Open;
        self.dupacks = 0;
        self.force_retransmit = false;
        self.recover = Some(self.snd_max);
        self.loss_until = Some(self.snd_max);
        if self.config.rto_exit_beyond_point {
            self.loss_point = Some(self.snd_max);
        }
        if self.config.rto_clears_rtt_history {
            self.rtt_hold = Some(self.snd_max);
        }
        self.rto_deadline = Some(now + self.rtt.rto());
        if let Some(mut rate) = self.rate.take() {
            let mut rs = self.rate_sample_base(now, self.bytes_in_flight());
            rate.generate(now, 0, self.board.lost_total() - prior_lost_total, &mut rs);
            self.rate = Some(rate);
            self.cc.on_rate_sample(&mut self.w, &rs, true);
            self.update_pacing_rate();
        }
    }

    /// F-RTO on an ACK of a timeout recovery that began with everything up
    /// to `high` outstanding (`tcp_process_loss`, RFC 5682 section 3.1 with
    /// SACK). `original_end`: the lowest end of a never-resent segment this
    /// ACK delivered; `more_lost`: it SACKed something or duplicated.
    fn frto_on_ack(&mut self, high: u64, prior_una: u64, original_end: Option<u64>, more_lost: bool) {
        // Step 3b: data sent before the timeout and never resent arrived,
        // so not everything was lost.
        if original_end.is_some_and(|end| end <= high) {
            return self.undo_timeout();
        }
        if self.snd_max > high {
            // Step 3a: after new data went out, more loss means the timeout was real.
            if more_lost {
                self.frto = false;
            }
        } else if self.snd_una > prior_una && self.snd_una < high {
            // Step 2b: the first resend arrived; send new data, not old.
            if self.snd_max < self.stream_end && self.snd_max < self.snd_una + self.rwnd {
                self.frto_sends_new = true;
            } else {
                self.frto = false;
            }
        }
    }

    /// A spurious timeout: the lost marks, the window and the threshold go
    /// back as they were (`tcp_try_undo_loss`). A window-setting control
    /// keeps its window and restores its own.
    fn undo_timeout(&mut self) {
        self.stats.spurious_timeouts += 1;
        self.board.unmark_lost();
        if let Some((cwnd, ssthresh)) = self.undo.take() {
            self.w.cwnd = self.cc.undo_cwnd(&self.w, cwnd);
            self.w.ssthresh = self.w.ssthresh.max(ssthresh);
        }
        self.leave_timeout_recovery();
        // RACK may start a fast recovery on this same ACK.
        self.recover = None;
        self.timeouts_in_a_row = 0;
    }

    /// Ends the timeout's recovery before what was sent before it is
    /// acknowledged: it was spurious, or a fast recovery takes over
    /// (Linux's `tcp_enter_recovery` from `TCP_CA_Loss`). F-RTO stops, and
    /// the timeout can no longer be undone.
    pub(crate) fn leave_timeout_recovery(&mut self) {
        self.loss_until = None;
        self.frto = false;
        self.undo = None;
    }

    /// What the sender knows of its state for a rate sample, before the
    /// estimator fills in the rate.
    fn rate_sample_base(&self, now: Instant, prior_in_flight: u64) -> RateSample {
        RateSample {
            now,
            prior_in_flight,
            in_flight: self.bytes_in_flight(),
            state: if self.in_recovery() {
                CaState::Recovery
            } else if self.in_timeout_recovery() {
                CaState::Loss
            } else {
                CaState::Open
            },
            next_send: self.pacer.map_or(now, |p| p.next_send().max(now)),
            mss: self.mss,
            ..RateSample::default()
        }
    }

    /// Ends an ACK for a window-setting congestion control (Linux's
    /// `tcp_rate_gen` then `cong_control`): what it delivered since
    /// `prior`, and what it had marked lost.
    fn on_rate_sample(
        &mut self,
        now: Instant,
        prior: &Prior,
        prior_lost_total: u64,
        prior_in_flight: u64,
        maybe_delayed: bool,
    ) {
        let delivered = self.newly_delivered(prior);
        let Some(mut rate) = self.rate.take() else { return };
        let mut rs = self.rate_sample_base(now, prior_in_flight);
        rs.is_ack_delayed = maybe_delayed;
        rate.generate(now, delivered, self.board.lost_total() - prior_lost_total, &mut rs);
        if self.cc.on_rate_sample(&mut self.w, &rs, false) {
            rate.mark_app_limited(self.in_flight_counted());
        }
        self.rate = Some(rate);
        self.update_pacing_rate();
    }

    /// What is in flight, in the units deliveries are counted in: with
    /// `count_packets` each segment as a full one (a lone short segment,
    /// iperf3's cookie, as one packet).
    fn in_flight_counted(&self) -> u64 {
        let bytes = self.bytes_in_flight();
        if self.config.count_packets {
            return bytes.div_ceil(self.mss) * self.mss;
        }
        bytes
    }

    /// What the current ACK delivered since `prior`: RFC 6937's
    /// DeliveredData, the change in `snd_una` plus the change in SACKed
    /// bytes, or with `count_packets` the segments delivered, each counted
    /// as a full one.
    fn newly_delivered(&self, prior: &Prior) -> u64 {
        if self.config.count_packets {
            return (self.board.delivered_segments() - prior.segments) * self.mss;
        }
        (self.snd_una - prior.una + self.board.sacked_bytes()).saturating_sub(prior.sacked)
    }

    fn update_pacing_rate(&mut self) {
        if let (Some(pacer), Some(rate)) = (self.pacer.as_mut(), self.cc.pacing_rate()) {
            pacer.rate = rate;
        }
    }

    /// The rate the sender paces at, bytes per second, if it paces.
    pub fn pacing_rate(&self) -> Option<u64> {
        self.pacer.map(|p| p.rate)
    }

    /// The delivery-rate estimator, for a window-setting congestion control.
    pub fn delivery_rate(&self) -> Option<&DeliveryRate> {
        self.rate.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::config::Variant;

    const MSS: u64 = 1000;

    fn conn() -> Connection {
        Connection { local_port: 1, remote_port: 2, local_isn: 0, remote_isn: 0 }
    }

    fn drain(s: &mut TcpSender, now: Instant) -> Vec<Segment> {
        std::iter::from_fn(|| s.poll_transmit(now)).collect()
    }

    fn ack(ack: u32, window: u16) -> Segment {
        let mut a = Segment::new(2, 1);
        a.flags = Flags::ACK;
        (a.ack, a.window) = (ack, window);
        a
    }

    fn offsets(segments: &[Segment]) -> Vec<(u32, u32)> {
        segments.iter().map(|s| (s.seq, s.len())).collect()
    }

    #[test]
    fn initial_window_and_threshold_follow_the_config() {
        let c = TcpConfig { initial_cwnd: 4, ..TcpConfig::default() };
        let s = TcpSender::new(&c, conn());
        assert_eq!((s.cwnd(), s.ssthresh()), (4 * MSS, u64::MAX));
        let s = TcpSender::new(&TcpConfig { initial_ssthresh: 8, ..c.clone() }, conn());
        assert_eq!(s.ssthresh(), 8 * MSS);
        let s = TcpSender::new(&TcpConfig { slow_start: false, ..c }, conn());
        assert_eq!(s.ssthresh(), 4 * MSS);
    }

    #[test]
    fn segments_are_full_except_the_last_and_fill_the_window() {
        let c = TcpConfig { initial_cwnd: 4, ..TcpConfig::default() };
        let mut s = TcpSender::new(&c, conn());
        s.push(2500);
        let out = drain(&mut s, Instant::ZERO);
        assert_eq!(offsets(&out), vec![(0, 1000), (1000, 1000), (2000, 500)]);
        assert_eq!(out[2].data, Data::Virtual { len: 500, offset: 2000 });
        s.push(u64::MAX);
        let out = drain(&mut s, Instant(1));
        // 2500 in flight: one more full segment fits in 4000, not two.
        assert_eq!(offsets(&out), vec![(2500, 1000)]);
        assert_eq!(s.bytes_in_flight(), 3500);
        assert!(!s.is_finished());
    }

    #[test]
    fn sequence_numbers_wrap_from_the_initial_one() {
        let c = TcpConfig { initial_cwnd: 4, ..TcpConfig::default() };
        let mut s = TcpSender::new(&c, Connection { local_isn: u32::MAX - 1499, ..conn() });
        s.push(u64::MAX);
        let out = drain(&mut s, Instant::ZERO);
        assert_eq!(offsets(&out), vec![(u32::MAX - 1499, 1000), (u32::MAX - 499, 1000), (500, 1000), (1500, 1000)]);
        s.handle_ack(Instant(1), &ack(1500, 50_000));
        assert_eq!(s.snd_una(), 3000, "an ACK past the wrap is three segments");
        s.handle_ack(Instant(2), &ack(u32::MAX - 499, 50_000));
        assert_eq!(s.snd_una(), 3000, "an ACK from before is stale");
    }

    #[test]
    fn the_advertised_window_limits_new_data() {
        let c = TcpConfig { initial_cwnd: 10, rcv_window: 3, ..TcpConfig::default() };
        let mut s = TcpSender::new(&c, conn());
        s.push(u64::MAX);
        assert_eq!(drain(&mut s, Instant::ZERO).len(), 3);
        s.handle_ack(Instant(5), &ack(1000, 5000));
        // snd_una 1000 + window 5000: up to byte 6000.
        assert_eq!(drain(&mut s, Instant(5)).len(), 3);
    }

    #[test]
    fn windows_are_scaled_as_the_receiver_announces() {
        // 100 segments of 1000 bytes need a shift of one.
        let c = TcpConfig { initial_cwnd: 100, rcv_window: 100, ..TcpConfig::default() };
        let mut s = TcpSender::new(&c, conn());
        s.push(u64::MAX);
        drain(&mut s, Instant::ZERO);
        s.handle_ack(Instant(5), &ack(0, 2500));
        s.handle_ack(Instant(6), &ack(1000, 2500));
        assert_eq!(drain(&mut s, Instant(6)).len(), 0, "1000 + 5000 is below the 100 segments sent");
        s.handle_ack(Instant(7), &ack(100_000, 2500));
        assert_eq!(drain(&mut s, Instant(7)).len(), 5);
    }

    #[test]
    fn close_stops_new_data_and_finishes_when_acknowledged() {
        let mut s = TcpSender::new(&TcpConfig { initial_cwnd: 2, ..TcpConfig::default() }, conn());
        s.push(u64::MAX);
        assert_eq!(drain(&mut s, Instant::ZERO).len(), 2);
        s.close();
        s.handle_ack(Instant(10), &ack(1000, 50_000));
        assert!(drain(&mut s, Instant(10)).is_empty());
        assert!(!s.is_finished());
        s.handle_ack(Instant(11), &ack(2000, 50_000));
        assert!(s.is_finished());
        assert_eq!(s.poll_timeout(), None);
    }

    #[test]
    fn three_dupacks_enter_recovery_once() {
        let c = TcpConfig { variant: Variant::NewReno, initial_cwnd: 10, ..TcpConfig::default() };
        let mut s = TcpSender::new(&c, conn());
        s.push(u64::MAX);
        drain(&mut s, Instant::ZERO);
        let dup = ack(0, 50_000);
        s.handle_ack(Instant(1), &dup);
        s.handle_ack(Instant(1), &dup);
        assert!(drain(&mut s, Instant(1)).is_empty());
        s.handle_ack(Instant(1), &dup);
        let out = drain(&mut s, Instant(1));
        assert_eq!(out.iter().map(|s| s.seq).collect::<Vec<_>>(), vec![0]);
        assert_eq!((s.ssthresh(), s.cwnd()), (5000, 8000));
        // Each further dupack inflates by one MSS; the 3rd extra one lets new data out.
        for _ in 0..3 {
            s.handle_ack(Instant(2), &dup);
        }
        assert_eq!(s.cwnd(), 11_000);
        assert_eq!(drain(&mut s, Instant(2)).iter().map(|s| s.seq).collect::<Vec<_>>(), vec![10_000]);
        assert_eq!(s.stats().fast_retransmits, 1);
    }
}
