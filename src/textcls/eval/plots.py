"""Evaluation plots, drawn off-screen with matplotlib's Agg canvas.

matplotlib is imported inside the function so that ``import textcls.eval`` stays cheap, and
``pyplot`` is never used: a bare ``Figure`` on an Agg canvas needs no display, touches no
global backend state and is safe to call from a worker thread.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import numpy as np

from ..artifacts import write_figure
from ..errors import DataError

__all__ = ["plot_confusion_matrix", "plot_label_confusion", "plot_confusion"]

# Above this many classes the per-cell numbers are unreadable and only the colours are drawn.
MAX_ANNOTATED_CLASSES = 15
MAX_TICK_LABEL_CHARS = 24


def plot_confusion_matrix(
    confusion,
    label_names: Sequence[str],
    path: str | os.PathLike,
    normalize: bool = True,
) -> Path:
    """Draw a confusion matrix (rows = true class, columns = predicted) to a PNG file.

    Args:
        confusion: ``[C, C]`` counts, as in ``compute_metrics(...)["confusion_matrix"]``.
        label_names: the ``C`` class names, in row/column order.
        path: the output file (parent folders are created); written atomically, so a failed
            call leaves no partial file behind.
        normalize: show each row as fractions of that true class (rows with no example stay 0).

    Returns:
        The path written.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    counts = np.asarray(confusion, dtype=float)
    names = [str(name) for name in label_names]
    c = len(names)
    if counts.ndim != 2 or counts.shape != (c, c):
        raise DataError(
            f"confusion matrix has shape {tuple(counts.shape)} but label_names has {c} names; "
            f"pass a [{c}, {c}] matrix in label_names order"
        )
    if c == 0:
        raise DataError("label_names is empty; pass the class names of the confusion matrix")
    if not np.isfinite(counts).all() or (counts < 0).any():
        raise DataError("confusion matrix has negative, NaN or inf cells; pass counts from compute_metrics")

    if normalize:
        row_totals = counts.sum(axis=1, keepdims=True)
        shown = np.divide(counts, row_totals, out=np.zeros_like(counts), where=row_totals > 0)
    else:
        shown = counts

    # Size and type scale with the class count so that 2 and 50 classes both stay legible.
    side = float(np.clip(1.5 + 0.3 * c, 4.5, 18.0))
    tick_size = float(np.clip(12.0 - 0.08 * c, 8.0, 11.0))
    title_size = 12.0 if c <= 10 else 15.0
    fig = Figure(figsize=(side + 1.5, side), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    image = ax.imshow(shown, cmap="Blues", vmin=0.0, vmax=1.0 if normalize else max(shown.max(), 1.0))
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="fraction of true class" if normalize else "count")

    ticks = np.arange(c)
    short = [_shorten(name) for name in names]
    ax.set_xticks(ticks, short, fontsize=tick_size, rotation=45 if c <= 8 else 90, ha="right" if c <= 8 else "center")
    ax.set_yticks(ticks, short, fontsize=tick_size)
    ax.set_xlabel("predicted", fontsize=title_size)
    ax.set_ylabel("true", fontsize=title_size)
    ax.set_title("confusion matrix" + (" (row-normalised)" if normalize else ""), fontsize=title_size + 1)

    if c <= MAX_ANNOTATED_CLASSES:
        threshold = 0.5 * (1.0 if normalize else max(shown.max(), 1.0))
        cell_size = float(np.clip(14.0 - 0.5 * c, 7.0, 12.0))
        for i in range(c):
            for j in range(c):
                text = f"{shown[i, j]:.2f}" if normalize else f"{int(counts[i, j])}"
                ax.text(
                    j, i, text, ha="center", va="center", fontsize=cell_size,
                    color="white" if shown[i, j] > threshold else "black",
                )

    path = Path(path)
    try:
        return write_figure(path, fig)
    except OSError as err:
        raise DataError(f"cannot write plot {path}: {err.strerror or err}; choose a writable output path") from None


def plot_label_confusion(label_confusion, label_names: Sequence[str], path: str | os.PathLike) -> Path:
    """Multi-label data's confusion view: one 2 x 2 panel per label (rows true no/yes,
    columns predicted no/yes, each row as fractions of its records, counts written in).

    A multi-label record can be right on some labels and wrong on others, so there is no
    C x C matrix of "true class, predicted class"; this is scikit-learn's
    ``multilabel_confusion_matrix`` (``compute_metrics(...)["label_confusion"]``) drawn."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    counts = np.asarray(label_confusion, dtype=float)
    names = [str(name) for name in label_names]
    if counts.ndim != 3 or counts.shape != (len(names), 2, 2) or not names:
        raise DataError(f"label confusion has shape {tuple(counts.shape)} but label_names has {len(names)} names; "
                        f"pass [{len(names)}, 2, 2] counts in label_names order")
    if not np.isfinite(counts).all() or (counts < 0).any():
        raise DataError("label confusion has negative, NaN or inf cells; pass counts from compute_metrics")
    columns = min(len(names), 5)
    rows = -(-len(names) // columns)
    fig = Figure(figsize=(2.4 * columns + 0.6, 2.4 * rows + 0.6), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    totals = counts.sum(axis=2, keepdims=True)
    shown = np.divide(counts, totals, out=np.zeros_like(counts), where=totals > 0)
    for k, name in enumerate(names):
        ax = fig.add_subplot(rows, columns, k + 1)
        ax.imshow(shown[k], cmap="Blues", vmin=0.0, vmax=1.0)
        for i in range(2):
            for j in range(2):
                ax.text(j, i, f"{int(counts[k, i, j])}", ha="center", va="center", fontsize=10,
                        color="white" if shown[k, i, j] > 0.5 else "black")
        ax.set_xticks([0, 1], ["no", "yes"], fontsize=8)
        ax.set_yticks([0, 1], ["no", "yes"], fontsize=8)
        ax.set_title(_shorten(name), fontsize=10)
        if k % columns == 0:
            ax.set_ylabel("true", fontsize=9)
        if k >= len(names) - columns:
            ax.set_xlabel("predicted", fontsize=9)
    fig.suptitle("per-label confusion (multi-label; rows as fractions of true no / yes)", fontsize=11)
    path = Path(path)
    try:
        return write_figure(path, fig)
    except OSError as err:
        raise DataError(f"cannot write plot {path}: {err.strerror or err}; choose a writable output path") from None


def plot_confusion(metrics: dict, path: str | os.PathLike) -> Path:
    """The confusion view of ``compute_metrics``' output: the C x C matrix for single-label
    data, one 2 x 2 panel per label for multi-label data."""
    if metrics.get("multi_label"):
        return plot_label_confusion(metrics["label_confusion"], metrics["label_names"], path)
    return plot_confusion_matrix(metrics["confusion_matrix"], metrics["label_names"], path)


def _shorten(name: str) -> str:
    return name if len(name) <= MAX_TICK_LABEL_CHARS else name[: MAX_TICK_LABEL_CHARS - 1] + "…"
