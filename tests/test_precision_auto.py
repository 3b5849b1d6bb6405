"""precision="auto": bf16 where the device multiplies bf16 in hardware, fp32 elsewhere, made
concrete before training so that the saved run holds what it trained with."""

import pytest

import textcls
from textcls import hardware
from textcls.errors import ConfigError
from textcls.recipe import PER_EXAMPLE_SGD, Recipe
from tolerance import approx32


@pytest.fixture
def cpu(monkeypatch):
    """Pretend the CPU reports ``flags``."""
    def set_flags(*flags):
        monkeypatch.setattr(hardware, "cpu_flags", lambda: tuple(flags))
    return set_flags


def test_auto_is_bf16_only_where_the_device_has_native_bf16(cpu):
    auto = Recipe(precision="auto")
    cpu("fpu", "avx2", "avx512f")
    assert auto.resolve_precision("cpu").precision == "fp32"
    cpu("avx512f", "avx512_bf16")
    assert auto.resolve_precision("cpu").precision == "bf16"
    cpu("amx_tile", "amx_bf16")
    assert auto.resolve_precision("cpu").precision == "bf16"
    assert auto.resolve_precision("cuda", cuda_bf16=False).precision == "fp32"
    assert auto.resolve_precision("cuda", cuda_bf16=True).precision == "bf16"
    # the per-document loop has no autocast, and explicit precisions are left alone
    assert Recipe(optimizer=PER_EXAMPLE_SGD, precision="auto").resolve_precision("cpu").precision == "fp32"
    cpu()
    assert Recipe(precision="bf16").resolve_precision("cpu").precision == "bf16"


def test_an_unknown_precision_is_refused_with_the_choices():
    with pytest.raises(ConfigError, match="'fp16' is not one of fp32, bf16, auto"):
        Recipe(precision="fp16")


@pytest.mark.parametrize("flags, expected", [(("avx2",), "fp32"), (("avx512_bf16",), "bf16")])
def test_a_trained_run_saves_the_resolved_precision_and_predicts_with_it(cpu, tmp_path, trec_600, flags, expected):
    cpu(*flags)
    clf = textcls.Classifier("kim-cnn-static", precision="auto", epochs=1, seed=0).fit_dataset(trec_600)
    assert clf.preset_.recipe.precision == expected
    clf.save_pretrained(tmp_path / "run")
    loaded = textcls.Classifier.from_pretrained(tmp_path / "run")
    assert loaded.preset_.recipe.precision == expected
    texts = list(trec_600["test"]["text"][:20])
    # the same weights under the same precision, through matmuls and a softmax
    assert loaded.predict_proba(texts) == approx32(clf.predict_proba(texts), kernel=True)
