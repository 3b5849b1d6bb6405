"""Parameter checks, written once and used by every layer (data, text, models, recipes, server).

Each check raises a one-line ``ConfigError`` that names the parameter, the value given and
what is allowed, e.g. ``parameter 'dropout' = 1.5 is outside its allowed range [0, 1)``.
A value of the wrong type (a string, a list, a bool where a number is wanted) is refused the
same way, never with a raw ``TypeError`` from a comparison. ``find_lone_surrogate`` only finds:
the CLI and the tokenizer pipeline each word its error, counting texts as their users do (the
server finds one in the encode that also measures a text's size).
"""

from __future__ import annotations

import errno
import numbers
import os
from pathlib import Path

from .errors import ConfigError

__all__ = ["MAX_INT", "MAX_SEED", "range_check", "check_int", "check_positive_int", "check_probability", "check_choice",
           "check_flag", "check_folder_path", "check_no_symlink_loop", "check_path", "find_lone_surrogate",
           "RepeatedJSONKey", "json_object_with_unique_keys"]

# The largest count a setting may take (vocabulary sizes, length caps, buckets): int32's.
MAX_INT = (1 << 31) - 1
# The largest seed: NumPy's and scikit-learn's seeds are uint32.
MAX_SEED = (1 << 32) - 1


def is_number(value) -> bool:
    """A real number (Python or NumPy); ``True``/``False`` are not numbers here."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def is_integer(value) -> bool:
    """A whole number of an integer type (Python or NumPy); not a bool, not ``2.0``."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _shown(value) -> str:
    return str(value) if is_number(value) else repr(value)


def _interval(lo, hi, low_open: bool = False, high_open: bool = False) -> str:
    if hi is None:
        return f"{'(' if low_open else '['}{lo}, inf)"
    return f"{'(' if low_open else '['}{lo}, {hi}{')' if high_open else ']'}"


def range_check(name: str, value, lo, hi=None, low_open: bool = False, *, high_open: bool = False) -> None:
    """``value`` must be a number in ``[lo, hi]`` (``(lo`` with ``low_open``, ``hi)`` with
    ``high_open``; ``hi=None``: no upper bound). NaN is outside every range."""
    interval = _interval(lo, hi, low_open, high_open)
    if not is_number(value):
        raise ConfigError(f"parameter '{name}' = {value!r} must be a number in {interval}")
    above_lo = lo < value if low_open else lo <= value
    below_hi = hi is None or (value < hi if high_open else value <= hi)
    if not (above_lo and below_hi):
        raise ConfigError(f"parameter '{name}' = {_shown(value)} is outside its allowed range {interval}")


def check_int(name: str, value, lo: int = 1, hi: int | None = MAX_INT, *, optional: bool = False) -> int | None:
    """``value`` as an ``int`` when it is an integer in ``[lo, hi]`` (``hi=None``: no upper
    bound); with ``optional``, ``None`` is allowed and returned."""
    if value is None and optional:
        return None
    or_none = " or none" if optional else ""
    interval = _interval(lo, hi)
    if not is_integer(value):
        raise ConfigError(f"parameter '{name}' = {_shown(value)} is outside its allowed range: "
                          f"an integer in {interval}{or_none}")
    if value < lo or (hi is not None and value > hi):
        raise ConfigError(f"parameter '{name}' = {_shown(value)} is outside its allowed range {interval}{or_none}")
    return int(value)


def check_positive_int(name: str, value, hi: int | None = 1 << 31) -> int:
    """An integer hyper-parameter ``>= 1`` (layer widths, window sizes, counts)."""
    return check_int(name, value, 1, hi)


def check_probability(name: str, value) -> None:
    """A dropout-like rate: ``0 <= value < 1``."""
    range_check(name, value, 0, 1, high_open=True)


def check_choice(name: str, value, choices) -> None:
    """``value`` must be one of ``choices`` (mode switches such as ``pooling``)."""
    if value not in choices:
        raise ConfigError(f"parameter '{name}' = {value!r} is not one of {', '.join(map(str, choices))}")


def check_flag(name: str, value) -> None:
    """``value`` must be a real bool (1 or "yes" from a config file is refused, not guessed)."""
    if not isinstance(value, bool):
        raise ConfigError(f"parameter '{name}' = {value!r} must be true or false")


def check_path(name: str, value) -> Path:
    """``value`` as a ``Path``: a non-empty ``str`` or ``os.PathLike`` (an empty one would mean the
    working directory, and None or a number is a mistake, not a path)."""
    if isinstance(value, bool) or not isinstance(value, (str, os.PathLike)) or not os.fspath(value):
        raise ConfigError(f"parameter '{name}' = {value!r} must be a file or folder path (a non-empty str or Path)")
    return Path(value)


def check_folder_path(name: str, folder: str | os.PathLike) -> None:
    """``folder`` must be a folder, or a path where one can be made: neither it nor a folder
    above it may be a file, and it may not lead through a symlink loop. Checked before long work,
    which would otherwise fail when it writes."""
    folder = Path(folder)
    check_no_symlink_loop(folder, name)  # Path.exists reads a loop as missing: a folder still to be made
    for part in (folder, *folder.parents):
        if part.exists():
            if not part.is_dir():
                where = "" if part == folder else f" ({part} is a file)"
                raise ConfigError(f"{name} {folder}: not a folder{where}; name a folder, or a path where one can be made")
            return


def check_no_symlink_loop(path: str | os.PathLike, option: str | None = None) -> None:
    """A ConfigError when ``path`` leads through a symlink loop, which nothing can be written
    through (open gives ELOOP; mkdir, "File exists"); ``option`` names it in the message."""
    try:
        os.stat(path)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise ConfigError(f"{option + ' ' if option else ''}{path}: leads through a symlink loop (links that "
                              "point at each other); remove or fix the link, or name another folder") from None


def find_lone_surrogate(texts, rows=None) -> tuple[int, int, str] | None:
    """``(text index, character index, the character)``, 0-based, of the first lone surrogate
    (``"\\ud800"``) in ``texts`` (only those at ``rows`` when given); None when there is none.
    It is the one thing a ``str`` can hold that is not Unicode text: UTF-8 cannot encode it, a
    tokenizer's Rust string cannot hold it, and Python keeps a byte of argv that was not UTF-8 as
    one. Callers word the message, each counting as its user does (the CLI from 1)."""
    for i in range(len(texts)) if rows is None else rows:
        try:
            texts[i].encode("utf-8")
        except UnicodeEncodeError as exc:
            return i, exc.start, texts[i][exc.start]
    return None


class RepeatedJSONKey(ValueError):
    """A JSON object that names a key twice (``args[0]``): ``json.loads`` alone would keep the
    last value without a word."""


def json_object_with_unique_keys(pairs: list[tuple[str, object]]) -> dict:
    """``object_pairs_hook`` for ``json.loads`` that raises ``RepeatedJSONKey`` on a repeated key
    (the data readers' JSON Lines and the server's request bodies)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        raise RepeatedJSONKey(next(key for key, _ in pairs if key in seen or seen.add(key)))
    return obj
