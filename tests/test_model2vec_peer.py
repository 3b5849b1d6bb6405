"""The Model2Vec peers: frozen distilled MiniLM + logistic regression, and model2vec's own
fine-tuned StaticModelForClassification, on a small slice of TREC (six classes).

Both read the distilled MiniLM from the user cache (text/embeddings.minilm_static_model); the
first test on a fresh machine distils it once (25-45 s).
"""

import numpy as np
import pytest

import textcls
from textcls.benchmark.peers import PEERS, create_peer
from textcls.errors import ConfigError


@pytest.fixture(scope="module")
def trec():
    return textcls.load_dataset("trec", max_per_split=600)


def accuracy(peer, split):
    probs = peer.predict_proba(list(split["text"]))
    assert probs.shape == (len(split), 6)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)
    return float((peer.classes_[probs.argmax(axis=1)] == np.array(split["label"])).mean()), probs


def majority(split):
    labels = list(split["label"])
    return max(labels.count(c) for c in set(labels)) / len(labels)


def test_both_variants_are_peers_with_checked_parameters():
    assert {"model2vec-lr", "model2vec-finetune"} <= set(PEERS)
    with pytest.raises(ConfigError, match="unknown parameter 'lr' for peer 'model2vec-finetune'"):
        create_peer("model2vec-finetune", lr=0.1)
    with pytest.raises(ConfigError, match="unknown parameter 'epochs' for peer 'model2vec-lr'"):
        create_peer("model2vec-lr", epochs=3)


def test_model2vec_lr_learns_and_round_trips(trec):
    peer = create_peer("model2vec-lr", seed=0).fit(trec)
    acc, probs = accuracy(peer, trec["test"])
    assert acc > majority(trec["test"]) + 0.25, acc
    assert list(peer.classes_) == trec.label_names
    assert peer.embeddings_info_["dim"] == 256 and peer.epochs_run_ == 1
    assert peer.num_parameters()["trainable"] == 6 * 256 + 6
    arrays, meta = peer.state()
    again = create_peer("model2vec-lr", seed=0).load_state(arrays, meta)
    np.testing.assert_array_equal(again.predict_proba(list(trec["test"]["text"])), probs)


def test_model2vec_finetune_learns_and_round_trips(trec):
    peer = create_peer("model2vec-finetune", seed=0, max_epochs=3).fit(trec)
    acc, probs = accuracy(peer, trec["test"])
    assert acc > majority(trec["test"]) + 0.25, acc
    assert 1 <= peer.epochs_run_ <= 3
    assert peer.settings()["max_epochs"] == 3
    # The word-piece vectors are fine-tuned: every parameter trains.
    params = peer.num_parameters()
    assert params["trainable"] == params["total"] and params["embedding"] == 29525 * 256
    arrays, meta = peer.state()
    assert all(isinstance(v, np.ndarray) for v in arrays.values())  # no pickles: arrays and JSON
    again = create_peer("model2vec-finetune", seed=0, max_epochs=3).load_state(arrays, meta)
    np.testing.assert_array_equal(again.predict_proba(list(trec["test"]["text"])), probs)


def test_finetune_columns_follow_our_class_order_not_model2vecs_sorted_one():
    # model2vec sorts the class names; ag_news's are World, Sports, Business, Sci/Tech. Its
    # columns must be put back in our order (a regression: they were returned as they came).
    from types import SimpleNamespace

    peer = create_peer("model2vec-finetune", seed=0)
    peer.classes_ = np.array(["World", "Sports", "Business", "Sci/Tech"])
    model_probs = np.array([[0.1, 0.2, 0.3, 0.4]])  # Business, Sci/Tech, Sports, World
    peer.model_ = SimpleNamespace(classes_=["Business", "Sci/Tech", "Sports", "World"],
                                  predict_proba=lambda texts, batch_size: model_probs)
    np.testing.assert_array_equal(peer.predict_proba(["a text"]), [[0.4, 0.3, 0.1, 0.2]])
