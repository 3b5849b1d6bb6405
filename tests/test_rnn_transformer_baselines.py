"""FCSR's baselines: LSTM / stacked LSTM / BiLSTM / stacked BiLSTM (models/lstm.py) and the
Transformer encoder classifier (models/transformer.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from flat_batches import assert_padded_batch_matches_each_alone, pad_documents, random_documents, random_matrix

from textcls.data import load_dataset
from textcls.data.prepare import prepare
from textcls.data.splits import ensure_dev
from textcls.errors import ConfigError
from textcls.models import create_model, get_preset
from textcls.models.layers import sinusoidal_encoding
from textcls.train import fit
from tolerance import KERNEL

VOCAB = 40
LSTM_PRESETS = ["lstm", "lstm-stacked", "bilstm", "bilstm-stacked"]
TRANSFORMER_PRESETS = ["transformer", "transformer-1l-1h", "transformer-1l-2h", "transformer-1l-6h",
                       "transformer-2l-2h", "transformer-3l-3h", "transformer-6l-1h", "transformer-6l-6h"]


def _pad(docs, length=None):
    return pad_documents(docs, length)


def _docs(lengths, seed=0):
    return random_documents(lengths, VOCAB, seed)


def _matrix(dim=50, seed=0):
    return random_matrix(VOCAB, dim, seed)


def _model(name, num_classes=3, **overrides):
    torch.manual_seed(0)
    return create_model(name, num_classes=num_classes, embeddings=_matrix(), **overrides)


# ----------------------------------------------------------------------------- LSTMs


@pytest.mark.parametrize("name, layers, directions", [
    ("lstm", 1, 1), ("lstm-stacked", 2, 1), ("bilstm", 1, 2), ("bilstm-stacked", 2, 2)])
def test_lstm_presets_have_the_closed_form_size(name, layers, directions):
    model = _model(name)
    assert model.rnn.num_layers == layers and model.rnn.bidirectional == (directions == 2)
    d, h, c = 50, 100, 3
    # PyTorch's LSTM: 4h x (input + h) weights and two 4h biases per layer and direction.
    lstm = sum(directions * (4 * h * ((d if layer == 0 else directions * h) + h) + 8 * h) for layer in range(layers))
    assert model.num_parameters() == VOCAB * d + lstm + directions * h * c + c
    assert model(_pad(_docs([4, 2]))).logits.shape == (2, 3)


@pytest.mark.parametrize("name", LSTM_PRESETS)
@pytest.mark.parametrize("pooling", ["last", "max"])
def test_lstm_padded_batch_gives_the_same_logits_as_each_document_alone(name, pooling):
    model = _model(name, pooling=pooling).eval()
    docs = _docs([9, 2, 1, 5], seed=1)
    assert_padded_batch_matches_each_alone(model, docs, length=12)


def test_bilstm_last_state_is_forward_end_and_backward_start():
    model = _model("bilstm").eval()
    doc = _docs([6], seed=2)[0]
    with torch.no_grad():
        logits = model(_pad([doc], length=9)).logits
        words = model.embedding.weight[doc].unsqueeze(0)
        outputs, _ = model.rnn(words)  # the document alone, no padding: plain LSTM
        hidden = model.rnn.hidden_size
        # Forward direction after the last word, backward direction after reading back to the first.
        document = torch.cat([outputs[0, -1, :hidden], outputs[0, 0, hidden:]])
        torch.testing.assert_close(logits[0], model.output(document), **KERNEL)


def test_lstm_pooling_choices_and_bad_settings():
    docs = _docs([5, 3], seed=3)
    with torch.no_grad():
        last, pooled = _model("lstm").eval(), _model("lstm", pooling="mean").eval()
        pooled.load_state_dict(last.state_dict())
        outputs, _ = pooled.rnn(pooled.embedding.weight[docs[1]].unsqueeze(0))
        torch.testing.assert_close(pooled(_pad(docs)).logits[1], pooled.output(outputs[0].mean(0)), **KERNEL)
        assert (last(_pad(docs)).logits - pooled(_pad(docs)).logits).abs().max() > 1e-4
    with pytest.raises(ConfigError, match="'pooling' = 'attention' is not one of last, max, mean"):
        _model("lstm", pooling="attention")
    with pytest.raises(ConfigError, match="'hidden_size' = 0 is outside"):
        _model("bilstm", hidden_size=0)


# ----------------------------------------------------------------------------- Transformer


@pytest.mark.parametrize("name, layers, heads", [
    ("transformer", 6, 6), ("transformer-1l-2h", 1, 2), ("transformer-3l-3h", 3, 3), ("transformer-6l-1h", 6, 1)])
def test_transformer_presets_have_their_layers_heads_and_size(name, layers, heads):
    model = _model(name)
    assert len(model.encoder.layers) == layers
    assert model.encoder.layers[0].self_attn.num_heads == heads
    d, m, c = 50, 60, 3
    # Projection 50 -> 60; per layer: in/out projections (4 m^2 + 4 m), FFN m -> 4m -> m, two LayerNorms.
    per_layer = 4 * m * m + 4 * m + (m * 4 * m + 4 * m) + (4 * m * m + m) + 4 * m
    assert model.num_parameters() == VOCAB * d + (d * m + m) + layers * per_layer + m * c + c


@pytest.mark.parametrize("name", ["transformer", "transformer-1l-2h"])
def test_transformer_padded_batch_gives_the_same_logits_as_each_document_alone(name):
    model = _model(name).eval()
    docs = _docs([10, 3, 1, 6], seed=4)
    assert_padded_batch_matches_each_alone(model, docs, length=14)


def test_transformer_one_layer_matches_a_hand_written_encoder_layer():
    model = _model("transformer-1l-2h", dropout=0.0).eval()
    doc = _docs([5], seed=5)[0]
    with torch.no_grad():
        logits = model(_pad([doc])).logits[0]
        x = model.project(model.embedding.weight[doc]) + sinusoidal_encoding(5, 60)
        layer = model.encoder.layers[0]
        q, k, v = F.linear(x, layer.self_attn.in_proj_weight, layer.self_attn.in_proj_bias).chunk(3, dim=-1)
        heads = []
        for h in range(2):  # two heads of 30 dimensions
            part = slice(30 * h, 30 * (h + 1))
            weights = torch.softmax(q[:, part] @ k[:, part].T / 30 ** 0.5, dim=-1)
            heads.append(weights @ v[:, part])
        attended = layer.self_attn.out_proj(torch.cat(heads, dim=-1))
        x = layer.norm1(x + attended)  # post-norm, as Vaswani et al.
        x = layer.norm2(x + layer.linear2(torch.relu(layer.linear1(x))))
        torch.testing.assert_close(logits, model.output(x.mean(0)), atol=1e-5, rtol=0)


def test_transformer_empty_document_is_finite_and_bad_heads_are_refused():
    model = _model("transformer-1l-2h").eval()
    with torch.no_grad():
        logits = model(_pad([[4, 5], []], length=3)).logits
    assert torch.isfinite(logits).all()
    torch.testing.assert_close(logits[1], model.output.bias)  # mean over no token is 0
    with pytest.raises(ConfigError, match="'num_heads' = 4 does not divide d_model = 50"):
        _model("transformer-1l-2h", num_heads=4, d_model=None)
    with pytest.raises(ConfigError, match="a batch has 20 tokens but max_positions = 16"):
        _model("transformer-1l-2h", max_positions=16)(_pad(_docs([20])))


# ----------------------------------------------------------------------------- every preset


@pytest.mark.parametrize("name", LSTM_PRESETS + TRANSFORMER_PRESETS)
def test_every_preset_builds_and_takes_an_adam_step(name):
    model = _model(name, num_classes=2)
    recipe = get_preset(name).recipe
    # Table 4's Transformer ran on batches of 2; Figures 4-5 and the LSTMs on batches of 20.
    assert recipe.optimizer == "adam" and recipe.batch_size == (2 if name == "transformer" else 20)
    assert get_preset(name).inputs["embeddings"] == "glove-6b-50d"
    before = {k: v.clone() for k, v in model.state_dict().items()}
    optimizer = torch.optim.Adam(model.parameters(), lr=recipe.lr)
    F.cross_entropy(model.train()(_pad(_docs([7, 3], seed=6))).logits, torch.tensor([0, 1])).backward()
    optimizer.step()
    changed = [k for k, v in model.state_dict().items() if not torch.equal(v, before[k])]
    assert "output.weight" in changed and any(k.startswith(("rnn.", "encoder.")) for k in changed)


@pytest.fixture(scope="module")
def trec_slice():
    dataset = ensure_dev(load_dataset("trec", max_per_split=600), fraction=0.2, seed=0)
    return prepare(dataset, get_preset("lstm").inputs)


# Narrower than the presets (the depth, heads and directions are kept) and batches of 10, so
# that each preset shows learning on 480 questions in a few seconds.
LEARNING_OVERRIDES = {"lstm": {"hidden_size": 32, "lr": 5e-3}, "transformer": {"d_model": 24, "lr": 1e-3}}


@pytest.mark.parametrize("name", LSTM_PRESETS + TRANSFORMER_PRESETS)
def test_presets_learn_trec_questions(trec_slice, name):
    torch.manual_seed(0)
    data = trec_slice
    preset = get_preset(name)
    overrides = {"epochs": 4, "patience": None, "batch_size": 10, **LEARNING_OVERRIDES[preset.family]}
    model = create_model(name, num_classes=data.num_classes, embeddings=data.embeddings.matrix, **overrides)
    recipe = preset.with_overrides(**overrides).recipe
    result = fit(model, data.loader("train", recipe.batch_size, shuffle=True), data.loader("dev", 100), recipe,
                 num_classes=data.num_classes, label_names=data.label_names, progress=False)
    labels = np.array(data.encoded["dev"].labels)
    majority = np.bincount(labels).max() / len(labels)
    losses = [row["train_loss"] for row in result.history]
    assert losses[-1] < 0.85 * losses[0]
    assert result.best_metrics["accuracy"] > majority + 0.15
