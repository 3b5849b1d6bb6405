"""Training: optimisers and schedules, the training loop, checkpoints and DDP helpers.

The recipe itself (``Recipe``, the named lr schedules) is plain data in ``textcls.recipe``.
"""

from .. import lazy_attributes

_LAZY = {
    "FitResult": "engine",
    "fit": "engine",
    "predict_proba": "engine",
    "training_step": "engine",
    "build_optimizer": "optim",
    "build_scheduler": "optim",
}

__all__ = sorted(_LAZY)
__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)
