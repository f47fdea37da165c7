//! A node's forwarding table: next hops per flow, where a flow is pinned,
//! and per destination otherwise.

use super::iface::IfaceId;
use crate::packet::FlowKey;
use rustc_hash::FxHashMap;
use std::net::Ipv4Addr;

/// Where a packet can go next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NextHop {
    pub iface: IfaceId,
    pub neighbour: Ipv4Addr,
}

/// The next hops of one entry: the first is the default; several are
/// candidates the hop layer may choose among per packet. The first is kept
/// inline, since nearly every route has one hop and forwarding reads it
/// for every packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    pub first: NextHop,
    /// Every candidate, the first included, where there are several; else empty.
    pub candidates: Box<[NextHop]>,
}

impl Route {
    /// `None` for no hops.
    pub fn new(hops: Vec<NextHop>) -> Option<Route> {
        let first = *hops.first()?;
        Some(Route { first, candidates: if hops.len() > 1 { hops.into() } else { Box::default() } })
    }
}

#[derive(Clone, Debug, Default)]
pub struct Routes {
    flows: FxHashMap<FlowKey, Route>,
    destinations: FxHashMap<Ipv4Addr, Route>,
}

impl Routes {
    /// Routes packets of `flow` (in its direction of travel) by `hops`.
    pub fn add_flow(&mut self, flow: FlowKey, hops: Vec<NextHop>) {
        if let Some(route) = Route::new(hops) {
            self.flows.insert(flow, route);
        }
    }

    /// Routes packets for `dst` by `hops`, unless their flow has a route.
    pub fn add_destination(&mut self, dst: Ipv4Addr, hops: Vec<NextHop>) {
        if let Some(route) = Route::new(hops) {
            self.destinations.insert(dst, route);
        }
    }

    pub fn lookup(&self, flow: Option<&FlowKey>, dst: Ipv4Addr) -> Option<&Route> {
        if !self.flows.is_empty() {
            if let Some(r) = flow.and_then(|f| self.flows.get(f)) {
                return Some(r);
            }
        }
        self.destinations.get(&dst)
    }
}
