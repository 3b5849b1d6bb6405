"""HCAN (Gao et al. 2018): equations 2-5 on hand-computed cases, masking at both levels, the
eight Table 2 presets and their CPU twins, and learning on an IMDB slice."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from textcls.api import Classifier
from textcls.data.batching import collate_flat, collate_hierarchical
from textcls.data import load_dataset
from textcls.errors import ConfigError
from textcls.models import create_model, get_preset, list_models
from textcls.models.hcan import HCAN, ConvSelfAttention, TargetAttention
from tolerance import FEW_OPS, KERNEL, approx32

VOCAB = 40
TINY = {"d_model": 8, "heads": 2, "embedding_dim": 6}
VARIANTS = [
    "hcan-flat-one-sa-maxpool", "hcan-flat-one-sa-target", "hcan-flat-two-sa-maxpool", "hcan-flat-two-sa-target",
    "hcan-hier-one-sa-maxpool", "hcan-hier-one-sa-target", "hcan-hier-two-sa-maxpool", "hcan",
]



def _matrix(dim, seed=0):
    matrix = np.random.default_rng(seed).normal(size=(VOCAB, dim)).astype(np.float32)
    matrix[0] = 0.0
    return matrix


def _tiny(name, **overrides):
    torch.manual_seed(0)
    settings = {**TINY, **overrides}
    return create_model(name, num_classes=3, embeddings=_matrix(settings["embedding_dim"]), **settings)


def _hier_docs(seed=0):
    rng = np.random.default_rng(seed)
    shapes = [[5, 2, 7], [3], [1, 4], [6, 6, 2, 3]]
    return [[rng.integers(2, VOCAB, size=n).tolist() for n in doc] for doc in shapes]


def _hier_batch(docs, extra_sentences=0, extra_words=0, junk=False):
    batch = collate_hierarchical([{"index": i, "input_ids": d} for i, d in enumerate(docs)])
    ids = F.pad(batch["input_ids"], (0, extra_words, 0, extra_sentences))
    word_mask = F.pad(batch["word_mask"], (0, extra_words, 0, extra_sentences))
    if junk:  # ids under the mask must not matter: the masks say what is real
        ids = torch.where(word_mask, ids, torch.randint(2, VOCAB, ids.shape, generator=torch.Generator().manual_seed(1)))
    return {"input_ids": ids, "word_mask": word_mask, "sentence_mask": word_mask.any(-1)}


def _flat_batch(docs, extra=0, junk=False):
    batch = collate_flat([{"index": i, "input_ids": d} for i, d in enumerate(docs)])
    ids, mask = F.pad(batch["input_ids"], (0, extra)), F.pad(batch["mask"], (0, extra))
    if junk:
        ids = torch.where(mask, ids, torch.randint(2, VOCAB, ids.shape, generator=torch.Generator().manual_seed(1)))
    return {"input_ids": ids, "mask": mask}


def _flatten(docs):
    return [[w for s in doc for w in s] for doc in docs]


# ----------------------------------------------------------------- equations


def test_two_self_attentions_multiply_their_outputs_hand_computed():
    # d = 1, one head, kernels that copy the centre word: Q = K = ELU(x), V_a = ELU(x), V_b = tanh(x).
    layer = ConvSelfAttention(in_dim=1, d_model=1, heads=1, branches=2, attention_dropout=0.0).eval()
    with torch.no_grad():
        layer.qkv.weight.zero_()
        layer.qkv.weight[:, 0, 1] = 1.0
        layer.qkv.bias.zero_()
    x = torch.tensor([[[1.0], [-1.0]]])
    out, _ = layer(x, torch.ones(1, 2, dtype=torch.bool))

    elu = [1.0, math.exp(-1.0) - 1.0]
    tanh = [math.tanh(1.0), math.tanh(-1.0)]
    expected = []
    for i in range(2):
        scores = [elu[i] * elu[j] for j in range(2)]  # scale 1/sqrt(d/h) = 1
        weights = [math.exp(s) / sum(math.exp(t) for t in scores) for s in scores]
        head_a = sum(w * v for w, v in zip(weights, elu))
        head_b = sum(w * v for w, v in zip(weights, tanh))
        expected.append(head_a * head_b)
    assert out[0, :, 0].tolist() == approx32(expected)
    # Position 0 by hand: weights 1/(1+e^-1.632) = 0.8365; a = 0.7331, b = 0.5125.
    assert expected[0] == pytest.approx(0.37573, abs=1e-4)

    single = ConvSelfAttention(in_dim=1, d_model=1, heads=1, branches=1, attention_dropout=0.0).eval()
    with torch.no_grad():
        single.qkv.weight.copy_(layer.qkv.weight[:3])
        single.qkv.bias.zero_()
    alone, _ = single(x, torch.ones(1, 2, dtype=torch.bool))
    assert (alone - out).abs().max() > 0.1  # one attention is not the product


def _conv_reference(x, weight, bias):
    """Width-3 'same' convolution written out: y_t = b + sum_k W[:, :, k] x_{t+k-1}."""
    padded = F.pad(x, (0, 0, 1, 1))
    return bias + sum(padded[:, k : k + x.size(1)] @ weight[:, :, k].T for k in range(3))


def test_multi_head_self_attention_matches_equations_2_and_3_written_out():
    torch.manual_seed(0)
    d, heads = 4, 2
    layer = ConvSelfAttention(in_dim=3, d_model=d, heads=heads, branches=2, attention_dropout=0.0).eval()
    with torch.no_grad():
        layer.qkv.bias.normal_()
    x = torch.randn(1, 5, 3)
    out, maps = layer(x, torch.ones(1, 5, dtype=torch.bool), need_weights=True)
    projected = _conv_reference(x, layer.qkv.weight.detach(), layer.qkv.bias.detach())[0]
    expected = torch.ones(5, d)
    for branch in range(2):
        q, k, v = projected[:, branch * 3 * d : (branch + 1) * 3 * d].split(d, dim=-1)
        q, k = F.elu(q), F.elu(k)
        v = torch.tanh(v) if branch == 1 else F.elu(v)
        heads_out = []
        for h in range(heads):
            part = slice(h * d // heads, (h + 1) * d // heads)
            weights = torch.softmax(q[:, part] @ k[:, part].T / math.sqrt(d // heads), dim=-1)
            torch.testing.assert_close(maps[branch][0, h], weights, **KERNEL)
            heads_out.append(weights @ v[:, part])
        expected = expected * torch.cat(heads_out, dim=-1)
    torch.testing.assert_close(out[0], expected, **KERNEL)


def test_target_attention_matches_equation_5_written_out():
    torch.manual_seed(0)
    d, heads = 4, 2
    layer = TargetAttention(d, heads, attention_dropout=0.0).eval()
    x = torch.randn(1, 6, d)
    mask = torch.tensor([[True] * 4 + [False] * 2])
    vector, weights = layer(x, mask, need_weights=True)
    real = x[:, :4]  # the document alone: its conv windows end at its last word
    k, v = F.elu(_conv_reference(real, layer.kv.weight.detach(), layer.kv.bias.detach()))[0].split(d, dim=-1)
    target = layer.target.detach()[0]
    for h in range(heads):
        part = slice(h * 2, h * 2 + 2)
        expected = torch.softmax(k[:, part] @ target[part] / math.sqrt(2), dim=0)
        torch.testing.assert_close(weights[0, h, :4], expected, **KERNEL)
        torch.testing.assert_close(vector[0, part], expected @ v[:, part], **KERNEL)
    assert torch.equal(weights[0, :, 4:], torch.zeros(heads, 2))


# ----------------------------------------------------------------- shapes and masking


def test_hierarchical_shapes_and_attention_maps_at_both_levels():
    model = _tiny("hcan-cpu", keep_self_attention=True).eval()
    docs = _hier_docs()
    batch = _hier_batch(docs)
    out = model(batch)
    assert out.logits.shape == (4, 3)
    word, sentence = out.attentions["word"], out.attentions["sentence"]
    assert word.shape == (4, 4, 2, 7) and sentence.shape == (4, 2, 4)
    # Each head's weights sum to 1 over the real words of a real sentence and are 0 elsewhere.
    real_words = batch["word_mask"].unsqueeze(2).expand_as(word)
    assert torch.equal(word[~real_words], torch.zeros(int((~real_words).sum())))
    sums = word.sum(-1)
    torch.testing.assert_close(sums[batch["sentence_mask"]], torch.ones(int(batch["sentence_mask"].sum()), 2))
    assert torch.equal(sums[~batch["sentence_mask"]], torch.zeros(int((~batch["sentence_mask"]).sum()), 2))
    assert torch.equal(sentence[1, :, 1:], torch.zeros(2, 3))  # document 1 has one sentence
    torch.testing.assert_close(sentence.sum(-1), torch.ones(4, 2))
    assert out.attentions["word_self_a"].shape == (4, 4, 2, 7, 7)
    assert out.attentions["sentence_self_b"].shape == (4, 2, 4, 4)
    # Prediction without maps and training use the fused kernel: no weights are materialised.
    with model.attention_maps(False):
        plain = model(batch)
    assert plain.attentions == {}
    torch.testing.assert_close(plain.logits, out.logits, atol=1e-5, rtol=0)
    assert model.train()(batch).attentions == {}


def test_flat_and_maxpool_variants_shapes():
    flat = _tiny("hcan-flat-two-sa-target-cpu").eval()
    out = flat(_flat_batch(_flatten(_hier_docs())))
    assert out.logits.shape == (4, 3) and out.attentions["word"].shape == (4, 2, 17)  # longest: 6+6+2+3 words
    maxpool = _tiny("hcan-hier-two-sa-maxpool-cpu").eval()
    out = maxpool(_hier_batch(_hier_docs()))
    assert out.logits.shape == (4, 3) and out.attentions == {}


@pytest.mark.parametrize("name", VARIANTS)
def test_padding_words_and_sentences_does_not_change_the_logits(name):
    model = _tiny(f"{name}-cpu").eval()
    docs = _hier_docs(seed=3)
    hierarchical = get_preset(name).inputs["shape"] == "hierarchical"
    with torch.no_grad():
        if hierarchical:
            batched = model(_hier_batch(docs, extra_sentences=2, extra_words=3, junk=True)).logits
            alone = [model(_hier_batch([doc])).logits for doc in docs]
        else:
            batched = model(_flat_batch(_flatten(docs), extra=4, junk=True)).logits
            alone = [model(_flat_batch([doc])).logits for doc in _flatten(docs)]
    torch.testing.assert_close(batched, torch.cat(alone), atol=1e-5, rtol=0)


def test_an_empty_document_gives_finite_logits_and_no_sentence_leaks():
    model = _tiny("hcan-cpu").eval()
    docs = _hier_docs()
    batch = _hier_batch(docs)
    batch["word_mask"][2] = False
    batch["sentence_mask"][2] = False
    with torch.no_grad():
        out = model(batch)
        others = model(_hier_batch([docs[0], docs[1], docs[3]])).logits
    assert torch.isfinite(out.logits).all()
    # No real sentence: the document vector is zero, so the logits are the output bias.
    torch.testing.assert_close(out.logits[2], model.output.bias, **FEW_OPS)
    torch.testing.assert_close(out.logits[[0, 1, 3]], others, atol=1e-5, rtol=0)
    empty = torch.zeros(2, 1, 1, dtype=torch.bool)
    with torch.no_grad():
        logits = model({"input_ids": torch.zeros(2, 1, 1, dtype=torch.long), "word_mask": empty,
                        "sentence_mask": empty.any(-1)}).logits
    torch.testing.assert_close(logits, model.output.bias.expand(2, 3), **FEW_OPS)


# ----------------------------------------------------------------- presets


def test_the_eight_table_2_variants_and_their_cpu_twins_are_registered():
    expected = set(VARIANTS) | {f"{name}-cpu" for name in VARIANTS}
    assert expected == set(list_models("hcan*"))
    for name in VARIANTS:
        paper, cpu = get_preset(name), get_preset(f"{name}-cpu")
        assert paper.recipe.lr == 2e-5 and paper.recipe.betas == (0.9, 0.99) and paper.recipe.optimizer == "adam"
        assert paper.inputs["embeddings"] == "word2vec" and paper.inputs["embedding_dim"] == 512
        assert paper.inputs["charset"] == "hcan" and paper.inputs["min_freq"] == 5
        assert paper.arch == {k: v for k, v in cpu.arch.items() if k != "d_model"} and cpu.arch["d_model"] == 64
        assert cpu.inputs["embeddings"] == "glove-6b-50d" and cpu.inputs["charset"] == "hcan"
        assert cpu.recipe.lr == pytest.approx(2e-5 * cpu.recipe.batch_size)
        assert "CPU-sized" in cpu.description
    assert get_preset("hcan").arch == {"self_attentions": 2, "pooling": "target"}
    assert get_preset("hcan").inputs["shape"] == "hierarchical"
    assert get_preset("hcan-flat-one-sa-maxpool").arch == {"self_attentions": 1, "pooling": "max"}


def test_paper_size_parameter_count_in_closed_form():
    model = create_model("hcan", num_classes=5, embeddings=_matrix(512))
    d, e, classes = 512, 512, 5

    def level(in_dim, positions):
        self_attention = 6 * d * in_dim * 3 + 6 * d  # two branches x (Q, K, V), width 3
        norm = 2 * d
        target = d + 2 * d * d * 3 + 2 * d  # T, then K and V convs
        return positions * in_dim + self_attention + norm + target

    expected = VOCAB * e + level(e, 100) + level(d, 100) + d * classes + classes
    assert model.num_parameters() == expected
    assert model.word_level.self_attention.heads == 8


@pytest.mark.parametrize("name", VARIANTS + [f"{n}-cpu" for n in VARIANTS])
def test_every_preset_builds_and_takes_an_adam_step(name):
    preset = get_preset(name)
    torch.manual_seed(0)
    # The 512-d presets are built at a small width here (their orthogonal init alone takes
    # seconds); the paper size is built once, in the parameter-count test.
    size = TINY if preset.arch.get("d_model", 512) == 512 else {}
    dim = size.get("embedding_dim", preset.inputs["embedding_dim"])
    model = create_model(name, num_classes=3, embeddings=_matrix(dim), **size)
    docs = _hier_docs()
    batch = _hier_batch(docs) if preset.inputs["shape"] == "hierarchical" else _flat_batch(_flatten(docs))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, betas=preset.recipe.betas)
    model.train()
    before = [p.detach().clone() for p in model.parameters()]
    loss = F.cross_entropy(model(batch).logits, torch.tensor([0, 1, 2, 0]))
    loss.backward()
    optimizer.step()
    moved = [not torch.equal(b, p) for b, p in zip(before, model.parameters())]
    # Everything trains, except position rows beyond the longest sequence of the batch.
    names = [n for n, _ in model.named_parameters()]
    assert all(m for n, m in zip(names, moved) if "positions" not in n)
    assert torch.equal(model.embedding.weight[0], torch.zeros(dim))


def test_bad_settings_are_one_line_config_errors():
    with pytest.raises(ConfigError, match="'d_model' = 10 must be a multiple of parameter 'heads' = 4"):
        _tiny("hcan-cpu", d_model=10, heads=4)
    with pytest.raises(ConfigError, match="'pooling' = 'mean' is not one of target, max"):
        _tiny("hcan-cpu", pooling="mean")
    with pytest.raises(ConfigError, match="'self_attentions' = 3 must be 1 or 2"):
        _tiny("hcan-cpu", self_attentions=3)
    with pytest.raises(ConfigError, match="'attention_dropout' = 1.5"):
        _tiny("hcan-cpu", attention_dropout=1.5)
    with pytest.raises(ConfigError, match="needs parameter 'max_length'"):
        HCAN(VOCAB, 2, shape="flat", **TINY)
    with pytest.raises(ConfigError, match="needs parameter 'max_sentences'"):
        HCAN(VOCAB, 2, max_sentence_length=10, **TINY)
    model = _tiny("hcan-cpu", max_sentence_length=5).eval()
    with pytest.raises(ConfigError, match="7 positions at one level but parameter 'max_sentence_length' = 5"):
        model(_hier_batch(_hier_docs()))
    with pytest.raises(ConfigError, match="reads hierarchical batches"):
        model(_flat_batch([[3, 4]]))


# ----------------------------------------------------------------- learning


@pytest.fixture(scope="module")
def imdb_slice():
    return load_dataset("imdb", max_per_split=600)


def test_hcan_learns_on_an_imdb_slice_and_round_trips(imdb_slice, tmp_path):
    torch.manual_seed(0)
    # Tiny width, short caps and a high lr so that 540 reviews and 5 epochs show learning.
    params = {"d_model": 16, "heads": 2, "max_sentences": 8, "max_sentence_length": 20, "lr": 5e-3, "epochs": 5,
              "patience": None}
    clf = Classifier("hcan-cpu", params=params, seed=0).fit_dataset(imdb_slice)
    losses = [row["train_loss"] for row in clf.fit_result_.history]
    assert min(losses) < 0.85 * losses[0]
    assert clf.data_report_["embeddings"]["source"] == "glove-6b-50d"
    accuracy = clf.evaluate(imdb_slice["test"])["accuracy"]
    assert accuracy > 0.6  # 600 balanced test reviews: chance is 0.5 +- 0.02
    clf.save_pretrained(tmp_path / "run")
    restored = Classifier.from_pretrained(tmp_path / "run")
    texts = list(imdb_slice["test"]["text"][:50])
    np.testing.assert_allclose(restored.predict_proba(texts), clf.predict_proba(texts), **KERNEL)
