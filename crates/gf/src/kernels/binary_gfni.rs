//! GF(2) products on AVX-512BW with GFNI.
//!
//! [`sliced`] rearranges each group of 8 input rows, 64 columns at a time, so
//! that every qword holds one column's byte from each of the 8 rows. An affine
//! with the identity as data and that qword as matrix transposes its 8x8 bits;
//! an affine with an 8x8 block of coefficients as data and the transposed
//! qword as matrix then yields the column's byte of 8 outputs, each the sum of
//! its selected rows. One instruction thus applies 64 coefficients to 64 bytes
//! where a GF(2^8) product applies one. Rearranging costs about four
//! instructions per 64 bytes in and out, so a few rows are faster summed
//! directly by [`direct`]. Rows multiplied many times are kept rearranged
//! ([`slice_rows`], [`product_sliced`]; `crate::SlicedRows`).

#[cfg(target_arch = "x86")]
use std::arch::x86::*;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// The identity as a `vgf2p8affineqb` matrix: byte `k` is `0x80 >> k`.
const IDENTITY: i64 = 0x0102_0408_1020_4080;

/// Mask selecting the first `t <= 64` bytes.
#[inline(always)]
fn mask(t: usize) -> __mmask64 {
    if t >= 64 {
        !0
    } else {
        (1u64 << t) - 1
    }
}

/// 64 bytes from `p`, or those of them that `k` selects and zeros.
#[inline(always)]
unsafe fn load(k: Option<__mmask64>, p: *const u8) -> __m512i {
    // SAFETY: the caller makes the 64 bytes, or those `k` selects, readable;
    // masked bytes are not read.
    unsafe {
        match k {
            None => _mm512_loadu_si512(p as *const _),
            Some(k) => _mm512_maskz_loadu_epi8(k, p as *const i8),
        }
    }
}

/// `v` to the 64 bytes from `p`, or to those of them that `k` selects.
#[inline(always)]
unsafe fn store(k: Option<__mmask64>, p: *mut u8, v: __m512i) {
    // SAFETY: as for `load`, for writing.
    unsafe {
        match k {
            None => _mm512_storeu_si512(p as *mut _, v),
            Some(k) => _mm512_mask_storeu_epi8(p as *mut i8, k, v),
        }
    }
}

/// Each byte of `x` times the 8x8 bit matrix in its qword of `a`.
#[target_feature(enable = "avx512f,gfni")]
#[inline]
fn affine(x: __m512i, a: __m512i) -> __m512i {
    _mm512_gf2p8affine_epi64_epi8::<0>(x, a)
}

/// Each output adds its selected rows in eight registers, 512 columns at a
/// time, so that the inputs' columns stay in L1 across outputs.
///
/// # Safety
/// The CPU must support AVX-512F, AVX-512BW and GFNI; `a` holds
/// `ys.len() * xs.len()` coefficients and all rows have one length.
#[target_feature(enable = "avx512f,avx512bw,gfni")]
pub(crate) unsafe fn direct(a: &[u8], xs: &[&[u8]], ys: &mut [&mut [u8]], accumulate: bool) {
    let n = xs.len();
    let len = ys.first().map_or(0, |y| y.len());
    if n == 0 || len == 0 {
        return;
    }
    // Each output's selected rows as bit masks, 64 coefficients to one
    // instruction: a branch per coefficient would mispredict every other
    // one, and a list of rows costs a store per coefficient.
    let words = n.div_ceil(64);
    with_scratch(ys.len() * words, |selected: &mut [u64]| {
        let ones = _mm512_set1_epi8(1);
        for (coefs, masks) in a.chunks_exact(n).zip(selected.chunks_exact_mut(words)) {
            for (c, m) in coefs.chunks(64).zip(masks) {
                // SAFETY: the mask keeps the load within `c`.
                *m = _mm512_test_epi8_mask(unsafe { load(Some(mask(c.len())), c.as_ptr()) }, ones);
            }
        }
        // SAFETY: as the caller promises.
        unsafe { direct_passes(xs, selected, ys, len, accumulate) }
    })
}

/// The passes of [`direct`] over every column, 512 at a time.
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn direct_passes(xs: &[&[u8]], selected: &[u64], ys: &mut [&mut [u8]], len: usize, accumulate: bool) {
    let mut off = 0;
    // SAFETY: every pass reads and writes `off..off + 512` clipped to `len`,
    // within every row.
    unsafe {
        while len - off >= 512 {
            direct_pass(xs, selected, ys, accumulate, Columns::<8> { off, last: None });
            off += 512;
        }
        let last = (!len.is_multiple_of(64)).then(|| mask(len % 64));
        match (len - off).div_ceil(64) {
            0 => {}
            1 => direct_pass(xs, selected, ys, accumulate, Columns::<1> { off, last }),
            2 => direct_pass(xs, selected, ys, accumulate, Columns::<2> { off, last }),
            3 => direct_pass(xs, selected, ys, accumulate, Columns::<3> { off, last }),
            4 => direct_pass(xs, selected, ys, accumulate, Columns::<4> { off, last }),
            5 => direct_pass(xs, selected, ys, accumulate, Columns::<5> { off, last }),
            6 => direct_pass(xs, selected, ys, accumulate, Columns::<6> { off, last }),
            7 => direct_pass(xs, selected, ys, accumulate, Columns::<7> { off, last }),
            _ => direct_pass(xs, selected, ys, accumulate, Columns::<8> { off, last }),
        }
    }
}

/// The columns `cols` of every output. Output `i` adds the rows whose bits
/// are set in its words of `selected`, to itself if `accumulate`, else to zero.
#[inline(always)]
unsafe fn direct_pass<const V: usize>(
    xs: &[&[u8]],
    selected: &[u64],
    ys: &mut [&mut [u8]],
    accumulate: bool,
    cols: Columns<V>,
) {
    let words = selected.len() / ys.len().max(1);
    for (y, masks) in ys.iter_mut().zip(selected.chunks_exact(words)) {
        // SAFETY: the caller keeps the columns within every row.
        unsafe {
            let mut acc = cols.start(y, accumulate);
            for (w, &m) in masks.iter().enumerate() {
                cols.add(&mut acc, &xs[64 * w..], m);
            }
            cols.write(y, acc);
        }
    }
}

/// `V` vectors of columns from `off`, the last masked by `last`.
#[derive(Clone, Copy)]
struct Columns<const V: usize> {
    off: usize,
    last: Option<__mmask64>,
}

impl<const V: usize> Columns<V> {
    #[inline(always)]
    fn k(self, v: usize) -> Option<__mmask64> {
        if v + 1 == V {
            self.last
        } else {
            None
        }
    }

    /// Vector `v` of `row`.
    ///
    /// # Safety
    /// The columns, less the masked bytes, lie within `row`.
    #[inline(always)]
    unsafe fn load(self, row: *const u8, v: usize) -> __m512i {
        // SAFETY: as the caller promises.
        unsafe { load(self.k(v), row.add(self.off + 64 * v)) }
    }

    /// What an output starts from: itself if `accumulate`, else zero.
    #[inline(always)]
    unsafe fn start(self, y: &[u8], accumulate: bool) -> [__m512i; V] {
        match accumulate {
            // SAFETY: as for `load`.
            true => std::array::from_fn(|v| unsafe { self.load(y.as_ptr(), v) }),
            // SAFETY: the caller runs with AVX-512F.
            false => [unsafe { _mm512_setzero_si512() }; V],
        }
    }

    #[inline(always)]
    unsafe fn write(self, y: &mut [u8], acc: [__m512i; V]) {
        for (v, s) in acc.iter().enumerate() {
            // SAFETY: as for `load`.
            unsafe { store(self.k(v), y.as_mut_ptr().add(self.off + 64 * v), *s) }
        }
    }

    /// Adds to `acc` the rows whose bits are set in `bits`, two at a time
    /// for one three-way XOR per pair.
    #[inline(always)]
    unsafe fn add(self, acc: &mut [__m512i; V], rows: &[&[u8]], mut bits: u64) {
        // SAFETY: set bits index `rows`; as for `load`.
        unsafe {
            while bits & bits.wrapping_sub(1) != 0 {
                let b = rows.get_unchecked(bits.trailing_zeros() as usize).as_ptr();
                bits &= bits - 1;
                let c = rows.get_unchecked(bits.trailing_zeros() as usize).as_ptr();
                bits &= bits - 1;
                for (v, s) in acc.iter_mut().enumerate() {
                    *s = _mm512_ternarylogic_epi64::<0x96>(*s, self.load(b, v), self.load(c, v));
                }
            }
            if bits != 0 {
                let x = rows.get_unchecked(bits.trailing_zeros() as usize).as_ptr();
                for (v, s) in acc.iter_mut().enumerate() {
                    *s = _mm512_xor_si512(*s, self.load(x, v));
                }
            }
        }
    }
}

/// The bit-sliced form of rows: for each block of 64 columns and each
/// group of 8 rows (missing rows zero), the 8 vectors [`slice_group`] makes.
/// Block `b` of group `g` is at `(b * groups + g) * 8`, so that a block of
/// every group, which one pass of a product reads, is contiguous.
pub(crate) type Vector = __m512i;

/// Slices the rows of groups `first..first + ceil(xs.len() / 8)` of a form
/// with `groups` groups into `out`.
///
/// # Safety
/// The CPU must support AVX-512F, AVX-512BW and GFNI; all rows have one
/// length, and `out` holds `ceil(len / 64) * groups * 8` vectors.
#[target_feature(enable = "avx512f,avx512bw,gfni")]
pub(crate) unsafe fn slice_rows(xs: &[&[u8]], first: usize, groups: usize, out: &mut [Vector]) {
    let len = xs.first().map_or(0, |x| x.len());
    let span = xs.len().div_ceil(8) * 8;
    for_blocks(0, len, |off, k| {
        // SAFETY: the caller keeps the columns within the rows and sized `out`.
        unsafe { slice_columns(xs, off, k, &mut out[(off / 64 * groups + first) * 8..][..span]) }
    });
}

/// Calls `f(off, k)` for the blocks of 64 columns in `start..end`, `start`
/// a multiple of 64: `k` is `None` for whole blocks and masks the columns
/// of a last part block. Inlined, `f` has two copies, each with `k` known,
/// so that whole blocks take plain loads and stores.
#[inline(always)]
fn for_blocks(start: usize, end: usize, mut f: impl FnMut(usize, Option<__mmask64>)) {
    let whole = end - (end - start) % 64;
    for off in (start..whole).step_by(64) {
        f(off, None);
    }
    if whole < end {
        f(whole, Some(mask(end - whole)));
    }
}

/// `ys = a xs` from the bit-sliced form of `xs` (`n` rows): per block and
/// group of 8 outputs, one affine per input group and vector, then the sums
/// unsliced and written. Missing outputs of a last group are not written.
///
/// # Safety
/// The CPU must support AVX-512F, AVX-512BW and GFNI; `a` holds
/// `ys.len() * n` coefficients, `sliced` is the form of `n` rows of the
/// outputs' length.
#[target_feature(enable = "avx512f,avx512bw,gfni")]
pub(crate) unsafe fn product_sliced(a: &[u8], n: usize, sliced: &[Vector], ys: &mut [&mut [u8]]) {
    let len = ys.first().map_or(0, |y| y.len());
    if n == 0 || len == 0 {
        return;
    }
    let groups = n.div_ceil(8);
    with_coefficient_blocks(a, n, ys.len(), |blocks| {
        // SAFETY: as the caller promises.
        unsafe {
            match groups {
                1 => in_registers::<1, false>(blocks, Kept(sliced), ys, len),
                2 => in_registers::<2, false>(blocks, Kept(sliced), ys, len),
                _ => {
                    // Columns in tiles whose sliced inputs, 512 bytes a block
                    // and group, fill a quarter of L1; each group of outputs
                    // covers a tile before the next starts, so that its
                    // coefficients stay in registers and the tile in L1.
                    let tile = 64 * (24 / groups).max(1);
                    for start in (0..len).step_by(tile) {
                        for (outs, cs) in ys.chunks_mut(8).zip(blocks.chunks_exact(groups)) {
                            for off in (start..len.min(start + tile)).step_by(64) {
                                let k = (len - off < 64).then(|| mask(len - off));
                                let t = &sliced[off / 64 * groups * 8..][..groups * 8];
                                product_block(cs, t, outs, off, k, false);
                            }
                        }
                    }
                }
            }
        }
    });
}

/// `ys (+)= a xs` on rows sliced a block at a time into a buffer that stays
/// in L1: [`product_sliced`] without a form kept between products.
///
/// # Safety
/// As for [`direct`].
#[target_feature(enable = "avx512f,avx512bw,gfni")]
pub(crate) unsafe fn sliced(a: &[u8], xs: &[&[u8]], ys: &mut [&mut [u8]], accumulate: bool) {
    // SAFETY: as the caller promises.
    unsafe { sliced_from(a, Inputs::Rows(xs), ys, accumulate) }
}

/// `ys = a ys` for a square `a`, with no copy of the rows: every input
/// block is sliced before the outputs' block is written.
///
/// # Safety
/// As for [`direct`], with `ys` as the inputs.
#[target_feature(enable = "avx512f,avx512bw,gfni")]
pub(crate) unsafe fn sliced_in_place(a: &[u8], ys: &mut [&mut [u8]]) {
    // SAFETY: as the caller promises.
    unsafe { sliced_from(a, Inputs::Outputs, ys, false) }
}

/// Where [`sliced_from`] reads its inputs.
#[derive(Clone, Copy)]
enum Inputs<'a> {
    Rows(&'a [&'a [u8]]),
    /// The outputs, as they were before the product.
    Outputs,
}

#[target_feature(enable = "avx512f,avx512bw,gfni")]
unsafe fn sliced_from(a: &[u8], inputs: Inputs, ys: &mut [&mut [u8]], accumulate: bool) {
    let n = match inputs {
        Inputs::Rows(xs) => xs.len(),
        Inputs::Outputs => ys.len(),
    };
    let len = ys.first().map_or(0, |y| y.len());
    if n == 0 || len == 0 {
        return;
    }
    let groups = n.div_ceil(8);
    with_coefficient_blocks(a, n, ys.len(), |blocks| {
        // SAFETY: as the caller promises.
        unsafe {
            match (groups, accumulate) {
                (1, false) => in_registers::<1, false>(blocks, Slicing::<1>::new(inputs, ys), ys, len),
                (1, true) => in_registers::<1, true>(blocks, Slicing::<1>::new(inputs, ys), ys, len),
                (2, false) => in_registers::<2, false>(blocks, Slicing::<2>::new(inputs, ys), ys, len),
                (2, true) => in_registers::<2, true>(blocks, Slicing::<2>::new(inputs, ys), ys, len),
                _ => with_scratch(groups * 8, |t: &mut [Vector]| {
                    for_blocks(0, len, |off, k| {
                        match inputs {
                            Inputs::Rows(xs) => slice_columns(xs, off, k, t),
                            Inputs::Outputs => slice_columns(ys, off, k, t),
                        }
                        product_block(blocks, t, ys, off, k, accumulate);
                    })
                }),
            }
        }
    });
}

/// Where [`in_registers`] gets each block of its `G` sliced input groups.
/// A type, not a value tested per block: the loop then holds nothing but
/// what its source needs. A value reloaded from memory every block can
/// share its address's low 12 bits with an output just stored, and the
/// load then waits for that store (4K aliasing): with the stack placed
/// unluckily, that tripled the time of a GF(2) encode of 16 symbols.
trait SlicedBlocks<const G: usize>: Copy {
    /// The sliced columns `off..off + 64` (those `k` selects).
    ///
    /// # Safety
    /// The CPU must support AVX-512F, AVX-512BW and GFNI, as every caller
    /// does; the columns lie within the rows.
    unsafe fn block(self, off: usize, k: Option<__mmask64>) -> [[__m512i; 8]; G];
}

/// Rows kept sliced, as [`slice_rows`] writes them.
#[derive(Clone, Copy)]
struct Kept<'a>(&'a [Vector]);

impl<const G: usize> SlicedBlocks<G> for Kept<'_> {
    #[inline(always)]
    unsafe fn block(self, off: usize, _: Option<__mmask64>) -> [[__m512i; 8]; G] {
        let (groups, _) = self.0[off / 64 * G * 8..].as_chunks::<8>();
        <[[__m512i; 8]; G]>::try_from(&groups[..G]).expect("a block of every group")
    }
}

/// Rows sliced as they are read: row `8g + j` at place `7 - j` of group
/// `g`, as in `slice_columns`, null where the last group is short. Taken
/// as pointers before any output is written: in place, inputs and outputs
/// are the same rows.
#[derive(Clone, Copy)]
struct Slicing<const G: usize>([[*const u8; 8]; G]);

impl<const G: usize> Slicing<G> {
    fn new(inputs: Inputs, ys: &[&mut [u8]]) -> Slicing<G> {
        // In place, the rows are read through pointers made from their
        // addresses, as they are written (see `Strided::of`).
        let row = |r: usize| match inputs {
            Inputs::Rows(xs) => xs.get(r).map_or(std::ptr::null(), |x| x.as_ptr()),
            Inputs::Outputs => {
                ys.get(r).map_or(std::ptr::null(), |y| std::ptr::with_exposed_provenance(y.as_ptr().addr()))
            }
        };
        Slicing(std::array::from_fn(|g| std::array::from_fn(|p| row(8 * g + 7 - p))))
    }
}

impl<const G: usize> SlicedBlocks<G> for Slicing<G> {
    #[inline(always)]
    unsafe fn block(self, off: usize, k: Option<__mmask64>) -> [[__m512i; 8]; G] {
        // SAFETY: as the caller promises. Loops, not closures: a closure
        // does not take the caller's target features, and so would not
        // inline the vector helpers.
        unsafe {
            let zero = _mm512_setzero_si512();
            let mut t = [[zero; 8]; G];
            for (t, rows) in t.iter_mut().zip(&self.0) {
                // A whole group, as all but a last one are, loads with one test.
                let mut group = [zero; 8];
                for (v, &p) in group.iter_mut().zip(rows) {
                    if rows[0].is_null() && p.is_null() {
                        continue;
                    }
                    *v = load(k, p.add(off));
                }
                *t = slice_group(group);
            }
            t
        }
    }
}

/// The product for `G <= 2` input groups, whose sliced block fits in
/// registers beside the sums: it is sliced or loaded once per block for
/// every group of outputs and never stored, and the per-block bookkeeping
/// of the general loops (about as costly as the vector work at 16 rows)
/// is done once.
///
/// # Safety
/// As for [`product_block`]; `blocks` are the coefficient blocks of `G`
/// input groups.
#[target_feature(enable = "avx512f,avx512bw,gfni")]
unsafe fn in_registers<const G: usize, const ACCUMULATE: bool>(
    blocks: &[u64],
    inputs: impl SlicedBlocks<G>,
    ys: &mut [&mut [u8]],
    len: usize,
) {
    // SAFETY: as the caller promises.
    unsafe {
        match (ys.len().div_ceil(8), Strided::of(ys)) {
            (1, Some(rows)) => in_registers_for::<G, ACCUMULATE, 1>(blocks, inputs, rows, len),
            (2, Some(rows)) => in_registers_for::<G, ACCUMULATE, 2>(blocks, inputs, rows, len),
            _ => in_registers_for::<G, ACCUMULATE, 0>(blocks, inputs, Listed(ys.as_ptr(), ys.len()), len),
        }
    }
}

/// [`in_registers`] for `O` groups of outputs, or any number if `O` is 0.
/// With `O` known, the coefficients are read once, before the loop, and
/// stay in registers: reloaded every block, as from the stack, they could
/// wait on the outputs stored just before (see [`SlicedBlocks`]).
#[inline(always)]
unsafe fn in_registers_for<const G: usize, const ACCUMULATE: bool, const O: usize>(
    blocks: &[u64],
    inputs: impl SlicedBlocks<G>,
    ys: impl OutputRows,
    len: usize,
) {
    let few: [[u64; G]; O] = std::array::from_fn(|o| std::array::from_fn(|g| blocks[o * G + g]));
    let whole = len - len % 64;
    // SAFETY: every block lies within the rows; as the caller promises.
    unsafe {
        for off in (0..whole).step_by(64) {
            block_of::<G, ACCUMULATE, O>(blocks, &few, inputs, ys, off, None);
        }
        if whole < len {
            block_of::<G, ACCUMULATE, O>(blocks, &few, inputs, ys, whole, Some(mask(len - whole)));
        }
    }
}

/// One block of [`in_registers_for`]: a function, not a closure, which
/// would not take the caller's target features.
#[inline(always)]
unsafe fn block_of<const G: usize, const ACCUMULATE: bool, const O: usize>(
    blocks: &[u64],
    few: &[[u64; G]; O],
    inputs: impl SlicedBlocks<G>,
    ys: impl OutputRows,
    off: usize,
    k: Option<__mmask64>,
) {
    // SAFETY: as the caller promises.
    unsafe {
        let t = &inputs.block(off, k);
        if O > 0 {
            // Written out, not looped: each group's coefficients are then
            // values, which stay in registers, not entries of an array.
            write_sums::<ACCUMULATE>(ys, 0, off, k, group_sums(&few[0], t));
            if O == 2 {
                write_sums::<ACCUMULATE>(ys, 8, off, k, group_sums(&few[O - 1], t));
            }
        } else {
            for (o, cs) in blocks.chunks_exact(G).enumerate() {
                write_sums::<ACCUMULATE>(ys, 8 * o, off, k, group_sums(cs, t));
            }
        }
    }
}

/// Where the outputs of [`in_registers`] start.
trait OutputRows: Copy {
    fn rows(self) -> usize;

    /// # Safety
    /// `i < self.rows()`.
    unsafe fn row(self, i: usize) -> *mut u8;
}

/// Rows each a fixed number of bytes after the one before, as the chunks
/// of one buffer are: found by arithmetic, so that no pointer is loaded in
/// the loop (see [`SlicedBlocks`]).
#[derive(Clone, Copy)]
struct Strided {
    first: usize,
    stride: usize,
    rows: usize,
}

impl Strided {
    /// `ys` as strided rows, if they are. Every row's address is exposed
    /// either way: the products reach the outputs, and in place the
    /// inputs, only through pointers made from addresses.
    fn of(ys: &mut [&mut [u8]]) -> Option<Strided> {
        let (first, second) = match ys {
            [] => return None,
            [y] => (y.as_mut_ptr().expose_provenance(), y.as_mut_ptr().addr()),
            [y, z, ..] => (y.as_mut_ptr().expose_provenance(), z.as_mut_ptr().expose_provenance()),
        };
        let stride = second.wrapping_sub(first);
        let mut strided = true;
        for (i, y) in ys.iter_mut().enumerate() {
            strided &= y.as_mut_ptr().expose_provenance() == first.wrapping_add(i.wrapping_mul(stride));
        }
        strided.then_some(Strided { first, stride, rows: ys.len() })
    }
}

impl OutputRows for Strided {
    fn rows(self) -> usize {
        self.rows
    }

    #[inline(always)]
    unsafe fn row(self, i: usize) -> *mut u8 {
        std::ptr::with_exposed_provenance_mut(self.first.wrapping_add(i.wrapping_mul(self.stride)))
    }
}

/// Rows anywhere, through a list of them.
#[derive(Clone, Copy)]
struct Listed<'a>(*const &'a mut [u8], usize);

impl OutputRows for Listed<'_> {
    fn rows(self) -> usize {
        self.1
    }

    #[inline(always)]
    unsafe fn row(self, i: usize) -> *mut u8 {
        // SAFETY: as the caller promises; the list outlives the product,
        // and `Strided::of` exposed the row.
        std::ptr::with_exposed_provenance_mut(unsafe { (*self.0.add(i)).as_ptr() }.addr())
    }
}

/// The sums of up to 8 outputs in one block, unsliced, from the sliced
/// block of every input group and the outputs' coefficient blocks `cs`.
#[target_feature(enable = "avx512f,avx512bw,gfni")]
#[inline]
fn group_sums<const G: usize>(cs: &[u64], t: &[[__m512i; 8]; G]) -> [__m512i; 8] {
    let mut acc = [_mm512_setzero_si512(); 8];
    for (&c, t) in cs.iter().zip(t) {
        let c = _mm512_set1_epi64(c as i64);
        for (s, &t) in acc.iter_mut().zip(t) {
            *s = _mm512_xor_si512(*s, affine(c, t));
        }
    }
    unslice(acc)
}

/// Writes, or with `ACCUMULATE` adds, `sums` to the columns `off..off + 64`
/// (those `k` selects) of outputs `first..first + 8` that exist; a whole
/// group with no test per output.
#[inline(always)]
unsafe fn write_sums<const ACCUMULATE: bool>(
    ys: impl OutputRows,
    first: usize,
    off: usize,
    k: Option<__mmask64>,
    sums: [__m512i; 8],
) {
    let count = ys.rows().saturating_sub(first).min(8);
    // SAFETY: the caller has the features and keeps the columns within the rows.
    unsafe {
        if count == 8 {
            for (i, r) in sums.into_iter().enumerate() {
                write_sum::<ACCUMULATE>(ys.row(first + i), off, k, r);
            }
        } else {
            for (i, r) in sums.into_iter().enumerate().take(count) {
                write_sum::<ACCUMULATE>(ys.row(first + i), off, k, r);
            }
        }
    }
}

/// Writes `r` to the columns `off..off + 64` (those `k` selects) of the
/// row at `y`, or adds it to them.
#[inline(always)]
unsafe fn write_sum<const ACCUMULATE: bool>(y: *mut u8, off: usize, k: Option<__mmask64>, r: __m512i) {
    // SAFETY: the caller has the features and keeps the columns within the row.
    unsafe {
        let p = y.add(off);
        store(k, p, if ACCUMULATE { _mm512_xor_si512(load(k, p), r) } else { r });
    }
}

/// Slices the columns `off..off + 64` (those `k` selects) of every group of
/// `rows` into `t`.
///
/// # Safety
/// As for [`product_block`].
#[inline(always)]
unsafe fn slice_columns<R: AsRef<[u8]>>(rows: &[R], off: usize, k: Option<__mmask64>, t: &mut [Vector]) {
    // SAFETY: the caller has the features, and keeps the columns within
    // the rows.
    unsafe {
        for (rows, t) in rows.chunks(8).zip(t.chunks_exact_mut(8)) {
            // Row `j` at place `7 - j`, which pairs it with bit `j` of the
            // coefficient blocks. A whole group loads with no test per row.
            // Loops, not closures, which would not take this function's
            // caller's features and leave the loads as calls.
            let mut group = [_mm512_setzero_si512(); 8];
            match <&[R; 8]>::try_from(rows) {
                Ok(whole) => {
                    for (p, v) in group.iter_mut().enumerate() {
                        *v = load(k, whole[7 - p].as_ref().as_ptr().add(off));
                    }
                }
                Err(_) => {
                    for (j, x) in rows.iter().enumerate() {
                        group[7 - j] = load(k, x.as_ref().as_ptr().add(off));
                    }
                }
            }
            for (t, v) in t.iter_mut().zip(slice_group(group)) {
                *t = v;
            }
        }
    }
}

/// The columns `off..off + 64` (those `k` selects, if given) of every
/// output, from their sliced inputs `t` (one block of every input group).
///
/// # Safety
/// The CPU must support AVX-512F, AVX-512BW and GFNI, as every caller
/// does; it is inlined into them whole.
#[inline(always)]
unsafe fn product_block(
    blocks: &[u64],
    t: &[Vector],
    ys: &mut [&mut [u8]],
    off: usize,
    k: Option<__mmask64>,
    accumulate: bool,
) {
    // SAFETY: the caller has the features, and keeps the columns within
    // the rows.
    unsafe {
        let groups = t.len() / 8;
        for (outs, cs) in ys.chunks_mut(8).zip(blocks.chunks_exact(groups)) {
            let mut acc = [_mm512_setzero_si512(); 8];
            // Two input groups at a time, for one three-way XOR per pair.
            for (c, t) in cs.chunks_exact(2).zip(t.chunks_exact(16)) {
                let (c0, c1) = (_mm512_set1_epi64(c[0] as i64), _mm512_set1_epi64(c[1] as i64));
                for (r, s) in acc.iter_mut().enumerate() {
                    *s = _mm512_ternarylogic_epi64::<0x96>(*s, affine(c0, t[r]), affine(c1, t[8 + r]));
                }
            }
            if groups % 2 == 1 {
                let c = _mm512_set1_epi64(cs[groups - 1] as i64);
                for (s, &t) in acc.iter_mut().zip(&t[8 * (groups - 1)..]) {
                    *s = _mm512_xor_si512(*s, affine(c, t));
                }
            }
            for (y, r) in outs.iter_mut().zip(unslice(acc)) {
                let p = y.as_mut_ptr();
                let r = if accumulate { _mm512_xor_si512(load(k, p.add(off)), r) } else { r };
                store(k, p.add(off), r)
            }
        }
    }
}

/// Runs `f` on `len` zeroed values, from the stack when they fit: an
/// allocation costs as much as a tenth of a 16 x 16 product. Only the
/// values used are zeroed, not the whole stack buffer.
#[inline(always)]
fn with_scratch<T: Copy + Zero, R>(len: usize, f: impl FnOnce(&mut [T]) -> R) -> R {
    let mut stack = [std::mem::MaybeUninit::<T>::uninit(); 64];
    if len > stack.len() {
        return f(&mut vec![T::ZERO; len]);
    }
    for v in &mut stack[..len] {
        v.write(T::ZERO);
    }
    // SAFETY: the first `len` values were just initialised.
    f(unsafe { std::slice::from_raw_parts_mut(stack.as_mut_ptr().cast::<T>(), len) })
}

trait Zero {
    const ZERO: Self;
}
impl Zero for u64 {
    const ZERO: u64 = 0;
}
impl Zero for __m512i {
    // SAFETY: every bit pattern is a valid vector.
    const ZERO: __m512i = unsafe { std::mem::transmute([0u64; 8]) };
}

/// Runs `f` on the coefficient blocks of `a`, `m` outputs of `n` inputs.
#[inline(always)]
fn with_coefficient_blocks<R>(a: &[u8], n: usize, m: usize, f: impl FnOnce(&[u64]) -> R) -> R {
    with_scratch(m.div_ceil(8) * n.div_ceil(8), |blocks| {
        coefficient_blocks(a, n, blocks);
        f(blocks)
    })
}

/// Writes into `blocks` the data operands of the affines: for outputs
/// `8o..8o + 8` and inputs `8g..8g + 8`, at `o * groups + g`, byte `i`
/// holds bit `j` for the coefficient of input `j` in output `i`.
/// Missing rows are zero.
fn coefficient_blocks(a: &[u8], n: usize, blocks: &mut [u64]) {
    // Moves bit 0 of byte `j` to bit `56 + j`: the partial products land
    // on distinct bits, so nothing carries.
    let gather = |c: u64| (c & 0x0101_0101_0101_0101).wrapping_mul(0x0102_0408_1020_4080) >> 56;
    let (groups, m) = (n.div_ceil(8), a.len() / n);
    // Each block is summed in a register: adding rows into it in memory
    // chains every row's store to the next row's load. Plain index loops:
    // chunk iterators of a run-time size cost a division each.
    for g in 0..groups {
        let (start, end) = (8 * g, n.min(8 * g + 8));
        let octet = |row: usize| {
            let c = &a[row * n + start..row * n + end];
            match c.try_into() {
                Ok(c) => u64::from_le_bytes(c),
                Err(_) => c.iter().rev().fold(0, |w, &c| w << 8 | u64::from(c)),
            }
        };
        for o in 0..m.div_ceil(8) {
            let rows = 8 * o..m.min(8 * o + 8);
            blocks[o * groups + g] = rows.fold(0, |b, r| b | gather(octet(r)) << (8 * (r % 8)));
        }
    }
}

/// `vpunpck{l,h}{bw,wd,dq,qdq}` as written. LLVM otherwise merges rounds of
/// them into `vpshufb`s, which on Zen 5 issue on the two ports the affines
/// need, where interleavings issue on all four.
macro_rules! interleave {
    ($($name:ident $ins:literal),*) => {$(
        #[target_feature(enable = "avx512f,avx512bw")]
        #[inline]
        fn $name(a: __m512i, b: __m512i) -> __m512i {
            let r: __m512i;
            // SAFETY: a register operation of AVX-512BW, which the callers have.
            unsafe {
                std::arch::asm!(
                    concat!($ins, " {r}, {a}, {b}"),
                    r = lateout(zmm_reg) r, a = in(zmm_reg) a, b = in(zmm_reg) b,
                    options(pure, nomem, nostack, preserves_flags)
                )
            };
            r
        }
    )*};
}
interleave!(
    unpacklo_epi8 "vpunpcklbw", unpackhi_epi8 "vpunpckhbw",
    unpacklo_epi16 "vpunpcklwd", unpackhi_epi16 "vpunpckhwd",
    unpacklo_epi32 "vpunpckldq", unpackhi_epi32 "vpunpckhdq",
    unpacklo_epi64 "vpunpcklqdq", unpackhi_epi64 "vpunpckhqdq"
);

/// The low and high interleavings of `$a` and `$b` by `$lo` and `$hi`.
macro_rules! pairs {
    ($lo:ident, $hi:ident, $a:expr, $b:expr) => {
        ($lo($a, $b), $hi($a, $b))
    };
}

/// What a product multiplies: 8 rows of 64 columns sliced, then each
/// qword's 8x8 bits transposed by an affine with the identity as data, so
/// that byte `k` of a qword holds bit `k` of one column's byte of every row.
#[target_feature(enable = "avx512f,avx512bw,gfni")]
#[inline]
fn slice_group(rows: [__m512i; 8]) -> [__m512i; 8] {
    let identity = _mm512_set1_epi64(IDENTITY);
    slice(rows).map(|s| affine(identity, s))
}

/// Rows `j` of 64 columns into qwords of one column's byte from each row,
/// byte `j`: three rounds of interleaving, each moving one bit of the row
/// number into the byte's place within the qword. Which column lands where
/// only matters to [`unslice`], which undoes it.
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
fn slice(r: [__m512i; 8]) -> [__m512i; 8] {
    let mut s1 = r;
    for p in 0..4 {
        (s1[2 * p], s1[2 * p + 1]) = pairs!(unpacklo_epi8, unpackhi_epi8, r[2 * p], r[2 * p + 1]);
    }
    let mut s2 = r;
    for hi in 0..2 {
        for h in 0..2 {
            (s2[4 * hi + 2 * h], s2[4 * hi + 2 * h + 1]) =
                pairs!(unpacklo_epi16, unpackhi_epi16, s1[4 * hi + h], s1[4 * hi + 2 + h]);
        }
    }
    let mut s3 = r;
    for x in 0..4 {
        (s3[2 * x], s3[2 * x + 1]) = pairs!(unpacklo_epi32, unpackhi_epi32, s2[x], s2[4 + x]);
    }
    s3
}

/// The inverse of [`slice()`], in four rounds: the first moves out the column
/// bit that [`slice()`] left at the top of each lane's byte index.
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
fn unslice(o: [__m512i; 8]) -> [__m512i; 8] {
    let mut u1 = o;
    for p in 0..4 {
        (u1[2 * p], u1[2 * p + 1]) = pairs!(unpacklo_epi8, unpackhi_epi8, o[2 * p], o[2 * p + 1]);
    }
    let mut u2 = o;
    for p in 0..4 {
        (u2[2 * p], u2[2 * p + 1]) = pairs!(unpacklo_epi8, unpackhi_epi8, u1[2 * p], u1[2 * p + 1]);
    }
    let mut u3 = o;
    for hi in 0..2 {
        for x in 0..2 {
            (u3[4 * hi + 2 * x], u3[4 * hi + 2 * x + 1]) =
                pairs!(unpacklo_epi32, unpackhi_epi32, u2[4 * hi + x], u2[4 * hi + 2 + x]);
        }
    }
    let mut u4 = o;
    for x in 0..4 {
        (u4[2 * x], u4[2 * x + 1]) = pairs!(unpacklo_epi64, unpackhi_epi64, u3[x], u3[4 + x]);
    }
    u4
}
