//! Real and virtual payloads give the same run on every shipped scenario
//! and under every coding scheme: the bytes a real run moves decide
//! nothing a virtual run does not decide the same way. In real runs every
//! delivery checks out and every frame parses.

mod common;
use common::*;
use ncmesh_sim::RunResult;

/// Runs `name` shortened, in both modes, and compares everything.
fn agree(name: &str, overrides: &[(&str, &str)]) {
    // Long enough for the flow that starts last to run 30 s.
    let spec = load(&scenario_text(name), overrides).expect("a valid scenario").spec;
    let last_start = spec.flows.iter().map(|f| f.start.0.as_secs_f64()).fold(0.0, f64::max);
    let duration = (last_start + 30.0).to_string();
    let mut with = vec![("duration", duration.as_str())];
    with.extend_from_slice(overrides);
    let virtual_run = run_named(name, &with);
    with.push(("payloads", "\"real\""));
    let real_run = run_named(name, &with);
    let what = format!("{name} {overrides:?}");
    assert_eq!(serde_json::to_string(&virtual_run).unwrap(), serde_json::to_string(&real_run).unwrap(), "{what}");
    assert!(real_run.flows.iter().all(|f| f.delivered_bytes > 0), "{what}: every flow delivers");
    clean(&real_run, &what);
}

/// Nothing was corrupted, malformed or unsendable.
fn clean(r: &RunResult, what: &str) {
    for f in &r.flows {
        assert_eq!(f.corrupt_bytes, 0, "{what}: flow {} was delivered wrong bytes", f.id);
    }
    for c in &r.counters {
        if c.name == "malformed" || c.name == "unemitted" {
            assert_eq!(c.value, 0, "{what}: node {} counted {} {}", c.node, c.value, c.name);
        }
    }
}

#[test]
fn every_shipped_scenario() {
    let dir = format!("{}/../../scenarios", env!("CARGO_MANIFEST_DIR"));
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("the scenarios directory")
        .filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".toml").map(str::to_string))
        .collect();
    names.sort();
    assert!(names.len() >= 6, "{names:?}");
    for name in &names {
        agree(name, &[]);
    }
}

#[test]
fn every_coding_scheme_over_lossy_hops() {
    for scheme in ["\"tcpnc-e2e\"", "\"tcpnc-hbh\"", "\"honc\"", "\"tcp-forward\""] {
        agree("honc-single-path", &[("coding.scheme", scheme), ("link_class.wireless.loss", "0.1")]);
    }
    agree("honc-multi-path", &[("coding.scheme", "\"honc\""), ("link_class.wireless.loss", "0.05")]);
}
