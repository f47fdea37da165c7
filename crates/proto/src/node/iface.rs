//! A node's interfaces and their queue disciplines.

use crate::packet::Packet;
use crate::time::{Duration, Instant};
use std::collections::VecDeque;
use std::fmt::Debug;
use std::net::Ipv4Addr;

/// Index of an interface in its node.
pub type IfaceId = usize;

/// What a node is told about one of its interfaces when it is built.
#[derive(Clone, Debug, PartialEq)]
pub struct InterfaceInfo {
    /// The link class (as a scenario names it), for per-class coding and reports.
    pub class: String,
    /// The nodes this interface reaches.
    pub neighbours: Vec<Ipv4Addr>,
    pub capacity_bps: u64,
    /// One-way propagation delay.
    pub delay: Duration,
    /// The configured loss rate towards the neighbours, where known. A node
    /// cannot know it in practice: protocols that estimate loss use it only
    /// where their parameters ask for the configured value.
    pub loss: f64,
    /// Whether the node's hop layer codes what leaves here.
    pub coded: bool,
    /// Packets its queue holds, for hop layers that keep queues of their own.
    pub queue: usize,
}

/// A packet waiting for an interface, with the neighbour it is for: two
/// words, since every packet forwarded moves in and out of one. A
/// discipline that needs arrival times (CoDel's sojourn time) keeps them
/// itself, from `enqueue`'s `now`.
#[derive(Clone, Debug)]
pub struct Queued {
    pub packet: Packet,
    /// The neighbour as an integer: a pointer and an integer pass between
    /// functions in two registers, where a pointer and `Ipv4Addr`'s byte
    /// array go through memory, written in two pieces and read back in
    /// one, which the store buffer cannot forward.
    next: u32,
}

impl Queued {
    pub fn new(packet: Packet, next: Ipv4Addr) -> Queued {
        Queued { packet, next: next.into() }
    }

    /// The neighbour the packet goes to.
    pub fn next(&self) -> Ipv4Addr {
        self.next.into()
    }
}

/// A queue discipline: what waits for an interface, in which order, and
/// what is dropped when it is full. A coder may search it, take packets
/// out of its middle and flush it by predicate (COPE, NCAQM, intra-flow
/// block flushing).
pub trait QueueDisc: Debug + Send {
    /// Offers a packet. Returns what the discipline dropped to make room:
    /// the arrival itself, or any packet it held.
    fn enqueue(&mut self, now: Instant, item: Queued) -> Option<Queued>;
    /// The next packet to transmit.
    fn dequeue(&mut self, now: Instant) -> Option<Queued>;
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The `i`-th packet in transmission order.
    fn get(&self, i: usize) -> Option<&Queued>;
    /// Takes the `i`-th packet out.
    fn remove(&mut self, i: usize) -> Option<Queued>;
    /// Takes out every packet for which `matches` holds, in order.
    fn flush(&mut self, matches: &mut dyn FnMut(&Queued) -> bool) -> Vec<Queued>;
}

/// First in, first out, dropping arrivals when `capacity` packets wait.
#[derive(Debug)]
pub struct DropTail {
    packets: VecDeque<Queued>,
    capacity: usize,
}

impl DropTail {
    pub fn new(capacity: usize) -> DropTail {
        DropTail { packets: VecDeque::new(), capacity }
    }
}

impl QueueDisc for DropTail {
    fn enqueue(&mut self, _now: Instant, item: Queued) -> Option<Queued> {
        if self.packets.len() >= self.capacity {
            return Some(item);
        }
        self.packets.push_back(item);
        None
    }

    fn dequeue(&mut self, _now: Instant) -> Option<Queued> {
        self.packets.pop_front()
    }

    fn len(&self) -> usize {
        self.packets.len()
    }

    fn get(&self, i: usize) -> Option<&Queued> {
        self.packets.get(i)
    }

    fn remove(&mut self, i: usize) -> Option<Queued> {
        self.packets.remove(i)
    }

    fn flush(&mut self, matches: &mut dyn FnMut(&Queued) -> bool) -> Vec<Queued> {
        let mut out = Vec::new();
        let mut kept = VecDeque::with_capacity(self.packets.len());
        for item in self.packets.drain(..) {
            if matches(&item) {
                out.push(item);
            } else {
                kept.push_back(item);
            }
        }
        self.packets = kept;
        out
    }
}

/// Counters of one interface.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InterfaceStats {
    /// Packets the queue discipline dropped.
    pub dropped: u64,
    /// Frames handed to the medium.
    pub sent: u64,
}

/// One interface of a node: what it is, its queue, and whether its medium
/// can take a frame now.
#[derive(Debug)]
pub struct Interface {
    pub info: InterfaceInfo,
    queue: Box<dyn QueueDisc>,
    pub stats: InterfaceStats,
    pub(crate) ready: bool,
    /// The queue may hold a packet: set by every access that could add one,
    /// cleared when the hop layer found nothing to send. It spares the node
    /// a look into the queue of every idle interface after every input.
    pub(crate) maybe_queued: bool,
}

impl Interface {
    pub fn new(info: InterfaceInfo, queue: Box<dyn QueueDisc>) -> Interface {
        Interface { info, queue, stats: InterfaceStats::default(), ready: true, maybe_queued: false }
    }

    pub fn queue(&self) -> &dyn QueueDisc {
        &*self.queue
    }

    /// The queue, to take packets from or put packets in.
    pub fn queue_mut(&mut self) -> &mut dyn QueueDisc {
        self.maybe_queued = true;
        &mut *self.queue
    }

    /// Queues `packet` for neighbour `next`, counting what the discipline drops.
    pub fn enqueue(&mut self, now: Instant, packet: Packet, next: Ipv4Addr) {
        self.maybe_queued = true;
        if self.queue.enqueue(now, Queued::new(packet, next)).is_some() {
            self.stats.dropped += 1;
        }
    }

    /// Takes the queue's next packet to transmit.
    pub fn dequeue(&mut self, now: Instant) -> Option<Queued> {
        let next = self.queue.dequeue(now);
        self.maybe_queued = !self.queue.is_empty();
        next
    }

    /// Whether the medium can take a frame from this interface now.
    pub fn is_ready(&self) -> bool {
        self.ready
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Data;
    use crate::packet::Payload;
    use crate::wire::udp::Datagram;

    fn item(port: u16) -> Queued {
        let d = Datagram::new(port, 9, Data::EMPTY);
        Queued::new(Packet::new(Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST, Payload::Udp(d)), Ipv4Addr::LOCALHOST)
    }

    fn port(q: &Queued) -> u16 {
        q.packet.flow().unwrap().src_port
    }

    #[test]
    fn drop_tail_keeps_order_drops_arrivals_and_flushes_by_predicate() {
        let mut q = DropTail::new(3);
        for p in 1..=3 {
            assert!(q.enqueue(Instant::ZERO, item(p)).is_none());
        }
        assert_eq!(q.enqueue(Instant::ZERO, item(4)).map(|d| port(&d)), Some(4));
        assert_eq!(q.get(1).map(port), Some(2));
        let flushed = q.flush(&mut |i| port(i) % 2 == 1);
        assert_eq!(flushed.iter().map(port).collect::<Vec<_>>(), vec![1, 3]);
        assert_eq!(q.len(), 1);
        assert_eq!(q.remove(0).map(|d| port(&d)), Some(2));
        assert!(q.dequeue(Instant::ZERO).is_none());
    }
}
