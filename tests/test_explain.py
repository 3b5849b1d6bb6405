"""Classifier.explain, its HTML page and PNG, and `textcls explain`, on small models trained on a
slice of mr (300 reviews, 1 epoch). The pages are looked at in a real headless browser (Debian's
`chromium`, installed by .ci/run): the shading seen in the screenshot must be the shading the
page says, and the most shaded words the ones with the largest attention weights."""

import html
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser

import numpy as np
import pytest
from PIL import Image
from tolerance import KERNEL

from textcls import Classifier
from textcls.cli import main
from textcls.data import load_dataset
from textcls.errors import ModelError
from textcls.explain import SENTENCE_RGB, WORD_RGB, explainable_presets, render_html, render_png

TEXT = "A tender, funny and moving film. The plot is thin and the ending drags. Still, I loved it!"
HOSTILE = 'the <script>alert("x")</script> & "quoted" film is <b>dull</b>.'


@pytest.fixture(scope="module")
def mr():
    ds = load_dataset("mr", max_per_split=300)
    return list(ds["train"]["text"]), list(ds["train"]["label"])


@pytest.fixture(scope="module")
def han(mr):
    # No GloVe (random vectors): the test needs the maps, not accuracy.
    return Classifier("han-cpu", epochs=1, params={"embeddings": None, "min_freq": 1}).fit(*mr)


@pytest.fixture(scope="module")
def dasa(mr):
    return Classifier("dasa", epochs=1).fit(*mr)


# --------------------------------------------------------------------------- Classifier.explain


def test_hierarchical_explanation_is_aligned_to_words_and_sentences(han):
    e = han.explain([TEXT])[0]
    words, sentences = e["words"], e["sentences"]
    assert len(sentences) == 3 and [s["text"] for s in sentences] == [
        "A tender, funny and moving film.", "The plot is thin and the ending drags.", "Still, I loved it!"]
    for w in words:  # every word points at its own characters of the text
        assert TEXT[w["start"]:w["end"]] == w["text"] and w["token"] in (w["text"].lower(), "[UNK]")
    assert [w["sentence"] for w in words] == [j for j, s in enumerate(sentences) for _ in range(*s["words"])]
    (word_row,), (sentence_row,) = e["word_attention"], e["sentence_attention"]
    weights = np.asarray(word_row["weights"])
    assert weights.shape == (len(words),) and (weights > 0).all()
    # HAN weighs words within their sentence and sentences within the text.
    np.testing.assert_allclose([weights[slice(*s["words"])].sum() for s in sentences], 1, **KERNEL)
    np.testing.assert_allclose(sum(sentence_row["weights"]), 1, **KERNEL)
    np.testing.assert_allclose(list(e["probabilities"].values()), han.predict_proba([TEXT])[0], **KERNEL)
    assert e["label"] == han.predict([TEXT])[0] and e["tokens"][0][0] == "a"


def test_dasa_gives_one_row_per_axis_and_hcan_one_per_head(dasa, mr):
    e = dasa.explain([TEXT, "dull"])
    assert [r["name"] for r in e[0]["word_attention"]] == ["text axis", "feature axis"]
    assert e[0]["sentences"] is None and e[0]["sentence_attention"] == []
    assert all(len(r["weights"]) == len(e[0]["words"]) for r in e[0]["word_attention"])
    assert len(e[1]["words"]) == 1 and e[1]["words"][0]["text"] == "dull"
    hcan = Classifier("hcan-cpu", epochs=1, params={"embeddings": None, "min_freq": 1}).fit(*mr)
    h = hcan.explain([TEXT])[0]
    heads = len(h["sentence_attention"])
    assert heads > 1
    assert [r["name"] for r in h["word_attention"]] == [f"word attention, head {i}" for i in range(1, heads + 1)]
    assert len(h["sentence_attention"]) == heads
    assert all(len(r["weights"]) == len(h["sentences"]) for r in h["sentence_attention"])


@pytest.mark.parametrize("preset, rows", [
    ("hcan-flat-one-sa-target-cpu", "word attention, head 1"),
    ("cspan-fusion-relative", "semantic self-attention (received)"),
    ("disan-t2t", "token2token self-attention (received)"),
    ("dasa-text-axial", "text axis"),
    ("hcan-hier-one-sa-maxpool-cpu", None),
    ("cspan-ablation-bilstm", None),
])
def test_the_list_of_presets_that_can_explain_is_what_the_models_do(preset, rows, mr):
    texts, labels = mr
    clf = Classifier(preset, epochs=1, max_length=64, params={"embeddings": None, "min_freq": 1}).fit(
        texts[::3], labels[::3])
    assert (preset in explainable_presets()) == (rows is not None)
    if rows is None:
        with pytest.raises(ModelError, match="has no attention maps"):
            clf.explain([TEXT])
        return
    e = clf.explain([TEXT])[0]
    assert e["word_attention"][0]["name"] == rows
    assert all(len(r["weights"]) == len(e["words"]) for r in e["word_attention"])
    assert all(np.isfinite(r["weights"]).all() and min(r["weights"]) >= 0 for r in e["word_attention"])


def test_a_model_without_attention_is_a_model_error_naming_the_presets_that_can(mr):
    clf = Classifier("fasttext-bag", epochs=1).fit(*mr)
    with pytest.raises(ModelError) as err:
        clf.explain([TEXT])
    message = str(err.value)
    assert "'fasttext-bag'" in message and "has no attention maps" in message and "\n" not in message
    named = message.split("presets that can explain: ")[1].split(", ")
    assert {"han-cpu", "hcan-cpu", "dasa", "cspan-base", "self-attention-dot", "disan-t2t"} <= set(named)
    # HCAN's max-pool variants and CSPAN's plain Bi-LSTM ablation pool without weights.
    assert "hcan-hier-two-sa-maxpool-cpu" not in named and "cspan-ablation-bilstm" not in named


# --------------------------------------------------------------------------- the page


class _Spans(HTMLParser):
    """Every shaded span of the page: (row, class, index, weight, alpha, text)."""

    def __init__(self):
        super().__init__()
        self.spans, self.rows, self._open, self.tags = [], [], None, []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        attrs = dict(attrs)
        if "row" in (attrs.get("class") or "").split():
            self.rows.append(attrs["data-row"])
        if attrs.get("class") in ("w", "s"):
            alpha = float(re.search(r"rgba\(\d+, \d+, \d+, ([0-9.]+)\)", attrs["style"]).group(1))
            self._open = [len(self.rows) - 1, attrs["class"], int(attrs["data-index"]),
                          float(attrs["data-weight"]), alpha, ""]

    def handle_data(self, data):
        if self._open is not None:
            self._open[5] += data

    def handle_endtag(self, tag):
        if tag == "span" and self._open is not None:
            self.spans.append(tuple(self._open))
            self._open = None


def spans_of(page: str) -> _Spans:
    parser = _Spans()
    parser.feed(page)
    return parser


def test_the_pages_shading_follows_the_attention_weights(han, dasa):
    for clf in (han, dasa):
        e = clf.explain([TEXT])[0]
        parsed = spans_of(render_html(e))
        rows = e["sentence_attention"] + e["word_attention"]
        assert parsed.rows == [r["name"] for r in rows]
        for r, row in enumerate(rows):
            spans = [s for s in parsed.spans if s[0] == r]
            assert [s[2] for s in spans] == list(range(len(row["weights"])))
            np.testing.assert_allclose([s[3] for s in spans], row["weights"], rtol=1e-5)
            alphas, weights = np.array([s[4] for s in spans]), np.array(row["weights"])
            # The shading order is the attention order: a larger weight is never lighter.
            order = np.argsort(weights, kind="stable")
            assert (np.diff(alphas[order]) >= 0).all()
            assert alphas[weights.argmax()] == 1.0
        units = [s["text"] for s in e["sentences"]] if e["sentences"] else []
        assert [s[5] for s in parsed.spans if s[1] == "s"] == units * len(e["sentence_attention"])
        assert [s[5] for s in parsed.spans if s[1] == "w"] == [w["text"] for w in e["words"]] * len(e["word_attention"])


def test_the_page_escapes_the_text_and_loads_nothing(dasa):
    e = dasa.explain([HOSTILE])[0]
    page = render_html(e)
    assert "<script" not in page and "<b>" not in page and html.escape(HOSTILE) in page
    assert not re.search(r"\b(src|href)=|@import|url\(|<link|https?://", page)  # self-contained
    parsed = spans_of(page)
    assert set(parsed.tags) <= {"html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "span", "table",
                                "tr", "td", "div"}
    assert [s[5] for s in parsed.spans if s[0] == 0] == [w["text"] for w in e["words"]]
    image = render_png(e)
    assert image[:8] == b"\x89PNG\r\n\x1a\n"


# --------------------------------------------------------------------------- in a real browser

WINDOW = (1200, 2400)
RECTS = """<script>
const rects = [];
document.querySelectorAll('.row').forEach((row, r) => row.querySelectorAll('.w, .s').forEach(el => {
  const b = el.getBoundingClientRect();
  rects.push([r, Number(el.dataset.index), b.left, b.top, b.width, b.height]);
}));
const out = document.createElement('pre'); out.id = 'rects'; out.textContent = JSON.stringify(rects);
document.body.appendChild(out);
</script>"""


def chromium(*args, tmp_path) -> subprocess.CompletedProcess:
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        pytest.fail("chromium is not installed: apt-get install -y --no-install-recommends chromium (.ci/run does)")
    command = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               "--force-device-scale-factor=1", f"--window-size={WINDOW[0]},{WINDOW[1]}",
               f"--user-data-dir={tmp_path / 'profile'}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)


def screenshot_shading(page: str, tmp_path) -> tuple[list, np.ndarray]:
    """(span rectangles from the browser's layout, the screenshot's pixels)."""
    shown, measured = tmp_path / "page.html", tmp_path / "measured.html"
    shown.write_text(page, encoding="utf-8")
    # The measuring copy adds its script after everything, so the layout above it is the same.
    measured.write_text(page.replace("</body>", RECTS + "</body>"), encoding="utf-8")
    dom = chromium("--dump-dom", measured.as_uri(), tmp_path=tmp_path).stdout
    rects = json.loads(html.unescape(re.search(r'<pre id="rects">(.*?)</pre>', dom, re.S).group(1)))
    chromium(f"--screenshot={tmp_path / 'shot.png'}", shown.as_uri(), tmp_path=tmp_path)
    pixels = np.asarray(Image.open(tmp_path / "shot.png").convert("RGB")).astype(int)
    assert pixels.shape[:2] == (WINDOW[1], WINDOW[0])
    return rects, pixels


def seen_alpha(pixels: np.ndarray, rect, rgb) -> float:
    """The shading alpha of one span in the screenshot: its background is the commonest colour
    inside its box (the glyphs are a minority), read back through the green channel."""
    _, _, left, top, width, height = rect
    box = pixels[int(top) + 1:int(top + height) - 1, int(left) + 1:int(left + width) - 1].reshape(-1, 3)
    colours, counts = np.unique(box, axis=0, return_counts=True)
    background = colours[counts.argmax()]
    return (255 - background[1]) / (255 - rgb[1])


def test_a_browser_shows_the_largest_weights_as_the_most_shaded(han, dasa, tmp_path):
    for n, clf in enumerate((han, dasa)):
        e = clf.explain([TEXT])[0]
        page = render_html(e)
        folder = tmp_path / str(n)
        folder.mkdir()
        rects, pixels = screenshot_shading(page, folder)
        spans = spans_of(page).spans
        rows = e["sentence_attention"] + e["word_attention"]
        assert len(rects) == len(spans) == sum(len(r["weights"]) for r in rows)
        assert max(rect[3] + rect[5] for rect in rects) < WINDOW[1]  # every span is inside the screenshot
        for r, row in enumerate(rows):
            rgb = SENTENCE_RGB if spans[[s[0] for s in spans].index(r)][1] == "s" else WORD_RGB
            seen = np.array([seen_alpha(pixels, rect, rgb) for rect in rects if rect[0] == r])
            said = np.array([s[4] for s in spans if s[0] == r])
            weights = np.array(row["weights"])
            # The screenshot shows what the page says (8-bit colour: within a few levels) ...
            np.testing.assert_allclose(seen, said, atol=0.02)
            # ... so the most shaded unit is one with the largest weight, and any clearly
            # different pair of weights is shaded in their order.
            assert weights[seen.argmax()] >= weights.max() * (1 - 0.02)
            clear = np.abs(said[:, None] - said[None, :]) > 0.05
            agree = np.sign(seen[:, None] - seen[None, :]) == np.sign(weights[:, None] - weights[None, :])
            assert agree[clear].all()
        # The HAN page has words of both a short and a long sentence: the check was not vacuous.
        if n == 0:
            assert np.ptp([s[4] for s in spans if s[1] == "w"]) > 0.2


# --------------------------------------------------------------------------- the command line


def test_the_command_writes_a_page_and_a_png_per_text(han, dasa, tmp_path, capsys):
    run = tmp_path / "run"
    han.save_pretrained(run)
    out = tmp_path / "out"
    main(["explain", str(run), TEXT, HOSTILE, "--output", str(out)])
    printed = capsys.readouterr().out.split()
    expected = [str(out / f"explain_{i}{suffix}") for i in (1, 2) for suffix in (".html", ".png")]
    assert printed == expected
    page = (out / "explain_2.html").read_text(encoding="utf-8")
    assert "<script" not in page and "Predicted:" in page and 'class="s"' in page
    assert Image.open(out / "explain_1.png").size[0] == 1100


def test_the_command_refuses_a_model_without_attention_and_writes_nothing(mr, tmp_path, capsys):
    run = tmp_path / "run"
    Classifier("fasttext-bag", epochs=1).fit(*mr).save_pretrained(run)
    with pytest.raises(SystemExit) as exit_:
        main(["explain", str(run), TEXT, "--output", str(tmp_path / "out")])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: model 'fasttext-bag'") and "han-cpu" in err and "\n" not in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("output", ["loop", "loop/sub"])
def test_the_command_refuses_an_output_through_a_symlink_loop_first(han, tmp_path, capsys, output):
    # Was: check_folder_path read the loop as a missing folder, so the run was loaded and the
    # texts explained before the write refused it, in words that did not name --output.
    run = tmp_path / "run"
    han.save_pretrained(run)
    (tmp_path / "loop").symlink_to(tmp_path / "back")
    (tmp_path / "back").symlink_to(tmp_path / "loop")
    with pytest.raises(SystemExit) as exit_:
        main(["explain", str(run), TEXT, "--output", str(tmp_path / output)])
    assert exit_.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == (
        f"error: --output {tmp_path / output}: leads through a symlink loop (links that point at each other); "
        "remove or fix the link, or name another folder\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["back", "loop", "run"]


# --------------------------------------------------------------------------- bad input


def record(words=("good", "film"), weights=(0.25, 0.75), **changes) -> dict:
    """An explanation as Classifier.explain gives one for a flat model (no model needed)."""
    spans, start = [], 0
    for w in words:
        spans.append({"text": w, "token": w, "start": start, "end": start + len(w)})
        start += len(w) + 1
    e = {"text": " ".join(words), "model": "self-attention-dot", "label": "pos",
         "probabilities": {"pos": 0.7, "neg": 0.3}, "tokens": list(words), "words": spans, "sentences": None,
         "word_attention": [{"name": "text self-attention (received)", "map": "text", "weights": list(weights)}],
         "sentence_attention": [], "words_not_seen": 0, "attentions": {}}
    return {**e, **changes}


def test_write_explanations_checks_the_folder_before_drawing(tmp_path, monkeypatch):
    from textcls import explain
    from textcls.errors import ConfigError

    def no_drawing(*args, **kwargs):
        raise AssertionError("drew before checking the folder")

    monkeypatch.setattr(explain, "render_png", no_drawing)
    a_file = tmp_path / "afile"
    a_file.write_text("x")
    with pytest.raises(ConfigError, match=r"folder .*afile: not a folder; name a folder"):
        explain.write_explanations([record()], a_file)
    with pytest.raises(ConfigError, match=r"afile/sub: not a folder \(.*afile is a file\)"):
        explain.write_explanations([record()], a_file / "sub")
    for folder in (None, "", 3):
        with pytest.raises(ConfigError, match="parameter 'folder' = .* must be a file or folder path"):
            explain.write_explanations([record()], folder)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


@pytest.mark.parametrize("stem", ["../evil", "sub/page", "..", ".", "", "a\\b", "a\x00b", None, 1])
def test_the_stem_must_be_a_plain_file_name(tmp_path, stem):
    from textcls.errors import ConfigError
    from textcls.explain import write_explanations

    with pytest.raises(ConfigError, match="parameter 'stem' = .* must be a plain file-name stem"):
        write_explanations([record()], tmp_path / "ex", stem=stem)
    assert list(tmp_path.iterdir()) == []  # neither the folder nor ../evil_1.html
    written = write_explanations([record()], tmp_path / "ex", stem="page")
    assert [p.name for p in written] == ["page_1.html", "page_1.png"]


def test_malformed_explanations_are_refused_naming_the_record_and_the_key(tmp_path):
    from textcls.errors import DataError
    from textcls.explain import write_explanations

    with pytest.raises(DataError, match=r"^explanation: missing keys 'text', .*'word_attention'.*; pass an item of "):
        render_html({})
    with pytest.raises(DataError, match="^explanation: missing key 'word_attention';"):
        render_png({k: v for k, v in record().items() if k != "word_attention"})
    bad = {
        "missing key 'word_attention'": {k: v for k, v in record().items() if k != "word_attention"},
        "is list, not an explanation": [],
        r"'word_attention'\[0\] has 1 weights for 2 words": record(weights=(1.0,)),
        r"'word_attention'\[0\] has a weight that is not a finite number": record(weights=(0.5, float("nan"))),
        r"'words'\[1\] is not a dict with a string 'text'": record(words=("a", "b"), weights=(1, 2)) | {
            "words": [{"text": "a"}, {}]},
        "'probabilities' is not a dict": record(probabilities=[0.3, 0.7]),
        "'label' is NoneType, not a class": record(label=None),
        "'label' is float, not a class": record(label=float("nan")),
        r"'labels' is not a list of classes \(strings, bools or finite numbers\)": record(labels=["a", None]),
        "'sentence_attention' has rows but 'sentences' is None": record(
            sentence_attention=[{"name": "s", "weights": [1.0]}]),
        r"'sentences'\[0\] is not a dict .* within the 2 words": record(
            sentences=[{"text": "good film", "words": [0, 3]}]),
    }
    for message, broken in bad.items():
        with pytest.raises(DataError, match=rf"^explanations\[1\]: {message}") as err:
            write_explanations([record(), broken], tmp_path / "ex")
        assert err.value.index == 1 and "\n" not in str(err.value)
    with pytest.raises(DataError, match=r"explanations is dict, not a list of explanations"):
        write_explanations(record(), tmp_path / "ex")
    assert not (tmp_path / "ex").exists()  # nothing written for a bad second record


def test_labels_fitted_as_ints_are_explained_as_the_ints_predict_returns(tmp_path):
    """explain answered "3" where predict (and POST /predict) answer 3 for a run fitted with int
    labels; the explanation is checked on load and its page names the label."""
    texts = ["a good film", "a bad film", "so good", "so bad", "good acting", "bad acting"] * 4
    clf = Classifier("dasa", epochs=1, params={"embeddings": None, "min_freq": 1}).fit(texts, [3, 1] * 12)
    explanation = clf.explain(["a good film"])[0]
    assert explanation["label"] == clf.predict(["a good film"])[0] and type(explanation["label"]) is int
    assert set(explanation["probabilities"]) == {"1", "3"}
    assert f'<span class="label">{explanation["label"]}</span>' in render_html(explanation)
    assert json.loads(json.dumps(explanation))["label"] == explanation["label"]
    # Every class value fit takes is a label an explanation may hold (bool and float ones too).
    for value in (True, 1.5, "pos"):
        assert f'<span class="label">{value}</span>' in render_html(record(label=value))


def test_a_folder_in_the_way_of_a_later_file_writes_nothing(tmp_path):
    from textcls.errors import DataError
    from textcls.explain import write_explanations

    (tmp_path / "explain_2.png").mkdir()
    with pytest.raises(DataError, match=r"explain_2.png: is a folder"):
        write_explanations([record(), record()], tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["explain_2.png"]


def test_the_png_draws_control_characters_visibly_and_warns_nothing(dasa):
    import warnings

    odd = record(words=("\x01\x02", "ok"), sentences=[{"text": "\x01\x02\nok", "start": 0, "end": 5, "words": [0, 2]}],
                 sentence_attention=[{"name": "sentence attention", "map": "sentence", "weights": [1.0]}])
    real = dasa.explain(["\x01\x02"])[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        images = [render_png(odd), render_png(real)]
    assert [str(w.message) for w in caught] == []  # matplotlib's "Glyph 1 (\x01) missing" before
    assert all(image[:8] == b"\x89PNG\r\n\x1a\n" for image in images)
    from textcls.explain import _png_text

    assert _png_text("a\x01\tb\x7f") == "a\\x01 b\\x7f"  # what the PNG shows instead
    page = render_html(real)  # the page keeps the text as it is
    assert [s[5] for s in spans_of(page).spans] == ["\x01\x02"] * len(real["word_attention"])


def test_the_png_draws_dollars_as_dollars_not_mathtext():
    # "$\frac$" was parsed as mathtext: a ValueError from matplotlib; "$x$" was drawn as an italic x.
    e = record(words=("$\\frac$", "$x$"), sentences=[{"text": "$\\frac$ $x$", "start": 0, "end": 11, "words": [0, 2]}],
               sentence_attention=[{"name": "sentence attention", "map": "sentence", "weights": [1.0]}])
    assert render_png(e)[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_failed_write_leaves_the_folder_as_it_was(tmp_path, monkeypatch):
    """A full disk on the third file: the pages of an earlier call with the same names are kept
    (the review of stop 63 found a rollback that deleted them), and a folder made here is gone."""
    import errno

    from textcls import artifacts
    from textcls.explain import write_explanations

    real, calls = artifacts.atomic_write_bytes, []

    def disk_full_on_the_third(path, data):
        calls.append(path)
        if len(calls) == 3:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real(path, data)

    (tmp_path / "ex").mkdir()
    (tmp_path / "ex" / "explain_1.html").write_text("the earlier page")
    monkeypatch.setattr(artifacts, "atomic_write_bytes", disk_full_on_the_third)
    with pytest.raises(OSError, match="No space left"):
        write_explanations([record(), record()], tmp_path / "ex")
    assert len(calls) == 3 and [p.name for p in (tmp_path / "ex").iterdir()] == ["explain_1.html"]
    assert (tmp_path / "ex" / "explain_1.html").read_text() == "the earlier page"
    calls.clear()
    with pytest.raises(OSError, match="No space left"):
        write_explanations([record(), record()], tmp_path / "new" / "ex")
    assert not (tmp_path / "new").exists()
