"""What every command shares: the Typer app, the consoles and the one-line error."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from rich.console import Console

app = typer.Typer(
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
