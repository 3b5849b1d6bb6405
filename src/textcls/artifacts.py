"""Files on disk: the one atomic writer, and what a trained model's run directory holds.

```
config.json         preset, architecture, recipe, inputs, label names, pipeline settings, versions
model.safetensors   weights (neural) or fitted arrays (classic); tensors only, loading runs no code
tokenizer.json      the Hugging Face `tokenizers` vocabulary (neural models)
metrics.json        dev and test metrics of the run
epochs.csv          one row per training epoch (written by the engine)
checkpoint/         the resume checkpoint while a training runs (train/checkpoint.py)
```

Every file textcls writes (run folders, checkpoints, benchmark reports, plots) goes through
``atomic_write_bytes``: a temporary file in the target folder, synced, renamed over the target
with ``os.replace``, then the folder synced; so a crash never leaves a half-written file behind,
and the file gets the user's umask. config.json records the SHA-256 of model.safetensors
(``weights_sha256``), checked on load. Every read failure is a ``CheckpointError`` naming the file.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import os
import re
import shutil
import stat
import sys
import tempfile
from pathlib import Path

import numpy as np
from safetensors import SafetensorError
from safetensors.numpy import load as load_numpy_bytes
from safetensors.numpy import save as save_numpy_bytes

from . import __version__
from .errors import CheckpointError, ConfigError, DataError, RunFolderError
from .validate import check_no_symlink_loop, is_number

try:
    import fcntl as _fcntl
except ImportError:  # Windows: a staging folder gets no lock file, so no other save ever deletes it
    _fcntl = None

CONFIG = "config.json"
WEIGHTS = "model.safetensors"
TOKENIZER = "tokenizer.json"
METRICS = "metrics.json"
EPOCHS_CSV = "epochs.csv"
CHECKPOINT_DIR = "checkpoint"
CHECKPOINT_STATE = "state.json"  # the checkpoint's commit point: it names the tensor files to load
# The files a run folder holds or a saved run writes (checkpoint/ is a folder: everything in it).
RUN_FILES = (CONFIG, WEIGHTS, TOKENIZER, METRICS, EPOCHS_CSV)
# 2: the preset's own to_dict() at the top of config.json (with its name, description, paper) and
# the estimator's state under "state"; 1: vocab_size / pipeline / classic_state at the top.
FORMAT_VERSION = 2
# A multi-label run's decision threshold when its config.json saves none (see run_threshold).
DEFAULT_THRESHOLD = 0.5
# The data reader's default task column (data/readers.py's TASK_FIELD, which imports datasets): a run
# trained with another one, or None (no task read), saves it in config.json as "task_column".
DEFAULT_TASK_COLUMN = "task"
# config.json "dataset" of a run fitted on Python lists (Classifier.fit(X, y)): no file or folder.
LISTS_DATASET = "user-data"
# What atomic_write_bytes' temporary files are called (".<target>.<random>.tmp"), and what the
# engine's were before it used it ("<target>.tmp-<pid>"): a killed write leaves one behind.
_TEMPORARY = re.compile(r"^(\..+\.[A-Za-z0-9_]+\.tmp|.+\.tmp-\d+)$")
# staged_run's folder is made as ".claiming.<random>.tmp", locked through its STAGING_LOCK file and
# only then renamed ".saving.<random>.tmp" (both _TEMPORARY's names): a later save deletes a
# ".saving.*.tmp" folder whose lock it can take, and never looks at a ".claiming." one (which is
# also what an unlocked save keeps, where the filesystem takes no locks).
_SAVING, _CLAIMING = ".saving.", ".claiming."
STAGING_LOCK = ".staging.lock"
# What flock raises where the filesystem takes no locks at all: a save there goes on unlocked.
_NO_LOCKS = frozenset({errno.ENOLCK, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EINVAL})
# The stagings this process holds: over NFS, flock is a POSIX lock, which the process's own second
# lock attempt would get, and whose close would drop the owner's lock.
_OWN_STAGINGS: set[str] = set()


def _umask() -> int:
    """The process umask, read without changing it where the OS allows (Linux)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # no read-only query elsewhere: set and restore at once
    os.umask(mask)
    return mask


def _fsync_dir(directory: Path) -> None:
    """Make a rename inside ``directory`` durable (POSIX); a no-op where directories cannot be opened."""
    if not hasattr(os, "O_DIRECTORY"):
        return
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems refuse fsync on a directory; the file itself is synced
    finally:
        os.close(fd)


def _chmod_like_open(fd: int, name: str) -> None:
    mode = 0o666 & ~_umask()
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, mode)
        else:  # Windows
            os.chmod(name, mode)
    except OSError:
        pass  # filesystems without POSIX modes (some network mounts) refuse chmod and ignore modes


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` all or nothing: a synced temporary file, then ``os.replace``.

    The file gets the permissions a plain ``open(path, "w")`` would give (``0o666`` less the
    umask), not ``mkstemp``'s private ``0o600``. What ``path`` is stays what it is
    (``_write_target``): a symlink's target is replaced and the link kept, and a device, a FIFO
    or this process's /dev/stdout is written in place (a rename would put a regular file there)."""
    path = Path(path)
    if path.is_dir():
        # os.replace would fail naming the temporary file, which the user never asked for.
        raise DataError(f"{path}: is a folder; give a file path to write to")
    target, in_place = _write_target(path)
    if in_place:
        _write_in_place(path, data)
        return
    path = target
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as err:
        err.filename = str(path)  # the message names the file asked for, not the temporary one
        raise
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            _chmod_like_open(fh.fileno(), tmp)
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def _write_target(path: Path) -> tuple[Path, bool]:
    """Where ``atomic_write_bytes`` puts ``path``'s new bytes, and whether in place (no temporary file).

    A symlink is followed to its final target, which is replaced atomically: renaming over the
    link would turn it into a regular file and leave its target as it was. A path that exists and
    is not a regular file (a character device such as /dev/null or /dev/full, a FIFO) is written
    in place, as ``open(path, "wb")`` would: a rename would replace the device or pipe itself (as
    root, /dev/full became a regular file). So is a path through /proc/<pid>/fd (/dev/stdout,
    /dev/fd/N, also when it is a shell's redirection to a regular file): it names an open file,
    not a path to replace."""
    if _open_file_link(path) is not None:
        return path, True
    try:
        mode = os.stat(path).st_mode  # follows links
    except OSError as err:
        if err.errno == errno.ELOOP:  # a symlink loop: open() refuses it too, and a rename would replace the link
            raise
        mode = None  # missing (or a dangling link: open() would create its target too)
    if mode is not None and not stat.S_ISREG(mode):
        return path, True
    if path.is_symlink():
        return Path(os.path.realpath(path)), False
    return path, False


def _open_file_link(path: Path) -> Path | None:
    """The /proc/<pid>/fd/<n> link that ``path`` is or leads to through symlinks, or None."""
    current = Path(os.path.abspath(path))
    for _ in range(40):  # the kernel's own limit on links followed
        if Path(os.path.realpath(current.parent)).match("/proc/*/fd"):
            return current
        if not current.is_symlink():
            return None
        current = Path(os.path.abspath(os.path.join(current.parent, os.readlink(current))))
    return None


def _write_in_place(path: Path, data: bytes) -> None:
    """Write ``data`` into the device, FIFO or open file ``path`` names, without staging. This
    process's own descriptor (/dev/stdout) is written through, after Python's buffered streams are
    flushed, so the bytes land where the process's own output goes and in order, not over it."""
    link = _open_file_link(path)
    own = link is not None and os.path.realpath(link.parent) == os.path.realpath(f"/proc/{os.getpid()}/fd")
    try:
        if own and link.name.isdigit():
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            view = memoryview(data)
            while view:
                view = view[os.write(int(link.name), view):]
            return
        if stat.S_ISFIFO(os.stat(path).st_mode):
            _write_fifo(path, data)
            return
        with open(path, "wb") as fh:
            fh.write(data)
    except OSError as err:
        err.filename = err.filename or str(path)  # /dev/full's ENOSPC names no file by itself
        raise


def _write_fifo(path: Path, data: bytes) -> None:
    """A FIFO is opened without blocking, so one that nothing reads is an error at once (ENXIO),
    not a write that waits forever; with a reader, the writes block as a pipe's do."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as err:
        if err.errno == errno.ENXIO:
            raise OSError(errno.ENXIO, "a FIFO that no process reads; start its reader first, or write to a file",
                          str(path)) from None
        raise
    try:
        os.set_blocking(fd, True)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def is_temporary(name: str) -> bool:
    """Whether ``name`` is a temporary file an interrupted ``atomic_write_bytes`` left behind."""
    return _TEMPORARY.match(name) is not None


def remove_temporaries(folder: Path, target: str | None = None) -> None:
    """Delete what killed writes left in ``folder``: the temporaries of ``target`` (a file name),
    or all of them. Only for a folder this process owns (a locked run folder, its checkpoint)."""
    folder = Path(folder)
    if not folder.is_dir():
        return
    for path in folder.iterdir():
        name = path.name
        if is_temporary(name) and (target is None or name.startswith(f".{target}.") or name.startswith(f"{target}.tmp-")):
            if path.is_dir() and not path.is_symlink():  # staged_run's folder
                shutil.rmtree(path, ignore_errors=True)
                continue
            try:
                path.unlink()
            except FileNotFoundError:
                pass


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    """The SHA-256 (hex) of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def check_json(obj, where: str) -> None:
    """A ConfigError naming what ``write_json`` would refuse in ``obj`` (a value JSON cannot hold,
    NaN or Inf), raised before any file is written."""
    try:
        json.dumps(obj, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: {exc}; labels and settings must be text, numbers (finite) or true/false")


def write_json(path: Path, obj) -> None:
    atomic_write_bytes(path, (json.dumps(obj, indent=2, allow_nan=False) + "\n").encode())


def write_report(stem: Path, result: dict, markdown: str) -> tuple[Path, Path]:
    """A benchmark's output pair: ``<stem>.json`` (``result``) and ``<stem>.md`` (``markdown``)."""
    stem = Path(stem)
    paths = stem.with_suffix(".json"), stem.with_suffix(".md")
    write_json(paths[0], result)
    atomic_write_bytes(paths[1], markdown.encode("utf-8"))
    return paths


def write_figure(path: Path, figure, **savefig) -> Path:
    """Write a matplotlib ``figure`` to ``path`` as a PNG, atomically (``savefig`` options pass on)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", **savefig)
    atomic_write_bytes(path, buffer.getvalue())
    return Path(path)


def read_json(path: Path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: file is missing; is this a textcls run directory (made by `textcls train`)?")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{path}: not valid JSON ({exc}); the run directory is corrupt, retrain or restore it")


def write_arrays(path: Path, arrays: dict[str, np.ndarray]) -> str:
    """Write ``arrays`` as safetensors, atomically; returns the SHA-256 (hex) of the bytes written."""
    data = save_numpy_bytes({k: np.ascontiguousarray(v) for k, v in arrays.items()})
    atomic_write_bytes(path, data)
    return sha256_bytes(data)


def read_arrays(path: Path, sha256: str | None = None) -> dict[str, np.ndarray]:
    """The arrays of a safetensors file; with ``sha256`` (the digest ``write_arrays`` returned,
    as recorded in config.json), the file must match it."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: file is missing; the run directory is incomplete, retrain or restore it")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot read weights ({exc.strerror or exc}); check the file's permissions")
    if sha256 is not None and sha256_bytes(data) != sha256:
        raise CheckpointError(
            f"{path} does not match the checksum in {CONFIG}; the file is corrupt or was changed, "
            "retrain or restore it")
    try:
        return load_numpy_bytes(data)
    except (SafetensorError, OSError, ValueError) as exc:
        raise CheckpointError(f"{path}: cannot read weights ({exc}); the file is corrupt, retrain or restore it")


def first_non_finite(arrays: dict[str, np.ndarray], allow_inf: tuple[str, ...] = ()) -> str | None:
    """The name of the first floating-point array (by name) holding NaN, or Inf unless its
    name is in ``allow_inf``; None when all are finite."""
    for name in sorted(arrays):
        values = np.asarray(arrays[name])
        if not np.issubdtype(values.dtype, np.floating) and not np.issubdtype(values.dtype, np.complexfloating):
            continue
        bad = np.isnan(values).any() if name in allow_inf else not np.isfinite(values).all()
        if bad:
            return name
    return None


def check_finite(path: Path, arrays: dict[str, np.ndarray], allow_inf: tuple[str, ...] = ()) -> None:
    """CheckpointError naming ``path`` and the tensor when a weight is NaN or Inf."""
    name = first_non_finite(arrays, allow_inf)
    if name is not None:
        raise CheckpointError(
            f"{path}: tensor '{name}' holds NaN or Inf values; the weights are broken (training diverged "
            "or the file was changed), retrain or restore the run")


def write_config(run_dir: Path, config: dict) -> None:
    config = {"format_version": FORMAT_VERSION, "textcls_version": __version__, **config}
    write_json(Path(run_dir) / CONFIG, config)


def write_run(run_dir: Path, config: dict, arrays: dict[str, np.ndarray]) -> Path:
    """Write ``model.safetensors`` (``arrays``), then ``config.json`` with its checksum: a run is
    complete once its config is. Side files (``tokenizer.json``) are written before this."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    write_config(run_dir, {**config, "weights_sha256": write_arrays(run_dir / WEIGHTS, arrays)})
    return run_dir


def is_saved_run(folder: Path) -> bool:
    """Whether ``folder`` holds a saved run: a config.json as a run writes it (a JSON object with
    the keys ``read_config`` requires first: model, kind, label_names)."""
    path = Path(folder) / CONFIG
    try:
        config = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(config, dict) and all(key in config for key in ("model", "kind", "label_names"))


def run_file_owner(path: Path, run_dir: Path | None = None) -> Path | None:
    """The run folder whose own file ``path`` names, or None: one of ``RUN_FILES`` or anything
    under ``checkpoint/``, in ``run_dir`` (there yet or not) or in any folder holding a saved run.
    Compared through symlinks and ``..``, as the write follows them. Other files in a run folder
    (a user's notes, an earlier ``evaluate --output RUN/eval_test.json``) are not the run's: the
    run neither reads nor writes them, so writing them leaves the run as it was."""
    target = Path(os.path.realpath(path))  # not Path.resolve(): Python 3.11's raises on a symlink loop
    own = Path(os.path.realpath(run_dir)) if run_dir is not None else None

    def is_run(folder: Path) -> bool:
        return folder == own or is_saved_run(folder)

    if target.name in RUN_FILES and is_run(target.parent):
        return target.parent
    return next((folder.parent for folder in target.parents
                 if folder.name == CHECKPOINT_DIR and is_run(folder.parent)), None)


def check_output_paths(run_dir: Path, outputs: dict) -> None:
    """A ConfigError, before anything runs, when an output path (``{option: path or None}``) is a
    file of the run ``run_dir`` or of another saved run (``run_file_owner``), or when two options
    name one file (the second write would replace the first)."""
    seen: dict = {}
    for option, path in outputs.items():
        if path is None:
            continue
        owner = run_file_owner(path, run_dir)
        if owner is not None:
            whose = "the run's own" if owner == Path(os.path.realpath(run_dir)) else f"the saved run {owner}'s"
            name = Path(os.path.realpath(path)).relative_to(owner)
            raise ConfigError(f"{option} {path}: is {whose} file {name}, and writing it would damage the run; "
                              "choose another path (e.g. a new file beside it)")
        key = os.path.realpath(path)
        if key in seen:
            raise ConfigError(f"{option} {path}: {seen[key]} names the same file, which one would overwrite with "
                              "the other; choose another path for one of them")
        seen[key] = option


def check_same_model(run_dir: Path, staging: Path, trained_here: bool = False) -> None:
    """A ConfigError when ``run_dir`` holds a saved run of another model (other weights, or
    another ``quantize``) than the one staged in ``staging``, with that run's ``metrics.json`` or
    ``epochs.csv``: a save leaves the files it does not write, and those would then describe the
    new model. A run without them is replaced as before (a folder saved to again and again).

    ``trained_here``: the saving model's own fit trained in ``run_dir`` (the engine's training,
    which writes ``epochs.csv`` there; a classic model or an ensemble never trains there), so its
    ``epochs.csv`` is that fit's log, not another model's record. Why this matters: a training into
    a folder holding a saved run needs ``resume`` (``refuse_finished_run``) and that folder's
    checkpoint, so the run there is this training's earlier save, and ``textcls train --resume``
    with more epochs saves over it in its work folder."""
    run_dir = Path(run_dir)
    records = [name for name in (METRICS, EPOCHS_CSV)
               if os.path.lexists(run_dir / name) and not (trained_here and name == EPOCHS_CSV)]
    if not records or not is_saved_run(run_dir):
        return

    def model_of(folder: Path) -> tuple:
        try:
            config = json.loads((folder / CONFIG).read_text(encoding="utf-8"))
            # A run saved before config.json recorded the checksum (an older textcls): its file tells.
            checksum = config.get("weights_sha256") or sha256_file(folder / WEIGHTS)
        except (OSError, UnicodeDecodeError, ValueError):
            return (folder,)  # unreadable now: not the same model
        return checksum, config.get("quantize")

    if model_of(run_dir) != model_of(staging):
        raise ConfigError(f"cannot save to {run_dir}: it holds the run of another model, whose "
                          f"{' and '.join(records)} would then describe this one; save into a new folder, or delete "
                          "that run (or those files) first")


@contextlib.contextmanager
def staged_run(run_dir: Path, last: str = CONFIG):
    """A temporary folder inside ``run_dir`` (made when missing) to write a run into; on success
    its files are moved up into ``run_dir`` (``last`` last: the file that makes the folder
    complete, config.json for a run, onnx.json for an export), and the temporary folder is
    removed either way, as are the folders this call made when it fails.

    Why: a failure while writing (a full disk, an interrupt) then leaves a run already in
    ``run_dir`` as it was, instead of new weights beside an old config. ``run_dir`` itself may be
    a symlink to a folder (the staging folder is made through it; a missing target is made), but a file of the run that is
    a symlink, a FIFO or a device is replaced by the new file, not written through as
    ``atomic_write_bytes`` would: the run's files are the run's own, and writing through a link
    could change another run's file (a shared tokenizer.json). Inside, not beside: the
    moves are renames on the folder's own filesystem (also when ``run_dir`` is a symlink or a
    mount point), need no space and no write access to the parent, and the files get the
    folder's group and default ACL as files written there would. The files of ``run_dir`` the run
    does not write stay (``check_same_model`` keeps a run's metrics from then describing another
    model). The staging folder is locked for the whole save (``_claim_staging``); a process killed
    meanwhile leaves it behind unlocked, and the next ``staged_run`` into the folder deletes it
    (``_remove_dead_stagings``). Where the filesystem takes no locks, the save goes on unlocked and
    a killed one's folder is left."""
    run_dir = Path(run_dir)
    check_no_symlink_loop(run_dir)
    # A symlink to a missing folder is followed, as atomic_write_bytes follows one to a missing
    # file: its target is made (mkdir on the link itself fails, "File exists").
    created = _make_parents(Path(os.path.realpath(run_dir)))
    _remove_dead_stagings(run_dir)
    try:
        staging, lock = _claim_staging(run_dir)
    except OSError as err:
        err.filename = str(run_dir)  # the message names the folder asked for, not the temporary one
        _remove_empty(created)
        raise
    done = False
    try:
        yield staging
        names = sorted((p.name for p in staging.iterdir() if p.name != STAGING_LOCK), key=lambda name: name == last)
        blocked = next((name for name in names if (run_dir / name).is_dir()), None)
        if blocked is not None:  # checked before the first move: a rename onto it would fail half-way
            raise DataError(f"{run_dir / blocked}: is a folder where the file {blocked} goes; move it away or "
                            "choose another folder")
        for name in names:
            os.replace(staging / name, run_dir / name)
        _fsync_dir(run_dir)
        done = True
    finally:
        _release_staging(staging, lock)
        if not done:
            _remove_empty(created)  # made here and empty again: kept if anything else is in it now


def _claim_staging(run_dir: Path) -> tuple[Path, int | None]:
    """Make a ``.saving.*.tmp`` folder in ``run_dir`` whose ``STAGING_LOCK`` this process holds
    (an exclusive ``fcntl.flock``, kept until ``_release_staging``); returns it and the lock's fd.

    Why a lock and not the owner's pid in the name: a pid names a process only in its own PID
    namespace (containers sharing a host name, ``unshare -p``, two machines of one name on NFS),
    where another save would take a live save's folder for a dead one. The kernel drops the lock
    when its process dies, however it dies and wherever it is seen from. The folder is locked
    under a name the cleanup ignores and renamed only then, so no save can ever find a
    ``.saving.`` folder that its owner has not locked yet.

    Where the filesystem takes no locks (``_NO_LOCKS``: NFS without lockd, Lustre without ``-o
    flock``) or there is no ``fcntl`` (Windows), the save goes on unlocked, as saves did before the
    lock: the folder keeps its ``.claiming.`` name, which no cleanup deletes, so a save killed there
    leaves it for the user, and the fd returned is None."""
    claim = Path(tempfile.mkdtemp(dir=run_dir, prefix=_CLAIMING, suffix=".tmp"))
    staging = claim.with_name(_SAVING + claim.name[len(_CLAIMING):])
    fd = None
    try:
        if _fcntl is not None:
            fd = os.open(claim / STAGING_LOCK, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                _fcntl.flock(fd, _fcntl.LOCK_EX | _fcntl.LOCK_NB)  # nobody else knows the folder yet: never busy
            except OSError as err:
                if err.errno not in _NO_LOCKS:
                    raise
                closing, fd = fd, None  # a Ctrl-C between close and reset would close it twice
                os.close(closing)
                os.unlink(claim / STAGING_LOCK)  # closed first: NFS would keep an open file as .nfs<hex id>
        if fd is None:
            return claim, None
        _OWN_STAGINGS.add(os.path.realpath(staging))  # before a sibling thread can see the name
        os.rename(claim, staging)
    except BaseException:
        _OWN_STAGINGS.discard(os.path.realpath(staging))
        _delete_staging(claim if os.path.lexists(claim) else staging, fd)
        raise
    return staging, fd


def _release_staging(staging: Path, lock: int | None) -> None:
    try:
        _delete_staging(staging, lock)
    finally:
        _OWN_STAGINGS.discard(os.path.realpath(staging))


def _delete_staging(folder: Path, lock: int | None) -> None:
    """Delete a staging folder whose lock ``lock`` this process holds (or an unlocked one), closing
    the lock: everything but ``STAGING_LOCK`` first, while still locked (a save that would clean
    the folder up meanwhile finds it busy), then the lock closed, its file unlinked, the folder
    removed. Why this order: on NFS, deleting a file that is still open renames it ``.nfs<hex id>``
    instead, and the folder, no longer empty, would stay. What is gone already (another save's
    cleanup once the lock was closed) is no error."""
    try:
        with contextlib.suppress(OSError):
            for path in folder.iterdir():
                if path.name == STAGING_LOCK:
                    continue
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    with contextlib.suppress(OSError):
                        path.unlink()
    finally:
        if lock is not None:
            os.close(lock)
    with contextlib.suppress(OSError):
        os.unlink(folder / STAGING_LOCK)
    with contextlib.suppress(OSError):
        os.rmdir(folder)


def _remove_dead_stagings(run_dir: Path) -> None:
    """Delete the staging folders in ``run_dir`` that killed saves left: a ``.saving.*.tmp``
    folder whose ``STAGING_LOCK`` a non-blocking ``flock`` takes has no live owner (the kernel
    drops a lock with its process, in every PID namespace; over NFS Linux emulates flock with
    POSIX locks, which the server keeps). The lock is held while the folder is emptied
    (``_delete_staging``). An empty one goes too: a live save's holds its lock file from before
    it has the ``.saving.`` name until it is emptied, so an empty one is what a delete that NFS
    kept the lock file of left. A folder with files and no lock file (a save of a textcls before
    the lock) is left: nothing tells whether its save is still going on. Where flock fails (the
    filesystem takes no locks) a folder counts as locked, and is left."""
    if _fcntl is None:
        return
    with contextlib.suppress(OSError):
        for path in run_dir.iterdir():
            name = path.name
            if (not (name.startswith(_SAVING) and name.endswith(".tmp")) or path.is_symlink()
                    or os.path.realpath(path) in _OWN_STAGINGS):
                continue
            try:
                fd = os.open(path / STAGING_LOCK, os.O_RDWR | os.O_NOFOLLOW)
            except OSError:
                with contextlib.suppress(OSError):
                    path.rmdir()  # only if empty; else (or not a folder) not one to judge
                continue
            try:
                _fcntl.flock(fd, _fcntl.LOCK_EX | _fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue  # locked: a live save's
            _delete_staging(path, fd)


def read_weights(run_dir: Path, config: dict, allow_inf: tuple[str, ...] = ()) -> dict[str, np.ndarray]:
    """The arrays of ``model.safetensors``, checked against the checksum in ``config`` (when it
    has one: runs saved before it was recorded do not) and refused if NaN or Inf."""
    run_dir = Path(run_dir)
    weights = run_dir / WEIGHTS
    checksum = config.get("weights_sha256")
    if checksum is not None and not is_sha256(checksum):
        raise CheckpointError(f"{run_dir / CONFIG}: 'weights_sha256' is not a SHA-256 hex digest; "
                              "the file is corrupt or was changed, retrain or restore it")
    arrays = read_arrays(weights, sha256=checksum)
    check_finite(weights, arrays, allow_inf)
    return arrays


def is_sha256(value) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def read_config(run_dir: Path) -> dict:
    """``config.json`` of a run, checked, in the current format's shape (an older run's config
    is upgraded in memory; the file is left as it is)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        if str(run_dir).startswith("hf:"):  # a hub id where only a folder is read (the CLI, Predictor)
            repo = str(run_dir)[3:]
            raise CheckpointError(f"{run_dir}: here a run is a local folder; download the hub repository first "
                                  f"(hf download {repo} --local-dir DIR) and pass DIR, or load it in Python with "
                                  f"Classifier.from_pretrained('{run_dir}')")
        raise CheckpointError(f"{run_dir}: no such run directory; pass the folder `textcls train` printed")
    config = read_json(run_dir / CONFIG)
    if not isinstance(config, dict):
        raise CheckpointError(f"{run_dir / CONFIG}: holds a JSON {type(config).__name__}, not an object; "
                              "the file is not a textcls config, retrain or restore the run")
    _require(run_dir, config, ("model", "kind", "label_names"))
    version = config.get("format_version", 0)
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise CheckpointError(f"{run_dir / CONFIG}: 'format_version' = {version!r} is not a version number; "
                              "the file is corrupt or was changed, retrain or restore the run")
    if config.get("format_version", 0) > FORMAT_VERSION:
        raise CheckpointError(
            f"{run_dir / CONFIG}: format version {config['format_version']} is newer than this textcls "
            f"understands ({FORMAT_VERSION}); upgrade textcls")
    config = _upgrade(config)
    _require(run_dir, config, ("family", "arch", "recipe", "inputs", "state"))
    _check_config_types(run_dir / CONFIG, config)
    return config


def check_threshold(value, name: str = "parameter 'threshold'") -> float:
    """A multi-label decision threshold in (0, 1], as a float (a Python or NumPy number, not a bool
    or a string). ``name``: what the message calls it (a parameter, an option, a file's key).
    0 is refused: every class would be predicted for every text, which no one wants by accident."""
    if not is_number(value):
        raise ConfigError(f"{name} = {value!r} is not a number; give a threshold in (0, 1], e.g. 0.5")
    if not 0 < value <= 1:  # NaN too
        raise ConfigError(f"{name} = {float(value)} is outside its allowed range (0, 1]; give a threshold such as 0.5")
    return float(value)


def run_threshold(config: dict) -> float:
    """A multi-label run's decision threshold, the one rule every path follows (``Classifier``,
    ``textcls predict`` and ``evaluate``, the server, an ONNX export): config.json's ``threshold``
    when it has one (checked by ``read_config``), else ``DEFAULT_THRESHOLD``."""
    saved = config.get("threshold")
    return DEFAULT_THRESHOLD if saved is None else float(saved)


def _check_config_types(path: Path, config: dict) -> None:
    """A hand-edited or damaged config.json fails here, by name, and not later as a TypeError deep in a load
    or an IndexError at the first prediction."""
    def corrupt(key: str, should: str):
        return CheckpointError(f"{path}: {key!r} = {config[key]!r:.60} should be {should}; the file is corrupt or "
                               "was changed, retrain or restore the run")

    for key in ("arch", "recipe", "inputs", "state"):
        if not isinstance(config[key], dict):
            raise corrupt(key, "a JSON object")
    names = config["label_names"]
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise corrupt("label_names", "a non-empty list of class names")
    if len(set(names)) != len(names):
        raise corrupt("label_names", "a list of distinct class names")
    values = config.get("label_values", names)
    if not isinstance(values, list) or len(values) != len(names):
        raise corrupt("label_values", f"a list of {len(names)} class values, one per class name")
    if not isinstance(config.get("multi_label", False), bool):
        raise corrupt("multi_label", "true or false")
    column = config.get("task_column", DEFAULT_TASK_COLUMN)
    if column is not None and not (isinstance(column, str) and column.strip()):
        raise corrupt("task_column", "null or the name of the field or column the run's tasks were read from")
    _check_test_split(corrupt, config.get("test_split"))
    tasks = config.get("task_names")
    if tasks is not None and not (isinstance(tasks, list) and all(isinstance(t, str) for t in tasks)):
        raise corrupt("task_names", "null or a list of task names")
    _check_task_heads(path, config["arch"].get("num_tasks"), tasks)
    if config.get("threshold") is not None:
        try:
            check_threshold(config["threshold"], f"{path}: 'threshold'")
        except ConfigError as exc:
            raise CheckpointError(str(exc)) from None


def _check_test_split(corrupt, carve) -> None:
    """config.json "test_split", where the run's data had its test split carved: the share and seed
    ``textcls evaluate`` carves it with again, and the digest of the records carved (a run saved
    before it has none)."""
    if carve is None:
        return
    keys_ok = isinstance(carve, dict) and {"fraction", "split_seed"} <= set(carve) <= {
        "fraction", "split_seed", "source_digest"}
    fraction, seed = (carve["fraction"], carve["split_seed"]) if keys_ok else (None, None)
    digest = carve.get("source_digest", "0" * 64) if keys_ok else None
    if (not keys_ok or isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction < 1
            or isinstance(seed, bool) or not isinstance(seed, int) or seed < 0
            or not (isinstance(digest, str) and re.fullmatch("[0-9a-f]{64}", digest))):
        raise corrupt("test_split", 'null or {"fraction": a share in (0, 1), "split_seed": a whole number >= 0, '
                      'optionally "source_digest": 64 hex digits}')


def _check_task_heads(path: Path, heads, tasks) -> None:
    """A model with one head per task (``arch.num_tasks`` > 1) needs its task names, one per head
    in head order: without them no text can be sent to its head, and an export would write a
    folder that no loader accepts."""
    if isinstance(heads, bool) or not isinstance(heads, int) or heads <= 1:
        return
    if tasks is None:
        problem = "'task_names' is missing"
    elif len(tasks) != heads or len(set(tasks)) != len(tasks):
        problem = f"'task_names' holds {len(tasks)} names ({len(set(tasks))} distinct)"
    else:
        return
    raise CheckpointError(f"{path}: {problem}, but the model has one head per task for {heads} tasks ('arch' "
                          f"num_tasks); the file is corrupt or was changed: restore the run's config.json (its "
                          f"'task_names' list the {heads} tasks in training order) or retrain the run")


def _require(run_dir: Path, config: dict, keys: tuple[str, ...]) -> None:
    missing = [k for k in keys if k not in config]
    if missing:
        raise CheckpointError(f"{run_dir / CONFIG}: missing key '{missing[0]}'; the file is not a textcls config")


def _upgrade(config: dict) -> dict:
    """A format 1 config in format 2's shape. Format 1 kept a neural model's ``vocab_size`` and
    ``pipeline`` settings, or a TF-IDF model's ``classic_state``, at the top; format 2 keeps what
    the estimator restores itself from in ``state``, and the preset's own ``to_dict()`` (with its
    ``name``) at the top."""
    if config.get("format_version", 1) >= 2:
        return config
    config = dict(config)
    state = config.pop("classic_state", None)
    if state is None:
        state = {key: config.pop(key) for key in ("vocab_size", "pipeline") if key in config}
        state.update(num_classes=len(config["label_names"]), multi_label=bool(config.get("multi_label", False)))
    config["state"] = state
    config.setdefault("name", config["model"])
    return config


# ----------------------------------------------------------------------------- run folders while training
#
# ``textcls train`` writes ``<run>.partial`` (the work folder: the resume checkpoint, then the
# saved run), holding ``<run>.partial.lock``, and renames it to ``<run>`` when the run is saved:
# a crash never leaves a run that looks complete, and --resume continues from the partial folder.


def partial_of(run_dir: Path) -> Path:
    """The work folder of a run being trained: ``<run dir>.partial``."""
    run_dir = Path(run_dir)
    return run_dir.with_name(run_dir.name + ".partial")


def lock_path_of(run_dir: Path) -> Path:
    """The lock file of a run folder: ``<run dir>.partial.lock``, beside the partial folder."""
    return run_dir.with_name(run_dir.name + ".partial.lock")


def refuse_if_locked(run_dir: Path) -> None:
    """Fail fast, creating nothing, when another training holds the run folder's lock."""
    import fcntl

    try:
        fd = os.open(lock_path_of(run_dir), os.O_RDWR)
    except OSError:
        return  # no lock file: nobody is writing (run_dir_lock takes it for real)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            raise _busy(run_dir, fd) from None
        raise
    finally:
        os.close(fd)


def _busy(run_dir: Path, fd: int) -> RunFolderError:
    try:
        pid = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
    except OSError:
        pid = "unknown"
    return RunFolderError(f"{run_dir}: another training is writing to this run folder (pid {pid}); "
                          "wait for it or choose another --run-dir")


@contextlib.contextmanager
def run_dir_lock(run_dir: Path):
    """Hold an exclusive ``fcntl.flock`` on ``<run dir>.partial.lock`` while a training writes
    ``<run dir>.partial`` and renames it to ``<run dir>``.

    A second writer of the same run folder gets a RunFolderError at once (non-blocking) and
    touches nothing. The kernel drops the lock when the holder dies, however it dies; the
    holder deletes the lock file (and the parent folders it created, if they are empty) when
    it is done.
    """
    import fcntl

    lock_path = lock_path_of(run_dir)
    created = _make_parents(lock_path.parent)
    try:
        while True:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                error = _busy(run_dir, fd) if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK) else exc
                os.close(fd)
                raise error from None
            # The previous holder deletes the file when it is done; if it did so between our open
            # and our flock, we hold a lock on a file nobody else will open: take the new one.
            try:
                if os.path.samestat(os.fstat(fd), os.stat(lock_path)):
                    break
            except FileNotFoundError:
                pass
            os.close(fd)
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode("ascii"))
            yield lock_path
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(lock_path)  # while still holding the lock
            os.close(fd)  # releases it
    finally:
        _remove_empty(created)


def _make_parents(folder: Path) -> list:
    """``mkdir -p folder``; returns the folders it created, deepest first."""
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for path in reversed(missing):
        path.mkdir(exist_ok=True)
    return missing


def _remove_empty(folders: list) -> None:
    for path in folders:
        try:
            path.rmdir()
        except OSError:
            return  # not empty (the run is in it) or gone: keep the rest too


def refuse_finished_run(run_dir, resume: bool) -> None:
    """Refuse a Python training without ``resume`` into ``run_dir`` when it holds a saved run; for
    a training that writes there (the engine's: ``Estimator.resumable``).

    The training would rewrite the run's epochs.csv and checkpoint/ from its first epoch, so the
    run's files would no longer describe its model. ``check_run_dir`` refuses any folder that is
    there for ``textcls train``; a Python fit takes a folder that is not a run yet, as the usual
    ``fit_dataset(run_dir=R)`` then ``save_pretrained(R)`` trains into R before saving there. A
    fit that writes nothing there (a classic model, an ensemble) leaves the run as it was, and its
    save over it is ``check_same_model``'s to judge."""
    if run_dir is not None and not resume and is_saved_run(run_dir):
        raise ConfigError(f"{run_dir}: holds a finished run already (its model is saved there), whose {EPOCHS_CSV} "
                          f"and {CHECKPOINT_DIR}/ this training would rewrite; pass another run_dir (a folder with "
                          "no saved run), or leave run_dir out and save the model elsewhere with save_pretrained")


def check_run_dir(run_dir: Path, resume: bool, note=None) -> bool:
    """Refuse a finished or unexpected run folder; returns ``resume`` as it applies now.

    A partial folder with no checkpoint is what a training killed (SIGKILL, power loss) before
    its first checkpoint leaves: nothing in it can be continued, so it is removed and the run
    starts over, with a note, instead of sending the user between --resume and its absence.
    The caller holds the run folder's lock or has checked that nobody does. ``note(text)``
    reports the removal (default: a line on stderr)."""
    partial = partial_of(run_dir)
    if os.path.lexists(run_dir) and not run_dir.is_dir():
        # Caught here, not when the finished run is renamed onto it: that is after the whole training.
        what = "a file" if run_dir.exists() else "a symlink to nothing (its target is missing, or a symlink loop)"
        raise ConfigError(f"{run_dir}: is {what}, not a folder; --run-dir names the new folder the run is saved "
                          "to: choose a path where nothing exists yet, or move that away")
    if run_dir.exists():
        raise _existing_run_dir(run_dir, partial, resume)
    if partial.is_dir() and not is_resumable(partial):
        (note or _note)(f"note: {partial} holds no checkpoint (its training stopped before the first one); "
                        "removing it and starting the run from the beginning")
        shutil.rmtree(partial)
        if resume:
            return False
    if resume and not partial.exists():
        raise ConfigError(f"{partial}: no interrupted run to resume; drop --resume to start one")
    if partial.exists() and not resume:
        raise ConfigError(f"{partial}: an interrupted run is there; pass --resume to continue it or delete it")
    return resume


def _existing_run_dir(run_dir: Path, partial: Path, resume: bool) -> ConfigError:
    """Why ``check_run_dir`` refuses the folder ``run_dir`` that is there already (its work folder
    ``partial``), by what it holds."""
    if is_saved_run(run_dir):
        if resume:
            return ConfigError(f"{run_dir}: holds a finished run (its model is saved there), so there is nothing to "
                               f"resume; use it as it is (textcls evaluate / predict {run_dir}), or drop --resume "
                               "and give a new --run-dir to train again")
        return ConfigError(f"{run_dir}: holds a finished run already; choose another --run-dir (a path where nothing "
                           "exists yet), or delete that run to train it again")
    if run_dir.name.endswith(".partial") and is_resumable(run_dir):
        # The work folder itself: --resume takes the run's own folder, whose partial this is.
        return ConfigError(f"{run_dir}: is the work folder of an interrupted training, not its --run-dir; pass "
                           f"--run-dir {run_dir.with_name(run_dir.name[:-len('.partial')])} --resume to continue it")
    if resume and is_resumable(partial):
        return ConfigError(f"{run_dir}: a folder that is not a run is where the interrupted run in {partial} is "
                           "saved when it finishes; move that folder away, then rerun with --resume")
    if resume:
        return ConfigError(f"{run_dir}: is not a run folder (it has no {CONFIG}), and there is no interrupted run "
                           f"to resume ({partial / CHECKPOINT_DIR / CHECKPOINT_STATE} is missing); pass the "
                           "--run-dir the interrupted training was given, or drop --resume and give a new --run-dir")
    return ConfigError(f"{run_dir}: a folder that is not a run is there already; --run-dir names the new folder "
                       "the run is saved to: choose a path where nothing exists yet")


def is_resumable(partial: Path) -> bool:
    """Whether ``partial`` holds a complete resume checkpoint (its state.json)."""
    return (Path(partial) / CHECKPOINT_DIR / CHECKPOINT_STATE).is_file()


def abandon(partial: Path, created: bool) -> bool:
    """After a failed training: remove the partial folder this invocation created when it holds
    no checkpoint (nothing to resume). Returns whether a resumable run is kept."""
    if is_resumable(partial):
        return True
    if created and partial.exists():
        shutil.rmtree(partial, ignore_errors=True)
    return False


def finish_run(work_dir: Path, run_dir: Path) -> None:
    """Rename the saved run's work folder to ``run_dir`` and drop its resume checkpoint.

    The checkpoint has served its purpose once the run is saved (not before: a full disk while
    saving leaves a run that --resume finishes); the run keeps only what loading and reading it
    need. Rename first: a kill between the two steps then leaves a finished run with a stale
    checkpoint folder in it, never a partial one that cannot be resumed."""
    if Path(work_dir) != Path(run_dir):
        os.replace(work_dir, run_dir)
    shutil.rmtree(Path(run_dir) / CHECKPOINT_DIR, ignore_errors=True)


def _note(text: str) -> None:
    print(text, file=sys.stderr)
