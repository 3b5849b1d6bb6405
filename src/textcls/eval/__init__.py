"""Evaluation: metrics (scikit-learn based, JSON-safe), a text report and plots."""

from .metrics import compute_metrics, format_report
from .plots import plot_confusion_matrix

__all__ = ["compute_metrics", "format_report", "plot_confusion_matrix"]
