//! What types cannot say: ranges, references between sections, that every
//! flow has a route both ways, and the coding schemes' parameter tables,
//! each checked by its protocol.

use super::wifi::WIFI_CLASS;
use super::{AppKind, GilbertElliottSpec, Layout, Payloads, ScenarioSpec};
use crate::medium::wifi::Channel;
use crate::routing::{first_cycle, Topology};
use ncmesh_proto::params::{probability, Invalid, KeyPath, Validate};
use ncmesh_proto::scheme::{ParsedParams, Registry, NONE};
use ncmesh_proto::wire::{ipv4, udp};
use std::collections::{BTreeMap, HashSet};

type Check = Result<(), Invalid>;

/// The largest UDP payload: an IPv4 packet's total length (65535 bytes) less
/// the IPv4 and UDP headers the simulator puts in front of it.
const MAX_PACKET_SIZE: u32 = (65_535 - ipv4::HEADER_LEN - udp::HEADER_LEN) as u32;

/// A UDP application sends at most one datagram a microsecond: faster than
/// any link the simulator models carries them (8 Gbit/s of 1000-byte
/// datagrams), and a run's events then grow with its duration at a pace it
/// can keep, where a gap below the clock's nanosecond would stop time.
const MAX_DATAGRAMS_PER_SECOND: u64 = 1_000_000;

fn fail(path: KeyPath, message: impl Into<String>) -> Check {
    Err(Invalid::new(path, message))
}

/// Checks the scenario; returns every scheme family's parameters, checked,
/// and the wireless channel resolved.
pub(crate) fn validate(
    spec: &ScenarioSpec,
    registry: &Registry,
) -> Result<(BTreeMap<String, ParsedParams>, Option<Channel>), Invalid> {
    let root = KeyPath::default();
    if spec.duration.0.as_nanos() == 0 {
        fail(root.key("duration"), "expected a positive duration")?;
    }
    let mut nodes = HashSet::new();
    for (i, id) in spec.nodes.iter().enumerate() {
        if !nodes.insert(*id) {
            fail(root.key("nodes").index(i), format!("node {id} is listed twice"))?;
        }
    }
    let node = |path: KeyPath, id: u32| -> Check {
        if nodes.contains(&id) {
            Ok(())
        } else {
            fail(path, format!("no node {id}; expected one of the labels in `nodes`"))
        }
    };
    let qdisc = |path: KeyPath, name: &str| -> Check {
        if registry.queue(name).is_some() {
            Ok(())
        } else {
            fail(
                path,
                format!(
                    "no queue discipline {name:?}; expected one of {:?}",
                    registry.queue_names().collect::<Vec<_>>()
                ),
            )
        }
    };

    let mut pairs = HashSet::new();
    let mut classes = HashSet::new();
    for (i, link) in spec.links.iter().enumerate() {
        let at = root.key("links").index(i);
        let [a, b] = link.between;
        node(at.key("between"), a)?;
        node(at.key("between"), b)?;
        if a == b {
            fail(at.key("between"), format!("a link needs two different nodes, found {a} twice"))?;
        }
        if !pairs.insert((a.min(b), a.max(b))) {
            fail(at.key("between"), format!("nodes {a} and {b} are already linked"))?;
        }
        probability("loss", link.loss, false).map_err(|e| e.under(&at))?;
        if let Some(p) = link.reverse_loss {
            probability("reverse_loss", p, false).map_err(|e| e.under(&at))?;
        }
        if let Some(ge) = &link.gilbert_elliott {
            let GilbertElliottSpec { p_good_to_bad, p_bad_to_good, loss_good, loss_bad } = *ge;
            let ge_at = at.key("gilbert_elliott");
            probability("p_good_to_bad", p_good_to_bad, true).map_err(|e| e.under(&ge_at))?;
            probability("p_bad_to_good", p_bad_to_good, true).map_err(|e| e.under(&ge_at))?;
            probability("loss_good", loss_good, false).map_err(|e| e.under(&ge_at))?;
            probability("loss_bad", loss_bad, true).map_err(|e| e.under(&ge_at))?;
        }
        if link.queue == 0 {
            fail(at.key("queue"), "expected a queue of at least 1 packet")?;
        }
        probability("corrupt", link.corrupt, true).map_err(|e| e.under(&at))?;
        if link.corrupt > 0.0 && spec.payloads != Payloads::Real {
            fail(at.key("corrupt"), "expected payloads = \"real\": only real bytes can be corrupted")?;
        }
        qdisc(at.key("qdisc"), &link.qdisc)?;
        classes.insert(link.class.clone().unwrap_or_default());
    }
    let channel = match &spec.wifi {
        Some(wifi) => {
            let at = root.key("wifi");
            wifi.validate(&at, &spec.nodes)?;
            qdisc(at.key("qdisc"), &wifi.qdisc)?;
            classes.insert(WIFI_CLASS.to_string());
            let channel = wifi.resolve(&spec.nodes, spec.seed);
            for [i, j] in channel.links() {
                let (a, b) = (channel.members[i], channel.members[j]);
                pairs.insert((a.min(b), a.max(b)));
            }
            Some(channel)
        }
        None => None,
    };
    for (name, class) in &spec.link_class {
        let at = root.key("link_class").key(name);
        if let Some(p) = class.loss {
            probability("loss", p, false).map_err(|e| e.under(&at))?;
        }
        if let Some(q) = &class.qdisc {
            qdisc(at.key("qdisc"), q)?;
        }
    }

    for (i, route) in spec.routes.iter().enumerate() {
        let at = root.key("routes").index(i);
        node(at.key("at"), route.at)?;
        node(at.key("to"), route.to)?;
        if route.via.is_empty() {
            fail(at.key("via"), "expected at least one next hop")?;
        }
        for (j, &v) in route.via.iter().enumerate() {
            node(at.key("via").index(j), v)?;
            let linked = pairs.contains(&(route.at.min(v), route.at.max(v)));
            if !linked {
                fail(at.key("via").index(j), format!("node {v} is not a neighbour of node {}", route.at))?;
            }
        }
    }

    spec.tcp.validate().map_err(|e| e.under(&root.key("tcp")))?;
    let params = coding_params(spec, registry)?;
    let topology = Topology::new(&Layout { spec, channel: channel.as_ref() });
    let duration = spec.duration.0;
    for (i, flow) in spec.flows.iter().enumerate() {
        let at = root.key("flows").index(i);
        node(at.key("src"), flow.src)?;
        node(at.key("dst"), flow.dst)?;
        if flow.src == flow.dst {
            fail(at.key("dst"), "a flow needs a destination other than its source")?;
        }
        if flow.count == 0 || flow.count > 100_000 {
            fail(at.key("count"), format!("expected 1 to 100000 flows, found {}", flow.count))?;
        }
        if flow.start.0 >= duration {
            fail(at.key("start"), format!("the flow starts at or after the end of the run ({duration})"))?;
        }
        if let Some(stop) = flow.stop {
            if stop.0 <= flow.start.0 {
                fail(at.key("stop"), "expected a stop time after the start time")?;
            }
        }
        let is_tcp = matches!(flow.app, AppKind::Bulk | AppKind::Sized);
        if let Some(connect) = flow.connect {
            if !is_tcp {
                fail(at.key("connect"), "only a TCP application opens a connection")?;
            }
            if connect.0 > flow.start.0 {
                fail(at.key("connect"), format!("expected a time at or before the start ({})", flow.start.0))?;
            }
        }
        if flow.prefix > 0 && !is_tcp {
            fail(at.key("prefix"), "only a TCP application writes ahead of its data")?;
        }
        match flow.app {
            AppKind::Sized if flow.bytes.is_none_or(|b| b == 0) => {
                fail(at.key("bytes"), "a sized transfer needs `bytes` > 0")?
            }
            AppKind::Cbr | AppKind::OnOff if flow.rate.is_none() => {
                fail(at.key("rate"), "a UDP application needs a `rate`")?
            }
            AppKind::Cbr | AppKind::OnOff if flow.packet_size < 8 => fail(
                at.key("packet_size"),
                "expected at least 8 bytes: the first 8 say where a datagram sits in the flow's stream",
            )?,
            AppKind::Cbr | AppKind::OnOff if flow.packet_size > MAX_PACKET_SIZE => fail(
                at.key("packet_size"),
                format!(
                    "expected at most {MAX_PACKET_SIZE} bytes, what an IPv4 packet holds with its IPv4 and UDP \
                     headers, found {}",
                    flow.packet_size
                ),
            )?,
            AppKind::OnOff if flow.on_time.0.as_nanos() == 0 => {
                fail(at.key("on_time"), "expected a positive mean on time")?
            }
            _ => {}
        }
        if let (AppKind::Cbr | AppKind::OnOff, Some(rate)) = (flow.app, flow.rate) {
            let fastest = MAX_DATAGRAMS_PER_SECOND * 8 * u64::from(flow.packet_size);
            if rate.0 > fastest {
                fail(
                    at.key("rate"),
                    format!(
                        "expected at most one datagram a microsecond, {fastest} bit/s with packet_size = {} bytes, \
                         found {}",
                        flow.packet_size, rate.0
                    ),
                )?;
            }
        }
        flow.tcp.validate().map_err(|e| e.under(&at.key("tcp")))?;
        if let Some(name) = &flow.coding {
            let scheme = (name != NONE).then(|| registry.scheme(name));
            match scheme {
                None => {}
                Some(None) => {
                    fail(at.key("coding"), format!("no coding scheme {name:?}; expected one of {:?}", known(registry)))?
                }
                Some(Some(s)) if !s.codes_ends() => fail(
                    at.key("coding"),
                    format!("{name:?} codes per hop, not at the ends of flows; choose it with coding.scheme"),
                )?,
                Some(Some(s)) => {
                    if let Some(why) = s.refuse_flow(&params[s.params_key()], is_tcp.then_some(&flow.tcp)) {
                        fail(at.key("coding"), why)?;
                    }
                }
            }
        }
        let (src, dst) = (topology.index[&flow.src], topology.index[&flow.dst]);
        let check_path = |at: KeyPath, path: &[u32]| -> Result<Vec<u32>, Invalid> {
            let mut seen = HashSet::new();
            for (j, &n) in path.iter().enumerate() {
                node(at.index(j), n)?;
                if !seen.insert(n) {
                    fail(at.index(j), format!("node {n} appears twice on the path"))?;
                }
            }
            if path.first() != Some(&flow.src) || path.last() != Some(&flow.dst) {
                fail(at, format!("the path must run from the source {} to the destination {}", flow.src, flow.dst))?;
            }
            Ok(path.iter().map(|n| topology.index[n]).collect())
        };
        if let Some(paths) = &flow.paths {
            let at = at.key("paths");
            if flow.path.is_some() {
                fail(at.clone(), "give either `path` or `paths`, not both")?;
            }
            if paths.is_empty() {
                fail(at.clone(), "expected at least one path")?;
            }
            let mut forward = Vec::with_capacity(paths.len());
            for (j, path) in paths.iter().enumerate() {
                let nodes = check_path(at.index(j), path)?;
                if let Err(e) = topology.route(i as u32, src, dst, Some(&nodes)) {
                    fail(at.index(j), e)?;
                }
                forward.push(nodes);
            }
            if let Some(j) = first_cycle(spec.nodes.len(), &forward) {
                fail(
                    at.index(j),
                    "the path crosses an earlier path in the opposite direction, so packets switching paths could loop",
                )?;
            }
            // Links are full duplex, so reversed paths are linked and loop-free too.
            continue;
        }
        let pinned = match &flow.path {
            Some(path) => Some(check_path(at.key("path"), path)?),
            None => None,
        };
        let reversed: Option<Vec<_>> = pinned.as_ref().map(|p| p.iter().rev().copied().collect());
        if let Err(e) = topology.route(i as u32, src, dst, pinned.as_deref()) {
            fail(at.clone(), e)?;
        }
        if is_tcp {
            if let Err(e) = topology.route(i as u32, dst, src, reversed.as_deref()) {
                fail(at, format!("{e} (TCP needs a route back for its ACKs)"))?;
            }
        }
    }

    let coding = root.key("coding");
    for (j, &n) in spec.coding.hop_nodes.iter().flatten().enumerate() {
        node(coding.key("hop_nodes").index(j), n)?;
    }
    for (j, class) in spec.coding.hop_classes.iter().flatten().enumerate() {
        if !classes.contains(class) {
            fail(coding.key("hop_classes").index(j), format!("no link has the class {class:?}"))?;
        }
    }

    let samples = duration.as_nanos() / spec.probes.interval.0.as_nanos().max(1);
    if spec.probes.interval.0.as_nanos() == 0 || samples > 10_000_000 {
        fail(
            root.key("probes").key("interval"),
            format!("expected a positive interval giving at most 10 million samples over the run, found {samples}"),
        )?;
    }
    let emulate = root.key("emulate");
    if !(576..=65_535).contains(&spec.emulate.mtu) {
        fail(emulate.key("mtu"), format!("expected an MTU of 576 to 65535 bytes, found {}", spec.emulate.mtu))?;
    }
    for (j, command) in spec.emulate.commands.iter().enumerate() {
        let at = emulate.key("commands").index(j);
        node(at.key("node"), command.node)?;
        if command.run.trim().is_empty() {
            fail(at.key("run"), "expected a command".to_string())?;
        }
    }
    if let super::QueueProbe::Links(links) = &spec.probes.queues {
        for (j, [a, b]) in links.iter().enumerate() {
            if !pairs.contains(&(*a.min(b), *a.max(b))) {
                fail(root.key("probes").key("queues").index(j), format!("nodes {a} and {b} are not linked"))?;
            }
        }
    }
    Ok((params, channel))
}

fn known(registry: &Registry) -> Vec<&'static str> {
    std::iter::once(NONE).chain(registry.names()).collect()
}

/// `coding.scheme` names a scheme, and every parameter table, given or
/// not, is read and checked by the scheme family it belongs to.
fn coding_params(spec: &ScenarioSpec, registry: &Registry) -> Result<BTreeMap<String, ParsedParams>, Invalid> {
    let at = KeyPath::default().key("coding");
    let name = &spec.coding.scheme;
    if name != NONE && registry.scheme(name).is_none() {
        fail(at.key("scheme"), format!("no coding scheme {name:?}; expected one of {:?}", known(registry)))?;
    }
    let tables = registry.params_tables();
    for key in spec.coding.params.keys() {
        if !tables.iter().any(|s| s.params_key() == key) {
            let expected: Vec<&str> = ["scheme", "hop_nodes", "hop_classes"]
                .into_iter()
                .chain(tables.iter().map(|s| s.params_key()))
                .collect();
            fail(at.key(key), format!("unknown field `{key}`, expected one of {expected:?}"))?;
        }
    }
    let mut params = BTreeMap::new();
    for scheme in tables {
        let key = scheme.params_key();
        let table = spec.coding.params.get(key).cloned().unwrap_or_else(|| toml::Value::Table(toml::Table::new()));
        params.insert(key.to_string(), scheme.parse_params(table).map_err(|e| e.under(&at.key(key)))?);
    }
    Ok(params)
}
