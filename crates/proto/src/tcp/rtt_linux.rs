//! Linux's RTO estimator (`tcp_rtt_estimator`, `__tcp_set_rto` in
//! `net/ipv4/tcp_input.c`, 6.x), which the `linux` profile runs instead of
//! RFC 6298's: the variance term is the largest mean deviation seen over
//! the last round trip, never below `TCP_RTO_MIN`, and it falls towards
//! that only a quarter of the way per round trip. A falling RTT moves the
//! deviation eight times more slowly than a rising one.

use crate::time::Duration;

/// Linux's `mdev_us`, `mdev_max_us`, `rttvar_us` and `rtt_seq`, in nanoseconds.
#[derive(Clone, Debug)]
pub(crate) struct LinuxRtt {
    /// Four times the mean deviation.
    mdev: i64,
    /// The largest `mdev` in this round trip.
    mdev_max: i64,
    /// The variance term of the RTO.
    rttvar: i64,
    /// The round trip ends when the cumulative ACK passes this.
    round_end: u64,
    min_rto: i64,
}

impl LinuxRtt {
    /// The first sample: `mdev = 2 r`, so the RTO starts at three RTTs.
    pub fn first(r: Duration, min_rto: Duration, snd_max: u64) -> LinuxRtt {
        let min_rto = min_rto.0 as i64;
        let mdev = 2 * r.0 as i64;
        let rttvar = mdev.max(min_rto);
        LinuxRtt { mdev, mdev_max: rttvar, rttvar, round_end: snd_max, min_rto }
    }

    /// A later sample `r`, with SRTT `srtt` before it.
    pub fn update(&mut self, r: Duration, srtt: Duration, snd_una: u64, snd_max: u64) {
        let err = r.0 as i64 - srtt.0 as i64;
        let mut m = err.abs() - (self.mdev >> 2);
        if err < 0 && m > 0 {
            m >>= 3;
        }
        self.mdev += m;
        if self.mdev > self.mdev_max {
            self.mdev_max = self.mdev;
            self.rttvar = self.rttvar.max(self.mdev_max);
        }
        if snd_una > self.round_end {
            if self.mdev_max < self.rttvar {
                self.rttvar -= (self.rttvar - self.mdev_max) >> 2;
            }
            self.round_end = snd_max;
            self.mdev_max = self.min_rto;
        }
    }

    /// `__tcp_set_rto`: SRTT plus the variance term.
    pub fn rto(&self, srtt: Duration) -> Duration {
        srtt + Duration(self.rttvar.max(0) as u64)
    }
}
