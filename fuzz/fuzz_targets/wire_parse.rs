//! Arbitrary bytes as a coded-symbol packet: `Packet::new_checked`, `Repr::parse`,
//! and, when it parses, `emit` back to identical bytes (`wire::fuzzing::wire_parse`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ncmesh_codec::wire::fuzzing::wire_parse(data));
