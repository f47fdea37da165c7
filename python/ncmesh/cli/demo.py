"""``ncmesh tcp-demo`` and ``ncmesh codec-demo``: short demonstrations."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._base import app, err, fail, finite, out, path


@app.command("tcp-demo")
def tcp_demo(
    duration: Annotated[
        float, typer.Option(parser=finite(1.0), help="Simulated seconds per run, at least 1 (the paper uses 10000).")
    ] = 1000.0,
    out_dir: Annotated[Path, typer.Option("--out", parser=path, help="Directory for the table and the plot.")] = Path(
        "demo-out"
    ),
    variant: Annotated[str, typer.Option(help="TCP variant: reno, newreno, sack, vegas or cubic.")] = "newreno",
) -> None:
    """Plain TCP on the seed 000 single path at per-hop loss 0, 5, 10 and 20%."""
    from rich.table import Table

    from ..experiments import tcp_loss
    from ..files import write_text_atomically
    from ..simulate import ScenarioError

    out().print(
        f"4 FTP flows over 1-3-5-8-11-10 (four 1 Mbit/s, 100 ms wireless hops), {variant}, {duration:,.0f} s per run"
    )
    try:
        table = tcp_loss.sweep(
            duration_s=duration, variant=variant, on_done=lambda p: err().print(f"  loss {p:.0%} done")
        )
    except ScenarioError as e:
        raise fail(str(e)) from None
    shown = Table(title="TCP goodput and delay against wireless loss")
    for column in ("loss", "goodput (kbit/s)", "bound b(1-p)", "mean delay (s)", "retransmits", "timeouts", "fairness"):
        shown.add_column(column, justify="right")
    for r in table.to_dict("records"):
        shown.add_row(
            f"{r['loss']:.0%}",
            f"{r['throughput_bps'] / 1e3:,.1f}",
            f"{r['bound_bps'] / 1e3:,.0f}",
            f"{r['delay_mean_s']:.3f}",
            f"{r['retransmits']:,}",
            f"{r['timeouts']:,}",
            f"{r['fairness']:.3f}",
        )
    out().print(shown)
    write_text_atomically(out_dir / "tcp-vs-loss.csv", table.to_csv(index=False))
    for written in tcp_loss.plot(table, out_dir):
        out().print(f"wrote {written}")


@app.command("codec-demo")
def codec_demo(
    file: Annotated[Path | None, typer.Option(parser=path, help="File to send; default: a generated one.")] = None,
    size_mb: Annotated[
        float, typer.Option(parser=finite(1e-6, 1e4), help="Size of the generated file, in MB, up to 10000.")
    ] = 4.0,
    loss: Annotated[
        float, typer.Option(parser=finite(0.0, 0.99), help="Loss probability on each hop, 0 to 0.99.")
    ] = 0.3,
    symbols: Annotated[int, typer.Option(min=1, max=65535, help="Generation size g.")] = 64,
    symbol_bytes: Annotated[int, typer.Option(min=1, help="Symbol size in bytes.")] = 1500,
    seed: Annotated[int, typer.Option(help="Seed of the losses and of the generated file.")] = 1,
    quick: Annotated[bool, typer.Option(help="A small file, for a smoke test.")] = False,
) -> None:
    """Send a file over two lossy hops through a recoding relay, decode, verify."""
    from rich.table import Table

    from .. import demo
    from ..codec import simd_isa

    if file is not None:
        try:
            data = file.read_bytes()
        except OSError as e:
            raise typer.BadParameter(f"cannot read {file}: {e.strerror}", param_hint="--file") from None
    else:
        data = demo.make_file(int((0.2 if quick else size_mb) * 1e6), seed)
    result = demo.run(data, symbols=symbols, symbol_bytes=symbol_bytes, loss=loss, seed=seed)

    hops = Table(
        title=f"{result.bytes / 1e6:.2f} MB in {result.generations} generations of "
        f"{symbols} x {symbol_bytes} B over GF(2^8), {loss:.0%} loss per hop"
    )
    for column in ("hop", "packets sent", "lost", "loss rate"):
        hops.add_column(column, justify="right")
    for name, hop in (("source -> relay", result.source_hop), ("relay -> sink", result.relay_hop)):
        hops.add_row(name, str(hop.sent), str(hop.lost), f"{hop.lost / max(hop.sent, 1):.1%}")
    out().print(hops)

    needed = result.generations * symbols
    speed = Table(title="Throughput from Python", caption=f"kernels: {simd_isa()}, one symbol per call")
    for column in ("operation", "MB/s"):
        speed.add_column(column, justify="right")
    for op in ("encode", "recode", "decode"):
        speed.add_row(op, f"{result.mb_per_s(op):,.0f}")
    out().print(speed)
    received = result.relay_hop.sent - result.relay_hop.lost
    out().print(
        f"sink received {received} packets for {needed} source packets "
        f"({received / needed - 1:+.1%}), {result.innovative_at_sink} innovative"
    )
    if not result.verified:
        out().print("[bold red]verification FAILED: decoded file differs[/]")
        raise typer.Exit(1)
    out().print("[bold green]decoded file verified (SHA-256 identical)[/]")
