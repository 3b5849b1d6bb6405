"""benchmarks/paired_seeds.py: the paired t-test over seeds between two entries of a report."""

import json

import pytest
from scipy import stats

from conftest import load_benchmark_script

script = load_benchmark_script("paired_seeds")


def report(base, other, dataset="mpqa"):
    def entry(name, accuracies):
        return {"dataset": dataset, "name": name,
                "runs": [{"seed": s, "accuracy": a / 100, "status": "ok"} for s, a in enumerate(accuracies)]}
    return {"entries": [entry("tfidf-lr", base), entry("tfidf-lr-chars", other)]}


def test_the_test_is_scipys_paired_t_over_the_shared_seeds():
    row = script.paired(report([85.0, 86.0, 84.0], [86.0, 86.5, 85.5]), "mpqa", "tfidf-lr", "tfidf-lr-chars")
    expected = stats.ttest_rel([86.0, 86.5, 85.5], [85.0, 86.0, 84.0])
    assert row["differences"] == pytest.approx([1.0, 0.5, 1.5])
    assert row["t"] == pytest.approx(expected.statistic) and row["p_two_sided"] == pytest.approx(expected.pvalue)


def test_the_same_difference_on_every_seed_leaves_t_and_p_empty_and_the_files_are_written(tmp_path, monkeypatch):
    """Two deterministic models on an official split: the t-test is undefined (it was inf, and the
    JSON writer refused it)."""
    results = tmp_path / "benchmarks" / "results"
    results.mkdir(parents=True)
    (results / "toy.json").write_text(json.dumps(report([81.16] * 3, [82.04] * 3, "sst2")))
    monkeypatch.setattr(script, "REPO", tmp_path)
    out = tmp_path / "paired" / "toy_sst2"
    script.main(["--suite", "toy", "--dataset", "sst2", "--pair", "tfidf-lr", "tfidf-lr-chars", "--output", str(out)])
    row = json.loads(out.with_suffix(".json").read_text())["pairs"][0]
    assert row["t"] is None and row["p_two_sided"] is None and row["mean_difference"] == pytest.approx(0.88)
    assert "| +0.88 ± 0.00 | – (the same difference on every seed) |" in out.with_suffix(".md").read_text()
