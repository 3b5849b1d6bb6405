"""benchmarks/missing_runs.py: the queue of runs a suite's committed report still lacks."""

import json

from conftest import load_benchmark_script


def runs(seeds, failed=()):
    return [{"seed": s, "accuracy": None if s in failed else 0.9} for s in seeds]


def test_lists_the_missing_seeds_seed_major_in_suite_order(tmp_path):
    suite = tmp_path / "toy.toml"
    suite.write_text('[suite]\nname = "toy"\ndescription = "t"\n[defaults]\nseeds = [0, 1, 2]\n'
                     '[[entry]]\ndataset = "trec"\nmodel = "tfidf-lr"\n'
                     '[[entry]]\ndataset = "mr"\nmodels = ["tfidf-nb", "fasttext-bag"]\n', encoding="utf-8")
    results = tmp_path / "results"
    results.mkdir()
    (results / "toy.json").write_text(json.dumps({"entries": [
        {"id": "trec:tfidf-lr", "runs": runs([0, 1, 2])},
        {"id": "mr:tfidf-nb", "runs": runs([0, 1], failed=(1,))},  # seed 1 failed: it is run again
    ]}), encoding="utf-8")
    script = load_benchmark_script("missing_runs")
    assert script.missing_runs(str(suite), results) == [
        ("mr:fasttext-bag", 0), ("mr:tfidf-nb", 1), ("mr:fasttext-bag", 1), ("mr:tfidf-nb", 2), ("mr:fasttext-bag", 2)]
    assert script.missing_runs(str(suite), results, only=["fasttext"]) == [
        ("mr:fasttext-bag", 0), ("mr:fasttext-bag", 1), ("mr:fasttext-bag", 2)]
    # no report yet: every run of every entry
    assert len(script.missing_runs(str(suite), tmp_path / "none")) == 9
