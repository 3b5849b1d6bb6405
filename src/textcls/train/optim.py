"""Optimisers and per-epoch learning-rate schedules built from a ``Recipe``.

Schedules are plain data in the recipe (see ``recipe.py``) and become a ``LambdaLR`` that the
engine steps once per *epoch*; the factor for epoch index ``e`` (0-based: the number of
epochs already completed) is

- ``None``: 1;
- ``step``: ``gamma ** (e // step_size)``;
- ``milestones``: ``gamma ** (number of milestones <= e)`` (as ``torch``'s ``MultiStepLR``);
- ``lambda``: the registered factory's function of ``e``.

Because the factor is a pure function of ``e``, a resumed run rebuilds the same scheduler
from the recipe and only needs its ``last_epoch``.
"""

from __future__ import annotations

import bisect
import logging
from typing import Callable, Iterable

import torch
from torch import nn
from torch.optim.lr_scheduler import LambdaLR

from ..errors import ConfigError
from ..recipe import PER_EXAMPLE_SGD, Recipe, get_lr_lambda

__all__ = ["EpochRate", "build_optimizer", "build_scheduler", "lr_factor", "dense_gradients_unless_supported",
           "sparse_gradients_supported"]

log = logging.getLogger("textcls.train")

# Zeiler (2012) / Kim (2014): Adadelta with decay rate 0.95 and epsilon 1e-6.
ADADELTA_RHO = 0.95
ADADELTA_EPS = 1e-6


def build_optimizer(params: Iterable[torch.Tensor] | nn.Module, recipe: Recipe) -> torch.optim.Optimizer:
    """The recipe's optimiser over the trainable parameters (``requires_grad``) of ``params``.

    ``params`` is an iterable of tensors or an ``nn.Module``. Weight decay (``recipe.weight_decay``)
    applies to every trainable parameter (L2 for adam/sgd/adadelta, decoupled for adamw), as
    in the papers, which do not exempt biases.

    Given a module, its sparse-gradient embedding tables (``nn.Embedding(sparse=True)``, as
    fasttext-bag's) keep their sparse gradients only where the recipe can use them (see
    ``sparse_gradients_supported``); otherwise they are switched to dense gradients here.
    """
    if isinstance(params, nn.Module):
        dense_gradients_unless_supported(params, recipe)
        params = params.parameters()
    trainable = [p for p in params if p.requires_grad]
    if not trainable:
        raise ConfigError("the model has no trainable parameters (all have requires_grad=False); unfreeze at least one layer")
    name, lr, wd = recipe.optimizer, recipe.lr, recipe.weight_decay
    # The fused Adam kernel updates every tensor in one pass; on CPU the per-tensor Python loop
    # of the default implementation took over half of a step for models with large embedding
    # tables (3M parameters: 34.7 ms -> 4.6 ms per step). It needs floating-point parameters on
    # a device with the kernel (CPU, CUDA, MPS); elsewhere the default implementation is used.
    fused = all(p.is_floating_point() and p.device.type in ("cpu", "cuda", "mps") for p in trainable) or None
    if name == "adam":
        return torch.optim.Adam(trainable, lr=lr, betas=tuple(recipe.betas), weight_decay=wd, fused=fused)
    if name == "adamw":
        return torch.optim.AdamW(trainable, lr=lr, betas=tuple(recipe.betas), weight_decay=wd, fused=fused)
    if name == PER_EXAMPLE_SGD:
        # The model steps itself once per document (engine._per_example_epoch, which builds no
        # optimiser: see EpochRate); this plain SGD is for callers that time a batched step.
        return torch.optim.SGD(trainable, lr=lr)
    if name == "sgd":
        return torch.optim.SGD(trainable, lr=lr, momentum=recipe.momentum, weight_decay=wd)
    if name == "adadelta":
        return torch.optim.Adadelta(trainable, lr=lr, rho=ADADELTA_RHO, eps=ADADELTA_EPS, weight_decay=wd)
    # Recipe.__post_init__ already rejects other names; this guards a Recipe built around it.
    raise ConfigError(f"optimizer '{name}' is not one of adam, adamw, sgd, adadelta, {PER_EXAMPLE_SGD}")


def sparse_gradients_supported(recipe: Recipe) -> str | None:
    """None when training with ``recipe`` can take sparse gradients, else the reason it cannot.

    Only plain SGD updates from a sparse gradient (``torch.optim.SGD`` adds the rows it is
    given). Adam, AdamW and Adadelta refuse sparse gradients; SGD's weight decay adds the
    dense weights to the gradient, which torch refuses for a sparse one; momentum would keep a
    dense (or ever-growing sparse) buffer that the checkpoint cannot store as safetensors;
    ``clip_grad_norm_`` has no sparse norm; and DDP's NCCL all-reduce has no sparse kind.
    """
    from . import distributed

    if recipe.optimizer == PER_EXAMPLE_SGD:
        return None  # the model updates its own rows; no torch gradient is taken
    if recipe.optimizer != "sgd":
        return f"optimizer {recipe.optimizer} needs dense gradients"
    if recipe.weight_decay:
        return "SGD weight decay needs dense gradients"
    if recipe.momentum:
        return "SGD momentum needs dense gradients"
    if recipe.grad_clip is not None:
        return "gradient clipping needs dense gradients"
    if distributed.world_size() > 1:
        return "DDP needs dense gradients"
    return None


def dense_gradients_unless_supported(module: nn.Module, recipe: Recipe) -> list[str]:
    """Switch ``module``'s sparse embedding tables to dense gradients when ``recipe`` needs them.

    Returns the names of the tables switched (and logs why). The forward pass is the same
    either way; only the gradient's layout changes, so the training is the same (up to the
    order of floating-point additions).
    """
    reason = sparse_gradients_supported(recipe)
    switched = []
    if reason is None:
        return switched
    for name, sub in module.named_modules():
        if isinstance(sub, (nn.Embedding, nn.EmbeddingBag)) and sub.sparse:
            sub.sparse = False
            switched.append(name)
    if switched:
        log.info("dense gradients for %s: %s", ", ".join(switched), reason)
    return switched


def lr_factor(schedule: dict | None) -> Callable[[int], float]:
    """The schedule's ``epoch index -> lr factor`` function (see the module docstring)."""
    if schedule is None:
        return _constant
    schedule = dict(schedule)
    kind = schedule.pop("type", None)
    if kind == "step":
        step_size = _pop_int(schedule, "step", "step_size")
        gamma = _pop_gamma(schedule, "step")
        _no_extra(schedule, "step")
        return _StepFactor(step_size, gamma)
    if kind == "milestones":
        milestones = schedule.pop("milestones", None)
        if (not isinstance(milestones, (list, tuple)) or not milestones
                or any(isinstance(m, bool) or not isinstance(m, int) or m < 1 for m in milestones)
                or list(milestones) != sorted(milestones)):
            raise ConfigError(
                f"schedule 'milestones' needs 'milestones': a non-empty increasing list of epoch indices >= 1, "
                f"got {milestones!r}"
            )
        gamma = _pop_gamma(schedule, "milestones")
        _no_extra(schedule, "milestones")
        return _MilestoneFactor(list(milestones), gamma)
    if kind == "lambda":
        name = schedule.pop("name", None)
        if not isinstance(name, str):
            raise ConfigError("schedule 'lambda' needs 'name': a name registered with register_lr_lambda")
        try:
            return get_lr_lambda(name, **schedule)
        except TypeError as err:
            raise ConfigError(f"schedule lambda '{name}' rejected its parameters {sorted(schedule)}: {err}") from None
    raise ConfigError(f"schedule type '{kind}' is not one of step, milestones, lambda")


def build_scheduler(optimizer: torch.optim.Optimizer, recipe: Recipe) -> LambdaLR:
    """A per-epoch ``LambdaLR`` for the recipe's schedule; call ``.step()`` once after each epoch."""
    return LambdaLR(optimizer, lr_lambda=lr_factor(recipe.schedule))


class EpochRate:
    """The per-epoch rate of recipe optimizer ``per-example-sgd``, in the place of the optimiser
    and its ``LambdaLR``: the model steps itself once per document (``engine._per_example_epoch``),
    so nothing else needs a torch optimiser.

    Why not ``torch.optim.SGD`` + ``LambdaLR`` (as until stop 25): building any torch optimiser
    imports ``torch._dynamo`` (1.38 s, benchmarks/results/optimizer_import.md), more than
    fastText's whole fit on trec or mpqa (practitioner.md). The
    rate is the schedule's function of the epoch index, as ``LambdaLR`` computes it
    (``recipe.lr * factor(epoch)``), and the state is ``LambdaLR``'s own ``last_epoch``, so a
    checkpoint's ``scheduler`` entry has the same keys either way.
    """

    def __init__(self, recipe: Recipe):
        self.base_lr, self.factor, self.last_epoch = recipe.lr, lr_factor(recipe.schedule), 0

    def get_last_lr(self) -> list[float]:
        """The rate of the epoch about to run (one group), as ``LambdaLR.get_last_lr``."""
        return [self.base_lr * self.factor(self.last_epoch)]

    def step(self) -> None:
        """After each epoch, as ``LambdaLR.step``."""
        self.last_epoch += 1

    def state_dict(self) -> dict:
        return {"base_lrs": [self.base_lr], "last_epoch": self.last_epoch, "_last_lr": self.get_last_lr()}

    def load_state_dict(self, state: dict) -> None:
        """Take ``last_epoch`` from this class's or ``LambdaLR``'s state dict."""
        epoch = state.get("last_epoch")
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
            raise ValueError(f"scheduler last_epoch {epoch!r}")
        self.last_epoch = epoch


def _constant(epoch: int) -> float:
    return 1.0


class _StepFactor:
    def __init__(self, step_size: int, gamma: float):
        self.step_size, self.gamma = step_size, gamma

    def __call__(self, epoch: int) -> float:
        return self.gamma ** (epoch // self.step_size)


class _MilestoneFactor:
    def __init__(self, milestones: list[int], gamma: float):
        self.milestones, self.gamma = milestones, gamma

    def __call__(self, epoch: int) -> float:
        return self.gamma ** bisect.bisect_right(self.milestones, epoch)


def _pop_int(schedule: dict, kind: str, key: str) -> int:
    value = schedule.pop(key, None)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"schedule '{kind}' needs '{key}': an integer >= 1, got {value!r}")
    return value


def _pop_gamma(schedule: dict, kind: str) -> float:
    # torch's StepLR/MultiStepLR default; CSPAN's divide-by-10.
    gamma = schedule.pop("gamma", 0.1)
    if isinstance(gamma, bool) or not isinstance(gamma, (int, float)) or not 0.0 < gamma <= 10.0:
        raise ConfigError(f"schedule '{kind}' parameter 'gamma' = {gamma!r} is outside its allowed range (0, 10]")
    return float(gamma)


def _no_extra(schedule: dict, kind: str) -> None:
    if schedule:
        raise ConfigError(f"schedule '{kind}' has unknown parameter '{sorted(schedule)[0]}'; remove it")
