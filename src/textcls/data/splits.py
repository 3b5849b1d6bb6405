"""Seeded, stratified splits, and the label check done at evaluation time.

Split rules (also in ARCHITECTURE.md, "Splits"):

- A dataset without an official test split (``mr``, ``mpqa``, ``ag_news`` offline, a user's
  single file) gets a stratified test split drawn with ``split_seed`` (0 by default). The
  split seed is separate from the training seed, so every run, model and reader sees the
  same test set. The held-out share is ``test_fraction`` (10% by default; ``ag_news`` 20%,
  so that its 7,600 offline documents give a 1,520-document test set).
- A dataset without a dev split gets one from ``ensure_dev``: a stratified ``fraction`` of
  train drawn with the same kind of seed; ``fdu_mtl/<domain>`` instead takes the last 200
  training lines as dev, as the FCSR paper does.
- ``max_per_split`` keeps a seeded, stratified subsample of each split (class balance kept) that
  holds a record of each class of two or more records; a ``max_per_split`` below a split's number
  of classes is refused with the least value that works.
- Stratification uses the class name; for multi-label records it uses the first listed
  label. Classes with a single record cannot be on both sides, so they stay on the kept
  side. When the held-out part is smaller than the number of classes (tiny data) the split
  falls back to a seeded random split.
- Held-out size is ``ceil(fraction * n)`` (scikit-learn's rule); records keep their file
  order within each side.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace
from typing import Any, Sequence

import datasets
import numpy as np
from sklearn.model_selection import train_test_split

from ..errors import ConfigError, DataError
from ..validate import check_int, range_check
from .records import TextDataset, select_records

SPLIT_ORDER = ("train", "dev", "test")
SUBSAMPLE_NOTE = "stratified subsample"


# The test share drawn when a source has no test split (ag_news offline: 0.2, see catalog.py).
DEFAULT_TEST_FRACTION = 0.1
# The largest share of a split that may be held out as test or dev.
MAX_HELD_OUT = 0.9


def check_max_per_split(value) -> int:
    """``max_per_split`` (records kept of each split) as an int, or a ConfigError."""
    return check_int("max_per_split", value, 1, None)


def _stratum(label: Any) -> str:
    if isinstance(label, (list, tuple)):
        return label[0] if label else ""
    return label


def stratified_split(labels: Sequence[Any], fraction: float | int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Split record indices into ``(keep_idx, held_idx)``, stratified by class and seeded.

    ``fraction`` in (0, 1) is the held-out share (``ceil(fraction * n)`` records); an int is
    the held-out count. Multi-label records (lists) are stratified on their first label.
    Both index arrays are sorted.
    """
    n = len(labels)
    if isinstance(fraction, (int, np.integer)) and not isinstance(fraction, bool):
        n_held = int(fraction)
    else:
        range_check("fraction", fraction, 0, 1, low_open=True, high_open=True)
        n_held = math.ceil(fraction * n)
    if n < 2 or not 1 <= n_held < n:
        raise DataError(
            f"cannot hold out {n_held} of {n} records (fraction {fraction}); use more data or another fraction"
        )
    strata = np.array([_stratum(l) for l in labels], dtype=object)
    counts = Counter(strata.tolist())
    # A class with one record cannot be on both sides; it stays with the kept records.
    lonely = np.array([counts[s] < 2 for s in strata.tolist()], dtype=bool)
    pool = np.flatnonzero(~lonely)
    pool_strata = strata[pool]
    n_classes = len(set(pool_strata.tolist()))
    if n_classes and n_classes <= n_held <= len(pool) - n_classes:
        _, held = train_test_split(pool, test_size=n_held, random_state=seed, stratify=pool_strata.astype(str))
    else:
        # Too few records to stratify: a seeded random split of all of them.
        held = np.random.default_rng(seed).permutation(n)[:n_held]
    held = np.sort(np.asarray(held, dtype=np.int64))
    keep = np.setdiff1d(np.arange(n, dtype=np.int64), held)
    return keep, held


def split_labels(split: datasets.Dataset) -> list:
    """The label column of one split as a Python list (fast path through Arrow)."""
    column = "labels" if "labels" in split.column_names else "label"
    return split.with_format("arrow")[column].to_pylist()


def split_strata(split: datasets.Dataset) -> list:
    """What a split is stratified by: the class, or (multi-task data) the task and the class,
    so that a subsample or a dev carve keeps every task's share and class balance."""
    labels = split_labels(split)
    if "task" not in split.column_names:
        return labels
    tasks = split.with_format("arrow")["task"].to_pylist()
    return [f"{task}\t{_stratum(label)}" for task, label in zip(tasks, labels)]


def _ordered(splits: dict[str, datasets.Dataset]) -> datasets.DatasetDict:
    names = sorted(splits, key=lambda s: SPLIT_ORDER.index(s) if s in SPLIT_ORDER else len(SPLIT_ORDER))
    return datasets.DatasetDict({s: splits[s] for s in names})


def carve_split(
    ds: TextDataset, new_split: str, fraction: float, seed: int, source: str = "train", seed_name: str = "split_seed"
) -> TextDataset:
    """Move a seeded stratified ``fraction`` of ``source`` into ``new_split`` (a new TextDataset)."""
    if new_split in ds.splits:
        raise DataError(f"dataset '{ds.name}' already has a '{new_split}' split; it is not carved again")
    base = ds[source]
    keep, held = stratified_split(split_strata(base), fraction, seed)
    splits = dict(ds.splits)
    splits[source] = select_records(base, keep)
    splits[new_split] = select_records(base, held)
    notes = dict(ds.split_notes)
    was = notes.get(source, source)
    notes[new_split] = (
        f"seeded stratified {fraction:.0%} of {source} ({len(held)} of {len(base)} records, {seed_name}={seed})"
    )
    notes[source] = f"{was}, minus the {new_split} split"
    return replace(ds, splits=_ordered(splits), split_notes=notes)


def tail_split(ds: TextDataset, new_split: str, count: int, source: str = "train") -> TextDataset:
    """Move the last ``count`` records of ``source`` (in file order) into ``new_split``."""
    base = ds[source]
    if not 0 < count < len(base):
        raise DataError(f"dataset '{ds.name}': cannot take the last {count} of {len(base)} {source} records as {new_split}")
    splits = dict(ds.splits)
    splits[source] = select_records(base, range(len(base) - count))
    splits[new_split] = select_records(base, range(len(base) - count, len(base)))
    notes = dict(ds.split_notes)
    notes[new_split] = f"the last {count} {source} lines of the file (as the paper does)"
    notes[source] = f"{notes.get(source, source)}, minus its last {count} lines"
    return replace(ds, splits=_ordered(splits), split_notes=notes)


def ensure_dev(ds: TextDataset, fraction: float = 0.1, seed: int = 0) -> TextDataset:
    """Return ``ds`` with a ``dev`` split, carving a seeded stratified one from train if needed.

    A dataset that already has a ``dev`` split is returned unchanged.
    """
    if "dev" in ds.splits:
        return ds
    range_check("dev_fraction", fraction, 0, MAX_HELD_OUT, low_open=True)
    carved = carve_split(ds, "dev", fraction, seed, seed_name="seed")
    _check_carve_keeps_classes(ds, carved)
    return carved


def _check_carve_keeps_classes(ds: TextDataset, carved: TextDataset) -> None:
    """A train split that ``max_per_split`` cut to about a record a class is too small to give a
    dev split (the carve of tiny data is a random one, and can take a class's only record):
    refused, naming the option, instead of "the training labels hold a single class" later.
    Only for a subsample: tiny data of the user's own keeps its earlier, tested behaviour."""
    if SUBSAMPLE_NOTE not in ds.split_notes.get("train", ""):
        return
    before = {_stratum(s) for s in split_strata(ds["train"])}
    lost = before - {_stratum(s) for s in split_strata(carved["train"])}
    if lost:
        least = 2 * len(before)
        raise ConfigError(
            f"parameter 'max_per_split' = {len(ds['train'])} leaves '{ds.name}' split 'train' too small to carve a "
            f"dev split from it: class '{sorted(lost)[0]}' would have no training record; pass max_per_split={least} "
            f"or more (CLI: --max-per-split {least}), two records a class"
        )


def subsample(ds: TextDataset, max_per_split: int, seed: int = 0) -> TextDataset:
    """Keep at most ``max_per_split`` records of each split: a seeded, stratified subsample.

    It keeps a record of every class (of every task and class, multi-task); a smaller
    ``max_per_split`` is a ConfigError naming the least that works, not a model trained on
    some of the classes or a test split scored on some of them."""
    max_per_split = check_max_per_split(max_per_split)
    splits = dict(ds.splits)
    notes = dict(ds.split_notes)
    for name, split in ds.splits.items():
        if len(split) <= max_per_split:
            continue
        strata = [_stratum(s) for s in split_strata(split)]
        _check_subsample_keeps_classes(ds, name, len(set(strata)), max_per_split)
        _, held = stratified_split(strata, int(max_per_split), seed)
        held = _with_every_class(held, strata, seed)
        splits[name] = select_records(split, held)
        notes[name] = (
            f"{notes.get(name, name)}; {SUBSAMPLE_NOTE} of {len(held)} of {len(split)} (split_seed={seed})"
        )
    return replace(ds, splits=_ordered(splits), split_notes=notes)


def _check_subsample_keeps_classes(ds: TextDataset, split: str, classes: int, max_per_split: int) -> None:
    # One record a class, whatever the split: ``evaluate`` scores a subsampled test split and trains
    # nothing. A train split of one record a class still trains: the dev carve keeps a class's
    # only record on the train side (``stratified_split``).
    if max_per_split >= classes:
        return
    what = "task-class pairs" if ds.task_names else "classes"
    raise ConfigError(
        f"parameter 'max_per_split' = {max_per_split} keeps fewer records of '{ds.name}' split '{split}' than its "
        f"{classes} {what}, so a subsample cannot keep one of each; pass max_per_split={classes} or more "
        f"(CLI: --max-per-split {classes})"
    )


def _with_every_class(held: np.ndarray, strata: Sequence[str], seed: int) -> np.ndarray:
    """``held`` with a record of every class of ``strata``. The stratified draw rounds each
    class's share, so a class under 1/N of the split (trec's ABBR at N = 12) can get none: one of its records, seeded, takes the place of one of the
    class drawn most. A draw that kept every class is returned as it is, so the subsamples of
    earlier runs stay the same. A class of one record in the whole split is left out, as the
    draw always left it (reuters-single's one 'wheat' training document: with it, the committed
    slices of 1,000 and 3,000 documents would change, and no test document has that class)."""
    labels = np.asarray(strata, dtype=object)
    kept = Counter(labels[held].tolist())
    sizes = Counter(labels.tolist())
    missing = [c for c in sizes if c not in kept and sizes[c] > 1]
    if not missing:
        return held
    rng = np.random.default_rng(seed)
    chosen = set(held.tolist())
    for cls in missing:
        largest = max(kept, key=kept.get)
        chosen.remove(int(rng.choice(sorted(i for i in chosen if labels[i] == largest))))
        chosen.add(int(rng.choice(np.flatnonzero(labels == cls))))
        kept[largest] -= 1
        kept[cls] = 1
    return np.array(sorted(chosen), dtype=np.int64)


def check_labels(split_dataset: datasets.Dataset, label_names: Sequence[str], where: str) -> None:
    """Raise ``DataError`` naming the first record whose label is not in ``label_names``.

    Used at evaluation time: a model can only be scored on classes it was trained on.
    """
    known = set(label_names)
    labels = split_labels(split_dataset)
    bad = [
        (i, label)
        for i, label in enumerate(labels)
        if any(l not in known for l in (label if isinstance(label, list) else [label]))
    ]
    if not bad:
        return
    i, label = bad[0]
    unknown = [l for l in (label if isinstance(label, list) else [label]) if l not in known]
    shown = ", ".join(list(label_names)[:20]) + (", ..." if len(label_names) > 20 else "")
    more = f" ({len(bad) - 1} more records too)" if len(bad) > 1 else ""
    raise DataError(
        f"{where}: record {i} has label {unknown[0]!r}, which is not one of the {len(known)} known classes "
        f"({shown}){more}; evaluate on data with the model's classes or retrain on this data"
    )
