//! The links in real time: every direction of every link is the
//! simulator's `PointToPoint` medium behind a drop-tail queue, fed the IP
//! packets its transmitting node's kernel writes into a TUN device and
//! writing what arrives into the receiving node's.
//!
//! The wall clock only says when packets come in and when to wake. The
//! models run on their own schedule: a transmission starts when the
//! previous one ended by the model (or when its packet came in, if later),
//! not when the loop happened to wake, so lateness in waking delays a
//! delivery but never shifts the link's rate or the next packet's timing.
//! What the loop cannot help is measured: for every packet delivered, how
//! late it was written against the instant the model said it arrives.

use ncmesh_proto::frame::{Body, FrameFields, Receivers};
use ncmesh_proto::packet::Kind;
use ncmesh_proto::{Duration, Frame, Instant};
use ncmesh_sim::medium::{Event, Medium, Phase, PointToPoint};
use serde::Serialize;
use std::collections::VecDeque;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// One direction of a link.
#[derive(Debug)]
pub struct Direction {
    pub medium: PointToPoint,
    /// Packets waiting for the transmitter, with when they came in.
    queue: VecDeque<(Instant, Frame)>,
    /// Drop-tail limit, not counting the packet being sent.
    limit: usize,
    busy: bool,
    /// Where the transmitting node writes its packets, and where arrivals go.
    input: usize,
    output: usize,
    pub counts: DirectionCounts,
}

/// What happened on one direction.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct DirectionCounts {
    pub received: u64,
    pub dropped: u64,
    pub delivered: u64,
}

impl Direction {
    /// `input` and `output` index the TUN devices of the transmitting and receiving ends.
    pub fn new(medium: PointToPoint, limit: usize, input: usize, output: usize) -> Direction {
        Direction { medium, queue: VecDeque::new(), limit, busy: false, input, output, counts: Default::default() }
    }

    fn offer(&mut self, at: Instant, frame: Frame) {
        self.counts.received += 1;
        if !self.busy {
            self.busy = true;
            self.medium.transmit(at, 0, frame);
        } else if self.queue.len() < self.limit {
            self.queue.push_back((at, frame));
        } else {
            self.counts.dropped += 1;
        }
    }
}

/// How late deliveries were written, against the model's arrival times.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TimingError {
    /// The loop ran at a real-time priority (SCHED_FIFO), which root may set.
    pub realtime: bool,
    pub samples: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

impl TimingError {
    fn of(mut late_ns: Vec<u64>) -> TimingError {
        if late_ns.is_empty() {
            return TimingError::default();
        }
        late_ns.sort_unstable();
        let at = |q: f64| late_ns[((late_ns.len() - 1) as f64 * q).round() as usize] as f64 / 1e3;
        TimingError {
            realtime: false,
            samples: late_ns.len() as u64,
            mean_us: late_ns.iter().sum::<u64>() as f64 / late_ns.len() as f64 / 1e3,
            p50_us: at(0.5),
            p99_us: at(0.99),
            p999_us: at(0.999),
            max_us: at(1.0),
        }
    }
}

/// The links of an emulation and the TUN devices at their ends.
#[derive(Debug)]
pub struct Links {
    pub directions: Vec<Direction>,
    tuns: Vec<OwnedFd>,
}

impl Links {
    pub fn new(directions: Vec<Direction>, tuns: Vec<OwnedFd>) -> Links {
        Links { directions, tuns }
    }

    /// Runs until `stop` is set; returns the timing error of the deliveries.
    pub fn run(&mut self, stop: &Arc<AtomicBool>) -> TimingError {
        // Wake as close to the deadline as the kernel can (the default slack
        // is 50 us), and ahead of ordinary work on a loaded machine: the
        // thread sleeps in ppoll whenever it has nothing due, so a real-time
        // priority costs others nothing but its own short bursts.
        // SAFETY: prctl with an integer argument changes only this thread's timer slack.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
        let param = libc::sched_param { sched_priority: 10 };
        // SAFETY: sets this thread's scheduling policy from a valid parameter.
        let realtime = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } == 0;
        let epoch = std::time::Instant::now();
        let clock = || Instant(epoch.elapsed().as_nanos() as u64);
        let mut inputs: Vec<Vec<usize>> = vec![Vec::new(); self.tuns.len()];
        for (d, dir) in self.directions.iter().enumerate() {
            inputs[dir.input].push(d);
        }
        let mut polls: Vec<libc::pollfd> =
            self.tuns.iter().map(|fd| libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 }).collect();
        let mut late = Vec::new();
        let mut buf = vec![0u8; 65_536];
        while !stop.load(Ordering::Relaxed) {
            let now = clock();
            for d in 0..self.directions.len() {
                self.advance(d, now, &epoch, &mut late);
            }
            let next = self
                .directions
                .iter()
                .flat_map(|d| [d.medium.poll_timeout(Phase::Departure), d.medium.poll_timeout(Phase::Arrival)])
                .flatten()
                .min();
            // Wake for the next deadline, or at least every 50 ms to see `stop`.
            let wait =
                next.map_or(Duration::from_millis(50), |t| t.saturating_since(clock()).min(Duration::from_millis(50)));
            let timeout =
                libc::timespec { tv_sec: (wait.0 / 1_000_000_000) as i64, tv_nsec: (wait.0 % 1_000_000_000) as i64 };
            // SAFETY: `polls` is a live array of pollfd of the length given.
            let ready =
                unsafe { libc::ppoll(polls.as_mut_ptr(), polls.len() as libc::nfds_t, &timeout, std::ptr::null()) };
            if ready <= 0 {
                continue;
            }
            for (i, p) in polls.iter_mut().enumerate() {
                if p.revents & libc::POLLIN == 0 {
                    continue;
                }
                p.revents = 0;
                loop {
                    // SAFETY: reads into a buffer of the length given from a descriptor we own.
                    let n = unsafe { libc::read(p.fd, buf.as_mut_ptr().cast(), buf.len()) };
                    if n <= 0 {
                        break;
                    }
                    let at = clock();
                    let packet = &buf[..n as usize];
                    // IPv4 only: the routes send nothing else, and the protocol byte names its kind.
                    if packet.len() < 20 || packet[0] >> 4 != 4 {
                        continue;
                    }
                    let frame = Frame::from(FrameFields {
                        transmitter: Ipv4Addr::UNSPECIFIED,
                        receivers: Receivers::All,
                        body: Body::Bytes { kind: Kind::Ip(packet[9]), bytes: packet.into() },
                    });
                    if let Some(&d) = inputs[i].first() {
                        self.directions[d].offer(at, frame);
                    }
                }
            }
        }
        TimingError { realtime, ..TimingError::of(late) }
    }

    /// Serves direction `d`'s deadlines up to `now`, each at its own time.
    fn advance(&mut self, d: usize, now: Instant, epoch: &std::time::Instant, late: &mut Vec<u64>) {
        loop {
            let dir = &mut self.directions[d];
            let due = [Phase::Departure, Phase::Arrival]
                .into_iter()
                .filter_map(|p| dir.medium.poll_timeout(p).map(|t| (t, p)))
                .filter(|&(t, _)| t <= now)
                .min_by_key(|&(t, p)| (t, p == Phase::Arrival));
            let Some((at, phase)) = due else { return };
            dir.medium.handle_timeout(at, phase);
            while let Some(event) = dir.medium.poll_event() {
                match event {
                    Event::Sent { .. } => match dir.queue.pop_front() {
                        // The next transmission starts when the model's last one ended.
                        Some((came, frame)) => dir.medium.transmit(came.max(at), 0, frame),
                        None => dir.busy = false,
                    },
                    Event::Received { frame, .. } => {
                        let Some((_, bytes)) = frame.as_bytes() else { continue };
                        let fd = self.tuns[dir.output].as_raw_fd();
                        // SAFETY: writes a packet from a live buffer to a descriptor we own.
                        let written = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
                        if written > 0 {
                            dir.counts.delivered += 1;
                            late.push(Instant(epoch.elapsed().as_nanos() as u64).saturating_since(at).0);
                        }
                    }
                }
            }
        }
    }
}
