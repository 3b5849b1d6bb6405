"""One call from a dataset to padded, masked batches: records -> text pipeline -> loaders.

``prepare(dataset, inputs)`` fits the text pipeline on the training split only (the
vocabulary, Word2Vec vectors and bigram table never see dev or test text; the one exception is
asked for by name, ``vocab_splits="all"``, below), encodes every
split, builds the embedding matrix the preset asks for, and returns loaders on demand.
``resolve_recipe(recipe, prepared)`` then fills in the recipe fields a preset leaves to the
training corpus (``Recipe.auto``: fasttext-bag's epochs and learning rate).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import ConfigError, DataError
from ..recipe import Recipe
from ..text.embeddings import EmbeddingResult, build_embeddings
from ..text.pipeline import TextPipeline
from ..validate import check_choice
from .batching import EncodedDataset, make_loader
from .records import TextDataset, record_place

# Keys of a preset's `inputs` that are not TextPipeline settings.
NON_PIPELINE_INPUTS = ("shape", "embeddings", "embedding_dim", "vocab_splits")
# vocab_splits: whose text the vocabulary is built from. "train" (every preset); "all": every
# split's text, dev and test included (never their labels), as Kim's process_data.py builds it
# and as the papers that read their data through it report their vocabularies (SingleCNN-SPE's
# Table 1). With pretrained vectors a word that only dev or test holds then keeps its vector
# instead of becoming [UNK]; its row is never trained (no training text holds it). A diagnostic
# of those papers' protocol: it lets test text shape the model, so no preset uses it.
VOCAB_SPLITS = ("train", "all")


def pipeline_settings(inputs: dict) -> dict:
    return {k: v for k, v in inputs.items() if k not in NON_PIPELINE_INPUTS}


def column_values(split, column: str) -> list:
    """One column of a split as a list, in one columnar read: iterating a datasets Column
    converts a row at a time (MR's 8,635 labels: 0.43 s against 0.03 s; its texts and
    those of dev and test took 0.5 s, as long as three fasttext-bag epochs there)."""
    if hasattr(split, "select_columns"):
        return split.select_columns([column]).to_dict()[column]
    return list(split[column])


def _label_values(split, multi_label: bool, where: str) -> list:
    column = "labels" if multi_label else "label"
    if column not in split.column_names:
        held = ("a list of labels a record" if "labels" in split.column_names
                else "one label a record" if "label" in split.column_names else "no labels")
        model = "multi-label (a list of labels a record)" if multi_label else "single-label (one label a record)"
        raise DataError(f"{where}: the model is {model}, but this data has {held}; "
                        "score it on data labelled as its training data was")
    return column_values(split, column)


def record_at(split, row: int, where: str) -> str:
    """"news.csv:59" where the record's file and line are known, else "<where>: record <row>" (0-based)."""
    return record_place(split, row) or f"{where}: record {row}"


def unknown_labels(split, label_names: list[str], multi_label: bool, where: str) -> list[tuple[int, str]]:
    """(row, first unknown class name) of every record with a label outside ``label_names``."""
    known = set(label_names)
    out = []
    for row, value in enumerate(_label_values(split, multi_label, where)):
        unknown = next((name for name in (value if multi_label else [value]) if name not in known), None)
        if unknown is not None:
            out.append((row, unknown))
    return out


def unknown_label_problem(split, row: int, name: str, label_names: list[str], where: str) -> str:
    """"news.csv:2: label 'Politics' is not one the model knows (known: ...)"."""
    return (f"{record_at(split, row, where)}: label {name!r} is not one the model knows "
            f"(known: {', '.join(label_names[:20])}{', ...' if len(label_names) > 20 else ''})")


def label_targets(split, label_names: list[str], multi_label: bool, where: str, fix: str | None = None):
    """Class names -> ints (or lists of ints); an unknown name is a DataError naming the record
    by file and line where the records carry them (``record_place``), else by split and index."""
    index = {name: i for i, name in enumerate(label_names)}
    values = _label_values(split, multi_label, where)
    targets = []
    for row, value in enumerate(values):
        names = value if multi_label else [value]
        for name in names:
            if name not in index:
                raise DataError(f"{unknown_label_problem(split, row, name, label_names, where)}; "
                                f"{fix or 'relabel the record or train on data with this class'}")
        targets.append([index[n] for n in names] if multi_label else index[value])
    return targets


def target_array(targets, num_classes: int, multi_label: bool) -> np.ndarray:
    """``label_targets``' output as an array: ``[N]`` class indices, or ``[N, C]`` multi-hot 0/1."""
    if not multi_label:
        return np.asarray(targets, dtype=np.int64)
    y = np.zeros((len(targets), num_classes), dtype=np.int64)
    for row, labels in enumerate(targets):
        y[row, labels] = 1
    return y


@dataclass
class PreparedData:
    dataset: TextDataset
    pipeline: TextPipeline
    encoded: dict[str, EncodedDataset]
    shape: str
    embeddings: EmbeddingResult | None = None
    report: dict = field(default_factory=dict)

    @property
    def label_names(self) -> list[str]:
        return self.dataset.label_names

    @property
    def num_classes(self) -> int:
        return len(self.dataset.label_names)

    @property
    def num_tasks(self) -> int:
        """Number of tasks of multi-task data (1 for single-task data)."""
        return len(self.dataset.task_names or ()) or 1

    def class_counts(self) -> np.ndarray:
        train = self.encoded["train"]
        counts = np.zeros(self.num_classes, dtype=np.int64)
        for y in train.labels:
            for c in (y if self.dataset.multi_label else [y]):
                counts[c] += 1
        return counts

    def corpus_stats(self) -> dict:
        """What a recipe rule reads (``Recipe.resolve``): the training split's document count,
        mean length in tokens (after the pipeline's truncation; an empty document counts
        its one [UNK], and ``[END]`` counts where the pipeline adds it, as fastText's token
        count counts its ``</s>``) and the number of classes."""
        lengths = self.encoded["train"].lengths
        n_docs = len(lengths)
        return {"n_docs": n_docs, "mean_tokens": float(sum(lengths)) / max(n_docs, 1),
                "n_classes": self.num_classes}

    def loader(self, split: str, batch_size: int, *, shuffle: bool = False, seed: int = 0,
               num_replicas: int = 1, rank: int = 0, max_pieces: int | None = None):
        if split not in self.encoded:
            raise DataError(f"dataset '{self.dataset.name}' has no '{split}' split (it has: {', '.join(self.encoded)})")
        return make_loader(self.encoded[split], batch_size, shuffle=shuffle, seed=seed,
                           num_replicas=num_replicas, rank=rank, max_pieces=max_pieces)


def encode_texts(pipeline: TextPipeline, texts: list[str], shape: str, labels=None,
                 *, multi_label: bool = False, num_classes: int | None = None, encoded=None, tasks=None):
    """Encode raw texts into an EncodedDataset in the given shape; returns (dataset, report).

    ``encoded`` lets the caller pass an encoding it already has (``fit_encode`` on train);
    ``tasks`` (multi-task data) is the task index of each text."""
    if shape == "hierarchical":
        enc = encoded if encoded is not None else pipeline.encode_sentences(texts)
        return EncodedDataset(enc, labels, multi_label=multi_label, num_classes=num_classes,
                              hierarchical=True, tasks=tasks), enc.stats()
    if shape != "flat":
        raise ConfigError(f"input shape '{shape}' is not one of flat, hierarchical")
    enc = encoded if encoded is not None else pipeline.encode(texts)
    dataset = EncodedDataset(enc.ids, labels, bigrams=enc.bigrams, multi_label=multi_label,
                             num_classes=num_classes, tasks=tasks)
    return dataset, enc.stats()


def prepare(dataset: TextDataset, inputs: dict, *, seed: int = 0,
            pipeline: TextPipeline | None = None) -> PreparedData:
    """Fit (or reuse) the text pipeline on train, encode every split, build embeddings."""
    shape = inputs.get("shape", "flat")
    train_texts = column_values(dataset["train"], "text")
    train_encoded = None
    if pipeline is None:
        pipeline = TextPipeline(**pipeline_settings(inputs))
        vocab_splits = inputs.get("vocab_splits", "train")
        check_choice("vocab_splits", vocab_splits, VOCAB_SPLITS)
        if vocab_splits == "all":
            pipeline.fit([text for split in dataset.splits.values() for text in column_values(split, "text")])
        elif shape == "flat":
            train_encoded = pipeline.fit_encode(train_texts)  # one tokenisation pass, not two
        else:
            pipeline.fit(train_texts)
    encoded, report = {}, {"splits": {}}
    for name, split in dataset.splits.items():
        targets = label_targets(split, dataset.label_names, dataset.multi_label, f"{dataset.name}/{name}")
        is_train = name == "train"
        encoded[name], report["splits"][name] = encode_texts(
            pipeline, train_texts if is_train else column_values(split, "text"), shape, targets,
            multi_label=dataset.multi_label, num_classes=len(dataset.label_names),
            encoded=train_encoded if is_train else None, tasks=dataset.task_ids(name))
    embeddings = None
    source = inputs.get("embeddings")
    if source:
        # Word2Vec is trained on the training split's own tokens (HCAN's recipe), never on dev/test.
        corpus = pipeline.tokenize(train_texts) if source == "word2vec" else None
        embeddings = build_embeddings(
            pipeline.vocab, source, dim=inputs.get("embedding_dim"), seed=seed,
            train_texts=corpus, token_counts=pipeline.token_counts)
        report["embeddings"] = {"source": embeddings.source, "dim": embeddings.dim,
                                "coverage": embeddings.coverage,
                                "token_coverage": embeddings.token_coverage,
                                **({"settings": embeddings.settings} if embeddings.settings else {})}
    report["vocab_size"] = pipeline.vocab_size
    return PreparedData(dataset, pipeline, encoded, shape, embeddings, report)


def resolve_recipe(recipe: Recipe, prepared: PreparedData) -> Recipe:
    """``recipe`` with the fields it leaves to the data (``recipe.auto``) chosen from
    ``prepared``'s training split (``PreparedData.corpus_stats``) and whether its labels are
    multi-label (fasttext-bag then weighs each label's positives); unchanged without ``auto``."""
    if recipe.auto is None:
        return recipe
    return recipe.resolve(**prepared.corpus_stats(), multi_label=prepared.dataset.multi_label)
