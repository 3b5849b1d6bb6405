"""Zhang, Qiu, Pang, Liu & Li (2021), "Dual-axial self-attention network for text
classification" (Sci China Inf Sci 64(12): 222102): DASA and its ablations. The classifier
frame of section 4 (``AttentionClassifier``) and the self-attention baselines of its Table 3
are in ``self_attention.py``.

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
- ``attenuation_scale="row-mean"`` (preset ``dasa-text-axial-attenuation-shape``, ours, a
  diagnosis and not the paper's): each row of ``zeta`` divided by its mean over the document's
  real keys, so that the factor keeps eq. 9's decay with distance but no longer shrinks the
  weights on average (eq. 9's mean is 0.40 over 20 words and 0.18 over 512, which eq. 10 folds
  into the scale of ``w_i`` and so of eq. 8's gate). It asks whether Table 3's attenuation
  result hangs on that scale.
- ``dasa-softmax``: only eq. 6 changes (softmax over the real keys instead of softplus); the
  attenuation factor, ``mu`` and eq. 8's softplus stay.
- Eq. 13 sums ``i = 0..N``; read as the N real tokens. The text-axial-only ablation pools the
  same way without the gate: ``u = tanh(sum_i h^t_i)``.
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
from ..validate import check_choice, check_flag, check_positive_int, range_check
from .base import Output
from .layers import masked_softmax
from .registry import register_model, register_preset
from .self_attention import AttentionClassifier, frame_preset, glorot_linear

__all__ = [
    "attenuation_matrix",
    "row_mean_normalised",
    "multi_dimensional_self_attention",
    "TextAxialAttention",
    "FeatureAxialAttention",
    "DualAxialAttention",
    "DualAxialSelfAttentionClassifier",
]

ALPHAS = ("softplus", "softmax")
AXES = ("dual", "text")
ATTENUATION_SCALES = ("paper", "row-mean")  # "row-mean": a diagnosis, not eq. 9 (module docstring)


# --------------------------------------------------------------------------- equations


def attenuation_matrix(positions: Tensor, w: float = math.e, c: float = math.e) -> Tensor:
    """Eq. 9: ``zeta_ij = 1 / log(w |i - j| + c)`` for token positions ``[..., N]`` -> ``[..., N, N]``.

    With ``w = c = e`` (the paper's values) ``zeta_ii = 1`` and ``zeta`` falls slowly with the
    distance (1 / (1 + log 2) = 0.5906 at distance 1).
    """
    positions = positions.to(torch.float32)
    distance = (positions.unsqueeze(-1) - positions.unsqueeze(-2)).abs()
    return torch.log(w * distance + c).reciprocal()


def row_mean_normalised(zeta: Tensor, key_mask: Tensor) -> Tensor:
    """``zeta [B, N, N]`` with each row divided by its mean over the real keys (``key_mask [B, N]``).

    Keeps eq. 9's shape (how the factor falls with distance) and removes its scale: every
    row then averages 1 over the document's own words, whatever the padding.
    """
    keys = key_mask.bool().unsqueeze(-2).to(zeta.dtype)  # [B, 1, N]
    row_mean = (zeta * keys).sum(dim=-1, keepdim=True) / keys.sum(dim=-1, keepdim=True).clamp_min(1)
    # A document without real words has a zero mean; its weights are all masked to 0 anyway,
    # and dividing by 1 keeps them 0 where dividing by 0 would make 0 x inf = NaN, and NaN
    # the whole batch's loss.
    return zeta / torch.where(row_mean > 0, row_mean, torch.ones_like(row_mean))


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


# --------------------------------------------------------------------------- DASA modules


class TextAxialAttention(nn.Module):
    """Section 3.3 (Figure 3): eqs. 2-4, 10 and 11 over the tokens of ``x [B, N, d]``.

    ``forward(x, mask, positions) -> (H^t [B, N, d], softplus(W^t) [B, N, d])``; ``positions``
    (``[B, N]``) are the tokens' places in the text, from which ``zeta`` is built.
    ``attenuation_scale="row-mean"`` (ours, a diagnosis) divides each row of ``zeta`` by its mean
    over the real keys (``row_mean_normalised``)."""

    def __init__(self, dim: int, *, alpha: str = "softplus", attenuation: bool = True, normalise: bool = True,
                 attenuation_w: float = math.e, attenuation_c: float = math.e, attenuation_scale: str = "paper"):
        super().__init__()
        check_positive_int("embedding_dim", dim, 1 << 16)
        check_choice("alpha", alpha, ALPHAS)
        check_choice("attenuation_scale", attenuation_scale, ATTENUATION_SCALES)
        if attenuation_scale != "paper" and not attenuation:
            raise ConfigError(f"parameter 'attenuation_scale' = {attenuation_scale!r} scales the attenuation factor, "
                              "which attenuation=False turns off; set attenuation=True or leave the scale 'paper'")
        self.alpha, self.attenuation, self.normalise = alpha, attenuation, normalise
        self.attenuation_w, self.attenuation_c = attenuation_w, attenuation_c
        self.attenuation_scale = attenuation_scale
        self.query = glorot_linear(dim, dim)
        self.key = glorot_linear(dim, dim)
        self.value = glorot_linear(dim, dim)

    def forward(self, x: Tensor, mask: Tensor, positions: Tensor) -> tuple[Tensor, Tensor]:
        mask = mask.bool()
        zeta = attenuation_matrix(positions, self.attenuation_w, self.attenuation_c) if self.attenuation else None
        if zeta is not None and self.attenuation_scale == "row-mean":
            zeta = row_mean_normalised(zeta, mask)  # a diagnosis, not eq. 9 (module docstring)
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
        self.query = glorot_linear(dim, dim)
        self.key = glorot_linear(dim, dim)
        self.value = glorot_linear(dim, dim)

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
                 attenuation_w: float = math.e, attenuation_c: float = math.e, attenuation_scale: str = "paper"):
        super().__init__()
        self.text = TextAxialAttention(dim, alpha=alpha, attenuation=attenuation, attenuation_w=attenuation_w,
                                       attenuation_c=attenuation_c, attenuation_scale=attenuation_scale)
        self.feature = FeatureAxialAttention(dim, alpha=alpha) if feature_axis else None
        if feature_axis:
            # Eq. 12: W^t and W^f are d x d, with one shared bias b.
            self.gate_text = glorot_linear(dim, dim)
            self.gate_feature = glorot_linear(dim, dim, bias=False)

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


# --------------------------------------------------------------------------- the classifier


@register_model("dasa")
class DualAxialSelfAttentionClassifier(AttentionClassifier):
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
        attenuation_scale: str = "paper",
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
                                            attenuation_c=attenuation_c, attenuation_scale=attenuation_scale)

    def forward(self, batch: dict[str, Tensor]) -> Output:
        x, mask, positions = self.embed(batch)
        pooled, maps = self.attention(x, mask, positions)
        return Output(logits=self.classify(pooled), attentions=maps if self.wants_attention_maps else {})


# --------------------------------------------------------------------------- presets

DASA_PRESETS = [
    frame_preset("dasa", "dasa", {}, "Dual-axial self-attention (Table 3 'Dual-axial SA'): softplus, attenuation, "
                 "text and feature axes with the fusion gate."),
    frame_preset("dasa-softmax", "dasa", {"alpha": "softmax"},
                 "Table 3 'Dual-axial SA w/ softmax': softmax in place of softplus in eq. 6."),
    frame_preset("dasa-text-axial", "dasa", {"axes": "text"},
                 "Table 3 'Text-axial SA': the text-axial module alone (no feature axis, no gate)."),
    frame_preset("dasa-text-axial-no-attenuation", "dasa", {"axes": "text", "attenuation": False},
                 "Table 3 'Text-axial SA w/o attenuation factor': zeta = 1."),
    frame_preset("dasa-text-axial-attenuation-shape", "dasa",
                 {"axes": "text", "attenuation_scale": "row-mean"},
                 "Ours, a diagnosis of Table 3's attenuation row (not in the paper): text-axial SA with eq. 9's "
                 "zeta divided by its mean over each row's real keys, its decay with distance kept and its "
                 "shrinking of the weights removed."),
]

# Registered after the class so that the presets sit together here.
for _preset_ in DASA_PRESETS:
    register_preset(_preset_)
