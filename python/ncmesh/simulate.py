"""Running a scenario: :func:`run` and the :class:`RunResult` it returns."""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

import pandas as pd

from . import _native
from ._native import ScenarioError
from .files import write_atomically

ScenarioLike = Union[str, "os.PathLike[str]", Mapping[str, Any]]
"""A scenario file path, TOML text, or the same document as a dictionary."""

Progress = Callable[[float, float, int], None]
"""Called as ``progress(simulated_s, duration_s, events)`` between slices of a run."""


def toml_literal(value: Any) -> str:
    """A Python value as a TOML value, for overrides."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"cannot use {value} in a scenario")
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_literal(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {toml_literal(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot use a {type(value).__name__} in a scenario")


def load(
    scenario: ScenarioLike,
    *,
    seed: int | None = None,
    overrides: Mapping[str, Any] | None = None,
    toml_overrides: Sequence[tuple[str, str]] = (),
) -> _native.Simulation:
    """Parses and validates a scenario, ready to run.

    ``overrides`` maps dotted keys (``"link_class.wireless.loss"``,
    ``"links.0.loss"``) to Python values; ``toml_overrides`` gives the values
    as TOML text, as ``--set key=value`` does. Raises :class:`ScenarioError`
    naming the key and line of anything wrong.
    """
    pairs = [(k, toml_literal(v)) for k, v in (overrides or {}).items()] + list(toml_overrides)
    if seed is not None:
        pairs.append(("seed", toml_literal(int(seed))))
    if isinstance(scenario, Mapping):
        return _native.Simulation(json.dumps(scenario), origin="<dict>", format="json", overrides=pairs)
    if isinstance(scenario, os.PathLike) or (isinstance(scenario, str) and "\n" not in scenario):
        path = Path(scenario)
        try:
            text = path.read_text()
        except OSError as e:
            raise ScenarioError(f"{path}: cannot read the scenario: {e.strerror}") from None
        return _native.Simulation(text, origin=str(path), format="toml", overrides=pairs)
    return _native.Simulation(scenario, origin="<text>", format="toml", overrides=pairs)


@dataclass
class RunResult:
    """What one run measured. Every table is a pandas DataFrame."""

    flows: pd.DataFrame
    """One row per flow: goodput, delay statistics, retransmissions."""
    links: pd.DataFrame
    """One row per link direction: transmissions, losses, queue drops."""
    goodput: pd.DataFrame
    """``time_s, flow, goodput_bps`` per probe interval."""
    queues: pd.DataFrame
    """``time_s, from, to, packets`` for the probed interfaces."""
    cwnd: pd.DataFrame
    """``time_s, flow, cwnd_bytes`` when probed."""
    rtt: pd.DataFrame
    """``time_s, flow, srtt_s`` when probed."""
    fairness: float
    """Jain's index over the flows' goodputs."""
    events: int
    sim_time_s: float
    wall_s: float
    scenario: str
    """The resolved scenario that ran, as TOML."""

    def summary(self) -> dict[str, Any]:
        """The run as one JSON-ready object (what ``ncmesh run --json`` prints)."""
        columns = ["id", "goodput_bps", "delay_mean_s", "delay_std_s", "delay_p95_s"]
        flows = [{k: _plain(v) for k, v in row.items()} for row in self.flows[columns].to_dict("records")]
        return {
            "flows": flows,
            "fairness": _plain(self.fairness),
            "events": self.events,
            "sim_time_s": self.sim_time_s,
            "wall_s": self.wall_s,
        }

    def write(self, out: str | os.PathLike[str]) -> list[Path]:
        """Writes every table as Parquet and CSV, and the resolved scenario, into ``out``."""
        out = Path(out)
        written = []
        for name in ("flows", "links", "goodput", "queues", "cwnd", "rtt"):
            frame: pd.DataFrame = getattr(self, name)
            written.append(write_atomically(out / f"{name}.parquet", lambda p, f=frame: f.to_parquet(p, index=False)))
            written.append(write_atomically(out / f"{name}.csv", lambda p, f=frame: f.to_csv(p, index=False)))
        written.append(write_atomically(out / "scenario.toml", lambda p: p.write_text(self.scenario)))
        written.append(write_atomically(out / "summary.json", lambda p: p.write_text(json.dumps(self.summary(), indent=2) + "\n")))
        return written


def _plain(v: Any) -> Any:
    """NaN becomes None so that JSON stays standard."""
    if isinstance(v, float) and math.isnan(v):
        return None
    if hasattr(v, "item"):
        return _plain(v.item())
    return v


def _series(raw: dict[str, list], columns: tuple[str, ...]) -> pd.DataFrame:
    frame = pd.DataFrame({"time_s": raw["time_s"], columns[0]: raw["key"]})
    if len(columns) == 3:
        frame[columns[1]] = raw["key2"]
    frame[columns[-1]] = pd.Series(raw["value"], dtype="float64")
    return frame


def execute(simulation: _native.Simulation, progress: Progress | None = None, slices: int = 200) -> RunResult:
    """Runs a loaded simulation to its end, calling ``progress`` between slices."""
    started = time.perf_counter()
    duration = simulation.duration_s
    if progress is None:
        simulation.run_until(duration)
    else:
        for i in range(1, slices + 1):
            simulation.run_until(duration * i / slices)
            progress(simulation.now_s, duration, simulation.events)
    scenario = simulation.resolved_toml()
    raw = json.loads(simulation.finish())
    wall = time.perf_counter() - started
    flows = pd.DataFrame(raw["flows"])
    for column in flows.columns:
        if column.startswith("delay") or column == "completion_s":
            flows[column] = flows[column].astype("float64")
    return RunResult(
        flows=flows,
        links=pd.DataFrame(raw["links"]),
        goodput=_series(raw["goodput"], ("flow", "goodput_bps")),
        queues=_series(raw["queues"], ("from", "to", "packets")),
        cwnd=_series(raw["cwnd"], ("flow", "cwnd_bytes")),
        rtt=_series(raw["rtt"], ("flow", "srtt_s")),
        fairness=float("nan") if raw["fairness"] is None else raw["fairness"],
        events=raw["events"],
        sim_time_s=raw["sim_time_s"],
        wall_s=wall,
        scenario=scenario,
    )


def run(
    scenario: ScenarioLike,
    *,
    seed: int | None = None,
    progress: Progress | None = None,
    overrides: Mapping[str, Any] | None = None,
    **settings: Any,
) -> RunResult:
    """Runs a scenario and returns what it measured.

    Keyword arguments override scenario keys; ``__`` stands for a dot, so
    ``run("chain.toml", link_class__hop__loss=0.05, duration=60)`` sets
    ``link_class.hop.loss`` and ``duration``. ``overrides`` takes dotted keys
    directly. A run is a pure function of the resolved scenario and seed.
    """
    merged = dict(overrides or {})
    merged.update({k.replace("__", "."): v for k, v in settings.items()})
    return execute(load(scenario, seed=seed, overrides=merged), progress)


def scenario_schema() -> dict[str, Any]:
    """The JSON Schema of scenario files."""
    return json.loads(_native.scenario_schema())
