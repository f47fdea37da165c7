//! TCP-Forward under the simulator, on the seed 004 tandem it ships with.

mod common;
use common::*;
use ncmesh_sim::scenario::ScenarioError;
use ncmesh_sim::RunResult;

fn counter(r: &RunResult, name: &str) -> u64 {
    r.counters.iter().filter(|c| c.name == name).map(|c| c.value).sum()
}

fn tandem(overrides: &[(&str, &str)]) -> RunResult {
    run_named("tcpforward-tandem", &[&[("duration", "120")], overrides].concat())
}

#[test]
fn coding_masks_loss_that_stops_plain_vegas() {
    // 19% end to end (10% per hop): Vegas alone lives on its retransmission timer.
    let lossy = [("link_class.hop.loss", "0.1")];
    let coded = tandem(&lossy);
    let plain = tandem(&[&lossy[..], &[("coding.scheme", "\"none\"")]].concat());
    let (c, p) = (coded.flows[0].goodput_bps, plain.flows[0].goodput_bps);
    assert!(c > 5.0 * p, "TCP-Forward {c} against Vegas {p}");
}

#[test]
fn the_measurements_of_both_ends_add_up() {
    let r = tandem(&[("link_class.hop.loss", "0.1")]);
    // Every segment TCP-Forward decoded was coded first, and every decoded
    // one was timed from its first encoding at the source.
    let decoded = counter(&r, "segments_decoded");
    assert!(decoded > 1000 && decoded <= counter(&r, "segments_coded"), "{decoded}");
    assert_eq!(counter(&r, "segments_decode_timed"), decoded);
    let mean = |sum: &str, n: &str| counter(&r, sum) as f64 / counter(&r, n) as f64 / 1e9;
    let (decode, deliver) =
        (mean("segment_decode_ns", "segments_decode_timed"), mean("segment_delivery_ns", "segments_delivery_timed"));
    // A segment is decoded no sooner than one way across the two 100 ms hops, and handed to TCP no sooner than decoded.
    assert!(decode > 0.2 && deliver >= decode, "decode {decode} s, delivery {deliver} s");
    let (first, all) = (mean("window_first_ns", "windows_timed"), mean("window_all_ns", "windows_timed"));
    assert!(first > 0.2 && all > first, "first segment {first} s, whole window {all} s");
    // The flow's own delay, from TCP's first transmission to in-order delivery, spans the coding buffer too.
    assert!(r.flows[0].delay_mean_s >= deliver, "{} against {deliver}", r.flows[0].delay_mean_s);
}

/// The override a refusal names, and its message: the key at fault and what was expected.
fn refused(overrides: &[(&str, &str)]) -> (String, String) {
    match load(&scenario_text("tcpforward-tandem"), overrides).expect_err("refused") {
        ScenarioError::Override { key, message } => (key, message),
        other => panic!("expected a refused override, got {other}"),
    }
}

#[test]
fn bad_parameters_are_refused_by_key() {
    // The bad value is the override's, not the file's `window =` line.
    let (key, message) = refused(&[("coding.tcpforward.window", "0")]);
    assert_eq!(key, "coding.tcpforward.window");
    assert_eq!(message, "coding.tcpforward.window: expected 1 to 1024 segments, found 0");
    let (key, message) = refused(&[("coding.tcpforward.timeout", "1.5")]);
    assert_eq!(key, "coding.tcpforward.timeout");
    assert!(message.starts_with("coding.tcpforward.timeout: ") && message.contains("(0, 1)"), "{message}");
    let (key, message) =
        refused(&[("coding.tcpforward.min_redundancy", "3"), ("coding.tcpforward.max_redundancy", "2")]);
    assert_eq!(key, "coding.tcpforward.max_redundancy");
    assert!(message.starts_with("coding.tcpforward.max_redundancy: "), "{message}");
    assert!(message.contains("[min_redundancy, 100]"), "{message}");
    let (key, message) = refused(&[("coding.tcpforward.code", "\"raptor\"")]);
    assert_eq!(key, "coding.tcpforward.code");
    assert!(message.starts_with("coding.tcpforward.code: "), "{message}");
    assert!(message.contains("lt") && message.contains("random"), "{message}");
    let udp = [("flows.0.app", "\"cbr\""), ("flows.0.rate", "\"100kbps\""), ("flows.0.coding", "\"tcp-forward\"")];
    let (key, message) = refused(&udp);
    assert_eq!(key, "flows.0.coding");
    assert!(message.starts_with("flows[0].coding: ") && message.contains("TCP flows only"), "{key}: {message}");
}

#[test]
fn vegas_times_the_path_in_either_rtt_mode() {
    // Two 100 ms hops: the round trip is at least 200 ms, and with queues of
    // 100 packets of 1 Mbit/s at most 0.2 + 2 x 0.8 s, whichever symbol or
    // segment the echo comes from. An echo in a clock other than TCP's own
    // timestamp clock would be off by that clock's start, hundreds of seconds.
    for rtt in ["\"symbol\"", "\"segment\""] {
        let r = run_named("tcpforward-tandem", &[("duration", "60"), ("coding.tcpforward.rtt", rtt)]);
        let srtt = r.flows[0].rtt_mean_s;
        assert!((0.2..1.8).contains(&srtt), "rtt = {rtt}: mean smoothed RTT {srtt} s");
    }
}
