"""``ncmesh run``, ``ncmesh schema`` and ``ncmesh version``: one scenario at a time."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from ._base import app, err, fail, out, parse_assignments, path, scenario_file


@app.command()
def version() -> None:
    """Print the version and the SIMD instruction set in use."""
    from .. import __version__
    from ..codec import simd_isa

    out().print(f"ncmesh {__version__} (kernels: {simd_isa()})")


@app.command()
def run(
    scenario: Annotated[str, typer.Argument(help="Scenario file (TOML), or the name of a shipped one.")],
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="Override a key: --set link_class.wireless.loss=0.1")
    ] = None,
    seed: Annotated[
        # 2**63 - 1 is simulate.MAX_SEED, written out so that the command line starts without the simulator.
        int | None, typer.Option(min=0, max=2**63 - 1, help="Seed of the run (overrides the scenario's).")
    ] = None,
    out_dir: Annotated[
        Path | None,
        typer.Option("--out", parser=path, help="Write the tables (Parquet and CSV) into this directory."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of tables.")] = False,
) -> None:
    """Run a scenario and print a summary of its flows."""
    from ..simulate import ScenarioError, execute, load

    if set_ is None:
        set_ = []
    scenario_path = scenario_file(scenario)
    try:
        simulation = load(scenario_path, seed=seed, toml_overrides=parse_assignments(set_))
    except ScenarioError as e:
        raise fail(str(e)) from None
    if out_dir is not None:
        from ..files import make_directory

        make_directory(out_dir)  # a bad --out is refused before the run, not after it
    try:
        if as_json or not sys.stderr.isatty():
            result = execute(simulation)
        else:
            from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

            columns = (
                TextColumn("simulating"),
                BarColumn(),
                TextColumn("{task.completed:,.0f} / {task.total:,.0f} s"),
                TimeRemainingColumn(),
            )
            with Progress(*columns, console=err(), transient=True) as bar:
                task = bar.add_task("run", total=simulation.duration_s)
                result = execute(simulation, lambda t, _d, _e: bar.update(task, completed=t))
    except KeyboardInterrupt:
        raise fail("interrupted; nothing was written", 130) from None
    if out_dir is not None:
        result.write(out_dir)
    if as_json:
        print(json.dumps(result.summary()))
        return
    from rich.table import Table

    table = Table(
        title=f"{result.sim_time_s:,.0f} simulated seconds, {result.events:,} events in {result.wall_s:.2f} s "
        f"({result.events / max(result.wall_s, 1e-9) / 1e6:.1f} M events/s)"
    )
    names = ("id", "src", "dst", "app", "goodput_bps", "delay_mean_s", "delay_p95_s", "retransmits", "timeouts")
    for column in (
        "flow",
        "src",
        "dst",
        "app",
        "goodput (kbit/s)",
        "delay mean (ms)",
        "p95 (ms)",
        "retransmits",
        "timeouts",
    ):
        table.add_column(column, justify="right")
    values = [result.column("flows", n) for n in names]
    flows = [dict(zip(names, row, strict=True)) for row in zip(*values, strict=True)]
    for f in flows:
        table.add_row(
            str(f["id"]),
            str(f["src"]),
            str(f["dst"]),
            f["app"],
            f"{f['goodput_bps'] / 1e3:,.1f}",
            f"{f['delay_mean_s'] * 1e3:,.1f}",
            f"{f['delay_p95_s'] * 1e3:,.1f}",
            str(f["retransmits"]),
            str(f["timeouts"]),
        )
    out().print(table)
    total = sum(f["goodput_bps"] for f in flows)
    out().print(f"total goodput {total / 1e3:,.1f} kbit/s, Jain's fairness index {result.fairness:.3f}")
    if out_dir is not None:
        out().print(f"tables written to {out_dir}")


@app.command()
def schema(
    out_file: Annotated[
        Path | None, typer.Option("--out", parser=path, help="Write to this file instead of printing.")
    ] = None,
) -> None:
    """Print the JSON Schema of scenario files, for editors."""
    from ..files import write_text_atomically
    from ..simulate import scenario_schema

    text = json.dumps(scenario_schema(), indent=2) + "\n"
    if out_file is None:
        print(text, end="")
    else:
        write_text_atomically(out_file, text)
