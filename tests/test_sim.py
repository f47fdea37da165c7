"""Running scenarios from Python and from the command line."""

import json
import math
import subprocess
import sys

import pandas as pd
import pytest
from typer.testing import CliRunner

import ncmesh
from ncmesh.cli import app
from ncmesh.paths import scenario

TWO_NODES = {
    "duration": 20,
    "nodes": [1, 2],
    "links": [{"between": [1, 2], "capacity": "2Mbps", "delay": "10ms", "loss": 0.01}],
    "flows": [{"src": 1, "dst": 2, "app": "bulk"}],
}


def test_run_from_a_dict_returns_dataframes():
    r = ncmesh.run(TWO_NODES)
    assert isinstance(r.flows, pd.DataFrame) and len(r.flows) == 1
    assert r.flows.goodput_bps.iloc[0] > 0
    assert set(r.goodput.columns) == {"time_s", "flow", "goodput_bps"}
    assert len(r.goodput) == 20  # one-second bins over 20 s
    # Goodput bins add up to the bytes delivered.
    assert math.isclose(r.goodput.goodput_bps.sum() / 8, r.flows.delivered_bytes.iloc[0])
    assert r.events > 0 and r.sim_time_s == 20


def test_keyword_overrides_use_double_underscore_for_dots():
    lossless = ncmesh.run(TWO_NODES, links__0__loss=0.0)
    lossy = ncmesh.run(TWO_NODES, overrides={"links.0.loss": 0.05})
    assert lossless.flows.retransmits.iloc[0] == 0
    assert lossy.flows.goodput_bps.iloc[0] < lossless.flows.goodput_bps.iloc[0]
    assert "loss = 0.05" in lossy.scenario


def test_same_seed_same_result_other_seed_other_result():
    a, b = ncmesh.run(TWO_NODES, seed=4), ncmesh.run(TWO_NODES, seed=4)
    pd.testing.assert_frame_equal(a.flows, b.flows)
    c = ncmesh.run(TWO_NODES, seed=5)
    assert a.flows.delivered_bytes.iloc[0] != c.flows.delivered_bytes.iloc[0]


def test_bad_scenario_raises_with_key_and_line(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(scenario("chain-5hop").read_text().replace("loss = 0.01", "loss = 1.01"))
    with pytest.raises(ncmesh.ScenarioError, match=r"bad\.toml:\d+: .*loss: expected a probability in \[0, 1\)"):
        ncmesh.run(path)
    with pytest.raises(ncmesh.ScenarioError, match=r"<dict>: flows\[0\]\.dst: no node 9"):
        ncmesh.run({**TWO_NODES, "flows": [{"src": 1, "dst": 9, "app": "bulk"}]})


def test_cli_run_json_has_the_documented_keys():
    result = CliRunner().invoke(app, ["run", "chain-5hop", "--set", "duration=30", "--seed", "3", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert set(out) >= {"flows", "events", "sim_time_s", "wall_s"}
    assert set(out["flows"][0]) >= {"id", "goodput_bps", "delay_mean_s", "delay_std_s", "delay_p95_s"}
    assert out["sim_time_s"] == 30


def test_cli_run_writes_tables_atomically(tmp_path):
    result = CliRunner().invoke(
        app, ["run", "dumbbell", "--set", "duration=10", "--set", "probes.cwnd=true", "--out", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    same = ncmesh.run(scenario("dumbbell"), duration=10, probes__cwnd=True)
    for name in ("flows", "links", "goodput", "queues", "cwnd"):
        expected = getattr(same, name)
        assert len(expected) > 0, name
        written = pd.read_parquet(tmp_path / f"{name}.parquet")
        pd.testing.assert_frame_equal(written, expected, check_dtype=False)
        from_csv = pd.read_csv(tmp_path / f"{name}.csv")
        for column in expected.columns[[not pd.api.types.is_numeric_dtype(t) for t in expected.dtypes]]:
            from_csv[column] = from_csv[column].fillna("")  # in CSV, an empty text reads as NA
        pd.testing.assert_frame_equal(from_csv, expected, check_dtype=False)
    assert len(pd.read_parquet(tmp_path / "flows.parquet")) == 4
    assert not list(tmp_path.glob(".*.tmp")), "no temporary files are left behind"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "no/such.toml"], "cannot read the scenario"),
        (
            ["run", "chain-6hop"],
            "chain-6hop: no such file, and no shipped scenario of that name (shipped: bbr-link, chain-5hop, dumbbell,",
        ),
        (["run", "chain-5hop", "--set", "links.0.lossy=0.1"], "links[0].lossy: unknown field"),
        (["run", "chain-5hop", "--set", "nodes"], "expected KEY=VALUE"),
        (["run", "chain-5hop", "--set", "links.9.loss=0.1"], "past the end"),
    ],
)
def test_cli_errors_are_one_line_and_non_zero(args, message):
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_schema_describes_the_scenario_keys():
    schema = json.loads(CliRunner().invoke(app, ["schema"]).stdout)
    # Links are optional: nodes may share a wireless channel instead.
    assert set(schema["required"]) == {"duration", "nodes"}
    assert {"flows", "links", "wifi"} <= set(schema["properties"]) and schema["additionalProperties"] is False


def test_bench_sim_reports_rate_and_memory():
    result = CliRunner().invoke(app, ["bench", "sim", "--duration", "100", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert set(out) >= {"events", "events_per_s", "wall_s", "sim_time_s", "peak_rss_bytes"}
    assert out["events"] > 0 and out["sim_time_s"] == 100


def test_ns3_comparison_totals_the_flow_table_of_its_ncmesh_run():
    from ncmesh import bench_sim

    row = bench_sim.run_ncmesh(20.0, 0.05)
    overrides = {"duration": 20.0, "link_class.wireless.loss": 0.05, "tcp.sack": True, "tcp.initial_cwnd": 1}
    flows = ncmesh.run(scenario(bench_sim.SCENARIO), overrides=overrides).flows
    assert row["goodput_bps"] > 0
    assert row["goodput_bps"] == pytest.approx(flows.delivered_bytes.sum() * 8 / 20.0)
    counts = (row["data_segments"], row["retransmits"], row["timeouts"])
    assert counts == (flows.packets_sent.sum(), flows.retransmits.sum(), flows.timeouts.sum())


FLOW_COLUMNS = [
    "id",
    "src",
    "dst",
    "app",
    "goodput_bps",
    "delivered_bytes",
    "corrupt_bytes",
    "acked_bytes",
    "delay_mean_s",
    "delay_std_s",
    "delay_p50_s",
    "delay_p95_s",
    "delay_p99_s",
    "completion_s",
    "packets_sent",
    "rtt_mean_s",
    "rto_mean_s",
    "retransmits",
    "timeouts",
]


def test_tables_have_their_columns_and_pandas_dtypes_even_when_empty():
    probed = ncmesh.run(scenario("dumbbell"), duration=5, probes__cwnd=True)
    idle = ncmesh.run({**TWO_NODES, "flows": []})
    for r in (probed, idle):
        assert list(r.flows.columns) == FLOW_COLUMNS
        integers = {
            "id",
            "src",
            "dst",
            "delivered_bytes",
            "corrupt_bytes",
            "acked_bytes",
            "packets_sent",
            "retransmits",
            "timeouts",
        }
        for column in FLOW_COLUMNS:
            expected = "int64" if column in integers else ("float64" if column != "app" else None)
            if expected:
                assert str(r.flows[column].dtype) == expected, column
        assert list(r.links.columns) == [
            "from",
            "to",
            "class",
            "transmitted",
            "transmitted_bytes",
            "lost",
            "corrupted",
            "dropped",
        ]
        assert list(r.queues.columns) == ["time_s", "from", "to", "packets"]
        assert [str(t) for t in r.queues.dtypes] == ["float64", "int64", "int64", "float64"]
        for name, value in (("goodput", "goodput_bps"), ("cwnd", "cwnd_bytes"), ("rtt", "srtt_s")):
            frame = getattr(r, name)
            assert list(frame.columns) == ["time_s", "flow", value]
            assert [str(t) for t in frame.dtypes] == ["float64", "int64", "float64"]
    assert len(probed.cwnd) == 4 * 5 and len(idle.flows) == 0
    # A bulk flow that never completes has no completion time.
    assert probed.flows.completion_s.isna().all()


def test_arrow_tables_share_the_simulators_memory():
    import pyarrow as pa

    r = ncmesh.run(TWO_NODES)
    goodput = r.arrow("goodput")
    assert isinstance(goodput, pa.Table)
    assert goodput.schema.field("flow").type == pa.uint32() and goodput.schema.field("time_s").type == pa.float64()
    # Two imports of the same table read one buffer: the import does not copy.
    again = pa.RecordBatchReader.from_stream(r._given["goodput"]).read_all()
    assert (
        again.column("goodput_bps").chunk(0).buffers()[1].address
        == goodput.column("goodput_bps").chunk(0).buffers()[1].address
    )
    assert goodput.column("goodput_bps").to_pylist() == r.goodput.goodput_bps.tolist()
    assert r.flows is r.flows  # built once


def test_summary_is_the_same_from_arrow_and_from_pandas():
    r = ncmesh.run(scenario("dumbbell"), duration=20, seed=2)
    before = r.summary()
    r.flows  # noqa: B018 - loads the DataFrame, which summary then reads
    assert r.summary() == before
    assert [f["id"] for f in before["flows"]] == [1, 2, 3, 4]
    assert all(isinstance(f["goodput_bps"], float) and f["goodput_bps"] > 0 for f in before["flows"])


def test_a_run_and_its_summary_do_not_import_pandas():
    code = (
        "import sys, json, ncmesh, ncmesh.paths\n"
        "r = ncmesh.run(ncmesh.paths.scenario('chain-5hop'), duration=5)\n"
        "json.dumps(r.summary())\n"
        "print(sorted(m for m in ('pandas', 'matplotlib', 'scipy') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_an_unknown_tcp_variant_names_the_key_and_the_choices():
    result = CliRunner().invoke(app, ["run", "bbr-link", "--set", 'tcp.variant="bbr3"'])
    assert result.exit_code == 2
    assert "tcp.variant: unknown variant `bbr3`" in result.output
    assert "`cubic`, `bbr`" in result.output
