"""Yang et al. (2016), "Hierarchical Attention Networks for Document Classification"
(NAACL), configured as the HCAN paper's baseline (Gao et al. 2018, section 4.2).

Section 2 of Yang et al.: words ``w_it`` of sentence ``i`` are embedded (``x_it = W_e w_it``)
and read by a bidirectional GRU (eqs. 1-4 for the GRU; ``h_it = [fw h_it, bw h_it]``, 2.2);
word attention (eqs. 5-7): ``u_it = tanh(W_w h_it + b_w)``,
``a_it = softmax_t(u_it . u_w)``, ``s_i = sum_t a_it h_it``; the sentence vectors ``s_i`` go
through a second bidirectional GRU (``h_i``, eqs. 8-9) and sentence attention (eq. 10) gives
the document vector ``v``, classified by ``p = softmax(W_c v + b_c)`` (eq. 11).
[``layers.masked_rnn`` runs each GRU by true length; ``layers.AttentionPooling`` is eqs. 5-7
and 10.]

As the HCAN paper configures it: a GRU of 50 units per direction (Yang's size; so 100-d
annotations) and an attention hidden layer of 200 (HCAN 4.2, "an attention mechanism with a
hidden layer of 200 neurons"; Yang used 100), over the same 512-d Word2Vec vectors and with the
same recipe and text normalisation as HCAN (Adam 2e-5, betas 0.9 / 0.99; see ``hcan.py``).
Yang trained with SGD (momentum 0.9) on batches of 64; the HCAN paper trains every deep model
alike, and so do we. No dropout: Yang's paper and the HCAN authors' HAN use none.

Padding: only real sentences go through the word level, each GRU reads by true length
(``layers.masked_rnn``: the backward direction starts at each sentence's last real word), and padded words and
sentences get attention weight 0, so a padded batch gives each document's own logits.
``han-cpu`` is the CPU-sized twin for benchmarks (GloVe 6B 50-d instead of corpus-trained
Word2Vec, the CPU caps and recipe of ``hcan-cpu``); the GRU and attention keep the paper's sizes.
"""

from __future__ import annotations

import numpy as np
from torch import Tensor, nn

from ..errors import ConfigError
from ..recipe import Recipe
from ..validate import check_positive_int
from .base import Output, TextModel
from .layers import AttentionPooling, build_embedding, masked_rnn
from .registry import Preset, register_model

_PAPER = ("Yang et al. 2016, Hierarchical Attention Networks for Document Classification (NAACL), "
          "as configured in Gao et al. 2018, Hierarchical Convolutional Attention Networks (RepL4NLP)")
# The recipes and inputs of hcan.py's presets, repeated here because a model file imports no
# other model file; tests/test_han.py checks that they stay equal.
PAPER_RECIPE = Recipe(optimizer="adam", lr=2e-5, betas=(0.9, 0.99), batch_size=32, epochs=30, patience=3,
                      monitor="accuracy")
CPU_RECIPE = Recipe(optimizer="adam", lr=2e-5 * 32, betas=(0.9, 0.99), batch_size=32, epochs=10, patience=2,
                    monitor="accuracy")
_TEXT = {"lowercase": True, "charset": "hcan", "min_freq": 5, "embeddings": "word2vec", "shape": "hierarchical"}
PAPER_INPUTS = {**_TEXT, "embedding_dim": 512, "max_sentences": 100, "max_sentence_length": 100}
CPU_INPUTS = {**_TEXT, "embeddings": "glove-6b-50d", "embedding_dim": 50, "max_sentences": 20,
              "max_sentence_length": 30}
# Same range as the vectors of words without a pretrained vector (text/embeddings.py).
RANDOM_EMBEDDING_RANGE = 0.25

HAN_PRESETS = [
    Preset(
        "han",
        "han",
        recipe=PAPER_RECIPE,
        inputs=PAPER_INPUTS,
        description="HAN (Yang et al. 2016) as HCAN's baseline: BiGRU 50 + attention 200 at each level, 512-d "
        "Word2Vec, Adam 2e-5; batches of 32 (batch_size=1 is the HCAN paper's one-document mode).",
        paper=_PAPER,
    ),
    Preset(
        "han-cpu",
        "han",
        recipe=CPU_RECIPE,
        inputs=CPU_INPUTS,
        description="HAN, CPU-sized inputs as hcan-cpu: GloVe 6B 50-d (not corpus Word2Vec), 20 sentences x 30 "
        "words, lr 6.4e-4 "
        "(2e-5 x batch 32), at most 10 epochs (patience 2); BiGRU 50 + attention 200 as the paper.",
        paper=_PAPER,
    ),
]


@register_model("han", presets=HAN_PRESETS)
class HAN(TextModel):
    """Hierarchical attention network: BiGRU + attention over words, then over sentences.

    ``forward`` takes a hierarchical batch and, when attention maps are wanted (eval mode,
    unless turned off with ``attention_maps(False)``), returns ``attentions["word"] [B, S, W]``
    and ``attentions["sentence"] [B, S]`` (zero on padding).
    """

    input_shapes = ("hierarchical",)

    def __init__(
        self,
        vocab_size: int,
        num_classes: int,
        embeddings: np.ndarray | None = None,
        *,
        embedding_dim: int = 512,
        hidden_size: int = 50,
        attention_dim: int = 200,
    ):
        super().__init__()
        check_positive_int("embedding_dim", embedding_dim, 1 << 16)
        check_positive_int("hidden_size", hidden_size, 1 << 16)
        check_positive_int("attention_dim", attention_dim, 1 << 16)
        self.embedding = build_embedding(vocab_size, embedding_dim, embeddings,
                                         uniform_range=RANDOM_EMBEDDING_RANGE)
        annotation = 2 * hidden_size  # forward and backward states concatenated (Yang 2.2)
        self.word_gru = nn.GRU(embedding_dim, hidden_size, batch_first=True, bidirectional=True)
        self.word_attention = AttentionPooling(annotation, attention_dim)
        self.sentence_gru = nn.GRU(annotation, hidden_size, batch_first=True, bidirectional=True)
        self.sentence_attention = AttentionPooling(annotation, attention_dim)
        self.output = nn.Linear(annotation, num_classes)

    def forward(self, batch: dict[str, Tensor]) -> Output:
        if "sentence_mask" not in batch or "word_mask" not in batch or batch["input_ids"].dim() != 3:
            raise ConfigError(
                "HAN reads hierarchical batches (input_ids [B,S,W], word_mask, sentence_mask) but got another "
                "shape; encode the texts with shape 'hierarchical'"
            )
        ids, word_mask = batch["input_ids"], batch["word_mask"].bool()
        sentence_mask = batch["sentence_mask"].bool() & word_mask.any(dim=-1)
        # Only real sentences are read: padding sentences cost nothing and stay zero vectors.
        real_words = word_mask[sentence_mask]  # [N, W]
        if real_words.size(0):
            annotations, _ = masked_rnn(self.word_gru, self.embedding(ids[sentence_mask]), real_words)
            vectors, word_weights = self.word_attention(annotations, real_words)  # eqs. 5-7
        else:  # a batch of empty documents: nothing to read (packing refuses empty input)
            vectors = self.output.weight.new_zeros(0, self.sentence_gru.input_size)
            word_weights = self.output.weight.new_zeros(0, ids.size(-1))
        sentences = vectors.new_zeros(*sentence_mask.shape, vectors.size(-1))
        sentences[sentence_mask] = vectors
        sentence_annotations, _ = masked_rnn(self.sentence_gru, sentences, sentence_mask)
        document, sentence_weights = self.sentence_attention(sentence_annotations, sentence_mask)  # eq. 10
        logits = self.output(document)
        if not self.wants_attention_maps:
            return Output(logits=logits)
        word_map = word_weights.new_zeros(*word_mask.shape)
        word_map[sentence_mask] = word_weights
        return Output(logits=logits, attentions={"word": word_map, "sentence": sentence_weights})
