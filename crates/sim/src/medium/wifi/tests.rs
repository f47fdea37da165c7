//! The DCF rules, one test each, on small channels driven directly: the
//! expected instants are worked out from 802.11b's timings (slot 20 µs,
//! SIFS 10 µs, DIFS 50 µs, a 1500-byte packet's DATA frame 1310 µs at
//! 11 Mbit/s, an ACK 304 µs at 1 Mbit/s or 203 µs at 11 Mbit/s) and from
//! the stations' backoff streams, drawn again here.

use super::medium::{FrameErrors, Interference, Kind, Link, PairStats, Wifi, WifiConfig};
use super::phy::{Phy, Preamble, Standard};
use crate::medium::{Event, Medium, Phase, Port};
use crate::rng::{Purpose, Rng};
use ncmesh_proto::frame::{Body, FrameFields, Receivers};
use ncmesh_proto::node::Outcome;
use ncmesh_proto::wire::udp::Datagram;
use ncmesh_proto::{Data, Duration, Frame, Instant, Packet, Payload};
use std::collections::VecDeque;
use std::net::Ipv4Addr;

const SEED: u64 = 7;

fn config() -> WifiConfig {
    let standard = Standard::B;
    let mbps = |m: f64| standard.mode((m * 1e6) as u64).unwrap();
    WifiConfig {
        phy: Phy { standard, preamble: Preamble::Long, slot: standard.slot(), sifs: standard.sifs() },
        data: mbps(11.0),
        control: mbps(1.0),
        broadcast: mbps(2.0),
        cw_min: 31,
        cw_max: 1023,
        short_retry_limit: 7,
        long_retry_limit: 4,
        rts_threshold: 65_535,
        interference: Interference::Protocol,
        noise_mw: 1.0,
    }
}

fn addr(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 0, 0, i as u8 + 1)
}

/// A 1500-byte IP packet for station `to`, or for everyone.
fn frame(from: usize, to: Option<usize>) -> Frame {
    let d = Datagram::new(1, 2, Data::Virtual { len: 1472, offset: 0 });
    let packet = Packet::new(addr(from), to.map_or(Ipv4Addr::BROADCAST, addr), Payload::Udp(d));
    let receivers = to.map_or(Receivers::All, |to| Receivers::One(addr(to)));
    Frame::from(FrameFields { transmitter: addr(from), receivers, body: Body::Packet(packet) })
}

fn us(t: u64) -> Instant {
    Instant(t * 1000)
}

/// The backoff draws station `i` will make, for these windows in turn.
fn draws(i: usize, windows: &[u32]) -> Vec<u64> {
    let mut rng = Rng::stream(SEED, Purpose::Backoff, i as u64);
    windows.iter().map(|&cw| rng.below(cw as u64 + 1)).collect()
}

/// A channel and the nodes around it: each offers frames at given
/// instants and hands the channel the next once the last is done.
struct Bench {
    wifi: Wifi,
    offers: VecDeque<(Instant, Port, Frame)>,
    queues: Vec<VecDeque<Frame>>,
    busy: Vec<bool>,
    outcomes: Vec<(Instant, Port, Outcome)>,
    received: Vec<(Instant, Port, bool)>,
}

/// `n` stations; `reach` and `sense_only` list unordered pairs; `fer(i, j)`
/// is the loss of i's data frames at j. Signals arrive at once.
fn bench(
    n: usize,
    reach: &[(usize, usize)],
    sense_only: &[(usize, usize)],
    fer: impl Fn(usize, usize) -> f64,
    config: WifiConfig,
) -> Bench {
    bench_with_delays(n, reach, sense_only, fer, config, |_, _| Duration::ZERO)
}

/// As [`bench`], with a propagation delay between each pair.
fn bench_with_delays(
    n: usize,
    reach: &[(usize, usize)],
    sense_only: &[(usize, usize)],
    fer: impl Fn(usize, usize) -> f64,
    config: WifiConfig,
    delay: impl Fn(usize, usize) -> Duration,
) -> Bench {
    let has =
        |pairs: &[(usize, usize)], i: usize, j: usize| pairs.iter().any(|&(a, b)| (a, b) == (i, j) || (b, a) == (i, j));
    let links = (0..n)
        .map(|i| {
            (0..n)
                .filter(|&j| j != i && (has(reach, i, j) || has(sense_only, i, j)))
                .map(|j| Link {
                    to: j,
                    delay: delay(i, j),
                    reach: has(reach, i, j),
                    errors: FrameErrors::Fer(fer(i, j)),
                    power_mw: 0.0,
                    rayleigh: false,
                    rng: Rng::stream(SEED, Purpose::Reception, (i as u64) << 32 | j as u64),
                    stats: PairStats::default(),
                })
                .collect()
        })
        .collect();
    let stations = (0..n).map(|i| (addr(i), Rng::stream(SEED, Purpose::Backoff, i as u64))).collect();
    let mut wifi = Wifi::new(config, stations, links);
    wifi.record_transmissions();
    Bench {
        wifi,
        offers: VecDeque::new(),
        queues: vec![VecDeque::new(); n],
        busy: vec![false; n],
        outcomes: Vec::new(),
        received: Vec::new(),
    }
}

impl Bench {
    /// Station `from` has a frame for `to` (or everyone) at `at_us`; offers must come in time order.
    fn offer(&mut self, at_us: u64, from: usize, to: Option<usize>) -> &mut Self {
        self.offers.push_back((us(at_us), from, frame(from, to)));
        self
    }

    fn hand(&mut self, now: Instant, port: Port, frame: Frame) {
        if self.busy[port] {
            self.queues[port].push_back(frame);
        } else {
            self.busy[port] = true;
            self.wifi.transmit(now, port, frame);
        }
    }

    fn run(&mut self, until_us: u64) -> &mut Self {
        loop {
            let event = self.wifi.poll_timeout(Phase::Departure);
            let offer = self.offers.front().map(|o| o.0);
            let now = match (event, offer) {
                (Some(e), Some(o)) => e.min(o),
                (Some(t), None) | (None, Some(t)) => t,
                (None, None) => break,
            };
            if now > us(until_us) {
                break;
            }
            if event == Some(now) {
                self.wifi.handle_timeout(now, Phase::Departure);
                while let Some(e) = self.wifi.poll_event() {
                    match e {
                        Event::Sent { port, outcome } => {
                            self.outcomes.push((now, port, outcome));
                            if outcome != Outcome::Started {
                                self.busy[port] = false;
                                if let Some(f) = self.queues[port].pop_front() {
                                    self.hand(now, port, f);
                                }
                            }
                        }
                        Event::Received { port, addressed, .. } => self.received.push((now, port, addressed)),
                    }
                }
            } else {
                let (at, port, frame) = self.offers.pop_front().expect("an offer is due");
                self.hand(at, port, frame);
            }
        }
        self
    }

    /// (start in µs, station, kind) of every frame put on the air.
    fn air(&self) -> Vec<(u64, Port, Kind)> {
        self.wifi.transmissions().iter().map(|t| (t.at.0 / 1000, t.from, t.kind)).collect()
    }

    fn data(&self) -> Vec<(u64, Port)> {
        self.air().into_iter().filter(|t| t.2 == Kind::Data).map(|t| (t.0, t.1)).collect()
    }

    fn final_outcomes(&self) -> Vec<(u64, Port, Outcome)> {
        self.outcomes.iter().filter(|o| o.2 != Outcome::Started).map(|o| (o.0 .0 / 1000, o.1, o.2)).collect()
    }
}

const DATA: u64 = 1310;
const ACK: u64 = 304;

#[test]
fn a_frame_on_an_idle_medium_goes_after_difs_and_is_acknowledged_after_sifs() {
    let mut b = bench(2, &[(0, 1)], &[], |_, _| 0.0, config());
    b.offer(0, 0, Some(1)).run(10_000);
    assert_eq!(b.air(), [(50, 0, Kind::Data), (50 + DATA + 10, 1, Kind::Ack)]);
    assert_eq!(b.final_outcomes(), [(50 + DATA + 10 + ACK, 0, Outcome::Acked)]);
    assert_eq!(b.received, [(us(50 + DATA), 1, true)]);
}

#[test]
fn ack_timeout_then_retries_with_a_doubling_window_up_to_the_short_retry_limit() {
    // Nothing station 0 sends reaches 1 intact: no ACK ever comes.
    let mut b = bench(2, &[(0, 1)], &[], |_, _| 1.0, config());
    b.offer(0, 0, Some(1)).run(1_000_000);
    let data = b.data();
    assert_eq!(data.len(), 7, "dot11ShortRetryLimit = 7 attempts");
    // ACK timeout: SIFS + slot + the ACK's PLCP preamble and header (192 µs)
    // after the data ends; then a backoff from the doubled window counts
    // from the timeout (later than DIFS after the data).
    let windows = [63, 127, 255, 511, 1023, 1023];
    let slots = draws(0, &windows);
    let mut expected = vec![50];
    for k in 0..6 {
        let timeout = expected[k] + DATA + 10 + 20 + 192;
        expected.push(timeout + 20 * slots[k]);
    }
    assert_eq!(data.iter().map(|d| d.0).collect::<Vec<_>>(), expected);
    assert!(b.wifi.transmissions()[1..].iter().all(|t| t.retry));
    let drop_at = expected[6] + DATA + 10 + 20 + 192;
    assert_eq!(b.final_outcomes(), [(drop_at, 0, Outcome::Failed)]);
    let r = b.wifi.radio(0);
    assert_eq!((r.retries, r.retry_drops, r.acked), (6, 1, 0));
}

#[test]
fn data_after_rts_cts_is_dropped_at_the_long_retry_limit() {
    // RTS and CTS always get through; the data frame never does.
    let mut b = bench(2, &[(0, 1)], &[], |_, _| 1.0, WifiConfig { rts_threshold: 0, ..config() });
    b.offer(0, 0, Some(1)).run(1_000_000);
    let kinds: Vec<Kind> = b.air().iter().map(|t| t.2).collect();
    assert_eq!(kinds, [Kind::Rts, Kind::Cts, Kind::Data].repeat(4), "dot11LongRetryLimit = 4 attempts");
    assert_eq!(b.final_outcomes().len(), 1);
    assert_eq!(b.final_outcomes()[0].2, Outcome::Failed);
    // RTS 352 µs at 1 Mbit/s, SIFS, CTS 304 µs, SIFS, then the data.
    assert_eq!(
        &b.air()[..3],
        [(50, 0, Kind::Rts), (50 + 352 + 10, 1, Kind::Cts), (50 + 352 + 10 + 304 + 10, 0, Kind::Data)]
    );
}

#[test]
fn backoff_freezes_while_another_station_sends() {
    // Stations 0 and 1 both send to 2 and hear each other. Station 1's frame
    // arrives while 0 transmits: it draws a backoff. Station 0 draws its
    // post-backoff when its ACK comes, and has a second frame.
    let mut b = bench(3, &[(0, 1), (0, 2), (1, 2)], &[], |_, _| 0.0, config());
    b.offer(0, 0, Some(2)).offer(0, 0, Some(2)).offer(100, 1, Some(2)).run(20_000);
    let (a, c) = (draws(0, &[31])[0], draws(1, &[31])[0]);
    assert_ne!(a, c, "choose another seed: equal draws collide");
    // The first exchange ends at 50 + DATA + SIFS + ACK; both count from DIFS after it.
    let idle = 50 + DATA + 10 + ACK + 50;
    let (first, second, left) = if a < c { (0, 1, c - a) } else { (1, 0, a - c) };
    let first_at = idle + 20 * a.min(c);
    // The loser froze with `left` slots through the winner's exchange.
    let second_at = first_at + DATA + 10 + ACK + 50 + 20 * left;
    assert_eq!(b.data(), [(50, 0), (first_at, first), (second_at, second)]);
    assert_eq!(b.wifi.radio(0).collisions + b.wifi.radio(1).collisions, 0);
}

#[test]
fn eifs_follows_a_frame_received_in_error() {
    // Station 2 hears 0 but not 1, so it never hears 1's ACKs. It has a
    // frame for 0 while 0 sends to 1. ACKs go at 11 Mbit/s (203 µs), so the
    // NAV of a decoded frame (SIFS + ACK) and EIFS (SIFS + DIFS + an ACK at
    // 1 Mbit/s, 364 µs) end at different instants.
    let fast_acks = WifiConfig { control: config().data, ..config() };
    let when_station_2_sends = |fer: f64| {
        let mut b = bench(3, &[(0, 1), (0, 2)], &[], |i, j| if (i, j) == (0, 2) { fer } else { 0.0 }, fast_acks);
        b.offer(0, 0, Some(1)).offer(100, 2, Some(0)).run(20_000);
        b.data().into_iter().find(|d| d.1 == 2).expect("station 2 sends").0
    };
    let slots = draws(2, &[31])[0];
    let data_end = 50 + DATA;
    // Decoded: the NAV holds it for SIFS + ACK, then DIFS.
    assert_eq!(when_station_2_sends(0.0), data_end + 10 + 203 + 50 + 20 * slots);
    // Damaged: EIFS from the end of the frame.
    assert_eq!(when_station_2_sends(1.0), data_end + 364 + 20 * slots);
}

#[test]
fn a_frame_waiting_for_a_sensed_ack_to_end_goes_when_it_ends() {
    // A line 0 - 1 - 2, 30 ns between neighbours; 0 and 2 sense each other
    // but cannot decode. 1 sends to 2; 0 gets a frame for 1 meanwhile. The
    // last thing 0 waits out is 2's ACK, which ends at 0 after it ends at 1:
    // after every event any node hears. 0 must still send once it ends.
    let delay = |i: usize, j: usize| Duration::from_nanos(30 * i.abs_diff(j) as u64);
    let mut b = bench_with_delays(3, &[(0, 1), (1, 2)], &[(0, 2)], |_, _| 0.0, config(), delay);
    b.offer(0, 1, Some(2)).offer(100, 0, Some(1)).run(20_000);
    let slots = draws(0, &[31])[0];
    // 2's ACK goes SIFS after 1's data reaches it and ends at 0 90 ns after
    // 1370 + 304 µs; then DIFS and the backoff 0 drew when its frame found the medium busy.
    let ack_end_at_0 = Duration::from_nanos((50 + DATA + 10 + ACK) * 1000 + 90);
    let expected = Instant::ZERO + ack_end_at_0 + Duration::from_micros(50 + 20 * slots);
    let sent_by_0: Vec<Instant> = b.wifi.transmissions().iter().filter(|t| t.from == 0).map(|t| t.at).collect();
    assert_eq!(sent_by_0, [expected]);
    assert_eq!(b.final_outcomes().iter().filter(|o| o.1 == 0).count(), 1, "0's frame is acknowledged");
}

#[test]
fn the_nav_of_a_cts_holds_a_station_hidden_from_the_sender() {
    // 0 sends to 1; 2 hears only 1. 2 gets a frame for 1 while 0's data is on the air.
    let run = |rts_threshold: u32| {
        let mut b = bench(3, &[(0, 1), (1, 2)], &[], |_, _| 0.0, WifiConfig { rts_threshold, ..config() });
        b.offer(0, 0, Some(1)).offer(1000, 2, Some(1)).run(30_000);
        b
    };
    // Without RTS/CTS station 2 senses nothing and sends at once, into 0's data.
    let plain = run(65_535);
    assert_eq!(plain.data()[..2], [(50, 0), (1000, 2)]);
    assert!(plain.wifi.radio(0).collisions >= 1);
    // With them, the CTS (ending at 50 + 352 + 10 + 304 = 716 µs) sets 2's NAV
    // to the end of 0's ACK: 716 + 2 SIFS + DATA + ACK = 2350 µs. Then DIFS and a backoff.
    let guarded = run(0);
    let slots = draws(2, &[31])[0];
    let rts_of_2 = guarded.air().into_iter().find(|t| t.1 == 2 && t.2 == Kind::Rts).expect("2 sends").0;
    assert_eq!(rts_of_2, 2350 + 50 + 20 * slots);
    assert_eq!(guarded.final_outcomes()[0], (2350, 0, Outcome::Acked));
    assert_eq!(guarded.wifi.radio(0).collisions, 0);
}

#[test]
fn only_the_addressee_acknowledges_others_overhear_without_retries() {
    // 0 sends 2000 frames to 1 (lossless); 2 hears 0 with frame error rate 0.3.
    let mut b = bench(3, &[(0, 1), (0, 2)], &[], |i, j| if (i, j) == (0, 2) { 0.3 } else { 0.0 }, config());
    for _ in 0..2000 {
        b.offer(0, 0, Some(1));
    }
    b.run(10_000_000);
    let r0 = b.wifi.radio(0);
    assert_eq!((r0.data_frames, r0.acked, r0.retries), (2000, 2000, 0));
    let acks: Vec<Port> = b.air().iter().filter(|t| t.2 == Kind::Ack).map(|t| t.1).collect();
    assert!(acks.len() == 2000 && acks.iter().all(|&p| p == 1), "only the addressee acknowledges");
    let overheard = b.received.iter().filter(|r| r.1 == 2).count() as f64;
    assert!(b.received.iter().filter(|r| r.1 == 2).all(|r| !r.2), "marked overheard");
    // Binomial(2000, 0.7): mean 1400, sd 20.5; allow 5 sd.
    assert!((overheard - 1400.0).abs() < 103.0, "{overheard}");
    let pair = b.wifi.pairs().find(|p| (p.0, p.1) == (0, 2)).unwrap().2;
    assert_eq!((pair.sent, pair.received as f64, pair.collided), (2000, overheard, 0));
    assert_eq!(pair.errored, 2000 - pair.received);
}

#[test]
fn broadcasts_go_once_at_the_broadcast_rate_unacknowledged() {
    let mut b = bench(3, &[(0, 1), (0, 2)], &[], |_, _| 1.0, config());
    b.offer(0, 0, None).run(100_000);
    assert_eq!(b.air(), [(50, 0, Kind::Data)], "no ACK, no retry, even when nobody decodes it");
    // 1536 bytes at 2 Mbit/s: 6144 µs after 192 µs.
    assert_eq!(b.final_outcomes(), [(50 + 192 + 6144, 0, Outcome::Sent)]);
}

#[test]
fn hidden_senders_collide_at_the_receiver_between_them() {
    // 0 and 2 both send to 1 and cannot sense each other.
    let mut b = bench(3, &[(0, 1), (1, 2)], &[], |_, _| 0.0, config());
    b.offer(0, 0, Some(1)).offer(500, 2, Some(1)).run(20_000);
    assert_eq!(b.data()[..2], [(50, 0), (500, 2)]);
    assert!(b.received.is_empty() || b.received[0].0 > us(500 + DATA), "the overlapping pair is lost");
    assert!(b.wifi.radio(0).collisions >= 1 && b.wifi.radio(2).collisions >= 1);
    // Sensing each other (a sense range wider than the reach), 2 defers.
    let mut b = bench(3, &[(0, 1), (1, 2)], &[(0, 2)], |_, _| 0.0, config());
    b.offer(0, 0, Some(1)).offer(500, 2, Some(1)).run(20_000);
    assert_eq!(b.wifi.radio(0).collisions + b.wifi.radio(2).collisions, 0);
    assert_eq!(b.final_outcomes().iter().filter(|o| o.2 == Outcome::Acked).count(), 2);
}

#[test]
fn every_hidden_collision_is_an_overlap_at_the_receiver_and_every_overlap_a_collision() {
    // 0 and 2 saturate 1 and cannot sense each other. Under the protocol
    // model a frame from 0 is lost at 1 exactly when another transmission
    // that 1 senses (2's data, or 1's own ACK to 2) overlaps it: recount
    // that from the trace of transmissions and compare with the channel's count.
    let mut b = bench(3, &[(0, 1), (1, 2)], &[], |_, _| 0.0, config());
    for _ in 0..400 {
        b.offer(0, 0, Some(1)).offer(0, 2, Some(1));
    }
    // Long enough for every frame to be delivered or dropped.
    b.run(60_000_000);
    let duration = |kind: Kind| if kind == Kind::Data { DATA } else { ACK };
    let air = b.air();
    for (sender, other) in [(0, 2), (2, 0)] {
        let overlapped = air
            .iter()
            .filter(|t| t.1 == sender && t.2 == Kind::Data)
            .filter(|&&(start, _, _)| {
                air.iter().any(|&(s, from, kind)| {
                    let heard_at_1 = from == other || (from == 1 && kind == Kind::Ack);
                    heard_at_1 && s < start + DATA && s + duration(kind) > start
                })
            })
            .count() as u64;
        let pair = b.wifi.pairs().find(|p| (p.0, p.1) == (sender, 1)).unwrap().2;
        assert!(pair.collided > 100, "hidden senders collide often: {}", pair.collided);
        assert_eq!(pair.collided, overlapped, "station {sender}");
        assert_eq!((pair.received + pair.collided, pair.errored), (pair.sent, 0), "every attempt resolved");
    }
}
