"""Zhang, Qiu, Pang, Liu & Li (2021), "Dual-axial self-attention network for text
classification" (Sci China Inf Sci 64(12): 222102), with the self-attention baselines of
its Table 3.

Equations (section numbers and equation numbers of the paper):

- 3.2, the light-weight multi-dimensional self-attention. ``Q, K, V = W_Q X, W_K X, W_V X``
  (eqs. 2-4, ``d_1 = d_2 = d``); ``w_i = sum_j softplus(q_i . k_j) v_j`` (eqs. 6-7, the dot
  product score with softplus in place of softmax); ``h_ij = softplus(w_ij) * x_ij`` (eq. 8).
  ``multi_dimensional_self_attention`` computes it along one axis; its largest tensors are the
  ``b x N x N`` scores and ``b x N x d`` values, never ``b x N x N x d``.
- 3.3, the text-axial module (``TextAxialAttention``): the connection weights are multiplied
  by the attenuation factor ``zeta_ij = 1 / log(w |i - j| + c)`` with ``w = c = e`` (eqs. 9-10,
  ``attenuation_matrix``), and the output by ``mu = 1 / N`` (eq. 11), N being each document's
  true (unpadded) length.
- 3.4, the feature-axial module (``FeatureAxialAttention``): the same attention on the
  transposed text matrix (features attend to features), without attenuation or ``mu``.
- 3.5, the fusion gate (``DualAxialAttention``): ``f_i = sigmoid(W^f h^f_i + W^t h^t_i + b)``
  (eq. 12) and ``u = tanh(sum_i f_i * h^t_i + (1 - f_i) * h^f_i)`` (eq. 13), the sum over real
  tokens only.
- 4, the classifier: trained embeddings (no pretrained vectors) with bigram information, the
  dual-axial layer, a fully connected layer with sigmoid, a softmax output (in the loss),
  Glorot-initialised weights, zero biases, Adam.

Readings of what the paper leaves open (each also commented where it is coded):

- Feature-axial projections. Read literally, eqs. 2-4 on the transposed ``X^T`` would need
  ``N x N`` matrices, which cannot exist for texts of varying length. The projections are the
  text axis's ``d x d`` maps (``Q^f = W^f_Q X``), and the attention then runs over the rows of
  ``Q^f, K^f, V^f`` (the feature vectors): scores ``Q^f (K^f)^T`` are ``d x d``, summed over the
  real tokens only (padded tokens are zeroed before the product).
- Bigrams ("we add bigram information to the input"): by default (``bigram_combine="add"``)
  the embedding of the hashed bigram (w_i, w_{i+1}) is added to word i's embedding, so the
  sequence keeps N positions and the attenuation factor keeps its meaning (the last word has
  no bigram). ``bigram_combine="append"`` appends the bigram vectors after the words, as the
  fastText recipe (and Keras' fastText example) does; positions then run on over the bigrams.
- Sizes and recipe: the paper gives no embedding width, FC width, learning rate, batch size,
  epochs or text length. Ours: ``d = 64``, FC ``64`` (sigmoid), Adam at lr 1e-3 (the Adam
  paper's default), batches of 64, at most 10 epochs with early stopping on dev (patience 3),
  2**14 bigram buckets, texts cut at 512 tokens (128 for the b x N x N x d baselines).
- Glorot for "the weights are all": every linear map and both embedding tables are drawn
  from Glorot's uniform range ``sqrt(6 / (fan_in + fan_out))``; every bias starts at 0.
- ``dasa-softmax``: only eq. 6 changes (softmax over the real keys instead of softplus); the
  attenuation factor, ``mu`` and eq. 8's softplus stay.
- Eq. 13 sums ``i = 0..N``; read as the N real tokens. The text-axial-only ablation pools the
  same way without the gate: ``u = tanh(sum_i h^t_i)``.
- Conventional self-attention (Table 1 scores, ``self-attention-*``): eq. 1 with softmax on
  the same ``Q, K, V`` projections, pooled as eq. 13 (``u = tanh(sum_i h_i)``).
- The previous multi-dimensional self-attention (``disan-t2t``, refs. 14-15): DiSAN's
  multi-dimensional token2token attention ``f(h_i, h_j) = W^T elu(W1 h_i + W2 h_j + b1) + b``,
  softmax over j per feature, DiSAN's fusion gate, pooled as eq. 13. It has no direction
  masks: the paper contrasts the attention's cost, O(b N^2 d^2) against O(b N^2 d), and
  this full form is the one whose cost it quotes. Its ``b x N x N x d`` tensors are the point
  of the speed comparison.

Attention maps (``Output.attentions``, in eval mode): ``text_axial`` and ``feature_axial`` are
``softplus(w_ij)`` of eq. 8, ``[B, N, d]``, one weight per word and dimension as in the
paper's Figure 5; ``fusion_gate`` is ``f`` of eq. 12. Padded positions are 0.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..errors import ConfigError
from ..recipe import Recipe
from ..validate import check_choice, check_flag, check_positive_int, check_probability, range_check
from .base import Output, TextModel
from .layers import build_embedding, masked_attention, masked_softmax
from .registry import Preset, register_model, register_preset

__all__ = [
    "attenuation_matrix",
    "multi_dimensional_self_attention",
    "TextAxialAttention",
    "FeatureAxialAttention",
    "DualAxialAttention",
    "DualAxialSelfAttentionClassifier",
    "SelfAttentionClassifier",
    "DiSANToken2TokenClassifier",
]

ALPHAS = ("softplus", "softmax")
AXES = ("dual", "text")
SCORES = ("additive", "general", "dot", "scaled-dot")
BIGRAM_COMBINES = ("add", "append")


# --------------------------------------------------------------------------- equations


def attenuation_matrix(positions: Tensor, w: float = math.e, c: float = math.e) -> Tensor:
    """Eq. 9: ``zeta_ij = 1 / log(w |i - j| + c)`` for token positions ``[..., N]`` -> ``[..., N, N]``.

    With ``w = c = e`` (the paper's values) ``zeta_ii = 1`` and ``zeta`` falls slowly with the
    distance (1 / (1 + log 2) = 0.5906 at distance 1).
    """
    positions = positions.to(torch.float32)
    distance = (positions.unsqueeze(-1) - positions.unsqueeze(-2)).abs()
    return torch.log(w * distance + c).reciprocal()


def multi_dimensional_self_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    inputs: Tensor,
    *,
    key_mask: Tensor | None = None,
    alpha: str = "softplus",
    attenuation: Tensor | None = None,
    normaliser: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """Eqs. 6-8 (and 10-11) along axis -2: elements ``[B, L, D]`` attend to each other.

    ``alpha_ij = softplus(q_i . k_j)`` (or a softmax over j, for the ablation), times
    ``attenuation [.., L, L]`` when given; ``w_i = sum_j alpha_ij v_j``;
    ``h = softplus(w) * inputs * normaliser``. ``key_mask [B, L]`` (True = real) removes padded
    keys from every sum. Returns ``(h, softplus(w))``, both ``[B, L, D]``.
    """
    scores = torch.matmul(query, key.transpose(-1, -2))  # s(k_j, q_i) = q_i . k_j: [B, L, L]
    mask = key_mask.bool().unsqueeze(-2) if key_mask is not None else None  # [B, 1, L]
    if alpha == "softplus":
        weights = F.softplus(scores)  # eq. 7
        if mask is not None:
            weights = weights * mask.to(weights.dtype)
    elif alpha == "softmax":
        weights = masked_softmax(scores, mask, dim=-1) if mask is not None else torch.softmax(scores, dim=-1)
    else:
        raise ConfigError(f"parameter 'alpha' = {alpha!r} is not one of {', '.join(ALPHAS)}")
    if attenuation is not None:
        weights = weights * attenuation  # eq. 10
    gate = F.softplus(torch.matmul(weights, value))  # softplus(w_ij), eqs. 6 and 8
    outputs = gate * inputs
    if normaliser is not None:
        outputs = outputs * normaliser  # mu of eq. 11
    return outputs, gate


def _glorot_linear(in_dim: int, out_dim: int, bias: bool = True) -> nn.Linear:
    layer = nn.Linear(in_dim, out_dim, bias=bias)
    # Section 4: Glorot's scheme for the weights, zeros for the biases.
    nn.init.xavier_uniform_(layer.weight)
    if bias:
        nn.init.zeros_(layer.bias)
    return layer


def _glorot_embedding(rows: int, dim: int, embeddings: np.ndarray | None = None) -> nn.Embedding:
    # nn.init.xavier_uniform_ on a [rows, dim] table: fan_in = dim, fan_out = rows.
    return build_embedding(rows, dim, embeddings, uniform_range=math.sqrt(6.0 / (rows + dim)))


# --------------------------------------------------------------------------- DASA modules


class TextAxialAttention(nn.Module):
    """Section 3.3 (Figure 3): eqs. 2-4, 10 and 11 over the tokens of ``x [B, N, d]``.

    ``forward(x, mask, positions) -> (H^t [B, N, d], softplus(W^t) [B, N, d])``; ``positions``
    (``[B, N]``) are the tokens' places in the text, from which ``zeta`` is built.
    """

    def __init__(self, dim: int, *, alpha: str = "softplus", attenuation: bool = True, normalise: bool = True,
                 attenuation_w: float = math.e, attenuation_c: float = math.e):
        super().__init__()
        check_positive_int("embedding_dim", dim, 1 << 16)
        check_choice("alpha", alpha, ALPHAS)
        self.alpha, self.attenuation, self.normalise = alpha, attenuation, normalise
        self.attenuation_w, self.attenuation_c = attenuation_w, attenuation_c
        self.query = _glorot_linear(dim, dim)
        self.key = _glorot_linear(dim, dim)
        self.value = _glorot_linear(dim, dim)

    def forward(self, x: Tensor, mask: Tensor, positions: Tensor) -> tuple[Tensor, Tensor]:
        mask = mask.bool()
        zeta = attenuation_matrix(positions, self.attenuation_w, self.attenuation_c) if self.attenuation else None
        # mu = 1/N with N the document's true length, so padding cannot change the output.
        mu = mask.sum(dim=1).clamp_min(1).to(x.dtype).reciprocal().view(-1, 1, 1) if self.normalise else None
        return multi_dimensional_self_attention(
            self.query(x), self.key(x), self.value(x), x,
            key_mask=mask, alpha=self.alpha, attenuation=zeta, normaliser=mu,
        )


class FeatureAxialAttention(nn.Module):
    """Section 3.4 (Figure 4): the same attention on the transposed matrix, features over features.

    ``forward(x [B, N, d], mask [B, N]) -> (H^f [B, N, d], softplus(W^f) [B, N, d])``. No
    attenuation (feature order carries no distance) and no ``mu`` (d is fixed).
    """

    def __init__(self, dim: int, *, alpha: str = "softplus"):
        super().__init__()
        check_positive_int("embedding_dim", dim, 1 << 16)
        check_choice("alpha", alpha, ALPHAS)
        self.alpha = alpha
        # Reading: d x d maps on each token, as on the text axis; eqs. 2-4 on X^T would need
        # N x N maps, impossible for texts of varying length (see the module docstring).
        self.query = _glorot_linear(dim, dim)
        self.key = _glorot_linear(dim, dim)
        self.value = _glorot_linear(dim, dim)

    def forward(self, x: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        keep = mask.bool().unsqueeze(-1).to(x.dtype)
        # Zeroed padded tokens (the biases would make them non-zero) drop out of the d x d
        # scores, which sum over the tokens.
        query, key, value = (proj(x) * keep for proj in (self.query, self.key, self.value))
        outputs, gate = multi_dimensional_self_attention(
            query.transpose(1, 2), key.transpose(1, 2), value.transpose(1, 2), x.transpose(1, 2), alpha=self.alpha
        )
        return outputs.transpose(1, 2), gate.transpose(1, 2)


class DualAxialAttention(nn.Module):
    """Section 3 (Figure 2): text- and feature-axial modules, fusion gate, sum over the text.

    ``forward(x [B, N, d], mask [B, N], positions [B, N]) -> (u [B, d], maps)`` where ``maps``
    holds ``text_axial``, ``feature_axial`` and ``fusion_gate`` ``[B, N, d]`` (zero at padding).
    ``feature_axis=False`` is the text-axial-only ablation: ``u = tanh(sum_i h^t_i)``.
    """

    def __init__(self, dim: int, *, alpha: str = "softplus", attenuation: bool = True, feature_axis: bool = True,
                 attenuation_w: float = math.e, attenuation_c: float = math.e):
        super().__init__()
        self.text = TextAxialAttention(dim, alpha=alpha, attenuation=attenuation,
                                       attenuation_w=attenuation_w, attenuation_c=attenuation_c)
        self.feature = FeatureAxialAttention(dim, alpha=alpha) if feature_axis else None
        if feature_axis:
            # Eq. 12: W^t and W^f are d x d, with one shared bias b.
            self.gate_text = _glorot_linear(dim, dim)
            self.gate_feature = _glorot_linear(dim, dim, bias=False)

    def forward(self, x: Tensor, mask: Tensor, positions: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        keep = mask.bool().unsqueeze(-1).to(x.dtype)
        text_out, text_gate = self.text(x, mask, positions)
        maps = {"text_axial": text_gate * keep}
        if self.feature is None:
            fused = text_out
        else:
            feature_out, feature_gate = self.feature(x, mask)
            fusion = torch.sigmoid(self.gate_feature(feature_out) + self.gate_text(text_out))  # eq. 12
            fused = fusion * text_out + (1 - fusion) * feature_out
            maps["feature_axial"] = feature_gate * keep
            maps["fusion_gate"] = fusion * keep
        # Eq. 13, summing the real tokens only (the gate's bias would otherwise leak padding in).
        return torch.tanh((fused * keep).sum(dim=1)), maps


# --------------------------------------------------------------------------- classifiers


class _AttentionClassifier(TextModel):
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
        self.words = _glorot_embedding(vocab_size, embedding_dim, embeddings)
        # Row 0 is the bigram PAD; the pipeline's bucket ids run 1..bigram_buckets.
        self.bigrams = _glorot_embedding(bigram_buckets + 1, embedding_dim) if bigram_buckets else None
        self.dropout = nn.Dropout(dropout)
        self.hidden = _glorot_linear(embedding_dim, hidden_dim)
        self.output = _glorot_linear(hidden_dim, num_classes)

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


@register_model("dasa")
class DualAxialSelfAttentionClassifier(_AttentionClassifier):
    """The paper's model (sections 3-4); ``axes="text"`` and the other switches give its ablations."""

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
        axes: str = "dual",
        alpha: str = "softplus",
        attenuation: bool = True,
        attenuation_w: float = math.e,
        attenuation_c: float = math.e,
    ):
        super().__init__(vocab_size, num_classes, embeddings, embedding_dim=embedding_dim,
                         bigram_buckets=bigram_buckets, bigram_combine=bigram_combine,
                         hidden_dim=hidden_dim, dropout=dropout)
        check_choice("axes", axes, AXES)
        check_choice("alpha", alpha, ALPHAS)
        check_flag("attenuation", attenuation)
        range_check("attenuation_w", attenuation_w, 0.0, 1e6)
        # zeta_ii = 1 / log(c) must be finite and positive: c > 1.
        range_check("attenuation_c", attenuation_c, 1.0, 1e6, low_open=True)
        self.attention = DualAxialAttention(embedding_dim, alpha=alpha, attenuation=attenuation,
                                            feature_axis=axes == "dual", attenuation_w=attenuation_w,
                                            attenuation_c=attenuation_c)

    def forward(self, batch: dict[str, Tensor]) -> Output:
        x, mask, positions = self.embed(batch)
        pooled, maps = self.attention(x, mask, positions)
        return Output(logits=self.classify(pooled), attentions=maps if self.wants_attention_maps else {})


@register_model("self-attention")
class SelfAttentionClassifier(_AttentionClassifier):
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
        self.query = _glorot_linear(dim, dim)
        self.key = _glorot_linear(dim, dim)
        self.value = _glorot_linear(dim, dim)
        if score == "additive":
            # Table 1: v^T tanh(W q_i + U k_j); W, U d x d, v a d-vector (Bahdanau's form has no bias).
            self.score_query = _glorot_linear(dim, dim, bias=False)
            self.score_key = _glorot_linear(dim, dim, bias=False)
            self.score_vector = _glorot_linear(dim, 1, bias=False)
        elif score == "general":
            # Table 1: q_i^T W k_j, computed as (W^T q_i) . k_j.
            self.score_query = _glorot_linear(dim, dim, bias=False)

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
class DiSANToken2TokenClassifier(_AttentionClassifier):
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
        self.input_layer = _glorot_linear(dim, dim)
        self.pair_first = _glorot_linear(dim, dim)  # W1, with b1
        self.pair_second = _glorot_linear(dim, dim, bias=False)  # W2
        self.pair_output = _glorot_linear(dim, dim)  # W^T . + b: the d x d map per pair
        self.fusion_context = _glorot_linear(dim, dim)  # W_f1, with b_f
        self.fusion_input = _glorot_linear(dim, dim, bias=False)  # W_f2

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


# --------------------------------------------------------------------------- presets

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


def _preset(name, family, arch, description, max_length=DASA_MAX_LENGTH):
    return Preset(name, family, arch=arch, recipe=DASA_RECIPE, inputs={**_INPUTS, "max_length": max_length},
                  description=description + _SIZES.format(n=max_length), paper=_PAPER)


DASA_PRESETS = [
    _preset("dasa", "dasa", {}, "Dual-axial self-attention (Table 3 'Dual-axial SA'): softplus, attenuation, "
            "text and feature axes with the fusion gate."),
    _preset("dasa-softmax", "dasa", {"alpha": "softmax"},
            "Table 3 'Dual-axial SA w/ softmax': softmax in place of softplus in eq. 6."),
    _preset("dasa-text-axial", "dasa", {"axes": "text"},
            "Table 3 'Text-axial SA': the text-axial module alone (no feature axis, no gate)."),
    _preset("dasa-text-axial-no-attenuation", "dasa", {"axes": "text", "attenuation": False},
            "Table 3 'Text-axial SA w/o attenuation factor': zeta = 1."),
]
SELF_ATTENTION_PRESETS = [
    _preset("self-attention-additive", "self-attention", {"score": "additive"},
            "Table 3 'Additive': single-dimensional self-attention, v^T tanh(W q + U k) scores (b x N x N x d).",
            max_length=PAIRWISE_MAX_LENGTH),
    _preset("self-attention-general", "self-attention", {"score": "general"},
            "Table 3 'General': single-dimensional self-attention, q^T W k scores."),
    _preset("self-attention-dot", "self-attention", {"score": "dot"},
            "Table 3 'Dot Product': single-dimensional self-attention, q^T k scores."),
    _preset("self-attention-scaled-dot", "self-attention", {"score": "scaled-dot"},
            "Table 3 'Scaled Dot Product': single-dimensional self-attention, q^T k / sqrt(d) scores."),
]
DISAN_PRESETS = [
    _preset("disan-t2t", "disan-t2t", {},
            "Table 3 'Previous MDSA': DiSAN-style multi-dimensional token2token self-attention "
            "(b x N x N x d tensors; memory-hungry).", max_length=PAIRWISE_MAX_LENGTH),
]

# Registered after the classes so that all presets sit together here.
for _preset_ in DASA_PRESETS + SELF_ATTENTION_PRESETS + DISAN_PRESETS:
    register_preset(_preset_)
