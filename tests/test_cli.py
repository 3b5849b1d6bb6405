"""The CLI: a train/evaluate/predict round trip, and one-line errors with exit status 2."""

import json
import os
import subprocess
import sys

import pytest

CLI = [sys.executable, "-m", "textcls.cli"]


def run(*args, stdin=None, cwd=None):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run(CLI + list(args), input=stdin, capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=300)


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("cli") / "trec-run"
    out = run("train", "--model", "tfidf-lr", "--data", "trec", "--max-per-split", "400",
              "--run-dir", str(run_dir), "--no-progress", "--confusion-png")
    assert out.returncode == 0, out.stderr
    return run_dir, out


def test_train_saves_a_complete_run(trained_run):
    run_dir, out = trained_run
    assert "accuracy" in out.stdout
    files = {p.name for p in run_dir.iterdir()}
    assert {"config.json", "model.safetensors", "metrics.json", "confusion_matrix.png"} <= files
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert 0.4 < metrics["test"]["accuracy"] <= 1.0
    assert not run_dir.with_name(run_dir.name + ".partial").exists()


def test_predict_arguments_stdin_and_empty_text(trained_run):
    run_dir, _ = trained_run
    out = run("predict", str(run_dir), "What is the capital of France ?", "")
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(rows) == 2
    assert rows[0]["label"] in rows[0]["probabilities"]
    assert abs(sum(rows[1]["probabilities"].values()) - 1.0) < 1e-4
    piped = run("predict", str(run_dir), stdin="How many legs does a spider have ?\nWho wrote Hamlet ?\n")
    assert piped.returncode == 0, piped.stderr
    assert [json.loads(x)["text"] for x in piped.stdout.splitlines()] == [
        "How many legs does a spider have ?", "Who wrote Hamlet ?"]


def test_evaluate_a_saved_run(trained_run, tmp_path):
    run_dir, _ = trained_run
    out = run("evaluate", str(run_dir), "--data", "trec", "--max-per-split", "400",
              "--output", str(tmp_path / "m.json"))
    assert out.returncode == 0, out.stderr
    assert json.loads((tmp_path / "m.json").read_text())["accuracy"] > 0.4


@pytest.mark.parametrize("args, expected", [
    (("train", "--model", "kim-cnn-nonstatc"), "kim-cnn-nonstatic"),
    (("train", "--data", "trec-fin"), "trec-fine"),
    (("train", "--model", "tfidf-lr", "--data", "/no/such/file.csv"), "/no/such/file.csv"),
    (("train", "--epochs", "0", "--data", "trec"), "epochs"),
    (("train", "--set", "nonsense_param=3", "--data", "trec"), "nonsense_param"),
    (("predict", "/no/such/run", "text"), "/no/such/run"),
    (("train", "--no-such-option"), "no-such-option"),
    (("benchmark", "--suite", "tiny", "--render", "--only", "trec"), "drop --only and --merge"),
    (("benchmark", "--suite", "tiny", "--render", "--output-dir", "/no/such/dir"), "no results of suite 'tiny'"),
])
def test_errors_are_one_line_with_status_2(args, expected):
    out = run(*args)
    assert out.returncode == 2, (out.returncode, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert "Traceback" not in out.stderr
    assert expected in lines[0]


def test_bad_file_names_the_line(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"text,label\ngood text,a\n\xff\xfe broken,b\n")
    out = run("train", "--model", "tfidf-lr", "--data", str(bad))
    assert out.returncode == 2
    assert "bad.csv:3:" in out.stderr and "latin-1" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_list_commands():
    models = run("list-models")
    assert models.returncode == 0
    names = [line.split()[0] for line in models.stdout.splitlines()]
    assert {"kim-cnn-rand", "kim-cnn-static", "kim-cnn-nonstatic", "kim-cnn-multichannel",
            "fasttext-bag", "tfidf-lr", "tfidf-nb"} <= set(names)
    data = run("list-datasets")
    assert data.returncode == 0
    assert {"mr", "trec", "fdu_mtl/books", "fine-food", "dbpedia"} <= {l.split()[0] for l in data.stdout.splitlines()}


def test_resume_needs_an_interrupted_run_and_a_partial_run_needs_resume(tmp_path):
    run_dir = tmp_path / "r"
    out = run("train", "--model", "fasttext-bag", "--data", "trec", "--run-dir", str(run_dir), "--resume")
    assert out.returncode == 2 and "no interrupted run to resume" in out.stderr
    (tmp_path / "r.partial").mkdir()
    out = run("train", "--model", "fasttext-bag", "--data", "trec", "--run-dir", str(run_dir))
    assert out.returncode == 2 and "pass --resume" in out.stderr
    assert not run_dir.exists()


def test_headerless_tsv_with_chosen_columns_and_test_fraction(tmp_path):
    rows = [("pos", "a fine and moving film"), ("neg", "a dull and tired film")] * 30
    data = tmp_path / "reviews.txt"
    data.write_text("".join(f"{label}\t{text}\n" for label, text in rows), encoding="utf-8")
    run_dir = tmp_path / "run"
    out = run("train", "--model", "tfidf-lr", "--data", str(data), "--format", "tsv", "--no-header",
              "--label-column", "0", "--text-column", "1", "--test-fraction", "0.25",
              "--run-dir", str(run_dir), "--no-progress")
    assert out.returncode == 0, out.stderr
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["dataset"]["splits"] == {"train": 45, "test": 15}
    assert metrics["test"]["accuracy"] == 1.0
