"""tfidf-lr-chars: word and character TF-IDF side by side, one logistic regression over both."""

import numpy as np
import pytest

import textcls
from textcls.data.prepare import label_targets
from textcls.data.splits import ensure_dev
from textcls.errors import CheckpointError, ConfigError
from textcls.models.tfidf import C_GRID, TfidfModel


@pytest.fixture(scope="module")
def mpqa():
    # MPQA's phrases have three words on average: where characters add the most to words.
    return ensure_dev(textcls.load_dataset("mpqa"), fraction=0.1, seed=0)


def split_xy(ds, split):
    return list(ds[split]["text"]), np.asarray(label_targets(ds[split], ds.label_names, False, split))


@pytest.fixture(scope="module")
def fitted(mpqa):
    x, y = split_xy(mpqa, "train")
    dx, dy = split_xy(mpqa, "dev")
    words = TfidfModel(2, C_grid=list(C_GRID)).fit(x, y, dev_texts=dx, dev_y=dy)
    both = TfidfModel(2, C_grid=list(C_GRID), char_ngrams=[2, 5]).fit(x, y, dev_texts=dx, dev_y=dy)
    return words, both


def test_character_features_sit_beside_the_word_features(fitted):
    words, both = fitted
    n_words = len(words.vectorizer_.get_feature_names_out())
    assert len(both.vectorizer_.words.get_feature_names_out()) == n_words  # the same word part
    n_chars = len(both.vectorizer_.chars.get_feature_names_out())
    assert n_chars > n_words and both.weights_.shape == (2, n_words + n_chars)
    grams = both.vectorizer_.chars.get_feature_names_out()
    assert all(2 <= len(g) <= 5 and "\n" not in g for g in grams)
    assert both.num_parameters() == 2 * (n_words + n_chars) + 2 + n_words + n_chars


def test_characters_learn_mpqa_at_least_as_well_as_words(fitted, mpqa):
    words, both = fitted
    tx, ty = split_xy(mpqa, "test")
    acc_words = float((words.predict(tx) == ty).mean())
    acc_both = float((both.predict(tx) == ty).mean())
    assert acc_both > 0.8 and acc_both >= acc_words - 0.01


def test_saved_state_predicts_the_same_and_a_corrupt_one_is_refused(fitted, mpqa):
    _, both = fitted
    tx, _ = split_xy(mpqa, "test")
    arrays, meta = both.state()
    assert {"char_vocabulary", "char_idf"} <= set(arrays) and meta["params"]["char_ngrams"] == [2, 5]
    rebuilt = TfidfModel.from_state(arrays, meta)
    np.testing.assert_array_equal(rebuilt.predict_proba(tx[:300]), both.predict_proba(tx[:300]))
    with pytest.raises(CheckpointError, match="lacks array 'char_vocabulary'"):
        TfidfModel.from_state({k: v for k, v in arrays.items() if k != "char_vocabulary"}, meta)
    with pytest.raises(CheckpointError, match="inconsistent"):
        TfidfModel.from_state({**arrays, "char_idf": arrays["char_idf"][:-1]}, meta)


@pytest.mark.parametrize("bad", [[5, 2], [0, 3], [2], "2-5", [2.0, 5], [True, 3], [2, 11]])
def test_bad_char_ngrams_are_refused(bad):
    with pytest.raises(ConfigError, match="char_ngrams"):
        TfidfModel(2, char_ngrams=bad)


def test_the_preset_trains_saves_and_reloads_through_the_classifier(tmp_path, mpqa):
    rows = np.random.default_rng(0).choice(len(mpqa["train"]), 1500, replace=False).tolist()
    sample_split = mpqa["train"].select(rows)  # the split is sorted by class
    texts, labels = list(sample_split["text"]), list(sample_split["label"])
    clf = textcls.Classifier("tfidf-lr-chars").fit(texts, labels)
    assert clf.preset_.arch["char_ngrams"] == [2, 5] and clf.estimator_.model_.char_ngrams == (2, 5)
    sample = list(mpqa["test"]["text"][:50])
    before = clf.predict_proba(sample)
    clf.save_pretrained(tmp_path / "run")
    again = textcls.Classifier.from_pretrained(tmp_path / "run")
    np.testing.assert_array_equal(again.predict_proba(sample), before)
