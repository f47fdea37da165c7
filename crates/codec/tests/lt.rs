//! LT codes end to end: round trips over lossy channels, virtual payloads
//! against real ones, and the overhead statistics the defaults are chosen for.

use ncmesh_codec::lt::{overhead_trials, Decoder, Distribution, Encoder, DEFAULT_C, DEFAULT_DELTA};
use ncmesh_codec::prng::SplitMix64;
use ncmesh_codec::Received;
use proptest::prelude::*;
use std::collections::BTreeSet;

fn robust(k: usize) -> Distribution {
    Distribution::robust(k, DEFAULT_C, DEFAULT_DELTA).unwrap()
}

/// Everything a decoder reports, to compare two decoders step by step.
#[derive(Debug, PartialEq)]
struct Snapshot {
    outcome: Received,
    order: Vec<u32>,
    by_elimination: usize,
    pending: usize,
}

/// Sends coded symbols `0, 1, ...` from `encoder`, losing each with
/// probability `loss`, until `decoder` completes. Checks at every step that
/// the decode order lists exactly the decoded sources, once each.
fn transfer(encoder: &Encoder, decoder: &mut Decoder, loss: f64, rng: &mut SplitMix64) -> Vec<Snapshot> {
    let k = encoder.symbols();
    let mut payload = vec![0; encoder.symbol_bytes()];
    let mut snapshots = Vec::new();
    for esi in 0.. {
        assert!(esi < 50 * k as u32 + 200, "stuck at {} of {k}", decoder.decoded_count());
        if rng.unit_f64() < loss {
            continue;
        }
        encoder.encode(esi, &mut payload).unwrap();
        let outcome = decoder.consume(esi, &payload).unwrap();
        let order = decoder.decode_order().to_vec();
        let listed: BTreeSet<u32> = order.iter().copied().collect();
        let decoded: BTreeSet<u32> = (0..k as u32).filter(|&i| decoder.is_symbol_decoded(i as usize)).collect();
        assert_eq!((listed.len(), &listed), (order.len(), &decoded));
        assert_eq!(outcome == Received::Complete, decoder.is_complete());
        snapshots.push(Snapshot {
            outcome,
            order,
            by_elimination: decoder.decoded_by_elimination(),
            pending: decoder.pending_symbols(),
        });
        if decoder.is_complete() {
            return snapshots;
        }
    }
    unreachable!()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn decodes_what_was_encoded_through_losses(
        k in 1usize..300,
        symbol_bytes in 1usize..40,
        fill in 0.0f64..=1.0,
        loss in 0.0f64..0.6,
        fallback: bool,
        seed: u64,
    ) {
        let mut rng = SplitMix64::new(seed);
        let mut data = vec![0; ((k * symbol_bytes) as f64 * fill) as usize];
        rng.fill_bytes(&mut data);
        let mut encoder = Encoder::new(k, symbol_bytes, robust(k), seed).unwrap();
        encoder.set_symbols(&data).unwrap();
        let mut decoder = Decoder::new(k, symbol_bytes, robust(k), seed).unwrap();
        decoder.set_fallback(fallback);
        transfer(&encoder, &mut decoder, loss, &mut rng);
        let decoded = decoder.data().unwrap();
        prop_assert_eq!(&decoded[..data.len()], &data[..]);
        prop_assert!(decoded[data.len()..].iter().all(|&b| b == 0));
        prop_assert_eq!(decoder.decode_order().len(), k);
        if !fallback {
            prop_assert_eq!(decoder.decoded_by_elimination(), 0);
        }
    }

    #[test]
    fn virtual_payloads_decode_exactly_when_real_ones_do(
        k in 1usize..200,
        loss in 0.0f64..0.5,
        fallback: bool,
        seed: u64,
    ) {
        let mut encoder = Encoder::new(k, 16, robust(k), seed).unwrap();
        let mut data = vec![0; k * 16];
        SplitMix64::new(!seed).fill_bytes(&mut data);
        encoder.set_symbols(&data).unwrap();
        let mut real = Decoder::new(k, 16, robust(k), seed).unwrap();
        real.set_fallback(fallback);
        let virtual_encoder = Encoder::new(k, 0, robust(k), seed).unwrap();
        let mut virtual_decoder = Decoder::new(k, 0, robust(k), seed).unwrap();
        virtual_decoder.set_fallback(fallback);
        let real_steps = transfer(&encoder, &mut real, loss, &mut SplitMix64::new(seed));
        let virtual_steps = transfer(&virtual_encoder, &mut virtual_decoder, loss, &mut SplitMix64::new(seed));
        prop_assert_eq!(real_steps, virtual_steps);
        prop_assert_eq!(real.data(), Some(&data[..]));
        prop_assert_eq!(virtual_decoder.symbol(0), Some(&[][..]));
    }
}

/// Mean of `needed / k - 1`, and the share of trials done within `1.3 k`.
fn summary(needed: &[usize], k: usize) -> (f64, f64) {
    let mean = needed.iter().sum::<usize>() as f64 / (needed.len() * k) as f64 - 1.0;
    let within = needed.iter().filter(|&&n| n * 10 <= 13 * k).count() as f64 / needed.len() as f64;
    (mean, within)
}

#[test]
fn with_elimination_k_1000_needs_under_ten_percent_overhead() {
    // Measured: mean 0.7%, all trials within 1.3k. Full-rank decoding is limited
    // by sources no symbol covers, P = k exp(-n mean_degree / k).
    let needed = overhead_trials(&robust(1000), 100, 1, true);
    let (mean, within) = summary(&needed, 1000);
    assert!(mean <= 0.10, "mean overhead {mean}");
    assert!(within >= 0.99, "only {within} decoded within 1.3k");
    assert!(needed.iter().all(|&n| n >= 1000));
}

#[test]
fn peeling_alone_at_k_1000_matches_lt_codes_of_that_size() {
    // Measured over 2000 trials: mean 13.4%, 98.9% within 1.3k. Peeling cannot
    // reach 10% at this k with any (c, delta) in the grid of DEFAULT_C.
    let needed = overhead_trials(&robust(1000), 200, 2, false);
    let (mean, within) = summary(&needed, 1000);
    assert!((0.08..=0.17).contains(&mean), "mean overhead {mean}");
    assert!(within >= 0.96, "only {within} decoded within 1.3k");
}

#[test]
fn elimination_never_needs_more_symbols_than_peeling() {
    for k in [16, 64, 300] {
        let peeling = overhead_trials(&robust(k), 60, k as u64, false);
        let elimination = overhead_trials(&robust(k), 60, k as u64, true);
        assert!(peeling.iter().zip(&elimination).all(|(p, e)| e <= p), "k={k}");
        assert!(summary(&elimination, k).0 < summary(&peeling, k).0, "k={k}");
    }
}

/// The GF(2) rank of `rows`, each a bit set over at most 128 sources.
fn rank(rows: &[u128]) -> usize {
    let mut basis: Vec<u128> = Vec::new();
    for &row in rows {
        let reduced = basis.iter().fold(row, |r, &b| r.min(r ^ b));
        if reduced != 0 {
            basis.push(reduced);
            basis.sort_unstable_by(|a, b| b.cmp(a));
        }
    }
    basis.len()
}

#[test]
fn with_elimination_completes_on_the_symbol_that_reaches_full_rank() {
    let k = 100;
    let dist = robust(k);
    let needed = overhead_trials(&dist, 40, 6, true);
    let mut seeds = SplitMix64::new(6);
    let mut out = Vec::new();
    for n in needed {
        let seed = seeds.next_u64();
        let rows: Vec<u128> = (0..n as u32)
            .map(|esi| {
                ncmesh_codec::lt::neighbours(&dist, seed, esi, &mut out);
                out.iter().fold(0, |row, &i| row | 1 << i)
            })
            .collect();
        assert_eq!((rank(&rows[..n - 1]), rank(&rows)), (k - 1, k), "seed {seed}");
    }
}

#[test]
fn robust_soliton_beats_ideal_soliton() {
    // The Ideal Soliton's expected ripple is a single symbol, so peeling stalls.
    let k = 500;
    let ideal = summary(&overhead_trials(&Distribution::ideal(k).unwrap(), 100, 4, false), k).0;
    let robust = summary(&overhead_trials(&robust(k), 100, 4, false), k).0;
    assert!(robust < ideal, "robust {robust} vs ideal {ideal}");
}
