"""A paired t-test over seeds between two entries of one committed suite report.

    python benchmarks/paired_seeds.py --suite spe_cnn_full --dataset mr \\
        --pair single-cnn-static single-cnn-static-clitics --pair spe-cnn spe-cnn-clitics \\
        [--output benchmarks/results/paired/spe_cnn_full_mr_clitics]

For a diagnosis that is not a paper's claim (those go through `textcls benchmark --verdicts`):
two entries of the same suite that differ in one setting and share seeds and splits. For each
pair it takes the test accuracy of every seed both ran, and reports the means, the paired
differences, their mean and standard error, and the paired t-test's two-sided p-value
(scipy.stats.ttest_rel). When every seed gives the same difference (two deterministic models on
an official split, say) the test is undefined: t and p are left empty (null) and the differences
speak for themselves. It reads only the committed JSON, so anyone can rerun it. Writes
<output>.json and <output>.md.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

import numpy as np
from scipy import stats

from textcls.artifacts import write_report

REPO = Path(__file__).resolve().parents[1]


def _accuracies(report: dict, dataset: str, name: str) -> dict[int, float]:
    for entry in report["entries"]:
        if entry["dataset"] == dataset and entry["name"] == name:
            return {run["seed"]: 100 * run["accuracy"] for run in entry["runs"] if run.get("status") == "ok"}
    raise SystemExit(f"error: no entry '{name}' on '{dataset}' in the report; check --pair and --dataset")


def paired(report: dict, dataset: str, base: str, other: str) -> dict:
    """The paired comparison of ``other`` against ``base`` over the seeds both ran."""
    a, b = _accuracies(report, dataset, base), _accuracies(report, dataset, other)
    seeds = sorted(set(a) & set(b))
    if len(seeds) < 2:
        raise SystemExit(f"error: '{base}' and '{other}' share {len(seeds)} seed(s) on '{dataset}'; a paired test "
                         "needs at least 2")
    diffs = np.array([b[s] - a[s] for s in seeds])
    # Accuracies are counts over one test set: equal differences are equal to float rounding.
    if np.ptp(diffs) < 1e-9:
        t = p = None
    else:
        test = stats.ttest_rel([b[s] for s in seeds], [a[s] for s in seeds])
        t, p = float(test.statistic), float(test.pvalue)
    return {"dataset": dataset, "base": base, "other": other, "seeds": seeds,
            "base_mean": float(np.mean([a[s] for s in seeds])), "other_mean": float(np.mean([b[s] for s in seeds])),
            "differences": diffs.round(4).tolist(), "mean_difference": float(diffs.mean()),
            "standard_error": float(diffs.std(ddof=1) / np.sqrt(len(seeds))),
            "t": t, "p_two_sided": p}


def _number(value, spec: str) -> str:
    return "– (the same difference on every seed)" if value is None else format(value, spec)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", required=True, help="the report's name under benchmarks/results")
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--pair", nargs=2, action="append", required=True, metavar=("BASE", "OTHER"))
    parser.add_argument("--output", required=True)
    args = parser.parse_args(argv)
    path = REPO / "benchmarks" / "results" / f"{args.suite}.json"
    report = json.loads(path.read_text())
    rows = [paired(report, args.dataset, base, other) for base, other in args.pair]
    command = "python benchmarks/paired_seeds.py " + shlex.join(sys.argv[1:] if argv is None else argv)
    result = {"command": command, "report": str(path.relative_to(REPO)), "pairs": rows}
    lines = [f"# Paired t-tests over seeds: `{args.suite}`, {args.dataset}", "", f"- command: `{command}`",
             f"- source: `{result['report']}` (test accuracy of each seed, %)", "",
             "| base | other | seeds | base mean | other mean | differences | mean ± s.e. | t | p (two-sided) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['base']} | {r['other']} | {len(r['seeds'])} | {r['base_mean']:.2f} | {r['other_mean']:.2f} "
                     f"| {', '.join(f'{d:+.2f}' for d in r['differences'])} | {r['mean_difference']:+.2f} ± "
                     f"{r['standard_error']:.2f} | {_number(r['t'], '.2f')} | {_number(r['p_two_sided'], '.4f')} |")
    write_report(Path(args.output), result, "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
