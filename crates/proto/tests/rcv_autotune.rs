//! The autotuned receive window (`rcv_autotune`, the linux profile) against
//! fixed ones on a long fat path: it starts at half the 131072-byte buffer,
//! as Linux does, and grows within a few round trips to what the sender
//! needs, so the path fills as it would with a large fixed window and not as
//! with the first window kept.

use ncmesh_proto::tcp::{Profile, TcpConfig};
use ncmesh_proto::testing::{Link, Pair};
use ncmesh_proto::time::{Duration, Instant};

/// 20 Mbit/s, 50 ms each way: a bandwidth-delay product of 250 KB, four
/// times the first window.
fn run(autotune: bool, rcv_window: u32) -> Pair {
    let config = TcpConfig { rcv_autotune: autotune, rcv_window, ..TcpConfig::profile(Profile::Linux) };
    let link = || Link::new(Duration::from_millis(50)).with_rate(20_000_000).with_queue_limit(1000);
    let mut p = Pair::new(&config, link(), link());
    p.push(u64::MAX / 4);
    p.run_until(Instant::from_secs_f64(10.0), |_| false);
    p
}

#[test]
fn the_window_grows_from_half_the_buffer_to_fill_the_path() {
    let tuned = run(true, 4096);
    let large = run(false, 4096);
    let first = run(false, 45);
    let buffer = tuned.receiver.autotune().map(|a| a.rcvbuf()).unwrap();
    assert!(buffer > 2 * 250_000, "the buffer grew to {buffer} bytes");
    let [tuned, large, first] = [tuned, large, first].map(|p| p.delivered_bytes as f64);
    assert!(tuned > 0.9 * large, "autotuned {tuned} against a 4096-segment window's {large}");
    assert!(tuned > 2.5 * first, "autotuned {tuned} against the first window's {first}");
}
