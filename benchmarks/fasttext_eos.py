"""Does textcls's fastText loop train as fastText does? Both on identical tokens, settings and order.

    OMP_NUM_THREADS=1 python benchmarks/fasttext_eos.py [--datasets mpqa trec ag_news]
        [--seeds 0 1 ... 9] [--output benchmarks/results/fasttext_eos]

For each (dataset, seed): the benchmark's split (the seed's 10 % dev carve, left unused), the
texts under fastText's tutorial normalisation (``FastTextPeer``), written in the peer's seeded
order. Three candidates train on the same lines with fastText's tutorial settings (``-epoch 25
-lr 1.0 -dim 100 -wordNgrams 2 -bucket 2000000``, softmax, no epoch chosen on dev):

- ``fasttext``: the fastText library itself (PyPI ``fasttext``, one thread, ``seed``);
- ``loop``: ``models/fasttext_sgd.softmax_pass`` (the compiled per-document loop that trains
  the ``fasttext-bag`` preset) over fastText's own ids: its dictionary of every training word
  plus ``</s>``, which ``Dictionary::getLine`` appends to every line, bigrams hashed as
  ``addWordNgrams`` hashes them (FNV-1a word hashes, ``h * 116049371 + h'``, modulo the
  buckets), input rows from U[-1/dim, 1/dim], a zero output matrix, the rate falling linearly
  to 0 every 50 documents (fastText: per token, in steps of ``lrUpdateRate``), and the file's
  order every epoch (fastText does not reshuffle). Unknown test words add no row, but their
  bigrams do, as in fastText;
- ``loop, no </s>``: the same without ``</s>``;
- ``loop, textcls tokens + [UNK]``: ``loop`` on the project's own tokens (``TextPipeline``'s
  lower-cased ``\w+|[^\w\s]+``) with an ``[UNK]`` row that every unknown test word reads
  (it never trains), as the ``fasttext-bag`` preset reads its text;
- ``loop, textcls tokens``: the same tokens with unknown test words dropped, as fastText drops
  them (so it parts the project's tokens from its ``[UNK]`` row);
- ``loop, [UNK]``: ``loop`` on fastText's tokens with the ``[UNK]`` row;
- ``loop, reshuffled each epoch``: ``loop`` with a new permutation of the documents every
  epoch, as the preset's engine walks them (fastText reads its file in one order every epoch).

So ``loop`` against ``fasttext`` tests the loop, and ``loop, no </s>`` against ``loop`` what
fastText's end-of-line token is worth (it is the only input every document shares: with a
bias-free output layer it is the model's bias). Paired over seeds (``scipy.stats.ttest_rel``;
each seed fixes the split and the order, not the initial tables, which each tool draws itself).

Writes <output>.json (every accuracy and fit time; the machine and the command) and <output>.md.
"""

from __future__ import annotations

import argparse
import functools
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

from textcls import load_dataset
from textcls.benchmark.peers import FastTextPeer
from textcls.benchmark.report import run_datasets, script_header, start_script_result
from textcls.data.prepare import column_values
from textcls.data.splits import ensure_dev
from textcls.models import fasttext_sgd
from textcls.text import TextPipeline
from textcls.text.pipeline import FASTTEXT_NGRAM_PRIME

REPO = Path(__file__).resolve().parents[1]
TUTORIAL = {"epoch": 25, "lr": 1.0, "dim": 100, "wordNgrams": 2, "bucket": 2_000_000}


class LoopSetup(NamedTuple):
    """What a loop candidate reads and how: the project's tokens (else fastText's), fastText's
    ``</s>``, an ``[UNK]`` row for unknown words, a new document order every epoch."""

    project_tokens: bool = False
    end: bool = True
    unk: bool = False
    reshuffle: bool = False


LOOPS = {
    "loop": LoopSetup(),
    "loop, no </s>": LoopSetup(end=False),
    "loop, textcls tokens + [UNK]": LoopSetup(project_tokens=True, unk=True),
    "loop, reshuffled each epoch": LoopSetup(reshuffle=True),
    "loop, textcls tokens": LoopSetup(project_tokens=True),
    "loop, [UNK]": LoopSetup(unk=True),
}
CANDIDATES = ("fasttext", *LOOPS)
EOS = "</s>"
UNK = "[UNK]"  # in the vocabulary only for the candidate that reads unknown words as the preset does
STEP_DOCUMENTS = 50  # documents per rate step of the loop's linear decay
_MASK64 = (1 << 64) - 1


def fasttext_word_hash(token: str) -> int:
    """fastText's ``Dictionary::hash``: 32-bit FNV-1a over the UTF-8 bytes, each byte taken as
    a signed char (so bytes above 127 are sign-extended before the xor)."""
    h = 2166136261
    for byte in token.encode("utf-8"):
        h = (h ^ ((byte - 256 if byte > 127 else byte) & 0xFFFFFFFF)) * 16777619 & 0xFFFFFFFF
    return h


def encode_lines(lines: list[str], vocab: dict[str, int], end: bool, buckets: int) -> tuple[np.ndarray, ...]:
    """Flat (word ids, starts, lengths, bigram ids, starts, lengths) as ``softmax_pass`` reads
    them; words outside ``vocab`` add no id (or ``[UNK]``'s, when the vocabulary has it), but their
    hashes enter the bigrams."""
    ids, starts, lengths, bigrams, bigram_starts, bigram_lengths = [], [], [], [], [], []
    for line in lines:
        tokens = line.split() + ([EOS] if end else [])
        hashes = [fasttext_word_hash(t) for t in tokens]
        starts.append(len(ids))
        bigram_starts.append(len(bigrams))
        known = [vocab.get(t, vocab[UNK]) for t in tokens] if UNK in vocab else [vocab[t] for t in tokens if t in vocab]
        ids += known
        lengths.append(len(known))
        pairs = [((a * FASTTEXT_NGRAM_PRIME + b) & _MASK64) % buckets for a, b in zip(hashes, hashes[1:])]
        bigrams += pairs
        bigram_lengths.append(len(pairs))
    return tuple(np.asarray(x, dtype=np.int64) for x in (ids, starts, lengths, bigrams, bigram_starts, bigram_lengths))


def train_loop(lines: list[str], labels: np.ndarray, n_classes: int, end: bool, seed: int, *, unk: bool = False,
               reshuffle: bool = False):
    """The compiled loop at the tutorial settings; returns (vocabulary, words, bigrams, output).
    ``unk``: an ``[UNK]`` row for unknown words; ``reshuffle``: a new document order every epoch."""
    vocab: dict[str, int] = {UNK: 0} if unk else {}
    for line in lines:
        for token in line.split() + ([EOS] if end else []):
            vocab.setdefault(token, len(vocab))
    dim, buckets, epochs, rate = TUTORIAL["dim"], TUTORIAL["bucket"], TUTORIAL["epoch"], TUTORIAL["lr"]
    rng = np.random.default_rng(seed)
    words = rng.uniform(-1 / dim, 1 / dim, (len(vocab), dim)).astype(np.float32)
    bigrams = rng.uniform(-1 / dim, 1 / dim, (buckets, dim)).astype(np.float32)
    output = np.zeros((n_classes, dim), np.float32)
    ids, starts, lengths, bigram_ids, bigram_starts, bigram_lengths = encode_lines(lines, vocab, end, buckets)
    ones = np.ones(n_classes, np.float32)
    n = len(lines)
    order = np.arange(n, dtype=np.int64)
    for epoch in range(epochs):
        if reshuffle:
            order = rng.permutation(n).astype(np.int64)
        for start in range(0, n, STEP_DOCUMENTS):
            lr = rate * (1 - (epoch * n + start + STEP_DOCUMENTS / 2) / (epochs * n))
            fasttext_sgd.softmax_pass(words, bigrams, output, ids, starts, lengths, bigram_ids, bigram_starts,
                                      bigram_lengths, order[start:start + STEP_DOCUMENTS], labels, ones,
                                      np.float32(max(lr, 0.0)))
    return vocab, words, bigrams, output


def predict_loop(model, lines: list[str], end: bool) -> np.ndarray:
    vocab, words, bigrams, output = model
    ids, starts, lengths, bigram_ids, bigram_starts, bigram_lengths = encode_lines(lines, vocab, end, len(bigrams))
    out = np.empty(len(lines), dtype=np.int64)
    for i in range(len(lines)):
        rows = np.concatenate([words[ids[starts[i]:starts[i] + lengths[i]]],
                               bigrams[bigram_ids[bigram_starts[i]:bigram_starts[i] + bigram_lengths[i]]]])
        hidden = rows.mean(0) if len(rows) else np.zeros(words.shape[1], np.float32)
        out[i] = int(np.argmax(output @ hidden))
    return out


def train_fasttext(lines: list[str], labels: np.ndarray, test_lines: list[str], seed: int) -> np.ndarray:
    import fasttext

    with tempfile.TemporaryDirectory(prefix="textcls-fasttext-eos-") as tmp:
        path = Path(tmp) / "train.txt"
        path.write_text("".join(f"__label__{y} {line}\n" for line, y in zip(lines, labels)), encoding="utf-8")
        model = fasttext.train_supervised(input=str(path), thread=1, seed=seed, verbose=0, **TUTORIAL)
    predicted, _ = model.f.multilinePredict([line + "\n" for line in test_lines], 1, 0.0, "strict")
    return np.asarray([int(p[0].removeprefix("__label__")) if p else -1 for p in predicted])


def run_one(name: str, seed: int, candidates: tuple[str, ...] = CANDIDATES) -> dict:
    dataset = ensure_dev(load_dataset(name), fraction=0.1, seed=seed)
    classes = list(dataset.label_names)
    index = {c: i for i, c in enumerate(classes)}
    peer = FastTextPeer(seed=seed)
    train_texts, test_texts = column_values(dataset["train"], "text"), column_values(dataset["test"], "text")
    order = np.random.default_rng(seed).permutation(len(train_texts))  # the peer's own file order
    lines = [peer._line(train_texts[i]) for i in order]
    project = TextPipeline(lowercase=True)  # the preset's normaliser and pre-tokeniser
    project_tokens = project.tokenize(train_texts)
    project_train = [" ".join(project_tokens[i]) for i in order]
    project_test = [" ".join(tokens) for tokens in project.tokenize(test_texts)]
    labels = np.asarray([index[y] for y in column_values(dataset["train"], "label")], dtype=np.int64)[order]
    test_lines = [peer._line(t) for t in test_texts]
    test_labels = np.asarray([index[y] for y in column_values(dataset["test"], "label")])
    out = {}
    for candidate in CANDIDATES:
        if candidate not in candidates:
            continue
        start = time.perf_counter()
        if candidate == "fasttext":
            predicted = train_fasttext(lines, labels, test_lines, seed)
        else:
            setup = LOOPS[candidate]
            train, test = (project_train, project_test) if setup.project_tokens else (lines, test_lines)
            model = train_loop(train, labels, len(classes), setup.end, seed, unk=setup.unk, reshuffle=setup.reshuffle)
            predicted = predict_loop(model, test, setup.end)
        out[candidate] = {"test_accuracy": float((predicted == test_labels).mean()),
                          "seconds": time.perf_counter() - start}
        print(f"{name} seed {seed} {candidate}: {100 * out[candidate]['test_accuracy']:.2f}", flush=True)
    return out


def _markdown(result: dict) -> str:
    from scipy.stats import ttest_rel

    seeds = [str(s) for s in result["seeds"]]
    lines = script_header("fastText's loop in textcls against fastText, with and without </s>", result) + [
        "Test accuracy, % (mean ± std over seeds " + ", ".join(seeds) + "), every candidate on fastText's tokens at "
        "its tutorial settings; p: paired t-test over the seeds (two-sided).", "",
        "| dataset | fasttext | loop | loop, no </s> | loop - fasttext (p) | no </s> - loop (p) |"
        " textcls tokens + [UNK] - fasttext (p) | reshuffled - fasttext (p) | textcls tokens - fasttext (p) |"
        " [UNK] - fasttext (p) | textcls tokens - textcls tokens + [UNK] (p) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name in result["datasets"]:
        runs = result["runs"][name]
        acc = {c: np.array([100 * runs[s][c]["test_accuracy"] for s in seeds]) for c in CANDIDATES if c in runs[seeds[0]]}
        cells = [("–" if c not in acc else f"{acc[c].mean():.2f} ± {acc[c].std(ddof=1):.2f}" if len(seeds) > 1
                  else f"{acc[c].mean():.2f}") for c in CANDIDATES[:3]]
        pairs = (("loop", "fasttext"), ("loop, no </s>", "loop"), ("loop, textcls tokens + [UNK]", "fasttext"),
                 ("loop, reshuffled each epoch", "fasttext"), ("loop, textcls tokens", "fasttext"),
                 ("loop, [UNK]", "fasttext"), ("loop, textcls tokens", "loop, textcls tokens + [UNK]"))
        for a, b in pairs:
            if a not in acc or b not in acc:  # a candidate added after the run, or left out by --candidates
                cells.append("–")
                continue
            diff = acc[a] - acc[b]
            p = ttest_rel(acc[a], acc[b]).pvalue if len(seeds) > 1 and diff.std() > 0 else float("nan")
            cells.append(f"{diff.mean():+.2f} ({'< 0.001' if p < 0.001 else f'{p:.3f}'})")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["mpqa", "trec", "ag_news"])
    parser.add_argument("--seeds", nargs="+", type=int, default=list(range(10)))
    parser.add_argument("--output", default=str(REPO / "benchmarks/results/fasttext_eos"))
    parser.add_argument("--candidates", nargs="+", choices=CANDIDATES, default=list(CANDIDATES),
                        help="train only these (default: all)")
    args = parser.parse_args(argv)
    result = start_script_result(__file__, sys.argv[1:], seeds=args.seeds, settings=TUTORIAL,
                                 candidates=list(args.candidates))
    run_datasets(result, args.datasets, args.seeds, functools.partial(run_one, candidates=tuple(args.candidates)),
                 args.output, _markdown)


if __name__ == "__main__":
    main()
