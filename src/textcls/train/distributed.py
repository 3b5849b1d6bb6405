"""Process-group helpers for DDP launched by ``torchrun`` (``python -m torch.distributed.run``).

textcls never spawns worker processes itself: ``torchrun`` starts one process per device and
sets ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT``;
``init_from_env()`` joins the group they describe. Without those variables (a plain
``python`` run) everything here is a no-op and the process is rank 0 of 1.

Checkpoints are written by rank 0 and read by every rank on resume, so on several machines
the run directory must be on a shared file system.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist

from ..errors import ConfigError

__all__ = ["DistEnv", "init_from_env", "rank", "world_size", "local_rank", "is_main", "is_distributed",
           "barrier", "cleanup", "broadcast_object", "all_reduce_sum"]


@dataclass(frozen=True)
class DistEnv:
    rank: int
    world_size: int
    local_rank: int
    backend: str | None  # None when not distributed
    device: torch.device  # this process's device: cuda:<local_rank> under nccl, else cpu


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"environment variable {name}={value!r} is not an integer; launch with torchrun, which sets it") from None


def init_from_env(backend: str | None = None, timeout_s: float = 1800.0) -> DistEnv:
    """Join the process group described by torchrun's environment variables (idempotent).

    ``backend`` defaults to ``nccl`` when CUDA is available and ``gloo`` otherwise. Under
    nccl the process's CUDA device is set to ``cuda:LOCAL_RANK``.
    """
    size = _env_int("WORLD_SIZE", 1)
    local = _env_int("LOCAL_RANK", 0)
    if dist.is_available() and dist.is_initialized():
        backend = dist.get_backend()
        return DistEnv(dist.get_rank(), dist.get_world_size(), local, backend, _device_for(backend, local))
    if size <= 1:
        return DistEnv(0, 1, 0, None, torch.device("cpu"))
    if backend is None:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend not in ("nccl", "gloo"):
        raise ConfigError(f"distributed backend '{backend}' is not one of nccl, gloo")
    if backend == "nccl":
        if not torch.cuda.is_available():
            raise ConfigError("backend 'nccl' needs CUDA, which is not available here; use backend 'gloo' on CPU")
        torch.cuda.set_device(local)
    dist.init_process_group(backend=backend, init_method="env://", timeout=timedelta(seconds=timeout_s))
    return DistEnv(dist.get_rank(), dist.get_world_size(), local, backend, _device_for(backend, local))


def _device_for(backend: str | None, local: int) -> torch.device:
    return torch.device(f"cuda:{local}") if backend == "nccl" else torch.device("cpu")


def is_distributed() -> bool:
    """True inside an initialised process group of more than one process."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def rank() -> int:
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


def world_size() -> int:
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def local_rank() -> int:
    return _env_int("LOCAL_RANK", 0) if is_distributed() else 0


def is_main() -> bool:
    """Rank 0: the one process that writes logs, checkpoints and progress bars."""
    return rank() == 0


def barrier() -> None:
    if is_distributed():
        if dist.get_backend() == "nccl":
            dist.barrier(device_ids=[torch.cuda.current_device()])
        else:
            dist.barrier()


def broadcast_object(obj, src: int = 0):
    """``obj`` from rank ``src`` on every rank (picklable objects; identity when not distributed)."""
    if not is_distributed():
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=src)
    return box[0]


def all_reduce_sum(tensor: torch.Tensor) -> torch.Tensor:
    """Sum of ``tensor`` over all ranks (in place; identity when not distributed)."""
    if is_distributed():
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return tensor


def cleanup() -> None:
    """Leave the process group (safe to call when none was joined)."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
