//! F-RTO (RFC 5682 section 3 with SACK, as Linux's `tcp_process_loss`
//! runs it with `tcp_frto` = 2): once the first resend after a timeout is
//! acknowledged, new data goes out before the rest of the old; data sent
//! before the timeout and never resent that is acknowledged or SACKed
//! afterwards shows the timeout spurious, and it is undone.

use ncmesh_proto::tcp::{Recovery, TcpConfig, TcpSender, Variant};
use ncmesh_proto::testing::{ack, drain, offset_of, CONN};
use ncmesh_proto::time::{Duration, Instant};

const MSS: u64 = 1000;
/// The window each ACK announces: room for everything below.
const WINDOW: u16 = 60_000;

fn sender(frto: bool) -> TcpSender {
    let config = TcpConfig {
        variant: Variant::Sack,
        recovery: Some(Recovery::Prr),
        rack: true,
        frto,
        mss: MSS as u32,
        initial_cwnd: 10,
        rcv_window: 60,
        ..TcpConfig::default()
    };
    let mut s = TcpSender::new(&config, CONN);
    s.push(40 * MSS);
    s
}

/// Runs the sender's timers until the retransmission timer fires, and
/// sends what it may; returns when.
fn fire_rto(s: &mut TcpSender) -> Instant {
    let timeouts = s.stats().timeouts;
    loop {
        let t = s.poll_timeout().expect("a timer is armed");
        s.handle_timeout(t);
        drain(s, t);
        if s.stats().timeouts > timeouts {
            return t;
        }
    }
}

/// Sends the initial window at 0 and lets the RTO fire on it; returns the
/// time just after, with the head resent.
fn time_out(s: &mut TcpSender) -> Instant {
    assert_eq!(drain(s, Instant::ZERO).len(), 10);
    let rto = s.poll_timeout().expect("the RTO is armed");
    s.handle_timeout(rto);
    assert_eq!(offsets(s, rto), [0], "one segment's window: the head again");
    assert_eq!(s.stats().timeouts, 1);
    rto
}

fn offsets(s: &mut TcpSender, now: Instant) -> Vec<u64> {
    drain(s, now).iter().filter_map(offset_of).collect()
}

#[test]
fn a_sack_of_data_never_resent_undoes_the_timeout() {
    let run = |frto| {
        let mut s = sender(frto);
        let rto = time_out(&mut s);
        // The first flight was only late: segments 1 and 2 are SACKed.
        let t = rto + Duration::from_millis(10);
        s.handle_ack(t, &ack(0, WINDOW, &[(MSS, 3 * MSS)]));
        (s.stats().spurious_timeouts, s.cwnd(), offsets(&mut s, t))
    };
    let (spurious, cwnd, sent) = run(true);
    assert_eq!(spurious, 1);
    assert_eq!(cwnd, 10 * MSS, "the window from before the timeout");
    // Nothing of the first flight is marked lost any more: what goes out is new.
    assert!(!sent.is_empty() && sent.iter().all(|&o| o >= 10 * MSS), "sent {sent:?}");

    let (spurious, cwnd, _) = run(false);
    assert_eq!((spurious, cwnd), (0, MSS), "without F-RTO the timeout stands");
}

#[test]
fn a_cumulative_ack_of_data_never_resent_undoes_the_timeout() {
    let mut s = sender(true);
    let rto = time_out(&mut s);
    // An ACK of the first three segments: 1 and 2 were never resent.
    s.handle_ack(rto + Duration::from_millis(10), &ack(3 * MSS, WINDOW, &[]));
    assert_eq!(s.stats().spurious_timeouts, 1);
    assert!(s.cwnd() >= 10 * MSS, "cwnd {} ssthresh {}", s.cwnd(), s.ssthresh());
}

#[test]
fn after_a_real_timeout_new_data_goes_before_the_rest_of_the_old() {
    let mut s = sender(true);
    let rto = time_out(&mut s);
    // The whole flight was lost; the resent head arrives alone.
    let t1 = rto + Duration::from_millis(100);
    s.handle_ack(t1, &ack(MSS, WINDOW, &[]));
    let sent = offsets(&mut s, t1);
    assert!(!sent.is_empty() && sent.iter().all(|&o| o >= 10 * MSS), "step 2b sends new data: {sent:?}");
    // The new data is SACKed above the hole: the timeout was real, and
    // the old data goes again.
    let t2 = t1 + Duration::from_millis(100);
    s.handle_ack(t2, &ack(MSS, WINDOW, &[(10 * MSS, 11 * MSS)]));
    let sent = offsets(&mut s, t2);
    assert_eq!(sent.first(), Some(&MSS), "then the lost data: {sent:?}");
    assert_eq!(s.stats().spurious_timeouts, 0);

    // Without F-RTO the old data goes first.
    let mut s = sender(false);
    let rto = time_out(&mut s);
    let t1 = rto + Duration::from_millis(100);
    s.handle_ack(t1, &ack(MSS, WINDOW, &[]));
    assert_eq!(offsets(&mut s, t1).first(), Some(&MSS));
}

#[test]
fn a_timeout_in_fast_recovery_is_not_watched_but_the_next_in_a_row_is() {
    let mut s = sender(true);
    drain(&mut s, Instant::ZERO);
    // Segment 1 is lost: the ACKs of 0 and then SACKs of 2 to 4, one by
    // one, and RACK starts a fast recovery.
    let mut t = Instant::ZERO + Duration::from_millis(100);
    s.handle_ack(t, &ack(MSS, WINDOW, &[]));
    for n in 3..6 {
        t += Duration::from_millis(1);
        s.handle_ack(t, &ack(MSS, WINDOW, &[(2 * MSS, n * MSS)]));
    }
    assert!(s.in_recovery());
    drain(&mut s, t);
    // The recovery times out: Linux arms F-RTO only for a timeout out of
    // the open state, or a repeated one.
    let rto = fire_rto(&mut s);
    s.handle_ack(rto + Duration::from_millis(1), &ack(MSS, WINDOW, &[(2 * MSS, 7 * MSS)]));
    assert_eq!(s.stats().spurious_timeouts, 0, "segment 7 SACKed, but F-RTO was not watching");
    // A second timeout in a row is watched.
    let rto = fire_rto(&mut s);
    assert_eq!(s.stats().timeouts, 2);
    s.handle_ack(rto + Duration::from_millis(1), &ack(MSS, WINDOW, &[(2 * MSS, 8 * MSS)]));
    assert_eq!(s.stats().spurious_timeouts, 1);
    assert!(!s.in_recovery());
}
