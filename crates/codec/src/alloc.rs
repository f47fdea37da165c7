//! Buffers sized by a caller's parameters. A constructor allocates them
//! with these, so that a size the machine cannot hold is an error it
//! returns instead of an abort of the whole process.
//!
//! They allocate as any other vector does, never asking for zeroed memory:
//! `vec![0; len]` asks glibc for `calloc`, which it serves past its thread
//! cache, while frees go into that cache. Each decoder made and dropped
//! would then overflow the cache into the fast bins, and glibc consolidates
//! those whenever a large block (a generation's payloads) is freed: about a
//! tenth of a 16-symbol GF(2) decode.

/// An allocation the allocator refused, or whose size overflows `usize`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Refused {
    /// The bytes asked for, `usize::MAX` if they overflow it.
    pub(crate) bytes: usize,
}

/// An empty vector with room for exactly `len` values.
pub(crate) fn try_with_capacity<T>(len: usize) -> Result<Vec<T>, Refused> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| Refused { bytes: len.saturating_mul(size_of::<T>()) })?;
    Ok(v)
}

/// `len` default values (zeros).
pub(crate) fn try_zeroed<T: Default + Clone>(len: usize) -> Result<Vec<T>, Refused> {
    let mut v = try_with_capacity(len)?;
    v.resize(len, T::default());
    Ok(v)
}

/// `len` default values, for buffers of a few words a symbol, or no larger
/// than ones a constructor has already allocated: like every growing
/// collection, it aborts if even that fails.
pub(crate) fn zeroed<T: Default + Clone>(len: usize) -> Vec<T> {
    let mut v = Vec::with_capacity(len);
    v.resize(len, T::default());
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_past_memory_or_usize_are_refused() {
        assert_eq!(try_zeroed::<u8>(3), Ok(vec![0; 3]));
        assert_eq!(try_with_capacity::<u64>(usize::MAX).unwrap_err(), Refused { bytes: usize::MAX });
        // Past isize::MAX no allocator is asked.
        assert_eq!(try_zeroed::<u8>(usize::MAX / 2 + 1).unwrap_err(), Refused { bytes: usize::MAX / 2 + 1 });
        // 2^46 bytes (64 TiB): more than the machine has, refused by the
        // allocator, or (under `vm.overcommit_memory = 1`) given as
        // untouched address space.
        let huge = 1usize << 46;
        match try_with_capacity::<u8>(huge) {
            Ok(v) => assert!(v.capacity() >= huge),
            Err(refused) => assert_eq!(refused, Refused { bytes: huge }),
        }
    }
}
