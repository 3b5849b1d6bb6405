"""Records: the one in-memory form every source becomes.

A ``TextDataset`` wraps a Hugging Face ``datasets.DatasetDict`` whose splits (``train``,
optionally ``dev``, ``test``) have a ``text`` column (str) and either a ``label`` column
(the class *name*, str) or, for multi-label data, a ``labels`` column (list of class
names). ``label_names`` fixes the class order (index i in logits = ``label_names[i]``).

Multi-task data (several domains trained jointly, FCSR's multi-task setting) adds a ``task``
column (the task name, str) to every split; ``task_names`` fixes the task order (task id i =
``task_names[i]``). Single-task data has no ``task`` column and ``task_names`` is None.
"""

from __future__ import annotations

import hashlib
import json
import re
from array import array
from dataclasses import dataclass, field, replace

import datasets
import numpy as np

from ..errors import DataError


# A place ending in a line or record number: the number without leading zeros (so the place comes
# back exact), ASCII digits only ("a:1٣" is not line 13).
_NUMBERED = re.compile(r"(.*[^0-9])([1-9][0-9]{0,17}|0)")
_PLACES = "_textcls_places"
_SEPARATORS = "/\\:"


class RecordPlaces:
    """Where each record of a split was read ("news.csv:59", "hf:x train: record 3",
    "aclImdb/train/pos/123_4.txt"), so that a later check (an unknown label at evaluate) names the
    file and line as the readers do.

    Kept compactly: a place is a prefix shared by many records (the file, or the folder), a
    4-byte index into them, and an 8-byte number: the line or record number after the prefix,
    or, for a place that does not end in one (a record that is a file of its own, as in class
    folders), where its name (after the last ``/``, ``\\``, or ``:``) starts in one UTF-8 buffer
    of names. So a record costs 12 bytes when it is a line of a file, and 13 bytes plus its name
    in UTF-8 when it is a file of its own, beside the prefixes themselves (one string per file
    or folder). Measured at 500,000 records: 6.3 MB as lines of one file, 13.3 MB as files named
    like "123456_6.txt" in two class folders (82 MB when each path was a prefix of its own).

    Frozen once attached to a split (``attach_places``): ``copy.deepcopy`` (which
    ``Dataset.with_format`` and other ``datasets`` calls run on the whole split) then returns
    the same object, and ``append`` refuses."""

    def __init__(self):
        self._prefixes: list[str] = []
        self._index: dict[str, int] = {}
        self._prefix_of = array("i")
        # >= 0: the number after the prefix; -1: the prefix alone; <= -2: its name starts at
        # -2 - n in _names (ended by a NUL byte).
        self._numbers = array("q")
        self._names = bytearray()
        self._frozen = False

    def __len__(self) -> int:
        return len(self._numbers)

    def __deepcopy__(self, memo) -> "RecordPlaces":
        if self._frozen:
            return self
        out = RecordPlaces()
        out._prefixes, out._index = list(self._prefixes), dict(self._index)
        out._prefix_of, out._numbers, out._names = array("i", self._prefix_of), array("q", self._numbers), \
            bytearray(self._names)
        return out

    def freeze(self) -> "RecordPlaces":
        self._frozen = True
        return self

    def append(self, where: str) -> None:
        if self._frozen:
            raise RuntimeError("these record places belong to a split already; build a new RecordPlaces")
        last = self._prefixes[self._prefix_of[-1]] if self._prefix_of else None
        if last is not None and where.startswith(last):  # the common case: the next line of the same file
            tail = where[len(last):]
            exact = tail.isascii() and tail.isdigit() and tail[0] != "0" and len(tail) <= 18
            if exact and last[-1:] and last[-1] not in "0123456789":
                self._prefix_of.append(self._prefix_of[-1])
                self._numbers.append(int(tail))
                return
            if (last[-1:] in _SEPARATORS and tail and tail[-1] not in "0123456789" and "\x00" not in tail
                    and not any(sep in tail for sep in _SEPARATORS)):  # the next file of the same folder
                self._prefix_of.append(self._prefix_of[-1])
                self._numbers.append(self._keep_name(tail))
                return
        match = _NUMBERED.fullmatch(where)
        if match:
            prefix, number = match.group(1), int(match.group(2))
        else:
            prefix, number = self._split_name(where)
        if prefix not in self._index:
            self._index[prefix] = len(self._prefixes)
            self._prefixes.append(prefix)
        self._prefix_of.append(self._index[prefix])
        self._numbers.append(number)

    def _split_name(self, where: str) -> tuple[str, int]:
        """(the folder, where the name is kept) for a place not ending in a number; (the place, -1)
        when it has no name after a separator to keep apart (or a NUL in it)."""
        cut = max(where.rfind(sep) for sep in _SEPARATORS) + 1
        name = where[cut:]
        if not name or "\x00" in name:
            return where, -1
        return where[:cut], self._keep_name(name)

    def _keep_name(self, name: str) -> int:
        start = len(self._names)
        self._names += name.encode("utf-8", "surrogatepass")
        self._names.append(0)
        return -2 - start

    def __getitem__(self, row: int) -> str:
        number = self._numbers[row]
        prefix = self._prefixes[self._prefix_of[row]]
        if number >= 0:
            return f"{prefix}{number}"
        if number == -1:
            return prefix
        start = -2 - number
        return prefix + self._names[start:self._names.index(0, start)].decode("utf-8", "surrogatepass")

    def take(self, rows) -> "RecordPlaces":
        """The places of ``rows`` (a NumPy array or any iterable of ints), in that order; they
        share this object's prefixes and names."""
        out = RecordPlaces()
        out._prefixes, out._index, out._names = self._prefixes, self._index, self._names
        rows = np.asarray(rows if isinstance(rows, np.ndarray) else list(rows), dtype=np.int64)
        out._prefix_of.frombytes(np.frombuffer(self._prefix_of, dtype=np.int32)[rows].tobytes())
        out._numbers.frombytes(np.frombuffer(self._numbers, dtype=np.int64)[rows].tobytes())
        return out


_POLICY = "_textcls_on_bad_record"


def attach_places(split: datasets.Dataset, places: RecordPlaces | None,
                  on_bad_record: str | None = None) -> datasets.Dataset:
    """Keep ``places`` with ``split`` (this very object: a Dataset that ``select`` or ``map``
    returns has none, so a stale place is never shown; ignored unless one a record), and the
    ``on_bad_record`` policy the records were read with, which ``Classifier.evaluate`` follows
    for a label the model does not know unless told otherwise."""
    if places is not None and len(places) == len(split):
        setattr(split, _PLACES, places.freeze())
    if on_bad_record is not None:
        setattr(split, _POLICY, on_bad_record)
    return split


def read_policy(split) -> str | None:
    """The ``on_bad_record`` the records of ``split`` were read with (None: not read by textcls)."""
    return getattr(split, _POLICY, None)


def record_place(split, row: int) -> str | None:
    """The file and line (or the hub record) of ``split``'s record ``row``, or None when unknown."""
    places = getattr(split, _PLACES, None)
    return places[row] if places is not None and 0 <= row < len(places) else None


def with_task_column(split: datasets.Dataset, task: str) -> datasets.Dataset:
    """``split`` with a ``task`` column naming ``task`` for every record (data without tasks scored by a
    model with one head per task), its records keeping their places and read policy."""
    return with_column(split, "task", [task] * len(split))


def with_column(split: datasets.Dataset, name: str, values: list) -> datasets.Dataset:
    """``split`` with column ``name`` holding ``values`` (added, or in place of the one it has), its
    records keeping their places and read policy."""
    shown = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()  # add_column to a subsample flattens its indices behind a progress bar
    try:
        out = (split.remove_columns(name) if name in split.column_names else split).add_column(name, values)
    finally:
        if shown:
            datasets.enable_progress_bars()
    return attach_places(out, getattr(split, _PLACES, None), read_policy(split))


def records_digest(dataset: "TextDataset", splits=("train", "dev")) -> str:
    """SHA-256 (hex) of ``splits``' records in order: each record's text, label(s) and task, and
    the class names. What a training checkpoint records of its data, so that a resume with other
    records, or with the same ones split otherwise, is refused (train.checkpoint)."""
    digest = hashlib.sha256(json.dumps(list(dataset.label_names)).encode("utf-8"))
    for name in splits:
        split = dataset.splits.get(name)
        if split is None:
            continue
        digest.update(f"\0{name}:{len(split)}".encode("utf-8"))
        for column in ("text", dataset.label_column, "task"):
            if column not in split.column_names:
                continue
            values = list(split[column][:])  # [:]: a list at C speed, through any select()'s indices
            if column == "text":  # the bulk: joined in C, its lengths keeping each record's bounds
                digest.update(np.array([len(v) for v in values], dtype=np.int64).tobytes())
                digest.update("".join(values).encode("utf-8", "surrogatepass"))
            else:
                digest.update(json.dumps([column, values], ensure_ascii=False).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def select_records(split: datasets.Dataset, rows) -> datasets.Dataset:
    """``split.select(rows)``, its records keeping their places. ``rows`` goes to ``select`` as
    given: ``datasets`` hashes it for the new fingerprint, a NumPy array at once, a list of
    Python ints one by one (4x the whole load of a 200,000-line file)."""
    chosen = split.select(rows)
    places = getattr(split, _PLACES, None)
    return attach_places(chosen, places.take(rows) if places is not None else None, read_policy(split))


@dataclass
class TextDataset:
    name: str
    splits: datasets.DatasetDict
    label_names: list[str]
    multi_label: bool = False
    # How each split was obtained (official, seeded stratified split, last-200-lines dev...).
    split_notes: dict[str, str] = field(default_factory=dict)
    # Records skipped under on_bad_record="skip", as "file:line: reason" strings.
    skipped: list[str] = field(default_factory=list)
    # Multi-task data: the order of the values of every split's "task" column; None otherwise.
    task_names: list[str] | None = None
    # The field or column the tasks were read from (ReadOptions.task_column): "task", another name,
    # or None (no task read). A run saves it where it is not the default (config.json "task_column").
    task_column: str | None = "task"
    # How load_dataset carved the test split, {"fraction": f, "split_seed": s}; None where the data
    # has its own. A run saves it (config.json "test_split"), so that evaluating it on the same data
    # carves the same test split instead of one that holds its training records.
    test_split: dict | None = None
    # The splits the test split was carved from, as read (load_dataset keeps them where it carves):
    # ``source_digest`` tells a run's data from other data by its records, whatever its name or path.
    carved_from: datasets.DatasetDict | dict | None = field(default=None, repr=False, compare=False)

    @property
    def label_column(self) -> str:
        return "labels" if self.multi_label else "label"

    def __getitem__(self, split: str) -> datasets.Dataset:
        if split not in self.splits:
            raise DataError(
                f"dataset '{self.name}' has no '{split}' split (it has: "
                f"{', '.join(self.splits)}); use a split it has (in Python, textcls.data.ensure_dev carves a dev split)"
            )
        return self.splits[split]

    def source_digest(self) -> str | None:
        """``records_digest`` of the records the test split was carved from, as read, before any
        subsample; None where the data has its own test split. A run saves it in config.json's
        "test_split", so that ``textcls evaluate`` knows the run's data under another name (a copy,
        another path) by its records, and carves the run's own test split from it."""
        if self.carved_from is None:
            return None
        return records_digest(replace(self, splits=self.carved_from, carved_from=None))

    def label_index(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.label_names)}

    def summary(self) -> dict:
        return {
            "name": self.name,
            "multi_label": self.multi_label,
            "classes": len(self.label_names),
            "splits": {k: len(v) for k, v in self.splits.items()},
            "split_notes": dict(self.split_notes),
            "skipped": len(self.skipped),
            **({"tasks": list(self.task_names)} if self.task_names else {}),
        }

    def task_ids(self, split: str) -> list[int] | None:
        """Task index of every record of ``split`` (None for single-task data)."""
        if not self.task_names:
            return None
        column = self[split]
        if "task" not in column.column_names:
            raise DataError(f"dataset '{self.name}' is multi-task but its '{split}' split has no 'task' column; "
                            "give every record the task it belongs to")
        index = {name: i for i, name in enumerate(self.task_names)}
        ids = []
        for row, name in enumerate(column.with_format("arrow")["task"].to_pylist()):
            if name not in index:
                raise DataError(f"dataset '{self.name}' split '{split}' record {row} has task {name!r}, which is "
                                f"not one of its tasks ({', '.join(self.task_names)}); fix the record or the task list")
            ids.append(index[name])
        return ids
