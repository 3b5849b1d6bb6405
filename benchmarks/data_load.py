"""How long the text layer takes on the 25,000 IMDB training reviews, and where the time goes.

    python benchmarks/data_load.py [--data-dir DIR] [--repeats N]

Prints one JSON object: seconds to read, normalise, fit the vocabulary and encode
(``strip_html=True``, lowercase), tokens per second, the share of the normaliser inside the
Rust encode, sentence splitting, 20 Newsgroups' Python-side stripping, and the GloVe 6B
50-d load for a 20k vocabulary with its coverage. Each timing is the best of ``--repeats``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import time
from pathlib import Path

import tokenizers

from textcls.data import load_dataset
from textcls.data.prepare import prepare
from textcls.text import TextPipeline, build_embeddings, normalize_batch

REPO = Path(__file__).resolve().parents[1]


def read_jsonl(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


CPU_SECONDS: dict[str, float] = {}


def best_of(repeats: int, fn, name: str | None = None):
    """Best wall time of ``repeats`` calls, and the last value; the process CPU time of that
    best call goes to CPU_SECONDS[name] (on a shared machine wall time includes waiting)."""
    best, value = float("inf"), None
    for _ in range(repeats):
        started, cpu = time.perf_counter(), time.process_time()
        value = fn()
        wall = time.perf_counter() - started
        if wall < best:
            best = wall
            if name:
                CPU_SECONDS[name] = round(time.process_time() - cpu, 3)
    return best, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_data = os.environ.get("TEXTCLS_DATA_DIR", str(REPO.parent / "shared" / "datasets"))
    parser.add_argument("--data-dir", type=Path, default=Path(default_data))
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--output", type=Path, default=None, help="Also write the JSON here.")
    args = parser.parse_args()
    r = args.repeats

    # The whole user-facing path first: records (load_dataset) and then prepare(), which fits
    # the vocabulary on train and encodes train and test into padded-batch-ready datasets.
    load_s, imdb = best_of(1, lambda: load_dataset("imdb", data_dir=args.data_dir), "load_dataset_imdb")
    prepare_s, prepared = best_of(1, lambda: prepare(imdb, {"shape": "flat", **dict(lowercase=True, strip_html=True)}),
                                  "prepare_imdb_train_and_test")
    read_s, records = best_of(1, lambda: read_jsonl(args.data_dir / "imdb" / "train.jsonl.gz"))
    texts = [rec["text"] for rec in records]
    settings = dict(lowercase=True, strip_html=True)

    normalize_s, normalised = best_of(r, lambda: normalize_batch(texts, **settings), "normalize_batch_serial")
    fit_s, pipe = best_of(r, lambda: TextPipeline(**settings).fit(texts), "fit")
    encode_s, encoded = best_of(r, lambda: pipe.encode(texts), "encode")
    fit_encode_s, _ = best_of(r, lambda: TextPipeline(**settings).fit_encode(texts), "fit_encode")
    sentences_s, sentences = best_of(r, lambda: pipe.encode_sentences(texts), "encode_sentences")
    # The same encode on already-normalised text with the normaliser off: the difference is
    # what the normaliser costs inside the parallel Rust encode.
    bare = TextPipeline(lowercase=False).fit(normalised)
    bare_encode_s, bare_encoded = best_of(r, lambda: bare.encode(normalised), "encode_without_normalizer")
    assert bare_encoded.ids == encoded.ids, "normalising first must not change the ids"

    news = [rec["text"] for rec in read_jsonl(args.data_dir / "20news" / "train.jsonl.gz")]
    newsgroups_s, _ = best_of(r, lambda: normalize_batch(news, newsgroups=True), "newsgroups_strip_20news_train_python")

    vocab20k = TextPipeline(**settings, max_vocab=20_000).fit(texts)
    glove_first_s, glove = best_of(1, lambda: build_embeddings(
        vocab20k.vocab, "glove-6b-50d", token_counts=vocab20k.token_counts))
    glove_warm_s, _ = best_of(r, lambda: build_embeddings(
        vocab20k.vocab, "glove-6b-50d", token_counts=vocab20k.token_counts))

    tokens = encoded.tokens_total
    report = {
        "dataset": "imdb train",
        "documents": len(texts),
        "characters": sum(map(len, texts)),
        "tokens": tokens,
        "vocab_size": pipe.vocab_size,
        "settings": pipe.settings(),
        "seconds": {
            "load_dataset_imdb_train_and_test": round(load_s, 3),
            "prepare_fit_and_encode_imdb_train_and_test": round(prepare_s, 3),
            "read_jsonl_gz": round(read_s, 3),
            "normalize_batch_serial": round(normalize_s, 3),
            "fit": round(fit_s, 3),
            "encode": round(encode_s, 3),
            "fit_plus_encode": round(fit_s + encode_s, 3),
            "fit_encode": round(fit_encode_s, 3),
            "encode_without_normalizer": round(bare_encode_s, 3),
            "encode_sentences": round(sentences_s, 3),
            "newsgroups_strip_20news_train_python": round(newsgroups_s, 3),
        },
        "cpu_seconds": CPU_SECONDS,
        "load_average_1min": round(os.getloadavg()[0], 2),
        "prepare_report": prepared.report,
        "tokens_per_second": {
            "encode": round(tokens / encode_s),
            "fit_plus_encode": round(tokens / (fit_s + encode_s)),
            "fit_encode": round(tokens / fit_encode_s),
        },
        "normalizer_share_of_encode_cpu": round(
            max(CPU_SECONDS["encode"] - CPU_SECONDS["encode_without_normalizer"], 0.0) / CPU_SECONDS["encode"], 3
        ),
        "sentences": sentences.stats(),
        "glove_6b_50d_20k_vocab": {
            **glove.summary(),
            "seconds_first": round(glove_first_s, 3),
            "seconds_warm": round(glove_warm_s, 3),
        },
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "tokenizers": tokenizers.__version__,
        },
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text + "\n")


if __name__ == "__main__":
    main()
