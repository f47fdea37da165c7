//! Symbol storage aligned to cache lines.

/// One cache line. Storing symbols as whole lines aligns each to 64 bytes.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; LINE]);

const LINE: usize = 64;

/// A list of symbols of one size, each starting a cache line.
///
/// At their natural stride most 1500-byte symbols start mid-line, and then
/// every 64-byte vector load straddles two lines. L1 serves one line per
/// load, so the products, which are bound by loads, would run at about
/// two-thirds of the speed they reach on aligned rows.
#[derive(Clone)]
pub(crate) struct Symbols {
    lines: Vec<Line>,
    symbol_bytes: usize,
    /// Lines per symbol.
    stride: usize,
}

impl Symbols {
    /// Room for `capacity` symbols of `symbol_bytes` bytes, holding none.
    pub(crate) fn with_capacity(symbol_bytes: usize, capacity: usize) -> Symbols {
        let stride = symbol_bytes.div_ceil(LINE);
        Symbols { lines: Vec::with_capacity(capacity * stride), symbol_bytes, stride }
    }

    /// `count` zero symbols.
    pub(crate) fn zeroed(symbol_bytes: usize, count: usize) -> Symbols {
        let mut symbols = Symbols::with_capacity(symbol_bytes, count);
        symbols.lines.resize(count * symbols.stride, Line([0; LINE]));
        symbols
    }

    pub(crate) fn len(&self) -> usize {
        self.lines.len().checked_div(self.stride).unwrap_or(0)
    }

    /// How many symbols fit without reallocating.
    pub(crate) fn capacity(&self) -> usize {
        self.lines.capacity().checked_div(self.stride).unwrap_or(0)
    }

    pub(crate) fn clear(&mut self) {
        self.lines.clear();
    }

    /// Appends a copy of `symbol`, which has the symbol size.
    pub(crate) fn push(&mut self, symbol: &[u8]) {
        assert_eq!(symbol.len(), self.symbol_bytes, "a symbol of another size");
        if self.stride == 0 {
            return;
        }
        // Written once, in place: zeroing the new lines first would write
        // the symbol's bytes twice.
        self.lines.reserve(self.stride);
        let (at, room) = (self.lines.len(), self.stride * LINE);
        // SAFETY: `reserve` made room for `stride` more lines past `at`, so
        // the `room` bytes from there are in the allocation; the copy and
        // the zero fill initialise all of them, as `set_len` requires.
        unsafe {
            let start = self.lines.as_mut_ptr().add(at).cast::<u8>();
            std::ptr::copy_nonoverlapping(symbol.as_ptr(), start, self.symbol_bytes);
            start.add(self.symbol_bytes).write_bytes(0, room - self.symbol_bytes);
            self.lines.set_len(at + self.stride);
        }
    }

    pub(crate) fn get(&self, i: usize) -> &[u8] {
        &self.bytes()[i * self.stride * LINE..][..self.symbol_bytes]
    }

    pub(crate) fn get_mut(&mut self, i: usize) -> &mut [u8] {
        let (stride, size) = (self.stride, self.symbol_bytes);
        &mut self.bytes_mut()[i * stride * LINE..][..size]
    }

    /// Every symbol, in order.
    pub(crate) fn rows(&self) -> Vec<&[u8]> {
        (0..self.len()).map(|i| self.get(i)).collect()
    }

    /// Every symbol, in order, for writing.
    pub(crate) fn rows_mut(&mut self) -> Vec<&mut [u8]> {
        let (stride, size) = (self.stride * LINE, self.symbol_bytes);
        if stride == 0 {
            return Vec::new();
        }
        self.bytes_mut().chunks_exact_mut(stride).map(|row| &mut row[..size]).collect()
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: `Line` is `repr(C)` around a byte array, so the lines are
        // `LINE` initialised bytes each, with no padding between them.
        unsafe { std::slice::from_raw_parts(self.lines.as_ptr().cast(), self.lines.len() * LINE) }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as for `bytes`; the borrow of `self` is exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.lines.as_mut_ptr().cast(), self.lines.len() * LINE) }
    }
}

impl std::fmt::Debug for Symbols {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Symbols").field("len", &self.len()).field("symbol_bytes", &self.symbol_bytes).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::Symbols;

    #[test]
    fn symbols_start_cache_lines_and_keep_their_bytes() {
        for size in [0usize, 1, 63, 64, 65, 1500] {
            let mut s = Symbols::with_capacity(size, 3);
            let data: Vec<Vec<u8>> = (0..3u8).map(|k| (0..size).map(|b| (b as u8).wrapping_mul(7) ^ k).collect()).collect();
            for d in &data {
                s.push(d);
            }
            assert_eq!(s.len(), if size == 0 { 0 } else { 3 });
            for (i, row) in s.rows().iter().enumerate() {
                assert_eq!(row.as_ptr() as usize % 64, 0);
                assert_eq!(*row, &data[i][..]);
            }
            s.rows_mut().iter_mut().for_each(|r| r.fill(9));
            assert!(s.rows().iter().all(|r| r.iter().all(|&b| b == 9)));
            s.clear();
            assert_eq!(s.len(), 0);
        }
    }
}
