//! Media carry frames between the interfaces of nodes. A medium is driven
//! like a protocol endpoint: the simulator hands it frames, wakes it at its
//! deadlines, and drains its events: a frame received (addressed or
//! overheard), and a transmitter done with its frame.
//!
//! A medium keeps two deadlines so that simultaneous events run in a fixed
//! order (see `world.rs`): when a transmitter finishes, and when a frame
//! reaches its receivers.

use crate::rng::Rng;
use ncmesh_proto::node::Outcome;
use ncmesh_proto::{Duration, Frame, Instant};
use std::collections::VecDeque;
use std::fmt::Debug;
use std::sync::Arc;
use wifi::Wifi;

pub mod wifi;

/// One attachment of a node's interface to a medium.
pub type Port = usize;

/// What a medium reports.
#[derive(Debug)]
pub enum Event {
    /// `port` received `frame`: addressed to it, or overheard.
    Received { port: Port, frame: Frame, addressed: bool },
    /// The transmitter at `port` is done with its frame and can send the next.
    Sent { port: Port, outcome: Outcome },
}

/// Counters of one medium, per transmitting port.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MediumStats {
    /// Frames put on the air, lost ones included, and their bytes.
    pub transmitted: u64,
    pub transmitted_bytes: u64,
    /// Frames the loss process erased.
    pub lost: u64,
    /// Frames delivered with a byte changed.
    pub corrupted: u64,
}

/// The two kinds of deadline a medium has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// A transmission ends.
    Departure,
    /// A frame reaches a receiver.
    Arrival,
}

pub trait Medium: Debug + Send {
    /// The transmitter at `port` starts sending `frame` now. The simulator
    /// only does so when the port's previous frame is `Sent`.
    fn transmit(&mut self, now: Instant, port: Port, frame: Frame);
    fn poll_timeout(&self, phase: Phase) -> Option<Instant>;
    /// Called when `now >= poll_timeout(phase)`, or at an earlier deadline
    /// that has since moved (then it does nothing); drain `poll_event` afterwards.
    fn handle_timeout(&mut self, now: Instant, phase: Phase);
    fn poll_event(&mut self) -> Option<Event>;
    fn stats(&self, port: Port) -> MediumStats;
}

/// The media the simulator has, dispatched statically: the event loop
/// calls a medium several times per event, and a `match` lets those calls
/// be inlined where a trait object's could not. A new medium is a variant.
/// Point-to-point links stay inline: a network has two per link and the
/// loop touches one on every frame; the one wireless channel is boxed.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum AnyMedium {
    PointToPoint(PointToPoint),
    Wifi(Box<Wifi>),
}

impl Medium for AnyMedium {
    #[inline]
    fn transmit(&mut self, now: Instant, port: Port, frame: Frame) {
        match self {
            AnyMedium::PointToPoint(m) => m.transmit(now, port, frame),
            AnyMedium::Wifi(m) => m.transmit(now, port, frame),
        }
    }

    #[inline]
    fn poll_timeout(&self, phase: Phase) -> Option<Instant> {
        match self {
            AnyMedium::PointToPoint(m) => m.poll_timeout(phase),
            AnyMedium::Wifi(m) => m.poll_timeout(phase),
        }
    }

    #[inline]
    fn handle_timeout(&mut self, now: Instant, phase: Phase) {
        match self {
            AnyMedium::PointToPoint(m) => m.handle_timeout(now, phase),
            AnyMedium::Wifi(m) => m.handle_timeout(now, phase),
        }
    }

    #[inline]
    fn poll_event(&mut self) -> Option<Event> {
        match self {
            AnyMedium::PointToPoint(m) => m.poll_event(),
            AnyMedium::Wifi(m) => m.poll_event(),
        }
    }

    fn stats(&self, port: Port) -> MediumStats {
        match self {
            AnyMedium::PointToPoint(m) => m.stats(port),
            AnyMedium::Wifi(m) => m.stats(port),
        }
    }
}

/// How a link damages the frames it delivers: with probability `p`, one
/// byte at a uniform position is XORed with a uniform non-zero value. Only
/// a frame of bytes can be damaged (real-payload runs).
#[derive(Clone, Debug)]
pub struct Corruption {
    pub p: f64,
    pub rng: Rng,
}

impl Corruption {
    /// Damages `frame`, or leaves it; true if it changed.
    pub fn apply(&mut self, frame: &mut Frame) -> bool {
        if self.p == 0.0 || !self.rng.chance(self.p) {
            return false;
        }
        let Some(bytes) = frame.bytes_mut() else { return false };
        if bytes.is_empty() {
            return false;
        }
        let mut damaged = bytes.to_vec();
        let at = self.rng.below(damaged.len() as u64) as usize;
        damaged[at] ^= 1 + self.rng.below(255) as u8;
        *bytes = Arc::from(damaged);
        true
    }
}

/// How a link erases frames.
#[derive(Clone, Debug, PartialEq)]
pub enum LossModel {
    /// Each frame is lost independently with probability `p`.
    Bernoulli { p: f64 },
    /// Two-state Markov chain stepped once per frame (Gilbert 1960, Elliott 1963).
    GilbertElliott { p_good_to_bad: f64, p_bad_to_good: f64, loss_good: f64, loss_bad: f64, bad: bool },
}

impl LossModel {
    pub fn is_lost(&mut self, rng: &mut Rng) -> bool {
        match self {
            LossModel::Bernoulli { p } => rng.chance(*p),
            LossModel::GilbertElliott { p_good_to_bad, p_bad_to_good, loss_good, loss_bad, bad } => {
                let flip = if *bad { *p_bad_to_good } else { *p_good_to_bad };
                if rng.chance(flip) {
                    *bad = !*bad;
                }
                rng.chance(if *bad { *loss_bad } else { *loss_good })
            }
        }
    }

    /// The long-run loss rate.
    pub fn mean(&self) -> f64 {
        match *self {
            LossModel::Bernoulli { p } => p,
            LossModel::GilbertElliott { p_good_to_bad, p_bad_to_good, loss_good, loss_bad, .. } => {
                let total = p_good_to_bad + p_bad_to_good;
                if total == 0.0 {
                    return loss_good;
                }
                let in_bad = p_good_to_bad / total;
                in_bad * loss_bad + (1.0 - in_bad) * loss_good
            }
        }
    }
}

/// One direction of a link: port 0 transmits at a fixed rate, the frame
/// propagates for a fixed delay, and a loss process applied as it leaves
/// decides whether port 1 receives it. This is the interference-free hop
/// of a multi-radio TDMA mesh and, without loss, a wired link. It charges
/// the frame's body only, as the TDMA link model of seed 000 does.
#[derive(Debug)]
pub struct PointToPoint {
    bits_per_s: u64,
    delay: Duration,
    loss: LossModel,
    rng: Rng,
    corruption: Corruption,
    /// Frames on the link in the order they were sent, each with when it
    /// reaches the receiver; the last is still being serialised while
    /// `sending` is set. Frames stay here from the transmitter to
    /// the receiver, so that each moves in and out once.
    frames: VecDeque<(Instant, Frame)>,
    /// When the frame being serialised finishes, and its length.
    sending: Option<(Instant, usize)>,
    /// The last serialisation time computed, by frame length: most frames
    /// are of a few lengths, and a division is slow.
    last_transmission: (usize, Duration),
    /// The transmitter finished a frame and has not been told yet.
    sent: bool,
    /// Frames that reach the receiver by then have arrived; they leave
    /// `frames` as they are polled.
    arrived_by: Instant,
    /// When the first propagating frame arrives, or `Instant::MAX`: kept
    /// beside `frames`, since it is asked for after every event.
    next_arrival: Instant,
    stats: MediumStats,
}

impl PointToPoint {
    pub fn new(bits_per_s: u64, delay: Duration, loss: LossModel, rng: Rng, corruption: Corruption) -> PointToPoint {
        PointToPoint {
            bits_per_s,
            delay,
            loss,
            rng,
            corruption,
            frames: VecDeque::new(),
            sending: None,
            last_transmission: (0, Duration::ZERO),
            sent: false,
            arrived_by: Instant::ZERO,
            next_arrival: Instant::MAX,
            stats: MediumStats::default(),
        }
    }

    /// The configured long-run loss rate.
    pub fn loss_rate(&self) -> f64 {
        self.loss.mean()
    }

    /// How long `len` bytes take to serialise.
    fn transmission(&mut self, len: usize) -> Duration {
        if self.last_transmission.0 != len {
            self.last_transmission = (len, Duration::transmission(len as u64, self.bits_per_s));
        }
        self.last_transmission.1
    }

    /// When the first frame that has left the transmitter arrives.
    fn first_arrival(&self) -> Instant {
        let propagating = self.frames.len() - self.sending.is_some() as usize;
        if propagating == 0 {
            return Instant::MAX;
        }
        self.frames.front().map_or(Instant::MAX, |(t, _)| *t)
    }
}

impl Medium for PointToPoint {
    // Inlined into the driver, so that the frame goes from the node's
    // registers into the queue, not through a copy on the stack.
    #[inline]
    fn transmit(&mut self, now: Instant, port: Port, frame: Frame) {
        debug_assert!(port == 0 && self.sending.is_none() && !self.sent, "one transmitter, one frame at a time");
        let len = frame.wire_len();
        self.sending = Some((now + self.transmission(len), len));
        self.frames.push_back((Instant::MAX, frame));
    }

    fn poll_timeout(&self, phase: Phase) -> Option<Instant> {
        match phase {
            Phase::Departure => self.sending.map(|(done, _)| done),
            Phase::Arrival => (self.next_arrival != Instant::MAX).then_some(self.next_arrival),
        }
    }

    fn handle_timeout(&mut self, now: Instant, phase: Phase) {
        match phase {
            Phase::Departure => {
                let Some((done, len)) = self.sending.filter(|&(done, _)| done <= now) else { return };
                self.sending = None;
                self.sent = true;
                self.stats.transmitted += 1;
                self.stats.transmitted_bytes += len as u64;
                if self.loss.is_lost(&mut self.rng) {
                    self.stats.lost += 1;
                    self.frames.pop_back();
                    return;
                }
                let (arrival, frame) = self.frames.back_mut().expect("the frame being sent");
                *arrival = done + self.delay;
                self.next_arrival = self.next_arrival.min(*arrival);
                if self.corruption.p > 0.0 {
                    self.stats.corrupted += self.corruption.apply(frame) as u64;
                }
            }
            Phase::Arrival => self.arrived_by = now,
        }
    }

    fn poll_event(&mut self) -> Option<Event> {
        if std::mem::take(&mut self.sent) {
            return Some(Event::Sent { port: 0, outcome: Outcome::Sent });
        }
        if self.next_arrival > self.arrived_by {
            return None;
        }
        let (_, frame) = self.frames.pop_front().expect("a frame arrives");
        self.next_arrival = self.first_arrival();
        Some(Event::Received { port: 1, frame, addressed: true })
    }

    fn stats(&self, port: Port) -> MediumStats {
        if port == 0 {
            self.stats
        } else {
            MediumStats::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Purpose;
    use ncmesh_proto::wire::udp::Datagram;
    use ncmesh_proto::{Data, Packet, Payload};
    use std::net::Ipv4Addr;

    fn frame(bytes: u32) -> Frame {
        let d = Datagram::new(1, 2, Data::Virtual { len: bytes - 28, offset: 0 });
        Frame::packet(Ipv4Addr::LOCALHOST, Packet::new(Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST, Payload::Udp(d)))
    }

    /// Sends `n` frames back to back; returns when each arrived.
    fn arrivals(link: &mut PointToPoint, n: usize) -> Vec<Instant> {
        let mut out = vec![];
        let mut queue: VecDeque<Frame> = (0..n).map(|_| frame(1000)).collect();
        link.transmit(Instant::ZERO, 0, queue.pop_front().unwrap());
        loop {
            let next = [Phase::Departure, Phase::Arrival]
                .into_iter()
                .filter_map(|p| link.poll_timeout(p).map(|t| (t, p)))
                .min_by_key(|&(t, p)| (t, p == Phase::Arrival));
            let Some((t, phase)) = next else { break };
            link.handle_timeout(t, phase);
            while let Some(e) = link.poll_event() {
                match e {
                    Event::Sent { .. } => {
                        if let Some(f) = queue.pop_front() {
                            link.transmit(t, 0, f);
                        }
                    }
                    Event::Received { port, addressed, .. } => {
                        assert!(port == 1 && addressed);
                        out.push(t);
                    }
                }
            }
        }
        out
    }

    #[test]
    fn back_to_back_frames_are_serialised_then_delayed() {
        let rng = Rng::stream(0, Purpose::LinkLoss, 0);
        let clean = Corruption { p: 0.0, rng: Rng::stream(0, Purpose::Corruption, 0) };
        let mut link =
            PointToPoint::new(1_000_000, Duration::from_millis(100), LossModel::Bernoulli { p: 0.0 }, rng, clean);
        // 1000 bytes at 1 Mbit/s take 8 ms each; then 100 ms of propagation.
        assert_eq!(arrivals(&mut link, 3), vec![Instant(108_000_000), Instant(116_000_000), Instant(124_000_000)]);
        assert_eq!(link.stats(0).transmitted, 3);
        assert_eq!(link.stats(0).transmitted_bytes, 3000);
    }

    #[test]
    fn gilbert_elliott_long_run_loss_matches_its_stationary_mean() {
        let mut model = LossModel::GilbertElliott {
            p_good_to_bad: 0.02,
            p_bad_to_good: 0.2,
            loss_good: 0.01,
            loss_bad: 0.6,
            bad: false,
        };
        // pi_bad = 0.02 / 0.22; mean = pi_bad * 0.6 + (1 - pi_bad) * 0.01 = 0.0636...
        let expected = 0.02 / 0.22 * 0.6 + 0.2 / 0.22 * 0.01;
        assert!((model.mean() - expected).abs() < 1e-12);
        let mut rng = Rng::stream(3, Purpose::LinkLoss, 0);
        let n = 400_000;
        let lost = (0..n).filter(|_| model.is_lost(&mut rng)).count() as f64 / n as f64;
        assert!((lost - expected).abs() < 0.004, "{lost} vs {expected}");
    }
}
