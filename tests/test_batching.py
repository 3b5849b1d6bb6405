import pickle
from collections import Counter

import numpy as np
import pytest
import torch

from torch.utils.data import DataLoader

from textcls.data import batching
from textcls.data.batching import (
    BucketBatchSampler,
    Collator,
    EncodedDataset,
    collate_flat,
    collate_hierarchical,
    make_loader,
)
from textcls.errors import ConfigError, DataError


@pytest.fixture(scope="module")
def sst2_lengths(data_dir):
    """Word counts of the real SST-2 training sentences (6,920 of them)."""
    lines = (data_dir / "sst2" / "train.tsv").read_text(encoding="utf-8").split("\n")[1:]
    lengths = [len(line.split("\t")[0].split()) for line in lines if line]
    assert len(lengths) == 6920
    return lengths


def padding_fraction(batches, lengths):
    lengths = np.asarray(lengths)
    real = sum(int(lengths[b].sum()) for b in batches)
    padded = sum(len(b) * int(lengths[b].max()) for b in batches)
    return 1 - real / padded


# --------------------------------------------------------------------------- collate


def test_collate_flat_exact_padding_masks_labels_and_index():
    ds = EncodedDataset([[5, 6, 7], [8], [9, 10]], [1, 0, 2], bigrams=[[11, 12], [], [13]])
    batch = collate_flat([ds[2], ds[0], ds[1]])
    assert set(batch) == {"input_ids", "mask", "bigram_ids", "bigram_mask", "index", "labels"}
    assert batch["input_ids"].dtype == torch.long
    assert batch["input_ids"].tolist() == [[9, 10, 0], [5, 6, 7], [8, 0, 0]]
    assert batch["mask"].dtype == torch.bool
    assert batch["mask"].tolist() == [[True, True, False], [True, True, True], [True, False, False]]
    assert batch["bigram_ids"].tolist() == [[13, 0], [11, 12], [0, 0]]
    assert batch["bigram_mask"].tolist() == [[True, False], [True, True], [False, False]]
    assert batch["index"].dtype == torch.long and batch["index"].tolist() == [2, 0, 1]
    assert batch["labels"].dtype == torch.long and batch["labels"].tolist() == [2, 1, 0]


def test_collate_flat_mask_follows_lengths_not_pad_id_and_no_labels_key_when_unknown():
    # A real token with id 0 stays real: masks come from lengths.
    ds = EncodedDataset([[0, 4], [3]])
    batch = collate_flat([ds[0], ds[1]], pad_id=0)
    assert "labels" not in batch and "bigram_ids" not in batch
    assert batch["mask"].tolist() == [[True, True], [True, False]]
    batch = collate_flat([ds[0], ds[1]], pad_id=-1)
    assert batch["input_ids"].tolist() == [[0, 4], [3, -1]]


def test_collate_flat_empty_document_has_all_false_mask_and_width_at_least_one():
    batch = collate_flat([{"index": 0, "input_ids": []}, {"index": 1, "input_ids": []}])
    assert batch["input_ids"].shape == (2, 1)
    assert batch["mask"].tolist() == [[False], [False]]


def test_collate_hierarchical_exact_tensors_and_masks():
    docs = [
        [[1, 2, 3], [4]],            # 2 sentences
        [[5], [6, 7], [8, 9, 10, 11]],  # 3 sentences, the longest sentence
        [[12, 13]],                  # 1 sentence
    ]
    ds = EncodedDataset(docs, [0, 1, 1])
    assert ds.hierarchical and ds.lengths == [4, 7, 2]
    batch = Collator("hierarchical")([ds[0], ds[1], ds[2]])
    assert set(batch) == {"input_ids", "word_mask", "sentence_mask", "index", "labels"}
    assert batch["input_ids"].shape == (3, 3, 4)
    assert batch["input_ids"].tolist() == [
        [[1, 2, 3, 0], [4, 0, 0, 0], [0, 0, 0, 0]],
        [[5, 0, 0, 0], [6, 7, 0, 0], [8, 9, 10, 11]],
        [[12, 13, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]],
    ]
    T, F = True, False
    assert batch["word_mask"].dtype == torch.bool
    assert batch["word_mask"].tolist() == [
        [[T, T, T, F], [T, F, F, F], [F, F, F, F]],
        [[T, F, F, F], [T, T, F, F], [T, T, T, T]],
        [[T, T, F, F], [F, F, F, F], [F, F, F, F]],
    ]
    assert batch["sentence_mask"].dtype == torch.bool
    assert batch["sentence_mask"].tolist() == [[T, T, F], [T, T, T], [T, F, F]]
    assert batch["index"].tolist() == [0, 1, 2]
    assert batch["labels"].tolist() == [0, 1, 1]


def test_collate_hierarchical_empty_sentence_and_empty_document_are_masked():
    examples = [
        {"index": 7, "input_ids": [[3, 4], [], [5]]},  # an empty sentence in the middle
        {"index": 8, "input_ids": []},                 # no sentences at all
    ]
    batch = collate_hierarchical(examples)
    assert batch["input_ids"].tolist() == [[[3, 4], [0, 0], [5, 0]], [[0, 0], [0, 0], [0, 0]]]
    assert batch["sentence_mask"].tolist() == [[True, False, True], [False, False, False]]
    assert batch["word_mask"][0].tolist() == [[True, True], [False, False], [True, False]]
    assert not batch["word_mask"][1].any()
    assert batch["index"].tolist() == [7, 8]


def test_multi_label_batches_are_float_multi_hot():
    ds = EncodedDataset([[1], [2, 3], [4]], [[0, 2], [], [3]], multi_label=True, num_classes=4)
    batch = make_loader(ds, 3, shuffle=False).__iter__().__next__()
    order = batch["index"].tolist()
    expected = {0: [1.0, 0.0, 1.0, 0.0], 1: [0.0, 0.0, 0.0, 0.0], 2: [0.0, 0.0, 0.0, 1.0]}
    assert batch["labels"].dtype == torch.float32
    assert batch["labels"].tolist() == [expected[i] for i in order]


def test_collator_is_picklable_and_rejects_bad_settings():
    collator = pickle.loads(pickle.dumps(Collator("flat", multi_label=True, num_classes=3)))
    batch = collator([{"index": 0, "input_ids": [1], "labels": [2]}])
    assert batch["labels"].tolist() == [[0.0, 0.0, 1.0]]
    with pytest.raises(ConfigError, match="shape 'tree'"):
        Collator("tree")
    with pytest.raises(ConfigError, match="num_classes"):
        Collator("flat", multi_label=True)


# --------------------------------------------------------------------------- dataset checks


def test_dataset_detects_shape_and_validates_inputs():
    assert EncodedDataset([[], [1, 2]]).shape == "flat"
    assert EncodedDataset([[], [[1], [2, 3]]]).shape == "hierarchical"
    assert EncodedDataset([[[1, 2]], [[3]]], hierarchical=True).lengths == [2, 1]
    with pytest.raises(DataError, match="document 1 .*hierarchical=True"):
        EncodedDataset([[1, 2], [[1], [2, 3]]], hierarchical=False)
    with pytest.raises(DataError, match="sentence 0 of document 1"):
        EncodedDataset([[[1]], [1, 2]], hierarchical=True)
    with pytest.raises(DataError, match="document 0 holds torch.float32"):
        EncodedDataset([[1.5, 2.0]])
    with pytest.raises(DataError, match="document 1 holds a negative token id"):
        EncodedDataset([[1], [2, -3]])
    with pytest.raises(DataError, match="got 1 labels for 2 documents"):
        EncodedDataset([[1], [2]], [0])
    with pytest.raises(DataError, match="label of document 1 is class 5, outside \\[0, 3\\)"):
        EncodedDataset([[1], [2]], [0, 5], num_classes=3)
    with pytest.raises(DataError, match="label of document 0 is a list; pass multi_label=True"):
        EncodedDataset([[1]], [[0, 1]])
    with pytest.raises(DataError, match="label of document 0 is 'pos'"):
        EncodedDataset([[1]], ["pos"])
    with pytest.raises(ConfigError, match="num_classes"):
        EncodedDataset([[1]], [[0]], multi_label=True)
    with pytest.raises(DataError, match="label of document 0 is class 2, outside \\[0, 2\\)"):
        EncodedDataset([[1]], [[0, 2]], multi_label=True, num_classes=2)
    with pytest.raises(DataError, match="got 1 bigram rows for 2 documents"):
        EncodedDataset([[1], [2]], bigrams=[[3]])
    with pytest.raises(ConfigError, match="bigram"):
        EncodedDataset([[[1]]], bigrams=[[3]])


def test_dataset_items_and_labels_property():
    ds = EncodedDataset([[4, 5], [6]], [1, 0], bigrams=[[9], [8, 7]])
    assert len(ds) == 2 and ds.has_labels and ds.has_bigrams
    item = ds[1]
    assert item["index"] == 1 and item["input_ids"].tolist() == [6] and item["labels"] == 0
    assert item["bigram_ids"].tolist() == [8, 7]
    assert ds.labels == [1, 0] and ds.lengths == [2, 1]
    assert EncodedDataset([[1]]).labels is None


# --------------------------------------------------------------------------- the vectorised collate path
# EncodedDataset stores flat documents in one array and pads a batch (and the batches after
# it, see collate_flat) straight from it; these hold it to the row-by-row collate_flat.


def ragged_documents(n, seed=0):
    """Ragged ids (real id 0 included), every 17th document empty, hashed bigrams, labels."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 40, size=n)
    lengths[::17] = 0
    ids = [rng.integers(0, 1000, size=k).tolist() for k in lengths]
    bigrams = [rng.integers(1, 1 << 21, size=max(int(k) - 1, 0)).tolist() for k in lengths]
    return ids, bigrams, rng.integers(0, 3, size=n).tolist()


def assert_same_batch(got, want):
    assert list(got) == list(want)  # the same keys, in the same order
    for key in want:
        assert got[key].dtype == want[key].dtype and got[key].shape == want[key].shape, key
        assert torch.equal(got[key], want[key]), key


@pytest.mark.parametrize("shuffle,replicas,rank,cells", [
    (True, 1, 0, batching.PREFETCH_CELLS), (False, 1, 0, batching.PREFETCH_CELLS),
    (True, 2, 1, batching.PREFETCH_CELLS), (True, 1, 0, 100),
])
def test_loader_batches_equal_row_by_row_collate(monkeypatch, shuffle, replicas, rank, cells):
    monkeypatch.setattr(batching, "PREFETCH_BATCHES", 16)  # refilled twice in the epoch's 38 batches
    monkeypatch.setattr(batching, "PREFETCH_CELLS", cells)  # 100: a refill every batch or two
    ids, bigrams, labels = ragged_documents(301)
    tasks = [i % 4 for i in range(301)]
    ds = EncodedDataset(ids, labels, bigrams=bigrams, num_classes=3, tasks=tasks)
    loader = make_loader(ds, 8, shuffle=shuffle, seed=5, num_replicas=replicas, rank=rank, bucket_factor=3)
    loader.batch_sampler.set_epoch(2)
    planned = [list(b) for b in loader.batch_sampler]
    assert len(planned) > batching.PREFETCH_BATCHES  # the plan is refilled at least once
    batches = list(loader)
    assert [b["index"].tolist() for b in batches] == planned
    for indices, batch in zip(planned, batches):
        assert_same_batch(batch, collate_flat([ds[i] for i in indices]))
    if replicas == 1:  # (rank 1's half of each length-sorted batch may hold none)
        assert any(not b["mask"].any(dim=1).all() for b in batches)  # empty documents were batched


def test_multi_label_and_pad_id_batches_equal_row_by_row_collate():
    ids, bigrams, _ = ragged_documents(90, seed=1)
    classes = [[i % 4, (i * 7) % 4] if i % 5 else [] for i in range(90)]  # some with no class
    ds = EncodedDataset(ids, classes, bigrams=bigrams, multi_label=True, num_classes=4)
    collator = Collator("flat", multi_label=True, num_classes=4, pad_id=-1)
    sampler = BucketBatchSampler(ds.lengths, 16, seed=3)
    for indices, batch in zip(list(sampler), DataLoader(ds, batch_sampler=sampler, collate_fn=collator)):
        want = collate_flat([ds[i] for i in indices], -1, multi_label=True, num_classes=4)
        assert_same_batch(batch, want)


def test_a_plan_collated_out_of_order_or_by_another_collator_gives_the_same_batches():
    ids, bigrams, labels = ragged_documents(200, seed=2)
    ds = EncodedDataset(ids, labels, bigrams=bigrams)
    planned = list(BucketBatchSampler(ds.lengths, 4, seed=1))
    for indices in reversed(planned):  # every request lands outside what was collated ahead
        assert_same_batch(Collator()(ds.__getitems__(indices)), collate_flat([ds[i] for i in indices]))
    first, second, third = planned[:3]
    Collator()(ds.__getitems__(first))  # collates the batches after it too, padded with 0
    assert_same_batch(Collator(pad_id=7)(ds.__getitems__(second)), collate_flat([ds[i] for i in second], 7))
    other = EncodedDataset([[i + 1] for i in range(200)])
    assert_same_batch(Collator(pad_id=7)(other.__getitems__(third)), collate_flat([other[i] for i in third], 7))
    # A planned batch is a plain list to pickle (DataLoader workers): it carries no plan.
    restored = pickle.loads(pickle.dumps(first))
    assert type(restored) is list and restored == list(first)


def test_make_loader_with_a_worker_process_gives_the_same_flat_batches():
    ids, bigrams, labels = ragged_documents(40, seed=3)
    ds = EncodedDataset(ids, labels, bigrams=bigrams)
    serial = list(make_loader(ds, 8, shuffle=True, seed=2))
    parallel = list(make_loader(ds, 8, shuffle=True, seed=2, num_workers=1))
    assert len(serial) == len(parallel) == 5
    for x, y in zip(serial, parallel):
        assert_same_batch(y, x)


def test_make_loader_iterates_as_a_dataloader_does_and_draws_the_same_random_numbers():
    ids, bigrams, labels = ragged_documents(120, seed=5)
    ds = EncodedDataset(ids, labels, bigrams=bigrams)
    ours = make_loader(ds, 16, shuffle=True, seed=4)
    assert isinstance(ours, DataLoader) and len(ours) == 8
    plain = DataLoader(ds, batch_sampler=BucketBatchSampler(ds.lengths, 16, seed=4), collate_fn=ds.collator())
    draws = []
    for loader in (ours, plain):
        torch.manual_seed(0)
        batches = iter(loader)  # DataLoader draws its base seed from the global generator here
        draws.append(torch.rand(3))
        draws.append([b["index"].tolist() for b in batches])
    assert torch.equal(draws[0], draws[2]) and draws[1] == draws[3]
    for x, y in zip(ours, plain):
        assert_same_batch(x, y)


def test_lists_of_ints_are_stored_as_the_row_by_row_check_stores_them():
    ids, bigrams, labels = ragged_documents(60, seed=4)
    fast = EncodedDataset(ids, labels, bigrams=bigrams)
    # Numpy rows take the row-by-row path (_id_row): the stored documents must not differ.
    slow = EncodedDataset([np.asarray(r, dtype=np.int32) for r in ids], labels,
                          bigrams=[np.asarray(r, dtype=np.int64) for r in bigrams])
    assert fast.lengths == slow.lengths == [len(r) for r in ids]
    for i in range(60):
        a, b = fast[i], slow[i]
        assert a["input_ids"].dtype == b["input_ids"].dtype == torch.long
        assert a["input_ids"].tolist() == b["input_ids"].tolist() == ids[i]
        assert a["bigram_ids"].tolist() == b["bigram_ids"].tolist() == bigrams[i]
    assert_same_batch(collate_flat([fast[i] for i in range(60)]), collate_flat([slow[i] for i in range(60)]))
    assert EncodedDataset([(3, 4), []])[0]["input_ids"].tolist() == [3, 4]
    # What the fast path cannot take still gets the row-by-row error naming the document.
    with pytest.raises(DataError, match="document 1 holds torch.bool"):
        EncodedDataset([[1], [True, False]])
    with pytest.raises(DataError, match="document 1 holds torch.float32"):
        EncodedDataset([[1], [2, 2.5]])
    with pytest.raises(DataError, match="document 0 is not a flat list of integer token ids"):
        EncodedDataset([[2**70]])
    with pytest.raises(DataError, match="bigram row of document 1 holds a negative token id"):
        EncodedDataset([[1], [2]], bigrams=[[3], [-4]])


# --------------------------------------------------------------------------- sampler


def test_sampler_covers_every_index_once_and_is_deterministic(sst2_lengths):
    sampler = BucketBatchSampler(sst2_lengths, 32, seed=3)
    first = list(sampler)
    assert len(first) == len(sampler) == 217  # ceil(6920 / 32)
    flat = [i for b in first for i in b]
    assert sorted(flat) == list(range(6920))
    assert sum(len(b) < 32 for b in first) == 1  # only the last (6920 % 32 = 8) is short
    assert list(BucketBatchSampler(sst2_lengths, 32, seed=3)) == first

    sampler.set_epoch(1)
    second = list(sampler)
    assert sorted(i for b in second for i in b) == list(range(6920))
    assert second != first
    assert [b for b in second[:5]] != [b for b in first[:5]]
    sampler.set_epoch(0)
    assert list(sampler) == first
    assert list(BucketBatchSampler(sst2_lengths, 32, seed=4)) != first


def test_sampler_seed_and_epoch_do_not_collide():
    lengths = list(range(200))
    a = BucketBatchSampler(lengths, 8, seed=0)
    a.set_epoch(1)
    b = BucketBatchSampler(lengths, 8, seed=1)
    assert list(a) != list(b)


def test_bucketed_batches_pad_far_less_than_random_batches(sst2_lengths):
    bucketed = padding_fraction(list(BucketBatchSampler(sst2_lengths, 32, seed=0)), sst2_lengths)
    rng = np.random.default_rng(0)
    perm = rng.permutation(len(sst2_lengths))
    random_batches = [perm[i:i + 32] for i in range(0, len(perm), 32)]
    random = padding_fraction(random_batches, sst2_lengths)
    # Measured: about 0.03 bucketed vs 0.52 random on SST-2 word counts.
    assert random > 0.4
    assert bucketed < 0.1 * random
    # Inside each batch lengths are close: the spread is a few tokens, not tens.
    lengths = np.asarray(sst2_lengths)
    spreads = [int(lengths[b].max() - lengths[b].min()) for b in BucketBatchSampler(sst2_lengths, 32)]
    assert np.median(spreads) <= 2


def test_unshuffled_sampler_is_sorted_by_length_and_covers_everything():
    lengths = [5, 1, 3, 1, 9, 2, 3]
    sampler = BucketBatchSampler(lengths, 3, shuffle=False)
    batches = list(sampler)
    # Stable sort: ties keep dataset order (1 before 3, 2 before 6).
    assert batches == [[1, 3, 5], [2, 6, 0], [4]]
    sampler.set_epoch(5)
    assert list(sampler) == batches


def test_unshuffled_sampler_bounded_in_padded_tokens(sst2_lengths):
    lengths = np.asarray(sst2_lengths)
    plain = BucketBatchSampler(lengths, 256, shuffle=False)
    bounded = BucketBatchSampler(lengths, 256, shuffle=False, max_pieces=2048)
    batches = list(bounded)
    # The same length-sorted order, cut into more batches: every index once, each batch within
    # 2,048 padded tokens (rows x its longest), and len() counts them.
    assert [i for b in batches for i in b] == [i for b in plain for i in b]
    assert len(batches) == len(bounded) > len(plain)
    assert all(len(b) * max(1, int(lengths[b].max())) <= 2048 for b in batches)
    assert all(len(b) <= 256 for b in batches)
    # A document longer than the bound is a batch alone.
    assert list(BucketBatchSampler([2, 9, 1], 4, shuffle=False, max_pieces=4)) == [[2, 0], [1]]
    # Training batches are the recipe's: no bound when shuffling; nor with drop_last (a bounded last
    # batch holds the longest documents) or DDP (every short batch would need repeats).
    for settings in ({"shuffle": True}, {"shuffle": False, "drop_last": True},
                     {"shuffle": False, "num_replicas": 2}):
        with pytest.raises(ConfigError, match="max_pieces bounds single-process evaluation batches"):
            BucketBatchSampler(lengths, 32, max_pieces=2048, **settings)
    with pytest.raises(ConfigError, match="'max_pieces' = 0"):
        BucketBatchSampler(lengths, 32, shuffle=False, max_pieces=0)


def test_bounded_loader_gives_each_document_the_same_padded_row(sst2_lengths):
    rng = np.random.default_rng(1)
    lengths = sst2_lengths[:300]
    dataset = EncodedDataset([rng.integers(1, 50, n).tolist() for n in lengths], labels=[i % 2 for i in range(300)])
    rows = {}
    for batch in make_loader(dataset, 256, shuffle=False, max_pieces=1024):
        assert batch["input_ids"].numel() <= max(1024, batch["input_ids"].shape[1])
        for index, ids, mask in zip(batch["index"].tolist(), batch["input_ids"], batch["mask"]):
            rows[index] = ids[mask].tolist()
    assert sorted(rows) == list(range(300))
    assert all(rows[i] == dataset[i]["input_ids"].tolist() for i in range(300))


def test_drop_last_removes_only_the_short_batch():
    lengths = list(range(23))
    for shuffle in (True, False):
        sampler = BucketBatchSampler(lengths, 5, shuffle=shuffle, drop_last=True, bucket_factor=2)
        batches = list(sampler)
        assert len(batches) == len(sampler) == 4
        assert all(len(b) == 5 for b in batches)
        assert len(set(i for b in batches for i in b)) == 20


@pytest.mark.parametrize("shuffle", [True, False])
def test_ddp_slices_concatenate_to_single_process_batches(sst2_lengths, shuffle):
    lengths = sst2_lengths[:1000]  # 1000 = 15 * 64 + 40: a short last batch, divisible by 2
    single = BucketBatchSampler(lengths, 64, shuffle=shuffle, seed=7)
    ranks = [BucketBatchSampler(lengths, 64, shuffle=shuffle, seed=7, num_replicas=2, rank=r) for r in (0, 1)]
    for epoch in (0, 1):
        for s in [single, *ranks]:
            s.set_epoch(epoch)
        one = list(single)
        r0, r1 = (list(s) for s in ranks)
        assert len(r0) == len(r1) == len(ranks[0]) == len(one) == 16
        assert [a + b for a, b in zip(r0, r1)] == one
        assert all(len(a) == len(b) for a, b in zip(r0, r1))


def test_ddp_pads_last_batch_by_repeating_at_most_replicas_minus_one():
    lengths = [3] * 14  # batch 6, 3 replicas: batches of 6, 6 and a last one of 2
    ranks = [BucketBatchSampler(lengths, 6, shuffle=False, num_replicas=3, rank=r) for r in range(3)]
    per_rank = [list(s) for s in ranks]
    assert [len(b) for b in per_rank] == [3, 3, 3]
    assert [len(s) for s in ranks] == [3, 3, 3]
    assert all(len(b) == 2 for b in per_rank[0][:2])
    last = [per_rank[r][2] for r in range(3)]
    assert last == [[12], [13], [12]]  # 1 repeat (the batch's first item) makes 3 equal slices
    seen = Counter(i for r in range(3) for b in per_rank[r] for i in b)
    assert set(seen) == set(range(14))
    assert sum(seen.values()) - 14 == 1


def test_ddp_single_item_last_batch_every_rank_gets_one():
    lengths = [1] * 5  # global batch 4 on 4 ranks: one full batch, then a batch of 1
    global_batches = BucketBatchSampler(lengths, 4, seed=5).global_batches()
    short = [i for i, b in enumerate(global_batches) if len(b) == 1]
    assert len(short) == 1
    out = [list(BucketBatchSampler(lengths, 4, seed=5, num_replicas=4, rank=r)) for r in range(4)]
    assert all(len(batches) == 2 for batches in out)
    # Every rank repeats the lone document (3 repeats = num_replicas - 1).
    assert [out[r][short[0]] for r in range(4)] == [global_batches[short[0]]] * 4


def test_sampler_rejects_bad_parameters():
    with pytest.raises(ConfigError, match="'batch_size' = 10 .*not divisible by num_replicas = 4"):
        BucketBatchSampler([1, 2, 3], 10, num_replicas=4)
    with pytest.raises(ConfigError, match="'rank' = 2"):
        BucketBatchSampler([1, 2, 3], 4, num_replicas=2, rank=2)
    with pytest.raises(ConfigError, match="'batch_size' = 0"):
        BucketBatchSampler([1, 2, 3], 0)
    with pytest.raises(ConfigError, match="'bucket_factor' = 0"):
        BucketBatchSampler([1, 2, 3], 2, bucket_factor=0)
    with pytest.raises(DataError, match="empty dataset"):
        BucketBatchSampler([], 2)


# --------------------------------------------------------------------------- loader


def _loader_batches(loader, epoch):
    loader.batch_sampler.set_epoch(epoch)
    return list(loader)


def test_make_loader_is_deterministic_across_constructions(sst2_lengths):
    rng = np.random.default_rng(0)
    ids = [rng.integers(2, 500, size=n).tolist() for n in sst2_lengths[:600]]
    labels = rng.integers(0, 2, size=600).tolist()
    ds = EncodedDataset(ids, labels)
    a = make_loader(ds, 32, shuffle=True, seed=11)
    b = make_loader(EncodedDataset(ids, labels), 32, shuffle=True, seed=11)
    a0, b0 = _loader_batches(a, 0), _loader_batches(b, 0)
    assert len(a0) == len(a) == 19
    for x, y in zip(a0, b0):
        assert x.keys() == y.keys()
        for key in x:
            assert torch.equal(x[key], y[key])
    # Each batch's rows really are those documents, padded.
    for batch in a0[:3]:
        for row, i, m, y in zip(batch["input_ids"], batch["index"], batch["mask"], batch["labels"]):
            assert row[m].tolist() == ids[i] and not row[~m].any() and int(y) == labels[i]
    a1 = _loader_batches(a, 1)
    assert [x["index"].tolist() for x in a1] != [x["index"].tolist() for x in a0]
    assert sorted(torch.cat([x["index"] for x in a1]).tolist()) == list(range(600))


def test_make_loader_with_a_worker_process_gives_the_same_batches():
    ds = EncodedDataset([[[1, 2], [3]], [[4]], [[5, 6, 7]], [[8], [9], [10]], [[11]]], [0, 1, 0, 1, 1])
    serial = list(make_loader(ds, 2, shuffle=True, seed=2))
    parallel = list(make_loader(ds, 2, shuffle=True, seed=2, num_workers=1))
    assert len(serial) == len(parallel) == 3
    for x, y in zip(serial, parallel):
        for key in ("input_ids", "word_mask", "sentence_mask", "index", "labels"):
            assert torch.equal(x[key], y[key])


def test_make_loader_rejects_non_encoded_dataset():
    with pytest.raises(ConfigError, match="EncodedDataset"):
        make_loader([[1, 2]], 2, shuffle=False)


def test_task_ids_travel_from_the_dataset_into_every_batch():
    data = EncodedDataset([[5, 6], [7], [8, 9, 10]], labels=[0, 1, 0], tasks=[2, 0, 1])
    batch = data.collator()([data[2], data[0]])
    assert batch["task_ids"].tolist() == [1, 2] and batch["index"].tolist() == [2, 0]
    assert "task_ids" not in EncodedDataset([[5]], labels=[0]).collator()([EncodedDataset([[5]], labels=[0])[0]])
    with pytest.raises(DataError, match="2 task ids for 3 documents"):
        EncodedDataset([[5, 6], [7], [8]], tasks=[0, 1])
    with pytest.raises(DataError, match="task id is negative"):
        EncodedDataset([[5]], tasks=[-1])


def test_prepare_gives_multi_task_batches_their_task_ids():
    from textcls.data import load_dataset
    from textcls.data.prepare import prepare

    ds = load_dataset("fdu_mtl", max_per_split=64)
    prepared = prepare(ds, {"shape": "flat", "lowercase": True})
    assert prepared.num_tasks == 16
    seen = []
    for batch in prepared.loader("test", 16):
        seen += list(zip(batch["index"].tolist(), batch["task_ids"].tolist()))
    expected = ds.task_ids("test")
    assert sorted(seen) == [(i, t) for i, t in enumerate(expected)]


def test_prepare_reads_a_column_at_once_in_the_rows_order():
    from textcls.data import load_dataset
    from textcls.data.prepare import column_values
    from textcls.data.splits import ensure_dev

    split = ensure_dev(load_dataset("mr", max_per_split=300), fraction=0.1, seed=4)["train"]  # a shuffled selection
    assert column_values(split, "text") == [row["text"] for row in split]
    assert column_values(split, "label") == [row["label"] for row in split]
    assert column_values({"text": ["a", "b"]}, "text") == ["a", "b"]  # not a datasets split


def test_prepare_builds_the_vocabulary_from_train_unless_every_split_is_asked_for():
    """vocab_splits="all" (Kim's process_data.py): a word that only the test split holds gets its
    own id and its GloVe vector instead of [UNK]; no label of dev or test is read for it."""
    import datasets as hf

    from textcls.data.prepare import prepare
    from textcls.data.records import TextDataset
    from textcls.text import UNK_ID

    splits = hf.DatasetDict({
        "train": hf.Dataset.from_dict({"text": ["a good film", "a bad film"], "label": ["pos", "neg"]}),
        "dev": hf.Dataset.from_dict({"text": ["a dull film"], "label": ["neg"]}),
        "test": hf.Dataset.from_dict({"text": ["a masterful film"], "label": ["pos"]}),
    })
    dataset = TextDataset("toy", splits, ["neg", "pos"])
    inputs = {"shape": "flat", "lowercase": True, "embeddings": "glove-6b-50d", "embedding_dim": 50}
    train_only = prepare(dataset, inputs)
    assert "masterful" not in train_only.pipeline.vocab
    assert UNK_ID in train_only.pipeline.encode(["a masterful film"]).ids[0]
    every = prepare(dataset, {**inputs, "vocab_splits": "all"})
    vocab = every.pipeline.vocab
    assert {"masterful", "dull"} <= set(vocab) and UNK_ID not in every.pipeline.encode(["a masterful film"]).ids[0]
    glove = prepare(TextDataset("toy", hf.DatasetDict({"train": splits["test"]}), ["neg", "pos"]), inputs)
    np.testing.assert_array_equal(every.embeddings.matrix[vocab.index("masterful")],
                                  glove.embeddings.matrix[glove.pipeline.vocab.index("masterful")])
    with pytest.raises(ConfigError, match="'vocab_splits' = 'test' is not one of train, all"):
        prepare(dataset, {**inputs, "vocab_splits": "test"})
