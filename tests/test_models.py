import gzip
import json
import math

import numpy as np
import pytest
import torch
from threadpoolctl import threadpool_limits

from textcls.errors import CheckpointError, ConfigError, DataError
from textcls.models import TfidfModel, create_model
from textcls.models.layers import (
    AttentionPooling,
    build_embedding,
    masked_attention,
    masked_max,
    masked_mean,
    masked_rnn,
    masked_softmax,
    sinusoidal_encoding,
)
from textcls.recipe import get_lr_lambda
from tolerance import KERNEL, approx32

VOCAB = 60


@pytest.fixture(autouse=True)
def one_blas_thread():
    # scikit-learn's OpenMP loss spins badly when the 2 shared cores are busy.
    with threadpool_limits(1):
        yield


# ---------------------------------------------------------------- shared layers


def test_masked_softmax_gives_zeros_for_a_fully_masked_row_and_a_softmax_elsewhere():
    scores = torch.tensor([[1.0, 2.0, 3.0, 50.0], [4.0, -1.0, 0.5, 2.0]], requires_grad=True)
    mask = torch.tensor([[True, True, True, False], [False, False, False, False]])
    weights = masked_softmax(scores, mask, dim=-1)
    torch.testing.assert_close(weights[0, :3], torch.softmax(torch.tensor([1.0, 2.0, 3.0]), dim=0))
    assert weights[0, 3].item() == 0.0
    assert torch.equal(weights[1], torch.zeros(4))
    (weights * torch.arange(4.0)).sum().backward()
    assert torch.isfinite(scores.grad).all()
    assert torch.equal(scores.grad[1], torch.zeros(4))


def test_masked_max_and_mean_ignore_padding_and_give_zero_for_empty_rows():
    x = torch.tensor([[[1.0, -5.0], [7.0, -2.0], [100.0, 100.0]], [[3.0, 3.0], [4.0, 4.0], [5.0, 5.0]]])
    mask = torch.tensor([[True, True, False], [False, False, False]])
    assert torch.equal(masked_max(x, mask, dim=1), torch.tensor([[7.0, -2.0], [0.0, 0.0]]))
    assert torch.equal(masked_mean(x, mask, dim=1), torch.tensor([[4.0, -3.5], [0.0, 0.0]]))


def test_sinusoidal_encoding_matches_vaswani_at_known_positions():
    pe = sinusoidal_encoding(5, 8)
    assert pe.shape == (5, 8) and pe.dtype == torch.float32
    assert pe[1, 0].item() == approx32(math.sin(1.0))
    assert pe[1, 1].item() == approx32(math.cos(1.0))
    assert torch.equal(pe[0], torch.tensor([0.0, 1.0] * 4))
    # pos 3, i = 2: angle 3 / 10000^(4/8) = 0.03
    assert pe[3, 4].item() == approx32(math.sin(0.03))
    assert pe[3, 5].item() == approx32(math.cos(0.03))
    assert sinusoidal_encoding(2, 3)[1].tolist() == pytest.approx([math.sin(1.0), math.cos(1.0), math.sin(1 / 10000 ** (2 / 3))])


def test_attention_pooling_puts_no_weight_on_padding():
    torch.manual_seed(0)
    pool = AttentionPooling(4, 3)
    hidden = torch.randn(2, 5, 4)
    mask = torch.tensor([[True, True, True, False, False], [True] * 5])
    pooled, weights = pool(hidden, mask)
    assert torch.equal(weights[0, 3:], torch.zeros(2))
    torch.testing.assert_close(weights.sum(dim=1), torch.ones(2))
    alone, _ = pool(hidden[:1, :3], mask[:1, :3])
    torch.testing.assert_close(pooled[:1], alone, **KERNEL)


def test_masked_attention_fused_equals_explicit_ignores_padding_and_zeroes_empty_rows():
    torch.manual_seed(0)
    q, k, v = (torch.randn(3, 2, 7, 8) for _ in range(3))
    mask = torch.ones(3, 7, dtype=torch.bool)
    mask[1, 4:] = False
    mask[2] = False
    fused, none = masked_attention(q, k, v, mask)
    explicit, weights = masked_attention(q, k, v, mask, need_weights=True)
    assert none is None
    torch.testing.assert_close(fused, explicit, **KERNEL)
    assert weights[1, :, :, 4:].abs().max() == 0 and torch.allclose(weights[1].sum(-1), torch.ones(2, 7))
    assert fused[2].abs().max() == 0 and weights[2].abs().max() == 0
    alone, _ = masked_attention(q[1:2, :, :4], k[1:2, :, :4], v[1:2, :, :4], mask[1:2, :4])
    torch.testing.assert_close(alone, fused[1:2, :, :4], **KERNEL)
    # The 1/sqrt(d) default scale: doubling the scale is sharper attention, not the same output.
    sharper, _ = masked_attention(q, k, v, mask, scale=2 / 8**0.5)
    assert (sharper[0] - fused[0]).abs().max() > 1e-3


def test_masked_rnn_reads_each_document_to_its_true_end():
    torch.manual_seed(0)
    rnn = torch.nn.LSTM(8, 5, batch_first=True, bidirectional=True)
    x = torch.randn(2, 6, 8)
    mask = torch.tensor([[1] * 6, [1] * 3 + [0] * 3], dtype=torch.bool)
    out, h_n = masked_rnn(rnn, x, mask)
    alone, h_alone = masked_rnn(rnn, x[1:2, :3], mask[1:2, :3])
    torch.testing.assert_close(out[1:2, :3], alone)
    torch.testing.assert_close(h_n[:, 1:2], h_alone)
    assert out[1, 3:].abs().max() == 0
    # Without packing the backward direction would start at the padding: it must differ.
    unpacked, _ = rnn(x[1:2])
    assert (unpacked[0, :3, 5:] - out[1, :3, 5:]).abs().max() > 1e-4


@pytest.mark.parametrize("cell", ["lstm", "gru"])
@pytest.mark.parametrize("layers,bidirectional", [(1, False), (1, True), (2, False), (2, True)])
def test_masked_rnn_unpacked_path_matches_packed_sequences(cell, layers, bidirectional):
    """The LSTM's unpacked path (per layer and direction, reversed within each row's length)
    gives the values and gradients of PyTorch's packed sequences, the reference reading (a GRU
    is packed either way)."""
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    torch.manual_seed(0)
    module = torch.nn.LSTM if cell == "lstm" else torch.nn.GRU
    rnn = module(6, 4, num_layers=layers, bidirectional=bidirectional, batch_first=True)
    lengths = torch.tensor([7, 3, 1, 5, 0])  # a row with no real token is read as one PAD step
    mask = torch.arange(7).unsqueeze(0) < lengths.unsqueeze(1)
    x = torch.randn(5, 7, 6, requires_grad=True)
    out, h_n = masked_rnn(rnn, x, mask)
    weight = rnn.weight_hh_l0
    grads = torch.autograd.grad(out.square().sum() + h_n.sum(), (x, weight))

    packed = pack_padded_sequence(x, lengths.clamp_min(1), batch_first=True, enforce_sorted=False)
    ref, final = rnn(packed)
    ref, _ = pad_packed_sequence(ref, batch_first=True, total_length=7)
    ref_h = final[0] if cell == "lstm" else final
    ref_grads = torch.autograd.grad(ref.square().sum() + ref_h.sum(), (x, weight))

    assert out.shape == (5, 7, 4 * (2 if bidirectional else 1)) and h_n.shape == ref_h.shape
    torch.testing.assert_close(out, ref)  # float32 tolerances: the kernels sum in other orders
    torch.testing.assert_close(h_n, ref_h)
    for got, expected in zip(grads, ref_grads):
        torch.testing.assert_close(got, expected)
    assert out[1, 3:].abs().max() == 0 and out[4, 1:].abs().max() == 0


def test_build_embedding_copies_the_matrix_zeroes_pad_and_freezes():
    matrix = np.arange(12, dtype=np.float64).reshape(4, 3)
    embedding = build_embedding(4, 3, matrix, freeze=True)
    assert embedding.padding_idx == 0 and not embedding.weight.requires_grad
    assert embedding.weight[0].tolist() == [0.0, 0.0, 0.0]
    assert embedding.weight[2].tolist() == [6.0, 7.0, 8.0]
    random = build_embedding(10, 4, uniform_range=0.25)
    assert random.weight.requires_grad and random.weight.abs().max().item() <= 0.25
    assert random.weight[0].abs().sum().item() == 0.0
    with pytest.raises(ConfigError, match=r"shape \(4, 3\) but the model expects \(5, 3\)"):
        build_embedding(5, 3, matrix)


# ---------------------------------------------------------------- Kim CNN


def _pad(docs, length=None, dtype=torch.long):
    length = length or max(1, max(len(d) for d in docs))
    ids = torch.zeros(len(docs), length, dtype=dtype)
    for row, doc in enumerate(docs):
        ids[row, : len(doc)] = torch.tensor(doc, dtype=dtype)
    return ids


def _docs(lengths, seed=0, high=VOCAB):
    rng = np.random.default_rng(seed)
    return [rng.integers(2, high, size=n).tolist() for n in lengths]


def _pretrained(dim=50, seed=0):
    matrix = np.random.default_rng(seed).normal(size=(VOCAB, dim)).astype(np.float32)
    matrix[0] = 0
    return matrix


def _kim(mode, **overrides):
    torch.manual_seed(0)
    name = f"kim-cnn-{mode}"
    embeddings = None if mode == "rand" else _pretrained()
    return create_model(name, num_classes=4, vocab_size=VOCAB, embeddings=embeddings, **overrides)


def test_kim_cnn_output_shapes():
    model = _kim("nonstatic").eval()
    ids = _pad(_docs([9, 3]))
    out = model({"input_ids": ids, "mask": ids > 0})
    assert out.logits.shape == (2, 4) and out.attentions == {}
    assert model.output.weight.shape == (4, 300)
    # Paper sizes: 100 maps x (3 + 4 + 5) x d weights + 300 biases + softmax layer.
    assert model.num_parameters(trainable_only=True) == 100 * 12 * 50 + 300 + 300 * 4 + 4 + VOCAB * 50


@pytest.mark.parametrize("pad_borders", [False, True])  # True: Kim's code's zero-padded row
@pytest.mark.parametrize("mode", ["rand", "multichannel"])
def test_kim_cnn_padded_batch_gives_the_same_logits_as_each_document_alone(mode, pad_borders):
    model = _kim(mode, embedding_dim=50 if mode == "multichannel" else 300, pad_borders=pad_borders).eval()
    # Document of length 2 is shorter than the widest window (5); length 1 even more so.
    docs = _docs([11, 2, 6, 5, 1], seed=1)
    ids = _pad(docs, length=14)  # extra padding beyond the longest document too
    with torch.no_grad():
        batched = model({"input_ids": ids, "mask": ids > 0}).logits
        for row, doc in enumerate(docs):
            alone_ids = torch.tensor([doc])
            alone = model({"input_ids": alone_ids, "mask": alone_ids > 0}).logits
            torch.testing.assert_close(batched[row : row + 1], alone, atol=1e-5, rtol=0)


def test_kim_cnn_short_document_is_read_as_padded_with_zero_vectors():
    model = _kim("rand").eval()
    doc = [5, 9]
    ids = torch.tensor([doc])
    with torch.no_grad():
        logits = model({"input_ids": ids, "mask": ids > 0}).logits
        # The words followed by zero vectors up to each window; only the window starting at the
        # first word counts (later ones would hold padding only, or fewer real words).
        words = torch.zeros(1, 300, 5)
        words[0, :, :2] = model.embedding.weight[doc].T
        pooled = torch.cat([torch.relu(conv(words))[..., 0] for conv in model.convs], dim=-1)
        torch.testing.assert_close(logits, model.output(pooled), atol=1e-5, rtol=0)


def test_kim_cnn_with_kim_code_borders_max_pools_every_window_of_kims_zero_padded_row():
    """Kim's get_idx_from_sent: 4 zero vectors, the sentence, zeros up to the longest sentence
    plus 4; the max runs over every window of that row (zeros alone included)."""
    model = _kim("rand", pad_borders=True).eval()
    with torch.no_grad():
        for conv in model.convs:  # biases that matter: some maps' f(b) beats every window
            conv.bias.copy_(torch.linspace(-0.3, 0.3, conv.bias.numel()))
        doc, longest = [5, 9, 14, 3, 7, 2], 9
        ids = torch.tensor([doc])
        logits = model({"input_ids": ids, "mask": ids > 0}).logits
        row = torch.zeros(1, 300, 4 + longest + 4)
        row[0, :, 4 : 4 + len(doc)] = model.embedding.weight[doc].T
        pooled = torch.cat([torch.relu(conv(row)).amax(dim=-1) for conv in model.convs], dim=-1)
        torch.testing.assert_close(logits, model.output(pooled), atol=1e-5, rtol=0)
        narrow = _kim("rand").eval()
        narrow.load_state_dict(model.state_dict())
        assert not torch.allclose(narrow({"input_ids": ids, "mask": ids > 0}).logits, logits, atol=1e-4)


def _adadelta_step(model):
    ids = _pad(_docs([8, 6, 3], seed=2))
    optimizer = torch.optim.Adadelta([p for p in model.parameters() if p.requires_grad], rho=0.95, eps=1e-6)
    model.train()
    loss = torch.nn.functional.cross_entropy(model({"input_ids": ids, "mask": ids > 0}).logits, torch.tensor([0, 1, 2]))
    loss.backward()
    optimizer.step()
    model.after_optimizer_step()


def test_static_embeddings_do_not_move_and_nonstatic_ones_do():
    static = _kim("static")
    before = static.embedding.weight.detach().clone()
    assert not static.embedding.weight.requires_grad
    torch.testing.assert_close(before, torch.from_numpy(_pretrained()))
    _adadelta_step(static)
    assert torch.equal(static.embedding.weight, before)

    nonstatic = _kim("nonstatic")
    before = nonstatic.embedding.weight.detach().clone()
    _adadelta_step(nonstatic)
    assert not torch.equal(nonstatic.embedding.weight, before)
    assert torch.equal(nonstatic.embedding.weight[0], torch.zeros(50))  # PAD never trains


def test_multichannel_has_one_frozen_and_one_trainable_channel():
    model = _kim("multichannel")
    frozen, tuned = model.static_embedding.weight, model.embedding.weight
    assert not frozen.requires_grad and tuned.requires_grad
    assert torch.equal(frozen, tuned.detach())
    frozen_before, tuned_before = frozen.detach().clone(), tuned.detach().clone()
    _adadelta_step(model)
    assert torch.equal(model.static_embedding.weight, frozen_before)
    assert not torch.equal(model.embedding.weight, tuned_before)
    # Static vectors are not counted as trainable (as in spe_cnn Table 2's CNN-static sizes).
    assert model.num_parameters() - model.num_parameters(trainable_only=True) == VOCAB * 50


def test_max_norm_hook_caps_output_rows_at_three_and_leaves_short_rows_alone():
    model = _kim("rand")
    with torch.no_grad():
        model.output.weight.copy_(torch.randn(4, 300))
        model.output.weight[0].mul_(10.0 / model.output.weight[0].norm())
        model.output.weight[1].mul_(2.0 / model.output.weight[1].norm())
    short_row = model.output.weight[1].detach().clone()
    direction = model.output.weight[0].detach() / 10.0
    model.after_optimizer_step()
    norms = model.output.weight.norm(dim=1)
    assert norms.max().item() <= 3.0 + 1e-5
    assert norms[0].item() == pytest.approx(3.0, abs=1e-5)
    torch.testing.assert_close(model.output.weight[0], 3.0 * direction)
    assert torch.equal(model.output.weight[1], short_row)


# ---------------------------------------------------------------- fastText bag


def _fasttext_batch(word_docs, bigram_docs, word_length=None, bigram_length=None):
    ids, bigrams = _pad(word_docs, word_length), _pad(bigram_docs, bigram_length)
    return {"input_ids": ids, "mask": ids > 0, "bigram_ids": bigrams, "bigram_mask": bigrams > 0}


def test_fasttext_bag_padded_batch_gives_the_same_logits_as_each_document_alone():
    torch.manual_seed(0)
    model = create_model("fasttext-bag", num_classes=3, vocab_size=VOCAB, bigram_buckets=50).eval()
    with torch.no_grad():
        model.output.weight.normal_()  # fastText starts it at zero, which would hide any error
    words = _docs([7, 2, 4, 1], seed=3)
    bigrams = _docs([6, 1, 3, 0], seed=4, high=51)
    batch = _fasttext_batch(words, bigrams, word_length=9, bigram_length=8)
    with torch.no_grad():
        batched = model(batch).logits
        for row in range(len(words)):
            alone = model(_fasttext_batch([words[row]], [bigrams[row]])).logits
            torch.testing.assert_close(batched[row : row + 1], alone, **KERNEL)
        # The document vector is one mean over words and bigrams together.
        expected = torch.cat([model.words.weight[words[0]], model.bigrams.weight[bigrams[0]]]).mean(dim=0)
        torch.testing.assert_close(batched[0], model.output(expected), **KERNEL)


def test_fasttext_bag_starts_at_zero_output_and_needs_bigrams_when_configured():
    model = create_model("fasttext-bag", num_classes=3, vocab_size=VOCAB, bigram_buckets=50)
    assert torch.equal(model.output.weight, torch.zeros(3, 10)) and model.output.bias is None
    ids = _pad(_docs([3]))
    with pytest.raises(ConfigError, match="needs 'bigram_ids' in the batch"):
        model({"input_ids": ids, "mask": ids > 0})


def test_linear_decay_schedule_is_the_per_epoch_mean_of_fasttext_decay():
    factor = get_lr_lambda("linear-decay", epochs=5)
    assert [factor(e) for e in range(5)] == pytest.approx([0.9, 0.7, 0.5, 0.3, 0.1])
    with pytest.raises(ConfigError, match="'epochs' = 0"):
        get_lr_lambda("linear-decay", epochs=0)


# ---------------------------------------------------------------- classic TF-IDF models


def _read_trec(path):
    texts, labels = [], []
    for line in path.read_bytes().decode("latin-1").split("\n"):
        if line.strip():
            label, text = line.split(" ", 1)
            texts.append(text)
            labels.append(label.split(":")[0])
    return texts, labels


@pytest.fixture(scope="module")
def trec(data_dir):
    train_texts, train_labels = _read_trec(data_dir / "trec" / "train_5500.label")
    test_texts, test_labels = _read_trec(data_dir / "trec" / "TREC_10.label")
    names = sorted(set(train_labels))
    index = {name: i for i, name in enumerate(names)}
    return (
        train_texts[:1000],
        np.array([index[y] for y in train_labels[:1000]]),
        test_texts,
        np.array([index[y] for y in test_labels]),
    )


def _round_trip(model):
    arrays, meta = model.state()
    assert all(isinstance(a, np.ndarray) and a.dtype != object for a in arrays.values())
    meta = json.loads(json.dumps(meta))  # must be plain JSON
    return TfidfModel.from_state({k: v.copy() for k, v in arrays.items()}, meta)


@pytest.mark.parametrize("name, floor", [("tfidf-lr", 0.7), ("tfidf-nb", 0.65)])
def test_classic_models_learn_trec_and_round_trip_identically(trec, name, floor):
    train_texts, train_y, test_texts, test_y = trec
    model = create_model(name, num_classes=6).fit(train_texts, train_y)
    proba = model.predict_proba(test_texts)
    assert proba.shape == (500, 6)
    # float64: scikit-learn's probabilities
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    accuracy = (proba.argmax(axis=1) == test_y).mean()
    majority = np.bincount(test_y).max() / len(test_y)  # 0.276
    assert accuracy > floor > majority + 0.3
    restored = _round_trip(model)
    assert np.array_equal(restored.predict_proba(test_texts), proba)
    assert restored.num_parameters() == model.num_parameters() == 6 * (len(restored.vectorizer_.vocabulary_) + 1) + len(
        restored.vectorizer_.vocabulary_
    )


def test_classic_multi_label_one_vs_rest_on_reuters(data_dir):
    with gzip.open(data_dir / "reuters" / "train.jsonl.gz", "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for _, line in zip(range(700), handle)]
    topics = sorted({t for row in rows for t in row["labels"]})
    texts = [row["title"] + " " + row["text"] for row in rows]
    y = np.array([[int(t in row["labels"]) for t in topics] for row in rows])
    y[:, -1] = 0  # a topic never seen in training must get probability 0, not a crash
    train, test = slice(0, 500), slice(500, 700)
    for name in ("tfidf-lr", "tfidf-nb"):
        model = create_model(name, num_classes=len(topics)).fit(texts[train], y[train])
        proba = model.predict_proba(texts[test])
        assert proba.shape == (200, len(topics)) and np.all(proba[:, -1] == 0.0)
        predicted = proba >= 0.5
        # earn and acq are the two big topics: they must be found, not just the majority "none".
        for topic in ("earn", "acq"):
            column = topics.index(topic)
            truth = y[test, column] == 1
            assert (predicted[:, column] == truth).mean() > 0.85
            assert proba[truth, column].mean() > proba[~truth, column].mean() + 0.2
        assert np.array_equal(_round_trip(model).predict_proba(texts[test]), proba)


def test_classic_bad_training_input_is_a_data_error():
    with pytest.raises(DataError, match="lower min_df"):
        create_model("tfidf-nb", num_classes=2).fit(["a b", "c d"], np.array([0, 1]))
    with pytest.raises(DataError, match="single class"):
        create_model("tfidf-lr", num_classes=2).fit(["a b", "a b"], np.array([1, 1]))
    with pytest.raises(DataError, match=r"class index 2 is outside \[0, 1\]"):
        create_model("tfidf-lr", num_classes=2).fit(["a b", "a b"], np.array([0, 2]))
    with pytest.raises(DataError, match="3 texts but 2 labels"):
        create_model("tfidf-lr", num_classes=2).fit(["a", "b", "c"], np.array([0, 1]))


def test_classic_absent_class_gets_zero_probability_and_bad_state_is_refused():
    texts = ["what is a cat", "who is bob", "what is a dog", "who wrote it"] * 2
    model = create_model("tfidf-lr", num_classes=3).fit(texts, np.array([0, 1, 0, 1] * 2))
    proba = model.predict_proba(["who is a cat"])
    assert proba[0, 2] == 0.0 and proba.sum() == pytest.approx(1.0)
    arrays, meta = model.state()
    with pytest.raises(CheckpointError, match="format"):
        TfidfModel.from_state(arrays, {**meta, "format": "pickle"})
    with pytest.raises(CheckpointError, match="inconsistent"):
        TfidfModel.from_state({**arrays, "bias": arrays["bias"][:2]}, meta)


def test_attention_maps_switch_skips_maps_without_changing_logits():
    torch.manual_seed(0)
    model = create_model("cspan-base", num_classes=3, vocab_size=VOCAB,
                         embeddings=np.random.default_rng(0).normal(size=(VOCAB, 50)).astype(np.float32)).eval()
    batch = {"input_ids": torch.randint(2, VOCAB, (2, 7)), "mask": torch.ones(2, 7, dtype=torch.bool)}
    batch["mask"][1, 4:] = False
    with torch.no_grad():
        with_maps = model(batch)
        with model.attention_maps(False):
            assert not model.wants_attention_maps
            without = model(batch)
    assert with_maps.attentions and not without.attentions and model.wants_attention_maps
    torch.testing.assert_close(with_maps.logits, without.logits, atol=1e-5, rtol=1e-5)
    assert not model.train().wants_attention_maps
