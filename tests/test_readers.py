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



def test_plain_negative_integer_labels_are_classes_not_missing_labels(tmp_path):
    # The -1/0/1 sentiment coding in a plain int column (no ClassLabel) keeps its class -1, as the
    # same data reads from CSV; it used to be a "missing label" (skipped with on_bad_record="skip").
    texts = [f"text number {i} {'good' if i % 2 else 'bad'}" for i in range(60)]
    labels = [(-1, 0, 1)[i % 3] for i in range(60)]
    path = tmp_path / "sent.parquet"
    datasets.Dataset.from_dict({"text": texts, "label": labels}).to_parquet(str(path))
    ds = load_dataset(str(path))
    csv_file = write(tmp_path / "sent.csv", "text,label\n" + "".join(f"{t},{l}\n" for t, l in zip(texts, labels)))
    assert sorted(ds.label_names) == sorted(load_dataset(str(csv_file)).label_names) == ["-1", "0", "1"]
    assert Counter(label for _, label in records(ds) + records(ds, "test")) == {"-1": 20, "0": 20, "1": 20}
    assert load_dataset(str(path), on_bad_record="skip").skipped == []
    # A hub-style table read directly: -1 is a class too.
    from textcls.data.readers import RecordBuffer, read_table

    buffer = RecordBuffer()
    read_table(datasets.Dataset.from_dict({"text": ["a", "b"], "label": [-1, 1]}), buffer, where="hub")
    assert buffer.labels == ["-1", "1"]
    # A ClassLabel's -1 is still the hub's "no label": a missing label at its record.
    features = datasets.Features({"text": datasets.Value("string"), "label": datasets.ClassLabel(names=["neg", "pos"])})
    marked = tmp_path / "marked.parquet"
    datasets.Dataset.from_dict({"text": texts[:10], "label": [-1] + [i % 2 for i in range(9)]},
                               features=features).to_parquet(str(marked))
    assert refused(DataError, str(marked)).startswith(f"{marked}: record 0: missing or empty label")

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



def test_a_split_folder_refuses_record_files_named_after_no_split(tmp_path):
    # The reported case: testing.csv (the user's test set) and train_extra.csv were left out and a
    # test split carved from train instead, without a word.
    folder = tmp_path / "fold"
    body = "".join(f"text number {i},{'ab'[i % 2]}\n" for i in range(40))
    for name in ("train.csv", "testing.csv", "train_extra.csv"):
        write(folder / name, "text,label\n" + body)
    accepted = "train.*, dev.*, valid.*, validation.*, val.*, test.*"
    assert refused(DataError, str(folder)) == (
        f"{folder}: testing.csv, train_extra.csv hold records, but their names are no split's, so they would be "
        f"left out; a split folder reads only {accepted} (the name up to its first dot): rename each after its "
        "split, merge them into one of those, or move them out of the folder")
    (folder / "train_extra.csv").unlink()
    assert refused(DataError, str(folder)) == (
        f"{folder}: testing.csv holds records, but its name is no split's, so it would be left out; a split folder "
        f"reads only {accepted} (the name up to its first dot): rename it after its split, merge it into one of "
        "those, or move it out of the folder")
    (folder / "testing.csv").unlink()
    # Any record format counts, compressed or fastText lines in a .txt file.
    for name, data in (("holdout.jsonl.gz", gzip.compress(b'{"text": "x", "label": "a"}\n')),
                       ("eval.txt", b"__label__a some text\n")):
        write(folder / name, data)
        assert refused(DataError, str(folder)).startswith(f"{folder}: {name} holds records, but its name is no split's")
        (folder / name).unlink()
    # Files that are not records stay ignored; the test split is the user's own.
    write(folder / "test.csv", "text,label\n" + body)
    write(folder / "classes.txt", "a\nb\n")
    write(folder / "README.md", "# my data\n")
    write(folder / ".DS_Store", b"\x00\xff")
    ds = load_dataset(str(folder))
    assert sizes(ds) == {"train": 40, "test": 40} and ds.split_notes["test"] == "official (fold/test)"

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
    assert one_line(err).endswith("d.csv: no column 'txt'; the columns are: sentence, label; pass text_columns= (CLI: --text-column) with one of them")
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


# ---------------------------------------------------------------------------------------
# Broken quoting, unknown headers, label columns that are text


def refused(exc_type, *args, **kwargs) -> str:
    """The one-line message of the error ``load_dataset(*args, **kwargs)`` raises."""
    with pytest.raises(exc_type) as err:
        load_dataset(*args, **kwargs)
    return one_line(err)


def labelled_rows(n=40, text="doc {i}"):
    return [f"{text.format(i=i)},{'ab'[i % 2]}" for i in range(n)]


def test_csv_unterminated_quote_is_refused_where_the_field_opens(tmp_path):
    # The reported case: a quote opened on line 12 is closed by a quote inside a later
    # record, which used to glue 28 records into one labelled 'Texas ?"'.
    rows = labelled_rows()
    rows[10] = '"a story about Dallas, a'
    rows[38] = 'a story about "Texas ?",a'
    msg = refused(DataError, str(write(tmp_path / "q.csv", "text,label\n" + "\n".join(rows) + "\n")))
    assert msg.startswith(f"{tmp_path / 'q.csv'}:12: a quoted field opens on this line and runs on to line 40")
    assert 'write a quote mark as ""' in msg and "--format tsv --delimiter ','" in msg
    # The closing quote ends the field cleanly further down: the lines it swallowed read as records.
    rows = labelled_rows()
    rows[4], rows[8] = '"unterminated doc, with comma,a', 'text ends with a quote",b'
    msg = refused(DataError, str(write(tmp_path / "c.csv", "text,label\n" + "\n".join(rows) + "\n")))
    assert msg.startswith(f"{tmp_path / 'c.csv'}:6: a quoted field opens on this line and runs on to line 10, taking in 3")
    # Never closed: the rest of the file would be one field.
    rows = labelled_rows()
    rows[20] = '"never closed,a'
    msg = refused(DataError, str(write(tmp_path / "e.csv", "text,label\n" + "\n".join(rows) + "\n")))
    assert msg.startswith(f"{tmp_path / 'e.csv'}:22: a quoted field opens on this line and is never closed")
    # An open quote in the label column.
    rows = labelled_rows()
    rows[6], rows[11] = 'doc 6,"a', 'doc 11,b"'
    msg = refused(DataError, str(write(tmp_path / "l.csv", "text,label\n" + "\n".join(rows) + "\n")))
    assert msg.startswith(f"{tmp_path / 'l.csv'}:8: a quoted field opens on this line and runs on to line 13, so the record's label holds a line break")
    # A stray quote after a closed one, on one line.
    rows = labelled_rows()
    rows[3] = '"abc"def,a'
    msg = refused(DataError, str(write(tmp_path / "s.csv", "text,label\n" + "\n".join(rows) + "\n")))
    assert msg.startswith(f"{tmp_path / 's.csv'}:5: a quoted field is closed and followed by more text on this line")


def test_csv_legitimate_multiline_fields_and_literal_quotes_still_read(tmp_path):
    rows = labelled_rows()
    rows[3] = '"para one, with a comma\npara two\n\npara three, the end",a'
    rows[9] = '"she said ""hi""\nand left",b'
    ds = load_dataset(str(write(tmp_path / "m.csv", "text,label\n" + "\n".join(rows) + "\n")))
    texts = list(ds["train"]["text"]) + list(ds["test"]["text"])
    assert len(texts) == 40
    assert "para one, with a comma\npara two\n\npara three, the end" in texts and 'she said "hi"\nand left' in texts
    # The advice the quoting errors give: read quote marks as plain text.
    rows = labelled_rows()
    rows[5] = 'a 12" record,b'
    rows[7] = '"quoted" at the start,b'
    path = write(tmp_path / "p.csv", "text,label\n" + "\n".join(rows) + "\n")
    ds = load_dataset(str(path), format="tsv", delimiter=",")
    texts = list(ds["train"]["text"]) + list(ds["test"]["text"])
    assert len(texts) == 40 and '"quoted" at the start' in texts and 'a 12" record' in texts


def test_csv_row_with_more_fields_than_the_header(tmp_path):
    rows = labelled_rows()
    rows[5] = "hello, world,a"
    msg = refused(DataError, str(write(tmp_path / "d.csv", "text,label\n" + "\n".join(rows) + "\n")))
    assert f"{tmp_path / 'd.csv'}:7: row has 3 fields, the header has 2 (text, label); quote the field that holds a comma" in msg
    # A trailing delimiter is not a field.
    ds = load_dataset(str(write(tmp_path / "t.csv", "text,label\n" + "".join(r + ",\n" for r in labelled_rows()))))
    assert len(ds["train"]) + len(ds["test"]) == 40


def test_csv_unknown_header_names_are_not_read_as_a_record(tmp_path):
    # The reported case: columns swapped and the header read as a record (797 "classes").
    sentences = [f"this is sentence number {i} of the corpus,{'ab'[i % 2]}" for i in range(100)]
    path = write(tmp_path / "h.csv", "sentence_txt,klass\n" + "\n".join(sentences) + "\n")
    msg = refused(DataError, str(path))
    assert msg.startswith(f"{path}: the label column 0 (0-based; the file was read without a header) looks like text")
    assert "101 distinct values among 101 records" in msg
    assert "its first row (sentence_txt, klass) was read as a record" in msg
    assert "--header" in msg and "--text-column NAME --label-column NAME" in msg
    # Label first: the header's "label" is on no other row.
    swapped = write(tmp_path / "k.csv", "klass,sentence_txt\n" + "".join(f"{'ab'[i % 2]},doc number {i}\n" for i in range(30)))
    msg = refused(DataError, str(swapped))
    assert msg.startswith(f"{swapped}:1: the first row (klass, sentence_txt) looks like a header")
    assert "--header" in msg and "--no-header" in msg and "--text-column NAME --label-column NAME" in msg
    # Told the header and the columns, the file reads correctly.
    ds = load_dataset(str(path), header=True, text_columns=["sentence_txt"], label_column="klass")
    assert ds.label_names == ["a", "b"] and len(ds["train"]) + len(ds["test"]) == 100
    # Told only that there is a header: the columns it could not identify, and how to name them.
    msg = refused(DataError, str(path), header=True)
    assert msg.startswith(f"{path}: no text column found among: sentence_txt, klass (the header row)")
    assert "--text-column NAME" in msg and "--label-column NAME" in msg and "--no-header" in msg



def test_columns_given_by_index_refuse_a_header_row_read_as_a_record(tmp_path):
    # The reported case: pandas' to_csv writes a header; columns given by index read it as a record
    # of class "stars" without a word.
    body = "".join(f"text number {i} {'good' if i % 2 else 'bad'},{'pos' if i % 2 else 'neg'}\n" for i in range(40))
    path = write(tmp_path / "reviews.csv", "review,stars\n" + body)
    advice = ("columns given by index are read without a header, so pass header=True (CLI: --header) to skip that "
              "row, or header=False (CLI: --no-header) if it is a record")
    assert refused(DataError, str(path), text_columns=[0], label_column=1) == (
        f"{path}:1: the first row (review, stars) looks like a header, not a record: 'review' is a usual column "
        f"name and its label 'stars' is on no other row; {advice}")
    # Column names the reader knows, a label column alone, a small file: the same.
    known = write(tmp_path / "known.tsv", "label\ttext\n" + "".join(f"{'ab'[i % 2]}\tdoc {i}\n" for i in range(4)))
    assert refused(DataError, str(known), label_column=0).startswith(
        f"{known}:1: the first row (label, text) looks like a header, not a record: 'label' is a usual column name")
    # Unknown column names: the first row's label on no other row while the others repeat.
    odd = write(tmp_path / "odd.csv", "sentence_txt,klass\n" + body)
    assert refused(DataError, str(odd), text_columns=[0], label_column=1) == (
        f"{odd}:1: the first row (sentence_txt, klass) looks like a header, not a record: its label 'klass' is on "
        f"no other row, while the other labels repeat; {advice}")
    # As the message says: header=True skips the row, header=False reads it as a record.
    assert load_dataset(str(path), header=True, text_columns=[0], label_column=1).label_names == ["neg", "pos"]
    assert load_dataset(str(path), header=False, text_columns=[0], label_column=1).label_names == ["neg", "pos", "stars"]
    # A headerless label<TAB>text file by index still reads, its first record's class a class of one too.
    tsv = write(tmp_path / "plain.tsv", "odd\tthe only one of its kind\n" + "".join(
        f"{'ab'[i % 2]}\tdoc number {i}\n" for i in range(20)))
    assert load_dataset(str(tsv), label_column=0, text_columns=[1]).label_names == ["a", "b", "odd"]

def test_label_column_that_is_text_is_refused(tmp_path):
    rows = [f"this is a fairly long sentence number {i} here,{'ab'[i % 2]}" for i in range(30)]
    path = write(tmp_path / "d.csv", "text,label\n" + "\n".join(rows) + "\n")
    msg = refused(DataError, str(path), text_columns=["label"], label_column="text")
    assert msg.startswith(f"{path}: the label column 'text' looks like text, not class names: 30 distinct values among 30 records")
    assert "the header is: text, label" in msg and "--label-column NAME" in msg
    # Long "class names", longer than the texts (a few records, so not by distinct count).
    long = "".join(json.dumps({"text": "ab"[i % 2], "label": f"a whole review {i % 3} that went into the wrong field"}) + "\n" for i in range(9))
    jpath = write(tmp_path / "d.jsonl", long)
    msg = refused(DataError, str(jpath))
    assert msg.startswith(f"{jpath}: the label column 'label' looks like text, not class names: its values are")
    # Many classes that repeat are class names.
    ok = write(tmp_path / "ok.csv", "text,label\n" + "".join(f"doc {i},class{i % 25}\n" for i in range(100)))
    assert len(load_dataset(str(ok)).label_names) == 25


# ---------------------------------------------------------------------------------------
# Damaged, unreadable, binary and wrongly encoded files


def test_truncated_gzip_names_file_and_line(tmp_path):
    data = "".join(json.dumps({"text": f"doc {i}", "label": "ab"[i % 2]}) + "\n" for i in range(3000)).encode()
    packed = gzip.compress(data)
    path = write(tmp_path / "d.jsonl.gz", packed[: len(packed) // 2])
    msg = refused(DataError, str(path))
    assert msg.startswith(f"{path}:") and "the file is truncated or corrupt" in msg
    line = int(msg.split(":")[1])
    assert 1 < line < 3000 and f"after line {line - 1}" in msg
    csv_data = ("text,label\n" + "".join(f"doc {i},{'ab'[i % 2]}\n" for i in range(3000))).encode()
    packed = gzip.compress(csv_data)
    path = write(tmp_path / "d.csv.gz", packed[:-20])  # the trailer (CRC, size) cut
    msg = refused(DataError, str(path))
    assert msg.startswith(f"{path}:") and "truncated or corrupt" in msg
    # A .gz name on plain data; gzip data without the .gz name is read.
    msg = refused(DataError, str(write(tmp_path / "plain.csv.gz", csv_data)))
    assert "plain.csv.gz: is named .gz but is not gzip-compressed" in msg
    ds = load_dataset(str(write(tmp_path / "packed.csv", gzip.compress(csv_data))))
    assert len(ds["train"]) + len(ds["test"]) == 3000


def test_unreadable_file(tmp_path, monkeypatch):
    from textcls.data import readers

    path = write(tmp_path / "secret.csv", "text,label\n" + "\n".join(labelled_rows()) + "\n")
    real_open = open

    def guarded_open(file, *args, **kwargs):
        if str(file) == str(path):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    # Tests run as root, for whom chmod 000 blocks nothing: the reader's open() refuses instead.
    monkeypatch.setattr(readers, "open", guarded_open, raising=False)
    msg = refused(DataError, str(path))
    assert msg.startswith(f"{path}: cannot be read: permission denied") and "chmod u+r" in msg


def test_unknown_encoding_is_a_config_error(tmp_path):
    path = write(tmp_path / "d.csv", "text,label\n" + "\n".join(labelled_rows()) + "\n")
    for bad in ("no-such-enc", "base64"):
        msg = refused(ConfigError, str(path), encoding=bad)
        assert msg.startswith(f"parameter 'encoding' = {bad!r} is not a known text encoding")
        assert "utf-8" in msg and "latin-1" in msg and "utf-16" in msg


BODY = "text,label\n" + "".join(f"café {i},{'ab'[i % 2]}\n" for i in range(20))


@pytest.mark.parametrize("codec", ["utf-16", "utf-32", "utf-8-sig"])
def test_byte_order_mark_is_followed(tmp_path, codec):
    path = write(tmp_path / "d.csv", BODY.encode(codec))
    ds = load_dataset(str(path))
    texts = list(ds["train"]["text"]) + list(ds["test"]["text"])
    assert ds.label_names == ["a", "b"] and sorted(texts)[0] == "café 0" and len(texts) == 20
    # The explicit encoding works too (lines are split after decoding, not on byte 0A).
    explicit = load_dataset(str(path), encoding=codec.replace("-sig", ""))
    assert sorted(list(explicit["train"]["text"]) + list(explicit["test"]["text"])) == sorted(texts)


def test_utf16_in_other_formats_and_without_bom(tmp_path):
    jsonl = "".join(json.dumps({"text": f"naïve {i}", "label": "ab"[i % 2]}, ensure_ascii=False) + "\n" for i in range(10))
    assert load_dataset(str(write(tmp_path / "d.jsonl", jsonl.encode("utf-16")))).label_names == ["a", "b"]
    ft = write(tmp_path / "f.txt", "".join(f"__label__{'ab'[i % 2]} doc {i}\n" for i in range(10)).encode("utf-16"))
    assert load_dataset(str(ft)).label_names == ["a", "b"]
    # Without a mark: refused with the encoding the NUL bytes show, which then reads it.
    bare = write(tmp_path / "le.csv", BODY.encode("utf-16-le"))
    msg = refused(DataError, str(bare))
    assert msg == (f'{bare}: holds NUL bytes at a steady stride, so it is UTF-16-LE text without a byte-order mark; '
                   'pass encoding="utf-16-le" (CLI: --encoding utf-16-le)')
    assert len(load_dataset(str(bare), encoding="utf-16-le")["train"]) == 18
    # A marked file read with another encoding says which one it has (no latin-1 advice).
    msg = refused(DataError, str(write(tmp_path / "m.csv", BODY.encode("utf-16"))), encoding="latin-1")
    assert "m.csv: starts with a UTF-16-LE byte-order mark" in msg and 'encoding="utf-16"' in msg
    # An undecodable line in UTF-16 names its line.
    broken = BODY.encode("utf-16-le").replace("café 3".encode("utf-16-le"), b"\x00\xd8" + "x 3".encode("utf-16-le"))
    msg = refused(DataError, str(write(tmp_path / "b.csv", broken)), encoding="utf-16-le")
    assert "b.csv:5: byte(s)" in msg and "cannot be decoded as utf-16-le" in msg


NUL_ADVICE = "restore the file from a good copy, or remove the byte"
NUL_BYTE = ("a NUL byte (0x00) at character {}, which no text holds: the file is binary, a broken copy, or in another "
            "encoding ")


def _docs(n=10, nul_at=3, sep=" "):
    """(text, label) pairs "doc <i>", "ab" alternating; document ``nul_at`` has "doc<NUL><i>"."""
    return [(f"doc{chr(0) if i == nul_at else sep}{i}", "ab"[i % 2]) for i in range(n)]


def _class_folders(root):
    for i, (text, label) in enumerate(_docs()):
        write(root / label / f"{i}.txt", f"title\n{text}")
    return root


def _class_files(root):
    for label in "ab":
        write(root / f"{label}.txt", "".join(f"{t}\n" for t, l in _docs() if l == label))
    return root


@pytest.mark.parametrize("name, content, where, character", [
    ("d.csv", "text,label\n" + "".join(f"{t},{l}\n" for t, l in _docs()), "d.csv:5", 4),
    ("d.tsv", "text\tlabel\n" + "".join(f"d\u00e9{t[2:]}\t{l}\n" for t, l in _docs()), "d.tsv:5", 4),
    ("d.jsonl", "".join(json.dumps({"text": "x", "label": l})[:-1] + f', "note": "{t}"}}\n' for t, l in _docs()),
     "d.jsonl:4", 41),
    ("d.txt", "".join(f"__label__{l} {t}\n" for t, l in _docs()), "d.txt:4", 15),
    ("d.csv.gz", gzip.compress(("text,label\n" + "".join(f"{t},{l}\n" for t, l in _docs())).encode()), "d.csv.gz:5", 4),
    ("folders", _class_folders, "folders/b/3.txt:2", 4),
    ("files", _class_files, "files/b.txt:2", 4),
], ids=["csv", "tsv", "jsonl", "fasttext", "csv.gz", "class-folders", "class-files"])
def test_a_stray_nul_byte_is_refused_at_its_line(tmp_path, name, content, where, character):
    """Until stop 65 a NUL byte in a text file was read into the document's text (a JSON Lines
    line holding one outside its text field too); now the file and line are named."""
    path = content(tmp_path / name) if callable(content) else write(tmp_path / name, content)
    msg = refused(DataError, str(path))
    assert msg == (f"{tmp_path / where}: {NUL_BYTE.format(character)}(UTF-16, for one); {NUL_ADVICE}, "
                   'or pass on_bad_record="skip" (CLI: --on-bad-record skip) to skip and count it')
    skipped = load_dataset(str(path), on_bad_record="skip")
    assert skipped.skipped == [f"{tmp_path / where}: {NUL_BYTE.format(character)}(UTF-16, for one)"]
    assert not any("\x00" in t for split in skipped.splits.values() for t in split["text"])


def test_a_nul_in_utf16_text_and_utf16_without_a_mark(tmp_path):
    # Read as UTF-16 (its byte-order mark), a U+0000 is no byte of another encoding.
    marked = write(tmp_path / "m.csv", ("text,label\n" + "".join(f"{t},{l}\n" for t, l in _docs())).encode("utf-16"))
    assert refused(DataError, str(marked)).startswith(
        f"{marked}:5: a NUL character (U+0000) at character 4, which no text holds: the file is binary or a broken "
        "copy; restore the file from a good copy, or remove the character, or pass")
    # UTF-16 without a mark, too short for the whole-file sniff: named UTF-16 at its first line, not skippable.
    for codec in ("utf-16-le", "utf-16-be"):
        bare = write(tmp_path / f"{codec}.csv", "text,label\nx,a\n".encode(codec))
        for policy in ("error", "skip"):
            msg = refused(DataError, str(bare), on_bad_record=policy)
            assert msg.startswith(f"{bare}:1: NUL bytes (0x00) at a steady stride from character ")
            assert msg.endswith(f"so the file is {codec.upper()} text without a byte-order mark; "
                                f'pass encoding="{codec}" (CLI: --encoding {codec})')
    # A longer one keeps the whole-file message of the sniff, which names it the same way.
    longer = write(tmp_path / "long.csv", BODY.encode("utf-16-le"))
    assert refused(DataError, str(longer)).startswith(f"{longer}: holds NUL bytes at a steady stride, so it is "
                                                      "UTF-16-LE text without a byte-order mark")


NUL_CHARACTER = ("a NUL character (U+0000: a JSON \\u0000 escape, or a string holding it) at character {} of the {}, "
                 "which no text holds")


def _escaped_nul_jsonl(tmp_path, monkeypatch, field="text"):
    """JSON Lines whose line 4 writes a NUL as the escape \\u0000 in ``field``: no NUL byte in the file."""
    rows = [{"text": f"doc {i}", "label": "ab"[i % 2]} for i in range(10)]
    rows[3][field] = rows[3][field][:1] + "\x00" + rows[3][field][1:]
    path = write(tmp_path / f"{field}.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    assert b"\x00" not in path.read_bytes()
    return str(path), str(path)


def _nul_table(folder):
    folder.mkdir(parents=True, exist_ok=True)
    table = datasets.Dataset.from_dict({"text": [f"doc {i}" if i != 3 else "d\x00oc 3" for i in range(10)],
                                        "label": ["ab"[i % 2] for i in range(10)]})
    table.to_parquet(str(folder / "train-00000-of-00001.parquet"))
    return folder / "train-00000-of-00001.parquet"


def _nul_parquet(tmp_path, monkeypatch):
    path = _nul_table(tmp_path)
    return str(path), str(path)


def _nul_hub(tmp_path, monkeypatch):
    """A hub dataset the user names (hf:), offline: a record of it has no file to restore."""
    _nul_table(tmp_path / "hub" / "someone" / "nul" / "data")
    monkeypatch.setenv("TEXTCLS_HUB_DIR", str(tmp_path / "hub"))
    return "hf:someone/nul", "hf:someone/nul train"


@pytest.mark.parametrize("make, where, of", [
    (_escaped_nul_jsonl, ":4", "text"),
    (lambda tmp_path, monkeypatch: _escaped_nul_jsonl(tmp_path, monkeypatch, "label"), ":4", "label"),
    (_nul_parquet, ": record 3", "text"),
    (_nul_hub, ": record 3", "text"),
], ids=["jsonl-text", "jsonl-label", "parquet", "hub"])
def test_a_nul_character_from_an_escape_or_a_table_is_refused_at_its_record(tmp_path, monkeypatch, make, where, of):
    """Until stop 65 a JSON \\u0000 escape (or a parquet string holding U+0000) reached the
    training text, where a NUL byte in the same file was refused. Until its review the message
    called the file binary or a broken copy and said to restore it: untrue of an escape or a table's
    string (the file is sound), and a hub record has no file to restore."""
    source, named = make(tmp_path, monkeypatch)
    problem = NUL_CHARACTER.format(2, of)
    assert refused(DataError, source) == (
        f"{named}{where}: {problem}; remove it from the record, "
        'or pass on_bad_record="skip" (CLI: --on-bad-record skip) to skip and count it')
    skipped = load_dataset(source, on_bad_record="skip")
    assert skipped.skipped == [f"{named}{where}: {problem}"]
    assert sum(map(len, skipped.splits.values())) == 9
    assert not any("\x00" in t for split in skipped.splits.values() for t in split["text"])
    assert "\x00" not in "".join(skipped.label_names)


def test_the_nul_check_names_the_first_field_that_holds_one():
    """RecordBuffer.add scans a record whole and looks for the field only on a hit (every record of
    every load passes there): the field and character named are still the first ones."""
    from textcls.data.readers import RecordBuffer

    buffer = RecordBuffer("skip")
    assert not buffer.add("w:1", "clean", ["a", "bb\x00"])
    assert not buffer.add("w:2", "tex\x00t", ["a\x00"])
    assert not buffer.add("w:3", "text", "\x00b")
    assert buffer.add("w:4", "text", ["a", "b"]) and buffer.texts == ["text"]
    assert buffer.skipped == [f"w:1: {NUL_CHARACTER.format(3, 'label')}", f"w:2: {NUL_CHARACTER.format(4, 'text')}",
                              f"w:3: {NUL_CHARACTER.format(1, 'label')}"]


def test_a_nul_byte_exits_2_with_one_line(tmp_path, capsys):
    from textcls.cli import main

    path = write(tmp_path / "d.csv", "text,label\n" + "".join(f"{t},{l}\n" for t, l in _docs(40)))
    with pytest.raises(SystemExit) as exit_:
        main(["train", "--model", "tfidf-lr", "--data", str(path), "--no-progress", "--run-dir", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2 and "\n" not in err and "Traceback" not in err
    assert f"{path}:5: {NUL_BYTE.format(4)}" in err


def test_binary_and_misnamed_files(tmp_path):
    msg = refused(DataError, str(write(tmp_path / "b.csv", bytes(range(256)) * 8)))
    assert msg.startswith(f"{tmp_path / 'b.csv'}: holds NUL and other control bytes (")
    assert "the first NUL at byte 0), so it is a binary file, not text" in msg
    assert refused(DataError, str(write(tmp_path / "x.csv", b"BZh91AY&SY" + bytes(100)))).endswith(
        "x.csv: is a bzip2-compressed file, not text; decompress it first (textcls reads .gz files itself)")
    table = datasets.Dataset.from_dict({"text": ["x", "y"], "label": ["a", "b"]})
    table.to_parquet(str(tmp_path / "real.parquet"))
    misnamed = write(tmp_path / "p.csv", (tmp_path / "real.parquet").read_bytes())
    assert refused(DataError, str(misnamed)).startswith(f"{misnamed}: is a parquet file, not text")
    zipped = write(tmp_path / "z.csv", b"PK\x03\x04" + b"\x14" * 40)
    assert refused(DataError, str(zipped)).startswith(f"{zipped}: is a zip archive")
    msg = refused(DataError, str(write(tmp_path / "cr.csv", b"text,label\rdoc,a\rdoc2,b\r")))
    assert msg.startswith(f"{tmp_path / 'cr.csv'}:1: a carriage return") and "dos2unix" in msg


def test_corrupt_parquet(tmp_path):
    import os

    table = datasets.Dataset.from_dict({"text": [f"t{i}" for i in range(10)], "label": ["ab"[i % 2] for i in range(10)]})
    table.to_parquet(str(tmp_path / "good.parquet"))
    good = (tmp_path / "good.parquet").read_bytes()
    cut = write(tmp_path / "cut.parquet", good[: len(good) // 2])
    assert refused(DataError, str(cut)) == f"{cut}: the parquet file is truncated (it does not end with PAR1); write or copy it again"
    garbled = write(tmp_path / "garbled.parquet", b"PAR1" + os.urandom(200) + b"PAR1")
    assert refused(DataError, str(garbled)).startswith(f"{garbled}: the parquet file is corrupt (")
    text = write(tmp_path / "text.parquet", "text,label\n")
    assert refused(DataError, str(text)).startswith(f"{text}: is not a parquet file")


def test_folders_where_files_belong_and_other_layout_errors(tmp_path):
    folder = tmp_path / "adir"
    folder.mkdir()
    books = write(tmp_path / "books.txt", "b1\nb2\n")
    msg = refused(DataError, [str(books), str(folder)])
    assert msg == f"{folder}: is a folder, not a file; pass a file, or the folder as the data source"
    # A sub-folder inside a class folder would be left out silently.
    for label in ("spam", "ham"):
        write(tmp_path / "mail" / label / "1.txt", f"{label} one")
    write(tmp_path / "mail" / "ham" / "archive" / "2.txt", "old ham")
    msg = refused(DataError, str(tmp_path / "mail"))
    assert msg.startswith(f"{tmp_path / 'mail' / 'ham' / 'archive'}: a folder inside the class folder ham")
    # A binary document in a class folder is a bad record, named by its file.
    write(tmp_path / "mail" / "ham" / "archive" / "2.txt", "x").unlink()
    (tmp_path / "mail" / "ham" / "archive").rmdir()
    write(tmp_path / "mail" / "spam" / "img.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    msg = refused(DataError, str(tmp_path / "mail"))
    assert msg.startswith(f"{tmp_path / 'mail' / 'spam' / 'img.png'}: is a PNG image file, not text; check the path")


def test_jsonl_records_of_the_wrong_shape(tmp_path):
    path = write(tmp_path / "a.jsonl", '[1, 2]\n{"text": "x", "label": "a"}\n')
    assert refused(DataError, str(path)).startswith(f"{path}:1: a JSON array, not an object; write one JSON object a line")
    path = write(tmp_path / "m.jsonl", '{"text": "x", "label": "a"}\n{"body": "y", "label": "b"}\n')
    msg = refused(DataError, str(path))
    assert msg.startswith(f"{path}:2: no field 'text' in this record (its fields: body, label)")
    path = write(tmp_path / "n.jsonl", '{"text": "x", "label": "a"}\n{"text": {"en": "y"}, "label": "b"}\n')
    assert refused(DataError, str(path)).startswith(f"{path}:2: field 'text' holds a JSON object, not text")
    path = write(tmp_path / "l.jsonl", '{"text": "x", "label": "a"}\n{"text": "y", "label": {"name": "b"}}\n')
    assert refused(DataError, str(path)).startswith(f"{path}:2: field 'label' holds a JSON object that is not a class name")


def test_bad_delimiter_is_a_config_error(tmp_path):
    path = write(tmp_path / "d.csv", "text;label\n" + "".join(f"doc {i};{'ab'[i % 2]}\n" for i in range(10)))
    msg = refused(ConfigError, str(path), delimiter=";;")
    assert msg.startswith("parameter 'delimiter' = ';;' is not one character")
    assert load_dataset(str(path), delimiter=";").label_names == ["a", "b"]
    tsv = write(tmp_path / "t.csv", "".join(f"doc {i}\t{'ab'[i % 2]}\n" for i in range(10)))
    assert load_dataset(str(tsv), delimiter="\\t", text_columns=[0], label_column=1).label_names == ["a", "b"]


def test_column_index_beyond_the_first_row(tmp_path):
    path = write(tmp_path / "d.tsv", "".join(f"{'ab'[i % 2]}\tdoc {i}\n" for i in range(10)))
    msg = refused(DataError, str(path), header=False, label_column=0, text_columns=[5])
    assert msg == (f"{path}:1: text_columns index 5 is out of range: the first row has 2 field(s) (indices 0-1); "
                   "pass an index below 2, or check delimiter= (CLI: --delimiter)")


def test_iter_text_column_reads_the_texts_of_a_file_to_predict(tmp_path):
    """The texts of a CSV/TSV file with a header row and no label (what `textcls predict --input f.csv`
    reads): its text column(s) joined as read_delimited joins them, each at its first line; a bad
    record is an error at its line that gives no advice to skip it (each record gets a prediction)."""
    from textcls.data.readers import iter_text_column

    path = write(tmp_path / "p.csv", 'id,title,body\n1,A film,"moving\nand long"\n\n2,,dull\n')
    assert list(iter_text_column(path, text_columns=("title", "body"))) == [(2, "A film moving\nand long", None), (5, "dull", None)]
    tsv = write(tmp_path / "p.tsv", 'text\tlabel\n"quoted" as is\t\n')
    assert list(iter_text_column(tsv, fmt="tsv")) == [(2, '"quoted" as is', None)]
    with pytest.raises(DataError) as err:
        list(iter_text_column(write(tmp_path / "wide.csv", "text\na,b\n")))
    assert str(err.value) == (f"{tmp_path / 'wide.csv'}:2: row has 2 fields, the header has 1 (text); quote the "
                              "field that holds a comma or fix the row")
    with pytest.raises(DataError) as err:
        list(iter_text_column(write(tmp_path / "bad.csv", b"text\ncaf\xe9\n")))
    assert str(err.value).startswith(f"{tmp_path / 'bad.csv'}:2: ") and "on_bad_record" not in str(err.value)
    with pytest.raises(DataError, match=r"no column 'text' in the header row \('body'\)"):
        list(iter_text_column(write(tmp_path / "nocol.csv", "body\nx\n")))


@pytest.mark.parametrize("cell", ['"[""acq"", ""crude""]"', "\"['acq', 'crude']\"", '"[""earn""]"'])
def test_a_csv_label_holding_a_list_is_refused_at_its_line(tmp_path, cell):
    """A list column written by pandas' to_csv (JSON or Python's repr of each list) would make every
    combination of classes a class of its own ('["acq", "crude"]'); it is a bad record instead."""
    lines = ["text,labels", *[f"doc {i},{'ab'[i % 2]}" for i in range(10)], f"oil and grain,{cell}"]
    path = write(tmp_path / "l.csv", "\n".join(lines) + "\n")
    msg = refused(DataError, str(path))
    assert msg.startswith(f"{path}:12: the label ") and "looks like a list of labels" in msg
    assert 'multi-label data needs JSON Lines (a "labels" list) or fastText format' in msg
    ds = load_dataset(str(path), on_bad_record="skip")
    assert ds.label_names == ["a", "b"] and len(ds.skipped) == 1
    # A class name in brackets that is no list stays a class name.
    brackets = write(tmp_path / "b.csv", "text,label\n" + "".join(f"doc {i},[{'ab'[i % 2]}]\n" for i in range(10)))
    assert load_dataset(str(brackets)).label_names == ["[a]", "[b]"]


def test_a_class_named_twice_in_a_multi_label_record_is_refused(tmp_path):
    """["earn", "earn"] was merged into ["earn"] silently: a typo or a bad join hidden."""
    rows = [{"text": f"doc {i}", "labels": ["earn"] if i % 2 else ["crude", "grain"]} for i in range(10)]
    rows.insert(3, {"text": "earnings up", "labels": ["earn", "grain", "earn"]})
    path = write(tmp_path / "m.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    assert refused(DataError, str(path)) == (f"{path}:4: the label list names 'earn' twice; name each class once, "
                                             'or pass on_bad_record="skip" (CLI: --on-bad-record skip) to skip and '
                                             "count it")
    ds = load_dataset(str(path), on_bad_record="skip")
    assert len(ds["train"]) + len(ds["test"]) == 10 and ds.skipped == [f"{path}:4: the label list names 'earn' twice"]
    ft = write(tmp_path / "m.ft", "".join(f"__label__{'ab'[i % 2]} doc {i}\n" for i in range(10)) + "__label__a __label__a x\n")
    assert refused(DataError, str(ft)).startswith(f"{ft}:11: the label list names 'a' twice")


def task_rows(n=12, tasks=("books", "dvd")):
    return [{"text": f"doc {i}", "label": "ab"[i % 2], "task": tasks[(i // 2) % len(tasks)]} for i in range(n)]


def test_a_task_field_or_column_makes_multi_task_data(tmp_path):
    """A JSON line's "task" field and a CSV/TSV "task" column are read as fdu_mtl's loader gives its
    domains: a "task" column of every split and task_names, so per-task heads train on user data."""
    rows = task_rows(tasks=("dvd", "books", "kitchen"))
    jsonl = write(tmp_path / "t.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    csv_file = write(tmp_path / "t.csv", "text,label,Task\n" + "".join(f"{r['text']},{r['label']}, {r['task']}\n" for r in rows))
    tsv = write(tmp_path / "t.tsv", "task\ttext\tlabel\n" + "".join(f"{r['task']}\t{r['text']}\t{r['label']}\n" for r in rows))
    parquet = tmp_path / "t.parquet"
    datasets.Dataset.from_list(rows).to_parquet(str(parquet))
    for path in (jsonl, csv_file, tsv, parquet):
        ds = load_dataset(str(path), test_fraction=0.25)
        assert ds.task_names == ["books", "dvd", "kitchen"], path
        got = {t: (task, label) for split in ("train", "test")
               for t, label, task in zip(ds[split]["text"], ds[split]["label"], ds[split]["task"])}
        assert got == {r["text"]: (r["task"], r["label"]) for r in rows}, path
        assert ds.task_ids("test") == [ds.task_names.index(t) for t in ds["test"]["task"]]
    # A task name is trimmed in every format, as a class name is: "books " is not a second task.
    spaced = [dict(r, task=f" {r['task']} ") for r in rows]
    spaced_jsonl = write(tmp_path / "s.jsonl", "".join(json.dumps(r) + "\n" for r in spaced))
    spaced_parquet = tmp_path / "s.parquet"
    datasets.Dataset.from_list(spaced).to_parquet(str(spaced_parquet))
    for path in (spaced_jsonl, spaced_parquet):
        assert load_dataset(str(path), test_fraction=0.25).task_names == ["books", "dvd", "kitchen"], path
    # A file without one stays single-task, and a "task" column named as the label is the label.
    assert load_dataset(str(write(tmp_path / "p.csv", "text,label\n" + "".join(f"d{i},{'ab'[i % 2]}\n" for i in range(9))))).task_names is None
    assert load_dataset(str(tsv), label_column="task", text_columns=["text"]).task_names is None


def test_every_record_of_a_multi_task_file_needs_its_task(tmp_path):
    rows = task_rows()
    lines = [json.dumps(r) for r in rows]
    lines[4] = json.dumps({"text": "no task", "label": "a"})
    path = write(tmp_path / "m.jsonl", "\n".join(lines) + "\n")
    assert refused(DataError, str(path)).startswith(f"{path}:5: missing or empty task; give the record its task")
    ds = load_dataset(str(path), on_bad_record="skip")
    assert ds.skipped == [f"{path}:5: missing or empty task"] and len(ds["train"]) + len(ds["test"]) == 11
    lines[4] = json.dumps({"text": "empty", "label": "a", "task": " "})
    assert refused(DataError, str(write(path, "\n".join(lines) + "\n"))).startswith(f"{path}:5: missing or empty task")
    lines[4] = json.dumps({"text": "number", "label": "a", "task": 3})
    assert refused(DataError, str(write(path, "\n".join(lines) + "\n"))).startswith(f"{path}:5: the task is int")
    # The first record names no task, a later one does: neither dropped nor guessed.
    later = write(tmp_path / "l.jsonl", '{"text": "x", "label": "a"}\n' + "".join(json.dumps(r) + "\n" for r in rows))
    assert refused(DataError, str(later)).startswith(f"{later}:2: this record has a 'task' field but the first "
                                                     f"record ({later}:1) has none; give every record its task, or none")
    blank = write(tmp_path / "b.csv", "text,label,task\n" + "".join(f"d{i},{'ab'[i % 2]},t\n" for i in range(9)) + "d9,b,\n")
    assert refused(DataError, str(blank)).startswith(f"{blank}:11: missing or empty task")
    short = write(tmp_path / "s.tsv", "text\tlabel\ttask\n" + "".join(f"d{i}\t{'ab'[i % 2]}\tt\n" for i in range(9)) + "d9\tb\n")
    assert refused(DataError, str(short)).startswith(f"{short}:11: missing or empty task")


def test_a_held_out_record_of_a_task_train_lacks_is_refused_at_its_record(tmp_path):
    train = task_rows(tasks=("books", "dvd"))
    test = task_rows(4, tasks=("books",)) + [{"text": "new", "label": "a", "task": "garden"}]
    folder = tmp_path / "d"
    write(folder / "train.jsonl", "".join(json.dumps(r) + "\n" for r in train))
    write(folder / "test.jsonl", "".join(json.dumps(r) + "\n" for r in test))
    msg = refused(DataError, str(folder))
    assert msg.startswith(f"{folder / 'test.jsonl'}:5: task 'garden' is not one of the train split's tasks (books, dvd)")
    ds = load_dataset(str(folder), on_bad_record="skip")
    assert ds.task_names == ["books", "dvd"] and ds["test"]["task"] == ["books"] * 4 and len(ds.skipped) == 1
    # A split that names no tasks beside one that does.
    write(folder / "test.jsonl", "".join(json.dumps({"text": r["text"], "label": r["label"]}) + "\n" for r in test))
    assert refused(DataError, str(folder)).startswith(f"{folder / 'test.jsonl'}:1: the test records have no 'task', "
                                                      "but the train records name their task")


# ---------------------------------------------------------------------------------------
# task_column: which field or column names a record's task, or none


def meta_rows(n=40):
    """Single-task records, some of them with a "task" field that is metadata, not a task."""
    return [{"text": f"doc {i}", "label": "ab"[i % 2], **({"task": "meta"} if i % 7 == 0 else {})} for i in range(n)]


def write_parquet(path, columns: dict):
    datasets.Dataset.from_dict(columns).to_parquet(str(path))
    return path


def test_task_column_none_reads_a_task_field_or_column_as_data(tmp_path):
    """A "task" field that is metadata made the file multi-task, and its records without one (or
    with a number) bad records: the only advice offered dropped them."""
    rows = meta_rows()
    jsonl = write(tmp_path / "m.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    numbers = write(tmp_path / "n.jsonl", "".join(json.dumps({**r, "task": i}) + "\n" for i, r in enumerate(rows)))
    csv_file = write(tmp_path / "m.csv", "text,label,task\n" + "".join(f"{r['text']},{r['label']},{r.get('task', '')}\n"
                                                                       for r in rows))
    parquet = write_parquet(tmp_path / "m.parquet", {"text": [r["text"] for r in rows], "label": [r["label"] for r in rows],
                                                      "task": [r.get("task") for r in rows]})
    for path in (jsonl, numbers, csv_file, parquet):
        with pytest.raises(DataError):
            load_dataset(str(path))  # read as tasks, as before
        ds = load_dataset(str(path), task_column=None)
        assert ds.task_names is None and ds.skipped == [], path
        assert all("task" not in ds[split].column_names for split in ds.splits), path
        kept = records(ds) + records(ds, "test")
        assert sorted(kept) == sorted((r["text"], r["label"]) for r in rows), path  # every record, once


def test_a_named_task_column_reads_the_tasks_from_that_field_or_column(tmp_path):
    rows = task_rows(tasks=("dvd", "books"))
    # A "task" field or column beside it is data: here it would make every record a task of its own.
    jsonl = write(tmp_path / "d.jsonl", "".join(json.dumps({"text": r["text"], "label": r["label"], "domain": r["task"],
                                                            "task": f"id{i}"}) + "\n" for i, r in enumerate(rows)))
    csv_file = write(tmp_path / "d.csv", "text,label,task,domain\n" + "".join(
        f"{r['text']},{r['label']},id{i},{r['task']}\n" for i, r in enumerate(rows)))
    parquet = write_parquet(tmp_path / "d.parquet", {"text": [r["text"] for r in rows],
                                                      "label": [r["label"] for r in rows],
                                                      "domain": [r["task"] for r in rows],
                                                      "task": [f"id{i}" for i in range(len(rows))]})
    for path in (jsonl, csv_file, parquet):
        ds = load_dataset(str(path), task_column="domain", test_fraction=0.25)
        assert ds.task_names == ["books", "dvd"], path
        got = {t: task for split in ("train", "test") for t, task in zip(ds[split]["text"], ds[split]["task"])}
        assert got == {r["text"]: r["task"] for r in rows}, path
    # A named column is found as it is spelt (as a label column is), not in any case.
    upper = write(tmp_path / "u.csv", "text,label,Domain\n" + "".join(f"{r['text']},{r['label']},{r['task']}\n"
                                                                       for r in rows))
    assert "no column 'domain' (did you mean 'Domain'? a named column is matched exactly); the columns are: text, " \
        "label, Domain" in refused(DataError, str(upper), task_column="domain")
    # The default "task" is found in any case; a named one (TASK for a Task header) exactly, with the hint.
    tsv = write(tmp_path / "t.tsv", "text\tlabel\tTask\n" + "".join(f"{r['text']}\t{r['label']}\t{r['task']}\n"
                                                                   for r in rows))
    assert load_dataset(str(tsv)).task_names == load_dataset(str(tsv), task_column="Task").task_names == ["books", "dvd"]
    assert f"{tsv}: no column 'TASK' (did you mean 'Task'? a named column is matched exactly)" in refused(
        DataError, str(tsv), task_column="TASK")


def test_a_named_task_column_the_data_lacks_or_reads_otherwise_is_refused(tmp_path):
    rows = task_rows()
    jsonl = write(tmp_path / "t.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    csv_file = write(tmp_path / "t.csv", "text,label\n" + "".join(f"{r['text']},{r['label']}\n" for r in rows))
    parquet = write_parquet(tmp_path / "t.parquet", {"text": [r["text"] for r in rows], "label": [r["label"] for r in rows]})
    advice = ("pass task_column= (CLI: --task-column NAME) naming the {} of each record's task, or task_column=None "
              "(CLI: --no-task-column) to read no task")
    assert refused(DataError, str(jsonl), task_column="domain") == (
        f"the first record ({jsonl}:1) has no field 'domain', and it decides the file's fields; its fields are: "
        "text, label, task; " + advice.format("field"))
    assert refused(DataError, str(csv_file), task_column="domain") == (
        f"{csv_file}: no column 'domain'; the columns are: text, label; " + advice.format("column"))
    assert refused(DataError, str(parquet), task_column="domain") == (
        f"{parquet}: no column 'domain'; the columns are: text, label; " + advice.format("column"))
    # The task column named as the label or a text column: refused before any file is read.
    assert refused(ConfigError, str(jsonl), label_column="label", task_column="label") == (
        "column 'label' is given as both the task and the label column; name the task column apart, or pass "
        "task_column=None (CLI: --no-task-column) to read no task")
    assert refused(ConfigError, "/no/such.csv", text_columns=["text"], task_column="text").startswith(
        "column 'text' is given as both the task and a text column")
    # ... or as the label or text the reader picked by itself.
    picked = " (picked automatically: pass {0}= (CLI: --{1} NAME) for another), so it cannot be the task {2} too"
    assert refused(DataError, str(jsonl), task_column="label").startswith(
        f"{jsonl}:1: field 'label' is read as the label" + picked.format("label_column", "label-column", "field"))
    assert refused(DataError, str(csv_file), task_column="text").startswith(
        f"{csv_file}: column 'text' is read as a text" + picked.format("text_columns", "text-column", "column"))
    assert refused(DataError, str(csv_file), text_columns=["text"], task_column="label").startswith(
        f"{csv_file}: column 'label' is read as the label" + picked.format("label_column", "label-column", "column"))
    assert refused(DataError, str(parquet), task_column="text").startswith(
        f"{parquet}: column 'text' is read as a text or the label, so it cannot be the task column too")
    # A named column needs a header; a format without tasks does not take one; a task column is a name.
    assert refused(DataError, str(csv_file), header=False, task_column="domain") == (
        f"{csv_file}: task_column='domain' but header=False; a task column is found by its header name, so the file "
        "needs a header row: pass header=True (CLI: --header), or task_column=None (CLI: --no-task-column) to read "
        "no task")
    # ... which is also what a column index (a header-less file's way to name a column) is told.
    assert refused(DataError, str(csv_file), header=False, text_columns=[0], label_column=1,
                   task_column="2").startswith(f"{csv_file}: task_column='2' but header=False; a task column is found "
                                               "by its header name")
    ft = write(tmp_path / "t.ft", "".join(f"__label__{r['label']} {r['text']}\n" for r in rows))
    assert refused(ConfigError, str(ft), task_column="domain") == (
        f"{ft}: the option task_column= (CLI: --task-column) does not apply to a fasttext file; leave it out")
    assert load_dataset(str(ft), task_column=None).task_names is None  # reading no task asks for nothing it lacks
    for bad in (3, "", ["domain"]):
        assert refused(ConfigError, str(jsonl), task_column=bad).startswith(f"parameter 'task_column' = {bad!r}: a task "
                                                                            "column is a name (str), or None")


def test_a_catalogue_dataset_refuses_task_column():
    """Its loader names its tasks (fdu_mtl's domains): a task_column would be ignored."""
    for value in (None, "domain"):
        assert refused(ConfigError, "trec", task_column=value) == (
            "parameter 'task_column' (CLI: --task-column NAME / --no-task-column) applies to local files, not to "
            "'trec'; leave it out for this source")


def test_every_refusal_about_a_records_task_advises_task_column_none(tmp_path):
    """The advice was only to fix or skip (drop) the record, where the field may be no task at all."""
    opt_out = "if '{}' is not a task, pass task_column=None (CLI: --no-task-column) to read it as no task"
    skip = ', or pass on_bad_record="skip" (CLI: --on-bad-record skip) to skip and count it'
    rows = task_rows()
    lines = [json.dumps(r) for r in rows]
    lines[4] = json.dumps({"text": "no task", "label": "a"})
    path = write(tmp_path / "t.jsonl", "\n".join(lines) + "\n")
    assert refused(DataError, str(path)) == (
        f"{path}:5: missing or empty task; give the record its task (the file names a task for its records: each "
        f"trains its own head) or remove the record; {opt_out.format('task')}{skip}")
    lines[4] = json.dumps({"text": "number", "label": "a", "domain": 7})
    renamed = write(tmp_path / "r.jsonl", "\n".join(json.dumps({"text": r["text"], "label": r["label"],
                                                                 "domain": r["task"]}) for r in rows[:4])
                    + "\n" + lines[4] + "\n")
    assert refused(DataError, str(renamed), task_column="domain") == (
        f"{renamed}:5: the task is int (7), not a task name; write the task's name as a string; "
        f"{opt_out.format('domain')}{skip}")
    later = write(tmp_path / "l.jsonl", json.dumps({"text": "a", "label": "a"}) + "\n" + json.dumps(rows[1]) + "\n")
    assert refused(DataError, str(later)) == (
        f"{later}:2: this record has a 'task' field but the first record ({later}:1) has none; give every record "
        f"its task, or none; {opt_out.format('task')}{skip}")
    folder = tmp_path / "split"
    write(folder / "train.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    write(folder / "test.jsonl", json.dumps({"text": "new", "label": "a", "task": "garden"}) + "\n")
    assert refused(DataError, str(folder)) == (
        f"{folder / 'test.jsonl'}:1: task 'garden' is not one of the train split's tasks (books, dvd); train has no "
        f"head for it: add its records to train, or remove the record; {opt_out.format('task')}{skip}")
    write(folder / "test.jsonl", json.dumps({"text": "new", "label": "a"}) + "\n")
    assert refused(DataError, str(folder)) == (
        f"{folder / 'test.jsonl'}:1: the test records have no 'task', but the train records name their task; give "
        f"every record its task, or none; {opt_out.format('task')}")
    # With the opt-out taken, every one of these files reads, single-task, every record kept.
    for source in (path, later, folder):
        ds = load_dataset(str(source), task_column=None)
        assert ds.task_names is None and ds.skipped == []


def test_the_first_json_record_without_a_named_task_field_is_fatal_and_says_it_decides(tmp_path):
    """The first record decides the file's fields (as for the label): its gap is no skippable bad
    record, and the message says why, where a later record's gap is one."""
    rows = [{"text": f"doc {i}", "label": "ab"[i % 2], "domain": "xy"[i % 2]} for i in range(20)]
    gap1 = write(tmp_path / "gap1.jsonl", "".join(json.dumps({k: v for k, v in r.items() if i or k != "domain"}) + "\n"
                                                  for i, r in enumerate(rows)))
    assert refused(DataError, str(gap1), task_column="domain", on_bad_record="skip").startswith(
        f"the first record ({gap1}:1) has no field 'domain', and it decides the file's fields; its fields are: text, "
        "label; ")
    gap2 = write(tmp_path / "gap2.jsonl", "".join(json.dumps({k: v for k, v in r.items() if i != 1 or k != "domain"})
                                                  + "\n" for i, r in enumerate(rows)))
    ds = load_dataset(str(gap2), task_column="domain", on_bad_record="skip")
    assert len(ds.skipped) == 1 and ds.skipped[0].startswith(f"{gap2}:2: ")


def test_a_dataset_read_with_a_task_column_other_than_the_default_says_so(tmp_path):
    """What a run trained on it saves (config.json "task_column"): the default is left out."""
    rows = [{"text": f"doc {i}", "label": "ab"[i % 2], "domain": "xy"[i % 2], "task": "meta"} for i in range(20)]
    path = write(tmp_path / "d.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    assert load_dataset(str(path), task_column="domain").task_column == "domain"
    assert load_dataset(str(path), task_column=None).task_column is None
    assert load_dataset(str(path)).task_column == "task"


def test_the_cli_default_task_column_is_the_readers():
    """cli.py spells the default out (it must not import the reader, which imports datasets)."""
    from textcls.cli import DEFAULT_TASK_COLUMN
    from textcls.data.readers import TASK_FIELD, ReadOptions

    from textcls.artifacts import DEFAULT_TASK_COLUMN as SAVED_DEFAULT
    from textcls.data.records import TextDataset

    default = TextDataset.__dataclass_fields__["task_column"].default
    assert DEFAULT_TASK_COLUMN == TASK_FIELD == ReadOptions().task_column == SAVED_DEFAULT == default


def test_predicts_csv_reader_finds_the_default_task_column_in_any_case(tmp_path):
    """predict --input f.csv without --task-column missed a 'Task' column (exact case): every row
    was scored by --task's head, or refused for lacking the column it had; evaluate read it."""
    from textcls.data.readers import iter_text_column

    path = tmp_path / "cap.csv"
    path.write_text("text,Task\ngreat book loved it,books\nterrible dvd,dvd\n")
    for required in (True, False):
        rows = list(iter_text_column(path, fmt="csv", text_columns=("text",), delimiter=None, encoding="utf-8",
                                     task_column="task", task_column_required=required))
        assert [task for _, _, task in rows] == ["books", "dvd"]
    # A named column not required (the run's own) is still read only where the header has it exactly.
    rows = list(iter_text_column(path, fmt="csv", text_columns=("text",), delimiter=None, encoding="utf-8",
                                 task_column="domain", task_column_required=False))
    assert [task for _, _, task in rows] == [None, None]
