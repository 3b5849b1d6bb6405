"""``OnnxClassifier``: predict with an exported run, without PyTorch.

    >>> clf = OnnxClassifier.load("exported/")      # model.onnx, onnx.json, tokenizer.json
    >>> clf.predict_proba(["what is the capital of peru ?"])
    >>> clf.predict(["what is the capital of peru ?"])

Texts go through the very preprocessing the run was trained with: the saved ``tokenizer.json``
(Hugging Face ``tokenizers``, in Rust: normaliser, pre-tokeniser, WordLevel vocabulary) via
``text.pipeline.TextPipeline``, which also applies ``max_length`` truncation, hashed bigrams and
sentence splitting (with the 20 Newsgroups stripping when the run used it). Documents are sorted
by length into sub-batches, padded with numpy exactly as ``data.batching`` pads them (id 0,
boolean masks, every axis at least 1), run through onnxruntime, and put back in input order.

This module imports neither torch nor the model code: ``import textcls.onnx_predictor`` loads
numpy, ``tokenizers`` and onnxruntime (on first use) only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import numpy as np

from .artifacts import sha256_file
from .data.padding import EVAL_MAX_PIECES, sorted_batches
from .errors import CheckpointError, ConfigError
from .inputs import as_list, check_finite_probabilities, check_texts, task_indices

ONNX_FILE = "model.onnx"
SIDECAR_FILE = "onnx.json"
TOKENIZER_FILE = "tokenizer.json"
SIDECAR_FORMAT = "textcls.onnx/1"
OUTPUT_NAME = "probabilities"

__all__ = ["OnnxClassifier", "collate_flat", "collate_hierarchical", "read_sidecar"]


# --------------------------------------------------------------------------- batches (numpy)


def _pad_rows(rows: Sequence[Sequence[int]], pad_id: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ids -> ``([N, L] int64, [N, L] bool)`` with ``L = max(1, longest)`` (data.batching's rule)."""
    lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
    width = max(1, int(lengths.max()) if len(rows) else 1)
    out = np.full((len(rows), width), pad_id, dtype=np.int64)
    for i, row in enumerate(rows):
        out[i, : len(row)] = row
    mask = np.arange(width)[None, :] < lengths[:, None]
    return out, mask


def collate_flat(docs: Sequence[Sequence[int]], bigrams: Sequence[Sequence[int]] | None = None,
                 pad_id: int = 0) -> dict[str, np.ndarray]:
    """``input_ids [B,L]``, ``mask [B,L]`` (+ ``bigram_ids``, ``bigram_mask``), as data.batching.collate_flat."""
    input_ids, mask = _pad_rows(docs, pad_id)
    batch = {"input_ids": input_ids, "mask": mask}
    if bigrams is not None:
        batch["bigram_ids"], batch["bigram_mask"] = _pad_rows(bigrams, pad_id)
    return batch


def collate_hierarchical(docs: Sequence[Sequence[Sequence[int]]], pad_id: int = 0) -> dict[str, np.ndarray]:
    """``input_ids [B,S,W]``, ``word_mask [B,S,W]``, ``sentence_mask [B,S]``, as data.batching.collate_hierarchical."""
    n_sent = max(1, max((len(d) for d in docs), default=0))
    word_lengths = np.zeros((len(docs), n_sent), dtype=np.int64)
    for i, doc in enumerate(docs):
        for j, sentence in enumerate(doc):
            word_lengths[i, j] = len(sentence)
    n_word = max(1, int(word_lengths.max()) if word_lengths.size else 1)
    input_ids = np.full((len(docs), n_sent, n_word), pad_id, dtype=np.int64)
    for i, doc in enumerate(docs):
        for j, sentence in enumerate(doc):
            input_ids[i, j, : len(sentence)] = sentence
    word_mask = np.arange(n_word) < word_lengths[..., None]
    return {"input_ids": input_ids, "word_mask": word_mask, "sentence_mask": word_lengths > 0}


# --------------------------------------------------------------------------- folder


def read_sidecar(folder: str | Path) -> dict:
    """The ``onnx.json`` of an export folder (CheckpointError when missing or not ours)."""
    path = Path(folder) / SIDECAR_FILE
    if not path.is_file():
        raise CheckpointError(f"{path}: file is missing; export the run with textcls.export.export_onnx "
                              "(or textcls export RUN --format onnx) first")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{path}: not valid JSON ({exc}); export the run again")
    if not isinstance(data, dict) or data.get("format") != SIDECAR_FORMAT:
        found = data.get("format") if isinstance(data, dict) else None
        raise CheckpointError(f"{path}: not a textcls ONNX sidecar (format {found!r}, expected "
                              f"{SIDECAR_FORMAT!r}); export the run again")
    return data


def _check_texts(texts, call: str) -> list[str]:
    """A list of non-blank strings, or a DataError naming the offending index (api.py's rules)."""
    return check_texts(as_list(texts, call, "X", "texts"), call)


# --------------------------------------------------------------------------- classifier


class OnnxClassifier:
    """An exported textcls model on onnxruntime. Build it with ``OnnxClassifier.load(folder)``.

    Attributes: ``classes_`` (label values, as the run's ``Classifier.classes_``),
    ``label_names``, ``multi_label``, ``task_names`` (per-task heads, else None), ``sidecar``
    (the parsed onnx.json), ``session`` (the onnxruntime ``InferenceSession``).
    """

    def __init__(self, session, pipeline, sidecar: dict, folder: Path):
        self.session = session
        self.pipeline = pipeline
        self.sidecar = sidecar
        self.folder = folder
        self.shape = sidecar["shape"]
        self.multi_label = bool(sidecar["multi_label"])
        self.label_names = list(sidecar["label_names"])
        self.classes_ = np.array(sidecar.get("label_values") or self.label_names)
        self.task_names = sidecar.get("task_names")
        self.batch_size = int(sidecar.get("batch_size", 256))
        self._feeds = [i.name for i in session.get_inputs()]

    @classmethod
    def load(cls, folder: str | Path, *, threads: int | None = None, providers: Sequence[str] | None = None,
             verify: bool = True) -> "OnnxClassifier":
        """Load an export folder (model.onnx, onnx.json, tokenizer.json).

        ``threads``: onnxruntime's intra-op threads (None: its default). ``providers``:
        onnxruntime execution providers (default CPU). ``verify``: check model.onnx and
        tokenizer.json against the SHA-256 recorded in onnx.json (CheckpointError if changed).
        """
        folder = Path(folder)
        sidecar = read_sidecar(folder)
        onnx_path, tokenizer_path = folder / ONNX_FILE, folder / TOKENIZER_FILE
        for path in (onnx_path, tokenizer_path):
            if not path.is_file():
                raise CheckpointError(f"{path}: file is missing; the export folder is incomplete, export the run again")
        if verify:
            for path, key in ((onnx_path, "onnx_sha256"), (tokenizer_path, "tokenizer_sha256")):
                if sidecar.get(key) is not None and sha256_file(path) != sidecar[key]:
                    raise CheckpointError(f"{path}: its SHA-256 does not match {SIDECAR_FILE}; the file is corrupt "
                                          "or was changed, export the run again")
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 0):
            raise ConfigError(f"parameter 'threads' = {threads!r} must be an integer >= 0 (0: onnxruntime's default)")
        try:
            import onnxruntime as ort
        except ImportError:
            raise ConfigError("OnnxClassifier needs onnxruntime; "
                              "install it with pip install 'textcls[export]'") from None
        from .text.pipeline import TextPipeline

        try:
            pipeline = TextPipeline.load(folder, sidecar["pipeline"])
        except (ConfigError, CheckpointError) as exc:
            raise CheckpointError(f"{tokenizer_path}: {exc}") from None
        options = ort.SessionOptions()
        options.log_severity_level = 3
        if threads is not None:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1 if threads else 0
        try:
            session = ort.InferenceSession(str(onnx_path), options,
                                           providers=list(providers or ["CPUExecutionProvider"]))
        except Exception as exc:  # onnxruntime's own exception types
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise CheckpointError(f"{onnx_path}: onnxruntime cannot load it ({first})") from None
        return cls(session, pipeline, sidecar, folder)

    def __repr__(self) -> str:
        quantized = f", quantize={self.sidecar.get('quantize')!r}" if self.sidecar.get("quantize") else ""
        return f"OnnxClassifier(model={self.sidecar.get('model')!r}, classes={len(self.label_names)}{quantized})"

    # ------------------------------------------------------------------ encoding

    def _task_ids(self, tasks, n: int) -> np.ndarray | None:
        ids = task_indices(tasks, n, self.task_names, self.sidecar.get("model"))
        return None if ids is None else np.array(ids, dtype=np.int64)

    def encode(self, texts: Sequence[str]) -> tuple[list, list | None, np.ndarray]:
        """``(documents, bigrams or None, lengths)``: token ids as the run's pipeline encodes them
        (flat id lists, or lists of sentences), and the length each is sorted by."""
        if self.shape == "hierarchical":
            docs = self.pipeline.encode_sentences(texts).sentences
            lengths = np.fromiter((sum(len(s) for s in d) for d in docs), dtype=np.int64, count=len(docs))
            return docs, None, lengths
        encoded = self.pipeline.encode(texts)
        lengths = np.fromiter((len(d) for d in encoded.ids), dtype=np.int64, count=len(encoded.ids))
        return encoded.ids, encoded.bigrams, lengths

    def batch(self, docs, bigrams=None, task_ids=None) -> dict[str, np.ndarray]:
        """The padded numpy feeds of one sub-batch (only the inputs the graph declares)."""
        if self.shape == "hierarchical":
            batch = collate_hierarchical(docs)
        else:
            batch = collate_flat(docs, bigrams)
        if task_ids is not None:
            batch["task_ids"] = np.asarray(task_ids, dtype=np.int64)
        missing = [name for name in self._feeds if name not in batch]
        if missing:
            raise CheckpointError(f"{self.folder / ONNX_FILE}: the graph needs input '{missing[0]}', which this "
                                  f"model's texts do not give; {SIDECAR_FILE} does not match model.onnx")
        return {name: batch[name] for name in self._feeds}

    # ------------------------------------------------------------------ inference

    def predict_proba(self, X: Sequence[str], tasks: Sequence[str] | None = None, *,
                      batch_size: int | None = None) -> np.ndarray:
        """Class probabilities ``[N, C]`` float32 in ``classes_`` order (a sigmoid per label for
        multi-label). ``X``: a list of non-blank strings; ``tasks``: the task of every text for a
        model with per-task heads. Texts are run in sub-batches of ``batch_size`` sorted by length
        (and of at most ``EVAL_MAX_PIECES`` rows x the longest text's tokens; a hierarchical text's
        tokens are its words, whatever its sentences pad to)."""
        texts = _check_texts(X, "OnnxClassifier.predict_proba(X)")
        task_ids = self._task_ids(tasks, len(texts))
        size = self.batch_size if batch_size is None else batch_size
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ConfigError(f"parameter 'batch_size' = {size!r} must be an integer >= 1")
        out = np.zeros((len(texts), len(self.label_names)), dtype=np.float32)
        if not texts:
            return out
        docs, bigrams, lengths = self.encode(texts)
        for rows in sorted_batches(lengths, size, EVAL_MAX_PIECES):
            feeds = self.batch([docs[i] for i in rows], None if bigrams is None else [bigrams[i] for i in rows],
                               None if task_ids is None else task_ids[rows])
            out[rows] = self.session.run([OUTPUT_NAME], feeds)[0]
        return check_finite_probabilities(out, None, "(training diverged?), export a good run")

    def predict(self, X: Sequence[str], tasks: Sequence[str] | None = None, *, batch_size: int | None = None):
        """Class values (lists of them for multi-label, threshold 0.5), as ``Classifier.predict``."""
        probs = self.predict_proba(X, tasks, batch_size=batch_size)
        if self.multi_label:
            return [list(self.classes_[row >= 0.5]) for row in probs]
        return self.classes_[probs.argmax(axis=1)]
