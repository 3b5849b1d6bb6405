"""benchmarks/denormals.py: the flushed-against-kept epoch times the engine's docstring cites must
time the same model both ways, on the same batches and dropout masks."""

import json

import torch

from conftest import load_benchmark_script


def test_both_ways_time_the_same_model_and_flushing_changes_the_weights_by_rounding_at_most(tmp_path, capsys):
    suite = tmp_path / "toy.toml"
    suite.write_text('[suite]\nname = "toy"\ndescription = "t"\n[defaults]\nmax_per_split = 200\n'
                     '[[entry]]\ndataset = "trec"\nmodel = "lstm"\n', encoding="utf-8")
    script = load_benchmark_script("denormals")
    output = tmp_path / "denormals"
    assert script.main(["--suite", str(suite), "--entries", "trec:lstm", "--batches", "2",
                        "--output", str(output)]) == 0
    result = json.loads((tmp_path / "denormals.json").read_text())
    row = result["runs"]["trec:lstm"]
    assert row["train_batches_timed"] == 2 < row["train_batches"]
    assert row["flushed_epoch_seconds"] > 0 and row["kept_epoch_seconds"] > 0
    assert row["kept_over_flushed"] == row["kept_epoch_seconds"] / row["flushed_epoch_seconds"]
    # Three Adam steps on the same batches and masks: values below 1.2e-38 flushed or kept move
    # no weight beyond float32 rounding (a dropout mask drawn differently would move them ~1e-3).
    assert row["largest_weight_difference"] < 1e-5
    assert result["command"].startswith("OMP_NUM_THREADS=1 python benchmarks/denormals.py --suite")
    assert "| `trec:lstm` | 2 / " in (tmp_path / "denormals.md").read_text()
    # The patch is undone: the process keeps its own mode.
    assert torch.tensor(1e-39).mul(1.0).item() != 0.0
    assert script.main(["--suite", str(suite), "--entries", "trec:lstn", "--output", str(tmp_path / "no")]) == 2
    assert "no entry 'trec:lstn'" in capsys.readouterr().err and not (tmp_path / "no.json").exists()
