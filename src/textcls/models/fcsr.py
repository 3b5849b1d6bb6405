"""FCSR: "Full-context semantic representation in sentence level" (sections 3 and 4, eq. 1-16).

One layer, no recurrence over positions. For every target word ``S_t`` (``n``-d embedding):

- **Full-scale context** (3.2, eq. 2-3; matrix form eq. 12-13). FOFE with forgetting factor
  ``alpha`` (0.2 in 5.1): ``FOFE(S_i, S_j) = alpha * FOFE(S_i, S_{j-1}) + S_j`` (eq. 2), so the
  left context ``S_tl = FOFE(S_1, S_{t-1}) = sum_{j<t} alpha^(t-1-j) S_j`` and the right context
  ``S_tr = FOFE(S_m, S_{t+1}) = sum_{j>t} alpha^(j-t-1) S_j``: the nearest word weighs 1.
  ``S_1l = S_mr = 0`` (eq. 3's boundary case). See ``fofe_contexts`` for how all positions
  are computed at once and why no ``alpha^k`` overflows or underflows badly.
- **Context Integration Sub-cell** (3.3.1, eq. 4-6): four sigmoid gates
  ``G_* = sigma(S_t W_t* + S_tc W_c* + b_*)`` with ``S_tc = [S_tl; S_tr]`` (eq. 5);
  ``C_t = S_t*G_q + S_tl*G_k + S_tr*G_v`` (f_a, eq. 4) and ``C^_t = tanh(C_t)*G_o`` (f_t).
- **Semantic Analysis Sub-cell** (3.4, eq. 7-8): gates ``sigma(S_t W_t* + C_t W_l* + C^_t W_r* + b_*)``;
  ``H_t = S_t*G_q + C_t*G_k + C^_t*G_v``, ``H^_t = tanh(H_t)*G_o``.
- ``R_t = [C_t; C^_t; H_t; H^_t]`` (4n wide, end of 3.4).
- **Feature attention** (3.5, eq. 9): ``r = flat(sigma((R W_q)^T (R W_k) / sqrt(n)) W_f)``, an
  ``n x n`` feature-by-feature map summed over positions (reading below), then a softmax
  classifier on ``r``.
- **Training** (5.1): Adam with eq. 16's per-epoch decay over 40 epochs (registered as the
  lr lambda ``"fcsr-eq16"``), every weight drawn from a normal distribution; the initial
  rate is 3e-3 here, not 5.1's 0.01 (reading 4).

Readings of ambiguous passages (each also commented at its line):

1. Eq. 9's shapes. ``R`` is ``m x 4n`` (``R_t`` concatenates four n-vectors; sec. 3's "R in
   R^{m x n}" predates that), ``W_q, W_k`` are stated ``n x n`` and ``W_f`` is ``n x 1`` with
   ``r = flat(.)`` of shape ``1 x n``. ``(R W_q)(R W_k)`` is only conformable as
   ``(R W_q)^T (R W_k)`` (``n x n``: the "feature attention" of 3.5 weighs features, not
   positions) or ``(R W_q)(R W_k)^T`` (``m x m``; then ``x W_f`` would need ``W_f`` in
   ``R^{m x 1}``, impossible for variable ``m``). So the product is ``Q^T K`` and, to keep
   ``n x n``, ``n x 1`` and ``r in R^n`` exactly as stated, ``W_q, W_k`` map the 4n-wide
   ``R_t`` to ``n`` (``4n x n``). The sum over positions in ``Q^T K`` keeps the cost O(m).
   Padded positions have ``R_t = 0`` and add nothing. The scale is the paper's ``sqrt(n)``;
   the sum over positions is not divided by the length (``length_normalize=True`` does, as
   an option; see reading 4).
2. The text of 3.3.1 says the compressed vectors are activated "by ReLU"; eq. 5, 7, 14 and 15
   use sigma: the equations win (sigmoid gates).
3. Eq. 16 is recursive in ``lr_i``: ``lr_{i+1} = 0.8 lr_i 0.01^((i + 0.01)/(E + 0.01))``, read
   literally with ``i`` the 0-based epoch index (see ``fcsr_eq16``). The rate falls fast: x0.10
   of its start at epoch 5 and x6e-4 at epoch 10 (E = 40). The other reading, ``lr_0`` on the
   right (a decay to ~1 % at ``E``), is the lr lambda ``"fcsr-eq16-exponential"``.
4. Initial weights and rate. "Normal initialisation" gives no scale; every weight matrix is
   drawn from ``N(0, 0.02^2)`` (``init_std``), biases 0. Both matter because eq. 9's scores
   sum over all positions and grow with ``|W_q| |W_k|``: once they pass ~5 the sigmoid
   saturates and no gradient reaches the sub-cells. ``textcls benchmark --suite fcsr_init``
   (benchmarks/results/fcsr_init.md, seed 0): ``N(0, 0.1^2)`` with lr 0.01 saturates on imdb
   reviews cut to 300 tokens (50.25 %); with 0.02, lr 0.01 is as good as 3e-3 on apparel and
   cut imdb (85.75 / 81.75 against 84.00 / 81.25) but saturates on whole imdb reviews
   (50.25 % against 83.25 %). The preset takes 3e-3, which trains at every length we ran.
5. Dropout "set according to datasets": one rate on ``r`` before the classifier (0.5).
   The "FP-net ... in an anti-gradient direction" of 5.1 is not described; not implemented.
6. Context window (Figure 3): the 5.2 example ("context window 3" spans 3 words on each side
   of "language") reads the window as words on each side, so ``context_window=k`` limits the
   left and right contexts to the ``k`` nearest words; ``None`` is full context, 0 none.
7. Embeddings: the paper does not say whether GloVe is fine-tuned; it is (``freeze_embeddings``
   freezes it). GloVe 6B 50-d offline where the paper used 300-d, so ``n = 50``.

Multi-task (Table 5) is plumbing only: ``num_tasks > 1`` gives one classifier head per task
over the one shared FCSR body; ``batch["task_ids"]`` (``[B]`` long) picks each document's head.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..errors import ConfigError
from ..recipe import Recipe, register_lr_lambda
from ..validate import check_int, check_positive_int, check_probability, range_check
from .base import Output, TextModel
from .layers import build_embedding
from .registry import Preset, register_model

FOFE_ALPHA = 0.2  # 5.1: "Forgetting parameter alpha of FOFE was fixed to 0.2"
# Figure 3's context windows (words on each side); "from 1 to full-scale", with 9 and 15 named.
FIGURE3_WINDOWS = (1, 3, 5, 7, 9, 11, 13, 15)


# ----------------------------------------------------------------------------- eq. 16


@register_lr_lambda("fcsr-eq16")
def fcsr_eq16(epochs: int = 40):
    """Eq. 16's learning-rate factor for 0-based epoch ``e`` (``epochs`` = ``epoch_max``).

    ``lr_{i+1} = 0.8 * lr_i * 0.01^((i + 0.01) / (E + 0.01))`` unrolled from ``lr_0``:
    ``lr_e / lr_0 = 0.8^e * 0.01^((e(e-1)/2 + 0.01 e) / (E + 0.01))``. Evaluated in log space, so
    a factor below the float range is 0.0, never an error.
    """
    check_positive_int("epochs", epochs)

    def factor(epoch: int) -> float:
        # i is the 0-based epoch index (the engine's): epoch 0 trains at the initial rate.
        exponent_sum = (epoch * (epoch - 1) / 2 + 0.01 * epoch) / (epochs + 0.01)
        return math.exp(epoch * math.log(0.8) + exponent_sum * math.log(0.01))

    return factor


@register_lr_lambda("fcsr-eq16-exponential")
def fcsr_eq16_exponential(epochs: int = 40):
    """Eq. 16 read with the initial rate on its right side (reading 3's other reading):
    ``lr_{i+1} = 0.8 * lr_0 * 0.01^((i + 0.01) / (E + 0.01))``, a plain exponential decay to
    about 1 % of ``lr_0`` at ``epoch_max``. Read literally, the recursion compounds, and the
    rate is below 1e-3 of its start by epoch 10 of 40, so ``epoch_max = 40`` would hardly
    matter; this reading is what makes it the end of the decay. Not the preset's (the equation
    as printed is recursive); `fcsr_fdu_full`'s `fcsr-eq16-exponential` tests it.
    """
    check_positive_int("epochs", epochs)

    def factor(epoch: int) -> float:
        # Epoch 0 trains at lr_0, as under the literal reading; epoch e >= 1 at lr_e (i = e - 1).
        return 1.0 if epoch == 0 else 0.8 * 0.01 ** ((epoch - 1 + 0.01) / (epochs + 0.01))

    return factor


# ----------------------------------------------------------------------------- FOFE


def _fofe_prefix(x: Tensor, alpha: float) -> Tensor:
    """Inclusive FOFE along dim 1: ``h_t = alpha * h_{t-1} + x_t`` (eq. 2), ``h_0 = x_0``.

    A Hillis-Steele doubling scan: after the step with offset ``d``,
    ``h_t = sum_{j < 2d} alpha^j x_{t-j}``; each step adds ``alpha^d`` times the sequence shifted
    by ``d``. The loop runs over ``log2`` offsets, never over positions, and stops once
    ``alpha^d`` rounds to zero in ``x``'s dtype (fp32, alpha 0.2: after offset 64, i.e. 7
    steps), because from there every further term is multiplied by an exact 0. So the cost is
    ``O(m n min(log2 m, log2 K))`` with ``K`` that underflow point, O(m n) in practice. Every
    multiplier is ``alpha^d <= 1`` and nothing is divided by ``alpha^t`` (the closed form
    ``alpha^t cumsum(alpha^-j x_j)`` would overflow fp32 at ``t`` ~ 55 for alpha 0.2), so no
    length overflows. Each output is a sum of non-negatively weighted inputs accumulated in at
    most 7 rounds, so its error is a few fp32 ulps of ``sum_j alpha^(t-j) |x_j|``, like the
    sequential recurrence's (tested against a float64 loop up to m = 10,000).
    """
    length = x.size(1)
    result = x
    offset, weight = 1, float(alpha)
    # A trace (ONNX export) fixes the number of steps: it takes all of them, a shift past the
    # end adding zeros, and slices by the traced length, so one graph serves every length.
    tracing = torch.jit.is_tracing()
    while (offset < length or tracing) and torch.tensor(weight, dtype=x.dtype).item() != 0.0:
        if tracing:
            shifted = F.pad(result, (0, 0, offset, 0))[:, :length]
        else:
            shifted = F.pad(result[:, : length - offset], (0, 0, offset, 0))
        result = result + weight * shifted
        offset, weight = 2 * offset, weight * weight
    return result


def _fofe_window(x: Tensor, alpha: float, window: int) -> Tensor:
    """``sum_{i=1..window} alpha^(i-1) x_{t-i}`` for every ``t`` (a left context of ``window`` words).

    A depthwise convolution with the ``window`` weights ``[alpha^(k-1), ..., alpha, 1]``:
    O(m n k), exact (no long-range term is cancelled), used for Figure 3's small windows.
    """
    length, dim = x.size(1), x.size(2)
    powers = alpha ** torch.arange(window - 1, -1, -1, dtype=torch.float64)
    kernel = powers.to(x.dtype).view(1, 1, window).expand(dim, 1, window)
    # Left-pad by `window`: output t reads x[t-window .. t-1]; the extra last output is dropped.
    padded = F.pad(x.transpose(1, 2), (window, 0))
    return F.conv1d(padded, kernel, groups=dim)[..., :length].transpose(1, 2)


def fofe_contexts(words: Tensor, mask: Tensor, alpha: float = FOFE_ALPHA,
                  window: int | None = None) -> tuple[Tensor, Tensor]:
    """Left and right FOFE contexts of every position (eq. 2-3, 12-13), all at once.

    ``words [B, m, n]``, ``mask [B, m]`` bool (True = real token, real tokens first). Returns
    ``(S_l, S_r)``, each ``[B, m, n]``: ``S_l[t] = sum_{j<t} alpha^(t-1-j) S_j`` and
    ``S_r[t] = sum_{j>t} alpha^(j-t-1) S_j``, over real tokens only, with ``S_l[0] = 0`` and the
    right context of each document's last real token 0 (eq. 3's boundaries). With
    ``window=k`` only the ``k`` nearest words on each side count (Figure 3); ``window=0`` gives
    zero contexts.
    """
    # Padding is zeroed first, so it contributes nothing to any right context.
    words = words * mask.unsqueeze(-1).to(words.dtype)
    if window is not None and window == 0:
        zeros = torch.zeros_like(words)
        return zeros, zeros

    def left(x: Tensor) -> Tensor:
        if window is not None and window < x.size(1):
            return _fofe_window(x, alpha, window)
        # FOFE(S_1, S_{t-1}) is the inclusive scan one position back; S_1l = 0.
        return F.pad(_fofe_prefix(x, alpha)[:, :-1], (0, 0, 1, 0))

    # FOFE(S_m, S_{t+1}) runs from the end towards t: the left context of the reversed sequence.
    return left(words), left(words.flip(1)).flip(1)


# ----------------------------------------------------------------------------- sub-cells


class GatedSubCell(nn.Module):
    """One FCSR sub-cell (eq. 4 with eq. 5-6 or 7-8).

    ``forward(x, y, z) -> (A, A^)``: four sigmoid gates from one affine map of ``[x; y; z]``
    (``W_t*, W_c*`` or ``W_t*, W_l*, W_r*`` side by side), then ``A = x*G_q + y*G_k + z*G_v``
    (f_a) and ``A^ = tanh(A)*G_o`` (f_t). For CIS ``(x, y, z) = (S_t, S_tl, S_tr)``: the
    gate input ``[S_t; S_tl; S_tr]`` is eq. 5's ``S_t W_t + S_tc W_c`` with ``S_tc = [S_tl; S_tr]``.
    For SAS ``(x, y, z) = (S_t, C_t, C^_t)`` (eq. 7).
    """

    def __init__(self, dim: int):
        super().__init__()
        # [W_t*; W_c*] for the four gates q, k, v, o in one matrix: 3n -> 4n (12 n^2 + 4 n).
        self.gates = nn.Linear(3 * dim, 4 * dim)

    def forward(self, x: Tensor, y: Tensor, z: Tensor) -> tuple[Tensor, Tensor]:
        gate_q, gate_k, gate_v, gate_o = torch.sigmoid(self.gates(torch.cat([x, y, z], dim=-1))).chunk(4, dim=-1)
        combined = x * gate_q + y * gate_k + z * gate_v
        return combined, torch.tanh(combined) * gate_o


class FeatureAttention(nn.Module):
    """Eq. 9: ``r = flat(sigma((R W_q)^T (R W_k) / sqrt(n)) W_f)``.

    ``forward(R [B, m, 4n], mask [B, m]) -> (r [B, n], A [B, n, n])`` with ``A`` the sigmoid map.
    """

    def __init__(self, input_dim: int, dim: int, length_normalize: bool = False):
        super().__init__()
        # W_q, W_k: 4n x n (eq. 9 states n x n for an n-wide R; R_t is 4n wide, see reading 1).
        self.query = nn.Linear(input_dim, dim, bias=False)
        self.key = nn.Linear(input_dim, dim, bias=False)
        self.select = nn.Linear(dim, 1, bias=False)  # W_f, n x 1
        self.dim = dim
        self.length_normalize = length_normalize

    def forward(self, features: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        features = features * mask.unsqueeze(-1).to(features.dtype)
        queries, keys = self.query(features), self.key(features)
        # Reading 1: (R W_q)^T (R W_k) is n x n and sums over the m positions (padding is 0 there).
        scores = torch.einsum("bmi,bmj->bij", queries, keys) / math.sqrt(self.dim)
        if self.length_normalize:  # an option, not the paper's eq. 9 (reading 4)
            scores = scores / mask.sum(dim=1).clamp_min(1).to(scores.dtype).view(-1, 1, 1)
        weights = torch.sigmoid(scores)
        return self.select(weights).squeeze(-1), weights


# ----------------------------------------------------------------------------- presets

_PAPER = "FCSR: Full-context semantic representation in sentence level (sections 3-5)"
# 5.1: Adam with eq. 16 over 40 epochs. Initial rate 3e-3, not 5.1's 0.01, which saturates eq. 9
# on long reviews (reading 4 in the module docstring). Batch 20 and weight decay 1e-4 are the
# only values the paper states (5.3's "direct" setting, Figure 7's caption). The paper gives
# no patience; under eq. 16 the rate is below 1e-3 of its start after 10 epochs, so stopping
# after 5 epochs without a dev improvement rarely changes the kept (best-on-dev) model.
FCSR_RECIPE = Recipe(
    optimizer="adam",
    lr=3e-3,
    weight_decay=1e-4,
    batch_size=20,
    epochs=40,
    patience=5,
    schedule={"type": "lambda", "name": "fcsr-eq16", "epochs": 40},
)
# GloVe 6B is lowercase; the paper's 300-d vectors are not offline.
FCSR_INPUTS = {"shape": "flat", "lowercase": True, "min_freq": 1, "embeddings": "glove-6b-50d", "embedding_dim": 50}
_GLOVE_NOTE = " GloVe 6B 50-d offline (the paper used 300-d GloVe), so n = 50."

FCSR_PRESETS = [
    Preset(
        "fcsr",
        "fcsr",
        recipe=FCSR_RECIPE,
        inputs=FCSR_INPUTS,
        description="FCSR: full-context FOFE (alpha 0.2), CIS + SAS sub-cells, feature attention; "
        "Adam 3e-3 with eq. 16." + _GLOVE_NOTE,
        paper=_PAPER + ", Tables 3-4",
    ),
    Preset(
        "fcsr-mtl",
        "fcsr",
        recipe=FCSR_RECIPE,
        inputs=FCSR_INPUTS,
        description="FCSR multi-task (Table 5): train it on `fdu_mtl`; one FCSR body shared by the 16 domains and "
        "one classifier head per domain (num_tasks is set from the data's tasks)." + _GLOVE_NOTE,
        paper=_PAPER + ", Table 5",
    ),
] + [
    Preset(
        f"fcsr-window-{k}",
        "fcsr",
        arch={"context_window": k},
        recipe=FCSR_RECIPE,
        inputs=FCSR_INPUTS,
        description=f"FCSR with left and right contexts limited to the {k} nearest words (Figure 3)." + _GLOVE_NOTE,
        paper=_PAPER + ", Figure 3",
    )
    for k in FIGURE3_WINDOWS
]


@register_model("fcsr", presets=FCSR_PRESETS)
class FCSR(TextModel):
    """Full-Context Semantic Representation classifier (see the module docstring)."""

    def __init__(
        self,
        vocab_size: int,
        num_classes: int,
        embeddings: np.ndarray | None = None,
        *,
        embedding_dim: int = 50,
        alpha: float = FOFE_ALPHA,
        context_window: int | None = None,
        dropout: float = 0.5,
        init_std: float = 0.02,
        length_normalize: bool = False,
        freeze_embeddings: bool = False,
        num_tasks: int = 1,
    ):
        super().__init__()
        check_positive_int("embedding_dim", embedding_dim, 1 << 16)
        range_check("alpha", alpha, 0, 1, low_open=True, high_open=True)  # FOFE's forgetting factor
        check_int("context_window", context_window, 0, 1 << 20, optional=True)
        check_probability("dropout", dropout)
        range_check("init_std", init_std, 0.0, 10.0, low_open=True)
        check_positive_int("num_tasks", num_tasks, 1 << 16)

        dim = embedding_dim
        self.alpha = float(alpha)
        self.context_window = None if context_window is None else int(context_window)
        self.num_tasks = num_tasks
        self.embedding = build_embedding(vocab_size, dim, embeddings, freeze=freeze_embeddings)
        self.context_integration = GatedSubCell(dim)
        self.semantic_analysis = GatedSubCell(dim)
        self.feature_attention = FeatureAttention(4 * dim, dim, length_normalize)
        self.dropout = nn.Dropout(dropout)
        # One head per task over the shared body (Table 5's multi-task setting when > 1).
        self.heads = nn.ModuleList(nn.Linear(dim, num_classes) for _ in range(num_tasks))
        # 5.1: "All weights were randomly initialized by the Normal distribution"; the small std
        # keeps eq. 9's position-summed scores out of the sigmoid's flat tails (reading 4).
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, std=init_std)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)

    def representation(self, batch: dict[str, Tensor]) -> tuple[Tensor, Tensor]:
        """``(R [B, m, 4n], mask [B, m])``: eq. 1's per-word representations, zero on padding."""
        ids, mask = batch["input_ids"], batch["mask"].bool()
        words = self.embedding(ids)
        left, right = fofe_contexts(words, mask, self.alpha, self.context_window)
        context, context_hat = self.context_integration(words, left, right)  # eq. 5-6
        semantic, semantic_hat = self.semantic_analysis(words, context, context_hat)  # eq. 7-8
        features = torch.cat([context, context_hat, semantic, semantic_hat], dim=-1)
        return features * mask.unsqueeze(-1).to(features.dtype), mask

    def forward(self, batch: dict[str, Tensor]) -> Output:
        features, mask = self.representation(batch)
        pooled, weights = self.feature_attention(features, mask)
        pooled = self.dropout(pooled)
        logits = self._classify(pooled, batch)
        # The map costs nothing extra here; it is returned under the project's convention only.
        attentions = {"feature": weights} if self.wants_attention_maps else {}
        return Output(logits=logits, attentions=attentions)

    def _classify(self, pooled: Tensor, batch: dict[str, Tensor]) -> Tensor:
        if self.num_tasks == 1:
            return self.heads[0](pooled)
        task_ids = batch.get("task_ids")
        if task_ids is None:
            raise ConfigError(
                f"fcsr with num_tasks = {self.num_tasks} needs 'task_ids' ([B] long) in the batch to pick each "
                "document's classifier head; add them or use num_tasks=1"
            )
        task_ids = task_ids.long()
        if task_ids.shape != pooled.shape[:1]:
            raise ConfigError(f"batch 'task_ids' has shape {tuple(task_ids.shape)}; expected [{pooled.size(0)}]")
        low, high = int(task_ids.min()), int(task_ids.max())
        if low < 0 or high >= self.num_tasks:
            bad = low if low < 0 else high
            raise ConfigError(
                f"batch 'task_ids' holds task {bad} but the model has num_tasks = {self.num_tasks} "
                f"(ids 0..{self.num_tasks - 1}); build the model with one head per task"
            )
        every_head = torch.stack([head(pooled) for head in self.heads], dim=1)  # [B, T, C]
        index = task_ids.view(-1, 1, 1).expand(-1, 1, every_head.size(-1))
        return every_head.gather(1, index).squeeze(1)
