//! TCP as two sans-IO endpoints: a [`TcpSender`] that owns the congestion
//! window and loss recovery, and a [`TcpReceiver`] that acknowledges.
//!
//! With `handshake` the ends open with SYN, SYN-ACK, ACK and close with
//! FIN (`handshake.rs`); without it, like ns-2's one-way agents, a
//! connection starts established, with what a handshake would have settled
//! given to both ends as a [`Connection`] and their shared [`TcpConfig`]. Congestion control is the
//! [`CongestionControl`] trait, one file per algorithm, built by name in
//! `controls.rs`; loss recovery is split the same way (`recovery.rs` for
//! Reno and the common entry and exit, `newreno.rs`, `sack.rs`). Segments
//! have a real wire format (`wire.rs`). See `docs/protocols/tcp.md`.

mod abort;
mod autotune;
pub mod bbr;
mod config;
mod congestion;
mod controls;
mod cubic;
mod handshake;
mod hystart;
mod hystart_pp;
mod newreno;
mod pacing;
mod prr;
mod quickack;
mod rack;
mod rack_tlp;
mod rate;
mod receiver;
mod recovery;
mod reno;
mod rtt;
mod rtt_linux;
mod sack;
mod sender;
mod vegas;
pub mod wire;

pub use autotune::{Autotune, Held};
pub use bbr::{Bbr, MaxFilter, Mode as BbrMode};
pub use config::{
    AckCredit, AckPolicy, Control, Counting, CubicParams, LossBasis, Profile, Recovery, RtoEstimator, SlowStartExit,
    TcpConfig, Variant, VegasParams,
};
pub use congestion::{slow_start, AckEvent, CongestionControl, SlowStartWatch, Window};
pub use controls::{new_control, new_slow_start_watch};
pub use cubic::Cubic;
pub use hystart::HyStart;
pub use hystart_pp::HyStartPlusPlus;
pub use pacing::{Pacer, UNPACED_SEGMENTS};
pub use prr::Prr;
pub use quickack::QuickAck;
pub use rack::Rack;
pub use rate::{CaState, DeliveryRate, RateSample, TxRate};
pub use receiver::{Delivery, ReceiverStats, TcpReceiver};
pub use reno::Reno;
pub use rtt::RttEstimator;
pub use sack::Delivered;
pub use sender::{Phase, SenderStats, TcpSender};
pub use vegas::Vegas;
pub use wire::{Flags, SackBlock, Segment, SynOptions, Timestamps, BASE_HEADER_BYTES, MAX_SACK_BLOCKS, PROTOCOL};

use crate::time::{Duration, Instant};

/// What a handshake settles, seen from one end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Connection {
    pub local_port: u16,
    pub remote_port: u16,
    /// The initial sequence number of the data this end sends.
    pub local_isn: u32,
    /// The initial sequence number of the peer's data.
    pub remote_isn: u32,
}

impl Connection {
    /// The same connection seen from the other end.
    pub fn reversed(self) -> Connection {
        Connection {
            local_port: self.remote_port,
            remote_port: self.local_port,
            local_isn: self.remote_isn,
            remote_isn: self.local_isn,
        }
    }

    /// This end's timestamp clock, which starts at its ISN.
    pub fn ts_clock(self) -> TsClock {
        TsClock(self.local_isn)
    }
}

/// Microseconds, modulo 2^32: the timestamp clocks' time base.
pub(crate) fn micros(now: Instant) -> u32 {
    (now.0 / 1000) as u32
}

/// One end's timestamp clock (RFC 7323): microseconds, modulo 2^32, from
/// a start of the end's own. Linux offsets each connection's clock by a
/// random amount (`tsoffset`), so a SYN sent at time zero still carries a
/// nonzero value and its echo counts; here each end starts at its ISN
/// ([`Connection::ts_clock`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TsClock(u32);

impl TsClock {
    pub fn read(self, now: Instant) -> u32 {
        micros(now).wrapping_add(self.0)
    }

    /// The time since the clock read `value`; none if `value` is ahead of it.
    pub fn since(self, now: Instant, value: u32) -> Option<Duration> {
        let micros = self.read(now).wrapping_sub(value) as i32;
        (micros >= 0).then(|| Duration::from_micros(micros as u64))
    }
}
