"""The practitioner audit's findings: a numeric score column read as classes, a class only the
test split has, an unknown label at evaluate named by record index, Python keywords in CLI
messages, the offline hub retrying for half a minute, and local paths in a public model card."""

from __future__ import annotations

import sys

import pytest

from textcls.data import load_dataset
from textcls.errors import ConfigError, DataError


def run_cli(argv: list[str], capsys) -> tuple[int, str, str]:
    """``textcls <argv>`` in this process: (exit status, stdout, stderr)."""
    from textcls.cli import main

    capsys.readouterr()
    try:
        main(argv)
        status = 0
    except SystemExit as exc:
        status = exc.code or 0
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def write(path, text: str):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# -- 4: messages name the CLI option beside the Python keyword ------------------------------------
def test_column_advice_names_the_cli_option_too(tmp_path):
    path = write(tmp_path / "d.csv", "text,label\nhi there,a\nho there,b\n")
    with pytest.raises(DataError) as err:
        load_dataset(str(path), label_column="labl")
    assert "pass label_column= (CLI: --label-column) with one of them" in str(err.value)
    with pytest.raises(DataError) as err:
        load_dataset(str(path), text_columns=["body"])
    assert "pass text_columns= (CLI: --text-column) with one of them" in str(err.value)
    jpath = write(tmp_path / "d.jsonl", '{"txt": "x", "label": "a"}\n')
    with pytest.raises(DataError) as err:
        load_dataset(str(jpath), text_columns=["body"])
    assert "pass text_columns= (CLI: --text-column) with one of them" in str(err.value)


def test_unknown_dataset_advice_names_data_dir_option(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DataError) as err:
        load_dataset("no-such-dataset", data_dir=tmp_path)
    assert "pass data_dir= (CLI: --data-dir) to change it" in str(err.value)


def test_option_of_another_format_is_named_once_on_the_command_line(tmp_path, capsys):
    path = write(tmp_path / "a.jsonl", '{"text": "a b", "label": "x"}\n{"text": "c d", "label": "y"}\n')
    with pytest.raises(ConfigError, match=r"delimiter= \(CLI: --delimiter\) does not apply to a jsonl file"):
        load_dataset(str(path), delimiter=";")
    status, _, err = run_cli(["train", "-m", "tfidf-lr", "-d", str(path), "--delimiter", ";",
                              "--run-dir", str(tmp_path / "run")], capsys)
    assert status == 2
    assert err.count("--delimiter") == 1, err
    assert "does not apply to a jsonl file" in err and not (tmp_path / "run").exists()
