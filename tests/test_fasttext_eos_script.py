"""benchmarks/fasttext_eos.py: its stand-in for fastText's input (word hashes, ``</s>``, hashed
bigrams) must be fastText's, or its comparison of the loop with fastText tests nothing."""

import numpy as np
import pytest

from conftest import load_benchmark_script
from textcls import load_dataset
from textcls.benchmark.peers import FastTextPeer
from textcls.data.prepare import column_values


@pytest.fixture(scope="module")
def fasttext_eos():
    return load_benchmark_script("fasttext_eos")


def test_word_hash_is_fnv1a_with_fasttexts_signed_bytes(fasttext_eos):
    # FNV-1a 32-bit reference values (offset basis, "a", "foobar").
    assert fasttext_eos.fasttext_word_hash("") == 0x811C9DC5
    assert fasttext_eos.fasttext_word_hash("a") == 0xE40C292C
    assert fasttext_eos.fasttext_word_hash("foobar") == 0xBF9CF968
    # "é" is bytes c3 a9; fastText xors them as int8, sign-extended to 32 bits.
    h = 0x811C9DC5
    for byte in (0xFFFFFFC3, 0xFFFFFFA9):
        h = (h ^ byte) * 16777619 & 0xFFFFFFFF
    assert fasttext_eos.fasttext_word_hash("é") == h


def test_lines_end_with_eos_and_unknown_words_keep_their_bigrams(fasttext_eos):
    vocab = {"a": 0, "b": 1, "</s>": 2}
    hashes = {t: fasttext_eos.fasttext_word_hash(t) for t in ("a", "b", "zz", "</s>")}

    def bigram(x, y):
        return ((hashes[x] * 116049371 + hashes[y]) & (1 << 64) - 1) % 1000

    ids, starts, lengths, bigrams, bigram_starts, bigram_lengths = fasttext_eos.encode_lines(
        ["a b", "zz a"], vocab, True, 1000)
    assert ids.tolist() == [0, 1, 2, 0, 2] and starts.tolist() == [0, 3] and lengths.tolist() == [3, 2]
    assert bigrams.tolist() == [bigram("a", "b"), bigram("b", "</s>"), bigram("zz", "a"), bigram("a", "</s>")]
    assert bigram_starts.tolist() == [0, 2] and bigram_lengths.tolist() == [2, 2]
    no_end = fasttext_eos.encode_lines(["a b"], vocab, False, 1000)
    assert no_end[0].tolist() == [0, 1] and no_end[3].tolist() == [bigram("a", "b")]


def test_the_loop_learns_trec_from_fasttexts_tokens(fasttext_eos, monkeypatch):
    monkeypatch.setitem(fasttext_eos.TUTORIAL, "bucket", 4096)
    monkeypatch.setitem(fasttext_eos.TUTORIAL, "dim", 10)
    monkeypatch.setitem(fasttext_eos.TUTORIAL, "epoch", 10)
    data = load_dataset("trec", max_per_split=800)
    peer, names = FastTextPeer(seed=0), list(data.label_names)
    lines = {s: [peer._line(t) for t in column_values(data[s], "text")] for s in ("train", "test")}
    labels = {s: np.asarray([names.index(y) for y in column_values(data[s], "label")]) for s in ("train", "test")}
    majority = np.bincount(labels["test"]).max() / len(labels["test"])
    model = fasttext_eos.train_loop(lines["train"], labels["train"], len(names), True, seed=0)
    accuracy = (fasttext_eos.predict_loop(model, lines["test"], True) == labels["test"]).mean()
    assert accuracy > majority + 0.2
