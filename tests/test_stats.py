"""Intervals over seeds: worked numbers, bounds, and coverage on skewed data."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ncmesh.stats import COUNT, RATIO, UNIT, Scale, summarize, t_quantile


def t_quantile_two_df(p: float) -> float:
    """The t quantile at 2 degrees of freedom in closed form: (2p - 1) sqrt(2 / (4p(1 - p)))."""
    return (2 * p - 1) * math.sqrt(2 / (4 * p * (1 - p)))


def test_t_quantiles_match_closed_forms_and_tables():
    assert t_quantile(2) == pytest.approx(t_quantile_two_df(0.975), rel=1e-12)
    assert t_quantile(1) == pytest.approx(math.tan(math.pi * (0.975 - 0.5)), rel=1e-12)  # Cauchy
    assert t_quantile(4) == pytest.approx(2.776445105, rel=1e-9)  # printed tables


def test_log_t_interval_of_a_worked_sample():
    # logs of 1, 2, 4 are 0, a, 2a with a = ln 2: mean a, sample deviation a.
    s = summarize([1.0, 2.0, 4.0], RATIO)
    half = t_quantile_two_df(0.975) * math.log(2) / math.sqrt(3)
    assert (s.n, s.method) == (3, "log-t")
    assert s.center == pytest.approx(2.0, rel=1e-12)  # geometric mean
    assert s.low == pytest.approx(2 * math.exp(-half), rel=1e-12)
    assert s.high == pytest.approx(2 * math.exp(half), rel=1e-12)
    assert (s.low, s.high) == pytest.approx((0.357462, 11.18999), rel=1e-5)
    assert s.low * s.high == pytest.approx(s.center**2, rel=1e-12)  # symmetric on the log scale


def test_arithmetic_interval_is_cut_to_the_bounds():
    # 0, 0, 9: mean 3, sample deviation sqrt(27); the t interval is 3 -/+ 12.907
    s = summarize([0.0, 0.0, 9.0], COUNT)
    half = t_quantile_two_df(0.975) * math.sqrt(27) / math.sqrt(3)
    assert (s.center, s.low, s.method) == (3.0, 0.0, "t")
    assert s.high == pytest.approx(3 + half, rel=1e-12)
    fair = summarize([0.5, 0.9, 1.0], UNIT)
    assert fair.center == pytest.approx(0.8) and fair.high == 1.0 and 0 < fair.low < 0.8


def test_a_zero_among_ratio_values_falls_back_to_the_arithmetic_mean():
    s = summarize([0.0, 10.0, 20.0], RATIO)
    assert (s.center, s.method, s.low) == (10.0, "t", 0.0)


def test_one_value_has_no_interval_and_missing_values_are_not_counted():
    one = summarize([5.0, math.nan], RATIO)
    assert (one.center, one.n, one.method) == (5.0, 1, "one")
    assert math.isnan(one.low) and math.isnan(one.high)
    assert summarize([math.nan], RATIO).method == "none"
    assert summarize([], COUNT).n == 0


@given(st.lists(st.floats(min_value=1e-9, max_value=1e12), min_size=2, max_size=12))
def test_a_positive_metric_never_gets_an_interval_below_zero(values):
    s = summarize(values, RATIO)
    assert 0 < s.low <= s.center * (1 + 1e-9) and s.center <= s.high * (1 + 1e-9)
    assert min(values) * (1 - 1e-9) <= s.center <= max(values) * (1 + 1e-9)


@given(st.lists(st.floats(min_value=0, max_value=1), min_size=2, max_size=12))
def test_a_fraction_keeps_its_interval_in_zero_one(values):
    s = summarize(values, UNIT)
    assert 0 <= s.low <= s.center <= s.high <= 1


@pytest.mark.parametrize("seeds", [3, 5])
def test_log_t_covers_the_geometric_mean_of_skewed_data_95_percent_of_the_time(seeds):
    """Log-normal seeds with sigma 1: a mean about 1.6 times the median, a long right tail."""
    rng = np.random.default_rng(20)
    mu, trials = 1.0, 4000
    samples = rng.lognormal(mu, 1.0, size=(trials, seeds))
    intervals = [summarize(row, RATIO) for row in samples]
    covered = np.mean([s.low <= math.exp(mu) <= s.high for s in intervals])
    # binomial standard error at 95% over 4000 trials is 0.0034
    assert 0.95 - 0.014 < covered < 0.95 + 0.014
    assert all(s.low > 0 for s in intervals)
    # the same data under a Student t interval on the raw values: it reaches below zero often
    raw_low = [summarize(row, Scale(log=False, low=-math.inf)).low for row in samples]
    assert np.mean(np.array(raw_low) < 0) > 0.3
