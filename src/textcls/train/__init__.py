"""Training: optimisers and schedules, the training loop, checkpoints and DDP helpers.

The recipe itself (``Recipe``, the named lr schedules) is plain data in ``textcls.recipe``.
"""

from .engine import FitResult, fit, predict_proba
from .optim import build_optimizer, build_scheduler

__all__ = ["FitResult", "build_optimizer", "build_scheduler", "fit", "predict_proba"]
