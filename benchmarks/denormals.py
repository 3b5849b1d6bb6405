"""Denormal floats flushed against kept: the seconds of a training epoch on real batches.

    OMP_NUM_THREADS=1 python benchmarks/denormals.py --suite benchmarks/suites/fcsr_fdu_full.toml
        --entries fdu_mtl/dvd:lstm fdu_mtl/dvd:fcsr [--batches 30]
        [--output benchmarks/results/denormals_<cpu>]

The engine trains with denormal floats (below 1.2e-38) flushed to zero
(``train.engine._denormals_flushed``): gradients that fade back through a recurrence reach that
range, and some CPUs (Intel Xeon) compute on denormals in a slow microcode path. This script
measures what flushing buys on the suite's own data, and what it changes:

- each entry's data, pipeline, vectors and model are built as ``benchmarks/time_epochs.py``
  builds them (seed 0), and two copies of the model start from the same weights, one trained as
  the engine trains (flushed) and one with the flush patched off (kept);
- both copies take the same shuffled, length-bucketed training batches of the recipe, one
  optimiser step each per batch, taking turns which goes first, with the same dropout masks;
  CPU seconds of the process (one thread), extrapolated to the epoch (``time_epochs.time_ways``);
- after the timed steps, the largest difference between the two copies' weights: what flushing
  the denormals changed in training, against the weights' own size.

Run it on each kind of machine (the CPU and its features head the report): the cost of denormals
is the CPU's, so one machine's ratio says nothing of another's.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))
from time_epochs import compare_ways_main, time_ways, ways_report, ways_row  # noqa: E402  (a sibling script, not a package)


def time_entry(entry, data_dir, batches: int) -> dict:
    """Training seconds of an epoch of ``entry``'s model with denormals flushed and kept."""
    from textcls.train import engine

    ways = {"flushed": contextlib.nullcontext,
            "kept": lambda: mock.patch.object(engine, "_denormals_flushed", contextlib.nullcontext)}
    return ways_row(time_ways(entry, data_dir, batches, ways), "kept", "flushed")


markdown, summary = ways_report("Denormal floats kept against flushed (training epochs)", "kept", "flushed", "weight",
                                "weights after the timed steps (the same dropout masks both ways)")


def main(argv: list[str] | None = None) -> int:
    return compare_ways_main(argv, __file__, __doc__, "benchmarks/results/denormals", time_entry, markdown, summary)


if __name__ == "__main__":
    raise SystemExit(main())
