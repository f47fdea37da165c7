//! RACK-TLP (RFC 8985): a segment is lost once a segment sent after it has
//! been delivered and an RTT plus the reordering window has passed since it
//! was sent; a lost retransmission is found the same way (with the RTO
//! restarted when the head is resent, as Linux does); a lost tail is probed
//! after two SRTTs instead of waiting for the RTO.

use ncmesh_proto::tcp::{Delivered, Profile, Rack, Recovery, TcpConfig, TcpSender, TxRate, Variant};
use ncmesh_proto::testing::{ack, drain, drop_first_transmission, offset_of, DropFn, Link, Pair, CONN};
use ncmesh_proto::time::{Duration, Instant};

const MSS: u64 = 1000;

fn config(rack: bool) -> TcpConfig {
    TcpConfig {
        variant: Variant::Sack,
        recovery: Some(Recovery::Prr),
        rack,
        initial_cwnd: 10,
        rcv_window: 200,
        ..TcpConfig::default()
    }
}

fn pair(rack: bool, drop: DropFn) -> Pair {
    let fwd = Link::new(Duration::from_millis(50)).with_rate(10_000_000).with_drop(drop);
    Pair::new(&config(rack), fwd, Link::new(Duration::from_millis(50)))
}

#[test]
fn the_reordering_window_is_zero_until_reordering_is_seen() {
    let ms = Duration::from_millis;
    let t = |x| Instant::ZERO + ms(x);
    let mut rack = Rack::default();
    rack.on_delivered(Delivered { sent: t(0), end: 2000, retransmitted: false, tx: TxRate::default() }, t(100));
    // RFC 8985 6.2 step 4: in recovery, or with dupthresh segments SACKed, and no reordering seen: 0.
    assert_eq!(rack.reordering_window(true, false, Some(ms(100))), Duration::ZERO);
    assert_eq!(rack.reordering_window(false, true, Some(ms(100))), Duration::ZERO);
    // Otherwise a quarter of the least RTT.
    assert_eq!(rack.reordering_window(false, false, Some(ms(100))), ms(25));
    // A retransmission that fills a hole below lies below what was
    // delivered, as every repair does: not reordering.
    rack.on_delivered(Delivered { sent: t(110), end: 1000, retransmitted: true, tx: TxRate::default() }, t(210));
    assert_eq!(rack.reordering_window(true, false, Some(ms(100))), Duration::ZERO);
    // An original segment below one already delivered arrives: reordering seen, and the
    // window stays min_rtt / 4, at most SRTT, even in recovery.
    rack.on_delivered(Delivered { sent: t(1), end: 500, retransmitted: false, tx: TxRate::default() }, t(220));
    assert_eq!(rack.reordering_window(true, true, Some(ms(100))), ms(25));
    assert_eq!(rack.reordering_window(true, true, Some(ms(10))), ms(10));
}

#[test]
fn a_loss_with_too_few_duplicates_is_repaired_without_a_timeout() {
    // Four segments, the second lost: two SACKs follow, too few for
    // dupthresh or RFC 6675's IsLost, so plain SACK recovery waits for the RTO.
    let run = |rack| {
        let mut p = pair(rack, drop_first_transmission([MSS]));
        p.push(4 * MSS);
        assert!(p.run_to_finish(Instant::from_secs_f64(30.0)));
        let s = p.sender.stats().clone();
        (s.timeouts, s.retransmits, p.deliveries.last().unwrap().0)
    };
    let (timeouts, retransmits, rack_done) = run(true);
    assert_eq!((timeouts, retransmits), (0, 1));
    let (timeouts, _, plain_done) = run(false);
    assert_eq!(timeouts, 1);
    assert!(rack_done < plain_done);
}

#[test]
fn a_lost_retransmission_is_found_by_time() {
    // Segment 30 is lost twice: SACK recovery resends it once and then
    // can only wait for the RTO; RACK sees later-sent segments delivered.
    let lose_twice = || {
        let mut n = 0;
        let drop: DropFn = Box::new(move |_, s| {
            let hit = offset_of(s) == Some(30 * MSS) && n < 2;
            n += hit as u32;
            hit
        });
        drop
    };
    let mut p = pair(true, lose_twice());
    p.push(300 * MSS);
    assert!(p.run_to_finish(Instant::from_secs_f64(60.0)));
    assert_eq!(p.sender.stats().timeouts, 0);
    assert_eq!(p.transmissions_of(30 * MSS).len(), 3);
    let mut p = pair(false, lose_twice());
    p.push(300 * MSS);
    assert!(p.run_to_finish(Instant::from_secs_f64(60.0)));
    assert_eq!(p.sender.stats().timeouts, 1);
}

#[test]
fn a_lost_tail_is_probed_after_two_srtts() {
    // The last segment of a transfer is lost: nothing follows it to SACK.
    let mut p = pair(true, drop_first_transmission([19 * MSS]));
    p.push(20 * MSS);
    assert!(p.run_to_finish(Instant::from_secs_f64(30.0)));
    let s = p.sender.stats();
    assert_eq!((s.timeouts, s.retransmits), (0, 1), "{s:?}");
    let sends = p.transmissions_of(19 * MSS);
    let gap = sends[1] - sends[0];
    // 2 SRTT of about 100 ms after the last ACK, which came an RTT after the send.
    let srtt = p.sender.srtt().unwrap();
    assert!(gap > srtt.saturating_mul(2) && gap < srtt.saturating_mul(4), "probe {gap} after the send, SRTT {srtt}");
    // Without TLP, the RTO (at least 200 ms past the last ACK) resends it.
    let mut p = pair(false, drop_first_transmission([19 * MSS]));
    p.push(20 * MSS);
    assert!(p.run_to_finish(Instant::from_secs_f64(30.0)));
    assert_eq!(p.sender.stats().timeouts, 1);
}

/// Reno in the linux profile after a timeout: of a first flight of four,
/// the first segment arrived (an RTT of 100 ms); the rest, what its ACK
/// sent and the tail probe were lost, and the timeout resent the head
/// alone. The head arrives, the next two resends go out, and only the
/// second of them arrives. Returns the sender, the timeout's recovery
/// point, and when RACK's time is up for the lost resend.
fn a_resend_lost_after_a_timeout() -> (TcpSender, u64, Instant) {
    let config = TcpConfig {
        variant: Variant::Reno,
        handshake: false,
        timestamps: false,
        initial_cwnd: 4,
        mss: MSS as u32,
        // F-RTO would send new data after the head's ACK (tests/frto.rs).
        frto: false,
        ..TcpConfig::profile(Profile::Linux)
    };
    let mut s = TcpSender::new(&config, CONN);
    s.push(u64::MAX);
    assert_eq!(drain(&mut s, Instant::ZERO).len(), 4);
    s.handle_ack(Instant::ZERO + Duration::from_millis(100), &ack(1000, u16::MAX, &[]));
    drain(&mut s, Instant::ZERO + Duration::from_millis(100));
    let timeout = loop {
        let t = s.poll_timeout().unwrap();
        s.handle_timeout(t);
        let sent: Vec<_> = drain(&mut s, t).iter().map(|x| x.seq).collect();
        if s.stats().timeouts > 0 {
            assert_eq!(sent, [1000]);
            break t;
        }
    };
    let point = s.snd_max();
    let ms = |n| timeout + Duration::from_millis(n);
    s.handle_ack(ms(100), &ack(2000, u16::MAX, &[]));
    assert_eq!(drain(&mut s, ms(100)).iter().map(|x| x.seq).collect::<Vec<_>>(), [2000, 3000]);
    s.handle_ack(ms(200), &ack(2000, u16::MAX, &[(3000, 4000)]));
    assert!(!s.in_recovery());
    let found = s.poll_timeout().unwrap();
    assert!(found < ms(300), "the reordering timer, not the RTO: {found}");
    (s, point, found)
}

#[test]
fn a_head_resent_after_a_timeout_restarts_the_timer() {
    // Linux restarts the RTO whenever it resends the head of its queue,
    // after a timeout as in recovery (`tcp_xmit_retransmit_queue`): RACK
    // finds the new head lost once its reordering window has passed, and
    // resends it.
    let (mut s, _, found) = a_resend_lost_after_a_timeout();
    s.handle_timeout(found);
    assert_eq!(drain(&mut s, found).first().map(|x| x.seq), Some(2000));
    assert_eq!(s.poll_timeout(), Some(found + s.rto()));
}

#[test]
fn a_resend_found_lost_after_a_timeout_starts_a_fast_recovery() {
    // Linux leaves `TCP_CA_Loss` for `TCP_CA_Recovery` when RACK finds a
    // resend lost, on an ACK (`FLAG_LOST_RETRANS`) or when its reordering
    // timer marks it (`tcp_rack_reo_timeout`), before what was outstanding
    // at the timeout is acknowledged.
    for by_timer in [true, false] {
        let (mut s, point, found) = a_resend_lost_after_a_timeout();
        if by_timer {
            s.handle_timeout(found);
        } else {
            // The same SACK again, once the resend's time is up.
            s.handle_ack(found, &ack(2000, u16::MAX, &[(3000, 4000)]));
        }
        assert!(s.in_recovery(), "by timer: {by_timer}");
        assert_eq!(s.stats().fast_retransmits, 1, "by timer: {by_timer}");
        assert!(s.snd_una() < point && s.lost_bytes() > 0, "by timer: {by_timer}");
        assert_eq!(drain(&mut s, found).first().map(|x| x.seq), Some(2000), "by timer: {by_timer}");
    }
}

#[test]
fn a_recovery_that_ends_with_losses_above_its_point_runs_straight_into_the_next() {
    // The linux profile, with CUBIC and with BBR. Segment 20 is lost three
    // times, so the recovery it starts lasts three round trips; segment
    // 53, the second sent in that recovery (above its point, 52), is lost
    // three times too, and its last resend is in flight when the first
    // recovery ends. As Linux's `tcp_time_to_recover` does, the sender
    // starts the next recovery on the ACK that ends the first: it is never
    // open with data marked lost, and each segment is resent as often as it
    // was lost.
    for variant in [Variant::Cubic, Variant::Bbr] {
        let linux = TcpConfig::profile(Profile::Linux);
        // A first buffer of 1 MB: with 30 segments held above the hole, the
        // receive window must not be what stops the sender.
        let config = TcpConfig { mss: MSS as u32, variant, rcv_buffer: 1 << 20, ..linux };
        let mut sent = std::collections::HashMap::<u64, u32>::new();
        let drop: DropFn = Box::new(move |_, seg| {
            let Some(offset) = offset_of(seg) else { return false };
            let n = sent.entry(offset).or_default();
            *n += 1;
            (offset == 20 * MSS || offset == 53 * MSS) && *n <= 3
        });
        let fwd = Link::new(Duration::from_millis(50)).with_rate(10_000_000).with_drop(drop);
        let mut p = Pair::new(&config, fwd, Link::new(Duration::from_millis(50)));
        p.push(300 * MSS);
        let mut open_with_losses = None;
        while p.step() {
            if !p.sender.in_recovery() && p.sender.lost_bytes() > 0 {
                open_with_losses.get_or_insert(p.now);
            }
        }
        let s = p.sender.stats();
        assert_eq!(s.timeouts, 0, "{variant:?}: {s:?}");
        assert_eq!(open_with_losses, None, "{variant:?}: open with data marked lost");
        assert!(s.fast_retransmits >= 2, "{variant:?}: {s:?}");
        assert_eq!(s.retransmits, 6, "{variant:?}: {s:?}");
        assert_eq!(p.delivered_bytes, 300 * MSS);
    }
}

#[test]
fn with_rack_a_segment_is_resent_only_after_its_last_copy_was_lost() {
    // On a path that never reorders, a resend whose previous copy arrived
    // is spurious. RFC 6675 resends the head when recovery starts; RACK
    // resends only what time marked lost, as Linux does, so none is.
    let linux = TcpConfig::profile(Profile::Linux);
    for variant in [Variant::Cubic, Variant::Bbr] {
        let config = TcpConfig { mss: MSS as u32, variant, ..linux.clone() };
        let copies = std::rc::Rc::new(std::cell::RefCell::new(std::collections::HashMap::<u64, Vec<bool>>::new()));
        let log = copies.clone();
        let mut rng = ncmesh_proto::testing::SplitMix64(7);
        let drop: DropFn = Box::new(move |_, seg| {
            let Some(offset) = offset_of(seg) else { return false };
            let lost = rng.next_f64() < 0.02;
            log.borrow_mut().entry(offset).or_default().push(lost);
            lost
        });
        let fwd = Link::new(Duration::from_millis(50)).with_rate(10_000_000).with_drop(drop);
        let mut p = Pair::new(&config, fwd, Link::new(Duration::from_millis(50)));
        p.push(u64::MAX);
        p.run_until(Instant::from_secs_f64(20.0), |p| p.sender.stats().timeouts > 0);
        assert_eq!(p.sender.stats().timeouts, 0, "{variant:?}");
        assert!(p.sender.stats().retransmits > 20, "{variant:?}: {:?}", p.sender.stats());
        let spurious = copies.borrow().values().filter(|c| c[..c.len() - 1].iter().any(|&lost| !lost)).count();
        assert_eq!(spurious, 0, "{variant:?}");
    }
}
