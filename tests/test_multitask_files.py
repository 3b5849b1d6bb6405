"""Multi-task data of the user's own files through the CLI: a JSON line's "task" field or a CSV
"task" column trains one head per task (fcsr-mtl), and predict and evaluate read each record's
task the same way, or take --task for data that names none."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

CLI = [sys.executable, "-m", "textcls.cli"]
TASKS = ("books", "dvd", "kitchen")
WORDS = {"positive": "great superb lovely fine".split(), "negative": "awful dull poor bad".split()}


def run(*args, cwd=None):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run(CLI + list(args), capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


def task_records(n: int = 120) -> list[dict]:
    out = []
    for i in range(n):
        label = ("positive", "negative")[i % 2]
        task = TASKS[(i // 2) % len(TASKS)]
        words = WORDS[label]
        out.append({"text": f"a {task} item, {words[i % 4]} and {words[(i + 1) % 4]}", "label": label, "task": task})
    return out


@pytest.fixture(scope="module")
def mtl_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mtl")
    data = folder / "mtl.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in task_records()))
    out = run("train", "--model", "fcsr-mtl", "--data", str(data), "--epochs", "1", "--run-dir",
              str(folder / "run"), "--no-progress")
    assert out.returncode == 0, out.stderr
    return folder


def test_a_task_field_trains_one_head_per_task(mtl_run):
    """The "task" field was dropped without a word: a one-head model, config task_names null."""
    config = json.loads((mtl_run / "run" / "config.json").read_text())
    assert config["task_names"] == list(TASKS) and config["arch"]["num_tasks"] == len(TASKS)
