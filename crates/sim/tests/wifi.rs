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
