//! Whole runs: determinism, stream independence, and the sanity of what comes out.

mod common;
use common::*;

/// Results compared through JSON, where NaN (no samples) equals NaN.
fn json(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).unwrap()
}

#[test]
fn a_run_is_a_pure_function_of_scenario_and_seed() {
    let a = run_named("chain-5hop", &[("duration", "60")]);
    let b = run_named("chain-5hop", &[("duration", "60")]);
    assert_eq!(json(&a), json(&b), "bit-for-bit identical results");
    assert!(a.events > 10_000);
    let c = run_named("chain-5hop", &[("duration", "60"), ("seed", "2")]);
    assert_ne!(a.flows[0].delivered_bytes, c.flows[0].delivered_bytes, "another seed, other losses");
}

#[test]
fn adding_a_flow_does_not_change_another_links_losses() {
    // Link 2-1 (the ACK direction) carries nothing but ACKs; adding a UDP flow
    // on link 3-4 must leave the loss pattern of every other channel alone.
    // Compare the per-packet loss decisions through the counters of a lossy
    // channel that both runs drive with the same traffic: the 5-6 hop of a
    // flow 5 -> 6 that exists in both.
    let base = r#"
        duration = 30
        nodes = [1, 2, 3, 4, 5, 6]
        [link_class.l]
        capacity = "10Mbps"
        delay = "1ms"
        loss = 0.2
        [[links]]
        between = [3, 4]
        class = "l"
        [[links]]
        between = [5, 6]
        class = "l"
        [[links]]
        between = [1, 3]
        class = "l"
        [[flows]]
        src = 5
        dst = 6
        app = "cbr"
        rate = "1Mbps"
    "#;
    let extra = format!("{base}\n[[flows]]\nsrc = 3\ndst = 4\napp = \"cbr\"\nrate = \"2Mbps\"\n");
    let one = run(base, &[]);
    let two = run(&extra, &[]);
    let link = |r: &ncmesh_sim::RunResult| r.links.iter().find(|l| (l.from, l.to) == (5, 6)).unwrap().clone();
    assert_eq!(link(&one), link(&two));
    assert_eq!(json(&one.flows[0]), json(&two.flows[0]));
    assert!(two.links.iter().any(|l| (l.from, l.to) == (3, 4) && l.lost > 0));
}

#[test]
fn lossless_link_carries_at_least_95_percent_of_the_payload_share() {
    // 10 Mbit/s, 20 ms, window of 100 segments = 100 kB > BDP (10e6 * 0.04 / 8 = 50 kB).
    let r = run_named("single-lossy-link", &[("links.0.loss", "0.0"), ("duration", "60")]);
    let payload_share = 10e6 * 1000.0 / 1040.0;
    let goodput = r.flows[0].goodput_bps;
    assert!(goodput >= 0.95 * payload_share, "{goodput} < 95% of {payload_share}");
    assert!(goodput <= payload_share * 1.0001, "{goodput} exceeds the capacity");
    assert_eq!(r.flows[0].retransmits, 0);
}

#[test]
fn udp_cbr_below_capacity_is_delivered_with_the_link_loss() {
    let text = r#"
        duration = 100
        nodes = [1, 2]
        [[links]]
        between = [1, 2]
        capacity = "1Mbps"
        delay = "50ms"
        loss = 0.1
        [[flows]]
        src = 1
        dst = 2
        app = "cbr"
        rate = "500kbps"
        packet_size = 1000
    "#;
    let r = run(text, &[]);
    let f = &r.flows[0];
    // 62.5 packets/s for 100 s = 6250 sent; about 90% arrive.
    assert_eq!(f.packets_sent, 6250);
    let ratio = f.delivered_bytes as f64 / (6250.0 * 1000.0);
    assert!((ratio - 0.9).abs() < 0.015, "{ratio}");
    // Delay is serialisation (1028 B at 1 Mbit/s = 8.224 ms) plus 50 ms: no queueing at half load.
    assert!((f.delay_mean_s - 0.058224).abs() < 1e-6, "{}", f.delay_mean_s);
    assert!(f.delay_std_s < 1e-6);
}

#[test]
fn a_connection_opened_ahead_of_its_data_spares_the_data_the_handshake() {
    // 1 Mbit/s, 100 ms: the handshake takes one 200 ms round trip.
    let text = r#"
        duration = 30
        nodes = [1, 2]
        [tcp]
        profile = "linux"
        [[links]]
        between = [1, 2]
        capacity = "1Mbps"
        delay = "100ms"
        [[flows]]
        src = 1
        dst = 2
        app = "sized"
        bytes = 100000
        start = 5
    "#;
    let at_start = run(text, &[]).flows[0].completion_s.expect("completes");
    let ahead = run(text, &[("flows.0.connect", "1")]).flows[0].completion_s.expect("completes");
    let saved = at_start - ahead;
    assert!((0.199..0.21).contains(&saved), "{at_start} - {ahead} = {saved}");
}
