"""Bianchi (IEEE JSAC 18(3), 2000): saturation throughput of the 802.11 DCF.

n stations always have a frame to send. Each transmits in a slot with
probability tau and a transmission collides with probability p; the two are
tied by the station's backoff chain and by p = 1 - (1 - tau)^(n-1) (eq. 9):

    tau = sum_{i<R} p^i / sum_{i<R} p^i (W_i + 1) / 2,   W_i = 2^min(i, m) W,

with W = CWmin + 1, 2^m W = CWmax + 1, and R attempts per frame. This is the
renewal form of the Markov chain's stationary solution: a frame spends
(W_i + 1)/2 slots in stage i on average, counting its transmission, and
reaches stage i with probability p^i. As R grows it becomes Bianchi's eq. (7),
tau = 2 (1 - 2p) / ((1 - 2p)(W + 1) + p W (1 - (2p)^m)); R finite is the
retry-limited chain of Wu et al. (INFOCOM 2002) without its drop state.

The throughput is eq. (13):

    S = Ps Ptr E[P] / ((1 - Ptr) sigma + Ptr Ps Ts + Ptr (1 - Ps) Tc),

with Ptr = 1 - (1 - tau)^n, Ps = n tau (1 - tau)^(n-1) / Ptr, sigma the slot,
and Ts, Tc the times the medium is busy for a success and a collision
(eqs. 14 and 15; the propagation delay is taken as zero).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ._params import ModelParameterError

__all__ = ["Timing", "collision_probability", "dsss_timing", "throughput", "transmit_probability"]


def _tau(p: float, w: int, m: int, attempts: float) -> float:
    stages = range(int(attempts)) if math.isfinite(attempts) else None
    if stages is None:
        if p >= 0.5:
            # Bianchi's closed form has a removable singularity at 2p = 1; sum far enough instead.
            stages = range(4000)
        else:
            return 2 * (1 - 2 * p) / ((1 - 2 * p) * (w + 1) + p * w * (1 - (2 * p) ** m))
    num: float = sum(p**i for i in stages)
    den: float = sum(p**i * (2 ** min(i, m) * w + 1) / 2 for i in stages)
    return num / den


def transmit_probability(
    n: int, cw_min: int = 31, cw_max: int = 1023, attempts: float = math.inf
) -> tuple[float, float]:
    """(tau, p): the fixed point of the backoff chain and eq. (9), by bisection on p."""
    if n < 1:
        raise ModelParameterError("n", "an integer >= 1", n)
    if cw_min < 1 or cw_max < cw_min:
        raise ModelParameterError("cw_max", f"at least cw_min = {cw_min} >= 1", cw_max)
    if attempts < 1:
        raise ModelParameterError("attempts", "at least 1", attempts)
    w = cw_min + 1
    m = round(math.log2((cw_max + 1) / w))
    if n == 1:
        return _tau(0.0, w, m, attempts), 0.0
    low, high = 0.0, 1.0 - 1e-12
    for _ in range(200):
        p = 0.5 * (low + high)
        if p - (1 - (1 - _tau(p, w, m, attempts)) ** (n - 1)) < 0:
            low = p
        else:
            high = p
    p = 0.5 * (low + high)
    return _tau(p, w, m, attempts), p


def collision_probability(n: int, cw_min: int = 31, cw_max: int = 1023, attempts: float = math.inf) -> float:
    return transmit_probability(n, cw_min, cw_max, attempts)[1]


@dataclass(frozen=True)
class Timing:
    """What one channel access costs, seconds."""

    slot: float
    success: float
    collision: float


def _dsss(bytes_: int, mbps: float, preamble_us: float) -> float:
    return (preamble_us + math.ceil(8 * bytes_ / mbps)) * 1e-6


def dsss_timing(
    payload_bytes: int = 1500,
    rate_mbps: float = 11.0,
    control_mbps: float = 1.0,
    access: str = "basic",
    preamble: str = "long",
    collision_ifs: str = "eifs",
) -> Timing:
    """Ts and Tc of 802.11b, with a 36-byte MAC overhead, 14-byte ACK and CTS, 20-byte RTS.

    ``collision_ifs`` is what follows a collision: "difs" as in Bianchi's
    paper, or "eifs" as 802.11 has every station that saw the damaged frame
    wait (SIFS + DIFS + an ACK at 1 Mbit/s) before it counts its backoff again.
    """
    if access not in ("basic", "rts"):
        raise ModelParameterError("access", '"basic" or "rts"', access)
    if collision_ifs not in ("difs", "eifs"):
        raise ModelParameterError("collision_ifs", '"difs" or "eifs"', collision_ifs)
    if preamble not in ("long", "short"):
        raise ModelParameterError("preamble", '"long" or "short"', preamble)
    long_plcp = 192.0
    plcp = 96.0 if preamble == "short" else long_plcp

    def at(bytes_: int, mbps: float) -> float:
        return _dsss(bytes_, mbps, long_plcp if mbps == 1.0 else plcp)  # no short preamble at 1 Mbit/s

    sifs, slot = 10e-6, 20e-6
    difs = sifs + 2 * slot
    eifs = sifs + difs + _dsss(14, 1.0, long_plcp)
    after_collision = eifs if collision_ifs == "eifs" else difs
    data = at(payload_bytes + 36, rate_mbps)
    ack = at(14, control_mbps)
    if access == "basic":
        return Timing(slot, data + sifs + ack + difs, data + after_collision)
    rts, cts = at(20, control_mbps), at(14, control_mbps)
    return Timing(slot, rts + sifs + cts + sifs + data + sifs + ack + difs, rts + after_collision)


def throughput(
    n: int,
    timing: Timing,
    payload_bytes: int = 1500,
    cw_min: int = 31,
    cw_max: int = 1023,
    attempts: float = math.inf,
) -> float:
    """Saturation throughput of n stations, bit/s of payload (eq. 13)."""
    tau, _ = transmit_probability(n, cw_min, cw_max, attempts)
    p_tr = 1 - (1 - tau) ** n
    p_s = n * tau * (1 - tau) ** (n - 1) / p_tr
    busy = (1 - p_tr) * timing.slot + p_tr * p_s * timing.success + p_tr * (1 - p_s) * timing.collision
    return p_s * p_tr * payload_bytes * 8 / busy
