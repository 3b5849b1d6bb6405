"""Seeded stratified splits, ensure_dev, subsampling and the evaluation-time label check."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import datasets
import numpy as np
import pytest

from textcls.data import check_labels, ensure_dev, load_dataset, stratified_split, subsample
from textcls.data.records import TextDataset
from textcls.errors import ConfigError, DataError


def make_dataset(labels, multi=False, splits=("train",)) -> TextDataset:
    column = "labels" if multi else "label"
    parts = {
        s: datasets.Dataset.from_dict({"text": [f"{s} doc {i}" for i in range(len(labels))], column: list(labels)})
        for s in splits
    }
    names = sorted({l for x in labels for l in (x if multi else [x])})
    return TextDataset(name="toy", splits=datasets.DatasetDict(parts), label_names=names, multi_label=multi)


LABELS = ["a"] * 100 + ["b"] * 50 + ["c"] * 10


def test_stratified_split_exact_proportions_and_disjoint():
    keep, held = stratified_split(LABELS, 0.2, seed=0)
    assert len(held) == 32 and len(keep) == 128
    assert Counter(LABELS[i] for i in held) == {"a": 20, "b": 10, "c": 2}
    assert set(keep).isdisjoint(held) and set(keep) | set(held) == set(range(160))
    assert list(held) == sorted(held) and list(keep) == sorted(keep)


def test_stratified_split_same_seed_same_split_other_seed_other_split():
    a = stratified_split(LABELS, 0.2, seed=0)[1]
    b = stratified_split(LABELS, 0.2, seed=0)[1]
    c = stratified_split(LABELS, 0.2, seed=1)[1]
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)
    assert Counter(LABELS[i] for i in c) == {"a": 20, "b": 10, "c": 2}


def test_stratified_split_count_and_ceil_rule():
    assert len(stratified_split(LABELS, 15, seed=0)[1]) == 15
    assert len(stratified_split(["a", "b"] * 5, 0.15, seed=0)[1]) == 2  # ceil(1.5)


def test_multi_label_stratifies_on_first_label():
    labels = [["x", "y"]] * 40 + [["y"]] * 20
    _, held = stratified_split(labels, 0.25, seed=0)
    assert Counter(labels[i][0] for i in held) == {"x": 10, "y": 5}


def test_single_record_class_stays_on_kept_side():
    labels = ["a"] * 10 + ["b"] * 10 + ["rare"]
    keep, held = stratified_split(labels, 0.2, seed=0)
    assert 20 in keep and 20 not in held
    assert len(held) == 5 and set(Counter(labels[i] for i in held).values()) == {2, 3}


def test_tiny_data_falls_back_to_seeded_random_split():
    labels = ["a", "b", "c", "d", "e", "a"]
    keep, held = stratified_split(labels, 0.2, seed=0)
    assert len(held) == 2 and len(keep) == 4
    assert np.array_equal(held, stratified_split(labels, 0.2, seed=0)[1])


def test_stratified_split_refuses_impossible_requests():
    with pytest.raises(ConfigError, match="fraction"):
        stratified_split(LABELS, 1.0, seed=0)
    with pytest.raises(DataError, match="cannot hold out"):
        stratified_split(["a"], 0.5, seed=0)


def test_ensure_dev_carves_stratified_dev_and_notes_it():
    ds = make_dataset(LABELS, splits=("train", "test"))
    out = ensure_dev(ds, fraction=0.1, seed=0)
    assert {k: len(v) for k, v in out.splits.items()} == {"train": 144, "dev": 16, "test": 160}
    assert list(out.splits) == ["train", "dev", "test"]
    assert Counter(out["dev"]["label"]) == {"a": 10, "b": 5, "c": 1}
    assert set(out["dev"]["text"]).isdisjoint(out["train"]["text"])
    assert out.split_notes["dev"] == "seeded stratified 10% of train (16 of 160 records, seed=0)"
    assert out.split_notes["train"] == "train, minus the dev split"
    assert "dev" not in ds.splits  # the input is not modified
    assert list(ensure_dev(ds, 0.1, 0)["dev"]["text"]) == list(out["dev"]["text"])
    assert list(ensure_dev(ds, 0.1, 1)["dev"]["text"]) != list(out["dev"]["text"])


def test_ensure_dev_keeps_an_existing_dev_split():
    ds = make_dataset(LABELS, splits=("train", "dev"))
    assert ensure_dev(ds) is ds


def test_ensure_dev_on_multi_label_data():
    ds = make_dataset([["x", "y"]] * 40 + [["y"]] * 20, multi=True)
    out = ensure_dev(ds, fraction=0.25, seed=0)
    assert len(out["dev"]) == 15 and out["dev"].features["labels"] == datasets.List(datasets.Value("string"))


def test_ensure_dev_rejects_bad_fraction():
    with pytest.raises(ConfigError, match="dev_fraction"):
        ensure_dev(make_dataset(LABELS), fraction=0.0)


def test_subsample_keeps_balance_and_notes_it():
    ds = make_dataset(LABELS, splits=("train", "test"))
    out = subsample(ds, 16, seed=0)
    assert {k: len(v) for k, v in out.splits.items()} == {"train": 16, "test": 16}
    assert Counter(out["train"]["label"]) == {"a": 10, "b": 5, "c": 1}
    assert out.split_notes["train"].endswith("stratified subsample of 16 of 160 (split_seed=0)")
    assert subsample(ds, 1000, seed=0)["train"].num_rows == 160


def test_test_fraction_and_split_seed_on_a_user_file(tmp_path):
    path = tmp_path / "d.tsv"
    path.write_text("".join(f"{'ab'[i % 2]}\tdoc {i}\n" for i in range(40)))
    a = load_dataset(str(path), test_fraction=0.25)
    assert {k: len(v) for k, v in a.splits.items()} == {"train": 30, "test": 10}
    assert Counter(a["test"]["label"]) == {"a": 5, "b": 5}
    same = load_dataset(str(path), test_fraction=0.25)
    other = load_dataset(str(path), test_fraction=0.25, split_seed=7)
    assert list(a["test"]["text"]) == list(same["test"]["text"])
    assert list(a["test"]["text"]) != list(other["test"]["text"])


def _split_folder(tmp_path):
    """A folder of train.tsv (30 records) and test.tsv (12): data with its own test split."""
    folder = tmp_path / "splits"
    folder.mkdir()
    for split, n in (("train", 30), ("test", 12)):
        (folder / f"{split}.tsv").write_text("".join(f"{'ab'[i % 2]}\tdoc {i}\n" for i in range(n)))
    return folder


def test_a_test_fraction_is_refused_where_the_data_has_its_own_test_split(tmp_path):
    """It was ignored: --test-fraction 0.3 on trec scored the official 500 questions, silently."""
    folder = _split_folder(tmp_path)
    with pytest.raises(ConfigError) as err:
        load_dataset(str(folder), test_fraction=0.3)
    assert str(err.value) == (f"parameter 'test_fraction' = 0.3: '{folder}' has its own test split (12 records), "
                              "which is kept; leave test_fraction out")
    with pytest.raises(ConfigError, match=r"^parameter 'test_fraction' = 0.5: 'trec' has its own test split \(500 "):
        load_dataset("trec", test_fraction=0.5)
    assert {k: len(v) for k, v in load_dataset(str(folder)).splits.items()} == {"train": 30, "test": 12}


def test_a_split_seed_is_refused_where_it_draws_nothing(tmp_path):
    """It was ignored: --split-seed 3 on trec trained and scored on exactly the splits of seed 0."""
    folder = _split_folder(tmp_path)
    with pytest.raises(ConfigError) as err:
        load_dataset(str(folder), split_seed=3)
    assert str(err.value) == (f"parameter 'split_seed' = 3: '{folder}' has its own test split (12 records), which is "
                              "kept, and no subsample is drawn (max_per_split= (CLI: --max-per-split) is not set); "
                              "leave split_seed out")
    # With a subsample it draws one: seeds 3 and 4 keep other records of the same test split.
    three, four = (load_dataset(str(folder), split_seed=s, max_per_split=6) for s in (3, 4))
    assert list(three["test"]["text"]) != list(four["test"]["text"])
    assert three.test_split is None  # the data's own test split: nothing carved


def test_a_carved_test_split_is_recorded():
    """What a run saves (config.json "test_split") so that evaluate can carve the same one again."""
    carved = load_dataset("mr", test_fraction=0.3, split_seed=3)
    assert carved.test_split == {"fraction": 0.3, "split_seed": 3}
    assert load_dataset("mr").test_split == {"fraction": 0.1, "split_seed": 0}
    assert load_dataset("trec").test_split is None


def test_the_source_digest_names_the_records_carved_from_whatever_the_carve(tmp_path):
    """What a run saves so that evaluate knows its data under another name or path (a copy)."""
    digest = load_dataset("mr").source_digest()
    assert len(digest) == 64
    assert load_dataset("mr", test_fraction=0.3, split_seed=3, max_per_split=100).source_digest() == digest
    assert load_dataset("trec").source_digest() is None  # its own test split: nothing carved
    path = tmp_path / "d.tsv"
    path.write_text("".join(f"{'ab'[i % 2]}\tdoc {i}\n" for i in range(40)))
    copy = tmp_path / "copy.tsv"
    copy.write_text(path.read_text())
    assert load_dataset(str(path)).source_digest() == load_dataset(str(copy), split_seed=5).source_digest()
    path.write_text("".join(f"{'ab'[i % 2]}\tdoc {i}\n" for i in range(39)))
    assert load_dataset(str(path)).source_digest() != load_dataset(str(copy)).source_digest()


def test_records_digest_changes_with_the_records_their_order_labels_and_split():
    from textcls.data.records import records_digest

    a = load_dataset("mr", max_per_split=200)
    assert records_digest(a) == records_digest(load_dataset("mr", max_per_split=200))
    assert records_digest(a) != records_digest(load_dataset("mr", max_per_split=200, split_seed=1))
    train = a["train"]
    flipped = replace(a, splits=datasets.DatasetDict({**a.splits, "train": train.map(
        lambda r, i: {"label": {"neg": "pos", "pos": "neg"}[r["label"]] if i == 0 else r["label"]},
        with_indices=True)}))
    assert records_digest(flipped) != records_digest(a)
    reordered = replace(a, splits=datasets.DatasetDict({**a.splits, "train": train.select(range(len(train))[::-1])}))
    assert records_digest(reordered) != records_digest(a)
    # Only the named splits count: the test split is not what training read.
    assert records_digest(a, ("train",)) == records_digest(replace(a, splits=datasets.DatasetDict(
        {"train": train})), ("train",))


def test_check_labels_names_the_record():
    split = datasets.Dataset.from_dict({"text": ["x", "y", "z", "w"], "label": ["a", "b", "q", "r"]})
    with pytest.raises(DataError) as err:
        check_labels(split, ["a", "b"], where="imdb test")
    msg = str(err.value)
    assert msg.startswith("imdb test: record 2 has label 'q', which is not one of the 2 known classes (a, b)")
    assert "(1 more records too)" in msg and "\n" not in msg
    check_labels(split, ["a", "b", "q", "r"], where="ok")


def test_check_labels_multi_label():
    split = datasets.Dataset.from_dict({"text": ["x", "y"], "labels": [["a"], ["a", "z"]]})
    with pytest.raises(DataError, match=r"reuters test: record 1 has label 'z'"):
        check_labels(split, ["a", "b"], where="reuters test")
