"""Classification metrics (scikit-learn's definitions), returned as a JSON-safe dict.

``compute_metrics`` is what the training engine (dev monitoring), ``textcls evaluate`` and
``metrics.json`` use. This module validates the inputs, decides what is undefined, and converts
the result to plain Python values.

The single-label counts (confusion matrix, accuracy, per-class precision, recall and F1, macro
and weighted F1) and every ROC AUC (the Mann-Whitney statistic on average ranks,
``_binary_auc``) are computed here from a ``bincount`` confusion matrix and ranks, the numbers
``sklearn.metrics`` gives (tests hold them equal on random data, ties included); the multi-label
averages are ``sklearn.metrics``' own. Why: the engine scores dev after every epoch, and each
``sklearn.metrics`` call spends milliseconds checking its inputs: on trec's 545 dev questions
the 21 dev scorings of fasttext-bag's fit took 1.11 s (0.65 s in ``roc_auc_score``), and take
0.05 s here (``benchmarks/ensemble_fit_profile.py``: ``ensemble_fit_profile_before_metrics.md``
at b046ddc, ``ensemble_fit_profile.md`` after).

Undefined values (the AUC of a class with no positive example, the precision of a class that
is never predicted, ...) are ``None``, never NaN, and each one is explained in ``notes`` so
that a reader of ``metrics.json`` knows why a cell is empty.

Stable top-level keys (the engine monitors ``accuracy``, ``macro_f1`` and ``micro_f1``):

- single-label: ``accuracy``, ``macro_f1``, ``weighted_f1``, ``roc_auc_macro``,
  ``roc_auc_micro``, ``per_class``, ``confusion_matrix``, ``n``;
- multi-label: ``accuracy`` (subset accuracy), ``micro_f1``, ``macro_f1``, ``weighted_f1``,
  ``samples_f1``, ``hamming_loss``, ``roc_auc_macro``, ``roc_auc_micro``, ``per_class``,
  ``label_confusion`` (one ``[[TN, FP], [FN, TP]]`` per label: a multi-label record has no
  single predicted class, so there is no C x C matrix), ``threshold``, ``n``;
- both: ``multi_label``, ``label_names``, ``notes``.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Sequence

import numpy as np

from ..errors import DataError
from ..validate import range_check

__all__ = ["compute_metrics", "format_report", "task_metrics", "format_task_table"]


def compute_metrics(
    y_true,
    probs,
    label_names: Sequence[str],
    *,
    multi_label: bool = False,
    threshold: float = 0.5,
) -> dict[str, Any]:
    """Score predictions against gold labels.

    Args:
        y_true: single-label: class indices ``[N]`` (ints in ``[0, C)``); multi-label:
            a multi-hot ``[N, C]`` matrix of 0/1 (or bools).
        probs: scores ``[N, C]`` (softmax or sigmoid outputs; numpy, list or CPU/GPU tensor).
            Single-label predictions are the row argmax; multi-label predictions are
            ``probs >= threshold`` per label.
        label_names: the class names, in column order of ``probs``.
        multi_label: whether ``y_true`` is multi-hot.
        threshold: decision threshold for multi-label predictions, in ``[0, 1]``.

    Returns:
        A dict of plain floats, ints, lists and dicts (``json.dumps(allow_nan=False)`` works).
        For two classes ``roc_auc_macro`` is the ordinary AUC of ``label_names[1]`` (the
        positive class); otherwise AUCs are one-vs-rest, macro over the classes whose AUC is
        defined (see ``notes``).

    Raises:
        DataError: shapes disagree, a label is outside ``[0, C)``, a score is NaN/inf.
        ConfigError: ``threshold`` is outside ``[0, 1]``.
    """
    label_names = [str(name) for name in label_names]
    y_true = _as_array(y_true, "y_true")
    probs = _as_array(probs, "probs")
    _check_probs(probs, label_names, multi_label)
    if multi_label:
        range_check("threshold", threshold, 0, 1)
        y_true = _check_multi_hot(y_true, probs)
        return _multi_label_metrics(y_true, probs, label_names, float(threshold))
    y_true = _check_indices(y_true, probs)
    return _single_label_metrics(y_true, probs, label_names)


# ----------------------------------------------------------------------------- validation


def _as_array(values, name: str) -> np.ndarray:
    # Tensors (possibly on GPU, in bf16 or requiring grad) cannot go through np.asarray directly.
    if hasattr(values, "detach"):
        values = values.detach().cpu()
        if values.is_floating_point():
            values = values.float()
        values = values.numpy()
    try:
        return np.asarray(values)
    except (TypeError, ValueError) as err:
        raise DataError(f"{name} cannot be read as a numeric array ({err}); pass a numpy array or tensor") from None


def _check_probs(probs: np.ndarray, label_names: list[str], multi_label: bool) -> None:
    if probs.ndim != 2:
        raise DataError(
            f"probs has shape {tuple(probs.shape)}; pass one row of {len(label_names)} class scores per record, "
            "shape [N, C] (for two classes too)"
        )
    n, c = probs.shape
    if n == 0:
        raise DataError("probs has no rows: there are no records to evaluate; evaluate a non-empty split")
    if c != len(label_names):
        raise DataError(
            f"probs has {c} columns but label_names has {len(label_names)} names; "
            "pass the label_names the model was trained with, in column order"
        )
    if len(set(label_names)) != len(label_names):
        dup = next(name for name in label_names if label_names.count(name) > 1)
        raise DataError(f"label_names lists '{dup}' more than once; pass each class name once")
    if not multi_label and c < 2:
        raise DataError("single-label evaluation needs at least 2 classes in label_names; add the missing classes")
    if not np.issubdtype(probs.dtype, np.number) or np.issubdtype(probs.dtype, np.complexfloating):
        raise DataError(f"probs has dtype {probs.dtype}; pass real-valued scores")
    bad_rows = np.flatnonzero(~np.isfinite(probs).all(axis=1))
    if bad_rows.size:
        raise DataError(
            f"probs row {bad_rows[0]} contains NaN or inf ({bad_rows.size} such rows); "
            "check the model output (a diverged run?) before evaluating"
        )


def _check_indices(y_true: np.ndarray, probs: np.ndarray) -> np.ndarray:
    n, c = probs.shape
    if y_true.ndim != 1:
        raise DataError(
            f"y_true has shape {tuple(y_true.shape)} but single-label evaluation needs class indices of shape [N]; "
            "pass label indices, or multi_label=True for multi-hot labels"
        )
    if len(y_true) != n:
        raise DataError(f"y_true has {len(y_true)} records but probs has {n} rows; pass one score row per record")
    if y_true.dtype == bool or not np.issubdtype(y_true.dtype, np.number):
        raise DataError(f"y_true has dtype {y_true.dtype}; pass integer class indices in [0, {c})")
    if not np.issubdtype(y_true.dtype, np.integer):
        non_integer = np.flatnonzero(~np.isfinite(y_true) | (y_true != np.round(y_true)))
        if non_integer.size:
            raise DataError(
                f"y_true record {non_integer[0]} has label {y_true[non_integer[0]]}, which is not a class index; "
                f"pass integer class indices in [0, {c})"
            )
    outside = np.flatnonzero((y_true < 0) | (y_true >= c))
    if outside.size:
        i = outside[0]
        raise DataError(
            f"y_true record {i} has label index {_plain(y_true[i])}, outside [0, {c}) for the {c} label_names "
            f"({outside.size} such records); encode labels with the same label_names as the model"
        )
    return y_true.astype(np.int64)


def _check_multi_hot(y_true: np.ndarray, probs: np.ndarray) -> np.ndarray:
    n, c = probs.shape
    if y_true.ndim != 2:
        raise DataError(
            f"y_true has shape {tuple(y_true.shape)} but multi-label evaluation needs a multi-hot matrix [N, {c}]; "
            "pass 0/1 rows, or multi_label=False for class indices"
        )
    if y_true.shape[0] != n:
        raise DataError(f"y_true has {y_true.shape[0]} records but probs has {n} rows; pass one score row per record")
    if y_true.shape[1] != c:
        raise DataError(
            f"y_true has {y_true.shape[1]} label columns but probs has {c}; "
            "build the multi-hot rows with the same label_names as the model"
        )
    if not (y_true.dtype == bool or np.issubdtype(y_true.dtype, np.number)):
        raise DataError(f"y_true has dtype {y_true.dtype}; pass a multi-hot matrix of 0/1")
    bad_rows = np.flatnonzero(~np.isin(y_true, (0, 1)).all(axis=1))
    if bad_rows.size:
        i = bad_rows[0]
        raise DataError(
            f"y_true record {i} is not multi-hot (values {sorted({_plain(v) for v in y_true[i]})}); "
            "pass 1 for each label the record has and 0 elsewhere"
        )
    return y_true.astype(np.int64)


# ----------------------------------------------------------------------------- metrics


def _single_label_metrics(y_true: np.ndarray, probs: np.ndarray, label_names: list[str]) -> dict[str, Any]:
    n, c = probs.shape
    notes: list[str] = []
    y_pred = probs.argmax(axis=1)
    # Rows: true class; columns: predicted class.
    confusion = np.bincount(y_true * c + y_pred, minlength=c * c).reshape(c, c)
    true_positives, support, predicted = np.diag(confusion), confusion.sum(axis=1), confusion.sum(axis=0)

    present = (support > 0) | (predicted > 0)
    if not present.all():
        unseen = [label_names[k] for k in range(c) if not present[k]]
        notes.append(
            f"classes {_names(unseen)} appear neither in y_true nor among the predictions; macro_f1 and "
            f"weighted_f1 average over the {int(present.sum())} classes that do (as scikit-learn does)"
        )
    f1 = _f1(true_positives, support, predicted)
    # scikit-learn's default (labels=None): the classes seen in y_true or y_pred.
    macro_f1 = float(f1[present].mean())
    weighted_f1 = float((f1 * support).sum() / support.sum())

    per_class = _per_class(true_positives, support, predicted, label_names, notes)
    one_hot = np.eye(c, dtype=np.int64)[y_true]
    auc_per_class = _auc_per_class(one_hot, probs, label_names, notes)
    for name, auc in zip(label_names, auc_per_class):
        per_class[name]["roc_auc"] = auc

    if c == 2:
        roc_auc_macro = auc_per_class[1]
    else:
        roc_auc_macro = _macro_auc(auc_per_class, label_names, notes)
    roc_auc_micro = _micro_auc(one_hot, probs, notes)

    return {
        "multi_label": False,
        "n": int(n),
        "label_names": label_names,
        "accuracy": float(true_positives.sum() / n),
        "macro_f1": macro_f1,
        "weighted_f1": weighted_f1,
        "roc_auc_macro": roc_auc_macro,
        "roc_auc_micro": roc_auc_micro,
        "per_class": per_class,
        "confusion_matrix": confusion.tolist(),
        "notes": notes,
    }


def _multi_label_metrics(
    y_true: np.ndarray, probs: np.ndarray, label_names: list[str], threshold: float
) -> dict[str, Any]:
    from sklearn.metrics import accuracy_score, f1_score, hamming_loss, multilabel_confusion_matrix

    n, c = probs.shape
    notes: list[str] = []
    y_pred = (probs >= threshold).astype(np.int64)

    never_seen = [label_names[k] for k in range(c) if not y_true[:, k].any() and not y_pred[:, k].any()]
    if never_seen:
        notes.append(
            f"labels {_names(never_seen)} are neither in y_true nor predicted; their F1 counts as 0 "
            "in macro_f1 (as scikit-learn does)"
        )
    empty_rows = int(((y_true.sum(axis=1) == 0) & (y_pred.sum(axis=1) == 0)).sum())
    if empty_rows:
        notes.append(
            f"records with no gold label and no predicted label: {empty_rows}; each counts as F1 0 in "
            "samples_f1 (as scikit-learn does)"
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f1 = {
            average: float(f1_score(y_true, y_pred, average=average, zero_division=0))
            for average in ("micro", "macro", "weighted", "samples")
        }

    per_class = _per_class((y_true & y_pred).sum(axis=0), y_true.sum(axis=0), y_pred.sum(axis=0), label_names, notes)
    auc_per_class = _auc_per_class(y_true, probs, label_names, notes)
    for name, auc in zip(label_names, auc_per_class):
        per_class[name]["roc_auc"] = auc

    return {
        "multi_label": True,
        "n": int(n),
        "label_names": label_names,
        "threshold": threshold,
        "accuracy": float(accuracy_score(y_true, y_pred)),
        "micro_f1": f1["micro"],
        "macro_f1": f1["macro"],
        "weighted_f1": f1["weighted"],
        "samples_f1": f1["samples"],
        "hamming_loss": float(hamming_loss(y_true, y_pred)),
        "roc_auc_macro": _macro_auc(auc_per_class, label_names, notes),
        "roc_auc_micro": _micro_auc(y_true, probs, notes),
        "per_class": per_class,
        "label_confusion": multilabel_confusion_matrix(y_true, y_pred, labels=list(range(c))).tolist(),
        "notes": notes,
    }


def _f1(true_positives: np.ndarray, support: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    """Per-class F1 = 2tp / (2tp + fp + fn) = 2tp / (support + predicted); 0 where both are 0
    (scikit-learn's zero_division=0)."""
    denominator = support + predicted
    return np.where(denominator > 0, 2 * true_positives / np.maximum(denominator, 1), 0.0)


def _per_class(
    true_positives: np.ndarray, support: np.ndarray, predicted: np.ndarray, label_names: list[str], notes: list[str]
) -> dict[str, dict[str, Any]]:
    """precision/recall/f1/support per class from its counts; undefined cells -> None."""
    f1 = _f1(true_positives, support, predicted)
    never_predicted = [label_names[k] for k in range(len(label_names)) if predicted[k] == 0]
    no_support = [label_names[k] for k in range(len(label_names)) if support[k] == 0]
    if never_predicted:
        notes.append(f"classes {_names(never_predicted)} are never predicted; their precision is undefined (None)")
    if no_support:
        notes.append(f"classes {_names(no_support)} have no gold example; their recall is undefined (None)")
    table = {}
    for k, name in enumerate(label_names):
        table[name] = {
            "precision": None if predicted[k] == 0 else float(true_positives[k] / predicted[k]),
            "recall": None if support[k] == 0 else float(true_positives[k] / support[k]),
            # F1 is only undefined when the class is absent from both sides.
            "f1": None if predicted[k] == 0 and support[k] == 0 else float(f1[k]),
            "support": int(support[k]),
        }
    return table


def _auc_per_class(
    indicator: np.ndarray, probs: np.ndarray, label_names: list[str], notes: list[str]
) -> list[float | None]:
    """One-vs-rest AUC per column; None where the column has no positive or no negative example."""
    n = indicator.shape[0]
    aucs: list[float | None] = []
    no_positive, no_negative = [], []
    for k, name in enumerate(label_names):
        positives = int(indicator[:, k].sum())
        if positives == 0:
            no_positive.append(name)
            aucs.append(None)
        elif positives == n:
            no_negative.append(name)
            aucs.append(None)
        else:
            aucs.append(_binary_auc(indicator[:, k], probs[:, k]))
    if no_positive:
        notes.append(f"classes {_names(no_positive)} have no positive example in y_true; their ROC AUC is undefined (None)")
    if no_negative:
        notes.append(
            f"classes {_names(no_negative)} are positive for every one of the {n} records; "
            "their ROC AUC is undefined (None)"
        )
    return aucs


def _macro_auc(aucs: list[float | None], label_names: list[str], notes: list[str]) -> float | None:
    defined = [a for a in aucs if a is not None]
    if not defined:
        notes.append("roc_auc_macro is undefined (None): no class has both positive and negative examples")
        return None
    if len(defined) < len(aucs):
        notes.append(
            f"roc_auc_macro averages the {len(defined)} of {len(aucs)} classes whose AUC is defined; "
            "it is not comparable with a macro AUC over all classes"
        )
    return float(np.mean(defined))


def _micro_auc(indicator: np.ndarray, probs: np.ndarray, notes: list[str]) -> float | None:
    total = int(indicator.sum())
    if total == 0 or total == indicator.size:
        notes.append("roc_auc_micro is undefined (None): y_true is all negative or all positive")
        return None
    return _binary_auc(indicator.ravel(), probs.ravel())


def _binary_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """The ROC AUC of ``scores`` for 0/1 ``labels`` (both classes present): the probability that
    a positive outranks a negative, ties counting one half (Mann-Whitney U over average ranks),
    which is the area under the ROC curve's trapezoids that ``roc_auc_score`` computes."""
    from scipy.stats import rankdata

    positive = np.asarray(labels).astype(bool)
    ranks = rankdata(np.asarray(scores, dtype=np.float64))
    n_positive = int(positive.sum())
    n_negative = positive.size - n_positive
    return float((ranks[positive].sum() - n_positive * (n_positive + 1) / 2) / (n_positive * n_negative))


def _names(names: list[str], limit: int = 10) -> str:
    shown = ", ".join(repr(name) for name in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _plain(value):
    return value.item() if hasattr(value, "item") else value


# ----------------------------------------------------------------------------- report


_SUMMARY_KEYS = (
    "accuracy",
    "micro_f1",
    "macro_f1",
    "weighted_f1",
    "samples_f1",
    "hamming_loss",
    "roc_auc_macro",
    "roc_auc_micro",
    "loss",
)


def format_report(metrics: dict[str, Any]) -> str:
    """A short plain-text table: summary metrics, then one row per class, then the notes.

    Accepts the dict from ``compute_metrics`` (or the same dict read back from
    ``metrics.json``); undefined values print as ``n/a``.
    """
    lines = []
    summary = [(key, metrics[key]) for key in _SUMMARY_KEYS if key in metrics]
    for key, value in summary:
        label = "subset accuracy" if key == "accuracy" and metrics.get("multi_label") else key
        lines.append(f"{label:<15}  {_cell(value)}")
    if "n" in metrics:
        extra = f", threshold {metrics['threshold']:g}" if metrics.get("threshold") is not None else ""
        lines.append(f"({metrics['n']} records{extra})")

    per_class = metrics.get("per_class") or {}
    if per_class:
        name_width = min(max(len("class"), *(len(name) for name in per_class)), 40)
        columns = ("precision", "recall", "f1", "roc_auc")
        header = f"{'class':<{name_width}}  " + "  ".join(f"{col:>9}" for col in columns) + f"  {'support':>8}"
        lines += ["", header, "-" * len(header)]
        for name, row in per_class.items():
            shown = name if len(name) <= name_width else name[: name_width - 1] + "…"
            cells = "  ".join(f"{_cell(row.get(col)):>9}" for col in columns)
            lines.append(f"{shown:<{name_width}}  {cells}  {row.get('support', 0):>8}")

    notes = metrics.get("notes") or []
    if notes:
        lines += ["", "notes:"] + [f"- {note}" for note in notes]
    return "\n".join(lines)


def _cell(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.4f}"


# ----------------------------------------------------------------------------- per task

_TASK_COLUMNS = ("accuracy", "macro_f1", "micro_f1")


def task_metrics(per_task: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``per_task`` (task name -> ``compute_metrics`` of its records) with its macro average
    over the tasks (FCSR's "average accuracy" over the 16 FDU-MTL domains), as
    ``{"tasks": per_task, "mean": {"accuracy": ..., "macro_f1": ..., ...}, "n_tasks": T}``."""
    if not per_task:
        raise DataError("no task has records; evaluate data with a 'task' column")
    mean = {}
    for key in _TASK_COLUMNS:
        values = [m[key] for m in per_task.values() if m.get(key) is not None]
        if len(values) == len(per_task):
            mean[key] = float(np.mean(values))
    return {"tasks": per_task, "mean": mean, "n_tasks": len(per_task)}


def format_task_table(summary: dict[str, Any]) -> str:
    """One row per task (records, accuracy, macro-F1, ...) and the mean over the tasks."""
    tasks = summary["tasks"]
    columns = [key for key in _TASK_COLUMNS if key in summary["mean"]]
    width = min(max(len("task"), len("mean of tasks"), *(len(name) for name in tasks)), 40)
    header = f"{'task':<{width}}  {'records':>8}  " + "  ".join(f"{col:>9}" for col in columns)
    lines = [header, "-" * len(header)]
    for name, metrics in tasks.items():
        cells = "  ".join(f"{_cell(metrics.get(col)):>9}" for col in columns)
        lines.append(f"{name[:width]:<{width}}  {metrics.get('n', 0):>8}  {cells}")
    cells = "  ".join(f"{_cell(summary['mean'].get(col)):>9}" for col in columns)
    lines.append(f"{'mean of tasks':<{width}}  {sum(m.get('n', 0) for m in tasks.values()):>8}  {cells}")
    return "\n".join(lines)
