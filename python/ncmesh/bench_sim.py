"""ncmesh against ns-3 on the seed 000 single path, in one run.

Run as ``python -m ncmesh.bench_sim``. For each loss rate it times ncmesh's
``Simulation.run_until`` in this process and ns-3's ``Simulator::Run()`` in a
child process (``python -m ncmesh.bench_ns3``, which needs the ``ns3`` wheel),
both on scenarios/honc-single-path.toml with SACK on and an initial window
of one segment, and prints wall times, their ratio and both goodputs.

Timed losses (``--timed``) run ``--repeat`` times and report the median wall
time; the other losses (``--losses``) run once, for the goodput comparison.
ns-3 runs once more per loss with its C++ counters of retransmissions and
timeouts, outside the timed runs. Runs are sequential: one core at a time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from .paths import scenario as scenario_path
from .simulate import load

SCENARIO = "honc-single-path"


def run_ncmesh(duration: float, loss: float, variant: str | None = None) -> dict[str, Any]:
    """One timed ncmesh run; only ``run_until`` is inside the timer.

    ``variant`` overrides the scenario's TCP variant (newreno): ``sack`` is
    Reno with RFC 6675 recovery, the closest to what ns-3 runs (below).
    """
    overrides: dict[str, Any] = {
        "duration": duration,
        "link_class.wireless.loss": loss,
        "tcp.sack": True,
        "tcp.initial_cwnd": 1,
    }
    if variant is not None:
        overrides["tcp.variant"] = variant
    simulation = load(scenario_path(SCENARIO), overrides=overrides)
    started = time.perf_counter()
    simulation.run_until(duration)
    wall = time.perf_counter() - started
    events = simulation.events
    now = simulation.now_s
    flows = simulation.finish()["tables"]["flows"]
    return {
        "simulator": "ncmesh",
        "loss": loss,
        "wall_s": wall,
        "sim_time_s": now,
        "events": events,
        "events_per_s": events / wall,
        "goodput_bps": sum(flows.column("delivered_bytes")) * 8 / duration,
        "data_segments": sum(flows.column("packets_sent")),
        "retransmits": sum(flows.column("retransmits")),
        "timeouts": sum(flows.column("timeouts")),
    }


def run_ns3(duration: float, loss: float, counters: bool = False) -> dict[str, Any]:
    """One ns-3 run in a child process (the ns-3 simulator is a process-wide singleton)."""
    command = [sys.executable, "-m", "ncmesh.bench_ns3", "--duration", repr(duration), "--loss", repr(loss), "--json"]
    if counters:
        command.append("--counters")
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = "\n".join(done.stderr.splitlines()[-10:])
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}:\n{tail}")
    row: dict[str, Any] = json.loads(lines[-1])
    return row


def compare(
    losses: list[float],
    timed: list[float],
    repeat: int,
    duration: float,
    ns3_duration: float,
    log: Callable[[str], None] = lambda _m: None,
) -> list[dict[str, Any]]:
    rows = []
    for loss in sorted(set(losses) | set(timed)):
        n = repeat if loss in timed else 1
        ours, theirs = [], []
        for i in range(n):
            ours.append(run_ncmesh(duration, loss))
            theirs.append(run_ns3(ns3_duration, loss))
            log(f"loss {loss:g} run {i + 1}/{n}: ncmesh {ours[-1]['wall_s']:.3f} s, ns-3 {theirs[-1]['wall_s']:.2f} s")
        counted = run_ns3(ns3_duration, loss, counters=True)
        # ns-3's TcpNewReno is only a congestion control: its loss recovery
        # (TcpPrrRecovery over the SACK scoreboard) is RFC 6675-like, so
        # ncmesh's sack variant is run too, for the goodput comparison.
        sack = run_ncmesh(duration, loss, variant="sack")
        ours_wall = statistics.median(r["wall_s"] for r in ours)
        theirs_wall = statistics.median(r["wall_s"] for r in theirs)
        # Normalise to wall seconds per simulated second in case ns-3 ran shorter.
        ratio = (theirs_wall / ns3_duration) / (ours_wall / duration)
        rows.append(
            {
                "loss": loss,
                "runs": n,
                "ncmesh_wall_s": [r["wall_s"] for r in ours],
                "ns3_wall_s": [r["wall_s"] for r in theirs],
                "ncmesh_wall_median_s": ours_wall,
                "ns3_wall_median_s": theirs_wall,
                "speed_ratio": ratio,
                "ncmesh_events": ours[0]["events"],
                "ns3_events": theirs[0]["events"],
                "ncmesh_events_per_s": ours[0]["events"] / ours_wall,
                "ns3_events_per_s": theirs[0]["events"] / theirs_wall,
                "ncmesh_goodput_bps": ours[0]["goodput_bps"],
                "ns3_goodput_bps": theirs[0]["goodput_bps"],
                "ncmesh_sack_goodput_bps": sack["goodput_bps"],
                "ncmesh_sack_retransmits": sack["retransmits"],
                "ncmesh_sack_timeouts": sack["timeouts"],
                "goodput_ratio": theirs[0]["goodput_bps"] / ours[0]["goodput_bps"] if ours[0]["goodput_bps"] else None,
                "ncmesh_data_segments": ours[0]["data_segments"],
                "ncmesh_retransmits": ours[0]["retransmits"],
                "ncmesh_timeouts": ours[0]["timeouts"],
                "ns3_data_segments": counted["data_segments"],
                "ns3_retransmits": counted["retransmits"],
                "ns3_timeouts": counted["timeouts"],
                "ns3_recoveries": counted["recoveries"],
                "ns3_loss_entries": counted["loss_entries"],
                "ncmesh_duration_s": duration,
                "ns3_duration_s": ns3_duration,
                "ns3_version": theirs[0].get("version"),
            }
        )
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    out = [
        "| loss | runs | ncmesh wall (s) | ns-3 wall (s) | ns-3 / ncmesh | ncmesh M events/s | ns-3 M events/s |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['loss']:g} | {r['runs']} | {r['ncmesh_wall_median_s']:.3f} | {r['ns3_wall_median_s']:.2f} | "
            f"{r['speed_ratio']:.0f}x | {r['ncmesh_events_per_s'] / 1e6:.1f} | {r['ns3_events_per_s'] / 1e6:.2f} |"
        )
    out += [
        "",
        "| loss | ncmesh goodput (kbit/s) | ns-3 goodput (kbit/s) | ns-3 / ncmesh | ncmesh sack variant (kbit/s) | "
        "ns-3 / ncmesh sack | data segments ncmesh / ns-3 | retransmits ncmesh / ns-3 | timeouts ncmesh / ns-3 | "
        "ns-3 fast recoveries |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ratio = "–" if r["goodput_ratio"] is None else f"{r['goodput_ratio']:.3f}"
        sack = "–" if not r["ncmesh_sack_goodput_bps"] else f"{r['ns3_goodput_bps'] / r['ncmesh_sack_goodput_bps']:.3f}"
        out.append(
            f"| {r['loss']:g} | {r['ncmesh_goodput_bps'] / 1e3:,.1f} | {r['ns3_goodput_bps'] / 1e3:,.1f} | {ratio} | "
            f"{r['ncmesh_sack_goodput_bps'] / 1e3:,.1f} | {sack} | "
            f"{r['ncmesh_data_segments']:,} / {r['ns3_data_segments']:,} | "
            f"{r['ncmesh_retransmits']:,} / {r['ns3_retransmits']:,} | "
            f"{r['ncmesh_timeouts']:,} / {r['ns3_timeouts']:,} | "
            f"{r['ns3_recoveries']:,} |"
        )
    return "\n".join(out)


def parse_losses(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ncmesh.bench_sim", description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=float, default=10_000.0, help="simulated seconds for ncmesh (default 10000)")
    parser.add_argument(
        "--ns3-duration", type=float, default=None, help="simulated seconds for ns-3 (default: --duration)"
    )
    parser.add_argument(
        "--timed", type=parse_losses, default=[0.0, 0.01], help="losses timed --repeat times (default 0,0.01)"
    )
    parser.add_argument(
        "--losses", type=parse_losses, default=[0.05, 0.2], help="losses run once more for goodput (default 0.05,0.2)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per timed loss; the median is reported (default 3)")
    parser.add_argument("--json", action="store_true", help="print the rows as one JSON object instead of tables")
    args = parser.parse_args(argv)
    ns3_duration = args.ns3_duration or args.duration
    rows = compare(
        args.losses,
        args.timed,
        args.repeat,
        args.duration,
        ns3_duration,
        log=lambda m: print(m, file=sys.stderr, flush=True),
    )
    if args.json:
        print(json.dumps({"scenario": SCENARIO, "rows": rows}))
    else:
        print(
            f"{SCENARIO}: ncmesh {args.duration:g} s, ns-3 {rows[0]['ns3_version']} {ns3_duration:g} s simulated; "
            f"wall time of the run only, median of {args.repeat} for the timed losses"
        )
        print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
