"""Padding flat token ids into rectangular arrays, in NumPy alone.

Torch-free so that the NumPy prediction paths (``numpy_forward``) use the same rule as the
torch batches (``data/batching``) without importing torch.
"""

from __future__ import annotations

import numpy as np


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
