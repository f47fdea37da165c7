//! Codec throughput against the open Rust RLNC crates, in one run.
//!
//! Throughput is generation bytes (g x symbol bytes) per second of work:
//! producing g coded symbols (encode, recode), or consuming symbols until the
//! generation is complete (decode). Each figure is the median of five timed
//! batches. Rows go to `target/bench/codec-rust.json` as `{"rows": [...]}`.
//!
//! `cargo bench -p ncmesh-codec --bench codec [-- quick] [FILTER...]`: a
//! filter such as `ncmesh/decode` runs the matching cases only, and writes
//! no file.

use ncmesh_codec::prng::SplitMix64;
use ncmesh_codec::rlnc::{Decoder, Encoder, Recoder};
use ncmesh_codec::{lt, xor::Combination, Field};
use rand::SeedableRng;
use serde_json::{json, Value};
use std::hint::black_box;
use std::time::{Duration, Instant};

const SYMBOL: usize = 1500;

struct Bench {
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
    fn measure(&mut self, imp: &str, op: &str, field: &str, g: usize, bytes: usize, mut work: impl FnMut()) -> f64 {
        let name = format!("{imp}/{op}/{field}/{g}");
        if !self.wants(&name) {
            return f64::NAN;
        }
        // The clock is read once per round of `reps` calls, enough for a
        // round to take 20 µs: read at every call, it would weigh a few
        // percent against the fastest operations.
        let start = Instant::now();
        work();
        let reps = (20e-6 / start.elapsed().as_secs_f64().max(1e-9)).clamp(1.0, 1e4) as u64;
        let mut rates: Vec<f64> = (0..5)
            .map(|_| {
                let start = Instant::now();
                let mut n = 0u64;
                while start.elapsed() < self.batch {
                    for _ in 0..reps {
                        work();
                    }
                    n += reps;
                }
                (n as f64 * bytes as f64) / start.elapsed().as_secs_f64() / 1e6
            })
            .collect();
        rates.sort_by(f64::total_cmp);
        let mb_per_s = rates[2];
        println!("{imp:>12} {op:>18} {field:>6} g={g:<5} {mb_per_s:>10.1} MB/s");
        self.rows
            .push(json!({"impl": imp, "op": op, "field": field, "g": g, "symbol_bytes": SYMBOL, "mb_per_s": mb_per_s}));
        mb_per_s
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

/// `count` coded symbols of one generation: (coefficients, payload).
fn coded(encoder: &Encoder, count: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..count as u64)
        .map(|seed| {
            let mut c = vec![0; encoder.symbols()];
            let mut p = vec![0; SYMBOL];
            encoder.encode_seeded(seed, &mut c, &mut p).unwrap();
            (c, p)
        })
        .collect()
}

fn ncmesh_rlnc(b: &mut Bench, f: Field, g: usize) {
    let data = random(g * SYMBOL, g as u64);
    let mut encoder = Encoder::new(f, g, SYMBOL).unwrap();
    encoder.set_data(&data).unwrap();
    let name = field_name(f);
    // Coded symbols are produced a generation's worth at a time, as a sender
    // of ceil(R g) combinations per block does.
    let (mut c, mut p) = (vec![0; g * g], vec![0; g * SYMBOL]);
    let mut seed = 0;
    b.measure("ncmesh", "encode", name, g, g * SYMBOL, || {
        for row in c.chunks_exact_mut(g) {
            seed += 1;
            ncmesh_codec::coefficients::generate(f, seed, row);
        }
        encoder.encode_batch(&c, &mut p).unwrap();
        black_box(&p);
    });
    let symbols = coded(&encoder, g + 40);
    let mut relay = Recoder::new(f, g, SYMBOL).unwrap();
    for (c, p) in &symbols {
        relay.consume(c, p).unwrap();
    }
    let mut rng = SplitMix64::new(1);
    b.measure("ncmesh", "recode", name, g, g * SYMBOL, || {
        relay.recode_batch(&mut rng, &mut c, &mut p).unwrap();
        black_box(&p);
    });
    // A relay one symbol short of complete mixes what it received: the
    // dearest case relative to encoding.
    let mut partial = Recoder::new(f, g, SYMBOL).unwrap();
    for (c, p) in &symbols {
        if partial.rank() + 1 < g || g == 1 {
            partial.consume(c, p).unwrap();
        }
    }
    b.measure("ncmesh", "recode_partial", name, g, g * SYMBOL, || {
        partial.recode_batch(&mut rng, &mut c, &mut p).unwrap();
        black_box(&p);
    });
    // Feeds coded symbols until complete, then asks for every symbol.
    let finish = |d: &mut Decoder| {
        for (c, p) in &symbols {
            if d.is_complete() {
                break;
            }
            d.consume(c, p).unwrap();
        }
        assert!(d.is_complete());
        black_box(d.decoded_symbols().map(|symbols| symbols[0][0]));
    };
    b.measure("ncmesh", "decode", name, g, g * SYMBOL, || finish(&mut Decoder::new(f, g, SYMBOL).unwrap()));
    let mut reused = Decoder::new(f, g, SYMBOL).unwrap();
    b.measure("ncmesh", "decode_reset", name, g, g * SYMBOL, || {
        reused.reset();
        finish(&mut reused);
    });
    if f == Field::GF256 {
        // Systematic at 10% loss: 90% of symbols arrive uncoded, coded ones repair.
        let mut lost = SplitMix64::new(7);
        let arrived: Vec<usize> = (0..g).filter(|_| lost.unit_f64() >= 0.1).collect();
        b.measure("ncmesh", "decode_systematic", name, g, g * SYMBOL, || {
            let mut d = Decoder::new(f, g, SYMBOL).unwrap();
            for &i in &arrived {
                d.consume_systematic(i, encoder.symbol(i).unwrap()).unwrap();
            }
            finish(&mut d);
        });
    }
}

fn peer_rlnc(b: &mut Bench, g: usize) {
    let mut data = random(g * SYMBOL - 1, g as u64);
    let encoder = rlnc::full::Encoder::new(data.clone(), g).unwrap();
    assert_eq!(encoder.get_piece_byte_len(), SYMBOL);
    let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
    let mut piece = vec![0; encoder.get_full_coded_piece_byte_len()];
    b.measure("rlnc", "encode", "gf256", g, g * SYMBOL, || {
        for _ in 0..g {
            encoder.code_with_buf(&mut rng, &mut piece).unwrap();
            black_box(&piece);
        }
    });
    let pieces: Vec<Vec<u8>> = (0..g + 40).map(|_| encoder.code(&mut rng)).collect();
    let mut recoder =
        rlnc::full::Recoder::new(pieces[..g].concat(), encoder.get_full_coded_piece_byte_len(), g).unwrap();
    b.measure("rlnc", "recode", "gf256", g, g * SYMBOL, || {
        for _ in 0..g {
            recoder.recode_with_buf(&mut rng, &mut piece).unwrap();
            black_box(&piece);
        }
    });
    b.measure("rlnc", "decode", "gf256", g, g * SYMBOL, || {
        let mut d = rlnc::full::Decoder::new(SYMBOL, g).unwrap();
        for p in &pieces {
            if d.is_already_decoded() {
                break;
            }
            let _ = d.decode(p);
        }
        data = d.get_decoded_data().unwrap();
        black_box(&data);
    });
}

fn peer_simdx(b: &mut Bench, g: usize) {
    use rlnc_simdx::{CodedPacket, Decoder, Encoder, Recoder, SimpleRng};
    let source: Vec<Vec<u8>> = (0..g).map(|i| random(SYMBOL, i as u64)).collect();
    let refs: Vec<&[u8]> = source.iter().map(Vec::as_slice).collect();
    let encoder = Encoder::new(g, SYMBOL).unwrap();
    let mut rng = SimpleRng::new(1);
    b.measure("rlnc-simdx", "encode", "gf256", g, g * SYMBOL, || {
        for _ in 0..g {
            black_box(encoder.encode_random(&refs, &mut rng).unwrap());
        }
    });
    let packets: Vec<CodedPacket> = (0..g + 40).map(|_| encoder.encode_random(&refs, &mut rng).unwrap()).collect();
    // Its generator is GF(2)-linear and caps the rank at 64, so its decoder
    // is fed our coefficients, combined by its own kernel.
    let full_rank: Vec<CodedPacket> = (0..g as u64 + 40)
        .map(|seed| {
            let mut c = vec![0; g];
            ncmesh_codec::coefficients::generate(Field::GF256, seed, &mut c);
            let mut p = vec![0; SYMBOL];
            rlnc_simdx::kernel::axpy_multi(&c, &refs, &mut p);
            CodedPacket::from_vecs(c, p)
        })
        .collect();
    b.measure("rlnc-simdx", "recode", "gf256", g, g * SYMBOL, || {
        for _ in 0..g {
            black_box(Recoder::recode(&packets[..g], &mut rng).unwrap());
        }
    });
    b.measure("rlnc-simdx", "decode", "gf256", g, g * SYMBOL, || {
        let mut d = Decoder::new(g, SYMBOL).unwrap();
        for p in &full_rank {
            if d.is_complete() {
                break;
            }
            d.receive(CodedPacket::from_slices(p.coefficients_slice(), p.payload_slice())).unwrap();
        }
        black_box(d.decode().unwrap().unwrap());
    });
}

fn ncmesh_lt(b: &mut Bench, k: usize) {
    if !b.wants(&format!("ncmesh/lt_encode/gf2/{k}")) && !b.wants(&format!("ncmesh/lt_decode/gf2/{k}")) {
        return; // the overhead trials below take seconds
    }
    let dist = lt::Distribution::robust(k, lt::DEFAULT_C, lt::DEFAULT_DELTA).unwrap();
    let mut encoder = lt::Encoder::new(k, SYMBOL, dist.clone(), 9).unwrap();
    encoder.set_symbols(&random(k * SYMBOL, 3)).unwrap();
    let mut out = vec![0; SYMBOL];
    // Overhead and success within 1.3K, peeling alone and with elimination.
    let stats = |fallback| {
        let needed = lt::overhead_trials(&dist, 200, 11, fallback);
        let mean = needed.iter().sum::<usize>() as f64 / needed.len() as f64 / k as f64 - 1.0;
        let within = needed.iter().filter(|&&n| n as f64 <= 1.3 * k as f64).count() as f64 / needed.len() as f64;
        (mean, within)
    };
    let (peel_overhead, peel_within) = stats(false);
    let (mean_overhead, within) = stats(true);
    let budget = 3 * k as u32;
    let coded: Vec<Vec<u8>> = (0..budget)
        .map(|esi| {
            encoder.encode(esi, &mut out).unwrap();
            out.clone()
        })
        .collect();
    b.measure("ncmesh", "lt_encode", "gf2", k, k * SYMBOL, || {
        for esi in 0..k as u32 {
            encoder.encode(esi, &mut out).unwrap();
            black_box(&out);
        }
    });
    b.measure("ncmesh", "lt_decode", "gf2", k, k * SYMBOL, || {
        let mut d = lt::Decoder::new(k, SYMBOL, dist.clone(), 9).unwrap();
        d.set_fallback(true);
        for (esi, p) in coded.iter().enumerate() {
            if d.is_complete() {
                break;
            }
            d.consume(esi as u32, p).unwrap();
        }
        assert!(d.is_complete());
        black_box(d.data());
    });
    let last = b.rows.last_mut().unwrap();
    last["mean_overhead"] = json!(mean_overhead);
    last["decoded_within_1_3k"] = json!(within);
    last["peeling_mean_overhead"] = json!(peel_overhead);
    last["peeling_decoded_within_1_3k"] = json!(peel_within);
    println!(
        "{:>12} LT K={k}, 200 trials: mean overhead {:.3} ({:.3} peeling only), within 1.3K {:.1}% ({:.1}%)",
        "",
        mean_overhead,
        peel_overhead,
        within * 100.0,
        peel_within * 100.0
    );
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
    let quick = args.iter().any(|a| a == "quick");
    let filters = args.into_iter().filter(|a| a != "quick").collect();
    let mut b = Bench { rows: Vec::new(), batch: Duration::from_millis(if quick { 20 } else { 120 }), filters };
    println!("kernels: {:?}, peer rlnc-simdx kernel: {}", ncmesh_gf::Kernels::best().isa, rlnc_simdx::active_kernel());
    for g in [16, 64, 256] {
        for f in [Field::GF256, Field::GF2] {
            ncmesh_rlnc(&mut b, f, g);
        }
        peer_rlnc(&mut b, g);
        peer_simdx(&mut b, g);
    }
    ncmesh_rlnc(&mut b, Field::GF16, 64);
    for k in [64, 1000] {
        ncmesh_lt(&mut b, k);
    }
    ncmesh_xor(&mut b);
    if !b.filters.is_empty() {
        return; // a partial run must not replace the full table
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench");
    std::fs::create_dir_all(&dir).unwrap();
    let tmp = dir.join("codec-rust.json.tmp");
    std::fs::write(&tmp, serde_json::to_string_pretty(&json!({"rows": b.rows})).unwrap()).unwrap();
    std::fs::rename(&tmp, dir.join("codec-rust.json")).unwrap();
}
