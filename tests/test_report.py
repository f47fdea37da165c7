"""The HTML report: self-contained, with plots that show something, in a real browser."""

import base64
import io
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from ncmesh import sweep
from ncmesh.cli import app

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "honc-single-path.toml"


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("report")
    path = tmp / "sweep.toml"
    path.write_text(
        f'scenario = "{os.path.relpath(SCENARIO, tmp)}"\nseeds = 3\n'
        'metrics = ["throughput_bps", "delay_mean_s", "fairness"]\n'
        '[set]\nduration = "300s"\nprobes.interval = "5s"\n'
        '[axes]\n"link_class.wireless.loss" = [0.0, 0.005, 0.01]\n"tcp.variant" = ["reno", "cubic"]\n'
    )
    db = tmp / "r.sqlite"
    report = sweep.run_sweep(path, db, jobs=1)
    assert report.ok == 18
    return db


def images(html: str) -> list[np.ndarray]:
    found = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    return [np.asarray(Image.open(io.BytesIO(base64.b64decode(b))).convert("L"), dtype=float) for b in found]


def not_blank(pixels: np.ndarray) -> bool:
    """Some ink on the page: enough non-white pixels, and not all of one grey."""
    return pixels.std() > 10 and (pixels < 200).mean() > 0.01


def test_report_is_self_contained_with_a_plot_per_metric_and_the_time_series(store, tmp_path):
    out = tmp_path / "report.html"
    result = CliRunner().invoke(app, ["report", str(store), "--out", str(out)])
    assert result.exit_code == 0, result.output
    html = out.read_text()
    assert not re.search(r'(src|href)="(?!data:)', html), "the page refers to a file"
    pngs = images(html)
    assert len(pngs) == 3 + 1  # one per metric (both axes in it) and the time series
    assert all(not_blank(p) for p in pngs)
    assert "throughput_bps against loss" not in html  # titles are in the images, not lost as text
    assert html.count("<tr>") == 1 + 18
    assert "95% confidence intervals (Student t)" in html


def test_report_plots_a_chosen_run_and_refuses_an_unknown_one(store, tmp_path):
    from ncmesh import results

    key = results.load(store).key.iloc[-1]
    out = tmp_path / "one.html"
    ok = CliRunner().invoke(app, ["report", str(store), "--out", str(out), "--run", key[:10]])
    assert ok.exit_code == 0, ok.output
    assert f"run {key[:12]}" in out.read_text()
    bad = CliRunner().invoke(app, ["report", str(store), "--out", str(out), "--run", "zzzz"])
    assert bad.exit_code != 0 and "matches 0 runs" in bad.output and "Traceback" not in bad.output


def test_report_renders_in_headless_chromium(store, tmp_path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip(
            "chromium is not installed (apt-get install -y chromium); the report is checked without a browser above"
        )
    out = tmp_path / "report.html"
    assert CliRunner().invoke(app, ["report", str(store), "--out", str(out)]).exit_code == 0
    shot = tmp_path / "shot.png"
    subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1200,2000",
            f"--screenshot={shot}",
            out.as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    pixels = np.asarray(Image.open(shot).convert("L"), dtype=float)
    assert pixels.shape == (2000, 1200)
    assert not_blank(pixels)
    # the first plot sits below the heading; its band of the page must hold drawn lines, not white
    assert not_blank(pixels[300:900])
