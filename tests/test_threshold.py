"""A multi-label run's decision threshold: one rule (config.json's ``threshold``, else 0.5;
``artifacts.run_threshold``) and one check (in (0, 1], ``artifacts.check_threshold``, at
``read_config``) for every path: the Classifier (predict, score, evaluate), ``textcls predict``'s
Predictor, the server, the ONNX export and its predictor, and the model card."""

import json
import shutil

import datasets
import numpy as np
import pytest
from fastapi.testclient import TestClient

from textcls import Classifier, artifacts
from textcls.errors import CheckpointError, ConfigError
from textcls.model_hub import model_card
from textcls.predictor import Predictor
from textcls.serve import create_app

TEXTS = ["red apple", "green apple", "red car", "blue car", "red green thing", "blue thing"] * 4
LABELS = [["red", "fruit"], ["green", "fruit"], ["red"], ["blue"], ["red", "green"], ["blue"]] * 4
PROBE = ["red apple", "blue car"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    clf = Classifier("fasttext-bag", epochs=30, params={"optimizer": "adam", "lr": 0.05}).fit(TEXTS, LABELS)
    folder = tmp_path_factory.mktemp("ml") / "run"
    clf.save_pretrained(folder)
    return folder, clf.predict_proba(PROBE)


def _cut(probs: np.ndarray) -> float:
    """A threshold under 0.5 that adds the most probable class below 0.5 to the first text's
    labels, far enough from every probability that kernel rounding cannot move a class across."""
    row = np.sort(probs[0])
    below = row[row < 0.5]
    assert len(below) >= 2 and below[-1] - below[-2] > 1e-4, probs
    return float((below[-1] + below[-2]) / 2)


def _with_threshold(run, tmp_path, value, name="t"):
    copy = tmp_path / name
    shutil.copytree(run, copy)
    config = json.loads((copy / "config.json").read_text())
    config["threshold"] = value
    (copy / "config.json").write_text(json.dumps(config))
    return copy


def _labels(probs, cut, classes):
    return [[str(c) for c, p in zip(classes, row) if p >= cut] for row in probs]


def test_every_path_uses_the_runs_saved_threshold(run, tmp_path):
    folder, probs = run
    cut = _cut(probs)
    copy = _with_threshold(folder, tmp_path, cut)
    clf = Classifier.from_pretrained(copy)
    expected = _labels(probs, cut, clf.classes_)
    assert expected != _labels(probs, 0.5, clf.classes_)  # the threshold changes the answer
    assert clf.threshold_ == cut
    assert [list(map(str, row)) for row in clf.predict(PROBE)] == expected
    assert clf.score(PROBE, expected) == 1.0
    split = datasets.Dataset.from_dict({"text": PROBE, "labels": expected})
    assert clf.evaluate(split)["threshold"] == cut
    assert Predictor.load(copy).predict(PROBE) == expected  # textcls predict
    with TestClient(create_app(copy, freeze_gc=False)) as client:
        assert client.get("/metadata").json()["threshold"] == cut
        answers = client.post("/predict", json={"texts": PROBE}).json()["predictions"]
    assert [a["labels"] for a in answers] == expected
    # save_pretrained keeps it, and a fresh fit starts from the default
    clf.save_pretrained(tmp_path / "again")
    assert Classifier.from_pretrained(tmp_path / "again").threshold_ == cut
    assert Classifier.from_pretrained(folder).threshold_ == 0.5
    assert "threshold " + format(cut, "g") in model_card(artifacts.read_config(copy), None, "me/ml")


@pytest.mark.parametrize("value, said", [(1.5, "1.5 is outside its allowed range (0, 1]"),
                                         (0, "0.0 is outside its allowed range (0, 1]"),
                                         ("0.3", "'0.3' is not a number")])
def test_a_bad_saved_threshold_is_refused_by_every_path(run, tmp_path, value, said):
    copy = _with_threshold(run[0], tmp_path, value)
    match = f"{copy / 'config.json'}: 'threshold' = {said}"
    for load in (Classifier.from_pretrained, Predictor.load, lambda r: create_app(r, freeze_gc=False)):
        with pytest.raises(CheckpointError, match=match.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
            load(copy)


def test_a_threshold_set_by_hand_is_checked_and_saved(run, tmp_path):
    clf = Classifier.from_pretrained(run[0])
    clf.threshold_ = 2
    with pytest.raises(ConfigError, match=r"Classifier.threshold_ = 2.0 is outside its allowed range \(0, 1\]"):
        clf.predict(PROBE)
    clf.threshold_ = 0.25
    clf.save_pretrained(tmp_path / "saved")
    assert json.loads((tmp_path / "saved" / "config.json").read_text())["threshold"] == 0.25


def test_the_onnx_export_carries_the_threshold(run, tmp_path):
    from textcls.export import export_onnx
    from textcls.onnx_predictor import OnnxClassifier

    folder, probs = run
    cut = _cut(probs)
    copy = _with_threshold(folder, tmp_path, cut)
    export_onnx(copy, tmp_path / "onnx")
    side = json.loads((tmp_path / "onnx" / "onnx.json").read_text())
    assert side["threshold"] == cut
    onnx_clf = OnnxClassifier.load(tmp_path / "onnx", threads=1)
    assert onnx_clf.threshold == cut
    expected = _labels(probs, cut, onnx_clf.classes_)
    assert [list(map(str, row)) for row in onnx_clf.predict(PROBE)] == expected
    side["threshold"] = 1.5
    (tmp_path / "onnx" / "onnx.json").write_text(json.dumps(side))
    with pytest.raises(CheckpointError, match="field 'threshold' = 1.5 should be null or a multi-label decision "
                                              r"threshold in \(0, 1\]"):
        OnnxClassifier.load(tmp_path / "onnx", threads=1, verify=False)
