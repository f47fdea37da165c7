"""The results store of sweeps: one SQLite database, one row per run.

SQLite rather than DuckDB, for three reasons that all come from the promise
"killing the sweep at any moment loses no finished run":

- In WAL mode a transaction is either in the log with its commit record or
  it is ignored on the next open, so a SIGKILL between two statements of a
  row cannot leave half a row. With ``synchronous=FULL`` the commit is also
  on disk before we move on, so a power cut does not lose it either.
- DuckDB lets one process open a database for writing and then refuses
  every other process, even readers. A sweep runs for hours; people want to
  look at ``ncmesh results`` while it runs. WAL readers never block the writer.
- ``sqlite3`` is in the standard library, so every Dask or SLURM node can
  read the store without installing anything.

DuckDB is still used for ``--where`` queries over the loaded table (see
:mod:`ncmesh.results`), where its SQL dialect is the richer one.

Time series do not belong in a row; each run's go to one Parquet file beside
the database, written atomically before the row that points to it.
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .files import make_directory

SCHEMA_VERSION = 3

METRICS: dict[str, str] = {
    "throughput_bps": "sum over flows of goodput",
    "goodput_mean_bps": "mean over flows of goodput",
    "goodput_min_bps": "smallest flow goodput",
    "delay_mean_s": "mean end-to-end delay of all delivered packets (flow means weighted by delivered bytes)",
    "delay_std_s": "standard deviation of the delay of all delivered packets (pooled over flows)",
    "delay_p50_s": "mean over flows of the median delay",
    "delay_p95_s": "mean over flows of the 95th percentile delay",
    "delay_p99_s": "mean over flows of the 99th percentile delay",
    "completion_s": "last flow completion time (NULL if some flow did not complete)",
    "fairness": "Jain's index over flow goodputs",
    "delivered_bytes": "sum over flows",
    "acked_bytes": "sum over flows of the bytes TCP saw acknowledged (what coded transports report as seen)",
    "packets_sent": "sum over flows",
    "retransmits": "sum over flows",
    "timeouts": "sum over flows",
    "link_losses": "packets lost on links (channel losses), all directions",
    "queue_drops": "packets dropped at full queues, all directions",
    "events": "simulator events processed",
}
"""Every metric a sweep may keep, with how it is computed from the flows."""

INTEGER_METRICS = {
    "delivered_bytes",
    "acked_bytes",
    "packets_sent",
    "retransmits",
    "timeouts",
    "link_losses",
    "queue_drops",
    "events",
}

STATUSES = ("ok", "failed", "null")

_COLUMNS: list[tuple[str, str]] = [
    ("key", "TEXT PRIMARY KEY"),
    ("sweep", "TEXT NOT NULL"),
    ("params", "TEXT NOT NULL"),
    ("seed", "INTEGER NOT NULL"),
    ("scenario_hash", "TEXT"),
    ("status", "TEXT NOT NULL CHECK (status IN ('ok', 'failed', 'null'))"),
    ("error", "TEXT"),
    ("ncmesh_version", "TEXT NOT NULL"),
    ("build", "TEXT NOT NULL"),
    ("git_commit", "TEXT"),
    ("git_dirty", "INTEGER"),
    ("host", "TEXT"),
    ("finished_at", "TEXT NOT NULL"),
    ("wall_s", "REAL"),
    ("sim_time_s", "REAL"),
    *[(m, "INTEGER" if m in INTEGER_METRICS else "REAL") for m in METRICS],
    ("counters", "TEXT"),
    ("series", "TEXT"),
]
COLUMNS = [name for name, _ in _COLUMNS]


class StoreBusy(RuntimeError):
    """Another sweep holds the store for writing."""


class StoreError(ValueError):
    """A file that is not a results store, or a damaged one; the message names the file and what is wrong."""


class StoreVersionError(StoreError, RuntimeError):
    """A store written by another version of ncmesh, in a schema this one does not write."""


class Store:
    """A results database opened for writing by one sweep at a time.

    The lock is an ``flock`` on a file beside the database, so the kernel
    drops it when the holder dies, however it dies: a killed sweep never
    leaves a stale lock behind.
    """

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        _refuse_directory(self.path)
        make_directory(self.path.parent)
        self.series_dir = series_dir(self.path)
        # Held open for the store's life: the lock lasts as long as the file does.
        self._lock = open(self.path.with_name(self.path.name + ".lock"), "a+")  # noqa: SIM115
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.close()
            raise StoreBusy(
                f"{self.path}: another sweep is writing to this store; wait for it or use another --db"
            ) from None
        try:
            self.db = connect(self.path)
            self.db.execute("PRAGMA synchronous=FULL")
            with self.db:
                self.db.execute(f"CREATE TABLE IF NOT EXISTS runs ({', '.join(f'{n} {t}' for n, t in _COLUMNS)})")
                self.db.execute("CREATE TABLE IF NOT EXISTS scenarios (hash TEXT PRIMARY KEY, toml TEXT NOT NULL)")
                self.db.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
                self.db.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            version = self.db.execute("SELECT value FROM meta WHERE name = 'schema_version'").fetchone()[0]
            if int(version) == 2:
                # Version 3 adds each run's counters; older runs have none.
                with self.db:
                    self.db.execute("ALTER TABLE runs ADD COLUMN counters TEXT")
                    self.db.execute("UPDATE meta SET value = ? WHERE name = 'schema_version'", (str(SCHEMA_VERSION),))
                version = SCHEMA_VERSION
            if int(version) != SCHEMA_VERSION:
                raise StoreVersionError(
                    f"{self.path}: store schema version {version}, this ncmesh writes {SCHEMA_VERSION}"
                )
        except BaseException:
            self.close()
            raise

    def done(self, statuses: Iterable[str] = ("ok", "null")) -> set[str]:
        """Keys of the runs that a resume skips."""
        statuses = tuple(statuses)
        marks = ", ".join("?" * len(statuses))
        return {k for (k,) in self.db.execute(f"SELECT key FROM runs WHERE status IN ({marks})", statuses)}

    def finished_at(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT key, finished_at FROM runs"))

    def record(self, row: Mapping[str, Any], scenario_toml: str | None = None) -> None:
        """Inserts or replaces one run's row in its own transaction.

        The Parquet file the row points to must already be in place: a row
        is committed only after its series, so a row never points at nothing.
        """
        unknown = set(row) - set(COLUMNS)
        if unknown:
            raise KeyError(f"not columns of runs: {sorted(unknown)}")
        names = list(row)
        values = [json.dumps(v, sort_keys=True) if isinstance(v, dict) else v for v in row.values()]
        with self.db:
            if scenario_toml is not None and row.get("scenario_hash"):
                self.db.execute("INSERT OR IGNORE INTO scenarios VALUES (?, ?)", (row["scenario_hash"], scenario_toml))
            self.db.execute(
                f"INSERT OR REPLACE INTO runs ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})", values
            )

    def tidy_series(self) -> int:
        """Removes what a killed sweep may have left in the series directory.

        That is temporary files of unfinished writes, and complete Parquet
        files whose row was never committed (the run is redone and the file
        rewritten). Safe because we hold the writer's lock.
        """
        if not self.series_dir.is_dir():
            return 0
        referenced = {p for (p,) in self.db.execute("SELECT series FROM runs WHERE series IS NOT NULL")}
        removed = 0
        for entry in self.series_dir.iterdir():
            relative = f"{self.series_dir.name}/{entry.name}"
            if entry.name.endswith(".tmp") or (entry.suffix == ".parquet" and relative not in referenced):
                entry.unlink(missing_ok=True)
                removed += 1
        return removed

    def close(self) -> None:
        db = getattr(self, "db", None)
        if db is not None:
            db.close()
            del self.db
        if not self._lock.closed:
            self._lock.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def series_dir(db: Path) -> Path:
    """Where a store keeps its Parquet files: ``results.sqlite`` -> ``results.runs/``."""
    return db.with_name(db.stem + ".runs")


def connect(path: str | os.PathLike[str], readonly: bool = False) -> sqlite3.Connection:
    """Opens a store, refusing with :class:`StoreError` a file that is not an SQLite database."""
    path = Path(path)
    _refuse_directory(path)
    try:
        if readonly:
            if not path.exists():
                raise FileNotFoundError(f"{path}: no such results store")
            db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
            # sqlite3 opens anything and complains at the first query: ask one now.
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        else:
            db = sqlite3.connect(path, timeout=30)
            db.execute("PRAGMA journal_mode=WAL")
    except sqlite3.DatabaseError as e:
        raise StoreError(
            f"{path}: not a results store ({e}); expected an SQLite file written by ncmesh sweep"
        ) from None
    return db


def _refuse_directory(path: Path) -> None:
    if path.is_dir():
        raise StoreError(f"{path}: is a directory; expected a results store, an SQLite file written by ncmesh sweep")
