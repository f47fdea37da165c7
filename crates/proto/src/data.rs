//! What a message carries: real bytes, or, in virtual-payload runs, what
//! stands for them: how many bytes and where they sit in the flow's
//! content, or which packets a coded symbol combines.

use std::sync::Arc;

/// A message's data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Data {
    /// `len` bytes of the flow's content from `offset`, not materialised.
    /// Virtual-payload runs move only this; what the bytes would be is a
    /// function of the flow and the offset, so a receiver can still check
    /// the order of what it is delivered.
    Virtual { len: u32, offset: u64 },
    /// The bytes themselves.
    Real(Vec<u8>),
}

impl Data {
    pub const EMPTY: Data = Data::Virtual { len: 0, offset: 0 };

    pub fn len(&self) -> usize {
        match self {
            Data::Virtual { len, .. } => *len as usize,
            Data::Real(b) => b.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes, if they are real.
    pub fn bytes(&self) -> Option<&[u8]> {
        match self {
            Data::Real(b) => Some(b),
            Data::Virtual { len: 0, .. } => Some(&[]),
            Data::Virtual { .. } => None,
        }
    }

    /// Bytes `from..to` of this data, the offset moved along for virtual data.
    pub fn slice(&self, from: usize, to: usize) -> Data {
        debug_assert!(from <= to && to <= self.len());
        match self {
            Data::Virtual { offset, .. } => Data::Virtual { len: (to - from) as u32, offset: offset + from as u64 },
            Data::Real(b) => Data::Real(b[from..to].to_vec()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_keep_their_place_in_the_content() {
        assert_eq!(Data::Virtual { len: 10, offset: 100 }.slice(3, 7), Data::Virtual { len: 4, offset: 103 });
        assert_eq!(Data::Real(b"abcdef".to_vec()).slice(1, 3), Data::Real(b"bc".to_vec()));
        assert_eq!(Data::EMPTY.bytes(), Some(&[][..]));
        assert_eq!(Data::Virtual { len: 1, offset: 0 }.bytes(), None);
    }
}

/// A coded payload: its bytes, or in virtual-payload runs its length and
/// the messages it combines (TCP/NC's segments, TCP-HONC's packets),
/// standing for what decoding would rebuild.
#[derive(Clone, Debug)]
pub enum Symbol<T> {
    Real(Vec<u8>),
    Virtual { len: usize, members: Arc<[T]> },
}

impl<T> Symbol<T> {
    pub fn len(&self) -> usize {
        match self {
            Symbol::Real(b) => b.len(),
            Symbol::Virtual { len, .. } => *len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes a codec works on: the symbol's, or none for a virtual one.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Symbol::Real(b) => b,
            Symbol::Virtual { .. } => &[],
        }
    }
}
