"""The one error hierarchy of textcls.

Every error a user can cause (bad file, bad name, bad parameter, bad checkpoint) is a
``TextclsError``. Its message is a single line that says what is wrong, where (file, line
or record) and what to do. The CLI prints it to stderr and exits with status 2, without a
traceback. Anything else that escapes is a bug in textcls.

Following scikit-learn, ``TextclsError`` is a ``ValueError`` (bad values passed in), and
using a ``Classifier`` before ``fit`` raises ``NotFittedError``, which is also
``sklearn.exceptions.NotFittedError`` (so also an ``AttributeError``). That class is built
on first use, so importing this module (and ``textcls --help``) does not import scikit-learn.
"""

from __future__ import annotations

import threading

_LOCK = threading.Lock()


class TextclsError(ValueError):
    """Base class: a problem the user can fix. ``str(err)`` is one line.

    ``index``: the position of the offending text or record in the caller's input, when
    the problem is about one of them (callers that read texts from lines can map it back)."""

    exit_code = 2

    def __init__(self, message: str, *, index: int | None = None):
        # Users read these on one line; embedded newlines would break that promise.
        super().__init__(" ".join(str(message).split()))
        self.index = index


class DataError(TextclsError):
    """A dataset, file or record cannot be read or is not valid."""


class UnknownTaskError(DataError):
    """A record's or a text's task is not one of the tasks a model with one head per task was
    trained on. Its own class so that a caller adds advice (the run's task column) by the kind of
    error, not by its wording."""


class ConfigError(TextclsError):
    """An unknown name, or a parameter outside its allowed range."""


class CheckpointError(TextclsError):
    """A run directory is missing a file, is corrupt, or does not match its config."""


class RunFolderError(TextclsError):
    """A run folder cannot be written (disk full, no permission) or another training holds it."""


class ModelError(TextclsError):
    """A trained model is broken: its weights or its outputs are not finite (NaN or Inf)."""


def _not_fitted_error() -> type:
    from sklearn.exceptions import NotFittedError as SklearnNotFittedError

    class NotFittedError(TextclsError, SklearnNotFittedError):
        """An estimator was used before ``fit``; also ``sklearn.exceptions.NotFittedError``."""

    NotFittedError.__module__ = __name__
    NotFittedError.__qualname__ = "NotFittedError"
    return NotFittedError


def __getattr__(name: str):
    # PEP 562: ``from textcls.errors import NotFittedError`` builds the class once, on demand.
    if name == "NotFittedError":
        with _LOCK:  # two threads must not build two different classes
            if name not in globals():
                globals()[name] = _not_fitted_error()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def close_names(name: str, candidates, n: int = 5) -> str:
    """``"did you mean: a, b?"`` for the candidates closest to ``name`` (or the first few)."""
    import difflib

    candidates = sorted(candidates)
    close = difflib.get_close_matches(name, candidates, n=n, cutoff=0.5)
    if not close:
        close = [c for c in candidates if name.lower() in c.lower()][:n]
    if close:
        return "did you mean: " + ", ".join(close) + "?"
    shown = ", ".join(candidates[:12]) + (", ..." if len(candidates) > 12 else "")
    return f"known names: {shown}"
