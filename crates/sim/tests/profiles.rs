//! Stack profiles in scenarios, and the handshake through the simulator
//! and through the coding layers that sit under TCP.

mod common;
use common::*;
use ncmesh_proto::tcp::{Profile, Recovery, TcpConfig};

/// The issue's 5-hop chain: 1 Mbit/s, 100 ms hops, an RTT above 1 s.
const CHAIN: &str = r#"
duration = 120
nodes = [1, 2, 3, 4, 5, 6]
[tcp]
profile = "ns3"
mss = 1000
rcv_window = 100
[link_class.hop]
capacity = "1Mbps"
delay = "100ms"
queue = 50
[[links]]
between = [1, 2]
class = "hop"
[[links]]
between = [2, 3]
class = "hop"
[[links]]
between = [3, 4]
class = "hop"
[[links]]
between = [4, 5]
class = "hop"
[[links]]
between = [5, 6]
class = "hop"
[[flows]]
src = 1
dst = 6
app = "bulk"
"#;

#[test]
fn a_lossless_flow_over_a_path_longer_than_the_initial_rto_never_retransmits() {
    for profile in ["\"ns3\"", "\"linux\""] {
        let r = run(CHAIN, &[("tcp.profile", profile), ("tcp.mss", "1000")]);
        let f = &r.flows[0];
        assert_eq!((f.timeouts, f.retransmits), (0, 0), "{profile}");
        // Window-limited: 100 segments per RTT of at least 1.044 s is at most
        // 766 kbit/s; goodput counts from the flow's start, handshake included.
        assert!(f.goodput_bps > 0.9 * 766e3 && f.goodput_bps < 766e3, "{profile}: {}", f.goodput_bps);
    }
    // ns-2's one-way agents have no handshake: the first window times out.
    let r = run(CHAIN, &[("tcp.profile", "\"ns2\"")]);
    assert!(r.flows[0].timeouts > 0);
}

#[test]
fn a_profile_fills_in_what_the_scenario_leaves_out() {
    let s = load(CHAIN, &[("tcp.min_rto", "0.5")]).unwrap();
    let tcp = &s.spec.flows[0].tcp;
    let ns3 = TcpConfig::profile(Profile::Ns3);
    assert_eq!(tcp.profile, Profile::Ns3);
    assert_eq!(tcp.initial_cwnd, ns3.initial_cwnd);
    assert_eq!(tcp.recovery, Some(Recovery::Prr));
    assert!(tcp.handshake && tcp.delayed_ack && tcp.reset_backoff_on_new_ack);
    assert_eq!((tcp.mss, tcp.rcv_window), (1000, 100), "explicit keys win");
    assert_eq!(tcp.min_rto.as_secs_f64(), 0.5);
    // A flow's own profile starts from its own stack, under the scenario's keys.
    let text = CHAIN.replace("app = \"bulk\"", "app = \"bulk\"\ntcp = { profile = \"linux\" }");
    let s = load(&text, &[]).unwrap();
    let tcp = &s.spec.flows[0].tcp;
    assert_eq!((tcp.profile, tcp.mss), (Profile::Linux, 1000));
    assert_eq!(tcp.min_rto, TcpConfig::profile(Profile::Linux).min_rto);
}

#[test]
fn an_unknown_profile_is_refused_with_its_line() {
    let e = load(CHAIN, &[("tcp.profile", "\"bsd\"")]).unwrap_err().to_string();
    assert!(e.contains("tcp.profile") && e.contains("expected \"ns2\", \"ns3\" or \"linux\""), "{e}");
    let text = CHAIN.replace("profile = \"ns3\"", "profile = 3");
    let e = load(&text, &[]).unwrap_err().to_string();
    assert!(e.contains(":5: tcp.profile"), "{e}");
}

#[test]
fn syn_and_fin_pass_through_the_coding_layers() {
    // A sized transfer over lossy hops with each coded transport: the
    // handshake completes, every byte arrives, and the FIN closes it.
    for scheme in ["tcpnc-e2e", "tcpnc-hbh", "honc"] {
        for payloads in ["virtual", "real"] {
            let r = run(
                CHAIN,
                &[
                    ("coding.scheme", &format!("\"{scheme}\"")),
                    ("flows.0.app", "\"sized\""),
                    ("flows.0.bytes", "200000"),
                    ("link_class.hop.loss", "0.02"),
                    ("payloads", &format!("\"{payloads}\"")),
                    ("duration", "300"),
                ],
            );
            let f = &r.flows[0];
            assert_eq!(f.delivered_bytes, 200_000, "{scheme} {payloads}");
            assert_eq!(f.corrupt_bytes, 0, "{scheme} {payloads}");
            assert!(f.completion_s.is_some(), "{scheme} {payloads}: the FIN was acknowledged");
        }
    }
}

#[test]
fn a_prefix_goes_ahead_of_the_data_which_waits_for_its_ack() {
    // iperf3's cookie: 37 bytes once connected, the data once they are
    // acknowledged, neither the cookie nor the wait counted.
    let linux = [("tcp.profile", "\"linux\""), ("payloads", "\"real\"")];
    let sized = edited(CHAIN, "app = \"bulk\"", "app = \"sized\"\nbytes = 200000\nprefix = 37");
    let f = &run(&sized, &linux).flows[0];
    assert_eq!((f.delivered_bytes, f.corrupt_bytes, f.retransmits), (200_000, 0, 0));

    // Started at once, the data leaves when the cookie's ACK arrives, two
    // round trips in (the handshake's and the cookie's, 1.005 s each for
    // packets this small), and
    // the goodput is timed from then, as iperf3 times its test.
    let waits = edited(CHAIN, "app = \"bulk\"", "app = \"bulk\"\nprefix = 37");
    let f = &run(&waits, &linux).flows[0];
    let data_started = 120.0 - f.delivered_bytes as f64 * 8.0 / f.goodput_bps;
    assert!((2.0..2.02).contains(&data_started), "{data_started}");
}

#[test]
fn only_a_tcp_application_writes_a_prefix() {
    let udp = edited(CHAIN, "app = \"bulk\"", "app = \"cbr\"\nrate = \"100kbps\"\nprefix = 37");
    let (key, line, message) = refused(&udp);
    assert_eq!((key.as_str(), line), ("flows[0].prefix", Some(32)), "{message}");
    assert!(message.contains("only a TCP application"), "{message}");
}
