//! Proportional Rate Reduction (RFC 6937, as RFC 9937 revises it): during
//! recovery, cwnd is set on every ACK so that the data sent tracks the data
//! delivered, and the window reaches ssthresh at the end of recovery rather
//! than at its start.

/// One recovery episode's PRR state, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Prr {
    /// RecoverFS: the bytes in flight (`pipe`) when recovery began, as
    /// RFC 9937 and ns-3 take it (RFC 6937 took snd.nxt - snd.una).
    recover_fs: u64,
    /// Bytes the receiver reported delivered since then.
    delivered: u64,
    /// Bytes sent since then.
    out: u64,
}

impl Prr {
    /// Recovery begins with `pipe` bytes in flight.
    pub fn start(pipe: u64) -> Prr {
        Prr { recover_fs: pipe.max(1), delivered: 0, out: 0 }
    }

    /// An ACK reported `delivered` bytes (change in snd.una plus change in
    /// SACKed bytes); returns the new cwnd. Above ssthresh, sending is
    /// proportional to delivery. At or below it, the window grows back
    /// towards ssthresh by what was delivered and not yet sent, or this
    /// ACK's delivery if more (the conservative bound), plus one MSS on a
    /// `safe_ack`, one that advanced snd.una without showing a further
    /// loss (RFC 9937's slow-start reduction bound; Linux's
    /// `tcp_cwnd_reduction`, ns-3's `TcpPrrRecovery`).
    pub fn on_ack(&mut self, delivered: u64, pipe: u64, ssthresh: u64, mss: u64, safe_ack: bool) -> u64 {
        self.delivered += delivered;
        let sndcnt = if pipe > ssthresh {
            (self.delivered * ssthresh).div_ceil(self.recover_fs).saturating_sub(self.out)
        } else {
            let limit = self.delivered.saturating_sub(self.out).max(delivered) + if safe_ack { mss } else { 0 };
            (ssthresh - pipe).min(limit)
        };
        pipe + sndcnt
    }

    /// What ns-3's `TcpPrrRecovery::DoRecovery` adds to a duplicate ACK's
    /// delivery: one segment, while less than RecoverFS has been counted
    /// delivered (`prr_dupack_credit`).
    pub fn dupack_credit(&self, mss: u64) -> u64 {
        if self.delivered < self.recover_fs {
            mss
        } else {
            0
        }
    }

    /// `bytes` were sent, new data or retransmitted.
    pub fn on_send(&mut self, bytes: u64) {
        self.out += bytes;
    }
}
