import gzip
import json
import re

import pytest

from textcls.errors import CheckpointError, ConfigError, DataError
from textcls.text import PAD_ID, UNK_ID, TextPipeline, hash_bigrams, normalize, normalize_batch

CORPUS = ["the cat sat", "the dog sat", "the cat ran"]
# Frequencies: the 3, cat 2, sat 2, dog 1, ran 1 -> most frequent first, ties in string order.
CORPUS_VOCAB = ["[PAD]", "[UNK]", "the", "cat", "sat", "dog", "ran"]


# ---------------------------------------------------------------- normalisers


def test_no_settings_is_identity():
    text = "Keep <b>This</b>, As-Is!"
    assert normalize(text) == text


def test_lowercase():
    assert normalize("Hello WORLD Über", lowercase=True) == "hello world über"


def test_strip_html_tags_become_spaces_but_comparisons_stay():
    assert normalize("a<br />b<br/>c <i>d</i>", strip_html=True) == "a b c  d "
    assert normalize("a < b > c <3", strip_html=True) == "a < b > c <3"


def test_hcan_charset_keeps_letters_digits_and_sentence_marks():
    text = "It's $4.95, (really)! Über-cool? ok_x 3½"
    assert normalize(text, lowercase=True, charset="hcan") == "it s  4.95   really ! über cool? ok x 3½"


def _kims_clean_str(string: str, trec: bool = False) -> str:
    """Kim 2014's released clean_str (CNN_sentence, process_data.py), as written there, except
    that "(" and ")" become themselves: his replacement strings " \\( " keep the backslash."""
    string = re.sub(r"[^A-Za-z0-9(),!?\'\`]", " ", string)
    for clitic in ("'s", "'ve", "n't", "'re", "'d", "'ll"):
        string = string.replace(clitic, " " + clitic)
    for mark in ",!()?":
        string = string.replace(mark, f" {mark} ")
    string = re.sub(r"\s{2,}", " ", string)
    return string.strip() if trec else string.strip().lower()


def test_kim_charset_with_clitics_tokenises_real_mr_sentences_as_kims_clean_str():
    from textcls import load_dataset

    texts = list(load_dataset("mr")["train"]["text"])
    ours = TextPipeline(lowercase=True, charset="kim").tokenize(texts)
    kims = [_kims_clean_str(text).split() for text in texts]
    mismatched = [i for i, tokens in enumerate(kims) if ours[i] != tokens]
    assert mismatched == [], (texts[mismatched[0]], ours[mismatched[0]], kims[mismatched[0]])
    assert ["it", "'s", "so", "laddish"] == ours[0][:4]
    # TREC keeps its case in Kim's code: lowercase=False.
    question = "What's the capital of Côte d'Ivoire (in 1990)?"
    assert TextPipeline(lowercase=False, charset="kim").tokenize([question])[0] == [
        "What", "'s", "the", "capital", "of", "C", "te", "d'Ivoire", "(", "in", "1990", ")", "?"]
    with pytest.raises(ConfigError, match="'clitics' = True is not for charset 'kim'"):
        TextPipeline(charset="kim", clitics=True)


def test_kim_charset_gives_kims_table_1_vocabularies():
    """Kim (2014), Table 1, |V| over each whole dataset: MR 18,765, MPQA 6,246, TREC 9,592 (cased,
    as his code leaves TREC). The SingleCNN paper's Table 1 has 18,764 and 6,246 for MR and MPQA:
    it read the data through the same code."""
    from textcls import load_dataset

    for name, lowercase, size in (("mr", True, 18765), ("mpqa", True, 6246), ("trec", False, 9592)):
        splits = load_dataset(name)
        texts = [text for split in ("train", "test") for text in splits[split]["text"]]
        tokens = TextPipeline(lowercase=lowercase, charset="kim").tokenize(texts)
        assert len({token for doc in tokens for token in doc}) == size, name


def test_settings_compose_html_before_charset():
    # Without strip_html first, the charset would leave "br" behind as a word.
    assert normalize("Fine.<br /><br />Bad!", strip_html=True, lowercase=True, charset="hcan") == "fine.  bad!"
    assert normalize("Fine.<br />Bad!", lowercase=True, charset="hcan") == "fine. br   bad!"


def test_newsgroups_strips_header_footer_and_quotes():
    post = (
        "From: a@b.c\nSubject: hi\n\nHello there.\n> quoted line\n"
        "In article <x>, bob writes:\nMy reply.\n\n-- \nBob\n"
    )
    assert normalize(post, newsgroups=True) == "Hello there.\nMy reply.\n"


def test_newsgroups_on_a_real_20news_post(data_dir):
    with gzip.open(data_dir / "20news" / "train.jsonl.gz", "rt", encoding="utf-8") as f:
        records = [json.loads(f.readline()) for _ in range(3)]
    post = records[2]
    assert post["id"] == "alt.atheism/51119" and post["text"].startswith("From: I3150101@dbstu1.rz.tu-bs.de")
    stripped = normalize(post["text"], newsgroups=True)
    assert stripped.startswith(" \n \nThe argument goes as follows: Q-oid quotes appear in John")
    assert stripped.endswith("arguments based on Mark are pretty weak.")
    for gone in ("From:", "Subject:", "Organization:", "Lines:", "writes:", "Charley Wingate"):
        assert gone not in stripped
    assert not any(line.startswith(">") for line in stripped.split("\n"))


def test_normalize_batch_and_unknown_setting():
    assert normalize_batch(["A<br/>B", "C"], lowercase=True, strip_html=True) == ["a b", "c"]
    with pytest.raises(ConfigError, match="unknown normaliser setting 'lowercas'.*lowercase"):
        normalize("x", lowercas=True)
    with pytest.raises(ConfigError, match="'charset' = 'ascii'"):
        normalize("x", charset="ascii")
    with pytest.raises(DataError, match="text #1 is a NoneType"):
        normalize_batch(["ok", None])


# ---------------------------------------------------------------- vocabulary


def test_fit_encode_exact_ids_and_counts():
    pipe = TextPipeline().fit(CORPUS)
    assert pipe.vocab == CORPUS_VOCAB
    assert pipe.vocab_size == 7
    assert pipe.token_counts == [0, 0, 3, 2, 2, 1, 1]
    encoded = pipe.encode(["The cat ran away", "dog"])
    assert encoded.ids == [[2, 3, 6, UNK_ID], [5]]
    assert encoded.unknown_tokens == 1 and encoded.tokens_total == 5
    assert encoded.bigrams is None


def test_fit_encode_equals_fit_then_encode():
    a = TextPipeline(bigram_buckets=50, max_length=2)
    b = TextPipeline(bigram_buckets=50, max_length=2)
    together = a.fit_encode(CORPUS + [""])
    separate = b.fit(CORPUS + [""]).encode(CORPUS + [""])
    assert together == separate
    assert together.empty_documents == 1


def test_min_freq_and_max_vocab():
    assert TextPipeline(min_freq=2).fit(CORPUS).vocab == ["[PAD]", "[UNK]", "the", "cat", "sat"]
    capped = TextPipeline(max_vocab=4).fit(CORPUS)
    assert capped.vocab == ["[PAD]", "[UNK]", "the", "cat"]
    assert capped.encode(["the dog sat"]).ids == [[2, UNK_ID, UNK_ID]]
    with pytest.raises(DataError, match="min_freq=9"):
        TextPipeline(min_freq=9).fit(CORPUS)


def test_tokenizer_json_describes_the_normaliser(tmp_path):
    pipe = TextPipeline(lowercase=True, strip_html=True, charset="hcan").fit(["Good.<br />Film!"])
    saved = json.loads(pipe.save(tmp_path).read_text())
    steps = saved["normalizer"]["normalizers"]
    assert [s["type"] for s in steps] == ["Replace", "Lowercase", "Replace"]
    assert saved["pre_tokenizer"]["type"] == "Whitespace"
    assert saved["model"]["type"] == "WordLevel" and saved["model"]["unk_token"] == "[UNK]"
    assert pipe.vocab == ["[PAD]", "[UNK]", "!", ".", "film", "good"]


def test_save_load_round_trip_gives_identical_ids(tmp_path):
    settings = dict(strip_html=True, charset="hcan", max_length=6, bigram_buckets=97)
    pipe = TextPipeline(**settings).fit(["A film.<br />A fine film!", "Bad film? Yes, bad."])
    pipe.save(tmp_path)
    loaded = TextPipeline.load(tmp_path, json.loads(json.dumps(pipe.settings())))
    texts = ["a FINE film. bad? unknown words here, many of them", "", "film"]
    assert loaded.vocab == pipe.vocab
    assert loaded.settings() == pipe.settings()
    assert loaded.encode(texts) == pipe.encode(texts)
    assert loaded.encode_sentences(texts).sentences == pipe.encode_sentences(texts).sentences


def test_load_rejects_missing_file_and_other_settings(tmp_path):
    with pytest.raises(CheckpointError, match="tokenizer.json is missing"):
        TextPipeline.load(tmp_path, {})
    TextPipeline(lowercase=True).fit(CORPUS).save(tmp_path)
    with pytest.raises(CheckpointError, match="normalizer does not match"):
        TextPipeline.load(tmp_path, {"lowercase": False})
    (tmp_path / "tokenizer.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="not a valid tokenizer file"):
        TextPipeline.load(tmp_path, {})


# ---------------------------------------------------------------- truncation and empties


def test_truncation_is_counted():
    pipe = TextPipeline(max_length=3).fit(["a b c d e", "a b", "a b c d"])
    encoded = pipe.encode(["a b c d e", "a b", "a b c d"])
    assert [len(ids) for ids in encoded.ids] == [3, 2, 3]
    assert encoded.stats() == {
        "documents": 3,
        "tokens_total": 11,
        "tokens_dropped": 3,
        "documents_truncated": 2,
        "empty_documents": 0,
        "unknown_tokens": 0,
    }


def test_empty_documents_become_one_unk_and_are_counted():
    pipe = TextPipeline(strip_html=True, charset="hcan").fit(["good film"])
    encoded = pipe.encode(["", "<br />", "$$$ %%%", "good"])
    assert encoded.ids == [[UNK_ID], [UNK_ID], [UNK_ID], [pipe.vocab.index("good")]]
    assert encoded.empty_documents == 3
    assert encoded.tokens_total == 1 and encoded.unknown_tokens == 0
    assert pipe.encode_sentences([""]).sentences == [[[UNK_ID]]]


# ---------------------------------------------------------------- sentences


def test_sentence_split_keeps_the_punctuation_and_caps_are_counted():
    text = "The cat sat. The dog ran! Did it? . yes"
    pipe = TextPipeline().fit([text])
    ids = {token: i for i, token in enumerate(pipe.vocab)}
    full = pipe.encode_sentences([text])
    assert [len(s) for s in full[0]] == [4, 4, 4, 1]
    # A stray "." right after "?" joins the sentence it follows.
    assert full[0][2] == [ids["did"], ids["it"], ids["?"], ids["."]]
    assert full.sentences_total == 4 and full.tokens_total == 13

    capped = TextPipeline(max_sentences=2, max_sentence_length=3).fit([text]).encode_sentences([text, "yes"])
    assert len(capped) == 2
    assert [len(s) for s in capped[0]] == [3, 3] and capped[1] == [[ids["yes"]]]
    assert capped.stats() == {
        "documents": 2,
        "sentences_total": 5,
        "sentences_dropped": 2,
        "documents_capped": 1,
        "sentences_truncated": 2,
        "tokens_total": 14,
        "tokens_dropped": 7,
        "empty_documents": 0,
        "unknown_tokens": 0,
    }


def test_tokenize_gives_normalised_words_before_the_vocabulary():
    pipe = TextPipeline(strip_html=True)
    assert pipe.tokenize(["Hello,<br />World!", "rare"]) == [["hello", ",", "world", "!"], ["rare"]]


# ---------------------------------------------------------------- bigrams


def test_bigram_hash_known_values_range_and_determinism():
    # fastText: h = a * 116049371 + b; id = h % buckets + 1.
    assert hash_bigrams([[2, 3]], 1000) == [[746]]
    assert hash_bigrams([[5, 7]], 2_000_000) == [[246863]]
    docs = [[2, 3, 4], [5], [], [6, 7, 8, 9]]
    first = hash_bigrams(docs, 13)
    assert first == hash_bigrams(docs, 13)
    assert [len(b) for b in first] == [2, 0, 0, 3]
    assert all(1 <= h <= 13 for b in first for h in b)
    assert first[0] == [(2 * 116049371 + 3) % 13 + 1, (3 * 116049371 + 4) % 13 + 1]


def test_pipeline_bigrams_follow_the_truncated_ids():
    pipe = TextPipeline(bigram_buckets=10, max_length=3).fit(CORPUS)
    encoded = pipe.encode(["the cat sat the dog", "the"])
    assert encoded.bigrams == hash_bigrams(encoded.ids, 10)
    assert [len(b) for b in encoded.bigrams] == [2, 0]


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"min_freq": 0}, r"'min_freq' = 0 is outside its allowed range \[1, "),
        ({"max_vocab": 2}, r"'max_vocab' = 2 is outside its allowed range \[3, .*or none"),
        ({"max_length": 0}, r"'max_length' = 0 is outside"),
        ({"max_sentences": -1}, r"'max_sentences' = -1 is outside"),
        ({"max_sentence_length": 1.5}, r"'max_sentence_length' = 1.5 is outside"),
        ({"bigram_buckets": -1}, r"'bigram_buckets' = -1 is outside its allowed range \[0, "),
        ({"min_freq": True}, r"'min_freq' = True is outside"),
        ({"charset": "ascii"}, r"'charset' = 'ascii' is not one of: none, hcan, kim"),
        ({"lowercase": "yes"}, r"'lowercase' = 'yes' must be true or false"),
    ],
)
def test_bad_settings_name_the_parameter_and_range(settings, message):
    with pytest.raises(ConfigError, match=message):
        TextPipeline(**settings)


def test_encode_before_fit_and_bad_texts():
    with pytest.raises(ConfigError, match=r"no vocabulary yet; call fit\(train_texts\)"):
        TextPipeline().encode(["x"])
    with pytest.raises(DataError, match="no texts"):
        TextPipeline().fit([])
    with pytest.raises(DataError, match="text #1 is a float"):
        TextPipeline().fit(["ok", float("nan")])


def test_pad_is_zero_and_settings_are_json():
    pipe = TextPipeline(charset="hcan", max_vocab=100).fit(CORPUS)
    assert pipe.vocab[PAD_ID] == "[PAD]" and pipe.vocab[UNK_ID] == "[UNK]"
    assert all(PAD_ID not in ids for ids in pipe.encode(CORPUS).ids)
    assert json.loads(json.dumps(pipe.settings())) == pipe.settings()
    assert TextPipeline(**pipe.settings()).settings() == pipe.settings()


def test_literal_special_tokens_in_text_are_plain_words(tmp_path):
    pipe = TextPipeline().fit(["the [PAD] cat", "[UNK]"])
    ids = {token: i for i, token in enumerate(pipe.vocab)}
    assert pipe.encode(["[PAD] cat"]).ids == [[ids["["], ids["pad"], ids["]"], ids["cat"]]]
    assert json.loads(pipe.save(tmp_path).read_text())["added_tokens"] == []
    with pytest.raises(ConfigError, match="unknown text pipeline setting 'max_len'.*max_length"):
        TextPipeline.load(tmp_path, {"max_len": 3})


# ---------------------------------------------------------------- end token (fastText's </s>)


def test_end_token_ends_every_document_after_the_cut_and_joins_the_last_bigram():
    pipe = TextPipeline(end_token=True, bigram_buckets=97, max_length=2).fit(CORPUS)
    end = pipe.end_id
    assert pipe.vocab[:-1] == CORPUS_VOCAB and pipe.vocab[-1] == "[END]" and end == len(CORPUS_VOCAB)
    assert pipe.token_counts == [0, 0, 3, 2, 2, 1, 1, 3]  # one [END] per training document
    encoded = pipe.encode(["the cat sat", "", "dog"])
    assert encoded.ids == [[2, 3, end], [UNK_ID, end], [5, end]]
    # The cut counts real tokens only; [END] is not one of them.
    assert (encoded.documents_truncated, encoded.tokens_dropped, encoded.tokens_total) == (1, 1, 4)
    assert encoded.bigrams == hash_bigrams(encoded.ids, 97)
    assert [len(b) for b in encoded.bigrams] == [2, 1, 1]
    flat = pipe.encode_flat(["the cat sat", "", "dog"])
    assert flat.ids.tolist() == sum(encoded.ids, []) and flat.lengths.tolist() == [3, 2, 2]
    assert flat.bigrams.tolist() == sum(encoded.bigrams, []) and flat.bigram_lengths.tolist() == [2, 1, 1]
    assert TextPipeline(end_token=True, max_vocab=4).fit(CORPUS).vocab == ["[PAD]", "[UNK]", "the", "[END]"]


def test_end_token_cannot_come_from_text_and_is_checked_on_load(tmp_path):
    pipe = TextPipeline(end_token=True).fit(["[END] cat"])
    ids = {token: i for i, token in enumerate(pipe.vocab)}
    assert pipe.encode(["[END]"]).ids == [[ids["["], ids["end"], ids["]"], pipe.end_id]]
    pipe.save(tmp_path)
    loaded = TextPipeline.load(tmp_path, pipe.settings())
    assert loaded.encode(["cat [END]", ""]) == pipe.encode(["cat [END]", ""])
    with pytest.raises(CheckpointError, match=r"\[END\] at id 6 but end_token=False"):
        TextPipeline.load(tmp_path, {**pipe.settings(), "end_token": False})
    TextPipeline().fit(CORPUS).save(tmp_path)
    with pytest.raises(CheckpointError, match=r"\[END\] at id None but end_token=True"):
        TextPipeline.load(tmp_path, {"end_token": True})
    with pytest.raises(ConfigError, match="end_token=True is for flat inputs"):
        pipe.encode_sentences(["cat."])
    with pytest.raises(ConfigError, match="'end_token' = 1 must be true or false"):
        TextPipeline(end_token=1)
    with pytest.raises(ConfigError, match="end_token=False, so no"):
        TextPipeline().fit(CORPUS).end_id
