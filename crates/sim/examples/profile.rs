//! Runs one scenario file without Python, for profilers (`perf`,
//! `valgrind --tool=callgrind`), and prints its events and wall time.
//!
//! ```sh
//! cargo build --release --example profile -p ncmesh-sim
//! target/release/examples/profile scenarios/honc-single-path.toml duration=10000
//! ```
//!
//! Arguments after the file are overrides, `key=value` with TOML values.

use ncmesh_sim::scenario::{Scenario, Source};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: profile SCENARIO.toml [key=value ...]");
        return ExitCode::from(2);
    };
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::from(2);
        }
    };
    let mut overrides = Vec::new();
    for arg in &args[1..] {
        let Some((key, value)) = arg.split_once('=') else {
            eprintln!("{arg}: expected key=value");
            return ExitCode::from(2);
        };
        overrides.push((key.to_string(), value.to_string()));
    }
    let scenario = match Scenario::load(Source::Toml { text: &text, origin: path }, &overrides) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let started = std::time::Instant::now();
    let result = ncmesh_sim::Simulation::new(&scenario).run();
    let wall = started.elapsed().as_secs_f64();
    println!("{} events in {wall:.3} s ({:.2} M events/s)", result.events, result.events as f64 / wall / 1e6);
    for f in &result.flows {
        println!("flow {}: {:.1} kbit/s", f.id, f.goodput_bps / 1e3);
    }
    ExitCode::SUCCESS
}
