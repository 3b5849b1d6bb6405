"""``textcls speed --predict``: end-to-end prediction speed, textcls beside fastText and scikit-learn.

What a user's prediction costs, on real text: raw texts in, labels out, tokenising included.
Every model is trained on the same data (MR's train split by default) and then, in one
process, at one thread, interleaved round by round so that the machine's load falls on all
of them alike:

- **throughput**: one call on ``docs`` documents (the dataset's texts, cycled), docs/s;
- **latency**: ``calls`` calls of one document each (test texts, cycled), p50 and p99 in ms.

textcls presets (one per family by default) are trained with ``epochs`` epochs (speed does
not depend on how long a model trained; the accuracy column says how far it got), saved, and
loaded with ``predictor.Predictor``: exactly what ``textcls predict`` runs. Its ``backend``
column says ``numpy`` for a run predicted by ``numpy_forward`` (fasttext-bag, kim-cnn, spe-cnn),
whose large call is also timed in its two stages (tokenising, forward pass). The peers:

- ``fasttext``: Facebook's fastText (PyPI ``fasttext``) with its tutorial's settings (lr 1.0,
  25 epochs, word bigrams, one thread) and its tutorial's normalisation, which the timing
  includes; its own ``multilinePredict`` gives the top label;
- ``sklearn-tfidf-lr``: scikit-learn's ``TfidfVectorizer`` (unigrams and bigrams, sublinear tf)
  and ``LogisticRegression`` in a ``Pipeline``; ``predict(texts)``.

Ratios are to fastText in the same run. The machine is shared: the report records the load
average before and after, and numbers are comparable only within one report.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import numpy as np

from ..artifacts import atomic_write_bytes
from ..errors import ConfigError
from ..validate import check_int
from . import system
from .speed import report_stem

# One light preset per model family (the CPU-sized ones where a family has both).
DEFAULT_PRESETS = ["fasttext-bag", "spe-cnn", "kim-cnn-static", "tfidf-lr", "lstm", "cspan-l1-q1", "dasa-text-axial",
                   "disan-t2t", "fcsr", "han-cpu", "hcan-flat-one-sa-maxpool-cpu", "self-attention-dot",
                   "transformer-1l-1h"]
PEERS = ["fasttext", "sklearn-tfidf-lr"]
# The targets (issue 17, "Done when"): docs/s at the large batch and p50 ms.
TARGETS = {"fasttext-bag": {"ratio_to_fasttext": 0.5, "p50_ms": 0.1},
           "spe-cnn": {"docs_per_second": 50_000, "p50_ms": 0.3},
           "kim-cnn-static": {"docs_per_second": 50_000, "p50_ms": 0.3}}


class Contender:
    """A trained model to time: ``predict(texts) -> labels``, and what the report says of it."""

    def __init__(self, name: str, kind: str, predict: Callable[[list[str]], list], **info):
        self.name, self.kind, self.predict, self.info = name, kind, predict, info
        self.prepare = None  # texts -> what predict takes, done before timing (None: the texts themselves)
        self.stages = None  # a NumPy run's (encode, logits), timed apart on the large call
        self.stage_us: dict[str, list[float]] = {"tokenise": [], "forward": []}  # microseconds a document
        self.throughput: list[float] = []
        self.latency_ms: list[float] = []


# --------------------------------------------------------------------------- contenders


def _textcls(preset: str, dataset, epochs: int, folder: Path) -> Contender:
    from ..api import Classifier
    from ..models.registry import get_preset
    from ..predictor import Predictor

    started = time.perf_counter()
    # A classic preset trains no epochs and refuses the setting (whatever its value).
    neural = get_preset(preset).kind == "neural"
    clf = Classifier(preset, **({"epochs": epochs} if neural else {})).fit_dataset(dataset)
    seconds = time.perf_counter() - started
    clf.save_pretrained(folder / preset)
    predictor = Predictor.load(folder / preset, device="cpu")
    contender = Contender(preset, "textcls", predictor.predict, family=clf.preset_.family, backend=predictor.backend,
                          train_seconds=seconds, epochs=clf.fit_result_.epochs_run if clf.fit_result_ else 1)
    contender.stages = predictor.stages
    return contender


def _fasttext(dataset) -> list[Contender]:
    from .peers import create_peer

    started = time.perf_counter()
    peer = create_peer("fasttext", lr=1.0, epoch=25).fit(dataset)
    seconds = time.perf_counter() - started
    classes, columns = peer.classes_, peer._label_columns  # "__label__<i>" -> i, the class classes_[i]

    def predict(texts: list[str]) -> list:
        labels, _ = peer.model_.f.multilinePredict([peer._line(t) + "\n" for t in texts], 1, 0.0, "strict")
        return [classes[columns[row[0]]] for row in labels]

    def predict_normalised(lines: list[str]) -> list:
        labels, _ = peer.model_.f.multilinePredict(lines, 1, 0.0, "strict")
        return [classes[columns[row[0]]] for row in labels]

    info = {"family": "fastText 0.9 (tutorial: lr 1.0, epoch 25, wordNgrams 2)", "train_seconds": seconds, "epochs": 25}
    # fastText itself alone: texts already normalised as its tutorial does (the Python regex
    # above), which a user may have done beforehand; not end to end, shown for reference.
    alone = Contender("fasttext-c++-only", "peer", predict_normalised, backend="C++, input pre-normalised", **info)
    alone.prepare = lambda texts: [peer._line(t) + "\n" for t in texts]
    return [Contender("fasttext", "peer", predict, backend="C++ + tutorial normalisation (Python regex)", **info), alone]


def _sklearn(dataset) -> Contender:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    started = time.perf_counter()
    pipeline = make_pipeline(TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=2),
                             LogisticRegression(max_iter=1000))
    pipeline.fit(list(dataset["train"]["text"]), list(dataset["train"]["label"]))
    seconds = time.perf_counter() - started
    return Contender("sklearn-tfidf-lr", "peer", lambda texts: list(pipeline.predict(texts)),
                     family="scikit-learn TfidfVectorizer(1-2 grams, sublinear) + LogisticRegression",
                     backend="scipy.sparse", train_seconds=seconds, epochs=1)


# --------------------------------------------------------------------------- timing


def _time_round(contender: Contender, batch: list[str], singles: list[str]) -> None:
    if contender.prepare is not None:
        batch, singles = contender.prepare(batch), contender.prepare(singles)
    started = time.perf_counter()
    labels = contender.predict(batch)
    contender.throughput.append(len(batch) / (time.perf_counter() - started))
    if len(labels) != len(batch):
        raise ConfigError(f"{contender.name} returned {len(labels)} labels for {len(batch)} texts")
    for text in singles:
        started = time.perf_counter()
        contender.predict([text])
        contender.latency_ms.append(1000 * (time.perf_counter() - started))
    if contender.stages is not None:
        encode, logits = contender.stages
        started = time.perf_counter()
        flat = encode(batch)
        encoded = time.perf_counter()
        logits(flat)
        contender.stage_us["tokenise"].append(1e6 * (encoded - started) / len(batch))
        contender.stage_us["forward"].append(1e6 * (time.perf_counter() - encoded) / len(batch))


def _tokenising(texts: list[str], train_texts: list[str], rounds: int) -> dict:
    """docs/s of ``TextPipeline.encode_flat`` (prediction's path: ASCII texts by regex + dict)
    against the Rust tokenizer's ``encode_batch_fast`` alone, on the same texts, fasttext-bag's
    pipeline settings; the ids are the same (tests/test_predict_path.py)."""
    from ..text.pipeline import TextPipeline

    pipeline = TextPipeline(lowercase=True, bigram_buckets=1 << 21).fit(train_texts)
    ways = {"encode_flat (ids + bigrams)": pipeline.encode_flat,
            "tokenizers encode_batch_fast (ids only)": lambda batch: [e.ids for e in pipeline._encode_fast(batch)]}
    speeds: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(rounds):
        for name, encode in ways.items():
            started = time.perf_counter()
            encode(texts)
            speeds[name].append(len(texts) / (time.perf_counter() - started))
    return {name: statistics.median(values) for name, values in speeds.items()}


def _row(contender: Contender, test_texts: list[str], test_labels: list[str]) -> dict:
    inputs = test_texts if contender.prepare is None else contender.prepare(test_texts)
    predicted = [str(label) for label in contender.predict(inputs)]
    latency = np.array(contender.latency_ms)
    stages = {f"{stage}_us_per_doc": statistics.median(values) for stage, values in contender.stage_us.items() if values}
    return {"model": contender.name, "kind": contender.kind, **contender.info, **stages,
            "accuracy": float(np.mean([p == t for p, t in zip(predicted, test_labels)])),
            "docs_per_second": statistics.median(contender.throughput), "docs_per_second_all": contender.throughput,
            "p50_ms": float(np.percentile(latency, 50)), "p99_ms": float(np.percentile(latency, 99)),
            "calls": len(latency)}


def run_predict_speed(presets: list[str] | None = None, *, data: str = "mr", docs: int = 20_000, calls: int = 1_000,
                      rounds: int = 3, epochs: int = 1, threads: int = 1, progress=None) -> dict:
    """Train every contender on ``data``, then time them round by round (see the module docstring)."""
    import torch

    from ..data import load_dataset

    # Upper bounds catch a slip (an extra zero or two) before minutes of training, not a wish.
    for name, value, low, high in (("docs", docs, 1, 10_000_000), ("calls", calls, 1000, 10_000_000),
                                   ("rounds", rounds, 1, 1000), ("epochs", epochs, 1, 100_000),
                                   ("threads", threads, 1, 1 << 16)):
        check_int(name, value, low, high)
    torch.set_num_threads(threads)
    say = progress or (lambda text: None)
    dataset = load_dataset(data)
    texts = list(dataset["train"]["text"]) + list(dataset["test"]["text"])
    batch = [texts[i % len(texts)] for i in range(docs)]
    test_texts, test_labels = list(dataset["test"]["text"]), list(dataset["test"]["label"])
    per_round = -(-calls // rounds)
    singles = [test_texts[i % len(test_texts)] for i in range(per_round)]
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="textcls-predict-speed-") as tmp:
        contenders = [*_fasttext(dataset), _sklearn(dataset)]
        for preset in presets or DEFAULT_PRESETS:
            say(f"training {preset} ({epochs} epoch(s)) on {data}")
            contenders.append(_textcls(preset, dataset, epochs, Path(tmp)))
        for contender in contenders:
            contender.predict(contender.prepare(batch[:256]) if contender.prepare else batch[:256])  # warm-up
        for r in range(rounds):
            for contender in contenders:
                say(f"round {r + 1}/{rounds}: {contender.name}")
                _time_round(contender, batch, singles)
        rows = [_row(c, test_texts, test_labels) for c in contenders]
    tokenising = _tokenising(batch, list(dataset["train"]["text"]), rounds)
    return _result(rows, data=data, docs=docs, rounds=rounds, epochs=epochs, threads=threads,
                   load=(load_before, os.getloadavg()), tokenising_docs_per_second=tokenising)


def _result(rows: list[dict], **settings) -> dict:
    reference = next(r for r in rows if r["model"] == "fasttext")
    for row in rows:
        row["throughput_ratio_to_fasttext"] = row["docs_per_second"] / reference["docs_per_second"]
        row["p50_ratio_to_fasttext"] = row["p50_ms"] / reference["p50_ms"]
        target = TARGETS.get(row["model"])
        if target is not None:
            row["target"] = target
            row["target_met"] = bool(row["p50_ms"] <= target["p50_ms"] and
                                     row["docs_per_second"] >= target.get("docs_per_second", 0) and
                                     row["throughput_ratio_to_fasttext"] >= target.get("ratio_to_fasttext", 0))
    load = settings.pop("load")
    return {"suite": "predict_speed", "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "git": system.git_info(), "machine": system.machine_info(), "versions": system.library_versions(),
            "load_average_before": list(load[0]), "load_average_after": list(load[1]), **settings, "rows": rows}


# --------------------------------------------------------------------------- report


def format_predict_markdown(result: dict, command: str | None) -> str:
    machine = result["machine"]
    lines = [
        "# Prediction speed, end to end (raw texts in, labels out)", "",
        f"Command: `{command}`" if command else "", "",
        f"{result['date']}, commit {(result['git'].get('commit') or '?')[:10]}"
        f"{' (uncommitted changes)' if result['git'].get('dirty') else ''}; {machine.get('cpu_model')} "
        f"({', '.join(machine.get('cpu_simd') or [])}), {machine.get('cpus_available')} CPUs; "
        f"{result['threads']} thread(s). Data: {result['data']}; throughput = one call on {result['docs']:,} "
        f"documents (median of {result['rounds']} rounds); latency = one document a call, "
        f"{result['rows'][0]['calls']:,} calls; the models were timed in turn, round by round.", "",
        f"The machine is shared and was busy: load average {result['load_average_before'][0]:.1f} before and "
        f"{result['load_average_after'][0]:.1f} after (2 CPUs). Compare the ratios within this report, not the "
        "absolute numbers with other runs.", "",
        "| model | kind | backend | docs/s | x fastText | p50 ms | p99 ms | p50 x fastText | accuracy | target |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    shown = {"ratio_to_fasttext": "{:.0%} of fastText's docs/s", "docs_per_second": "{:,} docs/s",
             "p50_ms": "p50 <= {} ms"}
    for row in result["rows"]:
        target = ""
        if "target" in row:
            target = ("met: " if row["target_met"] else "missed: ") + ", ".join(
                shown[k].format(v) for k, v in row["target"].items())
        lines.append(f"| {row['model']} | {row['kind']} | {row['backend']} | {row['docs_per_second']:,.0f} | "
                     f"{row['throughput_ratio_to_fasttext']:.2f} | {row['p50_ms']:.3f} | {row['p99_ms']:.3f} | "
                     f"{row['p50_ratio_to_fasttext']:.1f} | {row['accuracy']:.3f} | {target} |")
    split = [row for row in result["rows"] if "forward_us_per_doc" in row]
    if split:
        lines += ["", f"Where a NumPy run's time goes, microseconds a document on the {result['docs']:,}-document call "
                  f"(each stage timed alone, median of {result['rounds']} rounds): " + "; ".join(
                      f"{row['model']}: tokenising {row['tokenise_us_per_doc']:.1f}, forward pass "
                      f"{row['forward_us_per_doc']:.1f}" for row in split) + "."]
    if result.get("tokenising_docs_per_second"):
        lines += ["", f"Tokenising the {result['docs']:,} documents alone (fasttext-bag's pipeline, docs/s, median of "
                  f"{result['rounds']}): " + "; ".join(f"{name}: {value:,.0f}" for name, value in
                                                      result["tokenising_docs_per_second"].items()) + "."]
    lines += ["", f"textcls presets trained {result['epochs']} epoch(s) (fasttext: its tutorial's 25): the accuracy "
              "column is a sanity check of the labels, not a comparison of the models.", ""]
    return "\n".join(lines)


def write_predict_report(result: dict, output: str | Path, command: str | None) -> dict[str, Path]:
    """``<stem>.json`` and ``<stem>.md`` (``speed.report_stem``; a folder gets ``predict_speed.*``)."""
    stem = report_stem(output, "predict_speed", (".json", ".md"))
    result = {**result, "command": command}
    files = {"json": stem.with_suffix(".json"), "markdown": stem.with_suffix(".md")}
    atomic_write_bytes(files["json"], (json.dumps(result, indent=1) + "\n").encode("utf-8"))
    atomic_write_bytes(files["markdown"], format_predict_markdown(result, command).encode("utf-8"))
    return files
