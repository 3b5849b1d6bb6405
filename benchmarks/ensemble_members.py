"""Which members the `ensemble` preset should hold: every candidate alone, and subsets of them
combined by the preset's own rule (weights of lowest dev log-loss) or by an equal mean.

    OMP_NUM_THREADS=1 python benchmarks/ensemble_members.py [--datasets trec sst2 mr mpqa sst5 ...]
        [--seeds 0 1 2] [--candidates tfidf-lr ...] [--output benchmarks/results/ensemble_members]

For each (dataset, seed) the data are split as `textcls benchmark` splits them (the seed's dev
carve of 10 % of train where the data have no dev split), each candidate is fitted once on
train, and its dev and test probabilities are kept. A subset's test accuracy then costs no
training: its weights come from `ProbabilityEnsemble.choose_weights` on the members' dev
probabilities, exactly as `EnsembleEstimator.fit` chooses them. Candidates:

- `tfidf-lr`, `tfidf-nb`, `fasttext-bag`: the preset's members;
- (until stop 23, in `ensemble_members.md` at its commit: `fasttext-bag-unigram+minilm-static`,
  the fastText-style bag of unigrams on the 256-d distilled vectors; it added 0.10 on five sets
  and was dropped from the candidates when its corpus-chosen lr of 30.4 diverged on
  reuters-single);
- `static-lr`: the library's own frozen distilled sentence vectors + LR (`models/static_lr.py`,
  C chosen on dev), the member a saved run can hold;
- `static-finetune`: the same vectors fine-tuned with an MLP head, epoch chosen on dev
  (`models/static_finetune.py`), the fourth member since stop 24 ("preset + static-finetune");
- `model2vec-lr`: the Model2Vec peer (frozen distilled sentence vectors + LR), as the ceiling
  of a frozen semantic member (a peer, so it cannot be a member of the library's preset);
- `tfidf-lr-chars`: word and character 2-5-gram TF-IDF + LR, in place of `tfidf-lr` or beside
  it (stop 30, `--candidates tfidf-lr tfidf-nb fasttext-bag static-finetune tfidf-lr-chars` on
  mpqa, trec, sst2 and mr, `ensemble_members_chars.md`: the ensemble came out level or lower,
  85.08 % on average against 85.18, mpqa 87.21 against 87.24, at 4-6x `tfidf-lr`'s fit time);
- `static-finetune#2`: `static-finetune` again from another initialisation (seed + 1000, the
  same split), beside the first: two runs of the strongest short-text member pooled (stop 31,
  `--datasets mpqa trec sst2 mr sst5 --candidates tfidf-lr tfidf-nb fasttext-bag static-finetune
  static-finetune#2`, `ensemble_members_seed2.md`): 77.03 % on average over the five against the
  preset's 76.99 (on dev halves 75.87 against 75.80), mpqa 87.15 against 87.37. Not adopted;
- `fasttext-bag-minilm`: the bag with its word rows started from the 256-d distilled vectors
  (fastText's `-pretrainedVectors`), in place of `fasttext-bag` or beside it (stop 31,
  `--datasets mpqa trec sst2 mr sst5 --candidates tfidf-lr tfidf-nb fasttext-bag static-finetune
  fasttext-bag-minilm`, `ensemble_members_bag_minilm.md`, after the bag's `[UNK]` row went to
  zero): the preset 76.99 % on average over the five (75.80 on dev halves), in place of the bag
  77.03 (75.85), beside it 77.07 (75.76); mpqa 87.37, 87.24, 87.37; and with `--datasets
  reuters-single ag_news fine-food 20news`, `ensemble_members_bag_minilm_long.md`: the preset
  88.27 (90.73 on dev halves), in place of the bag 88.35 (90.76), beside it 88.33. Not adopted:
  within 0.1 point either way, on test and on dev, over all nine sets. Alone it is far ahead of
  the 10-d bag on the long-document topic sets (20news 79.80 against 75.19, ag_news 87.83
  against 85.57).

- `minilm-lr` (the peer: frozen all-MiniLM-L6-v2 through sentence-transformers, fp32, C = 1),
  `minilm-encoder-lr` (the same encoder as a library model: bf16 where native, C on dev),
  `minilm-encoder-lr-3l` (its first 3 layers) and `minilm-encoder-lr@layers=2`, beside the
  preset's four members (stop 32, `--datasets mpqa trec --candidates tfidf-lr tfidf-nb
  fasttext-bag static-finetune minilm-lr minilm-encoder-lr minilm-encoder-lr-3l
  minilm-encoder-lr@layers=2`, `ensemble_members_minilm_encoder.md`; then `--datasets sst2 mr
  sst5 --candidates tfidf-lr tfidf-nb fasttext-bag static-finetune minilm-encoder-lr-3l`,
  `ensemble_members_minilm_encoder_longer.md`; and `--datasets ag_news fine-food`,
  `ensemble_members_minilm_encoder_news.md`, just above the limit): the contextual encoder is what mpqa's phrases
  lacked, it lifted the ensemble on all five short-text sets, on test and on halves of dev, and
  the 3-layer member joins the preset on small corpora (`models/ensemble.py`,
  `SMALL_CORPUS_MEMBERS`);
- `minilm-encoder-lr-3l` in `static-finetune`'s place (stop 34, `--datasets trec mpqa sst2 mr sst5
  ag_news --candidates tfidf-lr tfidf-nb fasttext-bag static-finetune minilm-encoder-lr-3l`,
  `ensemble_members_minilm_replaces.md`): 80.45 % on average over the six against 80.46 beside it
  (mpqa +0.31, sst5 +0.21, ag_news +0.05, trec 0.00, mr -0.32, sst2 -0.34), for a fifth less
  member time; on halves of dev 79.82 against 80.10 (sst5 43.36 against 44.81). It replaces it on small corpora
  (`SMALL_CORPUS_REPLACES`), for issue 19's time bar;
- the same place with MiniLM's first 2 layers (stop 34, `--datasets trec mpqa sst2 mr sst5 ag_news
  --candidates tfidf-lr tfidf-nb fasttext-bag minilm-encoder-lr-3l minilm-encoder-lr@layers=2`,
  `ensemble_members_minilm_2layers.md`): 79.93 % on average against 3 layers' 80.52 (dev halves
  79.15 against 79.81), for two thirds of the encoding: the default's member since stop 34
  (`minilm-encoder-lr-2l`), as 3 layers missed issue 19's time bar on trec and ag_news.

A candidate ``<preset>@<parameter>=<integer>`` is the preset with that one override.
``--candidates`` fits only the named ones; the subsets and rules whose members were all fitted
are scored.

Then the combination rules (``RULES``) on the preset's own members, each with its test accuracy
and a criterion that reads no test label (fitted on one half of dev, scored on the other).

Writes <output>.json (every accuracy, weight and fit time; the machine and the command) and
<output>.md. The machine is shared: fit seconds are only comparable within one run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

from textcls import load_dataset
from textcls.benchmark.report import run_datasets, script_header, start_script_result
from textcls.benchmark.runner import create_estimator
from textcls.data.prepare import label_targets, target_array
from textcls.data.splits import ensure_dev
from textcls.models.ensemble import ProbabilityEnsemble

REPO = Path(__file__).resolve().parents[1]
CANDIDATES = ("tfidf-lr", "tfidf-nb", "fasttext-bag", "static-lr", "static-finetune", "model2vec-lr", "tfidf-lr-chars",
              "fasttext-bag-minilm", "static-finetune#2", "minilm-lr", "minilm-encoder-lr", "minilm-encoder-lr-3l",
              "minilm-encoder-lr@layers=2")
# "<preset>#2": the preset once more with another initialisation (seed + SECOND_SEED_OFFSET) on the
# same split, so that a subset can pool two runs of one model (seed bagging).
SECOND_SEED_OFFSET = 1000
SUBSETS = {
    "preset (lr + nb + bag)": ("tfidf-lr", "tfidf-nb", "fasttext-bag"),
    "lr + bag": ("tfidf-lr", "fasttext-bag"),
    "preset + model2vec-lr (peer)": ("tfidf-lr", "tfidf-nb", "fasttext-bag", "model2vec-lr"),
    "preset + static-lr": ("tfidf-lr", "tfidf-nb", "fasttext-bag", "static-lr"),
    "lr + nb + static-lr": ("tfidf-lr", "tfidf-nb", "static-lr"),
    "preset + static-finetune": ("tfidf-lr", "tfidf-nb", "fasttext-bag", "static-finetune"),
    "preset + static-lr + static-finetune": ("tfidf-lr", "tfidf-nb", "fasttext-bag", "static-lr", "static-finetune"),
    "preset, chars for lr": ("tfidf-lr-chars", "tfidf-nb", "fasttext-bag", "static-finetune"),
    "preset + chars": ("tfidf-lr", "tfidf-nb", "fasttext-bag", "static-finetune", "tfidf-lr-chars"),
    "preset, bag-minilm for bag": ("tfidf-lr", "tfidf-nb", "fasttext-bag-minilm", "static-finetune"),
    "preset + bag-minilm": ("tfidf-lr", "tfidf-nb", "fasttext-bag", "static-finetune", "fasttext-bag-minilm"),
    "preset + static-finetune#2": ("tfidf-lr", "tfidf-nb", "fasttext-bag", "static-finetune", "static-finetune#2"),
    "preset + minilm-lr (peer)": ("tfidf-lr", "tfidf-nb", "fasttext-bag", "static-finetune", "minilm-lr"),
    "preset + minilm-encoder-lr": ("tfidf-lr", "tfidf-nb", "fasttext-bag", "static-finetune", "minilm-encoder-lr"),
    "preset + minilm-encoder-lr-3l": ("tfidf-lr", "tfidf-nb", "fasttext-bag", "static-finetune",
                                      "minilm-encoder-lr-3l"),
    "preset + minilm-encoder-lr, 2 layers": ("tfidf-lr", "tfidf-nb", "fasttext-bag", "static-finetune",
                                             "minilm-encoder-lr@layers=2"),
    "preset, minilm-encoder-lr for static-finetune": ("tfidf-lr", "tfidf-nb", "fasttext-bag", "minilm-encoder-lr"),
    "preset, minilm-encoder-lr-3l for static-finetune": ("tfidf-lr", "tfidf-nb", "fasttext-bag",
                                                         "minilm-encoder-lr-3l"),
    "preset, minilm-encoder-lr 2 layers for static-finetune": ("tfidf-lr", "tfidf-nb", "fasttext-bag",
                                                               "minilm-encoder-lr@layers=2"),
}
# The combination rules compared on the preset's own members (models/ensemble.py): the
# preset's (calibrated, log-linear; the subsets above use it too) and the ones before it.
PRESET_MEMBERS = ("tfidf-lr", "tfidf-nb", "fasttext-bag", "static-finetune")
RULES = {
    "rule: linear, uncalibrated (until stop 23)": {"pooling": "linear", "calibrate": False},
    "rule: linear, calibrated": {"pooling": "linear", "calibrate": True},
    "rule: log-linear, calibrated (the preset)": {"pooling": "log-linear", "calibrate": True},
}


def _fit_candidates(name: str, seed: int, candidates=CANDIDATES) -> dict:
    torch.manual_seed(seed)
    dataset = ensure_dev(load_dataset(name), fraction=0.1, seed=seed)
    targets = {s: target_array(label_targets(dataset[s], dataset.label_names, False, s), len(dataset.label_names),
                               False) for s in ("dev", "test")}
    out = {"targets": targets, "num_classes": len(dataset.label_names), "members": {}}
    for candidate in candidates:
        model, _, embeddings = candidate.partition("+")
        model, second_run, _ = model.partition("#")
        model, _, setting = model.partition("@")
        overrides = {"embeddings": embeddings} if embeddings else {}
        if setting:  # "<preset>@<parameter>=<integer>": the preset with one architecture override
            key, _, value = setting.partition("=")
            overrides[key] = int(value)
        estimator = create_estimator(model, seed=seed + (SECOND_SEED_OFFSET if second_run else 0), overrides=overrides)
        start = time.perf_counter()
        estimator.fit(dataset)
        seconds = time.perf_counter() - start
        probs = {s: estimator.predict_proba(list(dataset[s]["text"])) for s in ("dev", "test")}
        out["members"][candidate] = {"probs": probs, "fit_seconds": seconds}
        print(f"{name} seed {seed} {candidate}: test {100 * _accuracy(probs['test'], targets['test']):.2f} "
              f"({seconds:.1f} s)", flush=True)
    return out


def _accuracy(probs: np.ndarray, targets: np.ndarray) -> float:
    return float((probs.argmax(1) == targets).mean())


def _subset_rows(fitted: dict) -> dict:
    rows, targets = {}, fitted["targets"]
    for candidate, member in fitted["members"].items():
        rows[candidate] = {"test_accuracy": _accuracy(member["probs"]["test"], targets["test"]),
                           "fit_seconds": member["fit_seconds"]}
    for label, members in _subsets(fitted["members"]).items():
        dev = [fitted["members"][m]["probs"]["dev"] for m in members]
        tests = [fitted["members"][m]["probs"]["test"] for m in members]
        ensemble = ProbabilityEnsemble(fitted["num_classes"], members=list(members))
        weights = ensemble.choose_weights(dev, targets["dev"], multi_label=False)
        rows[label] = {"test_accuracy": _accuracy(ensemble.combine(tests), targets["test"]),
                       "equal_mean_test_accuracy": _accuracy(sum(tests) / len(tests), targets["test"]),
                       "subset_dev_two_fold_accuracy": _dev_two_fold(fitted["num_classes"], {}, dev, targets["dev"],
                                                                     members),
                       "weights": dict(zip(members, weights.tolist())),
                       "fit_seconds": sum(fitted["members"][m]["fit_seconds"] for m in members)}
    if not set(PRESET_MEMBERS) <= set(fitted["members"]):
        return rows
    dev = [fitted["members"][m]["probs"]["dev"] for m in PRESET_MEMBERS]
    tests = [fitted["members"][m]["probs"]["test"] for m in PRESET_MEMBERS]
    for label, rule in RULES.items():
        ensemble = ProbabilityEnsemble(fitted["num_classes"], members=list(PRESET_MEMBERS), **rule)
        weights = ensemble.choose_weights(dev, targets["dev"], multi_label=False)
        rows[label] = {"test_accuracy": _accuracy(ensemble.combine(tests), targets["test"]),
                       "dev_two_fold_accuracy": _dev_two_fold(fitted["num_classes"], rule, dev, targets["dev"]),
                       "weights": dict(zip(PRESET_MEMBERS, weights.tolist())),
                       "temperatures": dict(zip(PRESET_MEMBERS, ensemble.temperatures_.tolist()))}
    return rows


def _subsets(candidates) -> dict:
    """The subsets whose members are all among ``candidates``."""
    return {label: members for label, members in SUBSETS.items() if set(members) <= set(candidates)}


def _dev_two_fold(num_classes: int, rule: dict, dev: list, targets: np.ndarray,
                  members: tuple[str, ...] = PRESET_MEMBERS) -> float:
    """A rule's (or a subset's) accuracy on each half of dev when fitted on the other (halves
    drawn with seed 0), averaged: a comparison that reads no test label."""
    order = np.random.default_rng(0).permutation(len(targets))
    halves = np.array_split(order, 2)
    scores = []
    for fit, held in (halves, halves[::-1]):
        ensemble = ProbabilityEnsemble(num_classes, members=list(members), **rule)
        ensemble.choose_weights([p[fit] for p in dev], targets[fit], multi_label=False)
        scores.append(_accuracy(ensemble.combine([p[held] for p in dev]), targets[held]))
    return float(np.mean(scores))


def _markdown(result: dict) -> str:
    datasets = result["datasets"]
    lines = script_header("Ensemble members", result) + [
             "Test accuracy, % (mean over seeds " + ", ".join(map(str, result["seeds"])) + "); "
             "subsets: the preset's rule (calibrated, log-linear) [equal mean] {the rule's accuracy on each half of "
             "dev when fitted on the other, which reads no test label, where measured}; rules: the preset's members "
             "[accuracy on each half of dev when fitted on the other]", "",
             "| candidate or subset | " + " | ".join(datasets) + " | average |", "|---|" + "---|" * (len(datasets) + 1)]
    candidates = result["candidates"]
    labels = list(candidates) + list(_subsets(candidates))
    if set(PRESET_MEMBERS) <= set(candidates):
        labels += list(RULES)
    for label in labels:
        cells, values, brackets = [], [], []
        for name in datasets:
            runs = [result["runs"][name][str(s)][label] for s in result["seeds"]]
            mean = 100 * float(np.mean([r["test_accuracy"] for r in runs]))
            values.append(mean)
            extra = [r.get("equal_mean_test_accuracy", r.get("dev_two_fold_accuracy")) for r in runs]
            if None not in extra:
                brackets.append(100 * float(np.mean(extra)))
            halves = [r.get("subset_dev_two_fold_accuracy") for r in runs]
            cells.append(f"{mean:.2f}" + (f" [{brackets[-1]:.2f}]" if None not in extra else "")
                         + (f" {{{100 * float(np.mean(halves)):.2f}}}" if None not in halves else ""))
        average = f"{np.mean(values):.2f}" + (f" [{np.mean(brackets):.2f}]" if len(brackets) == len(values) else "")
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {average} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["trec", "sst2", "mr", "mpqa", "sst5", "ag_news", "fine-food",
                                                          "reuters-single", "20news"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--candidates", nargs="+", default=list(CANDIDATES), choices=CANDIDATES,
                        help="fit only these (the subsets and rules whose members are all fitted are scored)")
    parser.add_argument("--output", default=str(REPO / "benchmarks/results/ensemble_members"))
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    result = start_script_result(__file__, sys.argv[1:], datasets=args.datasets, seeds=args.seeds,
                                 candidates=args.candidates,
                                 subsets={k: list(v) for k, v in _subsets(args.candidates).items()})
    run_datasets(result, args.datasets, args.seeds,
                 lambda name, seed: _subset_rows(_fit_candidates(name, seed, args.candidates)), args.output, _markdown)


if __name__ == "__main__":
    main()
