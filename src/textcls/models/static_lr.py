"""Frozen static sentence vectors + logistic regression: the ``static-lr`` preset.

What it computes (the frozen variant of Model2Vec, Tulkens and van Dongen 2024, as the
``model2vec-lr`` peer uses it): the text is cut into word pieces by the distilled model's own
tokenizer (all-MiniLM-L6-v2's uncased WordPiece), unknown pieces are dropped, and the sentence
vector is the mean of the pieces' 256-d static vectors, L2-normalised:

    s(x) = m / ||m||,   m = (1 / |x|) sum_{t in x} E[t]

then ``softmax(s W^T + b)`` (one-vs-rest sigmoids when multi-label), with scikit-learn's
logistic regression fitting ``W, b`` and ``C`` chosen on dev, exactly as ``tfidf-lr`` does
(``models/tfidf.py``: this class only swaps TF-IDF features for ``s``).

Why a library preset when the peer exists (issue 19): the peer's vectors carry what MiniLM
learned from a billion sentence pairs, which no model trained on a few thousand labelled
sentences has; in ``benchmarks/results/ensemble_members.md`` they lifted the ensemble on
sst2, mr and mpqa although the peer alone is the weakest candidate. A peer cannot be a member
of a saved run, so this preset stores what it needs (the tokenizer and the vectors) in the
run and predicts with ``tokenizers`` and NumPy alone.

Readings, where the peer and this preset differ:

- The peer fixes ``C = 1``; here ``C`` is chosen on dev from ``tfidf-lr``'s grid (0.1-100),
  as the best value moves with the corpus (1 on mr and sst2, 3 on mpqa, 10 on trec: seed 0).
- model2vec's ``encode`` truncates a text to 512 pieces; here every piece counts, as a mean
  over a whole review is what the text says (this only matters for imdb-length texts).

The vectors come from ``text/embeddings.minilm_static_model`` (distilled once, cached): a
model never reads files, so the estimator hands them over with ``use_vectors`` before ``fit``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import CheckpointError, ConfigError
from ..recipe import Recipe
from .registry import Preset, register_model
from .tfidf import C_GRID, TfidfModel

STATE_FORMAT = "textcls.static-lr/1"
# The distilled vectors the preset reads; the only source with a tokenizer of its own.
STATIC_SOURCES = ("minilm-static",)

STATIC_LR_PRESETS = [
    Preset(
        "static-lr",
        "static-lr",
        arch={"C_grid": list(C_GRID), "vectors": "minilm-static"},
        recipe=Recipe(epochs=1),
        inputs={"shape": "flat", "embeddings": None},
        kind="classic",
        description="Frozen static sentence vectors (all-MiniLM-L6-v2 distilled by Model2Vec, 256-d, mean of "
                    "word pieces, L2-normalised) with logistic regression, C chosen on dev from 0.1-100.",
        paper="Model2Vec (Tulkens and van Dongen 2024), frozen variant; textcls practitioner member (issue 19)",
    ),
]


class StaticSentenceVectors:
    """Texts -> L2-normalised means of their word pieces' static vectors, ``[N, dim]`` float64.

    ``tokenizer_json``: a ``tokenizers`` tokenizer serialised as JSON; ``embedding``: ``[pieces,
    dim]`` vectors in its id order; ``unk_id``: the piece dropped from every text (None: keep
    all). A text with no known piece gets the zero vector. The same object fits and transforms
    (nothing is learned), as a scikit-learn vectorizer does for ``TfidfModel``."""

    def __init__(self, tokenizer_json: str, embedding: np.ndarray, unk_id: int | None):
        from tokenizers import Tokenizer

        self.tokenizer_json = tokenizer_json
        self.tokenizer = Tokenizer.from_str(tokenizer_json)
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()
        self.embedding = np.ascontiguousarray(embedding, dtype=np.float32)
        if self.embedding.ndim != 2 or self.embedding.shape[0] != self.tokenizer.get_vocab_size():
            raise CheckpointError(f"static vectors of shape {self.embedding.shape} do not fit a tokenizer of "
                                  f"{self.tokenizer.get_vocab_size()} pieces; the saved run is corrupt")
        self.unk_id = unk_id

    def fit_transform(self, texts) -> np.ndarray:
        return self.transform(texts)

    def piece_ids(self, texts) -> tuple[np.ndarray, np.ndarray]:
        """``(flat ids, lengths)``: every text's known word pieces, concatenated, and how many
        each text has (0 for a text with none)."""
        encodings = self.tokenizer.encode_batch_fast([str(t) for t in texts], add_special_tokens=False)
        ids = [np.asarray(e.ids, dtype=np.int64) for e in encodings]
        if self.unk_id is not None:
            ids = [row[row != self.unk_id] for row in ids]
        lengths = np.array([len(row) for row in ids], dtype=np.int64)
        return (np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64)), lengths

    def transform(self, texts) -> np.ndarray:
        from scipy.sparse import csr_matrix

        flat, lengths = self.piece_ids(texts)
        # The mean as one sparse [N, pieces] @ [pieces, dim] product: no per-text Python loop.
        weights = np.repeat(1.0 / np.maximum(lengths, 1), lengths).astype(np.float32)
        pointers = np.concatenate([[0], np.cumsum(lengths)])
        means = csr_matrix((weights, flat, pointers), shape=(len(lengths), len(self.embedding))) @ self.embedding
        means = np.asarray(means, dtype=np.float64)
        norms = np.linalg.norm(means, axis=1, keepdims=True)
        return means / np.where(norms > 0, norms, 1.0)


@register_model("static-lr", presets=STATIC_LR_PRESETS)
class StaticLRModel(TfidfModel):
    """Logistic regression over ``StaticSentenceVectors`` (see the module doc). ``C``, ``C_grid``
    and ``max_iter`` are ``TfidfModel``'s; ``vectors`` names the static source. Give the vectors
    with ``use_vectors`` before ``fit``; a model rebuilt by ``from_state`` carries its own."""

    family_name = "static-lr"

    def __init__(self, num_classes: int, *, C: float = 1.0, C_grid: list[float] | None = None, max_iter: int = 1000,
                 vectors: str = "minilm-static"):
        if vectors not in STATIC_SOURCES:
            raise ConfigError(f"parameter 'vectors' = {vectors!r} is not one of {', '.join(STATIC_SOURCES)} "
                              "(static-lr needs vectors with a tokenizer of their own)")
        super().__init__(num_classes, classifier="lr", C=C, C_grid=C_grid, max_iter=max_iter)
        self.vectors = vectors

    def get_params(self) -> dict[str, Any]:
        return {"C": self.C, "C_grid": None if self.C_grid is None else list(self.C_grid), "max_iter": self.max_iter,
                "vectors": self.vectors}

    def use_vectors(self, tokenizer_json: str, embedding: np.ndarray, unk_id: int | None, info: dict | None = None):
        """Hand over the static vectors (and what to record of them) before ``fit``."""
        self.sentence_vectors = StaticSentenceVectors(tokenizer_json, embedding, unk_id)
        self.vectors_info = dict(info or {})
        return self

    def _vectorizer(self, vocabulary=None):
        if not hasattr(self, "sentence_vectors"):
            raise ConfigError("static-lr has no static vectors yet; call use_vectors(...) before fit")
        return self.sentence_vectors

    def num_parameters(self) -> int:
        """Learned numbers: the logistic regression's weights and biases."""
        self._check_fitted()
        return int(self.weights_.size + self.bias_.size)

    def frozen_parameters(self) -> int:
        """The static vectors: stored with the run, never trained."""
        return int(self.sentence_vectors.embedding.size) if hasattr(self, "sentence_vectors") else 0

    def state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        self._check_fitted()
        vectors = self.vectorizer_
        arrays = {"tokenizer": np.frombuffer(vectors.tokenizer_json.encode("utf-8"), dtype=np.uint8).copy(),
                  "embedding": vectors.embedding, "weights": self.weights_, "bias": self.bias_}
        meta = {"format": STATE_FORMAT, "num_classes": self.num_classes, "multi_label": bool(self.multi_label_),
                "params": self.get_params(), "selection": getattr(self, "selection_", None),
                "unk_id": vectors.unk_id, "vectors_info": getattr(self, "vectors_info", {})}
        return arrays, meta

    @classmethod
    def from_state(cls, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> "StaticLRModel":
        """Rebuild a fitted model from ``state()``'s output; runs no stored code."""
        if meta.get("format") != STATE_FORMAT:
            raise CheckpointError(f"static-lr state has format {meta.get('format')!r}, expected {STATE_FORMAT!r}; "
                                  "re-save it with this textcls")
        missing = [k for k in ("tokenizer", "embedding", "weights", "bias") if k not in arrays]
        if missing:
            raise CheckpointError(f"static-lr state lacks array '{missing[0]}'; the run directory is incomplete")
        model = cls(meta["num_classes"], **meta["params"])
        model._read_vectors(arrays, meta)
        weights, bias = (np.asarray(arrays[k], dtype=np.float64) for k in ("weights", "bias"))
        dim = model.sentence_vectors.embedding.shape[1]
        if weights.shape != (model.num_classes, dim) or bias.shape != (model.num_classes,):
            raise CheckpointError(f"static-lr state is inconsistent: vectors of {dim} dimensions, weights "
                                  f"{weights.shape}, bias {bias.shape}; the saved run is corrupt")
        return model._restored(model.sentence_vectors, weights, bias, meta)

    def _read_vectors(self, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
        """Hand over the tokenizer and vectors a saved state carries (``from_state``)."""
        try:
            tokenizer_json = np.asarray(arrays["tokenizer"], dtype=np.uint8).tobytes().decode("utf-8")
            self.use_vectors(tokenizer_json, arrays["embedding"], meta.get("unk_id"), meta.get("vectors_info"))
        except CheckpointError:
            raise
        except Exception as exc:  # tokenizers raises plain Exceptions on bad JSON
            raise CheckpointError(f"{self.family_name} state: cannot rebuild the tokenizer ({exc}); "
                                  "the saved run is corrupt") from None
