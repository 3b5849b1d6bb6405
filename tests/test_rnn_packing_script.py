"""benchmarks/rnn_packing.py: the packed-against-unpacked epoch times docs/models/fcsr.md quotes
must time the same model on both paths and show that both give the same logits."""

import json

from conftest import load_benchmark_script


def test_both_paths_time_the_same_model_and_agree_on_its_logits(tmp_path, capsys):
    suite = tmp_path / "toy.toml"
    suite.write_text('[suite]\nname = "toy"\ndescription = "t"\n[defaults]\nmax_per_split = 200\n'
                     '[[entry]]\ndataset = "trec"\nmodel = "bilstm"\n', encoding="utf-8")
    script = load_benchmark_script("rnn_packing")
    output = tmp_path / "packing"
    assert script.main(["--suite", str(suite), "--entries", "trec:bilstm", "--batches", "2",
                        "--output", str(output)]) == 0
    result = json.loads((tmp_path / "packing.json").read_text())
    row = result["runs"]["trec:bilstm"]
    assert row["train_batches_timed"] == 2 < row["train_batches"]
    assert row["packed_epoch_seconds"] > 0 and row["unpacked_epoch_seconds"] > 0
    assert row["packed_over_unpacked"] == row["packed_epoch_seconds"] / row["unpacked_epoch_seconds"]
    # One model, two ways of reading the padding: float32 rounding apart.
    assert row["largest_logit_difference"] < 1e-4
    # The same batches and dropout masks on both paths: their weights part by rounding alone.
    assert row["largest_weight_difference"] < 1e-4
    assert result["command"].startswith("OMP_NUM_THREADS=1 python benchmarks/rnn_packing.py --suite")
    assert "| `trec:bilstm` | 2 / " in (tmp_path / "packing.md").read_text()
    # A misspelt id: one line, exit 2, nothing written.
    assert script.main(["--suite", str(suite), "--entries", "trec:bilstn", "--output", str(tmp_path / "no")]) == 2
    assert "no entry 'trec:bilstn'" in capsys.readouterr().err and not (tmp_path / "no.json").exists()
