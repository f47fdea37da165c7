//! Static routing: shortest paths by hop count, static routes that override
//! them at a node, and per-flow pinned paths (one or several). Each flow
//! gets its own next-hop table for each direction, so forwarding is one
//! array lookup and a multipath split keeps every flow on one path, as TCP
//! needs. A flow pinned to several paths also keeps, at the few nodes where
//! they part, every next hop they offer, for a hop layer that spreads
//! packets itself (TCP-HONC's eq. 16).

use std::collections::{HashMap, VecDeque};

/// A node's label in the scenario, as the papers number them.
pub type NodeId = u32;

/// Index of a node in the simulation (not its label in the scenario).
pub type NodeIndex = u32;

/// Index of a channel (one direction of a link).
pub type ChannelIndex = u32;

/// No route: the entry of a node that a flow does not cross.
pub const NO_ROUTE: ChannelIndex = ChannelIndex::MAX;

/// A flow's routes one way.
#[derive(Clone, Debug, Default)]
pub struct FlowRoutes {
    /// The channel each node uses unless its hop layer picks another
    /// candidate: `NO_ROUTE` off the flow's paths.
    pub table: Vec<ChannelIndex>,
    /// Nodes with more than one candidate, with their neighbours and the
    /// channels to them, the table's choice first. Kept apart and usually
    /// empty so that single-path forwarding stays one lookup.
    pub branches: Vec<Branch>,
}

/// Where a flow's paths part.
#[derive(Clone, Debug)]
pub struct Branch {
    pub node: NodeIndex,
    /// Candidate next hops, as the node indices a hop layer knows them by.
    pub next: Box<[NodeIndex]>,
    /// The channel to each of `next`.
    pub channels: Box<[ChannelIndex]>,
}

impl FlowRoutes {
    /// A single route: no branches.
    pub fn single(table: Vec<ChannelIndex>) -> FlowRoutes {
        FlowRoutes { table, branches: Vec::new() }
    }

    /// The candidates at `node`, when it has more than one.
    #[inline]
    pub fn branch(&self, node: NodeIndex) -> Option<&Branch> {
        if self.branches.is_empty() {
            return None;
        }
        self.branches.iter().find(|b| b.node == node)
    }
}

/// What a topology is built from, by node label: routing reads these and
/// nothing else of a scenario, so that the scenario can check its routes
/// with routing.
pub trait TopologySpec {
    fn nodes(&self) -> &[NodeId];
    /// The two ends of each link; link i gives channels 2i and 2i + 1.
    fn links(&self) -> impl Iterator<Item = [NodeId; 2]>;
    fn static_routes(&self) -> impl Iterator<Item = StaticRoute<'_>>;
}

/// At node `at`, packets for `to` leave towards the neighbours `via`.
#[derive(Clone, Copy, Debug)]
pub struct StaticRoute<'a> {
    pub at: NodeId,
    pub to: NodeId,
    pub via: &'a [NodeId],
}

/// Nodes and the channels between them, as indices.
#[derive(Clone, Debug)]
pub struct Topology {
    /// Scenario label of each node index.
    pub labels: Vec<NodeId>,
    pub index: HashMap<NodeId, NodeIndex>,
    /// For each node, its out-channels and their far ends, in scenario order.
    pub out: Vec<Vec<(NodeIndex, ChannelIndex)>>,
    /// (from, to) of each channel: link i gives channels 2i (as written) and 2i+1 (reversed).
    pub channels: Vec<(NodeIndex, NodeIndex)>,
    /// Static routes: (at, to) -> neighbours.
    statics: HashMap<(NodeIndex, NodeIndex), Vec<NodeIndex>>,
}

impl Topology {
    /// Builds from a spec whose references are already checked.
    pub fn new(spec: &impl TopologySpec) -> Topology {
        let nodes = spec.nodes();
        let index: HashMap<NodeId, NodeIndex> = nodes.iter().enumerate().map(|(i, &id)| (id, i as NodeIndex)).collect();
        let mut out = vec![Vec::new(); nodes.len()];
        let mut channels = Vec::new();
        for [a, b] in spec.links() {
            let (a, b) = (index[&a], index[&b]);
            for (from, to) in [(a, b), (b, a)] {
                out[from as usize].push((to, channels.len() as ChannelIndex));
                channels.push((from, to));
            }
        }
        let statics = spec
            .static_routes()
            .map(|r| ((index[&r.at], index[&r.to]), r.via.iter().map(|v| index[v]).collect()))
            .collect();
        Topology { labels: nodes.to_vec(), index, out, channels, statics }
    }

    /// The channel from `from` to its neighbour `to`, if they are linked.
    pub fn channel(&self, from: NodeIndex, to: NodeIndex) -> Option<ChannelIndex> {
        self.out[from as usize].iter().find(|(n, _)| *n == to).map(|(_, c)| *c)
    }

    /// Hop distance from every node to `dst` (u32::MAX when unreachable).
    fn distances_to(&self, dst: NodeIndex) -> Vec<u32> {
        let mut dist = vec![u32::MAX; self.out.len()];
        let mut queue = VecDeque::from([dst]);
        dist[dst as usize] = 0;
        // Links are full duplex, so out-neighbours are also in-neighbours.
        while let Some(u) = queue.pop_front() {
            for &(v, _) in &self.out[u as usize] {
                if dist[v as usize] == u32::MAX {
                    dist[v as usize] = dist[u as usize] + 1;
                    queue.push_back(v);
                }
            }
        }
        dist
    }

    /// The channels a flow's packets take from `src` to `dst`. `pinned` is a
    /// node path; otherwise static routes apply where given, shortest paths
    /// elsewhere (ties to the neighbour listed first). `flow` picks among
    /// several static next hops.
    pub fn route(
        &self,
        flow: u32,
        src: NodeIndex,
        dst: NodeIndex,
        pinned: Option<&[NodeIndex]>,
    ) -> Result<Vec<ChannelIndex>, String> {
        let name = |n: NodeIndex| self.labels[n as usize];
        if let Some(path) = pinned {
            return path
                .windows(2)
                .map(|w| {
                    self.channel(w[0], w[1])
                        .ok_or_else(|| format!("nodes {} and {} on the path are not linked", name(w[0]), name(w[1])))
                })
                .collect();
        }
        let dist = self.distances_to(dst);
        let mut hops = Vec::new();
        let mut visited = vec![false; self.out.len()];
        let mut at = src;
        while at != dst {
            if std::mem::replace(&mut visited[at as usize], true) {
                return Err(format!("static routes loop at node {} on the way to node {}", name(at), name(dst)));
            }
            let next = match self.statics.get(&(at, dst)) {
                Some(via) => via[flow as usize % via.len()],
                None => {
                    let here = dist[at as usize];
                    if here == u32::MAX {
                        return Err(format!("no route from node {} to node {}", name(at), name(dst)));
                    }
                    self.out[at as usize]
                        .iter()
                        .find(|(v, _)| dist[*v as usize] == here - 1)
                        .expect("BFS leaves a closer neighbour")
                        .0
                }
            };
            hops.push(self.channel(at, next).ok_or_else(|| {
                format!("static route at node {} names node {}, which is not a neighbour", name(at), name(next))
            })?);
            at = next;
        }
        Ok(hops)
    }

    /// A next-hop table (channel per node) for a route.
    pub fn table(&self, route: &[ChannelIndex]) -> Vec<ChannelIndex> {
        let mut table = vec![NO_ROUTE; self.out.len()];
        for &c in route {
            table[self.channels[c as usize].0 as usize] = c;
        }
        table
    }

    /// The routes of a flow pinned to several node paths, each already
    /// checked to be linked and loop-free. The table follows path
    /// `flow % paths.len()` wherever that path goes, as static multipath
    /// routes split flows, and the first path through a node elsewhere; so
    /// a flow whose nodes never choose stays on one path.
    pub fn multipath(&self, flow: u32, paths: &[Vec<NodeIndex>]) -> Result<FlowRoutes, String> {
        let mut table = vec![NO_ROUTE; self.out.len()];
        let chosen = flow as usize % paths.len().max(1);
        let order = std::iter::once(chosen).chain((0..paths.len()).filter(|&j| j != chosen));
        let mut candidates: Vec<Vec<(NodeIndex, ChannelIndex)>> = vec![Vec::new(); self.out.len()];
        for j in order {
            for w in paths[j].windows(2) {
                let c = self.channel(w[0], w[1]).ok_or_else(|| {
                    format!(
                        "nodes {} and {} on the path are not linked",
                        self.labels[w[0] as usize], self.labels[w[1] as usize]
                    )
                })?;
                let here = &mut candidates[w[0] as usize];
                if !here.iter().any(|&(_, k)| k == c) {
                    here.push((w[1], c));
                }
                if table[w[0] as usize] == NO_ROUTE {
                    table[w[0] as usize] = c;
                }
            }
        }
        let branches = candidates
            .into_iter()
            .enumerate()
            .filter(|(_, c)| c.len() > 1)
            .map(|(node, c)| Branch {
                node: node as NodeIndex,
                next: c.iter().map(|&(n, _)| n).collect(),
                channels: c.iter().map(|&(_, k)| k).collect(),
            })
            .collect();
        Ok(FlowRoutes { table, branches })
    }
}

/// The index of a path (into `paths`) that closes a directed cycle with the
/// paths before it, if any: a packet free to take any of them at every
/// branch could otherwise circle for ever.
pub fn first_cycle(nodes: usize, paths: &[Vec<NodeIndex>]) -> Option<usize> {
    let mut edges: Vec<Vec<NodeIndex>> = vec![Vec::new(); nodes];
    for (j, path) in paths.iter().enumerate() {
        for w in path.windows(2) {
            if !edges[w[0] as usize].contains(&w[1]) {
                edges[w[0] as usize].push(w[1]);
            }
        }
        if has_cycle(&edges) {
            return Some(j);
        }
    }
    None
}

fn has_cycle(edges: &[Vec<NodeIndex>]) -> bool {
    // Colours: 0 unvisited, 1 on the stack, 2 done; iterative DFS.
    let mut colour = vec![0u8; edges.len()];
    for root in 0..edges.len() {
        if colour[root] != 0 {
            continue;
        }
        let mut stack = vec![(root, 0usize)];
        colour[root] = 1;
        while let Some((u, i)) = stack.pop() {
            if let Some(&v) = edges[u].get(i) {
                stack.push((u, i + 1));
                match colour[v as usize] {
                    1 => return true,
                    0 => {
                        colour[v as usize] = 1;
                        stack.push((v as usize, 0));
                    }
                    _ => {}
                }
            } else {
                colour[u] = 2;
            }
        }
    }
    false
}
