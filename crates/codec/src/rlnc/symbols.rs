//! Symbol storage aligned to cache lines.

use super::CodecError;
use crate::alloc;

/// One cache line: every symbol starts one.
const LINE: usize = 64;

/// A list of up to `capacity` symbols of one size, each starting a cache line.
///
/// At their natural stride most 1500-byte symbols start mid-line, and then
/// every 64-byte vector load straddles two lines. L1 serves one line per
/// load, so the products, which are bound by loads, would run at about
/// two-thirds of the speed they reach on aligned rows.
///
/// The buffer is a plain allocation aligned by hand rather than one of
/// 64-byte alignment: the allocator serves those by splitting a larger
/// block, and the small pieces it frees cost a consolidation pass at the
/// next large allocation, which a decoder per generation makes every time.
pub(crate) struct Symbols {
    /// Initialised up to `start + len * stride`: the bytes before `start`
    /// are zero, and symbol `i` is at `start + i * stride`.
    buffer: Vec<u8>,
    /// The first cache-line boundary in `buffer`.
    start: usize,
    len: usize,
    capacity: usize,
    symbol_bytes: usize,
    /// Bytes from one symbol to the next: the symbol size in whole lines.
    stride: usize,
}

impl Symbols {
    /// Room for `capacity` symbols of `symbol_bytes` bytes, holding none; an
    /// error, not an abort, if that much memory cannot be had.
    pub(crate) fn with_capacity(symbol_bytes: usize, capacity: usize) -> Result<Symbols, CodecError> {
        let too_large = || CodecError::GenerationTooLarge { symbols: capacity, symbol_bytes };
        let stride = symbol_bytes.checked_next_multiple_of(LINE).ok_or_else(too_large)?;
        let room = capacity.checked_mul(stride).ok_or_else(too_large)?;
        let bytes = if room == 0 { 0 } else { room.checked_add(LINE - 1).ok_or_else(too_large)? };
        let buffer = alloc::try_with_capacity::<u8>(bytes).map_err(|r| CodecError::OutOfMemory {
            bytes: r.bytes,
            symbols: capacity,
            symbol_bytes,
        })?;
        let (buffer, start) = aligned(buffer);
        Ok(Symbols { buffer, start, len: 0, capacity, symbol_bytes, stride })
    }

    /// `count` zero symbols (none if symbols have no bytes, which are not
    /// stored, as `push` does not store them).
    pub(crate) fn zeroed(symbol_bytes: usize, count: usize) -> Result<Symbols, CodecError> {
        let mut symbols = Symbols::with_capacity(symbol_bytes, count)?;
        if symbols.stride > 0 {
            symbols.buffer.resize(symbols.start + count * symbols.stride, 0);
            symbols.len = count;
        }
        Ok(symbols)
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// How many symbols fit.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    pub(crate) fn clear(&mut self) {
        self.buffer.truncate(self.start);
        self.len = 0;
    }

    /// Appends a copy of `symbol`, which has the symbol size.
    pub(crate) fn push(&mut self, symbol: &[u8]) {
        assert_eq!(symbol.len(), self.symbol_bytes, "a symbol of another size");
        assert!(self.len < self.capacity, "more symbols than the capacity");
        if self.stride == 0 {
            return;
        }
        // Written once, in place: zeroing the new line first would write
        // the symbol's bytes twice.
        let at = self.buffer.len();
        // SAFETY: the buffer was allocated with room for `capacity` symbols
        // past `start`, and `len < capacity`, so the `stride` bytes from
        // `at` are in the allocation; the copy and the zero fill initialise
        // all of them, as `set_len` requires.
        unsafe {
            let to = self.buffer.as_mut_ptr().add(at);
            std::ptr::copy_nonoverlapping(symbol.as_ptr(), to, self.symbol_bytes);
            to.add(self.symbol_bytes).write_bytes(0, self.stride - self.symbol_bytes);
            self.buffer.set_len(at + self.stride);
        }
        self.len += 1;
    }

    /// Symbol `i`; any `i` if the symbols are empty.
    pub(crate) fn get(&self, i: usize) -> &[u8] {
        &self.buffer[self.start + i * self.stride..][..self.symbol_bytes]
    }

    pub(crate) fn get_mut(&mut self, i: usize) -> &mut [u8] {
        &mut self.buffer[self.start + i * self.stride..][..self.symbol_bytes]
    }

    /// Every symbol, in order.
    pub(crate) fn rows(&self) -> Vec<&[u8]> {
        (0..self.len).map(|i| self.get(i)).collect()
    }

    /// Every symbol, in order, for writing.
    pub(crate) fn rows_mut(&mut self) -> Vec<&mut [u8]> {
        let (stride, size) = (self.stride, self.symbol_bytes);
        if stride == 0 {
            return Vec::new();
        }
        self.buffer[self.start..].chunks_exact_mut(stride).map(|row| &mut row[..size]).collect()
    }
}

/// `buffer`, empty, filled with zeros up to its first cache-line boundary,
/// and where that is (0 if it has no room).
fn aligned(mut buffer: Vec<u8>) -> (Vec<u8>, usize) {
    let start = if buffer.capacity() == 0 { 0 } else { buffer.as_ptr().align_offset(LINE) };
    buffer.resize(start, 0);
    (buffer, start)
}

/// A copy aligned in its own allocation, with the same capacity.
impl Clone for Symbols {
    fn clone(&self) -> Symbols {
        // A copy aborts if memory runs out, as every `Clone` of a collection does.
        let (mut buffer, start) = aligned(Vec::with_capacity(self.buffer.capacity()));
        buffer.extend_from_slice(&self.buffer[self.start..]);
        Symbols { buffer, start, ..*self }
    }
}

impl std::fmt::Debug for Symbols {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Symbols").field("len", &self.len).field("symbol_bytes", &self.symbol_bytes).finish()
    }
}
#[cfg(test)]
mod tests {
    use super::Symbols;

    #[test]
    fn symbols_start_cache_lines_and_keep_their_bytes() {
        for size in [0usize, 1, 63, 64, 65, 1500] {
            let mut s = Symbols::with_capacity(size, 3).unwrap();
            let data: Vec<Vec<u8>> =
                (0..3u8).map(|k| (0..size).map(|b| (b as u8).wrapping_mul(7) ^ k).collect()).collect();
            for d in &data {
                s.push(d);
            }
            assert_eq!(s.len(), if size == 0 { 0 } else { 3 });
            // A copy has an allocation of its own, aligned again.
            let copy = s.clone();
            for symbols in [&s, &copy] {
                for (i, row) in symbols.rows().iter().enumerate() {
                    assert_eq!(row.as_ptr() as usize % 64, 0);
                    assert_eq!(*row, &data[i][..]);
                }
            }
            s.rows_mut().iter_mut().for_each(|r| r.fill(9));
            assert!(s.rows().iter().all(|r| r.iter().all(|&b| b == 9)));
            s.clear();
            assert_eq!(s.len(), 0);
            s.push(&data[2]);
            assert_eq!(s.rows().first().copied(), (size > 0).then_some(&data[2][..]));
            let zeros = Symbols::zeroed(size, 2).unwrap();
            assert_eq!((zeros.len(), zeros.capacity()), (if size == 0 { 0 } else { 2 }, 2));
            assert!(zeros.rows().iter().all(|r| (r.as_ptr() as usize).is_multiple_of(64) && r.iter().all(|&b| b == 0)));
        }
    }
}
