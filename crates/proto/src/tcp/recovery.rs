//! Fast retransmit and fast recovery: entry on duplicate ACKs, Reno's
//! window inflation (RFC 5681 section 3.2), and exit for all recoveries.
//! NewReno's partial ACKs are in `newreno.rs`, the SACK scoreboard in `sack.rs`.

use super::config::{LossBasis, Recovery};
use super::sender::{State, TcpSender};
use crate::time::Instant;

impl TcpSender {
    /// RFC 6582 section 3.2 step 2: after a recovery (NewReno) or a timeout
    /// (every variant), duplicate ACKs below `recover` are echoes of the
    /// retransmissions, not a new loss.
    pub(crate) fn may_fast_retransmit(&self, ack: u64) -> bool {
        self.recover.is_none_or(|r| ack > r)
    }

    pub(crate) fn on_dupack(&mut self, now: Instant, outstanding: u64) {
        match self.state {
            State::Recovery { .. } => {
                // Reno and NewReno inflate the window by the segment that
                // left the network (RFC 5681 step 4, RFC 6582 step 3); SACK
                // recovery counts it in pipe instead.
                if !self.uses_sack() && self.rate.is_none() {
                    self.w.cwnd += self.mss;
                }
            }
            State::Open => {
                let una = self.snd_una;
                if !self.rack_enabled() && self.dupacks >= self.dupthresh && self.may_fast_retransmit(una) {
                    self.enter_recovery(now, outstanding);
                }
            }
        }
    }

    pub(crate) fn enter_recovery(&mut self, now: Instant, outstanding: u64) {
        self.stats.fast_retransmits += 1;
        self.board.new_episode(self.snd_una);
        // RFC 6675 resends the head at once; with RACK only what time
        // marked lost is resent (Linux's `tcp_enter_recovery` marks nothing,
        // `tcp_update_scoreboard` runs without RACK only), and a head
        // already resent is not resent again when a recovery follows one.
        if !self.rack_enabled() {
            self.board.mark_front_lost();
        }
        let basis = self.loss_basis(outstanding);
        self.w.ssthresh = self.cc.ssthresh_after_loss(&self.w, basis, now);
        // A window-setting control (BBR) sets cwnd itself on this ACK.
        if self.rate.is_none() {
            self.w.cwnd = match self.recovery {
                Recovery::Reno | Recovery::NewReno => self.w.ssthresh + self.dupthresh as u64 * self.mss,
                // RFC 6675 section 5 step (4.2); PRR sets it again on this ACK.
                Recovery::Sack | Recovery::Prr => self.w.ssthresh,
            };
        }
        self.prr = super::prr::Prr::start(self.bytes_in_flight());
        if let Some(watch) = self.slow_start_watch.as_mut() {
            watch.on_congestion(false);
        }
        if self.recovery == Recovery::NewReno {
            self.recover = Some(self.snd_max);
        }
        self.state = State::Recovery { point: self.snd_max, partial_seen: false };
        self.force_retransmit = true;
    }

    /// The amount a loss reaction halves: RFC 5681's FlightSize (the
    /// outstanding data), ns-3's `pipe` with the loss marked, or cwnd.
    pub(crate) fn loss_basis(&self, outstanding: u64) -> u64 {
        match self.config().loss_basis {
            LossBasis::Flight => outstanding,
            LossBasis::Pipe => self.bytes_in_flight(),
            LossBasis::Cwnd => self.w.cwnd,
        }
    }

    pub(crate) fn exit_recovery(&mut self, now: Instant) {
        self.state = State::Open;
        if self.rate.is_some() {
            // Linux's `tcp_end_cwnd_reduction` leaves a `cong_control` window as it is.
            return;
        }
        self.w.cwnd = match self.recovery {
            // RFC 6582 section 3.2 step 3, full ACK, option (1) with the
            // safeguard against a burst when little is outstanding.
            Recovery::NewReno => self.w.ssthresh.min(self.bytes_in_flight() + self.mss),
            // RFC 5681: deflate to ssthresh on the first new ACK.
            // RFC 6937 section 3.1: PRR too ends at ssthresh.
            Recovery::Reno | Recovery::Sack | Recovery::Prr => self.w.ssthresh,
        };
        self.w.cwnd = self.w.cwnd.max(self.mss);
        self.cc.on_recovery_exit(&mut self.w, now);
    }
}
