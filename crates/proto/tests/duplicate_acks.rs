//! Which ACKs the sender counts as duplicates (RFC 5681 section 2, and RFC
//! 6675 section 2 with SACK), and what else every ACK updates: the count
//! of ACKs, the peer's window, and the timestamp the sender echoes.

use ncmesh_proto::data::Data;
use ncmesh_proto::tcp::{Flags, Recovery, Segment, TcpConfig, TcpSender, Timestamps};
use ncmesh_proto::testing::{drain, CONN};
use ncmesh_proto::time::{Duration, Instant};

const MSS: u64 = 1000;
/// The window `sender` starts with and its ACKs announce, in bytes.
const WINDOW: u16 = 50_000;

/// The default profile (no handshake, no RACK), with SACK-based recovery
/// (RFC 6675) or without SACK, 4 segments out.
fn sender(sack: bool, timestamps: bool) -> TcpSender {
    let recovery = Some(if sack { Recovery::Sack } else { Recovery::NewReno });
    let config = TcpConfig { sack, recovery, timestamps, initial_cwnd: 4, rcv_window: 50, ..TcpConfig::default() };
    let mut s = TcpSender::new(&config, CONN);
    s.push(u64::MAX);
    assert_eq!(drain(&mut s, Instant::ZERO).len(), 4);
    s
}

fn ack(n: u64) -> Segment {
    ncmesh_proto::testing::ack(n, WINDOW, &[])
}

fn with_sack(n: u64, start: u64, end: u64) -> Segment {
    ncmesh_proto::testing::ack(n, WINDOW, &[(start, end)])
}

/// Feeds `acks` one after another and returns the duplicate ACKs counted.
fn dupacks(s: &mut TcpSender, acks: impl IntoIterator<Item = Segment>) -> u64 {
    let t = Instant::from_secs_f64(0.1);
    for (i, a) in acks.into_iter().enumerate() {
        s.handle_ack(t + Duration::from_millis(i as u64), &a);
    }
    s.stats().dupacks
}

#[test]
fn the_same_ack_with_the_same_window_is_a_duplicate_and_three_retransmit() {
    let mut s = sender(false, false);
    assert_eq!(dupacks(&mut s, [ack(0), ack(0), ack(0)]), 3);
    assert_eq!(s.stats().fast_retransmits, 1);
    assert_eq!(s.stats().acks_received, 3);
}

#[test]
fn an_ack_that_changes_the_window_is_not_a_duplicate_without_sack() {
    let mut s = sender(false, false);
    let windows = [WINDOW - 1000, WINDOW, WINDOW - 1000];
    let acks = windows.map(|w| Segment { window: w, ..ack(0) });
    assert_eq!(dupacks(&mut s, acks), 0, "RFC 5681 section 2, condition (e)");
    assert_eq!(s.stats().fast_retransmits, 0);
}

#[test]
fn an_ack_that_carries_data_or_a_fin_is_not_a_duplicate() {
    let mut s = sender(false, false);
    let data = Segment { data: Data::Virtual { len: 100, offset: 0 }, ..ack(0) };
    let fin = Segment { flags: Flags::ACK | Flags::FIN, ..ack(0) };
    assert_eq!(dupacks(&mut s, [data.clone(), data, fin.clone(), fin]), 0, "conditions (b) and (c)");
}

#[test]
fn with_nothing_outstanding_no_ack_is_a_duplicate() {
    let config = TcpConfig { sack: false, initial_cwnd: 4, ..TcpConfig::default() };
    let mut s = TcpSender::new(&config, CONN);
    s.push(2 * MSS);
    assert_eq!(drain(&mut s, Instant::ZERO).len(), 2);
    assert_eq!(dupacks(&mut s, [ack(2 * MSS), ack(2 * MSS), ack(2 * MSS), ack(2 * MSS)]), 0, "condition (a)");
    assert_eq!(s.stats().retransmits, 0);
}

#[test]
fn with_sack_only_an_ack_with_new_sack_information_is_a_duplicate() {
    let mut s = sender(true, false);
    assert_eq!(dupacks(&mut s, [ack(0), ack(0)]), 0, "no SACK block: nothing new");
    assert_eq!(dupacks(&mut s, [with_sack(0, 1000, 2000)]), 1);
    assert_eq!(dupacks(&mut s, [with_sack(0, 1000, 2000)]), 1, "the same block again says nothing new");
    assert_eq!(dupacks(&mut s, [with_sack(0, 1000, 3000)]), 2);
}

#[test]
fn an_ack_of_data_never_sent_is_ignored() {
    let mut s = sender(false, false);
    s.handle_ack(Instant::from_secs_f64(0.1), &ack(10 * MSS));
    assert_eq!(s.snd_una(), 0);
    assert_eq!(s.cwnd(), 4 * MSS);
}

#[test]
fn the_window_each_ack_announces_limits_what_is_sent_next() {
    let mut s = sender(false, false);
    let t = Instant::from_secs_f64(0.1);
    // Two segments acknowledged, the window shrunk to three.
    s.handle_ack(t, &Segment { window: (3 * MSS) as u16, ..ack(2 * MSS) });
    let sent = drain(&mut s, t);
    assert_eq!(sent.iter().map(|x| x.seq).collect::<Vec<_>>(), [4000], "2000..5000 is the window; 2000..4000 is out");
    // Opened again: the window now lets the congestion window decide.
    s.handle_ack(t, &ack(2 * MSS));
    assert!(!drain(&mut s, t).is_empty());
}

#[test]
fn the_echoed_timestamp_is_the_newest_received_not_the_last() {
    let echo = |s: &mut TcpSender, value: u32, n: u64| {
        let t = Instant::from_secs_f64(0.2) + Duration::from_millis(n);
        let a = Segment { timestamp: Some(Timestamps { value, echo: 0 }), ..ack(n * MSS) };
        s.handle_ack(t, &a);
        drain(s, t).last().and_then(|x| x.timestamp).map(|ts| ts.echo)
    };
    let mut s = sender(false, true);
    assert_eq!(echo(&mut s, 100, 1), Some(100));
    assert_eq!(echo(&mut s, 50, 2), Some(100), "an older value, reordered, is not echoed");
    assert_eq!(echo(&mut s, 200, 3), Some(200));
    // Values wrap (RFC 7323 section 5.2): 5 is newer than u32::MAX - 5.
    let mut s = sender(false, true);
    assert_eq!(echo(&mut s, u32::MAX - 5, 1), Some(u32::MAX - 5));
    assert_eq!(echo(&mut s, 5, 2), Some(5));
    assert_eq!(echo(&mut s, u32::MAX - 10, 3), Some(5));
}

#[test]
fn one_ack_that_sacks_three_segments_above_a_hole_starts_recovery() {
    // RFC 6675 section 5 step (2): fewer than DupThresh duplicate ACKs, but
    // IsLost(HighACK + 1), with three segments SACKed above it.
    let mut s = sender(true, false);
    assert_eq!(dupacks(&mut s, [with_sack(0, 1000, 4000)]), 1);
    assert!(s.in_recovery());
    assert_eq!(s.stats().fast_retransmits, 1);
    // Two segments SACKed above it are not enough.
    let mut s = sender(true, false);
    assert_eq!(dupacks(&mut s, [with_sack(0, 1000, 3000)]), 1);
    assert!(!s.in_recovery());
}
