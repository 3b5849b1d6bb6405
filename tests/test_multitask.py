"""Multi-task training end to end: fdu_mtl's 16 domains, one FCSR body, one head per domain."""

import numpy as np
import pytest

from textcls import Classifier
from textcls.data import load_dataset
from textcls.errors import ConfigError, UnknownTaskError


@pytest.fixture(scope="module")
def fitted():
    ds = load_dataset("fdu_mtl", max_per_split=96)
    clf = Classifier("fcsr-mtl", epochs=1, batch_size=16, progress=False).fit_dataset(ds)
    return ds, clf


def test_fcsr_mtl_gets_one_head_per_domain_and_reads_the_task(fitted):
    ds, clf = fitted
    assert clf.uses_tasks and clf.task_names_ == ds.task_names and clf.preset_.arch["num_tasks"] == 16
    texts = ["a fine book , well written", "broke after a week"]
    with pytest.raises(ConfigError, match="pass tasks="):
        clf.predict(texts)
    with pytest.raises(UnknownTaskError, match="not trained on"):
        clf.predict(texts, tasks=["books", "garden"])
    books = clf.predict_proba(texts, tasks=["books", "books"])
    kitchen = clf.predict_proba(texts, tasks=["kitchen_housewares", "kitchen_housewares"])
    # The same text through two heads gives two different distributions.
    assert books.shape == (2, 2) and np.abs(books - kitchen).max() > 1e-6
    metrics = clf.evaluate(ds["test"])
    assert metrics["n"] == len(ds["test"])


def test_fcsr_mtl_round_trips_with_its_tasks(fitted, tmp_path):
    ds, clf = fitted
    clf.save_pretrained(tmp_path / "run")
    again = Classifier.from_pretrained(tmp_path / "run")
    texts = list(ds["test"]["text"][:8])
    tasks = list(ds["test"]["task"][:8])
    assert again.task_names_ == ds.task_names
    np.testing.assert_array_equal(again.predict_proba(texts, tasks=tasks), clf.predict_proba(texts, tasks=tasks))


def test_a_single_task_model_pools_the_domains_and_refuses_tasks():
    ds = load_dataset("fdu_mtl", max_per_split=64)
    clf = Classifier("tfidf-lr").fit_dataset(ds)
    assert not clf.uses_tasks
    with pytest.raises(ConfigError, match="give no tasks"):
        clf.predict(["fine"], tasks=["books"])
    assert len(clf.predict(["fine"])) == 1


def test_fcsr_mtl_learns_the_sixteen_domains():
    """1,600 training reviews (100 a domain), 3 epochs: 0.73 on the 1,600 test reviews here,
    against 0.51 for the majority class; 0.62 is nine binomial standard deviations (0.0125)
    above chance, so a head that reads the wrong task or a body that does not learn fails."""
    import torch

    ds = load_dataset("fdu_mtl", max_per_split=1600)
    torch.manual_seed(0)
    clf = Classifier("fcsr-mtl", epochs=3, seed=0, progress=False).fit_dataset(ds)
    assert clf.evaluate(ds["test"])["accuracy"] > 0.62
