"""The NumPy forward passes of kim-cnn and spe-cnn (``numpy_forward``) give the torch models'
probabilities.

Small models of each embedding mode are trained on an MR slice and saved; ``Predictor.load``
then predicts them with NumPy (table lookups, no torch), and the ``Classifier`` with torch.
The two must agree within ``tolerance.KERNEL`` on real texts, on a batch of very different
lengths (as one batch and one document at a time: padding never changes a document), on
documents shorter than the widest window, and on a document longer than SPE's first position
table.
"""

from __future__ import annotations

import inspect
import json
from types import SimpleNamespace

import numpy as np
import pytest

from test_startup import NEVER_TO_PREDICT, _loaded, _modules_after
from tolerance import KERNEL
from textcls import Classifier, load_dataset
from textcls import numpy_forward
from textcls.predictor import Predictor

# Each embedding mode of the two families, shrunk so that a model trains in about a second.
PRESETS = {
    "kim-cnn-static": {"feature_maps": 6},
    "kim-cnn-nonstatic": {"feature_maps": 6, "windows": [4, 2]},  # widths out of order: the output reads them so
    "kim-cnn-multichannel": {"feature_maps": 6},
    "kim-cnn-rand": {"feature_maps": 6, "embedding_dim": 12},
    "spe-cnn": {"filters": 12},
    "spe-cnn-pe-scaled": {"filters": 12},
    "single-cnn-static": {"filters": 12},
    "spe-cnn-bow": {"filters": 12},
}


@pytest.fixture(scope="module")
def mr():
    return load_dataset("mr", max_per_split=400)


@pytest.fixture(scope="module")
def texts(mr):
    """Real test texts, then lengths far apart: one word, two (shorter than every window),
    unknown words only, and one of about 150 tokens (past SPE's first 64 positions)."""
    real = list(mr["test"]["text"])[:60]
    return real + ["good", "not bad", "zzzqx qqqzx", " ".join(real[:6]), "a thoroughly enjoyable film"]


@pytest.fixture(scope="module")
def runs(mr, tmp_path_factory):
    """{preset: (Classifier, run folder)}, trained one epoch and saved."""
    train_texts, labels = list(mr["train"]["text"]), list(mr["train"]["label"])
    out = {}
    for preset, params in PRESETS.items():
        clf = Classifier(preset, epochs=1, params=params).fit(train_texts, labels)
        folder = tmp_path_factory.mktemp(preset)
        clf.save_pretrained(folder)
        out[preset] = (clf, folder)
    return out


@pytest.mark.parametrize("preset", list(PRESETS))
def test_numpy_pass_equals_torch(runs, texts, preset):
    clf, folder = runs[preset]
    predictor = Predictor.load(folder)
    assert predictor.backend == "numpy"
    probs = predictor.predict_proba(texts)
    np.testing.assert_allclose(probs, clf.predict_proba(texts), **KERNEL)
    assert predictor.predict(texts) == [str(label) for label in clf.predict(texts)]


@pytest.mark.parametrize("preset", ["kim-cnn-static", "spe-cnn", "spe-cnn-bow"])
def test_padding_never_changes_a_document(runs, texts, preset):
    predictor = Predictor.load(runs[preset][1])
    mixed = texts[-5:] + texts[:5]  # one batch: 1 to about 150 tokens
    alone = np.concatenate([predictor.predict_proba([text]) for text in mixed])
    np.testing.assert_allclose(predictor.predict_proba(mixed), alone, **KERNEL)
    # A short document beside a long one in the same sub-batch, and in the other order.
    pair = [texts[-2], texts[-5]]
    np.testing.assert_allclose(predictor.predict_proba(pair), alone[[3, 0]], **KERNEL)
    np.testing.assert_allclose(predictor.predict_proba(pair[::-1]), alone[[0, 3]], **KERNEL)


@pytest.mark.parametrize("preset, params", [
    ("kim-cnn-rand", {"feature_maps": 6, "embedding_dim": 12, "pad_borders": True}),
    ("spe-cnn", {"filters": 12, "kim_row_length": 64, "max_length": 56}),
])
def test_a_run_read_as_kims_code_reads_predicts_through_torch_as_it_trained(mr, texts, tmp_path, preset, params):
    """The tables read eq. 3's windows within a document only, so a run with Kim's code's borders
    (``pad_borders``) or rows (``kim_row_length``) must not take the NumPy pass; it loads with
    its Kim tokenisation and gives the trained model's probabilities."""
    params = {**params, "charset": "kim"}
    clf = Classifier(preset, epochs=1, params=params).fit(list(mr["train"]["text"]), list(mr["train"]["label"]))
    clf.save_pretrained(tmp_path)
    predictor = Predictor.load(tmp_path)
    assert predictor.backend == "estimator"
    np.testing.assert_allclose(predictor.predict_proba(texts), clf.predict_proba(texts), **KERNEL)
    arch = json.loads((tmp_path / "config.json").read_text())["arch"]
    assert {key: arch[key] for key in ("pad_borders", "kim_row_length") if key in params} == {
        key: params[key] for key in ("pad_borders", "kim_row_length") if key in params}


def test_documents_shorter_than_the_window_are_read_as_zero_padded(runs):
    """Kim's widest window is 5 and SPE's is 3: one- and two-word documents have one window,
    their missing words zero vectors (and, with SPE, no position vectors)."""
    short = ["good", "not bad", "bad", "very good", "!"]
    for preset in ("kim-cnn-static", "kim-cnn-nonstatic", "spe-cnn", "spe-cnn-bow"):
        clf, folder = runs[preset]
        np.testing.assert_allclose(Predictor.load(folder).predict_proba(short), clf.predict_proba(short), **KERNEL)


def test_kim_logits_equal_the_convolution_in_sub_batches_of_mixed_lengths(monkeypatch):
    """``KimCNNForward``'s logits against the torch convolution one document at a time (no
    padding), widths out of order: a sub-batch with documents shorter than the widest window
    (padded with [PAD], masked) and an empty one, one whose documents all reach the widest
    window but differ in length (padded with the -inf END row, no mask), and the same
    documents cut into many sub-batches, whose rows must come back in the caller's order."""
    import torch
    from textcls.models.kim_cnn import KimCNN

    torch.manual_seed(0)
    vocab = 40
    model = KimCNN(vocab, 3, embedding_dim=8, windows=[4, 2, 5], feature_maps=6).eval()
    model.fast_predict = False
    with torch.no_grad():  # biases away from zero, so that a lost bias shows
        for module in [*model.convs, model.output]:
            module.bias.uniform_(-0.5, 0.5)
    rng = np.random.default_rng(0)
    docs = [rng.integers(1, vocab, n) for n in (7, 1, 30, 4, 0, 5, 12, 2, 6, 6, 3, 19, 8)]
    with torch.inference_mode():
        expected = np.concatenate([model({"input_ids": torch.as_tensor(doc).view(1, -1),
                                          "mask": torch.ones(1, len(doc), dtype=torch.bool)}).logits.numpy()
                                   for doc in docs])
    forward = numpy_forward.KimCNNForward({name: t.numpy() for name, t in model.state_dict().items()})

    def logits(which):
        flat = SimpleNamespace(ids=np.concatenate([docs[i] for i in which] + [np.zeros(0, np.int64)]),
                               lengths=np.array([len(docs[i]) for i in which], dtype=np.int64))
        return forward.logits(flat)

    every = list(range(len(docs)))
    long = [i for i in every if len(docs[i]) >= 5]
    np.testing.assert_allclose(logits(every), expected, **KERNEL)
    np.testing.assert_allclose(logits(long), expected[long], **KERNEL)
    monkeypatch.setattr(numpy_forward, "KIM_BATCH_TOKENS", 12)
    np.testing.assert_allclose(logits(every[::-1]), expected[::-1], **KERNEL)
    assert logits([]).shape == (0, 3)


def test_tables_over_the_cap_predict_through_torch(runs, texts, monkeypatch):
    clf, folder = runs["kim-cnn-static"]
    forward = numpy_forward.KimCNNForward
    arrays = {"embedding.weight": np.zeros((1000, 50)), "convs.0.weight": np.zeros((100, 50, 3)),
              "convs.1.weight": np.zeros((100, 50, 5))}
    assert forward.table_bytes(arrays) == 1000 * (3 + 5) * 100 * 4
    monkeypatch.setattr(numpy_forward, "TABLE_CAP_BYTES", 1000)
    predictor = Predictor.load(folder)
    assert predictor.backend == "estimator"
    np.testing.assert_allclose(predictor.predict_proba(texts), clf.predict_proba(texts), **KERNEL)


def test_an_int8_run_predicts_through_torch(runs, texts, tmp_path):
    """Quantised linear layers compute in int8, which the NumPy pass does not."""
    quantized = Classifier.from_pretrained(runs["kim-cnn-static"][1]).quantize("int8")
    quantized.save_pretrained(tmp_path / "int8")
    predictor = Predictor.load(tmp_path / "int8")
    assert predictor.backend == "estimator"
    np.testing.assert_allclose(predictor.predict_proba(texts), quantized.predict_proba(texts), **KERNEL)


def test_spe_defaults_are_the_models():
    from textcls.models.spe_cnn import SpeCNN

    parameters = inspect.signature(SpeCNN).parameters
    assert {name: parameters[name].default for name in numpy_forward.SPE_DEFAULTS} == numpy_forward.SPE_DEFAULTS


@pytest.mark.parametrize("preset", ["kim-cnn-static", "spe-cnn"])
def test_predicting_a_cnn_run_loads_no_torch(runs, texts, preset):
    clf, folder = runs[preset]
    sample = texts[-5:]
    modules, printed = _modules_after(
        "import json\nfrom textcls.predictor import Predictor\n"
        f"predictor = Predictor.load({str(folder)!r})\n"
        f"print(json.dumps([predictor.backend, predictor.predict_proba({sample!r}).tolist()]))")
    backend, probs = json.loads(printed.strip())
    assert backend == "numpy"
    np.testing.assert_allclose(np.array(probs, dtype=np.float32), clf.predict_proba(sample), **KERNEL)
    assert _loaded(modules, NEVER_TO_PREDICT + ("torch",)) == []
