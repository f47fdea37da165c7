//! A deterministic two-endpoint harness, in the style of quinn-proto's
//! `Pair`: a [`TcpSender`] and a [`TcpReceiver`] joined by two one-way
//! [`Link`]s under virtual time. Not part of the API; integration tests use it.

pub mod mesh;

use std::collections::{HashSet, VecDeque};
use std::fmt;

use crate::data::Data;
use crate::tcp::{Connection, Delivery, Flags, SackBlock, Segment, TcpConfig, TcpReceiver, TcpSender};
use crate::time::{Duration, Instant};

/// Ports 1 and 2, initial sequence numbers 0: for a sender driven by hand.
pub const CONN: Connection = Connection { local_port: 1, remote_port: 2, local_isn: 0, remote_isn: 0 };

/// Every segment `sender` will send at `now`.
pub fn drain(sender: &mut TcpSender, now: Instant) -> Vec<Segment> {
    std::iter::from_fn(|| sender.poll_transmit(now)).collect()
}

/// A pure ACK to [`CONN`]'s sender of `n` bytes, announcing `window`
/// bytes, with SACK blocks `[start, end)`.
pub fn ack(n: u64, window: u16, blocks: &[(u64, u64)]) -> Segment {
    let mut a = Segment::new(CONN.remote_port, CONN.local_port);
    a.flags = Flags::ACK;
    a.ack = n as u32;
    a.window = window;
    for (i, &(start, end)) in blocks.iter().enumerate() {
        a.sack[i] = SackBlock { start: start as u32, end: end as u32 };
    }
    a.sack_len = blocks.len() as u8;
    a
}

/// Where a data segment starts in the stream: the sender's segments carry
/// virtual data that says so, whatever the initial sequence number.
pub fn offset_of(seg: &Segment) -> Option<u64> {
    match seg.data {
        Data::Virtual { len, offset } if len > 0 => Some(offset),
        _ => None,
    }
}

/// Decides whether a link loses a packet, before it is queued.
pub type DropFn = Box<dyn FnMut(Instant, &Segment) -> bool>;

/// Never drops.
pub fn drop_none() -> DropFn {
    Box::new(|_, _| false)
}

/// Drops the first transmission of each data segment starting at one of `seqs`.
pub fn drop_first_transmission(seqs: impl IntoIterator<Item = u64>) -> DropFn {
    let mut pending: HashSet<u64> = seqs.into_iter().collect();
    Box::new(move |_, s| offset_of(s).is_some_and(|o| pending.remove(&o)))
}

/// Drops every packet sent in `[from, to)`.
pub fn drop_between(from: Instant, to: Instant) -> DropFn {
    Box::new(move |now, _| now >= from && now < to)
}

/// Drops each packet independently with probability `p`.
pub fn drop_bernoulli(p: f64, seed: u64) -> DropFn {
    let mut rng = SplitMix64(seed);
    Box::new(move |_, _| rng.next_f64() < p)
}

/// A small seeded generator (SplitMix64), so that runs repeat exactly.
#[derive(Clone, Debug)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A one-way pipe: optional loss, an optional FIFO bottleneck of `rate`
/// bits per second with a drop-tail limit of `queue_limit` packets
/// (including the one being serialised), then a fixed propagation delay.
pub struct Link {
    pub delay: Duration,
    pub rate: Option<u64>,
    pub queue_limit: Option<usize>,
    pub drop: DropFn,
    /// Packets lost to `drop`.
    pub dropped: u64,
    /// Packets lost to a full queue.
    pub overflowed: u64,
    pub carried: u64,
    free_at: Instant,
    /// When each queued packet finishes serialisation.
    departures: VecDeque<Instant>,
    in_transit: VecDeque<(Instant, Segment)>,
}

impl fmt::Debug for Link {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Link")
            .field("delay", &self.delay)
            .field("rate", &self.rate)
            .field("queue_limit", &self.queue_limit)
            .field("dropped", &self.dropped)
            .field("overflowed", &self.overflowed)
            .field("in_transit", &self.in_transit.len())
            .finish()
    }
}

impl Link {
    pub fn new(delay: Duration) -> Link {
        Link {
            delay,
            rate: None,
            queue_limit: None,
            drop: drop_none(),
            dropped: 0,
            overflowed: 0,
            carried: 0,
            free_at: Instant::ZERO,
            departures: VecDeque::new(),
            in_transit: VecDeque::new(),
        }
    }

    pub fn with_rate(mut self, bits_per_s: u64) -> Link {
        self.rate = Some(bits_per_s);
        self
    }

    pub fn with_queue_limit(mut self, packets: usize) -> Link {
        self.queue_limit = Some(packets);
        self
    }

    pub fn with_drop(mut self, drop: DropFn) -> Link {
        self.drop = drop;
        self
    }

    /// Packets queued or being serialised at `now`.
    pub fn queue_len(&mut self, now: Instant) -> usize {
        while self.departures.front().is_some_and(|&d| d <= now) {
            self.departures.pop_front();
        }
        self.departures.len()
    }

    pub fn send(&mut self, now: Instant, seg: Segment) {
        if (self.drop)(now, &seg) {
            self.dropped += 1;
            return;
        }
        let done = match self.rate {
            None => now,
            Some(rate) => {
                if self.queue_limit.is_some_and(|l| self.queue_len(now) >= l) {
                    self.overflowed += 1;
                    return;
                }
                let start = self.free_at.max(now);
                let done = start + Duration::transmission(seg.wire_len() as u64 + 20, rate);
                self.free_at = done;
                self.departures.push_back(done);
                done
            }
        };
        self.carried += 1;
        self.in_transit.push_back((done + self.delay, seg));
    }

    pub fn next_arrival(&self) -> Option<Instant> {
        self.in_transit.front().map(|&(t, _)| t)
    }

    fn pop_arrival(&mut self) -> Option<Segment> {
        self.in_transit.pop_front().map(|(_, s)| s)
    }
}

/// One data segment as the sender emitted it.
#[derive(Clone, Copy, Debug)]
pub struct Sent {
    pub at: Instant,
    /// Where it starts in the stream.
    pub seq: u64,
    pub len: u32,
    /// The sender had sent these bytes before.
    pub retransmission: bool,
}

/// A sender and a receiver, two links and a virtual clock.
#[derive(Debug)]
pub struct Pair {
    pub now: Instant,
    pub sender: TcpSender,
    pub receiver: TcpReceiver,
    pub forward: Link,
    pub reverse: Link,
    /// Every data segment sent, in order.
    pub sent: Vec<Sent>,
    /// Every delivery, with its time.
    pub deliveries: Vec<(Instant, Delivery)>,
    pub delivered_bytes: u64,
    high_sent: u64,
}

impl Pair {
    pub fn new(config: &TcpConfig, forward: Link, reverse: Link) -> Pair {
        Pair::with_isns(config, 0, 0, forward, reverse)
    }

    /// A pair whose ends are configured apart, as two hosts are.
    pub fn with_configs(sender: &TcpConfig, receiver: &TcpConfig, forward: Link, reverse: Link) -> Pair {
        let mut p = Pair::new(sender, forward, reverse);
        p.receiver = TcpReceiver::new(receiver, Pair::connection(0, 0).reversed());
        p
    }

    fn connection(sender_isn: u32, receiver_isn: u32) -> Connection {
        Connection { local_port: 10_000, remote_port: 5001, local_isn: sender_isn, remote_isn: receiver_isn }
    }

    /// A pair whose ends start their sequence numbers at `sender_isn` and `receiver_isn`.
    pub fn with_isns(config: &TcpConfig, sender_isn: u32, receiver_isn: u32, forward: Link, reverse: Link) -> Pair {
        let conn = Pair::connection(sender_isn, receiver_isn);
        Pair {
            now: Instant::ZERO,
            sender: TcpSender::new(config, conn),
            receiver: TcpReceiver::new(config, conn.reversed()),
            forward,
            reverse,
            sent: Vec::new(),
            deliveries: Vec::new(),
            delivered_bytes: 0,
            high_sent: 0,
        }
    }

    /// The application offers `bytes` more; segments go out at once.
    pub fn push(&mut self, bytes: u64) {
        self.sender.push(bytes);
        self.flush();
    }

    /// Drains both endpoints into the links and the delivery log.
    pub fn flush(&mut self) {
        let now = self.now;
        while let Some(ack) = self.receiver.poll_transmit(now) {
            self.reverse.send(now, ack);
        }
        while let Some(d) = self.receiver.poll_delivery() {
            self.delivered_bytes += d.data.len() as u64;
            self.deliveries.push((now, d));
        }
        while let Some(seg) = self.sender.poll_transmit(now) {
            let Some(seq) = offset_of(&seg) else {
                // A SYN, the handshake's ACK or a FIN.
                self.forward.send(now, seg);
                continue;
            };
            let retransmission = seq < self.high_sent;
            self.high_sent = self.high_sent.max(seq + seg.len() as u64);
            self.sent.push(Sent { at: now, seq, len: seg.len(), retransmission });
            self.forward.send(now, seg);
        }
    }

    /// The time of the next event, if any.
    pub fn next_event(&self) -> Option<Instant> {
        [
            self.forward.next_arrival(),
            self.reverse.next_arrival(),
            self.sender.poll_timeout(),
            self.receiver.poll_timeout(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Runs the earliest event: an arrival, else a timer. False when idle.
    pub fn step(&mut self) -> bool {
        let Some(t) = self.next_event() else { return false };
        self.now = self.now.max(t);
        let now = self.now;
        if self.forward.next_arrival().is_some_and(|a| a <= now) {
            let seg = self.forward.pop_arrival().unwrap();
            self.receiver.handle_segment(now, &seg);
        } else if self.reverse.next_arrival().is_some_and(|a| a <= now) {
            let seg = self.reverse.pop_arrival().unwrap();
            self.sender.handle_ack(now, &seg);
        } else if self.sender.poll_timeout().is_some_and(|d| d <= now) {
            self.sender.handle_timeout(now);
        } else {
            self.receiver.handle_timeout(now);
        }
        self.flush();
        true
    }

    /// Steps until `stop` holds, the pair goes idle or the clock passes `deadline`.
    /// Returns whether `stop` held.
    pub fn run_until(&mut self, deadline: Instant, mut stop: impl FnMut(&Pair) -> bool) -> bool {
        loop {
            if stop(self) {
                return true;
            }
            if self.next_event().is_none_or(|t| t > deadline) || !self.step() {
                return stop(self);
            }
        }
    }

    /// Runs until the sender has every pushed byte acknowledged.
    pub fn run_to_finish(&mut self, deadline: Instant) -> bool {
        self.run_until(deadline, |p| p.sender.is_finished())
    }

    /// Data transmissions of the segment starting at `seq`.
    pub fn transmissions_of(&self, seq: u64) -> Vec<Instant> {
        self.sent.iter().filter(|s| s.seq == seq).map(|s| s.at).collect()
    }

    pub fn retransmissions(&self) -> impl Iterator<Item = &Sent> {
        self.sent.iter().filter(|s| s.retransmission)
    }
}
