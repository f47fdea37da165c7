"""``ncmesh validate``: the simulator against analytic models, as tables anyone can check."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from ._base import app, fail, finite, out

validate_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, help="Check the simulator against models.")
app.add_typer(validate_app, name="validate")


MOST_STATIONS = 500
"""The most stations ``validate bianchi`` simulates; Bianchi's curves are flat long before."""


def _stations(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",")]  # an empty element is a typo, not nothing
    except ValueError:
        raise fail(f"--stations {text}: expected comma-separated counts, such as 1,2,5") from None
    if min(values) < 1 or max(values) > MOST_STATIONS:
        raise fail(f"--stations {text}: expected counts from 1 to {MOST_STATIONS}")
    return values


@validate_app.command("bianchi")
def bianchi(
    stations: Annotated[
        str, typer.Option(help="Numbers of saturated stations, comma-separated, 1 to 500 each.")
    ] = "1,2,5,10,20,50",
    duration: Annotated[float, typer.Option(parser=finite(1.0), help="Simulated seconds per run, at least 1.")] = 30.0,
    seeds: Annotated[int, typer.Option(min=1, help="Runs per point; the mean is reported.")] = 3,
    as_json: Annotated[bool, typer.Option("--json", help='Print {"rows": [...]}.')] = False,
) -> None:
    """Saturation throughput of n stations sending to one receiver on 802.11b at
    11 Mbit/s with 1500-byte payloads, basic access and RTS/CTS, against
    Bianchi's model (docs/validation.md)."""
    from ..experiments.wifi import bianchi_rows

    rows = bianchi_rows(_stations(stations), ("basic", "rts"), duration, tuple(range(1, seeds + 1)))
    if as_json:
        print(json.dumps({"rows": rows}))
        return
    from rich.table import Table

    table = Table("n", "access", "model (Mbit/s)", "simulated (Mbit/s)", "ratio")
    for r in rows:
        table.add_row(
            str(r["n"]), r["access"], f"{r['model_mbps']:.3f}", f"{r['simulated_mbps']:.3f}", f"{r['ratio']:.4f}"
        )
    out().print(table)
