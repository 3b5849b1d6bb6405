"""Per-paper text normalisers, as plain JSON-able settings.

Four options compose in a fixed order (each is off unless asked for):

1. ``newsgroups=True``: strip a 20 Newsgroups post's header, signature footer and quoted
   lines, exactly as scikit-learn's ``fetch_20newsgroups(remove=("headers", "footers",
   "quotes"))`` does (its own functions are reused). This step runs in Python.
2. ``strip_html=True``: every HTML tag (``<br />``, ``<br/>``, ``<i>``, ``</p>`` ...) becomes
   a space. A ``<`` not followed by a letter or ``/letter`` (``a < b``) is kept.
3. ``lowercase=True``.
4. ``charset="hcan"``: HCAN's rule (Gao et al. 2018, section 4.2: "lowercase all characters
   and remove non-alphanumerics other than periods, exclamation marks, and question marks"):
   every character that is not a Unicode letter, a Unicode digit/number or one of ``. ! ?``
   becomes a space.
   ``charset="kim"``: Kim's ``clean_str`` (Kim 2014's released code, ``process_data.py``), its
   substitutions in its order: every character that is not an ASCII letter or digit or one of
   ``( ) , ! ? '`` and the backtick becomes a space; a space goes before each ``'s 've n't 're
   'd 'll`` (wherever it stands, as there); each of ``, ! ( ) ?`` is set apart by spaces. Its
   lowercasing is ``lowercase`` (Kim's code lowercases every dataset but TREC), and a pipeline
   with this charset splits words at whitespace alone, as Kim's ``split()``: "'the" and "i'm"
   stay one token each.

Steps 2-4 are a Hugging Face ``tokenizers`` normaliser, so the ``tokenizer.json`` of a
pipeline describes them itself, and ``normalize()`` runs that very normaliser: the text a
user sees from ``normalize()`` is the text the vocabulary was built from.
"""

from __future__ import annotations

from typing import Iterable

from tokenizers import Regex, normalizers

from ..errors import ConfigError, DataError, close_names

CHARSETS = ("hcan", "kim")
SETTING_NAMES = ("lowercase", "strip_html", "charset", "newsgroups")

# A tag starts with a letter (or "/" and a letter) right after "<", so that "a < b" and
# "<3" survive; HTML comments and doctypes are rare in the corpora we read.
HTML_TAG = r"</?[A-Za-z][^<>]*>"
# \p{L}: any letter, \p{N}: any number; HCAN kept "alphanumerics", and non-English corpora
# should keep their letters too.
HCAN_REMOVED = r"[^\p{L}\p{N}.!?]"
# ASCII only, as Kim's regex: an accented letter becomes a space there too.
KIM_REMOVED = r"[^A-Za-z0-9(),!?'`]"
KIM_CLITICS = ("'s", "'ve", "n't", "'re", "'d", "'ll")
# Each charset's (pattern, replacement) steps, in order; a str pattern is literal.
CHARSET_STEPS = {
    "hcan": [(Regex(HCAN_REMOVED), " ")],
    "kim": [(Regex(KIM_REMOVED), " ")] + [(clitic, f" {clitic}") for clitic in KIM_CLITICS]
    + [(mark, f" {mark} ") for mark in ",!()?"],
}


def check_settings(lowercase=False, strip_html=False, charset=None, newsgroups=False) -> None:
    """Raise ConfigError naming the first normaliser setting with a value it cannot take."""
    for name, value in (("lowercase", lowercase), ("strip_html", strip_html), ("newsgroups", newsgroups)):
        if not isinstance(value, bool):
            raise ConfigError(f"parameter '{name}' = {value!r} must be true or false")
    if charset is not None and charset not in CHARSETS:
        raise ConfigError(f"parameter 'charset' = {charset!r} is not one of: none, {', '.join(CHARSETS)}")


def build_normalizer(lowercase=False, strip_html=False, charset=None) -> normalizers.Normalizer | None:
    """The ``tokenizers`` normaliser for steps 2-4, or None when none of them is on."""
    check_settings(lowercase=lowercase, strip_html=strip_html, charset=charset)
    steps = []
    if strip_html:
        steps.append(normalizers.Replace(Regex(HTML_TAG), " "))
    if lowercase:
        steps.append(normalizers.Lowercase())
    if charset is not None:
        steps.extend(normalizers.Replace(pattern, content) for pattern, content in CHARSET_STEPS[charset])
    if not steps:
        return None
    return normalizers.Sequence(steps)


def strip_newsgroups(text: str) -> str:
    """scikit-learn's header, footer and quote removal for one 20 Newsgroups post."""
    # Private module, but importing it is what guarantees "exactly like scikit-learn".
    from sklearn.datasets._twenty_newsgroups import (
        strip_newsgroup_footer,
        strip_newsgroup_header,
        strip_newsgroup_quoting,
    )

    # Same order as fetch_20newsgroups(remove=("headers", "footers", "quotes")).
    return strip_newsgroup_quoting(strip_newsgroup_footer(strip_newsgroup_header(text)))


def _split_settings(settings: dict) -> tuple[bool, dict]:
    unknown = [k for k in settings if k not in SETTING_NAMES]
    if unknown:
        raise ConfigError(
            f"unknown normaliser setting '{unknown[0]}'; {close_names(unknown[0], SETTING_NAMES)}"
        )
    newsgroups = settings.get("newsgroups", False)
    check_settings(**settings)
    return newsgroups, {k: v for k, v in settings.items() if k != "newsgroups"}


def normalize(text: str, **settings) -> str:
    """Normalise one text with the given settings (``lowercase``, ``strip_html``,
    ``charset``, ``newsgroups``); with no settings the text comes back unchanged."""
    return normalize_batch([text], **settings)[0]


def normalize_batch(texts: Iterable[str], **settings) -> list[str]:
    """Normalise many texts with the same settings (see ``normalize``)."""
    newsgroups, rust_settings = _split_settings(settings)
    texts = list(texts)
    check_texts(texts)
    if newsgroups:
        texts = [strip_newsgroups(t) for t in texts]
    normalizer = build_normalizer(**rust_settings)
    if normalizer is None:
        return texts
    return [normalizer.normalize_str(t) for t in texts]


def check_texts(texts: list) -> None:
    """Raise DataError naming the first element of ``texts`` that is not a string."""
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise DataError(
                f"text #{i} is a {type(text).__name__}, not a string; pass a list of strings "
                "(drop or fill missing texts first)"
            )
