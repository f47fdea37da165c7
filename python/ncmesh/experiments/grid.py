"""A large mesh for scale tests: a rows x cols grid of lossy wireless links
with flows between random pairs of nodes."""

from __future__ import annotations

import random
from typing import Any


def grid_scenario(
    rows: int = 20, cols: int = 20, flows: int = 200, duration_s: float = 100.0, loss: float = 0.01, seed: int = 1
) -> dict[str, Any]:
    """The scenario as a dictionary: node r*cols+c+1 at row r, column c;
    bulk TCP flows between distinct random nodes, routed on shortest paths."""
    nodes = [r * cols + c + 1 for r in range(rows) for c in range(cols)]
    links = []
    for r in range(rows):
        for c in range(cols):
            n = r * cols + c + 1
            if c + 1 < cols:
                links.append({"between": [n, n + 1], "class": "radio"})
            if r + 1 < rows:
                links.append({"between": [n, n + cols], "class": "radio"})
    pick = random.Random(seed)
    pairs: list[dict[str, Any]] = []
    while len(pairs) < flows:
        a, b = pick.sample(nodes, 2)
        pairs.append({"src": a, "dst": b, "app": "bulk", "start": round(pick.uniform(0, 1), 3)})
    return {
        "name": f"grid-{rows}x{cols}",
        "duration": duration_s,
        "seed": seed,
        "nodes": nodes,
        "link_class": {"radio": {"capacity": "11Mbps", "delay": "1ms", "loss": loss, "queue": 50}},
        "links": links,
        "flows": pairs,
    }
