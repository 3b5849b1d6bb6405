"""REPRODUCTION.md: every claim's verdict (``verdicts``), how far each full suite has run
(``progress``), then the gaps to the papers and the experiments on them (``gaps``), written
from the committed JSON alone by ``textcls benchmark --verdicts``."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from ..artifacts import atomic_write_bytes
from ..errors import DataError
from .gaps import format_gaps, load_diagnoses, plot_within_figures, within_figures
from .progress import format_progress, full_suite_progress
from .verdicts import DEFAULT_CLAIMS, Claim, _Results, evaluate_claims, format_reproduction, suites_dir_for, update_readme_summary

__all__ = ["write_reproduction"]


def write_reproduction(results_dir: str | Path = Path("benchmarks/results"),
                       out: str | Path = Path("benchmarks/REPRODUCTION.md"),
                       claims: str | Path | Sequence[Claim] | None = None,
                       suites_dir: str | Path | None = None, readme: str | Path | None = None,
                       diagnoses: str | Path | Sequence | None = None, figure: str | Path | None = None) -> Path:
    """Evaluate every claim against the JSON in ``results_dir`` and write the Markdown to
    ``out`` (atomically), and the per-paper table into ``readme``'s marked block when given;
    returns ``out``. ``diagnoses``: the experiments on the gaps (``gaps.Diagnosis`` objects or
    their TOML file; default ``benchmarks/diagnoses.toml``), measured in the page's last
    section. ``figure``: where to draw every tested figure of ours against the paper's
    (``gaps.plot_within_figures``; the page links ``results/reproduction.png``). After the summary,
    how far each ``*_full.toml`` suite of ``suites_dir`` (default ``results_dir``'s sibling
    ``suites``) has run (``progress``). Deterministic: the same claims, suites and JSON give the
    same Markdown."""
    verdicts = evaluate_claims(results_dir, claims, suites_dir=suites_dir)
    if diagnoses is None or isinstance(diagnoses, (str, Path)):
        diagnoses = load_diagnoses(diagnoses)
    out = Path(out)
    in_claims = list(dict.fromkeys(v.suite for v in verdicts if v.suite))  # the page's order of the papers
    progress = full_suite_progress(Path(results_dir), suites_dir_for(results_dir, suites_dir), first=in_claims)
    text = format_reproduction(verdicts, format_gaps(verdicts, results_dir, diagnoses), format_progress(progress),
                               claims_source=_claims_source(claims, out))
    # Whatever can fail is checked before the first file is written: all three files, or none.
    if figure is not None and Path(figure).is_dir():
        raise DataError(f"{figure}: is a folder; the figure is written there as a file, remove or rename the folder")
    if readme is not None:
        try:
            Path(readme).read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise DataError(f"{readme}: not UTF-8 ({exc.reason} at byte {exc.start}); fix the file, which receives "
                            "the verdict table") from None
    atomic_write_bytes(out, text.encode("utf-8"))
    if figure is not None:
        plot_within_figures(within_figures(verdicts, _Results(Path(results_dir))), figure)
    if readme is not None:
        update_readme_summary(readme, verdicts)
    return out


def _claims_source(claims, out: Path) -> str:
    """How the page's header names its claims: ``benchmarks/claims.toml`` for the claims beside
    it, the default or claims given as objects (the project's page stays byte for byte as it
    was), else the file's full path."""
    path = Path(claims) if isinstance(claims, (str, Path)) else None
    if path is None or path.resolve() == (out.parent / "claims.toml").resolve():
        return str(DEFAULT_CLAIMS)
    return str(path.resolve())
