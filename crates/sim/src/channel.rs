//! Channels carry packets between nodes. A channel is driven like a protocol
//! endpoint: the engine hands it packets, wakes it at `poll_timeout`, and
//! drains `poll_delivery`. A point-to-point link is one channel per
//! direction; a shared broadcast medium with overhearing implements the same
//! trait, delivering one transmission to several nodes.

use crate::routing::NodeIndex;
use ncmesh_proto::Packet;
use crate::queue::QueueDisc;
use crate::rng::Rng;
use ncmesh_proto::{Duration, Instant};
use std::collections::VecDeque;
use std::fmt::Debug;

/// Counters of one channel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChannelStats {
    /// Packets serialised onto the medium, lost ones included.
    pub transmitted: u64,
    pub transmitted_bytes: u64,
    /// Packets the loss process erased.
    pub lost: u64,
    /// Packets the output queue refused.
    pub dropped: u64,
}

pub trait Channel: Debug + Send {
    /// A node hands the channel a packet to send; false when the queue dropped it.
    fn enqueue(&mut self, now: Instant, packet: Packet) -> bool;
    /// Called when `now >= poll_timeout()`.
    fn handle_timeout(&mut self, now: Instant);
    fn poll_timeout(&self) -> Option<Instant>;
    /// A packet that has arrived at a node by `now`, with that node.
    fn poll_delivery(&mut self, now: Instant) -> Option<(NodeIndex, Packet)>;
    /// Packets waiting in the output queue, not counting the one on the air.
    fn queue_len(&self) -> usize;
    /// Nothing on the air and nothing queued: a hop layer may offer a frame.
    fn is_idle(&self) -> bool;
    fn stats(&self) -> &ChannelStats;
}

/// How a link erases packets.
#[derive(Clone, Debug, PartialEq)]
pub enum LossModel {
    /// Each packet is lost independently with probability `p`.
    Bernoulli { p: f64 },
    /// Two-state Markov chain stepped once per packet (Gilbert 1960, Elliott 1963).
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

/// One direction of a link: an output queue, a transmitter of fixed rate, a
/// propagation delay, and a loss process applied as each packet leaves. This
/// is the interference-free hop of a multi-radio TDMA mesh, and with no loss,
/// a wired link.
#[derive(Debug)]
pub struct PointToPoint {
    to: NodeIndex,
    bits_per_s: u64,
    delay: Duration,
    loss: LossModel,
    rng: Rng,
    queue: Box<dyn QueueDisc>,
    /// The packet being serialised and when it finishes.
    on_air: Option<(Instant, Packet)>,
    /// Packets propagating, in arrival order (the delay is constant).
    propagating: VecDeque<(Instant, Packet)>,
    stats: ChannelStats,
}

impl PointToPoint {
    /// When the frame on the air finishes.
    pub fn poll_departure(&self) -> Option<Instant> {
        self.on_air.as_ref().map(|(t, _)| *t)
    }

    /// When the next frame reaches the far end.
    pub fn poll_arrival(&self) -> Option<Instant> {
        self.propagating.front().map(|(t, _)| *t)
    }

    pub fn new(to: NodeIndex, bits_per_s: u64, delay: Duration, loss: LossModel, rng: Rng, queue: Box<dyn QueueDisc>) -> PointToPoint {
        PointToPoint { to, bits_per_s, delay, loss, rng, queue, on_air: None, propagating: VecDeque::new(), stats: ChannelStats::default() }
    }

    /// The configured long-run loss rate.
    pub fn loss_rate(&self) -> f64 {
        self.loss.mean()
    }

    fn start(&mut self, at: Instant, packet: Packet) {
        let done = at + Duration::transmission(packet.bytes as u64, self.bits_per_s);
        self.on_air = Some((done, packet));
    }
}

impl Channel for PointToPoint {
    fn enqueue(&mut self, now: Instant, packet: Packet) -> bool {
        if self.on_air.is_none() && self.queue.is_empty() {
            self.start(now, packet);
            return true;
        }
        let accepted = self.queue.enqueue(now, packet).is_ok();
        if !accepted {
            self.stats.dropped += 1;
        }
        accepted
    }

    fn handle_timeout(&mut self, now: Instant) {
        while let Some((done, _)) = &self.on_air {
            let done = *done;
            if done > now {
                break;
            }
            let (_, packet) = self.on_air.take().expect("checked above");
            self.stats.transmitted += 1;
            self.stats.transmitted_bytes += packet.bytes as u64;
            if self.loss.is_lost(&mut self.rng) {
                self.stats.lost += 1;
            } else {
                self.propagating.push_back((done + self.delay, packet));
            }
            if let Some(next) = self.queue.dequeue(done) {
                self.start(done, next);
            }
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match (self.poll_departure(), self.poll_arrival()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn poll_delivery(&mut self, now: Instant) -> Option<(NodeIndex, Packet)> {
        if self.propagating.front()?.0 > now {
            return None;
        }
        self.propagating.pop_front().map(|(_, p)| (self.to, p))
    }

    fn queue_len(&self) -> usize {
        self.queue.len()
    }

    fn is_idle(&self) -> bool {
        self.on_air.is_none() && self.queue.is_empty()
    }

    fn stats(&self) -> &ChannelStats {
        &self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ncmesh_proto::{Body, Direction};
    use crate::queue::DropTail;
    use crate::rng::Purpose;

    fn packet(bytes: u32) -> Packet {
        Packet { flow: 0, direction: Direction::Forward, bytes, body: Body::Udp { payload: bytes, sent_at: Instant::ZERO } }
    }

    fn drive(link: &mut PointToPoint) -> Vec<Instant> {
        let mut arrivals = vec![];
        while let Some(t) = link.poll_timeout() {
            link.handle_timeout(t);
            while let Some((_, _)) = link.poll_delivery(t) {
                arrivals.push(t);
            }
        }
        arrivals
    }

    #[test]
    fn back_to_back_packets_are_serialised_then_delayed() {
        let rng = Rng::stream(0, Purpose::LinkLoss, 0);
        let mut link = PointToPoint::new(1, 1_000_000, Duration::from_millis(100), LossModel::Bernoulli { p: 0.0 }, rng, Box::new(DropTail::new(10)));
        for _ in 0..3 {
            assert!(link.enqueue(Instant::ZERO, packet(1000)));
        }
        // 1000 bytes at 1 Mbit/s take 8 ms each; then 100 ms of propagation.
        assert_eq!(drive(&mut link), vec![Instant(108_000_000), Instant(116_000_000), Instant(124_000_000)]);
        assert_eq!(link.stats().transmitted, 3);
    }

    #[test]
    fn queue_overflow_is_counted() {
        let rng = Rng::stream(0, Purpose::LinkLoss, 0);
        let mut link = PointToPoint::new(1, 1_000_000, Duration::ZERO, LossModel::Bernoulli { p: 0.0 }, rng, Box::new(DropTail::new(1)));
        // One on the air, one queued, the third dropped.
        assert!(link.enqueue(Instant::ZERO, packet(100)));
        assert!(link.enqueue(Instant::ZERO, packet(100)));
        assert!(!link.enqueue(Instant::ZERO, packet(100)));
        assert_eq!(link.stats().dropped, 1);
        assert_eq!(drive(&mut link).len(), 2);
    }

    #[test]
    fn gilbert_elliott_long_run_loss_matches_its_stationary_mean() {
        let mut model = LossModel::GilbertElliott { p_good_to_bad: 0.02, p_bad_to_good: 0.2, loss_good: 0.01, loss_bad: 0.6, bad: false };
        // pi_bad = 0.02 / 0.22; mean = pi_bad * 0.6 + (1 - pi_bad) * 0.01 = 0.0636...
        let expected = 0.02 / 0.22 * 0.6 + 0.2 / 0.22 * 0.01;
        assert!((model.mean() - expected).abs() < 1e-12);
        let mut rng = Rng::stream(3, Purpose::LinkLoss, 0);
        let n = 400_000;
        let lost = (0..n).filter(|_| model.is_lost(&mut rng)).count() as f64 / n as f64;
        assert!((lost - expected).abs() < 0.004, "{lost} vs {expected}");
    }
}
