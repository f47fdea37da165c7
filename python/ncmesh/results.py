"""Reading a results store back: one pandas row per run, parameters as columns."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from .files import write_atomically
from .store import COLUMNS, StoreError, connect

FORMATS = ("csv", "parquet", "json")


def load(db: str | os.PathLike[str], where: str | None = None) -> pd.DataFrame:
    """The runs of a store, one row each, with every swept key as a column of its own.

    Parameter columns are named by their dotted scenario keys
    (``link_class.wireless.loss``) and come right after ``sweep``; ``series``
    is made an absolute path to the run's Parquet time series. ``where`` is
    an SQL condition evaluated by DuckDB over this table, so it can name
    parameter columns (quote them: ``"tcp.variant" = 'cubic'``).
    """
    db = Path(db)
    with connect(db, readonly=True) as con:
        try:
            runs = pd.read_sql_query("SELECT * FROM runs ORDER BY sweep, finished_at", con)
        except pd.errors.DatabaseError as e:
            raise ValueError(f"{db}: not a results store ({e.__cause__ or e})") from None
    con.close()
    missing = [c for c in REQUIRED if c not in runs.columns]
    if missing:
        raise StoreError(f"{db}: not a results store: table runs has no column {', '.join(missing)}")
    params = pd.DataFrame(_json_column(db, runs, "params"), index=runs.index)
    runs = runs.drop(columns="params")
    if "counters" in runs.columns:
        _json_column(db, runs, "counters")
    params = params[[c for c in params.columns if c not in runs.columns]]
    at = list(runs.columns).index("sweep") + 1
    table = pd.concat([runs.iloc[:, :at], params, runs.iloc[:, at:]], axis=1)
    table["series"] = pd.Series(
        [str((db.parent / s).resolve()) if isinstance(s, str) else None for s in table["series"]],
        index=table.index,
        dtype=object,
    )
    table["git_dirty"] = table["git_dirty"].astype("boolean")
    if len(params.columns):
        table = table.sort_values(["sweep", *params.columns, "seed"], kind="stable", na_position="last").reset_index(
            drop=True
        )
    if where:
        table = query(table, where)
    return table


REQUIRED = (
    "key",
    "sweep",
    "params",
    "seed",
    "status",
    "error",
    "build",
    "finished_at",
    "wall_s",
    "git_dirty",
    "series",
)
"""The columns every store has had; metrics and counters came and went with versions."""


def _json_column(db: Path, runs: pd.DataFrame, column: str) -> list[dict[str, object]]:
    """A column of JSON objects, decoded, or :class:`StoreError` naming the first run whose value is not one."""
    values: list[dict[str, object]] = []
    for key, text in zip(runs["key"], runs[column], strict=True):
        if column == "counters" and not isinstance(text, str):
            values.append({})
            continue
        try:
            value = json.loads(text)
        except (TypeError, ValueError) as e:
            raise StoreError(f"{db}: run {str(key)[:12]}: {column}: not JSON ({e}); the store is damaged") from None
        if not isinstance(value, dict):
            raise StoreError(f"{db}: run {str(key)[:12]}: {column}: expected a JSON object, found {text!r:.60}")
        values.append(value)
    return values


def counters(table: pd.DataFrame) -> pd.DataFrame:
    """The runs' counters (summed over nodes), one column per counter name,
    on the index of ``table``; zero where a run did not count it."""
    rows = [json.loads(c) if isinstance(c, str) else {} for c in table["counters"]]
    return pd.DataFrame(rows, index=table.index).fillna(0).astype("int64")


def param_columns(table: pd.DataFrame) -> list[str]:
    """The swept keys among a loaded table's columns."""
    return [c for c in table.columns if c not in COLUMNS]


def query(table: pd.DataFrame, where: str) -> pd.DataFrame:
    """Rows of ``table`` that satisfy an SQL condition (DuckDB dialect).

    The condition is parsed as one expression, never pasted into a query: a
    second statement (``1=1; COPY ... TO 'file'``) or a clause is refused by
    the parser. The connection has no file access either, so a subquery
    cannot read or write files: the condition sees the runs and nothing else.
    """
    import duckdb

    try:
        condition = duckdb.SQLExpression(where)
    except (duckdb.ParserException, duckdb.InvalidInputException) as e:
        raise ValueError(
            f"--where {where}: expected one SQL condition over the columns, such as \"status = 'ok'\" ({e})"
        ) from None
    con = duckdb.connect(config={"enable_external_access": False})
    try:
        con.register("runs", table)
        rows: pd.DataFrame = con.table("runs").filter(condition).df()
        return rows
    finally:
        con.close()


def series(db: str | os.PathLike[str], key: str) -> pd.DataFrame:
    """The time series of one run (a key or a unique key prefix), in long form."""
    table = load(db)
    match = table[table.key.str.startswith(key)]
    if len(match) != 1:
        raise KeyError(f"{key!r} matches {len(match)} runs")
    path = match.series.iloc[0]
    if path is None:
        raise KeyError(f"run {key} has no time series (status {match.status.iloc[0]})")
    return pd.read_parquet(path)


def export(table: pd.DataFrame, format: str, out: str | os.PathLike[str] | None) -> str | None:
    """Writes ``table`` in a format; returns the text instead when ``out`` is None."""
    if format not in FORMATS:
        raise ValueError(f"unknown format {format!r}; use one of {', '.join(FORMATS)}")
    if format == "parquet":
        if out is None:
            raise ValueError("parquet is binary: give --out FILE")
        write_atomically(out, lambda p: table.to_parquet(p, index=False))
        return None
    text = table.to_csv(index=False) if format == "csv" else table.to_json(orient="records", indent=1) + "\n"
    if out is None:
        return text
    write_atomically(out, lambda p: p.write_text(text))
    return None
