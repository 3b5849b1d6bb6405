"""The `static-finetune` preset: distilled MiniLM word-piece vectors fine-tuned with an MLP head
(models/static_finetune.py), fitted by TfidfEstimator, predicting with NumPy alone.

The vectors come from the user cache (text/embeddings.minilm_static_model); the first test on a
fresh machine distils them once (25-45 s).
"""

import numpy as np
import pytest
import torch

from textcls import Classifier
from textcls.errors import CheckpointError, ConfigError
from textcls.estimators import estimator_for
from textcls.models.registry import create_model, get_preset
from textcls.models.static_finetune import StaticFinetuneModel, batch_size_for

from static_runs import assert_it_beats_the_majority_class, assert_the_saved_run_predicts_alone
from tolerance import KERNEL


@pytest.fixture(scope="module")
def fitted(trec_600):
    return Classifier("static-finetune", seed=0).fit_dataset(trec_600)


def _model(static_vectors, **params):
    return StaticFinetuneModel(2, **params).use_vectors(*static_vectors)


def test_it_learns_trec_and_keeps_the_best_dev_epoch(fitted, trec_600):
    assert_it_beats_the_majority_class(fitted, trec_600["test"], 0.2)
    selection = fitted.estimator_.model_.selection_
    scores = {int(epoch): (s["score"], -s["log_loss"]) for epoch, s in selection["dev"].items()}
    assert selection["chosen"] == max(scores, key=lambda e: (scores[e], -e))
    assert len(scores) == selection["epochs_run"] <= get_preset("static-finetune").arch["max_epochs"]
    report = fitted.estimator_.fit_report()
    assert (report["epochs_run"], report["best_epoch"]) == (selection["epochs_run"], selection["chosen"])
    assert report["dev_metrics"]["accuracy"] == scores[selection["chosen"]][0] == max(s[0] for s in scores.values())
    params = fitted.estimator_.num_parameters()
    head = 256 * 512 + 512 + 512 * 6 + 6
    assert params == {"total": head + 29525 * 256, "trainable": head + 29525 * 256, "embedding": 29525 * 256,
                      "non_embedding": head}


def test_the_recipe_fields_it_trains_by_name_its_own_parameters(trec_600):
    """--epochs 5 on static-finetune said it was "fitted without epochs or batches": it runs up to
    max_epochs epochs of its own, and nothing said how to set them."""
    texts, labels = ["good film", "bad film", "fine film", "poor film"], ["p", "n", "p", "n"]
    for field, value, own in (("epochs", 5, "max_epochs"), ("lr", 0.01, "adam_lr"),
                              ("patience", 2, "early_stop_patience")):
        with pytest.raises(ConfigError, match=(
                rf"^model 'static-finetune' is a classic model that trains epochs of its own, set by its parameters "
                rf"\(max_epochs, adam_lr, early_stop_patience\), not by the recipe; '{field}' cannot be set on it "
                rf"\(of the recipe, only dev_fraction and seed can\): set its parameter '{own}' instead \(CLI: --set "
                rf"{own}={value}; Python: params=\{{'{own}': {value}\}}\)$")):
            Classifier("static-finetune", **{field: value}).fit(texts, labels)
    with pytest.raises(ConfigError, match=r"^model 'static-finetune' is a classic model that trains epochs of its "
                                          r"own; 'batch_size' cannot be set on it \(only dev_fraction and seed can\)"):
        Classifier("static-finetune", batch_size=64).fit(texts, labels)
    # The parameter the message names sets what it says.
    two = Classifier("static-finetune", params={"max_epochs": 2}).fit_dataset(trec_600)
    assert two.estimator_.model_.selection_["epochs_run"] == 2


def test_numpy_prediction_is_the_torch_forward(fitted, trec_600):
    model = fitted.estimator_.model_
    texts = list(trec_600["test"]["text"])[:20]
    flat, lengths = model.vectorizer_.piece_ids(texts)
    offsets = torch.from_numpy(np.concatenate([[0], np.cumsum(lengths)[:-1]]))
    bag = torch.nn.EmbeddingBag.from_pretrained(torch.from_numpy(model.vectorizer_.embedding), mode="mean")
    sentence = torch.nn.functional.normalize(bag(torch.from_numpy(flat), offsets), dim=1).double()
    hidden = torch.relu(sentence @ torch.from_numpy(model.hidden_weights_).T + torch.from_numpy(model.hidden_bias_))
    expected = (hidden @ torch.from_numpy(model.weights_).T + torch.from_numpy(model.bias_)).numpy()
    np.testing.assert_allclose(model.decision_function(texts), expected, **KERNEL)


def test_fine_tuning_moves_only_the_training_pieces(static_vectors):
    texts = ["a wonderful film", "an awful film", "wonderful acting", "awful acting"] * 4
    labels = np.array([1, 0, 1, 0] * 4)
    for rule in ("lazy", "dense"):  # dense Adam too: a row without a gradient has no moments to move it
        tuned = _model(static_vectors, max_epochs=3, table_adam=rule).fit(texts, labels, dev_texts=texts[:4],
                                                                          dev_y=labels[:4])
        seen = np.unique(tuned.vectorizer_.piece_ids(texts)[0])
        moved = np.flatnonzero(np.any(tuned.vectorizer_.embedding != static_vectors[1], axis=1))
        assert set(moved) == set(seen), rule
    frozen = _model(static_vectors, max_epochs=3, tune_vectors=False).fit(texts, labels, dev_texts=texts[:4],
                                                                    dev_y=labels[:4])
    np.testing.assert_array_equal(frozen.vectorizer_.embedding, static_vectors[1])
    assert frozen.frozen_parameters() == frozen.embedding_parameters() == 29525 * 256


def test_the_same_seed_gives_the_same_model_and_another_seed_another(trec_600):
    first, again, other = (Classifier("static-finetune", seed=s).fit_dataset(trec_600) for s in (1, 1, 2))
    texts = list(trec_600["test"]["text"])[:50]
    np.testing.assert_array_equal(first.predict_proba(texts), again.predict_proba(texts))
    assert not np.array_equal(first.predict_proba(texts), other.predict_proba(texts))


def test_a_padded_batch_equals_one_text_at_a_time(fitted, trec_600):
    texts = list(trec_600["test"]["text"])[:12] + ["word " * 300, "\u2603\u2603"]  # the last: no known piece
    together = fitted.predict_proba(texts)
    alone = np.concatenate([fitted.predict_proba([t]) for t in texts])
    np.testing.assert_allclose(together, alone, **KERNEL)


def test_multi_label_targets_train_sigmoids(static_vectors):
    texts = ["stocks fell", "rain and wind", "stocks fell in the storm", "sunny day"] * 8
    labels = np.array([[1, 0], [0, 1], [1, 1], [0, 0]] * 8)
    model = StaticFinetuneModel(2, max_epochs=20).use_vectors(*static_vectors)
    model.fit(texts, labels, dev_texts=texts[:4], dev_y=labels[:4], seed=0)
    assert model.multi_label_ and model.selection_["metric"].startswith("dev micro_f1")
    np.testing.assert_array_equal(model.predict(texts[:4]), labels[:4])


def test_a_saved_run_predicts_the_same_without_the_cache(fitted, trec_600, tmp_path, monkeypatch):
    again = assert_the_saved_run_predicts_alone(fitted, list(trec_600["test"]["text"]), tmp_path / "run", monkeypatch)
    assert again.estimator_.model_.selection_["chosen"] == fitted.estimator_.model_.selection_["chosen"]


def test_bad_settings_missing_dev_and_a_corrupt_state_are_one_clear_error(fitted, static_vectors):
    with pytest.raises(ConfigError, match="'dropout' = 1.0"):
        create_model(get_preset("static-finetune").with_overrides(dropout=1.0), num_classes=2)
    with pytest.raises(ConfigError, match="'table_adam' = 'adagrad' is not one of lazy, dense"):
        create_model(get_preset("static-finetune").with_overrides(table_adam="adagrad"), num_classes=2)
    with pytest.raises(ConfigError, match="chooses its epoch on dev"):
        _model(static_vectors).fit(["a", "b"], np.array([0, 1]))
    arrays, meta = fitted.estimator_.state()
    with pytest.raises(CheckpointError, match="lacks array 'hidden_weights'"):
        estimator_for(get_preset("static-finetune")).load_state(
            {k: v for k, v in arrays.items() if k != "hidden_weights"}, meta)
    with pytest.raises(CheckpointError, match="head arrays of shapes"):
        estimator_for(get_preset("static-finetune")).load_state({**arrays, "hidden_bias": arrays["hidden_bias"][1:]},
                                                                meta)
    with pytest.raises(CheckpointError, match="format 'textcls.static-lr/1'"):
        estimator_for(get_preset("static-finetune")).load_state(arrays, {**meta, "format": "textcls.static-lr/1"})


def test_the_batch_size_follows_model2vecs_rule():
    assert [batch_size_for(n) for n in (10, 960, 1919, 1920, 8_600, 120_000)] == [32, 32, 32, 64, 256, 512]


def test_list_models_and_the_tables_name_its_vectors():
    from typer.testing import CliRunner

    from textcls.benchmark.report import vectors_without_info
    from textcls.cli import app

    result = CliRunner().invoke(app, ["list-models"])
    row = next(line for line in result.output.splitlines() if line.startswith("static-finetune "))
    assert row.split()[1:3] == ["classic", "minilm-static"]
    entry = {"kind": "classic", "runs": [{"settings": get_preset("static-finetune").to_dict()}]}
    assert vectors_without_info(entry) == "minilm-static (fine-tuned sentence vectors)"


def test_row_adam_is_sparse_adams_update():
    from textcls.models.static_finetune import RowAdam

    torch.manual_seed(0)
    start = torch.randn(10, 4)
    ours, theirs = start.clone(), torch.nn.Parameter(start.clone())
    row_adam, sparse_adam = RowAdam(ours, lr=0.01), torch.optim.SparseAdam([theirs], lr=0.01)
    for rows in ([1, 3, 4], [3, 7], [0, 1, 9], [3]):
        rows = torch.tensor(rows)
        grad = torch.randn(len(rows), 4)
        row_adam.step(rows, grad)
        theirs.grad = torch.sparse_coo_tensor(rows[None], grad, theirs.shape, check_invariants=True)
        sparse_adam.step()
        torch.testing.assert_close(ours, theirs.detach(), **KERNEL)
    untouched = [2, 5, 6, 8]
    torch.testing.assert_close(ours[untouched], start[untouched], rtol=0, atol=0)


def test_catch_up_adam_is_dense_torch_adam_on_the_rows_a_batch_touches():
    from textcls.models.static_finetune import CatchUpAdam

    torch.manual_seed(0)
    start = torch.randn(30, 4)
    ours, theirs = start.clone(), torch.nn.Parameter(start.clone())
    catch_up, dense_adam = CatchUpAdam(ours, lr=0.01), torch.optim.Adam([theirs], lr=0.01)
    generator = torch.Generator().manual_seed(1)
    # Rows 0-24 come and go (row 0 alone at steps 0 and 60, then idle for 60 steps); 25-29 never
    # have a gradient.
    for step in range(120):
        rows = torch.tensor([0]) if step % 60 == 0 else torch.unique(torch.randint(1, 25, (4,), generator=generator))
        grad = torch.randn(len(rows), 4, generator=generator)
        catch_up.step(rows, grad)
        theirs.grad = torch.zeros_like(theirs).index_copy_(0, rows, grad)
        dense_adam.step()
        if step in (59, 119):
            catch_up.flush()
            # float32 steps, summed in another order; the closed form leaves out eps (1e-8)
            torch.testing.assert_close(ours, theirs.detach(), rtol=1e-4, atol=1e-5)
    # Two lazy steps move row 0 by at most 2 * lr = 0.02; dense Adam kept it moving while idle.
    assert (ours[0] - start[0]).abs().max() > 0.05
    torch.testing.assert_close(ours[25:], start[25:], rtol=0, atol=0)


def test_head_adam_is_torch_adams_update():
    from textcls.models.static_finetune import HeadAdam

    torch.manual_seed(0)
    ours, theirs = torch.nn.Linear(6, 3), torch.nn.Linear(6, 3)
    theirs.load_state_dict(ours.state_dict())
    head_adam, torch_adam = HeadAdam(ours.parameters(), lr=0.01), torch.optim.Adam(theirs.parameters(), lr=0.01)
    start = ours.weight.detach().clone()
    for _ in range(4):
        x, y = torch.randn(5, 6), torch.randint(0, 3, (5,))
        for model, optimizer in ((ours, head_adam), (theirs, torch_adam)):
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        for mine, reference in zip(ours.parameters(), theirs.parameters()):
            torch.testing.assert_close(mine, reference, **KERNEL)
    assert not torch.equal(ours.weight, start)
    ours.bias.grad = None  # a parameter without a gradient stays where it is
    bias = ours.bias.detach().clone()
    head_adam.step()
    assert torch.equal(ours.bias, bias)
