"""Multi-label and multi-task data from the command line: per-task metrics in `textcls evaluate`,
the per-label confusion view of --confusion-png, and fasttext-bag's default multi-label recipe."""

import json

import numpy as np
import pytest
from PIL import Image

from textcls import Classifier, load_dataset
from textcls.cli import main
from textcls.errors import DataError
from textcls.eval.metrics import compute_metrics, task_metrics
from textcls.eval.plots import plot_label_confusion


@pytest.fixture(scope="module")
def reuters_run(tmp_path_factory):
    """fasttext-bag trained by `textcls train` on a slice of reuters (multi-label), with --confusion-png."""
    run = tmp_path_factory.mktemp("runs") / "reuters"
    main(["train", "-m", "fasttext-bag", "-d", "reuters", "--max-per-split", "600", "--set", "bigram_buckets=4096",
          "--epochs", "5", "--run-dir", str(run), "--confusion-png", "--no-progress"])
    return run


def test_train_confusion_png_on_multi_label_data_draws_one_panel_per_label(reuters_run):
    image = Image.open(reuters_run / "confusion_matrix.png")
    # 10 labels: two rows of five 2 x 2 panels, wider than tall.
    assert image.format == "PNG" and image.width > image.height
    test = json.loads((reuters_run / "metrics.json").read_text())["test"]
    counts = np.asarray(test["label_confusion"])
    assert counts.shape == (10, 2, 2)
    assert (counts.sum(axis=(1, 2)) == test["n"]).all()
    for name, (tn_fp, fn_tp) in zip(test["label_names"], counts):
        assert fn_tp.sum() == test["per_class"][name]["support"]  # true yes = the label's support
        if test["per_class"][name]["recall"] is not None:
            assert fn_tp[1] / fn_tp.sum() == pytest.approx(test["per_class"][name]["recall"])


def test_evaluate_writes_the_per_label_view_and_says_what_it_is(reuters_run, tmp_path, capsys):
    main(["evaluate", str(reuters_run), "-d", "reuters", "--max-per-split", "300",
          "--confusion-png", str(tmp_path / "c.png"), "--output", str(tmp_path / "m.json")])
    captured = capsys.readouterr()
    assert Image.open(tmp_path / "c.png").format == "PNG"
    message = [line for line in captured.err.splitlines() if "c.png" in line]
    assert len(message) == 1 and "one 2 x 2 confusion panel per label" in message[0]
    assert "no single C x C confusion matrix" in message[0]
    assert len(json.loads((tmp_path / "m.json").read_text())["label_confusion"]) == 10


def test_label_confusion_plot_refuses_a_wrong_shape(tmp_path):
    with pytest.raises(DataError, match=r"shape \(2, 2\) but label_names has 3 names"):
        plot_label_confusion([[1, 2], [3, 4]], ["a", "b", "c"], tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()


def test_default_fasttext_recipe_weighs_labels_on_multi_label_data_and_learns_more():
    reuters = load_dataset("reuters", max_per_split=1500)
    # 12 epochs (the single-label rule's on reuters) keep it fast; the rule's own epochs for
    # multi-label data are checked in test_fasttext_bag.py.
    default = Classifier("fasttext-bag", epochs=12, params={"bigram_buckets": 1 << 16}).fit_dataset(reuters)
    unweighted = Classifier("fasttext-bag", epochs=12, params={"bigram_buckets": 1 << 16,
                                                               "class_weights": None}).fit_dataset(reuters)
    assert default.preset_.recipe.class_weights == "balanced" and unweighted.preset_.recipe.class_weights is None
    f1 = {name: clf.evaluate(reuters["test"])["macro_f1"] for name, clf in
          (("default", default), ("unweighted", unweighted))}
    # Unweighted, the rare topics are never predicted (the macro-F1 of 0.06 on reuters).
    assert f1["default"] > f1["unweighted"] + 0.1, f1
    # Single-label data keeps the unweighted loss.
    trec = load_dataset("trec", max_per_split=300)
    assert Classifier("fasttext-bag", epochs=1).fit_dataset(trec).preset_.recipe.class_weights is None


@pytest.fixture(scope="module")
def mtl_run(tmp_path_factory):
    run = tmp_path_factory.mktemp("runs") / "fcsr-mtl"
    main(["train", "-m", "fcsr-mtl", "-d", "fdu_mtl", "--max-per-split", "96", "--epochs", "1", "--batch-size", "16",
          "--run-dir", str(run), "--no-progress"])
    return run


def test_evaluate_gives_each_task_its_metrics_and_their_mean(mtl_run, tmp_path, capsys):
    main(["evaluate", str(mtl_run), "-d", "fdu_mtl", "--max-per-split", "160", "--output", str(tmp_path / "m.json")])
    out = capsys.readouterr().out
    metrics = json.loads((tmp_path / "m.json").read_text())
    per_task = metrics["per_task"]
    # Each task scored on its own records, as the Python API scores them.
    clf = Classifier.from_pretrained(mtl_run)
    test = load_dataset("fdu_mtl", max_per_split=160)["test"]
    tasks = list(test["task"])
    assert sum(m["n"] for m in per_task["tasks"].values()) == metrics["n"] == len(tasks)
    assert list(per_task["tasks"]) == [t for t in clf.task_names_ if t in tasks]
    for task in ("books", "kitchen_housewares"):
        rows = [i for i, t in enumerate(tasks) if t == task]
        alone = clf.evaluate(test.select(rows))
        assert per_task["tasks"][task]["accuracy"] == alone["accuracy"]
    accuracies = [m["accuracy"] for m in per_task["tasks"].values()]
    assert per_task["mean"]["accuracy"] == pytest.approx(np.mean(accuracies))
    assert per_task["n_tasks"] == len(set(tasks))
    table = out[out.index("task "):]
    assert "books" in table and "mean of tasks" in table
    assert f"{per_task['mean']['accuracy']:.4f}" in table.splitlines()[-1]


def test_task_metrics_averages_over_tasks():
    a = compute_metrics([0, 1, 1], [[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]], ["n", "p"])
    b = compute_metrics([0, 0], [[0.9, 0.1], [0.7, 0.3]], ["n", "p"])
    summary = task_metrics({"a": a, "b": b})
    assert summary["mean"]["accuracy"] == pytest.approx((2 / 3 + 1.0) / 2)
    assert summary["n_tasks"] == 2
    with pytest.raises(DataError, match="no task has records"):
        task_metrics({})


def test_predict_with_a_task_on_a_multi_task_run(mtl_run, tmp_path, capsys):
    """`textcls predict --task` on an fcsr-mtl run (one head per task) answers as the Python
    API does for that task, and a JSON Lines `task` field chooses the head per line."""
    texts = ["a dull, badly written book", "this blender broke after a week"]
    clf = Classifier.from_pretrained(mtl_run)
    capsys.readouterr()
    main(["predict", str(mtl_run), "--task", "books", *texts])
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    expected = clf.predict_proba(texts, tasks=["books", "books"])
    assert [r["label"] for r in rows] == list(clf.predict(texts, tasks=["books", "books"]))
    for row, probs in zip(rows, expected):
        assert [row["probabilities"][name] for name in clf.classes_] == pytest.approx(list(probs), abs=1e-5)
    lines = tmp_path / "in.jsonl"
    lines.write_text("".join(json.dumps({"text": t, "task": task}) + "\n"
                             for t, task in zip(texts, ["books", "kitchen_housewares"])), encoding="utf-8")
    main(["predict", str(mtl_run), "--input", str(lines)])
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert [r["label"] for r in rows] == list(clf.predict(texts, tasks=["books", "kitchen_housewares"]))
