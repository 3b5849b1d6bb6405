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

from dataclasses import dataclass, field

import datasets

from ..errors import DataError


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
