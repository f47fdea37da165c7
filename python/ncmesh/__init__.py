"""ncmesh: network-coded TCP over lossy wireless mesh networks.

The codecs live in :mod:`ncmesh.codec`; everything runs on a Rust core.
"""

from importlib.metadata import PackageNotFoundError, version

from . import codec

try:
    __version__ = version("ncmesh")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"

__all__ = ["codec", "__version__"]
