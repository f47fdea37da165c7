"""Seed 000 closed forms (ncmesh.models.honc)."""

import numpy as np
import pytest
from scipy import special

from ncmesh.models import ModelParameterError, honc


def test_eq7_matches_recursion_25():
    ps = np.array([0.0, 0.01, 0.1, 0.35, 0.6])[:, None]
    ns = np.arange(1, 9)[None, :]
    closed = honc.delay_end_to_end(0.1, ps, ns)
    rec = honc.delay_end_to_end_recursive(0.1, ps, ns)
    assert closed == pytest.approx(rec, rel=1e-10)
    # (25) at p = 0 is n d, the appendix's own boundary condition
    assert closed[0] == pytest.approx(0.1 * np.arange(1, 9))


def test_eq7_matches_monte_carlo_of_end_to_end_retransmission():
    # The appendix's end-to-end scheme (eqs. 23-25): a packet crosses hop k in
    # d, or is lost there with probability p, which costs d (k + 1) before the
    # source sends it again from the first hop.
    rng = np.random.default_rng(2012)
    d, p, n, trials = 0.1, 0.2, 4, 250_000
    delay = np.zeros(trials)
    hop = np.ones(trials, dtype=int)
    moving = np.ones(trials, dtype=bool)
    while moving.any():
        lost = moving & (rng.random(trials) < p)
        crossed = moving & ~lost
        delay += np.where(lost, d * (hop + 1), 0.0) + np.where(crossed, d, 0.0)
        hop = np.where(lost, 1, np.where(crossed, hop + 1, hop))
        moving &= hop <= n
    se = delay.std() / np.sqrt(trials)
    assert abs(delay.mean() - honc.delay_end_to_end(d, p, n)) < 4 * se
    assert 4 * se < 0.01 * delay.mean(), "the check resolves a 1% error"


def test_eq7_by_hand():
    # n = 2, p = 0.1, d = 1: eq. (26) = 1.01 / (0.1 * 0.81) - 10 + 0.1 * 2 / 0.9
    # = 12.469136 - 10 + 0.222222 = 2.691358.
    assert honc.delay_end_to_end(1.0, 0.1, 2) == pytest.approx(2.691358, rel=1e-6)


def test_eq22_matches_monte_carlo():
    # Stop-and-wait per hop (eq. 20): each failed attempt costs 2d, the
    # successful one d.  Number of failures per hop ~ Geometric.
    rng = np.random.default_rng(2012)
    d, p, n, trials = 0.1, 0.35, 4, 200_000
    failures = rng.geometric(1 - p, size=(trials, n)) - 1
    delay = (2 * d * failures + d).sum(axis=1)
    se = delay.std() / np.sqrt(trials)
    assert abs(delay.mean() - honc.delay_one_hop(d, p, n)) < 4 * se


def test_eq8_is_ratio_of_6_and_7_and_one_at_zero_loss():
    ps = np.linspace(0.0, 0.5, 11)
    for n in (1, 2, 4, 6):
        ratio = honc.delay_one_hop(1.0, ps[1:], n) / honc.delay_end_to_end(1.0, ps[1:], n)
        assert honc.delay_reduction(ps[1:], n) == pytest.approx(ratio)
        assert honc.delay_reduction(0.0, n) == 1.0
        # Near p = 0 it tends to its limit: 1 - (1 - p)^n must not cancel to nothing.
        assert honc.delay_reduction(1e-17, n) == pytest.approx(1.0, rel=1e-12)
    assert honc.delay_reduction(0.3, 1) == pytest.approx(1.0)


def test_eq8_over_an_array_of_hop_counts():
    # Each n of one call must give what it gives alone: the sums over i < n - 1 are masked per n.
    ns = np.array([1, 2, 4, 6])
    ratio = honc.delay_one_hop(1.0, 0.2, ns) / honc.delay_end_to_end(1.0, 0.2, ns)
    assert honc.delay_reduction(0.2, ns) == pytest.approx(ratio, rel=1e-12)
    assert honc.delay_reduction(0.2, [[1], [6]]).shape == (2, 1)


def test_an_empty_curve_is_an_empty_result():
    none = np.array([], dtype=int)
    for f in (honc.delay_end_to_end, honc.delay_end_to_end_recursive, honc.delay_one_hop):
        assert f(0.1, 0.2, none).shape == (0,)
    assert honc.delay_reduction(0.2, none).shape == (0,)


def test_throughput_gain_hand_value():
    # 4 hops at 35% loss: (0.65)^-3 = 1/0.274625 = 3.6413
    assert honc.throughput_gain(0.35, 4) == pytest.approx(3.6413, abs=1e-4)
    assert honc.throughput_hop_by_hop(1.0, 0.35) / honc.throughput_end_to_end(1.0, 0.35, 4) == pytest.approx(
        honc.throughput_gain(0.35, 4)
    )
    assert honc.throughput_gain([0.1, 0.5], 1) == pytest.approx([1, 1])


def test_codec_pairs_ideal_by_hand():
    # 10 packets of 8000 bits at 1 Mbit/s take 0.08 s; 2d = 0.2 s of ACK
    # turnaround: (0.2 + 0.08)/0.08 = 3.5 -> 4 pairs.  With d = 0.12 it is exactly 4.
    assert honc.codec_pairs_ideal(0.1, 8000, 10, 1e6) == 4
    assert honc.codec_pairs_ideal(0.12, 8000, 10, 1e6) == 4
    assert honc.codec_pairs_ideal(0.0, 8000, 10, 1e6) == 1
    # (0.18 + 0.08)/0.08 = 3.25 -> 4; a ratio within 1e-9 of 3 counts as 3 (3.0000000001 here).
    assert honc.codec_pairs_ideal(0.09, 8000, 10, 1e6) == 4
    assert honc.codec_pairs_ideal(0.08 * (1 + 0.5e-10), 8000, 10, 1e6) == 3


def test_decoding_probability_limits_and_monte_carlo():
    # No redundancy: every one of the L packets must arrive.
    assert honc.decoding_probability(0.2, 10, 1.0) == pytest.approx(0.8**10)
    # One spare packet: L of L+1, by hand (1-p)^(L+1) + (L+1) p (1-p)^L.
    L, p = 8, 0.1
    assert honc.decoding_probability(p, L, (L + 1) / L) == pytest.approx(
        (1 - p) ** (L + 1) + (L + 1) * p * (1 - p) ** L
    )
    rng = np.random.default_rng(0)
    arrivals = (rng.random((100_000, 20)) > 0.25).sum(axis=1)
    assert honc.decoding_probability(0.25, 16, 1.25) == pytest.approx((arrivals >= 16).mean(), abs=0.005)
    assert honc.decoding_probability(0.0, 16, 1.0) == 1.0


def test_codec_pairs_is_least_b_meeting_threshold():
    bi, s, pth = 4, 0.7, 0.8
    B = honc.codec_pairs(bi, s, pth)

    def at_least(b):
        return sum(special.comb(b, k) * s**k * (1 - s) ** (b - k) for k in range(bi, b + 1))

    assert at_least(B) >= pth > at_least(B - 1)
    assert honc.codec_pairs(bi, 1 - 1e-12) == bi
    # Meeting P_th exactly is enough: P(Bin(1, 1/2) >= 1) = 1/2 and P(Bin(2, 1/2) >= 1) = 3/4.
    assert honc.codec_pairs(1, 0.5, p_th=0.5) == 1
    assert honc.codec_pairs(1, 0.5, p_th=0.75) == 2


def test_codec_pairs_stop_at_their_cap_with_a_clear_error():
    # B = 7 at s = 0.7 (P(Bin(7, 0.7) >= 4) = 0.874): within a cap of 7, and beyond one of 6.
    assert honc.codec_pairs(4, 0.7, b_cap=7) == 7
    with pytest.raises(ModelParameterError) as e:
        honc.codec_pairs(4, 0.7, b_cap=6)
    assert str(e.value) == "success must be large enough to reach p_th within 6 pairs, got 0.7"
    with pytest.raises(ModelParameterError) as e:
        honc.codec_pairs([4, 4], [0.7, 1e-4])
    assert str(e.value) == "success must be large enough to reach p_th within 10000 pairs, got 0.0001"
    assert (e.value.name, e.value.got) == ("success", 1e-4)


def test_honc_refuses_bad_parameters():
    with pytest.raises(ModelParameterError, match=r"^n must be an integer"):
        honc.delay_one_hop(0.1, 0.1, 0)
    with pytest.raises(ModelParameterError, match=r"^R must be"):
        honc.decoding_probability(0.1, 8, 0.5)
    with pytest.raises(ModelParameterError, match=r"^p must be"):
        honc.throughput_gain(1.0, 3)
