"""Where our figures miss the papers' by more than 2 points, and the experiments on why.

``benchmarks/diagnoses.toml`` lists the experiments as data (its header gives the fields): each
changes one thing about a model (its vectors, tokeniser, stopping rule, epoch cap, optimiser)
on the same splits and seeds as the model it is paired with, or sets a model against another
published figure. This module measures each from the committed results JSON alone, and
``format_gaps`` writes REPRODUCTION.md's last section: every ``within`` claim whose mean misses
the paper's figure by more than 2 points, with the experiments that bear on it, then every
experiment's rows. Nothing in it is a reading written by hand: the question and the change
come from the file, the differences and p-values are computed here.

Tests: paired rows, a paired t over the seeds both sides ran (two-sided; ``scipy.stats.ttest_rel``
gives the same p); reference rows, a one-sample t of the seeds against the figure (two-sided),
with the TOST p of lying within ±2 points of it; ``unit = "dataset"``, a paired t over the
datasets of each one's mean difference over the seeds both ran there (with a reference, of
each one's mean minus its figure, with the TOST p). Beside a row over datasets, not replacing its
test: the fixed-domain reading (as the verdicts'), one value per seed that every dataset ran (with a
baseline, that the baseline ran too), its average difference over the datasets, one-sample t over
those seeds (df = seeds - 1), with p's of the same kinds as the row's. When every unit gives
the same difference, t is undefined and no p is shown. A variant with ``choose_on_dev`` is a
setting chosen per dataset and seed on dev among several entries (papers that set a
hyper-parameter "according to datasets"): each seed takes the test accuracy of the entry whose
kept epoch scored the best dev accuracy, so the choice never sees the test set. A variant with
``choose_on_test`` is the same choice made on the test set itself: each seed takes the highest
test accuracy among the entries. It is not a figure of ours but a measure of selection on test:
what a paper that "tuned [its settings] to achieve the best performance" without a dev set
would report, had it tried those settings; its excess over the dev choice is that selection's
optimism. A variant with ``epoch_on_test`` is its entry's runs read at the epoch with the highest
test accuracy instead of the one dev kept (the runs' ``test_curve``, recorded by entries with
``test_curve = true``): the same selection on test, of the epoch; with ``choose_on_test`` too,
of the setting and its epoch together.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Sequence

# The verdicts' own series, statistics and cell formats, so that the two sections read alike.
from ..artifacts import write_figure
from .report import read_committed
from .verdicts import (CONTRADICTED, DASH, FIXED_DOMAIN, INCONCLUSIVE, SUPPORTED, UNTESTABLE, Claim, Verdict,
                       _average_by_seed, _cell, _finite, _fmt, _fmt_p, _fmt_series, _mean, _one_sample, _p_is, _paired,
                       _Results, _seeds_all_ran, _series, _Series, _T, load_claims)

DEFAULT_DIAGNOSES = Path("benchmarks/diagnoses.toml")
GAP = 2.0  # points: the bar for a gap that needs an experiment
# Where `textcls benchmark --verdicts` draws plot_within_figures, relative to REPRODUCTION.md.
FIGURE_LINK = "results/reproduction.png"
WITHIN = 2.0  # points: the TOST margin of a reference row


@dataclass
class Diagnosis:
    """One experiment of ``benchmarks/diagnoses.toml`` (see its header)."""

    id: str
    question: str
    change: str
    suite: str
    variant: str
    datasets: list
    baseline: str | None = None
    baseline_suite: str | None = None
    reference: dict = field(default_factory=dict)
    reference_source: str | None = None
    unit: str = "seed"
    bears_on: list = field(default_factory=list)
    choose_on_dev: list = field(default_factory=list)
    choose_on_test: list = field(default_factory=list)
    epoch_on_test: bool = False

    def __post_init__(self):
        if (self.baseline is None) == (not self.reference):
            raise ValueError(f"diagnosis {self.id}: give a baseline or a reference, one of the two")
        if self.reference and set(self.datasets) - set(self.reference):
            raise ValueError(f"diagnosis {self.id}: no reference figure for {sorted(set(self.datasets) - set(self.reference))}")
        if self.unit not in ("seed", "dataset"):
            raise ValueError(f"diagnosis {self.id}: unit must be 'seed' or 'dataset', not {self.unit!r}")
        if not self.datasets:
            raise ValueError(f"diagnosis {self.id}: no datasets")
        if self.choose_on_dev and self.choose_on_test:
            raise ValueError(f"diagnosis {self.id}: give choose_on_dev or choose_on_test, not both")
        if self.epoch_on_test and self.choose_on_dev:
            raise ValueError(f"diagnosis {self.id}: epoch_on_test selects on test; with choose_on_dev the two "
                             "selections would read different splits (use choose_on_test)")
        for name in ("choose_on_dev", "choose_on_test"):
            if getattr(self, name) and len(getattr(self, name)) < 2:
                raise ValueError(f"diagnosis {self.id}: {name} needs two entries or more to choose among")

    @property
    def chosen_among(self) -> list:
        """The entries the variant is chosen among per dataset and seed (on dev or on test), or []."""
        return self.choose_on_dev or self.choose_on_test

    def bears_on_claim(self, claim_id: str, dataset: str | None) -> bool:
        """Whether this experiment is about ``claim_id`` (on ``dataset``: a figures block's claim)."""
        return claim_id in self.bears_on or (dataset is not None and any(
            claim_id == f"{b}.{dataset}" for b in self.bears_on))

    @property
    def command(self) -> str:
        suites = [self.suite] + ([self.baseline_suite] if self.baseline_suite else [])
        return "; ".join(f"textcls benchmark --suite {s} --output-dir benchmarks/results" for s in suites)


@dataclass
class FixedDomain:
    """A row over datasets read for these datasets only (verdicts' fixed-domain reading): each seed
    that every dataset ran gives its average difference over them, one run of the whole average.
    The row's test takes the datasets' spread as the error; this one, training noise. Shown beside
    the row's test, never replacing it. ``t`` is None with fewer than 2 such seeds."""

    seeds: list
    t: _T | None = None
    p: float | None = None  # two-sided, as the row's
    p_within: float | None = None  # with a reference: the TOST p of lying within ±WITHIN, as the row's


@dataclass
class Row:
    """One dataset of a diagnosis (or, with unit = dataset, all of them): its cells and test."""

    diagnosis: Diagnosis
    dataset: str
    baseline: str = DASH
    variant: str = DASH
    delta: float | None = None
    se: float | None = None
    n: int = 0
    p: float | None = None
    p_within: float | None = None
    missing: str | None = None
    fixed_domain: FixedDomain | None = None  # rows over datasets only

    def short(self) -> str:
        """``Δ +1.50 (p 0.004, n=5)``, or why there is none."""
        if self.missing:
            return f"not run yet ({self.missing})"
        against = "" if self.diagnosis.baseline else " against the published figure"
        p = f"p {_fmt_p(self.p)}" if self.p is not None else "no test"
        return f"Δ {_fmt(self.delta, signed=True)}{against} ({p}, n={self.n})"


_KEYS = {f.name for f in fields(Diagnosis)}


def load_diagnoses(path: str | Path | None = None, claims: str | Path | Sequence[Claim] | None = None
                   ) -> list[Diagnosis]:
    """The experiments of a diagnoses TOML file (default ``benchmarks/diagnoses.toml``).

    A ``reference`` given as a name is looked up, so that a published table is written once:
    first among the file's own ``[published.<name>]`` tables (another paper's figures, with their
    ``source``), then among ``claims``' paper figures (a ``[[figures]]`` id, or a ``unit =
    "dataset"`` claim's per-dataset figures), by default those of the ``claims.toml`` beside the
    file."""
    path = Path(path) if path is not None else _default_path()
    data = read_committed(path, tomllib.loads)
    published = data.get("published", {})
    claim_figures: dict | None = None  # read only when a reference names a claim
    diagnoses = []
    for block in data.get("diagnosis", []):
        unknown = set(block) - _KEYS
        if unknown:
            raise ValueError(f"{path}: diagnosis {block.get('id')}: unknown keys {sorted(unknown)}")
        name = block.get("reference")
        if isinstance(name, str):
            if name in published:
                table = published[name]
            else:
                if claim_figures is None:
                    claim_figures = _paper_figures_by_claim(_claims_for(path, claims))
                table = {"figures": claim_figures.get(name)}
            if table.get("figures") is None:
                raise ValueError(f"{path}: diagnosis {block.get('id')}: reference {name!r} is neither a "
                                 "[published] table of this file nor a claim with per-dataset paper figures")
            datasets = block.get("datasets", [])
            lacking = [d for d in datasets if d not in table["figures"]]
            if lacking:
                raise ValueError(f"{path}: diagnosis {block.get('id')}: reference {name!r} has no figure for {lacking}")
            block = {**block, "reference": {d: table["figures"][d] for d in datasets}}
            if table.get("source"):
                block.setdefault("reference_source", table["source"])
        diagnoses.append(Diagnosis(**block))
    ids = [d.id for d in diagnoses]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise ValueError(f"{path}: diagnosis id {twice[0]} appears twice")
    return diagnoses


def _claims_for(path: Path, claims: str | Path | Sequence[Claim] | None) -> Sequence[Claim]:
    """``claims`` as Claims: a claims file's, or by default those of the claims.toml beside ``path``."""
    if claims is None:
        beside = path.parent / "claims.toml"
        return load_claims(beside if beside.is_file() else None)
    return load_claims(claims) if isinstance(claims, (str, Path)) else claims


def _paper_figures_by_claim(claims: Sequence[Claim]) -> dict[str, dict]:
    """Claim id -> {dataset: the paper's figure}: a ``[[figures]]`` block by its id (its
    expanded claims are ``<id>.<dataset>``), a ``unit = "dataset"`` claim by its own."""
    figures: dict[str, dict] = {}
    for c in claims:
        if c.paper_figures:
            figures[c.id] = dict(c.paper_figures)
        elif c.kind == "within" and c.paper_figure is not None and len(c.datasets) == 1:
            block, dataset = c.id.rsplit(".", 1)
            if dataset == c.datasets[0]:
                figures.setdefault(block, {})[dataset] = c.paper_figure
    return figures


def _default_path() -> Path:
    if DEFAULT_DIAGNOSES.is_file():
        return DEFAULT_DIAGNOSES
    # A source checkout: <repo>/src/textcls/benchmark/gaps.py -> <repo>/benchmarks/diagnoses.toml
    return Path(__file__).resolve().parents[3] / DEFAULT_DIAGNOSES


def _two_sided(t: _T, center: float = 0.0) -> float | None:
    if t.se == 0:
        return None  # the same difference on every unit: t is undefined
    return min(1.0, 2 * min(t.p_greater(center), t.p_less(center)))


def measure(diagnosis: Diagnosis, results: _Results) -> list[Row]:
    """The diagnosis's rows: one per dataset, or one over all its datasets with unit = dataset."""
    variant_result = results.get(diagnosis.suite)
    baseline_result = results.get(diagnosis.baseline_suite or diagnosis.suite)
    if diagnosis.unit == "dataset":
        return [_over_datasets(diagnosis, baseline_result, variant_result)]
    return [_one_dataset(diagnosis, dataset, baseline_result, variant_result) for dataset in diagnosis.datasets]


def _missing(suite: str, result: dict | None, name: str, dataset: str) -> str:
    return f"`{suite}` has no results JSON" if result is None else f"`{suite}` has no {name} on {dataset}"


def _variant_series(d: Diagnosis, result: dict | None, dataset: str) -> _Series | None:
    """The variant's test accuracies on ``dataset`` by seed: its entry's, or with
    ``choose_on_dev`` / ``choose_on_test`` those of the entries ``_choice`` picks."""
    if result is None:
        return None
    if d.epoch_on_test and not d.choose_on_test:
        return _epoch_on_test_series(result, d.variant, dataset)
    if not d.chosen_among:
        return _series(result, d.variant, dataset, "accuracy")
    candidates, chosen = _choice(d, result, dataset)
    values = {seed: candidates[i].values[seed] for seed, i in chosen.items()}
    return _Series(d.variant, dataset, values, candidates[0].entry) if values else None


def _epoch_on_test_series(result: dict, name: str, dataset: str) -> _Series | None:
    """``name``'s runs on ``dataset`` read at their epoch of highest test accuracy, in %: each
    run's accuracy plus what its best test epoch scored over the epoch dev kept, both read off
    its ``test_curve`` (the curve is the engine's pass, the accuracy the prediction path's, which
    may differ by a document: the difference keeps the two on one path). Only runs whose curve
    covers every epoch they ran with a finite score (not one resumed from a checkpoint made
    without it); None when there is none."""
    series = _series(result, name, dataset, "accuracy")
    if series is None or series.per_task:
        return None
    values = {}
    for run in series.entry["runs"]:
        curve, kept = run.get("test_curve") or [], run.get("best_epoch")
        whole = len(curve) == run.get("epochs_run") and all(_finite(a) for a in curve)
        if run["seed"] in series.values and whole and kept and 1 <= kept <= len(curve):  # values: ok runs only
            values[run["seed"]] = series.values[run["seed"]] + 100.0 * (max(curve) - curve[kept - 1])
    return _Series(name, dataset, values, series.entry) if values else None


def _choice(d: Diagnosis, result: dict, dataset: str) -> tuple[list[_Series], dict[int, int]]:
    """The candidates on ``dataset`` and, per seed, the index of the one chosen: on dev
    (``_dev_choice``) or, with ``choose_on_test``, on test (``_test_choice``)."""
    return _test_choice(d, result, dataset) if d.choose_on_test else _dev_choice(d, result, dataset)


def _test_choice(d: Diagnosis, result: dict, dataset: str) -> tuple[list[_Series], dict[int, int]]:
    """``choose_on_test``'s entries on ``dataset`` and, for each seed that every one of them ran,
    the index of the one with the highest test accuracy (ties: the first listed); with
    ``epoch_on_test``, each read at its best test epoch, so setting and epoch are chosen together.
    This choice sees the test set on purpose (the module's docstring says what it measures)."""
    candidates = [_epoch_on_test_series(result, name, dataset) if d.epoch_on_test
                  else _series(result, name, dataset, "accuracy") for name in d.choose_on_test]
    if any(c is None or c.per_task for c in candidates):
        return [], {}
    seeds = [s for s in sorted(candidates[0].values) if all(s in c.values for c in candidates)]
    return candidates, {s: max(range(len(candidates)), key=lambda i: (candidates[i].values[s], -i)) for s in seeds}


def _dev_choice(d: Diagnosis, result: dict, dataset: str) -> tuple[list[_Series], dict[int, int]]:
    """``choose_on_dev``'s entries on ``dataset`` and, for each seed that every one of them ran
    with a dev score, the index of the one that kept the highest dev accuracy (ties: the lower
    dev loss, then the first listed, as tfidf's grid and static-finetune choose): the choice
    never sees the test set."""
    candidates = [_series(result, name, dataset, "accuracy") for name in d.choose_on_dev]
    if any(c is None or c.per_task for c in candidates):
        return [], {}
    dev = [{run["seed"]: run.get("dev_metrics") or {} for run in c.entry["runs"] if run.get("status") == "ok"}
           for c in candidates]
    seeds = [s for s in sorted(candidates[0].values)
             if all(s in c.values and _finite(scores.get(s, {}).get("accuracy")) for c, scores in zip(candidates, dev))]

    def rank(i: int, seed: int) -> tuple:
        loss = dev[i][seed].get("loss")
        return dev[i][seed]["accuracy"], -(loss if _finite(loss) else math.inf), -i

    return candidates, {s: max(range(len(candidates)), key=lambda i: rank(i, s)) for s in seeds}


def _choice_counts(d: Diagnosis, results: _Results) -> str:
    """How often each of the entries chosen among (on dev or on test) was chosen, over the
    diagnosis's datasets and seeds."""
    result = results.get(d.suite)
    if result is None:
        return "none yet"
    picks = [d.chosen_among[i] for dataset in d.datasets for i in _choice(d, result, dataset)[1].values()]
    if not picks:
        return "none yet"
    return (", ".join(f"{name} {picks.count(name)}" for name in d.chosen_among)
            + f" (of {len(picks)} choices, one a dataset and seed)")


def _missing_variant(d: Diagnosis, result: dict | None, dataset: str) -> str:
    plain = _series(result, d.variant, dataset, "accuracy") if result is not None and d.epoch_on_test else None
    if plain is not None and plain.per_task:
        return (f"{d.variant} on {dataset} is read per task from a multi-task run, whose test_curve pools the tasks; "
                "epoch_on_test needs a single-task entry")
    if plain is not None:
        return (f"no run of {d.variant} on {dataset} recorded a test_curve over every epoch it ran (its entry's "
                "test_curve = true, from the first epoch)")
    if result is None or not d.chosen_among:
        return _missing(d.suite, result, d.variant, dataset)
    absent = [name for name in d.chosen_among if _series(result, name, dataset, "accuracy") is None]
    if absent:
        return _missing(d.suite, result, absent[0], dataset)
    scored = " with a dev score" if d.choose_on_dev else ""
    return f"no seed on which {', '.join(d.chosen_among)} all ran{scored} on {dataset}"


def _one_dataset(d: Diagnosis, dataset: str, baseline_result, variant_result) -> Row:
    row = Row(d, dataset)
    variant = _variant_series(d, variant_result, dataset)
    if variant is None:
        row.missing = _missing_variant(d, variant_result, dataset)
        return row
    row.variant = _fmt_series(variant)
    if d.reference:
        figure = float(d.reference[dataset])
        row.baseline = f"{_fmt(figure)} (published)"
        values = list(variant.values.values())
        row.delta, row.n = variant.mean - figure, len(values)
        if len(values) >= 2:
            t = _one_sample(values, "one-sample")
            row.se, row.p = t.se, _two_sided(t, figure)
            row.p_within = t.tost(WITHIN, center=figure)[0] if t.se else None
        return row
    baseline = _series(baseline_result, d.baseline, dataset, "accuracy") if baseline_result else None
    if baseline is None:
        row.missing = _missing(d.baseline_suite or d.suite, baseline_result, d.baseline, dataset)
        return row
    row.baseline = _fmt_series(baseline)
    seeds = sorted(set(baseline.values) & set(variant.values))
    if not seeds:
        row.missing = f"no seed that both {d.baseline} and {d.variant} ran on {dataset}"
        return row
    diffs = [variant.values[s] - baseline.values[s] for s in seeds]
    row.delta, row.n = _mean(diffs), len(seeds)
    if len(seeds) >= 2:
        t = _paired(diffs, "paired over seeds")
        row.se, row.p = t.se, _two_sided(t)
    return row


def _over_datasets(d: Diagnosis, baseline_result, variant_result) -> Row:
    """With a baseline: each dataset's mean difference over the seeds both ran, paired t over
    the datasets. With a reference (a figure per dataset, as FDU-MTL's per-domain table): each
    dataset's mean over the variant's seeds minus its figure, one-sample t over the datasets,
    with the TOST p of the average lying within ±2 points (as the claims over datasets)."""
    row = Row(d, f"{len(d.datasets)} datasets (average)")
    base_means, variant_means, diffs, seed_counts, missing = [], [], [], [], []
    variants, baselines = [], []  # every dataset's series, for the fixed-domain reading
    for dataset in d.datasets:
        variant = _variant_series(d, variant_result, dataset)
        if d.reference:
            baseline = None
            seeds = sorted(variant.values) if variant else []
        else:
            baseline = _series(baseline_result, d.baseline, dataset, "accuracy") if baseline_result else None
            seeds = sorted(set(baseline.values) & set(variant.values)) if variant and baseline else []
        if not seeds:
            missing.append(dataset)
            continue
        variants.append(variant)
        baselines += [baseline] if baseline is not None else []
        base_means.append(float(d.reference[dataset]) if d.reference else _mean([baseline.values[s] for s in seeds]))
        variant_means.append(_mean([variant.values[s] for s in seeds]))
        diffs.append(variant_means[-1] - base_means[-1])
        seed_counts.append(len(seeds))
    if missing:
        if d.chosen_among:
            among, scored = ("choose_on_dev", " with a dev score") if d.choose_on_dev else ("choose_on_test", "")
            lack = f"a seed on which {'' if d.reference else 'the baseline and '}every entry of {among} ran{scored}"
        elif d.epoch_on_test:
            lack = "a run of the variant with a test_curve" + ("" if d.reference else " on a seed the baseline ran")
        else:
            lack = "a seed of the variant" if d.reference else "a seed both ran"
        row.missing = (f"{len(missing)} of {len(d.datasets)} datasets lack {lack} "
                       f"({', '.join(missing[:3])}{', …' if len(missing) > 3 else ''})")
        return row
    shown = "/".join(str(c) for c in sorted(set(seed_counts)))
    if d.reference:
        row.baseline = f"{_fmt(_mean(base_means))} (published, average)"
        row.variant = f"{_fmt(_mean(variant_means))} ({shown} seed(s) a dataset)"
    else:
        row.baseline = f"{_fmt(_mean(base_means))} ({shown} seed(s) a dataset)"
        row.variant = f"{_fmt(_mean(variant_means))} (the same seeds)"
    row.delta, row.n = _mean(diffs), len(diffs)
    t = _paired(diffs, "paired over datasets")
    row.se, row.p = t.se, _two_sided(t)
    if d.reference and t.se:
        row.p_within = t.tost(WITHIN)[0]
    row.fixed_domain = _fixed_domain(d, variants, baselines)
    return row


def _fixed_domain(d: Diagnosis, variants: Sequence[_Series], baselines: Sequence[_Series]) -> FixedDomain:
    """The fixed-domain reading of a row over datasets (``FixedDomain``): for each seed on which
    every dataset has the variant (and the baseline), the variant's average over the datasets minus
    the published average (a reference) or the baseline's average on that seed (the same as the
    average of the per-dataset differences); a one-sample t over those seeds, and the row's own
    kinds of p: two-sided, and with a reference the TOST p within ±WITHIN."""
    seeds = _seeds_all_ran([*variants, *baselines])
    reading = FixedDomain(seeds)
    if len(seeds) < 2:
        return reading
    if d.reference:
        published = _mean([float(d.reference[dataset]) for dataset in d.datasets])
        against = [published] * len(seeds)
    else:
        against = _average_by_seed(baselines, seeds)
    ours = _average_by_seed(variants, seeds)
    reading.t = _one_sample([o - a for o, a in zip(ours, against)], "one-sample over seeds")
    reading.p = _two_sided(reading.t)
    if d.reference and reading.t.se:
        reading.p_within = reading.t.tost(WITHIN)[0]
    return reading


def _fixed_domain_text(d: Diagnosis, reading: FixedDomain) -> str:
    """The fixed-domain reading as a sentence under its row's table, or why there is none."""
    beside = f"Beside the row's test, not replacing it, {FIXED_DOMAIN}"
    runs = "the variant" + ("" if d.reference else " and the baseline")
    if reading.t is None:
        on = f"only seed {reading.seeds[0]}" if reading.seeds else "none"
        return f"{beside}: none, it needs 2 seeds on which every dataset ran {runs} ({on})."
    t = reading.t
    minus = "minus the published average" if d.reference else "of the variant minus the baseline"
    seeds = ", ".join(map(str, reading.seeds))
    what = (f"each seed's average over the {len(d.datasets)} datasets {minus}, seeds {seeds}: "
            f"Δ {_fmt(t.est, signed=True)} ± {_fmt(t.se)} s.e., df {t.df}")
    if reading.p is None:
        return f"{beside} ({what}): no test, every seed gave the same difference."
    within = f"; TOST {_p_is(reading.p_within)} (within ±{WITHIN:g})" if d.reference else ""
    return f"{beside} ({what}): {_p_is(reading.p)} (two-sided){within}."


@dataclass
class Gap:
    """A tested ``within`` claim's figure beside the paper's (``within_figures``); ``find_gaps``
    keeps those more than ``GAP`` points off and attaches the experiments on them (``rows``)."""

    verdict: Verdict
    dataset: str | None  # None: an average over datasets
    ours: float
    paper: float
    rows: list = field(default_factory=list)


def within_figures(verdicts: Sequence[Verdict], results: _Results) -> list[Gap]:
    """Every tested ``within`` claim's figure beside the paper's (an average over datasets for
    ``unit = "dataset"``), with no experiments attached."""
    figures = []
    for v in verdicts:
        claim = v.claim
        if claim.kind != "within" or v.verdict == UNTESTABLE or v.suite is None:
            continue
        result = results.get(v.suite)
        if claim.unit == "dataset":
            series = [_series(result, claim.model, d, claim.metric) for d in claim.datasets]
            ours, dataset = _mean([s.mean for s in series]), None
            paper = (claim.paper_figure if claim.paper_figure is not None
                     else _mean([claim.paper_figures[d] for d in claim.datasets]))
        else:
            dataset = claim.datasets[0]
            ours, paper = _series(result, claim.model, dataset, claim.metric).mean, claim.paper_figure
        figures.append(Gap(v, dataset, ours, paper))
    return figures


def find_gaps(verdicts: Sequence[Verdict], results: _Results, rows: Sequence[Row]) -> list[Gap]:
    """The tested ``within`` claims more than ``GAP`` points from the paper, each with the rows
    of the experiments that bear on it (on its dataset)."""
    gaps = []
    for gap in within_figures(verdicts, results):
        if abs(gap.ours - gap.paper) <= GAP:
            continue
        gap.rows = _rows_on(rows, gap.verdict.claim.id, gap.dataset)
        gaps.append(gap)
    return gaps


def _rows_on(rows: Sequence[Row], claim_id: str, dataset: str | None) -> list[Row]:
    """The experiments' rows about a claim (on its dataset, for a one-dataset figure)."""
    return [r for r in rows if r.diagnosis.bears_on_claim(claim_id, dataset) and (dataset is None or r.dataset == dataset)]


VERDICT_COLORS = {SUPPORTED: "C2", CONTRADICTED: "C3", INCONCLUSIVE: "C1"}


def short_id(claim) -> str:
    """A claim id without its paper and table (``spe_cnn.t3.spe-cnn.mr`` -> ``spe-cnn.mr``): the
    plot's marker gives the paper."""
    return claim.id.split(".", 2)[-1]


PAPER_MARKERS = ("o", "s", "^", "D", "v", "P")


def plot_within_figures(figures: Sequence[Gap], path: str | Path) -> Path:
    """Our figure against the paper's, one point per tested ``within`` claim (colour: its verdict;
    marker: its paper), with the line of equality and the band of ±``GAP`` points; the points
    outside the band are the gap table's rows and carry their claim ids (``short_id``)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9.5, 9.0), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    values = [x for g in figures for x in (g.ours, g.paper)] or [0.0, 100.0]
    low, high = min(values) - 3, max(values) + 3
    band = ax.fill_between([low, high], [low - GAP, high - GAP], [low + GAP, high + GAP], color="0.9",
                           label=f"within {GAP:g} points of the paper")
    ax.plot([low, high], [low, high], color="0.5", linewidth=0.8)
    papers = list(dict.fromkeys(g.verdict.claim.paper for g in figures))
    for g in figures:
        claim, verdict = g.verdict.claim, g.verdict.verdict
        marker = PAPER_MARKERS[papers.index(claim.paper) % len(PAPER_MARKERS)]
        ax.scatter([g.paper], [g.ours], color=VERDICT_COLORS.get(verdict, "0.4"), marker=marker, s=36,
                   edgecolors="black", linewidths=0.4, zorder=3)
        if abs(g.ours - g.paper) > GAP:
            ax.annotate(short_id(claim), (g.paper, g.ours), xytext=(4, -2), textcoords="offset points", fontsize=6,
                        color="0.25")
    verdicts = {g.verdict.verdict for g in figures}
    handles = [ax.scatter([], [], color=color, marker="o", label=verdict)
               for verdict, color in VERDICT_COLORS.items() if verdict in verdicts]
    handles += [ax.scatter([], [], color="white", edgecolors="black", marker=PAPER_MARKERS[i % len(PAPER_MARKERS)],
                           label=paper) for i, paper in enumerate(papers)]
    ax.legend(handles=[band] + handles, loc="upper left", fontsize=8)
    ax.set_xlim(low, high)
    ax.set_ylim(low, high)
    ax.set_aspect("equal")
    ax.set_xlabel("the paper's figure (%)")
    ax.set_ylabel("ours (%, mean over seeds)")
    ax.grid(True, alpha=0.3)
    outside = sum(1 for g in figures if abs(g.ours - g.paper) > GAP)
    ax.set_title(f"Our figures against the papers': {len(figures)} tested claims, {outside} more than "
                 f"{GAP:g} points off\n(textcls benchmark --verdicts; REPRODUCTION.md's gap table lists "
                 "the experiments on them)", fontsize=10)
    fig.tight_layout()
    return write_figure(Path(path), fig)


def _other_claims(verdicts: Sequence[Verdict], gaps: Sequence[Gap], rows: Sequence[Row]) -> list[str]:
    """The table of the claims that are not gaps (orderings, figures within 2 points) with the
    experiments that bear on them, so that a verdict read on one setting shows what another did."""
    gap_ids = {g.verdict.claim.id for g in gaps}
    table = []
    for v in verdicts:
        claim = v.claim
        if claim.id in gap_ids:
            continue
        dataset = claim.datasets[0] if claim.kind == "within" and claim.unit != "dataset" else None
        mine = _rows_on(rows, claim.id, dataset)
        if mine:
            tried = "; ".join(f"`{r.diagnosis.id}` ({r.dataset}): {r.short()}" for r in mine)
            table.append("| " + " | ".join(_cell(c) for c in (f"`{claim.id}`", f"**{v.verdict}**", tried)) + " |")
    if not table:
        return []
    return ["", "### Experiments on the other claims", "",
            "Experiments bear on orderings and on figures within 2 points too. A verdict is read on the runs "
            "its claim names; these rows show what the same comparison gave with one thing changed, and do "
            "not change it.", "", "| claim id | verdict | experiments on it |", "|---|---|---|", *table]


def _choice_rule(d: Diagnosis) -> str:
    """How a chosen variant is chosen, for its section's variant line ('' for a plain entry)."""
    if d.choose_on_dev:
        return (f" (per dataset and seed, whichever of {', '.join(d.choose_on_dev)} kept the highest dev accuracy;"
                " ties: the lower dev loss, then the first listed)")
    if d.choose_on_test:
        at = " at its epoch of highest test accuracy (its test_curve)" if d.epoch_on_test else ""
        return (f" (per dataset and seed, whichever of {', '.join(d.choose_on_test)} scored the highest test"
                f" accuracy{at}; ties: the first listed; a selection on the test set, not a figure of ours)")
    if d.epoch_on_test:
        return (" read at each run's epoch of highest test accuracy (its test_curve), not the epoch dev kept;"
                " a selection on the test set, not a figure of ours")
    return ""


def format_gaps(verdicts: Sequence[Verdict], results_dir: str | Path,
                diagnoses: Sequence[Diagnosis]) -> list[str]:
    """REPRODUCTION.md's section on the gaps and the experiments on them (Markdown lines)."""
    results = _Results(Path(results_dir))
    rows = [row for d in diagnoses for row in measure(d, results)]
    gaps = find_gaps(verdicts, results, rows)
    lines = ["## Gaps of more than 2 points, and the experiments on them", "",
             "Generated with the verdicts from `benchmarks/diagnoses.toml` (the experiments, as data) and the "
             "same JSON. Each experiment changes one thing on the same splits and seeds as the model it is "
             "paired with (Δ = the change minus the model, paired t over seeds, two-sided), or sets a model "
             "against a published figure (one-sample t, two-sided, and the TOST p of lying within "
             f"±{WITHIN:g} points). Under a row over datasets (its test: t over the datasets, whose spread is "
             f"the error), {FIXED_DOMAIN} takes training noise as the error instead: each seed that every "
             "dataset ran gives its average difference over them, one-sample t over those seeds (df = seeds − 1), "
             "shown beside the row's test and not replacing it. An experiment is listed under a gap when it "
             "is about that model and dataset; Δs of different experiments do not add up.", "",
             f"{len(gaps)} of our figures miss the paper's by more than {GAP:g} points; "
             f"{sum(1 for g in gaps if any(not r.missing for r in g.rows))} have an experiment on them.", "",
             f"![every tested figure of ours against the paper's]({FIGURE_LINK})", "",
             "| claim id | ours | paper | Δ | experiments on it |", "|---|---|---|---|---|"]
    for g in gaps:
        tried = "; ".join(f"`{r.diagnosis.id}`: {r.short()}" for r in g.rows) or "none yet"
        lines.append("| " + " | ".join(_cell(c) for c in (
            f"`{g.verdict.claim.id}`", _fmt(g.ours), _fmt(g.paper), _fmt(g.ours - g.paper, signed=True), tried)) + " |")
    lines += _other_claims(verdicts, gaps, rows)
    lines += ["", "### The experiments", ""]
    for d in diagnoses:
        mine = [r for r in rows if r.diagnosis is d]
        against = "published figure" if d.reference else f"{d.baseline} (baseline)"
        lines += [f"#### `{d.id}`", "", _cell(d.question), "",
                  f"- change: {_cell(d.change)}",
                  f"- variant: {d.variant}{_choice_rule(d)} in `{d.suite}`; against: "
                  + (f"{_cell(d.reference_source or 'a published figure')}" if d.reference
                     else f"{d.baseline} in `{d.baseline_suite or d.suite}`"),
                  *([f"- chosen on {'dev' if d.choose_on_dev else 'test'}: {_choice_counts(d, results)}"]
                    if d.chosen_among else []),
                  f"- bears on: {', '.join(f'`{b}`' for b in d.bears_on) or DASH}",
                  f"- rerun: `{d.command}`", "",
                  f"| dataset | {against} | {d.variant} | Δ ± s.e. | n | p (two-sided) |"
                  + (f" p (within ±{WITHIN:g}) |" if d.reference else ""),
                  "|---|---|---|---|---|---|" + ("---|" if d.reference else "")]
        for r in mine:
            if r.missing:
                cells = [r.dataset, f"not run yet: {r.missing}", DASH, DASH, DASH, DASH] + ([DASH] if d.reference else [])
            else:
                spread = f" ± {_fmt(r.se)}" if r.se is not None else ""
                cells = [r.dataset, r.baseline, r.variant, f"{_fmt(r.delta, signed=True)}{spread}", str(r.n),
                         _fmt_p(r.p)] + ([_fmt_p(r.p_within)] if d.reference else [])
            lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
        lines.append("")
        lines += [line for r in mine if r.fixed_domain for line in (_fixed_domain_text(d, r.fixed_domain), "")]
    return lines
