//! Building a network from a scenario: nodes with their interfaces,
//! routes and coding layers (through the scenario's registry), media, and
//! the flows' endpoints. Names no coding protocol.

use crate::app::{Endpoint, FlowRecord, Schedule, TcpSink, TcpSource, UdpSink, UdpSource};
use crate::medium::{AnyMedium, Corruption, LossModel, PointToPoint, Port};
use crate::rng::{Purpose, Rng};
use crate::routing::{FlowRoutes, NodeIndex, Topology, NO_ROUTE};
use crate::scenario::wifi::WIFI_CLASS;
use crate::scenario::{AppKind, FlowSpec, NodeId, Payloads, Scenario};
use ncmesh_proto::marks::FlowMarks;
use ncmesh_proto::node::{EndLayer, HopLayer, IfaceId, Interface, InterfaceInfo, NextHop, Node, NodeConfig};
use ncmesh_proto::scheme::{EndContext, FlowInfo, HopContext, TcpInfo, NONE};
use ncmesh_proto::tcp::{self, Connection};
use ncmesh_proto::wire::udp;
use ncmesh_proto::{Duration, FlowKey, Instant};
use rustc_hash::FxHashMap;
use std::net::Ipv4Addr;

/// The first port of the flows' sources; flow `f` uses `SOURCE_PORT + f`,
/// so flows order by their number wherever they are kept by 5-tuple.
pub const SOURCE_PORT: u16 = 10_000;
/// The port every flow's destination listens on.
pub const DESTINATION_PORT: u16 = 5001;

/// The address of the node with index `n`: 10.0.0.0/8, from 10.0.0.1.
pub fn address(n: NodeIndex) -> Ipv4Addr {
    Ipv4Addr::from(0x0A00_0001 + n)
}

/// The media of every link, in the simulator and in `ncmesh emulate`: link
/// i gives channels 2i (as written) and 2i + 1 (reversed), each with its
/// own loss and corruption streams from the run's seed.
pub fn link_media(spec: &crate::scenario::ScenarioSpec) -> Vec<PointToPoint> {
    let seed = spec.seed;
    let mut media = Vec::with_capacity(2 * spec.links.len());
    for (i, link) in spec.links.iter().enumerate() {
        for side in 0..2 {
            let c = 2 * i + side;
            let loss = match link.gilbert_elliott {
                Some(g) => LossModel::GilbertElliott {
                    p_good_to_bad: g.p_good_to_bad,
                    p_bad_to_good: g.p_bad_to_good,
                    loss_good: g.loss_good,
                    loss_bad: g.loss_bad,
                    bad: false,
                },
                None if side == 1 => LossModel::Bernoulli { p: link.reverse_loss.unwrap_or(link.loss) },
                None => LossModel::Bernoulli { p: link.loss },
            };
            let corruption = Corruption { p: link.corrupt, rng: Rng::stream(seed, Purpose::Corruption, c as u64) };
            media.push(PointToPoint::new(
                link.capacity.0,
                link.delay.0,
                loss,
                Rng::stream(seed, Purpose::LinkLoss, c as u64),
                corruption,
            ));
        }
    }
    media
}

/// Which end of a flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Source = 0,
    Sink = 1,
}

/// One flow: its two endpoints and what they measure.
#[derive(Debug)]
pub struct Flow {
    pub ends: [Box<dyn Endpoint>; 2],
    pub record: FlowRecord,
    /// The nodes of the source and the sink.
    pub nodes: [usize; 2],
    pub labels: [NodeId; 2],
    pub app: AppKind,
    /// When the application opens its connection: `start`, or earlier.
    pub connect: Instant,
    pub start: Instant,
    pub stop: Instant,
}

/// A direction of a link, as results report it.
#[derive(Clone, Debug)]
pub struct LinkEnd {
    pub from: NodeId,
    pub to: NodeId,
    pub class: String,
    /// The transmitting node and its interface.
    pub node: usize,
    pub iface: IfaceId,
}

#[derive(Debug)]
pub struct Network {
    pub nodes: Vec<Node>,
    pub labels: Vec<NodeId>,
    /// One point-to-point medium per direction of each link, in scenario
    /// order, then the wireless channel if there is one.
    pub media: Vec<AnyMedium>,
    /// Per medium: what each port is attached to (node, interface).
    pub ports: Vec<Vec<(usize, IfaceId)>>,
    /// Per node and interface: the medium it sends on, and its port there.
    pub tx: Vec<Vec<(usize, Port)>>,
    /// Per point-to-point medium: the direction of the link it carries.
    pub links: Vec<LinkEnd>,
    pub flows: Vec<Flow>,
    /// Per node: the flow and end a packet delivered to its host belongs to.
    pub hosts: Vec<FxHashMap<FlowKey, (usize, End)>>,
}

impl Network {
    pub fn new(scenario: &Scenario) -> Network {
        let spec = &scenario.spec;
        let registry = &scenario.registry;
        let topology = scenario.topology();
        let seed = spec.seed;
        let real_payloads = spec.payloads == Payloads::Real;
        let n = topology.labels.len();
        let wired = 2 * spec.links.len();

        // Media: the links' (see `link_media`), then the wireless channel.
        let links_media = link_media(spec);
        let mut losses: Vec<f64> = links_media.iter().map(PointToPoint::loss_rate).collect();
        let mut media: Vec<AnyMedium> = Vec::with_capacity(wired + 1);
        media.extend(links_media.into_iter().map(AnyMedium::PointToPoint));
        // The stations of the wireless channel, by node, and its pairs' losses.
        let mut station_of = vec![None; n];
        if let Some(channel) = &scenario.channel {
            for (port, label) in channel.members.iter().enumerate() {
                station_of[topology.index[label] as usize] = Some(port);
            }
            for &(from, to) in &topology.channels[wired..] {
                let (i, j) = (station_of[from as usize], station_of[to as usize]);
                losses.push(channel.loss(i.expect("a station"), j.expect("a station")));
            }
        }

        // Interfaces: one per link end, in the order of `topology.out`, then
        // one on the wireless channel.
        let hop_scheme = (spec.coding.scheme != NONE)
            .then(|| registry.scheme(&spec.coding.scheme))
            .flatten()
            .filter(|s| s.codes_hops());
        let hop_classes = spec.coding.hop_classes.clone().or_else(|| hop_scheme.and_then(|s| s.default_hop_classes()));
        let coded = |class: &str| hop_classes.as_ref().is_none_or(|classes| classes.iter().any(|c| c == class));
        let mut ports = vec![vec![(0, 0); 2]; wired];
        let mut tx = vec![Vec::new(); n];
        let mut links = Vec::with_capacity(wired);
        let mut infos: Vec<Vec<InterfaceInfo>> = vec![Vec::new(); n];
        let mut queues: Vec<Vec<(String, usize)>> = vec![Vec::new(); n];
        // The interface each channel leaves its node by.
        let mut iface_of = vec![0; topology.channels.len()];
        for (node, out) in topology.out.iter().enumerate() {
            for &(next, c) in out.iter().filter(|&&(_, c)| (c as usize) < wired) {
                let iface = infos[node].len();
                let link = &spec.links[c as usize / 2];
                let class = link.class.clone().unwrap_or_default();
                infos[node].push(InterfaceInfo {
                    coded: coded(&class),
                    class,
                    neighbours: vec![address(next)],
                    capacity_bps: link.capacity.0,
                    delay: link.delay.0,
                    loss: losses[c as usize],
                    queue: link.queue as usize,
                });
                queues[node].push((link.qdisc.clone(), link.queue as usize));
                iface_of[c as usize] = iface;
                tx[node].push((c as usize, 0));
                ports[c as usize][0] = (node, iface);
                let back = topology.channel(next, node as NodeIndex).expect("links are full duplex") as usize;
                ports[back][1] = (node, iface);
            }
        }
        for (c, &(from, to)) in topology.channels[..wired].iter().enumerate() {
            let (node, iface) = ports[c][0];
            links.push(LinkEnd {
                from: topology.labels[from as usize],
                to: topology.labels[to as usize],
                class: spec.links[c / 2].class.clone().unwrap_or_default(),
                node,
                iface,
            });
        }
        if let (Some(channel), Some(wifi)) = (&scenario.channel, &spec.wifi) {
            let m = media.len();
            let members: Vec<usize> = channel.members.iter().map(|l| topology.index[l] as usize).collect();
            let addresses: Vec<Ipv4Addr> = members.iter().map(|&node| address(node as NodeIndex)).collect();
            let mut partners_of = vec![Vec::new(); members.len()];
            for [i, j] in channel.links() {
                partners_of[i].push(j);
                partners_of[j].push(i);
            }
            let mut station_ports = Vec::with_capacity(members.len());
            for (port, &node) in members.iter().enumerate() {
                let iface = infos[node].len();
                let partners = &partners_of[port];
                let loss = partners.iter().map(|&j| channel.loss(port, j)).sum::<f64>() / partners.len().max(1) as f64;
                infos[node].push(InterfaceInfo {
                    coded: coded(WIFI_CLASS),
                    class: WIFI_CLASS.to_string(),
                    neighbours: partners.iter().map(|&j| addresses[j]).collect(),
                    capacity_bps: channel.config.data.bps,
                    delay: Duration::ZERO,
                    loss,
                    queue: wifi.queue as usize,
                });
                queues[node].push((wifi.qdisc.clone(), wifi.queue as usize));
                tx[node].push((m, port));
                station_ports.push((node, iface));
            }
            for (c, &(from, _)) in topology.channels.iter().enumerate().skip(wired) {
                iface_of[c] = station_ports[station_of[from as usize].expect("a station")].1;
            }
            media.push(AnyMedium::Wifi(Box::new(channel.build(&addresses, &members, seed))));
            ports.push(station_ports);
        }

        // Flows: their keys, what their handshakes settle, and their routes.
        let end = Instant(spec.duration.0.as_nanos());
        let mut described = Vec::new();
        for spec_flow in &spec.flows {
            for _ in 0..spec_flow.count {
                let f = described.len();
                let (src, dst) = (topology.index[&spec_flow.src], topology.index[&spec_flow.dst]);
                let is_tcp = matches!(spec_flow.app, AppKind::Bulk | AppKind::Sized);
                let key = FlowKey {
                    src: address(src),
                    dst: address(dst),
                    protocol: if is_tcp { tcp::PROTOCOL } else { udp::PROTOCOL },
                    src_port: SOURCE_PORT + (f % 50_000) as u16,
                    dst_port: DESTINATION_PORT + (f / 50_000) as u16,
                };
                let mut isn = Rng::stream(seed, Purpose::Isn, f as u64);
                let conn = Connection {
                    local_port: key.src_port,
                    remote_port: key.dst_port,
                    local_isn: isn.next_u64() as u32,
                    remote_isn: isn.next_u64() as u32,
                };
                // The data starts one past the ISN when a SYN takes it.
                let data_isn = conn.local_isn.wrapping_add(spec_flow.tcp.handshake as u32);
                let tcp = is_tcp.then(|| TcpInfo { config: spec_flow.tcp.clone(), isn: data_isn });
                let routes = flow_routes(&topology, spec_flow, f as u32);
                described.push((FlowInfo { key, tcp }, conn, spec_flow, routes, [src as usize, dst as usize]));
            }
        }
        let flow_infos: Vec<FlowInfo> = described.iter().map(|d| d.0.clone()).collect();

        // Nodes, with their hop layers.
        let hop_nodes: Option<Vec<usize>> =
            spec.coding.hop_nodes.as_ref().map(|ids| ids.iter().map(|id| topology.index[id] as usize).collect());
        let parsers = registry.parsers();
        let mut nodes: Vec<Node> = (0..n)
            .map(|node| {
                let ctx = HopContext {
                    addr: address(node as NodeIndex),
                    interfaces: &infos[node],
                    flows: &flow_infos,
                    seed: Rng::stream(seed, Purpose::Coding, (1 << 32) + node as u64).next_u64(),
                    real_payloads,
                    parsers,
                };
                let runs_here = hop_nodes.as_ref().is_none_or(|ns| ns.contains(&node));
                let hop: Option<Box<dyn HopLayer>> =
                    hop_scheme.filter(|_| runs_here).and_then(|s| s.hop_layer(&scenario.params[s.params_key()], &ctx));
                let ifaces = infos[node]
                    .iter()
                    .zip(&queues[node])
                    .map(|(info, (qdisc, size))| {
                        let queue = registry.queue(qdisc).expect("the scenario checks queue disciplines");
                        Interface::new(info.clone(), (queue.build)(*size))
                    })
                    .collect();
                Node::new(NodeConfig { addr: ctx.addr, real_payloads, parsers: parsers.clone() }, ifaces, hop)
            })
            .collect();

        // Routes, end layers and endpoints.
        let mut hosts = vec![FxHashMap::default(); n];
        let mut flows = Vec::with_capacity(described.len());
        for (f, (info, conn, spec_flow, routes, ends)) in described.into_iter().enumerate() {
            let key = info.key;
            for (dir_key, table) in [(key, &routes[0]), (key.reversed(), &routes[1])] {
                install(&mut nodes, &topology, &iface_of, dir_key, table);
            }
            let end_name = spec_flow.coding.as_deref().unwrap_or(&spec.coding.scheme);
            let end_scheme = (end_name != NONE).then(|| registry.scheme(end_name)).flatten().filter(|s| s.codes_ends());
            if let Some(s) = end_scheme {
                let params = &scenario.params[s.params_key()];
                if s.refuse_flow(params, info.tcp.as_ref().map(|t| &t.config)).is_none() {
                    let path_loss = 1.0 - path_delivery(&topology, &losses, &routes[0], ends);
                    let layer_seed = Rng::stream(seed, Purpose::Coding, f as u64).next_u64();
                    let marks = FlowMarks::default();
                    for (at_source, node) in [(true, ends[0]), (false, ends[1])] {
                        let ctx = EndContext {
                            flow: &info,
                            at_source,
                            path_loss,
                            seed: layer_seed,
                            real_payloads,
                            parsers,
                            marks: &marks,
                        };
                        let layer: Option<Box<dyn EndLayer>> = s.end_layer(params, &ctx);
                        if let Some(layer) = layer {
                            nodes[node].add_end_layer(if at_source { key } else { key.reversed() }, layer);
                        }
                    }
                }
            }
            hosts[ends[0]].insert(key.reversed(), (f, End::Source));
            hosts[ends[1]].insert(key, (f, End::Sink));
            let start = Instant(spec_flow.start.0.as_nanos());
            let connect = spec_flow.connect.map_or(start, |c| Instant(c.0.as_nanos()));
            let stop = spec_flow.stop.map_or(end, |s| Instant(s.0.as_nanos())).min(end);
            let rate = spec_flow.rate.map_or(0, |r| r.0);
            let endpoints: [Box<dyn Endpoint>; 2] = match spec_flow.app {
                AppKind::Bulk | AppKind::Sized => [
                    Box::new(TcpSource::new(
                        key,
                        &spec_flow.tcp,
                        conn,
                        spec_flow.prefix,
                        spec_flow.bytes,
                        real_payloads,
                    )),
                    Box::new(TcpSink::new(key, &spec_flow.tcp, conn.reversed(), spec_flow.prefix)),
                ],
                AppKind::Cbr => [
                    Box::new(UdpSource::new(key, Schedule::cbr(spec_flow.packet_size, rate), real_payloads)),
                    Box::new(UdpSink),
                ],
                AppKind::OnOff => {
                    let rng = Rng::stream(seed, Purpose::Application, f as u64);
                    let schedule =
                        Schedule::on_off(spec_flow.packet_size, rate, spec_flow.on_time.0, spec_flow.off_time.0, rng);
                    [Box::new(UdpSource::new(key, schedule, real_payloads)), Box::new(UdpSink)]
                }
            };
            let content_seed = Rng::stream(seed, Purpose::Content, f as u64).next_u64();
            flows.push(Flow {
                ends: endpoints,
                record: FlowRecord::new(content_seed, spec.probes.interval.0),
                nodes: ends,
                labels: [spec_flow.src, spec_flow.dst],
                app: spec_flow.app,
                connect,
                start,
                stop,
            });
        }
        Network { nodes, labels: topology.labels.clone(), media, ports, tx, links, flows, hosts }
    }

    /// The interfaces on the wireless channel, keyed for queue probes:
    /// (node label, 0, node, interface).
    pub fn wireless_interfaces(&self) -> impl Iterator<Item = (u32, u32, usize, IfaceId)> + '_ {
        let channel = self.media.iter().position(|m| matches!(m, AnyMedium::Wifi(_)));
        channel
            .into_iter()
            .flat_map(move |m| self.ports[m].iter().map(|&(node, iface)| (self.labels[node], 0, node, iface)))
    }
}

/// The routes of one flow in each direction.
fn flow_routes(topology: &Topology, flow: &FlowSpec, f: u32) -> [FlowRoutes; 2] {
    let no_route = || FlowRoutes::single(vec![NO_ROUTE; topology.labels.len()]);
    let (src, dst) = (topology.index[&flow.src], topology.index[&flow.dst]);
    match &flow.paths {
        Some(paths) => {
            let there: Vec<Vec<NodeIndex>> =
                paths.iter().map(|p| p.iter().map(|n| topology.index[n]).collect()).collect();
            let back: Vec<Vec<NodeIndex>> = there.iter().map(|p| p.iter().rev().copied().collect()).collect();
            [
                topology.multipath(f, &there).unwrap_or_else(|_| no_route()),
                topology.multipath(f, &back).unwrap_or_else(|_| no_route()),
            ]
        }
        None => {
            let path: Option<Vec<NodeIndex>> =
                flow.path.as_ref().map(|p| p.iter().map(|n| topology.index[n]).collect());
            let back: Option<Vec<NodeIndex>> = path.as_ref().map(|p| p.iter().rev().copied().collect());
            let route = |from, to, pinned: Option<&[NodeIndex]>| {
                topology
                    .route(f, from, to, pinned)
                    .map(|r| FlowRoutes::single(topology.table(&r)))
                    .unwrap_or_else(|_| no_route())
            };
            [route(src, dst, path.as_deref()), route(dst, src, back.as_deref())]
        }
    }
}

/// Gives every node on `routes` its next hops for `key`; `iface_of[c]` is
/// the interface channel `c` leaves its node by.
fn install(nodes: &mut [Node], topology: &Topology, iface_of: &[IfaceId], key: FlowKey, routes: &FlowRoutes) {
    let hop = |c: u32| NextHop { iface: iface_of[c as usize], neighbour: address(topology.channels[c as usize].1) };
    for (node, &c) in routes.table.iter().enumerate() {
        if c == NO_ROUTE {
            continue;
        }
        let hops = match routes.branch(node as NodeIndex) {
            Some(branch) => branch.channels.iter().map(|&k| hop(k)).collect(),
            None => vec![hop(c)],
        };
        nodes[node].routes_mut().add_flow(key, hops);
    }
}

/// The probability that a packet crosses the flow's forward path, from
/// the configured losses.
fn path_delivery(topology: &Topology, losses: &[f64], routes: &FlowRoutes, ends: [usize; 2]) -> f64 {
    let mut delivered = 1.0;
    let mut at = ends[0] as NodeIndex;
    while at as usize != ends[1] {
        let c = routes.table[at as usize];
        if c == NO_ROUTE {
            break;
        }
        delivered *= 1.0 - losses[c as usize];
        at = topology.channels[c as usize].1;
    }
    delivered
}
