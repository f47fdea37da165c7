"""The codec bindings: round trips, recoding, seen tracking, buffers and errors."""

from __future__ import annotations

import random
import sys
import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ncmesh import codec
from ncmesh.codec import CodecError, Decoder, Encoder


def granularity(q: int) -> int:
    return 1 if 8 % q == 0 else q


@settings(max_examples=60, deadline=None)
@given(
    q=st.integers(1, 8),
    g=st.integers(1, 80),
    units=st.integers(0, 20),
    systematic=st.booleans(),
    loss=st.floats(0, 0.5),
    seed=st.integers(0, 2**32),
)
def test_decode_inverts_encode(q, g, units, systematic, loss, seed):
    s = units * granularity(q)
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 256, g * s, dtype=np.uint8).tobytes()
    enc = Encoder(g, s, q=q, systematic=systematic)
    enc.set_data(data)
    dec = Decoder(g, s, q=q)
    sent = 0
    while not dec.is_complete:
        index, c, p = enc.produce(sent)
        sent += 1
        assert sent < 40 * g + 100
        if rng.random() < loss:
            continue
        result = dec.consume_systematic(index, p) if index is not None else dec.consume(c, p)
        assert result in ("innovative", "not_innovative", "complete")
    assert dec.data() == data
    assert all(dec.symbol(i) == data[i * s : (i + 1) * s] for i in range(g))


def test_relay_recodes_without_decoding():
    g, s = 32, 100
    data = bytes(range(256)) * (g * s // 256) + bytes(g * s % 256)
    enc = Encoder(g, s)
    enc.set_data(data)
    relay, sink = Decoder(g, s), Decoder(g, s)
    for seed in range(g // 2):
        relay.consume(*enc.encode_seeded(seed))
    # Half a generation at the relay: the sink can reach only that rank.
    c, p = relay.recode(seed=7, count=3 * g)
    assert sink.consume_batch(c, p) == g // 2
    assert sink.rank == g // 2 and not sink.is_complete
    for seed in range(g // 2, g + 10):
        relay.consume(*enc.encode_seeded(seed))
    c, p = relay.recode(seed=8, count=g + 10)
    sink.consume_batch(c, p)
    assert sink.data() == data


def test_reset_decoder_takes_the_next_generation():
    g, s = 16, 40
    rng = np.random.default_rng(5)
    dec = Decoder(g, s)
    for _ in range(2):
        data = rng.integers(0, 256, g * s, dtype=np.uint8).tobytes()
        enc = Encoder(g, s)
        enc.set_data(data)
        dec.reset()
        assert dec.rank == 0
        seed = 0
        while not dec.is_complete:
            dec.consume(*enc.encode_seeded(seed))
            seed += 1
        assert dec.data() == data


def leading_positions(rows: list[list[int]], g: int) -> set[int]:
    """Every leading position of a non-zero vector in the GF(2) span, by enumeration."""
    lead = set()
    for mask in range(1, 2 ** len(rows)):
        v = [0] * g
        for k, row in enumerate(rows):
            if mask >> k & 1:
                v = [a ^ b for a, b in zip(v, row, strict=True)]
        if any(v):
            lead.add(next(i for i, x in enumerate(v) if x))
    return lead


def test_seen_symbols_match_their_definition():
    rng = np.random.default_rng(5)
    g = 9
    dec = Decoder(g, 0, q=1)
    rows = []
    for _ in range(10):
        start = int(rng.integers(0, g))
        row = [0] * start + list(rng.integers(0, 2, g - start))
        dec.consume(bytes(row), b"")
        rows.append(row)
        seen = {i for i in range(g) if dec.is_symbol_seen(i)}
        assert seen == leading_positions(rows, g)


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview, np.frombuffer])
def test_any_buffer_is_accepted(kind):
    enc = Encoder(4, 16)
    raw = bytes(range(64))
    enc.set_data(kind(raw) if kind is not np.frombuffer else np.frombuffer(raw, dtype=np.uint8))
    c, p = enc.encode_seeded(3)
    dec = Decoder(4, 16)
    assert dec.consume(kind(c) if kind is not np.frombuffer else np.frombuffer(c, np.uint8), p) == "innovative"
    # A strided (non-contiguous) numpy view is copied, not misread.
    wide = np.zeros(128, dtype=np.uint8)
    wide[::2] = np.frombuffer(raw, np.uint8)
    enc2 = Encoder(4, 16)
    enc2.set_data(wide[::2])
    assert enc2.encode_seeded(3) == (c, p)


def test_bad_input_raises_codec_error_naming_what_was_expected():
    dec = Decoder(4, 8, q=4)
    with pytest.raises(CodecError, match="expected 4"):
        dec.consume(b"\x01\x02\x03", bytes(8))
    with pytest.raises(CodecError, match="expected 8"):
        dec.consume(b"\x01\x02\x03\x04", bytes(7))
    with pytest.raises(CodecError, match="not an element of GF\\(2\\^4\\)"):
        dec.consume(b"\x01\x02\x10\x04", bytes(8))
    with pytest.raises(CodecError, match="between 1 and 8"):
        Encoder(4, 8, q=9)
    with pytest.raises(CodecError, match="multiple of 3"):
        Decoder(4, 10, q=3)
    with pytest.raises(CodecError, match="nothing to recode"):
        Decoder(4, 8).recode(1)
    assert issubclass(CodecError, ValueError)


def test_sizes_past_memory_raise_instead_of_aborting():
    # 2**62 bytes and more: no machine has the address space to give, so
    # the allocation fails wherever this runs.
    with pytest.raises(MemoryError, match="symbols = 4 of symbol_bytes = 1152921504606846976"):
        Encoder(4, 2**60)
    with pytest.raises(MemoryError, match="symbols = 4 of symbol_bytes = 1152921504606846976"):
        Decoder(4, 2**60, q=1)
    with pytest.raises(MemoryError, match="k = 4 symbols of symbol_bytes = 1152921504606846976"):
        codec.LtEncoder(4, 2**60, seed=1)
    with pytest.raises(MemoryError, match="coefficient vector of symbols = 4611686018427387904"):
        codec.coefficients(1, 2**62)
    dec = Decoder(4, 8)
    dec.consume(b"\x01\x00\x00\x00", bytes(8))
    with pytest.raises(MemoryError, match="count = 1152921504606846976 combinations"):
        dec.recode(1, count=2**60)
    # Sizes whose product overflows are refused before anything is allocated.
    with pytest.raises(CodecError, match="symbols = 4 of symbol_bytes = 4611686018427387904 overflow"):
        Encoder(4, 2**62)
    with pytest.raises(CodecError, match="more than a bytes object can hold"):
        codec.coefficients(1, 2**63)
    with pytest.raises(CodecError, match="count = 4611686018427387904 combinations of symbols = 4"):
        dec.recode(1, count=2**62)
    # The decoder is as it was, and recodes.
    assert dec.rank == 1
    c, p = dec.recode(1, count=3)
    assert len(c) == 12 and len(p) == 24


def test_a_negative_field_degree_is_refused_as_other_bad_degrees_are():
    for make in (
        lambda q: Encoder(4, 8, q=q),
        lambda q: Decoder(4, 8, q=q),
        lambda q: codec.SlidingEncoder(8, q=q),
        lambda q: codec.SlidingDecoder(8, q=q),
        lambda q: codec.coefficients(1, 4, q=q),
    ):
        for q in (-1, 0, 9):
            with pytest.raises(CodecError, match=rf"GF\(2\^{q}\): the degree q must be between 1 and 8"):
                make(q)


def test_an_index_outside_the_generation_is_refused():
    dec = Decoder(4, 8)
    for index in (4, 99):
        for ask in (dec.symbol, dec.is_symbol_seen, dec.is_symbol_decoded):
            with pytest.raises(CodecError, match=f"symbol index {index} is out of range: expected below 4"):
                ask(index)
    # Inside it, a symbol not yet received is no error.
    assert (dec.symbol(3), dec.is_symbol_seen(3), dec.is_symbol_decoded(3)) == (None, False, False)


def test_sliding_encoder_refuses_an_empty_window_and_acknowledgements_past_its_end():
    tx = codec.SlidingEncoder(8)
    with pytest.raises(CodecError, match="nothing to encode: the window is empty"):
        tx.encode(1)
    tx.push(bytes(8))
    with pytest.raises(CodecError, match=r"acknowledgement of 100 .* expected at most 1"):
        tx.acknowledge(100)
    assert (tx.start, tx.end) == (0, 1)
    start, c, p = tx.encode(1)
    assert (start, len(c), len(p)) == (0, 1, 8)
    tx.acknowledge(1)
    assert (tx.start, tx.end) == (1, 1)
    with pytest.raises(CodecError, match="nothing to encode"):
        tx.encode(2)


def test_payload_work_releases_the_gil():

    def iterations_inside(work) -> int:
        """How many times this thread runs a loop body strictly inside the
        call of `work` that another thread makes: none can, but at the call's
        edges, while that call holds the GIL."""
        window: list[float] = []

        def run() -> None:
            window.append(time.perf_counter())
            work()
            window.append(time.perf_counter())

        stamps: list[float] = []
        worker = threading.Thread(target=run)
        worker.start()
        while worker.is_alive():
            stamps.append(time.perf_counter())
        worker.join()
        start, end = window
        return sum(start < t < end for t in stamps)

    # One long native call against one long call of `sorted`, which holds the
    # GIL throughout. Beside a call that holds it, this thread runs only in
    # the switch interval at the call's start, however long the call; beside
    # one that releases it, for the whole call. So the count does not depend
    # on how fast the machine is or how busy. Many inputs per output keep the
    # part done with the GIL, making the output bytes, small.
    g, s = 512, 1500
    enc = Encoder(g, s)
    enc.set_data(bytes(g * s))
    rows = b"".join(codec.coefficients(i, g) for i in range(32768))
    shuffled = list(range(1_000_000))
    random.Random(7).shuffle(shuffled)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)
    try:
        native = iterations_inside(lambda: enc.encode_batch(rows))
        holding = iterations_inside(lambda: sorted(shuffled))
    finally:
        sys.setswitchinterval(interval)
    assert native > 10 * holding, (native, holding)


def test_encode_many_matches_single_encodes():
    enc = Encoder(8, 32)
    enc.set_data(bytes(range(256)))
    coefficients, payloads = codec.encode_many(enc, np.arange(5))
    assert coefficients.shape == (5, 8) and payloads.shape == (5, 32)
    for seed in range(5):
        c, p = enc.encode_seeded(seed)
        assert coefficients[seed].tobytes() == c and payloads[seed].tobytes() == p


def test_encode_many_refuses_seeds_that_are_not_unsigned_64_bit():
    enc = Encoder(4, 8)
    enc.set_data(bytes(range(32)))
    for seeds in (np.array([-1]), [3, -1], [2**64], [-1, 2**63]):
        with pytest.raises(OverflowError, match="is out of range: expected an unsigned 64-bit integer"):
            codec.encode_many(enc, seeds)
    with pytest.raises(TypeError, match=r"seeds\[0\] = 1\.5: expected an integer"):
        codec.encode_many(enc, np.array([1.5]))
    top = 2**64 - 1
    coefficients, payloads = codec.encode_many(enc, np.array([top], dtype=np.uint64))
    assert (coefficients[0].tobytes(), payloads[0].tobytes()) == enc.encode_seeded(top)
    assert codec.encode_many(enc, [])[0].shape == (0, 4)


def test_sliding_window_delivers_in_order():
    rng = np.random.default_rng(3)
    tx, rx = codec.SlidingEncoder(16), codec.SlidingDecoder(16)
    packets = [rng.integers(0, 256, 16, dtype=np.uint8).tobytes() for _ in range(50)]
    delivered, nxt, seed = [], 0, 0
    while len(delivered) < len(packets):
        while nxt < len(packets) and tx.end - tx.start < 6:
            assert tx.push(packets[nxt]) == nxt
            nxt += 1
        start, c, p = tx.encode(seed)
        seed += 1
        if rng.random() < 0.3:
            continue
        rx.consume(start, c, p)
        rx.forget_below(start)
        while (item := rx.poll_decoded()) is not None:
            delivered.append(item[1])
        tx.acknowledge(rx.first_unseen)
    assert delivered == packets


def test_lt_round_trip_and_xor():
    k, s = 200, 32
    data = np.random.default_rng(1).integers(0, 256, k * s, dtype=np.uint8).tobytes()
    enc = codec.LtEncoder(k, s, seed=9)
    enc.set_data(data)
    dec = codec.LtDecoder(k, s, seed=9)
    esi = 0
    while not dec.is_complete:
        dec.consume(esi, enc.encode(esi))
        esi += 1
    assert dec.data() == data
    assert sorted(dec.decode_order()) == list(range(k))

    a, b = b"\x01\x02\x03\x04", b"\x10\x20"
    coded = codec.xor_combine([a, b])
    assert coded == b"\x11\x22\x03\x04"
    assert codec.xor_combine([coded, a])[: len(b)] == b


def test_benchmark_tables_put_each_rate_in_its_row_and_column():
    from ncmesh.bench_codec import markdown, with_ratios

    def row(isa, impl, op, field, g, mb):
        return {"isa": isa, "impl": impl, "op": op, "field": field, "g": g, "symbol_bytes": 1500, "mb_per_s": mb}

    rows = with_ratios(
        [
            row("gfni512", "ncmesh", "encode", "gf256", 16, 3000.0),
            row("gfni512", "rlnc-simdx", "encode", "gf256", 16, 1000.0),
            row("gfni512", "rlnc", "encode", "gf256", 16, 1500.0),
            row("gfni512", "ncmesh", "encode", "gf2", 16, 12000.0),
            row("gfni512", "ncmesh-python", "decode", "gf256", 64, 45.0),
            row("gfni512", "ncmesh", "decode", "gf256", 64, 50.0),
            row("gfni512", "ncmesh", "product_l1", "gf256", 32, 96000.0),
            {
                **row("gfni512", "ncmesh", "issue_ceiling", "gf256", 1, 120000.0),
                "vector_bytes": 64,
                "ops_per_vector": 2.0,
            },
            row("gfni512", "isa-l (avx512)", "encode", "gf256", 16, 1000.0),
            # A faster peer on another tier is no peer of this one.
            row("avx2", "ncmesh", "encode", "gf256", 16, 800.0),
            row("avx2", "isa-l (avx2)", "encode", "gf256", 16, 400.0),
            row("avx2", "rlnc-simdx", "encode", "gf256", 16, 9000.0 / 9),
            row("avx2", "ncmesh", "mad", "gf256", 1, 9000.0),
            row("avx2", "isa-l (avx2)", "mad", "gf256", 1, 3000.0),
            # LT against raptorq measured on the same tier in the same run.
            row("avx2", "ncmesh", "lt_decode", "gf2", 1000, 600.0),
            row("avx2", "raptorq", "lt_decode", "gf2", 1000, 400.0),
            row("gfni512", "raptorq", "lt_decode", "gf2", 1000, 500.0),
        ]
    )
    cpu = {"model": "a CPU", "cores": 2, "flags": ["avx2", "gfni", "sse2"], "tiers": ["avx2"], "measured_mhz": 2500.0}
    lines = markdown(rows, cpu)
    lines = lines.splitlines()
    # The best peer is rlnc here, whichever column it sits in; 16 x 3,000 of 96,000 is 50%.
    assert "| encode | 16 | 3,000 | 1,000 | 1,500 | 1,000 (avx512) | – | 2.00x | 3.00x | 50% |" in lines
    assert "| encode | 16 | 800 | 1,000 | – | 400 (avx2) | – | 0.80x | 2.00x | – |" in lines
    assert "| avx2 | 9,000 | 3,000 (avx2) | – | 3.00x | – | – |" in lines
    assert "| encode | 16 | 3,000 | 12,000 | 4.00x |" in lines
    # GFNI-512: 120,000 MB/s is 1,875 M vectors of 64 bytes a second, 2 operations each, at 2,500
    # MHz 1.5 a cycle; the product is 80% of it, encoding at g = 16 16 x 3,000 (ISA-L's 16 x 1,000),
    # decoding at g = 64 64 x 50.
    assert "| gfni512 | 2 | 1.50 | 120,000 | 96,000 | 80% | 40% / – / – | 13% / – / – | – / 3% / – |" in lines
    assert "| decode | 64 | 45.0 | 50.0 | 90% |" in lines
    assert "| decode | 256 | – | – | – |" in lines
    assert "a CPU, 2 cores; flags avx2 gfni; tiers avx2 (the full flags are in codec.json)." in lines
    # Tiers come slowest first, and the single-tier tables are the fastest's.
    assert lines.index("## RLNC over GF(2^8) on avx2") < lines.index("## RLNC over GF(2^8) on gfni512")
    assert "## Fields on gfni512" in lines
    assert "| avx2 | lt_decode | 1000 | 600 | 400 | 1.50x |" in lines


def test_benchmark_ratios_pair_the_rounds_of_each_side():
    from ncmesh.bench_codec import markdown, ratio_of, with_ratios

    def row(impl, op, g, rounds):
        mb = sorted(rounds)[len(rounds) // 2]
        return {"isa": "avx2", "impl": impl, "op": op, "field": "gf256", "g": g, "symbol_bytes": 1500,
                "mb_per_s": mb, "rounds": rounds}  # fmt: skip

    # Round by round 2.0, 300 / 290 and 3.1: their median is 2.0, while the medians' ratio, 300 / 100, pairs
    # the second round's rate of one side with the third's of the other.
    ours, theirs = (
        row("ncmesh", "encode", 16, [100.0, 300.0, 310.0]),
        row("isa-l (avx2)", "encode", 16, [50.0, 290.0, 100.0]),
    )
    assert ratio_of(ours, theirs) == 2.0
    assert ratio_of(ours, {**theirs, "rounds": None}) == 3.0
    assert ratio_of(ours, {**theirs, "rounds": [50.0, 290.0]}) == 3.0
    assert ratio_of(ours, None) is None
    # Against several peers, the least of the ratios: here a peer whose median rate is lower but whose rounds
    # came closer.
    close = row("rlnc", "encode", 16, [80.0, 280.0, 200.0])
    assert ratio_of(ours, close) == 1.25
    rows = with_ratios([ours, theirs, close])
    assert rows[0]["ratio_to_best_peer"] == 1.25
    rows = with_ratios([ours, theirs])
    assert rows[0]["ratio_to_best_peer"] == 2.0
    assert "| encode | 16 | 300 | – | – | 100 (avx2) | – | 2.00x | 2.00x | – |" in markdown(rows).splitlines()
    # The product in L1 against the issue ceiling, also paired: 0.5, 0.75 and 0.31 round by round, where the
    # medians, 300 of 400, would make 75%.
    product = row("ncmesh", "product_l1", 32, [100.0, 300.0, 310.0])
    probe = {**row("ncmesh", "issue_ceiling", 1, [200.0, 400.0, 1000.0]), "vector_bytes": 32, "ops_per_vector": 4.0}
    ceilings = [line for line in markdown([product, probe]).splitlines() if line.startswith("| avx2 | 4 |")]
    assert ceilings == ["| avx2 | 4 | – | 400 | 300 | 50% | – / – / – | – / – / – | – / – / – |"]
