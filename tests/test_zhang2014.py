"""Seed 002's TCP-NC model against simulated TCP/NC on Reno (docs/models.md)."""

import json

import pytest
from typer.testing import CliRunner

from ncmesh.cli import app
from ncmesh.experiments import zhang2014


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    settings = zhang2014.Settings(duration_s=2000.0, seeds=(1, 2), erasures=(0.0, 0.15), windows=())
    return zhang2014.sweep(settings, tmp_path_factory.mktemp("zhang") / "store.sqlite", jobs=2)


def test_model_and_simulation_agree_where_the_window_or_timeouts_dominate(table):
    # Lossless, the window limit sets the throughput: 50 packets per 0.8 s round.
    lossless = table[table.erasure == 0.0].iloc[0]
    assert lossless.markov_throughput == pytest.approx(62.5)
    assert abs(lossless.throughput_error) < 0.06
    assert abs(lossless.cwnd_error) < 0.02
    # At 15% erasure the window keeps collapsing to timeouts, in both.
    lossy = table[table.erasure == 0.15].iloc[0]
    assert abs(lossy.throughput_error) < 0.15, lossy
    assert abs(lossy.cwnd_error) < 0.20, lossy
    assert lossy.timeouts > 10


def test_kim_ignores_erasures_and_overestimates_under_loss(table):
    lossy = table[table.erasure == 0.15].iloc[0]
    assert lossy.kim_throughput > 10 * lossy.sim_throughput


def test_model_redundancy_is_fairer_to_reno_than_one_over_one_minus_p():
    shares = zhang2014.fairness(zhang2014.Settings(duration_s=3000.0, seeds=(1,), erasures=(), windows=()))
    model, naive = shares.nc_to_reno_ratio
    assert shares.R[0] < shares.R[1]
    assert abs(model - 1) < abs(naive - 1)
    assert naive > 2


def test_reproduce_cli_writes_figures_and_json(tmp_path, monkeypatch):
    monkeypatch.setattr(zhang2014.Settings, "of", classmethod(lambda cls, quick: cls(500.0, (1,), (0.0, 0.1), (20,))))
    result = CliRunner().invoke(app, ["reproduce", "zhang2014", "--quick", "--out", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert {row["erasure"] for row in out["rows"]} == {0.0, 0.05, 0.1}
    assert {"sim_throughput", "markov_throughput", "kim_throughput", "abouzeid_throughput"} <= set(out["rows"][0])
    for name in ("zhang2014.png", "zhang2014.svg", "zhang2014.csv", "zhang2014-fairness.csv", "zhang2014-report.html"):
        assert (tmp_path / name).stat().st_size > 0
