//! Slice kernels and their run-time dispatch.
//!
//! Every kernel applies a [`ByteMap`] (an 8x8 bit matrix) to each byte, so a
//! single set of kernels serves all fields. The vector tiers share one body
//! per kernel ([`simd`]); the best tier is found once, and each is tested
//! against [`Kernels::scalar`] on odd lengths. Tails use masked loads
//! (AVX-512BW) or a last vector overlapping the one before it (AVX2, SSSE3,
//! NEON; a row shorter than a vector goes through one padded stack block),
//! never a loop over bytes.

use crate::tables::ByteMap;
use std::sync::OnceLock;

#[cfg(all(test, any(target_arch = "x86", target_arch = "x86_64")))]
pub(crate) use binary::four_russians;
pub(crate) use binary::{gf2_in_place_without_copy, gf2_matmul, gf2_matmul_in_place};

mod binary;
#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
pub(crate) mod binary_gfni;
#[cfg(target_arch = "aarch64")]
mod neon;
mod scalar;
#[cfg(any(target_arch = "x86", target_arch = "x86_64", target_arch = "aarch64"))]
mod simd;
#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
mod x86;

/// An instruction set the kernels can run on, a *tier*. Declared from the
/// slowest to the fastest, as measured (docs/benchmarks.md; AVX-512BW and
/// GFNI-256 measured level, and a CPU with both runs GFNI-512): the
/// dispatch picks the last one the CPU has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Isa {
    /// Portable code: word-wide XOR and table lookups.
    Scalar,
    /// AArch64 NEON: 16-byte `tbl` nibble tables.
    Neon,
    /// x86 SSSE3: 16-byte `pshufb` nibble tables.
    Ssse3,
    /// x86 AVX2: 32-byte `vpshufb` nibble tables.
    Avx2,
    /// x86 AVX-512BW without GFNI: 64-byte `vpshufb` nibble tables, masked tails.
    Avx512,
    /// x86 GFNI with AVX2 (VEX-encoded): one `vgf2p8affineqb` per 32 bytes.
    Gfni256,
    /// x86 AVX-512BW with GFNI: one `vgf2p8affineqb` per 64 bytes, masked tails.
    Gfni512,
}

impl Isa {
    /// Every tier, slowest first.
    pub const ALL: [Isa; 7] = [Isa::Scalar, Isa::Neon, Isa::Ssse3, Isa::Avx2, Isa::Avx512, Isa::Gfni256, Isa::Gfni512];

    /// The name `NCMESH_GF_ISA` takes: `scalar`, `neon`, `ssse3`, `avx2`,
    /// `avx512`, `gfni256` or `gfni512`.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Neon => "neon",
            Isa::Ssse3 => "ssse3",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
            Isa::Gfni256 => "gfni256",
            Isa::Gfni512 => "gfni512",
        }
    }

    /// The tier called `name` (any case), if there is one.
    pub fn from_name(name: &str) -> Option<Isa> {
        Isa::ALL.into_iter().find(|isa| isa.name().eq_ignore_ascii_case(name.trim()))
    }
}

/// `y_i (^)= sum_j M_ij x_j`: maps row-major, inputs, outputs, and whether
/// to add to the outputs (or write over them).
pub type MatmulKernel = fn(MapMatrix<'_>, &[&[u8]], &mut [&mut [u8]], bool);

/// A matrix of maps, row-major, as indices into one table: a coefficient
/// matrix and its field's table of maps, which the caller need not turn
/// into a matrix of references. Gathering those for a g x g product cost a
/// few percent of encoding a generation at g = 16, and up to 45% of a
/// product of 32-byte rows, as short as coefficient vectors.
#[derive(Clone, Copy, Debug)]
pub struct MapMatrix<'a> {
    pub table: &'a [ByteMap; 256],
    pub indices: &'a [u8],
}

impl MapMatrix<'_> {
    pub fn len(&self) -> usize {
        self.indices.len()
    }

    pub fn is_empty(&self) -> bool {
        self.indices.is_empty()
    }
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
    /// `y_i (^)= sum_j M_ij x_j` with `M` row-major: a matrix product that
    /// loads each `x_j` once for several outputs. Writing over the outputs
    /// spares an encoder clearing them and reading the zeros back.
    pub map_matmul: MatmulKernel,
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

/// The lengths a multi-row sum or a fan-out relies on: a map per row, and
/// every row `len` bytes long.
#[track_caller]
pub(crate) fn check_multi<R: AsRef<[u8]>>(maps: usize, rows: &[R], len: usize) {
    assert_eq!(maps, rows.len(), "kernel: map and row counts differ");
    assert!(rows.iter().all(|r| r.as_ref().len() == len), "kernel: rows differ in length");
}

/// The shapes a matrix product relies on: `ys.len() x xs.len()` maps, and
/// every row of one length.
#[track_caller]
pub(crate) fn check_matmul(maps: usize, xs: &[&[u8]], ys: &[&mut [u8]]) {
    assert_eq!(maps, xs.len() * ys.len(), "kernel: the map matrix has the wrong size");
    let len = ys.first().map_or(0, |y| y.len());
    assert!(xs.iter().all(|x| x.len() == len) && ys.iter().all(|y| y.len() == len), "kernel: rows differ in length");
}

/// A matrix product as one multi-row sum per output, skipping zero
/// coefficients: for the scalar kernels, where a product costs more than a load.
pub(crate) fn matmul_by_rows(
    multi: impl Fn(&[&ByteMap], &[&[u8]], &mut [u8]),
    ms: MapMatrix<'_>,
    xs: &[&[u8]],
    ys: &mut [&mut [u8]],
    accumulate: bool,
) {
    for (row, y) in ms.indices.chunks_exact(xs.len().max(1)).zip(ys) {
        if !accumulate {
            y.fill(0);
        }
        let (maps, rows): (Vec<&ByteMap>, Vec<&[u8]>) = row
            .iter()
            .map(|&c| &ms.table[usize::from(c)])
            .zip(xs)
            .filter(|(m, _)| m.affine != 0)
            .map(|(m, x)| (m, *x))
            .unzip();
        multi(&maps, &rows, y);
    }
}

impl Kernels {
    /// The portable reference every other path is tested against.
    pub fn scalar() -> Kernels {
        scalar::KERNELS
    }

    /// The kernels for `isa`, if this CPU supports it. Under Miri only the
    /// scalar tier: Miri interprets the portable code, and the vector tiers
    /// are checked instead by the fuzz targets under the address sanitizer.
    pub fn for_isa(isa: Isa) -> Option<Kernels> {
        if cfg!(miri) && isa != Isa::Scalar {
            return None;
        }
        match isa {
            Isa::Scalar => Some(scalar::KERNELS),
            #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
            Isa::Ssse3 | Isa::Avx2 | Isa::Avx512 | Isa::Gfni256 | Isa::Gfni512 => x86::kernels(isa),
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => neon::kernels(),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }

    /// Every tier this CPU can run, slowest first.
    pub fn available() -> Vec<Kernels> {
        Isa::ALL.into_iter().filter_map(Kernels::for_isa).collect()
    }

    /// The fastest kernels this CPU runs, or with `wanted` (a tier's
    /// [`Isa::name`]) the fastest it runs up to that tier: what
    /// [`Kernels::best`] picks given `NCMESH_GF_ISA`.
    pub fn choose(wanted: Option<&str>) -> Kernels {
        let cap = wanted.and_then(Isa::from_name).unwrap_or(Isa::Gfni512);
        let all = Kernels::available();
        *all.iter().rfind(|k| k.isa <= cap).unwrap_or(&all[0])
    }

    /// The fastest kernels for this CPU, chosen once. `NCMESH_GF_ISA` (a
    /// tier's [`Isa::name`]) caps the choice, for measuring one tier against
    /// another; a tier this CPU lacks gives the fastest below it.
    pub fn best() -> &'static Kernels {
        static BEST: OnceLock<Kernels> = OnceLock::new();
        BEST.get_or_init(|| Kernels::choose(std::env::var("NCMESH_GF_ISA").ok().as_deref()))
    }
}
