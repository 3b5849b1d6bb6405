"""Forward passes in NumPy for the models that predict without torch.

``textcls predict RUN TEXT`` spends more time starting than predicting: importing torch alone
takes about 1.4 s. The models below are table lookups, sums and small matrix products, all
of which NumPy has, so their fp32 runs predict through these classes and never import torch
(``predictor.py`` picks them by family, through ``build_forward``; ARCHITECTURE.md,
"Decisions", gives the measurements). ``tests/test_predict_path.py`` and
``tests/test_numpy_cnn.py`` hold each equal to its torch model within ``tests/tolerance.KERNEL``.

- ``FastTextBagForward`` (``models/fasttext_bag.py``): float32 sums of the rows of each
  document's real ids (no padding), divided by their count, times the output matrix.
- ``KimCNNForward`` (``models/kim_cnn.py``, Kim 2014 eq. 2-5) and ``SpeCNNForward``
  (``models/spe_cnn.py``, Oh and Kim 2020 eq. 3-7): a 1-D convolution over word vectors is
  linear in them, ``w . x_{i:i+h-1} = sum_k W_k x_{i+k}``, so ``P_k = E W_k^T`` is computed once
  at load for every vocabulary row and offset ``k`` and a window is a sum of gathered rows, with
  no matrix product per token (and SPE's ``p_t`` term, eq. 3, a second table over positions).
  Every non-linearity comes after that sum: Kim's ReLU (after the max, as ``relu`` and ``+ b``
  are monotone), SPE's layer norm and pooling. A run whose tables would exceed
  ``TABLE_CAP_BYTES`` predicts through torch instead (``build_forward`` returns None).
"""

from __future__ import annotations

import numpy as np

from .data.padding import pad_flat
from .errors import CheckpointError

__all__ = ["FastTextBagForward", "KimCNNForward", "SpeCNNForward", "FORWARDS", "TABLE_CAP_BYTES",
           "build_forward", "probabilities"]


def _segment_sums(table_t: np.ndarray, ids: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``[N, K]``: the sum of the columns ``ids`` of ``table_t`` (``[K, rows]``) over each
    document (documents one after another in ``ids``, ``lengths`` each; none: zero). One
    ``bincount`` per output column, summing in float64: about 10x faster than
    ``np.add.reduceat`` over gathered rows."""
    owner = np.repeat(np.arange(len(lengths)), lengths)
    gathered = table_t[:, ids]
    return np.stack([np.bincount(owner, weights=column, minlength=len(lengths)) for column in gathered], axis=1)


class FastTextBagForward:
    """fasttext-bag's forward pass from its state-dict arrays (``words.weight``,
    ``bigrams.weight`` when it has bigrams, ``output.weight``).

    The model is linear up to the softmax: ``mean(rows) @ W.T == mean(rows @ W.T)``. With no
    more classes than dimensions the tables are multiplied by the output matrix once, at load
    (``[classes, rows]``), so a token costs ``classes`` numbers, not ``dim``; otherwise the
    tables are kept as they are (transposed, ``[dim, rows]``) and the mean is multiplied."""

    def __init__(self, arrays: dict[str, np.ndarray], arch: dict | None = None):
        try:
            words, output = arrays["words.weight"], arrays["output.weight"]
        except KeyError as exc:
            raise CheckpointError(f"the fasttext-bag weights lack array {exc}; retrain or restore the run") from None
        bigrams = arrays.get("bigrams.weight")
        self.vocab_size, self.num_classes = words.shape[0], output.shape[0]
        self.has_bigrams = bigrams is not None
        self.output = np.asarray(output, dtype=np.float32)
        self.projected = self.num_classes <= words.shape[1]
        tables = [words] + ([bigrams] if bigrams is not None else [])
        if self.projected:
            self.tables = [np.ascontiguousarray(self.output @ np.asarray(t, dtype=np.float32).T) for t in tables]
        else:
            self.tables = [np.ascontiguousarray(np.asarray(t, dtype=np.float32).T) for t in tables]

    def logits(self, flat) -> np.ndarray:
        """``[N, C]`` float32 logits of a ``text.pipeline.FlatIds``."""
        total = _segment_sums(self.tables[0], flat.ids, flat.lengths)
        count = flat.lengths.copy()
        if self.has_bigrams:
            if flat.bigrams is None:
                raise CheckpointError("this fasttext-bag model has bigram vectors but its pipeline makes no "
                                      "bigrams (bigram_buckets = 0); the run's config.json does not match its weights")
            total += _segment_sums(self.tables[1], flat.bigrams, flat.bigram_lengths)
            count += flat.bigram_lengths
        mean = (total / np.maximum(count, 1)[:, None]).astype(np.float32)
        return mean if self.projected else mean @ self.output.T


def probabilities(logits: np.ndarray, multi_label: bool) -> np.ndarray:
    """Softmax over classes (per-class sigmoid for multi-label), float32."""
    logits = logits.astype(np.float32, copy=False)
    if multi_label:
        with np.errstate(over="ignore"):  # exp(1000) is inf, and 1 / (1 + inf) the right 0
            return (1.0 / (1.0 + np.exp(-logits))).astype(np.float32)
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    return (shifted / shifted.sum(axis=1, keepdims=True)).astype(np.float32)


# --------------------------------------------------------------------------- CNNs over word vectors

# The largest inference table built (vocabulary x window offsets x filters, float32): Kim's
# 3+4+5 x 100 is 4.7 KiB a word, 80 MB for MR's 16,661 words; SPE's 3 x 128 is 1.5 KiB a word.
# 256 MiB is about 56,000 words for Kim's CNN and 175,000 for SPE's; a larger vocabulary
# predicts through torch (whose own table stops at models.layers.FAST_TABLE_BYTES, 512 MiB).
TABLE_CAP_BYTES = 256 << 20
# Padded tokens (documents x longest) per sub-batch: a gathered [tokens, filters] block (800 KB
# at Kim's 100 maps) then stays within a 2 MiB L2 cache for the sums that follow. On MR, 1,536
# to 3,072 were within 6 % of each other, 768 and 1,024 up to 8 % slower (more sub-batches).
BATCH_TOKENS = 2048
# Kim's CNN gathers 12 rows a token (SPE: 3), so its blocks fill the L2 cache sooner: on MR,
# 512 to 1,536 padded tokens a sub-batch were within 3 % of each other (10.6 to 10.8 us a
# document), 2,048 9 % slower.
KIM_BATCH_TOKENS = 1024


def _length_batches(lengths: np.ndarray, tokens: int = BATCH_TOKENS) -> list[np.ndarray]:
    """Document positions sorted by length (stable), cut into runs of about ``tokens`` padded
    tokens each (at least one document), so that a run pads little. One loop step per run."""
    order = np.argsort(lengths, kind="stable")
    sorted_lengths = np.maximum(lengths[order], 1)
    batches, start = [], 0
    while start < len(order):
        guess = min(len(order), start + max(1, tokens // int(sorted_lengths[start]))) - 1
        end = min(len(order), start + max(1, tokens // int(sorted_lengths[guess])))
        batches.append(order[start:end])
        start = end
    return batches


def _padded_ids(flat, offsets: np.ndarray, rows: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(``[B, width]`` ids of documents ``rows`` of ``flat`` (a ``FlatIds``; ``offsets``: where each
    document begins in ``flat.ids``) padded with id 0, whose table rows are zero: padding as zero
    vectors; their lengths)."""
    ids, _ = pad_flat(flat.ids, flat.lengths, offsets, rows, width=width)
    return ids, flat.lengths[rows]


def _past_end(lengths: np.ndarray, steps: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, starts) of the windows of ``width`` that run past their document's end, among
    ``steps`` starts: ``i >= max(n - width + 1, 1)``. A document shorter than the window keeps
    its first window (its missing words zero vectors), as the torch models do."""
    first = np.maximum(lengths - width + 1, 1)
    count = np.maximum(steps - first, 0)
    rows = np.repeat(np.arange(len(lengths)), count)
    return rows, np.arange(len(rows)) + np.repeat(first - (np.cumsum(count) - count), count)


def _offset_array(vectors: np.ndarray | None, weights: list[np.ndarray], end: float | None = None) -> np.ndarray:
    """``[vocab, offsets, filters]``: ``E W_k^T`` for each offset ``k`` (``weights[k]``:
    ``[input_dim, filters]``), float32, row 0 ([PAD]) zero; without ``vectors`` (one-hot words),
    the weights themselves. A word's rows for every offset lie together: Kim's forward pass
    took 12 % less time on MR than with one array per offset. ``end``: one more row, id
    ``vocab``, of that value (see ``KimCNNForward.logits``)."""
    first = weights[0] if vectors is None else vectors @ weights[0]
    vocab = first.shape[0]
    tables = np.empty((vocab + (end is not None), len(weights), first.shape[1]), dtype=np.float32)
    for k, weight in enumerate(weights):
        tables[:vocab, k] = weight if vectors is None else vectors @ weight
    tables[0] = 0
    if end is not None:
        tables[vocab] = end
    return tables


def _offset_tables(vectors: np.ndarray | None, weights: list[np.ndarray]) -> list[np.ndarray]:
    """``_offset_array``'s tables, one view per offset."""
    tables = _offset_array(vectors, weights)
    return [tables[:, k] for k in range(len(weights))]


def _window_sums(tables: list[np.ndarray], ids: np.ndarray, steps: int) -> np.ndarray:
    """``S[b, i] = sum_k tables[k][ids[b, i + k]]``, ``[B, steps, filters]``: the convolution
    over ``ids``, one gathered row per token and offset, added in place. (Faster than one
    gather of every offset's row at once then a sum over offsets, or a sparse matrix product.)"""
    total = tables[0][ids[:, :steps]]
    for k in range(1, len(tables)):
        total += tables[k][ids[:, k:k + steps]]
    return total


def _check_arrays(arrays: dict[str, np.ndarray], names: list[str], family: str) -> None:
    missing = [name for name in names if name not in arrays]
    if missing:
        raise CheckpointError(f"the {family} weights lack array {missing[0]!r}; retrain or restore the run")


# The diagnostic switches that read data as Kim's released code does (models/kim_cnn.py,
# models/spe_cnn.py): the tables here read the equations' windows only, and export.py's trace
# would freeze their batch-dependent padding.
KIM_CODE_SWITCHES = ("pad_borders", "kim_row_length")


def reads_as_kims_code(arch: dict) -> str | None:
    """The first of ``KIM_CODE_SWITCHES`` that ``arch`` turns on, or None."""
    return next((key for key in KIM_CODE_SWITCHES if arch.get(key) not in (None, False)), None)


class KimCNNForward:
    """Kim's CNN (``models/kim_cnn.py``) from its state-dict arrays, any embedding mode.

    Eq. 2 before ``f``: ``w . x_{i:i+h-1} = sum_k W_k x_{i+k}``, so every window width ``h``
    and offset ``k`` is a table ``E W_k^T`` (``[vocab, feature maps]``; the two channels'
    vectors added for multichannel, as the model adds them) and a window is ``h`` gathered
    rows added. Windows that run past a document's end are left out of the max-over-time
    pooling of the feature map (eq. 3); ``relu(max_i c_i + b)`` equals ``max_i relu(c_i + b)``,
    as ReLU and ``+ b`` are monotone; the softmax layer (eq. 4-5) is a matrix product, dropout
    off.

    All tables are one ``[vocab + 1, sum of widths, maps]`` array, read as rows of ``maps``:
    word ``v``'s row for width ``j`` and offset ``k`` is ``R v + first_j + k`` (``R`` rows a
    word), so the ids are multiplied by ``R`` once and each (width, offset) gathers from a view
    that starts at row ``first_j + k``: ``np.take`` needs a contiguous table (it copies any
    other) and takes about 0.7x the time of fancy indexing a row, and one word's rows lie
    together (see ``_offset_array``). With the layout of ``logits``, the forward pass on MR
    (20,000 documents, one thread) took 10.3 us a document, against 17.0 when it indexed one
    array per width. Stacking the widths per offset instead (zero-padded to the widest, one
    gather of 300 maps) was slower: its blocks outgrow a 2 MiB L2 cache."""

    def __init__(self, arrays: dict[str, np.ndarray], arch: dict | None = None):
        count = sum(1 for name in arrays if name.startswith("convs.") and name.endswith(".weight"))
        names = ["embedding.weight", "output.weight", "output.bias"]
        _check_arrays(arrays, names + [f"convs.{i}.{p}" for i in range(count) for p in ("weight", "bias")], "kim-cnn")
        vectors = np.asarray(arrays["embedding.weight"], dtype=np.float32)
        if "static_embedding.weight" in arrays:  # multichannel: w.x_static + w.x_tuned = w.(x_static + x_tuned)
            vectors = vectors + np.asarray(arrays["static_embedding.weight"], dtype=np.float32)
        convs = [np.asarray(arrays[f"convs.{i}.weight"], dtype=np.float32) for i in range(count)]  # [maps, d, h]
        self.widths = [conv.shape[2] for conv in convs]
        self.maps = convs[0].shape[0]
        self.vocab_size, self.num_classes = vectors.shape[0], arrays["output.weight"].shape[0]
        weights = [np.ascontiguousarray(conv[:, :, k].T) for conv in convs for k in range(conv.shape[2])]
        # Row END = vocab_size: -inf at every offset, the padding after a document (see logits).
        self.table = _offset_array(vectors, weights, end=-np.inf)
        self.rows_per_word = len(weights)
        rows = self.table.reshape(-1, self.maps)
        firsts = np.cumsum([0] + self.widths[:-1])
        self.offset_rows = [[rows[first + k:] for k in range(width)] for first, width in zip(firsts, self.widths)]
        self.biases = np.stack([np.asarray(arrays[f"convs.{i}.bias"], dtype=np.float32) for i in range(count)])
        output = np.asarray(arrays["output.weight"], dtype=np.float32).T  # [widths x maps, classes]
        self.output = np.ascontiguousarray(output.reshape(count, self.maps, self.num_classes))
        self.output_bias = np.asarray(arrays["output.bias"], dtype=np.float32)

    @staticmethod
    def handles(arch: dict) -> bool:
        """Whether the tables read this architecture: eq. 3's windows, not the border windows
        of Kim's code (``pad_borders``, which predicts through torch)."""
        return not reads_as_kims_code(arch)

    @staticmethod
    def table_bytes(arrays: dict[str, np.ndarray]) -> int:
        widths = [a.shape[0] * a.shape[2] for n, a in arrays.items() if n.startswith("convs.") and a.ndim == 3]
        return arrays["embedding.weight"].shape[0] * sum(widths) * 4

    def logits(self, flat) -> np.ndarray:
        """``[N, C]`` float32 logits of a ``text.pipeline.FlatIds``.

        Sub-batches are position-major (``[length, documents]`` ids, ``[windows, documents,
        maps]`` sums), so that the max over windows runs along the outer axis in long
        contiguous rows; each writes its maxima in place, in length order. A sub-batch whose
        documents all have the widest window pads with END, whose -inf rows put every window
        past a document's end out of the max with no mask (a window within the document reads
        no padding); one with a shorter document pads with [PAD], as the model does, and masks."""
        starts = np.cumsum(flat.lengths) - flat.lengths
        scaled = np.asarray(flat.ids, dtype=np.intp) * self.rows_per_word
        widest, end = max(self.widths), self.vocab_size * self.rows_per_word
        batches = _length_batches(flat.lengths, KIM_BATCH_TOKENS)
        pooled = np.empty((len(self.widths), len(flat.lengths), self.maps), dtype=np.float32)
        begin = 0
        for rows in batches:
            lengths = flat.lengths[rows]
            length = max(int(lengths[-1]), widest)  # as the model pads a batch
            short = lengths[0] < widest  # sorted: [0] is shortest
            ids, _ = pad_flat(scaled, flat.lengths, starts, rows, 0 if short else end, width=length)
            ids = np.ascontiguousarray(ids.T)
            for width, tables, out in zip(self.widths, self.offset_rows, pooled[:, begin:begin + len(rows)]):
                steps = length - width + 1
                sums = tables[0].take(ids[:steps], axis=0)
                for k in range(1, width):
                    sums += tables[k].take(ids[k:k + steps], axis=0)
                if short:
                    doc, start = _past_end(lengths, steps, width)
                    sums[start, doc] = -np.inf
                sums.max(axis=0, out=out)
            begin += len(rows)
        pooled += self.biases[:, None]
        np.maximum(pooled, 0, out=pooled)
        out = np.empty((len(flat.lengths), self.num_classes), dtype=np.float32)
        order = np.concatenate(batches) if batches else np.zeros(0, dtype=np.intp)
        out[order] = np.matmul(pooled, self.output).sum(axis=0) + self.output_bias
        return out


def sinusoidal_encoding(length: int, dim: int) -> np.ndarray:
    """``models.layers.sinusoidal_encoding`` in NumPy (Vaswani et al. 2017; SPE's eq. 1-2):
    ``PE(pos, 2i) = sin(pos / 10000^(2i/dim))``, ``PE(pos, 2i+1) = cos(...)``, computed in
    float64, returned as float32 ``[length, dim]``."""
    position = np.arange(length, dtype=np.float64)[:, None]
    even = np.arange(0, dim, 2, dtype=np.float64)
    angle = position / np.power(10000.0, even / dim)
    encoding = np.zeros((length, dim), dtype=np.float64)
    encoding[:, 0::2] = np.sin(angle)
    encoding[:, 1::2] = np.cos(angle[:, : dim // 2])
    return encoding.astype(np.float32)


class SpeCNNForward:
    """SingleCNN(-SPE) (``models/spe_cnn.py``) from its state-dict arrays, every embedding mode.

    Eq. 3-5 with the linear activation: ``c_i = b + sum_k W_k (x_{i+k} + p_{i+k})``, so
    ``c_i = b + sum_k P_k[x_{i+k}] + sum_k Q_k[i + k]`` with ``P_k = E W_k^T`` (``W_k`` itself
    for one-hot words) and ``Q_k = PE W_k^T``; the position part of every window start is one
    more table (grown as longer documents come), and a document shorter than the window has
    positions on its real words only. Then, as in the model: layer norm over the filters at
    each window (eq. 6-7), max- and average-pooling over the windows within the document,
    concatenated, the softmax layer (dropout off).

    Layer norm subtracts each window's mean over the filters, ``c_i - mean_f c_i``, which is
    linear too: every table row is stored minus its own mean, so the gathered sum is already
    centred and the normalisation is a scale by ``1 / sqrt(var + eps)``."""

    @staticmethod
    def handles(arch: dict) -> bool:
        """Whether the tables read this architecture: not Kim's padded rows (``kim_row_length``,
        whose zeros carry positions and enter both pools; it predicts through torch)."""
        return not reads_as_kims_code(arch)

    def __init__(self, arrays: dict[str, np.ndarray], arch: dict | None = None):
        arch = arch or {}
        one_hot = "conv_table.weight" in arrays
        head = ["norm.weight", "norm.bias", "output.weight", "output.bias"]
        _check_arrays(arrays, head + (["conv_table.weight", "conv_bias"] if one_hot else
                                      ["embedding.weight", "conv.weight", "conv.bias"]), "spe-cnn")
        self.gain = np.asarray(arrays["norm.weight"], dtype=np.float32)
        self.shift = np.asarray(arrays["norm.bias"], dtype=np.float32)
        self.filters = len(self.gain)
        if one_hot:  # row v: [W_0[:, v], ..., W_{j-1}[:, v]], offset-major
            table = np.asarray(arrays["conv_table.weight"], dtype=np.float32)
            self.window = table.shape[1] // self.filters
            weights = [table[:, k * self.filters:(k + 1) * self.filters] for k in range(self.window)]
            self.tables, self.conv_bias = _offset_tables(None, weights), arrays["conv_bias"]
        else:  # Conv1d's [filters, d, window]
            conv = np.asarray(arrays["conv.weight"], dtype=np.float32)
            self.window = conv.shape[2]
            weights = [np.ascontiguousarray(conv[:, :, k].T) for k in range(self.window)]
            self.tables = _offset_tables(np.asarray(arrays["embedding.weight"], dtype=np.float32), weights)
            self.conv_bias = arrays["conv.bias"]
        self.conv_bias = np.asarray(self.conv_bias, dtype=np.float32)
        self.tables = [_centred(table) for table in self.tables]
        self.weights = weights if arch.get("position_encoding", SPE_DEFAULTS["position_encoding"]) else None
        self.position_scale = np.float32(arch.get("position_scale", SPE_DEFAULTS["position_scale"]))
        self.eps = float(arch.get("layer_norm_eps", SPE_DEFAULTS["layer_norm_eps"]))
        self.vocab_size, self.num_classes = self.tables[0].shape[0], arrays["output.weight"].shape[0]
        self.output = np.ascontiguousarray(np.asarray(arrays["output.weight"], dtype=np.float32).T)
        self.output_bias = np.asarray(arrays["output.bias"], dtype=np.float32)
        self.starts_table = np.zeros((0, self.filters), dtype=np.float32)
        self.short_table = None

    @staticmethod
    def table_bytes(arrays: dict[str, np.ndarray]) -> int:
        if "conv_table.weight" in arrays:
            return arrays["conv_table.weight"].size * 4
        conv = arrays["conv.weight"]
        return arrays["embedding.weight"].shape[0] * conv.shape[0] * conv.shape[2] * 4

    def _grow_positions(self, steps: int) -> None:
        """Row ``i`` of ``starts_table``: ``b + sum_k Q_k[i + k]``, the position part (and bias)
        of the window starting at ``i``; row ``n`` of ``short_table``: ``b + sum_{k<n} Q_k[k]``,
        the only window of a document of ``n < window`` words. Grown geometrically."""
        if self.weights is None or len(self.starts_table) >= steps:
            return
        rows = max(steps, 2 * len(self.starts_table), 64)
        encoding = sinusoidal_encoding(rows + self.window - 1, self.weights[0].shape[0]) * self.position_scale
        per_offset = [encoding @ weight for weight in self.weights]
        self.starts_table = _centred(self.conv_bias + sum(q[k:k + rows] for k, q in enumerate(per_offset)))
        self.short_table = _centred(np.stack([self.conv_bias + sum((per_offset[k][k] for k in range(n)), np.float32(0))
                                              for n in range(self.window)]))

    def logits(self, flat) -> np.ndarray:
        """``[N, C]`` float32 logits of a ``text.pipeline.FlatIds``."""
        offsets = np.cumsum(flat.lengths) - flat.lengths
        out = np.empty((len(flat.lengths), self.num_classes), dtype=np.float32)
        for rows in _length_batches(flat.lengths):
            steps = max(int(flat.lengths[rows[-1]]), self.window) - self.window + 1
            ids, lengths = _padded_ids(flat, offsets, rows, steps + self.window - 1)
            out[rows] = self._pooled(ids, lengths, steps) @ self.output + self.output_bias
        return out

    def _pooled(self, ids: np.ndarray, lengths: np.ndarray, steps: int) -> np.ndarray:
        """``[B, 2 x filters]``: max and mean over each document's windows of the normalised map."""
        sums = _window_sums(self.tables, ids, steps)
        if self.weights is None:
            sums += _centred(self.conv_bias)
        else:
            self._grow_positions(steps)
            sums += self.starts_table[:steps]
            short = np.flatnonzero(lengths < self.window)
            sums[short, 0] += self.short_table[lengths[short]] - self.starts_table[0]
        # Layer norm (eq. 6-7) over the filters: the sums are centred already (see the class).
        variance = np.einsum("bif,bif->bi", sums, sums) / self.filters
        sums *= (1.0 / np.sqrt(variance + self.eps, dtype=np.float32))[..., None]
        sums *= self.gain  # the shift is added after pooling: max(z + s) = max(z) + s
        if lengths[0] == ids.shape[1]:  # every document fills the batch (sorted: [0] is shortest)
            return np.concatenate([sums.max(axis=1), sums.mean(axis=1)], axis=1) + np.concatenate([self.shift] * 2)
        past, starts = _past_end(lengths, steps, self.window)
        sums[past, starts] = -np.inf
        top = sums.max(axis=1)
        sums[past, starts] = 0
        mean = sums.sum(axis=1) / np.maximum(lengths - self.window + 1, 1)[:, None].astype(np.float32)
        return np.concatenate([top, mean], axis=1) + np.concatenate([self.shift] * 2)


def _centred(rows: np.ndarray) -> np.ndarray:
    """``rows`` minus each row's mean over its last axis, float32."""
    return (rows - rows.mean(axis=-1, keepdims=True)).astype(np.float32)


# The constructor defaults of SpeCNN that a run's config.json leaves out when its preset keeps
# them (tests/test_numpy_cnn.py holds them equal to SpeCNN's).
SPE_DEFAULTS = {"position_encoding": True, "position_scale": 1.0, "layer_norm_eps": 1e-6}

# Model families whose runs predict without torch, by config.json's "family".
FORWARDS = {"fasttext-bag": FastTextBagForward, "kim-cnn": KimCNNForward, "spe-cnn": SpeCNNForward}


def build_forward(family: str, arrays: dict[str, np.ndarray], arch: dict | None = None):
    """The NumPy forward pass of a run of ``family`` from its weights, or None when its
    inference tables would exceed ``TABLE_CAP_BYTES`` or the pass does not handle the run's
    architecture (then it predicts through torch)."""
    forward = FORWARDS[family]
    handles = getattr(forward, "handles", None)
    if handles is not None and not handles(arch or {}):
        return None
    table_bytes = getattr(forward, "table_bytes", None)
    if table_bytes is not None:
        try:
            if table_bytes(arrays) > TABLE_CAP_BYTES:
                return None
        except KeyError as exc:
            raise CheckpointError(f"the {family} weights lack array {exc}; retrain or restore the run") from None
    return forward(arrays, arch)
