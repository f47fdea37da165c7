"""The shared 802.11 channel's validation: Bianchi's saturation throughput,
hidden terminals, and overhearing on the X topology. ``python -m
ncmesh.experiments.wifi`` prints the tables of docs/validation.md; ``ncmesh
validate bianchi --json`` prints the first."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..models import bianchi
from ..paths import scenario
from ..simulate import run

BIANCHI_STATIONS = (1, 2, 5, 10, 20, 50)
PAYLOAD = 1500
RATE_MBPS = 11.0
CONTROL_MBPS = 1.0


def bianchi_scenario(n: int, access: str, duration_s: float, seed: int, payload: int = PAYLOAD) -> dict[str, Any]:
    """n saturated stations around one receiver (node 1), all in one collision
    domain, 802.11b at 11 Mbit/s with ACKs at 1 Mbit/s, retries unlimited as
    Bianchi's chain has them. Each station offers twice its fair share of
    payload-byte packets, so its MAC queue never runs dry."""
    offered_bps = max(2 * 7e6 / n, 1e6)
    return {
        "name": f"bianchi-{access}-{n}",
        "duration": duration_s,
        "seed": seed,
        "nodes": list(range(1, n + 2)),
        "wifi": {
            "standard": "802.11b",
            "data_rate": f"{RATE_MBPS:g}Mbps",
            "control_rate": f"{CONTROL_MBPS:g}Mbps",
            "placement": {"kind": "circle", "radius": 1.0, "centre_first": True},
            "reach": 10.0,
            "rts_threshold": 0 if access == "rts" else 65_535,
            "short_retry_limit": 1_000_000,
            "long_retry_limit": 1_000_000,
        },
        "flows": [
            {"src": s, "dst": 1, "app": "cbr", "rate": offered_bps, "packet_size": payload - 28}
            for s in range(2, n + 2)
        ],
    }


def bianchi_rows(
    stations: Sequence[int] = BIANCHI_STATIONS,
    accesses: Sequence[str] = ("basic", "rts"),
    duration_s: float = 30.0,
    seeds: Sequence[int] = (1, 2, 3),
) -> list[dict[str, Any]]:
    """Simulated saturation throughput (payload bits delivered to the
    receiver's MAC per second, mean over seeds) against Bianchi's model."""
    rows = []
    for access in accesses:
        timing = bianchi.dsss_timing(PAYLOAD, RATE_MBPS, CONTROL_MBPS, access)
        for n in stations:
            model = bianchi.throughput(n, timing, PAYLOAD)
            simulated = []
            for seed in seeds:
                r = run(bianchi_scenario(n, access, duration_s, seed))
                received = int(r.radios.loc[r.radios.node == 1, "received"].iloc[0])
                simulated.append(received * PAYLOAD * 8 / duration_s)
            mean = sum(simulated) / len(simulated)
            rows.append(
                {
                    "n": n,
                    "access": access,
                    "rate_mbps": RATE_MBPS,
                    "frame_bytes": PAYLOAD,
                    "model_mbps": model / 1e6,
                    "simulated_mbps": mean / 1e6,
                    "ratio": mean / model,
                    "seeds": len(seeds),
                }
            )
    return rows


def hidden_pair(
    rts: bool, sense: float = 20.0, duration_s: float = 30.0, seeds: Sequence[int] = (1, 2, 3)
) -> dict[str, Any]:
    """The hidden-terminal pair (scenarios/wifi-hidden-pair.toml): two
    saturated senders 36 m apart, 18 m either side of their receiver, reach 20 m."""
    totals: dict[str, float] = {"goodput_bps": 0.0, "collided": 0.0, "sent": 0.0}
    for seed in seeds:
        r = run(
            scenario("wifi-hidden-pair"),
            seed=seed,
            duration=duration_s,
            wifi__sense=sense,
            wifi__rts_threshold=0 if rts else 65_535,
        )
        totals["goodput_bps"] += float(r.flows.goodput_bps.sum())
        into_receiver = r.pairs[r.pairs.to == 2]
        totals["collided"] += float(into_receiver.collided.sum())
        totals["sent"] += float(into_receiver.sent.sum())
    k = len(seeds)
    return {
        "rts": rts,
        "sense_m": sense,
        "goodput_mbps": totals["goodput_bps"] / k / 1e6,
        "collided_share": totals["collided"] / totals["sent"] if totals["sent"] else math.nan,
    }


def overhearing(fer: float = 0.0, duration_s: float = 30.0, seed: int = 1) -> list[dict[str, Any]]:
    """X topology (scenarios/wifi-x.toml): what each destination overhears
    from the other flow's source, against (1 - FER) x the share that did not collide."""
    r = run(scenario("wifi-x"), seed=seed, duration=duration_s, wifi__fer=fer)
    rows = []
    for source, listener in ((1, 4), (3, 2)):
        pair = r.pairs[(r.pairs["from"] == source) & (r.pairs.to == listener)].iloc[0]
        sent, collided = int(pair.sent), int(pair.collided)
        expected = (1 - fer) * (sent - collided) / sent
        rows.append(
            {
                "source": source,
                "listener": listener,
                "fer": fer,
                "sent": sent,
                "collided": collided,
                "received": int(pair.received),
                "overheard_share": int(pair.received) / sent,
                "expected_share": expected,
            }
        )
    return rows


def main() -> None:
    from tabulate import tabulate

    print("Bianchi: saturation throughput, 802.11b at 11 Mbit/s, 1500-byte payloads")
    print(tabulate(bianchi_rows(), headers="keys", floatfmt=".4g", tablefmt="github"))
    print("\nHidden terminals")
    print(
        tabulate(
            [hidden_pair(rts, sense) for sense in (20.0, 40.0) for rts in (False, True)],
            headers="keys",
            floatfmt=".4g",
            tablefmt="github",
        )
    )
    print("\nOverhearing on the X topology")
    print(tabulate(overhearing(0.0) + overhearing(0.3), headers="keys", floatfmt=".4g", tablefmt="github"))


if __name__ == "__main__":
    main()
