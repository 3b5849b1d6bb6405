"""``Classifier``: every registered model behind one scikit-learn estimator.

    >>> clf = textcls.Classifier("tfidf-lr").fit(texts, labels)
    >>> clf.predict(["the film feels uncomfortably real"])

Following scikit-learn's rules, ``__init__`` only stores parameters; everything learned
ends in ``_``. ``fit_dataset`` trains on a ``TextDataset`` (its dev split, or one carved
from train with the recipe's seed), which is what the CLI and the benchmarks use.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Sequence

import datasets
import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin

from . import artifacts
from .data.prepare import encode_texts, label_targets, prepare, resolve_recipe
from .data.records import TextDataset
from .data.splits import ensure_dev
from .errors import CheckpointError, ConfigError, DataError, ModelError
from .eval.metrics import compute_metrics
from .models.registry import accepts_arch_param, create_model, get_preset
from .text.pipeline import TextPipeline
from .train import distributed
from .train.engine import fit as engine_fit
from .train.engine import predict_proba as engine_predict_proba

# The quick start's model: fastText-style bag of n-grams, about 20 s on the fine-food reviews on
# 2 CPU cores. (Kim's CNN took minutes there and scored lower; see the closing note of issue 3.)
DEFAULT_MODEL = "fasttext-bag"

# Estimator parameters that map one-to-one onto preset overrides (None = keep the preset's).
_OVERRIDE_PARAMS = ("epochs", "lr", "batch_size", "weight_decay", "patience", "precision",
                    "embeddings", "max_length")


class Classifier(ClassifierMixin, BaseEstimator):
    """A text classifier: any preset of ``textcls list-models``, trained on raw texts.

    Parameters
    ----------
    model: preset name (``textcls list-models``).
    epochs, lr, batch_size, weight_decay, patience, precision, embeddings, max_length:
        override the preset's recipe or inputs; ``None`` keeps the preset's value.
    params: any other preset override, e.g. ``{"num_filters": 50}``.
    seed: seeds the dev split, initialisation and batch order.
    device: ``"cpu"``, ``"cuda"`` or ``"auto"``.
    progress: show a progress bar while training.
    """

    def __init__(self, model: str = DEFAULT_MODEL, *, epochs=None, lr=None, batch_size=None,
                 weight_decay=None, patience=None, precision=None, embeddings=None, max_length=None,
                 params: dict | None = None, seed: int = 0, device: str = "cpu", progress: bool = False):
        self.model = model
        self.epochs = epochs
        self.lr = lr
        self.batch_size = batch_size
        self.weight_decay = weight_decay
        self.patience = patience
        self.precision = precision
        self.embeddings = embeddings
        self.max_length = max_length
        self.params = params
        self.seed = seed
        self.device = device
        self.progress = progress

    # ------------------------------------------------------------------ configuration
    def _overrides(self) -> dict:
        overrides = {k: getattr(self, k) for k in _OVERRIDE_PARAMS if getattr(self, k) is not None}
        overrides.update(self.params or {})
        overrides["seed"] = self.seed
        return overrides

    def _device(self) -> torch.device:
        if self.device == "auto":
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        check_device(str(self.device), "parameter 'device' =")
        return torch.device(self.device)

    # ------------------------------------------------------------------ training
    def fit(self, X: Sequence[str], y: Sequence) -> "Classifier":
        """Train on texts ``X`` and labels ``y`` (class names, or lists of names for multi-label)."""
        texts = _as_list(X, "Classifier.fit(X, y)", "X", "texts")
        labels = _as_list(y, "Classifier.fit(X, y)", "y", "labels")
        self.fit_dataset(dataset_from_lists(texts, labels))
        if not self.multi_label_:
            # Keep the caller's label values (ints stay ints) so predict() returns the same kind.
            self.classes_ = np.array(_sorted_label_values(labels))
        return self

    def fit_dataset(self, dataset: TextDataset, *, run_dir: str | Path | None = None,
                    resume: bool = False) -> "Classifier":
        preset = get_preset(self.model).with_overrides(**self._overrides())
        if preset.kind != "classic":
            self._device()  # a device this machine lacks is refused before any data is prepared
        if not dataset.multi_label and len(dataset.label_names) < 2:
            shown = f" ('{dataset.label_names[0]}')" if dataset.label_names else ""
            raise DataError(f"{dataset.name}: the training data holds a single class{shown}; "
                            "a classifier needs records of at least two classes")
        self.task_names_ = list(dataset.task_names) if dataset.task_names else None
        if self.task_names_ and preset.kind != "classic" and accepts_arch_param(preset, "num_tasks"):
            # Multi-task data and a model with per-task heads: one head per task. A model
            # without them trains on the tasks pooled (the task ids reach it and are unused).
            preset = preset.with_overrides(num_tasks=len(self.task_names_))
        self.preset_ = preset
        self.classes_ = np.array(dataset.label_names)
        self.multi_label_ = dataset.multi_label
        self.dataset_name_ = dataset.name
        if preset.kind == "classic":
            return self._fit_classic(dataset, preset)
        dataset = ensure_dev(dataset, fraction=preset.recipe.dev_fraction, seed=preset.recipe.seed)
        prepared = prepare(dataset, preset.inputs, seed=preset.recipe.seed)
        # Recipe fields the preset leaves to the data (fasttext-bag's epochs and lr, chosen like
        # a fastText user's from the corpus) are resolved from the training split here, and the
        # run saves the resolved values.
        preset = replace(preset, recipe=resolve_recipe(preset.recipe, prepared))
        self.preset_ = preset
        self.pipeline_ = prepared.pipeline
        self.data_report_ = prepared.report
        matrix = prepared.embeddings.matrix if prepared.embeddings is not None else None
        torch.manual_seed(preset.recipe.seed)
        self.model_ = create_model(preset, num_classes=prepared.num_classes,
                                   vocab_size=prepared.pipeline.vocab_size, embeddings=matrix)
        replicas, rank = distributed.world_size(), distributed.rank()
        recipe = preset.recipe
        train_loader = prepared.loader("train", recipe.batch_size, shuffle=True, seed=recipe.seed,
                                       num_replicas=replicas, rank=rank)
        dev_loader = prepared.loader("dev", _eval_batch(recipe.batch_size))
        self.fit_result_ = engine_fit(
            self.model_, train_loader, dev_loader, recipe, multi_label=dataset.multi_label,
            num_classes=prepared.num_classes, label_names=dataset.label_names,
            class_counts=prepared.class_counts(), run_dir=run_dir, resume=resume,
            progress=self.progress, device=self._device())
        self.model_.to("cpu")
        return self

    def _fit_classic(self, dataset: TextDataset, preset) -> "Classifier":
        import time

        targets = label_targets(dataset["train"], dataset.label_names, dataset.multi_label,
                                f"{dataset.name}/train")
        self.model_ = create_model(preset, num_classes=len(dataset.label_names))
        start = time.perf_counter()
        self.model_.fit(list(dataset["train"]["text"]), _as_target_array(targets, dataset))
        self.fit_result_ = None
        self.train_seconds_ = time.perf_counter() - start
        self.pipeline_ = None
        self.data_report_ = {}
        return self

    # ------------------------------------------------------------------ inference
    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "model_")

    def _check_fitted(self, method: str):
        if not hasattr(self, "model_"):
            from .errors import NotFittedError  # built on first use: it subclasses scikit-learn's

            raise NotFittedError(f"Classifier.{method}() was called before fit(); call fit(X, y) first, "
                                 "or load a trained model with Classifier.from_pretrained(run_dir)")

    @property
    def uses_tasks(self) -> bool:
        """Whether the model has one classifier head per task (multi-task training)."""
        preset = getattr(self, "preset_", None)
        return preset is not None and preset.arch.get("num_tasks", 1) > 1

    def _task_ids(self, tasks: Sequence[str] | None, n: int) -> list[int] | None:
        if not self.uses_tasks:
            if tasks is not None:
                raise ConfigError(f"model '{self.model}' was not trained with per-task heads; drop tasks=")
            return None
        if tasks is None:
            raise ConfigError(f"model '{self.model}' has one head per task ({', '.join(self.task_names_)}); "
                              "pass tasks= with the task of every text")
        if isinstance(tasks, (str, bytes)):
            raise DataError(f"parameter 'tasks' is one string ({_short(tasks)}), not a list; "
                            "pass one task name per text, e.g. tasks=[task] * len(X)")
        tasks = list(tasks)
        if len(tasks) != n:
            raise DataError(f"got {len(tasks)} tasks for {n} texts; pass one task per text")
        index = {name: i for i, name in enumerate(self.task_names_)}
        for row, name in enumerate(tasks):
            if name not in index:
                raise DataError(f"text {row} has task {name!r}, which the model was not trained on "
                                f"(tasks: {', '.join(self.task_names_)})")
        return [index[name] for name in tasks]

    def predict_proba(self, X: Sequence[str], tasks: Sequence[str] | None = None) -> np.ndarray:
        """Class probabilities [N, C] in ``classes_`` order (sigmoid per label for multi-label).

        ``X`` is a list of texts (a single string is refused, as in scikit-learn's vectorizers);
        an empty or whitespace-only text, or one that is not a string, is a DataError naming its
        index (``err.index``). ``tasks``: for a model trained on multi-task data with per-task
        heads, the task of every text (one of ``task_names_``)."""
        self._check_fitted("predict_proba")
        return self._proba(_inference_texts(X, "Classifier.predict_proba(X)"), tasks)

    def _proba(self, texts: list[str], tasks, where: str | None = None) -> np.ndarray:
        task_ids = self._task_ids(tasks, len(texts))
        if self.preset_.kind == "classic":
            probs = self.model_.predict_proba(texts)
        else:
            encoded, _ = encode_texts(self.pipeline_, texts, self.preset_.inputs.get("shape", "flat"),
                                      tasks=task_ids)
            from .data.batching import make_loader

            loader = make_loader(encoded, _eval_batch(self.preset_.recipe.batch_size), shuffle=False)
            probs = engine_predict_proba(self.model_, loader, multi_label=self.multi_label_,
                                         precision=self.preset_.recipe.precision, device=self._device())
        finite = np.isfinite(probs).all(axis=1)
        if not finite.all():
            row = int(np.flatnonzero(~finite)[0])
            raise ModelError(
                f"{where + ': ' if where else ''}the model produced NaN or Inf probabilities for text {row}; "
                "its weights are broken (training diverged?), retrain it (e.g. with a lower lr) or load a good run",
                index=row)
        return probs

    def predict(self, X: Sequence[str], tasks: Sequence[str] | None = None):
        """Class names (lists of names for multi-label, threshold 0.5); ``X`` and ``tasks`` as in predict_proba."""
        self._check_fitted("predict")
        probs = self._proba(_inference_texts(X, "Classifier.predict(X)"), tasks)
        if self.multi_label_:
            return [list(self.classes_[row >= 0.5]) for row in probs]
        return self.classes_[probs.argmax(axis=1)]

    def evaluate(self, split: datasets.Dataset, *, where: str = "evaluation data") -> dict:
        """All metrics (eval.metrics) on a split with `text` and `label`/`labels` columns."""
        self._check_fitted("evaluate")
        targets = label_targets(split, [str(c) for c in self.classes_], self.multi_label_, where)
        tasks = list(split["task"]) if self.uses_tasks and "task" in split.column_names else None
        texts = _check_texts(list(split["text"]), where)
        probs = self._proba(texts, tasks, where=where)
        y = _as_target_array(targets, None, num_classes=len(self.classes_), multi_label=self.multi_label_)
        return compute_metrics(y, probs, [str(c) for c in self.classes_], multi_label=self.multi_label_)

    # ------------------------------------------------------------------ persistence
    def num_parameters(self) -> dict:
        """Trainable and total parameters, with the embedding tables counted apart."""
        self._check_fitted("num_parameters")
        if self.preset_.kind == "classic":
            n = int(self.model_.num_parameters())
            return {"total": n, "trainable": n, "embedding": 0, "non_embedding": n}
        total = sum(p.numel() for p in self.model_.parameters())
        trainable = sum(p.numel() for p in self.model_.parameters() if p.requires_grad)
        embedding = sum(m.weight.numel() for m in self.model_.modules() if isinstance(m, torch.nn.Embedding))
        return {"total": total, "trainable": trainable, "embedding": embedding,
                "non_embedding": total - embedding}

    def save_pretrained(self, run_dir: str | Path) -> Path:
        """Write config.json, model.safetensors and tokenizer.json (no pickles).

        config.json records the SHA-256 of model.safetensors; weights holding NaN or Inf are
        refused (ModelError) before anything is written."""
        self._check_fitted("save_pretrained")
        run_dir = Path(run_dir)
        config = {
            "model": self.model,
            "family": self.preset_.family,
            "kind": self.preset_.kind,
            "arch": self.preset_.arch,
            "recipe": self.preset_.recipe.to_dict(),
            "inputs": self.preset_.inputs,
            "label_names": [str(c) for c in self.classes_],
            "label_values": [_hashable(c) for c in self.classes_],
            "multi_label": bool(self.multi_label_),
            "dataset": self.dataset_name_,
            "task_names": getattr(self, "task_names_", None),
            "estimator": self.get_params(),
        }
        if self.preset_.kind == "classic":
            arrays, meta = self.model_.state()
            config["classic_state"] = meta
        else:
            arrays = {k: v.detach().cpu().contiguous().numpy() for k, v in self.model_.state_dict().items()}
            config["vocab_size"] = self.pipeline_.vocab_size
            config["pipeline"] = self.pipeline_.settings()
        bad = artifacts.first_non_finite(arrays, _allow_inf(self.preset_.kind))
        if bad is not None:
            raise ModelError(f"cannot save to {run_dir}: tensor '{bad}' holds NaN or Inf values, so the model is "
                             "broken (training diverged?); retrain it, e.g. with a lower lr")
        run_dir.mkdir(parents=True, exist_ok=True)
        if self.pipeline_ is not None:
            artifacts.atomic_write_bytes(run_dir / artifacts.TOKENIZER,
                                         self.pipeline_.tokenizer.to_str(pretty=True).encode("utf-8"))
        # Weights first, config (with their checksum) last: a run is complete once config.json is.
        config["weights_sha256"] = artifacts.write_arrays(run_dir / artifacts.WEIGHTS, arrays)
        artifacts.write_config(run_dir, config)
        return run_dir

    @classmethod
    def from_pretrained(cls, run_dir: str | Path) -> "Classifier":
        """Load a run directory written by ``save_pretrained`` or ``textcls train``."""
        run_dir = Path(run_dir)
        config = artifacts.read_config(run_dir)
        params = dict(config.get("estimator", {}))
        params["model"] = config["model"]
        try:
            clf = cls(**params)
            preset = get_preset(config["model"])
        except (TypeError, ConfigError) as exc:
            raise CheckpointError(f"{run_dir / artifacts.CONFIG}: {exc}; it was written by another textcls version")
        from dataclasses import replace

        from .recipe import Recipe

        clf.preset_ = replace(preset, arch=config["arch"], inputs=config["inputs"],
                              recipe=Recipe.from_dict(config["recipe"]))
        clf.classes_ = np.array(config.get("label_values", config["label_names"]))
        clf.multi_label_ = bool(config.get("multi_label", False))
        clf.dataset_name_ = config.get("dataset")
        clf.task_names_ = config.get("task_names")
        weights = run_dir / artifacts.WEIGHTS
        checksum = config.get("weights_sha256")  # absent from runs saved before it was recorded
        if checksum is not None and not _is_sha256(checksum):
            raise CheckpointError(f"{run_dir / artifacts.CONFIG}: 'weights_sha256' is not a SHA-256 hex digest; "
                                  "the file is corrupt or was changed, retrain or restore it")
        arrays = artifacts.read_arrays(weights, sha256=checksum)
        artifacts.check_finite(weights, arrays, _allow_inf(config["kind"]))
        if config["kind"] == "classic":
            from .models.tfidf import TfidfModel

            try:
                clf.model_ = TfidfModel.from_state(arrays, config["classic_state"])
            except CheckpointError as exc:
                raise CheckpointError(f"{weights}: {exc}")
            except (KeyError, ValueError, TypeError) as exc:
                raise CheckpointError(f"{weights}: does not match config.json ({exc}); retrain or restore the run")
            clf.pipeline_ = None
            return clf
        tokenizer = run_dir / artifacts.TOKENIZER
        if not tokenizer.is_file():
            raise CheckpointError(f"{tokenizer}: file is missing; the run directory is incomplete")
        try:
            clf.pipeline_ = TextPipeline.load(run_dir, config["pipeline"])
        except Exception as exc:  # tokenizers raises plain Exceptions on bad JSON
            raise CheckpointError(f"{tokenizer}: cannot load the tokenizer ({exc}); the file is corrupt")
        clf.model_ = create_model(clf.preset_, num_classes=len(clf.classes_),
                                  vocab_size=config["vocab_size"], from_checkpoint=True)
        state = {k: torch.from_numpy(v) for k, v in arrays.items()}
        try:
            clf.model_.load_state_dict(state, strict=True)
        except RuntimeError as exc:
            first = str(exc).splitlines()[0]
            raise CheckpointError(f"{weights}: does not match config.json ({first}); retrain or restore the run")
        clf.model_.eval()
        return clf


def check_device(device: str, option: str = "--device") -> None:
    """Refuse a device this machine does not have (a one-line ConfigError naming ``option``),
    before any data is read or any tensor is moved."""
    if device in ("cpu", "auto"):
        return
    if device != "cuda" and not (device.startswith("cuda:") and device[5:].isdigit()):
        raise ConfigError(f"{option} '{device}' is not one of cpu, cuda, cuda:N, auto")
    if not torch.cuda.is_available():
        raise ConfigError(f"{option} {device}: no CUDA GPU is available (torch.cuda.is_available() is False); "
                          f"use {option} cpu or auto")
    if device.startswith("cuda:") and int(device[5:]) >= torch.cuda.device_count():
        raise ConfigError(f"{option} {device}: this machine has {torch.cuda.device_count()} CUDA GPU(s), "
                          f"numbered from 0; use {option} cuda:0 or auto")


def _eval_batch(batch_size: int) -> int:
    return max(256, batch_size)


def _as_target_array(targets, dataset: TextDataset | None, *, num_classes=None, multi_label=None):
    multi_label = dataset.multi_label if dataset is not None else multi_label
    if not multi_label:
        return np.asarray(targets, dtype=np.int64)
    num_classes = len(dataset.label_names) if dataset is not None else num_classes
    y = np.zeros((len(targets), num_classes), dtype=np.int64)
    for i, labels in enumerate(targets):
        y[i, labels] = 1
    return y


def _hashable(value):
    return value.item() if isinstance(value, np.generic) else value


def _allow_inf(kind: str) -> tuple[str, ...]:
    # A TF-IDF model's bias is -inf for a class absent from training (+inf for a multi-label
    # class always on): probability exactly 0 (1) by design. NaN is never allowed.
    return ("bias",) if kind == "classic" else ()


def _is_sha256(value) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def _short(value, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _as_list(values, call: str, param: str, what: str) -> list:
    """``values`` as a list; one string (which Python would iterate letter by letter) or a
    non-iterable is a DataError, as scikit-learn's "Iterable over raw text documents expected"."""
    if isinstance(values, np.ndarray) and values.ndim == 0:
        values = values.item()
    if isinstance(values, (str, bytes)):
        raise DataError(f"{call}: {param} is one string ({_short(values)}), not a list of {what}; "
                        f"pass a list with one entry per text, e.g. [{what[:-1]}]")
    if values is None or isinstance(values, dict) or not hasattr(values, "__iter__"):
        raise DataError(f"{call}: {param} is {type(values).__name__}, not a list of {what}; "
                        f"pass a list with one entry per text")
    return list(values)


def _check_texts(texts: list, where: str | None = None) -> list:
    """``texts`` unchanged when every one is a non-blank string; else a DataError naming the index."""
    prefix = f"{where}: " if where else ""
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            hint = " (decode bytes first)" if isinstance(text, bytes) else ""
            raise DataError(f"{prefix}text {i} is {type(text).__name__}, not a string; "
                            f"pass every text as a str{hint}", index=i)
        if not text or text.isspace():
            raise DataError(f"{prefix}text {i} is {'empty' if not text else 'only whitespace'}; "
                            "a model cannot classify it, drop it or give it content", index=i)
    return texts


def _inference_texts(X, call: str) -> list[str]:
    return _check_texts(_as_list(X, call, "X", "texts"))


def _is_missing(value) -> bool:
    """None, NaN (pandas' empty cell) or pandas.NA / NaT."""
    if value is None:
        return True
    if isinstance(value, (float, np.floating)):
        return bool(np.isnan(value))
    return type(value).__name__ in ("NAType", "NaTType")


def _check_labels(labels: list) -> bool:
    """Whether ``labels`` are multi-label (lists of names); a DataError naming the first bad one."""
    multi_label = None
    for i, value in enumerate(labels):
        if _is_missing(value):
            shown = "NaN" if isinstance(value, (float, np.floating)) else str(value)
            raise DataError(f"label {i} is {shown} (missing); give text {i} a class name (str or int) "
                            "or drop it", index=i)
        is_list = isinstance(value, (list, tuple, set, np.ndarray))
        if multi_label is None:
            multi_label = is_list
        elif is_list != multi_label:
            kind = "a list of class names" if multi_label else "one class name"
            raise DataError(f"label {i} is {_short(value)} but label 0 is {kind}; pass every label as one class "
                            "name, or every label as a list of class names (multi-label)", index=i)
        if isinstance(value, str) and not value.strip():
            raise DataError(f"label {i} is an empty string; give text {i} a class name or drop it", index=i)
        if is_list:
            for name in value:
                if isinstance(name, str) and not name.strip():
                    raise DataError(f"label {i} holds an empty class name; remove it from the list", index=i)
                if _is_missing(name) or isinstance(name, (list, tuple, set, dict, np.ndarray)):
                    shown = "NaN" if isinstance(name, (float, np.floating)) else _short(name)
                    raise DataError(f"label {i} holds {shown}, not a class name; "
                                    "pass a list of class names (str or int)", index=i)
        else:
            try:
                hash(_hashable(value))
            except TypeError:
                raise DataError(f"label {i} is a {type(value).__name__}, not a class name; "
                                "pass a class name (str or int)", index=i) from None
    return bool(multi_label)


def _sorted_label_values(labels: list) -> list:
    """The distinct label values in order (2 before 10); labels of unorderable mixed types
    (int and str) are a DataError naming the first record whose type differs from record 0's."""
    values = set(_hashable(v) for v in labels)
    try:
        return sorted(values)
    except TypeError:
        first = type(_hashable(labels[0]))
        row = next((i for i, v in enumerate(labels) if not isinstance(_hashable(v), first)), None)
        if row is None:
            raise DataError(f"labels of type {first.__name__} cannot be ordered; pass class names as str or int",
                            index=0) from None
        raise DataError(
            f"label {row} is {type(_hashable(labels[row])).__name__} {_short(labels[row])} but label 0 is "
            f"{first.__name__} {_short(labels[0])}; use one type for all labels (all str or all int)",
            index=row) from None


def dataset_from_lists(texts: Sequence[str], labels: Sequence, name: str = "user-data") -> TextDataset:
    """A one-split TextDataset from Python lists (labels: names, or lists of names)."""
    texts = _as_list(texts, "dataset_from_lists", "texts", "texts")
    labels = _as_list(labels, "dataset_from_lists", "labels", "labels")
    if len(texts) != len(labels):
        raise DataError(f"got {len(texts)} texts but {len(labels)} labels; pass one label per text")
    if not texts:
        raise DataError("no training texts were given; pass at least one text per class")
    _check_texts(texts)
    multi_label = _check_labels(labels)
    if multi_label:
        labels = [[str(_hashable(n)) for n in row] for row in labels]
        names = sorted({n for row in labels for n in row})
        column = {"labels": labels}
    else:
        # Order classes by their original values (2 before 10), then name them as strings.
        names = [str(v) for v in _sorted_label_values(labels)]
        column = {"label": [str(_hashable(v)) for v in labels]}
    splits = datasets.DatasetDict({"train": datasets.Dataset.from_dict({"text": texts, **column})})
    return TextDataset(name, splits, names, multi_label=multi_label,
                       split_notes={"train": "given to Classifier.fit"})
