//! Loading the shipped scenarios from tests.
#![allow(dead_code)]

use ncmesh_sim::scenario::{Scenario, ScenarioError, Source};
use ncmesh_sim::{RunResult, Simulation};

pub fn scenario_text(name: &str) -> String {
    let path = format!("{}/../../scenarios/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

pub fn load(text: &str, overrides: &[(&str, &str)]) -> Result<Scenario, ScenarioError> {
    let overrides: Vec<(String, String)> = overrides.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    Scenario::load(Source::Toml { text, origin: "test.toml" }, &overrides)
}

pub fn run(text: &str, overrides: &[(&str, &str)]) -> RunResult {
    Simulation::new(&load(text, overrides).expect("valid scenario")).run()
}

pub fn run_named(name: &str, overrides: &[(&str, &str)]) -> RunResult {
    run(&scenario_text(name), overrides)
}

/// `text` with the first occurrence of `from`, which must exist, replaced.
pub fn edited(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "{from}");
    text.replacen(from, to, 1)
}

/// The key, line and message a scenario is refused with.
pub fn refused(text: &str) -> (String, Option<usize>, String) {
    match load(text, &[]).expect_err("the scenario must be refused") {
        ScenarioError::Invalid { key, line, message, .. } => (key, line, message),
        other => panic!("expected an invalid key, got {other}"),
    }
}
