//! Proportional Rate Reduction (RFC 6937): during recovery, cwnd is set on
//! every ACK so that the data sent tracks the data delivered, and the
//! window reaches ssthresh at the end of recovery rather than at its start.

/// One recovery episode's PRR state (RFC 6937 section 3.1), in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Prr {
    /// The flight size when recovery began.
    recover_fs: u64,
    /// Bytes the receiver reported delivered since then.
    delivered: u64,
    /// Bytes sent since then.
    out: u64,
}

impl Prr {
    /// Recovery begins with `flight_size` outstanding (snd.nxt - snd.una).
    pub fn start(flight_size: u64) -> Prr {
        Prr { recover_fs: flight_size.max(1), delivered: 0, out: 0 }
    }

    /// An ACK reported `delivered` bytes (change in snd.una plus change in
    /// SACKed bytes); returns the new cwnd. Above ssthresh, sending is
    /// proportional to delivery; at or below it, the slow-start reduction
    /// bound lets the window grow back towards ssthresh by at most one MSS
    /// more than was delivered.
    pub fn on_ack(&mut self, delivered: u64, pipe: u64, ssthresh: u64, mss: u64) -> u64 {
        self.delivered += delivered;
        let sndcnt = if pipe > ssthresh {
            (self.delivered * ssthresh).div_ceil(self.recover_fs).saturating_sub(self.out)
        } else {
            let limit = self.delivered.saturating_sub(self.out).max(delivered) + mss;
            (ssthresh - pipe).min(limit)
        };
        pipe + sndcnt
    }

    /// `bytes` were sent, new data or retransmitted.
    pub fn on_send(&mut self, bytes: u64) {
        self.out += bytes;
    }
}
