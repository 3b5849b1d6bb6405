"""Token ids -> length-bucketed, padded batches with masks.

This layer knows token ids only (never files, texts or models). A batch is a
``dict[str, Tensor]`` (see ARCHITECTURE.md, "Batches"):

- flat: ``input_ids [B,L] long``, ``mask [B,L] bool`` (True = real token), and, when the
  documents carry hashed bigrams, ``bigram_ids [B,L2] long`` and ``bigram_mask [B,L2] bool``;
- hierarchical: ``input_ids [B,S,W] long``, ``word_mask [B,S,W] bool`` and
  ``sentence_mask [B,S] bool`` (a sentence is real iff it has at least one real word);
- always ``index [B] long``: each document's position in its dataset, so predictions made
  in bucketed (or DDP) order can be put back in dataset order;
- ``labels`` when labels are known: ``[B] long``, or ``[B,C] float`` multi-hot for
  multi-label data.

Padding is dynamic (to the longest document, sentence and sentence count in the batch) and
uses id 0. Masks are built from the true lengths, never by comparing ids with the pad id.
An empty document (or sentence) is kept, not dropped: its mask row is all False, and every
padded dimension is at least 1 so tensors never have a zero-sized axis.

Under DDP (``num_replicas > 1``) ``batch_size`` is the *global* batch: every rank draws
the same global batches and takes its contiguous slice of each, so ``R`` processes of
``B/R`` documents see exactly the batches one process of ``B`` documents sees. The global
batch size must be a multiple of ``num_replicas``. The last global batch, when it is
smaller and its size ``n`` is not a multiple of ``num_replicas``, is padded to the next
multiple by repeating its first documents (at most ``num_replicas - 1`` repeats), so every
rank gets the same number of batches and no rank gets an empty one. The repeats carry their
true ``index``: an evaluation that gathers predictions across ranks must keep one
prediction per index (or use ``drop_last=True``, which never repeats).
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Sequence as SequenceABC
from typing import Iterator, Sequence

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from ..errors import ConfigError, DataError
from ..validate import check_int
from .padding import pad_flat, sorted_batches  # noqa: F401  (re-exported: the batches' padding rules)

SHAPES = ("flat", "hierarchical")
_INT_DTYPES = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)


# --------------------------------------------------------------------------- dataset


def _id_row(values, where: str) -> torch.Tensor:
    """One sequence of token ids -> 1-D long tensor; anything else is a DataError."""
    if isinstance(values, torch.Tensor):
        row = values
    else:
        try:
            row = torch.as_tensor(values) if len(values) else torch.zeros(0, dtype=torch.long)
        except (TypeError, ValueError, RuntimeError):
            row = None
        if row is None:
            raise DataError(
                f"{where} is not a flat list of integer token ids; pass one list of ints per "
                "document (or pass hierarchical=True for lists of sentences)"
            )
    if row.dim() != 1:
        raise DataError(
            f"{where} has {row.dim()} dimensions, expected a flat list of token ids; pass "
            "hierarchical=True for documents given as lists of sentences"
        )
    if row.numel() and row.dtype not in _INT_DTYPES:
        raise DataError(f"{where} holds {row.dtype} values, not integer token ids; encode the text with the text pipeline first")
    row = row.long()
    if row.numel() and int(row.min()) < 0:
        raise DataError(f"{where} holds a negative token id ({int(row.min())}); token ids start at 0 ([PAD])")
    return row


def _int_lists(rows: Sequence) -> tuple[np.ndarray, np.ndarray] | None:
    """``(flat int64 ids, lengths)`` when ``rows`` is a list of lists (or tuples) of Python
    ints >= 0, which is what the text pipeline gives: ``_id_row`` accepts exactly these
    without a tensor per row (0.2 s for MR's 8,600 documents). Anything else gives None, and
    the row-by-row path then checks each row (and names the bad one)."""
    if not isinstance(rows, (list, tuple)) or not set(map(type, rows)) <= {list, tuple}:
        return None
    # bool is an int subclass that _id_row refuses (a row of bools is not token ids).
    if not set(map(type, itertools.chain.from_iterable(rows))) <= {int}:
        return None
    lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    try:
        flat = np.fromiter(itertools.chain.from_iterable(rows), dtype=np.int64, count=int(lengths.sum()))
    except OverflowError:
        return None
    if flat.size and flat.min() < 0:
        return None
    return flat, lengths


def _looks_hierarchical(ids: Sequence) -> bool:
    """A document whose first item is itself a sequence means documents are lists of sentences."""
    for doc in ids:
        if isinstance(doc, (list, tuple, np.ndarray, torch.Tensor)) and len(doc):
            first = doc[0]
            if isinstance(first, torch.Tensor):
                return first.dim() == 1
            if isinstance(first, np.ndarray):
                return first.ndim == 1
            return isinstance(first, (list, tuple))
    return False


def _label_index(value, where: str) -> int:
    try:
        label = operator.index(value)
    except TypeError:
        raise DataError(
            f"{where} is {value!r}, not an integer class index; map class names to indices first "
            "(or pass multi_label=True for lists of classes)"
        ) from None
    return label


class _FlatRows:
    """Rows of token ids held one after another: one int64 array, each row's start and length.

    A batch's rows are then padded in a few numpy operations (``pad_flat``) instead of one
    tensor per document and a copy per row; ``row(i)`` is a view of row ``i``."""

    def __init__(self, flat: np.ndarray, lengths: np.ndarray):
        self.lengths = lengths
        self.starts = np.cumsum(lengths) - lengths
        self.flat = flat
        self.tensor = torch.from_numpy(flat)

    @classmethod
    def of(cls, rows: Sequence, where: str) -> "_FlatRows":
        """Rows of token ids, checked: ``_id_row`` for each row (``where`` formatted with its
        position names it in an error), or at once when they are lists of Python ints."""
        fast = _int_lists(rows)
        if fast is not None:
            return cls(*fast)
        checked = [_id_row(row, where.format(i)) for i, row in enumerate(rows)]
        lengths = np.fromiter((r.shape[0] for r in checked), dtype=np.int64, count=len(checked))
        return cls(torch.cat(checked).numpy() if checked else np.zeros(0, dtype=np.int64), lengths)

    def row(self, i: int) -> torch.Tensor:
        start = int(self.starts[i])
        return self.tensor[start:start + int(self.lengths[i])]

    def pad(self, rows: np.ndarray, pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
        ids, mask = pad_flat(self.flat, self.lengths, self.starts, rows, pad_id)
        return torch.from_numpy(ids), torch.from_numpy(mask)


class _Examples(SequenceABC):
    """What ``EncodedDataset.__getitems__`` gives the DataLoader's ``collate_fn``: the examples
    ``dataset[i]`` for ``indices``, built only when read. ``Collator`` reads none of them: it
    pads the batch from the dataset's flat arrays in one step (``EncodedDataset.collate_flat``)."""

    def __init__(self, dataset: "EncodedDataset", indices: Sequence[int]):
        self.dataset = dataset
        self.indices = indices

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [self.dataset[i] for i in self.indices[k]]
        return self.dataset[self.indices[k]]

    def __iter__(self):
        return (self.dataset[i] for i in self.indices)


class EncodedDataset(Dataset):
    """Token-id documents (and optional labels and bigrams) as a map-style torch Dataset.

    Args:
        ids: ``list[list[int]]`` (flat) or ``list[list[list[int]]]`` (hierarchical: a
            document is a list of sentences). Tensors and numpy arrays are accepted too.
        labels: one class index per document, or (``multi_label=True``) one list of class
            indices per document; ``None`` when labels are unknown (prediction).
        bigrams: flat only: one list of hashed-bigram ids per document.
        multi_label: labels are lists of classes, batched as ``[B, C]`` multi-hot.
        num_classes: number of classes; required for multi-label (the multi-hot width), and
            used to check every label when given.
        hierarchical: force the shape; ``None`` detects it from the first non-empty document.
        tasks: multi-task data: the task index of each document (batched as ``task_ids [B]``).

    ``dataset[i]`` is a dict with ``index`` (``i``), ``input_ids`` (a 1-D long tensor, or a
    list of them, one per sentence), and ``labels`` / ``bigram_ids`` / ``task_ids`` when present.
    Flat documents (and bigrams) are stored one after another in one array, so a batch of
    them is padded in one vectorised step (``collate_flat``) rather than row by row.
    """

    def __init__(self, ids: Sequence, labels: Sequence | None = None, bigrams: Sequence | None = None,
                 *, multi_label: bool = False, num_classes: int | None = None,
                 hierarchical: bool | None = None, tasks: Sequence[int] | None = None):
        if hierarchical is None:
            hierarchical = _looks_hierarchical(ids)
        self.shape = "hierarchical" if hierarchical else "flat"
        self.multi_label = bool(multi_label)
        num_classes = check_int("num_classes", num_classes, 1, None, optional=True)
        if self.multi_label and num_classes is None:
            raise ConfigError("parameter 'num_classes' is required with multi_label=True (it is the width of the multi-hot labels)")
        self.num_classes = num_classes

        if hierarchical:
            self._docs = [self._sentences(doc, i) for i, doc in enumerate(ids)]
            self._lengths = [sum(len(s) for s in doc) for doc in self._docs]
            self._n = len(self._docs)
        else:
            self._docs = _FlatRows.of(ids, "document {}")
            self._lengths = self._docs.lengths.tolist()
            self._n = len(self._lengths)

        self._bigrams = None
        if bigrams is not None:
            if hierarchical:
                raise ConfigError("bigram ids are only supported for flat documents; drop 'bigrams' or use the flat shape")
            if len(bigrams) != self._n:
                raise DataError(f"got {len(bigrams)} bigram rows for {self._n} documents; pass one bigram list per document")
            self._bigrams = _FlatRows.of(bigrams, "bigram row of document {}")

        self._labels = None if labels is None else self._check_labels(labels)
        self._tasks = None
        if tasks is not None:
            if len(tasks) != self._n:
                raise DataError(f"got {len(tasks)} task ids for {self._n} documents; pass one task per document")
            self._tasks = [_label_index(t, f"task id of document {i}") for i, t in enumerate(tasks)]
            if any(t < 0 for t in self._tasks):
                raise DataError("a task id is negative; task ids index the dataset's task_names")
        self._label_rows = self._task_array = None
        if self._labels is not None:
            self._label_rows = (_FlatRows.of(self._labels, "labels of document {}")
                                if self.multi_label else np.asarray(self._labels, dtype=np.int64))
        if self._tasks is not None:
            self._task_array = np.asarray(self._tasks, dtype=np.int64)

    def _sentences(self, doc, i: int) -> list[torch.Tensor]:
        if isinstance(doc, torch.Tensor) or not hasattr(doc, "__len__"):
            raise DataError(f"document {i} is not a list of sentences; pass hierarchical=False for flat token lists")
        out = []
        for j, sentence in enumerate(doc):
            if not (isinstance(sentence, (list, tuple, np.ndarray)) or
                    (isinstance(sentence, torch.Tensor) and sentence.dim() == 1)):
                raise DataError(
                    f"sentence {j} of document {i} is {type(sentence).__name__}, not a list of token "
                    "ids; pass hierarchical=False for flat token lists"
                )
            out.append(_id_row(sentence, f"sentence {j} of document {i}"))
        return out

    def _check_labels(self, labels: Sequence) -> list:
        if len(labels) != self._n:
            raise DataError(f"got {len(labels)} labels for {self._n} documents; pass one label per document")
        bound = self.num_classes
        checked = []
        for i, value in enumerate(labels):
            if self.multi_label:
                if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
                    raise DataError(f"label of document {i} is {value!r}, not a list of class indices; pass one list per document with multi_label=True")
                classes = [_label_index(v, f"a label of document {i}") for v in value]
            else:
                if isinstance(value, (list, tuple, np.ndarray)):
                    raise DataError(f"label of document {i} is a list; pass multi_label=True (and num_classes) for multi-label data")
                classes = [_label_index(value, f"label of document {i}")]
            for c in classes:
                if c < 0 or (bound is not None and c >= bound):
                    allowed = f"[0, {bound})" if bound is not None else "non-negative"
                    raise DataError(f"label of document {i} is class {c}, outside {allowed}; check the label mapping or num_classes")
            checked.append(classes if self.multi_label else classes[0])
        return checked

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i: int) -> dict:
        if self.hierarchical:
            example = {"index": i, "input_ids": self._docs[i]}
        else:
            example = {"index": i, "input_ids": self._docs.row(i)}
        if self._bigrams is not None:
            example["bigram_ids"] = self._bigrams.row(i)
        if self._labels is not None:
            example["labels"] = self._labels[i]
        if self._tasks is not None:
            example["task_ids"] = self._tasks[i]
        return example

    def __getitems__(self, indices: Sequence[int]) -> Sequence[dict]:
        """The examples of one batch, for the DataLoader: ``dataset[i]`` for each index, read
        lazily so that ``Collator`` can pad flat documents straight from the stored arrays."""
        return _Examples(self, indices)

    def flat_arrays(self) -> dict:
        """The flat documents as NumPy arrays, for a trainer that walks them itself
        (fasttext-bag's per-document SGD): ``ids``, ``starts``, ``lengths``; ``bigram_ids``,
        ``bigram_starts``, ``bigram_lengths`` (None without bigrams); ``labels``: class
        indices ``[N]`` (int64), or multi-hot targets ``[N, C]`` (float32) when multi-label."""
        if self.hierarchical or self._label_rows is None:
            raise ConfigError("flat_arrays needs flat documents with labels (the training split)")
        bigrams = self._bigrams
        labels = self._label_rows
        if self.multi_label:
            labels = self._batch_labels(np.arange(self._n), self.num_classes).numpy().astype(np.float32)
        return {"ids": self._docs.flat, "starts": self._docs.starts, "lengths": self._docs.lengths,
                "bigram_ids": None if bigrams is None else bigrams.flat,
                "bigram_starts": None if bigrams is None else bigrams.starts,
                "bigram_lengths": None if bigrams is None else bigrams.lengths,
                "labels": labels}

    def collate_flat(self, indices: Sequence[int], pad_id: int = 0, *,
                     num_classes: int | None = None) -> dict[str, torch.Tensor]:
        """``collate_flat([self[i] for i in indices], pad_id, ...)``, the same tensors, built
        from the stored arrays in a few vectorised operations (flat datasets only).

        ``indices`` yielded by a ``BucketBatchSampler`` know the rest of their epoch: the
        batches after them are then collated in the same call, up to ``PREFETCH_BATCHES``
        batches or ``PREFETCH_CELLS`` padded ids, and handed out as they are asked for.
        Collation draws no random numbers, so this changes no batch; it only runs the numpy
        code back to back, where one batch between two training steps ran it cold (on MR,
        fasttext-bag's epoch took 15 % longer)."""
        plan = getattr(indices, "plan", None)
        if plan is None:
            return self._collate_rows(np.array(indices, dtype=np.int64).reshape(-1), pad_id, num_classes)
        return plan.collated(indices.position, (self, pad_id, num_classes),
                             lambda rows: self._collate_rows(rows, pad_id, num_classes))

    def _collate_rows(self, rows: np.ndarray, pad_id: int, num_classes: int | None) -> dict[str, torch.Tensor]:
        _check_nonempty(rows)
        input_ids, mask = self._docs.pad(rows, pad_id)
        batch = {"input_ids": input_ids, "mask": mask}
        if self._bigrams is not None:
            batch["bigram_ids"], batch["bigram_mask"] = self._bigrams.pad(rows, pad_id)
        batch["index"] = torch.from_numpy(rows)
        if self._task_array is not None:
            batch["task_ids"] = torch.from_numpy(self._task_array[rows])
        if self._label_rows is not None:
            batch["labels"] = self._batch_labels(rows, num_classes)
        return batch

    def _batch_labels(self, rows: np.ndarray, num_classes: int | None) -> torch.Tensor:
        if not self.multi_label:
            return torch.from_numpy(self._label_rows[rows])
        if num_classes is None:
            raise ConfigError("parameter 'num_classes' is required to build multi-hot labels; pass it to Collator")
        labels = torch.zeros(len(rows), num_classes, dtype=torch.float32)
        classes = self._label_rows
        counts = classes.lengths[rows]
        positions = np.repeat(classes.starts[rows] - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
        labels[torch.from_numpy(np.repeat(np.arange(len(rows)), counts)), classes.tensor[positions]] = 1.0
        return labels

    @property
    def hierarchical(self) -> bool:
        return self.shape == "hierarchical"

    @property
    def has_labels(self) -> bool:
        return self._labels is not None

    @property
    def has_bigrams(self) -> bool:
        return self._bigrams is not None

    @property
    def labels(self) -> list | None:
        """The labels as given (ints, or lists of ints for multi-label), or None."""
        return None if self._labels is None else list(self._labels)

    @property
    def lengths(self) -> list[int]:
        """Bucketing key per document: tokens (flat) or total words over all sentences
        (hierarchical, a proxy for the padded ``S x W`` cost)."""
        return list(self._lengths)

    def collator(self, pad_id: int = 0) -> "Collator":
        return Collator(shape=self.shape, multi_label=self.multi_label, num_classes=self.num_classes, pad_id=pad_id)


# --------------------------------------------------------------------------- collate


def _pad_rows(rows: list, pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows of ids -> ``([N, L] long, [N, L] bool mask)`` with ``L = max(1, longest)``."""
    rows = [torch.as_tensor(r, dtype=torch.long) for r in rows]
    lengths = torch.tensor([r.shape[0] for r in rows], dtype=torch.long)
    width = max(1, int(lengths.max()) if len(rows) else 1)
    out = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.arange(width) < lengths[:, None]
    if rows:
        # The mask's true cells, row after row, are the rows' ids one after another: one
        # masked copy instead of one per row is the cheaper path for a batch of short rows.
        out[mask] = torch.cat(rows)
    return out, mask


def _collate_common(examples: Sequence[dict], batch: dict, multi_label: bool, num_classes: int | None) -> dict:
    if any("index" not in ex for ex in examples):
        raise DataError("an example has no 'index'; build examples with EncodedDataset so predictions can be put back in order")
    batch["index"] = torch.tensor([int(ex["index"]) for ex in examples], dtype=torch.long)
    with_tasks = sum("task_ids" in ex for ex in examples)
    if with_tasks and with_tasks != len(examples):
        raise DataError(f"{with_tasks} of {len(examples)} examples in a batch have a task id; give every document one or none")
    if with_tasks:
        batch["task_ids"] = torch.tensor([int(ex["task_ids"]) for ex in examples], dtype=torch.long)
    with_labels = sum("labels" in ex for ex in examples)
    if with_labels and with_labels != len(examples):
        raise DataError(f"{with_labels} of {len(examples)} examples in a batch have labels; give every document a label or none")
    if with_labels:
        if multi_label:
            if num_classes is None:
                raise ConfigError("parameter 'num_classes' is required to build multi-hot labels; pass it to Collator")
            labels = torch.zeros(len(examples), num_classes, dtype=torch.float32)
            for i, ex in enumerate(examples):
                labels[i, torch.as_tensor(list(ex["labels"]), dtype=torch.long)] = 1.0
        else:
            labels = torch.tensor([int(ex["labels"]) for ex in examples], dtype=torch.long)
        batch["labels"] = labels
    return batch


def _check_nonempty(examples: Sequence) -> None:
    if len(examples) == 0:
        raise DataError("cannot collate an empty batch; the sampler must yield at least one document per batch")


def collate_flat(examples: Sequence[dict], pad_id: int = 0, *, multi_label: bool = False,
                 num_classes: int | None = None) -> dict[str, torch.Tensor]:
    """Flat examples -> ``input_ids [B,L]``, ``mask [B,L]`` (+ bigrams, ``index``, ``labels``).

    Each example is a dict with ``index``, ``input_ids`` (ids), and optionally
    ``bigram_ids`` and ``labels`` (an int, or a list of class indices when ``multi_label``).
    """
    _check_nonempty(examples)
    input_ids, mask = _pad_rows([ex["input_ids"] for ex in examples], pad_id)
    batch = {"input_ids": input_ids, "mask": mask}
    with_bigrams = sum("bigram_ids" in ex for ex in examples)
    if with_bigrams and with_bigrams != len(examples):
        raise DataError(f"{with_bigrams} of {len(examples)} examples in a batch have bigram ids; give every document bigrams or none")
    if with_bigrams:
        batch["bigram_ids"], batch["bigram_mask"] = _pad_rows([ex["bigram_ids"] for ex in examples], pad_id)
    return _collate_common(examples, batch, multi_label, num_classes)


def collate_hierarchical(examples: Sequence[dict], pad_id: int = 0, *, multi_label: bool = False,
                         num_classes: int | None = None) -> dict[str, torch.Tensor]:
    """Hierarchical examples -> ``input_ids [B,S,W]``, ``word_mask``, ``sentence_mask``.

    ``input_ids`` of an example is a list of sentences (each a list of ids). ``S`` is the
    most sentences in the batch and ``W`` the longest sentence in the batch (both >= 1).
    """
    _check_nonempty(examples)
    docs = [[torch.as_tensor(s, dtype=torch.long) for s in ex["input_ids"]] for ex in examples]
    n_sent = max(1, max(len(d) for d in docs))
    word_lengths = torch.zeros(len(docs), n_sent, dtype=torch.long)
    for i, doc in enumerate(docs):
        for j, sentence in enumerate(doc):
            word_lengths[i, j] = len(sentence)
    n_word = max(1, int(word_lengths.max()))
    input_ids = torch.full((len(docs), n_sent, n_word), pad_id, dtype=torch.long)
    for i, doc in enumerate(docs):
        for j, sentence in enumerate(doc):
            input_ids[i, j, : len(sentence)] = sentence
    word_mask = torch.arange(n_word) < word_lengths[..., None]
    batch = {"input_ids": input_ids, "word_mask": word_mask, "sentence_mask": word_lengths > 0}
    return _collate_common(examples, batch, multi_label, num_classes)


class Collator:
    """Picklable ``collate_fn`` (DataLoader workers need one; a lambda is not picklable)."""

    def __init__(self, shape: str = "flat", *, multi_label: bool = False,
                 num_classes: int | None = None, pad_id: int = 0):
        if shape not in SHAPES:
            raise ConfigError(f"input shape '{shape}' is not one of {', '.join(SHAPES)}")
        if multi_label and num_classes is None:
            raise ConfigError("parameter 'num_classes' is required with multi_label=True (it is the width of the multi-hot labels)")
        self.shape = shape
        self.multi_label = multi_label
        self.num_classes = num_classes
        self.pad_id = pad_id

    def __call__(self, examples: Sequence[dict]) -> dict[str, torch.Tensor]:
        if (isinstance(examples, _Examples) and self.shape == "flat" and examples.dataset.shape == "flat"
                and self.multi_label == examples.dataset.multi_label):
            return examples.dataset.collate_flat(examples.indices, self.pad_id, num_classes=self.num_classes)
        collate = collate_flat if self.shape == "flat" else collate_hierarchical
        return collate(examples, self.pad_id, multi_label=self.multi_label, num_classes=self.num_classes)

    def __repr__(self) -> str:
        return (f"Collator(shape={self.shape!r}, multi_label={self.multi_label}, "
                f"num_classes={self.num_classes}, pad_id={self.pad_id})")


# --------------------------------------------------------------------------- prediction


def flat_batches(ids: np.ndarray, lengths: np.ndarray, *, bigrams: np.ndarray | None = None,
                 bigram_lengths: np.ndarray | None = None, task_ids=None, batch_size: int = 64,
                 max_pieces: int | None = None,
                 device=None) -> Iterator[tuple[np.ndarray, dict[str, torch.Tensor]]]:
    """``(rows, batch)`` for prediction over flat token ids (``text.pipeline.FlatIds``): the
    documents sorted by length into batches of ``batch_size`` (and of at most ``max_pieces``
    padded tokens, ``padding.sorted_batches``); ``rows`` are their positions in
    the input, to put the outputs back in order. A batch holds the keys of ``collate_flat``
    (``input_ids``, ``mask``, ``bigram_ids``, ``bigram_mask``, ``task_ids``) and no ``index``
    or ``labels``. No tensor per document and no DataLoader: numpy pads, torch wraps."""
    batch_size = check_int("batch_size", batch_size, 1, None)
    starts = np.cumsum(lengths) - lengths
    if bigrams is not None:
        bigram_starts = np.cumsum(bigram_lengths) - bigram_lengths
    tasks = None if task_ids is None else np.asarray(task_ids, dtype=np.int64)
    if max_pieces is not None:
        max_pieces = check_int("max_pieces", max_pieces, 1, None)
    for rows in sorted_batches(lengths, batch_size, max_pieces):
        input_ids, mask = pad_flat(ids, lengths, starts, rows)
        batch = {"input_ids": input_ids, "mask": mask}
        if bigrams is not None:
            batch["bigram_ids"], batch["bigram_mask"] = pad_flat(bigrams, bigram_lengths, bigram_starts, rows)
        if tasks is not None:
            batch["task_ids"] = tasks[rows]
        batch = {k: torch.from_numpy(v) for k, v in batch.items()}
        if device is not None and torch.device(device).type != "cpu":
            batch = {k: v.to(device) for k, v in batch.items()}
        yield rows, batch


# --------------------------------------------------------------------------- sampler

# Batches collated together (see EncodedDataset.collate_flat), and at most this many padded
# ids ahead (8 MiB of int64, 1 MiB of masks). On MR, runs of 128 made fasttext-bag's epoch
# 3 % faster than runs of 32; whole epochs at once, no faster.
PREFETCH_BATCHES = 128
PREFETCH_CELLS = 1 << 20


class _EpochPlan:
    """One pass of a ``BucketBatchSampler`` over its batches, and the batches already collated."""

    def __init__(self, batches: list[list[int]]):
        self.batches = batches
        self.owner = None  # (dataset, pad_id, num_classes) of the batches in `ready`
        self.ready: dict[int, dict] = {}

    def collated(self, position: int, owner: tuple, collate) -> dict:
        """Batch ``position`` collated by ``collate(rows)``, with the batches after it when not done yet."""
        if self.owner is None or owner[0] is not self.owner[0] or owner[1:] != self.owner[1:]:
            self.owner, self.ready = owner, {}
        batch = self.ready.pop(position, None)
        if batch is not None:
            return batch
        cells, ahead = 0, {}
        for j in range(position, min(position + PREFETCH_BATCHES, len(self.batches))):
            ahead[j] = collate(np.array(self.batches[j], dtype=np.int64))
            cells += sum(v.numel() for k, v in ahead[j].items() if k in ("input_ids", "bigram_ids"))
            if cells >= PREFETCH_CELLS:
                break
        self.ready = ahead
        return self.ready.pop(position)


class _PlannedBatch(list):
    """A batch of dataset indices (a plain list to everyone else) that knows its epoch's plan
    and its position in it, so the dataset can collate the batches after it in one go."""

    def __init__(self, indices: list[int], plan: _EpochPlan, position: int):
        super().__init__(indices)
        self.plan = plan
        self.position = position

    def __reduce__(self):
        # A DataLoader worker gets a plain list: it sees only its own batches of the plan.
        return list, (list(self),)



class BucketBatchSampler(Sampler[list[int]]):
    """Length-bucketed batches of dataset indices, deterministic for a given (seed, epoch).

    ``shuffle=True``: permute all indices with a generator seeded by ``(seed, epoch)``, cut
    the permutation into chunks of ``batch_size * bucket_factor``, sort each chunk by
    length (stable, so ties keep their random order), cut it into batches, and shuffle the
    order of all batches. ``shuffle=False`` (evaluation): sort the whole dataset by length
    (stable: ties in dataset order) and cut it into batches, in that order; with
    ``max_pieces`` a batch also holds at most that many padded tokens (rows times its longest
    document's length, ``padding.sorted_batches``; a longer document is a batch alone), so a
    few long documents do not pad a batch of hundreds: self-attention's cost grows with the
    square of the padded length. A hierarchical document's length is its word count, so there
    the bound is on rows x words, not on the ``[B, S, W]`` cells (sentences x the longest
    sentence), which can be several times more. ``max_pieces`` is for single-process
    evaluation only: a training batch is the recipe's.

    Every index appears exactly once per epoch (plus the DDP padding described in the module
    docstring). Call ``set_epoch(epoch)`` before each epoch, as with ``DistributedSampler``.
    ``batch_size`` is the global batch; this rank yields its contiguous slice of each one.
    """

    def __init__(self, lengths: Sequence[int], batch_size: int, *, shuffle: bool = True, seed: int = 0,
                 bucket_factor: int = 50, drop_last: bool = False, num_replicas: int = 1, rank: int = 0,
                 max_pieces: int | None = None):
        self.batch_size = check_int("batch_size", batch_size, 1, None)
        self.max_pieces = None if max_pieces is None else check_int("max_pieces", max_pieces, 1, None)
        if self.max_pieces is not None and (shuffle or drop_last or num_replicas != 1):
            # A bounded last batch is short because of the bound, not as a remainder (drop_last would
            # drop the longest documents), and every short batch would need DDP's repeats.
            raise ConfigError("max_pieces bounds single-process evaluation batches only (shuffle=False, "
                              "drop_last=False, num_replicas=1); a training batch is the recipe's batch_size, "
                              "so leave max_pieces unset there")
        self.bucket_factor = check_int("bucket_factor", bucket_factor, 1, None)
        self.num_replicas = check_int("num_replicas", num_replicas, 1, None)
        self.rank = check_int("rank", rank, 0, self.num_replicas - 1)
        if self.batch_size % self.num_replicas:
            raise ConfigError(
                f"parameter 'batch_size' = {self.batch_size} (the global batch) is not divisible by "
                f"num_replicas = {self.num_replicas}; use a multiple of {self.num_replicas}"
            )
        self.lengths = np.asarray(lengths, dtype=np.int64).reshape(-1)
        if len(self.lengths) == 0:
            raise DataError("cannot batch an empty dataset (0 documents); check that the split has records")
        if self.lengths.min() < 0:
            raise DataError(f"document {int(self.lengths.argmin())} has a negative length; lengths count tokens")
        self.shuffle = bool(shuffle)
        self.seed = int(seed)
        self.drop_last = bool(drop_last)
        self.epoch = 0
        self._bounded_count = None

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch whose batches ``__iter__`` yields (ignored when not shuffling)."""
        self.epoch = int(epoch)

    def global_batches(self) -> list[list[int]]:
        """This epoch's global batches (every rank computes the same list)."""
        n, size = len(self.lengths), self.batch_size
        if self.shuffle:
            # SeedSequence mixes (seed, epoch), so (seed 0, epoch 1) differs from (seed 1, epoch 0).
            rng = np.random.default_rng([self.seed, self.epoch])
            order = rng.permutation(n)
            chunk = size * self.bucket_factor
            batches = []
            for start in range(0, n, chunk):
                part = order[start:start + chunk]
                part = part[np.argsort(self.lengths[part], kind="stable")]
                batches.extend(part[i:i + size] for i in range(0, len(part), size))
            # A chunk is a multiple of batch_size, so only the very last batch can be short;
            # drop it before shuffling so drop_last removes exactly that one.
            if self.drop_last and len(batches[-1]) < size:
                batches.pop()
            batches = [batches[i] for i in rng.permutation(len(batches))]
        else:
            batches = sorted_batches(self.lengths, size, self.max_pieces)
            if self.drop_last and len(batches[-1]) < size:
                batches.pop()
        return [b.tolist() for b in batches]

    def _rank_slice(self, batch: list[int]) -> list[int]:
        replicas = self.num_replicas
        if replicas == 1:
            return batch
        per_rank = -(-len(batch) // replicas)
        # Pad by repeating the batch's first documents: at most replicas-1 repeats, and
        # always from this batch so the padded slice keeps its length homogeneity.
        padded = batch + [batch[i % len(batch)] for i in range(per_rank * replicas - len(batch))]
        return padded[self.rank * per_rank:(self.rank + 1) * per_rank]

    def __iter__(self) -> Iterator[list[int]]:
        batches = [self._rank_slice(batch) for batch in self.global_batches()]
        plan = _EpochPlan(batches)
        for position, batch in enumerate(batches):
            yield _PlannedBatch(batch, plan, position)

    def __len__(self) -> int:
        if self.max_pieces is not None:
            if self._bounded_count is None:  # unshuffled: the same batches every epoch
                self._bounded_count = len(self.global_batches())
            return self._bounded_count
        full, rest = divmod(len(self.lengths), self.batch_size)
        return full + (1 if rest and not self.drop_last else 0)


# --------------------------------------------------------------------------- loader


class BatchLoader(DataLoader):
    """The ``DataLoader`` that ``make_loader`` returns.

    With no worker process and no pinned memory it iterates by itself: each batch of its
    batch sampler through the dataset's ``__getitems__`` and ``collate_fn``, which is what
    DataLoader's single-process iterator does, including its one draw from the global torch
    generator when the iterator is made (its base seed), so every random state after it is
    the same. It skips that iterator's per-batch bookkeeping (a profiler range, the fetcher):
    about 10 % of fasttext-bag's training epoch on MR. Otherwise it is a plain DataLoader.
    """

    def __iter__(self):
        if self.num_workers > 0 or self.pin_memory:
            return super().__iter__()
        batches = iter(self.batch_sampler)
        torch.empty((), dtype=torch.int64).random_(generator=self.generator)
        return self._collated(batches)

    def _collated(self, batches) -> Iterator:
        fetch = getattr(self.dataset, "__getitems__", None)
        for indices in batches:
            examples = fetch(indices) if fetch is not None else [self.dataset[i] for i in indices]
            yield self.collate_fn(examples)



def make_loader(dataset: EncodedDataset, batch_size: int, *, shuffle: bool, seed: int = 0,
                num_replicas: int = 1, rank: int = 0, num_workers: int = 0,
                bucket_factor: int = 50, drop_last: bool = False, pin_memory: bool = False,
                max_pieces: int | None = None) -> BatchLoader:
    """A DataLoader of bucketed, padded batches for ``dataset``.

    ``batch_size`` is the global batch (see the module docstring for DDP). The sampler is
    ``loader.batch_sampler``: call ``loader.batch_sampler.set_epoch(epoch)`` before each
    training epoch to get that epoch's (deterministic) order. ``max_pieces`` bounds an
    evaluation batch's rows times its longest document (``BucketBatchSampler``;
    ``padding.EVAL_MAX_PIECES`` is the bound the library's evaluation and prediction use).
    """
    if not isinstance(dataset, EncodedDataset):
        raise ConfigError(f"make_loader needs an EncodedDataset, got {type(dataset).__name__}; wrap token ids with EncodedDataset(ids, labels)")
    num_workers = check_int("num_workers", num_workers, 0, None)
    sampler = BucketBatchSampler(dataset.lengths, batch_size, shuffle=shuffle, seed=seed,
                                 bucket_factor=bucket_factor, drop_last=drop_last,
                                 num_replicas=num_replicas, rank=rank, max_pieces=max_pieces)
    return BatchLoader(dataset, batch_sampler=sampler, collate_fn=dataset.collator(),
                       num_workers=num_workers, pin_memory=pin_memory)
