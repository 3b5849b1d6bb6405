"""benchmarks/denormals.py: the kept-against-flushed epoch times the engine's docstring cites must
time the same model both ways, on the same batches and dropout masks."""

import torch

from conftest import run_ways_script


def test_both_ways_time_the_same_model_and_flushing_moves_the_weights_by_rounding_at_most(tmp_path):
    _, _, row = run_ways_script(tmp_path, "denormals", "trec:lstm")
    assert row["flushed_epoch_seconds"] > 0 and row["kept_epoch_seconds"] > 0
    assert row["kept_over_flushed"] == row["kept_epoch_seconds"] / row["flushed_epoch_seconds"]
    # Three Adam steps on the same batches: values below 1.2e-38, flushed or kept, move no weight
    # beyond float32 rounding.
    assert row["largest_weight_difference"] < 1e-5
    # The patch is undone: the process keeps its own mode.
    assert torch.tensor(1e-39).mul(1.0).item() != 0.0
