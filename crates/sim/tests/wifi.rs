//! The shared 802.11 channel in whole runs: determinism, routing over the
//! channel, overhearing, hidden terminals.

mod common;
use common::*;
use ncmesh_sim::RunResult;

fn json(r: &RunResult) -> String {
    serde_json::to_string(r).unwrap()
}

fn radio(r: &RunResult, node: u32) -> &ncmesh_sim::result::RadioSummary {
    r.radios.iter().find(|x| x.node == node).expect("a radio")
}

fn pair(r: &RunResult, from: u32, to: u32) -> &ncmesh_sim::result::PairSummary {
    r.pairs.iter().find(|p| (p.from, p.to) == (from, to)).expect("a pair in reach")
}

#[test]
fn a_run_on_the_channel_is_a_pure_function_of_scenario_and_seed() {
    let a = run_named("wifi-x", &[("duration", "5")]);
    let b = run_named("wifi-x", &[("duration", "5")]);
    assert_eq!(json(&a), json(&b));
    let c = run_named("wifi-x", &[("duration", "5"), ("seed", "2")]);
    assert_ne!(a.radios, c.radios, "another seed, other backoffs");
}

#[test]
fn the_x_routes_through_the_relay_and_each_destination_overhears_the_other_source() {
    let r = run_named("wifi-x", &[("duration", "10")]);
    // S1 and S2 cannot reach their destinations: everything goes through R1 (node 5).
    let relayed = radio(&r, 5).data_frames;
    assert!(relayed > 1000, "{relayed}");
    assert_eq!(radio(&r, 2).data_frames + radio(&r, 4).data_frames, 0, "UDP sinks send nothing");
    assert!(r.pairs.iter().all(|p| !((p.from, p.to) == (1, 2) || (p.from, p.to) == (3, 4))), "out of reach");
    for (source, listener) in [(1, 4), (3, 2)] {
        let p = pair(&r, source, listener);
        assert!(p.received > 0 && p.received + p.collided + p.errored <= p.sent);
        assert_eq!(p.errored, 0, "lossless links");
    }
    assert!(radio(&r, 4).overheard >= pair(&r, 1, 4).received, "what D2 decodes of S1 is overheard");
}

#[test]
fn the_line_overhears_the_poor_direct_link_at_its_frame_error_rate() {
    let r = run_named("wifi-line", &[("duration", "20")]);
    let direct = pair(&r, 1, 3);
    let clean = direct.sent - direct.collided;
    let share = direct.received as f64 / clean as f64;
    // Binomial(clean, 0.4): 5 standard deviations.
    let sd = (0.4 * 0.6 / clean as f64).sqrt();
    assert!((share - 0.4).abs() < 5.0 * sd, "{share} of {clean}");
    assert!(clean - direct.received - direct.errored <= 1, "at most the frame on the air at the end is unresolved");
    assert!(r.flows[0].goodput_bps > 1e6, "{}", r.flows[0].goodput_bps);
}

#[test]
fn hidden_senders_collide_and_rts_cts_or_a_wider_sense_range_recover() {
    let hidden = run_named("wifi-hidden-pair", &[("duration", "10")]);
    let rts = run_named("wifi-hidden-pair", &[("duration", "10"), ("wifi.rts_threshold", "0")]);
    let sensed = run_named("wifi-hidden-pair", &[("duration", "10"), ("wifi.sense", "40")]);
    let collided = |r: &RunResult| {
        let (a, b) = (pair(r, 1, 2), pair(r, 3, 2));
        (a.collided + b.collided) as f64 / (a.sent + b.sent) as f64
    };
    let goodput = |r: &RunResult| r.flows.iter().map(|f| f.goodput_bps).sum::<f64>();
    assert!(collided(&hidden) > 0.3, "{}", collided(&hidden));
    assert!(collided(&sensed) < 0.1, "{}", collided(&sensed));
    assert!(collided(&rts) < 0.01, "data frames behind a CTS: {}", collided(&rts));
    assert!(goodput(&rts) > 1.15 * goodput(&hidden), "{} {}", goodput(&rts), goodput(&hidden));
    assert!(goodput(&sensed) > goodput(&rts));
}

/// Seed 003's channel: two-ray ground loss, Rayleigh fading, calibrated to
/// an average frame loss of 15%, with MAC retransmissions.
const FADED: &str = r#"duration = 20
nodes = [1, 2]

[wifi]
data_rate = "11Mbps"
control_rate = "11Mbps"
placement = { kind = "line", spacing = 100 }
reach = 150
propagation = { model = "two-ray", rayleigh = true, mean_loss = 0.15 }

[[flows]]
src = 1
dst = 2
app = "cbr"
rate = "8Mbps"
packet_size = 1472
"#;

#[test]
fn a_channel_calibrated_to_15_percent_loses_15_percent_and_retries_leave_almost_none() {
    let s = load(FADED, &[]).unwrap();
    let channel = s.channel.as_ref().unwrap();
    assert!((channel.loss(0, 1) - 0.15).abs() < 1e-3, "calibrated: {}", channel.loss(0, 1));
    let r = run(FADED, &[]);
    let p = pair(&r, 1, 2);
    assert_eq!(p.collided, 0, "one sender");
    let lost = p.errored as f64 / p.sent as f64;
    // Binomial over about 9000 attempts: sd 0.004; 5 sd. ACKs fade too, so
    // a few frames are retried although received.
    assert!((lost - 0.15).abs() < 0.02, "{lost} of {}", p.sent);
    let tx = radio(&r, 1);
    // Seed 003: at 15% loss what MAC retransmissions leave is below 1% (7 attempts here).
    assert!((tx.retry_drops as f64) < 0.01 * tx.acked as f64, "{} dropped of {}", tx.retry_drops, tx.acked);
    assert!(tx.retries as f64 > 0.12 * tx.data_frames as f64);
}

/// A receiver at the origin, a sender 5 m from it and another 60 m away on
/// the other side, out of each other's sense range.
const NEAR_AND_FAR: &str = r#"duration = 10
nodes = [1, 2, 3]

[wifi]
data_rate = "11Mbps"
control_rate = "11Mbps"
placement = { kind = "coordinates", at = [[0, 0], [5, 0], [-60, 0]] }
reach = 61                # 2 and 3, 65 m apart, are hidden from each other
propagation = { model = "log-distance" }

[[flows]]
src = 2
dst = 1
app = "cbr"
rate = "6Mbps"
packet_size = 1472

[[flows]]
src = 3
dst = 1
app = "cbr"
rate = "6Mbps"
packet_size = 1472
"#;

#[test]
fn under_sinr_the_stronger_frame_survives_an_overlap_and_capture_takes_the_receiver() {
    let share = |r: &RunResult, from: u32| {
        let p = pair(r, from, 1);
        p.received as f64 / p.sent as f64
    };
    let protocol = run(NEAR_AND_FAR, &[]);
    let sinr = run(NEAR_AND_FAR, &[("wifi.interference", "\"sinr\"")]);
    let capture = run(NEAR_AND_FAR, &[("wifi.interference", "\"sinr\""), ("wifi.capture_db", "10")]);
    // The near sender is 32 dB stronger (30 log10(12)): overlaps cost it nothing under SINR.
    assert!(share(&protocol, 2) < 0.8, "protocol model: overlaps lose frames ({})", share(&protocol, 2));
    assert!(share(&sinr, 2) > 0.97 * (1.0 - pair(&sinr, 2, 1).collided as f64 / pair(&sinr, 2, 1).sent as f64));
    assert!(share(&sinr, 2) > share(&protocol, 2) + 0.1);
    // Without capture a near frame that arrives while the far one is being
    // received is lost; with it the receiver switches to the near frame.
    assert!(share(&capture, 2) > share(&sinr, 2), "{} {}", share(&capture, 2), share(&sinr, 2));
    assert!(share(&capture, 3) <= share(&sinr, 3) + 0.02);
}

#[test]
fn queues_on_the_channel_are_probed_per_node_or_per_pair() {
    let all = run_named("wifi-x", &[("duration", "3"), ("probes.queues", "true")]);
    let probed: std::collections::BTreeSet<(u32, u32)> =
        all.queues.key.iter().copied().zip(all.queues.key2.iter().copied()).collect();
    assert_eq!(probed, (1..=5).map(|n| (n, 0)).collect(), "each node's MAC queue, keyed (node, 0)");
    assert!(all.queues.value.iter().any(|&q| q > 0.0), "the relay queues");
    let one = run_named("wifi-x", &[("duration", "3"), ("probes.queues", "[[5, 2]]")]);
    assert!(one.queues.key.iter().zip(&one.queues.key2).all(|(&a, &b)| (a, b) == (5, 2)));
    assert_eq!(
        one.queues.value,
        all.queues.value.iter().zip(&all.queues.key).filter(|(_, &k)| k == 5).map(|(&v, _)| v).collect::<Vec<_>>()
    );
}
