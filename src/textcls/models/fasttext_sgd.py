"""fastText's own training loop for ``fasttext-bag`` (recipe optimizer ``per-example-sgd``).

fastText trains with one SGD step per document (Joulin et al. 2017, section 2: "stochastic
gradient descent and a linearly decaying learning rate"; the library's Hogwild loop, here on
one thread). A batched torch step costs ~100 us of dispatch whatever the batch holds, which
for 10-d rows and a few words a document is almost all of it: on MPQA the engine's batch-32
steps trained at ~4,700 documents/s where fastText trains at ~160,000. The loop below is
that algorithm compiled by numba, over the dataset's flat id arrays, updating the torch
tables in place (they share memory with the NumPy views), so saving, export and prediction
are unchanged. Numba rather than C: it compiles at first use (then from its on-disk cache),
needs no compiler at install time, and keeps the loop readable next to the model.

Imported only when such a recipe trains, so that ``import textcls`` does not load numba.
"""

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _dot(a, b):
    # A loop, not np.dot: numba's np.dot calls BLAS, whose call costs more than 10 products.
    total = np.float32(0.0)
    for j in range(a.shape[0]):
        total += a[j] * b[j]
    return total


@njit(cache=True, nogil=True)
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
        n = lengths[i] + bigram_lengths[i]
        hidden[:] = 0.0
        for t in range(starts[i], starts[i] + lengths[i]):
            hidden += words[ids[t]]
        for t in range(bigram_starts[i], bigram_starts[i] + bigram_lengths[i]):
            hidden += bigrams[bigram_ids[t]]
        if n > 0:
            hidden /= n
        top = -np.inf
        for c in range(n_classes):
            probs[c] = _dot(output[c], hidden)
            top = max(top, probs[c])
        norm = 0.0
        for c in range(n_classes):
            probs[c] = np.exp(probs[c] - top)
            norm += probs[c]
        probs /= norm
        y = labels[i]
        weight = class_weights[y]
        total += -weight * np.log(max(probs[y], 1e-30))
        grad[:] = 0.0
        for c in range(n_classes):
            alpha = lr * weight * ((1.0 if c == y else 0.0) - probs[c])
            grad += alpha * output[c]
            output[c] += alpha * hidden
        if n > 0:
            grad /= n
        for t in range(starts[i], starts[i] + lengths[i]):
            words[ids[t]] += grad
        for t in range(bigram_starts[i], bigram_starts[i] + bigram_lengths[i]):
            bigrams[bigram_ids[t]] += grad
    return total


@njit(cache=True, nogil=True)
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
        n = lengths[i] + bigram_lengths[i]
        hidden[:] = 0.0
        for t in range(starts[i], starts[i] + lengths[i]):
            hidden += words[ids[t]]
        for t in range(bigram_starts[i], bigram_starts[i] + bigram_lengths[i]):
            hidden += bigrams[bigram_ids[t]]
        if n > 0:
            hidden /= n
        grad[:] = 0.0
        loss = 0.0
        for c in range(n_classes):
            z = _dot(output[c], hidden)
            s = 1.0 / (1.0 + np.exp(-z))
            target = targets[i, c]
            weight = positive_weights[c]
            # log(1 + e^-z) and log(1 + e^z), stable for either sign of z.
            soft_neg = max(-z, 0.0) + np.log1p(np.exp(-abs(z)))
            loss += weight * target * soft_neg + (1.0 - target) * (soft_neg + z)
            alpha = lr * (weight * target * (1.0 - s) - (1.0 - target) * s)
            grad += alpha * output[c]
            output[c] += alpha * hidden
        total += loss / n_classes
        if n > 0:
            grad /= n
        for t in range(starts[i], starts[i] + lengths[i]):
            words[ids[t]] += grad
        for t in range(bigram_starts[i], bigram_starts[i] + bigram_lengths[i]):
            bigrams[bigram_ids[t]] += grad
    return total
