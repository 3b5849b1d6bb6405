"""Records: the one in-memory form every source becomes.

A ``TextDataset`` wraps a Hugging Face ``datasets.DatasetDict`` whose splits (``train``,
optionally ``dev``, ``test``) have a ``text`` column (str) and either a ``label`` column
(the class *name*, str) or, for multi-label data, a ``labels`` column (list of class
names). ``label_names`` fixes the class order (index i in logits = ``label_names[i]``).
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

    @property
    def label_column(self) -> str:
        return "labels" if self.multi_label else "label"

    def __getitem__(self, split: str) -> datasets.Dataset:
        if split not in self.splits:
            raise DataError(
                f"dataset '{self.name}' has no '{split}' split (it has: "
                f"{', '.join(self.splits)}); use a split it has or carve a dev split with ensure_dev()"
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
        }
