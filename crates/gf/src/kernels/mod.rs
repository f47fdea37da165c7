//! Slice kernels and their run-time dispatch.
//!
//! Every kernel applies a [`ByteMap`] (an 8x8 bit matrix) to each byte, so a
//! single set of kernels serves all fields. The best instruction set is found
//! once; each path is tested against [`Kernels::scalar`] on odd lengths.
//! Tails use masked loads (AVX-512) or one padded stack block (AVX2, SSSE3,
//! NEON), never a loop over bytes.

use crate::tables::ByteMap;
use std::sync::OnceLock;

#[cfg(test)]
pub(crate) use binary::four_russians;
pub(crate) use binary::{gf2_in_place_without_copy, gf2_matmul, gf2_matmul_in_place};

mod binary;
#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
pub(crate) mod binary_gfni;
#[cfg(target_arch = "aarch64")]
mod neon;
mod scalar;
#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
mod x86;

/// An instruction set the kernels can run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Isa {
    /// Portable code: word-wide XOR and table lookups.
    Scalar,
    /// x86 SSSE3: 16-byte `pshufb` nibble tables.
    Ssse3,
    /// x86 AVX2: 32-byte `vpshufb` nibble tables.
    Avx2,
    /// x86 AVX-512BW with GFNI: one `vgf2p8affineqb` per 64 bytes, masked tails.
    Gfni512,
    /// AArch64 NEON: 16-byte `tbl` nibble tables.
    Neon,
}

/// One implementation of every kernel. Function pointers rather than generics
/// keep dispatch to a single indirect call per slice operation.
#[derive(Clone, Copy)]
pub struct Kernels {
    pub isa: Isa,
    /// `y ^= x`
    pub xor: fn(&[u8], &mut [u8]),
    /// `y ^= M x`
    pub map_xor: fn(&ByteMap, &[u8], &mut [u8]),
    /// `y = M y`
    pub map: fn(&ByteMap, &mut [u8]),
    /// `y ^= sum M_i x_i`, keeping the running sum in registers.
    pub map_xor_multi: fn(&[&ByteMap], &[&[u8]], &mut [u8]),
    /// `y_i ^= sum_j M_ij x_j` with `M` row-major: a matrix product that
    /// loads each `x_j` once for several outputs.
    pub map_xor_matmul: fn(&[&ByteMap], &[&[u8]], &mut [&mut [u8]]),
    /// `y_i ^= M_i x` for every `i`: one row eliminated from many.
    pub map_xor_fanout: fn(&[&ByteMap], &[u8], &mut [&mut [u8]]),
    /// Inner product over GF(2^8)/0x11D.
    pub dot256: fn(&[u8], &[u8]) -> u8,
}

impl std::fmt::Debug for Kernels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernels").field("isa", &self.isa).finish()
    }
}

/// A matrix product as one multi-row sum per output, skipping zero
/// coefficients: for table kernels, where a product costs more than a load.
pub(crate) fn matmul_by_rows(
    multi: impl Fn(&[&ByteMap], &[&[u8]], &mut [u8]),
    ms: &[&ByteMap],
    xs: &[&[u8]],
    ys: &mut [&mut [u8]],
) {
    for (row, y) in ms.chunks_exact(xs.len().max(1)).zip(ys) {
        let (maps, rows): (Vec<&ByteMap>, Vec<&[u8]>) =
            row.iter().zip(xs).filter(|(m, _)| m.affine != 0).map(|(m, x)| (*m, *x)).unzip();
        multi(&maps, &rows, y);
    }
}

impl Kernels {
    /// The portable reference every other path is tested against.
    pub fn scalar() -> Kernels {
        scalar::KERNELS
    }

    /// The kernels for `isa`, if this CPU supports it.
    pub fn for_isa(isa: Isa) -> Option<Kernels> {
        match isa {
            Isa::Scalar => Some(scalar::KERNELS),
            #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
            Isa::Ssse3 | Isa::Avx2 | Isa::Gfni512 => x86::kernels(isa),
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => neon::kernels(),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }

    /// Every instruction set this CPU can run, best last.
    pub fn available() -> Vec<Kernels> {
        [Isa::Scalar, Isa::Ssse3, Isa::Avx2, Isa::Neon, Isa::Gfni512].into_iter().filter_map(Kernels::for_isa).collect()
    }

    /// The fastest kernels for this CPU. `NCMESH_GF_ISA=scalar|ssse3|avx2|gfni512|neon`
    /// caps the choice, for benchmarking one path against another.
    pub fn best() -> &'static Kernels {
        static BEST: OnceLock<Kernels> = OnceLock::new();
        BEST.get_or_init(|| {
            let all = Kernels::available();
            let wanted = std::env::var("NCMESH_GF_ISA").ok().map(|s| s.to_ascii_lowercase());
            wanted
                .and_then(|w| all.iter().find(|k| format!("{:?}", k.isa).to_ascii_lowercase() == w).copied())
                .unwrap_or(*all.last().expect("scalar is always available"))
        })
    }
}
