"""Sweep files, planning, metrics and the store, in process."""

import json
import math
import os
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ncmesh import results, sweep
from ncmesh.cli import app
from ncmesh.simulate import RunResult

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "honc-single-path.toml"


def write_sweep(tmp_path: Path, body: str, name: str = "s.toml") -> Path:
    path = tmp_path / name
    relative = os.path.relpath(SCENARIO, tmp_path)
    path.write_text(f'scenario = "{relative}"\n' + body)
    return path


@pytest.mark.parametrize(
    ("body", "line", "key", "words"),
    [
        ('seeds = 2\nmetrcs = ["fairness"]\n', 3, "metrcs", "unknown key"),
        ('metrics = ["fairness",\n  "goodput"]\n', 2, "metrics", "unknown metric 'goodput'"),
        ("seeds = 0\n", 2, "seeds", "at least one seed"),
        ('[axes]\n"tcp.nope" = [1, 2]\n', 3, "tcp.nope", "unknown field `nope`"),
        ("[axes]\ntcp.variant = []\n", 3, "axes.tcp.variant", "at least one value"),
        (
            '[axes]\n"link_class.wireless.loss" = { start = 0.0, stop = 0.2 }\n',
            3,
            "axes.link_class.wireless.loss",
            "exactly one of num",
        ),
        ('[set]\nduration = "10 parsecs"\n', 3, "set.duration", "duration"),
        ('[[zip]]\n"tcp.variant" = ["reno", "cubic"]\n"tcp.mss" = [500]\n', 2, "zip.0", "as many values"),
        ("[axes]\nseed = [1, 2]\n", 3, "seed", "set by `seeds`"),
        ("seeds = [1, 2\n", 1, "syntax", ""),
    ],
)
def test_bad_sweep_files_name_file_line_and_key(tmp_path, body, line, key, words):
    path = write_sweep(tmp_path, body)
    with pytest.raises(sweep.SweepError) as e:
        sweep.parse(path)
    assert str(e.value).startswith(f"{path}:{line}: {key}: "), str(e.value)
    assert words in str(e.value)


def test_bad_sweep_file_is_one_line_and_nonzero_exit(tmp_path):
    path = write_sweep(tmp_path, 'metrics = ["goodput"]\n')
    result = CliRunner().invoke(app, ["sweep", str(path), "--db", str(tmp_path / "r.sqlite")])
    assert result.exit_code == 2
    assert f"{path}:2: metrics: unknown metric" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "r.sqlite").exists()


def test_axes_cross_zips_and_ranges_expand(tmp_path):
    path = write_sweep(
        tmp_path,
        """seeds = [4, 9]
[axes]
link_class.wireless.loss = { start = 0.0, stop = 0.1, num = 3 }
[[zip]]
"tcp.variant" = ["reno", "cubic"]
"tcp.mss" = { start = 500, stop = 1000, step = 500 }
""",
    )
    s = sweep.parse(path)
    points = list(s.points())
    assert s.seeds == [4, 9]
    assert len(points) == 3 * 2
    assert {p["link_class.wireless.loss"] for p in points} == {0.0, 0.05, 0.1}
    assert {(p["tcp.variant"], p["tcp.mss"]) for p in points} == {("reno", 500), ("cubic", 1000)}
    tasks = sweep.plan(s)
    assert len(tasks) == 12 and len({t.key for t in tasks}) == 12
    assert all(t.error is None and t.scenario_toml for t in tasks)
    # the key covers what runs: same resolved scenario and seed, same key
    again = sweep.plan(sweep.parse(path))
    assert [t.key for t in again] == [t.key for t in tasks]


def test_invalid_axis_value_plans_a_failed_run(tmp_path):
    path = write_sweep(tmp_path, '[axes]\n"link_class.wireless.loss" = [0.0, 1.5]\n')
    tasks = sweep.plan(sweep.parse(path))
    assert [t.error is None for t in tasks] == [True, False]
    assert "probability" in tasks[1].error


def _result(flows: pd.DataFrame, links: pd.DataFrame | None = None) -> RunResult:
    empty = pd.DataFrame({"time_s": [], "flow": [], "goodput_bps": []})
    links = links if links is not None else pd.DataFrame({"lost": [3, 4], "dropped": [1, 0]})
    return RunResult(
        flows=flows,
        links=links,
        counters=empty,
        goodput=empty,
        queues=empty,
        cwnd=empty,
        rtt=empty,
        fairness=0.9,
        events=10,
        sim_time_s=1.0,
        wall_s=0.1,
        scenario="",
    )


def test_summary_pools_delay_over_packets_of_all_flows():
    a, b = np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0])
    flows = pd.DataFrame(
        {
            "goodput_bps": [100.0, 300.0],
            "delivered_bytes": [3 * 1000, 2 * 1000],
            "delay_mean_s": [a.mean(), b.mean()],
            "delay_std_s": [a.std(), b.std()],
            "delay_p50_s": [2.0, 15.0],
            "delay_p95_s": [3.0, 20.0],
            "delay_p99_s": [3.0, 20.0],
            "completion_s": [5.0, 7.0],
            "packets_sent": [4, 3],
            "retransmits": [1, 1],
            "timeouts": [0, 2],
        }
    )
    m = sweep.summarize(_result(flows))
    both = np.concatenate([a, b])
    assert m["delay_mean_s"] == pytest.approx(both.mean())
    assert m["delay_std_s"] == pytest.approx(both.std())
    assert m["throughput_bps"] == 400.0 and m["goodput_min_bps"] == 100.0
    assert (m["retransmits"], m["timeouts"], m["link_losses"], m["queue_drops"]) == (2, 2, 7, 1)
    assert m["completion_s"] == 7.0
    flows.loc[1, "completion_s"] = math.nan
    assert sweep.summarize(_result(flows))["completion_s"] is None


def test_a_panic_becomes_a_failed_outcome_but_ctrl_c_does_not(monkeypatch, tmp_path):
    task = sweep.plan(sweep.parse(write_sweep(tmp_path, "")))[0]

    class PanicException(BaseException):
        """Stands in for pyo3_runtime.PanicException, also a BaseException."""

    def panic(*_a, **_k):
        raise PanicException("index out of bounds: the len is 3 but the index is 7")

    monkeypatch.setattr(sweep, "execute", panic)
    outcome = sweep.execute_task(task)
    assert outcome.status == "failed"
    assert outcome.error.startswith("PanicException: index out of bounds")

    def interrupt(*_a, **_k):
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep, "execute", interrupt)
    with pytest.raises(KeyboardInterrupt):
        sweep.execute_task(task)


def test_resume_skips_done_runs_and_rerun_replaces_them(tmp_path):
    path = write_sweep(tmp_path, 'seeds = 2\n[set]\nduration = "100s"\n[axes]\n"tcp.variant" = ["reno", "vegas"]\n')
    db = tmp_path / "r.sqlite"
    started = []
    first = sweep.run_sweep(path, db, jobs=1, on_start=lambda *counts: started.append(counts))
    assert (first.planned, first.ok, first.skipped) == (4, 4, 0)
    before = results.load(db)
    second = sweep.run_sweep(path, db, jobs=1, on_start=lambda *counts: started.append(counts))
    assert (second.planned, second.executed, second.skipped) == (4, 0, 4)
    assert started == [(4, 0), (0, 4)], "on_start gets the runs to do and the runs skipped"
    assert results.load(db).finished_at.tolist() == before.finished_at.tolist()
    third = sweep.run_sweep(path, db, jobs=2, rerun=True)
    assert (third.ok, third.skipped) == (4, 0)
    after = results.load(db)
    assert len(after) == 4 and after.key.is_unique
    assert (after.finished_at > before.finished_at).all()
    metrics = ["throughput_bps", "delay_mean_s", "retransmits"]
    pd.testing.assert_frame_equal(after[metrics], before[metrics])
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT count(*) FROM scenarios").fetchone()[0] == 4


def test_resume_tries_failed_runs_again(monkeypatch, tmp_path):
    path = write_sweep(tmp_path, '[set]\nduration = "50s"\n[axes]\n"tcp.variant" = ["reno", "vegas"]\n')
    db = tmp_path / "r.sqlite"
    load = sweep.load

    def vegas_fails(scenario_toml, *args, **kwargs):
        if isinstance(scenario_toml, str) and 'variant = "vegas"' in scenario_toml:
            raise RuntimeError("a transient failure")
        return load(scenario_toml, *args, **kwargs)

    monkeypatch.setattr(sweep, "load", vegas_fails)
    first = sweep.run_sweep(path, db, jobs=1, threads=True)
    assert (first.ok, first.failed) == (1, 1)
    monkeypatch.setattr(sweep, "load", load)
    second = sweep.run_sweep(path, db, jobs=1, threads=True)
    assert (second.skipped, second.ok, second.failed) == (1, 1, 0), "only the failed run runs again"
    table = results.load(db)
    assert list(table.status) == ["ok", "ok"] and table.error.isna().all()


def test_runs_go_to_fresh_worker_processes_by_default(monkeypatch, tmp_path):
    # Spawned workers import ncmesh anew: what this process patches does not reach them.
    path = write_sweep(tmp_path, '[set]\nduration = "50s"\n')
    load = sweep.load

    def fails_here(scenario_toml, *args, **kwargs):
        if isinstance(scenario_toml, str):
            raise RuntimeError("ran in the coordinator")
        return load(scenario_toml, *args, **kwargs)

    monkeypatch.setattr(sweep, "load", fails_here)
    report = sweep.run_sweep(path, tmp_path / "r.sqlite", jobs=1)
    assert (report.ok, report.failed) == (1, 0)


def test_null_runs_have_their_own_keys_and_no_metrics(tmp_path):
    real = write_sweep(tmp_path, '[set]\nduration = "100s"\n', "real.toml")
    null = write_sweep(tmp_path, 'null = true\n[set]\nduration = "100s"\n', "null.toml")
    db = tmp_path / "r.sqlite"
    assert sweep.run_sweep(null, db).null == 1
    assert sweep.run_sweep(real, db).ok == 1
    table = results.load(db)
    assert sorted(table.status) == ["null", "ok"]
    assert table[table.status == "null"].throughput_bps.isna().all()
    assert table[table.status == "null"].series.isna().all()


def test_results_export_filters_with_sql_on_parameter_columns(tmp_path):
    path = write_sweep(
        tmp_path,
        '[set]\nduration = "100s"\n[axes]\n"tcp.variant" = ["reno", "cubic"]\n'
        '"link_class.wireless.loss" = [0.0, 2.0]\n',
    )
    db = tmp_path / "r.sqlite"
    sweep.run_sweep(path, db, jobs=1)
    runner = CliRunner()
    out = runner.invoke(
        app, ["results", str(db), "--where", "status = 'failed' AND \"tcp.variant\" = 'cubic'", "--format", "json"]
    )
    assert out.exit_code == 0, out.output
    rows = json.loads(out.stdout)
    assert len(rows) == 1 and rows[0]["link_class.wireless.loss"] == 2.0 and "probability" in rows[0]["error"]
    out = runner.invoke(app, ["results", str(db), "--format", "parquet", "--out", str(tmp_path / "all.parquet")])
    assert out.exit_code == 0, out.output
    table = pd.read_parquet(tmp_path / "all.parquet")
    assert len(table) == 4 and set(table["tcp.variant"]) == {"reno", "cubic"}
    csv = runner.invoke(app, ["results", str(db), "--where", "throughput_bps > 0"])
    assert csv.exit_code == 0 and len(csv.stdout.strip().splitlines()) == 1 + 2
    bad = runner.invoke(app, ["results", str(db), "--where", "nosuchcolumn = 1"])
    assert bad.exit_code != 0 and "nosuchcolumn" in bad.output and "Traceback" not in bad.output


@pytest.mark.parametrize(
    ("body", "line", "key", "words"),
    [
        # unknown keys, at the top and inside a range
        (
            '[axes]\n"tcp.variant" = ["reno"]\n[set]\nduration = "100s"\n[sweep]\nname = "x"\n',
            6,
            "sweep",
            "unknown key; expected one of",
        ),
        (
            "[axes]\nlink_class.wireless.loss = { start = 0.0, stop = 0.1, nmu = 3 }\n",
            3,
            "axes.link_class.wireless.loss.nmu",
            "unknown key; expected one of start, stop, num, step",
        ),
        # wrong types
        (
            'seeds = 2\n\n[axes]\n"tcp.variant" = ["reno"]\nnmae = "x"\n',
            6,
            "axes.nmae",
            "expected a list of values or a range",
        ),
        (
            'name = "t"\nseeds = "three"\n',
            3,
            "seeds",
            "expected a number of seeds (1..N) or a list of seeds, found 'three'",
        ),
        ("null = 1\n", 2, "null", "expected true or false, found 1"),
        (
            '[axes]\n"tcp.mss" = { start = 500, stop = "1000", step = 100 }\n',
            3,
            "axes.tcp.mss.stop",
            "expected a finite number, found '1000'",
        ),
        ('[axes]\n"tcp.variant" = "reno"\n', 3, "axes.tcp.variant", "expected a list of values or a range"),
        ('metrics = "fairness"\n', 2, "metrics", "expected a non-empty list of metric names"),
        # empty axes, also in a zip group
        ('[axes]\n"tcp.variant" = ["reno"]\n"tcp.mss" = []\n', 4, "axes.tcp.mss", "expected at least one value"),
        (
            '[[zip]]\n"tcp.variant" = ["reno"]\n[[zip]]\n"tcp.mss" = [500]\n"tcp.sack" = []\n',
            6,
            "zip.1.tcp.sack",
            "at least one value",
        ),
    ],
)
def test_the_schema_refuses_unknown_keys_wrong_types_and_empty_axes(tmp_path, body, line, key, words):
    path = write_sweep(tmp_path, body)
    with pytest.raises(sweep.SweepError) as e:
        sweep.parse(path)
    assert str(e.value).startswith(f"{path}:{line}: {key}: "), str(e.value)
    assert words in str(e.value)
    assert "\n" not in str(e.value)


def test_dotted_axis_keys_that_look_like_a_range_are_keys(tmp_path):
    # flows.0.start and flows.0.stop are two axes, not a range table
    path = write_sweep(tmp_path, '[set]\nduration = "100s"\n[axes]\nflows.0.start = [0, 5]\nflows.0.stop = [50, 100]\n')
    s = sweep.parse(path)
    assert s.keys == ["flows.0.start", "flows.0.stop"]
    assert len(list(s.points())) == 4


def test_a_key_given_quoted_and_bare_is_set_twice(tmp_path):
    path = write_sweep(tmp_path, '[axes]\n"tcp.variant" = ["reno"]\ntcp.variant = ["cubic"]\n')
    with pytest.raises(sweep.SweepError, match=r":4: tcp\.variant: this key is set twice"):
        sweep.parse(path)


def test_a_version_2_store_gains_the_counters_column_and_keeps_its_runs(tmp_path):
    from ncmesh.store import COLUMNS, SCHEMA_VERSION, Store

    db = tmp_path / "old.sqlite"
    old_columns = [c for c in COLUMNS if c != "counters"]
    con = sqlite3.connect(db)
    con.execute(f"CREATE TABLE runs ({', '.join(old_columns)})")
    con.execute("CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
    con.execute("INSERT INTO meta VALUES ('schema_version', '2')")
    con.execute(
        "INSERT INTO runs (key, sweep, params, seed, status, ncmesh_version, build, finished_at) "
        "VALUES ('k', 's', '{}', 1, 'ok', 'v', 'b', 't')"
    )
    con.commit()
    con.close()
    with Store(db) as store:
        assert store.done() == {"k"}
        store.record(
            {
                "key": "k2",
                "sweep": "s",
                "params": {},
                "seed": 2,
                "status": "ok",
                "ncmesh_version": "v",
                "build": "b",
                "finished_at": "t",
                "counters": {"symbols_sent": 3},
            }
        )
    version = sqlite3.connect(db).execute("SELECT value FROM meta WHERE name = 'schema_version'").fetchone()[0]
    assert int(version) == SCHEMA_VERSION == 3
    table = results.load(db)
    assert list(results.counters(table).symbols_sent) == [0, 3]
