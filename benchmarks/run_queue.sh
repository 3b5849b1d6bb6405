#!/usr/bin/env bash
# Run a long suite one (entry, seed) at a time, so a stopped session loses at most one run.
#
#   benchmarks/run_queue.sh SUITE QUEUE_FILE OUTPUT_ROOT
#
# QUEUE_FILE holds one "ENTRY_ID SEED" per line (entry ids as in the suite's JSON, e.g.
# "sst2:fcsr 3"; "#" starts a comment); `python benchmarks/missing_runs.py SUITE` lists the runs
# the committed report lacks; every line is checked against the suite before the first run (an
# entry it lacks or a seed it does not plan stops the queue, exit 2; so does a line ending in a
# carriage return: convert a CRLF queue with dos2unix). Each run writes its report (JSON, Markdown,
# plot) into OUTPUT_ROOT/<entry>_s<seed>/ and its log beside it. A run is done when its folder holds
# a report whose runs are all OK, and is then skipped; a folder whose report holds a failed run (a
# child killed by the OOM killer, say) is moved aside, log and all, to
# OUTPUT_ROOT/<entry>_s<seed>.failed-<UTC time> and the run is made again; a folder without a report
# (a run cut off) is removed and run again. A run being made holds OUTPUT_ROOT/<entry>_s<seed>.lock,
# so two workers can share one queue file and output root: start the same command twice (one thread
# each), then merge the finished runs (every report under OUTPUT_ROOT):
#
#   textcls benchmark --suite SUITE --merge-from OUTPUT_ROOT --output-dir benchmarks/results
#
# The code that runs is the checkout this script lives in (PYTHONPATH=<checkout>/src), so a
# worktree at a fixed commit can keep running while main moves on (a PYTHONPATH already set
# comes after it: packages carried to a GPU machine, say). PYTHON picks the interpreter, and
# RUN_ARGS adds options to every run, e.g. RUN_ARGS="--device cuda" on a GPU machine, where
# several workers can share one queue and one GPU.
# A run longer than a sitting keeps its epochs with RUN_ARGS="--checkpoint-dir ROOT-checkpoints"
# (outside ROOT, so that ROOT holds the runs' reports alone): a run cut off is then made again
# from its last finished epoch instead of from the start (`missing_runs.py --checkpoints` puts
# such runs first in a new queue).
#
#   benchmarks/run_queue.sh --pending SUITE QUEUE_FILE OUTPUT_ROOT
#
# runs nothing: it lists the queue's runs that are not done ("unfinished: ENTRY_ID SEED", followed
# by why for a run whose report holds a failed run) and exits 1 if there are any.
set -uo pipefail
pending=false
if [[ "${1:-}" == --pending ]]; then pending=true; shift; fi
if [[ $# -ne 3 ]]; then
  echo "usage: benchmarks/run_queue.sh [--pending] SUITE QUEUE_FILE OUTPUT_ROOT" >&2; exit 2
fi
suite=$1; queue=$2; root=$3
checkout=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python}
if [[ ! -f "$queue" ]]; then
  echo "error: $queue: no such queue file; make one with python benchmarks/missing_runs.py SUITE > $queue" >&2; exit 2
fi
if [[ -e "$root" && ! -d "$root" ]]; then echo "error: $root: is a file; name a folder for the runs" >&2; exit 2; fi
# Every line is checked before the first run: a bad one found later would stop a queue mid-way.
lineno=0
# `|| [[ -n ... ]]`: a last line without a newline makes read fail yet fills the variable; without
# it that line would be skipped, unchecked here and never run below.
while IFS= read -r line || [[ -n "$line" ]]; do
  lineno=$((lineno + 1))
  # A CRLF line would otherwise be refused as "'E 0 ' is not 'ENTRY_ID SEED'": its \r does not show.
  if [[ "$line" == *$'\r' ]]; then
    echo "error: $queue: line $lineno ends in a carriage return (CRLF); convert the file with dos2unix $queue" >&2
    exit 2
  fi
  read -r entry seed extra <<< "$line"
  [[ -z "${entry:-}" || "$entry" == \#* ]] && continue
  if [[ ! "${seed:-}" =~ ^[0-9]+$ || ( -n "${extra:-}" && "$extra" != \#* ) ]]; then
    echo "error: $queue:$lineno: '$entry ${seed:-} ${extra:-}' is not 'ENTRY_ID SEED' (a seed is a whole number); fix the line" >&2
    exit 2
  fi
done < "$queue"
# ... and against the suite: an entry it lacks, or a seed it does not plan, is refused before a
# run (--pending runs nothing, and lists a queue whatever it names).
if ! $pending; then
  PYTHONPATH="$checkout/src${PYTHONPATH:+:$PYTHONPATH}" "$python" "$checkout/benchmarks/missing_runs.py" "$suite" \
    --check-queue "$queue" || exit 2
fi
# The report check imports json alone, not textcls: a tenth of a second rather than half of one,
# paid by every worker for every queued run that is already done.
read -r -d '' check_report <<'PY'
import json, sys
for path in sys.argv[1:]:
    try:
        runs = [run for entry in json.load(open(path, encoding="utf-8"))["entries"] for run in entry["runs"]]
        failed = [run for run in runs if run["status"] != "ok"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        sys.exit(f"its report {path} cannot be read ({type(exc).__name__}: {exc})")
    if failed:
        error = str(failed[0].get("error") or "no error recorded").splitlines()[0][:200]
        sys.exit(f"its report holds a failed run: {error}")
    if not runs:
        sys.exit(f"its report {path} holds no run")
PY
# done_run FOLDER: whether FOLDER holds a report whose runs are all OK. When it does not, $why says what
# its report holds instead, and is empty without a report (a run not made, or cut off before its end).
done_run() {
  why=""
  compgen -G "$1/*.json" > /dev/null || return 1
  why=$("$python" -c "$check_report" "$1"/*.json 2>&1) && return 0
  why=${why:-its report could not be checked}  # never empty here: empty would read as "cut off", and wipe it
  return 1
}
mkdir -p "$root"
left=0
while read -r entry seed _ || [[ -n "${entry:-}" ]]; do
  [[ -z "${entry:-}" || "$entry" == \#* ]] && continue
  out="$root/$(echo "$entry" | tr '/:' '__')_s$seed"
  if done_run "$out"; then
    $pending || echo "$(date -u +%FT%T) skip $entry seed $seed (done)"
    continue
  fi
  if $pending; then echo "unfinished: $entry $seed${why:+ ($why)}"; left=$((left + 1)); continue; fi
  # mkdir is atomic: the worker that creates the lock makes the run; a lock left by a killed
  # worker is removed by hand (rmdir) before its run can be made again.
  if ! mkdir "$out.lock" 2> /dev/null; then echo "$(date -u +%FT%T) skip $entry seed $seed (running)"; continue; fi
  # Checked again under the lock: another worker may have finished this run (report written,
  # lock removed) between the check above and the mkdir, and its report must not be wiped.
  if done_run "$out"; then
    rmdir "$out.lock"
    echo "$(date -u +%FT%T) skip $entry seed $seed (done)"
    continue
  fi
  if [[ -n "$why" ]]; then
    # Kept, not removed: its log and error say why it failed. (--merge-from OUTPUT_ROOT reads its
    # report too, and takes the run made again, which is newer.)
    aside="$out.failed-$(date -u +%Y%m%dT%H%M%SZ)"
    [[ -e "$aside" ]] && aside="$aside-$$"  # it failed again within the second
    if ! mv "$out" "$aside" || { [[ -e "$out.log" ]] && ! mv "$out.log" "$aside.log"; }; then
      rmdir "$out.lock"; exit 2
    fi
    echo "$(date -u +%FT%T) redo $entry seed $seed: $why; moved it to $aside"
  fi
  rm -rf "$out"
  echo "$(date -u +%FT%T) start $entry seed $seed"
  # RUN_ARGS is split into words on purpose: it holds options.
  # shellcheck disable=SC2086
  OMP_NUM_THREADS=1 PYTHONPATH="$checkout/src${PYTHONPATH:+:$PYTHONPATH}" nice -n 10 "$python" -m textcls.cli benchmark \
    --suite "$suite" --only "$entry" --seed "$seed" --threads 1 --no-progress --output-dir "$out" ${RUN_ARGS:-} \
    > "$out.log" 2>&1
  rc=$?  # before the line below: its $(date) would reset $?
  echo "$(date -u +%FT%T) end $entry seed $seed rc=$rc"
  rmdir "$out.lock"
done < "$queue"
if $pending; then
  echo "$left run(s) of $queue unfinished"
  [[ $left -eq 0 ]]
fi
