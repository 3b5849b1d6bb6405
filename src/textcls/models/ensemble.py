"""An ensemble of presets: the weighted mean of their probabilities, weights chosen on dev.

Why (issue 19, the practitioner default): on the shared datasets no single cheap model wins
everywhere. TF-IDF + LR, TF-IDF + naive Bayes and the fastText-style bag each beat the others
on some set, and they err on different documents; ``static-finetune`` (MiniLM word-piece
vectors distilled by Model2Vec, fine-tuned with an MLP head) knows what words mean, which the
others learn only from the labelled sentences. By the rule below
(``benchmarks/results/ensemble_members.md``, ``python benchmarks/ensemble_members.py``: trec,
sst2, mr, mpqa, sst5, ag_news, fine-food, reuters-single and 20news, 3 seeds):

- the first three scored 81.10 % on average, against 80.32 for the best of them alone
  (tfidf-lr);
- the fourth member was ``static-lr`` (the same vectors frozen, + LR) until stop 24: 81.57;
- ``static-finetune`` instead gives 82.01, ahead of the ``static-lr`` ensemble on eight of the
  nine sets, for 2-85 s more training; keeping both gives 81.96. ``static-finetune`` alone
  (80.15) is second only to tfidf-lr on average, and 5.4 points behind it on trec.

An earlier study at commit 6648a5b (five sets) also tried the fastText-style bag of unigrams
on the distilled vectors (``fasttext-bag-unigram``, ``--embeddings minilm-static``): +0.10
over the three, and its corpus-chosen lr diverged on reuters-single, so it is not a member.

The rule (a one-level stacking, as Caruana et al. 2004 "Ensemble selection from libraries of
models" select theirs on a hold-out set; the members calibrated first, as Guo et al. 2017 "On
calibration of modern neural networks" calibrate one model):

- every member is fitted on the same train split, and each predicts the dev split;
- ``calibrate``: each member's probabilities get a temperature ``T_m`` of lowest dev log-loss,
  ``q_m = softmax(log p_m / T_m)`` (``sigmoid(logit(p_m) / T_m)`` per class when multi-label),
  searched in [0.05, 20] (a bounded scalar search: one number per member);
- ``pooling``: ``log-linear`` (the default) pools ``softmax(sum_m w_m log q_m)`` (per class,
  ``sigmoid(sum_m w_m logit(q_m))``), a weighted product of the members' distributions;
  ``linear`` pools ``sum_m w_m q_m``;
- the weights ``w`` are the point of the simplex grid of step ``weight_step`` (0.1: 66 points
  for three members, 286 for four) with the lowest dev log-loss of the pool (for multi-label
  data, the mean binary log-loss of every class);
- ties go to the first grid point in lexicographic order, so the choice is deterministic;
- the test probabilities are the pool with the members fitted on train alone (no refit on
  train + dev: the benchmarks give every model the same training documents).

Why calibrated, log-linear pooling (stop 24; the rule until then was ``linear`` without
calibration): the members' probabilities are on different scales. Naive Bayes is overconfident
(its dev temperature on 20news, seed 0: 1.6) and TF-IDF + LR with C chosen for accuracy
underconfident (0.54), so the uncalibrated log-loss favoured naive Bayes on 20news (weight 0.7)
and the ensemble lost to its own TF-IDF + LR member. ``ensemble_members.md`` compares the rules
on the same members and seeds, with a criterion that reads no test label: each rule's
accuracy on one half of dev when fitted on the other half (2-fold, both ways). Over the nine
sets: linear uncalibrated 81.74 % on test (82.35 on dev halves), linear calibrated 81.95
(82.37), log-linear calibrated 82.01 (82.45); on 20news 84.88, 86.35 and 86.41, against 85.43
for tfidf-lr alone.

The same dev split already chose tfidf-lr's C, tfidf-nb's alpha and the neural members' epochs,
so the members' dev log-losses are a little optimistic; the test figures are the check on that.

Log-loss rather than dev accuracy: with a few hundred dev documents, accuracy moves in steps
of 0.1-0.2 points and many weightings tie; the log-loss is smooth and still drops a member
that only adds noise (weight 0), which accuracy cannot tell from a useful one.

This file is plain NumPy: the estimators layer (``estimators.EnsembleEstimator``) fits the
members and hands their dev probabilities to ``choose_weights``; ``announce_member`` is the
line it shows, with progress on, as each member starts fitting.
"""

from __future__ import annotations

import itertools
import math
import sys
from typing import Collection, Sequence

import numpy as np

from ..errors import CheckpointError, ConfigError
from ..recipe import Recipe
from ..validate import check_positive_int, range_check
from .registry import INPUT_KEYS, Preset, register_model

# The smallest probability the log-loss reads, so that a member sure of a wrong class costs a
# large, finite amount instead of an infinite one.
_EPSILON = 1e-12
# The most weightings ``choose_weights`` tries: C(steps + M - 1, M - 1) grows fast with the
# members M (8 members at step 0.1: 19,448), and each costs a pass over the dev probabilities.
MAX_GRID_POINTS = 20_000
# Pooled numbers held at once while the grid is scored (a chunk of grid points, each [N, C]).
_GRID_CHUNK_NUMBERS = 1 << 24
# How the calibrated member distributions are pooled (see the module doc).
POOLINGS = ("log-linear", "linear")
# The temperatures ``calibrate`` searches: far enough to flatten a sure model or sharpen a timid
# one, bounded so that a member that is right everywhere on dev gets a finite temperature.
TEMPERATURE_RANGE = (0.05, 20.0)
# Members of the default: cheap models that win on different datasets, and frozen pretrained
# sentence vectors (see above).
FAST_MEMBERS = ("tfidf-lr", "tfidf-nb", "fasttext-bag", "static-finetune")
# A member that only small corpora get: frozen MiniLM (2 of its 6 layers since stop 34; 3 in
# stops 32-33) + LR, whose encoding time grows with the training word pieces (about 1 s per
# 10,000 at one thread with bf16 on a Zen 4 core and 3 layers, twice that in fp32). Beside
# FAST_MEMBERS (3 seeds; ensemble_members_minilm_encoder.md and _longer.md) the 3-layer member
# lifted the ensemble on every short-text set tried: mpqa 87.37 -> 89.10, trec 90.47 -> 93.73,
# sst2 84.53 -> 85.98, mr 78.29 -> 79.57, sst5 44.30 -> 45.97, and so did it on halves of dev,
# which read no test label (+0.7 to +3.2). The limit is a time budget. Counted on the members'
# training split (after the dev carve; the practitioner suite's seeds) it takes in those five
# (mpqa about 40,500 distinct pieces to mr's 236,000) and ag_news (about 287,000: +0.49 on test
# and +0.93 on halves of dev; ensemble_members_minilm_encoder_news.md), and leaves out fine-food
# (about 325,000), reuters-single and the long-document sets (20news: 2.6M, ~250 s for a member
# that alone scores 77 %). Issue 19 lets the default train in 10x fastText's time, which fits
# these sets in 1-4 s: with 3 layers (and static-finetune's place, stop 34) the default took
# 10.65x on trec and 10.77x on ag_news (practitioner_minilm_3l/, at 8baafe8), so the member has 2 layers
# (SMALL_CORPUS_MEMBERS' preset, minilm_encoder_lr.py). ``--set 'small_corpus_members={}'`` keeps
# the four members; ``--set 'small_corpus_members={"minilm-encoder-lr-3l": 300000}'`` takes the
# 3-layer member (0.6 points more on those six sets, for 1.4x the encoding).
SMALL_CORPUS_PIECES = 300_000
SMALL_CORPUS_MEMBERS = {"minilm-encoder-lr-2l": SMALL_CORPUS_PIECES}
# The member the MiniLM one takes the place of (stop 34): beside the contextual encoder the
# distilled vectors of static-finetune added nothing on test (3 seeds on the six sets under the
# limit: 80.45 % on average without it, 80.46 with it; on halves of dev 79.82 and 80.10,
# ensemble_members_minilm_replaces.md), for a fifth of the members' fit time there.
SMALL_CORPUS_REPLACES = ("static-finetune",)

# The ensemble reads its training data once; its members train by their own recipes.
ENSEMBLE_RECIPE = Recipe(epochs=1)
# The only recipe fields the ensemble itself uses: the seed it gives every member, and the dev
# share it carves (once, for all members) when the data has no dev split.
ENSEMBLE_RECIPE_FIELDS = ("seed", "dev_fraction")

# The only inputs an ensemble has: its members read the texts by their own presets.
ENSEMBLE_INPUTS = {"shape": "flat", "embeddings": None}

ENSEMBLE_PRESETS = [
    Preset(
        "ensemble",
        "ensemble",
        arch={"members": list(FAST_MEMBERS), "small_corpus_members": dict(SMALL_CORPUS_MEMBERS),
              "small_corpus_replaces": list(SMALL_CORPUS_REPLACES), "pooling": "log-linear", "calibrate": True},
        recipe=ENSEMBLE_RECIPE,
        inputs=ENSEMBLE_INPUTS,
        kind="ensemble",
        description="TF-IDF + LR, TF-IDF + naive Bayes, fasttext-bag and static-finetune (distilled MiniLM "
                    "vectors fine-tuned with an MLP head) fitted on the same split (on a corpus of at most "
                    "300,000 MiniLM word pieces, minilm-encoder-lr-2l in static-finetune's place); their "
                    "probabilities, each calibrated by a dev temperature, pooled log-linearly with weights chosen on "
                    "dev (log-loss, simplex grid of step 0.1).",
        paper="textcls practitioner default (issue 19); Caruana et al. 2004; Guo et al. 2017",
    ),
]


@register_model("ensemble", presets=ENSEMBLE_PRESETS)
class ProbabilityEnsemble:
    """The weights of an ensemble and the combination rule (see the module docstring).

    ``members``: preset names (at least two, no ensemble among them); ``small_corpus_members``:
    ``{preset: word pieces}``, members added when the training split holds at most that many
    MiniLM word pieces (``text.embeddings.minilm_word_pieces``; the estimator decides when it
    fits and saves the members it used); ``small_corpus_replaces``: members that leave when one
    of those joins; ``weight_step``: the simplex grid's step,
    ``1 / weight_step`` a whole number of at most 100; ``pooling``: ``log-linear`` or
    ``linear``; ``calibrate``: a dev temperature per member first.
    """

    kind = "ensemble"

    def __init__(self, num_classes: int, *, members: Sequence[str] = FAST_MEMBERS,
                 small_corpus_members: dict[str, int] | None = None,
                 small_corpus_replaces: Sequence[str] | None = None, weight_step: float = 0.1,
                 pooling: str = "log-linear", calibrate: bool = True):
        check_positive_int("num_classes", num_classes)
        if isinstance(members, str) or len(members) < 2 or not all(isinstance(m, str) and m for m in members):
            raise ConfigError(f"parameter 'members' = {members!r} must list at least two preset names")
        if len(set(members)) != len(members):
            raise ConfigError(f"parameter 'members' = {list(members)!r} names a preset twice; list each once")
        range_check("weight_step", weight_step, 0.0, 1.0, low_open=True)
        steps = round(1 / weight_step)
        if abs(steps * weight_step - 1) > 1e-9 or steps > 100:
            raise ConfigError(f"parameter 'weight_step' = {weight_step} must divide 1 into at most 100 equal "
                              "steps (0.1, 0.05, 0.25, ...)")
        small = dict(small_corpus_members or {})
        if not all(isinstance(m, str) and m and m not in members for m in small):
            raise ConfigError(f"parameter 'small_corpus_members' = {small!r} must map preset names that are not "
                              "among 'members' to word-piece counts")
        for name, pieces in small.items():
            check_positive_int(f"small_corpus_members['{name}']", pieces)
        replaces = list(small_corpus_replaces or [])
        if isinstance(small_corpus_replaces, str) or not set(replaces) <= set(members) \
                or len(set(replaces)) >= len(set(members)):
            raise ConfigError(f"parameter 'small_corpus_replaces' = {small_corpus_replaces!r} must list some of "
                              f"'members' ({', '.join(members)}), leaving at least one")
        most = len(members) + len(small)
        points = math.comb(steps + most - 1, most - 1)
        if points > MAX_GRID_POINTS:
            raise ConfigError(f"{most} members at weight_step {weight_step} make {points:,} weightings to "
                              f"try (at most {MAX_GRID_POINTS:,}); use fewer members or a larger weight_step")
        if pooling not in POOLINGS:
            raise ConfigError(f"parameter 'pooling' = {pooling!r} is not one of {', '.join(POOLINGS)}")
        self.num_classes = num_classes
        self.members = list(members)
        self.small_corpus_members = small
        self.small_corpus_replaces = replaces
        self.weight_step = float(weight_step)
        self.pooling = pooling
        self.calibrate = bool(calibrate)

    @staticmethod
    def check_recipe(name: str, recipe: Recipe, given: Collection[str] = ()) -> None:
        """Refuse a recipe override the ensemble would ignore (``--epochs``, ``--lr``, ...): its
        members train by their own presets' recipes. ``given``: the names the user set
        (``Preset.overridden``), refused whatever their values, since a value equal to the
        placeholder ``ENSEMBLE_RECIPE`` (``epochs=1``, the usual quick setting) is ignored as surely
        as any other; a recipe that differs from it is refused too."""
        changed = recipe.changed_fields(ENSEMBLE_RECIPE, ENSEMBLE_RECIPE_FIELDS, given)
        if changed:
            raise ConfigError(f"model '{name}' is an ensemble, whose members train by their own recipes; "
                              f"'{changed[0]}' cannot be set on it (only seed and dev_fraction can): drop it, "
                              "or train a member preset on its own")

    @staticmethod
    def check_inputs(name: str, inputs: dict, given: Collection[str] = ()) -> None:
        """Refuse an input override (``max_length``, ``embeddings``, ``clitics``, ...): the
        members read the texts by their own presets' inputs. ``given`` as for ``check_recipe``:
        ``embeddings=None``, its own value, would not reach the members either."""
        changed = sorted({k for k, v in inputs.items() if ENSEMBLE_INPUTS.get(k, v) != v or k not in ENSEMBLE_INPUTS}
                         | (set(given) & INPUT_KEYS))
        if changed:
            raise ConfigError(f"model '{name}' is an ensemble, whose members read the texts by their own presets; "
                              f"'{changed[0]}' cannot be set on it: drop it, or train a member preset on its own")

    def weight_grid(self) -> np.ndarray:
        """Every weighting of the members on the simplex grid, ``[G, M]``, in lexicographic
        order of the weights (stars and bars: the bar positions give the parts)."""
        steps, members = round(1 / self.weight_step), len(self.members)
        points = []
        for bars in itertools.combinations(range(steps + members - 1), members - 1):
            edges = (-1, *bars, steps + members - 1)
            points.append([edges[i + 1] - edges[i] - 1 for i in range(members)])
        return np.asarray(sorted(points), dtype=np.float64) / steps

    def choose_weights(self, dev_probabilities: Sequence[np.ndarray], dev_targets: np.ndarray,
                       multi_label: bool) -> np.ndarray:
        """Set ``temperatures_`` (ones without ``calibrate``) and return ``weights_`` ``[M]``: the
        grid point of lowest dev log-loss of the pool.

        ``dev_probabilities``: one ``[N, C]`` array per member; ``dev_targets``: ``[N]`` class
        indices, or ``[N, C]`` 0/1 when ``multi_label``."""
        stacked = self._stack(dev_probabilities)
        targets = np.asarray(dev_targets)
        self.multi_label_ = bool(multi_label)
        scores = self._scores(stacked)
        self.temperatures_ = (np.array([_temperature(member, targets, multi_label) for member in scores])
                              if self.calibrate else np.ones(len(self.members)))
        calibrated = scores / self.temperatures_[:, None, None]
        grid = self.weight_grid()
        step = max(1, _GRID_CHUNK_NUMBERS // max(1, calibrated[0].size))
        losses = np.concatenate([_pool_log_loss(self._pool(grid[i:i + step], calibrated), targets, multi_label)
                                 for i in range(0, len(grid), step)])
        best = int(np.argmin(losses))  # the first minimum: ties go to the earlier grid point
        self.weights_ = grid[best]
        self.dev_log_loss_ = float(losses[best])
        return self.weights_

    def restore(self, weights, temperatures=None, *, multi_label: bool = False, dev_log_loss=None) -> None:
        """Set the fitted state a saved run holds; ``temperatures=None``: a run saved before
        calibration, combined by its own rule (linear, uncalibrated)."""
        self.weights_ = np.asarray(weights, dtype=np.float64)
        self.multi_label_, self.dev_log_loss_ = bool(multi_label), dev_log_loss
        if temperatures is None:
            self.pooling, self.calibrate, self.temperatures_ = "linear", False, np.ones(len(self.members))
            return
        self.temperatures_ = np.asarray(temperatures, dtype=np.float64)
        if self.temperatures_.shape != (len(self.members),) or not (self.temperatures_ > 0).all():
            raise CheckpointError(f"the state's temperatures {list(temperatures)} are not {len(self.members)} positive "
                                  "numbers; the run is corrupt")

    def combine(self, probabilities: Sequence[np.ndarray]) -> np.ndarray:
        """The pool of the calibrated members, ``[N, C]`` float32."""
        if not hasattr(self, "weights_"):
            raise ConfigError("this ensemble has no weights yet; fit it (or load a saved run) first")
        scores = self._scores(self._stack(probabilities)) / self.temperatures_[:, None, None]
        return _probabilities(self._pool(self.weights_[None], scores)[0], self.multi_label_).astype(np.float32)

    def _scores(self, stacked: np.ndarray) -> np.ndarray:
        """The members' probabilities as scores a temperature divides: log p (single-label: the
        softmax of ``log p / T`` is the calibrated distribution) or logit p (multi-label)."""
        return _log_odds(stacked, self.multi_label_)

    def _pool(self, weights: np.ndarray, scores: np.ndarray) -> np.ndarray:
        """``[G, N, C]`` pooled scores for ``G`` weightings: log-linear adds the weighted
        calibrated log-probabilities (logits when multi-label); linear mixes the calibrated
        probabilities and returns the log of the mixture (its logit when multi-label)."""
        if self.pooling == "log-linear":
            return np.einsum("gm,mnc->gnc", weights, _normalised(scores, self.multi_label_))
        return _log_odds(np.einsum("gm,mnc->gnc", weights, _probabilities(scores, self.multi_label_)),
                         self.multi_label_)

    def _stack(self, probabilities: Sequence[np.ndarray]) -> np.ndarray:
        if len(probabilities) != len(self.members):
            raise ConfigError(f"the ensemble has {len(self.members)} members but got {len(probabilities)} "
                              "probability arrays; pass one per member, in the members' order")
        arrays = [np.asarray(p, dtype=np.float64) for p in probabilities]
        shapes = {a.shape for a in arrays}
        if len(shapes) != 1 or arrays[0].ndim != 2 or arrays[0].shape[1] != self.num_classes:
            raise ConfigError(f"member probabilities must all be [N, {self.num_classes}]; got shapes "
                              f"{[a.shape for a in arrays]}")
        return np.stack(arrays)


def member_line(index: int, total: int, name: str) -> str:
    """``fitting member 2 of 4: tfidf-nb`` (``index`` counts from 1)."""
    return f"fitting member {index} of {total}: {name}"


def announce_member(index: int, total: int, name: str, progress: bool) -> None:
    """With ``progress`` (the fit's switch, as for the training bars), write ``member_line`` to
    stderr as member ``index`` starts fitting: a member takes seconds to minutes, and the
    classic ones and static-finetune show no bar of their own, so the default model's fit would
    otherwise say nothing for minutes. Through ``tqdm.write``, which keeps a bar on screen whole."""
    if not progress:
        return
    from tqdm.auto import tqdm

    tqdm.write(member_line(index, total, name), file=sys.stderr)


def _log_odds(probabilities: np.ndarray, multi_label: bool) -> np.ndarray:
    """log p (single-label) or logit p (multi-label), p clipped to [eps, 1] (or [eps, 1 - eps]),
    so that a sure member costs a large, finite amount."""
    clipped = np.clip(probabilities, _EPSILON, 1 - _EPSILON if multi_label else 1.0)
    return np.log(clipped) - (np.log1p(-clipped) if multi_label else 0.0)


def _normalised(scores: np.ndarray, multi_label: bool) -> np.ndarray:
    """Calibrated log-probabilities (single-label: log-softmax over the classes; multi-label:
    the logits themselves, each class its own Bernoulli)."""
    if multi_label:
        return scores
    return scores - _logsumexp(scores)


def _probabilities(scores: np.ndarray, multi_label: bool) -> np.ndarray:
    if multi_label:
        return 1 / (1 + np.exp(-scores))
    return np.exp(scores - _logsumexp(scores))


def _logsumexp(scores: np.ndarray) -> np.ndarray:
    top = scores.max(axis=-1, keepdims=True)
    return top + np.log(np.exp(scores - top).sum(axis=-1, keepdims=True))


def _pool_log_loss(pooled: np.ndarray, targets: np.ndarray, multi_label: bool) -> np.ndarray:
    """``[G]`` mean dev log-loss of pooled scores ``[G, N, C]`` (binary per class, multi-label)."""
    if multi_label:
        on = targets.astype(bool)[None]
        # log sigmoid(z) = -log(1 + e^-z), computed stably; the class's side by its target
        signed = np.where(on, pooled, -pooled)
        return np.mean(np.minimum(np.logaddexp(0, -signed), -np.log(_EPSILON)), axis=(1, 2))
    log_p = (pooled - _logsumexp(pooled))[:, np.arange(len(targets)), targets]
    return -np.mean(np.maximum(log_p, np.log(_EPSILON)), axis=1)


def _temperature(scores: np.ndarray, targets: np.ndarray, multi_label: bool) -> float:
    """The temperature of lowest dev log-loss for one member's scores ``[N, C]``."""
    from scipy.optimize import minimize_scalar

    def loss(temperature: float) -> float:
        return float(_pool_log_loss((scores / temperature)[None], targets, multi_label)[0])

    low, high = TEMPERATURE_RANGE
    return float(minimize_scalar(loss, bounds=(low, high), method="bounded", options={"xatol": 1e-4}).x)
