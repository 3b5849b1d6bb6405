"""The `static-lr` preset: frozen distilled MiniLM sentence vectors + logistic regression
(models/static_lr.py), fitted by TfidfEstimator and stored whole in its run.

The vectors come from the user cache (text/embeddings.minilm_static_model); the first test on a
fresh machine distils them once (25-45 s).
"""

import numpy as np
import pytest

from textcls import Classifier
from textcls.errors import CheckpointError, ConfigError
from textcls.estimators import estimator_for
from textcls.models.registry import create_model, get_preset
from textcls.models.static_lr import StaticLRModel, StaticSentenceVectors
from textcls.text.embeddings import minilm_static_model

from static_runs import assert_it_beats_the_majority_class, assert_the_saved_run_predicts_alone, train_refusal
from tolerance import KERNEL


@pytest.fixture(scope="module")
def fitted(trec_600):
    return Classifier("static-lr", seed=0).fit_dataset(trec_600)


def test_the_sentence_vector_is_model2vecs_mean_of_word_pieces(static_vectors):
    texts = ["a gorgeous, witty, seductive movie.", "What is the capital of Peru?", "unbelievably dull"]
    ours = StaticSentenceVectors(static_vectors[0], static_vectors[1], static_vectors[2]).transform(texts)
    model, _ = minilm_static_model()
    theirs = model.encode(texts, use_multiprocessing=False)  # normalised: the distilled model's setting
    np.testing.assert_allclose(ours, theirs, **KERNEL)
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, **KERNEL)


def test_a_text_with_no_known_piece_is_the_zero_vector(static_vectors):
    encoder = StaticSentenceVectors(static_vectors[0], static_vectors[1], static_vectors[2])
    out = encoder.transform(["", "good film"])
    assert out.shape == (2, 256)
    assert not out[0].any() and out[1].any()


def test_it_learns_trec_and_chooses_c_on_dev(fitted, trec_600):
    assert_it_beats_the_majority_class(fitted, trec_600["test"], 0.2)
    model = fitted.estimator_.model_
    assert model.selection_["parameter"] == "C" and model.C in get_preset("static-lr").arch["C_grid"]
    params = fitted.estimator_.num_parameters()
    assert params["trainable"] == 6 * 256 + 6 and params["embedding"] == 29525 * 256
    assert params["total"] == params["trainable"] + params["embedding"]


def test_a_padded_batch_equals_one_text_at_a_time(fitted, trec_600):
    texts = list(trec_600["test"]["text"])[:12] + ["word " * 300]
    together = fitted.predict_proba(texts)
    alone = np.concatenate([fitted.predict_proba([t]) for t in texts])
    np.testing.assert_allclose(together, alone, **KERNEL)


def test_a_saved_run_predicts_the_same_without_the_cache(fitted, trec_600, tmp_path, monkeypatch):
    again = assert_the_saved_run_predicts_alone(fitted, list(trec_600["test"]["text"]), tmp_path / "run", monkeypatch)
    assert again.estimator_.preset.arch["C"] == fitted.estimator_.model_.C


def test_bad_vectors_and_a_corrupt_state_are_one_clear_error(fitted):
    with pytest.raises(ConfigError, match="'vectors' = 'glove'"):
        create_model(get_preset("static-lr").with_overrides(vectors="glove"), num_classes=2)
    with pytest.raises(ConfigError, match="use_vectors"):
        StaticLRModel(2).fit(["a", "b"], np.array([0, 1]))
    arrays, meta = fitted.estimator_.state()
    short = {**arrays, "embedding": arrays["embedding"][:-1]}
    with pytest.raises(CheckpointError, match="do not fit a tokenizer"):
        estimator_for(get_preset("static-lr")).load_state(short, meta)
    with pytest.raises(CheckpointError, match="lacks array 'weights'"):
        estimator_for(get_preset("static-lr")).load_state({k: v for k, v in arrays.items() if k != "weights"}, meta)


def test_a_classic_preset_refuses_word_vectors_with_one_line(trec_600):
    from textcls.errors import ConfigError as Refused

    for name in ("static-lr", "tfidf-lr"):
        with pytest.raises(Refused, match=f"model '{name}' is a classic model and reads no pretrained word vectors"):
            Classifier(name, embeddings="glove-6b-50d").fit_dataset(trec_600)


def test_a_classic_preset_refuses_a_precision_it_would_not_run_in(tmp_path):
    """--precision bf16 on tfidf-lr trained rc 0 in fp64 and wrote "precision": "bf16" into config.json."""
    from textcls.cli import main

    data = tmp_path / "d.csv"
    data.write_text("text,label\n" + "".join(f"good fine {i},pos\nbad poor {i},neg\n" for i in range(20)))
    for name in ("tfidf-lr", "static-lr"):
        with pytest.raises(SystemExit) as done:
            main(["train", "-m", name, "-d", str(data), "--precision", "bf16", "--run-dir", str(tmp_path / name)])
        assert done.value.code == 2 and not (tmp_path / name).exists()
    with pytest.raises(ConfigError, match=r"^model 'tfidf-lr' is a classic model, fitted without epochs or batches; "
                                          r"'precision' cannot be set on it \(only dev_fraction and seed can\): drop it$"):
        Classifier("tfidf-lr", precision="bf16").fit(["good", "bad", "fine", "poor"], ["p", "n", "p", "n"])


def test_a_classic_preset_refuses_a_recipe_field_given_at_its_placeholder_value(tmp_path, capsys):
    """epochs=1 equals the classic presets' placeholder recipe (Recipe(epochs=1)), so it passed the
    check by value, was written into config.json and ignored; so did batch_size=50 and lr=0.001."""
    texts, labels = ["good", "bad", "fine", "poor"], ["p", "n", "p", "n"]
    for name in ("tfidf-lr", "static-lr"):
        for field, value in (("epochs", 1), ("batch_size", 50), ("lr", 0.001)):
            with pytest.raises(ConfigError, match=rf"^model '{name}' is a classic model, fitted without epochs or "
                                                  rf"batches; '{field}' cannot be set on it \(only dev_fraction and "
                                                  r"seed can\): drop it$"):
                Classifier(name, **{field: value}).fit(texts, labels)
    assert "'epochs' cannot be set on it" in train_refusal(tmp_path, capsys, "tfidf-lr", "--epochs", "1")


def test_a_classic_preset_refuses_text_pipeline_settings(tmp_path, capsys):
    """max_length=2 on tfidf-lr trained the same model as without it and wrote max_length into
    config.json's inputs as if the texts had been cut; no classic model builds a text pipeline."""
    texts, labels = ["good", "bad", "fine", "poor"], ["p", "n", "p", "n"]
    # Whatever the value: None (no cap) and True (the preset's own lowercase) are not applied either.
    for name, setting, key in (("tfidf-lr", {"max_length": 2}, "max_length"), ("static-lr", {"max_length": 1000},
                                "max_length"), ("tfidf-nb", {"params": {"max_length": None}}, "max_length"),
                               ("tfidf-lr", {"params": {"lowercase": True}}, "lowercase")):
        with pytest.raises(ConfigError, match=rf"^model '{name}' is a classic model, which reads each text whole with "
                                              rf"its own tokenizer; '{key}' cannot be set on it \(no text-pipeline "
                                              r"setting can\): drop it$"):
            Classifier(name, **setting).fit(texts, labels)
    assert "'max_length' cannot be set on it" in train_refusal(tmp_path, capsys, "tfidf-lr", "--set", "max_length=2")
    # The frozen encoder's own cut is named where there is one.
    with pytest.raises(ConfigError, match=r"'max_length' cannot be set on it \(no text-pipeline setting can\): set its "
                                          r"parameter 'max_seq_length' instead \(CLI: --set max_seq_length=N\)$"):
        Classifier("minilm-encoder-lr", max_length=64).fit(texts, labels)


def test_list_models_names_static_lrs_vectors():
    from typer.testing import CliRunner

    from textcls.cli import app

    result = CliRunner().invoke(app, ["list-models"])
    row = next(line for line in result.output.splitlines() if line.startswith("static-lr "))
    assert row.split()[1:3] == ["classic", "minilm-static"]


def test_the_benchmark_tables_name_static_lrs_vectors():
    from textcls.benchmark.report import vectors_without_info

    def entry(preset):
        return {"kind": "classic", "runs": [{"settings": get_preset(preset).to_dict()}]}

    assert vectors_without_info(entry("static-lr")) == "minilm-static (frozen sentence vectors)"
    assert vectors_without_info(entry("tfidf-lr")) == "none (TF-IDF)"


@pytest.mark.parametrize("model, options, refused", [
    ("tfidf-lr", ["--epochs", "1"], "'epochs' cannot be set on it"),
    ("tfidf-lr", ["--set", "max_length=5"], "'max_length' cannot be set on it"),
    ("tfidf-lr", ["--embeddings", "glove-6b-50d"], "reads no pretrained word vectors"),
    ("tfidf-lr", ["--set", "C=10"], "'C' = 10 cannot be set beside the grid"),
    ("static-finetune", ["--lr", "0.01"], "set its parameter 'adam_lr' instead"),
    ("ensemble", ["--epochs", "1"], "model 'ensemble' is an ensemble"),
])
def test_train_refuses_a_setting_a_classic_model_would_not_read_before_reading_the_data(
        tmp_path, capsys, monkeypatch, model, options, refused):
    """These refusals came when the model was fitted, so `textcls train` read the whole data
    first (minutes on a large file) to then refuse an option it could have refused at once."""
    import textcls.cli

    def read(*args, **kwargs):
        raise AssertionError("the data was read before the option was refused")

    monkeypatch.setattr(textcls.cli, "_load_data", read)
    assert refused in train_refusal(tmp_path, capsys, model, *options)
