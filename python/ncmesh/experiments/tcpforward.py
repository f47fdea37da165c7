"""Seed 004 (Chi and Agrawal): TCP-Forward against TCP/NC end to end and
TCP Reno on the simulated 3-node tandem.

- Fig. 7: throughput against the end-to-end loss p, 0 to 0.9, on
  point-to-point hops, and again with both hops on one 802.11b channel;
- Fig. 8: end-to-end latency (first transmission to in-order delivery)
  against the coding window, TCP-Forward's N against TCP/NC's window;
- Fig. 10 in simulated time: per window, from its first symbol's encoding
  to the first segment it lacked being decoded, and to all of them;
- Figs. 9-11 in wall-clock time: the receiver's decoding work per window,
  LT peeling against RLNC Gaussian elimination (a benchmark of this
  machine's codecs, not of the simulation);
- the values the paper leaves open, each swept alone around the defaults.

``ncmesh reproduce tcpforward [--quick]`` runs it; docs/protocols/tcpforward.md
shows the result beside the paper's claims.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import results
from ..files import write_atomically
from ..paths import scenario
from ..sweep import Axis, Sweep, plan
from . import failed_runs, run_into, runs_in

SCENARIO = "tcpforward-tandem"
# The same tandem on one 802.11b channel; the frame error rate of each hop,
# data direction only, is the hop loss of the point-to-point tandem.
WIFI_SCENARIO = "tcpforward-tandem-wifi"
WIFI_LOSS_KEYS = ("wifi.fer.0.1", "wifi.fer.1.2")
POINT_TO_POINT, WIFI = "point-to-point", "802.11b"
HOPS = 2
MSS = 1000
# A coded segment: its length (2), TCP header with timestamps (32), data.
SYMBOL_BYTES = 2 + 32 + MSS
LOSS_KEY = "link_class.hop.loss"
SCHEME_KEYS = ("coding.scheme", "tcp.variant")
# The paper's baseline is TCP Reno; TCP/NC runs over Vegas, as Sundararajan
# et al. simulated it and as TCP-Forward does.
SCHEMES: dict[str, tuple[str, str]] = {
    "tcp-forward": ("tcp-forward", "vegas"),
    "tcpnc-e2e": ("tcpnc-e2e", "vegas"),
    "reno": ("none", "reno"),
}
# TCP-Forward with R set from the path's configured loss, as TCP/NC's
# automatic redundancy is, instead of adapted from its own timeouts.
KNOWN_LOSS = "tcp-forward, R from p"
KNOWN_LOSS_MARGIN = 1.5
METRICS = ["throughput_bps", "delay_mean_s", "delay_p95_s", "timeouts"]
NAMES = {
    "tcp-forward": "TCP-Forward",
    KNOWN_LOSS: "TCP-Forward, R = 1.5/(1-p)",
    "tcpnc-e2e": "TCP/NC end-to-end",
    "reno": "TCP Reno",
}

# The open values, each swept alone around the defaults (docs/protocols/tcpforward.md).
OPEN_VALUES: dict[str, list[Any]] = {
    "coding.tcpforward.window": [4, 8, 16, 32],
    "coding.tcpforward.c": [0.02, 0.05, 0.1, 0.3],
    "coding.tcpforward.delta": [0.05, 0.5, 0.9],
    "coding.tcpforward.min_redundancy": [1.1, 1.2, 1.5, 2.0],
    "coding.tcpforward.timeout": [0.3, 0.5, 0.6, 0.75, 0.9],
    "coding.tcpforward.trigger": ["window", "segment"],
    "coding.tcpforward.budget": ["slide", "window"],
    "coding.tcpforward.rtt": ["symbol", "segment"],
    "coding.tcpforward.fallback": [False, True],
    "coding.tcpforward.code": ["lt", "random"],
    "coding.tcpforward.fill": [0.0, 0.25, 1.0],
    "tcp.timestamps": [True, False],
}
# Fig. 8 gives windows their N segments: with `fill = 0` a window starts
# with what the buffer holds, and the credits keep that short whatever N is.
FIG8_FILL = 0.25


def hop_loss(p: float) -> float:
    """The loss of each hop that makes `p` end to end."""
    return round(1.0 - float((1.0 - p) ** (1.0 / HOPS)), 6)


def path_loss(q: float) -> float:
    return round(1.0 - (1.0 - q) ** HOPS, 3)


@dataclass(frozen=True)
class Settings:
    duration_s: float
    seeds: tuple[int, ...]
    losses: tuple[float, ...]
    windows: tuple[int, ...]
    # Fig. 8's end-to-end loss.
    latency_loss: float = 0.2
    # The end-to-end losses of the open-value sweeps; none skips them.
    open_losses: tuple[float, ...] = ()
    # Wall-clock benchmark: windows in segments of MSS bytes, and timed repetitions.
    bench_windows: tuple[int, ...] = (2, 4, 8, 16, 32, 64)
    bench_repeats: int = 20

    @classmethod
    def of(cls, quick: bool) -> Settings:
        if quick:
            return cls(
                300.0,
                (1,),
                (0.0, 0.1, 0.3, 0.5, 0.7, 0.9),
                (4, 8, 16, 32),
                open_losses=(0.2,),
                bench_repeats=5,
            )
        return cls(
            1000.0,
            (1, 2, 3, 4, 5),
            tuple(round(0.1 * i, 1) for i in range(10)),
            (2, 4, 8, 16, 32, 64),
            open_losses=(0.2, 0.5),
        )


def _sweep(name: str, s: Settings, axes: list[Axis], fixed: dict[str, Any] | None = None, on: str = SCENARIO) -> Sweep:
    return Sweep(
        path=Path(f"<{name}>"),
        name=name,
        scenario=scenario(on),
        seeds=list(s.seeds),
        metrics=METRICS,
        fixed={"duration": s.duration_s, **(fixed or {})},
        axes=axes,
    )


def sweeps(s: Settings) -> list[Sweep]:
    """Fig. 7 (with TCP-Forward at R from p beside it), Fig. 8 for each
    scheme, and the open values."""
    fig7 = _sweep(
        "tcpforward-fig7",
        s,
        [
            Axis(SCHEME_KEYS, list(SCHEMES.values()), 0),
            Axis((LOSS_KEY,), [(hop_loss(p),) for p in s.losses], 0),
        ],
    )
    fig7_wifi = _sweep(
        "tcpforward-fig7-wifi",
        s,
        [
            Axis(SCHEME_KEYS, list(SCHEMES.values()), 0),
            Axis(WIFI_LOSS_KEYS, [(hop_loss(p),) * len(WIFI_LOSS_KEYS) for p in s.losses], 0),
        ],
        on=WIFI_SCENARIO,
    )
    known = _sweep(
        "tcpforward-fig7-known-loss",
        s,
        [
            Axis(
                (LOSS_KEY, "coding.tcpforward.min_redundancy", "coding.tcpforward.max_redundancy"),
                [(hop_loss(p), _known_r(p), max(_known_r(p), 20.0)) for p in s.losses],
                0,
            )
        ],
        {"coding.scheme": "tcp-forward", "tcp.variant": "vegas"},
    )
    latency = {LOSS_KEY: hop_loss(s.latency_loss)}
    fig8_forward = _sweep(
        "tcpforward-fig8",
        s,
        [Axis(("coding.tcpforward.window",), [(n,) for n in s.windows], 0)],
        {**latency, "coding.scheme": "tcp-forward", "tcp.variant": "vegas", "coding.tcpforward.fill": FIG8_FILL},
    )
    # TCP/NC codes over TCP's whole window: the receive window caps it at N.
    fig8_tcpnc = _sweep(
        "tcpforward-fig8-tcpnc",
        s,
        [Axis(("tcp.rcv_window",), [(n,) for n in s.windows], 0)],
        {**latency, "coding.scheme": "tcpnc-e2e", "tcp.variant": "vegas"},
    )
    out = [fig7, fig7_wifi, known, fig8_forward, fig8_tcpnc]
    for p in s.open_losses:
        for key, values in OPEN_VALUES.items():
            out.append(
                _sweep(
                    f"tcpforward-open-{key.rsplit('.', 1)[-1]}-{p}",
                    s,
                    [Axis((key,), [(v,) for v in values], 0)],
                    {LOSS_KEY: hop_loss(p)},
                )
            )
    return out


def _known_r(p: float) -> float:
    return round(KNOWN_LOSS_MARGIN / (1.0 - p), 4)


def _scheme(coding: str) -> str:
    return "reno" if coding == "none" else coding


def _mean_over_seeds(rows: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    counters = results.counters(rows)
    rows = pd.concat([rows.drop(columns=[c for c in counters.columns if c in rows.columns]), counters], axis=1)
    rows = rows.assign(
        redundancy=_redundancy(counters),
        late_share=_ratio(counters, "coding_timeouts", "segments_coded"),
        retransmission_share=_ratio(counters, "retransmission_symbols", "symbols_sent", add=True),
        decode_s=_ratio(counters, "segment_decode_ns", "segments_decode_timed") / 1e9,
        window_first_s=_ratio(counters, "window_first_ns", "windows_timed") / 1e9,
        window_all_s=_ratio(counters, "window_all_ns", "windows_timed") / 1e9,
    )
    values = [
        *METRICS,
        "redundancy",
        "late_share",
        "retransmission_share",
        "decode_s",
        "window_first_s",
        "window_all_s",
    ]
    table = rows.groupby(by, as_index=False)[values].mean()
    stats = rows.groupby(by)["throughput_bps"].agg(["std", "size"]).reset_index(drop=True)
    table["throughput_sd"] = stats["std"].to_numpy()
    table["seeds"] = stats["size"].to_numpy()
    return table


def _ratio(counters: pd.DataFrame, num: str, den: str, add: bool = False) -> pd.Series:
    """num / den per run (num / (num + den) with `add`); NaN where not counted."""
    n = counters.get(num, pd.Series(0, index=counters.index)).astype(float)
    d = counters.get(den, pd.Series(0, index=counters.index)).astype(float)
    d = d + n if add else d
    return (n / d.where(d > 0)).astype(float)


def _redundancy(counters: pd.DataFrame) -> pd.Series:
    """TCP-Forward's R at the end of each run, from N_segments and N_timeout
    (before its bounds, which the tables do not know per run)."""
    n = counters.get("segments_coded", pd.Series(0, index=counters.index)).astype(float)
    t = counters.get("coding_timeouts", pd.Series(0, index=counters.index)).astype(float)
    return (n / (n - t).where(n - t > 0)).where(n > 0)


def _rows(runs: pd.DataFrame, sweep: Sweep) -> pd.DataFrame:
    """The finished runs of `sweep`, with its axis values as columns. Sweeps
    that reach the same scenario share a run, recorded under the first, so
    runs are found by key."""
    tasks = {t.key: t for t in plan(sweep)}
    rows = runs[runs.key.isin(list(tasks)) & (runs.status == "ok")].copy()
    for key in sweep.keys:
        rows[key] = [tasks[k].params[key] for k in rows.key]
    return rows


def _in_order(values: list[str]) -> Callable[[pd.Series], pd.Series]:
    """A sort key that puts a column's values in the order of `values`."""
    return lambda column: column.map(values.index)


def tables(runs: pd.DataFrame, s: Settings) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Fig. 7, Fig. 8 and the open values, means over seeds."""
    by_name = {sw.name: sw for sw in sweeps(s)}

    def rows(name: str) -> pd.DataFrame:
        return _rows(runs, by_name[name])

    wired = rows("tcpforward-fig7")
    wired["scheme"] = wired["coding.scheme"].map(_scheme)
    known = rows("tcpforward-fig7-known-loss").assign(scheme=KNOWN_LOSS)
    wired = pd.concat([wired, known], ignore_index=True)
    wired = wired.assign(medium=POINT_TO_POINT, loss=wired[LOSS_KEY].map(path_loss))
    wifi = rows("tcpforward-fig7-wifi")
    wifi = wifi.assign(
        medium=WIFI, scheme=wifi["coding.scheme"].map(_scheme), loss=wifi[WIFI_LOSS_KEYS[0]].map(path_loss)
    )
    order = {k: i for i, k in enumerate([POINT_TO_POINT, WIFI, *SCHEMES, KNOWN_LOSS])}
    fig7 = _mean_over_seeds(pd.concat([wired, wifi], ignore_index=True), ["medium", "scheme", "loss"])
    fig7 = fig7.sort_values(["medium", "scheme", "loss"], key=lambda c: c if c.name == "loss" else c.map(order))

    forward = rows("tcpforward-fig8").rename(columns={"coding.tcpforward.window": "window"})
    tcpnc = rows("tcpforward-fig8-tcpnc").rename(columns={"tcp.rcv_window": "window"})
    fig8 = pd.concat([forward.assign(scheme="tcp-forward"), tcpnc.assign(scheme="tcpnc-e2e")], ignore_index=True)
    fig8 = _mean_over_seeds(fig8, ["scheme", "window"])
    fig8["window_bytes"] = fig8["window"] * MSS

    parts = []
    for name, sw in by_name.items():
        if not name.startswith("tcpforward-open-"):
            continue
        (key,) = sw.keys
        part = rows(name)
        part = part.assign(parameter=key, value=part[key].astype(str), loss=path_loss(sw.fixed[LOSS_KEY]))
        part = _mean_over_seeds(part, ["parameter", "value", "loss"])
        parts.append(part.sort_values("value", key=_in_order([str(v) for v in OPEN_VALUES[key]])))
    opened = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["parameter", "value", "loss"])
    return fig7.reset_index(drop=True), fig8, opened


# ---------------------------------------------------------------- wall clock


def decode_cost(windows: tuple[int, ...], repeats: int, seed: int = 7) -> pd.DataFrame:
    """The receiver's work per window, in wall-clock seconds on this machine:
    a fresh decoder consuming one window's symbols until its first segment is
    decoded and until all are, for LT peeling (the symbols in the order
    TCP-Forward sends them: a degree-one symbol first), LT with elimination
    when peeling stalls, and RLNC over GF(2^8) (TCP/NC's code). The median
    over `repeats` timed batches, each long enough for the clock.
    """
    rng = np.random.default_rng(seed)
    rows = []
    for n in windows:
        data = rng.integers(0, 256, n * SYMBOL_BYTES, dtype=np.uint8).tobytes()
        for code, until, work in _decoders(n, data, seed):
            rows.append(
                {
                    "code": code,
                    "until": until,
                    "window": n,
                    "window_bytes": n * MSS,
                    "symbols": work(),
                    "seconds": _median_time(work, repeats),
                }
            )
    return pd.DataFrame(rows)


def _decoders(n: int, data: bytes, seed: int) -> list[tuple[str, str, Callable[[], int]]]:
    """One window's decoding work per code, each returning the symbols it consumed."""
    from ..codec import Decoder, Encoder, LtDecoder, LtEncoder, coefficients

    lt = LtEncoder(n, SYMBOL_BYTES, seed)
    lt.set_data(data)
    first = next(e for e in range(1 << 16) if len(lt.neighbours(e)) == 1)
    esis = [first, *(e for e in range(40 * n + 200) if e != first)]
    payloads = b"".join(lt.encode(e) for e in esis)
    rlnc = Encoder(n, SYMBOL_BYTES, 8, False)
    rlnc.set_data(data)
    rows = b"".join(coefficients(s, n) for s in range(n + 8))
    coded = rlnc.encode_batch(rows)

    def lt_run(fallback: bool, until: str) -> Callable[[], int]:
        return lambda: LtDecoder(n, SYMBOL_BYTES, seed, fallback=fallback).consume_batch(esis, payloads, until)

    def rlnc_run() -> int:
        Decoder(n, SYMBOL_BYTES, 8).consume_batch(rows, coded)
        return n

    return [
        ("lt", "first", lt_run(False, "first")),
        ("lt", "complete", lt_run(False, "complete")),
        ("lt-elimination", "complete", lt_run(True, "complete")),
        ("rlnc-gf256", "complete", rlnc_run),
    ]


def decode_cost_on(isa: str | None, windows: tuple[int, ...], repeats: int) -> pd.DataFrame:
    """`decode_cost` with the field kernels capped at instruction set `isa`
    (``NCMESH_GF_ISA``; "scalar" stands in for a core without vector units,
    as the Raspberry Pi's ARM11 of Fig. 11), in a fresh process, since the
    kernels are chosen once per process; `None` runs here, on the best one."""
    import json
    import os
    import subprocess
    import sys

    from ..codec import simd_isa

    if isa is None:
        return decode_cost(windows, repeats).assign(isa=simd_isa())
    code = (
        "import json, sys; from ncmesh.experiments.tcpforward import decode_cost; from ncmesh.codec import simd_isa; "
        f"t = decode_cost({tuple(windows)!r}, {repeats}); t['isa'] = simd_isa(); print(t.to_json(orient='records'))"
    )
    env = {**os.environ, "NCMESH_GF_ISA": isa}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return pd.DataFrame(json.loads(done.stdout))


def _median_time(work: Callable[[], object], repeats: int, batch_s: float = 0.01) -> float:
    work()
    start, calls = time.perf_counter(), 0
    while time.perf_counter() - start < batch_s / 10:
        work()
        calls += 1
    per_batch = max(1, calls * 10)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(per_batch):
            work()
        times.append((time.perf_counter() - start) / per_batch)
    return statistics.median(times)


# ---------------------------------------------------------------- claims


def claims(fig7: pd.DataFrame, fig8: pd.DataFrame, cost: pd.DataFrame) -> pd.DataFrame:
    """Each claim of the paper (and of the issue's reading of it) beside what
    this run measured, and whether it holds here. The claims of Fig. 7 are
    checked on each medium."""
    rows: list[tuple[str, str, bool]] = []
    for medium, table in fig7.groupby("medium", sort=False):
        rows += _fig7_claims(table, "Fig. 7" if medium == POINT_TO_POINT else f"Fig. 7 on {medium}")
    lat = fig8.pivot_table(index="window", columns="scheme", values="delay_mean_s")
    if {"tcp-forward", "tcpnc-e2e"} <= set(lat.columns) and len(lat) > 1:
        gap = lat["tcpnc-e2e"] - lat["tcp-forward"]
        below = int((gap > 0).sum())
        rows.append(
            ("Fig. 8: latency below TCP/NC at every window", f"at {below} of {len(gap)} windows", below == len(gap))
        )
        rows.append(
            (
                "Fig. 8: the gap grows with the window",
                f"{gap.iloc[0]:+.3f} s at {lat.index[0]} to {gap.iloc[-1]:+.3f} s at {lat.index[-1]} segments",
                bool(gap.iloc[-1] > gap.iloc[0] and gap.iloc[-1] > 0),
            )
        )
    forward8 = fig8[fig8.scheme == "tcp-forward"].sort_values("window")
    if len(forward8) > 1:
        first, whole = forward8.window_first_s, forward8.window_all_s
        spread = float(first.max() / first.min())
        rows.append(
            ("Fig. 10: first-segment latency within a factor of 2 across windows", f"{spread:.2f}", spread <= 2.0)
        )
        grows = float(whole.iloc[-1] / whole.iloc[0])
        rows.append(("Fig. 10: whole-window latency grows with the window", f"{grows:.2f}x", grows > 1.0))
    for isa, bench in cost.groupby("isa", sort=False):
        big = bench.window.max()
        at_big = bench[(bench.window == big) & (bench.until == "complete")].set_index("code").seconds
        rlnc_over_lt = float(at_big["rlnc-gf256"] / at_big["lt"])
        rows.append(
            (
                f"Fig. 9: RLNC decoding costs more than LT peeling, {big * MSS} B window, {isa} kernels (wall clock)",
                f"{rlnc_over_lt:.2f}x",
                rlnc_over_lt > 1.0,
            )
        )
    return pd.DataFrame(rows, columns=["claim", "measured", "holds"])


def _fig7_claims(fig7: pd.DataFrame, figure: str) -> list[tuple[str, str, bool]]:
    """Fig. 7's claims on one medium."""
    at = fig7.pivot_table(index="loss", columns="scheme", values="throughput_bps")
    lossy = at[at.index >= 0.1]
    rows = []
    if {"tcp-forward", "tcpnc-e2e"} <= set(lossy.columns) and len(lossy):
        forward, tcpnc = lossy["tcp-forward"], lossy["tcpnc-e2e"]
        above = int((forward > tcpnc).sum())
        ratio = forward / tcpnc
        rows.append(
            (
                f"{figure}: TCP-Forward above TCP/NC at every loss from 0.1 to 0.9",
                f"at {above} of {len(lossy)} losses; ratio {ratio.min():.2f} to {ratio.max():.2f}",
                above == len(lossy),
            )
        )
    if 0.0 in at.index:
        best = str(at.loc[0.0].idxmax())
        rows.append(
            (f"{figure}: TCP Reno best at the lowest loss", f"best at p = 0: {NAMES.get(best, best)}", best == "reno")
        )
        for p, claim in (
            (0.5, "TCP-Forward keeps half its lossless throughput"),
            (0.9, "TCP-Forward's throughput does not drop much"),
        ):
            if p in at.index and "tcp-forward" in at:
                kept = float(at["tcp-forward"].loc[p] / at["tcp-forward"].loc[0.0])
                rows.append((f"{figure}: {claim} at p = {p}", f"{kept:.2f} of lossless", kept >= 0.5))
    return rows


# ---------------------------------------------------------------- plots


def _name(scheme: object) -> str:
    """A scheme's name in the figures."""
    return NAMES.get(str(scheme), str(scheme))


def plot(fig7: pd.DataFrame, fig8: pd.DataFrame, cost: pd.DataFrame, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ((a, b, c), (w, d, spare)) = plt.subplots(2, 3, figsize=(16, 8), constrained_layout=True)
    spare.set_visible(False)
    titles = {POINT_TO_POINT: "Fig. 7: tandem, point-to-point hops", WIFI: "Fig. 7: tandem on one 802.11b channel"}
    for (medium, scheme), rows in fig7.groupby(["medium", "scheme"], sort=False):
        ax = a if medium == POINT_TO_POINT else w
        rows = rows.sort_values("loss")
        ax.plot(rows.loss, rows.throughput_bps / 1e3, "o-", label=_name(scheme))
        ax.set(xlabel="end-to-end loss p", ylabel="throughput (kbit/s)", title=titles[str(medium)])
    for scheme, rows in fig8.groupby("scheme", sort=False):
        rows = rows.sort_values("window")
        b.plot(rows.window_bytes, rows.delay_mean_s, "o-", label=_name(scheme))
    b.set(xlabel="coding window (bytes)", ylabel="mean end-to-end latency (s)", title="Fig. 8", xscale="log")
    for (isa, code, until), rows in cost.groupby(["isa", "code", "until"], sort=False):
        rows = rows.sort_values("window_bytes")
        style = "o-" if isa != "Scalar" else "s--"
        c.plot(rows.window_bytes, rows.seconds * 1e6, style, label=f"{code}, {until} ({isa})")
    c.axvline(4500, color="grey", lw=0.8)
    c.set(
        xlabel="coding window (bytes)",
        ylabel="decoding work per window (µs, wall clock)",
        title="Figs. 9-11: decoding cost on this machine",
        xscale="log",
        yscale="log",
    )
    forward = fig8[fig8.scheme == "tcp-forward"].sort_values("window")
    d.plot(forward.window_bytes, forward.window_first_s, "o-", label="first segment of the window")
    d.plot(forward.window_bytes, forward.window_all_s, "s-", label="whole window")
    d.set(xlabel="coding window (bytes)", ylabel="from first encoding (s, simulated)", title="Fig. 10", xscale="log")
    ticks = sorted(set(fig8.window_bytes) | set(cost.window_bytes))
    for ax in (b, c, d):
        ax.set_xticks(ticks, [f"{t / 1000:g} k" for t in ticks])
        ax.minorticks_off()
    for ax in (a, w, b, c, d):
        ax.legend(fontsize=7)
    written = [
        write_atomically(out / f"tcpforward-figs.{x}", partial(fig.savefig, format=x, dpi=110)) for x in ("png", "svg")
    ]
    plt.close(fig)
    return written


def plot_open(table: pd.DataFrame, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = list(dict.fromkeys(table.parameter))
    if not keys:
        return []
    cols = 4
    rows_n = -(-len(keys) // cols)
    fig, axes = plt.subplots(rows_n, cols, figsize=(3.2 * cols, 2.6 * rows_n), constrained_layout=True, squeeze=False)
    for ax, key in zip(axes.flat, keys, strict=False):
        for loss, rows in table[table.parameter == key].groupby("loss"):
            ax.plot(rows.value, rows.throughput_bps / 1e3, "o-", label=f"p = {loss}")
        ax.set(title=key.rsplit(".", 1)[-1], ylabel="kbit/s")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(keys) :]:
        ax.set_visible(False)
    written = [
        write_atomically(out / f"tcpforward-open-values.{x}", partial(fig.savefig, format=x, dpi=110))
        for x in ("png", "svg")
    ]
    plt.close(fig)
    return written


# ---------------------------------------------------------------- driver


def runs_planned(quick: bool) -> int:
    """How many runs the reproduction makes, for a progress bar."""
    return runs_in(sweeps(Settings.of(quick)))


def reproduce(
    quick: bool,
    out: Path,
    db: Path | None = None,
    jobs: int | None = None,
    dask: str | None = None,
    on_start: Callable[[int, int], None] | None = None,
    on_done: Callable[[Any, Any], None] | None = None,
) -> dict[str, Any]:
    """Runs the sweeps into a results store (``out/tcpforward.sqlite``), so an
    interrupted reproduction resumes; then times the codecs and writes the
    tables and figures."""
    s = Settings.of(quick)
    db = db or out / "tcpforward.sqlite"
    out.mkdir(parents=True, exist_ok=True)
    run_into(sweeps(s), db, jobs, dask, on_start, on_done)
    runs = results.load(db)
    fig7, fig8, opened = tables(runs, s)
    failed = failed_runs(runs, [sw.name for sw in sweeps(s)])
    cost = pd.concat(
        [decode_cost_on(isa, s.bench_windows, s.bench_repeats) for isa in (None, "scalar")], ignore_index=True
    )
    found = claims(fig7, fig8, cost)
    frames = [("fig7", fig7), ("fig8", fig8), ("decode-cost", cost), ("open-values", opened), ("claims", found)]
    for name, frame in frames:
        write_atomically(out / f"tcpforward-{name}.csv", partial(frame.to_csv, index=False))
    figures = plot(fig7, fig8, cost, out) + plot_open(opened, out)
    return {
        "fig7": fig7,
        "fig8": fig8,
        "cost": cost,
        "open": opened,
        "claims": found,
        "figures": figures,
        "db": db,
        "failed": failed,
    }


def json_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Long rows: `figure`, `scheme`, the swept `parameter` and its `value`,
    the `metric` and its `value` (mean over `seeds`)."""
    out: list[dict[str, Any]] = []

    def add(figure: str, table: pd.DataFrame, parameter: str, column: str, metrics: list[str], scheme: Any) -> None:
        for row in table.to_dict("records"):
            for metric in metrics:
                value = row.get(metric)
                out.append(
                    {
                        "figure": figure,
                        "scheme": scheme(row),
                        "parameter": parameter if parameter else row["parameter"],
                        "value": _plain(row[column]),
                        "metric": metric,
                        "mean": _plain(value),
                        "seeds": _plain(row.get("seeds", 1)),
                    }
                )

    for medium, fig7 in result["fig7"].groupby("medium", sort=False):
        figure = "7" if medium == POINT_TO_POINT else f"7 ({medium})"
        add(figure, fig7, "loss", "loss", ["throughput_bps"], lambda r: r["scheme"])
    add("8", result["fig8"], "window_bytes", "window_bytes", ["delay_mean_s"], lambda r: r["scheme"])
    forward = result["fig8"][result["fig8"].scheme == "tcp-forward"]
    add("10", forward, "window_bytes", "window_bytes", ["window_first_s", "window_all_s"], lambda r: r["scheme"])
    cost = result["cost"].assign(metric_name=lambda t: "decode_" + t.until + "_s")
    for row in cost.to_dict("records"):
        out.append(
            {
                "figure": "9",
                "scheme": f"{row['code']} ({row['isa']})",
                "parameter": "window_bytes",
                "value": int(row["window_bytes"]),
                "metric": row["metric_name"],
                "mean": float(row["seconds"]),
                "seeds": 1,
            }
        )
    opened = result["open"]
    if not opened.empty:
        for row in opened.to_dict("records"):
            out.append(
                {
                    "figure": f"open p={row['loss']}",
                    "scheme": "tcp-forward",
                    "parameter": row["parameter"],
                    "value": row["value"],
                    "metric": "throughput_bps",
                    "mean": _plain(row["throughput_bps"]),
                    "seeds": _plain(row["seeds"]),
                }
            )
    return out


def _plain(v: Any) -> Any:
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and np.isnan(v):
        return None
    return v
