"""Oh and Kim (2020), "Lightweight Text Classifier using Sinusoidal Positional Encoding"
(AACL-IJCNLP): SingleCNN-SPE.

Section 2, in order:

- eq. 1-2, the sinusoidal positional encoding of Vaswani et al. (2017),
  ``PE(pos, 2i) = sin(pos / 10000^(2i/dim))``, ``PE(pos, 2i+1) = cos(pos / 10000^(2i/dim))``
  (``layers.sinusoidal_encoding``);
- eq. 3, ``x~_t = x_t + p_t``: the position vector is added to the frozen pretrained word
  vector ("fine-tuning for word vectors is not considered in training");
- eq. 4-5, one convolution, window ``j = 3``, 128 filters, stride 1, *linear* activation
  (section 3.2): ``c_i = w . x~_{i:i+j-1} + b``, ``c = [c_1, ..., c_{n-j+1}]``;
- section 2.3 / eq. 6-7, layer normalisation of the feature map (epsilon 1e-6, section 3.2);
- max-pooling ``c^ = max(c)`` and average-pooling ``c~ = avg(c)``, concatenated into
  ``z = [c^_1..c^_m, c~_1..c~_m]``; dropout 0.1 on ``z``; a softmax (linear) layer.

Parameters, with ``k``-d vectors, ``C`` classes and the paper's shapes:
``3*k*128 + 128`` (convolution) ``+ 2*128`` (layer norm gain and bias) ``+ 2*128*C + C``
(softmax layer); with ``k = 300`` this is Table 2's 116K (2 classes) to 121K (20 classes).

Presets (section 3.2's recipe: Adam, lr 1e-4, L2 1e-4, batches of 40, early stopping on a
10 % validation split):

- ``spe-cnn``: the proposed model, frozen vectors + SPE (Table 3, "SingleCNN-SPE").
- ``single-cnn-static`` / ``single-cnn-nonstatic``: no SPE, vectors frozen / fine-tuned
  (Table 3, section 3.3's "SingleCNN-static / -nonstatic").
- ``single-cnn-bow`` / ``spe-cnn-bow``: Table 4, "simple bag-of-words" word vectors, without
  and with SPE (read as one-hot word vectors, see below).
- ``spe-cnn-pe-scaled``: not in the paper. ``spe-cnn`` with the encoding multiplied by
  ``position_scale = 0.1`` before eq. 3. With the offline 50-d vectors the unscaled encoding
  (norm ``sqrt(50/2) = 5.0``, every dimension within +-1) is larger than the GloVe vectors it
  is added to (mean norm 4.36); the convolution is linear, so ``w . (x + p) = w . x + w . p``
  and max-pooling picks the windows where ``w . p`` peaks rather than those with the telling
  words. Scaled by 0.1 it took an IMDB slice from 70.7 to 80.4 and a 20news slice from 41.5
  to 54.0 % (docs/models/spe_cnn.md has the numbers, and what can be said of the paper's
  300-d setting).

Readings of the ambiguous passages (each is also commented at its line):

- Eq. 1-2 are typeset ``10000^{2i}/dim``; read as Vaswani's ``10000^(2i/dim)`` (the literal
  form would make every dimension but the first two constant). Positions count from 0 at
  each document's first token, so batch padding never shifts them.
- Layer normalisation "applied independently to each feature map": at each window position,
  over the 128 filters (Keras' ``LayerNormalization()`` on a ``[batch, steps, filters]``
  map), with a gain and a bias per filter; this gives the paper's parameter counts.
- The convolution is "valid" (eq. 5 has ``n - j + 1`` features). A document shorter than the
  window is read as padded with zero vectors up to it, and windows that would run past a
  document's last token are left out of both pools, as in ``kim_cnn``: padding never enters
  the max, the average, nor an edge window, and positions are added to real tokens only.
- "L2 regulariser 0.0001": TensorFlow's ``l2_regularizer(scale)`` adds
  ``scale * ||w||^2 / 2``, whose gradient is ``scale * w``: the engine's Adam
  ``weight_decay=1e-4``. (Keras' ``l2(1e-4)`` would be ``weight_decay=2e-4``.)
- "We use only early stops": no epoch count is given. Presets run at most 100 epochs and stop
  after 5 without a lower dev loss (Keras' ``EarlyStopping`` watches the validation loss).
- Table 4's "word vectors represented based on simple bag-of-words", contrasted with
  distributed representations: one-hot word vectors (``|V|``-dimensional, fixed), so SPE is
  ``|V|``-dimensional too. A convolution over one-hot vectors is a lookup of its weights,
  computed as such (an ``[|V|, 3*128]`` table) instead of materialising ``[B, L, |V|]``.

``kim_row_length=R`` (off in every preset; a diagnostic of the gaps to Table 3) reads a document
as a row of Kim's data code, which the paper's data went through: its Table 1 vocabularies of
MR and MPQA (18,764 and 6,246) are those of Kim's ``clean_str`` (``charset="kim"``: 18,765 and
6,246; tests/test_text.py). Kim's ``make_idx_data_cv`` turns a sentence into 4 zero vectors,
its words, and zero vectors up to ``R = max_l + 8`` (``max_l`` the corpus's longest sentence).
Read as a model fed those rows would read them, the positions ``p_t`` of eq. 3 are added over
the whole row (``t = 0 .. R - 1``, the zeros included), eq. 5's windows are all ``R - j + 1``
windows of the row, and both pools run over all of them: the average then depends on the
document's length, and the border windows hold partial words. Every document has the same
row, so batch padding still changes nothing; one longer than ``R - 8`` tokens is refused
(``max_length = R - 8`` truncates it first). Not for the one-hot mode. Measured with Kim's
tokens (spe_cnn_full's spe-cnn-kim-rows, 5 seeds, paired t): +2.10 on mr (p 0.050), +1.41 on
mpqa (p 0.003), +1.12 on trec (p 0.096); with Kim's vocabulary too, +2.25 to +2.60 on all three
(REPRODUCTION.md's last section). The presets keep eq. 5 as written.

Offline we have GloVe 6B 50-d, not the paper's GloVe 840B 300-d: the pretrained presets use
``embeddings="glove-6b-50d"``, ``embedding_dim=50``. Override ``embeddings="word2vec",
embedding_dim=300`` for corpus-trained 300-d vectors.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..errors import ConfigError, DataError
from ..recipe import Recipe
from ..validate import check_choice, check_flag, check_positive_int, check_probability, range_check
from .base import Output, TextModel
from .layers import (
    DerivedTable,
    build_embedding,
    lookup_table_usable,
    masked_max,
    masked_mean,
    shifted_window_sum,
    sinusoidal_encoding,
    window_lookup_sum,
)
from .registry import Preset, register_model

EMBEDDING_MODES = ("static", "nonstatic", "one-hot")
# Kim's make_idx_data_cv pads with filter_h - 1 zeros, filter_h = 5 by default (kim_row_length).
KIM_ROW_BORDER = 4
# The inference table (see SpeCNN.fast_predict) is vocab x window x filters floats: 1.5 KiB a
# word at the paper's 3 x 128, 25.6 MB for MR's 16,661 words (layers.FAST_TABLE_BYTES caps it).
# Only used when no pretrained matrix is given (weights about to come from a checkpoint):
# Kim's range for vectors without a pretrained entry.
RANDOM_VECTOR_RANGE = 0.25

# Section 3.2. Adam with lr 1e-4; weight decay 1e-4 is TF's l2_regularizer(1e-4) (see the
# module docstring); mini-batches of 40; early stopping on a 10 % dev split (dev_fraction).
SPE_RECIPE = Recipe(
    optimizer="adam",
    lr=1e-4,
    weight_decay=1e-4,
    batch_size=40,
    # "We use only early stops": no epoch count or patience is given. Keras' EarlyStopping
    # watches the validation loss; 5 epochs of patience within at most 100 is our choice.
    epochs=100,
    patience=5,
    monitor="loss",
    dev_fraction=0.1,
)
_INPUTS = {"shape": "flat", "lowercase": True, "min_freq": 1}
_GLOVE = {**_INPUTS, "embeddings": "glove-6b-50d", "embedding_dim": 50}
# One-hot vectors are vocab_size wide; embedding_dim is not used by the one-hot mode.
_ONE_HOT = {**_INPUTS, "embeddings": None, "embedding_dim": 1}
_PAPER = "Oh and Kim 2020, Lightweight Text Classifier using Sinusoidal Positional Encoding (AACL-IJCNLP)"
_GLOVE_NOTE = " GloVe 6B 50-d offline (the paper: GloVe 840B 300-d)."

SPE_CNN_PRESETS = [
    Preset(
        "spe-cnn",
        "spe-cnn",
        arch={"embedding_mode": "static", "position_encoding": True},
        recipe=SPE_RECIPE,
        inputs=_GLOVE,
        description="SingleCNN-SPE (Table 3): frozen vectors + sinusoidal positions, one linear conv "
        "(3 x 128), layer norm, max+avg pooling." + _GLOVE_NOTE,
        paper=_PAPER,
    ),
    # Not in the paper: spe-cnn with the encoding scaled by 0.1. At 50-d the unscaled encoding
    # (norm 5.0, 36 of 50 dimensions swinging by more than 0.5 over 500 positions) outweighs
    # the GloVe vectors (mean norm 4.36), and the linear convolution then max-pools on position
    # rather than content; x 0.1 took an IMDB slice from 70.7 to 80.4 % and a 20news slice from
    # 41.5 to 54.0 % (docs/models/spe_cnn.md, "Scaled positions").
    Preset(
        "spe-cnn-pe-scaled",
        "spe-cnn",
        arch={"embedding_mode": "static", "position_encoding": True, "position_scale": 0.1},
        recipe=SPE_RECIPE,
        inputs=_GLOVE,
        description="SingleCNN-SPE with the sinusoidal encoding scaled by 0.1 (not in the paper: at 50-d "
        "the unscaled encoding outweighs the word vectors)." + _GLOVE_NOTE,
        paper=_PAPER,
    ),
    Preset(
        "single-cnn-static",
        "spe-cnn",
        arch={"embedding_mode": "static", "position_encoding": False},
        recipe=SPE_RECIPE,
        inputs=_GLOVE,
        description="SingleCNN-static (Table 3): SingleCNN-SPE without SPE, frozen vectors." + _GLOVE_NOTE,
        paper=_PAPER,
    ),
    Preset(
        "single-cnn-nonstatic",
        "spe-cnn",
        arch={"embedding_mode": "nonstatic", "position_encoding": False},
        recipe=SPE_RECIPE,
        inputs=_GLOVE,
        description="SingleCNN-nonstatic (Table 3): SingleCNN-SPE without SPE, vectors fine-tuned." + _GLOVE_NOTE,
        paper=_PAPER,
    ),
    Preset(
        "single-cnn-bow",
        "spe-cnn",
        arch={"embedding_mode": "one-hot", "position_encoding": False},
        recipe=SPE_RECIPE,
        inputs=_ONE_HOT,
        description="SingleCNN-static on bag-of-words (one-hot) word vectors, no SPE (Table 4).",
        paper=_PAPER,
    ),
    Preset(
        "spe-cnn-bow",
        "spe-cnn",
        arch={"embedding_mode": "one-hot", "position_encoding": True},
        recipe=SPE_RECIPE,
        inputs=_ONE_HOT,
        description="SingleCNN-SPE on bag-of-words (one-hot) word vectors, |V|-d SPE (Table 4).",
        paper=_PAPER,
    ),
]


@register_model("spe-cnn", presets=SPE_CNN_PRESETS)
class SpeCNN(TextModel):
    """SingleCNN with optional sinusoidal positional encoding (see the module docstring).

    Args:
        vocab_size: vocabulary size ``V`` (row 0 is ``[PAD]``).
        num_classes: number of classes ``C``.
        embeddings: pretrained ``[V, embedding_dim]`` matrix (``static`` / ``nonstatic``).
        embedding_dim: word-vector width ``k``; unused in ``one-hot`` mode (the width is ``V``).
        embedding_mode: ``static`` (frozen), ``nonstatic`` (fine-tuned) or ``one-hot``.
        position_encoding: add the sinusoidal encoding to the word vectors (eq. 3).
        window: convolution width ``j`` (3).
        filters: number of filters ``m`` (128).
        layer_norm_eps: layer-normalisation epsilon (1e-6).
        dropout: dropout rate on the pooled features (0.1).
        position_scale: factor on the sinusoidal encoding before it is added (1.0: eq. 3 as
            written; ``spe-cnn-pe-scaled`` uses 0.1, see the module docstring).
    """

    def __init__(
        self,
        vocab_size: int,
        num_classes: int,
        embeddings: np.ndarray | None = None,
        *,
        embedding_dim: int = 300,
        embedding_mode: str = "static",
        position_encoding: bool = True,
        window: int = 3,
        filters: int = 128,
        layer_norm_eps: float = 1e-6,
        dropout: float = 0.1,
        position_scale: float = 1.0,
        kim_row_length: int | None = None,
    ):
        super().__init__()
        check_choice("embedding_mode", embedding_mode, EMBEDDING_MODES)
        check_flag("position_encoding", position_encoding)
        check_positive_int("vocab_size", vocab_size)
        check_positive_int("embedding_dim", embedding_dim, 1 << 16)
        check_positive_int("window", window, 64)
        check_positive_int("filters", filters, 1 << 16)
        range_check("layer_norm_eps", layer_norm_eps, 0.0, 1.0, low_open=True)
        check_probability("dropout", dropout)
        range_check("position_scale", position_scale, 0.0, 100.0)
        if kim_row_length is not None:
            check_positive_int("kim_row_length", kim_row_length, 1 << 20)
            if kim_row_length < 2 * KIM_ROW_BORDER + 1:
                raise ConfigError(f"parameter 'kim_row_length' = {kim_row_length} leaves no room for a word "
                                  f"between Kim's two borders of {KIM_ROW_BORDER} zeros; use at least "
                                  f"{2 * KIM_ROW_BORDER + 1}")
            if embedding_mode == "one-hot":
                raise ConfigError("parameter 'kim_row_length' is not for embedding_mode 'one-hot'; "
                                  "use 'static' or 'nonstatic', or drop kim_row_length")
        self.kim_row_length = kim_row_length

        self.embedding_mode = embedding_mode
        self.position_encoding = position_encoding
        self.position_scale = float(position_scale)
        self.window = int(window)
        self.filters = int(filters)
        if embedding_mode == "one-hot":
            if embeddings is not None:
                raise ConfigError(
                    "parameter 'embedding_mode' = 'one-hot' takes no pretrained matrix; use 'static' or "
                    "'nonstatic', or override embeddings=None"
                )
            # Row v holds the convolution weights that meet word v at each of the `window`
            # offsets: [W_0[:, v], ..., W_{j-1}[:, v]], i.e. Conv1d(V, filters, window) stored
            # by input channel. Row 0 ([PAD]) stays zero: padding is the zero vector, not e_0.
            self.conv_table = nn.Embedding(vocab_size, self.window * self.filters, padding_idx=0)
            self.conv_bias = nn.Parameter(torch.empty(self.filters))
            bound = 1.0 / math.sqrt(vocab_size * self.window)  # nn.Conv1d's default init
            with torch.no_grad():
                nn.init.uniform_(self.conv_table.weight, -bound, bound)
                nn.init.uniform_(self.conv_bias, -bound, bound)
                self.conv_table.weight[0].zero_()
            self.input_dim = vocab_size
        else:
            self.embedding = build_embedding(
                vocab_size,
                embedding_dim,
                embeddings,
                freeze=embedding_mode == "static",
                uniform_range=RANDOM_VECTOR_RANGE,
            )
            # Eq. 4 with f = identity: section 3.2 uses a linear activation, not ReLU or tanh.
            self.conv = nn.Conv1d(embedding_dim, self.filters, self.window)
            self.input_dim = embedding_dim
        # Section 2.3: per window position, over the filters (see the module docstring).
        self.norm = nn.LayerNorm(self.filters, eps=layer_norm_eps)
        self.dropout = nn.Dropout(dropout)
        self.output = nn.Linear(2 * self.filters, num_classes)
        # The encoding table is derived data grown on demand: a plain cache, not a buffer, so
        # it is never saved in checkpoints nor broadcast by DDP (ranks grow it differently).
        self._position_cache: Tensor | None = None
        # Inference over word vectors as a lookup (``_table_feature_map``); False: always convolve.
        self.fast_predict = True
        self._table = DerivedTable()

    def positions(self, length: int, device: torch.device | None = None) -> Tensor:
        """The first ``length`` rows of the sinusoidal table (eq. 1-2) times ``position_scale``,
        ``[length, input_dim]``: the ``p_t`` that eq. 3 adds."""
        cache = self._position_cache
        if cache is None or cache.size(0) < length or (device is not None and cache.device != device):
            # Grown geometrically so that ever longer batches rebuild it rarely. Built outside
            # inference mode so that a table made during predict can still serve training.
            rows = max(length, 2 * cache.size(0) if cache is not None else 0, 64)
            with torch.inference_mode(False):
                cache = sinusoidal_encoding(rows, self.input_dim).to(device or "cpu")
            self._position_cache = cache
        if self.position_scale != 1.0:
            return cache[:length] * self.position_scale
        return cache[:length]

    def forward(self, batch: dict[str, Tensor]) -> Output:
        ids, mask = batch["input_ids"], batch["mask"].bool()
        if self.kim_row_length is not None:
            return self._kim_row_forward(ids, mask)
        if self.embedding_mode == "one-hot":
            feature_map = self._one_hot_feature_map(ids, mask)
        elif self._uses_table():
            feature_map = self._table_feature_map(ids, mask)
        else:
            feature_map = self._dense_feature_map(ids, mask)
        feature_map = self.norm(feature_map)  # [B, L - j + 1, filters]
        lengths = mask.sum(dim=1)
        starts = torch.arange(feature_map.size(1), device=ids.device)
        # A window counts only if it holds no position past the document's end; a document
        # shorter than the window keeps its first window (its words then zero vectors).
        valid = starts.unsqueeze(0) < (lengths - self.window + 1).clamp_min(1).unsqueeze(1)
        pooled = torch.cat([masked_max(feature_map, valid, dim=1), masked_mean(feature_map, valid, dim=1)], dim=-1)
        return Output(logits=self.output(self.dropout(pooled)))

    def _kim_row_forward(self, ids: Tensor, mask: Tensor) -> Output:
        """Eq. 3-7 over Kim's zero-padded rows (``kim_row_length``, module docstring)."""
        row, longest = self.kim_row_length, int(mask.sum(dim=1).max())
        if longest > row - 2 * KIM_ROW_BORDER:
            raise DataError(f"a document of {longest} tokens does not fit kim_row_length = {row} (Kim's rows hold "
                            f"at most {row - 2 * KIM_ROW_BORDER} words); set max_length = {row - 2 * KIM_ROW_BORDER}")
        words = self.embedding(ids[:, :longest]) * mask[:, :longest].unsqueeze(-1).to(self.embedding.weight.dtype)
        words = F.pad(words, (0, 0, KIM_ROW_BORDER, row - KIM_ROW_BORDER - longest))
        if self.position_encoding:
            words = words + self.positions(row, words.device).to(words.dtype)
        feature_map = self.norm(self.conv(words.transpose(1, 2)).transpose(1, 2))  # [B, R - j + 1, filters]
        pooled = torch.cat([feature_map.amax(dim=1), feature_map.mean(dim=1)], dim=-1)
        return Output(logits=self.output(self.dropout(pooled)))

    def _dense_feature_map(self, ids: Tensor, mask: Tensor) -> Tensor:
        words = self.embedding(ids)
        if self.position_encoding:
            words = words + self.positions(ids.size(1), words.device).to(words.dtype)  # eq. 3
        # Padding (and a fine-tuned PAD row that drifted) becomes the zero vector after the
        # positions are added, so a padded batch equals each document run alone.
        words = words * mask.unsqueeze(-1).to(words.dtype)
        if words.size(1) < self.window:
            words = F.pad(words, (0, 0, 0, self.window - words.size(1)))
        return self.conv(words.transpose(1, 2)).transpose(1, 2)

    def _one_hot_feature_map(self, ids: Tensor, mask: Tensor) -> Tensor:
        # W . onehot(v) is row v of the table; W . (onehot(v) + p_t) adds p_t @ table (eq. 3).
        contributions = self.conv_table(ids)  # [B, L, window * filters]
        if self.position_encoding:
            table = self.conv_table.weight
            contributions = contributions + self.positions(ids.size(1), table.device).to(table.dtype) @ table
        contributions = contributions * mask.unsqueeze(-1).to(contributions.dtype)
        if contributions.size(1) < self.window:
            contributions = F.pad(contributions, (0, 0, 0, self.window - contributions.size(1)))
        # c_i = b + sum_k W_k x_{i+k}: one shifted slice per offset k (window of 3), not per step.
        return self.conv_bias + shifted_window_sum(contributions, self.window, self.filters)

    # ------------------------------------------------------------------ inference lookup
    #
    # The convolution is linear in its inputs (eq. 4-5, linear activation): with word vectors
    # E and offset weights W_k, c_i = b + sum_k W_k (E[x_{i+k}] + p_{i+k}) = b + sum_k
    # (E W_k^T)[x_{i+k}] + (p W_k^T)_{i+k}. In inference both products are tables computed
    # once (rebuilt when a weight changes), and a window is a sum of gathered rows, as in the
    # one-hot mode. Layer norm, pooling and the output layer are the same code as in training.

    def train(self, mode: bool = True):
        # Optimisers update weights in place without always bumping the version counters the
        # table is keyed on (Adam's foreach kernels), so any switch to training drops it.
        if mode:
            self._table.clear()
        return super().train(mode)

    def _uses_table(self) -> bool:
        return lookup_table_usable(self, self.embedding, self.window * self.filters)

    def _offset_weights(self) -> Tensor:
        # Conv1d's [filters, d, window] as [d, window * filters], offset-major like conv_table.
        return self.conv.weight.permute(1, 2, 0).reshape(self.input_dim, self.window * self.filters)

    def _build_table(self) -> Tensor:
        """Rows ``k * V + v``: ``W_k E[v]`` (row ``k * V`` is [PAD], zero as padding is). With
        SPE, then row ``window * V + i``: ``b + sum_k W_k p_{i+k}`` for each start ``i`` of a
        window within the document; then row ``window * V + starts + n``: the same for the first
        window of a document of ``n < window`` tokens, positions only on its real tokens."""
        vocab = self.embedding.num_embeddings
        per_word = (self.embedding.weight @ self._offset_weights()).view(vocab, self.window, self.filters)
        per_word[0] = 0
        rows = [per_word.transpose(0, 1).reshape(self.window * vocab, self.filters)]
        if self.position_encoding:
            cache = self._position_cache
            per_offset = (cache * self.position_scale).to(rows[0].dtype) @ self._offset_weights()
            rows.append(self.conv.bias + shifted_window_sum(per_offset.unsqueeze(0), self.window, self.filters)[0])
            blocks = per_offset[: self.window].view(self.window, self.window, self.filters)  # [position, offset, :]
            rows += [self.conv.bias + sum((blocks[k, k] for k in range(n)), torch.zeros_like(self.conv.bias))
                     .unsqueeze(0) for n in range(self.window)]
        return torch.cat(rows)

    def _table_feature_map(self, ids: Tensor, mask: Tensor) -> Tensor:
        ids = ids.masked_fill(~mask, 0)
        if ids.size(1) < self.window:
            ids = F.pad(ids, (0, self.window - ids.size(1)))
        vocab = self.embedding.num_embeddings
        if not self.position_encoding:
            table = self._table.get(self._build_table, self.embedding.weight, self.conv.weight)
            return window_lookup_sum(ids, table, self.window, vocab) + self.conv.bias
        self.positions(ids.size(1) + self.window, ids.device)  # grows the encoding cache if needed
        cache = self._position_cache
        table = self._table.get(self._build_table, self.embedding.weight, self.conv.weight, self.conv.bias, cache)
        steps, starts = ids.size(1) - self.window + 1, cache.size(0) - self.window + 1
        position_rows = torch.arange(self.window * vocab, self.window * vocab + steps, device=ids.device)
        position_rows = position_rows.expand(ids.size(0), steps).clone()
        lengths = mask.sum(dim=1)
        short = lengths < self.window
        position_rows[:, 0] = torch.where(short, self.window * vocab + starts + lengths, position_rows[:, 0])
        return window_lookup_sum(ids, table, self.window, vocab, position_rows)
