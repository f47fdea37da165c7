"""ncmesh's TCP profiles against the stacks they copy, on the chain of
``scenarios/lossy-chain.toml`` (five 1 Mbit/s, 100 ms hops, loss on the data
only): ``profile = "ns3"`` against ns-3 itself, through the ``ns3`` wheel,
and ``profile = "linux"`` against the kernel's TCP through ``ncmesh emulate``
(iperf3 between the chain's end namespaces; needs root and iperf3).

``python -m ncmesh.experiments.stacks ns3``, ``... linux`` and ``... bbr``
print the tables of docs/validation.md (``bbr``: ``variant = "bbr"``
against kernel BBR, on the chain and on ``scenarios/bbr-link.toml``'s one
20 Mbit/s link; ``bbr --trace P --path link`` prints both sides' cwnd and
pacing rate over time); ``ns3 --trace P`` prints cwnd, RTO and
retransmissions of one flow on both sides at loss P; ``ns3-draws --seeds N
--out DIR`` writes ns-3's per-hop loss draws of seeds 1..N for the
``ns3_replay`` example of ncmesh-proto. ns-3 runs in a child
process (``python -m ncmesh.experiments.stacks ns3-worker``), which reads
its jobs as JSON on standard input, so that its slow start-up is paid once.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import re
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from scipy.stats import mannwhitneyu

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


def ncmesh_goodput(
    loss: float,
    flows: int,
    seed: int,
    duration_s: float = DURATION_S,
    scenario_name: str = "lossy-chain",
    **overrides: Any,
) -> float:
    """Total goodput (bit/s) of ``flows`` ncmesh flows over the chain (or the scenario named)."""
    r = run(
        scenario(scenario_name),
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


@dataclass(frozen=True)
class Path_:
    """A path the stacks are compared on: its scenario, its last node (the
    iperf3 server) and the TUN MTU and ncmesh MSS that give both sides the
    same segments."""

    scenario: str
    server: int
    mtu: int
    mss: int
    #: The round trip of a SYN and its answer.
    rtt_s: float

    @property
    def hops(self) -> int:
        """The server is the last of the nodes 1, 2, ... in a line."""
        return self.server - 1


#: The chain of the fidelity tables: 1000-byte segments beside timestamps.
CHAIN = Path_("lossy-chain", 6, LINUX_MTU, 1000, 1.0)
#: One 20 Mbit/s link at the Ethernet MTU: 1448-byte segments.
LINK = Path_("bbr-link", 2, 1500, 1448, 0.02)
PATHS = {"chain": CHAIN, "link": LINK}

#: ``ss -tin`` in the sender's namespace every 0.1 s, for cwnd and pacing-rate traces.
SS_LOOP = "sh -c 'while sleep 0.1; do echo T $(date +%s.%N); ss -tin dst {dst}; done'"


def kernel_goodput(
    control: str,
    loss: float,
    flows: int,
    seed: int,
    duration_s: float,
    path: Path_ = CHAIN,
    trace: bool = False,
) -> dict[str, Any]:
    """Kernel TCP (iperf3, ``control``) over ``path`` in ``ncmesh emulate``;
    the report with ``goodput_bps``, and with ``trace`` the sender's ``ss
    -tin`` samples as ``ss``: ``(seconds since the client started, cwnd in
    segments, pacing rate in bit/s)``."""
    from ..emulate import emulate

    dst = f"10.0.0.{path.server}"
    client = f"iperf3 -c {dst} -p 5201 -t {duration_s:g} -P {flows} -C {control} -J"
    commands = [(path.server, "iperf3 -s -1 -p 5201", 0.0, True), (1, client, 0.5, False)]
    if trace:
        commands.append((1, SS_LOOP.format(dst=dst), 0.5, True))
    report = emulate(
        scenario(path.scenario),
        seed=seed,
        overrides={
            "link_class.hop.loss": loss,
            "emulate.mtu": path.mtu,
            # The emulation ends with the client; this only bounds a hung one.
            # At heavy loss iperf3's closing exchange can take minutes of backoff.
            "duration": duration_s + 300,
        },
        commands=commands,
    )
    run_ = next(c for c in report["commands"] if "iperf3 -c" in c["run"])
    if run_["status"] != 0:
        raise RuntimeError(f"iperf3 failed (status {run_['status']}): {run_['stdout'][-500:]}{run_['stderr'][-500:]}")
    try:
        result = json.loads(run_["stdout"])
    except ValueError as e:
        raise RuntimeError(f"iperf3's report is not JSON ({e}): {run_['stdout'][-300:]}") from None
    if "error" in result or "sum_received" not in result.get("end", {}):
        raise RuntimeError(f"iperf3 reported no result: {result.get('error', 'no sum_received')}")
    report["goodput_bps"] = float(result["end"]["sum_received"]["bits_per_second"])
    report["retransmits"] = int(result["end"]["sum_sent"].get("retransmits", 0))
    if trace:
        ss = next(c for c in report["commands"] if c["run"].startswith("sh -c"))
        report["ss"] = parse_ss(ss["stdout"])
    return report


def parse_ss(text: str) -> list[tuple[float, int, float]]:
    """``(time, cwnd, pacing_rate bit/s)`` of the connection that has
    acknowledged the most bytes (iperf3's data, not its control connection)
    in each ``ss -tin`` sample of :data:`SS_LOOP`, time from the first sample."""
    scale = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9}
    out: list[tuple[float, int, float]] = []
    start: float | None = None
    samples: list[tuple[float, list[str]]] = []
    for line in text.splitlines():
        stamp = re.fullmatch(r"T (\d+\.\d+)", line.strip())
        if stamp:
            samples.append((float(stamp.group(1)), []))
        elif samples:
            samples[-1][1].append(line)
    for t, body in samples:
        start = t if start is None else start
        best: tuple[int, int, float] | None = None
        for line in body:
            cwnd = re.search(r"\bcwnd:(\d+)", line)
            acked = re.search(r"\bbytes_acked:(\d+)", line)
            if cwnd is None or acked is None:
                continue
            pacing = re.search(r"pacing_rate (\d+(?:\.\d+)?)([KMG]?)bps", line)
            rate = float(pacing.group(1)) * scale[pacing.group(2)] if pacing else float("nan")
            if best is None or int(acked.group(1)) > best[0]:
                best = (int(acked.group(1)), int(cwnd.group(1)), rate)
        if best is not None:
            out.append((round(t - start, 3), best[1], best[2]))
    return out


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
    points = [(c, p, n, s) for c in controls for n in flows for p in losses for s in seeds]
    kernel = _kernel_runs(
        points, lambda pt: kernel_goodput(pt[0], pt[1], pt[2], pt[3], duration_s), parallel, kernel_runs
    )
    rows, timing = [], []
    for (c, p, n, s), report in zip(points, kernel, strict=True):
        ours = ncmesh_goodput(
            p, n, s, duration_s, tcp__profile="linux", tcp__variant=c, tcp__mss=1000, tcp__rcv_window=4096
        )
        rows.append(
            {"control": c, "flows": n, "loss": p, "seed": s, "ncmesh_bps": ours, "linux_bps": report["goodput_bps"]}
        )
        timing.append({**report["timing"], "load": report["load_before"].split()[0]})
    return _kernel_table(rows, ["control", "flows", "loss"]), pd.DataFrame(timing)


def _kernel_table(rows: list[dict[str, Any]], by: list[str]) -> pd.DataFrame:
    """Mean goodput of both sides over the seeds of each point, their ratio
    with a 95% interval (the seeds' standard errors of both means, combined
    to first order), whether the ratio is within the bound, the ratio of the
    medians, which a few runs far from the rest do not move, and
    ``runs_differ_p``: the two-sided Mann-Whitney p-value that both sides'
    runs come from one distribution. Under heavy loss a point's runs spread
    over an order of magnitude and the mean rests on a few of them; the
    test compares every run."""
    frame = pd.DataFrame(rows)
    table = frame.groupby(by, as_index=False).agg(
        seeds=("ncmesh_bps", "size"),
        ncmesh_bps=("ncmesh_bps", "mean"),
        ncmesh_se=("ncmesh_bps", "sem"),
        ncmesh_median=("ncmesh_bps", "median"),
        linux_bps=("linux_bps", "mean"),
        linux_se=("linux_bps", "sem"),
        linux_median=("linux_bps", "median"),
    )
    table["median_ratio"] = table.ncmesh_median / table.linux_median
    table["ratio"] = table.ncmesh_bps / table.linux_bps
    spread = (
        1.96
        * table.ratio
        * ((table.ncmesh_se / table.ncmesh_bps) ** 2 + (table.linux_se / table.linux_bps) ** 2) ** 0.5
    )
    table["ratio_low"], table["ratio_high"] = table.ratio - spread, table.ratio + spread
    table["holds"] = (table.ratio - 1).abs() <= BOUND
    groups = {key if isinstance(key, tuple) else (key,): runs for key, runs in frame.groupby(by)}
    table["runs_differ_p"] = [_mann_whitney(groups[tuple(key)]) for key in table[by].itertuples(index=False)]
    return table.drop(columns=["ncmesh_se", "linux_se", "ncmesh_median", "linux_median"])


def _mann_whitney(point: pd.DataFrame) -> float:
    """Two-sided Mann-Whitney p-value of one point's runs on both sides; NaN with fewer than two a side."""
    if len(point) < 2:
        return float("nan")
    return float(mannwhitneyu(point.ncmesh_bps, point.linux_bps, alternative="two-sided").pvalue)


#: What the BBR comparison sweeps, on both paths.
BBR_LOSSES = (0.0, 0.01, 0.05, 0.1)


def _kernel_runs(points: list[Any], job: Any, parallel: int, kernel_runs: Path | None) -> list[dict[str, Any]]:
    """The kernel's runs of ``points`` through ``job``, ``parallel`` at once.

    With ``kernel_runs``, each run is kept in that file as it finishes, keyed
    by its point, and runs already there are not repeated: an interrupted
    comparison resumes where it stopped. A point that fails twice is
    returned as a failure (``goodput_bps`` NaN, ``error``), not kept, so the
    next invocation tries it again."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    done: dict[str, dict[str, Any]] = {}
    if kernel_runs is not None and kernel_runs.exists():
        kept = json.loads(kernel_runs.read_text())
        if isinstance(kept, list):
            # Every point's run in order, as earlier versions wrote the file.
            return kept
        done = kept

    def key(point: Any) -> str:
        return json.dumps(list(point))

    lock = threading.Lock()

    def attempt(point: Any) -> dict[str, Any]:
        error = ""
        for _ in range(2):
            try:
                report: dict[str, Any] = job(point)
            except RuntimeError as e:
                error = str(e)
                continue
            with lock:
                done[key(point)] = report
                if kernel_runs is not None:
                    write_text_atomically(kernel_runs, json.dumps(done))
            return report
        print(f"kernel run {point} failed twice: {error}", file=sys.stderr, flush=True)
        return {"goodput_bps": float("nan"), "error": error, "timing": {}, "load_before": "nan"}

    missing = [p for p in points if key(p) not in done]
    with ThreadPoolExecutor(parallel) as pool:
        failed = {key(p): r for p, r in zip(missing, pool.map(attempt, missing), strict=True) if "error" in r}
    return [done.get(key(p)) or failed[key(p)] for p in points]


def ncmesh_bbr(
    path: Path_,
    loss: float,
    flows: int,
    seed: int,
    duration_s: float,
    leads: Sequence[float] | None = None,
    **overrides: Any,
) -> Any:
    """ncmesh's ``profile = "linux"`` BBR over ``path``: the run's result.

    Flow k sends its SYN ``leads[k]`` seconds before all flows start their
    data together, as iperf3's streams do (by default the leads of
    :func:`iperf3_leads`). Each writes iperf3's cookie once connected, and
    its data waits for the cookie's ACK as well; each flow's goodput is over
    ``duration_s`` of its data."""
    leads = iperf3_leads(path, loss, flows, seed) if leads is None else leads
    first = max(leads)
    entries = [
        {"src": 1, "dst": path.server, "app": "bulk", "connect": first - lead, "start": first, "prefix": IPERF3_COOKIE}
        for lead in leads
    ]
    return run(
        scenario(path.scenario),
        seed=seed,
        duration=first + duration_s,
        link_class__hop__loss=loss,
        flows=entries,
        tcp__profile="linux",
        tcp__variant="bbr",
        tcp__mss=path.mss,
        tcp__rcv_window=4096,
        **overrides,
    )


#: Bytes iperf3 writes on each data stream before its data: the test's cookie.
IPERF3_COOKIE = 37


def iperf3_leads(path: Path_, loss: float, flows: int, seed: int) -> list[float]:
    """How long before the data starts each of iperf3's streams sends its
    first SYN, in seconds, drawn for ``seed``.

    The client connects its streams one after another, each once the
    previous one's SYN is answered, and writes a cookie on each; the server
    starts the test once it holds every cookie, and the data leaves half a
    round trip after that. A SYN lost on the path (the data direction's
    loss; the reverse is lossless) is resent after 1 s four times, then
    after twice as long each time (the kernel's initial RTO and
    ``tcp_syn_linear_timeouts = 4``); no wait exceeds ``TCP_RTO_MAX`` (120
    s). The cookies' own losses are not drawn here: ncmesh's flows write
    the cookie too (``flows[].prefix``) and their data waits for its ACK,
    so the simulation loses and recovers it; each stream waits for its own,
    where iperf3 waits for all. BBR's min-RTT filter dates from each
    handshake's sample, so on a long path the kernel's first ProbeRTT falls
    that much earlier in the data."""
    rng = random.Random(seed)
    lost = 1.0 - (1.0 - loss) ** path.hops
    rtt = path.rtt_s

    def wait_until_through(retries: Iterator[float]) -> float:
        waited = 0.0
        while rng.random() < lost:
            waited += min(next(retries), 120.0)
        return waited

    def doubling(first: float) -> Iterator[float]:
        return (first * 2**i for i in itertools.count())

    def syn_retries() -> Iterator[float]:
        return itertools.chain((1.0, 1.0, 1.0, 1.0), doubling(2.0))

    now, opened, cookies_in = 0.0, [], []
    for _ in range(flows):
        opened.append(now)
        now += wait_until_through(syn_retries()) + rtt
        cookies_in.append(now + rtt / 2)
    start = max(cookies_in) + rtt / 2
    return [start - t for t in opened]


def against_bbr(
    paths: Sequence[str] = tuple(PATHS),
    losses: Sequence[float] = BBR_LOSSES,
    flows: Sequence[int] = FLOWS,
    seeds: Sequence[int] = (1,),
    duration_s: float = 60.0,
    parallel: int = 2,
    kernel_runs: Path | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Mean total goodput of ncmesh's BBR and of kernel BBR (``iperf3 -C
    bbr``), per path, loss and flow count; and the emulations' timing errors."""
    points = [(name, p, n, s) for name in paths for n in flows for p in losses for s in seeds]
    kernel = _kernel_runs(
        points,
        lambda pt: kernel_goodput("bbr", pt[1], pt[2], pt[3], duration_s, PATHS[pt[0]]),
        parallel,
        kernel_runs,
    )
    rows, timing = [], []
    for (name, p, n, s), report in zip(points, kernel, strict=True):
        ours = float(ncmesh_bbr(PATHS[name], p, n, s, duration_s).flows.goodput_bps.sum())
        rows.append(
            {"path": name, "flows": n, "loss": p, "seed": s, "ncmesh_bps": ours, "linux_bps": report["goodput_bps"]}
        )
        timing.append({**report["timing"], "load": report["load_before"].split()[0]})
    return _kernel_table(rows, ["path", "flows", "loss"]), pd.DataFrame(timing)


def bbr_traces(
    path: Path_, loss: float, seed: int = 1, duration_s: float = 60.0, kernel_run: Path | None = None
) -> dict[str, Any]:
    """One BBR flow's cwnd (segments) and pacing rate (bit/s) over time on
    both sides: the kernel's from ``ss -tin``, ncmesh's from its probes."""
    (kernel,) = _kernel_runs(
        [(loss, seed)], lambda pt: kernel_goodput("bbr", pt[0], 1, pt[1], duration_s, path, trace=True), 1, kernel_run
    )
    r = ncmesh_bbr(path, loss, 1, seed, duration_s, probes__interval=0.1, probes__cwnd=True)
    ours = r.cwnd.merge(r.pacing, on=["time_s", "flow"])
    return {
        "kernel": kernel["ss"],
        "kernel_bps": kernel["goodput_bps"],
        "ncmesh": [
            (float(t), int(c // path.mss), float(b))
            for t, c, b in zip(ours.time_s, ours.cwnd_bytes, ours.pacing_bps, strict=True)
        ],
        "ncmesh_bps": float(r.flows.goodput_bps.sum()),
    }


def side_by_side(trace: dict[str, Any], step: float) -> pd.DataFrame:
    """Both sides' cwnd (segments) and pacing rate (Mbit/s) every ``step``
    seconds: each the last sample at or before that time."""
    frames = {
        side: pd.DataFrame(trace[side], columns=["time_s", "cwnd", "pacing"]).sort_values("time_s")
        for side in ("kernel", "ncmesh")
    }
    end = min(f.time_s.max() for f in frames.values())
    grid = pd.DataFrame({"time_s": [round(i * step, 6) for i in range(int(end / step) + 1)]})
    for side, f in frames.items():
        f = f.assign(pacing=f.pacing / 1e6).rename(columns={"cwnd": f"{side}_cwnd", "pacing": f"{side}_mbps"})
        grid = pd.merge_asof(grid, f, on="time_s", direction="backward")
    return grid


def traces(loss: float, seed: int = 1, duration_s: float = DURATION_S) -> dict[str, Any]:
    """One flow's cwnd, RTO and retransmission times on both sides at ``loss``."""
    (report,) = _ns3_jobs([{"duration": duration_s, "loss": loss, "flows": 1, "seed": seed, "trace": True}])
    r = run(scenario("lossy-chain"), seed=seed, duration=duration_s, link_class__hop__loss=loss)
    return {"ns3": report["trace"], "ncmesh": {"cwnd": r.cwnd, "flows": r.flows}}


def _print_against_kernel(table: pd.DataFrame, timing: pd.DataFrame) -> None:
    """A kernel comparison's table, and the spread of its emulations' timing errors."""
    print(table.to_markdown(index=False, floatfmt=".4g"))
    print(timing.describe().to_markdown(floatfmt=".4g"))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m ncmesh.experiments.stacks", description=__doc__.split("\n")[0])
    parser.add_argument("against", choices=["ns3", "linux", "bbr", "ns3-worker", "ns3-draws"])
    parser.add_argument("--path", choices=list(PATHS), default="link", help="the path of a BBR trace (bbr --trace)")
    parser.add_argument("--step", type=float, default=0.5, help="seconds between the rows of a BBR trace")
    parser.add_argument("--paths", nargs="+", choices=list(PATHS), default=list(PATHS), help="paths to compare (bbr)")
    parser.add_argument(
        "--losses", nargs="+", type=float, default=None, help="losses to compare (linux, bbr; default: each one's own)"
    )
    parser.add_argument("--flows", type=int, nargs="+", default=list(FLOWS), help="flow counts to compare (linux, bbr)")
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
    if args.against == "bbr":
        if args.trace is not None:
            t = bbr_traces(PATHS[args.path], args.trace, duration_s=args.duration, kernel_run=args.kernel_runs)
            print(f"kernel {t['kernel_bps']:.4g} bit/s, ncmesh {t['ncmesh_bps']:.4g} bit/s")
            print(side_by_side(t, args.step).to_markdown(index=False, floatfmt=".3g"))
            return None
        table, timing = against_bbr(
            paths=args.paths,
            losses=args.losses or BBR_LOSSES,
            flows=args.flows,
            seeds=range(1, args.seeds + 1),
            duration_s=args.duration,
            parallel=args.parallel,
            kernel_runs=args.kernel_runs,
        )
        return _print_against_kernel(table, timing)
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
            losses=args.losses or LINUX_LOSSES,
            flows=args.flows,
            seeds=seeds,
            duration_s=args.duration,
            parallel=args.parallel,
            kernel_runs=args.kernel_runs,
        )
        return _print_against_kernel(table, timing)
    table = against_ns3(seeds=seeds, duration_s=args.duration)
    print(table.to_markdown(index=False, floatfmt=".4g"))
    return None


if __name__ == "__main__":
    main()
