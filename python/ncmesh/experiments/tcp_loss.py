"""Plain TCP on the seed 000 single path as the wireless loss rises: the
baseline the coded schemes are measured against."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from ..files import write_atomically
from ..paths import scenario
from ..simulate import run

LOSSES = (0.0, 0.05, 0.10, 0.20)
WIRELESS_BPS = 1e6


def sweep(
    losses: Sequence[float] = LOSSES,
    duration_s: float = 1000.0,
    variant: str = "newreno",
    seed: int = 1,
    jobs: int | None = None,
    on_done: Callable[[float], None] | None = None,
) -> pd.DataFrame:
    """One run per loss rate, in parallel threads (runs release the GIL)."""

    def one(loss: float) -> dict[str, Any]:
        result = run(
            scenario("honc-single-path"),
            seed=seed,
            duration=duration_s,
            link_class__wireless__loss=loss,
            tcp__variant=variant,
        )
        flows = result.flows
        row = {
            "loss": loss,
            "throughput_bps": flows.goodput_bps.sum(),
            "bound_bps": WIRELESS_BPS * (1 - loss),
            "delay_mean_s": (flows.delay_mean_s * flows.delivered_bytes).sum() / max(flows.delivered_bytes.sum(), 1),
            "retransmits": int(flows.retransmits.sum()),
            "timeouts": int(flows.timeouts.sum()),
            "fairness": result.fairness,
            "events": result.events,
            "wall_s": result.wall_s,
        }
        if on_done:
            on_done(loss)
        return row

    with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as pool:
        rows = list(pool.map(one, losses))
    return pd.DataFrame(rows)


def plot(table: pd.DataFrame, out: Path) -> list[Path]:
    """Throughput and delay against loss, as PNG and SVG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.6), constrained_layout=True)
    a.plot(table.loss, table.throughput_bps / 1e6, "o-", label="TCP (4 flows, total)")
    a.plot(table.loss, table.bound_bps / 1e6, "k--", label="per-hop bound b(1-p)")
    a.set(xlabel="loss per wireless hop", ylabel="goodput (Mbit/s)", ylim=(0, None), title="Throughput")
    a.legend()
    b.plot(table.loss, table.delay_mean_s, "o-")
    b.set(xlabel="loss per wireless hop", ylabel="mean end-to-end delay (s)", ylim=(0, None), title="Delay")
    written = []
    for suffix in ("png", "svg"):
        written.append(write_atomically(out / f"tcp-vs-loss.{suffix}", partial(fig.savefig, format=suffix, dpi=120)))
    plt.close(fig)
    return written
