import json

import numpy as np
import pytest
import torch

from textcls.errors import ConfigError
from textcls.models import TfidfModel, Output, Preset, TextModel, create_model, get_preset, list_models
from textcls.models.base import TextModel as BaseTextModel
from textcls.models.registry import _FAMILIES, _PRESETS, DEFAULT_CAPS, register_model, register_preset
from textcls.recipe import Recipe

FIRST_PRESETS = {
    "kim-cnn-rand",
    "kim-cnn-static",
    "kim-cnn-nonstatic",
    "kim-cnn-multichannel",
    "fasttext-bag",
    "fasttext-bag-unigram",
    "tfidf-lr",
    "tfidf-nb",
}
VOCAB = 40


def _flat_batch(num_docs=2, length=6, bigram_buckets=0):
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(2, VOCAB, (num_docs, length), generator=generator)
    ids[1, 4:] = 0
    batch = {"input_ids": ids, "mask": ids > 0}
    if bigram_buckets:
        bigrams = torch.randint(1, bigram_buckets + 1, (num_docs, length - 1), generator=generator)
        bigrams[1, 3:] = 0
        batch.update(bigram_ids=bigrams, bigram_mask=bigrams > 0)
    return batch


def _create(name, num_classes=3, **overrides):
    preset = get_preset(name)
    if preset.kind == "classic":
        return create_model(name, num_classes=num_classes, **overrides)
    embeddings = None
    if preset.inputs["embeddings"] is not None:
        dim = overrides.get("embedding_dim", preset.inputs["embedding_dim"])
        embeddings = np.random.default_rng(0).normal(size=(VOCAB, dim)).astype(np.float32)
        embeddings[0] = 0
    return create_model(name, num_classes=num_classes, vocab_size=VOCAB, embeddings=embeddings, **overrides)


def test_list_models_is_sorted_and_holds_every_first_preset():
    names = list_models()
    assert names == sorted(names)
    assert FIRST_PRESETS <= set(names)
    assert list_models("kim-cnn-*") == [
        "kim-cnn-multichannel",
        "kim-cnn-nonstatic",
        "kim-cnn-rand",
        "kim-cnn-static",
    ]


@pytest.mark.parametrize("name", sorted(FIRST_PRESETS))
def test_each_first_batch_preset_builds_and_runs_with_a_small_vocabulary(name):
    """The first batch's Kim CNN, fastText and TF-IDF presets; every other family's presets have
    their shapes and a round trip in their own test files and tests/test_round_trips.py."""
    torch.manual_seed(0)
    overrides = {"bigram_buckets": 16} if name == "fasttext-bag" else {}
    model = _create(name, **overrides)
    assert model.preset.name == name
    if get_preset(name).kind == "classic":
        assert isinstance(model, TfidfModel)
        texts = ["what is a cat", "who is bob", "where is paris", "what is a dog", "who wrote it", "where is rome"]
        proba = model.fit(texts, np.array([0, 1, 2, 0, 1, 2])).predict_proba(["who is rome"])
        assert proba.shape == (1, 3)
        np.testing.assert_allclose(proba.sum(axis=1), 1.0)
        return
    assert isinstance(model, TextModel)
    model.eval()
    out = model(_flat_batch(bigram_buckets=overrides.get("bigram_buckets", 0)))
    assert isinstance(out, Output)
    assert out.logits.shape == (2, 3)
    assert torch.isfinite(out.logits).all()


def test_overrides_reach_arch_recipe_and_inputs_without_touching_the_preset():
    model = create_model(
        "kim-cnn-rand",
        num_classes=2,
        vocab_size=VOCAB,
        feature_maps=7,
        windows=[2, 3],
        dropout=0.25,
        epochs=3,
        lr=0.5,
        embedding_dim=16,
        max_length=64,
    )
    assert [conv.out_channels for conv in model.convs] == [7, 7]
    assert [conv.kernel_size[0] for conv in model.convs] == [2, 3]
    assert model.dropout.p == 0.25
    assert model.embedding.weight.shape == (VOCAB, 16)
    preset = model.preset
    assert preset.arch == {"embedding_mode": "rand", "feature_maps": 7, "windows": [2, 3], "dropout": 0.25}
    assert (preset.recipe.epochs, preset.recipe.lr, preset.recipe.optimizer) == (3, 0.5, "adadelta")
    assert preset.inputs["max_length"] == 64 and preset.inputs["embedding_dim"] == 16
    original = get_preset("kim-cnn-rand")
    assert original.arch == {"embedding_mode": "rand"}
    assert original.recipe.epochs == 25 and original.inputs["embedding_dim"] == 300
    assert original.inputs["max_length"] == 1000  # the registry's default cap, untouched by the override


def test_inputs_that_the_model_also_takes_are_forwarded_from_inputs():
    model = create_model("fasttext-bag", num_classes=2, vocab_size=VOCAB, bigram_buckets=32, embedding_dim=4)
    assert model.bigrams.weight.shape == (33, 4)
    assert model.words.weight.shape == (VOCAB, 4)
    assert model.preset.inputs["bigram_buckets"] == 32
    assert create_model("fasttext-bag-unigram", num_classes=2, vocab_size=VOCAB).bigrams is None


def test_overriding_epochs_keeps_the_linear_decay_schedule_in_step():
    preset = get_preset("fasttext-bag").with_overrides(epochs=8)
    assert preset.recipe.epochs == 8
    assert preset.recipe.schedule == {"type": "lambda", "name": "linear-decay", "epochs": 8}
    assert get_preset("fasttext-bag").recipe.schedule["epochs"] == 5


def test_unknown_model_name_suggests_close_names():
    with pytest.raises(ConfigError) as err:
        create_model("kim-cnn-statik", num_classes=2, vocab_size=VOCAB)
    message = str(err.value)
    assert "unknown model 'kim-cnn-statik'" in message
    assert "kim-cnn-static" in message
    assert "\n" not in message


def test_unknown_parameter_names_itself_and_close_names():
    with pytest.raises(ConfigError) as err:
        create_model("kim-cnn-rand", num_classes=2, vocab_size=VOCAB, feature_map=10)
    message = str(err.value)
    assert "unknown parameter 'feature_map'" in message
    assert "feature_maps" in message
    with pytest.raises(ConfigError, match="'epoch'.*epochs"):
        get_preset("fasttext-bag").with_overrides(epoch=3)


@pytest.mark.parametrize(
    "overrides, expected",
    [
        ({"dropout": 1.5}, r"parameter 'dropout' = 1.5 is outside its allowed range \[0, 1\)"),
        ({"feature_maps": 0}, r"parameter 'feature_maps' = 0 is outside its allowed range \[1, "),
        ({"max_norm": -1.0}, r"parameter 'max_norm' = -1.0 is outside its allowed range \(0.0, "),
        ({"windows": [3, 0]}, r"parameter 'windows' = 0 is outside its allowed range \[1, 64\]"),
        ({"embedding_mode": "frozen"}, r"parameter 'embedding_mode' = 'frozen' is not one of rand, static"),
        ({"lr": -1.0}, r"parameter 'lr' = -1.0 is outside its allowed range \(0.0, "),
        ({"embedding_dim": 0}, r"parameter 'embedding_dim' = 0 is outside its allowed range \[1, "),
        ({"shape": "hierarchical"}, r"'shape' = 'hierarchical' is not supported by model 'kim-cnn-rand'"),
    ],
)
def test_invalid_values_name_the_parameter_and_its_range(overrides, expected):
    with pytest.raises(ConfigError, match=expected):
        create_model("kim-cnn-rand", num_classes=2, vocab_size=VOCAB, **overrides)


def test_classic_invalid_values_name_the_parameter_and_its_range():
    with pytest.raises(ConfigError, match=r"parameter 'C' = 0.0 is outside its allowed range \(0.0, "):
        create_model("tfidf-lr", num_classes=2, C=0.0)
    with pytest.raises(ConfigError, match=r"parameter 'classifier' = 'svm' is not one of lr, nb"):
        create_model("tfidf-lr", num_classes=2, classifier="svm")


def test_pretrained_presets_need_a_matching_embedding_matrix():
    with pytest.raises(ConfigError, match="needs pretrained vectors"):
        create_model("kim-cnn-static", num_classes=2, vocab_size=VOCAB)
    # A run being loaded from disk gets its weights from the checkpoint instead.
    loaded = create_model("kim-cnn-static", num_classes=2, vocab_size=VOCAB, from_checkpoint=True)
    assert loaded.embedding.weight.shape == (VOCAB, 50)
    wrong_width = np.zeros((VOCAB, 30), dtype=np.float32)
    with pytest.raises(ConfigError, match="'embedding_dim' = 50; set embedding_dim=30"):
        create_model("kim-cnn-static", num_classes=2, embeddings=wrong_width)
    with pytest.raises(ConfigError, match="has 40 rows but vocab_size is 41"):
        create_model("kim-cnn-static", num_classes=2, vocab_size=41, embeddings=np.zeros((VOCAB, 50)))
    with pytest.raises(ConfigError, match="uses no pretrained vectors"):
        create_model("kim-cnn-rand", num_classes=2, embeddings=np.zeros((VOCAB, 300)))
    with pytest.raises(ConfigError, match="needs vocab_size"):
        create_model("fasttext-bag", num_classes=2)


def _neural_presets():
    return [name for name in list_models() if get_preset(name).kind == "neural"]


@pytest.mark.parametrize("name", _neural_presets())
def test_every_neural_preset_caps_the_document_length(name):
    inputs = get_preset(name).inputs
    caps = ("max_length",) if inputs["shape"] == "flat" else ("max_sentences", "max_sentence_length")
    for key in caps:
        value = inputs[key]
        assert isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 1000, (key, value)
    if inputs["shape"] == "hierarchical":
        assert inputs["max_sentences"] * inputs["max_sentence_length"] <= 100 * 100


def test_length_caps_default_in_one_place_and_a_preset_or_override_wins():
    # The paper's own caps stay; presets whose paper states none get DEFAULT_CAPS.
    assert get_preset("dasa").inputs["max_length"] == 512
    assert get_preset("hcan-flat-one-sa-maxpool-cpu").inputs["max_length"] == 300
    assert get_preset("hcan-flat-one-sa-maxpool").inputs["max_length"] == 1000  # HCAN's paper: 1,000
    assert get_preset("han-cpu").inputs["max_sentences"] == 20
    for name in ("kim-cnn-rand", "fasttext-bag", "fcsr", "lstm", "cspan-base", "spe-cnn", "transformer"):
        assert get_preset(name).inputs["max_length"] == DEFAULT_CAPS["flat"]["max_length"] == 1000, name
    # Overrides win; None reads documents whole (the old behaviour), as does a large value.
    assert get_preset("kim-cnn-rand").with_overrides(max_length=50).inputs["max_length"] == 50
    assert get_preset("kim-cnn-rand").with_overrides(max_length=None).inputs["max_length"] is None
    assert get_preset("kim-cnn-rand").with_overrides(max_length=10**9).inputs["max_length"] == 10**9
    # A shape change brings the caps of the new shape.
    flat = get_preset("hcan-cpu").with_overrides(shape="flat")
    assert flat.inputs["max_length"] == 1000 and flat.inputs["max_sentences"] == 20
    hierarchical = get_preset("hcan-flat-one-sa-maxpool-cpu").with_overrides(shape="hierarchical")
    assert (hierarchical.inputs["max_sentences"], hierarchical.inputs["max_sentence_length"]) == (100, 100)
    # A config saved before the default existed loads with it; classic presets get none.
    old = get_preset("kim-cnn-rand").to_dict()
    del old["inputs"]["max_length"]
    assert Preset.from_dict(old).inputs["max_length"] == 1000
    assert "max_length" not in get_preset("tfidf-lr").inputs
    # A cap is checked where it is set, not first when the data are encoded.
    for bad in (0, -5, "many", 2.5, True):
        with pytest.raises(ConfigError, match="'max_length'"):
            get_preset("kim-cnn-rand").with_overrides(max_length=bad)
    with pytest.raises(ConfigError, match="'max_sentences'"):
        get_preset("han-cpu").with_overrides(max_sentences=0)


def test_preset_survives_a_json_round_trip():
    preset = get_preset("fasttext-bag").with_overrides(lr=0.5, embedding_dim=20)
    restored = Preset.from_dict(json.loads(json.dumps(preset.to_dict())))
    assert restored == preset
    model = create_model(restored, num_classes=2, vocab_size=VOCAB)
    assert model.words.weight.shape == (VOCAB, 20)
    assert model.preset.recipe.lr == 0.5


def test_a_preset_remembers_which_names_the_user_overrode_whatever_their_values():
    """A model that ignores a setting must see that it was given: epochs=1 on the ensemble (its
    placeholder recipe's value) left the recipe equal to the registered one and passed unseen."""
    registered = get_preset("ensemble")
    assert registered.overridden == frozenset()
    preset = registered.with_overrides(epochs=1, seed=0).with_overrides(pooling="linear", max_length=None)
    assert preset.overridden == {"epochs", "seed", "pooling", "max_length"}
    assert preset.recipe == registered.recipe  # the values alone cannot tell
    # Not part of the configuration: not saved, not compared, not brought back by a saved run.
    assert "overridden" not in preset.to_dict() and "overridden" not in repr(preset)
    assert registered.with_overrides(seed=0) == registered
    assert Preset.from_dict(json.loads(json.dumps(preset.to_dict()))).overridden == frozenset()


def test_registering_a_family_checks_its_presets():
    class Tiny(BaseTextModel):
        def __init__(self, vocab_size, num_classes, embeddings=None, *, embedding_dim=4, width=2):
            super().__init__()
            self.linear = torch.nn.Linear(embedding_dim, num_classes)

    try:
        register_model("tiny-test-family")(Tiny)
        inputs = {"embedding_dim": 4}
        with pytest.raises(ConfigError, match="'widht' is not a parameter of Tiny; did you mean: width"):
            register_preset(Preset("tiny-test", "tiny-test-family", arch={"widht": 3}, inputs=inputs))
        with pytest.raises(ConfigError, match="unknown input setting 'lowercaes'"):
            Preset("tiny-test", "tiny-test-family", inputs={**inputs, "lowercaes": True})
        with pytest.raises(ConfigError, match="kind 'classic' but family 'tiny-test-family' is neural"):
            register_preset(Preset("tiny-test", "tiny-test-family", inputs=inputs, kind="classic"))
        with pytest.raises(ConfigError, match="unknown model family 'tiny-tset-family'"):
            register_preset(Preset("tiny-test", "tiny-tset-family", inputs=inputs))
        registered = register_preset(Preset("tiny-test", "tiny-test-family", arch={"width": 3}, inputs=inputs))
        assert "tiny-test" in list_models() and get_preset("tiny-test") is registered

        class Clash(Tiny):
            def __init__(self, vocab_size, num_classes, embeddings=None, *, epochs=3):
                super().__init__(vocab_size, num_classes)

        with pytest.raises(ConfigError, match="parameter 'epochs' clashes with a Recipe field"):
            register_model("tiny-clash-family")(Clash)
    finally:
        _PRESETS.pop("tiny-test", None)
        _FAMILIES.pop("tiny-test-family", None)
        _FAMILIES.pop("tiny-clash-family", None)


def test_kim_recipe_follows_the_paper():
    recipe = get_preset("kim-cnn-static").recipe
    assert isinstance(recipe, Recipe)
    assert (recipe.optimizer, recipe.lr, recipe.batch_size) == ("adadelta", 1.0, 50)
    assert get_preset("kim-cnn-static").inputs["embeddings"] == "glove-6b-50d"
    assert get_preset("tfidf-lr").kind == "classic"
