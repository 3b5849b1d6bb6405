"""ONNX export (textcls.export) and the torch-free predictor (textcls.onnx_predictor).

One tiny model per family of ``list_models()`` (two where a family has two code paths that
the tracer sees differently) is trained for one epoch on 200 real documents, saved, exported,
and run by onnxruntime on real texts through the saved tokenizer: short TREC questions,
long Reuters articles, texts longer than ``max_length``, and texts that normalise to nothing.
The probabilities must equal PyTorch's (``Classifier.from_pretrained(run).predict_proba``)
within 1e-5, whatever the sub-batch size. int8 exports must stay close and be smaller.
"""

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import load_benchmark_script
from tolerance import KERNEL

import textcls
from textcls import artifacts
from textcls.api import Classifier
from textcls.errors import CheckpointError, ConfigError, RunFolderError
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
    # The cases' own epochs (params) win over the quick default, one setting each.
    clf = Classifier(preset, params={"epochs": 1, "batch_size": 32, **params}).fit_dataset(datasets[dataset])
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
    with pytest.raises(ConfigError, match="tfidf-lr.*predict with textcls predict or the Python API: textcls.Classifier.from_pretrained"):
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


def test_an_opset_the_graph_cannot_have_is_said(datasets, tmp_path, capsys):
    """--opset 14 on a Transformer wrote an opset-18 graph (torch.export's floor), rc 0, and the
    report line said nothing: a runtime that stops at 14-17 found out when it failed to load it."""
    from textcls.cli import main

    run = _fit(datasets, "transformer-1l-2h", "trec", {"embeddings": None, "embedding_dim": 16, "d_model": 16,
                                                        "ffn_dim": 32}, tmp_path)
    main(["export", str(run), "--opset", "14", "--output", str(tmp_path / "tr")])
    err = capsys.readouterr().err
    assert json.loads((tmp_path / "tr" / "onnx.json").read_text())["opset"] == 18
    assert err.startswith("note: the graph is opset 18, not the 14 asked: the TorchScript exporter failed for this "
                          "model (") and err.rstrip().endswith("a runtime that stops below it cannot load this graph")
    fast = _fit(datasets, "fasttext-bag", "trec", {"embedding_dim": 4, "bigram_buckets": 64}, tmp_path / "ft")
    main(["export", str(fast), "--opset", "14", "--output", str(tmp_path / "ft14")])
    assert capsys.readouterr().err == ""
    assert json.loads((tmp_path / "ft14" / "onnx.json").read_text())["opset"] == 14


# --------------------------------------------------------------------------- damaged folders, bad arguments


@pytest.fixture(scope="module")
def small_export(datasets, tmp_path_factory):
    """A tiny fastText run (6 TREC classes, hashed bigrams) and its export, for the tests that
    damage a copy or make the export fail."""
    tmp = tmp_path_factory.mktemp("small")
    run = _fit(datasets, "fasttext-bag", "trec", {"embedding_dim": 4, "bigram_buckets": 64}, tmp)
    export_onnx(run, tmp / "onnx")
    return run, tmp / "onnx"


def _set(key, value):
    return lambda side: side.__setitem__(key, value)


def _labels(n):
    def edit(side):
        side["label_names"], side["label_values"] = side["label_names"][:n], side["label_values"][:n]
    return edit


def _pipeline(key, value):
    return lambda side: side["pipeline"].__setitem__(key, value)


# Each edit of onnx.json, and what the CheckpointError must say (it also names onnx.json and
# says to export the run again). Before these checks: KeyError, TypeError, numpy's shape
# errors, errors blaming tokenizer.json, or silently wrong predictions.
SIDECAR_EDITS = [
    ("no-shape", lambda side: side.pop("shape"), "'shape' is missing; it should be one of flat, hierarchical"),
    ("no-label_names", lambda side: side.pop("label_names"), "'label_names' is missing"),
    ("no-multi_label", lambda side: side.pop("multi_label"), "'multi_label' is missing; it should be true or false"),
    ("no-pipeline", lambda side: side.pop("pipeline"), "'pipeline' is missing"),
    ("pipeline-null", _set("pipeline", None), "'pipeline' = None should be a JSON object"),
    ("pipeline-string", _set("pipeline", "x"), "'pipeline' = 'x' should be a JSON object"),
    ("pipeline-unknown-setting", _pipeline("colour", 1), "'pipeline' is not valid text pipeline settings .*'colour'"),
    ("pipeline-other-normaliser", _pipeline("lowercase", False), "'pipeline' does not fit tokenizer.json"),
    ("pipeline-without-bigrams", _pipeline("bigram_buckets", 0), "'pipeline' has bigram_buckets = 0, but model.onnx"),
    ("batch_size-string", _set("batch_size", "x"), "'batch_size' = 'x' should be an integer >= 1"),
    ("label_names-string", _set("label_names", "ab"), "'label_names' = 'ab' should be a non-empty list"),
    ("three-labels", _labels(3), "'label_names' = .* has 3 class names, but model.onnx gives 6 probabilities"),
    ("one-label", _labels(1), "'label_names' = .* has 1 class names, but model.onnx gives 6 probabilities"),
    ("label_values-short", lambda side: side["label_values"].pop(), "'label_values' = .* should be a list of 6"),
    ("shape-weird", _set("shape", "weird"), "'shape' = 'weird' should be one of flat, hierarchical"),
    ("shape-hierarchical", _set("shape", "hierarchical"), "'shape' = 'hierarchical' does not match model.onnx"),
    ("task_names-single-task", _set("task_names", ["a", "b"]), r"'task_names' = \['a', 'b'\] should be null"),
    ("quantize-int4", _set("quantize", "int4"), "'quantize' = 'int4' should be null or 'int8'"),
    # Every field plausible: only the sidecar's own checksum tells.
    ("relabelled", lambda side: side["label_names"].reverse(), "do not match the SHA-256 recorded in it"),
]


@pytest.mark.parametrize("edit, match", [e[1:] for e in SIDECAR_EDITS], ids=[e[0] for e in SIDECAR_EDITS])
def test_a_damaged_sidecar_is_a_checkpoint_error_naming_the_field(small_export, tmp_path, edit, match):
    folder = tmp_path / "onnx"
    shutil.copytree(small_export[1], folder)
    side = json.loads((folder / "onnx.json").read_text())
    edit(side)
    (folder / "onnx.json").write_text(json.dumps(side))
    with pytest.raises(CheckpointError, match=match) as err:
        OnnxClassifier.load(folder, threads=1).predict_proba(["what is the capital of peru ?"])
    message = str(err.value)
    assert message.startswith(str(folder / "onnx.json")) and "export the run again" in message, message


def test_a_sidecar_without_its_checksum_loads_and_verify_false_takes_an_edit(small_export, tmp_path):
    folder = tmp_path / "onnx"
    shutil.copytree(small_export[1], folder)
    side = json.loads((folder / "onnx.json").read_text())
    expected = OnnxClassifier.load(folder, threads=1).predict_proba(["who wrote hamlet ?"])
    side["label_names"] = [f"class {i}" for i in range(len(side["label_names"]))]
    (folder / "onnx.json").write_text(json.dumps(side))
    assert OnnxClassifier.load(folder, verify=False).label_names[0] == "class 0"
    del side["sidecar_sha256"]  # an export made before the field
    (folder / "onnx.json").write_text(json.dumps(side))
    got = OnnxClassifier.load(folder, threads=1).predict_proba(["who wrote hamlet ?"])
    assert np.array_equal(got, expected)


@pytest.mark.parametrize("providers, match", [
    ("CPUExecutionProvider", "'providers' = 'CPUExecutionProvider' is one string, not a list"),
    (["NoSuchProvider"], "'NoSuchProvider' is not an onnxruntime execution provider"),
    ([], "'providers' = \\[\\] names no provider"),
    ([3], "entry 3 must be a provider name"),
])
def test_bad_providers_are_config_errors_naming_the_available_ones(small_export, providers, match):
    with pytest.raises(ConfigError, match=match) as err:
        OnnxClassifier.load(small_export[1], providers=providers)
    assert "available here: " in str(err.value) and "CPUExecutionProvider" in str(err.value)
    # A list of preferences runs on the first one available (the CPU here, at worst).
    clf = OnnxClassifier.load(small_export[1], threads=1,
                              providers=["CUDAExecutionProvider", ("CPUExecutionProvider", {})])
    assert clf.predict_proba(["who wrote hamlet ?"]).shape == (1, 6)


@pytest.mark.parametrize("folder", [None, "", 3])
def test_a_folder_that_is_not_a_path_is_a_config_error(folder):
    with pytest.raises(ConfigError, match="parameter 'folder' = .* must be a file or folder path"):
        OnnxClassifier.load(folder)


@pytest.mark.parametrize("name", ["model.onnx", "onnx.json", "tokenizer.json"])
def test_a_folder_in_the_way_stops_the_export_before_it_writes(small_export, tmp_path, capsys, name):
    from textcls.cli import main

    out = tmp_path / "out"
    (out / name).mkdir(parents=True)
    with pytest.raises(SystemExit) as done:
        main(["export", str(small_export[0]), "--output", str(out)])
    err = capsys.readouterr().err
    assert done.value.code == 2 and len(err.strip().split("\n")) == 1, err
    assert err.startswith(f"error: output {out} holds a folder named {name}, where the export writes its {name} "
                          "file; remove that folder or choose another output folder"), err
    assert [p.name for p in out.iterdir()] == [name]  # nothing written beside it


@pytest.mark.parametrize("output", ["loop", "loop/sub"])
def test_an_output_through_a_symlink_loop_is_one_line_before_any_work(small_export, tmp_path, capsys, output):
    """The check that the output is not the run folder compares os.path.realpath: Python 3.11's
    Path.resolve raised a RuntimeError (a traceback, exit 1) on a loop."""
    from textcls.cli import main

    (tmp_path / "loop").symlink_to(tmp_path / "back")
    (tmp_path / "back").symlink_to(tmp_path / "loop")
    with pytest.raises(SystemExit) as done:
        main(["export", str(small_export[0]), "--output", str(tmp_path / output)])
    err = capsys.readouterr().err
    assert done.value.code == 2 and err == (f"error: output {tmp_path / output}: leads through a symlink loop (links "
                                            "that point at each other); remove or fix the link, or name another "
                                            "folder\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["back", "loop"] and (tmp_path / "loop").is_symlink()


def test_an_output_that_is_a_dangling_symlink_gets_its_target_made(small_export, tmp_path):
    """Followed, as atomic_write_bytes follows a link to a missing file: mkdir on the link itself
    failed with 'File exists', read as a file where a folder is needed."""
    (tmp_path / "link").symlink_to(tmp_path / "made" / "here")
    assert export_onnx(small_export[0], tmp_path / "link") == tmp_path / "link" / "model.onnx"
    assert (tmp_path / "link").is_symlink()
    assert sorted(p.name for p in (tmp_path / "made" / "here").iterdir()) == ["model.onnx", "onnx.json",
                                                                              "tokenizer.json"]
    assert OnnxClassifier.load(tmp_path / "link").predict(["who wrote hamlet ?"]).shape == (1,)


@pytest.mark.parametrize("where", ["trace", "write", "rename"])
def test_a_full_disk_is_reported_as_such_and_writes_nothing(small_export, tmp_path, monkeypatch, where):
    from textcls import export

    run, out = small_export[0], tmp_path / "out"
    export_onnx(run, out)
    side = json.loads((out / "onnx.json").read_text())
    side["textcls_version"] = "an older export"  # to tell whether the old onnx.json is still there
    (out / "onnx.json").write_text(json.dumps(side))
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def full(path=None, *args, **kwargs):  # an OSError naming the file, as the OS's does
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path or out / "staged" / "fp32.onnx"))

    if where == "trace":  # what a full disk does to torch.onnx.export's write of the graph (in the staging folder)
        monkeypatch.setattr(export, "_trace", lambda *args: full(out / ".saving.x.tmp" / ".build-y" / "fp32.onnx"))
    elif where == "write":  # the last file of the export: the others are written by then
        write = artifacts.atomic_write_bytes
        monkeypatch.setattr(artifacts, "atomic_write_bytes",
                            lambda path, data: full(path) if Path(path).name == "onnx.json" else write(path, data))
    else:  # the moves into the folder: the second fails (an I/O error in place of ENOSPC would read alike)
        replace, moves = os.replace, []

        def failing_replace(source, target):
            if Path(target).parent == out:  # staged_run's moves (atomic writes rename into the staging folder)
                moves.append(target)
                if len(moves) == 2:
                    full(target)
            replace(source, target)

        monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(RunFolderError) as err:
        export_onnx(run, out)
    assert str(err.value).startswith(f"{out}: cannot write the ONNX export ({os.strerror(errno.ENOSPC)}")
    assert "free some disk space or choose another output folder; " in str(err.value)
    if where == "rename":
        assert str(err.value).endswith("the folder may hold part of the new export beside the old one; export again")  # one file was moved in before the failure: that one is new, onnx.json is the old one
        assert sorted(p.name for p in out.iterdir()) == sorted(before)
        assert (out / "onnx.json").read_bytes() == before["onnx.json"]
        return
    assert str(err.value).endswith("; nothing was written")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # the old export, no staging folder
    with pytest.raises(RunFolderError):
        export_onnx(run, tmp_path / "new" / "onnx")
    assert not (tmp_path / "new").exists()  # the folders it made are removed
