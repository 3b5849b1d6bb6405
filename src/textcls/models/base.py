"""The one contract every neural model follows.

A model receives ``vocab_size``, ``num_classes`` and optionally an embedding matrix
(``np.ndarray [V, d]``, row 0 = ``[PAD]`` = zeros); it never reads files. Its ``forward``
takes a batch (``dict[str, Tensor]``, see ARCHITECTURE.md "Batches") and returns an
``Output``:

- flat batches: ``input_ids [B,L] long``, ``mask [B,L] bool`` (True = real token), optionally
  ``bigram_ids [B,L2]`` and ``bigram_mask [B,L2]``;
- hierarchical batches: ``input_ids [B,S,W]``, ``word_mask [B,S,W]``, ``sentence_mask [B,S]``.

Padding is masked everywhere: a padded batch and the same documents run one at a time give
the same logits (in eval mode), and each model's tests say so.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field

from torch import Tensor, nn


@dataclass
class Output:
    """What ``forward`` returns: class scores and any attention maps worth inspecting.

    ``logits`` is ``[B, C]`` (softmax for single-label, sigmoid per class for multi-label;
    the loss lives in the engine). ``attentions`` maps a name (``"word"``, ``"sentence"``,
    ...) to a weight tensor whose padded positions are zero.
    """

    logits: Tensor
    attentions: dict[str, Tensor] = field(default_factory=dict)


class TextModel(nn.Module):
    """Base class of every neural text classifier.

    Subclasses implement ``forward(batch) -> Output``. They may also override
    ``after_optimizer_step()``, which the training engine calls after every optimiser step
    (Kim's max-norm constraint uses it); the default does nothing, so the engine can call
    it unconditionally.
    """

    #: The batch shapes this model consumes ("flat", "hierarchical"); the registry checks a
    #: preset's ``inputs["shape"]`` against it.
    input_shapes: tuple[str, ...] = ("flat",)

    def forward(self, batch: dict[str, Tensor]) -> Output:  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__} must implement forward(batch) -> Output")

    #: Whether ``forward`` fills ``Output.attentions`` in eval mode. Attention maps need the
    #: explicit (unfused) attention path; prediction that wants only labels turns them off
    #: with ``attention_maps(False)`` and runs on the fused kernels.
    _attention_maps_on: bool = True

    @property
    def wants_attention_maps(self) -> bool:
        """True in eval mode unless maps were turned off; models compute maps only then."""
        return not self.training and self._attention_maps_on

    @contextmanager
    def attention_maps(self, enabled: bool):
        """``with model.attention_maps(False): ...`` runs forward passes without the maps."""
        previous = self._attention_maps_on
        self._attention_maps_on = bool(enabled)
        try:
            yield self
        finally:
            self._attention_maps_on = previous

    def after_optimizer_step(self) -> None:
        """Hook run by the engine after each optimiser step (constraints, EMA, ...)."""

    def num_parameters(self, trainable_only: bool = False) -> int:
        """Number of parameters; ``trainable_only`` leaves out frozen ones (static embeddings)."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad or not trainable_only)
