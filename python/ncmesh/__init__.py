"""ncmesh: network-coded TCP over lossy wireless mesh networks.

The codecs live in :mod:`ncmesh.codec`, the simulator behind :func:`run`;
everything runs on a Rust core.
"""

from importlib.metadata import PackageNotFoundError, version

from . import codec
from .simulate import RunResult, ScenarioError, run

try:
    __version__ = version("ncmesh")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"

__all__ = ["codec", "run", "RunResult", "ScenarioError", "__version__"]
