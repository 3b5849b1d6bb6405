"""``textcls predict RUN --input FILE|-``: read, predicted and written in blocks; tasks and thresholds.

The blocks are made tiny here (``PREDICT_BLOCK_BYTES``), so that every rule that crosses a
block boundary (line numbers in errors, a CRLF cut in two, a last line without a newline) is
exercised on a few lines of real TREC questions.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from tolerance import KERNEL

from textcls import cli
from textcls.predictor import Predictor

RUN = Path(__file__).resolve().parent / "fixtures" / "runs" / "v2" / "fasttext-bag"
EXPECTED = json.loads((RUN.parent / "expected.json").read_text())["fasttext-bag"]


def _predict(capsys, monkeypatch, *args, stdin: bytes | None = None, block: int = 16):
    monkeypatch.setattr(cli, "PREDICT_BLOCK_BYTES", block)
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
    code = cli._run(["predict", str(RUN), *args])
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines()], err


def test_stdin_in_small_blocks_gives_every_line_in_order(capsys, monkeypatch):
    texts = EXPECTED["texts"]
    data = ("\r\n".join(texts[:5]) + "\r\n" + "\n".join(texts[5:]) + "\rlast line, no newline").encode()
    code, rows, err = _predict(capsys, monkeypatch, "--input", "-", stdin=data, block=7)
    assert code == 0, err
    assert [r["text"] for r in rows] == texts + ["last line, no newline"]
    assert [r["label"] for r in rows[:len(texts)]] == EXPECTED["labels"]
    whole = Predictor.load(RUN).predict_proba(texts)
    got = np.array([[r["probabilities"][n] for n in sorted(r["probabilities"])] for r in rows[:len(texts)]])
    np.testing.assert_allclose(got, whole, **KERNEL)  # the output rounds to 6 decimals (5e-7 at most)


def test_a_bad_line_is_named_by_its_number_in_the_whole_input(capsys, monkeypatch, tmp_path):
    path = tmp_path / "texts.txt"
    path.write_bytes(b"Who wrote Hamlet ?\r\nWhat is an atom ?\nWhen did Idaho become a state ?\n\nWhy ?\n")
    code, rows, err = _predict(capsys, monkeypatch, "--input", str(path), block=10)
    assert code == 2 and f"{path}:4: blank line" in err
    assert rows == []  # a file is checked whole before the first prediction is written
    path.write_bytes(b"Who wrote Hamlet ?\nWhat is an atom ?\ncaf\xe9 ?\n")
    code, rows, err = _predict(capsys, monkeypatch, "--file", str(path), block=10)
    assert code == 2 and f"{path}:3: byte 0xe9" in err and rows == []
    # Stdin cannot be read twice: the lines before the bad one are written, each a whole record.
    code, rows, err = _predict(capsys, monkeypatch, "--input", "-", stdin=path.read_bytes(), block=10)
    assert code == 2 and "stdin:3: byte 0xe9" in err
    assert [r["text"] for r in rows] == ["Who wrote Hamlet ?", "What is an atom ?"]


@pytest.mark.parametrize("encoding", ["latin-1", "utf-16"])
@pytest.mark.parametrize("name", ["texts.txt", "texts.jsonl", "-"])
def test_encoding_reads_text_and_json_lines_in_any_encoding(capsys, monkeypatch, tmp_path, encoding, name):
    """--encoding was refused for text and JSON Lines ('applies to csv, tsv input ... or pass --format
    csv', which reads a text a line as a table); a Latin-1 file was refused as not UTF-8."""
    texts = EXPECTED["texts"][:6] + ["Où est le café ?"]
    lines = texts if name.endswith(".txt") or name == "-" else [json.dumps({"text": t}) for t in texts]
    data = ("\n".join(lines) + "\n").encode(encoding)
    args = ("--input", "-") if name == "-" else ("--input", str(tmp_path / name))
    if name != "-":
        (tmp_path / name).write_bytes(data)
    code, rows, err = _predict(capsys, monkeypatch, *args, "--encoding", encoding, block=9,
                               stdin=data if name == "-" else None)
    assert code == 0, err
    assert [r["text"] for r in rows] == texts
    assert [r["label"] for r in rows[:6]] == EXPECTED["labels"][:6]
    # A byte the encoding has no character for, and a file cut inside a character, at their lines.
    where = "stdin" if name == "-" else str(tmp_path / name)
    bad = {"latin-1": ("cp1252", b"\x81", "0x81 at column 8 is not cp1252"),
           "utf-16": ("utf-16-le", "\udc00".encode("utf-16-le", "surrogatepass"), "0x00 at column 8 is not utf-16-le")}
    codec, byte, problem = bad[encoding]
    broken = ("\n".join(lines[:2]) + "\n").encode(codec) + lines[2][:7].encode(codec) + byte + "!\n".encode(codec)
    if name != "-":
        (tmp_path / name).write_bytes(broken)
    code, rows, err = _predict(capsys, monkeypatch, *args, "--encoding", codec, block=9,
                               stdin=broken if name == "-" else None)
    skip = 1 if name.endswith(".jsonl") else 0  # a JSON line's text starts after '{"text": "'
    assert code == 2 and err.startswith(f"error: {where}:3: byte {problem[:4]}") if skip else (
        code == 2 and err.startswith(f"error: {where}:3: byte {problem}")), err
    if encoding == "utf-16":
        if name != "-":
            (tmp_path / name).write_bytes(data[:-1])
        code, rows, err = _predict(capsys, monkeypatch, *args, "--encoding", encoding, block=9,
                                   stdin=data[:-1] if name == "-" else None)
        assert code == 2 and err.startswith(f"error: {where}:7: the input ends in the middle of a utf-16 character")


@pytest.mark.parametrize("name", ["texts.txt", "texts.jsonl"])
def test_a_nul_byte_is_named_by_line_and_character_in_the_readers_words(capsys, monkeypatch, tmp_path, name):
    # It said "texts.txt:3: holds NUL bytes (binary data?); pass plain text", in words of its own.
    path = tmp_path / name
    lines = ["Who wrote Hamlet ?", "What is an atom ?", "When did caf\u00e9\x00s open ?"]
    path.write_text("".join((json.dumps({"text": t}) if name.endswith(".jsonl") else t) + "\n" for t in lines[:2])
                    + ('{"text": "' if name.endswith(".jsonl") else "") + lines[2] + "\n", encoding="utf-8")
    at = len('{"text": "When did caf\u00e9' if name.endswith(".jsonl") else "When did caf\u00e9") + 1
    code, rows, err = _predict(capsys, monkeypatch, "--input", str(path), block=1 << 20)
    assert code == 2 and rows == [] and err == (
        f"error: {path}:3: a NUL byte (0x00) at character {at}, which no text holds: the file is binary, a broken "
        "copy, or in another encoding (UTF-16, for one); restore the file from a good copy, or remove the byte\n")


@pytest.mark.parametrize("fmt", ["text", "jsonl"])
def test_a_nul_byte_on_stdin_is_worded_for_a_stream(capsys, monkeypatch, fmt):
    """Until the review of stop 65 `printf 'a\\nb\\0c\\n' | textcls predict RUN --input -` said
    "stdin:2: ... the file is binary, a broken copy ...; restore the file from a good copy": stdin
    has no file to restore."""
    line = '{"text": "b\x00c"}' if fmt == "jsonl" else "b\x00c"
    data = (("{\"text\": \"a\"}" if fmt == "jsonl" else "a") + "\n" + line + "\n").encode()
    code, rows, err = _predict(capsys, monkeypatch, "--input", "-", "--format", fmt, stdin=data, block=1 << 20)
    at = line.index("\x00") + 1
    assert code == 2 and len(rows) == 0 and err == (
        f"error: stdin:2: a NUL byte (0x00) at character {at}, which no text holds: the input is binary or in another "
        "encoding (UTF-16, for one); fix what pipes into it, or remove the byte there\n")


@pytest.mark.parametrize("source", ["file", "stdin"])
def test_a_json_escaped_nul_is_classified_as_the_python_api_classifies_it(capsys, monkeypatch, tmp_path, source):
    """{"text": "a\\u0000b"} holds no NUL byte (a damaged file would): the model reads U+0000 like
    any character, and Classifier.predict and POST /predict take it, so predict --input does too."""
    texts = ["Who wrote Hamlet ?", "What is an\x00 atom ?", "Why ?"]
    data = ("\n".join(json.dumps({"text": t}) for t in texts) + "\n").encode()
    assert b"\x00" not in data
    path = tmp_path / "texts.jsonl"
    path.write_bytes(data)
    args = ("--input", str(path)) if source == "file" else ("--input", "-", "--format", "jsonl")
    code, rows, err = _predict(capsys, monkeypatch, *args, stdin=data if source == "stdin" else None, block=1 << 20)
    probabilities = Predictor.load(RUN).predict_proba(texts)
    got = np.array([[r["probabilities"][n] for n in sorted(r["probabilities"])] for r in rows])
    assert code == 0 and err == "" and [r["text"] for r in rows] == texts
    np.testing.assert_allclose(got, probabilities, **KERNEL)


def test_json_lines_input(capsys, monkeypatch, tmp_path):
    path = tmp_path / "texts.jsonl"
    path.write_text("\n".join(json.dumps({"text": t, "id": i}) for i, t in enumerate(EXPECTED["texts"][:4])) + "\n")
    code, rows, err = _predict(capsys, monkeypatch, "--input", str(path))
    assert code == 0, err
    assert [r["label"] for r in rows] == EXPECTED["labels"][:4]
    path.write_text('{"text": "Who wrote Hamlet ?"}\n{"txt": "no text field"}\n')
    code, _, err = _predict(capsys, monkeypatch, "--input", str(path))
    assert code == 2 and f'{path}:2: a JSON line needs a string field "text"' in err
    code, _, err = _predict(capsys, monkeypatch, "--input", "-", "--format", "jsonl", stdin=b"not json\n")
    assert code == 2 and "stdin:1: not valid JSON" in err


@pytest.mark.parametrize("text, problem", [(" \\t ", "only whitespace"), ("", "empty")])
def test_a_blank_json_text_is_named_by_its_line_once(capsys, monkeypatch, tmp_path, text, problem):
    path = tmp_path / "texts.jsonl"
    path.write_text(f'{{"text": "Who wrote Hamlet ?"}}\n{{"text": "{text}"}}\n')
    code, rows, err = _predict(capsys, monkeypatch, "--input", str(path))
    # It said "texts.jsonl:2: text 2 is only whitespace": one text a line, so the same number twice.
    assert code == 2 and rows == [] and len(err.strip().splitlines()) == 1
    assert err == (f"error: {path}:2: the text is {problem}; a model cannot classify it, drop it or give it "
                   "content\n") and "text 2" not in err


def test_a_line_the_model_predicts_nan_for_is_named_by_its_line_once(capsys, monkeypatch, tmp_path):
    def broken_predict(texts, task_ids):
        probs = np.tile(np.array([[0.25, 0.75]], dtype=np.float32), (len(texts), 1))
        probs[[i for i, t in enumerate(texts) if "atom" in t]] = np.nan
        return probs

    config = {"model": "fasttext-bag", "label_names": ["neg", "pos"]}
    fake = Predictor(tmp_path, config, broken_predict, uses_tasks=False, backend="estimator")
    monkeypatch.setattr(Predictor, "load", classmethod(lambda cls, *a, **k: fake))
    broken = (f"{tmp_path}: the model produced NaN or Inf probabilities for {{}}; its weights are broken "
              "(training diverged?), retrain it or load a good run")
    for name, data in (("texts.txt", "Who wrote Hamlet ?\nWhat is an atom ?\n"),
                       ("texts.jsonl", '{"text": "Who wrote Hamlet ?"}\n{"text": "What is an atom ?"}\n')):
        path = tmp_path / name
        path.write_text(data)
        code, _, err = _predict(capsys, monkeypatch, "--input", str(path), block=1 << 20)
        # It said "texts.txt:2: ...: the model produced NaN or Inf probabilities for text 2".
        assert code == 2 and err == f"error: {path}:2: {broken.format('the text')}\n"
    code, _, err = _predict(capsys, monkeypatch, "Who wrote Hamlet ?", "What is an atom ?")
    assert code == 2 and err == f"error: {broken.format('text 2')}\n"  # arguments keep their number


def test_tasks_reach_a_run_with_one_head_per_task(capsys, monkeypatch, tmp_path):
    seen = []

    def fake_predict(texts, task_ids):
        seen.extend(task_ids)
        return np.tile(np.array([[0.25, 0.75]], dtype=np.float32), (len(texts), 1))

    config = {"model": "fcsr-mtl", "label_names": ["neg", "pos"], "task_names": ["books", "dvd"]}
    fake = Predictor(tmp_path, config, fake_predict, uses_tasks=True, backend="estimator")
    monkeypatch.setattr(Predictor, "load", classmethod(lambda cls, *a, **k: fake))
    path = tmp_path / "texts.jsonl"
    path.write_text('{"text": "a fine read", "task": "books"}\n{"text": "a fine watch"}\n')
    code, rows, err = _predict(capsys, monkeypatch, "--input", str(path), "--task", "dvd")
    assert code == 0, err
    assert seen == [0, 1] and [r["task"] for r in rows] == ["books", "dvd"]  # a line's task wins over --task
    # Every block's tasks are checked before the first prediction is written: line 1 (a block of
    # its own) was written before the error about line 2.
    code, rows, err = _predict(capsys, monkeypatch, "--input", str(path))
    assert code == 2 and rows == [] and f"{path}:2: no task; fcsr-mtl has one head per task (books, dvd)" in err
    path.write_text('{"text": "a fine read", "task": "books"}\n{"text": "a fine watch", "task": "music"}\n')
    code, rows, err = _predict(capsys, monkeypatch, "--input", str(path))
    # Named by its line alone (it once said "text 0", the index in its block, then "f.jsonl:2: text 2").
    assert code == 2 and rows == [] and len(err.strip().splitlines()) == 1
    assert f"{path}:2: task 'music' is not one fcsr-mtl was trained on; give one of: books, dvd" in err
    code, _, err = _predict(capsys, monkeypatch, "a fine read", "--task", "music")
    assert code == 2 and f"--task music: {RUN} was not trained on that task; give one of: books, dvd" in err


@pytest.mark.parametrize("args, expected", [
    (("x", "--task", "books"), "--task books: "),
    (("x", "--threshold", "0.3"), "--threshold applies to multi-label runs"),
    (("x", "--threads", "0"), "--threads 0: must be at least 1"),
    (("x", "--format", "parquet"), "--format 'parquet' is not one of text, jsonl, csv, tsv; textcls predict reads"),
    (("x", "--format", "csv"), "--format csv applies to --input files; texts given as arguments are one text each"),
    (("x", "--text-column", "body"), "--text-column applies to --input files"),
    (("--format", "csv"), "--format csv reads a file (it is read twice: checked, then predicted); pass --input"),
    (("--input", "-", "--text-column", "body"), "--text-column applies to csv, tsv, jsonl input, and stdin is read "
                                                "as text: drop --text-column, or pass --format jsonl"),
    (("--input", "-", "--format", "jsonl", "--delimiter", ";"), "--delimiter applies to csv, tsv input"),
    (("x", "--input", "-"), "give texts as arguments or --input FILE, not both"),
])
def test_option_errors_are_one_line(capsys, monkeypatch, args, expected):
    code, rows, err = _predict(capsys, monkeypatch, *args)
    assert code == 2 and rows == [] and expected in err and len(err.strip().splitlines()) == 1


def test_a_json_escape_of_a_lone_surrogate_is_named_by_its_line(capsys, monkeypatch, tmp_path):
    path = tmp_path / "texts.jsonl"
    path.write_text('{"text": "a fine read"}\n{"text": "caf\\udce9"}\n')
    code, rows, err = _predict(capsys, monkeypatch, "--input", str(path))
    # It once said "text 0" (the index in its block) after the line; and nothing is written.
    assert code == 2 and rows == [] and len(err.strip().splitlines()) == 1
    assert f"{path}:2: holds a lone surrogate '\\udce9' at character 4" in err


def test_a_csv_file_is_read_as_records_and_its_label_column_is_not_classified(capsys, monkeypatch, tmp_path):
    # The file was read as lines: the header "text,label" was classified, then every line with its
    # true label pasted into the text ('"Who wrote Hamlet ?",HUM'), with exit 0.
    texts = EXPECTED["texts"][:6]
    path = tmp_path / "news_test.csv"
    rows_in = [f'"{t}",{label}' for t, label in zip(texts, EXPECTED["labels"])]
    rows_in[2] = f'"{texts[2][:5]}\n{texts[2][5:]}",x'  # a quoted field over two lines is one record
    path.write_text("text,label\n" + "\n".join(rows_in[:4]) + "\n\n" + "\n".join(rows_in[4:]) + "\n")
    code, rows, err = _predict(capsys, monkeypatch, "--input", str(path), block=40)
    assert code == 0, err
    expected = texts[:2] + [texts[2][:5] + "\n" + texts[2][5:]] + texts[3:]
    assert [r["text"] for r in rows] == expected
    got = np.array([[r["probabilities"][n] for n in sorted(r["probabilities"])] for r in rows])
    np.testing.assert_allclose(got, Predictor.load(RUN).predict_proba(expected), **KERNEL)
    # --format csv reads a file of another name; an error names the record by its file and first line.
    other = tmp_path / "news.txt"
    other.write_text(path.read_text() + '"",HUM\n')
    code, rows, err = _predict(capsys, monkeypatch, "--input", str(other), "--format", "csv", block=40)
    assert code == 2 and rows == [] and err == (f"error: {other}:10: the text is empty; a model cannot classify it, "
                                                "drop it or give it content\n")


def test_a_tsv_file_and_a_json_lines_file_take_their_text_from_text_column(capsys, monkeypatch, tmp_path):
    texts = EXPECTED["texts"][:3]
    path = tmp_path / "q.tsv"
    path.write_text("id\tquestion\tlabel\n" + "".join(f"{i}\t{t}\tHUM\n" for i, t in enumerate(texts)))
    code, rows, err = _predict(capsys, monkeypatch, "--input", str(path), "--text-column", "question")
    assert code == 0 and [r["text"] for r in rows] == texts, err
    code, rows, err = _predict(capsys, monkeypatch, "--input", str(path))
    assert code == 2 and rows == [] and len(err.strip().splitlines()) == 1
    assert f"{path}:1: no column 'text' in the header row ('id', 'question', 'label'); name the text column with " \
           "--text-column NAME" in err
    # Several columns are joined with a space, as train joins them.
    code, rows, err = _predict(capsys, monkeypatch, "--input", str(path), "--text-column", "id",
                               "--text-column", "question")
    assert code == 0 and [r["text"] for r in rows] == [f"{i} {t}" for i, t in enumerate(texts)], err
    jsonl = tmp_path / "q.jsonl"
    jsonl.write_text("".join(json.dumps({"question": t, "label": "HUM"}) + "\n" for t in texts))
    code, rows, err = _predict(capsys, monkeypatch, "--input", str(jsonl), "--text-column", "question")
    assert code == 0 and [r["text"] for r in rows] == texts, err
    code, rows, err = _predict(capsys, monkeypatch, "--input", str(jsonl))
    assert code == 2 and f'{jsonl}:1: a JSON line needs a string field "text" (its fields: question, label)' in err


@pytest.mark.parametrize("name, args, problem", [
    ("texts.parquet", (), "is a parquet file by its name"),
    ("texts.txt", (), "is a parquet file, not text"),  # by its first bytes, whatever its name
    ("texts.parquet", ("--format", "text"), "is a parquet file, not text"),
    ("texts.parquet", ("--format", "csv"), "is a parquet file, not text"),
])
def test_a_parquet_file_is_refused_not_read_as_lines_of_text(capsys, monkeypatch, tmp_path, name, args, problem):
    path = tmp_path / name
    path.write_bytes(b"PAR1\x15\x04\x15\x10\nWho wrote Hamlet ?\nPAR1")
    code, rows, err = _predict(capsys, monkeypatch, "--input", str(path), *args)
    assert code == 2 and rows == [] and len(err.strip().splitlines()) == 1
    assert err.startswith(f"error: {path}: {problem}") and "reads plain text (one text a line), JSON Lines, CSV or " \
                                                          "TSV" in err


def test_a_terminal_on_stdin_gets_a_hint_before_the_read_waits(capsys, monkeypatch):
    class Terminal(io.TextIOWrapper):
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stdin", Terminal(io.BytesIO(b"Who wrote Hamlet ?\n"), encoding="utf-8"))
    code, rows, err = _predict(capsys, monkeypatch)
    assert code == 0 and len(rows) == 1
    assert err == "reading texts from stdin, one per line; end with Ctrl-D\n"
    code, rows, err = _predict(capsys, monkeypatch, "--input", "-", stdin=b"Who wrote Hamlet ?\n")
    assert code == 0 and err == ""  # a pipe gets no hint


def test_labels_fitted_as_ints_are_written_as_numbers(capsys, monkeypatch, tmp_path):
    # config.json keeps the class values a run was fitted with ("label_values"); predict wrote "3" for 3.
    def fake_predict(texts, task_ids):
        return np.tile(np.array([[0.25, 0.75]], dtype=np.float32), (len(texts), 1))

    for values, expected in (([1, 3], 3), (["neg", "pos"], "pos"), (None, "3")):
        config = {"model": "fasttext-bag", "label_names": ["1", "3"] if values != ["neg", "pos"] else values,
                  **({"label_values": values} if values else {})}
        fake = Predictor(tmp_path, config, fake_predict, uses_tasks=False, backend="estimator")
        monkeypatch.setattr(Predictor, "load", classmethod(lambda cls, *a, **k: fake))
        code, rows, err = _predict(capsys, monkeypatch, "a fine read")
        assert code == 0 and rows[0]["label"] == expected and type(rows[0]["label"]) is type(expected), err
