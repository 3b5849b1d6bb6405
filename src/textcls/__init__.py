"""textcls: compact neural text classifiers, reproduced from their papers.

Public entry points (imported lazily so that ``textcls --help`` stays fast):
``Classifier``, ``load_dataset``, ``list_datasets``, ``create_model``, ``list_models``.
"""

__version__ = "0.1.0"

_LAZY = {
    "Classifier": ("textcls.api", "Classifier"),
    "load_dataset": ("textcls.data", "load_dataset"),
    "list_datasets": ("textcls.data", "list_datasets"),
    "create_model": ("textcls.models.registry", "create_model"),
    "list_models": ("textcls.models.registry", "list_models"),
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name):
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'textcls' has no attribute {name!r}")
