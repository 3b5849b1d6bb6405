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
from time_epochs import compare_ways_main, time_ways, ways_report, ways_row  # noqa: E402  (a sibling script, not a package)


def time_entry(entry, data_dir, batches: int) -> dict:
    """Training seconds of an epoch of ``entry``'s model on the packed and the unpacked path."""
    import textcls.models.layers as layers

    ways = {"packed": lambda: mock.patch.object(layers, "_runs_unpacked", return_value=False),
            "unpacked": contextlib.nullcontext}
    return ways_row(time_ways(entry, data_dir, batches, ways), "packed", "unpacked")


markdown, summary = ways_report("Packed against unpacked recurrent layers (training epochs)", "packed", "unpacked",
                                "logit", "logits on one batch before training (their weights after the timed steps "
                                "are in the JSON)")


def main(argv: list[str] | None = None) -> int:
    return compare_ways_main(argv, __file__, __doc__, "benchmarks/results/rnn_packing", time_entry, markdown, summary)


if __name__ == "__main__":
    raise SystemExit(main())
