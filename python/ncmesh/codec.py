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

import operator
from typing import TYPE_CHECKING, Any

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
    native buffers without a copy. Seeds are unsigned 64-bit integers, as
    :meth:`Encoder.encode_seeded` takes them: any other value is refused,
    not wrapped or truncated.
    """
    import numpy as np

    # Listed as given: numpy would turn a list of ints that mixes negative
    # ones with ones past 2**63 into floats.
    items = seeds.tolist() if isinstance(seeds, np.ndarray) else list(seeds)
    values = [_seed(i, s) for i, s in enumerate(items)]
    rows = b"".join(coefficients(s, encoder.symbols, encoder.q) for s in values)
    payloads = encoder.encode_batch(rows)
    shape = len(values)
    return (
        np.frombuffer(rows, dtype=np.uint8).reshape(shape, encoder.symbols),
        np.frombuffer(payloads, dtype=np.uint8).reshape(shape, encoder.symbol_bytes),
    )


def _seed(index: int, value: Any) -> int:
    """``seeds[index]`` as a seed, refused as :meth:`Encoder.encode_seeded` refuses it."""
    try:
        seed = operator.index(value)
    except TypeError:
        raise TypeError(f"seeds[{index}] = {value!r}: expected an integer") from None
    if not 0 <= seed < 2**64:
        raise OverflowError(f"seeds[{index}] = {seed} is out of range: expected an unsigned 64-bit integer")
    return seed
