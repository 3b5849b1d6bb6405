"""The `ensemble` preset: member presets fitted on one split, probabilities averaged with
weights chosen on dev (models/ensemble.py, estimators.EnsembleEstimator)."""

import json

import numpy as np
import pytest

import textcls
from textcls import Classifier
from textcls.data.prepare import label_targets
from textcls.data.splits import ensure_dev
from textcls.errors import CheckpointError, ConfigError
from textcls.models.ensemble import SMALL_CORPUS_PIECES, ProbabilityEnsemble, announce_member
from textcls.models.registry import create_model, get_preset
from static_runs import train_refusal

from tolerance import BF16, FEW_OPS, KERNEL, approx32


def one_hot(indices, num_classes=2, sure=0.99):
    out = np.full((len(indices), num_classes), (1 - sure) / (num_classes - 1))
    out[np.arange(len(indices)), indices] = sure
    return out


def test_a_useless_member_gets_no_weight():
    targets = np.array([0, 1, 1, 0, 1, 0, 0, 1])
    right = one_hot(targets, sure=0.8)
    noise = one_hot(1 - targets, sure=0.9)  # confidently wrong everywhere
    ensemble = ProbabilityEnsemble(2, members=["a", "b"])
    assert ensemble.choose_weights([right, noise], targets, multi_label=False).tolist() == [1.0, 0.0]
    assert ensemble.choose_weights([noise, right], targets, multi_label=False).tolist() == [0.0, 1.0]


def test_members_that_err_on_different_documents_are_mixed():
    targets = np.array([0, 1, 0, 1, 0, 1])
    first = one_hot(targets, sure=0.9)
    second = one_hot(targets, sure=0.9)
    first[0], second[1] = [0.4, 0.6], [0.6, 0.4]  # each wrong once (not sure), on its own document
    ensemble = ProbabilityEnsemble(2, members=["a", "b"], pooling="linear", calibrate=False)  # stop 23's rule
    weights = ensemble.choose_weights([first, second], targets, multi_label=False)
    assert weights.tolist() == [0.5, 0.5]
    mixed = ensemble.combine([first, second])
    assert (mixed.argmax(1) == targets).all()  # right where each member alone is wrong once
    np.testing.assert_allclose(mixed, 0.5 * first + 0.5 * second, **FEW_OPS)
    assert mixed.dtype == np.float32


def test_calibration_cools_a_sure_member_and_warms_a_timid_one():
    rng = np.random.default_rng(0)
    targets = rng.integers(0, 3, 400)
    right = rng.random(400) < 0.8  # each member is right on 80 % of the documents
    guess = np.where(right, targets, (targets + 1) % 3)
    sure, timid = one_hot(guess, num_classes=3, sure=0.999), one_hot(guess, num_classes=3, sure=0.5)
    ensemble = ProbabilityEnsemble(3, members=["sure", "timid"])
    ensemble.choose_weights([sure, timid], targets, multi_label=False)
    hot, cold = ensemble.temperatures_
    assert hot > 1 > cold
    # Calibrated, both say "80 %": each pooled probability of the guessed class is about 0.8.
    both = ensemble.combine([sure, timid])
    assert both[np.arange(400), guess] == pytest.approx(0.8, abs=0.02)


def test_log_linear_pooling_is_the_weighted_product_of_the_calibrated_members():
    rng = np.random.default_rng(1)
    targets = rng.integers(0, 4, 60)
    members = [rng.dirichlet(np.ones(4), 60) for _ in range(3)]
    members[0][np.arange(60), targets] += 1
    members = [m / m.sum(1, keepdims=True) for m in members]
    ensemble = ProbabilityEnsemble(4, members=["a", "b", "c"])
    weights = ensemble.choose_weights(members, targets, multi_label=False)
    logits = sum(w * np.log(m) / t for w, m, t in zip(weights, members, ensemble.temperatures_))
    expected = np.exp(logits - logits.max(1, keepdims=True))
    np.testing.assert_allclose(ensemble.combine(members), expected / expected.sum(1, keepdims=True), **KERNEL)
    assert weights[0] > 0.5  # the informative member leads


def test_multi_label_weights_read_every_class():
    targets = np.array([[1, 0, 1], [0, 1, 0], [1, 1, 0], [0, 0, 1]])
    good = np.where(targets == 1, 0.85, 0.1)
    flipped = 1 - good
    ensemble = ProbabilityEnsemble(3, members=["a", "b", "c"])
    weights = ensemble.choose_weights([flipped, good, flipped], targets, multi_label=True)
    assert weights.tolist() == [0.0, 1.0, 0.0]
    pooled = ensemble.combine([flipped, good, flipped])  # per class: sigmoid(logit(good) / T)
    assert ((pooled >= 0.5) == targets).all() and ensemble.temperatures_[1] < 1  # sharpened: right every time


def test_the_grid_covers_the_simplex():
    grid = ProbabilityEnsemble(2, members=["a", "b", "c"], weight_step=0.25).weight_grid()
    assert grid.shape == (15, 3)  # C(4 + 2, 2) points
    np.testing.assert_allclose(grid.sum(axis=1), 1.0, **FEW_OPS)
    assert len({tuple(row) for row in grid}) == 15


@pytest.mark.parametrize("params, message", [
    ({"members": ["tfidf-lr"]}, "at least two"),
    ({"members": "tfidf-lr"}, "at least two"),
    ({"members": ["tfidf-lr", "tfidf-lr"]}, "twice"),
    ({"members": ["tfidf-lr", "tfidf-nb"], "weight_step": 0.3}, "equal"),
    ({"members": ["tfidf-lr", "tfidf-nb"], "weight_step": 0.0}, "weight_step"),
    ({"members": ["tfidf-lr", "tfidf-nb"], "small_corpus_members": {"tfidf-nb": 10}}, "not among 'members'"),
    ({"small_corpus_members": {"minilm-encoder-lr-2l": 0}}, r"small_corpus_members\['minilm-encoder-lr-2l'\]"),
    ({"small_corpus_replaces": ["tfidf-lr-chars"]}, "some of 'members'"),
    ({"members": ["tfidf-lr", "tfidf-nb"], "small_corpus_replaces": ["tfidf-lr", "tfidf-nb"]}, "leaving at least one"),
    ({"small_corpus_replaces": "static-finetune"}, "small_corpus_replaces"),
])
def test_bad_parameters_are_one_clear_error(params, message):
    with pytest.raises(ConfigError, match=message):
        create_model(get_preset("ensemble").with_overrides(**params), num_classes=2)


def test_probabilities_must_match_the_members():
    ensemble = ProbabilityEnsemble(2, members=["a", "b"])
    with pytest.raises(ConfigError, match="no weights yet"):
        ensemble.combine([one_hot([0]), one_hot([1])])
    ensemble.weights_ = np.array([0.5, 0.5])
    with pytest.raises(ConfigError, match="one per member"):
        ensemble.combine([one_hot([0])])
    with pytest.raises(ConfigError, match=r"\[N, 2\]"):
        ensemble.combine([one_hot([0]), one_hot([0, 1])])


@pytest.fixture(scope="module")
def mr_slice():
    return ensure_dev(textcls.load_dataset("mr", max_per_split=1500), fraction=0.2, seed=0)


@pytest.fixture(scope="module")
def fitted(mr_slice):
    return Classifier("ensemble", seed=0).fit_dataset(mr_slice)


def test_the_ensemble_learns_and_records_its_weights(fitted, mr_slice):
    texts = list(mr_slice["test"]["text"])
    targets = np.asarray(label_targets(mr_slice["test"], mr_slice.label_names, False, "test"))
    accuracy = float((fitted.predict_proba(texts).argmax(1) == targets).mean())
    majority = np.bincount(targets).max() / len(targets)
    assert accuracy > majority + 0.1  # MR is balanced: 0.5; these members reach 0.6-0.7 on 1,200 sentences
    weights = fitted.estimator_.weights()
    # 1,500 short reviews hold fewer word pieces than the limit: the small-corpus member joins.
    assert list(weights) == ["tfidf-lr", "tfidf-nb", "fasttext-bag", "minilm-encoder-lr-2l"]
    assert fitted.estimator_.small_corpus_["word_pieces"] <= SMALL_CORPUS_PIECES
    assert sum(weights.values()) == approx32(1.0)
    member_probs = [m.predict_proba(texts) for m in fitted.estimator_.members_]
    temperatures = fitted.estimator_.model_.temperatures_
    assert temperatures.shape == (4,) and (temperatures > 0).all()
    logits = sum(w * np.log(np.clip(p, 1e-12, 1)) / t for w, p, t in zip(weights.values(), member_probs, temperatures))
    expected = np.exp(logits - logits.max(1, keepdims=True))
    np.testing.assert_allclose(fitted.predict_proba(texts), expected / expected.sum(1, keepdims=True), **KERNEL)


def test_the_small_corpus_rule_counts_the_split_the_members_train_on(mr_slice):
    # Without a dev split the ensemble carves one from train; the word pieces are counted after
    # that carve, as when a caller (the benchmark runner) carves dev first, so that both paths
    # choose the same members for the same data.
    from dataclasses import replace

    from datasets import DatasetDict

    from textcls.data.splits import ensure_dev
    from textcls.estimators import estimator_for
    from textcls.text.embeddings import minilm_word_pieces

    no_dev = replace(mr_slice, splits=DatasetDict(train=mr_slice["train"], test=mr_slice["test"]),
                     split_notes={k: v for k, v in mr_slice.split_notes.items() if k != "dev"})
    estimator = estimator_for(get_preset("ensemble").with_overrides(
        members=["tfidf-nb"], small_corpus_members={"tfidf-lr": SMALL_CORPUS_PIECES}))
    estimator.fit(no_dev)
    carved = ensure_dev(no_dev, fraction=0.1, seed=0)["train"]["text"]
    assert estimator.small_corpus_["word_pieces"] == minilm_word_pieces(carved)
    assert minilm_word_pieces(carved) < minilm_word_pieces(no_dev["train"]["text"])
    assert [m.preset.name for m in estimator.members_] == ["tfidf-nb", "tfidf-lr"]


def test_a_small_corpus_member_joins_only_within_its_word_piece_limit(mr_slice):
    from textcls.estimators import estimator_for

    def members(limit):
        preset = get_preset("ensemble").with_overrides(small_corpus_members={"minilm-encoder-lr-2l": limit})
        estimator = estimator_for(preset)
        estimator._learn_labels(mr_slice)
        return estimator._with_small_corpus_members(mr_slice).arch["members"], estimator.small_corpus_["word_pieces"]

    fewer, pieces = members(SMALL_CORPUS_PIECES)
    assert 20_000 < pieces <= SMALL_CORPUS_PIECES  # 1,500 short reviews
    # The MiniLM member joins in static-finetune's place (small_corpus_replaces).
    assert fewer == ["tfidf-lr", "tfidf-nb", "fasttext-bag", "minilm-encoder-lr-2l"]
    assert members(pieces)[0] == fewer and members(pieces - 1)[0] == list(get_preset("ensemble").arch["members"])
    assert "static-finetune" in members(pieces - 1)[0]


def test_a_small_corpus_member_replaces_only_the_members_named(mr_slice):
    from textcls.estimators import estimator_for

    preset = get_preset("ensemble").with_overrides(small_corpus_replaces=None)
    estimator = estimator_for(preset)
    estimator._learn_labels(mr_slice)
    assert estimator._with_small_corpus_members(mr_slice).arch["members"] == [
        "tfidf-lr", "tfidf-nb", "fasttext-bag", "static-finetune", "minilm-encoder-lr-2l"]
    assert estimator.small_corpus_["added"] == ["minilm-encoder-lr-2l"] and estimator.small_corpus_["replaced"] == []


def test_the_word_piece_count_stops_once_past_the_limit():
    from textcls.text.embeddings import minilm_word_pieces

    texts = list(textcls.load_dataset("trec")["train"]["text"])  # 5,452 questions: three chunks
    full = minilm_word_pieces(texts)
    assert minilm_word_pieces(texts, stop_above=full) == full
    early = minilm_word_pieces(texts, stop_above=1_000)
    assert 1_000 < early < full  # the first chunk's count, past the limit


def test_a_batch_gives_what_one_document_at_a_time_gives(fitted, mr_slice):
    texts = list(mr_slice["test"]["text"])[:40]
    batch = fitted.predict_proba(texts)
    alone = np.concatenate([fitted.predict_proba([t]) for t in texts])
    # The MiniLM member encodes under bf16 autocast where the CPU multiplies bf16 natively.
    bf16 = any(member.precision == "bf16" for member in fitted.estimator_.members_)
    np.testing.assert_allclose(batch, alone, **(BF16 if bf16 else KERNEL))


def test_save_and_load_round_trip(fitted, mr_slice, tmp_path):
    fitted.save_pretrained(tmp_path / "run")
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["kind"] == "ensemble"
    assert [m["preset"]["name"] for m in config["state"]["members"]] == ["tfidf-lr", "tfidf-nb", "fasttext-bag",
                                                                         "minilm-encoder-lr-2l"]
    # The members it used, and no rule left to apply to another corpus.
    assert config["arch"]["members"][-1] == "minilm-encoder-lr-2l" and config["arch"]["small_corpus_members"] is None
    assert config["arch"]["small_corpus_replaces"] is None
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["config.json", "model.safetensors"]
    loaded = Classifier.from_pretrained(tmp_path / "run")
    texts = list(mr_slice["test"]["text"])
    np.testing.assert_allclose(loaded.predict_proba(texts), fitted.predict_proba(texts), **KERNEL)
    assert loaded.estimator_.weights() == fitted.estimator_.weights()
    assert loaded.estimator_.model_.temperatures_.tolist() == fitted.estimator_.model_.temperatures_.tolist()


def test_a_run_saved_before_calibration_loads_with_its_own_rule(fitted, mr_slice):
    from textcls.estimators import estimator_for

    arrays, meta = fitted.estimator_.state()
    old = {key: value for key, value in meta.items() if key != "temperatures"} | {"format": "textcls.ensemble/1"}
    loaded = estimator_for(fitted.estimator_.preset).load_state(arrays, old)
    texts = list(mr_slice["test"]["text"])[:50]
    mixed = sum(w * m.predict_proba(texts) for w, m in zip(loaded.model_.weights_, loaded.members_))
    np.testing.assert_allclose(loaded.predict_proba(texts), mixed, **KERNEL)  # stop 23's linear mixture
    with pytest.raises(CheckpointError, match="temperatures"):
        estimator_for(fitted.estimator_.preset).load_state(arrays, {**meta, "temperatures": [1.0, -1.0]})


def test_an_ensemble_inside_an_ensemble_is_refused(mr_slice):
    with pytest.raises(ConfigError, match="itself an ensemble"):
        Classifier("ensemble", params={"members": ["tfidf-nb", "ensemble"]}).fit_dataset(mr_slice)


def test_a_recipe_override_it_would_ignore_is_refused(mr_slice):
    with pytest.raises(ConfigError, match="'epochs' cannot be set"):
        Classifier("ensemble", epochs=3).fit_dataset(mr_slice)


def test_a_recipe_field_given_at_the_placeholder_value_is_refused_too(mr_slice, tmp_path, capsys):
    """epochs=1 (the usual quick setting) equals the placeholder recipe Recipe(epochs=1): it was
    accepted, saved in config.json and ignored, the members running their full recipes; so were
    batch_size=50 and lr=0.001. Refused by what the user gave, not by the value."""
    from textcls.recipe import Recipe

    for field, value in (("epochs", 1), ("batch_size", 50), ("lr", 0.001)):
        with pytest.raises(ConfigError, match=rf"^model 'ensemble' is an ensemble, whose members train by their own "
                                              rf"recipes; '{field}' cannot be set on it \(only seed and dev_fraction "
                                              r"can\): drop it, or train a member preset on its own$"):
            Classifier("ensemble", **{field: value}).fit_dataset(mr_slice)
    # The same for an input at the ensemble's own value: embeddings=None would not reach the members.
    with pytest.raises(ConfigError, match="^model 'ensemble' is an ensemble, whose members read the texts by their "
                                          "own presets; 'embeddings' cannot be set on it"):
        Classifier("ensemble", params={"embeddings": None}).fit_dataset(mr_slice)
    # What it reads stays open: the seed it gives every member and the dev share it carves.
    ProbabilityEnsemble.check_recipe("ensemble", Recipe(epochs=1, seed=3, dev_fraction=0.2), {"seed", "dev_fraction"})
    err = train_refusal(tmp_path, capsys, "ensemble", "--epochs", "1")
    assert "model 'ensemble' is an ensemble" in err and "'epochs' cannot be set on it" in err


def test_export_and_quantize_say_what_to_do_instead(fitted, tmp_path):
    from textcls.export import export_onnx

    fitted.save_pretrained(tmp_path / "run")
    with pytest.raises(ConfigError, match="is an ensemble, which is not exported"):
        export_onnx(tmp_path / "run", tmp_path / "onnx")
    assert not (tmp_path / "onnx").exists()
    with pytest.raises(ConfigError, match="is an ensemble, which has no network"):
        fitted.quantize()


def test_a_saved_ensemble_loads_after_a_member_preset_is_removed(fitted, mr_slice, tmp_path, monkeypatch):
    from textcls.models import registry
    from textcls.predictor import Predictor

    fitted.save_pretrained(tmp_path / "run")
    monkeypatch.delitem(registry._PRESETS, "tfidf-nb")  # as if a later version renamed it
    texts = list(mr_slice["test"]["text"])[:50]
    expected = fitted.predict_proba(texts)
    np.testing.assert_allclose(Classifier.from_pretrained(tmp_path / "run").predict_proba(texts), expected, **KERNEL)
    np.testing.assert_allclose(Predictor.load(tmp_path / "run").predict_proba(texts), expected, **KERNEL)


def test_a_state_that_does_not_match_its_members_is_a_checkpoint_error(fitted, tmp_path):
    from textcls.errors import CheckpointError

    fitted.save_pretrained(tmp_path / "run")
    config_path = tmp_path / "run" / "config.json"
    config = json.loads(config_path.read_text())
    config["state"]["members"] = config["state"]["members"][:2]
    config_path.write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="holds 2 members, 4 weights"):
        Classifier.from_pretrained(tmp_path / "run")


def test_no_texts_give_no_rows(fitted):
    assert fitted.predict_proba([]).shape == (0, 2)


def test_input_overrides_and_unknown_members_are_refused_before_training(mr_slice):
    with pytest.raises(ConfigError, match="'max_length' cannot be set"):
        Classifier("ensemble", max_length=5).fit_dataset(mr_slice)
    with pytest.raises(ConfigError, match="unknown model 'no-such-preset'"):
        Classifier("ensemble", params={"members": ["tfidf-lr", "no-such-preset"]}).fit_dataset(mr_slice)


def test_a_member_error_names_the_member():
    from textcls.errors import DataError

    punctuation = textcls.Classifier("ensemble", params={"members": ["tfidf-lr", "tfidf-nb"]})
    with pytest.raises(DataError, match="ensemble member 'tfidf-lr': TF-IDF found no usable n-gram"):
        punctuation.fit(["!!", "??", "..", ";;", "!?", "?!"] * 10, ["a", "b"] * 30)


def test_too_many_weightings_are_refused():
    with pytest.raises(ConfigError, match="43,758 weightings"):
        ProbabilityEnsemble(2, members=[f"m{i}" for i in range(9)])


def test_multi_label_data_gets_independent_probabilities_and_round_trips(tmp_path):
    # Real TREC questions, two label families: the coarse class, and "asks about a number".
    trec = textcls.load_dataset("trec", max_per_split=400)
    texts = list(trec["train"]["text"])
    labels = [[c] + (["number"] if c == "NUM" or any(ch.isdigit() for ch in t) else [])
              for t, c in zip(texts, trec["train"]["label"])]
    clf = Classifier("ensemble", seed=0, params={"members": ["tfidf-lr", "tfidf-nb"]}).fit(texts, labels)
    test = list(trec["test"]["text"])[:100]
    probs = clf.predict_proba(test)
    assert probs.shape == (100, len(clf.classes_))
    assert ((probs >= 0) & (probs <= 1)).all()
    assert (np.abs(probs.sum(axis=1) - 1) > 0.05).any()  # one sigmoid per label, not a softmax over them
    clf.save_pretrained(tmp_path / "run")
    np.testing.assert_allclose(Classifier.from_pretrained(tmp_path / "run").predict_proba(test), probs, **KERNEL)


def test_each_member_is_announced_on_stderr_as_it_starts_only_with_progress(capsys):
    for index, name in enumerate(("tfidf-lr", "tfidf-nb", "static-finetune"), 1):
        announce_member(index, 3, name, progress=True)
    out, err = capsys.readouterr()
    assert out == "" and err.splitlines() == ["fitting member 1 of 3: tfidf-lr", "fitting member 2 of 3: tfidf-nb",
                                              "fitting member 3 of 3: static-finetune"]
    announce_member(1, 3, "tfidf-lr", progress=False)
    assert capsys.readouterr() == ("", "")


def test_the_ensembles_fit_names_each_member_as_it_starts_only_with_progress(capsys):
    texts = ["a good film", "a bad film", "so good", "so bad", "good acting", "bad acting"] * 4
    labels = ["pos", "neg"] * 12
    params = {"members": ["tfidf-lr", "tfidf-nb"], "small_corpus_members": {}, "small_corpus_replaces": []}
    Classifier("ensemble", params=params, progress=True).fit(texts, labels)
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if line.startswith("fitting member")] == [
        "fitting member 1 of 2: tfidf-lr", "fitting member 2 of 2: tfidf-nb"]
    Classifier("ensemble", params=params, progress=False).fit(texts, labels)
    assert "fitting member" not in capsys.readouterr().err
