"""How the report of a large sweep opens: its size, the time to write it, and Chromium's time to show it.

Run as ``python -m ncmesh.bench_report DB``. It writes the report of the
store, then opens it ``--repeat`` times, each in a new headless Chromium,
and reads the page's own clock: milliseconds from the start of navigation
to every plot drawn (``window.reportReadyAt``). It prints the median, and
the median for a page of plotly.js alone, opened in turn with it, since
the machines it runs on are shared and their load varies. It
needs Chromium (Debian's ``chromium``) and playwright (the ``test`` extra);
``make bench-report`` runs the 1000-run sweep of sweeps/report-1000.toml and
then this.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from . import report


def measure(db: Path, out: Path, repeat: int) -> dict[str, Any]:
    started = time.perf_counter()
    report.write(db, out)
    written_s = time.perf_counter() - started
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        raise SystemExit("bench_report: no chromium on this machine (apt-get install chromium)")
    from playwright.sync_api import sync_playwright
    from plotly.offline import get_plotlyjs

    # The same script alone, opened in turn with the report: what the library costs on this machine now.
    alone = out.with_name(out.stem + "-plotly-alone.html")
    alone.write_text(
        f"<!doctype html><html><body><script>{get_plotlyjs()}</script><script>{READY}</script></body></html>"
    )
    opened: dict[Path, list[float]] = {out: [], alone: []}
    with sync_playwright() as p:
        for _ in range(repeat):
            for page_file, times in opened.items():
                chromium = p.chromium.launch(executable_path=browser)
                page = chromium.new_page(viewport={"width": 1280, "height": 1000})
                page.goto(page_file.resolve().as_uri(), timeout=120_000)
                page.wait_for_selector("body[data-ready=yes]", state="attached", timeout=120_000)
                times.append(page.evaluate("window.reportReadyAt") / 1e3)
                if page_file == out:
                    runs, points = page.evaluate(COUNT)
                version = chromium.version
                chromium.close()
    alone.unlink()
    return {
        "runs": runs,
        "points": points,
        "size_bytes": out.stat().st_size,
        "written_s": written_s,
        "open_s": statistics.median(opened[out]),
        "open_s_all": opened[out],
        "plotly_alone_s": statistics.median(opened[alone]),
        "chromium": version,
    }


READY = "window.reportReadyAt = performance.now(); document.body.dataset.ready = 'yes';"

COUNT = """() => {
    const data = JSON.parse(document.getElementById("report-data").textContent);
    return [data.runs.key.length, data.sweeps.reduce((n, s) => n + s.points.at.length, 0)];
}"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ncmesh.bench_report", description=__doc__.split("\n")[0])
    parser.add_argument("db", type=Path, help="results store")
    parser.add_argument("--out", type=Path, default=Path("report.html"), help="where to write the report")
    parser.add_argument("--repeat", type=int, default=3, help="openings; the median is reported (default 3)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    row = measure(args.db, args.out, args.repeat)
    if args.json:
        print(json.dumps(row))
    else:
        print(
            f"{row['runs']} runs, {row['points']} points: {row['size_bytes'] / 1e6:.2f} MB, written in "
            f"{row['written_s']:.1f} s; Chromium {row['chromium']} draws every plot {row['open_s']:.2f} s after "
            f"navigation starts (median of {args.repeat}: {', '.join(f'{s:.2f}' for s in row['open_s_all'])}); "
            f"a page with plotly.js alone is ready after {row['plotly_alone_s']:.2f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
