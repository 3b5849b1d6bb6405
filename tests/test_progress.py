"""How far each full suite has run (textcls.benchmark.progress) on a hand-made suite file and
report, and its section of REPRODUCTION.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from textcls.benchmark.progress import Remaining, format_progress, full_suite_progress, missing_runs, suite_progress
from textcls.benchmark.reproduction import write_reproduction
from textcls.benchmark.verdicts import Claim

SUITE = """\
[suite]
name = "toy_full"
description = "t"
[defaults]
seeds = [0, 1, 2, 3]
[[entry]]
dataset = "mr"
models = ["tfidf-lr", "tfidf-nb"]
[[entry]]
dataset = "trec"
model = "tfidf-lr"
seeds = [0, 1]
"""


def _run(seed, wall=None, device="cpu", accuracy=0.9, **extra):
    run = {"seed": seed, "accuracy": accuracy, "device": device, **extra}
    if wall is not None:
        run["wall_seconds"] = wall
    return run


def _entry(entry_id: str, runs: list[dict]) -> dict:
    dataset, model = entry_id.split(":")
    return {"id": entry_id, "dataset": dataset, "model": model, "status": "ok", "runs": runs}


def _write(root: Path) -> tuple[Path, Path]:
    suites, results = root / "suites", root / "results"
    suites.mkdir()
    results.mkdir()
    (suites / "toy_full.toml").write_text(SUITE, encoding="utf-8")
    (suites / "toy.toml").write_text(SUITE.replace("toy_full", "toy"), encoding="utf-8")  # not a full suite
    (results / "toy_full.json").write_text(json.dumps({"entries": [
        _entry("mr:tfidf-lr", [
            _run(0, 100.0), _run(1, 300.0),
            _run(2, 5000.0, device="cuda: NVIDIA H200"),      # a GPU run: finished, not timed
            _run(5, 9000.0, features_cached=True),          # cached features: not timed (nor planned)
            _run(3, 7000.0, accuracy=None, status="failed"),  # failed: neither finished nor timed
        ]),
        _entry("mr:tfidf-nb", [_run(0), _run(1, device=None)]),  # no wall time: untimed
        # trec:tfidf-lr has no record at all
    ]}), encoding="utf-8")
    return suites, results


def test_planned_finished_missing_and_the_hours_left(tmp_path):
    suites, results = _write(tmp_path)
    p = suite_progress(suites / "toy_full.toml", results)
    assert (p.suite, p.planned, p.finished) == ("toy_full", 10, 5)
    # mr:tfidf-lr misses seed 3 (its failed run), timed at (100 + 300) / 2 s; mr:tfidf-nb misses
    # seeds 2 and 3 and trec:tfidf-lr both its seeds, all untimed
    assert p.left == Remaining(missing=5, seconds=200.0, untimed=4)
    assert p.datasets == (("mr", Remaining(3, 200.0, 2)), ("trec", Remaining(2, 0.0, 2)))
    assert len(missing_runs(suites / "toy_full.toml", results)) == p.left.missing


def test_only_full_suites_count_in_the_order_given_then_by_name(tmp_path):
    suites, results = _write(tmp_path)
    (suites / "abc_full.toml").write_text(SUITE.replace("toy_full", "abc_full"), encoding="utf-8")
    assert [p.suite for p in full_suite_progress(results, suites)] == ["abc_full", "toy_full"]
    assert [p.suite for p in full_suite_progress(results, suites, first=["toy_full"])] == ["toy_full", "abc_full"]
    # no report at all: every planned run is missing; mr:tfidf-lr's 4 take toy_full's 200 s a run
    # (the same dataset, model and overrides), the others are untimed
    [abc, _] = full_suite_progress(results, suites)
    assert (abc.planned, abc.finished, abc.left) == (10, 0, Remaining(10, pytest.approx(800.0), 6))
    assert full_suite_progress(results, tmp_path / "nowhere") == []


def test_the_table_rows_and_the_per_dataset_breakdown(tmp_path):
    suites, results = _write(tmp_path)
    lines = format_progress([suite_progress(suites / "toy_full.toml", results)])
    assert lines[0] == "## How far each full suite has run"
    assert ("| suite | planned | finished | missing | ~CPU hours left (timed part) "
            "| runs with a timed epoch only | their CPU hours of training at the epoch cap | untimed runs |") in lines
    assert "| `toy_full` | 10 | 5 | 5 | 0.1 | 0 | 0.0 | 4 |" in lines  # 200 s = 0.06 h
    assert "- `toy_full`: mr: 3 missing: 1 ~0.1 h, 2 untimed; trec: 2 missing, untimed" in lines
    assert "python benchmarks/missing_runs.py SUITE" in "\n".join(lines)
    assert format_progress([]) == []


def test_a_complete_suite_says_so_and_hours_add_up_over_its_runs(tmp_path):
    suites, results = _write(tmp_path)
    report = json.loads((results / "toy_full.json").read_text(encoding="utf-8"))
    report["entries"] = [_entry("trec:tfidf-lr", [_run(0, 3600.0), _run(1, 7200.0)]),
                         _entry("mr:tfidf-lr", [_run(s, 1800.0) for s in range(4)]),
                         _entry("mr:tfidf-nb", [_run(s, 60.0) for s in range(4)])]
    (results / "toy_full.json").write_text(json.dumps(report), encoding="utf-8")
    p = suite_progress(suites / "toy_full.toml", results)
    assert (p.planned, p.finished, p.left, p.datasets) == (10, 10, Remaining(), ())
    assert "- `toy_full`: complete" in format_progress([p])
    report["entries"][1]["runs"] = report["entries"][1]["runs"][:1]  # mr:tfidf-lr: 3 more runs of 1800 s
    (results / "toy_full.json").write_text(json.dumps(report), encoding="utf-8")
    p = suite_progress(suites / "toy_full.toml", results)
    assert p.left == Remaining(3, pytest.approx(5400.0), 0)
    assert "| `toy_full` | 10 | 7 | 3 | 1.5 | 0 | 0.0 | 0 |" in format_progress([p])


def test_the_page_has_the_section_right_after_the_summary_and_is_deterministic(tmp_path):
    suites, results = _write(tmp_path)
    claim = Claim(id="toy.claim", paper="spe_cnn", source="Table 0", claim="a claim", kind="greater",
                  suites=["toy_full"], datasets=["mr"], pairs=[["tfidf-lr", "tfidf-nb"]])
    out = write_reproduction(results, tmp_path / "R.md", [claim], suites_dir=suites)
    text = out.read_text(encoding="utf-8")
    assert text.index("## Summary") < text.index("## How far each full suite has run") < text.index("## spe_cnn")
    assert "| `toy_full` | 10 | 5 | 5 | 0.1 | 0 | 0.0 | 4 |" in text and "`toy` |" not in text
    again = write_reproduction(results, tmp_path / "again.md", [claim], suites_dir=suites)
    assert again.read_bytes() == out.read_bytes()
    # suites_dir defaults to the results folder's sibling `suites`
    assert write_reproduction(results, tmp_path / "default.md", [claim]).read_bytes() == out.read_bytes()


def test_a_resumed_run_counts_its_earlier_processes_and_a_record_without_device_ran_on_the_cpu(tmp_path):
    suites, results = _write(tmp_path)
    report = json.loads((results / "toy_full.json").read_text(encoding="utf-8"))
    older = {"seed": 0, "accuracy": 0.8, "wall_seconds": 50.0}  # before runs recorded their device
    resumed = _run(1, 300.0, resumed={"from_epoch": 30, "seconds_before": 6000.0})
    report["entries"] = [_entry("mr:tfidf-nb", [older, resumed])]
    (results / "toy_full.json").write_text(json.dumps(report), encoding="utf-8")
    p = suite_progress(suites / "toy_full.toml", results)
    # mr:tfidf-nb's seeds 2 and 3 at (50 + 6300) / 2 s each; mr:tfidf-lr and trec untimed
    assert dict(p.datasets)["mr"] == Remaining(6, pytest.approx(6350.0), 4)


def _epoch_row(entry_id: str, model: str, cap=10, train=30.0, dev=6.0, **extra) -> dict:
    return {"entry": entry_id, "dataset": entry_id.split(":")[0], "model": model, "overrides": {},
            "epochs_cap": cap, "train_epoch_seconds": train, "dev_seconds": dev, **extra}


def _write_epoch_times(results: Path, name: str, suite: str, rows: list[dict]) -> None:
    (results / "epoch_times").mkdir(exist_ok=True)
    (results / "epoch_times" / f"{name}.json").write_text(json.dumps({"suite": suite, "rows": rows}), encoding="utf-8")


def test_an_entry_with_only_a_timed_epoch_gets_its_cpu_time_at_the_epoch_cap(tmp_path):
    suites, results = _write(tmp_path)
    _write_epoch_times(results, "toy_full", "toy_full", [
        _epoch_row("trec:tfidf-lr", "tfidf-lr"),                       # 10 x (30 + 6) = 360 s a run
        _epoch_row("mr:tfidf-lr", "tfidf-lr", train=1e6),              # has finished runs: theirs count
        {"entry": "mr:tfidf-nb", "dataset": "mr", "model": "tfidf-nb", "epochs_cap": 10},  # no times: skipped
    ])
    # a second file of the suite's: the same dataset, model and overrides under another entry name
    _write_epoch_times(results, "toy_full_vectors", "toy_full", [
        _epoch_row("mr:renamed", "tfidf-nb", cap=5, train=100.0, dev=20.0),  # 600 s
        _epoch_row("trec:tfidf-lr", "tfidf-lr", train=1e6),                 # the row naming it in the first file wins
    ])
    p = suite_progress(suites / "toy_full.toml", results)
    assert p.datasets == (("mr", Remaining(3, 200.0, 0, capped=2, capped_seconds=pytest.approx(1200.0))),
                          ("trec", Remaining(2, 0.0, 0, capped=2, capped_seconds=pytest.approx(720.0))))
    lines = format_progress([p])
    assert "| `toy_full` | 10 | 5 | 5 | 0.1 | 4 | 0.5 | 0 |" in lines  # 1920 s = 0.53 h
    assert ("- `toy_full`: mr: 3 missing: 1 ~0.1 h, 2 up to ~0.3 h of CPU at the epoch cap; "
            "trec: 2 missing: 2 up to ~0.2 h of CPU at the epoch cap") in lines


def test_epoch_rows_count_only_for_their_own_suite_and_the_settings_they_timed(tmp_path):
    suites, results = _write(tmp_path)
    # toy_full's file also matches the glob toy_*.json: its rows are not the suite toy's
    _write_epoch_times(results, "toy_full", "toy_full", [_epoch_row("trec:tfidf-lr", "tfidf-lr")])
    toy = suite_progress(suites / "toy.toml", results)
    assert toy.left == Remaining(10, 0.0, 10)
    # a row naming an entry whose settings have changed since does not count for it
    _write_epoch_times(results, "toy_full", "toy_full", [
        _epoch_row("trec:tfidf-lr", "tfidf-lr", overrides={"epochs": 3}),
        _epoch_row("mr:tfidf-nb", "tfidf-nb", max_per_split=100),
    ])
    p = suite_progress(suites / "toy_full.toml", results)
    assert (p.left.capped, p.left.untimed) == (0, 4)
    assert "- `toy_full`: mr: 3 missing: 1 ~0.1 h, 2 untimed; trec: 2 missing, untimed" in format_progress([p])


def test_an_entry_without_cpu_runs_of_its_own_takes_those_of_the_same_settings_in_the_full_suites(tmp_path):
    suites, results = _write(tmp_path)
    other = SUITE.replace("toy_full", "other_full").replace('models = ["tfidf-lr", "tfidf-nb"]',
                                                            'model = "tfidf-nb"\noverrides = {alpha = 0.5}')
    (suites / "other_full.toml").write_text(other, encoding="utf-8")
    (results / "other_full.json").write_text(json.dumps({"entries": [
        _entry("trec:tfidf-lr", [_run(0, 40.0), _run(1, 80.0), _run(2, 999.0, device="cuda: NVIDIA H200")]),
        _entry("mr:tfidf-nb", [_run(s, 5000.0) for s in range(4)]),  # other overrides: not toy_full's mr:tfidf-nb
    ]}), encoding="utf-8")
    # a suite that is not a full one lends nothing
    (results / "toy.json").write_text(json.dumps({"entries": [_entry("mr:tfidf-nb", [_run(0, 7.0)])]}),
                                      encoding="utf-8")
    _write_epoch_times(results, "toy_full", "toy_full", [_epoch_row("trec:tfidf-lr", "tfidf-lr")])
    by_name = {p.suite: p for p in full_suite_progress(results, suites)}
    toy = by_name["toy_full"]
    # trec:tfidf-lr: other_full's CPU runs (40 + 80) / 2 s, ahead of its own epoch-cap row; mr:tfidf-lr
    # keeps its own 200 s; mr:tfidf-nb has no run with its settings anywhere: untimed
    assert toy.datasets == (("mr", Remaining(3, 200.0, 2)), ("trec", Remaining(2, pytest.approx(120.0), 0)))
    # other_full has finished all it plans
    assert by_name["other_full"].left == Remaining()
    # without the full suites' pool, suite_progress keeps to its own runs and epoch rows
    assert suite_progress(suites / "toy_full.toml", results).datasets[1] == \
        ("trec", Remaining(2, 0.0, 0, capped=2, capped_seconds=pytest.approx(720.0)))


def test_a_run_that_shared_its_cores_does_not_time_the_runs_left(tmp_path):
    suites, results = _write(tmp_path)
    report = json.loads((results / "toy_full.json").read_text(encoding="utf-8"))
    alone = _run(0, 100.0, train_seconds=90.0, train_cpu_seconds=88.0, threads=1)
    # beside three other jobs on two cores: 0.4 of a core, its wall clock stretched by their load
    crowded = _run(1, 900.0, train_seconds=890.0, train_cpu_seconds=356.0, threads=1)
    report["entries"][0]["runs"] = [alone, crowded]
    (results / "toy_full.json").write_text(json.dumps(report), encoding="utf-8")
    p = suite_progress(suites / "toy_full.toml", results)
    # mr:tfidf-lr's seeds 2 and 3 at the alone run's 100 s, not at (100 + 900) / 2
    assert dict(p.datasets)["mr"] == Remaining(4, 200.0, 2)
    report["entries"][0]["runs"] = [crowded]
    (results / "toy_full.json").write_text(json.dumps(report), encoding="utf-8")
    # seeds 0, 2 and 3 missing, and no run left to time them
    assert dict(suite_progress(suites / "toy_full.toml", results).datasets)["mr"] == Remaining(5, 0.0, 5)
