"""``ncmesh emulate``: a scenario's links in real time between network namespaces."""

from __future__ import annotations

import json
import signal
from types import FrameType
from typing import Annotated

import typer

from ._base import app, fail, out, parse_assignments, scenario_file


class _Terminated(Exception):
    """SIGTERM arrived: raised from its handler so that the emulation stops
    as on Ctrl-C, its commands ended and its namespaces deleted."""


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise _Terminated


def _commands(given: list[str], background: bool, option: str) -> list[tuple[int, str, float, bool]]:
    """``NODE=COMMAND`` options as (node, command, start, background)."""
    commands = []
    for c in given:
        node, sep, command = c.partition("=")
        if not sep or not node.strip().isdigit() or not command.strip():
            raise fail(f"{option} {c}: expected NODE=COMMAND, such as 6='iperf3 -s'")
        commands.append((int(node), command.strip(), 0.0, background))
    return commands


@app.command()
def emulate(
    scenario: Annotated[str, typer.Argument(help="Scenario file (TOML), or the name of a shipped one.")],
    run_: Annotated[
        list[str] | None,
        typer.Option("--run", help="Run a command in a node's namespace and wait for it: --run 1='ping -c 3 10.0.0.6'"),
    ] = None,
    serve: Annotated[
        list[str] | None,
        typer.Option("--serve", help="Run a server in a node's namespace, ended at the close: --serve 6='iperf3 -s'"),
    ] = None,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="Override a key: --set link_class.hop.loss=0.01")
    ] = None,
    seed: Annotated[
        # 2**63 - 1 is simulate.MAX_SEED, written out so that the command line starts without the simulator.
        int | None, typer.Option(min=0, max=2**63 - 1, help="Seed of the links' loss processes.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as one JSON object.")] = False,
) -> None:
    """Run a scenario's point-to-point links in real time between Linux network
    namespaces, one per node (needs root), with the scenario's [emulate]
    commands and those given here. Node N is 10.0.0.N for the N-th node listed."""
    from ..emulate import EmulateError
    from ..emulate import emulate as run_emulation
    from ..simulate import ScenarioError

    path = scenario_file(scenario)
    commands = _commands(run_ or [], False, "--run") + _commands(serve or [], True, "--serve")
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        report = run_emulation(path, commands=commands, toml_overrides=parse_assignments(set_ or []), seed=seed)
    except (ScenarioError, EmulateError) as e:
        raise fail(str(e)) from None
    except KeyboardInterrupt:
        raise fail("interrupted", 130) from None
    except _Terminated:
        raise fail("terminated", 128 + signal.SIGTERM) from None
    finally:
        signal.signal(signal.SIGTERM, previous)
    failed = [c for c in report["commands"] if c["status"] not in (0, None)]
    if as_json:
        print(json.dumps(report))
        raise typer.Exit(1 if failed else 0)
    from rich.table import Table

    nodes = Table(title="Nodes")
    for column in ("node", "namespace", "address"):
        nodes.add_column(column)
    for n in report["nodes"]:
        nodes.add_row(str(n["node"]), n["namespace"], n["address"])
    out().print(nodes)
    for c in report["commands"]:
        status = "ended at the close" if c["status"] is None else f"exit {c['status']}"
        out().print(f"[bold]node {c['node']}: {c['run']}[/] ({status})", highlight=False)
        out().print((c["stdout"] + c["stderr"]).rstrip(), markup=False, highlight=False)
    links = Table(title="Links")
    for column in ("from", "to", "received", "dropped", "lost", "delivered"):
        links.add_column(column, justify="right")
    for link in report["links"]:
        links.add_row(*(f"{link[k]:,}" for k in ("from", "to", "received", "dropped", "lost", "delivered")))
    out().print(links)
    t = report["timing"]
    out().print(
        f"timing error over {t['samples']:,} deliveries: mean {t['mean_us']:.0f} us, median {t['p50_us']:.0f} us, "
        f"99% {t['p99_us']:.0f} us, 99.9% {t['p999_us']:.0f} us, max {t['max_us']:.0f} us "
        f"(load average {report['load_before'].split()[0]} before, {report['load_after'].split()[0]} after; "
        f"{'real-time' if t['realtime'] else 'ordinary'} scheduling)"
    )
    raise typer.Exit(1 if failed else 0)
