"""--embeddings minilm-static: all-MiniLM-L6-v2 distilled by Model2Vec into static word vectors.

The distillation (25-45 s on one core) runs once per machine: every test reads the cache in
the user cache folder (``$TEXTCLS_CACHE`` or ``~/.cache/textcls``), and the session fixture
makes it the first time.
"""

import numpy as np
import pytest
from tolerance import KERNEL
from typer.testing import CliRunner

import textcls
from textcls.errors import ConfigError
from textcls.models.registry import get_preset
from textcls.text import embeddings as emb
from textcls.text import build_embeddings


@pytest.fixture(scope="session")
def static_model():
    model, info = emb.minilm_static_model()
    return model, info


def unit(v):
    return v / np.linalg.norm(v)


def test_real_words_get_256_d_vectors_and_similar_words_are_closer(static_model):
    vocab = ["[PAD]", "[UNK]", "good", "great", "terrible", "movie", "film", "banana", "unwatchable", "☃"]
    result = build_embeddings(vocab, "minilm-static", token_counts=[0, 3, 5, 5, 5, 5, 5, 5, 5, 1])
    m = result.matrix
    assert result.dim == 256 and m.shape == (10, 256) and m.dtype == np.float32
    assert not m[0].any()
    # Every real word has word pieces (a rare one is several: un ##watch ##able); the snowman has none.
    assert (result.found, result.total) == (7, 8)
    assert result.settings["word_vector"] == "mean of its word pieces"
    cos = lambda a, b: float(unit(m[vocab.index(a)]) @ unit(m[vocab.index(b)]))  # noqa: E731
    assert cos("good", "great") > cos("good", "banana") + 0.2
    assert cos("movie", "film") > cos("movie", "banana") + 0.2
    # The word's vector is its pieces' mean, unnormalised: the scale of the static vectors.
    model, _ = static_model
    pieces = model.tokenize(["unwatchable"])[0]
    assert len(pieces) > 1
    np.testing.assert_allclose(m[vocab.index("unwatchable")], model.embedding[pieces].mean(axis=0), **KERNEL)
    assert 1.0 < np.linalg.norm(m[vocab.index("good")]) < 20.0


def test_the_cache_is_reused_without_distilling_again(static_model, monkeypatch):
    model, _ = static_model
    folder = emb.cache_dir() / emb.MINILM_CACHE_NAME
    files = sorted(folder.iterdir())
    assert {f.name for f in files} == {"vectors.safetensors", "tokenizer.json", "distill.json"}
    mtimes = [f.stat().st_mtime_ns for f in files]

    def no_distill(*args, **kwargs):
        raise AssertionError("distilled although the cache was complete")

    import model2vec.distill

    monkeypatch.setattr(model2vec.distill, "distill", no_distill)
    monkeypatch.setattr(emb, "_STATIC_MODELS", {})  # a new process: nothing in memory
    again, info = emb.minilm_static_model()
    assert info["distilled"] is False and info["pca_dims"] == 256
    np.testing.assert_array_equal(again.embedding, np.asarray(model.embedding, dtype=np.float32))
    assert again.tokenize(["a movie"]) == model.tokenize(["a movie"])
    assert [f.stat().st_mtime_ns for f in sorted(folder.iterdir())] == mtimes


def test_a_preset_switched_to_minilm_static_takes_its_width():
    preset = get_preset("kim-cnn-static").with_overrides(embeddings="minilm-static")
    assert preset.inputs["embeddings"] == "minilm-static" and preset.inputs["embedding_dim"] == 256
    assert get_preset("fcsr").with_overrides(embeddings="glove-6b-50d").inputs["embedding_dim"] == 50
    # An explicit width wins, and a wrong one is refused when the vectors are built.
    wrong = get_preset("kim-cnn-static").with_overrides(embeddings="minilm-static", embedding_dim=50)
    assert wrong.inputs["embedding_dim"] == 50
    with pytest.raises(ConfigError, match="'dim' = 50 but the embeddings from 'minilm-static' have 256"):
        build_embeddings(["[PAD]", "[UNK]", "good"], "minilm-static", dim=50)


def test_a_preset_trains_with_minilm_static_vectors(static_model):
    data = textcls.load_dataset("trec", max_per_split=600)
    clf = textcls.Classifier("kim-cnn-static", embeddings="minilm-static", epochs=4, seed=0)
    clf.fit_dataset(data)
    assert clf.data_report_["embeddings"]["source"] == "minilm-static"
    assert clf.data_report_["embeddings"]["dim"] == 256
    assert clf.data_report_["embeddings"]["coverage"] > 0.95  # word pieces leave few words out
    import torch

    tables = [m.weight.shape for m in clf.model_.modules() if isinstance(m, torch.nn.Embedding)]
    assert tables and all(shape[1] == 256 for shape in tables)
    accuracy = clf.evaluate(data["test"])["accuracy"]
    assert accuracy > 0.5  # six classes: chance is about 0.23 (the largest class)


def test_list_models_names_each_presets_vectors():
    from textcls.cli import app

    out = CliRunner().invoke(app, ["list-models"])
    assert out.exit_code == 0
    rows = {line.split()[0]: line.split()[2] for line in out.stdout.splitlines()}
    assert rows["kim-cnn-static"] == "glove-6b-50d" and rows["fcsr"] == "glove-6b-50d"
    assert rows["hcan"] == "word2vec"
    assert rows["kim-cnn-rand"] == "-" and rows["tfidf-lr"] == "-"


def test_fasttext_bag_minilm_starts_its_word_rows_from_the_distilled_vectors_and_learns(static_model):
    from textcls.models import create_model
    from textcls.text.pipeline import UNK_ID

    vocab = ["[PAD]", "[UNK]", "good", "movie"]
    vectors = build_embeddings(vocab, "minilm-static").matrix
    model = create_model("fasttext-bag-minilm", num_classes=2, vocab_size=len(vocab), embeddings=vectors)
    assert model.words.weight.shape == (4, 256) and model.bigrams.weight.shape == (2**16 + 1, 256)
    np.testing.assert_array_equal(model.words.weight[2:].detach().numpy(), vectors[2:])
    assert not model.words.weight[UNK_ID].any()  # fastText drops unknown words
    data = textcls.load_dataset("trec", max_per_split=600)
    clf = textcls.Classifier("fasttext-bag-minilm", seed=0).fit_dataset(data)
    assert clf.data_report_["embeddings"]["source"] == "minilm-static"
    assert clf.evaluate(data["test"])["accuracy"] > 0.7  # six classes: the largest is about 0.23
