"""Experiments built on :func:`ncmesh.run`: sweeps with their tables and plots."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from ..sweep import Sweep

FAILED_COLUMNS = ["key", "sweep", "seed", "params", "error"]


def failed_runs(runs: pd.DataFrame, sweeps: Iterable[str]) -> pd.DataFrame:
    """The failed runs of ``sweeps``: key, sweep, seed, the point's swept
    values as ``key=value`` text, and the error. A reproduction reports them,
    so that a mean over fewer seeds than planned never passes unnoticed."""
    import pandas as pd

    from ..results import param_columns

    failed = runs[runs.sweep.isin(list(sweeps)) & (runs.status == "failed")]
    params = param_columns(runs)
    rows = [
        {
            "key": r["key"],
            "sweep": r["sweep"],
            "seed": r["seed"],
            "params": ", ".join(f"{p}={r[p]}" for p in params if pd.notna(r[p])),
            "error": r["error"],
        }
        for r in failed.to_dict("records")
    ]
    return pd.DataFrame(rows, columns=FAILED_COLUMNS)


def runs_in(sweeps: Iterable[Sweep]) -> int:
    """How many runs ``sweeps`` make: a reproduction's progress bar."""
    return sum(len(sw.seeds) * sum(1 for _ in sw.points()) for sw in sweeps)


def run_into(
    sweeps: Iterable[Sweep],
    db: Path,
    jobs: int | None = None,
    dask: str | None = None,
    on_start: Callable[[int, int], None] | None = None,
    on_done: Callable[[Any, Any], None] | None = None,
) -> None:
    """Runs what the store ``db`` does not hold yet of each sweep, in turn.
    An interrupted sweep raises ``KeyboardInterrupt``: its finished runs are
    kept, and the next reproduction resumes from them."""
    from ..sweep import run_sweep

    for sw in sweeps:
        if run_sweep(sw, db, jobs=jobs, dask=dask, on_start=on_start, on_done=on_done).interrupted:
            raise KeyboardInterrupt
