"""What an attention model looked at: its attention weights aligned to the words of a text,
as JSON (``Classifier.explain``, ``POST /explain``), a self-contained HTML page and a PNG
(``textcls explain RUN "text"``).

    >>> clf.explain(["A tender, funny film. I loved it!"])[0]["word_attention"][0]["weights"]

Each text is run alone through the model in eval mode with its maps on (``Output.attentions``),
and every map that weights the words becomes one or more *rows* of one weight per word (or
per sentence), in reading order:

- a pooling attention gives one row per head or query: HAN's ``word`` and ``sentence``;
  HCAN's target attention ``word`` / ``sentence`` (one row per head); CSPAN's multi-query
  pooling ``queries`` (one row per query);
- a token-to-token self-attention ``[L, L]`` (CSPAN's ``semantic`` and ``positional``, the
  self-attention baselines' ``text``, DiSAN's ``token2token``) gives the attention each word
  *receives*: the mean over the words that attend (its column mean);
- DASA's axial maps ``text_axial`` and ``feature_axial`` ``[L, d]`` (softplus weights per word
  and feature, the paper's Figure 5) give one row per axis: the mean over the features.

Hierarchical models (HAN, hierarchical HCAN) weigh words within their sentence (each
sentence's word weights sum to 1) and sentences within the document. Maps that weigh no
words (FCSR's ``feature`` map is over features, DASA's fusion gate, HCAN's optional inner
self-attention maps) stay in the raw ``attentions`` but make no row. A model without
attention maps (fastText, the CNNs, the LSTMs, the Transformer, TF-IDF, HCAN's max-pool
variants) is a ``ModelError`` that names the presets that can explain.

The page shades every word by its weight over the row's largest (the largest is fully
coloured), each head or axis in its own row, sentences in their own rows; the predicted
label and the probabilities head it. No script and no external file: the CSS is inline.
"""

from __future__ import annotations

import copy
import functools
import html
import inspect
import io
import math
import os
import unicodedata
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from . import artifacts
from .errors import ConfigError, DataError, ModelError
from .inputs import as_list
from .validate import check_folder_path, check_path, is_integer, is_number

__all__ = ["explain_texts", "explainable_presets", "render_html", "render_png", "write_explanations"]

# Families whose models weigh their words (_has_word_maps: the settings that keep the weights).
_FAMILIES = ("han", "hcan", "cspan", "dasa", "self-attention", "disan-t2t")

# Flat maps besides the pooling weights ("word" [heads, L], "queries" [m, L]): how a map of one
# text becomes rows of one weight per word.
_RECEIVED = ("semantic", "positional", "text", "token2token")  # [L, L]: query rows, key columns
_PER_FEATURE = {"text_axial": "text axis", "feature_axial": "feature axis"}  # [L, d]

WORD_RGB = (253, 141, 60)  # words: orange, light enough for black text at full weight
SENTENCE_RGB = (107, 174, 214)  # sentences: blue


# --------------------------------------------------------------------------- which presets


def _has_word_maps(family: str, arch: dict) -> bool:
    if family == "hcan":
        return arch.get("pooling") == "target"  # max-pool variants have no pooling weights
    if family == "cspan":
        return bool(arch.get("semantic_attention") or arch.get("positional_attention")
                     or arch.get("pooling") != "mean")
    return family in _FAMILIES


def explainable_presets() -> list[str]:
    """The presets (``textcls list-models``) whose models give attention weights over words."""
    from .models.registry import get_family, get_preset, list_models

    names = []
    for name in list_models():
        preset = get_preset(name)
        if preset.family not in _FAMILIES:
            continue
        defaults = {key: p.default for key, p in inspect.signature(get_family(preset.family)).parameters.items()}
        if _has_word_maps(preset.family, {**defaults, **preset.arch}):
            names.append(name)
    return names


def no_maps_error(model: str, family: str | None = None, why: str = "has no attention maps to explain") -> ModelError:
    named = f"model '{model}' (family {family})" if family else f"model '{model}'"
    return ModelError(f"{named} {why}; presets that can explain: {', '.join(explainable_presets())}")


# --------------------------------------------------------------------------- the forward pass


def _forward(estimator, text: str, task_id: int | None):
    """(batch, Output) of one text through the model in eval mode with its maps on."""
    import torch

    from .data.batching import make_loader
    from .data.prepare import encode_texts

    shape = estimator.preset.inputs.get("shape", "flat")
    encoded, _ = encode_texts(estimator.pipeline_, [text], shape, tasks=None if task_id is None else [task_id])
    batch = next(iter(make_loader(encoded, 1, shuffle=False)))
    batch.pop("index", None)
    model = estimator.model_
    device = next(model.parameters()).device
    batch = {key: value.to(device) for key, value in batch.items()}
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad(), model.attention_maps(True):
            output = model(batch)
    finally:
        model.train(was_training)
    return {key: value.cpu() for key, value in batch.items()}, output


# --------------------------------------------------------------------------- words and sentences


def _surface_spans(pipeline, text: str) -> tuple[str, list[tuple[int, int]]]:
    """The text the tokenizer reads and the (start, end) characters of each of its tokens."""
    if pipeline.newsgroups:
        from .text.normalize import strip_newsgroups

        text = strip_newsgroups(text)
    return text, list(pipeline.tokenizer.encode(text, add_special_tokens=False).offsets)


def _word(vocab, token_id: int, source: str, spans, position: int, sentence: int | None) -> dict:
    start, end = spans[position] if position < len(spans) else (0, 0)  # an empty text reads as [UNK]
    word = {"text": source[start:end], "token": vocab[token_id], "start": start, "end": end}
    if sentence is not None:
        word["sentence"] = sentence
    return word


def _flat_words(pipeline, text: str, ids: list[int]) -> tuple[list[dict], int]:
    source, spans = _surface_spans(pipeline, text)
    vocab = pipeline.vocab
    return [_word(vocab, t, source, spans, i, None) for i, t in enumerate(ids)], max(0, len(spans) - len(ids))


def _sentence_words(pipeline, text: str, kept: list[list[int]]) -> tuple[list[dict], list[dict], int]:
    """Words (with their sentence) and sentences of a hierarchical text: the ``kept`` ids per
    sentence are the first words of the first sentences (caps), placed back in the text by the
    same split without caps."""
    source, spans = _surface_spans(pipeline, text)
    uncapped = copy.copy(pipeline)
    uncapped.max_sentences = uncapped.max_sentence_length = None
    full = uncapped.encode_sentences([text]).sentences[0]
    vocab, words, sentences, start = pipeline.vocab, [], [], 0
    for j, ids in enumerate(kept):
        if full[j][: len(ids)] != ids:  # the two splits disagree: a bug, never the user's text
            raise ModelError(f"explain: sentence {j} of the text does not match its encoding; report this bug")
        first = len(words)
        words.extend(_word(vocab, t, source, spans, start + k, j) for k, t in enumerate(ids))
        chars = (words[first]["start"], words[-1]["end"])
        sentences.append({"text": source[chars[0]:chars[1]], "start": chars[0], "end": chars[1],
                          "words": [first, len(words)]})
        start += len(full[j])
    return words, sentences, max(0, len(spans) - len(words))


# --------------------------------------------------------------------------- rows


def _heads(value: np.ndarray, name: str, numbered: str, what: str) -> list[dict]:
    """One row per leading index of ``value``: ``[L]`` or ``[1, L]`` is one row called ``name``,
    ``[h, L]`` is h rows called ``numbered.format(i)`` (from 1)."""
    rows = value[None] if value.ndim == 1 else value
    names = [name] if len(rows) == 1 else [numbered.format(i + 1) for i in range(len(rows))]
    return [{"name": n, "map": what, "weights": row.tolist()} for n, row in zip(names, rows)]


def _flat_rows(maps: dict[str, np.ndarray], n: int) -> list[dict]:
    rows = []
    for name, value in maps.items():
        if name == "queries":
            rows += _heads(value[..., :n], "query", "query {}", name)
        elif name == "word":
            rows += _heads(value[..., :n], "word attention", "word attention, head {}", name)
        elif name in _RECEIVED:
            received = value[:n, :n].mean(axis=0)  # the column mean: what each word receives
            rows.append({"name": f"{name} self-attention (received)", "map": name, "weights": received.tolist()})
        elif name in _PER_FEATURE:
            rows.append({"name": _PER_FEATURE[name], "map": name, "weights": value[:n].mean(axis=-1).tolist()})
    return rows


def _hierarchical_rows(maps: dict[str, np.ndarray], lengths: list[int]) -> tuple[list[dict], list[dict]]:
    word_rows, sentence_rows = [], []
    if "word" in maps:
        value = maps["word"]  # HAN [S, W]; HCAN [S, heads, W]
        per_head = value[:, None, :] if value.ndim == 2 else value
        heads = [np.concatenate([per_head[j, h, :n] for j, n in enumerate(lengths)]) for h in range(per_head.shape[1])]
        word_rows = _heads(np.stack(heads), "word attention", "word attention, head {}", "word")
    if "sentence" in maps:
        value = maps["sentence"][..., : len(lengths)]  # HAN [S]; HCAN [heads, S]
        sentence_rows = _heads(value, "sentence attention", "sentence attention, head {}", "sentence")
    return word_rows, sentence_rows


# --------------------------------------------------------------------------- explanations


def _one(estimator, text: str, task_id: int | None) -> dict:
    batch, output = _forward(estimator, text, task_id)
    maps = {name: value[0].detach().float().numpy() for name, value in output.attentions.items()}
    raw = {name: {"shape": list(value.shape), "values": value.tolist()} for name, value in maps.items()}
    ids = batch["input_ids"][0]
    pipeline = estimator.pipeline_
    if ids.dim() == 1:
        kept = [int(i) for i, m in zip(ids, batch["mask"][0]) if m]
        words, hidden = _flat_words(pipeline, text, kept)
        tokens = [w["token"] for w in words]
        result = {"tokens": tokens, "words": words, "sentences": None,
                  "word_attention": _flat_rows(maps, len(kept)), "sentence_attention": []}
    else:
        kept = [[int(i) for i, m in zip(row, mask) if m] for row, mask in zip(ids, batch["word_mask"][0])]
        kept = [ids_ for ids_ in kept if ids_]
        words, sentences, hidden = _sentence_words(pipeline, text, kept)
        word_rows, sentence_rows = _hierarchical_rows(maps, [len(s) for s in kept])
        tokens = [[pipeline.vocab[t] for t in s] for s in kept]
        result = {"tokens": tokens, "words": words, "sentences": sentences,
                  "word_attention": word_rows, "sentence_attention": sentence_rows}
    return {**result, "words_not_seen": hidden, "attentions": raw}


def explain_texts(estimator, texts: Sequence[str], task_ids: Sequence[int] | None, *, model: str,
                  classes: Sequence, probabilities: np.ndarray, predicted: Sequence,
                  tasks: Sequence[str] | None = None) -> list[dict]:
    """One explanation per text (see ``Classifier.explain``): the prediction (``predicted``,
    ``probabilities`` in ``classes`` order, from the Classifier) and the attention rows."""
    if getattr(estimator, "pipeline_", None) is None or estimator.model_ is None:
        raise no_maps_error(model, estimator.preset.family)
    out = []
    for i, text in enumerate(texts):
        explanation = _one(estimator, text, None if task_ids is None else task_ids[i])
        if not explanation["attentions"]:
            raise no_maps_error(model, estimator.preset.family)
        label = predicted[i]
        head: dict[str, Any] = {"text": text, "model": model}
        if tasks is not None:
            head["task"] = tasks[i]
        # The label is the class value predict returns (an int for int labels, as /predict and
        # `textcls predict` answer it); probabilities are keyed by name (JSON keys are strings).
        if isinstance(label, (list, tuple, np.ndarray)):
            head["labels"] = [_plain(c) for c in label]
        else:
            head["label"] = _plain(label)
        head["probabilities"] = {str(c): float(p) for c, p in zip(classes, probabilities[i])}
        out.append({**head, **explanation})
    return out


def _plain(value):
    """A class value as JSON holds it: numpy scalars become Python ints and strings."""
    return value.item() if isinstance(value, np.generic) else value


# --------------------------------------------------------------------------- checking an explanation

_REQUIRED = ("text", "model", "probabilities", "words", "word_attention", "sentence_attention")


def check_explanation(explanation, where: str = "explanation", index: int | None = None) -> dict:
    """``explanation`` unchanged when it holds what the page and the PNG draw (as an item of
    ``Classifier.explain``'s list does); else a one-line DataError naming ``where`` (and carrying
    ``index``) and the key that is missing or wrong."""
    if not isinstance(explanation, dict):
        problem = f"is {type(explanation).__name__}, not an explanation (a dict)"
    else:
        problem = _head_problem(explanation) or _units_problem(explanation) or _rows_problem(explanation)
    if problem:
        raise DataError(f"{where}: {problem}; pass an item of the list Classifier.explain returns", index=index)
    return explanation


def _head_problem(e: dict) -> str | None:
    """What is missing or wrong in the keys that head the page, or None."""
    missing = [key for key in _REQUIRED if key not in e]
    if missing:
        return f"missing key{'s' if len(missing) > 1 else ''} {', '.join(repr(key) for key in missing)}"
    strings = ["text", "model"] + ["task"] * (e.get("task") is not None)
    for key in strings:
        if not isinstance(e[key], str):
            return f"'{key}' is {type(e[key]).__name__}, not a string"
    if "label" in e and not _is_class_value(e["label"]):
        return f"'label' is {type(e['label']).__name__}, not a class (a string, a bool or a finite number)"
    if "labels" in e and not (isinstance(e["labels"], list) and all(map(_is_class_value, e["labels"]))):
        return "'labels' is not a list of classes (strings, bools or finite numbers)"
    probabilities = e["probabilities"]
    if not isinstance(probabilities, dict) or not all(
            isinstance(name, str) and is_number(p) and math.isfinite(p) for name, p in probabilities.items()):
        return "'probabilities' is not a dict of class names to finite numbers"
    if e.get("words_not_seen") is not None and not is_integer(e["words_not_seen"]):
        return f"'words_not_seen' is {type(e['words_not_seen']).__name__}, not an integer"
    return None


def _is_class_value(value) -> bool:
    """A class value as ``Classifier.fit`` takes one: a string, a bool or a finite number."""
    return isinstance(value, (str, bool)) or (is_number(value) and math.isfinite(value))


def _units_problem(e: dict) -> str | None:
    """What is wrong in ``words`` and ``sentences``, or None."""
    words, sentences = e["words"], e.get("sentences")
    if not isinstance(words, list):
        return f"'words' is {type(words).__name__}, not a list"
    for j, word in enumerate(words):
        if not isinstance(word, dict) or not isinstance(word.get("text"), str):
            return f"'words'[{j}] is not a dict with a string 'text'"
    if sentences is None:
        return "'sentence_attention' has rows but 'sentences' is None" if e["sentence_attention"] else None
    if not isinstance(sentences, list):
        return f"'sentences' is {type(sentences).__name__}, not a list or None"
    for j, sentence in enumerate(sentences):
        span = sentence.get("words") if isinstance(sentence, dict) else None
        if not (isinstance(sentence, dict) and isinstance(sentence.get("text"), str)
                and isinstance(span, (list, tuple)) and len(span) == 2 and all(map(is_integer, span))
                and 0 <= span[0] <= span[1] <= len(words)):
            return (f"'sentences'[{j}] is not a dict with a string 'text' and 'words' [first, last + 1) "
                    f"within the {len(words)} words")
    return None


def _rows_problem(e: dict) -> str | None:
    """What is wrong in the rows of weights (one weight per word or sentence), or None."""
    for key, units, what in (("word_attention", len(e["words"]), "words"),
                             ("sentence_attention", len(e.get("sentences") or ()), "sentences")):
        rows = e[key]
        if not isinstance(rows, list):
            return f"'{key}' is {type(rows).__name__}, not a list"
        for r, row in enumerate(rows):
            weights = row.get("weights") if isinstance(row, dict) else None
            if not (isinstance(row, dict) and isinstance(row.get("name"), str)
                    and isinstance(weights, (list, tuple, np.ndarray))):
                return f"'{key}'[{r}] is not a dict with a string 'name' and a list of 'weights'"
            if len(weights) != units:
                return f"'{key}'[{r}] has {len(weights)} weights for {units} {what} (one per {what[:-1]})"
            if not all(is_number(w) and math.isfinite(w) for w in weights):
                return f"'{key}'[{r}] has a weight that is not a finite number"
    return None


def _check_stem(stem) -> str:
    """``stem`` when it is a plain file-name stem: a non-empty str, no path separator, not '.' or
    '..' (the files stay in their folder)."""
    if (not isinstance(stem, str) or stem in ("", ".", "..") or "\x00" in stem
            or any(sep in stem for sep in {"/", "\\", os.sep, os.altsep} - {None})):
        raise ConfigError(f"parameter 'stem' = {stem!r} must be a plain file-name stem (not empty, no '/' or "
                          "'\\', not '.' or '..'), e.g. 'explain'")
    return stem


# --------------------------------------------------------------------------- the HTML page

_CSS = """
body { font: 16px/1.9 'DejaVu Sans', Arial, sans-serif; color: #111; background: #fff; margin: 24px; max-width: 1100px; }
h1 { font-size: 24px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 22px 0 6px; border-bottom: 1px solid #ccc; }
.meta { color: #555; font-size: 14px; margin: 0 0 10px; }
table.probs { border-collapse: collapse; font-size: 14px; }
table.probs td { padding: 1px 8px 1px 0; white-space: nowrap; }
.bar { display: inline-block; height: 12px; background: #666; vertical-align: middle; }
.row { margin: 0 0 12px; }
.row-name { font-size: 13px; color: #444; font-weight: bold; }
.w, .s { padding: 2px 1px; margin: 0 1px; border-radius: 2px; }
.sent { margin-right: 6px; padding-right: 4px; border-right: 2px solid #bbb; }
.note { color: #777; font-size: 13px; }
"""


def _shade(weights: Sequence[float]) -> list[float]:
    """Each weight over the row's largest, in [0, 1] (a row of zeros stays unshaded)."""
    values = np.clip(np.asarray(weights, dtype=float), 0, None)
    top = values.max() if values.size else 0.0
    return (values / top if top > 0 else values).round(3).tolist()


def _span(css_class: str, text: str, weight: float, alpha: float, rgb, index: int) -> str:
    r, g, b = rgb
    return (f'<span class="{css_class}" data-index="{index}" data-weight="{weight:.6g}" data-alpha="{alpha:.3f}" '
            f'title="{weight:.4f}" style="background-color: rgba({r}, {g}, {b}, {alpha:.3f})">'
            f"{html.escape(text) or '&#8203;'}</span>")


def _row_html(row: dict, units: list[str], css_class: str, rgb, groups: list[tuple[int, int]] | None) -> str:
    alphas = _shade(row["weights"])
    spans = [_span(css_class, text, w, a, rgb, i) for i, (text, w, a) in enumerate(zip(units, row["weights"], alphas))]
    if groups:  # hierarchical word rows: the words of a sentence together
        spans = [f'<span class="sent">{" ".join(spans[a:b])}</span>' for a, b in groups]
    low, top = (min(row["weights"]), max(row["weights"])) if row["weights"] else (0.0, 0.0)
    return (f'<div class="row" data-row="{html.escape(row["name"])}"><div class="row-name">{html.escape(row["name"])} '
            f'<span class="note">(weights {low:.4f} to {top:.4f}; full colour = {top:.4f})</span></div>'
            f'<div class="row-body">{" ".join(spans)}</div></div>')


def _predicted(explanation: dict) -> str:
    """The predicted label, or the multi-label prediction's labels joined, as the page shows it."""
    if "label" in explanation:
        return str(explanation["label"])
    return ", ".join(map(str, explanation.get("labels", [])))


def _header_html(explanation: dict) -> str:
    label = _predicted(explanation) or "(no label)"
    probs = sorted(explanation["probabilities"].items(), key=lambda kv: -kv[1])
    rows = "".join(f'<tr><td>{html.escape(name)}</td><td><span class="bar" style="width: {200 * p:.1f}px"></span></td>'
                   f"<td>{p:.4f}</td></tr>" for name, p in probs)
    task = f" · task {html.escape(explanation['task'])}" if explanation.get("task") else ""
    return (f'<h1>Predicted: <span class="label">{html.escape(label)}</span></h1>'
            f'<p class="meta">model {html.escape(explanation["model"])}{task}</p>'
            f'<table class="probs">{rows}</table>')


def render_html(explanation: dict) -> str:
    """A self-contained HTML page for one explanation (``Classifier.explain``'s item; anything
    else is a DataError naming the key that is missing or wrong)."""
    check_explanation(explanation)
    if not explanation["word_attention"] and not explanation["sentence_attention"]:
        # Decided (a review of POST /explain against textcls explain): Classifier.explain and POST /explain
        # answer such a model with its raw maps and no rows, as docs/serve.md and docs/explain.md promise
        # (200, not 422: the maps are data a client can use); only a page needs rows, so only drawing
        # one refuses, and says where the raw maps are.
        raise no_maps_error(explanation["model"], why="has attention maps, but none over the words (a map of "
                                                        "features), so there is no page to draw; its raw maps are "
                                                        "in Classifier.explain's and POST /explain's 'attentions'")
    words = [w["text"] for w in explanation["words"]]
    parts = [_header_html(explanation), f'<h2>Text</h2><p>{html.escape(explanation["text"])}</p>']
    sentences = explanation.get("sentences")
    if explanation["sentence_attention"]:
        parts.append("<h2>Sentence attention</h2>")
        texts = [s["text"] for s in sentences]
        parts += [_row_html(row, texts, "s", SENTENCE_RGB, None) for row in explanation["sentence_attention"]]
    groups = [tuple(s["words"]) for s in sentences] if sentences else None
    if explanation["word_attention"]:
        parts.append("<h2>Word attention</h2>")
        parts += [_row_html(row, words, "w", WORD_RGB, groups) for row in explanation["word_attention"]]
    if explanation.get("words_not_seen"):
        parts.append(f'<p class="note">{explanation["words_not_seen"]} more words were cut off by the model\'s '
                     "length caps and are not shown.</p>")
    title = html.escape(f"textcls explain: {explanation['model']}")
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
            f"<style>{_CSS}</style></head><body>\n" + "\n".join(parts) + "\n</body></html>\n")


# --------------------------------------------------------------------------- the PNG


@functools.lru_cache(maxsize=None)
def _glyphs(weight: str) -> frozenset[int]:
    """The characters the fonts matplotlib draws ``weight`` text with have glyphs for (its
    font fallback list where this matplotlib has one)."""
    from matplotlib import font_manager

    props = font_manager.FontProperties(weight=weight)
    find = getattr(font_manager.fontManager, "_find_fonts_by_props", None)
    paths = find(props) if find is not None else [font_manager.findfont(props)]
    return frozenset().union(*(font_manager.get_font(path).get_charmap() for path in paths))


def _png_text(text: str, weight: str = "normal") -> str:
    """``text`` as the PNG draws it: whitespace as a space (one line per unit), and a control
    character or one the fonts lack as its escape (``\\x01``, ``\\u4e2d``): seen, where matplotlib
    would draw an empty box and warn of the missing glyph on stderr."""
    glyphs = _glyphs(weight)
    out = []
    for c in text:
        if c.isspace():
            out.append(" ")
        elif unicodedata.category(c) == "Cc" or ord(c) not in glyphs:
            out.append(ascii(c)[1:-1])
        else:
            out.append(c)
    return "".join(out)


def _text(figure, s: str, *, weight: str = "normal", **kwargs):
    """``figure.text`` at (0, 0) in pixels for ``s`` as it is: no mathtext (a ``$`` in a review
    is a dollar), no LaTeX, no missing glyph."""
    return figure.text(0, 0, _png_text(s, weight), weight=weight, transform=None, va="top", parse_math=False,
                       usetex=False, **kwargs)


def _draw_units(figure, renderer, placed: list, units, alphas, rgb, y: float, width: float, *,
                size: float = 11) -> float:
    """Words (or sentences) left to right in shaded boxes, wrapped at ``width`` pixels, from the
    line ``y`` (pixels from the top) down; every text goes into ``placed`` as (text, x, y).
    Returns the y under the last line."""
    x, line = 12.0, size * 2.0
    for text, alpha in zip(units, alphas):
        box = dict(boxstyle="square,pad=0.15", facecolor=(*(c / 255 for c in rgb), alpha), edgecolor="none")
        item = _text(figure, text or "\u200b", fontsize=size, bbox=box)
        extent = item.get_window_extent(renderer)
        if x + extent.width > width - 12 and x > 12:
            x, y = 12.0, y + line
        placed.append((item, x, y))
        x += extent.width + size * 0.5
    return y + line


def _png_sections(explanation: dict) -> list[tuple[list[str], dict, tuple]]:
    sentences = [s["text"] for s in explanation.get("sentences") or []]
    words = [w["text"] for w in explanation["words"]]
    return ([(sentences, row, SENTENCE_RGB) for row in explanation["sentence_attention"]]
            + [(words, row, WORD_RGB) for row in explanation["word_attention"]])


def render_png(explanation: dict, *, width: int = 1100, dpi: int = 100) -> bytes:
    """The page's rows as a PNG (matplotlib Agg, no pyplot): label and probabilities on top."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    render_html(explanation)  # the same refusal for a model with no word maps
    figure = Figure(figsize=(width / dpi, 10), dpi=dpi)
    renderer = FigureCanvasAgg(figure).get_renderer()
    label = _predicted(explanation)
    probs = sorted(explanation["probabilities"].items(), key=lambda kv: -kv[1])[:8]
    shown = "   ".join(f"{name} {p:.3f}" for name, p in probs)
    placed = [(_text(figure, f"Predicted: {label}", fontsize=15, weight="bold"), 12, 12),
              (_text(figure, f"{explanation['model']} · {shown}", fontsize=10), 12, 40)]
    y = 70.0
    for units, row, rgb in _png_sections(explanation):
        title = _text(figure, row["name"], fontsize=10, weight="bold", color="#444")
        placed.append((title, 12, y))
        y = _draw_units(figure, renderer, placed, units, _shade(row["weights"]), rgb, y + 22, width) + 8
    height = y + 12
    figure.set_size_inches(width / dpi, height / dpi)
    for item, x, top in placed:  # display coordinates count from the bottom
        item.set_position((x, height - top))
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi, facecolor="white")
    return buffer.getvalue()


# --------------------------------------------------------------------------- files


def write_explanations(explanations: Sequence[dict], folder: str | Path, *, stem: str = "explain") -> list[Path]:
    """``<stem>_<i>.html`` and ``<stem>_<i>.png`` for every explanation (numbered from 1) in
    ``folder`` (made when missing). The folder, ``stem`` (a plain file-name stem) and every
    explanation are checked and everything is drawn first, so a bad input writes nothing; the
    files are staged and renamed in at the end, so a write that fails (disk full) leaves the
    folder as it was."""
    folder = check_path("folder", folder)
    check_folder_path("folder", folder)
    stem = _check_stem(stem)
    explanations = as_list(explanations, "write_explanations(explanations)", "explanations", "explanations")
    for i, explanation in enumerate(explanations):
        check_explanation(explanation, f"explanations[{i}]", i)
    files = []
    for i, explanation in enumerate(explanations, 1):
        files += [(folder / f"{stem}_{i}.html", render_html(explanation).encode("utf-8")),
                  (folder / f"{stem}_{i}.png", render_png(explanation))]
    # Staged, then renamed into the folder: a write that fails (a full disk) leaves the folder
    # as it was, pages of an earlier call with the same names included.
    with artifacts.staged_run(folder, last=files[-1][0].name if files else "") as staging:
        for path, data in files:
            artifacts.atomic_write_bytes(staging / path.name, data)
    return [path for path, _ in files]
