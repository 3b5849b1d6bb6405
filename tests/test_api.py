"""The Classifier estimator and run directories: round trips, sklearn contracts, bad checkpoints."""

import json

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

import textcls
from textcls import Classifier
from textcls.errors import CheckpointError, ConfigError, DataError


@pytest.fixture(scope="module")
def trec_small():
    return textcls.load_dataset("trec", max_per_split=600)


@pytest.fixture(scope="module")
def fitted_cnn(trec_small):
    return Classifier("kim-cnn-nonstatic", epochs=2, batch_size=50).fit_dataset(trec_small)


@pytest.fixture(scope="module")
def fitted_lr(trec_small):
    return Classifier("tfidf-lr").fit_dataset(trec_small)


def test_neural_save_load_predict_round_trip_identical(fitted_cnn, trec_small, tmp_path):
    texts = list(trec_small["test"]["text"][:40]) + ["", "zzqx unseen words only"]
    before = fitted_cnn.predict_proba(texts)
    fitted_cnn.save_pretrained(tmp_path / "run")
    names = sorted(p.name for p in (tmp_path / "run").iterdir())
    assert names == ["config.json", "model.safetensors", "tokenizer.json"]
    loaded = Classifier.from_pretrained(tmp_path / "run")
    after = loaded.predict_proba(texts)
    np.testing.assert_array_equal(before, after)
    assert list(loaded.predict(texts)) == list(fitted_cnn.predict(texts))
    assert before.shape == (42, 6)
    np.testing.assert_allclose(before.sum(axis=1), 1.0, rtol=1e-5)


def test_classic_save_load_round_trip_identical(fitted_lr, trec_small, tmp_path):
    texts = list(trec_small["test"]["text"][:50])
    before = fitted_lr.predict_proba(texts)
    fitted_lr.save_pretrained(tmp_path / "lr")
    after = Classifier.from_pretrained(tmp_path / "lr").predict_proba(texts)
    np.testing.assert_array_equal(before, after)


def test_classifier_learns_on_real_data(fitted_cnn, fitted_lr, trec_small):
    # Six classes, so chance is about 0.2-0.3 (majority class); both must clearly beat it.
    for clf in (fitted_cnn, fitted_lr):
        metrics = clf.evaluate(trec_small["test"])
        assert metrics["accuracy"] > 0.5, (clf.model, metrics["accuracy"])


def test_sklearn_clone_and_grid_search(trec_small):
    texts = list(trec_small["train"]["text"][:300])
    labels = list(trec_small["train"]["label"][:300])
    clf = Classifier("tfidf-lr", seed=3)
    twin = clone(clf)
    assert twin.get_params() == clf.get_params()
    assert twin is not clf
    grid = GridSearchCV(Classifier("fasttext-bag", epochs=1), {"lr": [0.05, 0.5]}, cv=2)
    grid.fit(texts, labels)
    assert grid.best_params_["lr"] in (0.05, 0.5)
    assert set(grid.predict(texts[:5])) <= set(labels)


def test_integer_labels_come_back_as_integers():
    texts = ["good great fine", "bad awful poor", "great good", "awful bad"] * 10
    y = [1, 0, 1, 0] * 10
    clf = Classifier("tfidf-lr").fit(texts, y)
    predicted = clf.predict(["good great"])
    assert predicted[0] == 1 and isinstance(predicted[0].item(), int)
    assert clf.score(texts, y) == 1.0


def test_unknown_model_lists_close_names():
    with pytest.raises(ConfigError, match="kim-cnn"):
        Classifier("kim-cnn-nonstatc").fit(["a b", "c d"], ["x", "y"])


def test_mismatched_lengths_are_a_data_error():
    with pytest.raises(DataError, match="2 texts but 1 labels"):
        Classifier("tfidf-lr").fit(["a", "b"], ["x"])


def test_corrupt_run_directory_names_the_file(fitted_cnn, tmp_path):
    run = fitted_cnn.save_pretrained(tmp_path / "run")
    (run / "model.safetensors").write_bytes(b"not safetensors")
    with pytest.raises(CheckpointError, match="model.safetensors"):
        Classifier.from_pretrained(run)
    fitted_cnn.save_pretrained(run)
    config = json.loads((run / "config.json").read_text())
    config["vocab_size"] += 7
    (run / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="does not match config.json"):
        Classifier.from_pretrained(run)
    (run / "config.json").write_text("{broken")
    with pytest.raises(CheckpointError, match="config.json"):
        Classifier.from_pretrained(run)
    with pytest.raises(CheckpointError, match="no such run directory"):
        Classifier.from_pretrained(tmp_path / "missing")


def test_multi_label_reuters_slice(tmp_path):
    reuters = textcls.load_dataset("reuters", max_per_split=500)
    assert reuters.multi_label
    # Adam instead of fastText's SGD: the mean-over-labels BCE shrinks each SGD step by C.
    clf = Classifier("fasttext-bag", epochs=15, params={"optimizer": "adam", "lr": 0.05}).fit_dataset(reuters)
    metrics = clf.evaluate(reuters["test"])
    assert {"micro_f1", "macro_f1", "hamming_loss"} <= set(metrics)
    assert metrics["micro_f1"] > 0.5
    predicted = clf.predict(list(reuters["test"]["text"][:20]))
    assert all(isinstance(row, list) for row in predicted)
    clf.save_pretrained(tmp_path / "ml")
    again = Classifier.from_pretrained(tmp_path / "ml")
    assert again.multi_label_
    np.testing.assert_array_equal(again.predict_proba(["wheat exports rose"]), clf.predict_proba(["wheat exports rose"]))
