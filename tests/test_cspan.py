"""CSPAN (Jiang et al. 2020): equations 4-16, masking, parameter count, presets, learning."""

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
from textcls.models.cspan import RelativeSelfAttention
from textcls.train.engine import fit

VOCAB = 40
CSPAN_PRESETS = list_models("cspan*")
# One preset per code path (Table 4's grid only changes sizes of cspan-base's path).
DISTINCT_PRESETS = [n for n in CSPAN_PRESETS if not n.startswith("cspan-l")]



def _docs(lengths, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(2, VOCAB, size=n).tolist() for n in lengths]


def _batch(docs, length=None):
    length = length or max(len(d) for d in docs)
    ids = torch.zeros(len(docs), length, dtype=torch.long)
    for row, doc in enumerate(docs):
        ids[row, : len(doc)] = torch.tensor(doc)
    return {"input_ids": ids, "mask": ids > 0}


def _vectors(dim, seed=0):
    matrix = np.random.default_rng(seed).normal(size=(VOCAB, dim)).astype(np.float32)
    matrix[0] = 0
    return matrix


def _model(name, dim=8, **overrides):
    torch.manual_seed(0)
    return create_model(name, num_classes=4, vocab_size=VOCAB, embeddings=_vectors(dim), embedding_dim=dim,
                        **overrides)


# ---------------------------------------------------------------- a direct reading of the equations


def _layer_norm(norm, x):
    centred = x - x.mean(-1, keepdim=True)
    return centred / torch.sqrt(centred.pow(2).mean(-1, keepdim=True) + norm.eps) * norm.weight + norm.bias


def _attend(x):
    """Eq. 4 for one document: softmax(X X^T / sqrt(d)) X."""
    return torch.softmax(x @ x.T / math.sqrt(x.size(1)), dim=-1) @ x


def _sinusoid(length, dim):
    pe = torch.zeros(length, dim)
    for t in range(length):
        for i in range(0, dim, 2):
            pe[t, i] = math.sin(t / 10000 ** (i / dim))
            if i + 1 < dim:
                pe[t, i + 1] = math.cos(t / 10000 ** (i / dim))
    return pe


def _relative(attention, x):
    """Shaw et al. eqs. 3-4 without projections, pair by pair."""
    length, dim = x.shape
    k = attention.clip
    a_key, a_value = attention.key_positions, attention.value_positions
    rel = [[min(max(j - i, -k), k) + k for j in range(length)] for i in range(length)]
    scores = torch.stack([torch.stack([x[i] @ (x[j] + a_key[rel[i][j]]) for j in range(length)])
                          for i in range(length)]) / math.sqrt(dim)
    alpha = torch.softmax(scores, dim=-1)
    return torch.stack([sum(alpha[i, j] * (x[j] + a_value[rel[i][j]]) for j in range(length))
                        for i in range(length)])


def _reference_logits(model, doc):
    """The paper's equations for one unpadded document, written out directly."""
    words = model.embedding.weight[torch.tensor(doc)]  # D [L, d]
    if model.fusion == "sinusoidal":
        words = words + _sinusoid(*words.shape)
    add = model.add_and_norm  # the Transformer's reading: LN(x + Att(x))
    if model.fusion == "relative":
        semantic = _layer_norm(model.semantic_norm, add * words + _relative(model.relative, words))
    elif model.semantic_attention:
        semantic = _layer_norm(model.semantic_norm, add * words + _attend(words))  # S (eq. 4)
    else:
        semantic = words
    if model.lstm is None:
        features = semantic
    else:
        hidden = model.lstm((words if model.fusion == "parallel" else semantic).unsqueeze(0))[0][0]  # H (eqs. 5-7)
        positional = (_layer_norm(model.positional_norm, add * hidden + _attend(hidden))
                      if model.positional_attention else hidden)
        features = semantic + positional if model.residual else positional  # F (eq. 9)
    if model.pooling == "mean":
        document = features.mean(0)
    else:
        u = torch.tanh(features @ model.attention_hidden.weight.T + model.attention_hidden.bias)  # eq. 10
        alpha = torch.softmax(u @ model.queries.T, dim=0)  # eq. 11: over positions, one column a query
        pooled = alpha.T @ features  # eq. 12 [m, d]
        document = model.fusion_matrix.weight @ pooled.reshape(-1)  # eq. 13, F_1 first
    return model.output.weight @ document + model.output.bias  # eq. 15


@pytest.mark.parametrize("name", DISTINCT_PRESETS)
def test_every_preset_computes_the_papers_equations(name):
    model = _model(name, queries=3, relative_clip=2).eval()
    docs = _docs([6, 3, 1], seed=1)
    with torch.no_grad():
        logits = model(_batch(docs, length=8)).logits
        for row, doc in enumerate(docs):
            torch.testing.assert_close(logits[row], _reference_logits(model, doc), atol=1e-5, rtol=1e-5)


def test_eq_4_semantic_attention_by_hand():
    # d = 2 word vectors (1, 0), (0, 1), (1, 1): scores x_i . x_j / sqrt(2), softmax over each row.
    matrix = np.zeros((VOCAB, 2), dtype=np.float32)
    matrix[2], matrix[3], matrix[4] = (1, 0), (0, 1), (1, 1)
    model = create_model("cspan-fusion-embedding", num_classes=2, vocab_size=VOCAB, embeddings=matrix,
                         embedding_dim=2).eval()
    with torch.no_grad():
        weights = model(_batch([[2, 3, 4], [4]], length=4)).attentions["semantic"]
    r = 1 / math.sqrt(2)
    expected = torch.softmax(torch.tensor([[r, 0, r], [0, r, r], [r, r, 2 * r]]), dim=-1)
    torch.testing.assert_close(weights[0, :3, :3], expected)
    # Padded keys and padded query rows carry no weight; a one-word document attends to itself.
    assert weights[0, :, 3].abs().max() == 0 and weights[0, 3].abs().max() == 0
    assert weights[1, 0, 0].item() == pytest.approx(1.0) and weights[1].sum().item() == pytest.approx(1.0)


def test_relative_attention_buckets_clip_and_match_shaw_pair_by_pair():
    torch.manual_seed(0)
    attention = RelativeSelfAttention(dim=3, clip=2)
    assert attention.buckets(5, "cpu").tolist() == [
        [2, 3, 4, 4, 4], [1, 2, 3, 4, 4], [0, 1, 2, 3, 4], [0, 0, 1, 2, 3], [0, 0, 0, 1, 2]]
    x = torch.randn(1, 5, 3)
    out, weights = attention(x, torch.ones(1, 5, dtype=torch.bool))
    with torch.no_grad():
        torch.testing.assert_close(out[0], _relative(attention, x[0]))
    # A padded key gets weight 0 and the real prefix is unchanged by what follows it.
    prefix, _ = attention(x[:, :3], torch.ones(1, 3, dtype=torch.bool))
    padded, weights = attention(x, torch.tensor([[True, True, True, False, False]]))
    assert weights[0, :, 3:].abs().max() == 0
    torch.testing.assert_close(padded[:, :3], prefix)


def test_sinusoidal_fusion_adds_eqs_1_and_2_before_the_attention():
    model = _model("cspan-fusion-position", dim=6).eval()
    doc = [5, 9, 9, 2]
    with torch.no_grad():
        weights = model(_batch([doc])).attentions["semantic"][0]
        words = model.embedding.weight[doc] + _sinusoid(4, 6)
    torch.testing.assert_close(weights, torch.softmax(words @ words.T / math.sqrt(6), dim=-1))
    # The repeated word 9 at positions 1 and 2 gets different attention rows only through positions.
    assert (weights[1] - weights[2]).abs().max() > 1e-3


def test_multi_query_pooling_weights_are_a_softmax_over_real_positions_per_query():
    model = _model("cspan-base", queries=5).eval()
    with torch.no_grad():
        out = model(_batch(_docs([7, 4], seed=2), length=9))
    weights = out.attentions["queries"]
    assert weights.shape == (2, 5, 9)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 5))
    assert weights[1, :, 4:].abs().max() == 0 and weights[0, :, 7:].abs().max() == 0
    assert model.fusion_matrix.weight.shape == (8, 5 * 8) and model.fusion_matrix.bias is None


# ---------------------------------------------------------------- shapes and masking


def test_output_shapes_and_attention_maps_only_in_eval():
    model = _model("cspan-base")
    batch = _batch(_docs([9, 3], seed=3), length=10)
    out = model.train()(batch)
    assert out.logits.shape == (2, 4) and out.attentions == {}  # training takes the fused kernel
    with torch.no_grad():
        out = model.eval()(batch)
    assert out.logits.shape == (2, 4)
    assert {k: tuple(v.shape) for k, v in out.attentions.items()} == {
        "semantic": (2, 10, 10), "positional": (2, 10, 10), "queries": (2, 16, 10)}
    for name in ("semantic", "positional"):
        weights = out.attentions[name]
        torch.testing.assert_close(weights[1, :3].sum(-1), torch.ones(3))
        assert weights[1, 3:].abs().max() == 0 and weights[1, :, 3:].abs().max() == 0
    # The fused (training) and explicit (eval) paths give the same logits: there is no dropout.
    torch.testing.assert_close(model.train()(batch).logits.detach(), out.logits, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", ["cspan-base", "cspan-big", "cspan-ablation-bilstm", "cspan-ablation-self-att",
                                  "cspan-fusion-position", "cspan-fusion-relative", "cspan-fusion-parallel",
                                  "cspan-base-addnorm"])
@pytest.mark.parametrize("mode", ["eval", "train"])
def test_padded_batch_gives_the_same_logits_as_each_document_alone(name, mode):
    model = _model(name, relative_clip=3)
    model.train(mode == "train")
    docs = _docs([11, 2, 6, 5, 1], seed=4)
    with torch.no_grad():
        batched = model(_batch(docs, length=14)).logits
        for row, doc in enumerate(docs):
            alone = model(_batch([doc])).logits
            torch.testing.assert_close(batched[row: row + 1], alone, atol=1e-5, rtol=0)


def test_an_empty_document_gives_finite_logits_and_does_not_disturb_the_others():
    model = _model("cspan-base").eval()
    docs = _docs([5, 0, 3], seed=5)
    with torch.no_grad():
        out = model(_batch(docs, length=6))
        alone = model(_batch([docs[2]])).logits
    assert torch.isfinite(out.logits).all()
    assert out.attentions["queries"][1].abs().max() == 0
    torch.testing.assert_close(out.logits[2:], alone, atol=1e-5, rtol=0)


def _saved_activation_shapes(model, docs, length) -> list[tuple]:
    parameter_sizes = {p.numel() for p in model.parameters()}
    saved = []

    def pack(tensor):
        saved.append(tuple(tensor.shape))
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(_batch(docs, length=length)).logits.sum().backward()
    return [s for s in saved if math.prod(s) not in parameter_sizes]


def test_training_saves_nothing_of_size_l_squared_times_d():
    batch_size, length, dim, queries = 2, 12, 8, 3
    model = _model("cspan-base", dim=dim, queries=queries).train()
    saved = _saved_activation_shapes(model, _docs([12, 7], seed=6), length)
    # The CPU LSTM kernel (oneDNN) keeps one flat workspace, a constant plus a term linear in
    # B x L: it grows by less than 2x when the documents double.
    workspaces = [s for s in saved if len(s) == 1]
    activations = [s for s in saved if len(s) > 1]
    assert activations and all(len(s) <= 3 for s in activations)
    assert max(math.prod(s) for s in activations) <= batch_size * length * max(length, dim, queries)
    if workspaces:
        doubled = _saved_activation_shapes(model, _docs([24, 14], seed=6), 2 * length)
        grown = max(math.prod(s) for s in doubled if len(s) == 1)
        assert grown < 2 * max(math.prod(s) for s in workspaces)


# ---------------------------------------------------------------- sizes, presets, errors


def test_cspan_base_parameter_count_is_the_closed_form_from_the_papers_shapes():
    d, m, classes = 50, 16, 4  # GloVe 50-d offline; the paper's 300-d gives h = 150
    model = create_model("cspan-base", num_classes=classes, vocab_size=VOCAB, embeddings=_vectors(d))
    h = d // 2
    embedding = VOCAB * d
    # PyTorch's LSTM has two bias vectors (b_ih and b_hh) per gate block, so 2h not h per gate.
    lstm = 2 * 4 * (d * h + h * h + 2 * h)  # two directions, eqs. 5-6
    layer_norms = 2 * (2 * d)  # after eq. 4 and eq. 8, gain and bias
    attention_mlp = d * d + d  # W_h, b_h (eq. 10)
    query_vectors = m * d  # Q (eq. 11)
    fusion = m * d * d  # W_f (eq. 13), no bias
    classifier = d * classes + classes  # W_o, b_o (eq. 15)
    expected = embedding + lstm + layer_norms + attention_mlp + query_vectors + fusion + classifier
    assert model.num_parameters() == expected == VOCAB * 50 + 15_400 + 200 + 2_550 + 800 + 40_000 + 204
    # cspan-big: 3 stacked layers, each reading a d-wide input ([h_fwd ; h_bwd] is d-wide), 128 queries.
    big = create_model("cspan-big", num_classes=classes, vocab_size=VOCAB, embeddings=_vectors(d))
    m = 128
    assert big.num_parameters() == embedding + 3 * lstm + layer_norms + attention_mlp + m * d + m * d * d + classifier


def test_presets_carry_the_papers_recipe_and_sizes():
    base, big = get_preset("cspan-base"), get_preset("cspan-big")
    recipe = base.recipe
    assert (recipe.optimizer, recipe.lr, recipe.weight_decay, recipe.batch_size, recipe.epochs) == (
        "adam", 1e-3, 1e-4, 64, 30)
    assert recipe.schedule == {"type": "milestones", "milestones": [20, 25], "gamma": 0.1}
    assert big.recipe.epochs == 60 and big.recipe.schedule["milestones"] == [40, 50]
    assert (base.arch["lstm_layers"], base.arch["queries"], big.arch["lstm_layers"], big.arch["queries"]) == (1, 16, 3, 128)
    assert base.inputs["embeddings"] == "glove-6b-50d" and base.inputs["embedding_dim"] == 50
    assert "paper: 300-d" in base.description
    grid = {(get_preset(n).arch["lstm_layers"], get_preset(n).arch["queries"]) for n in CSPAN_PRESETS
            if n.startswith("cspan-l")}
    table_4 = {(1, 1), (1, 8), (1, 16), (2, 8), (2, 16), (2, 32), (3, 32), (3, 64), (3, 128)}
    assert grid | {(1, 16), (3, 128)} == table_4
    assert {get_preset(n).arch.get("fusion") for n in CSPAN_PRESETS} == {
        None, "embedding", "sinusoidal", "relative", "parallel"}


@pytest.mark.parametrize("name", CSPAN_PRESETS)
def test_every_preset_builds_with_its_own_sizes_and_takes_an_adam_step(name):
    torch.manual_seed(0)
    model = create_model(name, num_classes=3, vocab_size=VOCAB, embeddings=_vectors(50))
    preset = get_preset(name)
    if model.lstm is not None:
        assert model.lstm.hidden_size == 25 and model.lstm.num_layers == preset.arch.get("lstm_layers", 1)
    if model.queries is not None:
        assert model.queries.shape == (preset.arch.get("queries", 16), 50)
    recipe = preset.recipe
    optimizer = torch.optim.Adam(model.parameters(), lr=recipe.lr, weight_decay=recipe.weight_decay)
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    loss = F.cross_entropy(model.train()(_batch(_docs([8, 3, 5], seed=7))).logits, torch.tensor([0, 1, 2]))
    loss.backward()
    optimizer.step()
    assert torch.isfinite(loss)
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())
    moved = [k for k, v in model.named_parameters() if not torch.equal(v, before[k])]
    assert len(moved) == len(before)  # every parameter, the GloVe-initialised vectors included
    assert model.embedding.weight[0].abs().max() == 0  # PAD stays zero


def test_bad_settings_are_one_line_config_errors():
    cases = [
        ("cspan-base", {"embedding_dim": 7}, "parameter 'embedding_dim' = 7 must be even"),
        ("cspan-base", {"fusion": "rotary"}, "parameter 'fusion' = 'rotary' is not one of cascade, parallel"),
        ("cspan-base", {"pooling": "max"}, "parameter 'pooling' = 'max' is not one of multi-query, mean"),
        ("cspan-base", {"queries": 0}, "parameter 'queries' = 0 is outside"),
        ("cspan-base", {"lstm_layers": 0}, "parameter 'lstm_layers' = 0 is outside"),
        ("cspan-base", {"fusion": "sinusoidal"}, "parameter 'lstm_layers' = 1 must be 0 with fusion 'sinusoidal'"),
        ("cspan-fusion-embedding", {"semantic_attention": False}, "leaves fusion 'embedding' with no layer"),
        ("cspan-base", {"residual": "yes"}, "parameter 'residual' = 'yes' must be true or false"),
        ("cspan-fusion-relative", {"relative_clip": 0}, "parameter 'relative_clip' = 0 is outside"),
    ]
    for name, overrides, message in cases:
        dim = overrides.get("embedding_dim", 8)
        with pytest.raises(ConfigError, match=message) as info:
            create_model(name, num_classes=2, vocab_size=VOCAB, embeddings=_vectors(dim),
                         **{"embedding_dim": dim, **overrides})
        assert "\n" not in str(info.value)
    # An odd width is fine where there is no Bi-LSTM to halve it.
    assert _model("cspan-fusion-position", dim=7).embedding.weight.shape == (VOCAB, 7)


# ---------------------------------------------------------------- learning on real data


@pytest.fixture(scope="module")
def trec_slice():
    dataset = ensure_dev(load_dataset("trec", max_per_split=800), fraction=0.2, seed=0)
    return prepare(dataset, get_preset("cspan-base").inputs)  # the presets' GloVe 6B 50-d vectors


@pytest.mark.parametrize("name", ["cspan-base", "cspan-fusion-relative"])
def test_training_on_a_trec_slice_lowers_the_loss_and_beats_the_majority(trec_slice, name):
    torch.manual_seed(0)
    model = create_model(name, num_classes=trec_slice.num_classes, embeddings=trec_slice.embeddings.matrix,
                         queries=4)
    # A few epochs at a higher rate than the paper's 1e-3 (30 epochs) keep the test short.
    recipe = model.preset.recipe.with_overrides(lr=3e-3, epochs=4, schedule=None, batch_size=32)
    result = fit(model, trec_slice.loader("train", 32, shuffle=True), trec_slice.loader("dev", 128), recipe,
                 num_classes=trec_slice.num_classes, progress=False)
    losses = [row["train_loss"] for row in result.history]
    dev_labels = np.array(trec_slice.encoded["dev"].labels)
    majority = np.bincount(dev_labels).max() / len(dev_labels)
    assert losses[0] > losses[1] > losses[2] > losses[3] and losses[-1] < 0.6 * losses[0], losses
    assert result.best_metrics["accuracy"] > majority + 0.3, (result.best_metrics["accuracy"], majority)
