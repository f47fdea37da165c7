//! Giving up on a connection after consecutive retransmission timeouts,
//! as ns-3's `TcpSocketBase::ReTxTimeout` does after `DataRetries` (and
//! Linux after `tcp_retries2`, there counted in time rather than expiries).

use super::sender::TcpSender;

impl TcpSender {
    /// Counts a timeout; true when it is one more than `max_timeouts`
    /// allows in a row: ns-3 retransmits `DataRetries` times after timeouts
    /// and closes the connection at the next one. Any ACK of new data
    /// starts the count again.
    pub(crate) fn gives_up_after_timeout(&mut self) -> bool {
        self.timeouts_in_a_row += 1;
        let limit = self.config().max_timeouts;
        limit > 0 && self.timeouts_in_a_row > limit
    }
}
