"""Seed 003 NUM (ncmesh.models.num)."""

import dataclasses

import numpy as np
import pytest

from ncmesh.models import ModelParameterError, num


@pytest.mark.parametrize("name,gain", [("alice-and-bob", 1 / 3), ("x", 1 / 3), ("cross", 0.6), ("butterfly", 0.5)])
def test_optimal_gain_matches_table_one(name, gain):
    # Counted by hand with unit capacities in one collision domain: Alice-and-Bob
    # and X need 4 transmissions per packet pair without coding and 3 with, so
    # 4/3; the cross 8 versus 5 per four packets, 8/5; the butterfly 6 versus 4
    # per pair (seed 003 sec. VII-D quotes 50%).
    assert num.coding_gain(num.TOPOLOGIES[name]()) == pytest.approx(gain, abs=1e-5)


def test_alice_and_bob_optimum_by_hand():
    opt = num.optimum(num.alice_bob())
    assert opt.rates == pytest.approx([1 / 3, 1 / 3], abs=1e-5)
    base = num.optimum(num.alice_bob(coding=False))
    assert base.rates == pytest.approx([1 / 4, 1 / 4], abs=1e-5)
    assert opt.airtime.sum() <= 1 + 1e-6


@pytest.mark.parametrize("name", list(num.TOPOLOGIES))
def test_distributed_iteration_converges_to_optimum(name):
    topo = num.TOPOLOGIES[name]()
    opt = num.optimum(topo)
    tr = num.primal_dual(topo, iterations=3000)
    assert tr.rates[-1] == pytest.approx(opt.rates, rel=0.01)
    assert tr.total_rate[-1] == pytest.approx(opt.total_rate, rel=0.01)
    # settled, not oscillating: the last 10% of the trace stays within 1%
    tail = tr.total_rate[-300:]
    assert tail.max() - tail.min() < 0.01 * opt.total_rate


def test_distributed_iteration_with_unequal_capacities():
    links = {("A", "R"): 2.0, ("C", "R"): 1.0, ("R", "B"): 1.0, ("R", "D"): 3.0}
    topo = num.x_topology(links)
    opt = num.optimum(topo)
    tr = num.primal_dual(topo, iterations=4000)
    assert tr.rates[-1] == pytest.approx(opt.rates, rel=0.01)
    # coding still helps, but less than the symmetric 33%
    assert 0 < num.coding_gain(topo) < 1 / 3


def test_optimum_respects_capacity_and_conservation():
    topo = num.cross()
    opt = num.optimum(topo)
    pflow = topo._index()[2]
    pseg = topo._index()[3]
    for j in range(len(topo.segments)):
        assert opt.splits[pseg == j].sum() == pytest.approx(1.0, abs=1e-6)
    assert np.all(opt.splits > -1e-7)
    assert pflow.size == opt.splits.size


def test_primal_dual_refuses_bad_parameters():
    with pytest.raises(ModelParameterError, match=r"^step must be"):
        num.primal_dual(num.alice_bob(), step=0)
    with pytest.raises(ModelParameterError, match=r"^capacity of hyperarc"):
        num.alice_bob(links={("A", "R"): -1.0})


@pytest.mark.parametrize(
    ("name", "rates"),
    [("alice-and-bob", [1 / 3] * 2), ("x", [1 / 3] * 2), ("cross", [1 / 5] * 4), ("butterfly", [1 / 4] * 2)],
)
def test_optimal_rates_with_unit_capacities_match_the_docs_table(name, rates):
    topo = num.TOPOLOGIES[name]()
    assert topo.name == name
    assert num.optimum(topo).rates == pytest.approx(rates, abs=1e-5)
    uncoded = topo.without_coding()
    assert uncoded.name == f"{name} (no coding)"
    assert num.optimum(uncoded).total_rate == pytest.approx(0.5 if name != "butterfly" else 1 / 3, abs=1e-5)


def test_capacities_given_per_link_scale_the_optimum():
    # Every link twice as fast: twice the rates.
    for build in (num.x_topology, num.cross, num.butterfly):
        links = {(h.tx, r): 2.0 for h in build().hyperarcs for r in h.rx}
        assert num.optimum(build(links)).rates == pytest.approx(2 * num.optimum(build()).rates, rel=1e-4)


def test_topologies_name_their_flows_and_hyperarcs():
    assert num.butterfly().flows == ("S1>D1", "S2>D2")
    arcs = [(h.tx, h.rx) for h in num.cross().hyperarcs]
    assert arcs[:8] == [(n, ("R",)) for n in "NSEW"] + [("R", (n,)) for n in "NSEW"]
    assert arcs[8:] == [("R", ("E", "N", "S", "W")), ("R", ("N", "S")), ("R", ("E", "W"))]


def test_weights_reach_both_optima_of_the_coding_gain():
    # Without coding, X with A->R and R->B at capacity 2: airtime x1 (1/2 + 1/2) + x2 (1 + 1) <= 1,
    # so weighted proportional fairness gives x_i = w_i / (a_i sum w): (1/4, 3/8) for w = (1, 3).
    links = {("A", "R"): 2.0, ("R", "B"): 2.0}
    weights = [1.0, 3.0]
    uncoded = num.optimum(num.x_topology(links, coding=False), weights)
    assert uncoded.rates == pytest.approx([0.25, 0.375], abs=1e-5)
    coded = num.optimum(num.x_topology(links), weights)
    gain = num.coding_gain(num.x_topology(links), weights)
    assert gain == pytest.approx(coded.total_rate / uncoded.total_rate - 1, rel=1e-4)
    assert num.coding_gain(num.x_topology(links)) != pytest.approx(gain, rel=1e-3)
    trace = num.primal_dual(num.x_topology(links, coding=False), iterations=3000, weights=weights)
    assert trace.rates[-1] == pytest.approx([0.25, 0.375], rel=0.01)


def test_the_first_iterate_by_hand_and_the_documented_defaults():
    # Iteration 1 from x = 0.1 with empty queues: x^2/prox - x y/prox - w = 0, so
    # x = (0.1 + sqrt(0.01 + 4)) / 2 with prox = 1.
    topo = num.alice_bob()
    first = num.primal_dual(topo, iterations=1).rates[0]
    assert first == pytest.approx([(0.1 + np.sqrt(4.01)) / 2] * 2, rel=1e-12)
    default = num.primal_dual(topo, iterations=5)
    explicit = num.primal_dual(topo, iterations=5, step=0.05, prox=1.0, reset_every=1)
    assert np.array_equal(default.rates, explicit.rates) and np.array_equal(default.queues, explicit.queues)
    assert num.primal_dual(topo).rates.shape == (4000, 2)


def test_airtime_follows_a_smaller_interference_budget():
    # epsilon = 1/2: half the airtime, half the rates, for both solvers.
    topo = dataclasses.replace(num.alice_bob(), epsilon=0.5)
    assert num.optimum(topo).rates == pytest.approx([1 / 6, 1 / 6], abs=1e-5)
    trace = num.primal_dual(topo, iterations=3000)
    assert trace.rates[-1] == pytest.approx([1 / 6, 1 / 6], rel=0.01)
    assert trace.airtime.sum() <= 0.5 + 1e-9


def test_projections_by_hand():
    # Subtract the theta that makes the positive part sum to z: (2 - 3 theta = 1) and (3 - theta = 2).
    assert num._project_simplex(np.array([0.5, 0.5, 1.0])) == pytest.approx([1 / 6, 1 / 6, 2 / 3])
    assert num._project_simplex(np.array([3.0, 0.0]), 2.0) == pytest.approx([2.0, 0.0])
    assert num._project_simplex(np.array([7.0])) == pytest.approx([1.0])
    # Inside the capped set a point stays; above it, it lands on the simplex of size z.
    assert num._project_capped(np.array([0.2, -0.1]), 1.0) == pytest.approx([0.2, 0.0])
    assert num._project_capped(np.array([0.5, 0.5]), 1.0) == pytest.approx([0.5, 0.5])
    assert num._project_capped(np.array([2.0, 1.0]), 0.5) == pytest.approx([0.5, 0.0])


def test_overlapping_cliques_are_refused():
    topo = dataclasses.replace(num.alice_bob(), cliques=((0, 1, 2), (2, 3, 4)))
    with pytest.raises(ModelParameterError) as e:
        num.primal_dual(topo)
    assert str(e.value) == "cliques must be disjoint sets of hyperarcs, got ((0, 1, 2), (2, 3, 4))"
    assert e.value.name == "cliques" and e.value.got == ((0, 1, 2), (2, 3, 4))
