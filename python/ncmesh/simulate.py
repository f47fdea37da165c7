"""Running a scenario: :func:`run` and the :class:`RunResult` it returns."""

from __future__ import annotations

import json
import math
import numbers
import os
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union, cast

from . import _native
from ._native import ScenarioError as ScenarioError  # re-exported: the error of load and run
from .files import InputFileError, read_text, write_atomically

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

ScenarioLike = Union[str, "os.PathLike[str]", Mapping[str, Any]]
"""A scenario file path, TOML text, or the same document as a dictionary."""

Progress = Callable[[float, float, int], None]
"""Called as ``progress(simulated_s, duration_s, events)`` between slices of a run."""


MAX_SEED = 2**63 - 1
"""The largest seed: scenario files are TOML, whose integers are signed 64-bit,
and the results store keeps seeds as SQLite's signed 64-bit INTEGER."""


def checked_seed(seed: object, name: str = "seed") -> int:
    """``seed`` as an int, or an error naming it: a float or a string is not truncated or parsed."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"{name}: expected an integer from 0 to 2**63 - 1, found {seed!r} ({type(seed).__name__})")
    if not 0 <= int(seed) <= MAX_SEED:
        raise ScenarioError(f"{name}: expected an integer from 0 to 2**63 - 1, found {seed}")
    return int(seed)


def toml_literal(value: Any, key: str = "value") -> str:
    """A Python value as a TOML value, for overrides; an error names ``key``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{key}: expected a finite number, found {value}")
        if isinstance(value, int) and not -(2**63) <= value < 2**63:
            raise ValueError(f"{key}: expected an integer of at most 64 bits (TOML's), found {value}")
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_literal(v, f"{key}[{i}]") for i, v in enumerate(value)) + "]"
    if isinstance(value, Mapping):
        return (
            "{" + ", ".join(f"{json.dumps(str(k))} = {toml_literal(v, f'{key}.{k}')}" for k, v in value.items()) + "}"
        )
    raise TypeError(
        f"{key}: expected a number, a string, a boolean, a list or a table, found {value!r:.60} "
        f"({type(value).__name__})"
    )


def _check_json(value: Any, key: str) -> None:
    """Names the key of a value that JSON would refuse, or write as NaN for the parser to trip over."""
    if value is None or isinstance(value, (bool, int, str)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{key}: expected a finite number, found {value}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_json(v, f"{key}[{i}]")
    elif isinstance(value, Mapping):
        for k, v in value.items():
            _check_json(v, f"{key}.{k}")
    else:
        raise TypeError(
            f"{key}: expected a number, a string, a boolean, a list or a table, found {value!r:.60} "
            f"({type(value).__name__})"
        )


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
    for key in overrides or {}:
        if not isinstance(key, str):
            raise TypeError(f"overrides: expected dotted keys such as 'links.0.loss', found {key!r}")
    pairs = [(k, toml_literal(v, k)) for k, v in (overrides or {}).items()] + list(toml_overrides)
    if seed is not None:
        pairs.append(("seed", toml_literal(checked_seed(seed))))
    if isinstance(scenario, Mapping):
        try:
            for key, value in scenario.items():
                _check_json(value, str(key))
        except ValueError as e:
            raise ScenarioError(f"<dict>: {e}") from None
        except TypeError as e:
            raise TypeError(f"<dict>: {e}") from None
        return _native.Simulation(json.dumps(scenario), origin="<dict>", format="json", overrides=pairs)
    if not isinstance(scenario, (str, os.PathLike)):
        raise TypeError(
            "scenario: expected a path (str or os.PathLike), TOML text or a mapping, "
            f"found {scenario!r:.60} ({type(scenario).__name__})"
        )
    if isinstance(scenario, os.PathLike) or (isinstance(scenario, str) and "\n" not in scenario):
        try:
            text = read_text(scenario)
        except InputFileError as e:
            raise ScenarioError(
                f"{e.path}{f':{e.line}' if e.line else ''}: cannot read the scenario: {e.reason}"
            ) from None
        return _native.Simulation(text, origin=str(Path(scenario)), format="toml", overrides=pairs)
    return _native.Simulation(scenario, origin="<text>", format="toml", overrides=pairs)


TABLES = ("flows", "links", "counters", "goodput", "queues", "cwnd", "rtt", "radios", "pairs", "pacing")
"""The tables of a run, in the order the simulator gives them."""

TableLike = Union["_native.Table", "pa.Table", "pd.DataFrame"]
"""A table as the simulator hands it over (Arrow), as Arrow, or as pandas."""


class _Frame:
    """A table of :class:`RunResult` as a pandas DataFrame, built on first access."""

    def __init__(self, doc: str):
        self.__doc__ = doc

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, result: RunResult | None, owner: type | None = None) -> Any:
        if result is None:
            return self
        return result.frame(self.name)

    def __set__(self, result: RunResult, value: TableLike) -> None:
        result._set_table(self.name, value)


class RunResult:
    """What one run measured.

    The simulator hands its tables over as Arrow. Each attribute below is a
    pandas DataFrame made from them when first read, and :meth:`arrow` gives
    the Arrow tables themselves, so a caller that only needs :meth:`summary`
    never imports pandas. The tables may also be given as pandas or Arrow.
    """

    flows = _Frame("One row per flow: goodput, delay statistics, retransmissions.")
    links = _Frame("One row per link direction: transmissions, losses, queue drops.")
    counters = _Frame("``node, name, value``: each node's counters and its coding layers'.")
    goodput = _Frame("``time_s, flow, goodput_bps`` per probe interval.")
    queues = _Frame("``time_s, from, to, packets`` for the probed interfaces.")
    cwnd = _Frame("``time_s, flow, cwnd_bytes`` when probed.")
    rtt = _Frame("``time_s, flow, srtt_s`` when probed.")
    radios = _Frame("One row per node on the wireless channel: airtime, retries, collisions, frames overheard.")
    pairs = _Frame("One row per pair in reach on the wireless channel: data frames sent, received, collided, errored.")
    pacing = _Frame("``time_s, flow, pacing_bps`` of the flows that pace (BBR), probed with cwnd.")

    def __init__(
        self,
        flows: TableLike,
        links: TableLike,
        counters: TableLike,
        goodput: TableLike,
        queues: TableLike,
        cwnd: TableLike,
        rtt: TableLike,
        fairness: float,
        events: int,
        sim_time_s: float,
        wall_s: float,
        scenario: str,
        radios: TableLike | None = None,
        pairs: TableLike | None = None,
        pacing: TableLike | None = None,
    ):
        self._given: dict[str, TableLike] = {}
        self._arrow: dict[str, pa.Table] = {}
        self._frames: dict[str, pd.DataFrame] = {}
        tables = (flows, links, counters, goodput, queues, cwnd, rtt, radios, pairs, pacing)
        for name, table in zip(TABLES, tables, strict=True):
            if table is None:
                import pandas as pd

                table = pd.DataFrame()
            self._set_table(name, table)
        self.fairness = fairness
        """Jain's index over the flows' goodputs."""
        self.events = events
        self.sim_time_s = sim_time_s
        self.wall_s = wall_s
        self.scenario = scenario
        """The resolved scenario that ran, as TOML."""

    def _set_table(self, name: str, table: TableLike) -> None:
        self._given[name] = table
        self._arrow.pop(name, None)
        self._frames.pop(name, None)

    def __repr__(self) -> str:
        return f"<RunResult: {self.sim_time_s:g} simulated s, {self.events} events, fairness {self.fairness:.3f}>"

    def arrow(self, name: str) -> pa.Table:
        """One table (``"flows"``, ``"links"``, ...) as a pyarrow Table, imported without a copy."""
        if name not in self._arrow:
            import pyarrow as pa

            table = self._given[name]
            if isinstance(table, _native.Table):
                self._arrow[name] = pa.RecordBatchReader.from_stream(table).read_all()
            elif isinstance(table, pa.Table):
                self._arrow[name] = table
            else:
                self._arrow[name] = pa.Table.from_pandas(table, preserve_index=False)
        return self._arrow[name]

    def frame(self, name: str) -> pd.DataFrame:
        """One table as a pandas DataFrame: integers as int64, floats as float64 (NaN where missing)."""
        if name not in self._frames:
            given = self._given[name]
            # Told apart by module so that Arrow-only callers never import pandas.
            if type(given).__module__.startswith("pandas"):
                self._frames[name] = cast("pd.DataFrame", given)
            else:
                self._frames[name] = _to_pandas(self.arrow(name))
        return self._frames[name]

    def column(self, table: str, name: str) -> list[Any]:
        """One column's values as a list (None where missing), with neither pandas nor pyarrow if not loaded yet."""
        if table in self._frames:
            return self._frames[table][name].tolist()
        if table in self._arrow:
            values: list[Any] = self._arrow[table].column(name).to_pylist()
            return values
        given = self._given[table]
        if isinstance(given, _native.Table):
            return given.column(name)
        return self.frame(table)[name].tolist()

    def summary(self) -> dict[str, Any]:
        """The run as one JSON-ready object (what ``ncmesh run --json`` prints)."""
        columns = [
            "id",
            "goodput_bps",
            "delivered_bytes",
            "corrupt_bytes",
            "delay_mean_s",
            "delay_std_s",
            "delay_p95_s",
        ]
        values = [self.column("flows", c) for c in columns]
        flows = [{k: _plain(v) for k, v in zip(columns, row, strict=True)} for row in zip(*values, strict=True)]
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
        for name in TABLES:
            frame = self.frame(name)
            written.append(write_atomically(out / f"{name}.parquet", partial(frame.to_parquet, index=False)))
            written.append(write_atomically(out / f"{name}.csv", partial(frame.to_csv, index=False)))
        written.append(write_atomically(out / "scenario.toml", lambda p: p.write_text(self.scenario)))
        written.append(
            write_atomically(out / "summary.json", lambda p: p.write_text(json.dumps(self.summary(), indent=2) + "\n"))
        )
        return written


def _to_pandas(table: pa.Table) -> pd.DataFrame:
    """Unsigned columns become int64, the integer type pandas users expect."""
    import pyarrow as pa

    schema = pa.schema([f.with_type(pa.int64()) if pa.types.is_unsigned_integer(f.type) else f for f in table.schema])
    frame: pd.DataFrame = table.cast(schema).to_pandas()
    return frame


def _plain(v: Any) -> Any:
    """NaN becomes None so that JSON stays standard."""
    if isinstance(v, float) and math.isnan(v):
        return None
    if hasattr(v, "item"):
        return _plain(v.item())
    return v


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
    finished = simulation.finish()
    wall = time.perf_counter() - started
    return RunResult(
        **finished["tables"],
        fairness=finished["fairness"],
        events=finished["events"],
        sim_time_s=finished["sim_time_s"],
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
    schema: dict[str, Any] = json.loads(_native.scenario_schema())
    return schema
