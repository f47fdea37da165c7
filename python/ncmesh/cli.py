"""The ``ncmesh`` command line: a thin layer over the Python API."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from . import __version__, demo as codec_demo
from .codec import simd_isa
from .files import write_text_atomically
from .paths import scenario as scenario_path
from .simulate import ScenarioError, execute, load, scenario_schema
from .models import cli as models_cli

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Network-coded TCP over lossy mesh networks.")
console = Console()
app.add_typer(models_cli.app, name="model")
bench_app = typer.Typer(no_args_is_help=True, help="Measure speed.")
app.add_typer(bench_app, name="bench")
reproduce_app = typer.Typer(no_args_is_help=True, help="Reproduce a seed paper's figures against the simulator.")
app.add_typer(reproduce_app, name="reproduce")
err = Console(stderr=True)


def fail(message: str, code: int = 2) -> typer.Exit:
    """Prints a one-line error and gives the exit to raise."""
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def parse_assignments(assignments: list[str]) -> list[tuple[str, str]]:
    pairs = []
    for a in assignments:
        key, sep, value = a.partition("=")
        if not sep or not key.strip():
            raise fail(f"--set {a}: expected KEY=VALUE, such as link_class.wireless.loss=0.1")
        pairs.append((key.strip(), value.strip()))
    return pairs


@app.command()
def version() -> None:
    """Print the version and the SIMD instruction set in use."""
    console.print(f"ncmesh {__version__} (kernels: {simd_isa()})")


@app.command()
def run(
    scenario: Annotated[str, typer.Argument(help="Scenario file (TOML), or the name of a shipped one.")],
    set_: Annotated[list[str], typer.Option("--set", help="Override a key: --set link_class.wireless.loss=0.1")] = [],
    seed: Annotated[Optional[int], typer.Option(help="Seed of the run (overrides the scenario's).")] = None,
    out: Annotated[Optional[Path], typer.Option(help="Write the tables (Parquet and CSV) into this directory.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of tables.")] = False,
) -> None:
    """Run a scenario and print a summary of its flows."""
    try:
        simulation = load(scenario_path(scenario), seed=seed, toml_overrides=parse_assignments(set_))
    except ScenarioError as e:
        raise fail(str(e)) from None
    try:
        if as_json or not sys.stderr.isatty():
            result = execute(simulation)
        else:
            from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

            columns = (TextColumn("simulating"), BarColumn(), TextColumn("{task.completed:,.0f} / {task.total:,.0f} s"), TimeRemainingColumn())
            with Progress(*columns, console=err, transient=True) as bar:
                task = bar.add_task("run", total=simulation.duration_s)
                result = execute(simulation, lambda t, _d, _e: bar.update(task, completed=t))
    except KeyboardInterrupt:
        raise fail("interrupted; nothing was written", 130) from None
    if out is not None:
        result.write(out)
    if as_json:
        print(json.dumps(result.summary()))
        return
    table = Table(title=f"{result.sim_time_s:,.0f} simulated seconds, {result.events:,} events in {result.wall_s:.2f} s "
                        f"({result.events / max(result.wall_s, 1e-9) / 1e6:.1f} M events/s)")
    for column in ("flow", "src", "dst", "app", "goodput (kbit/s)", "delay mean (ms)", "p95 (ms)", "retransmits", "timeouts"):
        table.add_column(column, justify="right")
    for f in result.flows.itertuples():
        table.add_row(str(f.id), str(f.src), str(f.dst), f.app, f"{f.goodput_bps / 1e3:,.1f}", f"{f.delay_mean_s * 1e3:,.1f}",
                      f"{f.delay_p95_s * 1e3:,.1f}", str(f.retransmits), str(f.timeouts))
    console.print(table)
    console.print(f"total goodput {result.flows.goodput_bps.sum() / 1e3:,.1f} kbit/s, Jain's fairness index {result.fairness:.3f}")
    if out is not None:
        console.print(f"tables written to {out}")


@app.command()
def schema(out: Annotated[Optional[Path], typer.Option(help="Write to this file instead of printing.")] = None) -> None:
    """Print the JSON Schema of scenario files, for editors."""
    text = json.dumps(scenario_schema(), indent=2) + "\n"
    if out is None:
        print(text, end="")
    else:
        write_text_atomically(out, text)


def timed_run(simulation, describe: dict, as_json: bool) -> None:
    """Runs a loaded simulation to its end and reports speed and peak memory."""
    import resource

    started = time.perf_counter()
    simulation.run_until(simulation.duration_s)
    wall = time.perf_counter() - started
    report = {
        **describe,
        "events": simulation.events,
        "events_per_s": simulation.events / wall,
        "wall_s": wall,
        "sim_time_s": simulation.now_s,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }
    if as_json:
        print(json.dumps(report))
    else:
        console.print(f"{report['events']:,} events in {wall:.2f} s ({report['events_per_s'] / 1e6:.2f} M events/s) "
                      f"for {report['sim_time_s']:,.0f} simulated s; peak RSS {report['peak_rss_bytes'] / 2**20:.0f} MiB")


@bench_app.command("sim")
def bench_sim(
    loss: Annotated[float, typer.Option(min=0.0, max=0.99, help="Loss on each wireless hop.")] = 0.0,
    duration: Annotated[float, typer.Option(min=1.0, help="Simulated seconds.")] = 10_000.0,
    variant: Annotated[str, typer.Option(help="TCP variant.")] = "newreno",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Events per second on the seed 000 single path with 4 TCP flows."""
    try:
        simulation = load(scenario_path("honc-single-path"), overrides={"duration": duration, "link_class.wireless.loss": loss, "tcp.variant": variant})
    except ScenarioError as e:
        raise fail(str(e)) from None
    timed_run(simulation, {"scenario": "honc-single-path", "loss": loss}, as_json)


@bench_app.command("grid")
def bench_grid(
    size: Annotated[int, typer.Option(min=2, help="Nodes per side of the square grid.")] = 20,
    flows: Annotated[int, typer.Option(min=1, help="TCP flows between random pairs.")] = 200,
    duration: Annotated[float, typer.Option(min=1.0, help="Simulated seconds.")] = 100.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Time and memory of a large mesh: a size x size grid with many flows."""
    from .experiments.grid import grid_scenario

    timed_run(load(grid_scenario(size, size, flows, duration)), {"nodes": size * size, "flows": flows}, as_json)


@app.command("tcp-demo")
def tcp_demo(
    duration: Annotated[float, typer.Option(min=1.0, help="Simulated seconds per run (the paper uses 10000).")] = 1000.0,
    out: Annotated[Path, typer.Option(help="Directory for the table and the plot.")] = Path("demo-out"),
    variant: Annotated[str, typer.Option(help="TCP variant: reno, newreno, sack, vegas or cubic.")] = "newreno",
) -> None:
    """Plain TCP on the seed 000 single path at per-hop loss 0, 5, 10 and 20%."""
    from .experiments import tcp_loss

    console.print(f"4 FTP flows over 1-3-5-8-11-10 (four 1 Mbit/s, 100 ms wireless hops), {variant}, {duration:,.0f} s per run")
    try:
        table = tcp_loss.sweep(duration_s=duration, variant=variant, on_done=lambda p: err.print(f"  loss {p:.0%} done"))
    except ScenarioError as e:
        raise fail(str(e)) from None
    shown = Table(title="TCP goodput and delay against wireless loss")
    for column in ("loss", "goodput (kbit/s)", "bound b(1-p)", "mean delay (s)", "retransmits", "timeouts", "fairness"):
        shown.add_column(column, justify="right")
    for r in table.itertuples():
        shown.add_row(f"{r.loss:.0%}", f"{r.throughput_bps / 1e3:,.1f}", f"{r.bound_bps / 1e3:,.0f}", f"{r.delay_mean_s:.3f}",
                      f"{r.retransmits:,}", f"{r.timeouts:,}", f"{r.fairness:.3f}")
    console.print(shown)
    write_text_atomically(out / "tcp-vs-loss.csv", table.to_csv(index=False))
    for path in tcp_loss.plot(table, out):
        console.print(f"wrote {path}")


def reproduce_with_progress(experiment, quick: bool, out: Path, store: str, jobs: Optional[int], dask: Optional[str], as_json: bool) -> dict:
    """Runs a reproduction (a module with `runs_planned` and `reproduce`) behind a progress bar."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn("runs"), BarColumn(), TextColumn("{task.completed}/{task.total}"), TimeRemainingColumn())
    try:
        with Progress(*columns, console=err, transient=True, disable=as_json) as bar:
            task = bar.add_task("runs", total=experiment.runs_planned(quick))
            return experiment.reproduce(quick, out, jobs=jobs, dask=dask, on_start=lambda _todo, skipped: bar.advance(task, skipped),
                                        on_done=lambda _t, _o: bar.advance(task))
    except KeyboardInterrupt:
        raise fail(f"interrupted; finished runs are kept in {out / store} and the next run resumes", 130) from None


@reproduce_app.command("honc2012")
def reproduce_honc2012(
    quick: Annotated[bool, typer.Option(help="One seed of 1000 s at four loss rates, instead of five seeds of 10000 s at eight.")] = False,
    out: Annotated[Path, typer.Option(help="Directory for the tables, figures and the results store.")] = Path("honc2012-out"),
    jobs: Annotated[Optional[int], typer.Option(help="Parallel runs; default: every core.")] = None,
    dask: Annotated[Optional[str], typer.Option(help="Run on a Dask cluster: a scheduler address, or 'local'.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object, {\"rows\": [...]}, one row per scheme, P_e and scenario.")] = False,
) -> None:
    """Seed 000: TCP, TCP/NC end to end and hop by hop, and TCP-HONC on the single path (Figs. 5-7) and two paths (Fig. 8).

    Runs go into a results store in OUT, so an interrupted reproduction resumes.
    """
    from .experiments import honc2012

    settings = honc2012.Settings.of(quick)
    result = reproduce_with_progress(honc2012, quick, out, "honc2012.sqlite", jobs, dask, as_json)
    fig5, claims = result["fig5"], result["claims"]
    if as_json:
        print(json.dumps({"rows": honc2012.json_rows(fig5)}))
        return
    shown = Table(title=f"Single path, {settings.duration_s:,.0f} s, {len(settings.seeds)} seed(s): total throughput (kbit/s) and mean delay (s)")
    shown.add_column("scheme")
    for p in settings.losses:
        shown.add_column(f"P_e {p:.2f}", justify="right")
    for scheme, rows in fig5.groupby("scheme", sort=False):
        rows = rows.set_index("loss")
        shown.add_row(scheme, *(f"{rows.throughput_bps[p] / 1e3:,.1f} ({rows.delay_mean_s[p]:.2f})" for p in settings.losses))
    console.print(shown)
    table = Table(title=f"Headline claims at P_e = {claims.loss.iloc[0]:.2f}")
    for column in ("claim", "measured", "paper"):
        table.add_column(column, justify="right" if column != "claim" else "left")
    for r in claims.itertuples():
        table.add_row(r.claim, f"{r.measured:.3f}", "" if r.paper != r.paper else f"{r.paper:.2f}")
    console.print(table)
    for path in result["figures"]:
        console.print(f"wrote {path}")


@reproduce_app.command("zhang2014")
def reproduce_zhang2014(
    quick: Annotated[bool, typer.Option(help="2 seeds of 2000 s instead of 5 of 10000 s.")] = False,
    out: Annotated[Path, typer.Option(help="Directory for the tables, figures and the results store.")] = Path("zhang2014-out"),
    jobs: Annotated[Optional[int], typer.Option(help="Parallel runs; default: every core.")] = None,
    dask: Annotated[Optional[str], typer.Option(help="Run on a Dask cluster: a scheduler address, or 'local'.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object with the rows.")] = False,
) -> None:
    """Seed 002: the TCP-NC Markov model, Kim and Abouzeid against simulated TCP/NC on Reno.

    Runs go into a results store in OUT, so an interrupted reproduction resumes.
    """
    from .experiments import zhang2014

    result = reproduce_with_progress(zhang2014, quick, out, "zhang2014.sqlite", jobs, dask, as_json)
    table, shares = result["table"], result["fairness"]
    if as_json:
        print(json.dumps({"rows": zhang2014.rows_json(table), "fairness": zhang2014.rows_json(shares)}))
        return
    shown = Table(title="TCP-NC on Reno, four-hop tandem: simulation against the Markov model (packets/s, packets)")
    for column in ("erasure", "CW_max", "simulated", "Markov", "error", "Kim", "Abouzeid", "sim cwnd", "model cwnd", "error"):
        shown.add_column(column, justify="right")
    for r in table.itertuples():
        shown.add_row(f"{r.erasure:.2f}", str(r.cwmax), f"{r.sim_throughput:.2f}", f"{r.markov_throughput:.2f}", f"{r.throughput_error:+.0%}",
                      f"{r.kim_throughput:.2f}", f"{r.abouzeid_throughput:.2f}", f"{r.sim_cwnd:.1f}", f"{r.markov_cwnd:.1f}", f"{r.cwnd_error:+.0%}")
    console.print(shown)
    for r in shares.itertuples():
        console.print(f"R = {r.R:.4f} ({r.redundancy}): TCP-NC / TCP-Reno throughput = {r.nc_to_reno_ratio:.3f}")
    console.print("paper (sec. 5.6): R = 1.015 gives 1.415, R = 1/(1-p) = 1.064 gives 4.963")
    for path in result["figures"]:
        console.print(f"wrote {path}")


@app.command("codec-demo")
def codec_demo_command(
    file: Annotated[Optional[Path], typer.Option(help="File to send; default: a generated one.")] = None,
    size_mb: Annotated[float, typer.Option(help="Size of the generated file, in MB.")] = 4.0,
    loss: Annotated[float, typer.Option(min=0.0, max=0.99, help="Loss probability on each hop.")] = 0.3,
    symbols: Annotated[int, typer.Option(min=1, max=65535, help="Generation size g.")] = 64,
    symbol_bytes: Annotated[int, typer.Option(min=1, help="Symbol size in bytes.")] = 1500,
    seed: Annotated[int, typer.Option(help="Seed of the losses and of the generated file.")] = 1,
    quick: Annotated[bool, typer.Option(help="A small file, for a smoke test.")] = False,
) -> None:
    """Send a file over two lossy hops through a recoding relay, decode, verify."""
    if file is not None:
        try:
            data = file.read_bytes()
        except OSError as e:
            raise typer.BadParameter(f"cannot read {file}: {e.strerror}", param_hint="--file") from None
    else:
        data = codec_demo.make_file(int((0.2 if quick else size_mb) * 1e6), seed)
    result = codec_demo.run(data, symbols=symbols, symbol_bytes=symbol_bytes, loss=loss, seed=seed)

    hops = Table(title=f"{result.bytes / 1e6:.2f} MB in {result.generations} generations of "
                       f"{symbols} x {symbol_bytes} B over GF(2^8), {loss:.0%} loss per hop")
    for column in ("hop", "packets sent", "lost", "loss rate"):
        hops.add_column(column, justify="right")
    for name, hop in (("source -> relay", result.source_hop), ("relay -> sink", result.relay_hop)):
        hops.add_row(name, str(hop.sent), str(hop.lost), f"{hop.lost / max(hop.sent, 1):.1%}")
    console.print(hops)

    needed = result.generations * symbols
    speed = Table(title="Throughput from Python", caption=f"kernels: {simd_isa()}, one symbol per call")
    for column in ("operation", "MB/s"):
        speed.add_column(column, justify="right")
    for op in ("encode", "recode", "decode"):
        speed.add_row(op, f"{result.mb_per_s(op):,.0f}")
    console.print(speed)
    received = result.relay_hop.sent - result.relay_hop.lost
    console.print(f"sink received {received} packets for {needed} source packets "
                  f"({received / needed - 1:+.1%}), {result.innovative_at_sink} innovative")
    if not result.verified:
        console.print("[bold red]verification FAILED: decoded file differs[/]")
        raise typer.Exit(1)
    console.print("[bold green]decoded file verified (SHA-256 identical)[/]")



@app.command("sweep")
def sweep_command(
    sweep_file: Annotated[Path, typer.Argument(metavar="SWEEP.toml", help="Sweep file: base scenario, axes, seeds, metrics.")],
    jobs: Annotated[Optional[int], typer.Option("--jobs", "-j", min=1, help="Parallel runs (default: all cores; with --dask local, workers).")] = None,
    dask: Annotated[Optional[str], typer.Option(help="Run on a Dask cluster: a scheduler address, or 'local' to start one here.")] = None,
    db: Annotated[Path, typer.Option(help="Results store (SQLite); time series go beside it in DB-STEM.runs/.")] = Path("results.sqlite"),
    rerun: Annotated[bool, typer.Option(help="Run again what the store already holds (default: skip it).")] = False,
    threads: Annotated[bool, typer.Option(help="Local threads instead of worker processes.")] = False,
) -> None:
    """Run a parameter sweep into a results store; an interrupted sweep resumes where it stopped."""
    from .sweep import cli_sweep

    cli_sweep(sweep_file, jobs=jobs, dask=dask, db=db, rerun=rerun, threads=threads, fail=fail)


@app.command("results")
def results_command(
    db: Annotated[Path, typer.Argument(help="Results store written by ncmesh sweep.")],
    where: Annotated[Optional[str], typer.Option(help="SQL condition over the columns, e.g. \"status = 'ok' AND seed = 1\".")] = None,
    format: Annotated[str, typer.Option(help="csv, parquet or json.")] = "csv",
    out: Annotated[Optional[Path], typer.Option(help="Output file (default: standard output; required for parquet).")] = None,
) -> None:
    """Export the runs of a results store as a table, one row per run."""
    from .results import cli_export

    cli_export(db, where=where, format=format, out=out, fail=fail)


@app.command("report")
def report_command(
    db: Annotated[Path, typer.Argument(help="Results store written by ncmesh sweep.")],
    out: Annotated[Path, typer.Option(help="HTML file to write.")] = Path("report.html"),
    run: Annotated[Optional[str], typer.Option("--run", help="Key (or key prefix) of the run whose time series to plot; default the first.")] = None,
) -> None:
    """Write one self-contained HTML page: metrics against each axis with 95% CIs, time series, the table of runs."""
    from .report import cli_report

    cli_report(db, out=out, run=run, fail=fail)


if __name__ == "__main__":
    app()
