"""TextPipeline: records' texts -> token ids (flat, per sentence, hashed bigrams).

The vocabulary is a Hugging Face ``tokenizers`` ``WordLevel`` model trained with
``WordLevelTrainer``; ``[PAD]`` is id 0 and ``[UNK]`` id 1. The HTML, lowercase and HCAN
charset steps live in the tokenizer's own normaliser, so the saved ``tokenizer.json`` says
how text was normalised; only the 20 Newsgroups stripping, which ``tokenizers`` cannot
express, runs in Python before it. Words and punctuation are split by the ``Whitespace``
pre-tokeniser (``\\w+|[^\\w\\s]+``: a run of punctuation such as ``...`` or ``?!`` is one
token).

``end_token=True`` ends every document with ``[END]``, the last id of the vocabulary (after
the ``max_length`` cut, so a document holds at most ``max_length + 1`` ids): fastText's
``</s>``, which its ``Dictionary::getLine`` adds to every line as a word of its own. In a mean
of rows with a bias-free output layer it is the model's bias, and its bigram with the last word
is a feature of how the text ends. On MPQA's three-word phrases, fastText's own loop on
fastText's own tokens lost 1.96 points without it (10 seeds, p < 0.001;
benchmarks/results/fasttext_eos.md).
``[END]`` cannot come from text: the pre-tokeniser splits ``[``, ``END`` and ``]``.

Nothing is dropped silently: truncation to ``max_length``, sentence caps, and documents that
are empty after normalisation (encoded as a single ``[UNK]``) are counted in the returned
``Encoded`` / ``EncodedSentences``.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

from ..errors import CheckpointError, ConfigError, DataError, close_names
from ..validate import MAX_INT, check_flag, check_int, find_lone_surrogate
from .normalize import build_normalizer, check_settings, check_texts, strip_newsgroups

PAD_TOKEN, UNK_TOKEN = "[PAD]", "[UNK]"
END_TOKEN = "[END]"
SPECIAL_TOKENS = (PAD_TOKEN, UNK_TOKEN)
PAD_ID, UNK_ID = 0, 1
TOKENIZER_FILE = "tokenizer.json"
# fastText's Dictionary::addWordNgrams multiplier.
FASTTEXT_NGRAM_PRIME = 116049371
SENTENCE_END_CHARS = ".!?"

_SETTING_NAMES = (
    "lowercase", "strip_html", "charset", "newsgroups", "min_freq", "max_vocab",
    "max_length", "max_sentences", "max_sentence_length", "bigram_buckets", "clitics", "end_token",
)
_PUNCTUATION_RUN = re.compile(r"[^\w\s]+")
# The Whitespace pre-tokeniser's pattern on ASCII text (see TextPipeline._ascii_ids).
_ASCII_TOKEN = re.compile(r"[A-Za-z0-9_]+|[^A-Za-z0-9_\t\n\x0b\x0c\r ]+")
# ``clitics=True``: English clitics as tokens of their own, as the Penn Treebank tokeniser and
# GloVe's vocabulary have them ("isn't" -> is n't, "john's" -> john 's, "can't" -> ca n't);
# the Whitespace pattern would give isn ' t, and GloVe has no "isn". Lowercase clitics only (the
# presets lowercase first). The same alternation, word and punctuation runs last, for the
# tokenizer (Oniguruma) and for the ASCII fast path (Python re), which agree on ASCII text.
_CLITICS = r"(?=n't\b)|n't\b|'(?:s|re|ve|ll|d|m)\b"
CLITIC_PATTERN = r"\w+" + _CLITICS + r"|\w+|[^\w\s]+"
_ASCII_CLITIC_TOKEN = re.compile(r"[A-Za-z0-9_]+" + _CLITICS + r"|[A-Za-z0-9_]+|[^A-Za-z0-9_\t\n\x0b\x0c\r ]+")
# Joins the texts of a batch for one regex pass: NUL between newlines is a token of its own.
_SEPARATOR_TOKEN = "\x00"
_TEXT_SEPARATOR = "\n\x00\n"


class _UnknownIsOne(dict):
    """token -> id, where a token outside the vocabulary is [UNK] (``__getitem__`` stays in C)."""

    def __missing__(self, token):
        return UNK_ID


@dataclass
class Encoded:
    """Token ids of a batch of documents, with what truncation cost.

    ``ids[i]`` has at least one id (an empty document becomes ``[UNK]``) and at most
    ``max_length``. ``bigrams[i]`` (when ``bigram_buckets > 0``) holds one hashed bigram id in
    ``[1, bigram_buckets]`` per adjacent pair of the kept ids, so it is empty for a
    one-token document.
    """

    ids: list[list[int]]
    bigrams: list[list[int]] | None = None
    documents: int = 0
    tokens_total: int = 0  # before truncation
    tokens_dropped: int = 0
    documents_truncated: int = 0
    empty_documents: int = 0
    unknown_tokens: int = 0  # real tokens outside the vocabulary (mapped to [UNK])

    def stats(self) -> dict:
        """The counts, as JSON (no ids)."""
        return _counts(self, skip=("ids", "bigrams"))


def _counts(encoded, skip: tuple[str, ...]) -> dict:
    # Not dataclasses.asdict: it deep-copies the id lists (13.7M ints for IMDB train + test
    # took 43 s) only for them to be dropped.
    return {f.name: getattr(encoded, f.name) for f in fields(encoded) if f.name not in skip}


@dataclass
class EncodedSentences:
    """Token ids per sentence per document, for hierarchical models.

    Behaves as the list ``sentences`` (``len``, indexing, iteration), with the counts of
    what the ``max_sentences`` / ``max_sentence_length`` caps dropped beside it. Every
    document has at least one sentence of at least one id.
    """

    sentences: list[list[list[int]]]
    documents: int = 0
    sentences_total: int = 0  # before the max_sentences cap
    sentences_dropped: int = 0
    documents_capped: int = 0  # documents that lost sentences to max_sentences
    sentences_truncated: int = 0  # sentences cut to max_sentence_length
    tokens_total: int = 0
    tokens_dropped: int = 0  # in dropped sentences plus cut from truncated ones
    empty_documents: int = 0
    unknown_tokens: int = 0

    def stats(self) -> dict:
        """The counts, as JSON (no ids)."""
        return _counts(self, skip=("sentences",))

    def __len__(self) -> int:
        return len(self.sentences)

    def __getitem__(self, index):
        return self.sentences[index]

    def __iter__(self):
        return iter(self.sentences)


def hash_bigrams(docs: Sequence[Sequence[int]], buckets: int) -> list[list[int]]:
    """fastText-style hashed word bigrams of token-id lists.

    For each adjacent pair ``(a, b)``: ``h = a * 116049371 + b`` in unsigned 64-bit
    arithmetic (fastText's ``addWordNgrams`` with n=2, over token ids instead of word
    hashes), and the bigram id is ``h % buckets + 1``; 0 stays free for padding.
    """
    check_int("bigram_buckets", buckets, 1, MAX_INT)
    lengths = np.fromiter((len(d) for d in docs), dtype=np.int64, count=len(docs))
    if lengths.sum() == 0:
        return [[] for _ in docs]
    flat = np.fromiter(itertools.chain.from_iterable(docs), dtype=np.int64, count=int(lengths.sum()))
    hashed, counts = hash_bigrams_flat(flat, lengths, buckets)
    return [part.tolist() for part in np.split(hashed, np.cumsum(counts)[:-1])]


def hash_bigrams_flat(flat: np.ndarray, lengths: np.ndarray, buckets: int) -> tuple[np.ndarray, np.ndarray]:
    """``hash_bigrams`` over documents held one after another in ``flat`` (``lengths`` ids
    each): ``(bigram ids int64, one after another; bigrams per document)``."""
    counts = np.maximum(lengths - 1, 0)
    if len(flat) < 2:
        return np.zeros(0, dtype=np.int64), counts
    flat = flat.astype(np.uint64, copy=False)
    with np.errstate(over="ignore"):
        hashed = (flat[:-1] * np.uint64(FASTTEXT_NGRAM_PRIME) + flat[1:]) % np.uint64(buckets) + np.uint64(1)
    # A pair that straddles two documents starts at each document's last token.
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    keep = np.ones(len(hashed) + 1, dtype=bool)
    keep[(starts + lengths - 1)[lengths > 0]] = False
    return hashed[keep[:-1]].astype(np.int64), counts


@dataclass
class FlatIds:
    """Token ids of a batch of documents as flat arrays, for prediction: the ids ``encode``
    gives, documents one after another (``ids``, int64) with ``lengths`` ids each, and their
    hashed bigrams the same way (``bigrams``, ``bigram_lengths``; None without buckets). No
    Python list per document survives, so padding is a few numpy operations."""

    ids: np.ndarray
    lengths: np.ndarray
    bigrams: np.ndarray | None = None
    bigram_lengths: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.lengths)


class TextPipeline:
    """Normaliser + word-level vocabulary + truncation, in one JSON-describable object.

    ``fit(train_texts)`` builds the vocabulary; ``encode(texts)`` gives flat ids (and hashed
    bigrams), ``encode_sentences(texts)`` ids per sentence. ``max_vocab`` counts the two
    special tokens, so ``vocab_size <= max_vocab``.
    """

    def __init__(
        self,
        lowercase: bool = True,
        strip_html: bool = False,
        charset: str | None = None,
        newsgroups: bool = False,
        min_freq: int = 1,
        max_vocab: int | None = None,
        max_length: int | None = None,
        max_sentences: int | None = None,
        max_sentence_length: int | None = None,
        bigram_buckets: int = 0,
        clitics: bool = False,
        end_token: bool = False,
    ):
        check_settings(lowercase=lowercase, strip_html=strip_html, charset=charset, newsgroups=newsgroups)
        self.lowercase = lowercase
        self.strip_html = strip_html
        self.charset = charset
        self.newsgroups = newsgroups
        self.min_freq = check_int("min_freq", min_freq, 1, MAX_INT)
        self.max_vocab = check_int("max_vocab", max_vocab, len(SPECIAL_TOKENS) + 1, MAX_INT, optional=True)
        self.max_length = check_int("max_length", max_length, 1, MAX_INT, optional=True)
        self.max_sentences = check_int("max_sentences", max_sentences, 1, MAX_INT, optional=True)
        self.max_sentence_length = check_int(
            "max_sentence_length", max_sentence_length, 1, MAX_INT, optional=True
        )
        self.bigram_buckets = check_int("bigram_buckets", bigram_buckets, 0, MAX_INT)
        check_flag("clitics", clitics)
        if clitics and charset == "kim":
            raise ConfigError("parameter 'clitics' = True is not for charset 'kim', which splits Kim's clitics "
                              "itself (clean_str); drop clitics")
        self.clitics = clitics
        check_flag("end_token", end_token)
        self.end_token = end_token
        self._tokenizer: Tokenizer | None = None
        self._vocab: list[str] | None = None
        self._terminator_ids: frozenset[int] | None = None
        self._token_ids: dict | None = None
        self._token_counts: list[int] | None = None

    # ------------------------------------------------------------------ settings

    def settings(self) -> dict:
        """The constructor arguments, as JSON (what ``config.json`` stores)."""
        return {
            "lowercase": self.lowercase,
            "strip_html": self.strip_html,
            "charset": self.charset,
            "newsgroups": self.newsgroups,
            "min_freq": self.min_freq,
            "max_vocab": self.max_vocab,
            "max_length": self.max_length,
            "max_sentences": self.max_sentences,
            "max_sentence_length": self.max_sentence_length,
            "bigram_buckets": self.bigram_buckets,
            "clitics": self.clitics,
            "end_token": self.end_token,
        }

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.settings().items())
        fitted = f", vocab_size={self.vocab_size}" if self._tokenizer is not None else ""
        return f"TextPipeline({args}{fitted})"

    # ------------------------------------------------------------------ vocabulary

    @property
    def tokenizer(self) -> Tokenizer:
        """The fitted ``tokenizers.Tokenizer``."""
        if self._tokenizer is None:
            raise ConfigError(
                "this TextPipeline has no vocabulary yet; call fit(train_texts) or TextPipeline.load(dir, settings) first"
            )
        return self._tokenizer

    @property
    def vocab(self) -> list[str]:
        """Tokens in id order (``vocab[0] == "[PAD]"``, ``vocab[1] == "[UNK]"``)."""
        if self._vocab is None:
            by_id = sorted(self.tokenizer.get_vocab(with_added_tokens=False).items(), key=lambda kv: kv[1])
            self._vocab = [token for token, _ in by_id]
        return self._vocab

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.get_vocab_size(with_added_tokens=False)

    @property
    def end_id(self) -> int:
        """The id of ``[END]`` (the last one), for a pipeline with ``end_token=True``."""
        if not self.end_token:
            raise ConfigError("this TextPipeline has end_token=False, so no [END] id")
        return self.vocab_size - 1

    @property
    def token_counts(self) -> list[int] | None:
        """Occurrences of each vocabulary id in the texts given to ``fit`` (``[UNK]``: tokens
        outside the vocabulary); None for a pipeline restored with ``load``."""
        return self._token_counts

    def _skeleton(self, vocab: dict[str, int] | None = None) -> Tokenizer:
        vocab = vocab or {token: i for i, token in enumerate(SPECIAL_TOKENS)}
        tokenizer = Tokenizer(models.WordLevel(vocab, unk_token=UNK_TOKEN))
        normalizer = build_normalizer(lowercase=self.lowercase, strip_html=self.strip_html, charset=self.charset)
        if normalizer is not None:
            tokenizer.normalizer = normalizer
        if self.charset == "kim":  # clean_str set its tokens apart with spaces; Kim's code splits at them
            tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
        elif self.clitics:
            tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(CLITIC_PATTERN), behavior="removed", invert=True)
        else:
            tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
        return tokenizer

    def _prepare(self, texts: Iterable[str]) -> list[str]:
        texts = texts if isinstance(texts, list) else list(texts)
        check_texts(texts)
        if self.newsgroups:
            texts = [strip_newsgroups(t) for t in texts]
        return texts

    def fit(self, texts: Iterable[str]) -> "TextPipeline":
        """Build the vocabulary from ``texts``: tokens seen at least ``min_freq`` times, the
        most frequent first (ties in string order), at most ``max_vocab`` ids in all."""
        self._fit(texts)
        return self

    def fit_encode(self, texts: Iterable[str]) -> Encoded:
        """``fit(texts)`` then ``encode(texts)``, tokenising ``texts`` once less."""
        return self._finish(self._fit(texts))

    def _fit(self, texts: Iterable[str]) -> list[list[int]]:
        texts = self._prepare(texts)
        if not texts:
            raise DataError("fit() got no texts; pass the training texts (at least one)")
        tokenizer = self._skeleton()
        trainer = trainers.WordLevelTrainer(
            vocab_size=(self.max_vocab - self.end_token) if self.max_vocab else MAX_INT,
            min_frequency=self.min_freq,
            special_tokens=list(SPECIAL_TOKENS),
            show_progress=False,
        )
        tokenizer.train_from_iterator(texts, trainer=trainer, length=len(texts))
        if tokenizer.get_vocab_size(with_added_tokens=True) <= len(SPECIAL_TOKENS):
            raise DataError(
                f"no token of the {len(texts)} training texts was kept (min_freq={self.min_freq}); "
                "check the texts and the normaliser settings, or lower min_freq"
            )
        # The trainer also registers [PAD] and [UNK] as added tokens, which would turn a
        # literal "[PAD]" in a review into padding; a fresh tokenizer over the trained
        # vocabulary has no added tokens.
        vocab = tokenizer.get_vocab(with_added_tokens=False)
        if self.end_token:
            vocab[END_TOKEN] = len(vocab)
        self._set_tokenizer(self._skeleton(vocab))
        # The trainer does not expose its word counts; one encoding pass gives them per id
        # (and is reused by fit_encode).
        docs = [e.ids for e in self._encode_fast(texts)]
        flat = np.fromiter(itertools.chain.from_iterable(docs), dtype=np.int64)
        counts = np.bincount(flat, minlength=self.vocab_size)
        if self.end_token:
            counts[self.end_id] = len(docs)  # one per document, as encoding adds it
        self._token_counts = counts.tolist()
        return docs

    def _set_tokenizer(self, tokenizer: Tokenizer) -> None:
        vocab = tokenizer.get_vocab(with_added_tokens=False)
        for expected_id, token in enumerate(SPECIAL_TOKENS):
            if vocab.get(token) != expected_id:
                raise CheckpointError(
                    f"tokenizer has {token} at id {vocab.get(token)}, expected {expected_id}; "
                    "rebuild it with TextPipeline.fit"
                )
        # No text gives [END] (the pre-tokeniser splits its brackets off), so it is in the
        # vocabulary exactly when the pipeline was fitted with end_token=True.
        if (END_TOKEN in vocab) != self.end_token or (self.end_token and vocab[END_TOKEN] != len(vocab) - 1):
            raise CheckpointError(
                f"tokenizer has {END_TOKEN} at id {vocab.get(END_TOKEN)} but end_token={self.end_token} (it must be "
                "the last id exactly when end_token is True); pass the settings the pipeline was saved with"
            )
        self._tokenizer = tokenizer
        self._vocab = None
        self._terminator_ids = None
        self._token_ids = None

    # ------------------------------------------------------------------ encoding

    def _encode_fast(self, texts: list[str]):
        tokenizer = self.tokenizer
        # encode_batch_fast (tokenizers >= 0.20) skips offset tracking we do not use.
        encode = getattr(tokenizer, "encode_batch_fast", tokenizer.encode_batch)
        try:
            return encode(texts, add_special_tokens=False)
        except TypeError:
            _raise_unencodable(texts)
            raise

    def _ids(self, texts: Iterable[str]) -> list[list[int]]:
        return [e.ids for e in self._encode_fast(self._prepare(texts))]

    @staticmethod
    def _fill_empty(docs: list[list[int]]) -> tuple[int, int]:
        """Turn empty documents into [UNK] in place; returns (empty documents, unknown tokens)."""
        unknown = sum(doc.count(UNK_ID) for doc in docs)
        empty = 0
        for i, doc in enumerate(docs):
            if not doc:
                docs[i] = [UNK_ID]
                empty += 1
        return empty, unknown

    def encode(self, texts: Iterable[str]) -> Encoded:
        """Token ids of each text, truncated to ``max_length`` (counted), with hashed bigrams
        when ``bigram_buckets > 0``."""
        return self._finish(self._ids(texts))

    def encode_flat(self, texts: Iterable[str]) -> FlatIds:
        """The ids and bigrams of ``encode(texts)`` (identical: empty documents become
        ``[UNK]``, ``max_length`` cuts), as flat arrays; no counts. Prediction's path."""
        texts = self._prepare(texts)
        flat, lengths = self._flat_ids(texts)
        empty = lengths == 0
        if empty.any():  # an empty document is one [UNK], as in encode
            flat = np.insert(flat, (np.cumsum(lengths) - lengths)[empty], UNK_ID)
            lengths = np.maximum(lengths, 1)
        if self.max_length is not None and int(lengths.max(initial=0)) > self.max_length:
            starts = np.cumsum(lengths) - lengths
            position = np.arange(len(flat)) - np.repeat(starts, lengths)
            flat = flat[position < self.max_length]
            lengths = np.minimum(lengths, self.max_length)
        if self.end_token:
            flat = np.insert(flat, np.cumsum(lengths), self.end_id)
            lengths = lengths + 1
        out = FlatIds(ids=flat, lengths=lengths)
        if self.bigram_buckets > 0:
            out.bigrams, out.bigram_lengths = hash_bigrams_flat(flat, lengths, self.bigram_buckets)
        return out

    def _finish(self, docs: list[list[int]]) -> Encoded:
        empty, unknown = self._fill_empty(docs)
        lengths = np.fromiter((len(d) for d in docs), dtype=np.int64, count=len(docs))
        truncated = dropped = 0
        if self.max_length is not None:
            over = lengths > self.max_length
            truncated = int(over.sum())
            dropped = int((lengths[over] - self.max_length).sum())
            if truncated:
                docs = [d[: self.max_length] if len(d) > self.max_length else d for d in docs]
        if self.end_token:
            end_id = self.end_id
            for doc in docs:
                doc.append(end_id)
        bigrams = hash_bigrams(docs, self.bigram_buckets) if self.bigram_buckets > 0 else None
        return Encoded(
            ids=docs,
            bigrams=bigrams,
            documents=len(docs),
            tokens_total=int(lengths.sum()) - empty,
            tokens_dropped=dropped,
            documents_truncated=truncated,
            empty_documents=empty,
            unknown_tokens=unknown,
        )

    def _flat_ids(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(ids of all texts one after another, ids per text), before the [UNK] fill and the
        cut. ASCII texts take ``_ascii_ids`` when the normaliser is at most a lowercase; the
        others go through the tokenizer."""
        ascii_rows = None
        if self.charset is None and not self.strip_html and texts:
            ascii_rows = np.fromiter((t.isascii() for t in texts), dtype=bool, count=len(texts))
        if ascii_rows is None or not ascii_rows.any():
            docs = [e.ids for e in self._encode_fast(texts)]
            lengths = np.fromiter(map(len, docs), dtype=np.int64, count=len(docs))
            return np.fromiter(itertools.chain.from_iterable(docs), dtype=np.int64, count=int(lengths.sum())), lengths
        if ascii_rows.all():
            return self._ascii_ids(texts)
        rows = np.flatnonzero(ascii_rows)
        others = np.flatnonzero(~ascii_rows)
        _raise_unencodable(texts, others.tolist())  # named by its place in ``texts``, not in ``others``
        parts = [self._ascii_ids([texts[i] for i in rows]), self._flat_ids([texts[i] for i in others])]
        lengths = np.zeros(len(texts), dtype=np.int64)
        lengths[rows], lengths[others] = parts[0][1], parts[1][1]
        flat = np.empty(int(lengths.sum()), dtype=np.int64)
        starts = np.cumsum(lengths) - lengths
        for where, (ids, part_lengths) in zip((rows, others), parts):
            local = np.arange(len(ids)) - np.repeat(np.cumsum(part_lengths) - part_lengths, part_lengths)
            flat[np.repeat(starts[where], part_lengths) + local] = ids
        return flat, lengths

    def _ascii_ids(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """The tokenizer's ids for ASCII texts, in one regex pass over the joined texts and one
        dictionary lookup per token: 3-5x faster than ``tokenizers`` a short text (16 us for an
        MR sentence), which costs as long as the whole model. On ASCII the two agree exactly:
        the ``Whitespace`` pre-tokeniser's ``\\w+|[^\\w\\s]+`` (Rust: ``\\w`` = [A-Za-z0-9_] and
        ``\\s`` = the six ASCII White_Space characters there), and ``Lowercase`` is ``str.lower``.
        ``tests/test_predict_path.py`` checks the ids against the tokenizer's."""
        lookup = self._lookup
        joined = _TEXT_SEPARATOR.join(texts)
        pattern = _ASCII_CLITIC_TOKEN if self.clitics else _ASCII_TOKEN
        tokens = pattern.findall(joined.lower() if self.lowercase else joined)
        ids = np.fromiter(map(lookup.__getitem__, tokens), dtype=np.int64, count=len(tokens))
        ends = np.flatnonzero(ids < 0)
        if len(ends) != len(texts) - 1:  # a text held the separator itself: let the tokenizer do it
            docs = [e.ids for e in self._encode_fast(texts)]
            lengths = np.fromiter(map(len, docs), dtype=np.int64, count=len(docs))
            return np.fromiter(itertools.chain.from_iterable(docs), dtype=np.int64, count=int(lengths.sum())), lengths
        lengths = np.diff(np.concatenate([[-1], ends, [len(ids)]])) - 1
        return ids[ids >= 0], lengths

    @property
    def _lookup(self) -> dict:
        if self._token_ids is None:
            table = _UnknownIsOne(self.tokenizer.get_vocab(with_added_tokens=False))
            table[_SEPARATOR_TOKEN] = -1
            self._token_ids = table
        return self._token_ids

    @property
    def _terminators(self) -> frozenset[int]:
        if self._terminator_ids is None:
            self._terminator_ids = frozenset(
                i
                for i, token in enumerate(self.vocab)
                if i >= len(SPECIAL_TOKENS)
                and _PUNCTUATION_RUN.fullmatch(token)
                and any(c in SENTENCE_END_CHARS for c in token)
            )
        return self._terminator_ids

    def encode_sentences(self, texts: Iterable[str]) -> EncodedSentences:
        """Token ids per sentence: a sentence ends with a punctuation token holding ``.``,
        ``!`` or ``?`` (kept as its last token; a run of such tokens stays together), then
        ``max_sentences`` and ``max_sentence_length`` caps apply (counted)."""
        if self.end_token:
            raise ConfigError("end_token=True is for flat inputs (one id list per document); sentence-level "
                              "(hierarchical) inputs take end_token=False")
        docs = self._ids(texts)
        empty, unknown = self._fill_empty(docs)
        terminators = self._terminators
        max_sentences, max_words = self.max_sentences, self.max_sentence_length
        out = EncodedSentences(sentences=[], documents=len(docs), empty_documents=empty, unknown_tokens=unknown)
        out.tokens_total = sum(map(len, docs)) - empty
        for doc in docs:
            sentences = _split_sentences(doc, terminators)
            out.sentences_total += len(sentences)
            if max_sentences is not None and len(sentences) > max_sentences:
                out.documents_capped += 1
                out.sentences_dropped += len(sentences) - max_sentences
                out.tokens_dropped += sum(map(len, sentences[max_sentences:]))
                sentences = sentences[:max_sentences]
            if max_words is not None:
                for j, sentence in enumerate(sentences):
                    if len(sentence) > max_words:
                        out.sentences_truncated += 1
                        out.tokens_dropped += len(sentence) - max_words
                        sentences[j] = sentence[:max_words]
            out.sentences.append(sentences)
        return out

    def tokenize(self, texts: Iterable[str]) -> list[list[str]]:
        """Normalised word and punctuation tokens of each text, before the vocabulary maps
        them (so rare words stay words): the input ``build_embeddings(source="word2vec")``
        trains on. Works before ``fit``."""
        skeleton = self._skeleton()
        normalizer, pre_tokenizer = skeleton.normalizer, skeleton.pre_tokenizer
        out = []
        for text in self._prepare(texts):
            if normalizer is not None:
                text = normalizer.normalize_str(text)
            out.append([token for token, _ in pre_tokenizer.pre_tokenize_str(text)])
        return out

    # ------------------------------------------------------------------ persistence

    def save(self, directory: str | Path) -> Path:
        """Write ``tokenizer.json`` into ``directory`` (created if needed); returns its path."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / TOKENIZER_FILE
        self.tokenizer.save(str(path))
        return path

    @classmethod
    def load(cls, directory: str | Path, settings: dict) -> "TextPipeline":
        """The pipeline ``save(directory)`` wrote, with the ``settings()`` it had."""
        path = Path(directory) / TOKENIZER_FILE
        if not path.is_file():
            raise CheckpointError(f"{path} is missing; save the pipeline with TextPipeline.save(dir) first")
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as err:
            raise CheckpointError(f"{path} is not a valid tokenizer file ({err}); the file is corrupt: restore it, "
                                  "or train the run again")
        return cls.from_json(text, settings, where=str(path))

    @classmethod
    def from_json(cls, text: str, settings: dict, *, where: str = "tokenizer.json") -> "TextPipeline":
        """The pipeline whose ``tokenizer.json`` content is ``text`` (an ensemble keeps its
        members' inside its weights file); ``where`` names it in errors."""
        unknown = [k for k in settings if k not in _SETTING_NAMES]
        if unknown:
            raise ConfigError(
                f"unknown text pipeline setting '{unknown[0]}'; {close_names(unknown[0], _SETTING_NAMES)}"
            )
        pipeline = cls(**settings)
        try:
            tokenizer = Tokenizer.from_str(text)
        except Exception as err:  # tokenizers raises a bare Exception on bad JSON
            raise CheckpointError(f"{where} is not a valid tokenizer file ({err}); the file is corrupt: restore it, "
                                  "or train the run again")
        saved = json.loads(tokenizer.to_str())
        expected = json.loads(pipeline._skeleton().to_str())
        for part in ("normalizer", "pre_tokenizer"):
            if saved.get(part) != expected.get(part):
                raise CheckpointError(
                    f"{where}: its {part} does not match the settings {pipeline.settings()}; "
                    "pass the settings the pipeline was saved with"
                )
        if saved.get("added_tokens"):
            raise CheckpointError(
                f"{where} has added tokens ({saved['added_tokens'][0].get('content')!r}...), which "
                "TextPipeline never writes; rebuild it with TextPipeline.fit and save"
            )
        if saved.get("model", {}).get("type") != "WordLevel":
            raise CheckpointError(f"{where} holds a {saved.get('model', {}).get('type')} model, not WordLevel")
        if pipeline.max_vocab is not None and tokenizer.get_vocab_size() > pipeline.max_vocab:
            raise CheckpointError(
                f"{where} has {tokenizer.get_vocab_size()} tokens, more than max_vocab={pipeline.max_vocab}; "
                "pass the settings the pipeline was saved with"
            )
        pipeline._set_tokenizer(tokenizer)
        return pipeline


def _raise_unencodable(texts: list[str], rows: Iterable[int] | None = None) -> None:
    """A DataError naming the first text (of ``rows``, default all) that is not valid Unicode (a
    lone surrogate such as ``"\\ud800"``, which Rust strings cannot hold and ``tokenizers``
    refuses with a TypeError)."""
    surrogate = find_lone_surrogate(texts, rows)
    if surrogate is not None:
        i, at, char = surrogate
        raise DataError(f"text {i} holds a lone surrogate {char!r} at character {at}, "
                        "which is not valid Unicode; decode the input with errors='replace' or remove it", index=i)


def _split_sentences(doc: list[int], terminators: frozenset[int]) -> list[list[int]]:
    sentences: list[list[int]] = []
    current: list[int] = []
    for token in doc:
        if token in terminators and not current and sentences:
            # "Wow . . ." : later terminators belong to the sentence already closed.
            sentences[-1].append(token)
            continue
        current.append(token)
        if token in terminators:
            sentences.append(current)
            current = []
    if current:
        sentences.append(current)
    return sentences
