"""Parameter sweeps: a TOML file of axes over scenario keys, run in parallel
into a results store that survives being killed.

The pieces, in the order a sweep uses them: :func:`parse` reads and checks a
sweep file; :func:`plan` expands it into runs, each with its key; a runner
(processes, threads or Dask) executes the runs with :func:`execute_task`;
:func:`run_sweep` records each outcome in a :class:`~ncmesh.store.Store` as
soon as it arrives. See docs/sweeps.md for the file format and guarantees.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
import json
import math
import os
import re
import socket
import subprocess
import threading
import time
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, partial
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PlainValidator,
    Tag,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from . import __version__, _native
from .files import InputFileError, read_text, write_atomically
from .simulate import MAX_SEED, RunResult, ScenarioError, execute, load
from .store import METRICS, Store


class SweepError(ValueError):
    """A sweep file that cannot run; the message is ``FILE:LINE: key: what is wrong``."""


# ---------------------------------------------------------------- sweep files


@dataclass
class Axis:
    """One or more keys varied together; crossed with the other axes."""

    keys: tuple[str, ...]
    values: list[tuple[Any, ...]]
    line: int


@dataclass
class Sweep:
    path: Path
    name: str
    scenario: Path
    seeds: list[int]
    metrics: list[str]
    fixed: dict[str, Any]
    axes: list[Axis]
    null: bool = False
    lines: dict[tuple[str, ...], int] = field(default_factory=dict, repr=False)

    @property
    def keys(self) -> list[str]:
        return [k for axis in self.axes for k in axis.keys]

    def points(self) -> Iterator[dict[str, Any]]:
        """Every combination of axis values, as ``{dotted key: value}``, in file order."""
        for combo in itertools.product(*(axis.values for axis in self.axes)):
            point: dict[str, Any] = {}
            for axis, values in zip(self.axes, combo, strict=True):
                point.update(zip(axis.keys, values, strict=True))
            yield point

    def error(self, path: tuple[str, ...], message: str) -> SweepError:
        return SweepError(f"{self.path}:{_line_of(self.lines, path)}: {'.'.join(path) or 'file'}: {message}")


_HEADER = re.compile(r"^\s*(\[\[?)\s*(.+?)\s*\]\]?\s*(#.*)?$")


def _split_key(text: str) -> tuple[str, ...]:
    """A TOML key (bare, quoted, or dotted mix of both) as its parts."""
    parts, buf, quote, i = [], "", None, 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\" and quote == '"' and i + 1 < len(text):
                buf += text[i + 1]
                i += 2
                continue
            if c == quote:
                quote = None
            else:
                buf += c
        elif c in "\"'":
            quote = c
        elif c == ".":
            parts.append(buf.strip())
            buf = ""
        else:
            buf += c
        i += 1
    parts.append(buf.strip())
    return tuple(parts)


def _key_lines(text: str) -> dict[tuple[str, ...], int]:
    """Maps each key path to the line that defines it.

    tomllib keeps no positions; sweep files are small and flat, so a line
    scanner that knows table headers, arrays of tables and dotted keys is
    enough. Arrays of tables get their index as a path part, as in the
    parsed document. Lines inside multi-line values are never key lines
    because we only look at ``key =`` at the start of a line.
    """
    lines: dict[tuple[str, ...], int] = {}
    counts: dict[tuple[str, ...], int] = {}
    table: tuple[str, ...] = ()
    depth = 0  # bracket depth of a multi-line array
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if depth == 0:
            header = _HEADER.match(raw)
            if (
                header
                and "=" not in header.group(2).split("#")[0].replace('"', "").replace("'", "")
                and stripped.startswith("[")
            ):
                base = _split_key(header.group(2))
                if header.group(1) == "[[":
                    index = counts.get(base, 0)
                    counts[base] = index + 1
                    table = (*base, str(index))
                    lines.setdefault(base, number)
                else:
                    table = base
                lines.setdefault(table, number)
                continue
            key, eq, _ = _partition_key(stripped)
            if eq and key:
                path = (*table, *_split_key(key))
                lines.setdefault(path, number)
        depth += _bracket_delta(raw)
        depth = max(depth, 0)
    return lines


def _partition_key(line: str) -> tuple[str, str, str]:
    """Splits ``key = value`` at the first ``=`` outside quotes."""
    quote = None
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c == "=":
            return line[:i].strip(), "=", line[i + 1 :]
        elif c == "#":
            break
    return "", "", line


def _bracket_delta(line: str) -> int:
    """Open minus closed square brackets outside strings and comments."""
    quote, delta = None, 0
    _, eq, value = _partition_key(line.strip())
    for c in value if eq else line:
        if quote:
            if c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c == "#":
            break
        elif c == "[":
            delta += 1
        elif c == "]":
            delta -= 1
    return delta


def _line_of(lines: Mapping[tuple[str, ...], int], path: tuple[str, ...]) -> int:
    """The line of ``path``, or of its nearest ancestor that has one."""
    for n in range(len(path), 0, -1):
        if path[:n] in lines:
            return lines[path[:n]]
    return 1


# The schema of a sweep file. Types say what each key holds; the few rules
# types cannot say are validators. Errors are turned into
# ``FILE:LINE: key: message`` by :func:`_sweep_error`.

_RANGE_KEYS = ("start", "stop", "num", "step")

MOST_VALUES = 1_000_000
"""The most values an axis range or a seed count may give, and the most runs a
sweep may plan: more is surely a typo, and expanding it would fill memory."""


def _show(value: Any) -> str:
    """A value as it would be written in TOML, shortened for a message."""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _finite_number(value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise PydanticCustomError("finite_number", "expected a finite number")
    return value


Number = Annotated[int | float, PlainValidator(_finite_number)]
"""A TOML integer or float, never a boolean, never inf or nan."""


class Range(BaseModel):
    """An axis as a range: ``{start, stop, num}`` (evenly spaced, both ends
    included) or ``{start, stop, step}`` (from start in steps; stop included
    when a step lands on it)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    start: Number
    stop: Number
    num: Annotated[int, Field(ge=1)] | None = None
    step: Number | None = None

    @model_validator(mode="after")
    def _one_of_num_or_step(self) -> Range:
        if (self.num is None) == (self.step is None):
            raise PydanticCustomError(
                "range", "a range takes exactly one of num (evenly spaced, both ends included) or step"
            )
        if self.step is not None and (self.step == 0 or (self.stop - self.start) / self.step < 0):
            raise PydanticCustomError(
                "range", f"range step {self.step!r} never goes from {self.start!r} to {self.stop!r}"
            )
        count = self.num if self.num is not None else self._count()
        if count > MOST_VALUES:
            raise PydanticCustomError(
                "range", f"range has {count} values; that is surely a mistake (expected at most {MOST_VALUES:,})"
            )
        return self

    def _count(self) -> int:
        assert self.step is not None
        return math.floor((self.stop - self.start) / self.step + 1e-9) + 1

    def values(self) -> list[Any]:
        start, stop = self.start, self.stop
        if self.num is not None:
            if self.num == 1:
                return [start]
            values = [start + (stop - start) * i / (self.num - 1) for i in range(self.num)]
        else:
            assert self.step is not None
            values = [start + i * self.step for i in range(self._count())]
            if all(isinstance(v, int) for v in (start, stop, self.step)):
                return [int(v) for v in values]
        return [round(v, 12) for v in values]


def _axis_kind(value: Any) -> str | None:
    return "<list>" if isinstance(value, list) else "<range>" if isinstance(value, dict) else None


AxisValues = Annotated[
    Annotated[list[Any], Field(min_length=1), Tag("<list>")] | Annotated[Range, Tag("<range>")],
    Discriminator(
        _axis_kind,
        custom_error_type="axis",
        custom_error_message="expected a list of values or a range {start, stop, num} / {start, stop, step}",
    ),
]
"""One key's values: a non-empty list, or a range table."""


def _values(axis: list[Any] | Range) -> list[Any]:
    return axis.values() if isinstance(axis, Range) else axis


def _same_lengths(group: dict[str, list[Any] | Range]) -> dict[str, list[Any] | Range]:
    if not group:
        raise PydanticCustomError("zip", "an empty [[zip]] group")
    lengths = {key: len(_values(values)) for key, values in group.items()}
    if len(set(lengths.values())) > 1:
        detail = ", ".join(f"{key} has {n}" for key, n in lengths.items())
        raise PydanticCustomError("zip", f"zipped keys need as many values each: {detail}")
    return group


def _seed_count(value: int) -> int:
    if value < 1:
        raise PydanticCustomError("seeds", f"need at least one seed, found {value}")
    if value > MOST_VALUES:
        raise PydanticCustomError("seeds", f"expected at most {MOST_VALUES:,} seeds, found {value}")
    return value


def _distinct(seeds: list[int]) -> list[int]:
    if len(set(seeds)) != len(seeds):
        raise PydanticCustomError("seeds", "a seed appears twice")
    return seeds


def _seeds_kind(value: Any) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return "<count>"
    return "<list>" if isinstance(value, list) else None


def _storable(seed: int) -> int:
    if seed > MAX_SEED:
        raise PydanticCustomError("seeds", f"expected a seed from 0 to 2**63 - 1 (the store's integers), found {seed}")
    return seed


_SeedList = Annotated[
    list[Annotated[int, Field(ge=0), AfterValidator(_storable)]],
    Field(min_length=1),
    AfterValidator(_distinct),
    Tag("<list>"),
]
Seeds = Annotated[
    Annotated[int, AfterValidator(_seed_count), Tag("<count>")] | _SeedList,
    Discriminator(
        _seeds_kind,
        custom_error_type="seeds",
        custom_error_message="expected a number of seeds (1..N) or a list of seeds",
    ),
]
"""N (seeds 1 to N) or a list of distinct non-negative seeds."""


def _known_metric(name: str) -> str:
    if name not in METRICS:
        raise PydanticCustomError("metric", f"unknown metric {name!r}; expected some of {', '.join(METRICS)}")
    return name


def _non_empty(name: str) -> str:
    if not name.strip():
        raise PydanticCustomError("name", "expected a non-empty string")
    return name


class SweepFile(BaseModel):
    """A sweep file as written (docs/sweeps.md), with [set], [axes] and
    [[zip]] flattened to dotted scenario keys."""

    model_config = ConfigDict(extra="forbid", strict=True)

    scenario: str
    name: Annotated[str, AfterValidator(_non_empty)] | None = None
    seeds: Seeds = 1
    metrics: Annotated[list[Annotated[str, AfterValidator(_known_metric)]], Field(min_length=1)] | None = None
    null: bool = False
    set: dict[str, Any] = {}
    axes: dict[str, AxisValues] = {}
    zip: list[Annotated[dict[str, AxisValues], AfterValidator(_same_lengths)]] = []

    @field_validator("scenario")
    @classmethod
    def _scenario_exists(cls, scenario: str, info: ValidationInfo) -> str:
        path = (Path((info.context or {}).get("base", ".")) / scenario).resolve()
        if not path.is_file():
            raise PydanticCustomError("scenario", f"no scenario file at {path}")
        return str(path)


SWEEP_KEYS = tuple(SweepFile.model_fields)

# What a key of the wrong type should have held, for the message.
_EXPECTED = {
    "scenario": "a path (string) to the base scenario, relative to this sweep file",
    "name": "a non-empty string",
    "metrics": "a non-empty list of metric names",
    "null": "true or false",
    "set": "a table of scenario keys and values",
    "axes": "a table: dotted scenario key = list of values",
    "zip": "[[zip]] tables: keys whose values vary together",
}
_TYPE_WORDS = {
    "int_type": "an integer",
    "bool_type": "true or false",
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "a table",
    "model_type": "a table",
    "model_attributes_type": "a table",
}


def _flatten(
    table: Mapping[str, Any], is_value: Callable[[Any], bool], prefix: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], Any]]:
    """The values of a table of dotted keys, each with its key path in the file.

    Bare dotted keys (``tcp.variant = ...``) are nested tables to TOML, and
    quoted ones (``"tcp.variant" = ...``) are not; both mean one key.
    """
    for key, value in table.items():
        path = (*prefix, key)
        if isinstance(value, dict) and not is_value(value):
            yield from _flatten(value, is_value, path)
        else:
            yield path, value


def _is_range(table: dict[str, Any]) -> bool:
    """An inline table of scalars under [axes] means a range: axis values are lists."""
    return all(not isinstance(v, (dict, list)) for v in table.values())


def _dotted(
    section: tuple[Any, ...],
    table: Any,
    is_value: Callable[[Any], bool],
    origin: dict[tuple[Any, ...], tuple[str, ...]],
    lines: Mapping[tuple[str, ...], int],
    path: Path,
) -> Any:
    """``table`` with its keys flattened to dotted ones; ``origin`` learns each one's path in the file."""
    if not isinstance(table, dict):
        return table
    file_section = tuple(str(p) for p in section)
    origin[section] = file_section
    flat: dict[str, Any] = {}
    for key_path, value in _flatten(table, is_value):
        key = ".".join(key_path)
        where = (*file_section, *key_path)
        if key in flat:
            raise SweepError(f"{path}:{_line_of(lines, where)}: {key}: this key is set twice")
        flat[key] = value
        origin[(*section, key)] = where
    return flat


def _sweep_error(
    path: Path, error: Any, origin: Mapping[tuple[Any, ...], tuple[str, ...]], lines: Mapping[tuple[str, ...], int]
) -> tuple[int, str]:
    """One pydantic error as (line, ``FILE:LINE: key: message``)."""
    loc = [p for p in error["loc"] if not (isinstance(p, str) and p.startswith("<"))]  # union tags
    for n in range(len(loc), 0, -1):
        if tuple(loc[:n]) in origin:
            head, rest = origin[tuple(loc[:n])], loc[n:]
            break
    else:
        head, rest = (), loc
    # A list position says which value is wrong, not which key: keys keep names only.
    key_path = (*head, *(str(p) for p in rest if not isinstance(p, int)))
    kind, found = error["type"], error.get("input")
    if kind == "extra_forbidden":
        allowed = _RANGE_KEYS if len(key_path) > 1 else SWEEP_KEYS
        message = f"unknown key; expected one of {', '.join(allowed)}"
    elif kind == "missing":
        message = f"missing key: expected {_EXPECTED.get(key_path[-1], 'a value')}"
    elif kind == "too_short":
        message = f"expected at least one value, found {_show(found)}"
    elif kind in ("greater_than_equal", "less_than"):
        bound = error["ctx"].get("ge", error["ctx"].get("lt"))
        message = f"expected a number {'>=' if kind == 'greater_than_equal' else '<'} {bound}, found {_show(found)}"
    elif kind in _TYPE_WORDS:
        expected = _EXPECTED.get(key_path[-1], _TYPE_WORDS[kind]) if len(key_path) == 1 else _TYPE_WORDS[kind]
        message = f"expected {expected}, found {_show(found)}"
    elif error["msg"].startswith("expected") and "found" not in error["msg"]:
        message = f"{error['msg']}, found {_show(found)}"
    else:
        message = error["msg"]
    line = _line_of(lines, key_path)
    return line, f"{path}:{line}: {'.'.join(key_path) or 'file'}: {message}"


def parse(path: str | os.PathLike[str], text: str | None = None) -> Sweep:
    """Reads a sweep file and checks everything that can be checked without running.

    Raises :class:`SweepError` naming file, line and key. Axis keys that the
    scenario does not know are refused here; axis values that make an
    otherwise valid scenario invalid are not, because they become failed
    runs that the store records (so that a sweep over a range that strays
    outside the valid domain still runs the rest).
    """
    given, path = path, Path(path)
    if text is None:
        try:
            text = read_text(given)
        except InputFileError as e:
            raise SweepError(f"{e.path}:{e.line or 1}: file: cannot read the sweep file: {e.reason}") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"\(at line (\d+), column \d+\)", str(e))
        message = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(e))
        raise SweepError(f"{path}:{m.group(1) if m else 1}: syntax: {message}") from None
    lines = _key_lines(text)
    origin: dict[tuple[Any, ...], tuple[str, ...]] = {}
    if "set" in doc:
        doc["set"] = _dotted(("set",), doc["set"], lambda _: False, origin, lines, path)
    if "axes" in doc:
        doc["axes"] = _dotted(("axes",), doc["axes"], _is_range, origin, lines, path)
    if isinstance(doc.get("zip"), list):
        doc["zip"] = [_dotted(("zip", i), group, _is_range, origin, lines, path) for i, group in enumerate(doc["zip"])]
    try:
        spec = SweepFile.model_validate(doc, context={"base": path.parent})
    except ValidationError as e:
        raise SweepError(min(_sweep_error(path, error, origin, lines) for error in e.errors())[1]) from None

    sweep = Sweep(
        path=path,
        name=spec.name or path.stem,
        scenario=Path(spec.scenario),
        seeds=list(range(1, spec.seeds + 1)) if isinstance(spec.seeds, int) else list(spec.seeds),
        metrics=list(dict.fromkeys(spec.metrics)) if spec.metrics else list(METRICS),
        fixed=dict(spec.set),
        axes=[],
        null=spec.null,
        lines=lines,
    )
    for key, values in spec.axes.items():
        sweep.axes.append(Axis((key,), [(v,) for v in _values(values)], _line_of(lines, origin[("axes", key)])))
    for i, group in enumerate(spec.zip):
        columns = [_values(values) for values in group.values()]
        sweep.axes.append(Axis(tuple(group), list(zip(*columns, strict=True)), _line_of(lines, ("zip", str(i)))))

    seen: set[str] = set()
    for axis in sweep.axes:
        for key in axis.keys:
            if key in seen or key in sweep.fixed or key == "seed":
                raise SweepError(
                    f"{path}:{axis.line}: {key}: "
                    + (
                        "the seed is set by `seeds`"
                        if key == "seed"
                        else "this key is set twice (in [set], [axes] or [[zip]])"
                    )
                )
            seen.add(key)
    runs = math.prod(len(axis.values) for axis in sweep.axes) * len(sweep.seeds)
    if runs > MOST_VALUES:
        raise SweepError(
            f"{path}:{_line_of(lines, ('axes',))}: axes: the axes crossed and the seeds make {runs:,} runs; "
            f"that is surely a mistake (expected at most {MOST_VALUES:,})"
        )
    _check_against_scenario(sweep)
    return sweep


def _check_against_scenario(sweep: Sweep) -> None:
    """Refuses [set] values and axis keys that can never make a valid scenario.

    An axis whose every value fails with one and the same message is a key
    problem (an unknown field, an index past the end), not a value problem.
    """
    try:
        load(sweep.scenario, overrides=sweep.fixed)
    except ScenarioError as e:
        bad = next((k for k in sweep.fixed if k in str(e)), None)
        where = ("set", *bad.split(".")) if bad else ("set",)
        raise SweepError(f"{sweep.path}:{_line_of(sweep.lines, where)}: {'.'.join(where)}: {e}") from None
    for axis in sweep.axes:
        messages = set()
        for values in axis.values:
            try:
                load(sweep.scenario, overrides={**sweep.fixed, **dict(zip(axis.keys, values, strict=True))})
            except ScenarioError as e:
                messages.add(str(e))
            except (TypeError, ValueError) as e:
                raise SweepError(f"{sweep.path}:{axis.line}: {', '.join(axis.keys)}: {e}") from None
            else:
                break
        else:
            if len(messages) == 1:
                raise SweepError(
                    f"{sweep.path}:{axis.line}: {', '.join(axis.keys)}: "
                    f"no value of this axis makes a valid scenario: {messages.pop()}"
                )


# ---------------------------------------------------------------- provenance


@cache
def build_id() -> str:
    """What computed a result: the ncmesh version and a hash of the native module.

    The binary, not the git commit, goes into run keys: a commit says
    nothing about uncommitted edits, and changes on every docs commit.
    """
    digest = hashlib.sha256()
    with open(_native.__file__, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return f"{__version__}+{digest.hexdigest()[:16]}"


@cache
def git_state() -> tuple[str | None, bool | None]:
    """The commit of the source tree and whether it has changes, if it is a git checkout."""
    root = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
        )
        if commit.returncode != 0:
            return None, None
        status = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain"], capture_output=True, text=True, timeout=30
        )
        return commit.stdout.strip(), (bool(status.stdout.strip()) if status.returncode == 0 else None)
    except (OSError, subprocess.SubprocessError):
        return None, None


# ---------------------------------------------------------------- planning


@dataclass
class Task:
    """One run, everything a worker needs; small and picklable for Dask."""

    key: str
    params: dict[str, Any]
    seed: int
    scenario_toml: str | None
    scenario_hash: str | None
    null: bool = False
    error: str | None = None
    """Set when the scenario did not validate; the run is failed without executing."""


def _hash(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def plan(sweep: Sweep) -> list[Task]:
    """Every run of the sweep with its key: a hash of resolved scenario, seed and build.

    Two sweeps that reach the same resolved scenario share runs, whatever
    their files look like. Null runs get keys of their own, so measuring
    overhead never marks a real run as done.
    """
    tasks = []
    build = build_id()
    for point in sweep.points():
        for seed in sweep.seeds:
            overrides = {**sweep.fixed, **point}
            try:
                simulation = load(sweep.scenario, seed=seed, overrides=overrides)
            except ScenarioError as e:
                key = _hash("invalid", read_text(sweep.scenario), overrides, seed, build)
                tasks.append(Task(key, point, seed, None, None, sweep.null, error=f"ScenarioError: {e}"))
                continue
            toml = simulation.resolved_toml()
            scenario_hash = hashlib.sha256(toml.encode()).hexdigest()
            key = _hash("null" if sweep.null else "run", scenario_hash, seed, build)
            tasks.append(Task(key, point, seed, toml, scenario_hash, sweep.null))
    return tasks


# ---------------------------------------------------------------- executing


class Stopped(Exception):
    """The sweep is stopping; a run in progress is abandoned, not recorded."""


@dataclass
class Outcome:
    key: str
    status: str
    wall_s: float
    build: str
    host: str
    error: str | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    counters: dict[str, int] | None = None
    sim_time_s: float | None = None
    series: pa.Table | None = None


def summarize(result: RunResult) -> dict[str, Any]:
    """The store's metrics from one run's flow and link tables.

    Arrow and numpy rather than pandas: this runs once per run while holding
    the GIL, so every millisecond here is a millisecond other threads wait.
    """
    flows, links = result.arrow("flows"), result.arrow("links")

    def column(name: str) -> np.ndarray:
        return np.asarray(flows.column(name).to_numpy(), dtype=float)

    weights = column("delivered_bytes")
    mean_s, std_s = column("delay_mean_s"), column("delay_std_s")
    ok = np.isfinite(mean_s) & np.isfinite(std_s) & (weights > 0)
    if ok.any():
        w = weights[ok] / weights[ok].sum()
        mean = float((w * mean_s[ok]).sum())
        std = float(np.sqrt((w * (std_s[ok] ** 2 + (mean_s[ok] - mean) ** 2)).sum()))
    else:
        mean = std = math.nan
    goodput, completion = column("goodput_bps"), column("completion_s")

    def mean_of(name: str) -> float:
        values = column(name)
        values = values[np.isfinite(values)]
        return float(values.mean()) if len(values) else math.nan

    def total(table: pa.Table, name: str) -> int | None:
        return int(table.column(name).to_numpy().sum()) if name in table.column_names else None

    n = len(goodput)
    metrics = {
        "throughput_bps": float(goodput.sum()),
        "goodput_mean_bps": float(goodput.mean()) if n else math.nan,
        "goodput_min_bps": float(goodput.min()) if n else math.nan,
        "delay_mean_s": mean,
        "delay_std_s": std,
        "delay_p50_s": mean_of("delay_p50_s"),
        "delay_p95_s": mean_of("delay_p95_s"),
        "delay_p99_s": mean_of("delay_p99_s"),
        "completion_s": float(completion.max()) if n and np.isfinite(completion).all() else math.nan,
        "fairness": float(result.fairness),
        "delivered_bytes": int(weights.sum()),
        "acked_bytes": total(flows, "acked_bytes"),
        "packets_sent": total(flows, "packets_sent"),
        "retransmits": total(flows, "retransmits"),
        "timeouts": total(flows, "timeouts"),
        "link_losses": total(links, "lost"),
        "queue_drops": total(links, "dropped"),
        "events": int(result.events),
    }
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in metrics.items()}


def counter_totals(result: RunResult) -> dict[str, int]:
    """Each counter of the run summed over its nodes: what protocols count
    (symbols sent, segments decoded, timings as sums and counts)."""
    counters = result.arrow("counters")
    totals: dict[str, int] = {}
    for name, value in zip(counters.column("name").to_pylist(), counters.column("value").to_pylist(), strict=True):
        totals[name] = totals.get(name, 0) + int(value)
    return totals


SERIES_SCHEMA = pa.schema(
    [
        ("series", pa.string()),
        ("time_s", pa.float64()),
        ("flow", pa.int64()),
        ("from", pa.int64()),
        ("to", pa.int64()),
        ("value", pa.float64()),
    ]
)


def series_table(result: RunResult) -> pa.Table:
    """All of a run's time series in one long table, for one Parquet file per run.

    Straight from the Arrow tables the simulator hands over; through pandas
    nullable integers it cost ten times as much, under the GIL.
    """
    parts = []
    for name, table, value in (
        ("goodput_bps", "goodput", "goodput_bps"),
        ("queue_packets", "queues", "packets"),
        ("cwnd_bytes", "cwnd", "cwnd_bytes"),
        ("srtt_s", "rtt", "srtt_s"),
        ("pacing_bps", "pacing", "pacing_bps"),
    ):
        series = result.arrow(table)
        n = series.num_rows
        if n == 0:
            continue

        def ints(column: str, series: pa.Table = series, n: int = n) -> pa.ChunkedArray | pa.Array:
            return series.column(column).cast(pa.int64()) if column in series.column_names else pa.nulls(n, pa.int64())

        parts.append(
            pa.table(
                [
                    pa.array([name] * n, pa.string()),
                    series.column("time_s").cast(pa.float64()),
                    ints("flow"),
                    ints("from"),
                    ints("to"),
                    series.column(value).cast(pa.float64()),
                ],
                schema=SERIES_SCHEMA,
            )
        )
    return pa.concat_tables(parts) if parts else SERIES_SCHEMA.empty_table()


_PASS_THROUGH = (KeyboardInterrupt, SystemExit, GeneratorExit, Stopped)


def execute_task(task: Task, stop: Any = None, metrics: Sequence[str] | None = None) -> Outcome | None:
    """Runs one task; any error or Rust panic becomes a failed outcome.

    pyo3 raises a Rust panic as ``PanicException``, which derives from
    BaseException so that ``except Exception`` does not hide it; we catch it
    on purpose, because one broken run must not end a sweep of thousands.
    Returns None when ``stop`` (anything with ``is_set()``) is set mid-run.
    """
    host = socket.gethostname()
    started = time.perf_counter()
    if task.error is not None:
        return Outcome(task.key, "failed", 0.0, build_id(), host, error=task.error)
    if task.null:
        return Outcome(task.key, "null", time.perf_counter() - started, build_id(), host)

    def check(_t: float, _d: float, _e: int) -> None:
        if stop is not None and stop.is_set():
            raise Stopped

    try:
        assert task.scenario_toml is not None, "only a task with an error has no scenario"
        result = execute(load(task.scenario_toml), progress=check if stop is not None else None, slices=100)
        kept = summarize(result)
        if metrics is not None:
            kept = {m: kept[m] for m in metrics}
        counters = counter_totals(result)
        series = series_table(result)
    except _PASS_THROUGH as e:
        if isinstance(e, Stopped):
            return None
        raise
    except BaseException as e:
        return Outcome(
            task.key,
            "failed",
            time.perf_counter() - started,
            build_id(),
            host,
            error=f"{type(e).__name__}: {e}".strip(),
        )
    return Outcome(
        task.key,
        "ok",
        time.perf_counter() - started,
        build_id(),
        host,
        metrics=kept,
        counters=counters,
        sim_time_s=result.sim_time_s,
        series=series,
    )


# ---------------------------------------------------------------- runners


_stop_event: Any = None


def _init_process(event: Any) -> None:
    """Worker processes ignore Ctrl-C; the coordinator stops them through ``event``.

    On Linux a worker also asks to be killed when its parent, the sweep,
    dies, so a SIGKILLed sweep leaves no orphan simulating for hours into
    nowhere.
    """
    import signal
    import sys

    global _stop_event
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _stop_event = event
    if sys.platform.startswith("linux"):
        import ctypes

        parent = os.getppid()
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)


def _execute_in_process(task: Task, metrics: Sequence[str] | None) -> Outcome | None:
    return execute_task(task, _stop_event, metrics)


class _LocalRunner:
    """Worker processes by default, threads on request.

    Runs release the GIL, so threads scale too, but each run also spends a
    few milliseconds in pandas under the GIL; in processes that part runs in
    parallel as well, and the 200-run sweep of docs/benchmarks.md went faster.
    """

    MAX_ATTEMPTS = 3

    def __init__(self, jobs: int, threads: bool = False):
        import concurrent.futures as cf

        self.cf, self.jobs, self.threads = cf, jobs, threads
        self._start()

    def _start(self) -> None:
        import multiprocessing

        if self.threads:
            self.stop: Any = threading.Event()
            self.pool: Any = self.cf.ThreadPoolExecutor(self.jobs, thread_name_prefix="ncmesh-run")
        else:
            # spawn, not fork: forking a process that has threads (ours, Arrow's) can deadlock.
            # Not forkserver either: its server outlives a SIGKILLed sweep and keeps the
            # workers alive, while spawned workers are our children and die with us.
            context = multiprocessing.get_context("spawn")
            self.stop = context.Event()
            self.pool = self.cf.ProcessPoolExecutor(
                self.jobs, mp_context=context, initializer=_init_process, initargs=(self.stop,)
            )

    def _submit(self, task: Task, metrics: Sequence[str]) -> Any:
        if self.threads:
            return self.pool.submit(execute_task, task, self.stop, metrics)
        return self.pool.submit(_execute_in_process, task, metrics)

    def run(
        self, tasks: Sequence[Task], metrics: Sequence[str]
    ) -> Iterator[tuple[Task, Outcome | None, BaseException | None]]:
        # A bounded window of submitted runs keeps memory flat for big sweeps
        # and lets a stop cancel the rest without a queue to drain.
        import collections

        pending: dict[Any, Task] = {}
        queue = iter(tasks)
        retry: collections.deque[Task] = collections.deque()
        attempts: collections.Counter[str] = collections.Counter()

        def refill() -> None:
            while len(pending) < self.jobs * 4:
                task = retry.popleft() if retry else next(queue, None)
                if task is None:
                    return
                pending[self._submit(task, metrics)] = task

        refill()
        while pending:
            done, _ = self.cf.wait(pending, return_when=self.cf.FIRST_COMPLETED)
            broken = False
            for future in done:
                task = pending.pop(future)
                error = future.exception()
                if isinstance(error, self.cf.BrokenExecutor):
                    # A worker died (a Rust abort, the OOM killer) and took the
                    # pool with it. Which of the runs in flight killed it is
                    # unknown, so each is tried again, up to a limit.
                    broken = True
                    attempts[task.key] += 1
                    if attempts[task.key] < self.MAX_ATTEMPTS:
                        retry.append(task)
                        continue
                    error = RuntimeError(
                        f"the worker process died {self.MAX_ATTEMPTS} times running this run ({error})"
                    )
                yield task, (None if error else future.result()), error
            if broken and not any(not f.done() for f in pending):
                for future in list(pending):
                    retry.append(pending.pop(future))
                self.pool.shutdown(wait=True)
                self._start()
            if not broken or not pending:
                refill()

    def close(self, stopping: bool) -> None:
        if stopping:
            self.stop.set()
        self.pool.shutdown(wait=True, cancel_futures=stopping)


def _local_cluster(workers: int) -> Any:
    """A Dask cluster on this machine whose scheduler is not in our process.

    A LocalCluster runs its scheduler and nannies on an event loop inside
    the process that also records results; on two busy cores that made the
    200-run sweep a third slower than the same workers behind a scheduler of
    their own (docs/benchmarks.md). The scheduler gives up 60 s after its
    last client, so a killed sweep does not leave a cluster behind for long.
    """
    try:
        from distributed.deploy.subprocess import SubprocessCluster
    except ImportError:  # it is marked experimental; fall back if it goes away
        from distributed import LocalCluster

        return LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
        )
    os.environ.setdefault(
        "DASK_LOGGING__DISTRIBUTED", "critical"
    )  # read by the cluster's processes, which log INFO otherwise
    return SubprocessCluster(
        n_workers=workers,
        threads_per_worker=1,
        # None is documented as no dashboard, though the parameter is annotated str.
        dashboard_address=None,  # type: ignore[arg-type]
        silence_logs=40,
        worker_kwargs={"nthreads": 1},
        scheduler_kwargs={"idle_timeout": "60s"},
    )


def check_dask_address(address: str) -> None:
    """Refuses a ``--dask`` that is neither ``local`` nor a scheduler address, before any run."""
    if address == "local":
        return
    try:
        from distributed.comm.addressing import parse_address, parse_host_port
    except ImportError:
        raise SweepError("--dask needs the dask extra: pip install 'ncmesh[dask]'") from None
    try:
        scheme, location = parse_address(address)
        if scheme != "inproc":
            parse_host_port(location)
    except (TypeError, ValueError) as e:
        raise SweepError(
            f"--dask {address}: expected 'local' or a scheduler address such as tcp://HOST:8786 ({e})"
        ) from None


class _DaskRunner:
    """Each run is one Dask task; results come back to this process, which alone writes the store."""

    def __init__(self, address: str, jobs: int | None):
        try:
            from distributed import Client
        except ImportError:
            raise SweepError("--dask needs the dask extra: pip install 'ncmesh[dask]'") from None
        self.cluster = None
        if address == "local":
            import logging

            # Our own cluster: on a terminal's Ctrl-C its processes die at once and the
            # client logs each failed reconnection as a traceback; run failures are in the store.
            for name in ("distributed", "distributed.client", "distributed.utils", "distributed.core"):
                logging.getLogger(name).setLevel(logging.CRITICAL)
            self.cluster = _local_cluster(jobs or default_jobs())
            self.client = Client(self.cluster)
            self.client.wait_for_workers(jobs or default_jobs())
        else:
            self.client = Client(address, timeout="30s")
        # Import ncmesh on every worker now, not inside the first run of each,
        # so that start-up is not charged to the runs' rate.
        self.client.run(build_id)
        self.futures: list[Any] = []

    def run(
        self, tasks: Sequence[Task], metrics: Sequence[str]
    ) -> Iterator[tuple[Task, Outcome | None, BaseException | None]]:
        from distributed import as_completed

        by_key = {}
        for task in tasks:
            future = self.client.submit(
                execute_task, task, None, list(metrics), key=f"ncmesh-run-{task.key}", pure=False
            )
            by_key[future.key] = task
            self.futures.append(future)
        for future in as_completed(self.futures):
            task = by_key[future.key]
            if future.status == "error":
                yield task, None, future.exception()
            else:
                yield task, future.result(), None
            future.release()

    def close(self, stopping: bool) -> None:
        # Short timeouts: after a Ctrl-C in a terminal the cluster's processes
        # got the SIGINT too and may already be gone; waiting on them for the
        # default 30 s would only delay the exit.
        # Every outcome is recorded by now, so a cluster that will not shut
        # down politely is not worth an error.
        import contextlib
        import logging

        timeout = 5 if stopping else 30
        if stopping:  # the client would log every failed reconnection to a cluster already gone
            logging.getLogger("distributed").setLevel(logging.CRITICAL)
        with contextlib.suppress(Exception):
            if stopping and self.futures:
                self.client.cancel(self.futures)
            self.client.close(timeout=timeout)
        if self.cluster is not None:
            with contextlib.suppress(Exception):
                self.cluster.close(timeout=timeout)


# ---------------------------------------------------------------- the sweep


@dataclass
class SweepReport:
    planned: int
    skipped: int
    ok: int = 0
    failed: int = 0
    null: int = 0
    interrupted: bool = False
    wall_s: float = 0.0
    run_wall_s: float = 0.0
    """From the first run handed out to the last recorded, without setup."""

    @property
    def executed(self) -> int:
        return self.ok + self.failed + self.null


Progress = Callable[[Task, Outcome], None]


def default_jobs() -> int:
    """The cores this process may use (which, under SLURM or taskset, is not os.cpu_count())."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def run_sweep(
    sweep: Sweep | str | os.PathLike[str],
    db: str | os.PathLike[str],
    *,
    jobs: int | None = None,
    dask: str | None = None,
    threads: bool = False,
    rerun: bool = False,
    on_start: Callable[[int, int], None] | None = None,
    on_done: Progress | None = None,
) -> SweepReport:
    """Runs what the store does not hold yet and records every outcome as it arrives.

    ``on_start(total, skipped)`` is called once planning is done, and
    ``on_done(task, outcome)`` after each run is recorded. A
    KeyboardInterrupt stops the runners, keeps what was recorded, and comes
    back as ``report.interrupted``.
    """
    started = time.perf_counter()
    if dask is not None:
        check_dask_address(dask)
    if not isinstance(sweep, Sweep):
        sweep = parse(sweep)
    jobs = jobs or default_jobs()
    tasks = plan(sweep)
    with Store(db) as store:
        store.tidy_series()
        skip = set() if rerun else store.done()
        todo = [t for t in tasks if t.key not in skip]
        todo = list({t.key: t for t in todo}.values())  # two points that resolve alike run once
        report = SweepReport(planned=len(tasks), skipped=len(tasks) - len(todo))
        if on_start:
            on_start(len(todo), report.skipped)
        commit, dirty = git_state()
        runner: Any = None
        stopping = False
        try:
            if not todo:
                return _finish(report, started)
            runner = _DaskRunner(dask, jobs) if dask else _LocalRunner(jobs, threads)
            run_started = time.perf_counter()
            for task, outcome, error in runner.run(todo, sweep.metrics):
                if error is not None:
                    outcome = Outcome(
                        task.key, "failed", 0.0, build_id(), "?", error=f"{type(error).__name__}: {error}"
                    )
                if outcome is None:  # abandoned by a stop
                    continue
                if outcome.build != build_id() and outcome.status != "failed":
                    outcome = Outcome(
                        task.key,
                        "failed",
                        outcome.wall_s,
                        outcome.build,
                        outcome.host,
                        error=f"worker runs ncmesh build {outcome.build}, this sweep {build_id()}",
                    )
                _record(store, sweep, task, outcome, commit, dirty)
                setattr(report, outcome.status, getattr(report, outcome.status) + 1)
                if on_done:
                    on_done(task, outcome)
            report.run_wall_s = time.perf_counter() - run_started
        except KeyboardInterrupt:
            stopping = True
            report.interrupted = True
        finally:
            if runner is not None:
                try:
                    runner.close(stopping)
                except KeyboardInterrupt:
                    report.interrupted = True
    return _finish(report, started)


def _finish(report: SweepReport, started: float) -> SweepReport:
    report.wall_s = time.perf_counter() - started
    return report


def _record(store: Store, sweep: Sweep, task: Task, outcome: Outcome, commit: str | None, dirty: bool | None) -> None:
    series = None
    if outcome.status == "ok" and outcome.series is not None:
        target = store.series_dir / f"{task.key}.parquet"
        write_atomically(target, partial(pq.write_table, outcome.series))
        _fsync_dir(store.series_dir)
        series = f"{store.series_dir.name}/{target.name}"
    row = {
        "key": task.key,
        "sweep": sweep.name,
        "params": task.params,
        "seed": task.seed,
        "scenario_hash": task.scenario_hash,
        "status": outcome.status,
        "error": outcome.error,
        "ncmesh_version": __version__,
        "build": outcome.build,
        "git_commit": commit,
        "git_dirty": None if dirty is None else int(dirty),
        "host": outcome.host,
        "finished_at": dt.datetime.now(dt.UTC).isoformat(timespec="microseconds"),
        "wall_s": outcome.wall_s,
        "sim_time_s": outcome.sim_time_s,
        **outcome.metrics,
        "counters": outcome.counters,
        "series": series,
    }
    store.record(row, task.scenario_toml)


def _fsync_dir(path: Path) -> None:
    """Makes a rename durable: without it a power cut could keep the row and lose the file."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
