"""How far each suite has run, from its file and its committed report alone: the (entry, seed)
runs it still lacks (``missing_runs``, the queue of ``benchmarks/missing_runs.py``), and for the
full-tier suites (``benchmarks/suites/*_full.toml``) runs planned, finished and missing with an
estimate of the one-thread CPU hours left -> REPRODUCTION.md's "How far each full suite has run".

A run counts as finished when its record in ``<results>/<suite>.json`` has an accuracy and its
entry there has the suite file's dataset, model, overrides and max_per_split (runs made with a
recipe the suite file has since changed are stale: that recipe has not run). The
estimate of a missing run is the mean wall time of its entry's finished runs timed on the CPU
with their cores to themselves (``report.timed_alone_on_cpu``: a run beside more jobs than cores
would count their load as its own), a resumed run's earlier processes included. An entry with
none takes, in ``full_suite_progress``, the mean of the finished CPU runs of the entries of every full suite
with the same dataset, model, overrides and max_per_split (``timed_settings``): those run the
same code on the same data whichever suite lists them (the peers, above all). An entry with none but
with an epoch timed by ``benchmarks/time_epochs.py`` (``<results>/epoch_times/<suite>.json`` and
``<suite>_*.json`` written for that suite) gets another figure, listed apart: its epoch cap x (one
training epoch + one dev pass) in CPU seconds of the process, start-up and test left out. It is
not a bound on the wall clock (a busy machine stretches that, and start-up is left out), only on
the training a run can do. An entry with neither leaves its missing runs untimed."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

from ..errors import DataError
from .report import MIN_CPU_SHARE, read_committed, timed_alone_on_cpu, timed_settings
from .runner import RUN_SETTINGS, Suite, changed_settings, load_suite

__all__ = ["missing_runs", "Queue", "StaleEntry", "queue_state", "recipe_changes", "cpu_seconds_per_run", "cpu_seconds_by_settings", "epoch_cap_seconds", "timed_settings",
           "entry_settings", "Remaining", "SuiteProgress", "suite_progress", "full_suite_progress", "format_progress"]

FULL_SUITES = "*_full.toml"
EPOCH_TIMES = "epoch_times"  # benchmarks/time_epochs.py's folder under the results


def _report_entries(results: Path, suite: Suite) -> dict[str, dict]:
    """The entry records by id in ``<results>/<suite>.json`` ({} without a report)."""
    report = Path(results) / f"{suite.name}.json"
    if not report.is_file():
        return {}
    entries = read_committed(report).get("entries")
    if not isinstance(entries, list) or not all(isinstance(e, dict) and "id" in e and isinstance(e.get("runs"), list)
                                                for e in entries):
        raise DataError(f"{report}: a damaged report (its entries are not a list of entries with runs); restore it "
                        f"(git checkout -- {report}) or make it again")
    return {entry["id"]: entry for entry in entries}


def recipe_changes(entry, record: dict) -> list[tuple[str, object, object]]:
    """(setting, the report's value, the suite file's) for each of dataset, model, overrides and
    max_per_split on which the record of ``entry`` in a report differs from the suite file's
    ``entry``: its runs were made with a recipe the suite file no longer has. A setting the record
    lacks is not compared (every report records all four; hand-made ones may not)."""
    current = asdict(entry)
    compared = [key for key in RUN_SETTINGS if key in record]
    return [(key, record[key], current[key]) for key in changed_settings(record, current, compared)]


def _current_runs(suite: Suite, records: dict[str, dict]) -> dict[str, list[dict]]:
    """The run records by entry id, but none for an entry whose recipe changed since
    (``recipe_changes``): its runs are not of the suite file's recipe, which is still to run."""
    entries = {e.id: e for e in suite.entries}
    return {entry_id: [] if entry_id in entries and recipe_changes(entries[entry_id], record) else record["runs"]
            for entry_id, record in records.items()}


def _report_runs(results: Path, suite: Suite) -> dict[str, list[dict]]:
    """The run records of each entry id in ``<results>/<suite>.json`` ({} without a report), stale
    ones left out (``_current_runs``)."""
    return _current_runs(suite, _report_entries(results, suite))


def _finished(runs: Sequence[dict]) -> list[dict]:
    return [run for run in runs if run.get("accuracy") is not None]


def _wanted(suite: Suite, only: Sequence[str] | None) -> list:
    """The suite's entries whose id contains one of the strings in ``only`` (all without)."""
    return [e for e in suite.entries if not only or any(s in e.id for s in only)]


def _seed_major(runs: list[tuple[str, int]], wanted: list) -> list[tuple[str, int]]:
    """(entry id, seed) runs seed-major (every entry's next seed before any entry's later one), in
    the suite file's entry order."""
    order = {e.id: i for i, e in enumerate(wanted)}
    return sorted(runs, key=lambda run: (run[1], order[run[0]]))


def _finished_seeds(wanted: list, by_entry: dict[str, list[dict]]) -> dict[str, set[int]]:
    return {e.id: {run["seed"] for run in _finished(by_entry.get(e.id, []))} for e in wanted}


def _missing(suite: Suite, by_entry: dict[str, list[dict]], only: Sequence[str] | None = None) -> list[tuple[str, int]]:
    """The (entry id, seed) runs of ``suite`` without a finished record, seed-major, in the suite
    file's entry order."""
    wanted = _wanted(suite, only)
    present = _finished_seeds(wanted, by_entry)
    return _seed_major([(e.id, seed) for e in wanted for seed in e.seeds if seed not in present[e.id]], wanted)


@dataclass(frozen=True)
class StaleEntry:
    """An entry whose finished runs in the report (``seeds``) were made with another recipe than the
    suite file's: ``changes`` = (setting, the report's value, the suite file's), ``recipe_changes``."""

    entry: str
    seeds: tuple[int, ...]
    changes: tuple[tuple[str, object, object], ...]


@dataclass(frozen=True)
class Queue:
    """Where a suite stands against its report: the runs ``missing`` (the queue), those ``finished``
    with the suite file's recipe (both seed-major, in the suite file's entry order), and the
    entries whose runs in the report are ``stale`` (their seeds are among the missing)."""

    missing: list[tuple[str, int]]
    finished: list[tuple[str, int]]
    stale: list[StaleEntry]


def queue_state(suite: str | os.PathLike, results: Path, only: Sequence[str] | None = None) -> Queue:
    """``Queue`` of a suite (a name or a file) against ``<results>/<suite>.json``; ``only`` keeps
    the entries whose id contains one of the strings."""
    loaded = load_suite(suite)
    records = _report_entries(Path(results), loaded)
    by_entry = _current_runs(loaded, records)
    wanted = _wanted(loaded, only)
    present = _finished_seeds(wanted, by_entry)
    stale = []
    for e in wanted:
        changes = recipe_changes(e, records[e.id]) if e.id in records else []
        made = sorted(run["seed"] for run in _finished(records[e.id]["runs"])) if changes else []
        if made:
            stale.append(StaleEntry(e.id, tuple(made), tuple(changes)))
    return Queue(missing=_missing(loaded, by_entry, only),
                 finished=_seed_major([(e.id, seed) for e in wanted for seed in sorted(present[e.id])], wanted),
                 stale=stale)


def missing_runs(suite: str | os.PathLike, results: Path, only: Sequence[str] | None = None) -> list[tuple[str, int]]:
    """The (entry id, seed) runs a suite (a name or a file) still lacks in ``<results>/<suite>.json``:
    seed-major, in the suite file's entry order; ``only`` keeps the entries whose id contains one
    of the strings."""
    return queue_state(suite, results, only).missing


def _run_seconds(run: dict) -> float:
    # A run resumed from a checkpoint records the wall time of its last process only; the
    # seconds its checkpointed epochs took before are in ``resumed`` (their data preparation is not).
    return run["wall_seconds"] + (run.get("resumed") or {}).get("seconds_before", 0.0)


def cpu_seconds_per_run(runs: Sequence[dict]) -> float | None:
    """The mean wall seconds of the finished runs among ``runs`` timed on the CPU with their cores
    to themselves (``report.timed_alone_on_cpu``), a resumed run's earlier
    processes included, or None without one."""
    timed = [_run_seconds(run) for run in _finished(runs)
             if timed_alone_on_cpu(run) and run.get("wall_seconds") is not None]
    return sum(timed) / len(timed) if timed else None


def _epoch_rows(results: Path, suite_name: str) -> list[dict]:
    """The rows of ``<results>/epoch_times/<suite>.json``, then of ``<suite>_*.json`` by name
    (time_epochs.py's extra files: other vectors, say), that carry all a bound needs. A file
    counts only when its ``suite`` is this suite: ``cspan_*.json`` also finds cspan_full's."""
    folder = Path(results) / EPOCH_TIMES
    files = [folder / f"{suite_name}.json"] + sorted(folder.glob(f"{suite_name}_*.json"))
    rows = []
    for path in files:
        timed = read_committed(path) if path.is_file() else {}
        if timed.get("suite") == suite_name:
            rows += [row for row in timed.get("rows", [])
                     if all(isinstance(row.get(key), (int, float))
                            for key in ("epochs_cap", "train_epoch_seconds", "dev_seconds"))]
    return rows


def entry_settings(entry) -> tuple:
    """``timed_settings`` of a suite entry."""
    return timed_settings(entry.dataset, entry.model, entry.overrides, entry.max_per_split)


def cpu_seconds_by_settings(runs_by_suite: Sequence[tuple[Suite, dict[str, list[dict]]]]) -> dict[tuple, float]:
    """``timed_settings`` -> the mean wall seconds of the finished CPU runs of every entry with
    those settings in the given (suite, its run records by entry id) pairs (their runs pooled),
    for the entries of any suite without a finished CPU run of their own."""
    pooled: dict[tuple, list[dict]] = {}
    for suite, by_entry in runs_by_suite:
        for entry in suite.entries:
            pooled.setdefault(entry_settings(entry), []).extend(by_entry.get(entry.id, []))
    means = {settings: cpu_seconds_per_run(runs) for settings, runs in pooled.items()}
    return {settings: seconds for settings, seconds in means.items() if seconds is not None}


def epoch_cap_seconds(results: Path, suite: Suite) -> dict[str, float]:
    """Entry id -> CPU seconds of one run at its epoch cap, epochs_cap x (training epoch + dev
    pass), from time_epochs.py's rows, without start-up and test pass. A row counts for an entry
    of the same dataset, model, overrides and max_per_split (time_epochs.py times each such set of
    settings once), the row naming the entry first, then the first file's; a row whose settings
    no longer agree with the entry it names does not count for it."""
    by_settings: dict[tuple, float] = {}
    named: dict[tuple, float] = {}
    for row in _epoch_rows(results, suite.name):
        seconds = row["epochs_cap"] * (row["train_epoch_seconds"] + row["dev_seconds"])
        settings = timed_settings(row.get("dataset"), row.get("model"), row.get("overrides"), row.get("max_per_split"))
        by_settings.setdefault(settings, seconds)
        named.setdefault((row.get("entry"), settings), seconds)
    bounds = {}
    for entry in suite.entries:
        settings = entry_settings(entry)
        seconds = named.get((entry.id, settings), by_settings.get(settings))
        if seconds is not None:
            bounds[entry.id] = seconds
    return bounds


@dataclass(frozen=True)
class Remaining:
    """What is left of some runs: how many; the estimated seconds of those whose entry has
    finished CPU runs; how many have no estimate at all (``untimed``); and of the others, whose
    entry has only a timed epoch, how many (``capped``) and their CPU seconds at the epoch cap."""

    missing: int = 0
    seconds: float = 0.0
    untimed: int = 0
    capped: int = 0
    capped_seconds: float = 0.0

    def __add__(self, other: Remaining) -> Remaining:
        return Remaining(self.missing + other.missing, self.seconds + other.seconds, self.untimed + other.untimed,
                         self.capped + other.capped, self.capped_seconds + other.capped_seconds)


@dataclass(frozen=True)
class SuiteProgress:
    """One suite's runs planned (entries x seeds), finished and what is left, in total and per
    dataset (datasets with runs left only, in the suite file's order)."""

    suite: str
    planned: int
    finished: int
    left: Remaining
    datasets: tuple[tuple[str, Remaining], ...]


def suite_progress(suite: str | os.PathLike, results: Path) -> SuiteProgress:
    """How far ``suite`` (a name or a file) has run in ``<results>/<suite>.json``, from its own
    runs and epoch rows alone (``full_suite_progress`` also borrows across the full suites)."""
    loaded = load_suite(suite)
    return _progress(loaded, _report_runs(Path(results), loaded), Path(results), {})


def _progress(loaded: Suite, by_entry: dict[str, list[dict]], results: Path,
              same_settings: dict[tuple, float]) -> SuiteProgress:
    """``loaded``'s progress from its run records by entry id; an entry without a finished CPU run
    takes its settings' seconds from ``same_settings`` (``cpu_seconds_by_settings``) if there."""
    missing = _missing(loaded, by_entry)
    entries = {e.id: e for e in loaded.entries}
    order = {entry_id: i for i, entry_id in enumerate(entries)}
    per_run = {}
    for entry_id in {run[0] for run in missing}:
        own = cpu_seconds_per_run(by_entry.get(entry_id, []))
        per_run[entry_id] = own if own is not None else same_settings.get(entry_settings(entries[entry_id]))
    bounds = epoch_cap_seconds(results, loaded)
    datasets: dict[str, Remaining] = {}
    for entry_id, _seed in sorted(missing, key=lambda run: order[run[0]]):
        seconds, bound = per_run[entry_id], bounds.get(entry_id)
        if seconds is not None:
            one = Remaining(1, seconds)
        elif bound is not None:
            one = Remaining(1, capped=1, capped_seconds=bound)
        else:
            one = Remaining(1, untimed=1)
        dataset = entries[entry_id].dataset
        datasets[dataset] = datasets.get(dataset, Remaining()) + one
    planned = sum(len(e.seeds) for e in loaded.entries)
    return SuiteProgress(suite=loaded.name, planned=planned, finished=planned - len(missing),
                         left=sum(datasets.values(), Remaining()), datasets=tuple(datasets.items()))


def full_suite_progress(results: Path, suites_dir: Path, first: Sequence[str] = ()) -> list[SuiteProgress]:
    """``suite_progress`` of every ``*_full.toml`` in ``suites_dir`` (none when it is absent):
    the suites named in ``first`` in that order, then the others by name. An entry without a
    finished CPU run of its own is timed by the same settings' runs in all of them."""
    paths = sorted(Path(suites_dir).glob(FULL_SUITES)) if Path(suites_dir).is_dir() else []
    rank = {name: i for i, name in enumerate(first)}
    paths.sort(key=lambda p: (rank.get(p.stem, len(rank)), p.stem))
    runs_by_suite = [(suite, _report_runs(Path(results), suite)) for suite in map(load_suite, paths)]
    same_settings = cpu_seconds_by_settings(runs_by_suite)  # each report is read once, for both uses
    return [_progress(suite, by_entry, Path(results), same_settings) for suite, by_entry in runs_by_suite]


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f}"


def _dataset_note(dataset: str, left: Remaining) -> str:
    timed = left.missing - left.capped - left.untimed
    if timed == left.missing:
        return f"{dataset}: {left.missing} missing, ~{_hours(left.seconds)} h"
    if left.untimed == left.missing:
        return f"{dataset}: {left.missing} missing, untimed"
    parts = [f"{timed} ~{_hours(left.seconds)} h"] if timed else []
    if left.capped:
        parts.append(f"{left.capped} up to ~{_hours(left.capped_seconds)} h of CPU at the epoch cap")
    if left.untimed:
        parts.append(f"{left.untimed} untimed")
    return f"{dataset}: {left.missing} missing: " + ", ".join(parts)


def format_progress(progress: Sequence[SuiteProgress]) -> list[str]:
    """The section's Markdown lines: a row per suite, then its datasets with runs left; no
    lines without suites."""
    if not progress:
        return []
    lines = ["## How far each full suite has run", "",
             "Placed right after the summary, so that a verdict's n can be read against what its suite "
             "plans. A run is finished when its record in `benchmarks/results/<suite>.json` has an "
             "accuracy and its entry there the suite file's dataset, model, overrides and slice; "
             "planned = every entry of `benchmarks/suites/<suite>.toml` x its seeds. The hours "
             "left are a planning figure from our own finished runs, on whatever CPU they ran on: each "
             "missing run counts the mean wall time of its entry's finished CPU runs (a resumed run's "
             "earlier processes included; runs on a GPU, with cached features or that shared their cores "
             f"(less than {MIN_CPU_SHARE:.0%} of a core, `report.cpu_share`) left out), or, where its "
             "entry has none, of the finished CPU runs of the entries with the same dataset, model, "
             "overrides and slice in all the full suites (the same code on the same data: the peers, "
             "above all). A missing run "
             "whose entry has no such finished run but whose epoch was timed by "
             "`benchmarks/time_epochs.py` (`benchmarks/results/epoch_times/`) gets another figure, listed "
             "apart and in another unit: its epoch cap x (one training epoch + one dev pass), in CPU seconds "
             "of the process, start-up and test pass left out. Early stopping makes most runs train less; a "
             "busy machine makes the wall clock longer. A missing "
             "run with neither is counted as untimed, not guessed, and adds nothing to the hours. The queue of "
             "a suite's missing runs: `python benchmarks/missing_runs.py SUITE`.", "",
             "| suite | planned | finished | missing | ~CPU hours left (timed part) "
             "| runs with a timed epoch only | their CPU hours of training at the epoch cap | untimed runs |",
             "|---|---|---|---|---|---|---|---|"]
    for p in progress:
        lines.append(f"| `{p.suite}` | {p.planned} | {p.finished} | {p.left.missing} | "
                     f"{_hours(p.left.seconds)} | {p.left.capped} | {_hours(p.left.capped_seconds)} | "
                     f"{p.left.untimed} |")
    lines += ["", "Runs missing per dataset (one-thread CPU hours):", ""]
    for p in progress:
        notes = "; ".join(_dataset_note(dataset, left) for dataset, left in p.datasets)
        lines.append(f"- `{p.suite}`: " + (notes if notes else "complete"))
    return lines
