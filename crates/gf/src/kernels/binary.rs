//! GF(2) matrix products by the Method of Four Russians (M4RM).
//!
//! Over GF(2) a product `ys[i] ^= sum_j a_ij xs[j]` only adds selected rows.
//! M4RM cuts the inputs into groups of [`K`] rows and, for one block of
//! columns at a time, tabulates all 2^K sums of each group's rows. Each output
//! then adds one table entry per group: one lookup per K coefficients, where
//! the byte-map kernels spend one multiplication per coefficient.
//!
//! The body is portable Rust over fixed-size blocks, compiled once per
//! instruction set so that LLVM turns each block XOR into vector code. With
//! AVX-512 and GFNI, the products of [`super::binary_gfni`] are faster for
//! every shape measured, and take its place.

#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
use super::Isa;
use super::Kernels;
use std::mem::MaybeUninit;

/// Rows per group. More rows save lookups, but the table grows as 2^K: 4
/// measured fastest from 16 to 256 outputs, ahead of 3, 5 and 6, and 8 fits
/// only a table or two in L1, which makes it several times slower.
const K: usize = 4;
const ENTRIES: usize = 1 << K;
/// Bytes per column block: two AVX-512 registers, so that each index fetched
/// serves two loads. 64 measured slower with AVX-512 and AVX2; 256 halves
/// the groups that fit in L1 and doubles the passes over the outputs.
const W: usize = 128;
/// Groups tabulated at once, 32 KiB of tables, so that they stay in a 48 KiB
/// L1. A byte then holds both the group within the batch and the entry.
const GROUPS: usize = 256 / ENTRIES;
/// Below this many outputs, or below one whole group of inputs, building the
/// tables costs more than it saves, and each output is summed directly.
const MIN_OUTPUTS: usize = 8;

/// One block of columns of a row, aligned so that a table entry starts a
/// cache line.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Block([u8; W]);

/// The tables of one batch of groups. Each is filled before it is read, so
/// they need no zeroing, which would cost more than a small product.
type Tables = [MaybeUninit<Block>; GROUPS * ENTRIES];

/// The columns one pass of the product covers.
#[derive(Clone, Copy)]
enum Cols<'a> {
    /// `off..off + W`.
    Whole(usize),
    /// `off..off + W`, the last block of a row, where the mask keeps only
    /// the columns no whole block covered. Reading the overlap again costs
    /// less than copying a partial block in and out of every row.
    Last(usize, &'a Block),
    /// `0..w` of rows shorter than a block, copied through a zero-padded one.
    Short(usize),
}

impl Block {
    const ZERO: Block = Block([0; W]);

    /// The block of `row` at `cols`, zero-padded if the row is short.
    #[inline(always)]
    fn read(row: &[u8], cols: Cols) -> Block {
        match cols {
            Cols::Whole(off) | Cols::Last(off, _) => Block(row[off..off + W].try_into().unwrap()),
            Cols::Short(w) => {
                let mut b = Block::ZERO;
                b.0[..w].copy_from_slice(&row[..w]);
                b
            }
        }
    }

    /// An input's block at `cols`, with the columns another block covers cleared.
    #[inline(always)]
    fn input(row: &[u8], cols: Cols) -> Block {
        let mut b = Block::read(row, cols);
        if let Cols::Last(_, mask) = cols {
            for (a, m) in b.0.iter_mut().zip(&mask.0) {
                *a &= m;
            }
        }
        b
    }

    /// What an overwritten output starts from at `cols`: zero, but for the
    /// columns another block covers, which keep what that block wrote.
    #[inline(always)]
    fn output(row: &[u8], cols: Cols) -> Block {
        match cols {
            Cols::Last(_, mask) => {
                let mut b = Block::read(row, cols);
                for (a, m) in b.0.iter_mut().zip(&mask.0) {
                    *a &= !m;
                }
                b
            }
            Cols::Whole(_) | Cols::Short(_) => Block::ZERO,
        }
    }

    #[inline(always)]
    fn write(&self, row: &mut [u8], cols: Cols) {
        match cols {
            Cols::Whole(off) | Cols::Last(off, _) => row[off..off + W].copy_from_slice(&self.0),
            Cols::Short(w) => row[..w].copy_from_slice(&self.0[..w]),
        }
    }

    #[inline(always)]
    fn xor(&mut self, other: &Block) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a ^= b;
        }
    }

    /// Two blocks at once: one three-way XOR where the ISA has it.
    #[inline(always)]
    fn xor2(&mut self, b: &Block, c: &Block) {
        for ((a, b), c) in self.0.iter_mut().zip(&b.0).zip(&c.0) {
            *a ^= b ^ c;
        }
    }
}

/// `ys[i] ^= sum of xs[j] over a[i * xs.len() + j] & 1 != 0`, the product
/// [`crate::Field::matmul`] and [`crate::Field::symbol_matmul`] compute over
/// GF(2), or `ys[i] = ...` without `accumulate`, which spares reading the
/// outputs and zeroing them beforehand. `k` picks the instruction set, as
/// for the other kernels.
pub(crate) fn gf2_matmul(k: &Kernels, a: &[u8], xs: &[&[u8]], ys: &mut [&mut [u8]], accumulate: bool) {
    let n = xs.len();
    let len = ys.first().map_or(0, |y| y.len());
    if n == 0 || len == 0 {
        if !accumulate {
            ys.iter_mut().for_each(|y| y.fill(0));
        }
        return;
    }
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    if has_gfni512(k) {
        use super::binary_gfni::{direct, sliced};
        // SAFETY: the features were detected, and the caller passes `m * n`
        // coefficients and rows of one length.
        unsafe {
            return if slicing_pays(n, ys.len()) {
                sliced(a, xs, ys, accumulate)
            } else {
                direct(a, xs, ys, accumulate)
            };
        }
    }
    if ys.len() < MIN_OUTPUTS || n < K {
        if !accumulate {
            ys.iter_mut().for_each(|y| y.fill(0));
        }
        for (row, y) in a.chunks_exact(n).zip(ys) {
            for (&c, x) in row.iter().zip(xs) {
                if c & 1 != 0 {
                    (k.xor)(x, y);
                }
            }
        }
        return;
    }
    four_russians(k, a, xs, ys, accumulate)
}

/// `ys = a ys` without a copy of the rows, if `k` has a product that can
/// (see [`slicing_pays`]); false, and nothing done, if not.
pub(crate) fn gf2_matmul_in_place(k: &Kernels, a: &[u8], ys: &mut [&mut [u8]]) -> bool {
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    if has_gfni512(k) && slicing_pays(ys.len(), ys.len()) {
        // SAFETY: the features were detected, and the caller passes a
        // square `a` and rows of one length.
        unsafe { super::binary_gfni::sliced_in_place(a, ys) };
        return true;
    }
    let _ = (k, a, ys);
    false
}

/// Whether `gf2_matmul_in_place` can take `n` rows.
pub(crate) fn gf2_in_place_without_copy(k: &Kernels, n: usize) -> bool {
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    if has_gfni512(k) {
        return slicing_pays(n, n);
    }
    let _ = (k, n);
    false
}

/// Whether the bit-sliced product beats the direct one for `n` inputs and
/// `m` outputs: the measured crossovers on 1500-byte rows that start cache
/// lines (docs/benchmarks.md). Up to 16 inputs the slices stay in
/// registers, and 8 outputs pay for slicing; from 17 to 64 inputs it
/// takes 16. M4RM was nowhere faster than both.
#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
fn slicing_pays(n: usize, m: usize) -> bool {
    n >= 8 && (m >= 16 || m >= 8 && (n <= 16 || n >= 128))
}

#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
fn has_gfni512(k: &Kernels) -> bool {
    k.isa == Isa::Gfni512
        && is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("gfni")
}

/// The M4RM product on the instruction set `k` picks, for any shape of
/// non-empty rows.
pub(crate) fn four_russians(k: &Kernels, a: &[u8], xs: &[&[u8]], ys: &mut [&mut [u8]], accumulate: bool) {
    let groups = xs.len().div_ceil(K);
    let idx = indices(a, xs.len(), groups);
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        // With AVX-512 and GFNI the sliced and direct products serve every
        // shape, and M4RM runs there only to be measured against them.
        if k.isa == Isa::Avx512 && is_x86_feature_detected!("avx512bw") {
            // SAFETY: the feature was just detected.
            return unsafe { m4rm_avx512(&idx, groups, xs, ys, accumulate) };
        }
        if matches!(k.isa, Isa::Avx2 | Isa::Gfni256 | Isa::Gfni512) && is_x86_feature_detected!("avx2") {
            // SAFETY: the feature was just detected.
            return unsafe { m4rm_avx2(&idx, groups, xs, ys, accumulate) };
        }
    }
    let _ = k; // every other tier compiles the portable body
    m4rm(&idx, groups, xs, ys, accumulate)
}

/// Each output's coefficients as one table index per group, row-major: the
/// group's place in its batch times [`ENTRIES`], plus bit `b` for coefficient
/// `t * K + b` of group `t`. Inputs past `n` count as zero.
fn indices(a: &[u8], n: usize, groups: usize) -> Vec<u8> {
    // Gathers bit 0 of each byte into bits 24..28 of the product.
    let gather = |c: [u8; K]| ((u32::from_le_bytes(c) & 0x0101_0101).wrapping_mul(0x0102_0408) >> 24) as u8;
    let place = |t: usize| ((t % GROUPS) * ENTRIES) as u8;
    let mut idx = vec![0u8; a.len() / n * groups];
    for (row, out) in a.chunks_exact(n).zip(idx.chunks_exact_mut(groups)) {
        let mut quads = row.chunks_exact(K);
        for (t, (c, i)) in (&mut quads).zip(out.iter_mut()).enumerate() {
            *i = place(t) | gather(c.try_into().unwrap());
        }
        if let Some(last) = out.get_mut(n / K) {
            let mut c = [0u8; K];
            c.iter_mut().zip(quads.remainder()).for_each(|(d, &s)| *d = s);
            *last = place(n / K) | gather(c);
        }
    }
    idx
}

/// Fills `table` with the 2^K sums of `rows` (missing rows are zero).
#[inline(always)]
fn tabulate(table: &mut [MaybeUninit<Block>], rows: &[&[u8]], cols: Cols) {
    if let Ok(rows) = <&[&[u8]; K]>::try_from(rows) {
        // A separate body for whole groups keeps their rows in registers.
        let mut r = [Block::ZERO; K];
        for b in 0..K {
            r[b] = Block::input(rows[b], cols);
        }
        gray(table, &r);
    } else {
        let mut r = [Block::ZERO; K];
        for (b, x) in r.iter_mut().zip(rows) {
            *b = Block::input(x, cols);
        }
        gray(table, &r);
    }
}

/// The sums of `r` in Gray-code order, one XOR each.
#[inline(always)]
fn gray(table: &mut [MaybeUninit<Block>], r: &[Block; K]) {
    let mut sum = Block::ZERO;
    table[0].write(sum);
    for i in 1..ENTRIES {
        sum.xor(&r[i.trailing_zeros() as usize]);
        table[i ^ (i >> 1)].write(sum);
    }
}

/// The product over column blocks of [`W`] bytes. Each kind of block is its
/// own inlined call, so whole blocks compile to plain vector loads and stores.
#[inline(always)]
fn m4rm(idx: &[u8], groups: usize, xs: &[&[u8]], ys: &mut [&mut [u8]], accumulate: bool) {
    let mut tables: Tables = [const { MaybeUninit::uninit() }; GROUPS * ENTRIES];
    let len = ys[0].len();
    if len < W {
        return block(idx, groups, xs, ys, &mut tables, Cols::Short(len), accumulate);
    }
    let whole = len - len % W;
    for off in (0..whole).step_by(W) {
        block(idx, groups, xs, ys, &mut tables, Cols::Whole(off), accumulate);
    }
    if whole < len {
        let mut mask = Block::ZERO;
        mask.0[W - (len - whole)..].fill(0xff);
        block(idx, groups, xs, ys, &mut tables, Cols::Last(len - W, &mask), accumulate);
    }
}

/// One column block of the product. For each batch of [`GROUPS`] groups the
/// tables are built, then every output adds its entries in a register and is
/// stored once.
#[inline(always)]
fn block(
    idx: &[u8],
    groups: usize,
    xs: &[&[u8]],
    ys: &mut [&mut [u8]],
    tables: &mut Tables,
    cols: Cols,
    accumulate: bool,
) {
    for first in (0..groups).step_by(GROUPS) {
        let count = (groups - first).min(GROUPS);
        for (t, table) in tables.chunks_exact_mut(ENTRIES).take(count).enumerate() {
            let g = first + t;
            tabulate(table, &xs[g * K..xs.len().min(g * K + K)], cols);
        }
        let built = &tables[..count * ENTRIES];
        for (y, ix) in ys.iter_mut().zip(idx.chunks_exact(groups)) {
            let ix = &ix[first..first + count];
            debug_assert!(ix.iter().all(|&i| (i as usize) < built.len()));
            let start = if accumulate || first > 0 { Block::read(y, cols) } else { Block::output(y, cols) };
            // A full batch has a constant count, so its lookups unroll.
            let sum = match <&[u8; GROUPS]>::try_from(ix) {
                Ok(ix) => add_entries(start, built, ix),
                Err(_) => add_entries(start, built, ix),
            };
            sum.write(y, cols);
        }
    }
}

/// `acc ^ built[i]` over every `i` in `ix`, two entries at a time.
#[inline(always)]
fn add_entries(mut acc: Block, built: &[MaybeUninit<Block>], ix: &[u8]) -> Block {
    // SAFETY: `indices` places group `t` of a batch at `t * ENTRIES`, so every
    // index of the batch is below `built.len()`, and `tabulate` has filled
    // all of those entries.
    let entry = |i: u8| unsafe { built.get_unchecked(i as usize).assume_init_ref() };
    let mut pairs = ix.chunks_exact(2);
    for p in &mut pairs {
        acc.xor2(entry(p[0]), entry(p[1]));
    }
    if let [i] = pairs.remainder() {
        acc.xor(entry(*i));
    }
    acc
}

#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
#[target_feature(enable = "avx512f,avx512bw")]
fn m4rm_avx512(idx: &[u8], groups: usize, xs: &[&[u8]], ys: &mut [&mut [u8]], accumulate: bool) {
    m4rm(idx, groups, xs, ys, accumulate)
}

#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
#[target_feature(enable = "avx2")]
fn m4rm_avx2(idx: &[u8], groups: usize, xs: &[&[u8]], ys: &mut [&mut [u8]], accumulate: bool) {
    m4rm(idx, groups, xs, ys, accumulate)
}
