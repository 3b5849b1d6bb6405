"""benchmarks/practitioner_bar.py: issue 19's bar, checked on hand-made suite results."""

import pytest

from conftest import load_benchmark_script


@pytest.fixture(scope="module")
def bar_module():
    return load_benchmark_script("practitioner_bar")


def entry(dataset, name, accuracies, seconds):
    runs = [{"seed": s, "status": "ok", "accuracy": a, "train_seconds": t}
            for s, (a, t) in enumerate(zip(accuracies, seconds))]
    mean = sum(accuracies) / len(accuracies)
    return {"dataset": dataset, "name": name, "status": "ok", "runs": runs, "summary": {"accuracy": {"mean": mean}}}


def result(bar_module, default_acc, peer_acc, default_seconds=(5.0, 5.0, 5.0), datasets=("a", "b")):
    entries = []
    for dataset in datasets:
        entries.append(entry(dataset, bar_module.DEFAULT, default_acc, default_seconds))
        for peer in bar_module.PEERS:
            entries.append(entry(dataset, peer, peer_acc, (1.0, 1.0, 1.0)))
    return {"entries": entries}


def test_a_default_two_points_ahead_within_the_time_meets_the_bar(bar_module):
    bar = bar_module.check_bar(result(bar_module, [0.82, 0.83, 0.84], [0.80, 0.81, 0.82]))
    assert bar["met"]
    assert bar["conditions"]["margin"]["value"] == pytest.approx(2.0)
    assert bar["conditions"]["time_ratio"]["value"] == pytest.approx(5.0)
    assert bar["datasets"][0]["paired_p"] is None  # identical differences: no spread to test


def test_a_loss_over_half_a_point_or_a_slow_default_fails_it(bar_module):
    losing = bar_module.check_bar(result(bar_module, [0.80, 0.80, 0.81], [0.81, 0.81, 0.81]))
    assert not losing["met"] and not losing["conditions"]["worst_loss"]["met"]
    assert losing["conditions"]["worst_loss"]["value"] == pytest.approx(2 / 3)
    one_slow_seed = bar_module.check_bar(result(bar_module, [0.9] * 3, [0.8] * 3, default_seconds=(5.0, 14.0, 5.0)))
    assert one_slow_seed["conditions"]["time_ratio"]["met"]  # the mean ratio, 8
    assert one_slow_seed["datasets"][0]["time_ratio_max"] == pytest.approx(14.0)
    slow = bar_module.check_bar(result(bar_module, [0.9] * 3, [0.8] * 3, default_seconds=(9.0, 14.0, 10.0)))
    assert slow["conditions"]["margin"]["met"] and not slow["conditions"]["time_ratio"]["met"]
    assert slow["conditions"]["time_ratio"]["value"] == pytest.approx(11.0)


def test_a_dataset_without_every_peer_is_skipped_and_named(bar_module):
    data = result(bar_module, [0.9] * 3, [0.8] * 3)
    data["entries"] = [e for e in data["entries"] if not (e["dataset"] == "b" and e["name"] == "minilm-lr")]
    bar = bar_module.check_bar(data)
    assert [row["dataset"] for row in bar["datasets"]] == ["a"]
    assert bar["skipped"] == {"b": ["minilm-lr"]}
    text = bar_module.format_markdown(bar, "practitioner.json")
    assert "b (missing minilm-lr)" in text and "**The bar is met** over 1 dataset: every condition must hold." in text


def test_no_complete_dataset_is_not_a_pass(bar_module):
    data = result(bar_module, [0.9] * 3, [0.8] * 3, datasets=("a",))
    data["entries"] = [e for e in data["entries"] if e["name"] != bar_module.DEFAULT]
    bar = bar_module.check_bar(data)
    assert not bar["met"] and bar["datasets"] == []


def test_the_cpu_second_ratio_is_shown_where_both_runs_recorded_cpu_seconds(bar_module):
    shared = result(bar_module, [0.82, 0.83, 0.84], [0.80, 0.81, 0.82], datasets=("a",))
    for item in shared["entries"]:
        cpu = 4.0 if item["name"] == bar_module.DEFAULT else 0.5  # wall 5 s and 1 s: waited on a core
        for run in item["runs"]:
            run["train_cpu_seconds"] = cpu
    bar = bar_module.check_bar(shared)
    assert bar["datasets"][0]["cpu_time_ratio"] == pytest.approx(8.0)
    assert bar["datasets"][0]["time_ratio"] == pytest.approx(5.0)  # the bar still reads wall seconds
    assert "| 8.0 |" in bar_module.format_markdown(bar, "x.json")
    missing = bar_module.check_bar(result(bar_module, [0.82, 0.83, 0.84], [0.80, 0.81, 0.82], datasets=("a",)))
    assert missing["datasets"][0]["cpu_time_ratio"] is None
