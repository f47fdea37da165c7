"""Seed 003 NUM (ncmesh.models.num)."""

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
