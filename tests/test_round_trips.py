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
