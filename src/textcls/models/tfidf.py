"""TF-IDF baselines: unigram + bigram TF-IDF with logistic regression or multinomial NB.

scikit-learn fits them. Whatever the classifier, what it learns reduces to one linear map
over TF-IDF features followed by a link:

- single-label: ``softmax(X W^T + b)`` (multinomial LR: ``coef_``/``intercept_``; NB: the
  joint log-likelihood ``feature_log_prob_``/``class_log_prior_``);
- multi-label, one-vs-rest: ``sigmoid(X W^T + b)`` per class (a binary NB's log-odds are
  ``log p(x|1) - log p(x|0)`` and ``log P(1) - log P(0)``).

``predict_proba`` always evaluates that form from the stored arrays, so a model rebuilt by
``from_state`` gives bit-identical probabilities, and persistence needs no pickle: the state
is the vocabulary, the idf weights, ``W`` and ``b`` (numeric arrays) plus JSON metadata.
The vectorizer lowercases and tokenises by itself; ``inputs`` only carries normaliser
settings a caller may apply to the raw texts first.

**Regularisation chosen on dev.** The presets carry a grid (``C_grid`` for LR, ``alpha_grid``
for NB). ``fit(texts, y, dev_texts=, dev_y=)`` fits the model once per value on the training
texts (one vectorizer; LR warm-starts each C from the previous one, which changes nothing but
the time: the problem is convex) and keeps the value with the best dev accuracy (micro-F1 for
multi-label), ties to the lower dev log-loss. ``selection_`` records the grid, the dev scores
and the choice; the estimator writes the chosen value into the run's preset. The kept model
is the one fitted on train alone, not refitted on train + dev: in the benchmarks every model
and peer trains on the same documents (train minus dev; the neural models only select their
epoch on dev), and a refit would give TF-IDF 10 % more labelled data than the models it is
compared with. Plain scikit-learn TF-IDF + LR at C = 10 had beaten the old fixed C = 1 by 2-3
points on two of seven outside datasets (issue 19), and the best C moves with the corpus size.

**Word and character n-grams** (``char_ngrams = [lo, hi]``, the ``tfidf-lr-chars`` preset): a
second TF-IDF over the character ``lo``- to ``hi``-grams inside word boundaries (scikit-learn's
``char_wb``) is concatenated to the word n-grams, one linear model over both. Short texts are
where it pays: an MPQA phrase has three words, and the characters share evidence between forms
of a word ("disappoint", "disappointing") that the word features keep apart
(``benchmarks/results/tfidf_chars.md``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import CheckpointError, ConfigError, DataError
from ..recipe import Recipe
from ..validate import check_positive_int, range_check
from .registry import Preset, register_model

CLASSIFIERS = ("lr", "nb")
STATE_FORMAT = "textcls.tfidf/1"
# One-character words ("I", "5") carry signal in short texts such as TREC questions;
# scikit-learn's default pattern drops them.
TOKEN_PATTERN = r"(?u)\b\w+\b"

# The TF-IDF models read the training split once (no epochs); dev (carved as for the neural
# models when the data has none) chooses C or alpha from the preset's grid.
_TFIDF_RECIPE = Recipe(epochs=1)
# Character n-grams of tfidf-lr-chars: 2- to 5-grams inside word boundaries.
CHAR_NGRAMS = (2, 5)
# Decades and half-decades around scikit-learn's C = 1: a seven-fit search.
C_GRID = (0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0)
ALPHA_GRID = (0.01, 0.03, 0.1, 0.3, 1.0)
_TFIDF_INPUTS = {"shape": "flat", "embeddings": None, "lowercase": True}
# What each classifier fits, and the other one's parameters, which it never reads (with what they are).
_FITS = {"lr": "logistic regression", "nb": "multinomial naive Bayes"}
_UNREAD = {"lr": {"alpha": "naive Bayes' smoothing", "alpha_grid": "naive Bayes' smoothing grid"},
           "nb": {"C": "logistic regression's regularisation", "C_grid": "logistic regression's C grid",
                  "max_iter": "logistic regression's solver iterations"}}

TFIDF_PRESETS = [
    Preset(
        "tfidf-lr",
        "tfidf",
        arch={"classifier": "lr", "C_grid": list(C_GRID)},
        recipe=_TFIDF_RECIPE,
        inputs=_TFIDF_INPUTS,
        kind="classic",
        description="TF-IDF (unigrams + bigrams, sublinear tf) with logistic regression, C chosen on dev from "
                    "0.1-100; one-vs-rest if multi-label.",
        paper="scikit-learn baseline",
    ),
    Preset(
        "tfidf-lr-chars",
        "tfidf",
        arch={"classifier": "lr", "C_grid": list(C_GRID), "char_ngrams": list(CHAR_NGRAMS)},
        recipe=_TFIDF_RECIPE,
        inputs=_TFIDF_INPUTS,
        kind="classic",
        description="TF-IDF of word unigrams + bigrams and of character 2-5-grams within words (sublinear tf), "
                    "one logistic regression over both, C chosen on dev from 0.1-100.",
        paper="scikit-learn baseline",
    ),
    Preset(
        "tfidf-nb",
        "tfidf",
        arch={"classifier": "nb", "alpha_grid": list(ALPHA_GRID)},
        recipe=_TFIDF_RECIPE,
        inputs=_TFIDF_INPUTS,
        kind="classic",
        description="TF-IDF (unigrams + bigrams, sublinear tf) with multinomial naive Bayes, alpha chosen on dev "
                    "from 0.01-1; one-vs-rest if multi-label.",
        paper="scikit-learn baseline",
    ),
]


@register_model("tfidf", presets=TFIDF_PRESETS)
class TfidfModel:
    """TF-IDF + linear classifier, scikit-learn style (``fit`` returns self; learned attributes end in ``_``).

    ``C`` is LR's inverse regularisation strength, ``alpha`` NB's additive smoothing;
    ``C_grid`` / ``alpha_grid`` (None: use ``C`` / ``alpha`` as given) the values tried on dev;
    ``ngram_max`` the longest word n-gram; ``min_df`` drops n-grams seen in fewer documents;
    ``char_ngrams`` (``[lo, hi]``, or None for words alone) adds the character n-grams within words.
    """

    kind = "classic"

    def __init__(
        self,
        num_classes: int,
        *,
        classifier: str = "lr",
        C: float = 1.0,
        alpha: float = 1.0,
        ngram_max: int = 2,
        min_df: int = 2,
        max_features: int | None = None,
        sublinear_tf: bool = True,
        max_iter: int = 1000,
        C_grid: list[float] | None = None,
        alpha_grid: list[float] | None = None,
        char_ngrams: list[int] | None = None,
    ):
        if classifier not in CLASSIFIERS:
            raise ConfigError(f"parameter 'classifier' = {classifier!r} is not one of {', '.join(CLASSIFIERS)}")
        check_positive_int("num_classes", num_classes)
        range_check("C", C, 0.0, 1e12, low_open=True)
        range_check("alpha", alpha, 0.0, 1e6)
        check_positive_int("ngram_max", ngram_max, 8)
        check_positive_int("min_df", min_df)
        if max_features is not None:
            check_positive_int("max_features", max_features)
        check_positive_int("max_iter", max_iter, 1 << 24)
        self.C_grid = _check_grid("C_grid", C_grid, 0.0, 1e12)
        self.alpha_grid = _check_grid("alpha_grid", alpha_grid, 0.0, 1e6)
        self.char_ngrams = _check_char_ngrams(char_ngrams)
        self.num_classes = num_classes
        self.classifier = classifier
        self.C = C
        self.alpha = alpha
        self.ngram_max = ngram_max
        self.min_df = min_df
        self.max_features = max_features
        self.sublinear_tf = bool(sublinear_tf)
        self.max_iter = max_iter

    # -- parameters -------------------------------------------------------------------
    def get_params(self) -> dict[str, Any]:
        return {
            "classifier": self.classifier,
            "C": self.C,
            "alpha": self.alpha,
            "ngram_max": self.ngram_max,
            "min_df": self.min_df,
            "max_features": self.max_features,
            "sublinear_tf": self.sublinear_tf,
            "max_iter": self.max_iter,
            "C_grid": None if self.C_grid is None else list(self.C_grid),
            "alpha_grid": None if self.alpha_grid is None else list(self.alpha_grid),
            "char_ngrams": None if self.char_ngrams is None else list(self.char_ngrams),
        }

    def _vectorizer(self, vocabulary=None, char_vocabulary=None):
        """The word TF-IDF, joined by the character one when ``char_ngrams`` is set; with saved
        vocabularies (``from_state``) every term of them is kept."""
        from sklearn.feature_extraction.text import TfidfVectorizer

        def tfidf(vocabulary, **analysis):
            return TfidfVectorizer(
                lowercase=True,
                min_df=1 if vocabulary is not None else self.min_df,
                max_features=None if vocabulary is not None else self.max_features,
                sublinear_tf=self.sublinear_tf,
                vocabulary=vocabulary,
                dtype=np.float64,
                **analysis,
            )

        words = tfidf(vocabulary, token_pattern=TOKEN_PATTERN, ngram_range=(1, self.ngram_max))
        if self.char_ngrams is None:
            return words
        return WordAndCharTfidf(words, tfidf(char_vocabulary, analyzer="char_wb", ngram_range=tuple(self.char_ngrams)))

    def _estimator(self, warm_start: bool = False):
        if self.classifier == "lr":
            from sklearn.linear_model import LogisticRegression

            return LogisticRegression(C=self.C, max_iter=self.max_iter, warm_start=warm_start)
        from sklearn.naive_bayes import MultinomialNB

        return MultinomialNB(alpha=self.alpha)

    # -- training ---------------------------------------------------------------------
    def fit(self, texts, y, *, dev_texts=None, dev_y=None, seed: int = 0) -> "TfidfModel":
        """Fit on raw texts; ``y`` is ``[N]`` class indices or ``[N, C]`` multi-hot (multi-label).

        With a grid (``C_grid`` / ``alpha_grid``) and ``dev_texts`` / ``dev_y`` (same label
        form), the grid's value with the best dev score is kept (``selection_``). ``seed`` is
        for the classic models that draw random numbers (static-finetune); this fit draws none."""
        texts, labels = self._training_labels(texts, y)
        self.vectorizer_ = self._vectorizer()
        try:
            features = self.vectorizer_.fit_transform(texts)
        except ValueError as err:  # "empty vocabulary" / "no terms remain" on tiny or empty texts
            raise DataError(
                f"TF-IDF found no usable n-gram in {len(texts)} training texts ({err}); "
                f"use more data or lower min_df (now {self.min_df})"
            ) from None
        name, grid = self.search_grid()
        self.selection_ = None
        if grid and dev_texts is not None and len(dev_texts):
            dev_labels = _dev_labels(dev_texts, dev_y, labels)
            self._search(name, grid, features, labels, self.vectorizer_.transform(list(dev_texts)), dev_labels)
        else:
            self.weights_, self.bias_ = self._fit_labels(features, labels)
        return self

    def search_grid(self) -> tuple[str, list[float] | None]:
        """The regularisation parameter this classifier tunes on dev and its grid (None: none)."""
        return ("C", self.C_grid) if self.classifier == "lr" else ("alpha", self.alpha_grid)

    def refuse_ignored_params(self, preset: Preset) -> None:
        """Refuse what this fit would not read: the tuned value (``C`` / ``alpha``) given while its
        grid is on, and the other classifier's parameters (the estimator calls this before fitting).

        Decision (review finding 4): a ``C`` given beside the active ``C_grid`` is refused, not
        taken to turn the grid off. The grid's choice used to replace it without a word, so
        ``GridSearchCV`` over ``params=[{"C": 0.1}, {"C": 10}]`` compared identical models. Turning
        the grid off instead would read one setting two ways (fix C, or start from it) and drop the
        dev selection the preset is described by (``selection_``, the benchmarks' records) behind
        the user's back; the refusal names the setting that fixes C (``C_grid=None``), so that what
        the run did is what it says. Given means named by the user (``preset.overridden``), at any
        value: ``C=1.0``, the constructor's default, is as ignored as ``C=10``."""
        name, grid = self.search_grid()
        if grid is not None and name in preset.overridden:
            # 12 digits: the value as given (10, 0.5, 1e-05) in the advice, a JSON and Python number.
            value, grid_name = f"{float(getattr(self, name)):.12g}", f"{name}_grid"
            shown = ", ".join(f"{v:g}" for v in grid)
            raise ConfigError(
                f"model '{preset.name}' chooses '{name}' on dev from '{grid_name}' ({shown}), "
                f"which would replace it; '{name}' = {value} cannot be set beside the grid: to fix {name}, turn "
                f"the grid off (CLI: --set {grid_name}=null --set {name}={value}; Python: params={{'{name}': "
                f"{value}, '{grid_name}': None}}), or set the values it tries with '{grid_name}'")
        # Present in arch at all, whether the user gave it or the preset carries it (tfidf-lr's
        # C_grid after classifier='nb'); None is a grid's "off", which reads nothing.
        unread = [key for key in _UNREAD[self.classifier] if preset.arch.get(key) is not None]
        if unread:
            key = unread[0]
            how = (f"set it to None (CLI: --set {key}=null; Python: params={{'{key}': None}})" if key.endswith("_grid")
                   else "drop it")
            raise ConfigError(f"model '{preset.name}' fits {_FITS[self.classifier]}; '{key}' "
                              f"({_UNREAD[self.classifier][key]}) cannot be set on it: {how}")

    def _fit_labels(self, features, labels, estimator=None):
        if self.multi_label_:
            return self._fit_one_vs_rest(features, labels)
        return self._fit_single_label(features, labels, estimator)

    def _search(self, name, grid, features, labels, dev_features, dev_labels) -> None:
        """Fit once per grid value (ascending) and keep the best on dev (see the module doc)."""
        # Single-label LR reuses one estimator so that each C starts from the last solution.
        warm = self._estimator(warm_start=True) if self.classifier == "lr" and not self.multi_label_ else None
        best, scores = None, {}
        for value in sorted(grid):
            setattr(self, name, float(value))
            if warm is not None:
                warm.set_params(C=float(value))
            weights, bias = self._fit_labels(features, labels, warm)
            score = _dev_score(np.asarray(dev_features @ weights.T) + bias, dev_labels, self.multi_label_)
            scores[repr(float(value))] = {"score": score[0], "log_loss": -score[1]}
            if best is None or score > best[0]:
                best = (score, float(value), weights, bias)
        _, chosen, self.weights_, self.bias_ = best
        setattr(self, name, chosen)
        self.selection_ = self._selection(name, chosen, scores, len(dev_labels))

    def _training_labels(self, texts, y) -> tuple[list, np.ndarray]:
        """``(texts, labels)`` checked against each other and the classes; sets ``multi_label_``."""
        texts, labels = list(texts), np.asarray(y)
        if len(texts) != len(labels):
            raise DataError(f"fit got {len(texts)} texts but {len(labels)} labels; pass one label per text")
        self.multi_label_ = labels.ndim == 2
        self._check_labels(labels)
        return texts, labels

    def _selection(self, parameter: str, chosen, scores: dict, dev_documents: int, **extra) -> dict:
        """What ``selection_`` records of a choice made on dev (``scores``: per value tried)."""
        metric = "micro_f1" if self.multi_label_ else "accuracy"
        return {"parameter": parameter, "chosen": chosen, **extra, "metric": f"dev {metric}, ties to the lower log-loss",
                "dev": scores, "dev_documents": int(dev_documents), "refit": "none (train only)"}

    def chosen_params(self) -> dict[str, float]:
        """The value chosen on dev, as a preset override (``{}`` when nothing was chosen)."""
        return {} if not getattr(self, "selection_", None) else {self.selection_["parameter"]: self.selection_["chosen"]}

    def _check_labels(self, labels: np.ndarray) -> None:
        C = self.num_classes
        if self.multi_label_:
            if labels.shape[1] != C or not np.isin(labels, (0, 1)).all():
                raise DataError(f"multi-label y must be 0/1 of shape [N, {C}], got shape {labels.shape}")
        elif labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer) or labels.size == 0:
            raise DataError(f"y must be a non-empty [N] integer array of class indices (or [N, {C}] multi-hot)")
        elif labels.min() < 0 or labels.max() >= C:
            raise DataError(f"class index {labels.max() if labels.max() >= C else labels.min()} is outside [0, {C - 1}]")
        elif np.unique(labels).size < 2:
            raise DataError("the training labels hold a single class; a classifier needs at least two")

    def _fit_single_label(self, features, labels, estimator=None):
        estimator = (estimator or self._estimator()).fit(features, labels)
        n_features = features.shape[1]
        # A class absent from training gets bias -inf: probability 0, as it was never seen.
        weights = np.zeros((self.num_classes, n_features))
        bias = np.full(self.num_classes, -np.inf)
        classes = estimator.classes_
        if self.classifier == "nb":
            weights[classes], bias[classes] = estimator.feature_log_prob_, estimator.class_log_prior_
        elif len(classes) == 2:
            # Binary LR keeps one row for classes_[1]; softmax([0, z]) = [1 - sigmoid(z), sigmoid(z)].
            bias[classes] = 0.0
            weights[classes[1]], bias[classes[1]] = estimator.coef_[0], estimator.intercept_[0]
        else:
            weights[classes], bias[classes] = estimator.coef_, estimator.intercept_
        return weights, bias

    def _fit_one_vs_rest(self, features, labels):
        # One binary classifier per class, as sklearn's OneVsRestClassifier; written out so a
        # class that is never (or always) on in training gets an explicit constant 0 (or 1).
        weights = np.zeros((self.num_classes, features.shape[1]))
        bias = np.zeros(self.num_classes)
        for c in range(self.num_classes):
            column = labels[:, c].astype(np.int64)
            if column.min() == column.max():
                bias[c] = np.inf if column[0] == 1 else -np.inf
                continue
            estimator = self._estimator().fit(features, column)
            if self.classifier == "nb":
                log_prob, log_prior = estimator.feature_log_prob_, estimator.class_log_prior_
                weights[c], bias[c] = log_prob[1] - log_prob[0], log_prior[1] - log_prior[0]
            else:
                weights[c], bias[c] = estimator.coef_[0], estimator.intercept_[0]
        return weights, bias

    # -- inference --------------------------------------------------------------------
    def _check_fitted(self) -> None:
        if not hasattr(self, "weights_"):
            raise ConfigError("this TF-IDF model is not fitted yet; call fit(texts, y) or load a saved run first")

    def decision_function(self, texts) -> np.ndarray:
        """Scores ``X W^T + b`` before the link, ``[N, C]``."""
        self._check_fitted()
        texts = list(texts)
        if not texts:  # scikit-learn's vectorizer refuses an empty batch
            return np.zeros((0, self.num_classes))
        features = self.vectorizer_.transform(texts)
        return np.asarray(features @ self.weights_.T) + self.bias_

    def predict_proba(self, texts) -> np.ndarray:
        """Class probabilities ``[N, C]`` (independent per class when multi-label)."""
        from scipy.special import expit, softmax

        scores = self.decision_function(texts)
        return expit(scores) if self.multi_label_ else softmax(scores, axis=1)

    def predict(self, texts) -> np.ndarray:
        """Class indices ``[N]``, or a ``[N, C]`` 0/1 array (probability >= 0.5) when multi-label."""
        proba = self.predict_proba(texts)
        return (proba >= 0.5).astype(np.int64) if self.multi_label_ else proba.argmax(axis=1)

    def num_parameters(self) -> int:
        """Learned numbers: linear weights and biases plus the idf vector."""
        self._check_fitted()
        return int(self.weights_.size + self.bias_.size + self.vectorizer_.idf_.size)

    def frozen_parameters(self) -> int:
        """Stored numbers never trained (none here; static-lr's vectors)."""
        return 0

    def embedding_parameters(self) -> int:
        """Stored numbers that are word-piece vectors, trained or not (none here)."""
        return self.frozen_parameters()

    # -- persistence (no pickle) ------------------------------------------------------
    def state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """``(arrays, meta)``: numeric arrays (safetensors-ready) and JSON metadata."""
        self._check_fitted()
        arrays = {}
        for prefix, part in zip(_PART_PREFIXES, _parts(self.vectorizer_)):
            arrays[f"{prefix}vocabulary"] = _encode_terms(part.get_feature_names_out())
            arrays[f"{prefix}idf"] = np.asarray(part.idf_, dtype=np.float64)
        arrays.update(weights=self.weights_, bias=self.bias_)
        meta = {
            "format": STATE_FORMAT,
            "num_classes": self.num_classes,
            "multi_label": bool(self.multi_label_),
            "params": self.get_params(),
            "selection": getattr(self, "selection_", None),
        }
        return arrays, meta

    @classmethod
    def from_state(cls, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> "TfidfModel":
        """Rebuild a fitted model from ``state()``'s output; runs no stored code."""
        if meta.get("format") != STATE_FORMAT:
            raise CheckpointError(
                f"TF-IDF state has format {meta.get('format')!r}, expected {STATE_FORMAT!r}; re-save it with this textcls"
            )
        model = cls(meta["num_classes"], **meta["params"])
        prefixes = _PART_PREFIXES[: 1 if model.char_ngrams is None else 2]
        names = [f"{prefix}{name}" for prefix in prefixes for name in ("vocabulary", "idf")] + ["weights", "bias"]
        missing = [k for k in names if k not in arrays]
        if missing:
            raise CheckpointError(f"TF-IDF state lacks array '{missing[0]}'; the run directory is incomplete")
        terms = [_decode_terms(arrays[f"{prefix}vocabulary"]) for prefix in prefixes]
        idfs = [np.asarray(arrays[f"{prefix}idf"], dtype=np.float64) for prefix in prefixes]
        weights, bias = (np.asarray(arrays[k], dtype=np.float64) for k in ("weights", "bias"))
        total = sum(len(t) for t in terms)
        if (weights.shape != (model.num_classes, total) or bias.shape != (model.num_classes,)
                or any(idf.shape != (len(t),) for t, idf in zip(terms, idfs))):
            raise CheckpointError(
                f"TF-IDF state is inconsistent: {' + '.join(str(len(t)) for t in terms)} terms, idf "
                f"{[idf.shape for idf in idfs]}, weights {weights.shape}, bias {bias.shape}; the saved run is corrupt"
            )
        vectorizer = model._vectorizer(*({term: i for i, term in enumerate(t)} for t in terms))
        for part, idf in zip(_parts(vectorizer), idfs):
            part.idf_ = idf
        return model._restored(vectorizer, weights, bias, meta)

    def _restored(self, vectorizer, weights: np.ndarray, bias: np.ndarray, meta: dict[str, Any]) -> "TfidfModel":
        """This model, fitted from a saved state's checked parts (``from_state``)."""
        self.vectorizer_, self.weights_, self.bias_ = vectorizer, weights, bias
        self.multi_label_ = bool(meta["multi_label"])
        self.selection_ = meta.get("selection")
        return self


class WordAndCharTfidf:
    """Word TF-IDF features, then character TF-IDF features, side by side in one sparse matrix.

    scikit-learn's ``FeatureUnion`` stacks the same way, but the state is saved part by part
    (each part's vocabulary and idf, no pickle) and restored into fixed-vocabulary vectorizers,
    and ``num_parameters`` reads one ``idf_``: this is that, and nothing more."""

    def __init__(self, words, chars):
        self.words, self.chars = words, chars

    def fit_transform(self, texts):
        from scipy.sparse import hstack

        return hstack([self.words.fit_transform(texts), self.chars.fit_transform(texts)], format="csr")

    def transform(self, texts):
        from scipy.sparse import hstack

        return hstack([self.words.transform(texts), self.chars.transform(texts)], format="csr")

    @property
    def idf_(self) -> np.ndarray:
        return np.concatenate([self.words.idf_, self.chars.idf_])


# The saved arrays of each part: "vocabulary" / "idf" for the words, "char_vocabulary" /
# "char_idf" for the characters.
_PART_PREFIXES = ("", "char_")


def _parts(vectorizer) -> list:
    """The TF-IDF vectorizers behind a model's features, in feature order."""
    return [vectorizer.words, vectorizer.chars] if isinstance(vectorizer, WordAndCharTfidf) else [vectorizer]


def _encode_terms(terms) -> np.ndarray:
    # Word terms are runs of \w joined by single spaces, and character n-grams lie within one
    # word (char_wb) with spaces at its edges, so no term holds "\n", which can delimit them.
    return np.frombuffer("\n".join(terms).encode("utf-8"), dtype=np.uint8).copy()


def _decode_terms(array: np.ndarray) -> list[str]:
    raw = np.asarray(array, dtype=np.uint8).tobytes().decode("utf-8")
    return raw.split("\n") if raw else []


def _check_char_ngrams(char_ngrams) -> tuple[int, int] | None:
    if char_ngrams is None:
        return None
    values = list(char_ngrams) if isinstance(char_ngrams, (list, tuple)) else None
    if (values is None or len(values) != 2 or any(isinstance(v, bool) or not isinstance(v, int) for v in values)
            or not 1 <= values[0] <= values[1] <= 10):
        raise ConfigError(f"parameter 'char_ngrams' = {char_ngrams!r} must be [lo, hi] with 1 <= lo <= hi <= 10 "
                          "(e.g. [2, 5]), or None for word n-grams alone")
    return values[0], values[1]


def _check_grid(name: str, grid, low: float, high: float) -> list[float] | None:
    if grid is None:
        return None
    if isinstance(grid, (str, bytes)) or not hasattr(grid, "__iter__") or not list(grid):
        raise ConfigError(f"parameter '{name}' = {grid!r} must be a non-empty list of numbers, or None")
    values = [float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v for v in grid]
    for value in values:
        range_check(name, value, low, high, low_open=True)
    return values


def _dev_labels(dev_texts, dev_y, labels: np.ndarray) -> np.ndarray:
    """``dev_y`` as an array, checked to give one label of the training labels' form per dev text."""
    dev_labels = np.asarray(dev_y)
    if len(dev_labels) != len(dev_texts) or dev_labels.ndim != labels.ndim:
        raise DataError(f"fit got {len(dev_texts)} dev texts but dev labels of shape {dev_labels.shape}; "
                        "pass one label of the training labels' form per dev text")
    return dev_labels


def _dev_score(scores: np.ndarray, labels: np.ndarray, multi_label: bool) -> tuple[float, float]:
    """(dev accuracy or micro-F1, minus the mean log-loss): larger is better, in that order."""
    from scipy.special import log_expit, log_softmax

    if multi_label:
        predicted = scores >= 0  # sigmoid >= 0.5
        true_positives = float(np.logical_and(predicted, labels == 1).sum())
        denominator = float(predicted.sum() + (labels == 1).sum())
        f1 = 2 * true_positives / denominator if denominator else 1.0
        log_p = np.where(labels == 1, log_expit(scores), log_expit(-scores))
        return f1, float(np.mean(np.maximum(log_p, -1e6)))
    accuracy = float((scores.argmax(axis=1) == labels).mean())
    log_p = log_softmax(scores, axis=1)[np.arange(len(labels)), labels]
    # A class absent from training has probability 0: its dev documents cost a large, finite loss.
    return accuracy, float(np.mean(np.maximum(log_p, -1e6)))
