"""The simulator's validation: TCP against Padhye's model, goodput along a
lossy chain, fairness on a shared bottleneck. ``python -m
ncmesh.experiments.validation`` prints the tables of docs/validation.md."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..models import padhye
from ..paths import scenario
from ..simulate import run

PADHYE_LOSSES = (0.005, 0.01, 0.02, 0.05)


def tcp_against_padhye(
    losses: Sequence[float] = PADHYE_LOSSES, duration_s: float = 2000.0, seeds: Sequence[int] = (1, 2, 3)
) -> pd.DataFrame:
    """TCP Reno over one lossy link against Padhye et al.'s full model (eq. 32),
    fed the simulation's own mean RTT and RTO and its receive window."""
    rows = []
    for p in losses:
        for seed in seeds:
            r = run(
                scenario("single-lossy-link"), seed=seed, duration=duration_s, links__0__loss=p, tcp__variant="reno"
            )
            f = r.flows.iloc[0]
            wmax = 100  # the scenario's rcv_window
            send_rate = f.packets_sent / duration_s
            model = float(padhye.throughput(p, f.rtt_mean_s, f.rto_mean_s, wmax, b=1))
            rows.append(
                {
                    "loss": p,
                    "seed": seed,
                    "rtt_s": f.rtt_mean_s,
                    "rto_s": f.rto_mean_s,
                    "sim_pkts_per_s": send_rate,
                    "model_pkts_per_s": model,
                    "ratio": send_rate / model,
                    "timeouts": int(f.timeouts),
                }
            )
    per_seed = pd.DataFrame(rows)
    return (
        per_seed.groupby("loss", as_index=False)
        .agg(
            rtt_s=("rtt_s", "mean"),
            rto_s=("rto_s", "mean"),
            sim_pkts_per_s=("sim_pkts_per_s", "mean"),
            model_pkts_per_s=("model_pkts_per_s", "mean"),
            timeouts=("timeouts", "mean"),
        )
        .assign(ratio=lambda t: t.sim_pkts_per_s / t.model_pkts_per_s)
    )


def chain_goodput(
    losses: Sequence[float] = (0.0, 0.01, 0.02, 0.05, 0.1, 0.2),
    duration_s: float = 1000.0,
    seeds: Sequence[int] = (1, 2, 3),
) -> pd.DataFrame:
    """Goodput of one NewReno flow over the five-hop chain as per-hop loss rises."""
    rows = []
    for p in losses:
        goodputs = [
            run(scenario("chain-5hop"), seed=s, duration=duration_s, link_class__hop__loss=p).flows.goodput_bps.iloc[0]
            for s in seeds
        ]
        rows.append(
            {
                "loss": p,
                "goodput_bps": float(np.mean(goodputs)),
                "min_bps": float(np.min(goodputs)),
                "max_bps": float(np.max(goodputs)),
            }
        )
    return pd.DataFrame(rows)


def bottleneck_fairness(
    variants: Sequence[str] = ("reno", "newreno", "sack", "vegas", "cubic"), duration_s: float = 300.0
) -> pd.DataFrame:
    """Jain's index of four identical flows on the dumbbell, per TCP variant."""
    rows = []
    for v in variants:
        r = run(scenario("dumbbell"), duration=duration_s, tcp__variant=v)
        rows.append(
            {
                "variant": v,
                "fairness": r.fairness,
                "total_bps": r.flows.goodput_bps.sum(),
                "min_bps": r.flows.goodput_bps.min(),
                "max_bps": r.flows.goodput_bps.max(),
            }
        )
    return pd.DataFrame(rows)


def main() -> None:
    pd.set_option("display.width", 160)
    print("TCP Reno against Padhye et al. (single-lossy-link, 2000 s, seeds 1-3)")
    print(tcp_against_padhye().to_markdown(index=False, floatfmt=".4g"))
    print("\nFive-hop chain (chain-5hop, 1000 s, seeds 1-3)")
    print(chain_goodput().to_markdown(index=False, floatfmt=".4g"))
    print("\nFour flows on one bottleneck (dumbbell, 300 s)")
    print(bottleneck_fairness().to_markdown(index=False, floatfmt=".4g"))


if __name__ == "__main__":
    main()
