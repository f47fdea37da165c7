//! ns-3's connection abort (`TcpSocketBase::ReTxTimeout`): after
//! `DataRetries` (our `max_timeouts`) retransmissions by timeout in a row,
//! the next timeout closes the connection.

use ncmesh_proto::tcp::{Phase, Profile, TcpConfig};
use ncmesh_proto::testing::{drop_between, Link, Pair};
use ncmesh_proto::time::{Duration, Instant};

fn blackout(config: &TcpConfig) -> Pair {
    let from = Instant::from_secs_f64(2.0);
    let fwd = Link::new(Duration::from_millis(25)).with_drop(drop_between(from, Instant::from_secs_f64(1e6)));
    let mut p = Pair::new(config, fwd, Link::new(Duration::from_millis(25)));
    p.push(u64::MAX);
    p.run_until(Instant::from_secs_f64(2000.0), |_| false);
    p
}

#[test]
fn the_seventh_timeout_in_a_row_aborts_an_ns3_connection() {
    let config = TcpConfig { mss: 1000, rcv_window: 100, ..TcpConfig::profile(Profile::Ns3) };
    let p = blackout(&config);
    assert_eq!(p.sender.phase(), Phase::Aborted);
    assert_eq!(p.sender.stats().timeouts, 7, "DataRetries = 6 retransmissions, then the end");
    assert_eq!(p.sender.poll_timeout(), None);
    assert_eq!(p.next_event(), None, "nothing is sent after the abort");
}

#[test]
fn an_ack_of_new_data_starts_the_count_again() {
    let config = TcpConfig { mss: 1000, max_timeouts: 3, ..TcpConfig::profile(Profile::Ns3) };
    // Two blackouts of three timeouts each, with a recovery between: no abort.
    let t = Instant::from_secs_f64;
    let windows = [(t(2.0), t(8.0)), (t(20.0), t(26.0))];
    let drop = Box::new(move |now: Instant, _: &_| windows.iter().any(|&(a, b)| now >= a && now < b));
    let fwd = Link::new(Duration::from_millis(25)).with_drop(drop);
    let mut p = Pair::new(&config, fwd, Link::new(Duration::from_millis(25)));
    p.push(u64::MAX);
    p.run_until(t(60.0), |_| false);
    assert_eq!(p.sender.phase(), Phase::Established);
    assert!(p.sender.stats().timeouts >= 6, "{:?}", p.sender.stats());
}

#[test]
fn zero_means_never() {
    let config = TcpConfig { mss: 1000, max_timeouts: 0, ..TcpConfig::profile(Profile::Ns3) };
    let p = blackout(&config);
    assert_eq!(p.sender.phase(), Phase::Established);
    assert!(p.sender.stats().timeouts > 7);
}
