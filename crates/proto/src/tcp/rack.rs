//! RACK-TLP's state (RFC 8985 6.1, 7.1): the most recently sent segment
//! delivered, the reordering window, and the tail loss probe's episode.
//! The sender runs it in `rack_tlp.rs`.

use super::sack::Delivered;
use crate::time::{Duration, Instant};

/// RACK's record of the most recently sent segment delivered, and TLP's
/// episode (RFC 8985 6.1, 7.1).
#[derive(Clone, Debug, Default)]
pub struct Rack {
    /// RACK.xmit_ts, RACK.end_seq, RACK.rtt.
    pub(crate) latest: Option<Delivered>,
    pub(crate) rtt: Duration,
    min_rtt: Option<Duration>,
    /// RACK.fack: the highest end delivered.
    fack: u64,
    /// RACK.reordering_seen.
    reordering_seen: bool,
    /// The reordering timer: losses RACK will decide once time has passed.
    pub(crate) reordering_deadline: Option<Instant>,
    /// The probe timeout, and the probe in flight (TLP.end_seq, and whether it was a retransmission).
    pub(crate) probe_deadline: Option<Instant>,
    pub(crate) probe: Option<(u64, bool)>,
}

impl Rack {
    /// RFC 8985 6.2 steps 1-3: a segment newly delivered at `now`.
    pub fn on_delivered(&mut self, d: Delivered, now: Instant) {
        let rtt = now - d.sent;
        // Step 1: a retransmitted segment delivered sooner than any path
        // could carry it was delivered by its original: the sample is not
        // this transmission's. With no RTT known yet it may be either's
        // (Linux's `tcp_min_rtt` is then `~0U`).
        if d.retransmitted && self.min_rtt.is_none_or(|m| rtt < m) {
            return;
        }
        self.note_rtt(rtt);
        // Step 2: only an original transmission below the forward-most
        // delivery shows reordering; a retransmission filling a hole always
        // lies below it (Linux: `tcp_check_sack_reordering` on segments
        // never retransmitted).
        if d.end < self.fack && !d.retransmitted {
            self.reordering_seen = true;
        }
        self.fack = self.fack.max(d.end);
        if self.latest.is_none_or(|l| (d.sent, d.end) > (l.sent, l.end)) {
            self.latest = Some(d);
            self.rtt = rtt;
        }
    }

    /// An RTT measured from an original transmission's send time.
    pub fn note_rtt(&mut self, rtt: Duration) {
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
    }

    /// RFC 8985 6.2 step 4: zero until reordering has been seen (during
    /// recovery, or once `dupthresh` segments are SACKed), else a quarter of
    /// the least RTT, at most SRTT.
    pub fn reordering_window(&self, in_recovery: bool, sacked_enough: bool, srtt: Option<Duration>) -> Duration {
        if !self.reordering_seen && (in_recovery || sacked_enough) {
            return Duration::ZERO;
        }
        let quarter = Duration(self.min_rtt.unwrap_or(Duration::ZERO).0 / 4);
        srtt.map_or(quarter, |s| quarter.min(s))
    }
}
