"""DASA (Zhang et al. 2021) and its Table 3 baselines: equations, masking, presets, learning."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from textcls.data import load_dataset
from textcls.data.prepare import prepare
from textcls.data.splits import ensure_dev
from textcls.errors import ConfigError
from textcls.models import create_model, get_preset, list_models
from textcls.models.dasa import (
    FeatureAxialAttention,
    TextAxialAttention,
    attenuation_matrix,
    multi_dimensional_self_attention,
    row_mean_normalised,
)
from textcls.train.engine import fit
from tolerance import FEW_OPS, KERNEL, approx32

VOCAB = 60
BUCKETS = 40
DASA_PRESETS = ["dasa", "dasa-softmax", "dasa-text-axial", "dasa-text-axial-no-attenuation",
                "dasa-text-axial-attenuation-shape"]
SA_PRESETS = ["self-attention-additive", "self-attention-general", "self-attention-dot", "self-attention-scaled-dot"]
ALL_PRESETS = DASA_PRESETS + SA_PRESETS + ["disan-t2t"]


def _pad(docs, length=None):
    length = length or max(1, max(len(d) for d in docs))
    ids = torch.zeros(len(docs), length, dtype=torch.long)
    for row, doc in enumerate(docs):
        ids[row, : len(doc)] = torch.tensor(doc, dtype=torch.long)
    return ids


def _docs(lengths, seed=0, high=VOCAB):
    rng = np.random.default_rng(seed)
    return [rng.integers(2, high, size=n).tolist() for n in lengths]


def _batch(word_docs, word_length=None, bigram_length=None, buckets=BUCKETS):
    """Words plus their hashed-bigram-like ids: one id per adjacent pair, as TextPipeline makes."""
    ids = _pad(word_docs, word_length)
    batch = {"input_ids": ids, "mask": ids > 0}
    if buckets:
        bigram_docs = [[(a * 7 + b) % buckets + 1 for a, b in zip(doc, doc[1:])] for doc in word_docs]
        bigrams = _pad(bigram_docs, bigram_length)
        batch.update(bigram_ids=bigrams, bigram_mask=bigrams > 0)
    return batch


def _model(name, dim=6, **overrides):
    torch.manual_seed(0)
    overrides = {"embedding_dim": dim, "hidden_dim": 5, "bigram_buckets": BUCKETS, **overrides}
    return create_model(name, num_classes=3, vocab_size=VOCAB, **overrides)


def _identity_(linear):
    with torch.no_grad():
        linear.weight.copy_(torch.eye(linear.weight.size(0)))
        linear.bias.zero_()


# ---------------------------------------------------------------- equations


def test_attenuation_matrix_matches_eq_9_by_hand():
    zeta = attenuation_matrix(torch.tensor([0, 1, 2, 3]))
    # w = c = e: 1 / log(e * k + e) = 1 / (1 + log(1 + k)) at distance k.
    by_distance = [1.0, 1 / (1 + math.log(2)), 1 / (1 + math.log(3)), 1 / (1 + math.log(4))]
    # float64: Python floats against the 7-decimal literals
    assert by_distance[1:] == pytest.approx([0.5906161, 0.4765053, 0.4190598], abs=1e-7)
    expected = torch.tensor([[by_distance[abs(i - j)] for j in range(4)] for i in range(4)])
    torch.testing.assert_close(zeta, expected, **FEW_OPS)
    # Other w and c, batched positions with a gap (appended bigrams continue the count).
    zeta = attenuation_matrix(torch.tensor([[0, 1, 5]]), w=2.0, c=3.0)
    assert zeta.shape == (1, 3, 3)
    assert zeta[0, 0, 2].item() == approx32(1 / math.log(2 * 5 + 3))
    assert zeta[0, 1, 1].item() == approx32(1 / math.log(3))
    assert zeta[0, 2, 1].item() == approx32(1 / math.log(2 * 4 + 3))


def test_row_mean_attenuation_keeps_eq_9s_shape_and_drops_its_scale_over_the_real_keys():
    positions = torch.arange(5).unsqueeze(0)
    zeta = attenuation_matrix(positions)
    mask = torch.tensor([[True, True, True, False, False]])  # 3 real words, 2 padded
    scaled = row_mean_normalised(zeta, mask)
    real = scaled[0, :3, :3]
    torch.testing.assert_close(real.mean(dim=-1), torch.ones(3), **FEW_OPS)  # each row averages 1
    # the decay with distance is eq. 9's: ratios within a row are unchanged
    torch.testing.assert_close(real[0] / real[0, 0], zeta[0, 0, :3] / zeta[0, 0, 0], **FEW_OPS)
    # by hand for the first row: zeta = [1, z1, z2] over 3 real keys, divided by its mean
    z1, z2 = 1 / (1 + math.log(2)), 1 / (1 + math.log(3))
    assert real[0, 1].item() == approx32(z1 / ((1 + z1 + z2) / 3))
    # padding changes nothing: the 3-word document alone gives the same rows
    alone = row_mean_normalised(attenuation_matrix(positions[:, :3]), mask[:, :3])
    torch.testing.assert_close(real, alone[0], **FEW_OPS)
    # eq. 9 itself shrinks the weights: its real rows average well under 1
    assert zeta[0, :3, :3].mean() < 0.75
    # a document without real words keeps finite (zero-weighted) rows, not 0 / 0
    assert torch.isfinite(row_mean_normalised(zeta, torch.zeros(1, 5, dtype=torch.bool))).all()


def test_row_mean_text_axis_is_eq_6_to_8_with_the_scaled_zeta_and_an_empty_document_stays_finite():
    torch.manual_seed(0)
    module = TextAxialAttention(4, attenuation_scale="row-mean").eval()
    x = torch.randn(2, 5, 4)
    mask = torch.tensor([[True] * 5, [False] * 5])  # the second document has no real word
    positions = torch.arange(5).expand(2, 5)
    with torch.no_grad():
        h, _ = module(x, mask, positions)
        zeta = row_mean_normalised(attenuation_matrix(positions), mask)
        expected, _ = multi_dimensional_self_attention(module.query(x), module.key(x), module.value(x), x,
                                                       key_mask=mask, attenuation=zeta,
                                                       normaliser=torch.tensor([1 / 5, 1.0]).view(2, 1, 1))
    torch.testing.assert_close(h, expected, **FEW_OPS)
    assert torch.isfinite(h).all()
    model = _model("dasa-text-axial-attenuation-shape").eval()
    empty = {"input_ids": torch.zeros(1, 3, dtype=torch.long), "mask": torch.zeros(1, 3, dtype=torch.bool),
             "bigram_ids": torch.zeros(1, 2, dtype=torch.long), "bigram_mask": torch.zeros(1, 2, dtype=torch.bool)}
    with torch.no_grad():
        assert torch.isfinite(model(empty).logits).all()


def test_row_mean_preset_shares_the_text_axial_weights_and_changes_only_the_scale_of_zeta():
    paper, shape = _model("dasa-text-axial"), _model("dasa-text-axial-attenuation-shape")
    assert get_preset("dasa-text-axial-attenuation-shape").arch == {"axes": "text", "attenuation_scale": "row-mean"}
    for (key, a), (_, b) in zip(paper.state_dict().items(), shape.state_dict().items()):
        assert torch.equal(a, b), key
    batch = _batch(_docs([7, 5], seed=4))
    with torch.no_grad():
        assert (paper.eval()(batch).logits - shape.eval()(batch).logits).abs().max() > 1e-4


def _softplus(v):
    return math.log1p(math.exp(v))


def test_multi_dimensional_attention_eqs_6_to_8_by_hand_and_softmax_differs():
    # One feature (D = 1), two elements: scores q_i * k_j = [[1, -1], [2, -2]].
    q, k, v, x = (torch.tensor([[[a], [b]]]) for a, b in ((1.0, 2.0), (1.0, -1.0), (1.0, 3.0), (2.0, 4.0)))
    h, gate = multi_dimensional_self_attention(q, k, v, x)
    w0 = _softplus(1) * 1 + _softplus(-1) * 3
    w1 = _softplus(2) * 1 + _softplus(-2) * 3
    # float64: Python floats against the 7-decimal literals
    assert w0 == pytest.approx(2.2530468, abs=1e-6) and w1 == pytest.approx(2.5077121, abs=1e-6)
    torch.testing.assert_close(gate[0, :, 0], torch.tensor([_softplus(w0), _softplus(w1)]), **FEW_OPS)
    torch.testing.assert_close(h[0, :, 0], torch.tensor([_softplus(w0) * 2, _softplus(w1) * 4]), **FEW_OPS)

    # The ablation: softmax over j (rows sum to 1) in eq. 6 only; eq. 8's softplus stays.
    h_max, gate_max = multi_dimensional_self_attention(q, k, v, x, alpha="softmax")
    p0, p1 = torch.softmax(torch.tensor([1.0, -1.0]), 0), torch.softmax(torch.tensor([2.0, -2.0]), 0)
    w_max = torch.stack([p0 @ torch.tensor([1.0, 3.0]), p1 @ torch.tensor([1.0, 3.0])])
    torch.testing.assert_close(gate_max[0, :, 0], F.softplus(w_max))
    assert (h - h_max).abs().min() > 0.5  # a real difference, not rounding

    # Attenuation multiplies the weights (eq. 10), mu the output (eq. 11), masked keys drop out.
    zeta = torch.tensor([[1.0, 0.5], [0.25, 1.0]])
    h_att, _ = multi_dimensional_self_attention(q, k, v, x, attenuation=zeta, normaliser=torch.tensor(0.5))
    w0 = _softplus(1) + 0.5 * _softplus(-1) * 3
    assert h_att[0, 0, 0].item() == approx32(_softplus(w0) * 2 * 0.5)
    h_masked, _ = multi_dimensional_self_attention(q, k, v, x, key_mask=torch.tensor([[True, False]]))
    assert h_masked[0, 1, 0].item() == approx32(_softplus(_softplus(2)) * 4)
    with pytest.raises(ConfigError, match="parameter 'alpha' = 'relu' is not one of softplus, softmax"):
        multi_dimensional_self_attention(q, k, v, x, alpha="relu")


def test_text_axial_mu_is_one_over_the_true_length_and_padding_changes_nothing():
    torch.manual_seed(0)
    module = TextAxialAttention(4).eval()
    x = torch.randn(1, 3, 4)
    padded = torch.cat([x, torch.zeros(1, 3, 4)], dim=1)
    mask = torch.tensor([[True] * 3 + [False] * 3])
    positions = torch.arange(6).unsqueeze(0)
    with torch.no_grad():
        h_alone, gate_alone = module(x, torch.ones(1, 3, dtype=torch.bool), positions[:, :3])
        h_padded, _ = module(padded, mask, positions)
        torch.testing.assert_close(h_padded[:, :3], h_alone, **KERNEL)
        assert h_padded[:, 3:].abs().max() == 0
        # mu = 1/3 (the true length), not 1/6 (the padded one).
        torch.testing.assert_close(h_alone, gate_alone * x / 3, **FEW_OPS)
        q, k, v = module.query(x), module.key(x), module.value(x)
        zeta = attenuation_matrix(torch.arange(3))
        w = (F.softplus(q @ k.transpose(1, 2)) * zeta) @ v
        torch.testing.assert_close(h_alone, F.softplus(w) * x / 3, **KERNEL)
        assert (h_alone - F.softplus(w) * x / 6).abs().max() > 1e-3


def test_feature_axial_is_the_text_axial_computation_on_the_transposed_input():
    torch.manual_seed(0)
    batch, length, dim = 2, 5, 3
    x = torch.randn(batch, length, dim)
    feature = FeatureAxialAttention(dim)
    text = TextAxialAttention(length, attenuation=False, normalise=False)  # elements = features
    for module in (feature, text):
        for proj in (module.query, module.key, module.value):
            _identity_(proj)
    with torch.no_grad():
        h_feature, gate_feature = feature(x, torch.ones(batch, length, dtype=torch.bool))
        xt = x.transpose(1, 2)
        h_text, gate_text = text(xt, torch.ones(batch, dim, dtype=torch.bool), torch.arange(dim).expand(batch, dim))
    torch.testing.assert_close(h_feature, h_text.transpose(1, 2))
    torch.testing.assert_close(gate_feature, gate_text.transpose(1, 2))
    # Not the text-axial result on the untransposed input.
    plain = TextAxialAttention(dim, attenuation=False, normalise=False)
    for proj in (plain.query, plain.key, plain.value):
        _identity_(proj)
    with torch.no_grad():
        h_plain, _ = plain(x, torch.ones(batch, length, dtype=torch.bool), torch.arange(length).expand(batch, length))
    assert (h_plain - h_feature).abs().max() > 1e-2


def test_feature_axial_with_projections_matches_the_formula_and_ignores_padding():
    torch.manual_seed(1)
    module = FeatureAxialAttention(3)
    x = torch.randn(1, 4, 3)
    with torch.no_grad():
        h, gate = module(x, torch.ones(1, 4, dtype=torch.bool))
        q, k, v = module.query(x)[0], module.key(x)[0], module.value(x)[0]  # [N, d]
        # Features i, j: score = sum over tokens n of Q[n, i] K[n, j]; w[n, i] = sum_j a_ij V[n, j].
        alpha = F.softplus(q.T @ k)  # [d, d]
        w = v @ alpha.T
        torch.testing.assert_close(gate[0], F.softplus(w), **KERNEL)
        torch.testing.assert_close(h[0], F.softplus(w) * x[0], **KERNEL)
        padded = torch.cat([x, torch.randn(1, 2, 3)], dim=1)  # garbage at padding must not leak
        h_padded, _ = module(padded, torch.tensor([[True] * 4 + [False] * 2]))
    torch.testing.assert_close(h_padded[:, :4], h, **KERNEL)


def test_fusion_gate_and_pooling_follow_eqs_12_and_13():
    model = _model("dasa").eval()
    batch = _batch(_docs([5, 3], seed=2), word_length=7)
    with torch.no_grad():
        x, mask, positions = model.embed(batch)
        attention = model.attention
        h_t, _ = attention.text(x, mask, positions)
        h_f, _ = attention.feature(x, mask)
        f = torch.sigmoid(h_f @ attention.gate_feature.weight.T + h_t @ attention.gate_text.weight.T
                          + attention.gate_text.bias)
        fused = f * h_t + (1 - f) * h_f
        u = torch.tanh(torch.stack([fused[0, :5].sum(0), fused[1, :3].sum(0)]))
        expected = model.output(torch.sigmoid(model.hidden(u)))
        out = model(batch)
    torch.testing.assert_close(out.logits, expected, **KERNEL)
    torch.testing.assert_close(out.attentions["fusion_gate"][1, :3], f[1, :3])
    assert out.attentions["fusion_gate"][1, 3:].abs().max() == 0


def test_bigrams_are_added_to_the_word_they_start_at_or_appended():
    model = _model("dasa")
    doc = [5, 9, 4]
    batch = _batch([doc])
    x, mask, positions = model.embed(batch)
    words, bigrams = model.words.weight, model.bigrams.weight
    pairs = batch["bigram_ids"][0].tolist()
    torch.testing.assert_close(x[0], torch.stack([words[5] + bigrams[pairs[0]], words[9] + bigrams[pairs[1]], words[4]]))
    assert positions.tolist() == [[0, 1, 2]] and mask.all()

    appended = _model("dasa", bigram_combine="append")
    padded = _batch([doc, [7, 8, 9, 10, 11]], word_length=6, bigram_length=5)
    x, mask, positions = appended.embed(padded)
    assert x.shape == (2, 11, 6)
    assert mask[0].tolist() == [True] * 3 + [False] * 3 + [True] * 2 + [False] * 3
    # Positions count real tokens only: the bigrams follow the third word at places 3 and 4.
    assert positions[0, 6:8].tolist() == [3, 4]
    torch.testing.assert_close(x[0, 6], appended.bigrams.weight[padded["bigram_ids"][0, 0]])


# ---------------------------------------------------------------- masking invariance


@pytest.mark.parametrize("name, combine", [(n, "add") for n in ALL_PRESETS] + [("dasa", "append"), ("dasa-softmax", "append")])
def test_padded_batch_gives_the_same_logits_as_each_document_alone(name, combine):
    model = _model(name, bigram_combine=combine).eval()
    docs = _docs([9, 1, 4, 2, 6], seed=3)
    batch = _batch(docs, word_length=12, bigram_length=10)  # extra padding past the longest too
    with torch.no_grad():
        out = model(batch)
        for row, doc in enumerate(docs):
            alone = model(_batch([doc]))
            torch.testing.assert_close(out.logits[row : row + 1], alone.logits, atol=1e-5, rtol=0)
            if combine == "append":
                continue  # the maps' layout (words, then bigrams) moves with the padding
            for key, weights in out.attentions.items():
                # Every axis that runs over the 12 padded positions is cut to the document's own.
                real = tuple(slice(0, len(doc)) if size == 12 else slice(None) for size in weights.shape[1:])
                torch.testing.assert_close(weights[(slice(row, row + 1),) + real], alone.attentions[key],
                                           atol=1e-5, rtol=0)
                assert weights[row, len(doc) :].abs().max() == 0


def test_dasa_attention_maps_are_per_word_and_dimension_in_eval_only():
    model = _model("dasa", dim=5)
    batch = _batch(_docs([6, 3], seed=4), word_length=7)
    assert model.train()(batch).attentions == {}
    out = model.eval()(batch)
    assert set(out.attentions) == {"text_axial", "feature_axial", "fusion_gate"}
    for weights in out.attentions.values():
        assert weights.shape == (2, 7, 5)
        assert weights[1, 3:].abs().max() == 0 and weights[0, :6].min() > 0
    with torch.no_grad():
        x, mask, positions = model.embed(batch)
        _, gate = model.attention.text(x, mask, positions)
    torch.testing.assert_close(out.attentions["text_axial"][0, :6], gate[0, :6])
    text_only = _model("dasa-text-axial", dim=5).eval()
    assert set(text_only(batch).attentions) == {"text_axial"}


# ---------------------------------------------------------------- baselines


@pytest.mark.parametrize("score", ["additive", "general", "dot", "scaled-dot"])
def test_conventional_self_attention_scores_follow_table_1(score):
    model = _model(f"self-attention-{score}", dim=4).eval()
    batch = _batch(_docs([5, 3], seed=5), word_length=5)
    with torch.no_grad():
        out = model(batch)
        x, mask, _ = model.embed(batch)
        q, k, v = model.query(x[1, :3]), model.key(x[1, :3]), model.value(x[1, :3])
        if score == "additive":
            scores = torch.stack([
                torch.stack([model.score_vector.weight[0] @ torch.tanh(model.score_query.weight @ q[i]
                                                                       + model.score_key.weight @ k[j])
                             for j in range(3)]) for i in range(3)])
        elif score == "general":
            scores = q @ model.score_query.weight.T @ k.T  # q_i^T W k_j with W = weight^T
        else:
            scores = q @ k.T / (2.0 if score == "scaled-dot" else 1.0)  # sqrt(d) = 2
        weights = torch.softmax(scores, dim=-1)
        h = weights @ v
        expected = model.output(torch.sigmoid(model.hidden(torch.tanh(h.sum(0)))))
    torch.testing.assert_close(out.attentions["text"][1, :3, :3], weights, **KERNEL)
    assert out.attentions["text"][1, 3:].abs().max() == 0 and out.attentions["text"][1, :, 3:].abs().max() == 0
    torch.testing.assert_close(out.logits[1], expected, **KERNEL)


def test_disan_weights_are_a_softmax_per_feature_over_the_real_tokens():
    model = _model("disan-t2t", dim=4).eval()
    batch = _batch(_docs([5, 3], seed=6), word_length=5)
    captured = {}
    handle = model.pair_output.register_forward_hook(lambda m, i, o: captured.setdefault("scores", o))
    with torch.no_grad():
        out = model(batch)
    handle.remove()
    scores = captured["scores"]
    assert scores.shape == (2, 5, 5, 4)  # the b x N x N x d tensor of the previous MDSA
    per_feature = torch.softmax(scores[1, :3, :3], dim=1)  # over keys j, for each (i, feature)
    torch.testing.assert_close(out.attentions["token2token"][1, :3, :3], per_feature.mean(-1), **KERNEL)


def _saved_tensor_shapes(model, batch):
    shapes = []

    def pack(tensor):
        shapes.append(tuple(tensor.shape))
        return tensor

    model.train()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(batch).logits.sum().backward()
    return shapes


def test_dasa_keeps_no_b_x_n_x_n_x_d_tensor_and_disan_does():
    batch_size, length, dim = 2, 7, 5
    batch = _batch(_docs([7, 4], seed=7), word_length=length)
    for name in DASA_PRESETS:
        shapes = _saved_tensor_shapes(_model(name, dim=dim), batch)
        # Linear layers save their input flattened to 2-D, so the size is the test, not the rank.
        assert max(math.prod(s) for s in shapes) <= batch_size * length * length, name
        assert (batch_size, length, length) in shapes, name  # the score matrix is the largest
    shapes = _saved_tensor_shapes(_model("disan-t2t", dim=dim), batch)
    assert (batch_size, length, length, dim) in shapes
    assert max(math.prod(s) for s in shapes) == batch_size * length * length * dim


# ---------------------------------------------------------------- presets


def test_parameter_counts_are_the_closed_forms():
    d, h, c, buckets = 6, 5, 3, BUCKETS
    frame = VOCAB * d + (buckets + 1) * d + d * h + h + h * c + c
    projections = 3 * (d * d + d)
    assert _model("dasa").num_parameters() == frame + 2 * projections + 2 * d * d + d
    assert _model("dasa-softmax").num_parameters() == frame + 2 * projections + 2 * d * d + d
    assert _model("dasa-text-axial").num_parameters() == frame + projections
    assert _model("self-attention-dot").num_parameters() == frame + projections
    assert _model("self-attention-general").num_parameters() == frame + projections + d * d
    assert _model("self-attention-additive").num_parameters() == frame + projections + 2 * d * d + d
    assert _model("disan-t2t").num_parameters() == frame + 6 * d * d + 4 * d


def test_glorot_weights_zero_biases_and_zero_pad_rows():
    model = _model("dasa", dim=6)
    for name, param in model.named_parameters():
        if name.endswith("bias"):
            assert torch.equal(param, torch.zeros_like(param)), name
        else:
            fan_out, fan_in = param.shape
            bound = math.sqrt(6.0 / (fan_in + fan_out))
            assert param.abs().max() <= bound + 1e-7, name
            assert param.abs().max() > 0.5 * bound, name  # drawn from the whole range
    assert model.words.weight[0].abs().max() == 0 and model.bigrams.weight[0].abs().max() == 0


def test_presets_follow_the_paper_and_say_what_is_ours():
    assert set(ALL_PRESETS) <= set(list_models())
    for name in ALL_PRESETS:
        preset = get_preset(name)
        assert preset.recipe.optimizer == "adam" and preset.inputs["embeddings"] is None
        assert preset.inputs["bigram_buckets"] > 0 and "paper gives no sizes" in preset.description
    assert get_preset("disan-t2t").inputs["max_length"] < get_preset("dasa").inputs["max_length"]
    assert get_preset("dasa-softmax").arch == {"alpha": "softmax"}
    assert get_preset("dasa-text-axial-no-attenuation").arch == {"axes": "text", "attenuation": False}
    dasa, softmax = _model("dasa"), _model("dasa-softmax")
    batch = _batch(_docs([6, 4], seed=8))
    for (key, a), (_, b) in zip(dasa.state_dict().items(), softmax.state_dict().items()):
        assert torch.equal(a, b), key  # same weights ...
    with torch.no_grad():
        assert (dasa.eval()(batch).logits - softmax.eval()(batch).logits).abs().max() > 1e-4  # ... other logits


@pytest.mark.parametrize("name", ALL_PRESETS)
def test_every_preset_builds_with_its_own_sizes_and_takes_an_adam_step(name):
    torch.manual_seed(0)
    model = create_model(name, num_classes=4, vocab_size=VOCAB)
    assert model.words.weight.shape == (VOCAB, 64) and model.bigrams.num_embeddings == (1 << 14) + 1
    batch = _batch(_docs([8, 3, 5], seed=9), buckets=1 << 14)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    loss = F.cross_entropy(model.train()(batch).logits, torch.tensor([0, 1, 3]))
    loss.backward()
    optimizer.step()
    assert torch.isfinite(loss)
    moved = [k for k, v in model.named_parameters() if not torch.equal(v, before[k])]
    assert "output.weight" in moved and "words.weight" in moved and "bigrams.weight" in moved
    assert len(moved) == len(before)  # every parameter gets a gradient


def test_bad_settings_are_one_line_config_errors():
    cases = [
        ({"axes": "feature"}, "parameter 'axes' = 'feature' is not one of dual, text"),
        ({"alpha": "sparsemax"}, "parameter 'alpha' = 'sparsemax' is not one of softplus, softmax"),
        ({"attenuation_c": 1.0}, r"parameter 'attenuation_c' = 1.0 is outside its allowed range \(1.0"),
        ({"attenuation_w": -1.0}, "parameter 'attenuation_w' = -1.0 is outside"),
        ({"attenuation_scale": "max"}, "parameter 'attenuation_scale' = 'max' is not one of paper, row-mean"),
        ({"attenuation": False, "attenuation_scale": "row-mean"}, "attenuation=False turns off"),
        ({"bigram_combine": "concat"}, "parameter 'bigram_combine' = 'concat' is not one of add, append"),
        ({"hidden_dim": 0}, "parameter 'hidden_dim' = 0 is outside"),
        ({"dropout": 1.0}, "parameter 'dropout' = 1.0 is outside"),
    ]
    for overrides, message in cases:
        with pytest.raises(ConfigError, match=message) as info:
            _model("dasa", **overrides)
        assert "\n" not in str(info.value)
    with pytest.raises(ConfigError, match="parameter 'score' = 'cosine'"):
        _model("self-attention-dot", score="cosine")
    model = _model("dasa")
    with pytest.raises(ConfigError, match="model 'dasa' has bigram_buckets > 0 and needs 'bigram_ids'"):
        model(_batch(_docs([3]), buckets=0))
    bad = _batch(_docs([3]))
    bad["bigram_ids"], bad["bigram_mask"] = torch.ones(1, 3, dtype=torch.long), torch.ones(1, 3, dtype=torch.bool)
    with pytest.raises(ConfigError, match="more bigrams than adjacent word pairs"):
        model(bad)


# ---------------------------------------------------------------- learning on real data


@pytest.fixture(scope="module")
def trec_slice():
    dataset = ensure_dev(load_dataset("trec", max_per_split=400), fraction=0.25, seed=0)
    inputs = {**get_preset("dasa").inputs, "embedding_dim": 16, "bigram_buckets": 1 << 10}
    return prepare(dataset, inputs)


@pytest.mark.parametrize("name", ALL_PRESETS)
def test_each_preset_learns_on_a_trec_slice(trec_slice, name):
    torch.manual_seed(0)
    model = create_model(name, num_classes=trec_slice.num_classes, vocab_size=trec_slice.pipeline.vocab_size,
                         embedding_dim=16, hidden_dim=16, bigram_buckets=1 << 10)
    recipe = model.preset.recipe.with_overrides(lr=2e-2, epochs=3, patience=None, batch_size=32)
    result = fit(model, trec_slice.loader("train", 32, shuffle=True), trec_slice.loader("dev", 128), recipe,
                 num_classes=trec_slice.num_classes, progress=False)
    losses = [row["train_loss"] for row in result.history]
    dev_labels = np.array(trec_slice.encoded["dev"].labels)
    majority = np.bincount(dev_labels).max() / len(dev_labels)
    assert losses[-1] < 0.6 * losses[0], losses
    assert result.best_metrics["accuracy"] > majority + 0.2, (result.best_metrics["accuracy"], majority)
