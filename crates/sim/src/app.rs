//! UDP applications: constant bit rate and exponential on/off sources.
//! (TCP applications are just how many bytes they offer the sender.)

use crate::rng::Rng;
use ncmesh_proto::{Duration, Instant};

/// A UDP source that sends `payload` bytes every `interval` while on.
#[derive(Debug)]
pub struct UdpSource {
    payload: u32,
    interval: Duration,
    next: Option<Instant>,
    on_off: Option<OnOff>,
}

/// Exponential on and off periods (ns-2's Exponential traffic, ns-3's OnOffApplication).
#[derive(Debug)]
struct OnOff {
    on_mean: f64,
    off_mean: f64,
    on_until: Instant,
    rng: Rng,
}

impl UdpSource {
    /// A CBR source: `payload` bytes at `bits_per_s` of payload.
    pub fn cbr(payload: u32, bits_per_s: u64) -> UdpSource {
        UdpSource { payload, interval: Duration::transmission(payload as u64, bits_per_s), next: None, on_off: None }
    }

    /// Sends at `bits_per_s` during on periods of mean `on`, silent for off periods of mean `off`.
    pub fn on_off(payload: u32, bits_per_s: u64, on: Duration, off: Duration, rng: Rng) -> UdpSource {
        let on_off = OnOff { on_mean: on.as_secs_f64(), off_mean: off.as_secs_f64(), on_until: Instant::ZERO, rng };
        UdpSource { on_off: Some(on_off), ..UdpSource::cbr(payload, bits_per_s) }
    }

    pub fn start(&mut self, now: Instant) {
        self.next = Some(now);
        if let Some(o) = &mut self.on_off {
            o.on_until = now + Duration::from_secs_f64(o.rng.exponential(o.on_mean));
        }
    }

    pub fn stop(&mut self) {
        self.next = None;
    }

    pub fn poll_timeout(&self) -> Option<Instant> {
        self.next
    }

    /// The payload size of the next datagram if one is due by `now`.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<u32> {
        let due = self.next.filter(|&t| t <= now)?;
        let mut next = due + self.interval;
        if let Some(o) = &mut self.on_off {
            while next >= o.on_until {
                let off = Duration::from_secs_f64(o.rng.exponential(o.off_mean));
                let on = Duration::from_secs_f64(o.rng.exponential(o.on_mean));
                next = o.on_until + off;
                o.on_until = next + on;
            }
        }
        self.next = Some(next);
        Some(self.payload)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Purpose;

    fn count_until(src: &mut UdpSource, end: Instant) -> u64 {
        let mut n = 0;
        while let Some(t) = src.poll_timeout().filter(|&t| t < end) {
            n += src.poll_transmit(t).is_some() as u64;
        }
        n
    }

    #[test]
    fn cbr_sends_at_its_rate() {
        // 1000 bytes at 80 kbit/s: one packet per 100 ms, 100 in 10 s.
        let mut src = UdpSource::cbr(1000, 80_000);
        src.start(Instant::ZERO);
        assert_eq!(count_until(&mut src, Instant::from_secs_f64(10.0)), 100);
    }

    #[test]
    fn on_off_sends_about_the_on_fraction() {
        let rng = Rng::stream(5, Purpose::Application, 0);
        let mut src = UdpSource::on_off(1000, 80_000, Duration::from_secs(1), Duration::from_secs(3), rng);
        src.start(Instant::ZERO);
        // On a quarter of the time: about 10 packets/s * 2000 s / 4 = 5000.
        let n = count_until(&mut src, Instant::from_secs_f64(2000.0)) as f64;
        assert!((n - 5000.0).abs() < 500.0, "{n}");
    }
}
