"""Can a MiniLM member fit the default's time bar? How long all-MiniLM-L6-v2 takes to encode a
whole dataset on one thread, fp32 and under bf16 autocast.

    OMP_NUM_THREADS=1 python benchmarks/minilm_encode_speed.py [--datasets mpqa trec]
        [--output benchmarks/results/minilm_encode_speed]

Issue 19's bar lets the default train in at most 10x fastText's time; on mpqa fastText trains in
about 1.6 s (practitioner.json) and the ensemble already takes about 8 of the 16 s. The MiniLM +
LR peer is the one peer the default trails there. This measures only the encoder's share, the
floor of any MiniLM member: every text of the dataset (train and test; ``MiniLMLogRegPeer``'s
encoder, batches of 256 that sentence-transformers sorts by length), after one warm-up batch,
fp32, bf16 autocast, then fp32 again (so a change of load between the first two shows), with the
number of word pieces (``[CLS]`` and ``[SEP]`` included) and the CPU's features.

Writes <output>.json and <output>.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from textcls import load_dataset
from textcls.benchmark.peers import _load_minilm
from textcls.benchmark.report import run_datasets, script_header, start_script_result
from textcls.data.prepare import column_values

REPO = Path(__file__).resolve().parents[1]
BATCH = 256
PASSES = ("fp32", "bf16", "fp32 again")


def run_one(name: str, seed: int) -> dict:
    dataset = load_dataset(name)
    texts = [str(t) for split in dataset.splits.values() for t in column_values(split, "text")]
    model = _load_minilm()
    pieces = sum(len(ids) for ids in model.tokenizer(texts, truncation=True)["input_ids"])
    model.encode(texts[:BATCH], batch_size=BATCH)
    out = {"texts": len(texts), "word_pieces": pieces}
    for label in PASSES:
        start = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=label == "bf16"):
            model.encode(texts, batch_size=BATCH)
        out[f"{label} seconds"] = time.perf_counter() - start
        print(f"{name} {label}: {out[f'{label} seconds']:.1f} s", flush=True)
    return out


def _markdown(result: dict) -> str:
    lines = script_header("MiniLM's encoding time, fp32 and bf16", result) + [
        f"Every text of the dataset encoded once per pass, batches of {BATCH}, one thread.", "",
        "| dataset | texts | word pieces | " + " | ".join(f"{p} s" for p in PASSES) + " |",
        "|---|---:|---:|" + "---:|" * len(PASSES)]
    for name in result["datasets"]:
        run = result["runs"][name]["0"]
        lines.append(f"| {name} | {run['texts']:,} | {run['word_pieces']:,} | "
                     + " | ".join(f"{run[f'{p} seconds']:.1f}" for p in PASSES) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["mpqa", "trec"])
    parser.add_argument("--output", default=str(REPO / "benchmarks/results/minilm_encode_speed"))
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    result = start_script_result(__file__, sys.argv[1:], seeds=[0], batch_size=BATCH)
    run_datasets(result, args.datasets, [0], run_one, args.output, _markdown)


if __name__ == "__main__":
    main()
