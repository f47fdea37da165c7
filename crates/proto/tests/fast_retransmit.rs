//! One loss in a window: exactly one fast retransmit, no timeout, and the
//! window halves (RFC 5681 section 3.2).

use ncmesh_proto::tcp::{TcpConfig, Variant};
use ncmesh_proto::testing::{drop_first_transmission, Link, Pair};
use ncmesh_proto::time::{Duration, Instant};

const MSS: u64 = 1000;

fn run(variant: Variant) {
    let config = TcpConfig { variant, initial_cwnd: 20, slow_start: false, rcv_window: 200, ..TcpConfig::default() };
    let fwd = Link::new(Duration::from_millis(25)).with_rate(10_000_000).with_drop(drop_first_transmission([30 * MSS]));
    let mut p = Pair::new(&config, fwd, Link::new(Duration::from_millis(25)));
    let total = 300 * MSS;
    p.push(total);

    // Step until the fast retransmit, remembering the state just before it.
    let (mut cwnd_before, mut outstanding_before) = (0, 0);
    while p.sender.stats().fast_retransmits == 0 {
        cwnd_before = p.sender.cwnd();
        outstanding_before = p.sender.snd_max() - p.sender.snd_una();
        assert!(p.step(), "idle before any fast retransmit");
    }
    // RFC 5681 section 3.2: the third duplicate ACK, not the fourth.
    assert_eq!(p.sender.stats().dupacks, 3, "duplicate ACKs before the fast retransmit");
    let ssthresh = p.sender.ssthresh();
    assert_eq!(ssthresh, outstanding_before / 2, "ssthresh = FlightSize / 2");
    assert!(ssthresh.abs_diff(cwnd_before / 2) <= MSS, "cwnd {cwnd_before} -> ssthresh {ssthresh}");
    assert!(p.sender.in_recovery());
    // Window inflation: ssthresh + 3 MSS on entry.
    assert_eq!(p.sender.cwnd(), ssthresh + 3 * MSS);

    // The retransmission goes out at once, whatever the window.
    let retx = p.retransmissions().collect::<Vec<_>>();
    assert_eq!(retx.len(), 1);
    assert_eq!(retx[0].seq, 30 * MSS);

    while p.sender.in_recovery() {
        assert!(p.step());
    }
    let exit_cwnd = p.sender.cwnd();
    assert!(exit_cwnd <= ssthresh && exit_cwnd + 2 * MSS >= ssthresh, "exit cwnd {exit_cwnd}, ssthresh {ssthresh}");
    if variant == Variant::Reno {
        assert_eq!(exit_cwnd, ssthresh);
    }

    assert!(p.run_to_finish(Instant::from_secs_f64(60.0)));
    let s = p.sender.stats();
    assert_eq!(s.fast_retransmits, 1);
    assert_eq!(s.retransmits, 1);
    assert_eq!(s.timeouts, 0);
    assert_eq!(p.delivered_bytes, total);
    assert_eq!(p.receiver.rcv_nxt(), total);
}

#[test]
fn reno_one_loss_one_fast_retransmit() {
    run(Variant::Reno);
}

#[test]
fn newreno_one_loss_one_fast_retransmit() {
    run(Variant::NewReno);
}

#[test]
fn sack_one_loss_one_fast_retransmit() {
    let config = TcpConfig { variant: Variant::Sack, initial_cwnd: 20, slow_start: false, ..TcpConfig::default() };
    let fwd = Link::new(Duration::from_millis(25)).with_drop(drop_first_transmission([30 * MSS]));
    let mut p = Pair::new(&config, fwd, Link::new(Duration::from_millis(25)));
    p.push(300 * MSS);
    while p.sender.stats().fast_retransmits == 0 {
        assert!(p.step(), "idle before any fast retransmit");
    }
    // RFC 6675 section 5: DupThresh = 3 segments SACKed above the hole.
    assert_eq!(p.sender.stats().dupacks, 3, "duplicate ACKs before the fast retransmit");
    assert!(p.run_to_finish(Instant::from_secs_f64(60.0)));
    let s = p.sender.stats();
    assert_eq!((s.fast_retransmits, s.retransmits, s.timeouts), (1, 1, 0));
    assert_eq!(p.delivered_bytes, 300 * MSS);
}
