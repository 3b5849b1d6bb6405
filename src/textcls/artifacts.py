"""Run directories: what a trained model is on disk.

```
config.json         preset, architecture, recipe, inputs, label names, pipeline settings, versions
model.safetensors   weights (neural) or fitted arrays (classic); tensors only, loading runs no code
tokenizer.json      the Hugging Face `tokenizers` vocabulary (neural models)
metrics.json        dev and test metrics of the run
epochs.csv          one row per training epoch (written by the engine)
```

Writes are atomic (a temporary file, then ``os.replace``) so a crash never leaves a
half-written file behind. Every read failure is a ``CheckpointError`` naming the file.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np
from safetensors import SafetensorError
from safetensors.numpy import load_file as load_numpy
from safetensors.numpy import save_file as save_numpy

from . import __version__
from .errors import CheckpointError

CONFIG = "config.json"
WEIGHTS = "model.safetensors"
TOKENIZER = "tokenizer.json"
METRICS = "metrics.json"
FORMAT_VERSION = 1


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json(path: Path, obj) -> None:
    atomic_write_bytes(path, (json.dumps(obj, indent=2, allow_nan=False) + "\n").encode())


def read_json(path: Path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: file is missing; is this a textcls run directory (made by `textcls train`)?")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{path}: not valid JSON ({exc}); the run directory is corrupt, retrain or restore it")


def write_arrays(path: Path, arrays: dict[str, np.ndarray]) -> None:
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        save_numpy({k: np.ascontiguousarray(v) for k, v in arrays.items()}, tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def read_arrays(path: Path) -> dict[str, np.ndarray]:
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: file is missing; the run directory is incomplete, retrain or restore it")
    try:
        return load_numpy(str(path))
    except (SafetensorError, OSError, ValueError) as exc:
        raise CheckpointError(f"{path}: cannot read weights ({exc}); the file is corrupt, retrain or restore it")


def write_config(run_dir: Path, config: dict) -> None:
    config = {"format_version": FORMAT_VERSION, "textcls_version": __version__, **config}
    write_json(Path(run_dir) / CONFIG, config)


def read_config(run_dir: Path) -> dict:
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise CheckpointError(f"{run_dir}: no such run directory; pass the folder `textcls train` printed")
    config = read_json(run_dir / CONFIG)
    missing = [k for k in ("model", "kind", "label_names") if k not in config]
    if missing:
        raise CheckpointError(f"{run_dir / CONFIG}: missing key '{missing[0]}'; the file is not a textcls config")
    if config.get("format_version", 0) > FORMAT_VERSION:
        raise CheckpointError(
            f"{run_dir / CONFIG}: format version {config['format_version']} is newer than this textcls "
            f"understands ({FORMAT_VERSION}); upgrade textcls")
    return config
