"""benchmarks/missing_runs.py: the queue of runs a suite's committed report still lacks."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import load_benchmark_script
from textcls.benchmark.progress import missing_runs


def runs(seeds, failed=()):
    return [{"seed": s, "accuracy": None if s in failed else 0.9} for s in seeds]


def test_lists_the_missing_seeds_seed_major_in_suite_order(tmp_path):
    suite = tmp_path / "toy.toml"
    suite.write_text('[suite]\nname = "toy"\ndescription = "t"\n[defaults]\nseeds = [0, 1, 2]\n'
                     '[[entry]]\ndataset = "trec"\nmodel = "tfidf-lr"\n'
                     '[[entry]]\ndataset = "mr"\nmodels = ["tfidf-nb", "fasttext-bag"]\n', encoding="utf-8")
    results = tmp_path / "results"
    results.mkdir()
    (results / "toy.json").write_text(json.dumps({"entries": [
        {"id": "trec:tfidf-lr", "runs": runs([0, 1, 2])},
        {"id": "mr:tfidf-nb", "runs": runs([0, 1], failed=(1,))},  # seed 1 failed: it is run again
    ]}), encoding="utf-8")
    assert missing_runs(str(suite), results) == [
        ("mr:fasttext-bag", 0), ("mr:tfidf-nb", 1), ("mr:fasttext-bag", 1), ("mr:tfidf-nb", 2), ("mr:fasttext-bag", 2)]
    assert missing_runs(str(suite), results, only=["fasttext"]) == [
        ("mr:fasttext-bag", 0), ("mr:fasttext-bag", 1), ("mr:fasttext-bag", 2)]
    # no report yet: every run of every entry
    assert len(missing_runs(str(suite), tmp_path / "none")) == 9


def test_runs_cut_off_with_a_checkpoint_come_first_and_say_where_they_resume(tmp_path, capsys):
    suite = tmp_path / "toy.toml"
    suite.write_text('[suite]\nname = "toy"\ndescription = "t"\n[defaults]\nseeds = [0, 1]\n'
                     '[[entry]]\ndataset = "fdu_mtl/books"\nmodels = ["fcsr", "bilstm"]\n', encoding="utf-8")
    checkpoints = tmp_path / "runs-checkpoints"
    state = checkpoints / "fdu_mtl_books_bilstm_s1" / "checkpoint" / "state.json"
    state.parent.mkdir(parents=True)
    state.write_text(json.dumps({"progress": {"history": [{"seconds": 2.0}, {"seconds": 3.0}]}}), encoding="utf-8")
    (checkpoints / "fdu_mtl_books_fcsr_s0").mkdir()  # cut off before its first epoch: nothing to resume
    (tmp_path / "results").mkdir()  # no report yet
    script = load_benchmark_script("missing_runs")
    script.main([str(suite), "--results", str(tmp_path / "results"), "--checkpoints", str(checkpoints)])
    assert capsys.readouterr().out.splitlines() == [
        "fdu_mtl/books:bilstm 1  # resumes after epoch 2", "fdu_mtl/books:fcsr 0", "fdu_mtl/books:bilstm 0",
        "fdu_mtl/books:fcsr 1"]
    state.write_text("{not json", encoding="utf-8")
    with pytest.raises(SystemExit) as done:
        script.main([str(suite), "--results", str(tmp_path / "results"), "--checkpoints", str(checkpoints)])
    err = capsys.readouterr().err
    assert done.value.code == 2 and re.match(r"error: .*state.json is corrupt or not a textcls checkpoint", err), err


def test_a_resumable_run_names_the_commit_and_machine_that_made_its_epochs(tmp_path, capsys):
    """The queue comment of a run cut off says where its checkpoint was made (the origin file
    the runner writes beside checkpoint/), so a session at another commit or on another machine
    sees that resuming mixes epochs; the queue stays valid for --check-queue."""
    suite = tmp_path / "toy.toml"
    suite.write_text('[suite]\nname = "toy"\n[defaults]\nseeds = [0, 1]\n'
                     '[[entry]]\ndataset = "fdu_mtl/books"\nmodel = "bilstm"\n', encoding="utf-8")
    checkpoints = tmp_path / "runs-checkpoints"
    for seed, origin in ((0, {"commit": "b557176" + "0" * 33, "dirty": False, "cpu_model": "AMD EPYC 7B13",
                              "device": "cpu", "date": "2025-01-02T03:04:05+00:00"}),
                         (1, {"commit": "e387f1c" + "0" * 33, "dirty": True, "cpu_model": "Intel Xeon",
                              "device": "cuda: NVIDIA H100 80GB HBM3", "date": "2025-01-03T03:04:05+00:00"})):
        folder = checkpoints / f"fdu_mtl_books_bilstm_s{seed}"
        (folder / "checkpoint").mkdir(parents=True)
        (folder / "checkpoint" / "state.json").write_text(
            json.dumps({"progress": {"history": [{"seconds": 2.0}] * (16 + seed)}}), encoding="utf-8")
        (folder / "origin.json").write_text(json.dumps(origin), encoding="utf-8")
    (tmp_path / "results").mkdir()
    script = load_benchmark_script("missing_runs")
    script.main([str(suite), "--results", str(tmp_path / "results"), "--checkpoints", str(checkpoints)])
    out = capsys.readouterr().out
    assert out.splitlines() == [
        "fdu_mtl/books:bilstm 0  # resumes after epoch 16 (made at b557176 on AMD EPYC 7B13)",
        "fdu_mtl/books:bilstm 1  # resumes after epoch 17 (made at e387f1c with uncommitted changes on "
        "cuda: NVIDIA H100 80GB HBM3)"]
    queue = tmp_path / "queue.txt"
    queue.write_text(out, encoding="utf-8")
    script.main([str(suite), "--check-queue", str(queue)])
    # run_queue.sh reads the comment as one too (--pending parses every line and runs nothing).
    pending = subprocess.run(["bash", str(Path(__file__).resolve().parents[1] / "benchmarks" / "run_queue.sh"),
                              "--pending", str(suite), str(queue), str(tmp_path / "runs")],
                             capture_output=True, text=True)
    assert pending.returncode == 1, pending.stderr
    assert [line for line in pending.stdout.splitlines() if line.startswith("unfinished:")] == [
        "unfinished: fdu_mtl/books:bilstm 0", "unfinished: fdu_mtl/books:bilstm 1"]


TOY = ('[suite]\nname = "toy"\ndescription = "t"\n[defaults]\nseeds = [0, 1]\n'
       '[[entry]]\ndataset = "trec"\nmodel = "tfidf-lr"\n')


@pytest.mark.parametrize("results, problem", [("nosuch", "no such folder"), ("toy.toml", "is not a folder")])
def test_a_results_folder_that_is_not_there_is_refused(tmp_path, capsys, results, problem):
    """It once read a mistyped --results as "no report yet" and listed every run as missing."""
    suite = tmp_path / "toy.toml"
    suite.write_text(TOY, encoding="utf-8")
    script = load_benchmark_script("missing_runs")
    with pytest.raises(SystemExit) as done:
        script.main([str(suite), "--results", str(tmp_path / results)])
    out, err = capsys.readouterr()
    assert done.value.code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith(f"error: --results {tmp_path / results}: {problem}; name the folder"), err
    (tmp_path / "empty").mkdir()  # a folder without the suite's report yet: every run is missing
    script.main([str(suite), "--results", str(tmp_path / "empty")])
    assert capsys.readouterr().out.splitlines() == ["trec:tfidf-lr 0", "trec:tfidf-lr 1"]


def test_a_reader_that_stops_early_ends_it_quietly(tmp_path):
    """`missing_runs.py SUITE | head` once ended with a BrokenPipeError traceback."""
    suite = tmp_path / "toy.toml"
    suite.write_text(TOY, encoding="utf-8")
    (tmp_path / "results").mkdir()
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "missing_runs.py"
    proc = subprocess.Popen([sys.executable, str(script), str(suite), "--results", str(tmp_path / "results")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before the first line is written
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 1 and err == "", err


def test_a_checkpoints_folder_that_is_not_there_is_refused(tmp_path, capsys):
    """It once read a mistyped --checkpoints as "no checkpoints": no cut-off run came first."""
    suite = tmp_path / "toy.toml"
    suite.write_text(TOY, encoding="utf-8")
    (tmp_path / "results").mkdir()
    script = load_benchmark_script("missing_runs")
    with pytest.raises(SystemExit) as done:
        script.main([str(suite), "--results", str(tmp_path / "results"), "--checkpoints", str(tmp_path / "ckk")])
    out, err = capsys.readouterr()
    assert done.value.code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith(f"error: --checkpoints {tmp_path / 'ckk'}: no such folder; name the folder"), err


def test_runs_made_with_settings_the_suite_file_no_longer_has_are_queued_again_and_said_stale(tmp_path, capsys):
    """Such runs once counted as done: nothing said the report was not the suite file's recipe."""
    suite = tmp_path / "toy.toml"
    suite.write_text('[suite]\nname = "toy"\n[defaults]\nseeds = [0, 1]\n'
                     '[[entry]]\ndataset = "trec"\nmodel = "tfidf-lr"\noverrides = { C_grid = [10.0] }\n'
                     '[[entry]]\ndataset = "mr"\nmodel = "tfidf-nb"\nname = "bag"\n'
                     '[[entry]]\ndataset = "mr"\nmodel = "tfidf-lr"\n', encoding="utf-8")
    results = tmp_path / "results"
    results.mkdir()
    recipe = {"max_per_split": None, "overrides": {}}
    (results / "toy.json").write_text(json.dumps({"entries": [
        {"id": "trec:tfidf-lr", "dataset": "trec", "model": "tfidf-lr", **recipe, "overrides": {"C_grid": [1.0]},
         "runs": runs([0, 1])},
        {"id": "mr:bag", "dataset": "mr", "model": "tfidf-lr", **recipe, "runs": runs([1])},
        {"id": "mr:tfidf-lr", "dataset": "mr", "model": "tfidf-lr", **recipe, "runs": runs([0, 1])},  # current
    ]}), encoding="utf-8")
    script = load_benchmark_script("missing_runs")
    script.main([str(suite), "--results", str(results)])
    out = capsys.readouterr().out
    assert out.splitlines() == [
        "trec:tfidf-lr 0", "mr:bag 0", "trec:tfidf-lr 1", "mr:bag 1",
        '# trec:tfidf-lr seed(s) 0, 1 in the report: stale: made with overrides = {"C_grid": [1.0]}, '
        'the suite file now says {"C_grid": [10.0]} (queued above)',
        '# mr:bag seed(s) 1 in the report: stale: made with model = "tfidf-lr", the suite file now says '
        '"tfidf-nb" (queued above)']
    queue = tmp_path / "queue.txt"
    queue.write_text(out, encoding="utf-8")
    script.main([str(suite), "--check-queue", str(queue)])  # the comments keep the queue valid


def test_a_checkpoint_of_a_run_the_report_has_is_named_stale(tmp_path, capsys):
    """A run finished without its checkpoint folder (another machine, say) left its checkpoint:
    once nothing said so, and a rerun with that folder silently resumed the old epochs."""
    suite = tmp_path / "toy.toml"
    suite.write_text('[suite]\nname = "toy"\n[defaults]\nseeds = [0, 1]\n'
                     '[[entry]]\ndataset = "fdu_mtl/books"\nmodel = "bilstm"\n', encoding="utf-8")
    checkpoints = tmp_path / "runs-checkpoints"
    for seed in (0, 1):
        state = checkpoints / f"fdu_mtl_books_bilstm_s{seed}" / "checkpoint" / "state.json"
        state.parent.mkdir(parents=True)
        state.write_text(json.dumps({"progress": {"history": [{"seconds": 2.0}]}}), encoding="utf-8")
    results = tmp_path / "results"
    results.mkdir()
    (results / "toy.json").write_text(json.dumps({"entries": [{"id": "fdu_mtl/books:bilstm", "runs": runs([1])}]}),
                                      encoding="utf-8")
    script = load_benchmark_script("missing_runs")
    script.main([str(suite), "--results", str(results), "--checkpoints", str(checkpoints)])
    stale = checkpoints / "fdu_mtl_books_bilstm_s1"
    assert capsys.readouterr().out.splitlines() == [
        "fdu_mtl/books:bilstm 0  # resumes after epoch 1",
        f"# fdu_mtl/books:bilstm 1 is in the report, yet its checkpoint is stale: remove {stale} before rerunning "
        "it: a rerun would resume from it"]
