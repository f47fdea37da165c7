"""Abouzeid, Roy & Azizoglu (INFOCOM 2000): TCP over a lossy link (seed 002 ref. [11]).

The paper models the congestion window as a semi-Markov process driven by
random (i.i.d. Bernoulli) packet erasures, with regimes set by the link's
bandwidth-delay product.  Seed 002 compares against it in the regime where a
window's packets all leave at the start of a round (RTT much longer than the
window's transmission time), which is the form implemented here:

* each round the sender transmits its window w; every packet is erased
  independently with probability p;
* a round without erasures grows the window by one (congestion avoidance),
  up to the receiver limit W_max;
* a round with at least one erasure is detected by duplicate ACKs and halves
  the window (fast retransmit / fast recovery), never below one; timeouts are
  not modelled.

The window process on {1, ..., W_max} is then a finite Markov chain whose
stationary law is computed exactly; throughput is the mean number of packets
delivered per round, w(1 - p), divided by RTT.  Seed 002 feeds it the
transformed erasure rate 1 - R(1 - p) when predicting TCP-NC (sec. 5.5).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ._params import Floats, Reals, integer, real, scalar_or_array

__all__ = ["FLUID_CONSTANT", "mean_window", "stationary_window", "throughput", "transition_matrix"]

#: Small-p limit of E[W]·sqrt(p) for additive increase / halving under
#: Poisson-like random loss (Ott, Kemperman & Mathis 1996); a check, not an input.
FLUID_CONSTANT = 1.3098


def _support(p: float, wmax: int) -> int:
    """Largest window carrying any stationary mass worth representing.

    Climbing k windows above w needs k clean rounds, probability about
    exp(-p k^2 / 2); beyond 60/sqrt(p) that is below 1e-700, so the chain is
    cut there (a reflecting cap) when W_max is larger.  This keeps large W_max
    (the "no window limit" case) cheap without changing any printed digit.
    """
    if p <= 0.0:
        return wmax
    return int(min(wmax, np.ceil(60.0 / np.sqrt(p)) + 10))


def transition_matrix(p: float, wmax: int) -> Any:
    """Sparse row-stochastic matrix over windows 1..n (index w - 1), n = min(W_max, support).

    A ``scipy.sparse.csr_matrix``: scipy publishes no types.
    """
    from scipy import sparse

    p = float(real("p", p, 0.0, 1.0, hi_closed=False))
    wmax = int(integer("wmax", wmax, 1))
    n = _support(p, wmax)
    w = np.arange(1, n + 1)
    clean = (1.0 - p) ** w
    rows = np.concatenate([w - 1, w - 1])
    cols = np.concatenate([np.minimum(w + 1, n) - 1, np.maximum(w // 2, 1) - 1])
    vals = np.concatenate([clean, 1.0 - clean])
    return sparse.csr_matrix((vals, (rows, cols)), shape=(n, n))


def stationary_window(p: float, wmax: int) -> npt.NDArray[np.float64]:
    """Stationary distribution of the window over 1..n (see :func:`transition_matrix`)."""
    from scipy import sparse
    from scipy.sparse.linalg import spsolve

    P = transition_matrix(p, wmax)
    n = P.shape[0]
    if n == 1:
        return np.ones(1)
    # pi (P - I) = 0 with sum(pi) = 1: replace one balance equation by normalisation.
    A = (P - sparse.identity(n, format="csr")).T.tolil()
    A[n - 1, :] = np.ones(n)
    rhs = np.zeros(n)
    rhs[-1] = 1.0
    pi: npt.NDArray[np.float64] = np.clip(spsolve(A.tocsc(), rhs), 0.0, None)
    return pi / float(pi.sum())


def _broadcast(p: Reals, wmax: Reals, *rest: Reals) -> tuple[npt.NDArray[Any], ...]:
    checked = (real("p", p, 0.0, 1.0, hi_closed=False), integer("wmax", wmax, 1, 2**62))  # see _support
    return tuple(np.broadcast_arrays(*checked, *(np.asarray(r) for r in rest)))


def mean_window(p: Reals, wmax: Reals) -> Floats:
    """Stationary mean congestion window in packets."""
    p, wmax = _broadcast(p, wmax)
    out = np.empty(p.shape)
    for idx in np.ndindex(p.shape):
        pi = stationary_window(float(p[idx]), int(wmax[idx]))
        out[idx] = pi @ np.arange(1, pi.size + 1)
    return scalar_or_array(out)


def throughput(p: Reals, rtt: Reals, wmax: Reals) -> Floats:
    """Delivered packets per second: E[W](1 - p)/RTT."""
    rtt = real("rtt", rtt, 0.0, lo_closed=False)
    p, wmax, rtt = _broadcast(p, wmax, rtt)
    return scalar_or_array(np.asarray(mean_window(p, wmax)) * (1.0 - p) / rtt)
