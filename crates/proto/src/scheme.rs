//! How a coding protocol plugs into a node: a [`Scheme`] registers its
//! name, its parameter table (a serde type that checks itself), how to
//! build its layers, and its message kinds. A [`Registry`] holds the
//! schemes a driver knows; adding a protocol adds files and one line to
//! `builtin.rs`, and edits no shared type.

use crate::marks::FlowMarks;
use crate::node::{DropTail, EndLayer, HopLayer, InterfaceInfo, QueueDisc};
use crate::packet::{FlowKey, Kind, ParseFn, Parsers};
use crate::params::{Invalid, KeyPath, Validate};
use crate::tcp::TcpConfig;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::any::{Any, TypeId};
use std::fmt::Debug;
use std::net::Ipv4Addr;
use std::sync::Arc;

/// A transport flow as the driver describes it to coding layers.
#[derive(Clone, Debug)]
pub struct FlowInfo {
    /// The flow in the direction of its data.
    pub key: FlowKey,
    /// What its TCP connection settled; `None` for UDP.
    pub tcp: Option<TcpInfo>,
}

/// What a TCP connection's handshake settles, as a middlebox that saw it
/// would know: the configuration both ends share and where the data's
/// sequence numbers start.
#[derive(Clone, Debug)]
pub struct TcpInfo {
    pub config: TcpConfig,
    /// The sequence number of the data's first byte (the ISN, plus one
    /// when a SYN took the ISN).
    pub isn: u32,
}

/// What an end layer is built from.
#[derive(Clone, Copy, Debug)]
pub struct EndContext<'a> {
    pub flow: &'a FlowInfo,
    /// The layer sits at the flow's source (else at its destination).
    pub at_source: bool,
    /// The configured loss of the flow's path, for parameters set from it.
    pub path_loss: f64,
    pub seed: u64,
    pub real_payloads: bool,
    pub parsers: &'a Arc<Parsers>,
    /// Shared with the flow's other end where both run on one clock (a
    /// simulation), for measurements that span the two.
    pub marks: &'a FlowMarks,
}

/// What a hop layer is built from.
#[derive(Clone, Copy, Debug)]
pub struct HopContext<'a> {
    pub addr: Ipv4Addr,
    pub interfaces: &'a [InterfaceInfo],
    /// Every flow of the network, for layers that speak for a flow's end.
    pub flows: &'a [FlowInfo],
    pub seed: u64,
    pub real_payloads: bool,
    pub parsers: &'a Arc<Parsers>,
}

/// A coding scheme as a scenario names it.
pub trait Scheme: Send + Sync + 'static {
    /// Its parameters, with their defaults, as the `[coding.<PARAMS>]` table gives them.
    type Params: Serialize + DeserializeOwned + JsonSchema + Default + Validate + Clone + Debug + Send + Sync + 'static;
    /// The name in `coding.scheme` and `flows[i].coding`.
    const NAME: &'static str;
    /// The table under `[coding]` that holds its parameters; schemes of one
    /// family may share it, with the same `Params` type.
    const PARAMS: &'static str;
    /// It codes at the ends of flows (`end_layer`).
    const CODES_ENDS: bool = false;
    /// It codes at every node (`hop_layer`).
    const CODES_HOPS: bool = false;

    /// Why it cannot code a flow end to end, if it cannot: `tcp` is the
    /// flow's TCP configuration, `None` for a UDP flow.
    fn refuse_flow(_params: &Self::Params, _tcp: Option<&TcpConfig>) -> Option<String> {
        None
    }
    /// The layer at one end of a flow.
    fn end_layer(_params: &Self::Params, _ctx: &EndContext<'_>) -> Option<Box<dyn EndLayer>> {
        None
    }
    /// The layer of one node.
    fn hop_layer(_params: &Self::Params, _ctx: &HopContext<'_>) -> Option<Box<dyn HopLayer>> {
        None
    }
    /// The link classes it codes when a scenario does not say; `None` for all.
    fn default_hop_classes() -> Option<Vec<String>> {
        None
    }
    /// Its message kinds and their parsers.
    fn messages() -> Vec<(Kind, ParseFn)> {
        Vec::new()
    }
}

/// Parameters of some scheme, checked, and as a TOML table with every
/// default filled in (what a run records).
#[derive(Clone, Debug)]
pub struct ParsedParams {
    pub value: Arc<dyn Any + Send + Sync>,
    pub table: toml::Value,
}

/// A [`Scheme`] behind a trait object, so a registry can hold any.
pub trait DynScheme: Send + Sync {
    fn name(&self) -> &'static str;
    fn params_key(&self) -> &'static str;
    fn params_type(&self) -> TypeId;
    fn codes_ends(&self) -> bool;
    fn codes_hops(&self) -> bool;
    /// Reads and checks its parameter table; errors are relative to the table.
    fn parse_params(&self, table: toml::Value) -> Result<ParsedParams, Invalid>;
    fn params_schema(&self, generator: &mut schemars::SchemaGenerator) -> schemars::Schema;
    fn refuse_flow(&self, params: &ParsedParams, tcp: Option<&TcpConfig>) -> Option<String>;
    fn end_layer(&self, params: &ParsedParams, ctx: &EndContext<'_>) -> Option<Box<dyn EndLayer>>;
    fn hop_layer(&self, params: &ParsedParams, ctx: &HopContext<'_>) -> Option<Box<dyn HopLayer>>;
    fn default_hop_classes(&self) -> Option<Vec<String>>;
    fn messages(&self) -> Vec<(Kind, ParseFn)>;
}

struct Registered<S>(std::marker::PhantomData<S>);

impl<S: Scheme> Registered<S> {
    fn params(p: &ParsedParams) -> &S::Params {
        p.value.downcast_ref().expect("parameters are parsed by the scheme that reads them")
    }
}

impl<S: Scheme> DynScheme for Registered<S> {
    fn name(&self) -> &'static str {
        S::NAME
    }
    fn params_key(&self) -> &'static str {
        S::PARAMS
    }
    fn params_type(&self) -> TypeId {
        TypeId::of::<S::Params>()
    }
    fn codes_ends(&self) -> bool {
        S::CODES_ENDS
    }
    fn codes_hops(&self) -> bool {
        S::CODES_HOPS
    }
    fn parse_params(&self, table: toml::Value) -> Result<ParsedParams, Invalid> {
        let params: S::Params = serde_path_to_error::deserialize(table)
            .map_err(|e| Invalid::new(KeyPath::from_serde(e.path()), e.inner().message().trim()))?;
        params.validate()?;
        let table = toml::Value::try_from(&params).expect("parameters serialise");
        Ok(ParsedParams { value: Arc::new(params), table })
    }
    fn params_schema(&self, generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        generator.subschema_for::<S::Params>()
    }
    fn refuse_flow(&self, params: &ParsedParams, tcp: Option<&TcpConfig>) -> Option<String> {
        S::refuse_flow(Self::params(params), tcp)
    }
    fn end_layer(&self, params: &ParsedParams, ctx: &EndContext<'_>) -> Option<Box<dyn EndLayer>> {
        S::end_layer(Self::params(params), ctx)
    }
    fn hop_layer(&self, params: &ParsedParams, ctx: &HopContext<'_>) -> Option<Box<dyn HopLayer>> {
        S::hop_layer(Self::params(params), ctx)
    }
    fn default_hop_classes(&self) -> Option<Vec<String>> {
        S::default_hop_classes()
    }
    fn messages(&self) -> Vec<(Kind, ParseFn)> {
        S::messages()
    }
}

/// A queue discipline as a scenario names it, built for a capacity in packets.
#[derive(Clone, Copy, Debug)]
pub struct QueueKind {
    pub name: &'static str,
    pub build: fn(usize) -> Box<dyn QueueDisc>,
}

/// Why a registration was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// Two schemes (or two queue disciplines) share a name.
    #[error("{0:?} is registered twice")]
    DuplicateName(String),
    /// Two schemes share a parameter table but read it as different types.
    #[error("the parameter table {0:?} is read by schemes with different parameter types")]
    ParamsClash(String),
    /// Two schemes parse the same message kind.
    #[error("{0} has two parsers")]
    DuplicateKind(String),
}

/// The schemes and queue disciplines a driver knows.
pub struct Registry {
    schemes: Vec<Box<dyn DynScheme>>,
    queues: Vec<QueueKind>,
    parsers: Arc<Parsers>,
    /// The parameter table (family) of the scheme that registered each message kind.
    kinds: Vec<(Kind, &'static str)>,
}

impl Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry").field("schemes", &self.names().collect::<Vec<_>>()).finish()
    }
}

/// The name of plain forwarding in `coding.scheme` and `flows[i].coding`.
pub const NONE: &str = "none";

impl Registry {
    /// A registry with no coding scheme and the DropTail queue.
    pub fn empty() -> Registry {
        Registry {
            schemes: Vec::new(),
            queues: vec![QueueKind { name: "droptail", build: |capacity| Box::new(DropTail::new(capacity)) }],
            parsers: Arc::default(),
            kinds: Vec::new(),
        }
    }

    /// Adds scheme `S`.
    pub fn register<S: Scheme>(&mut self) -> Result<(), RegistryError> {
        if S::NAME == NONE || self.scheme(S::NAME).is_some() {
            return Err(RegistryError::DuplicateName(S::NAME.into()));
        }
        if self.schemes.iter().any(|s| s.params_key() == S::PARAMS && s.params_type() != TypeId::of::<S::Params>()) {
            return Err(RegistryError::ParamsClash(S::PARAMS.into()));
        }
        let mut parsers = (*self.parsers).clone();
        let mut kinds = self.kinds.clone();
        for (kind, parse) in S::messages() {
            // Schemes of one family (one parameter table) share their messages.
            match kinds.iter().find(|(k, _)| *k == kind) {
                Some((_, family)) if *family == S::PARAMS => continue,
                Some(_) => return Err(RegistryError::DuplicateKind(kind.to_string())),
                None if !parsers.add(kind, parse) => return Err(RegistryError::DuplicateKind(kind.to_string())),
                None => kinds.push((kind, S::PARAMS)),
            }
        }
        self.parsers = Arc::new(parsers);
        self.kinds = kinds;
        self.schemes.push(Box::new(Registered::<S>(std::marker::PhantomData)));
        Ok(())
    }

    /// Adds a queue discipline.
    pub fn register_queue(&mut self, kind: QueueKind) -> Result<(), RegistryError> {
        if self.queue(kind.name).is_some() {
            return Err(RegistryError::DuplicateName(kind.name.into()));
        }
        self.queues.push(kind);
        Ok(())
    }

    pub fn scheme(&self, name: &str) -> Option<&dyn DynScheme> {
        self.schemes.iter().find(|s| s.name() == name).map(|s| &**s)
    }

    /// Scheme names, in registration order.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.schemes.iter().map(|s| s.name())
    }

    /// One scheme per parameter table, in registration order.
    pub fn params_tables(&self) -> Vec<&dyn DynScheme> {
        let mut seen = Vec::new();
        let mut out = Vec::new();
        for s in &self.schemes {
            if !seen.contains(&s.params_key()) {
                seen.push(s.params_key());
                out.push(&**s);
            }
        }
        out
    }

    pub fn queue(&self, name: &str) -> Option<&QueueKind> {
        self.queues.iter().find(|q| q.name == name)
    }

    pub fn queue_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.queues.iter().map(|q| q.name)
    }

    /// The parsers of every registered message kind.
    pub fn parsers(&self) -> &Arc<Parsers> {
        &self.parsers
    }
}
