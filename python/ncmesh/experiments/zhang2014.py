"""Seed 002 (Zhang, Lan and Li 2014) against the simulator: the Markov
chain model of TCP-NC, Kim's and Abouzeid's models, and simulated TCP/NC
over Reno on the four-hop tandem of section 5.1.

``ncmesh reproduce zhang2014 [--quick]`` runs it; docs/models.md shows the
result and where the model and the simulation part.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..files import write_atomically
from ..models import abouzeid, kim, markov
from ..simulate import run

HOPS = 4
LINK_RTT_S = 0.8  # four hops of 100 ms each way
PACKET_BYTES = 1000


def tandem(erasure: float, cwmax: int, redundancy: float, duration_s: float, seed: int, capacity: str = "1Mbps") -> dict[str, Any]:
    """Sec. 5.1 topology (a): a four-hop tandem of 1 Mbit/s, 100 ms links,
    1 KB packets, equal loss on every hop so that the end-to-end erasure is
    ``erasure``. Only data packets are erased, as the model assumes."""
    hop = 1.0 - (1.0 - erasure) ** (1.0 / HOPS)
    nodes = list(range(1, HOPS + 2))
    links = [{"between": [a, b], "capacity": capacity, "delay": "100ms", "loss": hop, "reverse_loss": 0.0, "queue": 1000}
             for a, b in zip(nodes, nodes[1:])]
    return {
        "name": "zhang2014-tandem",
        "duration": duration_s,
        "seed": seed,
        "nodes": nodes,
        "links": links,
        "tcp": {"variant": "reno", "mss": PACKET_BYTES, "rcv_window": cwmax},
        "flows": [{"src": nodes[0], "dst": nodes[-1], "app": "bulk"}],
        "coding": {"scheme": "tcpnc-e2e", "tcpnc": {"redundancy": redundancy}},
        "probes": {"interval": 1.0, "cwnd": True},
    }


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


def simulate_point(erasure: float, cwmax: int, redundancy: float, duration_s: float, seed: int) -> dict[str, float]:
    """Throughput and mean visual window of one run.

    Throughput counts what TCP saw acknowledged, as the model does (seed 002
    eq. 15 counts ACKs); with R = 1 the sink acknowledges packets as it sees
    them, which can be well ahead of decoding them.

    The model's visual window never exceeds CW_max (seed 002 sec. 4.2), while
    a window-limited TCP keeps growing cwnd, so the simulated mean is taken
    over min(cwnd, CW_max)."""
    r = run(tandem(erasure, cwmax, redundancy, duration_s, seed))
    f = r.flows.iloc[0]
    window = np.minimum(r.cwnd.cwnd_bytes.to_numpy() / PACKET_BYTES, cwmax)
    return {
        "throughput_pkts_per_s": f.acked_bytes / PACKET_BYTES / duration_s,
        "goodput_pkts_per_s": f.goodput_bps / 8 / PACKET_BYTES,
        "mean_cwnd": float(window.mean()),
        "timeouts": float(f.timeouts),
    }


def sweep(settings: Settings, redundancy: float = 1.0, jobs: int | None = None, on_done: Callable[[], None] | None = None) -> pd.DataFrame:
    """Every (erasure at CW_max 50) and (CW_max at 5% erasure) point, averaged over seeds, beside the models."""
    points = [(p, 50) for p in settings.erasures] + [(0.05, w) for w in settings.windows if w != 50]
    tasks = [(p, w, s) for p, w in points for s in settings.seeds]

    def one(task: tuple[float, int, int]) -> dict[str, float]:
        p, w, s = task
        out = {"erasure": p, "cwmax": w, "seed": s, **simulate_point(p, w, redundancy, settings.duration_s, s)}
        if on_done:
            on_done()
        return out

    with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as pool:
        runs = pd.DataFrame(list(pool.map(one, tasks)))
    table = runs.groupby(["erasure", "cwmax"], as_index=False).agg(
        sim_throughput=("throughput_pkts_per_s", "mean"),
        sim_throughput_std=("throughput_pkts_per_s", "std"),
        sim_goodput=("goodput_pkts_per_s", "mean"),
        sim_cwnd=("mean_cwnd", "mean"),
        timeouts=("timeouts", "mean"),
    )
    model = markov.solve(table.erasure.to_numpy(), table.cwmax.to_numpy(), LINK_RTT_S, redundancy)
    table["markov_throughput"] = np.asarray(model.throughput_pkts_per_s, dtype=float)
    table["markov_cwnd"] = np.asarray(model.mean_cwnd, dtype=float)
    table["kim_throughput"] = np.asarray(kim.throughput(table.cwmax.to_numpy(), LINK_RTT_S, settings.duration_s), dtype=float)
    p_visible = np.asarray(markov.effective_loss(table.erasure.to_numpy(), redundancy), dtype=float)
    table["abouzeid_throughput"] = [float(abouzeid.throughput(max(pv, 1e-6), LINK_RTT_S, int(w))) for pv, w in zip(p_visible, table.cwmax)]
    table["throughput_error"] = table.sim_throughput / table.markov_throughput - 1
    table["cwnd_error"] = table.sim_cwnd / table.markov_cwnd - 1
    return table


def fairness(settings: Settings, erasure: float = 0.06, capacity: str = "0.05Mbps") -> pd.DataFrame:
    """Sec. 5.6: one TCP-NC and one TCP-Reno flow share a 0.05 Mbit/s tandem
    at 6% end-to-end erasure. The model picks the R that equalises them; the
    simulation reports the throughput ratio at that R and at 1/(1-p)."""
    bottleneck = 50e3 / 8 / PACKET_BYTES
    # The round trip of a full 0.05 Mbit/s path: propagation plus one packet's serialisation per hop.
    rtt = LINK_RTT_S + HOPS * 2 * PACKET_BYTES * 8 / 50e3 / 2
    chosen = markov.equalising_redundancy(erasure, 50, rtt, bottleneck=bottleneck)
    rows = []
    for label, r in (("model", chosen), ("1/(1-p)", 1.0 / (1.0 - erasure))):
        ratios = []
        for seed in settings.seeds:
            scenario = tandem(erasure, 50, r, settings.duration_s, seed, capacity)
            scenario["flows"] = [
                {"src": 1, "dst": HOPS + 1, "app": "bulk", "coding": "tcpnc-e2e"},
                {"src": 1, "dst": HOPS + 1, "app": "bulk", "coding": "none"},
            ]
            flows = run(scenario).flows
            ratios.append(flows.acked_bytes.iloc[0] / max(flows.acked_bytes.iloc[1], 1))
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
        written.append(write_atomically(out / f"zhang2014.{suffix}", lambda p, s=suffix: fig.savefig(p, format=s, dpi=120)))
    plt.close(fig)
    return written


def reproduce(quick: bool, out: Path, jobs: int | None = None, on_done: Callable[[], None] | None = None) -> dict[str, Any]:
    settings = Settings.of(quick)
    table = sweep(settings, jobs=jobs, on_done=on_done)
    shares = fairness(settings)
    write_atomically(out / "zhang2014.csv", lambda p: table.to_csv(p, index=False))
    write_atomically(out / "zhang2014-fairness.csv", lambda p: shares.to_csv(p, index=False))
    figures = plot(table, out)
    return {"table": table, "fairness": shares, "figures": figures, "runs": len(table) * len(settings.seeds)}


def tasks(quick: bool) -> int:
    """How many simulation runs the sweep makes, for a progress bar."""
    s = Settings.of(quick)
    return (len(s.erasures) + len([w for w in s.windows if w != 50])) * len(s.seeds)


def rows_json(table: pd.DataFrame) -> list[dict[str, Any]]:
    return [{k: (None if isinstance(v, float) and np.isnan(v) else (v.item() if hasattr(v, "item") else v)) for k, v in row.items()}
            for row in table.to_dict("records")]


__all__: Sequence[str] = ["tandem", "sweep", "fairness", "plot", "reproduce", "Settings"]
