"""The simulator's TCP against independent references (docs/validation.md)."""

import numpy as np

from ncmesh.experiments import validation


def test_reno_agrees_with_padhye_full_model_within_20_percent():
    table = validation.tcp_against_padhye(duration_s=1500.0, seeds=(1, 2))
    assert list(table.loss) == list(validation.PADHYE_LOSSES)
    for row in table.itertuples():
        assert 0.8 <= row.ratio <= 1.2, (
            f"p={row.loss}: simulated {row.sim_pkts_per_s:.1f} vs model {row.model_pkts_per_s:.1f} pkt/s"
        )


def test_chain_goodput_falls_monotonically_with_per_hop_loss():
    table = validation.chain_goodput(losses=(0.0, 0.01, 0.02, 0.05), duration_s=400.0, seeds=(1, 2))
    assert np.all(np.diff(table.goodput_bps) < 0), table
    # Lossless, one flow fills the 2 Mbit/s hops with 1000-byte payloads in 1040-byte packets.
    assert table.goodput_bps.iloc[0] > 0.95 * 2e6 * 1000 / 1040


def test_identical_flows_share_a_bottleneck_fairly():
    table = validation.bottleneck_fairness(duration_s=200.0)
    for row in table.itertuples():
        assert row.fairness >= 0.95, f"{row.variant}: Jain's index {row.fairness:.3f}"
        assert row.total_bps > 0.9 * 10e6 * 1000 / 1040, f"{row.variant} leaves the bottleneck idle"
