"""What building the first torch optimiser costs in a fresh interpreter.

    python benchmarks/optimizer_import.py [--repeats 5] [--output benchmarks/results/optimizer_import]

Why: ``torch.optim.Optimizer.__init__`` runs functions wrapped by ``torch._disable_dynamo``,
whose first call imports ``torch._dynamo``. On a fit of a few seconds (the ensemble on trec or
mpqa, where fastText's whole fit takes under a second) that import was a large share, which is
why per-example-sgd (``train.optim.EpochRate``) and static-finetune (``HeadAdam``) build no
torch optimiser (ARCHITECTURE.md). Each repeat starts a new interpreter, imports torch, then
times the construction of ``torch.optim.SGD`` over one tensor, and records whether
``torch._dynamo`` was imported before and after. Writes <output>.json and <output>.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
from pathlib import Path

from textcls.artifacts import atomic_write_bytes, write_json
from textcls.benchmark.system import git_info, machine_info

REPO = Path(__file__).resolve().parents[1]
CHILD = """
import json, sys, time
started = time.perf_counter()
import torch
imported = time.perf_counter() - started
before = "torch._dynamo" in sys.modules
started = time.perf_counter()
torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
built = time.perf_counter() - started
print(json.dumps({"import_torch_s": imported, "first_optimizer_s": built, "dynamo_before": before,
                  "dynamo_after": "torch._dynamo" in sys.modules}))
"""


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--output", default=str(REPO / "benchmarks/results/optimizer_import"))
    args = parser.parse_args(argv)
    load_before = [round(x, 2) for x in os.getloadavg()]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    runs = [json.loads(subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True,
                                      env=env).stdout) for _ in range(args.repeats)]
    args_given = sys.argv[1:] if argv is None else argv
    result = {"command": shlex.join(["python", "benchmarks/optimizer_import.py", *args_given]),
              "git": git_info(REPO), "machine": machine_info(), "load_average_before": load_before,
              "load_average_after": [round(x, 2) for x in os.getloadavg()], "runs": runs,
              "median_import_torch_s": statistics.median(r["import_torch_s"] for r in runs),
              "median_first_optimizer_s": statistics.median(r["first_optimizer_s"] for r in runs)}
    write_json(Path(args.output + ".json"), result)
    lines = ["# The first torch optimiser in a fresh interpreter", "", f"- command: `{result['command']}`",
             f"- commit: `{result['git'].get('commit')}`",
             f"- machine: {result['machine']['cpu_model']} ({', '.join(result['machine']['cpu_simd'])}); "
             f"load average {load_before} -> {result['load_average_after']}", "",
             "Seconds per fresh interpreter (one thread): `import torch`, then building `torch.optim.SGD` over one "
             "tensor; whether `torch._dynamo` was imported before and after that.", "",
             "| run | import torch s | first optimiser s | torch._dynamo before | after |", "|---:|---:|---:|---|---|"]
    for i, r in enumerate(runs, 1):
        lines.append(f"| {i} | {r['import_torch_s']:.2f} | {r['first_optimizer_s']:.2f} | {r['dynamo_before']} | "
                     f"{r['dynamo_after']} |")
    lines += ["", f"Medians: import torch {result['median_import_torch_s']:.2f} s, first optimiser "
                  f"{result['median_first_optimizer_s']:.2f} s.", ""]
    atomic_write_bytes(Path(args.output + ".md"), "\n".join(lines).encode("utf-8"))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
