//! Path selection, section 4.3: a flow with several next hops leaves by the
//! one whose backlog, drained at the hop's goodput, plus the downstream cost
//! piggybacked on that neighbour's ACK-NCBs, is least.

use crate::time::{Duration, Instant};
use std::collections::BTreeMap;

/// How long a piggybacked cost stands without a fresh report. A neighbour
/// reports C_n^s only on the ACK-NCBs of frames it receives, so a hop the
/// flow has left never refreshes its last, possibly congested, cost: held
/// for ever, that cost would keep the flow off the path for good.
pub const COST_LIFETIME: Duration = Duration::from_secs(1);

/// The term of eqs. (16)-(17) for one next hop, in seconds:
/// (|Q_e| + |Q_s|) / (c (1 - p)) + C_n^s, with c in packets per second.
pub fn path_cost(backlog: u32, capacity_pps: f64, loss: f64, downstream: f64) -> f64 {
    let goodput = capacity_pps * (1.0 - loss.clamp(0.0, 0.999));
    backlog as f64 / goodput.max(f64::MIN_POSITIVE) + downstream
}

/// Eq. (16) and (17): the next hop n(s) and the cost C_m^s through it.
/// `candidates` holds (neighbour, its term of eq. 16); ties go to the first.
pub fn select_next_hop(candidates: &[(u32, f64)]) -> Option<(u32, f64)> {
    candidates.iter().copied().fold(None, |best, (n, c)| match best {
        Some((_, b)) if b <= c => best,
        _ => Some((n, c)),
    })
}

/// The C_n^s that neighbours have piggybacked, per (neighbour, flow), and when.
#[derive(Clone, Debug, Default)]
pub struct PathCosts {
    reported: BTreeMap<(u32, u32), (f64, Instant)>,
}

impl PathCosts {
    /// An ACK-NCB from `neighbour` reported `cost` for `flow` at `now`.
    pub fn report(&mut self, neighbour: u32, flow: u32, cost: f64, now: Instant) {
        self.reported.insert((neighbour, flow), (cost, now));
    }

    /// C_n^s as last reported, within [`COST_LIFETIME`]; zero before any
    /// report or after it lapses, as for a destination.
    pub fn downstream(&self, neighbour: u32, flow: u32, now: Instant) -> f64 {
        match self.reported.get(&(neighbour, flow)) {
            Some(&(cost, at)) if now.saturating_since(at) <= COST_LIFETIME => cost,
            _ => 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_is_drain_time_plus_downstream() {
        // 10 packets at 100 packets/s with half lost: 0.2 s, plus 0.5 s beyond.
        assert!((path_cost(10, 100.0, 0.5, 0.5) - 0.7).abs() < 1e-12);
        assert_eq!(path_cost(0, 100.0, 0.0, 0.0), 0.0);
    }

    #[test]
    fn a_reported_cost_lapses_without_a_fresh_report() {
        let mut c = PathCosts::default();
        c.report(4, 7, 2.5, Instant::ZERO);
        assert_eq!(c.downstream(4, 7, Instant::ZERO + COST_LIFETIME), 2.5);
        assert_eq!(c.downstream(4, 7, Instant::ZERO + COST_LIFETIME + Duration(1)), 0.0);
        assert_eq!(c.downstream(5, 7, Instant::ZERO), 0.0, "nothing reported");
        c.report(4, 7, 1.0, Instant::ZERO + COST_LIFETIME);
        assert_eq!(c.downstream(4, 7, Instant::ZERO + COST_LIFETIME + Duration(1)), 1.0);
    }

    #[test]
    fn the_cheapest_next_hop_wins() {
        assert_eq!(select_next_hop(&[(3, 1.0), (4, 0.5), (5, 0.7)]), Some((4, 0.5)));
        assert_eq!(select_next_hop(&[(3, 1.0), (4, 1.0)]), Some((3, 1.0)));
        assert_eq!(select_next_hop(&[]), None);
    }
}
