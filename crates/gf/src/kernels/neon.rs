//! AArch64 NEON kernels: 16-byte `tbl` nibble tables, padded tail block.

use std::arch::aarch64::*;

use super::{scalar, Isa, Kernels};
use crate::tables::ByteMap;

pub fn kernels() -> Option<Kernels> {
    std::arch::is_aarch64_feature_detected!("neon").then_some(KERNELS)
}

const KERNELS: Kernels = Kernels {
    isa: Isa::Neon,
    xor: |x, y| unsafe { xor(x, y) },
    map_xor: |m, x, y| unsafe { map_xor(m, x, y) },
    map: |m, y| unsafe { map(m, y) },
    map_xor_multi: |ms, xs, y| {
        for (m, x) in ms.iter().zip(xs) {
            unsafe { map_xor(m, x, y) }
        }
    },
    map_xor_matmul: |ms, xs, ys| {
        super::matmul_by_rows(
            |maps, rows, y| maps.iter().zip(rows).for_each(|(m, x)| unsafe { map_xor(m, x, y) }),
            ms,
            xs,
            ys,
        )
    },
    map_xor_fanout: |ms, x, ys| {
        for (m, y) in ms.iter().zip(ys) {
            unsafe { map_xor(m, x, y) }
        }
    },
    dot256: scalar::KERNELS.dot256,
};

const W: usize = 16;

#[inline(always)]
unsafe fn apply(lo: uint8x16_t, hi: uint8x16_t, x: uint8x16_t) -> uint8x16_t {
    unsafe { veorq_u8(vqtbl1q_u8(lo, vandq_u8(x, vdupq_n_u8(15))), vqtbl1q_u8(hi, vshrq_n_u8::<4>(x))) }
}

/// Runs `body` on whole vectors, then once on a zero-padded copy of the tail.
#[inline(always)]
fn blocks(x: &[u8], y: &mut [u8], mut body: impl FnMut(*const u8, *mut u8)) {
    let n = y.len();
    let whole = n - n % W;
    let mut i = 0;
    while i < whole {
        body(unsafe { x.as_ptr().add(i) }, unsafe { y.as_mut_ptr().add(i) });
        i += W;
    }
    if whole < n {
        let (mut xb, mut yb) = ([0u8; W], [0u8; W]);
        let t = n - whole;
        if !x.is_empty() {
            xb[..t].copy_from_slice(&x[whole..]);
        }
        yb[..t].copy_from_slice(&y[whole..]);
        body(xb.as_ptr(), yb.as_mut_ptr());
        y[whole..].copy_from_slice(&yb[..t]);
    }
}

#[target_feature(enable = "neon")]
unsafe fn xor(x: &[u8], y: &mut [u8]) {
    blocks(x, y, |xp, yp| unsafe { vst1q_u8(yp, veorq_u8(vld1q_u8(xp), vld1q_u8(yp))) })
}

#[target_feature(enable = "neon")]
unsafe fn map_xor(m: &ByteMap, x: &[u8], y: &mut [u8]) {
    if m.is_identity() {
        return unsafe { xor(x, y) };
    }
    let (lo, hi) = unsafe { (vld1q_u8(m.lo.as_ptr()), vld1q_u8(m.hi.as_ptr())) };
    blocks(x, y, |xp, yp| unsafe { vst1q_u8(yp, veorq_u8(vld1q_u8(yp), apply(lo, hi, vld1q_u8(xp)))) })
}

#[target_feature(enable = "neon")]
unsafe fn map(m: &ByteMap, y: &mut [u8]) {
    let (lo, hi) = unsafe { (vld1q_u8(m.lo.as_ptr()), vld1q_u8(m.hi.as_ptr())) };
    blocks(&[], y, |_, yp| unsafe { vst1q_u8(yp, apply(lo, hi, vld1q_u8(yp))) })
}
