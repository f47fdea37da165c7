"""Experiments built on :func:`ncmesh.run`: sweeps with their tables and plots."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

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
