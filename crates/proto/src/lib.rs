//! Sans-IO protocol state machines.
//!
//! Nothing in this crate reads a clock, opens a socket or draws from a global
//! random generator. A driver (the simulator, later the node daemon) feeds each
//! endpoint with `handle_*` calls and drains it with `poll_*` calls, passing
//! the current [`time::Instant`] every time.

pub mod honc;
pub mod packet;
pub mod tcp;
pub mod tcpnc;
pub mod time;

#[doc(hidden)]
#[path = "tests/mod.rs"]
pub mod testing;

pub use packet::{Body, Direction, HopLayer, HostLayer, Packet};
pub use time::{Duration, Instant};
