//! The retransmission timer's estimator (RFC 6298).

use super::rtt_linux::LinuxRtt;
use crate::time::Duration;

/// SRTT and RTTVAR with the RFC 6298 gains (1/8, 1/4) and K = 4, in integer
/// nanoseconds. The clock granularity G is ignored because virtual time has
/// none worth adding; `min_rto` plays its part.
#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt: Option<Duration>,
    rttvar: Duration,
    latest: Option<Duration>,
    min: Option<Duration>,
    initial_rto: Duration,
    min_rto: Duration,
    max_rto: Duration,
    /// Consecutive timeouts since the last valid sample: the RTO is doubled
    /// this many times (section 5.5) and stays so until a sample (5.7 note).
    backoff: u32,
    /// Linux's variance term instead of RFC 6298's, once sampled (`rtt_linux.rs`).
    linux: Option<Option<LinuxRtt>>,
}

impl RttEstimator {
    pub fn new(initial_rto: Duration, min_rto: Duration, max_rto: Duration) -> RttEstimator {
        RttEstimator {
            srtt: None,
            rttvar: Duration::ZERO,
            latest: None,
            min: None,
            initial_rto,
            min_rto,
            max_rto: max_rto.max(min_rto),
            backoff: 0,
            linux: None,
        }
    }

    /// Estimates the RTO as Linux does (`rtt_linux.rs`) rather than as RFC 6298 says.
    pub fn linux(mut self) -> RttEstimator {
        self.linux = Some(None);
        self
    }

    /// Section 2.2 and 2.3 (or Linux's estimator); `snd_una` and `snd_max`
    /// mark Linux's round trips. A sample also ends any backoff.
    pub fn on_sample(&mut self, r: Duration, snd_una: u64, snd_max: u64) {
        self.latest = Some(r);
        self.min = Some(self.min.map_or(r, |m| m.min(r)));
        if let Some(state) = &mut self.linux {
            match (state.as_mut(), self.srtt) {
                (Some(linux), Some(srtt)) => linux.update(r, srtt, snd_una, snd_max),
                _ => *state = Some(LinuxRtt::first(r, self.min_rto, snd_max)),
            }
        }
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = Duration(r.0 / 2);
            }
            Some(s) => {
                let dev = s.0.abs_diff(r.0);
                self.rttvar = Duration((3 * self.rttvar.0 + dev) / 4);
                self.srtt = Some(Duration((7 * s.0 + r.0) / 8));
            }
        }
        self.backoff = 0;
    }

    /// RFC 6298 5.7: with no sample yet, at least `rto` before the first one.
    pub fn fall_back(&mut self, rto: Duration) {
        if self.srtt.is_none() {
            self.initial_rto = self.initial_rto.max(rto);
        }
    }

    /// Forgets the backoff without a sample (see `TcpConfig::reset_backoff_on_new_ack`).
    pub fn clear_backoff(&mut self) {
        self.backoff = 0;
    }

    pub fn on_timeout(&mut self) {
        self.backoff = self.backoff.saturating_add(1);
    }

    pub fn backoff(&self) -> u32 {
        self.backoff
    }

    /// The RTO before backoff, clamped to `[min_rto, max_rto]`.
    pub fn base_rto(&self) -> Duration {
        let rto = match (self.srtt, &self.linux) {
            (None, _) => self.initial_rto,
            (Some(s), Some(Some(linux))) => linux.rto(s),
            (Some(s), _) => s + self.rttvar.saturating_mul(4),
        };
        rto.max(self.min_rto).min(self.max_rto)
    }

    /// The RTO in force: doubled per consecutive timeout, at most `max_rto`.
    pub fn rto(&self) -> Duration {
        let base = self.base_rto();
        let factor = 1u64.checked_shl(self.backoff.min(63)).unwrap_or(u64::MAX);
        base.saturating_mul(factor).min(self.max_rto)
    }

    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    pub fn rttvar(&self) -> Duration {
        self.rttvar
    }

    pub fn latest(&self) -> Option<Duration> {
        self.latest
    }

    pub fn min_rtt(&self) -> Option<Duration> {
        self.min
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_and_second_samples_follow_rfc6298() {
        let ms = Duration::from_millis;
        let mut e = RttEstimator::new(ms(1000), ms(200), ms(60_000));
        assert_eq!(e.rto(), ms(1000));
        e.on_sample(ms(100), 0, 0);
        // SRTT = 100, RTTVAR = 50, RTO = 100 + 200 = 300.
        assert_eq!(e.rto(), ms(300));
        e.on_sample(ms(200), 0, 0);
        // RTTVAR = 3/4 50 + 1/4 100 = 62.5; SRTT = 112.5; RTO = 362.5.
        assert_eq!(e.srtt(), Some(Duration(112_500_000)));
        assert_eq!(e.rto(), Duration(362_500_000));
    }

    #[test]
    fn backoff_doubles_to_the_cap_and_a_sample_resets_it() {
        let ms = Duration::from_millis;
        let mut e = RttEstimator::new(ms(1000), ms(200), ms(5000));
        let mut seen = vec![];
        for _ in 0..5 {
            e.on_timeout();
            seen.push(e.rto());
        }
        assert_eq!(seen, vec![ms(2000), ms(4000), ms(5000), ms(5000), ms(5000)]);
        e.on_sample(ms(10), 0, 0);
        assert_eq!(e.rto(), ms(200));
    }
}
