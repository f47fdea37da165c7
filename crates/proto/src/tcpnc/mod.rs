//! TCP/NC (Sundararajan et al., "Network coding meets TCP"): a coding layer
//! between TCP and IP that masks random losses from TCP's congestion control.
//!
//! The source codes over TCP's unacknowledged segments and sends R random
//! linear combinations per segment TCP hands it ([`NcSource`]). The sink
//! acknowledges every innovative combination with the first packet it has
//! not yet *seen*, and hands decoded segments to TCP in order ([`NcSink`]);
//! the source turns that acknowledgement into the TCP ACK its sender
//! expects. In the hop-by-hop variant every node on the path also recodes
//! what it holds before each transmission ([`Relay`]). See
//! `docs/protocols/tcpnc.md`.

mod relay;
mod sink;
mod source;
pub mod wire;

pub use relay::Relay;
pub use sink::NcSink;
pub use source::NcSource;

use crate::node::{EndLayer, HopLayer};
use crate::packet::{Kind, Message, ParseFn};
use crate::params::{check, Invalid, Validate};
use crate::scheme::{EndContext, HopContext, Scheme};
use crate::tcp::TcpConfig;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Parameters of TCP/NC, end to end or hop by hop.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct TcpNcParams {
    /// Combinations sent per segment from TCP (end to end), or per
    /// combination received (per hop). Absent: (1 + margin)/(1-p) from the
    /// configured loss p of the path (end to end) or of the outgoing link
    /// (per hop).
    pub redundancy: Option<f64>,
    /// The margin above 1/(1-p) of the automatic redundancy. At exactly
    /// 1/(1-p) the sink's shortfall of degrees of freedom is a random walk
    /// without drift, and decoding stalls for ever longer stretches.
    pub margin: f64,
    /// The field GF(2^q).
    pub field: u32,
    /// Packets a relay holds for each outgoing link, and the most
    /// combinations it owes a link.
    pub relay_queue: u32,
    /// A combination that brings a relay nothing new still earns one
    /// transmission downstream: upstream sends such redundancy when the
    /// sink is short, and a relay that holds everything must pass the need
    /// on. Off, a relay recodes only what was innovative to it.
    pub pass_on_shortfall: bool,
}

impl Default for TcpNcParams {
    fn default() -> Self {
        TcpNcParams { redundancy: None, margin: 0.1, field: 8, relay_queue: 50, pass_on_shortfall: true }
    }
}

impl TcpNcParams {
    /// The redundancy over something that loses a fraction `loss`.
    pub fn redundancy_for(&self, loss: f64) -> f64 {
        self.redundancy.unwrap_or_else(|| (1.0 + self.margin) / (1.0 - loss.clamp(0.0, 0.99)))
    }
}

impl Validate for TcpNcParams {
    fn validate(&self) -> Result<(), Invalid> {
        check((1..=8).contains(&self.field), "field", || {
            format!("expected q in 1..=8 for GF(2^q), found {}", self.field)
        })?;
        if let Some(r) = self.redundancy {
            check((1.0..=100.0).contains(&r), "redundancy", || format!("expected R in [1, 100], found {r}"))?;
        }
        check((0.0..=10.0).contains(&self.margin), "margin", || {
            format!("expected a margin in [0, 10], found {}", self.margin)
        })?;
        check(self.relay_queue > 0, "relay_queue", || "expected at least 1 packet".into())
    }
}

fn refuse_udp(tcp: Option<&TcpConfig>) -> Option<String> {
    tcp.is_none()
        .then(|| "TCP/NC codes TCP flows only: its sink acknowledges what it has seen to a TCP sender".to_string())
}

fn messages() -> Vec<(Kind, ParseFn)> {
    vec![
        (Kind::Ip(wire::COMBINATION), |b| Ok(Box::new(wire::Combination::parse(b)?) as Box<dyn Message>)),
        (Kind::Ip(wire::ACK), |b| Ok(Box::new(wire::Ack::parse(b)?) as Box<dyn Message>)),
    ]
}

/// The two ends of a flow; `redundancy` is the source's R.
fn end_layer(params: &TcpNcParams, ctx: &EndContext<'_>, redundancy: f64) -> Option<Box<dyn EndLayer>> {
    let tcp = &ctx.flow.tcp.as_ref()?.config;
    Some(if ctx.at_source {
        Box::new(NcSource::new(params, tcp, ctx.flow.key, redundancy, ctx.real_payloads, ctx.seed))
    } else {
        Box::new(NcSink::new(params, tcp, ctx.flow.key, ctx.real_payloads))
    })
}

/// TCP/NC between the end hosts only.
#[derive(Debug)]
pub struct EndToEnd;

impl Scheme for EndToEnd {
    type Params = TcpNcParams;
    const NAME: &'static str = "tcpnc-e2e";
    const PARAMS: &'static str = "tcpnc";
    const CODES_ENDS: bool = true;

    fn refuse_flow(_: &TcpNcParams, tcp: Option<&TcpConfig>) -> Option<String> {
        refuse_udp(tcp)
    }
    fn end_layer(params: &TcpNcParams, ctx: &EndContext<'_>) -> Option<Box<dyn EndLayer>> {
        end_layer(params, ctx, params.redundancy_for(ctx.path_loss))
    }
    fn messages() -> Vec<(Kind, ParseFn)> {
        messages()
    }
}

/// TCP/NC with recoding at every node: the source codes at R = 1, and the
/// relays add the redundancy of each outgoing link.
#[derive(Debug)]
pub struct HopByHop;

impl Scheme for HopByHop {
    type Params = TcpNcParams;
    const NAME: &'static str = "tcpnc-hbh";
    const PARAMS: &'static str = "tcpnc";
    const CODES_ENDS: bool = true;
    const CODES_HOPS: bool = true;

    fn refuse_flow(_: &TcpNcParams, tcp: Option<&TcpConfig>) -> Option<String> {
        refuse_udp(tcp)
    }
    fn end_layer(params: &TcpNcParams, ctx: &EndContext<'_>) -> Option<Box<dyn EndLayer>> {
        end_layer(params, ctx, 1.0)
    }
    fn hop_layer(params: &TcpNcParams, ctx: &HopContext<'_>) -> Option<Box<dyn HopLayer>> {
        Some(Box::new(Relay::new(params, ctx)))
    }
    fn messages() -> Vec<(Kind, ParseFn)> {
        messages()
    }
}

/// Adds `r` to `credit` and returns how many whole transmissions it buys,
/// keeping the fraction: R = 1.25 sends 1, 1, 1, 2, ...
fn spend(credit: &mut f64, r: f64) -> u32 {
    *credit += r;
    let whole = credit.floor();
    *credit -= whole;
    whole as u32
}
