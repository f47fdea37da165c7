"""The codec demonstration: a file crosses two lossy hops through a recoding relay.

Each generation of ``symbols`` packets is sent one coded packet per slot.
The source-to-relay and relay-to-sink hops each lose packets independently
with probability ``loss``. The relay never decodes: in every slot it sends
a fresh combination of whatever it holds. The sink decodes, and the file is
checked byte for byte.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field

import numpy as np

from .codec import Decoder, Encoder, coefficients


@dataclass
class HopCounts:
    sent: int = 0
    lost: int = 0


@dataclass
class DemoResult:
    bytes: int
    generations: int
    symbols: int
    symbol_bytes: int
    source_hop: HopCounts = field(default_factory=HopCounts)
    relay_hop: HopCounts = field(default_factory=HopCounts)
    innovative_at_sink: int = 0
    seconds: dict[str, float] = field(default_factory=lambda: {"encode": 0.0, "recode": 0.0, "decode": 0.0})
    coded_bytes: dict[str, int] = field(default_factory=lambda: {"encode": 0, "recode": 0, "decode": 0})
    verified: bool = False

    def mb_per_s(self, op: str) -> float:
        seconds = self.seconds[op]
        return self.coded_bytes[op] / seconds / 1e6 if seconds > 0 else float("nan")


def make_file(size: int, seed: int) -> bytes:
    """Deterministic pseudo-random contents, so every run moves the same bytes."""
    return np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8).tobytes()


def run(data: bytes, *, symbols: int = 64, symbol_bytes: int = 1500, loss: float = 0.3, seed: int = 1) -> DemoResult:
    if not 0 <= loss < 1:
        raise ValueError(f"loss must be in [0, 1), got {loss}")
    rng = np.random.default_rng(seed)
    block = symbols * symbol_bytes
    generations = max(1, -(-len(data) // block))
    result = DemoResult(len(data), generations, symbols, symbol_bytes)
    out = bytearray()
    slot_seed = 0
    for g in range(generations):
        chunk = data[g * block : (g + 1) * block]
        encoder = Encoder(symbols, symbol_bytes)
        encoder.set_data(chunk)
        relay = Decoder(symbols, symbol_bytes)
        sink = Decoder(symbols, symbol_bytes)
        while not sink.is_complete:
            slot_seed += 1
            t = time.perf_counter()
            coded = encoder.encode_batch(coefficients(slot_seed, symbols))
            result.seconds["encode"] += time.perf_counter() - t
            result.coded_bytes["encode"] += symbol_bytes
            result.source_hop.sent += 1
            if rng.random() < loss:
                result.source_hop.lost += 1
            else:
                relay.consume(coefficients(slot_seed, symbols), coded)
            if relay.rank == 0:
                continue
            t = time.perf_counter()
            c, p = relay.recode(slot_seed)
            result.seconds["recode"] += time.perf_counter() - t
            result.coded_bytes["recode"] += symbol_bytes
            result.relay_hop.sent += 1
            if rng.random() < loss:
                result.relay_hop.lost += 1
                continue
            t = time.perf_counter()
            if sink.consume(c, p) != "not_innovative":
                result.innovative_at_sink += 1
            result.seconds["decode"] += time.perf_counter() - t
        t = time.perf_counter()
        decoded = sink.data()
        result.seconds["decode"] += time.perf_counter() - t
        result.coded_bytes["decode"] += block
        assert decoded is not None
        out += decoded[: len(chunk)]
    result.verified = hashlib.sha256(out).digest() == hashlib.sha256(data).digest()
    return result
