//! The byte-map kernels, written once for every vector instruction set.
//!
//! A tier ([`Simd`]) supplies its vector type, how it multiplies a vector
//! of bytes by a [`ByteMap`] (two nibble tables, or one GFNI affine), and
//! how it reaches the bytes of a row past its last whole vector. The bodies
//! here give every tier the same register blocking:
//!
//! - a multi-row sum keeps up to [`PASS`] vectors of its output in
//!   registers across all its rows, so each map is prepared once per pass;
//! - a fan-out keeps up to [`PASS`] vectors of its input in registers, split
//!   into nibbles once, while it is added to every output;
//! - a matrix product loads each block of `V` vectors of an input once for a
//!   group of `K` outputs, all of whose sums stay in registers, and on the
//!   tiers that ask splits it once for every group.
//!
//! [`tier!`] compiles them into functions with the tier's target features,
//! into which everything here is inlined.

use super::MapMatrix;
use crate::tables::ByteMap;

/// Vectors per pass of the multi-row sum and the fan-out: as many as leave
/// registers for the maps on the 16-register tiers.
pub(crate) const PASS: usize = 8;

/// One instruction set's vector arithmetic. Every function is unsafe because
/// it needs the tier's target features: it may only run inside functions
/// compiled with them, once they have been detected. Nothing here or in the
/// kernels below is a closure: a closure does not take the features of the
/// function it is written in, so its intrinsics would stay calls.
pub(crate) trait Simd {
    /// Bytes per vector.
    const W: usize;
    type V: Copy;
    /// A map ready to apply: nibble tables, or an affine matrix.
    type M: Copy;
    /// An input ready to be multiplied: split into nibbles, or as it is.
    type X: Copy;
    /// How the bytes of a row past its last whole vector are reached.
    type Tail: Copy;

    /// # Safety
    /// `W` bytes at `p` are readable.
    unsafe fn load(p: *const u8) -> Self::V;
    /// # Safety
    /// `W` bytes at `p` are writable.
    unsafe fn store(p: *mut u8, v: Self::V);
    unsafe fn zero() -> Self::V;
    unsafe fn xor(a: Self::V, b: Self::V) -> Self::V;
    unsafe fn and(a: Self::V, b: Self::V) -> Self::V;
    unsafe fn prepare(m: &ByteMap) -> Self::M;
    unsafe fn split(x: Self::V) -> Self::X;
    unsafe fn mul(m: Self::M, x: Self::X) -> Self::V;

    /// The part of a row of `len` bytes that whole vectors from its start miss.
    fn tail(len: usize) -> Option<Self::Tail>;
    /// The tail of `row`, where other bytes read are zero or ignored by
    /// [`Simd::add_tail`] and [`Simd::set_tail`].
    ///
    /// # Safety
    /// `row` is readable for the length `t` was made for.
    unsafe fn load_tail(t: Self::Tail, row: *const u8) -> Self::V;
    /// Adds `v` to the tail of `row`, and to no other byte.
    ///
    /// # Safety
    /// `row` is writable for the length `t` was made for.
    unsafe fn add_tail(t: Self::Tail, row: *mut u8, v: Self::V);
    /// Writes `v` over the tail of `row`, and over no other byte.
    ///
    /// # Safety
    /// As for [`Simd::add_tail`].
    unsafe fn set_tail(t: Self::Tail, row: *mut u8, v: Self::V);

    #[inline(always)]
    unsafe fn apply(m: Self::M, x: Self::V) -> Self::V {
        // SAFETY: the caller has the tier's features.
        unsafe { Self::mul(m, Self::split(x)) }
    }
}

/// Where a vector of a pass lies in its rows: whole from a byte offset, or
/// the rows' tail.
#[derive(Clone, Copy)]
pub(crate) enum At<T> {
    Whole(usize),
    Tail(T),
}

/// # Safety
/// The vector at `at` lies within `row`, and the CPU has `S`'s features.
#[inline(always)]
unsafe fn load_at<S: Simd>(row: *const u8, at: At<S::Tail>) -> S::V {
    // SAFETY: as the caller promises.
    unsafe {
        match at {
            At::Whole(off) => S::load(row.add(off)),
            At::Tail(t) => S::load_tail(t, row),
        }
    }
}

/// `row ^= v` at `at`.
///
/// # Safety
/// As for [`load_at`].
#[inline(always)]
unsafe fn add_at<S: Simd>(row: *mut u8, at: At<S::Tail>, v: S::V) {
    // SAFETY: as the caller promises.
    unsafe {
        match at {
            At::Whole(off) => S::store(row.add(off), S::xor(S::load(row.add(off)), v)),
            At::Tail(t) => S::add_tail(t, row, v),
        }
    }
}

/// `row = v` at `at`.
///
/// # Safety
/// As for [`load_at`].
#[inline(always)]
unsafe fn set_at<S: Simd>(row: *mut u8, at: At<S::Tail>, v: S::V) {
    // SAFETY: as the caller promises.
    unsafe {
        match at {
            At::Whole(off) => S::store(row.add(off), v),
            At::Tail(t) => S::set_tail(t, row, v),
        }
    }
}

/// The `N` vectors of a pass from byte `off`; the last is `tail` if given.
#[inline(always)]
fn positions<S: Simd, const N: usize>(off: usize, tail: Option<S::Tail>) -> [At<S::Tail>; N] {
    let mut at = [At::Whole(off); N];
    for (v, at) in at.iter_mut().enumerate() {
        *at = match tail {
            Some(t) if v + 1 == N => At::Tail(t),
            _ => At::Whole(off + S::W * v),
        };
    }
    at
}

/// Runs `$pass::<S, N>($args.., positions)` over a row of `$len` bytes:
/// passes of [`PASS`] whole vectors, then one of the vectors that remain
/// with the tail last. `N` must be a constant, hence the macro.
macro_rules! in_passes {
    ($S:ty, $len:expr, $pass:ident($($arg:expr),*)) => {{
        let len: usize = $len;
        let whole = len / <$S>::W;
        let tail = <$S>::tail(len);
        let mut v = 0;
        while whole - v >= PASS {
            $pass::<$S, PASS>($($arg,)* positions::<$S, PASS>(v * <$S>::W, None));
            v += PASS;
        }
        let off = v * <$S>::W;
        match whole - v + usize::from(tail.is_some()) {
            0 => {}
            1 => $pass::<$S, 1>($($arg,)* positions::<$S, 1>(off, tail)),
            2 => $pass::<$S, 2>($($arg,)* positions::<$S, 2>(off, tail)),
            3 => $pass::<$S, 3>($($arg,)* positions::<$S, 3>(off, tail)),
            4 => $pass::<$S, 4>($($arg,)* positions::<$S, 4>(off, tail)),
            5 => $pass::<$S, 5>($($arg,)* positions::<$S, 5>(off, tail)),
            6 => $pass::<$S, 6>($($arg,)* positions::<$S, 6>(off, tail)),
            7 => $pass::<$S, 7>($($arg,)* positions::<$S, 7>(off, tail)),
            _ => $pass::<$S, 8>($($arg,)* positions::<$S, 8>(off, tail)),
        }
    }};
}

/// `y ^= x`.
///
/// # Safety
/// The CPU has `S`'s features, and `x` is as long as `y`.
#[inline(always)]
pub(crate) unsafe fn xor<S: Simd>(x: &[u8], y: &mut [u8]) {
    // SAFETY: every pass stays within the rows, which have one length.
    unsafe { in_passes!(S, y.len(), xor_pass(x, y)) }
}

#[inline(always)]
unsafe fn xor_pass<S: Simd, const N: usize>(x: &[u8], y: &mut [u8], at: [At<S::Tail>; N]) {
    // SAFETY: as the caller promises.
    unsafe {
        let mut xv = [S::zero(); N];
        for (xv, &at) in xv.iter_mut().zip(&at) {
            *xv = load_at::<S>(x.as_ptr(), at);
        }
        for (&xv, &at) in xv.iter().zip(&at) {
            add_at::<S>(y.as_mut_ptr(), at, xv);
        }
    }
}

/// `y ^= M x`.
///
/// # Safety
/// As for [`xor`].
#[inline(always)]
pub(crate) unsafe fn map_xor<S: Simd>(m: &ByteMap, x: &[u8], y: &mut [u8]) {
    // SAFETY: as the caller promises.
    unsafe {
        if m.is_identity() {
            return xor::<S>(x, y);
        }
        in_passes!(S, y.len(), fanout_pass(std::slice::from_ref(&m), x, std::slice::from_mut(&mut &mut *y)))
    }
}

/// `y = M y`.
///
/// # Safety
/// The CPU has `S`'s features.
#[inline(always)]
pub(crate) unsafe fn map<S: Simd>(m: &ByteMap, y: &mut [u8]) {
    // SAFETY: every pass stays within the row.
    unsafe { in_passes!(S, y.len(), map_pass(S::prepare(m), y)) }
}

#[inline(always)]
unsafe fn map_pass<S: Simd, const N: usize>(m: S::M, y: &mut [u8], at: [At<S::Tail>; N]) {
    // SAFETY: as the caller promises.
    unsafe {
        let mut yv = [S::zero(); N];
        for (yv, &at) in yv.iter_mut().zip(&at) {
            *yv = S::apply(m, load_at::<S>(y.as_ptr(), at));
        }
        for (&yv, &at) in yv.iter().zip(&at) {
            set_at::<S>(y.as_mut_ptr(), at, yv);
        }
    }
}

/// Where a kernel finds its maps: listed, or as offsets into a table.
pub(crate) trait Maps<'a>: Copy {
    /// Map `i`.
    ///
    /// # Safety
    /// There are more than `i` maps.
    unsafe fn map(self, i: usize) -> &'a ByteMap;
    /// The maps from `start` on.
    fn from(self, start: usize) -> Self;
}

/// A [`MapMatrix`] with its indices turned into byte offsets into the
/// table, once per product, which its inner loop adds to the table's
/// address as they are. An index would cost a shift there as well, to scale
/// it by the 64 bytes of a map, which no addressing mode does: on SSSE3,
/// which has no operations to spare, products at g = 16 then ran at 0.94x
/// of products over gathered pointers to the maps, and with offsets at
/// 1.06x; gathering the pointers cost about a cycle a map.
#[derive(Clone, Copy)]
struct Offsets<'a> {
    table: &'a [ByteMap; 256],
    offsets: &'a [u16],
}

/// The most maps whose offsets a product keeps on its stack (8 KiB); the
/// offsets of more go to the heap.
const STACK_OFFSETS: usize = 4096;

impl<'a> Offsets<'a> {
    /// The offsets of `ms`, written into `buf`, which holds at least as many.
    #[inline(always)]
    fn of(ms: MapMatrix<'a>, buf: &'a mut [std::mem::MaybeUninit<u16>]) -> Offsets<'a> {
        const BYTES: u16 = std::mem::size_of::<ByteMap>() as u16;
        const _: () = assert!(255 * (BYTES as usize) <= u16::MAX as usize);
        let buf = &mut buf[..ms.len()];
        for (o, &c) in buf.iter_mut().zip(ms.indices) {
            o.write(u16::from(c) * BYTES);
        }
        // SAFETY: every entry of `buf` was just written.
        let offsets = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u16>(), buf.len()) };
        Offsets { table: ms.table, offsets }
    }
}

impl<'a> Maps<'a> for Offsets<'a> {
    #[inline(always)]
    unsafe fn map(self, i: usize) -> &'a ByteMap {
        // SAFETY: as the caller promises; every offset is that of an entry of the table.
        unsafe { &*self.table.as_ptr().byte_add(usize::from(*self.offsets.get_unchecked(i))) }
    }
    #[inline(always)]
    fn from(self, start: usize) -> Self {
        Offsets { table: self.table, offsets: &self.offsets[start..] }
    }
}

impl<'a, 'b: 'a> Maps<'a> for &'a [&'b ByteMap] {
    #[inline(always)]
    unsafe fn map(self, i: usize) -> &'a ByteMap {
        // SAFETY: as the caller promises.
        unsafe { self.get_unchecked(i) }
    }
    #[inline(always)]
    fn from(self, start: usize) -> Self {
        &self[start..]
    }
}

/// `y ^= sum M_i x_i`, a pass of the output at a time in registers.
///
/// # Safety
/// The CPU has `S`'s features; there is a map for every row, and every
/// row is as long as `y`.
#[inline(always)]
pub(crate) unsafe fn map_xor_multi<'a, S: Simd>(ms: impl Maps<'a>, xs: &[&[u8]], y: &mut [u8]) {
    // SAFETY: every pass stays within the rows, which have one length.
    unsafe { in_passes!(S, y.len(), multi_pass(ms, xs, y)) }
}

#[inline(always)]
unsafe fn multi_pass<'a, S: Simd, const N: usize>(ms: impl Maps<'a>, xs: &[&[u8]], y: &mut [u8], at: [At<S::Tail>; N]) {
    // SAFETY: as the caller promises.
    unsafe {
        let mut acc = [S::zero(); N];
        for (j, x) in xs.iter().enumerate() {
            let (m, xp) = (ms.map(j), x.as_ptr());
            // GF(2) rows are all identities. The branch is predictable in every field.
            if m.is_identity() {
                for (v, a) in acc.iter_mut().enumerate() {
                    *a = S::xor(*a, load_at::<S>(xp, at[v]));
                }
                continue;
            }
            let m = S::prepare(m);
            for (v, a) in acc.iter_mut().enumerate() {
                *a = S::xor(*a, S::apply(m, load_at::<S>(xp, at[v])));
            }
        }
        for (&a, &at) in acc.iter().zip(&at) {
            add_at::<S>(y.as_mut_ptr(), at, a);
        }
    }
}

/// `y_i ^= M_i x` for every `i`, a pass of the input at a time in registers.
///
/// # Safety
/// The CPU has `S`'s features; there are as many outputs as maps, each as
/// long as `x`.
#[inline(always)]
pub(crate) unsafe fn map_xor_fanout<S: Simd>(ms: &[&ByteMap], x: &[u8], ys: &mut [&mut [u8]]) {
    // SAFETY: every pass stays within the rows, which have one length.
    unsafe { in_passes!(S, x.len(), fanout_pass(ms, x, ys)) }
}

#[inline(always)]
unsafe fn fanout_pass<S: Simd, const N: usize>(ms: &[&ByteMap], x: &[u8], ys: &mut [&mut [u8]], at: [At<S::Tail>; N]) {
    // SAFETY: as the caller promises.
    unsafe {
        let mut xv = [S::split(S::zero()); N];
        for (xv, &at) in xv.iter_mut().zip(&at) {
            *xv = S::split(load_at::<S>(x.as_ptr(), at));
        }
        for (m, y) in ms.iter().zip(ys.iter_mut()) {
            let m = S::prepare(m);
            for (v, &xv) in xv.iter().enumerate() {
                add_at::<S>(y.as_mut_ptr(), at[v], S::mul(m, xv));
            }
        }
    }
}

/// Inputs a matrix product splits at a time when its tier splits once
/// ([`map_matmul`]): 4 KiB of split blocks on AVX2, well within L1.
const SPLIT_INPUTS: usize = 32;

/// `y_i (^)= sum_j M_ij x_j` with `M` row-major, adding to the outputs if
/// `accumulate` and writing over them if not, a block of `V` vectors at a
/// time, in groups of `K` outputs whose `K x V` sums stay in registers.
///
/// With `SPLIT_ONCE`, the inputs at each block are split into a buffer once
/// and every group reads them there; otherwise each group loads and splits
/// them itself. Where a multiply-add is two shuffles and two XORs, on the
/// 16-register tiers with groups of 4, the split (a shift and two ANDs a
/// vector) would add three operations per four outputs on the same ports;
/// where it is cheap or free, the buffer's stores and loads cost more than
/// they save. Outputs left over from the groups are summed one at a time.
///
/// # Safety
/// The CPU has `S`'s features; there are `ys.len() * xs.len()` maps, and
/// every row has one length.
#[inline(always)]
pub(crate) unsafe fn map_matmul<S: Simd, const K: usize, const V: usize, const SPLIT_ONCE: bool>(
    ms: MapMatrix<'_>,
    xs: &[&[u8]],
    ys: &mut [&mut [u8]],
    accumulate: bool,
) {
    let n = xs.len();
    let grouped = ys.len() / K * K;
    let (groups, rest) = ys.split_at_mut(grouped);
    let mut stack = [std::mem::MaybeUninit::uninit(); STACK_OFFSETS];
    let mut heap = Vec::new();
    let buf = match ms.len() {
        len if len <= STACK_OFFSETS => &mut stack[..],
        len => {
            heap.resize(len, std::mem::MaybeUninit::uninit());
            &mut heap[..]
        }
    };
    let ms = Offsets::of(ms, buf);
    if let Some(len) = groups.first().map(|y| y.len()) {
        let mut off = 0;
        // SAFETY: every block stays within the rows, which have one length.
        unsafe {
            while len - off >= V * S::W {
                matmul_at::<S, K, V, SPLIT_ONCE>(ms, xs, groups, positions::<S, V>(off, None), accumulate);
                off += V * S::W;
            }
            while len - off >= S::W {
                matmul_at::<S, K, 1, SPLIT_ONCE>(ms, xs, groups, [At::Whole(off)], accumulate);
                off += S::W;
            }
            if let Some(t) = S::tail(len) {
                matmul_at::<S, K, 1, SPLIT_ONCE>(ms, xs, groups, [At::Tail(t)], accumulate);
            }
        }
    }
    for (k, y) in rest.iter_mut().enumerate() {
        if !accumulate {
            y.fill(0);
        }
        // SAFETY: as the caller promises.
        unsafe { map_xor_multi::<S>(ms.from((grouped + k) * n), xs, y) }
    }
}

/// Every group of `K` outputs at the `V` vectors at `at`.
#[inline(always)]
unsafe fn matmul_at<'a, S: Simd, const K: usize, const V: usize, const SPLIT_ONCE: bool>(
    ms: impl Maps<'a>,
    xs: &[&[u8]],
    groups: &mut [&mut [u8]],
    at: [At<S::Tail>; V],
    accumulate: bool,
) {
    let n = xs.len();
    // SAFETY: as the caller promises.
    unsafe {
        if !SPLIT_ONCE {
            for (first, group) in (0..).step_by(K).zip(groups.chunks_exact_mut(K)) {
                let inputs = Loaded::<S, V> { xs, at };
                matmul_block::<S, K, V>(ms.from(first * n), n, &inputs, group, at, accumulate);
            }
            return;
        }
        let mut split = [[std::mem::MaybeUninit::<S::X>::uninit(); V]; SPLIT_INPUTS];
        for (c, chunk) in xs.chunks(SPLIT_INPUTS).enumerate() {
            for (x, split) in chunk.iter().zip(&mut split) {
                for (s, &at) in split.iter_mut().zip(&at) {
                    s.write(S::split(load_at::<S>(x.as_ptr(), at)));
                }
            }
            let inputs = Split::<S, V>(&split[..chunk.len()]);
            for (first, group) in (0..).step_by(K).zip(groups.chunks_exact_mut(K)) {
                let maps = ms.from(first * n + c * SPLIT_INPUTS);
                matmul_block::<S, K, V>(maps, n, &inputs, group, at, accumulate || c > 0);
            }
        }
    }
}

/// The inputs of a block of a matrix product, split.
trait Inputs<S: Simd, const V: usize> {
    fn len(&self) -> usize;
    /// # Safety
    /// `j < self.len()`, and the CPU has `S`'s features.
    unsafe fn get(&self, j: usize) -> [S::X; V];
}

/// Loaded from their rows and split on each use.
struct Loaded<'a, S: Simd, const V: usize> {
    xs: &'a [&'a [u8]],
    at: [At<S::Tail>; V],
}

impl<S: Simd, const V: usize> Inputs<S, V> for Loaded<'_, S, V> {
    #[inline(always)]
    fn len(&self) -> usize {
        self.xs.len()
    }
    #[inline(always)]
    unsafe fn get(&self, j: usize) -> [S::X; V] {
        // SAFETY: as the caller promises; the blocks lie within the rows.
        unsafe {
            let x = self.xs.get_unchecked(j).as_ptr();
            let mut xv = [S::split(S::zero()); V];
            for (xv, &at) in xv.iter_mut().zip(&self.at) {
                *xv = S::split(load_at::<S>(x, at));
            }
            xv
        }
    }
}

/// Split once, into a buffer.
struct Split<'a, S: Simd, const V: usize>(&'a [[std::mem::MaybeUninit<S::X>; V]]);

impl<S: Simd, const V: usize> Inputs<S, V> for Split<'_, S, V> {
    #[inline(always)]
    fn len(&self) -> usize {
        self.0.len()
    }
    #[inline(always)]
    unsafe fn get(&self, j: usize) -> [S::X; V] {
        // SAFETY: every entry of the buffer was written before it was lent here.
        unsafe { self.0.get_unchecked(j).map(|s| s.assume_init()) }
    }
}

/// `K` outputs of `group` at `at`, from the inputs' terms whose maps are in
/// `ms` at `k * n + j` for output `k` and input `j`.
#[inline(always)]
unsafe fn matmul_block<'a, S: Simd, const K: usize, const V: usize>(
    ms: impl Maps<'a>,
    n: usize,
    inputs: &impl Inputs<S, V>,
    group: &mut [&mut [u8]],
    at: [At<S::Tail>; V],
    accumulate: bool,
) {
    // SAFETY: as the caller promises.
    unsafe {
        let mut acc = [[S::zero(); V]; K];
        // Each output's row of maps: one index steps along them all.
        let rows: [_; K] = std::array::from_fn(|k| ms.from(k * n));
        for j in 0..inputs.len() {
            let xv = inputs.get(j);
            for (acc_k, row) in acc.iter_mut().zip(&rows) {
                let m = S::prepare(row.map(j));
                for (a, &xv) in acc_k.iter_mut().zip(&xv) {
                    *a = S::xor(*a, S::mul(m, xv));
                }
            }
        }
        for (y, acc_k) in group.iter_mut().zip(&acc) {
            for (&a, &at) in acc_k.iter().zip(&at) {
                match accumulate {
                    true => add_at::<S>(y.as_mut_ptr(), at, a),
                    false => set_at::<S>(y.as_mut_ptr(), at, a),
                }
            }
        }
    }
}

/// The tail of tiers without byte-masked loads: the row's last vector,
/// overlapping the whole ones before it, or a padded copy of a short row.
#[derive(Clone, Copy)]
pub(crate) enum Overlap<V> {
    /// The last `W` bytes from `off`, of which `keep` is all ones on those
    /// no whole vector covers and zero on the rest.
    Last { off: usize, keep: V },
    /// A row of `n < W` bytes.
    Short(usize),
}

/// Zeros, then ones: `W` bytes from `64 - k` are `W - k` zeros and `k` ones.
static RAMP: [u8; 128] = {
    let mut r = [0u8; 128];
    let mut i = 64;
    while i < 128 {
        r[i] = 0xff;
        i += 1;
    }
    r
};

impl<V: Copy> Overlap<V> {
    /// The tail of a row of `len` bytes for a tier of `S::W`-byte vectors.
    #[inline(always)]
    pub(crate) fn of<S: Simd<V = V>>(len: usize) -> Option<Overlap<V>> {
        let k = len % S::W;
        match () {
            _ if k == 0 => None,
            _ if len < S::W => Some(Overlap::Short(len)),
            // SAFETY: `W - k` is below 64, so the `W <= 64` bytes read lie in `RAMP`.
            _ => Some(Overlap::Last { off: len - S::W, keep: unsafe { S::load(RAMP.as_ptr().add(64 - (S::W - k))) } }),
        }
    }

    /// # Safety
    /// As for [`Simd::load_tail`].
    #[inline(always)]
    pub(crate) unsafe fn load<S: Simd<V = V>>(self, row: *const u8) -> V {
        // SAFETY: the row holds `off + W` bytes, or `n`.
        unsafe {
            match self {
                Overlap::Last { off, .. } => S::load(row.add(off)),
                Overlap::Short(n) => {
                    let mut b = [0u8; 64];
                    std::ptr::copy_nonoverlapping(row, b.as_mut_ptr(), n);
                    S::load(b.as_ptr())
                }
            }
        }
    }

    /// # Safety
    /// As for [`Simd::add_tail`], and the CPU has `S`'s features.
    #[inline(always)]
    pub(crate) unsafe fn add<S: Simd<V = V>>(self, row: *mut u8, v: V) {
        // SAFETY: the row holds `off + W` bytes, or `n`.
        unsafe {
            match self {
                Overlap::Last { off, keep } => S::store(row.add(off), S::xor(S::load(row.add(off)), S::and(v, keep))),
                Overlap::Short(n) => {
                    let mut b = [0u8; 64];
                    std::ptr::copy_nonoverlapping(row, b.as_mut_ptr(), n);
                    S::store(b.as_mut_ptr(), S::xor(S::load(b.as_ptr()), v));
                    std::ptr::copy_nonoverlapping(b.as_ptr(), row, n);
                }
            }
        }
    }

    /// # Safety
    /// As for [`Simd::set_tail`].
    #[inline(always)]
    pub(crate) unsafe fn set<S: Simd<V = V>>(self, row: *mut u8, v: V) {
        // SAFETY: the row holds `off + W` bytes, or `n`.
        unsafe {
            match self {
                Overlap::Last { off, keep } => {
                    // Bytes outside the tail keep what they hold: old ^ ((new ^ old) & keep).
                    let old = S::load(row.add(off));
                    S::store(row.add(off), S::xor(old, S::and(S::xor(v, old), keep)))
                }
                Overlap::Short(n) => {
                    let mut b = [0u8; 64];
                    S::store(b.as_mut_ptr(), v);
                    std::ptr::copy_nonoverlapping(b.as_ptr(), row, n);
                }
            }
        }
    }
}

/// The [`super::Kernels`] of one tier: each kernel a function compiled with
/// the tier's target features, called through a safe wrapper that checks
/// the lengths the unsafe bodies rely on. `dot256` is given, as only some
/// tiers have one of their own.
macro_rules! tier {
    ($S:ty, $isa:expr, $features:literal, matmul = ($K:literal, $V:literal, split_once = $once:literal),
     dot256 = $dot:expr) => {
        use $crate::kernels::simd;

        /// Only handed out once the tier's features have been detected.
        pub(super) const KERNELS: Kernels = Kernels {
            isa: $isa,
            xor: |x, y| {
                assert_eq!(x.len(), y.len(), "xor: slices differ in length");
                // SAFETY: `KERNELS` is only handed out where the CPU has the
                // tier's features; the lengths were checked.
                unsafe { xor(x, y) }
            },
            map_xor: |m, x, y| {
                assert_eq!(x.len(), y.len(), "map_xor: slices differ in length");
                // SAFETY: as for `xor`.
                unsafe { map_xor(m, x, y) }
            },
            // SAFETY: as for `xor`; one row has nothing to check.
            map: |m, y| unsafe { map(m, y) },
            map_xor_multi: |ms, xs, y| {
                $crate::kernels::check_multi(ms.len(), xs, y.len());
                // SAFETY: as for `xor`.
                unsafe { map_xor_multi(ms, xs, y) }
            },
            map_matmul: |ms, xs, ys, accumulate| {
                $crate::kernels::check_matmul(ms.len(), xs, ys);
                // SAFETY: as for `xor`.
                unsafe { map_matmul(ms, xs, ys, accumulate) }
            },
            map_xor_fanout: |ms, x, ys| {
                $crate::kernels::check_multi(ms.len(), ys, x.len());
                // SAFETY: as for `xor`.
                unsafe { map_xor_fanout(ms, x, ys) }
            },
            dot256: $dot,
        };

        #[target_feature(enable = $features)]
        unsafe fn xor(x: &[u8], y: &mut [u8]) {
            // SAFETY: the caller checked the features and the lengths.
            unsafe { simd::xor::<$S>(x, y) }
        }

        #[target_feature(enable = $features)]
        unsafe fn map_xor(m: &ByteMap, x: &[u8], y: &mut [u8]) {
            // SAFETY: as for `xor`.
            unsafe { simd::map_xor::<$S>(m, x, y) }
        }

        #[target_feature(enable = $features)]
        unsafe fn map(m: &ByteMap, y: &mut [u8]) {
            // SAFETY: as for `xor`.
            unsafe { simd::map::<$S>(m, y) }
        }

        #[target_feature(enable = $features)]
        unsafe fn map_xor_multi(ms: &[&ByteMap], xs: &[&[u8]], y: &mut [u8]) {
            // SAFETY: as for `xor`.
            unsafe { simd::map_xor_multi::<$S>(ms, xs, y) }
        }

        #[target_feature(enable = $features)]
        unsafe fn map_matmul(ms: $crate::kernels::MapMatrix<'_>, xs: &[&[u8]], ys: &mut [&mut [u8]], accumulate: bool) {
            // SAFETY: as for `xor`.
            unsafe { simd::map_matmul::<$S, $K, $V, $once>(ms, xs, ys, accumulate) }
        }

        #[target_feature(enable = $features)]
        unsafe fn map_xor_fanout(ms: &[&ByteMap], x: &[u8], ys: &mut [&mut [u8]]) {
            // SAFETY: as for `xor`.
            unsafe { simd::map_xor_fanout::<$S>(ms, x, ys) }
        }
    };
}
pub(crate) use tier;
