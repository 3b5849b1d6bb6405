"""Export a trained run to ONNX: ``export_onnx(run_dir, out_dir)``.

The output folder holds what ``onnx_predictor.OnnxClassifier`` (or any ONNX runtime) needs,
and nothing that runs Python code on load:

```
model.onnx      the network with its final activation: inputs named as the batch keys
                (input_ids, mask[, bigram_ids, bigram_mask][, task_ids] or input_ids,
                word_mask, sentence_mask), output ``probabilities`` [B, C] float32
                (softmax, or a sigmoid per class for multi-label runs)
onnx.json       input names, dtypes and axes, label names, the text-pipeline settings,
                the textcls version and the SHA-256 of model.onnx and tokenizer.json
                (and of its own other fields: sidecar_sha256)
tokenizer.json  a copy of the run's vocabulary and normaliser
```

Batch and length axes are dynamic (and the sentence axes of hierarchical models). The graph
is traced with PyTorch's TorchScript-based exporter (``torch.onnx.export(dynamo=False)``) first
(an earlier attempt found the dynamo exporter failing on DASA and HAN); only when its graph does
not pass the check below is ``torch.export`` (``dynamo=True``) tried, which is what the
Transformer encoder needs. A trace freezes Python-level branches, so every export is checked
before it is written: the ONNX graph and PyTorch must agree (max absolute difference of the
probabilities at most ``1e-4``) on padded batches of several shapes, down to a one-token
document. ``quantize="int8"`` then applies onnxruntime's dynamic quantisation (int8 weights of
MatMul, Gemm, Gather (the embedding tables), Conv and LSTM; activations quantised on the fly).

Classic runs (``kind == "classic"``: ``tfidf-lr``, ``tfidf-nb``, ``static-lr``, ``minilm-encoder-lr``) are not
exported. The TF-IDF ones: their
scikit-learn tokeniser (``(?u)\\b\\w+\\b`` over Unicode) has no exact ONNX counterpart (the
onnxruntime tokeniser's RE2 ``\\b`` is ASCII-only), and a model that silently tokenises
differently is worse than none (static-lr's and minilm-encoder-lr's WordPiece tokeniser is not wired to an
ONNX tokeniser either). They predict from their stored arrays through
``Classifier.from_pretrained(run).predict_proba``.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import logging
import math
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from . import __version__, artifacts
from .errors import ConfigError, ModelError, RunFolderError
from .numpy_forward import reads_as_kims_code
from .onnx_predictor import ONNX_FILE, OUTPUT_NAME, SIDECAR_FILE, SIDECAR_FORMAT, read_sidecar, sidecar_checksum
from .validate import check_folder_path, check_path

QUANTIZE_CHOICES = (None, "int8")
# TorchScript tracing first (it exported every family but the Transformer encoder, whose
# nn.MultiheadAttention reshapes it bakes to the traced length), then torch.export.
EXPORTERS = ("legacy", "dynamo")
# The exported graph must reproduce PyTorch within this (absolute, on probabilities) on the
# verification batches, or nothing is written. The tests hold it to 1e-5 on real texts.
VERIFY_TOLERANCE = 1e-4
MIN_OPSET, MAX_OPSET = 14, 21

FLAT_INPUTS = ("input_ids", "mask", "bigram_ids", "bigram_mask", "task_ids")
HIERARCHICAL_INPUTS = ("input_ids", "word_mask", "sentence_mask", "task_ids")
DYNAMIC_AXES = {
    "flat": {"input_ids": {0: "batch", 1: "length"}, "mask": {0: "batch", 1: "length"},
             "bigram_ids": {0: "batch", 1: "bigram_length"}, "bigram_mask": {0: "batch", 1: "bigram_length"},
             "task_ids": {0: "batch"}},
    "hierarchical": {"input_ids": {0: "batch", 1: "sentences", 2: "words"},
                     "word_mask": {0: "batch", 1: "sentences", 2: "words"},
                     "sentence_mask": {0: "batch", 1: "sentences"}, "task_ids": {0: "batch"}},
}
INPUT_DTYPES = {"input_ids": "int64", "bigram_ids": "int64", "task_ids": "int64",
                "mask": "bool", "bigram_mask": "bool", "word_mask": "bool", "sentence_mask": "bool"}
# The files of an export folder, in the order they are moved in: onnx.json, which holds the
# others' checksums, last.
OUTPUT_FILES = (artifacts.TOKENIZER, ONNX_FILE, SIDECAR_FILE)
# OS errors that say the output folder cannot be written (full, no permission, read-only, a
# failing disk), not that the exporter failed: reported as such, not as a model to report.
DISK_ERRNOS = frozenset(n for n in (getattr(errno, name, None) for name in
                                    ("ENOSPC", "EDQUOT", "EACCES", "EPERM", "EROFS", "EIO", "EFBIG"))
                        if n is not None)

__all__ = ["export_onnx", "read_sidecar", "ONNX_FILE", "SIDECAR_FILE", "OUTPUT_NAME"]


def export_onnx(run_dir: str | Path, out_path: str | Path, *, quantize: str | None = None,
                opset: int = 17) -> Path:
    """Export the run in ``run_dir`` to the folder ``out_path``; returns the path of model.onnx.

    ``out_path`` is a folder (created if needed; a symlink to a missing one gets its target made)
    that receives ``model.onnx``, ``onnx.json`` and a copy of ``tokenizer.json``.
    ``quantize="int8"``: onnxruntime's dynamic int8 quantisation
    of the weights (smaller file, slightly different probabilities). ``opset``: the ONNX opset
    (14-21; 17 by default). A run saved after ``Classifier.quantize("int8")`` (``"quantize":
    "int8"`` in its config.json) is exported int8 whatever ``quantize`` says.
    """
    run_dir, out_dir = check_path("run_dir", run_dir), check_path("out_path", out_path)
    if quantize not in QUANTIZE_CHOICES:
        raise ConfigError(f"parameter 'quantize' = {quantize!r} is not one of none, int8")
    if isinstance(opset, bool) or not isinstance(opset, int) or not MIN_OPSET <= opset <= MAX_OPSET:
        raise ConfigError(f"parameter 'opset' = {opset!r} is outside its allowed range [{MIN_OPSET}, {MAX_OPSET}]")
    if out_dir.suffix == ".onnx":
        raise ConfigError(f"output {out_dir} names a file; pass a folder (it receives {ONNX_FILE}, "
                          f"{SIDECAR_FILE} and tokenizer.json)")
    check_folder_path("output", out_dir)
    _check_targets(out_dir)
    if _real(out_dir) == _real(run_dir):
        raise ConfigError(f"output {out_dir} is the run folder itself; pass another folder")
    if artifacts.is_saved_run(out_dir):
        # Its tokenizer.json would be replaced by this run's: that run would then read texts with the
        # wrong vocabulary, and no check would see it. A subfolder of a run (RUN/onnx) stays allowed.
        raise ConfigError(f"output {out_dir} holds a saved run ({out_dir / artifacts.CONFIG}), whose "
                          f"{artifacts.TOKENIZER} the export would replace; export into a new or empty folder")
    config = artifacts.read_config(run_dir)
    if config.get("kind") == "classic":
        raise ConfigError(
            f"model '{config.get('model')}' is a classic model (scikit-learn over TF-IDF, static vectors or a frozen "
            "encoder), which "
            "is not exported to ONNX (its tokeniser has no exact ONNX counterpart here); predict with textcls predict "
            "or the Python API: textcls.Classifier.from_pretrained(run).predict_proba(texts)")
    if config.get("kind") == "ensemble":
        raise ConfigError(
            f"model '{config.get('model')}' is an ensemble, which is not exported to ONNX (its TF-IDF members "
            "have no exact ONNX tokeniser); predict with textcls predict or the Python API, or export a neural preset")
    kim_code = reads_as_kims_code(config.get("arch", {}))
    if kim_code:
        raise ConfigError(
            f"run {run_dir} reads its data as Kim's released code does ({kim_code}), a diagnostic that is not "
            "exported to ONNX; predict with textcls predict or the Python API")
    _require_onnx()

    from .api import Classifier

    clf = Classifier.from_pretrained(run_dir)
    if config.get("quantize"):
        # An int8 run (Classifier.quantize) stores float weights: trace those (torch.ao's packed
        # modules have no ONNX form) and quantise the graph with onnxruntime instead.
        clf.dequantize()
        quantize = quantize or config["quantize"]
    return _export(clf, config, out_dir, quantize=quantize, opset=opset, run_dir=run_dir)


# --------------------------------------------------------------------------- internals


def _check_targets(out_dir: Path) -> None:
    """Refuse, before any work, an output folder that holds a folder where a file of the export
    goes (the renames at the end would fail after the files before it were moved in)."""
    for name in OUTPUT_FILES:
        if (out_dir / name).is_dir():
            raise ConfigError(f"output {out_dir} holds a folder named {name}, where the export writes its {name} "
                              "file; remove that folder or choose another output folder")


def _disk_error(exc: BaseException) -> OSError | None:
    """The OSError of ``DISK_ERRNOS`` that ``exc`` is or was explicitly raised from (``raise ...
    from``: an exporter may wrap it). Not an error merely raised while one was being handled
    (``__context__``): a library probing a cache folder or /sys could then turn an exporter's
    own failure into a 'Permission denied'."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in DISK_ERRNOS:
            return exc
        exc = exc.__cause__
    return None


def _write_error(exc: OSError, out_dir: Path) -> RunFolderError:
    """One line for an export that the file system refused: where, the OS's reason, what to do."""
    where, named = out_dir, exc.filename2 or exc.filename
    if isinstance(named, (str, os.PathLike)) and _real(out_dir) not in _real(named).parents:
        where = Path(named)  # outside the output folder (onnxruntime's quantiser writes to the temp folder)
    reason = exc.strerror or str(exc) or type(exc).__name__
    if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        existing = next((p for p in (where, *where.parents) if p.exists()), None)
        with contextlib.suppress(OSError, TypeError):
            reason += f", {shutil.disk_usage(existing).free / 1024:.0f} KiB free there"
        fix = "free some disk space or choose another output folder"
    elif exc.errno in (errno.EACCES, errno.EPERM):
        fix = "check the folder's permissions or choose another output folder"
    elif exc.errno == errno.EROFS:
        fix = "the file system is read-only; choose another output folder"
    else:
        fix = "check the disk or choose another output folder"
    # A file named right in the folder failed as it was moved in (staged_run): some were by then.
    moved = isinstance(named, (str, os.PathLike)) and _real(named).parent == _real(out_dir)
    done = "the folder may hold part of the new export beside the old one; export again" if moved else \
        "nothing was written"
    return RunFolderError(f"{where}: cannot write the ONNX export ({reason}); {fix}; {done}")


def _real(path) -> Path:
    """The path with its symlinks followed; not Path.resolve(), whose 3.11 raises on a loop."""
    return Path(os.path.realpath(path))


def _require_onnx() -> None:
    missing = []
    for module in ("onnx", "onnxruntime"):
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    if missing:
        raise ConfigError(f"ONNX export needs {' and '.join(missing)}; install them with "
                          "pip install 'textcls[export]'")


def _min_length(model) -> int:
    """Shortest flat length the traced graph handles without a Python branch.

    Kim's CNN and SingleCNN pad a document shorter than their widest window in Python
    (``if words.size(1) < window``), which a trace freezes; the wrapper pads every batch with
    ``width - 1`` masked columns instead, which gives the same logits (padding is masked)."""
    from .models.kim_cnn import KimCNN
    from .models.spe_cnn import SpeCNN

    if isinstance(model, KimCNN):
        return max(int(w) for w in model.windows)
    if isinstance(model, SpeCNN):
        return int(model.window)
    return 1


def _dense_bag_sum(table, ids, mask):
    """fasttext_bag._bag_sum without ``F.embedding_bag``, which the ONNX exporter refuses with a
    ``padding_idx``: a row lookup (ONNX Gather) summed over the real positions. The same sums
    (real tokens never have the PAD id), up to float rounding of the summation order."""
    import torch

    mask = mask.bool()
    rows = torch.nn.functional.embedding(ids, table.weight) * mask.unsqueeze(-1).to(table.weight.dtype)
    return rows.sum(dim=1), mask.sum(dim=1)


def _warm_position_tables(model, longest: int) -> None:
    """Grow a position table that is a Python-side cache (SingleCNN-SPE's ``positions``) to the
    longest input the graph must take: a trace bakes the cache in as a constant."""
    for module in model.modules():
        if (getattr(module, "position_encoding", False) is True and hasattr(module, "_position_cache")
                and callable(getattr(module, "positions", None))):
            module.positions(longest)


@contextlib.contextmanager
def _traceable(model):
    """Swap what the ONNX exporter cannot take for equivalents while tracing: fastText's
    ``embedding_bag`` (see ``_dense_bag_sum``) and PyTorch's fused Transformer-encoder kernel
    (its eval-mode fast path, ``aten::_transformer_encoder_layer_fwd``, has no ONNX form; the
    unfused layers compute the same); and turn attention maps off (prediction never returns them)."""
    import torch

    from .models import fasttext_bag

    switch = getattr(model, "attention_maps", None)
    saved = getattr(fasttext_bag, "_bag_sum", None)  # if it is renamed, the verification says so
    fastpath = torch.backends.mha.get_fastpath_enabled()
    if saved is not None:
        fasttext_bag._bag_sum = _dense_bag_sum
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        with switch(False) if callable(switch) else contextlib.nullcontext():
            yield
    finally:
        if saved is not None:
            fasttext_bag._bag_sum = saved
        torch.backends.mha.set_fastpath_enabled(fastpath)


def _wrapper(model, names: tuple[str, ...], multi_label: bool, extra_columns: int):
    import torch
    import torch.nn.functional as F

    class Exportable(torch.nn.Module):
        """``forward(*inputs) -> probabilities``: the batch dict rebuilt from positional inputs."""

        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, *inputs):
            batch = dict(zip(names, inputs))
            if extra_columns:
                batch["input_ids"] = F.pad(batch["input_ids"], (0, extra_columns))
                batch["mask"] = F.pad(batch["mask"], (0, extra_columns))
            logits = self.model(batch).logits.float()
            return torch.sigmoid(logits) if multi_label else torch.softmax(logits, dim=-1)

    return Exportable().eval()


def _example_docs(rng: np.random.Generator, vocab_size: int, lengths: list[int]) -> list[list[int]]:
    high = max(vocab_size, 3)
    return [rng.integers(2, high, size=n).tolist() if vocab_size > 2 else [1] * n for n in lengths]


def _batches(pipeline, shape: str, num_tasks: int, vocab_size: int) -> list[list]:
    """Token-id documents for tracing (the first) and verification (all): padded batches of
    several shapes, down to a single one-token document."""
    rng = np.random.default_rng(0)
    if shape == "hierarchical":
        words = pipeline.max_sentence_length or 40
        sentences = pipeline.max_sentences or 12
        # Each document is a list of sentence lengths.
        plans = [
            [[7, 3, 9], [5], [2, 11, 4, 6]],
            [[1]],
            [[1], [30, 2], [3] * 15, [4, 4]],
        ]
        return [[_example_docs(rng, vocab_size, [min(words, w) for w in doc[:sentences]]) for doc in plan]
                for plan in plans]
    cap = pipeline.max_length or 1000
    plans = [[37, 12, 25], [1], [1, 2, 5, 80, 3], [200, 7]]
    return [_example_docs(rng, vocab_size, [max(1, min(cap, n)) for n in plan]) for plan in plans]


def _collate(docs: list, shape: str, bigram_buckets: int, num_tasks: int) -> dict[str, np.ndarray]:
    from .onnx_predictor import collate_flat, collate_hierarchical
    from .text.pipeline import hash_bigrams

    if shape == "hierarchical":
        batch = collate_hierarchical(docs)
    else:
        bigrams = hash_bigrams(docs, bigram_buckets) if bigram_buckets else None
        batch = collate_flat(docs, bigrams)
    if num_tasks > 1:
        batch["task_ids"] = np.arange(len(docs), dtype=np.int64) % num_tasks
    return batch


def _onnx_session(path: Path):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 4  # a failing verification run is reported by the exception, not on stderr
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _export(clf, config: dict, out_dir: Path, *, quantize, opset: int, run_dir: Path) -> Path:
    import torch

    model = clf.model_.cpu().eval()
    shape = clf.preset_.inputs.get("shape", "flat")
    pipeline = clf.pipeline_
    multi_label = bool(clf.multi_label_)
    num_tasks = int(clf.preset_.arch.get("num_tasks", 1) or 1) if clf.uses_tasks else 1
    bigram_buckets = int(pipeline.bigram_buckets or 0) if shape == "flat" else 0
    names = _input_names(shape, bigram_buckets, num_tasks)
    extra = _min_length(model) - 1 if shape == "flat" else 0

    # The longest flat input: max_length (8,192 without one; the graph then refuses longer
    # inputs loudly, with a shape error), the [END] the pipeline may add after the cut, and the
    # wrapper's extra columns.
    longest = (pipeline.max_length or 8192) + int(pipeline.end_token) + extra
    _warm_position_tables(model, longest if shape == "flat" else 8192)
    doc_batches = _batches(pipeline, shape, num_tasks, pipeline.vocab_size)
    batches = [_collate(docs, shape, bigram_buckets, num_tasks) for docs in doc_batches]
    wrapper = _wrapper(model, names, multi_label, extra)

    def torch_inputs(batch):
        return tuple(torch.from_numpy(batch[name]) for name in names)

    # The reference is the model as it predicts in PyTorch (its own forward, maps off).
    switch = getattr(model, "attention_maps", None)
    with torch.no_grad(), switch(False) if callable(switch) else contextlib.nullcontext():
        expected = [wrapper(*torch_inputs(b)).numpy() for b in batches]

    # Everything is written into a folder inside out_dir and moved up at the end (renames, which
    # need no space), onnx.json last: a failure (a full disk) leaves out_dir as it was, and a
    # folder this call made is removed.
    tokenizer_bytes = (run_dir / artifacts.TOKENIZER).read_bytes()
    try:
        with artifacts.staged_run(out_dir, last=SIDECAR_FILE) as staging:
            with tempfile.TemporaryDirectory(dir=staging, prefix=".build-") as tmp:
                built = _build(clf, Path(tmp), wrapper, model, batches, expected, names, shape, opset, quantize,
                               torch_inputs)
            sidecar = _sidecar(clf, config, built, names, tokenizer_bytes, quantize=quantize, num_tasks=num_tasks)
            contents = {artifacts.TOKENIZER: tokenizer_bytes, ONNX_FILE: built["data"],
                        SIDECAR_FILE: (json.dumps(sidecar, indent=2) + "\n").encode("utf-8")}
            for name in OUTPUT_FILES:
                artifacts.atomic_write_bytes(staging / name, contents[name])
    except Exception as exc:
        disk = _disk_error(exc)
        if disk is None:
            raise
        raise _write_error(disk, out_dir) from exc
    return out_dir / ONNX_FILE


def _input_names(shape: str, bigram_buckets: int, num_tasks: int) -> tuple[str, ...]:
    """The graph's inputs: the batch keys of the shape, without bigrams or task ids when unused."""
    names = list(HIERARCHICAL_INPUTS if shape == "hierarchical" else FLAT_INPUTS)
    if not bigram_buckets:
        names = [n for n in names if not n.startswith("bigram")]
    if num_tasks == 1:
        names.remove("task_ids")
    return tuple(names)


def _sidecar(clf, config: dict, built: dict, names, tokenizer_bytes: bytes, *, quantize, num_tasks: int) -> dict:
    """onnx.json: what a runtime needs besides the graph (inputs, labels, pipeline settings,
    checksums) and how the export was made and verified."""
    import onnx
    import torch

    data, method, failures = built["data"], built["method"], built["failures"]
    shape = clf.preset_.inputs.get("shape", "flat")
    multi_label = bool(clf.multi_label_)
    sidecar = {
        "format": SIDECAR_FORMAT,
        "textcls_version": __version__,
        "model": clf.model,
        "family": clf.preset_.family,
        "shape": shape,
        "inputs": [{"name": n, "dtype": INPUT_DTYPES[n], "axes": [DYNAMIC_AXES[shape][n].get(i, "?")
                                                                   for i in range(len(DYNAMIC_AXES[shape][n]))]}
                   for n in names if n in built["graph_inputs"]],
        "output": {"name": OUTPUT_NAME, "dtype": "float32", "axes": ["batch", "classes"],
                   "activation": "sigmoid" if multi_label else "softmax"},
        "label_names": [str(c) for c in clf.classes_],
        "label_values": config.get("label_values", config["label_names"]),
        "multi_label": multi_label,
        "threshold": clf.threshold_ if multi_label else None,
        "task_names": clf.task_names_ if num_tasks > 1 else None,
        "pipeline": clf.pipeline_.settings(),
        "pad_id": 0,
        "batch_size": max(256, int(clf.preset_.recipe.batch_size)),
        "opset": built["opset"],
        "quantize": quantize,
        "onnx_sha256": artifacts.sha256_bytes(data),
        "onnx_bytes": len(data),
        "fp32_onnx_bytes": built["fp32_bytes"],
        "tokenizer_sha256": artifacts.sha256_bytes(tokenizer_bytes),
        "weights_sha256": config.get("weights_sha256"),
        "verified_max_abs_diff": built["max_diff"],
        "int8_max_abs_diff": built["int8_diff"],
        "precision_note": ("the run predicts under bf16 autocast in PyTorch; the ONNX graph computes in fp32"
                           if clf.preset_.recipe.precision == "bf16" else None),
        "exporter": {"torch": torch.__version__, "onnx": onnx.__version__,
                     "method": f"torch.onnx.export(dynamo={method == 'dynamo'})",
                     **({"legacy_failure": failures[0]} if failures else {})},
    }
    # onnx.json's own checksum (over its other fields), checked by OnnxClassifier.load: an edit
    # that leaves every field plausible (other label names or pipeline settings) is caught too.
    # Exports made before it have no such field and load as before.
    sidecar["sidecar_sha256"] = sidecar_checksum(sidecar)
    return sidecar


def _max_diff(session, names, batches, expected) -> float:
    feeds_names = {i.name for i in session.get_inputs()}
    worst = 0.0
    for batch, want in zip(batches, expected):
        got = session.run([OUTPUT_NAME], {n: batch[n] for n in names if n in feeds_names})[0]
        if got.shape != want.shape or not np.isfinite(got).all():
            return math.inf
        worst = max(worst, float(np.abs(got.astype(np.float64) - want).max()))
    return worst


def _build(clf, tmp: Path, wrapper, model, batches, expected, names, shape, opset, quantize,
           torch_inputs) -> dict:
    """Trace (TorchScript, then torch.export), check, quantise, in the temporary folder ``tmp``;
    returns the final graph's bytes (``data``) and what the sidecar records. An OS error that
    says the folder cannot be written (``DISK_ERRNOS``) is raised as it is, not taken for an
    exporter's failure."""
    import onnx

    fp32_path = tmp / "fp32.onnx"
    failures = []
    for method in EXPORTERS:
        try:
            _trace(method, wrapper, model, torch_inputs(batches[0]), fp32_path, names, shape, opset)
            onnx.checker.check_model(str(fp32_path))
            max_diff = _verify(fp32_path, names, batches, expected)
            break
        except Exception as exc:  # the exporters and onnxruntime raise many types
            if _disk_error(exc) is not None:
                raise
            failures.append(f"{method}: {_first_line(exc)}")
    else:
        raise ModelError(f"model '{clf.model}' (family {clf.preset_.family}) could not be exported to ONNX "
                         f"({'; '.join(failures)}); nothing was written, report it")
    final_path, int8_diff = fp32_path, None
    if quantize == "int8":
        final_path = tmp / "int8.onnx"
        _quantize_int8(fp32_path, final_path)
        try:
            int8_diff = _max_diff(_onnx_session(final_path), names, batches, expected)
        except Exception as exc:  # onnxruntime's own exception types
            if _disk_error(exc) is not None:
                raise
            raise ModelError(f"the int8 graph of model '{clf.model}' does not run ({_first_line(exc)}); "
                             "export without quantize") from exc
    data = final_path.read_bytes()
    graph = onnx.load_model_from_string(data)
    return {
        "data": data, "method": method, "failures": failures, "max_diff": max_diff, "int8_diff": int8_diff,
        "fp32_bytes": fp32_path.stat().st_size,
        "graph_inputs": [i.name for i in graph.graph.input],
        "opset": next((o.version for o in graph.opset_import if o.domain in ("", "ai.onnx")), opset),
    }


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


def _verify(path: Path, names, batches, expected) -> float:
    """Max |ONNX - PyTorch| over the verification batches; ModelError above VERIFY_TOLERANCE."""
    worst = _max_diff(_onnx_session(path), names, batches, expected)
    if not worst <= VERIFY_TOLERANCE:
        raise ModelError(f"the graph differs from PyTorch by {worst:.3g} (> {VERIFY_TOLERANCE:g}) on padded "
                         "test batches of other shapes (a frozen shape-dependent branch)")
    return worst


def _trace(method: str, wrapper, model, inputs: tuple, path: Path, names: tuple, shape: str, opset: int) -> None:
    import warnings

    import torch

    with torch.no_grad(), warnings.catch_warnings(), _traceable(model):
        # The tracer warns about every Python-level branch and size check; the verification
        # is what tells whether a frozen branch matters.
        warnings.simplefilter("ignore")
        if method == "legacy":
            axes = {name: DYNAMIC_AXES[shape][name] for name in names}
            axes[OUTPUT_NAME] = {0: "batch"}
            torch.onnx.export(wrapper, inputs, str(path), dynamo=False, input_names=list(names),
                              output_names=[OUTPUT_NAME], dynamic_axes=axes, opset_version=opset,
                              do_constant_folding=True)
            return
        dims: dict[str, object] = {}
        specs = tuple({axis: dims.setdefault(label, torch.export.Dim.DYNAMIC)
                       for axis, label in DYNAMIC_AXES[shape][name].items()} for name in names)
        # torch.export prints its progress and warns about torchvision; keep stdout for the caller.
        onnx_logger = logging.getLogger("torch.onnx")
        level = onnx_logger.level
        onnx_logger.setLevel(logging.ERROR)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                program = torch.onnx.export(wrapper, inputs, None, dynamo=True, input_names=list(names),
                                            output_names=[OUTPUT_NAME], dynamic_shapes={"inputs": specs},
                                            opset_version=max(opset, 18), verbose=False)
        finally:
            onnx_logger.setLevel(level)
        program.save(str(path), external_data=False)


def _quantize_int8(source: Path, target: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    class _NoPreprocessingAdvice(logging.Filter):
        # onnxruntime advises its shape-inference pre-pass on the root logger; that pass
        # fails on these graphs ("Incomplete symbolic shape inference") and is not needed.
        def filter(self, record):
            return "pre-processing before quantization" not in record.getMessage()

    quiet = _NoPreprocessingAdvice()
    logging.getLogger().addFilter(quiet)
    try:
        # Per-channel weight scales (the usual choice for accuracy), at the same size. On the test
        # models either setting flips only near-ties (fp32 margins ~1e-3): fastText 1 text in 59
        # per channel against 2 per tensor, DASA 1 against 0.
        # reduce_range (7-bit weights): onnxruntime's u8 x s8 integer kernels saturate on x86
        # CPUs without VNNI (its documentation's advice). On a 2-core AMD EPYC (Zen 3: AVX2, no
        # AVX-512 or VNNI) 8-bit weights moved test_export's probabilities by up to 0.17 (fastText,
        # DASA, BiLSTM); a graph is quantised once and run on whatever CPU its user has.
        quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8, per_channel=True, reduce_range=True,
                         op_types_to_quantize=["MatMul", "Gemm", "Gather", "Conv", "LSTM"],
                         extra_options={"MatMulConstBOnly": True})
    except Exception as exc:  # onnxruntime.quantization raises many types
        if _disk_error(exc) is not None:
            raise
        raise ModelError(f"int8 quantisation failed ({_first_line(exc)}); export without quantize") from exc
    finally:
        logging.getLogger().removeFilter(quiet)
