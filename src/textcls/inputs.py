"""What a user passes to a trained model, checked once: lists of texts and their tasks.

The ``Classifier`` (``api.py``) and the ONNX predictor (``onnx_predictor.py``, which must not
import torch) apply the same rules and give the same one-line errors: one string is not a
list of texts (as in scikit-learn's vectorizers), every text is a non-blank ``str``, and a
model with one head per task needs the task of every text. A ``DataError`` about one text or
task carries its position (``err.index``). A message names the text by its number (``first``:
the number of the first text), or, with ``first`` None, not at all: the caller puts the text's
own place before it (``textcls predict --input``'s ``f.txt:3:``, one text a line).

A file of texts to predict (``textcls predict --input``) is checked here too, before it is read:
its format named by its suffix (``format_of_name``), and a parquet file, an archive, a
compressed file or a PDF refused by its name or its first bytes (``refuse_unread_content``)
rather than read as lines of text. Reading a CSV/TSV file's texts is ``data/readers.py``'s
``iter_text_column``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from .errors import ConfigError, DataError, ModelError, UnknownTaskError

__all__ = ["short", "as_list", "check_texts", "task_indices", "check_finite_probabilities", "PREDICT_FORMATS",
           "READ_ADVICE", "check_input_file", "format_of_name", "file_head", "refuse_unread_content"]

PREDICT_FORMATS = ("text", "jsonl", "csv", "tsv")  # what `textcls predict --input` reads
_FORMAT_OF_SUFFIX = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".tsv": "tsv", ".tab": "tsv"}
# What a file's name says it is, where that is no format predict reads: refused, never read as text lines.
_UNREAD_SUFFIXES = {
    ".parquet": "a parquet file", ".pq": "a parquet file", ".arrow": "an Arrow file", ".feather": "a Feather file",
    ".json": "a JSON document (not JSON Lines)", ".xlsx": "an Excel workbook", ".xls": "an Excel workbook",
    ".ods": "a spreadsheet", ".pkl": "a pickle", ".pickle": "a pickle", ".npy": "a NumPy array",
    ".npz": "a NumPy archive", ".zip": "a zip archive", ".gz": "a gzip-compressed file",
    ".bz2": "a bzip2-compressed file", ".xz": "an xz-compressed file", ".zst": "a zstd-compressed file",
    ".7z": "a 7-zip archive", ".tar": "a tar archive", ".pdf": "a PDF", ".docx": "a Word document",
}  # fmt: skip
_UNREAD_MAGIC = ((b"PAR1", "a parquet file"), (b"PK\x03\x04", "a zip archive (or an Excel workbook)"),
                 (b"\x1f\x8b", "a gzip-compressed file"), (b"BZh", "a bzip2-compressed file"),
                 (b"\xfd7zXZ\x00", "an xz-compressed file"), (b"%PDF-", "a PDF"))
READ_ADVICE = ("textcls predict reads plain text (one text a line), JSON Lines, CSV or TSV (--format text, jsonl, "
               "csv, tsv): convert it to one of them")


def short(value, limit: int = 40) -> str:
    """``repr(value)``, cut to ``limit`` characters for a one-line message."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def as_list(values, call: str, param: str, what: str) -> list:
    """``values`` as a list; one string (which Python would iterate letter by letter) or a
    non-iterable is a DataError, as scikit-learn's "Iterable over raw text documents expected"."""
    if isinstance(values, np.ndarray) and values.ndim == 0:
        values = values.item()
    if isinstance(values, (str, bytes)):
        raise DataError(f"{call}: {param} is one string ({short(values)}), not a list of {what}; "
                        f"pass a list with one entry per text, e.g. [{what[:-1]}]")
    if values is None or isinstance(values, dict) or not hasattr(values, "__iter__"):
        raise DataError(f"{call}: {param} is {type(values).__name__}, not a list of {what}; "
                        f"pass a list with one entry per text")
    if isinstance(values, (set, frozenset)):
        # A set has no order: texts and labels would be paired by chance, and outputs not line up.
        raise DataError(f"{call}: {param} is a {type(values).__name__}, which has no order; pass a list")
    if type(values).__name__ == "DataFrame" or getattr(values, "ndim", 1) > 1:
        # Iterating a DataFrame gives its column names, not its rows.
        raise DataError(f"{call}: {param} is a table ({type(values).__name__}); pass one column of it, "
                        f"e.g. df['text'], or a list with one entry per text")
    return list(values)


def _text_name(i: int, first: int | None) -> str:
    return "the text" if first is None else f"text {first + i}"


def check_texts(texts: list, where: str | None = None, first: int | None = 0) -> list:
    """``texts`` unchanged when every one is a non-blank string; else a DataError naming the text
    by its number counted from ``first`` (0: the list index; 1 where the outputs count from 1,
    as ``textcls explain``'s files do; None: no number) and carrying its 0-based ``index``."""
    prefix = f"{where}: " if where else ""
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            hint = " (decode bytes first)" if isinstance(text, bytes) else ""
            raise DataError(f"{prefix}{_text_name(i, first)} is {type(text).__name__}, not a string; "
                            f"pass every text as a str{hint}", index=i)
        if not text or text.isspace():
            raise DataError(f"{prefix}{_text_name(i, first)} is {'empty' if not text else 'only whitespace'}; "
                            "a model cannot classify it, drop it or give it content", index=i)
    return texts


def task_indices(tasks: Sequence[str] | None, n: int, task_names: Sequence[str] | None,
                 model: str, first: int | None = 0) -> list[int] | None:
    """The index in ``task_names`` of every one of the ``n`` texts' ``tasks``; None for a model
    without per-task heads (``task_names`` empty), which takes no tasks. ``first``: the number a
    message gives the first text, as in ``check_texts``."""
    if not task_names:
        if tasks is not None:
            raise ConfigError(f"model '{model}' was not trained with per-task heads; give no tasks (CLI: drop --task)")
        return None
    if tasks is None:
        raise ConfigError(f"model '{model}' has one head per task ({', '.join(task_names)}); "
                          "pass tasks= with the task of every text")
    if isinstance(tasks, (str, bytes)):
        raise DataError(f"parameter 'tasks' is one string ({short(tasks)}), not a list; "
                        "pass one task name per text, e.g. tasks=[task] * len(X)")
    tasks = list(tasks)
    if len(tasks) != n:
        raise DataError(f"got {len(tasks)} tasks for {n} texts; pass one task per text")
    index = {name: i for i, name in enumerate(task_names)}
    for row, name in enumerate(tasks):
        if name not in index:
            raise UnknownTaskError(f"{_text_name(row, first)} has task {name!r}, which the model was not trained on "
                            f"(tasks: {', '.join(task_names)})", index=row)
    return [index[name] for name in tasks]


def check_finite_probabilities(probs: np.ndarray, where: str | None, advice: str,
                               first: int | None = 0) -> np.ndarray:
    """``probs`` unchanged, or a ModelError naming the first text whose probabilities hold NaN or
    Inf (broken weights: nothing downstream should rank or threshold them). ``advice``: what
    the user of that runtime should do; ``first``: the number a message gives the first text."""
    finite = np.isfinite(probs).all(axis=1)
    if not finite.all():
        row = int(np.flatnonzero(~finite)[0])
        raise ModelError(f"{where + ': ' if where else ''}the model produced NaN or Inf probabilities for "
                         f"{_text_name(row, first)}; its weights are broken {advice}", index=row)
    return probs


def check_input_file(path: Path) -> None:
    """``path`` is a file (not a folder, not missing): a DataError naming it otherwise."""
    if path.is_dir():
        raise DataError(f"{path}: is a folder; pass a file of texts (one text per line, JSON Lines, CSV or TSV)")
    if not path.is_file():
        raise DataError(f"{path}: no such file; pass a file of texts (one text per line, JSON Lines, CSV or TSV)")


def format_of_name(path: Path) -> str:
    """The format (one of PREDICT_FORMATS) a file's suffix names (``.csv.gz`` is a CSV file: the CSV
    reader decompresses it); a suffix of a format predict does not read is refused; any other
    suffix is one text a line."""
    suffixes = [s.lower() for s in path.suffixes]
    inner = suffixes[-2] if len(suffixes) >= 2 and suffixes[-1] == ".gz" else None
    if inner in (".csv", ".tsv", ".tab"):
        return _FORMAT_OF_SUFFIX[inner]
    suffix = suffixes[-1] if suffixes else ""
    if suffix in _UNREAD_SUFFIXES:
        raise DataError(f"{path}: is {_UNREAD_SUFFIXES[suffix]} by its name; {READ_ADVICE} (or pass --format if "
                        "it is one of them in spite of its name)")
    return _FORMAT_OF_SUFFIX.get(suffix, "text")


def file_head(path: Path, size: int = 8) -> bytes:
    """The first ``size`` bytes of ``path``, for ``refuse_unread_content`` (an OSError as raised)."""
    with open(path, "rb") as fh:
        return fh.read(size)


def refuse_unread_content(where, head: bytes, fmt: str) -> None:
    """A parquet, zip or compressed file (by its first bytes ``head``), whatever its name or --format
    says: read as lines of text it would be classified as garbage, or refused at some line as not
    UTF-8. ``where``: the file (or stdin) the message names."""
    kind = next((kind for magic, kind in _UNREAD_MAGIC if head.startswith(magic)), None)
    if kind == "a gzip-compressed file" and fmt in ("csv", "tsv"):
        return  # the CSV reader decompresses it
    if kind is not None:
        raise DataError(f"{where}: is {kind}, not text; {READ_ADVICE}")


def check_named_task_column(where: str, name: str, names: Sequence[str], roles: dict[str, str], advice: str,
                            kind: str = "column", first_record: bool = False) -> None:
    """The one check of a task column named apart from the default ``task`` (``task_column=``,
    ``--task-column``), for every reader (CSV/TSV header, first JSON record, table) and predict's
    JSON Lines input: it is one of ``names`` (matched exactly; a match in another case is
    suggested), and none read in another role (``roles``: name -> "a text" / "the label ...").
    ``kind``: "column" or "field"; ``first_record``: ``names`` are the fields of the first JSON
    record at ``where``, which decides the file's fields; ``advice`` ends every refusal."""
    if name not in names:
        near = next((n for n in names if n.lower() == name.lower()), None)
        hint = f" (did you mean {near!r}? a named {kind} is matched exactly)" if near is not None else ""
        lead = (f"the first record ({where}) has no {kind} {name!r}{hint}, and it decides the file's fields; its "
                if first_record else f"{where}: no {kind} {name!r}{hint}; the ")
        raise DataError(f"{lead}{kind}s are: {', '.join(names)}; {advice}")
    if name in roles:
        raise DataError(f"{where}: {kind} {name!r} is read as {roles[name]}, so it cannot be the task {kind} too; "
                        f"{advice}")
