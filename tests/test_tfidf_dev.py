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


TOY_X = ["a b c d e good movie", "a b c d e great film", "a b c d e bad movie", "a b c d e awful film"] * 5
TOY_Y = ["pos", "pos", "neg", "neg"] * 5


@pytest.mark.parametrize("preset, name, values", [("tfidf-lr", "C", (0.001, 1000.0)),
                                                  ("tfidf-nb", "alpha", (0.001, 100.0))])
def test_the_tuned_value_beside_its_grid_is_refused_and_fixed_with_the_grid_off(preset, name, values):
    """params={"C": x} was ignored: the grid chose C on dev and replaced it without a word, so a
    GridSearchCV over C compared identical models. Refused, the message names the setting that
    fixes it, and that setting trains with the value given."""
    grid = f"{name}_grid"
    for given in ({name: values[0]}, {name: 1.0}, {name: values[0], grid: [0.1, 1.0]}):  # the default 1.0 too
        shown = f"{given[name]:.12g}"
        with pytest.raises(ConfigError, match=(
                rf"^model '{preset}' chooses '{name}' on dev from '{grid}' \(.*\), which would replace it; "
                rf"'{name}' = {shown} cannot be set beside the grid: to fix {name}, turn the grid off \(CLI: --set "
                rf"{grid}=null --set {name}={shown}; Python: params=\{{'{name}': {shown}, '{grid}': None\}}\), or "
                rf"set the values it tries with '{grid}'$")):
            textcls.Classifier(preset, params=given).fit(TOY_X, TOY_Y)
    fixed = [textcls.Classifier(preset, params={name: value, grid: None}).fit(TOY_X, TOY_Y) for value in values]
    for clf, value in zip(fixed, values):
        assert clf.preset_.arch[name] == value and clf.estimator_.model_.selection_ is None
    low, high = (clf.predict_proba(["a b c d e good"])[0] for clf in fixed)
    assert abs(low[1] - high[1]) > 0.1  # each model used its own value


def test_the_other_classifiers_parameters_are_refused():
    """alpha on tfidf-lr (C on tfidf-nb) was accepted and never read by the classifier it fits."""
    cases = [("tfidf-lr", {"alpha": 1.0}, "logistic regression; 'alpha' \\(naive Bayes' smoothing\\)", "drop it"),
             ("tfidf-nb", {"C": 2.0}, "multinomial naive Bayes; 'C' \\(logistic regression's regularisation\\)",
              "drop it"),
             ("tfidf-nb", {"max_iter": 50},
              "multinomial naive Bayes; 'max_iter' \\(logistic regression's solver iterations\\)", "drop it"),
             # tfidf-lr switched to naive Bayes keeps its preset's C_grid, which nothing would read
             ("tfidf-lr", {"classifier": "nb"}, "multinomial naive Bayes; 'C_grid' \\(logistic regression's C grid\\)",
              "set it to None \\(CLI: --set C_grid=null; Python: params=\\{'C_grid': None\\}\\)")]
    for preset, params, what, advice in cases:
        with pytest.raises(ConfigError, match=rf"^model '{preset}' fits {what} cannot be set on it: {advice}$"):
            textcls.Classifier(preset, params=params).fit(TOY_X, TOY_Y)
    switched = textcls.Classifier("tfidf-lr", params={"classifier": "nb", "C_grid": None}).fit(TOY_X, TOY_Y)
    assert switched.estimator_.model_.classifier == "nb"


def test_the_cli_refuses_C_beside_the_grid_and_fixes_it_with_C_grid_null(tmp_path, capsys):
    from textcls.cli import main

    data = tmp_path / "d.csv"
    data.write_text("text,label\n" + "".join(f"good fine {i},pos\nbad poor {i},neg\n" for i in range(20)))
    with pytest.raises(SystemExit) as done:
        main(["train", "-m", "tfidf-lr", "-d", str(data), "--set", "C=10", "--run-dir", str(tmp_path / "refused")])
    err = capsys.readouterr().err
    assert done.value.code == 2 and not (tmp_path / "refused").exists()
    assert err.count("\n") == 1 and "--set C_grid=null --set C=10" in err and "Traceback" not in err
    main(["train", "-m", "tfidf-lr", "-d", str(data), "--set", "C_grid=null", "--set", "C=10",
          "--run-dir", str(tmp_path / "fixed"), "--no-progress"])
    config = json.loads((tmp_path / "fixed" / "config.json").read_text())
    assert config["arch"]["C"] == 10 and config["arch"]["C_grid"] is None and config["state"]["selection"] is None
