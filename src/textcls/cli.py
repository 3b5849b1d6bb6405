"""The ``textcls`` command line.

Every user error (``TextclsError``, a bad option) is printed as ONE line on stderr and
the process exits with status 2, without a traceback; so are running out of memory, a full
disk or a folder that cannot be written, and input that ends early (a truncated ``.gz``).
Ctrl-C prints ``error: interrupted`` and exits with 130. A failed ``train`` leaves nothing
half-way: what it created is removed, unless a checkpoint was saved, which ``--resume``
continues.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import functools
import inspect
import io
import json
import os
import re
import shlex
import sys
import time
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

import typer

try:  # typer >= 0.25 vendors its own copy of click; its exceptions are the ones raised
    from typer._click import exceptions as click_exceptions
except ImportError:  # pragma: no cover - older typer uses the click package
    from click import exceptions as click_exceptions

from .errors import CheckpointError, ConfigError, DataError, RunFolderError, TextclsError, UnknownTaskError
from .validate import check_folder_path, find_lone_surrogate

app = typer.Typer(add_completion=False, no_args_is_help=False, pretty_exceptions_enable=False,
                  help="Compact neural text classifiers, reproduced from their papers.")

DEFAULT_DATA = "fine-food"
# data/readers.py's TASK_FIELD, not imported from there: that module imports datasets, which predict
# never loads (tests/test_startup.py). tests/test_readers.py checks the two agree.
DEFAULT_TASK_COLUMN = "task"
CONFUSION_PNG = "confusion_matrix.png"  # train --confusion-png writes it into the run folder
MEMORY_HINT = ("cap the document length with --set max_length=N (e.g. 500; hierarchical models: "
               "max_sentences / max_sentence_length) or use a smaller --batch-size")


class Interrupted(TextclsError):
    """Ctrl-C, reported with what it left behind."""

    exit_code = 130


# --------------------------------------------------------------------------- shared options


@dataclass(frozen=True)
class ReaderArgs:
    """How ``train`` and ``evaluate`` read a local file (the options ``_reader_options`` adds)."""

    encoding: Optional[str] = None
    text_column: tuple = ()
    label_column: Optional[str] = None
    task_column: Optional[str] = None
    no_task_column: bool = False
    file_format: Optional[str] = None
    header: Optional[bool] = None
    delimiter: Optional[str] = None
    on_bad_record: str = "error"
    test_fraction: Optional[float] = None
    split_seed: Optional[int] = None

    def __post_init__(self):
        if self.on_bad_record not in ("error", "skip"):
            raise ConfigError(f"--on-bad-record '{self.on_bad_record}' is not one of error, skip")
        check_task_column_flags(self.task_column, self.no_task_column)

    def file_options(self) -> dict:
        """The ``load_dataset`` / ``ReadOptions`` keywords the user set."""
        options = {"encoding": self.encoding, "text_columns": list(self.text_column) or None,
                   "label_column": self.label_column, "task_column": self.task_column, "format": self.file_format,
                   "header": self.header, "delimiter": self.delimiter}
        options = {k: v for k, v in options.items() if v is not None}
        return {**options, "task_column": None} if self.no_task_column else options

    def load_options(self) -> dict:
        """Every ``load_dataset`` keyword these options set (file options, bad records, test split)."""
        options = {**self.file_options(), "on_bad_record": self.on_bad_record}
        for name in ("test_fraction", "split_seed"):
            if getattr(self, name) is not None:
                options[name] = getattr(self, name)
        return options


def _reader_parameters() -> list:
    """The reader options, defined once; fresh typer.Option objects for each command."""
    kw = inspect.Parameter.KEYWORD_ONLY
    return [
        inspect.Parameter("encoding", kw, annotation=Optional[str], default=typer.Option(
            None, "--encoding", help="Text encoding of a local file (e.g. latin-1).")),
        inspect.Parameter("text_column", kw, annotation=List[str], default=typer.Option(
            [], "--text-column", help="Text column(s) of a CSV/JSONL file (repeatable; joined).")),
        inspect.Parameter("label_column", kw, annotation=Optional[str], default=typer.Option(
            None, "--label-column", help="Label column of a CSV/JSONL file.")),
        inspect.Parameter("task_column", kw, annotation=Optional[str], default=typer.Option(
            None, "--task-column", help="Task column of a CSV/JSONL/parquet file or hf: dataset, matched exactly "
                                        "(default: task in any case, where the data has one: multi-task data; "
                                        "evaluate: the run's own).")),
        inspect.Parameter("no_task_column", kw, annotation=bool, default=typer.Option(
            False, "--no-task-column", help="Read no task: a task field or column is data like any other "
                                            "(single-task data).")),
        inspect.Parameter("file_format", kw, annotation=Optional[str], default=typer.Option(
            None, "--format", help="Format of a local file when its extension does not say "
                                   "(csv, tsv, jsonl, parquet, fasttext, ...).")),
        inspect.Parameter("header", kw, annotation=Optional[bool], default=typer.Option(
            None, "--header/--no-header", help="Whether a CSV/TSV file has a header row.")),
        inspect.Parameter("delimiter", kw, annotation=Optional[str], default=typer.Option(
            None, "--delimiter", help="Field delimiter of a CSV-like file.")),
        inspect.Parameter("on_bad_record", kw, annotation=str, default=typer.Option(
            "error", "--on-bad-record", help="error (stop) or skip (skip and count).")),
        inspect.Parameter("test_fraction", kw, annotation=Optional[float], default=typer.Option(
            None, "--test-fraction", help="Held-out test share when the data has no test split (refused for data with one).")),
        inspect.Parameter("split_seed", kw, annotation=Optional[int], default=typer.Option(
            None, "--split-seed", help="Seed of the test split drawn when the data has none, and of --max-per-split's "
                                       "subsample (default 0; evaluate: the run's own on its own data; refused where "
                                       "it draws neither).")),
    ]


def check_task_column_flags(task_column: Optional[str], no_task_column: bool) -> None:
    """--task-column NAME and --no-task-column ask for opposite things: a usage error."""
    if task_column is not None and no_task_column:
        raise ConfigError(f"--task-column {task_column} and --no-task-column contradict each other; give one of them")


def task_column_of(task_column: Optional[str], no_task_column: bool) -> Optional[str]:
    """The reader's ``task_column`` from the two options: None for --no-task-column, else the name
    (default ``task``)."""
    check_task_column_flags(task_column, no_task_column)
    return None if no_task_column else task_column or DEFAULT_TASK_COLUMN


def _reader_options(func):
    """Give a command the reader options (one definition for ``train`` and ``evaluate``); the
    command receives them as ``reader: ReaderArgs``."""
    extra = _reader_parameters()
    names = [p.name for p in extra]
    signature = inspect.signature(func, eval_str=True)
    own = [p for p in signature.parameters.values() if p.name != "reader"]

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        values = {name: kwargs.pop(name) for name in names}
        values["text_column"] = tuple(values["text_column"] or ())
        return func(*args, reader=ReaderArgs(**values), **kwargs)

    wrapper.__signature__ = signature.replace(parameters=own + extra)
    wrapper.__annotations__ = {p.name: p.annotation for p in own + extra}
    return wrapper


def _parse_sets(pairs: List[str]) -> dict:
    """``--set key=value`` pairs; values are JSON when they parse as JSON, else strings."""
    out = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise ConfigError(f"--set '{pair}' is not key=value; write for example --set dropout=0.3")
        key, value = pair.split("=", 1)
        key = key.strip()
        if key in out:
            raise ConfigError(f"--set {key} is given twice; give each parameter once")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def _check_overrides(model: str, named: dict, params: dict, seed: int):
    """The preset with every override applied, or a ConfigError naming the option at fault."""
    from .models.registry import get_preset

    named = {k: v for k, v in named.items() if v is not None}
    for key in sorted(set(named) & set(params)):
        raise ConfigError(f"--set {key}={json.dumps(params[key])} repeats --{key.replace('_', '-')} "
                          f"{named[key]}; give {key} once")
    preset = get_preset(model)
    for key, value in params.items():  # one at a time, so that a bad value is named
        try:
            preset.with_overrides(**{key: value})
        except (TypeError, ValueError) as exc:
            if isinstance(exc, TextclsError):
                raise
            raise ConfigError(f"--set {key}={json.dumps(value)}: not a valid value for parameter '{key}' "
                              f"({exc}); give a value of the preset's type") from None
    return preset.with_overrides(**named, **params, seed=seed)


def _echo_metrics(title: str, metrics: dict) -> None:
    from .eval.metrics import format_report

    typer.echo(f"== {title}")
    typer.echo(format_report(metrics))


def check_device(device: str, option: str = "--device") -> None:
    """Refuse a device this machine does not have, before any data is read."""
    from .estimators import check_device as check  # not through api: that imports scikit-learn

    check(device, option)


def _load_data(data: str, **options):
    """``load_dataset`` with an input that ends early (a truncated .gz) as a DataError naming it."""
    from .data import load_dataset

    try:
        return load_dataset(data, **options)
    except EOFError as exc:
        raise DataError(f"{data}: the input ends early ({exc or 'EOFError'}); a compressed file is "
                        "truncated or corrupt: download or compress it again") from exc


# --------------------------------------------------------------------------- run folders


def _launch_rank() -> int:
    """This process's rank under torchrun, from its environment (0 for a plain run)."""
    try:
        return int(os.environ.get("RANK") or 0)
    except ValueError:
        return 0


def _note(text: str) -> None:
    typer.echo(text, err=True)


def describe_os_error(exc: OSError, where: Optional[Path] = None) -> str:
    """One line for a failed file operation: the path, the reason, what to do."""
    path = exc.filename2 or exc.filename or where  # a failed rename names its destination second
    reason = exc.strerror or str(exc) or type(exc).__name__
    fixes = {
        errno.ENOSPC: "free some disk space or write somewhere else",
        errno.EDQUOT: "free some of your disk quota or write somewhere else",
        errno.EACCES: "check the permissions of that file or folder, or write somewhere else",
        errno.EPERM: "check the permissions of that file or folder, or write somewhere else",
        errno.EROFS: "the file system is read-only; write somewhere else",
        errno.EEXIST: "it is a file where a folder is needed; remove it or name another folder",
        errno.ENOTDIR: "a part of the path is a file, not a folder; name another path",
    }
    fix = fixes.get(exc.errno, "check the path and the disk")
    return f"{path}: {reason}; {fix}" if path else f"{reason}; {fix}"


def is_out_of_memory(exc: BaseException) -> bool:
    """MemoryError, or torch's failed CPU/GPU allocation (a RuntimeError)."""
    if isinstance(exc, MemoryError):
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and ("can't allocate memory" in text or "out of memory" in text)


def describe_out_of_memory(exc: BaseException) -> str:
    import re

    found = re.search(r"tried to allocate ([0-9][0-9.,]*\s*[A-Za-z]+)", str(exc), re.IGNORECASE)
    detail = f" (tried to allocate {found.group(1)})" if found else ""
    return f"out of memory{detail}; {MEMORY_HINT}"


@app.command()
@_reader_options
def train(
    model: str = typer.Option(None, "--model", "-m", help="Preset name (textcls list-models). Default: the default preset."),
    data: str = typer.Option(DEFAULT_DATA, "--data", "-d", help="Dataset name (textcls list-datasets), a local file or folder, or hf:<hub id>."),
    run_dir: Optional[Path] = typer.Option(None, "--run-dir", help="Where to save the run. Default: runs/<model>_<data>_<time>."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Folder of the named datasets (default: $TEXTCLS_DATA_DIR)."),
    epochs: Optional[int] = typer.Option(None, help="Override the preset's number of epochs."),
    lr: Optional[float] = typer.Option(None, help="Override the preset's learning rate."),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", help="Override the preset's (global) batch size."),
    embeddings: Optional[str] = typer.Option(None, help="glove-6b-50d, minilm-static, word2vec, or a vectors file (presets with vectors in list-models)."),
    precision: Optional[str] = typer.Option(None, help="fp32, bf16 (autocast) or auto (bf16 where the CPU has AMX or AVX-512 BF16, or the GPU supports it; fp32 elsewhere)."),
    seed: int = typer.Option(0, help="Seed of initialisation, dev split and batch order."),
    sets: List[str] = typer.Option([], "--set", help="Any other preset override, key=value (repeatable), e.g. max_length=500."),
    max_per_split: Optional[int] = typer.Option(None, "--max-per-split", help="Use a seeded stratified sample of at most N records per split."),
    device: str = typer.Option("cpu", help="cpu, cuda, cuda:N or auto."),
    resume: bool = typer.Option(False, help="Resume the interrupted run in --run-dir."),
    confusion_png: bool = typer.Option(False, "--confusion-png", help="Also write confusion_matrix.png."),
    progress: bool = typer.Option(True, help="Show progress bars."),
    reader: ReaderArgs = None,
):
    """Train a model, evaluate it on the test split and save the run. With no options: the quick start."""
    from . import artifacts
    from .api import DEFAULT_MODEL, Classifier
    from .estimators import estimator_for

    # Every check that needs no data first: a bad option fails at once and creates nothing.
    model = model or DEFAULT_MODEL
    check_device(device)
    params = _parse_sets(sets)
    named = {"epochs": epochs, "lr": lr, "batch_size": batch_size, "precision": precision, "embeddings": embeddings}
    estimator_for(_check_overrides(model, named, params, seed)).refuse_unread_settings()
    if resume and run_dir is None:
        raise ConfigError("--resume continues an interrupted run, so it needs --run-dir: the folder that run was "
                          "training into")
    if run_dir is None:
        safe_data = Path(str(data)).name.replace("/", "-").replace(":", "-")
        run_dir = Path("runs") / f"{model}_{safe_data}_{time.strftime('%Y%m%d-%H%M%S')}"
    # Train in a partial directory and rename at the end (artifacts' run folders): a crash never
    # leaves a run that looks complete, and the partial directory holds the checkpoint --resume uses.
    partial = artifacts.partial_of(run_dir)
    writer = _launch_rank() == 0  # under torchrun only rank 0 writes the run folder
    if writer:
        artifacts.refuse_if_locked(run_dir)
        resume = artifacts.check_run_dir(run_dir, resume, note=_note)
    else:  # rank 0 checks and clears the folder; a partial without a checkpoint is not resumed
        resume = resume and artifacts.is_resumable(partial)

    dataset = _load_data(data, data_dir=data_dir, max_per_split=max_per_split, **reader.load_options())
    if dataset.skipped:
        typer.echo(f"skipped {len(dataset.skipped)} bad records (first: {dataset.skipped[0]})", err=True)
    if "test" not in dataset.splits:
        raise DataError(f"dataset '{dataset.name}' has no test split; give a file with a test split")
    clf = Classifier(model, epochs=epochs, lr=lr, batch_size=batch_size, embeddings=embeddings,
                     precision=precision, params=params, seed=seed, device=device,
                     progress=progress)

    with artifacts.run_dir_lock(run_dir) if writer else contextlib.nullcontext():
        if writer:  # again, under the lock: reading the data took a while
            resume = artifacts.check_run_dir(run_dir, resume, note=_note)
        created = not partial.exists()
        try:
            try:
                outcome = _train_into(clf, dataset, run_dir, partial, resume=resume, confusion_png=confusion_png)
            except OSError as exc:
                raise RunFolderError(describe_os_error(exc, partial)) from exc
        except BaseException as exc:
            if writer and artifacts.abandon(partial, created):
                _explain_kept_run(exc, partial)
            raise
    if outcome is None:  # not rank 0
        return
    test, seconds, resumed = outcome
    _echo_metrics(f"{model} on {dataset.name} (test, {len(dataset['test'])} documents)", test)
    line = truncation_line(getattr(clf, "data_report_", None) or {}, getattr(clf, "pipeline_", None))
    if line:
        typer.echo(line)
    if resumed:
        typer.echo(f"trained in {seconds:.1f} s, resumed after epoch {resumed['from_epoch']} (the epochs "
                   f"before took {resumed['seconds_before']:.1f} s); run saved to {run_dir}")
    else:
        typer.echo(f"trained in {seconds:.1f} s; run saved to {run_dir}")


def _train_into(clf, dataset, run_dir: Path, work_dir: Path, *, resume: bool, confusion_png: bool):
    """Fit in ``work_dir`` (the partial folder), evaluate on test, save, rename to ``run_dir``.
    Returns (test metrics, training seconds, what a resume had behind it or None), or None on
    ranks other than 0."""
    from . import artifacts
    from .train import distributed

    distributed.init_from_env()
    resumed = _epochs_behind(work_dir) if resume else None
    start = time.perf_counter()
    clf.fit_dataset(dataset, run_dir=work_dir, resume=resume)
    seconds = time.perf_counter() - start
    if not distributed.is_main():
        distributed.cleanup()
        return None
    test = clf.evaluate(dataset["test"], where=f"{dataset.name}/test")
    result = {"dataset": dataset.summary(), "train_seconds": seconds, "test": test,
              "parameters": clf.num_parameters(), "data_report": getattr(clf, "data_report_", {})}
    if clf.fit_result_ is not None:
        result["best_epoch"] = clf.fit_result_.best_epoch
        result["dev"] = clf.fit_result_.best_metrics
    if resumed:  # train_seconds is this process's; the epochs before it are the benchmark's `resumed`
        result["resumed"] = resumed
    work_dir.mkdir(parents=True, exist_ok=True)
    # A training killed after its save and before finish_run left these, which describe that
    # earlier model: save_pretrained would refuse the folder for its metrics.json (this model's
    # own epochs.csv it takes), and a stale confusion matrix would outlive a rerun without it.
    for name in (artifacts.METRICS, CONFUSION_PNG):
        (work_dir / name).unlink(missing_ok=True)
    clf.save_pretrained(work_dir)
    artifacts.write_json(work_dir / artifacts.METRICS, result)
    if confusion_png:
        from .eval.plots import plot_confusion  # multi-label runs: one 2 x 2 panel per label

        plot_confusion(test, work_dir / CONFUSION_PNG)
    artifacts.finish_run(work_dir, run_dir)
    distributed.cleanup()
    return test, seconds, resumed


def _epochs_behind(work_dir: Path) -> dict | None:
    """What a resumed training has behind it (``from_epoch``, ``seconds_before``: the epochs its
    checkpoint completed and their seconds), or None when there is no checkpoint to resume."""
    from . import artifacts
    from .train.checkpoint import checkpointed_epochs

    if not artifacts.is_resumable(work_dir):
        return None
    epochs, seconds = checkpointed_epochs(work_dir / artifacts.CHECKPOINT_DIR)
    return {"from_epoch": epochs, "seconds_before": seconds} if epochs else None


def _explain_kept_run(exc: BaseException, partial: Path) -> None:
    """Say in the error that the checkpointed run is kept and how to continue it; re-raises as
    a one-line error where the exception was not one."""
    hint = f"the run so far is kept in {partial}: rerun the same command with --resume to continue it"
    if isinstance(exc, CheckpointError):
        return  # its message already says what to do with the checkpoint
    if isinstance(exc, TextclsError):
        exc.args = (f"{exc}; {hint}",)
        return
    if isinstance(exc, KeyboardInterrupt):
        raise Interrupted(f"interrupted; {hint}") from exc
    if is_out_of_memory(exc):
        raise RunFolderError(f"{describe_out_of_memory(exc)}; {hint}") from exc
    if isinstance(exc, EOFError):
        raise DataError(f"the input ended early ({exc or 'EOFError'}); {hint}") from exc


def truncation_line(report: dict, pipeline) -> Optional[str]:
    """One line on what the length caps cut from the training and test documents, or None when
    they cut nothing: ``truncated 12 of 4,000 training documents to 1,000 tokens (34,211 tokens
    cut)``."""
    splits = report.get("splits") or {}
    cut = [(name, splits[split]) for split, name in (("train", "training"), ("test", "test"))
           if (splits.get(split) or {}).get("tokens_dropped")]
    if not cut:
        return None
    settings = pipeline.settings() if pipeline is not None else {}
    parts = []
    for i, (name, stats) in enumerate(cut):
        tokens = f"({stats['tokens_dropped']:,} tokens cut)"
        if "documents_truncated" in stats:  # flat
            cap = f" to {settings.get('max_length') or 0:,} tokens" if i == 0 else ""
            parts.append(f"{stats['documents_truncated']:,} of {stats['documents']:,} {name} documents{cap} {tokens}")
        else:
            sentences = f" to {settings.get('max_sentences') or 0:,} sentences" if i == 0 else ""
            words = f" to {settings.get('max_sentence_length') or 0:,} words" if i == 0 else ""
            parts.append(f"{stats['documents_capped']:,} of {stats['documents']:,} {name} documents{sentences} "
                         f"and {stats['sentences_truncated']:,} sentences{words} {tokens}")
    if "documents_truncated" in cut[0][1]:
        return f"truncated {', and '.join(parts)}; --set max_length=N changes the cap"
    return f"capped {', and '.join(parts)}; --set max_sentences=N / max_sentence_length=N change the caps"


def _single_local_file(data: str, data_dir: Optional[Path]) -> Optional[Path]:
    """``data`` as a path when it is one local file (not a catalogue name, hub id or folder)."""
    from .data import data_dir as default_data_dir
    from .data.catalog import find_entry

    if data.startswith("hf:") or find_entry(data) is not None:
        return None
    path = Path(data).expanduser()
    if not path.exists() and not path.is_absolute():
        path = default_data_dir(data_dir) / path
    return path if path.is_file() else None


@app.command()
@_reader_options
def evaluate(
    run_dir: Path = typer.Argument(..., help="A run directory made by textcls train."),
    data: str = typer.Option(..., "--data", "-d", help="Dataset name, local file or folder. A single file is scored whole (every record) unless --split is given."),
    split: Optional[str] = typer.Option(None, help="Which split to evaluate. Default: test; for a single file, every record."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Folder of the named datasets (default: $TEXTCLS_DATA_DIR)."),
    max_per_split: Optional[int] = typer.Option(None, "--max-per-split", help="Use a seeded stratified sample of at most N records."),
    output: Optional[Path] = typer.Option(None, help="Also write the metrics JSON here."),
    confusion_png: Optional[Path] = typer.Option(None, "--confusion-png", help="Write a confusion-matrix PNG here (multi-label data: one 2 x 2 panel per label)."),
    device: Optional[str] = typer.Option(None, help="cpu, cuda, cuda:N or auto. Default: the run's own, or cpu when it is a GPU this machine lacks."),
    task: Optional[str] = typer.Option(None, "--task", help="The task of every record, for a run with one head per "
                                       "task (e.g. fcsr-mtl), where the data names none (fdu_mtl/books; a file "
                                       "without a task field or column)."),
    reader: ReaderArgs = None,
):
    """Evaluate a saved run on a dataset split, or on every record of a file; data with tasks
    (fdu_mtl) also gets each task's metrics and their mean."""
    from . import artifacts

    if device is not None:
        check_device(device)
    for option, path in (("--output", output), ("--confusion-png", confusion_png)):
        if path is not None and path.is_dir():
            raise ConfigError(f"{path}: is a folder; {option} takes a file path, e.g. {path / 'metrics.json'}"
                              if option == "--output" else
                              f"{path}: is a folder; {option} takes a file path, e.g. {path / 'confusion.png'}")
    # A run's own file (RUN/metrics.json, RUN/config.json, ...) is refused; a new file in the run
    # folder (RUN/eval_test.json) stays allowed: the run neither reads nor writes it.
    artifacts.check_output_paths(run_dir, {"--output": output, "--confusion-png": confusion_png})
    file = _single_local_file(data, data_dir) if split is None else None
    if file is not None:
        _refuse_split_options_of_one_file(data, reader, max_per_split)
    clf = _load_run(run_dir, device)
    reader = _with_run_task_column(reader, clf.task_column_, data, task)
    trained_on_it = _names_run_data(data, clf.dataset_name_)
    if file is not None:
        dataset, scored, holds_run_records = _whole_file(file, data, reader, max_per_split, _run_source_digest(clf))
        if trained_on_it or holds_run_records:
            scored += (f", training records included: {run_dir} was trained on it; --split test scores only its "
                       "held-out test split")
        records, where = dataset["train"], data
        title = f"{clf.model} on {data} ({len(records)} documents: {scored})"
    else:
        split = split or "test"
        dataset = _run_or_given_carve(data, clf, run_dir, reader, trained_on_it, data_dir=data_dir,
                                      max_per_split=max_per_split)
        records, where = dataset[split], f"{dataset.name}/{split}"
        title = f"{clf.model} on {where} ({len(records)} documents)"
    if dataset.skipped:
        typer.echo(f"skipped {len(dataset.skipped)} bad records (first: {dataset.skipped[0]})", err=True)
    used = task_column_of(reader.task_column, reader.no_task_column)
    records = _evaluation_tasks(clf, records, task, run_dir, where, used)
    metrics = _evaluate_records(clf, records, where, reader.on_bad_record, used, run_dir)
    if metrics.get("skipped"):  # its notes come first: one for unknown tasks, one for unknown labels
        for note in metrics["notes"][:2]:
            if note.startswith("skipped "):
                typer.echo(note, err=True)
    if "task" in records.column_names and task is None:  # --task's one task: its metrics are the whole's
        metrics["per_task"] = _task_metrics(clf, records, where, reader.on_bad_record)
    if output:
        artifacts.write_json(output, metrics)
    if confusion_png:
        from .eval.plots import plot_confusion

        plot_confusion(metrics, confusion_png)
    _echo_metrics(title, metrics)
    if "per_task" in metrics:
        from .eval.metrics import format_task_table

        typer.echo("\n" + format_task_table(metrics["per_task"]))
    if confusion_png and clf.multi_label_:
        typer.echo(f"wrote {confusion_png}: one 2 x 2 confusion panel per label (true no/yes x predicted no/yes); "
                   "multi-label data has no single C x C confusion matrix", err=True)


def _evaluate_records(clf, records, where: str, on_bad_record: str, used: Optional[str], run_dir: Path) -> dict:
    """``clf.evaluate``; a refused task the run has no head for names the run's own task column
    where the data's tasks were read from another (``used``)."""
    # --on-bad-record also covers a record whose label the model does not know: skipped and counted
    # (the first note) with skip, as the reader's bad records are, else an error at its file and line.
    try:
        return clf.evaluate(records, where=where, on_bad_record=on_bad_record)
    except UnknownTaskError as exc:
        hint = run_task_column_hint(clf.task_column_, used, run_dir)
        if not hint:
            raise
        raise UnknownTaskError(f"{exc}{hint}", index=exc.index) from None


def _whole_file(file: Path, data: str, reader: "ReaderArgs", max_per_split: Optional[int],
                run_digest: Optional[str] = None):
    """A single file, which has no split: all of it (not the test slice train would carve), or its
    --max-per-split subsample; what the title says was scored; and whether its records are those
    the run's test split was carved from (``run_digest``; None: the run does not say)."""
    from .data import ReadOptions, read_path, subsample
    from .data.records import records_digest

    try:
        dataset = read_path(file, ReadOptions(on_bad_record=reader.on_bad_record, **reader.file_options()), name=data)
    except EOFError as exc:
        raise DataError(f"{file}: the input ends early ({exc or 'EOFError'}); the compressed file is "
                        "truncated or corrupt: download or compress it again") from exc
    holds_run_records = run_digest is not None and records_digest(dataset) == run_digest
    if max_per_split is None:
        return dataset, "every record of the file", holds_run_records
    cut = subsample(dataset, max_per_split, reader.split_seed or 0)
    if len(cut["train"]) < len(dataset["train"]):  # the title said "every record of the file" of it too
        return cut, cut.split_notes["train"].rpartition("; ")[2], holds_run_records
    return cut, "every record of the file", holds_run_records


def _refuse_split_options_of_one_file(data: str, reader: "ReaderArgs", max_per_split: Optional[int]) -> None:
    """--test-fraction, and --split-seed without --max-per-split, would be ignored on one file scored whole."""
    if reader.test_fraction is not None:
        raise ConfigError(f"--test-fraction: {data} is one file, scored whole (every record); leave it out, or "
                          "pass --split test to score the test part train carves from it")
    if reader.split_seed is not None and max_per_split is None:
        raise ConfigError(f"--split-seed: {data} is one file, scored whole (every record), and no subsample is drawn; "
                          "leave it out, pass --max-per-split N to score a subsample drawn with it, or --split test "
                          "to score the test part train carves with it")


def _names_run_data(data: str, run_data: Optional[str]) -> bool:
    """Whether ``data`` names the data the run was trained on (config.json "dataset"): the same name,
    or the same file or folder from here."""
    if run_data is None:
        return False
    return data == run_data or Path(data).expanduser().resolve() == Path(run_data).expanduser().resolve()


def _run_source_digest(clf) -> Optional[str]:
    """The digest of the records the run's test split was carved from (config.json "test_split"'s
    "source_digest"); None where its data had its own test split, or the run was saved before it."""
    return (clf.test_split_ or {}).get("source_digest")


def _run_or_given_carve(data: str, clf, run_dir: Path, reader: "ReaderArgs", named: bool, **options):
    """``data`` loaded for ``evaluate --split``: where it is the run's own data, named as the run
    was trained (``named``) or holding the same records under another name or path (a copy; the
    digest of config.json "test_split"), with the run's test split carved as the run's was; other
    data as the reader options say."""
    run_digest = _run_source_digest(clf)
    if named:
        reader = _with_run_test_split(reader, clf.test_split_, run_dir, data)
    dataset = _load_data(data, **options, **reader.load_options())
    digest = dataset.source_digest() if run_digest else None
    if named or run_digest is None or digest != run_digest:
        if named and digest not in (None, run_digest):
            typer.echo(f"note: {data} does not hold the records {run_dir} was trained on (config.json test_split's "
                       "source_digest differs: changed since?); the test split carved from it as the run's was may "
                       "hold records the run trained on", err=True)
        return dataset
    own = _with_run_test_split(reader, clf.test_split_, run_dir, f"{data}'s records (as {clf.dataset_name_})")
    if all(dataset.test_split[key] == clf.test_split_[key] for key in ("fraction", "split_seed")):
        return dataset
    return _load_data(data, **options, **own.load_options())


def _with_run_test_split(reader: "ReaderArgs", carve: Optional[dict], run_dir: Path, data: str) -> "ReaderArgs":
    """``reader`` carving the run's own test split (config.json "test_split") from the data it was
    trained on. Another share or seed would put the run's training records into the test split, so
    one that differs from the run's is refused; a run saved before the key carves as given."""
    if carve is None:
        return reader
    given = {"fraction": reader.test_fraction, "split_seed": reader.split_seed}
    flags = {"fraction": "--test-fraction", "split_seed": "--split-seed"}
    for key, value in given.items():
        if value is not None and value != carve[key]:
            raise ConfigError(
                f"{flags[key]} {value}: {run_dir} was trained on {data} with the test split carved with "
                f"test_fraction={carve['fraction']} and split_seed={carve['split_seed']}; any other carve puts its "
                f"training records into the test split; leave {flags[key]} out (evaluate carves the run's own)")
    return dataclasses.replace(reader, test_fraction=carve["fraction"], split_seed=carve["split_seed"])


def _with_run_task_column(reader: "ReaderArgs", run_column: Optional[str], data: str, task: Optional[str]):
    """``reader`` reading the tasks from the run's own task column (config.json "task_column") when
    the user gave neither --task-column nor --no-task-column (nor --task: data naming no task), and
    ``data`` is no catalogue dataset (whose loader names its tasks)."""
    from .data.catalog import find_entry

    if (run_column == DEFAULT_TASK_COLUMN or reader.task_column is not None or reader.no_task_column
            or task is not None or find_entry(data) is not None):
        return reader
    return dataclasses.replace(reader, task_column=run_column, no_task_column=run_column is None)


def _evaluation_tasks(clf, records, task: Optional[str], run_dir: Path, where: str,
                      used: Optional[str] = DEFAULT_TASK_COLUMN):
    """``records`` with the task of every record where the run has one head per task: their own
    (a task column), or ``task`` (--task, one the run was trained on) for data that names none;
    ``used``: the field or column the data's tasks were read from (None: none)."""
    from .data.records import with_task_column

    heads = clf.task_names_ if clf.uses_tasks else None
    if task is not None:
        if not heads:
            raise ConfigError(f"--task {task}: {run_dir} was not trained with one head per task; drop --task")
        _check_task_option(task, heads, run_dir)
        if "task" in records.column_names:
            raise ConfigError(f"--task {task}: {where} names each record's task (its task column); drop --task")
        return with_task_column(records, task)
    if not heads:
        return records
    if "task" not in records.column_names:
        raise ConfigError(f"{where}: names no task, and {run_dir} has one head per task ({', '.join(heads)}): pass "
                          f"--task NAME (the task of every record), "
                          f"{'' if used is None else 'or give the data '}{task_source_advice(used)}"
                          f"{run_task_column_hint(clf.task_column_, used, run_dir)}")
    return records  # a record of a task the run lacks is Classifier.evaluate's bad record


def _task_metrics(clf, records, where: str, on_bad_record: str) -> dict:
    """Metrics of each task's records (multi-task data: fdu_mtl's domains) and their mean, under
    the same bad-record policy as the whole (each task's records keep their places)."""
    import numpy as np

    from .data.readers import natural_key
    from .data.records import select_records
    from .eval.metrics import task_metrics

    tasks = np.asarray(records["task"])
    # The run's task order, then, for a pooled run (which scores every record), the tasks it was
    # not trained on; a run with per-task heads skipped their records (or refused them).
    known = [t for t in (clf.task_names_ or []) if t in set(tasks)]
    order = known + ([] if clf.uses_tasks else sorted(set(tasks) - set(known), key=natural_key))
    per_task = {task: clf.evaluate(select_records(records, np.flatnonzero(tasks == task)),
                                   where=f"{where} (task {task})", on_bad_record=on_bad_record)
                for task in order}
    return task_metrics(per_task)


def _load_run(run_dir: Path, device: Optional[str]):
    """``Classifier.from_pretrained`` on ``device`` (default: the device it was trained on,
    or cpu when that is a GPU this machine does not have)."""
    from .api import Classifier

    return Classifier.from_pretrained(run_dir, device=device, note=lambda line: typer.echo(line, err=True))


PREDICT_BLOCK_BYTES = 1 << 20  # input read, predicted and written this much at a time
STDIN_HINT = "reading texts from stdin, {what}; end with Ctrl-D"


@app.command()
def predict(
    run_dir: Path = typer.Argument(..., help="A run directory made by textcls train."),
    texts: List[str] = typer.Argument(None, help="Texts to classify. None: read --input, or stdin."),
    input_path: Optional[Path] = typer.Option(
        None, "--input", "--file", "-f",
        help="A file of texts ('-' = stdin), read, predicted and written in 1 MiB chunks (bounded memory); "
             "a file is checked whole before the first prediction is written, stdin as it comes."),
    input_format: Optional[str] = typer.Option(
        None, "--format", help="text (one text per line), jsonl (one {\"text\": ..., \"task\": ...} per line), "
                               "csv or tsv (a header row, one record per row; CSV quoting as train reads it). "
                               "Default: from the suffix (.jsonl, .csv, .tsv), else text."),
    text_columns: List[str] = typer.Option(
        [], "--text-column", help="CSV/TSV column or JSON Lines field holding the text (repeatable: joined with a "
                                  "space, as train joins them). Default: text."),
    delimiter: Optional[str] = typer.Option(None, "--delimiter", help="Field delimiter of a CSV/TSV file (default: , "
                                                                      "for csv, tab for tsv)."),
    encoding: Optional[str] = typer.Option(None, "--encoding", help="Text encoding of the --input file or stdin, "
                                           "any format (default utf-8; e.g. latin-1, utf-16)."),
    task: Optional[str] = typer.Option(None, "--task", help="The task of every text, for a run with one head per "
                                                            "task (e.g. fcsr-mtl on fdu_mtl); a record's own task, "
                                                            "in the field or column --task-column names (default: "
                                                            "the run's, else task), wins."),
    task_column: Optional[str] = typer.Option(None, "--task-column", help="The JSON Lines field or CSV/TSV column "
                                              "holding each record's task, matched exactly. Default: the one the run "
                                              "was trained with, else task (any case)."),
    no_task_column: bool = typer.Option(False, "--no-task-column", help="Read no task from the input: a 'task' "
                                        "field or column is data like any other (--task still applies)."),
    threshold: Optional[float] = typer.Option(None, "--threshold", help="Multi-label runs: the probability from which a "
                                              "class is predicted. Default: the run's saved threshold, else 0.5."),
    threads: int = typer.Option(1, "--threads", help="CPU threads. Default 1: on a busy 2-core machine two OpenMP "
                                "threads made prediction 2.7x slower (docs/speed.md)."),
    device: Optional[str] = typer.Option(None, help="cpu, cuda, cuda:N or auto. Default: cpu for the runs that predict in NumPy (fasttext-bag, kim-cnn, spe-cnn), "
                                         "else the run's own, or cpu when it is a GPU this machine lacks."),
):
    """Classify texts; writes JSON Lines: text (task), label (labels for multi-label) and class probabilities."""
    _check_threads(threads)
    _limit_threads(threads)  # before numpy, torch or tokenizers start their thread pools
    if device is not None:
        check_device(device)
    if texts and input_path is not None:
        raise ConfigError("give texts as arguments or --input FILE, not both")
    source = _PredictInput.of(input_path, input_format, text_columns, delimiter, encoding, task,
                              task_column_of(task_column, no_task_column), given=bool(texts),
                              column_given=task_column is not None or no_task_column)
    if texts:
        texts = _argument_texts(texts)  # before the run loads
    from .predictor import Predictor, check_threshold

    predictor = Predictor.load(run_dir, device=device, threads=threads, note=_note)
    source = source.with_run_task_column(predictor.task_column)
    if threshold is not None:
        if not predictor.multi_label:
            raise ConfigError(f"--threshold applies to multi-label runs; {run_dir} predicts one label per text")
        threshold = check_threshold(threshold, "--threshold")
    if task is not None and not predictor.uses_tasks:
        raise ConfigError(f"--task {task}: {run_dir} was not trained with one head per task; drop --task")
    _check_task_option(task, predictor.task_names, run_dir)
    if texts:
        _write_predictions(predictor, texts, [task] * len(texts), threshold)
        return
    if source.where == "stdin" and _is_terminal(sys.stdin):
        _note(STDIN_HINT.format(what="one JSON object per line" if source.fmt == "jsonl" else "one per line"))
    blocks = _TaskBlocks(source, predictor)
    if source.where != "stdin":
        # A bad record found half-way would leave the predictions before it written: check first.
        for items, tasks, where_of in blocks:
            _check_tasks(predictor, tasks, where_of, source.task_column)
    for items, tasks, where_of in blocks:
        _write_predictions(predictor, items, tasks, threshold, where_of, source.task_column)


class _TaskBlocks:
    """``source.blocks()`` as the run reads them. A run without per-task heads pools the tasks,
    so the tasks a file names (a JSON line's field, a CSV/TSV task column, as the data it was
    trained on may have had) are not read: said once on stderr, and left out of the output."""

    def __init__(self, source: "_PredictInput", predictor):
        self.source, self.predictor, self.said = source, predictor, False

    def __iter__(self):
        for items, tasks, where_of in self.source.blocks():
            if not self.predictor.uses_tasks and any(t is not None for t in tasks):
                if not self.said:
                    first = next(i for i, t in enumerate(tasks) if t is not None)
                    _note(f"{where_of(first)}: the input's tasks are not read: {self.predictor.model} was trained "
                          "with no head per task (one model for all tasks)")
                    self.said = True
                tasks = [None] * len(tasks)
            yield items, tasks, where_of


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # a closed or replaced stdin
        return False


@dataclass(frozen=True)
class _PredictInput:
    """Where ``textcls predict`` reads its texts (a file, or stdin) and how: ``blocks()`` yields
    ``(texts, tasks, where_of)`` about PREDICT_BLOCK_BYTES at a time, ``where_of(i)`` naming the
    i-th text of a block by its file and line (``f.csv:12``)."""

    path: Optional[Path]
    fmt: str
    text_columns: tuple
    delimiter: Optional[str]
    encoding: Optional[str]
    task: Optional[str]
    task_column: Optional[str] = DEFAULT_TASK_COLUMN  # the field or column of a record's task; None: none
    # --task-column or --no-task-column given: a named field the input lacks is refused. Else the
    # run's column (with_run_task_column) is read where the input has it, as the default task is.
    column_given: bool = True

    @property
    def where(self) -> str:
        return "stdin" if self.path is None or str(self.path) == "-" else str(self.path)

    @classmethod
    def of(cls, path, fmt, text_columns, delimiter, encoding, task, task_column, given: bool,
           column_given: bool = True) -> "_PredictInput":
        """The input options checked before the run loads: a format predict reads, and options it uses."""
        from .inputs import PREDICT_FORMATS, READ_ADVICE, check_input_file, format_of_name, refuse_unread_content

        stdin = path is None or str(path) == "-"
        if fmt is not None and fmt not in PREDICT_FORMATS:
            raise ConfigError(f"--format {fmt!r} is not one of {', '.join(PREDICT_FORMATS)}; {READ_ADVICE}")
        if not stdin:
            check_input_file(path)
        fmt = fmt or ("text" if stdin else format_of_name(path))
        source = cls(None if stdin else path, fmt, tuple(text_columns or ()), delimiter, encoding, task, task_column,
                     column_given)
        source._check_options(given)
        if not stdin:
            refuse_unread_content(path, _file_head(path), fmt)
        return source

    def _check_options(self, given: bool) -> None:
        task_flag = {None: "--no-task-column", DEFAULT_TASK_COLUMN: None}.get(self.task_column, "--task-column")
        # --encoding applies to every format read from a file or stdin; the first three to some.
        used = {"--text-column": self.text_columns, "--delimiter": self.delimiter, task_flag: task_flag is not None,
                "--encoding": self.encoding, "--format": self.fmt in ("csv", "tsv")}
        for flag, value in used.items():
            if value and given:
                raise ConfigError(f"{flag}{' ' + self.fmt if flag == '--format' else ''} applies to --input files; "
                                  f"texts given as arguments are one text each: drop {flag}")
        for flag, value in list(used.items())[:3]:
            if not value:
                continue
            takes = ("csv", "tsv", "jsonl") if flag in ("--text-column", task_flag) else ("csv", "tsv")
            if self.fmt not in takes:
                # CSV/TSV is read from a file only (refused below from stdin): advise what works.
                instead = (f"--format {takes[0]}" if self.where != "stdin" else "--format jsonl" if "jsonl" in takes
                           else "--input FILE.csv (a CSV/TSV file, not stdin)")
                raise ConfigError(f"{flag} applies to {', '.join(takes)} input, and {self.where} is read as "
                                  f"{self.fmt}: drop {flag}, or pass {instead}")
        if self.fmt in ("csv", "tsv") and self.where == "stdin":
            raise ConfigError(f"--format {self.fmt} reads a file (it is read twice: checked, then predicted); "
                              f"pass --input FILE.{self.fmt}")
        if self.delimiter is not None or self.encoding is not None:
            from .data.readers import ReadOptions  # its checks of a delimiter and an encoding

            try:
                ReadOptions(delimiter=self.delimiter, encoding=self.encoding)
            except ConfigError as exc:
                raise ConfigError(str(exc).replace("parameter 'delimiter' = ", "--delimiter ")
                                  .replace("parameter 'encoding' = ", "--encoding ")) from None

    def with_run_task_column(self, run_column: Optional[str]) -> "_PredictInput":
        """Read the tasks from the run's own task column (``Predictor.task_column``) when neither
        --task-column nor --no-task-column was given, as evaluate does."""
        if self.column_given or run_column == DEFAULT_TASK_COLUMN:
            return self
        return dataclasses.replace(self, task_column=run_column)

    def blocks(self):
        from .inputs import refuse_unread_content

        if self.fmt in ("csv", "tsv"):
            yield from _delimited_blocks(self)
            return
        for block, first, where in _input_blocks(self.path, self.encoding):
            if first == 1 and self.where == "stdin":  # a file's head was checked by of()
                refuse_unread_content(where, block[:8], self.fmt)
            items, tasks = _block_items(block, first, where, self.fmt, self.task, self.text_columns or ("text",),
                                        self.task_column, self.column_given)
            yield items, tasks, _text_namer(where, first)


def _file_head(path: Path) -> bytes:
    from .inputs import file_head

    try:
        return file_head(path)
    except OSError as exc:
        raise DataError(describe_os_error(exc, path)) from None


def _delimited_blocks(source: _PredictInput):
    """The records of a CSV/TSV file with a header row, PREDICT_BLOCK_BYTES of text at a time:
    ``(texts, tasks, where_of)``, a record's task that of its ``task`` cell, else --task. The file is read by data/readers.py's ``iter_text_column``, the
    training reader's own code for lines, quoting, encoding and their errors."""
    from .data.readers import iter_text_column

    records = iter_text_column(source.path, fmt=source.fmt, text_columns=source.text_columns or ("text",),
                               delimiter=source.delimiter, encoding=source.encoding or "utf-8",
                               task_column=source.task_column, task_column_required=source.column_given)
    batch, tasks, lines, size = [], [], [], 0
    for lineno, text, task in records:
        batch.append(text)
        tasks.append(task if task is not None else source.task)  # a row's own task wins, as a JSON line's
        lines.append(lineno)
        size += len(text)
        if size >= PREDICT_BLOCK_BYTES:
            yield batch, tasks, _line_namer(source.where, lines)
            batch, tasks, lines, size = [], [], [], 0
    if batch:
        yield batch, tasks, _line_namer(source.where, lines)


def _line_namer(where: str, lines: list):
    return lambda i: f"{where}:{lines[i]}"


def _argument_texts(texts: List[str]) -> List[str]:
    """Texts given as command-line arguments, checked and numbered from 1 as a user counts them
    (the Python and HTTP APIs name a text by its list index): non-blank, and no byte that was not
    UTF-8 (Python keeps such a byte of argv as a lone surrogate, which no tokenizer takes)."""
    from .inputs import check_texts

    texts = check_texts(list(texts), first=1)
    _refuse_unencodable(texts, _text_namer(None, 1), from_argv=True)
    return texts


def _refuse_unencodable(texts: list, where_of, from_argv: bool) -> None:
    """A DataError at the first text holding a lone surrogate, named by ``where_of(i)``: from argv, a
    byte that was not UTF-8 (Python's surrogateescape); from a JSON line, a lone-surrogate escape such as ``\\udc80``."""
    surrogate = find_lone_surrogate(texts)
    if surrogate is None:
        return
    i, at, char = surrogate
    code, place = ord(char), f"at character {at + 1}"
    if from_argv and 0xDC80 <= code <= 0xDCFF:
        problem = (f"holds byte {code - 0xDC00:#04x} {place}, which is not UTF-8; pass UTF-8 text "
                   "(e.g. convert it with iconv -f latin1 -t utf-8)")
    else:
        problem = (f"holds a lone surrogate {char!r} {place}, which is not valid Unicode; "
                   "remove it or write the character (or its escape pair) instead")
    raise DataError(f"{where_of(i)} {problem}" if from_argv else f"{where_of(i)}: {problem}", index=i)


def _check_task_option(task: Optional[str], task_names, run_dir: Path) -> None:
    """``--task`` names one of the run's tasks (checked once, not as the task of every text)."""
    if task is not None and task_names and task not in task_names:
        raise ConfigError(f"--task {task}: {run_dir} was not trained on that task; give one of: "
                          f"{', '.join(task_names)}")


def _block_items(block: bytes, first: int, where: str, fmt: str, task: Optional[str], fields: tuple = ("text",),
                 task_field: Optional[str] = DEFAULT_TASK_COLUMN, named: bool = True) -> tuple[list, list]:
    """The texts (or JSON Lines items, their text in ``fields``) of one block of the input and their
    tasks: a line's own (its ``task_field``; None: none is read), else ``task`` (--task; None: not given).
    ``named``: --task-column named ``task_field``, which the first line must then have."""
    lines = read_texts(block, where, first_line=first)
    if fmt != "jsonl":
        return lines, [task] * len(lines)
    texts, tasks = _jsonl_items(lines, where, first, fields, task_field, named)
    _refuse_unencodable(texts, _text_namer(where, first), from_argv=False)  # a JSON escape of a lone surrogate ("\\udc80")
    return texts, [t if t is not None else task for t in tasks]


def _text_namer(where: Optional[str], first: int):
    """How an error names the i-th text of a block: by its number among the arguments (``where``
    None: ``text 2``), or by its line in the file or stdin ``where`` (one text a line: ``f.txt:2``)."""
    return (lambda i: f"text {first + i}") if where is None else (lambda i: f"{where}:{first + i}")


def _check_tasks(predictor, tasks: list, where_of, task_field: Optional[str] = DEFAULT_TASK_COLUMN) -> None:
    """Every text has a task the run was trained on, where it has one head per task (a run
    without them is given none: ``--task`` is refused, a file's tasks are not read); a text is
    named by ``where_of(i)``, its task read from the field or column ``task_field``. Run on a
    file's every block before the first prediction is written, so that a bad task on a late line
    leaves no output half-way."""
    if predictor.uses_tasks:
        hint = run_task_column_hint(predictor.task_column, task_field, predictor.run_dir)
        missing = next((i for i, t in enumerate(tasks) if t is None), None)
        if missing is not None:
            raise ConfigError(f"{where_of(missing)}: no task; {predictor.model} has one head per task "
                              f"({', '.join(predictor.task_names)}): pass --task NAME, "
                              f"{task_source_advice(task_field)}{hint}")
        unknown = next((i for i, t in enumerate(tasks) if t not in predictor.task_names), None)
        if unknown is not None:
            raise UnknownTaskError(f"{where_of(unknown)}: task {tasks[unknown]!r} is not one {predictor.model} was "
                                   f"trained on; give one of: {', '.join(predictor.task_names)}{hint}")


def task_source_advice(task_field: Optional[str]) -> str:
    """Where records name their task, read from ``task_field`` (--task-column; None: none is read)."""
    if task_field is None:
        return "or read each record's task with --task-column NAME (--no-task-column reads none)"
    if task_field == DEFAULT_TASK_COLUMN:  # found in any case in a header
        return "a \"task\" field per JSON line or a task column of a CSV/TSV file"
    return f"a {json.dumps(task_field)} field per JSON line or a {task_field!r} column of a CSV/TSV file"


def run_task_column_hint(run_column: Optional[str], used: Optional[str], run_dir) -> str:
    """"; RUN read its tasks from 'domain': pass --task-column domain" where a run trained with a
    task column other than the default is given data read with another one; else ""."""
    if run_column in (used, None, DEFAULT_TASK_COLUMN):
        return ""
    return f"; {run_dir} read its tasks from {run_column!r}: pass --task-column {run_column}"


def _limit_threads(threads: int) -> None:
    """Give every library ``threads`` CPU threads (their pools read these when they start)."""
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS"):
        os.environ[name] = str(threads)
    os.environ["TOKENIZERS_PARALLELISM"] = "true" if threads > 1 else "false"
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)


def _input_blocks(path: Optional[Path], encoding: Optional[str] = None):
    """``(bytes of whole lines, number of the first, where)`` about PREDICT_BLOCK_BYTES at a time, from
    ``path`` or stdin (None or '-'). A block ends after a newline (or a CR not at its very end, which
    may be half of a CRLF), so a line is never cut and UTF-8 characters stay whole. Input in another
    ``encoding`` (--encoding) is transcoded to UTF-8 as it is read, so that its lines are cut,
    checked and numbered as UTF-8's are."""
    import codecs

    where = "stdin" if path is None or str(path) == "-" else str(path)
    with contextlib.ExitStack() as stack:
        if where == "stdin":
            stream = getattr(sys.stdin, "buffer", None) or io.BytesIO(sys.stdin.read().encode("utf-8"))
        else:
            stream = stack.enter_context(open(path, "rb"))
        # Another encoding is decoded as it is read (a character may span two reads) and re-encoded.
        decoder = (codecs.getincrementaldecoder(encoding)() if encoding is not None
                   and codecs.lookup(encoding).name != "utf-8" else None)
        carry, first = b"", 1
        while True:
            raw = stream.read(PREDICT_BLOCK_BYTES)
            data = raw
            if decoder is not None:
                try:
                    data = decoder.decode(raw, final=not raw).encode("utf-8", "surrogatepass")
                except UnicodeDecodeError as exc:
                    raise DataError(_undecodable(exc, where, encoding, first, carry, at_end=not raw)) from None
            if not raw:
                break
            data = carry + data
            cut = data.rfind(b"\n") + 1 or data.rfind(b"\r", 0, len(data) - 1) + 1
            block, carry = data[:cut], data[cut:]
            if block:
                yield block, first, where
                first += block.count(b"\n") + block.count(b"\r") - block.count(b"\r\n")
        if carry:
            yield carry, first, where


def _undecodable(exc: UnicodeDecodeError, where: str, encoding: str, first: int, carry: bytes,
                 at_end: bool) -> str:
    """The line and column of the byte ``exc`` (raised decoding input in ``encoding``) stopped at:
    ``first`` is the number of the line ``carry`` (decoded, in UTF-8, not yet yielded) begins, and
    ``exc.object`` the bytes after it; ``at_end``: the input ended inside a character."""
    before = carry.decode("utf-8", "surrogatepass") + exc.object[:exc.start].decode(encoding, errors="replace")
    line, column = first + before.count("\n"), len(before) - before.rfind("\n")
    if at_end:
        return (f"{where}:{line}: the input ends in the middle of a {encoding} character (column {column}): it is "
                f"cut short, or not {encoding}; pass its own encoding with --encoding")
    return (f"{where}:{line}: byte {exc.object[exc.start]:#04x} at column {column} is not {encoding} "
            f"({exc.reason}); pass the input's own encoding with --encoding, or convert it to UTF-8")


def _jsonl_items(lines: List[str], where: str, first: int, fields: tuple = ("text",),
                 task_field: Optional[str] = DEFAULT_TASK_COLUMN, named: bool = True) -> tuple[list, list]:
    """The texts and tasks (None where a line has none) of JSON Lines ``{"text": ..., "task": ...}``; the
    text is the string field ``fields`` names (--text-column), or those of them a line has, joined
    with a space as train joins them; the task the field ``task_field`` (--task-column; None: no task
    is read, --no-task-column)."""
    from .inputs import check_texts

    texts, tasks = [], []
    for number, line in enumerate(lines, first):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{where}:{number}: not valid JSON ({exc.msg}); write one JSON object per line, "
                            "e.g. {\"text\": \"...\"}") from None
        text = _jsonl_text(record, fields, f"{where}:{number}")
        if number == 1 and named and task_field not in (None, DEFAULT_TASK_COLUMN):
            _check_task_field(record, where, fields, task_field)
        task = record.get(task_field) if task_field is not None and isinstance(record, dict) else None
        if not isinstance(task, (str, type(None))):
            raise DataError(f"{where}:{number}: field {json.dumps(task_field)} is {type(task).__name__}, not a task "
                            "name; write the task's name as a string, or pass --no-task-column if the field is not "
                            "a task")
        check_texts([text], f"{where}:{number}", first=None)  # the line names it: no "text N" besides
        # A \u0000 escape is a character the model reads like any other, as Classifier.predict and
        # POST /predict take it (a NUL *byte* in the file is refused by read_texts: a damaged file).
        texts.append(text)
        # Trimmed, and a blank one is none (--task's), as the training reader and a CSV cell read it.
        tasks.append((task.strip() or None) if isinstance(task, str) else task)
    return texts, tasks


def _check_task_field(record: dict, where: str, fields: tuple, task_field: str) -> None:
    """The first line of a JSON Lines input decides its fields, as train's reader reads them: a field
    --task-column names must be one of them, and not the text."""
    from .inputs import check_named_task_column

    check_named_task_column(f"{where}:1", task_field, list(record), {f: "the text" for f in fields},
                            "pass --task-column NAME naming the field of each record's task, or --no-task-column "
                            "to read no task", kind="field", first_record=True)


def _jsonl_text(record, fields: tuple, where: str) -> str:
    """A JSON line's text: its string field ``fields[0]``, or the fields of ``fields`` it has joined."""
    present = [record.get(f) for f in fields] if isinstance(record, dict) else []
    bad = next((f for f, v in zip(fields, present) if v is not None and not isinstance(v, str)), None)
    if bad is not None:
        raise DataError(f"{where}: field {bad!r} is {type(record[bad]).__name__}, not text; make it a string, or "
                        "name the text field with --text-column NAME")
    if not any(isinstance(v, str) for v in present):
        named = " or ".join(f'"{f}"' for f in fields)
        fields_shown = f" (its fields: {', '.join(map(str, record)) or 'none'})" if isinstance(record, dict) else ""
        raise DataError(f"{where}: a JSON line needs a string field {named}{fields_shown}; write one "
                        f"{{\"{fields[0]}\": \"...\", \"task\": \"...\"}} object per line, or name the text "
                        "field with --text-column NAME")
    return " ".join(v for v in present if isinstance(v, str) and v.strip()) if len(fields) > 1 else present[0]


def _write_predictions(predictor, texts: list, tasks: list, threshold, where_of=None,
                       task_field: Optional[str] = DEFAULT_TASK_COLUMN) -> None:
    """Predict ``texts`` and write one JSON line each. An error about one text names it by
    ``where_of(i)``, its place in the input (``f.txt:3``); None: the texts are the arguments, named
    by their number among them (from 1). A label is written as the run's class value: a number for a
    run fitted in Python with int labels (Classifier.predict's 3, not "3")."""
    if not texts:
        return
    texts_are_arguments = where_of is None
    where_of = where_of or _text_namer(None, 1)
    _check_tasks(predictor, tasks, where_of, task_field)
    try:
        # A line of a file is one text: its message gives no number of its own, the line names it.
        probs = predictor.predict_proba(texts, tasks if predictor.uses_tasks else None,
                                        first=1 if texts_are_arguments else None)
    except TextclsError as exc:
        if exc.index is None or texts_are_arguments:
            raise  # its message already says "text i"
        raise type(exc)(f"{where_of(exc.index)}: {exc}") from None
    names, labels = predictor.label_names, predictor.labels(probs, threshold)
    value = dict(zip(names, predictor.classes_.tolist()))  # the run's class value of each name
    key = "labels" if predictor.multi_label else "label"
    out = []
    for text, task, label, row in zip(texts, tasks, labels, probs.tolist()):
        label = [value[n] for n in label] if predictor.multi_label else value[label]
        record = {"text": text, **({"task": task} if task is not None else {}), key: label,
                  "probabilities": {n: round(p, 6) for n, p in zip(names, row)}}
        out.append(json.dumps(record, ensure_ascii=False))
    sys.stdout.write("\n".join(out) + "\n")
    sys.stdout.flush()


def read_texts(data: bytes, where: str, first_line: int = 1) -> List[str]:
    """One text per line of UTF-8 ``data`` (``where``: the file, or ``stdin``, for messages;
    ``first_line``: the number of its first line, when ``data`` is a block of a longer input).
    CRLF and CR end lines too; the newline that ends the last line is not a text."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + first_line
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise DataError(f"{where}:{line}: byte {data[exc.start]:#04x} at column {column} is not UTF-8; pass "
                        "its encoding (e.g. --encoding latin-1), or convert the text to UTF-8 first (e.g. "
                        "iconv -f latin1 -t utf-8)") from None
    if first_line == 1:
        text = text.removeprefix("\ufeff")
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, first_line):
        if "\x00" in line:
            from .data.readers import nul_byte_problem  # only here: it imports datasets (a second)

            reason, fix = nul_byte_problem(line.index("\x00") + 1, stream=where == "stdin")
            raise DataError(f"{where}:{number}: {reason}; {fix}")
        if not line.strip():
            raise DataError(f"{where}:{number}: blank line; a model cannot classify an empty text: remove the line")
    return lines


@app.command("list-models")
def list_models_cmd():
    """List the registered presets; the vectors column names a preset's pretrained word vectors
    (--embeddings glove-6b-50d, minilm-static, word2vec or a file replaces a neural preset's;
    static-lr's are fixed, its parameter 'vectors'), '-' for none."""
    from .models.registry import get_preset, list_models

    for name in list_models():
        preset = get_preset(name)
        vectors = preset.inputs.get("embeddings") or preset.arch.get("vectors") or "-"
        typer.echo(f"{name:36s} {preset.kind:8s} {vectors:13s} {preset.description}")


@app.command("list-datasets")
def list_datasets_cmd():
    """List the named datasets and whether a local copy is found."""
    from .data import list_datasets

    for info in list_datasets():
        # local: a complete local copy; part: its folder lacks files (loading names them);
        # hub: read from the Hugging Face hub; none: neither (download it into the data directory).
        source = "local" if info.local else "part" if info.missing else "hub" if info.hub_id else "none"
        lacks = f" [local copy lacks {', '.join(info.missing[:3])}{', ...' if len(info.missing) > 3 else ''}]"
        typer.echo(f"{info.name:28s} {info.classes:>3} classes  {source:5s}  {info.description}"
                   + (lacks if info.missing else ""))


@app.command()
def benchmark(
    suite: Optional[str] = typer.Option(None, "--suite", "-s", help="Suite name (benchmarks/suites/<name>.toml) or a .toml file."),
    output_dir: Optional[Path] = typer.Option(
        None, "--output-dir",
        help="Where <suite>.json, .md and .png go. Default: a fresh runs/benchmarks/<suite>_<time>/; "
             "the committed results are rewritten only with --output-dir benchmarks/results."),
    only: List[str] = typer.Option([], "--only", help="Run only the entries of this model, dataset or entry id (repeatable)."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Folder of the named datasets (default: $TEXTCLS_DATA_DIR)."),
    threads: Optional[int] = typer.Option(None, "--threads", help="Torch/BLAS threads per run (default: every available CPU)."),
    progress: bool = typer.Option(True, help="Print one line per run on stderr."),
    merge: bool = typer.Option(False, help="With --only and --output-dir: put the rerun entries into the suite's full report there (recorded as a rerun)."),
    render: bool = typer.Option(False, "--render", help="Run nothing: rewrite <suite>.md and .png from the <suite>.json in --output-dir (its complete flag from the suite file)."),
    seeds: List[int] = typer.Option([], "--seed", help="Run only this seed of each chosen entry (repeatable); with --merge it fills in that seed's run."),
    device: str = typer.Option("cpu", "--device", help="Where the neural models train and predict: cpu or cuda (every run records it)."),
    checkpoint_dir: Optional[Path] = typer.Option(
        None, "--checkpoint-dir",
        help="Checkpoint every epoch of each neural run into a folder per entry and seed here, and resume a run "
             "cut off from its last epoch (the run records it, with the commit and machine that made the "
             "checkpointed epochs); a run's folder is removed when it succeeds."),
    merge_from: List[Path] = typer.Option([], "--merge-from", help="Run nothing: merge these reports (JSON files or folders of them, e.g. one per --only/--seed run) into the suite's report in --output-dir."),
    verdicts: bool = typer.Option(False, "--verdicts", help="Run nothing: test every claim of benchmarks/claims.toml against "
                                  "the JSON in --output-dir (default benchmarks/results) and write REPRODUCTION.md beside that folder."),
):
    """Run a benchmark suite: textcls models and peers side by side on the same splits."""
    from .benchmark import render_report, run_suite
    from .benchmark.report import format_tables
    from .benchmark.runner import fresh_output_dir

    run_options = {"--only": only, "--merge": merge, "--render": render, "--seed": seeds, "--threads": threads,
                   "--checkpoint-dir": checkpoint_dir, "--data-dir": data_dir, "--device": device != "cpu"}
    if verdicts:
        _refuse_options("--verdicts reads every suite's committed JSON and runs nothing",
                        {"--suite": suite, "--merge-from": merge_from, **run_options})
        _write_verdicts(output_dir or Path("benchmarks/results"))
        return
    if merge_from:
        _refuse_options("--merge-from merges finished runs and runs nothing", run_options)
        _merge_from(merge_from, output_dir, suite)
        return
    if suite is None:
        raise ConfigError("--suite is required (or pass --verdicts); textcls benchmark --help lists the options")
    _check_threads(threads)
    check_device(device)
    if render:
        if only or merge:
            raise ConfigError("--render rewrites the whole report from its JSON; drop --only and --merge")
        if output_dir is None:
            raise ConfigError("--render rewrites an existing report, so it needs --output-dir: the folder holding "
                              "<suite>.json (e.g. --output-dir benchmarks/results)")
        files = render_report(suite, output_dir=output_dir)["files"]
        typer.echo(f"wrote {files['markdown']} and {files['plot']} from {files['json']}")
        return
    if merge and output_dir is None:
        raise ConfigError("--merge puts the rerun into an existing full report, so it needs --output-dir: the "
                          "folder holding <suite>.json (e.g. --output-dir benchmarks/results)")
    if output_dir is None:
        output_dir = fresh_output_dir(suite)
    result = run_suite(suite, output_dir=output_dir, data_dir=data_dir, only=list(only) or None,
                       progress=progress, threads=threads, merge=merge, seeds=list(seeds) or None, device=device,
                       checkpoint_dir=checkpoint_dir)
    typer.echo(format_tables(result))
    files = result["files"]
    typer.echo(f"wrote {files['json']}, {files['markdown']} and {files['plot']}")
    if result["failed"]:
        typer.echo(f"error: {result['failed']} entr{'y' if result['failed'] == 1 else 'ies'} failed: "
                   f"{', '.join(result['failed_entries'])} (errors in {files['markdown']})", err=True)
        raise typer.Exit(1)


def _write_verdicts(results_dir: Path) -> None:
    """``benchmark --verdicts``: REPRODUCTION.md beside ``results_dir`` from the claims there."""
    from .benchmark.gaps import FIGURE_LINK
    from .benchmark.reproduction import write_reproduction
    from .benchmark.verdicts import README_MARKERS

    if not results_dir.is_dir():
        raise ConfigError(f"{results_dir}: no such folder of benchmark results; pass --output-dir with the folder holding <suite>.json")
    claims, diagnoses = _verdict_inputs(results_dir)
    # The README's verdict table is the project's: only its own benchmarks/results rewrite it, and only
    # a README that holds the table's markers (the message said so of a README that was not there).
    readme = results_dir.parent.parent / "README.md" if results_dir.parent.name == "benchmarks" else None
    if readme is not None and not (readme.is_file() and all(m in readme.read_text(encoding="utf-8", errors="replace")
                                                             for m in README_MARKERS)):
        readme = None
    figure = results_dir.parent / FIGURE_LINK
    path = write_reproduction(results_dir=results_dir, out=results_dir.parent / "REPRODUCTION.md", claims=claims,
                              readme=readme, diagnoses=diagnoses, figure=figure)
    typer.echo(f"wrote {path}, {figure}" + (f" and the verdict table of {readme}" if readme else ""))


def _verdict_inputs(results_dir: Path) -> tuple:
    """(claims.toml, diagnoses.toml or [] for none) that ``--verdicts`` tests ``results_dir`` against."""
    from .benchmark.verdicts import packaged_claims_path

    beside = results_dir.parent
    if (beside / "claims.toml").is_file():
        diagnoses = beside / "diagnoses.toml"
        return beside / "claims.toml", diagnoses if diagnoses.is_file() else []
    # Decision: the claims are read from beside the results folder, where the suites are read and
    # REPRODUCTION.md is written; the working directory's benchmarks/claims.toml was read instead, or
    # silently this checkout's when that was absent, so another folder's page tested textcls's claims
    # without a word. Without one there, textcls's own claims of the papers are still what a user who
    # ran its suites into another folder wants tested, so they are, said in one line on stderr; an
    # installed package without them refuses, saying what to do.
    packaged = packaged_claims_path()
    if not packaged.is_file():
        raise ConfigError(f"{beside / 'claims.toml'}: no such file, and this install of textcls has no claims of its "
                          f"own; write the claims to test there (the format of benchmarks/claims.toml in textcls's "
                          f"repository), or pass --output-dir with a results folder that has claims.toml beside it")
    _note(f"note: {beside} has no claims.toml; testing textcls's own claims of the papers, {packaged}")
    return packaged, packaged.parent / "diagnoses.toml"


def _refuse_options(mode: str, options: dict) -> None:
    """A mode of ``benchmark`` that ignores some options refuses them, naming the first one given."""
    given = next((name for name, value in options.items() if value), None)
    if given is not None:
        raise ConfigError(f"{mode}; drop {given}")


def _merge_from(paths: List[Path], output_dir: Optional[Path], suite: Optional[str] = None) -> None:
    from .benchmark.runner import merge_run_files

    if output_dir is None:
        raise ConfigError("--merge-from needs --output-dir: the folder holding (or to hold) <suite>.json, "
                          "e.g. --output-dir benchmarks/results")
    missing = [p for p in paths if not p.exists()]
    if missing:
        raise ConfigError(f"--merge-from {missing[0]}: no such file or folder")
    full = merge_run_files(paths, output_dir, suite=suite)
    count, skipped = len(full["entries"]), full["skipped_parts"]
    if not full["merged_parts"]:
        typer.echo(f"nothing new: {full['files']['json']} already holds the runs of all {skipped} report(s), "
                   "or newer ones")
        return
    typer.echo(f"merged {full['merged_parts']} report(s) into {full['files']['json']} "
               f"({count} entr{'y' if count == 1 else 'ies'})"
               + (f"; {skipped} with no run newer than the report's or another one given" if skipped else ""))


@app.command()
def speed(
    ctx: typer.Context,
    models: List[str] = typer.Option([], "--model", "-m", help="Preset to time (repeatable); ratios are to the first. "
                                     "With --predict: default one preset per family."),
    lengths: List[int] = typer.Option([256], "--length", "-l", help="Tokens per document (repeatable)."),
    output: str = typer.Option(..., "--output", "-o", help="Path stem: writes <stem>.json, <stem>.md (and <stem>.png with 2+ lengths); "
                               "a folder that exists, or a path ending in /: <folder>/speed.* (predict_speed.* with --predict)."),
    batch_size: int = typer.Option(32, "--batch-size", "-b"),
    steps: int = typer.Option(5, help="Timed training steps per (model, length); the median is reported."),
    warmup: int = typer.Option(2, help="Untimed steps first."),
    repeats: int = typer.Option(1, "--repeats", help="Rounds: each times every (model, length) again in a fresh "
                                "process, the models' order rotated; the speed verdicts test over rounds (2+), "
                                "since the steps of one process are not reruns."),
    threads: Optional[int] = typer.Option(None, "--threads", help="Torch threads (default: every available CPU; 1 with --predict)."),
    sentence_length: Optional[int] = typer.Option(None, help="Words per sentence for hierarchical presets (default 25; "
                                                  "refused where none is timed)."),
    vocab_size: int = typer.Option(20_000, help="Vocabulary size (a fine-tuned embedding table's update cost grows with it)."),
    num_classes: int = typer.Option(4, help="Number of classes."),
    sets: List[str] = typer.Option([], "--set", help="MODEL:KEY=VALUE preset override, e.g. hcan:d_model=64 (repeatable)."),
    timeout: float = typer.Option(900.0, help="Seconds allowed per (model, length) before it is recorded as failed."),
    predict_mode: bool = typer.Option(False, "--predict", help="Time end-to-end prediction instead (raw texts in, labels "
                                      "out) beside fastText and scikit-learn TF-IDF + LR, trained on --data (docs/speed.md)."),
    data: str = typer.Option("mr", "--data", "-d", help="With --predict: the dataset the models train and predict on."),
    docs: int = typer.Option(20_000, "--docs", help="With --predict: documents in the throughput call."),
    calls: int = typer.Option(1_000, "--calls", help="With --predict: single-document calls for the latency (at least 1,000)."),
    rounds: int = typer.Option(3, "--rounds", help="With --predict: interleaved rounds over all the models."),
    epochs: int = typer.Option(1, "--epochs", help="With --predict: training epochs of the textcls presets."),
):
    """Time presets at a fixed batch size and length on synthetic batches (training and inference ms, peak memory);
    with --predict, end-to-end prediction on real text beside fastText and scikit-learn."""
    _refuse_options_of_the_other_mode(ctx, predict_mode)
    _check_threads(threads)
    from .benchmark.speed import report_stem

    # A str, not a Path, which would drop the trailing slash of a folder to make (report_stem).
    check_folder_path("--output", report_stem(output, "speed", ()).parent)  # before the timing, which takes minutes
    command = "textcls speed " + " ".join(shlex.quote(a) for a in sys.argv[2:]) if len(sys.argv) > 2 else None
    if predict_mode:
        _limit_threads(threads or 1)
        from .benchmark.predict_speed import format_predict_markdown, run_predict_speed, write_predict_report

        result = run_predict_speed(list(models) or None, data=data, docs=docs, calls=calls, rounds=rounds,
                                   epochs=epochs, threads=threads or 1, progress=_note)
        files = write_predict_report(result, output, command)
        typer.echo(format_predict_markdown(result, command))
        typer.echo("wrote " + ", ".join(str(p) for p in files.values()))
        return
    if not models:
        raise ConfigError("--model is required (repeatable), or pass --predict")
    from .benchmark.speed import format_speed_markdown, parse_overrides, run_speed, write_speed_report

    result = run_speed(list(models), list(lengths), batch_size=batch_size, steps=steps, warmup=warmup,
                       repeats=repeats, threads=threads, sentence_length=sentence_length,
                       overrides=parse_overrides(list(sets)), vocab_size=vocab_size, num_classes=num_classes,
                       timeout=timeout)
    files = write_speed_report(result, output, command)
    typer.echo(format_speed_markdown(result, command))
    typer.echo("wrote " + ", ".join(str(p) for p in files.values()))
    failed = [f"{r['model']}@{r['length']}" for r in result["rows"] if r["status"] != "ok"]
    if failed:
        typer.echo(f"error: {len(failed)} measurement(s) failed: {', '.join(failed)}", err=True)
        raise typer.Exit(1)


# `textcls speed`'s options that only one of its two modes reads: the other would ignore them without a word.
_PREDICT_SPEED_ONLY = ("data", "docs", "calls", "rounds", "epochs")
_TRAIN_SPEED_ONLY = ("lengths", "batch_size", "steps", "warmup", "repeats", "sentence_length", "vocab_size",
                     "num_classes", "sets", "timeout")


def _refuse_options_of_the_other_mode(ctx: typer.Context, predict_mode: bool) -> None:
    ignored = _TRAIN_SPEED_ONLY if predict_mode else _PREDICT_SPEED_ONLY
    given = next((p for p in ctx.command.params if p.name in ignored
                  and ctx.get_parameter_source(p.name).name != "DEFAULT"), None)
    if given is None:
        return
    flag = max(given.opts, key=len)
    if predict_mode:
        raise ConfigError(f"{flag} applies only without --predict (the timing of training batches); drop {flag}, "
                          "or drop --predict")
    raise ConfigError(f"{flag} applies only with --predict (end-to-end prediction); add --predict, or drop {flag}")


def _check_threads(threads: Optional[int]) -> None:
    if threads is not None and threads < 1:
        raise ConfigError(f"--threads {threads}: must be at least 1 (or leave it out for the default)")




@app.command()
def serve(
    run: Path = typer.Argument(..., help="Run directory to serve (made by `textcls train`)."),
    host: str = typer.Option("127.0.0.1", help="Address to bind (0.0.0.0 to accept other machines)."),
    port: int = typer.Option(8000, help="Port to listen on."),
    workers: int = typer.Option(1, help="Worker processes; each loads the model and runs one torch thread."),
    max_texts: int = typer.Option(64, "--max-texts", help="Texts per request at most."),
    max_text_bytes: int = typer.Option(50_000, "--max-text-bytes", help="UTF-8 bytes per text at most."),
    max_body_bytes: int = typer.Option(4 << 20, "--max-body-bytes", help="Bytes per request body at most "
                                       "(the JSON of all its texts; at least --max-text-bytes)."),
    batch_window_ms: float = typer.Option(2.0, "--batch-window-ms",
                                          help="How long to gather concurrent requests into one model call (0: no wait)."),
):
    """Serve a trained run over HTTP: POST /predict, POST /explain, GET /health, GET /metadata (docs/serve.md)."""
    # Defaults mirror textcls.serve's DEFAULT_* constants; importing it here would slow `textcls --help`.
    from .serve import run_server

    run_server(run, host=host, port=port, workers=workers, max_texts=max_texts,
               max_text_bytes=max_text_bytes, max_body_bytes=max_body_bytes, batch_window_ms=batch_window_ms)


@app.command("export")
def export_cmd(
    run_dir: Path = typer.Argument(..., help="A run directory made by textcls train."),
    fmt: str = typer.Option("onnx", "--format", help="Export format (onnx)."),
    quantize: Optional[str] = typer.Option(
        None, "--quantize", help="int8: onnxruntime dynamic int8 weights (weights about 4x smaller; probabilities "
                                 "moved by 3e-4 to 4e-2 on the models of docs/export.md: check accuracy on your dev set)."),
    output: Path = typer.Option(..., "--output", "-o", help="Folder that receives model.onnx, onnx.json and tokenizer.json."),
    opset: int = typer.Option(17, help="ONNX opset (14-21)."),
):
    """Export a trained run to ONNX; predict with textcls.onnx_predictor.OnnxClassifier (no PyTorch)."""
    if fmt != "onnx":
        raise ConfigError(f"--format {fmt!r} is not supported; the only format is onnx")
    if quantize not in (None, "int8"):
        raise ConfigError(f"--quantize {quantize!r} is not one of: int8")
    from .export import export_onnx, read_sidecar

    path = export_onnx(run_dir, output, quantize=quantize, opset=opset)
    side = read_sidecar(output)
    # What was written, from onnx.json, not --quantize: a run quantised in Python exports int8 without it.
    # The figure first is the written graph's; the float graph an int8 one was quantised from follows.
    int8 = side["quantize"] == "int8"
    written = side["int8_max_abs_diff" if int8 else "verified_max_abs_diff"]
    typer.echo(f"wrote {path} ({side['onnx_bytes'] / 1024:.0f} KiB{', int8' if int8 else ''}), "
               f"{output / 'onnx.json'} and {output / 'tokenizer.json'}; "
               f"max |onnx - torch| on the check batches {written:.1e}"
               + (f" (the float graph before quantisation: {side['verified_max_abs_diff']:.1e})" if int8 else ""))
    if side["opset"] != opset:  # torch.export's graph: opset 18 at least
        failure = side["exporter"].get("legacy_failure", "")
        typer.echo(f"note: the graph is opset {side['opset']}, not the {opset} asked: the TorchScript exporter "
                   f"failed for this model ({failure.partition(': ')[2] or failure}), and torch.export writes opset "
                   "18 or later; a runtime that stops below it cannot load this graph", err=True)


@app.command()
def explain(
    run_dir: Path = typer.Argument(..., help="A run directory made by textcls train (an attention model)."),
    texts: List[str] = typer.Argument(..., help="Texts to explain."),
    output: Path = typer.Option(Path("explain"), "--output", "-o", help="Folder that receives explain_<i>.html and .png."),
    task: Optional[str] = typer.Option(None, "--task", help="The texts' task, for a model with one head per task."),
):
    """Show which words (and sentences) an attention model weighed: an HTML page and a PNG per text (docs/explain.md)."""
    from .explain import write_explanations

    check_folder_path("--output", output)
    _argument_texts(texts)  # numbered as explain_<i>.html is, and before the run loads
    clf = _load_run(run_dir, None)
    _check_task_option(task, clf.task_names_ if clf.uses_tasks else None, run_dir)
    explanations = clf.explain(list(texts), tasks=[task] * len(texts) if task is not None else None)
    for path in write_explanations(explanations, output):
        typer.echo(str(path))
    for i, item in enumerate(explanations, 1):
        label = item.get("label", ", ".join(item.get("labels", [])))
        _note(f"text {i}: {label} ({max(item['probabilities'].values()):.3f})")


@app.command()
def push(
    run_dir: Path = typer.Argument(..., help="A run directory made by textcls train."),
    repo_id: str = typer.Argument(..., help="Hugging Face hub model repository, owner/name (created when missing)."),
    private: bool = typer.Option(False, "--private", help="Create the repository as private."),
    revision: Optional[str] = typer.Option(None, help="Branch to commit to (default: main)."),
    message: Optional[str] = typer.Option(None, "--message", help="Commit message."),
):
    """Upload a run to the Hugging Face hub with a generated model card (docs/hub.md).

    Log in first (`hf auth login`, or HF_TOKEN); load it with Classifier.from_pretrained("owner/name")."""
    from .model_hub import push_run

    url = push_run(run_dir, repo_id, private=private or None, revision=revision, commit_message=message)
    typer.echo(f"pushed {run_dir} to {repo_id}: {url}")


def main(argv: Optional[List[str]] = None) -> None:
    """Run the command line; every error ends here as one line on stderr and an exit status."""
    code = _run(argv)
    if code:
        sys.exit(code)


def _run(argv: Optional[List[str]]) -> int:
    # The click command is invoked directly, not through app(): click's main turns
    # KeyboardInterrupt into Exit(130) and EOFError into Abort, and, outside standalone mode,
    # returns an Exit's status instead of raising it, so Ctrl-C and `raise typer.Exit(1)`
    # both ended with status 0, and a truncated .gz file read as "interrupted".
    command = typer.main.get_command(app)
    args = sys.argv[1:] if argv is None else list(argv)
    empty = _empty_path_option(command, args)
    if empty is not None:
        return _error(f"{empty} is empty; give a file or folder path (an empty one would mean the working "
                      "directory)", 2)
    try:
        with command.make_context("textcls", args) as ctx:
            command.invoke(ctx)
        return 0
    except typer.Exit as exc:
        return exc.exit_code
    except TextclsError as exc:
        return _error(_with_option_names(str(exc), command, args), exc.exit_code)
    except typer.Abort as exc:
        cause = exc.__cause__ or exc.__context__
        if isinstance(cause, EOFError):
            return _error(_eof_message(cause), 2)
        return _error("interrupted", 130)
    except click_exceptions.ClickException as exc:
        return _error(exc.format_message(), 2)
    except KeyboardInterrupt:
        return _error("interrupted", 130)
    except EOFError as exc:
        return _error(_eof_message(exc), 2)
    except MemoryError as exc:
        return _error(describe_out_of_memory(exc), 2)
    except OSError as exc:
        if exc.errno == errno.EPIPE:  # stdout closed early (| head): nothing to report
            # Python's advice: point stdout at devnull so the flush at exit does not fail again.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1
        return _error(describe_os_error(exc), 2)
    except RuntimeError as exc:
        if is_out_of_memory(exc):
            return _error(describe_out_of_memory(exc), 2)
        raise


def _subcommand(command, args: List[str]):
    name = next((arg for arg in args if not arg.startswith("-")), None)
    return getattr(command, "commands", {}).get(name)


def _empty_path_option(command, args: List[str]) -> Optional[str]:
    """The path option given an empty value (``-o ""``, ``--output=``), if any: click reads it as
    ``Path("")``, the working directory, so ``export -o ""`` wrote its files there. The last of a
    repeated option counts (as in click), and nothing after ``--`` is an option."""
    sub = _subcommand(command, args)
    if sub is None:
        return None
    hints = typing.get_type_hints(inspect.unwrap(sub.callback))
    owner = {opt: param.name for param in sub.params if param.param_type_name == "option"
             and (hints.get(param.name) is Path or Path in typing.get_args(hints.get(param.name)))
             for opt in param.opts}
    given: dict = {}
    i = 0
    while i < len(args) and args[i] != "--":
        flag, equals, value = args[i].partition("=")
        if args[i] in owner and i + 1 < len(args):
            given[owner[args[i]]] = (args[i], args[i + 1])
            i += 2
            continue
        if equals and flag.startswith("--") and flag in owner:
            given[owner[flag]] = (flag, value)
        i += 1
    return next((flag for flag, value in given.values() if value == ""), None)


def _with_option_names(message: str, command, args: List[str]) -> str:
    """The library's checks name a setting as the Python API does (``parameter 'max_texts'``);
    where the user gave it through the command's option, the message names the option too
    (``--max-texts``), since that is what they typed; a short option (``-b 0``, ``-b0``) is named by
    its long form too. A message whose advice already names the option (``(CLI: --delimiter ';')``)
    is left as it is."""
    sub = _subcommand(command, args)
    if sub is None:
        return message
    given = {arg.split("=", 1)[0] if arg.startswith("--") else arg[:2] for arg in args if arg.startswith("-")}
    flags = {param.name: max(param.opts, key=len) for param in sub.params
             if param.param_type_name == "option" and given.intersection(param.opts)}
    named = {name for name, flag in flags.items() if re.search(rf"\(CLI: [^)]*{re.escape(flag)}(?![\w-])", message)}
    return re.sub(r"parameter '(\w+)'", lambda m: f"{m.group(0)} ({flags[m.group(1)]})"
                  if m.group(1) in flags and m.group(1) not in named else m.group(0), message)


def _error(message: str, code: int) -> int:
    typer.echo(f"error: {' '.join(str(message).split())}", err=True)
    return code


def _eof_message(exc: EOFError) -> str:
    return (f"the input ended early ({exc or 'EOFError'}); a compressed (.gz) file is truncated or "
            "corrupt: download or compress it again")


if __name__ == "__main__":
    main()
