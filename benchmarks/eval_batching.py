"""Seconds of an evaluation pass with and without a bound on each batch's padded tokens.

    OMP_NUM_THREADS=1 python benchmarks/eval_batching.py [--cases DATASET:MODEL ...]
        [--budgets none 65536 16384 8192 4096] [--documents 1000] [--repeats 2]
        [--output benchmarks/results/eval_batching]

Evaluation sorts the documents by length and cuts them into batches of 256 (``eval_batch``):
when a split holds a few long documents among many short ones, its last batch pads hundreds
of documents to the longest, and self-attention pays the square of that length. Here each case's
model (the preset, untrained: the weights do not change the cost) makes the evaluation pass over
``--documents`` test documents (a seeded sample; all of a smaller test split) through ``PreparedData.loader`` with
``max_pieces`` = each budget ("none" = no bound), under ``torch.inference_mode`` on one thread,
the budgets taking turns in each round (``interleaved_best``), best of ``--repeats`` rounds. It
also records the largest difference of a probability between a bounded pass and the unbounded one
(the batches differ, the masked models' outputs must not) and the padded tokens each pass builds.
Writes <output>.json and <output>.md.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from datasets import DatasetDict

from textcls.benchmark.report import script_header, start_script_result, write_script_result
from textcls.benchmark.speed import interleaved_best

REPO = Path(__file__).resolve().parents[1]

# Length-skewed sets (fdu_mtl/apparel: median 49 tokens, longest 794 in its dev split), a long one
# (20news, capped at each preset's length) and a short one (mr), for the attention models and
# the cheaper ones beside them.
CASES = ("fdu_mtl/apparel:transformer", "fdu_mtl/apparel:kim-cnn-nonstatic", "fdu_mtl/apparel:bilstm",
         "fdu_mtl/apparel:fcsr", "fdu_mtl/apparel:hcan", "mr:spe-cnn", "mr:fasttext-bag",
         "20news:dasa", "20news:cspan-base", "20news:spe-cnn")


def budget_name(budget: int | None) -> str:
    return "none" if budget is None else str(budget)


def measure(case: str, budgets: list[int | None], documents: int, repeats: int) -> dict:
    from textcls import load_dataset
    from textcls.data.prepare import prepare
    from textcls.estimators import eval_batch
    from textcls.models.registry import create_model, get_preset

    dataset_name, model_name = case.split(":")
    preset = get_preset(model_name)
    data = load_dataset(dataset_name)
    test = data["test"]
    rows = np.sort(np.random.default_rng(0).permutation(len(test))[:documents])
    dataset = replace(data, splits=DatasetDict({"train": data["train"], "test": test.select(rows.tolist())}))
    prepared = prepare(dataset, preset.inputs, seed=0)
    torch.manual_seed(0)
    matrix = prepared.embeddings.matrix if prepared.embeddings is not None else None
    model = create_model(preset, num_classes=prepared.num_classes, vocab_size=prepared.pipeline.vocab_size,
                         embeddings=matrix).eval()
    batch_size = eval_batch(preset.recipe.batch_size)

    def evaluate(budget):
        def run(_):
            out = np.empty((len(rows), prepared.num_classes), dtype=np.float32)
            pieces = 0
            with torch.inference_mode():
                for batch in prepared.loader("test", batch_size, max_pieces=budget):
                    out[batch["index"].numpy()] = torch.softmax(model(batch).logits.float(), -1).numpy()
                    pieces += batch["input_ids"].numel()
            return out, pieces
        return run

    passes = {budget_name(b): evaluate(b) for b in budgets}
    best, outputs = interleaved_best(repeats, passes, None)
    reference = outputs[budget_name(budgets[0])][0]
    lengths = np.asarray(prepared.encoded["test"].lengths)
    return {"dataset": dataset_name, "model": model_name, "documents": len(rows), "batch_size": batch_size,
            "tokens": {"median": float(np.median(lengths)), "p90": float(np.percentile(lengths, 90)),
                       "max": int(lengths.max())},
            "seconds": {name: round(seconds, 3) for name, seconds in best.items()},
            "padded_tokens": {name: int(out[1]) for name, out in outputs.items()},
            "max_abs_probability_difference": {name: float(np.abs(out[0] - reference).max())
                                               for name, out in outputs.items()}}


def markdown(result: dict) -> str:
    names = [budget_name(b) for b in result["budgets"]]
    lines = script_header("Evaluation batches bounded by padded tokens", result)
    lines += ["Seconds of one evaluation pass (best of the rounds; every budget takes a turn in each round) "
              "and its speed-up over no bound; batches of `eval_batch` documents, and of at most `max_pieces` "
              "padded tokens where a budget is given. Untrained presets on a seeded sample of the test split.", "",
              "| dataset | model | docs | tokens median / p90 / max | " + " | ".join(f"s ({n})" for n in names)
              + " | " + " | ".join(f"x ({n})" for n in names[1:]) + " | max abs Δp |",
              "|---|---|---|---|" + "---|" * (2 * len(names) - 1) + "---|"]
    for run in result["runs"].values():
        seconds = run["seconds"]
        base = seconds[names[0]]
        lines.append(
            f"| {run['dataset']} | {run['model']} | {run['documents']} | {run['tokens']['median']:.0f} / "
            f"{run['tokens']['p90']:.0f} / {run['tokens']['max']} | "
            + " | ".join(f"{seconds[n]:.3f}" for n in names) + " | "
            + " | ".join(f"{base / seconds[n]:.2f}" for n in names[1:])
            + f" | {max(run['max_abs_probability_difference'].values()):.1e} |")
    lines += ["", "Padded tokens a pass builds (the batches' rows x their longest document):", "",
              "| dataset | model | " + " | ".join(names) + " |", "|---|---|" + "---|" * len(names)]
    for run in result["runs"].values():
        lines.append(f"| {run['dataset']} | {run['model']} | "
                     + " | ".join(f"{run['padded_tokens'][n]:,}" for n in names) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=list(CASES), metavar="DATASET:MODEL")
    parser.add_argument("--budgets", nargs="+", default=["none", "65536", "16384", "8192", "4096"],
                        help="padded tokens a batch may hold; 'none' = no bound (the first is the reference)")
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks" / "results" / "eval_batching")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    budgets = [None if b == "none" else int(b) for b in args.budgets]
    result = start_script_result(__file__, argv, budgets=budgets, documents=args.documents, repeats=args.repeats)
    for case in args.cases:
        result["runs"][case] = run = measure(case, budgets, args.documents, args.repeats)
        print(case, run["seconds"], flush=True)
        write_script_result(args.output, result, markdown)


if __name__ == "__main__":
    main()
