"""textcls: compact neural text classifiers, reproduced from their papers.

Public entry points (imported lazily so that ``textcls --help`` stays fast):
``Classifier``, ``load_dataset``, ``list_datasets``, ``create_model``, ``list_models``.
"""

__version__ = "0.1.0"


def lazy_attributes(package: str, names: dict[str, str]):
    """``(__getattr__, __dir__)`` for a package whose public ``names`` (name -> its module,
    relative to ``package``) are imported on first use (PEP 562), not when the package is: so
    that ``textcls --help`` imports no library, and importing one module of a package
    (``data.batching``, to predict) does not import all the others (``datasets``, scikit-learn)."""
    import importlib

    def __getattr__(name: str):
        if name in names:
            value = getattr(importlib.import_module(f"{package}.{names[name]}"), name)
            setattr(importlib.import_module(package), name, value)
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(vars(importlib.import_module(package))) | set(names))

    return __getattr__, __dir__


_LAZY = {
    "Classifier": "api",
    "load_dataset": "data",
    "list_datasets": "data",
    "create_model": "models.registry",
    "list_models": "models.registry",
}

__all__ = ["__version__", *_LAZY]
__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)
