//! Binary extension fields GF(2^q), 1 <= q <= 8, and the slice arithmetic
//! network codes are made of.
//!
//! Two kinds of slices appear in a code:
//!
//! - **Element vectors** (coefficient vectors) hold one field element per
//!   byte, in its low `q` bits: [`Field::axpy`], [`Field::scale`],
//!   [`Field::axpy_multi`], [`Field::dot`].
//! - **Symbols** (payloads) are arbitrary bytes on which field elements act
//!   linearly: [`Field::symbol_axpy`] and friends. For q in {1, 2, 4, 8} a
//!   byte packs 8/q elements, low bits first, as in Kodo's binary, binary4 and
//!   binary8 fields. For q in {3, 5, 6, 7} a symbol is cut into q equal bit
//!   planes and element `k` of the symbol is made of bit `k` of every plane,
//!   so a symbol's length must be a multiple of q ([`Field::symbol_granularity`]).
//!
//! Polynomials are listed in [`Field::polynomial`]; GF(2^8) uses 0x11D.
//! Kernels are chosen at run time ([`Kernels::best`]).

mod kernels;
mod sliced;
mod tables;

pub use kernels::{Isa, Kernels, MapMatrix, MatmulKernel};
pub use sliced::SlicedRows;
pub use tables::ByteMap;
use tables::{FieldTables, TABLES};

/// A binary extension field GF(2^q).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Field {
    q: u8,
}

/// The one way to misuse this crate that is not a programming error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldError {
    /// Only GF(2^q) with 1 <= q <= 8 is supported.
    UnsupportedDegree(u32),
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FieldError::UnsupportedDegree(q) => {
                write!(f, "unsupported field GF(2^{q}): the degree q must be between 1 and 8")
            }
        }
    }
}

impl std::error::Error for FieldError {}

impl std::fmt::Debug for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GF(2^{})", self.q)
    }
}

/// `y ^= x`: addition in every binary field, and the whole of GF(2) arithmetic.
///
/// # Panics
/// If the lengths differ.
pub fn xor(x: &[u8], y: &mut [u8]) {
    assert_eq!(x.len(), y.len(), "xor: slices differ in length");
    (Kernels::best().xor)(x, y)
}

impl Field {
    pub const GF2: Field = Field { q: 1 };
    pub const GF4: Field = Field { q: 2 };
    pub const GF8: Field = Field { q: 3 };
    pub const GF16: Field = Field { q: 4 };
    pub const GF32: Field = Field { q: 5 };
    pub const GF64: Field = Field { q: 6 };
    pub const GF128: Field = Field { q: 7 };
    pub const GF256: Field = Field { q: 8 };

    /// GF(2^q).
    pub fn new(q: u32) -> Result<Field, FieldError> {
        match q {
            1..=8 => Ok(Field { q: q as u8 }),
            _ => Err(FieldError::UnsupportedDegree(q)),
        }
    }

    /// The extension degree q.
    pub fn degree(self) -> u32 {
        self.q as u32
    }

    /// The number of elements, 2^q.
    pub fn order(self) -> u32 {
        1 << self.q
    }

    /// The largest element, `2^q - 1`, also the mask of valid element bits.
    pub fn max_element(self) -> u8 {
        (self.order() - 1) as u8
    }

    /// The reduction polynomial, with the x^q term: 0x3, 0x7, 0xB, 0x13, 0x25,
    /// 0x43, 0x89 and 0x11D for q = 1..8.
    pub fn polynomial(self) -> u16 {
        self.tables().poly
    }

    fn tables(self) -> &'static FieldTables {
        &TABLES[self.q as usize - 1]
    }

    /// The product `a * b`. Bits above q are ignored.
    pub fn mul(self, a: u8, b: u8) -> u8 {
        let (a, b) = (a & self.max_element(), b & self.max_element());
        if a == 0 || b == 0 {
            return 0;
        }
        let t = self.tables();
        t.exp[t.log[a as usize] as usize + t.log[b as usize] as usize]
    }

    /// The inverse of a non-zero `a`; `inv(0)` is 0 by convention.
    pub fn inv(self, a: u8) -> u8 {
        let a = a & self.max_element();
        if a == 0 {
            return 0;
        }
        let t = self.tables();
        let order = self.order() as usize - 1;
        t.exp[(order - t.log[a as usize] as usize) % order]
    }

    /// The quotient `a / b` for non-zero `b`.
    pub fn div(self, a: u8, b: u8) -> u8 {
        self.mul(a, self.inv(b))
    }

    /// The linear map "multiply by `a`" on element vectors; the bits of `a`
    /// above q are ignored.
    pub fn element_map(self, a: u8) -> &'static ByteMap {
        &self.tables().element[usize::from(a)]
    }

    /// Element vectors: `y += a * x`.
    ///
    /// # Panics
    /// If the lengths differ.
    pub fn axpy(self, a: u8, x: &[u8], y: &mut [u8]) {
        assert_eq!(x.len(), y.len(), "axpy: slices differ in length");
        match a & self.max_element() {
            0 => {}
            1 if self.q == 1 => (Kernels::best().xor)(x, y),
            _ => (Kernels::best().map_xor)(self.element_map(a), x, y),
        }
    }

    /// Element vectors: `y *= a`.
    pub fn scale(self, a: u8, y: &mut [u8]) {
        match a & self.max_element() {
            0 => y.fill(0),
            1 if self.q == 1 => {}
            _ => (Kernels::best().map)(self.element_map(a), y),
        }
    }

    /// Element vectors: `y += sum a[i] * xs[i]`.
    ///
    /// # Panics
    /// If `a` and `xs` differ in length, or any `xs[i]` differs from `y` in length.
    pub fn axpy_multi(self, a: &[u8], xs: &[&[u8]], y: &mut [u8]) {
        assert_eq!(a.len(), xs.len(), "axpy_multi: coefficient and row counts differ");
        self.axpy_sum(a.iter().copied().zip(xs.iter().copied()), y);
    }

    /// Element vectors: `y += sum c * x` over the `(c, x)` terms, keeping the
    /// running sum in registers.
    ///
    /// # Panics
    /// If any `x` differs from `y` in length.
    pub fn axpy_sum<'a>(self, terms: impl IntoIterator<Item = (u8, &'a [u8])>, y: &mut [u8]) {
        sum(terms, y, |c| self.element_map(c));
    }

    /// Element vectors: `y += c * x` for every `(c, y)` term, the rank-one
    /// update that clears a new pivot column from the other rows.
    ///
    /// # Panics
    /// If any `y` differs from `x` in length.
    pub fn axpy_fanout<'a>(self, x: &[u8], terms: impl IntoIterator<Item = (u8, &'a mut [u8])>) {
        fanout(x, terms, |c| self.element_map(c));
    }

    /// Symbols: `y += c * x` for every `(c, y)` term, reading `x` once for
    /// many outputs: a source an LT decoder has just decoded, XORed out of
    /// every symbol that covers it.
    ///
    /// # Panics
    /// If any `y` differs from `x` in length, or the length is not a
    /// multiple of [`Field::symbol_granularity`].
    pub fn symbol_axpy_fanout<'a>(self, x: &[u8], terms: impl IntoIterator<Item = (u8, &'a mut [u8])>) {
        self.check_symbol(x.len());
        if self.symbol_granularity() == 1 {
            fanout(x, terms, |c| &self.tables().packed[usize::from(c)]);
        } else {
            for (c, y) in terms {
                self.symbol_axpy(c, x, y);
            }
        }
    }

    /// Element vectors: the inner product `sum x[i] * y[i]`.
    ///
    /// # Panics
    /// If the lengths differ.
    pub fn dot(self, x: &[u8], y: &[u8]) -> u8 {
        assert_eq!(x.len(), y.len(), "dot: slices differ in length");
        if self.q == 8 {
            return (Kernels::best().dot256)(x, y);
        }
        x.iter().zip(y).fold(0, |acc, (&a, &b)| acc ^ self.mul(a, b))
    }

    /// The length every symbol must be a multiple of: 1 when q divides 8,
    /// else q (one bit plane per element bit).
    pub fn symbol_granularity(self) -> usize {
        if 8 % self.q == 0 {
            1
        } else {
            self.q as usize
        }
    }

    /// The bit-matrix columns `a * 2^j` used on bit-sliced symbols.
    fn columns(self, a: u8) -> [u8; 8] {
        std::array::from_fn(|j| if j < self.q as usize { self.mul(a, 1 << j) } else { 0 })
    }

    fn check_symbol(self, len: usize) {
        assert!(
            len.is_multiple_of(self.symbol_granularity()),
            "symbol of {len} bytes is not a multiple of {} for {self:?}",
            self.symbol_granularity()
        );
    }

    /// Symbols: `y += a * x`.
    ///
    /// # Panics
    /// If the lengths differ or are not a multiple of [`Field::symbol_granularity`].
    pub fn symbol_axpy(self, a: u8, x: &[u8], y: &mut [u8]) {
        assert_eq!(x.len(), y.len(), "symbol_axpy: slices differ in length");
        self.check_symbol(y.len());
        let k = Kernels::best();
        match a & self.max_element() {
            0 => {}
            1 => (k.xor)(x, y),
            a if self.symbol_granularity() == 1 => (k.map_xor)(&self.tables().packed[a as usize], x, y),
            _ if y.is_empty() => {}
            a => {
                let plane = y.len() / self.q as usize;
                for (j, col) in self.columns(a).into_iter().take(self.q as usize).enumerate() {
                    let xj = &x[j * plane..(j + 1) * plane];
                    for (i, yi) in y.chunks_exact_mut(plane).enumerate() {
                        if col & (1 << i) != 0 {
                            (k.xor)(xj, yi);
                        }
                    }
                }
            }
        }
    }

    /// Symbols: `y *= a`.
    pub fn symbol_scale(self, a: u8, y: &mut [u8]) {
        self.check_symbol(y.len());
        match a & self.max_element() {
            0 => y.fill(0),
            1 => {}
            a if self.symbol_granularity() == 1 => (Kernels::best().map)(&self.tables().packed[a as usize], y),
            a => {
                let x = y.to_vec();
                y.fill(0);
                self.symbol_axpy(a, &x, y);
            }
        }
    }

    /// Symbols: `y += sum a[i] * xs[i]`, the inner loop of encoding and recoding.
    ///
    /// # Panics
    /// As [`Field::axpy_multi`], and on lengths that are not a multiple of
    /// [`Field::symbol_granularity`].
    pub fn symbol_axpy_multi(self, a: &[u8], xs: &[&[u8]], y: &mut [u8]) {
        assert_eq!(a.len(), xs.len(), "symbol_axpy_multi: coefficient and symbol counts differ");
        self.symbol_axpy_sum(a.iter().copied().zip(xs.iter().copied()), y);
    }

    /// Symbols: `y += sum c * x` over the `(c, x)` terms.
    ///
    /// # Panics
    /// As [`Field::axpy_sum`], and on lengths that are not a multiple of
    /// [`Field::symbol_granularity`].
    pub fn symbol_axpy_sum<'a>(self, terms: impl IntoIterator<Item = (u8, &'a [u8])>, y: &mut [u8]) {
        self.check_symbol(y.len());
        if self.symbol_granularity() == 1 {
            sum(terms, y, |c| &self.tables().packed[usize::from(c)]);
        } else {
            for (c, x) in terms {
                self.symbol_axpy(c, x, y);
            }
        }
    }
}

impl Field {
    /// Element vectors: `ys[i] += sum_j a[i * xs.len() + j] * xs[j]`, a matrix product.
    ///
    /// # Panics
    /// If `a` is not `ys.len() x xs.len()`, or lengths differ.
    pub fn matmul(self, a: &[u8], xs: &[&[u8]], ys: &mut [&mut [u8]]) {
        product(self, &self.tables().element, a, xs, ys, true);
    }

    /// Symbols: `ys[i] += sum_j a[i * xs.len() + j] * xs[j]`, a matrix
    /// product. Encoding or decoding a batch of symbols this way reads each
    /// input once per group of outputs instead of once per output.
    ///
    /// # Panics
    /// If `a` is not `ys.len() x xs.len()`, or lengths differ, or are not a
    /// multiple of [`Field::symbol_granularity`].
    pub fn symbol_matmul(self, a: &[u8], xs: &[&[u8]], ys: &mut [&mut [u8]]) {
        self.symbol_product(a, xs, ys, true);
    }

    /// Symbols: `ys[i] = sum_j a[i * xs.len() + j] * xs[j]`, the product of
    /// [`Field::symbol_matmul`] written over the outputs, as encoders want:
    /// GF(2) kernels then neither read the outputs nor need them zeroed.
    ///
    /// # Panics
    /// As [`Field::symbol_matmul`].
    pub fn symbol_matmul_into(self, a: &[u8], xs: &[&[u8]], ys: &mut [&mut [u8]]) {
        self.symbol_product(a, xs, ys, false);
    }

    /// Symbols: `rows[i] = sum_j a[i * n + j] * rows[j]` for a square `a`,
    /// written over the rows it reads: a decoder turning the payloads it
    /// received into the source symbols needs no second buffer. Where
    /// [`Field::in_place_without_copy`] holds, this costs what
    /// [`Field::symbol_matmul_into`] does; elsewhere the rows pass through a
    /// copy, 512 columns at a time.
    ///
    /// # Panics
    /// As [`Field::symbol_matmul`], and if `a` is not `n x n`.
    pub fn symbol_matmul_in_place(self, a: &[u8], rows: &mut [&mut [u8]]) {
        let n = rows.len();
        assert_eq!(a.len(), n * n, "symbol_matmul_in_place: coefficient matrix is not square");
        let Some(len) = rows.first().map(|r| r.len()) else { return };
        assert!(rows.iter().all(|r| r.len() == len), "symbol_matmul_in_place: lengths differ");
        self.check_symbol(len);
        if self.q == 1 && kernels::gf2_matmul_in_place(Kernels::best(), a, rows) {
            return;
        }
        // A block of a row's bytes is a symbol when q divides 8; with bit
        // planes (q in {3, 5, 6, 7}) it is not, and whole rows are copied.
        let block = if self.symbol_granularity() == 1 { 512 } else { len.max(1) };
        // The copy starts a cache line, so that its whole blocks do too:
        // products are bound by loads, and a load across two lines costs two.
        let mut buf = vec![0u8; n * block.min(len) + 63];
        let start = buf.as_ptr().align_offset(64).min(63);
        let copy = &mut buf[start..];
        for off in (0..len).step_by(block) {
            let end = (off + block).min(len);
            let w = end - off;
            let copy = &mut copy[..n * w];
            for (c, r) in copy.chunks_exact_mut(w).zip(rows.iter()) {
                c.copy_from_slice(&r[off..end]);
            }
            let inputs: Vec<&[u8]> = copy.chunks_exact(w).collect();
            let mut outputs: Vec<&mut [u8]> = rows.iter_mut().map(|r| &mut r[off..end]).collect();
            self.symbol_matmul_into(a, &inputs, &mut outputs);
        }
    }

    /// Whether [`Field::symbol_matmul_in_place`] on `n` rows needs no copy:
    /// over GF(2), on the bit-sliced AVX-512 product.
    pub fn in_place_without_copy(self, n: usize) -> bool {
        self.q == 1 && kernels::gf2_in_place_without_copy(Kernels::best(), n)
    }

    fn symbol_product(self, a: &[u8], xs: &[&[u8]], ys: &mut [&mut [u8]], accumulate: bool) {
        if let Some(y) = ys.first() {
            self.check_symbol(y.len());
        }
        if self.symbol_granularity() == 1 {
            product(self, &self.tables().packed, a, xs, ys, accumulate);
        } else {
            assert_eq!(a.len(), xs.len() * ys.len(), "symbol_matmul: coefficient matrix has the wrong size");
            for (row, y) in a.chunks_exact(xs.len().max(1)).zip(ys.iter_mut()) {
                if !accumulate {
                    y.fill(0);
                }
                self.symbol_axpy_multi(row, xs, y);
            }
        }
    }
}

/// `ys (+)= a xs`, adding to the outputs if `accumulate`, with `table` the
/// field's maps of its elements.
fn product(field: Field, table: &[ByteMap; 256], a: &[u8], xs: &[&[u8]], ys: &mut [&mut [u8]], accumulate: bool) {
    assert_eq!(a.len(), xs.len() * ys.len(), "matmul: coefficient matrix has the wrong size");
    let Some(len) = ys.first().map(|y| y.len()) else { return };
    assert!(xs.iter().all(|x| x.len() == len) && ys.iter().all(|y| y.len() == len), "matmul: lengths differ");
    // GF(2) only adds rows, which tables of row sums do faster than maps.
    if field.q == 1 {
        return kernels::gf2_matmul(Kernels::best(), a, xs, ys, accumulate);
    }
    if xs.is_empty() {
        if !accumulate {
            ys.iter_mut().for_each(|y| y.fill(0));
        }
        return;
    }
    // The kernel turns a band's maps into offsets on its stack, which hold
    // 16 outputs' up to g = 256; bands of 32 or of every output measured
    // no different.
    const BAND: usize = 16;
    let n = xs.len();
    for (rows, band) in a.chunks(BAND * n).zip(ys.chunks_mut(BAND)) {
        (Kernels::best().map_matmul)(MapMatrix { table, indices: rows }, xs, band, accumulate);
    }
}

/// Shared body of the fan-outs: skips zero coefficients and hands the
/// kernel batches of maps that fit on the stack.
fn fanout<'a>(x: &[u8], terms: impl IntoIterator<Item = (u8, &'a mut [u8])>, map: impl Fn(u8) -> &'static ByteMap) {
    const BATCH: usize = 16;
    let mut maps: [&ByteMap; BATCH] = [&ByteMap::ZERO; BATCH];
    let mut rows: [&mut [u8]; BATCH] = std::array::from_fn(|_| <&mut [u8]>::default());
    let mut n = 0;
    let k = Kernels::best();
    for (c, y) in terms {
        assert_eq!(x.len(), y.len(), "axpy_fanout: row differs in length from the input");
        let m = map(c);
        if m.affine == 0 {
            continue;
        }
        maps[n] = m;
        rows[n] = y;
        n += 1;
        if n == BATCH {
            (k.map_xor_fanout)(&maps, x, &mut rows);
            n = 0;
        }
    }
    if n > 0 {
        (k.map_xor_fanout)(&maps[..n], x, &mut rows[..n]);
    }
}

/// Shared body of the multi-row operations: skips zero coefficients and
/// hands the kernel batches of maps that fit on the stack.
fn sum<'a>(terms: impl IntoIterator<Item = (u8, &'a [u8])>, y: &mut [u8], map: impl Fn(u8) -> &'static ByteMap) {
    const BATCH: usize = 16;
    let mut maps: [&ByteMap; BATCH] = [&ByteMap::ZERO; BATCH];
    let mut rows: [&[u8]; BATCH] = [&[]; BATCH];
    let mut n = 0;
    let k = Kernels::best();
    for (c, x) in terms {
        assert_eq!(x.len(), y.len(), "axpy_sum: row differs in length from the output");
        let m = map(c);
        if m.affine == 0 {
            continue;
        }
        maps[n] = m;
        rows[n] = x;
        n += 1;
        if n == BATCH {
            (k.map_xor_multi)(&maps, &rows, y);
            n = 0;
        }
    }
    if n > 0 {
        (k.map_xor_multi)(&maps[..n], &rows[..n], y);
    }
}

#[cfg(test)]
mod tests;
