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
  step each; CPU seconds of the process (one thread), extrapolated to the epoch
  (``time_epochs.time_ways``);
- before any step, the two paths' logits on the first batch are compared (largest absolute
  difference): the same model must give the same values either way, up to float32 rounding; and
  after the timed steps their weights (the same dropout masks on both).
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))
from time_epochs import compare_ways_main, time_ways  # noqa: E402  (a sibling script, not a package)

from textcls.benchmark.report import script_header  # noqa: E402


def time_entry(entry, data_dir, batches: int) -> dict:
    """Training seconds of an epoch of ``entry``'s model on the packed and the unpacked path."""
    import textcls.models.layers as layers

    ways = {"packed": lambda: mock.patch.object(layers, "_runs_unpacked", return_value=False),
            "unpacked": contextlib.nullcontext}
    timed = time_ways(entry, data_dir, batches, ways)
    epoch = timed.pop("epoch_seconds")
    return {**{k: v for k, v in timed.items() if not k.startswith("largest")},
            "packed_epoch_seconds": epoch["packed"], "unpacked_epoch_seconds": epoch["unpacked"],
            "packed_over_unpacked": epoch["packed"] / epoch["unpacked"] if epoch["unpacked"] > 0 else None,
            "largest_logit_difference": timed["largest_logit_difference"]["unpacked"],
            "largest_weight_difference": timed["largest_weight_difference"]["unpacked"]}


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


def summary(row: dict) -> str:
    return (f"{row['entry']:<40} packed {row['packed_epoch_seconds']:8.1f} s  unpacked "
            f"{row['unpacked_epoch_seconds']:8.1f} s  ({row['packed_over_unpacked']:.1f}x; logits differ by "
            f"{row['largest_logit_difference']:.1e})")


def main(argv: list[str] | None = None) -> int:
    return compare_ways_main(argv, __file__, __doc__, "benchmarks/results/rnn_packing", time_entry, markdown, summary)


if __name__ == "__main__":
    raise SystemExit(main())
