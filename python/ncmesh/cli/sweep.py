"""``ncmesh sweep``, ``ncmesh results`` and ``ncmesh report``: parameter sweeps and their store."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from ._base import app, err, fail, path, say


@app.command("sweep")
def sweep(
    sweep_file: Annotated[
        Path,
        typer.Argument(metavar="SWEEP.toml", parser=path, help="Sweep file: base scenario, axes, seeds, metrics."),
    ],
    jobs: Annotated[
        int | None,
        typer.Option("--jobs", "-j", min=1, help="Parallel runs (default: all cores; with --dask local, workers)."),
    ] = None,
    dask: Annotated[
        str | None, typer.Option(help="Run on a Dask cluster: a scheduler address, or 'local' to start one here.")
    ] = None,
    db: Annotated[
        Path, typer.Option(parser=path, help="Results store (SQLite); time series go beside it in DB-STEM.runs/.")
    ] = Path("results.sqlite"),
    rerun: Annotated[bool, typer.Option(help="Run again what the store already holds (default: skip it).")] = False,
    threads: Annotated[bool, typer.Option(help="Local threads instead of worker processes.")] = False,
) -> None:
    """Run a parameter sweep into a results store; an interrupted sweep resumes where it stopped.

    On a terminal it shows a progress bar; otherwise (batch jobs, pipes) one
    line per finished run. Exit status: 0 all ok, 1 some runs failed, 2 a bad
    sweep file or store, 130 interrupted.
    """
    import signal

    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from ..store import StoreBusy, StoreError
    from ..sweep import Outcome, SweepError, Task, default_jobs, parse, run_sweep

    try:
        plan = parse(sweep_file)
    except SweepError as e:
        raise fail(str(e)) from None
    if dask and threads:
        raise fail("--threads is for local runs; a Dask cluster has its own workers")

    # SLURM and kill(1) send SIGTERM first; treat it as Ctrl-C so the store is closed cleanly.
    def terminate(_sig: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, terminate)
    tty = sys.stderr.isatty()
    bar = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("runs"),
        TextColumn("[red]{task.fields[failed]} failed"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=err(),
        disable=not tty,
    )
    state: dict[str, Any] = {"done": 0, "failed": 0, "total": 0}
    task_id = bar.add_task(plan.name, total=None, failed=0)

    def on_start(total: int, skipped: int) -> None:
        state["total"] = total
        bar.update(task_id, total=total)
        where = f"Dask ({dask})" if dask else f"{jobs or default_jobs()} {'threads' if threads else 'processes'}"
        say(f"{plan.name}: {total} runs to do, {skipped} already in {db}; running on {where}")

    def on_done(task: Task, outcome: Outcome) -> None:
        state["done"] += 1
        state["failed"] += outcome.status == "failed"
        bar.update(task_id, advance=1, failed=state["failed"])
        if not tty:
            detail = f": {outcome.error}" if outcome.error else f" in {outcome.wall_s:.2f} s"
            print(
                f"[{state['done']}/{state['total']}] {outcome.status} {task.key[:12]} seed={task.seed} "
                f"{json.dumps(task.params)}{detail}",
                file=sys.stderr,
                flush=True,
            )

    try:
        with bar:
            report = run_sweep(
                plan, db, jobs=jobs, dask=dask, threads=threads, rerun=rerun, on_start=on_start, on_done=on_done
            )
    except KeyboardInterrupt:
        raise fail("interrupted before any run was recorded", 130) from None
    except (StoreBusy, StoreError, SweepError) as e:
        raise fail(str(e)) from None
    except OSError as e:
        raise fail(f"{db}: {e.strerror or e}") from None
    finally:
        signal.signal(signal.SIGTERM, previous)
    summary = (
        f"{report.ok} ok, {report.failed} failed"
        + (f", {report.null} null" if report.null else "")
        + f", {report.skipped} skipped (already done) in {report.wall_s:.2f} s"
    )
    if report.executed and report.run_wall_s:
        summary += f" ({report.executed / report.run_wall_s:.2f} runs/s over {report.run_wall_s:.2f} s of running)"
    if report.interrupted:
        left = report.planned - report.skipped - report.executed
        say(f"interrupted: {summary}; {left} runs left. Run the same command again to resume.")
        raise typer.Exit(130)
    say(f"{plan.name}: {summary}; store {db}")
    if report.failed:
        say(f"failed runs and their messages: ncmesh results {db} --where \"status = 'failed'\"")
        raise typer.Exit(1)


@app.command("results")
def results(
    db: Annotated[Path, typer.Argument(parser=path, help="Results store written by ncmesh sweep.")],
    where: Annotated[
        str | None, typer.Option(help="SQL condition over the columns, e.g. \"status = 'ok' AND seed = 1\".")
    ] = None,
    format: Annotated[str, typer.Option(help="csv, parquet or json.")] = "csv",
    out: Annotated[
        Path | None, typer.Option(parser=path, help="Output file (default: standard output; required for parquet).")
    ] = None,
) -> None:
    """Export the runs of a results store as a table, one row per run."""
    from .. import results as store_results

    try:
        table = store_results.load(db, where)
        text = store_results.export(table, format, out)
    except ValueError as e:
        raise fail(str(e)) from None
    except Exception as e:
        # DuckDB (for --where) and sqlite3 raise their own types for a bad condition or a damaged store.
        if type(e).__module__.startswith(("duckdb", "_duckdb", "sqlite3")):
            raise fail(f"--where {where}: {e}" if where else f"{db}: {e}") from None
        raise
    if text is not None:
        sys.stdout.write(text)


@app.command("report")
def report(
    db: Annotated[Path, typer.Argument(parser=path, help="Results store written by ncmesh sweep.")],
    out: Annotated[Path, typer.Option(parser=path, help="HTML file to write.")] = Path("report.html"),
    run: Annotated[
        str | None,
        typer.Option("--run", help="Key (or key prefix) of the run whose time series the page opens with."),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(
            help="KEY=VALUE: the axis value others are compared with per seed (default: coding.scheme=none if swept)."
        ),
    ] = None,
) -> None:
    """Write one self-contained, interactive HTML page of a store: every metric against every axis with
    intervals over seeds, gains over a baseline paired by seed, each run's time series, and every run.

    It opens offline. Failed runs are listed at the top and marked on their points.
    """
    from .. import report as html_report

    try:
        written = html_report.write(db, out, run, baseline)
    except ValueError as e:
        raise fail(str(e)) from None
    say(f"wrote {written}")
