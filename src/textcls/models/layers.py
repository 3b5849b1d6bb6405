"""Layers shared by the paper models. Models import these; none keeps a private copy.

Masks are bool tensors with True = real position. Every masked reduction here gives a
finite result (zeros) for a row whose positions are all masked, never NaN or -inf, so an
empty document or an all-padding sentence cannot poison a batch.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ..errors import ConfigError

__all__ = [
    "masked_softmax",
    "masked_max",
    "masked_mean",
    "AttentionPooling",
    "masked_attention",
    "masked_rnn",
    "sinusoidal_encoding",
    "build_embedding",
    "shifted_window_sum",
    "window_lookup_sum",
    "DerivedTable",
]


def _expand_mask(mask: Tensor, like: Tensor) -> Tensor:
    # A [B,L] mask applied to [B,L,D] features: add trailing singleton dims to broadcast.
    mask = mask.bool()
    while mask.dim() < like.dim():
        mask = mask.unsqueeze(-1)
    return mask


def masked_softmax(scores: Tensor, mask: Tensor, dim: int = -1) -> Tensor:
    """Softmax of ``scores`` over ``dim`` restricted to ``mask``; masked positions get 0.

    A row with no unmasked position gives all zeros (``torch.softmax`` would give NaN).
    ``mask`` is broadcastable to ``scores`` (trailing dims are added when it has fewer).
    """
    mask = _expand_mask(mask, scores)
    filled = scores.masked_fill(~mask, float("-inf"))
    peak = filled.amax(dim=dim, keepdim=True)
    # All-masked rows have peak -inf; shifting by 0 there keeps exp() at exactly 0.
    # (masked_fill with a scalar: see masked_max on zeros_like and the ONNX trace.)
    peak = peak.masked_fill(~torch.isfinite(peak), 0.0).detach()
    weights = torch.exp(filled - peak) * mask
    total = weights.sum(dim=dim, keepdim=True)
    return weights / total.clamp_min(torch.finfo(weights.dtype).tiny)


def masked_max(x: Tensor, mask: Tensor, dim: int) -> Tensor:
    """Max of ``x`` over ``dim`` ignoring masked positions; all-masked rows give 0."""
    mask = _expand_mask(mask, x)
    filled = x.masked_fill(~mask, float("-inf"))
    # masked_fill with a scalar, not torch.where against zeros_like(best): the TorchScript ONNX
    # exporter folded that zeros tensor into a constant of the traced batch's shape.
    return filled.amax(dim=dim).masked_fill(~mask.any(dim=dim), 0.0)


def masked_mean(x: Tensor, mask: Tensor, dim: int) -> Tensor:
    """Mean of ``x`` over ``dim`` counting only unmasked positions; all-masked rows give 0."""
    mask = _expand_mask(mask, x)
    total = (x * mask).sum(dim=dim)
    count = mask.sum(dim=dim).clamp_min(1)
    return total / count.to(total.dtype)


class AttentionPooling(nn.Module):
    """Additive attention pooling of Yang et al. (2016), eqs. 5-7 (word level):

    ``u_t = tanh(W h_t + b)``, ``a_t = softmax_t(u_t . u_w)`` over unmasked ``t``,
    ``s = sum_t a_t h_t``. ``forward(h [B,L,D], mask [B,L]) -> (s [B,D], a [B,L])``;
    padded positions get weight 0.
    """

    def __init__(self, input_dim: int, attention_dim: int):
        super().__init__()
        self.project = nn.Linear(input_dim, attention_dim)
        self.context = nn.Linear(attention_dim, 1, bias=False)  # u_w, the learned query

    def forward(self, hidden: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        scores = self.context(torch.tanh(self.project(hidden))).squeeze(-1)
        weights = masked_softmax(scores, mask, dim=-1)
        pooled = torch.einsum("bl,bld->bd", weights, hidden)
        return pooled, weights


def masked_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    key_mask: Tensor,
    *,
    scale: float | None = None,
    dropout_p: float = 0.0,
    need_weights: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """Scaled dot-product attention ``softmax(Q K^T * scale) V`` over unmasked keys only.

    ``query [B, (H,) Lq, d]``, ``key``/``value [B, (H,) Lk, d]``, ``key_mask [B, Lk]`` bool
    (True = real). ``scale`` defaults to ``1/sqrt(d)``. Without ``need_weights`` this is one
    call to PyTorch's fused ``scaled_dot_product_attention`` (no ``[Lq, Lk]`` matrix is kept
    for backward by the flash / memory-efficient kernels); with it the weights are computed
    explicitly and returned (``[B, (H,) Lq, Lk]``, zero on padded keys), e.g. for attention
    maps at inference. A row whose keys are all masked (an empty document or sentence) gives a
    zero output and zero weights, never NaN. ``dropout_p`` is dropout on the weights.
    """
    mask = key_mask.bool()
    has_key = mask.any(dim=-1)  # [B]
    # [B, Lk] -> [B, 1, (1,) Lk]: broadcast over heads (if any) and query positions.
    attn_mask = mask.view(mask.size(0), *([1] * (query.dim() - 2)), mask.size(-1))
    if need_weights:
        scale = query.size(-1) ** -0.5 if scale is None else scale
        scores = torch.matmul(query, key.transpose(-1, -2)) * scale
        weights = masked_softmax(scores, attn_mask, dim=-1)
        dropped = F.dropout(weights, dropout_p) if dropout_p > 0 else weights
        return torch.matmul(dropped, value), weights
    # SDPA gives NaN for a fully masked row; let such rows see every key, then zero them.
    safe_mask = attn_mask | ~has_key.view(-1, *([1] * (attn_mask.dim() - 1)))
    out = F.scaled_dot_product_attention(query, key, value, attn_mask=safe_mask, dropout_p=dropout_p, scale=scale)
    keep = has_key.view(-1, *([1] * (out.dim() - 1))).to(out.dtype)
    return out * keep, None


def masked_rnn(rnn: nn.RNNBase, inputs: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    """Run a ``batch_first`` GRU/LSTM over ``inputs [B, L, D]`` reading only unmasked steps.

    Each document is read to its true length (``mask [B, L]`` bool, real tokens first), so a
    backward direction starts at the document's last real token and a padded batch gives the
    same states as each document alone. Returns ``(outputs [B, L, H*dirs], h_n [layers*dirs,
    B, H])``: the outputs are zero at padded steps, and ``h_n`` holds each layer's and
    direction's state at the document's end (forward: its last real step; backward: step 0),
    in the module's row order. An empty row is read as one PAD step.

    A plain ``nn.LSTM`` on the CPU runs unpacked, one direction of one layer at a time (the
    backward direction on each row reversed within its length); everything else is packed
    (``pack_padded_sequence``). Why not pack the LSTM too, the textbook way: on the CPU,
    PyTorch's packed RNN narrows the packed input once a time step, and each narrow's backward
    writes a zero tensor the size of the whole input, so a training step costs O(B L^2)
    (pytorch/pytorch#149194), while the unpacked LSTM runs the fused oneDNN kernel.
    ``benchmarks/rnn_packing.py`` measured a packed LSTM epoch at 3.6x the unpacked one on
    fdu_mtl/apparel, 16.6x on imdb, CSPAN's Bi-LSTM at 2.2x on 20news; the two paths give the
    same values up to float32 rounding (tests/test_models.py). A GRU has no fused CPU kernel:
    unpacked, HAN's took 1.0x (fdu_mtl/books) and 1.4x (20news) their packed time, so GRUs stay
    packed. So do ``proj_size`` LSTMs, dynamically quantised ones, traced or exported graphs, and
    GPUs (cuDNN reads packed batches itself; not measured here). Under bf16 autocast
    (``precision="bf16"``) the unpacked LSTM runs in bf16, as autocast lowers oneDNN's RNN layer;
    the packed one ran in fp32.
    """
    if not rnn.batch_first:
        raise ConfigError(f"{type(rnn).__name__} must be built with batch_first=True for masked_rnn")
    lengths = mask.bool().sum(dim=1).clamp_min(1)
    if _runs_unpacked(rnn, inputs):
        return _unpacked_lstm(rnn, inputs, lengths)
    packed = pack_padded_sequence(inputs, lengths.cpu(), batch_first=True, enforce_sorted=False)
    outputs, final = rnn(packed)
    outputs, _ = pad_packed_sequence(outputs, batch_first=True, total_length=inputs.size(1))
    return outputs, final[0] if isinstance(final, tuple) else final


def _runs_unpacked(rnn: nn.RNNBase, inputs: Tensor) -> bool:
    # benchmarks/rnn_packing.py turns this off to time the packed path beside it.
    tracing = torch.jit.is_tracing() or torch.jit.is_scripting() or torch.onnx.is_in_onnx_export()
    return type(rnn) is nn.LSTM and not rnn.proj_size and inputs.device.type == "cpu" and not tracing


def _unpacked_lstm(rnn: nn.LSTM, inputs: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor]:
    """``masked_rnn`` for an ``nn.LSTM``: each layer and direction is one call of the kernel
    ``nn.LSTM.forward`` calls (``torch._VF.lstm``, of which ``torch.nn`` offers no public
    per-direction form) on the module's own parameters."""
    names = ("weight_ih", "weight_hh", "bias_ih", "bias_hh") if rnn.bias else ("weight_ih", "weight_hh")
    batch, length = inputs.shape[:2]
    steps = torch.arange(length, device=inputs.device)
    real = steps.unsqueeze(0) < lengths.unsqueeze(1)
    # Reverses each row's real steps and leaves its padding where it is; its own inverse.
    flip = torch.where(real, lengths.unsqueeze(1) - 1 - steps, steps)
    ends, rows = lengths - 1, torch.arange(batch, device=inputs.device)
    directions = 2 if rnn.bidirectional else 1
    layer_input, finals = inputs, []
    for layer in range(rnn.num_layers):
        outputs = []
        for direction in range(directions):
            suffix = f"_l{layer}" + ("_reverse" if direction else "")
            weights = [getattr(rnn, name + suffix) for name in names]
            steps_in = _gather_steps(layer_input, flip) if direction else layer_input
            start = steps_in.new_zeros(1, batch, rnn.hidden_size)
            out = torch._VF.lstm(steps_in, (start, start), weights, rnn.bias, 1, 0.0, rnn.training, False, True)[0]
            # Forward: the state after the last real step; reversed: after step 0.
            finals.append(out[rows, ends])
            outputs.append(_gather_steps(out, flip) if direction else out)
        layer_output = (torch.cat(outputs, dim=-1) if directions == 2 else outputs[0]) * real.unsqueeze(-1)
        if layer < rnn.num_layers - 1 and rnn.dropout:
            layer_output = F.dropout(layer_output, rnn.dropout, rnn.training)
        layer_input = layer_output
    return layer_input, torch.stack(finals)


def _gather_steps(values: Tensor, order: Tensor) -> Tensor:
    # values [B, L, D] read at steps order [B, L]: out[b, t] = values[b, order[b, t]]
    return values.gather(1, order.unsqueeze(-1).expand(-1, -1, values.size(-1)))


def sinusoidal_encoding(length: int, dim: int) -> Tensor:
    """Vaswani et al. (2017) position encoding, ``[length, dim]`` float32.

    ``PE(pos, 2i) = sin(pos / 10000^(2i/dim))``, ``PE(pos, 2i+1) = cos(pos / 10000^(2i/dim))``,
    positions counted from 0. An odd ``dim`` keeps its last (sine) column.
    """
    position = torch.arange(length, dtype=torch.float64).unsqueeze(1)
    even = torch.arange(0, dim, 2, dtype=torch.float64)
    angle = position / torch.pow(10000.0, even / dim)
    encoding = torch.zeros(length, dim, dtype=torch.float64)
    encoding[:, 0::2] = torch.sin(angle)
    encoding[:, 1::2] = torch.cos(angle[:, : dim // 2])
    return encoding.float()


def build_embedding(
    vocab_size: int,
    dim: int,
    embeddings: np.ndarray | None = None,
    freeze: bool = False,
    uniform_range: float | None = None,
) -> nn.Embedding:
    """An ``nn.Embedding`` with ``padding_idx=0`` whose PAD row is zero.

    With ``embeddings`` (``[vocab_size, dim]``) the weights are copied from it; otherwise
    they are drawn from ``U[-uniform_range, uniform_range]`` when given (Kim 2014 and fastText
    use this) or PyTorch's N(0, 1). ``freeze`` makes the table non-trainable.
    """
    embedding = nn.Embedding(vocab_size, dim, padding_idx=0)
    with torch.no_grad():
        if embeddings is not None:
            matrix = np.asarray(embeddings)
            if matrix.ndim != 2 or matrix.shape != (vocab_size, dim):
                raise ConfigError(
                    f"embedding matrix has shape {tuple(matrix.shape)} but the model expects "
                    f"({vocab_size}, {dim}) (vocab_size, embedding_dim); build it from the same "
                    "vocabulary and set embedding_dim to its width"
                )
            if not np.issubdtype(matrix.dtype, np.number) or np.issubdtype(matrix.dtype, np.complexfloating):
                raise ConfigError(f"embedding matrix holds {matrix.dtype} values, not real numbers; pass a float array")
            matrix = matrix.astype(np.float32, copy=False)
            broken = np.flatnonzero(~np.isfinite(matrix[1:]).all(axis=1))  # PAD's row 0 is zeroed below
            if broken.size:
                raise ConfigError(f"embedding matrix row {int(broken[0]) + 1} holds NaN or Inf; the vectors are "
                                  "broken, rebuild them (or fill the row with zeros)")
            embedding.weight.copy_(torch.from_numpy(matrix))
        elif uniform_range is not None:
            nn.init.uniform_(embedding.weight, -uniform_range, uniform_range)
        # PAD must embed to zeros whatever the source, so padded positions carry no signal.
        embedding.weight[0].zero_()
    embedding.weight.requires_grad_(not freeze)
    return embedding


def capturing_graph() -> bool:
    """True while torch.jit, torch.onnx or torch.compile / torch.export capture a graph. The
    CNNs' inference lookup tables are built eagerly from the weights and cached on the module,
    which a captured graph with dynamic axes cannot hold, so the models convolve instead."""
    compiler = torch.compiler
    return (torch.jit.is_tracing() or torch.onnx.is_in_onnx_export() or compiler.is_compiling()
            or bool(getattr(compiler, "is_exporting", lambda: False)()))


# The most memory a CNN's inference lookup table may take; a bigger model convolves instead.
FAST_TABLE_BYTES = 512 << 20


def lookup_table_usable(model: nn.Module, embedding: nn.Embedding, floats_per_word: int) -> bool:
    """Whether ``model`` should predict through its inference lookup table now: its
    ``fast_predict`` is on, it is in eval mode with gradients off, no graph is being captured,
    and the table (``floats_per_word`` per vocabulary row) fits in FAST_TABLE_BYTES."""
    if not model.fast_predict or model.training or torch.is_grad_enabled() or capturing_graph():
        return False
    return embedding.num_embeddings * floats_per_word * embedding.weight.element_size() <= FAST_TABLE_BYTES


def shifted_window_sum(contributions: Tensor, window: int, width: int) -> Tensor:
    """``c_i = sum_k blocks[:, i + k, k]`` for ``contributions`` ``[B, L, window * width]``
    (``[B, L, window, width]`` by offset): a convolution of ``window`` over inputs already
    multiplied by each offset's weights, as ``[B, L - window + 1, width]``. One shifted slice
    per offset, not one operation per step. ``L >= window``."""
    steps = contributions.size(1) - window + 1
    blocks = contributions.unflatten(-1, (window, width))
    total = blocks[:, :steps, 0]
    for k in range(1, window):
        total = total + blocks[:, k : k + steps, k]
    return total


def window_lookup_sum(ids: Tensor, table: Tensor, window: int, vocab: int, extra: Tensor | None = None) -> Tensor:
    """``sum_k table[k * vocab + ids[:, i + k]]`` (plus ``table[extra[:, i]]`` when given) for
    every start ``i``, as ``[B, L - window + 1, width]``: a convolution over a vocabulary whose
    per-offset products are stacked in ``table`` (``[window * vocab + ..., width]``). One
    ``embedding_bag`` gathers and sums every window, so no ``[B, L, window * width]`` tensor
    is made. ``L >= window``."""
    batch, steps = ids.size(0), ids.size(1) - window + 1
    index = ids.unfold(1, window, 1) + torch.arange(0, window * vocab, vocab, device=ids.device)
    if extra is not None:
        index = torch.cat([index, extra.unsqueeze(-1)], dim=-1)
    sums = F.embedding_bag(index.reshape(batch * steps, -1), table, mode="sum")
    return sums.view(batch, steps, table.size(1))


class DerivedTable:
    """A tensor computed from parameters (``build()``) and kept until one of them changes.

    The key is each source's storage, in-place version counter, device, dtype and shape, so
    an optimiser step, ``load_state_dict`` (both in place) or ``model.to`` (new storage)
    makes the next ``get`` rebuild it. A plain attribute, not a buffer: never saved in
    checkpoints. Built without autograd, for inference only.
    """

    def __init__(self):
        self._key: tuple | None = None
        self._value: Tensor | None = None

    def get(self, build, *sources: Tensor) -> Tensor:
        key = tuple((t.data_ptr(), t._version, t.device, t.dtype, tuple(t.shape)) for t in sources)
        if key != self._key or self._value is None:
            with torch.no_grad():
                self._value = build()
            self._key = key
        return self._value

    def clear(self) -> None:
        self._key, self._value = None, None
