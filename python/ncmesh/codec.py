"""Network codes: RLNC block and sliding-window codes, recoding, LT and XOR.

Coefficient vectors hold one field element per byte; symbols are bytes.
Every call that touches payloads releases the GIL, and every input that
supports the buffer protocol (bytes, bytearray, memoryview, numpy arrays)
is read without copying when it is contiguous.

    from ncmesh.codec import Encoder, Decoder

    enc = Encoder(symbols=4, symbol_bytes=8)
    enc.set_data(bytes(range(32)))
    dec = Decoder(symbols=4, symbol_bytes=8)
    seed = 0
    while not dec.is_complete:
        dec.consume(*enc.encode_seeded(seed))
        seed += 1
    assert dec.data() == bytes(range(32))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._native import (
    CodecError,
    Decoder,
    Encoder,
    LtDecoder,
    LtEncoder,
    SlidingDecoder,
    SlidingEncoder,
    coefficients,
    simd_isa,
    xor_combine,
)

if TYPE_CHECKING:
    import numpy as np

#: A relay's coder is a decoder used for :meth:`Decoder.recode`: it stores what
#: it receives and forwards fresh combinations without decoding.
Recoder = Decoder

__all__ = [
    "CodecError",
    "Decoder",
    "Encoder",
    "LtDecoder",
    "LtEncoder",
    "Recoder",
    "SlidingDecoder",
    "SlidingEncoder",
    "coefficients",
    "encode_many",
    "simd_isa",
    "xor_combine",
]


def encode_many(encoder: Encoder, seeds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Encodes one combination per seed in one native call.

    Returns ``(coefficients, payloads)`` as uint8 arrays of shape
    ``(len(seeds), symbols)`` and ``(len(seeds), symbol_bytes)``, viewing the
    native buffers without a copy.
    """
    import numpy as np

    seeds = np.asarray(seeds, dtype=np.uint64)
    rows = b"".join(coefficients(int(s), encoder.symbols, encoder.q) for s in seeds)
    payloads = encoder.encode_batch(rows)
    shape = len(seeds)
    return (
        np.frombuffer(rows, dtype=np.uint8).reshape(shape, encoder.symbols),
        np.frombuffer(payloads, dtype=np.uint8).reshape(shape, encoder.symbol_bytes),
    )
