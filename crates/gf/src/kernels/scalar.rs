//! Portable kernels: the reference for every SIMD path. They check the
//! lengths the vector tiers check, so that a caller finds the same contract
//! on every tier.

use super::{Isa, Kernels};
use crate::tables::{ByteMap, TABLES};

pub const KERNELS: Kernels =
    Kernels { isa: Isa::Scalar, xor, map_xor, map, map_xor_multi, map_matmul, map_xor_fanout, dot256 };

fn xor(x: &[u8], y: &mut [u8]) {
    assert_eq!(x.len(), y.len(), "xor: slices differ in length");
    let mut yw = y.chunks_exact_mut(8);
    let mut xw = x.chunks_exact(8);
    for (yc, xc) in (&mut yw).zip(&mut xw) {
        let v = u64::from_ne_bytes(yc.try_into().unwrap()) ^ u64::from_ne_bytes(xc.try_into().unwrap());
        yc.copy_from_slice(&v.to_ne_bytes());
    }
    let (yt, xt) = (yw.into_remainder(), xw.remainder());
    let mut a = [0u8; 8];
    let mut b = [0u8; 8];
    a[..yt.len()].copy_from_slice(yt);
    b[..xt.len()].copy_from_slice(xt);
    let v = (u64::from_ne_bytes(a) ^ u64::from_ne_bytes(b)).to_ne_bytes();
    yt.copy_from_slice(&v[..yt.len()]);
}

fn map_xor(m: &ByteMap, x: &[u8], y: &mut [u8]) {
    assert_eq!(x.len(), y.len(), "map_xor: slices differ in length");
    // Multiplication by one, all GF(2) has: a word-wide XOR, as the vector
    // tiers do, not a table lookup per byte.
    if m.is_identity() {
        return xor(x, y);
    }
    for (yb, &xb) in y.iter_mut().zip(x) {
        *yb ^= m.apply(xb);
    }
}

fn map(m: &ByteMap, y: &mut [u8]) {
    for yb in y.iter_mut() {
        *yb = m.apply(*yb);
    }
}

fn map_xor_multi(ms: &[&ByteMap], xs: &[&[u8]], y: &mut [u8]) {
    super::check_multi(ms.len(), xs, y.len());
    for (m, x) in ms.iter().zip(xs) {
        map_xor(m, x, y);
    }
}

fn map_matmul(ms: super::MapMatrix<'_>, xs: &[&[u8]], ys: &mut [&mut [u8]], accumulate: bool) {
    super::check_matmul(ms.len(), xs, ys);
    super::matmul_by_rows(map_xor_multi, ms, xs, ys, accumulate)
}

fn map_xor_fanout(ms: &[&ByteMap], x: &[u8], ys: &mut [&mut [u8]]) {
    super::check_multi(ms.len(), ys, x.len());
    for (m, y) in ms.iter().zip(ys) {
        map_xor(m, x, y);
    }
}

fn dot256(x: &[u8], y: &[u8]) -> u8 {
    let t = &TABLES[7];
    let mut acc = 0u8;
    for (&a, &b) in x.iter().zip(y) {
        if a != 0 && b != 0 {
            acc ^= t.exp[t.log[a as usize] as usize + t.log[b as usize] as usize];
        }
    }
    acc
}
