"""Forward passes in NumPy for the models that predict without torch.

``textcls predict RUN TEXT`` spends more time starting than predicting: importing torch alone
takes about 1.4 s. A fasttext-bag model is two embedding tables, a mean and one bias-free
linear layer, which NumPy computes as fast as torch does, so its runs predict through
``FastTextBagForward`` and never import torch (``predictor.py`` picks it; ARCHITECTURE.md,
"Decisions", gives the measurements). The arithmetic follows ``models/fasttext_bag.py``:
float32 sums of the rows of each document's real ids (no padding), divided by their count,
times the output matrix; ``tests/test_predict_path.py`` checks the two agree within
``tests/tolerance.KERNEL``.
"""

from __future__ import annotations

import numpy as np

from .errors import CheckpointError

__all__ = ["FastTextBagForward", "FORWARDS", "probabilities"]


def _segment_sums(table_t: np.ndarray, ids: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``[N, K]``: the sum of the columns ``ids`` of ``table_t`` (``[K, rows]``) over each
    document (documents one after another in ``ids``, ``lengths`` each; none: zero). One
    ``bincount`` per output column, summing in float64: about 10x faster than
    ``np.add.reduceat`` over gathered rows."""
    owner = np.repeat(np.arange(len(lengths)), lengths)
    gathered = table_t[:, ids]
    return np.stack([np.bincount(owner, weights=column, minlength=len(lengths)) for column in gathered], axis=1)


class FastTextBagForward:
    """fasttext-bag's forward pass from its state-dict arrays (``words.weight``,
    ``bigrams.weight`` when it has bigrams, ``output.weight``).

    The model is linear up to the softmax: ``mean(rows) @ W.T == mean(rows @ W.T)``. With no
    more classes than dimensions the tables are multiplied by the output matrix once, at load
    (``[classes, rows]``), so a token costs ``classes`` numbers, not ``dim``; otherwise the
    tables are kept as they are (transposed, ``[dim, rows]``) and the mean is multiplied."""

    def __init__(self, arrays: dict[str, np.ndarray]):
        try:
            words, output = arrays["words.weight"], arrays["output.weight"]
        except KeyError as exc:
            raise CheckpointError(f"the fasttext-bag weights lack array {exc}; retrain or restore the run") from None
        bigrams = arrays.get("bigrams.weight")
        self.vocab_size, self.num_classes = words.shape[0], output.shape[0]
        self.has_bigrams = bigrams is not None
        self.output = np.asarray(output, dtype=np.float32)
        self.projected = self.num_classes <= words.shape[1]
        tables = [words] + ([bigrams] if bigrams is not None else [])
        if self.projected:
            self.tables = [np.ascontiguousarray(self.output @ np.asarray(t, dtype=np.float32).T) for t in tables]
        else:
            self.tables = [np.ascontiguousarray(np.asarray(t, dtype=np.float32).T) for t in tables]

    def logits(self, flat) -> np.ndarray:
        """``[N, C]`` float32 logits of a ``text.pipeline.FlatIds``."""
        total = _segment_sums(self.tables[0], flat.ids, flat.lengths)
        count = flat.lengths.copy()
        if self.has_bigrams:
            if flat.bigrams is None:
                raise CheckpointError("this fasttext-bag model has bigram vectors but its pipeline makes no "
                                      "bigrams (bigram_buckets = 0); the run's config.json does not match its weights")
            total += _segment_sums(self.tables[1], flat.bigrams, flat.bigram_lengths)
            count += flat.bigram_lengths
        mean = (total / np.maximum(count, 1)[:, None]).astype(np.float32)
        return mean if self.projected else mean @ self.output.T


def probabilities(logits: np.ndarray, multi_label: bool) -> np.ndarray:
    """Softmax over classes (per-class sigmoid for multi-label), float32."""
    logits = logits.astype(np.float32, copy=False)
    if multi_label:
        with np.errstate(over="ignore"):  # exp(1000) is inf, and 1 / (1 + inf) the right 0
            return (1.0 / (1.0 + np.exp(-logits))).astype(np.float32)
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    return (shifted / shifted.sum(axis=1, keepdims=True)).astype(np.float32)


# Model families whose runs predict without torch, by config.json's "family".
FORWARDS = {"fasttext-bag": FastTextBagForward}
