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
//!
//! Start with a TCP connection driven by hand: the same calls a driver
//! makes, with no network in between.
//!
//! ```
//! use ncmesh_proto::tcp::{Connection, TcpConfig, TcpReceiver, TcpSender};
//! use ncmesh_proto::Instant;
//!
//! let config = TcpConfig::default();
//! let conn = Connection { local_port: 10_000, remote_port: 5001, local_isn: 1, remote_isn: 2 };
//! let mut sender = TcpSender::new(&config, conn);
//! let mut receiver = TcpReceiver::new(&config, conn.reversed());
//! sender.push(10_000); // the application offers 10 kB
//! let now = Instant::ZERO;
//! while !sender.is_finished() {
//!     while let Some(segment) = sender.poll_transmit(now) {
//!         receiver.handle_segment(now, &segment);
//!     }
//!     receiver.handle_timeout(now + ncmesh_proto::Duration::from_millis(500)); // the delayed ACK
//!     while let Some(ack) = receiver.poll_transmit(now) {
//!         sender.handle_ack(now, &ack);
//!     }
//! }
//! let delivered: usize = std::iter::from_fn(|| receiver.poll_delivery()).map(|d| d.data.len()).sum();
//! assert_eq!(delivered, 10_000);
//! ```
//!
//! `crates/proto/tests/two_nodes.rs` drives two [`Node`]s over an
//! in-memory link, as the node daemon drives them over UDP and TUN.

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
pub use frame::{Frame, FrameFields};
pub use node::Node;
pub use packet::{FlowKey, Packet, Payload};
pub use scheme::Registry;
pub use time::{Duration, Instant};
