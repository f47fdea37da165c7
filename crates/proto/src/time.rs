//! Virtual time: integer nanoseconds, so that a run is exactly repeatable.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in time, in nanoseconds since the start of the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(pub u64);

/// A span of time in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(pub u64);

impl Instant {
    pub const ZERO: Instant = Instant(0);
    pub const MAX: Instant = Instant(u64::MAX);

    pub fn from_secs_f64(s: f64) -> Instant {
        Instant(Duration::from_secs_f64(s).0)
    }

    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }

    /// The time elapsed since `earlier`, or zero if `earlier` is later.
    pub fn saturating_since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
}

impl Duration {
    pub const ZERO: Duration = Duration(0);
    pub const MAX: Duration = Duration(u64::MAX);

    pub const fn from_nanos(ns: u64) -> Duration {
        Duration(ns)
    }
    pub const fn from_micros(us: u64) -> Duration {
        Duration(us * 1_000)
    }
    pub const fn from_millis(ms: u64) -> Duration {
        Duration(ms * 1_000_000)
    }
    pub const fn from_secs(s: u64) -> Duration {
        Duration(s * 1_000_000_000)
    }
    /// Rounds to the nearest nanosecond; negative and NaN inputs give zero.
    pub fn from_secs_f64(s: f64) -> Duration {
        let ns = (s * 1e9).round();
        if ns.is_nan() || ns <= 0.0 {
            Duration(0)
        } else if ns >= u64::MAX as f64 {
            Duration::MAX
        } else {
            Duration(ns as u64)
        }
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    pub fn saturating_mul(self, k: u64) -> Duration {
        Duration(self.0.saturating_mul(k))
    }
    /// The time to serialise `bytes` at `bits_per_s`, rounded up to a nanosecond.
    pub fn transmission(bytes: u64, bits_per_s: u64) -> Duration {
        let rate = bits_per_s.max(1);
        // In 64 bits while bytes * 8e9 fits (any packet), else in 128.
        match bytes.checked_mul(8_000_000_000) {
            Some(bits) => Duration(bits.div_ceil(rate)),
            None => Duration((bytes as u128 * 8_000_000_000).div_ceil(rate as u128).min(u64::MAX as u128) as u64),
        }
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d.0))
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        self.0 = self.0.saturating_add(d.0);
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    /// Saturates at zero rather than panicking: a driver may hand an endpoint
    /// a timestamp echoed by a peer that is later than its own clock only
    /// through a bug, and a zero sample is the safe reading of it.
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_since(earlier)
    }
}

impl Add for Duration {
    type Output = Duration;
    fn add(self, d: Duration) -> Duration {
        Duration(self.0.saturating_add(d.0))
    }
}

impl Sub for Duration {
    type Output = Duration;
    fn sub(self, d: Duration) -> Duration {
        Duration(self.0.saturating_sub(d.0))
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6}s", self.as_secs_f64())
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6}s", self.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transmission_time_rounds_up() {
        // 1000 bytes at 1 Mbit/s is exactly 8 ms; one more bit rounds up.
        assert_eq!(Duration::transmission(1000, 1_000_000), Duration::from_millis(8));
        assert_eq!(Duration::transmission(1, 3), Duration(2_666_666_667));
        assert_eq!(Duration::transmission(0, 1_000_000), Duration::ZERO);
        // Past what 64 bits hold, the same rounding in 128.
        assert_eq!(Duration::transmission(u64::MAX / 1000, 8_000_000_000_000), Duration(u64::MAX / 1000 / 1000 + 1));
    }

    #[test]
    fn seconds_round_trip_and_clamp() {
        assert_eq!(Duration::from_secs_f64(0.1), Duration::from_millis(100));
        assert_eq!(Duration::from_secs_f64(-1.0), Duration::ZERO);
        assert_eq!(Duration::from_secs_f64(f64::NAN), Duration::ZERO);
        assert_eq!(Instant(5) - Instant(7), Duration::ZERO);
    }
}

/// Serde for durations written as seconds (a float), the unit of scenarios.
pub mod serde_secs {
    use super::Duration;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let s = f64::deserialize(d)?;
        if !(s.is_finite() && s >= 0.0) {
            return Err(serde::de::Error::custom(format!("expected a non-negative number of seconds, found {s}")));
        }
        Ok(Duration::from_secs_f64(s))
    }
}
