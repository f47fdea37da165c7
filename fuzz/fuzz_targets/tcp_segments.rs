//! Arbitrary segments thrown at both TCP endpoints, as a hostile or broken
//! peer would send them, mixed with the endpoints' own segments delivered
//! or lost as the input says: nothing panics, the timers stay in the future
//! once due timeouts are handled, and the sender's counters stay ordered
//! (snd_una <= snd_max) while the receiver's rcv_nxt never goes back.
#![no_main]

use ncmesh_proto::data::Data;
use ncmesh_proto::params::Validate;
use ncmesh_proto::tcp::{
    Connection, Flags, SackBlock, Segment, TcpConfig, TcpReceiver, TcpSender, Timestamps, Variant, MAX_SACK_BLOCKS,
};
use ncmesh_proto::{Duration, Instant};

/// Reads the input front to back; past its end every read is zero.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0; N];
        let n = N.min(self.0.len());
        out[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        out
    }
    fn u8(&mut self) -> u8 {
        self.take::<1>()[0]
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.take())
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
}

/// A sequence number near `base`, or anywhere at all: a peer may be confused
/// (small offsets), stale (behind) or hostile (any value, across the wrap).
fn seq_near(b: &mut Bytes, base: u32) -> u32 {
    match b.u8() % 4 {
        0 => b.u32(),
        1 => base.wrapping_sub(b.u16() as u32),
        _ => base.wrapping_add(b.u32() % (1 << 22)),
    }
}

fn arbitrary_segment(b: &mut Bytes, ports: (u16, u16), seq_base: u32, ack_base: u32) -> Segment {
    let mut s = Segment::new(ports.0, ports.1);
    s.seq = seq_near(b, seq_base);
    s.ack = seq_near(b, ack_base);
    s.flags = Flags(b.u8());
    s.window = b.u16();
    let options = b.u8();
    if options & 1 != 0 {
        s.timestamp = Some(Timestamps { value: b.u32(), echo: b.u32() });
    }
    let blocks = ((options >> 1) as usize % (MAX_SACK_BLOCKS + 1)).min(MAX_SACK_BLOCKS);
    for k in 0..blocks {
        let start = seq_near(b, ack_base);
        s.sack[k] = SackBlock { start, end: start.wrapping_add(b.u16() as u32) };
    }
    s.sack_len = blocks as u8;
    let len = (b.u16() % 3000) as u32;
    s.data = if options & 0x40 != 0 { Data::Real(vec![0xA5; len as usize]) } else { Data::Virtual { len, offset: 0 } };
    s
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let knobs = b.u8();
    let variant =
        [Variant::Reno, Variant::NewReno, Variant::Sack, Variant::Vegas, Variant::Cubic][(knobs % 5) as usize];
    let config = TcpConfig {
        variant,
        sack: knobs & 0x08 != 0,
        timestamps: knobs & 0x10 != 0,
        delayed_ack: knobs & 0x20 != 0,
        reset_backoff_on_new_ack: knobs & 0x40 != 0,
        slow_start: knobs & 0x80 == 0,
        mss: 1 + (b.u16() % 1500) as u32,
        rcv_window: 1 + (b.u8() % 128) as u32,
        initial_cwnd: 1 + (b.u8() % 10) as u32,
        dupthresh: 1 + (b.u8() % 5) as u32,
        ..TcpConfig::default()
    };
    if config.validate().is_err() {
        return;
    }
    // ISNs from the input, so that sequence numbers wrap anywhere.
    let conn = Connection { local_port: 10_000, remote_port: 5001, local_isn: b.u32(), remote_isn: b.u32() };
    let mut sender = TcpSender::new(&config, conn);
    let mut receiver = TcpReceiver::new(&config, conn.reversed());
    sender.push(1 + (b.u32() % (1 << 22)) as u64);

    let mut now = Instant::ZERO;
    let mut to_receiver: Vec<Segment> = Vec::new();
    let mut to_sender: Vec<Segment> = Vec::new();
    let mut last_rcv_nxt = 0;
    while !b.0.is_empty() {
        now += Duration::from_micros(b.u16() as u64 * 20);
        let action = b.u8();
        match action % 4 {
            // A segment of the peer's own, delivered (or lost, by the next bit).
            0 => {
                let newest = action & 0x40 != 0;
                if let Some(s) =
                    if newest { to_sender.pop() } else { (!to_sender.is_empty()).then(|| to_sender.remove(0)) }
                {
                    if action & 0x10 == 0 {
                        sender.handle_ack(now, &s);
                    }
                }
                if let Some(s) =
                    if newest { to_receiver.pop() } else { (!to_receiver.is_empty()).then(|| to_receiver.remove(0)) }
                {
                    if action & 0x20 == 0 {
                        receiver.handle_segment(now, &s);
                    }
                }
            }
            // An arbitrary ACK at the sender.
            1 => {
                let s = arbitrary_segment(
                    &mut b,
                    (conn.remote_port, conn.local_port),
                    conn.remote_isn,
                    conn.local_isn.wrapping_add(sender.snd_una() as u32),
                );
                sender.handle_ack(now, &s);
            }
            // An arbitrary data segment at the receiver.
            2 => {
                let s = arbitrary_segment(
                    &mut b,
                    (conn.local_port, conn.remote_port),
                    conn.local_isn.wrapping_add(receiver.rcv_nxt() as u32),
                    conn.remote_isn,
                );
                receiver.handle_segment(now, &s);
            }
            // The application closes, or offers more.
            _ => {
                if action & 0x80 != 0 {
                    sender.close();
                } else {
                    sender.push(b.u16() as u64);
                }
            }
        }
        if sender.poll_timeout().is_some_and(|t| t <= now) {
            sender.handle_timeout(now);
        }
        if receiver.poll_timeout().is_some_and(|t| t <= now) {
            receiver.handle_timeout(now);
        }
        while let Some(s) = sender.poll_transmit(now) {
            to_receiver.push(s);
        }
        while let Some(s) = receiver.poll_transmit(now) {
            to_sender.push(s);
        }
        while receiver.poll_delivery().is_some() {}
        to_receiver.truncate(256);
        to_sender.truncate(256);

        assert!(sender.poll_timeout().is_none_or(|t| t > now), "sender timer {:?} at {now:?}", sender.poll_timeout());
        assert!(
            receiver.poll_timeout().is_none_or(|t| t > now),
            "receiver timer {:?} at {now:?}",
            receiver.poll_timeout()
        );
        assert!(sender.snd_una() <= sender.snd_max());
        assert!(receiver.rcv_nxt() >= last_rcv_nxt);
        last_rcv_nxt = receiver.rcv_nxt();
    }
});
