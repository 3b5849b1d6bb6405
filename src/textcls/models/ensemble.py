"""An ensemble of presets: the weighted mean of their probabilities, weights chosen on dev.

Why (issue 19, the practitioner default): on the shared datasets no single cheap model wins
everywhere. TF-IDF + LR, TF-IDF + naive Bayes and the fastText-style bag each beat the others
on some set, and they err on different documents; ``static-finetune`` (MiniLM word-piece
vectors distilled by Model2Vec, fine-tuned with an MLP head) knows what words mean, which the
others learn only from the labelled sentences. Averaged by the rule below
(``benchmarks/results/ensemble_members.md``, ``python benchmarks/ensemble_members.py``: trec,
sst2, mr, mpqa, sst5, ag_news, fine-food, reuters-single, 3 seeds):

- the first three scored 80.45 % on average, against 79.68 for the best of them alone
  (tfidf-lr);
- the fourth member was ``static-lr`` (the same vectors frozen, + LR) until stop 24: 80.88;
- ``static-finetune`` instead gives 81.35, ahead of the ``static-lr`` ensemble on seven of the
  eight sets (mpqa 86.99 against 87.34), for 2-17 s more training; keeping both adds 0.01.
  ``static-finetune`` alone (79.95) is the best single candidate on average, but 5.4 points
  behind tfidf-lr on trec.

An earlier study at commit 6648a5b (five sets) also tried the fastText-style bag of unigrams
on the distilled vectors (``fasttext-bag-unigram``, ``--embeddings minilm-static``): +0.10
over the three, and its corpus-chosen lr diverged on reuters-single, so it is not a member.

The rule (a one-level stacking with a convex combination, as Caruana et al. 2004 "Ensemble
selection from libraries of models" select theirs on a hold-out set):

- every member is fitted on the same train split, and each predicts the dev split;
- the weights ``w`` are the point of the simplex grid of step ``weight_step`` (0.1: 66 points
  for three members, 286 for four) with the lowest dev log-loss of ``sum_m w_m p_m`` (for multi-label data,
  the mean binary log-loss of every class);
- ties go to the first grid point in lexicographic order, so the choice is deterministic;
- the test probabilities are ``sum_m w_m p_m`` with the members fitted on train alone (no
  refit on train + dev: the benchmarks give every model the same training documents).

The same dev split already chose tfidf-lr's C, tfidf-nb's alpha and fasttext-bag's epoch, so
the members' dev log-losses are a little optimistic; the test figures are the check on that.

Log-loss rather than dev accuracy: with a few hundred dev documents, accuracy moves in steps
of 0.1-0.2 points and many weightings tie; the log-loss is smooth and still drops a member
that only adds noise (weight 0), which accuracy cannot tell from a useful one.

This file is plain NumPy: the estimators layer (``estimators.EnsembleEstimator``) fits the
members and hands their dev probabilities to ``choose_weights``.
"""

from __future__ import annotations

import itertools
import math
from typing import Sequence

import numpy as np

from ..errors import ConfigError
from ..recipe import Recipe
from ..validate import check_positive_int, range_check
from .registry import Preset, register_model

# The smallest probability the log-loss reads, so that a member sure of a wrong class costs a
# large, finite amount instead of an infinite one.
_EPSILON = 1e-12
# The most weightings ``choose_weights`` tries: C(steps + M - 1, M - 1) grows fast with the
# members M (8 members at step 0.1: 19,448), and each costs a pass over the dev probabilities.
MAX_GRID_POINTS = 20_000
# Grid points scored at once on multi-label data (each holds a [N, C] mixture).
_GRID_CHUNK = 64
# Members of the default: cheap models that win on different datasets, and frozen pretrained
# sentence vectors (see above).
FAST_MEMBERS = ("tfidf-lr", "tfidf-nb", "fasttext-bag", "static-finetune")

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
        arch={"members": list(FAST_MEMBERS)},
        recipe=ENSEMBLE_RECIPE,
        inputs=ENSEMBLE_INPUTS,
        kind="ensemble",
        description="TF-IDF + LR, TF-IDF + naive Bayes, fasttext-bag and static-finetune (distilled MiniLM "
                    "vectors fine-tuned with an MLP head) fitted on the same split; their "
                    "probabilities averaged with weights chosen on dev (log-loss, simplex grid of step 0.1).",
        paper="textcls practitioner default (issue 19); Caruana et al. 2004",
    ),
]


@register_model("ensemble", presets=ENSEMBLE_PRESETS)
class ProbabilityEnsemble:
    """The weights of an ensemble and the combination rule (see the module docstring).

    ``members``: preset names (at least two, no ensemble among them); ``weight_step``: the
    simplex grid's step, ``1 / weight_step`` a whole number of at most 100.
    """

    kind = "ensemble"

    def __init__(self, num_classes: int, *, members: Sequence[str] = FAST_MEMBERS, weight_step: float = 0.1):
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
        points = math.comb(steps + len(members) - 1, len(members) - 1)
        if points > MAX_GRID_POINTS:
            raise ConfigError(f"{len(members)} members at weight_step {weight_step} make {points:,} weightings to "
                              f"try (at most {MAX_GRID_POINTS:,}); use fewer members or a larger weight_step")
        self.num_classes = num_classes
        self.members = list(members)
        self.weight_step = float(weight_step)

    @staticmethod
    def check_recipe(name: str, recipe: Recipe) -> None:
        """Refuse a recipe override the ensemble would ignore (``--epochs``, ``--lr``, ...): its
        members train by their own presets' recipes."""
        changed = [f for f in sorted(Recipe.field_names()) if f not in ENSEMBLE_RECIPE_FIELDS
                   and getattr(recipe, f) != getattr(ENSEMBLE_RECIPE, f)]
        if changed:
            raise ConfigError(f"model '{name}' is an ensemble, whose members train by their own recipes; "
                              f"'{changed[0]}' cannot be set on it (only seed and dev_fraction can): drop it, "
                              "or train a member preset on its own")

    @staticmethod
    def check_inputs(name: str, inputs: dict) -> None:
        """Refuse an input override (``max_length``, ``embeddings``, ``clitics``, ...): the
        members read the texts by their own presets' inputs."""
        changed = sorted(k for k, v in inputs.items() if ENSEMBLE_INPUTS.get(k, v) != v or k not in ENSEMBLE_INPUTS)
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
        """Set and return ``weights_`` ``[M]``: the grid point of lowest dev log-loss.

        ``dev_probabilities``: one ``[N, C]`` array per member; ``dev_targets``: ``[N]`` class
        indices, or ``[N, C]`` 0/1 when ``multi_label``."""
        stacked = self._stack(dev_probabilities)
        targets = np.asarray(dev_targets)
        grid = self.weight_grid()
        if multi_label:
            on = targets.astype(bool)[None]
            losses = np.concatenate([
                -np.mean(np.log(np.clip(np.where(on, mixed, 1 - mixed), _EPSILON, 1)), axis=(1, 2))
                for mixed in (np.einsum("gm,mnc->gnc", grid[i:i + _GRID_CHUNK], stacked)
                              for i in range(0, len(grid), _GRID_CHUNK))])
        else:
            # The true class's probability under each weighting: [G, M] @ [M, N], no [G, N, C].
            picked = grid @ stacked[:, np.arange(len(targets)), targets]
            losses = -np.mean(np.log(np.clip(picked, _EPSILON, 1)), axis=1)
        best = int(np.argmin(losses))  # the first minimum: ties go to the earlier grid point
        self.weights_ = grid[best]
        self.dev_log_loss_ = float(losses[best])
        return self.weights_

    def combine(self, probabilities: Sequence[np.ndarray]) -> np.ndarray:
        """``sum_m w_m p_m``, ``[N, C]`` float32."""
        if not hasattr(self, "weights_"):
            raise ConfigError("this ensemble has no weights yet; fit it (or load a saved run) first")
        return np.einsum("m,mnc->nc", self.weights_, self._stack(probabilities)).astype(np.float32)

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
