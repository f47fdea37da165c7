"""Seed 002's Markov chain model of TCP-NC (ncmesh.models.markov)."""

import numpy as np
import pytest

from ncmesh.models import ModelParameterError, kim, markov, padhye


def packet_level_chain(p, cwmax, wmax):
    """Independent packet-by-packet DP of the TCP-NC window described in seed 002 sec. 3.

    Each packet is acknowledged (1 - p) or erased (p).  floor(VW) = v needs v
    ACKs to advance (congestion avoidance); erasures add to AU; the period ends
    in a timeout when AU reaches floor(VW) or CW_max.  Returns reach[w][i], the
    probability of first reaching VW = w with AU = i, and absorbed[v], the
    probability of timing out with floor(VW) = v.
    """
    reach = {1: {0: 1.0}}
    absorbed = {}
    for v in range(1, wmax):
        nxt = {}
        dead = 0.0
        # live[(acks, au)] while floor(VW) = v
        live = {(0, au): pr for au, pr in reach[v].items()}
        while live:
            new = {}
            for (acks, au), pr in live.items():
                a = acks + 1
                if a == v:
                    nxt[au] = nxt.get(au, 0.0) + pr * (1 - p)
                else:
                    new[(a, au)] = new.get((a, au), 0.0) + pr * (1 - p)
                u = au + 1
                if u >= v or u >= cwmax:
                    dead += pr * p
                else:
                    new[(acks, u)] = new.get((acks, u), 0.0) + pr * p
            live = new
        reach[v + 1] = nxt
        absorbed[v] = dead
    return reach, absorbed


@pytest.mark.parametrize("p,cwmax", [(0.2, 50), (0.3, 3), (0.05, 4)])
def test_algorithm1_matches_packet_level_dp(p, cwmax):
    P = markov.state_probabilities(p, cwmax, 9)
    reach, _ = packet_level_chain(p, cwmax, 10)
    for w in range(2, 11):
        for i in range(w - 1):
            assert P[w, i] == pytest.approx(reach[w].get(i, 0.0), abs=1e-12), (w, i)


def test_lemma1_absorbing_probabilities_match_packet_level_timeouts():
    pw = markov.absorbing_probabilities(0.15, 5, 9)
    _, absorbed = packet_level_chain(0.15, 5, 10)
    assert pw == pytest.approx([absorbed[v] for v in range(1, 10)], abs=1e-12)
    # first period step: a single packet, lost with probability p
    assert pw[0] == pytest.approx(0.15)


def test_absorbing_mass_accumulates_to_one_as_m_grows():
    ms = np.array([5, 10, 20, 40, 80, 160])
    mass = markov.absorbing_mass(0.05, 50, ms)
    assert np.all(np.diff(mass) >= -1e-15)
    assert mass[0] < 0.2 and mass[-1] == pytest.approx(1.0, abs=1e-9)
    # adaptive M stops only once the mass is 1 to within 1e-9
    assert markov.solve(0.01, 50, 1.0).absorbing_mass == pytest.approx(1.0, abs=1e-9)


def test_expected_period_by_hand():
    # E[T_1] = (3*1+1)/2 = 2 RTT (one round, no Delta, timeout 1 RTT).
    # E[T_2] = 7/2 RTT.  E[T_3] = 2/E[EW_2] + 5 with E[EW_2] = min(CW_max, 2) = 2,
    # i.e. 6 RTT; with CW_max = 1, E[EW_2] = 1 and E[T_3] = 7 RTT.
    P = markov.state_probabilities(0.1, 50, 3)
    T = markov.expected_period(markov.expected_effective_window(P, 50), 0.5)
    assert pytest.approx([1.0, 1.75, 3.0]) == T
    P1 = markov.state_probabilities(0.1, 1, 3)
    T1 = markov.expected_period(markov.expected_effective_window(P1, 1), 1.0)
    assert T1[2] == pytest.approx(7.0)


def test_mean_cwnd_tends_to_cwmax_and_falls_with_loss():
    ps = np.array([1e-4, 0.02, 0.05, 0.1, 0.2])
    cw = markov.mean_cwnd(ps, 50)
    assert cw[0] == pytest.approx(50, rel=1e-3)
    assert np.all(np.diff(cw) < 0)
    assert np.all(cw <= 50)


def test_throughput_monotone_in_loss_and_redundancy_and_inverse_in_rtt():
    ps = np.linspace(0.01, 0.2, 8)
    thr = markov.throughput(ps, 50, 0.8)
    assert np.all(np.diff(thr) < 0)
    Rs = np.array([1.0, 1.01, 1.03, 1.05])
    thrR = markov.throughput(0.08, 50, 0.8, Rs)
    assert np.all(np.diff(thrR) > 0)
    assert markov.throughput(0.05, 50, 0.4) == pytest.approx(2 * markov.throughput(0.05, 50, 0.8))


def test_effective_loss_and_the_papers_bound():
    # Sec. 4.5: p' = 1 - R(1 - p); sec. 4.6: M about 2 CW_max.
    assert markov.effective_loss([0.1, 0.1, 0.2], [1.0, 1.05, 1.25]) == pytest.approx([0.1, 0.055, 0.0])
    assert markov.effective_loss(0.3, 1.5) == pytest.approx(-0.05)
    assert list(markov.default_m([25, 50])) == [50, 100]
    assert markov.default_m(25.0).dtype == np.int64


def test_redundancy_is_the_section_4_5_transform():
    a = markov.solve(0.1, 30, 0.8, R=1.05)
    b = markov.solve(1 - 1.05 * 0.9, 30, 0.8, R=1.0)
    assert a.throughput_pkts_per_s == pytest.approx(b.throughput_pkts_per_s)
    assert a.effective_p == pytest.approx(0.055)


def test_kim_fallback_when_redundancy_masks_all_losses():
    r = markov.solve([0.05, 0.05], 50, 0.8, R=[1 / 0.95, 1.2])
    assert np.all(r.uses_kim)
    assert r.throughput_pkts_per_s == pytest.approx(kim.throughput(50, 0.8))
    assert r.throughput_pkts_per_s == pytest.approx(50 / 0.8)


def test_literal_unconditional_effective_window_is_never_larger():
    # eq. (10) as printed weights by unconditional probabilities (sum <= 1), so
    # it can only lengthen E[T_w] and lower the throughput.
    cond = markov.solve(0.05, 50, 0.8).throughput_pkts_per_s
    lit = markov.solve(0.05, 50, 0.8, conditional_ew=False).throughput_pkts_per_s
    assert lit < cond


def literal_throughput(p, cwmax, rtt, m):
    """Seed 002's E[Thr] and E[cwnd] written out from the printed equations,
    loop by loop as Algorithm-1 states them, for a small bound M: eq. (4) for
    P(S(w, i)), Lemma-1 (3) for p_w, (11) for E[EW_i] (as a mean given VW = i,
    see docs/models.md), (13) for E[T_w], (15) for E[rcv_w], then (2) and (6)."""
    from math import comb

    P = {1: {0: 1.0}}
    for w in range(2, m + 2):
        P[w] = {}
        for i in range(w - 1):
            if i >= cwmax:
                P[w][i] = 0.0
                continue
            P[w][i] = sum(
                P[w - 1].get(j, 0.0) * comb(w - 2 + i - j, w - 2) * p ** (i - j) * (1 - p) ** (w - 1)
                for j in range(i + 1)
            )
    reach = {w: sum(P[w].values()) for w in P}
    thr = cwnd = 0.0
    for w in range(1, m + 1):
        p_w = reach[w] - reach[w + 1]
        steps = 0.0
        for i in range(2, w):
            ew = sum(min(cwmax, i - j) * P[i][j] for j in range(i - 1)) / reach[i]
            steps += i / ew
        t_w = (steps + (3 * w + 1) / 2) * rtt
        thr += p_w * (w * w / 2) / t_w
        cwnd += min(cwmax, w) * p_w
    return thr, cwnd


@pytest.mark.parametrize(("p", "cwmax", "m"), [(0.2, 3, 6), (0.1, 4, 9), (0.35, 2, 5)])
def test_throughput_and_window_follow_the_printed_equations(p, cwmax, m):
    model = markov.solve(p, cwmax, 0.8, m=m)
    thr, cwnd = literal_throughput(p, cwmax, 0.8, m)
    assert model.throughput_pkts_per_s == pytest.approx(thr, rel=1e-12)
    assert model.mean_cwnd == pytest.approx(cwnd, rel=1e-12)
    assert markov.mean_cwnd(p, cwmax, m=m) == pytest.approx(cwnd, rel=1e-12)
    assert markov.throughput(p, cwmax, 0.8, m=m) == pytest.approx(thr, rel=1e-12)


def test_throughput_by_hand_on_the_smallest_chain():
    # M = 2, CW_max = 1, p = 0.5, RTT = 1.  Eq. (4): P(S(2, 0)) = 1 - p = 1/2
    # and P(S(3, 0)) = P(S(2, 0)) (1 - p)^2 = 1/8 (AU = 1 >= CW_max is a
    # timeout), so p_1 = 1/2 and p_2 = 3/8 (Lemma-1).  E[T_1] = 2 and E[T_2] =
    # 7/2 (eq. 13, no step term yet); E[rcv] = 1/2 and 2 (eq. 15).
    # E[Thr] = 1/2 * (1/2)/2 + 3/8 * 2/(7/2) = 1/8 + 3/14; E[cwnd] = 1/2 + 3/8.
    smallest = markov.solve(0.5, 1, 1.0, m=2)
    assert smallest.throughput_pkts_per_s == pytest.approx(1 / 8 + 3 / 14, rel=1e-12)
    assert smallest.mean_cwnd == pytest.approx(7 / 8, rel=1e-12)


def test_equalising_redundancy_hits_its_target():
    target = 3.0
    R = markov.equalising_redundancy(0.06, 50, 1.5, target=target)
    assert 1.0 < R < 1 / 0.94
    assert markov.throughput(0.06, 50, 1.5, R) == pytest.approx(target, rel=1e-4)
    # a target TCP-NC already exceeds without redundancy needs none
    assert markov.equalising_redundancy(0.06, 50, 1.5, target=0.1) == 1.0


def test_equalising_redundancy_with_its_options():
    p, cwmax, rtt = 0.06, 50, 1.44
    # An explicit T0 sets Padhye's target; an explicit M bounds the chain that meets it.
    target = padhye.throughput(p, rtt, rtt, cwmax)  # 3.06 pkt/s, more than R = 1 gives (2.66)
    R = markov.equalising_redundancy(p, cwmax, rtt, rto=rtt)
    assert markov.throughput(p, cwmax, rtt, R) == pytest.approx(target, rel=1e-4)
    # An explicit M keeps the paper's truncated sums: bounded at M = 40, TCP-NC gives 2.56 pkt/s
    # at R = 1 where the adaptive chain gives 2.66, and nearly nothing as p' -> 0.
    assert markov.equalising_redundancy(p, cwmax, rtt, target=2.6) == 1.0
    with pytest.raises(ModelParameterError, match=r"^target must be at most 1\.7373e-05 pkts/s"):
        markov.equalising_redundancy(p, cwmax, rtt, target=2.6, m=40)
    # Just below what R = 1 gives: no redundancy; just below the most it can give: found.
    at_one = markov.throughput(p, cwmax, rtt)
    assert markov.equalising_redundancy(p, cwmax, rtt, target=at_one - 0.5) == 1.0
    most = markov.throughput(p, cwmax, rtt, (1 - 1e-4) / (1 - p))
    R = markov.equalising_redundancy(p, cwmax, rtt, target=most - 0.5)
    assert markov.throughput(p, cwmax, rtt, R) == pytest.approx(most - 0.5, rel=1e-3)  # steep near p' = 0


def test_an_unreachable_target_is_refused_with_the_most_tcp_nc_gives():
    # The search stops at p' = 1e-4; the most it can give is quoted, below Kim's W_max/RTT.
    most = markov.throughput(0.06, 50, 1.5, (1 - 1e-4) / 0.94)
    assert most < 50 / 1.5
    with pytest.raises(ModelParameterError) as e:
        markov.equalising_redundancy(0.06, 50, 1.5, target=1000)
    assert str(e.value) == f"target must be at most {most:.6g} pkts/s (TCP-NC's throughput as p' -> 0), got 1000.0"
    assert (e.value.name, e.value.got) == ("target", 1000.0)


def test_equalising_redundancy_targets_reno_capped_at_the_fair_share():
    # Sec. 5.6 settings: p = 0.06, CW_max = 50, RTT 1.44 s, T0 = 2 RTT. Padhye's
    # window-free branch at p = 0.06 (eqs. 13, 24, 28, 32, worked by hand):
    # E[W] = 1 + sqrt(8 * 0.94 / 0.18 + 1) = 7.54047; with q = 0.94,
    # Q(E[W]) = (1 - q^3)(1 + q^3 (1 - q^4.54047)) / (1 - q^7.54047)
    #         = 0.169416 * 1.203443 / 0.372851 = 0.54682; f(p) = 1.06818;
    # B = (15.6667 + 7.54047 + 0.58172) / (1.44 * 4.77024 + 0.54682 * 2.88 *
    # 1.06818 / 0.94) = 23.7889 / 8.65873 = 2.7474 pkt/s, below the fair
    # share 6.25 / 2, so it is the target.
    rtt = 1.44
    R = markov.equalising_redundancy(0.06, 50, rtt, bottleneck=6.25)
    assert markov.throughput(0.06, 50, rtt, R) == pytest.approx(2.7474, rel=1e-4)
    # With a narrower bottleneck, half of it is the target (TCP-NC gives 2.66
    # pkt/s at R = 1, so a share of 2.7 still needs some redundancy).
    R = markov.equalising_redundancy(0.06, 50, rtt, bottleneck=5.4)
    assert R > 1 and markov.throughput(0.06, 50, rtt, R) == pytest.approx(2.7, rel=1e-4)


def test_vectorised_over_parameters():
    r = markov.solve(np.array([[0.05], [0.1]]), np.array([20, 40, 60]), 0.8)
    assert r.throughput_pkts_per_s.shape == (2, 3)
    assert r.mean_cwnd[0, 1] == pytest.approx(markov.mean_cwnd(0.05, 40))


@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"p": 1.0, "cwmax": 50, "rtt": 1}, "p"),
        ({"p": -0.1, "cwmax": 50, "rtt": 1}, "p"),
        ({"p": 0.1, "cwmax": 50, "rtt": 1, "R": 0.9}, "R"),
        ({"p": 0.1, "cwmax": 50, "rtt": 1, "m": 1}, "M"),
        ({"p": 0.1, "cwmax": 0, "rtt": 1}, "cwmax"),
        ({"p": 0.1, "cwmax": 50, "rtt": 0}, "rtt"),
        ({"p": [0.1, 2.0], "cwmax": 50, "rtt": 1}, "p"),
    ],
)
def test_bad_parameters_name_themselves(kwargs, name):
    with pytest.raises(ModelParameterError, match=rf"^{name} must be") as e:
        markov.solve(**kwargs)
    assert isinstance(e.value, ValueError)
