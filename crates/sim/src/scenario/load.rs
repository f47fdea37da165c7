//! From text to a validated scenario, with every error pointing at a key and
//! its line.

use super::{Layout, ScenarioSpec};
use crate::medium::wifi::Channel;
use crate::routing::Topology;
use ncmesh_proto::params::{Invalid, KeyPath, Step};
use ncmesh_proto::scheme::{ParsedParams, Registry};
use ncmesh_proto::tcp::{Profile, TcpConfig};
use std::collections::BTreeMap;
use std::sync::Arc;
use toml::de::{DeTable, DeValue};
use toml::{Table, Value};

/// Where a scenario comes from.
#[derive(Clone, Copy, Debug)]
pub enum Source<'a> {
    /// TOML text, with the name errors should cite (usually the file path).
    Toml { text: &'a str, origin: &'a str },
    /// JSON text of the same document (how Python dictionaries arrive); errors cite keys only.
    Json { text: &'a str, origin: &'a str },
}

/// Why a scenario was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScenarioError {
    /// The text is not TOML (or JSON).
    #[error("{origin}{}: {message}", at(*line))]
    Syntax { origin: String, line: Option<usize>, message: String },
    /// A key is unknown, has the wrong type, or a value is out of range or refers to nothing.
    #[error("{origin}{}: {key}: {message}", at(*line))]
    Invalid { origin: String, key: String, line: Option<usize>, message: String },
    /// A `--set key=value` override cannot be applied.
    #[error("--set {assignment}: {message}")]
    Override { assignment: String, message: String },
}

fn at(line: Option<usize>) -> String {
    line.map(|l| format!(":{l}")).unwrap_or_default()
}

/// A scenario that parsed and validated. Its spec is fully resolved: link
/// classes and TCP defaults are merged in, overrides applied, and every
/// coding parameter table filled in with its defaults.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub spec: ScenarioSpec,
    /// The checked parameters of every registered scheme family, by table name.
    pub params: BTreeMap<String, ParsedParams>,
    /// The protocols the scenario was checked against and will run with.
    pub registry: Arc<Registry>,
    /// The shared 802.11 channel, resolved: who reaches and senses whom.
    pub channel: Option<Channel>,
}

impl Scenario {
    /// Parses, applies `overrides` (pairs of dotted key and TOML value, as
    /// `--set links.0.loss=0.1` gives), resolves and validates, with the
    /// built-in protocols.
    pub fn load(source: Source<'_>, overrides: &[(String, String)]) -> Result<Scenario, ScenarioError> {
        Scenario::load_with(Arc::new(Registry::builtin()), source, overrides)
    }

    /// As [`Scenario::load`], with the protocols of `registry`.
    pub fn load_with(
        registry: Arc<Registry>,
        source: Source<'_>,
        overrides: &[(String, String)],
    ) -> Result<Scenario, ScenarioError> {
        let (text, origin, is_toml) = match source {
            Source::Toml { text, origin } => (text, origin, true),
            Source::Json { text, origin } => (text, origin, false),
        };
        let syntax = |line, message: String| ScenarioError::Syntax { origin: origin.to_string(), line, message };
        let doc: Table = if is_toml {
            toml::from_str(text)
                .map_err(|e| syntax(e.span().map(|s| line_of(text, s.start)), e.message().trim().to_string()))?
        } else {
            serde_json::from_str(text).map_err(|e| syntax(Some(e.line()), e.to_string()))?
        };
        let spans = if is_toml { DeTable::parse(text).ok().map(|t| t.into_inner()) } else { None };
        let invalid = |e: Invalid| ScenarioError::Invalid {
            origin: origin.to_string(),
            line: spans.as_ref().and_then(|t| locate(t, &e.path)).map(|offset| line_of(text, offset)),
            key: e.path.to_string(),
            message: e.message,
        };

        let mut doc = Value::Table(doc);
        for (key, value) in overrides {
            apply_override(&mut doc, key, value)?;
        }
        resolve(&mut doc).map_err(&invalid)?;
        let mut spec: ScenarioSpec = serde_path_to_error::deserialize(doc).map_err(|e| invalid(from_serde(e)))?;
        let (params, channel) = super::validate::validate(&spec, &registry).map_err(invalid)?;
        spec.coding.params = params.iter().map(|(k, p)| (k.clone(), p.table.clone())).collect();
        Ok(Scenario { spec, params, registry, channel })
    }

    /// Nodes and the channels between them, as routing sees them.
    pub fn topology(&self) -> Topology {
        Topology::new(&Layout { spec: &self.spec, channel: self.channel.as_ref() })
    }

    /// The resolved scenario as TOML: what actually ran, for records and hashing.
    pub fn to_toml(&self) -> String {
        toml::to_string(&self.spec).expect("a resolved scenario serialises")
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].bytes().filter(|&b| b == b'\n').count() + 1
}

fn from_serde(e: serde_path_to_error::Error<toml::de::Error>) -> Invalid {
    Invalid::new(KeyPath::from_serde(e.path()), e.inner().message().trim())
}

/// The byte offset of the deepest part of `path` present in the document.
fn locate(table: &DeTable<'_>, path: &KeyPath) -> Option<usize> {
    let mut best = None;
    let mut here: Option<&DeValue<'_>> = None;
    let mut top = Some(table);
    for step in &path.0 {
        let next = match (step, top, here) {
            (Step::Key(k), Some(t), _) | (Step::Key(k), None, Some(DeValue::Table(t))) => {
                t.iter().find(|(key, _)| key.get_ref().as_ref() == k.as_str()).map(|(key, v)| {
                    best = Some(key.span().start);
                    v
                })
            }
            (Step::Index(i), None, Some(DeValue::Array(a))) => a.get(*i).inspect(|v| best = Some(v.span().start)),
            _ => None,
        };
        match next {
            Some(v) => {
                here = Some(v.get_ref());
                top = None;
            }
            None => break,
        }
    }
    best
}

/// Applies `key=value` to the raw document: the value is read as TOML
/// (`0.1`, `"newreno"`, `[1, 3]`), or taken as a string if it does not parse;
/// numeric steps index arrays (`links.0.loss`).
fn apply_override(doc: &mut Value, key: &str, raw: &str) -> Result<(), ScenarioError> {
    let fail = |message: String| ScenarioError::Override { assignment: format!("{key}={raw}"), message };
    let value = format!("v = {raw}")
        .parse::<Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| Value::String(raw.to_string()));
    let steps: Vec<&str> = key.split('.').collect();
    if steps.iter().any(|s| s.is_empty()) {
        return Err(fail("expected a dotted key such as link_class.wireless.loss".into()));
    }
    let (last, parents) = steps.split_last().expect("split yields at least one piece");
    let mut slot: &mut Value = doc;
    for step in parents {
        slot = match slot {
            Value::Table(t) => t.entry(step.to_string()).or_insert_with(|| Value::Table(Table::new())),
            Value::Array(a) => {
                let len = a.len();
                let i: usize =
                    step.parse().map_err(|_| fail(format!("{step:?} indexes an array; expected a number")))?;
                a.get_mut(i).ok_or_else(|| fail(format!("index {i} is past the end of an array of {len}")))?
            }
            _ => return Err(fail(format!("{step:?} is inside a value that is not a table or array"))),
        };
    }
    match slot {
        Value::Table(t) => {
            t.insert(last.to_string(), value);
        }
        Value::Array(a) => {
            let len = a.len();
            let i: usize = last.parse().map_err(|_| fail(format!("{last:?} indexes an array; expected a number")))?;
            *a.get_mut(i).ok_or_else(|| fail(format!("index {i} is past the end of an array of {len}")))? = value;
        }
        _ => return Err(fail(format!("{last:?} is inside a value that is not a table or array"))),
    }
    Ok(())
}

/// Expands link classes into links, the shared `[tcp]` table into each
/// flow's, and each `tcp` table's `profile` into that stack's defaults
/// under its own keys, so that the typed document is complete and `--set`
/// on a class or on `tcp` reaches every user of it.
fn resolve(doc: &mut Value) -> Result<(), Invalid> {
    let root = KeyPath::default();
    let Value::Table(top) = doc else { unreachable!("documents are tables") };
    let classes = top.get("link_class").cloned();
    if let Some(Value::Array(links)) = top.get_mut("links") {
        for (i, link) in links.iter_mut().enumerate() {
            let Value::Table(link) = link else { continue };
            let Some(class) = link.get("class") else { continue };
            let path = root.key("links").index(i).key("class");
            let Value::String(name) = class else {
                return Err(Invalid::new(path, "expected the name of a link class"));
            };
            let Some(Value::Table(defaults)) = classes.as_ref().and_then(|c| c.get(name.as_str())) else {
                let known: Vec<String> = match &classes {
                    Some(Value::Table(c)) => c.keys().cloned().collect(),
                    _ => vec![],
                };
                return Err(Invalid::new(path, format!("no link class {name:?}; defined: {known:?}")));
            };
            for (k, v) in defaults {
                link.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
    }
    let tcp = top.get("tcp").cloned();
    if let (Some(tcp), Some(Value::Array(flows))) = (tcp, top.get_mut("flows")) {
        for flow in flows.iter_mut() {
            let Value::Table(flow) = flow else { continue };
            let own = flow.remove("tcp").unwrap_or_else(|| Value::Table(Table::new()));
            flow.insert("tcp".into(), merged(tcp.clone(), own));
        }
    }
    if let Some(tcp) = top.get_mut("tcp") {
        expand_profile(tcp, &root.key("tcp"))?;
    }
    if let Some(Value::Array(flows)) = top.get_mut("flows") {
        for (i, flow) in flows.iter_mut().enumerate() {
            if let Some(tcp) = flow.as_table_mut().and_then(|f| f.get_mut("tcp")) {
                expand_profile(tcp, &root.key("flows").index(i).key("tcp"))?;
            }
        }
    }
    Ok(())
}

/// Lays a `tcp` table over the defaults of the stack its `profile` names.
fn expand_profile(tcp: &mut Value, at: &KeyPath) -> Result<(), Invalid> {
    let Some(name) = tcp.as_table().and_then(|t| t.get("profile")) else { return Ok(()) };
    let profile: Profile = name.clone().try_into().map_err(|_| {
        Invalid::new(at.key("profile"), format!("expected \"ns2\", \"ns3\" or \"linux\", found {name}"))
    })?;
    let defaults = Value::try_from(TcpConfig::profile(profile)).expect("a TCP configuration serialises");
    *tcp = merged(defaults, std::mem::replace(tcp, Value::Table(Table::new())));
    Ok(())
}

/// `over` laid on `base`, table by table.
fn merged(base: Value, over: Value) -> Value {
    match (base, over) {
        (Value::Table(mut base), Value::Table(over)) => {
            for (k, v) in over {
                let merged_value = match base.remove(&k) {
                    Some(b) => merged(b, v),
                    None => v,
                };
                base.insert(k, merged_value);
            }
            Value::Table(base)
        }
        (_, over) => over,
    }
}
