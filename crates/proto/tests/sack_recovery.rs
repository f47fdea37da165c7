//! Several holes in one window: SACK recovery (RFC 6675) resends each hole
//! exactly once, all within about one RTT of entering recovery, where
//! NewReno needs one RTT per hole.

use ncmesh_proto::tcp::{TcpConfig, Variant};
use ncmesh_proto::testing::{drop_first_transmission, Link, Pair};
use ncmesh_proto::time::{Duration, Instant};

const MSS: u64 = 1000;
const HOLES: [u64; 4] = [4 * MSS, 8 * MSS, 12 * MSS, 16 * MSS];
/// Two 25 ms propagation delays.
const BASE_RTT: Duration = Duration::from_millis(50);

/// Runs to the end; returns the pair and the recovery's entry and exit times.
fn run(variant: Variant) -> (Pair, Instant, Instant) {
    let config = TcpConfig { variant, initial_cwnd: 20, slow_start: false, rcv_window: 200, ..TcpConfig::default() };
    let fwd = Link::new(Duration::from_millis(25)).with_rate(10_000_000).with_drop(drop_first_transmission(HOLES));
    let mut p = Pair::new(&config, fwd, Link::new(Duration::from_millis(25)));
    p.push(200 * MSS);
    let (mut entry, mut exit) = (None, None);
    while !p.sender.is_finished() {
        let was = p.sender.in_recovery();
        assert!(p.step());
        assert!(p.now < Instant::from_secs_f64(30.0));
        match (was, p.sender.in_recovery()) {
            (false, true) => entry = entry.or(Some(p.now)),
            (true, false) => exit = Some(p.now),
            _ => {}
        }
    }
    (p, entry.unwrap(), exit.unwrap())
}

#[test]
fn every_hole_resent_once_within_one_rtt() {
    let (p, entry, exit) = run(Variant::Sack);
    let s = p.sender.stats();
    assert_eq!(s.fast_retransmits, 1);
    assert_eq!(s.timeouts, 0);
    assert_eq!(s.retransmits, HOLES.len() as u64);
    for h in HOLES {
        let tx = p.transmissions_of(h);
        assert_eq!(tx.len(), 2, "hole at {h}");
        assert!(tx[1] >= entry && tx[1] <= entry + BASE_RTT, "hole {h} resent at {}", tx[1]);
    }
    // The last repair is acknowledged one RTT (plus queueing) after it is sent.
    assert!(exit <= entry + BASE_RTT + BASE_RTT, "recovery lasted {}", exit - entry);
    assert_eq!(p.delivered_bytes, 200 * MSS);
    assert_eq!(p.sender.sacked_bytes(), 0);
}

#[test]
fn newreno_takes_an_rtt_per_hole_for_comparison() {
    let (p, entry, exit) = run(Variant::NewReno);
    assert_eq!(p.sender.stats().timeouts, 0);
    assert!(exit - entry >= BASE_RTT.saturating_mul(HOLES.len() as u64), "recovery lasted {}", exit - entry);
}
