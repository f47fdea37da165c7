//! TCP-Forward (Chi and Agrawal, seed 004): a fountain code between TCP
//! Vegas and IP.
//!
//! The source ([`ForwardSource`]) takes the segments TCP sends into a coding
//! buffer, codes a window of N of them at a time with a fountain code (LT by
//! default), releases R coded symbols per segment TCP sends (the credits),
//! and slides the window by N/2. The sink ([`ForwardSink`]) decodes every
//! window, shares what one window decodes with the windows it overlaps,
//! acknowledges each decoded segment at once, and hands segments to TCP in
//! order. The source turns each acknowledgement into a TCP ACK that moves
//! TCP's window by one segment, and answers segments that stay undecoded
//! too long (eq. 4) with symbols outside the credits, raising R with the
//! rate of such timeouts. See `docs/protocols/tcpforward.md`.

mod sink;
mod source;
pub mod wire;

pub use sink::ForwardSink;
pub use source::{ForwardSource, CREDIT};

use crate::node::EndLayer;
use crate::packet::{Kind, ParseFn};
use crate::params::{check, Invalid, Validate};
use crate::scheme::{EndContext, Scheme};
use crate::tcp::TcpConfig;
use ncmesh_codec::fountain::{Fountain, Lt, RandomLinear};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The fountain code of the windows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Code {
    /// LT with the Robust Soliton distribution (eqs. 1-3), as the paper.
    Lt,
    /// The random linear fountain over GF(2), decoded by elimination.
    Random,
}

/// How many symbols a window gets before it slides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Budget {
    /// ⌈s R⌉ for a slide of s segments: R symbols per segment that enters
    /// the window, what the credits release.
    Slide,
    /// ⌈k R⌉ for a window of k segments, the paper's N × R: twice what the
    /// credits release, so the window falls behind TCP.
    Window,
}

/// Which rate eq. (4) compares with the expected one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Trigger {
    /// Diff_p = W / min ElapsedTime - W / ElapsedTime_p, Vegas's Diff with
    /// the coding window W for cwnd and ElapsedTime_p for the RTT.
    Window,
    /// Diff_p = W / min ElapsedTime - size_p / ElapsedTime_p, eq. (4) as printed.
    Segment,
}

/// Whose round trip a translated ACK gives Vegas, through TCP's timestamp echo.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Rtt {
    /// The symbol whose arrival decoded the segment: the path's round trip,
    /// queueing included, coding delay not.
    Symbol,
    /// The decoded segment's, since TCP sent it: coding delay included.
    Segment,
}

/// Parameters of TCP-Forward. Seed 004 gives none of their values;
/// `docs/protocols/tcpforward.md` says why each default, and what changing it does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct TcpForwardParams {
    /// The coding window N, in segments.
    pub window: u32,
    pub code: Code,
    /// Robust Soliton c and delta (eq. 2).
    pub c: f64,
    pub delta: f64,
    /// Finish a stalled LT decode by inactivation decoding (the paper only peels).
    pub fallback: bool,
    /// Bounds of the adaptive redundancy R = N_segments / (N_segments - N_timeout).
    pub min_redundancy: f64,
    pub max_redundancy: f64,
    pub budget: Budget,
    pub rtt: Rtt,
    pub trigger: Trigger,
    /// The Timeout threshold of eq. (4), as a fraction of the expected rate
    /// W / min ElapsedTime: a segment times out when Diff_p exceeds it.
    pub timeout: f64,
    /// The min ElapsedTime of eq. (4) before any segment has been
    /// acknowledged, in seconds (RFC 6298's initial RTO).
    pub initial_elapsed: f64,
    /// How long a window waits for its N segments before it starts with
    /// fewer, as a fraction of min ElapsedTime.
    pub fill: f64,
}

impl Default for TcpForwardParams {
    fn default() -> Self {
        TcpForwardParams {
            window: 16,
            code: Code::Lt,
            c: ncmesh_codec::lt::DEFAULT_C,
            delta: ncmesh_codec::lt::DEFAULT_DELTA,
            fallback: false,
            min_redundancy: 1.5,
            max_redundancy: 20.0,
            budget: Budget::Slide,
            rtt: Rtt::Symbol,
            trigger: Trigger::Window,
            timeout: 0.6,
            initial_elapsed: 1.0,
            fill: 0.0,
        }
    }
}

impl Validate for TcpForwardParams {
    fn validate(&self) -> Result<(), Invalid> {
        check((1..=wire::MAX_WINDOW as u32).contains(&self.window), "window", || {
            format!("expected 1 to {} segments, found {}", wire::MAX_WINDOW, self.window)
        })?;
        check(self.c > 0.0 && self.c.is_finite(), "c", || format!("expected a finite c > 0, found {}", self.c))?;
        check(self.delta > 0.0 && self.delta < 1.0, "delta", || {
            format!("expected 0 < delta < 1, found {}", self.delta)
        })?;
        check((1.0..=100.0).contains(&self.min_redundancy), "min_redundancy", || {
            format!("expected R_min in [1, 100], found {}", self.min_redundancy)
        })?;
        check((self.min_redundancy..=100.0).contains(&self.max_redundancy), "max_redundancy", || {
            format!("expected R_max in [min_redundancy, 100], found {}", self.max_redundancy)
        })?;
        check(self.timeout > 0.0 && self.timeout < 1.0, "timeout", || {
            format!("expected a fraction of the expected rate in (0, 1), found {}", self.timeout)
        })?;
        check(self.initial_elapsed > 0.0 && self.initial_elapsed <= 60.0, "initial_elapsed", || {
            format!("expected (0, 60] seconds, found {}", self.initial_elapsed)
        })?;
        check((0.0..=10.0).contains(&self.fill), "fill", || {
            format!("expected a fraction of min ElapsedTime in [0, 10], found {}", self.fill)
        })
    }
}

impl TcpForwardParams {
    /// The code every window of a flow uses; both ends build the same one.
    pub fn fountain(&self) -> Arc<dyn Fountain> {
        match self.code {
            Code::Lt => {
                Arc::new(Lt::robust(self.c, self.delta, wire::MAX_WINDOW, self.fallback).expect("checked parameters"))
            }
            Code::Random => Arc::new(RandomLinear::new(wire::MAX_WINDOW).expect("a valid bound")),
        }
    }
}

/// TCP-Forward, at the two ends of each TCP flow.
#[derive(Debug)]
pub struct TcpForward;

impl Scheme for TcpForward {
    type Params = TcpForwardParams;
    const NAME: &'static str = "tcp-forward";
    const PARAMS: &'static str = "tcpforward";
    const CODES_ENDS: bool = true;

    fn refuse_flow(_: &TcpForwardParams, tcp: Option<&TcpConfig>) -> Option<String> {
        tcp.is_none().then(|| "TCP-Forward codes TCP flows only: its acknowledgements move a TCP window".to_string())
    }

    fn end_layer(params: &TcpForwardParams, ctx: &EndContext<'_>) -> Option<Box<dyn EndLayer>> {
        let tcp = &ctx.flow.tcp.as_ref()?.config;
        Some(if ctx.at_source {
            Box::new(ForwardSource::new(params, tcp, ctx.flow.key, ctx.real_payloads, ctx.marks.clone()))
        } else {
            Box::new(ForwardSink::new(params, tcp, ctx.flow.key, ctx.real_payloads, ctx.marks.clone()))
        })
    }

    fn messages() -> Vec<(Kind, ParseFn)> {
        vec![(wire::KIND, wire::parse)]
    }
}

/// What the source notes in the flow's marks for the sink's measurements.
mod mark {
    /// A segment's first encoding, by stream index.
    pub const ENCODED: u8 = 1;
    /// A window's first symbol, by window start.
    pub const WINDOW: u8 = 2;
}
