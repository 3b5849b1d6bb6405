"""Benchmarks: textcls models side by side with the tools people use, on the same splits.

``run_suite("quick")`` runs ``benchmarks/suites/quick.toml`` (each run in its own child
process) and writes ``quick.{json,md,png}`` into a fresh ``runs/benchmarks/quick_<time>/``
(``output_dir="benchmarks/results"`` rewrites the committed results); ``textcls benchmark
--suite quick [--output-dir DIR]`` does the same from the shell, and ``render_report``
(``--render --output-dir DIR``) rewrites the Markdown and plot from the JSON without running
anything. Peers (fastText, MiniLM + logistic regression) live in
``peers``; the machine and version stamp in ``system``; tables and plots in ``report``;
``write_reproduction`` (``reproduction``) checks every claim of the papers against the committed
JSON and writes ``benchmarks/REPRODUCTION.md``, with the gaps to the papers and the
experiments on them (``gaps``).
"""

from .. import lazy_attributes

_LAZY = {
    "Entry": "runner",
    "Suite": "runner",
    "find_suite": "runner",
    "list_suites": "runner",
    "load_suite": "runner",
    "render_report": "runner",
    "run_suite": "runner",
    "evaluate_claims": "verdicts",
    "load_claims": "verdicts",
    "write_reproduction": "reproduction",
}

__all__ = sorted(_LAZY)
__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)
