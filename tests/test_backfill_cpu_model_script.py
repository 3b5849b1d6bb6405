"""benchmarks/backfill_cpu_model.py: which CPU timed each run of a report merged over several
sessions, read off the report's git history. A wrong answer would let a time claim compare an
Intel Xeon's seconds with an AMD EPYC's, so every uncertain case must stay unknown."""

import json
import subprocess

import pytest

from conftest import load_benchmark_script

backfill_script = load_benchmark_script("backfill_cpu_model")


def _run(seed, accuracy, device="cpu"):
    return {"seed": seed, "status": "ok", "accuracy": accuracy, "epoch_seconds": 1.0 + accuracy, "device": device}


def _entry(entry_id, runs):
    return {"id": entry_id, "runs": runs}


def _record(entries, cpu, devices=("cpu",)):
    return {"entries": entries, "machine": {"cpu_model": cpu}, "devices": list(devices), "date": "2030-01-02"}


def _commit(repo, path, doc, message):
    path.write_text(json.dumps(doc), encoding="utf-8")
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message],
                   check=True)


@pytest.fixture
def history(tmp_path):
    """A suite report committed three times, then merged once more without a commit."""
    repo = tmp_path / "repo"
    (repo / "results").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    path = repo / "results" / "toy.json"
    first = {"suite": "toy", "git": {"commit": "a" * 40}, "date": "2030-01-01", "machine": {"cpu_model": "Xeon"},
             "entries": [_entry("e1", [_run(0, 0.81), _run(1, 0.82)]), _entry("e2", [_run(0, 0.71)])]}
    _commit(repo, path, first, "the first run, on the Xeon")
    # Seed 1 of e2 merged from the EPYC.
    second = json.loads(json.dumps(first))
    second["entries"][1]["runs"].append(_run(1, 0.72))
    second["reruns"] = [_record(["e2"], "EPYC")]
    _commit(repo, path, second, "e2 seed 1 on the EPYC")
    # CPU and GPU runs joined in one record: the record names one machine of the two.
    third = json.loads(json.dumps(second))
    third["entries"] += [_entry("e3", [_run(0, 0.61)]), _entry("e4", [_run(0, 0.51, device="cuda:0")])]
    third["reruns"].append(_record(["e3", "e4"], "GPU host", devices=("cpu", "cuda:0")))
    # The same commit re-renders nothing in the runs but rebuilds the first record: no run moves.
    third["reruns"][0] = {**third["reruns"][0], "command": "rebuilt"}
    _commit(repo, path, third, "e3 and e4 at one commit, on two machines")
    # In the working file, not committed: e1 seed 1 made again on the EPYC.
    working = json.loads(json.dumps(third))
    working["entries"][0]["runs"][1] = _run(1, 0.83)
    working["reruns"].append(_record(["e1"], "EPYC"))
    path.write_text(json.dumps(working), encoding="utf-8")
    return path


def test_each_run_gets_the_cpu_of_the_merge_that_made_it_and_an_uncertain_one_none(history):
    result, counts = backfill_script.backfill(history)
    cpus = {(e["id"], r["seed"]): r.get("cpu_model") for e in result["entries"] for r in e["runs"]}
    assert cpus == {("e1", 0): "Xeon", ("e1", 1): "EPYC", ("e2", 0): "Xeon", ("e2", 1): "EPYC",
                    ("e3", 0): None, ("e4", 0): None}
    assert counts == {"written": 4, "unknown": 1, "gpu": 1}


def test_an_entry_that_a_first_report_both_ran_and_names_in_a_record_needs_one_cpu(tmp_path):
    # A report first written by --merge-from holds rerun records: its first run may also have
    # made the runs of an entry that a record names.
    docs = [{"git": {"commit": "a"}, "date": "d", "machine": {"cpu_model": "Xeon"},
             "entries": [_entry("same", [_run(0, 0.8)]), _entry("other", [_run(0, 0.7)])],
             "reruns": [_record(["same"], "Xeon"), _record(["other"], "EPYC")]}]
    assert backfill_script.attribute(docs) == {("same", 0): "Xeon", ("other", 0): None}


def test_the_script_writes_the_json_once_and_check_reports_what_it_would_write(history, capsys):
    args = ["toy", "--results", str(history.parent)]
    with pytest.raises(SystemExit) as exit_info:
        backfill_script.main(args + ["--check"])
    assert exit_info.value.code == 1 and "toy: 4 run(s) given their CPU, 1 not known" in capsys.readouterr().out
    before = history.read_text(encoding="utf-8")
    backfill_script.main(args)
    written = json.loads(history.read_text(encoding="utf-8"))
    assert written != json.loads(before) and written["entries"][0]["runs"][0]["cpu_model"] == "Xeon"
    backfill_script.main(args + ["--check"])  # nothing left to write: exits 0
    assert "toy: 0 run(s) given their CPU, 1 not known, 4 recorded it already" in capsys.readouterr().out.splitlines()[-1]


def test_a_report_git_does_not_track_is_refused_in_one_line(tmp_path, capsys):
    (tmp_path / "toy.json").write_text('{"suite": "toy", "entries": []}', encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        backfill_script.main(["toy", "--results", str(tmp_path)])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.startswith("error: ")
