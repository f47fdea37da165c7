"""Snapshots of whole runs: every shipped scenario as written, and every run of
``ncmesh reproduce honc2012 --quick`` and ``ncmesh reproduce zhang2014 --quick``.

Runs are pure functions of scenario and seed, so a change to the simulator
that is meant to keep behaviour must leave these tables bit for bit. A change
that is meant to alter results regenerates them and says why in its commit:

    NCMESH_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/test_snapshots.py
"""

from __future__ import annotations

import json
import math
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from ncmesh.experiments import honc2012, zhang2014
from ncmesh.paths import scenario
from ncmesh.simulate import execute, load

SNAPSHOTS = Path(__file__).parent / "snapshots"
SHIPPED = [
    "bbr-link",
    "chain-5hop",
    "dumbbell",
    "honc-multi-path",
    "honc-single-path",
    "lossy-chain",
    "single-lossy-link",
    "tcpforward-tandem",
    "tcpforward-tandem-wifi",
    "wifi-hidden-pair",
    "wifi-line",
    "wifi-saturated-link",
    "wifi-x",
    "zhang2014-tandem",
]
UPDATE = os.environ.get("NCMESH_UPDATE_SNAPSHOTS") == "1"


def _plain(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "item"):
        return _plain(value.item())
    return value


def _digest(frame: Any, column: str) -> list[Any]:
    """A series kept as its length and sum: enough to notice any changed sample."""
    values = frame[column].to_numpy(dtype=float)
    return [len(values), _plain(float(values[~(values != values)].sum()))]


def _run(job: tuple[str, str, dict[str, Any], int | None]) -> tuple[str, dict[str, Any]]:
    label, name, overrides, seed = job
    result = execute(load(scenario(name), seed=seed, overrides=overrides))
    # The wireless channel's tables, where a run has one (older snapshots have neither key).
    channel = {
        table: [{k: _plain(v) for k, v in row.items()} for row in getattr(result, table).to_dict("records")]
        for table in ("radios", "pairs")
        if len(getattr(result, table))
    }
    return label, {
        **channel,
        "flows": [{k: _plain(v) for k, v in row.items()} for row in result.flows.to_dict("records")],
        "links": [{k: _plain(v) for k, v in row.items()} for row in result.links.to_dict("records")],
        "counters": {str(name): int(total) for name, total in result.counters.groupby("name").value.sum().items()},
        "series": {
            "goodput": _digest(result.goodput, "goodput_bps"),
            "queues": _digest(result.queues, "packets"),
            "cwnd": _digest(result.cwnd, "cwnd_bytes"),
        },
        "events": int(result.events),
    }


def _sweep_jobs(sweeps: list[Any]) -> list[tuple[str, str, dict[str, Any], int]]:
    jobs = []
    for sweep in sweeps:
        for point in sweep.points():
            for seed in sweep.seeds:
                label = f"{sweep.name} {json.dumps(point, sort_keys=True)} seed={seed}"
                jobs.append((label, sweep.scenario.stem, {**sweep.fixed, **point}, seed))
    return jobs


SETS = {
    "scenarios": lambda: [(name, name, {}, None) for name in SHIPPED],
    "honc2012-quick": lambda: _sweep_jobs(honc2012.sweeps(honc2012.Settings.of(True))),
    "zhang2014-quick": lambda: _sweep_jobs([zhang2014.model_sweep(zhang2014.Settings.of(True))]),
}


@pytest.mark.parametrize("name", list(SETS))
def test_runs_match_their_snapshot(name: str) -> None:
    jobs = SETS[name]()
    with ProcessPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
        got = dict(pool.map(_run, jobs))
    path = SNAPSHOTS / f"{name}.json"
    if UPDATE:
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    want = json.loads(path.read_text())
    assert sorted(got) == sorted(want), "the set of runs changed"
    changed = [
        label for label in want if json.dumps(got[label], sort_keys=True) != json.dumps(want[label], sort_keys=True)
    ]
    if changed:
        first = changed[0]
        diffs = [
            f"{part}[{i}].{k}: {w[k]!r} -> {g.get(k)!r}"
            for part in ("flows", "links")
            for i, (w, g) in enumerate(zip(want[first][part], got[first][part], strict=True))
            for k in w
            if w[k] != g.get(k)
        ]
        diffs += [
            f"counters.{k}: {v!r} -> {got[first]['counters'].get(k)!r}"
            for k, v in want[first]["counters"].items()
            if got[first]["counters"].get(k) != v
        ]
        detail = (
            "; ".join(diffs[:8])
            or f"series/events {want[first]['series']} {want[first]['events']} "
            f"-> {got[first]['series']} {got[first]['events']}"
        )
        pytest.fail(f"{len(changed)} of {len(want)} runs differ from {path.name}; first: {first}: {detail}")
