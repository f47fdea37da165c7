"""``ncmesh bench``: the simulator's speed and memory."""

from __future__ import annotations

import json
import time
from typing import Annotated, Any

import typer

from ._base import app, fail, finite, out

bench_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, help="Measure speed.")
app.add_typer(bench_app, name="bench")


def timed_run(simulation: Any, describe: dict[str, Any], as_json: bool) -> None:
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
        out().print(
            f"{report['events']:,} events in {wall:.2f} s ({report['events_per_s'] / 1e6:.2f} M events/s) "
            f"for {report['sim_time_s']:,.0f} simulated s; peak RSS {report['peak_rss_bytes'] / 2**20:.0f} MiB"
        )


@bench_app.command("sim")
def bench_sim(
    loss: Annotated[float, typer.Option(parser=finite(0.0, 0.99), help="Loss on each wireless hop, 0 to 0.99.")] = 0.0,
    duration: Annotated[float, typer.Option(parser=finite(1.0), help="Simulated seconds, at least 1.")] = 10_000.0,
    variant: Annotated[str, typer.Option(help="TCP variant.")] = "newreno",
    payloads: Annotated[str, typer.Option(help="virtual or real: what crosses the links.")] = "virtual",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Events per second on the seed 000 single path with 4 TCP flows."""
    from ..paths import scenario
    from ..simulate import ScenarioError, load

    overrides = {"duration": duration, "link_class.wireless.loss": loss, "tcp.variant": variant, "payloads": payloads}
    try:
        simulation = load(scenario("honc-single-path"), overrides=overrides)
    except ScenarioError as e:
        raise fail(str(e)) from None
    timed_run(simulation, {"scenario": "honc-single-path", "loss": loss, "payloads": payloads}, as_json)


@bench_app.command("grid")
def bench_grid(
    size: Annotated[int, typer.Option(min=2, max=200, help="Nodes per side of the square grid.")] = 20,
    flows: Annotated[int, typer.Option(min=1, help="TCP flows between random pairs.")] = 200,
    duration: Annotated[float, typer.Option(parser=finite(1.0), help="Simulated seconds, at least 1.")] = 100.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Time and memory of a large mesh: a size x size grid with many flows."""
    from ..experiments.grid import grid_scenario
    from ..simulate import load

    timed_run(load(grid_scenario(size, size, flows, duration)), {"nodes": size * size, "flows": flows}, as_json)


@bench_app.command("wifi")
def bench_wifi(
    seeds: Annotated[int, typer.Option(min=1, help="Runs per case, each in both simulators.")] = 5,
    duration: Annotated[float, typer.Option(parser=finite(1.0), help="Simulated seconds per run, at least 1.")] = 30.0,
    ns3: Annotated[bool, typer.Option(help="Compare with ns-3 (needs: pip install ns3).")] = True,
    mesh_nodes: Annotated[int, typer.Option(min=2, help="Nodes of the random mesh.")] = 100,
    mesh_flows: Annotated[int, typer.Option(min=1, help="TCP flows of the random mesh.")] = 20,
    mesh_duration: Annotated[
        float, typer.Option(parser=finite(1.0), help="Simulated seconds of the random mesh, at least 1.")
    ] = 100.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """The shared 802.11 channel against ns-3's wifi module on the same cases,
    alternating in one run, and the time and memory of a large random mesh."""
    from .. import bench_wifi
    from ._base import say

    cases = list(bench_wifi.CASES)
    rows = bench_wifi.compare(cases, list(range(1, seeds + 1)), duration, ns3=ns3, log=say)
    mesh = bench_wifi.mesh_in_child(mesh_nodes, mesh_flows, mesh_duration)
    say(f"mesh: {mesh['wall_s']:.2f} s for {mesh_duration:g} simulated s")
    # Peak memory at a quarter of the duration: it must not be smaller.
    shorter = bench_wifi.mesh_in_child(mesh_nodes, mesh_flows, mesh_duration / 4)
    report = {"cases": rows, "mesh": mesh, "mesh_quarter": shorter}
    if as_json:
        print(json.dumps(report))
        return
    from rich.table import Table

    table = Table("case", "ncmesh (Mbit/s)", "ns-3 (Mbit/s)", "ratio", "ncmesh wall (s)", "ns-3 wall (s)", "speed")
    for r in rows:
        theirs = r.get("ns3_goodput_bps")
        table.add_row(
            r["case"],
            f"{r['ncmesh_goodput_bps'] / 1e6:.3f}",
            "-" if theirs is None else f"{theirs / 1e6:.3f}",
            "-" if theirs is None else f"{r['goodput_ratio']:.3f}",
            f"{r['ncmesh_wall_s']:.3f}",
            "-" if theirs is None else f"{r['ns3_wall_s']:.2f}",
            "-" if theirs is None else f"{r['speed_ratio']:.0f}x",
        )
    out().print(table)
    out().print(
        f"random mesh, {mesh_nodes} nodes, {mesh_flows} TCP flows, {mesh_duration:g} s: {mesh['wall_s']:.2f} s wall, "
        f"{mesh['events']:,} events, peak RSS {mesh['peak_rss_bytes'] / 2**20:.0f} MiB "
        f"({shorter['peak_rss_bytes'] / 2**20:.0f} MiB at {mesh_duration / 4:g} s)"
    )
