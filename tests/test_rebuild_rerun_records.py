"""benchmarks/rebuild_rerun_records.py: records that a queue's root, merged again as it filled,
had piled up (every run so far, under the first report's commit) become one record per commit
the runs were made at; records without their run folders stay, less exact repeats."""

import json

import pytest

from conftest import load_benchmark_script


def _part(folder, entry_id, commit, date):
    folder.mkdir(parents=True)
    part = {"suite": "toy", "only": [entry_id], "git": {"commit": commit, "dirty": False}, "date": date,
            "wall_seconds": 2.0, "machine": {"cpu_model": "m"},
            "command": f"textcls benchmark --only {entry_id} --output-dir {folder}",
            "entries": [{"id": entry_id, "runs": [{"seed": 0, "device": "cpu", "accuracy": 0.5}]}]}
    (folder / "toy--only.json").write_text(json.dumps(part), encoding="utf-8")
    return part


def test_piled_up_records_become_one_per_commit_and_the_runs_stay(tmp_path):
    script = load_benchmark_script("rebuild_rerun_records")
    a = _part(tmp_path / "root" / "a_s0", "d:a", "1" * 40, "2030-01-01T00:00:00")
    b = _part(tmp_path / "root" / "b_s0", "d:b", "2" * 40, "2030-01-02T00:00:00")
    generic = {"entries": ["d:x"], "git": {"commit": "0" * 40}, "date": "2029-12-31T00:00:00",
               "command": "benchmarks/run_queue.sh toy <queue> <root>", "wall_seconds": 1.0}
    piled = [  # the old --merge-from: both merges named the first report's commit
        {"entries": ["d:a"], "git": a["git"], "date": a["date"], "command": a["command"]},
        {"entries": ["d:a", "d:b"], "git": a["git"], "date": a["date"], "command": f"{a['command']}; {b['command']}"},
    ]
    gone = {"entries": ["d:y"], "git": {"commit": "3" * 40}, "date": "2030-01-03T00:00:00",
            "command": "textcls benchmark --only d:y --output-dir /nowhere/y_s0"}
    result = {"suite": "toy", "entries": [{"id": "d:a", "runs": []}],
              "reruns": [{**generic, "entries": []}, generic, *piled, gone]}
    rebuilt, before, after = script.rebuild(result)
    assert (before, after) == (5, 4) and rebuilt["entries"] == result["entries"]
    records = rebuilt["reruns"]
    assert records[0] == generic and records[-1] == gone  # the earlier repeat of `generic` (no entry it lacks) is gone
    assert [(r["git"]["commit"], r["entries"], r["command"]) for r in records[1:3]] == [
        ("1" * 40, ["d:a"], a["command"]), ("2" * 40, ["d:b"], b["command"])]
    assert records[1]["devices"] == ["cpu"] and records[1]["wall_seconds"] == 2.0


def test_a_folder_of_full_reports_is_not_read_as_run_folders_and_bad_input_is_one_line(tmp_path, capsys):
    script = load_benchmark_script("rebuild_rerun_records")
    results = tmp_path / "results"
    results.mkdir()
    other = {"suite": "other", "date": "2030-01-01T00:00:00", "entries": [{"id": "d:z", "runs": [{"seed": 0}]}]}
    (results / "other.json").write_text(json.dumps(other), encoding="utf-8")
    merged_in_place = {"entries": ["d:a"], "git": {"commit": "4" * 40}, "date": "2030-01-05T00:00:00",
                       "command": f"textcls benchmark --only d:a --merge --output-dir {results}"}
    (tmp_path / "damaged_s0").mkdir()
    (tmp_path / "damaged_s0" / "toy--only.json").write_text("{", encoding="utf-8")
    damaged = {**merged_in_place, "command": f"textcls benchmark --only d:a --output-dir {tmp_path / 'damaged_s0'}"}
    result = {"suite": "toy", "entries": [], "reruns": [merged_in_place, damaged]}
    assert script.rebuild(result)[0]["reruns"] == [merged_in_place, damaged]
    result["reruns"] = [merged_in_place]
    (results / "toy.json").write_text(json.dumps(result), encoding="utf-8")
    script.main(["toy", "--results", str(results)])
    assert capsys.readouterr().out == "toy: 1 records, nothing to rebuild\n"
    with pytest.raises(SystemExit) as stop:
        script.main(["toy", "absent", "--results", str(results)])
    assert stop.value.code == 2 and "absent.json" in capsys.readouterr().err
