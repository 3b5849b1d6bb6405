"""``Classifier``: every registered model behind one scikit-learn estimator.

    >>> clf = textcls.Classifier("tfidf-lr").fit(texts, labels)
    >>> clf.predict(["the film feels uncomfortably real"])

Following scikit-learn's rules, ``__init__`` only stores parameters; everything learned
ends in ``_``. ``fit_dataset`` trains on a ``TextDataset`` (its dev split, or one carved
from train with the recipe's seed), which is what the CLI uses.

The Classifier checks what the user passes (texts, labels, tasks) and keeps the labels' own
values; the model itself is an ``estimators.Estimator`` (``estimator_``), the same interface
for every kind of model, so nothing here depends on which kind it is. A run folder's
``config.json`` is the preset's own ``to_dict()`` plus the labels, the estimator's parameters
and its ``state``; ``from_pretrained`` rebuilds the preset from it (by family and
architecture), so a run loads even after its preset is renamed or removed.
"""

from __future__ import annotations

import logging
import math
import os
from pathlib import Path
from typing import Sequence

import datasets
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from . import artifacts, model_hub
from .data.prepare import column_values, label_targets, target_array, unknown_label_problem, unknown_labels
from .data.records import TextDataset, read_policy, record_place, select_records, with_column
from .errors import CheckpointError, ConfigError, DataError, ModelError, UnknownTaskError, close_names
from .estimators import Estimator, check_device, device_for_run, estimator_for
from .eval.metrics import compute_metrics
from .inputs import as_list, check_finite_probabilities, check_texts, short, task_indices
from .models.registry import Preset, get_family, get_preset
from .validate import check_choice, check_flag, check_folder_path, check_path

__all__ = ["Classifier", "DEFAULT_MODEL", "check_device", "dataset_from_lists"]

# The default (issue 19): TF-IDF + LR, TF-IDF + NB, the fastText-style bag and frozen distilled
# MiniLM sentence vectors + LR, averaged with weights chosen on dev. On trec, sst2, mr, mpqa and
# sst5 (3 seeds, benchmarks/results/ensemble_members.md) it beat each of its members alone on
# average and the first three together on every set; those three beat fasttext-bag (the default
# before it) on every set, for 2.8-5.6x fastText's training time
# (benchmarks/results/practitioner.md). Its price: a
# saved run predicts through torch and scikit-learn, so `textcls predict` starts slower than a
# fasttext-bag run's (NumPy only); pick `--model fasttext-bag` where start-up matters most.
DEFAULT_MODEL = "ensemble"

# Estimator parameters that map one-to-one onto preset overrides (None = keep the preset's).
_OVERRIDE_PARAMS = ("epochs", "lr", "batch_size", "weight_decay", "patience", "precision",
                    "embeddings", "max_length")
# config.json keys that are the preset's (Preset.to_dict()).
_PRESET_KEYS = ("name", "family", "kind", "arch", "recipe", "inputs", "description", "paper")


class Classifier(ClassifierMixin, BaseEstimator):
    """A text classifier: any preset of ``textcls list-models``, trained on raw texts.

    Parameters
    ----------
    model: preset name (``textcls list-models``).
    epochs, lr, batch_size, weight_decay, patience, precision, embeddings, max_length:
        override the preset's recipe or inputs; ``None`` keeps the preset's value.
        ``precision``: ``"fp32"``, ``"bf16"`` (autocast) or ``"auto"`` (bf16 where the CPU has
        AMX or AVX-512 BF16 or the GPU supports it, else fp32; ``preset_`` holds the choice).
    params: any other preset override, e.g. ``{"dropout": 0.3}``; not one of the keywords above
        or ``seed`` (a name set in both places is refused, not resolved by a rule).
    seed: seeds the dev split, initialisation and batch order.
    device: ``"cpu"``, ``"cuda"`` or ``"auto"``.
    progress: show a progress bar while training.

    Learned attributes: ``estimator_`` (the fitted ``Estimator``), ``preset_`` (the preset it
    trained with), ``fitted_params_`` (``get_params()`` as the model was fitted or loaded with,
    NumPy scalars as Python numbers: what ``save_pretrained`` writes, whatever ``set_params``
    changed since without a refit), ``classes_``, ``multi_label_``, ``task_names_``, ``task_column_`` (the field or column
    its data's tasks were read from, ``load_dataset``'s ``task_column``; None: none), ``dataset_name_``,
    ``test_split_`` (how ``load_dataset`` carved its data's test split, ``{"fraction", "split_seed"}``,
    and ``"source_digest"``, the ``records_digest`` of the records it was carved from; None: the
    data's own, or ``fit``'s lists),
    ``threshold_`` (multi-label: a class is predicted from this probability on, in
    ``predict``, ``score``, ``explain`` and ``evaluate``; a loaded run's ``threshold`` from
    config.json, else 0.5, the rule of docs/serve.md; set it to change it, and
    ``save_pretrained`` writes it), and the
    estimator's ``model_``, ``pipeline_`` (None for TF-IDF), ``fit_result_`` (the engine's, or
    None), ``data_report_`` and ``train_seconds_``.
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
        """The preset overrides these parameters set; ``params``, ``progress`` and ``device`` checked
        here, since scikit-learn's convention leaves ``__init__`` to store them unchecked."""
        params = self.params
        if params is not None and not (isinstance(params, dict) and all(isinstance(k, str) for k in params)):
            raise ConfigError(f"parameter 'params' = {short(params)} must be a dict of preset parameters by name, "
                              "e.g. {'dropout': 0.3}")
        check_flag("progress", self.progress)
        check_device(self.device, "parameter 'device'")
        overrides = {k: getattr(self, k) for k in _OVERRIDE_PARAMS if getattr(self, k) is not None}
        if "seed" in (params or {}):
            raise ConfigError(f"params={{'seed': {short(params['seed'])}}}: the seed is the classifier's own "
                              f"parameter (seed={short(self.seed)} here), which params cannot change; pass "
                              f"seed={short(params['seed'])} instead")
        twice = sorted(set(params or {}) & set(overrides))
        if twice:
            name = twice[0]
            raise ConfigError(f"parameter '{name}' is given twice, as {name}={short(overrides[name])} and in "
                              f"params={{'{name}': {short(params[name])}}}; set it in one place (the keyword {name}=)")
        overrides.update(params or {})
        overrides["seed"] = self.seed
        # A grid or a random search hands NumPy scalars (np.arange, scipy.stats): plain numbers
        # train alike and can be saved (JSON has no int64).
        return _plain_values(overrides)

    # ------------------------------------------------------------------ training
    def fit(self, X: Sequence[str], y: Sequence) -> "Classifier":
        """Train on texts ``X`` and labels ``y`` (class names, or lists of names for multi-label)."""
        texts = as_list(X, "Classifier.fit(X, y)", "X", "texts")
        labels = _label_list(y, "Classifier.fit(X, y)")
        self.fit_dataset(dataset_from_lists(texts, labels))
        # Keep the caller's label values (ints stay ints, in lists too) so that predict() returns
        # the same kind and score() knows the labels fit saw; the dataset's names are their str().
        self.classes_ = np.array(_sorted_label_values(_flat_labels(labels) if self.multi_label_ else labels))
        return self

    def fit_dataset(self, dataset: TextDataset, *, run_dir: str | Path | None = None,
                    resume: bool = False) -> "Classifier":
        """Train on ``dataset``'s train split (and dev, for epoch selection); with ``run_dir``
        a neural model's training writes its epoch log and checkpoint there (``resume`` continues
        it), and refuses a folder holding a saved run unless ``resume``; a classic model or an
        ensemble writes nothing there."""
        if not isinstance(dataset, TextDataset):
            raise ConfigError(f"fit_dataset takes a TextDataset (textcls.data.load_dataset), not a "
                              f"{type(dataset).__name__}; for texts and labels call fit(X, y)")
        if run_dir is not None:
            check_folder_path("run_dir", check_path("run_dir", run_dir))
        preset = get_preset(self.model).with_overrides(**self._overrides())
        estimator = estimator_for(preset)
        if estimator.resumable:  # the engine refuses too, but only after preparing the data
            artifacts.refuse_finished_run(run_dir, resume)
        estimator.fit(dataset, run_dir=run_dir, resume=resume, progress=self.progress, device=self.device)
        self._adopt(estimator, np.array(dataset.label_names), dataset.multi_label, dataset.task_names, dataset.name,
                    artifacts.DEFAULT_THRESHOLD, dataset.task_column, _saved_test_split(dataset))
        # save_pretrained's check: only a training that wrote its epochs.csv there (the engine's)
        # trained in run_dir; a classic model's resume into another model's run trained nowhere.
        self._trained_in = os.path.realpath(run_dir) if run_dir is not None and estimator.resumable else None
        return self

    def _adopt(self, estimator: Estimator, classes, multi_label, task_names, dataset_name, threshold,
               task_column: str | None = artifacts.DEFAULT_TASK_COLUMN, test_split: dict | None = None) -> None:
        """Take a fitted (or restored) estimator and what the labels are."""
        self.estimator_ = estimator
        # What the model was fitted (or saved) with: save_pretrained writes these, not a later
        # set_params that has not been fitted (a run saying "tfidf-nb" beside LR weights).
        self.fitted_params_ = _plain_values(self.get_params())
        self.threshold_ = threshold
        self.preset_ = estimator.preset
        self.classes_ = classes
        self.multi_label_ = bool(multi_label)
        self.task_names_ = list(task_names) if task_names else None
        self.task_column_ = task_column
        self.test_split_ = dict(test_split) if test_split else None
        self.dataset_name_ = dataset_name
        self.model_ = estimator.model_
        self.pipeline_ = estimator.pipeline_
        self.fit_result_ = estimator.fit_result_
        self.data_report_ = estimator.data_report_
        self.train_seconds_ = estimator.train_seconds_

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
        estimator = getattr(self, "estimator_", None)
        return estimator is not None and estimator.uses_tasks

    def _task_ids(self, tasks: Sequence[str] | None, n: int) -> list[int] | None:
        return task_indices(tasks, n, self.task_names_ if self.uses_tasks else None, self.model)

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
        probs = self.estimator_.predict_proba(texts, task_ids, device=self.device)
        return check_finite_probabilities(
            probs, where, "(training diverged?), retrain it (e.g. with a lower lr) or load a good run")

    def predict(self, X: Sequence[str], tasks: Sequence[str] | None = None):
        """Class names (lists of names for multi-label: those at or above ``threshold_``); ``X`` and
        ``tasks`` as in predict_proba."""
        self._check_fitted("predict")
        cut = self._threshold()
        probs = self._proba(_inference_texts(X, "Classifier.predict(X)"), tasks)
        if self.multi_label_:
            return [list(self.classes_[row >= cut]) for row in probs]
        return self.classes_[probs.argmax(axis=1)]

    def _threshold(self) -> float:
        """``threshold_`` checked: a user may have set it by hand."""
        return artifacts.check_threshold(getattr(self, "threshold_", artifacts.DEFAULT_THRESHOLD),
                                         "Classifier.threshold_")

    def score(self, X: Sequence[str], y: Sequence, sample_weight=None) -> float:
        """Accuracy on texts ``X`` with labels ``y``, as scikit-learn's ``score`` (for multi-label,
        the share of texts whose predicted set is exactly theirs). A label the model does not know
        is a DataError naming its index, as in ``evaluate``: it would only ever count as wrong."""
        self._check_fitted("score")
        call = "Classifier.score(X, y)"
        texts = _inference_texts(X, call)
        labels = _label_list(y, call)
        if len(labels) != len(texts) or not texts:
            raise DataError(f"{call}: got {len(texts)} texts and {len(labels)} labels; pass one label per text, "
                            "at least one")
        self._check_known_labels(labels, call)
        if sample_weight is not None:
            try:
                sample_weight = np.asarray(sample_weight, dtype=float)
            except (TypeError, ValueError):
                sample_weight = np.full(0, np.nan)  # refused just below
            if sample_weight.shape != (len(texts),) or not np.isfinite(sample_weight).all() or sample_weight.sum() <= 0:
                raise DataError(f"{call}: sample_weight must be {len(texts)} finite numbers, one weight per text, "
                                "with a positive sum")
        predicted = self.predict(texts)
        if self.multi_label_:
            correct = [set(map(_hashable, p)) == set(map(_hashable, t)) for p, t in zip(predicted, labels)]
        else:
            correct = [_hashable(p) == _hashable(t) for p, t in zip(predicted, labels)]
        return float(np.average(correct, weights=sample_weight))

    def set_params(self, **params) -> "Classifier":
        """scikit-learn's ``set_params``; an unknown name is a ConfigError naming the close ones."""
        valid = self.get_params(deep=False)
        unknown = next((k for k in params if k not in valid), None)
        if unknown is not None:
            raise ConfigError(f"Classifier.set_params: unknown parameter '{unknown}'; {close_names(unknown, valid)} "
                              "(preset parameters go in params={...})")
        return super().set_params(**params)

    def _check_known_labels(self, labels: list, call: str) -> None:
        known = {_hashable(c) for c in self.classes_}
        for i, label in enumerate(labels):
            is_list = isinstance(label, (list, tuple, set, np.ndarray))
            if is_list != self.multi_label_:
                kind = "a list of class names" if self.multi_label_ else "one class name"
                raise DataError(f"{call}: label {i} is {short(label)}; this model takes {kind} per text", index=i)
            unknown = next((n for n in (label if is_list else [label]) if _hashable(n) not in known), None)
            if unknown is not None:
                raise DataError(f"{call}: label {i} is {short(unknown)}, which the model does not know (known: "
                                f"{', '.join(map(str, self.classes_[:20]))})", index=i)

    def explain(self, X: Sequence[str], tasks: Sequence[str] | None = None) -> list[dict]:
        """What an attention model looked at, per text: ``label`` (``labels`` for multi-label),
        ``probabilities``, the ``words`` it read (and ``sentences`` for hierarchical models), and
        ``word_attention`` / ``sentence_attention``: one row of weights per head or axis, aligned
        to them (``explain.py`` says how each model's maps become rows); plus the raw maps
        (``attentions``). A model without attention maps is a ModelError naming the presets that
        can explain. ``X`` and ``tasks`` as in predict_proba."""
        from .explain import explain_texts

        self._check_fitted("explain")
        texts = _inference_texts(X, "Classifier.explain(X)")
        return explain_texts(self.estimator_, texts, self._task_ids(tasks, len(texts)), model=self.model,
                             classes=self.classes_, probabilities=self._proba(texts, tasks),
                             predicted=self.predict(texts, tasks), tasks=tasks)

    def evaluate(self, split: datasets.Dataset, *, where: str = "evaluation data",
                 on_bad_record: str | None = None) -> dict:
        """All metrics (eval.metrics) on a split with `text` and `label`/`labels` columns.

        A record whose label the model does not know, or (a model with one head per task) whose
        task it was not trained on, is a bad record: an error naming its file
        and line (records read from a user's file or folder; catalogue records by split and
        index), or, with
        ``on_bad_record="skip"``, left out, counted in ``metrics["skipped"]`` and said in the
        first notes (one for unknown tasks, then one for unknown labels). ``None`` follows the policy the records were read with (``load_dataset(...,
        on_bad_record=)``, the CLI's ``--on-bad-record``), else "error"; a skip it decides is also
        logged as a warning on the ``textcls`` logger, as the caller did not ask for it here (the
        CLI, which passes its option, says the note on stderr itself)."""
        self._check_fitted("evaluate")
        cut = self._threshold()
        if not isinstance(split, datasets.Dataset):
            raise DataError(f"Classifier.evaluate takes one split, a datasets.Dataset (e.g. "
                            f"load_dataset(...)['test']), not a {type(split).__name__}; for lists of texts and "
                            "labels call score(X, y)")
        if on_bad_record is not None:
            check_choice("on_bad_record", on_bad_record, ("error", "skip"))
        policy = on_bad_record or read_policy(split) or "error"
        if "text" not in split.column_names:
            raise DataError(f"{where}: no 'text' column (its columns: {', '.join(split.column_names)}); "
                            "name the text column 'text', e.g. split.rename_column(<name>, 'text')")
        names = [str(c) for c in self.classes_]
        split, skipped_tasks = self._without_unknown_tasks(split, where, policy)
        split = self._with_label_names(split, names)
        split, skipped = self._without_unknown_labels(split, names, where) if policy == "skip" else (split, None)
        targets = label_targets(split, names, self.multi_label_, where, fix=(
            'relabel the record or train on data with this class, or pass on_bad_record="skip" '
            "(CLI: --on-bad-record skip) to skip and count it"))
        tasks = column_values(split, "task") if self.uses_tasks and "task" in split.column_names else None
        texts = check_texts(column_values(split, "text"), where)
        probs = self._proba(texts, tasks, where=where)
        y = target_array(targets, len(self.classes_), self.multi_label_)
        metrics = compute_metrics(y, probs, names, multi_label=self.multi_label_,
                                  **({"threshold": cut} if self.multi_label_ else {}))
        said = [s for s in (skipped_tasks, skipped) if s]
        if said:
            metrics["skipped"] = sum(count for count, _ in said)
            for _, note in reversed(said):
                note = f"{note}; the metrics are over the other {len(split)}"  # after every skip
                metrics["notes"].insert(0, note)
                if on_bad_record is None:
                    # Records read with skip are skipped here by default: said where a caller sees it.
                    logging.getLogger("textcls").warning("%s", note)
        return metrics

    def _with_label_names(self, split, names: list[str]):
        """``split`` with labels that are not strings (the ints, floats or bools ``fit`` kept as
        the class values; a hub ``ClassLabel``'s ids) as the class names the model matches them
        by: ``str(value)``, as ``fit`` named them; a ``ClassLabel`` whose ids are not the model's
        classes by the names it gives its ids, where those are."""
        column = "labels" if self.multi_label_ else "label"
        if column not in split.column_names:
            return split  # _label_values says what the data holds instead
        feature = split.features[column]
        inner = getattr(feature, "feature", feature)  # a multi-label list's element
        if isinstance(inner, datasets.Value) and inner.dtype in ("string", "large_string"):
            return split
        known = set(names)
        by_names = (isinstance(inner, datasets.ClassLabel) and not {str(i) for i in range(inner.num_classes)} <= known
                    and set(inner.names) <= known)

        def name_of(value):
            return inner.names[value] if by_names and 0 <= value < inner.num_classes else str(value)

        values = column_values(split, column)
        return with_column(split, column, [[name_of(v) for v in value] if self.multi_label_ else name_of(value)
                                           for value in values])

    def _without_unknown_tasks(self, split, where: str, policy: str):
        """``split`` less its records of a task the model has no head for, and (how many, the
        note that counts them), or None when there are none. Such a record is a bad record, as one
        with an unknown label is: an error at its place unless ``policy`` is "skip"."""
        if not self.uses_tasks or "task" not in split.column_names:
            return split, None
        tasks = column_values(split, "task")
        bad = [row for row, task in enumerate(tasks) if task not in self.task_names_]
        if not bad:
            return split, None
        first = (f"{record_place(split, bad[0]) or f'{where} record {bad[0]}'}: task {tasks[bad[0]]!r} is not one "
                 f"{self.model} was trained on")
        if policy != "skip":
            raise UnknownTaskError(f"{first}; give one of: {', '.join(self.task_names_)}, or pass "
                                   "on_bad_record=\"skip\" (CLI: --on-bad-record skip) to skip and count it",
                                   index=bad[0])
        if len(bad) == len(split):
            raise UnknownTaskError(f"{where}: every record has a task the model was not trained on (first: "
                                   f"{first}); score the model on data of its tasks ({', '.join(self.task_names_)})")
        return _without_rows(split, bad), (len(bad), f"skipped {len(bad)} {_records(len(bad))} of a task the "
                                                     f"model was not trained on (first: {first})")

    def _without_unknown_labels(self, split, names: list[str], where: str):
        """``split`` less its records with a label the model does not know, and (how many, the
        note that counts them), or None when there are none."""
        bad = unknown_labels(split, names, self.multi_label_, where)
        if not bad:
            return split, None
        first = unknown_label_problem(split, *bad[0], names, where)
        if len(bad) == len(split):
            raise DataError(f"{where}: every record has a label the model does not know (first: {first}); "
                            "score the model on data labelled with its classes")
        return _without_rows(split, [row for row, _ in bad]), (
            len(bad), f"skipped {len(bad)} {_records(len(bad))} with a label the model does not know (first: {first})")

    # ------------------------------------------------------------------ persistence
    def num_parameters(self) -> dict:
        """Trainable and total parameters, with the embedding tables counted apart."""
        self._check_fitted("num_parameters")
        return self.estimator_.num_parameters()

    def save_pretrained(self, run_dir: str | Path) -> Path:
        """Write config.json, model.safetensors and the estimator's side files (tokenizer.json)
        (no pickles).

        config.json records the SHA-256 of model.safetensors; weights holding NaN or Inf are
        refused (ModelError) before anything is written. A quantised model (``quantize``, or
        ``torch.ao.quantization.quantize_dynamic`` applied to ``estimator_.model_`` by hand) is
        stored as float weights plus ``"quantize": "int8"``, which ``from_pretrained`` applies again.

        Files of ``run_dir`` this save does not write stay (a user's notes; ``textcls train``'s
        metrics.json and epochs.csv, written beside it). So a folder that holds another model's
        run (other weights, or another ``quantize``) together with its metrics.json or epochs.csv
        is refused (ConfigError), and nothing is written: those files would then describe this
        model. Saving over a run of the same model, or over one without them, replaces it; so
        does saving into the folder this model's own ``fit_dataset(run_dir=...)`` trained in (its
        epochs.csv is this model's log), as a resumed training that ran on does."""
        self._check_fitted("save_pretrained")
        run_dir = check_path("run_dir", run_dir)
        check_folder_path("run_dir", run_dir)
        arrays, state, quantized = self._state()
        bad = artifacts.first_non_finite(arrays, self.estimator_.ALLOW_INF)
        if bad is not None:
            raise ModelError(f"cannot save to {run_dir}: tensor '{bad}' holds NaN or Inf values, so the model is "
                             "broken (training diverged?); retrain it, e.g. with a lower lr")
        config = {
            "model": self.fitted_params_["model"],
            **self.preset_.to_dict(),
            "label_names": [str(c) for c in self.classes_],
            "label_values": [_hashable(c) for c in self.classes_],
            "multi_label": bool(self.multi_label_),
            "dataset": self.dataset_name_,
            "task_names": self.task_names_,
            # Only where not the default: the runs saved before the key have the default.
            **({"task_column": self.task_column_} if self.task_column_ != artifacts.DEFAULT_TASK_COLUMN else {}),
            **({"test_split": self.test_split_} if self.test_split_ else {}),
            **({"threshold": self._threshold()} if self.multi_label_ else {}),
            "estimator": self.fitted_params_,
            "state": state,
            **({"quantize": quantized} if quantized else {}),
        }
        artifacts.check_json(config, f"cannot save to {run_dir}")  # before a file is written: never half a run
        with artifacts.staged_run(run_dir) as staging:
            self.estimator_.write_files(staging)
            artifacts.write_run(staging, config, arrays)
            # Refused, not cleared: another run's metrics may be the only record of a long training,
            # and a path given by mistake then costs nothing. Checked once staged: the checksum is known.
            trained_here = getattr(self, "_trained_in", None) == os.path.realpath(run_dir)
            artifacts.check_same_model(run_dir, staging, trained_here=trained_here)
        return run_dir

    def _state(self):
        """The estimator's (arrays, meta) and its quantisation (None or "int8"); a quantised
        network is stored through its float model (``quantize.float_copy`` when it was
        quantised by hand, so the float original is not at hand)."""
        import torch

        from .quantize import float_copy, is_quantized

        model = self.estimator_.model_
        if not isinstance(model, torch.nn.Module) or not is_quantized(model):
            return (*self.estimator_.state(), None)
        pair = getattr(self, "_quantized_from", None)
        self.estimator_.model_ = pair[1] if pair is not None and pair[0] is model else float_copy(model)
        try:
            return (*self.estimator_.state(), "int8")
        finally:
            self.estimator_.model_ = model

    def quantize(self, mode: str = "int8") -> "Classifier":
        """Quantise the network dynamically to int8 (``torch.ao.quantization.quantize_dynamic``:
        int8 weights for Linear, LSTM and GRU layers, activations quantised per batch) for CPU
        prediction. ``save_pretrained`` keeps it (float weights and ``"quantize": "int8"``), and
        ``from_pretrained`` quantises again, so the loaded model predicts as this one does.
        TF-IDF models, bf16 runs and GPU devices are refused (ConfigError). Returns self."""
        from .quantize import check_mode, quantize_model

        self._check_fitted("quantize")
        check_mode(mode)
        if self.preset_.kind != "neural":
            what = "a classic model (scikit-learn over TF-IDF or static vectors)" if self.preset_.kind == "classic" else f"an {self.preset_.kind}"
            raise ConfigError(f"model '{self.model}' is {what}, which has no network to quantise; "
                              "quantise a neural preset")
        if self.preset_.recipe.precision != "fp32" or str(self.device) not in ("cpu", "auto"):
            raise ConfigError(f"int8 quantisation runs in fp32 on the CPU; this model has precision "
                              f"{self.preset_.recipe.precision} on device {self.device}: set device='cpu' "
                              "(and train with precision fp32)")
        self.device = "cpu"
        pair = getattr(self, "_quantized_from", None)
        if pair is not None and pair[0] is self.estimator_.model_:
            return self  # already quantised
        float_model = self.estimator_.model_
        self.estimator_.model_ = self.model_ = quantize_model(float_model, mode)
        self._quantized_from = (self.model_, float_model)
        return self

    def dequantize(self) -> "Classifier":
        """Undo ``quantize``: the float network it was made from (``torch.ao``'s quantised
        modules have no ONNX or GPU form). Returns self; a float model is left as it is."""
        self._check_fitted("dequantize")
        pair = getattr(self, "_quantized_from", None)
        if pair is not None and pair[0] is self.estimator_.model_:
            self.estimator_.model_ = self.model_ = pair[1]
        else:
            from .quantize import float_copy, is_quantized

            if is_quantized(self.estimator_.model_):
                self.estimator_.model_ = self.model_ = float_copy(self.estimator_.model_)
        self._quantized_from = None
        return self

    @classmethod
    def from_pretrained(cls, run_dir: str | Path, *, revision: str | None = None, cache_dir=None,
                        token=None, device: str | None = None, note=None) -> "Classifier":
        """Load a run folder written by ``save_pretrained`` or ``textcls train``, or a model
        from the Hugging Face hub.

        ``run_dir``: a local folder, or a hub model id (``"owner/name"`` when no such local
        path exists, or ``"hf:owner/name"``), which ``huggingface_hub.snapshot_download``
        resolves to its cache (``revision``, ``cache_dir``, ``token`` go to it; offline, with
        ``HF_HUB_OFFLINE=1``, the cache alone answers). A ``pathlib.Path`` is always local.

        ``device``: where it runs (cpu, cuda, cuda:N, auto); default the one it was trained on, or
        cpu where that is a GPU this machine lacks, said to ``note`` (a callable taking the line;
        default: a warning on the ``textcls`` logger).

        The model is rebuilt from the family and architecture in config.json, not looked up by
        its preset name, so a run loads after its preset is renamed or removed."""
        check_path("run_dir", run_dir)  # a str stays a str: it may name a hub model
        repo_id = model_hub.hub_repo_id(run_dir)
        if repo_id is not None:
            run_dir = model_hub.snapshot(repo_id, revision=revision, cache_dir=cache_dir, token=token)
        else:
            given = [name for name, value in (("revision", revision), ("cache_dir", cache_dir), ("token", token))
                     if value is not None]
            if given:  # a local folder wins over the hub (as in transformers): a hub option would be ignored
                raise ConfigError(f"{given[0]}= applies to a model on the Hugging Face hub, and {run_dir} is a local "
                                  f"folder, which is loaded as it is; drop {given[0]}=, or pass 'hf:<owner>/<name>' "
                                  "to load the hub's")
        run_dir = Path(run_dir)
        config = artifacts.read_config(run_dir)
        if device is not None:
            check_device(device, "device")
        params = {**config.get("estimator", {}), "model": config["model"]}
        params["device"] = device or device_for_run(params.get("device"), run_dir,
                                                     note or logging.getLogger("textcls").warning)
        try:
            clf = cls(**params)
            preset = Preset.from_dict({key: config[key] for key in _PRESET_KEYS if key in config})
            get_family(preset.family)
        except (TypeError, ConfigError) as exc:
            raise CheckpointError(f"{run_dir / artifacts.CONFIG}: {exc}; it was written by another textcls version")
        estimator = estimator_for(preset)
        arrays = artifacts.read_weights(run_dir, config, allow_inf=estimator.ALLOW_INF)
        estimator.load_state(arrays, config["state"], run_dir)
        said, saved = ((len(config["label_names"]), bool(config.get("multi_label", False))),
                       (estimator.num_classes_, bool(estimator.multi_label_)))
        if said != saved:
            def shown(n, multi):
                return f"{n} classes, {'multi' if multi else 'single'}-label"
            raise CheckpointError(f"{run_dir / artifacts.CONFIG}: says {shown(*said)}, but the model was saved with "
                                  f"{shown(*saved)}; the file is corrupt or was changed, retrain or restore the run")
        clf._adopt(estimator, np.array(config.get("label_values", config["label_names"])),
                   config.get("multi_label", False), config.get("task_names"), config.get("dataset"),
                   artifacts.run_threshold(config), config.get("task_column", artifacts.DEFAULT_TASK_COLUMN),
                   config.get("test_split"))
        if config.get("quantize") is not None:
            try:
                clf.quantize(config["quantize"])
            except ConfigError as exc:
                raise CheckpointError(f"{run_dir / artifacts.CONFIG}: {exc}") from None
        return clf

    def push_to_hub(self, repo_id: str, *, private: bool | None = None, token=None, revision: str | None = None,
                    commit_message: str | None = None, create_pr: bool = False, metrics: dict | None = None) -> str:
        """Upload this model to the Hugging Face hub repository ``repo_id`` (created when
        missing): the files of ``save_pretrained`` and a generated model card (README.md: the
        preset, its paper, the data, the metrics and how to load it). ``metrics``: what the
        card reports, in metrics.json's shape (``{"test": compute_metrics(...), ...}``); to
        push a whole run folder with its metrics.json use ``textcls push RUN REPO_ID``.
        Returns the commit's URL."""
        import tempfile

        self._check_fitted("push_to_hub")
        model_hub.check_metrics(metrics)  # before anything is written or sent
        with tempfile.TemporaryDirectory(prefix="textcls-push-") as folder:
            self.save_pretrained(folder)
            if metrics is not None:
                artifacts.write_json(Path(folder) / artifacts.METRICS, metrics)
            return model_hub.push_run(folder, repo_id, private=private, token=token, revision=revision,
                                      commit_message=commit_message, create_pr=create_pr)


def _saved_test_split(dataset: TextDataset) -> dict | None:
    """What a run saves of its data's carved test split (config.json "test_split"): the share and
    seed, and the digest of the records carved (``TextDataset.source_digest``), by which
    ``textcls evaluate`` knows the same data under another name or path."""
    if not dataset.test_split:
        return None
    digest = dataset.source_digest()
    return {**dataset.test_split, **({"source_digest": digest} if digest else {})}


def _plain_values(value):
    """``value`` with NumPy scalars (in dicts, lists and tuples too) as the Python numbers they hold."""
    if isinstance(value, dict):
        return {key: _plain_values(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_plain_values(item) for item in value)
    return _hashable(value)


def _hashable(value):
    return value.item() if isinstance(value, np.generic) else value


def _without_rows(split, rows: list[int]):
    """``split`` less ``rows`` (one entry a record), its records keeping their places."""
    keep = np.ones(len(split), dtype=bool)
    keep[rows] = False
    return select_records(split, np.flatnonzero(keep))  # an array: datasets hashes a list int by int


def _records(count: int) -> str:
    return "record" if count == 1 else "records"


def _label_list(y, call: str) -> list:
    """``y`` as a list of labels; a 2-D ``y`` (a 0/1 indicator matrix, as scikit-learn's advice on
    lists of labels suggests, or a DataFrame) is refused saying how to pass multi-label labels."""
    shape = getattr(y, "shape", None)
    if not isinstance(y, (str, bytes)) and isinstance(shape, tuple) and len(shape) == 2:
        raise DataError(f"{call}: y is a table ({type(y).__name__}, {shape[0]} x {shape[1]}); pass one label per "
                        "text: a class name (one column, e.g. df['label']), or for multi-label a list of class names "
                        "(from a 0/1 indicator matrix: MultiLabelBinarizer's inverse_transform(Y)); with lists, "
                        "scikit-learn's cross-validation needs cv=KFold(n) (its default stratified split refuses them)")
    return as_list(y, call, "y", "labels")


def _inference_texts(X, call: str) -> list[str]:
    return check_texts(as_list(X, call, "X", "texts"))


def _is_missing(value) -> bool:
    """None, NaN (pandas' empty cell) or pandas.NA / NaT."""
    if value is None:
        return True
    if isinstance(value, (float, np.floating)):
        return bool(np.isnan(value))
    return type(value).__name__ in ("NAType", "NaTType")


def _class_name_type(value, i: int) -> type:
    """The type a class name is written in (str, int, float, bool); bytes, NaN and Inf are refused."""
    value = _hashable(value)
    if isinstance(value, bytes):
        raise DataError(f"label {i} is bytes {short(value)}; decode the class names to str first", index=i)
    if isinstance(value, float) and not math.isfinite(value):
        raise DataError(f"label {i} is {value}, not a class name; pass a class name (str or int)", index=i)
    return type(value)


def _check_labels(labels: list) -> bool:
    """Whether ``labels`` are multi-label (lists of names); a DataError naming the first bad one.

    Every class name has one type: 1 and "1", or True and 1, would name one class twice (they
    are equal to Python or as text), and merging them without a word would change the data."""
    multi_label, name_type = None, None
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
            raise DataError(f"label {i} is {short(value)} but label 0 is {kind}; pass every label as one class "
                            "name, or every label as a list of class names (multi-label)", index=i)
        if isinstance(value, str) and not value.strip():
            raise DataError(f"label {i} is an empty string; give text {i} a class name or drop it", index=i)
        if is_list and len(value) == 0:
            # As a file's record with an empty label list is: a missing label, not "no class".
            raise DataError(f"label {i} is an empty list (missing); give text {i} at least one class name "
                            "or drop it", index=i)
        if is_list:
            for name in value:
                if isinstance(name, str) and not name.strip():
                    raise DataError(f"label {i} holds an empty class name; remove it from the list", index=i)
                if _is_missing(name) or isinstance(name, (list, tuple, set, dict, np.ndarray)):
                    shown = "NaN" if isinstance(name, (float, np.floating)) else short(name)
                    raise DataError(f"label {i} holds {shown}, not a class name; "
                                    "pass a list of class names (str or int)", index=i)
        else:
            try:
                hash(_hashable(value))
            except TypeError:
                raise DataError(f"label {i} is a {type(value).__name__}, not a class name; "
                                "pass a class name (str or int)", index=i) from None
        verb = "holds" if is_list else "is"
        for name in value if is_list else [value]:
            kind = _class_name_type(name, i)
            if name_type is None:
                name_type = (kind, f"label {i} {verb} {kind.__name__} {short(_hashable(name))}")
            elif kind is not name_type[0]:
                raise DataError(f"label {i} {verb} {kind.__name__} {short(_hashable(name))} but {name_type[1]}; "
                                "use one type for all labels (all str or all int)", index=i)
        if is_list:
            # Merged, a repeated class would hide a typo or a join gone wrong (as in a file's record).
            seen = set()
            for name in map(_hashable, value):
                if name in seen:
                    raise DataError(f"label {i} names the class {short(name)} twice; name each class once",
                                    index=i)
                seen.add(name)
    return bool(multi_label)


def _flat_labels(labels: list) -> list:
    """Every class name of multi-label ``labels`` (lists of names), record after record."""
    return [name for row in labels for name in row]


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
            f"label {row} is {type(_hashable(labels[row])).__name__} {short(labels[row])} but label 0 is "
            f"{first.__name__} {short(labels[0])}; use one type for all labels (all str or all int)",
            index=row) from None


def dataset_from_lists(texts: Sequence[str], labels: Sequence, name: str = artifacts.LISTS_DATASET) -> TextDataset:
    """A one-split TextDataset from Python lists (labels: names, or lists of names)."""
    texts = as_list(texts, "dataset_from_lists", "texts", "texts")
    labels = as_list(labels, "dataset_from_lists", "labels", "labels")
    if len(texts) != len(labels):
        raise DataError(f"got {len(texts)} texts but {len(labels)} labels; pass one label per text")
    if not texts:
        raise DataError("no training texts were given; pass at least one text per class")
    check_texts(texts)
    multi_label = _check_labels(labels)
    if multi_label:
        # Ordered by their original values (2 before 10), as single-label classes are.
        names = [str(v) for v in _sorted_label_values(_flat_labels(labels))]
        column = {"labels": [[str(_hashable(n)) for n in row] for row in labels]}
    else:
        # Order classes by their original values (2 before 10), then name them as strings.
        names = [str(v) for v in _sorted_label_values(labels)]
        column = {"label": [str(_hashable(v)) for v in labels]}
    splits = datasets.DatasetDict({"train": datasets.Dataset.from_dict({"text": texts, **column})})
    return TextDataset(name, splits, names, multi_label=multi_label,
                       split_notes={"train": "given to Classifier.fit"})
