//! Fast retransmit and fast recovery: entry on duplicate ACKs, Reno's
//! window inflation (RFC 5681 section 3.2), and exit for all recoveries.
//! NewReno's partial ACKs are in `newreno.rs`, the SACK scoreboard in `sack.rs`.

use super::config::Recovery;
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
                if self.recovery != Recovery::Sack {
                    self.w.cwnd += self.mss;
                }
            }
            State::Open => {
                let una = self.snd_una;
                if self.dupacks >= self.dupthresh && self.may_fast_retransmit(una) {
                    self.enter_recovery(now, outstanding);
                }
            }
        }
    }

    pub(crate) fn enter_recovery(&mut self, now: Instant, outstanding: u64) {
        self.stats.fast_retransmits += 1;
        // RFC 5681 equation (4) takes FlightSize, the outstanding data.
        self.w.ssthresh = self.cc.ssthresh_after_loss(&self.w, outstanding, now);
        self.w.cwnd = match self.recovery {
            Recovery::Reno | Recovery::NewReno => self.w.ssthresh + self.dupthresh as u64 * self.mss,
            // RFC 6675 section 5 step (4.2).
            Recovery::Sack => self.w.ssthresh,
        };
        if self.recovery == Recovery::NewReno {
            self.recover = Some(self.snd_max);
        }
        self.state = State::Recovery { point: self.snd_max, partial_seen: false };
        self.board.new_episode(self.snd_una);
        self.board.mark_front_lost();
        self.force_retransmit = true;
    }

    pub(crate) fn exit_recovery(&mut self, now: Instant) {
        self.w.cwnd = match self.recovery {
            // RFC 6582 section 3.2 step 3, full ACK, option (1) with the
            // safeguard against a burst when little is outstanding.
            Recovery::NewReno => self.w.ssthresh.min(self.bytes_in_flight() + self.mss),
            // RFC 5681: deflate to ssthresh on the first new ACK.
            Recovery::Reno | Recovery::Sack => self.w.ssthresh,
        };
        self.w.cwnd = self.w.cwnd.max(self.mss);
        self.state = State::Open;
        self.cc.on_recovery_exit(&mut self.w, now);
    }
}
