//! ncmesh's TCP over the lossy chain of docs/validation.md with ns-3's own
//! loss draws, so that the two stacks meet the same losses packet for packet
//! as long as they send the same packets.
//!
//! The chain is one pipe: five 1 Mbit/s, 100 ms hops whose first one queues
//! (50 packets) and whose other four add their serialisation (8.432 ms for
//! ns-3's 1054-byte data packets) to the propagation delay; ACKs come back
//! over five lossless hops. Each forward packet meets hop 1's next draw, and
//! if it survives hop 2's, and so on: ns-3's `RateErrorModel` on each hop's
//! receiving device, one `UniformRandomVariable` stream per hop. The draws
//! come from `python -m ncmesh.experiments.stacks ns3-draws`, as
//! little-endian f64, hop by hop; `seed=N` in place of the file draws them
//! independently (the harness's SplitMix64 seeded with N).
//!
//! ```sh
//! cargo run --release -p ncmesh-proto --example ns3_replay -- DRAWS LOSS [SECONDS] [trace] [KEY=VALUE ...]
//! ```
//!
//! prints the goodput and the sender's counters; `trace` first prints every
//! data segment sent, window change, recovery and timeout, with its time.
//! `KEY=VALUE` changes one of the `ns3` profile's settings from ns-3's
//! behaviour: `ca_counting=bytes`, or `false` for `rto_exit_beyond_point`,
//! `keep_sack_after_rto`, `rto_clears_rtt_history` or `prr_dupack_credit`.

use std::io::Write;

use ncmesh_proto::tcp::{Counting, Profile, TcpConfig};
use ncmesh_proto::testing::{Link, Pair};
use ncmesh_proto::time::{Duration, Instant};

const HOPS: usize = 5;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: ns3_replay DRAWS LOSS [SECONDS] [trace]");
        std::process::exit(2);
    }
    // `seed=N`: independent draws from the harness's SplitMix64 instead of ns-3's.
    let bytes = match args[1].strip_prefix("seed=") {
        Some(seed) => {
            let mut rng = ncmesh_proto::testing::SplitMix64(seed.parse().expect("seed=N"));
            (0..HOPS * 60_000).flat_map(|_| rng.next_f64().to_le_bytes()).collect()
        }
        None => std::fs::read(&args[1]).expect("the draws file"),
    };
    let loss: f64 = args[2].parse().expect("LOSS");
    let duration: f64 = args.get(3).map_or(300.0, |d| d.parse().expect("SECONDS"));
    let trace = args.iter().skip(4).any(|a| a == "trace");
    let values: Vec<f64> = bytes.chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().unwrap())).collect();
    let per_hop = values.len() / HOPS;
    let mut next = [0usize; HOPS];
    let drop = Box::new(move |_: Instant, _: &_| {
        for (hop, i) in next.iter_mut().enumerate() {
            let draw = values[hop * per_hop + *i];
            *i += 1;
            if draw < loss {
                return true;
            }
        }
        false
    });
    let mut config = TcpConfig { mss: 1000, rcv_window: 131, ..TcpConfig::profile(Profile::Ns3) };
    for setting in args.iter().skip(4).filter_map(|a| a.split_once('=')) {
        let on = setting.1 == "true";
        match setting.0 {
            "ca_counting" => config.ca_counting = if setting.1 == "bytes" { Counting::Bytes } else { Counting::Acks },
            "rto_exit_beyond_point" => config.rto_exit_beyond_point = on,
            "keep_sack_after_rto" => config.keep_sack_after_rto = on,
            "rto_clears_rtt_history" => config.rto_clears_rtt_history = on,
            "prr_dupack_credit" => config.prr_dupack_credit = on,
            other => panic!("unknown setting {other}"),
        }
    }
    // Hop 1 queues and serialises; hops 2-5 add 100 ms and 8.432 ms each.
    let forward = Link::new(Duration::from_micros(533_728)).with_rate(1_000_000).with_queue_limit(50).with_drop(drop);
    let reverse = Link::new(Duration::from_micros(501_730)).with_rate(1_000_000);
    let mut p = Pair::new(&config, forward, reverse);
    p.push(u64::MAX);
    let end = Instant::from_secs_f64(duration);
    let mut out = std::io::BufWriter::new(std::io::stdout());
    let (mut recovering, mut timeouts, mut window, mut logged) = (false, 0, (0, 0), 0);
    while p.next_event().is_some_and(|t| t <= end) {
        p.step();
        if !trace {
            continue;
        }
        let s = &p.sender;
        let t = p.now.as_secs_f64();
        if s.stats().timeouts != timeouts {
            timeouts = s.stats().timeouts;
            writeln!(out, "{t:.6} TIMEOUT").unwrap();
        }
        if s.in_recovery() != recovering {
            recovering = s.in_recovery();
            writeln!(out, "{t:.6} {}", if recovering { "RECOVERY" } else { "OPEN" }).unwrap();
        }
        if (s.cwnd(), s.ssthresh()) != window {
            window = (s.cwnd(), s.ssthresh());
            let rto = s.rto().as_secs_f64();
            writeln!(out, "{t:.6} CWND {} SSTHRESH {} RTO {rto:.4}", window.0, window.1).unwrap();
        }
        for x in &p.sent[logged..] {
            let kind = if x.retransmission { "R" } else { "N" };
            // ns-3's sequence numbers: the SYN takes 0.
            writeln!(out, "{:.6} TX {} {kind}", x.at.as_secs_f64(), x.seq + 1).unwrap();
        }
        logged = p.sent.len();
    }
    let st = p.sender.stats();
    writeln!(
        out,
        "goodput_bps {:.1} segments {} retransmits {} timeouts {} fast_recoveries {}",
        p.delivered_bytes as f64 * 8.0 / duration,
        st.segments_sent,
        st.retransmits,
        st.timeouts,
        st.fast_retransmits
    )
    .unwrap();
}
