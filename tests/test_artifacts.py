"""Run-directory files: atomic, synced writes with the user's umask; checksums; non-finite tensors."""

import hashlib
import os
import stat

import numpy as np
import pytest
from safetensors.numpy import load_file

from textcls import artifacts
from textcls.errors import CheckpointError


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
