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
    let gfni512 = is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("gfni");
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
            unsafe fn blocks(
                x: &[u8],
                y: &mut [u8],
                mut body: impl FnMut(*const u8, *mut u8),
            ) {
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

nibble_kernels!(sse, Isa::Ssse3, "ssse3", __m128i, 16,
    load = _mm_loadu_si128, store = _mm_storeu_si128, xor = _mm_xor_si128, and = _mm_and_si128,
    shuffle = _mm_shuffle_epi8, srli16 = _mm_srli_epi16, splat8 = _mm_set1_epi8, tables = table128);
nibble_kernels!(avx2, Isa::Avx2, "avx2", __m256i, 32,
    load = _mm256_loadu_si256, store = _mm256_storeu_si256, xor = _mm256_xor_si256, and = _mm256_and_si256,
    shuffle = _mm256_shuffle_epi8, srli16 = _mm256_srli_epi16, splat8 = _mm256_set1_epi8, tables = table256);

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

    #[target_feature(enable = "avx512f,avx512bw,gfni")]
    unsafe fn map_xor_multi(ms: &[&ByteMap], xs: &[&[u8]], y: &mut [u8]) {
        // Four accumulators (256 bytes of y) stay in registers across all rows.
        let n = y.len();
        let yp = y.as_mut_ptr();
        let mut i = 0;
        unsafe {
            while i + 256 <= n {
                let mut acc = [ld(yp.add(i)), ld(yp.add(i + 64)), ld(yp.add(i + 128)), ld(yp.add(i + 192))];
                for (m, x) in ms.iter().zip(xs) {
                    let a = matrix(m);
                    let xp = x.as_ptr().add(i);
                    acc[0] = _mm512_xor_si512(acc[0], affine(ld(xp), a));
                    acc[1] = _mm512_xor_si512(acc[1], affine(ld(xp.add(64)), a));
                    acc[2] = _mm512_xor_si512(acc[2], affine(ld(xp.add(128)), a));
                    acc[3] = _mm512_xor_si512(acc[3], affine(ld(xp.add(192)), a));
                }
                for (j, v) in acc.into_iter().enumerate() {
                    st(yp.add(i + 64 * j), v);
                }
                i += 256;
            }
            while i < n {
                let k = if n - i >= 64 { !0 } else { tail_mask(n - i) };
                let mut acc = ldm(k, yp.add(i));
                for (m, x) in ms.iter().zip(xs) {
                    acc = _mm512_xor_si512(acc, affine(ldm(k, x.as_ptr().add(i)), matrix(m)));
                }
                stm(k, yp.add(i), acc);
                i += 64;
            }
        }
    }

    /// Four outputs at a time: each 256-byte block of an input row is loaded
    /// once and used four times, with sixteen accumulators in registers. The
    /// inputs rarely fit in L1, so this quarters the traffic from L2.
    #[target_feature(enable = "avx512f,avx512bw,gfni")]
    unsafe fn map_xor_matmul(ms: &[&ByteMap], xs: &[&[u8]], ys: &mut [&mut [u8]]) {
        const K: usize = 4;
        let n = xs.len();
        let mut groups = ys.chunks_exact_mut(K);
        let mut first = 0;
        for group in &mut groups {
            let len = group[0].len();
            let yp: [*mut u8; K] = std::array::from_fn(|k| group[k].as_mut_ptr());
            let rows = &ms[first * n..(first + K) * n];
            unsafe {
                let mut off = 0;
                while off + 256 <= len {
                    let mut acc: [[__m512i; 4]; K] =
                        std::array::from_fn(|k| std::array::from_fn(|t| ld(yp[k].add(off + 64 * t))));
                    for (j, x) in xs.iter().enumerate() {
                        let xp = x.as_ptr().add(off);
                        let xv = [ld(xp), ld(xp.add(64)), ld(xp.add(128)), ld(xp.add(192))];
                        for (k, acc_k) in acc.iter_mut().enumerate() {
                            let a = matrix(rows[k * n + j]);
                            for t in 0..4 {
                                acc_k[t] = _mm512_xor_si512(acc_k[t], affine(xv[t], a));
                            }
                        }
                    }
                    for (k, acc_k) in acc.iter().enumerate() {
                        for (t, &v) in acc_k.iter().enumerate() {
                            st(yp[k].add(off + 64 * t), v);
                        }
                    }
                    off += 256;
                }
                while off < len {
                    let mask = if len - off >= 64 { !0 } else { tail_mask(len - off) };
                    let mut acc: [__m512i; K] = std::array::from_fn(|k| ldm(mask, yp[k].add(off)));
                    for (j, x) in xs.iter().enumerate() {
                        let xv = ldm(mask, x.as_ptr().add(off));
                        for (k, acc_k) in acc.iter_mut().enumerate() {
                            *acc_k = _mm512_xor_si512(*acc_k, affine(xv, matrix(rows[k * n + j])));
                        }
                    }
                    for (k, &v) in acc.iter().enumerate() {
                        stm(mask, yp[k].add(off), v);
                    }
                    off += 64;
                }
            }
            first += K;
        }
        for (k, y) in groups.into_remainder().iter_mut().enumerate() {
            let row = &ms[(first + k) * n..(first + k + 1) * n];
            unsafe { map_xor_multi(row, xs, y) }
        }
    }

    /// Calls the inlined single-row kernel per output, paying dispatch once.
    #[target_feature(enable = "avx512f,avx512bw,gfni")]
    unsafe fn map_xor_fanout(ms: &[&ByteMap], x: &[u8], ys: &mut [&mut [u8]]) {
        for (m, y) in ms.iter().zip(ys) {
            unsafe { map_xor(m, x, y) }
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
