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

import re
from array import array
from dataclasses import dataclass, field
from typing import Iterable

import datasets

from ..errors import DataError


_NUMBERED = re.compile(r"(.*\D)([1-9]\d{0,17}|0)")  # no leading zeros: the place comes back exact
_PLACES = "_textcls_places"


class RecordPlaces:
    """Where each record of a split was read ("news.csv:59", "hf:x train: record 3"), so that a
    later check (an unknown label at evaluate) names the file and line as the readers do.

    Kept compactly, 12 bytes a record: a place is split into a prefix shared by many records
    (the file) and its trailing number (the line), a place without one is a prefix alone."""

    def __init__(self):
        self._prefixes: list[str] = []
        self._index: dict[str, int] = {}
        self._prefix_of = array("i")
        self._numbers = array("q")

    def __len__(self) -> int:
        return len(self._numbers)

    def append(self, where: str) -> None:
        last = self._prefixes[self._prefix_of[-1]] if self._prefix_of else None
        if last is not None and where.startswith(last):  # the common case: the next line of the same file
            tail = where[len(last):]
            exact = tail.isascii() and tail.isdigit() and tail[0] != "0" and len(tail) <= 18
            if exact and last[-1:] and not last[-1].isdigit():
                self._prefix_of.append(self._prefix_of[-1])
                self._numbers.append(int(tail))
                return
        match = _NUMBERED.fullmatch(where)
        prefix, number = (match.group(1), int(match.group(2))) if match else (where, -1)
        if prefix not in self._index:
            self._index[prefix] = len(self._prefixes)
            self._prefixes.append(prefix)
        self._prefix_of.append(self._index[prefix])
        self._numbers.append(number)

    def __getitem__(self, row: int) -> str:
        number = self._numbers[row]
        prefix = self._prefixes[self._prefix_of[row]]
        return prefix if number < 0 else f"{prefix}{number}"

    def take(self, rows: Iterable[int]) -> "RecordPlaces":
        out = RecordPlaces()
        out._prefixes, out._index = self._prefixes, self._index
        rows = [int(r) for r in rows]
        out._prefix_of = array("i", (self._prefix_of[r] for r in rows))
        out._numbers = array("q", (self._numbers[r] for r in rows))
        return out


_POLICY = "_textcls_on_bad_record"


def attach_places(split: datasets.Dataset, places: RecordPlaces | None,
                  on_bad_record: str | None = None) -> datasets.Dataset:
    """Keep ``places`` with ``split`` (this very object: a Dataset that ``select`` or ``map``
    returns has none, so a stale place is never shown; ignored unless one a record), and the
    ``on_bad_record`` policy the records were read with, which ``Classifier.evaluate`` follows
    for a label the model does not know unless told otherwise."""
    if places is not None and len(places) == len(split):
        setattr(split, _PLACES, places)
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
