//! NewReno partial acknowledgements (RFC 6582 section 3.2 step 4).

use super::sender::{State, TcpSender};

impl TcpSender {
    /// A partial ACK shows the next hole: resend it at once, deflate cwnd by
    /// the newly acknowledged bytes and add back one MSS when at least one
    /// MSS was acknowledged, so that about ssthresh stays in flight. The
    /// caller restarts the timer on the first partial ACK only (the
    /// "Impatient" variant), so that many holes end in an RTO rather than
    /// one RTT each.
    pub(crate) fn on_partial_ack(&mut self, acked: u64) {
        self.stats.partial_acks += 1;
        if let State::Recovery { partial_seen, .. } = &mut self.state {
            *partial_seen = true;
        }
        self.board.mark_front_lost();
        self.force_retransmit = true;
        if self.rate.is_some() {
            return; // a window-setting control (BBR) sets cwnd on this ACK
        }
        let add_back = if acked >= self.mss { self.mss } else { 0 };
        self.w.cwnd = (self.w.cwnd.saturating_sub(acked) + add_back).max(self.mss);
    }
}
