"""Generic local files -> records.

Formats (inferred from the extension, or named with ``format=``):

- ``csv`` / ``tsv`` (also ``.csv.gz``, ``.tsv.gz``, ``.tab``): with or without a header.
  ``text_columns`` (names or 0-based indices; several are joined with a space) and
  ``label_column`` (a name or an index). Without a header and without columns given, the
  first column is the label and the remaining columns are the text (the Zhang et al. and
  ``label<TAB>text`` conventions). With a header and no columns given, the first column
  called ``text``/``sentence``/``content``/``review``/... is the text and the first called
  ``label``/``labels``/``class``/... is the label. TSV is read without quote handling
  (sentences carry stray quote marks); CSV uses standard double-quote quoting.
- ``jsonl`` (``.jsonl``, ``.jsonl.gz``, ``.ndjson``): one JSON object a line; the label field
  may hold a list of class names (multi-label).
- ``parquet``: read through ``datasets``; ``ClassLabel`` integers become class names.
- ``fasttext`` (``.ft``, ``.fasttext``, or ``.txt`` whose first line starts with ``__label__``):
  ``__label__x [__label__y ...] text``; several labels on any line make the data multi-label.
- one file per class: a list of files, or a folder of files, one document a line. The class
  is the file name's suffix when the files' suffixes are all different (``rt-polarity.pos``
  -> ``pos``), otherwise its stem (``books.txt`` -> ``books``).
- one folder per class holding one file per document (``<root>/<class>/<doc>``).

A folder holding ``train.*`` / ``dev.*`` (or ``valid.*``, ``validation.*``, ``val.*``) /
``test.*`` files, or ``train/`` / ``dev/`` / ``test/`` sub-folders, is read split by split.

Text files are split on ``\\n`` only (never ``str.splitlines``, which also splits on NEL, 0x85)
and decoded line by line, so an undecodable byte is reported with its file and line. Blank
lines are not records in formats that carry the label on the line (CSV/TSV, JSON Lines,
fastText); in one-document-a-line files a blank line is an empty document, which is a bad
record like any other.

Bad records (empty text, missing or empty label, undecodable line, unknown label, malformed
row) raise a one-line ``DataError`` naming the file and line, or with
``on_bad_record="skip"`` are skipped and listed in ``TextDataset.skipped``.
"""

from __future__ import annotations

import csv
import gzip
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import datasets

from ..errors import ConfigError, DataError
from .records import TextDataset

SPLIT_ORDER = ("train", "dev", "test")
SPLIT_ALIASES = {
    "train": "train",
    "dev": "dev",
    "valid": "dev",
    "validation": "dev",
    "val": "dev",
    "test": "test",
}
TEXT_CANDIDATES = ("text", "sentence", "content", "review", "document", "body", "question")
LABEL_CANDIDATES = ("label", "labels", "class", "category", "target", "sentiment", "score", "topic")
FORMATS = ("csv", "tsv", "jsonl", "parquet", "fasttext", "class-files", "class-folders")

SKIP_HINT = 'or pass on_bad_record="skip" (CLI: --on-bad-record skip) to skip and count it'

# Zhang et al.'s yahoo/yelp fields exceed the csv module's 128 KiB default field limit.
csv.field_size_limit(min(sys.maxsize, 2**31 - 1))


@dataclass(frozen=True)
class ReadOptions:
    """How to read a local file; the keyword options of ``load_dataset`` that concern files."""

    encoding: str | None = None
    on_bad_record: str = "error"
    text_columns: tuple[str | int, ...] | None = None
    label_column: str | int | None = None
    header: bool | None = None
    delimiter: str | None = None
    format: str | None = None

    def __post_init__(self):
        if self.on_bad_record not in ("error", "skip"):
            raise ConfigError(f"parameter 'on_bad_record' = {self.on_bad_record!r} is not one of error, skip")
        if self.format is not None and self.format not in FORMATS:
            raise ConfigError(f"parameter 'format' = {self.format!r} is not one of {', '.join(FORMATS)}")
        if self.text_columns is not None:
            cols = (self.text_columns,) if isinstance(self.text_columns, (str, int)) else tuple(self.text_columns)
            if not cols:
                raise ConfigError("parameter 'text_columns' is empty; name at least one column")
            object.__setattr__(self, "text_columns", tuple(_as_index(c) for c in cols))
        if self.label_column is not None:
            object.__setattr__(self, "label_column", _as_index(self.label_column))


def _as_index(column: str | int) -> str | int:
    """Column "2" (as typed on the command line) is index 2."""
    return int(column) if isinstance(column, str) and column.strip().isdigit() else column


class RecordBuffer:
    """Collects the records of one split and applies the bad-record policy.

    ``skip_empty_text`` is for published corpora that themselves ship empty documents
    (``mpqa``, ``reuters``, one ``fdu_mtl`` line): those are skipped and counted whatever
    ``on_bad_record`` says, since the user cannot fix a published corpus.
    """

    def __init__(self, on_bad_record: str = "error", skip_empty_text: bool = False):
        self.on_bad_record = on_bad_record
        self.skip_empty_text = skip_empty_text
        self.texts: list[str] = []
        self.labels: list[Any] = []
        self.skipped: list[str] = []

    def __len__(self) -> int:
        return len(self.texts)

    def reject(self, where: str, reason: str, fix: str, skippable: bool = True) -> None:
        """Raise for a bad record, or count it as skipped under ``on_bad_record="skip"``."""
        if skippable and self.on_bad_record == "skip":
            self.skipped.append(f"{where}: {reason}")
            return
        tail = f"; {fix}, {SKIP_HINT}" if skippable else f"; {fix}"
        raise DataError(f"{where}: {reason}{tail}")

    def add(self, where: str, text: Any, label: Any) -> bool:
        """Validate and keep one record; returns False when it was skipped."""
        if text is None:
            text = ""
        if not isinstance(text, str):
            text = str(text)
        if not text.strip():
            if self.skip_empty_text:
                self.skipped.append(f"{where}: empty text (as published)")
                return False
            self.reject(where, "empty text", "write the document's text or remove the record")
            return False
        label = _clean_label(label)
        if label is None:
            self.reject(where, "missing or empty label", "give the record a class name or remove it")
            return False
        self.texts.append(text)
        self.labels.append(label)
        return True


def _clean_label(label: Any) -> str | list[str] | None:
    if isinstance(label, (list, tuple)):
        names = [_clean_label(x) for x in label]
        if not names or any(not isinstance(n, str) for n in names):
            return None
        return names
    if label is None or isinstance(label, float) and label != label:  # None or NaN
        return None
    if isinstance(label, bool):
        label = str(label).lower()
    elif isinstance(label, float) and label.is_integer():
        label = int(label)
    label = str(label).strip()
    return label or None


# ---------------------------------------------------------------------------------------
# Lines


def _open_binary(path: Path):
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def _describe_decode_error(err: UnicodeDecodeError, encoding: str) -> str:
    bad = err.object[err.start : err.end]
    return f"byte(s) {bad.hex(' ')} at column {err.start + 1} cannot be decoded as {encoding}"


def decode_hint(encoding: str) -> str:
    return (
        'pass encoding="latin-1" (CLI: --encoding latin-1) or the file\'s real encoding'
        if encoding.lower().replace("_", "-") in ("utf-8", "utf8", "utf-8-sig")
        else "pass the file's real encoding with encoding= (CLI: --encoding)"
    )


def iter_lines(
    path: Path,
    buffer: RecordBuffer,
    encoding: str = "utf-8",
    errors: str = "strict",
) -> Iterator[tuple[int, str]]:
    """Yield ``(line number, text)`` for each ``\\n``-terminated line of ``path``.

    Lines are split on ``\\n`` alone (binary iteration) and decoded one at a time, so NEL
    bytes stay inside their record and an undecodable line is reported (or skipped and
    counted) by its number. A trailing ``\\r`` is dropped; so is a UTF-8 byte-order mark.
    """
    _require_file(path)
    with _open_binary(path) as fh:
        for lineno, raw in enumerate(fh, 1):
            if raw.endswith(b"\n"):
                raw = raw[:-1]
            if raw.endswith(b"\r"):
                raw = raw[:-1]
            if lineno == 1 and raw.startswith(b"\xef\xbb\xbf") and encoding.lower().startswith("utf"):
                raw = raw[3:]
            try:
                yield lineno, raw.decode(encoding, errors)
            except UnicodeDecodeError as err:
                buffer.reject(f"{path}:{lineno}", _describe_decode_error(err, encoding), decode_hint(encoding))


def _require_file(path: Path) -> None:
    if not path.is_file():
        raise DataError(f"{path}: no such file; check the path")
    if path.stat().st_size == 0:
        raise DataError(f"{path}: empty file; it holds no records")


def _finish(path: Path, buffer: RecordBuffer, before: int, skipped_before: int) -> None:
    """Every file must contribute records; an empty or all-bad file is an error."""
    if len(buffer) > before:
        return
    n_bad = len(buffer.skipped) - skipped_before
    if n_bad:
        raise DataError(
            f"{path}: all {n_bad} records were bad and skipped (first: {buffer.skipped[skipped_before]}); "
            "fix the file or check encoding= and the column options"
        )
    raise DataError(f"{path}: no records found (the file is empty or blank); check the path and the format")


# ---------------------------------------------------------------------------------------
# CSV / TSV


def read_delimited(
    path: Path,
    buffer: RecordBuffer,
    *,
    delimiter: str = ",",
    header: bool | None = None,
    text_columns: Sequence[str | int] | None = None,
    label_column: str | int | None = None,
    encoding: str = "utf-8",
    decode_errors: str = "strict",
    label_map: dict[str, str] | None = None,
    text_transform: Callable[[str], str] | None = None,
    quoting: int | None = None,
) -> None:
    """Append the records of a CSV/TSV file to ``buffer`` (see the module docstring)."""
    before, skipped_before = len(buffer), len(buffer.skipped)
    if quoting is None:
        quoting = csv.QUOTE_NONE if delimiter == "\t" else csv.QUOTE_MINIMAL
    named = [c for c in [*(text_columns or ()), label_column] if isinstance(c, str)]
    if header is False and named:
        raise DataError(
            f"{path}: columns are named ({', '.join(map(repr, named))}) but header=False; "
            "pass 0-based column indices or header=True"
        )
    if header is None and (text_columns is not None or label_column is not None):
        header = bool(named)

    state = {"start": None}

    def feed() -> Iterator[str]:
        for lineno, line in iter_lines(path, buffer, encoding, decode_errors):
            if state["start"] is None:
                state["start"] = lineno
            yield line + "\n"

    reader = csv.reader(feed(), delimiter=delimiter, quoting=quoting)
    text_idx: list[int] | None = None
    label_idx: int | None = None
    columns: list[str] | None = None
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as err:
            raise DataError(f"{path}:{state['start']}: malformed {_fmt_name(delimiter)} row ({err}); fix the quoting")
        lineno, state["start"] = state["start"], None
        if not row or (len(row) == 1 and not row[0].strip()):
            continue  # a blank line is not a record
        where = f"{path}:{lineno}"
        if columns is None and text_idx is None:
            if header is None:
                header = _looks_like_header(row)
            if header:
                columns = [c.strip() for c in row]
                text_idx, label_idx = _resolve_columns(path, columns, text_columns, label_column)
                continue
            text_idx, label_idx = _resolve_indices(path, len(row), text_columns, label_column)
        # No text columns given means "every column but the label": at least two fields.
        need = max([label_idx, *text_idx]) + 1 if text_idx else max(label_idx + 1, 2)
        if len(row) < need:
            buffer.reject(where, f"row has {len(row)} field(s), {need} needed", "complete the row")
            continue
        idx = text_idx or [i for i in range(len(row)) if i != label_idx]
        text = " ".join(row[i].strip() for i in idx if row[i].strip())
        if text_transform is not None:
            text = text_transform(text)
        label = row[label_idx].strip()
        if label_map is not None and label:
            if label not in label_map:
                buffer.reject(
                    where, f"label {label!r} is not one of {', '.join(label_map)}", "correct the label"
                )
                continue
            label = label_map[label]
        buffer.add(where, text, label)
    _finish(path, buffer, before, skipped_before)


def _fmt_name(delimiter: str) -> str:
    return "TSV" if delimiter == "\t" else "CSV"


def _looks_like_header(row: list[str]) -> bool:
    known = set(TEXT_CANDIDATES) | set(LABEL_CANDIDATES) | {"title", "description", "id"}
    return any(cell.strip().lower() in known for cell in row)


def _resolve_columns(path, columns, text_columns, label_column) -> tuple[list[int], int]:
    lower = [c.lower() for c in columns]

    def find(spec, role) -> int:
        if isinstance(spec, int):
            if not 0 <= spec < len(columns):
                raise DataError(f"{path}: {role} column index {spec} is out of range; the file has {len(columns)} columns")
            return spec
        if spec in columns:
            return columns.index(spec)
        raise DataError(
            f"{path}: no column {spec!r}; the columns are: {', '.join(columns)}; pass {role}= with one of them"
        )

    if text_columns is None:
        hit = next((c for c in TEXT_CANDIDATES if c in lower), None)
        if hit is None:
            raise DataError(
                f"{path}: no text column found among: {', '.join(columns)}; pass text_columns= (CLI: --text-column)"
            )
        text_idx = [lower.index(hit)]
    else:
        text_idx = [find(c, "text_columns") for c in text_columns]
    if label_column is None:
        hit = next((c for c in LABEL_CANDIDATES if c in lower), None)
        if hit is None:
            raise DataError(
                f"{path}: no label column found among: {', '.join(columns)}; pass label_column= (CLI: --label-column)"
            )
        label_idx = lower.index(hit)
    else:
        label_idx = find(label_column, "label_column")
    return text_idx, label_idx


def _resolve_indices(path, n_fields, text_columns, label_column) -> tuple[list[int], int]:
    label_idx = 0 if label_column is None else label_column
    text_idx = [] if text_columns is None else list(text_columns)
    for i in [label_idx, *text_idx]:
        if not isinstance(i, int) or i < 0:
            raise DataError(f"{path}: column {i!r} must be a 0-based index when the file has no header")
    if n_fields < 2 and text_columns is None:
        raise DataError(
            f"{path}: the first row has only {n_fields} field(s), need a label and a text; "
            "check delimiter= (CLI: --delimiter) or the format"
        )
    return text_idx, label_idx


# ---------------------------------------------------------------------------------------
# JSON Lines


def read_jsonl(
    path: Path,
    buffer: RecordBuffer,
    *,
    text_columns: Sequence[str] | None = None,
    label_column: str | None = None,
    encoding: str = "utf-8",
    text_join: str = " ",
) -> None:
    """Append the records of a JSON Lines file (optionally gzipped) to ``buffer``."""
    before, skipped_before = len(buffer), len(buffer.skipped)
    fields: list[str] | None = None
    label_field: str | None = None
    for lineno, line in iter_lines(path, buffer, encoding):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as err:
            buffer.reject(where, f"not valid JSON ({err.msg} at column {err.colno})", "fix the line")
            continue
        if not isinstance(obj, dict):
            buffer.reject(where, f"a JSON {type(obj).__name__}, not an object", "write one JSON object a line")
            continue
        if fields is None:
            keys = list(obj)
            fields = _pick_fields(path, lineno, keys, text_columns, TEXT_CANDIDATES, "text_columns")
            label_field = _pick_fields(
                path, lineno, keys, None if label_column is None else [label_column], LABEL_CANDIDATES, "label_column"
            )[0]
        parts = [obj.get(f) for f in fields]
        text = text_join.join(str(p) for p in parts if p is not None and str(p).strip())
        buffer.add(where, text, obj.get(label_field))
    _finish(path, buffer, before, skipped_before)


def _pick_fields(path, lineno, keys, wanted, candidates, role) -> list[str]:
    if wanted is not None:
        for w in wanted:
            if isinstance(w, int):
                raise DataError(f"{path}: {role} must name JSON fields, not index {w}; the fields are: {', '.join(keys)}")
            if w not in keys:
                raise DataError(
                    f"{path}:{lineno}: no field {w!r}; the fields are: {', '.join(keys)}; pass {role}= with one of them"
                )
        return list(wanted)
    hit = next((c for c in candidates if c in keys), None)
    if hit is None:
        raise DataError(f"{path}:{lineno}: no {role.split('_')[0]} field among: {', '.join(keys)}; pass {role}=")
    return [hit]


# ---------------------------------------------------------------------------------------
# fastText lines

_FT_LABEL = re.compile(r"__label__(\S+)\s*")


def read_fasttext(path: Path, buffer: RecordBuffer, *, encoding: str = "utf-8") -> None:
    """Append the records of a fastText file (``__label__x [__label__y ...] text``)."""
    before, skipped_before = len(buffer), len(buffer.skipped)
    for lineno, line in iter_lines(path, buffer, encoding):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        pos, labels = 0, []
        stripped = line.lstrip()
        while (m := _FT_LABEL.match(stripped, pos)) is not None:
            labels.append(m.group(1))
            pos = m.end()
        if not labels:
            buffer.reject(where, "no __label__ prefix", "start the line with __label__<class>")
            continue
        buffer.add(where, stripped[pos:], labels if len(labels) > 1 else labels[0])
    _finish(path, buffer, before, skipped_before)


# ---------------------------------------------------------------------------------------
# One file per class / one folder per class


def class_names_for_files(paths: Sequence[Path]) -> list[str]:
    """The class of each file: its suffix when all suffixes differ, else its stem."""
    bare = [p.with_suffix("") if p.suffix == ".gz" else p for p in paths]
    suffixes = [p.suffix.lstrip(".") for p in bare]
    if all(suffixes) and len(set(suffixes)) == len(suffixes):
        return suffixes
    stems = [p.stem for p in bare]
    if len(set(stems)) != len(stems):
        raise DataError(
            f"{paths[0].parent}: class files {', '.join(p.name for p in paths)} do not give distinct class names; "
            "name each file after its class (books.txt, music.txt or data.pos, data.neg)"
        )
    return stems


def read_class_files(
    paths: Sequence[Path],
    buffer: RecordBuffer,
    *,
    class_names: Sequence[str] | None = None,
    encoding: str = "utf-8",
) -> None:
    """Append one record per line of each file, labelled with the file's class."""
    names = list(class_names) if class_names is not None else class_names_for_files(paths)
    for path, name in zip(paths, names):
        before, skipped_before = len(buffer), len(buffer.skipped)
        for lineno, line in iter_lines(path, buffer, encoding):
            buffer.add(f"{path}:{lineno}", line, name)
        _finish(path, buffer, before, skipped_before)


def read_class_folders(root: Path, buffer: RecordBuffer, *, encoding: str = "utf-8") -> None:
    """Append one record per file of each ``<root>/<class>/`` folder."""
    for class_dir in _visible(root):
        if not class_dir.is_dir():
            raise DataError(f"{class_dir}: a file among class folders; put each document in {root}/<class>/")
        docs = [p for p in _visible(class_dir) if p.is_file()]
        if not docs:
            raise DataError(f"{class_dir}: class folder holds no documents; add files or remove the folder")
        for doc in docs:
            raw = doc.read_bytes()
            try:
                text = raw.decode(encoding)
            except UnicodeDecodeError as err:
                line = raw[: err.start].count(b"\n") + 1
                buffer.reject(f"{doc}:{line}", _describe_decode_error(err, encoding), decode_hint(encoding))
                continue
            buffer.add(str(doc), text, class_dir.name)


def _visible(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if not p.name.startswith("."))


# ---------------------------------------------------------------------------------------
# Arrow tables (parquet files, Hugging Face hub datasets)


def read_table(
    table: datasets.Dataset,
    buffer: RecordBuffer,
    *,
    where: str,
    text_columns: Sequence[str | int] | None = None,
    label_column: str | int | None = None,
    label_names: Sequence[str] | None = None,
    text_join: str = " ",
    keep: Callable[[Any], Any] | None = None,
) -> tuple[list[str] | None, int]:
    """Append the records of a ``datasets.Dataset`` to ``buffer``.

    ``ClassLabel`` integers become class names: ``label_names[i]`` when given (a catalogue
    fixes its own names), else the feature's names. Negative integers (the hub's "no label",
    e.g. an unlabelled test split) are missing labels. ``keep(label)`` may rewrite a label or
    return None to leave a record out of the dataset by definition (not a bad record).
    Returns the ``ClassLabel`` names (or None) and the number of records left out by ``keep``.
    """
    columns = list(table.column_names)
    text_cols = [_table_column(where, columns, c, "text_columns") for c in (text_columns or [])]
    if not text_cols:
        hit = next((c for c in TEXT_CANDIDATES if c in columns), None)
        if hit is None:
            raise DataError(f"{where}: no text column among: {', '.join(columns)}; pass text_columns=")
        text_cols = [hit]
    if label_column is None:
        label_col = next((c for c in LABEL_CANDIDATES if c in columns), None)
        if label_col is None:
            raise DataError(f"{where}: no label column among: {', '.join(columns)}; pass label_column=")
    else:
        label_col = _table_column(where, columns, label_column, "label_column")
    feature = table.features[label_col]
    inner = getattr(feature, "feature", None)
    class_feature = feature if isinstance(feature, datasets.ClassLabel) else inner
    feature_names = list(class_feature.names) if isinstance(class_feature, datasets.ClassLabel) else None
    names = list(label_names) if label_names is not None else feature_names

    def to_name(value):
        if isinstance(value, (list, tuple)):
            return [to_name(v) for v in value]
        if isinstance(value, bool) or not isinstance(value, int):
            return value
        if value < 0:
            return None
        if names is None:
            return str(value)
        return names[value] if value < len(names) else f"<unknown class id {value}>"

    left_out = 0
    i = 0
    for batch in table.select_columns(list(dict.fromkeys([*text_cols, label_col]))).iter(batch_size=2048):
        for j in range(len(batch[label_col])):
            parts = [batch[c][j] for c in text_cols]
            text = text_join.join(str(p) for p in parts if p is not None and str(p).strip())
            label = to_name(batch[label_col][j])
            if isinstance(label, list) and any(x is None for x in label):
                label = None
            if keep is not None and label is not None:
                label = keep(label)
                if label is None:
                    left_out += 1
                    i += 1
                    continue
            buffer.add(f"{where}: record {i}", text, label)
            i += 1
    return feature_names, left_out


def _table_column(where, columns, spec, role) -> str:
    if isinstance(spec, int):
        if 0 <= spec < len(columns):
            return columns[spec]
        raise DataError(f"{where}: {role} index {spec} is out of range; the columns are: {', '.join(columns)}")
    if spec not in columns:
        raise DataError(f"{where}: no column {spec!r}; the columns are: {', '.join(columns)}; pass {role}= with one of them")
    return spec


def read_parquet(path: Path, buffer: RecordBuffer, options: ReadOptions) -> list[str] | None:
    _require_file(path)
    table = datasets.Dataset.from_parquet(str(path))
    before, skipped_before = len(buffer), len(buffer.skipped)
    names, _ = read_table(
        table, buffer, where=str(path), text_columns=options.text_columns, label_column=options.label_column
    )
    _finish(path, buffer, before, skipped_before)
    return names


# ---------------------------------------------------------------------------------------
# Records -> TextDataset


def natural_key(name: str):
    """Sort "2" before "10" and "class2" before "class10"."""
    return [(0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", name) if t]


def build_text_dataset(
    name: str,
    buffers: dict[str, RecordBuffer],
    *,
    label_order: Sequence[str] | None = None,
    split_notes: dict[str, str] | None = None,
    multi_label: bool | None = None,
    skipped: Iterable[str] = (),
) -> TextDataset:
    """One ``datasets.Dataset`` per split (``train``, ``dev``, ``test`` order).

    Class order is ``label_order`` when given (classes seen outside it are appended in
    natural order), else the natural order of every class seen in any split.
    """
    if multi_label is None:
        multi_label = any(isinstance(l, list) for b in buffers.values() for l in b.labels)
    seen: set[str] = set()
    for b in buffers.values():
        if multi_label:
            b.labels = [l if isinstance(l, list) else [l] for l in b.labels]
            for l in b.labels:
                seen.update(l)
        else:
            seen.update(b.labels)
    order = list(label_order or [])
    order += sorted(seen - set(order), key=natural_key)
    column = "labels" if multi_label else "label"
    label_feature = datasets.List(datasets.Value("string")) if multi_label else datasets.Value("string")
    features = datasets.Features({"text": datasets.Value("string"), column: label_feature})
    splits = datasets.DatasetDict()
    for split in sorted(buffers, key=lambda s: SPLIT_ORDER.index(s) if s in SPLIT_ORDER else len(SPLIT_ORDER)):
        b = buffers[split]
        splits[split] = datasets.Dataset.from_dict({"text": b.texts, column: b.labels}, features=features)
    all_skipped = list(skipped) + [s for b in buffers.values() for s in b.skipped]
    return TextDataset(
        name=name,
        splits=splits,
        label_names=order,
        multi_label=multi_label,
        split_notes=dict(split_notes or {}),
        skipped=all_skipped,
    )


# ---------------------------------------------------------------------------------------
# Paths -> TextDataset


def infer_format(path: Path) -> str:
    """The format of a file from its extension (``.gz`` looks at the inner extension)."""
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    ext = name.rsplit(".", 1)[-1] if "." in name else ""
    by_ext = {
        "csv": "csv",
        "tsv": "tsv",
        "tab": "tsv",
        "jsonl": "jsonl",
        "ndjson": "jsonl",
        "parquet": "parquet",
        "ft": "fasttext",
        "fasttext": "fasttext",
    }
    if ext in by_ext:
        return by_ext[ext]
    if ext in ("txt", "text", "") and _first_line_is_fasttext(path):
        return "fasttext"
    raise DataError(
        f"{path}: cannot tell the format from the name; pass format= one of {', '.join(FORMATS[:5])} (CLI: --format)"
    )


def _first_line_is_fasttext(path: Path) -> bool:
    try:
        with _open_binary(path) as fh:
            for raw in fh:
                if raw.strip():
                    return raw.lstrip().startswith(b"__label__")
    except OSError:
        return False
    return False


def read_file(path: Path, buffer: RecordBuffer, options: ReadOptions, fmt: str | None = None) -> list[str] | None:
    """Append the records of one file to ``buffer``; returns ClassLabel names for parquet."""
    fmt = fmt or options.format or infer_format(path)
    encoding = options.encoding or "utf-8"
    if fmt in ("csv", "tsv"):
        delimiter = options.delimiter or ("\t" if fmt == "tsv" else ",")
        read_delimited(
            path,
            buffer,
            delimiter=delimiter,
            header=options.header,
            text_columns=options.text_columns,
            label_column=options.label_column,
            encoding=encoding,
        )
    elif fmt == "jsonl":
        read_jsonl(path, buffer, text_columns=options.text_columns, label_column=options.label_column, encoding=encoding)
    elif fmt == "fasttext":
        read_fasttext(path, buffer, encoding=encoding)
    elif fmt == "parquet":
        return read_parquet(path, buffer, options)
    elif fmt == "class-files":
        read_class_files([path], buffer, encoding=encoding)
    else:
        raise DataError(f"{path}: format {fmt!r} needs a folder, not a file; pass the folder")
    return None


def _split_of(path: Path) -> str | None:
    stem = path.name.lower().split(".", 1)[0]
    return SPLIT_ALIASES.get(stem)


def read_path(source: str | Path | Sequence[str | Path], options: ReadOptions, name: str | None = None) -> TextDataset:
    """Read a local file, a list of per-class files, or a folder (layouts in the module docstring).

    The result has the splits the source holds (only ``train`` for a single file); the
    caller carves a test split where there is none.
    """
    if isinstance(source, (list, tuple)):
        paths = [Path(p) for p in source]
        for p in paths:
            _require_file(p)
        buffer = RecordBuffer(options.on_bad_record)
        read_class_files(paths, buffer, encoding=options.encoding or "utf-8")
        return build_text_dataset(name or ",".join(map(str, paths)), {"train": buffer}, split_notes={"train": "all records of the files"})
    path = Path(source)
    name = name or str(source)
    if path.is_file():
        buffer = RecordBuffer(options.on_bad_record)
        class_names = read_file(path, buffer, options)
        return build_text_dataset(name, {"train": buffer}, label_order=class_names, split_notes={"train": f"all records of {path.name}"})
    if not path.is_dir():
        raise DataError(f"{path}: no such file or folder; check the path")
    entries = _visible(path)
    if not entries:
        raise DataError(f"{path}: empty folder; it holds no records")
    split_files = {p: _split_of(p) for p in entries}
    if any(split_files.values()):
        return _read_split_folder(path, entries, split_files, options, name)
    if options.format == "class-folders" or all(p.is_dir() for p in entries):
        buffer = RecordBuffer(options.on_bad_record)
        read_class_folders(path, buffer, encoding=options.encoding or "utf-8")
        return build_text_dataset(name, {"train": buffer}, split_notes={"train": "all documents of the class folders"})
    if all(p.is_file() for p in entries):
        buffer = RecordBuffer(options.on_bad_record)
        if options.format not in (None, "class-files"):
            raise DataError(
                f"{path}: a folder of {options.format} files needs train.*/dev.*/test.* names; "
                "rename the files or pass one file"
            )
        read_class_files(entries, buffer, encoding=options.encoding or "utf-8")
        return build_text_dataset(name, {"train": buffer}, split_notes={"train": "all lines of the class files"})
    raise DataError(
        f"{path}: mixes files and folders; use class folders only, class files only, or train/dev/test files"
    )


def _read_split_folder(path, entries, split_files, options, name) -> TextDataset:
    buffers: dict[str, RecordBuffer] = {}
    class_names = None
    for entry, split in split_files.items():
        if split is None:
            continue
        if split in buffers:
            raise DataError(f"{path}: two sources for the {split} split ({entry.name} and another); keep one")
        if entry.is_dir():
            sub = read_path(entry, options, name=f"{name}/{entry.name}")
            if sub.multi_label:
                raise DataError(f"{entry}: multi-label class folders are not supported; use JSON Lines with a labels list")
            buf = RecordBuffer(options.on_bad_record)
            buf.texts = list(sub.splits["train"]["text"])
            buf.labels = list(sub.splits["train"]["label"])
            buf.skipped = list(sub.skipped)
            buffers[split] = buf
        else:
            buffers[split] = RecordBuffer(options.on_bad_record)
            class_names = read_file(entry, buffers[split], options) or class_names
    if "train" not in buffers:
        raise DataError(f"{path}: has {', '.join(buffers)} but no train split; add a train.* file")
    notes = {split: f"official ({path.name}/{split})" for split in buffers}
    return build_text_dataset(name, buffers, label_order=class_names, split_notes=notes)
