"""What the ensemble's MiniLM member costs, part by part, and why it runs in bf16 and not int8.

    OMP_NUM_THREADS=1 python benchmarks/minilm_member_cost.py [--datasets mpqa trec sst5]
        [--output benchmarks/results/minilm_member_cost]

For each dataset (its seed-0 split, as the ensemble carves dev), in one process on one thread:

- the first ``text.embeddings.minilm_encoder(3)`` call (reading the weights into
  ``text.bert.BertEncoder``, hashing them; until stop 33 it also imported ``transformers``) and a
  second one (cached);
- encoding the distinct training texts with ``minilm-encoder-lr-3l``'s features in fp32, in
  bf16 autocast (where the CPU has native bf16 matmul; the preset's choice) and with the
  linear layers in int8 (``quantize.quantize_model``, torch's dynamic quantisation), seconds;
- batch dependence: 64 training texts encoded in one batch and one at a time, the smallest
  cosine between a text's two vectors, per arithmetic (1.0: the batch does not matter);
- the logistic regression's C search on dev (``minilm-encoder-lr-3l``'s grid), seconds.

With ``--batch-pieces 512 1024 2048 0`` it measures instead how the encoder's batches should be
bounded: seconds to encode the distinct training texts and the dev texts, in bf16 where native,
at 256 texts a batch and at most that many padded word pieces (0: no bound, the rule until stop
34), the member's ``encode_pieces``.

With ``--c-search-dtypes float64 float32`` it measures the logistic regression's C search on the
member's sentence vectors (encoded once, bf16 where native) held in each dtype: seconds, the C
chosen, dev and test accuracy (float64 until stop 34).

Issue 19's bar lets the default train in 10x fastText's time; these are the parts of the
member that the default adds on small corpora (models/ensemble.py, SMALL_CORPUS_MEMBERS).
Writes <output>.json and <output>.md.
"""

from __future__ import annotations

import argparse
import copy
import functools
import sys
import time
from pathlib import Path

import numpy as np
import torch

from textcls import load_dataset
from textcls.benchmark.report import run_datasets, script_header, start_script_result
from textcls.data.prepare import column_values, label_targets
from textcls.data.splits import ensure_dev
from textcls.hardware import cpu_has_native_bf16
from textcls.models.minilm_encoder_lr import ENCODE_PIECES, MiniLMEncoderLRModel, MiniLMSentenceFeatures
from textcls.models.registry import get_preset
from textcls.quantize import quantize_model
from textcls.text.embeddings import minilm_encoder, minilm_word_pieces

REPO = Path(__file__).resolve().parents[1]
LAYERS = 3
BATCH_SAMPLE = 64
ARITHMETIC = ("fp32", "bf16", "int8")


def _features(encoder, arithmetic: str, batch_pieces: int = ENCODE_PIECES) -> MiniLMSentenceFeatures:
    tokenizer = minilm_encoder(LAYERS)[0]
    if arithmetic == "int8":
        encoder = quantize_model(copy.deepcopy(encoder), "int8")
    return MiniLMSentenceFeatures(tokenizer, encoder, max_seq_length=256, batch=256, batch_pieces=batch_pieces,
                                  bf16=arithmetic == "bf16")


def run_batching(name: str, seed: int, budgets=(ENCODE_PIECES,)) -> dict:
    """Encoding seconds of the distinct train and dev texts per bound on a batch's padded pieces."""
    _, encoder, _ = minilm_encoder(LAYERS)
    arithmetic = "bf16" if cpu_has_native_bf16() else "fp32"
    dataset = ensure_dev(load_dataset(name), fraction=0.1, seed=seed)
    out = {"arithmetic": arithmetic}
    for split in ("train", "dev"):
        texts = list(dict.fromkeys(str(t) for t in column_values(dataset[split], "text")))
        out[f"{split} texts"], out[f"{split} pieces"] = len(texts), minilm_word_pieces(texts)
        for budget in budgets:
            features = _features(encoder, arithmetic, budget or 1 << 30)
            start = time.perf_counter()
            features.transform(texts)
            key = f"{split} s at {budget or 'unbounded'}"
            out[key] = time.perf_counter() - start
            print(f"{name} {key}: {out[key]:.2f}", flush=True)
    return out


def _batching_markdown(result: dict) -> str:
    lines = script_header("How the MiniLM member's encoder batches should be bounded (3 layers)", result)
    budgets = [b or "unbounded" for b in result["batch_pieces"]]
    lines += ["Seconds to encode the distinct texts of each split (256 texts a batch at most, and at most the "
              "column's padded word pieces), and word pieces per second; the arithmetic: bf16 where the CPU has "
              "native bf16 matmul, else fp32.", "",
              "| dataset | split | texts | pieces | " + " | ".join(f"{b} s (pieces/s)" for b in budgets) + " |",
              "|---|---|---:|---:|" + "---:|" * len(budgets)]
    for name in result["datasets"]:
        run = result["runs"][name]["0"]
        for split in ("train", "dev"):
            pieces = run[f"{split} pieces"]
            cells = [f"{run[f'{split} s at {b}']:.2f} ({pieces / run[f'{split} s at {b}']:,.0f})" for b in budgets]
            lines.append(f"| {name} | {split} | {run[f'{split} texts']:,} | {pieces:,} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def run_one(name: str, seed: int, arithmetic_kinds=ARITHMETIC) -> dict:
    out = {}
    start = time.perf_counter()
    _, encoder, _ = minilm_encoder(LAYERS)
    out["first load s"] = time.perf_counter() - start
    start = time.perf_counter()
    minilm_encoder(LAYERS)
    out["cached load s"] = time.perf_counter() - start
    dataset = ensure_dev(load_dataset(name), fraction=0.1, seed=seed)
    train = [str(t) for t in column_values(dataset["train"], "text")]
    distinct = list(dict.fromkeys(train))
    out.update(train_texts=len(train), distinct_texts=len(distinct))
    vectors = {}
    for arithmetic in arithmetic_kinds:
        if arithmetic == "bf16" and not cpu_has_native_bf16():
            continue
        features = _features(encoder, arithmetic)
        start = time.perf_counter()
        vectors[arithmetic] = features.transform(train)
        out[f"encode {arithmetic} s"] = time.perf_counter() - start
        sample = distinct[:BATCH_SAMPLE]
        together = features.transform(sample)
        alone = np.concatenate([features.transform([t]) for t in sample])
        out[f"batch cosine {arithmetic}"] = float((together * alone).sum(1).min())
        print(f"{name} {arithmetic}: {out[f'encode {arithmetic} s']:.1f} s, "
              f"batch cosine {out[f'batch cosine {arithmetic}']:.5f}", flush=True)
    model = MiniLMEncoderLRModel(len(dataset.label_names), **get_preset("minilm-encoder-lr-3l").arch)
    model.sentence_features = _Cached(vectors.get("bf16", vectors["fp32"]), train)
    targets = np.asarray(label_targets(dataset["train"], dataset.label_names, False, "train"))
    dev_targets = np.asarray(label_targets(dataset["dev"], dataset.label_names, False, "dev"))
    dev = [str(t) for t in column_values(dataset["dev"], "text")]
    model.sentence_features.add(dev, _features(encoder, "bf16" if "bf16" in vectors else "fp32").transform(dev))
    start = time.perf_counter()
    model.fit(train, targets, dev_texts=dev, dev_y=dev_targets)
    out["C search s"] = time.perf_counter() - start
    out["C"] = model.C
    return out


def run_c_search(name: str, seed: int, dtypes=("float64", "float32")) -> dict:
    """The C search's seconds and choice with the sentence vectors in each of ``dtypes``."""
    _, encoder, _ = minilm_encoder(LAYERS)
    dataset = ensure_dev(load_dataset(name), fraction=0.1, seed=seed)
    texts = {s: [str(t) for t in column_values(dataset[s], "text")] for s in ("train", "dev", "test")}
    labels = {s: np.asarray(label_targets(dataset[s], dataset.label_names, False, s)) for s in texts}
    features = _features(encoder, "bf16" if cpu_has_native_bf16() else "fp32")
    vectors = {s: features.transform(texts[s]) for s in texts}
    out = {}
    for dtype in dtypes:
        model = MiniLMEncoderLRModel(len(dataset.label_names), **get_preset("minilm-encoder-lr-3l").arch)
        model.sentence_features = _Cached(vectors["train"].astype(dtype), texts["train"])
        for split in ("dev", "test"):
            model.sentence_features.add(texts[split], vectors[split].astype(dtype))
        start = time.perf_counter()
        model.fit(texts["train"], labels["train"], dev_texts=texts["dev"], dev_y=labels["dev"])
        out[f"{dtype} C search s"] = time.perf_counter() - start
        out[f"{dtype} C"] = model.C
        out[f"{dtype} dev accuracy"] = model.selection_["dev"][repr(float(model.C))]["score"]
        out[f"{dtype} test accuracy"] = float((model.predict_proba(texts["test"]).argmax(1) == labels["test"]).mean())
        print(f"{name} {dtype}: {out[f'{dtype} C search s']:.2f} s, C {model.C}", flush=True)
    return out


def _c_search_markdown(result: dict) -> str:
    lines = script_header("The MiniLM member's C search, by the dtype of its sentence vectors (3 layers)", result)
    keys = [f"{d} {k}" for d in result["c_search_dtypes"] for k in ("C search s", "C", "dev accuracy", "test accuracy")]
    lines += ["| dataset | " + " | ".join(keys) + " |", "|---|" + "---:|" * len(keys)]
    for name in result["datasets"]:
        run = result["runs"][name]["0"]
        lines.append(f"| {name} | " + " | ".join(f"{100 * run[k]:.2f}" if "accuracy" in k else f"{run[k]:.2f}"
                                                 for k in keys) + " |")
    return "\n".join(lines) + "\n"


class _Cached:
    """Vectors already computed, looked up by text, so that the fit below times the C search alone."""

    def __init__(self, vectors: np.ndarray, texts: list[str]):
        self.rows = dict(zip(texts, vectors))

    def add(self, texts, vectors) -> None:
        self.rows.update(zip(texts, vectors))

    def fit_transform(self, texts):
        return self.transform(texts)

    def transform(self, texts):
        return np.stack([self.rows[str(t)] for t in texts])


def _markdown(result: dict) -> str:
    lines = script_header("What the ensemble's MiniLM member costs (3 layers)", result)
    keys = ["train_texts", "distinct_texts", "first load s", "cached load s"] + [
        f"encode {a} s" for a in result.get("arithmetic", ARITHMETIC)] + [
        f"batch cosine {a}" for a in result.get("arithmetic", ARITHMETIC)] + ["C search s", "C"]
    lines += ["| dataset | " + " | ".join(keys) + " |", "|---|" + "---:|" * len(keys)]
    for name in result["datasets"]:
        run = result["runs"][name]["0"]
        cells = []
        for key in keys:
            value = run.get(key)
            cells.append("–" if value is None else f"{value:,}" if isinstance(value, int) else
                         f"{value:.5f}" if key.startswith("batch") else f"{value:.2f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "Encoding times are for every training text (distinct ones encoded once); batch cosine: the "
              f"smallest cosine between a text's vector in a batch of {BATCH_SAMPLE} and alone."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["mpqa", "trec", "sst5"])
    parser.add_argument("--output", default=str(REPO / "benchmarks/results/minilm_member_cost"))
    # int8 needs the encoder's fused-attention fast path off (its quantised linears hold no
    # weight tensor that the path's checks read); it was measured, and rejected, at ac9a9de.
    parser.add_argument("--arithmetic", nargs="+", choices=ARITHMETIC, default=list(ARITHMETIC))
    parser.add_argument("--batch-pieces", nargs="+", type=int, metavar="PIECES",
                        help="measure the encoder's batch bound instead (0: unbounded)")
    parser.add_argument("--c-search-dtypes", nargs="+", choices=("float64", "float32"),
                        help="measure the C search on the sentence vectors in these dtypes instead")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    if args.c_search_dtypes:
        result = start_script_result(__file__, sys.argv[1:], seeds=[0], layers=LAYERS,
                                     c_search_dtypes=args.c_search_dtypes)
        run_datasets(result, args.datasets, [0], functools.partial(run_c_search, dtypes=tuple(args.c_search_dtypes)),
                     args.output, _c_search_markdown)
        return
    if args.batch_pieces:
        result = start_script_result(__file__, sys.argv[1:], seeds=[0], layers=LAYERS, batch_pieces=args.batch_pieces)
        run_datasets(result, args.datasets, [0], functools.partial(run_batching, budgets=tuple(args.batch_pieces)),
                     args.output, _batching_markdown)
        return
    result = start_script_result(__file__, sys.argv[1:], seeds=[0], layers=LAYERS, arithmetic=args.arithmetic)
    run_datasets(result, args.datasets, [0], functools.partial(run_one, arithmetic_kinds=tuple(args.arithmetic)),
                 args.output, _markdown)


if __name__ == "__main__":
    main()
