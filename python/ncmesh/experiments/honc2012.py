"""Seed 000 (Liu and Gu 2012), single-path scenario: TCP, TCP/NC end to end,
TCP/NC hop by hop and TCP-HONC against wireless loss (Fig. 5), against the
estimated loss rate (Fig. 6) and against the estimated propagation delay
(Fig. 7), with the closed forms of eqs. (3)-(8) drawn beside them; and the
multi-path scenario of section 6.2 on the reconstructed Fig. 1 topology
(Fig. 8): the four schemes against loss on the two red paths, and TCP-HONC's
fairness and node-3 queue as the gray flows come and go.

``ncmesh reproduce honc2012 [--quick]`` runs it; docs/protocols/honc.md
shows the result next to the paper's claims.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import results
from ..files import write_atomically
from ..models import honc as closed_forms
from ..paths import scenario
from ..sweep import Axis, Sweep
from . import failed_runs, run_into, runs_in

WIRELESS_HOPS = 4
CAPACITY_BPS = 1e6
HOP_DELAY_S = 0.1 + 1040 * 8 / CAPACITY_BPS  # propagation plus one packet's transmission

# What every scheme runs over. The paper puts each loss on the wireless links
# with ns-2's lossmodel, which erases one direction only: data is lost, ACKs
# are not. TCP/NC runs over Vegas, as Sundararajan et al. simulated it; with
# Reno it masks congestion losses and stalls (docs/protocols/tcpnc.md).
COMMON = {"link_class.wireless.reverse_loss": 0.0}
# BBR (v1, as Linux runs it) is the baseline of today's reviewers: uncoded,
# with the scenario's TCP settings otherwise, beside NewReno's.
SCHEMES: dict[str, dict[str, Any]] = {
    "tcp": {"coding.scheme": "none", "tcp.variant": "newreno"},
    "bbr": {"coding.scheme": "none", "tcp.variant": "bbr"},
    "tcpnc-e2e": {"coding.scheme": "tcpnc-e2e", "tcp.variant": "vegas"},
    "tcpnc-hbh": {"coding.scheme": "tcpnc-hbh", "tcp.variant": "vegas"},
    "honc": {"coding.scheme": "honc", "tcp.variant": "newreno"},
}
# The paper's headline numbers at P_e = 0.35 (abstract, sections 6.1 and
# 6.2.1), as ratios of TCP-HONC's to the baseline's. "Outperforms ... by 236%
# and ... by 143%" reads as +236% and +143%, that is 3.36x and 2.43x: eq. (5)
# gives (1 - p)^-(n - 1) = 3.64 at p = 0.35 over four lossy hops, and the text
# says TCP/NC end to end comes close to its bound. The delays are "reduced
# to 27% and 90%"; the multipath throughput is "347% of" TCP/NC end to end.
PAPER = {
    "throughput_vs_e2e": 3.36,
    "throughput_vs_hbh": 2.43,
    "delay_vs_e2e": 0.27,
    "delay_vs_hbh": 0.90,
    "multipath_vs_e2e": 3.47,
}
# The other reading of the two throughput claims: 236% and 143% of the baseline.
PAPER_OTHER_READING = {"throughput_vs_e2e": 2.36, "throughput_vs_hbh": 1.43}


@dataclass(frozen=True)
class Settings:
    duration_s: float
    seeds: tuple[int, ...]
    losses: tuple[float, ...]
    estimated_losses: tuple[float, ...]
    estimated_delays: tuple[float, ...]
    robustness_loss: float = 0.2
    # Section 6.2.1 (Fig. 8 a-b): the red flows alone, at these losses; none skips it.
    multi_losses: tuple[float, ...] = ()
    # Section 6.2.2 (Fig. 8 c-d): one run of the scenario as written (1000 s,
    # gray flows from 200 s to 800 s), at this wireless loss; None skips it.
    fairness_loss: float | None = None

    @classmethod
    def of(cls, quick: bool) -> Settings:
        if quick:
            return cls(
                1000.0,
                (1,),
                (0.0, 0.1, 0.2, 0.35),
                (0.1, 0.2, 0.3),
                (0.05, 0.1, 0.3),
                multi_losses=(0.0, 0.1, 0.2, 0.35),
                fairness_loss=0.0,
            )
        return cls(
            10_000.0,
            (1, 2, 3, 4, 5),
            (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35),
            (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35),
            (0.02, 0.05, 0.1, 0.2, 0.3, 0.5),
            multi_losses=(0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35),
            fairness_loss=0.0,
        )


METRICS = ["throughput_bps", "delay_mean_s", "delay_std_s", "fairness"]
SCHEME_AXIS = ("coding.scheme", "tcp.variant")
SCHEME_KEYS = {"coding.scheme": "scheme", "tcp.variant": "variant"}


def _scheme_name(coding: str, variant: str) -> str:
    """The scheme a run's coding scheme and TCP variant stand for: uncoded
    TCP is named by its variant where that is not the plain baseline's."""
    if coding != "none":
        return coding
    return "bbr" if variant == "bbr" else "tcp"


def _name_schemes(table: pd.DataFrame) -> pd.DataFrame:
    table["scheme"] = [_scheme_name(c, v) for c, v in zip(table.scheme, table.variant, strict=True)]
    return table.drop(columns="variant")


def _sweep(name: str, s: Settings, axes: list[Axis], fixed: dict[str, Any] | None = None) -> Sweep:
    """A sweep over the single-path scenario, as a sweep file would give it."""
    base = {**COMMON, "duration": s.duration_s, **(fixed or {})}
    return Sweep(
        path=Path(f"<{name}>"),
        name=name,
        scenario=scenario("honc-single-path"),
        seeds=list(s.seeds),
        metrics=METRICS,
        fixed=base,
        axes=axes,
    )


def sweeps(s: Settings) -> list[Sweep]:
    """Fig. 5, Fig. 6 and Fig. 7 as three sweeps.

    Fig. 6 varies the estimated loss rate q at actual loss P_e: each scheme
    runs with the redundancy it would pick for q (1/(1-q)^4 end to end,
    1/(1-q) per hop, both with the default 10% margin), TCP-HONC with q as
    its fixed loss estimate. Every row sets both keys, so q is always
    `coding.honc.fixed_loss`; the key a scheme does not read changes nothing.
    Fig. 7 fixes TCP-HONC's propagation-delay estimate in eq. (9).
    """
    fig5 = _sweep(
        "honc2012-fig5",
        s,
        [
            Axis(SCHEME_AXIS, [(SCHEMES[k]["coding.scheme"], SCHEMES[k]["tcp.variant"]) for k in SCHEMES], 0),
            Axis(("link_class.wireless.loss",), [(p,) for p in s.losses], 0),
        ],
    )
    estimates = []
    for q in s.estimated_losses:
        estimates += [
            ("tcpnc-e2e", "vegas", 1.1 / (1 - q) ** WIRELESS_HOPS, q),
            ("tcpnc-hbh", "vegas", 1.1 / (1 - q), q),
            ("honc", "newreno", 1.1 / (1 - q), q),
        ]
    fig6 = _sweep(
        "honc2012-fig6",
        s,
        [Axis((*SCHEME_AXIS, "coding.tcpnc.redundancy", "coding.honc.fixed_loss"), estimates, 0)],
        {"link_class.wireless.loss": s.robustness_loss},
    )
    fig7 = _sweep(
        "honc2012-fig7",
        s,
        [Axis(("coding.honc.fixed_delay",), [(d,) for d in s.estimated_delays], 0)],
        {"link_class.wireless.loss": s.robustness_loss, **SCHEMES["honc"]},
    )
    return [fig5, fig6, fig7, *multi_sweeps(s)]


MULTI_SCENARIO = "honc-multi-path"
# Fig. 8(c): with the network shared fairly, each flow gets 2 Mbit/s over 4
# flows, then 3 Mbit/s over 8 (the paper's ideal, section 6.2.2).
FAIR_SHARE_BPS = {"red alone": 0.5e6, "red and gray": 0.375e6}
GRAY_START_S, GRAY_STOP_S = 200.0, 800.0


def _red_flows() -> list[dict[str, Any]]:
    """The scenario's first flow entry (flows 1-4 on the red paths), to run
    without the gray entry: an override of `flows` replaces the whole array."""
    import tomllib

    flows: list[dict[str, Any]] = tomllib.loads(scenario(MULTI_SCENARIO).read_text())["flows"][:1]
    return flows


def multi_sweeps(s: Settings) -> list[Sweep]:
    """Fig. 8 as two sweeps over the multi-path scenario: (a)-(b) the four
    schemes against P_e with the red flows only, for `duration_s` like Fig. 5;
    (c)-(d) one TCP-HONC run of the scenario as written, whose 2 s goodput
    and queue samples are its time series."""
    out = []
    if s.multi_losses:
        out.append(
            Sweep(
                path=Path("<honc2012-fig8>"),
                name="honc2012-fig8",
                scenario=scenario(MULTI_SCENARIO),
                seeds=list(s.seeds),
                metrics=METRICS,
                fixed={**COMMON, "duration": s.duration_s, "flows": _red_flows()},
                axes=[
                    Axis(SCHEME_AXIS, [(SCHEMES[k]["coding.scheme"], SCHEMES[k]["tcp.variant"]) for k in SCHEMES], 0),
                    Axis(("link_class.wireless.loss",), [(p,) for p in s.multi_losses], 0),
                ],
            )
        )
    if s.fairness_loss is not None:
        out.append(
            Sweep(
                path=Path("<honc2012-fig8cd>"),
                name="honc2012-fig8cd",
                scenario=scenario(MULTI_SCENARIO),
                seeds=list(s.seeds[:1]),
                metrics=METRICS,
                fixed={**COMMON, **SCHEMES["honc"], "link_class.wireless.loss": s.fairness_loss},
                axes=[],
            )
        )
    return out


def _table(runs: pd.DataFrame, name: str, keys: dict[str, str]) -> pd.DataFrame:
    """Mean over the successful seeds of one sweep's runs, with the swept keys
    renamed. Every point of the sweep has a row: `seeds` counts the runs its
    means are over and `failed` those that failed (a point whose runs all
    failed has no means)."""
    rows = runs[(runs.sweep == name) & runs.status.isin(["ok", "failed"])]
    rows = rows.reindex(columns=[*rows.columns, *(k for k in keys if k not in rows.columns)]).rename(columns=keys)
    by = list(keys.values())
    ok = rows.status == "ok"
    table = rows[by].drop_duplicates().sort_values(by, ignore_index=True)
    means = rows[ok].groupby(by, as_index=False)[METRICS].mean()
    stats = rows[ok].groupby(by, as_index=False)["throughput_bps"].agg(throughput_sd="std", seeds="size")
    failed = rows[~ok].groupby(by, as_index=False).size().rename(columns={"size": "failed"})
    table = table.merge(means, on=by, how="left").merge(stats, on=by, how="left").merge(failed, on=by, how="left")
    table[["seeds", "failed"]] = table[["seeds", "failed"]].fillna(0).astype(int)
    return table


def tables(runs: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    fig5 = _name_schemes(_table(runs, "honc2012-fig5", {**SCHEME_KEYS, "link_class.wireless.loss": "loss"}))
    fig5.insert(1, "scenario", "single")
    fig6 = _name_schemes(_table(runs, "honc2012-fig6", {**SCHEME_KEYS, "coding.honc.fixed_loss": "estimated_loss"}))
    fig7 = _table(runs, "honc2012-fig7", {"coding.honc.fixed_delay": "estimated_delay_s"})
    order = {k: i for i, k in enumerate(SCHEMES)}

    def in_scheme_order(t: pd.DataFrame) -> pd.DataFrame:
        return t.sort_values(["scheme"], key=lambda c: c.map(order), kind="stable", ignore_index=True)

    return in_scheme_order(fig5), in_scheme_order(fig6), fig7


def multi_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Fig. 8(a)-(b): mean over seeds per scheme and P_e, like Fig. 5's table."""
    if not (runs.sweep == "honc2012-fig8").any():
        return pd.DataFrame(columns=["scheme", "scenario", "loss", *METRICS, "throughput_sd", "seeds", "failed"])
    table = _name_schemes(_table(runs, "honc2012-fig8", {**SCHEME_KEYS, "link_class.wireless.loss": "loss"}))
    table.insert(1, "scenario", "multi")
    order = {k: i for i, k in enumerate(SCHEMES)}
    return table.sort_values(["scheme"], key=lambda c: c.map(order), kind="stable", ignore_index=True)


def fairness_series(runs: pd.DataFrame, window_s: float = 20.0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fig. 8(c)-(d) from the fairness run's Parquet series: each flow's
    goodput averaged over `window_s` windows (the paper's 20 s), and the
    queue of node 3 towards 5 as sampled (every 2 s)."""
    rows = runs[(runs.sweep == "honc2012-fig8cd") & (runs.status == "ok")]
    if rows.empty or rows.series.iloc[0] is None:
        return pd.DataFrame(columns=["time_s", "flow", "throughput_bps"]), pd.DataFrame(columns=["time_s", "packets"])
    series = pd.read_parquet(rows.series.iloc[0])
    goodput = series[series.series == "goodput_bps"].copy()
    goodput["time_s"] = (goodput.time_s // window_s) * window_s
    flows = (
        goodput.groupby(["time_s", "flow"], as_index=False)[["value"]]
        .mean()
        .rename(columns={"value": "throughput_bps"})
    )
    flows["flow"] = flows.flow.astype(int)
    queue = series[(series.series == "queue_packets") & (series["from"] == 3) & (series["to"] == 5)]
    return flows, queue[["time_s", "value"]].rename(columns={"value": "packets"}).reset_index(drop=True)


def headline(fig5: pd.DataFrame, multi: pd.DataFrame | None = None) -> pd.DataFrame:
    """The paper's claims at the highest loss swept, measured; with `multi`,
    the multipath claim of section 6.2.1 at its highest loss too."""
    p = fig5.loss.max()
    at = fig5[fig5.loss == p].set_index("scheme")
    h, e, b = at.loc["honc"], at.loc["tcpnc-e2e"], at.loc["tcpnc-hbh"]
    bound = float(closed_forms.throughput_hop_by_hop(CAPACITY_BPS, p))
    nan = float("nan")
    rows = [
        (
            "TCP-HONC / TCP/NC end-to-end, throughput",
            h.throughput_bps / e.throughput_bps,
            PAPER["throughput_vs_e2e"],
            PAPER_OTHER_READING["throughput_vs_e2e"],
        ),
        (
            "TCP-HONC / TCP/NC hop-by-hop, throughput",
            h.throughput_bps / b.throughput_bps,
            PAPER["throughput_vs_hbh"],
            PAPER_OTHER_READING["throughput_vs_hbh"],
        ),
        ("TCP-HONC / TCP/NC end-to-end, mean delay", h.delay_mean_s / e.delay_mean_s, PAPER["delay_vs_e2e"], nan),
        ("TCP-HONC / TCP/NC hop-by-hop, mean delay", h.delay_mean_s / b.delay_mean_s, PAPER["delay_vs_hbh"], nan),
        ("TCP-HONC / bound b(1-p) of eq. (3)", h.throughput_bps / bound, nan, nan),
        ("TCP-HONC fairness (Jain)", h.fairness, nan, nan),
    ]
    claims = pd.DataFrame(rows, columns=["claim", "measured", "paper", "paper_other_reading"]).assign(loss=p)
    if multi is not None and not multi.empty:
        q = multi.loss.max()
        at = multi[multi.loss == q].set_index("scheme")
        ratio = at.loc["honc"].throughput_bps / at.loc["tcpnc-e2e"].throughput_bps
        extra = pd.DataFrame(
            [("TCP-HONC / TCP/NC end-to-end, multipath throughput", ratio, PAPER["multipath_vs_e2e"], float("nan"), q)],
            columns=claims.columns,
        )
        claims = pd.concat([claims, extra], ignore_index=True)
    return claims


NAMES = {
    "tcp": "TCP",
    "bbr": "BBR",
    "tcpnc-e2e": "TCP/NC end-to-end",
    "tcpnc-hbh": "TCP/NC hop-by-hop",
    "honc": "TCP-HONC",
}


def plot(fig5: pd.DataFrame, fig6: pd.DataFrame, fig7: pd.DataFrame, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = NAMES
    p = np.linspace(0, max(fig5.loss.max(), 0.01), 50)
    fig, axes = plt.subplots(2, 2, figsize=(11, 8), constrained_layout=True)
    (a, b), (c, d) = axes
    for scheme, rows in fig5.groupby("scheme", sort=False):
        rows = rows.sort_values("loss")
        a.plot(rows.loss, rows.throughput_bps / 1e3, "o-", label=names[str(scheme)])
        b.plot(rows.loss, rows.delay_mean_s, "o-", label=names[str(scheme)])
        c.plot(rows.loss, rows.delay_std_s, "o-", label=names[str(scheme)])
    a.plot(p, closed_forms.throughput_hop_by_hop(CAPACITY_BPS, p) / 1e3, "k--", label="eq. (3) b(1-p)")
    a.plot(p, closed_forms.throughput_end_to_end(CAPACITY_BPS, p, WIRELESS_HOPS) / 1e3, "k:", label="eq. (4) b(1-p)^4")
    a.set(xlabel="P_e", ylabel="total throughput (kbit/s)", title="(a) throughput", yscale="symlog")
    b.plot(p, closed_forms.delay_one_hop(HOP_DELAY_S, p, WIRELESS_HOPS), "k--", label="eq. (6) one-hop ARQ")
    b.plot(p, closed_forms.delay_end_to_end(HOP_DELAY_S, p, WIRELESS_HOPS), "k:", label="eq. (7) end-to-end ARQ")
    b.set(xlabel="P_e", ylabel="mean end-to-end delay (s)", title="(b) delay", yscale="log")
    c.set(xlabel="P_e", ylabel="delay standard deviation (s)", title="(c) delay jitter", yscale="log")
    at = fig5.pivot_table(index="loss", columns="scheme", values=["throughput_bps", "delay_mean_s"])
    gain = at["throughput_bps"]["honc"] / at["throughput_bps"]["tcpnc-e2e"]
    reduction = at["delay_mean_s"]["honc"] / at["delay_mean_s"]["tcpnc-e2e"]
    d.plot(gain.index, gain, "o-", label="throughput gain over TCP/NC end-to-end")
    d.plot(reduction.index, reduction, "s-", label="delay reduction (ratio) over TCP/NC end-to-end")
    d.plot(p, closed_forms.throughput_gain(p, WIRELESS_HOPS), "k--", label="eq. (5)")
    d.plot(p, closed_forms.delay_reduction(p, WIRELESS_HOPS), "k:", label="eq. (8)")
    d.set(xlabel="P_e", ylabel="ratio", title="(d) gain and delay reduction")
    for ax in (a, b, c, d):
        ax.legend(fontsize=7)
    written = [
        write_atomically(out / f"honc2012-fig5.{x}", partial(fig.savefig, format=x, dpi=110)) for x in ("png", "svg")
    ]
    plt.close(fig)

    fig, (e, f) = plt.subplots(1, 2, figsize=(11, 3.8), constrained_layout=True)
    for scheme, rows in fig6.groupby("scheme", sort=False):
        rows = rows.sort_values("estimated_loss")
        e.plot(rows.estimated_loss, rows.throughput_bps / 1e3, "o-", label=names[str(scheme)])
    e.axvline(fig6.attrs.get("actual_loss", 0.2), color="grey", lw=0.8)
    e.set(xlabel="estimated loss rate", ylabel="total throughput (kbit/s)", title="Fig. 6")
    e.legend(fontsize=7)
    rows = fig7.sort_values("estimated_delay_s")
    f.plot(rows.estimated_delay_s, rows.throughput_bps / 1e3, "o-", label="throughput (kbit/s)")
    f2 = f.twinx()
    f2.plot(rows.estimated_delay_s, rows.delay_mean_s, "s--", color="tab:red", label="mean delay (s)")
    f.axvline(0.1, color="grey", lw=0.8)
    f.set(xlabel="estimated propagation delay (s)", ylabel="TCP-HONC throughput (kbit/s)", title="Fig. 7")
    f2.set(ylabel="mean delay (s)")
    f.legend(loc="lower left", fontsize=7)
    f2.legend(loc="lower right", fontsize=7)
    written += [
        write_atomically(out / f"honc2012-fig6-7.{x}", partial(fig.savefig, format=x, dpi=110)) for x in ("png", "svg")
    ]
    plt.close(fig)
    return written


def plot_fig8(multi: pd.DataFrame, flows: pd.DataFrame, queue: pd.DataFrame, out: Path) -> list[Path]:
    """Fig. 8: (a)-(b) the schemes against P_e on the two red paths, (c) each
    flow's 20 s throughput with the fair shares, (d) node 3's queue."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = NAMES
    fig, ((a, b), (c, d)) = plt.subplots(2, 2, figsize=(11, 8), constrained_layout=True)
    for scheme, rows in multi.groupby("scheme", sort=False):
        rows = rows.sort_values("loss")
        a.plot(rows.loss, rows.throughput_bps / 1e3, "o-", label=names[str(scheme)])
        b.plot(rows.loss, rows.delay_mean_s, "o-", label=names[str(scheme)])
    if not multi.empty:
        p = np.linspace(0, max(multi.loss.max(), 0.01), 50)
        a.plot(
            p, 2 * closed_forms.throughput_hop_by_hop(CAPACITY_BPS, p) / 1e3, "k--", label="two paths of eq. (3) b(1-p)"
        )
    a.set(
        xlabel="P_e",
        ylabel="total throughput (kbit/s)",
        title="(a) throughput, red flows on two paths",
        yscale="symlog",
    )
    b.set(xlabel="P_e", ylabel="mean end-to-end delay (s)", title="(b) delay", yscale="log")
    for flow, rows in flows.groupby(flows["flow"]):
        if flow > 4:  # the gray flows exist from 200 s to 800 s only
            rows = rows[(rows.time_s >= GRAY_START_S) & (rows.time_s < GRAY_STOP_S)]
        c.plot(rows.time_s + 10, rows.throughput_bps / 1e6, "-", lw=1, label=f"flow {flow}")
    c.hlines(
        [FAIR_SHARE_BPS["red alone"] / 1e6] * 2 + [FAIR_SHARE_BPS["red and gray"] / 1e6],
        [0, GRAY_STOP_S, GRAY_START_S],
        [GRAY_START_S, 1000, GRAY_STOP_S],
        colors="k",
        linestyles="--",
        label="fair share",
    )
    c.set(xlabel="time (s)", ylabel="throughput per 20 s (Mbit/s)", title="(c) fairness and load balancing, TCP-HONC")
    d.plot(queue.time_s, queue.packets, "-", lw=1)
    d.set(xlabel="time (s)", ylabel="packets", title="(d) queue at node 3 towards 5, every 2 s")
    for ax in (a, b, c):
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, ncol=2 if ax is c else 1)
    written = [
        write_atomically(out / f"honc2012-fig8.{x}", partial(fig.savefig, format=x, dpi=110)) for x in ("png", "svg")
    ]
    plt.close(fig)
    return written


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
    """Runs the three sweeps into a results store (``out/honc2012.sqlite`` by
    default), which makes an interrupted reproduction resume where it
    stopped, then writes the tables and figures."""
    s = Settings.of(quick)
    db = db or out / "honc2012.sqlite"
    out.mkdir(parents=True, exist_ok=True)
    run_into(sweeps(s), db, jobs, dask, on_start, on_done)
    fig5, fig6, fig7 = tables(results.load(db))
    fig6.attrs["actual_loss"] = s.robustness_loss
    runs = results.load(db)
    multi = multi_table(runs)
    flows, queue = fairness_series(runs)
    claims = headline(fig5, multi)
    failed = failed_runs(runs, [sw.name for sw in sweeps(s)])
    # The CLI hands `json_rows` Fig. 5's table alone: the multipath rows ride along.
    fig5.attrs["multi"] = _records(multi)
    frames = [("fig5", fig5), ("fig6", fig6), ("fig7", fig7), ("claims", claims)]
    if s.multi_losses:
        frames.append(("fig8", multi))
    if s.fairness_loss is not None:
        frames += [("fig8c", flows), ("fig8d", queue)]
    for name, frame in frames:
        write_atomically(out / f"honc2012-{name}.csv", partial(frame.to_csv, index=False))
    figures = plot(fig5, fig6, fig7, out)
    if s.multi_losses or s.fairness_loss is not None:
        figures += plot_fig8(multi, flows, queue, out)
    return {
        "failed": failed,
        "fig5": fig5,
        "fig6": fig6,
        "fig7": fig7,
        "claims": claims,
        "figures": figures,
        "db": db,
        "fig8": multi,
        "fig8c": flows,
        "fig8d": queue,
    }


JSON_KEYS = ["scheme", "scenario", "loss", "throughput_bps", "delay_mean_s", "delay_std_s", "seeds", "failed"]


def _records(table: pd.DataFrame) -> list[dict[str, Any]]:
    rows = []
    for row in table.reindex(columns=JSON_KEYS).to_dict("records"):
        rows.append(
            {
                str(k): (None if isinstance(v, float) and np.isnan(v) else (v.item() if hasattr(v, "item") else v))
                for k, v in row.items()
            }
        )
    return rows


def json_rows(fig5: pd.DataFrame) -> list[dict[str, Any]]:
    """One row per (scheme, P_e, scenario), as `--json` prints them: Fig. 5's
    single-path rows, then the multipath ones `reproduce` attached."""
    return _records(fig5) + list(fig5.attrs.get("multi", []))
