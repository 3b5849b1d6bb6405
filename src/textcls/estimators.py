"""One interface for every model textcls fits: neural models, TF-IDF models and the benchmark peers.

An ``Estimator`` is built from its configuration (a ``Preset`` here; a peer's seed and
parameters in ``benchmark/peers.py``) and then answers the same few calls, whatever it is:

- ``fit(dataset, *, run_dir=None, resume=False, progress=False, device="cpu")`` trains it on a
  ``TextDataset`` (its train split; a neural model also picks its best epoch on dev);
- ``predict_proba(texts, task_ids=None, *, device="cpu")``: ``[N, C]`` probabilities, columns
  in the order of the ``label_names`` of the dataset it was fitted on;
- ``state()``: ``(arrays, meta)``, numeric arrays (safetensors-ready) and JSON metadata;
  ``write_files(folder)`` writes any side file (a neural model's ``tokenizer.json``), and
  ``load_state(arrays, meta, folder)`` restores all of it into an estimator built from the
  same configuration. No pickles anywhere: loading runs no stored code;
- ``num_parameters()`` and ``fit_report()``: what the benchmarks record.

The ``Classifier`` (``api.py``), the CLI and the benchmark runner use only this interface; none
of them asks which kind of model it holds. A preset's estimator class comes from one table,
``ESTIMATORS`` (by ``Preset.kind``), as the registry picks a model class by family.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import contextlib
import contextvars
import logging
import math
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import torch

from . import artifacts
from .data.batching import flat_batches
from .data.padding import EVAL_MAX_PIECES
from .errors import CheckpointError, ConfigError, DataError, TextclsError
from .models.registry import INPUT_KEYS, Preset, accepts_arch_param, create_model, get_family, get_preset
from .recipe import Recipe
from .text.pipeline import TextPipeline

# Training's modules (the data preparation, which loads `datasets`, and the engine) are imported
# where they are used, so loading a run to predict imports neither.
if TYPE_CHECKING:
    from .data.records import TextDataset

# Documents per forward pass when predicting. The documents are sorted by length first, so a
# batch pads to its own longest text. Of 16 to 1,024 tried on MR at one thread (ad hoc, on the
# shared machine), 256 was the fastest for spe-cnn and within noise of the best for fasttext-bag.
PREDICT_BATCH = 256
# The dev scores of the kept epoch that a benchmark run records (single- and multi-label alike).
DEV_METRICS = ("accuracy", "macro_f1", "loss")

__all__ = ["Estimator", "PresetEstimator", "NeuralEstimator", "TfidfEstimator", "EnsembleEstimator", "ESTIMATORS", "estimator_for",
           "check_device", "torch_device"]


class Estimator(ABC):
    """The interface (see the module docstring). Learned attributes end in ``_``:
    ``num_classes_``, ``multi_label_`` and, for the benchmarks, ``train_seconds_`` (the
    training itself), ``epochs_run_``, ``best_epoch_`` (None without epoch selection),
    ``dev_metrics_`` (the dev scores of the kept epoch or grid value where dev chose one,
    single-label; else None) and
    ``embeddings_info_`` (pretrained vectors and their coverage, or None).
    """

    # Side files of a saved estimator, beside model.safetensors (load_state reads them).
    FILES: tuple[str, ...] = ()
    # Arrays of state() that may hold +-inf by design (never NaN); any other non-finite value
    # means a broken model.
    ALLOW_INF: tuple[str, ...] = ()
    # The arithmetic predict_proba runs in, as the benchmark reports it.
    precision = "fp32"
    # Whether fit(run_dir=...) writes a checkpoint after every epoch that fit(resume=True)
    # continues: only the engine's trainings, whose long runs may span sessions.
    resumable = False

    best_epoch_: int | None = None
    dev_metrics_: dict[str, float] | None = None
    embeddings_info_: dict | None = None

    # -- training and prediction ------------------------------------------------------
    def refuse_checkpoint_it_cannot_resume(self, name: str, run_dir, resume: bool) -> None:
        """For an estimator that writes no checkpoint (not ``resumable``): refuse ``resume`` into
        a ``run_dir`` that holds one. It is another model's (this one never wrote it), and
        training anyway would end with the saved run replacing it: the user's epochs lost."""
        if not resume or run_dir is None or self.resumable:
            return
        from .train.checkpoint import checkpoint_model

        ckpt_dir = Path(run_dir) / artifacts.CHECKPOINT_DIR
        if not (ckpt_dir / artifacts.CHECKPOINT_STATE).is_file():
            return
        other = checkpoint_model(ckpt_dir)
        whose = f"model '{other}'" if other else "a neural model"
        again = f"resume with model '{other}'" if other else "resume with the model that wrote it"
        raise CheckpointError(f"{ckpt_dir} holds a checkpoint of {whose}; '{name}' trains without checkpoints, so it "
                              f"cannot resume it: {again}, or train '{name}' into another run folder (the checkpoint "
                              "is kept)")

    @abstractmethod
    def fit(self, dataset: TextDataset, *, run_dir=None, resume: bool = False, progress: bool = False,
            device: str = "cpu") -> "Estimator":
        """Train on ``dataset``'s train split (selecting on dev where the preset does); returns self."""

    @abstractmethod
    def predict_proba(self, texts: Sequence[str], task_ids: Sequence[int] | None = None, *,
                      device: str = "cpu") -> np.ndarray:
        """``[N, C]`` probabilities of every class for each text (per task where ``uses_tasks``)."""

    @property
    def uses_tasks(self) -> bool:
        """Whether ``predict_proba`` needs the task of every text (one head per task)."""
        return False

    @property
    def dev_fraction(self) -> float:
        """The share of train carved as dev when the data has no dev split."""
        return Recipe().dev_fraction

    # -- persistence --------------------------------------------------------------------
    @abstractmethod
    def state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """The learned state as named arrays (model.safetensors) and JSON metadata."""

    def write_files(self, folder: Path) -> None:
        """Write the side files ``FILES`` into ``folder`` (none by default)."""

    def side_arrays(self) -> dict[str, np.ndarray]:
        """The side files ``FILES`` as uint8 arrays, by file name, for a container that keeps
        them inside its own weights file (an ensemble's members); ``load_state`` takes them back
        among its arrays in place of the files."""
        return {}

    @abstractmethod
    def load_state(self, arrays: dict[str, np.ndarray], meta: dict[str, Any], folder: Path | None = None):
        """Restore what ``state`` and ``write_files`` saved; returns self."""

    # -- what the benchmarks record -------------------------------------------------------
    @abstractmethod
    def num_parameters(self) -> dict[str, int]:
        """``total``, ``trainable``, ``embedding`` and ``non_embedding`` parameter counts."""

    @abstractmethod
    def settings(self) -> dict[str, Any]:
        """The configuration it trained with, as JSON."""

    def epoch_seconds(self) -> float | None:
        """Seconds of training per epoch (the whole fit divided by its epochs, unless a
        subclass knows the training pass of each epoch)."""
        if self.train_seconds_ is None or not self.epochs_run_:
            return None
        return self.train_seconds_ / self.epochs_run_

    def fit_report(self) -> dict[str, Any]:
        """What a benchmark run records of the fit."""
        return {"train_loop_seconds": self.train_seconds_, "epochs_run": self.epochs_run_,
                "best_epoch": self.best_epoch_, "dev_metrics": self.dev_metrics_, "epoch_seconds": self.epoch_seconds(),
                "embeddings": self.embeddings_info_, "settings": self.settings(), "precision": self.precision}

    # -- shared helpers ------------------------------------------------------------------
    def _learn_labels(self, dataset: TextDataset) -> None:
        if not dataset.multi_label and len(dataset.label_names) < 2:
            shown = f" ('{dataset.label_names[0]}')" if dataset.label_names else ""
            raise DataError(f"{dataset.name}: the training data holds a single class{shown}; "
                            "a classifier needs records of at least two classes")
        if dataset.multi_label and not dataset.label_names:
            raise DataError(f"{dataset.name}: no training record has a label (every label list is empty); "
                            "give the records their class names")
        if dataset.multi_label and "train" in dataset.splits:
            # The multi-label twin of the single-class refusal: when every record carries the same
            # classes, each class's head sees one target only and would predict 1.0 (or 0.0) everywhere.
            label_sets = {frozenset(labels) for labels in dataset["train"][dataset.label_column]}
            if len(label_sets) == 1:
                same = sorted(dataset.label_names[i] if isinstance(i, int) else str(i) for i in next(iter(label_sets)))
                raise DataError(f"{dataset.name}: every training record carries the same classes ({', '.join(same)}); "
                                "a multi-label classifier needs records whose label lists differ")
        self.num_classes_ = len(dataset.label_names)
        self.multi_label_ = bool(dataset.multi_label)
        self.untrained_classes_ = untrained_classes(dataset)
        if self.untrained_classes_ and not _MEMBER_FIT.get():
            log.warning("%s", untrained_classes_line(dataset.name, self.untrained_classes_))


log = logging.getLogger("textcls")
# True while an ensemble fits its members: the ensemble has said it once for them all.
_MEMBER_FIT = contextvars.ContextVar("textcls_member_fit", default=False)


def untrained_classes(dataset: "TextDataset") -> dict[str, dict[str, int]]:
    """The classes that dev or test hold and train does not, each with its record count by split.

    Decision (practitioner audit): such a class is warned about, in one line on the ``textcls``
    logger (so the CLI prints it as it is, and Python callers can route or silence it), and
    training goes on with the class kept in ``label_names``. It is not refused: scoring a
    held-out class on purpose is a user's choice, and the test metrics stay honest (its records
    count, its recall is 0). It is not dropped either: leaving its test records out would raise
    the score silently, and the data layer never drops or merges records without saying so.
    Until this check, the only trace was a metrics note that the class is never predicted."""
    if "train" not in dataset.splits:
        return {}
    from .data.prepare import column_values

    def counts(split: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for value in column_values(dataset[split], dataset.label_column):
            for name in value if isinstance(value, list) else [value]:
                out[name] = out.get(name, 0) + 1
        return out

    trained = counts("train")
    found: dict[str, dict[str, int]] = {}
    for split in dataset.splits:
        if split == "train":
            continue
        for name, n in counts(split).items():
            if name not in trained:
                found.setdefault(name, {})[split] = n
    order = {name: i for i, name in enumerate(dataset.label_names)}
    return dict(sorted(found.items(), key=lambda item: order.get(item[0], len(order))))


def untrained_classes_line(name: str, untrained: dict[str, dict[str, int]]) -> str:
    """"news.csv: class 'Politics' has 1 test record and no training record; the model cannot learn it"."""
    def records(by_split: dict[str, int]) -> str:
        parts = [f"{n} {split} record{'s' if n != 1 else ''}" for split, n in by_split.items()]
        return " and ".join(parts)

    if len(untrained) == 1:
        (cls, by_split), = untrained.items()
        return (f"{name}: class {cls!r} has {records(by_split)} and no training record; the model cannot learn it "
                "(add training records of it, or leave it out of the evaluation data)")
    shown = ", ".join(f"{cls!r} ({records(by_split)})" for cls, by_split in list(untrained.items())[:10])
    more = f" and {len(untrained) - 10} more" if len(untrained) > 10 else ""
    return (f"{name}: classes {shown}{more} have no training record; the model cannot learn them "
            "(add training records of them, or leave them out of the evaluation data)")


class PresetEstimator(Estimator):
    """An estimator configured by a registry ``Preset`` (neural and TF-IDF models)."""

    def __init__(self, preset: Preset):
        self.preset = preset
        self.model_ = None
        self.pipeline_: TextPipeline | None = None
        self.fit_result_ = None
        self.data_report_: dict = {}
        self.train_seconds_: float | None = None
        self.epochs_run_: int | None = None

    @property
    def uses_tasks(self) -> bool:
        return self.preset.arch.get("num_tasks", 1) > 1

    @property
    def dev_fraction(self) -> float:
        return self.preset.recipe.dev_fraction

    def settings(self) -> dict[str, Any]:
        return self.preset.to_dict()

    def refuse_unread_settings(self) -> None:
        """Refuse a setting this estimator would not read, from the preset alone: ``fit`` calls it
        first, and ``textcls train`` before it reads the data, so that a refusal does not wait for
        a large file to load. A neural model reads every setting (none to refuse here)."""

    def _preset_for(self, dataset: TextDataset) -> Preset:
        """The preset with one classifier head per task for multi-task data, when the model has
        them; a model without them trains on the tasks pooled (the task ids reach it, unused)."""
        if dataset.task_names and accepts_arch_param(self.preset, "num_tasks"):
            return self.preset.with_overrides(num_tasks=len(dataset.task_names))
        return self.preset


class NeuralEstimator(PresetEstimator):
    """A ``TextModel`` behind its text pipeline, trained by the engine."""

    FILES = (artifacts.TOKENIZER,)
    resumable = True

    @property
    def precision(self) -> str:
        return self.preset.recipe.precision

    def fit(self, dataset, *, run_dir=None, resume=False, progress=False, device="cpu",
            watch_splits: Sequence[str] = ()) -> "NeuralEstimator":
        """Train with the engine, keeping the best epoch on dev. ``watch_splits`` (say
        ``("test",)``) are scored after every epoch and never read to keep one: their accuracy
        by epoch is ``fit_report()["curves"][name]`` (the engine's ``watch_loaders``), for a
        diagnosis of what choosing the epoch on that split would give."""
        from .data.prepare import prepare, resolve_recipe
        from .data.records import records_digest
        from .data.splits import ensure_dev
        from .train import distributed
        from .train.engine import fit as engine_fit

        device = torch_device(device)  # a device this machine lacks is refused before any data is prepared
        self._ready_on = None
        self._learn_labels(dataset)
        preset = self._preset_for(dataset)
        if isinstance(watch_splits, str):
            raise ConfigError(f"watch_splits takes a sequence of split names, e.g. ({watch_splits!r},), not a string")
        dataset = ensure_dev(dataset, fraction=preset.recipe.dev_fraction, seed=preset.recipe.seed)
        absent = [name for name in watch_splits if name in ("train", "dev") or name not in dataset.splits]
        if absent:
            raise ConfigError(f"{dataset.name}: cannot watch split {absent[0]!r} by epoch; watch a split the "
                              f"data holds besides train and dev ({', '.join(dataset.splits)})")
        prepared = prepare(dataset, preset.inputs, seed=preset.recipe.seed)
        # Recipe fields the preset leaves to the data (fasttext-bag's epochs and lr, chosen like
        # a fastText user's from the corpus) and precision "auto" (to the device) are resolved
        # here, and the run saves the resolved values.
        recipe = resolve_recipe(preset.recipe, prepared).resolve_precision(
            device.type, cuda_bf16=device.type == "cuda" and torch.cuda.is_bf16_supported())
        self.preset = preset = replace(preset, recipe=recipe)
        self.pipeline_, self.data_report_ = prepared.pipeline, prepared.report
        self.embeddings_info_ = prepared.report.get("embeddings")
        matrix = prepared.embeddings.matrix if prepared.embeddings is not None else None
        torch.manual_seed(preset.recipe.seed)
        self.model_ = create_model(preset, num_classes=prepared.num_classes,
                                   vocab_size=prepared.pipeline.vocab_size, embeddings=matrix)
        recipe = preset.recipe
        train_loader = prepared.loader("train", recipe.batch_size, shuffle=True, seed=recipe.seed,
                                       num_replicas=distributed.world_size(), rank=distributed.rank())
        dev_loader = prepared.loader("dev", eval_batch(recipe.batch_size), max_pieces=EVAL_MAX_PIECES)
        watch = {name: prepared.loader(name, eval_batch(recipe.batch_size), max_pieces=EVAL_MAX_PIECES)
                 for name in watch_splits}
        self.fit_result_ = result = engine_fit(
            self.model_, train_loader, dev_loader, recipe, multi_label=dataset.multi_label,
            num_classes=prepared.num_classes, label_names=dataset.label_names,
            class_counts=prepared.class_counts(), run_dir=run_dir, resume=resume, progress=progress,
            device=device, watch_loaders=watch or None, model_name=preset.name,
            data_digest=records_digest(dataset) if run_dir is not None else None)  # only a checkpoint reads it
        self.watch_splits_ = tuple(watch_splits)
        self.model_.to("cpu")
        self.train_seconds_, self.epochs_run_, self.best_epoch_ = (result.train_seconds, result.epochs_run,
                                                                   result.best_epoch)
        # The kept epoch's dev scores, so that a setting can be chosen per dataset on dev (the
        # way papers "set according to datasets"), never on test.
        self.dev_metrics_ = {name: float(value) for name, value in result.best_metrics.items()
                             if name in DEV_METRICS and value is not None and math.isfinite(value)}
        return self

    def fit_report(self) -> dict[str, Any]:
        """The base report, ``curves`` (each watched split's accuracy by epoch; {} without; None
        for the epochs of a checkpoint made without watching) and ``watch_seconds`` (by epoch, the
        wall and CPU seconds of its watched passes, which the seconds of the process that ran the
        epoch include), both read off the fit's history."""
        history = self.fit_result_.history if self.fit_result_ is not None else []
        return {**super().fit_report(),
                "curves": {name: [row.get(f"{name}_accuracy") for row in history]
                           for name in getattr(self, "watch_splits_", ())},
                "watch_seconds": [(row.get("watch_seconds") or 0.0, row.get("watch_cpu_seconds") or 0.0)
                                  for row in history]}

    def epoch_seconds(self) -> float | None:
        """The mean training pass of an epoch (no vocabulary, vectors or dev evaluation)."""
        history = self.fit_result_.history if self.fit_result_ is not None else None
        times = [row["train_seconds"] for row in history or () if row.get("train_seconds") is not None]
        return sum(times) / len(times) if times else super().epoch_seconds()

    def predict_proba(self, texts, task_ids=None, *, device="cpu") -> np.ndarray:
        """Probabilities ``[N, C]`` float32. Flat models take the lean path: one batched
        tokenisation into flat arrays, documents sorted by length into batches of
        ``PREDICT_BATCH`` (and at most ``EVAL_MAX_PIECES`` padded tokens) padded with numpy, the model called directly under
        ``torch.inference_mode`` (set to eval mode and moved once, not per call), and the rows
        put back in input order. Hierarchical models go through the engine's loader."""
        texts = list(texts)
        if self.preset.inputs.get("shape", "flat") != "flat":
            return self._predict_with_loader(texts, task_ids, device)
        model, device = self._inference_model(device)
        flat = self.pipeline_.encode_flat(texts)
        out = np.empty((len(texts), self.num_classes_), dtype=np.float32)
        switch = getattr(model, "attention_maps", None)  # only the probabilities are needed
        with torch.inference_mode(), (switch(False) if callable(switch) else contextlib.nullcontext()), \
                _autocast(self.preset.recipe.precision, device):
            for rows, batch in flat_batches(flat.ids, flat.lengths, bigrams=flat.bigrams,
                                            bigram_lengths=flat.bigram_lengths, task_ids=task_ids,
                                            batch_size=PREDICT_BATCH, max_pieces=EVAL_MAX_PIECES,
                                            device=device):
                logits = model(batch).logits.float()
                probs = torch.sigmoid(logits) if self.multi_label_ else torch.softmax(logits, dim=-1)
                out[rows] = probs.cpu().numpy()
        return out

    def _inference_model(self, device) -> tuple[torch.nn.Module, torch.device]:
        """The model in eval mode on ``device``; moved only when the device changes."""
        device = torch_device(device)
        if getattr(self, "_ready_on", None) != device:
            self.model_.to(device)
            self._ready_on = device
        if self.model_.training:
            self.model_.eval()
        return self.model_, device

    def _predict_with_loader(self, texts, task_ids, device) -> np.ndarray:
        from .data.batching import make_loader
        from .data.prepare import encode_texts
        from .train.engine import predict_proba as engine_predict_proba

        encoded, _ = encode_texts(self.pipeline_, texts, self.preset.inputs.get("shape", "flat"), tasks=task_ids)
        loader = make_loader(encoded, eval_batch(self.preset.recipe.batch_size), shuffle=False,
                             max_pieces=EVAL_MAX_PIECES)
        self._ready_on = None  # the engine moves the model itself
        return engine_predict_proba(self.model_, loader, multi_label=self.multi_label_,
                                    precision=self.preset.recipe.precision, device=torch_device(device))

    def num_parameters(self) -> dict[str, int]:
        total = sum(p.numel() for p in self.model_.parameters())
        trainable = sum(p.numel() for p in self.model_.parameters() if p.requires_grad)
        embedding = sum(m.weight.numel() for m in self.model_.modules() if isinstance(m, torch.nn.Embedding))
        return {"total": total, "trainable": trainable, "embedding": embedding, "non_embedding": total - embedding}

    def state(self):
        arrays = {k: v.detach().cpu().contiguous().numpy() for k, v in self.model_.state_dict().items()}
        meta = {"vocab_size": self.pipeline_.vocab_size, "pipeline": self.pipeline_.settings(),
                "num_classes": self.num_classes_, "multi_label": self.multi_label_}
        return arrays, meta

    def write_files(self, folder: Path) -> None:
        artifacts.atomic_write_bytes(Path(folder) / artifacts.TOKENIZER,
                                     self.pipeline_.tokenizer.to_str(pretty=True).encode("utf-8"))

    def side_arrays(self) -> dict[str, np.ndarray]:
        text = self.pipeline_.tokenizer.to_str().encode("utf-8")
        return {artifacts.TOKENIZER: np.frombuffer(text, dtype=np.uint8).copy()}

    def load_state(self, arrays, meta, folder=None) -> "NeuralEstimator":
        folder = Path(folder) if folder is not None else None
        weights = folder / artifacts.WEIGHTS if folder is not None else "the state"
        arrays = dict(arrays)
        carried = arrays.pop(artifacts.TOKENIZER, None)  # side_arrays(): inside the weights file
        tokenizer = folder / artifacts.TOKENIZER if folder is not None else Path(artifacts.TOKENIZER)
        if carried is None and not tokenizer.is_file():
            raise CheckpointError(f"{tokenizer}: file is missing; the run directory is incomplete")
        source = tokenizer if carried is None else f"{weights}: array '{artifacts.TOKENIZER}'"
        try:
            if carried is None:
                self.pipeline_ = TextPipeline.load(tokenizer.parent, meta["pipeline"])
            else:
                text = np.asarray(carried, dtype=np.uint8).tobytes().decode("utf-8")
                self.pipeline_ = TextPipeline.from_json(text, meta["pipeline"], where=source)
        except CheckpointError:
            raise
        except Exception as exc:  # tokenizers raises plain Exceptions on bad JSON
            raise CheckpointError(f"{source}: cannot load the tokenizer ({exc}); it is corrupt")
        with _state_errors(weights):
            self.num_classes_, self.multi_label_ = int(meta["num_classes"]), bool(meta["multi_label"])
            self.model_ = create_model(self.preset, num_classes=self.num_classes_, vocab_size=meta["vocab_size"],
                                       from_checkpoint=True)
            self.model_.load_state_dict({k: torch.from_numpy(v) for k, v in arrays.items()}, strict=True)
        self.model_.eval()
        self._ready_on = torch.device("cpu")
        return self


class TfidfEstimator(PresetEstimator):
    """A TF-IDF model (``models/tfidf.py``), or a sentence-vector sibling (static-lr,
    static-finetune: ``models/static_*.py``, given their vectors here; minilm-encoder-lr, given its
    encoder here), fitted on the raw training texts: no
    epochs, no text pipeline; a preset with a grid (C or alpha) chooses the value on dev (carved
    from train as for the neural models when the data has none) and records it in its preset."""

    ALLOW_INF = ("bias",)  # a class absent from training: probability exactly 0 (1 if always on)
    precision = "fp64"

    def fit(self, dataset, *, run_dir=None, resume=False, progress=False, device="cpu") -> "TfidfEstimator":
        from .data.prepare import column_values, label_targets, target_array
        from .data.splits import ensure_dev

        self.refuse_checkpoint_it_cannot_resume(self.preset.name, run_dir, resume)
        self.refuse_unread_settings()
        self._learn_labels(dataset)
        self.preset = self._preset_for(dataset)
        self.model_ = create_model(self.preset, num_classes=len(dataset.label_names))
        if hasattr(self.model_, "use_vectors"):  # static-lr / -finetune: the distilled vectors, read once and cached
            from .text.embeddings import static_sentence_vectors

            self.model_.use_vectors(*static_sentence_vectors(self.model_.vectors))
        self._hand_encoder()
        if self.model_.search_grid()[1]:
            dataset = ensure_dev(dataset, fraction=self.preset.recipe.dev_fraction, seed=self.preset.recipe.seed)

        def texts_and_targets(split: str):
            targets = label_targets(dataset[split], dataset.label_names, dataset.multi_label, f"{dataset.name}/{split}")
            return column_values(dataset[split], "text"), target_array(targets, len(dataset.label_names), dataset.multi_label)

        dev = dict(zip(("dev_texts", "dev_y"), texts_and_targets("dev"))) if "dev" in dataset.splits else {}
        start = time.perf_counter()
        features = getattr(self.model_, "sentence_features", None)  # minilm-encoder-lr: a bar while it encodes
        if features is not None:
            features.progress = progress
        self.model_.fit(*texts_and_targets("train"), **dev, seed=self.preset.recipe.seed)
        if features is not None:
            features.progress = False
        self.train_seconds_ = time.perf_counter() - start
        # TF-IDF reads its training texts once; static-finetune runs epochs and keeps one on dev.
        selection = getattr(self.model_, "selection_", None) or {}
        self.epochs_run_ = int(selection.get("epochs_run", 1))
        self.best_epoch_ = selection.get("chosen") if selection.get("parameter") == "epoch" else None
        # The chosen value's dev scores (keyed by str: an epoch's int, a grid's float repr); the
        # score is micro-F1 on multi-label data, which is not an accuracy.
        chosen_scores = (selection.get("dev") or {}).get(str(selection.get("chosen")))
        self.dev_metrics_ = ({"accuracy": float(chosen_scores["score"]), "loss": float(chosen_scores["log_loss"])}
                             if chosen_scores and not self.multi_label_ else None)
        # The value chosen on dev goes into the preset: config.json and the benchmarks record it.
        # Not through with_overrides: the choice is not the user's setting (``overridden``), which a
        # second fit of this preset would refuse beside the grid.
        self.preset = replace(self.preset, arch={**self.preset.arch, **self.model_.chosen_params()})
        return self

    def refuse_unread_settings(self) -> None:
        _refuse_ignored_recipe(self.preset)
        _refuse_ignored_inputs(self.preset)
        if self.preset.inputs.get("embeddings"):
            raise ConfigError(f"model '{self.preset.name}' is a classic model and reads no pretrained word vectors "
                              f"(got embeddings={self.preset.inputs['embeddings']!r}); drop --embeddings, or pick a "
                              "neural preset that lists vectors in `textcls list-models`")
        # TF-IDF: C beside its grid, NB's alpha on LR. The refusal reads the parameters as the model
        # resolves them, and building a classic model reads no data, vectors or encoder (those are
        # handed to it after); the class count does not enter the refusal.
        refuse = getattr(create_model(self.preset, num_classes=2), "refuse_ignored_params", None)
        if refuse is not None:
            refuse(self.preset)

    def predict_proba(self, texts, task_ids=None, *, device="cpu") -> np.ndarray:
        return self.model_.predict_proba(list(texts))

    def num_parameters(self) -> dict[str, int]:
        n = int(self.model_.num_parameters())
        frozen, embedding = int(self.model_.frozen_parameters()), int(self.model_.embedding_parameters())
        return {"total": n + frozen, "trainable": n, "embedding": embedding, "non_embedding": n + frozen - embedding}

    def state(self):
        return self.model_.state()

    def load_state(self, arrays, meta, folder=None) -> "TfidfEstimator":
        weights = Path(folder) / artifacts.WEIGHTS if folder is not None else "the state"
        with _state_errors(weights):
            self.model_ = get_family(self.preset.family).from_state(arrays, meta)
            self._hand_encoder()
        self.num_classes_, self.multi_label_ = self.model_.num_classes, self.model_.multi_label_
        return self

    def _hand_encoder(self) -> None:
        """minilm-encoder-lr: the packaged MiniLM (read once per process), which its runs do not
        store, run in the recipe's precision ("auto" is resolved when it fits and saved)."""
        if hasattr(self.model_, "use_encoder"):
            from .text.embeddings import minilm_encoder

            self.preset = replace(self.preset, recipe=self.preset.recipe.resolve_precision("cpu"))
            self.precision = self.preset.recipe.precision
            self.model_.use_encoder(*minilm_encoder(self.model_.layers),
                                    bf16=self.precision == "bf16")


# What a classic model's fit reads of its recipe: the seed, the size of a dev split it carves,
# and (minilm-encoder-lr) the precision its encoder runs in. An --epochs or --lr would be ignored.
CLASSIC_RECIPE_FIELDS = frozenset({"seed", "dev_fraction", "precision"})


def _refuse_ignored_recipe(preset: Preset) -> None:
    """Refuse a recipe field a classic model would ignore: one the user gave (``preset.overridden``),
    whatever its value, or one that differs from the registered preset's. The value alone cannot
    tell: the classic presets' placeholder recipe has epochs=1, so ``epochs=1`` (the usual quick
    setting) compared equal, was accepted, written into config.json and ignored."""
    family = get_family(preset.family)
    # Only a frozen encoder (use_encoder) runs in a precision: TF-IDF and static vectors fit in
    # their own, and a --precision bf16 there would be recorded in config.json but not used.
    reads = CLASSIC_RECIPE_FIELDS - ({"precision"} if not hasattr(family, "use_encoder") else set())
    try:
        registered = get_preset(preset.name).recipe
    except ConfigError:  # a preset made in code: no registered recipe to compare with
        registered = None
    changed = preset.recipe.changed_fields(registered, reads, preset.overridden)
    if not changed:
        return
    shown = ", ".join(sorted(reads)[:-1]) + f" and {sorted(reads)[-1]}"
    # A family that trains epochs of its own (static-finetune) names the parameters that set them.
    own = getattr(family, "RECIPE_PARAMETERS", {})
    if changed[0] in own:
        value = getattr(preset.recipe, changed[0])
        raise ConfigError(f"model '{preset.name}' is a classic model that trains epochs of its own, set by its "
                          f"parameters ({', '.join(own.values())}), not by the recipe; '{changed[0]}' cannot be set "
                          f"on it (of the recipe, only {shown} can): set its parameter '{own[changed[0]]}' instead "
                          f"(CLI: --set {own[changed[0]]}={value}; Python: params={{'{own[changed[0]]}': {value}}})")
    kind = " that trains epochs of its own" if own else ", fitted without epochs or batches"
    raise ConfigError(f"model '{preset.name}' is a classic model{kind}; "
                      f"'{changed[0]}' cannot be set on it (only {shown} can): drop it")


def _refuse_ignored_inputs(preset: Preset) -> None:
    """Refuse a text-pipeline setting (``max_length``, ``lowercase``, ...) on a classic model: it
    reads each raw text whole with its own tokenizer (TF-IDF's vectorizer, the static vectors' or
    MiniLM's word pieces) and builds no pipeline, so a ``max_length=2`` trained the same model and
    was written into config.json's inputs as if applied. Given by the user, or differing from the
    registered preset's, whatever the value; ``embeddings`` has its own refusal (in fit)."""
    given = set(preset.overridden & INPUT_KEYS)
    try:
        registered = get_preset(preset.name).inputs
        given.update(k for k, v in preset.inputs.items() if k not in registered or registered[k] != v)
    except ConfigError:  # a preset made in code: only what it was given
        pass
    given.discard("embeddings")
    if given:
        name = sorted(given)[0]
        # The frozen MiniLM encoder cuts its word pieces itself: the setting a max_length meant.
        instead = ("set its parameter 'max_seq_length' instead (CLI: --set max_seq_length=N)"
                   if name == "max_length" and accepts_arch_param(preset, "max_seq_length") else "drop it")
        raise ConfigError(f"model '{preset.name}' is a classic model, which reads each text whole with its own "
                          f"tokenizer; '{name}' cannot be set on it (no text-pipeline setting can): {instead}")


class EnsembleEstimator(PresetEstimator):
    """Presets fitted on the same split, their probabilities averaged with weights chosen on
    dev (``models/ensemble.py``). Each member is its own estimator, built from its preset with
    the ensemble's seed; the saved run holds every member's arrays (and side files, through
    ``side_arrays``) under ``m<i>.`` in one weights file, and each member's whole preset and
    metadata in the JSON, so the run loads after a member preset is renamed or removed.
    ``run_dir`` and ``resume`` are not passed on: the members train without checkpoints (each
    takes seconds to a minute), so a resumed fit trains them again."""

    STATE_FORMAT = "textcls.ensemble/2"
    # Runs saved before the members were calibrated (linear pooling, no temperatures) still load.
    STATE_FORMAT_BEFORE_CALIBRATION = "textcls.ensemble/1"
    precision = "mixed"

    @property
    def ALLOW_INF(self) -> tuple[str, ...]:  # noqa: N802 -- the name every estimator answers to
        """Each member's infinite-by-design arrays (a TF-IDF bias), under its prefix; named for
        every kind a member may be, as the members' presets may no longer be registered."""
        kinds = [kind for kind in ESTIMATORS.values() if kind is not EnsembleEstimator]
        return tuple(f"m{i}.{name}" for i in range(len(self.preset.arch["members"]))
                     for kind in kinds for name in kind.ALLOW_INF)

    @property
    def uses_tasks(self) -> bool:
        return any(member.uses_tasks for member in getattr(self, "members_", ()))

    def refuse_unread_settings(self) -> None:
        # By what the user gave (``overridden``) as well as by value.
        family = get_family(self.preset.family)
        family.check_recipe(self.preset.name, self.preset.recipe, self.preset.overridden)
        family.check_inputs(self.preset.name, self.preset.inputs, self.preset.overridden)

    def fit(self, dataset, *, run_dir=None, resume=False, progress=False, device="cpu") -> "EnsembleEstimator":
        from .data.prepare import column_values, label_targets, target_array
        from .data.splits import ensure_dev
        from .models.ensemble import announce_member

        self.refuse_checkpoint_it_cannot_resume(self.preset.name, run_dir, resume)
        self.refuse_unread_settings()
        self._learn_labels(dataset)
        # The members' training split decides the small-corpus members: with a dev split carved
        # here or by the caller (the benchmark runner carves its own), the same texts count.
        dataset = ensure_dev(dataset, fraction=self.preset.recipe.dev_fraction, seed=self.preset.recipe.seed)
        self.preset = self._with_small_corpus_members(dataset)
        self.model_ = create_model(self.preset, num_classes=self.num_classes_)
        members = [estimator_for(preset) for preset in self._member_presets()]  # all checked before any trains
        start = time.perf_counter()
        dev_texts, dev_probabilities = column_values(dataset["dev"], "text"), []
        for index, member in enumerate(members, 1):
            announce_member(index, len(members), member.preset.name, progress)
            with _member_errors(member.preset.name):
                quiet = _MEMBER_FIT.set(True)
                try:
                    member.fit(dataset, progress=progress, device=device)
                finally:
                    _MEMBER_FIT.reset(quiet)
                dev_tasks = dataset.task_ids("dev") if member.uses_tasks else None
                dev_probabilities.append(member.predict_proba(dev_texts, dev_tasks, device=device))
        self.members_ = members
        targets = label_targets(dataset["dev"], dataset.label_names, dataset.multi_label, f"{dataset.name}/dev")
        self.model_.choose_weights(dev_probabilities, target_array(targets, self.num_classes_, dataset.multi_label),
                                   dataset.multi_label)
        self.train_seconds_ = time.perf_counter() - start
        self.epochs_run_ = 1
        self.embeddings_info_ = next((m.embeddings_info_ for m in self.members_ if m.embeddings_info_), None)
        return self

    def _with_small_corpus_members(self, dataset) -> Preset:
        """The preset with its ``small_corpus_members`` decided for this training split: those
        whose word-piece limit the split's texts stay within join ``members``, in place of
        ``small_corpus_replaces`` when any joins; the saved run
        records the members it used, and no rule left to apply."""
        from .data.prepare import column_values
        from .text.embeddings import minilm_word_pieces

        small = self.preset.arch.get("small_corpus_members") or {}
        if not small:
            return self.preset
        # Counted only until past the largest limit: a long corpus is over it after a few chunks.
        pieces = minilm_word_pieces(column_values(dataset["train"], "text"), stop_above=max(small.values()))
        added = [name for name, limit in small.items() if pieces <= limit]
        replaced = list(self.preset.arch.get("small_corpus_replaces") or []) if added else []
        self.small_corpus_ = {"word_pieces": pieces, "limits": dict(small), "added": added, "replaced": replaced}
        kept = [name for name in self.preset.arch["members"] if name not in replaced]
        return self.preset.with_overrides(members=[*kept, *added], small_corpus_members=None,
                                          small_corpus_replaces=None)

    def _member_presets(self) -> list[Preset]:
        """Each member's registered preset with the ensemble's seed; an unknown name or a
        nested ensemble is refused here, before any member trains."""
        presets = []
        for name in self.model_.members:
            preset = get_preset(name).with_overrides(seed=self.preset.recipe.seed)
            if preset.kind == "ensemble":
                raise ConfigError(f"ensemble '{self.preset.name}': member '{name}' is itself an ensemble; "
                                  "list the presets it is made of instead")
            presets.append(preset)
        return presets

    def predict_proba(self, texts, task_ids=None, *, device="cpu") -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.num_classes_), dtype=np.float32)
        return self.model_.combine([member.predict_proba(texts, task_ids if member.uses_tasks else None,
                                                         device=device) for member in self.members_])

    def settings(self) -> dict[str, Any]:
        return {**self.preset.to_dict(), "weights": self.weights(),
                "members": [member.settings() for member in getattr(self, "members_", ())],
                **({"small_corpus": self.small_corpus_} if hasattr(self, "small_corpus_") else {})}

    def weights(self) -> dict[str, float] | None:
        """Each member's weight, by preset name (None before fitting)."""
        chosen = getattr(self.model_, "weights_", None)
        return None if chosen is None else {m: float(w) for m, w in zip(self.model_.members, chosen)}

    def num_parameters(self) -> dict[str, int]:
        counts = [member.num_parameters() for member in self.members_]
        return {key: sum(c[key] for c in counts) for key in ("total", "trainable", "embedding", "non_embedding")}

    def state(self):
        arrays, members = {}, []
        for i, member in enumerate(self.members_):
            member_arrays, member_meta = member.state()
            arrays.update({f"m{i}.{key}": value for key, value in {**member_arrays, **member.side_arrays()}.items()})
            members.append({"preset": member.preset.to_dict(), "state": member_meta})
        meta = {"format": self.STATE_FORMAT, "num_classes": self.num_classes_, "multi_label": self.multi_label_,
                "weights": [float(w) for w in self.model_.weights_], "dev_log_loss": self.model_.dev_log_loss_,
                "temperatures": [float(t) for t in self.model_.temperatures_], "members": members}
        return arrays, meta

    def load_state(self, arrays, meta, folder=None) -> "EnsembleEstimator":
        weights = Path(folder) / artifacts.WEIGHTS if folder is not None else "the state"
        if meta.get("format") not in (self.STATE_FORMAT, self.STATE_FORMAT_BEFORE_CALIBRATION):
            raise CheckpointError(f"{weights}: ensemble state has format {meta.get('format')!r}, expected "
                                  f"{self.STATE_FORMAT!r}; re-save it with this textcls")
        with _state_errors(weights):
            self.num_classes_, self.multi_label_ = int(meta["num_classes"]), bool(meta["multi_label"])
            self.model_ = create_model(self.preset, num_classes=self.num_classes_)
            count = len(self.model_.members)
            prefixes = {key.split(".", 1)[0] for key in arrays}
            if len(meta["members"]) != count or len(meta["weights"]) != count or prefixes - {f"m{i}" for i in
                                                                                            range(count)}:
                raise CheckpointError(f"the state holds {len(meta['members'])} members, {len(meta['weights'])} "
                                      f"weights and arrays of {sorted(prefixes)}, but the ensemble lists {count} "
                                      "members; the run is corrupt")
            calibrated = meta["format"] != self.STATE_FORMAT_BEFORE_CALIBRATION
            self.model_.restore(meta["weights"], meta["temperatures"] if calibrated else None,
                                multi_label=self.multi_label_, dev_log_loss=meta.get("dev_log_loss"))
            self.members_ = []
            for i, saved in enumerate(meta["members"]):
                own = {k[len(f"m{i}."):]: v for k, v in arrays.items() if k.startswith(f"m{i}.")}
                with _member_errors(saved["preset"].get("name", f"member {i}"), CheckpointError):
                    member = estimator_for(Preset.from_dict(saved["preset"]))
                    self.members_.append(member.load_state(own, saved["state"], None))
        return self


@contextlib.contextmanager
def _member_errors(name: str, only: type[Exception] = TextclsError):
    """An ensemble member's one-line error, prefixed with the member it came from."""
    try:
        yield
    except only as exc:
        raise type(exc)(f"ensemble member '{name}': {exc}", index=getattr(exc, "index", None)) from None


# A preset's estimator, by its kind.
ESTIMATORS: dict[str, type[PresetEstimator]] = {"neural": NeuralEstimator, "classic": TfidfEstimator,
                                                 "ensemble": EnsembleEstimator}


def estimator_for(preset: Preset) -> PresetEstimator:
    """A fresh, unfitted estimator for ``preset``."""
    return ESTIMATORS[preset.kind](preset)


def eval_batch(batch_size: int) -> int:
    """The most documents an inference pass batches (at least 256: no gradients are kept);
    ``data.padding.EVAL_MAX_PIECES`` bounds its padded tokens as well."""
    return max(256, batch_size)


def _autocast(precision: str, device: torch.device):
    """bf16 autocast for a bf16 recipe (the weights stay fp32), else nothing."""
    if precision == "bf16":
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


@contextlib.contextmanager
def _state_errors(where):
    """A state that does not fit its model is a CheckpointError naming ``where``."""
    try:
        yield
    except CheckpointError as exc:
        raise CheckpointError(f"{where}: {exc}") from None
    except (KeyError, ValueError, TypeError, RuntimeError) as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise CheckpointError(f"{where}: does not match config.json ({first}); retrain or restore the run") from None


def check_device(device: str, option: str = "--device") -> None:
    """Refuse a device this machine does not have (a one-line ConfigError naming ``option``),
    before any data is read or any tensor is moved."""
    if device in ("cpu", "auto"):
        return
    if not isinstance(device, str) or device != "cuda" and not (device.startswith("cuda:") and device[5:].isdigit()):
        raise ConfigError(f"{option} {device!r} is not one of cpu, cuda, cuda:N, auto")
    if not torch.cuda.is_available():
        raise ConfigError(f"{option} {device}: no CUDA GPU is available (torch.cuda.is_available() is False); "
                          f"use {option} cpu or auto")
    if device.startswith("cuda:") and int(device[5:]) >= torch.cuda.device_count():
        raise ConfigError(f"{option} {device}: this machine has {torch.cuda.device_count()} CUDA GPU(s), "
                          f"numbered from 0; use {option} cuda:0 or auto")


def device_for_run(saved, run_dir, note=None) -> str:
    """Where a saved run runs when no device is asked for: the one it was saved with (config.json
    ``estimator.device``), or cpu where that is a GPU this machine lacks, said through ``note``
    (a model trained on a GPU and copied to a CPU server still predicts)."""
    saved = str(saved or "cpu")
    if saved.startswith("cuda"):
        try:
            check_device(saved)
        except ConfigError:
            if note is not None:
                note(f"note: {run_dir} was trained on {saved}, which this machine lacks; running on cpu")
            return "cpu"
    return saved


def torch_device(device) -> torch.device:
    """``"cpu"``, ``"cuda[:N]"`` or ``"auto"`` as a ``torch.device``, checked against this machine."""
    if isinstance(device, torch.device):
        return device
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    check_device(str(device), "parameter 'device' =")
    return torch.device(device)
