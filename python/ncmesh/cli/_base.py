"""What every command shares: the Typer app, the consoles and the one-line error."""

from __future__ import annotations

import errno
import math
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperGroup

if TYPE_CHECKING:
    from rich.console import Console


class _Commands(TyperGroup):
    """The root command: an :class:`OSError` that escapes any command (an
    output path in a read-only place, a file where a directory should be) is
    one line naming the path, not a traceback, whichever command wrote it."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except OSError as e:
            if e.errno == errno.EPIPE:  # a closed pipe on standard output: click's own handling
                raise
            where = f"{e.filename}: " if e.filename is not None else ""
            raise fail(f"{where}{e.strerror or e}") from None


def path(text: str) -> Path:
    """The parser of every path option and argument (``parser=path``): click
    would take an empty path as ``.``, and ``--out ""`` would write into the
    current directory."""
    if not str(text):
        raise typer.BadParameter("an empty path names no file; expected a path")
    return Path(text)


def finite(low: float | None = None, high: float | None = None) -> Callable[[str], float]:
    """The parser of a float option that must be a finite number in ``[low, high]``
    (``parser=finite(1.0)``). click's own float ranges let nan and inf through:
    every comparison with nan is false, and inf is above any lower bound."""
    if low is not None and high is not None:
        expected = f"a finite number from {low:g} to {high:g}"
    elif low is not None:
        expected = f"a finite number of at least {low:g}"
    elif high is not None:
        expected = f"a finite number of at most {high:g}"
    else:
        expected = "a finite number"

    def number(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise typer.BadParameter(f"{text!r} is not a number; expected {expected}") from None
        if not math.isfinite(value) or (low is not None and value < low) or (high is not None and value > high):
            raise typer.BadParameter(f"{text} is out of range; expected {expected}")
        return value

    return number


app = typer.Typer(
    cls=_Commands,
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Network-coded TCP over lossy mesh networks.",
)


@cache
def out() -> Console:
    """Standard output for people. Made on first use: rich is slow to import."""
    from rich.console import Console

    return Console()


@cache
def err() -> Console:
    """Standard error: progress, notes and errors."""
    from rich.console import Console

    return Console(stderr=True)


def say(message: str) -> None:
    """One line on standard error, printed as it is (no markup, no wrapping)."""
    err().print(message, highlight=False, soft_wrap=True, markup=False)


def fail(message: str, code: int = 2) -> typer.Exit:
    """Prints a one-line error and gives the exit to raise."""
    from rich.markup import escape

    err().print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def parse_assignments(assignments: list[str]) -> list[tuple[str, str]]:
    """``--set KEY=VALUE`` options as (dotted key, TOML value) pairs."""
    pairs = []
    for a in assignments:
        key, sep, value = a.partition("=")
        if not sep or not key.strip():
            raise fail(f"--set {a}: expected KEY=VALUE, such as link_class.wireless.loss=0.1")
        pairs.append((key.strip(), value.strip()))
    return pairs


def scenario_file(name: str) -> Path:
    """The scenario a SCENARIO argument names: a file, or a shipped scenario's name."""
    from ..paths import scenario, shipped

    if not name:
        raise fail("SCENARIO: an empty path names no file; expected a scenario file or a shipped scenario's name")
    path = scenario(name)
    if not path.exists() and Path(name).suffix != ".toml":
        raise fail(f"{name}: no such file, and no shipped scenario of that name (shipped: {', '.join(shipped())})")
    return path
