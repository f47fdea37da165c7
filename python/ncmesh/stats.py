"""Summaries of a metric over seeds, with intervals that respect its scale and bounds.

A sweep gives each point a handful of seeds, and most metrics are positive
and skewed across them (a seed whose TCP flows time out has a delay many
times the others'). A Student t interval on such values is symmetric, so
with three seeds it routinely reaches below zero. Positive, ratio-scale
metrics are therefore summarized on the log scale: the centre is the
geometric mean and the interval is a Student t interval on the logarithms,
taken back with ``exp``. It is exact when the metric is log-normal across
seeds, it is asymmetric as skewed data are, and it cannot leave (0, inf).
docs/sweeps.md says why this and not a bootstrap.

Metrics that are often exactly zero (retransmits, drops) or bounded above
(fairness) keep the arithmetic mean and the Student t interval, intersected
with the metric's bounds; an interval for a quantity that cannot leave its
bounds loses no coverage by being cut to them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

LEVEL = 0.95
"""The confidence level of every interval in reports."""

FEW_SEEDS = 3
"""Points with fewer seeds than this are marked: their intervals say little."""


@dataclass(frozen=True)
class Scale:
    """What a metric can be: its bounds, and whether it is summarized on the log scale."""

    log: bool
    low: float = 0.0
    high: float = math.inf


RATIO = Scale(log=True)
"""Positive and multiplicative: throughput, delay, bytes. Zero only when something stalled."""
COUNT = Scale(log=False)
"""Non-negative, and often exactly zero: retransmits, timeouts, drops."""
UNIT = Scale(log=False, high=1.0)
"""A fraction or an index in [0, 1], such as Jain's fairness."""


@dataclass(frozen=True)
class Summary:
    """A centre and its interval over ``n`` values.

    ``method`` is ``"log-t"`` (geometric mean, t interval on the logarithms),
    ``"t"`` (arithmetic mean, t interval cut to the bounds), ``"one"`` (a
    single value: no interval) or ``"none"`` (no value).
    """

    center: float
    low: float
    high: float
    n: int
    method: str


@cache
def t_quantile(df: int, level: float = LEVEL) -> float:
    """The two-sided Student t quantile for ``df`` degrees of freedom."""
    from scipy import stats

    return float(stats.t.ppf(0.5 + level / 2, df))


def summarize(values: Iterable[float], scale: Scale = COUNT, level: float = LEVEL) -> Summary:
    """The centre of ``values`` and its ``level`` confidence interval on ``scale``.

    NaN values (a metric the run did not define) are left out and not counted.
    A log-scale metric with a zero among its values falls back to the
    arithmetic mean: the logarithm of zero is no number, and the fallback
    still keeps the interval within the bounds.
    """
    xs = [float(v) for v in values if not math.isnan(v)]
    n = len(xs)
    if n == 0:
        return Summary(math.nan, math.nan, math.nan, 0, "none")
    if n == 1:
        return Summary(xs[0], math.nan, math.nan, 1, "one")
    if scale.log and all(x > 0 for x in xs):
        logs = [math.log(x) for x in xs]
        center, half = _mean_and_half_width(logs, level)
        return Summary(math.exp(center), math.exp(center - half), math.exp(center + half), n, "log-t")
    center, half = _mean_and_half_width(xs, level)
    return Summary(center, max(center - half, scale.low), min(center + half, scale.high), n, "t")


def _mean_and_half_width(xs: list[float], level: float) -> tuple[float, float]:
    """The mean of two or more values and the half-width of its t interval."""
    n = len(xs)
    mean = math.fsum(xs) / n
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1))
    return mean, t_quantile(n - 1, level) * sd / math.sqrt(n)
