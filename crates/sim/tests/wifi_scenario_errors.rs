//! A bad `[wifi]` section is refused with the file, the key, its line and what was expected.

mod common;
use common::{edited, load, refused};

const GOOD: &str = r#"duration = 10
nodes = [1, 2, 3]

[wifi]
data_rate = "11Mbps"
placement = { kind = "line", spacing = 9 }
reach = 20
sense = 32
fer = [
  [0.0, 0.0, 0.6],
  [0.0, 0.0, 0.0],
  [0.6, 0.0, 0.0],
]

[[flows]]
src = 1
dst = 3
app = "bulk"
path = [1, 2, 3]
"#;

fn edit(from: &str, to: &str) -> String {
    edited(GOOD, from, to)
}

#[test]
fn the_reference_channel_loads_and_routes_over_its_pairs() {
    let s = load(GOOD, &[]).unwrap();
    let channel = s.channel.as_ref().expect("a channel");
    assert_eq!(channel.links(), vec![[0, 1], [0, 2], [1, 2]], "every pair within 20 m, the lossy one too");
    assert_eq!(channel.loss(0, 2), 0.6);
    let t = s.topology();
    assert_eq!(t.channels.len(), 6);
}

#[test]
fn negative_range() {
    let (key, line, message) = refused(&edit("reach = 20", "reach = -5"));
    assert_eq!((key.as_str(), line), ("wifi.reach", Some(7)));
    assert!(message.contains("positive range in metres"), "{message}");
}

#[test]
fn sense_shorter_than_reach() {
    let (key, line, message) = refused(&edit("sense = 32", "sense = 10"));
    assert_eq!((key.as_str(), line), ("wifi.sense", Some(8)));
    assert!(message.contains("at least the reach"), "{message}");
}

#[test]
fn frame_error_rate_outside_the_unit_interval() {
    let (key, line, message) = refused(&edit("[0.6, 0.0, 0.0]", "[1.6, 0.0, 0.0]"));
    assert_eq!((key.as_str(), line), ("wifi.fer[2][0]", Some(12)));
    assert!(message.contains("probability in [0, 1]") && message.contains("1.6"), "{message}");
    let (key, _, _) = refused(
        &edit("fer = [", "fer = -0.1\nfoo = [")
            .replace("foo = [\n  [0.0, 0.0, 0.6],\n  [0.0, 0.0, 0.0],\n  [0.6, 0.0, 0.0],\n]\n", ""),
    );
    assert_eq!(key, "wifi.fer");
}

#[test]
fn unknown_rate() {
    let (key, line, message) = refused(&edit("data_rate = \"11Mbps\"", "data_rate = \"54Mbps\""));
    assert_eq!((key.as_str(), line), ("wifi.data_rate", Some(5)));
    assert!(message.contains("no rate of 54 Mbit/s") && message.contains("1, 2, 5.5, 11"), "{message}");
}

#[test]
fn matrix_of_the_wrong_size() {
    let (key, line, message) = refused(&edit("  [0.0, 0.0, 0.0],\n", ""));
    assert_eq!((key.as_str(), line), ("wifi.fer", Some(9)));
    assert!(message.contains("3 x 3 matrix") && message.contains("found 2 rows"), "{message}");
    let (key, line, message) = refused(&edit("[0.0, 0.0, 0.6]", "[0.0, 0.6]"));
    assert_eq!((key.as_str(), line), ("wifi.fer[0]", Some(10)));
    assert!(message.contains("expected 3 entries"), "{message}");
}

#[test]
fn unknown_key_and_unknown_placement() {
    let (key, line, message) = refused(&edit("reach = 20", "raech = 20"));
    assert_eq!((key.as_str(), line), ("wifi.raech", Some(7)));
    assert!(message.contains("unknown field `raech`"), "{message}");
    let (key, _, message) = refused(&edit("kind = \"line\"", "kind = \"spiral\""));
    assert!(key.starts_with("wifi.placement"), "{key}");
    assert!(message.contains("spiral"), "{message}");
}

#[test]
fn a_range_needs_positions_and_sinr_needs_powers() {
    let (key, _, message) = refused(&edit("placement = { kind = \"line\", spacing = 9 }\n", ""));
    assert_eq!(key, "wifi.reach");
    assert!(message.contains("needs wifi.placement"), "{message}");
    let (key, _, message) = refused(&edit("reach = 20", "reach = 20\ninterference = \"sinr\""));
    assert_eq!(key, "wifi.interference");
    assert!(message.contains("propagation"), "{message}");
}

#[test]
fn messages_read_as_file_line_key() {
    let e = load(&edit("reach = 20", "reach = -5"), &[]).unwrap_err().to_string();
    assert_eq!(e, "test.toml:7: wifi.reach: expected a positive range in metres, found -5");
}

mod never_panics {
    use super::GOOD;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// A valid channel with one line changed to arbitrary text.
        #[test]
        fn one_line_changed(line in 0usize..20, replacement in "[a-z_\\[\\]{}=.,\" 0-9-]{0,30}") {
            let mut lines: Vec<&str> = GOOD.lines().collect();
            if line < lines.len() {
                lines[line] = &replacement;
            }
            if let Ok(s) = super::common::load(&lines.join("\n"), &[]) {
                // At most ten simulated seconds, whatever the duration became.
                ncmesh_sim::Simulation::new(&s).run_until(ncmesh_proto::Instant::from_secs_f64(10.0));
            }
        }
    }
}

#[test]
fn overrides_reach_the_channel_and_name_themselves() {
    let s = load(GOOD, &[("wifi.rts_threshold", "0"), ("wifi.placement.spacing", "8")]).unwrap();
    assert_eq!(s.spec.wifi.as_ref().map(|w| w.rts_threshold), Some(0));
    let e = load(GOOD, &[("wifi.rts_treshold", "0")]).unwrap_err().to_string();
    assert!(e.starts_with("--set wifi.rts_treshold: wifi.rts_treshold: unknown field `rts_treshold`"), "{e}");
    let e = load(GOOD, &[("wifi.sense", "10")]).unwrap_err().to_string();
    assert!(e.starts_with("--set wifi.sense: wifi.sense: ") && e.contains("at least the reach"), "{e}");
}
