//! Static routing: shortest paths by hop count, static routes that override
//! them at a node, and per-flow pinned paths. Each flow gets its own
//! next-hop table for each direction, so forwarding is one array lookup and
//! a multipath split keeps every flow on one path, as TCP needs.

use crate::scenario::{NodeId, ScenarioSpec};
use std::collections::{HashMap, VecDeque};

/// Index of a node in the simulation (not its label in the scenario).
pub type NodeIndex = u32;

/// Index of a channel (one direction of a link).
pub type ChannelIndex = u32;

/// No route: the entry of a node that a flow does not cross.
pub const NO_ROUTE: ChannelIndex = ChannelIndex::MAX;

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
    pub fn new(spec: &ScenarioSpec) -> Topology {
        let index: HashMap<NodeId, NodeIndex> = spec.nodes.iter().enumerate().map(|(i, &id)| (id, i as NodeIndex)).collect();
        let mut out = vec![Vec::new(); spec.nodes.len()];
        let mut channels = Vec::with_capacity(spec.links.len() * 2);
        for link in &spec.links {
            let (a, b) = (index[&link.between[0]], index[&link.between[1]]);
            for (from, to) in [(a, b), (b, a)] {
                out[from as usize].push((to, channels.len() as ChannelIndex));
                channels.push((from, to));
            }
        }
        let statics = spec
            .routes
            .iter()
            .map(|r| ((index[&r.at], index[&r.to]), r.via.iter().map(|v| index[v]).collect()))
            .collect();
        Topology { labels: spec.nodes.clone(), index, out, channels, statics }
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
    pub fn route(&self, flow: u32, src: NodeIndex, dst: NodeIndex, pinned: Option<&[NodeIndex]>) -> Result<Vec<ChannelIndex>, String> {
        let name = |n: NodeIndex| self.labels[n as usize];
        if let Some(path) = pinned {
            return path
                .windows(2)
                .map(|w| self.channel(w[0], w[1]).ok_or_else(|| format!("nodes {} and {} on the path are not linked", name(w[0]), name(w[1]))))
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
                    self.out[at as usize].iter().find(|(v, _)| dist[*v as usize] == here - 1).expect("BFS leaves a closer neighbour").0
                }
            };
            hops.push(self.channel(at, next).ok_or_else(|| format!("static route at node {} names node {}, which is not a neighbour", name(at), name(next)))?);
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
}
