"""Generic local files -> records.

Formats (inferred from the extension, or named with ``format=``):

- ``csv`` / ``tsv`` (also ``.csv.gz``, ``.tsv.gz``, ``.tab``): with or without a header.
  ``text_columns`` (names or 0-based indices; several are joined with a space) and
  ``label_column`` (a name or an index). Without a header and without columns given, the
  first column is the label and the remaining columns are the text (the Zhang et al. and
  ``label<TAB>text`` conventions). With a header and no columns given, the first column
  called ``text``/``sentence``/``content``/``review``/... is the text and the first called
  ``label``/``labels``/``class``/... is the label. TSV (``format="tsv"``, whatever the
  ``delimiter``) is read without quote handling (sentences carry stray quote marks); CSV uses
  standard double-quote quoting, strictly: a stray or unclosed quote is an error at the line
  where the quoted field opens, never records glued into one. With a header, a row with more
  fields than the header is a bad record. A header of unknown column names, or a label column
  that is obviously text (nearly every record its own class, "class names" longer than the
  texts), is refused with the columns to pass. Columns given by index (``header`` not given)
  mean no header; a first row that looks like one all the same (a usual column name, or a label
  on no other row) is refused with ``header=True`` / ``header=False`` to pass, never read as a
  record. ``iter_text_column`` reads only the text of a CSV/TSV file with a header row (a file to
  predict: no label), with the same line, encoding and quote handling.
- ``jsonl`` (``.jsonl``, ``.jsonl.gz``, ``.ndjson``): one JSON object a line; the label field
  may hold a list of class names (multi-label), each class once. A CSV/TSV label cell holding
  such a list (``["acq", "crude"]``, or Python's ``['acq', 'crude']``: pandas' ``to_csv`` of a
  list column) is a bad record, not one class named by the whole list.
- ``parquet``: read through ``datasets``; ``ClassLabel`` integers become class names (a
  negative id is a missing label); a plain integer column's values are classes named by their
  digits, ``-1`` included, as in CSV.
- ``fasttext`` (``.ft``, ``.fasttext``, or ``.txt`` whose first line starts with ``__label__``):
  ``__label__x [__label__y ...] text``; several labels on any line make the data multi-label.
- one file per class: a list of files, or a folder of files, one document a line. The class
  is the file name's suffix when the files' suffixes are all different (``rt-polarity.pos``
  -> ``pos``), otherwise its stem (``books.txt`` -> ``books``).
- one folder per class holding one file per document (``<root>/<class>/<doc>``).

Multi-task data: a ``task`` field of JSON Lines (when the first record has one), a ``task`` column
of parquet, or one of CSV/TSV with a header row (any case; unless it is named as a text or the label) gives every split a
``task`` column and the dataset its ``task_names`` (the train split's tasks), as the fdu_mtl loader
does. Every record must then name its task (a missing, empty or non-string task is a bad record), and
a dev or test record of a task train lacks is a bad record at its file and line; each such refusal
advises ``task_column=None`` too. ``ReadOptions.task_column`` names the field or column (default
``task``): another name must be a field of the first JSON record or a column of the header or table
(exactly, as a label column is named), apart from the text and the label, or it is refused; ``None``
reads no task, so a ``task`` field is data like any other field the reader leaves (single-task data).

A folder holding ``train.*`` / ``dev.*`` (or ``valid.*``, ``validation.*``, ``val.*``) /
``test.*`` files, or ``train/`` / ``dev/`` / ``test/`` sub-folders, is read split by split. A
file of records there whose name is no split's (``testing.csv``, ``train_extra.csv``) is refused,
not left out; other files (``classes.txt``, a README) are ignored.

Text files are split on ``\\n`` only (never ``str.splitlines``, which also splits on NEL, 0x85)
and decoded line by line, so an undecodable byte is reported with its file and line. A
byte-order mark is followed (UTF-8, UTF-16, UTF-32); UTF-16/32 text is decoded as a stream
before it is split. Gzip data is recognised by its magic bytes. A file that cannot be read
(permission, a folder, truncated or corrupt compression, binary, UTF-16 without a mark) is a
one-line ``DataError`` naming it (and the line reached); an unknown ``encoding`` is a
``ConfigError``. Blank
lines are not records in formats that carry the label on the line (CSV/TSV, JSON Lines,
fastText); in one-document-a-line files a blank line is an empty document, which is a bad
record like any other.

Bad records (empty text, missing or empty label, undecodable line, a NUL byte, a U+0000 in
a text or label however it got there (a JSON ``\\u0000`` escape, a parquet string), unknown
label, malformed row) raise a one-line ``DataError`` naming the file and line, or with
``on_bad_record="skip"`` are skipped and listed in ``TextDataset.skipped``. A catalogue corpus
keeps a U+0000 in its strings as published (``RecordBuffer``'s ``as_published``).
"""

from __future__ import annotations

import codecs
import contextlib
import contextvars
import csv
import gzip
import json
import math
import re
import stat
import sys
import zlib
from collections import Counter
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Callable, Collection, Iterable, Iterator, Mapping, Sequence

import datasets

from ..errors import ConfigError, DataError
from ..inputs import check_named_task_column
from ..validate import RepeatedJSONKey, check_flag, is_integer, json_object_with_unique_keys
from .records import RecordPlaces, TextDataset, attach_places

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
TASK_FIELD = "task"  # the JSON field, or CSV/TSV column, naming a record's task (multi-task data)
NO_TASK = object()  # RecordBuffer.add's task of a record whose file names no tasks

# While a catalogue dataset's files are read (``published_layout``, used by loaders.py), the
# options that advice elsewhere names (format=, delimiter=, header=, text_columns=,
# label_column=) are refused (load.py): such advice becomes restoring the published layout.
_PUBLISHED_LAYOUT: contextvars.ContextVar[str | None] = contextvars.ContextVar("published_layout", default=None)


@contextlib.contextmanager
def published_layout(layout: str):
    """Read a catalogue dataset's files inside this: advice naming reader options is replaced
    by restoring the file, whose published ``layout`` is named."""
    token = _PUBLISHED_LAYOUT.set(layout)
    try:
        yield
    finally:
        _PUBLISHED_LAYOUT.reset(token)


def _option_advice(advice: str, instead: str = "restore the published file") -> str:
    """``advice`` (it names reader options), or, for a catalogue file, ``instead`` with the
    file's published layout."""
    layout = _PUBLISHED_LAYOUT.get()
    return advice if layout is None else f"{instead} (its layout: {layout})"


def _not_a_task_advice(field: str) -> str:
    """The opt-out of a refusal about a record's task: the file's ``field`` may be data that is no
    task at all (metadata); "" for a catalogue file, whose tasks its loader gives."""
    if _PUBLISHED_LAYOUT.get() is not None:
        return ""
    return f"; if {field!r} is not a task, pass task_column=None (CLI: --no-task-column) to read it as no task"

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
    # The JSON field / CSV-TSV / parquet / hf column naming each record's task (multi-task data);
    # None reads no task: a field of that name is then data like any other field the reader leaves.
    task_column: str | None = TASK_FIELD

    def __post_init__(self):
        if self.on_bad_record not in ("error", "skip"):
            raise ConfigError(f"parameter 'on_bad_record' = {self.on_bad_record!r} is not one of error, skip")
        if self.format is not None and self.format not in FORMATS:
            raise ConfigError(f"parameter 'format' = {self.format!r} is not one of {', '.join(FORMATS)}")
        if self.encoding is not None:
            check_encoding(self.encoding)
        if self.delimiter is not None:
            delimiter = {"\\t": "\t", "tab": "\t", "TAB": "\t"}.get(self.delimiter, self.delimiter)
            if not isinstance(delimiter, str) or len(delimiter) != 1 or delimiter in '"\r\n':
                raise ConfigError(
                    f"parameter 'delimiter' = {self.delimiter!r} is not one character; pass one such as "
                    "',', ';', '|' or \\t for a tab (CLI: --delimiter ';')"
                )
            object.__setattr__(self, "delimiter", delimiter)
        if self.header is not None:
            check_flag("header", self.header)
        if self.text_columns is not None:
            many = isinstance(self.text_columns, (list, tuple))
            cols = tuple(self.text_columns) if many else (self.text_columns,)
            if not cols:
                raise ConfigError("parameter 'text_columns' is empty; name at least one column")
            object.__setattr__(self, "text_columns", tuple(_as_index(c, "text_columns") for c in cols))
        if self.label_column is not None:
            object.__setattr__(self, "label_column", _as_index(self.label_column, "label_column"))
            if self.label_column in (self.text_columns or ()):
                raise ConfigError(f"column {self.label_column!r} is given as both the label and a text column; "
                                  "name the text column(s) and the label column apart")
        if self.task_column is not None:
            self._check_task_column()

    def _check_task_column(self) -> None:
        """A task column is a name; one named apart from the default must not be the text or the
        label column (the default ``task`` gives way to a text or label column of that name)."""
        task = self.task_column
        if not isinstance(task, str) or not task.strip():
            raise ConfigError(f"parameter 'task_column' = {task!r}: a task column is a name (str), or None to read "
                              "no task")
        if task != TASK_FIELD:
            role = "the label" if task == self.label_column else "a text" if task in (self.text_columns or ()) else None
            if role is not None:
                raise ConfigError(f"column {task!r} is given as both the task and {role} column; name the task "
                                  "column apart, or pass task_column=None (CLI: --no-task-column) to read no task")


def _as_index(column: str | int, parameter: str) -> str | int:
    """Column "2" (as typed on the command line) is index 2; a column is a name or a 0-based index."""
    if isinstance(column, bool) or not isinstance(column, (str, int)) or isinstance(column, int) and column < 0:
        raise ConfigError(f"parameter '{parameter}' = {column!r}: a column is a name (str) or a 0-based index (int)")
    return int(column) if isinstance(column, str) and column.strip().isdigit() else column


class RecordBuffer:
    """Collects the records of one split and applies the bad-record policy.

    ``skip_empty_text`` is for published corpora that themselves ship empty documents
    (``mpqa``, ``reuters``, one ``fdu_mtl`` line): those are skipped and counted whatever
    ``on_bad_record`` says, since the user cannot fix a published corpus. ``True`` skips every
    empty text so (a hub copy, whose records have no fixed lines); a mapping ``{file name: line
    numbers}`` only the published file's own empty documents, so an empty document anywhere
    else (a blank line a user inserted) is a bad record like in any other file. With
    ``published_empty_key`` (a JSON field, reuters' ``"id"``) the mapping holds that field's
    values instead of lines: a rebuild that orders the records otherwise keeps them.

    ``as_published``: the records are a catalogue corpus (a local copy or the hub's), whose
    strings are kept as published, a U+0000 in a text or label included (see ``add``).
    """

    def __init__(self, on_bad_record: str = "error", skip_empty_text: bool | Mapping[str, Collection[Any]] = False,
                 known_labels: Sequence[str] | None = None, published_empty_key: str | None = None,
                 as_published: bool = False):
        self.on_bad_record = on_bad_record
        self.as_published = as_published
        self.skip_empty_text = skip_empty_text
        self.published_empty_key = published_empty_key
        # A published corpus's classes (imdb's two, reuters' ten topics): a label outside them is
        # a damaged line, not a new class.
        self.known_labels = None if known_labels is None else frozenset(known_labels)
        self._known_shown = None if known_labels is None else ", ".join(known_labels)
        self.texts: list[str] = []
        self.labels: list[Any] = []
        # Each kept record's task, where its file names one (a "task" field or column): multi-task data.
        self.tasks: list[str] = []
        self.task_field = TASK_FIELD  # the field or column the tasks are read from (ReadOptions.task_column)
        # Each kept record's file and line, for checks after reading (an unknown label at
        # evaluate); a catalogue corpus's records are named by split and index instead.
        self.places: RecordPlaces | None = None if as_published else RecordPlaces()
        self.skipped: list[str] = []
        # (where, is a list) of the first kept record: one file holds one kind of label, so a
        # stray list in a single-label file is refused rather than turning the file multi-label.
        self._first_kind: tuple[str, bool] | None = None

    def __len__(self) -> int:
        return len(self.texts)

    def reject(self, where: str, reason: str, fix: str, skippable: bool = True) -> None:
        """Raise for a bad record, or count it as skipped under ``on_bad_record="skip"``."""
        if skippable and self.on_bad_record == "skip":
            self.skipped.append(f"{where}: {reason}")
            return
        tail = f"; {fix}, {SKIP_HINT}" if skippable else f"; {fix}"
        raise DataError(f"{where}: {reason}{tail}")

    def add(self, where: str, text: Any, label: Any, *, any_label_kind: bool = False, key: Any = None,
            task: Any = NO_TASK) -> bool:
        """Validate and keep one record; returns False when it was skipped.

        ``any_label_kind``: the format itself marks multi-label records (fastText lines with
        several ``__label__`` prefixes), so one class name beside lists is not a mistake.
        ``key``: the record's ``published_empty_key`` field (None when it has none).
        ``task``: the record's task where its file names tasks (None or blank: a bad record);
        ``NO_TASK`` where it names none."""
        if text is None:
            text = ""
        if not isinstance(text, str):
            text = str(text)
        if not text.strip():
            published = self._published_empty(where, key)
            if published is True:
                self.skipped.append(f"{where}: empty text (as published)")
                return False
            if published:
                self.reject(where, f"empty text where the published file has no empty document ({published})",
                            "restore the file, or remove the record")
                return False
            self.reject(where, "empty text", "write the document's text or remove the record")
            return False
        label = _clean_label(label)
        if label is None:
            self.reject(where, "missing or empty label", "give the record a class name or remove it")
            return False
        is_list = isinstance(label, list)
        # Text files refuse a NUL byte line by line; this catches the U+0000 that reaches a record
        # otherwise (a JSON \u0000 escape, a parquet or hub string), whatever the format. Every
        # record passes here, so the clean case is two substring scans; only a hit looks for where.
        # A catalogue corpus is read as published instead: its user cannot fix it (a hub copy, all
        # there is of dbpedia, yelp, amazon... without a local one, cannot even be scanned before
        # it is loaded), so a refusal would end every default load of it; skipping would drop
        # records every other user of the corpus trains and tests on and move its splits off their
        # published sizes (catalog.py's split_sizes). A U+0000 there is a character of the corpus,
        # which the tokenizers read like any other; a NUL byte in a local copy's text file is
        # still refused at its line, as a broken copy.
        names = label if is_list else [label]
        if not self.as_published and ("\x00" in text or any("\x00" in name for name in names)):
            self._reject_nul_character(where, text, names)
            return False
        if is_list and not self.as_published and len(set(label)) < len(label):
            # Merged, a repeated class would hide a typo or a join gone wrong; a catalogue corpus keeps
            # its own repeats (reuters has two records naming a topic twice), as published.
            twice = next(name for i, name in enumerate(label) if name in label[:i])
            self.reject(where, f"the label list names {twice!r} twice", "name each class once")
            return False
        if self.known_labels is not None:
            unknown = next((name for name in names if name not in self.known_labels), None)
            if unknown is not None:
                self.reject(where, f"label {unknown!r} is not one of the corpus's classes ({self._known_shown})",
                            "restore the file (the published corpus has only these classes)")
                return False
        if task is not NO_TASK and not self._task_is_a_name(where, task):
            return False
        if self._first_kind is None:
            self._first_kind = (where, is_list)
        elif is_list != self._first_kind[1] and not any_label_kind:
            first_where, first_is_list = self._first_kind
            kinds = ("a list of class names", "one class name")
            self.reject(where, f"the label is {kinds[0] if is_list else kinds[1]} but the first record's "
                        f"({first_where}) is {kinds[0] if first_is_list else kinds[1]}",
                        "write every label as one class name, or every label as a list (multi-label)")
            return False
        self.texts.append(text)
        self.labels.append(label)
        if task is not NO_TASK:
            # Trimmed as class names are (a CSV cell is already): "books " must not be a second task.
            self.tasks.append(task.strip())
        if self.places is not None:
            self.places.append(where)
        return True

    def _task_is_a_name(self, where: str, task: Any) -> bool:
        if task is None or isinstance(task, str) and not task.strip():
            self.reject(where, "missing or empty task", "give the record its task (the file names a task for its "
                        "records: each trains its own head) or remove the record" + _not_a_task_advice(self.task_field))
            return False
        if not isinstance(task, str):
            self.reject(where, f"the task is {_json_kind(task)} ({task!r:.40}), not a task name",
                        "write the task's name as a string" + _not_a_task_advice(self.task_field))
            return False
        return True

    def keep_rows(self, rows: list[int]) -> None:
        """Keep only the records ``rows`` (in that order), with their tasks and places."""
        self.texts = [self.texts[i] for i in rows]
        self.labels = [self.labels[i] for i in rows]
        if self.tasks:
            self.tasks = [self.tasks[i] for i in rows]
        if self.places is not None:
            self.places = self.places.take(rows)

    def _reject_nul_character(self, where: str, text: str, names: list[str]) -> None:
        of, value = next((of, value) for of, value in (("text", text), *(("label", n) for n in names)) if "\x00" in value)
        self.reject(where, *nul_in_record_problem(value.index("\x00") + 1, of))

    def _published_empty(self, where: str, key: Any) -> bool | str:
        """True when the empty text at ``where`` ("<path>:<line>", its record's field ``key``)
        is one the published corpus ships; else where that file's own are ("" when it has none)."""
        if self.skip_empty_text is True or not self.skip_empty_text:
            return bool(self.skip_empty_text)
        name, _, line = Path(where).name.rpartition(":")
        published = sorted(self.skip_empty_text.get(name, ()))
        if not published:
            return ""
        field = self.published_empty_key
        if field is None:
            if line.isdigit() and int(line) in published:
                return True
            return f"its own are on line(s) {_few(published)}; lines added or removed above move them"
        # Compared as text: a rebuild may write the ids as strings.
        if key is not None and str(key) in map(str, published):
            return True
        this = f"this record's {field} is {key!r}" if key is not None else f"this record has no {field!r}"
        return f"its own have the {field}s {_few(published)}; {this}"


def _few(numbers: Sequence[int], shown: int = 3) -> str:
    """"6415, 7294" or "174, 371, 381 and 33 more"."""
    head = ", ".join(map(str, numbers[:shown]))
    return head if len(numbers) <= shown else f"{head} and {len(numbers) - shown} more"


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
# Opening, encodings, lines

# (byte-order mark, the codec that reads it). UTF-32-LE's mark starts with UTF-16-LE's, so
# the longer marks are tried first.
_BOMS = (
    (b"\x00\x00\xfe\xff", "utf-32"),
    (b"\xff\xfe\x00\x00", "utf-32"),
    (b"\xef\xbb\xbf", "utf-8-sig"),
    (b"\xff\xfe", "utf-16"),
    (b"\xfe\xff", "utf-16"),
)
_BOM_NAMES = {b"\x00\x00\xfe\xff": "UTF-32-BE", b"\xff\xfe\x00\x00": "UTF-32-LE", b"\xef\xbb\xbf": "UTF-8",
              b"\xff\xfe": "UTF-16-LE", b"\xfe\xff": "UTF-16-BE"}
ENCODING_EXAMPLES = "utf-8, latin-1 or utf-16"
# How much of a file is looked at to recognise a BOM, a binary file or UTF-16 without a BOM.
_HEAD = 4096
# Errors a damaged compressed file raises while it is read (BadGzipFile is an OSError).
_STREAM_ERRORS = (EOFError, zlib.error, OSError)


def check_encoding(encoding: str, parameter: str = "encoding") -> str:
    """``encoding`` if Python has a text codec of that name, else a ConfigError."""
    try:
        info = codecs.lookup(encoding)
    except (LookupError, TypeError, ValueError):
        info = None
    if info is None or not getattr(info, "_is_text_encoding", True):
        raise ConfigError(
            f"parameter '{parameter}' = {encoding!r} is not a known text encoding; "
            f"pass one such as {ENCODING_EXAMPLES} (CLI: --encoding utf-8)"
        )
    return encoding


def _codec_name(encoding: str) -> str:
    return codecs.lookup(encoding).name


def _bom_of(head: bytes) -> bytes | None:
    return next((bom for bom, _ in _BOMS if head.startswith(bom)), None)


def _effective_encoding(encoding: str, head: bytes) -> str:
    """The codec to read a file with: a UTF-16/UTF-32 byte-order mark wins over the default
    utf-8 (such a file cannot be UTF-8: bytes FF FE / FE FF are invalid there). An explicit
    other encoding is kept; the binary sniff below then explains the mismatch."""
    bom = _bom_of(head)
    if bom is not None and _codec_name(encoding) in ("utf-8", "utf-8-sig"):
        return dict(_BOMS)[bom]
    return encoding


def _ascii_compatible(encoding: str) -> bool:
    """Whether ``\\n`` is byte 0A in this encoding, so lines can be split before decoding."""
    try:
        return "\n\r".encode(encoding) == b"\n\r" and "a".encode(encoding) == b"a"
    except (UnicodeError, LookupError):
        return False


def _unreadable(path: Path, err: OSError) -> str:
    if isinstance(err, PermissionError):
        return f"{path}: cannot be read: permission denied; give yourself read access (chmod u+r) or copy the file somewhere readable"
    if isinstance(err, IsADirectoryError):
        return f"{path}: is a folder, not a file; pass a file, or the folder as the data source"
    reason = err.strerror or str(err) or type(err).__name__
    return f"{path}: cannot be read ({reason}); check the path and the disk"


@contextlib.contextmanager
def open_binary(path: Path):
    """``path`` opened for binary reading; gzip data (by magic bytes) is decompressed.

    An unreadable file (permission, folder, I/O) is a DataError naming it; so is a ``.gz``
    name on data that is not gzip-compressed.
    """
    try:
        raw = open(path, "rb")
    except OSError as err:
        raise DataError(_unreadable(path, err)) from None
    try:
        try:
            magic = raw.read(2)
            raw.seek(0)
        except OSError as err:
            raise DataError(_unreadable(path, err)) from None
        if magic == b"\x1f\x8b":
            with gzip.GzipFile(fileobj=raw, mode="rb") as fh:
                yield fh
        elif path.name.lower().endswith(".gz") and magic:
            raise DataError(
                f"{path}: is named .gz but is not gzip-compressed; drop .gz from its name, or compress it with gzip"
            )
        else:
            yield raw
    finally:
        raw.close()


def _damaged(path: Path, lines_read: int, err: BaseException) -> DataError:
    reason = " ".join(str(err).split()) or type(err).__name__
    if isinstance(err, OSError) and not isinstance(err, gzip.BadGzipFile) and err.errno is not None:
        return DataError(
            f"{path}:{lines_read + 1}: reading stopped after line {lines_read} ({err.strerror or reason}); "
            "check the disk, or copy the file again"
        )
    return DataError(
        f"{path}:{lines_read + 1}: the file is truncated or corrupt: its compressed data ends or breaks after "
        f"line {lines_read} ({reason}); download or create the file again"
    )


def _peek(path: Path, fh, lines_read: int = 0) -> bytes:
    try:
        return fh.peek(_HEAD)[:_HEAD]
    except _STREAM_ERRORS as err:
        raise _damaged(path, lines_read, err) from None


def _sniff_binary(path: Path, head: bytes, encoding: str) -> None:
    """Refuse, with the right advice, a file that is not text in an ASCII-compatible encoding:
    a UTF-16/32 byte-order mark read with another encoding, UTF-16/32 without a mark (NUL
    bytes at a steady stride), a parquet, zip, compressed or image file (magic bytes), or a
    binary file (NUL bytes among many other control bytes in its first ``_HEAD`` bytes)."""
    bom = _bom_of(head)
    if bom is not None and bom != b"\xef\xbb\xbf":
        real = dict(_BOMS)[bom]
        raise DataError(
            f"{path}: starts with a {_BOM_NAMES[bom]} byte-order mark but encoding={encoding!r} was asked for; "
            f'pass encoding="{real}" (CLI: --encoding {real}) or leave the encoding unset'
        )
    if head.startswith(b"PAR1"):
        raise DataError(f"{path}: is a parquet file, not text; "
                        + _option_advice('name it .parquet or pass format="parquet" (CLI: --format parquet)'))
    if head.startswith(b"PK\x03\x04"):
        raise DataError(f"{path}: is a zip archive, not text; unpack it and pass the file (or folder) inside")
    kind = next((k for magic, k in _MAGIC if head.startswith(magic)), None)
    if kind is not None:
        fix = "decompress it first (textcls reads .gz files itself)" if kind.endswith("compressed") else "check the path"
        raise DataError(f"{path}: is a {kind} file, not text; {fix}")
    # A stray NUL byte is a damaged record, refused at its line (``_reject_nul``); a binary file
    # has NUL bytes and many other control bytes, which text (even with an odd \x01 delimiter)
    # does not, and is refused as a whole here.
    controls = sum(head.count(b) for b in _CONTROL_BYTES)
    if b"\x00" not in head or controls < max(16, len(head) // 50):
        return
    wide = _guess_wide_encoding(head)
    if wide is not None:
        raise DataError(
            f"{path}: holds NUL bytes at a steady stride, so it is {wide.upper()} text without a byte-order mark; "
            f'pass encoding="{wide}" (CLI: --encoding {wide})'
        )
    raise DataError(
        f"{path}: holds NUL and other control bytes ({controls} in its first {len(head)} bytes; the first NUL at "
        f"byte {head.index(0)}), so it is a binary file, not text; "
        + _option_advice("check the path, or pass format= (CLI: --format) if it is a parquet file")
    )


_CONTROL_BYTES = tuple(b for b in range(32) if b not in b"\t\n\v\f\r\x1b")
_MAGIC = (
    (b"BZh", "bzip2-compressed"),
    (b"\xfd7zXZ\x00", "xz-compressed"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed"),
    (b"7z\xbc\xaf\x27\x1c", "7-zip-compressed"),
    (b"%PDF-", "PDF"),
    (b"\x89PNG", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
)


def _guess_wide_encoding(data: bytes) -> str | None:
    """utf-16-le/-be or utf-32-le/-be when NUL bytes sit at a steady stride (ASCII text in a
    wide encoding); None otherwise."""
    data = data[: len(data) - len(data) % 4]
    if len(data) < 4 or b"\x00" not in data:
        return None

    def zero(offset: int, stride: int) -> float:
        lane = data[offset::stride]
        return lane.count(0) / max(len(lane), 1)

    if zero(1, 4) > 0.9 and zero(2, 4) > 0.9 and zero(3, 4) > 0.9:
        return "utf-32-le"
    if zero(0, 4) > 0.9 and zero(1, 4) > 0.9 and zero(2, 4) > 0.9:
        return "utf-32-be"
    if zero(1, 2) > 0.6 and zero(0, 2) < 0.1:
        return "utf-16-le"
    if zero(0, 2) > 0.6 and zero(1, 2) < 0.1:
        return "utf-16-be"
    return None


def _describe_decode_error(err: UnicodeDecodeError, encoding: str) -> str:
    bad = err.object[err.start : err.end]
    return f"byte(s) {bad.hex(' ')} at column {err.start + 1} cannot be decoded as {encoding}"


def decode_hint(encoding: str, raw: bytes = b"") -> str:
    """What to do about a line that does not decode; ``raw`` (the line's bytes) lets NUL
    bytes or a byte-order mark point at the encoding the file really has."""
    bom = _bom_of(raw)
    wide = dict(_BOMS)[bom] if bom is not None and bom != b"\xef\xbb\xbf" else None
    if wide is None and b"\x00" in raw:
        wide = _guess_wide_encoding(raw) or _guess_wide_encoding(raw[1:]) or "utf-16"
    if wide is not None:
        return f'the line holds NUL bytes, as {wide.upper()} text does: pass encoding="{wide}" (CLI: --encoding {wide})'
    return (
        'pass encoding="latin-1" (CLI: --encoding latin-1) or the file\'s real encoding'
        if encoding.lower().replace("_", "-") in ("utf-8", "utf8", "utf-8-sig")
        else "pass the file's real encoding with encoding= (CLI: --encoding)"
    )


def _mark_bad_bytes(err: UnicodeError):
    """Decode error handler of the stream path: each undecodable byte becomes U+DC00+byte, a
    lone surrogate no codec yields for valid input, so a line can be checked after decoding."""
    if isinstance(err, UnicodeDecodeError):
        return "".join(chr(0xDC00 + b) for b in err.object[err.start : err.end]), err.end
    raise err


codecs.register_error("textcls-mark", _mark_bad_bytes)
_MARKED = re.compile("[\udc00-\udcff]+")


def iter_lines(
    path: Path,
    buffer: RecordBuffer,
    encoding: str = "utf-8",
    errors: str = "strict",
) -> Iterator[tuple[int, str]]:
    """Yield ``(line number, text)`` for each ``\\n``-terminated line of ``path``.

    Lines are split on ``\\n`` alone and decoded one at a time, so NEL bytes stay inside
    their record and an undecodable line is reported (or skipped and counted) by its number.
    A trailing ``\\r`` is dropped; so is a byte-order mark. A UTF-16/UTF-32 byte-order mark
    is followed when the encoding is the default utf-8; encodings in which ``\\n`` is not
    byte 0A (UTF-16, UTF-32, ...) are decoded as a stream and then split on ``\\n``.
    A file that is binary, unreadable, truncated or corrupt is a one-line DataError.
    """
    path = Path(path)
    check_encoding(encoding)
    _require_file(path)
    with open_binary(path) as fh:
        head = _peek(path, fh)
        encoding = _effective_encoding(encoding, head)
        family = _codec_name(encoding)
        if family in ("utf-16", "utf-32") and _bom_of(head) is None:
            # Python's incremental utf-16/utf-32 decoders need the mark to know the byte order;
            # NUL bytes at a steady stride tell it for (mostly) ASCII text.
            guess = _guess_wide_encoding(head)
            if guess is None or not guess.startswith(family):
                raise DataError(
                    f"{path}: has no byte-order mark, so {encoding} cannot tell its byte order; "
                    f'pass encoding="{family}-le" or "{family}-be" (CLI: --encoding {family}-le)'
                )
            encoding = guess
        if _ascii_compatible(encoding):
            _sniff_binary(path, head, encoding)
            yield from _byte_lines(path, fh, buffer, encoding, errors)
        else:
            yield from _stream_lines(path, fh, buffer, encoding, errors)


def _byte_lines(path, fh, buffer, encoding, errors) -> Iterator[tuple[int, str]]:
    strip_bom = _codec_name(encoding).startswith("utf")
    lineno = 0
    lines = iter(fh)
    while True:
        try:
            raw = next(lines)
        except StopIteration:
            return
        except _STREAM_ERRORS as err:
            raise _damaged(path, lineno, err) from None
        lineno += 1
        if raw.endswith(b"\n"):
            raw = raw[:-1]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        if lineno == 1 and strip_bom and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        if b"\x00" in raw:
            _reject_nul(f"{path}:{lineno}", len(raw[: raw.index(0)].decode(encoding, "replace")) + 1, buffer, raw)
            continue
        if b"\r" in raw:
            _reject_inner_carriage_return(path, lineno, buffer)
            continue
        try:
            text = raw.decode(encoding, errors)
        except UnicodeDecodeError as err:
            buffer.reject(f"{path}:{lineno}", _describe_decode_error(err, encoding), decode_hint(encoding, raw))
            continue
        yield lineno, text


def _reject_nul(where: str, character: int, buffer: RecordBuffer, raw: bytes | None = None) -> None:
    """A NUL in a text file: no text holds one, so it means a broken copy, a binary file or
    another encoding, never a document's character. ``raw``, the line's bytes (None when the
    line was decoded from UTF-16/32), lets NUL bytes at a steady stride name the UTF-16/32 the
    file really is."""
    if raw is None:
        buffer.reject(where, *nul_character_problem(character))
        return
    wide = _guess_wide_encoding(raw) or _guess_wide_encoding(raw[1:])
    if wide is not None:
        buffer.reject(where, f"NUL bytes (0x00) at a steady stride from character {character} on, so the file is "
                      f"{wide.upper()} text without a byte-order mark",
                      f'pass encoding="{wide}" (CLI: --encoding {wide})', skippable=False)
        return
    buffer.reject(where, *nul_byte_problem(character))


def nul_byte_problem(character: int, stream: bool = False) -> tuple[str, str]:
    """What a NUL byte at ``character`` of a line means, and what to do; ``textcls predict
    --input`` says the same of its files and, with ``stream``, of stdin, which has no file to
    restore: what pipes into it is at fault."""
    if stream:
        return (f"a NUL byte (0x00) at character {character}, which no text holds: the input is binary or in "
                "another encoding (UTF-16, for one)", "fix what pipes into it, or remove the byte there")
    return (f"a NUL byte (0x00) at character {character}, which no text holds: the file is binary, a broken copy, "
            "or in another encoding (UTF-16, for one)", "restore the file from a good copy, or remove the byte")


def nul_character_problem(character: int) -> tuple[str, str]:
    """``nul_byte_problem`` for a U+0000 decoded from a UTF-16/32 file's bytes, not read as a byte."""
    return (f"a NUL character (U+0000) at character {character}, which no text holds: the file is binary or a "
            "broken copy", "restore the file from a good copy, or remove the character")


def nul_in_record_problem(character: int, of: str = "text") -> tuple[str, str]:
    """A U+0000 in a record's ``of`` ("text", "label") that no NUL byte carried: a JSON ``\\u0000``
    escape, or a parquet or hub string holding it. The file around it is sound (its bytes passed the
    line checks), and a hub record has no file to restore, so the advice is about the record alone.
    Only training data is held to it: prediction classifies such a text as it is."""
    return (f"a NUL character (U+0000: a JSON \\u0000 escape, or a string holding it) at character {character} of "
            f"the {of}, which no text holds", "remove it from the record")


def _reject_inner_carriage_return(path, lineno: int, buffer: RecordBuffer) -> None:
    """A carriage return inside a line: a file with old Mac line endings (\\r alone) would be read
    as one line holding every record, so it is refused where it is found, not merged (the CSV
    reader's own message for a \\r inside a field says the same)."""
    buffer.reject(f"{path}:{lineno}", "a carriage return (\\r) inside the line (\\r-only line endings, or a stray "
                  "one) would merge records", "convert the file's line endings to \\n (dos2unix, or mac2unix for old "
                  "Mac files) or remove the character")


def _stream_lines(path, fh, buffer, encoding, errors) -> Iterator[tuple[int, str]]:
    decoder = codecs.getincrementaldecoder(encoding)("textcls-mark" if errors == "strict" else errors)
    lineno, pending = 0, ""

    def finish(line: str) -> Iterator[tuple[int, str]]:
        if line.endswith("\r"):
            line = line[:-1]
        if "\r" in line:
            _reject_inner_carriage_return(path, lineno, buffer)
            return
        if lineno == 1 and line.startswith("\ufeff"):
            line = line[1:]
        if "\x00" in line:
            _reject_nul(f"{path}:{lineno}", line.index("\x00") + 1, buffer)
            return
        bad = _MARKED.search(line)
        if bad is None:
            yield lineno, line
            return
        raw = bytes(ord(c) - 0xDC00 for c in bad.group())
        buffer.reject(
            f"{path}:{lineno}",
            f"byte(s) {raw.hex(' ')} at character {bad.start() + 1} cannot be decoded as {encoding}",
            "pass the file's real encoding with encoding= (CLI: --encoding)",
        )

    while True:
        try:
            chunk = fh.read(1 << 16)
        except _STREAM_ERRORS as err:
            raise _damaged(path, lineno, err) from None
        try:
            pending += decoder.decode(chunk, final=not chunk)
        except UnicodeError as err:  # the mark handler covers bad bytes; this is the codec itself
            raise DataError(
                f"{path}:{lineno + 1}: cannot be decoded as {encoding} ({err}); pass the file's real encoding "
                "with encoding= (CLI: --encoding)"
            ) from None
        *complete, pending = pending.split("\n")
        for line in complete:
            lineno += 1
            yield from finish(line)
        if not chunk:
            break
    if pending:
        lineno += 1
        yield from finish(pending)


def _require_file(path: Path) -> None:
    try:
        st = path.stat()
    except FileNotFoundError:
        raise DataError(f"{path}: no such file; check the path") from None
    except OSError as err:
        raise DataError(_unreadable(path, err)) from None
    if stat.S_ISDIR(st.st_mode):
        raise DataError(f"{path}: is a folder, not a file; pass a file, or the folder as the data source")
    if not stat.S_ISREG(st.st_mode):
        raise DataError(f"{path}: no such file; check the path")
    if st.st_size == 0:
        raise DataError(f"{path}: empty file; it holds no records")


def _finish(path: Path, buffer: RecordBuffer, before: int, skipped_before: int, header: Sequence[str] | None = None) -> None:
    """Every file must contribute records; an empty or all-bad file is an error."""
    if len(buffer) > before:
        return
    n_bad = len(buffer.skipped) - skipped_before
    if n_bad:
        raise DataError(
            f"{path}: all {n_bad} records were bad and skipped (first: {buffer.skipped[skipped_before]}); "
            + _option_advice("fix the file or check encoding= and the column options",
                            "check encoding= (CLI: --encoding) or restore the published file")
        )
    if header is not None:
        raise DataError(
            f"{path}: holds a header row ({', '.join(header)}) and no records; "
            + _option_advice("add records, or pass header=False (CLI: --no-header) if that row is a record")
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
    task_column: str | None = TASK_FIELD,
) -> None:
    """Append the records of a CSV/TSV file to ``buffer`` (see the module docstring); ``task_column``
    names the header's column of each record's task (None: no task)."""
    before, skipped_before = len(buffer), len(buffer.skipped)
    if quoting is None:
        quoting = csv.QUOTE_NONE if delimiter == "\t" else csv.QUOTE_MINIMAL
    quoted = quoting != csv.QUOTE_NONE
    given_header = header
    header = _header_setting(path, header, text_columns, label_column, task_column)
    auto_header = header is None  # decided below from the first row
    # Columns given by index, header not said: read without one, so a header row would become a
    # record (a class named after the label column); its first row is checked below.
    by_index = given_header is None and header is False
    lines = _RecordLines(path, buffer, encoding, decode_errors, keep_text=quoted)
    # Reading chosen against unterminated or stray quotes (a CSV whose quote at line N was never
    # closed used to swallow the next records into one field): strict=True makes csv refuse a
    # closing quote followed by anything but the delimiter or the line end, and a file that ends
    # inside a quoted field. A quote that closes cleanly further down is caught below: a record
    # that spans lines must keep the header's field count and a label without a line break,
    # and a multi-line field must not be made of lines that look like records of their own.
    # Legitimate multi-line quoted fields (paragraphs of a review) pass all of these.
    reader = csv.reader(lines.feed(), delimiter=delimiter, quoting=quoting, strict=quoted)
    text_idx: list[int] | None = None
    label_idx: int | None = None
    task_idx: int | None = None
    columns: list[str] | None = None
    first_row: tuple[int, list[str]] | None = None  # first record, when no header was found
    raw_labels: Counter = Counter()
    spanning: list[tuple[int, int, list[str]]] = []
    for lineno, end, row in _delimited_rows(reader, lines, path, delimiter):
        if columns is None and text_idx is None:
            if header is None:
                header = _looks_like_header(row)
            if header:
                columns = [c.strip() for c in row]
                text_idx, label_idx = _resolve_columns(path, columns, text_columns, label_column)
                task_idx = find_task_column(path, columns, [*text_idx, label_idx], task_column, _task_roles(
                    [columns[i] for i in text_idx], columns[label_idx], text_columns, label_column))
                buffer.task_field = task_column or TASK_FIELD
                continue
            text_idx, label_idx = _resolve_indices(path, len(row), text_columns, label_column, lineno)
            if auto_header or by_index:
                first_row = (lineno, row)
        if end > lineno and quoted:
            _check_spanning_record(path, lineno, end, row, columns, label_idx, delimiter)
            spanning.append((lineno, end, row))
        _add_row(buffer, f"{path}:{lineno}", row, columns, text_idx, label_idx, delimiter=delimiter,
                 label_map=label_map, text_transform=text_transform, raw_labels=raw_labels, task_idx=task_idx)
    for start, end, row in spanning:
        _check_swallowed_records(path, start, end, row, columns, label_idx, delimiter, raw_labels)
    _finish(path, buffer, before, skipped_before, header=columns)
    _check_delimited_labels(path, buffer, before, columns, label_idx, None if by_index else first_row)
    if first_row is not None and by_index:
        _check_first_row_is_no_header(path, first_row, label_idx, raw_labels)
    elif first_row is not None:
        _check_first_row_is_record(path, first_row, label_idx, raw_labels)


def _header_setting(path: Path, header: bool | None, text_columns, label_column,
                    task_column: str | None = TASK_FIELD) -> bool | None:
    """Whether the file has a header row: as given; True when columns are named, False when
    they are indices; None (decide from the first row) when no column is given. A task column
    named apart from the default ``task`` is a column named."""
    named_task = task_column not in (None, TASK_FIELD)
    named = [c for c in [*(text_columns or ()), label_column] if isinstance(c, str)] + [task_column] * named_task
    if header is False and named_task:  # no index: a task column is named, not numbered
        raise DataError(f"{path}: task_column={task_column!r} but header=False; a task column is found by its header "
                        "name, so the file needs a header row: pass header=True (CLI: --header), or "
                        "task_column=None (CLI: --no-task-column) to read no task")
    if header is False and named:
        raise DataError(
            f"{path}: columns are named ({', '.join(map(repr, named))}) but header=False; "
            "pass 0-based column indices or header=True"
        )
    if header is None and (text_columns is not None or label_column is not None or named_task):
        header = bool(named)
    return header


class _RecordLines:
    """A file's lines for ``csv.reader``, remembering which lines the record being parsed
    spans (``start``, ``end``) and, for quoted formats, their text (to find where a bad quoted
    field opened)."""

    def __init__(self, path: Path, buffer: RecordBuffer, encoding: str, decode_errors: str, *, keep_text: bool):
        self.path, self.buffer, self.encoding, self.decode_errors = path, buffer, encoding, decode_errors
        self.keep_text = keep_text
        self.state: dict[str, Any] = {"start": None, "end": 0, "lines": []}

    def feed(self) -> Iterator[str]:
        state = self.state
        for lineno, line in iter_lines(self.path, self.buffer, self.encoding, self.decode_errors):
            if state["start"] is None:
                state["start"], state["lines"] = lineno, []
            state["end"] = lineno
            if self.keep_text:
                state["lines"].append((lineno, line))
            yield line + "\n"

    def take(self) -> tuple[int, int]:
        """(first line, last line) of the record just parsed; the next record starts afresh."""
        lineno, end = self.state["start"], self.state["end"]
        self.state["start"] = None
        return lineno, end


def _delimited_rows(reader, lines: _RecordLines, path: Path, delimiter: str) -> Iterator[tuple[int, int, list[str]]]:
    """``(first line, last line, row)`` of each record ``reader`` parses from ``lines``; a blank
    line is not a record. A ``csv.Error`` becomes a ``DataError`` at the line it happened."""
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as err:
            raise _csv_error(path, err, lines.state, delimiter) from None
        lineno, end = lines.take()
        if row and (len(row) > 1 or row[0].strip()):
            yield lineno, end, row


def iter_text_column(
    path: Path,
    *,
    fmt: str = "csv",
    text_columns: Sequence[str] = ("text",),
    delimiter: str | None = None,
    encoding: str = "utf-8",
    task_column: str | None = TASK_FIELD,
    task_column_required: bool = True,
) -> Iterator[tuple[int, str, str | None]]:
    """``(first line, text, task)`` of every record of a CSV/TSV file with a header row: the texts of a
    file to predict, which needs no label (``textcls predict --input f.csv``). ``task`` is the record's
    cell of the ``task_column`` column (the default ``task`` in any case, as ``read_delimited`` finds
    it; None: no task is read; a named one the header lacks is refused, unless not
    ``task_column_required``), None where the header has none or the cell is empty (as a JSON line
    without a "task" field: the caller's default applies).

    The text is the column(s) ``text_columns`` names in the header, stripped and joined with a
    space as ``read_delimited`` joins them; other columns (a label) are left. Lines, encoding,
    quoting (``fmt="csv"``; ``"tsv"`` is read without quote handling) and their errors are
    ``read_delimited``'s; ``delimiter`` (None: ``,`` for csv, a tab for tsv; ``\\t`` and ``tab``
    name a tab) as ``ReadOptions`` takes it. A blank line is no record. Every bad record is a
    ``DataError`` at its file and line, never skipped (nothing advises ``on_bad_record="skip"``):
    each record gets its prediction. A text is checked as ``inputs.check_texts`` checks one."""
    from ..inputs import check_texts
    from ..validate import check_choice

    check_choice("fmt", fmt, ("csv", "tsv"))
    delimiter = ReadOptions(delimiter=delimiter).delimiter or ("\t" if fmt == "tsv" else ",")
    quoted = fmt == "csv"  # TSV is read without quote handling, as train reads it
    lines = _RecordLines(path, _NoSkipBuffer("error"), encoding, "strict", keep_text=quoted)
    reader = csv.reader(lines.feed(), delimiter=delimiter, quoting=csv.QUOTE_MINIMAL if quoted else csv.QUOTE_NONE,
                        strict=quoted)
    header, columns, task_idx = None, [], None
    for lineno, _, row in _delimited_rows(reader, lines, path, delimiter):
        if header is None:
            header = [cell.strip() for cell in row]
            columns = _text_column_positions(path, lineno, header, tuple(text_columns), fmt)
            # Not required (predict's default, the run's own column): read where the header has it.
            # The default is found in any case (Task, TASK) as read_delimited finds it; a column not
            # required (the run's own, read where the input has it) only where the header names it.
            named = (task_column if task_column_required or task_column == TASK_FIELD or task_column in header
                     else None)
            task_idx = find_task_column(path, header, columns, named, {header[i]: "a text" for i in columns})
            continue
        if len(_trim(row)) > len(header):
            raise DataError(f"{path}:{lineno}: row has {len(row)} fields, the header has {len(header)} "
                            f"({', '.join(header)}); quote the field that holds a "
                            f"{_delimiter_name(delimiter)} or fix the row")
        if len(row) <= max(columns):
            raise DataError(f"{path}:{lineno}: row has {len(row)} field(s) and no column "
                            f"{header[max(columns)]!r} (field {max(columns) + 1}); complete the row")
        text = " ".join(row[i].strip() for i in columns if row[i].strip())
        check_texts([text], f"{path}:{lineno}", first=None)
        task = row[task_idx].strip() if task_idx is not None and task_idx < len(row) else ""
        yield lineno, text, task or None


def _text_column_positions(path: Path, lineno: int, header: list[str], names: tuple, fmt: str) -> list[int]:
    """The positions of the text columns ``names`` in a CSV/TSV ``header`` row (iter_text_column)."""
    twice = next((name for name in names if header.count(name) > 1), None)
    if twice is not None:
        raise DataError(f"{path}:{lineno}: the header names the column {twice!r} twice; rename or remove one of them")
    missing = next((name for name in names if name not in header), None)
    if missing is not None:
        shown = ", ".join(repr(c if len(c) <= 30 else c[:27] + "...") for c in header[:12])
        shown += ", ..." if len(header) > 12 else ""
        raise DataError(f"{path}:{lineno}: no column {missing!r} in the header row ({shown}); name the text column "
                        f"with --text-column NAME (a {fmt} file needs a header row naming its columns)")
    return [header.index(name) for name in names]


class _NoSkipBuffer(RecordBuffer):
    """A RecordBuffer whose ``reject`` raises without its advice to skip the record: the lines of a
    file to predict (iter_text_column), where every record gets a prediction, so none is skipped."""

    def reject(self, where: str, reason: str, fix: str, skippable: bool = True) -> None:
        raise DataError(f"{where}: {reason}; {fix}")


def find_task_column(path: Path, header: list[str], used: Sequence[int] = (),
                     name: str | None = TASK_FIELD, roles: dict[str, str] | None = None) -> int | None:
    """The position of the task column ``name`` of a CSV/TSV ``header`` row; None when there is none.
    The default ``task`` is found in any case and gives way to a ``used`` column (read as a text or
    the label); another name (``task_column=``) must be a column of its own (exactly), or it is
    refused (``check_named_task_column``; ``roles``: each used column's role, for its message)."""
    if name is None:
        return None
    if name == TASK_FIELD:
        return next((i for i, c in enumerate(header) if c.strip().lower() == TASK_FIELD and i not in used), None)
    if roles is None:
        roles = {header[i]: "a text or the label" for i in used}
    check_named_task_column(str(path), name, header, roles, _named_task_advice())
    return header.index(name)


def _task_roles(texts: Sequence[str], label: str | None, text_columns, label_column) -> dict[str, str]:
    """The role of each column or field read as a text or the label, for a named task column's
    clash with one: picked automatically or named (text_columns= / label_column=)."""
    def picked(option: str, flag: str) -> str:
        return f" (picked automatically: pass {option}= (CLI: {flag} NAME) for another)"

    roles = {t: "a text" + ("" if text_columns is not None else picked("text_columns", "--text-column"))
             for t in texts}
    if label is not None:
        roles[label] = "the label" + ("" if label_column is not None else picked("label_column", "--label-column"))
    return roles


def _named_task_advice(kind: str = "column") -> str:
    """The advice of a refused ``task_column=`` name (``kind``: a JSON "field" or a "column")."""
    return (f"pass task_column= (CLI: --task-column NAME) naming the {kind} of each record's task, or "
            "task_column=None (CLI: --no-task-column) to read no task")


def _add_row(buffer: RecordBuffer, where: str, row: list[str], columns, text_idx, label_idx, *, delimiter: str,
             label_map, text_transform, raw_labels: Counter, task_idx: int | None = None) -> None:
    """One CSV record into ``buffer``: its text columns joined, its label (mapped), its task (where the
    header has a ``task`` column), or a rejection."""
    if columns is not None and len(_trim(row)) > len(columns):
        buffer.reject(
            where,
            f"row has {len(row)} fields, the header has {len(columns)} ({', '.join(columns)})",
            f"quote the field that holds a {_delimiter_name(delimiter)} or fix the row",
        )
        return
    # No text columns given means "every column but the label": at least two fields.
    need = max([label_idx, *text_idx]) + 1 if text_idx else max(label_idx + 1, 2)
    if len(row) < need:
        buffer.reject(where, f"row has {len(row)} field(s), {need} needed", "complete the row")
        return
    idx = text_idx or [i for i in range(len(row)) if i != label_idx]
    text = " ".join(row[i].strip() for i in idx if row[i].strip())
    if text_transform is not None:
        text = text_transform(text)
    label = row[label_idx].strip()
    if _is_list_literal(label):
        buffer.reject(where, f"the label {label[:60]!r} looks like a list of labels, which a {_fmt_name(delimiter)} "
                      "cell cannot hold", 'multi-label data needs JSON Lines (a "labels" list) or fastText format')
        return
    raw_labels[label] += 1
    if label_map is not None and label:
        if label not in label_map:
            buffer.reject(where, f"label {label!r} is not one of {', '.join(label_map)}", "correct the label")
            return
        label = label_map[label]
    task = NO_TASK if task_idx is None else row[task_idx].strip() if task_idx < len(row) else None
    buffer.add(where, text, label, task=task)


def _is_list_literal(cell: str) -> bool:
    """Whether a label cell holds a list written out: JSON (``["acq", "crude"]``) or Python's repr
    (``['acq', 'crude']``, what pandas' ``to_csv`` writes for a list column). Read as one class
    name, each combination of classes would become a class of its own."""
    if not (cell.startswith("[") and cell.endswith("]")):
        return False
    import ast

    for parse in (json.loads, ast.literal_eval):
        try:
            return isinstance(parse(cell), list)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return False


def _check_delimited_labels(path: Path, buffer: RecordBuffer, before: int, columns, label_idx, first_row) -> None:
    """The label column must hold class names, not text; the advice names the file's columns."""
    choose = "text_columns= and label_column= (CLI: --text-column NAME --label-column NAME)"
    if columns is not None:
        desc = f"{columns[label_idx]!r}"
        advice = f"name the text and class columns with {choose}; the header is: {', '.join(columns)}"
    else:
        desc = f"{label_idx} (0-based; the file was read without a header)"
        advice = (
            "give the 0-based indices of the text and class columns with text_columns= and label_column= "
            "(CLI: --text-column N --label-column N)"
        )
        if first_row is not None:
            shown = ", ".join(c.strip()[:30] for c in first_row[1])
            advice = (
                f"its first row ({shown}) was read as a record: if it is a header, pass header=True (CLI: --header) "
                f"and name the text and class columns with {choose}; if not, {advice}"
            )
    _check_label_column(path, buffer, before, desc, _option_advice(advice))


def _trim(cells: list[str]) -> list[str]:
    """The cells without trailing empty ones (a trailing delimiter is not a field)."""
    n = len(cells)
    while n and not cells[n - 1].strip():
        n -= 1
    return cells[:n]


def _delimiter_name(delimiter: str) -> str:
    return {",": "comma", "\t": "tab", ";": "semicolon", "|": "'|'"}.get(delimiter, repr(delimiter))


def _quote_fix(delimiter: str) -> str:
    d = "\\t" if delimiter == "\t" else delimiter
    return 'fix the quoting there (close the quote; inside a quoted field write a quote mark as "") ' + _option_advice(
        f'or read quote marks as plain text with format="tsv", delimiter="{d}" (CLI: --format tsv --delimiter \'{d}\')',
        "or restore the published file")


def _quote_open_line(lines: list[tuple[int, str]], delimiter: str) -> int | None:
    """The line on which the last quoted field opened before the parse stopped (at the end of
    ``lines``, or at a closing quote followed by text), by csv's own QUOTE_MINIMAL rules."""
    opened, in_quote = None, False
    for lineno, line in lines:
        s = line + "\n"
        field_start = not in_quote
        j = 0
        while j < len(s):
            c = s[j]
            if in_quote:
                if c == '"':
                    if s[j + 1 : j + 2] == '"':
                        j += 2
                        continue
                    in_quote = False
                    if s[j + 1 : j + 2] not in (delimiter, "\n"):
                        return opened  # csv stops here: "',' expected after '\"'"
                    field_start = False
            elif c == '"' and field_start:
                in_quote, opened = True, lineno
            else:
                field_start = c in (delimiter, "\n")
            j += 1
    return opened


def _csv_error(path: Path, err: csv.Error, state: dict, delimiter: str) -> DataError:
    start, end, lines = state["start"], state["end"], state["lines"]
    msg = str(err)
    if "new-line character" in msg:
        return DataError(
            f"{path}:{end}: a carriage return (\\r) inside the line splits a field; convert the file's "
            "line endings to \\n (dos2unix, or mac2unix for old Mac files) or remove the character"
        )
    opened = (_quote_open_line(lines, delimiter) if lines else None) or start
    if "unexpected end of data" in msg:
        return DataError(
            f"{path}:{opened}: a quoted field opens on this line and is never closed: it runs to the end of "
            f"the file (line {end}); {_quote_fix(delimiter)}"
        )
    if "expected after" in msg:
        if opened == end:
            return DataError(
                f"{path}:{end}: a quoted field is closed and followed by more text on this line ({msg}); "
                f"{_quote_fix(delimiter)}"
            )
        return DataError(
            f"{path}:{opened}: a quoted field opens on this line and runs on to line {end}, where its closing "
            f"quote is followed by more text ({msg}); its quote is probably not closed: {_quote_fix(delimiter)}"
        )
    return DataError(f"{path}:{start}: malformed {_fmt_name(delimiter)} row ({msg}); {_quote_fix(delimiter)}")


def _field_open_line(start: int, row: list[str], j: int) -> int:
    """The line on which field ``j`` of a record starting on line ``start`` begins."""
    return start + sum(f.count("\n") for f in row[:j])


def _check_spanning_record(path, start, end, row, columns, label_idx, delimiter) -> None:
    """A record spanning lines through a quoted field: a label holding a line break, or a
    field count other than the header's, means a quote was left open (not skippable: the
    lines it swallowed are records)."""
    multi = next((j for j, f in enumerate(row) if "\n" in f), 0)
    if label_idx < len(row) and "\n" in row[label_idx]:
        raise DataError(
            f"{path}:{_field_open_line(start, row, label_idx)}: a quoted field opens on this line and runs on to "
            f"line {end}, so the record's label holds a line break; its quote is probably not closed: "
            f"{_quote_fix(delimiter)}"
        )
    if columns is not None and len(_trim(row)) != len(_trim(columns)):
        raise DataError(
            f"{path}:{_field_open_line(start, row, multi)}: a quoted field opens on this line and runs on to line "
            f"{end}, and the record it ends has {len(row)} fields where the header has {len(columns)}; its quote "
            f"is probably not closed: {_quote_fix(delimiter)}"
        )


def _check_swallowed_records(path, start, end, row, columns, label_idx, delimiter, labels) -> None:
    """A multi-line field at least half of whose lines (but the last) read as whole records
    with a label seen elsewhere in the file is an unclosed quote that swallowed them."""
    known = {label for label in labels if label}
    width = len(_trim(columns)) if columns is not None else None
    for j, field in enumerate(row):
        pieces = field.split("\n")[:-1]
        if not pieces or j == label_idx:
            continue
        like = []
        for k, piece in enumerate(pieces):
            try:
                cells = next(csv.reader([piece], delimiter=delimiter), [])
            except csv.Error:
                continue
            if (
                len(cells) > label_idx
                and cells[label_idx].strip() in known
                and (width is None or len(_trim(cells)) == width)
            ):
                like.append(k)
        if like and 2 * len(like) >= len(pieces):
            opened = _field_open_line(start, row, j)
            example = pieces[like[0]].strip()
            example = example if len(example) <= 60 else example[:57] + "..."
            raise DataError(
                f"{path}:{opened}: a quoted field opens on this line and runs on to line {end}, taking in "
                f"{len(like)} line(s) that read as records of their own (line {opened + like[0]}: {example!r}); "
                f"its quote is probably not closed: {_quote_fix(delimiter)}"
            )


# Set while a held-out split's file (test.csv, dev.csv of a split folder) is read: its label
# column is not judged by how many distinct values it holds, as a test set may hold one record a
# class; the train file beside it is.
_HELD_OUT_FILE: contextvars.ContextVar[bool] = contextvars.ContextVar("held_out_file", default=False)


def _check_label_column(path, buffer: RecordBuffer, before: int, desc: str, advice: str) -> None:
    """Refuse a label column that is obviously text: nearly every record its own class, or
    "class names" longer than the texts. Such a file trains a model with hundreds of one-record
    classes and 0 test accuracy; it means the columns are swapped or the header was missed."""
    labels = buffer.labels[before:]
    n = len(labels)
    if not n:
        return
    names = [x for label in labels for x in (label if isinstance(label, list) else [label])]
    if not names:
        return
    distinct = len(set(names))
    if _check_numeric_labels(path, names, distinct, desc):
        return
    lengths = sorted(len(x) for x in names)
    words = sorted(len(x.split()) for x in names)
    texts = sorted(len(t) for t in buffer.texts[before:])
    median_len, median_words, median_text = lengths[len(lengths) // 2], words[len(words) // 2], texts[len(texts) // 2]
    many = not _HELD_OUT_FILE.get() and (
        (n >= 50 and distinct >= 0.9 * n) or (n >= 20 and distinct >= 0.5 * n and median_words >= 3))
    long = median_len >= 40 and median_len > 2 * median_text
    if not (many or long):
        return
    why = (
        f"{distinct} distinct values among {n} records"
        if many
        else f"its values are {median_len} characters long (median), the texts {median_text}"
    )
    example = max(names[: 50], key=len)
    example = example if len(example) <= 50 else example[:47] + "..."
    raise DataError(
        f"{path}: the label column {desc} looks like text, not class names: {why} (e.g. {example!r}); {advice}"
    )


def _as_numbers(names: Sequence[str]) -> list[float] | None:
    """Every class name as a finite number, or None when one is not a number."""
    out = []
    for name in names:
        try:
            value = float(name)
        except ValueError:
            return None
        if not math.isfinite(value):
            return None
        out.append(value)
    return out


def _check_numeric_labels(path, names: list[str], distinct: int, desc: str) -> bool:
    """Refuse a numeric label column that is a score to regress on, not class ids; returns
    whether the labels are numbers (then the text-likeness rules do not apply).

    Class ids stay: 20news's or fdu_mtl's 0/1, yelp's 1..5 stars, half-star ratings, a hundred
    integer ids over a few records each, decimal codes such as ICD-9's 401.9 and 428.0. A score
    is refused: fractions between 0 and 1 with at least 20 distinct values that make up a fifth
    of the records or more (probabilities), other fractional values or integers nearly all
    distinct (at least 50 records, 80 % or 90 % of them distinct: a price, a count). Read as
    classes, such a column trained a model with hundreds of one-record classes and 0 accuracy.
    A held-out split's file (one record a class is a fair test set) is judged by train's."""
    values = _as_numbers(names)
    if values is None:
        return False
    if _HELD_OUT_FILE.get():
        return True
    n = len(values)
    fractional = any(v != int(v) for v in values)
    probabilities = fractional and 0.0 <= min(values) and max(values) <= 1.0
    score = ((probabilities and distinct >= 20 and distinct >= 0.2 * n)
             or (n >= 50 and distinct >= (0.8 if fractional else 0.9) * n))
    if not score:
        return True
    low, high = min(values), max(values)
    raise DataError(
        f"{path}: the label column {desc} holds numbers, {distinct} distinct values among {n} records "
        f"(from {low:g} to {high:g}), a score to regress on rather than class names; textcls classifies: "
        + _option_advice("bin the scores into a few classes (e.g. low, mid, high) in a column of their own and "
                         "name it with label_column= (CLI: --label-column NAME)")
    )


_HEADER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_ .\-]{0,39}")


def _first_row_label(first_row, label_idx) -> str:
    row = first_row[1]
    return row[label_idx].strip() if label_idx < len(row) else ""


def _names_like_a_header(first_row, label_idx, raw_labels: Counter) -> bool:
    """Whether the first row reads like unknown column names: short identifier-like cells, and a
    "label" that no other row has while the other labels repeat (``sentence_txt,klass``)."""
    label = _first_row_label(first_row, label_idx)
    n = sum(raw_labels.values())
    if n < 10 or raw_labels[label] != 1:
        return False
    others = len(raw_labels) - 1
    cells = [c.strip() for c in first_row[1]]
    return others <= (n - 1) / 2 and all(_HEADER_NAME.fullmatch(c) and len(c.split()) <= 3 for c in cells)


def _check_first_row_is_no_header(path, first_row, label_idx, raw_labels: Counter) -> None:
    """Columns were given by index and header= was not: the file was read without a header, so a
    header row (pandas' ``to_csv`` writes one by default) would have become a record and its label
    cell a class of one record. Refused, not skipped: the row might be a record, and only the user
    knows. It looks like a header when its label is on no other row and a cell is a usual column
    name (``text``, ``review``, ``label``, ...), or when it reads like unknown column names."""
    lineno, row = first_row
    label = _first_row_label(first_row, label_idx)
    if raw_labels[label] != 1:
        return
    cells = [c.strip() for c in row]
    name = next((c for c in cells if c.lower() in _USUAL_COLUMN_NAMES), None)
    if name is not None:
        why = f"{name!r} is a usual column name and its label {label!r} is on no other row"
    elif _names_like_a_header(first_row, label_idx, raw_labels):
        why = f"its label {label!r} is on no other row, while the other labels repeat"
    else:
        return
    raise DataError(
        f"{path}:{lineno}: the first row ({', '.join(cells)}) looks like a header, not a record: {why}; columns "
        "given by index are read without a header, so pass header=True (CLI: --header) to skip that row, or "
        "header=False (CLI: --no-header) if it is a record"
    )


def _check_first_row_is_record(path, first_row, label_idx, raw_labels: Counter) -> None:
    """No header was recognised, yet the first row looks like one (``_names_like_a_header``):
    column names such as ``sentence_txt,klass`` that are not among the known ones."""
    lineno, row = first_row
    label = _first_row_label(first_row, label_idx)
    cells = [c.strip() for c in row]
    if not _names_like_a_header(first_row, label_idx, raw_labels):
        return
    raise DataError(
        f"{path}:{lineno}: the first row ({', '.join(cells)}) looks like a header whose column names are not known "
        f"ones: its label {label!r} is on no other row; pass header=True (CLI: --header) with text_columns= and "
        "label_column= naming the columns (CLI: --text-column NAME --label-column NAME), or header=False "
        "(CLI: --no-header) if that row is a record"
    )


def _fmt_name(delimiter: str) -> str:
    return "TSV" if delimiter == "\t" else "CSV"


_USUAL_COLUMN_NAMES = frozenset({*TEXT_CANDIDATES, *LABEL_CANDIDATES, "title", "description", "id"})


def _looks_like_header(row: list[str]) -> bool:
    return any(cell.strip().lower() in _USUAL_COLUMN_NAMES for cell in row)


def _columns_advice() -> str:
    return _option_advice(
        "name the text column with text_columns= (CLI: --text-column NAME) and the class column with "
        "label_column= (CLI: --label-column NAME), or pass header=False (CLI: --no-header) if that row is a record"
    )


def _resolve_columns(path, columns, text_columns, label_column) -> tuple[list[int], int]:
    lower = [c.lower() for c in columns]
    named = [c for c in lower if c.strip()]
    twice = next((c for c in named if named.count(c) > 1), None)
    if twice is not None:
        # Which of the two is the data? Reading either would drop the other without a word.
        raise DataError(f"{path}: the header names the column {twice!r} twice; rename or remove one of them")

    def find(spec, role) -> int:
        if isinstance(spec, int):
            if not 0 <= spec < len(columns):
                raise DataError(f"{path}: {role} column index {spec} is out of range; the file has {len(columns)} columns")
            return spec
        if spec in columns:
            return columns.index(spec)
        raise DataError(
            f"{path}: no column {spec!r}; the columns are: {', '.join(columns)}; "
            + _option_advice(f"pass {role}= {_cli_of(role)} with one of them")
        )

    if text_columns is None:
        hit = next((c for c in TEXT_CANDIDATES if c in lower), None)
        if hit is None:
            raise DataError(
                f"{path}: no text column found among: {', '.join(columns)} (the header row); {_columns_advice()}"
            )
        text_idx = [lower.index(hit)]
    else:
        text_idx = [find(c, "text_columns") for c in text_columns]
    if label_column is None:
        hit = next((c for c in LABEL_CANDIDATES if c in lower), None)
        if hit is None:
            raise DataError(
                f"{path}: no label column found among: {', '.join(columns)} (the header row); {_columns_advice()}"
            )
        label_idx = lower.index(hit)
    else:
        label_idx = find(label_column, "label_column")
    return text_idx, label_idx


def _resolve_indices(path, n_fields, text_columns, label_column, lineno=1) -> tuple[list[int], int]:
    label_idx = 0 if label_column is None else label_column
    text_idx = [] if text_columns is None else list(text_columns)
    for i in [label_idx, *text_idx]:
        if not isinstance(i, int) or i < 0:
            raise DataError(f"{path}: column {i!r} must be a 0-based index when the file has no header")
    given = [("label_column", label_column)] + [("text_columns", i) for i in (text_columns or ())]
    for role, i in given:
        if i is not None and i >= n_fields:
            raise DataError(
                f"{path}:{lineno}: {role} index {i} is out of range: the first row has {n_fields} field(s) "
                f"(indices 0-{n_fields - 1}); "
                + _option_advice(f"pass an index below {n_fields}, or check delimiter= (CLI: --delimiter)")
            )
    if n_fields < 2 and text_columns is None:
        raise DataError(
            f"{path}: the first row has only {n_fields} field(s), need a label and a text; "
            + _option_advice("check delimiter= (CLI: --delimiter) or the format")
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
    task_column: str | None = TASK_FIELD,
) -> None:
    """Append the records of a JSON Lines file (optionally gzipped) to ``buffer``; ``task_column``
    names the field of each record's task, read where the first record has it (None: no task)."""
    before, skipped_before = len(buffer), len(buffer.skipped)
    fields: list[str] | None = None
    label_field: str | None = None
    first_record, tasks = "", False  # tasks: the first record names its task, so every record must
    for lineno, line in iter_lines(path, buffer, encoding):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            obj = json.loads(line, object_pairs_hook=json_object_with_unique_keys)
        except json.JSONDecodeError as err:
            buffer.reject(where, f"not valid JSON ({err.msg} at column {err.colno})", "fix the line")
            continue
        except RepeatedJSONKey as err:
            buffer.reject(where, f"the key {err.args[0]!r} appears twice in this object", "keep one of them")
            continue
        if not isinstance(obj, dict):
            buffer.reject(where, f"a JSON {_json_kind(obj)}, not an object", "write one JSON object a line")
            continue
        if fields is None:
            fields, label_field, tasks = _jsonl_fields(path, lineno, list(obj), text_columns, label_column, task_column)
            first_record, buffer.task_field = where, task_column or TASK_FIELD
        if not tasks and task_column in obj and task_column not in (*fields, label_field):
            buffer.reject(where, f"this record has a {task_column!r} field but the first record ({first_record}) has "
                          "none", "give every record its task, or none" + _not_a_task_advice(task_column))
            continue
        present = [f for f in fields if f in obj]
        if not present or label_field not in obj:
            missing = fields[0] if not present else label_field
            buffer.reject(
                where,
                f"no field {missing!r} in this record (its fields: {', '.join(obj) or 'none'})",
                "add the field or remove the record",
            )
            continue
        nested = next((f for f in present if isinstance(obj[f], (dict, list))), None)
        if nested is not None:
            buffer.reject(
                where,
                f"field {nested!r} holds a JSON {_json_kind(obj[nested])}, not text",
                _option_advice("make it a string, or name the text fields with text_columns= (CLI: --text-column)",
                              "make it a string, or restore the published file"),
            )
            continue
        label = obj[label_field]
        if isinstance(label, dict) or isinstance(label, list) and any(isinstance(x, (dict, list)) for x in label):
            buffer.reject(
                where,
                f"field {label_field!r} holds a JSON {_json_kind(label)} that is not a class name or a list of class names",
                "write the class name (or a list of names) there",
            )
            continue
        parts = [obj[f] for f in present]
        text = text_join.join(str(p) for p in parts if p is not None and str(p).strip())
        buffer.add(where, text, label, key=obj.get(buffer.published_empty_key) if buffer.published_empty_key else None,
                   task=obj.get(task_column) if tasks else NO_TASK)
    _finish(path, buffer, before, skipped_before)
    if label_field is not None:
        _check_label_column(
            path, buffer, before, f"{label_field!r}",
            _option_advice("name the class field with label_column= (CLI: --label-column NAME) and the text field "
                          "with text_columns= (CLI: --text-column NAME)"),
        )


def _jsonl_fields(path, lineno, keys, text_columns, label_column, task_column) -> tuple[list[str], str, bool]:
    """From the first record's ``keys``: the text fields, the label field, and whether the records name
    their task (a ``task_column`` field that is neither). A ``task_column`` named apart from the
    default ``task`` must be a field of that record, and neither the text nor the label."""
    fields = _pick_fields(path, lineno, keys, text_columns, TEXT_CANDIDATES, "text_columns")
    label_field = _pick_fields(
        path, lineno, keys, None if label_column is None else [label_column], LABEL_CANDIDATES, "label_column"
    )[0]
    if task_column not in (None, TASK_FIELD):
        check_named_task_column(f"{path}:{lineno}", task_column, keys,
                                _task_roles(fields, label_field, text_columns, label_column),
                                _named_task_advice("field"), kind="field", first_record=True)
    return fields, label_field, task_column in keys and task_column not in (*fields, label_field)


def _json_kind(value: Any) -> str:
    return "object" if isinstance(value, dict) else "array" if isinstance(value, list) else type(value).__name__


def _pick_fields(path, lineno, keys, wanted, candidates, role) -> list[str]:
    if wanted is not None:
        for w in wanted:
            if isinstance(w, int):
                raise DataError(f"{path}: {role} must name JSON fields, not index {w}; the fields are: {', '.join(keys)}")
            if w not in keys:
                raise DataError(f"{path}:{lineno}: no field {w!r}; the fields are: {', '.join(keys)}; "
                                + _option_advice(f"pass {role}= {_cli_of(role)} with one of them"))
        return list(wanted)
    hit = next((c for c in candidates if c in keys), None)
    if hit is None:
        raise DataError(f"{path}:{lineno}: no {role.split('_')[0]} field among: {', '.join(keys)}; "
                        + _option_advice(f"pass {role}="))
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
        buffer.add(where, stripped[pos:], labels if len(labels) > 1 else labels[0], any_label_kind=True)
    _finish(path, buffer, before, skipped_before)


# ---------------------------------------------------------------------------------------
# One file per class / one folder per class


def class_names_for_files(paths: Sequence[Path]) -> list[str]:
    """The class of each file: its suffix when all suffixes differ, else its stem."""
    bare = [p.with_suffix("") if p.suffix == ".gz" else p for p in paths]
    suffixes = [p.suffix.lstrip(".") for p in bare]
    if len(paths) > 1 and all(suffixes) and len(set(suffixes)) == len(suffixes):
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
    check_encoding(encoding)
    for class_dir in _visible(root):
        if not class_dir.is_dir():
            raise DataError(f"{class_dir}: a file among class folders; put each document in {root}/<class>/")
        entries = _visible(class_dir)
        sub = next((p for p in entries if p.is_dir()), None)
        if sub is not None:
            # Documents in it would be left out silently: a class folder holds files only.
            raise DataError(
                f"{sub}: a folder inside the class folder {class_dir.name}; move its documents up into "
                f"{class_dir} or remove it"
            )
        docs = [p for p in entries if p.is_file()]
        if not docs:
            raise DataError(f"{class_dir}: class folder holds no documents; add files or remove the folder")
        for doc in docs:
            try:
                raw = doc.read_bytes()
            except OSError as err:
                raise DataError(_unreadable(doc, err)) from None
            text = _decode_document(doc, raw, buffer, encoding)
            if text is not None:
                buffer.add(str(doc), text, class_dir.name)


def _decode_document(doc: Path, raw: bytes, buffer: RecordBuffer, encoding: str) -> str | None:
    """A whole document's text (byte-order mark followed and dropped), or None when it
    was rejected as binary or undecodable and skipped."""
    enc = _effective_encoding(encoding, raw[:4])
    if _ascii_compatible(enc):
        try:
            _sniff_binary(doc, raw[:_HEAD], enc)
        except DataError as err:
            reason, _, fix = str(err).partition(": ")[2].partition("; ")
            buffer.reject(str(doc), reason, fix)
            return None
    try:
        text = raw.decode(enc)
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        buffer.reject(f"{doc}:{line}", _describe_decode_error(err, enc), decode_hint(enc, raw))
        return None
    text = text[1:] if text.startswith("\ufeff") else text
    if "\x00" in text:
        at = text.index("\x00")
        line = text.count("\n", 0, at) + 1
        raw_head = raw[:_HEAD] if _ascii_compatible(enc) else None
        _reject_nul(f"{doc}:{line}", at - text.rfind("\n", 0, at), buffer, raw_head)
        return None
    return text


def _visible(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if not p.name.startswith("."))
    except OSError as err:
        raise DataError(_unreadable(folder, err)) from None


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
    task_column: str | None = None,
) -> tuple[list[str] | None, int]:
    """Append the records of a ``datasets.Dataset`` to ``buffer``.

    ``ClassLabel`` integers become class names: ``label_names[i]`` when given (a catalogue
    fixes its own names), else the feature's names. Negative class ids (the hub's "no label",
    e.g. an unlabelled test split) are missing labels; integers of a column without class names
    are classes named by their digits, -1 included. ``keep(label)`` may rewrite a label or
    return None to leave a record out of the dataset by definition (not a bad record).
    Returns the ``ClassLabel`` names (or None) and the number of records left out by ``keep``.
    ``task_column``: the column of each record's task (None: no task); the default ``task`` is read
    where the table has it and it is not a text or the label column, another name must be a column
    of its own.
    """
    columns = list(table.column_names)
    text_cols = [_table_column(where, columns, c, "text_columns") for c in (text_columns or [])]
    if not text_cols:
        hit = next((c for c in TEXT_CANDIDATES if c in columns), None)
        if hit is None:
            raise DataError(f"{where}: no text column among: {', '.join(columns)}; pass text_columns= (CLI: --text-column NAME)")
        text_cols = [hit]
    if label_column is None:
        label_col = next((c for c in LABEL_CANDIDATES if c in columns), None)
        if label_col is None:
            raise DataError(f"{where}: no label column among: {', '.join(columns)}; pass label_column= (CLI: --label-column NAME)")
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
        # Only class ids have a "no label" value: a plain integer column's -1 is a class, named by
        # its digits as CSV and JSON Lines read it (the -1/0/1 sentiment coding keeps its class).
        if names is None:
            return str(value)
        if value < 0:
            return None
        return names[value] if value < len(names) else f"<unknown class id {value}>"

    task_col = _table_task_column(where, columns, task_column, (*text_cols, label_col))
    buffer.task_field = task_column or TASK_FIELD
    task_name = partial(_table_task_name, table.features[task_col] if task_col else None)
    left_out = 0
    i = 0
    wanted = [*text_cols, label_col, *([task_col] if task_col else [])]
    for batch in table.select_columns(list(dict.fromkeys(wanted))).iter(batch_size=2048):
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
            buffer.add(f"{where}: record {i}", text, label, task=task_name(batch[task_col][j]) if task_col else NO_TASK)
            i += 1
    return feature_names, left_out


def _table_task_column(where: str, columns: list[str], task_column: str | None, used: Sequence[str]) -> str | None:
    """The column of a table's tasks (read_table's ``task_column``), or None."""
    if task_column is None or task_column == TASK_FIELD:
        return task_column if task_column in columns and task_column not in used else None
    check_named_task_column(where, task_column, columns, {c: "a text or the label" for c in used},
                            _named_task_advice())
    return task_column


def _table_task_name(feature, value):
    """A table's task cell as a task name. A hub dataset often codes its tasks as a ClassLabel:
    the task is the id's name (a negative id, the hub's "none", is a missing task); other integer
    tasks are named by their digits, as integer labels are."""
    if not is_integer(value):
        return value
    if isinstance(feature, datasets.ClassLabel):
        return None if value < 0 else feature.int2str(value) if value < feature.num_classes else str(value)
    return str(value)


def _table_column(where, columns, spec, role) -> str:
    if isinstance(spec, int):
        if 0 <= spec < len(columns):
            return columns[spec]
        raise DataError(f"{where}: {role} index {spec} is out of range; the columns are: {', '.join(columns)}")
    if spec not in columns:
        raise DataError(f"{where}: no column {spec!r}; the columns are: {', '.join(columns)}; pass {role}= {_cli_of(role)} with one of them")
    return spec


def read_parquet(path: Path, buffer: RecordBuffer, options: ReadOptions) -> list[str] | None:
    _require_file(path)
    table = _open_parquet(path)
    before, skipped_before = len(buffer), len(buffer.skipped)
    names, _ = read_table(
        table, buffer, where=str(path), text_columns=options.text_columns, label_column=options.label_column,
        task_column=options.task_column,
    )
    _finish(path, buffer, before, skipped_before)
    label = options.label_column
    if label is None:
        label = next((c for c in LABEL_CANDIDATES if c in table.column_names), None)
    elif isinstance(label, int):
        label = table.column_names[label]
    _check_label_column(
        path, buffer, before, f"{label!r}",
        "name the class column with label_column= (CLI: --label-column NAME) and the text column with "
        "text_columns= (CLI: --text-column NAME)",
    )
    return names


def _open_parquet(path: Path) -> datasets.Dataset:
    """The parquet file as a Dataset; a file that is not parquet, or is cut short, is a
    DataError naming it (pyarrow's own errors are several lines long)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
            size = fh.seek(0, 2)
            fh.seek(max(size - 4, 4))
            tail = fh.read(4)
    except OSError as err:
        raise DataError(_unreadable(path, err)) from None
    if head != b"PAR1":
        raise DataError(
            f"{path}: is not a parquet file (it does not start with PAR1); pass the right format= (CLI: --format) "
            "or give the file its real extension"
        )
    if tail != b"PAR1":
        raise DataError(f"{path}: the parquet file is truncated (it does not end with PAR1); write or copy it again")
    import pyarrow.parquet as pq

    try:
        # Footer and schema first, with pyarrow itself: datasets logs its own multi-line
        # report of a bad file to stderr before raising.
        pq.ParquetFile(str(path)).schema_arrow
        return datasets.Dataset.from_parquet(str(path))
    except Exception as err:  # pyarrow/datasets errors on a damaged file; any of them is "corrupt"
        reason = " ".join(str(err).split())[:200] or type(err).__name__
        raise DataError(f"{path}: the parquet file is corrupt ({type(err).__name__}: {reason}); write or copy it again") from None


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
    task_names = _task_names(buffers)
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
    features = {"text": datasets.Value("string"), column: label_feature}
    if task_names:
        features["task"] = datasets.Value("string")
    splits = datasets.DatasetDict()
    for split in sorted(buffers, key=lambda s: SPLIT_ORDER.index(s) if s in SPLIT_ORDER else len(SPLIT_ORDER)):
        b = buffers[split]
        values = {"text": b.texts, column: b.labels, **({"task": b.tasks} if task_names else {})}
        splits[split] = attach_places(
            datasets.Dataset.from_dict(values, features=datasets.Features(features)), b.places, b.on_bad_record)
    all_skipped = list(skipped) + [s for b in buffers.values() for s in b.skipped]
    return TextDataset(
        name=name,
        splits=splits,
        label_names=order,
        multi_label=multi_label,
        split_notes=dict(split_notes or {}),
        skipped=all_skipped,
        task_names=task_names,
    )


def _task_names(buffers: dict[str, RecordBuffer]) -> list[str] | None:
    """The tasks of the train split (natural order) where the records name theirs (multi-task data),
    else None. Every split must name them where one does; a dev or test record of a task train
    lacks is a bad record (no head was trained for it), left out of its buffer when skipped."""
    with_tasks = [split for split, b in buffers.items() if b.tasks]
    if not with_tasks:
        return None
    for split, b in buffers.items():
        if len(b.tasks) != len(b.texts):
            where = b.places[len(b.tasks)] if b.places is not None and len(b.places) > len(b.tasks) else split
            field = buffers[with_tasks[0]].task_field
            raise DataError(f"{where}: the {split} records have no {field!r}, but the {with_tasks[0]} records "
                            f"name their task; give every record its task, or none{_not_a_task_advice(field)}")
    train = buffers.get("train")
    names = sorted(set(train.tasks if train is not None else (t for b in buffers.values() for t in b.tasks)),
                   key=natural_key)
    known = set(names)
    for split, b in buffers.items():
        keep = [i for i, task in enumerate(b.tasks) if task in known]
        if len(keep) == len(b.tasks):
            continue
        for i in sorted(set(range(len(b.tasks))) - set(keep)):
            b.reject(b.places[i] if b.places is not None else f"{split} record {i}",
                     f"task {b.tasks[i]!r} is not one of the train split's tasks ({', '.join(names)})",
                     "train has no head for it: add its records to train, or remove the record"
                     + _not_a_task_advice(b.task_field))
        b.keep_rows(keep)
    return names


# ---------------------------------------------------------------------------------------
# Paths -> TextDataset


_FORMAT_OF_EXTENSION = {
    "csv": "csv", "tsv": "tsv", "tab": "tsv", "jsonl": "jsonl", "ndjson": "jsonl", "parquet": "parquet",
    "ft": "fasttext", "fasttext": "fasttext",
}  # fmt: skip


def _has_record_format(path: Path) -> bool:
    """Whether the name says the file holds labelled records (csv, jsonl, ...), not one class's lines."""
    name = path.name.lower().removesuffix(".gz")
    return "." in name and name.rsplit(".", 1)[-1] in _FORMAT_OF_EXTENSION


def infer_format(path: Path) -> str:
    """The format of a file from its extension (``.gz`` looks at the inner extension)."""
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    ext = name.rsplit(".", 1)[-1] if "." in name else ""
    if ext in _FORMAT_OF_EXTENSION:
        return _FORMAT_OF_EXTENSION[ext]
    if ext in ("txt", "text", "") and _first_line_is_fasttext(path):
        return "fasttext"
    raise DataError(
        f"{path}: cannot tell the format from the name; pass format= one of {', '.join(FORMATS[:5])} (CLI: --format)"
    )


def _first_line_is_fasttext(path: Path) -> bool:
    _require_file(path)
    with open_binary(path) as fh:
        head = _peek(path, fh)
    encoding = _effective_encoding("utf-8", head)
    try:
        text = codecs.getincrementaldecoder(encoding)("ignore").decode(head)
    except UnicodeError:
        return False
    return text.lstrip("\ufeff \t\r\n").startswith("__label__")


# The reader options each format reads; another one set on its file would be ignored.
# Parquet stores its strings as UTF-8 itself: an encoding would be ignored, so it is refused.
_OPTIONS_OF_FORMAT = {
    "csv": ("delimiter", "header", "text_columns", "label_column", "task_column", "encoding"),
    "tsv": ("delimiter", "header", "text_columns", "label_column", "task_column", "encoding"),
    "jsonl": ("text_columns", "label_column", "task_column", "encoding"),
    "parquet": ("text_columns", "label_column", "task_column"),
    "fasttext": ("encoding",),
    "class-files": ("encoding",),
    "class-folders": ("encoding",),
}
_CLI_FLAG = {"delimiter": "--delimiter", "header": "--header/--no-header", "text_columns": "--text-column",
             "label_column": "--label-column", "task_column": "--task-column", "encoding": "--encoding"}


def option_given(options: ReadOptions, name: str) -> bool:
    """Whether the reader option ``name`` is set: not None, or for ``task_column`` not its default
    ``task`` (None, reading no task, is set too)."""
    value = getattr(options, name)
    return value != TASK_FIELD if name == "task_column" else value is not None


def _cli_of(role: str) -> str:
    """"(CLI: --label-column)": the command-line option of a reader keyword, for advice that names both."""
    return f"(CLI: {_CLI_FLAG[role]})" if role in _CLI_FLAG else ""


def _refuse_options_of_other_formats(path, fmt: str, options: ReadOptions, what: str | None = None) -> None:
    """A column, delimiter, header or task option the ``fmt`` reader does not read is refused, never
    ignored: the user meant something by it. ``what``: how the message names the source (default
    "a <fmt> file")."""
    for name, flag in _CLI_FLAG.items():
        # task_column=None on a format without tasks asks for what the reader does anyway.
        if options.task_column is None and name == "task_column":
            continue
        if option_given(options, name) and name not in _OPTIONS_OF_FORMAT.get(fmt, ()):
            # Not worded "parameter 'x'": the CLI adds the option's name after that phrase, which
            # named it twice ("parameter 'delimiter' (--delimiter) (CLI: --delimiter)").
            raise ConfigError(f"{path}: the option {name}= (CLI: {flag}) does not apply to "
                              f"{what or f'a {fmt} file'}; leave it out")


_LAYOUT_NAMES = {"class-folders": "class folders (one folder of documents per class)",
                 "class-files": "class files (one file of documents a line per class)"}


def _refuse_options_of_layout(path, layout: str, options: ReadOptions) -> None:
    """A source read as class folders or class files: a ``format`` naming another layout, or a
    column option (these layouts have no columns), is refused rather than ignored."""
    if options.format not in (None, layout):
        other = options.format
        instead = "" if other in _LAYOUT_NAMES else f", or pass one {other} file"
        raise ConfigError(f"{path}: read as {_LAYOUT_NAMES[layout]}, not as {_LAYOUT_NAMES.get(other, other)}; leave "
                          f"out format= (CLI: --format) or pass format={layout!r}{instead}")
    _refuse_options_of_other_formats(path, layout, options, _LAYOUT_NAMES[layout])


def read_file(path: Path, buffer: RecordBuffer, options: ReadOptions, fmt: str | None = None) -> list[str] | None:
    """Append the records of one file to ``buffer``; returns ClassLabel names for parquet."""
    fmt = fmt or options.format or infer_format(path)
    encoding = options.encoding or "utf-8"
    _refuse_options_of_other_formats(path, fmt, options)
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
            quoting=csv.QUOTE_NONE if fmt == "tsv" else None,
            task_column=options.task_column,
        )
    elif fmt == "jsonl":
        read_jsonl(path, buffer, text_columns=options.text_columns, label_column=options.label_column, encoding=encoding,
                   task_column=options.task_column)
    elif fmt == "fasttext":
        read_fasttext(path, buffer, encoding=encoding)
    elif fmt == "parquet":
        return read_parquet(path, buffer, options)
    elif fmt == "class-files":
        read_class_files([path], buffer, encoding=encoding)
    else:
        raise DataError(f"{path}: format {fmt!r} needs a folder, not a file; pass the folder")
    return None


def _kind(path: Path) -> str | None:
    """'file', 'dir' or None; a path that cannot even be looked at is a DataError."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return None
    except OSError as err:
        raise DataError(_unreadable(path, err)) from None
    return "dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else None


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
        _refuse_options_of_layout(", ".join(map(str, paths)), "class-files", options)
        buffer = RecordBuffer(options.on_bad_record)
        read_class_files(paths, buffer, encoding=options.encoding or "utf-8")
        return build_text_dataset(name or ",".join(map(str, paths)), {"train": buffer}, split_notes={"train": "all records of the files"})
    path = Path(source)
    name = name or str(source)
    kind = _kind(path)
    if kind == "file":
        buffer = RecordBuffer(options.on_bad_record)
        class_names = read_file(path, buffer, options)
        return build_text_dataset(name, {"train": buffer}, label_order=class_names, split_notes={"train": f"all records of {path.name}"})
    if kind != "dir":
        raise DataError(f"{path}: no such file or folder; check the path")
    entries = _visible(path)
    if not entries:
        raise DataError(f"{path}: empty folder; it holds no records")
    split_files = {p: _split_of(p) for p in entries}
    if any(split_files.values()):
        return _read_split_folder(path, entries, split_files, options, name)
    if options.format == "class-folders" or all(p.is_dir() for p in entries):
        _refuse_options_of_layout(path, "class-folders", options)
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
        records = [p.name for p in entries if _has_record_format(p)]
        if records and options.format is None:
            # Read as class files, every line of part1.csv would be a document of class "part1".
            raise DataError(
                f"{path}: holds {', '.join(records[:3])}, files of labelled records, but a folder of files "
                "reads as one class a file; name them train/dev/test.<ext> for splits or pass one file "
                "(or --format class-files if each file's lines are one class's documents)"
            )
        _refuse_options_of_other_formats(path, "class-files", options, _LAYOUT_NAMES["class-files"])
        read_class_files(entries, buffer, encoding=options.encoding or "utf-8")
        return build_text_dataset(name, {"train": buffer}, split_notes={"train": "all lines of the class files"})
    raise DataError(
        f"{path}: mixes files and folders; use class folders only, class files only, or train/dev/test files"
    )


def _holds_records(path: Path) -> bool:
    """Whether a file's name (or, for a ``.txt`` or extensionless file, its first line: fastText)
    says it holds labelled records, as ``infer_format`` would read them."""
    if not path.is_file():
        return False
    if _has_record_format(path):
        return True
    name = path.name.lower().removesuffix(".gz")
    ext = name.rsplit(".", 1)[-1] if "." in name else ""
    if ext not in ("txt", "text", ""):
        return False
    try:
        return _first_line_is_fasttext(path)
    except DataError:  # unreadable: no telling, and reading the split files does not need it
        return False


def _refuse_files_of_no_split(path: Path, split_files: dict[Path, str | None]) -> None:
    """A file of records beside train.* whose name is no split's (``testing.csv``, ``eval.jsonl``,
    ``train_extra.csv``) would be left out, and a user's own test set replaced by one carved from
    train, without a word: refused. Other files (``classes.txt``, a README) are not records and
    stay ignored, as do sub-folders not named after a split."""
    stray = [p.name for p, split in split_files.items() if split is None and _holds_records(p)]
    if not stray:
        return
    shown = ", ".join(stray[:3]) + (f" and {len(stray) - 3} more" if len(stray) > 3 else "")
    accepted = ", ".join(f"{alias}.*" for alias in SPLIT_ALIASES)
    one = len(stray) == 1
    raise DataError(
        f"{path}: {shown} {'holds' if one else 'hold'} records, but {'its name is' if one else 'their names are'} "
        f"no split's, so {'it' if one else 'they'} would be left out; a split folder reads only {accepted} (the "
        f"name up to its first dot): rename {'it' if one else 'each'} after its split, merge "
        f"{'it' if one else 'them'} into one of those, or move {'it' if one else 'them'} out of the folder"
    )


def _read_split_folder(path, entries, split_files, options, name) -> TextDataset:
    _refuse_files_of_no_split(path, split_files)
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
            held_out = _HELD_OUT_FILE.set(split != "train")
            try:
                class_names = read_file(entry, buffers[split], options) or class_names
            finally:
                _HELD_OUT_FILE.reset(held_out)
    if "train" not in buffers:
        raise DataError(f"{path}: has {', '.join(buffers)} but no train split; add a train.* file")
    notes = {split: f"official ({path.name}/{split})" for split in buffers}
    return build_text_dataset(name, buffers, label_order=class_names, split_notes=notes)
