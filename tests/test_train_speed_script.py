"""benchmarks/train_speed.py: its CNN step is the engine's training step on a real MR batch
(the script reaches into ``train.engine``'s private helpers, so a refactor there must keep it working)."""

import pytest
import torch

from conftest import load_benchmark_script
from textcls import load_dataset


@pytest.fixture(scope="module")
def train_speed():
    return load_benchmark_script("train_speed")


@pytest.mark.parametrize("preset", ["spe-cnn", "kim-cnn-static"])
def test_cnn_step_lowers_the_loss_of_its_batch_and_counts_flops(train_speed, preset):
    case = train_speed._CnnStep(preset, load_dataset("mr", max_per_split=300), "fp32")

    def batch_loss() -> float:
        case.model.eval()
        with torch.no_grad():
            loss = case.criterion(train_speed.engine._logits(case.model(case.batch)).float(), case.batch["labels"])
        case.model.train()
        return float(loss)

    before = batch_loss()
    for _ in range(30):
        case.step()
    assert batch_loss() < 0.9 * before
    batch, length = case.batch["input_ids"].shape
    # At least the convolutions' multiply-adds: 2 FLOPs each, forward only, for every position.
    assert case.flops() > 2 * batch * length * case.model.embedding.weight.shape[1]
