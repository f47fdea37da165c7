//! What types cannot say: ranges, references between sections, and that
//! every flow has a route both ways.

use super::load::{Invalid, KeyPath};
use super::{AppKind, GilbertElliottSpec, ScenarioSpec, Scheme};
use crate::routing::{first_cycle, Topology};
use ncmesh_proto::honc::HoncParams;
use ncmesh_proto::tcp::TcpConfig;
use std::collections::HashSet;

type Check = Result<(), Invalid>;

fn fail(path: KeyPath, message: impl Into<String>) -> Check {
    Err(Invalid { path, message: message.into() })
}

fn probability(path: KeyPath, p: f64, closed: bool) -> Check {
    let ok = if closed { (0.0..=1.0).contains(&p) } else { (0.0..1.0).contains(&p) };
    if ok {
        Ok(())
    } else {
        fail(path, format!("expected a probability in [0, 1{}, found {p}", if closed { "]" } else { ")" }))
    }
}

pub(crate) fn validate(spec: &ScenarioSpec) -> Check {
    let root = KeyPath::default();
    if spec.duration.0.as_nanos() == 0 {
        return fail(root.key("duration"), "expected a positive duration");
    }
    let mut nodes = HashSet::new();
    for (i, id) in spec.nodes.iter().enumerate() {
        if !nodes.insert(*id) {
            return fail(root.key("nodes").index(i), format!("node {id} is listed twice"));
        }
    }
    let node = |path: KeyPath, id: u32| -> Check {
        if nodes.contains(&id) {
            Ok(())
        } else {
            fail(path, format!("no node {id}; expected one of the labels in `nodes`"))
        }
    };

    let mut pairs = HashSet::new();
    for (i, link) in spec.links.iter().enumerate() {
        let at = root.key("links").index(i);
        let [a, b] = link.between;
        node(at.key("between"), a)?;
        node(at.key("between"), b)?;
        if a == b {
            return fail(at.key("between"), format!("a link needs two different nodes, found {a} twice"));
        }
        if !pairs.insert((a.min(b), a.max(b))) {
            return fail(at.key("between"), format!("nodes {a} and {b} are already linked"));
        }
        probability(at.key("loss"), link.loss, false)?;
        if let Some(p) = link.reverse_loss {
            probability(at.key("reverse_loss"), p, false)?;
        }
        if let Some(ge) = &link.gilbert_elliott {
            let GilbertElliottSpec { p_good_to_bad, p_bad_to_good, loss_good, loss_bad } = *ge;
            let ge_at = at.key("gilbert_elliott");
            probability(ge_at.key("p_good_to_bad"), p_good_to_bad, true)?;
            probability(ge_at.key("p_bad_to_good"), p_bad_to_good, true)?;
            probability(ge_at.key("loss_good"), loss_good, false)?;
            probability(ge_at.key("loss_bad"), loss_bad, true)?;
        }
        if link.queue == 0 {
            return fail(at.key("queue"), "expected a queue of at least 1 packet");
        }
    }
    for (name, class) in &spec.link_class {
        if let Some(p) = class.loss {
            probability(root.key("link_class").key(name).key("loss"), p, false)?;
        }
    }

    for (i, route) in spec.routes.iter().enumerate() {
        let at = root.key("routes").index(i);
        node(at.key("at"), route.at)?;
        node(at.key("to"), route.to)?;
        if route.via.is_empty() {
            return fail(at.key("via"), "expected at least one next hop");
        }
        for (j, &v) in route.via.iter().enumerate() {
            node(at.key("via").index(j), v)?;
            let linked = pairs.contains(&(route.at.min(v), route.at.max(v)));
            if !linked {
                return fail(at.key("via").index(j), format!("node {v} is not a neighbour of node {}", route.at));
            }
        }
    }

    tcp(root.key("tcp"), &spec.tcp)?;
    let topology = Topology::new(spec);
    let duration = spec.duration.0;
    for (i, flow) in spec.flows.iter().enumerate() {
        let at = root.key("flows").index(i);
        node(at.key("src"), flow.src)?;
        node(at.key("dst"), flow.dst)?;
        if flow.src == flow.dst {
            return fail(at.key("dst"), "a flow needs a destination other than its source");
        }
        if flow.count == 0 || flow.count > 100_000 {
            return fail(at.key("count"), format!("expected 1 to 100000 flows, found {}", flow.count));
        }
        if flow.start.0 >= duration {
            return fail(at.key("start"), format!("the flow starts at or after the end of the run ({duration})"));
        }
        if let Some(stop) = flow.stop {
            if stop.0 <= flow.start.0 {
                return fail(at.key("stop"), "expected a stop time after the start time");
            }
        }
        match flow.app {
            AppKind::Sized if flow.bytes.is_none_or(|b| b == 0) => return fail(at.key("bytes"), "a sized transfer needs `bytes` > 0"),
            AppKind::Cbr | AppKind::OnOff if flow.rate.is_none() => return fail(at.key("rate"), "a UDP application needs a `rate`"),
            AppKind::Cbr | AppKind::OnOff if flow.packet_size == 0 => return fail(at.key("packet_size"), "expected at least 1 byte"),
            AppKind::OnOff if flow.on_time.0.as_nanos() == 0 => return fail(at.key("on_time"), "expected a positive mean on time"),
            _ => {}
        }
        tcp(at.key("tcp"), &flow.tcp)?;
        if let Some(scheme) = flow.coding {
            let end_to_end = |s: Scheme| matches!(s, Scheme::None | Scheme::TcpNcEndToEnd);
            if !(end_to_end(scheme) && end_to_end(spec.coding.scheme)) && scheme != spec.coding.scheme {
                return fail(at.key("coding"), format!("only end-to-end schemes (\"none\", \"tcpnc-e2e\") can differ per flow; coding.scheme is {:?}", spec.coding.scheme));
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
                return fail(at, "give either `path` or `paths`, not both");
            }
            if paths.is_empty() {
                return fail(at, "expected at least one path");
            }
            let mut forward = Vec::with_capacity(paths.len());
            for (j, path) in paths.iter().enumerate() {
                let nodes = check_path(at.index(j), path)?;
                if let Err(e) = topology.route(i as u32, src, dst, Some(&nodes)) {
                    return fail(at.index(j), e);
                }
                forward.push(nodes);
            }
            if let Some(j) = first_cycle(spec.nodes.len(), &forward) {
                return fail(at.index(j), "the path crosses an earlier path in the opposite direction, so packets switching paths could loop");
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
            return fail(at, e);
        }
        if matches!(flow.app, AppKind::Bulk | AppKind::Sized) {
            if let Err(e) = topology.route(i as u32, dst, src, reversed.as_deref()) {
                return fail(at, format!("{e} (TCP needs a route back for its ACKs)"));
            }
        }
    }

    let nc = &spec.coding.tcpnc;
    let nc_at = root.key("coding").key("tcpnc");
    if !(1..=8).contains(&nc.field) {
        return fail(nc_at.key("field"), format!("expected q in 1..=8 for GF(2^q), found {}", nc.field));
    }
    if let Some(r) = nc.redundancy {
        if !(1.0..=100.0).contains(&r) {
            return fail(nc_at.key("redundancy"), format!("expected R in [1, 100], found {r}"));
        }
    }
    if !(0.0..=10.0).contains(&nc.margin) {
        return fail(nc_at.key("margin"), format!("expected a margin in [0, 10], found {}", nc.margin));
    }
    if nc.relay_queue == 0 {
        return fail(nc_at.key("relay_queue"), "expected at least 1 packet");
    }

    honc(root.key("coding").key("honc"), &spec.coding.honc)?;

    let samples = duration.as_nanos() / spec.probes.interval.0.as_nanos().max(1);
    if spec.probes.interval.0.as_nanos() == 0 || samples > 10_000_000 {
        return fail(root.key("probes").key("interval"), format!("expected a positive interval giving at most 10 million samples over the run, found {samples}"));
    }
    if let super::QueueProbe::Links(links) = &spec.probes.queues {
        for (j, [a, b]) in links.iter().enumerate() {
            if !pairs.contains(&(*a.min(b), *a.max(b))) {
                return fail(root.key("probes").key("queues").index(j), format!("nodes {a} and {b} are not linked"));
            }
        }
    }
    Ok(())
}

fn honc(at: KeyPath, h: &HoncParams) -> Check {
    if !(1..=255).contains(&h.l) {
        return fail(at.key("l"), format!("expected a block size l in 1..=255, found {}", h.l));
    }
    if !(h.p_th > 0.0 && h.p_th < 1.0) {
        return fail(at.key("p_th"), format!("expected P_th in (0, 1), found {}", h.p_th));
    }
    if !(0.0..1.0).contains(&h.alpha) {
        return fail(at.key("alpha"), format!("expected alpha in [0, 1), found {}", h.alpha));
    }
    if let Some(p) = h.fixed_loss {
        if !(0.0..=0.99).contains(&p) {
            return fail(at.key("fixed_loss"), format!("expected a loss rate in [0, 0.99], found {p}"));
        }
    }
    if let Some(d) = h.fixed_delay {
        if !(0.0..=60.0).contains(&d) {
            return fail(at.key("fixed_delay"), format!("expected a delay in [0, 60] seconds, found {d}"));
        }
    }
    if h.spoof_window == 0 {
        return fail(at.key("spoof_window"), "expected at least 1 packet");
    }
    if !(0.0..=60.0).contains(&h.flush_after) {
        return fail(at.key("flush_after"), format!("expected [0, 60] seconds, found {}", h.flush_after));
    }
    if !(1..=4096).contains(&h.max_codec_pairs) {
        return fail(at.key("max_codec_pairs"), format!("expected 1..=4096, found {}", h.max_codec_pairs));
    }
    Ok(())
}

fn tcp(at: KeyPath, c: &TcpConfig) -> Check {
    let positive = [("mss", c.mss), ("initial_cwnd", c.initial_cwnd), ("rcv_window", c.rcv_window), ("dupthresh", c.dupthresh)];
    for (key, value) in positive {
        if value == 0 {
            return fail(at.key(key), "expected at least 1");
        }
    }
    if c.mss > 65_000 {
        return fail(at.key("mss"), format!("expected at most 65000 bytes, found {}", c.mss));
    }
    if c.min_rto > c.max_rto {
        return fail(at.key("min_rto"), "expected min_rto <= max_rto");
    }
    if c.min_rto.as_nanos() == 0 {
        return fail(at.key("min_rto"), "expected a positive minimum RTO");
    }
    if !(c.cubic.beta > 0.0 && c.cubic.beta < 1.0) {
        return fail(at.key("cubic").key("beta"), format!("expected beta in (0, 1), found {}", c.cubic.beta));
    }
    if !(c.cubic.c > 0.0) {
        return fail(at.key("cubic").key("c"), "expected C > 0");
    }
    let v = c.vegas;
    if !(v.alpha >= 0.0 && v.alpha <= v.beta && v.gamma >= 0.0) {
        return fail(at.key("vegas"), format!("expected 0 <= alpha <= beta and gamma >= 0, found alpha {} beta {} gamma {}", v.alpha, v.beta, v.gamma));
    }
    Ok(())
}
