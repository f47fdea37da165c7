"""The sweep command as a real process: killed, interrupted, failing, on Dask."""

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from ncmesh import results

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "honc-single-path.toml"
METRICS = ["throughput_bps", "delay_mean_s", "delay_std_s", "fairness", "retransmits", "timeouts", "events"]


def write_sweep(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "sweep.toml"
    path.write_text(f'scenario = "{os.path.relpath(SCENARIO, tmp_path)}"\n' + body)
    return path


def start(sweep: Path, db: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "ncmesh.cli", "sweep", str(sweep), "--db", str(db), *args],
        cwd=sweep.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen, timeout: float = 60) -> tuple[int, str]:
    _, stderr = process.communicate(timeout=timeout)
    return process.returncode, stderr


def committed(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as con:
            return con.execute("SELECT count(*) FROM runs WHERE status = 'ok'").fetchone()[0]
    except sqlite3.OperationalError:  # the table does not exist yet
        return 0


def wait_for_rows(db: Path, process: subprocess.Popen, n: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while committed(db) < n:
        assert process.poll() is None, f"the sweep ended early: {process.communicate()[1]}"
        assert time.monotonic() < deadline, "no rows came"
        time.sleep(0.02)


# 12 runs of about 0.3 s each, on one core: long enough to be killed in the middle.
SLOW = (
    'seeds = 3\nmetrics = ["throughput_bps", "delay_mean_s", "retransmits"]\n[set]\nduration = "2000s"\n'
    '[axes]\n"tcp.variant" = ["reno", "newreno", "sack", "cubic"]\n'
)


def check_store(db: Path, expected_runs: int) -> pd.DataFrame:
    table = results.load(db)
    assert len(table) == expected_runs
    assert table.key.is_unique
    assert (table.status == "ok").all(), table[["status", "error"]]
    for path in table.series:
        series = pd.read_parquet(path)
        assert {"series", "time_s", "value"} <= set(series.columns) and len(series) > 0
    runs_dir = db.with_name(db.stem + ".runs")
    on_disk = sorted(p.name for p in runs_dir.iterdir())
    assert on_disk == sorted(Path(p).name for p in table.series), "temporary or orphan files left behind"
    return table


def test_sigkill_mid_sweep_then_resume_loses_and_repeats_nothing(tmp_path):
    sweep, db = write_sweep(tmp_path, SLOW), tmp_path / "r.sqlite"
    before: dict[str, str] = {}
    for at_least in (3, 7):  # killed twice, the second time while resuming
        process = start(sweep, db, "--jobs", "1")
        wait_for_rows(db, process, at_least)
        process.send_signal(signal.SIGKILL)
        # returns only once every holder of the pipes is gone: no orphaned worker lives on
        process.communicate(timeout=10)
        with sqlite3.connect(db) as con:
            rows = dict(con.execute("SELECT key, finished_at FROM runs"))
        assert {k: rows[k] for k in before} == before, "a finished run was run again"
        before = rows
    assert 7 <= len(before) < 12

    code, stderr = finish(start(sweep, db, "--jobs", "1"))
    assert code == 0, stderr
    assert f"{12 - len(before)} runs to do, {len(before)} already in" in stderr
    table = check_store(db, 12)
    after = dict(zip(table.key, table.finished_at, strict=True))
    assert {k: after[k] for k in before} == before, "a finished run was run again"


def test_ctrl_c_stops_cleanly_and_keeps_finished_runs(tmp_path):
    sweep, db = write_sweep(tmp_path, SLOW), tmp_path / "r.sqlite"
    process = start(sweep, db, "--jobs", "2")
    wait_for_rows(db, process, 2)
    process.send_signal(signal.SIGINT)
    code, stderr = finish(process, 30)
    assert code == 130
    assert "interrupted" in stderr and "Run the same command again to resume" in stderr
    assert "Traceback" not in stderr
    kept = committed(db)
    assert 2 <= kept < 12
    check_store(db, kept)


def test_a_failing_run_is_recorded_and_the_others_finish(tmp_path):
    sweep = write_sweep(tmp_path, '[set]\nduration = "200s"\n[axes]\n"link_class.wireless.loss" = [0.0, 1.5, 0.01]\n')
    db = tmp_path / "r.sqlite"
    code, stderr = finish(start(sweep, db, "--jobs", "1"))
    assert code == 1, stderr
    assert "2 ok, 1 failed" in stderr
    table = results.load(db)
    failed = table[table.status == "failed"]
    assert failed["link_class.wireless.loss"].tolist() == [1.5]
    assert "expected a probability in [0, 1), found 1.5" in failed.error.iloc[0]
    assert failed.series.isna().all()
    assert table[table.status == "ok"].throughput_bps.notna().all()


def test_dask_local_cluster_gives_the_rows_of_the_local_runner(tmp_path):
    sweep = write_sweep(
        tmp_path,
        'seeds = [1, 2]\n[set]\nduration = "300s"\n[axes]\n'
        '"link_class.wireless.loss" = [0.0, 0.01]\n"tcp.variant" = ["reno", "cubic"]\n',
    )
    local_db, dask_db = tmp_path / "local.sqlite", tmp_path / "dask.sqlite"
    code, stderr = finish(start(sweep, local_db, "--jobs", "1"))
    assert code == 0, stderr
    code, stderr = finish(start(sweep, dask_db, "--dask", "local", "--jobs", "2"), 120)
    assert code == 0, stderr
    assert "running on Dask (local)" in stderr
    local = results.load(local_db).set_index("key").sort_index()
    dask = results.load(dask_db).set_index("key").sort_index()
    assert len(local) == 8 and list(local.index) == list(dask.index)
    pd.testing.assert_frame_equal(local[METRICS], dask[METRICS])
    for key in local.index[:3]:
        pd.testing.assert_frame_equal(pd.read_parquet(local.series[key]), pd.read_parquet(dask.series[key]))
