//! Arbitrary segments thrown at both TCP endpoints, as a hostile or broken
//! peer would send them: nothing panics and the timers stay in the future.
#![no_main]

use ncmesh_proto::tcp::{SackBlock, Segment, TcpConfig, TcpReceiver, TcpSender};
use ncmesh_proto::{Duration, Instant};

fn u64_at(d: &[u8], i: usize) -> u64 {
    let mut b = [0u8; 8];
    for (k, x) in b.iter_mut().enumerate() {
        *x = d.get(i + k).copied().unwrap_or(0);
    }
    u64::from_le_bytes(b)
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let config = TcpConfig { sack: data.first().is_some_and(|b| b & 1 == 1), ..TcpConfig::default() };
    let mut sender = TcpSender::new(&config, Instant::ZERO);
    let mut receiver = TcpReceiver::new(&config);
    sender.push(1 << 20);
    let mut now = Instant::ZERO;
    for chunk in data.chunks(40) {
        now += Duration::from_millis(u64_at(chunk, 0) % 500);
        while sender.poll_transmit(now).is_some() {}
        let mut segment = Segment::ack(u64_at(chunk, 8) % (1 << 22), (u64_at(chunk, 16) % (1 << 20)) as u32);
        let blocks = (chunk.get(24).copied().unwrap_or(0) % 5) as usize;
        for k in 0..blocks.min(4) {
            let start = u64_at(chunk, 25 + k) % (1 << 22);
            segment.sack[k] = SackBlock { start, end: start + u64_at(chunk, 29 + k) % 10_000 };
        }
        segment.sack_len = blocks.min(4) as u8;
        sender.handle_ack(now, &segment);
        if sender.poll_timeout().is_some_and(|t| t <= now) {
            sender.handle_timeout(now);
        }
        let data_segment = Segment::data(u64_at(chunk, 8) % (1 << 22), (u64_at(chunk, 16) % 2000) as u32, now);
        receiver.handle_segment(now, &data_segment);
        while receiver.poll_transmit(now).is_some() {}
        while receiver.poll_delivery().is_some() {}
        if receiver.poll_timeout().is_some_and(|t| t <= now) {
            receiver.handle_timeout(now);
        }
    }
});
