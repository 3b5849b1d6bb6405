"""Rebuild the rerun records of suite reports from the run folders they were merged from.

    python benchmarks/rebuild_rerun_records.py SUITE [SUITE ...] [--results benchmarks/results]

Before stop 40, `textcls benchmark --merge-from ROOT` merged every report under ROOT again each
time a queue's root was merged as it filled, and named all of them with the commit of the first
report by path: a suite's report gained one record per merge, each listing every run merged so
far under one commit (fcsr_fdu_full's JSON held 330,000 characters of commands). The runs
themselves were right (a rerun replaces the runs of its seeds); only the records were not.

A record whose every command names a run folder (``--output-dir <folder>``) that still holds its
report is replaced, with the others of its kind, by one record per commit those reports were
made at (as `--merge-from` now writes them: `runner.combine_by_commit`, `runner.rerun_record`),
in place of the first record replaced. Records whose folders are gone (merged from another
machine, or a root since deleted) are kept as they are, except that a record that repeats an
earlier one's commit, date and command with the same entries or more replaces it (the same
root merged again). The runs, summaries and every other field stay as they are; the Markdown
and plot are written again from the JSON.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from textcls.benchmark import report
from textcls.benchmark.runner import _read_report, combine_by_commit, rerun_record

OUTPUT_DIR = re.compile(r"--output-dir (\S+)")


def _run_folders(record: dict) -> list[Path] | None:
    """The run folders a record's command names, or None unless each holds a report."""
    commands = (record.get("command") or "").split("; ")
    folders = [OUTPUT_DIR.search(command) for command in commands]
    if not all(folders):
        return None
    paths = [Path(match.group(1)) for match in folders]
    return paths if all(any(path.glob("*.json")) for path in paths) else None


def _repeats(records: list[dict]) -> list[int]:
    """Positions of the records a later one repeats: its commit, date and command, and all its
    entries."""
    def key(record):
        return (record.get("git") or {}).get("commit"), record.get("date"), record.get("command")

    return [i for i, record in enumerate(records)
            if any(key(later) == key(record) and set(record["entries"]) <= set(later["entries"])
                   for later in records[i + 1:])]


def rebuild(result: dict) -> tuple[dict, int, int]:
    """``result`` with its rerun records rebuilt; the number of records before and after."""
    records = result.get("reruns", [])
    folders = [_run_folders(record) for record in records]
    repeated = set(_repeats([r for r, f in zip(records, folders) if f is None]))
    kept, runs, place, kept_count = [], {}, None, 0
    for record, paths in zip(records, folders):
        if paths is None:
            if kept_count not in repeated:
                kept.append(record)
            kept_count += 1
            continue
        place = len(kept) if place is None else place
        for path in paths:
            runs.setdefault(path.resolve(), sorted(path.glob("*.json")))
    if runs:
        parts = [_read_report(file) for files in runs.values() for file in files]
        kept[place:place] = [rerun_record(group) for group in combine_by_commit(parts)]
    return {**result, "reruns": kept}, len(records), len(kept)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("suites", nargs="+", help="suite names, e.g. fcsr_fdu_full")
    parser.add_argument("--results", default="benchmarks/results", help="the folder holding <suite>.json")
    args = parser.parse_args()
    for suite in args.suites:
        path = Path(args.results) / f"{suite}.json"
        result = json.loads(path.read_text(encoding="utf-8"))
        rebuilt, before, after = rebuild(result)
        if rebuilt["reruns"] == result.get("reruns", []):
            print(f"{suite}: {before} records, nothing to rebuild")
            continue
        rebuilt.pop("files", None)
        report.write_report(rebuilt, args.results)
        print(f"{suite}: {before} rerun records -> {after}")


if __name__ == "__main__":
    main()
