"""Model registry: families, named presets and the one factory, ``create_model``.

In the style of timm's ``@register_model`` and fairseq's named architectures, a model
*family* is a class registered with ``@register_model("kim-cnn")`` and a model *name* is a
``Preset``: the family, its architecture hyper-parameters, the paper's training ``Recipe``
and the text-pipeline settings (``inputs``). An ablation is a preset, not a copy of code::

    @register_model("kim-cnn", presets=[Preset("kim-cnn-static", "kim-cnn", arch={...}, ...)])
    class KimCNN(TextModel): ...

    model = create_model("kim-cnn-static", num_classes=2, vocab_size=20_000,
                         embeddings=matrix, dropout=0.3, epochs=10)

An override is routed by its name: text-pipeline keys (``INPUT_KEYS``) go to ``inputs``,
``Recipe`` fields to ``recipe`` and the family's constructor parameters to ``arch``; anything
else is a ``ConfigError`` that suggests close names. Inputs keys the constructor also
accepts (``embedding_dim``, ``bigram_buckets``) are passed on to the model, so they are set in
one place only.
"""

from __future__ import annotations

import fnmatch
import inspect
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..errors import ConfigError, close_names
from ..recipe import Recipe
from ..text.embeddings import source_dim
from ..text.pipeline import TextPipeline
from ..validate import check_int

__all__ = [
    "DEFAULT_CAPS",
    "INPUT_KEYS",
    "Preset",
    "register_model",
    "register_preset",
    "list_models",
    "get_preset",
    "get_family",
    "create_model",
]

# Settings a preset may carry in ``inputs``: TextPipeline's constructor parameters (taken from
# its signature, so the two never drift apart), plus ``shape``, ``embeddings`` and
# ``embedding_dim``, which prepare() and the registry read.
INPUT_KEYS = frozenset(
    {p for p in inspect.signature(TextPipeline.__init__).parameters if p != "self"}
    | {"shape", "embeddings", "embedding_dim", "vocab_splits"}
)
SHAPES = ("flat", "hierarchical")
KINDS = ("neural", "classic", "ensemble")
# Constructor arguments that create_model supplies itself; never part of ``arch``.
_FACTORY_ARGS = frozenset({"vocab_size", "num_classes", "embeddings"})

# Length caps of every neural preset that does not set its own (Preset.__post_init__ fills them
# in). Without a cap one huge document is padded into every batch it shares: kim-cnn-rand on a
# file holding one 5 MB document (about a million tokens) trained, then tried to allocate 81 GB
# to evaluate it. 1,000 tokens: the papers behind the presets that had no cap (Kim 2014,
# fastText, FCSR and its LSTM/Transformer baselines, CSPAN, SingleCNN-SPE) state none; 1,000 is
# what HCAN's paper gives its flat models, and it cuts 1.6 % of IMDB reviews (the longest are
# about 2,850 tokens) and 3 of the 5,000 fine-food reviews. Hierarchical presets get HCAN's and
# HAN's paper caps, 100 sentences of 100 words. A preset's own value wins, and so does an
# override: --set max_length=N (a large N, or null, reads documents whole, the old behaviour).
DEFAULT_CAPS = {
    "flat": {"max_length": 1000},
    "hierarchical": {"max_sentences": 100, "max_sentence_length": 100},
}

_FAMILIES: dict[str, type] = {}
_PRESETS: dict[str, "Preset"] = {}


@dataclass(frozen=True)
class Preset:
    """A named, complete model configuration: architecture, training recipe, inputs.

    ``kind`` is ``"neural"`` (a ``TextModel`` trained by the engine), ``"classic"`` (a
    scikit-learn ``TfidfModel`` fitted on raw texts) or ``"ensemble"`` (presets fitted on the
    same split, their probabilities averaged with weights chosen on dev). ``inputs`` always ends up with
    ``shape`` (``"flat"``/``"hierarchical"``) and ``embeddings`` (None, ``"glove-6b-50d"``,
    ``"word2vec"`` or a file path); neural presets also need ``embedding_dim``, and get the
    length caps of ``DEFAULT_CAPS`` for their shape unless they set their own.
    """

    name: str
    family: str
    arch: dict[str, Any] = field(default_factory=dict)
    recipe: Recipe = field(default_factory=Recipe)
    inputs: dict[str, Any] = field(default_factory=dict)
    kind: str = "neural"
    description: str = ""
    paper: str = ""
    # The names ``with_overrides`` was given since the preset was made (the user's settings,
    # whatever their values): a model that ignores a setting refuses it when it was given, even
    # at the registered value (the ensemble's epochs=1, a TF-IDF preset's C beside its grid), which
    # comparing the resulting preset with the registered one cannot tell from no setting at all.
    # Neither saved (to_dict) nor compared: a loaded run or a preset written in code has none.
    overridden: frozenset = field(default=frozenset(), compare=False, repr=False)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ConfigError(f"preset '{self.name}': kind '{self.kind}' is not one of {', '.join(KINDS)}")
        inputs = {"shape": "flat", "embeddings": None, **self.inputs}
        if self.kind == "neural":
            # Bounded memory by default (see DEFAULT_CAPS); an explicit value, None included, stays.
            for key, value in DEFAULT_CAPS.get(inputs["shape"], {}).items():
                inputs.setdefault(key, value)
        _check_inputs(self.name, self.kind, inputs)
        # Own copies, so that a preset never changes behind the registry's back.
        object.__setattr__(self, "arch", dict(self.arch))
        object.__setattr__(self, "inputs", inputs)

    def with_overrides(self, **overrides) -> "Preset":
        """A copy with each override routed to ``inputs``, ``recipe`` or ``arch`` by its name, and
        its name added to ``overridden``.

        Overriding ``epochs`` also updates a schedule that carries its own ``epochs`` (such
        as ``linear-decay``), so that the decay still ends with the last epoch.
        """
        if not overrides:
            return self
        arch_names = _arch_params(get_family(self.family))
        recipe_names = Recipe.field_names()
        arch, inputs, recipe_overrides = dict(self.arch), dict(self.inputs), {}
        for key, value in overrides.items():
            if key in INPUT_KEYS:
                inputs[key] = value
            elif key in recipe_names:
                recipe_overrides[key] = value
            elif key in arch_names:
                arch[key] = value
            else:
                known = set(arch_names) | recipe_names | INPUT_KEYS
                raise ConfigError(
                    f"unknown parameter '{key}' for model '{self.name}'; {close_names(key, known)}"
                )
        # A named pretrained source has one width (minilm-static: 256): switching to it switches
        # embedding_dim with it, unless the same call sets embedding_dim too.
        width = source_dim(overrides.get("embeddings"))
        if width is not None and "embedding_dim" not in overrides and "embedding_dim" in inputs:
            inputs["embedding_dim"] = width
        schedule = self.recipe.schedule
        if (
            "epochs" in recipe_overrides
            and "schedule" not in recipe_overrides
            and isinstance(schedule, dict)
            and "epochs" in schedule
        ):
            recipe_overrides["schedule"] = {**schedule, "epochs": recipe_overrides["epochs"]}
        recipe = self.recipe.with_overrides(**recipe_overrides) if recipe_overrides else self.recipe
        return replace(self, arch=arch, inputs=inputs, recipe=recipe, overridden=self.overridden | set(overrides))

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form (stored in a run's ``config.json``)."""
        return {
            "name": self.name,
            "family": self.family,
            "kind": self.kind,
            "arch": dict(self.arch),
            "recipe": self.recipe.to_dict(),
            "inputs": dict(self.inputs),
            "description": self.description,
            "paper": self.paper,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Preset":
        data = dict(data)
        data["recipe"] = Recipe.from_dict(data.get("recipe", {}))
        return cls(**data)


def _check_inputs(name: str, kind: str, inputs: dict[str, Any]) -> None:
    unknown = [k for k in inputs if k not in INPUT_KEYS]
    if unknown:
        raise ConfigError(f"preset '{name}': unknown input setting '{unknown[0]}'; {close_names(unknown[0], INPUT_KEYS)}")
    if inputs["shape"] not in SHAPES:
        raise ConfigError(f"parameter 'shape' = {inputs['shape']!r} is not one of {', '.join(SHAPES)}")
    source = inputs["embeddings"]
    if source is not None and (not isinstance(source, str) or not source):
        raise ConfigError(
            f"parameter 'embeddings' = {source!r} must be None, 'glove-6b-50d', 'word2vec' or a file path"
        )
    if kind == "neural":
        if "embedding_dim" not in inputs:
            raise ConfigError(f"preset '{name}' needs inputs['embedding_dim'] (the word-vector width)")
        check_int("embedding_dim", inputs["embedding_dim"], 1, 1 << 16)
    if inputs.get("bigram_buckets") is not None:
        check_int("bigram_buckets", inputs["bigram_buckets"], 0, 1 << 31)
    for key in ("max_length", "max_sentences", "max_sentence_length"):
        if inputs.get(key) is not None:  # None: no cap
            check_int(key, inputs[key], 1, (1 << 31) - 1)


def _constructor_params(cls: type) -> list[str]:
    params = inspect.signature(cls.__init__).parameters.values()
    return [
        p.name
        for p in params
        if p.name != "self" and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    ]


def _arch_params(cls: type) -> list[str]:
    """Constructor parameters set by a preset's ``arch``."""
    return [p for p in _constructor_params(cls) if p not in _FACTORY_ARGS and p not in INPUT_KEYS]


def _forwarded_inputs(cls: type) -> list[str]:
    """Inputs keys the constructor also takes (the one place they are set is ``inputs``)."""
    return [p for p in _constructor_params(cls) if p in INPUT_KEYS and p not in _FACTORY_ARGS]


def accepts_arch_param(preset: "Preset | str", name: str) -> bool:
    """Whether the preset's model family takes the architecture parameter ``name``
    (e.g. ``num_tasks``: per-task classifier heads for multi-task data)."""
    preset = preset if isinstance(preset, Preset) else get_preset(preset)
    return name in _arch_params(get_family(preset.family))


def _family_kind(cls: type) -> str:
    """A family's kind: a ``TextModel`` is ``"neural"``; other families say theirs in ``kind``."""
    return getattr(cls, "kind", "neural")


def register_model(family: str, *, presets=()):
    """Class decorator: register a model family and, optionally, its presets.

    The constructor's keyword parameters (other than ``vocab_size``, ``num_classes``,
    ``embeddings`` and inputs keys) are the family's architecture hyper-parameters.
    A preset in ``presets`` may leave ``family`` empty; it is filled in.
    """

    def deco(cls):
        if family in _FAMILIES and _FAMILIES[family] is not cls:
            raise ConfigError(f"model family '{family}' is registered twice ({_FAMILIES[family].__name__}, {cls.__name__})")
        clash = set(_arch_params(cls)) & Recipe.field_names()
        if clash:
            raise ConfigError(
                f"{cls.__name__}: constructor parameter '{sorted(clash)[0]}' clashes with a Recipe field; rename it"
            )
        cls.family = family
        _FAMILIES[family] = cls
        for preset in presets:
            register_preset(preset if preset.family else replace(preset, family=family))
        return cls

    return deco


def register_preset(preset: Preset) -> Preset:
    """Register a named preset of an already registered family; returns it."""
    if preset.name in _PRESETS and _PRESETS[preset.name] != preset:
        raise ConfigError(f"model name '{preset.name}' is registered twice; pick another name")
    cls = get_family(preset.family)
    expected = _family_kind(cls)
    if preset.kind != expected:
        raise ConfigError(f"preset '{preset.name}' has kind '{preset.kind}' but family '{preset.family}' is {expected}")
    arch_names = _arch_params(cls)
    for key in preset.arch:
        if key not in arch_names:
            raise ConfigError(
                f"preset '{preset.name}': '{key}' is not a parameter of {cls.__name__}; {close_names(key, arch_names)}"
            )
    _check_shape(preset, cls)
    _PRESETS[preset.name] = preset
    return preset


def _check_shape(preset: Preset, cls: type) -> None:
    shapes = getattr(cls, "input_shapes", ("flat",))
    if preset.inputs["shape"] not in shapes:
        raise ConfigError(
            f"parameter 'shape' = '{preset.inputs['shape']}' is not supported by model '{preset.name}' "
            f"(it takes: {', '.join(shapes)})"
        )


def list_models(pattern: str | None = None) -> list[str]:
    """Sorted preset names, optionally filtered by a shell-style ``pattern`` (``"kim-*"``)."""
    names = sorted(_PRESETS)
    if pattern:
        names = [n for n in names if fnmatch.fnmatchcase(n, pattern)]
    return names


def get_preset(name: str) -> Preset:
    """The preset registered under ``name``; unknown names raise ConfigError with close names."""
    if not isinstance(name, str):
        raise ConfigError(f"model = {name!r} must be a preset name (a str; textcls list-models shows them all)")
    if name not in _PRESETS:
        raise ConfigError(f"unknown model '{name}'; {close_names(name, _PRESETS)} (textcls list-models shows all)")
    return _PRESETS[name]


def get_family(family: str) -> type:
    if family not in _FAMILIES:
        raise ConfigError(f"unknown model family '{family}'; {close_names(family, _FAMILIES)}")
    return _FAMILIES[family]


def create_model(
    name: str | Preset,
    *,
    num_classes: int,
    vocab_size: int | None = None,
    embeddings: np.ndarray | None = None,
    from_checkpoint: bool = False,
    **overrides,
):
    """Build the model a preset (or preset name) describes, with ``overrides`` applied.

    Neural presets need ``vocab_size`` (or ``embeddings``, whose row count is the vocabulary
    size). A preset whose ``inputs["embeddings"]`` names pretrained vectors needs the matrix
    (``prepare()`` builds it) unless ``from_checkpoint`` says the weights are about to be
    loaded from a saved run. The resolved preset is attached as ``model.preset``.
    Returns a ``TextModel``, or for ``kind="classic"`` a ``TfidfModel`` and for
    ``kind="ensemble"`` a ``ProbabilityEnsemble`` (their members are fitted by the estimator).
    """
    preset = name if isinstance(name, Preset) else get_preset(name)
    preset = preset.with_overrides(**overrides)
    cls = get_family(preset.family)
    _check_shape(preset, cls)
    check_int("num_classes", num_classes, 1, 1 << 24)
    arch = dict(preset.arch)
    arch.update({k: preset.inputs[k] for k in _forwarded_inputs(cls) if k in preset.inputs})

    if preset.kind != "neural":
        if embeddings is not None:
            raise ConfigError(f"model '{preset.name}' is not a neural model (kind {preset.kind}) and takes no "
                              "embedding matrix; "
                              "drop embeddings")
        model = cls(num_classes=num_classes, **arch)
        model.preset = preset
        return model

    if embeddings is not None:
        embeddings = np.asarray(embeddings)
        if embeddings.ndim != 2:
            raise ConfigError(f"embedding matrix must be 2-D [vocab_size, dim], got shape {embeddings.shape}")
        if preset.inputs["embeddings"] is None:
            raise ConfigError(
                f"model '{preset.name}' uses no pretrained vectors (inputs embeddings=None) but a matrix was "
                "given; drop it or override embeddings='glove-6b-50d' / 'word2vec' / a path"
            )
        if vocab_size is None:
            vocab_size = int(embeddings.shape[0])
        if embeddings.shape[0] != vocab_size:
            raise ConfigError(
                f"embedding matrix has {embeddings.shape[0]} rows but vocab_size is {vocab_size}; "
                "build the matrix from the same vocabulary"
            )
        if embeddings.shape[1] != preset.inputs["embedding_dim"]:
            raise ConfigError(
                f"embedding matrix is {embeddings.shape[1]}-d but parameter 'embedding_dim' = "
                f"{preset.inputs['embedding_dim']}; set embedding_dim={embeddings.shape[1]}"
            )
    elif preset.inputs["embeddings"] is not None and not from_checkpoint:
        raise ConfigError(
            f"model '{preset.name}' needs pretrained vectors ({preset.inputs['embeddings']}) but no embedding "
            "matrix was given; build it with prepare() or override embeddings=None for random vectors"
        )
    if vocab_size is None:
        raise ConfigError(f"model '{preset.name}' needs vocab_size (the tokenizer's vocabulary size)")
    check_int("vocab_size", vocab_size, 2, 1 << 31)
    model = cls(vocab_size=vocab_size, num_classes=num_classes, embeddings=embeddings, **arch)
    model.preset = preset
    return model
