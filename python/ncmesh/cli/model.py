"""``ncmesh model NAME``: the analytic models from the command line.

Mounted by the main CLI as a typer sub-app.  Every model error is a one-line
message on stderr and exit status 2, so scripts can sweep parameters without
parsing tracebacks. numpy and the models load when a command runs, not when
the command line starts.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

if TYPE_CHECKING:
    from matplotlib.figure import Figure

from ._base import app as main_app
from ._base import path

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="Analytic models: markov, kim, padhye, abouzeid, honc, num.",
)

main_app.add_typer(app, name="model")

JsonOpt = Annotated[
    bool, typer.Option("--json", help="Print one JSON object; a result that overflows a float is null.")
]
MOST_HOPS = 10_000
"""The longest path ``model honc`` takes; longer ones are a typo, and every result has long under- or overflowed."""
MOST_ITERATIONS = 100_000
"""The most iterations ``model num`` runs, a minute or so; its trace keeps every one."""
CONVERGED = 0.01
"""How close to the optimum ``model num``'s distributed total must end to count as converged."""

PlotOpt = Annotated[Path | None, typer.Option("--plot", parser=path, help="Draw the model's standard figure to FILE.")]


def _fail(msg: str) -> NoReturn:
    typer.echo(f"error: {msg}", err=True)
    raise typer.Exit(2)


def _finite(**values: float) -> None:
    """Refuses nan and inf for options whose model is defined on finite numbers:
    typer lets them through, and the models take inf as a value wherever a
    range is unbounded above."""
    for name, value in values.items():
        if not math.isfinite(value):
            _fail(f"{name} must be a finite number, got {value}")


def _json_ready(value: Any) -> Any:
    """A value JSON can hold: a result that overflowed to inf, or is nan, becomes null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, list):
        return [_json_ready(v) for v in value]
    return value


def _emit(values: dict[str, Any], as_json: bool) -> None:
    clean = {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in values.items()}  # numpy values as plain ones
    if as_json:
        typer.echo(json.dumps({k: _json_ready(v) for k, v in clean.items()}, allow_nan=False))
    else:
        for k, v in clean.items():
            typer.echo(f"{k}: {v}")


def _run(
    compute: Callable[[], dict[str, Any]], as_json: bool, plot: Path | None, draw: Callable[[Figure], None]
) -> None:
    import numpy as np

    from ..models import ModelParameterError

    try:
        # A long path or a high loss overflows a float, which the results say (inf, or null in JSON).
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            values = compute()
        if plot is not None:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt

            fig = plt.figure(figsize=(9, 3.6))
            draw(fig)
            fig.tight_layout()
            fig.savefig(plot)
            plt.close(fig)
    except ModelParameterError as e:
        _fail(str(e))
    except OSError as e:
        _fail(f"cannot write {plot}: {e.strerror}")
    _emit(values, as_json)


@app.command()
def markov(
    p: Annotated[float, typer.Option("--p", help="End-to-end erasure rate, in [0, 1).")] = 0.05,
    cwmax: Annotated[int, typer.Option("--cwmax", help="Window limit CW_max, packets.")] = 50,
    rtt: Annotated[float, typer.Option("--rtt", help="Round-trip time, seconds.")] = 0.8,
    R: Annotated[float, typer.Option("--R", help="Redundancy R >= 1.")] = 1.0,
    m: Annotated[int | None, typer.Option("--M", help="Bound M on the visual window; default adaptive.")] = None,
    as_json: JsonOpt = False,
    plot: PlotOpt = None,
) -> None:
    """Seed 002's Markov chain of TCP-NC: throughput, E[cwnd], absorbing mass."""
    _finite(p=p, rtt=rtt, R=R)
    import numpy as np

    from ..models import markov as mk

    def compute() -> dict[str, Any]:
        r = mk.solve(p, cwmax, rtt, R, m)
        return {
            "throughput_pkts_per_s": r.throughput_pkts_per_s,
            "mean_cwnd": r.mean_cwnd,
            "absorbing_mass": r.absorbing_mass,
            "effective_p": r.effective_p,
            "uses_kim": r.uses_kim,
        }

    def draw(fig: Figure) -> None:
        ps = np.linspace(0.0, 0.2, 41)
        ax1, ax2 = fig.subplots(1, 2)
        for r_ in sorted({1.0, 1.03, R}):
            ax1.plot(ps, mk.throughput(ps, cwmax, rtt, r_), label=f"R = {r_:g}")
        ax1.set(xlabel="erasure rate p", ylabel="E[Thr] (packets/s)", title=f"CW_max = {cwmax}, RTT = {rtt:g} s")
        ax1.legend()
        ms = np.arange(2, 4 * cwmax + 1, max(1, cwmax // 10))
        for pp in (0.02, 0.05, 0.1, 0.2):
            ax2.plot(ms, mk.absorbing_mass(pp, cwmax, ms), label=f"p = {pp:g}")
        ax2.set(xlabel="upper bound M", ylabel="accumulated absorbing probability", title="Fig. 6")
        ax2.legend()

    _run(compute, as_json, plot, draw)


@app.command()
def kim(
    wmax: Annotated[float, typer.Option("--wmax", help="Window limit W_max, packets.")] = 50,
    rtt: Annotated[float, typer.Option("--rtt", help="Round-trip time, seconds.")] = 0.8,
    duration: Annotated[
        float, typer.Option("--duration", help="Connection length, seconds; inf for the steady state.")
    ] = float("inf"),
    b: Annotated[float, typer.Option("--b", help="Packets acknowledged per ACK.")] = 1.0,
    as_json: JsonOpt = False,
    plot: PlotOpt = None,
) -> None:
    """Kim et al.'s TCP/NC model (all erasures masked)."""
    _finite(wmax=wmax, rtt=rtt, b=b)  # duration may be inf: an endless connection
    import numpy as np

    from ..models import kim as km

    def compute() -> dict[str, Any]:
        return {"throughput_pkts_per_s": km.throughput(wmax, rtt, duration, b)}

    def draw(fig: Figure) -> None:
        ax = fig.subplots()
        ts = np.linspace(rtt, 200 * rtt, 200)
        ax.plot(ts, km.throughput(wmax, rtt, ts, b))
        ax.set(xlabel="connection duration (s)", ylabel="throughput (packets/s)", title=f"Kim et al., W_max = {wmax:g}")

    _run(compute, as_json, plot, draw)


@app.command()
def padhye(
    p: Annotated[float, typer.Option("--p", help="Loss rate, in [0, 1).")] = 0.05,
    rtt: Annotated[float, typer.Option("--rtt", help="Round-trip time, seconds.")] = 0.8,
    rto: Annotated[float, typer.Option("--rto", help="Initial timeout T0, seconds, above 0.")] = 1.6,
    wmax: Annotated[float, typer.Option("--wmax", help="Window limit W_max, packets.")] = 50,
    b: Annotated[float, typer.Option("--b", help="Packets acknowledged per ACK.")] = 1.0,
    as_json: JsonOpt = False,
    plot: PlotOpt = None,
) -> None:
    """Padhye et al.'s full TCP Reno model, equation (32)."""
    _finite(p=p, rtt=rtt, rto=rto, wmax=wmax, b=b)
    if rto <= 0:
        _fail(f"rto must be in (0.0, inf), got {rto!r}")  # the model allows 0, where a timeout costs nothing
    import numpy as np

    from ..models import padhye as pd

    def compute() -> dict[str, Any]:
        return {"throughput_pkts_per_s": pd.throughput(p, rtt, rto, wmax, b)}

    def draw(fig: Figure) -> None:
        ax = fig.subplots()
        ps = np.logspace(-4, np.log10(0.5), 100)
        ax.loglog(ps, pd.throughput(ps, rtt, rto, wmax, b), label="full model (32)")
        ax.loglog(ps, pd.throughput_approx(ps, rtt, rto, wmax, b), "--", label="approximation (33)")
        ax.set(xlabel="loss rate p", ylabel="packets/s", title=f"Padhye, RTT = {rtt:g} s, T0 = {rto:g} s")
        ax.legend()

    _run(compute, as_json, plot, draw)


@app.command()
def abouzeid(
    p: Annotated[float, typer.Option("--p", help="Erasure rate, in [0, 1).")] = 0.05,
    rtt: Annotated[float, typer.Option("--rtt", help="Round-trip time, seconds.")] = 0.8,
    wmax: Annotated[int, typer.Option("--wmax", help="Window limit W_max, packets.")] = 50,
    as_json: JsonOpt = False,
    plot: PlotOpt = None,
) -> None:
    """Abouzeid et al.'s TCP over a lossy link (round regime, no timeouts)."""
    _finite(p=p, rtt=rtt)
    import numpy as np

    from ..models import abouzeid as ab

    def compute() -> dict[str, Any]:
        return {"throughput_pkts_per_s": ab.throughput(p, rtt, wmax), "mean_window": ab.mean_window(p, wmax)}

    def draw(fig: Figure) -> None:
        ax = fig.subplots()
        ps = np.linspace(0.005, 0.3, 60)
        ax.plot(ps, ab.throughput(ps, rtt, wmax))
        ax.set(xlabel="erasure rate p", ylabel="packets/s", title=f"Abouzeid et al., W_max = {wmax}")

    _run(compute, as_json, plot, draw)


@app.command()
def honc(
    p: Annotated[float, typer.Option("--p", help="Erasure rate per hop, in [0, 1).")] = 0.35,
    n: Annotated[int, typer.Option("--n", help="Number of hops, 1 to 10,000.")] = 4,
    b: Annotated[float, typer.Option("--b", help="Hop bandwidth (any unit), above 0.")] = 1.0,
    d: Annotated[float, typer.Option("--d", help="Propagation delay per hop, seconds.")] = 0.1,
    block: Annotated[int, typer.Option("--block", help="Block size L (packets).")] = 16,
    R: Annotated[float, typer.Option("--R", help="Redundancy R >= 1.")] = 1.5,
    as_json: JsonOpt = False,
    plot: PlotOpt = None,
) -> None:
    """Seed 000's closed forms (3)-(8) and (10)."""
    _finite(p=p, b=b, d=d, R=R)
    if b <= 0:
        _fail(f"b must be in (0.0, inf), got {b!r}")  # with no bandwidth the throughput gain is 0/0
    if n > MOST_HOPS:
        _fail(f"n must be at most {MOST_HOPS:,} hops, got {n}")
    import numpy as np

    from ..models import honc as hc

    def compute() -> dict[str, Any]:
        return {
            "throughput_hop_by_hop": hc.throughput_hop_by_hop(b, p),
            "throughput_end_to_end": hc.throughput_end_to_end(b, p, n),
            "throughput_gain": hc.throughput_gain(p, n),
            "delay_one_hop_s": hc.delay_one_hop(d, p, n),
            "delay_end_to_end_s": hc.delay_end_to_end(d, p, n),
            "delay_reduction": hc.delay_reduction(p, n),
            "decoding_probability": hc.decoding_probability(p, block, R),
        }

    def draw(fig: Figure) -> None:
        ax1, ax2 = fig.subplots(1, 2)
        ps = np.linspace(0.0, 0.5, 51)
        ax1.plot(ps, hc.throughput_gain(ps, n), label="throughput gain (5)")
        ax1.plot(ps, hc.delay_reduction(ps, n), label="delay reduction (8)")
        ax1.set(xlabel="loss rate per hop", title=f"{n} hops (cf. Fig. 5d)")
        ax1.legend()
        rs = np.linspace(1.0, 2.5, 61)
        for pp in (0.1, 0.2, 0.35):
            ax2.plot(rs, hc.decoding_probability(pp, block, rs), label=f"p = {pp:g}")
        ax2.set(xlabel="redundancy R", ylabel="P(decode first round) (10)", title=f"L = {block}")
        ax2.legend()

    _run(compute, as_json, plot, draw)


@app.command()
def num(
    topology: Annotated[
        str, typer.Option("--topology", help="alice-and-bob, x, cross or butterfly.")
    ] = "alice-and-bob",
    iterations: Annotated[int, typer.Option("--iterations", help="Primal-dual iterations, at most 100,000.")] = 3000,
    step: Annotated[float, typer.Option("--step", help="h-queue step size.")] = 0.05,
    as_json: JsonOpt = False,
    plot: PlotOpt = None,
) -> None:
    """Seed 003's NUM: optimum (cvxpy), coding gain, distributed convergence.

    The distributed solution has converged when its total rate ends within 1%
    of the optimum. When it has not (too few iterations, or a step too large
    or too small), a warning goes to standard error and --json says
    "converged": false; the exit status stays 0, as the numbers are what
    was asked for.
    """
    _finite(step=step)
    if iterations > MOST_ITERATIONS:
        _fail(f"iterations must be at most {MOST_ITERATIONS:,}, got {iterations}")
    import numpy as np

    from ..models import num as nm

    if topology not in nm.TOPOLOGIES:
        _fail(f"topology must be one of {', '.join(nm.TOPOLOGIES)}, got {topology!r}")
    topo = nm.TOPOLOGIES[topology]()
    state: dict[str, Any] = {}

    def compute() -> dict[str, Any]:
        opt = nm.optimum(topo)
        base = nm.optimum(topo.without_coding())
        tr = nm.primal_dual(topo, iterations, step)
        state["trace"], state["opt"] = tr, opt
        distributed = float(tr.total_rate[-1])
        converged = abs(distributed - opt.total_rate) <= CONVERGED * opt.total_rate
        if not converged:
            typer.echo(
                f"warning: the distributed solution has not converged: total rate {distributed:.4g} against "
                f"the optimum {opt.total_rate:.4g} after {iterations} iterations of step {step:g}; "
                "try more --iterations or another --step",
                err=True,
            )
        return {
            "topology": topology,
            "flows": list(topo.flows),
            "optimal_rates": opt.rates,
            "optimal_total": opt.total_rate,
            "uncoded_total": base.total_rate,
            "coding_gain": opt.total_rate / base.total_rate - 1.0,
            "distributed_rates": tr.rates[-1],
            "distributed_total": distributed,
            "converged": converged,
        }

    def draw(fig: Figure) -> None:
        tr, opt = state["trace"], state["opt"]
        ax1, ax2 = fig.subplots(1, 2)
        it = np.arange(1, tr.rates.shape[0] + 1)
        for k, f in enumerate(topo.flows):
            ax1.plot(it, tr.rates[:, k], label=f"x[{f}]")
        ax1.plot(it, tr.total_rate, "k", label="total")
        ax1.axhline(opt.total_rate, color="k", ls=":", label="cvxpy optimum")
        ax1.set(xlabel="iteration", ylabel="rate", title=f"{topology}: rates")
        ax1.legend(fontsize=7)
        for h, arc in enumerate(topo.hyperarcs):
            ax2.plot(it, tr.queues[:, h], label=f"q[{arc.tx}->{','.join(arc.rx)}]")
        ax2.set(xlabel="iteration", ylabel="h-queue", title="Lagrange multipliers")
        ax2.legend(fontsize=7)

    _run(compute, as_json, plot, draw)
