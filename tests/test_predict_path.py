"""The lean prediction path gives the old path's probabilities.

Prediction tokenises a batch into flat arrays (``TextPipeline.encode_flat``), sorts the documents
by length into sub-batches padded with numpy (``data.batching.flat_batches``) and calls the model
directly; a fasttext-bag run loaded by ``Predictor`` predicts with NumPy (``numpy_forward``).
Each must agree with one document at a time through the DataLoader path, on real MR texts.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from tolerance import KERNEL
from textcls import Classifier, estimators, load_dataset
from textcls.data.batching import collate_flat, pad_flat, sorted_batches
from textcls.errors import ConfigError, DataError
from textcls.predictor import Predictor
from textcls.text.pipeline import TextPipeline

FIXTURE_RUNS = "tests/fixtures/runs/v2"


@pytest.fixture(scope="module")
def mr():
    return load_dataset("mr", max_per_split=600)


@pytest.fixture(scope="module")
def test_texts(mr):
    return list(mr["test"]["text"])[:150]


@pytest.fixture(scope="module")
def trained(mr, tmp_path_factory):
    """Small models trained on an MR slice, saved: {preset: (Classifier, run folder)}."""
    texts, labels = list(mr["train"]["text"]), list(mr["train"]["label"])
    presets = {
        "fasttext-bag": {"epochs": 2},
        "kim-cnn-rand": {"epochs": 1, "params": {"embedding_dim": 16, "feature_maps": 8}},
    }
    out = {}
    for name, options in presets.items():
        clf = Classifier(name, **options).fit(texts, labels)
        folder = tmp_path_factory.mktemp(name)
        clf.save_pretrained(folder)
        out[name] = (clf, folder)
    return out


def _one_at_a_time(clf, texts):
    """The old path: the engine's DataLoader, one document per call (no padding at all)."""
    return np.concatenate([clf.estimator_._predict_with_loader([t], None, "cpu") for t in texts])


@pytest.mark.parametrize("preset", ["fasttext-bag", "kim-cnn-rand"])
def test_sorted_padded_batches_equal_one_document_at_a_time(trained, test_texts, preset):
    clf, _ = trained[preset]
    batched = clf.predict_proba(test_texts)
    alone = _one_at_a_time(clf, test_texts)
    np.testing.assert_allclose(batched, alone, **KERNEL)
    assert (batched.argmax(axis=1) == alone.argmax(axis=1)).all()


@pytest.mark.parametrize("preset", ["fasttext-bag", "kim-cnn-rand"])
def test_lean_path_equals_the_loader_path_and_keeps_input_order(trained, test_texts, preset):
    clf, _ = trained[preset]
    shuffled = random.Random(0).sample(test_texts, len(test_texts))
    lean = clf.predict_proba(shuffled)
    loader = clf.estimator_._predict_with_loader(shuffled, None, "cpu")
    np.testing.assert_allclose(lean, loader, **KERNEL)
    # A second call reuses the prepared model (eval mode, device) and gives the same rows.
    np.testing.assert_array_equal(clf.predict_proba(shuffled), lean)


def test_prediction_batches_hold_at_most_eval_max_pieces_and_give_the_same_rows(trained, test_texts, monkeypatch):
    clf, _ = trained["kim-cnn-rand"]
    monkeypatch.setattr(estimators, "EVAL_MAX_PIECES", 1 << 30)
    unbounded = clf.predict_proba(test_texts)
    shapes, real = [], estimators.flat_batches

    def spy(*args, **kwargs):
        for rows, batch in real(*args, **kwargs):
            shapes.append(tuple(batch["input_ids"].shape))
            yield rows, batch

    monkeypatch.setattr(estimators, "flat_batches", spy)
    monkeypatch.setattr(estimators, "EVAL_MAX_PIECES", 256)
    bounded = clf.predict_proba(test_texts)
    # 150 MR sentences in one batch of PREDICT_BATCH without the bound; with it, batches of at most
    # 256 padded tokens (a longer sentence alone), and the same probabilities row for row.
    assert len(shapes) > 3 and sum(rows for rows, _ in shapes) == len(test_texts)
    assert all(rows * width <= 256 or rows == 1 for rows, width in shapes)
    np.testing.assert_allclose(bounded, unbounded, **KERNEL)


def test_loader_path_batches_hold_at_most_eval_max_pieces(trained, test_texts, monkeypatch):
    from textcls.data import batching

    clf, _ = trained["kim-cnn-rand"]
    monkeypatch.setattr(estimators, "EVAL_MAX_PIECES", 1 << 30)
    unbounded = clf.estimator_._predict_with_loader(test_texts, None, "cpu")
    loaders, original = [], batching.make_loader

    def spy(*args, **kwargs):
        loaders.append(original(*args, **kwargs))
        return loaders[-1]

    monkeypatch.setattr(batching, "make_loader", spy)
    monkeypatch.setattr(estimators, "EVAL_MAX_PIECES", 256)
    bounded = clf.estimator_._predict_with_loader(test_texts, None, "cpu")
    assert loaders[-1].batch_sampler.max_pieces == 256 and len(loaders[-1]) > 3
    np.testing.assert_allclose(bounded, unbounded, **KERNEL)


def test_fit_evaluates_dev_in_bounded_batches(mr, monkeypatch):
    from textcls.data.prepare import PreparedData

    calls, original = [], PreparedData.loader

    def spy(self, split, batch_size, **kwargs):
        calls.append((split, kwargs.get("max_pieces")))
        return original(self, split, batch_size, **kwargs)

    monkeypatch.setattr(PreparedData, "loader", spy)
    texts, labels = list(mr["train"]["text"])[::2], list(mr["train"]["label"])[::2]
    Classifier("kim-cnn-rand", epochs=1, params={"embedding_dim": 8, "feature_maps": 4}).fit(texts, labels)
    # The training batches are the recipe's; the dev passes are bounded like prediction.
    assert ("train", None) in calls and ("dev", estimators.EVAL_MAX_PIECES) in calls


def test_model_left_in_train_mode_is_put_back_in_eval_mode(trained, test_texts):
    clf, _ = trained["kim-cnn-rand"]  # dropout 0.5: train mode would change the outputs
    expected = clf.predict_proba(test_texts[:20])
    clf.model_.train()
    np.testing.assert_array_equal(clf.predict_proba(test_texts[:20]), expected)


def test_numpy_fasttext_bag_equals_torch(trained, test_texts):
    clf, folder = trained["fasttext-bag"]
    predictor = Predictor.load(folder)
    assert predictor.backend == "numpy"
    probs = predictor.predict_proba(test_texts)
    np.testing.assert_allclose(probs, clf.predict_proba(test_texts), **KERNEL)
    assert predictor.predict(test_texts) == [str(c) for c in clf.predict(test_texts)]


def test_numpy_forward_without_projection_equals_torch(tmp_path):
    """The fixture (6 classes, 10-d: tables projected at load) as torch; then a model with more
    classes than dimensions, whose tables stay as they are, against the formula."""
    folder = f"{FIXTURE_RUNS}/fasttext-bag"
    predictor = Predictor.load(folder)
    texts = ["What is the capital of Peru ?", "Who wrote Hamlet ?", "How far is the moon ?"]
    np.testing.assert_allclose(predictor.predict_proba(texts), Classifier.from_pretrained(folder).predict_proba(texts),
                               **KERNEL)
    from textcls.numpy_forward import FastTextBagForward

    arrays = {"words.weight": np.random.default_rng(0).normal(size=(5, 2)).astype(np.float32),
              "output.weight": np.random.default_rng(1).normal(size=(3, 2)).astype(np.float32)}
    forward = FastTextBagForward(arrays)
    assert not forward.projected

    class Flat:
        ids = np.array([2, 3, 4, 1], dtype=np.int64)
        lengths = np.array([3, 1], dtype=np.int64)

    expected = np.stack([arrays["words.weight"][[2, 3, 4]].mean(0), arrays["words.weight"][1]]) @ arrays["output.weight"].T
    np.testing.assert_allclose(forward.logits(Flat), expected, **KERNEL)


def test_tfidf_run_predicts_as_the_classifier():
    folder = f"{FIXTURE_RUNS}/tfidf-lr"
    predictor = Predictor.load(folder)
    texts = ["Who was Galileo ?", "When did Idaho become a state ?"]
    np.testing.assert_allclose(predictor.predict_proba(texts), Classifier.from_pretrained(folder).predict_proba(texts),
                               **KERNEL)


# --------------------------------------------------------------------------- token ids


def _assert_same_ids(pipeline: TextPipeline, texts: list[str]) -> None:
    encoded, flat = pipeline.encode(texts), pipeline.encode_flat(texts)
    assert flat.ids.tolist() == [i for doc in encoded.ids for i in doc]
    assert flat.lengths.tolist() == [len(doc) for doc in encoded.ids]
    if encoded.bigrams is not None:
        assert flat.bigrams.tolist() == [i for doc in encoded.bigrams for i in doc]
        assert flat.bigram_lengths.tolist() == [len(doc) for doc in encoded.bigrams]


@pytest.mark.parametrize("lowercase, clitics", [(True, False), (False, False), (True, True), (False, True)])
def test_encode_flat_gives_the_tokenizer_ids(mr, lowercase, clitics):
    texts = list(mr["train"]["text"]) + list(mr["test"]["text"])
    pipeline = TextPipeline(lowercase=lowercase, bigram_buckets=997, max_length=12, clitics=clitics).fit(texts[:400])
    _assert_same_ids(pipeline, texts)  # MR: ASCII texts and a few Latin-1 ones, mixed
    rng = random.Random(0)
    alphabet = [chr(c) for c in range(1, 128)] + ["é", "Σ", "ß", "\u0301", "\u00a0", "\u2028", "\x85"]
    for _ in range(200):
        batch = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 25))) for _ in range(rng.randint(1, 12))]
        _assert_same_ids(pipeline, batch)
    _assert_same_ids(pipeline, ["a\x00b ok", "FINE ..."])  # a text holding the batch separator
    _assert_same_ids(pipeline, ["   ", "\x1c\x1f\x7f", "?!", "one"])  # empty after splitting: [UNK]
    _assert_same_ids(pipeline, ["isn't it john's ?", "rock'n'roll can't''s", "we'll 'd 5'6 N'T don't."])


def test_clitics_are_split_as_glove_has_them(tmp_path):
    text = "It isn't John's car, can't we'll ''go'' rock'n'roll"
    assert TextPipeline(clitics=True).tokenize([text])[0] == [
        "it", "is", "n't", "john", "'s", "car", ",", "ca", "n't", "we", "'ll", "''", "go", "''",
        "rock", "'", "n", "'", "roll"]
    assert TextPipeline().tokenize(["isn't john's"])[0] == ["isn", "'", "t", "john", "'", "s"]
    pipeline = TextPipeline(clitics=True).fit([text, "isn't that so"])
    pipeline.save(tmp_path)
    restored = TextPipeline.load(tmp_path, pipeline.settings())
    assert restored.encode([text]).ids == pipeline.encode([text]).ids
    assert "n't" in pipeline.vocab
    with pytest.raises(ConfigError, match="'clitics' = 'yes' must be true or false"):
        TextPipeline(clitics="yes")


def test_lone_surrogate_is_a_data_error_naming_the_text(trained):
    clf, folder = trained["fasttext-bag"]
    with pytest.raises(DataError, match="text 1 holds a lone surrogate") as info:
        clf.predict_proba(["fine", "a\ud800"])
    assert info.value.index == 1
    with pytest.raises(DataError, match="text 0 holds a lone surrogate"):
        Predictor.load(folder).predict_proba(["a\ud800"])


# --------------------------------------------------------------------------- batches


def test_pad_flat_equals_collate_flat():
    docs = [[5, 6, 7], [8], [9, 10], [11, 12, 13, 14]]
    flat = np.array([i for d in docs for i in d], dtype=np.int64)
    lengths = np.array([len(d) for d in docs], dtype=np.int64)
    rows = np.array([3, 1])
    ids, mask = pad_flat(flat, lengths, np.cumsum(lengths) - lengths, rows)
    expected = collate_flat([{"index": i, "input_ids": docs[i]} for i in rows])
    np.testing.assert_array_equal(ids, expected["input_ids"].numpy())
    np.testing.assert_array_equal(mask, expected["mask"].numpy())
    empty_ids, empty_mask = pad_flat(np.zeros(0, dtype=np.int64), np.array([0, 0]), np.array([0, 0]), np.array([0, 1]))
    assert empty_ids.shape == (2, 1) and not empty_mask.any()  # every axis at least 1, as collate_flat
    # A fixed width (the NumPy CNN forwards') pads shorter documents and cuts longer ones.
    wide, wide_mask = pad_flat(flat, lengths, np.cumsum(lengths) - lengths, rows, width=6)
    assert wide.tolist() == [[11, 12, 13, 14, 0, 0], [8, 0, 0, 0, 0, 0]] and wide_mask.sum(1).tolist() == [4, 1]
    cut, cut_mask = pad_flat(flat, lengths, np.cumsum(lengths) - lengths, rows, width=2)
    assert cut.tolist() == [[11, 12], [8, 0]] and cut_mask.tolist() == [[True, True], [True, False]]


def test_sorted_batches_cover_every_document_once_shortest_first():
    lengths = np.array([5, 1, 3, 1, 9, 2])
    batches = sorted_batches(lengths, 4)
    assert [b.tolist() for b in batches] == [[1, 3, 5, 2], [0, 4]]


def test_sorted_batches_bounded_in_padded_pieces_keep_a_long_document_alone():
    lengths = np.array([5, 1, 3, 1, 9, 2, 0])
    batches = sorted_batches(lengths, 4, max_pieces=6)
    # Shortest first; a batch's rows times its longest (at least 1) stay within 6 pieces, and
    # the 9-piece document, over the bound on its own, is a batch alone.
    assert [b.tolist() for b in batches] == [[6, 1, 3], [5, 2], [0], [4]]
    assert sorted(np.concatenate(batches).tolist()) == list(range(len(lengths)))
    assert [b.tolist() for b in sorted_batches(lengths, 2, max_pieces=100)] == [[6, 1], [3, 5], [2, 0], [4]]


def test_threshold_of_a_multi_label_run(tmp_path):
    config = {"model": "x", "label_names": ["a", "b", "c"], "multi_label": True, "threshold": 0.3}
    probs = np.array([[0.2, 0.35, 0.9]], dtype=np.float32)
    predictor = Predictor(tmp_path, config, lambda texts, task_ids: probs, uses_tasks=False, backend="numpy")
    assert predictor.predict(["t"]) == [["b", "c"]]  # the run's saved threshold
    assert predictor.predict(["t"], threshold=0.5) == [["c"]]
    assert Predictor(tmp_path, {**config, "threshold": None}, lambda t, i: probs, uses_tasks=False,
                     backend="numpy").threshold == 0.5
    with pytest.raises(ConfigError, match="threshold"):
        Predictor(tmp_path, {**config, "threshold": 1.5}, lambda t, i: probs, uses_tasks=False, backend="numpy")


def test_threshold_is_checked_as_the_cli_checks_it_before_the_model_runs(tmp_path):
    calls = []

    def model(texts, task_ids):
        calls.append(texts)
        return np.array([[0.2, 0.35, 0.9]], dtype=np.float32)

    config = {"model": "x", "label_names": ["a", "b", "c"], "multi_label": True}
    predictor = Predictor(tmp_path, config, model, uses_tasks=False, backend="numpy")
    for bad in ["0.5", 0, -1, 1.5, float("nan"), True, [0.5]]:
        with pytest.raises(ConfigError, match=r"^parameter 'threshold' = .* (is not a number|is outside its allowed "
                                              r"range \(0, 1\]); give a threshold"):
            predictor.predict(["t"], threshold=bad)
        with pytest.raises(ConfigError, match="^parameter 'threshold'"):
            predictor.labels(np.array([[0.2, 0.35, 0.9]]), threshold=bad)
    assert calls == []
    assert predictor.predict(["t"], threshold=np.float32(0.3)) == [["b", "c"]]
    assert predictor.predict(["t"], threshold=1) == [[]]  # (0, 1], as `textcls predict --threshold`


def test_a_single_label_run_refuses_a_threshold(tmp_path):
    config = {"model": "x", "label_names": ["a", "b"]}
    predictor = Predictor(tmp_path, config, lambda t, i: np.array([[0.3, 0.7]], dtype=np.float32),
                          uses_tasks=False, backend="numpy")
    assert predictor.predict(["t"]) == ["b"]
    with pytest.raises(ConfigError, match="'threshold' applies to multi-label runs; .* predicts one label per text"):
        predictor.predict(["t"], threshold=0.3)


@pytest.mark.parametrize("threads", [0, -2, "x", 1.5, True])
def test_load_refuses_threads_that_are_not_a_positive_integer(threads):
    # tfidf-lr predicts through its Estimator, whose load set torch's threads (a RuntimeError before)
    with pytest.raises(ConfigError, match=r"^parameter 'threads' = .* is outside its allowed range"):
        Predictor.load(f"{FIXTURE_RUNS}/tfidf-lr", threads=threads)


@pytest.mark.parametrize("run_dir", [None, "", 3])
def test_load_refuses_a_run_dir_that_is_not_a_path(run_dir):
    with pytest.raises(ConfigError, match="^parameter 'run_dir' = .* must be a file or folder path"):
        Predictor.load(run_dir)


def test_textcls_predict_writes_int_labels_as_the_python_api_returns_them(tmp_path, capsys):
    # A run fitted with int labels predicted 3 in Python and "3" (a string) on the command line.
    import json

    from textcls import cli

    X = ["good film great", "bad film awful", "great acting good", "awful plot bad"] * 10
    clf = Classifier("tfidf-lr").fit(X, [3, 1, 3, 1] * 10)
    clf.save_pretrained(tmp_path / "run")
    assert cli._run(["predict", str(tmp_path / "run"), "good film", "awful plot"]) == 0
    labels = [json.loads(line)["label"] for line in capsys.readouterr().out.splitlines()]
    python = clf.predict(["good film", "awful plot"]).tolist()
    assert labels == python == [3, 1] and all(type(label) is int for label in labels)
