"""benchmarks/time_epochs.py: the epoch estimates the full-tier suite files quote. Each row must
extrapolate the batches it timed to the whole epoch and carry the machine it was timed on, and
--merge must keep an earlier row's machine rather than credit this machine with it."""

import json

import torch

from conftest import load_benchmark_script


def test_rows_extrapolate_to_the_epoch_and_keep_their_own_machine_across_merges(tmp_path):
    suite = tmp_path / "toy.toml"
    suite.write_text('[suite]\nname = "toy"\ndescription = "t"\n[defaults]\nmax_per_split = 200\n'
                     '[[entry]]\ndataset = "trec"\nmodels = ["kim-cnn-rand", "tfidf-lr"]\n'
                     '[[entry]]\ndataset = "mr"\nmodel = "kim-cnn-rand"\n', encoding="utf-8")
    output = tmp_path / "toy_times.json"
    earlier_machine = {"cpu_model": "an earlier machine", "cpu_simd": ["avx512f", "amx_tile"]}
    output.write_text(json.dumps({  # the layout written before rows carried their machine
        "suite": "toy", "commands": ["python time_epochs.py (earlier)"], "machine": earlier_machine,
        "rows": [{"entry": "mr:kim-cnn-rand", "train_epoch_seconds": 9.0},
                 {"entry": "trec:kim-cnn-rand", "train_epoch_seconds": 99.0}]}), encoding="utf-8")
    script = load_benchmark_script("time_epochs")
    assert script.main(["--suite", str(suite), "--batches", "2", "--only", "trec:", "--merge",
                        "--output", str(output)]) == 0
    rows = {row["entry"]: row for row in json.loads(output.read_text())["rows"]}
    # TF-IDF trains no epochs: not timed. The trec row is timed again, the mr row kept.
    assert set(rows) == {"mr:kim-cnn-rand", "trec:kim-cnn-rand"}
    kept, timed = rows["mr:kim-cnn-rand"], rows["trec:kim-cnn-rand"]
    assert kept["train_epoch_seconds"] == 9.0 and "machine" not in kept
    assert kept["file_header_before_rows_had_machines"]["machine"] == earlier_machine
    assert timed["train_epoch_seconds"] != 99.0 and timed["machine"] != earlier_machine
    assert timed["machine"]["cpu_model"] and "cpu_simd" in timed["machine"]
    assert timed["command"].endswith("--only trec: --merge --output " + str(output)) and len(timed["load_average_1_5_15"]["before"]) == 3
    # at most 200 training questions, a dev split carved from them, in batches of the recipe:
    # 2 timed, scaled to all
    assert timed["documents"]["train"] + timed["documents"]["dev"] <= 200 and timed["documents"]["dev"] > 0
    assert timed["train_batches_timed"] == 2 < timed["train_batches"]
    assert timed["train_epoch_seconds"] > 0 and timed["dev_batches_timed"] == timed["dev_batches"]
    assert timed["threads"] == torch.get_num_threads()
    # A second merge keeps both: the old row's nested header, the new row's own machine.
    assert script.main(["--suite", str(suite), "--batches", "2", "--only", "no-such-entry", "--merge",
                        "--output", str(output)]) == 0
    again = {row["entry"]: row for row in json.loads(output.read_text())["rows"]}
    assert again == rows


def test_exact_only_names_whole_entry_ids(tmp_path):
    suite_file = tmp_path / "toy.toml"
    suite_file.write_text('[suite]\nname = "toy"\ndescription = "t"\n[defaults]\nmax_per_split = 200\n'
                          '[[entry]]\ndataset = "trec"\nmodel = "kim-cnn-rand"\n'
                          '[[entry]]\ndataset = "trec"\nmodel = "kim-cnn-rand"\nname = "kim-cnn-rand-rerun"\n'
                          '[[entry]]\ndataset = "trec"\nmodel = "kim-cnn-rand"\nname = "kim-cnn-rand-wide"\n'
                          'overrides = { num_filters = 50 }\n', encoding="utf-8")
    from textcls.benchmark.runner import load_suite

    script = load_benchmark_script("time_epochs")
    suite = load_suite(str(suite_file))
    # A substring also picks the wider variant; --exact only the entry named.
    assert [e.id for e in script._entry_rows(suite, ["trec:kim-cnn-rand"])] == ["trec:kim-cnn-rand", "trec:kim-cnn-rand-wide"]
    assert [e.id for e in script._entry_rows(suite, ["trec:kim-cnn-rand-wide"], exact=True)] == ["trec:kim-cnn-rand-wide"]
    assert script._entry_rows(suite, ["trec:kim-cnn"], exact=True) == []
