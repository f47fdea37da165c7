"""The Python half of ``make bench-codec``.

Measures the bindings and the Python peers (galois, raptorq), merges their
rows with the Rust run's ``target/bench/codec-rust.json`` into
``target/bench/codec.json``, fills ``ratio_to_best_peer`` on ncmesh rows,
prints the table, and writes the tables of docs/benchmarks.md to
``target/bench/codec.md``. Throughput is source bytes (g x symbol bytes) per second,
the median of five timed batches, as in the Rust benchmark.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from . import codec

SYMBOL = 1500
BATCH_SECONDS = 0.15


def rate(work: Callable[[], object], nbytes: int) -> float:
    """Median MB/s over five batches of repeated calls."""
    work()
    rates = []
    for _ in range(5):
        start, n = time.perf_counter(), 0
        while time.perf_counter() - start < BATCH_SECONDS:
            work()
            n += 1
        rates.append(n * nbytes / (time.perf_counter() - start) / 1e6)
    return statistics.median(rates)


def row(impl: str, op: str, field: str, g: int, mb_per_s: float, **extra) -> dict:
    return {"impl": impl, "op": op, "field": field, "g": g, "symbol_bytes": SYMBOL, "mb_per_s": mb_per_s, **extra}


def ncmesh_python(g: int) -> list[dict]:
    """The bindings, with the batch calls a Python simulator would make."""
    rng = np.random.default_rng(g)
    data = rng.integers(0, 256, g * SYMBOL, dtype=np.uint8)
    enc = codec.Encoder(g, SYMBOL)
    enc.set_data(data)
    rows = b"".join(codec.coefficients(seed, g) for seed in range(g + 40))
    payloads = enc.encode_batch(rows)
    nbytes = g * SYMBOL

    def decode():
        dec = codec.Decoder(g, SYMBOL)
        dec.consume_batch(rows, payloads)
        assert dec.data() is not None

    return [
        row("ncmesh-python", "encode", "gf256", g, rate(lambda: enc.encode_batch(rows[: g * g]), nbytes)),
        row("ncmesh-python", "decode", "gf256", g, rate(decode, nbytes)),
    ]


def galois_peer(g: int) -> list[dict]:
    """galois: encode as a matrix product, decode as a linear solve over GF(2^8)/0x11D."""
    import galois

    gf = galois.GF(2**8)
    rng = np.random.default_rng(g)
    data = gf(rng.integers(0, 256, (g, SYMBOL), dtype=np.uint8))
    coefficients = gf.Random((g, g), seed=g)
    while np.linalg.matrix_rank(coefficients) < g:
        coefficients = gf.Random((g, g))
    coded = coefficients @ data
    nbytes = g * SYMBOL
    return [
        row("galois", "encode", "gf256", g, rate(lambda: coefficients @ data, nbytes)),
        row("galois", "decode", "gf256", g, rate(lambda: np.linalg.solve(coefficients, coded), nbytes)),
    ]


def raptorq_peer(k: int) -> list[dict]:
    """raptorq (RFC 6330) beside the LT rows: encode K source symbols plus 10% repair, decode after 10% loss."""
    import raptorq

    data = np.random.default_rng(k).integers(0, 256, k * SYMBOL, dtype=np.uint8).tobytes()
    encoder = raptorq.Encoder.with_defaults(data, SYMBOL)
    packets = encoder.get_encoded_packets(k // 10 + 1)
    rng = np.random.default_rng(1)
    kept = [p for p in packets if rng.random() >= 0.1]

    def decode():
        decoder = raptorq.Decoder.with_defaults(len(data), SYMBOL)
        for p in kept:
            if decoder.decode(p) is not None:
                return
        raise RuntimeError("raptorq did not decode")

    note = "RaptorQ (RFC 6330), not LT"
    return [
        row(
            "raptorq",
            "lt_encode",
            "gf2",
            k,
            rate(lambda: encoder.get_encoded_packets(k // 10 + 1), k * SYMBOL),
            note=note,
        ),
        row("raptorq", "lt_decode", "gf2", k, rate(decode, k * SYMBOL), note=note),
    ]


def with_ratios(rows: list[dict]) -> list[dict]:
    """`ratio_to_best_peer` on ncmesh rows, and `ratio_to_rust` on the bindings' rows."""

    def key(r):
        return (r["op"], r["field"], r["g"], r["symbol_bytes"])

    best_peer: dict[tuple, float] = {}
    rust: dict[tuple, float] = {}
    for r in rows:
        if not r["impl"].startswith("ncmesh"):
            best_peer[key(r)] = max(best_peer.get(key(r), 0.0), r["mb_per_s"])
        elif r["impl"] == "ncmesh":
            rust[key(r)] = r["mb_per_s"]
    for r in rows:
        if r["impl"] == "ncmesh":
            peer = best_peer.get(key(r))
            r["ratio_to_best_peer"] = r["mb_per_s"] / peer if peer else None
        elif r["impl"] == "ncmesh-python":
            native = rust.get(key(r))
            r["ratio_to_rust"] = r["mb_per_s"] / native if native else None
    return rows


def _mb(x: float | None) -> str:
    if x is None:
        return "–"
    return f"{x:,.0f}" if x >= 100 else f"{x:.1f}"


def markdown(rows: list[dict]) -> str:
    """The tables docs/benchmarks.md records, from one run's rows."""
    at = {(r["impl"], r["op"], r["field"], r["g"]): r["mb_per_s"] for r in rows}
    gs = (16, 64, 256)
    out = [
        "## RLNC over GF(2^8)",
        "",
        "| op | g | ncmesh | rlnc-simdx | rlnc | galois | ncmesh / best peer |",
        "|---|---|---|---|---|---|---|",
    ]
    for op in ("encode", "recode", "decode"):
        for g in gs:
            peers = [at.get((p, op, "gf256", g)) for p in ("rlnc-simdx", "rlnc", "galois")]
            ours = at.get(("ncmesh", op, "gf256", g))
            best = max((p for p in peers if p), default=None)
            ratio = f"{ours / best:.2f}x" if ours and best else "–"
            out.append(f"| {op} | {g} | {_mb(ours)} | " + " | ".join(map(_mb, peers)) + f" | {ratio} |")
    out += ["", "## Fields", "", "| op | g | GF(2^8) | GF(2) | GF(2) / GF(2^8) |", "|---|---|---|---|---|"]
    for op in ("encode", "recode", "recode_partial", "decode", "decode_reset"):
        for g in gs:
            wide, binary = at.get(("ncmesh", op, "gf256", g)), at.get(("ncmesh", op, "gf2", g))
            ratio = f"{binary / wide:.2f}x" if wide and binary else "–"
            out.append(f"| {op} | {g} | {_mb(wide)} | {_mb(binary)} | {ratio} |")
    out += [
        "",
        "## Python bindings",
        "",
        "| op | g | Python bindings | Rust | bindings / Rust |",
        "|---|---|---|---|---|",
    ]
    for op in ("encode", "decode"):
        for g in gs:
            py, rust = at.get(("ncmesh-python", op, "gf256", g)), at.get(("ncmesh", op, "gf256", g))
            share = f"{py / rust:.0%}" if py and rust else "–"
            out.append(f"| {op} | {g} | {_mb(py)} | {_mb(rust)} | {share} |")
    return "\n".join(out) + "\n"


def write_atomically(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def main(bench_dir: Path = Path("target/bench")) -> None:
    rust_file = bench_dir / "codec-rust.json"
    if not rust_file.exists():
        sys.exit(f"{rust_file} is missing: run `cargo bench -p ncmesh-codec --bench codec` first")
    rows = json.loads(rust_file.read_text())["rows"]
    console = Console()
    with console.status("measuring the Python bindings and peers"):
        for g in (16, 64, 256):
            rows += ncmesh_python(g)
        for g in (16, 64):
            rows += galois_peer(g)
        for k in (64, 1000):
            rows += raptorq_peer(k)
    rows = with_ratios(rows)
    write_atomically(bench_dir / "codec.json", json.dumps({"rows": rows}, indent=1))
    write_atomically(bench_dir / "codec.md", markdown(rows))

    table = Table(title=f"Codec throughput, {SYMBOL}-byte symbols (kernels: {codec.simd_isa()})")
    for column in ("impl", "op", "field", "g", "MB/s", "vs best peer", "vs Rust"):
        table.add_column(column, justify="right")
    for r in sorted(rows, key=lambda r: (r["op"], r["field"], r["g"], r["impl"])):
        ratio = r.get("ratio_to_best_peer")
        to_rust = r.get("ratio_to_rust")
        table.add_row(
            r["impl"],
            r["op"],
            r["field"],
            str(r["g"]),
            f"{r['mb_per_s']:,.1f}",
            f"{ratio:.2f}x" if ratio else "",
            f"{to_rust:.0%}" if to_rust else "",
        )
    console.print(table)
    console.print(
        f"written to {bench_dir / 'codec.json'}, and as the tables of docs/benchmarks.md to {bench_dir / 'codec.md'}"
    )


if __name__ == "__main__":
    main()
