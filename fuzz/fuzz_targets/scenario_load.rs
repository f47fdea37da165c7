//! Arbitrary text as a scenario file: loading refuses it with an error or
//! accepts it, and an accepted scenario builds a network; nothing panics.
#![no_main]

use ncmesh_sim::scenario::{Scenario, Source};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(s) = Scenario::load(Source::Toml { text: &text, origin: "fuzz" }, &[]) {
        let _ = ncmesh_sim::Simulation::new(&s);
    }
});
