"""The self-attention classifiers of DASA's Table 3 (Zhang, Qiu, Pang, Liu & Li 2021, Sci China
Inf Sci 64(12): 222102): its section 4 frame, shared with DASA (``dasa.py``), and the baselines.

The frame (``AttentionClassifier``): trained embeddings (no pretrained vectors) with bigram
information, an attention layer pooled to ``u [B, d]``, a fully connected layer with sigmoid
and a softmax output (in the loss); Glorot-initialised weights, zero biases, Adam. ``dasa.py``
gives its readings (bigrams, sizes, Glorot).

- Conventional self-attention (Table 1 scores, ``self-attention-*``): eq. 1 with softmax on
  the same ``Q, K, V`` projections, pooled as eq. 13 (``u = tanh(sum_i h_i)``).
- The previous multi-dimensional self-attention (``disan-t2t``, refs. 14-15): DiSAN's
  multi-dimensional token2token attention ``f(h_i, h_j) = W^T elu(W1 h_i + W2 h_j + b1) + b``,
  softmax over j per feature, DiSAN's fusion gate, pooled as eq. 13. It has no direction
  masks: the paper contrasts the attention's cost, O(b N^2 d^2) against O(b N^2 d), and
  this full form is the one whose cost it quotes. Its ``b x N x N x d`` tensors are the point
  of the speed comparison.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..errors import ConfigError
from ..recipe import Recipe
from ..validate import check_choice, check_positive_int, check_probability
from .base import Output, TextModel
from .layers import build_embedding, masked_attention, masked_softmax
from .registry import Preset, register_model, register_preset

__all__ = ["AttentionClassifier", "SelfAttentionClassifier", "DiSANToken2TokenClassifier", "frame_preset"]

SCORES = ("additive", "general", "dot", "scaled-dot")
BIGRAM_COMBINES = ("add", "append")


def glorot_linear(in_dim: int, out_dim: int, bias: bool = True) -> nn.Linear:
    """A linear map with Glorot-uniform weights and a zero bias (section 4)."""
    layer = nn.Linear(in_dim, out_dim, bias=bias)
    # Section 4: Glorot's scheme for the weights, zeros for the biases.
    nn.init.xavier_uniform_(layer.weight)
    if bias:
        nn.init.zeros_(layer.bias)
    return layer


def glorot_embedding(rows: int, dim: int, embeddings: np.ndarray | None = None) -> nn.Embedding:
    """An embedding table drawn from Glorot's uniform range (PAD row zero), or ``embeddings``."""
    # nn.init.xavier_uniform_ on a [rows, dim] table: fan_in = dim, fan_out = rows.
    return build_embedding(rows, dim, embeddings, uniform_range=math.sqrt(6.0 / (rows + dim)))


# --------------------------------------------------------------------------- the frame and the baselines


class AttentionClassifier(TextModel):
    """Section 4's frame, shared by DASA and its baselines: embeddings (+ bigrams), an
    attention layer pooled to ``u [B, d]``, ``sigmoid(FC(u))``, then a linear softmax layer."""

    def __init__(self, vocab_size: int, num_classes: int, embeddings: np.ndarray | None, *,
                 embedding_dim: int, bigram_buckets: int, bigram_combine: str, hidden_dim: int, dropout: float):
        super().__init__()
        check_positive_int("embedding_dim", embedding_dim, 1 << 16)
        check_positive_int("hidden_dim", hidden_dim, 1 << 16)
        if bigram_buckets != 0:
            check_positive_int("bigram_buckets", bigram_buckets)
        check_choice("bigram_combine", bigram_combine, BIGRAM_COMBINES)
        check_probability("dropout", dropout)
        self.bigram_combine = bigram_combine
        self.words = glorot_embedding(vocab_size, embedding_dim, embeddings)
        # Row 0 is the bigram PAD; the pipeline's bucket ids run 1..bigram_buckets.
        self.bigrams = glorot_embedding(bigram_buckets + 1, embedding_dim) if bigram_buckets else None
        self.dropout = nn.Dropout(dropout)
        self.hidden = glorot_linear(embedding_dim, hidden_dim)
        self.output = glorot_linear(hidden_dim, num_classes)

    def embed(self, batch: dict[str, Tensor]) -> tuple[Tensor, Tensor, Tensor]:
        """``(x [B, N, d], mask [B, N], positions [B, N])``; x is zero at padding."""
        ids, mask = batch["input_ids"], batch["mask"].bool()
        x = self.words(ids)
        if self.bigrams is not None:
            if "bigram_ids" not in batch:
                raise ConfigError(
                    f"{self.preset_name()} has bigram_buckets > 0 and needs 'bigram_ids' in the batch; set the same "
                    "bigram_buckets in the text pipeline, or override bigram_buckets=0"
                )
            bigram_ids, bigram_mask = batch["bigram_ids"], batch["bigram_mask"].bool()
            if self.bigram_combine == "add":
                # Reading of "we add bigram information to the input": bigram k = (w_k, w_{k+1})
                # is added to word k (the last word has none), so the text keeps N positions.
                width = ids.size(1)
                if bigram_mask[:, width - 1 :].any():
                    raise ConfigError(
                        f"a document has more bigrams than adjacent word pairs ({bigram_ids.size(1)} bigram columns "
                        f"for {width} word columns); build bigram_ids with TextPipeline from the same kept words"
                    )
                bigram_ids, bigram_mask = bigram_ids[:, : width - 1], bigram_mask[:, : width - 1]
                bigram_vectors = self.bigrams(bigram_ids) * bigram_mask.unsqueeze(-1).to(x.dtype)
                x = x + F.pad(bigram_vectors, (0, 0, 0, width - bigram_ids.size(1)))
            else:
                x = torch.cat([x, self.bigrams(bigram_ids)], dim=1)
                mask = torch.cat([mask, bigram_mask], dim=1)
        x = x * mask.unsqueeze(-1).to(x.dtype)
        # Places in the text counted over real positions only, so padding between the words and
        # the appended bigrams does not stretch the attenuation distances.
        positions = mask.long().cumsum(dim=1) - 1
        return x, mask, positions

    def classify(self, pooled: Tensor) -> Tensor:
        """Section 4's FC layer with sigmoid, then the output layer (softmax lives in the loss)."""
        return self.output(torch.sigmoid(self.hidden(self.dropout(pooled))))

    def preset_name(self) -> str:
        preset = getattr(self, "preset", None)
        return f"model '{preset.name}'" if preset is not None else type(self).__name__


def _masked_sum_tanh(h: Tensor, mask: Tensor) -> Tensor:
    # Eq. 13's pooling, used the same way by every baseline: tanh of the sum over real tokens.
    return torch.tanh((h * mask.unsqueeze(-1).to(h.dtype)).sum(dim=1))


@register_model("self-attention")
class SelfAttentionClassifier(AttentionClassifier):
    """Conventional single-dimensional self-attention (eq. 1) with a Table 1 score, in DASA's frame.

    ``h_i = sum_j softmax_j(s(k_j, q_i)) v_j`` on ``Q, K, V`` of eqs. 2-4, then
    ``u = tanh(sum_i h_i)``. ``attentions["text"]`` is the ``[B, N, N]`` weight matrix.
    """

    def __init__(
        self,
        vocab_size: int,
        num_classes: int,
        embeddings: np.ndarray | None = None,
        *,
        embedding_dim: int = 64,
        bigram_buckets: int = 0,
        bigram_combine: str = "add",
        hidden_dim: int = 64,
        dropout: float = 0.0,
        score: str = "scaled-dot",
    ):
        super().__init__(vocab_size, num_classes, embeddings, embedding_dim=embedding_dim,
                         bigram_buckets=bigram_buckets, bigram_combine=bigram_combine,
                         hidden_dim=hidden_dim, dropout=dropout)
        check_choice("score", score, SCORES)
        self.score = score
        dim = embedding_dim
        self.query = glorot_linear(dim, dim)
        self.key = glorot_linear(dim, dim)
        self.value = glorot_linear(dim, dim)
        if score == "additive":
            # Table 1: v^T tanh(W q_i + U k_j); W, U d x d, v a d-vector (Bahdanau's form has no bias).
            self.score_query = glorot_linear(dim, dim, bias=False)
            self.score_key = glorot_linear(dim, dim, bias=False)
            self.score_vector = glorot_linear(dim, 1, bias=False)
        elif score == "general":
            # Table 1: q_i^T W k_j, computed as (W^T q_i) . k_j.
            self.score_query = glorot_linear(dim, dim, bias=False)

    def forward(self, batch: dict[str, Tensor]) -> Output:
        x, mask, _ = self.embed(batch)
        query, key, value = self.query(x), self.key(x), self.value(x)
        if self.score == "additive":
            # Additive scores cannot be factored: this is a b x N x N x d tensor by nature.
            pairs = torch.tanh(self.score_query(query).unsqueeze(2) + self.score_key(key).unsqueeze(1))
            weights = masked_softmax(self.score_vector(pairs).squeeze(-1), mask.unsqueeze(1), dim=-1)
            h = torch.matmul(weights, value)
        else:
            if self.score == "general":
                query = self.score_query(query)
            scale = None if self.score == "scaled-dot" else 1.0  # None: masked_attention's 1/sqrt(d)
            h, weights = masked_attention(query, key, value, mask, scale=scale,
                                          need_weights=self.wants_attention_maps)
        logits = self.classify(_masked_sum_tanh(h, mask))
        if not self.wants_attention_maps:
            return Output(logits=logits)
        return Output(logits=logits, attentions={"text": weights * mask.unsqueeze(-1).to(weights.dtype)})


@register_model("disan-t2t")
class DiSANToken2TokenClassifier(AttentionClassifier):
    """The previous multi-dimensional self-attention (DiSAN / ReSAN token2token), in DASA's frame.

    ``h = elu(W_h x + b_h)``; ``f(h_i, h_j) = W^T elu(W1 h_i + W2 h_j + b1) + b`` (a d-vector per
    pair: ``[B, N, N, d]``); ``P_ij = softmax_j f(h_i, h_j)`` per feature; ``s_i = sum_j P_ij * h_j``;
    DiSAN's fusion gate ``F = sigmoid(W_f1 s + W_f2 h + b_f)``, ``u_i = F * h_i + (1 - F) * s_i``;
    pooled as eq. 13. ``attentions["token2token"]`` is ``P`` averaged over the features.
    """

    def __init__(
        self,
        vocab_size: int,
        num_classes: int,
        embeddings: np.ndarray | None = None,
        *,
        embedding_dim: int = 64,
        bigram_buckets: int = 0,
        bigram_combine: str = "add",
        hidden_dim: int = 64,
        dropout: float = 0.0,
    ):
        super().__init__(vocab_size, num_classes, embeddings, embedding_dim=embedding_dim,
                         bigram_buckets=bigram_buckets, bigram_combine=bigram_combine,
                         hidden_dim=hidden_dim, dropout=dropout)
        dim = embedding_dim
        self.input_layer = glorot_linear(dim, dim)
        self.pair_first = glorot_linear(dim, dim)  # W1, with b1
        self.pair_second = glorot_linear(dim, dim, bias=False)  # W2
        self.pair_output = glorot_linear(dim, dim)  # W^T . + b: the d x d map per pair
        self.fusion_context = glorot_linear(dim, dim)  # W_f1, with b_f
        self.fusion_input = glorot_linear(dim, dim, bias=False)  # W_f2

    def forward(self, batch: dict[str, Tensor]) -> Output:
        x, mask, _ = self.embed(batch)
        h = F.elu(self.input_layer(x))
        pairs = F.elu(self.pair_first(h).unsqueeze(2) + self.pair_second(h).unsqueeze(1))  # [B, N, N, d]
        scores = self.pair_output(pairs)
        weights = masked_softmax(scores, mask[:, None, :, None], dim=2)  # over keys j, per feature
        context = (weights * h.unsqueeze(1)).sum(dim=2)
        fusion = torch.sigmoid(self.fusion_context(context) + self.fusion_input(h))
        fused = fusion * h + (1 - fusion) * context
        logits = self.classify(_masked_sum_tanh(fused, mask))
        if not self.wants_attention_maps:
            return Output(logits=logits)
        token2token = weights.mean(dim=-1) * mask.unsqueeze(-1).to(weights.dtype)
        return Output(logits=logits, attentions={"token2token": token2token})


# --------------------------------------------------------------------------- presets (DASA's too: one recipe)

_PAPER = "Zhang, Qiu, Pang, Liu & Li 2021, Dual-axial self-attention network for text classification (Sci China Inf Sci)"
# Section 4 names Adam only. lr 1e-3 is Adam's default; batch size, epochs and early stopping
# are ours (the paper gives none).
DASA_RECIPE = Recipe(optimizer="adam", lr=1e-3, batch_size=64, epochs=10, patience=3, monitor="accuracy")
# 2**14 buckets: the bigram table's gradient is dense under Adam, so its size is paid on
# every step (see fasttext_bag.py); the paper gives no count.
DASA_BIGRAM_BUCKETS = 1 << 14
# The b x N x N score matrix is bounded by cutting texts at 512 tokens; the baselines with a
# b x N x N x d tensor (additive scores, DiSAN) at 128.
DASA_MAX_LENGTH = 512
PAIRWISE_MAX_LENGTH = 128
_INPUTS = {
    "shape": "flat",
    "lowercase": True,
    "min_freq": 1,
    "embeddings": None,  # section 4: "without any pre-trained word embeddings"
    "embedding_dim": 64,
    "bigram_buckets": DASA_BIGRAM_BUCKETS,
    "max_length": DASA_MAX_LENGTH,
}
_SIZES = " d = 64, FC 64, 2**14 bigram buckets added to the words, texts cut at {n} tokens (the paper gives no sizes)."


def frame_preset(name, family, arch, description, max_length=DASA_MAX_LENGTH):
    """A preset of the section 4 frame: DASA's recipe and inputs, texts cut at ``max_length``."""
    return Preset(name, family, arch=arch, recipe=DASA_RECIPE, inputs={**_INPUTS, "max_length": max_length},
                  description=description + _SIZES.format(n=max_length), paper=_PAPER)


SELF_ATTENTION_PRESETS = [
    frame_preset("self-attention-additive", "self-attention", {"score": "additive"},
                 "Table 3 'Additive': single-dimensional self-attention, v^T tanh(W q + U k) scores (b x N x N x d).",
                 max_length=PAIRWISE_MAX_LENGTH),
    frame_preset("self-attention-general", "self-attention", {"score": "general"},
                 "Table 3 'General': single-dimensional self-attention, q^T W k scores."),
    frame_preset("self-attention-dot", "self-attention", {"score": "dot"},
                 "Table 3 'Dot Product': single-dimensional self-attention, q^T k scores."),
    frame_preset("self-attention-scaled-dot", "self-attention", {"score": "scaled-dot"},
                 "Table 3 'Scaled Dot Product': single-dimensional self-attention, q^T k / sqrt(d) scores."),
]
DISAN_PRESETS = [
    frame_preset("disan-t2t", "disan-t2t", {},
                 "Table 3 'Previous MDSA': DiSAN-style multi-dimensional token2token self-attention "
                 "(b x N x N x d tensors; memory-hungry).", max_length=PAIRWISE_MAX_LENGTH),
]

# Registered after the classes so that all presets sit together here.
for _preset_ in SELF_ATTENTION_PRESETS + DISAN_PRESETS:
    register_preset(_preset_)
