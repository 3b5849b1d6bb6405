"""HAN (Yang et al. 2016) as the HCAN paper's baseline: equations written out, masking at both
levels, sizes, presets, and learning on an IMDB slice."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from textcls.api import Classifier
from textcls.data.batching import collate_hierarchical
from textcls.data import load_dataset
from textcls.errors import ConfigError
from textcls.models import create_model, get_preset, han, hcan
from tolerance import FEW_OPS, KERNEL

VOCAB = 40
TINY = {"embedding_dim": 6, "hidden_size": 4, "attention_dim": 5}



def _matrix(dim, seed=0):
    matrix = np.random.default_rng(seed).normal(size=(VOCAB, dim)).astype(np.float32)
    matrix[0] = 0.0
    return matrix


def _tiny(name="han-cpu", **overrides):
    torch.manual_seed(0)
    settings = {**TINY, **overrides}
    return create_model(name, num_classes=3, embeddings=_matrix(settings["embedding_dim"]), **settings)


def _docs(seed=0):
    rng = np.random.default_rng(seed)
    shapes = [[5, 2, 7], [3], [1, 4], [6, 6, 2, 3]]
    return [[rng.integers(2, VOCAB, size=n).tolist() for n in doc] for doc in shapes]


def _batch(docs, extra_sentences=0, extra_words=0, junk=False):
    batch = collate_hierarchical([{"index": i, "input_ids": d} for i, d in enumerate(docs)])
    ids = F.pad(batch["input_ids"], (0, extra_words, 0, extra_sentences))
    word_mask = F.pad(batch["word_mask"], (0, extra_words, 0, extra_sentences))
    if junk:  # ids under the mask must not matter
        ids = torch.where(word_mask, ids, torch.randint(2, VOCAB, ids.shape, generator=torch.Generator().manual_seed(1)))
    return {"input_ids": ids, "word_mask": word_mask, "sentence_mask": word_mask.any(-1)}


def _attend(pool, hidden):
    """Yang eqs. 5-7 (and 10) for one unpadded sequence ``hidden [L, D]``."""
    u = torch.tanh(hidden @ pool.project.weight.T + pool.project.bias)
    weights = torch.softmax(u @ pool.context.weight[0], dim=0)
    return weights @ hidden, weights


def test_forward_is_yangs_equations_sentence_by_sentence():
    model = _tiny().eval()
    docs = _docs()
    with torch.no_grad():
        out = model(_batch(docs, extra_sentences=1, extra_words=2))
        for row, doc in enumerate(docs):
            sentence_vectors = []
            for j, sentence in enumerate(doc):
                # Each sentence alone, unpadded: its GRU states are exactly Yang's h_it.
                states, _ = model.word_gru(model.embedding(torch.tensor([sentence])))
                vector, weights = _attend(model.word_attention, states[0])
                torch.testing.assert_close(out.attentions["word"][row, j, : len(sentence)], weights, **KERNEL)
                sentence_vectors.append(vector)
            states, _ = model.sentence_gru(torch.stack(sentence_vectors).unsqueeze(0))
            document, weights = _attend(model.sentence_attention, states[0])
            torch.testing.assert_close(out.attentions["sentence"][row, : len(doc)], weights, **KERNEL)
            expected = document @ model.output.weight.T + model.output.bias
            torch.testing.assert_close(out.logits[row], expected, atol=1e-5, rtol=0)


def test_shapes_and_attention_maps_are_zero_on_padding():
    model = _tiny().eval()
    batch = _batch(_docs(), extra_sentences=1)
    out = model(batch)
    word, sentence = out.attentions["word"], out.attentions["sentence"]
    assert out.logits.shape == (4, 3) and word.shape == (4, 5, 7) and sentence.shape == (4, 5)
    assert torch.equal(word[~batch["word_mask"]], torch.zeros(int((~batch["word_mask"]).sum())))
    real = batch["sentence_mask"]
    torch.testing.assert_close(word.sum(-1)[real], torch.ones(int(real.sum())))
    assert torch.equal(sentence[~real], torch.zeros(int((~real).sum())))
    torch.testing.assert_close(sentence.sum(-1), torch.ones(4))
    with model.attention_maps(False):
        assert model(batch).attentions == {}
    assert model.train()(batch).attentions == {}


def test_padding_words_and_sentences_does_not_change_the_logits():
    model = _tiny().eval()
    docs = _docs(seed=2)
    with torch.no_grad():
        batched = model(_batch(docs, extra_sentences=2, extra_words=3, junk=True)).logits
        alone = torch.cat([model(_batch([doc])).logits for doc in docs])
    torch.testing.assert_close(batched, alone, atol=1e-5, rtol=0)


def test_an_empty_document_gives_the_output_bias():
    model = _tiny().eval()
    batch = _batch(_docs())
    batch["word_mask"][1] = False
    batch["sentence_mask"][1] = False
    with torch.no_grad():
        out = model(batch)
    torch.testing.assert_close(out.logits[1], model.output.bias, **FEW_OPS)
    assert torch.isfinite(out.logits).all()
    # A batch of empty documents only (nothing to pack) gives the bias for each.
    empty = torch.zeros(2, 1, 1, dtype=torch.bool)
    with torch.no_grad():
        logits = model({"input_ids": torch.zeros(2, 1, 1, dtype=torch.long), "word_mask": empty,
                        "sentence_mask": empty.any(-1)}).logits
    torch.testing.assert_close(logits, model.output.bias.expand(2, 3), **FEW_OPS)


def test_paper_size_parameter_count_in_closed_form():
    model = create_model("han", num_classes=5, embeddings=_matrix(512))
    e, h, a, classes = 512, 50, 200, 5

    def bigru(inputs):
        return 2 * (3 * h * inputs + 3 * h * h + 6 * h)  # two directions: W_ih, W_hh, b_ih, b_hh

    attention = 2 * h * a + a + a  # W, b and the context vector u
    expected = VOCAB * e + bigru(e) + attention + bigru(2 * h) + attention + 2 * h * classes + classes
    assert model.num_parameters() == expected


def test_presets_share_hcans_recipe_and_inputs_and_take_an_adam_step():
    paper, cpu = get_preset("han"), get_preset("han-cpu")
    assert paper.recipe == hcan.PAPER_RECIPE and cpu.recipe == hcan.CPU_RECIPE
    assert paper.inputs == hcan.PAPER_HIER_INPUTS and cpu.inputs == hcan.CPU_HIER_INPUTS
    assert han.RANDOM_EMBEDDING_RANGE == hcan.RANDOM_EMBEDDING_RANGE
    for name in ("han", "han-cpu"):
        preset = get_preset(name)
        torch.manual_seed(0)
        model = create_model(name, num_classes=3, embeddings=_matrix(preset.inputs["embedding_dim"]))
        assert model.word_gru.hidden_size == 50 and model.word_attention.project.out_features == 200
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, betas=preset.recipe.betas)
        before = [p.detach().clone() for p in model.parameters()]
        loss = F.cross_entropy(model.train()(_batch(_docs())).logits, torch.tensor([0, 1, 2, 0]))
        loss.backward()
        optimizer.step()
        assert all(not torch.equal(b, p) for b, p in zip(before, model.parameters()))


def test_flat_input_is_refused_with_a_config_error():
    with pytest.raises(ConfigError, match="not supported by model 'han-cpu'"):
        _tiny(shape="flat")
    model = _tiny()
    ids = torch.tensor([[3, 4, 5]])
    with pytest.raises(ConfigError, match="HAN reads hierarchical batches"):
        model({"input_ids": ids, "mask": ids > 0})
    with pytest.raises(ConfigError, match="'hidden_size' = 0"):
        _tiny(hidden_size=0)


def test_han_learns_on_an_imdb_slice():
    dataset = load_dataset("imdb", max_per_split=600)
    # Tiny sizes and a high lr so that 540 reviews and 5 epochs show learning.
    params = {"hidden_size": 8, "attention_dim": 16, "max_sentences": 8, "max_sentence_length": 20, "lr": 5e-3,
              "epochs": 5, "patience": None}
    clf = Classifier("han-cpu", params=params, seed=0).fit_dataset(dataset)
    losses = [row["train_loss"] for row in clf.fit_result_.history]
    assert min(losses) < 0.6 * losses[0]
    accuracy = clf.evaluate(dataset["test"])["accuracy"]
    assert accuracy > 0.6  # 600 balanced test reviews: chance is 0.5 +- 0.02
