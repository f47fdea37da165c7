"""``ncmesh reproduce``: the seed papers' figures against the simulator."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any

import typer

from ._base import app, err, fail, out

reproduce_app = typer.Typer(
    no_args_is_help=True, rich_markup_mode=None, help="Reproduce a seed paper's figures against the simulator."
)
app.add_typer(reproduce_app, name="reproduce")


def reproduce_with_progress(
    experiment: ModuleType,
    quick: bool,
    out_dir: Path,
    store: str,
    jobs: int | None,
    dask: str | None,
    as_json: bool,
) -> dict[str, Any]:
    """Runs a reproduction (a module with `runs_planned` and `reproduce`) behind a progress bar."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn("runs"), BarColumn(), TextColumn("{task.completed}/{task.total}"), TimeRemainingColumn())
    try:
        with Progress(*columns, console=err(), transient=True, disable=as_json) as bar:
            task = bar.add_task("runs", total=experiment.runs_planned(quick))
            return experiment.reproduce(
                quick,
                out_dir,
                jobs=jobs,
                dask=dask,
                on_start=lambda _todo, skipped: bar.advance(task, skipped),
                on_done=lambda _t, _o: bar.advance(task),
            )
    except KeyboardInterrupt:
        raise fail(f"interrupted; finished runs are kept in {out_dir / store} and the next run resumes", 130) from None


@reproduce_app.command("honc2012")
def reproduce_honc2012(
    quick: Annotated[
        bool, typer.Option(help="One seed of 1000 s at four loss rates, instead of five seeds of 10000 s at eight.")
    ] = False,
    out_dir: Annotated[
        Path, typer.Option("--out", help="Directory for the tables, figures and the results store.")
    ] = Path("honc2012-out"),
    jobs: Annotated[int | None, typer.Option(help="Parallel runs; default: every core.")] = None,
    dask: Annotated[str | None, typer.Option(help="Run on a Dask cluster: a scheduler address, or 'local'.")] = None,
    as_json: Annotated[
        bool,
        typer.Option("--json", help='Print one JSON object, {"rows": [...]}, one row per scheme, P_e and scenario.'),
    ] = False,
) -> None:
    """Seed 000: TCP, TCP/NC end to end and hop by hop, and TCP-HONC on one path (Figs. 5-7) and two (Fig. 8).

    Runs go into a results store in OUT, so an interrupted reproduction resumes.
    """
    from rich.table import Table

    from ..experiments import honc2012

    settings = honc2012.Settings.of(quick)
    result = reproduce_with_progress(honc2012, quick, out_dir, "honc2012.sqlite", jobs, dask, as_json)
    fig5, claims = result["fig5"], result["claims"]
    if as_json:
        print(json.dumps({"rows": honc2012.json_rows(fig5)}))
        return
    shown = Table(
        title=f"Single path, {settings.duration_s:,.0f} s, {len(settings.seeds)} seed(s): "
        "total throughput (kbit/s) and mean delay (s)"
    )
    shown.add_column("scheme")
    for p in settings.losses:
        shown.add_column(f"P_e {p:.2f}", justify="right")
    for scheme, rows in fig5.groupby("scheme", sort=False):
        rows = rows.set_index("loss")
        shown.add_row(
            scheme, *(f"{rows.throughput_bps[p] / 1e3:,.1f} ({rows.delay_mean_s[p]:.2f})" for p in settings.losses)
        )
    out().print(shown)
    table = Table(title=f"Headline claims at P_e = {claims.loss.iloc[0]:.2f}")
    for column in ("claim", "measured", "paper", "paper, other reading"):
        table.add_column(column, justify="right" if column != "claim" else "left")
    for r in claims.itertuples():
        table.add_row(
            r.claim,
            f"{r.measured:.3f}",
            *("" if x != x else f"{x:.2f}" for x in (r.paper, r.paper_other_reading)),
        )
    out().print(table)
    out().print(
        'The paper\'s "outperforms by 236% and 143%" is read as +236% and +143% (3.36x, 2.43x), '
        "as eq. (5) and its text imply; the other reading (2.36x, 1.43x) is shown beside it."
    )
    for path in result["figures"]:
        out().print(f"wrote {path}")


@reproduce_app.command("zhang2014")
def reproduce_zhang2014(
    quick: Annotated[bool, typer.Option(help="2 seeds of 2000 s instead of 5 of 10000 s.")] = False,
    out_dir: Annotated[
        Path, typer.Option("--out", help="Directory for the tables, figures and the results store.")
    ] = Path("zhang2014-out"),
    jobs: Annotated[int | None, typer.Option(help="Parallel runs; default: every core.")] = None,
    dask: Annotated[str | None, typer.Option(help="Run on a Dask cluster: a scheduler address, or 'local'.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object with the rows.")] = False,
) -> None:
    """Seed 002: the TCP-NC Markov model, Kim and Abouzeid against simulated TCP/NC on Reno.

    Runs go into a results store in OUT, so an interrupted reproduction resumes.
    """
    from rich.table import Table

    from ..experiments import zhang2014

    result = reproduce_with_progress(zhang2014, quick, out_dir, "zhang2014.sqlite", jobs, dask, as_json)
    table, shares = result["table"], result["fairness"]
    if as_json:
        print(json.dumps({"rows": zhang2014.rows_json(table), "fairness": zhang2014.rows_json(shares)}))
        return
    shown = Table(title="TCP-NC on Reno, four-hop tandem: simulation against the Markov model (packets/s, packets)")
    for column in (
        "erasure",
        "CW_max",
        "simulated",
        "Markov",
        "error",
        "Kim",
        "Abouzeid",
        "sim cwnd",
        "model cwnd",
        "error",
    ):
        shown.add_column(column, justify="right")
    for r in table.itertuples():
        shown.add_row(
            f"{r.erasure:.2f}",
            str(r.cwmax),
            f"{r.sim_throughput:.2f}",
            f"{r.markov_throughput:.2f}",
            f"{r.throughput_error:+.0%}",
            f"{r.kim_throughput:.2f}",
            f"{r.abouzeid_throughput:.2f}",
            f"{r.sim_cwnd:.1f}",
            f"{r.markov_cwnd:.1f}",
            f"{r.cwnd_error:+.0%}",
        )
    out().print(shown)
    for r in shares.itertuples():
        out().print(f"R = {r.R:.4f} ({r.redundancy}): TCP-NC / TCP-Reno throughput = {r.nc_to_reno_ratio:.3f}")
    out().print("paper (sec. 5.6): R = 1.015 gives 1.415, R = 1/(1-p) = 1.064 gives 4.963")
    for path in result["figures"]:
        out().print(f"wrote {path}")
