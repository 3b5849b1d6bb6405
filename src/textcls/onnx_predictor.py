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

from .artifacts import check_threshold, is_sha256, run_threshold, sha256_bytes, sha256_file
from .data.padding import EVAL_MAX_PIECES, sorted_batches
from .errors import CheckpointError, ConfigError
from .inputs import as_list, check_finite_probabilities, check_texts, task_indices
from .validate import MAX_INT, check_int, check_path, is_integer

ONNX_FILE = "model.onnx"
SIDECAR_FILE = "onnx.json"
TOKENIZER_FILE = "tokenizer.json"
SIDECAR_FORMAT = "textcls.onnx/1"
OUTPUT_NAME = "probabilities"
SHAPES = ("flat", "hierarchical")
# The graph inputs each shape feeds (data.batching's batch keys); bigrams and task ids only
# when the pipeline hashes bigrams and the sidecar names tasks.
SHAPE_INPUTS = {"flat": ("input_ids", "mask"), "hierarchical": ("input_ids", "word_mask", "sentence_mask")}
BIGRAM_INPUTS = ("bigram_ids", "bigram_mask")
DEFAULT_PROVIDERS = ("CPUExecutionProvider",)

__all__ = ["OnnxClassifier", "collate_flat", "collate_hierarchical", "read_sidecar", "sidecar_checksum"]


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
    """The ``onnx.json`` of an export folder, with every field ``OnnxClassifier`` reads checked
    (CheckpointError naming the file and the field when it is missing, not ours or damaged)."""
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
    _check_sidecar(path, data)
    return data


def sidecar_checksum(data: dict) -> str:
    """The SHA-256 of a sidecar's fields but ``sidecar_sha256`` (which records it), as canonical
    JSON (sorted keys, no spaces, ASCII): the same for the dict written and the dict read back."""
    body = {key: value for key, value in data.items() if key != "sidecar_sha256"}
    return sha256_bytes(json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii"))


def _is_label_value(value) -> bool:
    return isinstance(value, (str, bool, int, float))


def _check_sidecar(path: Path, data: dict) -> None:
    """A damaged or hand-edited onnx.json fails here, naming the field, and not later as a
    KeyError, a TypeError in the pipeline or a numpy shape error at the first prediction.
    (What needs the graph, the label count and the inputs, is checked by ``OnnxClassifier.load``.)"""
    def corrupt(key: str, should: str) -> CheckpointError:
        shown = f"= {data[key]!r:.60} should be" if key in data else "is missing; it should be"
        return CheckpointError(f"{path}: field {key!r} {shown} {should}; the file is corrupt or was changed, "
                               "export the run again")

    if data.get("shape") not in SHAPES:
        raise corrupt("shape", f"one of {', '.join(SHAPES)}")
    if not isinstance(data.get("multi_label"), bool):
        raise corrupt("multi_label", "true or false")
    names = data.get("label_names")
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise corrupt("label_names", "a non-empty list of class names")
    if len(set(names)) != len(names):
        raise corrupt("label_names", "a list of distinct class names")
    values = data.get("label_values")
    if values is not None and not (isinstance(values, list) and all(map(_is_label_value, values))):
        raise corrupt("label_values", "null or a list of class values (text, numbers or true/false)")
    if values is not None and len(values) != len(names):
        raise corrupt("label_values", f"a list of {len(names)} class values, one per name of 'label_names'")
    if data.get("threshold") is not None:
        try:
            check_threshold(data["threshold"])
        except ConfigError:
            raise corrupt("threshold", "null or a multi-label decision threshold in (0, 1]") from None
    tasks = data.get("task_names")
    if tasks is not None and not (isinstance(tasks, list) and tasks and all(isinstance(t, str) and t for t in tasks)
                                  and len(set(tasks)) == len(tasks)):
        raise corrupt("task_names", "null or a non-empty list of distinct task names")
    if not isinstance(data.get("pipeline"), dict):
        raise corrupt("pipeline", "a JSON object of text pipeline settings")
    if "batch_size" in data and not (is_integer(data["batch_size"]) and data["batch_size"] >= 1):
        raise corrupt("batch_size", "an integer >= 1")
    if "model" in data and not isinstance(data["model"], str):
        raise corrupt("model", "the name of the run's preset")
    if data.get("quantize") not in (None, "int8"):
        raise corrupt("quantize", "null or 'int8'")
    for key in ("onnx_sha256", "tokenizer_sha256", "sidecar_sha256"):
        if data.get(key) is not None and not is_sha256(data[key]):
            raise corrupt(key, "a SHA-256 hex digest")


def _check_texts(texts, call: str) -> list[str]:
    """A list of non-blank strings, or a DataError naming the offending index (api.py's rules)."""
    return check_texts(as_list(texts, call, "X", "texts"), call)


def _check_providers(providers, ort) -> list:
    """``providers`` as the list to give onnxruntime: a list of provider names (or ``(name,
    options)`` pairs), in order of preference; those this onnxruntime lacks are dropped (so
    ``["CUDAExecutionProvider", "CPUExecutionProvider"]`` runs anywhere), and a name it does not
    know at all (a typo), a string or a list with none available is a ConfigError. onnxruntime
    itself splits a string into letters and falls back to the CPU with a warning."""
    available = list(ort.get_available_providers())
    shown = ", ".join(available)
    if providers is None:
        return list(DEFAULT_PROVIDERS)
    if isinstance(providers, (str, bytes)):
        raise ConfigError(f"parameter 'providers' = {providers!r} is one string, not a list; pass a list such as "
                          f"[{providers!r}] (available here: {shown})")
    try:
        entries = list(providers)
    except TypeError:
        raise ConfigError(f"parameter 'providers' = {providers!r} must be a list of onnxruntime execution "
                          f"provider names (available here: {shown})") from None
    if not entries:
        raise ConfigError(f"parameter 'providers' = {providers!r} names no provider; pass None for the CPU "
                          f"or a list of provider names (available here: {shown})")
    known = set(ort.get_all_providers())
    chosen = []
    for entry in entries:
        pair = isinstance(entry, (tuple, list)) and len(entry) == 2 and isinstance(entry[1], dict)
        name = entry[0] if pair else entry
        if not isinstance(name, str):
            raise ConfigError(f"parameter 'providers': entry {entry!r} must be a provider name (or a (name, options) "
                              f"pair), e.g. 'CPUExecutionProvider' (available here: {shown})")
        if name not in known and name not in available:  # (a plugin provider may be in the second only)
            raise ConfigError(f"parameter 'providers': {name!r} is not an onnxruntime execution provider "
                              f"(available here: {shown})")
        if name in available:
            chosen.append(tuple(entry) if pair else name)
    if not chosen:
        names = ", ".join(e[0] if isinstance(e, (tuple, list)) else e for e in entries)
        raise ConfigError(f"parameter 'providers': none of {names} is available in this onnxruntime (available "
                          f"here: {shown}); install the onnxruntime build that has it, or leave providers out "
                          "for the CPU")
    return chosen


def _check_graph(session, sidecar: dict, pipeline, folder: Path) -> None:
    """The sidecar's fields that the graph can contradict: the number of classes (the output's
    width), the shape and the bigram and task inputs (the graph's input names)."""
    sidecar_path, onnx_path = folder / SIDECAR_FILE, folder / ONNX_FILE

    def corrupt(key: str, why: str) -> CheckpointError:
        shown = "" if key == "pipeline" else f" = {sidecar.get(key)!r:.60}"
        return CheckpointError(f"{sidecar_path}: field {key!r}{shown} {why}; the file is corrupt or was changed, "
                               "export the run again")

    outputs = {o.name: o for o in session.get_outputs()}
    if OUTPUT_NAME not in outputs:
        raise CheckpointError(f"{onnx_path}: the graph has no output '{OUTPUT_NAME}' (it has {', '.join(outputs)}); "
                              "it is not a textcls export, export the run again")
    dims = outputs[OUTPUT_NAME].shape or []
    width, n_labels = (dims[-1] if dims else None), len(sidecar["label_names"])
    if isinstance(width, int) and width != n_labels:
        raise corrupt("label_names", f"has {n_labels} class names, but {ONNX_FILE} gives {width} probabilities per "
                                     "text")
    graph = [i.name for i in session.get_inputs()]
    shape, tasks = sidecar["shape"], sidecar.get("task_names")
    if "task_ids" in graph and not tasks:
        raise corrupt("task_names", f"should be the list of task names: {ONNX_FILE} has one head per task "
                                    "(input task_ids)")
    if tasks and "task_ids" not in graph:
        raise corrupt("task_names", f"should be null: {ONNX_FILE} has no task_ids input (one head for all texts)")
    other = next(s for s in SHAPES if s != shape)
    if any(name not in SHAPE_INPUTS[shape] and name in SHAPE_INPUTS[other] for name in graph):
        raise corrupt("shape", f"does not match {ONNX_FILE}, whose inputs ({', '.join(graph)}) are those of a "
                               f"{other} model")
    if shape == "flat" and any(n in graph for n in BIGRAM_INPUTS) and not pipeline.bigram_buckets:
        raise corrupt("pipeline", f"has bigram_buckets = {pipeline.bigram_buckets!r}, but {ONNX_FILE} takes hashed "
                                  "bigrams (input bigram_ids)")
    if shape == "hierarchical" and pipeline.end_token:
        raise corrupt("pipeline", "has end_token = true, which is for flat inputs, but 'shape' is 'hierarchical'")
    fed = {*SHAPE_INPUTS[shape], *(BIGRAM_INPUTS if shape == "flat" else ()), "task_ids"}
    unknown = [name for name in graph if name not in fed]
    if unknown:
        raise CheckpointError(f"{onnx_path}: the graph takes input '{unknown[0]}', which textcls does not feed; "
                              "it is not a textcls export, export the run again")


# --------------------------------------------------------------------------- classifier


class OnnxClassifier:
    """An exported textcls model on onnxruntime. Build it with ``OnnxClassifier.load(folder)``.

    Attributes: ``classes_`` (label values, as the run's ``Classifier.classes_``),
    ``label_names``, ``multi_label``, ``threshold`` (multi-label: the run's, which the export
    carries; 0.5 for an export made before it did), ``task_names`` (per-task heads, else None), ``sidecar``
    (the parsed onnx.json), ``session`` (the onnxruntime ``InferenceSession``).
    """

    def __init__(self, session, pipeline, sidecar: dict, folder: Path):
        self.session = session
        self.pipeline = pipeline
        self.sidecar = sidecar
        self.folder = folder
        self.shape = sidecar["shape"]
        self.multi_label = bool(sidecar["multi_label"])
        self.threshold = run_threshold(sidecar)  # the run's rule: its saved one, else the default
        self.label_names = list(sidecar["label_names"])
        self.classes_ = np.array(sidecar.get("label_values") or self.label_names)
        self.task_names = sidecar.get("task_names")
        self.batch_size = int(sidecar.get("batch_size", 256))
        self._feeds = [i.name for i in session.get_inputs()]

    @classmethod
    def load(cls, folder: str | Path, *, threads: int | None = None, providers: Sequence[str] | None = None,
             verify: bool = True) -> "OnnxClassifier":
        """Load an export folder (model.onnx, onnx.json, tokenizer.json).

        ``threads``: onnxruntime's intra-op threads (None: its default). ``providers``: a list of
        onnxruntime execution providers in order of preference (default CPU); names this
        onnxruntime does not have are dropped, and a list with none it has is a ConfigError.
        ``verify``: check model.onnx and tokenizer.json against the SHA-256 recorded in
        onnx.json, and onnx.json against its own (CheckpointError if changed).
        """
        folder = check_path("folder", folder)
        check_int("threads", threads, 0, MAX_INT, optional=True)  # 0: onnxruntime's default
        try:
            import onnxruntime as ort
        except ImportError:
            raise ConfigError("OnnxClassifier needs onnxruntime; "
                              "install it with pip install 'textcls[export]'") from None
        providers = _check_providers(providers, ort)
        sidecar = read_sidecar(folder)
        sidecar_path = folder / SIDECAR_FILE
        onnx_path, tokenizer_path = folder / ONNX_FILE, folder / TOKENIZER_FILE
        for path in (onnx_path, tokenizer_path):
            if not path.is_file():
                raise CheckpointError(f"{path}: file is missing; the export folder is incomplete, export the run again")
        if verify:
            for path, key in ((onnx_path, "onnx_sha256"), (tokenizer_path, "tokenizer_sha256")):
                if sidecar.get(key) is not None and sha256_file(path) != sidecar[key]:
                    raise CheckpointError(f"{path}: its SHA-256 does not match {SIDECAR_FILE}; the file is corrupt "
                                          "or was changed, export the run again")
        from .text.pipeline import TextPipeline

        try:
            pipeline = TextPipeline.load(folder, sidecar["pipeline"])
        except ConfigError as exc:  # the settings themselves (unknown or out of range)
            raise CheckpointError(f"{sidecar_path}: field 'pipeline' is not valid text pipeline settings ({exc}); "
                                  "the file is corrupt or was changed, export the run again") from None
        except CheckpointError as exc:  # tokenizer.json, or settings that do not fit it
            if verify and sidecar.get("tokenizer_sha256") is not None:  # tokenizer.json is as exported
                raise CheckpointError(f"{sidecar_path}: field 'pipeline' does not fit {TOKENIZER_FILE} ({exc}); the "
                                      "file is corrupt or was changed, export the run again") from None
            message = str(exc) if str(exc).startswith(str(tokenizer_path)) else f"{tokenizer_path}: {exc}"
            raise CheckpointError(f"{message} (the export folder does not hold what textcls export wrote; "
                                  "export the run again)") from None
        options = ort.SessionOptions()
        options.log_severity_level = 3
        if threads is not None:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1 if threads else 0
        try:
            session = ort.InferenceSession(str(onnx_path), options, providers=providers)
        except Exception as exc:  # onnxruntime's own exception types
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise CheckpointError(f"{onnx_path}: onnxruntime cannot load it ({first})") from None
        _check_graph(session, sidecar, pipeline, folder)
        # Last, so that a field the graph contradicts is named above; this catches the edits
        # that leave every field plausible (other label names, other pipeline settings).
        recorded = sidecar.get("sidecar_sha256")
        if verify and recorded is not None and sidecar_checksum(sidecar) != recorded:
            raise CheckpointError(f"{sidecar_path}: its fields do not match the SHA-256 recorded in it "
                                  "('sidecar_sha256'); the file was changed, export the run again "
                                  "(or load it with verify=False to use it as edited)")
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
            got = self.session.run([OUTPUT_NAME], feeds)[0]
            if got.shape != (len(rows), out.shape[1]):  # a graph whose width load could not read
                raise CheckpointError(
                    f"{self.folder / SIDECAR_FILE}: field 'label_names' names {out.shape[1]} classes, but "
                    f"{ONNX_FILE} gave probabilities of shape {list(got.shape)} for {len(rows)} texts; the file is "
                    "corrupt or was changed, export the run again")
            out[rows] = got
        return check_finite_probabilities(out, None, "(training diverged?), export a good run")

    def predict(self, X: Sequence[str], tasks: Sequence[str] | None = None, *, batch_size: int | None = None):
        """Class values (lists of them for multi-label: those at or above ``threshold``), as
        ``Classifier.predict``."""
        probs = self.predict_proba(X, tasks, batch_size=batch_size)
        if self.multi_label:
            return [list(self.classes_[row >= self.threshold]) for row in probs]
        return self.classes_[probs.argmax(axis=1)]
