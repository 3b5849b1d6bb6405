"""Fine-tuned static sentence vectors with an MLP head: the ``static-finetune`` preset.

What it computes (Model2Vec's ``StaticModelForClassification``, Tulkens and van Dongen 2024,
which the ``model2vec-finetune`` peer runs through model2vec's own Lightning loop): the text is
cut into word pieces by the distilled model's tokenizer (all-MiniLM-L6-v2's uncased
WordPiece), unknown pieces are dropped, and

    s(x) = m / ||m||,   m = (1 / |x|) sum_{t in x} E[t]          (E starts at the distilled vectors)
    p(y | x) = softmax(W2 relu(W1 dropout(s(x)) + b1) + b2)      (sigmoids when multi-label)

with ``E``, ``W1, b1`` (512 hidden units) and ``W2, b2`` all trained by Adam (lr 1e-3; the head by ``HeadAdam``, ``E``
by ``RowAdam``, SparseAdam's update: only the rows of a batch's pieces move) on the cross-entropy
(binary cross-entropy per class when multi-label).

Recipe, as model2vec's ``fit`` sets it unless noted:

- batch size ``32 * min(max(1, (N / 30) // 32), 16)`` for ``N`` training texts (32-512);
- the epoch is chosen on dev: after every epoch the dev accuracy (micro-F1 when multi-label,
  ties to the lower dev log-loss, as ``tfidf-lr`` chooses its ``C``) is measured, the best
  epoch's weights are kept, and training stops after ``early_stop_patience`` epochs without a
  better one or at ``max_epochs``. model2vec watches its own 10 % of the training texts with a
  patience of 5; here the dev split every textcls model selects on is watched, with a patience of 6 and at
  most 30 epochs.
- Reading: ``E`` is updated lazily, by SparseAdam's rule (``table_adam="lazy"``, ``RowAdam``: a
  row's moments move only in the steps whose batch holds one of its pieces); model2vec's loop
  uses dense Adam, under which every row keeps drifting with its momentum after its pieces
  have left the batch. ``table_adam="dense"`` (``CatchUpAdam``) gives dense Adam's trajectory
  exactly, at the lazy rule's cost per step. Lazy is the usual choice for embedding tables
  (it is what ``sparse=True`` embeddings get in torch).
- Reading (not in model2vec's defaults): dropout 0.3 on ``s(x)``. It was first picked in an
  uncommitted trial that read test accuracies. ``benchmarks/static_finetune_adam.py``
  (``static_finetune_adam.md``) then chose among lazy / dense x dropout 0.3 / 0 by mean
  **dev** accuracy over ten datasets and 3 seeds: lazy with dropout 0.3 came first, so the
  preset keeps it (model2vec's own pair, dense without dropout, came last on dev, though it
  scored highest on mpqa's test split).

Why a library preset (issue 19): the frozen variant (``static-lr``) knows what words mean but
cannot learn which of them matter for the task; fine-tuned, the same 256-d vectors come second
only to tfidf-lr among the single candidates of ``ensemble_members.md`` (80.15 % on average
over nine datasets, against 80.32), first on sst2, mpqa, sst5, ag_news and reuters-single, and
lift the ensemble where the TF-IDF members are weakest. It trained in 2-85 s a run on those
datasets at one thread (``ensemble_members.json``, busy machine; 20news the longest).

Why its own ~40-line loop and not ``engine.py``: the engine trains word-level models on the
text pipeline's batches; this model reads the distilled WordPiece tokenizer and the vectors
that ship with the run, like ``static-lr``, and fits through the classic ``fit(texts, y)``
interface, so that the ensemble and the estimators treat the two alike. Prediction needs no
torch: the tuned vectors are averaged as ``StaticSentenceVectors`` does for ``static-lr`` and
the head is two NumPy matrix products.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import CheckpointError, ConfigError
from ..recipe import Recipe
from ..validate import check_positive_int, range_check
from .registry import Preset, register_model
from .static_lr import StaticLRModel, StaticSentenceVectors
from .tfidf import _dev_labels, _dev_score

STATE_FORMAT = "textcls.static-finetune/1"
# The arrays a saved state holds besides the tokenizer and the tuned vectors.
HEAD_ARRAYS = ("hidden_weights", "hidden_bias", "weights", "bias")

STATIC_FINETUNE_PRESETS = [
    Preset(
        "static-finetune",
        "static-finetune",
        arch={"vectors": "minilm-static", "tune_vectors": True, "hidden": 512, "dropout": 0.3, "adam_lr": 1e-3,
              "max_epochs": 30, "early_stop_patience": 6},
        recipe=Recipe(epochs=1),
        inputs={"shape": "flat", "embeddings": None},
        kind="classic",
        description="Static sentence vectors (all-MiniLM-L6-v2 distilled by Model2Vec, 256-d, mean of word pieces, "
                    "L2-normalised) fine-tuned with a 512-unit MLP head (Adam, epoch chosen on dev).",
        paper="Model2Vec (Tulkens and van Dongen 2024), StaticModelForClassification; textcls practitioner member "
              "(issue 19)",
    ),
]


def batch_size_for(train_texts: int) -> int:
    """model2vec's rule: a multiple of 32, about a thirtieth of the data, from 32 to 512."""
    return 32 * int(min(max(1, (train_texts / 30) // 32), 16))


@register_model("static-finetune", presets=STATIC_FINETUNE_PRESETS)
class StaticFinetuneModel(StaticLRModel):
    """The model of the module doc. ``hidden``: the head's hidden units; ``dropout``: on the
    sentence vector while training; ``adam_lr``: Adam's rate; ``max_epochs`` /
    ``early_stop_patience``: the epoch search on dev; ``vectors``: the static source;
    ``tune_vectors``: train ``E`` too (False: only the head, on frozen vectors). Give the vectors with ``use_vectors`` before
    ``fit``, and a dev split to ``fit``: the epoch is always chosen on it."""

    family_name = "static-finetune"
    # Its epochs are its own (the recipe it shares with the classic models has none): what the
    # recipe field a user may try sets here (estimators._refuse_ignored_recipe names it). Its batch
    # size follows model2vec's rule (batch_size_for), not a setting.
    RECIPE_PARAMETERS = {"epochs": "max_epochs", "lr": "adam_lr", "patience": "early_stop_patience"}

    def __init__(self, num_classes: int, *, hidden: int = 512, dropout: float = 0.3, adam_lr: float = 1e-3,
                 max_epochs: int = 30, early_stop_patience: int = 6, vectors: str = "minilm-static",
                 tune_vectors: bool = True, table_adam: str = "lazy"):
        super().__init__(num_classes, vectors=vectors)
        check_positive_int("hidden", hidden, 1 << 16)
        range_check("dropout", dropout, 0.0, 1.0, high_open=True)
        range_check("adam_lr", adam_lr, 0.0, 10.0, low_open=True)
        check_positive_int("max_epochs", max_epochs, 10_000)
        check_positive_int("early_stop_patience", early_stop_patience, 10_000)
        self.hidden, self.dropout, self.adam_lr = int(hidden), float(dropout), float(adam_lr)
        self.max_epochs, self.early_stop_patience = int(max_epochs), int(early_stop_patience)
        self.tune_vectors = bool(tune_vectors)
        if table_adam not in TABLE_ADAMS:
            raise ConfigError(f"parameter 'table_adam' = {table_adam!r} is not one of {', '.join(TABLE_ADAMS)}")
        self.table_adam = table_adam

    def get_params(self) -> dict[str, Any]:
        return {"hidden": self.hidden, "dropout": self.dropout, "adam_lr": self.adam_lr, "max_epochs": self.max_epochs,
                "early_stop_patience": self.early_stop_patience, "vectors": self.vectors,
                "tune_vectors": self.tune_vectors, "table_adam": self.table_adam}

    def search_grid(self) -> tuple[str, list[float] | None]:
        """The epoch, searched on dev (so the estimator carves a dev split)."""
        return "epoch", list(range(1, self.max_epochs + 1))

    def chosen_params(self) -> dict[str, float]:
        """Nothing goes into the preset: the kept epoch is in ``selection_``."""
        return {}

    # -- training ---------------------------------------------------------------------
    def fit(self, texts, y, *, dev_texts=None, dev_y=None, seed: int = 0) -> "StaticFinetuneModel":
        """Train on raw texts (``y``: ``[N]`` class indices or ``[N, C]`` multi-hot) and keep the
        epoch with the best dev score; ``seed`` draws the initial head, dropout and batch order."""
        import torch
        from torch import nn
        from torch.nn import functional as F

        texts, labels = self._training_labels(texts, y)
        if dev_texts is None or not len(dev_texts):
            raise ConfigError("static-finetune chooses its epoch on dev; pass dev_texts and dev_y to fit")
        dev_labels = _dev_labels(dev_texts, dev_y, labels)
        vectors = self._vectorizer()
        generator = torch.Generator().manual_seed(int(seed))
        torch.manual_seed(int(seed))  # the head's initial weights and the dropout masks

        table = torch.from_numpy(vectors.embedding.copy())
        head = nn.Sequential(nn.Dropout(self.dropout), nn.Linear(vectors.embedding.shape[1], self.hidden), nn.ReLU(),
                             nn.Linear(self.hidden, self.num_classes))
        head_adam = HeadAdam(head.parameters(), lr=self.adam_lr)
        table_adam = TABLE_ADAMS[self.table_adam](table, lr=self.adam_lr) if self.tune_vectors else None
        train_ids, dev_ids = _tensors(vectors.piece_ids(texts)), _tensors(vectors.piece_ids(list(dev_texts)))
        targets = torch.from_numpy(labels.astype(np.float32 if self.multi_label_ else np.int64))
        loss_of = F.binary_cross_entropy_with_logits if self.multi_label_ else F.cross_entropy

        def logits(ids, rows, tune: bool = False):
            """The head's scores of texts ``rows``; with ``tune``, also ``(pieces, leaf)``: the
            batch's distinct table rows as one dense leaf, whose gradient is ``[pieces, dim]``."""
            flat, offsets = _bag_rows(*ids, rows)
            if not tune:
                return head(F.normalize(F.embedding_bag(flat, table, offsets, mode="mean"), dim=1)), None
            pieces, position = torch.unique(flat, return_inverse=True)
            leaf = table[pieces].requires_grad_()
            return head(F.normalize(F.embedding_bag(position, leaf, offsets, mode="mean"), dim=1)), (pieces, leaf)

        size, best, scores, stale = batch_size_for(len(texts)), None, {}, 0
        for epoch in range(1, self.max_epochs + 1):
            head.train()
            order = torch.randperm(len(texts), generator=generator)
            for start in range(0, len(texts), size):
                rows = order[start:start + size]
                scores_of_batch, touched = logits(train_ids, rows, tune=table_adam is not None)
                loss = loss_of(scores_of_batch, targets[rows])
                head_adam.zero_grad()
                loss.backward()
                head_adam.step()
                if touched is not None:
                    table_adam.step(touched[0], touched[1].grad)
            head.eval()
            if table_adam is not None:
                table_adam.flush()
            with torch.inference_mode():
                dev_scores = logits(dev_ids, torch.arange(len(dev_texts)))[0].double().numpy()
            score = _dev_score(dev_scores, dev_labels, self.multi_label_)
            scores[str(epoch)] = {"score": score[0], "log_loss": -score[1]}
            if best is None or score > best[0]:
                best, stale = (score, epoch, table.clone(), [p.detach().clone() for p in head.parameters()]), 0
            else:
                stale += 1
                if stale >= self.early_stop_patience:
                    break
        _, chosen, embedding, (hidden_weights, hidden_bias, weights, bias) = best
        self.vectorizer_ = StaticSentenceVectors(vectors.tokenizer_json, embedding.numpy(), vectors.unk_id)
        self.hidden_weights_, self.hidden_bias_ = hidden_weights.double().numpy(), hidden_bias.double().numpy()
        self.weights_, self.bias_ = weights.double().numpy(), bias.double().numpy()
        self.selection_ = self._selection("epoch", chosen, scores, len(dev_labels), epochs_run=epoch, batch_size=size)
        return self

    # -- inference --------------------------------------------------------------------
    def decision_function(self, texts) -> np.ndarray:
        """The head's scores before the link, ``[N, C]`` (NumPy, float64)."""
        self._check_fitted()
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.num_classes))
        hidden = np.maximum(self.vectorizer_.transform(texts) @ self.hidden_weights_.T + self.hidden_bias_, 0.0)
        return hidden @ self.weights_.T + self.bias_

    def num_parameters(self) -> int:
        """Learned numbers: the head, and the vectors when they are tuned."""
        self._check_fitted()
        head = sum(a.size for a in (self.hidden_weights_, self.hidden_bias_, self.weights_, self.bias_))
        return int(head + (self.vectorizer_.embedding.size if self.tune_vectors else 0))

    def frozen_parameters(self) -> int:
        """The vectors when they are not tuned; else none."""
        return 0 if self.tune_vectors else self.embedding_parameters()

    def embedding_parameters(self) -> int:
        """The word-piece vectors, tuned or not."""
        return int(self.sentence_vectors.embedding.size) if hasattr(self, "sentence_vectors") else 0

    # -- persistence (no pickle) ------------------------------------------------------
    def state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        arrays, meta = super().state()
        arrays.update({"hidden_weights": self.hidden_weights_, "hidden_bias": self.hidden_bias_})
        meta["format"] = STATE_FORMAT
        return arrays, meta

    @classmethod
    def from_state(cls, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> "StaticFinetuneModel":
        """Rebuild a fitted model from ``state()``'s output; runs no stored code."""
        if meta.get("format") != STATE_FORMAT:
            raise CheckpointError(f"static-finetune state has format {meta.get('format')!r}, expected "
                                  f"{STATE_FORMAT!r}; re-save it with this textcls")
        missing = [k for k in ("tokenizer", "embedding", *HEAD_ARRAYS) if k not in arrays]
        if missing:
            raise CheckpointError(f"static-finetune state lacks array '{missing[0]}'; the run directory is incomplete")
        model = cls(meta["num_classes"], **meta["params"])
        model._read_vectors(arrays, meta)
        head = [np.asarray(arrays[k], dtype=np.float64) for k in HEAD_ARRAYS]
        dim, C, H = model.sentence_vectors.embedding.shape[1], model.num_classes, model.hidden
        if [a.shape for a in head] != [(H, dim), (H,), (C, H), (C,)]:
            raise CheckpointError(f"static-finetune state is inconsistent: vectors of {dim} dimensions, "
                                  f"{H} hidden units and {C} classes, but head arrays of shapes "
                                  f"{[a.shape for a in head]}; the saved run is corrupt")
        model.hidden_weights_, model.hidden_bias_ = head[0], head[1]
        return model._restored(model.sentence_vectors, head[2], head[3], meta)


class HeadAdam:
    """``torch.optim.Adam``'s update (its single-tensor CPU path, the one it takes here; no
    weight decay or amsgrad) for the head's parameters, step for step the same numbers.

    Why not ``torch.optim.Adam`` itself: building any torch optimiser imports ``torch._dynamo``
    (1.38 s, benchmarks/results/optimizer_import.md), more than fastText's whole fit on trec or
    mpqa (practitioner.md), whose ten times are the ensemble's budget there; this member and
    fasttext-bag's per-example loop (``train.optim.EpochRate``) were what built one."""

    def __init__(self, params, *, lr: float, betas=(0.9, 0.999), eps: float = 1e-8):
        import torch

        self.params, self.lr, self.betas, self.eps, self.steps = list(params), lr, betas, eps, 0
        self.mean = [torch.zeros_like(p) for p in self.params]
        self.square = [torch.zeros_like(p) for p in self.params]

    def zero_grad(self) -> None:
        for param in self.params:
            param.grad = None

    def step(self) -> None:
        """One update of every parameter that has a gradient."""
        import torch

        beta1, beta2 = self.betas
        self.steps += 1
        step_size = self.lr / (1 - beta1 ** self.steps)
        correction2_sqrt = (1 - beta2 ** self.steps) ** 0.5
        with torch.no_grad():
            for param, mean, square in zip(self.params, self.mean, self.square):
                if param.grad is None:
                    continue
                grad = param.grad
                mean.lerp_(grad, 1 - beta1)
                square.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                param.addcdiv_(mean, (square.sqrt() / correction2_sqrt).add_(self.eps), value=-step_size)


class RowAdam:
    """Adam on the rows of ``table`` a batch touched, the others left as they are: the update
    of ``torch.optim.SparseAdam`` (moments and step size of Adam, a row's moments moving only
    when the row has a gradient), given the touched rows and their dense gradient.

    Why not SparseAdam itself: an ``EmbeddingBag(sparse=True)`` gradient has one row per piece
    occurrence, which SparseAdam sorts and merges every step. On 20news (posts of ~500 pieces)
    that merge and the backward were 120 of the member's 163 s; the batch's distinct rows as one
    dense leaf cost a ``torch.unique`` instead."""

    def __init__(self, table, *, lr: float, betas=(0.9, 0.999), eps: float = 1e-8):
        import torch

        self.table, self.lr, self.betas, self.eps, self.steps = table, lr, betas, eps, 0
        self.mean, self.square = torch.zeros_like(table), torch.zeros_like(table)

    def step(self, rows, grad) -> None:
        """One update of ``table[rows]`` (distinct rows) with their gradient ``grad``."""
        import torch

        beta1, beta2 = self.betas
        self.steps += 1
        with torch.no_grad():
            mean = self.mean[rows].mul_(beta1).add_(grad, alpha=1 - beta1)
            square = self.square[rows].mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            self.mean[rows], self.square[rows] = mean, square
            step_size = self.lr * (1 - beta2 ** self.steps) ** 0.5 / (1 - beta1 ** self.steps)
            self.table[rows] -= step_size * mean / square.sqrt().add_(self.eps)

    def flush(self) -> None:
        """Nothing to do: a lazy row is up to date after each step."""


class CatchUpAdam:
    """Dense ``torch.optim.Adam`` on ``table`` (every row moves every step, along its decaying
    moments, whether or not the batch holds it), computed only for the rows a batch touches.

    Why: model2vec's loop (the ``model2vec-finetune`` peer) trains its table with dense Adam,
    so a word piece keeps moving for a few steps after it leaves the batch; ``RowAdam`` (SparseAdam)
    stops it at once. Dense Adam costs the whole table (7.5 M numbers) per step: on mpqa a fit
    took 20-36 s instead of 2. A row untouched since step ``l`` has, at step ``s > l``, moments
    ``beta1^(s-l) m`` and ``beta2^(s-l) v``, so its missed moves sum in closed form:

        theta -= lr * m / sqrt(v) * S(l, t),   S(l, t) = sum_{s=l+1}^{t} r^(s-l) c(s),
        r = beta1 / sqrt(beta2),   c(s) = sqrt(1 - beta2^s) / (1 - beta1^s)

    (Adam's bias corrections at each step ``s``). A row catches up when a batch touches it
    (in the same gather and scatter as its own update) and every row at ``flush()`` (before
    the table is read).
    ``partial[l]`` holds ``S(l, steps)``: each step adds its term to the last
    ``CATCH_UP_TERMS`` entries; older ones are complete, their next terms being below
    ``r^350 ~ 1e-16`` of the first. The sum leaves out Adam's ``eps`` (1e-8) against
    ``sqrt(v_s)``, which is what makes it closed-form; a row with a gradient has ``sqrt(v)``
    orders of magnitude above it, so the moves match dense Adam to float32 precision
    (tests/test_static_finetune.py).
    """

    CATCH_UP_TERMS = 350

    def __init__(self, table, *, lr: float, betas=(0.9, 0.999), eps: float = 1e-8):
        import torch

        self.table, self.lr, self.betas, self.eps, self.steps = table, lr, betas, eps, 0
        self.mean, self.square = torch.zeros_like(table), torch.zeros_like(table)
        # The step at which each row was last brought up to date; 0: never touched (its
        # moments are zero, so dense Adam does not move it).
        self.current = torch.zeros(len(table), dtype=torch.int64)
        self.partial = torch.zeros(1024, dtype=torch.float64)  # S(l, steps) at index l; grown by doubling
        ratio = betas[0] / betas[1] ** 0.5
        self.ratio_powers = ratio ** torch.arange(self.CATCH_UP_TERMS, 0, -1, dtype=torch.float64)

    def _caught_up(self, rows):
        """``(move, mean, square)`` of ``rows`` brought from the step each was last brought up to
        date to step ``steps``, without gradient, as dense Adam moves them: the sum of the
        missed moves, and the moments decayed. A row never touched has zero moments, hence no
        move; one brought up to date at ``steps`` has ``partial[steps] = 0`` and idles 0 steps."""
        beta1, beta2 = self.betas
        last = self.current[rows]
        idle = (self.steps - last).to(self.mean.dtype)[:, None]
        mean, square = self.mean[rows], self.square[rows]
        move = (self.lr * self.partial[last]).to(mean.dtype)[:, None] * mean / square.sqrt().clamp_min(self.eps)
        return move, mean.mul_(beta1 ** idle), square.mul_(beta2 ** idle)

    def step(self, rows, grad) -> None:
        """Step ``steps + 1`` for the whole table, given the gradient of ``table[rows]`` (distinct
        rows; every other row's gradient is zero)."""
        import torch

        beta1, beta2 = self.betas
        with torch.no_grad():
            move, mean, square = self._caught_up(rows)
            self.steps += 1
            t = self.steps
            mean.mul_(beta1).add_(grad, alpha=1 - beta1)
            square.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            self.mean[rows], self.square[rows] = mean, square
            denominator = (square.sqrt() / (1 - beta2 ** t) ** 0.5).add_(self.eps)
            self.table[rows] -= move.addcdiv_(mean, denominator, value=self.lr / (1 - beta1 ** t))
            self.current[rows] = t
            if t >= len(self.partial):
                self.partial = torch.cat([self.partial, torch.zeros_like(self.partial)])
            # Step t's term of S(l, t) for the rows last brought up to date at l = t - 350 .. t - 1.
            first = max(1, t - self.CATCH_UP_TERMS)
            bias_corrections = (1 - beta2 ** t) ** 0.5 / (1 - beta1 ** t)
            self.partial[first:t] += self.ratio_powers[self.CATCH_UP_TERMS - (t - first):] * bias_corrections

    def flush(self) -> None:
        """Bring every row up to the last step, so that the table is dense Adam's."""
        import torch

        with torch.no_grad():
            rows = torch.nonzero((self.current > 0) & (self.current < self.steps)).flatten()
            move, self.mean[rows], self.square[rows] = self._caught_up(rows)
            self.table[rows] -= move
            self.current[rows] = self.steps


# How the table's rows are stepped: "lazy", SparseAdam's rule (a row moves only when a batch
# holds it); "dense", torch Adam's (model2vec's: every row keeps moving with its moments).
TABLE_ADAMS = {"lazy": RowAdam, "dense": CatchUpAdam}


def _tensors(ids: tuple[np.ndarray, np.ndarray]):
    import torch

    flat, lengths = ids
    return torch.from_numpy(flat), torch.from_numpy(np.concatenate([[0], np.cumsum(lengths)]))


def _bag_rows(flat, starts, rows):
    """The pieces of texts ``rows`` as ``EmbeddingBag`` input ``(flat, offsets)``."""
    import torch

    begin, end = starts[rows], starts[rows + 1]
    lengths = end - begin
    offsets = torch.cumsum(lengths, 0) - lengths
    # Each selected text's span of ``flat``, gathered in one indexing operation.
    positions = torch.repeat_interleave(begin - offsets, lengths) + torch.arange(int(lengths.sum()))
    return flat[positions], offsets
