//! COPE-style inter-flow coding: the XOR of native packets of different
//! flows, each of which the intended next hop must be able to recover from
//! the natives it already holds (Katti et al.; seed 001 section 3).

use thiserror::Error;

/// Why an XOR combination cannot be decoded.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum XorError {
    /// Exactly one native must be unknown to the decoder.
    #[error("{unknown} natives of the combination are unknown; exactly one must be")]
    NotOneUnknown { unknown: usize },
    /// A known native is longer than the combination.
    #[error("native {id} has {len} bytes but the combination only {coded}")]
    NativeTooLong { id: u64, len: usize, coded: usize },
}

/// An XOR of natives, each named by an identifier (COPE uses the packet's
/// flow and sequence number) and padded with zeros to the longest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Combination {
    /// `(id, length)` of each native, in the order they were combined.
    pub natives: Vec<(u64, usize)>,
    pub payload: Vec<u8>,
}

impl Combination {
    /// XORs the natives together.
    pub fn encode(natives: &[(u64, &[u8])]) -> Combination {
        let len = natives.iter().map(|(_, p)| p.len()).max().unwrap_or(0);
        let mut payload = vec![0u8; len];
        for (_, p) in natives {
            ncmesh_gf::xor(p, &mut payload[..p.len()]);
        }
        Combination { natives: natives.iter().map(|&(id, p)| (id, p.len())).collect(), payload }
    }

    /// Recovers the one native for which `known` returns `None`.
    pub fn decode<'a>(&self, known: impl Fn(u64) -> Option<&'a [u8]>) -> Result<(u64, Vec<u8>), XorError> {
        let mut missing = None;
        let mut unknown = 0;
        let mut out = self.payload.clone();
        for &(id, _) in &self.natives {
            match known(id) {
                Some(p) if p.len() > out.len() => {
                    return Err(XorError::NativeTooLong { id, len: p.len(), coded: out.len() })
                }
                Some(p) => ncmesh_gf::xor(p, &mut out[..p.len()]),
                None => {
                    unknown += 1;
                    missing = Some(id);
                }
            }
        }
        match (unknown, missing) {
            (1, Some(id)) => {
                let len = self.natives.iter().find(|n| n.0 == id).map_or(0, |n| n.1);
                out.truncate(len);
                Ok((id, out))
            }
            _ => Err(XorError::NotOneUnknown { unknown }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_receiver_recovers_what_it_lacks() {
        let a = vec![1u8, 2, 3, 4, 5];
        let b = vec![9u8, 8, 7];
        let c = Combination::encode(&[(1, &a), (2, &b)]);
        assert_eq!(c.payload, vec![1 ^ 9, 2 ^ 8, 3 ^ 7, 4, 5]);
        assert_eq!(c.decode(|id| (id == 1).then_some(a.as_slice())), Ok((2, b.clone())));
        assert_eq!(c.decode(|id| (id == 2).then_some(b.as_slice())), Ok((1, a.clone())));
        assert_eq!(c.decode(|_| None), Err(XorError::NotOneUnknown { unknown: 2 }));
        let long = vec![0u8; 9];
        assert!(matches!(c.decode(|id| (id == 1).then_some(long.as_slice())), Err(XorError::NativeTooLong { .. })));
    }
}
