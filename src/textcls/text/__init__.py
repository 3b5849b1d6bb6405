"""Text layer: normalisers, the token-id pipeline and embedding matrices."""

from .embeddings import EmbeddingResult, build_embeddings
from .normalize import normalize, normalize_batch, strip_newsgroups
from .pipeline import (
    PAD_ID,
    SPECIAL_TOKENS,
    UNK_ID,
    Encoded,
    EncodedSentences,
    TextPipeline,
    hash_bigrams,
)

__all__ = [
    "PAD_ID",
    "SPECIAL_TOKENS",
    "UNK_ID",
    "EmbeddingResult",
    "Encoded",
    "EncodedSentences",
    "TextPipeline",
    "build_embeddings",
    "hash_bigrams",
    "normalize",
    "normalize_batch",
    "strip_newsgroups",
]
