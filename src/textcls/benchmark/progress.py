"""How far each suite has run, from its file and its committed report alone: the (entry, seed)
runs it still lacks (``missing_runs``, the queue of ``benchmarks/missing_runs.py``), and for the
full-tier suites (``benchmarks/suites/*_full.toml``) runs planned, finished and missing with an
estimate of the one-thread CPU hours left -> REPRODUCTION.md's "How far each full suite has run".

A run counts as finished when its record in ``<results>/<suite>.json`` has an accuracy. The
estimate of a missing run is the mean wall time of its entry's finished runs timed on the CPU
(``report.timed_on_cpu``), a resumed run's earlier processes included; an entry with none
leaves its missing runs untimed."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from .report import timed_on_cpu
from .runner import Suite, load_suite

__all__ = ["missing_runs", "cpu_seconds_per_run", "Remaining", "SuiteProgress", "suite_progress",
           "full_suite_progress", "format_progress"]

FULL_SUITES = "*_full.toml"


def _report_runs(results: Path, suite: Suite) -> dict[str, list[dict]]:
    """The run records of each entry id in ``<results>/<suite>.json`` ({} without a report)."""
    report = Path(results) / f"{suite.name}.json"
    if not report.is_file():
        return {}
    return {entry["id"]: entry["runs"] for entry in json.loads(report.read_text(encoding="utf-8"))["entries"]}


def _finished(runs: Sequence[dict]) -> list[dict]:
    return [run for run in runs if run.get("accuracy") is not None]


def _missing(suite: Suite, by_entry: dict[str, list[dict]], only: Sequence[str] | None = None) -> list[tuple[str, int]]:
    """The (entry id, seed) runs of ``suite`` without a finished record, seed-major (every
    entry's next seed before any entry's later one), in the suite file's entry order."""
    wanted = [e for e in suite.entries if not only or any(s in e.id for s in only)]
    present = {e.id: {run["seed"] for run in _finished(by_entry.get(e.id, []))} for e in wanted}
    runs = [(e.id, seed) for e in wanted for seed in e.seeds if seed not in present[e.id]]
    order = {e.id: i for i, e in enumerate(wanted)}
    return sorted(runs, key=lambda run: (run[1], order[run[0]]))


def missing_runs(suite: str | os.PathLike, results: Path, only: Sequence[str] | None = None) -> list[tuple[str, int]]:
    """The (entry id, seed) runs a suite (a name or a file) still lacks in ``<results>/<suite>.json``:
    seed-major, in the suite file's entry order; ``only`` keeps the entries whose id contains one
    of the strings."""
    loaded = load_suite(suite)
    return _missing(loaded, _report_runs(Path(results), loaded), only)


def _run_seconds(run: dict) -> float:
    # A run resumed from a checkpoint records the wall time of its last process only; the
    # seconds its checkpointed epochs took before are in ``resumed`` (their data preparation is not).
    return run["wall_seconds"] + (run.get("resumed") or {}).get("seconds_before", 0.0)


def cpu_seconds_per_run(runs: Sequence[dict]) -> float | None:
    """The mean wall seconds of the finished runs among ``runs`` timed on the CPU
    (``report.timed_on_cpu``), a resumed run's earlier processes included, or None without one."""
    timed = [_run_seconds(run) for run in _finished(runs)
             if timed_on_cpu(run) and run.get("wall_seconds") is not None]
    return sum(timed) / len(timed) if timed else None


@dataclass(frozen=True)
class Remaining:
    """What is left of some runs: how many, the estimated CPU seconds of the timed ones, and
    how many have no estimate (their entry has no finished CPU run)."""

    missing: int = 0
    seconds: float = 0.0
    untimed: int = 0

    def __add__(self, other: Remaining) -> Remaining:
        return Remaining(self.missing + other.missing, self.seconds + other.seconds, self.untimed + other.untimed)


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
    """How far ``suite`` (a name or a file) has run in ``<results>/<suite>.json``."""
    loaded = load_suite(suite)
    by_entry = _report_runs(Path(results), loaded)
    missing = _missing(loaded, by_entry)
    entries = {e.id: e for e in loaded.entries}
    order = {entry_id: i for i, entry_id in enumerate(entries)}
    per_run = {entry_id: cpu_seconds_per_run(by_entry.get(entry_id, [])) for entry_id in {run[0] for run in missing}}
    datasets: dict[str, Remaining] = {}
    for entry_id, _seed in sorted(missing, key=lambda run: order[run[0]]):
        seconds = per_run[entry_id]
        one = Remaining(1, seconds or 0.0, int(seconds is None))
        dataset = entries[entry_id].dataset
        datasets[dataset] = datasets.get(dataset, Remaining()) + one
    planned = sum(len(e.seeds) for e in loaded.entries)
    return SuiteProgress(suite=loaded.name, planned=planned, finished=planned - len(missing),
                         left=sum(datasets.values(), Remaining()), datasets=tuple(datasets.items()))


def full_suite_progress(results: Path, suites_dir: Path, first: Sequence[str] = ()) -> list[SuiteProgress]:
    """``suite_progress`` of every ``*_full.toml`` in ``suites_dir`` (none when it is absent):
    the suites named in ``first`` in that order, then the others by name."""
    paths = sorted(Path(suites_dir).glob(FULL_SUITES)) if Path(suites_dir).is_dir() else []
    rank = {name: i for i, name in enumerate(first)}
    paths.sort(key=lambda p: (rank.get(p.stem, len(rank)), p.stem))
    return [suite_progress(path, results) for path in paths]


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f}"


def _dataset_note(dataset: str, left: Remaining) -> str:
    if left.untimed == left.missing:
        return f"{dataset}: {left.missing} missing, untimed"
    note = f"{dataset}: {left.missing} missing, ~{_hours(left.seconds)} h"
    return note + (f" (+{left.untimed} untimed)" if left.untimed else "")


def format_progress(progress: Sequence[SuiteProgress]) -> list[str]:
    """The section's Markdown lines: a row per suite, then its datasets with runs left; no
    lines without suites."""
    if not progress:
        return []
    lines = ["## How far each full suite has run", "",
             "Placed right after the summary, so that a verdict's n can be read against what its suite "
             "plans. A run is finished when its record in `benchmarks/results/<suite>.json` has an "
             "accuracy; planned = every entry of `benchmarks/suites/<suite>.toml` x its seeds. The hours "
             "left are a planning figure from our own finished runs, on whatever CPU they ran on: each "
             "missing run counts the mean wall time of its entry's finished CPU runs (a resumed run's "
             "earlier processes included; runs on a GPU or with cached features left out). A missing run "
             "whose entry has no such "
             "finished run is counted as untimed, not guessed, and adds nothing to the hours, so the hours "
             "cover the timed runs only. The queue of "
             "a suite's missing runs: `python benchmarks/missing_runs.py SUITE`.", "",
             "| suite | planned | finished | missing | ~CPU hours left (timed part) | untimed runs |",
             "|---|---|---|---|---|---|"]
    for p in progress:
        lines.append(f"| `{p.suite}` | {p.planned} | {p.finished} | {p.left.missing} | "
                     f"{_hours(p.left.seconds)} | {p.left.untimed} |")
    lines += ["", "Runs missing per dataset (one-thread CPU hours):", ""]
    for p in progress:
        notes = "; ".join(_dataset_note(dataset, left) for dataset, left in p.datasets)
        lines.append(f"- `{p.suite}`: " + (notes if notes else "complete"))
    return lines
