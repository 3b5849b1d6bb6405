"""fasttext-bag: sparse table gradients, fastText's 2**21 buckets, masking, the data-scaled
recipe (``fasttext_recipe_for`` / ``Recipe.auto``), old saved runs, and learning on TREC."""

import json
import numpy as np
import pytest
import torch
from torch import nn

import textcls
from textcls import Classifier
from textcls.data.batching import EncodedDataset
from textcls.data.prepare import prepare, resolve_recipe
from textcls.data.splits import ensure_dev
from textcls.errors import ConfigError
from textcls.models import create_model
from textcls.models.fasttext_bag import FASTTEXT_RECIPE, fasttext_recipe_for
from textcls.models.registry import get_preset
from textcls.train.optim import build_optimizer
from textcls.recipe import MAX_LR, Recipe
from textcls.text.pipeline import UNK_ID
from tolerance import KERNEL

VOCAB = 60
BUCKETS = 50


def _pad(docs, length=None, filler=0):
    """``[B, L]`` ids padded with ``filler`` and the mask of the real positions (from lengths)."""
    length = length or max(1, max(len(d) for d in docs))
    ids = torch.full((len(docs), length), filler, dtype=torch.long)
    mask = torch.zeros(len(docs), length, dtype=torch.bool)
    for row, doc in enumerate(docs):
        ids[row, : len(doc)] = torch.tensor(doc, dtype=torch.long)
        mask[row, : len(doc)] = True
    return ids, mask


def _batch(words, bigrams, word_length=None, bigram_length=None, filler=0):
    ids, mask = _pad(words, word_length, filler)
    bigram_ids, bigram_mask = _pad(bigrams, bigram_length, filler)
    return {"input_ids": ids, "mask": mask, "bigram_ids": bigram_ids, "bigram_mask": bigram_mask}


def _docs(lengths, seed, high):
    rng = np.random.default_rng(seed)
    return [rng.integers(2, high, size=n).tolist() for n in lengths]


def _model(**overrides):
    torch.manual_seed(0)
    model = create_model("fasttext-bag", num_classes=3, vocab_size=VOCAB, bigram_buckets=BUCKETS, **overrides)
    with torch.no_grad():
        model.output.weight.normal_()  # fastText starts it at zero, which would hide errors
    return model


# ---------------------------------------------------------------- the model


def test_default_preset_has_fasttexts_two_million_buckets_and_sparse_tables():
    preset = get_preset("fasttext-bag")
    assert preset.inputs["bigram_buckets"] == 2**21
    model = create_model(preset, num_classes=2, vocab_size=VOCAB)
    assert model.bigrams.weight.shape == (2**21 + 1, 10)
    assert model.words.sparse and model.bigrams.sparse
    # Still nn.Embedding tables, so parameter counts that look for embeddings find them.
    assert all(isinstance(t, nn.Embedding) for t in model.tables())


def test_an_unknown_word_adds_a_zero_row_so_the_class_ranking_is_as_without_it(trec_slice):
    """fastText drops a word it never saw; the bag's [UNK] row is zero, so the mean only shrinks."""
    model = _model().eval()
    with torch.no_grad():
        known = model(_batch([[5, 9, 12]], [[]])).logits
        with_unknown = model(_batch([[5, UNK_ID, 9, 12]], [[]])).logits
    torch.testing.assert_close(with_unknown, known * 3 / 4, **KERNEL)
    assert torch.equal(with_unknown.argmax(1), known.argmax(1))
    # Training (the per-document loop) leaves it at zero: no training document holds [UNK].
    clf = Classifier("fasttext-bag").fit_dataset(trec_slice)
    assert not clf.model_.words.weight[UNK_ID].any()
    assert clf.model_.words.weight[UNK_ID + 1:].abs().sum(1).min() > 0


def test_table_gradients_are_sparse_and_touch_only_the_batch_rows():
    model = _model()
    words, bigrams = _docs([5, 2], seed=1, high=VOCAB), _docs([4, 1], seed=2, high=BUCKETS + 1)
    logits = model(_batch(words, bigrams)).logits
    nn.functional.cross_entropy(logits, torch.tensor([0, 2])).backward()
    for table, docs in ((model.words, words), (model.bigrams, bigrams)):
        grad = table.weight.grad
        assert grad.is_sparse
        rows = set(grad.coalesce().indices()[0].tolist())
        assert rows == {i for doc in docs for i in doc}
    assert not model.output.weight.grad.is_sparse


def test_sparse_and_dense_gradients_train_to_the_same_weights():
    words, bigrams = _docs([6, 3, 4, 1], seed=3, high=VOCAB), _docs([5, 2, 3, 0], seed=4, high=BUCKETS + 1)
    batch, labels = _batch(words, bigrams, 8, 7), torch.tensor([0, 1, 2, 1])
    recipe = FASTTEXT_RECIPE.with_overrides(optimizer="sgd", lr=16.0)
    trained = []
    for sparse in (True, False):
        model = _model(sparse=sparse)
        optimizer = build_optimizer(model, recipe)
        for _ in range(3):
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(batch).logits, labels).backward()
            optimizer.step()
        assert model.words.weight.grad.is_sparse == sparse
        trained.append(model.state_dict())
    for key in trained[0]:
        torch.testing.assert_close(trained[0][key], trained[1][key], **KERNEL)
    assert not torch.equal(trained[0]["words.weight"], _model().state_dict()["words.weight"])


@pytest.mark.parametrize(
    "overrides, reason",
    [({"optimizer": "adam", "lr": 0.01}, "adam"), ({"weight_decay": 1e-4}, "weight decay"),
     ({"momentum": 0.9}, "momentum"), ({"grad_clip": 1.0}, "clipping")],
)
def test_optimisers_that_need_dense_gradients_switch_the_tables_to_dense(overrides, reason):
    model = _model()
    optimizer = build_optimizer(model, FASTTEXT_RECIPE.with_overrides(**{"optimizer": "sgd", **overrides}))
    assert not model.words.sparse and not model.bigrams.sparse, reason
    batch = _batch(_docs([3, 2], seed=5, high=VOCAB), _docs([2, 1], seed=6, high=BUCKETS + 1))
    nn.functional.cross_entropy(model(batch).logits, torch.tensor([0, 1])).backward()
    if "grad_clip" in overrides:
        torch.nn.utils.clip_grad_norm_(list(model.parameters()), 1.0)
    optimizer.step()  # torch refuses sparse gradients in all of these; dense ones step
    assert not model.words.weight.grad.is_sparse


def test_padded_batch_gives_each_documents_logits_whatever_the_padding_holds():
    model = _model().eval()
    words = _docs([7, 2, 4, 1, 0], seed=3, high=VOCAB)
    bigrams = _docs([6, 1, 3, 0, 0], seed=4, high=BUCKETS + 1)
    with torch.no_grad():
        batched = model(_batch(words, bigrams, 9, 8)).logits
        # The mask, not the id, says what is padding: junk ids under a False mask change nothing.
        junk = model(_batch(words, bigrams, 9, 8, filler=7)).logits
        torch.testing.assert_close(junk, batched, **KERNEL)
        for row in range(len(words)):
            alone = model(_batch([words[row]], [bigrams[row]])).logits
            torch.testing.assert_close(batched[row : row + 1], alone, **KERNEL)
        # One mean over words and bigrams together; an empty document is the zero vector.
        rows = torch.cat([model.words.weight[words[0]], model.bigrams.weight[bigrams[0]]])
        torch.testing.assert_close(batched[0], model.output(rows.mean(dim=0)), **KERNEL)
        assert torch.equal(batched[4], torch.zeros(3))


def _old_forward(state, batch):
    """fasttext-bag's forward before sparse tables: nn.Embedding lookups and a masked mean."""
    vectors = torch.cat([state["words.weight"][batch["input_ids"]], state["bigrams.weight"][batch["bigram_ids"]]], 1)
    mask = torch.cat([batch["mask"], batch["bigram_mask"]], 1).unsqueeze(-1)
    hidden = (vectors * mask).sum(1) / mask.sum(1).clamp_min(1)
    return hidden @ state["output.weight"].T


def test_a_state_dict_of_the_old_model_loads_and_gives_its_logits():
    # What a run saved before this change holds: the same three keys, 2**18 + 1 bigram rows.
    rng = np.random.default_rng(0)
    old = {"words.weight": torch.tensor(rng.uniform(-0.1, 0.1, (VOCAB, 10)), dtype=torch.float32),
           "bigrams.weight": torch.tensor(rng.uniform(-0.1, 0.1, (2**18 + 1, 10)), dtype=torch.float32),
           "output.weight": torch.tensor(rng.normal(size=(3, 10)), dtype=torch.float32)}
    old["words.weight"][0] = old["bigrams.weight"][0] = 0
    model = create_model("fasttext-bag", num_classes=3, vocab_size=VOCAB, bigram_buckets=2**18).eval()
    model.load_state_dict(old, strict=True)
    batch = _batch(_docs([5, 3, 1], seed=7, high=VOCAB), _docs([4, 2, 0], seed=8, high=2**18 + 1), 6, 5)
    with torch.no_grad():
        torch.testing.assert_close(model(batch).logits, _old_forward(old, batch), **KERNEL)


def test_a_run_saved_before_this_change_loads(tmp_path):
    # A run directory as the old code wrote it: 2**18 buckets, lr 8 for 5 epochs, no 'auto'.
    texts = ["what is a bag of words", "who wrote the paper", "where is the model", "how fast is it"] * 5
    labels = ["what", "who", "where", "how"] * 5
    clf = Classifier("fasttext-bag", epochs=2, lr=8.0, params={"bigram_buckets": 2**18, "optimizer": "sgd"}).fit(texts, labels)
    run = clf.save_pretrained(tmp_path / "old")
    config = json.loads((run / "config.json").read_text())
    del config["recipe"]["auto"]
    (run / "config.json").write_text(json.dumps(config))
    loaded = Classifier.from_pretrained(run)
    assert loaded.model_.bigrams.weight.shape == (2**18 + 1, 10)
    assert loaded.preset_.recipe.auto is None
    np.testing.assert_array_equal(loaded.predict_proba(texts[:4]), clf.predict_proba(texts[:4]))


# ---------------------------------------------------------------- the recipe


def test_recipe_rule_gives_more_epochs_to_longer_documents_and_fewer_documents_per_class():
    trec = fasttext_recipe_for(4906, 10.6, 6)
    assert trec == (0.26, 20, None)
    # Multi-label data: the same rate, 1.5x the progress, each label's positives weighted (BCE pos_weight).
    assert fasttext_recipe_for(4906, 10.6, 6, multi_label=True) == (0.26, 30, "balanced")
    # Long documents: fastText's own rate, and more epochs (20news).
    news = fasttext_recipe_for(10182, 446.0, 20)
    assert news.per_example_lr == 1.0 and news.epochs > 1.5 * trec.epochs
    # Fewer documents (per class): more epochs at the same rate.
    slice_ = fasttext_recipe_for(900, 10.6, 6)
    assert slice_.per_example_lr == trec.per_example_lr and slice_.epochs > 2 * trec.epochs
    assert fasttext_recipe_for(4906, 10.6, 30).epochs > trec.epochs  # more classes
    # Monotone in the length; the rate stays in [0.25, 1.0] and the epochs in [5, 50].
    schedules = [fasttext_recipe_for(5000, length, 4) for length in (1, 3, 10, 30, 100, 300, 1000, 10000)]
    assert [s.per_example_lr for s in schedules] == sorted(s.per_example_lr for s in schedules)
    assert [s.epochs for s in schedules] == sorted(s.epochs for s in schedules)
    assert schedules[0].per_example_lr == 0.25 and schedules[-1].per_example_lr == 1.0
    assert fasttext_recipe_for(5000, 0.4, 4).epochs == 5 and fasttext_recipe_for(10, 10000, 20).epochs == 50
    assert fasttext_recipe_for(1_000_000, 20, 2).epochs == 20  # a big corpus is not cut below
    with pytest.raises(ConfigError, match="'mean_tokens' = 0"):
        fasttext_recipe_for(100, 0, 2)
    with pytest.raises(ConfigError, match="'n_docs' = 0"):
        fasttext_recipe_for(0, 10, 2)


def test_recipe_resolve_sets_the_rate_per_document_or_per_batch_and_keeps_the_schedule_in_step():
    recipe = get_preset("fasttext-bag").recipe
    assert recipe.auto == {"rule": "fasttext", "fields": ["epochs", "lr", "class_weights"]}
    assert recipe.optimizer == "per-example-sgd"
    resolved = recipe.resolve(n_docs=10182, mean_tokens=446.0, n_classes=20)
    chosen = fasttext_recipe_for(10182, 446.0, 20)
    # fastText's own loop: lr is the per-example rate, whatever the batch size.
    assert (resolved.epochs, resolved.lr, resolved.auto) == (chosen.epochs, 1.0, None)
    assert resolved.schedule == {"type": "lambda", "name": "linear-decay", "epochs": chosen.epochs}
    assert recipe.with_overrides(batch_size=8).resolve(n_docs=10182, mean_tokens=446.0, n_classes=20).lr == 1.0
    # Multi-label: each label steps at a / C, as the batched path's label-mean BCE stepped it.
    assert recipe.resolve(n_docs=4906, mean_tokens=10.6, n_classes=6, multi_label=True).lr == round(0.26 / 6, 4)
    # The engine's batched SGD averages the loss over a batch: lr is the rate times the batch size.
    batched = recipe.with_overrides(optimizer="sgd")
    assert batched.resolve(n_docs=10182, mean_tokens=446.0, n_classes=20).lr == 32.0
    assert batched.with_overrides(batch_size=8).resolve(n_docs=10182, mean_tokens=446.0, n_classes=20).lr == 8.0
    # An explicit value wins over the data's choice, field by field.
    preset = get_preset("fasttext-bag").with_overrides(epochs=3)
    assert preset.recipe.auto == {"rule": "fasttext", "fields": ["lr", "class_weights"]}
    mine = preset.recipe.resolve(n_docs=10182, mean_tokens=446.0, n_classes=20)
    assert (mine.epochs, mine.lr, mine.schedule["epochs"]) == (3, 1.0, 3)
    assert get_preset("fasttext-bag").with_overrides(epochs=3, lr=4.0, class_weights=None).recipe.auto is None
    # It survives config.json, and a recipe without a rule resolves to itself.
    assert Recipe.from_dict(json.loads(json.dumps(recipe.to_dict()))) == recipe
    assert Recipe().resolve(n_docs=1, mean_tokens=1.0, n_classes=2) == Recipe()
    with pytest.raises(ConfigError, match="field 'dropout'"):
        Recipe(auto={"rule": "fasttext", "fields": ["dropout"]})
    with pytest.raises(ConfigError, match="unknown recipe rule 'fastext'"):
        Recipe(auto={"rule": "fastext", "fields": ["lr"]}).resolve(n_docs=1, mean_tokens=1.0, n_classes=2)


def test_lr_bound_admits_fasttexts_rate_on_a_batch_mean_and_still_catches_typos():
    assert Recipe(optimizer="sgd", lr=32.0).lr == 32.0
    assert MAX_LR >= 5 * 256  # fastText autotune's largest rate at batch 256
    with pytest.raises(ConfigError, match="'lr' = 100000.0 is outside"):
        Recipe(lr=1e5)


@pytest.fixture(scope="module")
def trec_slice():
    return ensure_dev(textcls.load_dataset("trec", max_per_split=1000), fraction=0.1, seed=0)


def test_resolve_recipe_reads_the_prepared_training_split(trec_slice):
    preset = get_preset("fasttext-bag")
    prepared = prepare(trec_slice, preset.inputs)
    stats = prepared.corpus_stats()
    assert stats["n_docs"] == len(trec_slice["train"]) and stats["n_classes"] == 6
    assert stats["mean_tokens"] == np.mean(prepared.encoded["train"].lengths)
    assert 8 < stats["mean_tokens"] < 14  # TREC questions: ~10.6 tokens
    recipe = resolve_recipe(preset.recipe, prepared)
    chosen = fasttext_recipe_for(**stats)
    assert (recipe.epochs, recipe.lr, recipe.auto) == (chosen.epochs, chosen.per_example_lr, None)
    assert recipe.epochs > 20  # 900 questions: more epochs than the whole of TREC's 20
    assert resolve_recipe(Recipe(), prepared) == Recipe()


def test_classifier_resolves_the_recipe_from_its_training_data_and_learns(trec_slice):
    clf = Classifier("fasttext-bag").fit_dataset(trec_slice)
    lengths = [len(doc) for doc in clf.pipeline_.encode(list(trec_slice["train"]["text"])).ids]
    chosen = fasttext_recipe_for(len(lengths), sum(lengths) / len(lengths), 6)
    recipe = clf.preset_.recipe
    assert (recipe.epochs, recipe.lr, recipe.auto) == (chosen.epochs, chosen.per_example_lr, None)
    assert clf.fit_result_.epochs_run == chosen.epochs and clf.model_.words.sparse
    # fastText (epoch 25, lr 1.0) scores 0.78 on this slice; the majority class is ~0.23.
    assert clf.evaluate(trec_slice["test"])["accuracy"] > 0.7
    # What save_pretrained writes to config.json: the resolved values.
    assert clf.preset_.recipe.to_dict()["auto"] is None


# ---------------------------------------------------------------- fastText's per-document loop


def _examples(n_docs, multi_label=False, seed=7):
    """A flat EncodedDataset of ``n_docs`` documents (one empty), with bigrams and labels."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 9, size=n_docs)
    lengths[0] = 0
    words = [rng.integers(2, VOCAB, size=n).tolist() for n in lengths]
    bigrams = [rng.integers(1, BUCKETS + 1, size=max(n - 1, 0)).tolist() for n in lengths]
    if multi_label:
        labels = [sorted(set(rng.integers(0, 3, size=rng.integers(0, 3)).tolist())) for _ in lengths]
    else:
        labels = rng.integers(0, 3, size=n_docs).tolist()
    return EncodedDataset(words, labels, bigrams, multi_label=multi_label, num_classes=3)


def _sequential_torch_sgd(model, examples, order, lr, weights, multi_label):
    """fastText's update written as torch autograd: one plain SGD step per document on its own
    loss (weighted cross-entropy, or BCE summed over labels), in ``order``; returns the summed
    reported loss (BCE averaged over labels, as BCEWithLogitsLoss reports it)."""
    total = 0.0
    for i in order:
        batch = examples.collate_flat([int(i)], num_classes=3)
        logits = model(batch).logits
        if multi_label:
            per_label = nn.functional.binary_cross_entropy_with_logits(
                logits, batch["labels"].float(), pos_weight=torch.as_tensor(weights), reduction="none")
            loss, reported = per_label.sum(), per_label.mean()
        else:
            y = batch["labels"]
            loss = reported = torch.as_tensor(weights)[y] * nn.functional.cross_entropy(logits, y, reduction="none")
            loss = loss.sum()
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p.add_(p.grad.to_dense() if p.grad.is_sparse else p.grad, alpha=-lr)
        total += float(reported.detach().sum())
    return total


@pytest.mark.parametrize("multi_label", [False, True])
def test_per_document_loop_takes_the_same_steps_as_sgd_on_each_documents_own_loss(multi_label):
    examples = _examples(40, multi_label)
    order = np.random.default_rng(1).permutation(40)
    weights = np.array([0.5, 1.0, 2.0], dtype=np.float32)
    compiled, reference = _model(), _model()
    loss = compiled.per_example_epoch(examples, order, 0.3, weights, multi_label)
    expected = _sequential_torch_sgd(reference, examples, order, 0.3, weights, multi_label)
    assert loss == pytest.approx(expected, rel=1e-4)
    for key, value in reference.state_dict().items():
        torch.testing.assert_close(compiled.state_dict()[key], value, **KERNEL)
    # It moved the weights, and only the rows of the documents' words.
    untouched = _model()
    assert not torch.equal(compiled.output.weight, untouched.output.weight)
    seen = np.unique(examples.flat_arrays()["ids"])
    unseen = np.setdiff1d(np.arange(VOCAB), seen)
    assert torch.equal(compiled.words.weight[unseen], untouched.words.weight[unseen])
    assert not torch.equal(compiled.words.weight[seen], untouched.words.weight[seen])


def test_per_document_loop_without_bigram_table_reads_words_only():
    examples = _examples(20)
    torch.manual_seed(0)
    unigram = create_model("fasttext-bag", num_classes=3, vocab_size=VOCAB, bigram_buckets=0)
    reference = create_model("fasttext-bag", num_classes=3, vocab_size=VOCAB, bigram_buckets=0)
    reference.load_state_dict(unigram.state_dict())
    order = np.arange(20)
    loss = unigram.per_example_epoch(examples, order, 0.5, None, False)
    words_only = EncodedDataset([examples[i]["input_ids"].tolist() for i in range(20)],
                                examples.flat_arrays()["labels"].tolist(), num_classes=3)
    expected = _sequential_torch_sgd(reference, words_only, order, 0.5, np.ones(3, np.float32), False)
    assert loss == pytest.approx(expected, rel=1e-4)
    torch.testing.assert_close(unigram.words.weight, reference.words.weight, **KERNEL)
    # A bigram model needs the bigram ids.
    with pytest.raises(ConfigError, match="needs bigram ids"):
        _model().per_example_epoch(words_only, order, 0.5, None, False)


def test_per_document_training_is_reproducible_and_resumes_to_the_same_weights(tmp_path, trec_slice):
    from textcls.train.engine import fit

    preset = get_preset("fasttext-bag")
    prepared = prepare(trec_slice, {**preset.inputs, "bigram_buckets": 1000})
    recipe = resolve_recipe(preset.recipe, prepared).with_overrides(epochs=4, schedule={
        "type": "lambda", "name": "linear-decay", "epochs": 4})
    train = prepared.loader("train", recipe.batch_size, shuffle=True, seed=recipe.seed)
    dev = prepared.loader("dev", 256, shuffle=False)

    def model():
        torch.manual_seed(0)
        return create_model("fasttext-bag", num_classes=6, vocab_size=prepared.pipeline.vocab_size,
                            bigram_buckets=1000)

    kwargs = dict(num_classes=6, progress=False)
    straight, crashed, resumed = model(), model(), model()
    full = fit(straight, train, dev, recipe, run_dir=tmp_path / "a", **kwargs)
    fit(crashed, train, dev, recipe, run_dir=tmp_path / "b", max_epochs_this_call=2, **kwargs)
    again = fit(resumed, train, dev, recipe, run_dir=tmp_path / "b", resume=True, **kwargs)
    assert full.epochs_run == again.epochs_run == 4
    assert [r["train_loss"] for r in again.history] == [r["train_loss"] for r in full.history]
    assert full.history[-1]["train_loss"] < full.history[0]["train_loss"]
    for key, value in straight.state_dict().items():
        assert torch.equal(value, resumed.state_dict()[key]), key
    # Each epoch's rate is the mean of fastText's per-token line over it.
    assert [r["lr"] for r in full.history] == pytest.approx([recipe.lr * (1 - (e + 0.5) / 4) for e in range(4)])
    # No torch optimiser exists (train.optim.EpochRate carries the rate), so none is saved.
    assert sorted(p.name.split("-")[0] for p in (tmp_path / "b" / "checkpoint").glob("*.safetensors")) == ["model"]


def test_per_document_rate_is_lambda_lrs_and_reads_its_checkpointed_state():
    from torch.optim.lr_scheduler import LambdaLR

    from textcls.train.optim import EpochRate, lr_factor

    recipe = Recipe(optimizer="per-example-sgd", lr=0.5, epochs=5,
                    schedule={"type": "lambda", "name": "linear-decay", "epochs": 5})
    rate = EpochRate(recipe)
    sgd = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=recipe.lr)
    lambda_lr = LambdaLR(sgd, lr_factor(recipe.schedule))
    for _ in range(5):
        assert rate.get_last_lr() == lambda_lr.get_last_lr()
        rate.step()
        sgd.step()  # no gradient: changes nothing, but LambdaLR expects an optimiser step first
        lambda_lr.step()
    # Checkpoints of per-example runs before stop 26 hold LambdaLR's state: they still resume.
    resumed = EpochRate(recipe)
    resumed.load_state_dict(lambda_lr.state_dict())
    assert resumed.get_last_lr() == lambda_lr.get_last_lr() and resumed.state_dict()["last_epoch"] == 5
    with pytest.raises(ValueError, match="last_epoch"):
        resumed.load_state_dict({"last_epoch": -1})


def test_per_document_sgd_refuses_what_it_cannot_do():
    with pytest.raises(ConfigError, match="plain SGD in fp32; drop momentum"):
        Recipe(optimizer="per-example-sgd", lr=0.1, momentum=0.9)
    with pytest.raises(ConfigError, match="drop precision"):
        Recipe(optimizer="per-example-sgd", lr=0.1, precision="bf16")
    texts = ["a good film", "a bad film", "so good", "so bad"] * 3
    labels = ["pos", "neg"] * 6
    with pytest.raises(ConfigError, match="per_example_epoch.*use optimizer sgd"):
        Classifier("bilstm", epochs=1, params={"optimizer": "per-example-sgd", "lr": 0.1}).fit(texts, labels)
    with pytest.raises(ConfigError, match="checkpoints after each epoch only"):
        Classifier("fasttext-bag", epochs=1, params={"checkpoint_steps": 2}).fit(texts, labels)


def test_per_document_loop_refuses_ids_outside_the_tables_and_a_diverged_loss():
    examples = _examples(10)
    small = create_model("fasttext-bag", num_classes=3, vocab_size=VOCAB, bigram_buckets=BUCKETS // 2)
    before = {k: v.clone() for k, v in small.state_dict().items()}
    with pytest.raises(ConfigError, match=r"a bigram id is \d+, outside \[0, 26\)"):
        small.per_example_epoch(examples, np.arange(10), 0.1, None, False)
    for key, value in small.state_dict().items():
        assert torch.equal(value, before[key]), key  # nothing was written
    with pytest.raises(ConfigError, match="a label is"):
        create_model("fasttext-bag", num_classes=2, vocab_size=VOCAB, bigram_buckets=BUCKETS).per_example_epoch(
            examples, np.arange(10), 0.1, None, False)
    texts = [f"{w} film number {i}" for i in range(30) for w in ("good", "bad")]
    labels = ["pos" if t.startswith("good") else "neg" for t in texts]
    with pytest.raises(ConfigError, match=r"\(diverged\); lower the learning rate .*each document.s step"):
        Classifier("fasttext-bag", epochs=3, lr=10_000.0, params={"bigram_buckets": 64}).fit(texts, labels)


def test_fasttext_bags_epochs_show_a_bar_only_with_progress(capsys):
    # Its epochs are one compiled call each, with no bar over batches: the engine shows a bar
    # over the epochs instead (issue: fasttext-bag trained without any progress shown).
    texts = ["a good film", "a bad film", "so good", "so bad", "good acting", "bad acting"] * 4
    labels = ["pos", "neg"] * 12
    Classifier("fasttext-bag", epochs=3, params={"bigram_buckets": 64}, progress=True).fit(texts, labels)
    err = capsys.readouterr().err
    assert "epochs:" in err and "/3 [" in err
    Classifier("fasttext-bag", epochs=3, params={"bigram_buckets": 64}, progress=False).fit(texts, labels)
    assert capsys.readouterr() == ("", "")
