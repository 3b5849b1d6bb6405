"""Checkpoints: what a training writes so that ``resume`` continues it exactly (no pickles).

Layout of ``<run dir>/checkpoint/``: ``model-epochNNNN.safetensors`` (weights after epoch N),
``model-epochNNNN-stepSSSSSS.safetensors`` (after S batches of epoch N + 1),
``optimizer-...safetensors`` alike (optimiser state tensors, flattened as
``"<param index>.<name>"``; none under per-example-sgd, which has no torch optimiser) and
``state.json`` (everything else, plus the SHA-256 of each tensor file). Every file is written by ``artifacts.atomic_write_bytes`` (a temporary name,
fsynced, renamed into place, the folder synced), and ``state.json`` is written last: it is the
commit point, so a crash at any moment (SIGKILL included) leaves the previous complete
checkpoint, and a tensor file that does not match its SHA-256 is refused. The best state is
not copied: ``state.json`` points at the model file of the best epoch, which is kept. An
epoch's checkpoint may be skipped (``recipe.checkpoint_seconds``); when the best epoch's was,
the next checkpoint writes that epoch's model file from the engine's copy of the best state,
so that the best file always holds the best epoch's weights.

Because the engine re-derives every generator's seed from (seed, epoch, step), a checkpoint
needs no generator state: the model, optimiser, scheduler, best state, history, epoch counter
and (mid-epoch) the number of batches done and the epoch's running loss sums.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.optim.lr_scheduler import LambdaLR

from .. import artifacts
from ..errors import CheckpointError
from ..recipe import Recipe
from . import distributed

__all__ = ["CHECKPOINT_DIR", "STATE_FILE", "CHECKPOINT_FORMAT", "RESUMABLE_CHANGES", "Progress", "Position",
           "save_checkpoint", "load_checkpoint", "checkpointed_epochs", "checkpoint_model"]

CHECKPOINT_DIR = artifacts.CHECKPOINT_DIR
STATE_FILE = artifacts.CHECKPOINT_STATE
CHECKPOINT_FORMAT = "textcls-checkpoint/2"  # /2 adds mid-epoch positions
_READABLE_FORMATS = ("textcls-checkpoint/1", CHECKPOINT_FORMAT)
# Recipe fields a resumed run may change: more epochs, a different patience, how often to checkpoint.
RESUMABLE_CHANGES = ("epochs", "patience", "checkpoint_steps", "checkpoint_seconds")
_TENSOR_FILE = re.compile(r"^(model|optimizer)-epoch\d{4,}(-step\d{6,})?\.safetensors$")


@dataclass
class Progress:
    """Everything about the run that is not a tensor: what ``state.json`` stores."""

    history: list[dict[str, Any]] = field(default_factory=list)
    best_epoch: int = 0
    best_score: float | None = None
    best_metrics: dict[str, Any] = field(default_factory=dict)
    bad_epochs: int = 0
    stopped_early: bool = False
    # {"name", "sha256"} of the checkpoint file holding the best state (not stored in "progress").
    best_file: dict | None = None
    # Optimiser steps of the completed epochs (the phase of recipe.checkpoint_steps); with
    # per-example-sgd, one per document.
    steps: int = 0


@dataclass
class Position:
    """How far into the current epoch a checkpoint is: batches done and their running loss."""

    step: int = 0  # batches of epoch len(history) + 1 already trained (0: at an epoch boundary)
    loss_sums: list[float] = field(default_factory=list)  # per rank: sum of loss * batch size
    counts: list[int] = field(default_factory=list)  # per rank: documents trained on
    train_seconds: float = 0.0  # the training time these batches took
    batches: int | None = None  # len(train_loader) when it was written (a consistency check)


def _save_tensors(path: Path, tensors: dict[str, torch.Tensor]) -> str:
    """Write ``tensors`` to ``path`` atomically; return the file's SHA-256."""
    from safetensors.torch import save

    # clone(): safetensors refuses tensors that share storage (tied weights) or are views.
    data = save({k: v.detach().to("cpu").contiguous().clone() for k, v in tensors.items()})
    artifacts.atomic_write_bytes(path, data)
    return artifacts.sha256_bytes(data)


def _flatten_optimizer(optimizer: torch.optim.Optimizer) -> tuple[dict[str, torch.Tensor], dict]:
    sd = optimizer.state_dict()
    tensors, scalars = {}, {}
    for pid, param_state in sd["state"].items():
        for name, value in param_state.items():
            if torch.is_tensor(value):
                tensors[f"{pid}.{name}"] = value
            else:
                scalars.setdefault(str(pid), {})[name] = value
    return tensors, {"param_groups": sd["param_groups"], "scalars": scalars}


def _unflatten_optimizer(tensors: dict[str, torch.Tensor], meta: dict) -> dict:
    state: dict[int, dict] = {}
    for key, value in tensors.items():
        pid, name = key.split(".", 1)
        state.setdefault(int(pid), {})[name] = value
    for pid, values in meta["scalars"].items():
        state.setdefault(int(pid), {}).update(values)
    # JSON turned tuples (betas) into lists; "params" is the one list-valued group entry.
    groups = [{k: (tuple(v) if isinstance(v, list) and k != "params" else v) for k, v in g.items()}
              for g in meta["param_groups"]]
    return {"state": state, "param_groups": groups}


def save_checkpoint(ckpt_dir: Path, model, optimizer, scheduler, recipe: Recipe, task: dict, progress: Progress,
                     position: Position | None = None, *, best_state: dict[str, torch.Tensor] | None = None) -> None:
    """Write the checkpoint after the last epoch of ``progress`` or, given ``position``, mid-epoch.

    ``best_state``: the weights of ``progress.best_epoch``, written to that epoch's model file
    when no checkpoint of that epoch wrote it (``_best_file``)."""
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    epoch = len(progress.history)
    step = position.step if position is not None else 0
    tag = f"epoch{epoch:04d}" + (f"-step{step:06d}" if step else "")
    files = {}
    model_name = f"model-{tag}.safetensors"
    files["model"] = {"name": model_name, "sha256": _save_tensors(ckpt_dir / model_name, model.state_dict())}
    opt_meta = None
    if optimizer is not None:  # None under per-example-sgd, whose model steps itself
        opt_tensors, opt_meta = _flatten_optimizer(optimizer)
        opt_name = f"optimizer-{tag}.safetensors"
        files["optimizer"] = {"name": opt_name, "sha256": _save_tensors(ckpt_dir / opt_name, opt_tensors)}
    progress.best_file = _best_file(ckpt_dir, progress, epoch, step, files["model"], best_state)
    files["best_model"] = progress.best_file
    sched = {k: v for k, v in scheduler.state_dict().items() if k != "lr_lambdas"}
    partial = None
    if step:
        partial = {"loss_sums": position.loss_sums, "counts": position.counts,
                   "train_seconds": position.train_seconds, "batches": position.batches}
    state = {
        "format": CHECKPOINT_FORMAT,
        "epoch": epoch,
        "step": step,
        "global_step": progress.steps + step,
        "partial_epoch": partial,
        "recipe": recipe.to_dict(),
        "task": task,
        "world_size": distributed.world_size(),
        "files": files,
        "optimizer": opt_meta,
        # The schedule's lambdas are rebuilt from the recipe; only the counters are state.
        "scheduler": sched,
        "progress": {
            "history": progress.history,
            "best_epoch": progress.best_epoch,
            "best_score": progress.best_score,
            "best_metrics": progress.best_metrics,
            "bad_epochs": progress.bad_epochs,
            "stopped_early": progress.stopped_early,
        },
    }
    # The commit point. Each tensor file's rename was made durable (the folder synced) as it was
    # written, so state.json never names a file a crash could lose.
    artifacts.atomic_write_bytes(ckpt_dir / STATE_FILE, json.dumps(state, indent=1).encode("utf-8"))
    keep = {f["name"] for f in files.values() if f is not None}
    for path in ckpt_dir.iterdir():
        if (_TENSOR_FILE.match(path.name) and path.name not in keep) or artifacts.is_temporary(path.name):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


def _best_file(ckpt_dir: Path, progress: Progress, epoch: int, step: int, model_file: dict,
               best_state: dict[str, torch.Tensor] | None) -> dict | None:
    """The ``{"name", "sha256"}`` of the file holding the best epoch's weights, ``model-epochNNNN``
    of that epoch: this checkpoint's model file when it is the best epoch's (mid-epoch weights
    never are), the file an earlier checkpoint wrote for it, or, when the best epoch's own
    checkpoint was skipped, one written now from ``best_state``. None before a first epoch ends."""
    best = progress.best_epoch
    if best == 0:
        return None
    if not step and best == epoch:
        return dict(model_file)
    name = f"model-epoch{best:04d}.safetensors"
    if progress.best_file is not None and progress.best_file.get("name") == name:
        return progress.best_file
    if best_state is None:
        raise ValueError(f"the checkpoint of epoch {epoch} needs the best state of epoch {best}, whose own "
                         "checkpoint was not written")
    return {"name": name, "sha256": _save_tensors(ckpt_dir / name, best_state)}


def checkpointed_epochs(ckpt_dir: Path) -> tuple[int, float]:
    """The epochs a checkpoint has completed and their seconds (training and dev passes, as
    the history records them), read without a model: what a resumed run has behind it."""
    state_path = Path(ckpt_dir) / STATE_FILE
    try:
        history = json.loads(state_path.read_text(encoding="utf-8"))["progress"]["history"]
        return len(history), float(sum(row.get("seconds", 0.0) for row in history))
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as err:
        raise CheckpointError(f"{state_path} is corrupt or not a textcls checkpoint ({err}); "
                              f"delete {ckpt_dir} to start over") from None


def checkpoint_model(ckpt_dir: Path) -> str | None:
    """The name of the model (preset) a checkpoint was written for, as ``fit(model_name=...)``
    recorded it in ``state.json``; None when it records none (checkpoints before stop 64, or an
    engine run given no name) or cannot be read."""
    try:
        name = json.loads((Path(ckpt_dir) / STATE_FILE).read_text(encoding="utf-8"))["task"].get("model")
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return name if isinstance(name, str) else None


def _check_model_name(state_path: Path, stored_task: dict, task: dict) -> None:
    """Refuse a checkpoint written for another model (preset), where both name theirs: its
    weights may even fit (two presets of one family), but not its recipe or data settings."""
    stored, current = stored_task.get("model"), task.get("model")
    if isinstance(stored, str) and current is not None and stored != current:
        raise CheckpointError(f"{state_path} was written for model '{stored}' but this run trains '{current}'; "
                              f"resume with model '{stored}', or train '{current}' into another run folder")


def _check_schedule_epochs(state_path: Path, stored, current, done: int) -> None:
    """Refuse a change of ``epochs`` that a schedule carries (``linear-decay``, ``fcsr-eq16``).

    Decision (stop 64): refused, not allowed. Such a schedule's factor for epoch ``e`` is a
    function of ``e`` and of the run's total epochs (linear-decay: ``1 - (e + 0.5) / epochs``),
    so the epochs already checkpointed were trained on the old total's decay, and the epochs
    to come would follow the new one from where it stands: the rate jumps at the resume, and
    the run matches no unbroken run of either length (resume is otherwise bit-identical to
    one). ``epochs`` itself stays in RESUMABLE_CHANGES for every schedule that does not depend
    on it (constant, step, milestones), where more epochs just continue the same rates.
    """
    if not (isinstance(stored, dict) and isinstance(current, dict) and "epochs" in stored and "epochs" in current):
        return
    if stored["epochs"] == current["epochs"] or {**stored, "epochs": None} != {**current, "epochs": None}:
        return
    old, new, name = stored["epochs"], current["epochs"], stored.get("name") or stored.get("type")
    raise CheckpointError(
        f"{state_path}: its learning rate decays over {old} epochs (schedule '{name}'), and the {done} epochs done "
        f"were trained on that decay, so the run cannot change to {new} epochs (the rate would jump and match no "
        f"unbroken run); resume with epochs = {old} (--epochs {old}), or train {new} epochs anew in another run folder")


def load_checkpoint(ckpt_dir: Path, model, optimizer, scheduler, recipe: Recipe, task: dict):
    state_path = ckpt_dir / STATE_FILE
    if not ckpt_dir.is_dir():
        if artifacts.is_saved_run(ckpt_dir.parent):  # a saved run keeps no checkpoint (artifacts.finish_run)
            raise CheckpointError(f"no checkpoint to resume from: {ckpt_dir.parent} holds a finished run (its model is "
                                  "saved there), so there is nothing to resume; load it with "
                                  "Classifier.from_pretrained, or train without resume into another folder")
        raise CheckpointError(f"no checkpoint to resume from: {ckpt_dir} does not exist, so {ckpt_dir.parent} is not "
                              "the folder of an interrupted training; pass the run_dir that training wrote to, or "
                              "run without resume to start a new run")
    if not state_path.is_file():
        raise CheckpointError(f"{state_path} is missing, so the checkpoint is incomplete; run without resume to start over")
    try:
        state = json.loads(state_path.read_text(encoding="utf-8"))
        if state.get("format") not in _READABLE_FORMATS:
            raise ValueError(f"format {state.get('format')!r}")
        files, stored_recipe, stored_task = state["files"], state["recipe"], state["task"]
        saved_progress = state["progress"]
        opt_meta, sched_state = state["optimizer"], state["scheduler"]
        position = _read_position(state)
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as err:
        raise CheckpointError(f"{state_path} is corrupt or not a textcls checkpoint ({err}); delete {ckpt_dir} to start over") from None

    _check_model_name(state_path, stored_task, task)
    current = json.loads(json.dumps(recipe.to_dict()))
    _check_schedule_epochs(state_path, stored_recipe.get("schedule"), current.get("schedule"),
                           len(saved_progress["history"]) if isinstance(saved_progress, dict) else 0)
    for key in sorted(set(current) | set(stored_recipe)):
        if key not in RESUMABLE_CHANGES and current.get(key) != stored_recipe.get(key):
            raise CheckpointError(
                f"{state_path} was written with recipe {key} = {stored_recipe.get(key)!r} but this run has "
                f"{key} = {current.get(key)!r}; resume with the same recipe (only {', '.join(RESUMABLE_CHANGES)} may change)"
            )
    for key in ("multi_label", "num_classes", "label_names"):
        if stored_task.get(key) != task[key]:
            raise CheckpointError(
                f"{state_path} was written for {key} = {stored_task.get(key)!r} but this run has {task[key]!r}; "
                "resume with the same data and model"
            )
    # A checkpoint written before the digest, or a caller that gives none, is not checked.
    if "data" in stored_task and "data" in task and stored_task["data"] != task["data"]:
        raise CheckpointError(
            f"{state_path} was written for other training data (its train and dev records differ from this run's: "
            "another file, or the same split otherwise, e.g. another --split-seed, --test-fraction or "
            "--max-per-split, whose test split may hold records already trained on); resume with the same data "
            f"and options, or delete {ckpt_dir} to start over")

    model_sd = _load_tensors(ckpt_dir, files["model"])
    best_entry = files.get("best_model")
    if best_entry is None:  # a mid-epoch checkpoint of the first epoch
        best_sd = None
    elif best_entry["name"] == files["model"]["name"]:
        best_sd = model_sd
    else:
        best_sd = _load_tensors(ckpt_dir, best_entry)
    model_path = ckpt_dir / files["model"]["name"]
    try:
        model.load_state_dict(model_sd)
    except RuntimeError as err:
        raise CheckpointError(f"{model_path} does not fit this model ({_first_line(err)}); resume with the same model and preset") from None
    _restore_optimizer_and_schedule(ckpt_dir, files, opt_meta, sched_state, optimizer, scheduler)

    progress = Progress(
        history=list(saved_progress["history"]),
        best_epoch=int(saved_progress["best_epoch"]),
        best_score=saved_progress["best_score"],
        best_metrics=saved_progress["best_metrics"],
        bad_epochs=int(saved_progress["bad_epochs"]),
        stopped_early=bool(saved_progress["stopped_early"]),
        best_file=dict(best_entry) if best_entry is not None else None,
        steps=int(state.get("global_step", 0)) - position.step,
    )
    if len(progress.history) != state.get("epoch"):
        raise CheckpointError(f"{state_path} is inconsistent (epoch {state.get('epoch')} but {len(progress.history)} history rows); delete {ckpt_dir} to start over")
    if (best_entry is None) != (progress.best_epoch == 0):
        raise CheckpointError(f"{state_path} is inconsistent (best epoch {progress.best_epoch} but best model file {best_entry!r}); delete {ckpt_dir} to start over")
    best_state = {k: v.clone() for k, v in best_sd.items()} if best_sd is not None else None
    return progress, best_state, position


def _restore_optimizer_and_schedule(ckpt_dir: Path, files: dict, opt_meta, sched_state: dict, optimizer,
                                    scheduler) -> None:
    """Load the optimiser's and the schedule's state. A per-example-sgd run has no optimiser
    (``optimizer`` None; its checkpoints before stop 26 saved a stateless SGD's, not read) and
    an ``EpochRate`` for the schedule, which reads ``LambdaLR``'s state too."""
    if optimizer is not None:
        if files.get("optimizer") is None:
            raise CheckpointError(f"{ckpt_dir / STATE_FILE} has no optimizer state; resume with the recipe it was "
                                  "written with")
        opt_sd = _unflatten_optimizer(_load_tensors(ckpt_dir, files["optimizer"]), opt_meta)
        try:
            optimizer.load_state_dict(opt_sd)
        except (ValueError, KeyError, RuntimeError) as err:
            raise CheckpointError(
                f"{ckpt_dir / files['optimizer']['name']} does not fit this optimizer ({_first_line(err)}); "
                "resume with the same model and recipe"
            ) from None
    try:
        if isinstance(scheduler, LambdaLR):
            scheduler.load_state_dict({**sched_state, "lr_lambdas": [None] * len(scheduler.lr_lambdas)})
        else:
            scheduler.load_state_dict(sched_state)
    except (ValueError, KeyError, TypeError) as err:
        raise CheckpointError(f"{ckpt_dir / STATE_FILE} has a bad scheduler state ({_first_line(err)}); delete "
                              f"{ckpt_dir} to start over") from None


def _read_position(state: dict) -> Position:
    """The mid-epoch position of a checkpoint's ``state.json`` (ValueError/KeyError/TypeError if malformed)."""
    step = state.get("step", 0)  # format /1 checkpoints are all at epoch boundaries
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise ValueError(f"step {step!r}")
    if step == 0:
        return Position()
    partial = state["partial_epoch"]
    sums, counts = partial["loss_sums"], partial["counts"]
    if (not isinstance(sums, list) or not isinstance(counts, list) or not sums or len(sums) != len(counts)
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in sums)
            or not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts)):
        raise ValueError(f"partial_epoch {partial!r}")
    batches = partial.get("batches")
    if batches is not None and (isinstance(batches, bool) or not isinstance(batches, int) or batches < step):
        raise ValueError(f"partial_epoch batches {batches!r} for step {step}")
    return Position(step=step, loss_sums=[float(v) for v in sums], counts=list(counts),
                     train_seconds=float(partial.get("train_seconds", 0.0)), batches=batches)


def _load_tensors(ckpt_dir: Path, entry: dict) -> dict[str, torch.Tensor]:
    from safetensors.torch import load

    path = ckpt_dir / entry["name"]
    if not path.is_file():
        raise CheckpointError(f"{path} is missing (named in {ckpt_dir / STATE_FILE}); restore it or delete {ckpt_dir} to start over")
    data = path.read_bytes()
    if artifacts.sha256_bytes(data) != entry["sha256"]:
        raise CheckpointError(f"{path} is corrupt (its SHA-256 does not match {STATE_FILE}); restore it or delete {ckpt_dir} to start over")
    try:
        return load(data)
    except Exception as err:  # safetensors raises its own error types for a bad header
        raise CheckpointError(f"{path} cannot be read as safetensors ({_first_line(err)}); delete {ckpt_dir} to start over") from None


def _first_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return text if len(text) <= 300 else text[:297] + "..."
