"""The (entry, seed) runs a suite still lacks in its committed report, as a queue for
benchmarks/run_queue.sh, so that a long suite is picked up where the last session stopped.

    python benchmarks/missing_runs.py SUITE [--results benchmarks/results] [--only SUBSTRING ...]
        [--checkpoints ROOT-checkpoints] > queue.txt

One "ENTRY_ID SEED" a line, seed-major (every entry's next seed before any entry's later one),
in the suite file's entry order; --only keeps the entries whose id contains one of the strings.
A run counts as present when its record in <results>/<suite>.json has an accuracy and its entry
there has the suite file's dataset, model, overrides and max_per_split (a <results> folder that
does not exist is refused; one without that report yet lists every run). An entry whose runs in
the report were made with other settings is stale: its runs are listed, and a comment after the
queue says which setting changed. With --checkpoints (the folder a queue's
RUN_ARGS="--checkpoint-dir ..." named; refused if it does not exist), the runs cut off with a
checkpoint there come first, each with a comment saying after which epoch it resumes (and at
which commit, on which machine, those epochs were made, where the checkpoint records it), and a
comment after the queue names each checkpoint of a run the report already has (a rerun of it
would resume from that checkpoint). The comments start with "#", which run_queue.sh and
--check-queue skip.

    python benchmarks/missing_runs.py SUITE --check-queue QUEUE_FILE

prints nothing and exits 0 when every "ENTRY_ID SEED" line of the queue names an entry of the suite
and one of its seeds, and otherwise names the first line that does not, or that ends in a carriage
return (a CRLF file, exit 2): run_queue.sh
checks its queue so, before the first run, since such a run would fail hours into a queue, or
finish and then be refused by --merge-from.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from textcls.benchmark.progress import Queue, queue_state
from textcls.benchmark.runner import checkpointed_run, load_suite, origin_text, run_checkpoint_dir
from textcls.errors import TextclsError

REPO = Path(__file__).resolve().parents[1]


def resume_comment(behind: dict | None) -> str:
    """The queue line's comment for a run with a checkpoint (``checkpointed_run``): after which
    epoch it resumes and, where its folder records it, the commit and machine that made those
    epochs, which the resuming process may not share."""
    if behind is None:
        return ""
    made_at = behind.get("made_at")
    return f"  # resumes after epoch {behind['from_epoch']}" + (f" (made at {origin_text(made_at)})" if made_at else "")


def _shown(value) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def notes_after_queue(queue: Queue, checkpoints: Path | None) -> list[str]:
    """Comment lines for after the queue: each stale entry and the setting that changed, and with
    ``checkpoints`` each checkpoint of a run the report already has (stale: a rerun would resume
    from it, with epochs another process, maybe at another commit, trained)."""
    notes = []
    for stale in queue.stale:
        changed = "; ".join(f"{key} = {_shown(old)}, the suite file now says {_shown(new)}"
                            for key, old, new in stale.changes)
        notes.append(f"# {stale.entry} seed(s) {', '.join(map(str, stale.seeds))} in the report: stale: made with "
                     f"{changed} (queued above)")
    for entry, seed in queue.finished if checkpoints is not None else []:
        if checkpointed_run(checkpoints, entry, seed) is not None:
            folder = run_checkpoint_dir(checkpoints, entry, seed)
            notes.append(f"# {entry} {seed} is in the report, yet its checkpoint is stale: remove {folder} before "
                         "rerunning it: a rerun would resume from it")
    return notes


def check_queue(suite: str, queue: Path) -> None:
    """Refuse the first queue line whose entry or seed the suite does not plan, or that ends in a
    carriage return (run_queue.sh's shell would read "0\r" as the seed)."""
    try:
        # Bytes, split at "\n" alone: read_text and splitlines() turn "\r\n" into a line end, and a
        # CRLF queue would pass here.
        lines = queue.read_bytes().decode("utf-8").split("\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise TextclsError(f"{queue}: cannot read the queue ({exc}); make one with "
                           f"python benchmarks/missing_runs.py SUITE > {queue}") from None
    seeds = {entry.id: entry.seeds for entry in load_suite(suite).entries}
    for lineno, line in enumerate(lines, 1):
        if line.endswith("\r"):
            raise TextclsError(f"{queue}: line {lineno} ends in a carriage return (CRLF); convert the file with "
                               f"dos2unix {queue}")
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) != 2 or not words[1].isdigit():
            raise TextclsError(f"{queue}:{lineno}: '{line.strip()}' is not 'ENTRY_ID SEED' (a seed is a whole number); "
                               "fix the line")
        entry, seed = words[0], int(words[1])
        if entry not in seeds:
            raise TextclsError(f"{queue}:{lineno}: the suite has no entry '{entry}'; take the ids from "
                               f"python benchmarks/missing_runs.py {suite}")
        if seed not in seeds[entry]:
            raise TextclsError(f"{queue}:{lineno}: entry '{entry}' plans seeds {seeds[entry]}, not {seed}; "
                               "add the seed to the suite file or fix the line")


def check_folder(option: str, folder: Path | None, what_to_name: str) -> None:
    """Refuse ``option``'s folder when it is not one (None: the option not given)."""
    if folder is not None and not folder.is_dir():
        problem = "is not a folder" if folder.exists() else "no such folder"
        raise TextclsError(f"{option} {folder}: {problem}; {what_to_name}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suite")
    parser.add_argument("--results", type=Path, default=REPO / "benchmarks" / "results")
    parser.add_argument("--only", nargs="*", default=[])
    parser.add_argument("--checkpoints", type=Path, default=None)
    parser.add_argument("--check-queue", type=Path, default=None, metavar="QUEUE_FILE")
    args = parser.parse_args(argv)
    try:
        if args.check_queue is not None:
            check_queue(args.suite, args.check_queue)
            return
        # Read as "no checkpoints", a mistyped folder put no cut-off run first and named no stale checkpoint.
        check_folder("--checkpoints", args.checkpoints, "name the folder the queue's RUN_ARGS=\"--checkpoint-dir "
                     "...\" named")
        # Read as "no report yet", a mistyped folder listed every run of the suite as missing.
        check_folder("--results", args.results, "name the folder that holds the suite's report "
                     f"(default {REPO / 'benchmarks' / 'results'})")
        queue = queue_state(args.suite, args.results, args.only)
        runs = queue.missing
        behind = {run: checkpointed_run(args.checkpoints, *run) for run in runs} if args.checkpoints else {}
        notes = notes_after_queue(queue, args.checkpoints)
    except TextclsError as exc:  # one line and exit status 2, as the textcls commands
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    lines = []
    for entry, seed in sorted(runs, key=lambda run: behind.get(run) is None):  # stable: the order above otherwise
        lines.append(f"{entry} {seed}" + resume_comment(behind.get((entry, seed))))
    lines += notes
    try:
        sys.stdout.write("".join(f"{line}\n" for line in lines))
        sys.stdout.flush()
    except BrokenPipeError:  # the reader stopped early (| head): quiet, as the textcls commands
        # Python's advice: point stdout at devnull so the flush at exit does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
