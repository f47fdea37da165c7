//! Codec throughput against the open Rust RLNC crates and ISA-L, and LT
//! against raptorq (RaptorQ), on every kernel tier the CPU runs, in one run.
//!
//! Throughput is generation bytes (g x symbol bytes) per second of work:
//! producing g coded symbols (encode, recode), or consuming symbols until the
//! generation is complete (decode). Each figure is the median of five timed
//! batches, taken in turn with those of the cases it is compared with (the
//! peers, and the other fields). The run measures each tier in a process
//! of its own, with `NCMESH_GF_ISA` set and each peer forced to the same
//! tier where it allows it, in rounds of every tier (three, or
//! `NCMESH_BENCH_ROUNDS`; the median is kept beside every round's rate),
//! and writes every row, with its `isa`, to `target/bench/codec-rust.json`
//! as `{"cpu": {...}, "rows": [...]}`.
//!
//! `cargo bench -p ncmesh-codec --bench codec [-- quick] [FILTER...]`: a
//! filter such as `ncmesh/decode` runs the matching cases only, and writes
//! no file. With `NCMESH_GF_ISA` set, only that tier runs.

use ncmesh_codec::prng::SplitMix64;
use ncmesh_codec::rlnc::{Decoder, Encoder, Recoder};
use ncmesh_codec::{lt, xor::Combination, Field};
use ncmesh_gf::{Isa, Kernels};
use rand::SeedableRng;
use serde_json::{json, Value};
use std::hint::black_box;
use std::time::{Duration, Instant};

// Beside the benchmark rather than in `benches/`, where Cargo would make
// it a benchmark of its own.
#[path = "codec/issue.rs"]
mod issue;

const SYMBOL: usize = 1500;

struct Bench {
    /// The tier this process measures.
    isa: Isa,
    rows: Vec<Value>,
    batch: Duration,
    /// Only cases whose `impl/op/field/g` contains one of these run.
    filters: Vec<String>,
}

impl Bench {
    /// Whether the case `name` (`impl/op/field/g`) passes the filters.
    fn wants(&self, name: &str) -> bool {
        self.filters.is_empty() || self.filters.iter().any(|f| name.contains(f.as_str()))
    }

    /// Runs `work` (which processes `bytes` bytes) in batches and records the median rate.
    fn measure(&mut self, imp: &str, op: &str, field: &str, g: usize, bytes: usize, work: impl FnMut()) -> f64 {
        self.compare(vec![Case::new(imp, op, field, g, bytes, work)])[0]
    }

    /// Measures `cases` side by side, their batches taken in turn (five
    /// rounds of one batch each), so that load from other work on the
    /// machine, which comes and goes over seconds, falls on all of them
    /// alike; records each one's median rate, NaN for a case filtered out.
    fn compare(&mut self, cases: Vec<Case<'_>>) -> Vec<f64> {
        let wanted: Vec<bool> = cases.iter().map(|c| self.wants(&c.name())).collect();
        let mut cases: Vec<Case> = cases.into_iter().zip(&wanted).filter(|(_, &w)| w).map(|(c, _)| c).collect();
        // The clock is read once per round of `reps` calls, enough for a
        // round to take 20 µs: read at every call, it would weigh a few
        // percent against the fastest operations. The calls are counted, not
        // extrapolated from the first, which runs cold and would make the
        // rounds of a fast case a few calls long.
        let reps: Vec<u64> = cases
            .iter_mut()
            .map(|c| {
                let (start, mut calls) = (Instant::now(), 0);
                while start.elapsed() < Duration::from_micros(20) {
                    (c.work)();
                    calls += 1;
                }
                calls.max(1)
            })
            .collect();
        let mut rates = vec![Vec::new(); cases.len()];
        for _ in 0..5 {
            for ((c, &reps), rates) in cases.iter_mut().zip(&reps).zip(&mut rates) {
                let start = Instant::now();
                let mut n = 0u64;
                while start.elapsed() < self.batch {
                    for _ in 0..reps {
                        (c.work)();
                    }
                    n += reps;
                }
                rates.push((n as f64 * c.bytes as f64) / start.elapsed().as_secs_f64() / 1e6);
            }
        }
        let mut medians = Vec::with_capacity(cases.len());
        for (mut rates, c) in rates.into_iter().zip(&cases) {
            rates.sort_by(f64::total_cmp);
            let mb_per_s = rates[2];
            let (isa, imp, op, field, g) = (self.isa.name(), &c.imp, &c.op, &c.field, c.g);
            println!("{isa:>8} {imp:>12} {op:>18} {field:>6} g={g:<5} {mb_per_s:>10.1} MB/s");
            let mut row = json!({"isa": isa, "impl": imp, "op": op, "field": field, "g": g,
                "symbol_bytes": SYMBOL, "mb_per_s": mb_per_s});
            row.as_object_mut().unwrap().extend(c.fields.clone());
            self.rows.push(row);
            medians.push(mb_per_s);
        }
        let mut medians = medians.into_iter();
        wanted.iter().map(|&w| if w { medians.next().unwrap() } else { f64::NAN }).collect()
    }
}

/// One case of a comparison: `work` processes `bytes` bytes a call.
struct Case<'a> {
    imp: String,
    op: String,
    field: String,
    g: usize,
    bytes: usize,
    work: Box<dyn FnMut() + 'a>,
    /// Fields the case's row carries beside its rate.
    fields: serde_json::Map<String, Value>,
}

impl<'a> Case<'a> {
    fn new(imp: &str, op: &str, field: &str, g: usize, bytes: usize, work: impl FnMut() + 'a) -> Case<'a> {
        Case {
            imp: imp.into(),
            op: op.into(),
            field: field.into(),
            g,
            bytes,
            work: Box::new(work),
            fields: Default::default(),
        }
    }

    /// The case with `key: value` in its row.
    fn with(mut self, key: &str, value: impl Into<Value>) -> Case<'a> {
        self.fields.insert(key.into(), value.into());
        self
    }

    /// `impl/op/field/g`, what filters match.
    fn name(&self) -> String {
        format!("{}/{}/{}/{}", self.imp, self.op, self.field, self.g)
    }
}

fn random(len: usize, seed: u64) -> Vec<u8> {
    let mut v = vec![0; len];
    SplitMix64::new(seed).fill_bytes(&mut v);
    v
}

fn field_name(f: Field) -> &'static str {
    match f.degree() {
        1 => "gf2",
        4 => "gf16",
        _ => "gf256",
    }
}

/// Coded symbols of one generation: (coefficients, payload).
type Coded = Vec<(Vec<u8>, Vec<u8>)>;

/// `count` coded symbols of one generation.
fn coded(encoder: &Encoder, count: usize) -> Coded {
    (0..count as u64)
        .map(|seed| {
            let mut c = vec![0; encoder.symbols()];
            let mut p = vec![0; SYMBOL];
            encoder.encode_seeded(seed, &mut c, &mut p).unwrap();
            (c, p)
        })
        .collect()
}

/// An encoder of one generation of `g` random symbols over `f`.
fn encoder(f: Field, g: usize) -> Encoder {
    let mut encoder = Encoder::new(f, g, SYMBOL).unwrap();
    encoder.set_data(&random(g * SYMBOL, g as u64)).unwrap();
    encoder
}

/// Encoding at `g` in each of `fields`, and over GF(2^8) by every peer on
/// this tier, side by side; then the products alone with their tables kept.
fn rlnc_encode(b: &mut Bench, g: usize, fields: &[Field]) {
    let encoders: Vec<(Field, Encoder)> = fields.iter().map(|&f| (f, encoder(f, g))).collect();
    let wide = fields.contains(&Field::GF256);
    let isal = isal::Isal::load(b.isa).filter(|_| wide);
    let mut isal_state = isal.map(|isal| IsalEncoding::new(isal, g));
    let rlnc_data = random(g * SYMBOL - 1, g as u64);
    let rlnc_encoder = rlnc::full::Encoder::new(rlnc_data, g).unwrap();
    let mut rlnc_rng = rand::rngs::SmallRng::seed_from_u64(1);
    let mut piece = vec![0; rlnc_encoder.get_full_coded_piece_byte_len()];
    let simdx_source: Vec<Vec<u8>> = (0..g).map(|i| random(SYMBOL, i as u64)).collect();
    let simdx_refs: Vec<&[u8]> = simdx_source.iter().map(Vec::as_slice).collect();
    let simdx_encoder = rlnc_simdx::Encoder::new(g, SYMBOL).unwrap();
    let mut simdx_rng = rlnc_simdx::SimpleRng::new(1);

    let mut cases = Vec::new();
    for (f, encoder) in &encoders {
        // Coded symbols are produced a generation's worth at a time, as a
        // sender of ceil(R g) combinations per block does.
        let (f, mut c, mut p, mut seed) = (*f, vec![0; g * g], vec![0; g * SYMBOL], 0);
        cases.push(Case::new("ncmesh", "encode", field_name(f), g, g * SYMBOL, move || {
            for row in c.chunks_exact_mut(g) {
                seed += 1;
                ncmesh_codec::coefficients::generate(f, seed, row);
            }
            encoder.encode_batch(&c, &mut p).unwrap();
            black_box(&p);
        }));
    }
    if wide {
        if let Some(state) = isal_state.as_mut() {
            let name = format!("isa-l ({})", state.isal.tier);
            cases.push(Case::new(&name, "encode", "gf256", g, g * SYMBOL, move || state.encode_drawn()));
        }
        assert_eq!(rlnc_encoder.get_piece_byte_len(), SYMBOL);
        cases.push(Case::new("rlnc", "encode", "gf256", g, g * SYMBOL, || {
            for _ in 0..g {
                rlnc_encoder.code_with_buf(&mut rlnc_rng, &mut piece).unwrap();
                black_box(&piece);
            }
        }));
        if simdx_isa() == Some(b.isa) {
            cases.push(Case::new("rlnc-simdx", "encode", "gf256", g, g * SYMBOL, || {
                for _ in 0..g {
                    black_box(simdx_encoder.encode_random(&simdx_refs, &mut simdx_rng).unwrap());
                }
            }));
        }
    }
    b.compare(cases);
    if !wide {
        return;
    }
    // The same coefficients every time: the product alone, as ISA-L's with its tables kept.
    let (fixed, mut p) = (fixed_coefficients(g), vec![0; g * SYMBOL]);
    let encoder = &encoders.iter().find(|(f, _)| *f == Field::GF256).unwrap().1;
    let mut cases = vec![Case::new("ncmesh", "encode_fixed", "gf256", g, g * SYMBOL, || {
        encoder.encode_batch(&fixed, &mut p).unwrap();
        black_box(&p);
    })];
    if let Some(state) = isal_state.as_mut() {
        let name = format!("isa-l ({})", state.isal.tier);
        cases.push(Case::new(&name, "encode_fixed", "gf256", g, g * SYMBOL, move || state.encode_fixed()));
    }
    b.compare(cases);
}

/// ISA-L encoding a generation: its tables and buffers, checked against
/// ncmesh's encoding (both use GF(2^8) over 0x11D).
struct IsalEncoding {
    isal: isal::Isal,
    g: usize,
    data: Vec<u8>,
    coefficients: Vec<u8>,
    tables: Vec<u8>,
    fixed_tables: Vec<u8>,
    out: Vec<u8>,
    seed: u64,
}

impl IsalEncoding {
    fn new(isal: isal::Isal, g: usize) -> IsalEncoding {
        let data = random(g * SYMBOL, g as u64);
        let coefficients = fixed_coefficients(g);
        let mut fixed_tables = Vec::new();
        isal.tables(g, g, &coefficients, &mut fixed_tables);
        let out = vec![0; g * SYMBOL];
        let mut state = IsalEncoding { isal, g, data, coefficients, tables: Vec::new(), fixed_tables, out, seed: 0 };
        state.encode_fixed();
        let mut ours = vec![0u8; g * SYMBOL];
        encoder(Field::GF256, g).encode_batch(&state.coefficients, &mut ours).unwrap();
        assert!(ours == state.out, "ISA-L and ncmesh disagree on an encoding");
        state
    }

    /// With the tables of the same coefficients: the product alone.
    fn encode_fixed(&mut self) {
        self.encode(true);
    }

    fn encode(&mut self, fixed: bool) {
        let tables = if fixed { &self.fixed_tables } else { &self.tables };
        let sources: Vec<&[u8]> = self.data.chunks_exact(SYMBOL).collect();
        self.isal.encode(tables, &sources, &mut self.out.chunks_exact_mut(SYMBOL).collect::<Vec<_>>());
        black_box(&self.out);
    }

    /// With coefficients drawn and expanded into its tables every time, as
    /// an RLNC sender must.
    fn encode_drawn(&mut self) {
        for row in self.coefficients.chunks_exact_mut(self.g) {
            self.seed += 1;
            ncmesh_codec::coefficients::generate(Field::GF256, self.seed, row);
        }
        self.isal.tables(self.g, self.g, &self.coefficients, &mut self.tables);
        self.encode(false);
    }
}

/// Recoding at `g` in each of `fields` by a relay holding a whole
/// generation, and over GF(2^8) by every peer on this tier, side by side;
/// then ncmesh's relays one symbol short of complete.
fn rlnc_recode(b: &mut Bench, g: usize, fields: &[Field]) {
    let mut relays: Vec<(Field, Recoder, Recoder)> = fields
        .iter()
        .map(|&f| {
            let symbols = coded(&encoder(f, g), g + 40);
            let (mut whole, mut partial) = (Recoder::new(f, g, SYMBOL).unwrap(), Recoder::new(f, g, SYMBOL).unwrap());
            for (c, p) in &symbols {
                whole.consume(c, p).unwrap();
                // A relay one symbol short of complete mixes what it
                // received: the dearest case relative to encoding.
                if partial.rank() + 1 < g || g == 1 {
                    partial.consume(c, p).unwrap();
                }
            }
            (f, whole, partial)
        })
        .collect();
    let wide = fields.contains(&Field::GF256);
    let rlnc_encoder = rlnc::full::Encoder::new(random(g * SYMBOL - 1, g as u64), g).unwrap();
    let mut rlnc_rng = rand::rngs::SmallRng::seed_from_u64(1);
    let pieces: Vec<Vec<u8>> = (0..g).map(|_| rlnc_encoder.code(&mut rlnc_rng)).collect();
    let mut piece = vec![0; rlnc_encoder.get_full_coded_piece_byte_len()];
    let mut rlnc_recoder =
        rlnc::full::Recoder::new(pieces.concat(), rlnc_encoder.get_full_coded_piece_byte_len(), g).unwrap();
    let simdx_source: Vec<Vec<u8>> = (0..g).map(|i| random(SYMBOL, i as u64)).collect();
    let simdx_refs: Vec<&[u8]> = simdx_source.iter().map(Vec::as_slice).collect();
    let simdx_encoder = rlnc_simdx::Encoder::new(g, SYMBOL).unwrap();
    let mut simdx_rng = rlnc_simdx::SimpleRng::new(1);
    let simdx_packets: Vec<rlnc_simdx::CodedPacket> =
        (0..g).map(|_| simdx_encoder.encode_random(&simdx_refs, &mut simdx_rng).unwrap()).collect();

    for partial in [false, true] {
        let op = if partial { "recode_partial" } else { "recode" };
        let mut cases = Vec::new();
        for (f, whole, short) in &mut relays {
            let relay = if partial { short } else { whole };
            let (f, mut c, mut p, mut rng) = (*f, vec![0; g * g], vec![0; g * SYMBOL], SplitMix64::new(1));
            cases.push(Case::new("ncmesh", op, field_name(f), g, g * SYMBOL, move || {
                relay.recode_batch(&mut rng, &mut c, &mut p).unwrap();
                black_box(&p);
            }));
        }
        if wide && !partial {
            cases.push(Case::new("rlnc", "recode", "gf256", g, g * SYMBOL, || {
                for _ in 0..g {
                    rlnc_recoder.recode_with_buf(&mut rlnc_rng, &mut piece).unwrap();
                    black_box(&piece);
                }
            }));
            if simdx_isa() == Some(b.isa) {
                cases.push(Case::new("rlnc-simdx", "recode", "gf256", g, g * SYMBOL, || {
                    for _ in 0..g {
                        black_box(rlnc_simdx::Recoder::recode(&simdx_packets, &mut simdx_rng).unwrap());
                    }
                }));
            }
        }
        b.compare(cases);
    }
}

/// Decoding at `g` in each of `fields` by a fresh decoder per generation,
/// and over GF(2^8) by every peer on this tier, side by side; then ncmesh's
/// decoders reset and reused, and a systematic generation at 10% loss.
fn rlnc_decode(b: &mut Bench, g: usize, fields: &[Field]) {
    let generations: Vec<(Field, Encoder, Coded)> = fields
        .iter()
        .map(|&f| {
            let encoder = encoder(f, g);
            let symbols = coded(&encoder, g + 40);
            (f, encoder, symbols)
        })
        .collect();
    // Feeds coded symbols until complete, then asks for every symbol.
    let finish = |d: &mut Decoder, symbols: &[(Vec<u8>, Vec<u8>)]| {
        for (c, p) in symbols {
            if d.is_complete() {
                break;
            }
            d.consume(c, p).unwrap();
        }
        assert!(d.is_complete());
        black_box(d.decoded_symbols().map(|symbols| symbols[0][0]));
    };
    let wide = fields.contains(&Field::GF256);
    let rlnc_encoder = rlnc::full::Encoder::new(random(g * SYMBOL - 1, g as u64), g).unwrap();
    let mut rlnc_rng = rand::rngs::SmallRng::seed_from_u64(1);
    let pieces: Vec<Vec<u8>> = (0..g + 40).map(|_| rlnc_encoder.code(&mut rlnc_rng)).collect();
    // rlnc-simdx's generator is GF(2)-linear and caps the rank at 64, so
    // its decoder is fed our coefficients, combined by its own kernel.
    let simdx_source: Vec<Vec<u8>> = (0..g).map(|i| random(SYMBOL, i as u64)).collect();
    let simdx_refs: Vec<&[u8]> = simdx_source.iter().map(Vec::as_slice).collect();
    let simdx_full_rank: Vec<rlnc_simdx::CodedPacket> = (0..g as u64 + 40)
        .map(|seed| {
            let mut c = vec![0; g];
            ncmesh_codec::coefficients::generate(Field::GF256, seed, &mut c);
            let mut p = vec![0; SYMBOL];
            rlnc_simdx::kernel::axpy_multi(&c, &simdx_refs, &mut p);
            rlnc_simdx::CodedPacket::from_vecs(c, p)
        })
        .collect();

    let mut cases = Vec::new();
    for (f, _, symbols) in &generations {
        let f = *f;
        cases.push(Case::new("ncmesh", "decode", field_name(f), g, g * SYMBOL, move || {
            finish(&mut Decoder::new(f, g, SYMBOL).unwrap(), symbols)
        }));
    }
    if wide {
        cases.push(Case::new("rlnc", "decode", "gf256", g, g * SYMBOL, || {
            let mut d = rlnc::full::Decoder::new(SYMBOL, g).unwrap();
            for p in &pieces {
                if d.is_already_decoded() {
                    break;
                }
                let _ = d.decode(p);
            }
            black_box(d.get_decoded_data().unwrap());
        }));
        if simdx_isa() == Some(b.isa) {
            cases.push(Case::new("rlnc-simdx", "decode", "gf256", g, g * SYMBOL, || {
                let mut d = rlnc_simdx::Decoder::new(g, SYMBOL).unwrap();
                for p in &simdx_full_rank {
                    if d.is_complete() {
                        break;
                    }
                    d.receive(rlnc_simdx::CodedPacket::from_slices(p.coefficients_slice(), p.payload_slice())).unwrap();
                }
                black_box(d.decode().unwrap().unwrap());
            }));
        }
    }
    b.compare(cases);

    let mut cases = Vec::new();
    for (f, _, symbols) in &generations {
        let (f, mut reused) = (*f, Decoder::new(*f, g, SYMBOL).unwrap());
        cases.push(Case::new("ncmesh", "decode_reset", field_name(f), g, g * SYMBOL, move || {
            reused.reset();
            finish(&mut reused, symbols);
        }));
    }
    b.compare(cases);

    if let Some((f, encoder, symbols)) = generations.iter().find(|(f, ..)| *f == Field::GF256) {
        // Systematic at 10% loss: 90% of symbols arrive uncoded, coded ones repair.
        let mut lost = SplitMix64::new(7);
        let arrived: Vec<usize> = (0..g).filter(|_| lost.unit_f64() >= 0.1).collect();
        b.measure("ncmesh", "decode_systematic", field_name(*f), g, g * SYMBOL, || {
            let mut d = Decoder::new(*f, g, SYMBOL).unwrap();
            for &i in &arrived {
                d.consume_systematic(i, encoder.symbol(i).unwrap()).unwrap();
            }
            finish(&mut d, symbols);
        });
    }
}

/// A `g x g` matrix of GF(2^8) coefficients from the codec's generator.
fn fixed_coefficients(g: usize) -> Vec<u8> {
    let mut c = vec![0; g * g];
    for (seed, row) in c.chunks_exact_mut(g).enumerate() {
        ncmesh_codec::coefficients::generate(Field::GF256, seed as u64 + 1, row);
    }
    c
}

/// The tier rlnc-simdx's encoder and decoder run on: its own choice, which
/// cannot be forced (only its single-row kernel can).
fn simdx_isa() -> Option<Isa> {
    simdx_tier(rlnc_simdx::kernel::active_kernel_name())
}

fn simdx_tier(name: &str) -> Option<Isa> {
    let name = name.split_whitespace().next().unwrap_or_default();
    Some(match name {
        "gfni+avx512" => Isa::Gfni512,
        "gfni+avx2" => Isa::Gfni256,
        "avx512+ssse3" => Isa::Avx512,
        "avx2+ssse3" => Isa::Avx2,
        "ssse3" => Isa::Ssse3,
        "neon" => Isa::Neon,
        "scalar" => Isa::Scalar,
        _ => return None,
    })
}

/// ISA-L's erasure-code library, loaded at run time (Debian's `libisal2`):
/// its per-tier entry points let it be forced to a tier as ncmesh is.
mod isal {
    use super::Isa;
    use std::ffi::{c_char, c_int, c_void};

    type InitTables = unsafe extern "C" fn(c_int, c_int, *const u8, *mut u8);
    type Encode = unsafe extern "C" fn(c_int, c_int, c_int, *const u8, *const *const u8, *const *mut u8);
    type Mad = unsafe extern "C" fn(c_int, c_int, c_int, *const u8, *const u8, *mut u8);

    extern "C" {
        fn dlopen(filename: *const c_char, flag: c_int) -> *mut c_void;
        fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    }

    /// ISA-L's functions for one tier.
    #[derive(Clone, Copy)]
    pub struct Isal {
        /// Its name for the tier: `sse`, `avx2`, `avx512` or `neon`.
        pub tier: &'static str,
        init_tables: InitTables,
        encode: Encode,
        mad: Mad,
    }

    /// ISA-L's name for the best code it has at or below `isa`. Debian's
    /// 2.30 has no GFNI code, so the GFNI tiers get AVX2 or AVX-512.
    #[cfg(target_arch = "x86_64")]
    fn tier(isa: Isa) -> Option<&'static str> {
        use std::arch::is_x86_feature_detected as has;
        let avx512 = has!("avx512f") && has!("avx512bw") && has!("avx512vl") && has!("avx512dq");
        match isa {
            Isa::Ssse3 => Some("sse"),
            Isa::Avx2 | Isa::Gfni256 => Some("avx2"),
            Isa::Avx512 | Isa::Gfni512 if avx512 => Some("avx512"),
            _ => None,
        }
    }

    /// ISA-L's name for its NEON code; its SVE code has no tier of ncmesh's to match.
    #[cfg(target_arch = "aarch64")]
    fn tier(isa: Isa) -> Option<&'static str> {
        (isa == Isa::Neon).then_some("neon")
    }

    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    fn tier(_: Isa) -> Option<&'static str> {
        None
    }

    impl Isal {
        /// ISA-L's code for `isa`, if it has code for that tier and is installed.
        pub fn load(isa: Isa) -> Option<Isal> {
            let tier = tier(isa)?;
            // SAFETY: a library name and a flag; a null handle is checked.
            let lib = unsafe { dlopen(c"libisal.so.2".as_ptr(), 2) };
            if lib.is_null() {
                return None;
            }
            let symbol = |name: String| -> Option<*mut c_void> {
                let name = std::ffi::CString::new(name).ok()?;
                // SAFETY: a live handle and a NUL-terminated name.
                let p = unsafe { dlsym(lib, name.as_ptr()) };
                (!p.is_null()).then_some(p)
            };
            // SAFETY: the symbols are ISA-L's functions of these C signatures
            // (erasure_code.h), which the library keeps loaded.
            unsafe {
                Some(Isal {
                    tier,
                    init_tables: std::mem::transmute::<*mut c_void, InitTables>(symbol("ec_init_tables".into())?),
                    encode: std::mem::transmute::<*mut c_void, Encode>(symbol(format!("ec_encode_data_{tier}"))?),
                    mad: std::mem::transmute::<*mut c_void, Mad>(symbol(format!("gf_vect_mad_{tier}"))?),
                })
            }
        }

        /// The 32-byte tables of a `rows x k` coefficient matrix.
        pub fn tables(&self, k: usize, rows: usize, a: &[u8], out: &mut Vec<u8>) {
            assert_eq!(a.len(), k * rows);
            out.resize(32 * k * rows, 0);
            // SAFETY: `a` holds `k * rows` coefficients and `out` 32 bytes for each.
            unsafe { (self.init_tables)(k as c_int, rows as c_int, a.as_ptr(), out.as_mut_ptr()) }
        }

        /// `coding[i] = sum_j a_ij data[j]`, from the tables of `a`.
        pub fn encode(&self, tables: &[u8], data: &[&[u8]], coding: &mut [&mut [u8]]) {
            let len = coding[0].len();
            assert!(tables.len() == 32 * data.len() * coding.len() && len >= 64);
            assert!(data.iter().all(|d| d.len() == len) && coding.iter().all(|c| c.len() == len));
            let src: Vec<*const u8> = data.iter().map(|d| d.as_ptr()).collect();
            let dst: Vec<*mut u8> = coding.iter_mut().map(|c| c.as_mut_ptr()).collect();
            let (len, k, rows) = (len as c_int, data.len() as c_int, coding.len() as c_int);
            // SAFETY: the shapes were checked; the CPU has the tier's features.
            unsafe { (self.encode)(len, k, rows, tables.as_ptr(), src.as_ptr(), dst.as_ptr()) }
        }

        /// `y ^= c x` from the 32-byte table of `c`.
        pub fn mad(&self, table: &[u8], x: &[u8], y: &mut [u8]) {
            assert!(table.len() == 32 && x.len() == y.len() && x.len() >= 64);
            // SAFETY: as for `encode`.
            unsafe { (self.mad)(x.len() as c_int, 1, 0, table.as_ptr(), x.as_ptr(), y.as_mut_ptr()) }
        }
    }
}

/// The multiply-add kernel `y ^= c x` on one 1500-byte symbol in L1, for
/// ncmesh, ISA-L (`gf_vect_mad`) and rlnc-simdx (its `axpy`), each forced
/// to this tier. Throughput is bytes of `x` per second.
fn kernels_mad(b: &mut Bench) {
    // Every kernel gets rows at the same alignment, that of a cache line,
    // as the codec's symbol buffers are: a row's offset in its line moves
    // each kernel's rate by its own amount.
    #[repr(C, align(64))]
    struct Row([u8; SYMBOL]);
    let row = |seed| {
        let mut r = Box::new(Row([0; SYMBOL]));
        r.0.copy_from_slice(&random(SYMBOL, seed));
        r
    };
    let x = &row(1).0;
    let c = 0x8e;
    let mut cases = Vec::new();
    let mut y = row(2);
    cases.push(Case::new("ncmesh", "mad", "gf256", 1, SYMBOL, move || {
        Field::GF256.symbol_axpy(c, black_box(x), &mut y.0);
        black_box(&y.0);
    }));
    if let Some(isal) = isal::Isal::load(b.isa) {
        let (mut table, mut y) = (Vec::new(), row(2));
        isal.tables(1, 1, &[c], &mut table);
        cases.push(Case::new(&format!("isa-l ({})", isal.tier), "mad", "gf256", 1, SYMBOL, move || {
            isal.mad(&table, black_box(x), &mut y.0);
            black_box(&y.0);
        }));
    }
    let isa = b.isa;
    if let Some(tier) =
        rlnc_simdx::kernel::bench::available_axpy_tiers().into_iter().find(|t| simdx_tier(t.name()) == Some(isa))
    {
        let mut y = row(2);
        cases.push(Case::new(&format!("rlnc-simdx ({})", tier.name()), "mad", "gf256", 1, SYMBOL, move || {
            tier.axpy(c, black_box(x), &mut y.0);
            black_box(&y.0);
        }));
    }
    b.compare(cases);
}

/// The kernel alone, in L1: a 24 x 32 product of 384-byte rows, with 16
/// distinct coefficients, in multiply-add bytes per second, the measured
/// ceiling that encoding and decoding are compared with; beside it, the
/// tier's multiply-add instruction mix from registers alone
/// (`codec/issue.rs`), the most any product can reach. That row keeps the
/// probe's vector width and operations per multiply-add, from which the
/// tables count operations a cycle.
fn kernel_ceilings(b: &mut Bench) {
    // Rows and the maps they read take 22 KiB, within the 32 KiB L1 of the
    // smallest cores; 24 outputs are whole groups on every tier, and 384
    // bytes whole blocks.
    let (outputs, inputs, len) = (24, 32, 384);
    let xs: Vec<Vec<u8>> = (0..inputs).map(|j| random(len, 10 + j as u64)).collect();
    let xr: Vec<&[u8]> = xs.iter().map(Vec::as_slice).collect();
    let mut ys = vec![vec![0u8; len]; outputs];
    let a: Vec<u8> = random(outputs * inputs, 5).iter().map(|&c| (c & 0xf0) | 1).collect();
    let mut cases = vec![Case::new("ncmesh", "product_l1", "gf256", inputs, outputs * inputs * len, || {
        let mut outs: Vec<&mut [u8]> = ys.iter_mut().map(Vec::as_mut_slice).collect();
        Field::GF256.symbol_matmul(&a, &xr, &mut outs);
        black_box(&ys);
    })];
    if let Some(probe) = issue::probe(b.isa) {
        let bytes = probe.outputs * probe.width * issue::ITERATIONS as usize;
        let case = Case::new("ncmesh", "issue_ceiling", "gf256", 1, bytes, move || {
            // SAFETY: this process runs the tier `Kernels::best` chose, which the CPU has.
            unsafe { probe.run() }
        });
        let ops = probe.ops as f64 / probe.outputs as f64;
        cases.push(case.with("vector_bytes", probe.width).with("ops_per_vector", ops));
    }
    b.compare(cases);
}

/// LT at K = `k` beside raptorq's RaptorQ, encode against encode and
/// decode against decode, their batches taken in turn.
fn lt_codes(b: &mut Bench, k: usize) {
    let wanted =
        |b: &Bench, imp: &str| ["lt_encode", "lt_decode"].iter().any(|op| b.wants(&format!("{imp}/{op}/gf2/{k}")));
    // Each side's set-up takes seconds: LT's overhead trials, raptorq's precode.
    let ours = wanted(b, "ncmesh").then(|| Lt::new(b.isa, k));
    let theirs = wanted(b, "raptorq").then(|| Raptorq::new(k));
    let (mut encode, mut decode) = (Vec::new(), Vec::new());
    if let Some(lt) = &ours {
        encode.push(lt.encode());
        decode.push(lt.decode());
    }
    if let Some(rq) = &theirs {
        encode.push(rq.encode());
        decode.push(rq.decode());
    }
    b.compare(encode);
    b.compare(decode);
}

/// ncmesh's LT code at K = `k`: its encoder, 3K coded symbols, and what
/// its decoder does with them.
struct Lt {
    k: usize,
    dist: lt::Distribution,
    encoder: lt::Encoder,
    coded: Vec<Vec<u8>>,
    /// Fields of the decode row: the decoder's work and overhead.
    decode_fields: serde_json::Map<String, Value>,
}

impl Lt {
    fn new(isa: Isa, k: usize) -> Lt {
        let dist = lt::Distribution::robust(k, lt::DEFAULT_C, lt::DEFAULT_DELTA).unwrap();
        let mut encoder = lt::Encoder::new(k, SYMBOL, dist.clone(), 9).unwrap();
        encoder.set_symbols(&random(k * SYMBOL, 3)).unwrap();
        let mut out = vec![0; SYMBOL];
        let coded: Vec<Vec<u8>> = (0..3 * k as u32)
            .map(|esi| {
                encoder.encode(esi, &mut out).unwrap();
                out.clone()
            })
            .collect();
        let mut lt = Lt { k, dist, encoder, coded, decode_fields: Default::default() };
        // The work of the decode timed, as the decoder counts it: whole-symbol
        // XORs as symbols arrive and peel, and in the solve of the stalled graph
        // (its sums, and the set coefficients of its two GF(2) products).
        let d = lt.decoded();
        let xors_per_symbol = d.symbol_xors() as f64 / k as f64;
        let (by_elimination, inactivated) = (d.decoded_by_elimination(), d.decoded_by_inactivation());
        println!(
            "{:>21} LT K={k}: {} symbols received, {xors_per_symbol:.2} symbol XORs per source symbol (mean degree \
             {:.2}), {by_elimination} sources left to the solve of the stalled graph, {inactivated} of them inactivated",
            "",
            d.symbols_received(),
            lt.dist.mean_degree()
        );
        let fields = &mut lt.decode_fields;
        fields.insert("xors_per_source_symbol".into(), json!(xors_per_symbol));
        fields.insert("decoded_by_elimination".into(), json!(by_elimination));
        fields.insert("inactivated".into(), json!(inactivated));
        // Overhead and success within 1.3K, peeling alone and with elimination:
        // the same on every tier, so measured on the fastest only.
        if isa == Kernels::choose(None).isa {
            let trials = 200;
            let stats = |fallback| {
                let needed = lt::overhead_trials(&lt.dist, trials, 11, fallback);
                let mean = needed.iter().sum::<usize>() as f64 / needed.len() as f64 / k as f64 - 1.0;
                let within =
                    needed.iter().filter(|&&n| n as f64 <= 1.3 * k as f64).count() as f64 / needed.len() as f64;
                (mean, within)
            };
            let (peel_overhead, peel_within) = stats(false);
            let (mean_overhead, within) = stats(true);
            println!(
                "{:>21} LT K={k}, {trials} trials: mean overhead {:.3} ({:.3} peeling only), within 1.3K {:.1}% ({:.1}%)",
                "",
                mean_overhead,
                peel_overhead,
                within * 100.0,
                peel_within * 100.0
            );
            let fields = &mut lt.decode_fields;
            fields.insert("mean_overhead".into(), json!(mean_overhead));
            fields.insert("decoded_within_1_3k".into(), json!(within));
            fields.insert("peeling_mean_overhead".into(), json!(peel_overhead));
            fields.insert("peeling_decoded_within_1_3k".into(), json!(peel_within));
        }
        lt
    }

    /// A decoder fed coded symbols until it is complete.
    fn decoded(&self) -> lt::Decoder {
        let mut d = lt::Decoder::new(self.k, SYMBOL, self.dist.clone(), 9).unwrap();
        d.set_fallback(true);
        for (esi, p) in self.coded.iter().enumerate() {
            if d.is_complete() {
                break;
            }
            d.consume(esi as u32, p).unwrap();
        }
        assert!(d.is_complete());
        d
    }

    fn encode(&self) -> Case<'_> {
        let mut out = vec![0; SYMBOL];
        Case::new("ncmesh", "lt_encode", "gf2", self.k, self.k * SYMBOL, move || {
            for esi in 0..self.k as u32 {
                self.encoder.encode(esi, &mut out).unwrap();
                black_box(&out);
            }
        })
    }

    fn decode(&self) -> Case<'_> {
        let mut case = Case::new("ncmesh", "lt_decode", "gf2", self.k, self.k * SYMBOL, || {
            black_box(self.decoded().data());
        });
        case.fields = self.decode_fields.clone();
        case
    }
}

/// raptorq (RFC 6330) beside the LT rows: `with_defaults` over the K
/// symbols' bytes (symbols of 1496 bytes, its alignment of 8 below 1500, so
/// 65 and 1003 source symbols), encoding them plus K/10 + 1 repair symbols
/// per call from the source bytes (the encoder, which solves the precode,
/// built in each call), and decoding from the packets left
/// after 10% i.i.d. loss, each handed over as a copy, as the Python binding
/// does, until it returns the data. It is a different code, shown for scale:
/// no maintained LT crate exists.
struct Raptorq {
    k: usize,
    data: Vec<u8>,
    repair: u32,
    config: raptorq::ObjectTransmissionInformation,
    /// The packets left after the loss of the first seed whose survivors decode.
    kept: Vec<raptorq::EncodingPacket>,
    loss_seed: u64,
}

impl Raptorq {
    const NOTE: &str = "RaptorQ (RFC 6330), not LT";

    fn new(k: usize) -> Raptorq {
        let data = random(k * SYMBOL, k as u64);
        let encoder = raptorq::Encoder::with_defaults(&data, SYMBOL as u16);
        let repair = k as u32 / 10 + 1;
        let config = encoder.get_config();
        let mut rq = Raptorq { k, data, repair, config, kept: Vec::new(), loss_seed: 0 };
        // 10% loss leaves about 0.99 K' packets, so some draws cannot decode:
        // the first loss seed whose survivors do (the Python half's happens to).
        let sent = encoder.get_encoded_packets(repair);
        for seed in 1.. {
            let mut loss = SplitMix64::new(seed);
            rq.kept = sent.iter().filter(|_| loss.unit_f64() >= 0.1).cloned().collect();
            if rq.decoded().is_some_and(|out| out == rq.data) {
                rq.loss_seed = seed;
                break;
            }
        }
        println!(
            "{:>21} raptorq K={k}: {} source symbols, {} of {} packets kept (loss seed {})",
            "",
            rq.source_symbols(),
            rq.kept.len(),
            sent.len(),
            rq.loss_seed
        );
        rq
    }

    fn source_symbols(&self) -> usize {
        self.data.len().div_ceil(self.config.symbol_size() as usize)
    }

    fn decoded(&self) -> Option<Vec<u8>> {
        let mut d = raptorq::Decoder::new(self.config);
        self.kept.iter().find_map(|p| d.decode(p.clone()))
    }

    /// A sender builds the encoder for every block it sends: the precode it
    /// solves is part of encoding, as LT's symbols are.
    fn encode(&self) -> Case<'_> {
        Case::new("raptorq", "lt_encode", "gf2", self.k, self.k * SYMBOL, || {
            black_box(raptorq::Encoder::with_defaults(&self.data, SYMBOL as u16).get_encoded_packets(self.repair));
        })
        .with("note", Self::NOTE)
    }

    fn decode(&self) -> Case<'_> {
        Case::new("raptorq", "lt_decode", "gf2", self.k, self.k * SYMBOL, || {
            black_box(self.decoded());
        })
        .with("note", Self::NOTE)
        .with("source_symbols", self.source_symbols())
        .with("symbols_kept", self.kept.len())
        .with("loss_seed", self.loss_seed)
    }
}

fn ncmesh_xor(b: &mut Bench) {
    let (x, y) = (random(SYMBOL, 1), random(SYMBOL, 2));
    b.measure("ncmesh", "xor", "gf2", 2, 2 * SYMBOL, || {
        black_box(Combination::encode(&[(1, &x), (2, &y)]));
    });
}

fn main() {
    // Arguments: `quick` for short batches; anything else filters cases.
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    if std::env::var_os("NCMESH_GF_ISA").is_none() {
        return every_tier(&args);
    }
    let quick = args.iter().any(|a| a == "quick");
    let filters: Vec<String> = args.into_iter().filter(|a| a != "quick").collect();
    let isa = Kernels::best().isa;
    let wanted = std::env::var("NCMESH_GF_ISA").unwrap();
    if Isa::from_name(&wanted) != Some(isa) {
        eprintln!("NCMESH_GF_ISA={wanted}: this CPU runs no such tier (it runs {isa:?} at most)");
        std::process::exit(2);
    }
    let partial = !filters.is_empty();
    let mut b = Bench { isa, rows: Vec::new(), batch: Duration::from_millis(if quick { 20 } else { 120 }), filters };
    println!("kernels: {isa:?}; rlnc-simdx runs {}", rlnc_simdx::kernel::active_kernel_name());
    kernels_mad(&mut b);
    kernel_ceilings(&mut b);
    for (g, fields) in [
        (16, &[Field::GF256, Field::GF2][..]),
        (64, &[Field::GF256, Field::GF2, Field::GF16]),
        (256, &[Field::GF256, Field::GF2]),
    ] {
        rlnc_encode(&mut b, g, fields);
        rlnc_recode(&mut b, g, fields);
        rlnc_decode(&mut b, g, fields);
    }
    for k in [64, 1000] {
        lt_codes(&mut b, k);
    }
    ncmesh_xor(&mut b);
    if !partial {
        write_atomically(&bench_dir().join(format!("codec-rust-{}.json", isa.name())), &json!({"rows": b.rows}));
    }
}

fn bench_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench")
}

fn write_atomically(path: &std::path::Path, value: &Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_string_pretty(value).unwrap()).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// Runs this benchmark once per tier the CPU has, slowest first, each in a
/// process of its own with `NCMESH_GF_ISA` set, and merges their rows with
/// the CPU's model and flags. The tiers run in `NCMESH_BENCH_ROUNDS` rounds
/// (3 by default, 1 with `quick`), each round every tier in turn, and each
/// figure is the median of its rounds, which are kept beside it: load from
/// other work then shifts a whole round, not one tier against another.
fn every_tier(args: &[String]) {
    let exe = std::env::current_exe().expect("the benchmark's own path");
    let quick = args.iter().any(|a| a == "quick");
    let rounds = std::env::var("NCMESH_BENCH_ROUNDS")
        .map_or(if quick { 1 } else { 3 }, |r| r.parse().expect("NCMESH_BENCH_ROUNDS is a number"));
    let mut rows: Vec<Value> = Vec::new();
    let mut rates: std::collections::HashMap<String, Vec<f64>> = Default::default();
    let key = |row: &Value| format!("{}/{}/{}/{}/{}", row["isa"], row["impl"], row["op"], row["field"], row["g"]);
    for round in 0..rounds {
        for k in Kernels::available() {
            println!("round {} of {rounds}: {}", round + 1, k.isa.name());
            let status = std::process::Command::new(&exe)
                .args(args)
                .env("NCMESH_GF_ISA", k.isa.name())
                .status()
                .expect("the benchmark runs itself");
            assert!(status.success(), "the {} run failed: {status}", k.isa.name());
            let file = bench_dir().join(format!("codec-rust-{}.json", k.isa.name()));
            let Ok(text) = std::fs::read_to_string(&file) else { continue };
            std::fs::remove_file(&file).unwrap();
            let tier: Value = serde_json::from_str(&text).unwrap();
            for row in tier["rows"].as_array().unwrap() {
                let runs = rates.entry(key(row)).or_default();
                if runs.is_empty() {
                    rows.push(row.clone());
                }
                runs.push(row["mb_per_s"].as_f64().unwrap_or(f64::NAN));
            }
        }
    }
    if args.iter().any(|a| a != "quick") {
        return; // a partial run must not replace the full table
    }
    for row in &mut rows {
        let mut runs = rates[&key(row)].clone();
        row["rounds"] = json!(runs);
        runs.sort_by(f64::total_cmp);
        row["mb_per_s"] = json!(runs[runs.len() / 2]);
    }
    write_atomically(&bench_dir().join("codec-rust.json"), &json!({"cpu": cpu(), "rows": rows}));
}

/// The CPU's model and flags, from `/proc/cpuinfo` where there is one.
fn cpu() -> Value {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |key: &str| {
        info.lines()
            .find(|l| l.split(':').next().is_some_and(|k| k.trim() == key))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    };
    let flags = field("flags").or_else(|| field("Features")).unwrap_or_default();
    json!({
        "model": field("model name").unwrap_or_else(|| std::env::consts::ARCH.to_string()),
        "cores": std::thread::available_parallelism().map_or(1, |n| n.get()),
        "flags": flags.split_whitespace().collect::<Vec<_>>(),
        "measured_mhz": issue::clock_mhz(),
        "tiers": Kernels::available().iter().map(|k| k.isa.name()).collect::<Vec<_>>(),
    })
}
