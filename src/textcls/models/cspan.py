"""CSPAN: Jiang, Zhang and Zhang, "Cascaded Semantic and Positional Self-Attention Network for
Document Classification" (Findings of EMNLP 2020). Section 2, equation by equation:

- (4) semantic self-attention with no query/key/value projections, then layer normalisation:
  ``S = LN(softmax(D D^T / sqrt(d)) D)``, ``D [L, d]`` the word vectors;
- (5)-(7) a Bi-LSTM with ``d/2`` hidden units per direction over ``S``: ``H = [h_fwd ; h_bwd]``;
- (8) a second projection-free self-attention over ``H``, then layer normalisation: ``P``;
- (9) the semantic and positional residual connection ``F = S + P``;
- (10)-(13) multi-query soft attention: ``u_t = tanh(F_t W_h + b_h)``,
  ``alpha_it = softmax_t(u_t . Q_i)`` for ``m`` learned queries ``Q_i``,
  ``F_i = sum_t alpha_it F_t``, ``F~ = [F_1 ; ... ; F_m] W_f`` with ``W_f [m*d, d]``;
- (14)-(16) a softmax classifier ``softmax(W_o F~ + b_o)`` trained with the negative
  log-likelihood (the engine's cross-entropy on the logits).

Padding is masked in both self-attentions (keys), in the Bi-LSTM (read by true length, ``layers.masked_rnn``) and in
the pooling, so a padded batch gives each document the logits it gets alone. Training uses the
fused attention kernel (``masked_attention``); in eval mode the explicit weights are computed and
returned in ``Output.attentions``: ``"semantic"`` (eq. 4, ``[B, L, L]``), ``"positional"``
(eq. 8, ``[B, L, L]``) and ``"queries"`` (eq. 11, ``[B, m, L]``), zero on padded rows and columns.

Readings of the points the paper leaves open (each also at its line):

- Layer normalisation is applied to the attention output alone (no residual to ``D`` or ``H``
  inside a block: the only residual is eq. 9), with a learned gain and bias (Ba et al. 2016).
  The other reading of "followed by layer normalization", in a section that opens with
  Vaswani et al. (2017), is the Transformer's "Add & Norm", ``S = LN(D + Att(D))`` and
  ``P = LN(H + Att(H))``: ``add_and_norm=True``, presets ``*-addnorm`` (an experiment, stop 42:
  on trec the literal "+ self-att" row loses 2.1 points to the Bi-LSTM alone, and within a
  sentence the literal ``S`` rows are near copies of each other, mean cosine 0.81 against 0.50
  for the word vectors).
- ``W_f`` (eq. 13) has no bias, as written; ``Q`` starts from N(0, 1/d) (the paper: "randomly
  initialised"). No dropout: the paper names none (its regulariser is Adam's weight decay 1e-4).
- Word vectors are initialised from GloVe and fine-tuned (section 3.2 "initialize").
- ``cspan-big``'s 3-layer Bi-LSTM is one stacked ``nn.LSTM``: layer ``k+1`` reads layer ``k``'s
  ``d``-wide output; the paper trains it 60 epochs (section 3.1) without restating the
  schedule, so its lr is divided by 10 at epochs 40 and 50 (the base's 20/25 of 30, scaled).
- Table 3's component ablation adds one section of the paper per row: the Bi-LSTM baseline has
  no self-attention, no residual and no multi-query pooling; "+ self-att" adds eq. 4 (2.1);
  "+ residual" adds the rest of 2.2 (eq. 8's self-attention and eq. 9's residual); "+
  multi-query" adds 2.3 and is CSPAN. Rows without multi-query attention pool by the masked
  mean over positions (the paper does not say how; Table 4's single-query row, 92.84, differs
  from "+ residual", 93.03, so it is not single-query attention).
- Table 5 / Figure 2's fusion schemes all end in the multi-query pooling (only the fusion
  changes): (a) ``F = S``, self-attention over the word vectors only, no positional
  information; (b) the same over word vectors plus sinusoidal positions (eqs. 1-2), the
  "light-weight transformer"; (c) the same with Shaw et al. (2018) relative positions inside
  the attention (learned key and value vectors per clipped distance, no projections, as eq. 4);
  (d) the parallel scheme "Bi-LSTM directly on the input word vectors": ``S`` as in eq. 4,
  ``P`` = eq. 8 over a Bi-LSTM of ``D`` (not of ``S``), ``F = S + P``; (e) is CSPAN.

The paper used 300-d GloVe 6B (150 hidden units a direction); offline the presets use GloVe 6B
50-d, so ``d = 50`` and the Bi-LSTM has 25 units a direction. Override
``embeddings="word2vec", embedding_dim=300`` for corpus-trained 300-d vectors.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor, nn

from ..errors import ConfigError
from ..recipe import Recipe
from ..validate import check_choice, check_flag, check_positive_int
from .base import Output, TextModel
from .layers import (
    build_embedding,
    masked_attention,
    masked_mean,
    masked_rnn,
    masked_softmax,
    sinusoidal_encoding,
)
from .registry import Preset, register_model

# Table 5 / Figure 2: (e) cascade = CSPAN, (d) parallel, (a) embedding, (b) sinusoidal, (c) relative.
FUSIONS = ("cascade", "parallel", "embedding", "sinusoidal", "relative")
# Fusions with a Bi-LSTM; the others are one self-attention over the (position-aware) vectors.
RECURRENT_FUSIONS = ("cascade", "parallel")
POOLINGS = ("multi-query", "mean")

# Section 3.2: Adam, lr 1e-3, weight decay 1e-4, batches of 64, 30 epochs, lr divided by 10 at
# epochs 20 and 25. No early stopping in the paper: every epoch runs, the best-on-dev is kept.
CSPAN_RECIPE = Recipe(
    optimizer="adam",
    lr=1e-3,
    weight_decay=1e-4,
    batch_size=64,
    epochs=30,
    schedule={"type": "milestones", "milestones": [20, 25], "gamma": 0.1},
)
# Section 3.1: the big model trains 60 epochs; the milestones keep the base's proportions.
CSPAN_BIG_RECIPE = CSPAN_RECIPE.with_overrides(
    epochs=60, schedule={"type": "milestones", "milestones": [40, 50], "gamma": 0.1}
)
# GloVe 6B is lowercased; the paper names no other preprocessing and no truncation.
_INPUTS = {"shape": "flat", "lowercase": True, "min_freq": 1, "embeddings": "glove-6b-50d", "embedding_dim": 50}
_PAPER = "Jiang, Zhang and Zhang 2020, Cascaded Semantic and Positional Self-Attention Network for Document Classification (Findings of EMNLP)"
_GLOVE = " GloVe 6B 50-d offline (the paper: 300-d), so d = 50"
_LSTM_UNITS = " and 25 Bi-LSTM units a direction (paper: 150)."


def _preset(name: str, description: str, recipe: Recipe = CSPAN_RECIPE, **arch) -> Preset:
    note = _GLOVE + ("." if arch.get("lstm_layers") == 0 else _LSTM_UNITS)
    return Preset(name, "cspan", arch=arch, recipe=recipe, inputs=dict(_INPUTS),
                  description=description + note, paper=_PAPER)


CSPAN_PRESETS = [
    _preset("cspan-base", "CSPAN (base), Table 2: 1-layer Bi-LSTM, 16 queries; also Table 3 '+ multi-query', "
            "Table 4 row (1, 16), Table 5 (e).", lstm_layers=1, queries=16),
    _preset("cspan-big", "CSPAN (big), Table 2: 3-layer Bi-LSTM, 128 queries, 60 epochs (lr / 10 at 40 and 50); "
            "also Table 4 row (3, 128).", recipe=CSPAN_BIG_RECIPE, lstm_layers=3, queries=128),
    # Table 3: component-wise gains on AG News.
    _preset("cspan-ablation-bilstm", "Table 3 'Standard Bi-LSTM': Bi-LSTM over the word vectors, masked mean "
            "pooling.", semantic_attention=False, positional_attention=False, residual=False, pooling="mean"),
    _preset("cspan-ablation-self-att", "Table 3 '+ self-att': eq. 4's self-attention, then the Bi-LSTM, masked "
            "mean pooling.", positional_attention=False, residual=False, pooling="mean"),
    _preset("cspan-ablation-residual", "Table 3 '+ residual': eqs. 4-9 (both self-attentions, residual), masked "
            "mean pooling.", pooling="mean"),
    # Table 3's rows under the Transformer's reading of "followed by layer normalization" (module
    # docstring): LN(x + Att(x)) in eqs. 4 and 8.
    _preset("cspan-ablation-self-att-addnorm", "Table 3 '+ self-att' with eq. 4 read as Add & Norm: "
            "S = LN(D + Att(D)), then the Bi-LSTM, masked mean pooling (an experiment).",
            positional_attention=False, residual=False, pooling="mean", add_and_norm=True),
    _preset("cspan-ablation-residual-addnorm", "Table 3 '+ residual' with eqs. 4 and 8 read as Add & Norm, "
            "masked mean pooling (an experiment).", pooling="mean", add_and_norm=True),
    _preset("cspan-base-addnorm", "CSPAN (base) with eqs. 4 and 8 read as Add & Norm: S = LN(D + Att(D)), "
            "P = LN(H + Att(H)) (an experiment).", lstm_layers=1, queries=16, add_and_norm=True),
    # Table 5 / Figure 2: ways of combining semantic and positional information; (e) is cspan-base.
    _preset("cspan-fusion-embedding", "Table 5 (a) 'Embedding': self-attention over the word vectors, no "
            "positional information, multi-query pooling.", fusion="embedding", lstm_layers=0),
    _preset("cspan-fusion-position", "Table 5 (b) 'Embedding + Position': word vectors plus sinusoidal "
            "positions, self-attention, multi-query pooling (a light-weight transformer).",
            fusion="sinusoidal", lstm_layers=0),
    _preset("cspan-fusion-relative", "Table 5 (c) 'Embedding + Relative-Position': self-attention with Shaw et "
            "al. (2018) relative positions clipped at 16, multi-query pooling.", fusion="relative", lstm_layers=0),
    _preset("cspan-fusion-parallel", "Table 5 (d) 'Embedding + Bi-LSTM': the Bi-LSTM reads the word vectors in "
            "parallel with eq. 4's self-attention; F = S + P, multi-query pooling.", fusion="parallel"),
]
# Table 4: Bi-LSTM layers x queries ((1, 16) is cspan-base, (3, 128) cspan-big). The paper
# states 30 epochs for "all neural networks" (3.2), so the grid keeps the base recipe.
for _layers, _queries in ((1, 1), (1, 8), (2, 8), (2, 16), (2, 32), (3, 32), (3, 64)):
    CSPAN_PRESETS.append(_preset(
        f"cspan-l{_layers}-q{_queries}",
        f"Table 4 model size: {_layers}-layer Bi-LSTM, {_queries} quer{'y' if _queries == 1 else 'ies'}.",
        lstm_layers=_layers, queries=_queries,
    ))


class RelativeSelfAttention(nn.Module):
    """Projection-free self-attention with Shaw et al. (2018) relative position representations.

    ``e_ij = x_i . (x_j + a^K_{r(i,j)}) / sqrt(d)``, ``z_i = sum_j alpha_ij (x_j + a^V_{r(i,j)})``,
    ``r(i, j) = clip(j - i, -k, k)``: Shaw's eqs. 3-4 with the identity for ``W^Q, W^K, W^V``,
    as CSPAN's eq. 4. The ``2k + 1`` key and value vectors are learned. The relative terms are
    computed per distance bucket (``x @ a^K^T`` then a gather; weights summed per bucket then
    ``@ a^V``), so nothing ``[L, L, d]``-sized is built. ``forward(x [B,L,d], mask [B,L]) ->
    (z [B,L,d], weights [B,L,L])``; padded keys get weight 0.

    Generic enough for other papers: it could move to ``layers.py``.
    """

    def __init__(self, dim: int, clip: int):
        super().__init__()
        self.clip = clip
        self.key_positions = nn.Parameter(torch.empty(2 * clip + 1, dim))
        self.value_positions = nn.Parameter(torch.empty(2 * clip + 1, dim))
        # Shaw et al.'s tensor2tensor code draws these with TensorFlow's default Glorot uniform.
        nn.init.xavier_uniform_(self.key_positions)
        nn.init.xavier_uniform_(self.value_positions)

    def buckets(self, length: int, device) -> Tensor:
        """``[L, L]`` index of ``clip(j - i, -k, k) + k`` (row ``i`` = query, column ``j`` = key)."""
        position = torch.arange(length, device=device)
        return (position.unsqueeze(0) - position.unsqueeze(1)).clamp(-self.clip, self.clip) + self.clip

    def forward(self, x: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        batch, length, dim = x.shape
        index = self.buckets(length, x.device).expand(batch, length, length)
        content = torch.matmul(x, x.transpose(1, 2))
        position = torch.matmul(x, self.key_positions.t()).gather(2, index)
        weights = masked_softmax((content + position) * dim**-0.5, mask.bool().unsqueeze(1), dim=-1)
        per_bucket = weights.new_zeros(batch, length, 2 * self.clip + 1).scatter_add_(2, index, weights)
        return torch.matmul(weights, x) + torch.matmul(per_bucket, self.value_positions), weights


@register_model("cspan", presets=CSPAN_PRESETS)
class CSPAN(TextModel):
    """Cascaded semantic and positional self-attention network (module docstring: equations).

    ``embedding_dim`` is ``d``: the word vectors, both self-attentions, the residual, the
    queries and the document vector are all ``d``-wide, and the Bi-LSTM has ``d/2`` units a
    direction (so ``d`` must be even when there is a Bi-LSTM). ``fusion`` picks Table 5's
    scheme; ``semantic_attention``, ``positional_attention``, ``residual`` and ``pooling``
    switch Table 3's components off (the Bi-LSTM fusions only; ``queries`` is unused with
    ``pooling="mean"``). ``relative_clip`` is Shaw et al.'s ``k`` for ``fusion="relative"``.
    ``add_and_norm`` reads each "followed by layer normalization" as ``LN(x + Att(x))`` instead
    of ``LN(Att(x))`` (module docstring).
    """

    def __init__(
        self,
        vocab_size: int,
        num_classes: int,
        embeddings: np.ndarray | None = None,
        *,
        embedding_dim: int = 300,
        lstm_layers: int = 1,
        queries: int = 16,
        fusion: str = "cascade",
        semantic_attention: bool = True,
        positional_attention: bool = True,
        residual: bool = True,
        pooling: str = "multi-query",
        relative_clip: int = 16,
        add_and_norm: bool = False,
    ):
        super().__init__()
        check_positive_int("embedding_dim", embedding_dim, 1 << 16)
        check_positive_int("queries", queries, 1 << 16)
        check_positive_int("relative_clip", relative_clip, 1 << 16)
        check_choice("fusion", fusion, FUSIONS)
        check_choice("pooling", pooling, POOLINGS)
        check_flag("semantic_attention", semantic_attention)
        check_flag("positional_attention", positional_attention)
        check_flag("residual", residual)
        check_flag("add_and_norm", add_and_norm)
        recurrent = fusion in RECURRENT_FUSIONS
        if recurrent:
            check_positive_int("lstm_layers", lstm_layers, 64)
            if embedding_dim % 2:
                raise ConfigError(
                    f"parameter 'embedding_dim' = {embedding_dim} must be even: the Bi-LSTM has d/2 units a "
                    "direction so that eq. 9's S + P adds two d-wide vectors; use an even width"
                )
        else:
            if lstm_layers != 0:
                raise ConfigError(
                    f"parameter 'lstm_layers' = {lstm_layers!r} must be 0 with fusion '{fusion}' (Table 5 (a)-(c) "
                    "have no Bi-LSTM); set lstm_layers=0 or use fusion 'cascade' or 'parallel'"
                )
            if not semantic_attention:
                raise ConfigError(
                    f"parameter 'semantic_attention' = false leaves fusion '{fusion}' with no layer at all; "
                    "keep it true or use fusion 'cascade'"
                )

        self.fusion = fusion
        self.pooling = pooling
        self.add_and_norm = add_and_norm
        self.semantic_attention = semantic_attention
        self.positional_attention = positional_attention and recurrent
        self.residual = residual and recurrent
        self.embedding = build_embedding(vocab_size, embedding_dim, embeddings)
        self.relative = RelativeSelfAttention(embedding_dim, relative_clip) if fusion == "relative" else None
        self.semantic_norm = nn.LayerNorm(embedding_dim) if semantic_attention else None
        if recurrent:
            # Eqs. 5-7: d/2 units a direction, so [h_fwd ; h_bwd] is d-wide (section 2.2).
            self.lstm = nn.LSTM(embedding_dim, embedding_dim // 2, num_layers=lstm_layers,
                                batch_first=True, bidirectional=True)
            self.positional_norm = nn.LayerNorm(embedding_dim) if positional_attention else None
        else:
            self.lstm = self.positional_norm = None
        if pooling == "multi-query":
            self.attention_hidden = nn.Linear(embedding_dim, embedding_dim)  # W_h, b_h (eq. 10)
            self.queries = nn.Parameter(torch.randn(queries, embedding_dim) * embedding_dim**-0.5)  # Q (eq. 11)
            # Eq. 13 writes Concat(...) W_f with no bias term.
            self.fusion_matrix = nn.Linear(queries * embedding_dim, embedding_dim, bias=False)
        else:
            self.attention_hidden = self.queries = self.fusion_matrix = None
        self.output = nn.Linear(embedding_dim, num_classes)  # W_o, b_o (eq. 15)

    def _sublayer(self, inputs: Tensor, attended: Tensor) -> Tensor:
        """What a layer norm of eqs. 4 and 8 normalises: the attention output, or (add_and_norm)
        the attention output plus its input."""
        return inputs + attended if self.add_and_norm else attended

    def forward(self, batch: dict[str, Tensor]) -> Output:
        ids, mask = batch["input_ids"], batch["mask"].bool()
        explicit = self.wants_attention_maps
        attentions: dict[str, Tensor] = {}
        # Padded rows (queries at PAD) are zeroed in the returned maps; their outputs are never
        # read: the Bi-LSTM skips them and the pooling masks them.
        rows = mask.unsqueeze(-1)

        words = self.embedding(ids)  # D
        if self.fusion == "sinusoidal":
            # Eqs. 1-2 added to the word vectors (Table 5 (b)), positions counted from 0.
            words = words + sinusoidal_encoding(ids.size(1), words.size(-1)).to(words)

        if self.relative is not None:
            semantic, weights = self.relative(words, mask)
            semantic = self.semantic_norm(self._sublayer(words, semantic))
        elif self.semantic_attention:
            # Eq. 4: D is query, key and value (no projections); the default scale is 1/sqrt(d).
            semantic, weights = masked_attention(words, words, words, mask, need_weights=explicit)
            # "followed by layer normalization": LN of the attention output itself, no D + Att(D)
            # (add_and_norm: the Transformer's reading, LN(D + Att(D))).
            semantic = self.semantic_norm(self._sublayer(words, semantic))
        else:
            semantic, weights = words, None  # Table 3's Bi-LSTM baseline reads the word vectors
        if weights is not None and explicit:
            attentions["semantic"] = weights * rows

        if self.lstm is None:
            features = semantic  # Table 5 (a)-(c): F = S
        else:
            # (e) cascade: the Bi-LSTM reads S (eqs. 5-6); (d) parallel: it reads D.
            lstm_input = words if self.fusion == "parallel" else semantic
            hidden, _ = masked_rnn(self.lstm, lstm_input, mask)  # H (eq. 7)
            if self.positional_attention:
                positional, weights = masked_attention(hidden, hidden, hidden, mask, need_weights=explicit)
                positional = self.positional_norm(self._sublayer(hidden, positional))  # P (eq. 8 and its LN)
                if weights is not None:
                    attentions["positional"] = weights * rows
            else:
                positional = hidden
            features = semantic + positional if self.residual else positional  # eq. 9

        if self.pooling == "mean":
            document = masked_mean(features, mask, dim=1)
        else:
            hidden_features = torch.tanh(self.attention_hidden(features))  # u_t (eq. 10)
            scores = torch.matmul(self.queries, hidden_features.transpose(1, 2))  # u_t . Q_i, [B, m, L]
            weights = masked_softmax(scores, mask.unsqueeze(1), dim=-1)  # alpha (eq. 11), over t
            pooled = torch.matmul(weights, features)  # F_i (eq. 12), [B, m, d]
            document = self.fusion_matrix(pooled.flatten(1))  # Concat(F_1..F_m) W_f (eq. 13)
            if explicit:
                attentions["queries"] = weights
        return Output(logits=self.output(document), attentions=attentions)
