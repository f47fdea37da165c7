"""Analytic models of TCP and network-coded TCP over lossy wireless meshes.

One module per model; every function takes numpy-broadcastable parameters and
raises :class:`ModelParameterError` (a ``ValueError``) for out-of-range input.
Equations, interpretations of garbled equations, and validation are in
docs/models.md.
"""

from types import ModuleType

from ._params import ModelParameterError

__all__ = ["ModelParameterError", "abouzeid", "bianchi", "honc", "kim", "markov", "num", "padhye"]


def __getattr__(name: str) -> ModuleType:
    # Submodules load on first use: num pulls in cvxpy, which is slow to import
    # and not needed by the closed-form models.
    if name in {"markov", "kim", "padhye", "abouzeid", "honc", "num", "bianchi"}:
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(name)
