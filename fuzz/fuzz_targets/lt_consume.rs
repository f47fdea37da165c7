//! Arbitrary bytes as encoding symbol ids and payloads fed to `lt::Decoder`
//! (`wire::fuzzing::lt_consume`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ncmesh_codec::wire::fuzzing::lt_consume(data));
