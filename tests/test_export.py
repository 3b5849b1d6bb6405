"""ONNX export (textcls.export) and the torch-free predictor (textcls.onnx_predictor).

One tiny model per family of ``list_models()`` (two where a family has two code paths that
the tracer sees differently) is trained for one epoch on 200 real documents, saved, exported,
and run by onnxruntime on real texts through the saved tokenizer: short TREC questions,
long Reuters articles, texts longer than ``max_length``, and texts that normalise to nothing.
The probabilities must equal PyTorch's (``Classifier.from_pretrained(run).predict_proba``)
within 1e-5, whatever the sub-batch size. int8 exports must stay close and be smaller.
"""

import json
import subprocess
import sys

import numpy as np
import pytest
from conftest import load_benchmark_script
from tolerance import KERNEL

import textcls
from textcls.api import Classifier
from textcls.errors import CheckpointError, ConfigError
from textcls.export import export_onnx
from textcls.models.registry import get_preset, list_models
from textcls import onnx_predictor
from textcls.onnx_predictor import OnnxClassifier

ATOL = KERNEL["atol"]  # 1e-5: probabilities after reductions, two kernel libraries

# The runs of benchmarks/export_int8_fidelity.py, whose output is docs/export.md's int8 table:
# one definition of the cases and texts, there, for the table and these tests.
_FIDELITY = load_benchmark_script("export_int8_fidelity")
CASES = _FIDELITY.TINY_CASES
# int8 (onnxruntime dynamic quantisation) on the families whose weights sit in each quantised
# op: Gather + MatMul (fastText), Conv (Kim), LSTM, attention MatMuls (DASA).
INT8 = {"fasttext-bag", "kim-cnn-rand", "bilstm", "dasa"}
# The presets whose TorchScript trace cannot pass the check (nn.MultiheadAttention bakes the
# traced length), so torch.export makes their graph; every other family must trace: a fallback
# still exports, with a larger graph, so without this a regression in the trace goes unseen.
TORCH_EXPORT = {"transformer-1l-2h"}


@pytest.fixture(scope="module")
def datasets():
    return {name: textcls.load_dataset(name, max_per_split=200) for name in ("trec", "reuters", "fdu_mtl")}


@pytest.fixture(scope="module")
def texts(datasets):
    return _FIDELITY.tiny_texts(datasets)


def _fit(datasets, preset, dataset, params, tmp_path):
    clf = Classifier(preset, epochs=1, batch_size=32, params=params).fit_dataset(datasets[dataset])
    return clf.save_pretrained(tmp_path / "run")


def _tasks(clf, n):
    return [clf.task_names_[i % len(clf.task_names_)] for i in range(n)] if clf.uses_tasks else None


def test_every_neural_family_has_a_case():
    families = {get_preset(name).family for name in list_models() if get_preset(name).kind == "neural"}
    covered = {get_preset(preset).family for preset, _, _ in CASES}
    assert families - covered == set(), "add a CASES row for the new family"


@pytest.mark.parametrize("preset,dataset,params", CASES, ids=[c[0] for c in CASES])
def test_onnx_probabilities_equal_pytorch(datasets, texts, tmp_path, preset, dataset, params):
    run = _fit(datasets, preset, dataset, params, tmp_path)
    reference = Classifier.from_pretrained(run)
    tasks = _tasks(reference, len(texts))
    expected = reference.predict_proba(texts, tasks)
    # A model whose probabilities hardly move from text to text would make the comparison vacuous.
    assert float(np.ptp(expected, axis=0).max()) > 0.01, f"{preset}: train it more (see CASES)"

    export_onnx(run, tmp_path / "onnx")
    sidecar = json.loads((tmp_path / "onnx" / "onnx.json").read_text())
    assert sidecar["model"] == preset and sidecar["label_names"] == [str(c) for c in reference.classes_]
    assert sidecar["output"]["activation"] == ("sigmoid" if reference.multi_label_ else "softmax")
    expected_method = f"torch.onnx.export(dynamo={preset in TORCH_EXPORT})"
    assert sidecar["exporter"]["method"] == expected_method, sidecar["exporter"].get("legacy_failure")
    onnx_clf = OnnxClassifier.load(tmp_path / "onnx", threads=1)
    got = onnx_clf.predict_proba(texts, tasks)
    assert got.shape == expected.shape and got.dtype == np.float32
    diff = float(np.abs(got - expected).max())
    assert diff <= ATOL, f"{preset}: max |onnx - torch| = {diff:.3g}"
    # Other sub-batches pad differently and come back in input order.
    small = onnx_clf.predict_proba(texts, tasks, batch_size=5)
    assert float(np.abs(small - expected).max()) <= ATOL
    if tasks is not None:  # the task ids reach the graph: other heads, other probabilities
        shifted = tasks[1:] + tasks[:1]
        moved = reference.predict_proba(texts, shifted)
        assert float(np.abs(moved - expected).max()) > 1e-3
        assert float(np.abs(onnx_clf.predict_proba(texts, shifted) - moved).max()) <= ATOL
    if reference.multi_label_:
        assert onnx_clf.predict(texts[:3]) == [list(reference.classes_[row >= 0.5]) for row in got[:3]]
    else:
        assert list(onnx_clf.predict(texts, tasks)) == list(reference.classes_[got.argmax(axis=1)])

    if preset in INT8:
        export_onnx(run, tmp_path / "int8", quantize="int8")
        quantized = OnnxClassifier.load(tmp_path / "int8", threads=1).predict_proba(texts, tasks)
        size = {kind: (tmp_path / kind / "model.onnx").stat().st_size for kind in ("onnx", "int8")}
        assert size["int8"] < 0.8 * size["onnx"], size
        agreement = float((quantized.argmax(axis=1) == expected.argmax(axis=1)).mean())
        assert agreement >= 0.95, f"{preset}: int8 argmax agrees on {agreement:.1%} of the texts"
        assert float(np.abs(quantized - expected).max()) <= 0.05
        assert json.loads((tmp_path / "int8" / "onnx.json").read_text())["quantize"] == "int8"


def test_onnx_sub_batches_hold_at_most_eval_max_pieces(datasets, texts, tmp_path, monkeypatch):
    run = _fit(datasets, "kim-cnn-rand", "trec", {"embedding_dim": 16, "feature_maps": 8}, tmp_path)
    export_onnx(run, tmp_path / "onnx")
    clf = OnnxClassifier.load(tmp_path / "onnx", threads=1)
    monkeypatch.setattr(onnx_predictor, "EVAL_MAX_PIECES", 1 << 30)
    unbounded = clf.predict_proba(texts)
    shapes, original = [], clf.batch

    def spy(docs, *rest):
        feeds = original(docs, *rest)
        shapes.append(feeds["input_ids"].shape)
        return feeds

    monkeypatch.setattr(clf, "batch", spy)
    monkeypatch.setattr(onnx_predictor, "EVAL_MAX_PIECES", 64)
    bounded = clf.predict_proba(texts)
    # One sub-batch of 256 without the bound; with it, sub-batches of at most 64 padded tokens (a
    # longer text alone), and the same probabilities row for row.
    assert len(shapes) > 3 and sum(rows for rows, _ in shapes) == len(texts)
    assert all(rows * width <= 64 or rows == 1 for rows, width in shapes)
    assert float(np.abs(bounded - unbounded).max()) <= ATOL


def test_the_predictor_runs_without_torch(datasets, texts, tmp_path):
    run = _fit(datasets, "fasttext-bag", "trec", {"embedding_dim": 8, "bigram_buckets": 256}, tmp_path)
    export_onnx(run, tmp_path / "onnx")
    expected = Classifier.from_pretrained(run).predict_proba(texts[:5])
    script = (
        "import sys, json\n"
        "from textcls.onnx_predictor import OnnxClassifier\n"
        f"clf = OnnxClassifier.load({str(tmp_path / 'onnx')!r}, threads=1)\n"
        f"probs = clf.predict_proba({texts[:5]!r})\n"
        "print(json.dumps({'torch': [m for m in sys.modules if m == 'torch' or m.startswith('torch.')],"
        " 'probs': probs.tolist()}))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["torch"] == []
    assert float(np.abs(np.array(result["probs"], dtype=np.float32) - expected).max()) <= ATOL


def test_a_changed_model_file_is_refused(datasets, tmp_path):
    run = _fit(datasets, "fasttext-bag", "trec", {"embedding_dim": 4, "bigram_buckets": 64}, tmp_path)
    export_onnx(run, tmp_path / "onnx")
    path = tmp_path / "onnx" / "model.onnx"
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="SHA-256"):
        OnnxClassifier.load(tmp_path / "onnx")


def test_classic_runs_are_not_exported(datasets, tmp_path):
    run = Classifier("tfidf-lr").fit_dataset(datasets["trec"]).save_pretrained(tmp_path / "run")
    with pytest.raises(ConfigError, match="tfidf-lr.*Classifier.from_pretrained"):
        export_onnx(run, tmp_path / "onnx")
    assert not (tmp_path / "onnx").exists()


@pytest.mark.parametrize("preset, params", [("kim-cnn-rand", {"embedding_dim": 8, "feature_maps": 4, "pad_borders": True}),
                                            ("spe-cnn", {"filters": 4, "kim_row_length": 48, "max_length": 40})])
def test_runs_read_as_kims_code_are_not_exported(datasets, tmp_path, preset, params):
    run = _fit(datasets, preset, "trec", params, tmp_path)
    with pytest.raises(ConfigError, match="reads its data as Kim's released code does .* not exported to ONNX"):
        export_onnx(run, tmp_path / "onnx")
    assert not (tmp_path / "onnx").exists()


def test_bad_arguments_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="quantize"):
        export_onnx(tmp_path, tmp_path / "onnx", quantize="int4")
    with pytest.raises(ConfigError, match="folder"):
        export_onnx(tmp_path, tmp_path / "model.onnx")


def test_the_export_command_writes_a_folder_the_predictor_loads(datasets, texts, tmp_path, capsys):
    from textcls.cli import main

    run = _fit(datasets, "fasttext-bag", "trec", {"embedding_dim": 4, "bigram_buckets": 64}, tmp_path)
    main(["export", str(run), "--format", "onnx", "--quantize", "int8", "--output", str(tmp_path / "cli")])
    assert "int8" in capsys.readouterr().out
    probs = OnnxClassifier.load(tmp_path / "cli").predict_proba(texts[:8])
    assert probs.shape == (8, len(Classifier.from_pretrained(run).classes_))
    with pytest.raises(SystemExit) as done:
        main(["export", str(run), "--format", "tflite", "--output", str(tmp_path / "bad")])
    err = capsys.readouterr().err
    assert done.value.code == 2 and err.startswith("error: --format 'tflite'") and len(err.strip().split("\n")) == 1
    assert not (tmp_path / "bad").exists()
