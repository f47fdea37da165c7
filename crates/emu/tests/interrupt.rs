//! An emulation asked to stop (Ctrl-C, SIGTERM through the Python side)
//! ends its commands and deletes its namespaces. A file of its own, so that
//! no other emulation of this test process runs beside it.

mod common;
use common::{available, command, scenario, CHAIN};
use ncmesh_emu::{emulate_until, EmulateError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[test]
fn an_interrupted_emulation_ends_its_commands_and_deletes_its_namespaces() {
    if !available("sleep") {
        return;
    }
    let interrupt = AtomicBool::new(false);
    let started = Instant::now();
    let result = std::thread::scope(|s| {
        let run = s.spawn(|| emulate_until(&scenario(CHAIN), &[command(1, "sleep 25 && echo 0", false)], &interrupt));
        std::thread::sleep(Duration::from_secs(1));
        interrupt.store(true, Ordering::Relaxed);
        run.join().unwrap()
    });
    let took = started.elapsed().as_secs_f64();
    assert!(matches!(result, Err(EmulateError::Interrupted)), "{result:?}");
    assert!(took < 10.0, "the emulation took {took} s to stop");
    let listed = std::process::Command::new("ip").args(["netns", "list"]).output().unwrap();
    let ours = format!("ncm{}x", std::process::id());
    assert!(!String::from_utf8_lossy(&listed.stdout).contains(&ours), "a namespace is left");
    let still = std::process::Command::new("pgrep").args(["-f", "sleep 25 && echo 0"]).output().unwrap();
    assert!(still.stdout.is_empty(), "its command still runs");
}
