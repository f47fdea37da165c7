//! Connection setup and teardown (RFC 9293 3.5, 3.6): the SYN's timer and
//! backoff, the handshake's RTT sample (RFC 6298 2.2 and 5.7), the options
//! both ends settle, and the FIN.

use ncmesh_proto::tcp::{Flags, Phase, Profile, Recovery, TcpConfig, Variant};
use ncmesh_proto::testing::{drop_none, DropFn, Link, Pair};
use ncmesh_proto::time::{Duration, Instant};

/// The 5-hop chain of 1 Mbit/s, 100 ms hops as one pipe: an RTT of
/// about 1.06 s with one full segment's serialisation per hop.
fn chain(drop: DropFn) -> (Link, Link) {
    let hop = Duration::from_millis(100);
    let fwd = Link::new(hop.saturating_mul(5) + Duration::from_millis(60)).with_rate(1_000_000).with_drop(drop);
    (fwd, Link::new(hop.saturating_mul(5)))
}

fn secs(s: f64) -> Instant {
    Instant::from_secs_f64(s)
}

/// Drops the sender's first `n` SYNs.
fn drop_syns(mut n: u32) -> DropFn {
    Box::new(move |_, s| {
        let drop = s.flags.contains(Flags::SYN) && n > 0;
        n -= drop as u32;
        drop
    })
}

#[test]
fn a_path_longer_than_the_initial_rto_costs_no_timeout() {
    // ns-3's SYN timer (3 s) outlasts the RTT; the handshake's sample then
    // sets the RTO before any data leaves.
    let config = TcpConfig { mss: 1000, rcv_window: 100, ..TcpConfig::profile(Profile::Ns3) };
    let (fwd, rev) = chain(drop_none());
    let mut p = Pair::new(&config, fwd, rev);
    p.push(300_000);
    assert!(p.run_to_finish(secs(60.0)));
    let s = p.sender.stats();
    assert_eq!((s.timeouts, s.retransmits, s.syn_retransmits), (0, 0, 0), "{s:?}");
    assert_eq!(p.delivered_bytes, 300_000);
    // The first data left one RTT after the SYN, with the RTO from that sample.
    let first = p.sent[0].at;
    assert!(first > secs(1.05) && first < secs(1.1), "first data at {first}");

    // Linux's SYN timer (1 s) fires before the SYN-ACK comes back, as the
    // kernel's does; the timestamps still give the handshake a sample, and
    // no data is ever sent twice.
    let config = TcpConfig { mss: 1000, ..TcpConfig::profile(Profile::Linux) };
    let (fwd, rev) = chain(drop_none());
    let mut p = Pair::new(&config, fwd, rev);
    p.push(300_000);
    assert!(p.run_to_finish(secs(60.0)));
    let s = p.sender.stats();
    assert_eq!((s.timeouts, s.retransmits, s.syn_retransmits), (0, 0, 1), "{s:?}");
    assert!(p.sender.srtt().unwrap() > Duration::from_secs(1));
}

#[test]
fn a_syn_sent_at_time_zero_and_again_is_still_timed_by_its_echo() {
    // Each end's timestamp clock starts at its ISN, as Linux offsets each
    // connection's: the first SYN's value is not zero, so its echo reads
    // as one and gives the handshake's sample although the SYN was resent.
    let config = TcpConfig { mss: 1000, ..TcpConfig::profile(Profile::Linux) };
    let (fwd, rev) = chain(drop_none());
    let mut p = Pair::with_isns(&config, 0x5EED_0001, 0x5EED_0002, fwd, rev);
    p.sender.open();
    p.flush();
    assert!(p.run_until(secs(2.0), |p| p.sender.phase() == Phase::Established));
    assert_eq!(p.sender.stats().syn_retransmits, 1);
    let rtt = p.sender.srtt().expect("the handshake's sample");
    assert!(rtt > Duration::from_secs(1) && rtt < Duration::from_millis(1100), "{rtt:?}");
}

#[test]
fn without_a_handshake_the_same_path_times_out_at_the_start() {
    // What the issue found: ns-2's agents start established with a 1 s RTO
    // and no sample, so the first window is sent twice.
    let config = TcpConfig { rcv_window: 100, ..TcpConfig::default() };
    let (fwd, rev) = chain(drop_none());
    let mut p = Pair::new(&config, fwd, rev);
    p.push(300_000);
    assert!(p.run_to_finish(secs(60.0)));
    assert!(p.sender.stats().timeouts >= 1);
}

#[test]
fn a_lost_syn_is_sent_again_with_backoff_and_gives_no_sample() {
    let config = TcpConfig { mss: 1000, rcv_window: 100, ..TcpConfig::profile(Profile::Ns3) };
    let (fwd, rev) = chain(drop_syns(2));
    let mut p = Pair::new(&config, fwd, rev);
    p.push(10_000);
    // SYNs at 0, 3 and 3 + 6 s; the third is answered.
    assert!(!p.run_until(secs(8.9), |p| p.sender.phase() == Phase::Established));
    assert_eq!(p.sender.stats().syn_retransmits, 1);
    assert!(p.run_until(secs(11.0), |p| p.sender.phase() == Phase::Established));
    assert_eq!(p.sender.stats().syn_retransmits, 2);
    // Timestamps say which SYN the SYN-ACK answers: a valid sample.
    assert!(p.sender.srtt().is_some_and(|r| r > Duration::from_secs(1)));

    // Without timestamps Karn's rule leaves no sample, and RFC 6298 5.7
    // sets the RTO to 3 s for the data.
    let config = TcpConfig { timestamps: false, ..config };
    let (fwd, rev) = chain(drop_syns(1));
    let mut p = Pair::new(&config, fwd, rev);
    p.push(10_000);
    assert!(p.run_until(secs(10.0), |p| p.sender.phase() == Phase::Established));
    assert_eq!(p.sender.srtt(), None);
    assert_eq!(p.sender.rto(), Duration::from_secs(3));
}

#[test]
fn an_unanswered_syn_is_given_up_after_its_retries() {
    let config = TcpConfig { syn_retries: 2, ..TcpConfig::profile(Profile::Linux) };
    let (fwd, rev) = chain(drop_syns(u32::MAX));
    let mut p = Pair::new(&config, fwd, rev);
    p.push(10_000);
    p.run_until(secs(100.0), |_| false);
    // 1 + 2 + 4 s of waiting, then nothing more.
    assert_eq!(p.sender.phase(), Phase::Aborted);
    assert_eq!(p.sender.stats().syn_retransmits, 2);
    assert_eq!(p.sender.poll_timeout(), None);
}

#[test]
fn options_are_what_both_ends_offered() {
    // The receiver's MSS is smaller: the sender's segments shrink to it.
    let sender = TcpConfig { mss: 1448, ..TcpConfig::profile(Profile::Linux) };
    let mut receiver = TcpConfig { mss: 1000, sack: false, timestamps: false, ..sender.clone() };
    receiver.rcv_window = 100;
    let (fwd, rev) = (Link::new(Duration::from_millis(10)), Link::new(Duration::from_millis(10)));
    let mut p = Pair::with_configs(&sender, &receiver, fwd, rev);
    p.push(50_000);
    assert!(p.run_to_finish(secs(10.0)));
    assert_eq!(p.sender.mss(), 1000);
    assert!(p.sent.iter().all(|s| s.len <= 1000));
    assert_eq!(p.delivered_bytes, 50_000);
}

#[test]
fn sack_not_offered_by_the_peer_falls_back_to_newreno() {
    let sender =
        TcpConfig { variant: Variant::Sack, recovery: Some(Recovery::Prr), ..TcpConfig::profile(Profile::Ns3) };
    let receiver = TcpConfig { sack: false, ..sender.clone() };
    let (fwd, rev) = (Link::new(Duration::from_millis(10)), Link::new(Duration::from_millis(10)));
    let mut p = Pair::with_configs(&sender, &receiver, fwd, rev);
    p.push(10_000);
    assert!(p.run_to_finish(secs(10.0)));
    assert_eq!(p.sender.recovery(), Recovery::NewReno);
}

#[test]
fn a_sized_transfer_ends_with_fins_both_ways() {
    let config = TcpConfig { mss: 1000, ..TcpConfig::profile(Profile::Ns3) };
    // The FIN is lost once: the retransmission timer sends it again.
    let mut fins = 0;
    let drop: DropFn = Box::new(move |_, s| {
        let first_fin = s.flags.contains(Flags::FIN) && fins == 0;
        fins += s.flags.contains(Flags::FIN) as u32;
        first_fin
    });
    let (fwd, _) = chain(drop);
    let mut p = Pair::new(&config, fwd, Link::new(Duration::from_millis(500)));
    p.push(20_000);
    p.sender.finish();
    assert!(p.run_to_finish(secs(60.0)));
    assert!(p.receiver.fin_received());
    assert_eq!(p.delivered_bytes, 20_000);
    assert_eq!(p.sender.stats().retransmits, 0, "the data was never resent, only the FIN");
    assert!(p.sender.stats().timeouts <= 1);
}

#[test]
fn a_connection_opened_before_any_data_sends_none_until_offered() {
    let config = TcpConfig { mss: 1000, ..TcpConfig::profile(Profile::Linux) };
    let (fwd, rev) = chain(drop_none());
    let mut p = Pair::new(&config, fwd, rev);
    p.now = secs(0.5);
    p.sender.open();
    p.flush();
    p.run_until(secs(5.0), |_| false);
    assert_eq!(p.sender.phase(), Phase::Established);
    assert!(p.sent.is_empty(), "data left before it was offered: {:?}", p.sent[0].at);
    // The handshake's sample is in hand when the data comes.
    assert!(p.sender.srtt().is_some_and(|rtt| rtt > Duration::from_secs(1)), "{:?}", p.sender.srtt());
    p.now = secs(8.0);
    p.push(20_000);
    assert!(p.run_to_finish(secs(60.0)));
    assert_eq!(p.sent[0].at, secs(8.0));
    assert_eq!(p.delivered_bytes, 20_000);
}
