"""int8 dynamic quantisation survives save_pretrained / from_pretrained, and reaches the ONNX export."""

import json
import warnings

import numpy as np
import pytest
import torch

import textcls
from textcls import Classifier
from textcls.cli import main
from textcls.errors import CheckpointError, ConfigError
from textcls.quantize import float_copy, is_quantized


@pytest.fixture(scope="module")
def trec_small():
    return textcls.load_dataset("trec", max_per_split=400)


@pytest.fixture(scope="module")
def texts(trec_small):
    return list(trec_small["test"]["text"])[:80]


# A linear output (fasttext-bag), a convolution + linear head (spe-cnn), an LSTM (bilstm).
PRESETS = {"fasttext-bag": {"epochs": 2, "params": {"bigram_buckets": 1024}},
           "spe-cnn": {"epochs": 1}, "bilstm": {"epochs": 1}}


@pytest.fixture(scope="module", params=sorted(PRESETS))
def fitted(request, trec_small):
    return Classifier(request.param, **PRESETS[request.param]).fit_dataset(trec_small)


def test_quantized_model_saves_and_loads_predicting_the_same(fitted, texts, tmp_path):
    float_probs = fitted.predict_proba(texts)
    clf = Classifier.from_pretrained(_saved(fitted, tmp_path / "float")).quantize("int8")
    assert is_quantized(clf.model_)
    int8_probs = clf.predict_proba(texts)
    assert not np.array_equal(int8_probs, float_probs)  # it really computes in int8
    assert (int8_probs.argmax(1) == float_probs.argmax(1)).mean() >= 0.9

    run = tmp_path / "int8"
    clf.save_pretrained(run)
    assert json.loads((run / "config.json").read_text())["quantize"] == "int8"
    loaded = Classifier.from_pretrained(run)
    assert is_quantized(loaded.model_)
    # Quantising the same stored float weights again gives the same int8 model, bit for bit.
    np.testing.assert_array_equal(loaded.predict_proba(texts), int8_probs)
    # A reloaded int8 model saves again without losing anything.
    loaded.save_pretrained(tmp_path / "again")
    assert (tmp_path / "again" / "model.safetensors").read_bytes() == (run / "model.safetensors").read_bytes()


def test_a_model_quantized_by_hand_no_longer_crashes_save_pretrained(fitted, texts, tmp_path):
    # The reproduction: torch.ao's quantize_dynamic applied to the network directly.
    clf = Classifier.from_pretrained(_saved(fitted, tmp_path / "float"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.ao.quantization import quantize_dynamic

        clf.estimator_.model_ = quantize_dynamic(clf.estimator_.model_, {torch.nn.Linear, torch.nn.LSTM},
                                                 dtype=torch.qint8)
    by_hand = clf.predict_proba(texts)
    clf.save_pretrained(tmp_path / "int8")
    loaded = Classifier.from_pretrained(tmp_path / "int8")
    assert is_quantized(loaded.model_)
    # Stored as dequantised weights and quantised again: the int8 values are the same, the
    # per-tensor scale may move by one step of 1/127.5 (it is taken from the largest weight).
    again = loaded.predict_proba(texts)
    assert (again.argmax(1) == by_hand.argmax(1)).mean() >= 0.95
    assert float(np.abs(again - by_hand).max()) <= 0.02


def test_float_copy_dequantizes_linear_and_lstm_weights():
    model = torch.nn.ModuleDict({"linear": torch.nn.Linear(6, 3), "lstm": torch.nn.LSTM(6, 4, bidirectional=True)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.ao.quantization import quantize_dynamic

        quantized = quantize_dynamic(model, {torch.nn.Linear, torch.nn.LSTM}, dtype=torch.qint8)
    restored = float_copy(quantized)
    assert not is_quantized(restored) and is_quantized(quantized)
    assert set(restored.state_dict()) == set(model.state_dict())
    torch.testing.assert_close(restored["linear"].weight, quantized["linear"].weight().dequantize(), rtol=0, atol=0)
    # int8 rounding: at most half a quantisation step from the original weights.
    step = quantized["linear"].weight().q_scale()
    assert float((restored["linear"].weight - model["linear"].weight).detach().abs().max()) <= step / 2 + 1e-6
    x = torch.randn(5, 2, 6)
    torch.testing.assert_close(restored["lstm"](x)[0], model["lstm"](x)[0], atol=0.05, rtol=0)


def test_tfidf_models_and_unknown_modes_are_refused(trec_small, fitted):
    with pytest.raises(ConfigError, match="TF-IDF"):
        Classifier("tfidf-lr").fit_dataset(trec_small).quantize()
    with pytest.raises(ConfigError, match="'quantize' = 'int4'"):
        fitted.quantize("int4")


def test_a_bad_quantize_setting_in_config_is_a_checkpoint_error(fitted, tmp_path):
    run = _saved(fitted, tmp_path / "run")
    config = json.loads((run / "config.json").read_text())
    config["quantize"] = "int3"
    (run / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="config.json.*'quantize' = 'int3'"):
        Classifier.from_pretrained(run)


def test_an_int8_run_exports_to_an_int8_onnx_graph(trec_small, texts, tmp_path, capsys):
    from textcls.onnx_predictor import OnnxClassifier

    clf = Classifier("fasttext-bag", epochs=2, params={"bigram_buckets": 1024}).fit_dataset(trec_small).quantize()
    clf.save_pretrained(tmp_path / "run")
    main(["export", str(tmp_path / "run"), "--format", "onnx", "--quantize", "int8", "--output", str(tmp_path / "q")])
    assert "int8" in capsys.readouterr().out
    side = json.loads((tmp_path / "q" / "onnx.json").read_text())
    assert side["quantize"] == "int8"
    onnx_probs = OnnxClassifier.load(tmp_path / "q", threads=1).predict_proba(texts)
    torch_probs = clf.predict_proba(texts)
    assert (onnx_probs.argmax(1) == torch_probs.argmax(1)).mean() >= 0.95
    # Without --quantize an int8 run still exports int8: the run says so.
    main(["export", str(tmp_path / "run"), "--format", "onnx", "--output", str(tmp_path / "default")])
    assert json.loads((tmp_path / "default" / "onnx.json").read_text())["quantize"] == "int8"
    # ... and the summary says so (it read --quantize, which was not given).
    out = capsys.readouterr().out
    assert out.startswith(f"wrote {tmp_path / 'default' / 'model.onnx'} (") and " KiB, int8), " in out
    # The written graph's difference leads; the float graph's, which is not written, follows, named.
    side = json.loads((tmp_path / "default" / "onnx.json").read_text())
    assert out.endswith(f"; max |onnx - torch| on the check batches {side['int8_max_abs_diff']:.1e} (the float "
                        f"graph before quantisation: {side['verified_max_abs_diff']:.1e})\n")
    assert len(out.strip().splitlines()) == 1


def _saved(clf, folder):
    clf.save_pretrained(folder)
    return folder
