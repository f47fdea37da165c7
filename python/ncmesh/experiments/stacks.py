"""ncmesh's TCP profiles against the stacks they copy, on the chain of
``scenarios/lossy-chain.toml`` (five 1 Mbit/s, 100 ms hops, loss on the data
only): ``profile = "ns3"`` against ns-3 itself, through the ``ns3`` wheel,
and ``profile = "linux"`` against the kernel's TCP through ``ncmesh emulate``
(iperf3 between the chain's end namespaces; needs root and iperf3).

``python -m ncmesh.experiments.stacks ns3`` and ``... linux`` print the
tables of docs/validation.md; ``ns3 --trace P`` prints cwnd, RTO and
retransmissions of one flow on both sides at loss P; ``ns3-draws --seeds N
--out DIR`` writes ns-3's per-hop loss draws of seeds 1..N for the
``ns3_replay`` example of ncmesh-proto. ns-3 runs in a child
process (``python -m ncmesh.experiments.stacks ns3-worker``), which reads
its jobs as JSON on standard input, so that its slow start-up is paid once.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..files import write_text_atomically
from ..paths import scenario
from ..simulate import run

LOSSES = (0.0, 0.01, 0.02, 0.05, 0.1)
FLOWS = (1, 4)
SEEDS = (1, 2, 3)
DURATION_S = 300.0
#: Within this of ns-3's mean goodput, a point holds.
BOUND = 0.15

#: ns-3's TCP as the ns3 profile copies it: its defaults, NewReno, and the
#: segment size of the path. RcvBufSize stays ns-3's 131072 bytes, which the
#: scenario's rcv_window of 131 segments matches.
NS3_TCP = {"ns3::TcpSocket::SegmentSize": "1000"}


def ncmesh_goodput(loss: float, flows: int, seed: int, duration_s: float = DURATION_S, **overrides: Any) -> float:
    """Total goodput (bit/s) of ``flows`` ncmesh flows over the chain."""
    r = run(
        scenario("lossy-chain"),
        seed=seed,
        duration=duration_s,
        link_class__hop__loss=loss,
        flows__0__count=flows,
        **overrides,
    )
    return float(r.flows.goodput_bps.sum())


def _ns3_jobs(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Runs ns-3 jobs in one child process; returns their reports in order."""
    child = subprocess.run(
        [sys.executable, "-m", "ncmesh.experiments.stacks", "ns3-worker"],
        input=json.dumps(jobs),
        capture_output=True,
        text=True,
        check=False,
    )
    if child.returncode != 0:
        raise SystemExit(f"the ns-3 child failed:\n{child.stderr[-2000:]}")
    return [json.loads(line) for line in child.stdout.splitlines() if line.startswith("{")]


def ns3_loss_draws(seeds: Sequence[int], out: Path, hops: int = 5, count: int = 60_000) -> list[Path]:
    """Writes the uniform draws of ns-3's per-hop loss streams, as ``bench_ns3.run``
    assigns them on the chain (hop i's data direction: stream 2i + 1, run 1),
    to ``out/draws-SEED.bin``: ``count`` little-endian f64 per hop, hop by hop.
    The example ``ns3_replay`` of ncmesh-proto reads them."""
    import struct

    from .. import bench_ns3

    ns = bench_ns3._ns()
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for seed in seeds:
        values: list[float] = []
        for hop in range(hops):
            ns.RngSeedManager.SetSeed(seed)
            ns.RngSeedManager.SetRun(1)
            draw = ns.CreateObject[ns.UniformRandomVariable]()
            draw.SetStream(2 * hop + 1)
            values.extend(draw.GetValue() for _ in range(count))
        path = out / f"draws-{seed}.bin"
        path.write_bytes(struct.pack(f"<{len(values)}d", *values))
        paths.append(path)
    return paths


def _ns3_worker() -> None:
    from .. import bench_ns3

    chain = (bench_ns3.Hop("1Mbps", "100ms", True),) * 5
    for job in json.load(sys.stdin):
        report = bench_ns3.run(
            job["duration"],
            job["loss"],
            job["seed"],
            hops=chain,
            flows=job["flows"],
            reverse_loss=False,
            tcp=NS3_TCP,
            trace=job.get("trace", False),
        )
        print(json.dumps(report), flush=True)


def against_ns3(
    losses: Sequence[float] = LOSSES,
    flows: Sequence[int] = FLOWS,
    seeds: Sequence[int] = SEEDS,
    duration_s: float = DURATION_S,
) -> pd.DataFrame:
    """Mean total goodput of ``profile = "ns3"`` and of ns-3, per loss and flow count."""
    points = [(p, n, s) for n in flows for p in losses for s in seeds]
    reports = _ns3_jobs([{"duration": duration_s, "loss": p, "flows": n, "seed": s} for p, n, s in points])
    rows = [
        {
            "flows": n,
            "loss": p,
            "seed": s,
            "ncmesh_bps": ncmesh_goodput(p, n, s, duration_s),
            "ns3_bps": report["goodput_bps"],
        }
        for (p, n, s), report in zip(points, reports, strict=True)
    ]
    table = (
        pd.DataFrame(rows)
        .groupby(["flows", "loss"], as_index=False)
        .agg(ncmesh_bps=("ncmesh_bps", "mean"), ns3_bps=("ns3_bps", "mean"))
    )
    table["ratio"] = table.ncmesh_bps / table.ns3_bps
    table["holds"] = (table.ratio - 1).abs() <= BOUND
    return table


#: What the kernel comparison sweeps: both congestion controls, losses up to 5%.
LINUX_LOSSES = (0.0, 0.01, 0.02, 0.05)
LINUX_CONTROLS = ("reno", "cubic")
#: The TUN MTU that makes kernel TCP with timestamps send 1000-byte segments.
LINUX_MTU = 1052


def kernel_goodput(control: str, loss: float, flows: int, seed: int, duration_s: float) -> dict[str, Any]:
    """Kernel TCP (iperf3, ``control``) over the chain in ``ncmesh emulate``; the report with ``goodput_bps``."""
    from ..emulate import emulate

    client = f"iperf3 -c 10.0.0.6 -p 5201 -t {duration_s:g} -P {flows} -C {control} -J"
    report = emulate(
        scenario("lossy-chain"),
        seed=seed,
        overrides={
            "link_class.hop.loss": loss,
            "emulate.mtu": LINUX_MTU,
            # The emulation ends with the client; this only bounds a hung one.
            "duration": duration_s + 60,
        },
        commands=[(6, "iperf3 -s -1 -p 5201", 0.0, True), (1, client, 0.5, False)],
    )
    run_ = next(c for c in report["commands"] if "-c" in c["run"])
    if run_["status"] != 0:
        raise RuntimeError(f"iperf3 failed: {run_['stdout'][-500:]}{run_['stderr'][-500:]}")
    result = json.loads(run_["stdout"])
    report["goodput_bps"] = float(result["end"]["sum_received"]["bits_per_second"])
    report["retransmits"] = int(result["end"]["sum_sent"].get("retransmits", 0))
    return report


def against_linux(
    controls: Sequence[str] = LINUX_CONTROLS,
    losses: Sequence[float] = LINUX_LOSSES,
    flows: Sequence[int] = FLOWS,
    seeds: Sequence[int] = SEEDS,
    duration_s: float = 120.0,
    parallel: int = 4,
    kernel_runs: Path | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Mean total goodput of ``profile = "linux"`` and of kernel TCP, per
    control, loss and flow count; and the emulations' timing errors.

    With ``kernel_runs``, the kernel's runs are read from that JSON file if
    it exists (so that ncmesh's side can be run again alone) and written to
    it otherwise."""
    from concurrent.futures import ThreadPoolExecutor

    points = [(c, p, n, s) for c in controls for n in flows for p in losses for s in seeds]
    if kernel_runs is not None and kernel_runs.exists():
        kernel = json.loads(kernel_runs.read_text())
    else:
        with ThreadPoolExecutor(parallel) as pool:
            kernel = list(pool.map(lambda pt: kernel_goodput(pt[0], pt[1], pt[2], pt[3], duration_s), points))
        if kernel_runs is not None:
            write_text_atomically(kernel_runs, json.dumps(kernel))
    rows, timing = [], []
    for (c, p, n, s), report in zip(points, kernel, strict=True):
        ours = ncmesh_goodput(
            p, n, s, duration_s, tcp__profile="linux", tcp__variant=c, tcp__mss=1000, tcp__rcv_window=4096
        )
        rows.append(
            {"control": c, "flows": n, "loss": p, "seed": s, "ncmesh_bps": ours, "linux_bps": report["goodput_bps"]}
        )
        timing.append({**report["timing"], "load": report["load_before"].split()[0]})
    table = (
        pd.DataFrame(rows)
        .groupby(["control", "flows", "loss"], as_index=False)
        .agg(ncmesh_bps=("ncmesh_bps", "mean"), linux_bps=("linux_bps", "mean"))
    )
    table["ratio"] = table.ncmesh_bps / table.linux_bps
    table["holds"] = (table.ratio - 1).abs() <= BOUND
    return table, pd.DataFrame(timing)


def traces(loss: float, seed: int = 1, duration_s: float = DURATION_S) -> dict[str, Any]:
    """One flow's cwnd, RTO and retransmission times on both sides at ``loss``."""
    (report,) = _ns3_jobs([{"duration": duration_s, "loss": loss, "flows": 1, "seed": seed, "trace": True}])
    r = run(scenario("lossy-chain"), seed=seed, duration=duration_s, link_class__hop__loss=loss)
    return {"ns3": report["trace"], "ncmesh": {"cwnd": r.cwnd, "flows": r.flows}}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m ncmesh.experiments.stacks", description=__doc__.split("\n")[0])
    parser.add_argument("against", choices=["ns3", "linux", "ns3-worker", "ns3-draws"])
    parser.add_argument("--duration", type=float, default=DURATION_S, help="simulated seconds per run")
    parser.add_argument("--seeds", type=int, default=len(SEEDS), help="seeds 1..N per point")
    parser.add_argument("--trace", type=float, default=None, metavar="P", help="print one flow's traces at loss P")
    parser.add_argument("--parallel", type=int, default=4, help="emulations at once (linux)")
    parser.add_argument(
        "--kernel-runs", type=Path, default=None, help="keep the kernel's runs in this JSON file, or reuse them (linux)"
    )
    parser.add_argument("--out", type=Path, default=Path("ns3-draws"), help="where ns3-draws writes its files")
    args = parser.parse_args(argv)
    if args.against == "ns3-worker":
        return _ns3_worker()
    if args.against == "ns3-draws":
        for path in ns3_loss_draws(range(1, args.seeds + 1), args.out):
            print(path)
        return None
    pd.set_option("display.width", 200)
    if args.trace is not None:
        t = traces(args.trace, duration_s=args.duration)
        ns3 = t["ns3"]
        print(f"ns-3: {len(ns3['retransmits'])} retransmissions; RTO changes {ns3['rto'][:20]}")
        print(f"ns-3 cwnd (first 40 changes): {ns3['cwnd'][:40]}")
        print(t["ncmesh"]["flows"].T)
        print(t["ncmesh"]["cwnd"].head(40))
        return None
    seeds = range(1, args.seeds + 1)
    if args.against == "linux":
        table, timing = against_linux(
            seeds=seeds, duration_s=args.duration, parallel=args.parallel, kernel_runs=args.kernel_runs
        )
        print(table.to_markdown(index=False, floatfmt=".4g"))
        print(timing.describe().to_markdown(floatfmt=".4g"))
        return None
    table = against_ns3(seeds=seeds, duration_s=args.duration)
    print(table.to_markdown(index=False, floatfmt=".4g"))
    return None


if __name__ == "__main__":
    main()
