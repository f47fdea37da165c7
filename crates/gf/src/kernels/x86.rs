//! x86 kernels: SSSE3 and AVX2 nibble tables, and GFNI with AVX-512BW.
//!
//! Each `unsafe fn` requires its target features. The safe wrappers in the
//! returned [`Kernels`] are only handed out after run-time detection.

#[cfg(target_arch = "x86")]
use std::arch::x86::*;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use super::{scalar, Isa, Kernels};
use crate::tables::{ByteMap, FROM_AES, TO_AES};

pub fn kernels(isa: Isa) -> Option<Kernels> {
    let ssse3 = is_x86_feature_detected!("ssse3");
    let avx2 = is_x86_feature_detected!("avx2");
    let gfni512 =
        is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw") && is_x86_feature_detected!("gfni");
    match isa {
        Isa::Ssse3 if ssse3 => Some(sse::KERNELS),
        Isa::Avx2 if avx2 => Some(avx2::KERNELS),
        Isa::Gfni512 if gfni512 => Some(gfni::KERNELS),
        _ => None,
    }
}

/// Nibble-table kernels for one vector width. The bodies are identical for
/// SSSE3 and AVX2 except for the intrinsics, so they are written once.
macro_rules! nibble_kernels {
    ($name:ident, $isa:expr, $feature:literal, $vec:ty, $width:literal,
     load = $load:ident, store = $store:ident, xor = $xor:ident, and = $and:ident,
     shuffle = $shuffle:ident, srli16 = $srli:ident, splat8 = $splat:ident, tables = $tables:ident) => {
        mod $name {
            use super::*;

            pub const KERNELS: Kernels = Kernels {
                isa: $isa,
                xor: |x, y| unsafe { xor(x, y) },
                map_xor: |m, x, y| unsafe { map_xor(m, x, y) },
                map: |m, y| unsafe { map(m, y) },
                map_xor_multi: |ms, xs, y| unsafe { map_xor_multi(ms, xs, y) },
                map_xor_matmul: |ms, xs, ys| {
                    super::super::matmul_by_rows(|m, x, y| unsafe { map_xor_multi(m, x, y) }, ms, xs, ys)
                },
                map_xor_fanout: |ms, x, ys| unsafe { map_xor_fanout(ms, x, ys) },
                dot256: scalar::KERNELS.dot256,
            };
            const W: usize = $width;

            #[inline(always)]
            unsafe fn ld(p: *const u8) -> $vec {
                unsafe { $load(p as *const _) }
            }
            #[inline(always)]
            unsafe fn st(p: *mut u8, v: $vec) {
                unsafe { $store(p as *mut _, v) }
            }
            /// The two nibble tables of `m`, replicated to every 16-byte lane.
            #[inline(always)]
            unsafe fn tables(m: &ByteMap) -> ($vec, $vec) {
                unsafe { ($tables(m.lo.as_ptr()), $tables(m.hi.as_ptr())) }
            }
            #[inline(always)]
            unsafe fn apply(t: ($vec, $vec), x: $vec) -> $vec {
                unsafe {
                    let mask = $splat(0x0f);
                    let lo = $shuffle(t.0, $and(x, mask));
                    let hi = $shuffle(t.1, $and($srli::<4>(x), mask));
                    $xor(lo, hi)
                }
            }

            /// Runs `body` on whole vectors, then once on a zero-padded copy of the tail.
            #[inline(always)]
            unsafe fn blocks(x: &[u8], y: &mut [u8], mut body: impl FnMut(*const u8, *mut u8)) {
                let n = y.len();
                let whole = n - n % W;
                let mut i = 0;
                while i < whole {
                    body(unsafe { x.as_ptr().add(i) }, unsafe { y.as_mut_ptr().add(i) });
                    i += W;
                }
                if whole < n {
                    let mut xb = [0u8; W];
                    let mut yb = [0u8; W];
                    let t = n - whole;
                    if !x.is_empty() {
                        xb[..t].copy_from_slice(&x[whole..]);
                    }
                    yb[..t].copy_from_slice(&y[whole..]);
                    body(xb.as_ptr(), yb.as_mut_ptr());
                    y[whole..].copy_from_slice(&yb[..t]);
                }
            }

            #[target_feature(enable = $feature)]
            unsafe fn xor(x: &[u8], y: &mut [u8]) {
                unsafe { blocks(x, y, |xp, yp| st(yp, $xor(ld(xp), ld(yp)))) }
            }

            #[target_feature(enable = $feature)]
            unsafe fn map_xor(m: &ByteMap, x: &[u8], y: &mut [u8]) {
                if m.is_identity() {
                    return unsafe { xor(x, y) };
                }
                unsafe {
                    let t = tables(m);
                    blocks(x, y, |xp, yp| st(yp, $xor(ld(yp), apply(t, ld(xp)))))
                }
            }

            #[target_feature(enable = $feature)]
            unsafe fn map(m: &ByteMap, y: &mut [u8]) {
                unsafe {
                    let t = tables(m);
                    blocks(&[], y, |_, yp| st(yp, apply(t, ld(yp))))
                }
            }

            /// Calls the inlined single-row kernel per output, paying dispatch once.
            #[target_feature(enable = $feature)]
            unsafe fn map_xor_fanout(ms: &[&ByteMap], x: &[u8], ys: &mut [&mut [u8]]) {
                for (m, y) in ms.iter().zip(ys) {
                    unsafe { map_xor(m, x, y) }
                }
            }

            #[target_feature(enable = $feature)]
            unsafe fn map_xor_multi(ms: &[&ByteMap], xs: &[&[u8]], y: &mut [u8]) {
                // Accumulate one vector of y over all rows at a time; the tables
                // are reloaded per row from L1, which is cheaper than spilling.
                let n = y.len();
                let whole = n - n % W;
                let mut i = 0;
                unsafe {
                    while i < whole {
                        let mut acc = ld(y.as_ptr().add(i));
                        for (m, x) in ms.iter().zip(xs) {
                            let xv = ld(x.as_ptr().add(i));
                            acc = $xor(acc, if m.is_identity() { xv } else { apply(tables(m), xv) });
                        }
                        st(y.as_mut_ptr().add(i), acc);
                        i += W;
                    }
                }
                if whole < n {
                    for (m, x) in ms.iter().zip(xs) {
                        unsafe { map_xor(m, &x[whole..], &mut y[whole..]) };
                    }
                }
            }
        }
    };
}

#[inline(always)]
unsafe fn table128(p: *const u8) -> __m128i {
    unsafe { _mm_loadu_si128(p as *const __m128i) }
}
#[inline(always)]
unsafe fn table256(p: *const u8) -> __m256i {
    unsafe { _mm256_broadcastsi128_si256(_mm_loadu_si128(p as *const __m128i)) }
}

nibble_kernels!(
    sse,
    Isa::Ssse3,
    "ssse3",
    __m128i,
    16,
    load = _mm_loadu_si128,
    store = _mm_storeu_si128,
    xor = _mm_xor_si128,
    and = _mm_and_si128,
    shuffle = _mm_shuffle_epi8,
    srli16 = _mm_srli_epi16,
    splat8 = _mm_set1_epi8,
    tables = table128
);
nibble_kernels!(
    avx2,
    Isa::Avx2,
    "avx2",
    __m256i,
    32,
    load = _mm256_loadu_si256,
    store = _mm256_storeu_si256,
    xor = _mm256_xor_si256,
    and = _mm256_and_si256,
    shuffle = _mm256_shuffle_epi8,
    srli16 = _mm256_srli_epi16,
    splat8 = _mm256_set1_epi8,
    tables = table256
);

mod gfni {
    use super::*;

    pub const KERNELS: Kernels = Kernels {
        isa: Isa::Gfni512,
        xor: |x, y| unsafe { xor(x, y) },
        map_xor: |m, x, y| unsafe { map_xor(m, x, y) },
        map: |m, y| unsafe { map(m, y) },
        map_xor_multi: |ms, xs, y| unsafe { map_xor_multi(ms, xs, y) },
        map_xor_matmul: |ms, xs, ys| unsafe { map_xor_matmul(ms, xs, ys) },
        map_xor_fanout: |ms, x, ys| unsafe { map_xor_fanout(ms, x, ys) },
        dot256: |x, y| unsafe { dot256(x, y) },
    };

    /// Mask selecting the first `t < 64` bytes.
    #[inline(always)]
    fn tail_mask(t: usize) -> __mmask64 {
        (1u64 << t) - 1
    }

    #[inline(always)]
    unsafe fn ld(p: *const u8) -> __m512i {
        unsafe { _mm512_loadu_si512(p as *const _) }
    }
    #[inline(always)]
    unsafe fn st(p: *mut u8, v: __m512i) {
        unsafe { _mm512_storeu_si512(p as *mut _, v) }
    }
    #[inline(always)]
    unsafe fn ldm(k: __mmask64, p: *const u8) -> __m512i {
        unsafe { _mm512_maskz_loadu_epi8(k, p as *const i8) }
    }
    #[inline(always)]
    unsafe fn stm(k: __mmask64, p: *mut u8, v: __m512i) {
        unsafe { _mm512_mask_storeu_epi8(p as *mut i8, k, v) }
    }
    #[inline(always)]
    unsafe fn affine(x: __m512i, a: __m512i) -> __m512i {
        unsafe { _mm512_gf2p8affine_epi64_epi8::<0>(x, a) }
    }
    #[inline(always)]
    unsafe fn matrix(m: &ByteMap) -> __m512i {
        unsafe { _mm512_set1_epi64(m.affine as i64) }
    }

    /// Runs `step(i, mask)` over 64-byte blocks, four at a time, then masked on the tail.
    #[inline(always)]
    unsafe fn blocks(n: usize, mut step: impl FnMut(usize, Option<__mmask64>)) {
        let mut i = 0;
        while i + 256 <= n {
            step(i, None);
            step(i + 64, None);
            step(i + 128, None);
            step(i + 192, None);
            i += 256;
        }
        while i + 64 <= n {
            step(i, None);
            i += 64;
        }
        if i < n {
            step(i, Some(tail_mask(n - i)));
        }
    }

    #[target_feature(enable = "avx512f,avx512bw,gfni")]
    unsafe fn xor(x: &[u8], y: &mut [u8]) {
        let (xp, yp) = (x.as_ptr(), y.as_mut_ptr());
        unsafe {
            blocks(y.len(), |i, k| match k {
                None => st(yp.add(i), _mm512_xor_si512(ld(xp.add(i)), ld(yp.add(i)))),
                Some(k) => stm(k, yp.add(i), _mm512_xor_si512(ldm(k, xp.add(i)), ldm(k, yp.add(i)))),
            })
        }
    }

    #[target_feature(enable = "avx512f,avx512bw,gfni")]
    unsafe fn map_xor(m: &ByteMap, x: &[u8], y: &mut [u8]) {
        let (xp, yp) = (x.as_ptr(), y.as_mut_ptr());
        unsafe {
            let a = matrix(m);
            blocks(y.len(), |i, k| match k {
                None => st(yp.add(i), _mm512_xor_si512(ld(yp.add(i)), affine(ld(xp.add(i)), a))),
                Some(k) => stm(k, yp.add(i), _mm512_xor_si512(ldm(k, yp.add(i)), affine(ldm(k, xp.add(i)), a))),
            })
        }
    }

    #[target_feature(enable = "avx512f,avx512bw,gfni")]
    unsafe fn map(m: &ByteMap, y: &mut [u8]) {
        let yp = y.as_mut_ptr();
        unsafe {
            let a = matrix(m);
            blocks(y.len(), |i, k| match k {
                None => st(yp.add(i), affine(ld(yp.add(i)), a)),
                Some(k) => stm(k, yp.add(i), affine(ldm(k, yp.add(i)), a)),
            })
        }
    }

    /// Runs `$pass::<V>($args.., at, last)` over a row of `$len` bytes: passes
    /// of eight vectors (512 bytes), then one of as many vectors as remain,
    /// the last one masked by `last`. `V` must be a constant, hence the macro.
    macro_rules! in_passes {
        ($len:expr, $pass:ident($($arg:expr),*)) => {{
            let n = $len;
            let mut i = 0;
            while n - i >= 512 {
                $pass::<8>($($arg,)* i, !0);
                i += 512;
            }
            let rest = n - i;
            let tail = if rest % 64 == 0 { !0 } else { tail_mask(rest % 64) };
            match rest.div_ceil(64) {
                0 => {}
                1 => $pass::<1>($($arg,)* i, tail),
                2 => $pass::<2>($($arg,)* i, tail),
                3 => $pass::<3>($($arg,)* i, tail),
                4 => $pass::<4>($($arg,)* i, tail),
                5 => $pass::<5>($($arg,)* i, tail),
                6 => $pass::<6>($($arg,)* i, tail),
                7 => $pass::<7>($($arg,)* i, tail),
                _ => $pass::<8>($($arg,)* i, tail),
            }
        }};
    }

    /// Keeps up to 512 bytes of y in eight accumulators across all rows, so
    /// the coefficient rows of a decoder (at most 2g bytes) take one pass.
    #[target_feature(enable = "avx512f,avx512bw,gfni")]
    unsafe fn map_xor_multi(ms: &[&ByteMap], xs: &[&[u8]], y: &mut [u8]) {
        unsafe { in_passes!(y.len(), multi_pass(ms, xs, y)) }
    }

    /// `V` vectors of y from byte `at`, the last one masked by `last`.
    #[inline(always)]
    unsafe fn multi_pass<const V: usize>(ms: &[&ByteMap], xs: &[&[u8]], y: &mut [u8], at: usize, last: __mmask64) {
        let mask = |v: usize| if v + 1 == V { last } else { !0 };
        let yp = unsafe { y.as_mut_ptr().add(at) };
        unsafe {
            let mut acc: [__m512i; V] = std::array::from_fn(|v| ldm(mask(v), yp.add(64 * v)));
            for (m, x) in ms.iter().zip(xs) {
                let xp = x.as_ptr().add(at);
                // GF(2) rows are all identities: a plain XOR leaves the
                // affine unit free. The branch is predictable in every field.
                if m.is_identity() {
                    for (v, acc_v) in acc.iter_mut().enumerate() {
                        *acc_v = _mm512_xor_si512(*acc_v, ldm(mask(v), xp.add(64 * v)));
                    }
                    continue;
                }
                let a = matrix(m);
                for (v, acc_v) in acc.iter_mut().enumerate() {
                    *acc_v = _mm512_xor_si512(*acc_v, affine(ldm(mask(v), xp.add(64 * v)), a));
                }
            }
            for (v, &a) in acc.iter().enumerate() {
                stm(mask(v), yp.add(64 * v), a);
            }
        }
    }

    /// Outputs in groups of `OUTPUTS`: each block of `VECTORS` x 64 bytes of
    /// an input row is loaded once and used for every output of the group,
    /// with all the group's accumulators in registers. The inputs rarely fit
    /// in L1, so this divides the traffic from L2 by the group size.
    #[target_feature(enable = "avx512f,avx512bw,gfni")]
    unsafe fn map_xor_matmul(ms: &[&ByteMap], xs: &[&[u8]], ys: &mut [&mut [u8]]) {
        const OUTPUTS: usize = GROUP.0;
        let n = xs.len();
        let mut groups = ys.chunks_exact_mut(OUTPUTS);
        let mut first = 0;
        for group in &mut groups {
            let len = group[0].len();
            let yp: [*mut u8; OUTPUTS] = std::array::from_fn(|k| group[k].as_mut_ptr());
            let rows = &ms[first * n..(first + OUTPUTS) * n];
            let mut off = 0;
            unsafe {
                while len - off >= 64 * GROUP.1 {
                    matmul_block::<OUTPUTS, { GROUP.1 }>(rows, xs, yp, off, !0);
                    off += 64 * GROUP.1;
                }
                while off < len {
                    let mask = if len - off >= 64 { !0 } else { tail_mask(len - off) };
                    matmul_block::<OUTPUTS, 1>(rows, xs, yp, off, mask);
                    off += 64;
                }
            }
            first += OUTPUTS;
        }
        for (k, y) in groups.into_remainder().iter_mut().enumerate() {
            let row = &ms[(first + k) * n..(first + k + 1) * n];
            unsafe { map_xor_multi(row, xs, y) }
        }
    }

    /// Outputs per group and vectors per block in [`map_xor_matmul`].
    const GROUP: (usize, usize) = (8, 3);

    /// `K` outputs times `V` vectors from byte `off`; the last vector is masked by `last`.
    #[inline(always)]
    unsafe fn matmul_block<const K: usize, const V: usize>(
        rows: &[&ByteMap],
        xs: &[&[u8]],
        yp: [*mut u8; K],
        off: usize,
        last: __mmask64,
    ) {
        let n = xs.len();
        let mask = |v: usize| if v + 1 == V { last } else { !0 };
        unsafe {
            let mut acc: [[__m512i; V]; K] =
                std::array::from_fn(|k| std::array::from_fn(|v| ldm(mask(v), yp[k].add(off + 64 * v))));
            for (j, x) in xs.iter().enumerate() {
                let xp = x.as_ptr().add(off);
                let xv: [__m512i; V] = std::array::from_fn(|v| ldm(mask(v), xp.add(64 * v)));
                for (k, acc_k) in acc.iter_mut().enumerate() {
                    let a = matrix(rows[k * n + j]);
                    for v in 0..V {
                        acc_k[v] = _mm512_xor_si512(acc_k[v], affine(xv[v], a));
                    }
                }
            }
            for (k, acc_k) in acc.iter().enumerate() {
                for (v, &a) in acc_k.iter().enumerate() {
                    stm(mask(v), yp[k].add(off + 64 * v), a);
                }
            }
        }
    }

    /// Holds up to 512 bytes of x in registers while it is applied to every
    /// output, so a decoder's short rows cost one load and store each.
    #[target_feature(enable = "avx512f,avx512bw,gfni")]
    unsafe fn map_xor_fanout(ms: &[&ByteMap], x: &[u8], ys: &mut [&mut [u8]]) {
        unsafe { in_passes!(x.len(), fanout_pass(ms, x, ys)) }
    }

    /// `V` vectors of x from byte `at`, the last masked by `last`, into every output.
    #[inline(always)]
    unsafe fn fanout_pass<const V: usize>(ms: &[&ByteMap], x: &[u8], ys: &mut [&mut [u8]], at: usize, last: __mmask64) {
        let mask = |v: usize| if v + 1 == V { last } else { !0 };
        unsafe {
            let xp = x.as_ptr().add(at);
            let xv: [__m512i; V] = std::array::from_fn(|v| ldm(mask(v), xp.add(64 * v)));
            for (m, y) in ms.iter().zip(ys.iter_mut()) {
                let a = matrix(m);
                let yp = y.as_mut_ptr().add(at);
                for (v, &xv) in xv.iter().enumerate() {
                    let p = yp.add(64 * v);
                    stm(mask(v), p, _mm512_xor_si512(ldm(mask(v), p), affine(xv, a)));
                }
            }
        }
    }

    /// Maps both operands into the 0x11B field, multiplies with `gf2p8mulb`,
    /// sums, and maps the sum back: the isomorphism is linear, so it commutes
    /// with the sum.
    #[target_feature(enable = "avx512f,avx512bw,gfni")]
    unsafe fn dot256(x: &[u8], y: &[u8]) -> u8 {
        let n = x.len().min(y.len());
        let (xp, yp) = (x.as_ptr(), y.as_ptr());
        unsafe {
            let to = matrix(&TO_AES);
            let mut acc = _mm512_setzero_si512();
            blocks(n, |i, k| {
                let k = k.unwrap_or(!0);
                let p = _mm512_gf2p8mul_epi8(affine(ldm(k, xp.add(i)), to), affine(ldm(k, yp.add(i)), to));
                acc = _mm512_xor_si512(acc, p);
            });
            let mut lanes = [0u64; 8];
            _mm512_storeu_si512(lanes.as_mut_ptr() as *mut _, acc);
            let w = lanes.iter().fold(0, |a, &b| a ^ b);
            let b = w.to_le_bytes().iter().fold(0, |a, &b| a ^ b);
            FROM_AES.apply(b)
        }
    }
}
