"""Training recipes: the optimiser, schedule and loop settings a paper prescribes.

A ``Recipe`` is plain data (JSON round-trip via ``to_dict``/``from_dict``) so that it can be
stored in ``config.json`` and overridden from the CLI (``--lr 1e-4 --epochs 5``).
Learning-rate schedules are named so a checkpoint never stores code:

- ``None``: constant;
- ``{"type": "step", "step_size": k, "gamma": g}``: lr * g ** (epoch // k);
- ``{"type": "milestones", "milestones": [20, 25], "gamma": 0.1}``: CSPAN's divide-by-10;
- ``{"type": "lambda", "name": "<registered name>", **kwargs}``: any per-epoch factor
  registered with ``register_lr_lambda`` (FCSR's eq. 16, for example).

Fields chosen from the data: ``auto = {"rule": "<registered name>", "fields": ["epochs", ...]}``
says that those fields are picked from the training corpus, just before training, by the
function registered with ``register_auto_rule`` (fasttext-bag's ``"fasttext"`` rule picks its
epochs and learning rate from the number and length of the documents). Until then the
fields hold the preset's fallback values, so a recipe is always complete. Overriding one
of them (``--epochs 8``) takes it out of ``fields``: an explicit value always wins.
``Recipe.resolve(n_docs=..., mean_tokens=..., n_classes=...)`` applies the rule and returns
a recipe with ``auto=None`` (what ``config.json`` and the checkpoint then store);
``data.prepare.resolve_recipe(recipe, prepared)`` calls it with a prepared corpus.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Callable, Sequence

from .errors import ConfigError, close_names
from .hardware import cpu_has_native_bf16
from .validate import MAX_SEED, check_int, range_check

_LR_LAMBDAS: dict[str, Callable[..., Callable[[int], float]]] = {}


def register_lr_lambda(name: str):
    """Register ``factory(**kwargs) -> (epoch -> lr factor)`` under ``name``."""

    def deco(factory):
        _LR_LAMBDAS[name] = factory
        return factory

    return deco


def get_lr_lambda(name: str, **kwargs) -> Callable[[int], float]:
    if name not in _LR_LAMBDAS:
        raise ConfigError(f"unknown learning-rate schedule '{name}'; {close_names(name, _LR_LAMBDAS)}")
    return _LR_LAMBDAS[name](**kwargs)


_AUTO_RULES: dict[str, Callable[..., dict[str, Any]]] = {}


def register_auto_rule(name: str):
    """Register ``rule(recipe, *, n_docs, mean_tokens, n_classes, multi_label) -> {field: value}``
    under ``name``.

    ``n_docs``: training documents; ``mean_tokens``: their mean length in tokens (words,
    after the pipeline's truncation); ``n_classes``: classes; ``multi_label``: whether a
    document may have several labels. The rule may return any
    ``Recipe`` fields; ``Recipe.resolve`` keeps those listed in ``auto["fields"]``.
    """

    def deco(rule):
        _AUTO_RULES[name] = rule
        return rule

    return deco


def get_auto_rule(name: str) -> Callable[..., dict[str, Any]]:
    if name not in _AUTO_RULES:
        raise ConfigError(f"unknown recipe rule '{name}'; {close_names(name, _AUTO_RULES)}")
    return _AUTO_RULES[name]


# fastText's loop, one plain SGD step per document taken by the model itself
# (engine._per_example_epoch); only models that define per_example_epoch train with it.
PER_EXAMPLE_SGD = "per-example-sgd"
OPTIMIZERS = ("adam", "adamw", "sgd", "adadelta", PER_EXAMPLE_SGD)
PRECISIONS = ("fp32", "bf16", "auto")

# The largest learning rate a recipe accepts. The bound only catches a slip of the exponent
# (lr=1e5 for 1e-5); it is not a judgement of what trains well. The engine's loss is the
# batch *mean*, so an SGD recipe that reproduces per-example SGD at rate a (fastText, Joulin
# et al. 2017) needs lr = a * batch_size: fastText's tutorial rate a = 1.0 is lr 32 at batch
# 32, and its autotune searches a up to 5, which is lr 1,280 at batch 256. The old bound, 10,
# made fastText's own settings impossible; 10,000 admits a = 5 at batches up to 2,000.
MAX_LR = 10_000.0


@dataclass(frozen=True)
class Recipe:
    optimizer: str = "adam"
    lr: float = 1e-3
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    momentum: float = 0.0
    schedule: dict | None = None
    epochs: int = 10
    batch_size: int = 50
    # Early stopping on the dev metric: stop after `patience` epochs without improvement
    # (None = run all epochs, still keeping the best-on-dev checkpoint).
    patience: int | None = None
    monitor: str = "accuracy"
    grad_clip: float | None = None
    class_weights: str | None = None  # None | "balanced"
    dev_fraction: float = 0.1  # carved from train (stratified, seeded) when no dev split exists
    seed: int = 0
    # "fp32" | "bf16" (autocast) | "auto": bf16 where the device multiplies bf16 in hardware,
    # fp32 elsewhere (resolve_precision; a run saves the resolved value).
    precision: str = "fp32"
    # Fields chosen from the training data by a registered rule (see the module docstring):
    # {"rule": name, "fields": [field, ...]}; None once resolved, or when nothing is automatic.
    auto: dict | None = None
    # Also checkpoint every N optimiser steps (counted over the whole run), not only after each
    # epoch, so that a crash mid-epoch loses at most N steps. None: after each epoch only. It
    # never changes the result (the engine re-seeds every step), so a resumed run may change it.
    checkpoint_steps: int | None = None
    # The least seconds between the checkpoints written after epochs: an epoch's checkpoint is
    # written when this long has passed since the last checkpoint (or since the fit call began
    # training), and always after the last epoch of a fit call. Epochs of a minute or more are
    # all checkpointed; a short run's epochs, where writing a large model would cost more than
    # the epoch (fasttext-bag's 84 MB table, 0.4 s, after 10 ms epochs), are not all: a kill then
    # redoes the epochs after the last checkpoint, which equals an unbroken run all the same.
    # 0: after every epoch. It never changes the result, so a resumed run may change it.
    checkpoint_seconds: float = 60.0

    def __post_init__(self):
        check = range_check
        if self.optimizer not in OPTIMIZERS:
            raise ConfigError(f"optimizer '{self.optimizer}' is not one of {', '.join(OPTIMIZERS)}")
        check("lr", self.lr, 0.0, MAX_LR, low_open=True)
        check("weight_decay", self.weight_decay, 0.0, 1.0)
        check("momentum", self.momentum, 0.0, 1.0)
        check("epochs", self.epochs, 1, 100000)
        check("batch_size", self.batch_size, 1, 1 << 20)
        check("dev_fraction", self.dev_fraction, 0.0, 0.9, low_open=True)
        check_int("seed", self.seed, 0, MAX_SEED)
        if self.patience is not None:
            check("patience", self.patience, 1, 100000)
        if self.checkpoint_steps is not None:
            check_int("checkpoint_steps", self.checkpoint_steps, 1, 1 << 40)
        check("checkpoint_seconds", self.checkpoint_seconds, 0.0, 1e9)
        if self.grad_clip is not None:
            check("grad_clip", self.grad_clip, 0.0, 1e6, low_open=True)
        if self.precision not in PRECISIONS:
            raise ConfigError(f"precision '{self.precision}' is not one of {', '.join(PRECISIONS)}")
        if self.optimizer == PER_EXAMPLE_SGD:
            extras = {"momentum": self.momentum, "weight_decay": self.weight_decay, "grad_clip": self.grad_clip,
                      "precision": self.precision == "bf16"}
            unsupported = [name for name, value in extras.items() if value]
            if unsupported:
                raise ConfigError(f"recipe optimizer '{PER_EXAMPLE_SGD}' is plain SGD in fp32; drop {unsupported[0]} "
                                  "or use optimizer sgd")
        if self.class_weights not in (None, "balanced"):
            raise ConfigError(f"class_weights '{self.class_weights}' is not one of none, balanced")
        if self.schedule is not None:
            kind = self.schedule.get("type")
            if kind not in ("step", "milestones", "lambda"):
                raise ConfigError(f"schedule type '{kind}' is not one of step, milestones, lambda")
        if self.auto is not None:
            _check_auto(self.auto)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["betas"] = list(self.betas)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Recipe":
        d = dict(d)
        if "betas" in d:
            d["betas"] = tuple(d["betas"])
        return cls(**d)

    def with_overrides(self, **overrides) -> "Recipe":
        names = {f.name for f in fields(self)}
        unknown = [k for k in overrides if k not in names]
        if unknown:
            raise ConfigError(f"unknown recipe parameter '{unknown[0]}'; {close_names(unknown[0], names)}")
        if "betas" in overrides:
            overrides["betas"] = tuple(overrides["betas"])
        if self.auto is not None and "auto" not in overrides:
            # An explicit value beats the data's choice: it leaves the rule's fields.
            kept = [f for f in self.auto["fields"] if f not in overrides]
            if kept != list(self.auto["fields"]):
                overrides["auto"] = {**self.auto, "fields": kept} if kept else None
        return replace(self, **overrides)

    def resolve(self, *, n_docs: int, mean_tokens: float, n_classes: int, multi_label: bool = False) -> "Recipe":
        """This recipe with its ``auto`` fields chosen from the training corpus, and ``auto=None``.

        A schedule that carries its own ``epochs`` (``linear-decay``) follows a chosen
        ``epochs``. A recipe without ``auto`` comes back unchanged.
        """
        if self.auto is None:
            return self
        rule = get_auto_rule(self.auto["rule"])
        chosen = rule(self, n_docs=int(n_docs), mean_tokens=float(mean_tokens), n_classes=int(n_classes),
                      multi_label=bool(multi_label))
        updates = {k: v for k, v in chosen.items() if k in self.auto["fields"]}
        schedule = self.schedule
        if "epochs" in updates and isinstance(schedule, dict) and "epochs" in schedule and "schedule" not in updates:
            updates["schedule"] = {**schedule, "epochs": updates["epochs"]}
        return replace(self, **updates, auto=None)

    def resolve_precision(self, device_type: str, cuda_bf16: bool = False) -> "Recipe":
        """This recipe with ``precision="auto"`` made concrete for a device: ``bf16`` on a CPU
        with native bf16 matmul (``hardware.cpu_has_native_bf16``: AMX or AVX-512 BF16) or a
        CUDA device that supports it (``cuda_bf16``), else ``fp32``; always ``fp32`` for the
        per-example loop, which has no autocast. Other precisions come back unchanged."""
        if self.precision != "auto":
            return self
        native = cuda_bf16 if device_type == "cuda" else device_type == "cpu" and cpu_has_native_bf16()
        return replace(self, precision="bf16" if native and self.optimizer != PER_EXAMPLE_SGD else "fp32")

    @staticmethod
    def field_names() -> set[str]:
        return {f.name for f in fields(Recipe)}

    def changed_fields(self, base: "Recipe | None", allowed: Sequence[str] = (), given=()) -> list[str]:
        """The fields, in name order, where this recipe differs from ``base`` (None: no base to
        compare with) or that were ``given`` (the names a user set, ``Preset.overridden``, whatever
        their values), ``allowed`` aside: what a model that reads only ``allowed`` of its recipe
        would silently ignore."""
        return [f for f in sorted(Recipe.field_names()) if f not in allowed
                and (f in given or base is not None and getattr(self, f) != getattr(base, f))]


def _check_auto(auto) -> None:
    names = {f.name for f in fields(Recipe)} - {"auto", "seed"}
    if not isinstance(auto, dict) or set(auto) != {"rule", "fields"} or not isinstance(auto["rule"], str):
        raise ConfigError(f"recipe parameter 'auto' = {auto!r} must be None or {{'rule': <name>, 'fields': [<field>, ...]}}")
    chosen = auto["fields"]
    if not isinstance(chosen, (list, tuple)) or not chosen or any(f not in names for f in chosen):
        bad = next((f for f in chosen if f not in names), chosen) if isinstance(chosen, (list, tuple)) else chosen
        raise ConfigError(f"recipe parameter 'auto' names field {bad!r}, which a rule cannot choose; "
                          f"name some of {', '.join(sorted(names))}")
