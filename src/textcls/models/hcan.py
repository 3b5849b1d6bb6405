"""Gao, Ramanathan and Tourassi (2018), "Hierarchical Convolutional Attention Networks for
Text Classification" (ACL RepL4NLP workshop): HCAN and the seven ablations of its Table 2.

Section 3, equation by equation (code in brackets):

- eq. 1 (3.1): ``Attention(Q, K, V) = softmax(Q K^T / sqrt(d)) V``
  [``layers.masked_attention``; padded keys get weight 0].
- eq. 2 (3.2): ``Q, K, V = ELU(Conv1D(E, W) + b)``, width-3 convolutions with ``d`` filters
  [``ConvSelfAttention.qkv``: the three (or six) convolutions as one ``Conv1d`` with
  ``3d`` (``6d``) filters, which is the same map: every filter has its own weights].
- eq. 3 (3.3): multi-head attention: Q, K, V split into ``h`` heads of ``d/h`` dimensions,
  attention per head, heads concatenated [``ConvSelfAttention.forward``].
- eq. 4 (3.4): ``Parallel(E) = MultiHead(Q^a, K^a, V^a) * MultiHead(Q^b, K^b, V^b)`` with
  ``V^b = tanh(Conv1D(E))`` (elementwise product), then layer normalisation (3.8)
  [``ConvSelfAttention`` with ``branches=2``, ``ConvAttentionLevel.norm``].
- eq. 5 (3.5): ``Target(E) = MultiHead(T, K, V)``, ``K, V = ELU(Conv1D(E))``, ``T`` a learned
  ``1 x d`` target vector [``TargetAttention``]; the max-pool ablation replaces it with a
  masked max over positions [``layers.masked_max``].
- 3.6: learned positional embeddings added to each level's input [``ConvAttentionLevel.positions``].
- 3.7: hierarchy: a word level turns each sentence into a vector, a sentence level turns the
  sentence vectors into the document vector; the flat ablation reads the whole document as
  one sequence with one level [``HCAN.forward``].
- 3.8: dropout 0.1 on the attention weights and on the (word / sentence) embeddings after the
  positions are added; layer normalisation after the product of eq. 4.

Table 2's eight variants are presets: ``{flat, hier} x {one, two} self-attentions x
{maxpool, target}``; ``hcan`` is hierarchical, two self-attentions, target attention. The
paper's size (``d = 512``, 8 heads, 512-d Word2Vec trained on the training split with minimum
count 5) and recipe (Adam, lr 2e-5, betas 0.9 / 0.99, the best-on-dev model kept) are the
presets' defaults. Every preset has a ``-cpu`` twin (``d = 64``, GloVe 6B 50-d instead of
corpus-trained Word2Vec, shorter caps, lr scaled to the batch; see ``CPU_RECIPE`` and
``CPU_HIER_INPUTS``) for benchmarks on a CPU.

Readings of what the paper leaves open (each also commented at its line):

- Batches: the paper trains on one document at a time; the presets train on masked
  mini-batches of 32 (padding changes no document's logits). ``batch_size=1`` (a recipe
  override, e.g. ``--batch-size 1``) is the paper's per-document mode.
- Padding and the convolutions: every position that is padding is set to zero *before each
  convolution* (Q/K/V and target K/V), and the convolution pads both ends with zeros, so a
  real word's window never sees padding values; a document alone and in a padded batch give
  the same logits. Empty sentences are not run through the word level at all and are masked
  keys at the sentence level, so they cannot leak into the document vector.
- Scale: ``1/sqrt(d/h)`` per head, as in Vaswani et al. (and the authors' code); eq. 1 writes
  ``sqrt(d)`` for the single-head case.
- One self-attention: the output of the single attention is layer-normalised too, so that the
  one/two ablation differs only by the second branch and the product.
- Target attention's ``V``: eq. 5's ``ELU(Conv1D(E))`` (the authors' code uses the
  self-attention output itself as ``V``; we follow the paper).
- Position tables: the paper's learned positional embeddings need a longest sequence; the
  tables have ``max_sentence_length`` (words) and ``max_sentences`` rows (hierarchical) or
  ``max_length`` rows (flat), the text pipeline's caps (it counts what they cut). Positions
  start N(0, 0.1), as in the authors' code.
- Initialisation (not in the paper): as in the authors' code, orthogonal convolution kernels
  (each Q/K/V filter bank on its own), target vectors and output layer; zero biases.
- No dropout on the document vector (the paper lists none; the authors' code drops 10 %):
  ``document_dropout`` sets it.
- Vocabulary: words seen fewer than 5 times in training are ``[UNK]`` (``min_freq=5``), the
  rule of Word2Vec's minimum count; random word vectors (``embeddings=None``) start in
  U[-0.25, 0.25], the range of the vectors Word2Vec leaves out.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..errors import ConfigError
from ..recipe import Recipe
from ..validate import check_choice, check_flag, check_positive_int, check_probability
from .base import Output, TextModel
from .layers import build_embedding, masked_attention, masked_max
from .registry import Preset, register_model

POOLINGS = ("target", "max")
SHAPES = ("flat", "hierarchical")
CONV_WIDTH = 3  # section 3.2: "a window size of three words"
POSITION_INIT_STD = 0.1  # authors' code: random_normal_initializer(0, 0.1)
# Same range as the vectors of words without a pretrained vector (text/embeddings.py).
RANDOM_EMBEDDING_RANGE = 0.25


def _zero_padding(x: Tensor, mask: Tensor) -> Tensor:
    """``x [N, L, D]`` with the positions where ``mask [N, L]`` is False set to zero."""
    return x * mask.unsqueeze(-1).to(x.dtype)


def _conv(conv: nn.Conv1d, x: Tensor, mask: Tensor) -> Tensor:
    """A width-3 'same' convolution over ``x [N, L, D]`` whose padded positions are zeroed
    first, so a real position's window reads zeros past the true end, as it would alone."""
    return conv(_zero_padding(x, mask).transpose(1, 2)).transpose(1, 2)


def _split_heads(x: Tensor, heads: int) -> Tensor:
    """``[N, L, d] -> [N, h, L, d/h]`` (eq. 3: head i gets the i-th slice of the d dims)."""
    n, length, dim = x.shape
    return x.view(n, length, heads, dim // heads).transpose(1, 2)


def _merge_heads(x: Tensor) -> Tensor:
    """``[N, h, L, d/h] -> [N, L, d]`` (eq. 3: the heads concatenated)."""
    n, heads, length, dim = x.shape
    return x.transpose(1, 2).reshape(n, length, heads * dim)


def _orthogonal_banks(weight: Tensor, banks: int) -> None:
    """Orthogonal init of each of ``banks`` equal filter banks of a fused conv weight."""
    with torch.no_grad():
        for bank in weight.chunk(banks, dim=0):
            nn.init.orthogonal_(bank)


class ConvSelfAttention(nn.Module):
    """Convolutional multi-head self-attention (eqs. 2-3), or two of them in parallel
    multiplied elementwise (eq. 4, ``branches=2``; the second branch's V uses tanh).

    ``forward(x [N, L, in_dim], mask [N, L]) -> (out [N, L, d], weights)``; ``weights`` is a
    list of ``[N, h, L, L]`` maps (one per branch) when ``need_weights``, else None.
    """

    def __init__(self, in_dim: int, d_model: int, heads: int, branches: int, attention_dropout: float):
        super().__init__()
        self.d_model, self.heads, self.branches = d_model, heads, branches
        self.attention_dropout = attention_dropout
        # Q, K, V of every branch from one conv: 3 * branches banks of d filters each.
        self.qkv = nn.Conv1d(in_dim, 3 * branches * d_model, CONV_WIDTH, padding=CONV_WIDTH // 2)
        _orthogonal_banks(self.qkv.weight, 3 * branches)
        nn.init.zeros_(self.qkv.bias)

    def forward(self, x: Tensor, mask: Tensor, need_weights: bool = False):
        projected = _conv(self.qkv, x, mask)
        dropout = self.attention_dropout if self.training else 0.0
        out, maps = None, [] if need_weights else None
        for branch, chunk in enumerate(projected.chunk(self.branches, dim=-1)):
            q, k, v = chunk.chunk(3, dim=-1)
            q, k = F.elu(q), F.elu(k)
            # eq. 4: the second branch's values go through tanh, so that the product of the two
            # branches stays bounded by the first.
            v = torch.tanh(v) if branch == 1 else F.elu(v)
            heads, weights = masked_attention(
                _split_heads(q, self.heads), _split_heads(k, self.heads), _split_heads(v, self.heads),
                mask, dropout_p=dropout, need_weights=need_weights,
            )  # scale 1/sqrt(d/h): per head, as Vaswani et al. (eq. 1 writes the one-head sqrt(d))
            heads = _merge_heads(heads)
            out = heads if out is None else out * heads  # eq. 4: elementwise product
            if need_weights:
                maps.append(weights)
        return out, maps


class TargetAttention(nn.Module):
    """Convolutional multi-head target attention (eq. 5): ``MultiHead(T, K, V)`` with a learned
    target ``T`` (``1 x d``) and ``K, V = ELU(Conv1D(E))``.

    ``forward(x [N, L, d], mask [N, L]) -> (vector [N, d], weights [N, h, L] or None)``.
    A learned-query pooling that another paper could reuse (candidate for layers.py).
    """

    def __init__(self, d_model: int, heads: int, attention_dropout: float):
        super().__init__()
        self.heads = heads
        self.attention_dropout = attention_dropout
        self.target = nn.Parameter(torch.empty(1, d_model))
        nn.init.orthogonal_(self.target)  # a random unit vector, as the authors' code
        self.kv = nn.Conv1d(d_model, 2 * d_model, CONV_WIDTH, padding=CONV_WIDTH // 2)
        _orthogonal_banks(self.kv.weight, 2)
        nn.init.zeros_(self.kv.bias)

    def forward(self, x: Tensor, mask: Tensor, need_weights: bool = False):
        k, v = F.elu(_conv(self.kv, x, mask)).chunk(2, dim=-1)
        query = _split_heads(self.target.expand(x.size(0), 1, -1), self.heads)  # [N, h, 1, d/h]
        dropout = self.attention_dropout if self.training else 0.0
        pooled, weights = masked_attention(
            query, _split_heads(k, self.heads), _split_heads(v, self.heads), mask,
            dropout_p=dropout, need_weights=need_weights,
        )
        return _merge_heads(pooled).squeeze(1), None if weights is None else weights.squeeze(2)


class ConvAttentionLevel(nn.Module):
    """One level of the hierarchy (3.7): learned positions + dropout (3.6, 3.8), one or two
    convolutional self-attentions (eqs. 2-4), layer normalisation, then target attention
    (eq. 5) or max-pooling.

    ``forward(x [N, L, in_dim], mask [N, L], maps=..., self_maps=...) -> (vector [N, d],
    pooling weights [N, h, L] or None, self-attention maps or None)``: ``maps`` asks for the
    target-attention weights, ``self_maps`` for the self-attention ones.
    """

    def __init__(self, in_dim: int, d_model: int, heads: int, max_positions: int, self_attentions: int,
                 pooling: str, dropout: float, attention_dropout: float, position_name: str):
        super().__init__()
        self.max_positions, self.position_name = max_positions, position_name
        self.positions = nn.Parameter(torch.randn(max_positions, in_dim) * POSITION_INIT_STD)
        self.dropout = nn.Dropout(dropout)
        self.self_attention = ConvSelfAttention(in_dim, d_model, heads, self_attentions, attention_dropout)
        # 3.8 puts layer normalisation after the product of eq. 4; with one self-attention we
        # normalise its output too, so the ablation changes the second branch only.
        self.norm = nn.LayerNorm(d_model)
        self.target = TargetAttention(d_model, heads, attention_dropout) if pooling == "target" else None

    def forward(self, x: Tensor, mask: Tensor, *, maps: bool = False, self_maps: bool = False):
        length = x.size(1)
        if length > self.max_positions:
            raise ConfigError(
                f"a batch has {length} positions at one level but parameter '{self.position_name}' = "
                f"{self.max_positions} (the rows of the learned position table); set {self.position_name} "
                f">= {length} for both the text pipeline and the model"
            )
        # 3.8: dropout on the embeddings after the positional embeddings are added.
        x = self.dropout(x + self.positions[:length])
        features, self_weights = self.self_attention(x, mask, need_weights=self_maps)
        features = self.norm(features)
        if self.target is None:
            return masked_max(features, mask, dim=1), None, self_weights
        vector, weights = self.target(features, mask, need_weights=maps)
        return vector, weights, self_weights


# ---------------------------------------------------------------------------- presets

_PAPER = "Gao et al. 2018, Hierarchical Convolutional Attention Networks for Text Classification (RepL4NLP)"
# 4.3: Adam, lr 2e-5, beta1 0.9, beta2 0.99; validation every 50,000 documents, best model kept.
# We evaluate on dev after each epoch and keep the best epoch; 30 epochs at most, stopping after
# 3 without improvement. Batches of 32 with masks; batch_size=1 is the paper's mode.
PAPER_RECIPE = Recipe(optimizer="adam", lr=2e-5, betas=(0.9, 0.99), batch_size=32, epochs=30, patience=3,
                      monitor="accuracy")
# CPU twins: the paper's lr was tuned for one document per update; with 32 documents per update
# there are 32x fewer steps, so the lr is scaled linearly (2e-5 x 32 = 6.4e-4). On fdu_mtl/books
# (1,000 training reviews) hcan-cpu reached 0.43 / 0.50 / 0.56 / 0.56 dev accuracy in epochs 1-4
# at 2e-5 and 0.62 / 0.67 / 0.72 / 0.74 at 6.4e-4; 2e-3 was no better than 6.4e-4.
# At most 10 epochs, patience 2.
CPU_BATCH = 32
CPU_RECIPE = Recipe(optimizer="adam", lr=2e-5 * CPU_BATCH, betas=(0.9, 0.99), batch_size=CPU_BATCH, epochs=10,
                    patience=2, monitor="accuracy")
# 4.3: lowercase, keep letters, digits and . ! ? (charset "hcan"); sentences end at . ! ?;
# Word2Vec (gensim, training split only, min count 5) at the model width; the vocabulary keeps
# the words seen 5 times, as Word2Vec does (rarer words are [UNK]).
_TEXT = {"lowercase": True, "charset": "hcan", "min_freq": 5, "embeddings": "word2vec"}
# The authors size the position tables to the corpus's longest document; fixed caps here, well
# above the 95th percentile of IMDB and 20 Newsgroups (sentences per document, words per
# sentence and words per document); the pipeline counts what they cut.
PAPER_HIER_INPUTS = {**_TEXT, "shape": "hierarchical", "embedding_dim": 512, "max_sentences": 100,
                     "max_sentence_length": 100}
PAPER_FLAT_INPUTS = {**_TEXT, "shape": "flat", "embedding_dim": 512, "max_length": 1000}
# CPU twins: GloVe 6B 50-d (a lookup, ~1 s) instead of Word2Vec trained per run (~15 s on
# one core whatever the corpus, text/embeddings.py's word2vec_epochs), which alone would take
# 12 of a 30-minute CPU benchmark of ten models on five datasets.
# CPU caps: 20 sentences x 30 words (hierarchical) and 300 words (flat): about the same words
# kept per document (IMDB 212 / 206, fdu_mtl/books 143 / 140 on average); self-attention over
# 400 words with dropout on its weights made the flat variants ~4x the cost of hierarchical ones.
_CPU_TEXT = {**_TEXT, "embeddings": "glove-6b-50d", "embedding_dim": 50}
CPU_HIER_INPUTS = {**_CPU_TEXT, "shape": "hierarchical", "max_sentences": 20,
                   "max_sentence_length": 30}
CPU_FLAT_INPUTS = {**_CPU_TEXT, "shape": "flat", "max_length": 300}
CPU_ARCH = {"d_model": 64}
_CPU_NOTE = (" CPU-sized: d=64 (8 heads), GloVe 6B 50-d (not corpus Word2Vec), lr 6.4e-4 (2e-5 x batch 32),"
             " at most 10 epochs (patience 2), caps {caps}.")

# (name, hierarchical, self-attentions, pooling, Table 2 row)
_VARIANTS = [
    ("hcan-flat-one-sa-maxpool", False, 1, "max", "Conv Attention Network (One Self-Attention, Maxpool)"),
    ("hcan-flat-one-sa-target", False, 1, "target", "Conv Attention Network (One Self-Attention, Target Attention)"),
    ("hcan-flat-two-sa-maxpool", False, 2, "max", "Conv Attention Network (Two Self-Attentions, Maxpool)"),
    ("hcan-flat-two-sa-target", False, 2, "target", "Conv Attention Network (Two Self-Attentions, Target Attention)"),
    ("hcan-hier-one-sa-maxpool", True, 1, "max", "Hierarchical Conv Attention Network (One Self-Attention, Maxpool)"),
    ("hcan-hier-one-sa-target", True, 1, "target",
     "Hierarchical Conv Attention Network (One Self-Attention, Target Attention)"),
    ("hcan-hier-two-sa-maxpool", True, 2, "max", "Hierarchical Conv Attention Network (Two Self-Attentions, Maxpool)"),
    ("hcan", True, 2, "target", "Hierarchical Conv Attention Network (Two Self-Attentions, Target Attention)"),
]


def _presets() -> list[Preset]:
    presets = []
    for name, hierarchical, branches, pooling, row in _VARIANTS:
        arch = {"self_attentions": branches, "pooling": pooling}
        level = "Hierarchical" if hierarchical else "Flat"
        attentions = "two self-attentions" if branches == 2 else "one self-attention"
        pool = "target attention" if pooling == "target" else "max-pool"
        what = f"{level} HCAN, {attentions}, {pool} (Table 2: {row})."
        presets.append(Preset(
            name, "hcan", arch=arch, recipe=PAPER_RECIPE,
            inputs=PAPER_HIER_INPUTS if hierarchical else PAPER_FLAT_INPUTS,
            description=what + " Paper size: d=512, 8 heads, 512-d Word2Vec, Adam 2e-5; batches of 32 "
            "(batch_size=1 is the paper's one-document mode).",
            paper=_PAPER,
        ))
        caps = "20 sentences x 30 words" if hierarchical else "300 words"
        presets.append(Preset(
            f"{name}-cpu", "hcan", arch={**arch, **CPU_ARCH}, recipe=CPU_RECIPE,
            inputs=CPU_HIER_INPUTS if hierarchical else CPU_FLAT_INPUTS,
            description=what + _CPU_NOTE.format(caps=caps),
            paper=_PAPER,
        ))
    return presets


HCAN_PRESETS = _presets()


@register_model("hcan", presets=HCAN_PRESETS)
class HCAN(TextModel):
    """Hierarchical (or flat) convolutional attention network; see the module docstring.

    Hierarchical batches (``input_ids [B,S,W]``, ``word_mask``, ``sentence_mask``) give
    ``attentions["word"] [B, S, h, W]`` and ``attentions["sentence"] [B, h, S]`` (target
    attention weights, when maps are wanted: eval mode, unless turned off with
    ``attention_maps(False)``); flat batches (``input_ids [B,L]``, ``mask``) give
    ``attentions["word"] [B, h, L]``. With ``keep_self_attention`` the self-attention maps come
    too: ``"<level>_self_a"`` (and ``"<level>_self_b"`` for the second branch), ``[..., h, L, L]``.
    Max-pool variants have no pooling weights.
    """

    input_shapes = SHAPES

    def __init__(
        self,
        vocab_size: int,
        num_classes: int,
        embeddings: np.ndarray | None = None,
        *,
        embedding_dim: int = 512,
        shape: str = "hierarchical",
        max_length: int | None = None,
        max_sentences: int | None = None,
        max_sentence_length: int | None = None,
        d_model: int = 512,
        heads: int = 8,
        self_attentions: int = 2,
        pooling: str = "target",
        dropout: float = 0.1,
        attention_dropout: float = 0.1,
        document_dropout: float = 0.0,
        keep_self_attention: bool = False,
    ):
        super().__init__()
        check_choice("shape", shape, SHAPES)
        check_choice("pooling", pooling, POOLINGS)
        if self_attentions not in (1, 2):
            raise ConfigError(f"parameter 'self_attentions' = {self_attentions!r} must be 1 or 2 (Table 2)")
        check_positive_int("embedding_dim", embedding_dim, 1 << 16)
        check_positive_int("d_model", d_model, 1 << 16)
        check_positive_int("heads", heads, d_model)
        if d_model % heads:
            raise ConfigError(f"parameter 'd_model' = {d_model} must be a multiple of parameter 'heads' = {heads}")
        check_probability("dropout", dropout)
        check_probability("attention_dropout", attention_dropout)
        check_probability("document_dropout", document_dropout)
        check_flag("keep_self_attention", keep_self_attention)
        caps = {"max_sentences": max_sentences, "max_sentence_length": max_sentence_length} \
            if shape == "hierarchical" else {"max_length": max_length}
        for name, value in caps.items():
            if value is None:
                raise ConfigError(
                    f"HCAN ({shape}) needs parameter '{name}': its learned positional embeddings have one row "
                    f"per position; set {name} (e.g. --set {name}=100)"
                )
            check_positive_int(name, value)

        self.shape = shape
        self.keep_self_attention = keep_self_attention
        self.embedding = build_embedding(vocab_size, embedding_dim, embeddings,
                                         uniform_range=RANDOM_EMBEDDING_RANGE)
        level = dict(d_model=d_model, heads=heads, self_attentions=self_attentions, pooling=pooling,
                     dropout=dropout, attention_dropout=attention_dropout)
        if shape == "hierarchical":
            self.word_level = ConvAttentionLevel(embedding_dim, max_positions=max_sentence_length,
                                                 position_name="max_sentence_length", **level)
            self.sentence_level = ConvAttentionLevel(d_model, max_positions=max_sentences,
                                                     position_name="max_sentences", **level)
        else:
            self.word_level = ConvAttentionLevel(embedding_dim, max_positions=max_length,
                                                 position_name="max_length", **level)
            self.sentence_level = None
        self.document_dropout = nn.Dropout(document_dropout)
        self.output = nn.Linear(d_model, num_classes)
        nn.init.orthogonal_(self.output.weight)
        nn.init.zeros_(self.output.bias)

    def forward(self, batch: dict[str, Tensor]) -> Output:
        attentions: dict[str, Tensor] = {}
        if self.shape == "flat":
            ids, mask = self._flat_inputs(batch)
            document, weights, self_maps = self.word_level(self.embedding(ids), mask, **self._maps())
            if weights is not None:
                attentions["word"] = weights
            self._add_self_maps(attentions, "word", self_maps)
        else:
            document = self._hierarchical(batch, attentions)
        return Output(logits=self.output(self.document_dropout(document)), attentions=attentions)

    def _hierarchical(self, batch: dict[str, Tensor], attentions: dict[str, Tensor]) -> Tensor:
        ids, word_mask, sentence_mask = self._hierarchical_inputs(batch)
        batch_size, sentences = ids.shape[:2]
        # Only real sentences go through the word level: padding sentences cost nothing and
        # never reach the sentence level (their vectors stay zero and they are masked keys).
        sentence_ids, sentence_word_mask = ids[sentence_mask], word_mask[sentence_mask]  # [N, W]
        maps = self._maps()
        vectors, word_weights, word_self = self.word_level(self.embedding(sentence_ids), sentence_word_mask, **maps)
        sentence_vectors = vectors.new_zeros(batch_size, sentences, vectors.size(-1))
        sentence_vectors[sentence_mask] = vectors
        document, sentence_weights, sentence_self = self.sentence_level(sentence_vectors, sentence_mask, **maps)
        if word_weights is not None:
            attentions["word"] = self._scatter(word_weights, sentence_mask)  # [B, S, h, W]
            attentions["sentence"] = sentence_weights  # [B, h, S]
        if word_self is not None:
            self._add_self_maps(attentions, "word", [self._scatter(m, sentence_mask) for m in word_self])
        self._add_self_maps(attentions, "sentence", sentence_self)
        return document

    def _maps(self) -> dict[str, bool]:
        # Explicit weights only when maps are wanted (eval, not turned off): training and plain
        # prediction run on the fused attention kernel.
        wanted = self.wants_attention_maps
        return {"maps": wanted, "self_maps": wanted and self.keep_self_attention}

    @staticmethod
    def _scatter(per_sentence: Tensor, sentence_mask: Tensor) -> Tensor:
        """Per-real-sentence rows ``[N, ...]`` -> ``[B, S, ...]``, zero for padding sentences."""
        out = per_sentence.new_zeros(*sentence_mask.shape, *per_sentence.shape[1:])
        out[sentence_mask] = per_sentence
        return out

    @staticmethod
    def _add_self_maps(attentions: dict[str, Tensor], level: str, maps) -> None:
        for branch, weights in zip("ab", maps or []):
            attentions[f"{level}_self_{branch}"] = weights

    def _flat_inputs(self, batch):
        if "mask" not in batch or batch["input_ids"].dim() != 2:
            raise ConfigError(
                "this HCAN reads flat batches (input_ids [B,L] and mask) but got another shape; encode the "
                "texts with the preset's inputs (shape 'flat')"
            )
        return batch["input_ids"], batch["mask"].bool()

    def _hierarchical_inputs(self, batch):
        if "sentence_mask" not in batch or "word_mask" not in batch or batch["input_ids"].dim() != 3:
            raise ConfigError(
                "this HCAN reads hierarchical batches (input_ids [B,S,W], word_mask, sentence_mask) but got "
                "another shape; encode the texts with the preset's inputs (shape 'hierarchical')"
            )
        word_mask = batch["word_mask"].bool()
        # A sentence is real iff it has a real word (batching's rule), whatever the caller passed.
        sentence_mask = batch["sentence_mask"].bool() & word_mask.any(dim=-1)
        return batch["input_ids"], word_mask, sentence_mask
