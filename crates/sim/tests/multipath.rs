//! Flows pinned to several paths: the candidates routing keeps, how the
//! scenario refuses bad paths, the per-flow split without a hop layer, and
//! TCP-HONC's per-packet choice (eq. 16) under the simulator.

mod common;
use common::*;
use ncmesh_sim::routing::NO_ROUTE;
use ncmesh_sim::scenario::ScenarioError;
use ncmesh_sim::RunResult;

/// A diamond: 1 reaches 4 over 2 (top) or 3 (bottom).
const DIAMOND: &str = r#"duration = 60
nodes = [1, 2, 3, 4]

[link_class.wireless]
capacity = "1Mbps"
delay = "10ms"
queue = 50

[[links]]
between = [1, 2]
class = "wireless"
[[links]]
between = [2, 4]
class = "wireless"
[[links]]
between = [1, 3]
class = "wireless"
[[links]]
between = [3, 4]
class = "wireless"

[[flows]]
src = 1
dst = 4
app = "bulk"
paths = [[1, 2, 4], [1, 3, 4]]
"#;

fn edit(from: &str, to: &str) -> String {
    assert!(DIAMOND.contains(from), "{from}");
    DIAMOND.replacen(from, to, 1)
}

fn refused(text: &str) -> (String, Option<usize>, String) {
    match load(text, &[]).expect_err("the scenario must be refused") {
        ScenarioError::Invalid { key, line, message, .. } => (key, line, message),
        other => panic!("expected an invalid key, got {other}"),
    }
}

/// The diamond with `key = value` added to link `i` (0: 1-2, 1: 2-4, 2: 1-3, 3: 3-4).
fn diamond_with(i: usize, key_value: &str) -> String {
    let link = ["between = [1, 2]", "between = [2, 4]", "between = [1, 3]", "between = [3, 4]"][i];
    DIAMOND.replacen(link, &format!("{link}\n{key_value}"), 1)
}

fn flows(text: &str, count: u32) -> String {
    text.replacen("app = \"bulk\"", &format!("app = \"bulk\"\ncount = {count}"), 1)
}

/// Data packets sent on the channel `from` -> `to`.
fn sent(r: &RunResult, from: u32, to: u32) -> u64 {
    r.links.iter().find(|l| l.from == from && l.to == to).expect("a channel").transmitted
}

#[test]
fn routing_keeps_every_candidate_where_paths_part_and_the_flow_hash_first() {
    let s = load(DIAMOND, &[]).unwrap();
    let t = s.topology();
    let paths: Vec<Vec<u32>> = vec![vec![0, 1, 3], vec![0, 2, 3]];
    for flow in 0..4u32 {
        let r = t.multipath(flow, &paths).unwrap();
        let first = if flow % 2 == 0 { 1 } else { 2 };
        // The table follows path flow % 2; the branch at node 1 (index 0) lists its hop first.
        assert_eq!(t.channels[r.table[0] as usize], (0, first));
        assert_eq!(r.branches.len(), 1);
        let b = r.branch(0).expect("node 1 has two next hops");
        assert_eq!(b.next.as_ref(), &[first, 3 - first]);
        assert_eq!(b.channels[0], r.table[0]);
        // Both middle nodes route on; the destination has no next hop.
        assert_ne!(r.table[1], NO_ROUTE);
        assert_ne!(r.table[2], NO_ROUTE);
        assert_eq!(r.table[3], NO_ROUTE);
        assert!(r.branch(1).is_none() && r.branch(2).is_none());
    }
    // One path: no branches at all, so forwarding stays one lookup.
    assert!(t.multipath(0, &paths[..1]).unwrap().branches.is_empty());
}

#[test]
fn a_path_that_is_not_linked_is_refused_with_its_index_and_line() {
    let (key, line, message) = refused(&edit("[1, 3, 4]]", "[1, 4]]"));
    assert_eq!((key.as_str(), line), ("flows[0].paths[1]", Some(26)));
    assert!(message.contains("nodes 1 and 4") && message.contains("not linked"), "{message}");
}

#[test]
fn a_repeated_node_or_wrong_ends_are_refused() {
    let (key, _, message) = refused(&edit("[1, 3, 4]]", "[1, 3, 1, 3, 4]]"));
    assert_eq!(key, "flows[0].paths[1][2]");
    assert!(message.contains("node 1 appears twice"), "{message}");
    let (key, line, message) = refused(&edit("[[1, 2, 4]", "[[1, 2]"));
    assert_eq!((key.as_str(), line), ("flows[0].paths[0]", Some(26)));
    assert!(message.contains("from the source 1 to the destination 4"), "{message}");
    let (key, _, message) = refused(&edit("paths = [[1, 2, 4], [1, 3, 4]]", "paths = []"));
    assert_eq!(key, "flows[0].paths");
    assert!(message.contains("at least one path"), "{message}");
    let (key, _, message) = refused(&edit("paths =", "path = [1, 2, 4]\npaths ="));
    assert_eq!(key, "flows[0].paths");
    assert!(message.contains("not both"), "{message}");
}

#[test]
fn paths_that_could_loop_together_are_refused() {
    // 1-2-3-4 and 1-3-2-4 cross 2 and 3 in opposite orders.
    let text = edit(
        "[[links]]\nbetween = [1, 2]",
        "[[links]]\nbetween = [2, 3]\nclass = \"wireless\"\n[[links]]\nbetween = [1, 2]",
    )
    .replace("paths = [[1, 2, 4], [1, 3, 4]]", "paths = [[1, 2, 3, 4], [1, 3, 2, 4]]");
    let (key, line, message) = refused(&text);
    assert_eq!((key.as_str(), line), ("flows[0].paths[1]", Some(29)));
    assert!(message.contains("could loop"), "{message}");
}

#[test]
fn without_a_hop_layer_each_flow_keeps_to_one_path() {
    // Flow 0 (the first) takes the top path, both ways.
    let one = run(DIAMOND, &[]);
    assert!(sent(&one, 1, 2) > 1000 && sent(&one, 2, 4) > 1000);
    assert_eq!((sent(&one, 1, 3), sent(&one, 3, 4), sent(&one, 4, 3)), (0, 0, 0));
    assert!(sent(&one, 4, 2) > 100, "ACKs come back over the reverse of the same path");
    // Two flows split by flow number, one per path, evenly.
    let two = run(&flows(DIAMOND, 2), &[]);
    let (top, bottom) = (sent(&two, 1, 2), sent(&two, 1, 3));
    assert!(top > 1000 && bottom > 1000);
    assert!((top as f64 / bottom as f64 - 1.0).abs() < 0.2, "{top} vs {bottom}");
    // TCP/NC hop by hop has a hop layer that leaves the choice to routing.
    let hbh = run(DIAMOND, &[("coding.scheme", "\"tcpnc-hbh\""), ("tcp.variant", "\"vegas\"")]);
    assert!(sent(&hbh, 1, 2) > 1000);
    assert_eq!(sent(&hbh, 1, 3), 0);
}

#[test]
fn runs_are_deterministic() {
    let text = flows(&diamond_with(3, "loss = 0.2"), 3);
    let o = [("coding.scheme", "\"honc\"")];
    let (a, b) = (run(&text, &o), run(&text, &o));
    assert_eq!(a.events, b.events);
    for (x, y) in a.flows.iter().zip(&b.flows) {
        assert_eq!((x.delivered_bytes, x.packets_sent), (y.delivered_bytes, y.packets_sent));
    }
    for (x, y) in a.links.iter().zip(&b.links) {
        assert_eq!((x.transmitted, x.lost), (y.transmitted, y.lost));
    }
}

#[test]
fn honc_spreads_one_flow_over_both_paths_and_in_order() {
    let r = run(DIAMOND, &[("coding.scheme", "\"honc\"")]);
    let (top, bottom) = (sent(&r, 1, 2), sent(&r, 1, 3));
    assert!(top > 1000 && bottom > 1000, "{top} vs {bottom}");
    // Two 1 Mbit/s paths carry one flow at more than one path's rate.
    let f = &r.flows[0];
    assert!(f.goodput_bps > 1.2e6, "{}", f.goodput_bps);
    assert_eq!((f.retransmits, f.timeouts), (0, 0));
}

#[test]
fn honc_moves_traffic_off_a_slow_path() {
    // The bottom path's second hop runs at a fifth of the top's rate.
    let r = run(&diamond_with(3, "capacity = \"200kbps\""), &[("coding.scheme", "\"honc\"")]);
    let (top, bottom) = (sent(&r, 1, 2), sent(&r, 1, 3));
    assert!(bottom > 0);
    assert!((bottom as f64) < 0.4 * top as f64, "top {top}, bottom {bottom}");
    assert!(r.flows[0].goodput_bps > 0.9e6, "{}", r.flows[0].goodput_bps);
}

#[test]
fn honc_moves_traffic_off_a_lossy_path() {
    let r = run(&diamond_with(3, "loss = 0.5"), &[("coding.scheme", "\"honc\"")]);
    let (top, bottom) = (sent(&r, 1, 2), sent(&r, 1, 3));
    assert!((bottom as f64) < 0.8 * top as f64, "top {top}, bottom {bottom}");
}

#[test]
fn the_fig1_scenario_loads_and_honc_uses_both_red_paths() {
    let r = run_named("honc-multi-path", &[("coding.scheme", "\"honc\""), ("duration", "250")]);
    assert_eq!(r.flows.len(), 8);
    let (a, b) = (sent(&r, 1, 3), sent(&r, 1, 4));
    assert!(a > 1000 && b > 1000, "path A {a}, path B {b}");
    let red: f64 = r.flows[..4].iter().map(|f| f.goodput_bps).sum();
    assert!(red > 1.3e6, "red flows {red}");
}
