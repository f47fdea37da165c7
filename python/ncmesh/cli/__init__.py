"""The ``ncmesh`` command line: a thin layer over the Python API.

One module per command group. Library modules return values and raise
exceptions; printing, progress bars, signals and exit codes live here. Each
command imports what it needs when it runs, so that ``ncmesh --help`` and
``ncmesh run`` start without loading pandas, matplotlib or scipy. Help is
plain rather than Rich-formatted for the same reason: Typer's Rich help
imports Markdown rendering and takes longer than the rest of the start.
"""

# Each module registers its commands on import, in the order --help lists them.
from . import bench, demo, emulate, model, reproduce, run, sweep, validate  # noqa: F401
from ._base import app

__all__ = ["app"]
