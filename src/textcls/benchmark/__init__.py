"""Benchmarks: textcls models side by side with the tools people use, on the same splits.

``run_suite("quick")`` runs ``benchmarks/suites/quick.toml`` (each run in its own child
process) and writes ``quick.{json,md,png}`` into a fresh ``runs/benchmarks/quick_<time>/``
(``output_dir="benchmarks/results"`` rewrites the committed results); ``textcls benchmark
--suite quick [--output-dir DIR]`` does the same from the shell, and ``render_report``
(``--render --output-dir DIR``) rewrites the Markdown and plot from the JSON without running
anything. Peers (fastText, MiniLM + logistic regression) live in
``peers``; the machine and version stamp in ``system``; tables and plots in ``report``;
``write_reproduction`` (``verdicts``) checks every claim of the papers against the committed
JSON and writes ``benchmarks/REPRODUCTION.md``.
"""

from .runner import Entry, Suite, find_suite, list_suites, load_suite, render_report, run_suite
from .verdicts import evaluate_claims, load_claims, write_reproduction

__all__ = ["Entry", "Suite", "find_suite", "list_suites", "load_suite", "render_report", "run_suite",
           "evaluate_claims", "load_claims", "write_reproduction"]
