"""Write into the runs of suite reports the CPU model that timed them (``cpu_model``), for runs
made before runs recorded it (stop 49), wherever the reports' git history tells.

    python benchmarks/backfill_cpu_model.py SUITE [SUITE ...] [--results benchmarks/results] [--check]

A report merged from runs made apart holds runs of several machines (a suite's first run on an
Intel Xeon, its later seeds on an AMD EPYC), and its seconds compare only on one CPU model
(``verdicts``: claims on seconds; ``report.timing_cpu``). Each commit that changed
``<results>/<suite>.json`` was a merge, so the history dates every run:

- a run that first appears (or first appears with its present figures) in a commit was made on
  the machine of the rerun records that commit added naming its entry, when they name one CPU
  model and ran on the CPU alone (a record of CPU and GPU runs names one machine of the two);
- in the file's first commit, or in a commit that wrote the report afresh (another top-level
  commit or date), a run whose entry no new record names was made on the report's ``machine``;
  where one does, the first run may have made it too, so both must name the same CPU;
- the working file counts as the newest version (merges not yet committed).

A run with no answer, or with more than one, is left without ``cpu_model``, and time claims leave
it out. Runs on a GPU are left alone, as are runs that record their CPU. Only the JSON changes
(the Markdown and the plot do not show the CPU). ``--check`` writes nothing and exits 1 when a run
would gain a ``cpu_model``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

from textcls.artifacts import write_json
from textcls.benchmark.report import timed_on_cpu


def _git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True, text=True).stdout


def versions(path: Path) -> list[dict]:
    """Every committed version of the report at ``path``, oldest first, then the working file when
    it differs from the last commit."""
    path = path.resolve()
    top = Path(_git(path.parent, "rev-parse", "--show-toplevel").strip())
    relative = path.relative_to(top).as_posix()
    commits = _git(top, "log", "--reverse", "--format=%H", "--", relative).split()
    docs = [json.loads(_git(top, "show", f"{commit}:{relative}")) for commit in commits]
    working = json.loads(path.read_text(encoding="utf-8"))
    if not docs or docs[-1] != working:
        docs.append(working)
    return docs


def _figures(run: dict) -> tuple:
    """What a merge changes when it replaces a run (a re-render or a records rebuild changes none)."""
    return tuple(run.get(k) for k in ("status", "accuracy", "epoch_seconds", "train_seconds", "wall_seconds",
                                      "finished"))


def _record_cpu(record: dict) -> str | None:
    devices = {str(d).split(":")[0] for d in record.get("devices") or ["cpu"]}
    return (record.get("machine") or {}).get("cpu_model") if devices == {"cpu"} else None


def attribute(docs: list[dict]) -> dict[tuple[str, int], str | None]:
    """(entry id, seed) -> the CPU model that made the run the newest version holds, or None."""
    made: dict[tuple[str, int], tuple[tuple, str | None]] = {}
    seen_records: set[str] = set()
    previous_top = None
    for doc in docs:
        records = doc.get("reruns") or []
        new_records = [r for r in records if json.dumps(r, sort_keys=True) not in seen_records]
        top = ((doc.get("git") or {}).get("commit"), doc.get("date"))
        afresh = top != previous_top
        first_cpu = (doc.get("machine") or {}).get("cpu_model")
        for entry in doc.get("entries", []):
            naming = [r for r in new_records if entry.get("id") in (r.get("entries") or [])]
            for run in entry.get("runs", []):
                key = (entry["id"], run["seed"])
                if key in made and made[key][0] == _figures(run):
                    continue
                cpus = {_record_cpu(r) for r in naming}
                if afresh:
                    cpus.add(first_cpu)
                made[key] = (_figures(run), cpus.pop() if len(cpus) == 1 else None)
        seen_records |= {json.dumps(r, sort_keys=True) for r in records}
        previous_top = top
    return {key: cpu for key, (_, cpu) in made.items()}


def backfill(path: Path) -> tuple[dict, Counter]:
    """The newest version of the report with ``cpu_model`` written where the history tells, and
    counts of what each run got ("written", "unknown", "recorded", "gpu")."""
    docs = versions(path)
    cpus = attribute(docs)
    result = json.loads(json.dumps(docs[-1]))
    counts: Counter = Counter()
    for entry in result.get("entries", []):
        for run in entry.get("runs", []):
            if run.get("cpu_model"):
                counts["recorded"] += 1
            elif not timed_on_cpu(run):
                counts["gpu"] += 1
            elif cpus.get((entry["id"], run["seed"])):
                run["cpu_model"] = cpus[(entry["id"], run["seed"])]
                counts["written"] += 1
            else:
                counts["unknown"] += 1
    return result, counts


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("suites", nargs="+", help="suite names, e.g. fcsr_fdu_full")
    parser.add_argument("--results", default="benchmarks/results", help="the folder holding <suite>.json")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a run would gain a cpu_model")
    args = parser.parse_args(argv)
    done = []
    try:  # every suite is read before any is written
        for suite in args.suites:
            path = Path(args.results) / f"{suite}.json"
            done.append((suite, path, *backfill(path)))
    except (OSError, json.JSONDecodeError, subprocess.CalledProcessError, KeyError) as exc:
        print(f"error: {exc}; name suites whose <suite>.json in --results ({args.results}) is a suite's report "
              "tracked by git", file=sys.stderr)
        raise SystemExit(2) from None
    pending = 0
    for suite, path, result, counts in done:
        print(f"{suite}: {counts['written']} run(s) given their CPU, {counts['unknown']} not known, "
              f"{counts['recorded']} recorded it already, {counts['gpu']} on a GPU")
        pending += counts["written"]
        if counts["written"] and not args.check:
            write_json(path, result)
    if args.check and pending:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
