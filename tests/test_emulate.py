"""``ncmesh emulate`` from the command line: kernel traffic through the
scenario's links between namespaces. Skips, saying why, where namespaces and
TUN devices cannot be made."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ncmesh.cli import app

REASON = next(
    (
        why
        for why, missing in [
            ("needs root", os.geteuid() != 0),
            ("needs /dev/net/tun", not Path("/dev/net/tun").exists()),
            ("needs iproute2's ip", shutil.which("ip") is None),
            ("needs ping", shutil.which("ping") is None),
        ]
        if missing
    ),
    None,
)

CHAIN = """
duration = 20
nodes = [1, 2, 3]
[link_class.hop]
capacity = "5Mbps"
delay = "15ms"
queue = 20
[[links]]
between = [1, 2]
class = "hop"
[[links]]
between = [2, 3]
class = "hop"
[[emulate.commands]]
node = 1
run = "ping -c 3 -i 0.2 10.0.0.3"
"""


@pytest.mark.skipif(REASON is not None, reason=REASON or "")
def test_ping_runs_over_the_emulated_chain(tmp_path):
    path = tmp_path / "chain.toml"
    path.write_text(CHAIN)
    result = CliRunner().invoke(app, ["emulate", str(path), "--json"])
    assert result.exit_code == 0, result.output
    import json

    report = json.loads(result.output)
    (ping,) = report["commands"]
    rtts = [float(line.split("time=")[1].split()[0]) for line in ping["stdout"].splitlines() if "time=" in line]
    # Two hops of 15 ms each way.
    assert len(rtts) == 3 and all(60 <= r < 75 for r in rtts), ping["stdout"]
    assert report["timing"]["samples"] >= 12
    assert [n["address"] for n in report["nodes"]] == ["10.0.0.1", "10.0.0.2", "10.0.0.3"]


def test_bad_commands_are_refused_with_what_was_expected(tmp_path):
    path = tmp_path / "chain.toml"
    path.write_text(CHAIN)
    result = CliRunner().invoke(app, ["emulate", str(path), "--run", "ping"])
    assert result.exit_code == 2
    assert "--run ping: expected NODE=COMMAND" in result.output
    result = CliRunner().invoke(app, ["emulate", str(path), "--set", "emulate.commands.0.node=9"])
    assert result.exit_code == 2
    assert "emulate.commands[0].node: no node 9" in result.output


@pytest.mark.skipif(REASON is not None, reason=REASON or "")
@pytest.mark.parametrize(("sent", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_ends_the_emulation_and_leaves_nothing_behind(tmp_path, sent, code):
    path = tmp_path / "chain.toml"
    path.write_text(CHAIN.replace("duration = 20", "duration = 60"))
    waiting = f"sleep 45 && echo {code}"
    cli = subprocess.Popen(
        [sys.executable, "-m", "ncmesh", "emulate", str(path), "--run", f"1={waiting}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    ours = f"ncm{cli.pid}x"

    def namespaces() -> str:
        return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout

    deadline = time.monotonic() + 30
    while ours not in namespaces() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ours in namespaces(), "the emulation did not start"
    time.sleep(0.5)
    cli.send_signal(sent)
    try:
        _, stderr = cli.communicate(timeout=15)
    finally:
        cli.kill()
    assert cli.returncode == code, stderr
    assert ours not in namespaces()
    left = subprocess.run(["pgrep", "-f", waiting], capture_output=True, text=True)
    assert left.stdout == "", "the command still runs"
