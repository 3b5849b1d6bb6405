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
import sys
from pathlib import Path

from textcls.benchmark import report
from textcls.benchmark.runner import _read_report, combine_by_commit, rerun_record
from textcls.errors import TextclsError

OUTPUT_DIR = re.compile(r"--output-dir (\S+)")


def _run_reports(record: dict, suite: str) -> list[Path] | None:
    """The report files of the run folders a record's command names, or None unless each folder
    holds one report of one ``--only`` run of ``suite`` and together they hold the record's
    entries (a record made with ``--merge --output-dir benchmarks/results`` names a folder of
    full reports: it stays as it is)."""
    commands = (record.get("command") or "").split("; ")
    folders = [OUTPUT_DIR.search(command) for command in commands]
    if not all(folders):
        return None
    files = [sorted(Path(match.group(1)).glob("*.json")) for match in folders]
    if not all(len(found) == 1 for found in files):
        return None
    try:
        parts = [_read_report(found[0]) for found in files]
    except TextclsError:  # a damaged run report: the record stays as it is
        return None
    if any(part["suite"] != suite or not part.get("only") for part in parts):
        return None
    if not set(record["entries"]) <= {entry["id"] for part in parts for entry in part["entries"]}:
        return None
    return [found[0] for found in files]


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
    reports = [_run_reports(record, result["suite"]) for record in records]
    repeated = set(_repeats([r for r, f in zip(records, reports) if f is None]))
    kept, files, place, kept_count = [], {}, None, 0
    for record, found in zip(records, reports):
        if found is None:
            if kept_count not in repeated:
                kept.append(record)
            kept_count += 1
            continue
        place = len(kept) if place is None else place
        files.update((path.resolve(), None) for path in found)
    if files:
        parts = [_read_report(path) for path in files]
        kept[place:place] = [rerun_record(group) for group in combine_by_commit(parts)]
    return {**result, "reruns": kept}, len(records), len(kept)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("suites", nargs="+", help="suite names, e.g. fcsr_fdu_full")
    parser.add_argument("--results", default="benchmarks/results", help="the folder holding <suite>.json")
    args = parser.parse_args(argv)
    rebuilt = []
    try:  # every suite is read and rebuilt before any is written
        for suite in args.suites:
            path = Path(args.results) / f"{suite}.json"
            result = json.loads(path.read_text(encoding="utf-8"))
            rebuilt.append((suite, result, *rebuild(result)))
    except (OSError, json.JSONDecodeError, TextclsError) as exc:
        print(f"error: {exc}; name suites whose <suite>.json in --results ({args.results}) is a suite's report",
              file=sys.stderr)
        raise SystemExit(2) from None
    for suite, result, new, before, after in rebuilt:
        if new["reruns"] == result.get("reruns", []):
            print(f"{suite}: {before} records, nothing to rebuild")
            continue
        new.pop("files", None)
        report.write_report(new, args.results)
        print(f"{suite}: {before} rerun records -> {after}")


if __name__ == "__main__":
    main()
