//! The shared channel: every station's DCF, carrier sense, NAV and EIFS,
//! transmissions and the receptions they cause, collisions, frame errors,
//! MAC acknowledgements and retries, as one medium of the simulator.
//!
//! The channel keeps its own queue of timed actions. At one instant they
//! run in a fixed order of classes: signals and transmissions that end,
//! then responses, timeouts and channel accesses, then signals that start.
//! So a station whose backoff ends at the instant another's signal reaches
//! it still transmits (it cannot sense a signal that has not been on the
//! air for a moment), and both collide, as two 802.11 stations whose
//! backoffs end in the same slot do.

use super::dcf::{AfterFailure, Backoff, Retries};
use super::error;
use super::phy::{Mode, Phy, ACK_BYTES, CTS_BYTES, DATA_OVERHEAD, RTS_BYTES};
use super::propagation::{db_to_linear, rayleigh_gain};
use crate::medium::{Event, Medium, MediumStats, Phase, Port};
use crate::rng::Rng;
use ncmesh_proto::frame::Receivers;
use ncmesh_proto::node::Outcome;
use ncmesh_proto::{Duration, Frame, Instant};
use rustc_hash::FxHashMap;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::net::Ipv4Addr;

/// How overlapping transmissions affect a reception.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Interference {
    /// A reception fails when any other transmission that the receiver
    /// senses overlaps it (the protocol model of Gupta and Kumar, 2000).
    Protocol,
    /// A reception succeeds with the error model's probability at the lowest
    /// signal-to-interference-plus-noise ratio it saw. With a capture margin,
    /// a frame that arrives that many dB stronger than the one being
    /// received takes the receiver over.
    Sinr { capture_db: Option<f64> },
}

/// The parameters of a channel.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WifiConfig {
    pub phy: Phy,
    /// Unicast data frames.
    pub data: Mode,
    /// RTS, CTS and ACK frames.
    pub control: Mode,
    /// Broadcast data frames.
    pub broadcast: Mode,
    pub cw_min: u32,
    pub cw_max: u32,
    /// Attempts of a frame sent without RTS/CTS, or of its RTS.
    pub short_retry_limit: u32,
    /// Attempts of a data frame sent after RTS/CTS.
    pub long_retry_limit: u32,
    /// Unicast frames whose MPDU is longer than this many bytes go after RTS/CTS.
    pub rts_threshold: u32,
    pub interference: Interference,
    /// Receiver noise, mW: what SNR and SINR are measured against.
    pub noise_mw: f64,
}

/// What decides whether a frame from one station is decoded at another,
/// when nothing overlaps it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FrameErrors {
    /// Independent per data frame and receiver with this probability;
    /// control frames get through.
    Fer(f64),
    /// The error model at the link's SNR, for every frame.
    Snr,
}

/// What one station's transmissions do at one other station.
#[derive(Clone, Debug)]
pub struct Link {
    pub to: Port,
    /// Propagation delay.
    pub delay: Duration,
    /// The receiver can decode frames from the transmitter; otherwise it
    /// only senses them (and is interfered with).
    pub reach: bool,
    pub errors: FrameErrors,
    /// Mean received power, mW.
    pub power_mw: f64,
    /// The power is faded per frame by a unit-mean exponential gain.
    pub rayleigh: bool,
    /// The pair's stream for errors and fading.
    pub rng: Rng,
    pub stats: PairStats,
}

/// What a station's radio and MAC did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RadioStats {
    /// Time spent transmitting, control frames included.
    pub airtime: Duration,
    /// Data frames put on the air, retransmissions included, and their MPDU bytes.
    pub data_frames: u64,
    pub data_bytes: u64,
    pub broadcasts: u64,
    /// Failed attempts that were tried again.
    pub retries: u64,
    /// Unicast frames acknowledged.
    pub acked: u64,
    /// Frames dropped at the retry limit.
    pub retry_drops: u64,
    /// Unicast data attempts lost to a collision at their addressee.
    pub collisions: u64,
    /// Data frames delivered to the node, addressed to it or overheard.
    pub received: u64,
    pub overheard: u64,
    /// Retransmissions of a frame already received, not delivered again.
    pub duplicates: u64,
}

/// Data frames from one station as another saw them. Each attempt counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PairStats {
    /// Put on the air by the transmitter, with the receiver in reach.
    pub sent: u64,
    /// Decoded.
    pub received: u64,
    /// Lost to another transmission: overlapped, or the receiver was busy sending.
    pub collided: u64,
    /// Lost to frame errors with nothing overlapping.
    pub errored: u64,
}

type AirId = usize;

/// What a frame on the air is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Data,
    Rts,
    Cts,
    Ack,
}

/// One frame put on the air, as the channel's transmission trace records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transmission {
    pub at: Instant,
    pub from: Port,
    pub kind: Kind,
    /// The MAC addressee, if any.
    pub to: Option<Port>,
    pub retry: bool,
}

/// One transmission on the air.
#[derive(Debug)]
struct Air {
    from: Port,
    kind: Kind,
    /// The MAC addressee; `None` for broadcast, or a unicast to no station here.
    to: Option<Port>,
    broadcast: bool,
    frame: Option<Frame>,
    seq: u32,
    retry: bool,
    mode: Mode,
    bytes: u32,
    /// The duration field: how long others must defer after it (NAV).
    nav: Duration,
    /// Timed actions that still refer to it.
    references: u32,
}

/// The frame a station's MAC holds.
#[derive(Debug)]
struct Pending {
    frame: Frame,
    to: Option<Port>,
    broadcast: bool,
    /// MPDU bytes.
    bytes: u32,
    rts: bool,
    seq: u32,
    retry: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wait {
    None,
    Cts,
    Ack,
}

#[derive(Clone, Copy, Debug)]
enum Response {
    Ack {
        to: Port,
    },
    Cts {
        to: Port,
        nav: Duration,
    },
    /// The data frame, a SIFS after its CTS.
    Data,
}

/// The frame a station's receiver is locked on.
#[derive(Clone, Copy, Debug)]
struct Rx {
    air: AirId,
    power: f64,
    /// Another transmission overlapped it.
    overlapped: bool,
    /// The lowest SINR over the reception.
    min_sinr: f64,
}

#[derive(Debug)]
struct Station {
    addr: Ipv4Addr,
    rng: Rng,
    pending: Option<Pending>,
    wait: Wait,
    /// A response started arriving before its timeout: decide at its end.
    wait_for_rx_end: bool,
    response: Option<Response>,
    backoff: Backoff,
    retries: Retries,
    /// Invalidates scheduled accesses and timeouts when bumped.
    access_generation: u32,
    timeout_generation: u32,
    /// Signals from other stations the radio senses now, and their power.
    sensed: u32,
    signal_mw: f64,
    transmitting: bool,
    nav_until: Instant,
    /// When the NAV-end wake-up is set for, to set it once.
    nav_wake: Instant,
    /// The medium is idle for this station: nothing sensed, not sending, NAV clear.
    idle: bool,
    /// When the interframe space of the current idle period ends.
    ifs_end: Instant,
    /// The last frame it tried to receive was damaged: wait EIFS, not DIFS.
    eifs: bool,
    rx: Option<Rx>,
    next_seq: u32,
    /// The last sequence number received from each transmitter, for duplicates.
    last_seq: Vec<u32>,
    stats: RadioStats,
}

const NO_SEQ: u32 = u32::MAX;

/// What a timed action does; indices are 32 bits to keep the queue's entries small.
#[derive(Clone, Copy, Debug)]
enum Action {
    /// `loud`: it may produce an event for a node (a delivery, an outcome)
    /// whether or not the station holds a frame.
    SignalEnd {
        at: u32,
        air: u32,
        link: u32,
        power: f64,
        loud: bool,
    },
    TxEnd {
        air: u32,
    },
    NavEnd {
        port: u32,
    },
    Respond {
        port: u32,
    },
    Timeout {
        port: u32,
        generation: u32,
    },
    Access {
        port: u32,
        generation: u32,
    },
    SignalStart {
        at: u32,
        air: u32,
        link: u32,
        power: f64,
    },
}

/// Classes of actions, in their order at one instant.
const ACCESS: u8 = 3;
const CLASSES: u8 = 5;

impl Action {
    /// Order among actions at one instant: ends, then decisions, then starts.
    fn class(&self) -> u8 {
        match self {
            Action::SignalEnd { .. } | Action::TxEnd { .. } | Action::NavEnd { .. } => 0,
            Action::Respond { .. } => 1,
            Action::Timeout { .. } => 2,
            Action::Access { .. } => ACCESS,
            Action::SignalStart { .. } => CLASSES - 1,
        }
    }

    /// Whether it can end what keeps `port` off the medium: the end of a
    /// signal it senses or of its NAV.
    fn frees(&self, port: Port) -> bool {
        match *self {
            Action::SignalEnd { at, .. } => at as usize == port,
            Action::NavEnd { port: p } => p as usize == port,
            _ => false,
        }
    }
}

/// A timed action, keyed by time, then class, then the order it was
/// scheduled in (class and order packed into one integer).
#[derive(Debug)]
struct Scheduled {
    key: (u64, u64),
    action: Action,
}

impl Scheduled {
    fn new(at: Instant, class: u8, seq: u64, action: Action) -> Scheduled {
        Scheduled { key: (at.0, (class as u64) << 56 | seq), action }
    }

    fn at(&self) -> Instant {
        Instant(self.key.0)
    }
}

impl PartialEq for Scheduled {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl Eq for Scheduled {}
impl PartialOrd for Scheduled {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Scheduled {
    /// Reversed, so that the standard max-heap pops the earliest.
    fn cmp(&self, other: &Self) -> Ordering {
        other.key.cmp(&self.key)
    }
}

/// A shared 802.11 channel between the stations attached to it, one per port.
#[derive(Debug)]
pub struct Wifi {
    config: WifiConfig,
    stations: Vec<Station>,
    /// Per transmitting port: every station that senses it.
    links: Vec<Vec<Link>>,
    /// Per port: where its link to each other port sits in `links[port]`.
    link_index: Vec<Vec<u32>>,
    airs: Vec<Option<Air>>,
    free_airs: Vec<AirId>,
    /// Timed actions the simulator must wake for, and those it may sleep
    /// through, which run when the channel next catches up ([`Wifi::is_loud`]).
    loud: BinaryHeap<Scheduled>,
    quiet: BinaryHeap<Scheduled>,
    seq: u64,
    port_of: FxHashMap<Ipv4Addr, Port>,
    events: VecDeque<Event>,
    ack_duration: Duration,
    cts_duration: Duration,
    /// Every frame put on the air, when asked for.
    transmissions: Option<Vec<Transmission>>,
}

const NO_LINK: u32 = u32::MAX;

impl Wifi {
    /// A channel between stations with these addresses, each with its
    /// backoff stream; `links[p]` lists the stations that sense port `p`.
    pub fn new(config: WifiConfig, stations: Vec<(Ipv4Addr, Rng)>, links: Vec<Vec<Link>>) -> Wifi {
        let n = stations.len();
        let difs = config.phy.difs();
        let mut link_index = vec![vec![NO_LINK; n]; n];
        for (p, out) in links.iter().enumerate() {
            for (i, l) in out.iter().enumerate() {
                link_index[p][l.to] = i as u32;
            }
        }
        let stations: Vec<Station> = stations
            .into_iter()
            .map(|(addr, rng)| {
                let mut backoff = Backoff::default();
                backoff.resume(Instant::ZERO + difs);
                Station {
                    addr,
                    rng,
                    pending: None,
                    wait: Wait::None,
                    wait_for_rx_end: false,
                    response: None,
                    backoff,
                    retries: Retries::new(
                        config.cw_min,
                        config.cw_max,
                        config.short_retry_limit,
                        config.long_retry_limit,
                    ),
                    access_generation: 0,
                    timeout_generation: 0,
                    sensed: 0,
                    signal_mw: 0.0,
                    transmitting: false,
                    nav_until: Instant::ZERO,
                    nav_wake: Instant::ZERO,
                    idle: true,
                    ifs_end: Instant::ZERO + difs,
                    eifs: false,
                    rx: None,
                    next_seq: 0,
                    last_seq: vec![NO_SEQ; n],
                    stats: RadioStats::default(),
                }
            })
            .collect();
        let ack_duration = config.phy.duration(config.control, ACK_BYTES);
        let cts_duration = config.phy.duration(config.control, CTS_BYTES);
        let port_of = stations.iter().enumerate().map(|(p, s)| (s.addr, p)).collect();
        Wifi {
            config,
            stations,
            links,
            link_index,
            airs: Vec::new(),
            free_airs: Vec::new(),
            loud: BinaryHeap::new(),
            quiet: BinaryHeap::new(),
            seq: 0,
            port_of,
            events: VecDeque::new(),
            ack_duration,
            cts_duration,
            transmissions: None,
        }
    }

    /// Starts recording every frame put on the air (a trace for tests and
    /// inspection; off by default, as it grows with the run).
    pub fn record_transmissions(&mut self) {
        self.transmissions.get_or_insert_with(Vec::new);
    }

    /// The frames recorded so far.
    pub fn transmissions(&self) -> &[Transmission] {
        self.transmissions.as_deref().unwrap_or(&[])
    }

    pub fn radio(&self, port: Port) -> RadioStats {
        self.stations[port].stats
    }

    /// The link from `from` to `to`, if `to` senses `from`.
    pub fn link(&self, from: Port, to: Port) -> Option<&Link> {
        match self.link_index[from][to] {
            NO_LINK => None,
            i => Some(&self.links[from][i as usize]),
        }
    }

    /// Every pair in reach: (transmitter, receiver, what the receiver saw).
    pub fn pairs(&self) -> impl Iterator<Item = (Port, Port, PairStats)> + '_ {
        self.links
            .iter()
            .enumerate()
            .flat_map(|(from, out)| out.iter().filter(|l| l.reach).map(move |l| (from, l.to, l.stats)))
    }

    fn schedule(&mut self, at: Instant, action: Action) {
        self.seq += 1;
        let scheduled = Scheduled::new(at, action.class(), self.seq, action);
        if self.is_loud(&action) {
            self.loud.push(scheduled);
        } else {
            self.quiet.push(scheduled);
        }
    }

    /// Whether the simulator must wake for `action`: it may produce an event
    /// for a node (a delivery, an outcome), or free the medium of a station
    /// that holds a frame, whose access would follow. The others only change
    /// the channel's state (a signal starting, a signal or NAV ending at a
    /// station with nothing to send), so the simulator sleeps through them.
    fn is_loud(&self, action: &Action) -> bool {
        let holds_a_frame = |port: u32| self.stations[port as usize].pending.is_some();
        match *action {
            Action::SignalStart { .. } => false,
            Action::NavEnd { port } => holds_a_frame(port),
            Action::SignalEnd { at, loud, .. } => loud || holds_a_frame(at),
            _ => true,
        }
    }

    /// Station `port` has just taken a frame: what it waits out on the
    /// medium, scheduled while it had nothing to send, must now wake the
    /// simulator, or its access would wait for an unrelated event.
    fn wake_for(&mut self, port: Port) {
        if self.quiet.iter().any(|s| s.action.frees(port)) {
            let (freeing, rest): (Vec<_>, Vec<_>) =
                std::mem::take(&mut self.quiet).into_vec().into_iter().partition(|s| s.action.frees(port));
            self.quiet = BinaryHeap::from(rest);
            self.loud.extend(freeing);
        }
    }

    /// Runs, in order, every action due before `now`, and those due at
    /// `now` of a class below `class` (`CLASSES` for all of them).
    fn advance(&mut self, now: Instant, class: u8) {
        let limit = Scheduled::new(now, class, 0, Action::NavEnd { port: 0 }).key;
        loop {
            let loud = self.loud.peek().map(|s| s.key);
            let quiet = self.quiet.peek().map(|s| s.key);
            let heap = match (loud, quiet) {
                (Some(l), Some(q)) if l < q => &mut self.loud,
                (_, Some(_)) => &mut self.quiet,
                (Some(_), None) => &mut self.loud,
                (None, None) => return,
            };
            if heap.peek().expect("not empty").key >= limit {
                return;
            }
            let next = heap.pop().expect("peeked");
            self.run(next.action, next.at());
        }
    }

    fn slot(&self) -> Duration {
        self.config.phy.slot
    }

    /// Brings a station's idle state up to date after its carrier sense,
    /// transmitter or NAV changed: the backoff freezes when the medium
    /// turns busy, and counts again an interframe space after it turns idle.
    fn sync(&mut self, p: Port, now: Instant) {
        let slot = self.slot();
        let (difs, eifs) = (self.config.phy.difs(), self.config.phy.eifs());
        let s = &mut self.stations[p];
        let physically_idle = s.sensed == 0 && !s.transmitting;
        let idle = physically_idle && s.nav_until <= now;
        if s.idle && !idle {
            s.idle = false;
            s.backoff.freeze(now, slot);
            s.access_generation += 1;
        } else if !s.idle && idle {
            s.idle = true;
            s.ifs_end = now + if s.eifs { eifs } else { difs };
            s.backoff.resume(s.ifs_end);
            self.schedule_access(p, now);
        } else if physically_idle && s.nav_until > now && s.nav_wake != s.nav_until {
            s.nav_wake = s.nav_until;
            let at = s.nav_until;
            self.schedule(at, Action::NavEnd { port: p as u32 });
        }
    }

    /// Sets the station's wake-up for when its backoff ends, if it has a
    /// frame to contend for and the medium is idle.
    fn schedule_access(&mut self, p: Port, now: Instant) {
        let slot = self.slot();
        let s = &self.stations[p];
        if s.pending.is_none() || s.wait != Wait::None || s.response.is_some() || !s.idle {
            return;
        }
        if let Some(at) = s.backoff.expiry(slot) {
            let generation = s.access_generation;
            self.schedule(at.max(now), Action::Access { port: p as u32, generation });
        }
    }

    /// Draws a new backoff from the station's window, counting at once if the medium is idle.
    fn draw_backoff(&mut self, p: Port, now: Instant) {
        let s = &mut self.stations[p];
        let idle_from = s.idle.then_some(s.ifs_end);
        s.backoff.draw(s.retries.cw, &mut s.rng, now, idle_from);
        s.access_generation += 1;
    }

    fn new_air(&mut self, air: Air) -> AirId {
        match self.free_airs.pop() {
            Some(id) => {
                self.airs[id] = Some(air);
                id
            }
            None => {
                self.airs.push(Some(air));
                self.airs.len() - 1
            }
        }
    }

    fn release(&mut self, id: AirId) {
        let air = self.airs[id].as_mut().expect("a live transmission");
        air.references -= 1;
        if air.references == 0 {
            self.airs[id] = None;
            self.free_airs.push(id);
        }
    }

    /// Puts a frame on the air from `p`: every station that senses `p`
    /// hears it start and end after the propagation delay.
    fn start_tx(&mut self, p: Port, air: Air, now: Instant) {
        let duration = self.config.phy.duration(air.mode, air.bytes);
        let end = now + duration;
        let (is_data, to) = (air.kind == Kind::Data, air.to);
        if let Some(trace) = self.transmissions.as_mut() {
            trace.push(Transmission { at: now, from: p, kind: air.kind, to: air.to, retry: air.retry });
        }
        let id = self.new_air(air);
        let s = &mut self.stations[p];
        s.transmitting = true;
        s.eifs = false;
        // Half duplex: what it was receiving is lost.
        s.rx = None;
        s.stats.airtime = s.stats.airtime + duration;
        self.sync(p, now);
        let mut references = 1;
        for i in 0..self.links[p].len() {
            let link = &mut self.links[p][i];
            let gain = if link.rayleigh { rayleigh_gain(&mut link.rng) } else { 1.0 };
            let (at, delay, power) = (link.to, link.delay, link.power_mw * gain);
            if is_data && link.reach {
                link.stats.sent += 1;
            }
            // A frame ending at a station that can decode it may be delivered or answered.
            let loud = link.reach && (is_data || to == Some(at));
            let (at, air, link) = (at as u32, id as u32, i as u32);
            self.schedule(now + delay, Action::SignalStart { at, air, link, power });
            self.schedule(end + delay, Action::SignalEnd { at, air, link, power, loud });
            references += 1;
        }
        self.airs[id].as_mut().expect("just made").references = references;
        self.schedule(end, Action::TxEnd { air: id as u32 });
    }

    /// The station's data frame goes on the air.
    fn send_data(&mut self, p: Port, now: Instant) {
        let config = self.config;
        let ack_nav = config.phy.sifs + self.ack_duration;
        let s = &mut self.stations[p];
        let pending = s.pending.as_ref().expect("a frame to send");
        let mode = if pending.broadcast { config.broadcast } else { config.data };
        let air = Air {
            from: p,
            kind: Kind::Data,
            to: pending.to,
            broadcast: pending.broadcast,
            frame: Some(pending.frame.clone()),
            seq: pending.seq,
            retry: pending.retry,
            mode,
            bytes: pending.bytes,
            nav: if pending.broadcast { Duration::ZERO } else { ack_nav },
            references: 0,
        };
        s.stats.data_frames += 1;
        s.stats.data_bytes += pending.bytes as u64;
        s.stats.broadcasts += pending.broadcast as u64;
        self.events.push_back(Event::Sent { port: p, outcome: Outcome::Started });
        self.start_tx(p, air, now);
    }

    fn send_rts(&mut self, p: Port, now: Instant) {
        let config = self.config;
        let pending = self.stations[p].pending.as_ref().expect("a frame to send");
        let data = config.phy.duration(config.data, pending.bytes);
        let nav = config.phy.sifs.saturating_mul(3) + self.cts_duration + data + self.ack_duration;
        let air = Air {
            from: p,
            kind: Kind::Rts,
            to: pending.to,
            broadcast: false,
            frame: None,
            seq: 0,
            retry: false,
            mode: config.control,
            bytes: RTS_BYTES,
            nav,
            references: 0,
        };
        self.start_tx(p, air, now);
    }

    fn control(&self, from: Port, kind: Kind, to: Port, nav: Duration) -> Air {
        let bytes = if kind == Kind::Ack { ACK_BYTES } else { CTS_BYTES };
        Air {
            from,
            kind,
            to: Some(to),
            broadcast: false,
            frame: None,
            seq: 0,
            retry: false,
            mode: self.config.control,
            bytes,
            nav,
            references: 0,
        }
    }

    /// Waits for a CTS or an ACK: until SIFS, a slot and the response's PLCP
    /// preamble and header have passed (its PHY-RXSTART), plus the round trip.
    fn await_response(&mut self, p: Port, wait: Wait, now: Instant) {
        let phy = self.config.phy;
        let round_trip = self.stations[p]
            .pending
            .as_ref()
            .and_then(|f| f.to)
            .and_then(|to| self.link(p, to))
            .map_or(Duration::ZERO, |l| l.delay + l.delay);
        let timeout = phy.sifs + phy.slot + phy.preamble_and_header(self.config.control) + round_trip;
        let s = &mut self.stations[p];
        s.wait = wait;
        s.timeout_generation += 1;
        let generation = s.timeout_generation;
        self.schedule(now + timeout, Action::Timeout { port: p as u32, generation });
    }

    /// The station is done with its frame: it draws a post-backoff and the node hears the outcome.
    fn finish(&mut self, p: Port, outcome: Outcome, now: Instant) {
        let s = &mut self.stations[p];
        s.pending = None;
        s.wait = Wait::None;
        s.wait_for_rx_end = false;
        s.timeout_generation += 1;
        s.retries.reset();
        match outcome {
            Outcome::Acked => s.stats.acked += 1,
            Outcome::Failed => s.stats.retry_drops += 1,
            _ => {}
        }
        self.draw_backoff(p, now);
        self.events.push_back(Event::Sent { port: p, outcome });
    }

    /// No CTS or ACK came in time.
    fn failed(&mut self, p: Port, now: Instant) {
        let s = &mut self.stations[p];
        let long = s.wait == Wait::Ack && s.pending.as_ref().is_some_and(|f| f.rts);
        s.wait = Wait::None;
        s.wait_for_rx_end = false;
        s.timeout_generation += 1;
        match s.retries.failed(long) {
            AfterFailure::Retry => {
                s.stats.retries += 1;
                if let Some(f) = s.pending.as_mut() {
                    f.retry = true;
                }
                self.draw_backoff(p, now);
                self.schedule_access(p, now);
            }
            AfterFailure::Drop => self.finish(p, Outcome::Failed, now),
        }
    }

    fn set_nav(&mut self, p: Port, until: Instant) {
        let s = &mut self.stations[p];
        s.nav_until = s.nav_until.max(until);
    }

    fn respond(&mut self, p: Port, response: Response, now: Instant) {
        self.stations[p].response = Some(response);
        let at = now + self.config.phy.sifs;
        self.schedule(at, Action::Respond { port: p as u32 });
    }

    /// Station `at` decoded transmission `id`.
    fn received(&mut self, at: Port, id: AirId, link: usize, now: Instant) {
        let air = self.airs[id].as_ref().expect("a live transmission");
        let (from, kind, to, nav) = (air.from, air.kind, air.to, air.nav);
        let for_me = to == Some(at);
        match kind {
            Kind::Data => {
                self.links[from][link].stats.received += 1;
                let s = &mut self.stations[at];
                let duplicate = air.retry && s.last_seq[from] == air.seq && to.is_some();
                s.last_seq[from] = air.seq;
                if duplicate {
                    s.stats.duplicates += 1;
                } else {
                    let frame = air.frame.clone().expect("data frames carry a frame");
                    let addressed = frame.is_for(s.addr);
                    s.stats.received += 1;
                    s.stats.overheard += !addressed as u64;
                    self.events.push_back(Event::Received { port: at, frame, addressed });
                }
                if for_me {
                    self.respond(at, Response::Ack { to: from }, now);
                } else {
                    self.set_nav(at, now + nav);
                }
            }
            Kind::Rts if for_me => {
                // A station answers an RTS only if its NAV is clear.
                if self.stations[at].nav_until <= now {
                    let nav = nav - (self.config.phy.sifs + self.cts_duration);
                    self.respond(at, Response::Cts { to: from, nav }, now);
                }
            }
            Kind::Cts if for_me && self.stations[at].wait == Wait::Cts => {
                let s = &mut self.stations[at];
                s.wait = Wait::None;
                s.wait_for_rx_end = false;
                s.timeout_generation += 1;
                s.retries.rts_answered();
                self.respond(at, Response::Data, now);
            }
            Kind::Ack if for_me && self.stations[at].wait == Wait::Ack => self.finish(at, Outcome::Acked, now),
            _ => self.set_nav(at, now + nav),
        }
    }

    fn run(&mut self, action: Action, now: Instant) {
        let ix = |i: u32| i as usize;
        match action {
            Action::SignalStart { at, air, link, power } => self.signal_start(ix(at), ix(air), ix(link), power, now),
            Action::SignalEnd { at, air, link, power, .. } => self.signal_end(ix(at), ix(air), ix(link), power, now),
            Action::TxEnd { air } => {
                let air = ix(air);
                let a = self.airs[air].as_ref().expect("a live transmission");
                let (p, kind, broadcast) = (a.from, a.kind, a.broadcast);
                self.stations[p].transmitting = false;
                match kind {
                    Kind::Data if broadcast => self.finish(p, Outcome::Sent, now),
                    Kind::Data => self.await_response(p, Wait::Ack, now),
                    Kind::Rts => self.await_response(p, Wait::Cts, now),
                    Kind::Cts | Kind::Ack => {}
                }
                self.sync(p, now);
                self.release(air);
            }
            Action::NavEnd { port } => self.sync(ix(port), now),
            Action::Respond { port } => {
                let port = ix(port);
                match self.stations[port].response.take() {
                    Some(Response::Ack { to }) => {
                        let air = self.control(port, Kind::Ack, to, Duration::ZERO);
                        self.start_tx(port, air, now);
                    }
                    Some(Response::Cts { to, nav }) => {
                        let air = self.control(port, Kind::Cts, to, nav);
                        self.start_tx(port, air, now);
                    }
                    Some(Response::Data) if self.stations[port].pending.is_some() => self.send_data(port, now),
                    _ => {}
                }
            }
            Action::Timeout { port, generation } => {
                let port = ix(port);
                let s = &mut self.stations[port];
                if generation != s.timeout_generation || s.wait == Wait::None {
                    return;
                }
                if s.rx.is_some() {
                    // A frame started arriving in time: decide when it ends.
                    s.wait_for_rx_end = true;
                } else {
                    self.failed(port, now);
                }
            }
            Action::Access { port, generation } => {
                let port = ix(port);
                let s = &self.stations[port];
                if generation != s.access_generation || !s.idle || s.wait != Wait::None || s.response.is_some() {
                    return;
                }
                match s.pending.as_ref() {
                    Some(f) if f.rts => self.send_rts(port, now),
                    Some(_) => self.send_data(port, now),
                    None => {}
                }
            }
        }
    }

    fn signal_start(&mut self, at: Port, id: AirId, link: usize, power: f64, now: Instant) {
        let interference = self.config.interference;
        let noise = self.config.noise_mw;
        let from = self.airs[id].as_ref().expect("a live transmission").from;
        let reach = self.links[from][link].reach;
        let s = &mut self.stations[at];
        s.sensed += 1;
        s.signal_mw += power;
        let sinr = |s: &Station, p: f64| p / (noise + (s.signal_mw - p).max(0.0));
        if s.transmitting {
            // Half duplex: the frame is missed.
        } else if let Some(mut rx) = s.rx {
            rx.overlapped = true;
            rx.min_sinr = rx.min_sinr.min(sinr(s, rx.power));
            let captured = match interference {
                Interference::Sinr { capture_db: Some(margin) } => reach && power >= rx.power * db_to_linear(margin),
                _ => false,
            };
            s.rx = Some(if captured { Rx { air: id, power, overlapped: true, min_sinr: sinr(s, power) } } else { rx });
        } else if reach {
            s.rx = Some(Rx { air: id, power, overlapped: s.sensed > 1, min_sinr: sinr(s, power) });
        }
        self.sync(at, now);
    }

    fn signal_end(&mut self, at: Port, id: AirId, link: usize, power: f64, now: Instant) {
        let config = self.config;
        let air = self.airs[id].as_ref().expect("a live transmission");
        let (from, kind, mode, bytes, to) = (air.from, air.kind, air.mode, air.bytes, air.to);
        let l = &mut self.links[from][link];
        // Every frame in reach draws its error, received or not, so that a
        // pair's stream does not depend on what else happens on the channel.
        let (errors, reach) = (l.errors, l.reach);
        let clean_snr = power / config.noise_mw;
        let survives = |l: &mut Link, snr: f64| match errors {
            FrameErrors::Fer(p) => !(l.rng.chance(p) && kind == Kind::Data),
            FrameErrors::Snr => {
                let (phy, standard) = (config.phy, config.phy.standard);
                l.rng.next_f64() < error::success(standard, phy.preamble, mode, bytes, snr)
            }
        };
        let locked = self.stations[at].rx.filter(|rx| rx.air == id);
        let mut collided = false;
        let mut decoded = false;
        if reach {
            let snr = match (config.interference, locked) {
                (Interference::Sinr { .. }, Some(rx)) => rx.min_sinr,
                _ => clean_snr,
            };
            let good = survives(l, snr);
            // Under the protocol model any overlap loses the frame; under
            // SINR the error model has weighed the interference already.
            decoded =
                locked.is_some_and(|rx| good && (config.interference != Interference::Protocol || !rx.overlapped));
            collided = !decoded && locked.is_none_or(|rx| rx.overlapped);
            if kind == Kind::Data && !decoded {
                if collided {
                    l.stats.collided += 1;
                } else {
                    l.stats.errored += 1;
                }
            }
        }
        if kind == Kind::Data && to == Some(at) && collided {
            self.stations[from].stats.collisions += 1;
        }
        let s = &mut self.stations[at];
        if locked.is_some() {
            s.rx = None;
            s.eifs = !decoded;
        }
        if decoded {
            self.received(at, id, link, now);
        }
        let s = &mut self.stations[at];
        s.sensed -= 1;
        s.signal_mw = if s.sensed == 0 { 0.0 } else { (s.signal_mw - power).max(0.0) };
        if locked.is_some() && s.wait_for_rx_end && s.wait != Wait::None {
            self.failed(at, now);
        }
        self.sync(at, now);
        self.release(id);
    }
}

impl Medium for Wifi {
    fn transmit(&mut self, now: Instant, port: Port, frame: Frame) {
        let receivers = frame.receivers();
        let broadcast = *receivers == Receivers::All;
        let addressee = match &*receivers {
            Receivers::One(a) => Some(*a),
            Receivers::Set(set) => set.first().copied(),
            Receivers::All => None,
        };
        let to = addressee.and_then(|a| self.port_of.get(&a).copied());
        // The frame arrives after what ended or was answered at this
        // instant, and decides with the other accesses at it, before the
        // signals they start: so it cannot sense them.
        self.advance(now, ACCESS);
        let bytes = frame.wire_len() as u32 + DATA_OVERHEAD;
        let rts = !broadcast && bytes > self.config.rts_threshold;
        let slot = self.slot();
        let s = &mut self.stations[port];
        debug_assert!(s.pending.is_none(), "one frame at a time per station");
        let seq = s.next_seq;
        s.next_seq = (s.next_seq + 1) % 4096;
        s.pending = Some(Pending { frame, to, broadcast, bytes, rts, seq, retry: false });
        // A frame that finds the medium busy with no backoff pending backs off (10.3.4.2).
        let idle = s.idle;
        if !idle && s.backoff.remaining(now, slot) == 0 {
            self.draw_backoff(port, now);
        }
        if !idle {
            self.wake_for(port);
        }
        self.schedule_access(port, now);
    }

    fn poll_timeout(&self, phase: Phase) -> Option<Instant> {
        match phase {
            Phase::Departure => self.loud.peek().map(|s| s.at()),
            Phase::Arrival => None,
        }
    }

    fn handle_timeout(&mut self, now: Instant, phase: Phase) {
        if phase != Phase::Departure {
            return;
        }
        self.advance(now, CLASSES);
    }

    fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    fn stats(&self, port: Port) -> MediumStats {
        let r = &self.stations[port].stats;
        MediumStats { transmitted: r.data_frames, transmitted_bytes: r.data_bytes, lost: r.retry_drops, corrupted: 0 }
    }
}
