"""Seed 002 (Zhang, Lan and Li 2014) against the simulator: the Markov
chain model of TCP-NC, Kim's and Abouzeid's models, and simulated TCP/NC
over Reno on the four-hop tandem of section 5.1.

``ncmesh reproduce zhang2014 [--quick]`` runs it; docs/models.md shows the
result and where the model and the simulation part.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from .. import results
from ..files import write_atomically
from ..models import abouzeid, kim, markov
from ..paths import scenario
from ..simulate import run
from ..sweep import Axis, Sweep
from . import failed_runs, run_into, runs_in

HOPS = 4
LINK_RTT_S = 0.8  # four hops of 100 ms each way
PACKET_BYTES = 1000


def hop_loss(erasure: float) -> float:
    """The loss on each of the four hops that gives end-to-end erasure ``erasure``."""
    return 1.0 - float((1.0 - erasure) ** (1.0 / HOPS))


def erasure_of(hop: float) -> float:
    return round(1.0 - (1.0 - hop) ** HOPS, 9)


@dataclass(frozen=True)
class Settings:
    duration_s: float
    seeds: tuple[int, ...]
    erasures: tuple[float, ...]
    windows: tuple[int, ...]

    @classmethod
    def of(cls, quick: bool) -> Settings:
        if quick:
            return cls(2000.0, (1, 2), (0.0, 0.02, 0.05, 0.1, 0.15, 0.2), (10, 20, 50, 100))
        return cls(10_000.0, (1, 2, 3, 4, 5), (0.0, 0.01, 0.02, 0.05, 0.08, 0.1, 0.15, 0.2), (10, 20, 30, 50, 75, 100))


def model_sweep(s: Settings, redundancy: float = 1.0) -> Sweep:
    """Fig. 7: erasure at CW_max 50, and CW_max at 5% erasure, on topology (a)."""
    points = [(hop_loss(p), 50) for p in s.erasures] + [(hop_loss(0.05), w) for w in s.windows if w != 50]
    return Sweep(
        path=Path("<zhang2014>"),
        name="zhang2014",
        scenario=scenario("zhang2014-tandem"),
        seeds=list(s.seeds),
        metrics=["acked_bytes", "throughput_bps", "timeouts"],
        fixed={"duration": s.duration_s, "coding.tcpnc.redundancy": redundancy},
        axes=[Axis(("link_class.hop.loss", "tcp.rcv_window"), points, 0)],
    )


def mean_window(series_path: str, cwmax: int) -> float:
    """The model's visual window never exceeds CW_max (seed 002 sec. 4.2),
    while a window-limited TCP keeps growing cwnd: average min(cwnd, CW_max)."""
    table = pq.read_table(series_path, filters=[("series", "=", "cwnd_bytes")]).to_pandas()
    return float(np.minimum(table.value.to_numpy() / PACKET_BYTES, cwmax).mean())


def compare(runs: pd.DataFrame, s: Settings, redundancy: float = 1.0) -> pd.DataFrame:
    """The simulated points beside the three models.

    Simulated throughput counts what TCP saw acknowledged, as the model does
    (seed 002 eq. 15 counts ACKs); with R = 1 the sink acknowledges packets
    as it sees them, which can be well ahead of decoding them.
    """
    runs = runs[(runs.sweep == "zhang2014") & runs.status.isin(["ok", "failed"])].copy()
    runs["erasure"] = runs["link_class.hop.loss"].map(erasure_of)
    runs["cwmax"] = runs["tcp.rcv_window"].astype(int)
    points = runs.groupby(["erasure", "cwmax"], as_index=False).agg(
        seeds=("status", lambda s: int((s == "ok").sum())), failed=("status", lambda s: int((s == "failed").sum()))
    )
    runs = runs[runs.status == "ok"].copy()
    runs["throughput_pkts_per_s"] = runs.acked_bytes / PACKET_BYTES / s.duration_s
    runs["goodput_pkts_per_s"] = runs.throughput_bps / 8 / PACKET_BYTES
    runs["mean_cwnd"] = [mean_window(path, w) for path, w in zip(runs.series, runs.cwmax, strict=True)]
    table = runs.groupby(["erasure", "cwmax"], as_index=False).agg(
        sim_throughput=("throughput_pkts_per_s", "mean"),
        sim_throughput_std=("throughput_pkts_per_s", "std"),
        sim_goodput=("goodput_pkts_per_s", "mean"),
        sim_cwnd=("mean_cwnd", "mean"),
        timeouts=("timeouts", "mean"),
    )
    table = points.merge(table, on=["erasure", "cwmax"], how="left")
    model = markov.solve(table.erasure.to_numpy(), table.cwmax.to_numpy(), LINK_RTT_S, redundancy)
    table["markov_throughput"] = np.asarray(model.throughput_pkts_per_s, dtype=float)
    table["markov_cwnd"] = np.asarray(model.mean_cwnd, dtype=float)
    table["kim_throughput"] = np.asarray(kim.throughput(table.cwmax.to_numpy(), LINK_RTT_S, s.duration_s), dtype=float)
    p_visible = np.asarray(markov.effective_loss(table.erasure.to_numpy(), redundancy), dtype=float)
    table["abouzeid_throughput"] = [
        float(abouzeid.throughput(max(pv, 1e-6), LINK_RTT_S, int(w)))
        for pv, w in zip(p_visible, table.cwmax, strict=True)
    ]
    table["throughput_error"] = table.sim_throughput / table.markov_throughput - 1
    table["cwnd_error"] = table.sim_cwnd / table.markov_cwnd - 1
    return table


def sweep(
    s: Settings,
    db: Path,
    jobs: int | None = None,
    dask: str | None = None,
    on_start: Callable[[int, int], None] | None = None,
    on_done: Callable[[Any, Any], None] | None = None,
) -> pd.DataFrame:
    """Runs what the store ``db`` does not hold yet and compares."""
    run_into([model_sweep(s)], db, jobs, dask, on_start, on_done)
    return compare(results.load(db), s)


def failures(db: Path) -> pd.DataFrame:
    """The sweep's failed runs (see :func:`ncmesh.experiments.failed_runs`)."""
    return failed_runs(results.load(db), ["zhang2014"])


def fairness(s: Settings, erasure: float = 0.06, capacity: str = "0.05Mbps") -> pd.DataFrame:
    """Sec. 5.6: one TCP-NC and one TCP-Reno flow share a 0.05 Mbit/s tandem
    at 6% end-to-end erasure. The model picks the R that equalises them; the
    simulation reports the ratio of what each TCP saw acknowledged at that R
    and at 1/(1-p)."""
    bottleneck = 50e3 / 8 / PACKET_BYTES
    # The round trip of the slow path: propagation plus one packet's serialisation per hop.
    rtt = LINK_RTT_S + HOPS * PACKET_BYTES * 8 / 50e3
    chosen = markov.equalising_redundancy(erasure, 50, rtt, bottleneck=bottleneck)
    flows = [
        {"src": 1, "dst": HOPS + 1, "app": "bulk", "coding": "tcpnc-e2e"},
        {"src": 1, "dst": HOPS + 1, "app": "bulk", "coding": "none"},
    ]
    rows = []
    for label, r in (("model", chosen), ("1/(1-p)", 1.0 / (1.0 - erasure))):
        ratios = []
        for seed in s.seeds:
            overrides = {
                "duration": s.duration_s,
                "link_class.hop.capacity": capacity,
                "link_class.hop.loss": hop_loss(erasure),
                "coding.tcpnc.redundancy": r,
                "flows": flows,
            }
            acked = run(scenario("zhang2014-tandem"), seed=seed, overrides=overrides).flows.acked_bytes
            ratios.append(acked.iloc[0] / max(acked.iloc[1], 1))
        rows.append({"redundancy": label, "R": r, "nc_to_reno_ratio": float(np.mean(ratios))})
    return pd.DataFrame(rows)


def plot(table: pd.DataFrame, out: Path) -> list[Path]:
    """Fig. 7 (c, a, e) style: throughput and mean window against erasure, throughput against CW_max."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_p = table[table.cwmax == 50].sort_values("erasure")
    by_w = table[table.erasure == 0.05].sort_values("cwmax")
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), constrained_layout=True)
    a, b, c = axes
    a.errorbar(by_p.erasure, by_p.sim_throughput, yerr=by_p.sim_throughput_std.fillna(0), fmt="o", label="simulation")
    a.plot(by_p.erasure, by_p.markov_throughput, "-", label="Markov model (seed 002)")
    a.plot(by_p.erasure, by_p.kim_throughput, "--", label="Kim et al.")
    a.plot(by_p.erasure, by_p.abouzeid_throughput, ":", label="Abouzeid et al.")
    a.set(xlabel="end-to-end erasure rate", ylabel="throughput (packets/s)", title="CW_max = 50", yscale="log")
    a.legend(fontsize=8)
    b.plot(by_p.erasure, by_p.sim_cwnd, "o", label="simulation")
    b.plot(by_p.erasure, by_p.markov_cwnd, "-", label="Markov model")
    b.set(xlabel="end-to-end erasure rate", ylabel="mean window (packets)", title="CW_max = 50")
    b.legend(fontsize=8)
    c.plot(by_w.cwmax, by_w.sim_throughput, "o", label="simulation")
    c.plot(by_w.cwmax, by_w.markov_throughput, "-", label="Markov model")
    c.set(xlabel="CW_max (packets)", ylabel="throughput (packets/s)", title="erasure 5%")
    c.legend(fontsize=8)
    written = []
    for suffix in ("png", "svg"):
        written.append(write_atomically(out / f"zhang2014.{suffix}", partial(fig.savefig, format=suffix, dpi=120)))
    plt.close(fig)
    return written


def reproduce(
    quick: bool,
    out: Path,
    db: Path | None = None,
    jobs: int | None = None,
    dask: str | None = None,
    on_start: Callable[[int, int], None] | None = None,
    on_done: Callable[[Any, Any], None] | None = None,
) -> dict[str, Any]:
    """The sweep into a results store (``out/zhang2014.sqlite`` by default, so
    an interrupted reproduction resumes), the fairness runs, tables and figures."""
    settings = Settings.of(quick)
    out.mkdir(parents=True, exist_ok=True)
    db = db or out / "zhang2014.sqlite"
    table = sweep(settings, db, jobs, dask, on_start, on_done)
    shares = fairness(settings)
    write_atomically(out / "zhang2014.csv", lambda p: table.to_csv(p, index=False))
    write_atomically(out / "zhang2014-fairness.csv", lambda p: shares.to_csv(p, index=False))
    figures = plot(table, out)
    return {"table": table, "fairness": shares, "figures": figures, "failed": failures(db)}


def runs_planned(quick: bool) -> int:
    """How many runs the sweep makes, for a progress bar."""
    return runs_in([model_sweep(Settings.of(quick))])


def rows_json(table: pd.DataFrame) -> list[dict[str, Any]]:
    return [
        {
            str(k): (None if isinstance(v, float) and np.isnan(v) else (v.item() if hasattr(v, "item") else v))
            for k, v in row.items()
        }
        for row in table.to_dict("records")
    ]


__all__: Sequence[str] = ["Settings", "compare", "fairness", "plot", "reproduce", "sweep"]
