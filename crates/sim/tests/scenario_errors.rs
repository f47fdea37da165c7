//! A bad scenario is refused with the key, its line and what was expected.

mod common;
use common::{edited, load, refused};
use ncmesh_sim::scenario::ScenarioError;

const GOOD: &str = r#"duration = 10
nodes = [1, 2, 3]

[link_class.radio]
capacity = "1Mbps"
delay = "10ms"

[[links]]
between = [1, 2]
class = "radio"

[[links]]
between = [2, 3]
class = "radio"
loss = 0.1

[[flows]]
src = 1
dst = 3
app = "bulk"
"#;

fn edit(from: &str, to: &str) -> String {
    edited(GOOD, from, to)
}

#[test]
fn the_reference_scenario_loads() {
    let s = load(GOOD, &[]).unwrap();
    assert_eq!(s.spec.links[0].capacity.0, 1_000_000);
    assert_eq!(s.spec.links[1].loss, 0.1);
}

#[test]
fn unknown_key() {
    let (key, line, message) = refused(&edit("loss = 0.1", "los = 0.1"));
    assert_eq!(key, "links[1].los");
    assert_eq!(line, Some(15));
    assert!(message.contains("unknown field `los`") && message.contains("loss"), "{message}");
}

#[test]
fn wrong_type() {
    let (key, line, message) = refused(&edit("src = 1", "src = \"one\""));
    assert_eq!((key.as_str(), line), ("flows[0].src", Some(18)));
    assert!(message.contains("expected u32"), "{message}");
}

#[test]
fn loss_outside_the_unit_interval() {
    let (key, line, message) = refused(&edit("loss = 0.1", "loss = 1.5"));
    assert_eq!((key.as_str(), line), ("links[1].loss", Some(15)));
    assert!(message.contains("[0, 1)"), "{message}");
}

#[test]
fn non_positive_capacity() {
    let (key, line, message) = refused(&edit("capacity = \"1Mbps\"", "capacity = 0"));
    // The class supplies the capacity to both links; the first one fails.
    assert!(key.starts_with("links[0].capacity") || key.starts_with("link_class"), "{key}");
    assert!(line.is_some(), "{key}");
    assert!(message.contains("positive rate"), "{message}");
}

#[test]
fn reference_to_a_missing_node() {
    let (key, line, message) = refused(&edit("dst = 3", "dst = 7"));
    assert_eq!((key.as_str(), line), ("flows[0].dst", Some(19)));
    assert!(message.contains("no node 7"), "{message}");
}

#[test]
fn no_route_between_a_flows_ends() {
    let text = edit("nodes = [1, 2, 3]", "nodes = [1, 2, 3, 4]").replacen("dst = 3", "dst = 4", 1);
    let (key, line, message) = refused(&text);
    assert_eq!((key.as_str(), line), ("flows[0]", Some(17)));
    assert!(message.contains("no route from node 1 to node 4"), "{message}");
}

#[test]
fn unknown_link_class() {
    let (key, line, message) = refused(&edit("class = \"radio\"", "class = \"radi0\""));
    assert_eq!((key.as_str(), line), ("links[0].class", Some(10)));
    assert!(message.contains("no link class \"radi0\""), "{message}");
}

#[test]
fn syntax_errors_have_a_line() {
    match load(&edit("app = \"bulk\"", "app = bulk"), &[]).unwrap_err() {
        ScenarioError::Syntax { line, .. } => assert_eq!(line, Some(20)),
        other => panic!("{other}"),
    }
}

#[test]
fn overrides_reach_classes_and_indexed_links() {
    let s =
        common::load(GOOD, &[("link_class.radio.loss", "0.2"), ("links.1.queue", "7"), ("tcp.variant", "\"vegas\"")])
            .unwrap();
    assert_eq!(s.spec.links[0].loss, 0.2, "the class value reaches links without their own");
    assert_eq!(s.spec.links[1].loss, 0.1, "a link's own value wins over its class");
    assert_eq!(s.spec.links[1].queue, 7);
    assert_eq!(s.spec.flows[0].tcp.variant, ncmesh_proto::tcp::Variant::Vegas);
    match common::load(GOOD, &[("links.5.loss", "0.1")]).unwrap_err() {
        ScenarioError::Override { message, .. } => assert!(message.contains("past the end"), "{message}"),
        other => panic!("{other}"),
    }
    // A bad value set by override is reported at the key it set.
    let e = common::load(GOOD, &[("links.0.loss", "2")]).unwrap_err().to_string();
    assert!(e.contains("links[0].loss"), "{e}");
}

#[test]
fn messages_read_as_file_line_key() {
    let e = load(&edit("dst = 3", "dst = 7"), &[]).unwrap_err().to_string();
    assert_eq!(e, "test.toml:19: flows[0].dst: no node 7; expected one of the labels in `nodes`");
}

mod never_panics {
    use super::GOOD;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// Arbitrary text is refused or accepted, never a panic.
        #[test]
        fn arbitrary_text(text in "\\PC{0,400}") {
            let _ = super::common::load(&text, &[]);
        }

        /// A valid scenario with one line changed to arbitrary text.
        #[test]
        fn one_line_changed(line in 0usize..22, replacement in "[a-z_\\[\\]=.\" 0-9-]{0,30}") {
            let mut lines: Vec<&str> = GOOD.lines().collect();
            if line < lines.len() {
                lines[line] = &replacement;
            }
            if let Ok(s) = super::common::load(&lines.join("\n"), &[]) {
                let _ = ncmesh_sim::Simulation::new(&s);
            }
        }

        /// Any override of any key with any small value.
        #[test]
        fn arbitrary_override(key in "(duration|seed|links\\.[0-2]\\.(loss|queue|capacity|delay)|flows\\.0\\.(src|dst|count|start|stop)|tcp\\.(mss|rcv_window|variant))", value in "[0-9.\"a-z-]{0,8}") {
            if let Ok(s) = super::common::load(GOOD, &[(&key, &value)]) {
                let _ = ncmesh_sim::Simulation::new(&s);
            }
        }
    }
}

#[test]
fn emulate_commands_name_a_node_and_a_command() {
    let text = format!("{GOOD}\n[emulate]\nmtu = 1052\n[[emulate.commands]]\nnode = 7\nrun = \"iperf3 -s\"\n");
    let (key, line, message) = refused(&text);
    assert_eq!(key, "emulate.commands[0].node");
    assert_eq!(line, Some(25));
    assert!(message.contains("no node 7"), "{message}");
    let text = format!("{GOOD}\n[emulate]\nmtu = 100\n");
    let (key, _, message) = refused(&text);
    assert_eq!((key.as_str(), message.as_str()), ("emulate.mtu", "expected an MTU of 576 to 65535 bytes, found 100"));
    let text = format!("{GOOD}\n[[emulate.commands]]\nnode = 1\nrun = \" \"\n");
    assert_eq!(refused(&text).0, "emulate.commands[0].run");
    let text = format!("{GOOD}\n[[emulate.commands]]\nnode = 1\nrun = \"x\"\nwhen = 3\n");
    let (key, _, message) = refused(&text);
    assert!(key.starts_with("emulate.commands[0]") && message.contains("unknown field `when`"), "{key}: {message}");
}

#[test]
fn a_connection_opens_at_or_before_its_data_and_only_for_tcp() {
    let (key, line, message) = refused(&edit("app = \"bulk\"", "app = \"bulk\"\nstart = 2\nconnect = 3"));
    assert_eq!((key.as_str(), line), ("flows[0].connect", Some(22)));
    assert!(message.contains("at or before the start (2.000000s)"), "{message}");
    let text = edit("app = \"bulk\"", "app = \"cbr\"\nrate = \"100kbps\"\nconnect = 0");
    let (key, _, message) = refused(&text);
    assert_eq!(key, "flows[0].connect");
    assert!(message.contains("only a TCP application"), "{message}");
    assert!(load(&edit("app = \"bulk\"", "app = \"bulk\"\nstart = 2\nconnect = 0"), &[]).is_ok());
}

/// The key and message of an override that is refused.
fn override_refused(text: &str, overrides: &[(&str, &str)]) -> (String, String) {
    match load(text, overrides).expect_err("the override must be refused") {
        ScenarioError::Override { key, message } => (key, message),
        other => panic!("expected a refused override, got {other}"),
    }
}

#[test]
fn an_override_cannot_add_a_named_entry() {
    // A misspelt class name would add a class no link uses, and change nothing.
    let (key, message) = override_refused(GOOD, &[("link_class.radi0.loss", "0.2")]);
    assert_eq!(key, "link_class.radi0.loss");
    assert!(message.contains("no entry \"radi0\" in link_class") && message.contains("[\"radio\"]"), "{message}");
    let (_, message) = override_refused(GOOD, &[("link_class.wireless", "{ loss = 0.2 }")]);
    assert!(message.contains("no entry \"wireless\""), "{message}");
    let text =
        edit("[link_class.radio]", "[link_class.radio_]").replace("class = \"radio\"", "capacity = 1e6\ndelay = 0.01");
    let text = text.replacen("[link_class.radio_]\ncapacity = \"1Mbps\"\ndelay = \"10ms\"\n", "", 1);
    let (_, message) = override_refused(&text, &[("link_class.radio.loss", "0.2")]);
    assert!(message.contains("link_class has no entries"), "{message}");
    let e = load(GOOD, &[("link_class.radio.loss", "0.2")]).unwrap();
    assert_eq!(e.spec.links[0].loss, 0.2);
}

#[test]
fn overrides_may_set_known_keys_the_file_leaves_out() {
    let real = format!("payloads = \"real\"\n{GOOD}");
    let s = load(&real, &[("coding.scheme", "\"tcpnc-e2e\""), ("links.0.corrupt", "0.1"), ("tcp.mss", "500")]).unwrap();
    assert_eq!(s.spec.coding.scheme, "tcpnc-e2e");
    assert_eq!(s.spec.links[0].corrupt, 0.1);
    assert_eq!(s.spec.flows[0].tcp.mss, 500);
    assert!(load(GOOD, &[("probes.interval", "2"), ("coding.tcpnc.redundancy", "1.2")]).is_ok());
    // A scheme's table is a known key, not a name: a misspelt one is unknown.
    let (key, message) = override_refused(GOOD, &[("coding.tcpncc.redundancy", "1.2")]);
    assert_eq!(key, "coding.tcpncc.redundancy");
    assert!(message.starts_with("coding.tcpncc: unknown field `tcpncc`"), "{message}");
    let (key, message) = override_refused(GOOD, &[("links.7.loss", "0.1")]);
    assert_eq!((key.as_str(), message.as_str()), ("links.7.loss", "index 7 is past the end of an array of 2"));
}

const CBR: &str = "app = \"cbr\"\nrate = \"1Mbps\"";

#[test]
fn udp_rates_and_datagrams_are_bounded() {
    let (key, line, message) = refused(&edit("app = \"bulk\"", "app = \"cbr\"\nrate = 1e11"));
    assert_eq!((key.as_str(), line), ("flows[0].rate", Some(21)));
    assert_eq!(
        message,
        "expected at most one datagram a microsecond, 8000000000 bit/s with packet_size = 1000 bytes, found 100000000000"
    );
    let (key, line, message) = refused(&edit("app = \"bulk\"", "app = \"cbr\"\nrate = 1e14"));
    assert_eq!(
        (key.as_str(), line, message.as_str()),
        ("flows[0].rate", Some(21), "expected a rate of at most 1 Tbit/s (1e12 bit/s), found 1e14")
    );
    let (key, _, message) = refused(&edit("app = \"bulk\"", "app = \"onoff\"\nrate = \"9Gbps\""));
    assert!(key == "flows[0].rate" && message.contains("one datagram a microsecond"), "{key}: {message}");
    let (key, line, message) = refused(&edit("app = \"bulk\"", "app = \"cbr\"\nrate = 1e300"));
    assert_eq!((key.as_str(), line), ("flows[0].rate", Some(21)));
    assert!(message.contains("at most 1 Tbit/s"), "{message}");
    let (key, line, message) = refused(&edit("app = \"bulk\"", &format!("{CBR}\npacket_size = 65508")));
    assert_eq!((key.as_str(), line), ("flows[0].packet_size", Some(22)));
    assert!(message.starts_with("expected at most 65507 bytes"), "{message}");
    assert_eq!(refused(&edit("app = \"bulk\"", &format!("{CBR}\npacket_size = 100000000"))).0, "flows[0].packet_size");
    assert!(load(&edit("app = \"bulk\"", &format!("{CBR}\npacket_size = 65507")), &[]).is_ok());
    assert!(load(&edit("app = \"bulk\"", "app = \"cbr\"\nrate = 8e9"), &[]).is_ok());
}

#[test]
fn capacities_delays_and_durations_are_bounded() {
    let (key, line, message) = refused(&edit("capacity = \"1Mbps\"", "capacity = 1e300"));
    assert_eq!((key.as_str(), line), ("link_class.radio.capacity", Some(5)));
    assert!(message.contains("at most 1 Tbit/s"), "{message}");
    let (key, line, message) = refused(&edit("loss = 0.1", "delay = 1e300"));
    assert_eq!((key.as_str(), line), ("links[1].delay", Some(15)));
    assert!(message.starts_with("expected a time of at most 1e7 s"), "{message}");
    let (key, line, message) = refused(&edit("duration = 10", "duration = 1e300"));
    assert_eq!((key.as_str(), line), ("duration", Some(1)));
    assert!(message.contains("at most 1e7 s") && message.contains("1e300"), "{message}");
    assert!(load(&edit("duration = 10", "duration = \"10000000s\""), &[]).is_ok());
}

const TCP: &str = "\n[tcp]\nvariant = \"newreno\"\nmss = 1000\n";

#[test]
fn errors_in_the_tcp_table_are_reported_there() {
    let text = format!("{GOOD}{TCP}");
    let (key, line, message) = refused(&text.replacen("variant = ", "varient = ", 1));
    assert_eq!((key.as_str(), line), ("tcp.varient", Some(23)));
    assert!(message.contains("unknown field `varient`"), "{message}");
    let (key, line, message) = refused(&text.replacen("mss = 1000", "mss = true", 1));
    assert_eq!((key.as_str(), line), ("tcp.mss", Some(24)));
    assert!(message.contains("invalid type: boolean `true`"), "{message}");
    let (key, line, _) = refused(&text.replacen("\"newreno\"", "\"newrenoo\"", 1));
    assert_eq!((key.as_str(), line), ("tcp.variant", Some(23)));
    // A flow's own table still names the flow.
    let own = edit("app = \"bulk\"", "app = \"bulk\"\ntcp = { mss = true }");
    assert_eq!(refused(&own).0, "flows[0].tcp.mss");
    let (key, message) = override_refused(GOOD, &[("tcp.varient", "cubic")]);
    assert_eq!(key, "tcp.varient");
    assert!(message.starts_with("tcp.varient: unknown field `varient`"), "{message}");
}

#[test]
fn a_missing_key_is_named() {
    let (key, line, message) = refused(&edit("duration = 10\n", ""));
    assert_eq!((key.as_str(), line), ("duration", None));
    assert_eq!(message, "missing key `duration`, which is required");
    let text = edit("[[links]]\nbetween = [1, 2]\nclass = \"radio\"", "[[links]]\nbetween = [1, 2]\ndelay = 0.1");
    let (key, line, message) = refused(&text);
    assert_eq!((key.as_str(), line), ("links[0].capacity", Some(8)));
    assert_eq!(message, "missing key `capacity`, which is required");
}

#[test]
fn syntax_and_shape_errors_say_what_was_expected() {
    match load(&edit("loss = 0.1", "loss = 0.1\nloss = 0.2"), &[]).unwrap_err() {
        ScenarioError::Syntax { line, message, .. } => {
            assert_eq!(line, Some(16));
            assert!(message.starts_with("duplicate key `loss`"), "{message}");
        }
        other => panic!("{other}"),
    }
    let twice = format!("{GOOD}{TCP}\n[tcp]\nmss = 500\n");
    match load(&twice, &[]).unwrap_err() {
        ScenarioError::Syntax { message, .. } => assert!(message.starts_with("duplicate key `tcp`"), "{message}"),
        other => panic!("{other}"),
    }
    let (key, line, message) = refused(&format!("tcp = [1, 2]\n{GOOD}"));
    assert_eq!((key.as_str(), line, message.as_str()), ("tcp", Some(1), "expected a table, found an array of 2"));
}

#[test]
fn an_override_error_names_the_override_not_the_file() {
    let (key, message) = override_refused(GOOD, &[("seed", "18446744073709551615")]);
    assert_eq!(key, "seed");
    assert_eq!(message, "expected an integer from -2^63 to 2^63 - 1, what TOML holds, found 18446744073709551615");
    let seeded = format!("seed = 5\n{GOOD}");
    let (key, message) = override_refused(&seeded, &[("seed", "-1")]);
    assert_eq!(key, "seed");
    assert!(message.starts_with("seed: invalid value: integer `-1`"), "{message}");
    // A class value set by override is the override's error, at the class.
    let (key, message) = override_refused(GOOD, &[("link_class.radio.loss", "1.5")]);
    assert_eq!(key, "link_class.radio.loss");
    assert_eq!(message, "link_class.radio.loss: expected a probability in [0, 1), found 1.5");
    assert_eq!(
        load(&seeded, &[("links.1.loss", "1.5")]).unwrap_err().to_string(),
        "--set links.1.loss: links[1].loss: expected a probability in [0, 1), found 1.5"
    );
}
