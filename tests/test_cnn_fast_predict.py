"""The CNNs' inference lookup (``fast_predict``) gives the convolution's probabilities.

In eval mode without autograd, ``SpeCNN`` and ``KimCNN`` compute each window of the
convolution as a sum of rows of a table (word vectors times each offset's weights, and for
SPE the positions' share per window start), built once and rebuilt when a weight changes.
Here, on real MR texts: sorted padded batches through the lookup against one document at a
time through the convolution, the table after the weights change, and training's path.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tolerance import KERNEL
from textcls import load_dataset
from textcls.data.batching import flat_batches
from textcls.models.kim_cnn import KimCNN
from textcls.models.spe_cnn import SpeCNN
from textcls.text.pipeline import TextPipeline

DIM = 12


@pytest.fixture(scope="module")
def texts():
    mr = load_dataset("mr", max_per_split=300)
    texts = list(mr["test"]["text"])[:120]
    # Documents shorter than every window (and empty), and one longer than the 64 positions
    # the encoding cache starts with, so that it grows during the call.
    return texts + ["good", "not good", "", " ".join(texts[:6])]


@pytest.fixture(scope="module")
def pipeline():
    mr = load_dataset("mr", max_per_split=300)
    return TextPipeline(lowercase=True).fit(list(mr["train"]["text"]))


def _vectors(pipeline, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(0.0, 0.5, (pipeline.vocab_size, DIM)).astype(np.float32)


MODELS = {
    "spe-cnn": lambda p: SpeCNN(p.vocab_size, 3, _vectors(p), embedding_dim=DIM, filters=8),
    "spe-cnn-pe-scaled": lambda p: SpeCNN(p.vocab_size, 3, _vectors(p), embedding_dim=DIM, filters=8,
                                          position_scale=0.1),
    "single-cnn-static": lambda p: SpeCNN(p.vocab_size, 3, _vectors(p), embedding_dim=DIM, filters=8,
                                          position_encoding=False),
    "single-cnn-nonstatic": lambda p: SpeCNN(p.vocab_size, 3, _vectors(p), embedding_dim=DIM, filters=8,
                                             embedding_mode="nonstatic", position_encoding=False),
    "kim-cnn-static": lambda p: KimCNN(p.vocab_size, 3, _vectors(p), embedding_dim=DIM, embedding_mode="static",
                                       feature_maps=6),
    "kim-cnn-multichannel": lambda p: KimCNN(p.vocab_size, 3, _vectors(p), embedding_dim=DIM,
                                             embedding_mode="multichannel", feature_maps=6),
}


def _build(name, pipeline):
    torch.manual_seed(0)
    model = MODELS[name](pipeline).eval()
    with torch.no_grad():  # move the biases away from zero, so that a lost bias shows
        for module in model.modules():
            if isinstance(module, (torch.nn.Conv1d, torch.nn.Linear)):
                module.bias.uniform_(-0.5, 0.5)
    return model


def _lookup(model, pipeline, texts, batch_size=16, fast=True):
    """Sorted, padded batches as prediction makes them, through the lookup (``fast``)."""
    model.fast_predict = fast
    flat = pipeline.encode_flat(texts)
    out = np.empty((len(texts), 3), dtype=np.float32)
    with torch.inference_mode():
        for rows, batch in flat_batches(flat.ids, flat.lengths, batch_size=batch_size):
            out[rows] = torch.softmax(model(batch).logits, dim=-1).numpy()
    return out


def _convolution(model, pipeline, texts):
    """One document a call (no padding at all), through the convolution."""
    try:
        return _lookup(model, pipeline, texts, batch_size=1, fast=False)
    finally:
        model.fast_predict = True


@pytest.mark.parametrize("name", sorted(MODELS))
def test_lookup_in_padded_batches_equals_convolution_one_document_at_a_time(name, pipeline, texts):
    model = _build(name, pipeline)
    np.testing.assert_allclose(_lookup(model, pipeline, texts), _convolution(model, pipeline, texts), **KERNEL)


@pytest.mark.parametrize("name", ["spe-cnn", "kim-cnn-static"])
def test_table_is_rebuilt_when_weights_change(name, pipeline, texts):
    model = _build(name, pipeline)
    before = _lookup(model, pipeline, texts)
    # load_state_dict copies in place: same tensors, new values.
    other = _build(name, pipeline)
    with torch.no_grad():
        for parameter in other.parameters():
            parameter.add_(torch.randn_like(parameter) * 0.3)
    model.load_state_dict(other.state_dict())
    after = _lookup(model, pipeline, texts)
    assert np.abs(after - before).max() > 1e-3
    np.testing.assert_allclose(after, _convolution(model, pipeline, texts), **KERNEL)


def test_table_follows_training_steps_of_fine_tuned_vectors(pipeline, texts):
    model = _build("single-cnn-nonstatic", pipeline)
    before = _lookup(model, pipeline, texts)
    flat = pipeline.encode_flat(texts)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)  # foreach steps: no version bump
    model.train()
    for _, batch in flat_batches(flat.ids, flat.lengths, batch_size=32):
        loss = model(batch).logits.square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    after = _lookup(model, pipeline, texts)
    assert np.abs(after - before).max() > 1e-3
    np.testing.assert_allclose(after, _convolution(model, pipeline, texts), **KERNEL)


@pytest.mark.parametrize("name", ["spe-cnn", "kim-cnn-nonstatic"])
def test_autograd_goes_through_the_convolution(name, pipeline, texts):
    if name == "kim-cnn-nonstatic":
        model = KimCNN(pipeline.vocab_size, 3, _vectors(pipeline), embedding_dim=DIM, embedding_mode="nonstatic",
                       feature_maps=6).eval()
    else:
        model = _build(name, pipeline)
    flat = pipeline.encode_flat(texts[:20])
    _, batch = next(flat_batches(flat.ids, flat.lengths, batch_size=20))
    model(batch).logits.sum().backward()  # eval mode, autograd on: the convolution, not the table
    convs = [model.conv] if isinstance(model, SpeCNN) else list(model.convs)
    assert all(conv.weight.grad is not None and conv.weight.grad.abs().sum() > 0 for conv in convs)
