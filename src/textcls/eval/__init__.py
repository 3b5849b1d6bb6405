"""Evaluation: metrics (scikit-learn based, JSON-safe), a text report and plots."""

from .. import lazy_attributes

_LAZY = {
    "compute_metrics": "metrics",
    "format_report": "metrics",
    "plot_confusion_matrix": "plots",
}

__all__ = sorted(_LAZY)
__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)
