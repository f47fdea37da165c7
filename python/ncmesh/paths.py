"""Where the shipped scenarios live: in the package, as data files.

They are found through :mod:`importlib.resources`, so they are there in an
installed wheel as in a source checkout (whose top-level ``scenarios`` is a
link to the same directory).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def shipped() -> list[str]:
    """The names of the shipped scenarios, as ``scenario`` takes them."""
    return sorted(entry.name.removesuffix(".toml") for entry in _directory().iterdir() if entry.name.endswith(".toml"))


def scenario(name: str) -> Path:
    """A shipped scenario by name (``"chain-5hop"``), or a path as given."""
    path = Path(name)
    if path.suffix == ".toml" or path.exists():
        return path
    return _directory() / f"{name}.toml"


def _directory() -> Path:
    directory = resources.files("ncmesh") / "scenarios"
    # Packages are installed as directories (wheels unpack), so this is a file system path.
    assert isinstance(directory, Path), f"ncmesh is not installed as files: {directory}"
    return directory
