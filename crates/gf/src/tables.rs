//! Tables built at compile time: log/exp for scalar products, and for every
//! field element the GF(2)-linear byte map that multiplies by it.
//!
//! Multiplication by a constant `c` is linear over GF(2), so on a byte it is
//! an 8x8 bit matrix. The SIMD kernels only ever apply such matrices, either
//! as a GFNI affine transform or as two 16-entry nibble tables for `pshufb`.
//! One kernel therefore serves every field and both symbol layouts.

/// A GF(2)-linear map on bytes, in the two encodings the kernels consume.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(64))]
pub struct ByteMap {
    /// Image of each low nibble value: `lo[n] = M(n)`.
    pub lo: [u8; 16],
    /// Image of each high nibble value: `hi[n] = M(n << 4)`.
    pub hi: [u8; 16],
    /// The matrix in `gf2p8affineqb` order: byte `7 - i` is the row of output bit `i`.
    pub affine: u64,
}

impl ByteMap {
    pub const ZERO: ByteMap = ByteMap { lo: [0; 16], hi: [0; 16], affine: 0 };
    /// The affine encoding of the identity, multiplication by one.
    pub const IDENTITY_AFFINE: u64 = 0x0102_0408_1020_4080;

    /// Multiplication by one: table kernels replace it with a plain XOR,
    /// which is all GF(2) ever needs.
    #[inline]
    pub const fn is_identity(&self) -> bool {
        self.affine == Self::IDENTITY_AFFINE
    }

    /// Builds the map from the images of the eight input bits.
    pub const fn from_columns(col: [u8; 8]) -> ByteMap {
        let mut lo = [0u8; 16];
        let mut hi = [0u8; 16];
        let mut n = 0;
        while n < 16 {
            let mut b = 0;
            while b < 4 {
                if n & (1 << b) != 0 {
                    lo[n] ^= col[b];
                    hi[n] ^= col[b + 4];
                }
                b += 1;
            }
            n += 1;
        }
        let mut affine = 0u64;
        let mut i = 0;
        while i < 8 {
            let mut row = 0u8;
            let mut j = 0;
            while j < 8 {
                if col[j] & (1 << i) != 0 {
                    row |= 1 << j;
                }
                j += 1;
            }
            affine |= (row as u64) << (8 * (7 - i));
            i += 1;
        }
        ByteMap { lo, hi, affine }
    }

    /// Applies the map to one byte (the scalar reference).
    #[inline]
    pub const fn apply(&self, x: u8) -> u8 {
        self.lo[(x & 15) as usize] ^ self.hi[(x >> 4) as usize]
    }
}

/// Primitive polynomials, indexed by q. 0x11D for GF(2^8) as in most RLNC
/// libraries; the others are the customary lowest-weight primitive choices.
pub const POLYNOMIALS: [u16; 9] = [0, 0x3, 0x7, 0xB, 0x13, 0x25, 0x43, 0x89, 0x11D];

/// Everything precomputed for one field.
#[derive(Debug)]
pub struct FieldTables {
    pub poly: u16,
    /// `exp[i] = x^i`, doubled so that `exp[log a + log b]` needs no reduction.
    pub exp: [u8; 512],
    /// `log[a]` for `a != 0`; `log[0]` is unused.
    pub log: [u8; 256],
    /// Multiplication by each element on one element per byte, at every
    /// byte: the bits above q are ignored.
    pub element: [ByteMap; 256],
    /// Multiplication by each element on packed bytes (8/q elements a byte),
    /// for q dividing 8, at every byte as `element`. Unused for the other
    /// fields, which bit-slice symbols.
    pub packed: [ByteMap; 256],
}

const fn mul_slow(q: u8, poly: u16, a: u8, b: u8) -> u8 {
    let mut a = a as u16;
    let mut b = b as u16;
    let mut r = 0u16;
    let top = 1u16 << q;
    while b != 0 {
        if b & 1 != 0 {
            r ^= a;
        }
        a <<= 1;
        if a & top != 0 {
            a ^= poly;
        }
        b >>= 1;
    }
    r as u8
}

pub const fn build(q: u8) -> FieldTables {
    let poly = POLYNOMIALS[q as usize];
    let order = 1usize << q;
    let mut exp = [0u8; 512];
    let mut log = [0u8; 256];
    // GF(2) has the single unit 1: x is not a generator there.
    let generator = if q == 1 { 1 } else { 2 };
    let mut v = 1u8;
    let mut i = 0;
    while i < order - 1 {
        exp[i] = v;
        exp[i + order - 1] = v;
        log[v as usize] = i as u8;
        v = mul_slow(q, poly, v, generator);
        i += 1;
    }
    let mut element = [ByteMap::ZERO; 256];
    let mut packed = [ByteMap::ZERO; 256];
    let mut c = 0;
    while c < order {
        let mut ecol = [0u8; 8];
        let mut pcol = [0u8; 8];
        let mut j = 0;
        while j < 8 {
            if j < q as usize {
                ecol[j] = mul_slow(q, poly, c as u8, 1 << j);
            }
            if 8 % q == 0 {
                let block = j / q as usize;
                let bit = j % q as usize;
                pcol[j] = mul_slow(q, poly, c as u8, 1 << bit) << (block * q as usize);
            }
            j += 1;
        }
        element[c] = ByteMap::from_columns(ecol);
        packed[c] = ByteMap::from_columns(pcol);
        c += 1;
    }
    // Bits above q are ignored: a byte indexes either table as its element.
    while c < 256 {
        element[c] = element[c & (order - 1)];
        packed[c] = packed[c & (order - 1)];
        c += 1;
    }
    FieldTables { poly, exp, log, element, packed }
}

pub static TABLES: [FieldTables; 8] = [build(1), build(2), build(3), build(4), build(5), build(6), build(7), build(8)];

/// The field isomorphism from GF(2^8)/0x11D to GF(2^8)/0x11B, the field GFNI's
/// `gf2p8mulb` multiplies in, and its inverse. Lets the dot product use the
/// hardware multiplier for our polynomial. Only x86 has that multiplier.
#[cfg_attr(not(any(target_arch = "x86", target_arch = "x86_64")), allow(dead_code))]
pub static TO_AES: ByteMap = iso_to_aes();
#[cfg_attr(not(any(target_arch = "x86", target_arch = "x86_64")), allow(dead_code))]
pub static FROM_AES: ByteMap = invert(&iso_to_aes());

#[cfg_attr(not(any(target_arch = "x86", target_arch = "x86_64")), allow(dead_code))]
const fn iso_to_aes() -> ByteMap {
    // Find beta in the 0x11B field with beta^8 + beta^4 + beta^3 + beta^2 + 1 = 0;
    // then alpha^j -> beta^j for the basis j = 0..7 defines the isomorphism.
    let mut beta = 2u16;
    while beta < 256 {
        let b = beta as u8;
        let mut pw = [0u8; 9];
        pw[0] = 1;
        let mut k = 1;
        while k < 9 {
            pw[k] = mul_slow(8, 0x11B, pw[k - 1], b);
            k += 1;
        }
        if pw[8] ^ pw[4] ^ pw[3] ^ pw[2] ^ pw[0] == 0 {
            let mut col = [0u8; 8];
            let mut j = 0;
            while j < 8 {
                col[j] = pw[j];
                j += 1;
            }
            return ByteMap::from_columns(col);
        }
        beta += 1;
    }
    panic!("no root of 0x11D in GF(2^8)/0x11B");
}

#[cfg_attr(not(any(target_arch = "x86", target_arch = "x86_64")), allow(dead_code))]
const fn invert(m: &ByteMap) -> ByteMap {
    // A bijection on 256 values: invert by search.
    let mut col = [0u8; 8];
    let mut j = 0;
    while j < 8 {
        let target = 1u8 << j;
        let mut x = 0u16;
        while x < 256 {
            if m.apply(x as u8) == target {
                col[j] = x as u8;
            }
            x += 1;
        }
        j += 1;
    }
    ByteMap::from_columns(col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_nonzero_element_has_a_log() {
        for (q, t) in (1..=8).zip(&TABLES) {
            let order = 1usize << q;
            let mut seen = vec![false; order];
            for i in 0..order - 1 {
                assert!(!seen[t.exp[i] as usize], "q={q}: x is not primitive");
                seen[t.exp[i] as usize] = true;
            }
            assert!(!seen[0]);
        }
    }

    #[test]
    fn identity_is_recognised() {
        assert!(TABLES[7].element[1].is_identity());
        assert!(TABLES[0].packed[1].is_identity());
        assert!(!TABLES[7].element[2].is_identity());
    }

    #[test]
    fn isomorphism_preserves_products() {
        for a in 0..=255u8 {
            for b in [0u8, 1, 2, 3, 0x1d, 0x80, 0xff, a.wrapping_mul(7)] {
                let lhs = TO_AES.apply(mul_slow(8, 0x11D, a, b));
                let rhs = mul_slow(8, 0x11B, TO_AES.apply(a), TO_AES.apply(b));
                assert_eq!(lhs, rhs);
                assert_eq!(FROM_AES.apply(TO_AES.apply(a)), a);
            }
        }
    }
}
