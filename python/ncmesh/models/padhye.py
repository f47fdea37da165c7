"""Padhye, Firoiu, Towsley & Kurose (SIGCOMM 1998): the full TCP Reno model.

Implemented is the paper's "full model", eq. (32): triple-duplicate loss
indications, timeouts with exponential back-off (f(p), eq. 28), the
probability that a loss indication is a timeout (Q̂, eq. 24), and the receiver
window limit W_max.  Losses within a round are correlated (once a packet is
lost, the rest of its round is lost too), as in the paper.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ._params import Floats, Reals, real, scalar_or_array

__all__ = ["expected_window", "throughput", "throughput_approx", "timeout_probability"]


def _f(p: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    # eq. (28): 1 + p + 2p^2 + ... + 32p^6, the mean length of a timeout
    # sequence in units of T0 with back-off doubling up to 64 T0.
    return 1 + p + 2 * p**2 + 4 * p**3 + 8 * p**4 + 16 * p**5 + 32 * p**6


def expected_window(p: Reals, b: Reals = 1.0) -> Floats:
    """Unconstrained mean window at a loss indication, E[W_u] (eq. 13)."""
    p = real("p", p, 0.0, 1.0, lo_closed=False, hi_closed=False)
    b = real("b", b, 1.0)
    a = (2.0 + b) / (3.0 * b)
    return scalar_or_array(a + np.sqrt(8.0 * (1.0 - p) / (3.0 * b * p) + a * a))


def timeout_probability(p: Reals, w: Reals) -> Floats:
    """Q̂(w) (eq. 24): chance that a loss in a window of w packets ends in a timeout."""
    p = real("p", p, 0.0, 1.0, lo_closed=False, hi_closed=False)
    # A window of 3 or fewer cannot produce three duplicate ACKs: eq. (24) is exactly 1 at w = 3.
    w = np.maximum(real("w", w, 1.0), 3.0)
    # q^k = exp(k ln q): with ln q = log1p(-p) and 1 - q^k = -expm1(k ln q), nothing
    # cancels at small p, where 1 - q^k would round to 0 and eq. (24) to 0/0.
    ln_q = np.log1p(-p)
    val = np.expm1(3.0 * ln_q) * (1.0 - np.exp(3.0 * ln_q) * np.expm1((w - 3.0) * ln_q)) / np.expm1(w * ln_q)
    return scalar_or_array(val)


def throughput(p: Reals, rtt: Reals, rto: Reals, wmax: Reals, b: Reals = 1.0) -> Floats:
    """TCP Reno send rate B(p) in packets per second, eq. (32).

    ``rto`` is T0, the initial timeout; ``b`` the packets acknowledged per ACK.
    p = 0 is the lossless limit W_max/RTT (the second branch as p -> 0).
    """
    p = real("p", p, 0.0, 1.0, hi_closed=False)
    rtt = real("rtt", rtt, 0.0, lo_closed=False)
    rto = real("rto", rto, 0.0)
    wmax = real("wmax", wmax, 1.0)
    b = real("b", b, 1.0)
    p, rtt, rto, wmax, b = np.broadcast_arrays(p, rtt, rto, wmax, b)
    lossless = p == 0.0
    ps = np.where(lossless, 0.5, p)  # placeholder keeps the formulas finite; masked below
    q = 1.0 - ps
    ew = np.asarray(expected_window(ps, b))
    window_limited = ew >= wmax
    w = np.where(window_limited, wmax, ew)
    qhat = np.asarray(timeout_probability(ps, w))
    timeouts = qhat * rto * _f(ps) / q
    num = q / ps + w + qhat / q
    den_free = rtt * (b / 2.0 * ew + 1.0) + timeouts
    den_lim = rtt * (b / 8.0 * wmax + q / (ps * wmax) + 2.0) + timeouts
    out = num / np.where(window_limited, den_lim, den_free)
    return scalar_or_array(np.where(lossless, wmax / rtt, out))


def throughput_approx(p: Reals, rtt: Reals, rto: Reals, wmax: Reals, b: Reals = 1.0) -> Floats:
    """The paper's approximation, eq. (33); used only as an independent cross-check."""
    p = real("p", p, 0.0, 1.0, lo_closed=False, hi_closed=False)
    rtt = real("rtt", rtt, 0.0, lo_closed=False)
    rto = real("rto", rto, 0.0)
    wmax = real("wmax", wmax, 1.0)
    b = real("b", b, 1.0)
    den = rtt * np.sqrt(2 * b * p / 3) + rto * np.minimum(1, 3 * np.sqrt(3 * b * p / 8)) * p * (1 + 32 * p**2)
    return scalar_or_array(np.minimum(wmax / rtt, 1.0 / den))
