"""Catalogue datasets on the real shared data, the hub path, the Zhang layout, name errors."""

from __future__ import annotations

import csv
import gzip
import json
from collections import Counter
from pathlib import Path

import datasets
import huggingface_hub
import pytest

from textcls.data import data_dir, list_datasets, load_dataset
from textcls.data.catalog import CATALOG
from textcls.errors import ConfigError, DataError


def class_counts(ds, split):
    return dict(Counter(ds[split]["label"]))


@pytest.fixture(scope="session")
def imdb():
    return load_dataset("imdb")


# ---------------------------------------------------------------------------------------
# Shared datasets: exact counts


def test_mr_keeps_nel_records_and_counts(data_dir):
    ds = load_dataset("mr")
    assert {k: len(v) for k, v in ds.splits.items()} == {"train": 9595, "test": 1067}
    assert class_counts(ds, "train") == {"neg": 4797, "pos": 4798}
    assert class_counts(ds, "test") == {"neg": 534, "pos": 533}
    assert ds.label_names == ["neg", "pos"]
    texts = list(ds["train"]["text"]) + list(ds["test"]["text"])
    # NEL (0x85) stays inside its sentence instead of splitting it (5,331 + 5,331 exactly).
    nel = [t for t in texts if "\x85" in t]
    assert len(nel) == 22 and sum(t.count("\x85") for t in nel) == 23
    assert "\x85the maudlin way its story unfolds" in "".join(nel)
    assert ds.skipped == []


def test_mr_split_is_deterministic_and_seeded():
    a, b, c = load_dataset("mr"), load_dataset("mr"), load_dataset("mr", split_seed=1)
    assert list(a["test"]["text"]) == list(b["test"]["text"])
    assert set(a["test"]["text"]) != set(c["test"]["text"])
    assert len(c["test"]) == 1067
    assert "split_seed=0" in a.split_notes["test"] and "split_seed=1" in c.split_notes["test"]


def test_mr_with_wrong_encoding_names_line_and_suggests_latin1():
    with pytest.raises(DataError) as err:
        load_dataset("mr", encoding="utf-8")
    msg = str(err.value)
    assert "rt-polarity.neg:32:" in msg and 'encoding="latin-1"' in msg and "--encoding latin-1" in msg
    assert "\n" not in msg
    skipped = load_dataset("mr", encoding="utf-8", on_bad_record="skip")
    assert len(skipped.skipped) == 202
    assert skipped.skipped[0].endswith("rt-polarity.neg:32: byte(s) e9 at column 17 cannot be decoded as utf-8")
    assert len(skipped["train"]) + len(skipped["test"]) == 10662 - 202


def _damaged_copy(data_dir: Path, tmp_path: Path, folder: str, file: str, change) -> Path:
    """A copy of one dataset folder of the shared data with ``change`` applied to one file's bytes."""
    import shutil

    shutil.copytree(data_dir / folder, tmp_path / folder)
    (tmp_path / folder / file).write_bytes(change((data_dir / folder / file).read_bytes()))
    return tmp_path


def _in_gzip(old: bytes, new: bytes):
    """A ``change`` for ``_damaged_copy`` that replaces the first ``old`` inside a .gz file's data."""
    import gzip

    return lambda data: gzip.compress(gzip.decompress(data).replace(old, new, 1))


@pytest.mark.parametrize("name, folder, file, change, message", [
    # A label the corpus does not have was a class of its own (a probe in stop 63: "What", "FOO", "loc").
    ("trec", "trec", "TREC_10.label", lambda b: b.replace(b"LOC:city What", b"What", 1),
     r"TREC_10.label:\d+: 'What' is not a TREC label"),
    ("trec-fine", "trec", "TREC_10.label", lambda b: b.replace(b"LOC:city What", b"LOC:city\tWhat", 1),
     r"TREC_10.label:\d+: 'LOC:city\\tWhat' is not a TREC label"),
    ("trec", "trec", "TREC_10.label", lambda b: b.replace(b"LOC:city What", b"loc:city What", 1),
     "is not a TREC label"),
    # \r-only line endings read a whole class file as one record (mr: 4797 pos against 1 neg).
    ("mr", "mr", "rt-polarity.neg", lambda b: b.replace(b"\n", b"\r"), r"rt-polarity.neg:1: a carriage return"),
    # A NUL byte was read into the text (no published file holds one).
    ("mr", "mr", "rt-polarity.neg", lambda b: b.replace(b" ", b"\x00", 1),
     r"rt-polarity.neg:1: a NUL byte \(0x00\) at character \d+, which no text holds"),
    ("20news", "20news", "test.jsonl.gz", _in_gzip(b"From:", b"From:\x00"), r"test.jsonl.gz:1: a NUL byte \(0x00\)"),
])
def test_a_damaged_catalogue_file_is_refused_at_its_line(data_dir, tmp_path, name, folder, file, change, message):
    root = _damaged_copy(data_dir, tmp_path, folder, file, change)
    with pytest.raises(DataError, match=message):
        load_dataset(name, data_dir=root)


def test_a_reuters_topic_outside_the_ten_is_refused(data_dir, tmp_path):
    import gzip
    import json

    def bogus(data: bytes) -> bytes:
        lines = gzip.decompress(data).decode("utf-8").splitlines()
        record = json.loads(lines[0])
        record["labels"] = ["earn", "bogus-topic"]
        return gzip.compress("\n".join([json.dumps(record)] + lines[1:]).encode("utf-8") + b"\n")

    root = _damaged_copy(data_dir, tmp_path, "reuters", "train.jsonl.gz", bogus)
    with pytest.raises(DataError, match=r"train.jsonl.gz:1: label 'bogus-topic' is not one of the corpus's classes"):
        load_dataset("reuters", data_dir=root)


def test_a_cut_fdu_training_file_names_itself(data_dir, tmp_path):
    """Until stop 63: "dataset 'fdu_mtl/apparel': cannot take the last 200 of 150 train records as dev"."""
    root = _damaged_copy(data_dir, tmp_path, "fdu_mtl", "apparel.task.train",
                         lambda b: b"\n".join(b.split(b"\n")[:150]) + b"\n")
    with pytest.raises(DataError, match=r"apparel.task.train: holds 150 training records, but the last 200 are the dev "
                                        r"split .* restore it"):
        load_dataset("fdu_mtl/apparel", data_dir=root)


def test_a_data_folder_that_cannot_be_searched_is_one_data_error(data_dir, tmp_path, monkeypatch):
    """Root searches any folder, so the denial a user without the x bit gets is made here."""
    root = _damaged_copy(data_dir, tmp_path, "mr", "rt-polarity.neg", lambda b: b)
    real = Path.is_file

    def denied(self):
        if str(self).startswith(str(root / "mr") + "/"):
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "is_file", denied)
    with pytest.raises(DataError, match=r"rt-polarity.neg: cannot be reached \(permission denied"):
        load_dataset("mr", data_dir=root)


def test_a_broken_local_copy_is_named_before_the_hub_is_tried(tmp_path, monkeypatch):
    """Until stop 63 each of these spent half a minute on the hub's retries (offline) and then
    said 'no local copy either: put it in <the file>/trec'."""
    monkeypatch.setattr("textcls.data.load.load_hub", lambda *a, **k: pytest.fail("the hub was tried"))
    (tmp_path / "afile").write_text("x")
    with pytest.raises(DataError, match="afile: the data directory .* is a file"):
        load_dataset("trec", data_dir=tmp_path / "afile")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "trec").write_text("x")
    with pytest.raises(DataError, match=r"data/trec: is a file where the folder of dataset 'trec' belongs"):
        load_dataset("trec", data_dir=tmp_path / "data")
    (tmp_path / "data" / "mr").symlink_to(tmp_path / "nowhere")
    with pytest.raises(DataError, match=r"data/mr: a symlink to .*nowhere, which does not exist"):
        load_dataset("mr", data_dir=tmp_path / "data")


def test_an_empty_dataset_name_is_refused_not_read_as_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.txt").write_text("good\nnice\n")
    (tmp_path / "b.txt").write_text("bad\nawful\n")
    with pytest.raises(DataError, match="empty name"):
        load_dataset("")


def test_mpqa_counts_and_published_blank_lines():
    ds = load_dataset("mpqa")
    assert {k: len(v) for k, v in ds.splits.items()} == {"train": 9542, "test": 1061}
    assert class_counts(ds, "train") == {"neg": 6562, "pos": 2980}
    assert [s.split("/")[-1] for s in ds.skipped] == [
        "mpqa.neg:6415: empty text (as published)",
        "mpqa.neg:7294: empty text (as published)",
        "mpqa.pos:3312: empty text (as published)",
    ]


@pytest.mark.parametrize(
    "name,sizes,train_counts",
    [
        ("sst2", {"train": 6920, "dev": 872, "test": 1821}, {"negative": 3310, "positive": 3610}),
        (
            "sst5",
            {"train": 8544, "dev": 1101, "test": 2210},
            {"very negative": 1092, "negative": 2218, "neutral": 1624, "positive": 2322, "very positive": 1288},
        ),
    ],
)
def test_sst(name, sizes, train_counts):
    ds = load_dataset(name)
    assert {k: len(v) for k, v in ds.splits.items()} == sizes
    assert class_counts(ds, "train") == train_counts
    assert ds.label_names == list(train_counts)
    assert ds.split_notes["dev"] == "official (dev.tsv)"


def test_trec_coarse_and_fine():
    coarse = load_dataset("trec")
    assert {k: len(v) for k, v in coarse.splits.items()} == {"train": 5452, "test": 500}
    assert class_counts(coarse, "train") == {"ABBR": 86, "DESC": 1162, "ENTY": 1250, "HUM": 1223, "LOC": 835, "NUM": 896}
    assert class_counts(coarse, "test") == {"ABBR": 9, "DESC": 138, "ENTY": 94, "HUM": 65, "LOC": 81, "NUM": 113}
    assert coarse["test"][0] == {"text": "How far is it from Denver to Aspen ?", "label": "NUM"}
    fine = load_dataset("trec-fine")
    assert len(fine.label_names) == 50
    assert len(set(fine["train"]["label"])) == 50 and len(set(fine["test"]["label"])) == 42
    assert fine["test"][0]["label"] == "NUM:dist"
    assert all(":" in name for name in fine.label_names)
    assert fine.label_names[:3] == ["ABBR:abb", "ABBR:exp", "DESC:def"]


def test_imdb(imdb):
    assert {k: len(v) for k, v in imdb.splits.items()} == {"train": 25000, "test": 25000}
    assert class_counts(imdb, "train") == {"neg": 12500, "pos": 12500}
    assert class_counts(imdb, "test") == {"neg": 12500, "pos": 12500}
    assert any("<br />" in t for t in imdb["train"][:200]["text"])


def test_20news_keeps_raw_posts():
    ds = load_dataset("20news")
    assert {k: len(v) for k, v in ds.splits.items()} == {"train": 11314, "test": 7532}
    assert len(ds.label_names) == 20 and ds.label_names[0] == "alt.atheism"
    assert class_counts(ds, "train")["alt.atheism"] == 480
    assert class_counts(ds, "test")["talk.religion.misc"] == 251
    assert ds["train"][0]["text"].startswith("From:")


def test_reuters_multi_label():
    ds = load_dataset("reuters")
    assert ds.multi_label and ds.label_column == "labels"
    assert {k: len(v) for k, v in ds.splits.items()} == {"train": 6454, "test": 2532}
    assert ds.label_names == ["earn", "acq", "money-fx", "grain", "crude", "trade", "interest", "ship", "wheat", "corn"]
    train_labels = list(ds["train"]["labels"])
    assert Counter(len(l) for l in train_labels) == {1: 5841, 2: 535, 3: 72, 4: 6}
    assert Counter(x for l in train_labels for x in l)["corn"] == 181
    # 36 train + 13 test documents have neither title nor body in the published corpus.
    assert len(ds.skipped) == 49 and sum("train.jsonl.gz" in s for s in ds.skipped) == 36
    first = ds["train"][0]["text"]
    assert first.startswith("NATIONAL AVERAGE PRICES FOR FARMER-OWNED RESERVE\nThe U.S. Agriculture Department")


def test_reuters_single_is_derived_view():
    ds = load_dataset("reuters-single")
    assert not ds.multi_label
    assert {k: len(v) for k, v in ds.splits.items()} == {"train": 5841, "test": 2320}
    assert class_counts(ds, "train") == {
        "earn": 2831, "acq": 1608, "money-fx": 366, "grain": 78, "crude": 314, "trade": 320,
        "interest": 202, "ship": 121, "wheat": 1,
    }  # fmt: skip
    assert ds.label_names == ["earn", "acq", "money-fx", "grain", "crude", "trade", "interest", "ship", "wheat"]


def test_ag_news_offline_split():
    ds = load_dataset("ag_news")
    assert {k: len(v) for k, v in ds.splits.items()} == {"train": 6080, "test": 1520}
    assert class_counts(ds, "test") == {"World": 380, "Sports": 380, "Business": 380, "Sci/Tech": 380}
    assert ds.label_names == ["World", "Sports", "Business", "Sci/Tech"]
    texts = list(ds["train"]["text"]) + list(ds["test"]["text"])
    # The Zhang `\` line break becomes a real one.
    assert any("A second\nteam of rocketeers" in t for t in texts)
    assert not any("\\" in t for t in texts)
    assert "20% of train" in ds.split_notes["test"]


@pytest.mark.parametrize("name", [n for n in CATALOG if n.startswith("fdu_mtl/")])
def test_fdu_mtl_domain_sizes(name):
    ds = load_dataset(name)
    assert {k: len(v) for k, v in ds.splits.items()} == CATALOG[name].split_sizes
    assert ds.label_names == ["negative", "positive"]


def test_fdu_mtl_mr_nel_and_last_200_dev(data_dir):
    ds = load_dataset("fdu_mtl/MR")
    assert {k: len(v) for k, v in ds.splits.items()} == {"train": 1400, "dev": 200, "test": 400}
    assert class_counts(ds, "train") == {"negative": 713, "positive": 687}
    assert class_counts(ds, "dev") == {"negative": 109, "positive": 91}
    lines = (data_dir / "fdu_mtl" / "MR.task.train").read_bytes().decode("latin-1").split("\n")[:-1]
    assert len(lines) == 1600
    assert list(ds["dev"]["text"]) == [l.split("\t", 1)[1].strip() for l in lines[-200:]]
    assert "last 200" in ds.split_notes["dev"]


def test_fdu_mtl_quirks():
    sports = load_dataset("fdu_mtl/sports_outdoors")
    assert [s.split("/")[-1] for s in sports.skipped] == ["sports_outdoors.task.train:1121: empty text (as published)"]
    dvd = load_dataset("fdu_mtl/dvd")
    assert sum("\ufffd" in t for t in dvd["train"]["text"]) == 1


def test_fine_food_default():
    ds = load_dataset("fine-food")
    assert {k: len(v) for k, v in ds.splits.items()} == {"train": 4000, "test": 1000}
    assert class_counts(ds, "train") == {"great": 2600, "other": 1400}
    assert class_counts(ds, "test") == {"great": 658, "other": 342}
    assert ds.label_names == ["great", "other"]


def test_max_per_split_is_stratified_and_seeded():
    a = load_dataset("sst2", max_per_split=100)
    assert {k: len(v) for k, v in a.splits.items()} == {"train": 100, "dev": 100, "test": 100}
    assert class_counts(a, "train") == {"negative": 48, "positive": 52}
    assert list(a["train"]["text"]) == list(load_dataset("sst2", max_per_split=100)["train"]["text"])
    assert list(a["train"]["text"]) != list(load_dataset("sst2", max_per_split=100, split_seed=3)["train"]["text"])


# ---------------------------------------------------------------------------------------
# Listing and resolution


def test_list_datasets(tmp_path):
    infos = {i.name: i for i in list_datasets()}
    expected = {"mr", "mpqa", "sst2", "sst5", "trec", "trec-fine", "imdb", "20news", "reuters", "reuters-single",
                "ag_news", "fine-food", "dbpedia", "yelp-polarity", "yelp-full", "yahoo-answers",
                "amazon-polarity", "amazon-full", "rotten-tomatoes"}  # fmt: skip
    assert expected | {f"fdu_mtl/{d}" for d in ("books", "MR", "dvd")} <= set(infos)
    assert len([n for n in infos if n.startswith("fdu_mtl/")]) == 16
    assert infos["mr"].local and not infos["dbpedia"].local and infos["fine-food"].local
    assert infos["reuters"].multi_label and infos["reuters"].num_classes == 10
    assert infos["trec-fine"].num_classes == 50 and infos["trec-fine"].classes == 50
    assert infos["ag_news"].hub_id == "fancyzhx/ag_news" and infos["ag_news"].splits == {"train": 6080, "test": 1520}
    assert infos["dbpedia"].hub_id == "fancyzhx/dbpedia_14"
    assert all(i.hub_id for n, i in infos.items() if not n.startswith("fdu_mtl") and n != "fine-food")
    assert infos["fdu_mtl"].splits == {"train": 22179, "dev": 3200, "test": 6400} and infos["fdu_mtl"].local
    empty = {i.name: i.local for i in list_datasets(tmp_path)}
    assert empty["mr"] is False and empty["fine-food"] is True


def test_data_dir_resolution(monkeypatch, tmp_path):
    monkeypatch.setenv("TEXTCLS_DATA_DIR", str(tmp_path / "env"))
    assert data_dir() == tmp_path / "env"
    assert data_dir(tmp_path / "explicit") == tmp_path / "explicit"
    monkeypatch.delenv("TEXTCLS_DATA_DIR")
    assert data_dir() == Path.home() / ".cache" / "textcls" / "datasets"


def test_unknown_name_suggests_close_names():
    with pytest.raises(DataError, match=r"'imbd' is neither a catalogue dataset.*did you mean: imdb"):
        load_dataset("imbd")


def test_name_lookup_ignores_case_and_dashes():
    assert load_dataset("AG-NEWS").name == "ag_news"
    assert len(load_dataset("fdu_mtl/mr")["dev"]) == 200


def test_file_options_are_refused_for_catalogue_names():
    with pytest.raises(ConfigError, match="'text_columns' applies to local files"):
        load_dataset("mr", text_columns=["text"])


def test_missing_local_copy_without_hub_names_data_dir(tmp_path):
    with pytest.raises(DataError) as err:
        load_dataset("fdu_mtl/books", data_dir=tmp_path)
    assert str(tmp_path / "fdu_mtl") in str(err.value) and "TEXTCLS_DATA_DIR" in str(err.value)


def test_partial_local_copy_names_missing_file(tmp_path):
    (tmp_path / "sst2").mkdir()
    (tmp_path / "sst2" / "train.tsv").write_text("sentence\tlabel\ngood film\t1\n")
    with pytest.raises(DataError, match=r"sst2/dev.tsv: missing file.*TEXTCLS_DATA_DIR"):
        load_dataset("sst2", data_dir=tmp_path)


def test_unreachable_hub_names_data_dir(tmp_path, monkeypatch):
    monkeypatch.delenv("TEXTCLS_HUB_DIR", raising=False)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(DataError) as err:
        load_dataset("dbpedia", data_dir=tmp_path)
    msg = str(err.value)
    assert "fancyzhx/dbpedia_14" in msg and str(tmp_path / "dbpedia") in msg and "TEXTCLS_DATA_DIR" in msg


# ---------------------------------------------------------------------------------------
# The Zhang et al. original folder layout


def write_zhang(folder: Path, rows_by_split, classes=None):
    folder.mkdir(parents=True)
    for split, rows in rows_by_split.items():
        with open(folder / f"{split}.csv", "w", newline="", encoding="utf-8") as fh:
            csv.writer(fh, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    if classes:
        (folder / "classes.txt").write_text("\n".join(classes) + "\n")


def test_zhang_original_layout_dbpedia(tmp_path):
    classes = CATALOG["dbpedia"].label_order
    train = [[str(i % 14 + 1), f"Title {i}", f'Abstract {i} with "quotes", commas'] for i in range(56)]
    test = [[str(i % 14 + 1), f"T{i}", f"A{i}"] for i in range(28)]
    write_zhang(tmp_path / "dbpedia_csv", {"train": train, "test": test}, classes)
    ds = load_dataset("dbpedia", data_dir=tmp_path)
    assert {k: len(v) for k, v in ds.splits.items()} == {"train": 56, "test": 28}
    assert ds.label_names == list(classes)
    assert ds["train"][1] == {"text": 'Title 1 Abstract 1 with "quotes", commas', "label": "EducationalInstitution"}
    assert class_counts(ds, "test") == {name: 2 for name in classes}
    assert ds.split_notes == {"train": "official (train.csv)", "test": "official (test.csv)"}


def test_zhang_layout_without_classes_txt_uses_catalogue_names(tmp_path):
    rows = [["1", "bad food\\nnever again"], ["2", "great"], ["2", "lovely\\nstaff"], ["1", "cold"]]
    write_zhang(tmp_path / "yelp-polarity", {"train": rows, "test": rows[:2]})
    ds = load_dataset("yelp-polarity", data_dir=tmp_path)
    assert ds["train"][0] == {"text": "bad food\nnever again", "label": "negative"}
    assert ds.label_names == ["negative", "positive"]


def test_zhang_unknown_class_id_names_line(tmp_path):
    write_zhang(tmp_path / "dbpedia", {"test": [["1", "a", "b"], ["15", "c", "d"]]})
    with pytest.raises(DataError, match=r"dbpedia/test.csv:2: label '15' is not one of 1, 2,"):
        load_dataset("dbpedia", data_dir=tmp_path)


# ---------------------------------------------------------------------------------------
# The Hugging Face hub path, offline through TEXTCLS_HUB_DIR


def write_hub_parquet(root: Path, hub_id: str, splits: dict, features: datasets.Features, sub: str = "data"):
    folder = root / hub_id / sub
    folder.mkdir(parents=True, exist_ok=True)
    for split, columns in splits.items():
        datasets.Dataset.from_dict(columns, features=features).to_parquet(str(folder / f"{split}-00000-of-00001.parquet"))


def test_hub_layout_by_name_maps_class_ids(tmp_path, monkeypatch):
    features = datasets.Features(
        {"text": datasets.Value("string"), "label": datasets.ClassLabel(names=["World", "Sports", "Business", "Sci/Tech"])}
    )
    write_hub_parquet(
        tmp_path / "hub",
        "fancyzhx/ag_news",
        {"train": {"text": ["w", "s", "b", "t", "w2"], "label": [0, 1, 2, 3, 0]}, "test": {"text": ["x", "y"], "label": [3, 1]}},
        features,
    )
    monkeypatch.setenv("TEXTCLS_HUB_DIR", str(tmp_path / "hub"))
    ds = load_dataset("ag_news", data_dir=tmp_path / "no-local-copy")
    assert list(ds["train"]["label"]) == ["World", "Sports", "Business", "Sci/Tech", "World"]
    assert list(ds["test"]["label"]) == ["Sci/Tech", "Sports"]
    assert ds.label_names == ["World", "Sports", "Business", "Sci/Tech"]
    assert ds.split_notes["test"] == "official (hub split 'test')"


def test_hub_layout_reuters_config_and_derived_view(tmp_path, monkeypatch):
    root = tmp_path / "hub" / "ucirvine" / "reuters21578"
    features = datasets.Features(
        {"title": datasets.Value("string"), "text": datasets.Value("string"), "topics": datasets.List(datasets.Value("string"))}
    )
    write_hub_parquet(
        tmp_path / "hub",
        "ucirvine/reuters21578",
        {
            "train": {"title": ["T1", "T2", "T3", ""], "text": ["b1", "b2", "b3", ""],
                      "topics": [["earn"], ["grain", "corn", "barley"], ["cocoa"], ["acq"]]},
            "test": {"title": ["T5"], "text": ["b5"], "topics": [["crude"]]},
        },
        features,
        sub="ModApte",
    )  # fmt: skip
    (root / "README.md").write_text(
        "---\nconfigs:\n- config_name: ModApte\n  data_files:\n  - split: train\n    path: ModApte/train-*.parquet\n"
        "  - split: test\n    path: ModApte/test-*.parquet\n---\n"
    )
    monkeypatch.setenv("TEXTCLS_HUB_DIR", str(tmp_path / "hub"))
    ds = load_dataset("reuters", data_dir=tmp_path / "none")
    assert list(ds["train"]["labels"]) == [["earn"], ["grain", "corn"]]
    assert list(ds["train"]["text"]) == ["T1\nb1", "T2\nb2"]
    assert "1 record(s) outside" in ds.split_notes["train"]
    assert ds.skipped == ["hf:ucirvine/reuters21578 train: record 3: empty text (as published)"]
    single = load_dataset("reuters-single", data_dir=tmp_path / "none")
    assert list(single["train"]["label"]) == ["earn"] and single.label_names == ["earn", "crude"]


def test_hf_source_with_columns(tmp_path, monkeypatch):
    features = datasets.Features({"sentence": datasets.Value("string"), "stars": datasets.Value("int64")})
    write_hub_parquet(
        tmp_path / "hub", "someone/reviews",
        {"train": {"sentence": ["a", "b", "c", "d"], "stars": [1, 5, 5, 1]}, "validation": {"sentence": ["e"], "stars": [5]},
         "test": {"sentence": ["f", "g"], "stars": [1, 5]}},
        features,
    )  # fmt: skip
    monkeypatch.setenv("TEXTCLS_HUB_DIR", str(tmp_path / "hub"))
    ds = load_dataset("hf:someone/reviews", text_columns=["sentence"], label_column="stars")
    assert {k: len(v) for k, v in ds.splits.items()} == {"train": 4, "dev": 1, "test": 2}
    assert ds.label_names == ["1", "5"] and ds["test"][1] == {"text": "g", "label": "5"}
    with pytest.raises(DataError, match=r"no column 'body'; the columns are: sentence, stars"):
        load_dataset("hf:someone/reviews", text_columns=["body"], label_column="stars")


def test_a_task_column_of_a_hub_dataset_makes_multi_task_data(tmp_path, monkeypatch):
    """hf:<id> reads a "task" column as a local parquet file does (it was read as no column at
    all, and a multi-task preset trained one head for the tasks pooled)."""
    features = datasets.Features({"text": datasets.Value("string"), "label": datasets.Value("string"),
                                  "task": datasets.Value("string")})
    train = {"text": ["a", "b", "c", "d"], "label": ["pos", "neg", "pos", "neg"], "task": ["dvd", "books", "books ", "dvd"]}
    test = {"text": ["e", "f"], "label": ["pos", "neg"], "task": ["books", "dvd"]}
    write_hub_parquet(tmp_path / "hub", "someone/domains", {"train": train, "test": test}, features)
    monkeypatch.setenv("TEXTCLS_HUB_DIR", str(tmp_path / "hub"))
    ds = load_dataset("hf:someone/domains")
    assert ds.task_names == ["books", "dvd"]
    assert ds["test"]["task"] == ["books", "dvd"] and ds.task_ids("test") == [0, 1]
    # Tasks coded as a ClassLabel (as hub datasets often are) are their names.
    coded = datasets.Features({**features, "task": datasets.ClassLabel(names=["dvd", "books"])})
    write_hub_parquet(tmp_path / "hub", "someone/coded", {"train": {**train, "task": [0, 1, 1, 0]},
                                                          "test": {**test, "task": [1, 0]}}, coded)
    ds = load_dataset("hf:someone/coded")
    assert ds.task_names == ["books", "dvd"] and ds["test"]["task"] == ["books", "dvd"]
    # Plain integer tasks are named by their digits, as integer labels are; a negative ClassLabel
    # id (the hub's "none") is a missing task, a bad record.
    numbered = datasets.Features({**features, "task": datasets.Value("int64")})
    write_hub_parquet(tmp_path / "hub", "someone/numbered", {"train": {**train, "task": [1, 2, 2, 1]},
                                                             "test": {**test, "task": [2, 1]}}, numbered)
    assert load_dataset("hf:someone/numbered").task_names == ["1", "2"]
    write_hub_parquet(tmp_path / "hub", "someone/unset", {"train": {**train, "task": [0, 1, -1, 0]},
                                                          "test": {**test, "task": [1, 0]}}, coded)
    with pytest.raises(DataError, match=r"^hf:someone/unset train: record 2: missing or empty task"):
        load_dataset("hf:someone/unset")


def test_a_hub_dataset_takes_task_column(tmp_path, monkeypatch):
    """hf:<id> takes task_column as a local file does: None reads its "task" column as data, a name
    reads that column's tasks, and a name the dataset lacks is refused with its columns."""
    features = datasets.Features({"text": datasets.Value("string"), "label": datasets.Value("string"),
                                  "task": datasets.Value("string"), "domain": datasets.Value("string")})
    train = {"text": ["a", "b", "c", "d"], "label": ["pos", "neg", "pos", "neg"], "task": ["x", None, "y", "z"],
             "domain": ["dvd", "books", "books", "dvd"]}
    test = {"text": ["e", "f"], "label": ["pos", "neg"], "task": ["w", "x"], "domain": ["books", "dvd"]}
    write_hub_parquet(tmp_path / "hub", "someone/meta", {"train": train, "test": test}, features)
    monkeypatch.setenv("TEXTCLS_HUB_DIR", str(tmp_path / "hub"))
    with pytest.raises(DataError, match=r"^hf:someone/meta train: record 1: missing or empty task"):
        load_dataset("hf:someone/meta")  # its "task" column read as tasks, as before
    ds = load_dataset("hf:someone/meta", task_column=None)
    assert ds.task_names is None and "task" not in ds["test"].column_names and len(ds["train"]) == 4
    ds = load_dataset("hf:someone/meta", task_column="domain")
    assert ds.task_names == ["books", "dvd"] and ds["test"]["task"] == ["books", "dvd"]
    with pytest.raises(DataError, match=r"^hf:someone/meta train: no column 'area'; the columns are: text, label, "
                                        r"task, domain; pass task_column="):
        load_dataset("hf:someone/meta", task_column="area")


def test_a_catalogue_corpus_keeps_a_nul_character_as_published(tmp_path, monkeypatch):
    """A U+0000 in a published corpus's string (a hub copy, the only one of dbpedia, yelp,
    amazon...; a local JSON Lines copy's \\u0000 escape) is read as published: its user cannot fix
    it, and skipping would move the splits off their published sizes. Until the review of stop 65
    one such string ended every default load of the corpus. The same hub folder named as hf:
    by the user is checked like any of the user's own data."""
    features = datasets.Features({"title": datasets.Value("string"), "content": datasets.Value("string"),
                                  "label": datasets.ClassLabel(names=["Company", "Artist"])})
    write_hub_parquet(tmp_path / "hub", "fancyzhx/dbpedia_14",
                      {"train": {"title": ["A", "B", "C"], "content": ["x", "y\x00z", "w"], "label": [0, 1, 0]},
                       "test": {"title": ["D"], "content": ["v\x00"], "label": [1]}}, features)
    monkeypatch.setenv("TEXTCLS_HUB_DIR", str(tmp_path / "hub"))
    ds = load_dataset("dbpedia", data_dir=tmp_path / "no-local-copy")
    assert list(ds["train"]["text"]) == ["A x", "B y\x00z", "C w"] and list(ds["test"]["text"]) == ["D v\x00"]
    assert ds.skipped == []
    with pytest.raises(DataError, match=r"^hf:fancyzhx/dbpedia_14 train: record 1: a NUL character \(U\+0000"):
        load_dataset("hf:fancyzhx/dbpedia_14", text_columns=["title", "content"])

    local = tmp_path / "data" / "imdb"
    local.mkdir(parents=True)
    for split, texts in (("train", ["good", "b\x00ad"]), ("test", ["fine", "poor"])):
        rows = [json.dumps({"text": t, "label": label}) for t, label in zip(texts, ("pos", "neg"))]
        (local / f"{split}.jsonl.gz").write_bytes(gzip.compress(("\n".join(rows) + "\n").encode()))
    assert b"\x00" not in gzip.decompress((local / "train.jsonl.gz").read_bytes())
    assert list(load_dataset("imdb", data_dir=tmp_path / "data")["train"]["text"]) == ["good", "b\x00ad"]


def test_hub_dir_without_the_repo_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("TEXTCLS_HUB_DIR", str(tmp_path))
    with pytest.raises(DataError, match=r"yassiracharki/.*: no such folder, though TEXTCLS_HUB_DIR="):
        load_dataset("amazon-full", data_dir=tmp_path / "none")


def test_fdu_mtl_all_domains_is_one_multi_task_dataset_with_each_domains_own_splits():
    ds = load_dataset("fdu_mtl")
    assert ds.task_names[0] == "apparel" and len(ds.task_names) == 16
    books = load_dataset("fdu_mtl/books")
    for split in ("train", "dev", "test"):
        part = ds[split].filter(lambda r: r["task"] == "books")
        assert part["text"] == books[split]["text"] and part["label"] == books[split]["label"]
    assert len(ds["dev"]) == 16 * 200 and len(ds["test"]) == 16 * 400
    # The one empty sports_outdoors line is skipped and listed, as in the domain's own dataset.
    assert len(ds.skipped) == 1 and "sports_outdoors" in ds.skipped[0]
    ids = ds.task_ids("test")
    assert ids[:400] == [0] * 400 and ids[-1] == 15


def test_fdu_mtl_subsample_keeps_every_task_and_its_class_balance():
    ds = load_dataset("fdu_mtl", max_per_split=320)
    counts = Counter(zip(ds["train"]["task"], ds["train"]["label"]))
    assert len(ds["train"]) == 320 and len(counts) == 32 and set(counts.values()) <= {9, 10, 11}


# ---------------------------------------------------------------------------------------
# Damaged local copies: what was published is checked, one line naming the file


def _texts(ds):
    return {split: list(ds[split]["text"]) for split in ds.splits}


@pytest.mark.parametrize("name, folder, file", [
    ("mr", "mr", "rt-polarity.pos"),
    ("trec", "trec", "train_5500.label"),
    ("fdu_mtl/MR", "fdu_mtl", "MR.task.train"),
])
@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
def test_a_latin1_file_re_encoded_to_utf8_reads_as_published(data_dir, tmp_path, name, folder, file, bom):
    """Until stop 64 it read as mojibake ("Ã©"), and a byte-order mark stayed in the first record."""
    published = (data_dir / folder / file).read_bytes()
    with pytest.raises(UnicodeDecodeError):
        published.decode("utf-8")  # so the published file is read as latin-1, as before
    root = _damaged_copy(data_dir, tmp_path, folder, file, lambda b: bom + b.decode("latin-1").encode("utf-8"))
    assert _texts(load_dataset(name, data_dir=root)) == _texts(load_dataset(name))


@pytest.mark.parametrize("change, message", [
    (lambda b: b + "a café\n".encode("utf-8"), r"rt-polarity.pos:44: byte 0xf3 is not UTF-8, yet the file holds UTF-8 "
                                               r"text on line 5332 \('é'\): it mixes UTF-8 and latin-1"),
    (lambda b: b"\xef\xbb\xbf" + b, r"rt-polarity.pos:44: byte 0xf3 is not UTF-8, yet the file starts with a UTF-8 "
                                    r"byte-order mark: it mixes"),
])
def test_a_latin1_file_partly_utf8_is_refused(data_dir, tmp_path, change, message):
    root = _damaged_copy(data_dir, tmp_path, "mr", "rt-polarity.pos", change)
    with pytest.raises(DataError, match=message + r".*restore it, or convert the whole file to UTF-8"):
        load_dataset("mr", data_dir=root)


def test_bytes_that_only_look_like_utf8_leave_a_latin1_file_latin1(data_dir, tmp_path):
    """An overlong form (e0 80 80) matches the pattern of a UTF-8 sequence but is not UTF-8; until
    the review of stop 64 the message that quoted it raised UnicodeDecodeError (a traceback)."""
    root = _damaged_copy(data_dir, tmp_path, "mr", "rt-polarity.pos", lambda b: b + b"un film \xe0\x80\x80 bon\n")
    texts = load_dataset("mr", data_dir=root, test_fraction=0.5)
    assert any("un film \xe0\x80\x80 bon" in t for split in texts.splits for t in texts[split]["text"])


@pytest.mark.parametrize("name, folder, copied, over", [
    ("mr", "mr", "rt-polarity.pos", "rt-polarity.neg"),
    ("sst2", "sst2", "train.tsv", "test.tsv"),
    ("trec", "trec", "train_5500.label", "TREC_10.label"),
    ("20news", "20news", "train.jsonl.gz", "test.jsonl.gz"),
    ("fdu_mtl/books", "fdu_mtl", "books.task.train", "books.task.test"),
    ("fdu_mtl", "fdu_mtl", "dvd.task.train", "books.task.train"),
])
def test_a_file_copied_over_another_is_refused_naming_both(data_dir, tmp_path, name, folder, copied, over):
    """Until stop 64 train copied over test, or pos over neg, was read without a word."""
    root = _damaged_copy(data_dir, tmp_path, folder, over, lambda b: (data_dir / folder / copied).read_bytes())
    with pytest.raises(DataError, match=r"\.[a-z.]+ and .*: the two files are identical, so one was copied over the "
                                        r"other; restore the published files$") as err:
        load_dataset(name, data_dir=root)
    assert f"{root / folder / copied} and " in str(err.value) or f" and {root / folder / copied}:" in str(err.value)
    assert f"{root / folder / over} and " in str(err.value) or f" and {root / folder / over}:" in str(err.value)


@pytest.mark.parametrize("name, folder, file, change, message", [
    ("ag_news", "ag_news", "test.csv", lambda b: b.replace(b'"3","', b'"3",""', 1), r"test.csv:1: a quoted field"),
    ("fdu_mtl/books", "fdu_mtl", "books.task.train", lambda b: b.replace(b"\t", b" "), r"the first row has only 1"),
    ("imdb", "imdb", "test.jsonl.gz", lambda b: __import__("gzip").compress(
        __import__("gzip").decompress(b).replace(b'"text"', b'"body"')), r"test.jsonl.gz:1: no field 'text'"),
])
def test_advice_on_a_damaged_catalogue_file_names_no_refused_option(data_dir, tmp_path, name, folder, file, change,
                                                                     message):
    """Until stop 64 the advice named --delimiter, --format or text_columns=, which a catalogue name refuses."""
    root = _damaged_copy(data_dir, tmp_path, folder, file, change)
    with pytest.raises(DataError, match=message) as err:
        load_dataset(name, data_dir=root)
    msg = str(err.value)
    assert "restore the published file (its layout: " in msg and "\n" not in msg
    for option in ("--delimiter", "--format", "--text-column", "--label-column", "--header", "delimiter=",
                   "format=", "text_columns=", "label_column=", "header="):
        assert option not in msg


def test_sst_without_its_header_row_says_the_header_is_missing(data_dir, tmp_path):
    """Until stop 64: "no column 'sentence'; the columns are: a stirring , funny ...; pass text_columns=" """
    root = _damaged_copy(data_dir, tmp_path, "sst2", "train.tsv", lambda b: b.split(b"\n", 1)[1])
    with pytest.raises(DataError, match=r"sst2/train.tsv:1: the header row sentence<TAB>label is missing: line 1 is a "
                                        r"record \('a stirring .*restore the header row"):
        load_dataset("sst2", data_dir=root)


@pytest.mark.parametrize("name, size, least", [("trec", 1, 6), ("trec", 5, 6), ("sst2", 1, 2)])
def test_a_max_per_split_below_the_classes_names_the_option_and_the_least(name, size, least):
    """Until stop 64: "cannot hold out 1 of 1 records (fraction 0.1)" or "the training labels hold a single class"."""
    with pytest.raises(ConfigError, match=rf"parameter 'max_per_split' = {size} keeps fewer records of '{name}' split "
                                          rf"'train' than its {least} classes.*pass max_per_split={least} or more "
                                          rf"\(CLI: --max-per-split {least}\)"):
        load_dataset(name, max_per_split=size)
    assert len(load_dataset(name, max_per_split=least)["train"]) == least


@pytest.mark.parametrize("size", [6, 12, 20])
def test_a_subsample_keeps_every_class_even_one_under_its_share(size):
    """A stratified draw of 12 of trec's 5,452 questions rounds ABBR's 1.6 % share to none; the
    subsample swaps one in (until stop 64 ABBR was missing at 12 and at 20)."""
    ds = load_dataset("trec", max_per_split=size)
    for split in ("train", "test"):
        assert set(ds[split]["label"]) == set(ds.label_names), split
        assert len(ds[split]) == size


def test_a_subsample_that_kept_every_class_is_the_same_draw_as_before():
    """The swap touches only draws that lost a class: earlier runs' slices stay as they were."""
    from textcls.data.splits import split_strata, stratified_split

    full = load_dataset("trec")
    _, held = stratified_split(split_strata(full["train"]), 300, 0)
    assert list(load_dataset("trec", max_per_split=300)["train"]["text"]) == list(full["train"].select(held)["text"])


@pytest.mark.parametrize("name, size, least", [("mr", 2, 4), ("trec", 6, 12)])
def test_a_train_subsample_too_small_for_a_dev_carve_names_the_option(name, size, least, tmp_path):
    """Training carves dev from a train split without one; a record a class leaves a class with
    none (until stop 64: "the training labels hold a single class")."""
    from textcls import Classifier

    ds = load_dataset(name, max_per_split=size)
    with pytest.raises(ConfigError, match=rf"parameter 'max_per_split' = {size} leaves '{name}' split 'train' too small "
                                          rf"to carve a dev split from it: class '.+' would have no training record; "
                                          rf"pass max_per_split={least} or more"):
        Classifier("tfidf-lr").fit_dataset(ds)
    trained = Classifier("tfidf-lr").fit_dataset(load_dataset(name, max_per_split=least))
    assert set(trained.classes_) == set(ds.label_names)


def test_evaluate_scores_a_test_subsample_of_a_record_a_class(tmp_path):
    """Evaluating trains nothing, so the train split's dev-carve floor does not refuse it (the
    first floor of stop 64 refused `evaluate --max-per-split 8` on trec)."""
    from textcls import Classifier

    run = tmp_path / "run"
    Classifier("tfidf-lr").fit_dataset(load_dataset("trec", max_per_split=300)).save_pretrained(run)
    ds = load_dataset("trec", max_per_split=8)
    assert len(ds["test"]) == 8
    metrics = Classifier.from_pretrained(run).evaluate(ds["test"])
    assert metrics["n"] == 8 and sum(map(sum, metrics["confusion_matrix"])) == 8


def test_list_datasets_refuses_a_data_dir_that_is_a_file_and_lists_partial_fdu_domains(data_dir, tmp_path,
                                                                                         monkeypatch, capsys):
    """Until stop 64 a file listed every dataset as "hub", and any fdu_mtl file made all 16 domains local."""
    from textcls.cli import main

    (tmp_path / "afile").write_text("x")
    with pytest.raises(DataError, match="afile: the data directory .* is a file, not a folder"):
        list_datasets(tmp_path / "afile")
    (tmp_path / "data" / "fdu_mtl").mkdir(parents=True)
    for file in ("books.task.train", "books.task.test", "dvd.task.train"):
        (tmp_path / "data" / "fdu_mtl" / file).write_bytes((data_dir / "fdu_mtl" / file).read_bytes())
    infos = {i.name: i for i in list_datasets(tmp_path / "data")}
    assert [n for n, i in infos.items() if i.local] == ["fine-food", "fdu_mtl/books"]
    assert infos["fdu_mtl/dvd"].missing == ("dvd.task.test",) and not infos["fdu_mtl/books"].missing
    assert infos["fdu_mtl/apparel"].missing == ("apparel.task.train", "apparel.task.test")
    assert len(infos["fdu_mtl"].missing) == 29 and not infos["mr"].missing
    monkeypatch.setenv("TEXTCLS_DATA_DIR", str(tmp_path / "data"))
    main(["list-datasets"])
    out = capsys.readouterr().out.splitlines()
    rows = {line.split()[0]: line.split()[3] for line in out}
    assert rows["fdu_mtl/books"] == "local" and rows["fdu_mtl/dvd"] == "part" and rows["mr"] == "hub"
    assert next(line for line in out if line.startswith("fdu_mtl/dvd ")).endswith("[local copy lacks dvd.task.test]")
    monkeypatch.setenv("TEXTCLS_DATA_DIR", str(tmp_path / "empty"))
    main(["list-datasets"])
    rows = {line.split()[0]: line.split()[3] for line in capsys.readouterr().out.splitlines()}
    assert rows["fdu_mtl/books"] == "none" and rows["mr"] == "hub" and rows["fine-food"] == "local"
    monkeypatch.setenv("TEXTCLS_DATA_DIR", str(tmp_path / "afile"))
    with pytest.raises(SystemExit):
        main(["list-datasets"])
    assert "afile: the data directory (TEXTCLS_DATA_DIR or data_dir=; CLI: --data-dir) is a file" in capsys.readouterr().err


@pytest.mark.parametrize("name, folder, file, change, message", [
    ("mpqa", "mpqa", "mpqa.neg", lambda b: b.replace(b"\n", b"\n\n", 1), r"mpqa.neg:2: empty text where the published "
                                                                         r"file has no empty document .*6415, 7294"),
    ("fdu_mtl/sports_outdoors", "fdu_mtl", "sports_outdoors.task.train", lambda b: b.replace(b"\n", b"\n1\t\n", 1),
     r"sports_outdoors.task.train:2: empty text where .* line\(s\) 1121;"),
    ("fdu_mtl/books", "fdu_mtl", "books.task.test", lambda b: b.replace(b"\n", b"\n0\t\n", 1),
     r"books.task.test:2: empty text; write the document's text"),
    ("reuters", "reuters", "test.jsonl.gz",
     _in_gzip(b"\n", b'\n{"id": "x", "title": "", "text": "", "labels": ["earn"]}\n'),
     r"test.jsonl.gz:2: empty text where the published file has no empty document \(its own have the ids 15046, "
     r"16014, 16040 and 10 more; this record's id is 'x'\); restore the file"),
    ("reuters", "reuters", "test.jsonl.gz", _in_gzip(b"\n", b'\n{"title": "", "text": "", "labels": ["earn"]}\n'),
     r"test.jsonl.gz:2: empty text where .* ids 15046, .*; this record has no 'id'\)"),
])
def test_an_empty_document_a_user_inserted_is_not_as_published(data_dir, tmp_path, name, folder, file, change, message):
    """Until stop 64 these were skipped and counted "empty text (as published)"."""
    root = _damaged_copy(data_dir, tmp_path, folder, file, change)
    with pytest.raises(DataError, match=message):
        load_dataset(name, data_dir=root)
    skipped = load_dataset(name, data_dir=root, on_bad_record="skip").skipped
    inserted = [s for s in skipped if s.split("/")[-1].startswith(f"{file}:2:")]
    assert len(inserted) == 1 and "as published" not in inserted[0]


def test_a_reordered_reuters_build_skips_the_same_empty_documents(data_dir, tmp_path):
    """reuters' empty documents are named by id: a build that orders the records otherwise (train
    reversed; test sorted by title, its ids written as strings) skips the same 49 as published.
    Until stop 65 they were named by line, and such a build was refused at its first one."""
    import gzip
    import json
    import shutil

    def objects(path):
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            return [json.loads(line) for line in fh]

    shutil.copytree(data_dir / "reuters", tmp_path / "reuters")
    originals = {file: objects(data_dir / "reuters" / file) for file in ("train.jsonl.gz", "test.jsonl.gz")}
    rebuilt = {"train.jsonl.gz": originals["train.jsonl.gz"][::-1],
               "test.jsonl.gz": sorted(({**o, "id": str(o["id"])} for o in originals["test.jsonl.gz"]),
                                       key=lambda o: o["title"])}
    for file, records in rebuilt.items():
        lines = "".join(json.dumps(o) + "\n" for o in records)
        (tmp_path / "reuters" / file).write_bytes(gzip.compress(lines.encode()))

    def skipped_ids(ds, files):
        found = []
        for entry in ds.skipped:
            assert entry.endswith(": empty text (as published)")
            path, line = entry.rsplit(": empty text", 1)[0].rsplit(":", 1)
            found.append(int(files[Path(path).name][int(line) - 1]["id"]))
        return sorted(found)

    def kept(ds, split):
        return Counter(zip(ds[split]["text"], map(tuple, ds[split]["labels"])))

    published = load_dataset("reuters")
    reordered = load_dataset("reuters", data_dir=tmp_path)
    assert len(reordered.skipped) == 49 and skipped_ids(reordered, rebuilt) == skipped_ids(published, originals)
    assert reordered.skipped != published.skipped  # the same documents, on other lines
    assert all(kept(reordered, split) == kept(published, split) for split in ("train", "test"))


def test_a_reordered_or_renamed_zhang_classes_txt_is_refused(data_dir, tmp_path):
    """Until stop 64 a reordered ag_news classes.txt renamed every class (World read as Sports)."""
    root = _damaged_copy(data_dir, tmp_path, "ag_news", "classes.txt", lambda b: b"Sports\nWorld\nBusiness\nSci/Tech\n")
    with pytest.raises(DataError, match=r"ag_news/classes.txt: lists in another order \(Sports, World, Business, "
                                        r"Sci/Tech\) where the published ag_news classes are, in order, World, Sports, "
                                        r"Business, Sci/Tech .*restore the original classes.txt"):
        load_dataset("ag_news", data_dir=root)
    (root / "ag_news" / "classes.txt").write_bytes(b"World\nSports\nBusiness\nScience\n")
    with pytest.raises(DataError, match=r"classes.txt: lists 4 classes \(World, Sports, Business, Science\) where"):
        load_dataset("ag_news", data_dir=root)


def test_a_class_of_one_record_stays_out_of_a_subsample_as_before():
    """reuters-single has one 'wheat' training document; the draw never took it, and the swap of
    stop 64 leaves it so (the committed slices of 1,000 and 3,000 documents stay the same)."""
    from textcls.data.splits import split_strata, stratified_split

    full = load_dataset("reuters-single")
    assert list(full["train"]["label"]).count("wheat") == 1
    _, held = stratified_split(split_strata(full["train"]), 1000, 0)
    sliced = load_dataset("reuters-single", max_per_split=1000)["train"]
    assert list(sliced["text"]) == list(full["train"].select(held)["text"])
    assert "wheat" not in set(sliced["label"])
