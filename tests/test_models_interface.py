"""What every model shares: parameters refused by name, the types of results, submodules loaded on use.

A refusal's message is what a user reads (``ncmesh model`` prints it), so
each is compared whole: one refusal per parameter of every function pins the
parameter's name, both bounds, whether each is open or closed, and the value.
"""

import math

import numpy as np
import pytest

import ncmesh.models
from ncmesh.models import ModelParameterError, abouzeid, honc, kim, markov, num, padhye

REFUSED = [
    # (function, args, kwargs, message)
    (honc.throughput_hop_by_hop, (-1.0, 0.1), {}, "b must be in [0.0, inf), got -1.0"),
    (honc.throughput_hop_by_hop, (1.0, 1.0), {}, "p must be in [0.0, 1.0), got 1.0"),
    (honc.throughput_end_to_end, (-1.0, 0.1, 2), {}, "b must be in [0.0, inf), got -1.0"),
    (honc.throughput_end_to_end, (1.0, -0.5, 2), {}, "p must be in [0.0, 1.0), got -0.5"),
    (honc.throughput_end_to_end, (1.0, 0.1, 0), {}, "n must be an integer in [1, inf), got 0.0"),
    (honc.throughput_gain, (1.0, 2), {}, "p must be in [0.0, 1.0), got 1.0"),
    (honc.throughput_gain, (0.1, 1.5), {}, "n must be an integer in [1, inf), got 1.5"),
    (honc.delay_one_hop, (-0.1, 0.1, 2), {}, "d must be in [0.0, inf), got -0.1"),
    (honc.delay_one_hop, (0.1, 1.0, 2), {}, "p must be in [0.0, 1.0), got 1.0"),
    (honc.delay_one_hop, (0.1, 0.1, 0), {}, "n must be an integer in [1, inf), got 0.0"),
    (honc.delay_end_to_end_recursive, (-0.1, 0.1, 2), {}, "d must be in [0.0, inf), got -0.1"),
    (honc.delay_end_to_end_recursive, (0.1, 1.0, 2), {}, "p must be in [0.0, 1.0), got 1.0"),
    (honc.delay_end_to_end_recursive, (0.1, 0.1, 0), {}, "n must be an integer in [1, inf), got 0.0"),
    (honc.delay_end_to_end, (-0.1, 0.1, 2), {}, "d must be in [0.0, inf), got -0.1"),
    (honc.delay_end_to_end, (0.1, 1.0, 2), {}, "p must be in [0.0, 1.0), got 1.0"),
    (honc.delay_end_to_end, (0.1, 0.1, 0), {}, "n must be an integer in [1, inf), got 0.0"),
    (honc.delay_reduction, (1.0, 2), {}, "p must be in [0.0, 1.0), got 1.0"),
    (honc.delay_reduction, (0.1, 0), {}, "n must be an integer in [1, inf), got 0.0"),
    (honc.codec_pairs_ideal, (-0.1, 8000, 4, 1e6), {}, "d must be in [0.0, inf), got -0.1"),
    (honc.codec_pairs_ideal, (0.1, 0.0, 4, 1e6), {}, "packet_bits must be in (0.0, inf), got 0.0"),
    (honc.codec_pairs_ideal, (0.1, 8000, 0, 1e6), {}, "block must be an integer in [1, inf), got 0.0"),
    (honc.codec_pairs_ideal, (0.1, 8000, 4, 0.0), {}, "capacity must be in (0.0, inf), got 0.0"),
    (honc.decoding_probability, (1.0, 4, 1.5), {}, "p must be in [0.0, 1.0), got 1.0"),
    (honc.decoding_probability, (0.1, 0, 1.5), {}, "block must be an integer in [1, inf), got 0.0"),
    (honc.decoding_probability, (0.1, 4, 0.99), {}, "R must be in [1.0, inf), got 0.99"),
    (honc.codec_pairs, (0, 0.5), {}, "b_ideal must be an integer in [1, inf), got 0.0"),
    (honc.codec_pairs, (4, 0.0), {}, "success must be in (0.0, 1.0], got 0.0"),
    (honc.codec_pairs, (4, 1.5), {}, "success must be in (0.0, 1.0], got 1.5"),
    (honc.codec_pairs, (4, 0.5), {"p_th": 0.0}, "p_th must be in (0.0, 1.0), got 0.0"),
    (honc.codec_pairs, (4, 0.5), {"p_th": 1.0}, "p_th must be in (0.0, 1.0), got 1.0"),
    (kim.masks_losses, (1.0, 1.5), {}, "p must be in [0.0, 1.0), got 1.0"),
    (kim.masks_losses, (0.1, 0.5), {}, "R must be in [1.0, inf), got 0.5"),
    (kim.rounds_to_wmax, (0.5,), {}, "wmax must be in [1.0, inf), got 0.5"),
    (kim.rounds_to_wmax, (10,), {"b": 0.5}, "b must be in [1.0, inf), got 0.5"),
    (kim.rounds_to_wmax, (10,), {"w0": 0.5}, "w0 must be in [1.0, inf), got 0.5"),
    (kim.throughput, (0.5, 0.1), {}, "wmax must be in [1.0, inf), got 0.5"),
    (kim.throughput, (10, 0.0), {}, "rtt must be in (0.0, inf), got 0.0"),
    (kim.throughput, (10, 0.1, 0.0), {}, "duration must be in (0.0, inf), got 0.0"),
    (kim.throughput, (10, 0.1), {"b": 0.5}, "b must be in [1.0, inf), got 0.5"),
    (kim.throughput, (10, 0.1), {"w0": 0.5}, "w0 must be in [1.0, inf), got 0.5"),
    (padhye.expected_window, (0.0,), {}, "p must be in (0.0, 1.0), got 0.0"),
    (padhye.expected_window, (0.1,), {"b": 0.5}, "b must be in [1.0, inf), got 0.5"),
    (padhye.timeout_probability, (1.0, 4), {}, "p must be in (0.0, 1.0), got 1.0"),
    (padhye.timeout_probability, (0.1, 0.5), {}, "w must be in [1.0, inf), got 0.5"),
    (padhye.throughput, (1.0, 0.1, 1.0, 10), {}, "p must be in [0.0, 1.0), got 1.0"),
    (padhye.throughput, (0.1, 0.0, 1.0, 10), {}, "rtt must be in (0.0, inf), got 0.0"),
    (padhye.throughput, (0.1, 0.1, -1.0, 10), {}, "rto must be in [0.0, inf), got -1.0"),
    (padhye.throughput, (0.1, 0.1, 1.0, 0.5), {}, "wmax must be in [1.0, inf), got 0.5"),
    (padhye.throughput, (0.1, 0.1, 1.0, 10), {"b": 0.5}, "b must be in [1.0, inf), got 0.5"),
    (padhye.throughput_approx, (0.0, 0.1, 1.0, 10), {}, "p must be in (0.0, 1.0), got 0.0"),
    (padhye.throughput_approx, (1.0, 0.1, 1.0, 10), {}, "p must be in (0.0, 1.0), got 1.0"),
    (padhye.throughput_approx, (0.1, 0.0, 1.0, 10), {}, "rtt must be in (0.0, inf), got 0.0"),
    (padhye.throughput_approx, (0.1, 0.1, -1.0, 10), {}, "rto must be in [0.0, inf), got -1.0"),
    (padhye.throughput_approx, (0.1, 0.1, 1.0, 0.5), {}, "wmax must be in [1.0, inf), got 0.5"),
    (padhye.throughput_approx, (0.1, 0.1, 1.0, 10), {"b": 0.5}, "b must be in [1.0, inf), got 0.5"),
    (abouzeid.transition_matrix, (1.0, 10), {}, "p must be in [0.0, 1.0), got 1.0"),
    (abouzeid.transition_matrix, (0.1, 0), {}, "wmax must be an integer in [1, inf), got 0.0"),
    (abouzeid.stationary_window, (0.1, 2.5), {}, "wmax must be an integer in [1, inf), got 2.5"),
    (abouzeid.mean_window, (1.0, 10), {}, "p must be in [0.0, 1.0), got 1.0"),
    (abouzeid.mean_window, (0.1, 2**63), {}, f"wmax must be an integer in [1, {2**62}], got {float(2**63)}"),
    (abouzeid.throughput, (0.1, 0.0, 10), {}, "rtt must be in (0.0, inf), got 0.0"),
    (abouzeid.throughput, (0.1, 0.5, 0), {}, f"wmax must be an integer in [1, {2**62}], got 0.0"),
    (markov.effective_loss, (1.0, 1.0), {}, "p must be in [0.0, 1.0), got 1.0"),
    (markov.effective_loss, (0.1, 0.5), {}, "R must be in [1.0, inf), got 0.5"),
    (markov.state_probabilities, (1.0, 5), {}, "p must be in [0.0, 1.0), got 1.0"),
    (markov.state_probabilities, (0.1, 0), {}, "cwmax must be an integer in [1, inf), got 0.0"),
    (markov.state_probabilities, (0.1, 5, 1), {}, "M must be an integer in [2, inf), got 1.0"),
    (markov.solve, (0.1, 10_001, 1.0), {}, "cwmax must be an integer in [1, 10000], got 10001.0"),
    (markov.solve, (0.1, 5, 1.0), {"m": 20_001}, "M must be an integer in [2, 20000], got 20001.0"),
    (markov.solve, (0.1, 5, 1.0), {"R": 0.5}, "R must be in [1.0, inf), got 0.5"),
    (markov.solve, (0.1, 5, -1.0), {}, "rtt must be in (0.0, inf), got -1.0"),
    (markov.equalising_redundancy, (0.0, 50, 1.0), {}, "p must be in (0.0, 1.0), got 0.0"),
    (markov.equalising_redundancy, (1.0, 50, 1.0), {}, "p must be in (0.0, 1.0), got 1.0"),
    (markov.equalising_redundancy, (0.1, 0, 1.0), {}, "cwmax must be an integer in [1, inf), got 0.0"),
    (markov.equalising_redundancy, (0.1, 50, 0.0), {}, "rtt must be in (0.0, inf), got 0.0"),
    (markov.equalising_redundancy, (0.1, 50, 1.0), {"rto": -1.0}, "rto must be in [0.0, inf), got -1.0"),
    (markov.equalising_redundancy, (0.1, 50, 1.0), {"bottleneck": 0.0}, "bottleneck must be in (0.0, inf), got 0.0"),
    (markov.equalising_redundancy, (0.1, 50, 1.0), {"target": 0.0}, "target must be in (0.0, inf), got 0.0"),
    (num.primal_dual, (num.alice_bob(),), {"iterations": 0}, "iterations must be an integer in [1, inf), got 0.0"),
    (num.primal_dual, (num.alice_bob(),), {"step": 0.0}, "step must be in (0.0, inf), got 0.0"),
    (num.primal_dual, (num.alice_bob(),), {"prox": 0.0}, "prox must be in (0.0, inf), got 0.0"),
    (num.primal_dual, (num.alice_bob(),), {"reset_every": 0}, "reset_every must be an integer in [1, inf), got 0.0"),
    (num.primal_dual, (num.alice_bob(),), {"weights": [1.0, 0.0]}, "weights must be in (0.0, inf), got 0.0"),
    (num.optimum, (num.alice_bob(),), {"weights": -1.0}, "weights must be in (0.0, inf), got -1.0"),
    (num.alice_bob, (), {"capacity": 0.0}, "capacity of hyperarc A->R must be in (0.0, inf), got 0.0"),
    (num.x_topology, (), {"links": {("R", "D"): -1.0}}, "capacity of hyperarc R->D must be in (0.0, inf), got -1.0"),
    (num.cross, (), {"links": {("R", "W"): 0.0}}, "capacity of hyperarc R->W must be in (0.0, inf), got 0.0"),
    (num.butterfly, (), {"links": {("J", "D2"): 0.0}}, "capacity of hyperarc J->D2 must be in (0.0, inf), got 0.0"),
]


@pytest.mark.parametrize(("function", "args", "kwargs", "message"), REFUSED, ids=lambda v: getattr(v, "__name__", ""))
def test_a_value_out_of_range_is_refused_with_name_range_and_value(function, args, kwargs, message):
    with pytest.raises(ModelParameterError) as e:
        function(*args, **kwargs)
    assert str(e.value) == message
    name, rest = message.split(" must be ", 1)
    expected, got = rest.rsplit(", got ", 1)
    assert (e.value.name, e.value.expected, repr(e.value.got)) == (name, expected, got)
    assert isinstance(e.value, ValueError)


def test_the_first_bad_element_of_an_array_is_the_one_named():
    with pytest.raises(ModelParameterError, match=r"^p must be in \[0\.0, 1\.0\), got 1\.5$") as e:
        honc.throughput_gain([0.1, 1.5, 2.0], 2)
    assert e.value.got == 1.5 and isinstance(e.value.got, float)
    with pytest.raises(ModelParameterError, match=r"^n must be an integer in \[1, inf\), got 2\.5$"):
        honc.throughput_gain(0.1, [[2, 3], [2.5, 3.5]])


def test_values_that_are_not_numbers_are_refused_by_name():
    with pytest.raises(ModelParameterError) as e:
        honc.throughput_gain("lossy", 2)
    assert str(e.value) == "p must be a real number or array of them, got 'lossy'"
    assert e.value.got == "lossy"
    with pytest.raises(ModelParameterError) as e:
        honc.throughput_gain(0.1, "two")
    assert str(e.value) == "n must be an integer in [1, inf), got 'two'"
    with pytest.raises(ModelParameterError, match=r"^p must be in \[0\.0, 1\.0\), got nan$"):
        honc.throughput_gain(math.nan, 2)


def test_infinity_is_a_value_only_where_the_range_is_unbounded():
    assert kim.throughput(10, 0.5, math.inf) == pytest.approx(20.0)
    assert honc.delay_one_hop(math.inf, 0.1, 2) == math.inf
    with pytest.raises(ModelParameterError, match=r"^p must be in \[0\.0, 1\.0\), got inf$"):
        honc.throughput_gain(math.inf, 2)
    with pytest.raises(ModelParameterError, match=r"^d must be in \[0\.0, inf\), got -inf$"):
        honc.delay_one_hop(-math.inf, 0.1, 2)


def test_closed_bounds_are_values_and_open_ones_are_not():
    assert honc.throughput_end_to_end(0.0, 0.0, 1) == 0.0  # b = 0 and p = 0: closed lower bounds
    assert honc.codec_pairs(3, 1.0) == 3  # success = 1: closed upper bound
    assert kim.rounds_to_wmax(1.0, 1.0, 1.0) == 0.0
    assert markov.solve(0.1, 10_000, 1.0, R=1 / 0.9).uses_kim  # cwmax = 10000 is the largest accepted
    assert abouzeid.mean_window(0.5, 1) == 1.0  # wmax = 1: the smallest window
    with pytest.raises(ModelParameterError, match=r"^rtt must be in \(0\.0, inf\), got 0\.0$"):
        kim.throughput(10, np.zeros(2))


def test_results_are_floats_for_scalars_and_arrays_for_arrays():
    one = honc.delay_one_hop(0.1, 0.2, 3)
    assert type(one) is float
    many = honc.delay_one_hop(0.1, [0.2, 0.3], 3)
    assert isinstance(many, np.ndarray) and many.dtype == np.float64 and many.shape == (2,)
    # P(Bin(6, 0.7) >= 4) = 0.744 < 0.8 <= P(Bin(7, 0.7) >= 4) = 0.874, and
    # P(Bin(7, 0.7) >= 5) = 0.647 < 0.8 <= P(Bin(8, 0.7) >= 5) = 0.806.
    assert type(honc.codec_pairs(4, 0.7)) is int
    assert list(honc.codec_pairs([4, 5], 0.7)) == [7, 8]


def test_submodules_load_on_first_use_and_unknown_names_are_attribute_errors():
    for name in ["markov", "kim", "padhye", "abouzeid", "honc", "num"]:
        module = ncmesh.models.__getattr__(name)
        assert module.__name__ == f"ncmesh.models.{name}"
    with pytest.raises(AttributeError) as e:
        ncmesh.models.__getattr__("reno")
    assert e.value.args == ("reno",)
