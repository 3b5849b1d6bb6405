"""benchmarks/unseen_test_words.py: the shares the vocabulary diagnosis quotes must count test
tokens that are unseen in training *and* have a vector, nothing else."""

import json

import pytest

from conftest import load_benchmark_script


@pytest.fixture(scope="module")
def unseen_test_words():
    return load_benchmark_script("unseen_test_words")


def test_counts_test_tokens_unseen_in_training_that_the_vectors_have(unseen_test_words):
    train = [["the", "film", "is", "good"], ["a", "bad", "film"]]
    # "superb" is unseen and has a vector; "zzyzx" is unseen without one; "film" is seen.
    # The last document holds only a word without a vector: it is not touched.
    test = [["superb", "film"], ["zzyzx", "film", "is", "superb"], ["good"], ["zzyzx"]]
    known = {"the", "film", "is", "good", "a", "bad", "superb"}
    counted = unseen_test_words.count_unseen(train, test, known)
    assert counted == {"test_tokens": 8, "unseen_in_glove_pct": round(100 * 2 / 8, 2),
                       "test_documents": 4, "documents_touched_pct": round(100 * 2 / 4, 1)}
    # A word seen in training is never counted, whatever the vectors hold.
    assert unseen_test_words.count_unseen(test, test, known)["unseen_in_glove_pct"] == 0.0


def test_writes_the_table_for_the_named_datasets(unseen_test_words, tmp_path, monkeypatch):
    monkeypatch.setattr(unseen_test_words, "glove_words", lambda: {"what", "city", "who"})
    unseen_test_words.main(["--datasets", "trec", "--output", str(tmp_path / "out")])
    table = (tmp_path / "out.md").read_text()
    assert "| trec |" in table and "| mr |" not in table

    record = json.loads((tmp_path / "out.json").read_text())
    assert record["command"].endswith("--datasets trec --output " + str(tmp_path / "out"))
    assert set(record["results"]) == {"trec"} and record["results"]["trec"]["test_documents"] == 500
