//! The retransmission timer: exponential backoff up to max_rto (RFC 6298
//! section 5.5), Karn's rule, and timestamps lifting it (RFC 7323).

use ncmesh_proto::tcp::{Flags, Segment, TcpConfig, TcpSender, Timestamps, Variant};
use ncmesh_proto::testing::{drain, drop_between, Link, Pair, CONN};
use ncmesh_proto::time::{Duration, Instant};

const MSS: u64 = 1000;

fn config(timestamps: bool) -> TcpConfig {
    TcpConfig {
        initial_rto: Duration::from_secs(1),
        min_rto: Duration::from_millis(200),
        max_rto: Duration::from_secs(8),
        timestamps,
        ..TcpConfig::default()
    }
}

fn micros(t: Instant) -> u32 {
    (t.0 / 1000) as u32
}

/// An ACK of `n` bytes advertising 100 segments (with the window scale of 1 they need).
fn ack(n: u64, echo: Option<Instant>, now: Instant) -> Segment {
    let mut a = Segment::new(2, 1);
    a.flags = Flags::ACK;
    a.ack = n as u32;
    a.window = (50 * MSS) as u16;
    a.timestamp = echo.map(|e| Timestamps { value: micros(now), echo: micros(e) });
    a
}

/// Lets the timer expire `n` times; returns the deadlines.
fn time_out_repeatedly(s: &mut TcpSender, n: usize) -> Vec<Instant> {
    let mut deadlines = vec![];
    for _ in 0..n {
        let d = s.poll_timeout().unwrap();
        deadlines.push(d);
        s.handle_timeout(d);
        let out = drain(s, d);
        // Go back to snd_una with a one-segment window.
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].seq, 0);
        assert_eq!(s.cwnd(), MSS);
    }
    deadlines
}

#[test]
fn rto_doubles_up_to_max_and_karn_keeps_it() {
    let mut s = TcpSender::new(&config(false), CONN);
    s.push(5 * MSS);
    assert_eq!(drain(&mut s, Instant::ZERO).len(), 1);
    let secs = |x: u64| Instant::ZERO + Duration::from_secs(x);
    let deadlines = time_out_repeatedly(&mut s, 6);
    // 1 s, then 2, 4, 8 (the cap), 8, 8.
    assert_eq!(deadlines, vec![secs(1), secs(3), secs(7), secs(15), secs(23), secs(31)]);
    assert_eq!(s.stats().timeouts, 6);
    assert_eq!(s.stats().retransmits, 6);
    // ssthresh fell once, to two segments, and stayed there.
    assert_eq!(s.ssthresh(), 2 * MSS);

    // The ACK of the retransmitted segment is ambiguous: no sample, the
    // backed-off RTO stays.
    let t = secs(31) + Duration::from_millis(100);
    s.handle_ack(t, &ack(MSS, None, t));
    assert_eq!(s.srtt(), None);
    assert_eq!(s.stats().rtt_samples, 0);
    assert_eq!(s.rto(), Duration::from_secs(8));
    // New data (slow start: two segments) is timed normally.
    assert_eq!(drain(&mut s, t).len(), 2);
    let t2 = t + Duration::from_millis(100);
    s.handle_ack(t2, &ack(2 * MSS, None, t2));
    assert_eq!(s.srtt(), Some(Duration::from_millis(100)));
    // SRTT + 4 RTTVAR = 100 + 4 * 50 ms, and the backoff is gone; the timer
    // restarts with it for the segment still outstanding (RFC 6298 5.3).
    assert_eq!(s.rto(), Duration::from_millis(300));
    assert_eq!(s.poll_timeout(), Some(t2 + Duration::from_millis(300)));
}

#[test]
fn timestamps_give_a_sample_from_a_retransmission() {
    let mut s = TcpSender::new(&config(true), CONN);
    s.push(5 * MSS);
    drain(&mut s, Instant::ZERO);
    let deadlines = time_out_repeatedly(&mut s, 3);
    let last_retx = *deadlines.last().unwrap();
    let t = last_retx + Duration::from_millis(120);
    // The receiver echoes the TSval of the retransmission that arrived.
    s.handle_ack(t, &ack(MSS, Some(last_retx), t));
    assert_eq!(s.srtt(), Some(Duration::from_millis(120)));
    assert_eq!(s.rto(), Duration::from_millis(360));
}

#[test]
fn consecutive_timeouts_in_a_blackout_double_the_interval() {
    let config = TcpConfig { variant: Variant::NewReno, max_rto: Duration::from_secs(4), ..config(false) };
    let fwd = Link::new(Duration::from_millis(25))
        .with_drop(drop_between(Instant::from_secs_f64(1.0), Instant::from_secs_f64(12.0)));
    let mut p = Pair::new(&config, fwd, Link::new(Duration::from_millis(25)));
    p.push(u64::MAX);
    p.run_until(Instant::from_secs_f64(20.0), |_| false);
    let una_retx: Vec<Instant> =
        p.sent.iter().filter(|s| s.retransmission && s.at >= Instant::from_secs_f64(1.0)).map(|s| s.at).collect();
    let timeouts = p.sender.stats().timeouts;
    assert!(timeouts >= 5, "{timeouts} timeouts");
    // The first retransmissions during the blackout are one per timeout.
    let gaps: Vec<Duration> = una_retx.windows(2).map(|w| w[1] - w[0]).take(4).collect();
    let base = gaps[0];
    assert!(base >= Duration::from_millis(400), "first gap {base}");
    for (i, g) in gaps.iter().enumerate() {
        let want = base.saturating_mul(1 << i).min(Duration::from_secs(4));
        assert_eq!(*g, want, "gap {i}: {gaps:?}");
    }
    // After the blackout the flow recovers and samples RTT again.
    assert!(p.sender.snd_una() > 0 && p.sender.rto() < Duration::from_secs(1));
    assert_eq!(p.sender.stats().fast_retransmits, 0);
}

/// With `reset_backoff_on_new_ack` (ns-3's behaviour), the ACK of a
/// retransmission ends the backoff even though Karn's rule gives no sample.
#[test]
fn ns3_style_reset_drops_the_backoff_on_a_new_ack() {
    use ncmesh_proto::tcp::{TcpConfig, TcpSender};
    use ncmesh_proto::Duration;
    for reset in [false, true] {
        let config = TcpConfig { reset_backoff_on_new_ack: reset, initial_cwnd: 1, ..TcpConfig::default() };
        let mut s = TcpSender::new(&config, CONN);
        s.push(10_000);
        let first = s.poll_transmit(Instant::ZERO).unwrap();
        // Two timeouts back the timer off to 4 x 1 s.
        let mut now = s.poll_timeout().unwrap();
        s.handle_timeout(now);
        while s.poll_transmit(now).is_some() {}
        now = s.poll_timeout().unwrap();
        s.handle_timeout(now);
        while s.poll_transmit(now).is_some() {}
        assert_eq!(s.rto(), Duration::from_secs(4));
        // The ACK covers only the retransmitted segment: no RTT sample.
        now += Duration::from_millis(100);
        s.handle_ack(now, &ack(first.end() as u64, None, now));
        let expected = if reset { Duration::from_secs(1) } else { Duration::from_secs(4) };
        assert_eq!(s.rto(), expected, "reset = {reset}");
    }
}
