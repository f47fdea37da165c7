//! A node's forwarding table: next hops per destination, and per flow
//! where a flow is pinned to another way.

use super::iface::IfaceId;
use crate::packet::{FlowKey, Packet};
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

/// Routes by destination, as a router's table, with the flows that must
/// go another way pinned by flow. Flows to one destination usually go the
/// same way, so most lookups hash an address rather than a flow.
#[derive(Clone, Debug, Default)]
pub struct Routes {
    /// The exceptions: flows whose route is not their destination's.
    pinned: FxHashMap<FlowKey, Route>,
    destinations: FxHashMap<Ipv4Addr, Route>,
    /// Every flow route as it was added, to keep each flow on its way when
    /// its destination's route changes.
    flows: FxHashMap<FlowKey, Route>,
}

impl Routes {
    /// Routes packets of `flow` (in its direction of travel) by `hops`. The
    /// first flow to a destination with no route gives the destination its
    /// route; a flow that goes another way is pinned.
    pub fn add_flow(&mut self, flow: FlowKey, hops: Vec<NextHop>) {
        let Some(route) = Route::new(hops) else { return };
        match self.destinations.get(&flow.dst) {
            Some(r) if *r == route => {
                self.pinned.remove(&flow);
            }
            Some(_) => {
                self.pinned.insert(flow, route.clone());
            }
            None => {
                self.destinations.insert(flow.dst, route.clone());
            }
        }
        self.flows.insert(flow, route);
    }

    /// Routes packets for `dst` by `hops`; flows added before that go
    /// another way stay on theirs.
    pub fn add_destination(&mut self, dst: Ipv4Addr, hops: Vec<NextHop>) {
        let Some(route) = Route::new(hops) else { return };
        for (flow, r) in &self.flows {
            if flow.dst == dst && *r != route {
                self.pinned.insert(*flow, r.clone());
            }
        }
        self.destinations.insert(dst, route);
    }

    pub fn lookup(&self, packet: &Packet) -> Option<&Route> {
        if !self.pinned.is_empty() {
            if let Some(r) = packet.flow().and_then(|f| self.pinned.get(&f)) {
                return Some(r);
            }
        }
        self.destinations.get(&packet.dst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Data;
    use crate::packet::Payload;
    use crate::wire::udp::{self, Datagram};

    const DST: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 9);

    fn flow(port: u16) -> FlowKey {
        FlowKey { src: Ipv4Addr::new(10, 0, 0, 1), dst: DST, protocol: udp::PROTOCOL, src_port: port, dst_port: 9 }
    }

    fn packet(port: u16) -> Packet {
        let f = flow(port);
        Packet::new(f.src, f.dst, Payload::Udp(Datagram::new(port, 9, Data::EMPTY)))
    }

    fn via(iface: IfaceId) -> Vec<NextHop> {
        vec![NextHop { iface, neighbour: Ipv4Addr::new(10, 0, 1, iface as u8) }]
    }

    fn iface(routes: &Routes, port: u16) -> Option<IfaceId> {
        routes.lookup(&packet(port)).map(|r| r.first.iface)
    }

    #[test]
    fn flows_that_agree_route_by_destination_and_the_others_keep_their_way() {
        let mut routes = Routes::default();
        routes.add_flow(flow(1), via(0));
        routes.add_flow(flow(2), via(0));
        routes.add_flow(flow(3), via(1));
        assert!(routes.pinned.len() == 1, "only the flow that differs is pinned");
        assert_eq!([1, 2, 3].map(|p| iface(&routes, p)), [Some(0), Some(0), Some(1)]);
        // A flow with no route of its own goes the destination's way, as in a router.
        assert_eq!(iface(&routes, 4), Some(0));
        // Re-routed onto the destination's way, a flow is no longer pinned.
        routes.add_flow(flow(3), via(0));
        assert!(routes.pinned.is_empty());
        assert_eq!(iface(&routes, 3), Some(0));
    }

    #[test]
    fn a_destination_route_leaves_earlier_flows_on_their_way() {
        let mut routes = Routes::default();
        routes.add_flow(flow(1), via(0));
        routes.add_flow(flow(2), via(2));
        let elsewhere = FlowKey { dst: Ipv4Addr::new(10, 0, 0, 8), ..flow(3) };
        routes.add_flow(elsewhere, via(0));
        routes.add_destination(DST, via(1));
        assert_eq!([1, 2, 5].map(|p| iface(&routes, p)), [Some(0), Some(2), Some(1)]);
        // Only flows to that destination are pinned.
        assert_eq!(routes.pinned.len(), 2);
        assert!(Routes::default().lookup(&packet(1)).is_none());
    }
}
