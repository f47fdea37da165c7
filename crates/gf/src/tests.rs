//! Every kernel path against the scalar reference, and field axioms.

use super::*;

const LENGTHS: [usize; 9] = [0, 1, 15, 16, 63, 64, 257, 1500, 4096];

/// Miri interprets every byte operation, thousands of times slower than
/// native code: under it the kernel tests take their short rows and small
/// shapes only, which still reach every tail and block of the kernels.
const MIRI: bool = cfg!(miri);

fn bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 24) as u8
        })
        .collect()
}

/// One tier against the scalar reference: every kernel, every field and
/// both layouts of a map, on every length of [`LENGTHS`], with rows and
/// outputs enough to fill and overflow each tier's blocks and passes.
fn matches_scalar(k: &Kernels) {
    let reference = Kernels::scalar();
    for (case, &len) in LENGTHS.iter().enumerate().filter(|(_, &len)| !MIRI || len <= 64) {
        let x = bytes(len, case as u64);
        let y = bytes(len, 100 + case as u64);
        for field in (1..=8).map(|q| Field::new(q).unwrap()) {
            for a in [1u8, 2, 3, 0x1d, 0x8e, 0xff] {
                for m in [field.element_map(a), &TABLES[field.q as usize - 1].packed[usize::from(a)]] {
                    let (mut want, mut got) = (y.clone(), y.clone());
                    (reference.map_xor)(m, &x, &mut want);
                    (k.map_xor)(m, &x, &mut got);
                    assert_eq!(want, got, "{:?} map_xor len {len} {field:?} a={a}", k.isa);
                    (reference.map)(m, &mut want);
                    (k.map)(m, &mut got);
                    assert_eq!(want, got, "{:?} map len {len}", k.isa);
                }
            }
        }
        let (mut want, mut got) = (y.clone(), y.clone());
        (reference.xor)(&x, &mut want);
        (k.xor)(&x, &mut got);
        assert_eq!(want, got, "{:?} xor len {len}", k.isa);
        assert_eq!((reference.dot256)(&x, &y), (k.dot256)(&x, &y), "{:?} dot len {len}", k.isa);

        for rows in [1usize, 3, 17, 40] {
            let xs: Vec<Vec<u8>> = (0..rows).map(|r| bytes(len, 7 * r as u64 + 5)).collect();
            let xr: Vec<&[u8]> = xs.iter().map(|v| v.as_slice()).collect();
            // Coefficient 1 among them: the multi-row sum adds such rows plainly.
            let ms: Vec<&ByteMap> =
                (0..rows).map(|r| Field::GF256.element_map((r as u8).wrapping_mul(37) | 1)).collect();
            let (mut want, mut got) = (y.clone(), y.clone());
            (reference.map_xor_multi)(&ms, &xr, &mut want);
            (k.map_xor_multi)(&ms, &xr, &mut got);
            assert_eq!(want, got, "{:?} multi len {len} rows {rows}", k.isa);

            for outputs in [1usize, 4, 6, 8, 9, 17] {
                let indices: Vec<u8> =
                    (0..outputs * rows).map(|i| (i as u8).wrapping_mul(91).wrapping_add(3)).collect();
                products_match(k, &TABLES[7].element, &indices, &xr, outputs, len);
            }

            let mut want: Vec<Vec<u8>> = xs.clone();
            let mut got: Vec<Vec<u8>> = xs.clone();
            let mut want_refs: Vec<&mut [u8]> = want.iter_mut().map(|v| v.as_mut_slice()).collect();
            let mut got_refs: Vec<&mut [u8]> = got.iter_mut().map(|v| v.as_mut_slice()).collect();
            (reference.map_xor_fanout)(&ms, &y, &mut want_refs);
            (k.map_xor_fanout)(&ms, &y, &mut got_refs);
            assert_eq!(want, got, "{:?} fanout len {len} rows {rows}", k.isa);
        }
    }
}

/// The tier's product of `outputs` rows of maps against the reference's,
/// adding to the outputs and writing over them.
fn products_match(k: &Kernels, table: &[ByteMap; 256], indices: &[u8], xs: &[&[u8]], outputs: usize, len: usize) {
    let maps = MapMatrix { table, indices };
    for accumulate in [true, false] {
        let mut want: Vec<Vec<u8>> = (0..outputs).map(|o| bytes(len, 50 + o as u64)).collect();
        let mut got = want.clone();
        let mut want_refs: Vec<&mut [u8]> = want.iter_mut().map(|v| v.as_mut_slice()).collect();
        let mut got_refs: Vec<&mut [u8]> = got.iter_mut().map(|v| v.as_mut_slice()).collect();
        (Kernels::scalar().map_matmul)(maps, xs, &mut want_refs, accumulate);
        (k.map_matmul)(maps, xs, &mut got_refs, accumulate);
        assert_eq!(want, got, "{:?} matmul len {len} inputs {} outputs {outputs} {accumulate}", k.isa, xs.len());
    }
}

/// A product of more maps than a kernel turns into offsets on its stack,
/// of maps that are not multiplications, among them zero and the identity.
fn large_products_match(k: &Kernels) {
    let (outputs, inputs, len) = if MIRI { (2, 2100, 3) } else { (9, 500, 40) };
    let mut table = [ByteMap::ZERO; 256];
    for (i, m) in table.iter_mut().enumerate().skip(2) {
        *m = ByteMap::from_columns(bytes(8, i as u64).try_into().expect("eight columns"));
    }
    table[1] = *Field::GF256.element_map(1);
    let xs: Vec<Vec<u8>> = (0..inputs).map(|r| bytes(len, 3 * r as u64 + 1)).collect();
    let xr: Vec<&[u8]> = xs.iter().map(|v| v.as_slice()).collect();
    products_match(k, &table, &bytes(outputs * inputs, 77), &xr, outputs, len);
}

/// No kernel of the tier reads or writes a byte outside its slices: rows
/// are cut out of buffers between guard bytes, which must stay as they were.
fn stays_within_slices(k: &Kernels) {
    const GUARD: usize = 64;
    let m = Field::GF256.element_map(7);
    for len in [1usize, 15, 31, 33, 63, 100, 1500].into_iter().filter(|&len| !MIRI || len <= 100) {
        let guards_of = |buf: &[u8]| -> Vec<u8> { buf.chunks(len + GUARD).flat_map(|c| c[..GUARD].to_vec()).collect() };
        let xbuf = bytes(3 * (len + GUARD) + GUARD, 1);
        let xr: Vec<&[u8]> = xbuf[GUARD..].chunks_exact(len + GUARD).map(|c| &c[..len]).collect();
        let mut ybuf = bytes(3 * (len + GUARD) + GUARD, 2);
        let guards = guards_of(&ybuf);
        {
            let mut ys: Vec<&mut [u8]> = ybuf[GUARD..].chunks_exact_mut(len + GUARD).map(|c| &mut c[..len]).collect();
            (k.map_xor)(m, xr[0], ys[0]);
            (k.map)(m, ys[1]);
            (k.xor)(xr[1], ys[2]);
            (k.map_xor_multi)(&[m; 3], &xr, ys[0]);
            (k.map_xor_fanout)(&[m; 3], xr[2], &mut ys);
            let maps = MapMatrix { table: &TABLES[7].element, indices: &[7; 9] };
            (k.map_matmul)(maps, &xr, &mut ys, true);
            (k.map_matmul)(maps, &xr, &mut ys, false);
        }
        assert_eq!(guards_of(&ybuf), guards, "{:?} wrote outside rows of {len} bytes", k.isa);
    }
}

/// Every tier, one test each: a tier the CPU lacks is reported as ignored,
/// with the reason, rather than passing without running.
macro_rules! tier_tests {
    ($($name:ident: $isa:expr, #[$lacks:meta];)*) => {$(
        #[test]
        #[$lacks]
        fn $name() {
            let k = Kernels::for_isa($isa)
                .unwrap_or_else(|| panic!("{:?} was found when this test was built, but this CPU lacks it", $isa));
            matches_scalar(&k);
            large_products_match(&k);
            stays_within_slices(&k);
            gf2_matches_row_sums(&k);
        }
    )*};
}

tier_tests! {
    scalar_matches_itself: Isa::Scalar, #[cfg_attr(any(), ignore)];
    ssse3_matches_scalar: Isa::Ssse3,
        #[cfg_attr(any(not(target_arch = "x86_64"), ncmesh_cpu_lacks = "ssse3", miri), ignore = "needs an x86 CPU with SSSE3, natively")];
    avx2_matches_scalar: Isa::Avx2,
        #[cfg_attr(any(not(target_arch = "x86_64"), ncmesh_cpu_lacks = "avx2", miri), ignore = "needs an x86 CPU with AVX2, natively")];
    avx512_matches_scalar: Isa::Avx512,
        #[cfg_attr(any(not(target_arch = "x86_64"), ncmesh_cpu_lacks = "avx512", miri), ignore = "needs an x86 CPU with AVX-512BW, natively")];
    gfni256_matches_scalar: Isa::Gfni256,
        #[cfg_attr(any(not(target_arch = "x86_64"), ncmesh_cpu_lacks = "gfni256", miri), ignore = "needs an x86 CPU with GFNI and AVX2, natively")];
    gfni512_matches_scalar: Isa::Gfni512,
        #[cfg_attr(any(not(target_arch = "x86_64"), ncmesh_cpu_lacks = "gfni512", miri), ignore = "needs an x86 CPU with GFNI and AVX-512BW, natively")];
    neon_matches_scalar: Isa::Neon,
        #[cfg_attr(any(not(target_arch = "aarch64"), miri), ignore = "needs AArch64, natively: `make test-neon` runs it under qemu-user")];
}

/// The dispatch picks the fastest tier the CPU has, found here from the
/// CPU's flags rather than by the kernels' own detection, and a cap picks
/// the tier named. Under Miri it keeps to the scalar tier.
#[test]
fn dispatch_picks_the_fastest_tier_the_cpu_has() {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    let fastest = {
        let avx512 = is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw");
        let (gfni, avx2) = (is_x86_feature_detected!("gfni"), is_x86_feature_detected!("avx2"));
        match () {
            _ if gfni && avx512 => Isa::Gfni512,
            _ if gfni && avx2 => Isa::Gfni256,
            _ if avx512 => Isa::Avx512,
            _ if avx2 => Isa::Avx2,
            _ if is_x86_feature_detected!("ssse3") => Isa::Ssse3,
            _ => Isa::Scalar,
        }
    };
    #[cfg(all(target_arch = "aarch64", not(miri)))]
    let fastest = Isa::Neon;
    #[cfg(any(not(any(target_arch = "x86_64", target_arch = "aarch64")), miri))]
    let fastest = Isa::Scalar;
    assert_eq!(Kernels::choose(None).isa, fastest);
    assert_eq!(Kernels::available().last().map(|k| k.isa), Some(fastest));
    for k in Kernels::available() {
        assert_eq!(Kernels::choose(Some(k.isa.name())).isa, k.isa, "capped at {}", k.isa.name());
        assert_eq!(Isa::from_name(&k.isa.name().to_uppercase()), Some(k.isa));
    }
    let wanted = std::env::var("NCMESH_GF_ISA").ok();
    assert_eq!(Kernels::best().isa, Kernels::choose(wanted.as_deref()).isa);
}

#[test]
#[cfg_attr(miri, ignore = "table arithmetic in safe code, for minutes under Miri")]
fn field_axioms_hold() {
    for field in (1..=8).map(|q| Field::new(q).unwrap()) {
        let n = field.order() as u16;
        for a in 0..n {
            let a = a as u8;
            assert_eq!(field.mul(a, 1), a);
            assert_eq!(field.mul(a, 0), 0);
            if a != 0 {
                assert_eq!(field.mul(a, field.inv(a)), 1, "{field:?} a={a}");
            }
            for b in 0..n {
                let b = b as u8;
                assert_eq!(field.mul(a, b), field.mul(b, a));
                let c = (a ^ b).wrapping_mul(3) & field.max_element();
                assert_eq!(field.mul(a, b ^ c), field.mul(a, b) ^ field.mul(a, c), "distributive");
            }
        }
    }
}

#[test]
fn gf256_uses_0x11d() {
    // x^8 = x^4 + x^3 + x^2 + 1 under 0x11D.
    assert_eq!(Field::GF256.mul(0x80, 2), 0x1d);
    assert_eq!(Field::GF256.polynomial(), 0x11d);
    assert_eq!(Field::new(9), Err(FieldError::UnsupportedDegree(9)));
    assert_eq!(Field::new(0), Err(FieldError::UnsupportedDegree(0)));
}

/// A symbol operation must equal the element-wise operation on the symbol's
/// elements, whatever the layout.
fn unpack(field: Field, symbol: &[u8]) -> Vec<u8> {
    let q = field.degree() as usize;
    if field.symbol_granularity() == 1 {
        let per = 8 / q;
        symbol.iter().flat_map(|&b| (0..per).map(move |k| (b >> (k * q)) & field.max_element())).collect()
    } else {
        let plane = symbol.len() / q;
        (0..plane * 8)
            .map(|k| (0..q).fold(0u8, |e, i| e | (((symbol[i * plane + k / 8] >> (k % 8)) & 1) << i)))
            .collect()
    }
}

#[test]
fn symbol_ops_act_elementwise() {
    for field in (1..=8).map(|q| Field::new(q).unwrap()) {
        for len in [0usize, 1, 15, 1500, 4096].into_iter().filter(|&len| !MIRI || len <= 15) {
            let len = len - len % field.symbol_granularity();
            let x = bytes(len, 3);
            let y = bytes(len, 4);
            for a in 0..field.order().min(20) as u8 {
                let mut got = y.clone();
                field.symbol_axpy(a, &x, &mut got);
                let want: Vec<u8> =
                    unpack(field, &x).iter().zip(unpack(field, &y)).map(|(&xe, ye)| ye ^ field.mul(a, xe)).collect();
                assert_eq!(unpack(field, &got), want, "{field:?} len {len} a={a}");
                let mut scaled = y.clone();
                field.symbol_scale(a, &mut scaled);
                let want: Vec<u8> = unpack(field, &y).iter().map(|&e| field.mul(a, e)).collect();
                assert_eq!(unpack(field, &scaled), want, "{field:?} scale len {len} a={a}");
            }
        }
    }
}

#[test]
fn element_ops_act_elementwise() {
    for field in (1..=8).map(|q| Field::new(q).unwrap()) {
        let mask = field.max_element();
        for len in [0usize, 1, 15, 1500].into_iter().filter(|&len| !MIRI || len <= 15) {
            let x: Vec<u8> = bytes(len, 5).iter().map(|b| b & mask).collect();
            let y: Vec<u8> = bytes(len, 6).iter().map(|b| b & mask).collect();
            for a in 0..field.order().min(20) as u8 {
                let mut got = y.clone();
                field.axpy(a, &x, &mut got);
                let want: Vec<u8> = x.iter().zip(&y).map(|(&xe, &ye)| ye ^ field.mul(a, xe)).collect();
                assert_eq!(got, want, "{field:?} axpy len {len} a={a}");
                let mut got = y.clone();
                field.scale(a, &mut got);
                let want: Vec<u8> = y.iter().map(|&ye| field.mul(a, ye)).collect();
                assert_eq!(got, want, "{field:?} scale len {len} a={a}");
            }
            // The fan-out: one input into several rows, each with its coefficient.
            let coefficients: Vec<u8> = (0..5).map(|c| (c * 7 + 1) as u8 & mask).collect();
            let mut want: Vec<Vec<u8>> =
                (0..5).map(|r| bytes(len, 10 + r).iter().map(|b| b & mask).collect()).collect();
            let mut got = want.clone();
            for (&c, row) in coefficients.iter().zip(&mut want) {
                row.iter_mut().zip(&x).for_each(|(ye, &xe)| *ye ^= field.mul(c, xe));
            }
            field.axpy_fanout(&x, coefficients.iter().copied().zip(got.iter_mut().map(Vec::as_mut_slice)));
            assert_eq!(got, want, "{field:?} fan-out len {len}");
        }
        for a in 0..=mask {
            for b in (1..=mask).filter(|b| !MIRI || b % 37 == 1) {
                assert_eq!(field.mul(field.div(a, b), b), a, "{field:?} {a} / {b}");
            }
        }
    }
    let (x, mut y) = (bytes(1500, 1), bytes(1500, 2));
    let want: Vec<u8> = x.iter().zip(&y).map(|(a, b)| a ^ b).collect();
    crate::xor(&x, &mut y);
    assert_eq!(y, want);
}

#[test]
fn fields_and_their_errors_print_their_degree() {
    assert_eq!(format!("{:?}", Field::GF16), "GF(2^4)");
    let refused = FieldError::UnsupportedDegree(9).to_string();
    assert!(refused.contains("GF(2^9)") && refused.contains("between 1 and 8"), "{refused}");
}

#[test]
#[should_panic(expected = "not a multiple of 3")]
fn a_bit_sliced_symbol_of_the_wrong_length_is_refused() {
    Field::GF8.symbol_axpy(2, &[0; 4], &mut [0; 4]);
}

#[test]
#[should_panic(expected = "rows differ in length")]
fn a_multi_row_sum_over_rows_of_other_lengths_is_refused() {
    let k = Kernels::scalar();
    let m = Field::GF256.element_map(3);
    (k.map_xor_multi)(&[m, m], &[&[1, 2], &[3]], &mut [0, 0]);
}

#[test]
#[should_panic(expected = "the map matrix has the wrong size")]
fn a_product_with_a_map_matrix_of_the_wrong_size_is_refused() {
    let maps = MapMatrix { table: &TABLES[7].element, indices: &[3; 3] };
    (Kernels::scalar().map_matmul)(maps, &[&[1], &[2]], &mut [&mut [0]], true);
}

/// Every product reads a coefficient's bits above q as zero, as `mul` does.
#[test]
fn products_ignore_coefficient_bits_above_q() {
    for field in (1..=7).map(|q| Field::new(q).unwrap()) {
        let (n, len) = (5, 8 * field.symbol_granularity());
        let xs: Vec<Vec<u8>> = (0..n).map(|r| bytes(len, r as u64)).collect();
        let xr: Vec<&[u8]> = xs.iter().map(|v| v.as_slice()).collect();
        let a = bytes(2 * n, 9);
        let masked: Vec<u8> = a.iter().map(|&c| c & field.max_element()).collect();
        let product = |a: &[u8], symbols: bool| {
            let mut ys = vec![vec![0u8; len]; 2];
            let mut refs: Vec<&mut [u8]> = ys.iter_mut().map(|v| v.as_mut_slice()).collect();
            match symbols {
                true => field.symbol_matmul(a, &xr, &mut refs),
                false => field.matmul(a, &xr, &mut refs),
            }
            ys
        };
        assert_eq!(product(&a, true), product(&masked, true), "{field:?} symbols");
        assert_eq!(product(&a, false), product(&masked, false), "{field:?} elements");
    }
}

#[test]
fn only_gf2_products_run_in_place_without_a_copy() {
    for field in (2..=8).map(|q| Field::new(q).unwrap()) {
        assert!((1..=256).all(|n| !field.in_place_without_copy(n)), "{field:?}");
    }
    let best = Kernels::best();
    for n in [1, 8, 64, 256] {
        assert_eq!(Field::GF2.in_place_without_copy(n), crate::kernels::gf2_in_place_without_copy(best, n), "n = {n}");
    }
    assert_eq!(format!("{:?}", Kernels::scalar()), "Kernels { isa: Scalar }");
}

#[test]
fn multi_and_fanout_equal_repeated_axpy() {
    for field in (1..=8).map(|q| Field::new(q).unwrap()) {
        let len = if MIRI { 64 } else { 1500 };
        let len = len - len % field.symbol_granularity();
        let xs: Vec<Vec<u8>> = (0..40).map(|r| bytes(len, r)).collect();
        let xr: Vec<&[u8]> = xs.iter().map(|v| v.as_slice()).collect();
        let a: Vec<u8> = bytes(40, 99).iter().map(|c| c & field.max_element()).collect();
        let mut want = bytes(len, 77);
        let mut got = want.clone();
        for (&c, x) in a.iter().zip(&xr) {
            field.symbol_axpy(c, x, &mut want);
        }
        field.symbol_axpy_multi(&a, &xr, &mut got);
        assert_eq!(want, got, "{field:?}");

        // The fan-out: one input into every row, each with its coefficient.
        let mut want: Vec<Vec<u8>> = xs.clone();
        let mut got: Vec<Vec<u8>> = xs.clone();
        let x = bytes(len, 78);
        for (&c, y) in a.iter().zip(&mut want) {
            field.symbol_axpy(c, &x, y);
        }
        field.symbol_axpy_fanout(&x, a.iter().copied().zip(got.iter_mut().map(Vec::as_mut_slice)));
        assert_eq!(want, got, "{field:?} fan-out");

        let elems: Vec<Vec<u8>> = xs.iter().map(|x| x.iter().map(|b| b & field.max_element()).collect()).collect();
        let er: Vec<&[u8]> = elems.iter().map(|v| v.as_slice()).collect();
        let mut want = vec![0u8; len];
        let mut got = want.clone();
        for (&c, x) in a.iter().zip(&er) {
            field.axpy(c, x, &mut want);
        }
        field.axpy_multi(&a, &er, &mut got);
        assert_eq!(want, got);
        let d = field.dot(&a, &er.iter().map(|x| x[0]).collect::<Vec<_>>());
        let want_d = a.iter().zip(&er).fold(0, |s, (&c, x)| s ^ field.mul(c, x[0]));
        assert_eq!(d, want_d);
    }
}

#[test]
fn matmul_equals_rows_of_sums() {
    for field in (1..=8).map(|q| Field::new(q).unwrap()) {
        let len = if MIRI { 64 } else { 1500 };
        let len = len - len % field.symbol_granularity();
        let xs: Vec<Vec<u8>> = (0..9).map(|r| bytes(len, r)).collect();
        let xr: Vec<&[u8]> = xs.iter().map(|v| v.as_slice()).collect();
        let a: Vec<u8> = bytes(5 * 9, 5).iter().map(|c| c & field.max_element()).collect();
        let mut want: Vec<Vec<u8>> = (0..5).map(|o| bytes(len, 20 + o)).collect();
        let mut got = want.clone();
        for (row, y) in a.chunks(9).zip(&mut want) {
            field.symbol_axpy_multi(row, &xr, y);
        }
        let mut refs: Vec<&mut [u8]> = got.iter_mut().map(|v| v.as_mut_slice()).collect();
        field.symbol_matmul(&a, &xr, &mut refs);
        assert_eq!(want, got, "{field:?}");
    }
}

/// `ys[i] ^= xs[j]` for every `a[i * n + j]` with bit 0 set: GF(2) by definition.
fn gf2_product_by_rows(a: &[u8], xs: &[&[u8]], ys: &mut [&mut [u8]]) {
    for (i, y) in ys.iter_mut().enumerate() {
        for (j, x) in xs.iter().enumerate() {
            if a[i * xs.len() + j] & 1 == 1 {
                y.iter_mut().zip(x.iter()).for_each(|(yb, xb)| *yb ^= xb);
            }
        }
    }
}

/// Every shape edge of the GF(2) kernel (partial groups and batches, short
/// rows and partial last blocks, the small-product fallback) on one
/// tier's kernels, with 0/1 coefficients and with coefficients whose bits
/// above bit 0 are all set, adding to the outputs and (0/1 only) writing
/// over them. Outputs are carved out of one buffer between
/// guard bytes, so a write past any of them shows.
fn gf2_matches_row_sums(k: &Kernels) {
    const OUTPUTS: [usize; 9] = [0, 1, 3, 4, 5, 17, 64, 65, 256];
    const INPUTS: [usize; 12] = [0, 1, 2, 3, 7, 8, 9, 63, 64, 65, 256, 300];
    const LENGTHS: [usize; 18] = [0, 1, 2, 3, 7, 15, 16, 31, 33, 63, 64, 65, 127, 128, 129, 257, 1500, 4096];
    // Under Miri one shape on each side of every edge: the row-by-row sum
    // (fewer than 8 outputs or 4 inputs) and M4RM, one group or a part of
    // one, one batch of tables or two, a short row, whole blocks and a last
    // part block.
    const MIRI_OUTPUTS: [usize; 5] = [0, 1, 5, 8, 17];
    const MIRI_INPUTS: [usize; 7] = [0, 1, 3, 4, 9, 64, 65];
    const MIRI_LENGTHS: [usize; 6] = [0, 1, 15, 128, 129, 257];
    const GUARD: usize = 7;
    let pick = |all: &'static [usize], miri: &'static [usize]| if MIRI { miri } else { all };
    let mut shapes = 0;
    for (s, &m) in pick(&OUTPUTS, &MIRI_OUTPUTS).iter().enumerate() {
        for (t, &n) in pick(&INPUTS, &MIRI_INPUTS).iter().enumerate() {
            for (u, &len) in pick(&LENGTHS, &MIRI_LENGTHS).iter().enumerate() {
                // The largest shapes only at a few lengths, to keep the test
                // quick; under Miri two batches of tables only on a short row.
                let large = m * n * len > if MIRI { 1 << 13 } else { 1 << 22 };
                if large && (MIRI || ![129, 1500].contains(&len)) {
                    continue;
                }
                shapes += 1;
                let seed = (s * 1000 + t * 100 + u) as u64;
                let xbuf = bytes(n * (len + GUARD) + GUARD, seed);
                let xs: Vec<&[u8]> = xbuf[GUARD..].chunks_exact(len + GUARD).map(|c| &c[..len]).collect();
                let raw = bytes(m * n, seed + 1);
                let zero_one: Vec<u8> = raw.iter().map(|c| c & 1).collect();
                let high_bits: Vec<u8> = raw.iter().map(|c| c | 0xfe).collect();
                for (a, accumulate) in [(&zero_one, true), (&high_bits, true), (&zero_one, false)] {
                    let ybuf = bytes(m * (len + GUARD) + GUARD, seed + 2);
                    let mut want = ybuf.clone();
                    let mut want_ys: Vec<&mut [u8]> =
                        want[GUARD..].chunks_exact_mut(len + GUARD).map(|c| &mut c[..len]).collect();
                    if !accumulate {
                        want_ys.iter_mut().for_each(|y| y.fill(0));
                    }
                    gf2_product_by_rows(a, &xs, &mut want_ys);
                    let mut got = ybuf.clone();
                    let mut ys: Vec<&mut [u8]> =
                        got[GUARD..].chunks_exact_mut(len + GUARD).map(|c| &mut c[..len]).collect();
                    kernels::gf2_matmul(k, a, &xs, &mut ys, accumulate);
                    assert!(
                        want == got,
                        "{:?} GF(2) product of {m} x {n} rows of {len} bytes, accumulate {accumulate}",
                        k.isa
                    );
                }
            }
        }
    }
    assert!(shapes > if MIRI { 100 } else { 1000 }, "only {shapes} shapes");
}

/// Both public products route GF(2) to the same kernel, on symbols and on
/// element vectors, and agree with summing each output on its own. Under
/// Miri the shape is the least that has M4RM build two batches of tables
/// and reach a last partial block of columns.
#[test]
fn gf2_matmul_equals_rows_of_sums() {
    let (m, n, len) = if MIRI { (8, 65, 129) } else { (40, 70, 333) };
    let xs: Vec<Vec<u8>> = (0..n).map(|r| bytes(len, 300 + r)).collect();
    let xr: Vec<&[u8]> = xs.iter().map(|v| v.as_slice()).collect();
    let a = bytes(m * n as usize, 17);
    let mut want: Vec<Vec<u8>> = (0..m).map(|o| bytes(len, 400 + o as u64)).collect();
    let (mut got, mut got_elements) = (want.clone(), want.clone());
    for (row, y) in a.chunks(n as usize).zip(&mut want) {
        Field::GF2.symbol_axpy_multi(row, &xr, y);
    }
    let mut refs: Vec<&mut [u8]> = got.iter_mut().map(|v| v.as_mut_slice()).collect();
    Field::GF2.symbol_matmul(&a, &xr, &mut refs);
    assert_eq!(want, got, "symbols");
    let mut refs: Vec<&mut [u8]> = got_elements.iter_mut().map(|v| v.as_mut_slice()).collect();
    Field::GF2.matmul(&a, &xr, &mut refs);
    assert_eq!(want, got_elements, "element vectors");
}

/// Writing a product over its outputs equals adding it to zeroed ones, in
/// every field, whatever the outputs held.
#[test]
fn symbol_matmul_into_overwrites() {
    for q in 1..=8 {
        let f = Field::new(q).unwrap();
        for (m, n) in [(1, 1), (3, 5), (16, 16), (20, 70), (64, 64)].into_iter().filter(|(m, n)| !MIRI || m * n <= 256)
        {
            let len = if MIRI { 3 * 11 } else { 3 * 111 } * f.symbol_granularity();
            let xs: Vec<Vec<u8>> = (0..n).map(|r| bytes(len, 500 + r as u64)).collect();
            let xr: Vec<&[u8]> = xs.iter().map(|v| v.as_slice()).collect();
            let a = bytes(m * n, 7 + q as u64);
            let mut want = vec![vec![0; len]; m];
            let mut refs: Vec<&mut [u8]> = want.iter_mut().map(|v| v.as_mut_slice()).collect();
            f.symbol_matmul(&a, &xr, &mut refs);
            let mut got: Vec<Vec<u8>> = (0..m).map(|o| bytes(len, 900 + o as u64)).collect();
            let mut refs: Vec<&mut [u8]> = got.iter_mut().map(|v| v.as_mut_slice()).collect();
            f.symbol_matmul_into(&a, &xr, &mut refs);
            assert_eq!(want, got, "GF(2^{q}) {m} x {n}");
        }
    }
}

/// A product written over its inputs equals one into other rows, in every
/// field, with and without the copy, on rows longer than a block of columns.
#[test]
fn symbol_matmul_in_place_equals_the_product() {
    for q in 1..=8 {
        let f = Field::new(q).unwrap();
        for n in [1, 8, 15, 16, 17, 40] {
            for len in [0, f.symbol_granularity(), 1260, 7 * 180 + 420].into_iter().filter(|&len| !MIRI || len < 1260) {
                let xs: Vec<Vec<u8>> = (0..n).map(|r| bytes(len, 300 + r as u64)).collect();
                let xr: Vec<&[u8]> = xs.iter().map(|v| v.as_slice()).collect();
                let a = bytes(n * n, 11 + q as u64);
                let mut want = vec![vec![0; len]; n];
                let mut refs: Vec<&mut [u8]> = want.iter_mut().map(|v| v.as_mut_slice()).collect();
                f.symbol_matmul_into(&a, &xr, &mut refs);
                let mut got = xs.clone();
                let mut refs: Vec<&mut [u8]> = got.iter_mut().map(|v| v.as_mut_slice()).collect();
                f.symbol_matmul_in_place(&a, &mut refs);
                let how = if f.in_place_without_copy(n) { "without a copy" } else { "through a copy" };
                assert!(want == got, "GF(2^{q}) {n} rows of {len} bytes {how}");
            }
        }
    }
}

/// Both AVX-512 GF(2) products, whichever the dispatch would pick, and the
/// product from a kept sliced form, on every remainder of a group of 8 rows
/// and of a 64-byte block, adding to the outputs and writing over them,
/// between guard bytes. Outputs come in order, reversed (a negative
/// stride) and rotated (no stride), which the products address differently.
#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
#[test]
#[cfg_attr(any(ncmesh_cpu_lacks = "gfni512", miri), ignore = "needs an x86 CPU with GFNI and AVX-512BW, natively")]
fn gf2_sliced_and_direct_match_row_sums() {
    use kernels::binary_gfni::{direct, sliced};
    assert!(Kernels::for_isa(Isa::Gfni512).is_some(), "GFNI was found when this test was built, but this CPU lacks it");
    const ROWS: [usize; 11] = [1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 256];
    const LENGTHS: [usize; 6] = [0, 1, 63, 64, 65, 1500];
    const GUARD: usize = 64;
    type Product = unsafe fn(&[u8], &[&[u8]], &mut [&mut [u8]], bool);
    let products: [(&str, Product); 2] = [("sliced", sliced), ("direct", direct)];
    for (s, &m) in ROWS.iter().enumerate() {
        for (t, &n) in ROWS.iter().enumerate() {
            for (u, &len) in LENGTHS.iter().enumerate() {
                if m * n * len > 1 << 22 && len != 65 {
                    continue;
                }
                let seed = (s * 1000 + t * 100 + u) as u64;
                let xbuf = bytes(n * (len + GUARD) + GUARD, seed);
                let xs: Vec<&[u8]> = xbuf[GUARD..].chunks_exact(len + GUARD).map(|c| &c[..len]).collect();
                let a: Vec<u8> = bytes(m * n, seed + 1).iter().map(|c| c | 0xfe).collect();
                let ybuf = bytes(m * (len + GUARD) + GUARD, seed + 2);
                let order = |ys: &mut Vec<&mut [u8]>, o: usize| match o {
                    0 => {}
                    1 => ys.reverse(),
                    _ => ys.rotate_left(1),
                };
                for (accumulate, o) in [(true, 0), (false, 0), (false, 1), (true, 2), (false, 2)] {
                    let mut want = ybuf.clone();
                    let mut want_ys: Vec<&mut [u8]> =
                        want[GUARD..].chunks_exact_mut(len + GUARD).map(|c| &mut c[..len]).collect();
                    order(&mut want_ys, o);
                    if !accumulate {
                        want_ys.iter_mut().for_each(|y| y.fill(0));
                    }
                    gf2_product_by_rows(&a, &xs, &mut want_ys);
                    for (name, product) in products {
                        let mut got = ybuf.clone();
                        let mut ys: Vec<&mut [u8]> =
                            got[GUARD..].chunks_exact_mut(len + GUARD).map(|c| &mut c[..len]).collect();
                        order(&mut ys, o);
                        // SAFETY: GFNI with AVX-512BW was detected, and the shapes agree.
                        unsafe { product(&a, &xs, &mut ys, accumulate) };
                        assert!(
                            want == got,
                            "{name} GF(2) product of {m} x {n} rows of {len} bytes, accumulate {accumulate}, order {o}"
                        );
                    }
                    if !accumulate {
                        let mut got = ybuf.clone();
                        let mut ys: Vec<&mut [u8]> =
                            got[GUARD..].chunks_exact_mut(len + GUARD).map(|c| &mut c[..len]).collect();
                        order(&mut ys, o);
                        SlicedRows::new(&xs).expect("GFNI was detected").matmul_into(&a, &mut ys);
                        assert!(
                            want == got,
                            "GF(2) product of {m} x {n} rows of {len} bytes from a kept form, order {o}"
                        );
                    }
                }
            }
        }
    }
}

/// A kept form is replaced a whole group of 8 rows at a time, or a last
/// group up to the last row, and its products then match the new rows;
/// anything else would zero the group's other rows, and is refused.
#[test]
#[cfg_attr(
    any(not(target_arch = "x86_64"), ncmesh_cpu_lacks = "gfni512", miri),
    ignore = "needs an x86 CPU with GFNI and AVX-512BW, natively"
)]
fn sliced_rows_are_replaced_in_whole_groups() {
    for (n, len) in [(13, 65), (17, 1500), (64, 100)] {
        let mut form =
            SlicedRows::zeroed(n, len).expect("the sliced form, on GFNI with AVX-512BW not capped by NCMESH_GF_ISA");
        let mut xs: Vec<Vec<u8>> = (0..n).map(|j| bytes(len, 40 + j as u64)).collect();
        form.set_rows(&xs.iter().map(Vec::as_slice).collect::<Vec<_>>(), 0);
        // Rows change in the first group and in the last, which may be part.
        assert_eq!((form.rows(), form.row_bytes()), (n, len));
        assert_eq!(format!("{form:?}"), format!("SlicedRows {{ rows: {n}, len: {len} }}"));
        for (j, first) in [(3, 0), (n - 1, (n - 1) / 8 * 8)] {
            xs[j] = bytes(len, 90 + j as u64);
            let group: Vec<&[u8]> = xs[first..n.min(first + 8)].iter().map(Vec::as_slice).collect();
            form.set_rows(&group, first);
        }
        let m = 9;
        let a: Vec<u8> = bytes(m * n, 5).iter().map(|c| c & 1).collect();
        let (mut want, mut got) = (vec![vec![0; len]; m], vec![vec![1; len]; m]);
        let rows: Vec<&[u8]> = xs.iter().map(Vec::as_slice).collect();
        gf2_product_by_rows(&a, &rows, &mut want.iter_mut().map(Vec::as_mut_slice).collect::<Vec<_>>());
        form.matmul_into(&a, &mut got.iter_mut().map(Vec::as_mut_slice).collect::<Vec<_>>());
        assert_eq!(want, got, "{m} x {n} rows of {len} bytes after replacing two groups");
        for (count, first) in [(5, 0), (8, 4), (n - n / 8 * 8 + 1, n / 8 * 8), (1, n)] {
            let refused =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| form.clone().set_rows(&rows[..count], first)));
            assert!(refused.is_err(), "{count} rows from {first} of {n} were taken");
        }
    }
}

/// Times the GF(2) products on aligned 1500-byte rows over a grid of
/// shapes, to place the crossovers in `gf2_matmul` and
/// `SlicedRows::MIN_OUTPUTS`: direct and sliced on AVX-512 with GFNI, M4RM
/// on AVX2, and the product from a kept sliced form. A measurement, not a
/// check: `cargo test --release -p ncmesh-gf gf2_product_crossovers --
/// --ignored --nocapture`.
#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
#[test]
#[ignore]
fn gf2_product_crossovers() {
    use kernels::binary_gfni::{direct, sliced};
    use std::time::Instant;
    let Some(k) = Kernels::for_isa(Isa::Gfni512) else {
        return println!("no AVX-512 with GFNI here");
    };
    const LEN: usize = 1500;
    const STRIDE: usize = 1536;
    type Product = Box<dyn Fn(&[u8], &[&[u8]], &mut [&mut [u8]])>;
    let products: [(&str, Product); 3] = [
        // SAFETY: GFNI with AVX-512BW was detected, and the shapes agree.
        ("direct", Box::new(|a, xs, ys| unsafe { direct(a, xs, ys, false) })),
        // SAFETY: as for `direct`.
        ("sliced", Box::new(|a, xs, ys| unsafe { sliced(a, xs, ys, false) })),
        ("m4rm", Box::new(move |a, xs, ys| kernels::four_russians(&k, a, xs, ys, false))),
    ];
    // Rows a cache line apart, from a line boundary.
    let aligned = |buf: &[u8]| buf.as_ptr().align_offset(64);
    for n in [8, 12, 16, 20, 24, 32, 48, 64, 128, 256] {
        for m in [1, 2, 4, 8, 16, 32, 64, 128] {
            let xbuf = bytes(n * STRIDE + 64, 1);
            let x0 = aligned(&xbuf);
            let xs: Vec<&[u8]> = (0..n).map(|j| &xbuf[x0 + j * STRIDE..][..LEN]).collect();
            let mut ybuf = vec![0u8; m * STRIDE + 64];
            let y0 = aligned(&ybuf);
            let a = bytes(m * n, 2);
            let iters = (2_000_000 / (n * m)).max(3);
            let mut time = |product: &dyn Fn(&mut [&mut [u8]])| {
                (0..5)
                    .map(|_| {
                        let start = Instant::now();
                        for _ in 0..iters {
                            let mut ys: Vec<&mut [u8]> =
                                ybuf[y0..][..m * STRIDE].chunks_exact_mut(STRIDE).map(|c| &mut c[..LEN]).collect();
                            product(&mut ys);
                        }
                        start.elapsed().as_secs_f64() / iters as f64 * 1e9
                    })
                    .fold(f64::MAX, f64::min)
            };
            let ns: Vec<f64> = products.iter().map(|(_, product)| time(&|ys| product(&a, &xs, ys))).collect();
            let form = SlicedRows::new(&xs).unwrap();
            let kept = time(&|ys| form.matmul_into(&a, ys));
            let best = (0..3).min_by(|&i, &j| ns[i].total_cmp(&ns[j])).unwrap();
            let times: Vec<String> = products.iter().zip(&ns).map(|((name, _), t)| format!("{name} {t:8.0}")).collect();
            println!(
                "{n:4} inputs {m:4} outputs: {} ns; fastest {}; from a kept form {kept:8.0} ns",
                times.join("  "),
                products[best].0
            );
        }
    }
}
