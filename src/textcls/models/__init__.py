"""Models: one file per paper or baseline, all reachable through one registry.

Importing this package imports every model module in it, so each registers its family and
presets; adding a paper is adding one file. Use ``create_model(name, ...)``,
``list_models()`` and ``get_preset(name)``.
"""

from __future__ import annotations

import importlib
import pkgutil

from .base import Output, TextModel
from .registry import (
    INPUT_KEYS,
    Preset,
    create_model,
    get_family,
    get_preset,
    list_models,
    register_model,
    register_preset,
)

# Modules that define no model: the shared ones, and fasttext_sgd, which fasttext-bag imports
# when it trains (it loads numba, which a process that only predicts must not pay for).
_NOT_MODELS = {"base", "registry", "layers", "fasttext_sgd"}

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    if _module not in _NOT_MODELS and not _module.startswith("_"):
        importlib.import_module(f"{__name__}.{_module}")

from .tfidf import TfidfModel  # noqa: E402  (after discovery: same module object)

__all__ = [
    "INPUT_KEYS",
    "TfidfModel",
    "Output",
    "Preset",
    "TextModel",
    "create_model",
    "get_family",
    "get_preset",
    "list_models",
    "register_model",
    "register_preset",
]
