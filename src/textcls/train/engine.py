"""The training loop: a lean, readable ``fit`` and an order-preserving ``predict_proba``.

The engine knows ``nn.Module``s, DataLoaders and a ``Recipe``; it never imports a model.
Model contract: ``model(batch) -> Output`` with ``.logits [B, C]``, where ``batch`` is a dict
of tensors holding ``labels`` (``[B]`` long, or ``[B, C]`` float multi-hot) and ``index``
(``[B]`` dataset positions). A model may define ``after_optimizer_step()`` (a max-norm
constraint, say); it is called after every optimiser step. A model may also define
``per_example_epoch(examples, order, lr, class_weights, multi_label) -> summed loss``: with
recipe optimizer ``per-example-sgd`` the engine hands it the training set and the epoch's
document order (the loader's own) instead of stepping a torch optimiser on batches, and the
model takes one SGD step per document itself (fastText's loop; ``models/fasttext_sgd.py``).

Epoch by epoch, ``fit``:

1. seeds ``random``, ``numpy`` and ``torch`` from ``(recipe.seed, epoch)`` and calls
   ``set_epoch(epoch)`` on the train loader's sampler, so an epoch's data order depends only
   on the seed and the epoch number;
2. trains one pass (cross-entropy, or BCE-with-logits for multi-label; optional "balanced"
   class weights, gradient clipping, bf16 autocast), with denormal floats flushed to zero
   (``_denormals_flushed``: an Intel CPU computes on them in microcode, up to 4.9x a BiLSTM epoch).
   Before each step (before its batch is fetched) the three generators are re-seeded from
   ``step_seed(recipe.seed, epoch, step)``,
   so a step's dropout masks depend only on the seed, the epoch and the step number; with
   ``recipe.checkpoint_steps = N`` a checkpoint is also written every N optimiser steps
   (counted over the run);
3. evaluates the whole dev set with ``eval.metrics.compute_metrics`` (plus ``loss``), steps
   the per-epoch LR schedule, tracks the best epoch on ``recipe.monitor`` and stops after
   ``recipe.patience`` epochs without improvement;
4. appends a row to ``run_dir/epochs.csv`` and writes ``run_dir/checkpoint/`` when
   ``recipe.checkpoint_seconds`` have passed since the last checkpoint, and after the last
   epoch of the call (``_after_epoch``): a checkpoint costs a write, a hash and an fsync of the
   whole model, which for fasttext-bag's 84 MB table is 40 times its epoch on 600 documents.

At the end the best state is loaded into the model. Because of (1) and (2), a checkpoint
only needs the model, optimiser, scheduler, best state, history, epoch counter and (mid-epoch)
the number of batches done and the epoch's running loss sums: no generator state is saved,
and ``resume=True`` reproduces an uninterrupted run exactly, whichever checkpoint it starts
from and whatever ``checkpoint_steps`` and ``checkpoint_seconds`` were (bit for bit on CPU;
on GPU only as far as the kernels are deterministic). A resume from a checkpoint older than
the last epoch run (one skipped by ``checkpoint_seconds``) trains the later epochs again;
``epochs.csv`` is rewritten from the checkpoint's history first, so it never lists an epoch
twice. A mid-epoch resume fetches and discards the epoch's first batches
(the loader must be deterministic for a given ``set_epoch``, as ``make_loader``'s is).

Checkpoints (``train/checkpoint.py``) are safetensors + JSON with checksums, written
atomically with ``state.json`` last, the commit point; no pickles.

Progress (rank 0, ``progress=True``): a bar over each epoch's batches with the loss of a recent
batch, or, under per-example-sgd, whose epoch is one compiled call, a bar over the epochs.

DDP: run under ``torchrun``; the model is wrapped in ``DistributedDataParallel`` when the
world size is above 1. The train loader must give each rank its slice of every global batch
(``data.batching.make_loader(..., num_replicas=world_size(), rank=rank())``); the dev loader
must cover the whole dev set on every rank (``num_replicas=1``). Every rank evaluates the
full dev set, and rank 0's metrics are then broadcast so that the best-epoch and
early-stopping decisions agree on every rank even if floating point differed. Only rank 0
shows progress, writes ``epochs.csv`` and checkpoints; every rank reads the checkpoint on
resume.
"""

from __future__ import annotations

import contextlib
import csv
import io
import logging
import math
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.optim.optimizer as torch_optimizer
from torch import nn

from .. import artifacts
from ..errors import CheckpointError, ConfigError, DataError
from ..eval.metrics import compute_metrics
from ..recipe import PER_EXAMPLE_SGD, Recipe
from ..validate import check_int
from . import distributed
from .checkpoint import CHECKPOINT_DIR, Position, Progress, load_checkpoint, save_checkpoint
from .optim import EpochRate, build_optimizer, build_scheduler

__all__ = ["FitResult", "fit", "predict_proba", "training_step", "epoch_seed", "step_seed", "CSV_COLUMNS"]

log = logging.getLogger("textcls.train")

EPOCHS_CSV = artifacts.EPOCHS_CSV
CSV_COLUMNS = ("epoch", "lr", "train_loss", "dev_loss", "dev_accuracy", "dev_macro_f1", "seconds")
_MASK64 = (1 << 64) - 1
# The least seconds between two refreshes of the training bar's loss (besides an epoch's last step).
LOSS_REFRESH_S = 0.5


@dataclass
class FitResult:
    """What ``fit`` returns.

    ``best_epoch`` is 1-based; ``best_metrics`` is ``compute_metrics``' dict for that epoch
    plus ``loss`` (dev loss); ``history`` has one dict per epoch run so far (across resumed
    calls): ``epoch``, ``lr``, ``train_loss``, ``dev_<metric>`` for every scalar metric,
    ``train_seconds`` (the training pass) and ``seconds`` (training plus dev evaluation).
    ``train_seconds`` is the sum of ``seconds``; ``epochs_run`` is ``len(history)``.
    """

    best_epoch: int
    best_metrics: dict[str, Any]
    history: list[dict[str, Any]]
    train_seconds: float
    epochs_run: int
    stopped_early: bool


# ----------------------------------------------------------------------------- public API


def fit(
    model: nn.Module,
    train_loader,
    dev_loader,
    recipe: Recipe,
    *,
    multi_label: bool = False,
    num_classes: int,
    label_names: list[str] | None = None,
    class_counts=None,
    run_dir: str | os.PathLike | None = None,
    resume: bool = False,
    progress: bool = True,
    device: str | torch.device = "cpu",
    max_epochs_this_call: int | None = None,
    watch_loaders: dict[str, Any] | None = None,
    model_name: str | None = None,
    data_digest: str | None = None,
) -> FitResult:
    """Train ``model`` with ``recipe``, keep the best epoch on dev, and load it into ``model``.

    Args:
        model: ``model(batch).logits -> [B, num_classes]``; moved to ``device``.
        train_loader: batches with ``labels``; under DDP, this rank's slice of each global batch.
        dev_loader: the whole dev set (with ``labels`` and ``index``), on every rank.
        recipe: optimiser, schedule, epochs, patience, monitor, clipping, class weights, precision.
        multi_label: BCE-with-logits on ``[B, C]`` multi-hot labels instead of cross-entropy.
        num_classes: number of classes ``C``.
        label_names: class names for the metrics (default ``"0"..."C-1"``).
        class_counts: training examples per class (single-label) or positive examples per
            class (multi-label); required when ``recipe.class_weights == "balanced"``.
        run_dir: where ``epochs.csv`` and ``checkpoint/`` go (nothing is written when None).
        resume: continue from ``run_dir/checkpoint`` (which must exist): after its last epoch
            or, with ``recipe.checkpoint_steps``, from the middle of an epoch.
        progress: show a progress bar (rank 0 only).
        device: ``"cpu"``, ``"cuda"``, ... ; under DDP this rank's device follows the backend.
        max_epochs_this_call: stop after this many epochs in this call (the checkpoint then
            lets a later ``resume=True`` call finish the run), e.g. to simulate a crash.
        watch_loaders: named whole-split loaders (``{"test": loader}``) scored after every epoch
            (``_watched_scores``) into its history row and ``epochs.csv``; never read to keep an
            epoch or to stop, and training is unchanged.
        model_name: the model's (preset's) name, which the checkpoint records (``_check_task``).
        data_digest: a digest of the training data (``records_digest`` of train and dev), which the
            checkpoint records and a resume must match: the loaders' sizes alone let a resume go on
            with other records, or the same records split otherwise (test records trained on).

    Raises:
        ConfigError: bad monitor, class weights without counts, loader/world-size mismatch, run_dir of a saved run.
        CheckpointError: ``resume`` with a missing, corrupt or mismatched checkpoint.
    """
    env = distributed.init_from_env(backend="gloo" if torch.device(device).type == "cpu" else None)
    device = _resolve_device(device, env)
    if recipe.optimizer == PER_EXAMPLE_SGD and device.type != "cpu":
        # fastText's loop is compiled for the CPU and updates the tables in host memory.
        log.info("recipe optimizer %s trains on the CPU, not %s", PER_EXAMPLE_SGD, device)
        device = torch.device("cpu")
    task = _check_task(num_classes, label_names, multi_label, model_name, data_digest)
    check_int("max_epochs_this_call", max_epochs_this_call, 0, None, optional=True)
    if resume and run_dir is None:
        raise ConfigError("resume=True needs run_dir (the directory holding checkpoint/); pass run_dir or drop resume")
    higher_is_better = _check_monitor(recipe.monitor, multi_label, task["label_names"])
    _check_loaders(train_loader, dev_loader, env.world_size)
    watch = _check_watch(watch_loaders)
    run = _start(model, train_loader, recipe, task, class_counts, env=env, device=device, run_dir=run_dir,
                 resume=resume, show=progress and env.rank == 0, higher_is_better=higher_is_better, watch=watch)
    _train_epochs(run, train_loader, dev_loader, max_epochs_this_call)
    distributed.barrier()
    if run.best_state is not None:
        model.load_state_dict(run.best_state)
    history = run.progress.history
    return FitResult(
        best_epoch=run.progress.best_epoch,
        best_metrics=run.progress.best_metrics,
        history=history,
        train_seconds=float(sum(r.get("seconds", 0.0) for r in history)),
        epochs_run=len(history),
        stopped_early=run.progress.stopped_early,
    )


@dataclass
class _Run:
    """What every epoch of one ``fit`` call works with, and the progress it makes."""

    model: nn.Module
    train_model: nn.Module  # the model, or its DistributedDataParallel wrapper
    hook: Any  # the model's after_optimizer_step, or None
    clip_params: list  # the trainable parameters, for gradient clipping
    criterion: Any
    loss_weights: np.ndarray | None  # the criterion's class (or positive) weights, for per-example SGD
    optimizer: torch.optim.Optimizer | None  # None under per-example-sgd: the model steps itself
    scheduler: Any  # a LambdaLR, or the EpochRate of per-example-sgd
    recipe: Recipe
    task: dict  # multi_label, num_classes, label_names (and model, when named): what a checkpoint must match
    env: distributed.DistEnv
    device: torch.device
    run_dir: Path | None
    show: bool  # progress bars (rank 0 only)
    higher_is_better: bool
    extra_columns: tuple[str, ...]
    progress: Progress
    position: Position  # where a resumed epoch starts (Position(): at its beginning)
    best_state: dict[str, torch.Tensor] | None
    watch: dict[str, Any] = field(default_factory=dict)  # fit's watch_loaders: scored, never selected on
    # time.monotonic() of the last checkpoint written (at first: when the run was set up)
    last_checkpoint: float = field(default_factory=lambda: time.monotonic())

    @property
    def main(self) -> bool:
        return self.env.rank == 0

    @property
    def ckpt_dir(self) -> Path | None:
        return self.run_dir / CHECKPOINT_DIR if self.run_dir is not None else None


def _check_task(num_classes, label_names, multi_label, model_name, data_digest=None) -> dict:
    """What a checkpoint records of the task and must match on resume; ``model`` (the preset's
    name) and ``data`` (the data's digest) only when given: a resume under another name is refused
    by name, and a model that cannot resume a checkpoint names the model that wrote it."""
    num_classes = check_int("num_classes", num_classes, 1, None)
    label_names = [str(n) for n in label_names] if label_names is not None else [str(i) for i in range(num_classes)]
    if len(label_names) != num_classes:
        raise ConfigError(f"label_names has {len(label_names)} names but num_classes = {num_classes}; pass one name per class")
    task = {"multi_label": bool(multi_label), "num_classes": num_classes, "label_names": label_names}
    if data_digest is not None:
        task["data"] = str(data_digest)
    return task if model_name is None else {**task, "model": str(model_name)}


def _check_watch(watch_loaders) -> dict[str, Any]:
    """``fit``'s watch_loaders as a dict, each name usable as a history column's prefix."""
    if watch_loaders is None:
        return {}
    if not isinstance(watch_loaders, dict):
        raise ConfigError("watch_loaders maps split names to loaders, e.g. {'test': loader}")
    for name, loader in watch_loaders.items():
        if not (isinstance(name, str) and name.isidentifier()) or name in ("dev", "train"):
            raise ConfigError(f"watch_loaders name {name!r}: give a split name such as 'test' (not 'dev' or "
                              "'train', whose columns the history already has)")
        _check_whole_split(loader, name)
    return dict(watch_loaders)


def _start(model, train_loader, recipe: Recipe, task: dict, class_counts, *, env, device, run_dir, resume, show,
           higher_is_better, watch: dict) -> _Run:
    """Move the model, build the loss, optimiser and schedule, load the checkpoint when
    resuming, and (rank 0) start ``epochs.csv``."""
    artifacts.refuse_finished_run(run_dir, resume)
    model.to(device)
    loss_weights = _loss_weights(recipe, task["multi_label"], task["num_classes"], class_counts, train_loader)
    criterion = _make_criterion(task["multi_label"], loss_weights, device)
    if recipe.optimizer == PER_EXAMPLE_SGD:
        _check_per_example(model, recipe, env, train_loader, loss_weights, task["multi_label"])
        optimizer, scheduler = None, EpochRate(recipe)
    else:
        optimizer = build_optimizer(model, recipe)
        scheduler = build_scheduler(optimizer, recipe)
    run_dir = Path(run_dir) if run_dir is not None else None
    progress, best_state, position = Progress(), None, Position()
    if resume:
        progress, best_state, position = load_checkpoint(run_dir / CHECKPOINT_DIR, model, optimizer, scheduler,
                                                         recipe, task)
    extra = _extra_csv_columns(recipe.monitor, task["multi_label"]) + _watched_columns(watch)
    if env.rank == 0 and run_dir is not None:
        run_dir.mkdir(parents=True, exist_ok=True)
        # Rewritten from the history on resume: a crash between the CSV row and the
        # checkpoint must not leave a row for an epoch the checkpoint does not have.
        _write_csv(run_dir / EPOCHS_CSV, progress.history, extra)
    train_model = model
    if env.world_size > 1:
        train_model = nn.parallel.DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None
        )
    hook = getattr(model, "after_optimizer_step", None)
    clip_params = [p for p in model.parameters() if p.requires_grad]
    return _Run(model, train_model, hook, clip_params, criterion, loss_weights, optimizer, scheduler, recipe, task, env,
                device, run_dir, show, higher_is_better, extra, progress, position, best_state, watch)


def _train_epochs(run: _Run, train_loader, dev_loader, max_epochs: int | None) -> None:
    """The epochs of one ``fit`` call: until the recipe's epochs are done, early stopping, or
    ``max_epochs`` epochs in this call; the call's last epoch is always checkpointed."""
    recipe, progress = run.recipe, run.progress
    bar = _epoch_bar(run)
    done = 0
    try:
        while len(progress.history) < recipe.epochs and not progress.stopped_early:
            if max_epochs is not None and done >= max_epochs:
                break
            row = _run_epoch(run, train_loader, dev_loader)
            done += 1
            last = (len(progress.history) >= recipe.epochs or progress.stopped_early
                    or (max_epochs is not None and done >= max_epochs))
            _after_epoch(run, row, last=last)
            if bar is not None:
                bar.set_postfix(train_loss=f"{row['train_loss']:.4f}",
                                **{f"dev_{recipe.monitor}": _shown(row.get(f"dev_{recipe.monitor}"))}, refresh=False)
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()


def _epoch_bar(run: _Run):
    """A bar over the epochs for per-example-sgd, whose epoch is one compiled call with no bar of
    its own (fasttext-bag); None for the batched loop (a bar per epoch) or without progress."""
    if not run.show or run.recipe.optimizer != PER_EXAMPLE_SGD:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=run.recipe.epochs, initial=len(run.progress.history), desc="epochs", unit="epoch",
                leave=False, dynamic_ncols=True)


def _shown(value) -> str:
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def _run_epoch(run: _Run, train_loader, dev_loader) -> dict:
    """Train one epoch (or its rest, after a mid-epoch resume), evaluate on dev, step the
    schedule, track the best epoch and early stopping; returns the epoch's history row."""
    recipe, progress = run.recipe, run.progress
    epoch_index = len(progress.history)  # 0-based: the schedule's and the seed's epoch
    _seed_everything(epoch_seed(recipe.seed, epoch_index))
    _set_sampler_epoch(train_loader, epoch_index)
    lr = float(run.scheduler.get_last_lr()[0])
    start = time.perf_counter()
    with _denormals_flushed():
        if recipe.optimizer == PER_EXAMPLE_SGD:
            train_loss, steps = _per_example_epoch(run, train_loader, lr)
        else:
            train_loss, steps = _train_one_epoch(
                run.train_model, train_loader, run.criterion, run.optimizer, recipe, run.device, run.hook,
                run.clip_params, desc=f"epoch {epoch_index + 1}/{recipe.epochs}", show=run.show,
                base_seed=epoch_seed(recipe.seed, epoch_index), position=run.position, rank=run.env.rank,
                world_size=run.env.world_size, step_offset=progress.steps, on_checkpoint=_step_checkpointer(run),
            )
    carried_seconds, run.position = run.position.train_seconds, Position()
    train_seconds = time.perf_counter() - start + carried_seconds
    metrics = distributed.broadcast_object(_split_metrics(run, dev_loader, "dev"))
    run.scheduler.step()
    seconds = time.perf_counter() - start + carried_seconds
    progress.steps += steps
    _track_best(run, epoch_index, metrics)
    row = {"epoch": epoch_index + 1, "lr": lr, "train_loss": train_loss}
    row.update({f"dev_{k}": v for k, v in metrics.items() if _is_scalar(v) and k not in ("n", "threshold")})
    row.update({"train_seconds": train_seconds, "seconds": seconds})
    row.update(_watched_scores(run))
    progress.history.append(row)
    return row


def _watched_scores(run: _Run) -> dict[str, float | None]:
    """``<name>_accuracy`` and ``<name>_loss`` of the model as it stands, on each of ``run.watch``,
    and the wall and CPU seconds of those passes (``watch_seconds``, ``watch_cpu_seconds``): after
    the dev pass and outside the epoch's seconds, for a diagnosis of "the epoch chosen on test"
    beside the epoch dev chose. The next epoch reseeds itself, so training is unchanged."""
    if not run.watch:
        return {}  # no collective either: every rank agrees there is nothing to score
    scores: dict[str, float | None] = {}
    wall, cpu = time.perf_counter(), time.process_time()
    for name, loader in run.watch.items():
        metrics = _split_metrics(run, loader, name)
        scores.update({f"{name}_accuracy": metrics.get("accuracy"), f"{name}_loss": metrics["loss"]})
    # What the passes cost, so that a benchmark can take them out of the fit's seconds.
    scores.update({"watch_seconds": time.perf_counter() - wall, "watch_cpu_seconds": time.process_time() - cpu})
    return distributed.broadcast_object(scores)


def _split_metrics(run: _Run, loader, split: str) -> dict[str, Any]:
    """``compute_metrics`` of the model as it stands on one whole split, with its mean ``loss``
    (this rank's: the caller broadcasts)."""
    multi_label = run.task["multi_label"]
    probs, y_true, loss = _evaluate(run.model, loader, run.criterion, multi_label, run.recipe.precision, run.device,
                                    split=split)
    metrics = compute_metrics(y_true, probs, run.task["label_names"], multi_label=multi_label)
    metrics["loss"] = loss
    return metrics


def _watched_columns(watch: dict) -> tuple[str, ...]:
    return tuple(f"{name}_{metric}" for name in watch for metric in ("accuracy", "loss"))


def _step_checkpointer(run: _Run):
    """``on_checkpoint`` for ``_train_one_epoch`` when the recipe checkpoints every N steps, else None."""
    if run.ckpt_dir is None or run.recipe.checkpoint_steps is None:
        return None

    def on_checkpoint(step, total, count, seconds, batches):
        sums, counts = _gather_partial(total, count, run.env.world_size, run.env.rank)
        if run.main:
            _save(run, Position(step, sums, counts, seconds, batches))

    return on_checkpoint


def _save(run: _Run, position: Position | None = None) -> None:
    """Write the checkpoint (rank 0): after the last epoch run or, given ``position``, mid-epoch."""
    save_checkpoint(run.ckpt_dir, run.model, run.optimizer, run.scheduler, run.recipe, run.task, run.progress,
                    position, best_state=run.best_state)
    run.last_checkpoint = time.monotonic()


def _track_best(run: _Run, epoch_index: int, metrics: dict) -> None:
    """Keep the best epoch on ``recipe.monitor`` (and its weights); stop after ``patience`` bad epochs."""
    progress = run.progress
    score = metrics.get(run.recipe.monitor)
    improved = _is_better(score, progress.best_score, run.higher_is_better)
    if improved or progress.best_epoch == 0:
        progress.best_epoch = epoch_index + 1
        progress.best_score = score if improved else progress.best_score
        progress.best_metrics = metrics
        run.best_state = _keep_state(run.best_state, run.model.state_dict())
    progress.bad_epochs = 0 if improved else progress.bad_epochs + 1
    if run.recipe.patience is not None and progress.bad_epochs >= run.recipe.patience:
        progress.stopped_early = True


def _after_epoch(run: _Run, row: dict, *, last: bool) -> None:
    """Rank 0 logs the epoch, rewrites ``epochs.csv`` and writes the checkpoint when the call
    ends here (``last``) or ``recipe.checkpoint_seconds`` have passed since the last one.

    Skipping one loses nothing a resume needs: a resume continues from the last checkpoint
    written and trains the epochs after it again, as an unbroken run would (the seeds are the
    epoch's), and the next checkpoint writes the best epoch's weights if its own was skipped."""
    if not run.main:
        return
    recipe = run.recipe
    log.info(
        "epoch %d/%d  lr %.3g  train_loss %.4f  dev_loss %.4f  dev_%s %s  (%.1fs)%s",
        row["epoch"], recipe.epochs, row["lr"], row["train_loss"], row["dev_loss"], recipe.monitor,
        row.get(f"dev_{recipe.monitor}"), row["seconds"], "  stopping early" if run.progress.stopped_early else "",
    )
    if run.run_dir is not None:
        _write_csv(run.run_dir / EPOCHS_CSV, run.progress.history, run.extra_columns)
        if last or time.monotonic() - run.last_checkpoint >= recipe.checkpoint_seconds:
            _save(run)


def predict_proba(
    model: nn.Module,
    loader,
    *,
    multi_label: bool,
    precision: str = "fp32",
    device: str | torch.device = "cpu",
) -> np.ndarray:
    """Class probabilities ``[N, C]`` in dataset order (rows placed by ``batch["index"]``).

    Softmax over classes, or per-class sigmoid when ``multi_label``. Runs in eval mode without
    gradients (the model's train/eval mode is restored afterwards) and moves the model to
    ``device``. ``precision="bf16"`` runs the forward pass under bf16 autocast; the
    probabilities are always float32. The loader must cover every document of its dataset.
    """
    if precision not in ("fp32", "bf16"):
        raise ConfigError(f"precision '{precision}' is not one of fp32, bf16")
    if isinstance(model, nn.parallel.DistributedDataParallel):
        model = model.module
    device = torch.device(device)
    model.to(device)
    probs, _, _ = _evaluate(model, loader, None, multi_label, precision, device)
    return probs


def epoch_seed(seed: int, epoch: int) -> int:
    """The seed of epoch ``epoch`` (0-based) of a run with ``seed``: a SeedSequence mix of the two."""
    mixed = np.random.SeedSequence([int(seed) % 2**63, int(epoch)]).generate_state(1, dtype=np.uint64)[0]
    return int(mixed % 2**63)


def step_seed(seed: int, epoch: int, step: int) -> int:
    """The seed of step ``step`` (0-based, within the epoch) of epoch ``epoch`` of a run with ``seed``."""
    return _mix_step(epoch_seed(seed, epoch), step)


def _mix_step(base: int, step: int) -> int:
    # SplitMix64's finaliser of base + (step + 1) * golden ratio: about a microsecond, where a
    # SeedSequence per step would cost more than a small model's step does.
    z = (int(base) + (int(step) + 1) * 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return (z ^ (z >> 31)) % 2**63


# ----------------------------------------------------------------------------- the loop


def _train_one_epoch(train_model, loader, criterion, optimizer, recipe, device, hook, clip_params, *, desc, show,
                     base_seed, position, rank, world_size, step_offset, on_checkpoint):
    """One pass over ``loader`` (from batch ``position.step`` on); returns (mean train loss, steps taken).

    Each step re-seeds the generators from ``(base_seed, step)`` before fetching its batch.
    ``on_checkpoint(step, total, count, seconds, batches)`` is called on every rank after
    each step whose run-wide number is a multiple of ``recipe.checkpoint_steps``.
    """
    from tqdm.auto import tqdm

    train_model.train()
    try:
        n_batches = len(loader)
    except TypeError:
        n_batches = None
    total, count = _running_sums(position, rank, world_size, n_batches, device)
    every = recipe.checkpoint_steps if on_checkpoint is not None else None
    bar = tqdm(total=n_batches, initial=position.step, desc=desc, leave=False, disable=not show, dynamic_ncols=True)
    start = time.perf_counter()
    shown = -math.inf  # when the bar's loss was last set
    batches = _skip_trained(iter(loader), position.step)
    step = position.step
    try:
        while True:
            # Seeded before the fetch, so whatever the loader draws is fixed by the step too.
            _seed_step(_mix_step(base_seed, step), device)
            batch = next(batches, None)
            if batch is None:
                break
            loss, n = _train_step(train_model, batch, criterion, optimizer, recipe, device, hook, clip_params)
            total += loss.detach().to(total.dtype) * n
            count += n
            step += 1
            bar.update(1)
            # loss.item() waits for the device, so not every step: the first, then every
            # LOSS_REFRESH_S, and the epoch's last (a short epoch would show its first batch's).
            if show and (step == n_batches or time.perf_counter() - shown >= LOSS_REFRESH_S):
                bar.set_postfix(loss=f"{loss.item():.4f}")
                shown = time.perf_counter()
            if every is not None and (step_offset + step) % every == 0:
                on_checkpoint(step, total, count, position.train_seconds + time.perf_counter() - start, n_batches)
    finally:
        bar.close()
    return _mean_train_loss(total, count, recipe, device), step


def _check_per_example(model, recipe: Recipe, env: distributed.DistEnv, train_loader, loss_weights, multi_label) -> None:
    """Refuse what the per-document loop cannot do; then run it over no document, which checks
    the data against the model and compiles (or loads) the loop before any epoch is timed."""
    if not callable(getattr(model, "per_example_epoch", None)):
        raise ConfigError(f"recipe optimizer '{PER_EXAMPLE_SGD}' needs a model that trains itself one document at a "
                          f"time (per_example_epoch); {type(model).__name__} does not; use optimizer sgd")
    if env.world_size > 1:
        raise ConfigError(f"recipe optimizer '{PER_EXAMPLE_SGD}' runs on one process; use optimizer sgd under torchrun")
    if recipe.checkpoint_steps is not None:
        raise ConfigError(f"recipe optimizer '{PER_EXAMPLE_SGD}' checkpoints after each epoch only; "
                          "drop checkpoint_steps")
    model.per_example_epoch(train_loader.dataset, np.zeros(0, dtype=np.int64), 0.0, loss_weights, multi_label)


def _per_example_order(loader) -> np.ndarray:
    """The epoch's document order for per-document SGD: the order ``make_loader``'s bucketed
    sampler batches the documents this epoch (it is seeded by the seed and the epoch alone)."""
    return np.concatenate([np.asarray(list(rows), dtype=np.int64) for rows in loader.batch_sampler])


def _per_example_epoch(run: _Run, loader, lr: float) -> tuple[float, int]:
    """One epoch of the model's own per-document SGD, in ``_per_example_order``; returns (mean
    train loss, documents stepped)."""
    order = _per_example_order(loader)
    run.model.train()
    total = run.model.per_example_epoch(loader.dataset, order, lr, run.loss_weights, run.task["multi_label"])
    return _finite(total / max(len(order), 1), run.recipe), len(order)


def training_step(model, optimizer, recipe: Recipe, *, multi_label: bool = False, device="cpu",
                  loss_weights: np.ndarray | None = None):
    """The step ``fit`` takes on each training batch, as a function ``step(batch) -> loss``: the
    recipe's precision (autocast), the loss in fp32, backward, clipping, the optimiser's update
    and the model's ``after_optimizer_step``, with denormals flushed (``_denormals_flushed``).
    For scripts that time or profile training steps (``textcls speed``,
    ``benchmarks/time_epochs.py``), so that what they time is what trains.
    ``loss_weights`` are the class weights ``fit`` would use (``None``: unweighted, which costs
    the same)."""
    device = torch.device(device)
    criterion = _make_criterion(multi_label, loss_weights, device)
    hook = getattr(model, "after_optimizer_step", None)
    clip_params = [p for p in model.parameters() if p.requires_grad]

    def step(batch) -> torch.Tensor:
        with _denormals_flushed():
            return _train_step(model, batch, criterion, optimizer, recipe, device, hook, clip_params)[0]

    return step


# Below float32's smallest normal number (1.18e-38): zero when the CPU flushes denormals.
_DENORMAL_PROBE = 1e-39


def _flushing_denormals() -> bool:
    """Whether the CPU now flushes denormal floats to zero (torch can set the mode, not read it)."""
    return torch.tensor(_DENORMAL_PROBE).mul(1.0).item() == 0.0


@contextlib.contextmanager
def _denormals_flushed():
    """Train with denormal floats flushed to zero (FTZ/DAZ; ``torch.set_flush_denormal``), then
    restore the mode found.

    Why: gradients that fade back through time reach the denormal range (below 1.2e-38), and an
    Intel Xeon computes on denormals in a slow microcode path. There, with denormals kept, an LSTM's
    training epoch on fdu_mtl/dvd took 4.8x its flushed time, a BiLSTM's 4.9x, the stacked BiLSTM's
    4.6x (1.8-2.3x on apparel's shorter reviews), FCSR's 1.1x, the CNN's and the Transformer's 1.0x
    (benchmarks/denormals.py, benchmarks/results/denormals_intel.md); CSPAN's and HAN's, whose
    recurrences feed attention at every position, and HCAN's (no recurrence) 0.97-1.05x
    (denormals_intel_cspan_full.md, denormals_intel_hcan_full.md). Flushing changed no weight
    there beyond 6e-7: a value below 1.2e-38 moves none (Adam divides by at least eps = 1e-8), so
    no result changes beyond rounding. TensorFlow flushes them on the CPU too. Only the CPU's own
    float unit is affected, never a GPU's."""
    already = _flushing_denormals()
    if not already:
        torch.set_flush_denormal(True)
    try:
        yield
    finally:
        if not already:
            torch.set_flush_denormal(False)


def _train_step(train_model, batch, criterion, optimizer, recipe, device, hook, clip_params):
    """One optimiser step on ``batch``; returns (its mean loss, its number of documents)."""
    batch = _to_device(batch, device)
    labels = _labels(batch, "training")
    with _autocast(recipe.precision, device):
        output = train_model(batch)
    # The loss (and its backward) runs in fp32 on fp32 logits: bf16 covers the model's
    # matmuls only, so the loss value and its gradient are not rounded to 8 mantissa bits.
    loss = criterion(_logits(output).float(), labels)
    _zero_grad(optimizer)
    loss.backward()
    if recipe.grad_clip is not None:
        torch.nn.utils.clip_grad_norm_(clip_params, recipe.grad_clip)
    _optimizer_step(optimizer)
    if hook is not None:
        hook()
    return loss, labels.shape[0]


# For small models torch.optim's per-call Python (profiler ranges, hooks, dispatch) costs as
# much as the update: on MR, fasttext-bag's step spent about 40 us in SGD.step around three
# add_ calls, and its epoch ran 13 % faster with the two functions below.


def _zero_grad(optimizer) -> None:
    """``optimizer.zero_grad(set_to_none=True)``: what it does unless a subclass overrides it."""
    if type(optimizer).zero_grad is not torch.optim.Optimizer.zero_grad:
        optimizer.zero_grad(set_to_none=True)
        return
    for group in optimizer.param_groups:
        for p in group["params"]:
            p.grad = None


def _optimizer_step(optimizer) -> None:
    """``optimizer.step()``; for plain SGD on CPU, its update itself (see ``_plain_sgd``)."""
    if not _plain_sgd(optimizer):
        optimizer.step()
        return
    with torch.no_grad():
        for group in optimizer.param_groups:
            lr = group["lr"]
            for p in group["params"]:
                if p.grad is not None:
                    p.add_(p.grad, alpha=-lr)


def _plain_sgd(optimizer) -> bool:
    """Whether ``optimizer.step()`` would be ``p.add_(p.grad, alpha=-lr)`` for each parameter
    with a gradient and nothing else: ``torch.optim.SGD`` on CPU tensors (where it takes its
    single-tensor path) without momentum, weight decay, maximize, differentiable, foreach,
    fused, a float lr, no step hooks, and after the first real step of the run (the lr
    scheduler checks that one was taken). Anything it cannot see counts as not plain."""
    if type(optimizer) is not torch.optim.SGD or not getattr(optimizer, "_opt_called", False):
        return False
    hooks = (getattr(optimizer, "_optimizer_step_pre_hooks", None), getattr(optimizer, "_optimizer_step_post_hooks", None),
             getattr(torch_optimizer, "_global_optimizer_pre_hooks", None),
             getattr(torch_optimizer, "_global_optimizer_post_hooks", None))
    if any(h is None or len(h) for h in hooks) or getattr(optimizer, "grad_scale", None) is not None:
        return False
    for group in optimizer.param_groups:
        if any(group.get(k, True) for k in ("momentum", "weight_decay", "maximize", "differentiable", "foreach", "fused")):
            return False
        if not isinstance(group["lr"], float) or any(p.device.type != "cpu" for p in group["params"]):
            return False
    return True


def _running_sums(position: Position, rank: int, world_size: int, n_batches: int | None, device):
    """The epoch's running (loss sum, document count) on this rank: zero, or what a mid-epoch
    checkpoint carried (checked against the loader it resumes with)."""
    # float64 keeps a long epoch's running sum exact enough (MPS has no float64).
    total = torch.zeros((), dtype=torch.float32 if device.type == "mps" else torch.float64, device=device)
    count = 0
    if position.step:
        if position.batches is not None and n_batches is not None and position.batches != n_batches:
            raise CheckpointError(
                f"the checkpoint stopped after batch {position.step} of an epoch of {position.batches} batches, but "
                f"this train loader has {n_batches}; resume with the same data, batch size and world size"
            )
        if len(position.loss_sums) == world_size:
            total += position.loss_sums[rank]
            count = position.counts[rank]
        elif rank == 0:  # another world size wrote it: rank 0 carries the whole running sum
            total += math.fsum(position.loss_sums)
            count = sum(position.counts)
    return total, count


def _skip_trained(batches, done: int):
    """``batches`` after the first ``done``, which the checkpoint has already trained on."""
    for _ in range(done):
        if next(batches, None) is None:
            raise CheckpointError(
                f"the checkpoint stopped after batch {done} of the epoch but this train loader has fewer; "
                "resume with the same data and batch size"
            )
    return batches


def _mean_train_loss(total: torch.Tensor, count: int, recipe: Recipe, device) -> float:
    """The epoch's mean training loss over every rank's documents; a diverged loss is an error."""
    stats = torch.tensor([float(total), float(count)], dtype=total.dtype, device=device)
    distributed.all_reduce_sum(stats)
    if stats[1] == 0:
        raise DataError("the train loader yielded no batches; check that the train split has records")
    return _finite(float(stats[0] / stats[1]), recipe)


def _finite(train_loss: float, recipe: Recipe) -> float:
    """``train_loss``, or an error when it diverged."""
    if not math.isfinite(train_loss):
        hint = ("; with per-example-sgd it is the rate of each document's step (fastText's range: 0.05-1)"
                if recipe.optimizer == PER_EXAMPLE_SGD else " or set grad_clip")
        raise ConfigError(
            f"the training loss became {train_loss} (diverged); lower the learning rate (lr = {recipe.lr}){hint}"
        )
    return train_loss


def _gather_partial(total: torch.Tensor, count: int, world_size: int, rank: int) -> tuple[list[float], list[int]]:
    """Every rank's running (loss sum, count), on every rank (a collective: all ranks call it)."""
    if world_size == 1:
        return [float(total)], [int(count)]
    # Each rank fills its own slots; the others add zeros, which keeps every value exact.
    buf = torch.zeros(2 * world_size, dtype=torch.float64, device=total.device)
    buf[rank] = total.to(torch.float64)
    buf[world_size + rank] = float(count)
    distributed.all_reduce_sum(buf)
    values = buf.cpu().tolist()
    return [float(v) for v in values[:world_size]], [int(v) for v in values[world_size:]]


@torch.no_grad()
def _evaluate(model, loader, criterion, multi_label, precision, device, split: str = "dev"):
    """(probs [N,C] float32 in dataset order, labels in dataset order or None, mean loss or None);
    ``split`` names the loader's split in errors."""
    was_training = model.training
    model.eval()
    # Only the probabilities are used here: forward passes skip the explicit attention maps
    # (TextModel.attention_maps; any other nn.Module runs as it is).
    switch = getattr(model, "attention_maps", None)
    maps_off = switch(False) if callable(switch) else contextlib.nullcontext()
    indices, prob_rows, label_rows = [], [], []
    loss_logits, loss_labels = [], []
    try:
        with maps_off:
            for batch in loader:
                batch = _to_device(batch, device)
                if "index" not in batch:
                    raise DataError("a batch has no 'index'; build the loader with data.batching.make_loader so predictions can be put back in dataset order")
                with _autocast(precision, device):
                    output = model(batch)
                logits = _logits(output).float()
                probs = torch.sigmoid(logits) if multi_label else torch.softmax(logits, dim=-1)
                indices.append(batch["index"].cpu())
                prob_rows.append(probs.cpu())
                if criterion is not None:
                    labels = _labels(batch, split)
                    loss_logits.append(logits)
                    loss_labels.append(labels)
                    label_rows.append(labels.cpu())
    finally:
        model.train(was_training)
    if not indices:
        raise DataError("the evaluation loader yielded no batches; check that the split has records")
    index = torch.cat(indices).numpy()
    try:
        n = len(loader.dataset)
    except (AttributeError, TypeError):
        n = int(index.max()) + 1
    probs_all = torch.cat(prob_rows).numpy()
    out = np.zeros((n, probs_all.shape[1]), dtype=np.float32)
    seen = np.zeros(n, dtype=bool)
    # DDP-padded loaders repeat documents with their true index; the rows are identical.
    out[index] = probs_all
    seen[index] = True
    if not seen.all():
        raise DataError(
            f"the evaluation loader yielded {int(seen.sum())} of the {n} documents of its dataset; "
            "evaluate with a loader over the whole dataset (make_loader(..., num_replicas=1))"
        )
    y_true, loss = None, None
    if criterion is not None:
        labels_all = torch.cat(label_rows).numpy()
        y_true = np.zeros((n,) + labels_all.shape[1:], dtype=labels_all.dtype)
        y_true[index] = labels_all
        # One call over the whole split: a class-weighted mean divides by the summed weights of
        # its rows, so per-batch means weighted by rows would depend on how the split was batched.
        loss = float(criterion(torch.cat(loss_logits), torch.cat(loss_labels)))
    return out, y_true, loss


# ----------------------------------------------------------------------------- pieces


def _resolve_device(device, env: distributed.DistEnv) -> torch.device:
    device = torch.device(device)
    if env.world_size > 1:
        if device.type != env.device.type:
            raise ConfigError(
                f"device '{device}' does not match the process group backend '{env.backend}' "
                f"(which runs on {env.device.type}); pass device='{env.device.type}'"
            )
        return env.device
    return device


def _check_monitor(monitor: str, multi_label: bool, label_names: list[str]) -> bool:
    """Validate ``monitor`` before training (not after a first long epoch); True if higher is better."""
    c = len(label_names)
    if multi_label:
        y_true, probs = np.eye(c, dtype=np.int64), np.eye(c, dtype=np.float32)
    else:
        y_true, probs = np.arange(c), np.eye(c, dtype=np.float32)
    names = {k for k, v in compute_metrics(y_true, probs, label_names, multi_label=multi_label).items()
             if _is_scalar(v) and k not in ("n", "threshold")} | {"loss"}
    if monitor not in names:
        from ..errors import close_names

        raise ConfigError(f"recipe parameter 'monitor' = '{monitor}' is not a dev metric; {close_names(monitor, names)}")
    return "loss" not in monitor


def _is_better(score, best, higher_is_better: bool) -> bool:
    if score is None or (isinstance(score, float) and math.isnan(score)):
        return False
    if best is None:
        return True
    return score > best if higher_is_better else score < best


def _is_scalar(value) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def _check_loaders(train_loader, dev_loader, world_size: int) -> None:
    for obj in (getattr(train_loader, "batch_sampler", None), getattr(train_loader, "sampler", None)):
        replicas = getattr(obj, "num_replicas", None)
        if replicas is not None and replicas != world_size:
            raise ConfigError(
                f"the train loader is split for num_replicas = {replicas} but this run has world size {world_size}; "
                "build it with make_loader(..., num_replicas=world_size(), rank=rank())"
            )
    _check_whole_split(dev_loader, "dev")


def _check_whole_split(loader, split: str) -> None:
    """An evaluation loader must hold the whole split on every rank."""
    for obj in (getattr(loader, "batch_sampler", None), getattr(loader, "sampler", None)):
        replicas = getattr(obj, "num_replicas", None)
        if replicas is not None and replicas != 1:
            raise ConfigError(
                f"the {split} loader is split for num_replicas = {replicas}; every rank evaluates the whole {split} "
                "set, so build it with make_loader(..., num_replicas=1)"
            )


def _set_sampler_epoch(loader, epoch: int) -> None:
    done = set()
    for obj in (getattr(loader, "batch_sampler", None), getattr(loader, "sampler", None)):
        if obj is not None and id(obj) not in done and callable(getattr(obj, "set_epoch", None)):
            obj.set_epoch(epoch)
            done.add(id(obj))


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)  # also seeds every CUDA device


def _seed_step(seed: int, device: torch.device) -> None:
    """``_seed_everything`` for every step: only the generators this process trains with.

    (``torch.manual_seed`` costs about 100 us of Python per call, more than a small model's step.)
    """
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.default_generator.manual_seed(seed)
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        torch.cuda.default_generators[index].manual_seed(seed)
    elif device.type == "mps":
        torch.mps.manual_seed(seed)


def _loss_weights(recipe: Recipe, multi_label: bool, num_classes: int, class_counts, train_loader) -> np.ndarray | None:
    """The loss's class weights (single-label) or positive weights (multi-label), or None."""
    if recipe.class_weights != "balanced":
        return None
    if class_counts is None:
        raise ConfigError("recipe class_weights='balanced' needs class_counts (training examples per class); pass class_counts to fit")
    counts = np.asarray(class_counts, dtype=np.float64).reshape(-1)
    if len(counts) != num_classes:
        raise ConfigError(f"class_counts has {len(counts)} entries but num_classes = {num_classes}; pass one count per class")
    if (counts <= 0).any():
        missing = int(np.flatnonzero(counts <= 0)[0])
        raise ConfigError(
            f"class {missing} has no training example, so its 'balanced' weight is undefined; "
            "drop class_weights or add examples of that class"
        )
    if multi_label:
        # BCE's per-label balance: negatives / positives (pos_weight).
        total = float(len(train_loader.dataset))
        return ((total - counts) / counts).astype(np.float32)
    # scikit-learn's "balanced": n_samples / (n_classes * count).
    return (counts.sum() / (num_classes * counts)).astype(np.float32)


def _make_criterion(multi_label: bool, loss_weights: np.ndarray | None, device):
    weight = None if loss_weights is None else torch.tensor(loss_weights, dtype=torch.float32, device=device)
    if multi_label:
        bce = nn.BCEWithLogitsLoss(pos_weight=weight)
        return lambda logits, labels: bce(logits, labels.float())
    return nn.CrossEntropyLoss(weight=weight)


def _autocast(precision: str, device: torch.device):
    if precision == "bf16":
        # Parameters stay fp32 (master weights); autocast only lowers eligible ops to bf16.
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def _to_device(batch, device: torch.device):
    if not isinstance(batch, dict):
        raise DataError(f"a batch is a {type(batch).__name__}, not a dict of tensors; build loaders with data.batching.make_loader")
    if device.type == "cpu" and all(v.is_cpu for v in batch.values() if torch.is_tensor(v)):
        return batch
    non_blocking = device.type == "cuda"
    return {k: v.to(device, non_blocking=non_blocking) if torch.is_tensor(v) else v for k, v in batch.items()}


def _labels(batch: dict, split: str) -> torch.Tensor:
    if "labels" not in batch:
        raise DataError(f"a {split} batch has no 'labels'; the {split} split needs a label for every document")
    return batch["labels"]


def _logits(output) -> torch.Tensor:
    return output.logits if hasattr(output, "logits") else output


def _cpu_copy(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {k: v.detach().to("cpu", copy=True) for k, v in state.items()}


def _keep_state(kept: dict[str, torch.Tensor] | None, state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A CPU copy of ``state``, written into ``kept`` (the last copy) when its tensors match.

    Rewriting memory already held is about 3x cheaper than a fresh copy, whose pages the
    kernel must first hand out and zero: 13 ms against 37 ms for fasttext-bag's 2**21-row
    table, at every epoch that improves. Nothing else holds ``kept`` (checkpoints store
    the best epoch's model file, not this copy)."""
    if kept is None or kept.keys() != state.keys() or any(
            kept[k].shape != v.shape or kept[k].dtype != v.dtype or kept[k].device.type != "cpu"
            for k, v in state.items()):
        return _cpu_copy(state)
    with torch.no_grad():
        for k, v in state.items():
            kept[k].copy_(v)
    return kept


# ----------------------------------------------------------------------------- epochs.csv


def _extra_csv_columns(monitor: str, multi_label: bool) -> tuple[str, ...]:
    extra = ["dev_micro_f1"] if multi_label else []
    if monitor not in ("loss", "accuracy", "macro_f1") and f"dev_{monitor}" not in extra:
        extra.append(f"dev_{monitor}")
    return tuple(extra)


def _csv_columns(extra: tuple[str, ...]) -> list[str]:
    return list(CSV_COLUMNS[:-1]) + list(extra) + [CSV_COLUMNS[-1]]


def _csv_cell(value) -> str:
    if value is None:
        return ""
    return repr(value) if isinstance(value, float) else str(value)


def _write_csv(path: Path, history: list[dict], extra: tuple[str, ...]) -> None:
    """``epochs.csv``: a header and one row per epoch of ``history``, rewritten whole (atomically)."""
    columns = _csv_columns(extra)
    artifacts.remove_temporaries(path.parent, path.name)  # what a process killed while writing it left
    out = io.StringIO(newline="")
    writer = csv.writer(out)
    writer.writerow(columns)
    for row in history:
        writer.writerow([_csv_cell(row.get(c)) for c in columns])
    artifacts.atomic_write_bytes(path, out.getvalue().encode("utf-8"))
