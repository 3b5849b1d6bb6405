"""The gaps to the papers and the experiments on them (textcls.benchmark.gaps) on small hand-made
results JSON, and benchmarks/diagnoses.toml against the suites and claims it names."""

from __future__ import annotations

import json
import math
import statistics
import tomllib
from pathlib import Path

import pytest
from scipy import stats

from textcls.benchmark.gaps import Diagnosis, _choice_counts, format_gaps, load_diagnoses, measure
from textcls.benchmark.verdicts import Claim, _Results, evaluate_claims, load_claims
from tolerance import approx32

ROOT = Path(__file__).resolve().parents[1]
SUITES = ROOT / "benchmarks" / "suites"

BASE = [0.801, 0.815, 0.806, 0.799, 0.812]
CHANGED = [0.821, 0.829, 0.831, 0.815, 0.830]  # about 2 points above BASE, seed by seed


def _entry(name, dataset, accuracies, seeds=None):
    seeds = seeds if seeds is not None else list(range(len(accuracies)))
    return {"id": f"{dataset}:{name}", "dataset": dataset, "model": name, "name": name, "status": "ok",
            "max_per_split": None, "seeds": seeds,
            "runs": [{"seed": s, "status": "ok", "accuracy": a} for s, a in zip(seeds, accuracies)]}


def _write(results_dir: Path, suite: str, entries: list[dict]) -> None:
    results_dir.mkdir(parents=True, exist_ok=True)
    (results_dir / f"{suite}.json").write_text(json.dumps({"suite": suite, "entries": entries}), encoding="utf-8")


@pytest.fixture
def results(tmp_path):
    out = tmp_path / "results"
    _write(out, "toy", [
        _entry("model", "mr", BASE), _entry("model-changed", "mr", CHANGED),
        _entry("model", "trec", [0.90, 0.91, 0.92]), _entry("model-same", "trec", [0.91, 0.92, 0.93]),
        _entry("model", "d1", [0.70, 0.72]), _entry("model-changed", "d1", [0.74, 0.75]),
        _entry("model", "d2", [0.60]), _entry("model-changed", "d2", [0.61]),
    ])
    _write(out, "later", [_entry("model", "mr", [0.83, 0.84, 0.85], seeds=[0, 1, 7])])
    return out


def _diagnosis(**kw) -> Diagnosis:
    base = dict(id="toy", question="q?", change="c", suite="toy", variant="model-changed", baseline="model",
                datasets=["mr"], bears_on=["toy.figure"])
    base.update(kw)
    return Diagnosis(**base)


def test_a_paired_change_is_the_mean_difference_with_the_two_sided_paired_t(results):
    [row] = measure(_diagnosis(), _Results(results))
    assert row.delta == approx32(100 * (sum(CHANGED) - sum(BASE)) / 5) and row.n == 5
    assert row.p == approx32(stats.ttest_rel(CHANGED, BASE).pvalue)
    assert row.missing is None and row.short().startswith("Δ +1.86 (p <0.001, n=5)")


def test_a_change_on_another_suite_pairs_only_the_seeds_both_ran(results):
    [row] = measure(_diagnosis(suite="later", variant="model", baseline_suite="toy"), _Results(results))
    later, base = [83, 84], [100 * a for a in BASE[:2]]
    assert row.n == 2 and row.delta == approx32((later[0] - base[0] + later[1] - base[1]) / 2)
    assert row.p == approx32(stats.ttest_rel(later, base).pvalue)


def test_the_same_difference_on_every_seed_has_no_p(results):
    [row] = measure(_diagnosis(variant="model-same", datasets=["trec"]), _Results(results))
    assert row.delta == approx32(1.0) and row.p is None and "no test" in row.short()


def test_a_reference_row_tests_the_seeds_against_the_published_figure(results):
    [row] = measure(_diagnosis(baseline=None, variant="model", reference={"mr": 79.0}), _Results(results))
    values = [100 * a for a in BASE]
    assert row.delta == approx32(sum(values) / 5 - 79.0)
    assert row.p == approx32(stats.ttest_1samp(values, 79.0).pvalue)
    below = stats.ttest_1samp(values, 79.0 - 2, alternative="greater").pvalue
    above = stats.ttest_1samp(values, 79.0 + 2, alternative="less").pvalue
    assert row.p_within == approx32(max(below, above))
    assert "against the published figure" in row.short()


def test_unit_dataset_pairs_the_datasets_means_over_their_shared_seeds(results):
    [row] = measure(_diagnosis(datasets=["d1", "d2"], unit="dataset"), _Results(results))
    diffs = [(74 + 75) / 2 - (70 + 72) / 2, 61 - 60]
    assert row.n == 2 and row.delta == approx32(sum(diffs) / 2)
    assert row.p == approx32(stats.ttest_1samp(diffs, 0).pvalue)


def test_unit_dataset_with_a_reference_tests_the_datasets_means_against_their_figures(results):
    figures = {"d1": 70.0, "d2": 62.5}
    [row] = measure(_diagnosis(baseline=None, reference=figures, datasets=["d1", "d2"], unit="dataset"),
                    _Results(results))
    diffs = [(74 + 75) / 2 - 70.0, 61 - 62.5]  # every seed of the variant, not only shared ones
    assert row.n == 2 and row.delta == approx32(sum(diffs) / 2)
    assert row.p == approx32(stats.ttest_1samp(diffs, 0).pvalue)
    below = stats.ttest_1samp(diffs, -2, alternative="greater").pvalue
    above = stats.ttest_1samp(diffs, 2, alternative="less").pvalue
    assert row.p_within == approx32(max(below, above))
    assert row.baseline == "66.25 (published, average)" and row.variant.startswith("67.75")


# Two datasets whose seeds differ: 3 is on d1 only and 4 on d2's baseline only, so each dataset's
# row mean uses its own seeds while the fixed-domain reading keeps seeds 0-2, the ones every dataset
# ran (with a baseline, the baseline too).
_FIXED_VARIANT = {"d1": ([0.74, 0.75, 0.73, 0.60], [0, 1, 2, 3]), "d2": ([0.61, 0.63, 0.62], [0, 1, 2])}
_FIXED_BASELINE = {"d1": ([0.72, 0.74, 0.72], [0, 1, 2]), "d2": ([0.61, 0.60, 0.60, 0.50], [0, 1, 2, 4])}
_FIXED_FIGURES = {"d1": 72.0, "d2": 63.0}


def _fixed_domain_results(tmp_path) -> _Results:
    out = tmp_path / "fixed"
    tables = (("model-changed", _FIXED_VARIANT), ("model", _FIXED_BASELINE))
    _write(out, "toy", [_entry(name, d, runs, seeds=seeds)
                        for name, table in tables for d, (runs, seeds) in table.items()])
    return _Results(out)


def _by_seed(table: dict, seed: int) -> float:
    """A seed's accuracy averaged over the datasets, in %."""
    return statistics.mean(100 * runs[seeds.index(seed)] for runs, seeds in table.values())


def test_a_reference_row_over_datasets_shows_the_fixed_domain_reading_over_seeds_beside_its_test(tmp_path):
    results = _fixed_domain_results(tmp_path)
    d = _diagnosis(baseline=None, reference=_FIXED_FIGURES, datasets=["d1", "d2"], unit="dataset")
    [row] = measure(d, results)
    # the row's test is unchanged: each dataset's mean over all its seeds (d1's seed 3 too) minus its figure
    diffs = [100 * statistics.mean(runs) - _FIXED_FIGURES[name] for name, (runs, _) in _FIXED_VARIANT.items()]
    # float64: Python floats and scipy's double-precision p-values on both sides
    assert row.delta == pytest.approx(statistics.mean(diffs))
    assert row.p == pytest.approx(stats.ttest_1samp(diffs, 0).pvalue)
    # the reading: seeds 0-2, each one's average over the 2 datasets minus the published average 67.5
    per_seed = [_by_seed(_FIXED_VARIANT, seed) - statistics.mean(_FIXED_FIGURES.values()) for seed in range(3)]
    assert per_seed == pytest.approx([0.0, 1.5, 0.0])  # float64; by hand: (74+61)/2, (75+63)/2, (73+62)/2 - 67.5
    fixed = row.fixed_domain
    assert fixed.seeds == [0, 1, 2] and fixed.t.df == 2
    assert fixed.t.est == pytest.approx(statistics.mean(per_seed))  # float64
    assert fixed.t.se == pytest.approx(statistics.stdev(per_seed) / math.sqrt(3))  # float64
    assert fixed.p == pytest.approx(stats.ttest_1samp(per_seed, 0).pvalue)  # float64
    below = stats.ttest_1samp(per_seed, -2, alternative="greater").pvalue
    above = stats.ttest_1samp(per_seed, 2, alternative="less").pvalue
    assert fixed.p_within == pytest.approx(max(below, above))  # float64: the row's kind of p, TOST within ±2
    text = (f"Beside the row's test, not replacing it, the fixed-domain reading (each seed's average over the 2 "
            f"datasets minus the published average, seeds 0, 1, 2: Δ +0.50 ± 0.50 s.e., df 2): "
            f"p = {fixed.p:.3f} (two-sided); TOST p = {fixed.p_within:.3f} (within ±2).")
    assert text in format_gaps([], results.dir, [d])


def test_a_baseline_row_over_datasets_shows_the_fixed_domain_reading_of_the_paired_seeds(tmp_path):
    results = _fixed_domain_results(tmp_path)
    d = _diagnosis(datasets=["d1", "d2"], unit="dataset")
    [row] = measure(d, results)
    # the row's test: each dataset's mean difference over the seeds both ran there, paired over datasets
    diffs = [(74 + 75 + 73) / 3 - (72 + 74 + 72) / 3, (61 + 63 + 62) / 3 - (61 + 60 + 60) / 3]
    assert row.p == pytest.approx(stats.ttest_1samp(diffs, 0).pvalue)  # float64
    # the reading: seeds 0-2 (d1's seed 3 and d2's baseline seed 4 ran on one dataset only)
    per_seed = [_by_seed(_FIXED_VARIANT, seed) - _by_seed(_FIXED_BASELINE, seed) for seed in range(3)]
    assert per_seed == pytest.approx([1.0, 2.0, 1.5])  # float64; by hand: (2+0)/2, (1+3)/2, (1+2)/2
    fixed = row.fixed_domain
    assert fixed.seeds == [0, 1, 2] and fixed.t.df == 2 and fixed.p_within is None
    assert fixed.t.est == pytest.approx(1.5) and fixed.t.se == pytest.approx(0.5 / math.sqrt(3))  # float64
    # the row's own kind of p: two-sided (scipy's paired t over the seeds gives the same p)
    assert fixed.p == pytest.approx(stats.ttest_1samp(per_seed, 0).pvalue)  # float64
    assert fixed.p == pytest.approx(stats.ttest_rel([_by_seed(_FIXED_VARIANT, s) for s in range(3)],
                                                    [_by_seed(_FIXED_BASELINE, s) for s in range(3)]).pvalue)
    text = (f"Beside the row's test, not replacing it, the fixed-domain reading (each seed's average over the 2 "
            f"datasets of the variant minus the baseline, seeds 0, 1, 2: Δ +1.50 ± 0.29 s.e., df 2): "
            f"p = {fixed.p:.3f} (two-sided).")
    assert text in format_gaps([], results.dir, [d])


def test_the_fixed_domain_reading_says_so_when_fewer_than_two_seeds_ran_on_every_dataset(results):
    # d1's seeds 0 and 1, d2's seed 0 only: the row pairs both datasets, the reading has one seed
    d = _diagnosis(datasets=["d1", "d2"], unit="dataset")
    [row] = measure(d, _Results(results))
    assert row.n == 2 and row.fixed_domain.seeds == [0] and row.fixed_domain.t is None
    assert ("Beside the row's test, not replacing it, the fixed-domain reading: none, it needs 2 seeds on which "
            "every dataset ran the variant and the baseline (only seed 0).") in format_gaps([], results, [d])


def test_a_setting_chosen_on_dev_takes_each_seeds_test_accuracy_of_the_best_dev_run(tmp_path):
    def entry(name, tests, devs, losses):
        runs = [{"seed": s, "status": "ok", "accuracy": t,
                 "dev_metrics": None if d is None else {"accuracy": d, "loss": loss}}
                for s, (t, d, loss) in enumerate(zip(tests, devs, losses))]
        return {**_entry(name, "d1", tests), "runs": runs}

    out = tmp_path / "results"
    _write(out, "toy", [entry("rate-a", [0.80, 0.81, 0.82, 0.83, 0.84], [0.70, 0.75, 0.70, None, 0.70],
                              [0.5, 0.5, 0.5, 0.5, 0.6]),
                        entry("rate-b", [0.90, 0.95, 0.90, 0.99, 0.70], [0.80, 0.74, 0.70, 0.99, 0.70],
                              [0.5, 0.5, 0.5, 0.5, 0.4])])
    chosen = _diagnosis(variant="rate-chosen-on-dev", baseline="rate-a", choose_on_dev=["rate-a", "rate-b"],
                        datasets=["d1"])
    [row] = measure(chosen, _Results(out))
    # seed 0: b's dev is higher (its test 0.90); seed 1: a's (0.81, though b's test is higher);
    # seed 2: a tie on dev accuracy and loss, the first listed (0.82); seed 3: a has no dev
    # score, so the seed is left out; seed 4: a tie on dev accuracy, b's lower loss (0.70).
    assert row.n == 4 and row.delta == approx32(100 * ((0.90 - 0.80) + 0 + 0 + (0.70 - 0.84)) / 4)
    assert row.variant.startswith("80.75")
    assert _choice_counts(chosen, _Results(out)) == "rate-a 2, rate-b 2 (of 4 choices, one a dataset and seed)"
    # runs made before they recorded dev scores: nothing to choose on
    _write(tmp_path / "plain", "toy", [_entry("rate-a", "d1", [0.8]), _entry("rate-b", "d1", [0.9])])
    [none] = measure(chosen, _Results(tmp_path / "plain"))
    assert none.missing == "no seed on which rate-a, rate-b all ran with a dev score on d1"
    assert _choice_counts(chosen, _Results(tmp_path / "plain")) == "none yet"
    [absent] = measure(_diagnosis(variant="c", choose_on_dev=["rate-a", "rate-b"], datasets=["d2"]), _Results(out))
    assert absent.missing == "`toy` has no rate-a on d2"
    over_datasets = _diagnosis(variant="rate-chosen-on-dev", baseline="rate-a", choose_on_dev=["rate-a", "rate-b"],
                               datasets=["d1"], unit="dataset")
    [undecided] = measure(over_datasets, _Results(tmp_path / "plain"))
    assert undecided.missing == ("1 of 1 datasets lack a seed on which the baseline and every entry of "
                                 "choose_on_dev ran with a dev score (d1)")
    with pytest.raises(ValueError, match="two entries or more"):
        _diagnosis(choose_on_dev=["rate-a"])


def test_a_setting_chosen_on_test_takes_each_seeds_highest_test_accuracy_and_says_so(tmp_path):
    out = tmp_path / "chosen"
    _write(out, "toy", [_entry("rate-a", "d1", [0.80, 0.81, 0.82, 0.84]),
                        _entry("rate-b", "d1", [0.90, 0.74, 0.82], seeds=[0, 1, 2]),
                        _entry("rate-c", "d1", [0.85, 0.79, 0.70, 0.99]),
                        _entry("rate-a", "d2", [0.60, 0.62]), _entry("rate-b", "d2", [0.66, 0.61]),
                        _entry("rate-c", "d2", [0.61, 0.60])])
    among = ["rate-a", "rate-b", "rate-c"]
    chosen = _diagnosis(variant="rate-chosen-on-test", baseline="rate-a", choose_on_test=among, datasets=["d1"])
    [row] = measure(chosen, _Results(out))
    # seed 0: b (0.90); seed 1: a (0.81); seed 2: a tie of a and b, the first listed (a, 0.82);
    # seed 3: b did not run it, so the seed is left out although c scored 0.99 there.
    assert row.n == 3 and row.delta == approx32(100 * (0.90 - 0.80) / 3)
    counts = "rate-a 2, rate-b 1, rate-c 0 (of 3 choices, one a dataset and seed)"
    assert _choice_counts(chosen, _Results(out)) == counts
    # Against a published figure, over datasets: each dataset's mean of its seeds' best test accuracies.
    against = _diagnosis(variant="rate-chosen-on-test", baseline=None, choose_on_test=among, datasets=["d1", "d2"],
                         unit="dataset", reference={"d1": 85.0, "d2": 65.0})
    [over] = measure(against, _Results(out))
    assert over.n == 2 and over.delta == approx32(((90 + 81 + 82) / 3 - 85.0 + (66 + 62) / 2 - 65.0) / 2)
    # The page says the choice saw the test set, and counts the choices.
    lines = format_gaps([], out, [chosen])
    assert any("scored the highest test accuracy" in line and "a selection on the test set" in line for line in lines)
    assert f"- chosen on test: {counts}" in lines
    [absent] = measure(_diagnosis(variant="c", choose_on_test=["rate-a", "rate-z"], datasets=["d1"]), _Results(out))
    assert absent.missing == "`toy` has no rate-z on d1"
    with pytest.raises(ValueError, match="not both"):
        _diagnosis(choose_on_dev=among, choose_on_test=among)
    with pytest.raises(ValueError, match="choose_on_test needs two entries or more"):
        _diagnosis(choose_on_test=["rate-a"])


def test_the_epoch_chosen_on_test_reads_each_runs_highest_test_accuracy_over_its_curve(tmp_path):
    def curved(name, dataset, kept, runs):
        entry = _entry(name, dataset, kept)
        for run, (curve, best_epoch) in zip(entry["runs"], runs):
            run.update({"epochs_run": len(curve or []), "best_epoch": best_epoch})
            if curve is not None:
                run["test_curve"] = curve
        return entry

    out = tmp_path / "curves"
    _write(out, "toy", [
        # seed 0: dev kept epoch 2 (0.80 on the curve), test's best is epoch 3 (0.83); seed 1: dev
        # kept the best; seed 2 recorded no curve; seed 3 resumed from a checkpoint made without
        # one (its first epoch unscored), so it is left out too.
        curved("model", "d1", [0.80, 0.82, 0.79, 0.81], [([0.70, 0.80, 0.83], 2), ([0.82, 0.81], 1), (None, 1),
                                                         ([None, 0.81, 0.90], 2)]),
        # seed 0: the prediction path scored one document more than the curve's pass at the kept
        # epoch (0.6025 against 0.60): the curve's gain is added to the run's own accuracy.
        curved("model", "d2", [0.6025, 0.61], [([0.60, 0.64], 1), ([0.61, float("nan"), 0.62], 1)]),
        _entry("plain", "d1", [0.8])])
    on_test = _diagnosis(variant="model", baseline="model", epoch_on_test=True, datasets=["d1"])
    [row] = measure(on_test, _Results(out))
    assert row.n == 2 and row.delta == approx32(100 * (0.83 - 0.80) / 2)
    against = _diagnosis(variant="model", baseline=None, epoch_on_test=True, datasets=["d1", "d2"], unit="dataset",
                         reference={"d1": 85.0, "d2": 65.0})
    [over] = measure(against, _Results(out))
    # d2: seed 1's curve has a NaN epoch and is left out; seed 0 is 60.25 + (64 - 60).
    assert over.n == 2 and over.delta == approx32(((83 + 82) / 2 - 85.0 + 64.25 - 65.0) / 2)
    [none] = measure(_diagnosis(variant="plain", baseline="model", epoch_on_test=True, datasets=["d1"]), _Results(out))
    assert none.missing.startswith("no run of plain on d1 recorded a test_curve over every epoch it ran")
    lines = format_gaps([], out, [on_test])
    assert any("epoch of highest test accuracy" in line and "not a figure of ours" in line for line in lines)
    with pytest.raises(ValueError, match="use choose_on_test"):
        _diagnosis(epoch_on_test=True, choose_on_dev=["a", "b"])
    # Setting and epoch chosen together on test: seed 0 of d1 takes "other" at its best epoch
    # (0.86), where the model's best epoch gave 0.83; seed 1 keeps the model's 0.82.
    _write(out, "toy", [*json.loads((out / "toy.json").read_text())["entries"],
                        curved("other", "d1", [0.81, 0.80], [([0.81, 0.86], 1), ([0.80, 0.70], 1)])])
    both = _diagnosis(variant="chosen", baseline="model", epoch_on_test=True, choose_on_test=["model", "other"],
                      datasets=["d1"])
    [joint] = measure(both, _Results(out))
    assert joint.n == 2 and joint.delta == approx32(100 * ((0.86 - 0.80) + (0.82 - 0.82)) / 2)
    assert any("highest test accuracy at its epoch of highest test accuracy" in line
               for line in format_gaps([], out, [both]))


def test_what_has_not_run_is_named_not_skipped(results):
    results_ = _Results(results)
    [no_json] = measure(_diagnosis(suite="nowhere"), results_)
    assert no_json.missing == "`nowhere` has no results JSON" and no_json.short().startswith("not run yet")
    [no_entry] = measure(_diagnosis(datasets=["imdb"]), results_)
    assert no_entry.missing == "`toy` has no model-changed on imdb"
    [partly] = measure(_diagnosis(datasets=["d1", "imdb"], unit="dataset"), results_)
    assert partly.missing.startswith("1 of 2 datasets lack a seed both ran (imdb")


def _a_gap_and_a_close_figure(results):
    """Verdicts on the toy model's mr figure against 84.0 (a gap: ours 80.66) and 81.5 (within 2)."""
    claims = [Claim(id="toy.figure.mr", paper="spe_cnn", source="T", claim="c", kind="within", suites=["toy"],
                    datasets=["mr"], model="model", paper_figure=84.0),
              Claim(id="toy.close.mr", paper="spe_cnn", source="T", claim="c", kind="within", suites=["toy"],
                    datasets=["mr"], model="model", paper_figure=81.5)]
    return evaluate_claims(results, claims)


def test_the_gap_table_lists_figures_more_than_two_points_off_with_the_experiments_on_them(results):
    verdicts = _a_gap_and_a_close_figure(results)
    diagnoses = [_diagnosis(), _diagnosis(id="elsewhere", bears_on=["toy.other"]),
                 _diagnosis(id="later-run", suite="nowhere", bears_on=["toy.figure"])]
    lines = format_gaps(verdicts, results, diagnoses)
    rows = [line for line in lines if line.startswith("| `toy.")]
    assert len(rows) == 1 and rows[0].startswith("| `toy.figure.mr` | 80.66 | 84.00 | -3.34 |")
    assert "`toy`: Δ +1.86 (p <0.001, n=5)" in rows[0] and "`elsewhere`" not in rows[0]
    assert "`later-run`: not run yet (`nowhere` has no results JSON)" in rows[0]
    assert "1 of our figures miss the paper's by more than 2 points; 1 have an experiment on them." in lines
    assert "#### `elsewhere`" in lines  # every experiment has its section, on a gap or not


def test_experiments_on_a_claim_that_is_not_a_gap_are_listed_under_its_verdict(results):
    verdicts = _a_gap_and_a_close_figure(results)
    lines = format_gaps(verdicts, results, [_diagnosis(id="on-close", bears_on=["toy.close"]),
                                            _diagnosis(id="on-gap", bears_on=["toy.figure"])])
    start = lines.index("### Experiments on the other claims")
    rows = [line for line in lines[start:lines.index("### The experiments")] if line.startswith("| `toy.")]
    assert len(rows) == 1 and rows[0].startswith("| `toy.close.mr` | **")
    assert "`on-close` (mr): Δ +1.86 (p <0.001, n=5)" in rows[0] and "`on-gap`" not in rows[0]
    assert not [line for line in format_gaps(verdicts, results, [_diagnosis(id="on-gap", bears_on=["toy.figure"])])
                if line == "### Experiments on the other claims"]


@pytest.mark.parametrize("body, message", [
    ('id = "x"\nquestion = "q"\nchange = "c"\nsuite = "s"\nvariant = "v"\ndatasets = ["mr"]\n', "a baseline or a reference"),
    ('id = "x"\nquestion = "q"\nchange = "c"\nsuite = "s"\nvariant = "v"\nbaseline = "b"\ndatasets = ["mr"]\n'
     'baslines = 1\n', "unknown keys \\['baslines'\\]"),
    ('id = "x"\nquestion = "q"\nchange = "c"\nsuite = "s"\nvariant = "v"\nreference = { mr = 1.0 }\n'
     'datasets = ["mr", "trec"]\n', "no reference figure for \\['trec'\\]"),
    ('id = "x"\nquestion = "q"\nchange = "c"\nsuite = "s"\nvariant = "v"\nbaseline = "b"\ndatasets = ["mr"]\n'
     'unit = "domain"\n', "unit must be"),
])
def test_bad_diagnoses_are_refused_with_the_reason(tmp_path, body, message):
    path = tmp_path / "diagnoses.toml"
    path.write_text("[[diagnosis]]\n" + body, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        load_diagnoses(path)


_NAMED = ('[published."kim.t2"]\nsource = "Kim, Table 2"\nfigures = { mr = 76.1, trec = 91.2 }\n\n'
          '[[diagnosis]]\nid = "on-kim"\nquestion = "q"\nchange = "c"\nsuite = "s"\nvariant = "v"\n'
          'reference = "kim.t2"\ndatasets = ["mr"]\n\n'
          '[[diagnosis]]\nid = "on-figures"\nquestion = "q"\nchange = "c"\nsuite = "s"\nvariant = "v"\n'
          'reference = "toy.t3.model"\nreference_source = "Toy, Table 3"\ndatasets = ["mr", "trec"]\n\n'
          '[[diagnosis]]\nid = "on-average"\nquestion = "q"\nchange = "c"\nsuite = "s"\nvariant = "v"\n'
          'reference = "toy.t4.average"\nunit = "dataset"\ndatasets = ["d1", "d2"]\n')
_NAMED_CLAIMS = [
    Claim(id="toy.t3.model.mr", paper="spe_cnn", source="T3", claim="c", kind="within", suites=["toy"],
          datasets=["mr"], model="model", paper_figure=80.5),
    Claim(id="toy.t3.model.trec", paper="spe_cnn", source="T3", claim="c", kind="within", suites=["toy"],
          datasets=["trec"], model="model", paper_figure=92.5),
    Claim(id="toy.t4.average", paper="fcsr", source="T4", claim="c", kind="within", unit="dataset", suites=["toy"],
          model="model", paper_figure=70.0, paper_figures={"d1": 71.0, "d2": 69.0, "d3": 68.0})]


def test_a_reference_by_name_takes_the_figures_written_once_in_a_published_table_or_a_claim(tmp_path):
    path = tmp_path / "diagnoses.toml"
    path.write_text(_NAMED, encoding="utf-8")
    on_kim, on_figures, on_average = load_diagnoses(path, claims=_NAMED_CLAIMS)
    # Only the experiment's datasets, and a published table's source unless one is given.
    assert on_kim.reference == {"mr": 76.1} and on_kim.reference_source == "Kim, Table 2"
    assert on_figures.reference == {"mr": 80.5, "trec": 92.5} and on_figures.reference_source == "Toy, Table 3"
    assert on_average.reference == {"d1": 71.0, "d2": 69.0} and on_average.reference_source is None


def test_the_shipped_references_by_name_resolve_to_the_claims_figures():
    figures = {c.id: c.paper_figure for c in load_claims()}
    averages = {c.id: c.paper_figures for c in load_claims() if c.paper_figures}
    named = tomllib.loads((ROOT / "benchmarks" / "diagnoses.toml").read_text(encoding="utf-8"))["diagnosis"]
    by_id = {d.id: d for d in load_diagnoses()}
    checked = 0
    for block in named:
        name = block.get("reference")
        if not isinstance(name, str) or not (name in averages or any(k.startswith(name + ".") for k in figures)):
            continue
        for dataset, figure in by_id[block["id"]].reference.items():
            assert figure == (averages[name][dataset] if name in averages else figures[f"{name}.{dataset}"])
        checked += 1
    assert checked >= 9  # the Table 3 and Table 4 rows that the diagnoses once repeated by hand


@pytest.mark.parametrize("reference, message", [
    ("toy.t9.nothing", "reference 'toy.t9.nothing' is neither a \\[published\\] table"),
    ("kim.t2", "reference 'kim.t2' has no figure for \\['mpqa'\\]"),
    ("toy.t4.average", "reference 'toy.t4.average' has no figure for \\['mr', 'mpqa'\\]"),
])
def test_a_reference_by_name_that_is_not_found_or_lacks_a_dataset_is_refused(tmp_path, reference, message):
    path = tmp_path / "diagnoses.toml"
    path.write_text('[published."kim.t2"]\nsource = "Kim"\nfigures = { mr = 76.1 }\n\n[[diagnosis]]\nid = "x"\n'
                    f'question = "q"\nchange = "c"\nsuite = "s"\nvariant = "v"\nreference = "{reference}"\n'
                    'datasets = ["mr", "mpqa"]\n', encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        load_diagnoses(path, claims=_NAMED_CLAIMS)


def _suite_entries(suite: str, curves_only: bool = False) -> set[tuple[str, str]]:
    """(entry name, dataset) of every entry a suite file defines (``curves_only``: of those that
    record a test curve)."""
    data = tomllib.loads((SUITES / f"{suite}.toml").read_text(encoding="utf-8"))
    pairs = set()
    for entry in data.get("entry", []):
        if curves_only and not entry.get("test_curve"):
            continue
        models = entry.get("models") or [entry.get("model")]
        names = [entry["name"]] if entry.get("name") else models
        datasets = entry.get("datasets") or [entry.get("dataset")]
        pairs.update((n, d) for n in names for d in datasets)
    return pairs


def test_every_shipped_experiment_names_entries_its_suites_define_and_claims_that_exist():
    claims = load_claims()
    ids = {c.id for c in claims} | {c.id.rsplit(".", 1)[0] for c in claims}
    diagnoses = load_diagnoses()
    assert diagnoses
    for d in diagnoses:
        entries = _suite_entries(d.suite)
        for dataset in d.datasets:
            parent = dataset.split("/")[0]  # an fdu_mtl domain is an entry of its own or a task of fdu_mtl
            for variant in d.chosen_among or [d.variant]:
                assert (variant, dataset) in entries or (variant, parent) in entries, (d.id, variant, dataset)
            if d.epoch_on_test:  # read off curves that only an entry with test_curve = true records
                for variant in d.chosen_among or [d.variant]:
                    assert (variant, dataset) in _suite_entries(d.suite, curves_only=True), (d.id, variant, dataset)
            if d.baseline:
                base = _suite_entries(d.baseline_suite or d.suite)
                assert (d.baseline, dataset) in base or (d.baseline, parent) in base, (d.id, d.baseline, dataset)
        assert d.bears_on and set(d.bears_on) <= ids, (d.id, sorted(set(d.bears_on) - ids))


def test_every_tested_figure_is_plotted_against_the_paper_and_the_page_links_the_plot(results, tmp_path):
    from PIL import Image

    from textcls.benchmark.gaps import FIGURE_LINK, plot_within_figures, short_id, within_figures

    claims = [Claim(id="toy.t1.model.mr", paper="spe_cnn", source="T", claim="c", kind="within", suites=["toy"],
                    datasets=["mr"], model="model", paper_figure=84.0),
              Claim(id="toy.t1.close.trec", paper="fcsr", source="T", claim="c", kind="within", suites=["toy"],
                    datasets=["trec"], model="model", paper_figure=90.5)]
    verdicts = evaluate_claims(results, claims)
    figures = within_figures(verdicts, _Results(results))
    # Both tested figures, far from the paper or not (the gap table keeps only the far one).
    assert [(short_id(g.verdict.claim), round(g.ours, 2), g.paper) for g in figures] == [
        ("model.mr", 80.66, 84.0), ("close.trec", 91.0, 90.5)]
    path = plot_within_figures(figures, tmp_path / "reproduction.png")
    with Image.open(path) as image:
        assert image.format == "PNG" and image.size[0] > 600
    assert f"![every tested figure of ours against the paper's]({FIGURE_LINK})" in format_gaps(verdicts, results, [])
