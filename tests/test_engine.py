"""The training engine: learning, schedules, early stopping, resume, clipping, weights, bf16, logs."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from ddp_worker import BagOfWords, Output, build_vocab, encode, read_reuters, trec_splits
from textcls.data.batching import EncodedDataset, make_loader
from textcls.errors import CheckpointError, ConfigError, DataError
from textcls.recipe import Recipe, register_lr_lambda
from textcls.train import build_optimizer, build_scheduler, fit, predict_proba
from textcls.train import engine
from textcls.train.engine import CSV_COLUMNS, step_seed
from tolerance import KERNEL, approx32


def loaders(train, dev, batch_size, seed=0):
    return make_loader(train, batch_size, shuffle=True, seed=seed), make_loader(dev, 64, shuffle=False)


def tiny_datasets(n_train=64, n_dev=20, num_classes=2, seed=0):
    """Random short documents; used where the content does not matter."""
    rng = np.random.default_rng(seed)

    def make(n):
        ids = [rng.integers(2, 30, size=rng.integers(1, 6)).tolist() for _ in range(n)]
        return EncodedDataset(ids, [i % num_classes for i in range(n)], num_classes=num_classes)

    return make(n_train), make(n_dev)


def without_seconds(history):
    return [{k: v for k, v in row.items() if "seconds" not in k} for row in history]


# ----------------------------------------------------------------------------- learning


def test_loss_falls_and_dev_accuracy_beats_chance_on_trec():
    (train, dev, _), names, vocab_size = trec_splits(600, 200)
    majority = np.bincount(dev.labels).max() / len(dev)
    torch.manual_seed(0)
    model = BagOfWords(vocab_size, len(names))
    recipe = Recipe(optimizer="adam", lr=3e-2, epochs=3, batch_size=32)
    result = fit(model, *loaders(train, dev, 32), recipe, num_classes=len(names), label_names=names, progress=False)

    losses = [row["train_loss"] for row in result.history]
    assert losses[0] > losses[1] > losses[2]
    assert losses[2] < 0.7 * losses[0]
    assert majority < 0.27
    assert result.best_metrics["accuracy"] > majority + 0.25
    assert result.epochs_run == 3 and not result.stopped_early
    assert result.best_epoch == 1 + int(np.argmax([row["dev_accuracy"] for row in result.history]))
    # The best state is the one loaded at the end: predicting again reproduces its accuracy.
    probs = predict_proba(model, make_loader(dev, 64, shuffle=False), multi_label=False)
    assert (probs.argmax(1) == np.array(dev.labels)).mean() == pytest.approx(result.best_metrics["accuracy"])


def test_multi_label_bce_on_reuters_slice(tmp_path):
    train_texts, train_labels = read_reuters("train", 300)
    dev_texts, dev_labels = read_reuters("test", 100)
    names = sorted({l for ls in train_labels + dev_labels for l in ls})
    index = {n: i for i, n in enumerate(names)}
    vocab = build_vocab(train_texts)
    train = EncodedDataset(encode(train_texts, vocab), [[index[l] for l in ls] for ls in train_labels],
                           multi_label=True, num_classes=len(names))
    dev = EncodedDataset(encode(dev_texts, vocab), [[index[l] for l in ls] for ls in dev_labels],
                         multi_label=True, num_classes=len(names))
    torch.manual_seed(0)
    model = BagOfWords(len(vocab), len(names), dim=32)
    recipe = Recipe(lr=3e-2, epochs=3, batch_size=32, monitor="micro_f1")
    # The dev documents watched under another name too: a multi-label watch scores as dev does.
    result = fit(model, *loaders(train, dev, 32), recipe, multi_label=True, num_classes=len(names),
                 label_names=names, run_dir=tmp_path, progress=False,
                 watch_loaders={"held": make_loader(dev, 64, shuffle=False)})

    for row in result.history:
        assert row["held_accuracy"] == row["dev_accuracy"] and row["held_loss"] == row["dev_loss"]
    losses = [row["train_loss"] for row in result.history]
    assert losses[0] > losses[1] > losses[2]
    assert result.best_metrics["multi_label"] is True
    assert result.best_metrics["micro_f1"] > 0.5
    probs = predict_proba(model, make_loader(dev, 64, shuffle=False), multi_label=True)
    assert probs.shape == (100, len(names)) and probs.dtype == np.float32
    assert not np.allclose(probs.sum(1), 1.0)  # sigmoid per label, not a softmax
    multi_hot = np.zeros_like(probs)
    for i, ls in enumerate(dev_labels):
        multi_hot[i, [index[l] for l in ls]] = 1.0
    expected_loss = F.binary_cross_entropy(torch.from_numpy(probs).double(), torch.from_numpy(multi_hot).double())
    assert result.best_metrics["loss"] == pytest.approx(float(expected_loss), rel=1e-4)
    with open(tmp_path / "epochs.csv", newline="") as f:
        header = next(csv.reader(f))
    assert header == list(CSV_COLUMNS[:-1]) + ["dev_micro_f1", "held_accuracy", "held_loss", "seconds"]


def test_bf16_trains_with_fp32_master_weights_and_finite_loss():
    (train, dev, _), names, vocab_size = trec_splits(256, 100)
    seen = []

    class Recording(BagOfWords):
        def forward(self, batch):
            out = super().forward(batch)
            seen.append(out.logits.dtype)
            return out

    torch.manual_seed(0)
    model = Recording(vocab_size, len(names))
    recipe = Recipe(lr=3e-2, epochs=2, batch_size=32, precision="bf16")
    result = fit(model, *loaders(train, dev, 32), recipe, num_classes=len(names), label_names=names, progress=False)

    losses = [row["train_loss"] for row in result.history]
    assert all(math.isfinite(x) for x in losses) and losses[1] < losses[0]
    assert math.isfinite(result.best_metrics["loss"])
    assert set(seen) == {torch.bfloat16}  # the forward ran under autocast, in training and on dev
    assert all(p.dtype == torch.float32 for p in model.parameters())
    seen.clear()
    probs = predict_proba(model, make_loader(dev, 64, shuffle=False), multi_label=False, precision="bf16")
    assert set(seen) == {torch.bfloat16}
    assert probs.dtype == np.float32 and np.allclose(probs.sum(1), 1.0, atol=1e-5)


def test_predict_proba_returns_dataset_order():
    train, _ = tiny_datasets(50, 10, num_classes=3)
    torch.manual_seed(0)
    model = BagOfWords(30, 3)
    shuffled = make_loader(train, 8, shuffle=True, seed=5)  # length-bucketed: not dataset order
    assert torch.cat([b["index"] for b in shuffled]).tolist() != list(range(50))
    probs = predict_proba(model, shuffled, multi_label=False)
    model.eval()
    with torch.no_grad():
        one_by_one = [
            torch.softmax(model({"input_ids": torch.tensor([train[i]["input_ids"].tolist()]),
                                 "mask": torch.ones(1, len(train[i]["input_ids"]), dtype=torch.bool)}).logits, -1)[0]
            for i in range(50)
        ]
    np.testing.assert_allclose(probs, torch.stack(one_by_one).numpy(), **KERNEL)

    half = make_loader(train, 8, shuffle=False, num_replicas=2, rank=0)
    with pytest.raises(DataError, match="25 of the 50 documents"):
        predict_proba(model, half, multi_label=False)


# ----------------------------------------------------------------------------- optimiser and schedules


def test_build_optimizer_settings_and_trainable_only():
    model = BagOfWords(30, 3)
    model.embedding.weight.requires_grad_(False)
    trainable = {id(p) for p in model.out.parameters()}

    opt = build_optimizer(model, Recipe(optimizer="adadelta", lr=1.0, weight_decay=1e-4))
    assert isinstance(opt, torch.optim.Adadelta)
    group = opt.param_groups[0]
    assert (group["rho"], group["eps"], group["lr"], group["weight_decay"]) == (0.95, 1e-6, 1.0, 1e-4)
    assert {id(p) for p in group["params"]} == trainable

    opt = build_optimizer(model.parameters(), Recipe(optimizer="sgd", lr=0.1, momentum=0.9))
    assert isinstance(opt, torch.optim.SGD) and opt.param_groups[0]["momentum"] == 0.9
    opt = build_optimizer(model, Recipe(optimizer="adamw", lr=2e-3, betas=(0.8, 0.99), weight_decay=0.01))
    assert type(opt) is torch.optim.AdamW
    assert opt.param_groups[0]["betas"] == (0.8, 0.99) and opt.param_groups[0]["weight_decay"] == 0.01
    assert type(build_optimizer(model, Recipe(optimizer="adam"))) is torch.optim.Adam

    model.out.requires_grad_(False)
    with pytest.raises(ConfigError, match="no trainable parameters"):
        build_optimizer(model, Recipe())


@register_lr_lambda("test_inverse_decay")
def _inverse_decay(decay: float):
    return lambda epoch: 1.0 / (1.0 + decay * epoch)


@pytest.mark.parametrize("schedule, factor", [
    (None, lambda e: 1.0),
    ({"type": "step", "step_size": 3, "gamma": 0.5}, lambda e: 0.5 ** (e // 3)),
    ({"type": "milestones", "milestones": [2, 5], "gamma": 0.1}, lambda e: 0.1 ** ((e >= 2) + (e >= 5))),
    ({"type": "lambda", "name": "test_inverse_decay", "decay": 0.25}, lambda e: 1.0 / (1.0 + 0.25 * e)),
])
def test_schedule_lr_per_epoch_matches_formula(schedule, factor):
    recipe = Recipe(optimizer="sgd", lr=0.2, schedule=schedule)
    opt = build_optimizer([nn.Parameter(torch.zeros(2))], recipe)
    scheduler = build_scheduler(opt, recipe)
    lrs = []
    for _ in range(8):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        scheduler.step()
    # float64: the scheduler's lr is a Python float, as is the formula
    assert lrs == pytest.approx([0.2 * factor(e) for e in range(8)], rel=1e-12)


def test_fit_steps_the_schedule_once_per_epoch():
    train, dev = tiny_datasets()
    recipe = Recipe(optimizer="sgd", lr=0.1, epochs=7, batch_size=16,
                    schedule={"type": "milestones", "milestones": [2, 5], "gamma": 0.1})
    result = fit(BagOfWords(30, 2), *loaders(train, dev, 16), recipe, num_classes=2, progress=False)
    assert [row["lr"] for row in result.history] == pytest.approx([0.1, 0.1, 0.01, 0.01, 0.01, 0.001, 0.001])


@pytest.mark.parametrize("schedule, message", [
    ({"type": "step", "gamma": 0.5}, "step_size"),
    ({"type": "milestones", "milestones": [5, 2]}, "increasing"),
    ({"type": "step", "step_size": 2, "gama": 0.5}, "unknown parameter 'gama'"),
    ({"type": "lambda", "name": "no_such_schedule"}, "unknown learning-rate schedule 'no_such_schedule'"),
    ({"type": "lambda", "name": "test_inverse_decay", "speed": 2}, "rejected its parameters"),
])
def test_bad_schedule_is_a_config_error(schedule, message):
    recipe = Recipe(schedule=schedule)
    opt = build_optimizer([nn.Parameter(torch.zeros(2))], recipe)
    with pytest.raises(ConfigError, match=message):
        build_scheduler(opt, recipe)


# ----------------------------------------------------------------------------- early stopping


class ScriptedDev(nn.Module):
    """Trains a bias; on dev its accuracy after epoch k is ``script[k-1]`` (0.05 steps on 20 docs).

    The epoch is read from a buffer counting optimiser steps, so it is part of the state and
    shows which epoch's state the engine restored.
    """

    def __init__(self, script, steps_per_epoch, n_dev=20, num_classes=2):
        super().__init__()
        self.script, self.steps_per_epoch, self.n_dev, self.num_classes = script, steps_per_epoch, n_dev, num_classes
        self.bias = nn.Parameter(torch.zeros(num_classes))
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))

    def forward(self, batch):
        labels = batch["labels"]
        if self.training:
            return Output(self.bias.expand(len(labels), -1))
        accuracy = self.script[int(self.steps) // self.steps_per_epoch - 1]
        correct = batch["index"] < round(accuracy * self.n_dev)
        target = torch.where(correct, labels, (labels + 1) % self.num_classes)
        return Output(5.0 * F.one_hot(target, self.num_classes).float())

    def after_optimizer_step(self):
        self.steps += 1


@pytest.mark.parametrize("monitor", ["accuracy", "loss"])
def test_early_stopping_stops_at_patience_and_restores_best(monitor):
    train, dev = tiny_datasets(64, 20)
    script = [0.5, 0.8, 0.8, 0.7, 0.9, 0.95]  # a tie is not an improvement
    model = ScriptedDev(script, steps_per_epoch=4)
    recipe = Recipe(epochs=6, batch_size=16, patience=2, monitor=monitor)
    result = fit(model, *loaders(train, dev, 16), recipe, num_classes=2, progress=False)

    assert [row["dev_accuracy"] for row in result.history] == pytest.approx(script[:4])
    assert result.stopped_early and result.epochs_run == 4
    assert result.best_epoch == 2 and result.best_metrics["accuracy"] == pytest.approx(0.8)
    assert int(model.steps) == 2 * 4  # the state after epoch 2 is back in the model


def test_without_patience_all_epochs_run_and_best_is_kept():
    train, dev = tiny_datasets(64, 20)
    script = [0.5, 0.9, 0.6, 0.7]
    model = ScriptedDev(script, steps_per_epoch=4)
    result = fit(model, *loaders(train, dev, 16), Recipe(epochs=4, batch_size=16), num_classes=2, progress=False)
    assert result.epochs_run == 4 and not result.stopped_early
    assert result.best_epoch == 2 and int(model.steps) == 8


def test_the_best_state_kept_across_several_improvements_is_the_best_epochs():
    # Epochs 1-3 each improve (the kept copy is rewritten in place twice), epoch 4 does not.
    train, dev = tiny_datasets(64, 20)
    model = ScriptedDev([0.5, 0.7, 0.9, 0.6], steps_per_epoch=4)
    result = fit(model, *loaders(train, dev, 16), Recipe(epochs=4, batch_size=16), num_classes=2, progress=False)
    assert result.best_epoch == 3 and int(model.steps) == 12


def test_keep_state_rewrites_the_kept_copy_only_when_it_matches():
    model = nn.Linear(3, 2)
    kept = engine._keep_state(None, model.state_dict())
    with torch.no_grad():
        model.weight.add_(1.0)
    assert not torch.equal(kept["weight"], model.weight)  # a copy, not the live tensor
    buffer = kept["weight"]
    again = engine._keep_state(kept, model.state_dict())
    assert again is kept and again["weight"] is buffer and torch.equal(buffer, model.weight)
    other = engine._keep_state(kept, nn.Linear(3, 4).state_dict())  # another shape: a new copy
    assert other is not kept and other["weight"].shape == (4, 3) and torch.equal(buffer, model.weight)


class SparseBag(nn.Module):
    """A sparse-gradient table and a dense layer: the two kinds of gradient SGD steps take."""

    def __init__(self):
        super().__init__()
        self.table = nn.Embedding(50, 4, sparse=True)
        self.out = nn.Linear(4, 3)

    def loss(self, step):
        ids = torch.tensor([[step % 50, (7 * step) % 50, 3]])
        return F.cross_entropy(self.out(self.table(ids).mean(1)), torch.tensor([step % 3]))


def sgd_run(fast, steps=12, **sgd):
    torch.manual_seed(0)
    model = SparseBag()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5, **sgd)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda epoch: 1.0 / (epoch + 1))
    for step in range(steps):
        loss = model.loss(step)
        if fast:
            engine._zero_grad(optimizer)
            loss.backward()
            engine._optimizer_step(optimizer)
        else:
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        if step % 4 == 3:
            scheduler.step()
    return model, optimizer


def test_engine_sgd_step_updates_exactly_as_torch_sgd():
    plain, _ = sgd_run(fast=False)
    fast, optimizer = sgd_run(fast=True)
    assert engine._plain_sgd(optimizer)  # after the first step, the updates were the engine's own
    for a, b in zip(plain.state_dict().values(), fast.state_dict().values()):
        assert torch.equal(a, b)
    assert fast.table.weight.grad.is_sparse
    engine._zero_grad(optimizer)
    assert all(p.grad is None for p in fast.parameters())


@pytest.mark.parametrize("settings", [{"momentum": 0.9}, {"weight_decay": 0.01}, {"maximize": True},
                                      {"foreach": True}, "adam"])
def test_engine_sgd_step_is_torchs_for_any_other_optimiser(settings):
    model = nn.Linear(3, 2)
    if settings == "adam":
        optimizer = torch.optim.Adam(model.parameters())
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, **settings)
    torch.optim.lr_scheduler.LambdaLR(optimizer, lambda epoch: 1.0)
    model(torch.ones(1, 3)).sum().backward()
    optimizer.step()
    assert not engine._plain_sgd(optimizer)


def test_engine_sgd_step_leaves_hooks_and_overrides_to_torch():
    model = nn.Linear(3, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.optim.lr_scheduler.LambdaLR(optimizer, lambda epoch: 1.0)
    assert not engine._plain_sgd(optimizer)  # before the first real step the scheduler watches for
    model(torch.ones(1, 3)).sum().backward()
    optimizer.step()
    assert engine._plain_sgd(optimizer)
    calls = []
    handle = optimizer.register_step_post_hook(lambda *args: calls.append(1))
    assert not engine._plain_sgd(optimizer)
    engine._optimizer_step(optimizer)
    assert calls == [1]
    handle.remove()

    class Zeroing(torch.optim.SGD):
        def zero_grad(self, set_to_none=True):
            calls.append("zero_grad")

    engine._zero_grad(Zeroing(model.parameters(), lr=0.1))
    assert calls == [1, "zero_grad"] and model.weight.grad is not None


def test_unknown_monitor_fails_before_training(tmp_path):
    train, dev = tiny_datasets()
    with pytest.raises(ConfigError, match="'monitor' = 'acuracy'.*accuracy"):
        fit(BagOfWords(30, 2), *loaders(train, dev, 16), Recipe(monitor="acuracy"), num_classes=2,
            run_dir=tmp_path, progress=False)
    assert not (tmp_path / "epochs.csv").exists()


# ----------------------------------------------------------------------------- epochs.csv


def test_epochs_csv_has_one_row_per_epoch_with_the_history_values(tmp_path):
    train, dev = tiny_datasets()
    result = fit(BagOfWords(30, 2), *loaders(train, dev, 16), Recipe(epochs=3, batch_size=16), num_classes=2,
                 run_dir=tmp_path, progress=False)
    with open(tmp_path / "epochs.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == list(CSV_COLUMNS)
    assert len(rows) == 3
    for row, hist in zip(rows, result.history):
        assert int(row["epoch"]) == hist["epoch"]
        for column in CSV_COLUMNS[1:]:
            assert float(row[column]) == hist[column]
    assert [int(r["epoch"]) for r in rows] == [1, 2, 3]


def _unwatched_run():
    """The three TREC splits, a recipe, fit's keywords, and a model trained (seed 0) without a watch."""
    (train, dev, test), names, vocab_size = trec_splits(400, 200, 300)
    recipe = Recipe(optimizer="adam", lr=3e-2, epochs=4, batch_size=32)
    kwargs = dict(num_classes=len(names), label_names=names, progress=False)
    torch.manual_seed(0)
    model = BagOfWords(vocab_size, len(names), dropout=0.3)
    return (train, dev, test), names, vocab_size, recipe, kwargs, model, fit(model, *loaders(train, dev, 32), recipe,
                                                                             **kwargs)


def test_a_watched_split_is_scored_after_every_epoch_and_never_chosen_on(tmp_path):
    (train, dev, test), names, vocab_size, recipe, kwargs, plain_model, plain = _unwatched_run()
    torch.manual_seed(0)
    watched_model = BagOfWords(vocab_size, len(names), dropout=0.3)
    watched = fit(watched_model, *loaders(train, dev, 32), recipe, run_dir=tmp_path,
                  watch_loaders={"test": make_loader(test, 64, shuffle=False)}, **kwargs)
    # Watching changes neither the training nor the epoch kept on dev.
    assert [{k: v for k, v in row.items() if not k.startswith("test_")} for row in without_seconds(watched.history)] \
        == without_seconds(plain.history)
    assert watched.best_epoch == plain.best_epoch
    for key, value in plain_model.state_dict().items():
        assert torch.equal(value, watched_model.state_dict()[key]), key
    # Each epoch's test score is that epoch's model on test: the kept epoch's is the kept model's.
    probs = predict_proba(watched_model, make_loader(test, 64, shuffle=False), multi_label=False)
    kept = watched.history[watched.best_epoch - 1]
    assert kept["test_accuracy"] == pytest.approx((probs.argmax(1) == np.array(test.labels)).mean())
    assert all(0.0 <= row["test_accuracy"] <= 1.0 and row["test_loss"] > 0 for row in watched.history)
    assert len({row["test_accuracy"] for row in watched.history}) > 1  # the curve moves as the model learns
    with open(tmp_path / "epochs.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [float(row["test_accuracy"]) for row in rows] == [row["test_accuracy"] for row in watched.history]
    assert all(row["watch_seconds"] > 0 and row["watch_cpu_seconds"] >= 0 for row in watched.history)
    for name in ("dev", "test accuracy"):
        with pytest.raises(ConfigError, match="give a split name such as 'test'"):
            fit(BagOfWords(vocab_size, len(names)), *loaders(train, dev, 32), recipe,
                watch_loaders={name: make_loader(test, 64, shuffle=False)}, **kwargs)
    with pytest.raises(ConfigError, match="the test loader is split for num_replicas = 2"):
        fit(BagOfWords(vocab_size, len(names)), *loaders(train, dev, 32), recipe,
            watch_loaders={"test": make_loader(test, 64, shuffle=False, num_replicas=2, rank=0)}, **kwargs)


def test_a_run_resumed_with_a_watch_scores_only_its_own_epochs_and_trains_as_before(tmp_path):
    (train, dev, test), names, vocab_size, recipe, kwargs, straight_model, straight = _unwatched_run()
    torch.manual_seed(0)
    fit(BagOfWords(vocab_size, len(names), dropout=0.3), *loaders(train, dev, 32), recipe, run_dir=tmp_path,
        max_epochs_this_call=2, **kwargs)
    resumed_model = BagOfWords(vocab_size, len(names), dropout=0.3)
    resumed = fit(resumed_model, *loaders(train, dev, 32), recipe, run_dir=tmp_path, resume=True,
                  watch_loaders={"test": make_loader(test, 64, shuffle=False)}, **kwargs)
    # The checkpoint's epochs were not watched and keep no test score; the resumed ones have one.
    assert ["test_accuracy" in row for row in resumed.history] == [False, False, True, True]
    assert [{k: v for k, v in row.items() if not k.startswith("test_")} for row in without_seconds(resumed.history)] \
        == without_seconds(straight.history)
    for key, value in straight_model.state_dict().items():
        assert torch.equal(value, resumed_model.state_dict()[key]), key


def test_an_estimator_watches_only_a_split_the_data_holds_besides_train_and_dev():
    import textcls
    from textcls.estimators import estimator_for
    from textcls.models.registry import get_preset

    dataset = textcls.load_dataset("trec", max_per_split=100)
    for split, message in (("dev", "cannot watch split 'dev'"), ("validation", "cannot watch split 'validation'")):
        with pytest.raises(ConfigError, match=message) as err:
            estimator_for(get_preset("kim-cnn-rand")).fit(dataset, watch_splits=(split,))
        assert "train, test, dev" in str(err.value) or "train, dev, test" in str(err.value)
    with pytest.raises(ConfigError, match=r"a sequence of split names, e.g. \('test',\), not a string"):
        estimator_for(get_preset("kim-cnn-rand")).fit(dataset, watch_splits="test")


# ----------------------------------------------------------------------------- resume


def _resume_setup():
    (train, dev, _), names, vocab_size = trec_splits(256, 100)
    recipe = Recipe(optimizer="adam", lr=2e-2, epochs=4, batch_size=32, patience=3, grad_clip=1.0,
                    schedule={"type": "step", "step_size": 1, "gamma": 0.7})
    return train, dev, names, vocab_size, recipe


def test_resume_after_crash_equals_uninterrupted_run(tmp_path):
    train, dev, names, vocab_size, recipe = _resume_setup()
    kwargs = dict(num_classes=len(names), label_names=names, progress=False)

    torch.manual_seed(0)
    straight = BagOfWords(vocab_size, len(names), dropout=0.3)  # dropout: the RNG must be reproduced too
    full = fit(straight, *loaders(train, dev, 32), recipe, run_dir=tmp_path / "a", **kwargs)

    torch.manual_seed(0)
    crashed = BagOfWords(vocab_size, len(names), dropout=0.3)
    partial = fit(crashed, *loaders(train, dev, 32), recipe, run_dir=tmp_path / "b", max_epochs_this_call=2, **kwargs)
    assert partial.epochs_run == 2
    torch.manual_seed(123)  # a fresh process builds a differently initialised model
    resumed_model = BagOfWords(vocab_size, len(names), dropout=0.3)
    resumed = fit(resumed_model, *loaders(train, dev, 32), recipe, run_dir=tmp_path / "b", resume=True, **kwargs)

    assert resumed.epochs_run == 4
    assert without_seconds(resumed.history) == without_seconds(full.history)
    assert resumed.best_epoch == full.best_epoch and resumed.best_metrics == full.best_metrics
    for key, value in straight.state_dict().items():
        assert torch.equal(value, resumed_model.state_dict()[key]), key
    for run in ("a", "b"):
        with open(tmp_path / run / "epochs.csv", newline="") as f:
            assert [r["epoch"] for r in csv.DictReader(f)] == ["1", "2", "3", "4"]
    # Only the files state.json points at are left.
    state = json.loads((tmp_path / "b" / "checkpoint" / "state.json").read_text())
    kept = {entry["name"] for entry in state["files"].values()} | {"state.json"}
    assert {p.name for p in (tmp_path / "b" / "checkpoint").iterdir()} == kept

    # Resuming a finished run trains no more and returns the same result.
    again_model = BagOfWords(vocab_size, len(names), dropout=0.3)
    again = fit(again_model, *loaders(train, dev, 32), recipe, run_dir=tmp_path / "b", resume=True, **kwargs)
    assert again.history == resumed.history and again.best_epoch == full.best_epoch
    assert torch.equal(again_model.out.weight, straight.out.weight)


class Crash(Exception):
    """Stands for the process dying mid-step."""


def count_training_call(model) -> None:
    """Count a training forward pass of ``model``; its ``crash_at``-th raises ``Crash``."""
    if model.training:
        model.calls += 1
        if model.calls == model.crash_at:
            raise Crash(f"training step {model.calls}")


class CrashingBagOfWords(BagOfWords):
    """BagOfWords whose ``crash_at``-th training forward pass raises ``Crash``."""

    def __init__(self, *args, crash_at=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.crash_at, self.calls = crash_at, 0

    def forward(self, batch):
        count_training_call(self)
        return super().forward(batch)


def _state(run_dir):
    return json.loads((run_dir / "checkpoint" / "state.json").read_text())


def test_resume_mid_epoch_after_crashes_equals_uninterrupted_run(tmp_path):
    # 256 documents in batches of 32: 8 steps an epoch; checkpoints every 3 steps of the run.
    train, dev, names, vocab_size, recipe = _resume_setup()
    kwargs = dict(num_classes=len(names), label_names=names, progress=False)

    torch.manual_seed(0)
    straight = BagOfWords(vocab_size, len(names), dropout=0.3)  # dropout: each step's masks must be re-derived
    full = fit(straight, *loaders(train, dev, 32), recipe, run_dir=tmp_path / "a", **kwargs)

    stepped = recipe.with_overrides(checkpoint_steps=3)
    torch.manual_seed(0)
    with pytest.raises(Crash):  # in step 5 of epoch 1: the last checkpoint is after its step 3
        fit(CrashingBagOfWords(vocab_size, len(names), dropout=0.3, crash_at=5), *loaders(train, dev, 32),
            stepped, run_dir=tmp_path / "b", **kwargs)
    state = _state(tmp_path / "b")
    assert (state["epoch"], state["step"], state["global_step"]) == (0, 3, 3)
    assert state["files"]["best_model"] is None and state["partial_epoch"]["counts"] == [96]

    torch.manual_seed(7)  # a fresh process builds a differently initialised model
    with pytest.raises(Crash):  # steps 4..12 run, step 13 (step 5 of epoch 2) dies
        fit(CrashingBagOfWords(vocab_size, len(names), dropout=0.3, crash_at=10), *loaders(train, dev, 32),
            stepped, run_dir=tmp_path / "b", resume=True, **kwargs)
    state = _state(tmp_path / "b")
    assert (state["epoch"], state["step"], state["global_step"]) == (1, 4, 12)
    assert state["files"]["best_model"]["name"] == "model-epoch0001.safetensors"
    assert state["files"]["model"]["name"] == "model-epoch0001-step000004.safetensors"
    with open(tmp_path / "b" / "epochs.csv", newline="") as f:
        assert [r["epoch"] for r in csv.DictReader(f)] == ["1"]

    # The rest, checkpointing at another rate (a resumable change).
    torch.manual_seed(123)
    resumed_model = BagOfWords(vocab_size, len(names), dropout=0.3)
    resumed = fit(resumed_model, *loaders(train, dev, 32), recipe.with_overrides(checkpoint_steps=5),
                  run_dir=tmp_path / "b", resume=True, **kwargs)
    assert resumed.epochs_run == 4
    assert without_seconds(resumed.history) == without_seconds(full.history)
    assert resumed.best_epoch == full.best_epoch and resumed.best_metrics == full.best_metrics
    for key, value in straight.state_dict().items():
        assert torch.equal(value, resumed_model.state_dict()[key]), key
    with open(tmp_path / "b" / "epochs.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["epoch"] for r in rows] == ["1", "2", "3", "4"]
    assert [float(r["train_loss"]) for r in rows] == [r["train_loss"] for r in full.history]
    state = _state(tmp_path / "b")
    assert (state["epoch"], state["step"], state["global_step"]) == (4, 0, 32)
    kept = {entry["name"] for entry in state["files"].values()} | {"state.json"}
    assert {p.name for p in (tmp_path / "b" / "checkpoint").iterdir()} == kept


def test_step_checkpoints_do_not_change_the_result_and_seeds_differ_per_step():
    train, dev, names, vocab_size, recipe = _resume_setup()
    recipe = recipe.with_overrides(epochs=2)
    kwargs = dict(num_classes=len(names), label_names=names, progress=False)
    results = []
    for checkpoint_steps in (None, 1):
        torch.manual_seed(0)
        model = BagOfWords(vocab_size, len(names), dropout=0.3)
        results.append((fit(model, *loaders(train, dev, 32), recipe.with_overrides(checkpoint_steps=checkpoint_steps),
                            **kwargs), model))
    (plain, plain_model), (stepped, stepped_model) = results
    assert without_seconds(plain.history) == without_seconds(stepped.history)
    assert torch.equal(plain_model.out.weight, stepped_model.out.weight)
    seeds = {step_seed(s, e, k) for s in (0, 1) for e in (0, 1) for k in range(50)}
    assert len(seeds) == 200 and all(0 <= x < 2**63 for x in seeds)
    with pytest.raises(ConfigError, match="checkpoint_steps"):
        Recipe(checkpoint_steps=0)


def test_torn_writes_are_invisible_and_a_changed_loader_is_refused_mid_epoch(tmp_path):
    train, dev, names, vocab_size, recipe = _resume_setup()
    recipe = recipe.with_overrides(epochs=2, checkpoint_steps=3)
    kwargs = dict(num_classes=len(names), label_names=names, progress=False)
    torch.manual_seed(0)
    straight = BagOfWords(vocab_size, len(names), dropout=0.3)
    fit(straight, *loaders(train, dev, 32), recipe, **kwargs)

    torch.manual_seed(0)
    with pytest.raises(Crash):
        fit(CrashingBagOfWords(vocab_size, len(names), dropout=0.3, crash_at=11), *loaders(train, dev, 32),
            recipe, run_dir=tmp_path, **kwargs)
    ckpt = tmp_path / "checkpoint"
    assert _state(tmp_path)["files"]["model"]["name"] == "model-epoch0001-step000001.safetensors"
    # What a kill during the next checkpoint's writes leaves: torn files that state.json does not name.
    (ckpt / "model-epoch0001-step000004.safetensors").write_bytes(b"\x00" * 10)
    (ckpt / ".optimizer-epoch0001-step000004.safetensors.x1y2z3ab.tmp").write_bytes(b"torn")
    (ckpt / ".state.json.k9m8n7pq.tmp").write_text('{"format": "textcls-checkp')
    (tmp_path / ".epochs.csv.a1b2c3d4.tmp").write_text("epoch,lr")
    # ... and what the engine's own temporaries were called before it used artifacts' writer.
    (ckpt / "state.json.tmp-99999").write_text('{"format": "textcls-checkp')
    (tmp_path / "epochs.csv.tmp-99999").write_text("epoch,lr")

    # Batches of 16 make another epoch: the checkpoint's batch 1 of 8 cannot be continued.
    with pytest.raises(CheckpointError, match="an epoch of 8 batches, but this train loader has 16"):
        fit(BagOfWords(vocab_size, len(names), dropout=0.3), *loaders(train, dev, 16), recipe,
            run_dir=tmp_path, resume=True, **kwargs)

    resumed = BagOfWords(vocab_size, len(names), dropout=0.3)
    fit(resumed, *loaders(train, dev, 32), recipe, run_dir=tmp_path, resume=True, **kwargs)
    for key, value in straight.state_dict().items():
        assert torch.equal(value, resumed.state_dict()[key]), key
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint", "epochs.csv"]
    assert not [p.name for p in ckpt.iterdir() if "tmp" in p.name or "step" in p.name]


def _postfix_steps(monkeypatch, refresh_s):
    """Train 2 epochs of 8 batches with progress on; the (bar, step) of every loss shown."""
    import tqdm.auto

    shown = []

    class Recording(tqdm.auto.tqdm):
        def set_postfix(self, *args, **kwargs):
            shown.append((self.desc, self.n))
            return super().set_postfix(*args, **kwargs)

    monkeypatch.setattr(tqdm.auto, "tqdm", Recording)
    monkeypatch.setattr(engine, "LOSS_REFRESH_S", refresh_s)
    train, dev, names, vocab_size, recipe = _resume_setup()
    fit(BagOfWords(vocab_size, len(names)), *loaders(train, dev, 32), recipe.with_overrides(epochs=2),
        num_classes=len(names), label_names=names, progress=True)
    return shown


def test_the_bars_loss_is_shown_after_an_epochs_last_batch_and_at_most_every_refresh_interval(monkeypatch):
    # Was: every 20 steps from the first, so an epoch of 8 batches showed its first batch's loss.
    assert _postfix_steps(monkeypatch, 1e9) == [("epoch 1/2", 1), ("epoch 1/2", 8), ("epoch 2/2", 1), ("epoch 2/2", 8)]
    assert _postfix_steps(monkeypatch, 0.0) == [(f"epoch {e}/2", n) for e in (1, 2) for n in range(1, 9)]


# ----------------------------------------------------------------------------- how often epochs checkpoint


class FakeClock:
    """``engine.time`` with a ``monotonic`` that moves only when an epoch runs: 30 s an epoch."""

    def __init__(self, monkeypatch, seconds_per_epoch=30.0):
        import time as real

        self.now, self.perf_counter, self.process_time = 1000.0, real.perf_counter, real.process_time
        monkeypatch.setattr(engine, "time", self)
        run_epoch = engine._run_epoch

        def timed_epoch(*args, **kwargs):
            row = run_epoch(*args, **kwargs)
            self.now += seconds_per_epoch
            return row

        monkeypatch.setattr(engine, "_run_epoch", timed_epoch)

    def monotonic(self):
        return self.now


def _checkpointed_epochs(monkeypatch):
    """The epochs after which ``fit`` writes a checkpoint (its ``len(history)`` at each write)."""
    written = []
    save = engine.save_checkpoint

    def recording_save(ckpt_dir, model, optimizer, scheduler, recipe, task, progress, position=None, **kwargs):
        written.append(len(progress.history))
        return save(ckpt_dir, model, optimizer, scheduler, recipe, task, progress, position, **kwargs)

    monkeypatch.setattr(engine, "save_checkpoint", recording_save)
    return written


@pytest.mark.parametrize("seconds, max_epochs, expected", [
    (0.0, None, [1, 2, 3, 4]),  # every epoch, as before checkpoint_seconds
    (60.0, None, [2, 4]),  # 30 s epochs: every second one, and the last
    (25.0, None, [1, 2, 3, 4]),  # epochs longer than the interval: every one
    (1e9, None, [4]),  # the last epoch of the call only
    (1e9, 3, [3]),  # ... also where max_epochs_this_call ends the call
])
def test_epoch_checkpoints_wait_for_checkpoint_seconds_and_the_calls_last_epoch_is_always_written(
        tmp_path, monkeypatch, seconds, max_epochs, expected):
    train, dev, names, vocab_size, recipe = _resume_setup()
    FakeClock(monkeypatch)
    written = _checkpointed_epochs(monkeypatch)
    torch.manual_seed(0)
    result = fit(BagOfWords(vocab_size, len(names)), *loaders(train, dev, 32),
                 recipe.with_overrides(patience=None, checkpoint_seconds=seconds), run_dir=tmp_path,
                 max_epochs_this_call=max_epochs, num_classes=len(names), label_names=names, progress=False)
    assert written == expected
    assert _state(tmp_path)["epoch"] == result.epochs_run == expected[-1]
    with open(tmp_path / "epochs.csv", newline="") as f:  # the log has every epoch run, checkpointed or not
        assert [int(r["epoch"]) for r in csv.DictReader(f)] == list(range(1, result.epochs_run + 1))
    with pytest.raises(ConfigError, match="checkpoint_seconds"):
        Recipe(checkpoint_seconds=-1)


class BiasOnly(nn.Module):
    """Logits from a bias alone: every document gets the same class, so dev accuracy stops
    improving after the first epoch and the best epoch stays 1. It counts its optimiser steps
    in a buffer, so that its state differs after every epoch; ``crash_at``: as CrashingBagOfWords."""

    def __init__(self, num_classes, crash_at=None):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(num_classes))
        self.register_buffer("steps", torch.zeros((), dtype=torch.int64))
        self.crash_at, self.calls = crash_at, 0

    def forward(self, batch):
        count_training_call(self)
        return Output(self.bias.expand(batch["input_ids"].shape[0], -1))

    def after_optimizer_step(self):
        self.steps += 1


def test_a_resume_from_an_older_checkpoint_redoes_the_later_epochs_and_keeps_the_best_epochs_weights(
        tmp_path, monkeypatch):
    # 256 documents in batches of 32: 8 steps an epoch. Epochs "take" 30 s; checkpoints every 60 s.
    train, dev, names, vocab_size, recipe = _resume_setup()
    recipe = recipe.with_overrides(patience=None, checkpoint_seconds=60.0)
    kwargs = dict(num_classes=len(names), label_names=names, progress=False)
    FakeClock(monkeypatch)
    straight = BiasOnly(len(names))
    full = fit(straight, *loaders(train, dev, 32), recipe.with_overrides(checkpoint_seconds=0.0),
               run_dir=tmp_path / "a", **kwargs)
    assert full.best_epoch == 1 and int(straight.steps) == 8  # the best state is epoch 1's

    # Killed in epoch 4: epochs 2 and 4 were due a checkpoint, but only epoch 2's was written.
    with pytest.raises(Crash):
        fit(BiasOnly(len(names), crash_at=3 * 8 + 2), *loaders(train, dev, 32), recipe, run_dir=tmp_path / "b",
            **kwargs)
    with open(tmp_path / "b" / "epochs.csv", newline="") as f:
        assert [r["epoch"] for r in csv.DictReader(f)] == ["1", "2", "3"]
    state = _state(tmp_path / "b")
    assert state["epoch"] == 2 and state["progress"]["best_epoch"] == 1
    # Epoch 1 was never checkpointed itself: its weights were written from the kept best state.
    assert state["files"]["best_model"]["name"] == "model-epoch0001.safetensors"
    from safetensors.torch import load_file

    assert int(load_file(str(tmp_path / "b" / "checkpoint" / "model-epoch0001.safetensors"))["steps"]) == 8
    assert int(load_file(str(tmp_path / "b" / "checkpoint" / state["files"]["model"]["name"]))["steps"]) == 16

    # The resume starts after epoch 2 and trains epochs 3 and 4 again: the same run as unbroken.
    resumed_model = BiasOnly(len(names))
    resumed = fit(resumed_model, *loaders(train, dev, 32), recipe, run_dir=tmp_path / "b", resume=True, **kwargs)
    assert without_seconds(resumed.history) == without_seconds(full.history)
    assert resumed.best_epoch == 1 and int(resumed_model.steps) == 8
    for key, value in straight.state_dict().items():
        assert torch.equal(value, resumed_model.state_dict()[key]), key
    with open(tmp_path / "b" / "epochs.csv", newline="") as f:
        assert [r["epoch"] for r in csv.DictReader(f)] == ["1", "2", "3", "4"]
    state = _state(tmp_path / "b")
    assert state["epoch"] == 4 and state["files"]["best_model"]["name"] == "model-epoch0001.safetensors"
    kept = {entry["name"] for entry in state["files"].values()} | {"state.json"}
    assert {p.name for p in (tmp_path / "b" / "checkpoint").iterdir()} == kept


def test_a_step_checkpoint_after_a_skipped_epoch_checkpoint_holds_the_best_epochs_weights(tmp_path, monkeypatch):
    train, dev, names, vocab_size, recipe = _resume_setup()
    recipe = recipe.with_overrides(patience=None, checkpoint_seconds=1e9, checkpoint_steps=11)
    kwargs = dict(num_classes=len(names), label_names=names, progress=False)
    with pytest.raises(Crash):  # in epoch 2 (steps 9-16), after its step checkpoint at step 11 of the run
        fit(BiasOnly(len(names), crash_at=14), *loaders(train, dev, 32), recipe, run_dir=tmp_path, **kwargs)
    state = _state(tmp_path)
    assert (state["epoch"], state["step"]) == (1, 3) and state["progress"]["best_epoch"] == 1
    assert state["files"]["best_model"]["name"] == "model-epoch0001.safetensors"
    from safetensors.torch import load_file

    assert int(load_file(str(tmp_path / "checkpoint" / "model-epoch0001.safetensors"))["steps"]) == 8
    straight = BiasOnly(len(names))
    fit(straight, *loaders(train, dev, 32), recipe, **kwargs)
    resumed = BiasOnly(len(names))
    fit(resumed, *loaders(train, dev, 32), recipe, run_dir=tmp_path, resume=True, **kwargs)
    for key, value in straight.state_dict().items():
        assert torch.equal(value, resumed.state_dict()[key]), key


def test_resume_refuses_a_changed_recipe_and_a_missing_checkpoint(tmp_path):
    train, dev, names, vocab_size, recipe = _resume_setup()
    kwargs = dict(num_classes=len(names), label_names=names, progress=False)
    fit(BagOfWords(vocab_size, len(names)), *loaders(train, dev, 32), recipe, run_dir=tmp_path,
        max_epochs_this_call=1, **kwargs)
    with pytest.raises(CheckpointError, match="recipe lr = 0.02 but this run has lr = 0.05"):
        fit(BagOfWords(vocab_size, len(names)), *loaders(train, dev, 32), recipe.with_overrides(lr=0.05),
            run_dir=tmp_path, resume=True, **kwargs)
    with pytest.raises(CheckpointError, match="model-epoch0001.safetensors does not fit this model"):
        fit(BagOfWords(vocab_size, len(names), dim=16), *loaders(train, dev, 32), recipe,
            run_dir=tmp_path, resume=True, **kwargs)
    with pytest.raises(CheckpointError, match="no checkpoint to resume from"):
        fit(BagOfWords(vocab_size, len(names)), *loaders(train, dev, 32), recipe,
            run_dir=tmp_path / "elsewhere", resume=True, **kwargs)


def test_resume_refuses_other_training_data_and_takes_a_checkpoint_written_without_its_digest(tmp_path):
    """The loaders' sizes were all a resume checked of the data: the same number of batches of
    other records (the same file split with another seed, whose test split then holds records
    already trained on) resumed, rc 0."""
    train, dev, names, vocab_size, recipe = _resume_setup()
    kwargs = dict(num_classes=len(names), label_names=names, progress=False)
    fit(BagOfWords(vocab_size, len(names)), *loaders(train, dev, 32), recipe, run_dir=tmp_path / "a",
        max_epochs_this_call=1, data_digest="0" * 64, **kwargs)
    with pytest.raises(CheckpointError, match=r"state.json was written for other training data .* resume with the "
                                              r"same data and options, or delete .*checkpoint to start over$"):
        fit(BagOfWords(vocab_size, len(names)), *loaders(train, dev, 32), recipe, run_dir=tmp_path / "a",
            resume=True, data_digest="1" * 64, **kwargs)
    fit(BagOfWords(vocab_size, len(names)), *loaders(train, dev, 32), recipe, run_dir=tmp_path / "a",
        resume=True, data_digest="0" * 64, max_epochs_this_call=1, **kwargs)
    # A checkpoint of a version without the digest resumes (nothing to compare it with).
    fit(BagOfWords(vocab_size, len(names)), *loaders(train, dev, 32), recipe, run_dir=tmp_path / "b",
        max_epochs_this_call=1, **kwargs)
    result = fit(BagOfWords(vocab_size, len(names)), *loaders(train, dev, 32), recipe, run_dir=tmp_path / "b",
                 resume=True, data_digest="1" * 64, max_epochs_this_call=1, **kwargs)
    assert result.epochs_run == 2


@pytest.mark.parametrize("damage", ["flip_model_byte", "truncate_optimizer", "garble_state"])
def test_corrupt_checkpoint_is_a_checkpoint_error_naming_the_file(tmp_path, damage):
    train, dev = tiny_datasets()
    recipe = Recipe(epochs=3, batch_size=16)
    fit(BagOfWords(30, 2), *loaders(train, dev, 16), recipe, num_classes=2, run_dir=tmp_path,
        max_epochs_this_call=1, progress=False)
    ckpt = tmp_path / "checkpoint"
    if damage == "flip_model_byte":
        target = ckpt / "model-epoch0001.safetensors"
        data = bytearray(target.read_bytes())
        data[-3] ^= 0xFF
        target.write_bytes(bytes(data))
    elif damage == "truncate_optimizer":
        target = ckpt / "optimizer-epoch0001.safetensors"
        target.write_bytes(target.read_bytes()[:40])
    else:
        target = ckpt / "state.json"
        target.write_text(target.read_text()[:100])
    with pytest.raises(CheckpointError) as info:
        fit(BagOfWords(30, 2), *loaders(train, dev, 16), recipe, num_classes=2, run_dir=tmp_path,
            resume=True, progress=False)
    assert str(target) in str(info.value) and "\n" not in str(info.value)


# ----------------------------------------------------------------------------- clipping and class weights


def test_grad_clip_caps_the_gradient_norm():
    (train, dev, _), names, vocab_size = trec_splits(128, 50)

    def run(clip):
        norms = []

        class Recording(BagOfWords):
            def after_optimizer_step(self):
                norms.append(float(torch.norm(torch.stack([p.grad.norm() for p in self.parameters()]))))

        torch.manual_seed(0)
        recipe = Recipe(optimizer="sgd", lr=0.5, epochs=1, batch_size=16, grad_clip=clip)
        fit(Recording(vocab_size, len(names)), *loaders(train, dev, 16), recipe, num_classes=len(names),
            progress=False)
        return norms

    clipped, free = run(0.05), run(None)
    assert len(clipped) == len(free) == 8
    assert max(clipped) <= 0.05 * (1 + 1e-5)
    assert min(clipped) == pytest.approx(0.05, rel=1e-5)  # every step hit the cap
    assert min(free) > 0.05


def test_balanced_class_weights_change_the_loss_by_the_formula():
    rng = np.random.default_rng(0)
    ids = [rng.integers(2, 30, size=4).tolist() for _ in range(100)]
    labels = [0] * 70 + [1] * 20 + [2] * 10
    train = EncodedDataset(ids, labels, num_classes=3)
    dev = EncodedDataset(ids[:30], labels[:30], num_classes=3)
    counts = np.bincount(labels)

    def first_epoch_loss(class_weights):
        torch.manual_seed(0)
        model = BagOfWords(30, 3)
        with torch.no_grad():
            model.out.bias.copy_(torch.tensor([1.0, -0.5, 0.3]))
        logits = model(next(iter(make_loader(train, 100, shuffle=False)))).logits.detach()
        # One global batch and an lr of 1e-9: the loss is that of the initial model.
        recipe = Recipe(optimizer="sgd", lr=1e-9, epochs=1, batch_size=100, class_weights=class_weights)
        result = fit(model, make_loader(train, 100, shuffle=False), make_loader(dev, 100, shuffle=False), recipe,
                     num_classes=3, class_counts=counts, progress=False)
        return result.history[0]["train_loss"], logits

    weighted, logits = first_epoch_loss("balanced")
    plain, _ = first_epoch_loss(None)
    order = next(iter(make_loader(train, 100, shuffle=False)))["index"]
    target = torch.tensor(labels)[order]
    balanced = torch.tensor(100 / (3 * counts), dtype=torch.float32)
    assert weighted == approx32(float(F.cross_entropy(logits, target, weight=balanced)), kernel=True)
    assert plain == approx32(float(F.cross_entropy(logits, target)), kernel=True)
    assert abs(weighted - plain) > 0.05

    with pytest.raises(ConfigError, match="needs class_counts"):
        fit(BagOfWords(30, 3), make_loader(train, 100, shuffle=False), make_loader(dev, 100, shuffle=False),
            Recipe(class_weights="balanced"), num_classes=3, progress=False)


def test_a_train_loader_split_for_another_world_size_is_refused():
    train, dev = tiny_datasets()
    split = make_loader(train, 16, shuffle=True, num_replicas=2, rank=0)
    with pytest.raises(ConfigError, match="num_replicas = 2 but this run has world size 1"):
        fit(BagOfWords(30, 2), split, make_loader(dev, 16, shuffle=False), Recipe(), num_classes=2, progress=False)


def test_dev_loss_with_class_weights_does_not_depend_on_the_batching():
    _, dev = tiny_datasets(n_dev=37, num_classes=3, seed=4)
    torch.manual_seed(0)
    model = BagOfWords(30, 3)
    weights = np.array([0.5, 1.0, 4.0], dtype=np.float32)
    criterion = engine._make_criterion(False, weights, torch.device("cpu"))
    losses = [engine._evaluate(model, make_loader(dev, size, shuffle=False), criterion, False, "fp32", torch.device("cpu"))[2]
              for size in (1, 5, 64)]
    # The class-weighted mean over the whole split (sum of w_y * loss / sum of w_y), however it is batched.
    with torch.no_grad():
        batch = next(iter(make_loader(dev, 64, shuffle=False)))
        logits, labels = model(batch).logits, batch["labels"]
        expected = float((torch.tensor(weights)[labels] * F.cross_entropy(logits, labels, reduction="none")).sum()
                         / torch.tensor(weights)[labels].sum())
    assert losses == approx32([expected] * 3, kernel=True)


class _HookedBag(BagOfWords):
    """BagOfWords that counts its optimiser steps and records whether its forward ran under autocast."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.hook_calls, self.autocast_seen = 0, []

    def forward(self, batch):
        self.autocast_seen.append(torch.is_autocast_enabled("cpu"))
        return super().forward(batch)

    def after_optimizer_step(self):
        self.hook_calls += 1


def test_training_step_leaves_the_weights_fit_leaves():
    """The timing scripts (``textcls speed``, benchmarks/time_epochs.py and rnn_packing.py) step
    through ``training_step``: on the same one-batch epoch from the same weights it must leave
    the weights ``fit`` leaves, with the model's hook run once."""
    train, dev = tiny_datasets(16, 8)
    recipe = Recipe(epochs=1, batch_size=16, lr=0.5, optimizer="sgd")
    torch.manual_seed(0)
    fitted = _HookedBag(30, 2)
    stepped = _HookedBag(30, 2)
    stepped.load_state_dict(fitted.state_dict())
    fit(fitted, make_loader(train, 16, shuffle=False), make_loader(dev, 64, shuffle=False), recipe, num_classes=2,
        progress=False)
    stepped.train()
    step = engine.training_step(stepped, build_optimizer(stepped, recipe), recipe)
    loss = step(next(iter(make_loader(train, 16, shuffle=False))))

    assert loss.ndim == 0 and torch.isfinite(loss)
    assert fitted.hook_calls == stepped.hook_calls == 1
    for name, value in fitted.state_dict().items():
        assert stepped.state_dict()[name].flatten().tolist() == approx32(value.flatten().tolist()), name
    assert not torch.equal(stepped.out.weight, _HookedBag(30, 2).out.weight)


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_training_step_runs_the_forward_in_the_recipe_precision(precision):
    train, _ = tiny_datasets(16, 8)
    recipe = Recipe(epochs=1, batch_size=16, precision=precision)
    model = _HookedBag(30, 2)
    engine.training_step(model, build_optimizer(model, recipe), recipe)(next(iter(make_loader(train, 16, shuffle=False))))
    assert model.autocast_seen == [precision == "bf16"]


class _DenormalProbe(_HookedBag):
    """Records, at every forward, whether a denormal float32 (1e-39) survives a multiplication."""

    def __init__(self, vocab_size, num_classes):
        super().__init__(vocab_size, num_classes)
        self.denormal_survived = []

    def forward(self, batch):
        self.denormal_survived.append(torch.tensor(1e-39).mul(1.0).item() != 0.0)
        return super().forward(batch)


def test_training_flushes_denormals_and_restores_the_mode_found():
    """Gradients fading through time reach the denormal range, which an Intel CPU computes in
    microcode; training steps flush them (``_denormals_flushed``), evaluation and the caller's
    process keep their own mode."""
    train, dev = tiny_datasets(16, 8)
    recipe = Recipe(epochs=1, batch_size=16, lr=0.5, optimizer="sgd")
    model = _DenormalProbe(30, 2)
    fit(model, make_loader(train, 16, shuffle=False), make_loader(dev, 64, shuffle=False), recipe, num_classes=2,
        progress=False)
    # One training forward (flushed), then the dev pass (the caller's mode: denormals kept).
    assert model.denormal_survived == [False, True]
    assert not engine._flushing_denormals()

    step = engine.training_step(model, build_optimizer(model, recipe), recipe)
    step(next(iter(make_loader(train, 16, shuffle=False))))
    assert model.denormal_survived[-1] is False and not engine._flushing_denormals()

    # A caller who flushes already keeps flushing afterwards.
    torch.set_flush_denormal(True)
    try:
        step(next(iter(make_loader(train, 16, shuffle=False))))
        assert engine._flushing_denormals()
    finally:
        torch.set_flush_denormal(False)
