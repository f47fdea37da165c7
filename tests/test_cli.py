"""The command line."""

import subprocess
import sys

from typer.testing import CliRunner

from ncmesh.cli import app


def test_demo_decodes_and_verifies_the_file():
    result = CliRunner().invoke(app, ["codec-demo", "--quick", "--loss", "0.2"])
    assert result.exit_code == 0, result.output
    assert "verified" in result.output
    assert "source -> relay" in result.output


def test_unreadable_file_is_a_clear_error():
    result = CliRunner().invoke(app, ["codec-demo", "--file", "no/such/file"])
    assert result.exit_code != 0
    assert "cannot read" in result.output


HEAVY = ("pandas", "matplotlib", "scipy", "plotly")


def test_importing_the_command_line_loads_no_heavy_library():
    code = f"import sys, ncmesh.cli; print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def imported_modules(*args: str) -> set[str]:
    """The modules a command imports, from ``python -X importtime``."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "ncmesh.cli", *args], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def test_run_and_help_load_no_heavy_library():
    for args in (["--help"], ["run", "single-lossy-link", "--set", "duration=1", "--json"]):
        modules = imported_modules(*args)
        assert "ncmesh.cli" in modules  # the trace is read at all
        assert not {m.split(".")[0] for m in modules} & set(HEAVY), args
