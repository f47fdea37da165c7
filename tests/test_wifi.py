"""The shared 802.11 channel: Bianchi's model against independently worked
numbers and a slotted simulation of its own assumptions, the simulator
against the model, and the channel's tables and errors from Python."""

from __future__ import annotations

import itertools
import json
import math
import random

import pytest
from typer.testing import CliRunner

import ncmesh
from ncmesh.cli import app
from ncmesh.experiments import wifi
from ncmesh.models import ModelParameterError, bianchi
from ncmesh.paths import scenario


def test_timings_of_a_1500_byte_payload_on_802_11b():
    basic = bianchi.dsss_timing(1500, 11.0, 1.0, "basic")
    # DATA 192 + ceil(1536 * 8 / 11) = 1310 us, SIFS 10, ACK 192 + 112 = 304, DIFS 50.
    assert basic.success == pytest.approx(1674e-6)
    # After a collision: DATA and EIFS = SIFS + DIFS + ACK at 1 Mbit/s = 364 us.
    assert basic.collision == pytest.approx(1310e-6 + 364e-6)
    assert bianchi.dsss_timing(collision_ifs="difs").collision == pytest.approx(1360e-6)
    rts = bianchi.dsss_timing(access="rts")
    # RTS 352 + SIFS + CTS 304 + SIFS before the basic exchange; a collision costs the RTS and EIFS.
    assert rts.success == pytest.approx((352 + 10 + 304 + 10 + 1674) * 1e-6)
    assert rts.collision == pytest.approx((352 + 364) * 1e-6)


def test_one_station_sends_a_frame_per_mean_backoff_and_exchange():
    # n = 1: no collisions, tau = 2 / (W + 1), so S = payload / (sigma (W - 1) / 2 + Ts).
    timing = bianchi.dsss_timing()
    expected = 1500 * 8 / (20e-6 * 31 / 2 + 1674e-6)
    assert bianchi.throughput(1, timing) == pytest.approx(expected, rel=1e-12)
    tau, p = bianchi.transmit_probability(1)
    assert (tau, p) == (pytest.approx(2 / 33), 0.0)


@pytest.mark.parametrize("n", [2, 5, 10, 20, 50])
def test_the_fixed_point_is_bianchis_closed_form(n):
    tau, p = bianchi.transmit_probability(n)
    w, m = 32, 5
    closed = 2 * (1 - 2 * p) / ((1 - 2 * p) * (w + 1) + p * w * (1 - (2 * p) ** m))  # Bianchi eq. (7)
    assert tau == pytest.approx(closed, rel=1e-9)
    assert p == pytest.approx(1 - (1 - tau) ** (n - 1), abs=1e-9)  # eq. (9)
    # Many attempts are as good as unlimited ones.
    assert bianchi.transmit_probability(n, attempts=500)[0] == pytest.approx(tau, rel=1e-6)


def _slotted(n: int, slots: int, seed: int = 3) -> float:
    """Bianchi's own assumptions simulated slot by slot: n stations, backoff
    stage doubling to CWmax, a collision whenever two counters hit zero together."""
    rng = random.Random(seed)
    stage = [0] * n
    counter = [rng.randrange(32) for _ in range(n)]
    attempts = collisions = 0
    for _ in range(slots):
        ready = [i for i in range(n) if counter[i] == 0]
        for i in range(n):
            counter[i] -= 1
        for i in ready:
            attempts += 1
            if len(ready) > 1:
                collisions += 1
                stage[i] = min(stage[i] + 1, 5)
            else:
                stage[i] = 0
            counter[i] = rng.randrange(32 << stage[i])
    return collisions / attempts


@pytest.mark.parametrize("n", [5, 20])
def test_the_collision_probability_agrees_with_a_slotted_simulation(n):
    assert _slotted(n, 200_000) == pytest.approx(bianchi.collision_probability(n), abs=0.01)


def test_throughput_falls_with_contention_and_rts_cts_falls_less():
    basic, rts = bianchi.dsss_timing(access="basic"), bianchi.dsss_timing(access="rts")
    ns = [2, 5, 10, 20, 50]
    b = [bianchi.throughput(n, basic) for n in ns]
    r = [bianchi.throughput(n, rts) for n in ns]
    assert all(x > y for x, y in itertools.pairwise(b))
    assert (b[0] - b[-1]) / b[0] > 2 * (r[0] - r[-1]) / r[0]


@pytest.mark.parametrize(
    ("call", "name", "message"),
    [
        (lambda: bianchi.transmit_probability(0), "n", "n must be an integer >= 1, got 0"),
        (
            lambda: bianchi.transmit_probability(5, cw_min=0),
            "cw_max",
            "cw_max must be at least cw_min = 0 >= 1, got 1023",
        ),
        (
            lambda: bianchi.collision_probability(5, cw_min=63, cw_max=31),
            "cw_max",
            "cw_max must be at least cw_min = 63 >= 1, got 31",
        ),
        (lambda: bianchi.transmit_probability(5, attempts=0.5), "attempts", "attempts must be at least 1, got 0.5"),
        (
            lambda: bianchi.dsss_timing(access="cts-to-self"),
            "access",
            'access must be "basic" or "rts", got \'cts-to-self\'',
        ),
        (
            lambda: bianchi.dsss_timing(collision_ifs="sifs"),
            "collision_ifs",
            'collision_ifs must be "difs" or "eifs", got \'sifs\'',
        ),
        (
            lambda: bianchi.dsss_timing(preamble="medium"),
            "preamble",
            'preamble must be "long" or "short", got \'medium\'',
        ),
    ],
)
def test_bad_model_parameters_name_themselves(call, name, message):
    with pytest.raises(ModelParameterError) as refused:
        call()
    assert (refused.value.name, str(refused.value)) == (name, message)


def test_the_smallest_parameters_the_model_takes_are_accepted():
    # One station, a window of two slots, one attempt: tau = 2 / (W + 1) = 2 / 3.
    assert bianchi.transmit_probability(1, cw_min=1, cw_max=1, attempts=1) == (pytest.approx(2 / 3), 0.0)


def test_a_short_preamble_shortens_every_frame_but_those_at_1_mbit_s():
    # DATA 96 + ceil(1536 * 8 / 11) = 1214 us; the ACK at 1 Mbit/s keeps the long PLCP (304 us).
    assert bianchi.dsss_timing(preamble="short").success == pytest.approx((1214 + 10 + 304 + 50) * 1e-6)
    # At 2 Mbit/s the ACK takes the short one too: 96 + 56 = 152 us.
    assert bianchi.dsss_timing(control_mbps=2.0, preamble="short").success == pytest.approx(
        (1214 + 10 + 152 + 50) * 1e-6
    )


@pytest.mark.parametrize("n", [2, 10, 30])
def test_a_retry_limit_truncates_the_backoff_chain(n):
    # One attempt: every station stays at stage 0, tau = 2 / (W + 1) whatever the collisions.
    tau, p = bianchi.transmit_probability(n, attempts=1)
    assert tau == pytest.approx(2 / 33, rel=1e-12)
    assert p == pytest.approx(1 - (1 - 2 / 33) ** (n - 1), rel=1e-9)
    # Seven attempts: the fixed point of the truncated chain, iterated here on
    # its own (damped: the plain iteration can settle into a two-cycle).
    w, m, stages = 32, 5, range(7)
    t = 0.1
    for _ in range(5000):
        q = 1 - (1 - t) ** (n - 1)
        t += 0.2 * (sum(q**i for i in stages) / sum(q**i * (2 ** min(i, m) * w + 1) / 2 for i in stages) - t)
    assert bianchi.transmit_probability(n, attempts=7)[0] == pytest.approx(t, rel=1e-6)
    # The collision probability and the throughput take the same chain, defaults included.
    for attempts in (1, 7, math.inf):
        tau, p = bianchi.transmit_probability(n, attempts=attempts)
        assert bianchi.collision_probability(n, attempts=attempts) == p
        timing = bianchi.dsss_timing()
        p_tr = 1 - (1 - tau) ** n
        p_s = n * tau * (1 - tau) ** (n - 1) / p_tr
        busy = (1 - p_tr) * timing.slot + p_tr * p_s * timing.success + p_tr * (1 - p_s) * timing.collision
        expected = p_s * p_tr * 1500 * 8 / busy  # eq. (13)
        assert bianchi.throughput(n, timing, attempts=attempts) == pytest.approx(expected, rel=1e-12)
    assert bianchi.collision_probability(n) == bianchi.transmit_probability(n, 31, 1023)[1]


def test_the_simulator_is_within_3_percent_of_bianchi():
    rows = wifi.bianchi_rows(stations=(1, 10, 50), duration_s=8.0, seeds=(1,))
    assert {r["access"] for r in rows} == {"basic", "rts"}
    for r in rows:
        assert abs(r["ratio"] - 1) < 0.03, r


def test_validate_bianchi_prints_the_documented_rows():
    result = CliRunner().invoke(
        app, ["validate", "bianchi", "--stations", "2", "--duration", "3", "--seeds", "1", "--json"]
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)["rows"]
    assert [r["access"] for r in rows] == ["basic", "rts"]
    for r in rows:
        assert {"n", "access", "rate_mbps", "frame_bytes", "model_mbps", "simulated_mbps"} <= set(r)
        assert (r["n"], r["rate_mbps"], r["frame_bytes"]) == (2, 11.0, 1500)
    bad = CliRunner().invoke(app, ["validate", "bianchi", "--stations", "a,b"])
    assert bad.exit_code == 2 and "--stations" in bad.output


def test_the_channel_tables_from_python():
    r = ncmesh.run(scenario("wifi-x"), duration=3)
    assert list(r.radios.columns) == [
        "node",
        "airtime_s",
        "data_frames",
        "broadcasts",
        "retries",
        "acked",
        "retry_drops",
        "collisions",
        "received",
        "overheard",
        "duplicates",
    ]
    assert sorted(r.radios.node) == [1, 2, 3, 4, 5]
    assert list(r.pairs.columns) == ["from", "to", "sent", "received", "collided", "errored"]
    assert len(r.pairs) == 12, "the six pairs in reach, both ways"
    wired = ncmesh.run(scenario("single-lossy-link"), duration=1)
    assert len(wired.radios) == 0 and len(wired.pairs) == 0


def test_overhearing_matches_what_did_not_collide_times_one_minus_fer():
    for row in wifi.overhearing(fer=0.3, duration_s=10.0):
        clean = row["sent"] - row["collided"]
        sd = math.sqrt(0.3 * 0.7 / clean)
        assert abs(row["overheard_share"] - row["expected_share"]) < 5 * sd * clean / row["sent"] + 1 / row["sent"], row


def test_a_bad_channel_is_refused_with_file_line_and_key(tmp_path):
    text = scenario("wifi-line").read_text().replace("[0.6, 0.0, 0.0]", "[1.6, 0.0, 0.0]", 1)
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ncmesh.ScenarioError) as e:
        ncmesh.run(path)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "1.6" in ln)
    assert str(e.value) == f"{path}:{line}: wifi.fer[2][0]: expected a probability in [0, 1], found 1.6"
