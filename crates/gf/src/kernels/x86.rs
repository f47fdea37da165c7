//! x86 tiers: `pshufb` nibble tables on SSSE3, AVX2 and AVX-512BW, and
//! GFNI affines on 256-bit (VEX) and 512-bit vectors.
//!
//! Each tier is a [`Simd`] over its vector type; the kernels are those of
//! [`super::simd`], compiled with the tier's features. The 512-bit tiers
//! reach a row's tail with byte-masked loads and stores, the others with a
//! last vector that overlaps the one before it.

#[cfg(target_arch = "x86")]
use std::arch::x86::*;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use super::simd::{Overlap, Simd};
use super::{scalar, Isa, Kernels};
use crate::tables::{ByteMap, FROM_AES, TO_AES};

/// The kernels for `isa`, if this CPU has its features.
pub fn kernels(isa: Isa) -> Option<Kernels> {
    let avx512 = is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw");
    let gfni = is_x86_feature_detected!("gfni");
    let avx2 = is_x86_feature_detected!("avx2");
    match isa {
        Isa::Ssse3 if is_x86_feature_detected!("ssse3") => Some(ssse3::KERNELS),
        Isa::Avx2 if avx2 => Some(avx2::KERNELS),
        Isa::Avx512 if avx512 => Some(avx512::KERNELS),
        Isa::Gfni256 if gfni && avx2 => Some(gfni256::KERNELS),
        Isa::Gfni512 if gfni && avx512 => Some(gfni512::KERNELS),
        _ => None,
    }
}

/// A 16-byte table in every 16-byte lane.
///
/// # Safety
/// 16 bytes at `p` are readable; the CPU has the vector width's features.
#[inline(always)]
unsafe fn table128(p: *const u8) -> __m128i {
    // SAFETY: as the caller promises.
    unsafe { _mm_loadu_si128(p.cast()) }
}
/// # Safety
/// As for [`table128`].
#[inline(always)]
unsafe fn table256(p: *const u8) -> __m256i {
    // SAFETY: as the caller promises.
    unsafe { _mm256_broadcastsi128_si256(_mm_loadu_si128(p.cast())) }
}
/// # Safety
/// As for [`table128`].
#[inline(always)]
unsafe fn table512(p: *const u8) -> __m512i {
    // SAFETY: as the caller promises.
    unsafe { _mm512_broadcast_i32x4(_mm_loadu_si128(p.cast())) }
}

/// The vector operations of a tier on `$V`: loads, stores, XOR and AND,
/// and how a row's tail is reached, by an overlapping last vector or (on
/// AVX-512BW) by byte masks. Expands to items of an `impl Simd`.
macro_rules! vector_ops {
    ($V:ty, $W:literal, $load:ident, $store:ident, $zero:ident, $xor:ident, $and:ident, tail = overlap) => {
        vector_ops!(@common $V, $W, $load, $store, $zero, $xor, $and);
        type Tail = Overlap<$V>;
        #[inline(always)]
        fn tail(len: usize) -> Option<Overlap<$V>> {
            Overlap::of::<Self>(len)
        }
        #[inline(always)]
        unsafe fn load_tail(t: Overlap<$V>, row: *const u8) -> $V {
            // SAFETY: as the caller promises.
            unsafe { t.load::<Self>(row) }
        }
        #[inline(always)]
        unsafe fn add_tail(t: Overlap<$V>, row: *mut u8, v: $V) {
            // SAFETY: as the caller promises.
            unsafe { t.add::<Self>(row, v) }
        }
        #[inline(always)]
        unsafe fn set_tail(t: Overlap<$V>, row: *mut u8, v: $V) {
            // SAFETY: as the caller promises.
            unsafe { t.set::<Self>(row, v) }
        }
    };
    ($V:ty, $W:literal, $load:ident, $store:ident, $zero:ident, $xor:ident, $and:ident, tail = masked) => {
        vector_ops!(@common $V, $W, $load, $store, $zero, $xor, $and);
        type Tail = masked::Tail;
        #[inline(always)]
        fn tail(len: usize) -> Option<masked::Tail> {
            masked::tail(len)
        }
        #[inline(always)]
        unsafe fn load_tail(t: masked::Tail, row: *const u8) -> $V {
            // SAFETY: as the caller promises; the tier has AVX-512BW.
            unsafe { masked::load(t, row) }
        }
        #[inline(always)]
        unsafe fn add_tail(t: masked::Tail, row: *mut u8, v: $V) {
            // SAFETY: as for `load_tail`.
            unsafe { masked::add(t, row, v) }
        }
        #[inline(always)]
        unsafe fn set_tail(t: masked::Tail, row: *mut u8, v: $V) {
            // SAFETY: as for `load_tail`.
            unsafe { masked::set(t, row, v) }
        }
    };
    (@common $V:ty, $W:literal, $load:ident, $store:ident, $zero:ident, $xor:ident, $and:ident) => {
        const W: usize = $W;
        type V = $V;
        #[inline(always)]
        unsafe fn load(p: *const u8) -> $V {
            // SAFETY: the caller makes `W` bytes readable and has the features.
            unsafe { $load(p.cast()) }
        }
        #[inline(always)]
        unsafe fn store(p: *mut u8, v: $V) {
            // SAFETY: the caller makes `W` bytes writable and has the features.
            unsafe { $store(p.cast(), v) }
        }
        #[inline(always)]
        unsafe fn zero() -> $V {
            // SAFETY: the caller has the tier's features.
            unsafe { $zero() }
        }
        #[inline(always)]
        unsafe fn xor(a: $V, b: $V) -> $V {
            // SAFETY: the caller has the tier's features.
            unsafe { $xor(a, b) }
        }
        #[inline(always)]
        unsafe fn and(a: $V, b: $V) -> $V {
            // SAFETY: the caller has the tier's features.
            unsafe { $and(a, b) }
        }
    };
}

/// A tier of nibble tables on `$V`, the tables broadcast to every 16-byte
/// lane by `$tables`.
macro_rules! nibble_tier {
    ($T:ident, $V:ty, $W:literal, load = $load:ident, store = $store:ident, zero = $zero:ident,
     xor = $xor:ident, and = $and:ident, shuffle = $shuffle:ident, srli16 = $srli:ident,
     splat8 = $splat:ident, tables = $tables:ident, tail = $tail:ident) => {
        #[derive(Clone, Copy)]
        pub(super) struct $T;

        impl Simd for $T {
            vector_ops!($V, $W, $load, $store, $zero, $xor, $and, tail = $tail);
            type M = ($V, $V);
            type X = ($V, $V);

            #[inline(always)]
            unsafe fn prepare(m: &ByteMap) -> ($V, $V) {
                // SAFETY: the caller has the tier's features; each table is 16 readable bytes.
                unsafe { ($tables(m.lo.as_ptr()), $tables(m.hi.as_ptr())) }
            }
            #[inline(always)]
            unsafe fn split(x: $V) -> ($V, $V) {
                // SAFETY: the caller has the tier's features.
                unsafe {
                    let mask = $splat(0x0f);
                    ($and(x, mask), $and($srli::<4>(x), mask))
                }
            }
            #[inline(always)]
            unsafe fn mul(m: ($V, $V), x: ($V, $V)) -> $V {
                // SAFETY: the caller has the tier's features.
                unsafe { $xor($shuffle(m.0, x.0), $shuffle(m.1, x.1)) }
            }
        }
    };
}

/// A tier of GFNI affines on `$V`: the map's matrix in every qword.
macro_rules! gfni_tier {
    ($T:ident, $V:ty, $W:literal, load = $load:ident, store = $store:ident, zero = $zero:ident,
     xor = $xor:ident, and = $and:ident, splat64 = $splat:ident, affine = $affine:ident, tail = $tail:ident) => {
        #[derive(Clone, Copy)]
        pub(super) struct $T;

        impl Simd for $T {
            vector_ops!($V, $W, $load, $store, $zero, $xor, $and, tail = $tail);
            type M = $V;
            type X = $V;

            #[inline(always)]
            unsafe fn prepare(m: &ByteMap) -> $V {
                // SAFETY: the caller has the tier's features.
                unsafe { $splat(m.affine as i64) }
            }
            #[inline(always)]
            unsafe fn split(x: $V) -> $V {
                x
            }
            #[inline(always)]
            unsafe fn mul(m: $V, x: $V) -> $V {
                // SAFETY: the caller has the tier's features.
                unsafe { $affine::<0>(x, m) }
            }
        }
    };
}

/// Byte-masked access to a row's tail, for the 512-bit tiers.
mod masked {
    use super::*;

    /// The tail from byte `.0`, the bytes `.1` selects.
    pub type Tail = (usize, __mmask64);

    #[inline(always)]
    pub fn tail(len: usize) -> Option<Tail> {
        let k = len % 64;
        (k != 0).then(|| (len - k, (1u64 << k) - 1))
    }
    /// # Safety
    /// AVX-512BW; the bytes selected are readable.
    #[inline(always)]
    pub unsafe fn load(t: Tail, row: *const u8) -> __m512i {
        // SAFETY: masked bytes are not read.
        unsafe { _mm512_maskz_loadu_epi8(t.1, row.add(t.0).cast()) }
    }
    /// # Safety
    /// AVX-512BW; the bytes selected are writable.
    #[inline(always)]
    pub unsafe fn set(t: Tail, row: *mut u8, v: __m512i) {
        // SAFETY: masked bytes are not written.
        unsafe { _mm512_mask_storeu_epi8(row.add(t.0).cast(), t.1, v) }
    }
    /// # Safety
    /// As for [`set`].
    #[inline(always)]
    pub unsafe fn add(t: Tail, row: *mut u8, v: __m512i) {
        // SAFETY: as the caller promises.
        unsafe { set(t, row, _mm512_xor_si512(load(t, row), v)) }
    }
}

nibble_tier!(
    Ssse3,
    __m128i,
    16,
    load = _mm_loadu_si128,
    store = _mm_storeu_si128,
    zero = _mm_setzero_si128,
    xor = _mm_xor_si128,
    and = _mm_and_si128,
    shuffle = _mm_shuffle_epi8,
    srli16 = _mm_srli_epi16,
    splat8 = _mm_set1_epi8,
    tables = table128,
    tail = overlap
);
nibble_tier!(
    Avx2,
    __m256i,
    32,
    load = _mm256_loadu_si256,
    store = _mm256_storeu_si256,
    zero = _mm256_setzero_si256,
    xor = _mm256_xor_si256,
    and = _mm256_and_si256,
    shuffle = _mm256_shuffle_epi8,
    srli16 = _mm256_srli_epi16,
    splat8 = _mm256_set1_epi8,
    tables = table256,
    tail = overlap
);
nibble_tier!(
    Avx512,
    __m512i,
    64,
    load = _mm512_loadu_si512,
    store = _mm512_storeu_si512,
    zero = _mm512_setzero_si512,
    xor = _mm512_xor_si512,
    and = _mm512_and_si512,
    shuffle = _mm512_shuffle_epi8,
    srli16 = _mm512_srli_epi16,
    splat8 = _mm512_set1_epi8,
    tables = table512,
    tail = masked
);
// VEX-encoded: for CPUs with GFNI and AVX2 but no AVX-512.
gfni_tier!(
    Gfni256,
    __m256i,
    32,
    load = _mm256_loadu_si256,
    store = _mm256_storeu_si256,
    zero = _mm256_setzero_si256,
    xor = _mm256_xor_si256,
    and = _mm256_and_si256,
    splat64 = _mm256_set1_epi64x,
    affine = _mm256_gf2p8affine_epi64_epi8,
    tail = overlap
);
gfni_tier!(
    Gfni512,
    __m512i,
    64,
    load = _mm512_loadu_si512,
    store = _mm512_storeu_si512,
    zero = _mm512_setzero_si512,
    xor = _mm512_xor_si512,
    and = _mm512_and_si512,
    splat64 = _mm512_set1_epi64,
    affine = _mm512_gf2p8affine_epi64_epi8,
    tail = masked
);

mod ssse3 {
    use super::*;
    super::super::simd::tier!(
        Ssse3,
        Isa::Ssse3,
        "ssse3",
        matmul = (4, 2, split_once = true),
        dot256 = scalar::KERNELS.dot256
    );
}

mod avx2 {
    use super::*;
    super::super::simd::tier!(
        Avx2,
        Isa::Avx2,
        "avx2",
        matmul = (4, 2, split_once = true),
        dot256 = scalar::KERNELS.dot256
    );
}

mod avx512 {
    use super::*;
    super::super::simd::tier!(
        Avx512,
        Isa::Avx512,
        "avx512f,avx512bw",
        matmul = (8, 2, split_once = false),
        dot256 = scalar::KERNELS.dot256
    );
}

mod gfni256 {
    use super::*;
    super::super::simd::tier!(Gfni256, Isa::Gfni256, "avx2,gfni", matmul = (6, 2, split_once = false), dot256 = dot);

    fn dot(x: &[u8], y: &[u8]) -> u8 {
        assert_eq!(x.len(), y.len(), "dot: slices differ in length");
        // SAFETY: `KERNELS` is only handed out where the CPU has AVX2 and
        // GFNI; the lengths were checked.
        unsafe { dot256(x, y) }
    }

    /// See [`super::gfni512`]'s `dot256`.
    #[target_feature(enable = "avx2,gfni")]
    unsafe fn dot256(x: &[u8], y: &[u8]) -> u8 {
        let whole = x.len() - x.len() % 32;
        let mut lanes = [0u8; 32];
        // SAFETY: the caller has the features; both slices hold `whole`
        // bytes, and `lanes` 32.
        unsafe {
            let (to, mut acc) = (Gfni256::prepare(&TO_AES), Gfni256::zero());
            for i in (0..whole).step_by(32) {
                let (a, b) = (Gfni256::load(x.as_ptr().add(i)), Gfni256::load(y.as_ptr().add(i)));
                acc = _mm256_xor_si256(acc, _mm256_gf2p8mul_epi8(Gfni256::mul(to, a), Gfni256::mul(to, b)));
            }
            Gfni256::store(lanes.as_mut_ptr(), acc);
        }
        let sum = FROM_AES.apply(lanes.iter().fold(0, |s, &b| s ^ b));
        sum ^ (scalar::KERNELS.dot256)(&x[whole..], &y[whole..])
    }
}

mod gfni512 {
    use super::*;
    super::super::simd::tier!(
        Gfni512,
        Isa::Gfni512,
        "avx512f,avx512bw,gfni",
        matmul = (8, 3, split_once = false),
        dot256 = dot
    );

    fn dot(x: &[u8], y: &[u8]) -> u8 {
        assert_eq!(x.len(), y.len(), "dot: slices differ in length");
        // SAFETY: `KERNELS` is only handed out where the CPU has AVX-512BW
        // and GFNI; the lengths were checked.
        unsafe { dot256(x, y) }
    }

    /// Maps both operands into the 0x11B field, multiplies with `gf2p8mulb`,
    /// sums, and maps the sum back: the isomorphism is linear, so it commutes
    /// with the sum.
    #[target_feature(enable = "avx512f,avx512bw,gfni")]
    unsafe fn dot256(x: &[u8], y: &[u8]) -> u8 {
        let mut lanes = [0u8; 64];
        // SAFETY: the caller has the features; the masks keep both loads
        // within the slices, which have one length; `lanes` holds 64 bytes.
        unsafe {
            let (to, mut acc) = (Gfni512::prepare(&TO_AES), Gfni512::zero());
            for i in (0..x.len()).step_by(64) {
                let t = (i, if x.len() - i >= 64 { !0 } else { (1u64 << (x.len() - i)) - 1 });
                let (a, b) = (masked::load(t, x.as_ptr()), masked::load(t, y.as_ptr()));
                acc = _mm512_xor_si512(acc, _mm512_gf2p8mul_epi8(Gfni512::mul(to, a), Gfni512::mul(to, b)));
            }
            Gfni512::store(lanes.as_mut_ptr(), acc);
        }
        FROM_AES.apply(lanes.iter().fold(0, |s, &b| s ^ b))
    }
}
