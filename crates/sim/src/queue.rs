//! Interface output queues, behind the trait that active queue management
//! (NCAQM) implements.

use ncmesh_proto::Packet;
use ncmesh_proto::Instant;
use std::collections::VecDeque;
use std::fmt::Debug;

/// A queue discipline: decides what waits for the link and in which order.
pub trait QueueDisc: Debug + Send {
    /// Offers a packet; gives it back when the discipline drops it on arrival.
    #[allow(clippy::result_large_err)] // handing the packet back is the point, and it moves once
    fn enqueue(&mut self, now: Instant, packet: Packet) -> Result<(), Packet>;
    /// The next packet to transmit.
    fn dequeue(&mut self, now: Instant) -> Option<Packet>;
    /// Packets waiting.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// First in, first out, dropping arrivals when `capacity` packets wait.
#[derive(Debug)]
pub struct DropTail {
    packets: VecDeque<Packet>,
    capacity: usize,
}

impl DropTail {
    pub fn new(capacity: usize) -> DropTail {
        DropTail { packets: VecDeque::with_capacity(capacity.min(1024)), capacity }
    }
}

impl QueueDisc for DropTail {
    #[allow(clippy::result_large_err)]
    fn enqueue(&mut self, _now: Instant, packet: Packet) -> Result<(), Packet> {
        if self.packets.len() >= self.capacity {
            return Err(packet);
        }
        self.packets.push_back(packet);
        Ok(())
    }

    fn dequeue(&mut self, _now: Instant) -> Option<Packet> {
        self.packets.pop_front()
    }

    fn len(&self) -> usize {
        self.packets.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ncmesh_proto::{Body, Direction};

    fn packet(flow: u32) -> Packet {
        Packet { flow, direction: Direction::Forward, bytes: 100, body: Body::Udp { payload: 72, sent_at: Instant::ZERO } }
    }

    #[test]
    fn drop_tail_keeps_order_and_drops_arrivals_when_full() {
        let mut q = DropTail::new(2);
        assert!(q.enqueue(Instant::ZERO, packet(1)).is_ok());
        assert!(q.enqueue(Instant::ZERO, packet(2)).is_ok());
        assert_eq!(q.enqueue(Instant::ZERO, packet(3)).unwrap_err().flow, 3);
        assert_eq!(q.dequeue(Instant::ZERO).unwrap().flow, 1);
        assert_eq!(q.dequeue(Instant::ZERO).unwrap().flow, 2);
        assert!(q.dequeue(Instant::ZERO).is_none());
    }
}
