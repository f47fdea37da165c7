"""Kim, Padhye and Abouzeid models (ncmesh.models.{kim,padhye,abouzeid})."""

import numpy as np
import pytest

from ncmesh.models import ModelParameterError, abouzeid, kim, padhye

# ---------------------------------------------------------------- Kim


def test_kim_closed_form_equals_round_by_round_sum():
    # (W_max, b, duration, w0); a duration shorter than one RTT is one round.
    for wmax, b, dur, w0 in [(50, 1, 30.0, 1), (10, 2, 100.0, 1), (7.5, 1, 2.0, 1), (5.5, 1, 8.0, 2), (50, 1, 0.5, 3)]:
        rtt = 0.8
        n = max(int(np.floor(dur / rtt)), 1)
        total = sum(min(wmax, w0 + i / b) for i in range(n))
        assert kim.throughput(wmax, rtt, dur, b, w0) == pytest.approx(total / n / rtt, rel=1e-12)
    # b and w0 default to 1: windows 1, 2, 3, 4, 5 over five rounds of 1 s.
    assert kim.throughput(50, 1.0, 5.0) == pytest.approx(3.0)


def test_kim_rounds_of_additive_increase():
    assert kim.rounds_to_wmax(10) == 9
    assert kim.rounds_to_wmax(10, b=2) == 18
    assert kim.rounds_to_wmax(10, w0=4) == 6
    assert kim.rounds_to_wmax(5.5, w0=2) == 4
    assert kim.rounds_to_wmax(3, w0=5) == 0


def test_kim_survives_a_duration_of_more_rounds_than_a_float_counts():
    # duration / RTT overflows to infinity: the steady state W_max/RTT, as for an infinite duration
    assert kim.throughput(10, 1e-300, 1e308) == pytest.approx(1e301)


def test_kim_long_connections_tend_to_wmax_over_rtt():
    d = np.array([10.0, 100.0, 1e4, 1e7])
    thr = kim.throughput(50, 0.8, d)
    assert np.all(np.diff(thr) > 0)
    assert thr[-1] == pytest.approx(50 / 0.8, rel=1e-4)
    assert kim.throughput(50, 0.8) == pytest.approx(62.5)


def test_kim_masking_condition():
    assert list(kim.masks_losses(0.2, [1.2, 1.25, 1.3])) == [False, True, True]


# ---------------------------------------------------------------- Padhye


def test_padhye_lossless_limit_is_window_limited():
    assert padhye.throughput(0.0, 0.1, 1.0, 20) == pytest.approx(200)
    assert padhye.throughput(1e-12, 0.1, 1.0, 20) == pytest.approx(200, rel=1e-6)


def test_padhye_small_loss_tends_to_square_root_law():
    # With no window limit and rare losses, timeouts vanish and eq. (32)
    # reduces to the TD-only law sqrt(3/(2bp))/RTT (Padhye eq. 20).
    for b in (1, 2):
        p = 1e-5
        assert padhye.throughput(p, 0.2, 1.0, 1e9, b) == pytest.approx(np.sqrt(1.5 / (b * p)) / 0.2, rel=0.01)


def test_padhye_agrees_with_its_own_approximation_at_moderate_loss():
    ps = np.array([1e-3, 1e-2, 0.05])
    full = padhye.throughput(ps, 0.1, 1.0, 1e6)
    approx = padhye.throughput_approx(ps, 0.1, 1.0, 1e6)
    assert full == pytest.approx(approx, rel=0.06)


def test_padhye_monotonicities_and_shape():
    ps = np.linspace(0.001, 0.5, 50)
    thr = padhye.throughput(ps, 0.2, 1.0, 30)
    assert thr.shape == ps.shape and np.all(np.diff(thr) < 0)
    assert padhye.throughput(0.02, 0.2, 2.0, 30) < padhye.throughput(0.02, 0.2, 1.0, 30)
    assert padhye.throughput(0.001, 0.2, 1.0, 10) < padhye.throughput(0.001, 0.2, 1.0, 100)
    assert padhye.throughput(0.01, 0.2, 1.0, 100, b=2) < padhye.throughput(0.01, 0.2, 1.0, 100, b=1)


def test_padhye_timeout_probability_hand_values():
    # A window of 3 or fewer cannot produce three duplicate ACKs: Q̂ = 1 (eq. 24
    # gives exactly 1 at w = 3 and is capped at 1 below).
    assert padhye.timeout_probability(0.1, [1, 2, 3]) == pytest.approx([1, 1, 1])
    # Large windows: Q̂ -> 3/w as p -> 0 (Padhye eq. 25).
    assert padhye.timeout_probability(1e-6, 60) == pytest.approx(3 / 60, rel=1e-3)


def test_padhye_expected_window_by_hand():
    # Eq. (13): b = 1, p = 0.1: 1 + sqrt(8 * 0.9 / 0.3 + 1) = 1 + 5.  b = 2: 2/3 + sqrt(12 + 4/9).
    assert padhye.expected_window(0.1) == pytest.approx(6.0, rel=1e-12)
    assert padhye.expected_window(0.1, 2) == pytest.approx(2 / 3 + np.sqrt(12 + 4 / 9), rel=1e-12)


def test_padhye_timeout_probability_at_tiny_loss_and_between_windows():
    # At p = 1e-17, q = 1 - p rounds to 1 and eq. (24) taken literally is 0/0; its limit is 3/w (eq. 25).
    assert padhye.timeout_probability(1e-17, 60) == pytest.approx(3 / 60, rel=1e-12)
    # w = 3.5, p = 0.1: (1 - 0.729)(1 + 0.729 (1 - 0.9^0.5)) / (1 - 0.9^3.5) = 0.281138 / 0.308410.
    assert padhye.timeout_probability(0.1, 3.5) == pytest.approx(0.911573, rel=1e-5)


def test_padhye_window_limited_branch_starts_where_the_mean_window_reaches_the_limit():
    # Eq. (32) takes its second branch when E[W_u] >= W_max; the two branches do not meet there.
    ew = padhye.expected_window(0.05)
    below, at, above = (padhye.throughput(0.05, 0.2, 1.0, w) for w in (np.nextafter(ew, 0), ew, np.nextafter(ew, 99)))
    assert at == pytest.approx(below, rel=1e-12)
    assert abs(above - at) > 0.01 * at


def test_padhye_window_limited_branch_by_hand():
    # p = 0.01, b = 1, RTT = 0.2 s, T0 = 1 s, W_max = 10: E[W_u] = 1 + sqrt(8 *
    # 0.99 / 0.03 + 1) = 17.28 >= W_max, so eq. (32) takes its second branch.
    # With q = 0.99: Q(W_max) = (1 - q^3)(1 + q^3 (1 - q^7)) / (1 - q^10)
    #   = 0.029701 * (1 + 0.970299 * 0.067935) / 0.095618 = 0.33110;
    # f(p) = 1 + p + 2p^2 + ... + 32p^6 = 1.010204;
    # B = (q/p + W_max + Q/q) / (RTT (b W_max/8 + q/(p W_max) + 2) + Q T0 f(p)/q)
    #   = (99 + 10 + 0.334441) / (0.2 * 13.15 + 0.337854) = 109.334441 / 2.967854.
    assert padhye.throughput(0.01, 0.2, 1.0, 10) == pytest.approx(109.334441 / 2.967854, rel=1e-6)
    # The first branch at the same p with room to grow (W_max = 100): E[W] = 17.27882,
    # Q(E[W]) = 0.029701 (1 + 0.970299 (1 - q^14.27882)) / (1 - q^17.27882)
    #   = 0.029701 * (1 + 0.970299 * 0.133685) / 0.159416 = 0.21048,
    # B = (99 + 17.27882 + 0.21261) / (0.2 (17.27882/2 + 1) + 0.21048 * 1.010204/0.99)
    #   = 116.49143 / 2.142658.
    assert padhye.throughput(0.01, 0.2, 1.0, 100) == pytest.approx(116.49143 / 2.142658, rel=2e-5)


def test_padhye_timeouts_at_heavy_loss_by_hand():
    # p = 0.5, b = 1, RTT = 0.1 s, T0 = 1 s, W_max = 10.  E[W_u] = 1 + sqrt(8/3 + 1)
    # = 2.914854 (eq. 13); eq. (24) gives 1.0011 there, so Q̂ = 1; f(1/2) = 1 + 6 * 1/2 = 4
    # (eq. 28, every term of the back-off series is 1/2); eq. (32):
    # B = (1 + 2.914854 + 2) / (0.1 (2.914854/2 + 1) + 1 * 4 / 0.5) = 5.914854 / 8.245743.
    assert padhye.throughput(0.5, 0.1, 1.0, 10) == pytest.approx(5.914854216 / 8.245742711, rel=1e-9)


def test_padhye_approximation_by_hand():
    # Eq. (33): 1 / (RTT sqrt(2bp/3) + T0 min(1, 3 sqrt(3bp/8)) p (1 + 32 p^2)), at most W_max/RTT.
    # p = 0.02, b = 2: 0.2 * 0.1632993 + 1 * 0.3674235 * 0.02 * 1.0128 = 0.04010239.
    assert padhye.throughput_approx(0.02, 0.2, 1.0, 100, b=2) == pytest.approx(1 / 0.04010239287, rel=1e-9)
    # p = 0.3: 3 sqrt(0.9/8) = 1.006 is capped at 1: 0.2 * 0.4472136 + 0.3 * 3.88 = 1.25344272.
    assert padhye.throughput_approx(0.3, 0.2, 1.0, 100) == pytest.approx(1 / 1.253442719, rel=1e-9)
    # Rare loss: the window limit, 10 packets per 0.2 s.
    assert padhye.throughput_approx(1e-4, 0.2, 1.0, 10) == pytest.approx(50.0)


def test_padhye_refuses_bad_parameters():
    with pytest.raises(ModelParameterError, match=r"^p must be"):
        padhye.throughput(1.0, 0.1, 1.0, 10)
    with pytest.raises(ModelParameterError, match=r"^b must be"):
        padhye.throughput(0.1, 0.1, 1.0, 10, b=0.5)
    with pytest.raises(ModelParameterError, match=r"^wmax must be"):
        padhye.throughput(0.1, 0.1, 1.0, 0)


# ---------------------------------------------------------------- Abouzeid


def simulate_rounds(p, wmax, rounds, seed):
    """Monte Carlo of the round process the chain describes."""
    rng = np.random.default_rng(seed)
    w, total = 1, 0
    for _ in range(rounds):
        total += w
        w = min(w + 1, wmax) if rng.random() < (1 - p) ** w else max(w // 2, 1)
    return total / rounds


def test_abouzeid_chain_matches_monte_carlo():
    for p, wmax in [(0.05, 50), (0.01, 20)]:
        mc = simulate_rounds(p, wmax, 100_000, seed=7)
        assert abouzeid.mean_window(p, wmax) == pytest.approx(mc, rel=0.02)


def test_abouzeid_small_loss_reaches_fluid_constant():
    ps = np.array([1e-5, 1e-4])
    scaled = abouzeid.mean_window(ps, 10**9) * np.sqrt(ps)
    assert scaled == pytest.approx(abouzeid.FLUID_CONSTANT, rel=0.01)


def test_abouzeid_two_windows_by_hand():
    # W_max = 2, p = 1/2: from 1 the window grows with 1/2; from 2 it stays with
    # (1/2)^2 and halves to 1 otherwise.  Balance: pi_1 / 2 = pi_2 3/4, so
    # pi = (3/5, 2/5), E[W] = 7/5, and 7/5 * (1 - p) / RTT delivered per second.
    assert abouzeid.stationary_window(0.5, 2) == pytest.approx([0.6, 0.4], rel=1e-12)
    assert abouzeid.mean_window(0.5, 2) == pytest.approx(1.4, rel=1e-12)
    assert abouzeid.throughput(0.5, 0.25, 2) == pytest.approx(1.4 * 0.5 / 0.25, rel=1e-12)
    assert abouzeid.mean_window(0.5, 1) == 1.0


def test_abouzeid_chain_is_cut_where_the_docs_say():
    # Windows above 60/sqrt(p) + 10 carry no representable mass.
    for p, n in [(0.01, 610), (0.04, 310)]:
        assert abouzeid.transition_matrix(p, 10**6).shape == (n, n)
        assert abouzeid.transition_matrix(p, n - 5).shape == (n - 5, n - 5)


def test_abouzeid_limits_and_monotonicity():
    assert abouzeid.mean_window(0.0, 40) == pytest.approx(40)
    thr = abouzeid.throughput(np.linspace(0.01, 0.3, 10), 0.5, 50)
    assert np.all(np.diff(thr) < 0)
    assert abouzeid.throughput(0.05, 0.25, 50) == pytest.approx(2 * abouzeid.throughput(0.05, 0.5, 50))
    with pytest.raises(ModelParameterError, match=r"^wmax must be an integer"):
        abouzeid.mean_window(0.1, 2.5)
