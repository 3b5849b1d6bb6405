"""``Predictor``: a run folder loaded to predict and nothing else; what ``textcls predict`` uses.

    >>> predictor = Predictor.load("runs/fasttext-bag_mr")
    >>> predictor.predict(["a gorgeous, witty film"])

``Classifier.from_pretrained`` loads the same run, but the ``Classifier`` is a scikit-learn
estimator and imports scikit-learn and ``datasets`` (about 2 s). The Predictor reads the same
config.json, weights and tokenizer and imports only what predicting needs:

- a run whose family has a NumPy forward pass (``numpy_forward.FORWARDS``: fasttext-bag,
  kim-cnn, spe-cnn), trained in fp32 and not quantised to int8, predicts on the CPU with NumPy and the ``tokenizers``
  pipeline, without importing torch, unless its inference tables would exceed
  ``numpy_forward.TABLE_CAP_BYTES`` (a CNN over a very large vocabulary);
- any other run predicts through its ``Estimator`` (``estimators.py``: torch and the model code
  for a neural run, scikit-learn's arrays for a TF-IDF one), as the Classifier does.

Probabilities are the Classifier's (the NumPy pass: within float32 kernel tolerance). Labels
of a multi-label run are the classes at or above ``threshold``: the one given, else the run's
(``artifacts.run_threshold``: config.json's ``threshold``, else 0.5; docs/serve.md).
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from . import artifacts
from .artifacts import DEFAULT_THRESHOLD, check_threshold, run_threshold
from .errors import CheckpointError, ConfigError
from .inputs import as_list, check_finite_probabilities, check_texts, task_indices
from .numpy_forward import FORWARDS, build_forward, probabilities
from .validate import MAX_INT, check_int, check_path

__all__ = ["Predictor", "DEFAULT_THRESHOLD", "check_threshold"]


class Predictor:
    """A loaded run. Build it with ``Predictor.load(run_dir)``.

    Attributes: ``classes_`` (label values), ``label_names``, ``multi_label``, ``task_names``
    (per-task heads, else None), ``task_column`` (the field or column its data's tasks were read
    from; None: none), ``threshold`` (multi-label), ``model`` (the preset name),
    ``device``, ``backend`` (``"numpy"`` or ``"estimator"``), ``stages`` (a NumPy run's
    ``(encode, logits)``: texts -> ``FlatIds`` -> logits, which the speed benchmark times apart;
    else None).
    """

    def __init__(self, run_dir: Path, config: dict, predict: Callable, *, uses_tasks: bool, backend: str,
                 device: str = "cpu", stages: tuple[Callable, Callable] | None = None):
        self.run_dir = Path(run_dir)
        self.config = config
        self._predict = predict
        self.model = config["model"]
        self.label_names = [str(n) for n in config["label_names"]]
        self.classes_ = np.array(config.get("label_values") or self.label_names)
        self.multi_label = bool(config.get("multi_label", False))
        self.task_names = list(config["task_names"]) if uses_tasks and config.get("task_names") else None
        # The field or column its training data's tasks were read from (None: none was read).
        self.task_column = config.get("task_column", artifacts.DEFAULT_TASK_COLUMN)
        if config.get("threshold") is not None:  # read_config checked it; a config built by hand was not
            check_threshold(config["threshold"], f"{self.run_dir / artifacts.CONFIG}: 'threshold'")
        self.threshold = run_threshold(config)
        self.backend = backend
        self.stages = stages
        self.device = device

    @classmethod
    def load(cls, run_dir: str | Path, *, device: str | None = None, threads: int | None = None,
             note: Callable[[str], None] | None = None) -> "Predictor":
        """Load ``run_dir``. ``device``: cpu, cuda[:N] or auto; None: cpu for a NumPy run, else the
        device the run trained on, or cpu when this machine lacks it (said through ``note``).
        ``threads``: torch's intra-op threads for a torch run, a positive integer (None: torch's
        default)."""
        run_dir = check_path("run_dir", run_dir)
        threads = check_int("threads", threads, 1, MAX_INT, optional=True)
        config = artifacts.read_config(run_dir)
        if device in (None, "cpu") and _numpy_family(config):
            predictor = _load_numpy(cls, run_dir, config)
            if predictor is not None:
                return predictor
        return _load_estimator(cls, run_dir, config, device, threads, note)

    @property
    def uses_tasks(self) -> bool:
        """Whether every text needs its task (a run with one classifier head per task)."""
        return bool(self.task_names)

    def predict_proba(self, texts: Sequence[str], tasks: Sequence[str] | None = None, *,
                      first: int | None = 0) -> np.ndarray:
        """``[N, C]`` float32 probabilities in ``classes_`` order. ``texts``: non-blank strings;
        ``tasks``: the task of every text, for a run with per-task heads. ``first``: the number an
        error message gives ``texts[0]`` (0, the list index; ``textcls predict`` counts its arguments
        from 1), or None for none: the caller names the text (by its line in a file)."""
        texts = check_texts(as_list(texts, "Predictor.predict_proba(texts)", "texts", "texts"), first=first)
        task_ids = task_indices(tasks, len(texts), self.task_names, self.model, first)
        if not texts:
            return np.zeros((0, len(self.label_names)), dtype=np.float32)
        return check_finite_probabilities(self._predict(texts, task_ids), str(self.run_dir),
                                          "(training diverged?), retrain it or load a good run", first)

    def labels(self, probs: np.ndarray, threshold: float | None = None) -> list:
        """Class names of each row: the most probable one, or for a multi-label run the list of
        those at or above ``threshold`` (in (0, 1], as ``textcls predict --threshold``; default
        ``self.threshold``). A single-label run takes no threshold."""
        cut = self._threshold(threshold)
        if self.multi_label:
            return [[self.label_names[j] for j in np.flatnonzero(row >= cut)] for row in probs]
        return [self.label_names[j] for j in probs.argmax(axis=1)] if len(probs) else []

    def predict(self, texts: Sequence[str], tasks: Sequence[str] | None = None, threshold: float | None = None) -> list:
        """Class names (lists of them for a multi-label run), as ``labels(predict_proba(...))``."""
        self._threshold(threshold)  # before the model runs
        return self.labels(self.predict_proba(texts, tasks), threshold)

    def _threshold(self, threshold) -> float:
        """The multi-label cut: ``threshold`` checked, else ``self.threshold``."""
        if threshold is None:
            return self.threshold
        if not self.multi_label:
            raise ConfigError(f"parameter 'threshold' applies to multi-label runs; {self.run_dir} predicts one "
                              "label per text, so leave threshold out")
        return check_threshold(threshold)


# --------------------------------------------------------------------------- the two backends


def _numpy_family(config: dict) -> bool:
    # An int8 run ("quantize") computes its linear layers in int8, which only torch reproduces.
    return (config.get("kind") == "neural" and config.get("family") in FORWARDS and config.get("quantize") is None
            and config.get("recipe", {}).get("precision", "fp32") == "fp32")


def _load_numpy(cls, run_dir: Path, config: dict) -> Predictor | None:
    """A Predictor over the run's NumPy forward pass, or None (see ``_numpy_stages``)."""
    stages = _numpy_stages(run_dir, config)
    if stages is None:
        return None
    encode, logits = stages
    multi_label = bool(config["state"].get("multi_label", config.get("multi_label", False)))

    def predict(texts: list[str], task_ids) -> np.ndarray:
        return probabilities(logits(encode(texts)), multi_label)

    return cls(run_dir, config, predict, uses_tasks=False, backend="numpy", stages=stages)


def _numpy_stages(run_dir: Path, config: dict) -> tuple[Callable, Callable] | None:
    """(encode, logits) of a run with a NumPy forward pass (no torch imported); None when its
    tables would be too large (``numpy_forward.build_forward``)."""
    from .text.pipeline import TextPipeline

    state = config["state"]
    tokenizer = run_dir / artifacts.TOKENIZER
    if not tokenizer.is_file():
        raise CheckpointError(f"{tokenizer}: file is missing; the run directory is incomplete")
    try:
        pipeline = TextPipeline.load(run_dir, state["pipeline"])
    except CheckpointError:
        raise  # already names the file and what is wrong
    except Exception as exc:  # tokenizers raises plain Exceptions on bad JSON
        raise CheckpointError(f"{tokenizer}: cannot load the tokenizer ({exc}); the file is corrupt") from None
    weights = run_dir / artifacts.WEIGHTS
    forward = build_forward(config["family"], artifacts.read_weights(run_dir, config), config.get("arch"))
    if forward is None:
        return None
    expected = (int(state["vocab_size"]), int(state["num_classes"]))
    if (forward.vocab_size, forward.num_classes) != expected:
        raise CheckpointError(f"{weights}: does not match config.json (vocabulary x classes "
                              f"{forward.vocab_size} x {forward.num_classes}, config {expected[0]} x "
                              f"{expected[1]}); retrain or restore the run")
    return pipeline.encode_flat, forward.logits


def _load_estimator(cls, run_dir: Path, config: dict, device: str | None, threads: int | None, note) -> Predictor:
    """A Predictor over the run's Estimator (imports torch and the model code)."""
    import torch

    from .estimators import check_device, device_for_run, estimator_for
    from .models.registry import Preset, get_family

    if threads is not None:
        torch.set_num_threads(threads)
    if device is None:
        device = device_for_run((config.get("estimator") or {}).get("device"), run_dir, note)
    else:
        check_device(device)
    preset_keys = {f.name for f in fields(Preset)}
    try:
        preset = Preset.from_dict({key: config[key] for key in preset_keys if key in config})
        get_family(preset.family)
    except (TypeError, ConfigError) as exc:
        raise CheckpointError(f"{run_dir / artifacts.CONFIG}: {exc}; it was written by another textcls version")
    if config.get("quantize") is not None:
        # An int8 run is quantised again on load, which the Classifier knows how to do (it
        # imports scikit-learn: these runs start slower).
        from .api import Classifier

        estimator = Classifier.from_pretrained(run_dir).estimator_
    else:
        estimator = estimator_for(preset)
        estimator.load_state(artifacts.read_weights(run_dir, config, allow_inf=estimator.ALLOW_INF),
                             config["state"], run_dir)

    def predict(texts: list[str], task_ids) -> np.ndarray:
        return estimator.predict_proba(texts, task_ids, device=device)

    return cls(run_dir, config, predict, uses_tasks=estimator.uses_tasks, backend="estimator", device=device)
