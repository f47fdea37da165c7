//! GF(2) rows kept bit-sliced between products.
//!
//! The fastest GF(2) product on AVX-512 with GFNI first rearranges its
//! inputs so that one byte holds a bit of 8 rows, then applies 64
//! coefficients per instruction. For a 16 x 16 product of 1500-byte rows the
//! rearranging is about 40% of the work. An encoder multiplies the same
//! generation many times, so it keeps the rearranged form and pays for it
//! once per generation.

use crate::kernels::{Isa, Kernels};

/// One 64-byte vector of the sliced form.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Vector([u8; 64]);

/// GF(2) rows of one length in the bit-sliced form of the AVX-512 GFNI
/// product, for many products with the same rows:
/// [`SlicedRows::matmul_into`] computes what [`Field::symbol_matmul_into`]
/// does over GF(2) without rearranging the rows each time.
///
/// The form exists only where that product runs (AVX-512BW with GFNI, and
/// `NCMESH_GF_ISA` not capping the kernels below it): elsewhere
/// [`SlicedRows::zeroed`] returns `None` and a caller multiplies the rows as
/// they are.
///
/// [`Field::symbol_matmul_into`]: crate::Field::symbol_matmul_into
#[derive(Clone)]
pub struct SlicedRows {
    rows: usize,
    len: usize,
    /// Block `b` of group `g` of 8 rows at `(b * groups + g) * 8`.
    #[cfg_attr(not(any(target_arch = "x86", target_arch = "x86_64")), allow(dead_code))]
    vectors: Vec<Vector>,
}

impl std::fmt::Debug for SlicedRows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlicedRows").field("rows", &self.rows).field("len", &self.len).finish()
    }
}

impl SlicedRows {
    /// The fewest outputs for which a product from the kept form is faster
    /// than one from the rows as they are (docs/benchmarks.md): below it
    /// the product still covers a whole group of 8 outputs.
    pub const MIN_OUTPUTS: usize = 4;

    /// `rows` zero rows of `len` bytes, or `None` where the sliced product
    /// does not run.
    pub fn zeroed(rows: usize, len: usize) -> Option<SlicedRows> {
        if !supported() {
            return None;
        }
        let count = len.div_ceil(64) * rows.div_ceil(8) * 8;
        Some(SlicedRows { rows, len, vectors: vec![Vector([0; 64]); count] })
    }

    /// The sliced form of `xs`, or `None` where the sliced product does not run.
    ///
    /// # Panics
    /// If the rows differ in length.
    pub fn new(xs: &[&[u8]]) -> Option<SlicedRows> {
        let mut sliced = SlicedRows::zeroed(xs.len(), xs.first().map_or(0, |x| x.len()))?;
        sliced.set_rows(xs, 0);
        Some(sliced)
    }

    /// The number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The length of every row in bytes.
    pub fn row_bytes(&self) -> usize {
        self.len
    }

    /// Replaces rows `first..first + xs.len()` by `xs`: whole groups of 8,
    /// or a last group up to the last row. After a whole generation
    /// changed, or, with the rows of one group, after one of them did.
    ///
    /// # Panics
    /// If the rows are not whole groups (`first` a multiple of 8, and
    /// `xs.len()` too unless they end at the last row), run past the last
    /// row, or a row has another length.
    pub fn set_rows(&mut self, xs: &[&[u8]], first: usize) {
        let end = first + xs.len();
        let whole = first.is_multiple_of(8) && (xs.len().is_multiple_of(8) || end == self.rows);
        assert!(whole && end <= self.rows, "set_rows: rows {first}..{end} are not whole groups of {} rows", self.rows);
        assert!(xs.iter().all(|x| x.len() == self.len), "set_rows: rows differ in length from the form");
        if xs.is_empty() || self.len == 0 {
            return;
        }
        #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
        // SAFETY: `zeroed` found the features; the lengths were checked and
        // `vectors` was sized for every block of every group.
        unsafe {
            let groups = self.rows.div_ceil(8);
            crate::kernels::binary_gfni::slice_rows(xs, first / 8, groups, self.as_vectors_mut())
        }
        #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
        unreachable!("no sliced form without GFNI")
    }

    /// `ys[i] = sum_j a[i * rows + j] * xs[j]` over GF(2), where `xs` are the
    /// rows this form holds: only bit 0 of each coefficient counts.
    ///
    /// # Panics
    /// If `a` is not `ys.len() x rows`, or an output's length differs from the rows'.
    pub fn matmul_into(&self, a: &[u8], ys: &mut [&mut [u8]]) {
        assert_eq!(a.len(), ys.len() * self.rows, "matmul_into: coefficient matrix has the wrong size");
        assert!(ys.iter().all(|y| y.len() == self.len), "matmul_into: outputs differ in length from the rows");
        if self.rows == 0 {
            return ys.iter_mut().for_each(|y| y.fill(0));
        }
        #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
        // SAFETY: `zeroed` found the features; the shapes were checked.
        unsafe {
            crate::kernels::binary_gfni::product_sliced(a, self.rows, self.as_vectors(), ys)
        }
        #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
        unreachable!("no sliced form without GFNI")
    }

    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    fn as_vectors(&self) -> &[crate::kernels::binary_gfni::Vector] {
        // SAFETY: `Vector` is 64 aligned bytes, as a 512-bit vector is, and
        // every bit pattern is a valid vector.
        unsafe { std::slice::from_raw_parts(self.vectors.as_ptr().cast(), self.vectors.len()) }
    }

    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    fn as_vectors_mut(&mut self) -> &mut [crate::kernels::binary_gfni::Vector] {
        // SAFETY: as for `as_vectors`; the borrow is exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.vectors.as_mut_ptr().cast(), self.vectors.len()) }
    }
}

/// Whether the sliced product runs here: the kernels in use are the GFNI
/// ones, whose features are then present.
fn supported() -> bool {
    Kernels::best().isa == Isa::Gfni512
}
