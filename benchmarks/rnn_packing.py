"""Packed against unpacked recurrent layers: the seconds of a training epoch on real batches.

    OMP_NUM_THREADS=1 python benchmarks/rnn_packing.py --suite benchmarks/suites/fcsr_fdu_full.toml
        --entries fdu_mtl/dvd:lstm fdu_mtl/dvd:bilstm-stacked [--batches 30]
        [--output benchmarks/results/rnn_packing]

``layers.masked_rnn`` reads each document to its true length. Until commit cc921fd it packed the
batch (``pack_padded_sequence``); it now runs a plain ``nn.LSTM`` / ``nn.GRU`` one layer and
direction at a time, unpacked, because PyTorch's packed backward on the CPU costs O(B L^2)
(pytorch/pytorch#149194). This script measures what that changed, on the suite's own data:

- each entry's data, pipeline, vectors and model are built as ``benchmarks/time_epochs.py``
  builds them (seed 0), and two copies of the model start from the same weights, one run with
  the packed path (``layers._runs_unpacked`` patched off) and one without;
- both copies read the same shuffled, length-bucketed training batches of the recipe; each batch
  is one optimiser step of each copy, taking turns which goes first, after one untimed warm-up
  step each; CPU seconds of the process (one thread), extrapolated to the epoch;
- before any step, the two paths' logits on the first batch are compared (largest absolute
  difference): the same model must give the same values either way, up to float32 rounding.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import sys
import time
from pathlib import Path
from unittest import mock

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from time_epochs import _prepared_model  # noqa: E402  (a sibling script, not a package)

from textcls.benchmark.report import script_header, start_script_result, write_script_result  # noqa: E402


def time_entry(entry, data_dir, batches: int) -> dict:
    """Training seconds of an epoch of ``entry``'s model on the packed and the unpacked path."""
    import textcls.models.layers as layers
    from textcls.train import build_optimizer, training_step

    model, prepared, recipe, sizes, multi_label = _prepared_model(entry, data_dir)
    copies = {"packed": model, "unpacked": copy.deepcopy(model)}
    steps = {path: training_step(m, build_optimizer(m, recipe), recipe, multi_label=multi_label)
             for path, m in copies.items()}

    def on(path: str):
        packed = mock.patch.object(layers, "_runs_unpacked", return_value=False)
        return packed if path == "packed" else contextlib.nullcontext()

    def step(path: str, batch) -> None:
        with on(path):
            steps[path](batch)

    loader = prepared.loader("train", recipe.batch_size, shuffle=True, seed=0)
    iterator = iter(loader)
    first = next(iterator)
    logits = {}
    for path, net in copies.items():
        net.eval()
        with torch.no_grad(), on(path):
            logits[path] = net(first).logits
    difference = float((logits["packed"] - logits["unpacked"]).abs().max())
    for net in copies.values():
        net.train()
    for path in copies:
        step(path, first)  # warm-up, untimed
    seconds, timed = {path: 0.0 for path in copies}, 0
    for batch in iterator:
        if timed >= batches:
            break
        order = list(copies) if timed % 2 == 0 else list(copies)[::-1]
        for path in order:
            start = time.process_time()
            step(path, batch)
            seconds[path] += time.process_time() - start
        timed += 1
    scale = len(loader) / max(timed, 1)
    epoch = {path: value * scale for path, value in seconds.items()}
    return {"entry": entry.id, "model": entry.model, "documents": sizes, "batch_size": recipe.batch_size,
            "train_batches": len(loader), "train_batches_timed": timed,
            "packed_epoch_seconds": epoch["packed"], "unpacked_epoch_seconds": epoch["unpacked"],
            "packed_over_unpacked": epoch["packed"] / epoch["unpacked"] if epoch["unpacked"] > 0 else None,
            "largest_logit_difference": difference}


def markdown(result: dict) -> str:
    lines = script_header("Packed against unpacked recurrent layers (training epochs)", result)
    lines += ["CPU seconds of one training epoch (extrapolated from the timed batches), the same model and "
              "batches on both paths; the last column is the largest difference between the two paths' "
              "logits on one batch before training.", "",
              "| entry | batches timed | packed s | unpacked s | packed / unpacked | largest logit difference |",
              "|---|---:|---:|---:|---:|---:|"]
    for row in result["runs"].values():
        lines.append(f"| `{row['entry']}` | {row['train_batches_timed']} / {row['train_batches']} | "
                     f"{row['packed_epoch_seconds']:.1f} | {row['unpacked_epoch_seconds']:.1f} | "
                     f"{row['packed_over_unpacked']:.1f}x | {row['largest_logit_difference']:.1e} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from textcls.benchmark.runner import load_suite
    from textcls.data.loaders import data_dir

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", required=True)
    parser.add_argument("--entries", nargs="+", required=True, help="whole entry ids of the suite")
    parser.add_argument("--batches", type=int, default=30, help="training batches timed per path")
    parser.add_argument("--output", default="benchmarks/results/rnn_packing")
    args = parser.parse_args(argv)
    suite = load_suite(args.suite)
    by_id = {entry.id: entry for entry in suite.entries}
    unknown = [e for e in args.entries if e not in by_id]
    if unknown:
        print(f"error: {args.suite} has no entry {unknown[0]!r}; give whole ids such as {suite.entries[0].id!r}",
              file=sys.stderr)
        return 2
    result = start_script_result(__file__, sys.argv[1:] if argv is None else argv, suite=suite.name,
                                 batches=args.batches)
    for entry_id in args.entries:
        row = time_entry(by_id[entry_id], data_dir(), args.batches)
        result["runs"][entry_id] = row
        write_script_result(args.output, result, markdown)
        print(f"{entry_id:<40} packed {row['packed_epoch_seconds']:8.1f} s  unpacked "
              f"{row['unpacked_epoch_seconds']:8.1f} s  ({row['packed_over_unpacked']:.1f}x; logits differ by "
              f"{row['largest_logit_difference']:.1e})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
