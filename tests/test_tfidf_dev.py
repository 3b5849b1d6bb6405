"""tfidf-lr / tfidf-nb choose their regularisation (C / alpha) on dev and record the choice."""

import json

import numpy as np
import pytest

import textcls
from textcls.data.prepare import label_targets
from textcls.data.splits import ensure_dev
from textcls.errors import ConfigError
from textcls.models.tfidf import C_GRID, TfidfModel


@pytest.fixture(scope="module")
def trec():
    # TREC's six classes: the best C (10 here) is far from scikit-learn's default C = 1.
    return ensure_dev(textcls.load_dataset("trec"), fraction=0.1, seed=0)


def split_xy(ds, split):
    return list(ds[split]["text"]), np.asarray(label_targets(ds[split], ds.label_names, False, split))


def dev_accuracy(model, texts, y):
    return float((model.predict(texts) == y).mean())


def test_the_chosen_C_is_the_dev_best_and_it_matters(trec):
    x, y = split_xy(trec, "train")
    dx, dy = split_xy(trec, "dev")
    chosen = TfidfModel(6, C_grid=list(C_GRID)).fit(x, y, dev_texts=dx, dev_y=dy)
    # Each C fitted on its own, from scratch (no warm start), scored on dev.
    by_c = {c: dev_accuracy(TfidfModel(6, C=c).fit(x, y), dx, dy) for c in C_GRID}
    best = max(by_c.values())
    assert chosen.C == chosen.selection_["chosen"]
    assert by_c[chosen.C] == pytest.approx(best, abs=1.5 / len(dy))  # warm starts stop within lbfgs' tolerance
    assert chosen.selection_["dev"][repr(chosen.C)]["score"] == pytest.approx(best, abs=1.5 / len(dy))
    assert best - by_c[1.0] > 0.02 and best - min(by_c.values()) > 0.05  # the choice matters here
    assert chosen.C != 1.0
    assert dev_accuracy(chosen, dx, dy) == pytest.approx(chosen.selection_["dev"][repr(chosen.C)]["score"])


def test_the_choice_is_recorded_in_the_run_and_survives_a_reload(trec, tmp_path):
    clf = textcls.Classifier("tfidf-lr").fit_dataset(trec)
    selection = clf.estimator_.model_.selection_
    assert selection["parameter"] == "C" and clf.preset_.arch["C"] == selection["chosen"]
    assert set(selection["dev"]) == {repr(c) for c in C_GRID} and selection["dev_documents"] == len(trec["dev"])
    # what a benchmark run records of it: the chosen C's dev accuracy and log-loss
    chosen_scores = selection["dev"][repr(selection["chosen"])]
    assert clf.estimator_.fit_report()["dev_metrics"] == {"accuracy": chosen_scores["score"],
                                                          "loss": chosen_scores["log_loss"]}
    assert 0 < chosen_scores["log_loss"] and 0.5 < chosen_scores["score"] <= 1
    clf.save_pretrained(tmp_path / "run")
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["arch"]["C"] == selection["chosen"]
    assert config["state"]["selection"]["chosen"] == selection["chosen"]
    again = textcls.Classifier.from_pretrained(tmp_path / "run")
    texts = list(trec["test"]["text"][:50])
    np.testing.assert_array_equal(again.predict_proba(texts), clf.predict_proba(texts))


def test_naive_bayes_chooses_alpha_and_a_preset_without_a_grid_keeps_its_C(trec):
    nb = textcls.Classifier("tfidf-nb").fit_dataset(trec)
    assert nb.estimator_.model_.selection_["parameter"] == "alpha"
    assert nb.preset_.arch["alpha"] == nb.estimator_.model_.selection_["chosen"]
    fixed = textcls.Classifier("tfidf-lr", params={"C_grid": None, "C": 1.0}).fit_dataset(trec)
    assert fixed.estimator_.model_.selection_ is None and fixed.preset_.arch["C"] == 1.0


def test_a_dataset_without_dev_gets_one_carved_for_the_choice():
    data = textcls.load_dataset("mr", max_per_split=800)
    assert "dev" not in data.splits
    clf = textcls.Classifier("tfidf-lr").fit_dataset(data)
    assert clf.estimator_.model_.selection_["dev_documents"] == 80  # 10 % of the 800 training sentences


@pytest.mark.parametrize("grid", [[], [0.0, 1.0], "1,10", [1.0, -3.0]])
def test_a_bad_grid_is_refused(grid):
    with pytest.raises(ConfigError, match="C_grid"):
        TfidfModel(2, C_grid=grid)
