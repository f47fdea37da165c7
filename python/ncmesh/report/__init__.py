"""One self-contained HTML page from a results store.

Every plot is a PNG embedded as base64, so the page can be mailed, attached
to an issue or archived with no directory beside it.
"""

from __future__ import annotations

import base64
import datetime as dt
import html
import io
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from .files import write_atomically
from .results import load, param_columns
from .store import METRICS

SERIES_LABELS = {
    "goodput_bps": ("goodput (kbit/s)", 1e-3),
    "queue_packets": ("queue (packets)", 1.0),
    "cwnd_bytes": ("cwnd (kB)", 1e-3),
    "srtt_s": ("smoothed RTT (ms)", 1e3),
}

_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 2em; }
img { max-width: 100%; display: block; margin: .5em 0 1.5em; }
table { border-collapse: collapse; font-size: 12px; }
th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: right; white-space: nowrap; }
th { background: #f3f3f3; position: sticky; top: 0; }
td.failed { color: #b00; } .note { color: #555; } code { background: #f3f3f3; padding: 0 .2em; }
.scroll { overflow: auto; max-height: 40em; }
"""


def mean_ci(values: pd.Series, level: float = 0.95) -> tuple[float, float, int]:
    """Mean and half-width of its Student t confidence interval over seeds.

    The half-width is NaN for a single seed: one sample says nothing about
    the spread, and drawing no bar is more honest than drawing a zero one.
    """
    from scipy import stats

    values = values.dropna().astype(float)
    n = len(values)
    if n == 0:
        return math.nan, math.nan, 0
    mean = float(values.mean())
    if n == 1:
        return mean, math.nan, 1
    half = float(stats.t.ppf(0.5 + level / 2, n - 1) * values.std(ddof=1) / math.sqrt(n))
    return mean, half, n


def png(fig: Figure) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _numeric(values: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)


def _label(values: dict[str, Any]) -> str:
    return ", ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in values.items())


def metric_figure(runs: pd.DataFrame, metric: str, axes: list[str]) -> Figure:
    """``metric`` against each axis, one line per combination of the other axes."""
    fig = Figure(figsize=(5.2 * len(axes), 3.6), layout="constrained")
    for i, axis in enumerate(axes):
        ax = fig.add_subplot(1, len(axes), i + 1)
        others = [a for a in axes if a != axis]
        groups = runs.groupby(others, dropna=False, sort=True) if others else [((), runs)]
        x_values = sorted(runs[axis].dropna().unique(), key=lambda v: (str(type(v)), v))
        numeric = _numeric(runs[axis])
        positions = {v: (float(v) if numeric else j) for j, v in enumerate(x_values)}
        lines = 0
        for key, group in groups:
            key = key if isinstance(key, tuple) else (key,)
            stats = [(positions[x], *mean_ci(g[metric])) for x, g in group.groupby(axis, sort=True)]
            stats = [s for s in stats if s[3] > 0]
            if not stats:
                continue
            xs, means, halves, _ = map(np.array, zip(*stats, strict=True))
            offset = 0.0 if numeric else (lines - 0.5 * (len(groups) - 1)) * 0.06
            label = _label(dict(zip(others, key, strict=True))) if others else None
            line = ax.errorbar(
                xs + offset, means, yerr=np.where(np.isnan(halves), 0, halves), marker="o", ms=4, capsize=3, label=label
            )
            if numeric and np.isfinite(halves).any():
                ax.fill_between(
                    xs,
                    means - np.nan_to_num(halves),
                    means + np.nan_to_num(halves),
                    alpha=0.12,
                    color=line[0].get_color(),
                )
            lines += 1
        if not numeric:
            ax.set_xticks(list(positions.values()), [str(v) for v in positions])
        finite = runs[metric].dropna()
        if len(finite) and (finite > 0).all() and finite.max() / finite.min() > 1e3:
            ax.set_yscale("log")
        ax.set(xlabel=axis, ylabel=metric, title=f"{metric} against {axis.rsplit('.', 1)[-1]}")
        ax.grid(alpha=0.3)
        if others and lines > 1:
            ax.legend(fontsize=7, title=", ".join(o.rsplit(".", 1)[-1] for o in others), title_fontsize=7)
    return fig


def series_figure(series: pd.DataFrame, title: str) -> Figure | None:
    kinds = [k for k in SERIES_LABELS if k in set(series["series"])]
    if not kinds:
        return None
    fig = Figure(figsize=(10, 2.6 * len(kinds)), layout="constrained")
    for i, kind in enumerate(kinds):
        ax = fig.add_subplot(len(kinds), 1, i + 1)
        label, scale = SERIES_LABELS[kind]
        part = series[series["series"] == kind]
        by = ["from", "to"] if kind == "queue_packets" else ["flow"]
        for key, g in part.groupby(by, dropna=False):
            key = key if isinstance(key, tuple) else (key,)
            name = f"{key[0]}->{key[1]}" if kind == "queue_packets" else f"flow {key[0]}"
            ax.plot(g.time_s, g.value * scale, lw=1.2, label=name)
        ax.set(ylabel=label, xlabel="simulated time (s)" if i == len(kinds) - 1 else None)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper right")
    fig.suptitle(title, fontsize=10)
    return fig


def _img(fig: Figure, alt: str) -> str:
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{png(fig)}">'


def _runs_table(table: pd.DataFrame, params: list[str], metrics: list[str]) -> str:
    columns = ["key", "sweep", *params, "seed", "status", *metrics, "wall_s", "error"]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    rows = []
    for record in table[columns].to_dict("records"):
        cells = []
        for c in columns:
            v = record[c]
            if c == "key":
                text = v[:12]
            elif v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
                text = ""
            elif isinstance(v, float):
                text = f"{v:.4g}"
            else:
                text = str(v)
            cls = ' class="failed"' if record["status"] == "failed" and c in ("status", "error") else ""
            cells.append(f"<td{cls}>{html.escape(text)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'


def build(db: str | os.PathLike[str], run: str | None = None) -> str:
    """The report as HTML text. ``run`` is a key or key prefix for the time-series section."""
    table = load(db)
    if table.empty:
        raise ValueError(f"{db}: the store holds no runs")
    params = param_columns(table)
    ok = table[table.status == "ok"]
    metrics = [m for m in METRICS if m in table.columns and ok[m].notna().any()]
    counts = table.status.value_counts().to_dict()
    parts = [
        f"<h1>Sweep report: {html.escape(Path(db).name)}</h1>",
        f'<p class="note">{len(table)} runs ({", ".join(f"{n} {s}" for s, n in sorted(counts.items()))}); '
        f"generated {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M UTC}; "
        f"builds {html.escape(', '.join(sorted(table.build.unique())))}. "
        "Points are means over seeds; bars and bands are 95% confidence intervals (Student t), "
        "absent where there is one seed.</p>",
    ]

    for sweep, runs in ok.groupby("sweep", sort=True):
        axes = [p for p in params if runs[p].notna().any() and runs[p].nunique() > 1]  # noqa: PD101 (NaN is no value)
        seeds = runs.groupby(axes, dropna=False).size() if axes else pd.Series([len(runs)])
        parts.append(
            f"<h2>{html.escape(str(sweep))}</h2><p class='note'>axes: {html.escape(', '.join(axes) or 'none')}; "
            f"{seeds.min()}-{seeds.max()} seeds per point</p>"
        )
        if not axes:
            continue
        for metric in metrics:
            if runs[metric].notna().any():
                parts.append(f"<h3>{html.escape(metric)}</h3><p class='note'>{html.escape(METRICS[metric])}</p>")
                parts.append(_img(metric_figure(runs, metric, axes), f"{metric} against {', '.join(axes)}"))

    chosen = _choose_run(table, run)
    parts.append("<h2>Time series</h2>")
    if chosen is None:
        parts.append("<p>No successful run to plot.</p>")
    else:
        described = ", ".join(f"{p}={chosen[p]}" for p in params if pd.notna(chosen[p]))
        title = f"run {chosen.key[:12]} ({chosen.sweep}; {described}; seed {chosen.seed})"
        series = pd.read_parquet(chosen.series) if isinstance(chosen.series, str) else pd.DataFrame({"series": []})
        fig = series_figure(series, title)
        parts.append(f"<p class='note'>{html.escape(title)}. Choose another with <code>--run KEY</code>.</p>")
        parts.append(_img(fig, f"time series of {chosen.key}") if fig else "<p>This run recorded no time series.</p>")

    parts.append("<h2>Runs</h2>")
    parts.append(_runs_table(table, params, metrics))
    return (
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>ncmesh sweep report</title>"
        f"<style>{_CSS}</style></head><body>{''.join(parts)}</body></html>\n"
    )


def _choose_run(table: pd.DataFrame, run: str | None) -> Any:
    if run is None:
        candidates = table[(table.status == "ok") & table.series.notna()]
        return candidates.iloc[0] if len(candidates) else None
    match = table[table.key.str.startswith(run)]
    if len(match) != 1:
        raise KeyError(
            f"--run {run}: matches {len(match)} runs" + ("" if len(match) else "; see ncmesh results DB for keys")
        )
    chosen = match.iloc[0]
    if chosen.status != "ok":
        raise KeyError(f"--run {run}: that run {chosen.status}" + (f": {chosen.error}" if chosen.error else ""))
    return chosen


def write(db: str | os.PathLike[str], out: str | os.PathLike[str], run: str | None = None) -> Path:
    text = build(db, run)
    return write_atomically(out, lambda p: p.write_text(text))
