"""``load_dataset``: the one entry point from a source to records.

A source is a catalogue name (``catalog.py``), a local file or folder (or a list of
per-class files, ``readers.py``), or ``hf:<hub id>[:<config>]`` (``hub.py``). A catalogue
name resolves to, in order:

1. a local copy under the data directory (``data_dir=`` > ``$TEXTCLS_DATA_DIR`` >
   ``~/.cache/textcls/datasets``), read by its loader (``loaders.py``);
2. the Hugging Face hub through ``datasets.load_dataset(<hub id>)`` (or the copy under
   ``$TEXTCLS_HUB_DIR``).

Then the splits: a seeded stratified test split where the source has none, and an optional
seeded stratified subsample of each split (``splits.py``).
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Sequence

from ..errors import ConfigError, DataError, close_names
from ..validate import MAX_SEED, check_int, range_check
from . import readers
from .catalog import CATALOG, find_entry, local_root
from .hub import HUB_DIR_ENV, load_hub, parse_hf
from .loaders import DATA_DIR_ENV, DEFAULT_DATA_DIR, CatalogEntry, refuse_a_file_as_data_dir
from .loaders import data_dir as _data_dir  # load_dataset's keyword argument shadows the name
from .readers import ReadOptions
from .records import TextDataset
from .splits import DEFAULT_TEST_FRACTION, MAX_HELD_OUT, carve_split, check_max_per_split, subsample

# The reader options a non-file source may refuse; each applies to local files, but an encoding
# to every text file (a catalogue's too), never to the hub's parquet/Arrow strings.
_SOURCE_OPTIONS = ("text_columns", "label_column", "task_column", "header", "delimiter", "format", "encoding")
_APPLIES_TO = {"encoding": "text files"}
_WHY_NOT = {"encoding": " (its data are parquet or Arrow, decoded by the datasets library)"}


def load_dataset(
    source: str | os.PathLike | Sequence[str | os.PathLike],
    *,
    data_dir: str | os.PathLike | None = None,
    split_seed: int | None = None,
    test_fraction: float | None = None,
    on_bad_record: str = "error",
    encoding: str | None = None,
    text_columns: Sequence[str | int] | str | int | None = None,
    label_column: str | int | None = None,
    header: bool | None = None,
    delimiter: str | None = None,
    format: str | None = None,
    max_per_split: int | None = None,
    task_column: str | None = readers.TASK_FIELD,
) -> TextDataset:
    """Load a dataset as records: ``text`` plus ``label`` (class name) or ``labels`` (list).

    ``source``: a catalogue name (``textcls list-datasets``), a local file or folder (or a
    list of per-class files), or ``hf:<hub id>[:<config>]``. Relative paths are looked up in
    the working directory, then in the data directory.

    Splits: official splits are kept. Without a test split, a seeded stratified test split of
    ``test_fraction`` (default 0.1; ``ag_news`` 0.2) is drawn with ``split_seed`` (default 0), which
    is independent of any training seed; ``TextDataset.test_split`` records the carve.
    ``fdu_mtl/<domain>`` takes the last 200 training lines as dev. ``max_per_split`` keeps a seeded stratified subsample of each split.
    ``test_fraction`` is refused where the data has its own test split, and so is ``split_seed``
    unless it draws the ``max_per_split`` subsample.

    File options (``text_columns``, ``label_column``, ``task_column``, ``header``, ``delimiter``,
    ``format``) apply to local files; ``text_columns``/``label_column``/``task_column`` also to
    ``hf:`` sources. ``task_column`` names the JSON field or the column of each record's task
    (default ``task``: where the data has one, it is multi-task); ``None`` reads no task, so a
    field of that name is data like any other.
    ``encoding`` overrides every file's encoding (catalogue files have the right default).
    Bad records raise ``DataError`` or, with ``on_bad_record="skip"``, are skipped and
    listed in ``TextDataset.skipped``.
    """
    if split_seed is not None:
        check_int("split_seed", split_seed, 0, MAX_SEED)
    if test_fraction is not None:
        range_check("test_fraction", test_fraction, 0, MAX_HELD_OUT, low_open=True)
    if max_per_split is not None:
        check_max_per_split(max_per_split)
    options = ReadOptions(
        encoding=encoding,
        on_bad_record=on_bad_record,
        text_columns=text_columns,
        label_column=label_column,
        header=header,
        delimiter=delimiter,
        format=format,
        task_column=task_column,
    )
    root = _data_dir(data_dir)
    default_fraction = DEFAULT_TEST_FRACTION

    if isinstance(source, (list, tuple)):
        ds = readers.read_path([_resolve_path(str(p), root) for p in source], options)
    elif str(source).startswith("hf:"):
        _reject_options(options, str(source), allowed=("text_columns", "label_column", "task_column"))
        spec = parse_hf(str(source))
        ds = load_hub(str(source), spec, options, why="check the id and the network, or set TEXTCLS_HUB_DIR")
    elif (entry := find_entry(str(source))) is not None:
        _reject_options(options, entry.name, allowed=("encoding",))
        ds = _load_entry(entry, root, options)
        default_fraction = entry.test_fraction
    else:
        path = _resolve_path(str(source), root)
        ds = readers.read_path(path, options, name=str(source))

    if task_column != readers.TASK_FIELD:  # a run trained on it saves it (config.json "task_column")
        ds = replace(ds, task_column=task_column)
    ds = _with_test_split(ds, source, test_fraction or default_fraction, split_seed,
                          fraction_given=test_fraction is not None, subsampled=max_per_split is not None)
    if max_per_split is not None:
        ds = subsample(ds, max_per_split, split_seed or 0)
    return ds


def _with_test_split(ds: TextDataset, source, fraction: float, split_seed: int | None, *, fraction_given: bool,
                     subsampled: bool) -> TextDataset:
    """``ds`` with a test split: its own, or one carved with ``fraction`` and ``split_seed`` (default
    0), recorded in ``test_split``. A ``test_fraction``, or a ``split_seed`` that draws no
    subsample, beside an official test split is refused: ignored, it would score the user on a test
    split they did not ask for."""
    if "test" not in ds.splits:
        seed = split_seed or 0
        return replace(carve_split(ds, "test", fraction, seed), test_split={"fraction": fraction, "split_seed": seed},
                       carved_from=ds.splits)
    kept = f"'{source}' has its own test split ({len(ds.splits['test'])} records), which is kept"
    if fraction_given:
        raise ConfigError(f"parameter 'test_fraction' = {fraction}: {kept}; leave test_fraction out")
    if split_seed is not None and not subsampled:
        raise ConfigError(f"parameter 'split_seed' = {split_seed}: {kept}, and no subsample is drawn "
                          "(max_per_split= (CLI: --max-per-split) is not set); leave split_seed out")
    return ds


def check_source(source: str | os.PathLike, *, data_dir: str | os.PathLike | None = None) -> None:
    """The ``DataError`` ``load_dataset`` would raise for a source that is neither a catalogue
    name, an ``hf:`` id nor an existing file or folder, before anything is read (a suite checks
    every entry's dataset before its first run)."""
    if str(source).startswith("hf:") or find_entry(str(source)) is not None:
        return
    _resolve_path(str(source), _data_dir(data_dir))


def _reject_options(options: ReadOptions, what: str, allowed: Sequence[str]) -> None:
    for name in _SOURCE_OPTIONS:
        if name not in allowed and readers.option_given(options, name):
            # task_column=None has a flag of its own, which the CLI would not name after the parameter.
            flags = " (CLI: --task-column NAME / --no-task-column)" if name == "task_column" else ""
            raise ConfigError(f"parameter '{name}'{flags} applies to {_APPLIES_TO.get(name, 'local files')}, not to "
                              f"'{what}'{_WHY_NOT.get(name, '')}; leave it out for this source")


def _resolve_path(source: str, root: Path) -> Path:
    if not source.strip():  # Path("") is the working directory, which would be read as a dataset
        raise DataError("the dataset is an empty name; give a catalogue name (textcls list-datasets), a file or a "
                        "folder")
    path = Path(source).expanduser()
    if path.exists():
        return path
    if not path.is_absolute() and (root / path).exists():
        return root / path
    hint = close_names(source, CATALOG)
    raise DataError(
        f"'{source}' is neither a catalogue dataset nor an existing file or folder (looked in {Path.cwd()} and "
        f"in the data directory {root}; set {DATA_DIR_ENV} or pass data_dir= (CLI: --data-dir) to change it); {hint}"
    )


def _refuse_a_broken_local_copy(entry: CatalogEntry, root: Path) -> None:
    """Before the hub is tried (half a minute of retries offline): a data directory that is not a
    folder, or a dataset's folder that is a file or a broken symlink, is what to fix, not a copy
    that was never made."""
    refuse_a_file_as_data_dir(root)
    for folder in entry.folders:
        path = root / folder
        if path.is_symlink() and not path.exists():
            raise DataError(f"{path}: a symlink to {os.readlink(path)}, which does not exist (or loops); fix the link "
                            "or put the dataset's files there")
        if path.exists() and not path.is_dir():
            raise DataError(f"{path}: is a file where the folder of dataset '{entry.name}' belongs; move it away and "
                            "put the dataset's files there")


def _load_entry(entry: CatalogEntry, root: Path, options: ReadOptions) -> TextDataset:
    if entry.name == "fine-food":
        return entry.load_local(entry, None, options)
    local = local_root(entry, root)
    if local is not None and entry.load_local is not None:
        return entry.load_local(entry, local, options)
    _refuse_a_broken_local_copy(entry, root)
    where = f"{root}/{entry.folders[0]}" if entry.folders else str(root)
    unset = root == DEFAULT_DATA_DIR.expanduser() and not os.environ.get(DATA_DIR_ENV)
    default = f" (the default data folder; {DATA_DIR_ENV} is not set)" if unset else ""
    why = (
        f"no local copy either under {root}{default}: put it in {where}, or set {DATA_DIR_ENV} (CLI: --data-dir) "
        f"to the folder that holds '{entry.folders[0] if entry.folders else entry.name}', or set {HUB_DIR_ENV} to a "
        "local copy of the hub repo"
    )
    if entry.hub is None:
        raise DataError(
            f"dataset '{entry.name}' has no local copy in {where} and no Hugging Face hub source; "
            f"download it there (the data directory is {root}; set {DATA_DIR_ENV} or pass data_dir= (CLI: --data-dir) to change it)"
        )
    spec = entry.hub
    ds = load_hub(entry.name, spec, options, why, as_published=True)
    # Same class order as the local copy gives, so either source trains the same head.
    order = entry.label_order or sorted(ds.label_names, key=readers.natural_key)
    first = [n for n in order if n in ds.label_names]
    return replace(ds, label_names=first + [n for n in ds.label_names if n not in first])
