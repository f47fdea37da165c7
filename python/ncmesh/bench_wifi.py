"""The shared 802.11 channel against ns-3's wifi module, in one run, and a
large random mesh. ``ncmesh bench wifi`` runs it; docs/benchmarks.md and
docs/validation.md record what it printed.

For each case and seed, ncmesh runs in this process and ns-3 in a worker
process (``python -m ncmesh.bench_ns3_wifi serve``, which needs the ``ns3``
wheel), one after the other, so that both see the same machine load. Only
the simulation itself is timed: ``Simulation.run_until`` and
``Simulator::Run()``. Goodputs are compared per case as the mean over seeds
of the flows' total.

The mesh: ``mesh_scenario`` places nodes uniformly at random on a square and
runs TCP flows between random pairs that routing connects. Its peak memory is
measured in child processes at two durations, to show it does not grow with
simulated time.
"""

from __future__ import annotations

import json
import random
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from .paths import scenario
from .simulate import load

#: ncmesh's side of each case of ``bench_ns3_wifi.CASES``: a shipped scenario and overrides.
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "saturated-link": ("wifi-saturated-link", {}),
    "line-udp": ("wifi-line", {"flows.0.app": "cbr", "flows.0.rate": "11Mbps", "flows.0.packet_size": 1472}),
    "line-tcp": ("wifi-line", {}),
    # Stock ns-3 has no zone where frames are sensed but not decoded: the X
    # runs with sense = reach = 20 m there, so S1 and S2 are hidden at R1.
    "x": ("wifi-x", {"wifi.sense": 20}),
    "hidden": ("wifi-hidden-pair", {}),
    # ns-3 has one retry limit for RTS and data alike: 7 attempts here.
    "hidden-rts": ("wifi-hidden-pair", {"wifi.rts_threshold": 0, "wifi.long_retry_limit": 7}),
}


def _timed(simulation: Any, duration: float) -> tuple[float, int, list[float]]:
    """Runs a loaded simulation to ``duration``, timing only that; wall time, events, goodputs."""
    started = time.perf_counter()
    simulation.run_until(duration)
    wall = time.perf_counter() - started
    events = simulation.events
    goodputs = simulation.finish()["tables"]["flows"].column("goodput_bps")
    return wall, events, goodputs


def run_ncmesh(case: str, seed: int, duration: float) -> dict[str, Any]:
    name, overrides = CASES[case]
    simulation = load(scenario(name), seed=seed, overrides={**overrides, "duration": duration})
    wall, events, goodputs = _timed(simulation, duration)
    return {
        "simulator": "ncmesh",
        "case": case,
        "seed": seed,
        "wall_s": wall,
        "events": events,
        "goodput_bps": goodputs,
    }


class Ns3Worker:
    """ns-3 in a child process that answers one request per line."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "ncmesh.bench_ns3_wifi", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self._read()

    def _read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("{"):
                reply: dict[str, Any] = json.loads(line)
                return reply
        raise RuntimeError(f"the ns-3 worker exited ({self.process.wait()}); is the ns3 wheel installed?")

    def run(self, case: str, seed: int, duration: float) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"case": case, "seed": seed, "duration": duration}) + "\n")
        self.process.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait()


def compare(
    cases: list[str],
    seeds: list[int],
    duration: float,
    ns3: bool = True,
    log: Callable[[str], None] = lambda _m: None,
) -> list[dict[str, Any]]:
    """Per case: both simulators' goodputs and wall times over the seeds, alternating."""
    worker = Ns3Worker() if ns3 else None
    rows = []
    try:
        for case in cases:
            ours, theirs = [], []
            for seed in seeds:
                ours.append(run_ncmesh(case, seed, duration))
                if worker is not None:
                    theirs.append(worker.run(case, seed, duration))
                log(
                    f"{case} seed {seed}: ncmesh {ours[-1]['wall_s']:.3f} s"
                    + (f", ns-3 {theirs[-1]['wall_s']:.2f} s" if theirs else "")
                )
            row: dict[str, Any] = {
                "case": case,
                "seeds": len(seeds),
                "duration_s": duration,
                "ncmesh_goodput_bps": statistics.mean(sum(r["goodput_bps"]) for r in ours),
                "ncmesh_flow_goodput_bps": [
                    statistics.mean(f) for f in zip(*(r["goodput_bps"] for r in ours), strict=True)
                ],
                "ncmesh_wall_s": sum(r["wall_s"] for r in ours),
                "ncmesh_events": sum(r["events"] for r in ours),
            }
            if theirs:
                row.update(
                    ns3_goodput_bps=statistics.mean(sum(r["goodput_bps"]) for r in theirs),
                    ns3_flow_goodput_bps=[
                        statistics.mean(f) for f in zip(*(r["goodput_bps"] for r in theirs), strict=True)
                    ],
                    ns3_wall_s=sum(r["wall_s"] for r in theirs),
                    ns3_events=sum(r["events"] for r in theirs),
                )
                row["goodput_ratio"] = row["ncmesh_goodput_bps"] / row["ns3_goodput_bps"]
                row["speed_ratio"] = row["ns3_wall_s"] / row["ncmesh_wall_s"]
            rows.append(row)
    finally:
        if worker is not None:
            worker.close()
    return rows


def mesh_scenario(nodes: int = 100, flows: int = 20, duration: float = 100.0, seed: int = 1) -> dict[str, Any]:
    """``nodes`` placed uniformly at random on a square of 1000 m per 100
    nodes' worth of area, reach 250 m and sense 550 m (the ranges of ns-2's
    802.11 defaults), and ``flows`` NewReno bulk flows between random pairs
    that the reach graph connects."""
    rng = random.Random(seed)
    side = 1000.0 * (nodes / 100) ** 0.5
    points = [[rng.uniform(0, side), rng.uniform(0, side)] for _ in range(nodes)]
    reach = 250.0

    def component(start: int) -> set[int]:
        seen, todo = {start}, [start]
        while todo:
            a = todo.pop()
            for b in range(nodes):
                if (
                    b not in seen
                    and (points[a][0] - points[b][0]) ** 2 + (points[a][1] - points[b][1]) ** 2 <= reach**2
                ):
                    seen.add(b)
                    todo.append(b)
        return seen

    pairs: list[tuple[int, int]] = []
    while len(pairs) < flows:
        a, b = rng.randrange(nodes), rng.randrange(nodes)
        if a != b and b in component(a):
            pairs.append((a + 1, b + 1))
    return {
        "name": f"random-mesh-{nodes}",
        "duration": duration,
        "seed": seed,
        "nodes": list(range(1, nodes + 1)),
        "wifi": {
            "standard": "802.11b",
            "data_rate": "11Mbps",
            "control_rate": "11Mbps",
            "placement": {"kind": "coordinates", "at": points},
            "reach": reach,
            "sense": 550.0,
        },
        "tcp": {"variant": "newreno", "mss": 1460, "rcv_window": 64},
        "flows": [{"src": a, "dst": b, "app": "bulk"} for a, b in pairs],
    }


def run_mesh(nodes: int, flows: int, duration: float) -> dict[str, Any]:
    """One timed run of the random mesh in this process, with its peak memory."""
    wall, events, goodputs = _timed(load(mesh_scenario(nodes, flows, duration)), duration)
    return {
        "nodes": nodes,
        "flows": flows,
        "sim_time_s": duration,
        "wall_s": wall,
        "events": events,
        "events_per_s": events / wall,
        "total_goodput_bps": sum(goodputs),
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }


def mesh_in_child(nodes: int, flows: int, duration: float) -> dict[str, Any]:
    """The mesh in a fresh process, so that its peak memory is its own."""
    command = [sys.executable, "-m", "ncmesh.bench_wifi", "mesh", str(nodes), str(flows), repr(duration)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    row: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return row


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["mesh"]:
        nodes, flows, duration = int(argv[1]), int(argv[2]), float(argv[3])
        print(json.dumps(run_mesh(nodes, flows, duration)))
        return 0
    raise SystemExit("usage: python -m ncmesh.bench_wifi mesh NODES FLOWS DURATION (or: ncmesh bench wifi)")


if __name__ == "__main__":
    sys.exit(main())
