#!/usr/bin/env bash
# Run a long suite one (entry, seed) at a time, so a stopped session loses at most one run.
#
#   benchmarks/run_queue.sh SUITE QUEUE_FILE OUTPUT_ROOT
#
# QUEUE_FILE holds one "ENTRY_ID SEED" per line (entry ids as in the suite's JSON, e.g.
# "sst2:fcsr 3"; "#" starts a comment); `python benchmarks/missing_runs.py SUITE` lists the runs
# the committed report lacks; every line is checked against the suite before the first run (an
# entry it lacks or a seed it does not plan stops the queue, exit 2). Each run writes its report (JSON, Markdown, plot) into
# OUTPUT_ROOT/<entry>_s<seed>/ and its log beside it; a run whose folder holds a JSON is
# skipped, and a folder without one (a run cut off) is removed and run again. A run being made
# holds OUTPUT_ROOT/<entry>_s<seed>.lock, so two workers can share one queue file and output root:
# start the same command twice (one thread each), then merge the finished runs:
#
#   textcls benchmark --suite SUITE --merge-from OUTPUT_ROOT/*/ --output-dir benchmarks/results
#
# The code that runs is the checkout this script lives in (PYTHONPATH=<checkout>/src), so a
# worktree at a fixed commit can keep running while main moves on (a PYTHONPATH already set
# comes after it: packages carried to a GPU machine, say). PYTHON picks the interpreter, and
# RUN_ARGS adds options to every run, e.g. RUN_ARGS="--device cuda" on a GPU machine, where
# several workers can share one queue and one GPU.
# A run longer than a sitting keeps its epochs with RUN_ARGS="--checkpoint-dir ROOT-checkpoints"
# (outside ROOT, so that ROOT/*/ stays the finished reports): a run cut off is then made again
# from its last finished epoch instead of from the start (`missing_runs.py --checkpoints` puts
# such runs first in a new queue).
#
#   benchmarks/run_queue.sh --pending SUITE QUEUE_FILE OUTPUT_ROOT
#
# runs nothing: it lists the queue's runs without a report ("unfinished: ENTRY_ID SEED") and
# exits 1 if there are any.
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
while read -r entry seed extra; do
  lineno=$((lineno + 1))
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
mkdir -p "$root"
left=0
while read -r entry seed _; do
  [[ -z "${entry:-}" || "$entry" == \#* ]] && continue
  out="$root/$(echo "$entry" | tr '/:' '__')_s$seed"
  if compgen -G "$out/*.json" > /dev/null; then
    $pending || echo "$(date -u +%FT%T) skip $entry seed $seed (done)"
    continue
  fi
  if $pending; then echo "unfinished: $entry $seed"; left=$((left + 1)); continue; fi
  # mkdir is atomic: the worker that creates the lock makes the run; a lock left by a killed
  # worker is removed by hand (rmdir) before its run can be made again.
  if ! mkdir "$out.lock" 2> /dev/null; then echo "$(date -u +%FT%T) skip $entry seed $seed (running)"; continue; fi
  # Checked again under the lock: another worker may have finished this run (report written,
  # lock removed) between the check above and the mkdir, and its report must not be wiped.
  if compgen -G "$out/*.json" > /dev/null; then
    rmdir "$out.lock"
    echo "$(date -u +%FT%T) skip $entry seed $seed (done)"
    continue
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
