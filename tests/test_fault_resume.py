"""Fault injection: SIGKILL ``textcls train`` five times mid-training, ``--resume`` each time.

The finished run must equal an unbroken run bit for bit: the same ``model.safetensors``
tensors, the same ``epochs.csv`` rows (one per epoch, none duplicated or missing; only the
timing column differs) and the same test metrics. The killed run checkpoints every few steps
(``--set checkpoint_steps``), so most kills land mid-epoch, some during a checkpoint write;
the unbroken run sets no ``checkpoint_steps`` and keeps the default ``checkpoint_seconds``
(60), so it checkpoints only after an epoch once 60 s have passed since the last checkpoint and
after its last epoch (with its short epochs, in practice after the last epoch alone), which
checks too that the checkpoint rate does not change the result. The model has dropout, so every
resumed step must re-derive its random masks.

The kill points are drawn from a seeded generator; the seed is printed (and named in every
failure). Rerun a failure with ``TEXTCLS_FAULT_SEED=<seed>``: the kill points are then the
same steps, though the child's exact position when the signal lands depends on timing.
"""

from __future__ import annotations

import csv
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import torch
from safetensors.torch import load_file

KILLS = 5
EPOCHS = 6
CHECKPOINT_STEPS = 4
# kim-cnn-rand (dropout 0.5), shrunk: TREC's 300 training records less the carved dev tenth
# make 27 batches of 10 an epoch, 162 steps in all; the slow part of each child is startup.
TRAIN = [
    "train", "--model", "kim-cnn-rand", "--data", "trec", "--max-per-split", "300",
    "--epochs", str(EPOCHS), "--batch-size", "10", "--seed", "0", "--no-progress",
    "--set", "feature_maps=8", "--set", "embedding_dim=16", "--set", "patience=null",
]
POLL_S = 0.005
STEP_TIMEOUT_S = 180.0


def _env() -> dict:
    threads = {k: "1" for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    return dict(os.environ, **threads, PYTHONHASHSEED="0")


def _start(run_dir: Path, log: Path, *extra: str) -> subprocess.Popen:
    with open(log, "ab") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "textcls.cli", *TRAIN, "--run-dir", str(run_dir), *extra],
            stdout=subprocess.DEVNULL, stderr=err, env=_env(),
        )


def _progress(state_path: Path) -> tuple[int, int, int, int | None] | None:
    """(epoch, step, global_step, batches per epoch or None) of the committed checkpoint, if any."""
    try:
        state = json.loads(state_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    partial = state.get("partial_epoch") or {}
    return state["epoch"], state["step"], state["global_step"], partial.get("batches")


def _csv_rows(path: Path) -> tuple[list[str], list[dict]]:
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames), list(reader)


def test_sigkill_five_times_then_resume_equals_an_unbroken_run(tmp_path):
    seed = int(os.environ.get("TEXTCLS_FAULT_SEED", random.SystemRandom().randrange(2**32)))
    print(f"fault seed {seed} (rerun with TEXTCLS_FAULT_SEED={seed})")
    rng = random.Random(seed)
    started = time.perf_counter()

    # The reference runs alongside the killed one; it checkpoints only after each epoch.
    unbroken_dir = tmp_path / "unbroken"
    unbroken = _start(unbroken_dir, tmp_path / "unbroken.log")

    run_dir = tmp_path / "killed"
    partial = run_dir.with_name(run_dir.name + ".partial")
    state_path = partial / "checkpoint" / "state.json"
    log = tmp_path / "killed.log"
    # Kill points, as fractions of the run's steps: sorted, and leaving the last quarter of
    # training (seconds of work) between the last kill and the end of the run.
    targets = sorted(rng.uniform(0.05, 0.75) for _ in range(KILLS))
    delays = [rng.uniform(0.0, 0.05) for _ in range(KILLS)]
    batches = None
    resumed_from = []
    child = final = None
    try:
        for kill, (target, delay) in enumerate(zip(targets, delays)):
            before = _progress(state_path)
            resumed_from.append(before[:2] if before else None)
            child = _start(run_dir, log, *(["--resume"] if kill else []), "--set", f"checkpoint_steps={CHECKPOINT_STEPS}")
            deadline = time.monotonic() + STEP_TIMEOUT_S
            while True:
                assert child.poll() is None, (
                    f"seed {seed}: kill {kill + 1} came too late, the child exited with {child.returncode} "
                    f"before reaching {target:.0%} of the run:\n{log.read_text()[-3000:]}"
                )
                assert time.monotonic() < deadline, f"seed {seed}: no training progress in {STEP_TIMEOUT_S:.0f} s"
                now = _progress(state_path)
                if now is not None:
                    batches = now[3] or batches
                    # This child has committed a checkpoint of its own and passed the target.
                    if batches and (before is None or now[2] > before[2]) and now[2] >= target * EPOCHS * batches:
                        break
                time.sleep(POLL_S)
            time.sleep(delay)  # lands anywhere: in a step, in evaluation, in a checkpoint write
            assert child.poll() is None, f"seed {seed}: the child finished before kill {kill + 1}"
            os.kill(child.pid, signal.SIGKILL)
            assert child.wait(timeout=60) == -signal.SIGKILL
            assert partial.is_dir() and not run_dir.exists()
        resumed_from.append(_progress(state_path)[:2])
        final = _start(run_dir, log, "--resume", "--set", f"checkpoint_steps={CHECKPOINT_STEPS}")
        assert final.wait(timeout=STEP_TIMEOUT_S) == 0, f"seed {seed}: the last resume failed:\n{log.read_text()[-3000:]}"
        assert unbroken.wait(timeout=STEP_TIMEOUT_S) == 0, (tmp_path / "unbroken.log").read_text()[-3000:]
    finally:
        for proc in (unbroken, child, final):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    print(f"resumed from (completed epochs, step) {resumed_from[1:]} of {batches}-batch epochs; "
          f"{time.perf_counter() - started:.1f} s")

    assert not partial.exists() and run_dir.is_dir()
    expected = load_file(str(unbroken_dir / "model.safetensors"))
    got = load_file(str(run_dir / "model.safetensors"))
    assert sorted(got) == sorted(expected)
    for key, tensor in expected.items():
        assert got[key].dtype == tensor.dtype and torch.equal(got[key], tensor), f"seed {seed}: tensor {key} differs"

    columns, rows = _csv_rows(run_dir / "epochs.csv")
    expected_columns, expected_rows = _csv_rows(unbroken_dir / "epochs.csv")
    assert columns == expected_columns
    assert [r["epoch"] for r in rows] == [str(e) for e in range(1, EPOCHS + 1)], f"seed {seed}"

    def timeless(table):
        return [{k: v for k, v in r.items() if k != "seconds"} for r in table]

    assert timeless(rows) == timeless(expected_rows), f"seed {seed}"

    metrics = json.loads((run_dir / "metrics.json").read_text())
    expected_metrics = json.loads((unbroken_dir / "metrics.json").read_text())
    assert metrics["best_epoch"] == expected_metrics["best_epoch"]
    assert metrics["test"]["accuracy"] == expected_metrics["test"]["accuracy"]
    assert metrics["dev"] == expected_metrics["dev"]
