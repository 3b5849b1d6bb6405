#!/usr/bin/env bash
# Run a queue of (entry, seed) runs on one GPU with several workers, for at most a deadline.
#
#   WORKERS=12 benchmarks/gpu_workers.sh SUITE QUEUE ROOT [DEADLINE_S]
#
# Starts WORKERS (default 12) copies of benchmarks/run_queue.sh on one queue and one output
# root, each run with --device cuda (small models leave a GPU mostly idle, so processes share
# it; on a lent H200 12 workers made 90 hcan_full runs in 4.2 min), stops them at DEADLINE_S
# (default 470) seconds, then lists the queue's runs that have no report. With BUNDLE=<folder written by
# benchmarks/offline_bundle.py> it installs the bundle's wheels into /tmp/site and reads the
# bundle's datasets and GloVe table, for a machine that has no network.
set -uo pipefail
suite=$1; queue=$2; root=$3; deadline=${4:-470}
here=$(cd "$(dirname "$0")" && pwd)
if [[ -n "${BUNDLE:-}" ]]; then
  if [[ ! -d "$BUNDLE/site" || ! -d "$BUNDLE/datasets" ]]; then
    echo "error: BUNDLE=$BUNDLE is not a folder written by benchmarks/offline_bundle.py (no site/ and datasets/ in it)" >&2
    exit 2
  fi
  if compgen -G "$BUNDLE/whl/*.whl" > /dev/null; then
    "${PYTHON:-python3}" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/site "$BUNDLE"/whl/*.whl || exit 3
  fi
  export PYTHONPATH="/tmp/site:$(cd "$BUNDLE" && pwd)/site${PYTHONPATH:+:$PYTHONPATH}"
  export TEXTCLS_DATA_DIR="$(cd "$BUNDLE" && pwd)/datasets" HF_DATASETS_OFFLINE=1 HF_HUB_OFFLINE=1
fi
export RUN_ARGS="--device cuda ${RUN_ARGS:-}" PYTHON=${PYTHON:-python3}
mkdir -p "$root"
pids=()
for w in $(seq 1 "${WORKERS:-12}"); do
  # timeout signals the worker's whole process group, so the run in flight stops with it.
  timeout -k 10 "$deadline" bash "$here/run_queue.sh" "$suite" "$queue" "$root" > "$root/worker$w.log" 2>&1 &
  pids+=($!)
  sleep 1  # stagger the start-ups: each worker's first run imports torch at once
done
wait "${pids[@]}"
rmdir "$root"/*.lock 2> /dev/null
# The queue's runs without a report (never started, or stopped at the deadline); the exit status
# says whether the whole queue is done.
bash "$here/run_queue.sh" --pending "$suite" "$queue" "$root"
