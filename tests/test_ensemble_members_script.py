"""benchmarks/ensemble_members.py: each subset's two-fold dev criterion (fitted on one half of
dev, scored on the other), which reads no test label."""

import numpy as np
import pytest
from conftest import load_benchmark_script


@pytest.fixture(scope="module")
def members_script():
    return load_benchmark_script("ensemble_members")


def _probs(targets, right, rng, classes=3):
    """Probabilities that put 0.9 on the true class where ``right`` and on another class elsewhere."""
    chosen = np.where(right, targets, (targets + 1) % classes)
    probs = np.full((len(targets), classes), 0.05)
    probs[np.arange(len(targets)), chosen] = 0.9
    return probs


def test_subsets_get_a_dev_criterion_that_follows_the_better_member(members_script):
    rng = np.random.default_rng(0)
    targets = {s: rng.integers(0, 3, size=200) for s in ("dev", "test")}
    good = {s: _probs(t, rng.random(len(t)) < 0.95, rng) for s, t in targets.items()}
    noisy = {s: _probs(t, rng.random(len(t)) < 0.40, rng) for s, t in targets.items()}
    names = ("tfidf-lr", "tfidf-nb", "fasttext-bag", "static-finetune", "fasttext-bag-minilm")
    members = {name: {"probs": good if name == "fasttext-bag-minilm" else noisy, "fit_seconds": 1.0} for name in names}
    rows = members_script._subset_rows({"targets": targets, "num_classes": 3, "members": members})
    swapped = rows["preset, bag-minilm for bag"]["subset_dev_two_fold_accuracy"]
    preset = rows["preset + static-finetune"]["subset_dev_two_fold_accuracy"]
    # The weights fitted on one half carry to the other: the subset holding the good member scores
    # about its accuracy on the held-out halves, the subset of noisy members about theirs.
    assert swapped > 0.9 and preset < 0.6
    assert rows["preset + static-finetune"]["weights"] and rows["tfidf-lr"]["test_accuracy"] < 0.6
