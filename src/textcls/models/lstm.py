"""LSTM baselines of FCSR's Tables 4 and 5: LSTM, stacked LSTM, BiLSTM and stacked BiLSTM.

The FCSR paper copies these rows from Liu et al. 2017 ([26]: LSTM, stacked LSTM) and Zhang et
al. 2018 ([16], S-LSTM paper: BiLSTM, stacked BiLSTM) and states no size or recipe for them,
so the choices here are ours and the same for all four:

- word vectors -> an LSTM (Hochreiter & Schmidhuber 1997) read by true length with
  ``layers.masked_rnn`` (padding never enters a state, and the backward direction starts at
  each document's last real word) -> a document vector -> dropout ->
  a softmax layer;
- the document vector is the **last hidden state** (``pooling="last"``): ``h_m`` of the top
  layer, and for a BiLSTM ``[h_m(forward); h_1(backward)]``, both directions' final states.
  Liu et al.'s LSTM classifiers feed ``h_T`` to the softmax layer, and the FCSR paper says
  nothing of pooling; ``pooling="max"`` or ``"mean"`` pool the top layer's outputs over real
  positions instead;
- ``hidden_size=100`` per direction; "stacked" is 2 layers (the S-LSTM paper reports 2 and
  3 stacked BiLSTMs; FCSR does not say which it copied), with dropout between layers;
- same inputs as FCSR: GloVe 6B 50-d offline (the papers used 200-/300-d GloVe), fine-tuned,
  lowercased text;
- Adam at 1e-3, batches of 20 (FCSR's Figure 7 caption: "20 for other models"), at most 40
  epochs as FCSR, keeping the best-on-dev epoch and stopping after 5 without improvement.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor, nn

from ..recipe import Recipe
from ..validate import check_choice, check_flag, check_positive_int, check_probability
from .base import Output, TextModel
from .layers import build_embedding, masked_max, masked_mean, masked_rnn
from .registry import Preset, register_model

POOLINGS = ("last", "max", "mean")

BASELINE_RECIPE = Recipe(optimizer="adam", lr=1e-3, batch_size=20, epochs=40, patience=5)
_INPUTS = {"shape": "flat", "lowercase": True, "min_freq": 1, "embeddings": "glove-6b-50d", "embedding_dim": 50}
_PAPER = "FCSR Tables 4-5 baselines (rows from Liu et al. 2017 and Zhang et al. 2018)"
_NOTE = " Last hidden state, 100 units a direction, GloVe 6B 50-d (fine-tuned)."

LSTM_PRESETS = [
    Preset("lstm", "lstm", arch={"num_layers": 1, "bidirectional": False}, recipe=BASELINE_RECIPE, inputs=_INPUTS,
           description="LSTM, one layer." + _NOTE, paper=_PAPER),
    Preset("lstm-stacked", "lstm", arch={"num_layers": 2, "bidirectional": False}, recipe=BASELINE_RECIPE,
           inputs=_INPUTS, description="Stacked LSTM, two layers." + _NOTE, paper=_PAPER),
    Preset("bilstm", "lstm", arch={"num_layers": 1, "bidirectional": True}, recipe=BASELINE_RECIPE, inputs=_INPUTS,
           description="BiLSTM, one layer." + _NOTE, paper=_PAPER),
    Preset("bilstm-stacked", "lstm", arch={"num_layers": 2, "bidirectional": True}, recipe=BASELINE_RECIPE,
           inputs=_INPUTS, description="Stacked BiLSTM, two layers." + _NOTE, paper=_PAPER),
]


@register_model("lstm", presets=LSTM_PRESETS)
class LSTMClassifier(TextModel):
    """(Bi)LSTM text classifier, one or more layers (see the module docstring)."""

    def __init__(
        self,
        vocab_size: int,
        num_classes: int,
        embeddings: np.ndarray | None = None,
        *,
        embedding_dim: int = 50,
        hidden_size: int = 100,
        num_layers: int = 1,
        bidirectional: bool = False,
        pooling: str = "last",
        dropout: float = 0.5,
        freeze_embeddings: bool = False,
    ):
        super().__init__()
        check_positive_int("embedding_dim", embedding_dim, 1 << 16)
        check_positive_int("hidden_size", hidden_size, 1 << 16)
        check_positive_int("num_layers", num_layers, 64)
        check_probability("dropout", dropout)
        check_choice("pooling", pooling, POOLINGS)
        check_flag("bidirectional", bidirectional)
        self.pooling = pooling
        self.directions = 2 if bidirectional else 1
        self.embedding = build_embedding(vocab_size, embedding_dim, embeddings, freeze=freeze_embeddings)
        self.rnn = nn.LSTM(
            embedding_dim, hidden_size, num_layers=num_layers, bidirectional=bidirectional,
            batch_first=True, dropout=dropout if num_layers > 1 else 0.0,
        )
        self.dropout = nn.Dropout(dropout)
        self.output = nn.Linear(hidden_size * self.directions, num_classes)

    def forward(self, batch: dict[str, Tensor]) -> Output:
        mask = batch["mask"].bool()
        outputs, h_n = masked_rnn(self.rnn, self.embedding(batch["input_ids"]), mask)
        if self.pooling == "last" and torch.jit.is_tracing():
            # The ONNX exporter fails on h_n of a packed LSTM; the same values, read from the
            # outputs: forward at each document's last real step, backward at step 0.
            hidden = outputs.size(-1) // self.directions
            last = (mask.sum(dim=1).clamp_min(1) - 1).view(-1, 1, 1).expand(-1, 1, hidden)
            parts = [outputs[..., :hidden].gather(1, last).squeeze(1)]
            if self.directions == 2:
                parts.append(outputs[:, 0, hidden:])
            document = torch.cat(parts, dim=-1)
        elif self.pooling == "last":
            # h_n is [layers * directions, B, H]; the top layer's directions are the last rows.
            top = h_n[-self.directions:]
            document = top.transpose(0, 1).reshape(top.size(1), -1)
        elif self.pooling == "max":
            document = masked_max(outputs, mask, dim=1)
        else:
            document = masked_mean(outputs, mask, dim=1)
        return Output(logits=self.output(self.dropout(document)))
