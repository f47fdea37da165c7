"""``ncmesh model ...`` (ncmesh.cli.model mounted on the main CLI)."""

import json

import pytest
import typer
from typer.testing import CliRunner

from ncmesh.cli import model as models_cli
from ncmesh.models import markov

# Mounted on an app of their own, as the main CLI mounts them, so that these
# tests exercise the model commands alone.
app = typer.Typer()
app.add_typer(models_cli.app, name="model")


@app.callback()
def _root() -> None:
    pass


def run(*args):
    return CliRunner().invoke(app, ["model", *args])


def test_main_cli_mounts_the_model_sub_app():
    from ncmesh import cli as main_cli

    res = CliRunner().invoke(main_cli.app, ["model", "markov", "--json"])
    assert res.exit_code == 0, res.output
    assert "throughput_pkts_per_s" in res.stdout


def test_markov_json_has_the_documented_keys_and_model_values():
    res = run("markov", "--p", "0.05", "--cwmax", "50", "--rtt", "0.8", "--R", "1.0", "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert {"throughput_pkts_per_s", "mean_cwnd", "absorbing_mass"} <= out.keys()
    ref = markov.solve(0.05, 50, 0.8, 1.0)
    assert out["throughput_pkts_per_s"] == pytest.approx(ref.throughput_pkts_per_s)
    assert out["mean_cwnd"] == pytest.approx(ref.mean_cwnd)
    assert 0.99 < out["absorbing_mass"] <= 1.0


@pytest.mark.parametrize(
    "args,name",
    [
        (["markov", "--p", "1.5"], "p"),
        (["markov", "--R", "0.5"], "R"),
        (["markov", "--M", "1"], "M"),
        (["padhye", "--b", "0"], "b"),
        (["honc", "--n", "0"], "n"),
    ],
)
def test_bad_parameters_exit_nonzero_with_one_line(args, name):
    res = run(*args)
    assert res.exit_code != 0
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {name} must be"), res.output
    assert "Traceback" not in res.output


def test_unknown_topology_is_one_line():
    res = run("num", "--topology", "moebius")
    assert res.exit_code != 0 and "topology must be one of" in res.output


@pytest.mark.parametrize(
    "args", [["markov", "--cwmax", "20"], ["padhye"], ["honc"], ["kim"], ["abouzeid"], ["num", "--iterations", "300"]]
)
def test_plot_writes_a_png(tmp_path, args):
    f = tmp_path / "fig.png"
    res = run(*args, "--plot", str(f))
    assert res.exit_code == 0, res.output
    assert f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_num_json_reports_the_gain():
    res = run("num", "--topology", "cross", "--iterations", "3000", "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["coding_gain"] == pytest.approx(0.6, abs=1e-4)
    assert out["distributed_total"] == pytest.approx(out["optimal_total"], rel=0.01)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["kim", "--wmax", "inf"], "error: wmax must be a finite number, got inf"),
        (["padhye", "--rtt", "inf"], "error: rtt must be a finite number, got inf"),
        (["markov", "--rtt", "nan"], "error: rtt must be a finite number, got nan"),
        (["padhye", "--rto", "0"], "error: rto must be in (0.0, inf), got 0.0"),
        (["honc", "--b", "0"], "error: b must be in (0.0, inf), got 0.0"),
        (["honc", "--n", "100000000"], "error: n must be at most 10,000 hops, got 100000000"),
        (["num", "--iterations", "1000000000"], "error: iterations must be at most 100,000, got 1000000000"),
    ],
)
def test_values_outside_the_models_finite_domain_are_one_line(args, message):
    res = run(*args, "--json")
    assert res.exit_code == 2
    assert res.output.strip() == message


def test_an_endless_connection_is_still_a_duration_of_kim():
    res = run("kim", "--duration", "inf", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["throughput_pkts_per_s"] == pytest.approx(50 / 0.8)


def test_results_that_overflow_are_null_in_json():
    res = run("honc", "--n", "10000", "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout, parse_constant=lambda c: pytest.fail(f"not JSON: {c}"))
    assert out["throughput_gain"] is None and out["delay_end_to_end_s"] is None
    assert out["throughput_hop_by_hop"] == pytest.approx(0.65)


def test_num_says_when_the_distributed_solution_has_not_converged():
    res = run("num", "--step", "1e6", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["converged"] is False
    assert "warning: the distributed solution has not converged" in res.stderr
    res = run("num", "--json")
    assert json.loads(res.stdout)["converged"] is True and "warning" not in res.stderr
