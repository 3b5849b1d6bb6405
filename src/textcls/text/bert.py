"""BERT's encoder as torch's own layers, and a BERT checkpoint's tensors named for it: the
packaged all-MiniLM-L6-v2 without ``transformers`` (``text/embeddings.minilm_encoder`` reads the
files; this file only builds and names). Imported on first use: it imports torch."""

from __future__ import annotations

import torch
from torch import Tensor, nn


class BertEncoder(nn.Module):
    """BERT's encoder (Devlin et al. 2019) built from torch's own layers, for pretrained weights
    such as all-MiniLM-L6-v2's (``bert_state_dict`` names its checkpoint's tensors for it).

    ``x_0 = LayerNorm(E_word[ids] + E_position[0..L) + E_type[0])``, then ``layers`` post-norm
    blocks ``x = LN(x + MHA(x)); x = LN(x + W_2 GELU(W_1 x))``: ``nn.TransformerEncoderLayer``
    with ``norm_first=False``, the erf GELU and BERT's LayerNorm eps is that arithmetic exactly
    (a test holds fp32 sentence vectors equal to sentence-transformers'). Why not ``transformers``'
    BertModel: importing it takes 2-3 s, more than fastText's whole fit on trec, on every fit
    and every prediction of a run that holds this encoder. Dropout is 0: it only ever encodes.

    ``forward(input_ids [B, L] long, mask [B, L] bool, True = real piece) -> [B, L, hidden]``."""

    def __init__(self, *, vocab_size: int, hidden_size: int, heads: int, intermediate_size: int, layers: int,
                 max_positions: int, type_vocab_size: int, layer_norm_eps: float):
        super().__init__()
        self.hidden_size = hidden_size
        self.word = nn.Embedding(vocab_size, hidden_size)
        self.position = nn.Embedding(max_positions, hidden_size)
        self.token_type = nn.Embedding(type_vocab_size, hidden_size)
        self.embedding_norm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(hidden_size, heads, intermediate_size, dropout=0.0, activation="gelu",
                                       layer_norm_eps=layer_norm_eps, batch_first=True, norm_first=False)
            for _ in range(layers))

    def embedding_modules(self) -> list[nn.Module]:
        return [self.word, self.position, self.token_type, self.embedding_norm]

    def forward(self, input_ids: Tensor, mask: Tensor) -> Tensor:
        length = input_ids.shape[1]
        x = self.word(input_ids) + self.position.weight[:length] + self.token_type.weight[0]
        x = self.embedding_norm(x)
        padding = ~mask.bool()
        for layer in self.layers:
            x = layer(x, src_key_padding_mask=padding)
        return x


def bert_state_dict(weights: dict, layers: int) -> dict:
    """A BERT checkpoint's tensors (Hugging Face names, with or without the ``bert.`` prefix)
    under ``BertEncoder``'s names: the query, key and value projections stacked into the
    attention's one input projection, as ``nn.MultiheadAttention`` holds them."""
    prefix = "bert." if "bert.embeddings.word_embeddings.weight" in weights else ""

    def tensor(name: str):
        return weights[prefix + name]

    state = {"word.weight": tensor("embeddings.word_embeddings.weight"),
             "position.weight": tensor("embeddings.position_embeddings.weight"),
             "token_type.weight": tensor("embeddings.token_type_embeddings.weight"),
             "embedding_norm.weight": tensor("embeddings.LayerNorm.weight"),
             "embedding_norm.bias": tensor("embeddings.LayerNorm.bias")}
    for i in range(layers):
        source, target = f"encoder.layer.{i}.", f"layers.{i}."
        for kind in ("weight", "bias"):
            state[f"{target}self_attn.in_proj_{kind}"] = torch.cat(
                [tensor(f"{source}attention.self.{part}.{kind}") for part in ("query", "key", "value")])
            for ours, theirs in (("self_attn.out_proj", "attention.output.dense"),
                                 ("norm1", "attention.output.LayerNorm"), ("linear1", "intermediate.dense"),
                                 ("linear2", "output.dense"), ("norm2", "output.LayerNorm")):
                state[f"{target}{ours}.{kind}"] = tensor(f"{source}{theirs}.{kind}")
    return state
