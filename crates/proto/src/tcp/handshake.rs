//! Connection setup as both ends see it (RFC 9293 3.5): the options a SYN
//! offers, what the two SYNs settle between them, and the timer that
//! retransmits an unanswered SYN or SYN-ACK with backoff.

use super::config::TcpConfig;
use super::wire::{Segment, SynOptions};
use super::TsClock;
use crate::time::{Duration, Instant};

/// RFC 9293 3.7.1: the MSS a peer that sent no MSS option takes.
const DEFAULT_MSS: u64 = 536;

/// What a SYN from an end with `config` offers. The window scale is always
/// offered, as Linux does, so that either end may use a large window.
pub(crate) fn offer(config: &TcpConfig) -> SynOptions {
    SynOptions {
        mss: Some(config.mss.min(u16::MAX as u32) as u16),
        window_scale: Some(config.window_scale()),
        sack_permitted: config.sack,
    }
}

/// What the handshake settled, from one end's side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Settled {
    /// The largest segment this end sends: its own MSS, at most the peer's.
    pub mss: u64,
    /// Both ends offered SACK (RFC 2018 section 2).
    pub sack: bool,
    /// Both ends sent timestamps in their SYNs (RFC 7323 section 3.2).
    pub timestamps: bool,
    /// The shift the peer applies to the windows it advertises, and ours;
    /// both zero unless both SYNs carried the option (RFC 7323 section 2.2).
    pub peer_window_scale: u8,
    pub window_scale: u8,
}

/// Settles the options between our `config` (which our SYN offered) and
/// the peer's SYN or SYN-ACK.
pub(crate) fn settle(config: &TcpConfig, peer: &Segment) -> Settled {
    let o = peer.syn_options;
    let scaled = o.window_scale.is_some();
    Settled {
        mss: (config.mss as u64).min(o.mss.map_or(DEFAULT_MSS, u64::from)).max(1),
        sack: config.sack && o.sack_permitted,
        timestamps: config.timestamps && peer.timestamp.is_some(),
        peer_window_scale: if scaled { o.window_scale.unwrap_or(0).min(14) } else { 0 },
        window_scale: if scaled { config.window_scale() } else { 0 },
    }
}

/// The retransmission timer of a SYN or SYN-ACK: it doubles at every
/// expiry (RFC 6298 5.5) and gives up after `retries` retransmissions.
#[derive(Clone, Debug)]
pub(crate) struct SynTimer {
    timeout: Duration,
    retries: u32,
    /// Retransmissions so far.
    pub sent_again: u32,
    pub deadline: Option<Instant>,
    /// When the first copy left: the handshake's RTT sample runs from it.
    pub first_sent: Option<Instant>,
}

impl SynTimer {
    pub fn new(config: &TcpConfig) -> SynTimer {
        SynTimer {
            timeout: config.syn_timeout,
            retries: config.syn_retries,
            sent_again: 0,
            deadline: None,
            first_sent: None,
        }
    }

    /// A copy leaves now.
    pub fn sent(&mut self, now: Instant) {
        self.first_sent.get_or_insert(now);
        self.deadline = Some(now + self.timeout.saturating_mul(1 << self.sent_again.min(20)));
    }

    /// The timer fired: true if another copy is due, false if the end gives up.
    pub fn expire(&mut self) -> bool {
        self.deadline = None;
        self.sent_again += 1;
        self.sent_again <= self.retries
    }

    pub fn is_due(&self, now: Instant) -> bool {
        self.deadline.is_some_and(|d| now >= d)
    }

    /// The RTT sample the answer gives at `now`: none if the SYN was sent
    /// again, since the answer could be to either copy (Karn).
    pub fn sample(&self, now: Instant) -> Option<Duration> {
        (self.sent_again == 0).then(|| self.first_sent.map(|t| now - t)).flatten()
    }

    /// The handshake's round trip when the answer echoes `echo` of `clock`
    /// (a nonzero echo, with timestamps agreed): the echo says which copy
    /// was answered, resent or not, as Linux times it; else [`Self::sample`].
    pub fn sample_echoed(&self, now: Instant, echo: Option<u32>, clock: TsClock) -> Option<Duration> {
        match echo.filter(|&e| e != 0) {
            Some(e) => clock.since(now, e),
            None => self.sample(now),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::{Flags, Timestamps};

    #[test]
    fn options_are_settled_as_both_offer() {
        let ours = TcpConfig { mss: 1460, rcv_window: 100, sack: true, timestamps: true, ..TcpConfig::default() };
        let mut peer = Segment::new(2, 1);
        peer.flags = Flags::SYN | Flags::ACK;
        peer.syn_options = SynOptions { mss: Some(1000), window_scale: Some(7), sack_permitted: true };
        peer.timestamp = Some(Timestamps { value: 1, echo: 2 });
        let s = settle(&ours, &peer);
        assert_eq!(s, Settled { mss: 1000, sack: true, timestamps: true, peer_window_scale: 7, window_scale: 2 });
        // RFC 7323 2.2: scaling needs both; RFC 9293: no MSS option means 536.
        peer.syn_options = SynOptions::default();
        peer.timestamp = None;
        let s = settle(&ours, &peer);
        assert_eq!(s, Settled { mss: 536, sack: false, timestamps: false, peer_window_scale: 0, window_scale: 0 });
    }

    #[test]
    fn the_syn_timer_doubles_and_gives_up() {
        let config = TcpConfig { syn_timeout: Duration::from_secs(1), syn_retries: 2, ..TcpConfig::default() };
        let mut t = SynTimer::new(&config);
        let mut now = Instant::ZERO;
        let mut gaps = vec![];
        t.sent(now);
        while let Some(d) = t.deadline {
            gaps.push(d - now);
            now = d;
            if !t.expire() {
                break;
            }
            t.sent(now);
        }
        let s = Duration::from_secs;
        assert_eq!(gaps, vec![s(1), s(2), s(4)]);
        assert_eq!(t.sent_again, 3);
        assert_eq!(t.sample(now), None, "Karn: no sample once the SYN was sent again");
    }
}
