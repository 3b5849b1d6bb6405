"""Where the default ensemble's fit spends its time: cProfile of one fit per dataset, one thread.

    OMP_NUM_THREADS=1 python benchmarks/ensemble_fit_profile.py [--datasets trec ag_news]
        [--preset ensemble] [--rows 25] [--functions compute_metrics roc_auc ...]
        [--output benchmarks/results/ensemble_fit_profile]

For each dataset (its seed-0 split, dev carved as `textcls benchmark` carves it) the preset is
fitted once under cProfile; the report lists the fit's wall seconds, CPU seconds and the members
it chose, then the functions of largest cumulative time, and those whose name holds one of
``--functions`` (the profiler's own overhead included: compare rows within one report). Issue 19's time bar is the reason: it read which parts of the
fit to cut (the MiniLM member's encoding, the logistic regressions' C searches, the per-epoch dev
scores of fasttext-bag).

Writes <output>.json and <output>.md.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import pstats
import sys
import time
from pathlib import Path

import torch

from textcls import load_dataset
from textcls.benchmark.report import run_datasets, script_header, start_script_result
from textcls.data.splits import ensure_dev
from textcls.estimators import estimator_for
from textcls.models.registry import get_preset

REPO = Path(__file__).resolve().parents[1]


def run_one(name: str, seed: int, preset: str = "ensemble", rows: int = 25, functions=()) -> dict:
    dataset = ensure_dev(load_dataset(name), fraction=0.1, seed=seed)
    estimator = estimator_for(get_preset(preset).with_overrides(seed=seed))
    profiler = cProfile.Profile()
    start, cpu = time.perf_counter(), time.process_time()
    profiler.enable()
    estimator.fit(dataset)
    profiler.disable()
    out = {"fit s": time.perf_counter() - start, "fit cpu s": time.process_time() - cpu,
           "members": list(estimator.preset.arch.get("members", [])) if estimator.preset.kind == "ensemble" else []}
    stats = pstats.Stats(profiler).sort_stats("cumulative")
    top = []
    for (path, line, function), (_, calls, own, cumulative, _) in list(stats.stats.items()):
        top.append({"function": f"{_short(path)}:{line}({function})", "calls": calls, "own s": own,
                    "cumulative s": cumulative})
    top.sort(key=lambda row: -row["cumulative s"])
    out["top"] = top[:rows] + [row for row in top[rows:] if any(f in row["function"] for f in functions)]
    print(f"{name}: fit {out['fit s']:.1f} s", flush=True)
    return out


def _short(path: str) -> str:
    """A path from its package on (``textcls/...``, ``torch/...``), or the built-in's name."""
    for marker in ("site-packages/", "src/"):
        if marker in path:
            return path.split(marker, 1)[1]
    return path


def _markdown(result: dict) -> str:
    lines = script_header(f"Where the `{result['preset']}` fit spends its time", result)
    for name in result["datasets"]:
        run = result["runs"][name]["0"]
        lines += [f"## {name}", "", f"Fit {run['fit s']:.2f} s wall, {run['fit cpu s']:.2f} s CPU under the profiler; "
                  f"members: {', '.join(run['members']) or '-'}.", "",
                  "| function | calls | own s | cumulative s |", "|---|---:|---:|---:|"]
        lines += [f"| `{row['function']}` | {row['calls']:,} | {row['own s']:.2f} | {row['cumulative s']:.2f} |"
                  for row in run["top"]]
        lines.append("")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["trec", "ag_news"])
    parser.add_argument("--preset", default="ensemble")
    parser.add_argument("--rows", type=int, default=25)
    parser.add_argument("--functions", nargs="*", default=["compute_metrics", "roc_auc", "_binary_auc"])
    parser.add_argument("--output", default=str(REPO / "benchmarks/results/ensemble_fit_profile"))
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    result = start_script_result(__file__, sys.argv[1:], seeds=[0], preset=args.preset)
    run_datasets(result, args.datasets, [0], functools.partial(run_one, preset=args.preset, rows=args.rows,
                                                                  functions=tuple(args.functions)),
                 args.output, _markdown)


if __name__ == "__main__":
    main()
