"""The Python half of ``make bench-codec``.

Measures the bindings and the Python peer galois on the kernel tier in use
(the Rust run measures raptorq beside the LT rows on every tier), merges their rows with the Rust run's
``target/bench/codec-rust.json`` (every tier the CPU runs) into
``target/bench/codec.json``, fills ``ratio_to_best_peer`` on ncmesh rows
(the least of its ratios to the peers measured on the same tier, each the
median of the rounds' ratios), prints the table, and writes the
tables of docs/benchmarks.md to ``target/bench/codec.md``. Throughput is
source bytes (g x symbol bytes) per second, the median of five timed
batches, as in the Rust benchmark.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from . import codec
from .files import write_text_atomically

SYMBOL = 1500
BATCH_SECONDS = 0.15

Row = dict[str, Any]
"""One measurement as codec.json holds it: tier, implementation, operation, field, g, MB/s, and extras."""


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


def row(impl: str, op: str, field: str, g: int, mb_per_s: float, **extra: Any) -> Row:
    return {
        "isa": codec.simd_isa(),
        "impl": impl,
        "op": op,
        "field": field,
        "g": g,
        "symbol_bytes": SYMBOL,
        "mb_per_s": mb_per_s,
        **extra,
    }


def ncmesh_python(g: int) -> list[Row]:
    """The bindings, with the batch calls a Python simulator would make."""
    rng = np.random.default_rng(g)
    data = rng.integers(0, 256, g * SYMBOL, dtype=np.uint8)
    enc = codec.Encoder(g, SYMBOL)
    enc.set_data(data)
    rows = b"".join(codec.coefficients(seed, g) for seed in range(g + 40))
    payloads = enc.encode_batch(rows)
    nbytes = g * SYMBOL

    def decode() -> None:
        dec = codec.Decoder(g, SYMBOL)
        dec.consume_batch(rows, payloads)
        assert dec.data() is not None

    return [
        row("ncmesh-python", "encode", "gf256", g, rate(lambda: enc.encode_batch(rows[: g * g]), nbytes)),
        row("ncmesh-python", "decode", "gf256", g, rate(decode, nbytes)),
    ]


def galois_peer(g: int) -> list[Row]:
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


def is_peer(r: Row) -> bool:
    return not r["impl"].startswith("ncmesh")


def ratio_of(ours: Row | None, theirs: Row | None) -> float | None:
    """`ours` over `theirs`: the median of the two rows' ratios round by round where both kept the rates of
    their rounds, else the ratio of their medians.

    Within a round the Rust benchmark takes the batches of the cases it compares in turn, so load from other
    work on the machine, which comes and goes over seconds, falls on both rows alike; the median of the
    rounds' ratios keeps that out of the comparison, and the ratio of two medians taken from different rounds
    does not.
    """
    if not ours or not theirs or not ours["mb_per_s"] or not theirs["mb_per_s"]:
        return None
    a, b = ours.get("rounds"), theirs.get("rounds")
    if a and b and len(a) == len(b) and all(a) and all(b):
        return float(statistics.median(x / y for x, y in zip(a, b, strict=True)))
    return float(ours["mb_per_s"] / theirs["mb_per_s"])


def ratio_to_best(ours: Row | None, peers: Sequence[Row | None]) -> float | None:
    """`ours` over the best of `peers`: the least of its ratios to each."""
    return min(filter(None, (ratio_of(ours, p) for p in peers)), default=None)


def with_ratios(rows: list[Row]) -> list[Row]:
    """`ratio_to_best_peer` on ncmesh rows, against peers on the same tier; `ratio_to_rust` on the bindings' rows."""

    def key(r: Row) -> tuple[Any, ...]:
        return (r.get("isa"), r["op"], r["field"], r["g"], r["symbol_bytes"])

    peers: dict[tuple[Any, ...], list[Row]] = {}
    rust: dict[tuple[Any, ...], Row] = {}
    for r in rows:
        if is_peer(r):
            peers.setdefault(key(r), []).append(r)
        elif r["impl"] == "ncmesh":
            rust[key(r)] = r
    for r in rows:
        if r["impl"] == "ncmesh":
            r["ratio_to_best_peer"] = ratio_to_best(r, peers.get(key(r), []))
        elif r["impl"] == "ncmesh-python":
            r["ratio_to_rust"] = ratio_of(r, rust.get(key(r)))
    return rows


def _mb(x: float | None) -> str:
    if x is None:
        return "–"
    return f"{x:,.0f}" if x >= 100 else f"{x:.1f}"


def _row_ratio(a: Row | None, b: Row | None) -> str:
    r = ratio_of(a, b)
    return f"{r:.2f}x" if r else "–"


def _share(a: float | None, b: float | None) -> str:
    return f"{a / b:.0%}" if a and b else "–"


TIERS = ("scalar", "neon", "ssse3", "avx2", "avx512", "gfni256", "gfni512")
FLAGS = ("ssse3", "avx2", "avx512f", "avx512bw", "avx512vl", "gfni", "vaes", "vpclmulqdq", "asimd", "neon")


# The inputs of the product in L1 (`product_l1`, a 24 x 32 product of 384-byte rows).
L1_INPUTS = 32


def ceiling_table(rows: list[Row], mhz: float | None) -> list[str]:
    """Per tier: the issue ceiling, and the product in L1, encoding and decoding (ncmesh's and ISA-L's) against it.

    The ceiling's row carries its probe's vector width and vector operations per multiply-add (nibble tables:
    two shuffles and two XORs, one three-way XOR on AVX-512, and a share of the shift and two ANDs that split an
    input; GFNI: one affine and one XOR), counted from the probe's code: operations a cycle follow from the
    measured clock.
    """
    at = {
        (r.get("isa"), r["impl"].split(" (")[0], r["op"], r["g"]): r["mb_per_s"] for r in rows if r["field"] == "gf256"
    }
    probes = {r["isa"]: r for r in rows if r["op"] == "issue_ceiling" and r["impl"] == "ncmesh"}
    products = {r["isa"]: r for r in rows if r["op"] == "product_l1" and r["impl"] == "ncmesh"}
    out = [
        "## Ceilings",
        "",
        "The issue ceiling is the tier's multiply-add instruction mix run from registers alone, in MB/s of",
        f"multiply-adds; operations a cycle at the measured clock of {mhz or 0:,.0f} MHz. Encoding and decoding at g",
        "count g x their MB/s of multiply-adds.",
        "",
        "| tier | ops per vector | ops a cycle | issue ceiling | product in L1 | of ceiling "
        "| encode g = 16 / 64 / 256 | ISA-L encode | decode |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for isa in sorted(probes, key=TIERS.index):
        probe = probes[isa]
        ceiling, ops = probe["mb_per_s"], probe["ops_per_vector"]
        per_cycle = ceiling / probe["vector_bytes"] * ops / mhz if mhz else None

        def shares(impl: str, op: str, isa: str = isa, ceiling: float = ceiling) -> str:
            return " / ".join(
                _share(g * at[(isa, impl, op, g)], ceiling) if (isa, impl, op, g) in at else "–" for g in (16, 64, 256)
            )

        # The product and the probe take their batches in turn: their ratio pairs the rounds.
        product = products.get(isa)
        of_ceiling = ratio_of(product, probe)
        out.append(
            f"| {isa} | {ops:g} | {f'{per_cycle:.2f}' if per_cycle else '–'} | {_mb(ceiling)} "
            f"| {_mb(product['mb_per_s'] if product else None)} "
            f"| {f'{of_ceiling:.0%}' if of_ceiling else '–'} "
            f"| {shares('ncmesh', 'encode')} | {shares('isa-l', 'encode')} | {shares('ncmesh', 'decode')} |"
        )
    return out


def markdown(rows: list[Row], cpu: dict[str, Any] | None = None) -> str:
    """The tables docs/benchmarks.md records, from one run's rows: per tier, then for the fastest."""
    tiers = sorted({r["isa"] for r in rows if r.get("isa") in TIERS}, key=TIERS.index)
    best = tiers[-1] if tiers else None
    row_at = {(r.get("isa"), r["impl"], r["op"], r["field"], r["g"]): r for r in rows}
    at = {k: r["mb_per_s"] for k, r in row_at.items()}

    def peer(isa: str, name: str, op: str, g: int, field: str = "gf256") -> tuple[Row | None, str]:
        """The row of the peer `name`, on `isa`, and the tier it names for itself, as `isa-l (avx2)` does."""
        for (tier, impl, o, f, gg), r in row_at.items():
            if tier == isa and impl.split(" (")[0] == name and o == op and f == field and gg == g:
                return r, impl.partition(" (")[2].rstrip(")")
        return None, ""

    def cell(r: Row | None, own_tier: str = "") -> str:
        rate = r["mb_per_s"] if r else None
        return f"{_mb(rate)} ({own_tier})" if rate and own_tier else _mb(rate)

    gs = (16, 64, 256)
    out = []
    if cpu:
        flags = [f for f in FLAGS if f in cpu.get("flags", [])]
        out += [
            "## Machine",
            "",
            f"{cpu.get('model', '?')}, {cpu.get('cores', '?')} cores; flags {' '.join(flags) or '–'}; "
            f"tiers {', '.join(cpu.get('tiers', []))} (the full flags are in codec.json).",
            "",
        ]
    out += [
        "## Multiply-add kernel on every tier",
        "",
        "`y ^= c x` on one 1500-byte symbol in L1, both rows aligned to a cache line, MB/s of `x`; each peer forced",
        "to the tier (its own name for it in brackets).",
        "The product in L1 is a 24 x 32 product of 384-byte rows, in MB/s of multiply-adds: the measured ceiling",
        "that the last column of the RLNC tables compares g x (encode or decode MB/s) with.",
        "",
        "| tier | ncmesh | ISA-L | rlnc-simdx | ncmesh / ISA-L | ncmesh / rlnc-simdx | product in L1 |",
        "|---|---|---|---|---|---|---|",
    ]
    for isa in tiers:
        ours = row_at.get((isa, "ncmesh", "mad", "gf256", 1))
        isal, isal_tier = peer(isa, "isa-l", "mad", 1)
        simdx, simdx_tier = peer(isa, "rlnc-simdx", "mad", 1)
        out.append(
            f"| {isa} | {cell(ours)} | {cell(isal, isal_tier)} | {cell(simdx, simdx_tier)} | {_row_ratio(ours, isal)} "
            f"| {_row_ratio(ours, simdx)} | {_mb(at.get((isa, 'ncmesh', 'product_l1', 'gf256', L1_INPUTS)))} |"
        )
    out += ["", *ceiling_table(rows, (cpu or {}).get("measured_mhz"))]
    for isa in tiers:
        l1 = at.get((isa, "ncmesh", "product_l1", "gf256", L1_INPUTS))
        out += [
            "",
            f"## RLNC over GF(2^8) on {isa}",
            "",
            "| op | g | ncmesh | rlnc-simdx | rlnc | ISA-L | galois | ncmesh / best peer | ncmesh / ISA-L "
            "| of L1 product |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for op in ("encode", "encode_fixed", "recode", "decode"):
            for g in gs:
                ours = row_at.get((isa, "ncmesh", op, "gf256", g))
                peers = [peer(isa, p, op, g) for p in ("rlnc-simdx", "rlnc", "isa-l", "galois")]
                to_best = ratio_to_best(ours, [r for r, _ in peers])
                ceiling = _share(g * ours["mb_per_s"], l1) if ours and l1 and op != "encode_fixed" else "–"
                out.append(
                    f"| {op} | {g} | {cell(ours)} | "
                    + " | ".join(cell(r, own) for r, own in peers)
                    + f" | {f'{to_best:.2f}x' if to_best else '–'} | {_row_ratio(ours, peers[2][0])} | {ceiling} |"
                )
    if best is None:
        return "\n".join(out) + "\n"
    out += [
        "",
        f"## Fields on {best}",
        "",
        "| op | g | GF(2^8) | GF(2) | GF(2) / GF(2^8) |",
        "|---|---|---|---|---|",
    ]
    for op in ("encode", "recode", "recode_partial", "decode", "decode_reset"):
        for g in gs:
            wide, binary = row_at.get((best, "ncmesh", op, "gf256", g)), row_at.get((best, "ncmesh", op, "gf2", g))
            out.append(f"| {op} | {g} | {cell(wide)} | {cell(binary)} | {_row_ratio(binary, wide)} |")
    out += [
        "",
        f"## Python bindings on {best}",
        "",
        "| op | g | Python bindings | Rust | bindings / Rust |",
        "|---|---|---|---|---|",
    ]
    for op in ("encode", "decode"):
        for g in gs:
            py, rust = at.get((best, "ncmesh-python", op, "gf256", g)), at.get((best, "ncmesh", op, "gf256", g))
            out.append(f"| {op} | {g} | {_mb(py)} | {_mb(rust)} | {_share(py, rust)} |")
    out += [
        "",
        "## LT on every tier",
        "",
        "| tier | op | K | ncmesh LT | raptorq (RaptorQ) | ncmesh / raptorq |",
        "|---|---|---|---|---|---|",
    ]
    for isa in tiers:
        for op in ("lt_encode", "lt_decode"):
            for k in (64, 1000):
                ours = row_at.get((isa, "ncmesh", op, "gf2", k))
                theirs = row_at.get((isa, "raptorq", op, "gf2", k), row_at.get((best, "raptorq", op, "gf2", k)))
                if ours:
                    out.append(f"| {isa} | {op} | {k} | {cell(ours)} | {cell(theirs)} | {_row_ratio(ours, theirs)} |")
    return "\n".join(out) + "\n"


def main(bench_dir: Path = Path("target/bench")) -> None:
    rust_file = bench_dir / "codec-rust.json"
    if not rust_file.exists():
        sys.exit(f"{rust_file} is missing: run `cargo bench -p ncmesh-codec --bench codec` first")
    rust = json.loads(rust_file.read_text())
    rows, cpu = rust["rows"], rust.get("cpu") or {}
    console = Console()
    with console.status("measuring the Python bindings and peers"):
        for g in (16, 64, 256):
            rows += ncmesh_python(g)
        for g in (16, 64):
            rows += galois_peer(g)
    rows = with_ratios(rows)
    write_text_atomically(bench_dir / "codec.json", json.dumps({"cpu": cpu, "rows": rows}, indent=1))
    write_text_atomically(bench_dir / "codec.md", markdown(rows, cpu))

    table = Table(title=f"Codec throughput, {SYMBOL}-byte symbols (kernels: {codec.simd_isa()})")
    for column in ("isa", "impl", "op", "field", "g", "MB/s", "vs best peer", "vs Rust"):
        table.add_column(column, justify="right")
    for r in sorted(rows, key=lambda r: (TIERS.index(r.get("isa", "scalar")), r["op"], r["field"], r["g"], r["impl"])):
        ratio = r.get("ratio_to_best_peer")
        to_rust = r.get("ratio_to_rust")
        table.add_row(
            r.get("isa", ""),
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
