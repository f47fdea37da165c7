//! From text to a validated scenario, with every error pointing at a key and
//! its line.

use super::{Layout, ScenarioSpec};
use crate::medium::wifi::Channel;
use crate::routing::Topology;
use ncmesh_proto::params::{Invalid, KeyPath, Step};
use ncmesh_proto::scheme::{ParsedParams, Registry};
use ncmesh_proto::tcp::{Profile, TcpConfig};
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
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
    /// A `--set key=value` override cannot be applied, or sets a value that
    /// is refused. Its value is not repeated, so that a key at fault gives
    /// one message whatever it is set to.
    #[error("--set {key}: {message}")]
    Override { key: String, message: String },
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
            toml::from_str(text).map_err(|e| {
                let span = e.span();
                syntax(span.as_ref().map(|s| line_of(text, s.start)), syntax_message(text, span, e.message()))
            })?
        } else {
            serde_json::from_str(text).map_err(|e| syntax(Some(e.line()), e.to_string()))?
        };
        let spans = if is_toml { DeTable::parse(text).ok().map(|t| t.into_inner()) } else { None };
        let written = Value::Table(doc.clone());
        let mut inherited = Inherited::default();
        // An error is reported where its value was written: in the file, or
        // in the last override that set it or added the entry at fault.
        let invalid = |e: Invalid, inherited: &Inherited| {
            let path = inherited.origin(e.path);
            let set_by = overrides.iter().rev().find(|(key, _)| {
                let set = key_path(key);
                is_under(&path, &set) || (is_under(&set, &path) && !contains(&written, &path))
            });
            match set_by {
                Some((key, _)) => {
                    ScenarioError::Override { key: key.clone(), message: format!("{path}: {}", e.message) }
                }
                None => ScenarioError::Invalid {
                    origin: origin.to_string(),
                    line: spans.as_ref().and_then(|t| locate(t, &path)).map(|offset| line_of(text, offset)),
                    key: path.to_string(),
                    message: e.message,
                },
            }
        };

        let schema = scenario_schema();
        let mut doc = Value::Table(doc);
        for (key, value) in overrides {
            apply_override(&mut doc, key, value, schema)?;
        }
        check_tables(&doc, &Shapes::of(schema, schema), &KeyPath::default()).map_err(|e| invalid(e, &inherited))?;
        resolve(&mut doc, &mut inherited).map_err(|e| invalid(e, &inherited))?;
        let mut spec: ScenarioSpec =
            serde_path_to_error::deserialize(doc).map_err(|e| invalid(from_serde(e), &inherited))?;
        let (params, channel) = super::validate::validate(&spec, &registry).map_err(|e| invalid(e, &inherited))?;
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
    let path = KeyPath::from_serde(e.path());
    let message = e.inner().message().trim();
    // serde names a missing key in the message, at the table that lacks it.
    match message.strip_prefix("missing field `").and_then(|m| m.strip_suffix('`')) {
        Some(key) => Invalid::new(path.key(key), format!("missing key `{key}`, which is required")),
        None => Invalid::new(path, message),
    }
}

/// The TOML parser's message, with the key a "duplicate key" error points at.
fn syntax_message(text: &str, span: Option<std::ops::Range<usize>>, message: &str) -> String {
    let message = message.trim();
    let quoted = span.and_then(|s| text.get(s)).map(str::trim).filter(|k| !k.is_empty() && !k.contains('\n'));
    match quoted {
        Some(key) if message == "duplicate key" => {
            format!("duplicate key `{key}`: each key and table may be defined only once")
        }
        _ => message.to_string(),
    }
}

/// Whether `path` is `prefix` or lies under it.
fn is_under(path: &KeyPath, prefix: &KeyPath) -> bool {
    path.0.starts_with(&prefix.0)
}

/// An override's dotted key as a path; its numbers index arrays.
fn key_path(key: &str) -> KeyPath {
    KeyPath(key.split('.').map(|s| s.parse().map_or_else(|_| Step::Key(s.to_string()), Step::Index)).collect())
}

/// Whether the document has a value at `path`.
fn contains(doc: &Value, path: &KeyPath) -> bool {
    let mut here = doc;
    for step in &path.0 {
        let next = match (step, here) {
            (Step::Key(k), Value::Table(t)) => t.get(k),
            (Step::Index(i), Value::Array(a)) => a.get(*i),
            _ => None,
        };
        match next {
            Some(v) => here = v,
            None => return false,
        }
    }
    true
}

/// Where values copied by [`resolve`] came from: a link's key from its
/// class, a flow's TCP key from `[tcp]`. Errors name the original.
#[derive(Default)]
struct Inherited(Vec<(KeyPath, KeyPath)>);

impl Inherited {
    fn origin(&self, path: KeyPath) -> KeyPath {
        let from = self.0.iter().filter(|(copy, _)| is_under(&path, copy));
        match from.max_by_key(|(copy, _)| copy.0.len()) {
            Some((copy, origin)) => KeyPath(origin.0.iter().chain(&path.0[copy.0.len()..]).cloned().collect()),
            None => path,
        }
    }
}

/// The scenario's JSON Schema, which knows every table's keys, and which
/// tables are keyed by names the user chooses (`link_class.NAME`).
fn scenario_schema() -> &'static serde_json::Value {
    static SCHEMA: OnceLock<serde_json::Value> = OnceLock::new();
    SCHEMA.get_or_init(|| serde_json::to_value(schemars::schema_for!(ScenarioSpec)).expect("a schema serialises"))
}

/// The schemas a value may match at one place of the document, with
/// references and alternatives followed.
struct Shapes<'a> {
    root: &'a serde_json::Value,
    all: Vec<&'a serde_json::Value>,
}

impl<'a> Shapes<'a> {
    fn of(root: &'a serde_json::Value, schema: &'a serde_json::Value) -> Shapes<'a> {
        let mut shapes = Shapes { root, all: Vec::new() };
        shapes.add(schema, 0);
        shapes
    }

    fn add(&mut self, schema: &'a serde_json::Value, depth: usize) {
        if depth > 32 {
            return;
        }
        if let Some(name) = schema.get("$ref").and_then(|r| r.as_str()).and_then(|r| r.rsplit('/').next()) {
            if let Some(target) = self.root.get("$defs").and_then(|d| d.get(name)) {
                self.add(target, depth + 1);
            }
        }
        for alternatives in ["anyOf", "oneOf", "allOf"] {
            for branch in schema.get(alternatives).and_then(|a| a.as_array()).into_iter().flatten() {
                self.add(branch, depth + 1);
            }
        }
        self.all.push(schema);
    }

    /// The schemas of the entry `key` of a table.
    fn key(&self, key: &str) -> Shapes<'a> {
        let mut next = Shapes { root: self.root, all: Vec::new() };
        for s in &self.all {
            match s.get("properties").and_then(|p| p.get(key)) {
                Some(field) => next.add(field, 0),
                None => {
                    if let Some(entry) = s.get("additionalProperties").filter(|a| a.is_object()) {
                        next.add(entry, 0);
                    }
                }
            }
        }
        next
    }

    /// The schemas of element `i` of an array.
    fn index(&self, i: usize) -> Shapes<'a> {
        let mut next = Shapes { root: self.root, all: Vec::new() };
        for s in &self.all {
            if let Some(item) = s.get("prefixItems").and_then(|p| p.get(i)) {
                next.add(item, 0);
            } else if let Some(items) = s.get("items").filter(|i| i.is_object()) {
                next.add(items, 0);
            }
        }
        next
    }

    /// A table whose keys are names the user chooses: nothing lists `key`,
    /// and entries take any name.
    fn is_named(&self, key: &str) -> bool {
        let lists = |s: &&serde_json::Value| s.get("properties").is_some_and(|p| p.get(key).is_some());
        let any_name = |s: &&serde_json::Value| s.get("additionalProperties").is_some_and(|a| a.is_object());
        !self.all.iter().any(lists) && self.all.iter().any(any_name)
    }

    /// Only a table fits here, not an array.
    fn is_table_only(&self) -> bool {
        let types = |s: &serde_json::Value| -> Vec<String> {
            match s.get("type") {
                Some(serde_json::Value::String(t)) => vec![t.clone()],
                Some(serde_json::Value::Array(ts)) => ts.iter().filter_map(|t| t.as_str().map(String::from)).collect(),
                _ => vec![],
            }
        };
        let table = |s: &&&serde_json::Value| types(s).iter().any(|t| t == "object") || s.get("properties").is_some();
        let array = |s: &&&serde_json::Value| types(s).iter().any(|t| t == "array") || s.get("items").is_some();
        let open = |s: &&&serde_json::Value| {
            s.as_object().is_some_and(|o| {
                !["type", "properties", "items", "$ref", "anyOf", "oneOf", "allOf", "enum", "const"]
                    .iter()
                    .any(|k| o.contains_key(*k))
            })
        };
        self.all.iter().any(|s| table(&s)) && !self.all.iter().any(|s| array(&s) || open(&s))
    }
}

/// Refuses an array where only a table fits: serde would read it as the
/// table's fields in order, and report a type error deep inside it.
fn check_tables(value: &Value, shapes: &Shapes<'_>, at: &KeyPath) -> Result<(), Invalid> {
    match value {
        Value::Table(t) => t.iter().try_for_each(|(k, v)| check_tables(v, &shapes.key(k), &at.key(k))),
        Value::Array(a) if shapes.is_table_only() => {
            Err(Invalid::new(at.clone(), format!("expected a table, found an array of {}", a.len())))
        }
        Value::Array(a) => a.iter().enumerate().try_for_each(|(i, v)| check_tables(v, &shapes.index(i), &at.index(i))),
        _ => Ok(()),
    }
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
/// numeric steps index arrays (`links.0.loss`). An override changes what the
/// file has or could have: it may set a known key the file leaves out, but
/// not add an entry to a table of user-chosen names, where a misspelt name
/// would add an entry that nothing uses.
fn apply_override(doc: &mut Value, key: &str, raw: &str, schema: &serde_json::Value) -> Result<(), ScenarioError> {
    let fail = |message: String| ScenarioError::Override { key: key.to_string(), message };
    let value = match format!("v = {raw}").parse::<Table>().ok().and_then(|mut t| t.remove("v")) {
        Some(value) => value,
        None if raw.trim().parse::<i128>().is_ok() => {
            return Err(fail(format!(
                "expected an integer from -2^63 to 2^63 - 1, what TOML holds, found {}",
                raw.trim()
            )))
        }
        None => Value::String(raw.to_string()),
    };
    let steps: Vec<&str> = key.split('.').collect();
    if steps.iter().any(|s| s.is_empty()) {
        return Err(fail("expected a dotted key such as link_class.wireless.loss".into()));
    }
    let mut shapes = Shapes::of(schema, schema);
    let mut at = KeyPath::default();
    let mut slot: &mut Value = doc;
    for (n, step) in steps.iter().enumerate() {
        let is_last = n + 1 == steps.len();
        slot = match slot {
            Value::Table(t) => {
                if !t.contains_key(*step) && shapes.is_named(step) {
                    let names: Vec<&String> = t.keys().collect();
                    let expected = if names.is_empty() {
                        format!("{at} has no entries")
                    } else {
                        format!("expected one of {names:?}")
                    };
                    return Err(fail(format!("no entry {step:?} in {at}, and an override cannot add one; {expected}")));
                }
                let fresh = if is_last { value.clone() } else { Value::Table(Table::new()) };
                let entry = t.entry(step.to_string()).or_insert(fresh);
                shapes = shapes.key(step);
                at = at.key(step);
                entry
            }
            Value::Array(a) => {
                let len = a.len();
                let i: usize =
                    step.parse().map_err(|_| fail(format!("{step:?} indexes an array; expected a number")))?;
                shapes = shapes.index(i);
                at = at.index(i);
                a.get_mut(i).ok_or_else(|| fail(format!("index {i} is past the end of an array of {len}")))?
            }
            _ => return Err(fail(format!("{step:?} is inside a value that is not a table or array"))),
        };
    }
    *slot = value;
    Ok(())
}

/// Expands link classes into links, the shared `[tcp]` table into each
/// flow's, and each `tcp` table's `profile` into that stack's defaults
/// under its own keys, so that the typed document is complete and `--set`
/// on a class or on `tcp` reaches every user of it.
fn resolve(doc: &mut Value, inherited: &mut Inherited) -> Result<(), Invalid> {
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
            let name = name.clone();
            let Some(Value::Table(defaults)) = classes.as_ref().and_then(|c| c.get(name.as_str())) else {
                let known: Vec<String> = match &classes {
                    Some(Value::Table(c)) => c.keys().cloned().collect(),
                    _ => vec![],
                };
                return Err(Invalid::new(path, format!("no link class {name:?}; defined: {known:?}")));
            };
            for (k, v) in defaults {
                if !link.contains_key(k) {
                    link.insert(k.clone(), v.clone());
                    let copy = root.key("links").index(i).key(k);
                    inherited.0.push((copy, root.key("link_class").key(&name).key(k)));
                }
            }
        }
    }
    let tcp = top.get("tcp").cloned();
    if let (Some(tcp), Some(Value::Array(flows))) = (tcp, top.get_mut("flows")) {
        for (i, flow) in flows.iter_mut().enumerate() {
            let Value::Table(flow) = flow else { continue };
            let own = flow.remove("tcp").unwrap_or_else(|| Value::Table(Table::new()));
            for k in tcp.as_table().into_iter().flat_map(|t| t.keys()) {
                if !own.as_table().is_some_and(|t| t.contains_key(k)) {
                    inherited.0.push((root.key("flows").index(i).key("tcp").key(k), root.key("tcp").key(k)));
                }
            }
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
