"""The ``ncmesh`` command line: a thin layer over the Python API."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from . import __version__, demo as codec_demo
from .codec import simd_isa

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Network-coded TCP over lossy mesh networks.")
console = Console()


@app.command()
def version() -> None:
    """Print the version and the SIMD instruction set in use."""
    console.print(f"ncmesh {__version__} (kernels: {simd_isa()})")


@app.command()
def demo(
    file: Annotated[Optional[Path], typer.Option(help="File to send; default: a generated one.")] = None,
    size_mb: Annotated[float, typer.Option(help="Size of the generated file, in MB.")] = 4.0,
    loss: Annotated[float, typer.Option(min=0.0, max=0.99, help="Loss probability on each hop.")] = 0.3,
    symbols: Annotated[int, typer.Option(min=1, max=65535, help="Generation size g.")] = 64,
    symbol_bytes: Annotated[int, typer.Option(min=1, help="Symbol size in bytes.")] = 1500,
    seed: Annotated[int, typer.Option(help="Seed of the losses and of the generated file.")] = 1,
    quick: Annotated[bool, typer.Option(help="A small file, for a smoke test.")] = False,
) -> None:
    """Send a file over two lossy hops through a recoding relay, decode, verify."""
    if file is not None:
        try:
            data = file.read_bytes()
        except OSError as e:
            raise typer.BadParameter(f"cannot read {file}: {e.strerror}", param_hint="--file") from None
    else:
        data = codec_demo.make_file(int((0.2 if quick else size_mb) * 1e6), seed)
    result = codec_demo.run(data, symbols=symbols, symbol_bytes=symbol_bytes, loss=loss, seed=seed)

    hops = Table(title=f"{result.bytes / 1e6:.2f} MB in {result.generations} generations of "
                       f"{symbols} x {symbol_bytes} B over GF(2^8), {loss:.0%} loss per hop")
    for column in ("hop", "packets sent", "lost", "loss rate"):
        hops.add_column(column, justify="right")
    for name, hop in (("source -> relay", result.source_hop), ("relay -> sink", result.relay_hop)):
        hops.add_row(name, str(hop.sent), str(hop.lost), f"{hop.lost / max(hop.sent, 1):.1%}")
    console.print(hops)

    needed = result.generations * symbols
    speed = Table(title="Throughput from Python", caption=f"kernels: {simd_isa()}, one symbol per call")
    for column in ("operation", "MB/s"):
        speed.add_column(column, justify="right")
    for op in ("encode", "recode", "decode"):
        speed.add_row(op, f"{result.mb_per_s(op):,.0f}")
    console.print(speed)
    received = result.relay_hop.sent - result.relay_hop.lost
    console.print(f"sink received {received} packets for {needed} source packets "
                  f"({received / needed - 1:+.1%}), {result.innovative_at_sink} innovative")
    if not result.verified:
        console.print("[bold red]verification FAILED: decoded file differs[/]")
        raise typer.Exit(1)
    console.print("[bold green]decoded file verified (SHA-256 identical)[/]")


if __name__ == "__main__":
    app()
