"""The sweep report: one HTML page to explore a results store, that opens offline.

Python reads the store (:mod:`ncmesh.results`), summarizes every point of
every sweep over its seeds (:mod:`ncmesh.stats`), and writes that, with each
run's metrics and time series, as JSON into the page. ``page.js`` draws it
with Plotly, whose script is embedded as well: the file can be mailed,
attached to an issue or archived, and it opens with no network and nothing
beside it. Gains over a baseline are paired per seed in the page, because
every axis value can be the baseline and precomputing them all would not fit.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import math
import os
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..files import write_atomically
from ..results import load, param_columns
from ..stats import COUNT, FEW_SEEDS, LEVEL, RATIO, UNIT, Scale, summarize, t_quantile
from ..store import METRICS

SCALES: dict[str, Scale] = {
    "throughput_bps": RATIO,
    "goodput_mean_bps": RATIO,
    "goodput_min_bps": RATIO,
    "delay_mean_s": RATIO,
    "delay_std_s": RATIO,
    "delay_p50_s": RATIO,
    "delay_p95_s": RATIO,
    "delay_p99_s": RATIO,
    "completion_s": RATIO,
    "fairness": UNIT,
    "delivered_bytes": RATIO,
    "acked_bytes": RATIO,
    "packets_sent": RATIO,
    "retransmits": COUNT,
    "timeouts": COUNT,
    "link_losses": COUNT,
    "queue_drops": COUNT,
    "events": RATIO,
}
"""How each metric is summarized over seeds (see ncmesh.stats)."""

SERIES_LABELS = {
    "goodput_bps": ("goodput (kbit/s)", 1e-3),
    "cwnd_bytes": ("cwnd (kB)", 1e-3),
    "queue_packets": ("queue (packets)", 1.0),
    "srtt_s": ("smoothed RTT (ms)", 1e3),
}
"""The time series a run may record, in the order they are drawn, with their units."""

SERIES_BUDGET_BYTES = 3_000_000
"""The most the time series may add to a page; longer ones are averaged down to fit."""
MOST_POINTS, LEAST_POINTS = 400, 10
"""How many points a line of a time series keeps at most, and at least when the budget is tight."""

MAX_LISTED_FAILURES = 100
"""Failed runs named at the top of the page; the table of runs has them all."""


class ReportError(ValueError):
    """A store or an option the report cannot be made from; the message says which and why."""


@dataclass
class Axis:
    """Keys of one sweep that vary together (one key, or a [[zip]] group) and the values they take, in order."""

    keys: list[str]
    levels: list[tuple[Any, ...]]
    numeric: bool

    @property
    def name(self) -> str:
        return " / ".join(self.keys)

    def label(self, value: tuple[Any, ...]) -> str:
        return " / ".join(_show(v) for v in value)


def build(db: str | os.PathLike[str], run: str | None = None, baseline: str | None = None) -> str:
    """The report as HTML text.

    ``run`` is a key or key prefix of the run whose time series the page
    opens with; ``baseline`` is ``KEY=VALUE``, the axis value every other is
    compared with, per seed, in the sweeps that have it.
    """
    table = load(db)
    if table.empty:
        raise ReportError(f"{db}: the store holds no runs")
    data = payload(table, run, baseline)
    data["title"] = Path(db).name
    return _page(table, data)


def write(
    db: str | os.PathLike[str], out: str | os.PathLike[str], run: str | None = None, baseline: str | None = None
) -> Path:
    text = build(db, run, baseline)
    return write_atomically(out, lambda p: p.write_text(text, encoding="utf-8"))


def payload(table: pd.DataFrame, run: str | None = None, baseline: str | None = None) -> dict[str, Any]:
    """What the page draws, as JSON-ready data: sweeps, their points and statistics, runs, series."""
    params = param_columns(table)
    table = table.reset_index(drop=True)
    point_of = pd.Series([None] * len(table), dtype=object)
    at = pd.Series([""] * len(table), dtype=object)
    sweeps = []
    for name, runs in table.groupby("sweep", sort=True):
        sweep, points, where = _sweep(str(name), runs, params)
        point_of.loc[points.index] = points.tolist()
        at.loc[where.index] = where
        sweeps.append(sweep)
    if baseline is not None:
        _choose_baseline(sweeps, baseline)
    metrics = [m for m in METRICS if any(m in s["metrics"] for s in sweeps)]
    selected = _choose_run(table, run)
    return {
        "generated": f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC",
        "level": LEVEL,
        "fewSeeds": FEW_SEEDS,
        "t": [None, *(t_quantile(df) for df in range(1, max(2, _most_seeds(sweeps))))],
        "metrics": [_metric(m) for m in metrics],
        "seriesLabels": {k: {"label": label, "scale": scale} for k, (label, scale) in SERIES_LABELS.items()},
        "sweeps": sweeps,
        "runs": {
            "key": table.key.tolist(),
            "sweep": table.sweep.tolist(),
            "seed": table.seed.tolist(),
            "status": table.status.tolist(),
            "error": [e if isinstance(e, str) else None for e in table.error],
            "point": point_of.tolist(),
            "at": at.tolist(),
            "wall": _numbers(table.wall_s),
            "values": {m: _numbers(table[m]) for m in metrics},
            "series": _series_of(table),
        },
        "selected": selected,
    }


# ---------------------------------------------------------------- sweeps and points


def axes_of(runs: pd.DataFrame, params: list[str]) -> list[Axis]:
    """The axes of one sweep's runs: keys with more than one value, zipped keys merged.

    The store keeps each run's parameter values, not the sweep file, so a
    [[zip]] group is recognised by its values: a key whose value follows
    from another's (or the other way round) adds no dimension to the grid,
    as ``tcp.variant`` follows from ``coding.scheme`` in the seed papers'
    reproductions. Crossed axes never do: they have more pairs than values.
    """
    labels = {p: runs[p].map(_hashable) for p in params if runs[p].notna().any()}
    varying = [p for p, values in labels.items() if len(set(values)) > 1]
    groups: list[list[str]] = []
    for key in varying:
        for group in groups:
            together = pd.Series(list(zip(*(labels[k] for k in group), strict=True)), index=runs.index)
            pairs = pd.DataFrame({"group": together, "key": labels[key]}).drop_duplicates()
            if len(pairs) == max(together.nunique(dropna=False), labels[key].nunique(dropna=False)):
                group.append(key)
                break
        else:
            groups.append([key])
    axes = []
    for keys in groups:
        combos = pd.DataFrame({k: labels[k] for k in keys}).drop_duplicates()
        levels = [tuple(row) for row in combos.itertuples(index=False)]
        numeric = len(keys) == 1 and all(_is_number(v[0]) for v in levels)
        levels.sort(key=(lambda v: v[0]) if numeric else (lambda v: tuple(_show(x) for x in v)))
        axes.append(Axis(keys, levels, numeric))
    return axes


def _sweep(name: str, runs: pd.DataFrame, params: list[str]) -> tuple[dict[str, Any], pd.Series, pd.Series]:
    """One sweep's axes and points; the point of each of its runs that counts (None otherwise), and
    each run's axis values as text.

    A run counts once per point and seed: when a store holds several (a
    sweep run again after a rebuild), the latest one. Null runs have no
    metrics and belong to no point.
    """
    axes = axes_of(runs, params)
    index_of = [{v: i for i, v in enumerate(axis.levels)} for axis in axes]
    coordinates = pd.Series(
        [
            tuple(
                index[tuple(_hashable(row[k]) for k in axis.keys)] for axis, index in zip(axes, index_of, strict=True)
            )
            for _, row in runs.iterrows()
        ],
        index=runs.index,
        dtype=object,
    )
    where = coordinates.map(
        lambda c: ", ".join(f"{axis.name}={axis.label(axis.levels[v])}" for axis, v in zip(axes, c, strict=True))
    )
    counting = runs[runs.status != "null"].assign(_at=coordinates)
    latest = counting.sort_values("finished_at", kind="stable").drop_duplicates(["_at", "seed"], keep="last")
    superseded = len(counting) - len(latest)
    at = sorted(set(latest._at))
    number = {c: i for i, c in enumerate(at)}
    point_of = pd.Series([None] * len(runs), index=runs.index, dtype=object)
    point_of.loc[latest.index] = [number[c] for c in latest._at]

    ok = latest[latest.status == "ok"]
    metrics = [m for m in METRICS if m in ok.columns and ok[m].notna().any()]
    by_point = dict(list(latest.groupby("_at", sort=False)))
    points: dict[str, Any] = {"at": [list(c) for c in at], "runs": [], "failed": [], "stats": {m: [] for m in metrics}}
    for c in at:
        group = by_point[c]
        good = group[group.status == "ok"]
        points["runs"].append(good.index.tolist())
        points["failed"].append(group.index[group.status == "failed"].tolist())
        for m in metrics:
            s = summarize(good[m].astype(float), SCALES[m])
            points["stats"][m].append([_number(s.center), _number(s.low), _number(s.high), s.n, s.method])
    sweep = {
        "name": name,
        "axes": [
            {
                "name": axis.name,
                "keys": axis.keys,
                "numeric": axis.numeric,
                "values": [axis.label(v) for v in axis.levels],
                "raw": [list(v) for v in axis.levels],
            }
            for axis in axes
        ],
        "metrics": metrics,
        "points": points,
        "superseded": superseded,
        "baseline": _default_baseline(axes),
    }
    return sweep, point_of, where


def _default_baseline(axes: list[Axis]) -> list[int] | None:
    """Plain TCP, when the sweep compares coding schemes: ``coding.scheme = "none"``."""
    for a, axis in enumerate(axes):
        if "coding.scheme" in axis.keys:
            k = axis.keys.index("coding.scheme")
            for v, value in enumerate(axis.levels):
                if value[k] == "none":
                    return [a, v]
    return None


def _choose_baseline(sweeps: list[dict[str, Any]], baseline: str) -> None:
    """Sets ``--baseline KEY=VALUE`` in every sweep that has that key as an axis, or says why it cannot."""
    key, sep, text = baseline.partition("=")
    key, text = key.strip(), text.strip()
    if not sep or not key or not text:
        raise ReportError(f"--baseline {baseline}: expected KEY=VALUE, such as coding.scheme=none")
    try:
        value: Any = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        value = text  # a bare word: a string
    found = []
    for sweep in sweeps:
        for a, axis in enumerate(sweep["axes"]):
            if key in axis["keys"]:
                k = axis["keys"].index(key)
                values = [raw[k] for raw in axis["raw"]]
                found.append((sweep, a, values))
    if not found:
        axes = sorted({k for s in sweeps for axis in s["axes"] for k in axis["keys"]})
        raise ReportError(f"--baseline {baseline}: {key} is not an axis of any sweep; the axes are {', '.join(axes)}")
    matched = False
    for sweep, a, values in found:
        hits = [v for v, x in enumerate(values) if _same(x, value)]
        if hits:
            sweep["baseline"] = [a, hits[0]]
            matched = True
    if not matched:
        known = sorted({_show(x) for _, _, values in found for x in values})
        raise ReportError(f"--baseline {baseline}: {key} never takes that value; it takes {', '.join(known)}")


def _most_seeds(sweeps: list[dict[str, Any]]) -> int:
    return max((len(r) for s in sweeps for r in s["points"]["runs"]), default=1)


def _metric(name: str) -> dict[str, Any]:
    scale = SCALES[name]
    return {
        "name": name,
        "description": METRICS[name],
        "log": scale.log,
        "low": _number(scale.low),
        "high": _number(scale.high),
    }


# ---------------------------------------------------------------- runs and their time series


def _choose_run(table: pd.DataFrame, run: str | None) -> int | None:
    """The row whose time series the page opens with: ``--run``, or the first successful run."""
    if run is None:
        candidates = table.index[(table.status == "ok") & table.series.notna()]
        return int(candidates[0]) if len(candidates) else None
    match = table.index[table.key.str.startswith(run)]
    if len(match) != 1:
        hint = "" if len(match) else "; see ncmesh results DB for keys"
        raise ReportError(f"--run {run}: matches {len(match)} runs{hint}")
    chosen = table.loc[match[0]]
    if chosen.status != "ok":
        raise ReportError(f"--run {run}: that run {chosen.status}" + (f": {chosen.error}" if chosen.error else ""))
    return int(match[0])


def _series_of(table: pd.DataFrame) -> list[dict[str, Any] | None]:
    """Each run's time series, averaged down to as many points per line as the budget allows."""
    runs = [
        _lines(path) if status == "ok" and isinstance(path, str) and Path(path).is_file() else None
        for path, status in zip(table.series, table.status, strict=True)
    ]
    most = MOST_POINTS
    while True:
        compact = [None if lines is None else _compact(lines, most) for lines in runs]
        size = len(json.dumps(compact, separators=(",", ":")))
        if size <= SERIES_BUDGET_BYTES or most <= LEAST_POINTS:
            return compact
        most = max(LEAST_POINTS, int(most * 0.9 * SERIES_BUDGET_BYTES / size))


Line = tuple[str, str, np.ndarray, np.ndarray]
"""One line of a run's time series: its kind, its name, its times and its values."""


def _lines(path: str) -> list[Line]:
    """The lines of one run's Parquet file: one per kind and flow (or per interface, for queues)."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    kinds = table.column("series").to_numpy(zero_copy_only=False)
    time, value = (table.column(c).to_numpy(zero_copy_only=False).astype(float) for c in ("time_s", "value"))
    # flow, from and to name a line; NaN (not this kind's) becomes -1 so that lines can be told apart
    names = np.column_stack(
        [
            np.nan_to_num(table.column(c).to_numpy(zero_copy_only=False).astype(float), nan=-1)
            for c in ("flow", "from", "to")
        ]
    )
    lines = []
    for kind in SERIES_LABELS:
        rows = np.flatnonzero(kinds == kind)
        if not len(rows):
            continue
        keys, which = np.unique(names[rows], axis=0, return_inverse=True)
        for j, (flow, src, dst) in enumerate(keys):
            mine = rows[which.ravel() == j]
            mine = mine[np.argsort(time[mine], kind="stable")]
            name = f"{int(src)}->{int(dst)}" if kind == "queue_packets" else f"flow {int(flow)}"
            lines.append((kind, name, time[mine], value[mine]))
    return lines


def _compact(lines: list[Line], most: int) -> dict[str, Any]:
    """A run's lines at most ``most`` points each (means of consecutive samples), 4 significant digits.

    Probes sample every line at the same instants, so the times are written
    once for the run when they agree.
    """
    shrunk = [(kind, name, *_average_down(t, v, most)) for kind, name, t, v in lines]
    shared = all(len(t) == len(shrunk[0][2]) and np.array_equal(t, shrunk[0][2]) for _, _, t, _ in shrunk)
    out: dict[str, Any] = {"t": _rounded(shrunk[0][2]) if shrunk and shared else None, "lines": []}
    for kind, name, t, v in shrunk:
        line = {"kind": kind, "name": name, "v": _rounded(v)}
        if not shared:
            line["t"] = _rounded(t)
        out["lines"].append(line)
    return out


def _average_down(t: np.ndarray, v: np.ndarray, most: int) -> tuple[np.ndarray, np.ndarray]:
    """``most`` means of consecutive samples (buckets differ in size by one at most)."""
    if len(t) <= most:
        return t, v
    starts = np.arange(most) * len(t) // most
    sizes = np.diff(np.append(starts, len(t)))
    return np.add.reduceat(t, starts) / sizes, np.add.reduceat(v, starts) / sizes


def _rounded(values: np.ndarray, digits: int = 4) -> list[float | int | None]:
    """Values to ``digits`` significant digits of the largest, so the JSON stays short."""
    finite = np.abs(values[np.isfinite(values)])
    top = finite.max() if len(finite) else 0.0
    decimals = digits - 1 - math.floor(math.log10(top)) if top > 0 else 0
    rounded = np.round(values, decimals)
    if decimals <= 0:
        return [int(x) if math.isfinite(x) else None for x in rounded]
    return [float(x) if math.isfinite(x) else None for x in rounded]


# ---------------------------------------------------------------- the page


_CSS_FILE = "page.css"
_SCRIPT_FILE = "page.js"


def _page(table: pd.DataFrame, data: dict[str, Any]) -> str:
    from plotly.offline import get_plotlyjs

    counts = table.status.value_counts().to_dict()
    builds = ", ".join(sorted(table.build.unique()))
    level = f"{LEVEL:.0%}"
    head = (
        f"<h1>Sweep report: {html.escape(data['title'])}</h1>"
        f"<p class='note'>{len(table)} runs ({', '.join(f'{n} {s}' for s, n in sorted(counts.items()))}); "
        f"generated {data['generated']}; builds {html.escape(builds)}.</p>"
    )
    method = (
        "<details class='method'><summary>How the points and intervals are computed</summary>"
        "<p>A point is one combination of axis values; its seeds are the successful runs there. "
        f"Ratio-scale metrics (throughput, delays, bytes) are drawn as the <b>geometric mean</b> over seeds with a "
        f"{level} Student t interval computed on the logarithms, which stays above zero and is as skewed as the "
        "data. Counts that are often zero (retransmits, timeouts, losses, drops) and fairness are drawn as the "
        f"arithmetic mean with a {level} Student t interval cut to the metric's bounds. A point with one seed has "
        f"no interval; open markers have fewer than {FEW_SEEDS} seeds, whose intervals say little, and the "
        "axes are scaled to leave their intervals out. × marks a point where runs failed: it holds only the "
        "seeds that succeeded.</p>"
        "<p>Against a baseline, each run is paired with the baseline run of the same seed and the same other "
        "axis values. Ratio-scale metrics give the ratio of the two (1 = no change), summarized like a "
        "ratio-scale metric; the others give the difference (0 = no change). The CDF shows every paired seed.</p>"
        "</details>"
    )
    body = (
        head
        + _failures(table)
        + method
        + "<div id='report'><noscript>This report draws its plots with JavaScript.</noscript></div>"
    )
    text = json.dumps(data, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>ncmesh sweep report: {html.escape(data['title'])}</title>"
        f"<style>{_asset(_CSS_FILE)}</style></head><body>{body}"
        f"<script type='application/json' id='report-data'>{text}</script>"
        f"<script>{get_plotlyjs()}</script><script>{_asset(_SCRIPT_FILE)}</script></body></html>\n"
    )


def _failures(table: pd.DataFrame) -> str:
    """The failed runs, named with their errors, at the top of the page where nobody misses them."""
    failed = table[table.status == "failed"]
    if failed.empty:
        return ""
    params = param_columns(table)
    items = []
    for _, row in failed.head(MAX_LISTED_FAILURES).iterrows():
        at = ", ".join(f"{p}={_show(row[p])}" for p in params if _present(row[p]))
        items.append(
            f"<li><code>{html.escape(row.key[:12])}</code> {html.escape(str(row.sweep))}, {html.escape(at)}, "
            f"seed {row.seed}: <span class='error'>{html.escape(str(row.error or 'no message'))}</span></li>"
        )
    more = len(failed) - MAX_LISTED_FAILURES
    rest = f"<li>and {more} more, in the table of runs</li>" if more > 0 else ""
    return (
        f"<div class='failures'><p><b>{len(failed)} run{'s' if len(failed) > 1 else ''} failed.</b> "
        "Their points are marked × and summarize only the seeds that succeeded.</p>"
        f"<ul>{''.join(items)}{rest}</ul></div>"
    )


def _asset(name: str) -> str:
    return (resources.files(__package__) / name).read_text(encoding="utf-8")


# ---------------------------------------------------------------- values


def _hashable(value: Any) -> Any:
    """A parameter value as a dict key: lists and tables as their JSON text, missing as None."""
    if isinstance(value, (list, dict)):
        return json.dumps(value, sort_keys=True)
    if isinstance(value, float) and math.isnan(value):
        return None
    return value.item() if isinstance(value, np.generic) else value


def _present(value: Any) -> bool:
    return _hashable(value) is not None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _same(a: Any, b: Any) -> bool:
    if _is_number(a) and _is_number(b):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)
    return a == b or _show(a) == _show(b)


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "(unset)"
    return str(value)


def _number(x: float) -> float | None:
    """JSON has no NaN nor infinity; the page reads null as either, by context."""
    return float(x) if math.isfinite(x) else None


def _numbers(column: pd.Series) -> list[float | None]:
    return [_number(float(x)) if x is not None and not pd.isna(x) else None for x in column]
