//! Proportional Rate Reduction (RFC 6937, revised by RFC 9937): sending
//! during recovery tracks delivery, at ssthresh/RecoverFS of it while pipe
//! is above ssthresh; below, the conservative bound, and one MSS more on an
//! ACK that advanced snd.una without showing a further loss.

use ncmesh_proto::tcp::{Prr, Recovery, TcpConfig, Variant};
use ncmesh_proto::testing::{drop_first_transmission, Link, Pair};
use ncmesh_proto::time::{Duration, Instant};

const MSS: u64 = 1000;

/// Section 6's first example: one loss in a window of 20 segments with
/// ssthresh 10. Each duplicate ACK delivers a segment; while pipe is above
/// ssthresh PRR sends one segment for every second of them (sndcnt is
/// half a segment per ACK), and when pipe has come down to ssthresh it
/// sends one per ACK, holding pipe there.
#[test]
fn one_loss_sends_every_other_ack() {
    let mut prr = Prr::start(20 * MSS);
    let (ssthresh, mut pipe, mut sent) = (10 * MSS, 19 * MSS, vec![]);
    for _ in 0..19 {
        pipe -= MSS; // a segment left the network
        let cwnd = prr.on_ack(MSS, pipe, ssthresh, MSS, false);
        let mut now = 0;
        while cwnd >= pipe + MSS {
            prr.on_send(MSS);
            pipe += MSS;
            now += 1;
        }
        sent.push(now);
    }
    // floor(k * 10 / 20) whole segments by the k-th ACK while pipe > ssthresh.
    assert_eq!(sent[..14], [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1]);
    assert_eq!(sent[16..], [1, 1, 1], "at ssthresh, one for one");
    assert_eq!(pipe, ssthresh, "recovery ends with pipe at ssthresh, no burst");
}

/// Below ssthresh: the conservative bound lets out what was delivered and
/// not yet sent; a safe ACK (snd.una advanced, no new loss) one MSS more,
/// the slow-start reduction bound of RFC 9937; never past ssthresh.
#[test]
fn below_ssthresh_the_window_regrows_by_at_most_one_segment_per_ack() {
    let ssthresh = 10 * MSS;
    // Heavy loss: pipe is 2 segments when the first ACK delivers one.
    let mut prr = Prr::start(20 * MSS);
    assert_eq!(prr.on_ack(MSS, 2 * MSS, ssthresh, MSS, false), 3 * MSS, "conservative: one for one");
    let mut prr = Prr::start(20 * MSS);
    assert_eq!(prr.on_ack(MSS, 2 * MSS, ssthresh, MSS, true), 4 * MSS, "a safe ACK: one more");
    prr.on_send(2 * MSS);
    // Everything delivered has been sent: a safe ACK delivering nothing lets out one MSS only.
    assert_eq!(prr.on_ack(0, 4 * MSS, ssthresh, MSS, true), 5 * MSS);
    assert_eq!(prr.on_ack(0, 4 * MSS, ssthresh, MSS, false), 4 * MSS);
    // And never past ssthresh.
    assert_eq!(prr.on_ack(5 * MSS, 9 * MSS, ssthresh, MSS, true), ssthresh);
}

fn recovery_sends(recovery: Recovery) -> (Vec<(Instant, u64)>, u64, u64) {
    let config = TcpConfig {
        variant: Variant::Sack,
        recovery: Some(recovery),
        initial_cwnd: 20,
        slow_start: false,
        rcv_window: 200,
        ..TcpConfig::default()
    };
    let fwd = Link::new(Duration::from_millis(25)).with_rate(10_000_000).with_drop(drop_first_transmission([40 * MSS]));
    let mut p = Pair::new(&config, fwd, Link::new(Duration::from_millis(25)));
    p.push(400 * MSS);
    while p.sender.stats().fast_retransmits == 0 {
        assert!(p.step());
    }
    let entered = p.sent.len();
    while p.sender.in_recovery() {
        assert!(p.step());
    }
    let during: Vec<(Instant, u64)> = p.sent[entered..].iter().map(|s| (s.at, s.seq)).collect();
    let (exit_cwnd, ssthresh) = (p.sender.cwnd(), p.sender.ssthresh());
    assert!(p.run_to_finish(Instant::from_secs_f64(30.0)));
    assert_eq!(p.sender.stats().timeouts, 0);
    assert_eq!(exit_cwnd, ssthresh, "{recovery:?} ends at ssthresh");
    (during, ssthresh, p.sender.stats().retransmits)
}

#[test]
fn prr_spreads_what_rfc6675_holds_back_then_bursts() {
    let (prr, ssthresh, retx) = recovery_sends(Recovery::Prr);
    let (rfc6675, _, _) = recovery_sends(Recovery::Sack);
    assert_eq!(retx, 1);
    // RFC 6675 waits until pipe falls below cwnd = ssthresh: half the
    // duplicate ACKs go unanswered. PRR answers from the second one on.
    let first_new = |sends: &[(Instant, u64)]| sends.iter().find(|s| s.1 > 40 * MSS).map(|s| s.0).unwrap();
    assert!(first_new(&prr) < first_new(&rfc6675), "PRR sends new data sooner");
    // Both send about ssthresh's worth during the recovery.
    for sends in [&prr, &rfc6675] {
        let n = sends.len() as u64;
        assert!(n * MSS >= ssthresh - 2 * MSS && n * MSS <= ssthresh + 2 * MSS, "{n} segments");
    }
}
