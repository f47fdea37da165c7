//! TCP/NC end to end and hop by hop under the simulator.

mod common;
use common::*;

const LINK: &str = r#"
duration = 60
nodes = [1, 2]
[tcp]
rcv_window = 40
[[links]]
between = [1, 2]
capacity = "1Mbps"
delay = "100ms"
queue = 50
[[flows]]
src = 1
dst = 2
app = "bulk"
[coding]
scheme = "tcpnc-e2e"
"#;

#[test]
fn end_to_end_coding_masks_random_loss_from_tcp() {
    // 10% loss: NewReno alone crawls; TCP/NC at R = 1/(1-p) keeps the window open.
    let plain = run(LINK, &[("links.0.loss", "0.1"), ("coding.scheme", "\"none\"")]);
    let coded = run(LINK, &[("links.0.loss", "0.1")]);
    let (p, c) = (plain.flows[0].goodput_bps, coded.flows[0].goodput_bps);
    assert!(c > 2.0 * p, "TCP/NC {c} vs TCP {p}");
}

#[test]
fn lossless_end_to_end_coding_runs_at_the_payload_rate() {
    let r = run(LINK, &[("coding.tcpnc.margin", "0")]);
    let f = &r.flows[0];
    // A combination is 1000 payload bytes in 1065 on the wire (40 IP/TCP, 25 coding header).
    let share = 1e6 * 1000.0 / 1065.0;
    assert!(f.goodput_bps > 0.95 * share && f.goodput_bps <= share, "{}", f.goodput_bps);
    assert_eq!((f.retransmits, f.timeouts), (0, 0));
}

#[test]
fn real_and_virtual_payloads_give_the_same_run() {
    for scheme in ["\"tcpnc-e2e\"", "\"tcpnc-hbh\""] {
        let virtual_ = run(LINK, &[("links.0.loss", "0.05"), ("coding.scheme", scheme), ("duration", "20")]);
        let real = run(
            LINK,
            &[("links.0.loss", "0.05"), ("coding.scheme", scheme), ("duration", "20"), ("payloads", "\"real\"")],
        );
        assert_eq!(serde_json::to_string(&virtual_).unwrap(), serde_json::to_string(&real).unwrap(), "{scheme}");
        assert!(real.flows[0].delivered_bytes > 0);
    }
}

/// The chain 1-2-3: two copies of `LINK`.
fn chain() -> String {
    LINK.replace("nodes = [1, 2]", "nodes = [1, 2, 3]")
        .replace("dst = 2", "dst = 3")
        .replace("[[flows]]", "[[links]]\nbetween = [2, 3]\ncapacity = \"1Mbps\"\ndelay = \"100ms\"\n[[flows]]")
}

#[test]
fn hop_by_hop_relays_repair_each_hop_and_keep_delay_low() {
    let lossy = [("links.0.loss", "0.05"), ("links.1.loss", "0.05"), ("tcp.variant", "\"vegas\"")];
    let hbh = run(&chain(), &[&lossy[..], &[("coding.scheme", "\"tcpnc-hbh\"")]].concat());
    let plain = run(&chain(), &[&lossy[..], &[("coding.scheme", "\"none\"")]].concat());
    let f = &hbh.flows[0];
    // Recoded combinations carry 40 IP/TCP and at most 17 + 40 coding-header
    // bytes; the relays send 1.1/(1-p) per degree of freedom.
    let ceiling = 1e6 * 1000.0 / 1097.0 * 0.95 / 1.1;
    assert!(f.goodput_bps > 0.7 * ceiling, "{f:?}");
    assert!(
        f.goodput_bps > 3.0 * plain.flows[0].goodput_bps,
        "hbh {} vs TCP {}",
        f.goodput_bps,
        plain.flows[0].goodput_bps
    );
    // Two 100 ms hops: decoding keeps pace, so delay stays near the path's.
    assert!(f.delay_mean_s < 0.5, "{f:?}");
}

#[test]
fn relays_that_do_not_pass_the_shortfall_on_stall_at_heavy_loss() {
    // Seed 000's path at P_e = 0.35 on the data: a relay that absorbs the
    // redundancy the source sends for a short sink leaves it short.
    let at = |pass: &str| {
        let r = run_named(
            "honc-single-path",
            &[
                ("coding.scheme", "\"tcpnc-hbh\""),
                ("tcp.variant", "\"vegas\""),
                ("link_class.wireless.loss", "0.35"),
                ("coding.tcpnc.pass_on_shortfall", pass),
                ("duration", "300"),
            ],
        );
        r.flows.iter().map(|f| f.goodput_bps).sum::<f64>()
    };
    let (on, off) = (at("true"), at("false"));
    assert!(on > 5.0 * off, "passing on {on}, absorbing {off}");
}
