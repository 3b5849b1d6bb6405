"""benchmarks/rnn_packing.py: the packed-against-unpacked epoch times docs/models/fcsr.md quotes
must time the same model on both paths and show that both give the same logits."""

from conftest import run_ways_script


def test_both_paths_time_the_same_model_and_agree_on_its_logits(tmp_path, capsys):
    script, _, row = run_ways_script(tmp_path, "rnn_packing", "trec:bilstm")
    assert row["packed_epoch_seconds"] > 0 and row["unpacked_epoch_seconds"] > 0
    assert row["packed_over_unpacked"] == row["packed_epoch_seconds"] / row["unpacked_epoch_seconds"]
    # One model, two ways of reading the padding: float32 rounding apart.
    assert row["largest_logit_difference"] < 1e-4
    # The same batches and dropout masks on both paths: their weights part by rounding alone.
    assert row["largest_weight_difference"] < 1e-4
    # A misspelt id: one line, exit 2, nothing written.
    assert script.main(["--suite", str(tmp_path / "toy.toml"), "--entries", "trec:bilstn",
                        "--output", str(tmp_path / "no")]) == 2
    assert "no entry 'trec:bilstn'" in capsys.readouterr().err and not (tmp_path / "no.json").exists()
