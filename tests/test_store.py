"""The results store on its own: what a resume skips, what a row holds, what a killed sweep leaves."""

import json
import sqlite3

import pytest

from ncmesh import store
from ncmesh.store import Store, StoreBusy


def row(key: str, status: str = "ok", **extra):
    return {
        "key": key,
        "sweep": "s",
        "params": {"tcp.variant": "reno"},
        "seed": 1,
        "status": status,
        "ncmesh_version": "0",
        "build": "b",
        "finished_at": "2024-01-01T00:00:00",
        **extra,
    }


def test_resume_skips_ok_and_null_runs_and_retries_failed_ones(tmp_path):
    with Store(tmp_path / "r.sqlite") as s:
        for key, status in [("a", "ok"), ("b", "failed"), ("c", "null"), ("d", "ok")]:
            s.record(row(key, status))
        assert s.done() == {"a", "c", "d"}
        assert s.done(["failed"]) == {"b"}
        assert s.done(["ok", "failed", "null"]) == {"a", "b", "c", "d"}
        # a failed run that succeeds on resume replaces its row and is then done
        s.record(row("b", "ok"))
        assert s.done() == {"a", "b", "c", "d"}
        assert s.db.execute("SELECT count(*) FROM runs").fetchone()[0] == 4


def test_a_row_is_written_as_given_and_unknown_columns_are_refused(tmp_path):
    with Store(tmp_path / "r.sqlite") as s:
        s.record(row("a", scenario_hash="h1", throughput_bps=2.5), scenario_toml="duration = 1")
        s.record(row("b", scenario_hash="h1"), scenario_toml="duration = 2")  # the first text of a hash stays
        s.record(row("c"), scenario_toml="ignored without a hash")
        params, tput = s.db.execute("SELECT params, throughput_bps FROM runs WHERE key = 'a'").fetchone()
        assert json.loads(params) == {"tcp.variant": "reno"} and tput == 2.5
        assert s.db.execute("SELECT hash, toml FROM scenarios").fetchall() == [("h1", "duration = 1")]
        assert s.finished_at() == dict.fromkeys("abc", "2024-01-01T00:00:00")
        with pytest.raises(KeyError, match=r"not columns of runs: \['goodput', 'tput'\]"):
            s.record({**row("d"), "tput": 1.0, "goodput": 2.0})
        assert "d" not in s.finished_at()


def test_dict_values_are_stored_as_json_with_sorted_keys(tmp_path):
    with Store(tmp_path / "r.sqlite") as s:
        s.record(row("a") | {"params": {"b": 1, "a": [2, 3]}})
        assert s.db.execute("SELECT params FROM runs").fetchone()[0] == '{"a": [2, 3], "b": 1}'


def test_commits_are_durable_and_readers_do_not_block_the_writer(tmp_path):
    with Store(tmp_path / "r.sqlite") as s:
        assert s.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert s.db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        s.record(row("a"))
        reader = store.connect(tmp_path / "r.sqlite", readonly=True)
        assert reader.execute("SELECT key FROM runs").fetchall() == [("a",)]
        s.record(row("b"))
        assert reader.execute("SELECT count(*) FROM runs").fetchone()[0] == 2
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            reader.execute("DELETE FROM runs")
        reader.close()


def test_a_readonly_connection_to_no_store_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nothing\.sqlite: no such results store"):
        store.connect(tmp_path / "nothing.sqlite", readonly=True)
    assert not (tmp_path / "nothing.sqlite").exists()


def test_one_writer_at_a_time_and_the_lock_goes_with_it(tmp_path):
    db = tmp_path / "deep" / "r.sqlite"
    first = Store(db)
    with pytest.raises(StoreBusy, match=r"r\.sqlite: another sweep is writing to this store"):
        Store(db)
    first.close()
    first.close()  # closing twice is harmless
    with Store(db) as again:
        again.record(row("a"))
    assert (tmp_path / "deep" / "r.sqlite.lock").exists()


def test_a_store_of_another_schema_version_is_refused_and_released(tmp_path):
    db = tmp_path / "r.sqlite"
    Store(db).close()
    with sqlite3.connect(db) as con:
        con.execute("UPDATE meta SET value = '1' WHERE name = 'schema_version'")
    con.close()
    with pytest.raises(RuntimeError, match=rf"schema version 1, this ncmesh writes {store.SCHEMA_VERSION}$"):
        Store(db)
    with sqlite3.connect(db) as con:
        con.execute("UPDATE meta SET value = ? WHERE name = 'schema_version'", (str(store.SCHEMA_VERSION),))
    con.close()
    Store(db).close()  # the refused open let go of its lock


def test_tidying_removes_what_a_killed_sweep_left_and_keeps_every_referenced_file(tmp_path):
    db = tmp_path / "r.sqlite"
    runs = store.series_dir(db)
    assert runs == tmp_path / "r.runs"
    with Store(db) as s:
        assert s.tidy_series() == 0  # no directory yet
        runs.mkdir()
        for name in ["kept.parquet", "orphan.parquet", "half.parquet.tmp", "notes.txt"]:
            (runs / name).write_text("x")
        s.record(row("a", series="r.runs/kept.parquet"))
        s.record(row("b", series=None))
        assert s.tidy_series() == 2
        assert sorted(p.name for p in runs.iterdir()) == ["kept.parquet", "notes.txt"]
        assert s.tidy_series() == 0
