//! The shared 802.11 channel in whole runs.

mod common;
use common::*;

#[test]
fn probe() {
    let r = run_named("wifi-saturated-link", &[]);
    eprintln!("{:?}", r.flows[0].goodput_bps);
    eprintln!("{:?}", r.radios);
    eprintln!("{:?}", r.pairs);
}
