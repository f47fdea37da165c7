//! `ncmesh emulate`: a scenario's point-to-point links in real time
//! between Linux network namespaces, so that unmodified programs (kernel
//! TCP, iperf3) run over the scenario's capacity, delay, loss and queues.
//!
//! Each node is a namespace with a TUN device per link, named `to<label>`
//! after the neighbour it leads to, carrying the node's address
//! (`10.0.0.1` for the first node, as in the simulator) and the routes of
//! the scenario's shortest paths (or static routes). The links are the
//! simulator's `PointToPoint` media behind drop-tail queues of the
//! scenario's length, driven by the wall clock in user space (`links.rs`):
//! this needs root and `/dev/net/tun`, and no netem. The scenario's
//! `[emulate]` commands, and any given with it, run in their nodes'
//! namespaces; the emulation ends when every command not marked
//! `background` has exited, or after the scenario's duration.

mod links;
mod netns;

pub use links::{DirectionCounts, TimingError};

use links::{Direction, Links};
use ncmesh_sim::network::{address, link_media};
use ncmesh_sim::routing::Topology;
use ncmesh_sim::scenario::{CommandSpec, Scenario};
use netns::Namespaces;
use serde::Serialize;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Why an emulation could not run.
#[derive(Debug, thiserror::Error)]
pub enum EmulateError {
    /// This machine cannot host it: not root, no TUN, no `ip`, or no namespaces.
    #[error("ncmesh emulate cannot run here: {0}")]
    Unavailable(String),
    /// The scenario has a medium the emulator does not drive.
    #[error("ncmesh emulate runs point-to-point links only; {0}")]
    Unsupported(String),
    /// A namespace, device, address or route could not be set up.
    #[error("setting up the emulation failed: {0}")]
    Setup(String),
    /// Asked to stop before its commands ended; they were ended and the
    /// namespaces deleted.
    #[error("the emulation was interrupted")]
    Interrupted,
}

/// One node's namespace.
#[derive(Clone, Debug, Serialize)]
pub struct NodeReport {
    pub node: u32,
    pub namespace: String,
    pub address: String,
}

/// One direction of a link.
#[derive(Clone, Debug, Serialize)]
pub struct LinkReport {
    pub from: u32,
    pub to: u32,
    /// Packets the transmitting node's kernel sent into the link.
    pub received: u64,
    /// Refused by the full queue.
    pub dropped: u64,
    /// Erased by the loss process.
    pub lost: u64,
    /// Written to the receiving node's kernel.
    pub delivered: u64,
}

/// What a command did.
#[derive(Clone, Debug, Serialize)]
pub struct CommandReport {
    pub node: u32,
    pub run: String,
    /// Its exit code; `None` if it was ended at the close (servers, overruns).
    pub status: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// What an emulation measured.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub nodes: Vec<NodeReport>,
    pub links: Vec<LinkReport>,
    pub commands: Vec<CommandReport>,
    /// How late packets were delivered against the link models' schedule.
    pub timing: TimingError,
    pub wall_s: f64,
    /// `/proc/loadavg` before and after: the load the timing was measured under.
    pub load_before: String,
    pub load_after: String,
}

/// Why the machine cannot emulate, if it cannot.
pub fn unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("it needs root, to make network namespaces and TUN devices".into());
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Some("/dev/net/tun is missing".into());
    }
    if Command::new("ip").arg("-V").output().is_err() {
        return Some("iproute2's `ip` is not installed".into());
    }
    None
}

/// Runs the scenario's links and its commands, and `extra` commands.
pub fn emulate(scenario: &Scenario, extra: &[CommandSpec]) -> Result<Report, EmulateError> {
    emulate_until(scenario, extra, &AtomicBool::new(false))
}

/// As [`emulate`], but ends early once `interrupt` is set (by another
/// thread, as a signal handler's): the commands are ended, the namespaces
/// deleted, and the result is [`EmulateError::Interrupted`].
pub fn emulate_until(
    scenario: &Scenario,
    extra: &[CommandSpec],
    interrupt: &AtomicBool,
) -> Result<Report, EmulateError> {
    if let Some(why) = unavailable() {
        return Err(EmulateError::Unavailable(why));
    }
    if scenario.channel.is_some() {
        return Err(EmulateError::Unsupported("this scenario has an 802.11 channel (`[wifi]`)".into()));
    }
    let spec = &scenario.spec;
    let topology = scenario.topology();
    let n = topology.labels.len();
    let load_before = loadavg();
    // Names unique to this process and emulation, so that emulations can run side by side.
    static EMULATIONS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let k = EMULATIONS.fetch_add(1, Ordering::Relaxed);
    netns::reap_orphans();
    let namespaces = Namespaces::create(&format!("{}{}x{k}-", netns::PREFIX, std::process::id()), n)?;
    let device = |c: usize| format!("to{}", topology.labels[topology.channels[c].1 as usize]);
    let mtu = spec.emulate.mtu.to_string();

    // A TUN device per link end; channel c leaves through `tun_of[c]`.
    let mut tuns = Vec::new();
    let mut tun_of = vec![0; topology.channels.len()];
    for (node, out) in topology.out.iter().enumerate() {
        let addr = format!("{}/32", address(node as u32));
        for &(_, c) in out {
            let name = device(c as usize);
            tun_of[c as usize] = tuns.len();
            tuns.push(namespaces.open_tun(node, &name)?);
            namespaces.ip(node, &["link", "set", "dev", &name, "mtu", &mtu, "up"])?;
            namespaces.ip(node, &["addr", "add", &addr, "dev", &name])?;
        }
    }
    for from in 0..n {
        for to in (0..n).filter(|&to| to != from) {
            let route = topology.route(0, from as u32, to as u32, None).map_err(EmulateError::Setup)?;
            let dst = format!("{}/32", address(to as u32));
            namespaces.ip(from, &["route", "add", &dst, "dev", &device(route[0] as usize)])?;
        }
    }
    let directions = link_media(spec)
        .into_iter()
        .enumerate()
        .map(|(c, medium)| Direction::new(medium, spec.links[c / 2].queue as usize, tun_of[c], tun_of[c ^ 1]))
        .collect();
    let mut links = Links::new(directions, tuns);

    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let (commands, timing, links) = std::thread::scope(|s| {
        let looping = s.spawn(|| {
            let timing = links.run(&stop);
            (timing, links)
        });
        let commands = run_commands(scenario, extra, &namespaces, &topology, started, interrupt);
        stop.store(true, Ordering::Relaxed);
        let (timing, links) = looping.join().expect("the link loop does not panic");
        (commands, timing, links)
    });
    if interrupt.load(Ordering::Relaxed) {
        return Err(EmulateError::Interrupted);
    }
    let link_reports = links
        .directions
        .iter()
        .enumerate()
        .map(|(c, d)| {
            let (from, to) = topology.channels[c];
            LinkReport {
                from: topology.labels[from as usize],
                to: topology.labels[to as usize],
                received: d.counts.received,
                dropped: d.counts.dropped,
                lost: ncmesh_sim::medium::Medium::stats(&d.medium, 0).lost,
                delivered: d.counts.delivered,
            }
        })
        .collect();
    let nodes = (0..n)
        .map(|i| NodeReport {
            node: topology.labels[i],
            namespace: namespaces.name(i).to_string(),
            address: address(i as u32).to_string(),
        })
        .collect();
    Ok(Report {
        nodes,
        links: link_reports,
        commands: commands?,
        timing,
        wall_s: started.elapsed().as_secs_f64(),
        load_before,
        load_after: loadavg(),
    })
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim().to_string()
}

/// Starts every command at its time, waits for those in the foreground (at
/// most the scenario's duration, or until `interrupt`), then ends the rest.
fn run_commands(
    scenario: &Scenario,
    extra: &[CommandSpec],
    namespaces: &Namespaces,
    topology: &Topology,
    started: Instant,
    interrupt: &AtomicBool,
) -> Result<Vec<CommandReport>, EmulateError> {
    let mut all: Vec<&CommandSpec> = scenario.spec.emulate.commands.iter().chain(extra).collect();
    all.sort_by_key(|c| c.start.0);
    let deadline = started + Duration::from_nanos(scenario.spec.duration.0.as_nanos());
    let mut running: Vec<(&CommandSpec, Child, [PathBuf; 2])> = Vec::new();
    for (i, command) in all.iter().enumerate() {
        let Some(&node) = topology.index.get(&command.node) else {
            return Err(EmulateError::Setup(format!("no node {} to run {:?} in", command.node, command.run)));
        };
        let at = started + Duration::from_nanos(command.start.0.as_nanos());
        if !sleep_until(at, interrupt) {
            break;
        }
        // Output goes to files, so that a chatty command never blocks on a pipe.
        let outputs = ["out", "err"].map(|k| std::env::temp_dir().join(format!("{}{i}.{k}", namespaces.name(0))));
        let file = |p: &PathBuf| File::create(p).map_err(|e| EmulateError::Setup(format!("{}: {e}", p.display())));
        let child = Command::new("ip")
            .args(["netns", "exec", namespaces.name(node as usize), "sh", "-c", &command.run])
            .stdin(Stdio::null())
            .stdout(file(&outputs[0])?)
            .stderr(file(&outputs[1])?)
            .process_group(0)
            .spawn()
            .map_err(|e| EmulateError::Setup(format!("{}: {e}", command.run)))?;
        running.push((command, child, outputs));
    }
    // The foreground commands, until they end or the time is up.
    while Instant::now() < deadline && !interrupt.load(Ordering::Relaxed) {
        let mut busy = false;
        for (command, child, _) in running.iter_mut() {
            if !command.background && child.try_wait().ok().flatten().is_none() {
                busy = true;
            }
        }
        if !busy && running.iter().any(|(c, _, _)| !c.background) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(running.into_iter().map(|(command, child, outputs)| finish(command, child, &outputs)).collect())
}

/// Sleeps until `at`, waking every 50 ms to see whether `interrupt` is
/// set. Returns false if it was.
fn sleep_until(at: Instant, interrupt: &AtomicBool) -> bool {
    loop {
        if interrupt.load(Ordering::Relaxed) {
            return false;
        }
        let left = at.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
}

/// Ends a command still running (SIGTERM to the process group it was
/// started in) and collects its output.
fn finish(command: &CommandSpec, mut child: Child, outputs: &[PathBuf; 2]) -> CommandReport {
    let status = match child.try_wait() {
        Ok(Some(status)) => status.code(),
        _ => {
            // SAFETY: signals the process group this emulation created for the command.
            unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGTERM) };
            let _ = child.wait();
            None
        }
    };
    let [stdout, stderr] = outputs.clone().map(|p| {
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        let _ = std::fs::remove_file(&p);
        text
    });
    CommandReport { node: command.node, run: command.run.clone(), status, stdout, stderr }
}
