//! What the emulation tests share: scenarios, commands, and whether the
//! machine can emulate at all.
#![allow(dead_code)]

use ncmesh_emu::unavailable;
use ncmesh_proto::Duration;
use ncmesh_sim::scenario::{CommandSpec, Scenario, Seconds, Source};

pub fn scenario(text: &str) -> Scenario {
    Scenario::load(Source::Toml { text, origin: "<test>" }, &[]).unwrap()
}

pub fn command(node: u32, run: &str, background: bool) -> CommandSpec {
    CommandSpec { node, run: run.into(), start: Seconds(Duration::ZERO), background }
}

/// Whether the machine can emulate and has `program`; says why not.
pub fn available(program: &str) -> bool {
    let why = unavailable().or_else(|| {
        let found = std::process::Command::new("sh").args(["-c", &format!("command -v {program}")]).output();
        (!found.is_ok_and(|o| o.status.success())).then(|| format!("{program} is not installed"))
    });
    match why {
        Some(why) => {
            eprintln!("skipped: {why}");
            false
        }
        None => true,
    }
}

/// Three nodes in a chain: 10 Mbit/s, 20 ms hops, no loss.
pub const CHAIN: &str = r#"
duration = 30
nodes = [1, 2, 3]
[link_class.hop]
capacity = "10Mbps"
delay = "20ms"
queue = 50
[[links]]
between = [1, 2]
class = "hop"
[[links]]
between = [2, 3]
class = "hop"
"#;
