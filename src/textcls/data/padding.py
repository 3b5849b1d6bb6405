"""Padding flat token ids into rectangular arrays, in NumPy alone.

Torch-free so that the NumPy prediction paths (``numpy_forward``) use the same rule as the
torch batches (``data/batching``) without importing torch.
"""

from __future__ import annotations

import numpy as np

# Padded tokens (rows x the longest document) an evaluation or prediction batch may hold, beside
# its document count. Sorted by length, a split's last batch of 256 holds its longest documents
# and pads them all to the very longest. benchmarks/results/eval_batching.md (one thread, untrained
# presets): on fdu_mtl/apparel's 400 test reviews (median 50 tokens, longest 447) this bound made
# the 6 x 6 transformer's pass 7.96x faster than no bound, FCSR's 4.03x, Kim's CNN's 3.67x, the
# BiLSTM's 1.29x; on 500 20news documents CSPAN's and SingleCNN-SPE's 5.95x and DASA's 3.20x.
# Smaller bounds gained little more for the attention models and cost the BiLSTM (0.73x at
# 1,024); on MR's short sentences every bound was within a few milliseconds of none.
EVAL_MAX_PIECES = 4096


def pad_flat(flat: np.ndarray, lengths: np.ndarray, starts: np.ndarray, rows: np.ndarray,
             pad_id: int = 0, *, width: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Documents ``rows`` of ``flat`` (documents one after another; document ``i`` is
    ``flat[starts[i]:starts[i] + lengths[i]]``) -> ``([B, L] int64, [B, L] bool mask)`` padded
    with ``pad_id``: to the longest of them (``L >= 1``) or, given ``width``, to ``L = width``
    (a longer document is cut at ``width``). A few numpy operations, not a copy per row."""
    row_lengths = lengths[rows]
    if width is None:
        width = max(1, int(row_lengths.max(initial=0)))
    mask = np.arange(width) < row_lengths[:, None]
    out = np.full((len(rows), width), pad_id, dtype=np.int64)
    out[mask] = flat[(starts[rows][:, None] + np.arange(width))[mask]]
    return out, mask



def sorted_batches(lengths: np.ndarray, batch_size: int, max_pieces: int | None = None) -> list[np.ndarray]:
    """Document positions sorted by length (stable) and cut into batches of ``batch_size``,
    so that each batch pads to its own longest document, not the longest of the call. With
    ``max_pieces``, a batch also holds at most that many padded pieces (its rows times its
    longest, at least 1; a longer document is a batch alone), so that a batch of long documents
    stays as small in memory as one of short ones."""
    order = np.argsort(np.asarray(lengths), kind="stable")
    if max_pieces is None:
        return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    # Shortest first, so the document that would join a batch is its longest so far.
    widths = np.maximum(np.asarray(lengths)[order], 1)
    batches, start = [], 0
    while start < len(order):
        end = start + 1
        while end < len(order) and end - start < batch_size and (end - start + 1) * widths[end] <= max_pieces:
            end += 1
        batches.append(order[start:end])
        start = end
    return batches
