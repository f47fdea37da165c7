//! The hosts' side of a flow: an application and its transport at each
//! end, as endpoints that exchange IP packets with their node.
//!
//! What an application sends is a per-flow pseudo-random byte stream, a
//! function of the flow's seed and the byte's offset ([`content`]). With
//! real payloads the receiving end checks every byte it is delivered and
//! counts what is wrong or out of place; with virtual payloads it checks
//! the places. Delay is measured beside the packets: the sending end logs
//! when each piece of the stream first left, the receiving end looks it up
//! when the piece is delivered, so no measurement travels in a packet.

mod tcp;
mod udp;

pub use tcp::{TcpSink, TcpSource};
pub use udp::{Schedule, UdpSink, UdpSource};

use crate::metrics::{Histogram, Moments, Series};
use crate::result::FlowSummary;
use ncmesh_codec::prng::SplitMix64;
use ncmesh_proto::{Instant, Packet};
use std::collections::VecDeque;
use std::fmt::Debug;

/// One end of a flow: its application and transport.
pub trait Endpoint: Debug + Send {
    /// The application opens its connection ahead of its data (sources only).
    fn open(&mut self, _now: Instant) {}
    /// The application starts offering data (sources only).
    fn start(&mut self, _now: Instant) {}
    /// The application stops offering data.
    fn stop(&mut self, _now: Instant) {}
    /// The node delivered `packet` of this flow.
    fn handle_packet(&mut self, now: Instant, packet: Packet, record: &mut FlowRecord);
    /// Called when `now >= poll_timeout()`.
    /// Called at a deadline it reported, which may since have moved later:
    /// it acts only on what is due.
    fn handle_timeout(&mut self, now: Instant, record: &mut FlowRecord);
    fn poll_timeout(&self) -> Option<Instant>;
    /// The next packet for the node.
    fn poll_transmit(&mut self, now: Instant, record: &mut FlowRecord) -> Option<Packet>;
    /// The transport's congestion window (bytes), smoothed RTT (seconds)
    /// and pacing rate (bit/s, NaN if it does not pace), for probes.
    fn probe(&self) -> Option<(f64, f64, f64)> {
        None
    }
    /// Fills in what this end knows of the flow's summary.
    fn summarize(&self, _record: &FlowRecord, _summary: &mut FlowSummary) {}
}

/// What both ends of a flow measure.
#[derive(Debug)]
pub struct FlowRecord {
    /// The seed of the flow's content stream.
    pub content_seed: u64,
    /// When each piece of the stream first left: (start offset, end offset, time), in order.
    sent: VecDeque<(u64, u64, Instant)>,
    pub packets_sent: u64,
    pub delivered: u64,
    /// Delivered bytes that were not the stream's at their place, or not where the stream had got to.
    pub corrupt: u64,
    pub goodput: Series,
    pub delay: Moments,
    pub delay_histogram: Histogram,
    pub completed: Option<Instant>,
    /// When the data went out after a prefix that held it back, if one did:
    /// the flow's goodput is timed from then.
    pub data_started: Option<Instant>,
    /// The sender's smoothed RTT and unbacked-off RTO, sampled at every ACK:
    /// what Padhye's model calls RTT and T0.
    pub srtt: Moments,
    pub base_rto: Moments,
}

impl FlowRecord {
    pub fn new(content_seed: u64, interval: ncmesh_proto::Duration) -> FlowRecord {
        FlowRecord {
            content_seed,
            sent: VecDeque::new(),
            packets_sent: 0,
            delivered: 0,
            corrupt: 0,
            goodput: Series::new(interval),
            delay: Moments::default(),
            delay_histogram: Histogram::default(),
            completed: None,
            data_started: None,
            srtt: Moments::default(),
            base_rto: Moments::default(),
        }
    }

    /// The stream's bytes `[start, end)` first left now.
    pub fn log_sent(&mut self, start: u64, end: u64, now: Instant) {
        self.sent.push_back((start, end, now));
    }

    /// Counts `len` bytes delivered now.
    fn count_delivered(&mut self, now: Instant, len: u64) {
        self.delivered += len;
        self.goodput.add(now, len);
    }

    fn sample_delay(&mut self, now: Instant, first_sent: Instant) {
        let delay = now - first_sent;
        self.delay.add(delay.as_secs_f64());
        self.delay_histogram.add(delay);
    }

    /// In-order stream bytes up to `end` were delivered now: one delay
    /// sample per logged piece they complete.
    fn delivered_in_order(&mut self, now: Instant, end: u64) {
        while let Some(&(_, piece_end, at)) = self.sent.front() {
            if piece_end > end {
                break;
            }
            self.sent.pop_front();
            self.sample_delay(now, at);
        }
    }

    /// A datagram starting at `offset` arrived now: its delay, if it was
    /// logged and not seen before. Earlier pieces still logged were lost.
    fn delivered_datagram(&mut self, now: Instant, offset: u64) -> bool {
        let i = self.sent.partition_point(|&(start, _, _)| start < offset);
        match self.sent.get(i) {
            Some(&(start, _, at)) if start == offset => {
                self.sent.drain(..=i);
                self.sample_delay(now, at);
                true
            }
            _ => false,
        }
    }
}

/// Byte `offset` of the content stream seeded `seed`, for every byte of `out`.
pub fn content(seed: u64, offset: u64, out: &mut [u8]) {
    let mut word = offset / 8;
    let mut skip = (offset % 8) as usize;
    let mut at = 0;
    while at < out.len() {
        let bytes = SplitMix64::new(seed ^ word.wrapping_mul(0x9E37_79B9_7F4A_7C15)).next_u64().to_le_bytes();
        let n = (8 - skip).min(out.len() - at);
        out[at..at + n].copy_from_slice(&bytes[skip..skip + n]);
        at += n;
        skip = 0;
        word += 1;
    }
}

/// Bytes of `data` that differ from the content stream at `offset`.
fn mismatches(seed: u64, offset: u64, data: &[u8]) -> u64 {
    let mut want = vec![0; data.len()];
    content(seed, offset, &mut want);
    want.iter().zip(data).filter(|(a, b)| a != b).count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_is_the_same_however_it_is_cut() {
        let mut whole = vec![0; 100];
        content(7, 13, &mut whole);
        for cut in [1, 5, 8, 37] {
            let mut part = vec![0; 100 - cut];
            content(7, 13 + cut as u64, &mut part);
            assert_eq!(part, whole[cut..]);
        }
        let mut other = vec![0; 100];
        content(8, 13, &mut other);
        assert_ne!(other, whole);
        assert_eq!(mismatches(7, 13, &whole), 0);
        whole[50] ^= 0xFF;
        assert_eq!(mismatches(7, 13, &whole), 1);
    }
}
