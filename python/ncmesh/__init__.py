"""ncmesh: network-coded TCP over lossy wireless mesh networks.

The codecs live in :mod:`ncmesh.codec`, the simulator behind :func:`run`;
everything runs on a Rust core.
"""

from . import codec
from ._native import __version__
from .simulate import RunResult, ScenarioError, run

__all__ = ["RunResult", "ScenarioError", "__version__", "codec", "run"]
