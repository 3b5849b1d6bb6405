"""Generic local readers on small files the tests write, and every bad-input case."""

from __future__ import annotations

import gzip
import json
from collections import Counter

import datasets
import pytest

from textcls.data import load_dataset
from textcls.errors import ConfigError, DataError


def sizes(ds):
    return {k: len(v) for k, v in ds.splits.items()}


def records(ds, split="train"):
    column = ds.label_column
    return list(zip(ds[split]["text"], ds[split][column]))


def write(path, data: str | bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.write_bytes(data)
    return path


def csv_rows(n_per_class=10):
    rows = []
    for i in range(n_per_class):
        rows.append(f'pos,"great film {i}","really, truly"')
        rows.append(f'neg,"dull film {i}",boring')
    return rows


# ---------------------------------------------------------------------------------------
# Formats


def test_csv_with_header_named_columns_joined(tmp_path):
    path = write(tmp_path / "reviews.csv", "label,title,body\n" + "\n".join(csv_rows()) + "\n")
    ds = load_dataset(str(path), text_columns=["title", "body"], label_column="label")
    assert sizes(ds) == {"train": 18, "test": 2}
    assert ds.label_names == ["neg", "pos"]
    assert ("great film 0 really, truly", "pos") in records(ds) + records(ds, "test")
    assert Counter(ds["test"]["label"]) == {"neg": 1, "pos": 1}
    assert ds.split_notes["test"] == "seeded stratified 10% of train (2 of 20 records, split_seed=0)"


def test_csv_header_autodetected_and_default_columns(tmp_path):
    path = write(tmp_path / "d.csv", "text,label\n" + "\n".join(f"doc {i},{'ab'[i % 2]}" for i in range(10)) + "\n")
    ds = load_dataset(str(path), test_fraction=0.2)
    assert sizes(ds) == {"train": 8, "test": 2}
    assert sorted(records(ds) + records(ds, "test"))[0] == ("doc 0", "a")


def test_csv_without_header_by_index_and_multiline_quoted_field(tmp_path):
    lines = ['"a","first line\nsecond line"'] + [f'"{"ab"[i % 2]}","doc {i}"' for i in range(1, 10)]
    path = write(tmp_path / "d.csv", "\n".join(lines) + "\n")
    ds = load_dataset(str(path), header=False, text_columns=[1], label_column=0)
    texts = list(ds["train"]["text"]) + list(ds["test"]["text"])
    assert "first line\nsecond line" in texts and len(texts) == 10
    # The record after a two-line field starts on line 3, and an error there says so.
    bad = write(tmp_path / "bad.csv", '"a","two\nlines"\n"b",""\n')
    with pytest.raises(DataError, match=r"bad.csv:3: empty text"):
        load_dataset(str(bad), header=False)


def test_tsv_headerless_label_first_like_fdu(tmp_path):
    path = write(tmp_path / "x.tsv", "".join(f"{i % 2}\tsome \"quoted text {i}\r\n" for i in range(20)))
    ds = load_dataset(str(path))
    assert ds.label_names == ["0", "1"]
    assert ('some "quoted text 0', "0") in records(ds) + records(ds, "test")
    assert sizes(ds) == {"train": 18, "test": 2}


def test_cli_style_index_strings(tmp_path):
    path = write(tmp_path / "x.tsv", "".join(f"text {i}\t{'xy'[i % 2]}\n" for i in range(10)))
    ds = load_dataset(str(path), text_columns=["0"], label_column="1")
    assert sorted(records(ds) + records(ds, "test"))[0] == ("text 0", "x")


@pytest.mark.parametrize("name", ["d.jsonl", "d.jsonl.gz"])
def test_jsonl_plain_and_gzipped(tmp_path, name):
    lines = "".join(json.dumps({"id": i, "text": f"doc {i}", "label": "ab"[i % 2]}) + "\n" for i in range(10)) + "\n"
    data = lines.encode()
    path = write(tmp_path / name, gzip.compress(data) if name.endswith(".gz") else data)
    ds = load_dataset(str(path))
    assert sizes(ds) == {"train": 9, "test": 1}
    assert ds.label_names == ["a", "b"]


def test_jsonl_multi_label_and_int_labels(tmp_path):
    rows = [{"body": f"d{i}", "tags": ["x", "y"] if i % 3 == 0 else ["y"]} for i in range(10)]
    path = write(tmp_path / "m.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    ds = load_dataset(str(path), text_columns=["body"], label_column="tags")
    assert ds.multi_label and ds.label_column == "labels" and ds.label_names == ["x", "y"]
    all_records = dict(records(ds) + records(ds, "test"))
    assert all_records["d0"] == ["x", "y"] and all_records["d1"] == ["y"]
    ints = write(tmp_path / "i.jsonl", "".join(json.dumps({"text": f"t{i}", "label": i % 2}) + "\n" for i in range(10)))
    assert load_dataset(str(ints)).label_names == ["0", "1"]


def test_parquet_through_datasets_with_class_label(tmp_path):
    features = datasets.Features({"review": datasets.Value("string"), "label": datasets.ClassLabel(names=["bad", "good"])})
    table = datasets.Dataset.from_dict({"review": [f"r{i}" for i in range(10)], "label": [i % 2 for i in range(10)]}, features=features)
    path = tmp_path / "d.parquet"
    table.to_parquet(str(path))
    ds = load_dataset(str(path))
    assert ds.label_names == ["bad", "good"]
    assert dict(records(ds) + records(ds, "test"))["r3"] == "good"


def test_fasttext_single_and_multi_label(tmp_path):
    single = write(tmp_path / "s.txt", "".join(f"__label__{'ab'[i % 2]} doc number {i}\n" for i in range(10)))
    ds = load_dataset(str(single))
    assert not ds.multi_label and dict(records(ds) + records(ds, "test"))["doc number 4"] == "a"
    multi = write(tmp_path / "m.ft", "__label__a __label__b both\n" + "".join(f"__label__a one {i}\n" for i in range(9)))
    ds = load_dataset(str(multi))
    assert ds.multi_label and dict(records(ds) + records(ds, "test"))["both"] == ["a", "b"]


def test_one_file_per_class_folder_suffix_rule_and_nel(tmp_path):
    folder = tmp_path / "polarity"
    write(folder / "rt.pos", b"good \x85 one\n" + b"".join(b"good %d\n" % i for i in range(9)))
    write(folder / "rt.neg", b"".join(b"bad %d\n" % i for i in range(10)))
    ds = load_dataset(str(folder), encoding="latin-1")
    assert ds.label_names == ["neg", "pos"] and sizes(ds) == {"train": 18, "test": 2}
    # NEL (0x85) is inside a line, not a line break.
    assert dict(records(ds) + records(ds, "test"))["good \x85 one"] == "pos"


def test_one_file_per_class_list_stem_rule(tmp_path):
    books = write(tmp_path / "books.txt", "".join(f"book {i}\n" for i in range(5)))
    music = write(tmp_path / "music.txt", "".join(f"song {i}\n" for i in range(5)))
    ds = load_dataset([str(books), str(music)], test_fraction=0.2)
    assert ds.label_names == ["books", "music"] and sizes(ds) == {"train": 8, "test": 2}


def test_folder_per_class(tmp_path):
    for label in ("spam", "ham"):
        for i in range(5):
            write(tmp_path / "mail" / label / f"{i}.txt", f"{label} message {i}\nsecond line")
    write(tmp_path / "mail" / "ham" / ".DS_Store", b"\x00\xff")
    ds = load_dataset(str(tmp_path / "mail"), test_fraction=0.2)
    assert ds.label_names == ["ham", "spam"] and sizes(ds) == {"train": 8, "test": 2}
    assert dict(records(ds) + records(ds, "test"))["spam message 3\nsecond line"] == "spam"


def test_folder_with_split_files(tmp_path):
    write(tmp_path / "d" / "train.csv", "text,label\n" + "".join(f"t{i},{'ab'[i % 2]}\n" for i in range(6)))
    write(tmp_path / "d" / "valid.csv", "text,label\nv,a\n")
    write(tmp_path / "d" / "test.csv", "text,label\nx,b\ny,a\n")
    ds = load_dataset(str(tmp_path / "d"))
    assert sizes(ds) == {"train": 6, "dev": 1, "test": 2}
    assert ds.split_notes["test"] == "official (d/test)"


def test_folder_with_split_subfolders_of_class_folders(tmp_path):
    for split, n in (("train", 4), ("test", 2)):
        for label in ("a", "b"):
            for i in range(n):
                write(tmp_path / "corpus" / split / label / f"{i}.txt", f"{split} {label} {i}")
    ds = load_dataset(str(tmp_path / "corpus"))
    assert sizes(ds) == {"train": 8, "test": 4}
    assert ("test b 1", "b") in records(ds, "test")


def test_relative_path_found_in_data_dir(tmp_path):
    write(tmp_path / "mine" / "x.jsonl", "".join(json.dumps({"text": f"t{i}", "label": "ab"[i % 2]}) + "\n" for i in range(10)))
    assert sizes(load_dataset("mine/x.jsonl", data_dir=tmp_path)) == {"train": 9, "test": 1}


# ---------------------------------------------------------------------------------------
# Bad input: one line naming the file and the line or record


def one_line(err) -> str:
    msg = str(err.value)
    assert "\n" not in msg
    return msg


def test_missing_file(tmp_path):
    with pytest.raises(DataError) as err:
        load_dataset(str(tmp_path / "nope.csv"))
    msg = one_line(err)
    assert "nope.csv" in msg and "TEXTCLS_DATA_DIR" in msg and "data directory" in msg


def test_empty_file(tmp_path):
    path = write(tmp_path / "e.csv", b"")
    with pytest.raises(DataError, match=r"e.csv: empty file"):
        load_dataset(str(path))
    blank = write(tmp_path / "b.jsonl", "\n\n")
    with pytest.raises(DataError, match=r"b.jsonl: no records found"):
        load_dataset(str(blank))


def test_wrong_column_name_lists_columns(tmp_path):
    path = write(tmp_path / "d.csv", "sentence,label\nhi,a\n")
    with pytest.raises(DataError) as err:
        load_dataset(str(path), text_columns=["txt"])
    assert one_line(err).endswith("d.csv: no column 'txt'; the columns are: sentence, label; pass text_columns= with one of them")
    jpath = write(tmp_path / "d.jsonl", '{"body": "x", "y": "a"}\n')
    with pytest.raises(DataError, match=r"d.jsonl:1: no field 'label'; the fields are: body, y"):
        load_dataset(str(jpath), text_columns=["body"], label_column="label")
    with pytest.raises(DataError, match=r"no text column found among: a, b"):
        load_dataset(str(write(tmp_path / "n.csv", "a,b\nlabel,x\n")), header=True)


def test_undecodable_bytes_name_line_and_suggest_latin1(tmp_path):
    path = write(tmp_path / "d.tsv", b"a\tfine\nb\tcaf\xe9\n")
    with pytest.raises(DataError) as err:
        load_dataset(str(path))
    msg = one_line(err)
    assert "d.tsv:2: byte(s) e9 at column 6 cannot be decoded as utf-8" in msg
    assert 'encoding="latin-1"' in msg and "--encoding latin-1" in msg
    ds = load_dataset(str(write(tmp_path / "ok.tsv", b"a\tcaf\xe9\nb\tx\n" * 5)), encoding="latin-1")
    assert "café" in list(ds["train"]["text"]) + list(ds["test"]["text"])


def test_empty_text_and_missing_label(tmp_path):
    with pytest.raises(DataError, match=r"e.csv:3: empty text; .*on_bad_record=\"skip\""):
        load_dataset(str(write(tmp_path / "e.csv", "text,label\nok,a\n   ,b\n")))
    with pytest.raises(DataError, match=r"l.csv:2: missing or empty label"):
        load_dataset(str(write(tmp_path / "l.csv", "text,label\nok,\n")))
    with pytest.raises(DataError, match=r"l.jsonl:1: missing or empty label"):
        load_dataset(str(write(tmp_path / "l.jsonl", '{"text": "x", "label": null}\n')))
    with pytest.raises(DataError, match=r"c.txt:2: empty text"):
        load_dataset([str(write(tmp_path / "c.txt", "one\n\nthree\n")), str(write(tmp_path / "d.txt", "x\n"))])


def test_skip_and_count_every_skippable_case(tmp_path):
    lines = [b"a\tgood one"] + [b"%s\tdoc %d" % (b"ab"[i % 2 : i % 2 + 1], i) for i in range(20)]
    lines += [b"b\t   ", b"\tno label", b"a\tbad \xff byte", b"onlyonefield"]
    path = write(tmp_path / "d.tsv", b"\n".join(lines) + b"\n")
    ds = load_dataset(str(path), on_bad_record="skip")
    assert len(ds["train"]) + len(ds["test"]) == 21
    assert [s.split("/")[-1] for s in ds.skipped] == [
        "d.tsv:22: empty text",
        "d.tsv:23: missing or empty label",
        "d.tsv:24: byte(s) ff at column 7 cannot be decoded as utf-8",
        "d.tsv:25: row has 1 field(s), 2 needed",
    ]
    with pytest.raises(DataError, match=r"d.tsv:22: empty text"):
        load_dataset(str(path))


def test_all_records_bad_is_an_error_even_when_skipping(tmp_path):
    path = write(tmp_path / "d.jsonl", '{"text": "", "label": "a"}\n{"text": " ", "label": "b"}\n')
    with pytest.raises(DataError, match=r"all 2 records were bad and skipped"):
        load_dataset(str(path), on_bad_record="skip")


def test_bad_json_line(tmp_path):
    path = write(tmp_path / "d.jsonl", '{"text": "a", "label": "x"}\n{"text": oops}\n')
    with pytest.raises(DataError, match=r"d.jsonl:2: not valid JSON"):
        load_dataset(str(path))


def test_fasttext_line_without_label(tmp_path):
    path = write(tmp_path / "d.ft", "__label__a fine\njust text\n")
    with pytest.raises(DataError, match=r"d.ft:2: no __label__ prefix"):
        load_dataset(str(path))


def test_unknown_format_and_bad_options(tmp_path):
    path = write(tmp_path / "d.xyz", "a,b\n")
    with pytest.raises(DataError, match=r"d.xyz: cannot tell the format from the name; pass format="):
        load_dataset(str(path))
    tsv = write(tmp_path / "e.xyz", "".join(f"t{i}\t{'ab'[i % 2]}\n" for i in range(10)))
    ds = load_dataset(str(tsv), format="tsv", text_columns=[0], label_column=1)
    assert sizes(ds) == {"train": 9, "test": 1} and ds.label_names == ["a", "b"]
    with pytest.raises(ConfigError, match="on_bad_record"):
        load_dataset(str(path), on_bad_record="ignore")
    with pytest.raises(ConfigError, match="test_fraction"):
        load_dataset(str(path), test_fraction=1.5)
    with pytest.raises(ConfigError, match="max_per_split"):
        load_dataset(str(path), max_per_split=0)
