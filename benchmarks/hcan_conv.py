"""HCAN's width-3 convolutions as ``nn.Conv1d`` calls against one matmul over each position's
window: the seconds of a training epoch on real batches.

    OMP_NUM_THREADS=1 python benchmarks/hcan_conv.py --suite benchmarks/suites/hcan_full.toml
        --entries 20news:hcan-cpu fdu_mtl/books:hcan [--batches 30]
        [--output benchmarks/results/hcan_conv_<cpu>]

Eqs. 2 and 5 of the paper compute Q, K and V by width-3 convolutions over the word (or
sentence) vectors. ``models.hcan._conv`` calls the ``Conv1d`` on the transposed input and
transposes the output back to the ``[N, L, D]`` layout that attention reads. The same map can be
one ``F.linear`` of each position's window ``[x_{t-1}, x_t, x_{t+1}]`` with the kernel read as
``[out, 3D]``, without the transposes' copies. This script measures what that would buy on the
suite's own data, and what it would change, as ``benchmarks/denormals.py`` does for denormals:

- each entry's data, pipeline, vectors and model are built as ``benchmarks/time_epochs.py``
  builds them (seed 0), and two copies of the model start from the same weights, one trained as
  the code is (``Conv1d``) and one with the window matmul patched in;
- both copies take the same shuffled, length-bucketed training batches of the recipe, one
  optimiser step each per batch, taking turns which goes first, with the same dropout masks;
  CPU seconds of the process (one thread), extrapolated to the epoch (``time_epochs.time_ways``);
- after the timed steps, the largest difference between the two copies' weights: what the other
  order of the same float32 additions changes in training.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))
from time_epochs import compare_ways_main, time_ways, ways_report, ways_row  # noqa: E402  (a sibling script, not a package)


def window_matmul(conv, x, mask):
    """The convolution of ``models.hcan._conv`` as one matmul over shifted windows (zeros past
    both ends, as the convolution's padding), in the ``[N, L, D]`` layout."""
    import torch
    import torch.nn.functional as F

    from textcls.models.hcan import _zero_padding

    width, length = conv.kernel_size[0], x.size(1)
    padded = F.pad(_zero_padding(x, mask), (0, 0, width // 2, width // 2))
    windows = torch.cat([padded[:, shift:shift + length] for shift in range(width)], dim=-1)  # [N, L, 3D]
    kernel = conv.weight.permute(0, 2, 1).reshape(conv.out_channels, -1)  # [out, 3, D] -> [out, 3D]
    return F.linear(windows, kernel, conv.bias)


def time_entry(entry, data_dir, batches: int) -> dict:
    """Training seconds of an epoch of ``entry``'s model with the convolutions as Conv1d calls and
    as window matmuls."""
    from textcls.models import hcan

    ways = {"conv1d": contextlib.nullcontext, "matmul": lambda: mock.patch.object(hcan, "_conv", window_matmul)}
    return ways_row(time_ways(entry, data_dir, batches, ways), "conv1d", "matmul")


markdown, summary = ways_report("HCAN's convolutions: Conv1d calls against window matmuls (training epochs)",
                                "conv1d", "matmul", "weight",
                                "weights after the timed steps (the same dropout masks both ways)")


def main(argv: list[str] | None = None) -> int:
    return compare_ways_main(argv, __file__, __doc__, "benchmarks/results/hcan_conv", time_entry, markdown, summary)


if __name__ == "__main__":
    raise SystemExit(main())
