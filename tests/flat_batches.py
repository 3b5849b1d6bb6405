"""Small flat batches of random token ids for model tests (shared by several test files)."""

from __future__ import annotations

import numpy as np
import torch


def pad_documents(docs: list[list[int]], length: int | None = None) -> dict[str, torch.Tensor]:
    """``input_ids [B, L]`` padded with 0 and the matching ``mask`` (ids are never 0 in a document)."""
    length = length or max(1, max(len(d) for d in docs))
    ids = torch.zeros(len(docs), length, dtype=torch.long)
    for row, doc in enumerate(docs):
        ids[row, : len(doc)] = torch.tensor(doc, dtype=torch.long)
    return {"input_ids": ids, "mask": ids > 0}


def random_documents(lengths: list[int], vocab: int, seed: int = 0) -> list[list[int]]:
    """Documents of the given lengths with ids in [2, vocab) (no PAD, no UNK)."""
    rng = np.random.default_rng(seed)
    return [rng.integers(2, vocab, size=n).tolist() for n in lengths]


def random_matrix(vocab: int, dim: int, seed: int = 0) -> np.ndarray:
    """A stand-in pretrained embedding matrix ``[vocab, dim]`` whose PAD row is zero."""
    matrix = np.random.default_rng(seed).normal(size=(vocab, dim)).astype(np.float32)
    matrix[0] = 0
    return matrix


def assert_padded_batch_matches_each_alone(model, docs: list[list[int]], length: int, atol: float = 1e-5) -> None:
    """Masking invariance: the logits of ``docs`` padded together to ``length`` equal each
    document's logits when it runs alone, unpadded."""
    with torch.no_grad():
        batched = model(pad_documents(docs, length)).logits
        for row, doc in enumerate(docs):
            torch.testing.assert_close(batched[row : row + 1], model(pad_documents([doc])).logits, atol=atol, rtol=1e-5)  # tests/tolerance.py: KERNEL
