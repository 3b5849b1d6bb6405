"""Run-directory files: atomic, synced writes with the user's umask; checksums; non-finite tensors."""

import errno
import hashlib
import json
import os
import stat
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file

from conftest import open_lock_files
from textcls import artifacts
from textcls.errors import CheckpointError, ConfigError


@pytest.fixture
def umask():
    """Set the process umask for one test and restore it afterwards."""
    previous = os.umask(0o022)
    os.umask(previous)
    yield lambda mask: os.umask(mask)
    os.umask(previous)


def _mode(path):
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o002], ids=oct)
def test_every_write_gets_the_users_umask_not_mkstemps_0600(tmp_path, umask, mask):
    umask(mask)
    expected = 0o666 & ~mask
    artifacts.atomic_write_bytes(tmp_path / "a.bin", b"abc")
    artifacts.write_json(tmp_path / "b.json", {"x": 1})
    artifacts.write_arrays(tmp_path / "c.safetensors", {"w": np.ones(3, dtype=np.float32)})
    artifacts.write_config(tmp_path, {"model": "m", "kind": "classic", "label_names": ["a"]})
    for name in ("a.bin", "b.json", "c.safetensors", "config.json"):
        assert _mode(tmp_path / name) == expected, (name, oct(_mode(tmp_path / name)))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin", "b.json", "c.safetensors", "config.json"]


def test_writes_sync_the_file_before_the_rename_and_the_folder_after(tmp_path, monkeypatch):
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        events.append("fsync-dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "fsync-file")
        real_fsync(fd)

    def replace(src, dst):
        events.append("replace")
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    artifacts.atomic_write_bytes(tmp_path / "a.bin", b"abc")
    assert events == ["fsync-file", "replace", "fsync-dir"]
    events.clear()
    artifacts.write_arrays(tmp_path / "w.safetensors", {"w": np.zeros(2)})
    assert events == ["fsync-file", "replace", "fsync-dir"]  # the same helper, not a second copy


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "model.safetensors"
    target.write_bytes(b"old")

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        artifacts.write_arrays(target, {"w": np.zeros(2)})
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["model.safetensors"]


def test_a_benchmark_report_is_its_json_and_markdown_and_refuses_nan(tmp_path):
    paths = artifacts.write_report(tmp_path / "out" / "speed", {"docs_per_second": 12.5}, "| a |\n")
    assert [p.name for p in paths] == ["speed.json", "speed.md"]
    assert artifacts.read_json(paths[0]) == {"docs_per_second": 12.5} and paths[1].read_text() == "| a |\n"
    # A NaN would be written as bare `NaN`, which is not JSON: refused before either file moves.
    with pytest.raises(ValueError):
        artifacts.write_report(tmp_path / "out" / "speed", {"docs_per_second": float("nan")}, "| b |\n")
    assert artifacts.read_json(paths[0]) == {"docs_per_second": 12.5} and paths[1].read_text() == "| a |\n"


def test_write_arrays_returns_the_checksum_read_arrays_verifies(tmp_path):
    path = tmp_path / "model.safetensors"
    arrays = {"b": np.arange(4, dtype=np.float32), "a": np.eye(2)}
    digest = artifacts.write_arrays(path, arrays)
    assert digest == hashlib.sha256(path.read_bytes()).hexdigest()
    loaded = artifacts.read_arrays(path, sha256=digest)
    assert sorted(loaded) == ["a", "b"]
    np.testing.assert_array_equal(loaded["b"], arrays["b"])
    np.testing.assert_array_equal(load_file(str(path))["a"], arrays["a"])  # a plain safetensors file
    np.testing.assert_array_equal(artifacts.read_arrays(path)["a"], arrays["a"])  # no checksum: no check
    with pytest.raises(CheckpointError) as err:
        artifacts.read_arrays(path, sha256="0" * 64)
    assert str(err.value) == (f"{path} does not match the checksum in config.json; the file is corrupt or was "
                              "changed, retrain or restore it")


def test_first_non_finite_names_the_tensor():
    finite = {"a": np.ones(3, dtype=np.float32), "ids": np.arange(3)}
    assert artifacts.first_non_finite(finite) is None
    assert artifacts.first_non_finite({**finite, "z": np.array([1.0, np.nan])}) == "z"
    assert artifacts.first_non_finite({**finite, "c": np.array([np.inf], dtype=np.float16)}) == "c"
    # allow_inf lets +-inf through (a TF-IDF bias for an unseen class), never NaN.
    assert artifacts.first_non_finite({"bias": np.array([-np.inf, 0.0])}, allow_inf=("bias",)) is None
    assert artifacts.first_non_finite({"bias": np.array([np.nan, 0.0])}, allow_inf=("bias",)) == "bias"
    with pytest.raises(CheckpointError, match=r"^x/model.safetensors: tensor 'z' holds NaN or Inf values; .*retrain"):
        artifacts.check_finite("x/model.safetensors", {"z": np.array([np.nan])})


def test_every_file_of_a_run_gets_the_users_umask(tmp_path, umask):
    """The run folder, the checkpoint, epochs.csv, metrics and plots all go through one writer."""
    from textcls import Classifier
    from textcls.api import dataset_from_lists
    from textcls.eval.plots import plot_confusion_matrix

    umask(0o027)
    texts = [f"{word} film number {i}" for i in range(40) for word in ("good", "bad")]
    labels = ["pos" if text.startswith("good") else "neg" for text in texts]
    clf = Classifier("fasttext-bag", epochs=2, params={"bigram_buckets": 64, "checkpoint_steps": 1, "optimizer": "sgd", "lr": 8.0})
    clf.fit_dataset(dataset_from_lists(texts, labels), run_dir=tmp_path)
    clf.save_pretrained(tmp_path)
    artifacts.write_json(tmp_path / artifacts.METRICS, {"accuracy": 1.0})
    plot_confusion_matrix([[1, 0], [0, 1]], ["neg", "pos"], tmp_path / "confusion_matrix.png")
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert {"config.json", "model.safetensors", "tokenizer.json", "metrics.json", "epochs.csv",
            "confusion_matrix.png", "checkpoint/state.json"} <= set(written)
    assert any(name.startswith("checkpoint/model-epoch") for name in written)
    assert {name: oct(_mode(tmp_path / name)) for name in written} == {name: oct(0o640) for name in written}


# ----------------------------------------------------------------------------- what the target path is
#
# A rename puts a regular file where the path was: a symlink, a FIFO or a device (as root, `evaluate
# --output /dev/full` once turned /dev/full into a regular file). These tests make their own FIFO,
# links and device nodes in tmp_path; they never write the real /dev/full or /dev/stdout.


def _fifo_reader(path):
    """A FIFO at ``path`` and a read end opened on it without blocking (a write then needs no
    thread, and a test that fails cannot hang); read what was written with ``_drain``."""
    os.mkfifo(path)
    return os.open(path, os.O_RDONLY | os.O_NONBLOCK)


def _drain(fd):
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


def test_a_symlink_is_followed_its_target_replaced_and_the_link_kept(tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "target.json"
    target.write_bytes(b"old")
    link = tmp_path / "link.json"
    link.symlink_to(Path("real") / "target.json")  # relative, as ln -s makes them
    artifacts.atomic_write_bytes(link, b"new")
    assert link.is_symlink() and os.readlink(link) == str(Path("real") / "target.json")
    assert target.read_bytes() == b"new"
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == ["target.json"]  # no temporary left


def test_a_dangling_symlink_gets_its_target_written(tmp_path):
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "later.json")
    artifacts.atomic_write_bytes(link, b"abc")
    assert link.is_symlink() and (tmp_path / "later.json").read_bytes() == b"abc"


def test_a_fifo_is_written_in_place_and_stays_a_fifo(tmp_path):
    fifo = tmp_path / "pipe"
    reader = _fifo_reader(fifo)
    artifacts.write_json(fifo, {"accuracy": 0.5})
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert json.loads(_drain(reader)) == {"accuracy": 0.5}
    assert [p.name for p in tmp_path.iterdir()] == ["pipe"]


def test_a_fifo_that_nothing_reads_is_an_error_at_once(tmp_path):
    """It blocked forever in open() (found by the review of stop 64); the FIFO stays as it was."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="a FIFO that no process reads; start its reader first") as err:
        artifacts.atomic_write_bytes(fifo, b"nobody listens")
    assert err.value.errno == errno.ENXIO and err.value.filename == str(fifo)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and [p.name for p in tmp_path.iterdir()] == ["pipe"]


def test_a_symlink_to_a_fifo_writes_the_fifo(tmp_path):
    fifo = tmp_path / "pipe"
    reader = _fifo_reader(fifo)
    (tmp_path / "out").symlink_to(fifo)
    artifacts.atomic_write_bytes(tmp_path / "out", b"through the link")
    assert (tmp_path / "out").is_symlink() and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert _drain(reader) == b"through the link"


def _device(path, minor):
    """A character device of the memory driver (1, ``minor``) at ``path``: 3 is null, 7 is full.
    A node made in tmp_path where the process may (root); elsewhere a symlink to the system's
    /dev/null or /dev/full, written through the same in-place path. The fallback only runs where
    mknod is refused, so a writer that renamed over the device could not replace /dev's either."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, minor))
        with open(path, "rb"):
            pass
    except OSError:
        path.unlink(missing_ok=True)
        path.symlink_to({3: "/dev/null", 7: "/dev/full"}[minor])


def test_a_character_device_is_written_in_place_and_stays_a_device(tmp_path):
    null = tmp_path / "null"
    _device(null, 3)
    artifacts.write_json(null, {"a": 1})
    assert stat.S_ISCHR(os.stat(null).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["null"]


def test_a_full_device_is_a_disk_full_error_naming_it_and_stays_a_device(tmp_path):
    full = tmp_path / "full"
    _device(full, 7)
    with pytest.raises(OSError) as err:
        artifacts.write_json(full, {"a": 1})
    assert err.value.errno == errno.ENOSPC and err.value.filename == str(full)
    assert stat.S_ISCHR(os.stat(full).st_mode)


def test_a_path_through_proc_fd_writes_through_the_open_descriptor(tmp_path):
    """What /dev/stdout is when a shell redirects it to a file: the file is written through the
    process's own descriptor (at its offset, after what was written before), not replaced by a
    new file that the descriptor no longer reaches."""
    out = tmp_path / "out.txt"
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, b"before\n")
        inode = os.fstat(fd).st_ino
        artifacts.atomic_write_bytes(Path(f"/proc/self/fd/{fd}"), b"json\n")
        os.write(fd, b"after\n")
    finally:
        os.close(fd)
    assert out.read_bytes() == b"before\njson\nafter\n" and os.stat(out).st_ino == inode


def test_staged_run_replaces_a_linked_run_file_and_leaves_its_target(tmp_path):
    """staged_run's decision (its docstring): a run's file that is a symlink is replaced by the new
    file, so another run it pointed at keeps its own."""
    shared = tmp_path / "shared.json"
    shared.write_bytes(b"another run's vocabulary")
    run = tmp_path / "run"
    run.mkdir()
    (run / "tokenizer.json").symlink_to(shared)
    with artifacts.staged_run(run) as staging:
        artifacts.atomic_write_bytes(staging / "tokenizer.json", b"mine")
    assert not (run / "tokenizer.json").is_symlink() and (run / "tokenizer.json").read_bytes() == b"mine"
    assert shared.read_bytes() == b"another run's vocabulary"


def test_staged_run_follows_a_dangling_symlink_and_refuses_a_loop(tmp_path):
    """A link to a missing folder gets its target made (and unmade again by a failed save), as
    atomic_write_bytes follows a link to a missing file; a loop is one ConfigError, nothing made."""
    (tmp_path / "link").symlink_to(tmp_path / "made" / "here")
    with pytest.raises(OSError, match="disk full"):
        with artifacts.staged_run(tmp_path / "link"):
            raise OSError(errno.ENOSPC, "disk full")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link"]
    with artifacts.staged_run(tmp_path / "link") as staging:
        artifacts.atomic_write_bytes(staging / "config.json", b"{}")
    assert (tmp_path / "link").is_symlink() and (tmp_path / "made" / "here" / "config.json").read_bytes() == b"{}"
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(ConfigError, match=f"^{tmp_path / 'a' / 'run'}: leads through a symlink loop"):
        with artifacts.staged_run(tmp_path / "a" / "run"):
            pass
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b", "link", "made"]



def test_staged_run_holds_its_lock_for_the_whole_save_and_never_moves_it_in(tmp_path):
    """The staging folder's lock is taken before the folder gets its .saving. name and held until
    it is gone, on success and on failure (a write error, a folder where a file goes), and the
    lock file stays in the staging folder: the run folder gets only the run's files."""
    import fcntl

    def lock_is_held(staging):
        fd = os.open(staging / artifacts.STAGING_LOCK, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False

    run = tmp_path / "run"
    with artifacts.staged_run(run) as staging:
        assert staging.name.startswith(".saving.") and lock_is_held(staging)
        assert open_lock_files() == [str(staging / artifacts.STAGING_LOCK)]
        artifacts.atomic_write_bytes(staging / "config.json", b"{}")
    # The lock file's own fd, not a count of all fds: other tests' objects close theirs at any time.
    assert sorted(p.name for p in run.iterdir()) == ["config.json"] and open_lock_files() == []
    with pytest.raises(OSError, match="disk full"):
        with artifacts.staged_run(run) as staging:
            raise OSError(errno.ENOSPC, "disk full")
    (run / "model.safetensors").mkdir()
    with pytest.raises(artifacts.DataError, match="is a folder where the file model.safetensors goes"):
        with artifacts.staged_run(run) as staging:
            artifacts.atomic_write_bytes(staging / "model.safetensors", b"w")
    assert sorted(p.name for p in run.iterdir()) == ["config.json", "model.safetensors"] and open_lock_files() == []


def test_a_staging_folder_loses_its_lock_file_last_and_only_once_it_is_closed(tmp_path, monkeypatch):
    """On NFS, deleting a file that is still open renames it .nfs<hex id>, and the folder's rmdir then
    fails: an empty .saving.*.tmp would stay for ever. So a save's own staging folder (on success
    and on failure) and a killed save's (the cleanup) are emptied but for the lock file, the lock is
    closed, and only then is the lock file unlinked, the folder last."""
    run = tmp_path / "run"
    dead = run / ".saving.d3ad.tmp"
    (dead / "sub").mkdir(parents=True)
    (dead / "sub" / "x").write_bytes(b"x")
    (dead / "model.safetensors").write_bytes(b"half")
    (dead / artifacts.STAGING_LOCK).touch()
    seen, unlink = [], os.unlink

    def recording_unlink(path, *, dir_fd=None):
        if os.path.basename(path) == artifacts.STAGING_LOCK:
            folder = os.path.dirname(path) if dir_fd is None else dir_fd
            seen.append((open_lock_files(), sorted(os.listdir(folder))))
        return unlink(path, dir_fd=dir_fd)

    monkeypatch.setattr(os, "unlink", recording_unlink)
    with artifacts.staged_run(run) as staging:
        artifacts.atomic_write_bytes(staging / "config.json", b"{}")
    with pytest.raises(OSError, match="disk full"):
        with artifacts.staged_run(run) as staging:
            artifacts.atomic_write_bytes(staging / "model.safetensors", b"half")
            raise OSError(errno.ENOSPC, "disk full")
    assert seen == [([], [artifacts.STAGING_LOCK])] * 3
    assert sorted(os.listdir(run)) == ["config.json"]


def test_a_staging_folder_is_the_processs_own_before_it_has_its_saving_name(tmp_path, monkeypatch):
    """Over NFS flock is a POSIX lock, which a sibling thread's cleanup would take too (and drop
    with its close): a folder must be in _OWN_STAGINGS before any thread can see its .saving. name."""
    seen, rename = [], os.rename

    def recording_rename(src, dst, *args, **kwargs):
        if os.path.basename(dst).startswith(".saving."):
            seen.append(os.path.realpath(dst) in artifacts._OWN_STAGINGS)
        return rename(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "rename", recording_rename)
    with artifacts.staged_run(tmp_path / "run") as staging:
        assert os.path.realpath(staging) in artifacts._OWN_STAGINGS
    assert seen == [True] and not artifacts._OWN_STAGINGS


def test_the_cleanup_deletes_an_empty_saving_folder_and_keeps_one_with_files_and_no_lock(tmp_path):
    """An empty .saving.*.tmp folder has no live owner: a live save's holds its lock file from
    before it gets the name until it is emptied (what an NFS delete of an open lock file left, see
    above). One with files and no lock file (an older textcls) is kept, as is a .claiming. one."""
    run = tmp_path / "run"
    empty, unknown, claiming = run / ".saving.3mpty.tmp", run / ".saving.0ldn4m3.tmp", run / ".claiming.n3w.tmp"
    for folder in (empty, unknown, claiming):
        folder.mkdir(parents=True)
    (unknown / "model.safetensors").write_bytes(b"half")
    with artifacts.staged_run(run) as staging:
        artifacts.atomic_write_bytes(staging / "config.json", b"{}")
    assert sorted(os.listdir(run)) == [claiming.name, unknown.name, "config.json"]
    assert os.listdir(unknown) == ["model.safetensors"]


# ----------------------------------------------------------------------------- the run's own files


def _saved_run(folder):
    folder.mkdir(parents=True)
    artifacts.write_run(folder, {"model": "tfidf-lr", "kind": "classic", "label_names": ["a", "b"]},
                        {"w": np.zeros(2, dtype=np.float32)})
    return folder


def test_run_file_owner_names_the_run_of_a_run_file(tmp_path):
    run, other = _saved_run(tmp_path / "run"), _saved_run(tmp_path / "other")
    (tmp_path / "alias").symlink_to(run / "metrics.json")
    own = run.resolve()
    for name in artifacts.RUN_FILES:
        assert artifacts.run_file_owner(run / name, run) == own
    assert artifacts.run_file_owner(run / "checkpoint" / "state.json", run) == own
    assert artifacts.run_file_owner(run / "sub" / ".." / "config.json", run) == own
    assert artifacts.run_file_owner(tmp_path / "alias", run) == own
    assert artifacts.run_file_owner(other / "metrics.json", run) == other.resolve()
    assert artifacts.run_file_owner(tmp_path / "not-a-run" / "metrics.json", run) is None
    assert artifacts.run_file_owner(run / "eval_test.json", run) is None  # a new file beside the run's
    assert artifacts.run_file_owner(run / "onnx" / "tokenizer.json", run) is None


def test_is_saved_run_reads_the_config_a_run_writes(tmp_path):
    assert artifacts.is_saved_run(_saved_run(tmp_path / "run"))
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "config.json").write_text('{"debug": true}')
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "config.json").write_text("{not json")
    for folder in ("app", "bad", "missing"):
        assert not artifacts.is_saved_run(tmp_path / folder)


def test_a_symlink_loop_is_an_error_as_open_gives_and_the_links_stay(tmp_path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(OSError) as err:
        artifacts.atomic_write_bytes(tmp_path / "a", b"x")
    assert err.value.errno == errno.ELOOP
    assert (tmp_path / "a").is_symlink() and (tmp_path / "b").is_symlink() and len(list(tmp_path.iterdir())) == 2


# ----------------------------------------------------------------------------- --run-dir checks


def _train_cli(capsys, *args):
    """`textcls train` on trec up to its run-folder checks (they come before the data loads): exit
    status and stderr."""
    from textcls.cli import main

    with pytest.raises(SystemExit) as done:
        main(["train", "--model", "fasttext-bag", "--data", "trec", *map(str, args)])
    err = capsys.readouterr().err
    assert len(err.strip().split("\n")) == 1, err
    return done.value.code, err.strip()


def test_a_run_dir_that_is_a_file_is_refused_as_a_file(tmp_path, capsys):
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    code, err = _train_cli(capsys, "--run-dir", notes)
    assert code == 2 and err == (f"error: {notes}: is a file, not a folder; --run-dir names the new folder the run "
                                 "is saved to: choose a path where nothing exists yet, or move that away")
    assert notes.read_text() == "mine" and sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


@pytest.mark.parametrize("link", ["dangling", "loop"])
def test_a_run_dir_that_is_a_broken_symlink_is_refused_before_training(tmp_path, link):
    """The training would otherwise run to its end and fail renaming the run onto the link."""
    run = tmp_path / "run"
    run.symlink_to(tmp_path / ("missing" if link == "dangling" else "run"))
    with pytest.raises(ConfigError, match=r"is a symlink to nothing \(its target is missing, or a symlink loop\), "
                                          "not a folder; --run-dir names the new folder"):
        artifacts.check_run_dir(run, resume=False)
    assert run.is_symlink() and sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_resume_into_a_finished_run_says_there_is_nothing_to_resume(tmp_path, capsys):
    run = _saved_run(tmp_path / "run")
    code, err = _train_cli(capsys, "--run-dir", run, "--resume")
    assert code == 2 and err == (f"error: {run}: holds a finished run (its model is saved there), so there is nothing "
                                 f"to resume; use it as it is (textcls evaluate / predict {run}), or drop --resume and "
                                 "give a new --run-dir to train again")
    with pytest.raises(ConfigError, match=f"^{run}: holds a finished run already; choose another --run-dir"):
        artifacts.check_run_dir(run, resume=False)


def test_resume_into_a_folder_that_is_not_a_run_names_the_missing_checkpoint(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("not a run")
    state = tmp_path / "mine.partial" / "checkpoint" / "state.json"
    with pytest.raises(ConfigError) as err:
        artifacts.check_run_dir(folder, resume=True)
    assert str(err.value) == (f"{folder}: is not a run folder (it has no config.json), and there is no interrupted "
                              f"run to resume ({state} is missing); pass the --run-dir the interrupted training was "
                              "given, or drop --resume and give a new --run-dir")
    with pytest.raises(ConfigError, match=f"^{folder}: a folder that is not a run is there already; --run-dir names "
                                          "the new folder the run is saved to"):
        artifacts.check_run_dir(folder, resume=False)
    state.parent.mkdir(parents=True)
    state.write_text("{}")
    with pytest.raises(ConfigError, match=f"^{folder}: a folder that is not a run is where the interrupted run in "
                                          f"{state.parent.parent} is saved when it finishes; move that folder away"):
        artifacts.check_run_dir(folder, resume=True)
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"] and state.is_file()


def test_resume_given_the_work_folder_names_the_run_dir_to_pass(tmp_path):
    partial = tmp_path / "run.partial"
    (partial / "checkpoint").mkdir(parents=True)
    (partial / "checkpoint" / "state.json").write_text("{}")
    with pytest.raises(ConfigError, match=f"^{partial}: is the work folder of an interrupted training, not its "
                                          f"--run-dir; pass --run-dir {tmp_path / 'run'} --resume to continue it$"):
        artifacts.check_run_dir(partial, resume=True)


def test_resume_in_python_into_a_finished_run_or_another_folder_says_which(tmp_path):
    from textcls.recipe import Recipe
    from textcls.train.checkpoint import load_checkpoint

    run = _saved_run(tmp_path / "run")
    with pytest.raises(CheckpointError, match=f"^no checkpoint to resume from: {run} holds a finished run .*so there "
                                              "is nothing to resume; load it with Classifier.from_pretrained"):
        load_checkpoint(run / "checkpoint", None, None, None, Recipe(), {})
    with pytest.raises(CheckpointError, match=f"^no checkpoint to resume from: {tmp_path / 'x' / 'checkpoint'} does "
                                              f"not exist, so {tmp_path / 'x'} is not the folder of an interrupted"):
        load_checkpoint(tmp_path / "x" / "checkpoint", None, None, None, Recipe(), {})
