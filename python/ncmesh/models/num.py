"""Seferoglu & Markopoulou, network-coding-aware NUM (seed 003, secs. IV and VII).

The seed's text lost almost every inline symbol; the formulation below is
rebuilt from its prose and kept in its vocabulary (docs/models.md lists each
reading):

    maximise  sum_s U_s(x_s)                                    (1), (8)
    over      x_s (source rates), xi (traffic splitting), tau_h (airtime)
    s.t.      sum_k max_{s in k} (rate of s in code k on h) <= c_h tau_h     capacity
              sum of xi over the partitions of each coding segment = 1        conservation
              sum_{h in clique} tau_h <= epsilon                              interference

A *segment* is where a flow may be split: one hop for COPE (sec. IV; each
partition is one (hyperarc, code) use), a network-coding path for BFLY
(sec. VII; a partition lists the uses along the path, and its share is the
same on every hop of it, the "third constraint" of (8)).  The rate of code k
on hyperarc h is the largest of its members' rates (a code carries one packet
of each member per transmission).

:func:`optimum` solves the convex problem with cvxpy after the substitution
f = x xi (which makes the problem jointly convex).  :func:`primal_dual` is the
distributed iteration of sec. IV-B with the proximal method: rate control (4),
traffic splitting (5), scheduling (6), dominance indicators and the h-queue
update (7).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from ._params import ModelParameterError, Reals, integer, real

__all__ = [
    "TOPOLOGIES",
    "Hyperarc",
    "Optimum",
    "Topology",
    "Trace",
    "alice_bob",
    "butterfly",
    "coding_gain",
    "cross",
    "optimum",
    "primal_dual",
    "x_topology",
]


@dataclasses.dataclass(frozen=True)
class Hyperarc:
    tx: str
    rx: tuple[str, ...]
    capacity: float


Use = tuple[int, tuple[int, ...]]  # (hyperarc index, flows coded together)

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]

Links = Mapping[tuple[str, str], float]
"""Link capacities by (transmitter, receiver); a link not named has the default capacity."""

# The named forms the topologies are written in, before `_topology` indexes them.
_Arc = tuple[str, tuple[str, ...]]  # (transmitter, receivers)
_NamedUse = tuple[str, tuple[str, ...], tuple[str, ...]]  # (transmitter, receivers, flows coded together)
_NamedSegment = tuple[str, list[list[_NamedUse]]]  # (flow, partitions)

_Index = tuple[list[Use], list[tuple[int, int]], IntArray, IntArray, list[list[int]], FloatArray]
"""Codes, member slots (code, flow), each partition's flow and segment, its codes, and the slot loads."""


@dataclasses.dataclass(frozen=True)
class Topology:
    """Hyperarcs, flows, and for each flow its segments and their partitions."""

    name: str
    hyperarcs: tuple[Hyperarc, ...]
    flows: tuple[str, ...]
    #: (flow index, partitions); a partition is a tuple of uses
    segments: tuple[tuple[int, tuple[tuple[Use, ...], ...]], ...]
    cliques: tuple[tuple[int, ...], ...]
    epsilon: float = 1.0

    def without_coding(self) -> Topology:
        """The same network with every partition that codes flows together removed."""
        segs = []
        for s, parts in self.segments:
            keep = tuple(pt for pt in parts if all(len(code) == 1 for _, code in pt))
            segs.append((s, keep))
        return dataclasses.replace(self, name=self.name + " (no coding)", segments=tuple(segs))

    # ---- index structures shared by both solvers ----
    def _index(self) -> _Index:
        codes: dict[Use, int] = {}
        part_flow: list[int] = []
        part_seg: list[int] = []
        part_codes: list[list[int]] = []
        for j, (s, parts) in enumerate(self.segments):
            for pt in parts:
                ids = []
                for use in pt:
                    if use not in codes:
                        codes[use] = len(codes)
                    ids.append(codes[use])
                part_flow.append(s)
                part_seg.append(j)
                part_codes.append(ids)
        code_list = list(codes)
        # member slots: one per (code, member flow)
        slots = [(c, s) for c, (_, members) in enumerate(code_list) for s in members]
        nP, nS = len(part_flow), len(slots)
        M = np.zeros((nS, nP))  # load of a member slot from partitions
        slot_of = {sl: i for i, sl in enumerate(slots)}
        for pi, (s, ids) in enumerate(zip(part_flow, part_codes, strict=True)):
            for c in ids:
                if (c, s) not in slot_of:
                    raise ModelParameterError(
                        "segments",
                        "partitions whose flow is a member of each code it uses",
                        (self.flows[s], code_list[c]),
                    )
                M[slot_of[(c, s)], pi] += 1.0
        return code_list, slots, np.array(part_flow), np.array(part_seg), part_codes, M


def _topology(
    name: str,
    links: Links | None,
    hyperarcs: Sequence[_Arc],
    flows: Sequence[str],
    segments: Sequence[_NamedSegment],
    coding: bool,
    cap: float,
) -> Topology:
    """Build a Topology; a hyperarc's capacity is the least of its links' (sec. IV-A)."""
    links = dict(links or {})
    hs = []
    for tx, rx in hyperarcs:
        c = min(float(links.get((tx, r), cap)) for r in rx)
        real(f"capacity of hyperarc {tx}->{','.join(rx)}", c, 0.0, lo_closed=False)
        hs.append(Hyperarc(tx, tuple(rx), c))
    index = {(h.tx, h.rx): i for i, h in enumerate(hs)}
    fidx = {f: i for i, f in enumerate(flows)}
    segs: list[tuple[int, tuple[tuple[Use, ...], ...]]] = []
    for flow, parts in segments:
        s = fidx[flow]
        built = []
        for pt in parts:
            built.append(tuple((index[(tx, tuple(rx))], tuple(sorted(fidx[f] for f in code))) for tx, rx, code in pt))
        segs.append((s, tuple(built)))
    topo = Topology(name, tuple(hs), tuple(flows), tuple(segs), (tuple(range(len(hs))),))
    return topo if coding else topo.without_coding()


def _relay_segments(
    flows_through: dict[str, tuple[str, str, str]],
    codes: Sequence[tuple[str, ...]],
    dest_of_code: dict[tuple[str, ...], tuple[str, ...]],
) -> list[_NamedSegment]:
    """Segments for one relay: uplink hop, then relay hop split among the codes."""
    segs: list[_NamedSegment] = []
    for f, (src, relay, dst) in flows_through.items():
        segs.append((f, [[(src, (relay,), (f,))]]))
        parts: list[list[_NamedUse]] = [[(relay, (dst,), (f,))]]
        for code in codes:
            if f in code:
                parts.append([(relay, dest_of_code[code], code)])
        segs.append((f, parts))
    return segs


def alice_bob(links: Links | None = None, coding: bool = True, capacity: float = 1.0) -> Topology:
    """Fig. 2(a): A <-> R <-> B, flows A->B and B->A coded together at R."""
    flows = {"A>B": ("A", "R", "B"), "B>A": ("B", "R", "A")}
    code = ("A>B", "B>A")
    hyper: list[_Arc] = [("A", ("R",)), ("B", ("R",)), ("R", ("B",)), ("R", ("A",)), ("R", ("A", "B"))]
    segs = _relay_segments(flows, [code], {code: ("A", "B")})
    return _topology("alice-and-bob", links, hyper, list(flows), segs, coding, capacity)


def x_topology(links: Links | None = None, coding: bool = True, capacity: float = 1.0) -> Topology:
    """Fig. 1: flows A->B and C->D cross at R; B overhears C and D overhears A."""
    flows = {"A>B": ("A", "R", "B"), "C>D": ("C", "R", "D")}
    code = ("A>B", "C>D")
    hyper: list[_Arc] = [("A", ("R",)), ("C", ("R",)), ("R", ("B",)), ("R", ("D",)), ("R", ("B", "D"))]
    segs = _relay_segments(flows, [code], {code: ("B", "D")})
    return _topology("x", links, hyper, list(flows), segs, coding, capacity)


def cross(links: Links | None = None, coding: bool = True, capacity: float = 1.0) -> Topology:
    """Fig. 2(b): N, S, E, W exchange through R (N<->S, E<->W); R may XOR all four."""
    flows = {"N>S": ("N", "R", "S"), "S>N": ("S", "R", "N"), "E>W": ("E", "R", "W"), "W>E": ("W", "R", "E")}
    four = ("N>S", "S>N", "E>W", "W>E")
    ns, ew = ("N>S", "S>N"), ("E>W", "W>E")
    hyper: list[_Arc] = [(n, ("R",)) for n in "NSEW"]
    hyper += [("R", (n,)) for n in "NSEW"]
    hyper += [("R", ("E", "N", "S", "W")), ("R", ("N", "S")), ("R", ("E", "W"))]
    segs = _relay_segments(flows, [four, ns, ew], {four: ("E", "N", "S", "W"), ns: ("N", "S"), ew: ("E", "W")})
    return _topology("cross", links, hyper, list(flows), segs, coding, capacity)


def butterfly(links: Links | None = None, coding: bool = True, capacity: float = 1.0) -> Topology:
    """Fig. 8, two-hop coding (BFLY): S1->I->J->D1 and S2->I->J->D2.

    I codes the two flows and J forwards the code to both destinations; D1
    overhears S2 and D2 overhears S1.  The coding segment is I -> J -> D, so a
    coded partition uses the coded hyperarcs I->J and J->{D1, D2} together.
    """
    f1, f2 = "S1>D1", "S2>D2"
    code = (f1, f2)
    hyper: list[_Arc] = [
        ("S1", ("I",)),
        ("S2", ("I",)),
        ("I", ("J",)),
        ("J", ("D1",)),
        ("J", ("D2",)),
        ("J", ("D1", "D2")),
    ]
    segs: list[_NamedSegment] = []
    for f, src, dst in ((f1, "S1", "D1"), (f2, "S2", "D2")):
        segs.append((f, [[(src, ("I",), (f,))]]))
        segs.append((f, [[("I", ("J",), (f,)), ("J", (dst,), (f,))], [("I", ("J",), code), ("J", ("D1", "D2"), code)]]))
    return _topology("butterfly", links, hyper, [f1, f2], segs, coding, capacity)


TOPOLOGIES: dict[str, Callable[..., Topology]] = {
    "alice-and-bob": alice_bob,
    "x": x_topology,
    "cross": cross,
    "butterfly": butterfly,
}


@dataclasses.dataclass(frozen=True)
class Optimum:
    rates: FloatArray  # x_s
    splits: FloatArray  # xi per partition
    airtime: FloatArray  # tau_h
    queues: FloatArray  # capacity multipliers q_h
    utility: float

    @property
    def total_rate(self) -> float:
        return float(self.rates.sum())


def _check_weights(topo: Topology, weights: Reals | None) -> FloatArray:
    w = np.ones(len(topo.flows)) if weights is None else real("weights", weights, 0.0, lo_closed=False)
    return np.broadcast_to(w, (len(topo.flows),))


def optimum(topo: Topology, weights: Reals | None = None) -> Optimum:
    """The NUM optimum with U_s = w_s log x_s (proportional fairness), by cvxpy."""
    import cvxpy as cp

    w = _check_weights(topo, weights)
    codes, slots, pflow, pseg, _, M = topo._index()
    nF, nP, nH, nC = len(topo.flows), len(pflow), len(topo.hyperarcs), len(codes)
    x = cp.Variable(nF, pos=True)
    f = cp.Variable(nP, nonneg=True)
    r = cp.Variable(nC, nonneg=True)
    tau = cp.Variable(nH, nonneg=True)
    cons = []
    for j, (s, _) in enumerate(topo.segments):
        cons.append(cp.sum(f[np.flatnonzero(pseg == j)]) == x[s])
    slot_code = np.array([c for c, _ in slots])
    cons.append(r[slot_code] >= M @ f)
    H = np.zeros((nH, nC))
    for c, (h, _) in enumerate(codes):
        H[h, c] = 1.0
    cap_con = H @ r <= cp.multiply(np.array([h.capacity for h in topo.hyperarcs]), tau)
    cons.append(cap_con)
    for q in topo.cliques:
        cons.append(cp.sum(tau[list(q)]) <= topo.epsilon)
    prob = cp.Problem(cp.Maximize(w @ cp.log(x)), cons)
    prob.solve(solver=cp.CLARABEL)
    if prob.status not in ("optimal", "optimal_inaccurate"):
        raise RuntimeError(f"cvxpy could not solve {topo.name}: {prob.status}")
    xv = np.asarray(x.value)
    splits = np.asarray(f.value) / xv[pflow]
    return Optimum(xv, splits, np.asarray(tau.value), np.asarray(cap_con.dual_value), float(prob.value))


def coding_gain(topo: Topology, weights: Reals | None = None) -> float:
    """Table I "Optimal": total optimal rate with coding over total without, minus 1."""
    return optimum(topo, weights).total_rate / optimum(topo.without_coding(), weights).total_rate - 1.0


# ---------------------------------------------------------------- distributed


def _project_simplex(v: FloatArray, z: float = 1.0) -> FloatArray:
    """Euclidean projection of v onto {u >= 0, sum u = z} (sort-based)."""
    if v.size == 1:
        return np.array([z])
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - z
    k = np.arange(1, v.size + 1)
    rho = int(np.nonzero(u - css / k > 0)[0][-1])
    return np.maximum(v - float(css[rho]) / (rho + 1.0), 0.0)


def _project_capped(v: FloatArray, z: float) -> FloatArray:
    """Projection onto {u >= 0, sum u <= z}."""
    u = np.maximum(v, 0.0)
    return u if u.sum() <= z else _project_simplex(v, z)


@dataclasses.dataclass(frozen=True)
class Trace:
    """Per-iteration history of the distributed algorithm (appendix A figures)."""

    rates: FloatArray  # (iterations, flows)
    queues: FloatArray  # (iterations, hyperarcs), the h-queues q_h
    splits: FloatArray  # final xi per partition
    airtime: FloatArray  # final tau

    @property
    def total_rate(self) -> FloatArray:
        total: FloatArray = self.rates.sum(axis=1)
        return total


def primal_dual(
    topo: Topology,
    iterations: int = 4000,
    step: float = 0.05,
    prox: float = 1.0,
    reset_every: int = 1,
    weights: Reals | None = None,
) -> Trace:
    """Distributed solution of sec. IV-B with the proximal method.

    Each iteration, with h-queues q and dominance indicators delta fixed:

    * rate control (4): x_s maximises w_s log x_s - x_s pi_s - (x_s - y_s)^2/(2 prox),
      where pi_s = sum over the flow's partitions of xi * sum_{(h,k)} q_h delta^s_{hk}
      is the network-coded queue length on its path; the maximiser is the
      positive root of a quadratic;
    * traffic splitting (5): at each node, xi minimises x_s sum xi * price plus
      the proximal term, i.e. a projection of (anchor - prox x_s price) onto
      the simplex;
    * scheduling (6): tau maximises sum q_h c_h tau_h with the proximal term,
      a projection onto {tau >= 0, sum over the clique <= epsilon};
    * dominance: delta^s_{hk} moves towards the member with the largest rate in
      code k (delta describes max_s as a convex combination and minimises the
      Lagrangian), projected onto the simplex;
    * h-queue update (7): q_h <- [q_h + step (sum_k max_s rate - c_h tau_h)]^+.

    The proximal anchors (the "artificial variables" of the method) are reset
    to the current values every ``reset_every`` iterations.
    """
    iterations = int(integer("iterations", iterations, 1))
    step = float(real("step", step, 0.0, lo_closed=False))
    prox = float(real("prox", prox, 0.0, lo_closed=False))
    reset_every = int(integer("reset_every", reset_every, 1))
    if any(len(set(q)) != len(q) for q in topo.cliques) or len({h for q in topo.cliques for h in q}) != sum(
        len(q) for q in topo.cliques
    ):
        raise ModelParameterError("cliques", "disjoint sets of hyperarcs", topo.cliques)
    w = _check_weights(topo, weights)
    codes, slots, pflow, pseg, _part_codes, M = topo._index()
    nF, nP, nH = len(topo.flows), len(pflow), len(topo.hyperarcs)
    cap = np.array([h.capacity for h in topo.hyperarcs])
    slot_code = np.array([c for c, _ in slots])
    code_h = np.array([h for h, _ in codes])
    seg_parts = [np.flatnonzero(pseg == j) for j in range(len(topo.segments))]
    code_slots = [np.flatnonzero(slot_code == c) for c in range(len(codes))]

    x = np.full(nF, 0.1)
    xi = np.zeros(nP)
    for parts in seg_parts:
        xi[parts] = 1.0 / len(parts)
    tau = np.full(nH, topo.epsilon / nH)
    q = np.zeros(nH)
    delta = np.zeros(len(slots))
    for sl in code_slots:
        delta[sl] = 1.0 / len(sl)
    y, zxi, ztau = x.copy(), xi.copy(), tau.copy()
    rates = np.empty((iterations, nF))
    queues = np.empty((iterations, nH))
    for t in range(iterations):
        slot_price = q[code_h[slot_code]] * delta  # q_h delta^s_hk per member slot
        part_price = M.T @ slot_price  # per unit rate on each partition
        pi = np.bincount(pflow, weights=xi * part_price, minlength=nF)
        # rate control (4) with the proximal term: x^2/prox + x (pi - y/prox) - w = 0
        bq = pi - y / prox
        x = (-bq + np.sqrt(bq * bq + 4.0 * w / prox)) / (2.0 / prox)
        # traffic splitting (5)
        for parts in seg_parts:
            xi[parts] = _project_simplex(zxi[parts] - prox * x[pflow[parts]] * part_price[parts])
        # scheduling (6)
        for clique in topo.cliques:
            idx = list(clique)
            tau[idx] = _project_capped(ztau[idx] + prox * q[idx] * cap[idx], topo.epsilon)
        # loads, code rates and the two multiplier updates
        load = M @ (x[pflow] * xi)
        code_rate = np.array([load[sl].max() for sl in code_slots])
        for sl in code_slots:
            if len(sl) > 1:
                delta[sl] = _project_simplex(delta[sl] + step * q[code_h[slot_code[sl[0]]]] * load[sl])
        incoming = np.bincount(code_h, weights=code_rate, minlength=nH)
        q = np.maximum(q + step * (incoming - cap * tau), 0.0)  # (7)
        if (t + 1) % reset_every == 0:
            y, zxi, ztau = x.copy(), xi.copy(), tau.copy()
        rates[t] = x
        queues[t] = q
    return Trace(rates, queues, xi.copy(), tau.copy())
