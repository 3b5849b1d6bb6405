"""Training: recipes, optimisers and schedules, the training loop, and DDP helpers."""

from .engine import FitResult, fit, predict_proba
from .optim import build_optimizer, build_scheduler
from .recipe import Recipe, register_lr_lambda

__all__ = ["FitResult", "Recipe", "build_optimizer", "build_scheduler", "fit", "predict_proba", "register_lr_lambda"]
