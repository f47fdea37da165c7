//! Network codes for coded TCP over lossy mesh networks.
//!
//! - [`rlnc`]: random linear network coding over GF(2^q): block [`rlnc::Encoder`],
//!   progressive [`rlnc::Decoder`] with "seen" tracking, [`rlnc::Recoder`], and the
//!   sliding-window code of TCP/NC ([`rlnc::sliding`]).
//! - [`xor`]: COPE-style XOR combinations of packets from different flows.
//! - [`lt`]: LT codes with the Ideal and Robust Soliton distributions.
//! - [`fountain`]: fountain codes behind one trait (LT, the random linear
//!   fountain), as TCP-Forward codes its windows.
//! - [`wire`]: the versioned coded-symbol wire format.
//!
//! A codec built with `symbol_bytes == 0` carries no payload: only coefficient
//! vectors are tracked. Rank and decodability depend only on them, so a
//! simulation can run the very same code without moving payload bytes.

mod alloc;
pub mod coefficients;
pub mod fountain;
pub mod lt;
pub mod prng;
pub mod rlnc;
pub mod wire;
pub mod xor;

pub use ncmesh_gf::Field;
pub use rlnc::{CodecError, Received};
