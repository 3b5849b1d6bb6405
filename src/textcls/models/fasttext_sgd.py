"""fastText's own training loop for ``fasttext-bag`` (recipe optimizer ``per-example-sgd``).

fastText trains with one SGD step per document (Joulin et al. 2017, section 2: "stochastic
gradient descent and a linearly decaying learning rate"; the library's Hogwild loop, here on
one thread). A batched torch step costs ~100 us of dispatch whatever the batch holds, which
for 10-d rows and a few words a document is almost all of it. The passes below are that
algorithm compiled by numba, over the dataset's flat id arrays, updating the torch tables in
place (they share memory with the NumPy views), so saving, export and prediction are
unchanged. Numba rather than C: nothing to compile at install time, the compiled passes are
cached on disk, and the loop stays readable next to the model.

All arithmetic is float32, as fastText's. The callers check every id, label and weight
against the tables first (``FastTextBag.per_example_epoch``): numba does not bound-check.

Imported only when such a recipe trains, so that ``import textcls`` does not load numba.
"""

import numpy as np
from numba import njit


def _jit(function):
    """``njit``, cached on disk where numba finds a writable cache folder (next to this file,
    or ``NUMBA_CACHE_DIR``); where it finds none, compiled in memory in every process."""
    try:
        return njit(cache=True, nogil=True)(function)
    except RuntimeError:  # numba: "cannot cache function ...: no locator available"
        return njit(nogil=True)(function)


@_jit
def _sum_rows(hidden, table, ids, start, length):
    """``hidden += table[ids[t]]`` for the document's ``length`` ids from ``start``."""
    for t in range(start, start + length):
        row = table[ids[t]]
        for j in range(hidden.shape[0]):
            hidden[j] += row[j]


@_jit
def _add_to_rows(table, ids, start, length, grad):
    """``table[ids[t]] += grad`` for the document's ids, once per occurrence."""
    for t in range(start, start + length):
        row = table[ids[t]]
        for j in range(grad.shape[0]):
            row[j] += grad[j]


@_jit
def _scale(vector, n):
    """``vector /= n`` in float32 (nothing for an empty document)."""
    if n > 0:
        factor = np.float32(1.0) / np.float32(n)
        for j in range(vector.shape[0]):
            vector[j] *= factor


@_jit
def _mean_of_rows(hidden, words, bigrams, ids, start, length, bigram_ids, bigram_start, bigram_length):
    """``hidden`` = the mean of the document's word and bigram rows (zero for an empty one);
    returns the number of rows."""
    hidden[:] = 0.0
    _sum_rows(hidden, words, ids, start, length)
    _sum_rows(hidden, bigrams, bigram_ids, bigram_start, bigram_length)
    _scale(hidden, length + bigram_length)
    return length + bigram_length


@_jit
def _step_output_row(grad, hidden, row, alpha):
    """fastText's per-class update: ``grad += alpha * row`` with the row as it was, then
    ``row += alpha * hidden``."""
    for j in range(hidden.shape[0]):
        grad[j] += alpha * row[j]
        row[j] += alpha * hidden[j]


@_jit
def _step_input_rows(grad, n, words, bigrams, ids, start, length, bigram_ids, bigram_start, bigram_length):
    """Every input row of the document moves by ``grad / n``, once per occurrence (an empty
    document has no row to move)."""
    _scale(grad, n)
    _add_to_rows(words, ids, start, length, grad)
    _add_to_rows(bigrams, bigram_ids, bigram_start, bigram_length, grad)


@_jit
def _dot(a, b):
    # A loop, not np.dot: numba's np.dot calls BLAS, whose call costs more than 10 products.
    total = np.float32(0.0)
    for j in range(a.shape[0]):
        total += a[j] * b[j]
    return total


@_jit
def softmax_pass(words, bigrams, output, ids, starts, lengths, bigram_ids, bigram_starts, bigram_lengths,
                 order, labels, class_weights, lr):
    """One pass of fastText's softmax loss (``Loss::computeOutput`` then ``Model::update``).

    For document ``i``: ``h`` = mean of its word and bigram rows; ``p = softmax(B h)``; with
    ``a_c = lr * w_y * ([c = y] - p_c)`` the hidden gradient ``g = sum_c a_c B_c`` is taken
    before ``B_c += a_c h``, and every input row of the document gets ``g / n`` (a repeated
    word, once per occurrence), as fastText's ``Model::update`` does. Returns the summed
    weighted cross-entropy."""
    dim = output.shape[1]
    n_classes = output.shape[0]
    hidden = np.zeros(dim, dtype=np.float32)
    grad = np.zeros(dim, dtype=np.float32)
    probs = np.zeros(n_classes, dtype=np.float32)
    total = 0.0
    for k in range(order.shape[0]):
        i = order[k]
        n = _mean_of_rows(hidden, words, bigrams, ids, starts[i], lengths[i], bigram_ids, bigram_starts[i],
                          bigram_lengths[i])
        top = np.float32(-np.inf)
        for c in range(n_classes):
            probs[c] = _dot(output[c], hidden)
            top = max(top, probs[c])
        norm = np.float32(0.0)
        for c in range(n_classes):
            probs[c] = np.exp(probs[c] - top)
            norm += probs[c]
        y = labels[i]
        weight = class_weights[y]
        total += -weight * np.log(max(probs[y] / norm, np.float32(1e-30)))
        grad[:] = 0.0
        for c in range(n_classes):
            target = np.float32(1.0) if c == y else np.float32(0.0)
            _step_output_row(grad, hidden, output[c], np.float32(lr * weight * (target - probs[c] / norm)))
        _step_input_rows(grad, n, words, bigrams, ids, starts[i], lengths[i], bigram_ids, bigram_starts[i],
                         bigram_lengths[i])
    return total


@_jit
def one_vs_all_pass(words, bigrams, output, ids, starts, lengths, bigram_ids, bigram_starts, bigram_lengths,
                    order, targets, positive_weights, lr):
    """One pass of fastText's one-vs-all loss (``-loss ova``): a sigmoid per label, the
    positives of label ``c`` weighted by ``positive_weights[c]`` (BCE's ``pos_weight``), so
    ``a_c = lr * (w_c t_c (1 - s_c) - (1 - t_c) s_c)``; otherwise as ``softmax_pass``.
    Returns the summed loss, averaged over the labels as ``BCEWithLogitsLoss`` averages."""
    dim = output.shape[1]
    n_classes = output.shape[0]
    hidden = np.zeros(dim, dtype=np.float32)
    grad = np.zeros(dim, dtype=np.float32)
    total = 0.0
    for k in range(order.shape[0]):
        i = order[k]
        n = _mean_of_rows(hidden, words, bigrams, ids, starts[i], lengths[i], bigram_ids, bigram_starts[i],
                          bigram_lengths[i])
        grad[:] = 0.0
        loss = 0.0
        for c in range(n_classes):
            z = _dot(output[c], hidden)
            s = np.float32(1.0) / (np.float32(1.0) + np.exp(-z))
            target = targets[i, c]
            weight = positive_weights[c]
            # log(1 + e^-z), stable for either sign of z; log(1 + e^z) is that plus z.
            soft_neg = max(-z, np.float32(0.0)) + np.log1p(np.exp(-abs(z)))
            loss += weight * target * soft_neg + (1.0 - target) * (soft_neg + z)
            alpha = np.float32(lr * (weight * target * (np.float32(1.0) - s) - (np.float32(1.0) - target) * s))
            _step_output_row(grad, hidden, output[c], alpha)
        total += loss / n_classes
        _step_input_rows(grad, n, words, bigrams, ids, starts[i], lengths[i], bigram_ids, bigram_starts[i],
                         bigram_lengths[i])
    return total
