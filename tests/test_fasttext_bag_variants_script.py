"""benchmarks/fasttext_bag_variants.py swaps two of the engine's private functions for a variant's
fit: each swap must act (the last epoch kept, a different order) and be undone afterwards."""

import pytest

from conftest import load_benchmark_script
from textcls import load_dataset
from textcls.data.splits import ensure_dev
from textcls.train import engine


@pytest.fixture(scope="module")
def variants():
    return load_benchmark_script("fasttext_bag_variants")


@pytest.fixture(scope="module")
def trec_slice():
    return ensure_dev(load_dataset("trec", max_per_split=600), fraction=0.1, seed=0)


def test_last_epoch_keeps_the_last_epoch_and_the_engine_is_restored(variants, trec_slice):
    originals = engine._per_example_order, engine._is_better
    last = variants._fit("last epoch", trec_slice, 0, None).fit_report()
    assert last["best_epoch"] == last["epochs_run"]
    assert (engine._per_example_order, engine._is_better) == originals


def test_uniform_order_and_doubled_epochs_change_the_fit(variants, trec_slice):
    preset = variants._fit("preset", trec_slice, 0, None)
    uniform = variants._fit("uniform order", trec_slice, 0, None)
    fixed = variants._fit("fixed order", trec_slice, 0, None)
    doubled = variants._fit("epochs x2", trec_slice, 0, preset.fit_report()["epochs_run"])
    assert doubled.fit_report()["epochs_run"] == 2 * preset.fit_report()["epochs_run"]
    texts = list(trec_slice["test"]["text"])
    assert (preset.predict_proba(texts) != uniform.predict_proba(texts)).any()
    assert (fixed.predict_proba(texts) != uniform.predict_proba(texts)).any()
    order = variants._fixed_order_for(3)
    loader = type("Loader", (), {"dataset": list(range(50))})()
    orders = [order(loader).tolist() for _ in range(2)]
    assert orders[0] == orders[1] and sorted(orders[0]) == list(range(50)) and orders[0] != list(range(50))
    assert engine._per_example_order.__name__ == "_per_example_order"
