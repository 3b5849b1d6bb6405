"""A save and load round trip, and the output's shape, for every neural family that its own
test file does not round-trip (an audit in stop 63 found cspan, dasa, the conventional
self-attention, DiSAN, HAN, the Transformer, the float LSTMs, single-task FCSR and SingleCNN-SPE
without one): one short fit on a TREC slice, then ``predict_proba`` before saving and after
``Classifier.from_pretrained`` must agree, within float32's kernel tolerance (the same weights,
texts and kernels: in practice bit for bit), and give one row of class probabilities per text.
A save that dropped or reordered a tensor, or a load that rebuilt the model with another
setting, moves these probabilities by far more."""

import numpy as np
import pytest
import torch
from tolerance import KERNEL

import textcls
from textcls import Classifier

# One preset per family, small and quick.
PRESETS = ["bilstm", "cspan-base", "dasa", "disan-t2t", "fcsr", "han-cpu", "lstm-stacked", "self-attention-dot",
           "spe-cnn", "transformer-1l-2h"]


@pytest.fixture(scope="module")
def trec_slice():
    return textcls.load_dataset("trec", max_per_split=300)


@pytest.mark.parametrize("preset", PRESETS)
def test_a_fitted_model_round_trips_and_gives_one_row_of_probabilities_per_text(preset, trec_slice, tmp_path):
    torch.manual_seed(0)
    clf = Classifier(preset, epochs=1, seed=0).fit_dataset(trec_slice)
    texts = list(trec_slice["test"]["text"][:40]) + ["?", "zzqx unseen words only"]
    before = clf.predict_proba(texts)
    classes = len(trec_slice.label_names)
    assert before.shape == (len(texts), classes) and len(clf.classes_) == classes
    np.testing.assert_allclose(before.sum(axis=1), 1.0, **KERNEL)
    clf.save_pretrained(tmp_path / "run")
    restored = Classifier.from_pretrained(tmp_path / "run")
    assert restored.model == preset and list(restored.classes_) == list(clf.classes_)
    np.testing.assert_allclose(restored.predict_proba(texts), before, **KERNEL)
    assert list(restored.predict(texts)) == list(clf.predict(texts))


# Presets whose own tests leave their learning unchecked (the same audit): Kim's random and
# two-channel CNNs, SingleCNN on one-hot word vectors (Table 4's bag of words), and a flat HCAN.
LEARNERS = {"kim-cnn-rand": {}, "kim-cnn-multichannel": {}, "single-cnn-bow": {},
            "hcan-flat-one-sa-maxpool-cpu": {"d_model": 16, "heads": 2, "lr": 5e-3}}


@pytest.fixture(scope="module")
def trec_600():
    return textcls.load_dataset("trec", max_per_split=600)


@pytest.mark.parametrize("preset", sorted(LEARNERS))
def test_the_preset_learns_trec_questions(preset, trec_600):
    """Six classes; the largest holds 28 % of the 500 test questions. 0.15 above it is seven
    binomial standard deviations (0.02): learning, not luck (4 epochs on 540 questions)."""
    from static_runs import assert_it_beats_the_majority_class

    torch.manual_seed(0)
    clf = Classifier(preset, epochs=4, seed=0, params=LEARNERS[preset] or None).fit_dataset(trec_600)
    assert_it_beats_the_majority_class(clf, trec_600["test"], margin=0.15)
