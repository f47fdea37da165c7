"""Seed 004's reproduction (docs/protocols/tcpforward.md) on short runs."""

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from ncmesh import results
from ncmesh.cli import app
from ncmesh.experiments import tcpforward
from ncmesh.sweep import run_sweep

SMALL = tcpforward.Settings(
    120.0,
    (1,),
    (0.0, 0.5),
    (4, 16),
    open_losses=(),
    bench_windows=(2, 8),
    bench_repeats=1,
)


def _run(settings, out):
    for sw in tcpforward.sweeps(settings):
        run_sweep(sw, out / "store.sqlite", jobs=2)
    return results.load(out / "store.sqlite")


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    out = tmp_path_factory.mktemp("tcpforward")
    runs = _run(SMALL, out)
    return runs, *tcpforward.tables(runs, SMALL)


def test_hop_loss_makes_the_end_to_end_loss():
    for p in (0.0, 0.1, 0.5, 0.9):
        q = tcpforward.hop_loss(p)
        assert (1 - q) ** 2 == pytest.approx(1 - p, abs=1e-6)
        assert tcpforward.path_loss(q) == pytest.approx(p, abs=1e-3)


def test_fig7_has_every_scheme_at_every_loss_and_coding_masks_the_loss(small):
    _, fig7, _, _ = small
    wired = fig7[fig7.medium == tcpforward.POINT_TO_POINT]
    assert set(zip(wired.scheme, wired.loss, strict=True)) == {
        (s, p) for s in [*tcpforward.SCHEMES, tcpforward.KNOWN_LOSS] for p in SMALL.losses
    }
    at = wired.set_index(["scheme", "loss"]).throughput_bps
    # At p = 0.5 end to end, plain Reno starves; both coded transports keep going.
    assert at["tcp-forward", 0.5] > 10 * at["reno", 0.5]
    assert at["tcpnc-e2e", 0.5] > 10 * at["reno", 0.5]
    # Lossless, nothing beats plain TCP, which sends no redundancy.
    assert at["reno", 0.0] > at["tcp-forward", 0.0]


def test_fig7_on_802_11_has_every_scheme_and_no_scheme_stalls(small):
    _, fig7, _, _ = small
    wifi = fig7[fig7.medium == tcpforward.WIFI]
    assert set(zip(wifi.scheme, wifi.loss, strict=True)) == {(s, p) for s in tcpforward.SCHEMES for p in SMALL.losses}
    at = wifi.set_index(["scheme", "loss"]).throughput_bps
    # The MAC's retries hide most of the loss from TCP; every scheme keeps
    # a fair share of the channel's 2 Mbit/s, shared by two hops and their
    # ACKs (a stalled channel or a collapse of retransmission rounds would
    # leave a few kbit/s).
    assert (wifi.throughput_bps > 100e3).all(), at.to_dict()
    assert at["reno", 0.0] > at["tcp-forward", 0.0]


def test_fig8_and_fig10_measure_what_they_say(small):
    _, _, fig8, _ = small
    forward = fig8[fig8.scheme == "tcp-forward"].set_index("window")
    assert set(forward.index) == set(SMALL.windows) == set(fig8[fig8.scheme == "tcpnc-e2e"].window)
    # A window's first segment is decoded no sooner than one way across two
    # 100 ms hops from its first encoding, and before the whole window.
    assert (forward.window_first_s > 0.2).all()
    assert (forward.window_all_s > forward.window_first_s).all()
    # TCP/NC is not TCP-Forward: it counts no windows.
    assert fig8[fig8.scheme == "tcpnc-e2e"].window_first_s.isna().all()


def test_the_decoding_benchmark_counts_the_symbols_each_code_needs():
    cost = tcpforward.decode_cost((2, 8), repeats=1)
    at = cost.set_index(["code", "until", "window"])
    for n in (2, 8):
        # TCP-Forward sends a degree-one symbol first: it decodes at once.
        assert at.loc[("lt", "first", n), "symbols"] == 1
        assert at.loc[("lt", "complete", n), "symbols"] >= n
        assert at.loc[("rlnc-gf256", "complete", n), "symbols"] == n
    assert (cost.seconds > 0).all()


def test_an_interrupted_reproduction_resumes_without_rerunning(tmp_path):
    tiny = tcpforward.Settings(60.0, (1,), (0.2,), (8,), open_losses=())
    first = _run(tiny, tmp_path)
    again = _run(tiny, tmp_path)
    assert len(first) == len(again)
    assert list(first.finished_at) == list(again.finished_at), "finished runs are not repeated"
    assert first.counters.notna().all(), "every run keeps its counters"
    assert (results.counters(first)["segments_decoded"] > 0).any()


def test_reproduce_prints_json_rows_and_a_fig7_table_per_medium(tmp_path, monkeypatch):
    monkeypatch.setattr(tcpforward.Settings, "of", classmethod(lambda cls, quick: SMALL))
    result = CliRunner().invoke(app, ["reproduce", "tcpforward", "--quick", "--out", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    rows = out["rows"]
    assert out["failed"] == []
    assert {r["figure"] for r in rows} == {"7", "7 (802.11b)", "8", "9", "10"}
    for r in rows:
        assert set(r) == {"figure", "scheme", "parameter", "value", "metric", "mean", "seeds"}
        assert r["seeds"] == 1
    fig7 = [r for r in rows if r["figure"] == "7"]
    assert {(r["scheme"], r["value"]) for r in fig7} == {
        (s, p) for s in [*tcpforward.SCHEMES, tcpforward.KNOWN_LOSS] for p in SMALL.losses
    }
    assert {r["scheme"].split(" ")[0] for r in rows if r["figure"] == "9"} == {"lt", "lt-elimination", "rlnc-gf256"}
    claims = pd.read_csv(tmp_path / "tcpforward-claims.csv")
    assert claims.holds.dtype == bool and len(claims) >= 6
    # The same store again, as tables: one Fig. 7 per medium.
    shown = CliRunner().invoke(app, ["reproduce", "tcpforward", "--quick", "--out", str(tmp_path)])
    assert shown.exit_code == 0, shown.output
    assert "point-to-point" in shown.stdout and "802.11b" in shown.stdout
    for name in ("tcpforward-figs.png", "tcpforward-figs.svg", "tcpforward-fig7.csv", "tcpforward-decode-cost.csv"):
        assert (tmp_path / name).stat().st_size > 0, name
