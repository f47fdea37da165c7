//! UDP applications: constant bit rate and exponential on/off sources, and
//! the sink that checks what arrives.
//!
//! A datagram's first 8 bytes carry its offset in the flow's stream (as
//! iperf's carry a sequence number); the rest are the stream's bytes after
//! it. A sink reads the offset, checks the rest, and looks up when the
//! datagram left.

use super::{mismatches, Endpoint, FlowRecord};
use crate::result::FlowSummary;
use crate::rng::Rng;
use ncmesh_proto::wire::udp::Datagram;
use ncmesh_proto::{Data, Duration, FlowKey, Instant, Packet, Payload};

/// Bytes at the start of a datagram that say where it sits in the stream.
pub const OFFSET_BYTES: usize = 8;

/// When a UDP application sends: `payload` bytes every `interval` while on.
#[derive(Debug)]
pub struct Schedule {
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

impl Schedule {
    /// A CBR source: `payload` bytes at `bits_per_s` of payload.
    pub fn cbr(payload: u32, bits_per_s: u64) -> Schedule {
        Schedule { payload, interval: Duration::transmission(payload as u64, bits_per_s), next: None, on_off: None }
    }

    /// Sends at `bits_per_s` during on periods of mean `on`, silent for off periods of mean `off`.
    pub fn on_off(payload: u32, bits_per_s: u64, on: Duration, off: Duration, rng: Rng) -> Schedule {
        let on_off = OnOff { on_mean: on.as_secs_f64(), off_mean: off.as_secs_f64(), on_until: Instant::ZERO, rng };
        Schedule { on_off: Some(on_off), ..Schedule::cbr(payload, bits_per_s) }
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

/// The sending end of a UDP flow.
#[derive(Debug)]
pub struct UdpSource {
    flow: FlowKey,
    schedule: Schedule,
    real_payloads: bool,
    /// Where the next datagram starts in the stream.
    offset: u64,
}

impl UdpSource {
    pub fn new(flow: FlowKey, schedule: Schedule, real_payloads: bool) -> UdpSource {
        UdpSource { flow, schedule, real_payloads, offset: 0 }
    }
}

impl Endpoint for UdpSource {
    fn start(&mut self, now: Instant) {
        self.schedule.start(now);
    }

    fn stop(&mut self, _now: Instant) {
        self.schedule.stop();
    }

    fn handle_packet(&mut self, _now: Instant, _packet: Packet, _record: &mut FlowRecord) {}

    fn handle_timeout(&mut self, _now: Instant, _record: &mut FlowRecord) {}

    fn poll_timeout(&self) -> Option<Instant> {
        self.schedule.poll_timeout()
    }

    fn poll_transmit(&mut self, now: Instant, record: &mut FlowRecord) -> Option<Packet> {
        let len = self.schedule.poll_transmit(now)?;
        let offset = self.offset;
        self.offset += len as u64;
        record.log_sent(offset, offset + len as u64, now);
        record.packets_sent += 1;
        let data = if self.real_payloads {
            let mut bytes = vec![0; len as usize];
            let head = OFFSET_BYTES.min(bytes.len());
            bytes[..head].copy_from_slice(&offset.to_be_bytes()[..head]);
            super::content(record.content_seed, offset + head as u64, &mut bytes[head..]);
            Data::Real(bytes)
        } else {
            Data::Virtual { len, offset }
        };
        let d = Datagram::new(self.flow.src_port, self.flow.dst_port, data);
        Some(Packet::new(self.flow.src, self.flow.dst, Payload::Udp(d)))
    }
}

/// The receiving end of a UDP flow.
#[derive(Debug, Default)]
pub struct UdpSink;

impl Endpoint for UdpSink {
    fn handle_packet(&mut self, now: Instant, packet: Packet, record: &mut FlowRecord) {
        let Payload::Udp(d) = &packet.payload else { return };
        let len = d.data.len() as u64;
        let offset = match &d.data {
            Data::Virtual { offset, .. } => *offset,
            Data::Real(bytes) if bytes.len() >= OFFSET_BYTES => {
                let offset = u64::from_be_bytes(bytes[..OFFSET_BYTES].try_into().expect("8 bytes"));
                record.corrupt += mismatches(record.content_seed, offset + OFFSET_BYTES as u64, &bytes[OFFSET_BYTES..]);
                offset
            }
            Data::Real(_) => {
                record.corrupt += len;
                return;
            }
        };
        record.count_delivered(now, len);
        // A datagram the source never logged at this offset is out of place.
        if !record.delivered_datagram(now, offset) {
            record.corrupt += len;
        }
    }

    fn handle_timeout(&mut self, _now: Instant, _record: &mut FlowRecord) {}

    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    fn poll_transmit(&mut self, _now: Instant, _record: &mut FlowRecord) -> Option<Packet> {
        None
    }

    fn summarize(&self, record: &FlowRecord, summary: &mut FlowSummary) {
        summary.acked_bytes = record.delivered;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Purpose;

    fn count_until(src: &mut Schedule, end: Instant) -> u64 {
        let mut n = 0;
        while let Some(t) = src.poll_timeout().filter(|&t| t < end) {
            n += src.poll_transmit(t).is_some() as u64;
        }
        n
    }

    #[test]
    fn cbr_sends_at_its_rate() {
        // 1000 bytes at 80 kbit/s: one packet per 100 ms, 100 in 10 s.
        let mut src = Schedule::cbr(1000, 80_000);
        src.start(Instant::ZERO);
        assert_eq!(count_until(&mut src, Instant::from_secs_f64(10.0)), 100);
    }

    #[test]
    fn on_off_sends_about_the_on_fraction() {
        let rng = Rng::stream(5, Purpose::Application, 0);
        let mut src = Schedule::on_off(1000, 80_000, Duration::from_secs(1), Duration::from_secs(3), rng);
        src.start(Instant::ZERO);
        // On a quarter of the time: about 10 packets/s * 2000 s / 4 = 5000.
        let n = count_until(&mut src, Instant::from_secs_f64(2000.0)) as f64;
        assert!((n - 5000.0).abs() < 500.0, "{n}");
    }
}
