"""The one error hierarchy of textcls.

Every error a user can cause (bad file, bad name, bad parameter, bad checkpoint) is a
``TextclsError``. Its message is a single line that says what is wrong, where (file, line
or record) and what to do. The CLI prints it to stderr and exits with status 2, without a
traceback. Anything else that escapes is a bug in textcls.
"""

from __future__ import annotations


class TextclsError(Exception):
    """Base class: a problem the user can fix. ``str(err)`` is one line."""

    exit_code = 2

    def __init__(self, message: str):
        # Users read these on one line; embedded newlines would break that promise.
        super().__init__(" ".join(str(message).split()))


class DataError(TextclsError):
    """A dataset, file or record cannot be read or is not valid."""


class ConfigError(TextclsError):
    """An unknown name, or a parameter outside its allowed range."""


class CheckpointError(TextclsError):
    """A run directory is missing a file, is corrupt, or does not match its config."""


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
