//! Sans-IO protocol state machines and the node that runs them.
//!
//! Nothing in this crate reads a clock, opens a socket or draws from a global
//! random generator. A driver (the simulator, the node daemon) feeds each
//! endpoint with `handle_*` calls and drains it with `poll_*` calls, passing
//! the current [`time::Instant`] every time.
//!
//! The layers, bottom up: wire formats (`wire`, and each protocol's own),
//! packets and frames (`packet`, `frame`), the [`node::Node`] with its
//! interfaces, routes and coding slots, TCP (`tcp`), and the coding schemes
//! (`tcpnc`, `honc`, `tcpforward`), which plug into nodes through `scheme`.

mod builtin;
pub mod data;
pub mod frame;
pub mod honc;
pub mod marks;
pub mod node;
pub mod packet;
pub mod params;
pub mod scheme;
pub mod tcp;
pub mod tcpforward;
pub mod tcpnc;
pub mod time;
pub mod wire;

#[doc(hidden)]
#[path = "tests/mod.rs"]
pub mod testing;

pub use data::Data;
pub use frame::Frame;
pub use node::Node;
pub use packet::{FlowKey, Packet, Payload};
pub use scheme::Registry;
pub use time::{Duration, Instant};
