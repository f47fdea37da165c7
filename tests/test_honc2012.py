"""Seed 000's single-path claims (docs/protocols/honc.md), on a short run."""

import json
import os

import pandas as pd
import pytest
from typer.testing import CliRunner

from ncmesh.cli import app
from ncmesh.experiments import honc2012
from ncmesh.models import honc as closed_forms


@pytest.fixture(scope="module")
def at_35(tmp_path_factory):
    out = tmp_path_factory.mktemp("honc2012")
    settings = honc2012.Settings(1000.0, (1,), (0.35,), (), ())
    fig5 = honc2012.tables(_run(settings, out))[0]
    return {row.scheme: row._asdict() for row in fig5.itertuples()}


def _run(settings, out, on_done=None):
    from ncmesh import results
    from ncmesh.sweep import run_sweep

    for sw in honc2012.sweeps(settings):
        if run_sweep(sw, out / "store.sqlite", jobs=2, on_done=on_done).interrupted:
            break
    return results.load(out / "store.sqlite")


def test_honc_approaches_the_per_hop_bound(at_35):
    bound = float(closed_forms.throughput_hop_by_hop(honc2012.CAPACITY_BPS, 0.35))
    # The bound counts the whole 1 Mbit/s; payload is 1000 of every 1060 bytes.
    assert at_35["honc"]["throughput_bps"] > 0.8 * bound
    assert at_35["honc"]["fairness"] > 0.95


def test_honc_beats_both_tcpnc_baselines_in_throughput(at_35):
    """The quick run's ratios as docs/protocols/honc.md states them: above the
    paper's 3.36x over end to end, and 1.35x over hop by hop, which is above
    1.3x but short of the paper's 2.43x (the docs say why)."""
    h = at_35["honc"]["throughput_bps"]
    assert h / at_35["tcpnc-e2e"]["throughput_bps"] > 3.36
    assert 1.3 < h / at_35["tcpnc-hbh"]["throughput_bps"] < 2.43


def test_bbr_is_a_baseline_row_of_its_own(at_35):
    # Uncoded BBR and uncoded NewReno are told apart, though both run coding.scheme = "none".
    assert {"tcp", "bbr"} <= set(at_35)
    assert at_35["bbr"]["throughput_bps"] != at_35["tcp"]["throughput_bps"]
    # At 35% loss per hop (82% end to end) no uncoded TCP comes near TCP-HONC.
    assert at_35["honc"]["throughput_bps"] > 10 * at_35["bbr"]["throughput_bps"]


def test_honc_delay_as_the_quick_run_gives_it(at_35):
    """The quick run (seed 1, 1000 s) meets the delay target against end to
    end (0.28 of its mean delay; the paper has 0.27) but not against hop by
    hop: TCP-HONC's mean delay is above hop by hop's there, though its spread
    is a tenth of it. At the full settings it is below both (the slow test)."""
    honc, e2e, hbh = (at_35[s] for s in ("honc", "tcpnc-e2e", "tcpnc-hbh"))
    assert honc["delay_mean_s"] < 0.3 * e2e["delay_mean_s"]
    assert hbh["delay_mean_s"] < honc["delay_mean_s"] < 1.25 * hbh["delay_mean_s"]
    assert honc["delay_std_s"] < 0.1 * hbh["delay_std_s"]


@pytest.mark.slow
def test_the_full_settings_meet_the_documented_targets(tmp_path):
    """The claims table of docs/protocols/honc.md at the full reproduction's
    length (10000 s, P_e = 0.35). CI runs seed 1; NCMESH_HONC2012_SEEDS
    (say "1,2,3,4,5", the full reproduction's) runs more. Met: the paper's
    3.36x over end to end, delay below both baselines and under the paper's
    0.90 of hop by hop, goodput over 0.8 of eq. (3)'s bound. Not met, and
    asserted as not met so that the docs change with them: 2.43x over hop by
    hop (about 1.4x) and 0.27 of end to end's delay (about 0.3)."""
    seeds = tuple(int(s) for s in os.environ.get("NCMESH_HONC2012_SEEDS", "1").split(","))
    fig5 = honc2012.tables(_run(honc2012.Settings(10_000.0, seeds, (0.35,), (), ()), tmp_path))[0]
    at = {row.scheme: row._asdict() for row in fig5.itertuples()}
    honc, e2e, hbh = (at[s] for s in ("honc", "tcpnc-e2e", "tcpnc-hbh"))
    assert all(at[s]["seeds"] == len(seeds) and at[s]["failed"] == 0 for s in at)
    bound = float(closed_forms.throughput_hop_by_hop(honc2012.CAPACITY_BPS, 0.35))
    assert honc["throughput_bps"] > 0.8 * bound
    assert honc["fairness"] > 0.99
    assert honc["throughput_bps"] / e2e["throughput_bps"] > 3.36
    assert 1.3 < honc["throughput_bps"] / hbh["throughput_bps"] < 2.43
    assert 0.27 < honc["delay_mean_s"] / e2e["delay_mean_s"] < 0.35
    assert honc["delay_mean_s"] / hbh["delay_mean_s"] < 0.9


def test_an_interrupted_reproduction_resumes_without_rerunning(tmp_path):
    settings = honc2012.Settings(200.0, (1,), (0.1,), (0.1,), (0.1,))
    done = []

    def interrupt_after_two(task, outcome):
        done.append(task.key)
        if len(done) == 2:
            raise KeyboardInterrupt

    # Fig. 5: five schemes (TCP, BBR and the three coded); Fig. 6: three; Fig. 7: one.
    first = _run(settings, tmp_path, on_done=interrupt_after_two)
    assert 2 <= len(first) < 5 + 3 + 1, "the interruption stopped the reproduction part way"
    again = _run(settings, tmp_path)
    assert len(again) == 5 + 3 + 1 and set(again.status) == {"ok"}
    kept = again.set_index("key").finished_at
    assert all(kept[k] == t for k, t in zip(first.key, first.finished_at, strict=True)), (
        "finished runs are not repeated"
    )


def test_reproduce_json_has_one_row_per_scheme_loss_and_scenario(tmp_path, monkeypatch):
    small = honc2012.Settings(300.0, (1,), (0.0, 0.2), (0.2,), (0.1,), multi_losses=(0.35,), fairness_loss=0.0)
    monkeypatch.setattr(honc2012.Settings, "of", classmethod(lambda cls, quick: small))
    result = CliRunner().invoke(app, ["reproduce", "honc2012", "--quick", "--out", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["rows"]
    schemes = ("tcp", "bbr", "tcpnc-e2e", "tcpnc-hbh", "honc")
    assert {(r["scheme"], r["scenario"], r["loss"]) for r in rows} == (
        {(s, "single", p) for s in schemes for p in (0.0, 0.2)} | {(s, "multi", 0.35) for s in schemes}
    )
    for r in rows:
        assert r["seeds"] == 1
        assert r["failed"] == 0
        assert set(r) == {
            "scheme",
            "scenario",
            "loss",
            "throughput_bps",
            "delay_mean_s",
            "delay_std_s",
            "seeds",
            "failed",
        }
    multi = {r["scheme"]: r for r in rows if r["scenario"] == "multi"}
    # Section 6.2.1: HONC spreads the red flows over both paths, TCP/NC end to end cannot.
    assert multi["honc"]["throughput_bps"] > 3 * multi["tcpnc-e2e"]["throughput_bps"]
    for name in (
        "honc2012-fig5.png",
        "honc2012-fig5.svg",
        "honc2012-fig6-7.png",
        "honc2012-fig5.csv",
        "honc2012-claims.csv",
        "honc2012-fig8.png",
        "honc2012-fig8.svg",
        "honc2012-fig8.csv",
        "honc2012-fig8c.csv",
        "honc2012-fig8d.csv",
        "honc2012-report.html",
    ):
        assert (tmp_path / name).stat().st_size > 0
    claims = pd.read_csv(tmp_path / "honc2012-claims.csv").set_index("claim")
    multipath = claims.loc["TCP-HONC / TCP/NC end-to-end, multipath throughput"]
    assert multipath.paper == 3.47 and multipath.loss == 0.35 and multipath.measured > 3
    # "Outperforms by 236% and 143%" read as +236% and +143%, the other reading beside it.
    e2e = claims.loc["TCP-HONC / TCP/NC end-to-end, throughput"]
    hbh = claims.loc["TCP-HONC / TCP/NC hop-by-hop, throughput"]
    assert (e2e.paper, e2e.paper_other_reading) == (3.36, 2.36)
    assert (hbh.paper, hbh.paper_other_reading) == (2.43, 1.43)


def test_shipped_scenarios_are_the_papers_settings():
    """ns-2's one-way agents, and loss on the data only, as the paper and the reproduction run them."""
    import tomllib

    from ncmesh.paths import scenario
    from ncmesh.simulate import load

    for name in ("honc-single-path", "honc-multi-path"):
        spec = tomllib.loads(load(scenario(name), overrides={"link_class.wireless.loss": 0.35}).resolved_toml())
        wireless = [link for link in spec["links"] if link.get("class") == "wireless"]
        assert wireless and all(link["loss"] == 0.35 and link["reverse_loss"] == 0.0 for link in wireless), name
        assert all(not flow["tcp"]["handshake"] for flow in spec["flows"]), name


def test_fig8_fairness_run_shares_the_bottleneck(tmp_path):
    """Section 6.2.2: flows 1-4 alone, then with flows 5-8 sharing hop (3, 5)."""
    from ncmesh import results
    from ncmesh.sweep import run_sweep

    settings = honc2012.Settings(300.0, (1,), (), (), (), fairness_loss=0.0)
    (sweep,) = honc2012.multi_sweeps(settings)
    run_sweep(sweep, tmp_path / "store.sqlite", jobs=1)
    flows, queue = honc2012.fairness_series(results.load(tmp_path / "store.sqlite"))
    assert sorted(flows.flow.unique()) == list(range(1, 9))
    both = flows[(flows.time_s >= 300) & (flows.time_s < 780)].groupby("flow").throughput_bps.mean()
    alone = flows[(flows.time_s >= 40) & (flows.time_s < 200) & (flows.flow <= 4)].groupby("flow").throughput_bps.mean()
    # Near the fair shares (0.375 and 0.5 Mbit/s), and even among flows.
    assert both.min() > 0.7 * 0.375e6 and both.max() < 1.2 * 0.375e6, both
    assert alone.min() > 0.7 * 0.5e6, alone
    assert both.min() > 0.8 * both.max()
    # Node 3's queue: sampled every 2 s, bounded well below the receive windows.
    assert len(queue) == 500 and 0 < queue.packets.max() <= 100


def test_a_reproduction_with_failed_runs_names_them_and_exits_non_zero(tmp_path, monkeypatch):
    from ncmesh import sweep

    small = honc2012.Settings(200.0, (1, 2), (0.1,), (0.1,), (0.1,))
    monkeypatch.setattr(honc2012.Settings, "of", classmethod(lambda cls, quick: small))
    plan = sweep.plan

    def plan_with_a_failure(sw):
        tasks = plan(sw)
        for t in tasks:
            if sw.name == "honc2012-fig5" and t.params.get("coding.scheme") == "tcpnc-hbh" and t.seed == 2:
                t.error = "InjectedError: this run was made to fail"
        return tasks

    monkeypatch.setattr(sweep, "plan", plan_with_a_failure)
    args = ["reproduce", "honc2012", "--quick", "--out", str(tmp_path), "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1, result.output
    out = json.loads(result.stdout)
    (failed,) = out["failed"]
    assert failed["seed"] == 2 and "InjectedError" in failed["error"] and "tcpnc-hbh" in failed["params"]
    assert failed["key"][:12] in result.stderr
    rows = {r["scheme"]: r for r in out["rows"]}
    assert (rows["tcpnc-hbh"]["seeds"], rows["tcpnc-hbh"]["failed"]) == (1, 1)
    assert all((r["seeds"], r["failed"]) == (2, 0) for s, r in rows.items() if s != "tcpnc-hbh")
    table = pd.read_csv(tmp_path / "honc2012-fig5.csv").set_index("scheme")
    assert table.loc["tcpnc-hbh", "failed"] == 1

    allowed = CliRunner().invoke(app, [*args, "--allow-failed"])
    assert allowed.exit_code == 0, allowed.output
    assert len(json.loads(allowed.stdout)["failed"]) == 1, "still listed, and tried again"
