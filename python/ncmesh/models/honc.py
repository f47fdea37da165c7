"""Liu & Gu, TCP-HONC (IET Networks 2012, seed 000): closed forms.

n hops in series, each of bandwidth b, one-way propagation delay d and
erasure rate p.  Throughput: eqs. (3)-(5); delay of one-hop versus end-to-end
ACK-and-retransmission: eqs. (6)-(8), derived in the appendix from
eqs. (20)-(26); codec pairs per hop: eqs. (9)-(11).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy import stats

from ._params import Floats, ModelParameterError, Reals, integer, real, scalar_or_array

__all__ = [
    "codec_pairs",
    "codec_pairs_ideal",
    "decoding_probability",
    "delay_end_to_end",
    "delay_end_to_end_recursive",
    "delay_one_hop",
    "delay_reduction",
    "throughput_end_to_end",
    "throughput_gain",
    "throughput_hop_by_hop",
]


def _p(p: Reals) -> npt.NDArray[np.float64]:
    return real("p", p, 0.0, 1.0, hi_closed=False)


def _n(n: Reals) -> npt.NDArray[np.int64]:
    return integer("n", n, 1)


def throughput_hop_by_hop(b: Reals, p: Reals) -> Floats:
    """Eq. (3): re-encoding at every hop loses only one hop's erasures, b(1 - p)."""
    return scalar_or_array(real("b", b, 0.0) * (1.0 - _p(p)))


def throughput_end_to_end(b: Reals, p: Reals, n: Reals) -> Floats:
    """Eq. (4): a packet must survive all n hops, b(1 - p)^n."""
    return scalar_or_array(real("b", b, 0.0) * (1.0 - _p(p)) ** _n(n))


def throughput_gain(p: Reals, n: Reals) -> Floats:
    """Eq. (5): ratio of (3) to (4), (1 - p)^(1 - n)."""
    return scalar_or_array((1.0 - _p(p)) ** (1 - _n(n)))


def delay_one_hop(d: Reals, p: Reals, n: Reals) -> Floats:
    """Eq. (6) = (22): n d (1 + p)/(1 - p).

    Per hop, eq. (20): an attempt succeeds with 1 - p after d, or is lost and
    costs 2d (send plus the wait for the missing ACK) before a retry.
    """
    d = real("d", d, 0.0)
    p = _p(p)
    return scalar_or_array(_n(n) * d * (1.0 + p) / (1.0 - p))


def delay_end_to_end_recursive(d: Reals, p: Reals, n: Reals) -> Floats:
    """Eq. (25) iterated from Delay^0 = 0: Delay^k = d(1 + kp)/(1-p) + Delay^(k-1)/(1-p)."""
    d = real("d", d, 0.0)
    p = _p(p)
    n = _n(n)
    d, p, n = np.broadcast_arrays(d, p, n)
    out = np.zeros(d.shape)
    for k in range(1, int(n.max(initial=0)) + 1):
        step = d * (1.0 + k * p) / (1.0 - p) + out / (1.0 - p)
        out = np.where(k <= n, step, out)
    return scalar_or_array(out)


def delay_end_to_end(d: Reals, p: Reals, n: Reals) -> Floats:
    """Eq. (7) = (26), the closed form of (25); p = 0 is its limit n d."""
    d = real("d", d, 0.0)
    p = _p(p)
    n = _n(n)
    d, p, n = np.broadcast_arrays(d, p, n)
    ps = np.where(p == 0.0, 0.5, p)  # eq. (7) divides by p; p = 0 handled below
    q = 1.0 - ps
    i = np.arange(int(n.max(initial=1)) - 1)  # i = 0..n-2
    terms = (n[..., None] - i) / q[..., None] ** (i + 1)
    tail = np.where(i < n[..., None] - 1, terms, 0.0).sum(axis=-1)
    out = d * (1.0 + ps**2) / (ps * q**n) - d / ps + d * ps * tail
    return scalar_or_array(np.where(p == 0.0, n * d, out))


def delay_reduction(p: Reals, n: Reals) -> Floats:
    """Eq. (8): Delay_one-hop / Delay_end-to-end, 1 at p = 0."""
    p = _p(p)
    n = _n(n)
    p, n = np.broadcast_arrays(p, n)
    q = 1.0 - p
    i = np.arange(int(n.max(initial=1)) - 1)
    terms = (n[..., None] - i) * q[..., None] ** (n[..., None] - i - 1)
    tail = np.where(i < n[..., None] - 1, terms, 0.0).sum(axis=-1)
    # 1 - q^n as -expm1(n ln q): at small p it would otherwise cancel to nothing
    one_minus_qn = -np.expm1(n * np.log1p(-p))
    with np.errstate(invalid="ignore"):  # 0/0 at p = 0, replaced by the limit
        out = n * p * (1 + p) * q ** (n - 1) / (one_minus_qn + p**2 * (1 + tail))
    return scalar_or_array(np.where(p == 0.0, 1.0, out))


def codec_pairs_ideal(d: Reals, packet_bits: Reals, block: Reals, capacity: Reals) -> Floats:
    """Eq. (9): B' = ceil((2d + L_data L/c) / (L_data L/c)), codec pairs for a loss-free hop.

    One block of L packets of L_data bits takes L_data L / c seconds to send and
    its ACK-NCB returns 2d later; B' blocks in flight keep the hop busy.
    """
    d = real("d", d, 0.0)
    bits = real("packet_bits", packet_bits, 0.0, lo_closed=False)
    L = integer("block", block, 1)
    c = real("capacity", capacity, 0.0, lo_closed=False)
    tx = bits * L / c
    # round before ceil so that an exact ratio such as 3.0000000000000004 stays 3
    return scalar_or_array(np.ceil(np.round((2.0 * d + tx) / tx, 9)).astype(np.int64))


def decoding_probability(p: Reals, block: Reals, R: Reals) -> Floats:
    """Eq. (10): P(at least L of floor(R L) coded packets arrive).

    The printed binomial is C(k, floor(RL)), which is zero for k < floor(RL);
    the evident intent, and what is computed, is C(floor(RL), k): k arrivals
    out of floor(R L) transmissions, each surviving with 1 - p.
    """
    p = _p(p)
    L = integer("block", block, 1)
    R = real("R", R, 1.0)
    N = np.floor(R * L + 1e-9)  # tolerance so that R L = 12.000000000000002 stays 12
    # P(X >= L) for X ~ Binomial(N, 1 - p)
    return scalar_or_array(stats.binom.sf(L - 1, N, 1.0 - p))


def codec_pairs(b_ideal: Reals, success: Reals, p_th: float = 0.8, b_cap: int = 10_000) -> Floats:
    """Eq. (11): the least B >= B' with P(at least B' of B pairs decode first time) >= P_th.

    As printed, eq. (11) has the binomial arguments transposed, like eq. (10),
    and weights k successes by p_mn^k (1 - p_mn)^(B - k) with the erasure rate
    p_mn.  The sentence it formalises ("the probability of no less than B'
    codec pairs having successful decoding") makes each pair a trial that
    succeeds with the decoding probability of eq. (10), so ``success`` is
    P_b from :func:`decoding_probability` and the sum is P(Binomial(B, P_b) >= B').
    """
    bi = integer("b_ideal", b_ideal, 1)
    s = real("success", success, 0.0, 1.0, lo_closed=False)
    pt = real("p_th", p_th, 0.0, 1.0, lo_closed=False, hi_closed=False)
    bi, s, pt = np.broadcast_arrays(bi, s, pt)
    out = np.empty(bi.shape, dtype=np.int64)
    for idx in np.ndindex(bi.shape):
        B = np.arange(int(bi[idx]), b_cap + 1)
        ok = stats.binom.sf(bi[idx] - 1, B, s[idx]) >= pt[idx]
        if not ok.any():
            raise ModelParameterError("success", f"large enough to reach p_th within {b_cap} pairs", float(s[idx]))
        out[idx] = B[np.argmax(ok)]
    return scalar_or_array(out) if out.ndim else int(out)
