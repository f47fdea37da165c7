//! One network namespace per node, and the TUN devices that give each node
//! an interface per link. Namespaces are made and configured with
//! iproute2 (`ip netns`, `ip -n`), as an operator would; a TUN device is
//! opened from a thread that has entered the node's namespace, so its file
//! descriptor stays bound to the device there.

use crate::EmulateError;
use std::ffi::CString;
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::Command;

/// `TUNSETIFF`: `_IOW('T', 202, int)`.
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;

/// `struct ifreq` as `TUNSETIFF` reads it: a name and the flags.
#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _rest: [u8; 22],
}

/// Runs a command to completion; fails with its standard error.
pub fn run(program: &str, args: &[&str]) -> Result<(), EmulateError> {
    let out = Command::new(program).args(args).output().map_err(|e| EmulateError::Setup(format!("{program}: {e}")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(EmulateError::Setup(format!(
            "{program} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// The namespaces of one emulation, deleted when dropped.
#[derive(Debug)]
pub struct Namespaces {
    names: Vec<String>,
}

/// What every emulation's namespaces are named: this, the owning process's
/// id, `x`, the emulation's number in that process, `-` and the node's index.
pub const PREFIX: &str = "ncm";

/// The process that made namespace `name`, if an emulation did.
fn owner(name: &str) -> Option<u32> {
    let (pid, rest) = name.strip_prefix(PREFIX)?.split_once('x')?;
    let (emulation, node) = rest.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(emulation) && digits(node)).then(|| pid.parse().ok()).flatten()
}

/// Deletes the namespaces of emulations whose process is gone, and ends
/// what still runs in them. A process ended by a signal it does not catch
/// (SIGTERM, SIGKILL) never runs the `Drop` that deletes its own, and an
/// `iperf3 -s` left inside one waits for ever.
pub fn reap_orphans() {
    let Ok(entries) = std::fs::read_dir("/run/netns") else { return };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = owner(&name) else { continue };
        if std::path::Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        if let Ok(out) = Command::new("ip").args(["netns", "pids", &name]).output() {
            for pid in String::from_utf8_lossy(&out.stdout).split_whitespace().filter_map(|p| p.parse::<i32>().ok()) {
                // SAFETY: sends a signal; `pid` is a process inside a namespace no live emulation owns.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
        let _ = run("ip", &["netns", "del", &name]);
    }
}

impl Namespaces {
    /// Makes `count` namespaces named `prefix` and the node's index.
    pub fn create(prefix: &str, count: usize) -> Result<Namespaces, EmulateError> {
        let mut made = Namespaces { names: Vec::with_capacity(count) };
        for i in 0..count {
            let name = format!("{prefix}{i}");
            run("ip", &["netns", "add", &name])?;
            made.names.push(name);
            made.ip(i, &["link", "set", "lo", "up"])?;
            // A router: forwards, and does not drop what arrives on an
            // interface its reply would not leave by.
            for (key, value) in [("net.ipv4.ip_forward", "1"), ("net.ipv4.conf.all.rp_filter", "0")] {
                made.exec(i, &["sysctl", "-qw", &format!("{key}={value}")])?;
            }
        }
        Ok(made)
    }

    pub fn name(&self, node: usize) -> &str {
        &self.names[node]
    }

    /// `ip -n NAME args`.
    pub fn ip(&self, node: usize, args: &[&str]) -> Result<(), EmulateError> {
        let mut all = vec!["-n", self.name(node)];
        all.extend_from_slice(args);
        run("ip", &all)
    }

    /// `ip netns exec NAME args`.
    pub fn exec(&self, node: usize, args: &[&str]) -> Result<(), EmulateError> {
        let mut all = vec!["netns", "exec", self.name(node)];
        all.extend_from_slice(args);
        run("ip", &all)
    }

    /// Opens TUN device `device` in the node's namespace, non-blocking.
    pub fn open_tun(&self, node: usize, device: &str) -> Result<OwnedFd, EmulateError> {
        let path = format!("/run/netns/{}", self.name(node));
        let device = device.to_string();
        std::thread::scope(|s| s.spawn(move || open_tun_in(&path, &device)).join())
            .map_err(|_| EmulateError::Setup("the thread opening a TUN device panicked".into()))?
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for name in &self.names {
            let _ = run("ip", &["netns", "del", name]);
        }
    }
}

fn os_error(what: &str) -> EmulateError {
    EmulateError::Setup(format!("{what}: {}", std::io::Error::last_os_error()))
}

/// On the calling thread: enters the namespace at `path`, opens the TUN.
fn open_tun_in(path: &str, device: &str) -> Result<OwnedFd, EmulateError> {
    let ns = File::open(path).map_err(|e| EmulateError::Setup(format!("{path}: {e}")))?;
    // SAFETY: setns on a valid descriptor affects only this thread, which
    // ends once the device is open.
    if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(os_error("setns"));
    }
    let dev = CString::new("/dev/net/tun").expect("no NUL");
    // SAFETY: a plain open of a NUL-terminated path.
    let fd = unsafe { libc::open(dev.as_ptr(), libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(os_error("/dev/net/tun"));
    }
    // SAFETY: `fd` was just opened and is owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut req =
        IfReq { name: [0; libc::IFNAMSIZ], flags: (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short, _rest: [0; 22] };
    let n = device.len().min(libc::IFNAMSIZ - 1);
    req.name[..n].copy_from_slice(&device.as_bytes()[..n]);
    // SAFETY: TUNSETIFF reads an ifreq, which `req` is laid out as.
    if unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF, &mut req) } != 0 {
        return Err(os_error("TUNSETIFF"));
    }
    Ok(fd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_namespace_names_the_emulation_that_made_it() {
        assert_eq!(owner("ncm4242x0-3"), Some(4242));
        assert_eq!(owner("ncm7x12-0"), Some(7));
        for other in ["ncm4242x0", "ncm4242-3", "ncmx0-3", "ncm42x-3", "ncm42x0-", "ncm4a2x0-1", "ns1", "ncm42x0-1b"] {
            assert_eq!(owner(other), None, "{other}");
        }
    }
}
