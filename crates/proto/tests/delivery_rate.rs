//! Delivery-rate estimation (draft-cheng-iccrg-delivery-rate-estimation-02,
//! Linux's `tcp_rate.c`): the interval is the longer of the send and ACK
//! phases, a SACKed segment gives its sample once, application-limited
//! marks last until the data in flight is delivered, and an interval
//! shorter than the minimum RTT gives no rate.

use ncmesh_proto::tcp::{DeliveryRate, Profile, RateSample, TcpConfig, TxRate, Variant};
use ncmesh_proto::testing::{Link, Pair};
use ncmesh_proto::time::{Duration, Instant};

const MSS: u64 = 1000;

fn ms(x: f64) -> Instant {
    Instant::from_secs_f64(x / 1000.0)
}

/// Sends `n` segments `gap_ms` apart from `start_ms`, the first with
/// `outstanding` bytes before it; returns their stamps and send times.
fn send(r: &mut DeliveryRate, start_ms: f64, gap_ms: f64, n: u64, outstanding: u64) -> Vec<(TxRate, Instant)> {
    (0..n)
        .map(|i| {
            let at = ms(start_ms + gap_ms * i as f64);
            (r.on_send(at, outstanding + i * MSS), at)
        })
        .collect()
}

/// Delivers segment `i` of `flight` at `at_ms`, one ACK each; returns the samples.
fn ack_each(r: &mut DeliveryRate, flight: &[(TxRate, Instant)], acks_ms: &[f64]) -> Vec<RateSample> {
    flight
        .iter()
        .zip(acks_ms)
        .enumerate()
        .map(|(i, (&(tx, sent), &at))| {
            r.on_delivered(tx, sent, (i as u64 + 1) * MSS, false);
            let mut rs = RateSample::default();
            r.generate(ms(at), MSS, 0, &mut rs);
            rs
        })
        .collect()
}

#[test]
fn a_steady_flight_gives_its_sending_rate() {
    // Ten segments 1 ms apart, each ACKed 50 ms after it left: 1000 bytes per ms.
    let mut r = DeliveryRate::new(Instant::ZERO);
    let flight = send(&mut r, 0.0, 1.0, 10, 0);
    let acks: Vec<f64> = (0..10).map(|i| 50.0 + i as f64).collect();
    let samples = ack_each(&mut r, &flight, &acks);
    // The first flight is application-limited (nothing measured yet).
    assert!(samples.iter().all(|s| s.is_app_limited));
    // A second flight, sent while the first is ACKed, is not.
    let second = send(&mut r, 60.0, 1.0, 10, 10 * MSS);
    let acks: Vec<f64> = (0..10).map(|i| 110.0 + i as f64).collect();
    let samples = ack_each(&mut r, &second, &acks);
    let last = samples.last().unwrap();
    assert!(!last.is_app_limited);
    // Its last segment left at 69 ms, stamped with the 10 segments
    // delivered by 59 ms and a flight begun at 9 ms (the send time of the
    // segment the 59 ms ACK sampled): both phases are 60 ms.
    assert_eq!(last.delivered, 10 * MSS);
    assert_eq!(last.interval, Some(Duration::from_millis(60)));
    assert_eq!(last.rate(), Some(10 * MSS * 1000 / 60));
}

#[test]
fn ack_compression_does_not_inflate_the_rate() {
    // Flight A: 10 segments 1 ms apart, ACKed 50 ms later, each ACK
    // clocking out one segment of flight B. B's ACKs come back in one burst.
    let mut r = DeliveryRate::new(Instant::ZERO);
    let a = send(&mut r, 0.0, 1.0, 10, 0);
    let mut b = Vec::new();
    for (j, &(tx, sent)) in a.iter().enumerate() {
        let at = 50.0 + j as f64;
        r.on_delivered(tx, sent, (j as u64 + 1) * MSS, false);
        r.generate(ms(at), MSS, 0, &mut RateSample::default());
        b.push((r.on_send(ms(at), 10 * MSS), ms(at)));
    }
    let mut last = RateSample::default();
    for (j, &(tx, sent)) in b.iter().enumerate() {
        r.on_delivered(tx, sent, (11 + j as u64) * MSS, false);
        r.generate(ms(105.0), MSS, 0, &mut last);
    }
    // B's last segment: sent at 59 ms in a flight begun at 9 ms (send
    // phase 50 ms); the ACK before it came at 59 ms (ACK phase 46 ms).
    assert_eq!(last.interval, Some(Duration::from_millis(50)), "the longer phase");
    assert_eq!(last.delivered, 10 * MSS);
    // Sent at once, ACKed over 80 ms: the ACK phase rules instead.
    let mut r = DeliveryRate::new(Instant::ZERO);
    let flight = send(&mut r, 0.0, 0.0, 4, 0);
    let samples = ack_each(&mut r, &flight, &[50.0, 60.0, 70.0, 80.0]);
    assert_eq!(samples[3].interval, Some(Duration::from_millis(80)));
    assert_eq!(samples[3].delivered, 4 * MSS);
}

#[test]
fn the_send_phase_rules_when_longer() {
    // A flight sent over 30 ms whose ACKs took 10 ms: 30 ms is the interval.
    let mut r = DeliveryRate::new(Instant::ZERO);
    let a = r.on_send(ms(0.0), 0);
    let b = r.on_send(ms(30.0), MSS);
    r.on_delivered(a, ms(0.0), MSS, false);
    let mut rs = RateSample::default();
    r.generate(ms(35.0), MSS, 0, &mut rs);
    r.on_delivered(b, ms(30.0), 2 * MSS, false);
    r.generate(ms(40.0), MSS, 0, &mut rs);
    // b was stamped with delivered 0 at time 0 (first_sent 0): send phase 30, ACK phase 40.
    assert_eq!(rs.interval, Some(Duration::from_millis(40)));
    assert_eq!(rs.delivered, 2 * MSS);
    assert_eq!(rs.rtt, Some(Duration::from_millis(10)));
}

#[test]
fn a_sacked_segment_gives_its_sample_once() {
    let config = TcpConfig { variant: Variant::Bbr, mss: MSS as u32, ..TcpConfig::profile(Profile::Linux) };
    // Through a sender: the stamp is cleared by the SACK, so the later
    // cumulative ACK's sample comes from the hole's retransmission.
    let fwd = Link::new(Duration::from_millis(10)).with_drop(ncmesh_proto::testing::drop_first_transmission([0]));
    let mut p = Pair::new(&config, fwd, Link::new(Duration::from_millis(10)));
    p.push(20 * MSS);
    p.sender.finish();
    assert!(p.run_to_finish(Instant::from_secs_f64(5.0)));
    let r = p.sender.delivery_rate().unwrap();
    assert_eq!(r.delivered(), 20 * MSS, "each byte counted delivered once, SACKed or ACKed");
    assert_eq!(r.lost(), MSS, "the one segment marked lost");
}

#[test]
fn intervals_shorter_than_the_minimum_rtt_give_no_rate() {
    let mut r = DeliveryRate::new(Instant::ZERO);
    r.on_rtt(Duration::from_millis(50));
    // A retransmission (whose RTT is no sample) ACKed 20 ms after it was
    // sent, with nothing else in its phases: on a 50 ms path only a
    // spurious retransmission or a stretched ACK does that.
    let tx = r.on_send(ms(0.0), 0);
    r.on_delivered(tx, ms(0.0), MSS, true);
    let mut rs = RateSample::default();
    r.generate(ms(20.0), MSS, 0, &mut rs);
    assert_eq!(rs.interval, None);
    assert_eq!(rs.rate(), None);
    assert_eq!(rs.acked_sacked, MSS, "delivery still counts");
    // At 50 ms the same would be a rate.
    let tx = r.on_send(ms(30.0), 0);
    r.on_delivered(tx, ms(30.0), 2 * MSS, true);
    r.generate(ms(80.0), MSS, 0, &mut rs);
    assert_eq!(rs.rate(), Some(MSS * 1000 / 50));
}

#[test]
fn app_limited_marks_last_until_the_flight_is_delivered() {
    let mut r = DeliveryRate::new(Instant::ZERO);
    let first = send(&mut r, 0.0, 1.0, 4, 0);
    ack_each(&mut r, &first, &[50.0, 51.0, 52.0, 53.0]);
    assert!(!r.is_app_limited());
    // The application runs dry with 2 segments in flight.
    let flight = send(&mut r, 60.0, 1.0, 2, 0);
    r.mark_app_limited(2 * MSS);
    let late = send(&mut r, 62.0, 1.0, 2, 2 * MSS);
    assert!(!flight[0].0.app_limited && late[0].0.app_limited);
    let s = ack_each(&mut r, &flight, &[110.0, 111.0]);
    assert!(!s[1].is_app_limited);
    assert!(r.is_app_limited(), "the mark is 4 + 2 segments, and delivery must pass it");
    let s = ack_each(&mut r, &late, &[112.0, 113.0]);
    assert!(s[0].is_app_limited, "sent while marked");
    assert!(!r.is_app_limited(), "7 segments delivered: past the mark");
}

#[test]
fn a_new_flight_after_idle_restarts_the_clocks() {
    let mut r = DeliveryRate::new(Instant::ZERO);
    let first = send(&mut r, 0.0, 1.0, 2, 0);
    ack_each(&mut r, &first, &[50.0, 51.0]);
    // Idle for a second: the next flight's phases start when it does.
    let next = send(&mut r, 1051.0, 1.0, 2, 0);
    assert_eq!(next[0].0.first_sent, ms(1051.0));
    assert_eq!(next[0].0.delivered_time, ms(1051.0));
    let s = ack_each(&mut r, &next, &[1101.0, 1102.0]);
    assert_eq!(s[1].interval, Some(Duration::from_millis(51)), "not the idle second");
}

#[test]
fn the_most_recently_sent_segment_is_sampled() {
    // One ACK delivers three segments; the sample is the last sent one's,
    // ties going to the higher sequence.
    let mut r = DeliveryRate::new(Instant::ZERO);
    let f = send(&mut r, 0.0, 5.0, 3, 0);
    r.on_delivered(f[2].0, f[2].1, 3 * MSS, true);
    r.on_delivered(f[0].0, f[0].1, MSS, false);
    r.on_delivered(f[1].0, f[1].1, 2 * MSS, false);
    let mut rs = RateSample::default();
    r.generate(ms(60.0), 3 * MSS, 0, &mut rs);
    assert!(rs.is_retrans);
    assert_eq!(rs.rtt, None, "a retransmission's RTT is ambiguous");
    assert_eq!(rs.prior_delivered, 0);
    assert_eq!(rs.interval, Some(Duration::from_millis(60)));
}
