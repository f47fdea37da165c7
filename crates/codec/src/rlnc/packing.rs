//! How a decoder stores rows of field elements.
//!
//! When q divides 8, a row is packed like a symbol: 8/q elements to a byte,
//! low bits first. Row operations are then symbol operations, and a GF(2)
//! row of g coefficients takes g/8 bytes: elimination moves an eighth of
//! the data it would move at one element per byte. Other fields keep one
//! element per byte, where row operations are element operations.

use ncmesh_gf::Field;

/// The element layout of a decoder's rows over one field.
#[derive(Clone, Copy, Debug)]
pub(super) struct Packing {
    field: Field,
    /// Elements per byte: 8/q when q divides 8, else 1 (a power of two).
    per_byte: usize,
    /// log2 of `per_byte`, so that finding an element takes no division.
    per_byte_log2: u32,
    /// Bits per element slot.
    bits: usize,
}

impl Packing {
    pub fn new(field: Field) -> Packing {
        let q = field.degree() as usize;
        let per_byte = if 8 % q == 0 { 8 / q } else { 1 };
        Packing { field, per_byte, per_byte_log2: per_byte.trailing_zeros(), bits: 8 / per_byte }
    }

    /// A row length of `bytes` rounded up to what the row operations work
    /// in: words for short GF(2) rows, else whole vector registers, which
    /// need no masked loads (slow when they follow a store to the same row).
    pub fn padded(self, bytes: usize) -> usize {
        if self.xors_words(bytes) {
            bytes.next_multiple_of(8)
        } else {
            bytes.next_multiple_of(64)
        }
    }

    /// GF(2) rows of a few words are XORed in a plain loop: cheaper than
    /// handing them to the table kernels.
    fn xors_words(self, bytes: usize) -> bool {
        self.per_byte == 8 && bytes <= 16
    }

    /// Bytes holding `elements` elements.
    pub fn bytes(self, elements: usize) -> usize {
        elements.div_ceil(self.per_byte)
    }

    fn slot(self, j: usize) -> (usize, usize) {
        (j >> self.per_byte_log2, (j & (self.per_byte - 1)) * self.bits)
    }

    /// Element `j` of a packed row.
    pub fn get(self, row: &[u8], j: usize) -> u8 {
        let (byte, shift) = self.slot(j);
        (row[byte] >> shift) & self.field.max_element()
    }

    /// Sets element `j` of a packed row.
    pub fn set(self, row: &mut [u8], j: usize, value: u8) {
        let (byte, shift) = self.slot(j);
        let mask = self.field.max_element() << shift;
        row[byte] = (row[byte] & !mask) | ((value << shift) & mask);
    }

    /// Sets element `j` of a row whose byte holding it is zero, with a plain
    /// store: reading the byte back right after the row was cleared would
    /// wait for the clearing store.
    pub fn set_in_zeroed(self, row: &mut [u8], j: usize, value: u8) {
        let (byte, shift) = self.slot(j);
        row[byte] = (value & self.field.max_element()) << shift;
    }

    /// Packs one element per byte from `elements` into `row`.
    pub fn pack(self, elements: &[u8], row: &mut [u8]) {
        if self.per_byte == 1 {
            return row[..elements.len()].copy_from_slice(elements);
        }
        if self.per_byte == 8 {
            // Gathers the low bits of eight bytes with one multiplication.
            let mut chunks = elements.chunks_exact(8);
            for (out, chunk) in row.iter_mut().zip(&mut chunks) {
                let x = u64::from_le_bytes(chunk.try_into().expect("eight bytes")) & 0x0101_0101_0101_0101;
                *out = (x.wrapping_mul(0x0102_0408_1020_4080) >> 56) as u8;
            }
            let done = elements.len() - chunks.remainder().len();
            row[done / 8..self.bytes(elements.len())].fill(0);
            for (j, &e) in chunks.remainder().iter().enumerate() {
                self.set(row, done + j, e);
            }
            return;
        }
        row[..self.bytes(elements.len())].fill(0);
        for (j, &e) in elements.iter().enumerate() {
            self.set(row, j, e);
        }
    }

    /// Unpacks the first `elements.len()` elements of `row`, one per byte.
    pub fn unpack(self, row: &[u8], elements: &mut [u8]) {
        if self.per_byte == 1 {
            return elements.copy_from_slice(&row[..elements.len()]);
        }
        if self.per_byte == 8 {
            // Spreads bit k of a byte to byte k: isolate each bit in its own
            // byte, then carry it up to bit 7 and shift it down.
            let done = elements.len() / 8 * 8;
            for (chunk, &b) in elements.chunks_exact_mut(8).zip(row) {
                let x = (b as u64).wrapping_mul(0x0101_0101_0101_0101) & 0x8040_2010_0804_0201;
                let bits = ((x + 0x0040_6070_787C_7E7F) >> 7) & 0x0101_0101_0101_0101;
                chunk.copy_from_slice(&bits.to_le_bytes());
            }
            for (j, e) in elements.iter_mut().enumerate().skip(done) {
                *e = self.get(row, j);
            }
            return;
        }
        for (j, e) in elements.iter_mut().enumerate() {
            *e = self.get(row, j);
        }
    }

    /// The first non-zero element among the first `elements` of `row`.
    pub fn first_nonzero(self, row: &[u8], elements: usize) -> Option<usize> {
        let byte = row[..self.bytes(elements)].iter().position(|&b| b != 0)?;
        let j = byte * self.per_byte + row[byte].trailing_zeros() as usize / self.bits;
        (j < elements).then_some(j)
    }

    /// How many of the first `elements` of `row` are non-zero.
    pub fn count_nonzero(self, row: &[u8], elements: usize) -> usize {
        let row = &row[..self.bytes(elements)];
        match self.per_byte {
            1 => row.iter().filter(|&&b| b != 0).count(),
            // A row's bits past its last element are zero.
            8 => row.iter().map(|b| b.count_ones() as usize).sum(),
            _ => {
                let slots =
                    |b: u8| (0..self.per_byte).filter(move |s| (b >> (s * self.bits)) & self.field.max_element() != 0);
                row.iter().map(|&b| slots(b).count()).sum()
            }
        }
    }

    /// Whether every element of `row` but element `j` is zero.
    pub fn is_unit_except(self, row: &[u8], j: usize) -> bool {
        let (at, shift) = self.slot(j);
        let mask = self.field.max_element() << shift;
        row.iter().enumerate().all(|(k, &b)| if k == at { b & !mask == 0 } else { b == 0 })
    }

    /// `y += sum c * x` over packed rows.
    pub fn axpy_sum<'a>(self, terms: impl IntoIterator<Item = (u8, &'a [u8])>, y: &mut [u8]) {
        if self.xors_words(y.len()) {
            xor_sum(terms.into_iter().filter(|&(c, _)| c & 1 != 0).map(|(_, x)| x), y);
        } else if self.per_byte == 1 {
            self.field.axpy_sum(terms, y)
        } else {
            self.field.symbol_axpy_sum(terms, y)
        }
    }

    /// `y += c * x` for every `(c, y)`: one new pivot cleared from many rows.
    pub fn axpy_fanout<'a>(self, x: &[u8], terms: impl IntoIterator<Item = (u8, &'a mut [u8])>) {
        if self.xors_words(x.len()) {
            terms.into_iter().filter(|&(c, _)| c & 1 != 0).for_each(|(_, y)| xor_into(x, y));
        } else if self.per_byte == 1 {
            self.field.axpy_fanout(x, terms)
        } else {
            terms.into_iter().for_each(|(c, y)| self.field.symbol_axpy(c, x, y))
        }
    }

    /// `y *= c` over a packed row.
    pub fn scale(self, c: u8, y: &mut [u8]) {
        if self.per_byte == 8 {
            if c & 1 == 0 {
                y.fill(0);
            }
        } else if self.per_byte == 1 {
            self.field.scale(c, y)
        } else {
            self.field.symbol_scale(c, y)
        }
    }

    /// `ys[i] += sum_j a[i, j] * xs[j]` over packed rows; `a` is one element a byte.
    pub fn matmul(self, a: &[u8], xs: &[&[u8]], ys: &mut [&mut [u8]]) {
        if self.per_byte == 1 {
            self.field.matmul(a, xs, ys)
        } else {
            self.field.symbol_matmul(a, xs, ys)
        }
    }
}

/// `y ^= sum xs` for rows of at most 16 bytes, with the sum in registers
/// when the rows are whole words, as a decoder's padded rows are.
fn xor_sum<'a>(xs: impl Iterator<Item = &'a [u8]>, y: &mut [u8]) {
    match y.len() {
        8 => xor_words::<1>(xs, y),
        16 => xor_words::<2>(xs, y),
        _ => xs.for_each(|x| xor_into(x, y)),
    }
}

fn xor_words<'a, const N: usize>(xs: impl Iterator<Item = &'a [u8]>, y: &mut [u8]) {
    let mut acc: [u64; N] = std::array::from_fn(|k| word_at(y, k));
    for x in xs {
        for (k, a) in acc.iter_mut().enumerate() {
            *a ^= word_at(x, k);
        }
    }
    for (k, &a) in acc.iter().enumerate() {
        set_word(y, k, a);
    }
}

/// `y ^= x`, eight bytes at a time.
fn xor_into(x: &[u8], y: &mut [u8]) {
    let words = y.len() / 8 * 8;
    xor_masked(&x[..words], &mut y[..words], !0);
    y[words..].iter_mut().zip(&x[words..]).for_each(|(a, b)| *a ^= b);
}

/// Word `k` of a row of whole words, little-endian as rows are packed.
pub(super) fn word_at(row: &[u8], k: usize) -> u64 {
    u64::from_le_bytes(row[8 * k..8 * k + 8].try_into().expect("eight bytes"))
}

pub(super) fn set_word(row: &mut [u8], k: usize, word: u64) {
    row[8 * k..8 * k + 8].copy_from_slice(&word.to_le_bytes());
}

/// `y ^= x & mask` over rows of whole words.
pub(super) fn xor_masked(x: &[u8], y: &mut [u8], mask: u64) {
    for (a, b) in y.chunks_exact_mut(8).zip(x.chunks_exact(8)) {
        let v = u64::from_ne_bytes((&*a).try_into().expect("eight bytes"))
            ^ (u64::from_ne_bytes(b.try_into().expect("eight bytes")) & mask);
        a.copy_from_slice(&v.to_ne_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prng::SplitMix64;

    #[test]
    fn packing_round_trips_and_matches_symbol_arithmetic() {
        let mut rng = SplitMix64::new(5);
        for q in 1..=8 {
            let field = Field::new(q).unwrap();
            let p = Packing::new(field);
            // Under Miri up to two whole words and a part.
            for n in [0usize, 1, 7, 8, 9, 63, 64, 65, 100, 128, 600].into_iter().filter(|&n| !cfg!(miri) || n <= 128) {
                let mut a = vec![0u8; n];
                rng.fill_bytes(&mut a);
                a.iter_mut().for_each(|e| *e &= field.max_element());
                let mut row = vec![0xA5u8; p.bytes(n)];
                p.pack(&a, &mut row);
                let mut back = vec![0u8; n];
                p.unpack(&row, &mut back);
                assert_eq!(back, a, "{field:?} n={n}");
                assert!((0..n).all(|j| p.get(&row, j) == a[j]));
                assert_eq!(p.first_nonzero(&row, n), a.iter().position(|&e| e != 0), "{field:?} n={n}");
                assert_eq!(p.count_nonzero(&row, n), a.iter().filter(|&&e| e != 0).count(), "{field:?} n={n}");
                // Packed arithmetic agrees with element arithmetic.
                let mut b = vec![0u8; n];
                rng.fill_bytes(&mut b);
                b.iter_mut().for_each(|e| *e &= field.max_element());
                let c = (rng.next_u64() as u8) & field.max_element();
                let mut want = b.clone();
                field.axpy(c, &a, &mut want);
                let mut got = vec![0u8; p.bytes(n)];
                p.pack(&b, &mut got);
                let mut summed = got.clone();
                p.axpy_fanout(&row, [(c, got.as_mut_slice())]);
                p.unpack(&got, &mut back);
                assert_eq!(back, want, "{field:?} n={n} c={c}");
                p.axpy_sum([(c, row.as_slice()), (0, got.as_slice())], &mut summed);
                p.unpack(&summed, &mut back);
                assert_eq!(back, want, "{field:?} n={n} c={c} (sum)");
                let mut scaled = row.clone();
                p.scale(c, &mut scaled);
                p.unpack(&scaled, &mut back);
                let mut want = a.clone();
                field.scale(c, &mut want);
                assert_eq!(back, want, "{field:?} n={n} c={c} (scale)");
            }
            let mut unit = vec![0u8; p.bytes(20)];
            p.set(&mut unit, 13, 1);
            assert!(p.is_unit_except(&unit, 13));
            assert!(!p.is_unit_except(&unit, 12));
        }
    }
}
