"""The HTML report: self-contained, statistics that respect each metric, failed runs in plain sight,
and the page working in a real browser."""

import datetime as dt
import hashlib
import io
import json
import math
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ncmesh import report, results, sweep
from ncmesh.cli import app
from ncmesh.stats import COUNT, RATIO, Scale, summarize
from ncmesh.store import METRICS, Store

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "honc-single-path.toml"
SCHEMES = [("none", "newreno"), ("honc", "newreno"), ("tcpnc-e2e", "vegas")]
LOSSES = [0.0, 0.1, 0.2, 0.3]
SEEDS = [1, 2, 3]
FAILED = {"coding.scheme": "honc", "loss": 0.3, "seed": 2, "error": "PanicException: queue index out of range"}


def record(store: Store, sweep_name: str, params: dict, seed: int, build: str = "test+1", **fields) -> str:
    """One run's row, as a sweep would record it, with a tiny time series when it succeeded."""
    key = hashlib.sha256(json.dumps([sweep_name, params, seed, build], sort_keys=True).encode()).hexdigest()
    row = {
        "key": key,
        "sweep": sweep_name,
        "params": params,
        "seed": seed,
        "status": "ok",
        "ncmesh_version": "test",
        "build": build,
        "finished_at": fields.pop("finished_at", dt.datetime.now(dt.UTC).isoformat()),
        **fields,
    }
    if row["status"] == "ok":
        t = np.arange(0.0, 100.0, 5.0)
        series = pd.DataFrame(
            {
                "series": ["goodput_bps"] * len(t) + ["queue_packets"] * len(t),
                "time_s": np.concatenate([t, t]),
                "flow": [1.0] * len(t) + [math.nan] * len(t),
                "from": [math.nan] * len(t) + [3.0] * len(t),
                "to": [math.nan] * len(t) + [5.0] * len(t),
                "value": np.concatenate([1e5 + 1e3 * t, t % 7]),
            }
        )
        store.series_dir.mkdir(exist_ok=True)
        series.to_parquet(store.series_dir / f"{key}.parquet")
        row["series"] = f"{store.series_dir.name}/{key}.parquet"
    store.record(row)
    return key


@pytest.fixture(scope="module")
def skewed(tmp_path_factory) -> Path:
    """Three schemes (scheme and TCP variant zipped) at four losses, three seeds, one run failed.

    Delays and throughputs are log-normal across seeds with a large spread,
    so that a Student t interval on them reaches below zero at some points.
    """
    db = tmp_path_factory.mktemp("skewed") / "skewed.sqlite"
    rng = np.random.default_rng(7)
    with Store(db) as store:
        for (scheme, variant), loss, seed in ((s, p, n) for s in SCHEMES for p in LOSSES for n in SEEDS):
            params = {"coding.scheme": scheme, "tcp.variant": variant, "link_class.wireless.loss": loss}
            if (scheme, loss, seed) == (FAILED["coding.scheme"], FAILED["loss"], FAILED["seed"]):
                record(store, "skewed", params, seed, status="failed", error=FAILED["error"])
                continue
            gain = {"none": 1.0, "honc": 2.0, "tcpnc-e2e": 1.5}[scheme]
            record(
                store,
                "skewed",
                params,
                seed,
                throughput_bps=float(gain * 4e5 * (1 - loss) * rng.lognormal(0, 0.8)),
                delay_mean_s=float((0.5 + 4 * loss) / gain * rng.lognormal(0, 1.3)),
                retransmits=int(rng.poisson(40 * loss)),
                fairness=float(min(1.0, rng.uniform(0.6, 1.05))),
            )
    return db


def page_data(html: str) -> dict:
    found = re.search(r"<script type='application/json' id='report-data'>(.*?)</script>", html, re.S)
    assert found, "the page carries its data"
    return json.loads(found.group(1).replace("<\\/", "</"))


def write_report(db: Path, out: Path, *args: str) -> str:
    result = CliRunner().invoke(app, ["report", str(db), "--out", str(out), *args])
    assert result.exit_code == 0, result.output
    return out.read_text()


def test_every_metric_has_a_scale():
    assert set(report.SCALES) == set(METRICS)


def test_the_page_needs_nothing_beside_it(skewed, tmp_path):
    html = write_report(skewed, tmp_path / "r.html")
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", html), "the page loads a file or URL"
    assert "plotly.js v" in html  # the plotting library is embedded
    assert not re.search(r"<script[^>]*>[^<]{0,200}https?://cdn", html)


def test_zipped_keys_are_one_axis_and_each_point_summarizes_its_own_seeds(skewed, tmp_path):
    data = page_data(write_report(skewed, tmp_path / "r.html"))
    (sw,) = data["sweeps"]
    assert [a["keys"] for a in sw["axes"]] == [["coding.scheme", "tcp.variant"], ["link_class.wireless.loss"]]
    assert [a["numeric"] for a in sw["axes"]] == [False, True]
    assert len(sw["points"]["at"]) == len(SCHEMES) * len(LOSSES)
    table = results.load(skewed)
    runs = data["runs"]
    for i, at in enumerate(sw["points"]["at"]):
        scheme = sw["axes"][0]["raw"][at[0]][0]
        loss = sw["axes"][1]["raw"][at[1]][0]
        here = table[(table["coding.scheme"] == scheme) & (table["link_class.wireless.loss"] == loss)]
        ok = here[here.status == "ok"]
        assert sorted(runs["key"][r] for r in sw["points"]["runs"][i]) == sorted(ok.key)
        assert [runs["key"][r] for r in sw["points"]["failed"][i]] == list(here.key[here.status == "failed"])
        for metric, scale in (("delay_mean_s", RATIO), ("retransmits", COUNT)):
            center, low, high, n, method = sw["points"]["stats"][metric][i]
            expected = summarize(ok[metric].astype(float), scale)
            assert n == expected.n == len(ok)
            assert (center, low, high) == pytest.approx((expected.center, expected.low, expected.high), rel=1e-12)
            assert method == expected.method


def test_no_interval_of_a_positive_metric_goes_below_zero_where_student_t_would(skewed, tmp_path):
    data = page_data(write_report(skewed, tmp_path / "r.html"))
    (sw,) = data["sweeps"]
    table = results.load(skewed)
    ok = table[table.status == "ok"]
    groups = ok.groupby(["coding.scheme", "link_class.wireless.loss"])["delay_mean_s"]
    student_lows = [summarize(g, Scale(log=False, low=-math.inf)).low for _, g in groups]
    assert min(student_lows) < 0, "the data are not skewed enough to test anything"
    for metric in ("throughput_bps", "delay_mean_s"):
        lows = [s[1] for s in sw["points"]["stats"][metric] if s[1] is not None]
        assert len(lows) == len(SCHEMES) * len(LOSSES) and min(lows) > 0
    assert min(s[1] for s in sw["points"]["stats"]["retransmits"] if s[1] is not None) >= 0
    assert max(s[2] for s in sw["points"]["stats"]["fairness"] if s[2] is not None) <= 1


def test_failed_runs_are_named_with_their_error_at_the_top(skewed, tmp_path):
    html = write_report(skewed, tmp_path / "r.html")
    top = html[: html.index("id='report'")]
    assert "1 run failed." in top
    assert FAILED["error"] in top
    key = results.load(skewed).query("status == 'failed'").key.iloc[0]
    assert key[:12] in top and "seed 2" in top
    data = page_data(html)
    marked = [i for i, f in enumerate(data["sweeps"][0]["points"]["failed"]) if f]
    assert len(marked) == 1
    assert data["sweeps"][0]["points"]["stats"]["delay_mean_s"][marked[0]][3] == len(SEEDS) - 1


def test_the_default_baseline_is_plain_tcp_and_can_be_chosen(skewed, tmp_path):
    data = page_data(write_report(skewed, tmp_path / "r.html"))
    axes = data["sweeps"][0]["axes"]
    a, v = data["sweeps"][0]["baseline"]
    assert axes[a]["raw"][v] == ["none", "newreno"]
    chosen = page_data(write_report(skewed, tmp_path / "r.html", "--baseline", "link_class.wireless.loss=0.1"))
    a, v = chosen["sweeps"][0]["baseline"]
    assert chosen["sweeps"][0]["axes"][a]["raw"][v] == [0.1]


@pytest.mark.parametrize(
    ("option", "words"),
    [
        (["--baseline", "tcp.mss=500"], "--baseline tcp.mss=500: tcp.mss is not an axis of any sweep; the axes are"),
        (["--baseline", "coding.scheme=bbr"], "coding.scheme never takes that value; it takes honc, none, tcpnc-e2e"),
        (["--baseline", "coding.scheme"], "expected KEY=VALUE"),
        (["--run", "zzzz"], "--run zzzz: matches 0 runs"),
    ],
)
def test_bad_options_are_one_line_errors(skewed, tmp_path, option, words):
    result = CliRunner().invoke(app, ["report", str(skewed), "--out", str(tmp_path / "r.html"), *option])
    assert result.exit_code == 2
    assert words in " ".join(result.output.split()) and "Traceback" not in result.output
    assert not (tmp_path / "r.html").exists()


def test_a_missing_or_foreign_store_is_refused(tmp_path):
    missing = CliRunner().invoke(app, ["report", str(tmp_path / "none.sqlite"), "--out", str(tmp_path / "r.html")])
    assert missing.exit_code == 2 and "no such results store" in missing.output
    foreign = tmp_path / "notes.sqlite"
    foreign.write_text("these are notes, not a database\n" * 40)
    result = CliRunner().invoke(app, ["report", str(foreign), "--out", str(tmp_path / "r.html")])
    assert result.exit_code == 2 and "not a results store" in result.output and "Traceback" not in result.output


def test_a_later_run_of_the_same_point_and_seed_replaces_the_earlier(tmp_path):
    db = tmp_path / "again.sqlite"
    params = {"link_class.wireless.loss": 0.1}
    with Store(db) as store:
        old = record(store, "s", params, 1, build="a", finished_at="2024-01-01T00:00:00", throughput_bps=1.0)
        new = record(store, "s", params, 1, build="b", finished_at="2024-06-01T00:00:00", throughput_bps=9.0)
        record(store, "s", {"link_class.wireless.loss": 0.2}, 1, build="b", throughput_bps=5.0)
        record(store, "s", params, 2, build="b", status="null")
    data = page_data(write_report(db, tmp_path / "r.html"))
    (sw,) = data["sweeps"]
    runs = data["runs"]
    assert sw["superseded"] == 1
    first = sw["points"]["runs"][0]
    assert [runs["key"][r] for r in first] == [new]
    assert runs["point"][runs["key"].index(old)] is None
    assert sw["points"]["stats"]["throughput_bps"][0][:4] == [9.0, None, None, 1]


# ---------------------------------------------------------------- a real sweep


@pytest.fixture(scope="module")
def simulated(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("report")
    path = tmp / "sweep.toml"
    path.write_text(
        f'scenario = "{os.path.relpath(SCENARIO, tmp)}"\nseeds = 2\n'
        'metrics = ["throughput_bps", "delay_mean_s", "fairness"]\n'
        '[set]\nduration = "200s"\nprobes.interval = "5s"\n'
        '[axes]\n"link_class.wireless.loss" = [0.0, 0.01]\n"tcp.variant" = ["reno", "cubic"]\n'
    )
    db = tmp / "r.sqlite"
    assert sweep.run_sweep(path, db, jobs=1).ok == 8
    return db


def test_a_simulated_sweep_gives_every_metric_it_kept_and_each_runs_time_series(simulated, tmp_path):
    data = page_data(write_report(simulated, tmp_path / "r.html"))
    (sw,) = data["sweeps"]
    assert sw["metrics"] == ["throughput_bps", "delay_mean_s", "fairness"]
    assert sw["baseline"] is None  # no coding scheme among the axes
    series = [s for s in data["runs"]["series"] if s]
    assert len(series) == 8
    kinds = {line["kind"] for line in series[0]["lines"]}
    assert kinds == {"goodput_bps", "queue_packets"}
    goodput = next(line for line in series[0]["lines"] if line["kind"] == "goodput_bps")
    assert series[0]["t"] == [5.0 * i for i in range(40)]  # every line sampled at the same instants
    assert len(goodput["v"]) == 40 and max(goodput["v"]) > 0


def test_time_series_are_averaged_down_to_fit_the_budget(skewed, monkeypatch):
    monkeypatch.setattr(report, "SERIES_BUDGET_BYTES", 12_000)
    series = report.payload(results.load(skewed))["runs"]["series"]
    assert len(json.dumps(series, separators=(",", ":"))) <= 12_000
    kept = next(s for s in series if s)
    queue = next(line for line in kept["lines"] if line["kind"] == "queue_packets")
    assert 1 < len(kept["t"]) == len(queue["v"]) < 20  # recorded every 5 s for 100 s
    # means of consecutive samples keep about the line's mean (buckets may differ by one sample)
    assert np.mean(queue["v"]) == pytest.approx(np.mean(np.arange(0.0, 100.0, 5.0) % 7), rel=0.1)


def test_a_chosen_run_opens_the_page(simulated, tmp_path):
    key = results.load(simulated).key.iloc[-1]
    data = page_data(write_report(simulated, tmp_path / "r.html", "--run", key[:10]))
    assert data["runs"]["key"][data["selected"]] == key


# ---------------------------------------------------------------- in a browser


def browser_or_skip() -> str:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("no chromium on this machine (make test installs Debian's); the page's data are tested above")
    pytest.importorskip("playwright.sync_api", reason="playwright drives the browser (make test installs it)")
    return browser


@pytest.fixture(scope="module")
def page(skewed, tmp_path_factory):
    browser = browser_or_skip()
    from playwright.sync_api import sync_playwright

    out = tmp_path_factory.mktemp("page") / "report.html"
    write_report(skewed, out)
    errors: list[str] = []
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=browser)
        tab = chromium.new_page(viewport={"width": 1280, "height": 1000})
        tab.on("pageerror", lambda e: errors.append(str(e)))
        tab.goto(out.as_uri())
        tab.wait_for_selector("body[data-ready=yes]", state="attached", timeout=30_000)
        tab.errors = errors
        yield tab
        chromium.close()


MAIN = "#sweep-0 .plot.main"


def plotted(page, selector: str = MAIN) -> list[dict]:
    return page.evaluate(
        f"""() => document.querySelector({json.dumps(selector)}).data.map(t => ({{
            name: t.name, x: t.x, y: t.y, minus: t.error_y.arrayminus, plus: t.error_y.array}}))"""
    )


def test_the_plots_are_drawn(page):
    from PIL import Image

    assert page.errors == []
    points = page.locator(f"{MAIN} .scatterlayer path.point")
    assert points.count() == len(SCHEMES) * len(LOSSES)
    shot = Image.open(io.BytesIO(page.locator(MAIN).screenshot())).convert("L")
    pixels = np.asarray(shot, dtype=float)
    assert pixels.std() > 10 and (pixels < 200).mean() > 0.01, "the plot is blank"
    assert page.locator("#sweep-0 .plot.cdf .scatterlayer .trace").count() == len(SCHEMES) - 1
    assert page.locator("#sweep-0 .series .scatterlayer .trace").count() == 2  # goodput and a queue


def test_hovering_a_point_shows_its_parameters_seeds_and_run_keys(page, skewed):
    table = results.load(skewed)
    for n in (0, 5):
        # Plotly listens for the mouse on a layer above its points: move there, as a person would.
        box = page.locator(f"{MAIN} .scatterlayer path.point").nth(n).bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        label = page.locator(f"{MAIN} .hoverlayer .hovertext")
        label.wait_for(timeout=5_000)
        text = label.text_content()
        scheme = re.search(r"coding\.scheme / tcp\.variant=(\S+) /", text).group(1)
        loss = float(re.search(r"link_class\.wireless\.loss=([0-9.]+)", text).group(1))
        here = table[(table["coding.scheme"] == scheme) & (table["link_class.wireless.loss"] == loss)]
        ok = here[here.status == "ok"]
        assert f"{len(ok)} seeds; runs: " in text
        assert all(key[:12] in text for key in ok.key)
        assert ("failed" in text) == (len(here) > len(ok))
        page.mouse.move(0, 0)


def test_the_metric_selector_changes_the_plot(page):
    before = plotted(page)
    title = page.locator(f"{MAIN} .gtitle").text_content()
    page.select_option("#sweep-0 select[data-control=metric]", "delay_mean_s")
    page.wait_for_function(f"document.querySelector('{MAIN} .gtitle').textContent.startsWith('delay_mean_s')")
    after = plotted(page)
    assert title.startswith("throughput_bps") and [t["y"] for t in after] != [t["y"] for t in before]
    page.select_option("#sweep-0 select[data-control=metric]", "throughput_bps")


def test_numeric_axes_are_lines_and_categorical_ones_grouped_points(page):
    layout = "document.querySelector('#sweep-0 .plot.main').layout"
    modes = "[...new Set(document.querySelector('#sweep-0 .plot.main').data.map(t => t.mode))]"
    assert page.evaluate(f"{layout}.xaxis.type") == "linear" and page.evaluate(modes) == ["lines+markers"]
    page.select_option("#sweep-0 select[data-control=x]", "0")  # the scheme / variant axis
    assert page.evaluate(f"{layout}.xaxis.type") == "category" and page.evaluate(modes) == ["markers"]
    assert page.evaluate(f"{layout}.scattermode") == "group"
    assert len(plotted(page)) == len(LOSSES)  # one trace per loss, the schemes side by side
    page.select_option("#sweep-0 select[data-control=filter-1]", "2")  # loss 0.2 alone
    assert [t["x"] for t in plotted(page)] == [["honc / newreno", "none / newreno", "tcpnc-e2e / vegas"]]
    page.select_option("#sweep-0 select[data-control=filter-1]", "-1")
    page.select_option("#sweep-0 select[data-control=x]", "1")


def test_intervals_of_positive_metrics_stay_above_zero_in_the_plots(page):
    for metric in ("throughput_bps", "delay_mean_s"):
        page.select_option("#sweep-0 select[data-control=metric]", metric)
        for selector in (MAIN, "#sweep-0 .plot.gain"):
            for trace in plotted(page, selector):
                for y, minus in zip(trace["y"], trace["minus"], strict=True):
                    if y is not None and not math.isnan(minus):  # NaN: one seed, no interval
                        assert y - minus > 0, (metric, selector, trace["name"])
    page.select_option("#sweep-0 select[data-control=metric]", "throughput_bps")


def test_gains_are_paired_by_seed_as_the_statistics_module_computes_them(page, skewed):
    page.select_option("#sweep-0 select[data-control=metric]", "delay_mean_s")
    rows = page.locator("#sweep-0 [data-table=gains] tbody tr")
    assert rows.count() == (len(SCHEMES) - 1) * len(LOSSES)
    table = results.load(skewed)
    ok = table[table.status == "ok"].set_index(["coding.scheme", "link_class.wireless.loss", "seed"])
    for n in range(rows.count()):
        cells = rows.nth(n).locator("td").all_text_contents()
        scheme, loss, paired, seeds, ratio, low, high = cells[0].split(" / ")[0], float(cells[1]), *cells[2:7]
        ratios = [
            ok.delay_mean_s[(scheme, loss, s)] / ok.delay_mean_s[("none", loss, s)]
            for s in SEEDS
            if (scheme, loss, s) in ok.index
        ]
        expected = summarize(ratios, RATIO)
        assert int(paired) == expected.n == len(ratios) and int(seeds) == len(ratios)
        assert [float(ratio), float(low), float(high)] == pytest.approx(
            [expected.center, expected.low, expected.high], rel=1e-3
        )
    page.select_option("#sweep-0 select[data-control=metric]", "throughput_bps")


def test_a_point_lists_its_runs_and_a_run_shows_its_time_series(page):
    page.locator("#sweep-0 [data-table=points] tbody tr").nth(3).click()
    runs = page.locator("#sweep-0 [data-table=runs-at-point] tbody tr")
    assert runs.count() == len(SEEDS)
    key = runs.nth(2).locator("td").first.text_content()
    runs.nth(2).click()
    page.wait_for_function(
        f"document.querySelector('#sweep-0 .series .gtitle').textContent.includes('{key[:12]}')", timeout=5_000
    )
