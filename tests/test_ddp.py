"""DDP through torchrun (2 CPU processes, gloo) matches one process with the same global batch."""

from __future__ import annotations

import csv
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from ddp_worker import train_and_save

WORKER = Path(__file__).with_name("ddp_worker.py")
SETTINGS = dict(n_train=384, n_dev=150, epochs=3, batch_size=32, lr=1e-2)  # 384 = 12 full global batches


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank_logs(log_dir: Path) -> str:
    """The end of each rank's own stderr: torchrun's report of a failed rank (a SIGABRT, say) gives
    its exit code, not what it printed, and its own traceback fills the rest of stderr's tail."""
    return "".join(f"--- {path.relative_to(log_dir)}:\n{path.read_text(errors='replace')[-1500:]}\n"
                   for path in sorted(log_dir.rglob("stderr.log")))


_GLOO_ABORT = "terminate called without an active exception"


def _torchrun(log_dir: Path, out: Path, n_test: int) -> subprocess.CompletedProcess:
    """tests/ddp_worker.py on two gloo processes under torchrun, each rank's streams kept in ``log_dir``."""
    command = [
        sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
        "--master_addr", "127.0.0.1", "--master_port", str(free_port()),
        "--log-dir", str(log_dir), "--tee", "3",  # each rank's streams kept, for a failure's message
        str(WORKER), "--out", str(out),
        "--n-train", str(SETTINGS["n_train"]), "--n-dev", str(SETTINGS["n_dev"]),
        "--epochs", str(SETTINGS["epochs"]), "--batch-size", str(SETTINGS["batch_size"]),
        "--lr", str(SETTINGS["lr"]), "--n-test", str(n_test),
    ]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run(command, capture_output=True, text=True, timeout=150, env=env)


# 0: no watch (no extra pass, no extra collective); 200: the next 200 TREC test questions are
# watched as split "test" after every epoch, which adds a broadcast on every rank.
@pytest.mark.parametrize("n_test", [0, 200], ids=["unwatched", "watched"])
def test_two_process_ddp_matches_one_process(tmp_path, n_test):
    ddp_out, single_out = tmp_path / "ddp", tmp_path / "single"
    logs = tmp_path / "logs"
    proc = _torchrun(logs, ddp_out, n_test)
    if proc.returncode != 0 and _GLOO_ABORT in _rank_logs(logs):
        # Twice in full runs on a 2-core machine with four other busy processes (stops 70 and 71), a
        # rank died of SIGABRT with this line and nothing else; every rerun passed. One fresh launch
        # then: a failure of the training itself fails both, and a second abort fails the test.
        print(f"torchrun: a rank aborted ({_GLOO_ABORT!r}); launching once more", file=sys.stderr)
        logs = tmp_path / "logs-again"
        proc = _torchrun(logs, ddp_out, n_test)
    assert proc.returncode == 0, _rank_logs(logs) + proc.stderr[-2000:]

    single = train_and_save(single_out, **SETTINGS, n_test=n_test)
    ddp = json.loads((ddp_out / "result.json").read_text())

    assert ddp["world_size"] == 2 and single["world_size"] == 1
    assert ddp["train_loss"] == pytest.approx(single["train_loss"], rel=1e-5)
    assert ddp["dev_loss"] == pytest.approx(single["dev_loss"], rel=1e-5)
    assert ddp["dev_accuracy"] == pytest.approx(single["dev_accuracy"], abs=1 / SETTINGS["n_dev"])
    assert ddp["best_epoch"] == single["best_epoch"]
    ddp_weights = load_file(str(ddp_out / "weights.safetensors"))
    single_weights = load_file(str(single_out / "weights.safetensors"))
    assert ddp_weights.keys() == single_weights.keys()
    for key in single_weights:
        torch.testing.assert_close(ddp_weights[key], single_weights[key], atol=1e-4, rtol=0)
    if n_test:  # every rank scored the whole watched split: the curves agree as dev does
        assert len(ddp["test_accuracy"]) == SETTINGS["epochs"]
        assert ddp["test_accuracy"] == pytest.approx(single["test_accuracy"], abs=1 / n_test)
        assert ddp["test_loss"] == pytest.approx(single["test_loss"], rel=1e-5)
    else:
        assert ddp["test_accuracy"] == single["test_accuracy"] == [None] * SETTINGS["epochs"]
    # The runs must have learned something, or agreeing says little.
    assert single["train_loss"][-1] < 0.9 * single["train_loss"][0]

    # Only rank 0 wrote the log: one row per epoch, not two.
    with open(ddp_out / "run" / "epochs.csv", newline="") as f:
        assert [row["epoch"] for row in csv.DictReader(f)] == ["1", "2", "3"]
    assert (ddp_out / "run" / "checkpoint" / "state.json").is_file()
