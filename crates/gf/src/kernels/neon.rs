//! The AArch64 tier: NEON `tbl` nibble tables on 16-byte vectors, with the
//! register blocking of [`super::simd`] and an overlapping last vector for
//! a row's tail.

use std::arch::aarch64::*;

use super::simd::{Overlap, Simd};
use super::{scalar, Isa, Kernels};
use crate::tables::ByteMap;

pub fn kernels() -> Option<Kernels> {
    std::arch::is_aarch64_feature_detected!("neon").then_some(tier::KERNELS)
}

/// Nibble tables with NEON.
#[derive(Clone, Copy)]
pub(super) struct Neon;

impl Simd for Neon {
    const W: usize = 16;
    type V = uint8x16_t;
    type M = (uint8x16_t, uint8x16_t);
    type X = (uint8x16_t, uint8x16_t);
    type Tail = Overlap<uint8x16_t>;

    #[inline(always)]
    unsafe fn load(p: *const u8) -> uint8x16_t {
        // SAFETY: the caller makes 16 bytes readable and has NEON.
        unsafe { vld1q_u8(p) }
    }
    #[inline(always)]
    unsafe fn store(p: *mut u8, v: uint8x16_t) {
        // SAFETY: the caller makes 16 bytes writable and has NEON.
        unsafe { vst1q_u8(p, v) }
    }
    #[inline(always)]
    unsafe fn zero() -> uint8x16_t {
        // SAFETY: the caller has NEON.
        unsafe { vdupq_n_u8(0) }
    }
    #[inline(always)]
    unsafe fn xor(a: uint8x16_t, b: uint8x16_t) -> uint8x16_t {
        // SAFETY: the caller has NEON.
        unsafe { veorq_u8(a, b) }
    }
    #[inline(always)]
    unsafe fn and(a: uint8x16_t, b: uint8x16_t) -> uint8x16_t {
        // SAFETY: the caller has NEON.
        unsafe { vandq_u8(a, b) }
    }
    #[inline(always)]
    unsafe fn prepare(m: &ByteMap) -> Self::M {
        // SAFETY: the caller has NEON; each table is 16 readable bytes.
        unsafe { (vld1q_u8(m.lo.as_ptr()), vld1q_u8(m.hi.as_ptr())) }
    }
    #[inline(always)]
    unsafe fn split(x: uint8x16_t) -> Self::X {
        // SAFETY: the caller has NEON.
        unsafe { (vandq_u8(x, vdupq_n_u8(15)), vshrq_n_u8::<4>(x)) }
    }
    #[inline(always)]
    unsafe fn mul(m: Self::M, x: Self::X) -> uint8x16_t {
        // SAFETY: the caller has NEON.
        unsafe { veorq_u8(vqtbl1q_u8(m.0, x.0), vqtbl1q_u8(m.1, x.1)) }
    }
    #[inline(always)]
    fn tail(len: usize) -> Option<Self::Tail> {
        Overlap::of::<Self>(len)
    }
    #[inline(always)]
    unsafe fn load_tail(t: Self::Tail, row: *const u8) -> uint8x16_t {
        // SAFETY: as the caller promises.
        unsafe { t.load::<Self>(row) }
    }
    #[inline(always)]
    unsafe fn add_tail(t: Self::Tail, row: *mut u8, v: uint8x16_t) {
        // SAFETY: as the caller promises.
        unsafe { t.add::<Self>(row, v) }
    }
    #[inline(always)]
    unsafe fn set_tail(t: Self::Tail, row: *mut u8, v: uint8x16_t) {
        // SAFETY: as the caller promises.
        unsafe { t.set::<Self>(row, v) }
    }
}

mod tier {
    use super::*;
    super::super::simd::tier!(
        Neon,
        Isa::Neon,
        "neon",
        matmul = (8, 2, split_once = false),
        dot256 = scalar::KERNELS.dot256
    );
}
