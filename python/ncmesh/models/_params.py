"""Parameter checking shared by every model.

Each model takes numpy-broadcastable parameters so that a whole curve is one
call; a single bad element anywhere in an array must still name the parameter
and the range it violates, so the check reports the first offending value.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

Reals = npt.ArrayLike
"""What a model takes for a parameter: a number, or an array of them to broadcast."""

Floats = float | npt.NDArray[np.float64]
"""What a model gives back: a float for scalar parameters, else an array."""


class ModelParameterError(ValueError):
    """A model parameter lies outside the range where the model is defined."""

    def __init__(self, name: str, expected: str, got: object) -> None:
        self.name = name
        self.expected = expected
        self.got = got
        super().__init__(f"{name} must be {expected}, got {got!r}")


def _fmt(lo: float, hi: float, lo_closed: bool, hi_closed: bool) -> str:
    left = "[" if lo_closed and not math.isinf(lo) else "("
    right = "]" if hi_closed and not math.isinf(hi) else ")"
    hi_s = "inf" if math.isinf(hi) else repr(hi)
    lo_s = "-inf" if math.isinf(lo) else repr(lo)
    return f"in {left}{lo_s}, {hi_s}{right}"


def real(
    name: str,
    value: object,
    lo: float = -math.inf,
    hi: float = math.inf,
    lo_closed: bool = True,
    hi_closed: bool = True,
) -> npt.NDArray[np.float64]:
    """Return ``value`` as a float array after checking every element is in range."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ModelParameterError(name, "a real number or array of them", value) from None
    expected = _fmt(lo, hi, lo_closed, hi_closed)
    bad = ~np.isfinite(arr) & ~(np.isinf(arr) & (np.isinf(lo) | np.isinf(hi)))
    bad |= np.isnan(arr)
    with np.errstate(invalid="ignore"):
        bad |= (arr < lo) if lo_closed else (arr <= lo)
        bad |= (arr > hi) if hi_closed else (arr >= hi)
    if np.any(bad):
        raise ModelParameterError(name, expected, arr[bad].flat[0].item())
    return arr


def integer(name: str, value: object, lo: int, hi: float = math.inf) -> npt.NDArray[np.int64]:
    """Return ``value`` as an int array; fractional or out-of-range elements are refused."""
    try:
        arr = real(name, value, lo, hi)
    except ModelParameterError as e:
        raise ModelParameterError(name, f"an integer {_fmt(lo, hi, True, True)}", e.got) from None
    if np.any(arr != np.round(arr)):
        raise ModelParameterError(
            name, f"an integer {_fmt(lo, hi, True, True)}", arr[arr != np.round(arr)].flat[0].item()
        )
    return arr.astype(np.int64)


def scalar_or_array(x: npt.ArrayLike) -> Floats:
    """Give scalars back as Python floats so single-point calls read naturally."""
    arr = np.asarray(x, dtype=np.float64)
    return float(arr.item()) if arr.ndim == 0 else arr
