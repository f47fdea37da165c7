//! Block RLNC: round trips over every field, recoding, rank beyond 64, and
//! "seen" tracking against its brute-force definition.

use ncmesh_codec::prng::SplitMix64;
use ncmesh_codec::rlnc::{CodecError, Decoder, Encoder, Produced, Received, Recoder};
use ncmesh_codec::Field;
use proptest::prelude::*;

fn field(q: u32) -> Field {
    Field::new(q).unwrap()
}

fn random_bytes(rng: &mut SplitMix64, len: usize) -> Vec<u8> {
    let mut v = vec![0; len];
    rng.fill_bytes(&mut v);
    v
}

/// Sends from `encoder` through a channel that loses each symbol with
/// probability `loss` until `decoder` completes; returns the symbols sent.
fn transfer(encoder: &mut Encoder, decoder: &mut Decoder, loss: f64, rng: &mut SplitMix64) -> usize {
    let (g, s) = (encoder.symbols(), encoder.symbol_bytes());
    let mut coefficients = vec![0; g];
    let mut payload = vec![0; s];
    let mut sent = 0;
    while !decoder.is_complete() {
        assert!(sent < 50 * g + 200, "decoder stuck at rank {} of {g}", decoder.rank());
        let produced = encoder.produce(rng.next_u64(), &mut coefficients, &mut payload).unwrap();
        sent += 1;
        if rng.unit_f64() < loss {
            continue;
        }
        let received = match produced {
            Produced::Uncoded(i) => decoder.consume_systematic(i, &payload).unwrap(),
            Produced::Coded(_) => decoder.consume(&coefficients, &payload).unwrap(),
        };
        assert_eq!(received == Received::Complete, decoder.is_complete());
    }
    sent
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn decode_inverts_encode(
        q in 1u32..=8,
        g in prop_oneof![1usize..=16, 17usize..=256],
        units in 0usize..=40,
        systematic in any::<bool>(),
        loss in 0.0f64..0.6,
        seed in any::<u64>(),
    ) {
        let f = field(q);
        let symbol_bytes = units * f.symbol_granularity();
        let mut rng = SplitMix64::new(seed);
        let data = random_bytes(&mut rng, g * symbol_bytes);
        let mut encoder = Encoder::new(f, g, symbol_bytes).unwrap();
        encoder.set_systematic(systematic);
        encoder.set_data(&data).unwrap();
        let mut decoder = Decoder::new(f, g, symbol_bytes).unwrap();
        transfer(&mut encoder, &mut decoder, loss, &mut rng);
        prop_assert_eq!(decoder.data().unwrap(), data.clone());
        for i in 0..g {
            prop_assert!(decoder.is_symbol_decoded(i));
            prop_assert_eq!(decoder.symbol(i).unwrap(), &data[i * symbol_bytes..(i + 1) * symbol_bytes]);
        }
    }

    #[test]
    fn recoded_symbols_decode(
        q in 1u32..=8,
        g in 1usize..=64,
        loss in 0.0f64..0.5,
        seed in any::<u64>(),
    ) {
        let f = field(q);
        let symbol_bytes = 24 * f.symbol_granularity();
        let mut rng = SplitMix64::new(seed);
        let data = random_bytes(&mut rng, g * symbol_bytes);
        let mut encoder = Encoder::new(f, g, symbol_bytes).unwrap();
        encoder.set_data(&data).unwrap();
        let mut relay = Recoder::new(f, g, symbol_bytes).unwrap();
        let mut sink = Decoder::new(f, g, symbol_bytes).unwrap();
        let (mut c, mut p) = (vec![0; g], vec![0; symbol_bytes]);
        let mut rounds = 0;
        while !sink.is_complete() {
            rounds += 1;
            prop_assert!(rounds < 100 * g + 400);
            // Source to relay, then relay to sink, each hop lossy.
            encoder.produce(rng.next_u64(), &mut c, &mut p).unwrap();
            if rng.unit_f64() >= loss {
                relay.consume(&c, &p).unwrap();
            }
            if relay.rank() > 0 && rng.unit_f64() >= loss {
                relay.recode(&mut rng, &mut c, &mut p).unwrap();
                // Partial or complete, the relay sends a true combination of the sources.
                let mut check = vec![0; symbol_bytes];
                encoder.encode(&c, &mut check).unwrap();
                prop_assert_eq!(&check, &p);
                sink.consume(&c, &p).unwrap();
                prop_assert!(sink.rank() <= relay.rank());
            }
        }
        prop_assert_eq!(sink.data().unwrap(), data.clone());
    }
}

#[test]
fn rank_reaches_g_beyond_64_with_seeded_coefficients() {
    // A GF(2)-linear coefficient generator cannot pass this: its vectors lie
    // in a subspace of dimension at most its state size.
    for (f, extra) in [(Field::GF256, 3), (Field::GF16, 6), (Field::GF2, 24)] {
        for g in [65usize, 100, 128, 200, 256] {
            let mut decoder = Decoder::new(f, g, 0).unwrap();
            let encoder = Encoder::new(f, g, 0).unwrap();
            let mut c = vec![0; g];
            for seed in 0..(g + extra) as u64 {
                encoder.encode_seeded(seed, &mut c, &mut []).unwrap();
                decoder.consume(&c, &[]).unwrap();
            }
            assert_eq!(decoder.rank(), g, "{f:?} g={g}");
        }
    }
}

#[test]
fn partially_filled_decoder_recodes_only_what_it_has() {
    let f = Field::GF256;
    let (g, s) = (8, 16);
    let mut rng = SplitMix64::new(3);
    let data = random_bytes(&mut rng, g * s);
    let mut encoder = Encoder::new(f, g, s).unwrap();
    encoder.set_data(&data).unwrap();
    let mut decoder = Decoder::new(f, g, s).unwrap();
    let (mut c, mut p) = (vec![0; g], vec![0; s]);
    for _ in 0..5 {
        encoder.encode_seeded(rng.next_u64(), &mut c, &mut p).unwrap();
        decoder.consume(&c, &p).unwrap();
    }
    let mut relay = Recoder::from(decoder.clone());
    let mut sink = Decoder::new(f, g, s).unwrap();
    for _ in 0..40 {
        relay.recode(&mut rng, &mut c, &mut p).unwrap();
        // A recoded symbol is a true combination of the source symbols.
        let mut check = vec![0; s];
        encoder.encode(&c, &mut check).unwrap();
        assert_eq!(check, p);
        sink.consume(&c, &p).unwrap();
    }
    assert_eq!(sink.rank(), 5);
    let mut empty = Recoder::new(f, g, s).unwrap();
    assert_eq!(empty.recode(&mut rng, &mut c, &mut p), Err(CodecError::NothingToRecode));
}

/// Leading positions of every non-zero vector in the span, by enumeration.
fn leading_positions(f: Field, rows: &[Vec<u8>], g: usize) -> Vec<bool> {
    let q = f.order() as u64;
    let mut lead = vec![false; g];
    for mut k in 1..q.pow(rows.len() as u32) {
        let mut v = vec![0u8; g];
        for row in rows {
            f.axpy((k % q) as u8, row, &mut v);
            k /= q;
        }
        if let Some(i) = v.iter().position(|&c| c != 0) {
            lead[i] = true;
        }
    }
    lead
}

#[test]
fn seen_symbols_match_the_brute_force_definition() {
    let mut rng = SplitMix64::new(11);
    for (f, max_rows) in [(Field::GF2, 10usize), (Field::GF4, 5), (Field::GF8, 4)] {
        for trial in 0..40 {
            let g = 3 + trial % 8;
            let mut decoder = Decoder::new(f, g, 0).unwrap();
            let mut rows = Vec::new();
            for _ in 0..1 + trial % max_rows {
                // Sparse vectors with late leading entries exercise the definition.
                let mut c = vec![0u8; g];
                let from = rng.below(g as u64) as usize;
                for x in &mut c[from..] {
                    *x = (rng.next_u64() as u8) & f.max_element();
                }
                decoder.consume(&c, &[]).unwrap();
                rows.push(c);
                let want = leading_positions(f, &rows, g);
                let got: Vec<bool> = (0..g).map(|i| decoder.is_symbol_seen(i)).collect();
                assert_eq!(got, want, "{f:?} g={g} rows={rows:?}");
                for i in 0..g {
                    assert_eq!(decoder.is_symbol_decoded(i), unit_in_span(f, &rows, i), "{f:?} symbol {i}");
                    // A seen symbol's row is s_i plus later symbols, and lies in the span.
                    match decoder.coefficient_row(i) {
                        Some(row) => {
                            assert!(want[i], "{f:?}: a row for unseen symbol {i}");
                            assert_eq!(row.iter().position(|&c| c != 0), Some(i), "{f:?} row {i}: {row:?}");
                            assert_eq!(row[i], 1, "{f:?} row {i} is scaled to its pivot");
                            let mut with_row = rows.clone();
                            with_row.push(row);
                            assert_eq!(rank(f, &with_row), rank(f, &rows), "{f:?} row {i} is in the span");
                        }
                        None => assert!(!want[i], "{f:?}: no row for seen symbol {i}"),
                    }
                }
                let decoded = (0..g).filter(|&i| unit_in_span(f, &rows, i)).count();
                assert_eq!(decoder.symbols_decoded(), decoded, "{f:?} g={g}");
            }
        }
    }
}

#[test]
fn a_symbol_is_decoded_before_a_pending_pivot_is_cleared_from_its_row() {
    // e0 + e1, then e1: e0 is in the span at once, although row 0 still holds
    // the second coefficient until pivot 1's column is cleared from it.
    for f in [Field::GF2, Field::GF256] {
        let g = 40;
        let mut decoder = Decoder::new(f, g, 4).unwrap();
        assert_eq!((decoder.symbols(), decoder.symbol_bytes()), (g, 4));
        let mut c = vec![0u8; g];
        c[0] = 1;
        c[1] = 1;
        decoder.consume(&c, &[1, 2, 3, 4]).unwrap();
        assert!(!decoder.is_symbol_decoded(0) && decoder.symbols_decoded() == 0);
        c[0] = 0;
        decoder.consume(&c, &[5, 6, 7, 8]).unwrap();
        assert!(decoder.is_symbol_decoded(0) && decoder.is_symbol_decoded(1), "{f:?}");
        assert_eq!(decoder.symbols_decoded(), 2);
        assert_eq!(decoder.symbol(0), Some(&[1 ^ 5, 2 ^ 6, 3 ^ 7, 4 ^ 8][..]), "{f:?}");
        assert_eq!(decoder.symbol(1), Some(&[5, 6, 7, 8][..]), "{f:?}");
        assert_eq!(Decoder::new(f, g, 0).unwrap().symbol_bytes(), 0);
    }
}

#[test]
fn an_older_row_is_decoded_once_every_pending_pivot_it_holds_is_cleared() {
    // Rows e_r + e_16 + e_17 for r < 16 fill the pending rows, so they are
    // reduced and become older rows; e_16 and e_17 then wait as pending rows
    // that every older row still holds a coefficient of. After e_16 alone no
    // older symbol is decoded; after e_17 too, all of them are, before the
    // pending columns are cleared from the older rows.
    for f in [Field::GF256, Field::GF16] {
        // The decoder's PENDING_ROWS.
        const PENDING_ROWS: usize = 16;
        let g = 24;
        let mut decoder = Decoder::new(f, g, 0).unwrap();
        let mut rows = Vec::new();
        let unit = |i: usize| (0..g).map(|j| u8::from(j == i)).collect::<Vec<u8>>();
        for r in 0..PENDING_ROWS + 2 {
            let mut c = unit(r);
            if r < PENDING_ROWS {
                c[PENDING_ROWS] = 2;
                c[PENDING_ROWS + 1] = 3;
            }
            decoder.consume(&c, &[]).unwrap();
            rows.push(c);
            for i in 0..g {
                let want = unit_in_span(f, &rows, i);
                assert_eq!(decoder.is_symbol_decoded(i), want, "{f:?}, {} rows, symbol {i}", rows.len());
            }
        }
        assert_eq!(decoder.symbols_decoded(), PENDING_ROWS + 2, "{f:?}");
    }
}

/// Decoded means the unit vector e_i is in the span of what was received.
fn unit_in_span(f: Field, rows: &[Vec<u8>], i: usize) -> bool {
    let mut with_unit = rows.to_vec();
    let mut e = vec![0u8; rows[0].len()];
    e[i] = 1;
    with_unit.push(e);
    rank(f, &with_unit) == rank(f, rows)
}

/// Rank by textbook elimination, independent of the decoder.
fn rank(f: Field, rows: &[Vec<u8>]) -> usize {
    let mut m = rows.to_vec();
    let mut rank = 0;
    for col in 0..m[0].len() {
        let Some(p) = (rank..m.len()).find(|&r| m[r][col] != 0) else { continue };
        m.swap(rank, p);
        let pivot = m[rank].clone();
        let inv = f.inv(pivot[col]);
        for (r, row) in m.iter_mut().enumerate() {
            if r != rank && row[col] != 0 {
                // In characteristic 2, adding is subtracting.
                f.axpy(f.mul(row[col], inv), &pivot, row);
            }
        }
        rank += 1;
    }
    rank
}

/// GF(2) rows span several words of the decoder's bit-packed rows beyond
/// g = 64, and more than a vector register beyond g = 256: ranks, decoded
/// symbols and data stay right across those sizes, with and without
/// payloads, and with vectors that are often dependent.
#[test]
fn binary_elimination_holds_across_row_sizes() {
    let mut rng = SplitMix64::new(21);
    for g in [1usize, 7, 64, 65, 130, 300, 520] {
        let s = 8;
        let data = random_bytes(&mut rng, g * s);
        let mut encoder = Encoder::new(Field::GF2, g, s).unwrap();
        encoder.set_data(&data).unwrap();
        let mut real = Decoder::new(Field::GF2, g, s).unwrap();
        let mut virt = Decoder::new(Field::GF2, g, 0).unwrap();
        let mut basis: Vec<Vec<u64>> = Vec::new();
        let (mut c, mut p) = (vec![0; g], vec![0; s]);
        while !real.is_complete() {
            // A quarter of the vectors lose about half their ones.
            encoder.encode_seeded(rng.next_u64(), &mut c, &mut p).unwrap();
            if rng.below(4) == 0 {
                c.iter_mut().for_each(|x| *x &= (rng.next_u64() & 1) as u8);
                encoder.encode(&c, &mut p).unwrap();
            }
            let innovative = reduce_gf2(&mut basis, &c);
            let got = real.consume(&c, &p).unwrap();
            assert_eq!(virt.consume(&c, &[]).unwrap(), got);
            assert_eq!(got != Received::NotInnovative, innovative, "g={g}");
            assert_eq!(real.rank(), basis.len(), "g={g}");
        }
        assert_eq!(real.data().unwrap(), data, "g={g}");
        assert!((0..g).all(|i| virt.is_symbol_decoded(i)));
    }
}

/// Adds `c` to a GF(2) basis kept in echelon form by leading bit; whether it
/// was independent of the basis.
fn reduce_gf2(basis: &mut Vec<Vec<u64>>, c: &[u8]) -> bool {
    let mut v = vec![0u64; c.len().div_ceil(64)];
    for (j, &x) in c.iter().enumerate() {
        v[j / 64] |= u64::from(x) << (j % 64);
    }
    let lead =
        |v: &[u64]| v.iter().enumerate().find(|(_, &w)| w != 0).map(|(k, w)| 64 * k + w.trailing_zeros() as usize);
    for row in basis.iter() {
        let l = lead(row).unwrap();
        if v[l / 64] >> (l % 64) & 1 != 0 {
            v.iter_mut().zip(row).for_each(|(a, b)| *a ^= b);
        }
    }
    if lead(&v).is_none() {
        return false;
    }
    basis.push(v);
    basis.sort_by_key(|row| lead(row));
    true
}

#[test]
fn malformed_input_is_an_error_not_a_panic() {
    let mut d = Decoder::new(Field::GF16, 4, 8).unwrap();
    assert_eq!(d.consume(&[1, 2, 3], &[0; 8]), Err(CodecError::CoefficientLength { got: 3, expected: 4 }));
    assert_eq!(d.consume(&[1, 2, 3, 4], &[0; 7]), Err(CodecError::PayloadLength { got: 7, expected: 8 }));
    assert!(matches!(d.consume(&[1, 2, 16, 4], &[0; 8]), Err(CodecError::CoefficientOutOfField { index: 2, .. })));
    assert!(matches!(d.consume_systematic(4, &[0; 8]), Err(CodecError::IndexOutOfRange { .. })));
    assert_eq!(Decoder::new(Field::GF256, 0, 8).err(), Some(CodecError::InvalidSymbols(0)));
    assert!(matches!(Decoder::new(Field::GF8, 4, 10), Err(CodecError::InvalidSymbolBytes { granularity: 3, .. })));
    let mut e = Encoder::new(Field::GF256, 2, 4).unwrap();
    assert!(matches!(e.set_data(&[0; 9]), Err(CodecError::DataTooLarge { .. })));
}

/// Data shorter than the generation fills whole symbols first, and the rest,
/// including what an earlier generation left, reads as zeros.
#[test]
fn short_data_is_zero_padded() {
    let mut e = Encoder::new(Field::GF256, 3, 70).unwrap();
    e.set_data(&[7; 210]).unwrap();
    e.set_data(&[1; 100]).unwrap();
    let mut want = vec![0u8; 210];
    want[..100].fill(1);
    let got: Vec<u8> = (0..3).flat_map(|i| e.symbol(i).unwrap().to_vec()).collect();
    assert_eq!(got, want);
}

#[test]
fn virtual_and_real_payloads_agree_on_rank() {
    let f = Field::GF4;
    let g = 40;
    let mut real = Decoder::new(f, g, 64).unwrap();
    let mut virt = Decoder::new(f, g, 0).unwrap();
    let e_real = Encoder::new(f, g, 64).unwrap();
    let e_virt = Encoder::new(f, g, 0).unwrap();
    let (mut c, mut p) = (vec![0; g], vec![0; 64]);
    for seed in 0..60 {
        e_real.encode_seeded(seed, &mut c, &mut p).unwrap();
        let a = real.consume(&c, &p).unwrap();
        e_virt.encode_seeded(seed, &mut c, &mut []).unwrap();
        let b = virt.consume(&c, &[]).unwrap();
        assert_eq!(a, b);
        assert_eq!(real.rank(), virt.rank());
    }
    assert!(virt.is_complete());
    // A virtual decoder's symbols are empty, but there are g of them.
    assert_eq!(virt.decoded_symbols().unwrap(), vec![&[][..]; g]);
}

#[test]
fn decoded_symbols_are_exactly_the_unit_vectors_in_the_span() {
    // Large enough for delayed updates to be pending between queries.
    let mut rng = SplitMix64::new(12);
    for f in [Field::GF2, Field::GF256] {
        let g = 48;
        let mut decoder = Decoder::new(f, g, 8).unwrap();
        let mut rows = Vec::new();
        while !decoder.is_complete() {
            let mut c = vec![0u8; g];
            let from = rng.below(g as u64) as usize;
            for x in c.iter_mut().skip(from).take(3) {
                *x = (rng.next_u64() as u8) & f.max_element();
            }
            decoder.consume(&c, &[0; 8]).unwrap();
            rows.push(c);
            for i in 0..g {
                let in_span = unit_in_span(f, &rows, i);
                assert_eq!(decoder.is_symbol_decoded(i), in_span, "{f:?} symbol {i} after {} rows", rows.len());
            }
        }
    }
}

#[test]
fn a_reset_decoder_decodes_the_next_generation() {
    for q in [1, 4, 8] {
        let f = field(q);
        let (g, s) = (40, 24);
        let mut rng = SplitMix64::new(q as u64);
        let mut decoder = Decoder::new(f, g, s).unwrap();
        for fill in [g / 2, g + 8] {
            // Leave the decoder part-way (with rows still pending) or complete, then reuse it.
            let mut first = Encoder::new(f, g, s).unwrap();
            first.set_data(&random_bytes(&mut rng, g * s)).unwrap();
            let (mut c, mut p) = (vec![0; g], vec![0; s]);
            for _ in 0..fill {
                first.encode_seeded(rng.next_u64(), &mut c, &mut p).unwrap();
                decoder.consume(&c, &p).unwrap();
            }
            decoder.reset();
            assert_eq!(decoder.rank(), 0);
            assert!((0..g).all(|i| !decoder.is_symbol_seen(i) && decoder.symbol(i).is_none()));
            let data = random_bytes(&mut rng, g * s);
            let mut next = Encoder::new(f, g, s).unwrap();
            next.set_data(&data).unwrap();
            decoder.consume_systematic(3, next.symbol(3).unwrap()).unwrap();
            while !decoder.is_complete() {
                next.encode_seeded(rng.next_u64(), &mut c, &mut p).unwrap();
                decoder.consume(&c, &p).unwrap();
            }
            assert_eq!(decoder.data().unwrap(), data, "{f:?} after {fill} symbols");
        }
    }
}

/// A fresh decoder decodes its first generation in place, over the payloads
/// it received (below g = 32 only over GF(2), where that needs no copy); once
/// reset it keeps a buffer of its own for decoded symbols. Both hold the
/// right symbols, for every block of columns and every field.
#[test]
fn decoding_in_place_then_reusing_the_decoder() {
    let mut rng = SplitMix64::new(31);
    for q in 1..=8 {
        let f = field(q);
        for g in [9, 16, 32, 65] {
            // Three blocks of columns, and whole bit planes for every q.
            let s = 1260;
            let mut decoder = Decoder::new(f, g, s).unwrap();
            for generation in 0..3 {
                let data = random_bytes(&mut rng, g * s);
                let mut encoder = Encoder::new(f, g, s).unwrap();
                encoder.set_data(&data).unwrap();
                let (mut c, mut p) = (vec![0; g], vec![0; s]);
                while !decoder.is_complete() {
                    encoder.encode_seeded(rng.next_u64(), &mut c, &mut p).unwrap();
                    decoder.consume(&c, &p).unwrap();
                }
                if generation == 1 {
                    // One symbol asked for first takes the other path.
                    assert_eq!(decoder.symbol(5).unwrap(), &data[5 * s..6 * s]);
                }
                assert_eq!(decoder.data().unwrap(), data, "{f:?} g={g} generation {generation}");
                for i in 0..g {
                    assert_eq!(decoder.symbol(i).unwrap(), &data[i * s..(i + 1) * s]);
                }
                let mut relay = Recoder::from(decoder.clone());
                relay.recode(&mut rng, &mut c, &mut p).unwrap();
                let mut want = vec![0; s];
                encoder.encode(&c, &mut want).unwrap();
                assert_eq!(p, want);
                decoder.reset();
            }
        }
    }
}

/// Batches, which over GF(2) run on a bit-sliced copy of the generation
/// kept by the encoder or by a complete relay, agree with symbols coded one
/// at a time: after `set_data`, after `set_symbol`, and for a relay reset
/// between generations.
#[test]
fn batches_agree_with_symbols_coded_one_at_a_time() {
    let mut rng = SplitMix64::new(77);
    for q in [1, 4, 8] {
        let f = field(q);
        for g in [1, 7, 16, 33] {
            for s in [1, 100, 1500] {
                let mut encoder = Encoder::new(f, g, s).unwrap();
                let mut relay = Recoder::new(f, g, s).unwrap();
                for generation in 0..2 {
                    let mut data = random_bytes(&mut rng, g * s);
                    encoder.set_data(&data).unwrap();
                    for changed in [None, Some(g / 2)] {
                        if let Some(i) = changed {
                            let symbol = random_bytes(&mut rng, s);
                            encoder.set_symbol(i, &symbol).unwrap();
                            data[i * s..(i + 1) * s].copy_from_slice(&symbol);
                        }
                        let mut reference = Encoder::new(f, g, s).unwrap();
                        reference.set_data(&data).unwrap();
                        for count in [1, 3, 4, 9] {
                            let mut c = vec![0; count * g];
                            for row in c.chunks_exact_mut(g) {
                                ncmesh_codec::coefficients::generate(f, rng.next_u64(), row);
                            }
                            let mut p = vec![0; count * s];
                            encoder.encode_batch(&c, &mut p).unwrap();
                            for (row, got) in c.chunks_exact(g).zip(p.chunks_exact(s)) {
                                let mut want = vec![0; s];
                                reference.encode(row, &mut want).unwrap();
                                assert_eq!(got, &want[..], "{f:?} g={g} s={s} batch of {count}, changed {changed:?}");
                            }
                        }
                    }
                    let (mut c, mut p) = (vec![0; g], vec![0; s]);
                    while relay.rank() < g {
                        encoder.encode_seeded(rng.next_u64(), &mut c, &mut p).unwrap();
                        relay.consume(&c, &p).unwrap();
                    }
                    for count in [2, 4, 9] {
                        let (mut c, mut p) = (vec![0; count * g], vec![0; count * s]);
                        relay.recode_batch(&mut rng, &mut c, &mut p).unwrap();
                        for (row, got) in c.chunks_exact(g).zip(p.chunks_exact(s)) {
                            let mut want = vec![0; s];
                            encoder.encode(row, &mut want).unwrap();
                            assert_eq!(
                                got,
                                &want[..],
                                "{f:?} g={g} s={s} relay, generation {generation}, batch of {count}"
                            );
                        }
                    }
                    let mut decoder = relay.into_decoder();
                    decoder.reset();
                    relay = Recoder::from(decoder);
                }
            }
        }
    }
}

/// Where a decode of one generation of 16 1500-byte symbols spends its
/// time, by field: making a decoder, eliminating (a virtual decoder),
/// copying the payloads in, and the final product with the decoded
/// symbols' bookkeeping. Each part is the difference of two timings. A
/// measurement, not a check (docs/benchmarks.md): `cargo test --release -p
/// ncmesh-codec --test rlnc decode_cost_breakdown -- --ignored --nocapture`.
#[test]
#[ignore]
fn decode_cost_breakdown() {
    use std::time::Instant;
    let (g, s, runs) = (16, 1500, 100_000);
    for f in [Field::GF2, Field::GF256] {
        let mut rng = SplitMix64::new(3);
        let mut encoder = Encoder::new(f, g, s).unwrap();
        encoder.set_data(&random_bytes(&mut rng, g * s)).unwrap();
        let coded: Vec<(Vec<u8>, Vec<u8>)> = (0..g as u64 + 40)
            .map(|seed| {
                let (mut c, mut p) = (vec![0; g], vec![0; s]);
                encoder.encode_seeded(seed, &mut c, &mut p).unwrap();
                (c, p)
            })
            .collect();
        let time = |work: &dyn Fn()| {
            let start = Instant::now();
            for _ in 0..runs {
                work();
            }
            start.elapsed().as_secs_f64() / runs as f64 * 1e9
        };
        let fill = |d: &mut Decoder, payloads: bool| {
            for (c, p) in &coded {
                if d.is_complete() {
                    break;
                }
                d.consume(c, if payloads { p } else { &[] }).unwrap();
            }
        };
        let new = time(&|| drop(std::hint::black_box(Decoder::new(f, g, s).unwrap())));
        let eliminate = time(&|| fill(&mut Decoder::new(f, g, 0).unwrap(), false));
        let consume = time(&|| fill(&mut Decoder::new(f, g, s).unwrap(), true));
        let decode = time(&|| {
            let mut d = Decoder::new(f, g, s).unwrap();
            fill(&mut d, true);
            std::hint::black_box(d.decoded_symbols().map(|symbols| symbols[0][0]));
        });
        println!(
            "{f:?}: decoder made {new:.0} ns, elimination {:.0} ns, payloads copied {:.0} ns, product and decoded symbols {:.0} ns; whole {decode:.0} ns",
            eliminate - new,
            consume - eliminate,
            decode - consume
        );
    }
}
