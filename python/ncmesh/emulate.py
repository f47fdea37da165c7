"""Real-time emulation of a scenario's links between network namespaces
(``ncmesh emulate``): unmodified programs, kernel TCP and iperf3 among them,
run over the scenario's capacity, delay, loss and queues. Needs root and
/dev/net/tun; see docs/emulate.md."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from . import _native
from .simulate import ScenarioLike, load

EmulateError = _native.EmulateError

__all__ = ["EmulateError", "emulate"]


def emulate(
    scenario: ScenarioLike,
    *,
    commands: Sequence[tuple[int, str, float, bool]] = (),
    overrides: Mapping[str, Any] | None = None,
    toml_overrides: Sequence[tuple[str, str]] = (),
    seed: int | None = None,
) -> dict[str, Any]:
    """Runs the scenario's links in real time with its ``[emulate]`` commands
    and ``commands``, each ``(node, command, start_s, background)``.

    Returns the report: ``nodes`` (namespace and address of each), ``links``
    (per direction: packets received, dropped by the queue, lost, delivered),
    ``commands`` (exit status and output), ``timing`` (how late deliveries
    were against the link models, in microseconds) and the load average it
    ran under. Raises :class:`EmulateError` where the machine cannot host it.
    """
    simulation = load(scenario, seed=seed, overrides=overrides, toml_overrides=toml_overrides)
    report: dict[str, Any] = json.loads(simulation.emulate(list(commands)))
    return report
