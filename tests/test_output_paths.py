"""Where ``evaluate`` and ``export`` may write: never over a saved run's own files.

``evaluate --output RUN/metrics.json`` replaced the run's training metrics, ``--output
RUN/config.json`` destroyed the run, ``--confusion-png RUN/tokenizer.json`` replaced its
vocabulary, ``--output X --confusion-png X`` let the PNG replace the JSON, and ``export -o
OTHER_RUN`` replaced another run's tokenizer.json: each is now refused before anything runs, in
one line with status 2, and the run is left byte for byte as it was. Output to a FIFO keeps the
FIFO (the atomic writer once renamed a regular file over it).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from test_cli import call

CSV = "text,label\n" + "".join(
    f"{w} {w} film,{label}\n" for i in range(20) for w, label in ((f"good{i % 4}", "pos"), (f"bad{i % 4}", "neg")))


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tfidf-lr run and a fasttext-bag-unigram run (for export), trained on a tiny CSV; tests
    work on copies."""
    from textcls.cli import main

    root = tmp_path_factory.mktemp("output_paths")
    (root / "tiny.csv").write_text(CSV)
    runs = {}
    for key, model in (("run", ("--model", "tfidf-lr")), ("nrun", ("--model", "fasttext-bag-unigram", "--epochs", "1"))):
        try:
            main(["train", *model, "--data", str(root / "tiny.csv"), "--run-dir", str(root / key), "--no-progress"])
        except SystemExit as exc:
            assert not exc.code, f"training {key} failed with status {exc.code}"
        runs[key] = root / key
    runs["csv"] = root / "tiny.csv"
    return runs


def _cli(argv, capsys):
    capsys.readouterr()
    return call(capsys, *argv)


def _snapshot(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _copy(trained, tmp_path, which="run", name="r") -> Path:
    return Path(shutil.copytree(trained[which], tmp_path / name))


def _refused(status, err, *parts):
    assert status == 2, err
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: ") and "Traceback" not in err, err
    for part in parts:
        assert part in err, err


@pytest.mark.parametrize("option, name", [
    ("--output", "metrics.json"), ("--output", "config.json"), ("--output", "model.safetensors"),
    ("--confusion-png", "tokenizer.json"), ("--confusion-png", "metrics.json"), ("--output", "epochs.csv"),
    ("--output", "checkpoint/state.json"),
])
def test_evaluate_refuses_a_file_of_the_run_and_leaves_the_run_as_it_was(trained, tmp_path, capsys, option, name):
    from textcls.api import Classifier

    run = _copy(trained, tmp_path)
    before = _snapshot(run)
    status, out, err = _cli(["evaluate", run, "--data", trained["csv"], option, run / name], capsys)
    _refused(status, err, option, str(run / name), "choose another path")
    assert out == "" and _snapshot(run) == before  # nothing written, not even a temporary file
    assert Classifier.from_pretrained(run).model == "tfidf-lr"


def test_evaluate_refuses_a_run_file_named_through_a_symlink_or_dots(trained, tmp_path, capsys):
    run = _copy(trained, tmp_path)
    before = _snapshot(run)
    (tmp_path / "alias.json").symlink_to(run / "metrics.json")
    for path in (tmp_path / "alias.json", run / "sub" / ".." / "config.json"):
        status, _, err = _cli(["evaluate", run, "--data", trained["csv"], "--output", path], capsys)
        _refused(status, err, "--output", str(path))
    assert _snapshot(run) == before


def test_evaluate_refuses_the_files_of_another_saved_run(trained, tmp_path, capsys):
    other = _copy(trained, tmp_path, name="other")
    before = _snapshot(other)
    status, _, err = _cli(["evaluate", trained["run"], "--data", trained["csv"], "--output", other / "metrics.json"],
                          capsys)
    _refused(status, err, "--output", str(other / "metrics.json"), "saved run")
    assert _snapshot(other) == before


def test_evaluate_refuses_one_file_named_by_both_outputs(trained, tmp_path, capsys):
    status, _, err = _cli(["evaluate", trained["run"], "--data", trained["csv"], "--output", tmp_path / "x.json",
                           "--confusion-png", tmp_path / "sub" / ".." / "x.json"], capsys)
    _refused(status, err, "--confusion-png", "--output", "choose another path")
    assert list(tmp_path.iterdir()) == []


def test_evaluate_may_write_a_new_file_in_the_run_folder_again_and_again(trained, tmp_path, capsys):
    """The decision in ``evaluate``: a file of the run folder that is not the run's (it neither reads
    nor writes it) may be written, and rewritten by the next evaluate."""
    run = _copy(trained, tmp_path)
    before = _snapshot(run)
    for _ in range(2):
        status, _, err = _cli(["evaluate", run, "--data", trained["csv"], "--output", run / "eval_test.json",
                               "--confusion-png", run / "eval_test.png"], capsys)
        assert status == 0, err
    after = _snapshot(run)
    assert json.loads(after.pop("eval_test.json"))["accuracy"] >= 0 and after.pop("eval_test.png")
    assert after == before


def test_evaluate_writes_into_a_fifo_and_keeps_it(trained, tmp_path, capsys):
    fifo = tmp_path / "metrics.pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a read end that never blocks the test
    try:
        status, _, err = _cli(["evaluate", trained["run"], "--data", trained["csv"], "--output", fifo], capsys)
        data = b""
        while True:
            try:
                chunk = os.read(reader, 1 << 16)
            except BlockingIOError:
                break
            if not chunk:
                break
            data += chunk
    finally:
        os.close(reader)
    assert status == 0, err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert "accuracy" in json.loads(data)


def test_export_refuses_another_runs_folder_and_leaves_it_as_it_was(trained, tmp_path, capsys):
    other = _copy(trained, tmp_path, which="nrun", name="b")
    before = _snapshot(other)
    status, out, err = _cli(["export", trained["nrun"], "--quantize", "int8", "-o", other], capsys)
    _refused(status, err, str(other), "saved run", "export into a new or empty folder")
    assert out == "" and _snapshot(other) == before


def test_export_into_a_subfolder_of_the_run_stays_allowed(trained, tmp_path, capsys):
    run = _copy(trained, tmp_path, which="nrun")
    before = _snapshot(run)
    status, _, err = _cli(["export", run, "-o", run / "onnx"], capsys)
    assert status == 0, err
    assert sorted(p.name for p in (run / "onnx").iterdir()) == ["model.onnx", "onnx.json", "tokenizer.json"]
    assert {k: v for k, v in _snapshot(run).items() if not k.startswith("onnx")} == before


def test_evaluate_output_to_its_own_stdout_redirected_to_a_file(trained, tmp_path):
    """``--output /dev/stdout > file``: the JSON goes through the process's stdout, before the
    printed metrics, in the file the shell opened (a new file renamed over it was lost, and the
    text then went to an unlinked file). /proc/self/fd/1 stands for /dev/stdout here: a test must
    never risk replacing the machine's own /dev/stdout link."""
    import subprocess
    import sys

    out = tmp_path / "out.txt"
    with open(out, "wb") as fh:
        done = subprocess.run([sys.executable, "-m", "textcls.cli", "evaluate", str(trained["run"]), "--data",
                               str(trained["csv"]), "--output", "/proc/self/fd/1"], stdout=fh, stderr=subprocess.PIPE,
                              text=True, timeout=300, env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    decoder = json.JSONDecoder()
    metrics, end = decoder.raw_decode(text)
    assert "accuracy" in metrics and "accuracy" in text[end:]  # the JSON first, then the printed table


def test_evaluate_output_through_a_symlink_loop_is_one_line(trained, tmp_path, capsys):
    """The output check follows links with os.path.realpath: Python 3.11's Path.resolve raised a
    RuntimeError (a traceback) on a loop."""
    (tmp_path / "a.json").symlink_to(tmp_path / "b.json")
    (tmp_path / "b.json").symlink_to(tmp_path / "a.json")
    status, _, err = _cli(["evaluate", trained["run"], "--data", trained["csv"], "--output", tmp_path / "a.json"],
                          capsys)
    _refused(status, err, str(tmp_path / "a.json"))
    assert (tmp_path / "a.json").is_symlink()
