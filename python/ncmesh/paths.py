"""Where the shipped scenarios live."""

from __future__ import annotations

from pathlib import Path

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def scenario(name: str) -> Path:
    """A shipped scenario by name (``"chain-5hop"``), or a path as given."""
    path = Path(name)
    if path.suffix == ".toml" or path.exists():
        return path
    return SCENARIOS / f"{name}.toml"
