//! Bit errors a link does not catch (`links[].corrupt`, real payloads):
//! the nodes' checksums must, and what they miss the applications' content
//! checks count. Either way the run reports it.

mod common;
use common::*;
use ncmesh_sim::RunResult;

fn total(r: &RunResult, counter: &str) -> u64 {
    r.counters.iter().filter(|c| c.name == counter).map(|c| c.value).sum()
}

fn corrupted(r: &RunResult) -> u64 {
    r.links.iter().map(|l| l.corrupted).sum()
}

#[test]
fn every_damaged_frame_is_refused_and_tcp_repairs_it() {
    // No other loss, and the flow stops early enough to drain: every frame
    // that leaves a node reaches the next.
    let clean =
        [("link_class.hop.loss", "0"), ("link_class.hop.queue", "1000"), ("flows.0.stop", "30"), ("duration", "60")];
    // Damage on the middle link only, so that no packet is damaged twice.
    let r = run_named("chain-5hop", &[&clean[..], &[("payloads", "\"real\""), ("links.2.corrupt", "0.05")]].concat());
    let damaged = corrupted(&r);
    assert!(damaged > 30, "{damaged} frames damaged");
    assert_eq!(r.links.iter().map(|l| l.lost + l.dropped).sum::<u64>(), 0);
    // A changed byte fails the IP header checksum at the next node, or the
    // TCP checksum where the segment ends (routers pass on what they cannot
    // check), or changes the ports of a packet that a router then has no
    // route for: every damaged packet is refused, once.
    assert_eq!(total(&r, "malformed") + total(&r, "no_route"), damaged);
    for f in &r.flows {
        assert!(f.delivered_bytes > 0);
        assert_eq!(f.corrupt_bytes, 0, "a single changed byte never escapes the checksums");
    }
}

#[test]
fn without_damage_there_is_nothing_to_refuse() {
    let r = run_named("chain-5hop", &[("duration", "60"), ("payloads", "\"real\"")]);
    assert_eq!((corrupted(&r), total(&r, "malformed")), (0, 0));
    assert!(r.flows.iter().all(|f| f.corrupt_bytes == 0 && f.delivered_bytes > 0));
}

#[test]
fn coded_frames_damaged_on_the_air_are_reported() {
    for scheme in ["\"tcpnc-e2e\"", "\"tcpnc-hbh\"", "\"honc\""] {
        let r = run_named(
            "honc-single-path",
            &[
                ("duration", "120"),
                ("payloads", "\"real\""),
                ("coding.scheme", scheme),
                ("link_class.wireless.loss", "0.05"),
                ("link_class.wireless.corrupt", "0.02"),
            ],
        );
        let damaged = corrupted(&r);
        let refused = total(&r, "malformed");
        let wrong: u64 = r.flows.iter().map(|f| f.corrupt_bytes).sum();
        assert!(damaged > 0, "{scheme}");
        assert!(refused + wrong > 0, "{scheme}: the damage shows in the run result");
        assert!(r.flows.iter().all(|f| f.delivered_bytes > 0), "{scheme}: the flows survive it");
    }
}

#[test]
fn damage_needs_real_payloads() {
    let err = load(&scenario_text("chain-5hop"), &[("link_class.hop.corrupt", "0.01")]).unwrap_err().to_string();
    assert!(err.contains("corrupt") && err.contains("payloads = \"real\""), "{err}");
    let err = load(&scenario_text("chain-5hop"), &[("payloads", "\"real\""), ("link_class.hop.corrupt", "1.5")])
        .unwrap_err()
        .to_string();
    assert!(err.contains("corrupt") && err.contains("[0, 1]"), "{err}");
}

#[test]
fn tcp_forward_decodes_its_windows_again_past_damage() {
    // TCP-Forward's symbols carry no checksum of their own: a damaged one
    // poisons its window's decoder, and only the TCP checksum of what the
    // window decodes shows it. The window must decode again from later
    // symbols rather than acknowledge a segment it cannot deliver, on which
    // TCP would then wait for ever.
    let common = [("duration", "120"), ("payloads", "\"real\""), ("link_class.hop.loss", "0.05")];
    let goodput = |corrupt: &str| {
        let r = run_named("tcpforward-tandem", &[&common[..], &[("link_class.hop.corrupt", corrupt)]].concat());
        assert!(r.flows.iter().all(|f| f.corrupt_bytes == 0), "corrupt = {corrupt}: wrong bytes delivered");
        (r.flows[0].goodput_bps, corrupted(&r), total(&r, "malformed"))
    };
    let (clean, _, _) = goodput("0");
    let (damaged, frames, refused) = goodput("0.01");
    assert!(frames > 0 && refused > 0, "{frames} frames damaged, {refused} refused");
    assert!(damaged > 0.5 * clean, "goodput {damaged} b/s with 1% of frames damaged, {clean} b/s without");
}
