"""The stacks experiment's pieces that need no kernel: reading `ss -tin`
samples, lining up two traces, keeping the kernel's runs and summing them up."""

import json
import math

import pytest

from ncmesh.experiments.stacks import (
    CHAIN,
    _kernel_runs,
    _kernel_table,
    iperf3_leads,
    ncmesh_bbr,
    parse_ss,
    side_by_side,
)

SAMPLE = """T 100.000
State Recv-Q Send-Q Local Address:Port Peer Address:Port
ESTAB 0 0 10.0.0.1:40000 10.0.0.2:5201
\t cubic wscale:7,7 rto:204 cwnd:10 bytes_sent:200 bytes_acked:190 pacing_rate 2.5Mbps
ESTAB 0 0 10.0.0.1:40002 10.0.0.2:5201
\t bbr wscale:7,7 rto:204 cwnd:40 bytes_acked:5000000 pacing_rate 19.5Mbps delivery_rate 18Mbps
T 100.100
FIN-WAIT-1 0 1 10.0.0.1:40000 10.0.0.2:5201
\t bbr cwnd:4 bytes_acked:6000000 pacing_rate 950Kbps
"""


def test_ss_samples_take_the_connection_that_acknowledged_most():
    assert parse_ss(SAMPLE) == [(0.0, 40, 19.5e6), (0.1, 4, 950e3)]


def test_a_sample_with_no_connection_is_skipped_and_states_ending_in_t_are_not_stamps():
    (only,) = parse_ss("T 5.000\nT 5.100\nLAST-ACK 0 0 a b\n\t cwnd:2 bytes_acked:9\n")
    assert only[:2] == (0.1, 2)
    assert math.isnan(only[2]), "no pacing rate reported"


def test_traces_line_up_on_a_common_grid():
    trace = {
        "kernel": [(0.0, 10, 1e6), (0.7, 20, 2e6)],
        "ncmesh": [(0.0, 10, 3e6), (0.2, 30, 4e6), (1.2, 5, 1e6)],
    }
    grid = side_by_side(trace, 0.5)
    assert list(grid.time_s) == [0.0, 0.5]
    assert list(grid.kernel_cwnd) == [10, 10]
    assert list(grid.ncmesh_cwnd) == [10, 30]
    assert list(grid.ncmesh_mbps) == [3.0, 4.0]


def test_kernel_runs_are_kept_as_they_finish_and_an_interrupted_comparison_resumes(tmp_path):
    kept = tmp_path / "kernel.json"
    points = [("bbr", 0.1, 1, seed) for seed in (1, 2, 3)]
    calls = []

    def flaky(point):
        calls.append(point)
        if point[3] == 2:
            raise RuntimeError("iperf3 reported no result: control socket closed")
        return {"goodput_bps": float(point[3])}

    first = _kernel_runs(points, flaky, 1, kept)
    assert [r["goodput_bps"] for r in first][::2] == [1.0, 3.0]
    assert math.isnan(first[1]["goodput_bps"]) and "control socket" in first[1]["error"]
    assert calls.count(points[1]) == 2, "a failed run is tried once more"
    assert len(json.loads(kept.read_text())) == 2, "the failure is not kept"

    calls.clear()
    second = _kernel_runs(points, lambda point: calls.append(point) or {"goodput_bps": 20.0}, 1, kept)
    assert calls == [points[1]], "only the missing run runs again"
    assert [r["goodput_bps"] for r in second] == [1.0, 20.0, 3.0]


def test_a_kernel_runs_file_of_earlier_versions_is_read_as_every_run_in_order(tmp_path):
    kept = tmp_path / "kernel.json"
    kept.write_text(json.dumps([{"goodput_bps": 5.0}, {"goodput_bps": 6.0}]))

    def never(point):
        raise AssertionError(f"{point} ran again")

    assert [r["goodput_bps"] for r in _kernel_runs([("a",), ("b",)], never, 1, kept)] == [5.0, 6.0]


def test_the_kernel_table_gives_means_their_ratio_and_the_ratio_of_medians():
    rows = [
        {"flows": 1, "seed": s, "ncmesh_bps": n, "linux_bps": k}
        for s, (n, k) in enumerate([(10.0, 10.0), (20.0, 30.0), (300.0, 20.0)], start=1)
    ]
    (row,) = _kernel_table(rows, ["flows"]).to_dict("records")
    assert row["seeds"] == 3
    assert row["ncmesh_bps"] == pytest.approx(110.0) and row["linux_bps"] == pytest.approx(20.0)
    assert row["ratio"] == pytest.approx(5.5) and not row["holds"]
    # One run far from the rest moves the mean, not the median: 20 against 20.
    assert row["median_ratio"] == pytest.approx(1.0)
    assert row["ratio_low"] < row["ratio"] < row["ratio_high"]


def test_the_kernel_table_tests_whether_both_sides_runs_differ():
    def row(pairs):
        rows = [{"flows": 1, "seed": s, "ncmesh_bps": n, "linux_bps": k} for s, (n, k) in enumerate(pairs, start=1)]
        (r,) = _kernel_table(rows, ["flows"]).to_dict("records")
        return r["runs_differ_p"]

    # Three runs each, every one of one side above every one of the other:
    # 2 of the 20 ways to split six ranks three and three are that extreme.
    assert row([(4.0, 1.0), (5.0, 2.0), (6.0, 3.0)]) == pytest.approx(2 / 20)
    # The same runs on both sides: nothing to tell them apart.
    assert row([(1.0, 1.0), (2.0, 2.0), (3.0, 3.0)]) == pytest.approx(1.0)
    assert math.isnan(row([(1.0, 2.0)])), "one run a side is no sample"


def test_iperf3_streams_connect_one_round_trip_apart_and_start_together():
    # Without loss stream k of n sends its SYN n - k + 2 round trips ahead:
    # its handshake, the later streams' handshakes, and its cookie's way to
    # the server and the word to start back.
    assert iperf3_leads(CHAIN, 0.0, 4, seed=1) == pytest.approx([5.0, 4.0, 3.0, 2.0])
    assert iperf3_leads(CHAIN, 0.1, 3, seed=5) == iperf3_leads(CHAIN, 0.1, 3, seed=5)
    for seed in range(1, 200):
        leads = iperf3_leads(CHAIN, 0.1, 4, seed)
        # Losses only lengthen the setup, and the first stream waits longest.
        assert all(lead >= 5 - k - 1e-9 for k, lead in enumerate(leads)), leads
        assert leads == sorted(leads, reverse=True)
    mean_first = [sum(iperf3_leads(CHAIN, p, 4, s)[0] for s in range(1, 400)) / 399 for p in (0.0, 0.02, 0.05)]
    assert mean_first == sorted(mean_first) and mean_first[0] < mean_first[-1]


def test_ncmesh_flows_connected_ahead_deliver_from_the_first_second_of_their_data():
    def goodput(leads):
        return float(ncmesh_bbr(CHAIN, 0.0, 2, seed=1, duration_s=6.0, leads=leads).flows.goodput_bps.sum())

    # Over six seconds of data on the 1 s chain, the handshake's round trip
    # is a sixth of the time: flows connected ahead deliver more in it.
    assert goodput([3.0, 1.0]) > 1.1 * goodput([0.0, 0.0])
