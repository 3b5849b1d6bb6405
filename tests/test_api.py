"""The Classifier estimator and run directories: round trips, sklearn contracts, bad checkpoints."""

import contextlib
import errno
import hashlib
import json
import os
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
import sklearn.exceptions
import torch
from safetensors.numpy import load_file, save_file
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.utils.validation import check_is_fitted

import textcls
from conftest import open_lock_files
from textcls import Classifier, artifacts
from textcls.errors import CheckpointError, ConfigError, DataError, ModelError, NotFittedError, TextclsError, UnknownTaskError


@pytest.fixture(scope="module")
def trec_small():
    return textcls.load_dataset("trec", max_per_split=600)


@pytest.fixture(scope="module")
def fitted_cnn(trec_small):
    return Classifier("kim-cnn-nonstatic", epochs=2, batch_size=50).fit_dataset(trec_small)


@pytest.fixture(scope="module")
def fitted_lr(trec_small):
    return Classifier("tfidf-lr").fit_dataset(trec_small)


@pytest.fixture(scope="module")
def fitted_bag(trec_small):
    return Classifier("fasttext-bag", epochs=1).fit_dataset(trec_small)


# Two-class toy data for the input-validation tests (tfidf-lr fits it in milliseconds).
TOY_TEXTS = ["good great fine", "bad awful poor", "great good", "awful bad"] * 5
TOY_LABELS = ["pos", "neg"] * 10


@pytest.fixture(scope="module")
def fitted_toy():
    return Classifier("tfidf-lr").fit(TOY_TEXTS, TOY_LABELS)


def test_neural_save_load_predict_round_trip_identical(fitted_cnn, trec_small, tmp_path):
    texts = list(trec_small["test"]["text"][:40]) + ["?", "zzqx unseen words only"]
    before = fitted_cnn.predict_proba(texts)
    fitted_cnn.save_pretrained(tmp_path / "run")
    names = sorted(p.name for p in (tmp_path / "run").iterdir())
    assert names == ["config.json", "model.safetensors", "tokenizer.json"]
    loaded = Classifier.from_pretrained(tmp_path / "run")
    after = loaded.predict_proba(texts)
    np.testing.assert_array_equal(before, after)
    assert list(loaded.predict(texts)) == list(fitted_cnn.predict(texts))
    assert before.shape == (42, 6)
    np.testing.assert_allclose(before.sum(axis=1), 1.0, rtol=1e-5)


def test_a_save_that_fails_half_way_leaves_the_run_already_there(fitted_cnn, fitted_lr, tmp_path, monkeypatch):
    """A full disk while the weights are written: the run saved before in that folder still loads
    as it was, no half of the new one is beside it, and no staging folder is left."""

    fitted_cnn.save_pretrained(tmp_path / "run")
    (tmp_path / "run" / "notes.txt").write_text("mine")
    before = {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir()}
    real = artifacts.write_arrays

    def disk_full(path, arrays):
        path.write_bytes(b"half")
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(artifacts, "write_arrays", disk_full)
    with pytest.raises(OSError, match="No space left"):
        fitted_lr.save_pretrained(tmp_path / "run")
    with pytest.raises(OSError, match="No space left"):
        fitted_lr.save_pretrained(tmp_path / "new" / "run")
    assert {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # no staging folder, no half-made "new/run"
    assert Classifier.from_pretrained(tmp_path / "run").model == "kim-cnn-nonstatic"
    monkeypatch.setattr(artifacts, "write_arrays", real)
    fitted_lr.save_pretrained(tmp_path / "run")  # a save that succeeds replaces the run; the user's file stays
    assert Classifier.from_pretrained(tmp_path / "run").model == "tfidf-lr"
    assert (tmp_path / "run" / "notes.txt").read_text() == "mine"


def test_a_save_over_another_models_run_and_its_metrics_is_refused_and_writes_nothing(fitted_toy, tmp_path):
    """save_pretrained's decision (its docstring): the metrics.json and epochs.csv a save leaves
    would describe the new model, so it refuses; the same model saves again over its own run."""
    run = tmp_path / "run"
    fitted_toy.save_pretrained(run)
    (run / "metrics.json").write_text('{"test": {"accuracy": 1.0}}')
    (run / "epochs.csv").write_text("epoch\n1\n")
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    other = Classifier("tfidf-lr").fit(TOY_TEXTS + ["fine fine poor"], TOY_LABELS + ["neg"])
    with pytest.raises(ConfigError) as err:
        other.save_pretrained(run)
    assert str(err.value) == (f"cannot save to {run}: it holds the run of another model, whose metrics.json and "
                              "epochs.csv would then describe this one; save into a new folder, or delete that run "
                              "(or those files) first")
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before  # no staging folder left either
    fitted_toy.save_pretrained(run)
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before
    (run / "metrics.json").unlink()
    (run / "epochs.csv").unlink()
    other.save_pretrained(run)  # nothing describes the model there: replaced as before
    assert Classifier.from_pretrained(run).predict_proba(["fine fine poor"]).tolist() == \
        other.predict_proba(["fine fine poor"]).tolist()



def test_a_run_saved_without_a_checksum_saves_over_itself_and_refuses_another_model(fitted_toy, tmp_path):
    """A run of an older textcls, whose config.json records no weights_sha256, is the same model
    when its model.safetensors is: loaded and saved again in place, it is replaced as before."""
    run = tmp_path / "run"
    fitted_toy.save_pretrained(run)
    (run / "metrics.json").write_text('{"test": {"accuracy": 1.0}}')
    config = json.loads((run / "config.json").read_text())
    del config["weights_sha256"]
    (run / "config.json").write_text(json.dumps(config))
    Classifier.from_pretrained(run).save_pretrained(run)
    assert "weights_sha256" in json.loads((run / "config.json").read_text())
    (run / "config.json").write_text(json.dumps(config))
    other = Classifier("tfidf-lr").fit(TOY_TEXTS + ["fine fine poor"], TOY_LABELS + ["neg"])
    with pytest.raises(ConfigError, match="it holds the run of another model, whose metrics.json would"):
        other.save_pretrained(run)


def test_a_fit_resumed_into_its_saved_run_saves_over_it_and_another_model_still_cannot(tmp_path):
    """A fit into run_dir R writes R's epochs.csv; saved there and resumed with more epochs, it
    trains on and saves its new weights over its earlier save: that epochs.csv is its own log.
    The model of another fit (into another folder) is still refused there."""
    csv = tmp_path / "d.csv"
    csv.write_text("text,label\n" + "".join(f"{TOY_TEXTS[i % 20]} {i},{TOY_LABELS[i % 20]}\n" for i in range(60)))
    data, run = textcls.load_dataset(csv), tmp_path / "run"
    params = {"embeddings": None, "monitor": "loss"}  # dev loss falls epoch after epoch: other weights
    Classifier("transformer-1l-1h", epochs=1, seed=0, params=params, progress=False).fit_dataset(
        data, run_dir=run).save_pretrained(run)
    first = (run / "model.safetensors").read_bytes()
    resumed = Classifier("transformer-1l-1h", epochs=3, seed=0, params=params, progress=False)
    resumed.fit_dataset(data, run_dir=run, resume=True).save_pretrained(run)
    assert (run / "model.safetensors").read_bytes() != first
    assert len((run / "epochs.csv").read_text().splitlines()) == 1 + 3
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    other = Classifier("transformer-1l-1h", epochs=2, seed=0, params=params, progress=False)
    other.fit_dataset(data, run_dir=tmp_path / "elsewhere")
    with pytest.raises(ConfigError, match=f"^cannot save to {run}: it holds the run of another model, whose "
                                          "epochs.csv would then describe this one"):
        other.save_pretrained(run)
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before


def test_a_fit_resumed_on_the_same_data_split_otherwise_is_refused(tmp_path):
    """textcls train --resume --split-seed 5 on a run begun with seed 0 trained on, rc 0: the same
    number of batches, so the checkpoint took it, and the new test split held records trained on."""
    csv = tmp_path / "d.csv"
    csv.write_text("text,label\n" + "".join(f"{TOY_TEXTS[i % 20]} {i},{TOY_LABELS[i % 20]}\n" for i in range(60)))
    run = tmp_path / "run"
    Classifier("transformer-1l-1h", epochs=1, seed=0, params={"embeddings": None}, progress=False).fit_dataset(
        textcls.load_dataset(csv), run_dir=run)
    resumed = Classifier("transformer-1l-1h", epochs=2, seed=0, params={"embeddings": None}, progress=False)
    with pytest.raises(CheckpointError, match="was written for other training data"):
        resumed.fit_dataset(textcls.load_dataset(csv, split_seed=5), run_dir=run, resume=True)
    resumed.fit_dataset(textcls.load_dataset(csv, split_seed=0), run_dir=run, resume=True)
    assert resumed.fit_result_.epochs_run == 2


_SAVER = """
import os, signal, sys, time
from textcls import artifacts
with artifacts.staged_run(sys.argv[1]) as staging:
    (staging / "model.safetensors").write_bytes(b"half")
    if sys.argv[2] == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if sys.argv[2] == "wait":
        time.sleep(120)
"""


def _stagings(run):
    return {p.name for p in run.iterdir() if p.name.startswith(".saving.")}


@contextlib.contextmanager
def _live_save(run):
    """A save into ``run`` that has staged its files and goes on (asleep) until the block ends;
    yields its staging folder's name."""
    live = subprocess.Popen([sys.executable, "-c", _SAVER, str(run), "wait"])
    try:
        for _ in range(1200):  # until it has written its file, not just made its folder
            running = _stagings(run)
            written = run / next(iter(running)) / "model.safetensors" if running else None
            if written is not None and written.exists() and written.read_bytes() == b"half":
                break
            if live.poll() is not None:
                break
            time.sleep(0.1)
        running = _stagings(run)
        assert len(running) == 1 and live.poll() is None, running
        yield next(iter(running))
    finally:
        live.kill()
        live.wait()


def test_a_save_deletes_the_staging_folders_of_killed_saves_and_keeps_live_ones(fitted_toy, tmp_path):
    """A save killed half-way leaves its staging folder; the next save into the folder deletes it
    (its lock is free: the kernel dropped it with the process), and leaves the one of a save still
    going on beside it (locked), one with no lock file (an older textcls: nothing tells whether
    its save goes on; an empty one is deleted, as no live save's is empty), and a folder still
    being claimed (locked only once it is there)."""
    run = tmp_path / "run"
    fitted_toy.save_pretrained(run)
    with _live_save(run) as running:
        killed = subprocess.Popen([sys.executable, "-c", _SAVER, str(run), "kill"])
        assert killed.wait(timeout=120) == -9 and len(_stagings(run)) == 2
        others = {f".saving.{socket.gethostname()}.{killed.pid}.0th3r.tmp", ".saving.0ldn4m3.tmp"}
        for name in others:
            (run / name).mkdir()
            (run / name / "model.safetensors").write_bytes(b"older")
        (run / ".saving.3mpty.tmp").mkdir()
        (run / ".claiming.n3w.tmp").mkdir()
        (run / ".claiming.n3w.tmp" / artifacts.STAGING_LOCK).touch()
        fitted_toy.save_pretrained(run)
        assert _stagings(run) == {running} | others
        assert (run / running / "model.safetensors").read_bytes() == b"half"
        assert (run / ".claiming.n3w.tmp" / artifacts.STAGING_LOCK).exists()
    assert artifacts.STAGING_LOCK not in {p.name for p in run.iterdir()}


def test_a_live_saves_staging_folder_is_kept_while_it_holds_its_lock_and_deleted_once_it_is_killed(fitted_toy,
                                                                                                  tmp_path):
    """Another process's save, in its staged_run (its lock held), keeps its folder and files
    through a save here; once that process is killed, the next save deletes them. Only the lock
    tells: this process's _OWN_STAGINGS does not know the folder. A flock belongs to the open
    file, not to a pid, so what holds here holds for a save in another PID namespace or container
    too (where the owner's pid would name no process, or another one); no test of its own."""
    run = tmp_path / "run"
    fitted_toy.save_pretrained(run)
    with _live_save(run) as running:
        fitted_toy.save_pretrained(run)
        assert _stagings(run) == {running}
        assert sorted(os.listdir(run / running)) == [artifacts.STAGING_LOCK, "model.safetensors"]
        assert (run / running / "model.safetensors").read_bytes() == b"half"
    assert _stagings(run) == {running}  # killed: nothing deleted it yet
    fitted_toy.save_pretrained(run)
    assert sorted(os.listdir(run)) == ["config.json", "model.safetensors"]


@pytest.mark.parametrize("code", ["ENOLCK", "ENOSYS", "EOPNOTSUPP", "EINVAL"])
def test_a_save_where_the_filesystem_has_no_locks_goes_on_unlocked_and_leaves_nothing(fitted_toy, tmp_path,
                                                                                     monkeypatch, code):
    """NFS without lockd answers flock with ENOLCK, Lustre mounted without -o flock with ENOSYS
    (others EOPNOTSUPP or EINVAL). The save goes on without the lock, its staging folder under the
    .claiming. name that no cleanup deletes (an unlocked .saving. folder would look dead), and
    leaves neither that folder nor its lock file nor an open descriptor; another save's locked
    folder is not cleaned there (its lock cannot be read)."""
    import fcntl

    def no_locks(fd, operation):
        raise OSError(getattr(errno, code), os.strerror(getattr(errno, code)))

    run = tmp_path / "run"
    fitted_toy.save_pretrained(run)
    earlier = run / ".saving.earl13r0.tmp"  # a save's from when the locks worked
    earlier.mkdir()
    (earlier / artifacts.STAGING_LOCK).touch()
    (earlier / "model.safetensors").write_bytes(b"half")
    staged, write_run = [], artifacts.write_run

    def recording_write_run(staging, *args):
        staged.append((staging.name, sorted(os.listdir(staging))))
        return write_run(staging, *args)

    monkeypatch.setattr(artifacts, "write_run", recording_write_run)
    monkeypatch.setattr(fcntl, "flock", no_locks)
    fitted_toy.save_pretrained(run)
    assert len(staged) == 1 and staged[0][0].startswith(".claiming.") and staged[0][1] == [], staged
    assert sorted(os.listdir(run)) == [earlier.name, "config.json", "model.safetensors"]
    assert sorted(os.listdir(earlier)) == [artifacts.STAGING_LOCK, "model.safetensors"]
    assert open_lock_files() == []  # its own fds, not a count of all: other objects close theirs at any time
    assert Classifier.from_pretrained(run).predict(["good great"])[0] == "pos"


def test_a_run_folder_that_is_a_symlink_elsewhere_saves_and_loads(fitted_lr, tmp_path):
    """The save is staged inside the folder: a run folder that links to another filesystem (here
    /dev/shm, a tmpfs, where the machine has one) takes renames, not copies. Staging beside the
    link, as a first version of stop 63 did, failed there with EXDEV."""
    import shutil
    import tempfile
    from pathlib import Path

    elsewhere = Path(tempfile.mkdtemp(dir="/dev/shm" if Path("/dev/shm").is_dir() else tmp_path))
    try:
        (tmp_path / "link").symlink_to(elsewhere, target_is_directory=True)
        fitted_lr.save_pretrained(tmp_path / "link")
        assert sorted(p.name for p in elsewhere.iterdir()) == ["config.json", "model.safetensors"]
        assert Classifier.from_pretrained(tmp_path / "link").model == "tfidf-lr"
    finally:
        shutil.rmtree(elsewhere)


def test_classic_save_load_round_trip_identical(fitted_lr, trec_small, tmp_path):
    texts = list(trec_small["test"]["text"][:50])
    before = fitted_lr.predict_proba(texts)
    fitted_lr.save_pretrained(tmp_path / "lr")
    after = Classifier.from_pretrained(tmp_path / "lr").predict_proba(texts)
    np.testing.assert_array_equal(before, after)


def test_a_runs_carved_test_split_saves_loads_and_a_bad_one_is_refused(fitted_lr, tmp_path):
    """config.json "test_split": how load_dataset carved the run's test split (none for trec's own),
    kept by a save and a load, so that evaluate can carve it again; a damaged one is refused by name."""
    assert fitted_lr.test_split_ is None
    fitted_lr.save_pretrained(tmp_path / "trec")
    assert "test_split" not in json.loads((tmp_path / "trec" / "config.json").read_text())
    mr = textcls.load_dataset("mr", test_fraction=0.2, split_seed=4, max_per_split=200)
    clf = Classifier("tfidf-lr").fit_dataset(mr)
    # The digest of the records carved from: the same for any carve or subsample of mr's records.
    digest = textcls.load_dataset("mr").source_digest()
    carve = {"fraction": 0.2, "split_seed": 4, "source_digest": digest}
    assert clf.test_split_ == carve
    clf.save_pretrained(tmp_path / "mr")
    config = json.loads((tmp_path / "mr" / "config.json").read_text())
    assert config["test_split"] == carve
    assert Classifier.from_pretrained(tmp_path / "mr").test_split_ == carve
    # A run saved before the digest existed still loads.
    (tmp_path / "mr" / "config.json").write_text(json.dumps({**config, "test_split": {"fraction": 0.2,
                                                                                      "split_seed": 4}}))
    assert Classifier.from_pretrained(tmp_path / "mr").test_split_ == {"fraction": 0.2, "split_seed": 4}
    for bad in (0.2, {"fraction": 0.2}, {"fraction": 1.5, "split_seed": 4}, {"fraction": 0.2, "split_seed": -1},
                {"fraction": True, "split_seed": 4}, {"fraction": 0.2, "split_seed": 4, "more": 1},
                {**carve, "source_digest": digest.upper()}, {**carve, "source_digest": None}):
        (tmp_path / "mr" / "config.json").write_text(json.dumps({**config, "test_split": bad}))
        with pytest.raises(CheckpointError, match=r"'test_split' = .* should be null or \{\"fraction\": a share"):
            Classifier.from_pretrained(tmp_path / "mr")


def test_classifier_learns_on_real_data(fitted_cnn, fitted_lr, trec_small):
    # Six classes, so chance is about 0.2-0.3 (majority class); both must clearly beat it.
    for clf in (fitted_cnn, fitted_lr):
        metrics = clf.evaluate(trec_small["test"])
        assert metrics["accuracy"] > 0.5, (clf.model, metrics["accuracy"])


def test_sklearn_clone_and_grid_search(trec_small):
    texts = list(trec_small["train"]["text"][:300])
    labels = list(trec_small["train"]["label"][:300])
    clf = Classifier("tfidf-lr", seed=3)
    twin = clone(clf)
    assert twin.get_params() == clf.get_params()
    assert twin is not clf
    grid = GridSearchCV(Classifier("fasttext-bag", epochs=1), {"lr": [0.05, 0.5]}, cv=2)
    grid.fit(texts, labels)
    assert grid.best_params_["lr"] in (0.05, 0.5)
    assert set(grid.predict(texts[:5])) <= set(labels)


def test_integer_labels_come_back_as_integers():
    texts = ["good great fine", "bad awful poor", "great good", "awful bad"] * 10
    y = [1, 0, 1, 0] * 10
    clf = Classifier("tfidf-lr").fit(texts, y)
    predicted = clf.predict(["good great"])
    assert predicted[0] == 1 and isinstance(predicted[0].item(), int)
    assert clf.score(texts, y) == 1.0


def test_unknown_model_lists_close_names():
    with pytest.raises(ConfigError, match="kim-cnn"):
        Classifier("kim-cnn-nonstatc").fit(["a b", "c d"], ["x", "y"])


def test_mismatched_lengths_are_a_data_error():
    with pytest.raises(DataError, match="2 texts but 1 labels"):
        Classifier("tfidf-lr").fit(["a", "b"], ["x"])


def test_corrupt_run_directory_names_the_file(fitted_cnn, tmp_path):
    run = fitted_cnn.save_pretrained(tmp_path / "run")
    (run / "model.safetensors").write_bytes(b"not safetensors")
    with pytest.raises(CheckpointError, match="model.safetensors"):
        Classifier.from_pretrained(run)
    fitted_cnn.save_pretrained(run)
    config = json.loads((run / "config.json").read_text())
    config["state"]["vocab_size"] += 7
    (run / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="does not match config.json"):
        Classifier.from_pretrained(run)
    (run / "config.json").write_text("{broken")
    with pytest.raises(CheckpointError, match="config.json"):
        Classifier.from_pretrained(run)
    with pytest.raises(CheckpointError, match="no such run directory"):
        Classifier.from_pretrained(tmp_path / "missing")


def test_multi_label_reuters_slice(tmp_path):
    reuters = textcls.load_dataset("reuters", max_per_split=500)
    assert reuters.multi_label
    # Adam instead of fastText's SGD: the mean-over-labels BCE shrinks each SGD step by C.
    clf = Classifier("fasttext-bag", epochs=15, params={"optimizer": "adam", "lr": 0.05}).fit_dataset(reuters)
    metrics = clf.evaluate(reuters["test"])
    assert {"micro_f1", "macro_f1", "hamming_loss"} <= set(metrics)
    assert metrics["micro_f1"] > 0.5
    predicted = clf.predict(list(reuters["test"]["text"][:20]))
    assert all(isinstance(row, list) for row in predicted)
    clf.save_pretrained(tmp_path / "ml")
    again = Classifier.from_pretrained(tmp_path / "ml")
    assert again.multi_label_
    np.testing.assert_array_equal(again.predict_proba(["wheat exports rose"]), clf.predict_proba(["wheat exports rose"]))


# ----------------------------------------------------------------- checksums and non-finite weights


def _rewrite_weights(run, change):
    """Apply ``change`` to the arrays of run/model.safetensors, re-save it and record its new
    checksum in config.json, so that only the checks after the checksum can object."""
    weights = run / "model.safetensors"
    arrays = {k: v.copy() for k, v in load_file(str(weights)).items()}
    change(arrays)
    save_file(arrays, str(weights))
    config = json.loads((run / "config.json").read_text())
    config["weights_sha256"] = hashlib.sha256(weights.read_bytes()).hexdigest()
    (run / "config.json").write_text(json.dumps(config))


@pytest.mark.parametrize("which", ["fitted_bag", "fitted_lr"])
def test_flipped_bits_in_the_weights_fail_the_checksum(which, request, tmp_path):
    clf = request.getfixturevalue(which)
    run = clf.save_pretrained(tmp_path / "run")
    weights = run / "model.safetensors"
    config = json.loads((run / "config.json").read_text())
    assert config["weights_sha256"] == hashlib.sha256(weights.read_bytes()).hexdigest()
    Classifier.from_pretrained(run)  # intact: loads
    data = bytearray(weights.read_bytes())
    data[-3] ^= 0x10  # one bit of the last tensor: still a valid safetensors file
    weights.write_bytes(bytes(data))
    with pytest.raises(CheckpointError) as err:
        Classifier.from_pretrained(run)
    assert str(err.value) == (f"{weights} does not match the checksum in config.json; the file is corrupt or "
                              "was changed, retrain or restore it")


@pytest.mark.parametrize("which", ["fitted_bag", "fitted_lr"])
def test_runs_saved_without_a_checksum_still_load(which, request, trec_small, tmp_path):
    clf = request.getfixturevalue(which)
    run = clf.save_pretrained(tmp_path / "run")
    config = json.loads((run / "config.json").read_text())
    del config["weights_sha256"]
    (run / "config.json").write_text(json.dumps(config))
    texts = list(trec_small["test"]["text"][:20])
    np.testing.assert_array_equal(Classifier.from_pretrained(run).predict_proba(texts), clf.predict_proba(texts))
    config["weights_sha256"] = "not a digest"
    (run / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="config.json: 'weights_sha256' is not a SHA-256 hex digest"):
        Classifier.from_pretrained(run)


def test_non_finite_neural_weights_are_refused_on_load(fitted_bag, tmp_path):
    run = fitted_bag.save_pretrained(tmp_path / "run")

    def poison(arrays, value):
        arrays["output.weight"][0, 0] = value

    for value in (np.nan, np.inf):
        _rewrite_weights(run, lambda arrays: poison(arrays, value))
        with pytest.raises(CheckpointError) as err:
            Classifier.from_pretrained(run)
        assert str(err.value).startswith(f"{run / 'model.safetensors'}: tensor 'output.weight' holds NaN or Inf")
        assert "retrain or restore" in str(err.value)


def test_non_finite_classic_weights_are_refused_on_load(fitted_lr, trec_small, tmp_path):
    run = fitted_lr.save_pretrained(tmp_path / "run")
    # A bias of -inf is by design (a class absent from training gets probability 0): it loads.
    _rewrite_weights(run, lambda arrays: arrays["bias"].__setitem__(0, -np.inf))
    probs = Classifier.from_pretrained(run).predict_proba(list(trec_small["test"]["text"][:5]))
    assert (probs[:, 0] == 0).all() and np.isfinite(probs).all()
    _rewrite_weights(run, lambda arrays: arrays["bias"].__setitem__(0, np.nan))
    with pytest.raises(CheckpointError, match=r"model.safetensors: tensor 'bias' holds NaN or Inf"):
        Classifier.from_pretrained(run)
    fitted_lr.save_pretrained(run)
    _rewrite_weights(run, lambda arrays: arrays["weights"].__setitem__((1, 2), np.inf))
    with pytest.raises(CheckpointError, match=r"model.safetensors: tensor 'weights' holds NaN or Inf"):
        Classifier.from_pretrained(run)


def test_non_finite_probabilities_name_the_text(trec_small, tmp_path):
    clf = Classifier("fasttext-bag", epochs=1).fit_dataset(trec_small)
    word = "capital"
    token = clf.pipeline_.vocab.index(word)
    with torch.no_grad():
        clf.model_.words.weight[token] = float("nan")
    texts = ["how many legs does a spider have ?", f"what is the {word} of france ?"]
    with pytest.raises(ModelError) as err:
        clf.predict_proba(texts)
    assert str(err.value) == ("the model produced NaN or Inf probabilities for text 1; its weights are broken "
                              "(training diverged?), retrain it (e.g. with a lower lr) or load a good run")
    assert err.value.index == 1 and isinstance(err.value, TextclsError)
    with pytest.raises(ModelError, match="for text 1"):
        clf.predict(texts)
    assert np.isfinite(clf.predict_proba(texts[:1])).all()  # text 0 never touches the broken row
    # Such a model is not saved: from_pretrained would refuse it.
    with pytest.raises(ModelError, match="tensor 'words.weight' holds NaN or Inf"):
        clf.save_pretrained(tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_non_finite_classic_probabilities_are_refused(fitted_toy):
    clf = clone(fitted_toy).fit(TOY_TEXTS, TOY_LABELS)
    clf.model_.weights_[:] = np.nan
    with pytest.raises(ModelError, match="NaN or Inf probabilities for text 0"):
        clf.predict_proba(["good", "bad"])


# ----------------------------------------------------------------- bad input: one line, naming the index


@pytest.mark.parametrize("method", ["predict", "predict_proba"])
def test_a_single_string_is_not_a_list_of_texts(fitted_toy, method):
    with pytest.raises(DataError) as err:
        getattr(fitted_toy, method)("good great")
    assert str(err.value) == (f"Classifier.{method}(X): X is one string ('good great'), not a list of texts; "
                              "pass a list with one entry per text, e.g. [text]")
    assert isinstance(err.value, ValueError)


def test_fit_refuses_a_single_string():
    with pytest.raises(DataError, match=r"Classifier.fit\(X, y\): X is one string \('abcd'\), not a list of texts"):
        Classifier("tfidf-lr").fit("abcd", ["a", "b", "a", "b"])
    with pytest.raises(DataError, match=r"y is one string \('xy'\), not a list of labels; .* e.g. \[label\]"):
        Classifier("tfidf-lr").fit(["good", "bad"], "xy")


@pytest.mark.parametrize("labels, message", [
    (TOY_LABELS[:7] + [None] + TOY_LABELS[8:],
     "label 7 is None (missing); give text 7 a class name (str or int) or drop it"),
    ([1.0, 0.0] * 4 + [float("nan")] + [0.0] * 11,
     "label 8 is NaN (missing); give text 8 a class name (str or int) or drop it"),
    (np.array([1.0, 0.0, np.nan] + [1.0] * 17),
     "label 2 is NaN (missing); give text 2 a class name (str or int) or drop it"),
    (TOY_LABELS[:3] + [7] + TOY_LABELS[4:],
     "label 3 is int 7 but label 0 is str 'pos'; use one type for all labels (all str or all int)"),
    (TOY_LABELS[:5] + [["pos"]] + TOY_LABELS[6:],
     "label 5 is ['pos'] but label 0 is one class name; pass every label as one class name, or every label "
     "as a list of class names (multi-label)"),
    ([["pos"], ["neg"], None] + [["pos"]] * 17,
     "label 2 is None (missing); give text 2 a class name (str or int) or drop it"),
    ([["pos"], ["neg", None]] + [["pos"]] * 18,
     "label 1 holds None, not a class name; pass a list of class names (str or int)"),
    # An empty list was fitted as "no class" and a repeated class merged, where a file's record
    # is refused at its line for either.
    ([[]] + [["pos"], ["neg"]] * 9 + [["pos"]],
     "label 0 is an empty list (missing); give text 0 at least one class name or drop it"),
    ([["pos"], ["neg"], ()] + [["pos"]] * 17,
     "label 2 is an empty list (missing); give text 2 at least one class name or drop it"),
    ([["pos"], ["neg", "pos", "neg"]] + [["pos"]] * 18, "label 1 names the class 'neg' twice; name each class once"),
    ([[1], [2, 2]] + [[1]] * 18, "label 1 names the class 2 twice; name each class once"),
    ([np.array([1]), np.array([2, 2])] + [np.array([1])] * 18, "label 1 names the class 2 twice; name each class once"),
])
def test_missing_or_inconsistent_labels_name_the_record(labels, message):
    with pytest.raises(DataError) as err:
        Classifier("tfidf-lr").fit(TOY_TEXTS, labels)
    assert str(err.value) == message


@pytest.mark.parametrize("bad, message", [
    (None, "text 4 is NoneType, not a string; pass every text as a str"),
    (3, "text 4 is int, not a string; pass every text as a str"),
    (b"good", "text 4 is bytes, not a string; pass every text as a str (decode bytes first)"),
    ("", "text 4 is empty; a model cannot classify it, drop it or give it content"),
    (" \t\n", "text 4 is only whitespace; a model cannot classify it, drop it or give it content"),
])
def test_bad_texts_name_their_index_in_fit_and_predict(fitted_toy, bad, message):
    texts = TOY_TEXTS[:4] + [bad] + TOY_TEXTS[5:]
    with pytest.raises(DataError) as err:
        Classifier("tfidf-lr").fit(texts, TOY_LABELS)
    assert str(err.value) == message and err.value.index == 4
    for method in (fitted_toy.predict, fitted_toy.predict_proba):
        with pytest.raises(DataError) as err:
            method(texts[:6])
        assert str(err.value) == message and err.value.index == 4


def test_the_input_checks_leave_the_number_out_where_the_caller_names_the_line():
    """first=None: textcls predict --input puts 'f.txt:3: ' before the message (one text a line)."""
    from textcls.inputs import check_finite_probabilities, check_texts, task_indices

    with pytest.raises(DataError, match=r"^the text is only whitespace; a model cannot classify it") as err:
        check_texts(["good", " "], first=None)
    assert err.value.index == 1
    with pytest.raises(UnknownTaskError, match=r"^the text has task 'music', which the model was not trained on"):
        task_indices(["books", "music"], 2, ["books", "dvd"], "fcsr-mtl", first=None)
    with pytest.raises(ModelError, match=r"^run: the model produced NaN or Inf probabilities for the text; its"):
        check_finite_probabilities(np.array([[0.5, 0.5], [np.nan, 0.5]]), "run", "retrain it", first=None)


def test_evaluate_names_the_split_of_an_empty_text(fitted_toy):
    import datasets

    split = datasets.Dataset.from_dict({"text": ["good", "bad", "  "], "label": ["pos", "neg", "pos"]})
    with pytest.raises(DataError) as err:
        fitted_toy.evaluate(split, where="toy/test")
    assert str(err.value) == ("toy/test: text 2 is only whitespace; a model cannot classify it, drop it or give "
                              "it content")


def test_fit_accepts_iterators_and_numpy_arrays():
    clf = Classifier("tfidf-lr").fit(iter(TOY_TEXTS), (label for label in TOY_LABELS))
    assert list(clf.classes_) == ["neg", "pos"]
    clf = Classifier("tfidf-lr").fit(np.array(TOY_TEXTS), np.array(TOY_LABELS))
    assert list(clf.predict(np.array(["good great", "awful bad"]))) == ["pos", "neg"]


# ----------------------------------------------------------------- scikit-learn conventions


@pytest.mark.parametrize("call", [
    lambda clf: clf.predict(["good"]),
    lambda clf: clf.predict_proba(["good"]),
    lambda clf: clf.evaluate(None),
    lambda clf: clf.save_pretrained("unused-dir"),
    lambda clf: clf.num_parameters(),
    lambda clf: clf.score(["good"], ["pos"]),
])
def test_using_an_unfitted_classifier_is_sklearns_not_fitted_error(call, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(sklearn.exceptions.NotFittedError) as err:
        call(Classifier("tfidf-lr"))
    assert isinstance(err.value, NotFittedError) and isinstance(err.value, TextclsError)
    assert isinstance(err.value, ValueError) and isinstance(err.value, AttributeError)
    assert "was called before fit(); call fit(X, y) first" in str(err.value)
    assert not (tmp_path / "unused-dir").exists()


def test_error_classes_follow_sklearn():
    for cls in (DataError, ConfigError, CheckpointError, ModelError):
        assert issubclass(cls, TextclsError) and issubclass(cls, ValueError)
    assert NotFittedError.__mro__[1:3] == (TextclsError, sklearn.exceptions.NotFittedError)
    assert NotFittedError("a\nb").args == ("a b",)  # still one line


def test_sklearn_fitted_checks_clone_and_get_params(fitted_toy):
    unfitted = Classifier("tfidf-lr", epochs=3, params={"C": 2.0})
    with pytest.raises(sklearn.exceptions.NotFittedError):
        check_is_fitted(unfitted)
    check_is_fitted(fitted_toy)
    # The methods stay visible on an unfitted estimator (NotFittedError is an AttributeError,
    # but it is only raised when a method is called).
    for name in ("predict", "predict_proba", "score", "fit"):
        assert hasattr(unfitted, name)
    twin = clone(unfitted)
    assert twin.get_params() == unfitted.get_params() and twin.params == {"C": 2.0}
    refit = clone(fitted_toy)
    assert not hasattr(refit, "model_")
    with pytest.raises(sklearn.exceptions.NotFittedError):
        check_is_fitted(refit)
    assert refit.get_params() == fitted_toy.get_params()


@pytest.mark.parametrize("check", ["check_estimators_unfitted", "check_estimator_cloneable",
                                   "check_get_params_invariance", "check_set_params", "check_no_attributes_set_in_init",
                                   "check_parameters_default_constructible", "check_estimator_repr"])
def test_sklearn_estimator_checks(check):
    from sklearn.utils import estimator_checks

    getattr(estimator_checks, check)("Classifier", Classifier("tfidf-lr"))


# ----------------------------------------------------------------- multi-label labels given in Python

ML_TEXTS = ["red apple", "green apple", "red car", "blue car", "red green thing", "blue thing"] * 4
ML_INTS = [[2, 10], [7, 10], [2], [3], [2, 7], [3]] * 4


def test_multi_label_int_labels_stay_ints_through_score_save_serve_and_the_cli(tmp_path, capsys):
    """fit turned them into strings: predict gave ['2'], and score refused the very labels the
    model was fitted on ("label 0 is 2, which the model does not know")."""
    from fastapi.testclient import TestClient

    from textcls import cli
    from textcls.serve import create_app

    clf = Classifier("tfidf-lr").fit(ML_TEXTS, ML_INTS)
    assert clf.classes_.tolist() == [2, 3, 7, 10]  # by value, as single-label classes: 2 before 10
    predicted = clf.predict(ML_TEXTS)
    assert all(isinstance(v, (int, np.integer)) for row in predicted for v in row) and any(predicted)
    expected = np.mean([set(map(int, p)) == set(t) for p, t in zip(predicted, ML_INTS)])
    assert clf.score(ML_TEXTS, ML_INTS) == expected
    clf.save_pretrained(tmp_path / "run")
    again = Classifier.from_pretrained(tmp_path / "run")
    assert again.classes_.tolist() == [2, 3, 7, 10]
    assert [list(map(int, row)) for row in again.predict(ML_TEXTS[:6])] == [list(map(int, r)) for r in predicted[:6]]
    with TestClient(create_app(tmp_path / "run", freeze_gc=False)) as client:
        answer = client.post("/predict", json={"text": ML_TEXTS[0]}).json()["predictions"][0]
    assert answer["labels"] == list(map(int, predicted[0])) and all(type(v) is int for v in answer["labels"])
    assert cli._run(["predict", str(tmp_path / "run"), ML_TEXTS[0]]) == 0
    written = json.loads(capsys.readouterr().out)
    assert written["labels"] == answer["labels"] and all(type(v) is int for v in written["labels"])


def test_multi_label_y_in_scikit_learn_is_lists_with_kfold_and_an_indicator_matrix_is_refused():
    """Following scikit-learn's own advice for lists of labels (a 0/1 matrix) gave "y is a table;
    pass one column of it, e.g. df['text']", which does not say how to pass multi-label labels."""
    import pandas as pd
    from sklearn.model_selection import KFold
    from sklearn.preprocessing import MultiLabelBinarizer

    labels = [[{2: "red", 3: "blue", 7: "green", 10: "fruit"}[n] for n in row] for row in ML_INTS]
    search = GridSearchCV(Classifier("tfidf-lr"), {"seed": [0, 1]}, cv=KFold(2)).fit(ML_TEXTS, labels)
    assert search.best_estimator_.multi_label_ and 0 <= search.best_score_ <= 1
    indicator = MultiLabelBinarizer().fit_transform(labels)
    for call, y in (("fit", indicator), ("fit", pd.DataFrame(indicator)), ("score", indicator)):
        with pytest.raises(DataError) as err:
            method = getattr(search.best_estimator_ if call == "score" else Classifier("tfidf-lr"), call)
            method(ML_TEXTS, y)
        assert str(err.value).startswith(f"Classifier.{call}(X, y): y is a table (")
        assert "24 x 4); pass one label per text: a class name (one column, e.g. df['label']), or for " \
               "multi-label a list of class names (from a 0/1 indicator matrix: MultiLabelBinarizer's " \
               "inverse_transform(Y)); with lists, scikit-learn's cross-validation needs cv=KFold(n)" in str(err.value)


# --------------------------------------------------------------------------- parameters, labels and devices
# (found by a review of the practitioner API at 39abcb1; each test failed there)

_TEXTS = ["good movie", "great film", "bad movie", "awful film", "ok thing", "meh thing"] * 4


def test_evaluate_matches_the_label_values_fit_kept():
    """A model fitted on ints refused a split of the same ints ('label 0 is not one the model
    knows (known: 0, 1, 2)'); a hub ClassLabel's ids are matched by value, else by its names."""
    import datasets

    ints = [0, 0, 1, 1, 2, 2] * 4
    by_int = Classifier("tfidf-lr").fit(_TEXTS, ints)
    assert by_int.evaluate(datasets.Dataset.from_dict({"text": _TEXTS, "label": ints}))["accuracy"] == 1.0
    names = ["pos", "neg", "mid"]
    ids = datasets.Dataset.from_dict({"text": _TEXTS, "label": ints}, features=datasets.Features(
        {"text": datasets.Value("string"), "label": datasets.ClassLabel(names=names)}))
    assert by_int.evaluate(ids)["accuracy"] == 1.0  # fitted on the ids: matched by value
    by_name = Classifier("tfidf-lr").fit(_TEXTS, [names[i] for i in ints])
    assert by_name.evaluate(ids)["accuracy"] == 1.0  # fitted on the names: matched by the ClassLabel's names
    flags = [bool(i % 2) for i in ints]
    assert Classifier("tfidf-lr").fit(_TEXTS, flags).evaluate(
        datasets.Dataset.from_dict({"text": _TEXTS, "label": flags}))["accuracy"] == 1.0
    # Ids that are neither the model's classes nor named as them stay an error at the record.
    with pytest.raises(DataError, match=r"^evaluation data: record 0: label '0' is not one the model knows "
                                        r"\(known: mid, neg, pos\)"):
        by_name.evaluate(datasets.Dataset.from_dict({"text": _TEXTS, "label": ints}))


def test_numpy_scalars_from_a_search_train_and_save(tmp_path):
    """np.arange / RandomizedSearchCV values trained, then save_pretrained failed: 'Object of type
    int64 is not JSON serializable'."""
    labels = ["p", "p", "n", "n", "m", "m"] * 4
    search = GridSearchCV(Classifier("fasttext-bag"), {"epochs": np.arange(1, 3)}, cv=2).fit(_TEXTS * 2, labels * 2)
    search.best_estimator_.save_pretrained(tmp_path / "best")
    saved = json.loads((tmp_path / "best" / "config.json").read_text())
    assert type(saved["estimator"]["epochs"]) is int and saved["recipe"]["epochs"] == saved["estimator"]["epochs"]
    clf = Classifier("tfidf-lr", seed=np.int64(3), params={"C_grid": [np.float64(1.0), np.float32(10.0)]})
    clf.fit(_TEXTS, labels).save_pretrained(tmp_path / "lr")
    saved = json.loads((tmp_path / "lr" / "config.json").read_text())["estimator"]
    assert saved["seed"] == 3 and saved["params"] == {"C_grid": [1.0, 10.0]}


def test_a_parameter_set_in_two_places_is_refused():
    """params={'epochs': 3} beat epochs=1 and params={'seed': 5} lost to seed=0, without a word."""
    with pytest.raises(ConfigError, match=r"^parameter 'epochs' is given twice, as epochs=1 and in "
                                          r"params=\{'epochs': 3\}; set it in one place \(the keyword epochs=\)$"):
        Classifier("fasttext-bag", epochs=1, params={"epochs": 3}).fit(_TEXTS, [0, 1] * 12)
    with pytest.raises(ConfigError, match=r"^params=\{'seed': 5\}: the seed is the classifier's own parameter "
                                          r"\(seed=0 here\), which params cannot change; pass seed=5 instead$"):
        Classifier("tfidf-lr", params={"seed": 5}).fit(_TEXTS, [0, 1] * 12)


def test_a_save_after_set_params_writes_the_fitted_parameters(tmp_path):
    """set_params(model='tfidf-nb') after fitting tfidf-lr, then a save, wrote "model": "tfidf-nb"
    beside the LR weights: the loaded classifier (and a clone of it) named another model."""
    clf = Classifier("tfidf-lr").fit(_TEXTS, [0, 1, 2] * 8)
    clf.set_params(model="tfidf-nb", seed=7)
    clf.save_pretrained(tmp_path / "run")
    loaded = Classifier.from_pretrained(tmp_path / "run")
    assert (loaded.model, loaded.seed, loaded.preset_.name) == ("tfidf-lr", 0, "tfidf-lr")
    assert clone(loaded).get_params()["model"] == "tfidf-lr"


def test_a_run_saved_on_a_gpu_loads_on_a_machine_without_one(tmp_path, monkeypatch):
    """A run trained with device="cuda" loaded with that device, and every predict then failed on
    a CPU-only machine ('parameter 'device' = cuda: no CUDA GPU is available'); the CLI and
    Predictor fell back to cpu, from_pretrained (and so textcls serve) did not."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    Classifier("tfidf-lr").fit(_TEXTS, [0, 1, 2] * 8).save_pretrained(tmp_path / "run")
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    config["estimator"]["device"] = "cuda"
    (tmp_path / "run" / "config.json").write_text(json.dumps(config))
    notes = []
    loaded = Classifier.from_pretrained(tmp_path / "run", note=notes.append)
    assert loaded.device == "cpu" and list(loaded.predict(["good movie"])) == [0]
    assert notes == [f"note: {tmp_path / 'run'} was trained on cuda, which this machine lacks; running on cpu"]
    assert Classifier.from_pretrained(tmp_path / "run", device="auto").device == "auto"
    with pytest.raises(ConfigError, match=r"^device cuda: no CUDA GPU is available"):
        Classifier.from_pretrained(tmp_path / "run", device="cuda")
