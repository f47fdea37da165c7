//! Arbitrary bytes as symbols and wire packets fed to `rlnc::Decoder` and
//! `rlnc::sliding::SlidingDecoder`, with their invariants checked
//! (`wire::fuzzing::decoder_consume`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ncmesh_codec::wire::fuzzing::decoder_consume(data));
