"""Run a benchmark suite: every (entry, seed) in its own child process, then aggregate.

A suite is a TOML file (``benchmarks/suites/<name>.toml``)::

    [suite]
    name = "quick"
    description = "..."
    infer_b1 = 200             # documents of the batch-1 inference-speed sample (default 200)

    [dataset_notes]            # optional; shown under each dataset's table
    mr = "no official split: a seeded stratified 90/10 split"

    [defaults]                 # optional; applies to every entry that does not say otherwise
    seeds = [0]
    max_per_split = 2000
    overrides = {}             # merged under each entry's overrides (peers included)
    paper_source = "..."

    [[entry]]
    dataset = "mr"             # or datasets = ["mr", "trec"]: one entry per dataset x model
    model = "kim-cnn-static"   # a registry preset or a peer (fasttext, minilm-lr); or models = [...]
    seeds = [0, 1, 2]
    overrides = {epochs = 5}   # preset overrides, or peer parameters
    max_per_split = 500        # seeded stratified subsample of each split (load_dataset)
    paper = 79.38              # accuracy in %, from the papers (one number, or {mr = 79.38, ...})
    paper_source = "spe_cnn Table 3"  # with paper: where the figure is from; alone: where in the
                               # paper the entry belongs (a plot without values), shown as a footnote
                               # ([defaults]' source goes only to entries with a figure)
    paper_per_task = {books = 88.0, ...}  # multi-task data: the paper's accuracy % per task
    label_view = "..."         # how our labels/splits differ from the paper's (text, or per dataset)
    name = "..."               # optional display name (one model): entry id "<dataset>:<name>"
                               # instead of "<dataset>:<model>", e.g. for a second set of overrides
    test_curve = true          # neural presets: also score test after every epoch, recorded as
                               # the run's test_curve (never used to keep an epoch; a diagnosis
                               # of "the epoch chosen on test" reads it)

Each run happens in a fresh ``spawn`` child so that its peak resident memory is its own
and a crash (or an out-of-memory kill) is recorded as that entry's error while the suite
goes on. Every model of an entry sees the same documents: ``load_dataset`` with the entry's
options, then the dev split carved from train (10 %, stratified, seeded by the run seed)
when the dataset has none; models without epoch selection simply do not use dev.
"""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import json
import math
import multiprocessing
import os
import shlex
import shutil
import sys
import time
import tomllib
import traceback
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

from .. import artifacts
from ..errors import CheckpointError, ConfigError, DataError, TextclsError, close_names
from ..validate import MAX_SEED, check_folder_path, check_int
from . import system

__all__ = ["Entry", "Suite", "load_suite", "find_suite", "list_suites", "run_suite", "fresh_output_dir",
           "SUITES_DIR_ENV", "DEFAULT_OUTPUT_ROOT"]

SUITES_DIR_ENV = "TEXTCLS_SUITES_DIR"
# Where a suite writes when no output folder is named: a fresh folder per invocation, never the
# committed benchmarks/results (running a suite in the repository used to overwrite them).
DEFAULT_OUTPUT_ROOT = Path("runs") / "benchmarks"
# Inference speed is measured on the same documents for every model of a dataset.
INFER_SAMPLE_B1 = 200
INFER_BATCH = 256
INFER_SAMPLE_SEED = 12345

_ENTRY_KEYS = {"dataset", "datasets", "model", "models", "seeds", "overrides", "max_per_split", "paper",
               "paper_source", "paper_per_task", "label_view", "notes", "name", "test_curve"}
_SUITE_KEYS = {"name", "description", "infer_b1"}
_DEFAULT_KEYS = {"seeds", "overrides", "max_per_split", "paper_source"}
# Per-run numbers that are averaged over seeds.
SUMMARY_METRICS = ("accuracy", "macro_f1", "roc_auc_macro", "roc_auc_micro", "best_epoch", "epochs_run",
                   "train_documents", "train_seconds", "epoch_seconds", "train_ms_per_document",
                   "train_docs_per_second", "infer_docs_per_second_b1", "infer_docs_per_second_b256",
                   "peak_rss_mb")


@dataclass
class Entry:
    """One (dataset, model) cell of a suite, with the seeds to run it under."""

    id: str
    dataset: str
    model: str
    seeds: list[int]
    overrides: dict[str, Any] = field(default_factory=dict)
    max_per_split: int | None = None
    paper: float | None = None
    paper_source: str | None = None
    # Multi-task data (FCSR Table 5): the paper's accuracy per task, shown beside ours per task.
    paper_per_task: dict[str, float] | None = None
    label_view: str | None = None
    notes: str | None = None
    # What the tables and the plot call it: the model, or the suite's `name` for this entry.
    name: str | None = None
    # Score test after every epoch too (neural presets): the run's test_curve, read only by
    # diagnoses (benchmarks/diagnoses.toml's epoch_on_test), never to keep an epoch.
    test_curve: bool = False

    def to_dict(self) -> dict:
        fields = asdict(self)
        if not self.test_curve:
            del fields["test_curve"]  # the reports of entries that do not ask for it stay as they were
        return fields


@dataclass
class Suite:
    name: str
    description: str
    path: Path
    entries: list[Entry]
    # A note per dataset (how its split or labels differ from the papers'), shown under its table.
    dataset_notes: dict[str, str] = field(default_factory=dict)
    # Documents of the batch-1 inference-speed sample.
    infer_b1: int = INFER_SAMPLE_B1


# --------------------------------------------------------------------------- suite files


def _suite_dirs() -> list[Path]:
    dirs = []
    if os.environ.get(SUITES_DIR_ENV):
        dirs.append(Path(os.environ[SUITES_DIR_ENV]))
    dirs.append(Path.cwd() / "benchmarks" / "suites")
    # A source checkout: <repo>/src/textcls/benchmark/runner.py -> <repo>/benchmarks/suites.
    dirs.append(Path(__file__).resolve().parents[3] / "benchmarks" / "suites")
    unique = []
    for d in dirs:
        if d not in unique:
            unique.append(d)
    return unique


def list_suites() -> list[str]:
    """Names of the suites found in the suite folders."""
    names = set()
    for d in _suite_dirs():
        if d.is_dir():
            names.update(p.stem for p in d.glob("*.toml"))
    return sorted(names)


def find_suite(name_or_path: str | os.PathLike) -> Path:
    """A suite file: an existing path, else ``<name>.toml`` in $TEXTCLS_SUITES_DIR,
    ./benchmarks/suites or the source checkout's benchmarks/suites."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    if path.is_dir():
        raise ConfigError(f"{path}: is a folder; pass a suite's .toml file or a suite name")
    if path.suffix == ".toml" or len(path.parts) > 1:
        raise ConfigError(f"{path}: no such suite file; pass an existing .toml file or a suite name")
    for d in _suite_dirs():
        candidate = d / f"{path.name}.toml"
        if candidate.is_file():
            return candidate
    raise ConfigError(f"unknown benchmark suite '{name_or_path}'; {close_names(str(name_or_path), list_suites())} "
                      f"(suites are looked up in {', '.join(str(d) for d in _suite_dirs())})")


def _as_list(value, key: str, where: str) -> list:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return value
    raise ConfigError(f"{where}: '{key}' must be a name or a non-empty list of names, got {value!r}")


def _per_dataset(value, dataset: str, key: str, where: str, *, several_models: bool):
    """A scalar applies as is; a table gives one value per dataset (missing = None)."""
    if value is not None and key == "paper" and several_models:  # a table per dataset too: one model's numbers
        raise ConfigError(f"{where}: 'paper' is one model's number; give it on an entry with a single model")
    if isinstance(value, dict):
        return value.get(dataset)
    return value


def _check_seeds(seeds, where: str) -> list[int]:
    if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) and not isinstance(s, bool)
                                                           for s in seeds):
        raise ConfigError(f"{where}: 'seeds' must be a non-empty list of integers, got {seeds!r}")
    if len(set(seeds)) != len(seeds):
        raise ConfigError(f"{where}: 'seeds' lists a seed twice ({seeds}); list each seed once")
    if not all(0 <= s <= MAX_SEED for s in seeds):
        raise ConfigError(f"{where}: 'seeds' = {seeds} must lie in [0, {MAX_SEED}], NumPy's seed range")
    return list(seeds)


def _check_paper(value, where: str):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < float(value) <= 100.0:
        raise ConfigError(f"{where}: 'paper' = {value!r} must be an accuracy in percent, in (0, 100]")
    return float(value)


def _check_paper_per_task(value, where: str) -> dict[str, float] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not value:
        raise ConfigError(f"{where}: 'paper_per_task' must be a table of task = accuracy %, e.g. {{books = 88.0}}")
    return {str(task): _check_paper(acc, f"{where}: paper_per_task.{task}") for task, acc in value.items()}


def load_suite(name_or_path: str | os.PathLike) -> Suite:
    """Parse and validate a suite file; errors name the file and the entry."""
    path = find_suite(name_or_path)
    data = _read_suite_file(path)
    header, dataset_notes, defaults = _suite_tables(path, data)
    infer = {"infer_b1": header.get("infer_b1", INFER_SAMPLE_B1)}
    if isinstance(infer["infer_b1"], bool) or not isinstance(infer["infer_b1"], int) or infer["infer_b1"] < 1:
        raise ConfigError(f"{path}: [suite] infer_b1 = {infer['infer_b1']!r} must be a positive number of documents")
    name = header.get("name", path.stem)
    if not isinstance(name, str) or not name or any(c in name for c in "/\\ "):
        raise ConfigError(f"{path}: [suite] name = {name!r} must be a non-empty name without spaces or slashes")
    raw_entries = data.get("entry", [])
    if not isinstance(raw_entries, list) or not raw_entries:
        raise ConfigError(f"{path}: the suite has no [[entry]] tables; add at least one")
    entries: list[Entry] = []
    for number, raw in enumerate(raw_entries, start=1):
        if not isinstance(raw, dict):
            raise ConfigError(f"{path}: entry {number} = {raw!r} must be a table: an [[entry]] header with "
                              "key = value lines under it")
        entries += _entries_of(raw, f"{path}: entry {number}", defaults)
    seen = set()
    for entry in entries:
        if entry.id in seen:
            raise ConfigError(f"{path}: entry '{entry.id}' appears twice; give one of them name = \"...\"")
        if any(c.isspace() for c in entry.id):
            # A queue line is "ENTRY_ID SEED", split on whitespace (benchmarks/run_queue.sh, missing_runs.py).
            raise ConfigError(f"{path}: entry '{entry.id}': an entry id holds no whitespace (a queue line, "
                              "ENTRY_ID SEED, is split on it); give the entry a name = \"...\" without spaces, or "
                              "its dataset a path without them")
        seen.add(entry.id)
    return Suite(name=name, description=str(header.get("description", "")), path=path, entries=entries,
                 dataset_notes=dict(dataset_notes), **infer)


def _read_suite_file(path: Path) -> dict:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc}); fix the file")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the suite file ({exc})")
    unknown = [k for k in data if k not in ("suite", "defaults", "dataset_notes", "entry")]
    if unknown:
        raise ConfigError(f"{path}: unknown table '{unknown[0]}'; a suite has [suite], [defaults], "
                          "[dataset_notes] and [[entry]]")
    return data


def _suite_tables(path: Path, data: dict) -> tuple[dict, dict, dict]:
    """The checked [suite], [dataset_notes] and [defaults] tables."""
    for table, example in (("suite", 'name = "quick"'), ("defaults", "seeds = [0]")):
        if not isinstance(data.get(table, {}), dict):
            raise ConfigError(f"{path}: '{table}' = {data[table]!r} must be a table: a [{table}] header with "
                              f"key = value lines under it (e.g. {example})")
    dataset_notes = data.get("dataset_notes", {})
    if not isinstance(dataset_notes, dict) or not all(isinstance(v, str) for v in dataset_notes.values()):
        raise ConfigError(f"{path}: [dataset_notes] maps dataset names to text, e.g. mr = \"no official split\"")
    header = data.get("suite", {})
    bad = [k for k in header if k not in _SUITE_KEYS]
    if bad:
        raise ConfigError(f"{path}: [suite] key '{bad[0]}' is unknown; {close_names(bad[0], _SUITE_KEYS)}")
    defaults = data.get("defaults", {})
    bad = [k for k in defaults if k not in _DEFAULT_KEYS]
    if bad:
        raise ConfigError(f"{path}: [defaults] key '{bad[0]}' is unknown; {close_names(bad[0], _DEFAULT_KEYS)}")
    if "seeds" in defaults:
        _check_seeds(defaults["seeds"], f"{path}: [defaults]")
    _check_overrides_table(defaults, f"{path}: [defaults]")
    return header, dataset_notes, defaults


def _check_overrides_table(table: dict, where: str) -> None:
    if not isinstance(table.get("overrides", {}), dict):
        raise ConfigError(f"{where}: 'overrides' = {table['overrides']!r} must be a table of parameter = value, "
                          "e.g. overrides = {epochs = 5}")


def _entries_of(raw: dict, where: str, defaults: dict) -> list[Entry]:
    """The entries one [[entry]] table gives: one per (dataset, model) it names."""
    bad = [k for k in raw if k not in _ENTRY_KEYS]
    if bad:
        raise ConfigError(f"{where}: unknown key '{bad[0]}'; {close_names(bad[0], _ENTRY_KEYS)}")
    for single, plural in (("dataset", "datasets"), ("model", "models")):
        if (single in raw) == (plural in raw):
            raise ConfigError(f"{where}: give exactly one of '{single}' and '{plural}'")
    datasets = _as_list(raw.get("dataset", raw.get("datasets")), "dataset(s)", where)
    models = _as_list(raw.get("model", raw.get("models")), "model(s)", where)
    _check_texts_and_tables(raw, datasets, where)
    common = _entry_settings(raw, where, defaults, several_models=len(models) > 1)
    entries = []
    for dataset in datasets:
        for model in models:
            paper = _check_paper(_per_dataset(raw.get("paper"), dataset, "paper", where,
                                              several_models=len(models) > 1), where)
            source = _per_dataset(raw.get("paper_source", defaults.get("paper_source")), dataset,
                                  "paper_source", where, several_models=len(models) > 1)
            if paper is not None and not source:
                raise ConfigError(f"{where}: 'paper' needs 'paper_source' (the paper and table it is from)")
            name_key = common["name_key"]
            entries.append(Entry(
                id=f"{dataset}:{name_key or model}", dataset=dataset, model=model, seeds=common["seeds"],
                overrides=dict(common["overrides"]), max_per_split=common["max_per_split"], paper=paper,
                # The suite-wide source names the table the figures come from, so an entry without a
                # figure (a peer) does not inherit it; a source written on the entry itself says where in
                # the paper it belongs (a plot without values, a diagnosis) and is kept and shown.
                paper_source=(source if paper is not None or common["paper_per_task"] is not None
                              or raw.get("paper_source") is not None else None),
                paper_per_task=common["paper_per_task"],
                label_view=_per_dataset(raw.get("label_view"), dataset, "label_view", where, several_models=False),
                notes=raw.get("notes"), name=name_key or model, test_curve=_check_test_curve(raw, model, where),
            ))
    return entries


def _check_texts_and_tables(raw: dict, datasets: list, where: str) -> None:
    """A per-dataset table names only the entry's datasets (a misspelt one would be dropped without
    a word), and the notes are text."""
    for key in ("paper", "paper_source", "label_view"):
        table = raw.get(key)
        stray = [name for name in table if name not in datasets] if isinstance(table, dict) else []
        if stray:
            raise ConfigError(f"{where}: '{key}' gives a value for '{stray[0]}', which is not among the entry's "
                              f"datasets ({', '.join(datasets)}); fix the name or drop it")
    for key in ("label_view", "notes"):
        value = raw.get(key)
        texts = value.values() if key == "label_view" and isinstance(value, dict) else [value]
        if value is not None and not all(isinstance(text, str) for text in texts):
            raise ConfigError(f"{where}: '{key}' = {value!r} must be text" + (" (or a table of text by dataset)"
                                                                             if key == "label_view" else ""))


def _check_test_curve(raw: dict, model: str, where: str) -> bool:
    """An entry's ``test_curve``: a boolean, and only on a model that trains by epochs."""
    value = raw.get("test_curve", False)
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: 'test_curve' = {value!r} must be true or false")
    if value and _model_kind(model) != "neural":
        raise ConfigError(f"{where}: 'test_curve' scores test after every epoch of the engine's training, which "
                          f"only a neural preset has ({model} is a {_model_kind(model)} model); drop it or give one")
    return value


def _entry_settings(raw: dict, where: str, defaults: dict, *, several_models: bool) -> dict:
    """What every entry of one [[entry]] table shares: seeds, overrides, max_per_split, the
    paper's per-task figures and the display name, checked."""
    seeds = _check_seeds(raw.get("seeds", defaults.get("seeds", [0])), where)
    _check_overrides_table(raw, where)
    overrides = {**defaults.get("overrides", {}), **raw.get("overrides", {})}
    if "seed" in overrides:
        raise ConfigError(f"{where}: 'overrides' sets 'seed'; list the seeds in seeds = [...] instead")
    max_per_split = raw.get("max_per_split", defaults.get("max_per_split"))
    try:
        check_int("max_per_split", max_per_split, 1, None, optional=True)  # load_dataset's rule, before any run
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    paper_per_task = _check_paper_per_task(raw.get("paper_per_task"), where)
    if paper_per_task is not None and (several_models or not (raw.get("paper_source")
                                                              or defaults.get("paper_source"))):
        raise ConfigError(f"{where}: 'paper_per_task' is one model's numbers; give it on an entry with a "
                          "single model and a 'paper_source'")
    name_key = raw.get("name")
    if name_key is not None:
        if several_models:
            raise ConfigError(f"{where}: 'name' names one model's entries; drop it or give one model")
        if not isinstance(name_key, str) or not name_key.strip() or "|" in name_key:
            raise ConfigError(f"{where}: 'name' = {name_key!r} must be a non-empty name without '|'")
    return {"seeds": seeds, "overrides": overrides, "max_per_split": max_per_split,
            "paper_per_task": paper_per_task, "name_key": name_key}


# --------------------------------------------------------------------------- child process


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, TextclsError):
        return str(exc)
    message = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


_THREAD_LIMITS = None


def _limit_threads(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)
    try:
        from threadpoolctl import threadpool_limits

        # BLAS (scikit-learn's logistic regression) and OpenMP pools, for the child's lifetime.
        global _THREAD_LIMITS
        _THREAD_LIMITS = threadpool_limits(limits=threads)
    except ImportError:
        pass


def _timed_predict(predict_proba, texts: list[str], batch: int, task_ids: list[int] | None = None):
    """(documents per second, probabilities) of ``predict_proba`` over ``texts`` in calls of
    ``batch`` documents, after a warm-up call (lazy initialisation is not speed). ``task_ids``
    (a multi-task model's task per text) is sliced alongside the texts."""
    import numpy as np
    import torch

    def call(lo: int, hi: int):
        return predict_proba(texts[lo:hi], None if task_ids is None else task_ids[lo:hi])

    with torch.inference_mode():
        call(0, min(len(texts), batch, 8))
        start = time.perf_counter()
        parts = [call(i, i + batch) for i in range(0, len(texts), batch)]
        seconds = time.perf_counter() - start
    return len(texts) / max(seconds, 1e-9), np.concatenate(parts, axis=0)


def _targets(split, dataset, split_name: str = "test"):
    """Gold labels as class indices, or a multi-hot matrix for multi-label data."""
    from ..data.prepare import label_targets, target_array

    targets = label_targets(split, dataset.label_names, dataset.multi_label, f"{dataset.name}/{split_name}")
    return target_array(targets, len(dataset.label_names), dataset.multi_label)


def split_accuracy(estimator, dataset, split_name: str) -> float:
    """A fitted estimator's accuracy (its most probable class) on ``dataset[split_name]`` of
    single-label data: what the benchmark scripts compare their candidates by."""
    probs = estimator.predict_proba(list(dataset[split_name]["text"]))
    return float((probs.argmax(axis=1) == _targets(dataset[split_name], dataset, split_name)).mean())


def _model_kind(model: str) -> str:
    from .peers import is_peer

    if is_peer(model):
        return "peer"
    from ..models.registry import get_preset, list_models
    from .peers import list_peers

    try:
        return get_preset(model).kind
    except ConfigError:
        names = list_models() + list_peers()
        raise ConfigError(f"unknown model '{model}': neither a preset (textcls list-models) nor a peer "
                          f"({', '.join(list_peers())}); {close_names(model, names)}") from None


def create_estimator(model: str, *, seed: int, overrides: dict):
    """A fresh, unfitted estimator for a suite entry's model: a peer, or a registry preset (with
    the entry's overrides and the run's seed)."""
    from ..estimators import estimator_for
    from ..models.registry import get_preset
    from .peers import PEERS, create_peer

    if model in PEERS:
        return create_peer(model, seed=seed, **overrides)
    return estimator_for(get_preset(model).with_overrides(**overrides, seed=seed))


def _run_job(job: dict) -> dict:
    """Train and measure one (entry, seed); runs inside the child process."""
    import numpy as np

    _limit_threads(job["threads"])
    import torch

    from ..data.splits import ensure_dev

    entry = Entry(**job["entry"])
    seed = job["seed"]
    torch.manual_seed(seed)
    np.random.seed(seed)
    record: dict[str, Any] = {"seed": seed}
    dataset = _load_job_dataset(entry, job, record)
    estimator = create_estimator(entry.model, seed=seed, overrides=entry.overrides)
    # The same carve the Classifier would make, done here so that every model trains on it.
    dataset = ensure_dev(dataset, fraction=estimator.dev_fraction, seed=seed)
    record["dataset"] = dataset.summary()
    record["train_documents"] = len(dataset["train"])
    device = job.get("device", "cpu")
    fit_args, resumed = _resume_args(estimator, job.get("checkpoint_dir"), entry.id, seed, device)
    start, cpu_start = time.perf_counter(), time.process_time()
    record["device"] = system.device_name(device)
    if entry.test_curve:
        fit_args["watch_splits"] = ("test",)
    estimator.fit(dataset, device=device, **fit_args)
    # A resumed run adds the seconds its checkpointed epochs took (their training and dev
    # passes; not the earlier processes' data preparation).
    record["train_seconds"] = time.perf_counter() - start + (resumed["seconds_before"] if resumed else 0.0)
    if resumed:
        record["resumed"] = resumed
    # The fit's CPU seconds over every thread of the run's process (of this process alone when
    # it resumed): on a machine shared with other jobs, wall seconds grow with their load and
    # CPU seconds much less, so ratios of CPU seconds compare runs that ran at different loads.
    record["train_cpu_seconds"] = time.process_time() - cpu_start
    report = estimator.fit_report()
    record.update({key: report[key] for key in ("train_loop_seconds", "epochs_run", "best_epoch", "dev_metrics",
                                                "embeddings", "settings", "precision")})
    if entry.test_curve:
        record["test_curve"] = report["curves"]["test"]  # test accuracy after each epoch, 1 first
        # The passes on test are the diagnosis's, not the model's: out of the fit's seconds. Only
        # this process's epochs held them (a resumed run counts its earlier ones from their rows).
        mine = report["watch_seconds"][resumed["from_epoch"] if resumed else 0:]
        record["train_seconds"] -= sum(wall for wall, _ in mine)
        record["train_cpu_seconds"] -= sum(cpu for _, cpu in mine)
        record["test_curve_seconds"] = sum(wall for wall, _ in report["watch_seconds"])
    record.update(_test_record(estimator, dataset, job["infer_b1"], device))
    record["train_docs_per_second"] = (record["train_documents"] * record["epochs_run"]
                                       / max(record["train_seconds"], 1e-9))
    # The papers' speed tables: seconds per training epoch (spe_cnn Table 2, fcsr) and training
    # milliseconds per document (hcan Table 2). For neural models this is the training pass of
    # each epoch alone (no vocabulary, vectors or dev evaluation); for peers and TF-IDF, their
    # whole fit divided by its epochs.
    if report["epoch_seconds"] is not None:
        record["epoch_seconds"] = report["epoch_seconds"]
        record["train_ms_per_document"] = 1000 * report["epoch_seconds"] / max(record["train_documents"], 1)
    if getattr(estimator, "caches_features", False):
        # Rows read from a cache, in the fit or the timed test passes: the seconds measure the
        # cache, not the model, so no throughput is recorded (the report marks the seconds).
        record["features_cached"] = True
        for key in ("train_docs_per_second", "epoch_seconds", "train_ms_per_document",
                    "infer_docs_per_second_b1", "infer_docs_per_second_b256"):
            record[key] = None
    record["parameters"] = {k: int(v) for k, v in estimator.num_parameters().items()}
    record["threads"] = torch.get_num_threads()
    record["peak_rss_mb"] = system.peak_rss_mb()
    record["status"] = "ok"
    return record


def run_checkpoint_dir(checkpoint_dir: str | os.PathLike, entry_id: str, seed: int) -> Path:
    """The folder under ``checkpoint_dir`` where one (entry, seed) run keeps its checkpoint."""
    return Path(checkpoint_dir) / f"{entry_id.replace('/', '_').replace(':', '_')}_s{seed}"


# Where a run's checkpointed epochs were made, written when the run starts afresh: a worktree moves
# to a newer commit between sessions (and may move machines), so a resumed run's record could mix
# epochs of two commits or CPUs while the report names only the resuming commit. The file lies beside
# checkpoint/ in the run folder, not inside it: the runner owns the run folder (removed when the run
# is recorded), while checkpoint/ is the engine's, rewritten at every checkpoint in a format
# (textcls-checkpoint/2) that `textcls train --resume` reads too and that knows no benchmark. Written
# once, so it names the process that made the first epochs; a run resumed twice keeps that one.
RUN_ORIGIN = "origin.json"
ORIGIN_KEYS = ("commit", "dirty", "cpu_model", "device", "date")


def run_origin(device: str = "cpu") -> dict:
    """Where this process makes a run's epochs: its commit (``dirty``: tracked files changed), its
    CPU model, the device it trains on (``system.device_name``) and the UTC time."""
    git = system.git_info()
    return {"commit": git["commit"], "dirty": git["dirty"], "cpu_model": system.cpu_model(),
            "device": system.device_name(device),
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}


def read_run_origin(run_dir: Path) -> dict | None:
    """The origin (``ORIGIN_KEYS``) recorded in a run folder, or None where it has none that reads:
    folders made before the origin was recorded. Unreadable counts as unknown rather than refused, as
    the origin only describes the epochs, and refusing would throw them away."""
    try:
        origin = artifacts.read_json(Path(run_dir) / RUN_ORIGIN)
    except (OSError, CheckpointError):
        return None
    return {key: origin.get(key) for key in ORIGIN_KEYS} if isinstance(origin, dict) else None


def origin_text(origin: dict) -> str:
    """``"b557176 on AMD EPYC 7B13"``: an origin's short commit and machine (the accelerator for a
    run on one, else the CPU model), as a note or a queue comment names them."""
    commit = origin.get("commit")
    where = commit[:7] if isinstance(commit, str) else "an unknown commit"
    if origin.get("dirty"):
        where += " with uncommitted changes"
    return f"{where} on {_origin_machine(origin) or 'an unknown CPU'}"


def _origin_machine(origin: dict) -> str | None:
    # A GPU run's epochs are the accelerator's: the CPU beside it does not change them.
    device = origin.get("device")
    return device if device and device != "cpu" else origin.get("cpu_model")


def checkpointed_run(checkpoint_dir: str | os.PathLike, entry_id: str, seed: int) -> dict | None:
    """What a cut-off run has behind it under ``checkpoint_dir`` (``from_epoch``: the epochs
    checkpointed, ``seconds_before``: their seconds, ``made_at``: where they were made, None when
    unknown), or None when it left no checkpoint."""
    run_dir = run_checkpoint_dir(checkpoint_dir, entry_id, seed)
    if not artifacts.is_resumable(run_dir):
        return None
    from ..train.checkpoint import checkpointed_epochs

    epochs, seconds = checkpointed_epochs(run_dir / artifacts.CHECKPOINT_DIR)
    return {"from_epoch": epochs, "seconds_before": seconds, "made_at": read_run_origin(run_dir)}


def _resume_args(estimator, checkpoint_dir, entry_id: str, seed: int, device: str = "cpu") -> tuple[dict, dict | None]:
    """The fit's ``run_dir`` and ``resume`` under a checkpoint folder (none for a model that
    trains without epochs), and, when the run resumes, the epochs it has behind it. A fresh run
    records its origin; a resumed one says when its epochs were made elsewhere."""
    if checkpoint_dir is None or not estimator.resumable:
        return {}, None
    run_dir = run_checkpoint_dir(checkpoint_dir, entry_id, seed)
    resumed = checkpointed_run(checkpoint_dir, entry_id, seed)
    here = run_origin(device)
    if resumed is None:
        artifacts.write_json(run_dir / RUN_ORIGIN, here)
        return {"run_dir": run_dir}, None
    note = _origin_note(resumed["made_at"], here)
    if note:
        print(f"note: {entry_id} seed {seed}: resumes after epoch {resumed['from_epoch']} {note}", file=sys.stderr)
    return {"run_dir": run_dir, "resume": True}, resumed


def _origin_note(made_at: dict | None, here: dict) -> str | None:
    """Why a resumed run's epochs may not all be this process's (None where they match): made at
    another commit or on another machine, or somewhere unknown. Resuming goes on: moving between
    commits is the workflow, and the record keeps both (``resumed.made_at``, the report's git)."""
    if made_at is None:
        return (f"from a checkpoint of unknown origin (no readable {RUN_ORIGIN}: made by older code), so its "
                f"earlier epochs may come from another commit or machine than {origin_text(here)}")
    if (made_at.get("commit"), made_at.get("dirty"), _origin_machine(made_at)) == \
            (here["commit"], here["dirty"], _origin_machine(here)):
        return None
    return (f"from a checkpoint made at {origin_text(made_at)} ({made_at.get('date')}), while this process "
            f"runs {origin_text(here)}: its record mixes their epochs and keeps both (resumed.made_at, the report's git)")


def _load_job_dataset(entry: Entry, job: dict, record: dict):
    """The entry's dataset (its load time goes into ``record``), checked for a test split and
    for the tasks the entry's paper figures name."""
    from ..data import load_dataset

    start = time.perf_counter()
    dataset = load_dataset(entry.dataset, data_dir=job["data_dir"], max_per_split=entry.max_per_split)
    record["load_seconds"] = time.perf_counter() - start
    if "test" not in dataset.splits:
        raise ConfigError(f"dataset '{entry.dataset}' has no test split; benchmark entries need one")
    if entry.paper_per_task:
        unknown = [t for t in entry.paper_per_task if t not in (dataset.task_names or ())]
        if unknown:
            raise ConfigError(f"entry '{entry.id}': paper_per_task names task '{unknown[0]}', which dataset "
                              f"'{entry.dataset}' does not have; {close_names(unknown[0], dataset.task_names or [])}")
    return dataset


def _test_record(estimator, dataset, infer_b1: int, device: str = "cpu") -> dict:
    """Accuracy and the other test metrics, per-task accuracy on multi-task data, and the
    inference speeds (batches of INFER_BATCH: the test pass itself; batch 1 on a sample)."""
    import numpy as np

    from ..data.prepare import column_values
    from ..eval.metrics import compute_metrics

    test = dataset["test"]
    texts = column_values(test, "text")
    task_column = column_values(test, "task") if "task" in test.column_names else None
    # Only a model with one head per task reads the task; the others pool the tasks.
    task_ids = None
    if task_column is not None and estimator.uses_tasks:
        index = {name: i for i, name in enumerate(dataset.task_names)}
        task_ids = [index[name] for name in task_column]
    record: dict[str, Any] = {}
    predict_proba = functools.partial(estimator.predict_proba, device=device)
    record["infer_docs_per_second_b256"], probs = _timed_predict(predict_proba, texts, INFER_BATCH, task_ids)
    record["infer_documents_b256"] = len(texts)
    targets = _targets(test, dataset)
    metrics = compute_metrics(targets, probs, dataset.label_names, multi_label=dataset.multi_label)
    record["accuracy"] = metrics["accuracy"]
    record["macro_f1"] = metrics["macro_f1"]
    record["weighted_f1"] = metrics.get("weighted_f1")
    # FCSR's Figure 6 reports macro and micro ROC-AUC; None where a class never occurs.
    record["roc_auc_macro"] = metrics.get("roc_auc_macro")
    record["roc_auc_micro"] = metrics.get("roc_auc_micro")
    if task_column is not None and not dataset.multi_label:
        # Multi-task data (FCSR Table 5): test accuracy of every task, in the dataset's task order.
        correct = probs.argmax(axis=1) == targets
        record["per_task_accuracy"] = {
            task: float(correct[[t == task for t in task_column]].mean())
            for task in (dataset.task_names or sorted(set(task_column)))}
        record["per_task_heads"] = task_ids is not None
    record["test_documents"] = metrics["n"]
    order = np.random.default_rng(INFER_SAMPLE_SEED).permutation(len(texts))[:infer_b1]
    sample_ids = None if task_ids is None else [task_ids[i] for i in order]
    record["infer_docs_per_second_b1"], _ = _timed_predict(predict_proba, [texts[i] for i in order], 1, sample_ids)
    record["infer_documents_b1"] = len(order)
    return record


def _child_main(job: dict, conn) -> None:
    if job.get("parent_pid") is not None:
        system.die_with_parent(job["parent_pid"])
    try:
        result = _run_job(job)
    except BaseException as exc:  # noqa: BLE001 -- every failure becomes this run's error record
        result = {"seed": job["seed"], "status": "failed", "error": _one_line(exc),
                  "traceback": traceback.format_exc(limit=-8)}
        try:
            result["peak_rss_mb"] = system.peak_rss_mb()
        except Exception:  # noqa: BLE001
            pass
    try:
        conn.send(result)
    finally:
        conn.close()


def _run_in_child(job: dict) -> dict:
    """Run ``_run_job`` in a fresh spawned process; a dead child becomes an error record."""
    ctx = multiprocessing.get_context("spawn")
    parent_conn, child_conn = ctx.Pipe(duplex=False)
    job = {**job, "parent_pid": os.getpid()}
    process = ctx.Process(target=_child_main, args=(job, child_conn), daemon=True)
    process.start()
    child_conn.close()  # so that recv() sees EOF if the child dies without answering
    try:
        try:
            result = parent_conn.recv()
        except EOFError:
            process.join()
            code = process.exitcode
            why = " (killed by the system: out of memory?)" if code == -9 else ""
            result = {"seed": job["seed"], "status": "failed",
                      "error": f"the run's child process died with exit code {code}{why}"}
        process.join()
    except BaseException:
        process.terminate()
        process.join()
        raise
    finally:
        parent_conn.close()
    return result


# --------------------------------------------------------------------------- aggregation


def _mean_std(values: list[float]) -> dict:
    n = len(values)
    mean = sum(values) / n
    # Sample standard deviation over seeds; 0.0 for one seed (the report shows n).
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    return {"mean": mean, "std": std, "n": n, "min": min(values), "max": max(values)}


def summarize_entry(runs: list[dict]) -> dict:
    """Mean and std over the successful runs of every per-run number in SUMMARY_METRICS."""
    ok = [r for r in runs if r.get("status") == "ok"]
    summary = {}
    for key in SUMMARY_METRICS:
        values = [float(r[key]) for r in ok if isinstance(r.get(key), (int, float)) and not isinstance(r.get(key), bool)]
        if values and len(values) == len(ok):
            summary[key] = _mean_std(values)
    return summary


def _entry_result(entry: Entry, kind: str | None, runs: list[dict]) -> dict:
    ok = [r for r in runs if r.get("status") == "ok"]
    failed = [r for r in runs if r.get("status") != "ok"]
    status = "ok" if not failed else ("failed" if not ok else "partial")
    errors = []
    for run in failed:
        if run["error"] not in errors:
            errors.append(run["error"])
    first = ok[0] if ok else {}
    return {
        **entry.to_dict(),
        "kind": kind,
        "status": status,
        "errors": errors,
        "summary": summarize_entry(runs),
        "parameters": first.get("parameters"),
        "embeddings": first.get("embeddings"),
        "precision": first.get("precision"),
        "dataset_summary": first.get("dataset"),
        "runs": runs,
    }


def _command_line(name_or_path) -> str:
    argv = list(sys.argv)
    # The console script, or `python -m textcls.cli` (what benchmarks/run_queue.sh calls).
    if argv and (Path(argv[0]).name == "textcls" or Path(argv[0]).parts[-2:] == ("textcls", "cli.py")):
        return " ".join(shlex.quote(a) for a in ["textcls", *argv[1:]])
    return f"textcls.benchmark.run_suite({str(name_or_path)!r})"


def _notes(suite: Suite) -> list[str]:
    return [
        "accuracy and macro-F1 are on the test split; mean ± sample std over seeds (std 0 for one seed).",
        "paper: the accuracy the paper reports (copied from shared/papers/TARGETS.md), never ours.",
        "Every model of an entry trains on the same documents: the train split minus a dev split carved "
        "from it (10 %, stratified, seeded by the run seed) when the dataset has no official dev split. "
        "Neural models select their epoch on dev, TF-IDF its C (LR) or alpha (NB) from a grid (it is then not "
        "refitted on train + dev); fastText, MiniLM-LR and Model2Vec-LR do not use dev, Model2Vec-finetune "
        "holds out 10 % of the train split for its own early stopping.",
        "train s: wall time of the whole fit (text pipeline, embeddings, encoder pass and training); "
        "train docs/s = training documents x epochs run / train s (one epoch for TF-IDF and MiniLM-LR).",
        f"infer docs/s: predict_proba of the fitted model in memory, text preprocessing included, "
        f"after a warm-up call: b1 = {suite.infer_b1} calls of one document (the same seeded sample of "
        f"test documents for every model); b{INFER_BATCH} = the whole test split in calls of "
        f"{INFER_BATCH} documents (the pass that gives the accuracy).",
        "params: trainable / total (embedding tables included in total, shown apart).",
        "peak RSS: ru_maxrss of the run's own child process (imports, data and model included).",
        "fastText peer: supervised, wordNgrams=2, thread=1 (deterministic per seed), the library's "
        "defaults otherwise (lr 0.1, dim 100, epoch 5, bucket 2,000,000); the tutorial's normalisation; "
        "training lines in a seeded random order (fastText reads its file in order).",
        "minilm-lr peer: frozen all-MiniLM-L6-v2 (256 word pieces), scikit-learn LogisticRegression(C=1).",
        "model2vec peers: all-MiniLM-L6-v2 distilled offline by model2vec.distill (PCA 256), cached once before the "
        "runs (its 25-45 s distillation is not in train s); model2vec-lr: its frozen sentence vectors + "
        "LogisticRegression(C=1); model2vec-finetune: model2vec's StaticModelForClassification.fit with the "
        "library's defaults (vectors fine-tuned, hidden layer 512, Adam 1e-3, early stopping).",
    ]


def fresh_output_dir(name_or_path: str | os.PathLike, root: str | os.PathLike | None = None) -> Path:
    """``runs/benchmarks/<suite>_<YYYYmmdd-HHMMSS>``: the default output folder of a suite run,
    new for every invocation. It is made when the first result is written (a suite that fails
    before leaves no empty folder); one that already holds files is refused."""
    suite = load_suite(name_or_path)
    root = Path(root) if root is not None else DEFAULT_OUTPUT_ROOT
    path = root / f"{suite.name}_{time.strftime('%Y%m%d-%H%M%S')}"
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise ConfigError(f"{path}: the default output folder already exists and is not empty (another run of "
                          f"suite '{suite.name}' started the same second?); rerun, or name a folder with --output-dir")
    return path


def run_suite(
    name_or_path: str | os.PathLike,
    *,
    output_dir: str | os.PathLike | None = None,
    data_dir: str | os.PathLike | None = None,
    only: str | Sequence[str] | None = None,
    progress: bool = True,
    threads: int | None = None,
    command: str | None = None,
    write: bool = True,
    merge: bool = False,
    seeds: Sequence[int] | None = None,
    device: str = "cpu",
    checkpoint_dir: str | os.PathLike | None = None,
) -> dict:
    """Run a suite and write ``<output_dir>/<suite>.json``, ``.md`` and ``.png``.

    ``output_dir``: default ``fresh_output_dir(suite)``, a new ``runs/benchmarks/<suite>_<time>``
    (pass ``"benchmarks/results"`` to rewrite the committed results). ``merge`` needs it: the
    folder that holds the suite's full report.

    ``only``: keep the entries whose model, dataset or id (``<dataset>:<model or name>``) is
    one of these names.
    ``threads``: torch/BLAS threads of each run (default: every CPU this process may use).
    ``seeds``: run only these of each entry's seeds (one (entry, seed) per process, so that
    the runs of a suite can be spread over machines or cores; ``merge`` puts each run back
    into its entry by seed).
    ``device``: where the neural models train and predict (``"cuda"`` on a GPU machine; every
    run records it, and its speed figures are then not comparable with the CPU runs).
    ``checkpoint_dir``: each neural run checkpoints every epoch into
    ``run_checkpoint_dir(checkpoint_dir, entry id, seed)`` and, when that holds a checkpoint
    (a run cut off), resumes from its last epoch (the run records ``resumed``); the folder is
    removed when the run succeeds. Runs longer than a sitting need it. A resumed run's
    ``resumed.made_at`` names the commit and machine of its checkpointed epochs (``_resume_args``).
    Returns the result dict (what the JSON holds); ``result["failed"]`` counts entries with
    a failed run, and the caller should exit non-zero when it is not 0.
    """
    from . import report

    suite = load_suite(name_or_path)
    entries = _select_seeds(_select_entries(suite, only), seeds)
    if merge:
        _check_merge_target(suite, entries, output_dir, rerun=bool(only or seeds))
    if checkpoint_dir is not None:
        check_folder_path("--checkpoint-dir", checkpoint_dir)
    if output_dir is not None:
        check_folder_path("--output-dir", output_dir)
    threads = int(threads) if threads else system.available_cpus()
    if threads < 1:
        raise ConfigError(f"parameter 'threads' = {threads} must be at least 1")
    _check_models_and_datasets(suite, entries, data_dir)
    data_dir = str(data_dir) if data_dir is not None else None
    output_dir = Path(output_dir) if output_dir is not None else fresh_output_dir(suite.path)
    wall = time.perf_counter()
    result = _new_result(suite, name_or_path, only=only, command=command, threads=threads, data_dir=data_dir)
    if seeds:
        result["seeds"] = sorted(set(seeds))
        result["report_name"] = _report_name(suite.name, only, seeds)
    counter = {"done": 0, "total": sum(len(e.seeds) for e in entries)}
    for entry in entries:
        job = {"data_dir": data_dir, "threads": threads, "infer_b1": suite.infer_b1, "device": device,
               "checkpoint_dir": str(checkpoint_dir) if checkpoint_dir is not None else None}
        _run_entry(entry, job, result, counter, progress=progress,
                   save=lambda: _checkpoint(result, output_dir, write, wall))
    result["failed"] = sum(1 for e in result["entries"] if e["status"] != "ok")
    result["failed_entries"] = [e["id"] for e in result["entries"] if e["status"] != "ok"]
    result["wall_seconds"] = time.perf_counter() - wall
    result["complete"] = True
    if not (only or seeds):  # the suite's report: done when every planned run has a result
        _set_complete(result, suite)
    if write:
        report.write_report(result, output_dir)
        if merge:
            merged = merge_rerun(result, output_dir, suite)
            # A failed run fails the command (exit 1) even where the report kept an OK run of its seed.
            passed_over = [e for e in result["failed_entries"] if e not in merged["failed_entries"]]
            return {**merged, "failed": merged["failed"] + len(passed_over),
                    "failed_entries": merged["failed_entries"] + passed_over}
    return result


def _check_merge_target(suite: Suite, entries: list[Entry], output_dir, *, rerun: bool) -> None:
    """What --merge needs, checked before the runs (which may take hours): a rerun (--only or
    --seed), the suite's full report in ``output_dir`` to put it in, and the same settings as the
    report's runs of the seeds it keeps (_refuse_mixed_settings)."""
    if not rerun:
        raise ConfigError("--merge puts an --only or --seed rerun into the full report; give --only or --seed as well")
    if output_dir is None:
        raise ConfigError("--merge puts the rerun into an existing full report, so it needs --output-dir: the "
                          "folder holding <suite>.json (e.g. --output-dir benchmarks/results)")
    full_path = Path(output_dir) / f"{suite.name}.json"
    if not full_path.is_file():
        raise ConfigError(f"{full_path}: no full report of suite '{suite.name}' to merge into; run the whole suite "
                          "first or drop --merge")
    _refuse_mixed_settings(_read_report(full_path, suite_report=True), [asdict(entry) for entry in entries],
                           "--merge: ")


def _check_models_and_datasets(suite: Suite, entries: list[Entry], data_dir) -> None:
    """A misspelt model, parameter or dataset, a parameter's bad value or a missing embeddings file
    fails before the first run, not as a failed entry in a report hours later: each entry's
    estimator is made as its run will make it (a peer checks its parameters' names and values then,
    loading nothing) and a preset's model is built as the model checks its parameters, without data."""
    from ..data.load import check_source

    for entry in entries:
        try:
            _model_kind(entry.model)
            check_source(entry.dataset, data_dir=data_dir)
        except TextclsError as exc:
            raise ConfigError(f"{suite.path}: entry '{entry.id}': {exc}") from None
        try:
            check_overrides(entry.model, entry.overrides)
        except TextclsError as exc:
            raise ConfigError(f"{suite.path}: entry '{entry.id}': {exc} (fix its overrides, or [defaults]' "
                              "overrides, in the suite file)") from None


def check_overrides(model: str, overrides: dict) -> None:
    """Refuse (ConfigError) what ``create_estimator(model, overrides=...)`` and the fit's model would
    refuse, without data: the estimator is made, and a preset's text pipeline and model are built
    as its fit builds them, the model on torch's meta device (no memory) and with a vocabulary of
    8 words and 2 classes, so a wrong value fails as the model's own parameter check; an embeddings
    file named by its path must open."""
    from ..models.registry import create_model

    if _model_kind(model) == "peer":
        try:
            create_estimator(model, seed=0, overrides=overrides)
        except ImportError:
            # An optional peer package (fasttext, from textcls[peers]) that is not installed fails
            # that entry alone when it runs, as before: the other entries of the suite still run.
            pass
        return
    try:
        preset = create_estimator(model, seed=0, overrides=overrides).preset
        if preset.kind == "neural":
            _check_pipeline(preset.inputs)
        _check_embeddings_file(preset.inputs.get("embeddings"))
        try:
            import torch

            with torch.device("meta"):
                create_model(preset, num_classes=2, vocab_size=8, from_checkpoint=True)
        except TextclsError:
            raise
        except Exception:  # a model that cannot be built on the meta device: build it small on the CPU
            create_model(preset, num_classes=2, vocab_size=8, from_checkpoint=True)
    except (TypeError, ValueError, AttributeError, IndexError, KeyError, RuntimeError) as exc:
        if isinstance(exc, TextclsError):
            raise
        shown = ", ".join(f"{k} = {v!r}" for k, v in overrides.items())
        raise ConfigError(f"overrides {{{shown}}} are not valid for model '{model}' ({_one_line(exc)}); give "
                          "each parameter a value of the preset's type") from None


def _check_embeddings_file(source) -> None:
    """A vectors file named by its path can be opened now, not hours later when the entry's run
    reads it. Nothing is read from it, and a named source (glove-6b-50d, minilm-static, ...) is left
    to the run, once its package is known to be installed: knowing more of either would mean
    loading the vectors."""
    from ..text.embeddings import NAMED_SOURCES, check_source_packages

    if source is None or source in NAMED_SOURCES:
        check_source_packages(source)
        return
    path = Path(source)
    try:
        if not path.is_file():  # as the run refuses it (a FIFO, which open() would wait on, included)
            raise OSError("a folder" if path.is_dir() else "no such file" if not path.exists() else "not a regular file")
        with open(path, "rb"):
            pass
    except OSError as exc:
        where = "" if path.is_absolute() else f"; a relative path is read from {Path.cwd()}, where the suite runs"
        raise DataError(f"parameter 'embeddings' = {source!r} cannot be read ({exc.strerror or exc}{where}); give "
                        f"an existing GloVe or word2vec file, or one of: {', '.join(NAMED_SOURCES)}") from None


def _check_pipeline(inputs: dict) -> None:
    """A neural preset's text pipeline settings, checked as prepare() checks them."""
    from ..data.prepare import VOCAB_SPLITS, pipeline_settings
    from ..text.pipeline import TextPipeline
    from ..validate import check_choice

    TextPipeline(**pipeline_settings(inputs))
    check_choice("vocab_splits", inputs.get("vocab_splits", "train"), VOCAB_SPLITS)


def _select_entries(suite: Suite, only) -> list[Entry]:
    """The suite's entries, or those whose model, dataset or id is named in ``only``."""
    if not only:
        return suite.entries
    wanted = [only] if isinstance(only, str) else list(only)
    entries = [e for e in suite.entries if e.model in wanted or e.dataset in wanted or e.id in wanted]
    # Each name must match: a misspelt one beside a good one would otherwise run less than asked.
    unmatched = [w for w in wanted if not any(w in (e.model, e.dataset, e.id) for e in suite.entries)]
    if unmatched:
        known = sorted({e.model for e in suite.entries} | {e.dataset for e in suite.entries})
        raise ConfigError(f"--only {unmatched[0]} matches no entry of suite '{suite.name}'; "
                          f"{close_names(unmatched[0], known)}")
    return entries


def _select_seeds(entries: list[Entry], seeds) -> list[Entry]:
    """The entries with only the named seeds (an entry left with none is dropped)."""
    if not seeds:
        return entries
    wanted = set(seeds)
    chosen = [replace(e, seeds=[s for s in e.seeds if s in wanted]) for e in entries]
    chosen = [e for e in chosen if e.seeds]
    listed = {s for e in entries for s in e.seeds}
    if not chosen or not wanted <= listed:
        missing = sorted(wanted - listed) or sorted(wanted)
        raise ConfigError(f"--seed {', '.join(map(str, missing))} matches no seed of the chosen entries; "
                          f"their seeds are {sorted(listed)}")
    return chosen


def _new_result(suite: Suite, name_or_path, *, only, command, threads: int, data_dir) -> dict[str, Any]:
    """The report's header: what ran, where, on what, with which notes; no entries yet."""
    started = _dt.datetime.now(_dt.timezone.utc)
    return {
        "suite": suite.name,
        "description": suite.description,
        "suite_file": str(suite.path),
        "command": command or _command_line(name_or_path),
        "only": [only] if isinstance(only, str) else (list(only) if only else None),
        # Files are <report_name>.{json,md,png}: a partial run (--only) never overwrites the full one.
        "report_name": _report_name(suite.name, only),
        "git": system.git_info(),
        "versions": system.library_versions(),
        "machine": system.machine_info(),
        "threads": threads,
        "data_dir": data_dir or os.environ.get("TEXTCLS_DATA_DIR"),
        "date": started.isoformat(timespec="seconds"),
        "notes": _notes(suite),
        "dataset_notes": suite.dataset_notes,
        "entries": [],
        "complete": False,
    }


def _run_entry(entry: Entry, job: dict, result: dict, counter: dict, *, progress: bool, save) -> None:
    """Run every seed of ``entry`` (each in its own child), adding its result to ``result`` and
    calling ``save()`` after every run, so an interrupted suite keeps every run it finished."""
    try:
        kind = _model_kind(entry.model)
    except TextclsError as exc:
        # A name the registry and the peers do not know fails here, without a child.
        runs = []
        for seed in entry.seeds:
            runs.append({"seed": seed, "status": "failed", "error": str(exc)})
            counter["done"] += 1
            _progress(progress, f"[{counter['done']}/{counter['total']}] {entry.id} seed {seed}: FAILED ({exc})")
        result["entries"].append(_entry_result(entry, None, runs))
        save()
        return
    runs = []
    result["entries"].append(_entry_result(entry, kind, runs))
    for seed in entry.seeds:
        started_run = time.perf_counter()
        run = _run_in_child({"entry": entry.to_dict(), "seed": seed, **job})
        run["wall_seconds"] = time.perf_counter() - started_run
        # When it ended: --merge-from keeps the newest run of an (entry, seed) by it.
        run["finished"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        # Which CPU timed it: runs of one report may come from several machines (--merge-from),
        # and seconds are compared only between runs timed on the same CPU model.
        run["cpu_model"] = system.cpu_model()
        run["cpu_generation"] = system.cpu_generation()
        runs.append(run)
        counter["done"] += 1
        where = f"[{counter['done']}/{counter['total']}] {entry.id} seed {seed}"
        if run["status"] == "ok":
            _progress(progress, f"{where}: accuracy {run['accuracy']:.4f}, "
                                f"train {run['train_seconds']:.1f} s (run {run['wall_seconds']:.1f} s)")
        else:
            _progress(progress, f"{where}: FAILED ({run['error']})")
        result["entries"][-1] = _entry_result(entry, kind, runs)
        save()
        if run["status"] == "ok" and job.get("checkpoint_dir"):
            # Recorded, so nothing is left to resume; a failed run keeps its checkpoint.
            shutil.rmtree(run_checkpoint_dir(job["checkpoint_dir"], entry.id, seed), ignore_errors=True)


def render_report(name_or_path: str | os.PathLike, output_dir: str | os.PathLike) -> dict:
    """Rewrite a suite's Markdown and plot from its JSON in ``output_dir`` (e.g.
    ``benchmarks/results``), running nothing (after a change to how reports are formatted); its
    ``complete`` is set from the suite file (_set_complete). Returns the result with its ``files``."""
    from . import report

    suite = load_suite(name_or_path)
    path = Path(output_dir) / f"{suite.name}.json"
    if not path.is_file():
        raise ConfigError(f"{path}: no results of suite '{suite.name}' to render; run the suite first")
    result = _read_report(path, suite_report=True)
    if result.get("suite") != suite.name:
        raise ConfigError(f"{path}: not a result of suite '{suite.name}'; rerun the suite")
    result.pop("files", None)
    _check_report_numbers(result, path)
    _set_complete(result, suite)  # the suite file may plan runs the report lacks, or have them all
    try:
        report.format_markdown(result)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        # The JSON reads but a field has the wrong shape (a hand edit, a bad merge): one line, and the
        # files stay as they were (write_report formats before it writes).
        raise DataError(f"{path}: a field cannot be shown ({type(exc).__name__}: {exc}); restore the file "
                        f"(git checkout -- {path}) or rerun the suite") from None
    report.write_report(result, output_dir)
    return result


# Figures that are fractions of the test documents: a run's, and their mean, min and max over seeds.
_FRACTIONS = ("accuracy", "macro_f1", "weighted_f1", "roc_auc_macro", "roc_auc_micro")


def _check_report_numbers(result: dict, path: Path) -> None:
    """Every number of a report read back is finite (json.loads takes NaN, write_report never
    writes one), and every accuracy, F1 and ROC-AUC lies in [0, 1]: a hand edit or a bad merge is
    refused by entry and field, not shown as a table of nan or -300.00 %."""
    def refuse(where: str, value, wanted: str):
        raise DataError(f"{path}: {where} = {value!r} cannot be shown: it is not {wanted}; restore the file "
                        f"(git checkout -- {path}) or rerun the suite")

    def walk(value, where: str):
        if isinstance(value, float) and not math.isfinite(value):
            refuse(where, value, "a finite number")
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        for key, item in items:
            walk(item, f"{where}.{key}" if isinstance(key, str) else f"{where}[{key}]")

    for key, value in result.items():
        walk(value, key)
    for entry in result["entries"]:
        figures = [(f"seed {run['seed']} {name}", run.get(name)) for run in entry["runs"] for name in _FRACTIONS]
        summary = entry.get("summary")
        if isinstance(summary, dict):
            figures += [(f"summary {name}.{stat}", summary[name].get(stat)) for name in _FRACTIONS
                        if isinstance(summary.get(name), dict) for stat in ("mean", "min", "max")]
        for where, value in figures:
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                      or not 0.0 <= value <= 1.0):
                refuse(f"entry '{entry['id']}' {where}", value, "a fraction in [0, 1]")


def merge_run_files(paths: Sequence[str | os.PathLike], output_dir: str | os.PathLike, *,
                    command: str | None = None, suite: str | os.PathLike | None = None) -> dict:
    """Merge the reports of runs made apart (``--only ... --seed ...`` in separate processes or
    on another machine, each in its own folder) into the suite's report in ``output_dir``.

    ``paths``: report JSON files, or folders searched for them. The runs are joined by entry
    and seed, the newest run of each (entry, seed) winning (a run's ``finished`` time, or its
    report's date for runs made before runs recorded one), except that a failed run never
    replaces an OK one (_runs_to_merge; said on stderr). A run the suite's report already holds,
    or holds a newer run of, is left out, so a queue's folder can be merged again as it fills; a
    part with nothing left adds no record. The rest is merged as one rerun (_rerun_merged) per
    commit (and dirty flag) the runs were made at and CPU model they ran on, so each record names
    the commit and machine of its own runs (a dirty group keeps its first part's count of changed
    files). Without a report yet, the earliest group's runs become the report, its entries in the
    suite file's order (entries first made at a later commit follow, as reruns). ``command``
    (default: each part's own) is what the report says produced them. The report's ``complete``
    says whether every run the suite file plans is in it with a result. The result carries
    ``merged_parts`` and ``skipped_parts`` (the parts with no run newer than the report's or
    another part's; counts, not written to the report).

    Checked first, so that a refused merge writes nothing: the parts are of ``suite`` when given;
    each run is of an entry and a seed of the suite file (``suite``, else the parts' own, found
    as _merge_suite says), made with that entry's current settings; two different runs of one
    (entry, seed) that finished at the same time are refused, since neither can be said to be the
    newer; and the runs one entry would hold after the merge (the report's and every part's) were
    all made with one setting. Every group is then merged in memory and the report written once."""
    from . import report

    files, parts = _read_parts(paths)
    planned = _merge_suite(parts, files, suite)
    _check_run_records(parts, files)
    full_path = Path(output_dir) / f"{parts[0]['suite']}.json"
    full = _read_report(full_path, suite_report=True) if full_path.is_file() else None
    if full is not None and full.get("suite") != parts[0]["suite"]:
        raise ConfigError(f"{full_path}: is the report of suite '{full.get('suite')}', not of '{parts[0]['suite']}'; "
                          "restore it or merge into another --output-dir")
    _refuse_ties(parts, files, full)
    new = _runs_to_merge(parts, files, full)
    _refuse_mixed_parts(full, new)
    counts = {"merged_parts": len(new), "skipped_parts": len(parts) - len(new)}
    if not new:
        return {**full, "files": {"json": str(full_path)}, **counts}
    groups = combine_by_commit([part for part, _ in new], command)
    if full is None:
        full = _first_report(groups.pop(0), planned)
    else:
        _drop_replaced_runs(full, new)
    for group in groups:
        full = _rerun_merged(full, group)
    _set_complete(full, planned)
    report.write_report(full, output_dir)
    return {**full, **counts}


def _read_parts(paths: Sequence[str | os.PathLike]) -> tuple[list[Path], list[dict]]:
    """The report files under ``paths`` and their reports, checked, all of one suite."""
    files = sorted({f for p in map(Path, paths) for f in ([p] if p.is_file() else p.rglob("*.json"))})
    if not files:
        raise ConfigError(f"--merge-from {', '.join(map(str, paths))}: no report JSON found there")
    parts = [_read_report(f) for f in files]
    for part, path in zip(parts, files):
        _check_report_fields(part, f"--merge-from {path}", suite_report=False)
    suites = {part.get("suite") for part in parts}
    if len(suites) != 1 or None in suites:
        raise ConfigError(f"--merge-from: the reports must be of one suite; found {sorted(map(str, suites))}")
    return files, parts


def _first_report(group: dict, planned: Suite | None) -> dict:
    """The suite's report made of the earliest group of parts, when there is none yet: its
    entries in the suite file's order (unknown to it: after them)."""
    order = {e.id: i for i, e in enumerate(planned.entries)} if planned is not None else {}
    group["entries"].sort(key=lambda e: order.get(e["id"], len(order)))
    group.update(report_name=group["suite"], only=None, seeds=None, complete=False,
                 failed_entries=[e["id"] for e in group["entries"] if e["status"] != "ok"])
    group["failed"] = len(group["failed_entries"])
    return group


def _drop_replaced_runs(full: dict, new: list[tuple[dict, Path]]) -> None:
    """The report's runs of every (entry, seed) the parts bring, dropped before the groups are
    merged in one by one: the seeds of an entry all rerun with new settings, at two commits, would
    otherwise be refused by the first group's merge (_merged_entry) as a mix with the old runs the
    second replaces. _refuse_mixed_parts has checked what the entry finally holds."""
    brought = {(entry["id"], run["seed"]) for part, _ in new for entry in part["entries"] for run in entry["runs"]}
    for entry in full["entries"]:
        entry["runs"] = [run for run in entry["runs"] if (entry["id"], run["seed"]) not in brought]


def _set_complete(report: dict, planned: Suite | None) -> None:
    """``complete``: every (entry, seed) the suite file plans has an OK run in the report (a
    failed run or one not made or not merged yet leaves it false). Without the suite file it
    stays as it was."""
    if planned is None:
        return
    ok = {(entry["id"], run["seed"]) for entry in report["entries"] for run in entry["runs"]
          if run.get("status") == "ok"}
    report["complete"] = all((entry.id, seed) in ok for entry in planned.entries for seed in entry.seeds)


def _merge_suite(parts: list[dict], files: list[Path], suite: str | os.PathLike | None) -> Suite | None:
    """Check every part against its suite file (_check_part_in_suite): ``suite`` (--suite, a path
    or a name) when given; else the part's ``suite_file`` (a path relative to the folder the run
    was made in, so read from the working directory) when it is that suite's, else the suite's
    name looked up as ``--suite NAME`` looks it up. Where none is found the runs are merged
    unchecked, said in one line on stderr. Returns the first suite file found (or None)."""
    name = parts[0]["suite"]
    if suite is not None:
        given = load_suite(suite)
        if given.name != name:
            raise ConfigError(f"--merge-from: the reports are of suite '{name}', not of --suite {suite}; "
                              "give the suite they were run from, or leave --suite out")
        found = {part["suite_file"]: given for part in parts}
    else:
        # Read once per path: a queue's root holds a part per (entry, seed), all naming one file.
        lookup = functools.lru_cache(maxsize=None)(lambda suite_file: _part_suite(suite_file, name))
        found = {part["suite_file"]: lookup(part["suite_file"]) for part in parts}
    for part, path in zip(parts, files):
        if found[part["suite_file"]] is not None:
            _check_part_in_suite(part, path, found[part["suite_file"]])
    unchecked = [suite_file for suite_file, planned in found.items() if planned is None]
    if unchecked:
        print(f"note: --merge-from: the runs were not checked against a suite file: no file of suite '{name}' at "
              f"{unchecked[0]} (from {Path.cwd()}) nor as {name}.toml in {', '.join(map(str, _suite_dirs()))}; "
              "pass --suite with the suite's file to check them", file=sys.stderr)
    return next((planned for planned in found.values() if planned is not None), None)


def _part_suite(suite_file: str, name: str) -> Suite | None:
    """Suite ``name`` as a part names it: its ``suite_file`` read from the working directory, else
    the name looked up in the suite folders (find_suite); None when neither is that suite."""
    if Path(suite_file).is_file():
        loaded = load_suite(suite_file)
        if loaded.name == name:
            return loaded
    try:
        loaded = load_suite(find_suite(name))
    except ConfigError:
        return None
    return loaded if loaded.name == name else None


def _check_part_in_suite(part: dict, path: Path, planned: Suite) -> None:
    """Every run of the part is of an entry and a seed of the suite file, made with the entry's
    settings there now: runs of an entry changed since would be merged and counted as done."""
    entries = {entry.id: entry for entry in planned.entries}
    for entry in part["entries"]:
        if entry["id"] not in entries:
            raise ConfigError(f"--merge-from {path}: entry '{entry['id']}' is not in {planned.path}; "
                              f"{close_names(entry['id'], entries)}")
        current = entries[entry["id"]]
        extra = sorted(run["seed"] for run in entry["runs"] if run["seed"] not in current.seeds)
        if extra:
            raise ConfigError(f"--merge-from {path}: entry '{entry['id']}' has a run of seed {extra[0]}, which "
                              f"{planned.path} does not list ({sorted(current.seeds)}); add the seed there first")
        changed = _changed_setting(entry, asdict(current))
        if changed:
            raise ConfigError(f"--merge-from {path}: entry '{entry['id']}' was run with {changed} = "
                              f"{entry.get(changed)!r}, but {planned.path} now gives it {changed} = "
                              f"{getattr(current, changed)!r}; rerun it with the current suite file, or restore "
                              "the suite file as it was when it ran to merge these runs")


def _check_run_records(parts: list[dict], files: list[Path]) -> None:
    """Every run of the parts says how it ended as the runner writes it: "ok" with an accuracy, or
    "failed" with its error. Without it the summary would count the run as failed with no reason
    (no status) or take an "ok" run without a figure."""
    for part, path in zip(parts, files):
        for entry in part["entries"]:
            for run in entry["runs"]:
                status, accuracy, error = run.get("status"), run.get("accuracy"), run.get("error")
                fine = (status == "ok" and isinstance(accuracy, (int, float)) and not isinstance(accuracy, bool)
                        and 0.0 <= accuracy <= 1.0) or (status == "failed" and isinstance(error, str) and error.strip())
                if not fine:
                    shown = "no status" if status is None else f"status {status!r}"
                    raise ConfigError(f"--merge-from {path}: entry '{entry['id']}' seed {run['seed']}: a run record with "
                                      f"{shown}, accuracy {accuracy!r} and error {error!r} is not one the runner "
                                      "writes ('ok' with an accuracy in [0, 1], or 'failed' with its error); run "
                                      "that entry and seed again into a fresh folder")


def _refuse_ties(parts: list[dict], files: list[Path], full: dict | None) -> None:
    """Two different runs of one (entry, seed) that finished at the same time: neither is newer."""
    seen: dict[tuple[str, int, str], tuple[dict, str]] = {}
    held = [(e, r, "the report in --output-dir") for e in (full or {}).get("entries", []) for r in e["runs"]]
    given = [(e, r, str(path)) for part, path in zip(parts, files) for e in part["entries"] for r in e["runs"]]
    for entry, run, where in held + given:
        if not run.get("finished"):
            continue
        key = (entry["id"], run["seed"], run["finished"])
        if key in seen and seen[key][0] != run:
            raise ConfigError(f"--merge-from: two different runs of {entry['id']} seed {run['seed']} finished at "
                              f"{run['finished']} ({seen[key][1]} and {where}); keep the one you want and remove "
                              "the other")
        seen.setdefault(key, (run, where))


def _finished(run: dict, part: dict) -> str:
    """When a run ended: its own record, or (runs made before runs recorded it) its report's
    date. UTC ISO timestamps, so they order as strings."""
    return run.get("finished") or part["date"]


def _runs_to_merge(parts: list[dict], files: list[Path], full: dict | None) -> list[tuple[dict, Path]]:
    """``parts`` (with their files) cut to the runs a merge should write: per (entry, seed) the
    one _chosen_runs picks, unless ``full`` holds it or a run it should not replace
    (_replaces_held). Parts left without a run are dropped; an entry keeps as ``seeds`` the seeds
    it brings a run of (a part cut off after some of its seeds planned more)."""
    chosen = _chosen_runs(parts, files)
    held = {(entry["id"], run["seed"]): run for entry in (full or {}).get("entries", []) for run in entry["runs"]}
    kept = []
    for index, (part, path) in enumerate(zip(parts, files)):
        entries = []
        for entry in part["entries"]:
            runs = [run for run in entry["runs"] if chosen[entry["id"], run["seed"]][0] == index
                    and _replaces_held(entry["id"], run, chosen[entry["id"], run["seed"]][1],
                                       held.get((entry["id"], run["seed"])), full, path)]
            seeds = sorted(run["seed"] for run in runs)
            if runs == entry["runs"] and entry["seeds"] == seeds:
                entries.append(entry)
            elif runs:  # its summary is recomputed from the runs it keeps
                entries.append(_with_runs(entry, runs, seeds))
        if entries:
            kept.append(({**part, "entries": entries}, path))
    return kept


def _chosen_runs(parts: list[dict], files: list[Path]) -> dict[tuple[str, int], tuple[int, str]]:
    """Per (entry, seed) of the parts: (the index of the part, when it finished) of the run to
    merge: the newest OK run, else the newest failed one (a tie goes to the later part). A failed
    run newer than the OK run chosen over it is said on stderr, as it is not the newest."""
    runs = [((entry["id"], run["seed"]), _finished(run, part), index, run)
            for index, part in enumerate(parts) for entry in part["entries"] for run in entry["runs"]]
    best: dict[tuple[str, int], tuple[tuple[bool, str], int]] = {}
    for key, when, index, run in runs:
        rank = (run.get("status") == "ok", when)
        if key not in best or rank >= best[key][0]:
            best[key] = (rank, index)
    for key, when, index, run in runs:
        (ok, ok_when), ok_index = best[key]
        if ok and run.get("status") != "ok" and when >= ok_when:
            _say_failed_run_passed_over(key, run, files[index], f"the report keeps the OK run of {ok_when} "
                                                                 f"in {files[ok_index]}")
    return {key: (index, when) for key, ((_, when), index) in best.items()}


def _replaces_held(entry_id: str, run: dict, when: str, held: dict | None, full: dict | None, path: Path) -> bool:
    """Whether ``run`` (finished ``when``, from the part in ``path``) goes into the report, which
    holds ``held`` of its (entry, seed): when it holds none, or an older run; a run with a result
    always replaces a failed one, and a failed run never replaces one with a result (said on
    stderr when it is the newer)."""
    if held is None:
        return True
    if held == run:
        return False
    if run.get("status") == "ok" and held.get("status") != "ok":
        return True
    # A held run made before runs recorded when they finished cannot be dated: only a run
    # that records it (made since) replaces it, never another undated one.
    newer = held["finished"] <= when if held.get("finished") else bool(run.get("finished"))
    if newer and run.get("status") != "ok" and held.get("status") == "ok":
        _say_failed_run_passed_over((entry_id, run["seed"]), run, path,
                                    f"the report keeps its OK run of {_finished(held, full)}")
        return False
    return newer


def _say_failed_run_passed_over(key: tuple[str, int], run: dict, where, kept: str) -> None:
    """One line on stderr for a failed run left out because a run of its seed has a result: an
    out-of-memory kill or a retry cut off would otherwise have replaced that result."""
    words = str(run.get("error") or "").split()
    error = " ".join(words[:10]) + (" ..." if len(words) > 10 else "")
    print(f"note: {key[0]} seed {key[1]}: the run in {where} failed ({error}); {kept}", file=sys.stderr)


def _refuse_mixed_parts(full: dict | None, new: list[tuple[dict, Path]]) -> None:
    """A ConfigError, before anything is written, where the runs one entry would hold after the
    merge were made with different settings: the report's runs of the seeds no part brings, and
    each part's (two parts' runs as well, whatever commit they were made at)."""
    brought: dict[str, set[int]] = {}
    for part, _ in new:
        for entry in part["entries"]:
            brought.setdefault(entry["id"], set()).update(run["seed"] for run in entry["runs"])
    first: dict[str, tuple[dict, str]] = {}
    for entry in (full or {}).get("entries", []):
        kept = sorted(run["seed"] for run in entry["runs"] if run["seed"] not in brought.get(entry["id"], ()))
        if kept:
            first[entry["id"]] = (entry, f"the report's runs of seed(s) {', '.join(map(str, kept))}")
    for part, path in new:
        for entry in part["entries"]:
            seeds = ", ".join(str(run["seed"]) for run in entry["runs"])
            if entry["id"] not in first:
                first[entry["id"]] = (entry, f"the runs of seed(s) {seeds} in {path}")
                continue
            old, described = first[entry["id"]]
            changed = _changed_setting(old, entry)
            if changed:
                raise _mixed_settings_error(f"--merge-from {path}: ", entry["id"], described, changed, old, entry)


def combine_by_commit(parts: Sequence[dict], command: str | None = None) -> list[dict]:
    """Reports of runs made apart, joined into one report per commit (and dirty flag) they
    were made at and CPU model they ran on, in the order of each group's first run: a joined
    report names one machine (its first part's), so runs of a lent GPU machine and of this one
    at the same commit keep a record each."""
    by_commit: dict[tuple, list[dict]] = {}
    for part in sorted(parts, key=lambda p: p["date"]):
        git = part.get("git") or {}
        cpu = (part.get("machine") or {}).get("cpu_model")
        by_commit.setdefault((git.get("commit"), bool(git.get("dirty")), cpu), []).append(part)
    return [_combined_parts(group, command) for group in by_commit.values()]


def _combined_parts(parts: list[dict], command: str | None) -> dict:
    """One report of the runs of ``parts`` (made at one commit), joined by entry and seed."""
    entries: dict[str, dict] = {}
    for part in parts:
        for entry in part["entries"]:
            old = entries.get(entry["id"])
            entries[entry["id"]] = _merged_entry(old, entry) if old else entry
    combined = {**parts[0], "entries": list(entries.values()), "date": min(p["date"] for p in parts),
                "wall_seconds": sum(p.get("wall_seconds", 0.0) for p in parts), "only": sorted(entries),
                "command": command or "; ".join(dict.fromkeys(p["command"] for p in parts))}
    combined.pop("files", None)
    return combined


def _read_report(path: Path, *, suite_report: bool = False) -> dict:
    """A benchmark report, checked: a part given to ``--merge-from``, or (``suite_report``) the
    suite's report in ``--output-dir`` that the parts are merged into."""
    import json

    if suite_report:
        where, remedy = f"{path}", f"restore it (git checkout -- {path}) or rerun the suite"
    else:
        where = f"--merge-from {path}"
        remedy = "name the folders or the <suite>.json files that textcls benchmark wrote"
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{where}: not a benchmark report (not JSON: {exc}); {remedy}") from None
    if not isinstance(report, dict) or not isinstance(report.get("entries"), list) or "suite" not in report:
        raise ConfigError(f"{where}: not a benchmark report (no suite and entries); {remedy}")
    entries_ok = all(isinstance(e, dict) and "id" in e and isinstance(e.get("runs"), list)
                     and all(isinstance(r, dict) and _is_seed(r.get("seed")) for r in e["runs"])
                     and len({r["seed"] for r in e["runs"]}) == len(e["runs"])  # one run a seed
                     for e in report["entries"])
    if not isinstance(report.get("date"), str) or not entries_ok:
        raise ConfigError(f"{where}: a damaged benchmark report (no date, or an entry without an id, seeded "
                          "runs or with two runs of one seed); " + (remedy if suite_report else "run that entry and seed again into a fresh folder"))
    if suite_report:  # a part's are checked by merge_run_files (rebuild_rerun_records.py reads old parts)
        _check_report_fields(report, where, suite_report)
    if not suite_report and not any(e["runs"] for e in report["entries"]):
        raise ConfigError(f"{where}: the report holds no run; run its entries again, or leave it out")
    return report


def _is_utc_time(value) -> bool:
    """A timestamp as the runner writes them (``date``, a run's ``finished``): ISO 8601 in UTC,
    so that they order as strings."""
    if not isinstance(value, str):
        return False
    try:
        when = _dt.datetime.fromisoformat(value)
    except ValueError:
        return False
    return when.utcoffset() == _dt.timedelta(0) and value.endswith("+00:00")


def _check_report_fields(report: dict, where: str, suite_report: bool) -> None:
    """The fields a merge or ``--render`` reads, of the types the runner writes, and at least one
    entry, each id once: a hand-edited report or part is refused by file, entry and field, never
    a KeyError or TypeError half way through the merge, nor rendered into a table of nonsense."""
    remedy = ("restore it (git checkout) or rerun the suite" if suite_report
              else "restore the part as textcls benchmark wrote it, or run its entries again into a fresh folder")

    def refuse(field_name: str, value, wanted: str):
        raise ConfigError(f"{where}: field '{field_name}' = {value!r} is not {wanted}; {remedy}")

    fields = [("suite", lambda v: isinstance(v, str) and bool(v), "a suite name"),
              ("date", _is_utc_time, "a UTC ISO 8601 time such as 2026-01-31T12:00:00+00:00"),
              ("git", lambda v: v is None or isinstance(v, dict), "a table of the commit (or null)"),
              ("machine", lambda v: v is None or isinstance(v, dict), "a table of the machine (or null)")]
    if not suite_report:
        fields += [("command", lambda v: isinstance(v, str) and bool(v.strip()), "the command that made it"),
                   ("suite_file", lambda v: isinstance(v, str) and bool(v), "the suite file's path")]
    for name, fine, wanted in fields:
        if name not in report and name not in ("git", "machine"):
            raise ConfigError(f"{where}: field '{name}' is missing; {remedy}")
        if not fine(report.get(name)):
            refuse(name, report.get(name), wanted)
    if not report["entries"]:
        refuse("entries", report["entries"], "a list of the suite's entries (at least one)")
    numbers: dict[str, int] = {}
    for number, entry in enumerate(report["entries"], start=1):
        if not isinstance(entry["id"], str) or not entry["id"]:
            refuse(f"entries[{number}].id", entry["id"], "an entry id such as trec:tfidf-lr")
        if entry["id"] in numbers:
            raise ConfigError(f"{where}: entries {numbers[entry['id']]} and {number} both have id '{entry['id']}'; "
                              f"a report holds one entry per id: {remedy}")
        numbers[entry["id"]] = number
        for name, fine, wanted in _ENTRY_FIELDS:
            if not fine(entry.get(name)):
                raise ConfigError(f"{where}: entry {number} ('{entry['id']}'): field '{name}' = {entry.get(name)!r} "
                                  f"is not {wanted}; {remedy}")
        for run in entry["runs"]:
            if run.get("finished") is not None and not _is_utc_time(run["finished"]):
                refuse(f"{entry['id']} seed {run['seed']}: finished", run["finished"],
                       "a UTC ISO 8601 time such as 2026-01-31T12:00:00+00:00")


def _is_seed(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_name(value) -> bool:
    return isinstance(value, str) and bool(value.strip())


# What the tables show of each entry of a report, of the types the runner writes (Entry and
# _entry_result): a hand edit to another type rendered with exit 0 as a table of nonsense (a row
# of model None, a seeds column counting the characters of "0, 1", an entry twice).
_ENTRY_FIELDS = (
    ("dataset", _is_name, "a dataset name such as trec"),
    ("model", _is_name, "a preset or peer name such as tfidf-lr"),
    ("name", lambda v: v is None or _is_name(v), "the entry's display name (or null)"),
    ("seeds", lambda v: isinstance(v, list) and bool(v) and all(map(_is_seed, v)) and len(set(v)) == len(v),
     "a list of distinct seeds such as [0, 1, 2]"),
    ("status", lambda v: v in ("ok", "partial", "failed"), "'ok', 'partial' or 'failed'"),
    ("overrides", lambda v: v is None or isinstance(v, dict), "a table of parameter = value"),
    ("summary", lambda v: v is None or isinstance(v, dict), "a table of figures by metric"),
)


def merge_rerun(rerun: dict, output_dir: str | os.PathLike, suite: Suite | None = None) -> dict:
    """Put the entries of an ``--only`` rerun into the suite's full report, in place
    (_rerun_merged), its ``complete`` recomputed from ``suite`` (the suite file) when given."""
    from . import report

    full_path = Path(output_dir) / f"{rerun['suite']}.json"
    if not full_path.is_file():
        raise ConfigError(f"{full_path}: no full report of suite '{rerun['suite']}' to merge into; "
                          "run the whole suite first or drop --merge")
    full = _rerun_merged(_read_report(full_path, suite_report=True), rerun)
    _set_complete(full, suite)
    report.write_report(full, output_dir)
    return full


def _rerun_merged(full: dict, rerun: dict) -> dict:
    """``full`` (a suite's report, changed in place) with the entries of ``rerun`` merged in.

    Each rerun entry replaces the entry with the same id, but for a failed run of a seed the
    report holds an OK run of (kept, and said on stderr); the full report records which entries
    were rerun, at which commit, when and with which command, so every number in it still says
    where it came from."""
    positions = {entry["id"]: i for i, entry in enumerate(full["entries"])}
    for entry in rerun["entries"]:
        if entry["id"] not in positions:
            full["entries"].append(entry)
            continue
        old = full["entries"][positions[entry["id"]]]
        held = {run["seed"]: run for run in old["runs"] if run.get("status") == "ok"}
        runs = [run for run in entry["runs"] if run.get("status") == "ok" or run["seed"] not in held]
        for run in entry["runs"]:
            if run not in runs:
                _say_failed_run_passed_over((entry["id"], run["seed"]), run, "this rerun",
                                            f"the report keeps its OK run of {_finished(held[run['seed']], full)}")
        if runs:
            new = entry if runs == entry["runs"] else _with_runs(entry, runs, sorted(run["seed"] for run in runs))
            full["entries"][positions[entry["id"]]] = _merged_entry(old, new)
    full.setdefault("reruns", []).append(rerun_record(rerun))
    full["notes"] = rerun.get("notes", full.get("notes"))
    full["failed_entries"] = [e["id"] for e in full["entries"] if e["status"] != "ok"]
    full["failed"] = len(full["failed_entries"])
    full.pop("files", None)
    return full


def rerun_record(rerun: dict) -> dict:
    """What a suite's report keeps of a rerun merged into it: its entries, commit, date,
    command, seconds, machine and devices."""
    return {"entries": [e["id"] for e in rerun["entries"]], "git": rerun.get("git"),
            "date": rerun.get("date"), "command": rerun.get("command"),
            "wall_seconds": rerun.get("wall_seconds"), "machine": rerun.get("machine"),
            "devices": sorted({run.get("device", "cpu") for e in rerun["entries"] for run in e["runs"]})}


def _merged_entry(old: dict, new: dict) -> dict:
    """``new``'s runs replace ``old``'s runs of the same seeds; ``old``'s other seeds stay. A
    rerun of every seed therefore replaces the entry, and a rerun of one seed (``--seed``)
    fills in that seed alone, made with the same settings (else refused: _refuse_mixed_setting).
    Its ``seeds`` are the seeds it has a run of (what the tables count), not those planned."""
    _refuse_mixed_setting(old, new, "")
    new_seeds = {run["seed"] for run in new["runs"]}
    runs = sorted([r for r in old["runs"] if r["seed"] not in new_seeds] + new["runs"], key=lambda r: r["seed"])
    return _with_runs(new, runs, [run["seed"] for run in runs])


# What an entry's runs were made with: a seed's run made with other values is another experiment.
RUN_SETTINGS = ("dataset", "model", "overrides", "max_per_split")  # what makes two runs of an entry one experiment


def changed_settings(old: dict, new: dict, keys: Sequence[str] = RUN_SETTINGS) -> list[str]:
    """The ``keys`` (of RUN_SETTINGS) in which two entries (reports, or suite Entries as dicts) differ."""
    return [key for key in keys if (old.get(key) or None) != (new.get(key) or None)]


def _changed_setting(old: dict, new: dict) -> str | None:
    """The first of RUN_SETTINGS in which two entries differ (``changed_settings``)."""
    return next(iter(changed_settings(old, new)), None)


def _mixed_settings_error(where: str, entry_id: str, described: str, changed: str, old: dict,
                          new: dict) -> ConfigError:
    """The refusal of runs of one entry made with two settings: ``described`` (which runs, where)
    were made with ``old``'s value, the runs merged now with ``new``'s."""
    return ConfigError(
        f"{where}entry '{entry_id}': {described} were made with {changed} = {old.get(changed)!r}, these with "
        f"{changed} = {new.get(changed)!r}; merged, one entry would average two settings: rerun every seed of "
        "the entry (which replaces it), or give the new setting an entry of its own in the suite file")


def _refuse_mixed_settings(full: dict, entries: list[dict], where: str) -> None:
    """A ConfigError where one of ``entries`` (an entry's report, or a suite Entry as a dict; its
    ``runs``, else its ``seeds``, say which seeds it brings) differs in a run setting from the entry
    of the same id in ``full``, which keeps runs of other seeds: the merged entry would average
    two settings under one name, the new one's. An entry changed in the suite file and rerun with
    --merge --seed did so, silently."""
    old_entries = {entry["id"]: entry for entry in full["entries"]}
    for new in entries:
        if new["id"] in old_entries:
            _refuse_mixed_setting(old_entries[new["id"]], new, where)


def _refuse_mixed_setting(old: dict, new: dict, where: str) -> None:
    """_refuse_mixed_settings for one entry: ``old`` in the report, ``new`` merged into it."""
    seeds = {run["seed"] for run in new["runs"]} if "runs" in new else set(new["seeds"])
    kept = sorted(run["seed"] for run in old["runs"] if run["seed"] not in seeds)
    changed = _changed_setting(old, new)
    if kept and changed:
        raise _mixed_settings_error(where, new["id"], f"the report's runs of seed(s) {', '.join(map(str, kept))}",
                                    changed, old, new)


def _with_runs(entry: dict, runs: list[dict], seeds: list[int]) -> dict:
    """``entry``'s report with these runs and seeds, its summary computed from the runs."""
    # An entry recorded before a field existed lacks it: the field's default stands.
    fields = {key: entry[key] for key in Entry.__dataclass_fields__ if key in entry}
    fields["seeds"] = seeds
    return _entry_result(Entry(**fields), entry.get("kind"), runs)


def _report_name(suite: str, only, seeds=None) -> str:
    if seeds:
        return f"{_report_name(suite, only)}--seeds-{'-'.join(str(s) for s in sorted(set(seeds)))}"
    if not only:
        return suite
    wanted = [only] if isinstance(only, str) else list(only)
    safe = "+".join("".join(c if c.isalnum() or c in "-_." else "-" for c in w) for w in wanted)
    if len(safe) > 80:
        # File names stop at 255 bytes: a long --only list is named by its first item and a digest.
        digest = hashlib.sha1("\n".join(wanted).encode()).hexdigest()[:10]
        safe = f"{safe[:40]}+{len(wanted) - 1}-more-{digest}"
    return f"{suite}--only-{safe}"


def _checkpoint(result: dict, output_dir: Path, write: bool, wall: float) -> None:
    """Rewrite the JSON after every entry, so that an interrupted suite keeps what it ran."""
    if not write:
        return
    from . import report

    result["wall_seconds"] = time.perf_counter() - wall
    report.write_json(result, output_dir)


def _progress(enabled: bool, line: str) -> None:
    if enabled:
        print(line, file=sys.stderr, flush=True)
