"""Resuming a checkpoint with what cannot continue it is refused in one line, and the checkpoint
is kept: a model that writes no checkpoints (tfidf-lr, an ensemble), another preset, or a
changed number of epochs under a schedule that decays over them (fasttext-bag's linear-decay)."""

import hashlib
import shutil

import pytest

import textcls
from textcls import Classifier
from textcls.cli import main
from textcls.errors import CheckpointError, ConfigError

# Small tables: the checkpoint is written in well under a second.
SMALL = {"bigram_buckets": 1000}


@pytest.fixture(scope="module")
def trec_small():
    return textcls.load_dataset("trec", max_per_split=120)


@pytest.fixture()
def interrupted(tmp_path, trec_small):
    """``r.partial`` as `textcls train --model fasttext-bag --epochs 2` leaves it when killed
    after its checkpoint: the checkpoint of 2 epochs, and no finished run."""
    partial = tmp_path / "r.partial"
    Classifier("fasttext-bag", epochs=2, params=SMALL).fit_dataset(trec_small, run_dir=partial)
    assert (partial / "checkpoint" / "state.json").is_file()
    return partial


def _digest(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_cli_resume_with_a_classic_model_is_refused_naming_the_checkpoints_model(interrupted, capsys):
    # Was: the checkpoint deleted, tfidf-lr trained from scratch into the run folder, exit 0.
    before = _digest(interrupted)
    run_dir = interrupted.with_name("r")
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--model", "tfidf-lr", "--data", "trec", "--max-per-split", "120", "--resume",
              "--run-dir", str(run_dir), "--no-progress"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith(f"error: {interrupted / 'checkpoint'} holds a checkpoint of model 'fasttext-bag'")
    assert "'tfidf-lr' trains without checkpoints" in err and "resume with model 'fasttext-bag'" in err
    assert _digest(interrupted) == before and not run_dir.exists()
    assert sorted(p.name for p in interrupted.parent.iterdir()) == ["r.partial"]


def test_api_resume_with_a_model_that_writes_no_checkpoints_is_refused(interrupted, trec_small):
    before = _digest(interrupted)
    for model in ("tfidf-lr", "ensemble"):
        clf = Classifier(model)
        with pytest.raises(CheckpointError, match=f"checkpoint of model 'fasttext-bag'; '{model}' trains without"):
            clf.fit_dataset(trec_small, run_dir=interrupted, resume=True)
    assert _digest(interrupted) == before
    # Without resume, or without a checkpoint there, a classic model trains as before.
    Classifier("tfidf-lr").fit_dataset(trec_small, run_dir=interrupted.with_name("fresh"), resume=True)


def test_resume_under_another_preset_is_refused_by_name(interrupted, trec_small):
    with pytest.raises(CheckpointError, match="was written for model 'fasttext-bag' but this run trains "
                                              "'fasttext-bag-unigram'; resume with model 'fasttext-bag'"):
        Classifier("fasttext-bag-unigram", epochs=2).fit_dataset(
            trec_small, run_dir=interrupted, resume=True)


@pytest.mark.parametrize("epochs", [3, 1])
def test_changing_epochs_under_a_decay_over_them_says_why_and_what_to_do(interrupted, trec_small, epochs):
    # Was: "... schedule = {..., 'epochs': 2} but this run has {..., 'epochs': 3}; resume with the
    # same recipe (only epochs, patience, checkpoint_steps may change)", which contradicts itself.
    before = _digest(interrupted)
    with pytest.raises(CheckpointError) as info:
        Classifier("fasttext-bag", epochs=epochs, params=SMALL).fit_dataset(trec_small, run_dir=interrupted,
                                                                             resume=True)
    message = str(info.value)
    assert "its learning rate decays over 2 epochs (schedule 'linear-decay')" in message
    assert f"cannot change to {epochs} epochs" in message and "only epochs" not in message
    assert message.endswith(f"resume with epochs = 2 (--epochs 2), or train {epochs} epochs anew in another run folder")
    assert _digest(interrupted) == before
    # The same epochs resume (the run is complete: nothing more to train).
    clf = Classifier("fasttext-bag", epochs=2, params=SMALL).fit_dataset(trec_small, run_dir=interrupted, resume=True)
    assert clf.fit_result_.epochs_run == 2


@pytest.fixture()
def finished(interrupted, trec_small):
    """``r``, a run trained and saved in Python: fit_dataset(run_dir=r), then save_pretrained(r)."""
    run_dir = interrupted.with_name("r")
    clf = Classifier("fasttext-bag", epochs=2, params=SMALL).fit_dataset(trec_small, run_dir=run_dir)
    clf.save_pretrained(run_dir)
    return run_dir


def test_fit_into_a_finished_run_without_resume_is_refused_before_training(finished, trec_small, monkeypatch):
    # Was: the training rewrote the saved run's epochs.csv (and its checkpoint) from its first epoch.
    # fit_dataset refuses before the estimator prepares any data (the engine's own refusal comes
    # only after that), so the estimator's fit must not even be called.
    from textcls.estimators import NeuralEstimator

    fits = []
    monkeypatch.setattr(NeuralEstimator, "fit", lambda self, *args, **kwargs: fits.append(args))
    before = _digest(finished)
    with pytest.raises(ConfigError) as info:
        Classifier("fasttext-bag", epochs=1, params=SMALL).fit_dataset(trec_small, run_dir=finished)
    assert fits == []
    message = str(info.value)
    assert message.startswith(f"{finished}: holds a finished run already") and "\n" not in message
    assert "pass another run_dir" in message and "save_pretrained" in message
    assert _digest(finished) == before


@pytest.mark.parametrize("model", ["tfidf-lr", "ensemble"])
def test_a_model_that_writes_nothing_into_run_dir_fits_into_a_saved_run_as_before(finished, trec_small, model):
    """tfidf-lr and the ensemble write neither epochs.csv nor checkpoint/ into run_dir, so a fit
    with run_dir=R leaves a saved run in R as it was: a daily retrain, fit_dataset(run_dir=R) then
    save_pretrained(R), goes on working (it was refused after its first day, as a training that
    would rewrite R's files). Its save over another model's run is still refused, by its records."""
    daily = finished.with_name("daily")
    for _ in range(2):
        Classifier(model).fit_dataset(trec_small, run_dir=daily).save_pretrained(daily)
        assert sorted(p.name for p in daily.iterdir()) == ["config.json", "model.safetensors"]
    before = _digest(finished)
    other = Classifier(model).fit_dataset(trec_small, run_dir=finished)
    assert _digest(finished) == before
    with pytest.raises(ConfigError, match=f"^cannot save to {finished}: it holds the run of another model, whose "
                                          "epochs.csv would then describe this one"):
        other.save_pretrained(finished)
    assert _digest(finished) == before


def test_a_model_fitted_with_resume_into_another_models_saved_run_cannot_save_over_it(finished, trec_small):
    """A fit with resume into a saved run of another model whose checkpoint/ was deleted: tfidf-lr
    writes no checkpoint and no epochs.csv, so it never trained there, and the run's epochs.csv is
    that model's record. It was taken for the fit's own log (the folder counted as the one the fit
    trained in), and tfidf-lr saved over the fasttext-bag run, epochs.csv then describing it."""
    shutil.rmtree(finished / "checkpoint")
    before = _digest(finished)
    other = Classifier("tfidf-lr").fit_dataset(trec_small, run_dir=finished, resume=True)
    with pytest.raises(ConfigError, match=f"^cannot save to {finished}: it holds the run of another model, whose "
                                          "epochs.csv would then describe this one"):
        other.save_pretrained(finished)
    assert _digest(finished) == before and Classifier.from_pretrained(finished).model == "fasttext-bag"


def test_the_engine_refuses_a_finished_run_too(finished, trec_small):
    """Estimator.fit and textcls.train.fit, which fit_dataset calls, take run_dir as well."""
    from textcls.estimators import estimator_for
    from textcls.models.registry import get_preset

    before = _digest(finished)
    estimator = estimator_for(get_preset("fasttext-bag").with_overrides(epochs=1, **SMALL))
    with pytest.raises(ConfigError, match="holds a finished run already"):
        estimator.fit(trec_small, run_dir=finished)
    assert _digest(finished) == before
