#!/usr/bin/env bash
# Run a queue of (entry, seed) runs on one GPU with several workers, for at most a deadline.
#
#   WORKERS=12 benchmarks/gpu_workers.sh SUITE QUEUE ROOT [DEADLINE_S]
#
# Starts WORKERS (default 12) copies of benchmarks/run_queue.sh on one queue and one output
# root, each run with --device cuda (small models leave a GPU mostly idle, so processes share
# it; on a lent H200 12 workers made 90 hcan_full runs in 4.2 min), stops them at DEADLINE_S
# (default 470) seconds, then lists the queue's runs not done. With BUNDLE=<folder written by
# benchmarks/offline_bundle.py> it installs the bundle's wheels and unpacks what it packed into
# ROOT.bundle, and reads the bundle's datasets, GloVe table and MiniLM vectors, for a machine
# that has no network. Exit status: 2 for a folder that is not a bundle, 3 when its wheels do
# not install or its archives do not unpack, else that of the final listing (1: runs unfinished).
set -uo pipefail
suite=$1; queue=$2; root=$3; deadline=${4:-470}
here=$(cd "$(dirname "$0")" && pwd)
if [[ -n "${BUNDLE:-}" ]]; then
  if [[ ! -d "$BUNDLE/site" || ! ( -d "$BUNDLE/datasets" || -f "$BUNDLE/datasets.tar.xz" ) ]]; then
    echo "error: BUNDLE=$BUNDLE is not a folder written by benchmarks/offline_bundle.py (no site/ and datasets/ or datasets.tar.xz in it)" >&2
    exit 2
  fi
  # What the bundle holds packed is unpacked beside ROOT (ROOT.bundle), so that two gpu_workers.sh
  # on one bundle (two suites sharing the GPU) never write the same files, and ROOT holds the
  # runs' reports alone (`--merge-from ROOT` reads every JSON under it).
  mkdir -p "${root%/}.bundle"
  unpacked=$(cd "${root%/}.bundle" && pwd)
  if compgen -G "$BUNDLE/whl/*.whl" > /dev/null; then
    "${PYTHON:-python3}" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target "$unpacked/site" "$BUNDLE"/whl/*.whl || exit 3
  fi
  data_dir="$(cd "$BUNDLE" && pwd)/datasets"
  if [[ -f "$BUNDLE/datasets.tar.xz" ]]; then  # offline_bundle.py --pack
    data_dir="$unpacked/datasets"
    mkdir -p "$data_dir" && tar -xJf "$BUNDLE/datasets.tar.xz" -C "$data_dir" || exit 3
  fi
  if [[ -f "$BUNDLE/cache.tar.xz" ]]; then
    # The distilled MiniLM vectors (offline_bundle.py --minilm-static), as textcls's cache.
    mkdir -p "$unpacked/cache" && tar -xJf "$BUNDLE/cache.tar.xz" -C "$unpacked/cache" || exit 3
    export TEXTCLS_CACHE="$unpacked/cache"
  fi
  export PYTHONPATH="$unpacked/site:$(cd "$BUNDLE" && pwd)/site${PYTHONPATH:+:$PYTHONPATH}"
  export TEXTCLS_DATA_DIR="$data_dir" HF_DATASETS_OFFLINE=1 HF_HUB_OFFLINE=1
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
# The queue's runs not done (never started, stopped at the deadline, or failed); the exit status
# says whether the whole queue is done.
bash "$here/run_queue.sh" --pending "$suite" "$queue" "$root"
