//! TCP as two sans-IO endpoints: a [`TcpSender`] that owns the congestion
//! window and loss recovery, and a [`TcpReceiver`] that acknowledges.
//!
//! There is no handshake or teardown: like ns-2's one-way agents, a
//! connection starts established. Congestion control is the
//! [`CongestionControl`] trait, one file per algorithm; loss recovery is
//! split the same way (`recovery.rs` for Reno and the common entry and
//! exit, `newreno.rs`, `sack.rs`). See `docs/protocols/tcp.md`.

mod config;
mod congestion;
mod cubic;
mod newreno;
mod receiver;
mod recovery;
mod reno;
mod rtt;
mod sack;
mod segment;
mod sender;
mod vegas;

pub use config::{Control, CubicParams, Recovery, TcpConfig, Variant, VegasParams, BASE_HEADER_BYTES};
pub use congestion::{new_control, slow_start, AckEvent, CongestionControl, Window};
pub use cubic::Cubic;
pub use receiver::{Delivery, ReceiverStats, TcpReceiver};
pub use reno::Reno;
pub use rtt::RttEstimator;
pub use segment::{SackBlock, Segment, Timestamps, MAX_SACK_BLOCKS};
pub use sender::{SenderStats, TcpSender};
pub use vegas::Vegas;
