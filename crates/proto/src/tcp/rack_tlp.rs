//! RACK-TLP (RFC 8985) as the sender runs it: loss detection by time
//! rather than by counting duplicate ACKs, and a tail loss probe that turns
//! a lost tail into a fast recovery instead of a timeout. RACK needs SACK;
//! with it, duplicate-ACK counting and RFC 6675's `IsLost` are off, as in
//! Linux (`tcp_recovery = 1`, `tcp_early_retrans = 3`). The state is `rack.rs`.

use super::sender::{State, TcpSender};
use super::wire::Segment;
use crate::time::{Duration, Instant};

/// RFC 8985 7.2's WCDelAckT, the longest a receiver may delay an ACK: what
/// a probe waits beyond 2 SRTT when one segment is in flight (Linux adds
/// `TCP_RTO_MIN`, the same 200 ms).
const WORST_CASE_DELAYED_ACK: Duration = Duration::from_millis(200);

impl TcpSender {
    pub(crate) fn rack_enabled(&self) -> bool {
        self.config().rack && self.uses_sack()
    }

    /// RFC 8985 6.2 step 5 after an ACK, or when the reordering timer fires
    /// (`by_timer`): marks what time says is lost, starts recovery while
    /// anything marked lost is outstanding (Linux's `tcp_time_to_recover`:
    /// also right after a recovery ends with losses above its point, so
    /// that the state goes from recovery to recovery on one ACK), and arms
    /// the reordering timer for what it cannot decide yet.
    ///
    /// After a timeout (`TCP_CA_Loss`) Linux starts a fast recovery only
    /// when a resend is found lost on an ACK (`tcp_fastretrans_alert`'s
    /// `FLAG_LOST_RETRANS`), or when its reordering timer marks anything
    /// (`tcp_rack_reo_timeout`); the timeout's recovery then ends, and the
    /// new one runs to what has been sent by now.
    pub(crate) fn rack_detect_loss(&mut self, now: Instant, outstanding: u64, by_timer: bool) {
        let Some(latest) = self.rack.latest else { return };
        let sacked_enough = self.board.sacked_bytes() >= self.dupthresh as u64 * self.mss;
        let reo_wnd = self.rack.reordering_window(self.in_recovery(), sacked_enough, self.rtt.srtt());
        let lost_before = self.board.lost_total();
        let marks = self.board.mark_lost_sent_before(latest.sent, latest.end, now, self.rack.rtt + reo_wnd);
        self.rack.reordering_deadline = marks.wait.map(|left| now + left);
        if self.board.lost_bytes() == 0 || self.state != State::Open {
            return;
        }
        if self.in_timeout_recovery() {
            let marked = self.board.lost_total() > lost_before;
            if !(marks.lost_resend || by_timer && marked) {
                return;
            }
            self.leave_timeout_recovery();
        }
        self.enter_recovery(now, outstanding);
    }

    /// RFC 8985 7.2: arms the probe timeout while data is outstanding, no
    /// recovery is under way and no probe is in flight: 2 SRTT, plus the
    /// worst delayed ACK when one segment is out, never after the RTO.
    /// Not with data SACKed (7.2), nor, as Linux, with data marked lost or
    /// resent or after a timeout: RACK or the RTO deals with those.
    pub(crate) fn arm_probe(&mut self, now: Instant) {
        self.rack.probe_deadline = None;
        if !self.rack_enabled()
            || self.state != State::Open
            || self.in_timeout_recovery()
            || !self.board.is_undisturbed()
            || self.rack.probe.is_some()
            || self.snd_max == self.snd_una
        {
            return;
        }
        let Some(srtt) = self.rtt.srtt() else { return };
        let mut pto = srtt.saturating_mul(2);
        if self.snd_max - self.snd_una <= self.mss {
            pto = pto + WORST_CASE_DELAYED_ACK;
        }
        let at = self.timer_from(now, pto);
        self.rack.probe_deadline = Some(self.rto_deadline.map_or(at, |rto| at.min(rto)));
    }

    /// RFC 8985 7.3: the probe timer fired. Sends a new segment if one may
    /// go (whatever cwnd says), else the last segment again, then leaves
    /// the RTO to guard the probe.
    pub(crate) fn send_probe(&mut self, now: Instant) -> Option<Segment> {
        self.rack.probe_deadline = None;
        let new = self.mss.min(self.stream_end() - self.snd_max);
        let segment = if new > 0 && self.snd_max + new <= self.snd_una + self.rwnd() {
            self.send_new(new as u32, now)
        } else {
            let last = self.board.last_index()?;
            let seg = self.retransmit(last, now);
            self.rack.probe = Some((self.snd_max, true));
            self.rto_deadline = Some(self.timer_from(now, self.rtt.rto()));
            return Some(seg);
        };
        self.rack.probe = Some((self.snd_max, false));
        self.rto_deadline = Some(self.timer_from(now, self.rtt.rto()));
        Some(segment)
    }

    /// RFC 8985 7.4: an ACK at or past the probe ends its episode. A
    /// retransmitted probe that is acknowledged repaired a loss (this TCP
    /// has no D-SACK to say the original arrived), so the window is reduced
    /// as a fast recovery would have.
    pub(crate) fn rack_on_ack(&mut self, now: Instant, ack: u64) {
        if let Some((end, retransmitted)) = self.rack.probe {
            if ack >= end {
                self.rack.probe = None;
                if retransmitted && self.state == State::Open {
                    let basis = self.loss_basis(self.snd_max - self.snd_una);
                    self.w.ssthresh = self.cc.ssthresh_after_loss(&self.w, basis, now);
                    if self.rate.is_none() {
                        self.w.cwnd = self.w.ssthresh;
                        self.cc.on_recovery_exit(&mut self.w, now);
                    }
                }
            }
        }
    }

    /// A timeout ends any probe episode (RFC 8985 7.4).
    pub(crate) fn rack_on_timeout(&mut self) {
        self.rack.probe = None;
        self.rack.probe_deadline = None;
        self.rack.reordering_deadline = None;
    }
}

#[cfg(test)]
mod tests {
    use crate::tcp::{Phase, Profile, Recovery, TcpConfig, TcpSender, Variant};
    use crate::testing::{ack, drain, Link, Pair, CONN};
    use crate::time::{Duration, Instant};

    const WINDOW: u16 = 60_000;

    fn sender() -> TcpSender {
        let config = TcpConfig {
            variant: Variant::Sack,
            recovery: Some(Recovery::Prr),
            rack: true,
            mss: 1000,
            initial_cwnd: 10,
            rcv_window: 60,
            ..TcpConfig::default()
        };
        let mut s = TcpSender::new(&config, CONN);
        s.push(40_000);
        assert_eq!(drain(&mut s, Instant::ZERO).len(), 10);
        s
    }

    #[test]
    fn no_probe_while_data_is_sacked() {
        let mut s = sender();
        let t = Instant::ZERO + Duration::from_millis(100);
        s.handle_ack(t, &ack(1000, WINDOW, &[]));
        assert!(s.rack.probe_deadline.is_some(), "nothing disturbed: a probe is armed");
        s.handle_ack(t + Duration::from_millis(1), &ack(1000, WINDOW, &[(2000, 3000)]));
        assert!(s.rack.probe_deadline.is_none(), "data SACKed: RACK watches the hole (RFC 8985 7.2)");
        // The hole is filled and everything below the SACK acknowledged: armed again.
        s.handle_ack(t + Duration::from_millis(2), &ack(3000, WINDOW, &[]));
        assert!(s.rack.probe_deadline.is_some());
    }

    #[test]
    fn a_handshake_timed_by_its_echo_is_the_first_least_rtt() {
        // A 1.04 s round trip: the SYN goes again after 1 s and the echo
        // says the first was answered. Linux takes that sample into its
        // least RTT, below which RACK doubts a resend's delivery; a least
        // RTT from the data alone would reject the sample of a resend that
        // met no queue where every original met one.
        let config = TcpConfig { mss: 1000, ..TcpConfig::profile(Profile::Linux) };
        let half = Duration::from_millis(520);
        let mut p = Pair::with_isns(&config, 0x5EED_0001, 0x5EED_0002, Link::new(half), Link::new(half));
        p.sender.open();
        p.flush();
        let connected = Instant::ZERO + Duration::from_secs(2);
        assert!(p.run_until(connected, |p| p.sender.phase() == Phase::Established));
        assert_eq!(p.sender.stats().syn_retransmits, 1);
        // With no reordering seen, outside recovery: a quarter of the least RTT.
        let quarter = p.sender.rack.reordering_window(false, false, None);
        assert_eq!(quarter, Duration::from_millis(260));
    }

    #[test]
    fn no_probe_in_timeout_recovery() {
        let mut s = sender();
        s.handle_ack(Instant::ZERO + Duration::from_millis(100), &ack(1000, WINDOW, &[]));
        // The probe and then the RTO fire, nothing arriving.
        let rto = loop {
            let t = s.poll_timeout().unwrap();
            s.handle_timeout(t);
            drain(&mut s, t);
            if s.stats().timeouts > 0 {
                break t;
            }
        };
        // The resent head arrives; what was sent before the timeout is still outstanding.
        s.handle_ack(rto + Duration::from_millis(100), &ack(2000, WINDOW, &[]));
        assert!(s.in_timeout_recovery());
        assert!(s.rack.probe_deadline.is_none(), "Linux probes only in the open state");
    }
}
