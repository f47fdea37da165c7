"""Zhang, Lan & Li (KSII TIIS 2014, seed 002): two-dimensional Markov chain of TCP-NC.

A state S(VW, AU) pairs the visual window VW with the accumulated number of
unacknowledged packets AU (eq. 1).  Algorithm-1 (eq. 4) propagates P(S(w, i)),
the probability that VW first reaches the integer w with AU = i; Lemma-1
(eq. 3) turns those into p_w, the probability that the period ends in a
timeout while floor(VW) = w.  Everything below works with the redundancy
transform of sec. 4.5: p' = 1 - R(1 - p), and Kim et al.'s model when p' <= 0.

Conventions the paper leaves implicit (each is also listed in docs/models.md):

* "VW reaches 1" has probability 1 (the period starts in S(1, 0)), so p_1 = p'.
* Absorption beyond the bound M is cut off; Fig. 6's accumulated absorbing
  probability is therefore sum_{w<=M} p_w = 1 - P(VW reaches M + 1).
* p' = 0 exactly (no erasures reach TCP) also uses Kim's model: the chain has
  no absorbing mass at all and eq. (2) would be 0/0.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import numpy.typing as npt
from scipy import optimize, stats

from . import kim, padhye
from ._params import Floats, ModelParameterError, Reals, integer, real, scalar_or_array

__all__ = [
    "MarkovResult",
    "absorbing_mass",
    "absorbing_probabilities",
    "default_m",
    "effective_loss",
    "equalising_redundancy",
    "expected_effective_window",
    "expected_period",
    "mean_cwnd",
    "solve",
    "state_probabilities",
    "throughput",
]


def default_m(cwmax: Reals) -> npt.NDArray[np.int64]:
    """Sec. 4.6: "M is often set about twice of CW_max"."""
    return 2 * np.asarray(cwmax, dtype=np.int64)


def effective_loss(p: Reals, R: Reals) -> Floats:
    """Sec. 4.5: the erasure rate TCP sees once R coded packets go out per packet."""
    p = real("p", p, 0.0, 1.0, hi_closed=False)
    R = real("R", R, 1.0)
    return scalar_or_array(1.0 - R * (1.0 - p))


def _next_row(prev: npt.NDArray[np.float64], w: int, p: float, cwmax: int) -> npt.NDArray[np.float64]:
    """Row w of Algorithm-1 (length w - 1) from row w - 1, eq. (4)."""
    # From S(w-1, j): w-1 successes (the last one closing the step) with
    # d = i - j erasures interleaved.  C(w-2+d, w-2) p^d (1-p)^(w-1) is exactly
    # the negative-binomial pmf of d failures before w-1 successes.
    d = np.arange(w - 1)
    kernel = stats.nbinom.pmf(d, w - 1, 1.0 - p) if p > 0 else (d == 0).astype(float)
    row = np.convolve(prev, kernel)[: w - 1]
    # Algorithm-1 lines 6-7: AU >= CW_max leads to a timeout, not a live state.
    row[min(cwmax, w - 1) :] = 0.0
    return row


def state_probabilities(p: float, cwmax: int, m: int | None = None, tol: float = 1e-9) -> npt.NDArray[np.float64]:
    """Algorithm-1: table P[w, i] = P(S(w, i)) for 1 <= w <= M + 1, 0 <= i <= w - 2.

    Row M + 1 is computed too because Lemma-1 needs "VW reaches M + 1" to close
    p_M.  Row 1 holds the start state S(1, 0) with probability 1.  With
    ``m=None`` M is chosen as the smallest value >= 2 CW_max whose accumulated
    absorbing probability reaches 1 - ``tol`` (capped at 50 CW_max + 100).
    """
    p = float(real("p", p, 0.0, 1.0, hi_closed=False))
    cwmax = int(integer("cwmax", cwmax, 1))
    if m is not None:
        m = int(integer("M", m, 2))
        cap = m
    else:
        cap = 50 * cwmax + 100
    rows = [np.zeros(1), np.ones(1)]  # index 0 unused; S(1, 0) = 1
    w = 2
    while True:
        rows.append(_next_row(rows[w - 1][: max(w - 2, 1)], w, p, cwmax))
        mm = w - 1  # rows 1..mm+1 exist, enough for p_1..p_mm
        if mm >= cap or (m is None and mm >= 2 * cwmax and rows[w].sum() <= tol):
            break
        w += 1
    P = np.zeros((mm + 2, mm + 1))
    for k in range(1, mm + 2):
        P[k, : len(rows[k])] = rows[k] if k >= 2 else 1.0
    return P


def _reach(P: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """reach[w] = P(VW reaches w); reach[1] = 1 by the start state."""
    reach: npt.NDArray[np.float64] = P.sum(axis=1)
    return reach


def absorbing_probabilities(p: float, cwmax: int, m: int | None = None) -> npt.NDArray[np.float64]:
    """p_w for w = 1..M (index w - 1), by Lemma-1, eq. (3)."""
    reach = _reach(state_probabilities(p, cwmax, m))
    return reach[1:-1] - reach[2:]


def expected_effective_window(
    P: npt.NDArray[np.float64], cwmax: int, conditional: bool = True
) -> npt.NDArray[np.float64]:
    """E[EW_i] for i = 1..M (index i - 1), eq. (11).

    Eq. (10)/(11) as printed weight min(CW_max, i - j) by the unconditional
    P(S(i, j)), whose sum over j is P(VW reaches i) < 1.  Eq. (9) calls the
    result "the expected effective window size when VW = i", so by default we
    divide by P(VW reaches i) (a conditional mean).  ``conditional=False``
    gives the literal printed form.
    """
    m = P.shape[0] - 2
    out = np.ones(m)
    for i in range(2, m + 1):
        j = np.arange(i - 1)
        probs = P[i, : i - 1]
        total = np.minimum(cwmax, i - j) @ probs
        mass = probs.sum()
        if conditional:
            out[i - 1] = total / mass if mass > 0 else np.nan
        else:
            out[i - 1] = total
    return out


def expected_period(ew: npt.NDArray[np.float64], rtt: float) -> npt.NDArray[np.float64]:
    """E[T_w] for w = 1..M, eq. (13).

    Eq. (7) with eq. (12) for each step i -> i + 1 (i >= 2), one round for the
    step 1 -> 2 (E[EW_1] = 1), E[Delta_t,w] = (w - 1)/2 RTT and the timeout
    t_o,w = w RTT; the last three add up to the paper's (3w + 1)/2 RTT.
    """
    m = ew.shape[0]
    i = np.arange(1, m + 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        step = np.where(i >= 2, i / ew, 0.0)  # rounds for i -> i + 1, i >= 2
    # cumulative sum over i = 2..w-1 for each w
    before = np.concatenate(([0.0], np.cumsum(step)[:-1]))
    w = i.astype(float)
    return (before + (3.0 * w + 1.0) / 2.0) * rtt


@dataclasses.dataclass(frozen=True)
class MarkovResult:
    """Model outputs, each broadcast to the shape of the inputs."""

    throughput_pkts_per_s: np.ndarray | float
    mean_cwnd: np.ndarray | float
    absorbing_mass: np.ndarray | float
    effective_p: np.ndarray | float
    uses_kim: np.ndarray | bool


def _solve_point(p_eff: float, cwmax: int, rtt: float, m: int, conditional: bool) -> tuple[float, float, float, bool]:
    # R = 1/(1 - p) lands on p' = 1e-16 or so in floating point; that is p' = 0
    if p_eff <= 1e-12:
        return float(kim.throughput(cwmax, rtt)), float(cwmax), 1.0, True
    P = state_probabilities(p_eff, cwmax, None if m < 0 else m)
    reach = _reach(P)
    pw = reach[1:-1] - reach[2:]
    m = pw.shape[0]
    w = np.arange(1, m + 1, dtype=float)
    ew = expected_effective_window(P, cwmax, conditional)
    T = expected_period(ew, rtt)
    rcv = w**2 / 2.0  # eq. (15)
    with np.errstate(invalid="ignore", divide="ignore"):
        terms = np.where(pw > 0, pw * rcv / T, 0.0)
    thr = float(np.sum(terms))  # eq. (2)
    cwnd = float(np.minimum(cwmax, w) @ pw)  # eq. (6)
    return thr, cwnd, float(pw.sum()), False


def solve(
    p: Reals, cwmax: Reals, rtt: Reals, R: Reals = 1.0, m: Reals | None = None, conditional_ew: bool = True
) -> MarkovResult:
    """Throughput (eq. 2), E[cwnd] (eq. 6) and Fig. 6's absorbing mass.

    ``p`` is the end-to-end erasure rate, ``cwmax`` the window limit CW_max,
    ``rtt`` seconds, ``R >= 1`` the redundancy, ``m`` the bound M on the
    visual window (default: adaptive, see :func:`state_probabilities`).  All broadcast against each other.
    """
    p = real("p", p, 0.0, 1.0, hi_closed=False)
    cwmax = integer("cwmax", cwmax, 1, 10_000)
    rtt = real("rtt", rtt, 0.0, lo_closed=False)
    R = real("R", R, 1.0)
    # m = -1 marks "choose M adaptively" inside the broadcast loop
    m = np.int64(-1) if m is None else integer("M", m, 2, 20_000)
    p, cwmax, rtt, R, m = np.broadcast_arrays(p, cwmax, rtt, R, m)
    p_eff = 1.0 - R * (1.0 - p)
    out = np.empty((4, *p.shape))
    kimmask = np.empty(p.shape, dtype=bool)
    for idx in np.ndindex(p.shape):
        thr, cw, mass, k = _solve_point(
            float(p_eff[idx]), int(cwmax[idx]), float(rtt[idx]), int(m[idx]), conditional_ew
        )
        out[(0, *idx)], out[(1, *idx)], out[(2, *idx)] = thr, cw, mass
        kimmask[idx] = k
    out[3] = p_eff
    conv = scalar_or_array
    return MarkovResult(
        conv(out[0]), conv(out[1]), conv(out[2]), conv(out[3]), bool(kimmask) if kimmask.ndim == 0 else kimmask
    )


def throughput(p: Reals, cwmax: Reals, rtt: Reals, R: Reals = 1.0, m: Reals | None = None) -> Floats:
    """E[Thr] in packets per second; see :func:`solve`."""
    return solve(p, cwmax, rtt, R, m).throughput_pkts_per_s


def mean_cwnd(p: Reals, cwmax: Reals, rtt: Reals = 1.0, R: Reals = 1.0, m: Reals | None = None) -> Floats:
    """E[cwnd] in packets, eq. (6); see :func:`solve`."""
    return solve(p, cwmax, rtt, R, m).mean_cwnd


def absorbing_mass(p: Reals, cwmax: Reals, m: Reals, R: Reals = 1.0) -> Floats:
    """Fig. 6: accumulated absorbing probability sum_{w<=M} p_w."""
    return solve(p, cwmax, 1.0, R, m).absorbing_mass


def equalising_redundancy(
    p: float,
    cwmax: int,
    rtt: float,
    target: float | None = None,
    rto: float | None = None,
    bottleneck: float | None = None,
    m: int | None = None,
) -> float:
    """Sec. 5.6: the redundancy R at which TCP-NC's modelled throughput equals TCP-Reno's.

    ``target`` is the Reno throughput in packets/s.  When it is omitted it is
    taken from Padhye's model at the same erasure rate, RTT, window limit and
    ``rto`` (default 2 RTT), capped at half of ``bottleneck`` (packets/s) when a
    shared bottleneck is given, since two flows cannot both exceed half of it.
    The search runs over R in [1, 1/(1 - p)): at the top end p' reaches 0 and
    TCP-NC is no longer lossy.  R = 1 is returned when TCP-NC already meets the
    target without redundancy.
    """
    p = float(real("p", p, 0.0, 1.0, lo_closed=False, hi_closed=False))
    cwmax = int(integer("cwmax", cwmax, 1))
    rtt = float(real("rtt", rtt, 0.0, lo_closed=False))
    if target is None:
        rto_v = 2.0 * rtt if rto is None else float(real("rto", rto, 0.0))
        target = float(padhye.throughput(p, rtt, rto_v, cwmax))
        if bottleneck is not None:
            target = min(target, float(real("bottleneck", bottleneck, 0.0, lo_closed=False)) / 2.0)
    target = float(real("target", target, 0.0, lo_closed=False))

    def gap(R: float) -> float:
        return float(throughput(p, cwmax, rtt, R, m)) - target

    lo = 1.0
    if gap(lo) >= 0:
        return 1.0
    # keep p' >= 1e-4 so the chain (not Kim's line) is what gets equalised
    hi = (1.0 - 1e-4) / (1.0 - p)
    if gap(hi) < 0:
        raise ModelParameterError(
            "target", f"at most {target + gap(hi):.6g} pkts/s (TCP-NC's throughput as p' -> 0)", target
        )
    return float(optimize.brentq(gap, lo, hi, xtol=1e-6))
