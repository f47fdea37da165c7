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
//! directly by [`direct`].

#[cfg(target_arch = "x86")]
use std::arch::x86::*;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// The identity as a `vgf2p8affineqb` matrix: byte `k` is `0x80 >> k`.
const IDENTITY: i64 = 0x0102_0408_1020_4080;

/// Mask selecting the first `t <= 64` bytes.
#[inline(always)]
fn mask(t: usize) -> __mmask64 {
    if t >= 64 { !0 } else { (1u64 << t) - 1 }
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
    let mut stack = [0u64; 64];
    let mut heap = Vec::new();
    let selected: &mut [u64] = if ys.len() * words <= stack.len() {
        &mut stack[..ys.len() * words]
    } else {
        heap.resize(ys.len() * words, 0);
        &mut heap
    };
    let ones = _mm512_set1_epi8(1);
    for (coefs, masks) in a.chunks_exact(n).zip(selected.chunks_exact_mut(words)) {
        for (c, m) in coefs.chunks(64).zip(masks) {
            // SAFETY: the mask keeps the load within `c`.
            *m = _mm512_test_epi8_mask(unsafe { load(Some(mask(c.len())), c.as_ptr()) }, ones);
        }
    }
    let selected = &*selected;
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
        if v + 1 == V { self.last } else { None }
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

/// The product on bit-sliced rows, 64 columns at a time: the columns of
/// every input group are sliced into a buffer of 64 bytes per input, which
/// stays in L1, then each group of 8 outputs sums one affine per input group
/// and vector, and is unsliced and added to its rows. Missing rows of a last
/// group are zero, as are their coefficients.
///
/// # Safety
/// As for [`direct`].
#[target_feature(enable = "avx512f,avx512bw,gfni")]
pub(crate) unsafe fn sliced(a: &[u8], xs: &[&[u8]], ys: &mut [&mut [u8]], accumulate: bool) {
    let (n, m) = (xs.len(), ys.len());
    let len = ys.first().map_or(0, |y| y.len());
    if n == 0 || len == 0 {
        return;
    }
    let gi = n.div_ceil(8);
    let blocks = coefficient_blocks(a, n, m);
    // Small products take the buffer from the stack: aligned allocation
    // costs as much as a tenth of a 16 x 16 product.
    let mut stack = [_mm512_setzero_si512(); 32];
    let mut heap = Vec::new();
    let buf: &mut [__m512i] = if gi * 8 <= stack.len() {
        &mut stack[..gi * 8]
    } else {
        heap.resize(gi * 8, _mm512_setzero_si512());
        &mut heap
    };
    let identity = _mm512_set1_epi64(IDENTITY);
    // `k` is `None` for whole blocks of 64 columns, so that they compile to
    // plain loads and stores.
    let mut columns = |off: usize, k: Option<__mmask64>| {
        for (group, t) in xs.chunks(8).zip(buf.chunks_exact_mut(8)) {
            let row = |x: &&[u8]| {
                // SAFETY: the caller keeps the columns within the rows.
                unsafe { load(k, x.as_ptr().add(off)) }
            };
            let rows = std::array::from_fn(|j| group.get(j).map_or(_mm512_setzero_si512(), row));
            for (t, s) in t.iter_mut().zip(slice(rows)) {
                *t = affine(identity, s);
            }
        }
        for (o, outs) in ys.chunks_mut(8).enumerate() {
            let mut acc = [_mm512_setzero_si512(); 8];
            let (cs, ts) = (&blocks[o * gi..(o + 1) * gi], &buf[..]);
            // Two input groups at a time, for one three-way XOR per pair.
            for (c, t) in cs.chunks_exact(2).zip(ts.chunks_exact(16)) {
                let (c0, c1) = (
                    _mm512_set1_epi64(c[0] as i64),
                    _mm512_set1_epi64(c[1] as i64),
                );
                for (r, s) in acc.iter_mut().enumerate() {
                    let (p0, p1) = (affine(c0, t[r]), affine(c1, t[8 + r]));
                    *s = _mm512_ternarylogic_epi64::<0x96>(*s, p0, p1);
                }
            }
            if gi % 2 == 1 {
                let c = _mm512_set1_epi64(cs[gi - 1] as i64);
                for (s, &t) in acc.iter_mut().zip(&ts[8 * (gi - 1)..]) {
                    *s = _mm512_xor_si512(*s, affine(c, t));
                }
            }
            for (y, r) in outs.iter_mut().zip(unslice(acc)) {
                let p = y.as_mut_ptr();
                // SAFETY: as above.
                unsafe {
                    let r = if accumulate { _mm512_xor_si512(load(k, p.add(off)), r) } else { r };
                    store(k, p.add(off), r)
                }
            }
        }
    };
    let whole = len - len % 64;
    for off in (0..whole).step_by(64) {
        columns(off, None);
    }
    if whole < len {
        columns(whole, Some(mask(len - whole)));
    }
}

/// The data operands of the affines: for outputs `8o..8o + 8` and inputs
/// `8g..8g + 8`, at `o * groups + g`, byte `i` holds bit `7 - j` for the
/// coefficient of input `j` in output `i`. Missing rows are zero.
fn coefficient_blocks(a: &[u8], n: usize, m: usize) -> Vec<u64> {
    // Moves bit 0 of byte `j` to bit `63 - j`; no two partial products
    // share a bit, so nothing carries.
    let gather = |c: u64| (c & 0x0101_0101_0101_0101).wrapping_mul(0x8040_2010_0804_0201) >> 56;
    let gi = n.div_ceil(8);
    let mut blocks = vec![0u64; m.div_ceil(8) * gi];
    for (i, coefs) in a.chunks_exact(n).enumerate() {
        let row = &mut blocks[i / 8 * gi..][..gi];
        let mut octets = coefs.chunks_exact(8);
        for (b, c) in row.iter_mut().zip(&mut octets) {
            *b |= gather(u64::from_le_bytes(c.try_into().unwrap())) << (8 * (i % 8));
        }
        if let Some(b) = row.get_mut(n / 8) {
            let mut c = [0u8; 8];
            c[..n % 8].copy_from_slice(octets.remainder());
            *b |= gather(u64::from_le_bytes(c)) << (8 * (i % 8));
        }
    }
    blocks
}

/// The low and high interleavings of `$a` and `$b` by `$lo` and `$hi`.
macro_rules! pairs {
    ($lo:ident, $hi:ident, $a:expr, $b:expr) => {
        ($lo($a, $b), $hi($a, $b))
    };
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
        (s1[2 * p], s1[2 * p + 1]) = pairs!(
            _mm512_unpacklo_epi8,
            _mm512_unpackhi_epi8,
            r[2 * p],
            r[2 * p + 1]
        );
    }
    let mut s2 = r;
    for hi in 0..2 {
        for h in 0..2 {
            (s2[4 * hi + 2 * h], s2[4 * hi + 2 * h + 1]) = pairs!(
                _mm512_unpacklo_epi16,
                _mm512_unpackhi_epi16,
                s1[4 * hi + h],
                s1[4 * hi + 2 + h]
            );
        }
    }
    let mut s3 = r;
    for x in 0..4 {
        (s3[2 * x], s3[2 * x + 1]) = pairs!(
            _mm512_unpacklo_epi32,
            _mm512_unpackhi_epi32,
            s2[x],
            s2[4 + x]
        );
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
        (u1[2 * p], u1[2 * p + 1]) = pairs!(
            _mm512_unpacklo_epi8,
            _mm512_unpackhi_epi8,
            o[2 * p],
            o[2 * p + 1]
        );
    }
    let mut u2 = o;
    for p in 0..4 {
        (u2[2 * p], u2[2 * p + 1]) = pairs!(
            _mm512_unpacklo_epi8,
            _mm512_unpackhi_epi8,
            u1[2 * p],
            u1[2 * p + 1]
        );
    }
    let mut u3 = o;
    for hi in 0..2 {
        for x in 0..2 {
            (u3[4 * hi + 2 * x], u3[4 * hi + 2 * x + 1]) = pairs!(
                _mm512_unpacklo_epi32,
                _mm512_unpackhi_epi32,
                u2[4 * hi + x],
                u2[4 * hi + 2 + x]
            );
        }
    }
    let mut u4 = o;
    for x in 0..4 {
        (u4[2 * x], u4[2 * x + 1]) = pairs!(
            _mm512_unpacklo_epi64,
            _mm512_unpackhi_epi64,
            u3[x],
            u3[4 + x]
        );
    }
    u4
}
