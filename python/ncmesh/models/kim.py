"""Kim, Médard & Barros's model of TCP/NC (seed 002 ref. [14]).

Its premise is that the redundancy R is large enough to hide every random
erasure from TCP (R(1 - p) >= 1), so the congestion window never closes: it
grows additively by 1/b per round trip from ``w0`` and then sits at the window
limit W_max.  Throughput therefore depends on W_max, RTT and the length of the
connection only, which is why seed 002 (sec. 5.5, Fig. 8) draws it as a
horizontal line against the erasure rate.  Seed 002 sec. 4.5 falls back to this
model whenever the transformed loss p' = 1 - R(1 - p) is not positive.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ._params import Floats, Reals, real, scalar_or_array

__all__ = ["masks_losses", "rounds_to_wmax", "throughput"]


def masks_losses(p: Reals, R: Reals) -> bool | npt.NDArray[np.bool_]:
    """True where redundancy R supplies at least one innovative packet per slot."""
    p = real("p", p, 0.0, 1.0, hi_closed=False)
    R = real("R", R, 1.0)
    return R * (1.0 - p) >= 1.0


def rounds_to_wmax(wmax: Reals, b: Reals = 1.0, w0: Reals = 1.0) -> Floats:
    """Rounds of additive increase before the window reaches W_max."""
    wmax = real("wmax", wmax, 1.0)
    b = real("b", b, 1.0)
    w0 = real("w0", w0, 1.0)
    return np.ceil(np.maximum(wmax - w0, 0.0) * b)


def throughput(wmax: Reals, rtt: Reals, duration: Reals = np.inf, b: Reals = 1.0, w0: Reals = 1.0) -> Floats:
    """Average TCP/NC throughput in packets per second over a connection of ``duration`` s.

    The window in round i is min(W_max, w0 + i/b); the average is taken over
    the n = floor(duration/rtt) whole rounds of the connection (at least one).
    An infinite duration gives the steady state W_max/RTT.
    """
    wmax = real("wmax", wmax, 1.0)
    rtt = real("rtt", rtt, 0.0, lo_closed=False)
    duration = real("duration", duration, 0.0, lo_closed=False)
    b = real("b", b, 1.0)
    w0 = real("w0", w0, 1.0)
    wmax, rtt, duration, b, w0 = np.broadcast_arrays(wmax, rtt, duration, b, w0)
    start: npt.NDArray[np.float64] = np.minimum(w0, wmax)
    k = rounds_to_wmax(wmax, b, start)
    with np.errstate(invalid="ignore", over="ignore"):
        n = np.maximum(np.floor(duration / rtt), 1.0)
        total = np.where(n <= k, _ramp(n, start, b), _ramp(k, start, b) + (n - k) * wmax)
        # n is infinite for an infinite duration, or one whose rounds overflow a float
        avg = np.where(np.isinf(n), wmax, total / n)
    return scalar_or_array(avg / rtt)


def _ramp(m: Floats, w0: npt.NDArray[np.float64], b: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """The packets of the first m rounds: the sum of w0 + i/b over i < m."""
    return m * w0 + m * (m - 1.0) / (2.0 * b)
