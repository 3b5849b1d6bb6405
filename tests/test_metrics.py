import json

import numpy as np
import pytest
import torch
from sklearn.metrics import f1_score, roc_auc_score

from textcls.errors import ConfigError, DataError
from textcls.eval import compute_metrics, format_report, plot_confusion_matrix

from tolerance import approx32

# Three classes, four records; predictions (row argmax) are [0, 1, 2, 0].
Y3 = np.array([0, 1, 2, 2])
P3 = np.array([[0.8, 0.1, 0.1], [0.2, 0.7, 0.1], [0.1, 0.2, 0.7], [0.5, 0.4, 0.1]])
NAMES3 = ["a", "b", "c"]

# Multi-label: at threshold 0.5 the predictions are [[1,0,0],[0,1,1],[1,0,0],[0,0,1]]
# (row 1, column 2 is exactly 0.5 and counts as predicted).
Y_ML = np.array([[1, 0, 1], [0, 1, 0], [1, 1, 0], [0, 0, 1]])
P_ML = np.array([[0.9, 0.2, 0.4], [0.1, 0.8, 0.5], [0.7, 0.3, 0.2], [0.2, 0.1, 0.6]])

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_single_label_values_by_hand():
    m = compute_metrics(Y3, P3, NAMES3)
    assert m["n"] == 4
    assert m["accuracy"] == pytest.approx(0.75)
    # per-class F1: a = 2/3 (tp 1, fp 1), b = 1, c = 2/3 (tp 1, fn 1)
    assert m["per_class"]["a"] == {"precision": 0.5, "recall": 1.0, "f1": pytest.approx(2 / 3), "support": 1, "roc_auc": 1.0}
    assert m["per_class"]["c"]["precision"] == 1.0 and m["per_class"]["c"]["recall"] == 0.5
    assert m["macro_f1"] == pytest.approx((2 / 3 + 1 + 2 / 3) / 3)
    assert m["weighted_f1"] == pytest.approx((1 * 2 / 3 + 1 * 1 + 2 * 2 / 3) / 4)
    assert m["macro_f1"] == pytest.approx(f1_score(Y3, P3.argmax(1), average="macro"))
    # class c: positives score .7 and .1, negatives .1 and .1 -> pairs 1, 1, .5, .5 -> AUC .75
    assert m["per_class"]["c"]["roc_auc"] == pytest.approx(0.75)
    assert m["roc_auc_macro"] == pytest.approx((1 + 1 + 0.75) / 3)
    assert m["roc_auc_macro"] == pytest.approx(roc_auc_score(Y3, P3, multi_class="ovr", average="macro"))
    assert m["roc_auc_micro"] == pytest.approx(roc_auc_score(np.eye(3)[Y3], P3, average="micro"))
    assert m["notes"] == []


def test_confusion_matrix_rows_are_true_columns_are_predicted():
    y = np.array([0, 0, 0, 1, 2])
    probs = np.array([[0.1, 0.9, 0.0], [0.2, 0.8, 0.0], [0.9, 0.1, 0.0], [0.3, 0.6, 0.1], [0.0, 0.2, 0.8]])
    m = compute_metrics(y, probs, ["x", "y", "z"])
    # Two records of true class x were predicted as y: row 0, column 1.
    assert m["confusion_matrix"] == [[1, 2, 0], [0, 1, 0], [0, 0, 1]]


def test_binary_auc_is_positive_class_auc():
    y = np.array([0, 1, 1, 0])
    probs = np.array([[0.8, 0.2], [0.3, 0.7], [0.6, 0.4], [0.4, 0.6]])
    m = compute_metrics(y, probs, ["neg", "pos"])
    # positives .7, .4 vs negatives .2, .6: three of four pairs ordered correctly
    assert m["roc_auc_macro"] == pytest.approx(0.75)
    assert m["roc_auc_macro"] == pytest.approx(roc_auc_score(y, probs[:, 1]))
    assert m["roc_auc_micro"] == pytest.approx(roc_auc_score(np.eye(2)[y].ravel(), probs.ravel()))
    assert m["accuracy"] == 0.5


def test_binary_auc_uses_column_one_even_when_scores_do_not_sum_to_one():
    y = np.array([0, 1, 1, 0])
    scores = np.array([[0.9, 0.2], [0.9, 0.7], [0.1, 0.4], [0.2, 0.6]])
    m = compute_metrics(y, scores, ["neg", "pos"])
    assert m["roc_auc_macro"] == pytest.approx(roc_auc_score(y, scores[:, 1]))
    assert m["roc_auc_macro"] != pytest.approx(m["per_class"]["neg"]["roc_auc"])


def test_class_absent_from_y_true_gives_none_and_notes():
    y = np.array([0, 1, 0, 1])
    probs = np.array([[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.3, 0.3, 0.4], [0.1, 0.8, 0.1]])
    m = compute_metrics(y, probs, ["a", "b", "c"])
    c = m["per_class"]["c"]
    assert c["roc_auc"] is None and c["recall"] is None and c["support"] == 0
    assert c["precision"] == 0.0 and c["f1"] == 0.0  # predicted once, wrongly
    assert any("'c'" in note and "ROC AUC is undefined" in note for note in m["notes"])
    assert any("averages the 2 of 3 classes" in note for note in m["notes"])
    assert m["roc_auc_macro"] == pytest.approx(roc_auc_score(np.eye(3)[y][:, :2], probs[:, :2], average="macro"))
    json.dumps(m, allow_nan=False)


def test_class_never_predicted_has_undefined_precision():
    y = np.array([0, 1, 2, 2])
    probs = np.array([[0.8, 0.1, 0.1], [0.2, 0.7, 0.1], [0.6, 0.3, 0.1], [0.5, 0.4, 0.1]])
    m = compute_metrics(y, probs, NAMES3)
    # every record scores 0.1 for c, so all positive/negative pairs tie: AUC 0.5
    assert m["per_class"]["c"] == {"precision": None, "recall": 0.0, "f1": 0.0, "support": 2, "roc_auc": 0.5}
    assert any("'c'" in note and "never predicted" in note for note in m["notes"])


def test_binary_with_one_class_present_has_no_auc():
    m = compute_metrics([1, 1, 1], [[0.2, 0.8], [0.6, 0.4], [0.1, 0.9]], ["neg", "pos"])
    assert m["roc_auc_macro"] is None
    assert m["roc_auc_micro"] == pytest.approx(roc_auc_score(np.eye(2)[[1, 1, 1]], [[0.2, 0.8], [0.6, 0.4], [0.1, 0.9]], average="micro"))
    assert any("'pos'" in note and "positive for every one of the 3 records" in note for note in m["notes"])
    assert m["accuracy"] == pytest.approx(2 / 3)


def test_multi_label_values_by_hand():
    m = compute_metrics(Y_ML, P_ML, ["x", "y", "z"], multi_label=True)
    # label x: tp 2 -> F1 1; y: tp 1, fn 1 -> 2/3; z: tp 1, fp 1, fn 1 -> 1/2; pooled tp 4, fp 1, fn 2
    assert m["micro_f1"] == pytest.approx(8 / 11)
    assert m["macro_f1"] == pytest.approx((1 + 2 / 3 + 1 / 2) / 3)
    assert m["samples_f1"] == pytest.approx((2 / 3 + 2 / 3 + 2 / 3 + 1) / 4)
    assert m["accuracy"] == pytest.approx(0.25)  # only the last row matches exactly
    assert m["hamming_loss"] == pytest.approx(3 / 12)
    # z: positives score .4 and .6, negatives .5 and .2 -> three of four pairs ordered: AUC .75
    assert m["per_class"]["z"] == {"precision": 0.5, "recall": 0.5, "f1": 0.5, "support": 2, "roc_auc": 0.75}
    assert m["roc_auc_macro"] == pytest.approx(roc_auc_score(Y_ML, P_ML, average="macro"))
    assert m["roc_auc_micro"] == pytest.approx(roc_auc_score(Y_ML, P_ML, average="micro"))
    assert m["threshold"] == 0.5 and m["multi_label"] is True


def test_multi_label_threshold_moves_predictions():
    m = compute_metrics(Y_ML, P_ML, ["x", "y", "z"], multi_label=True, threshold=0.35)
    # row 0 column 2 (0.4) is now predicted, so row 0 matches exactly too
    assert m["accuracy"] == pytest.approx(0.5)
    with pytest.raises(ConfigError, match="threshold"):
        compute_metrics(Y_ML, P_ML, ["x", "y", "z"], multi_label=True, threshold=1.5)


def test_multi_label_label_without_positives():
    y = np.array([[1, 0], [0, 0], [1, 0]])
    probs = np.array([[0.9, 0.1], [0.2, 0.3], [0.6, 0.2]])
    m = compute_metrics(y, probs, ["p", "q"], multi_label=True)
    assert m["per_class"]["q"]["roc_auc"] is None and m["per_class"]["q"]["f1"] is None
    assert m["roc_auc_macro"] == pytest.approx(1.0)  # only 'p' is defined
    assert m["macro_f1"] == pytest.approx(0.5)  # scikit-learn counts the empty label as F1 0
    assert any("'q'" in note and "neither in y_true nor predicted" in note for note in m["notes"])


def _only_plain_types(value) -> bool:
    if isinstance(value, dict):
        return all(type(k) is str and _only_plain_types(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_only_plain_types(v) for v in value)
    return value is None or type(value) in (bool, int, float, str)


@pytest.mark.parametrize(
    "args",
    [
        (Y3, P3, NAMES3, False),
        ([0, 1, 0, 1], [[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.3, 0.3, 0.4], [0.1, 0.8, 0.1]], NAMES3, False),
        (Y_ML, P_ML, ["x", "y", "z"], True),
    ],
)
def test_result_is_json_safe_and_round_trips(args):
    y, probs, names, multi = args
    m = compute_metrics(y, probs, names, multi_label=multi)
    assert _only_plain_types(m)
    assert json.loads(json.dumps(m, allow_nan=False)) == m


def test_tensor_inputs_match_numpy():
    from_numpy = compute_metrics(Y3, P3, NAMES3)
    from_torch = compute_metrics(torch.tensor(Y3), torch.tensor(P3, dtype=torch.bfloat16, requires_grad=True), NAMES3)
    assert from_torch["accuracy"] == from_numpy["accuracy"]
    assert from_torch["confusion_matrix"] == from_numpy["confusion_matrix"]


@pytest.mark.parametrize(
    "y, probs, names, multi, match",
    [
        ([0, 1, 2], P3, NAMES3, False, r"y_true has 3 records but probs has 4 rows"),
        ([0, 1, 5, 1], P3, NAMES3, False, r"y_true record 2 has label index 5, outside \[0, 3\)"),
        ([0, -1, 2, 1], P3, NAMES3, False, r"y_true record 1 has label index -1"),
        ([0, 1, 1.5, 1], P3, NAMES3, False, r"y_true record 2 has label 1.5, which is not a class index"),
        (Y3, P3, ["a", "b"], False, r"probs has 3 columns but label_names has 2"),
        (Y3, P3[:, 0], NAMES3, False, r"probs has shape \(4,\)"),
        (Y_ML, P3, NAMES3, False, r"y_true has shape \(4, 3\).*multi_label=True"),
        (Y_ML[:, :2], P_ML, NAMES3, True, r"y_true has 2 label columns but probs has 3"),
        ([[1, 0, 1], [0, 2, 0], [1, 1, 0], [0, 0, 1]], P_ML, NAMES3, True, r"y_true record 1 is not multi-hot"),
        (Y3, [[0.8, 0.1, 0.1], [0.2, float("nan"), 0.1], [0.1, 0.2, 0.7], [0.5, 0.4, 0.1]], NAMES3, False,
         r"probs row 1 contains NaN"),
        ([], np.zeros((0, 3)), NAMES3, False, r"no records to evaluate"),
    ],
)
def test_validation_errors_name_the_record(y, probs, names, multi, match):
    with pytest.raises(DataError, match=match) as info:
        compute_metrics(y, probs, names, multi_label=multi)
    assert "\n" not in str(info.value)


def test_format_report_lists_metrics_and_classes():
    m = compute_metrics([0, 1, 2, 2], [[0.8, 0.1, 0.1], [0.2, 0.7, 0.1], [0.6, 0.3, 0.1], [0.5, 0.4, 0.1]], NAMES3)
    lines = format_report(m).splitlines()
    assert lines[0].split() == ["accuracy", "0.5000"]
    assert lines[1].split() == ["macro_f1", f"{m['macro_f1']:.4f}"]
    row_c = next(line for line in lines if line.startswith("c "))
    assert row_c.split() == ["c", "n/a", "0.0000", "0.0000", "0.5000", "2"]
    assert "notes:" in lines
    ml = format_report(compute_metrics(Y_ML, P_ML, ["x", "y", "z"], multi_label=True)).splitlines()
    assert ml[0].split() == ["subset", "accuracy", "0.2500"]
    assert ml[1].split() == ["micro_f1", f"{8 / 11:.4f}"]


def test_confusion_plot_writes_png(tmp_path):
    target = tmp_path / "plots" / "cm.png"
    written = plot_confusion_matrix([[5, 1], [2, 7]], ["neg", "pos"], target)
    assert written == target
    assert target.read_bytes()[:8] == PNG_MAGIC
    names = [f"class_{i}" for i in range(50)]
    big = plot_confusion_matrix(np.eye(50, dtype=int) * 3 + 1, names, tmp_path / "cm50.png", normalize=False)
    assert big.read_bytes()[:8] == PNG_MAGIC
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["cm.png", "cm50.png"]


def test_confusion_plot_failure_leaves_old_file_and_no_temp(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    target = tmp_path / "cm.png"
    target.write_bytes(b"previous")

    def broken_savefig(self, *args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(Figure, "savefig", broken_savefig)
    with pytest.raises(RuntimeError, match="disk full"):
        plot_confusion_matrix([[1, 0], [0, 1]], ["a", "b"], target)
    assert target.read_bytes() == b"previous"
    assert [p.name for p in tmp_path.iterdir()] == ["cm.png"]


def test_confusion_plot_rejects_mismatched_names(tmp_path):
    with pytest.raises(DataError, match=r"shape \(2, 2\) but label_names has 3"):
        plot_confusion_matrix([[1, 0], [0, 1]], ["a", "b", "c"], tmp_path / "cm.png")


@pytest.mark.parametrize("multi_label", [False, True])
def test_roc_aucs_equal_scikit_learn_s_with_ties_and_float32_scores(multi_label):
    rng = np.random.default_rng(0)
    # Scores rounded to one decimal: many ties, within and across classes.
    probs = np.round(rng.random((300, 5)), 1).astype(np.float32)
    if multi_label:
        y = (rng.random((300, 5)) < 0.3).astype(np.int64)
        indicator = y
    else:
        y = rng.integers(0, 5, 300)
        indicator = np.eye(5, dtype=np.int64)[y]
    m = compute_metrics(y, probs, list("abcde"), multi_label=multi_label)
    # Sums of ranks against scikit-learn's trapezoids: equal up to rounding.
    for k, name in enumerate("abcde"):
        assert m["per_class"][name]["roc_auc"] == approx32(roc_auc_score(indicator[:, k], probs[:, k]))
    assert m["roc_auc_macro"] == approx32(roc_auc_score(indicator, probs, average="macro"))
    assert m["roc_auc_micro"] == approx32(roc_auc_score(indicator, probs, average="micro"))


def test_single_label_counts_equal_scikit_learn_s_with_absent_and_unpredicted_classes():
    from sklearn.metrics import accuracy_score, confusion_matrix, precision_recall_fscore_support

    rng = np.random.default_rng(1)
    # Six classes: class 4 never in y_true, class 5 in neither y_true nor the predictions.
    y = rng.choice([0, 1, 2, 3], 200)
    probs = rng.random((200, 6))
    probs[:, 5] = 0.0
    probs[:3, 4] = 2.0  # predicted three times, never true
    m = compute_metrics(y, probs, list("abcdef"))
    pred = probs.argmax(1)
    assert m["accuracy"] == approx32(accuracy_score(y, pred))
    assert m["macro_f1"] == approx32(f1_score(y, pred, average="macro", zero_division=0))
    assert m["weighted_f1"] == approx32(f1_score(y, pred, average="weighted", zero_division=0))
    assert m["confusion_matrix"] == confusion_matrix(y, pred, labels=list(range(6))).tolist()
    precision, recall, f1, support = precision_recall_fscore_support(y, pred, labels=list(range(6)), zero_division=0)
    for k, name in enumerate("abcd"):
        row = m["per_class"][name]
        assert (row["precision"], row["recall"], row["f1"]) == approx32((precision[k], recall[k], f1[k]))
        assert row["support"] == support[k]
    assert m["per_class"]["e"]["recall"] is None and m["per_class"]["e"]["precision"] == 0.0
    assert m["per_class"]["f"] == {"precision": None, "recall": None, "f1": None, "support": 0, "roc_auc": None}
    assert any("'f'" in note and "neither in y_true nor among the predictions" in note for note in m["notes"])
