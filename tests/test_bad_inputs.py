"""Bad inputs: what new users and fuzzers feed textcls, and what must come out.

The corpus is two tables, ``CLI_CASES`` and ``API_CASES``. A row is one input: the command
line (or Python call), the small files it reads (written into the test's own tmp folder,
which is also the working directory, so every file name in a message is the name written
here), the expected outcome, and the substrings the message must hold.

- Exit status 2: a user error. stderr is exactly one line, ``error: ...``, with no traceback,
  naming the file / line / record / parameter of the row; a failed ``train`` leaves no run
  folder (``runs/*``, ``*.partial``, its ``--run-dir``) behind.
- Exit status 0: the input is fine and must WORK (CRLF files, a byte-order mark, numbers as
  texts, ...); no ``error:`` line and no traceback.
- API rows: the exception is a ``textcls.errors.TextclsError`` (so also a ``ValueError``), or
  scikit-learn's ``NotFittedError`` for an unfitted ``Classifier``; ``index`` is the position
  of the bad text or label in the caller's input (``TextclsError.index``).

Substrings match case-insensitively; a tuple lists alternatives (any one is enough), so a
row pins the location and the parameter, not the wording. Placeholders in argv: ``{run}``
is a trained ``tfidf-lr`` run and ``{nrun}`` a trained ``fasttext-bag-unigram`` run (one of
each per session, never modified; rows that corrupt a run work on a copy named ``r``).

The CLI runs in-process (``textcls.cli.main``) for speed; the run-folder lock row starts a
rival training in a real process. With ``BAD_INPUTS_LOG=<file>`` each row appends its actual
outcome (status and message) as a JSON line, for triage.
"""

from __future__ import annotations

import builtins
import gzip
import hashlib
import io
import json
import os
import random
import shutil
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

import textcls
from textcls.errors import TextclsError
from textcls.export import export_onnx
from textcls.models.registry import create_model

# ---------------------------------------------------------------------------------------
# Inputs


WORDS = {
    "pos": "good great fine lovely superb excellent warm".split(),
    "neg": "bad awful poor dull terrible boring cold".split(),
    "meh": "average middling plain ordinary".split(),
}


def rows(n: int = 40, classes=("pos", "neg"), seed: int = 0) -> list[tuple[str, str]]:
    """``n`` (text, label) pairs, classes in turn, texts made of each class's own words."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        label = classes[i % len(classes)]
        words = WORDS.get(label, WORDS["pos"])
        out.append((" ".join(rng.choice(words) for _ in range(5)) + " film", label))
    return out


def csv_text(n: int = 40, header: str | None = "text,label", eol: str = "\n", classes=("pos", "neg")) -> str:
    lines = ([header] if header else []) + [f"{t},{c}" for t, c in rows(n, classes)]
    return eol.join(lines) + eol


def tsv_text(n: int = 30, header: str | None = None) -> str:
    lines = ([header] if header else []) + [f"{c}\t{t}" for t, c in rows(n)]
    return "\n".join(lines) + "\n"


def jsonl_text(records) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def good_records(n: int = 40, key: str = "label") -> list[dict]:
    return [{"text": t, key: c} for t, c in rows(n)]


def with_line(text: str, lineno: int, line: str, replace: bool = True) -> str:
    """``text`` with its line ``lineno`` (1-based) replaced by (or preceded by) ``line``."""
    lines = text.split("\n")
    lines[lineno - 1 : lineno - 1 + (1 if replace else 0)] = [line]
    return "\n".join(lines)


TINY_CSV = csv_text()  # written as tiny.csv into every case's folder
QUOTE_OPEN_TO_EOF = with_line(TINY_CSV, 12, '"a good film,pos')
QUOTE_MERGES_RECORDS = with_line(with_line(TINY_CSV, 12, '"a good film,pos'), 21, '"a dull film",neg')
BIG_TEXT = "good " * 1_000_000  # one 5 MB document


def gz_truncated(text: str) -> bytes:
    data = gzip.compress(text.encode())
    return data[: len(data) // 2]


def suite_toml(name: str = "mysuite", model: str = "no-such-model", dataset: str = "tiny.csv",
               overrides: str | None = None, defaults: str = "") -> str:
    return (f'[suite]\nname = "{name}"\ndescription = "bad-input test suite"\n\n{defaults}'
            f'[[entry]]\ndataset = "{dataset}"\nmodel = "{model}"\n'
            + (f"overrides = {overrides}\n" if overrides else ""))


# ---------------------------------------------------------------------------------------
# Context, setups and checks


@dataclass
class Ctx:
    tmp: Path
    trained: dict
    monkeypatch: pytest.MonkeyPatch
    cleanups: list = field(default_factory=list)

    def copy_run(self, which: str = "run", name: str = "r") -> Path:
        dest = self.tmp / name
        shutil.copytree(self.trained[which], dest)
        return dest


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _replace_in(obj, old: str, new: str):
    if isinstance(obj, dict):
        return {k: _replace_in(v, old, new) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_replace_in(v, old, new) for v in obj]
    return new if obj == old else obj


def write_weights(run: Path, arrays: dict) -> None:
    """Replace model.safetensors with valid safetensors holding ``arrays`` and keep any
    checksum of it in config.json in step, so the row tests the arrays, not the checksum."""
    from safetensors.numpy import save

    path = run / "model.safetensors"
    old, new = path.read_bytes(), save({k: np.ascontiguousarray(v) for k, v in arrays.items()})
    path.write_bytes(new)
    config = json.loads((run / "config.json").read_text())
    (run / "config.json").write_text(json.dumps(_replace_in(config, _sha(old), _sha(new))))


def read_weights(run: Path) -> dict:
    from safetensors.numpy import load

    return dict(load((run / "model.safetensors").read_bytes()))


def _first_float(arrays: dict) -> str:
    return next(k for k in sorted(arrays) if np.issubdtype(arrays[k].dtype, np.floating))


def nan_weights(run: Path) -> None:
    arrays = read_weights(run)
    name = _first_float(arrays)
    arrays[name] = np.full_like(arrays[name], np.nan)
    write_weights(run, arrays)


def wrong_shape_weights(run: Path) -> None:
    arrays = read_weights(run)
    name = _first_float(arrays)
    a = arrays[name]
    arrays[name] = np.zeros((a.shape[0] + 3, *a.shape[1:]) if a.ndim else (3,), dtype=a.dtype)
    write_weights(run, arrays)


def flip_bits(run: Path) -> None:
    data = bytearray((run / "model.safetensors").read_bytes())
    data[-7] ^= 0x10  # inside the last tensor's data, not the header: the file still parses
    (run / "model.safetensors").write_bytes(bytes(data))


def truncate_weights(run: Path) -> None:
    data = (run / "model.safetensors").read_bytes()
    (run / "model.safetensors").write_bytes(data[: len(data) // 2])


def edit_config(change: Callable[[dict], Any]) -> Callable[[Path], None]:
    """config.json after ``change(config)`` edits it in place (its return value is ignored)."""
    def edit(run: Path) -> None:
        config = json.loads((run / "config.json").read_text())
        change(config)
        (run / "config.json").write_text(json.dumps(config))
    return edit


def write_file(name: str, content: bytes | str) -> Callable[[Path], None]:
    def edit(run: Path) -> None:
        data = content.encode() if isinstance(content, str) else content
        (run / name).write_bytes(data)
    return edit


def remove(name: str) -> Callable[[Path], None]:
    return lambda run: (run / name).unlink()


def broken(which: str, mutate: Callable[[Path], None]) -> Callable[[Ctx], None]:
    """Setup: a copy ``r`` of a trained run, then ``mutate(r)``."""
    def setup(ctx: Ctx) -> None:
        mutate(ctx.copy_run(which, "r"))
    return setup


def unreadable(name: str) -> Callable[[Ctx], None]:
    """Setup: ``name`` loses its read permission. Root reads any file, so under root opening
    that one path is made to fail as it would for any other user."""
    def setup(ctx: Ctx) -> None:
        path = ctx.tmp / name
        path.chmod(0)
        ctx.cleanups.append(lambda: path.chmod(0o644))
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            real_open, target = builtins.open, os.path.realpath(path)

            def guarded_open(file, *args, **kwargs):
                if isinstance(file, (str, os.PathLike)) and os.path.realpath(os.fspath(file)) == target:
                    raise PermissionError(13, "Permission denied", os.fspath(file))
                return real_open(file, *args, **kwargs)

            ctx.monkeypatch.setattr(builtins, "open", guarded_open)
            ctx.monkeypatch.setattr(io, "open", guarded_open)
    return setup


def no_gpu(ctx: Ctx) -> None:
    """Setup: CUDA looks absent, whatever machine runs the tests."""
    import torch

    ctx.monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    ctx.monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)


def interrupt_in(what: str, exc: type[BaseException]) -> Callable[[Ctx], None]:
    """Setup: ``textcls.data.load_dataset`` raises ``exc`` (a Ctrl-C, or an EOFError from a read)."""
    def setup(ctx: Ctx) -> None:
        import textcls.data

        def boom(*args, **kwargs):
            raise exc()
        ctx.monkeypatch.setattr(textcls.data, what, boom)
    return setup


def rival_training(ctx: Ctx) -> None:
    """Setup: another process is training into --run-dir locked (it is killed after the row)."""
    (ctx.tmp / "big.csv").write_text(csv_text(400))
    log = open(ctx.tmp / "rival.log", "wb")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "textcls.cli", "train", "--model", "fasttext-bag-unigram", "--data", "big.csv",
         "--epochs", "100000", "--run-dir", "locked", "--no-progress"],
        cwd=ctx.tmp, env=env, stdout=log, stderr=subprocess.STDOUT)

    def stop():
        proc.kill()
        proc.wait()
        log.close()
    ctx.cleanups.append(stop)
    deadline = time.monotonic() + 120
    while not (ctx.tmp / "locked.partial").exists():
        if proc.poll() is not None:
            raise AssertionError("the rival training ended early: " + (ctx.tmp / "rival.log").read_text()[-2000:])
        if time.monotonic() > deadline:
            raise AssertionError("the rival training did not start within 120 s")
        time.sleep(0.1)
    time.sleep(1.0)  # let it get past its start-up checks into training


def fail_after_training(ctx: Ctx) -> None:
    """Setup: the test-set evaluation that follows training fails (the run folder is half made)."""
    from textcls.api import Classifier
    from textcls.errors import DataError

    def evaluate(self, *args, **kwargs):
        raise DataError("after-training failure injected by the test")
    ctx.monkeypatch.setattr(Classifier, "evaluate", evaluate)


def existing_report(ctx: Ctx) -> None:
    path = ctx.tmp / "benchmarks" / "results" / "mysuite.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"kept": true}\n')


def labels_of(run: str, expected: list[str]) -> Callable[[Ctx, str, str], None]:
    def check(ctx: Ctx, out: str, err: str) -> None:
        config = json.loads((ctx.tmp / run / "config.json").read_text())
        assert config["label_names"] == expected, config["label_names"]
    return check


def report_kept(ctx: Ctx, out: str, err: str) -> None:
    assert (ctx.tmp / "benchmarks" / "results" / "mysuite.json").read_text() == '{"kept": true}\n', \
        "benchmark without --output-dir overwrote benchmarks/results/mysuite.json"


def predicted_texts(expected: list[str]) -> Callable[[Ctx, str, str], None]:
    def check(ctx: Ctx, out: str, err: str) -> None:
        assert [json.loads(line)["text"] for line in out.splitlines()] == expected
    return check


def assert_kept(path: Path, content: str) -> None:
    assert path.read_text() == content, f"{path} was changed"


def assert_only_files(folder: Path, names: set[str]) -> None:
    assert {p.name for p in folder.iterdir()} == names, sorted(p.name for p in folder.iterdir())


def assert_absent(path: Path) -> None:
    assert not path.exists(), f"{path} was left behind: {sorted(str(p) for p in path.rglob('*'))}"


def assert_only_resumable_partial(parent: Path) -> None:
    assert_absent(parent / "run")
    assert (parent / "run.partial" / "checkpoint").is_dir(), sorted(str(p) for p in parent.rglob("*"))


def no_output(ctx: Ctx, out: str, err: str) -> None:
    assert out == ""


COMMITTED = Path(__file__).resolve().parents[1] / "benchmarks"


def damaged_committed_report(ctx: Ctx) -> None:
    """out/ holds the committed kim_vectors report, one summary cell of its JSON a string."""
    shutil.copy(COMMITTED / "suites" / "kim_vectors.toml", ctx.tmp / "kv.toml")
    (ctx.tmp / "out").mkdir()
    report = json.loads((COMMITTED / "results" / "kim_vectors.json").read_text(encoding="utf-8"))
    report["entries"][0]["summary"]["accuracy"]["mean"] = "0.8"
    (ctx.tmp / "out" / "kim_vectors.json").write_text(json.dumps(report), encoding="utf-8")
    (ctx.tmp / "out" / "kim_vectors.md").write_text("the old table", encoding="utf-8")


def damaged_report_kept(ctx: Ctx, out: str, err: str) -> None:
    report = json.loads((COMMITTED / "results" / "kim_vectors.json").read_text(encoding="utf-8"))
    report["entries"][0]["summary"]["accuracy"]["mean"] = "0.8"
    assert_kept(ctx.tmp / "out" / "kim_vectors.json", json.dumps(report))
    assert_kept(ctx.tmp / "out" / "kim_vectors.md", "the old table")
    assert_absent(ctx.tmp / "out" / "kim_vectors.png")


def setups(*fns: Callable[[Ctx], None]) -> Callable[[Ctx], None]:
    def setup(ctx: Ctx) -> None:
        for fn in fns:
            fn(ctx)
    return setup


# ---------------------------------------------------------------------------------------
# The CLI corpus


@dataclass(frozen=True)
class Cli:
    id: str
    argv: tuple[str, ...]
    status: int
    expect: tuple = ()  # substrings of the error line (status != 0) or of stdout+stderr (status 0)
    files: dict = field(default_factory=dict)  # name -> str | bytes, written first ("x/" = a folder)
    setup: Callable[[Ctx], None] | None = None
    stdin: bytes | None = None
    check: Callable[[Ctx, str, str], None] | None = None
    leftovers_ok: bool = False  # the row itself makes a run folder that is not the failed command's
    refuse: tuple = ()  # substrings that must NOT be in the message


T = ("--model", "tfidf-lr", "--no-progress")  # the quick model for train rows
N = ("--model", "fasttext-bag-unigram", "--epochs", "1", "--no-progress")  # a quick neural model


def train(data: str, *more: str, model=T) -> tuple[str, ...]:
    return ("train", *model, "--data", data, *more)


CLI_CASES = [
    # ---------------------------------------------------------------- data files: must fail
    Cli("train-empty-file", train("empty.csv"), 2, ("empty.csv",), {"empty.csv": b""}),
    Cli("train-header-only", train("header.csv"), 2, ("header.csv",), {"header.csv": "text,label\n"}),
    Cli("train-blank-lines-only", train("blank.csv"), 2, ("blank.csv",), {"blank.csv": "\n  \n\n"}),
    Cli("train-one-class-only", train("one.csv"), 2, ("one.csv", "class"),
        {"one.csv": csv_text(classes=("pos",))}),
    Cli("train-label-column-missing", train("nolabel.csv"), 2, ("nolabel.csv", "label"),
        {"nolabel.csv": csv_text(header="text,comment")}),
    Cli("train-label-column-not-found", train("tiny.csv", "--label-column", "stars"), 2, ("tiny.csv", "stars")),
    Cli("train-text-column-not-found", train("tiny.csv", "--text-column", "body"), 2, ("tiny.csv", "body")),
    Cli("train-text-column-index-out-of-range",
        train("tiny.tsv", "--no-header", "--label-column", "0", "--text-column", "5"), 2, ("tiny.tsv", "5"),
        {"tiny.tsv": tsv_text()}),
    Cli("train-named-column-with-no-header", train("tiny.csv", "--no-header", "--text-column", "text"), 2,
        ("tiny.csv", "header")),
    Cli("train-header-row-with-columns-by-index", train("reviews.csv", "--text-column", "0", "--label-column", "1"),
        2, ("reviews.csv:1", "looks like a header", "--header", "--no-header"),
        {"reviews.csv": csv_text(header="review,stars")}),
    Cli("train-unterminated-quote-to-eof", train("quote.csv"), 2, (("quote.csv:12", "line 12"),),
        {"quote.csv": QUOTE_OPEN_TO_EOF}),
    Cli("train-unterminated-quote-merges-records", train("quote.csv"), 2, (("quote.csv:12", "line 12"),),
        {"quote.csv": QUOTE_MERGES_RECORDS}),
    Cli("train-unexpected-header-names", train("weird.csv"), 2, ("weird.csv", "review_text"),
        {"weird.csv": csv_text(header="review_text,polarity")}),
    Cli("train-too-few-fields", train("short.csv"), 2, (("short.csv:5", "line 5"),),
        {"short.csv": with_line(TINY_CSV, 5, "just some text without a label")}),
    Cli("train-empty-text", train("notext.csv"), 2, (("notext.csv:7", "line 7"),),
        {"notext.csv": with_line(TINY_CSV, 7, ",pos")}),
    Cli("train-wrong-delimiter", train("tiny.csv", "--delimiter", ";"), 2, ("tiny.csv", "delimiter")),
    Cli("train-binary-file", train("image.csv"), 2, ("image.csv",),
        {"image.csv": b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8}),
    Cli("train-parquet-garbage", train("data.parquet"), 2, ("data.parquet",),
        {"data.parquet": b"PAR1 this is not parquet at all"}),
    Cli("train-gz-not-gzip", train("plain.csv.gz"), 2, ("plain.csv.gz",), {"plain.csv.gz": TINY_CSV}),
    Cli("train-truncated-jsonl-gz", train("cut.jsonl.gz"), 2, ("cut.jsonl.gz",),
        {"cut.jsonl.gz": gz_truncated(jsonl_text(good_records(400)))}),
    Cli("train-truncated-csv-gz", train("cut.csv.gz"), 2, ("cut.csv.gz",),
        {"cut.csv.gz": gz_truncated(csv_text(400))}),
    Cli("train-unreadable-file", train("secret.csv"), 2, ("secret.csv",), {"secret.csv": TINY_CSV},
        setup=unreadable("secret.csv")),
    Cli("train-unknown-encoding", train("tiny.csv", "--encoding", "klingon-8"), 2, ("klingon-8",)),
    Cli("train-latin1-bytes", train("latin.csv"), 2, (("latin.csv:3", "line 3"), "latin-1"),
        {"latin.csv": with_line(TINY_CSV, 3, "caf\xe9 tr\xe8s bon,pos").encode("latin-1")}),
    Cli("train-directory-empty", train("nothing"), 2, ("nothing",), {"nothing/": ""}),
    Cli("train-folder-mixes-files-and-folders", train("mixed"), 2, ("mixed",),
        {"mixed/a.txt": "good film\n", "mixed/neg/1.txt": "bad film"}),
    Cli("train-class-folder-empty", train("classes"), 2, (("classes/neg", "neg"),),
        {"classes/pos/1.txt": "good film", "classes/pos/2.txt": "great film", "classes/neg/": ""}),
    Cli("train-split-folder-without-train", train("splits"), 2, ("splits", "train"),
        {"splits/test.csv": TINY_CSV}),
    Cli("train-split-folder-with-a-file-of-no-split", train("splits"), 2,
        ("splits", "testing.csv", "train.*", "test.*"),
        {"splits/train.csv": csv_text(20), "splits/testing.csv": TINY_CSV, "splits/classes.txt": "pos\nneg\n"}),
    Cli("train-folder-of-csv-files-is-not-class-files", train("parts"), 2, ("parts", "part1.csv", "train/dev/test"),
        {"parts/part1.csv": csv_text(20), "parts/part2.csv": csv_text(20)}),
    Cli("train-folder-of-one-jsonl-file", train("one"), 2, ("one", "foo.jsonl.gz"),
        {"one/foo.jsonl.gz": gzip.compress(jsonl_text(good_records()).encode())}),
    Cli("works-train-folder-of-class-files", train("classes", "--run-dir", "out"), 0, ("accuracy",),
        {"classes/pos.txt": "".join(f"{t}\n" for t, c in rows() if c == "pos"),
         "classes/neg.txt": "".join(f"{t}\n" for t, c in rows() if c == "neg")},
        check=labels_of("out", ["neg", "pos"])),
    Cli("train-delimiter-on-a-jsonl-file", train("tiny.jsonl", "--delimiter", ";"), 2,
        ("tiny.jsonl", "--delimiter", "jsonl"), {"tiny.jsonl": jsonl_text(good_records())}),
    Cli("train-no-header-on-a-jsonl-file", train("tiny.jsonl", "--no-header"), 2,
        ("tiny.jsonl", "--header/--no-header"), {"tiny.jsonl": jsonl_text(good_records())}),
    Cli("train-test-fraction-on-a-folder-with-a-test-split", train("splits", "--test-fraction", "0.3"), 2,
        ("--test-fraction", "splits", "own test split"), {"splits/train.csv": csv_text(20), "splits/test.csv": TINY_CSV}),
    Cli("train-split-seed-on-a-folder-with-a-test-split", train("splits", "--split-seed", "3"), 2,
        ("--split-seed", "splits", "own test split", "--max-per-split"),
        {"splits/train.csv": csv_text(20), "splits/test.csv": TINY_CSV}),
    Cli("train-text-column-on-class-folders", train("classes", "--text-column", "body"), 2,
        ("classes", "--text-column", "class folders"),
        {"classes/pos/1.txt": "good film", "classes/neg/1.txt": "bad film"}),
    Cli("train-epochs-on-a-classic-model", train("tiny.csv", "--epochs", "3"), 2, ("tfidf-lr", "'epochs'")),
    Cli("train-resume-without-run-dir", train("tiny.csv", "--resume"), 2, ("--resume", "--run-dir")),
    Cli("evaluate-test-fraction-on-one-file", ("evaluate", "{run}", "--data", "tiny.csv", "--test-fraction", "0.3"),
        2, ("--test-fraction", "tiny.csv", "--split test")),
    Cli("evaluate-split-seed-on-one-file", ("evaluate", "{run}", "--data", "tiny.csv", "--split-seed", "3"),
        2, ("--split-seed", "tiny.csv", "--max-per-split", "--split test")),
    Cli("speed-output-under-a-file", ("speed", "-m", "fasttext-bag-unigram", "-l", "8", "-o", "tiny.csv/sp"), 2,
        ("--output", "tiny.csv", "not a folder")),
    Cli("benchmark-output-dir-is-a-file", ("benchmark", "--suite", "s.toml", "--output-dir", "tiny.csv"), 2,
        ("--output-dir", "tiny.csv", "not a folder"), {"s.toml": suite_toml(model="tfidf-lr")}),
    Cli("explain-output-is-a-file", ("explain", "{nrun}", "good film", "-o", "tiny.csv"), 2,
        ("tiny.csv", "folder")),
    Cli("predict-a-hub-id-where-a-folder-is-read", ("predict", "hf:me/good", "good film"), 2,
        ("hf:me/good", "hf download me/good --local-dir", "from_pretrained('hf:me/good')")),
    # Until stop 63 an empty path was Path(""): export wrote model.onnx and its files into the cwd.
    Cli("export-output-empty", ("export", "{nrun}", "-o", ""), 2, ("-o is empty", "working directory"),
        check=lambda ctx, out, err: assert_only_files(ctx.tmp, {"tiny.csv"})),
    # Numbered as the files are (explain_2.html); until stop 63 it said "text 1", from 0.
    Cli("explain-second-text-empty-is-text-2", ("explain", "{nrun}", "good film", "", "-o", "ex"), 2,
        ("text 2 is empty",), check=lambda ctx, out, err: assert_absent(ctx.tmp / "ex")),
    Cli("explain-argument-not-utf8", ("explain", "{nrun}", "good film", "caf\udce9", "-o", "ex"), 2,
        ("text 2", "byte 0xe9", "not utf-8"), check=lambda ctx, out, err: assert_absent(ctx.tmp / "ex")),
    Cli("explain-output-empty-with-equals", ("explain", "{nrun}", "good film", "--output="), 2,
        ("--output is empty",), check=lambda ctx, out, err: assert_only_files(ctx.tmp, {"tiny.csv"})),
    Cli("evaluate-data-dir-empty", ("evaluate", "{run}", "--data", "tiny.csv", "--data-dir", ""), 2,
        ("--data-dir is empty",)),
    Cli("train-header-names-a-column-twice", train("twice.csv"), 2, ("twice.csv", "'label' twice"),
        {"twice.csv": "text,label,label\n" + "".join(f"{t},{c},neg\n" for t, c in rows())}),
    Cli("train-jsonl-key-twice", train("twice.jsonl"), 2, (("twice.jsonl:3", "line 3"), "'label' appears twice"),
        {"twice.jsonl": with_line(jsonl_text(good_records()), 3, '{"text": "good film", "label": "pos", "label": "neg"}')}),
    # Decision: a failure after training has written a checkpoint keeps <run>.partial (and
    # only it) so that --resume continues; nothing that looks like a finished run is made.
    Cli("train-fails-after-training-keeps-only-a-resumable-partial",
        train("tiny.csv", "--run-dir", "deep/nested/run", model=N),
        2, ("after-training", "--resume", "run.partial"), setup=fail_after_training,
        leftovers_ok=True, check=lambda ctx, out, err: assert_only_resumable_partial(ctx.tmp / "deep" / "nested")),
    Cli("train-jsonl-line-not-object", train("list.jsonl"), 2, (("list.jsonl:4", "line 4"),),
        {"list.jsonl": with_line(jsonl_text(good_records()), 4, '["good film", "pos"]')}),
    Cli("train-jsonl-invalid-json", train("broken.jsonl"), 2, (("broken.jsonl:6", "line 6"),),
        {"broken.jsonl": with_line(jsonl_text(good_records()), 6, '{"text": "good film", "label": ')}),
    Cli("train-jsonl-missing-text-key", train("notext.jsonl"), 2, ("notext.jsonl", "text"),
        {"notext.jsonl": jsonl_text([{"comment": t, "label": c} for t, c in rows()])}),
    Cli("train-jsonl-text-key-missing-on-one-line", train("hole.jsonl"), 2, (("hole.jsonl:9", "line 9"),),
        {"hole.jsonl": with_line(jsonl_text(good_records()), 9, '{"label": "pos"}')}),
    Cli("train-jsonl-null-label", train("null.jsonl"), 2, (("null.jsonl:3", "line 3"), "label"),
        {"null.jsonl": with_line(jsonl_text(good_records()), 3, '{"text": "good film", "label": null}')}),
    Cli("train-list-label-in-single-label-file", train("mixed.jsonl"), 2, (("mixed.jsonl:3", "line 3"),),
        {"mixed.jsonl": with_line(jsonl_text(good_records()), 3, '{"text": "good film", "label": ["pos", "neg"]}')}),
    Cli("train-multilabel-nested-list", train("multi.jsonl"), 2, (("multi.jsonl:5", "line 5"),),
        {"multi.jsonl": with_line(jsonl_text([{"text": t, "labels": [c]} for t, c in rows()]), 5,
                                  '{"text": "good film", "labels": ["pos", ["neg"]]}')}),
    Cli("train-multilabel-object-label", train("multi.jsonl"), 2, (("multi.jsonl:5", "line 5"),),
        {"multi.jsonl": with_line(jsonl_text([{"text": t, "labels": [c]} for t, c in rows()]), 5,
                                  '{"text": "good film", "labels": {"pos": 1}}')}),
    Cli("train-multilabel-class-named-twice", train("multi.jsonl"), 2, (("multi.jsonl:5", "line 5"), "twice"),
        {"multi.jsonl": with_line(jsonl_text([{"text": t, "labels": [c]} for t, c in rows()]), 5,
                                  '{"text": "good film", "labels": ["pos", "pos"]}')}),
    Cli("train-csv-label-cell-holding-a-list", train("lists.csv"), 2,
        (("lists.csv:3", "line 3"), "list of labels", "JSON Lines"),
        {"lists.csv": with_line(csv_text(), 3, 'good film,"[""pos"", ""neg""]"')}),
    Cli("train-fasttext-line-without-label", train("data.ft"), 2, (("data.ft:4", "line 4"),),
        {"data.ft": with_line("".join(f"__label__{c} {t}\n" for t, c in rows()), 4, "a good film")}),
    Cli("train-unknown-extension", train("data.xyz"), 2, ("data.xyz", "--format"), {"data.xyz": TINY_CSV}),
    Cli("train-no-such-file", train("missing.csv"), 2, ("missing.csv",)),
    Cli("train-unknown-dataset-name", train("imbd"), 2, ("imbd", "imdb")),
    Cli("train-hub-source-without-id", train("hf:"), 2, ("hf:",)),
    Cli("train-file-options-on-named-dataset", train("trec", "--delimiter", ";"), 2, ("delimiter", "trec")),
    # ---------------------------------------------------------------- options: must fail
    Cli("train-on-bad-record-bogus", train("tiny.csv", "--on-bad-record", "ignore"), 2, ("on-bad-record", "ignore")),
    Cli("train-format-bogus", train("tiny.csv", "--format", "xml"), 2, ("format", "xml")),
    Cli("train-unknown-preset", ("train", "--model", "kim-cnn-nonstatc", "--data", "tiny.csv"), 2,
        ("kim-cnn-nonstatc", "kim-cnn-nonstatic")),
    Cli("train-set-unknown-key", train("tiny.csv", "--set", "nonsense_param=3"), 2, ("nonsense_param",)),
    Cli("train-set-not-key-value", train("tiny.csv", "--set", "epochs"), 2, ("--set", "epochs")),
    Cli("train-set-value-wrong-type", train("tiny.csv", "--set", "epochs=many", model=N[:2]), 2, ("epochs", "many")),
    Cli("train-set-repeats-an-option", train("tiny.csv", "--set", "epochs=2", model=N), 2, ("epochs",)),
    Cli("train-set-value-out-of-range", train("tiny.csv", "--set", "weight_decay=5", model=N), 2, ("weight_decay",)),
    Cli("train-set-empty-key", train("tiny.csv", "--set", "=3"), 2, (("--set", "parameter ''"),)),
    Cli("train-negative-epochs", train("tiny.csv", "--epochs", "-1", model=N[:2]), 2, ("epochs",)),
    Cli("train-epochs-not-a-number", train("tiny.csv", "--epochs", "two"), 2, ("--epochs",)),
    Cli("train-lr-zero", train("tiny.csv", "--lr", "0", model=N), 2, (("lr", "learning rate"),)),
    Cli("train-lr-nan", train("tiny.csv", "--lr", "nan", model=N), 2, (("lr", "learning rate"),)),
    Cli("train-batch-size-zero", train("tiny.csv", "--batch-size", "0", model=N), 2, (("batch_size", "batch-size"),)),
    Cli("train-precision-bogus", train("tiny.csv", "--precision", "fp8", model=N), 2, ("fp8",)),
    Cli("train-device-bogus", train("tiny.csv", "--device", "tpu", model=N), 2, ("tpu",)),
    Cli("train-device-cuda-without-gpu", train("tiny.csv", "--device", "cuda", model=N), 2, ("cuda",), setup=no_gpu),
    Cli("train-embeddings-file-missing", train("tiny.csv", "--embeddings", "vectors.txt", "--model", "kim-cnn-static",
                                              model=("--epochs", "1", "--no-progress")), 2, ("vectors.txt",)),
    Cli("train-test-fraction-1.5", train("tiny.csv", "--test-fraction", "1.5"), 2, (("test_fraction", "test-fraction"),)),
    Cli("train-test-fraction-zero", train("tiny.csv", "--test-fraction", "0"), 2, (("test_fraction", "test-fraction"),)),
    Cli("train-max-per-split-zero", train("tiny.csv", "--max-per-split", "0"), 2, (("max_per_split", "max-per-split"),)),
    Cli("train-unknown-option", ("train", "--no-such-option"), 2, ("--no-such-option",)),
    Cli("unknown-command", ("trian",), 2, ("trian",)),
    # ---------------------------------------------------------------- run folders
    Cli("train-run-dir-exists", train("tiny.csv", "--run-dir", "taken"), 2, ("taken",), {"taken/keep.txt": "mine"},
        check=lambda ctx, out, err: assert_kept(ctx.tmp / "taken" / "keep.txt", "mine")),
    Cli("train-run-dir-under-a-file", train("tiny.csv", "--run-dir", "tiny.csv/run"), 2, ("tiny.csv/run",)),
    Cli("train-resume-without-interrupted-run", train("tiny.csv", "--run-dir", "fresh", "--resume"), 2,
        ("fresh.partial",)),
    Cli("train-run-dir-locked-by-another-training",
        train("big.csv", "--run-dir", "locked", "--resume", model=N), 2,
        ("locked", ("in use", "another", "lock", "running")), setup=rival_training, leftovers_ok=True),
    Cli("train-interrupted-by-ctrl-c", train("tiny.csv"), 130, ("interrupted",),
        setup=interrupt_in("load_dataset", KeyboardInterrupt)),
    Cli("train-eof-error-is-not-ctrl-c", train("tiny.csv"), 2, (), refuse=("interrupted",),
        setup=interrupt_in("load_dataset", EOFError)),
    # ---------------------------------------------------------------- inputs that must WORK
    Cli("works-train-crlf-csv", train("crlf.csv", "--run-dir", "out"), 0, ("accuracy",),
        {"crlf.csv": csv_text(eol="\r\n")}, check=labels_of("out", ["neg", "pos"])),
    Cli("works-train-csv-with-bom", train("bom.csv", "--run-dir", "out"), 0, ("accuracy",),
        {"bom.csv": "\ufeff" + TINY_CSV}, check=labels_of("out", ["neg", "pos"])),
    Cli("works-train-numbers-as-texts-and-labels", train("numbers.csv", "--run-dir", "out"), 0, ("accuracy",),
        {"numbers.csv": "text,label\n" + "".join(f"{1000 + i} {2000 + i % 2 * 10},{1 + i % 2}\n" for i in range(40))},
        check=labels_of("out", ["1", "2"])),
    Cli("works-train-tsv-with-stray-quotes", train("quotes.tsv", "--run-dir", "out"), 0, ("accuracy",),
        {"quotes.tsv": "label\ttext\n" + "".join(f'{c}\tthe "{t}\n' for t, c in rows())},
        check=labels_of("out", ["neg", "pos"])),
    Cli("works-train-unexpected-header-with-columns-named",
        train("weird.csv", "--text-column", "review_text", "--label-column", "polarity", "--run-dir", "out"), 0,
        ("accuracy",), {"weird.csv": csv_text(header="review_text,polarity")}, check=labels_of("out", ["neg", "pos"])),
    Cli("works-train-utf16-with-bom", train("utf16.csv", "--run-dir", "out"), 0, ("accuracy",),
        {"utf16.csv": TINY_CSV.encode("utf-16")}, check=labels_of("out", ["neg", "pos"])),
    Cli("works-train-utf16-with-encoding", train("utf16.csv", "--encoding", "utf-16", "--run-dir", "out"), 0,
        ("accuracy",), {"utf16.csv": TINY_CSV.encode("utf-16")}, check=labels_of("out", ["neg", "pos"])),
    Cli("works-train-skip-bad-record", train("notext.csv", "--on-bad-record", "skip"), 0, ("skipped 1", "notext.csv:7"),
        {"notext.csv": with_line(TINY_CSV, 7, ",pos")}),
    Cli("works-train-multilabel-jsonl", train("multi.jsonl", "--run-dir", "out"), 0, ("accuracy",),
        {"multi.jsonl": jsonl_text([{"text": t, "labels": [c] if i % 3 else [c, "film"]}
                                    for i, (t, c) in enumerate(rows())])},
        check=labels_of("out", ["film", "neg", "pos"])),
    Cli("works-train-5mb-single-document", train("huge.csv", model=N), 0, ("truncat",),
        {"huge.csv": TINY_CSV + f"{BIG_TEXT},pos\n"}),
    # ---------------------------------------------------------------- evaluate
    Cli("evaluate-no-such-run", ("evaluate", "no/such/run", "--data", "tiny.csv"), 2, ("no/such/run",)),
    Cli("evaluate-run-is-a-file", ("evaluate", "tiny.csv", "--data", "tiny.csv"), 2, ("tiny.csv",)),
    Cli("evaluate-missing-data-option", ("evaluate", "{run}"), 2, ("--data",)),
    Cli("evaluate-missing-config", ("evaluate", "r", "--data", "tiny.csv"), 2, ("config.json",),
        setup=broken("run", remove("config.json"))),
    Cli("evaluate-corrupt-config", ("evaluate", "r", "--data", "tiny.csv"), 2, ("config.json",),
        setup=broken("run", write_file("config.json", '{"model": "tfidf-lr", "kind": '))),
    Cli("evaluate-config-is-null", ("evaluate", "r", "--data", "tiny.csv"), 2, ("config.json",),
        setup=broken("run", write_file("config.json", "null"))),
    Cli("evaluate-config-missing-key", ("evaluate", "r", "--data", "tiny.csv"), 2, ("config.json", "label_names"),
        setup=broken("run", edit_config(lambda c: c.pop("label_names")))),
    Cli("evaluate-config-newer-format", ("evaluate", "r", "--data", "tiny.csv"), 2, ("config.json", "upgrade"),
        setup=broken("run", edit_config(lambda c: c.update(format_version=99)))),
    Cli("evaluate-config-unknown-family", ("evaluate", "r", "--data", "tiny.csv"), 2, ("config.json", "no-such-family"),
        setup=broken("run", edit_config(lambda c: c.update(family="no-such-family")))),
    # A run is rebuilt from its family and architecture: a preset renamed (or removed) since loads.
    Cli("works-evaluate-config-renamed-preset", ("evaluate", "r", "--data", "tiny.csv"), 0, ("no-such-preset",),
        setup=broken("run", edit_config(lambda c: c.update(model="no-such-preset", name="no-such-preset")))),
    Cli("evaluate-missing-weights", ("evaluate", "r", "--data", "tiny.csv"), 2, ("model.safetensors",),
        setup=broken("run", remove("model.safetensors"))),
    Cli("evaluate-truncated-weights", ("evaluate", "r", "--data", "tiny.csv"), 2, ("model.safetensors",),
        setup=broken("run", truncate_weights)),
    Cli("evaluate-flipped-bits-in-weights", ("evaluate", "r", "--data", "tiny.csv"), 2,
        ("model.safetensors", ("checksum", "sha256", "corrupt", "changed")), setup=broken("run", flip_bits)),
    Cli("evaluate-nan-weights", ("evaluate", "r", "--data", "tiny.csv"), 2, ("model.safetensors", "nan"),
        setup=broken("run", nan_weights)),
    Cli("evaluate-wrong-shapes-in-weights", ("evaluate", "r", "--data", "tiny.csv"), 2, ("model.safetensors",),
        setup=broken("run", wrong_shape_weights)),
    Cli("evaluate-neural-wrong-shapes-in-weights", ("evaluate", "r", "--data", "tiny.csv"), 2, ("model.safetensors",),
        setup=broken("nrun", wrong_shape_weights)),
    Cli("evaluate-missing-tokenizer", ("evaluate", "r", "--data", "tiny.csv"), 2, ("tokenizer.json",),
        setup=broken("nrun", remove("tokenizer.json"))),
    # Predictor's own load: until stop 63 the message held the path twice ("cannot load the tokenizer (<path> is ...").
    Cli("predict-corrupt-tokenizer", ("predict", "r", "good film"), 2, ("tokenizer.json", "corrupt"),
        setup=broken("nrun", write_file("tokenizer.json", '{"version": "1.0"}')), refuse=("cannot load the tokenizer",)),
    Cli("evaluate-corrupt-tokenizer", ("evaluate", "r", "--data", "tiny.csv"), 2, ("tokenizer.json",),
        setup=broken("nrun", write_file("tokenizer.json", '{"version": "1.0", "model": {'))),
    Cli("evaluate-unknown-split", ("evaluate", "{run}", "--data", "tiny.csv", "--split", "validation"), 2,
        ("validation",)),
    Cli("evaluate-label-the-model-does-not-know", ("evaluate", "{run}", "--data", "surprise.csv"), 2,
        ("surprise.csv", "meh"), {"surprise.csv": csv_text(30, classes=("pos", "neg", "meh"))}),
    Cli("evaluate-no-such-data-file", ("evaluate", "{run}", "--data", "missing.csv"), 2, ("missing.csv",)),
    Cli("evaluate-max-per-split-zero", ("evaluate", "{run}", "--data", "tiny.csv", "--max-per-split", "0"), 2,
        (("max_per_split", "max-per-split"),)),
    Cli("evaluate-output-is-a-folder", ("evaluate", "{run}", "--data", "tiny.csv", "--output", "outdir"), 2,
        ("outdir",), {"outdir/": ""}, refuse=(".tmp",)),
    Cli("evaluate-confusion-png-under-a-file", ("evaluate", "{run}", "--data", "tiny.csv", "--confusion-png",
                                                "tiny.csv/cm.png"), 2, ("tiny.csv/cm.png",), refuse=(".tmp",)),
    Cli("works-evaluate-data-file-whole", ("evaluate", "{run}", "--data", "eval.csv"), 0, ("40 documents",),
        {"eval.csv": csv_text(40)}),
    Cli("works-evaluate-data-file-reader-options",
        ("evaluate", "{run}", "--data", "eval.txt", "--format", "tsv", "--no-header", "--label-column", "0",
         "--text-column", "1"), 0, ("30 documents",), {"eval.txt": tsv_text(30)}),
    Cli("works-evaluate-neural-run", ("evaluate", "{nrun}", "--data", "eval.csv"), 0, ("40 documents",),
        {"eval.csv": csv_text(40)}),
    Cli("evaluate-multi-label-data-on-single-label-run", ("evaluate", "{nrun}", "--data", "multi.jsonl"), 2,
        ("multi.jsonl", "single-label", "a list of labels"),
        {"multi.jsonl": jsonl_text([{"text": t, "labels": [c]} for t, c in rows()])}),
    # ---------------------------------------------------------------- predict
    Cli("predict-no-such-run", ("predict", "no/such/run", "good film"), 2, ("no/such/run",)),
    Cli("predict-run-missing-weights", ("predict", "r", "good film"), 2, ("model.safetensors",),
        setup=broken("nrun", remove("model.safetensors"))),
    Cli("predict-flipped-bits-in-neural-weights", ("predict", "r", "good film"), 2,
        ("model.safetensors", ("checksum", "sha256", "corrupt", "changed")), setup=broken("nrun", flip_bits)),
    Cli("predict-nan-neural-weights", ("predict", "r", "good film"), 2, ("model.safetensors", "nan"),
        setup=broken("nrun", nan_weights)),
    Cli("predict-file-missing", ("predict", "{run}", "--file", "nosuch.txt"), 2, ("nosuch.txt",)),
    Cli("predict-file-is-a-folder", ("predict", "{run}", "--file", "folder"), 2, ("folder",), {"folder/": ""}),
    Cli("predict-file-not-utf8", ("predict", "{run}", "--file", "latin.txt"), 2, (("latin.txt:2", "line 2"),),
        {"latin.txt": "good film\ncaf\xe9 tr\xe8s bon\n".encode("latin-1")}),
    Cli("predict-file-blank-line", ("predict", "{run}", "--file", "texts.txt"), 2, (("texts.txt:2", "line 2"),),
        {"texts.txt": "good film\n\nbad film\n"}),
    # Arguments count from 1, as explain's do (it once said "text 1", the list index).
    Cli("predict-empty-argument", ("predict", "{run}", "good film", "   "), 2, ("text 2 is only whitespace",)),
    # Python keeps a byte of argv that is not UTF-8 as a lone surrogate; tfidf-lr predicted it.
    Cli("predict-argument-not-utf8", ("predict", "{run}", "good film", "caf\udce9"), 2,
        ("text 2", "byte 0xe9", "not utf-8", "iconv"), check=no_output),
    Cli("predict-stdin-nul-bytes", ("predict", "{run}"), 2, ("stdin", ("nul", "binary", "\\x00", "null")),
        stdin=b"good film\nbad\x00\x00film\n"),
    Cli("predict-stdin-not-utf8", ("predict", "{run}"), 2, ("stdin", ("line 2", ":2")),
        stdin=b"good film\ncaf\xe9\n"),
    Cli("works-predict-stdin-empty", ("predict", "{run}"), 0, (), stdin=b"", check=no_output),
    Cli("works-predict-file-crlf", ("predict", "{run}", "--file", "crlf.txt"), 0, ("good film",),
        {"crlf.txt": b"good film\r\nbad film\r\n"}, check=predicted_texts(["good film", "bad film"])),
    Cli("works-predict-file-dash-is-stdin", ("predict", "{run}", "--file", "-"), 0, ("good film",),
        stdin=b"good film\nbad film", check=predicted_texts(["good film", "bad film"])),
    Cli("works-predict-neural-stdin", ("predict", "{nrun}"), 0, ("probabilities",), stdin=b"good film\nbad film\n",
        check=predicted_texts(["good film", "bad film"])),
    # ---------------------------------------------------------------- benchmark and list-*
    Cli("benchmark-unknown-suite", ("benchmark", "--suite", "no-such-suite", "--output-dir", "out"), 2,
        ("no-such-suite",)),
    Cli("benchmark-suite-not-toml", ("benchmark", "--suite", "bad.toml", "--output-dir", "out"), 2, ("bad.toml",),
        {"bad.toml": "[suite\nname = "}),
    Cli("benchmark-suite-without-entries", ("benchmark", "--suite", "empty.toml", "--output-dir", "out"), 2,
        ("empty.toml", "entry"), {"empty.toml": '[suite]\nname = "empty"\ndescription = "none"\n'}),
    Cli("benchmark-threads-zero", ("benchmark", "--suite", "s.toml", "--threads", "0", "--output-dir", "out",
                                   "--no-progress"), 2, ("threads",), {"s.toml": suite_toml()}),
    Cli("benchmark-only-one-name-misspelt", ("benchmark", "--suite", "s.toml", "--only", "tfidf-lr", "--only", "tfidf-lrr",
                                             "--output-dir", "out"), 2, ("--only tfidf-lrr",),
        {"s.toml": suite_toml(model="tfidf-lr")}, check=lambda ctx, out, err: assert_absent(ctx.tmp / "out")),
    Cli("benchmark-seed-not-in-the-suite", ("benchmark", "--suite", "s.toml", "--seed", "0", "--seed", "99",
                                            "--output-dir", "out"), 2, ("--seed 99",),
        {"s.toml": suite_toml(model="tfidf-lr")}, check=lambda ctx, out, err: assert_absent(ctx.tmp / "out")),
    Cli("benchmark-merge-without-a-full-report", ("benchmark", "--suite", "s.toml", "--only", "tfidf-lr", "--merge",
                                                  "--output-dir", "out"), 2, ("no full report",),
        {"s.toml": suite_toml(model="tfidf-lr")}, check=lambda ctx, out, err: assert_absent(ctx.tmp / "out")),
    Cli("benchmark-seed-out-of-range", ("benchmark", "--suite", "s.toml", "--output-dir", "out"), 2, ("seeds",),
        {"s.toml": suite_toml(model="tfidf-lr", defaults="[defaults]\nseeds = [-1]\n")}),
    Cli("benchmark-unknown-parameter-fails-before-any-run", ("benchmark", "--suite", "s.toml", "--output-dir", "out"),
        2, ("tiny.csv:tfidf-lr", "no_such_parameter"),
        {"s.toml": suite_toml(model="tfidf-lr", overrides="{no_such_parameter = 1}")},
        check=lambda ctx, out, err: assert_absent(ctx.tmp / "out")),
    Cli("benchmark-merge-from-with-a-run-option", ("benchmark", "--merge-from", "parts", "--output-dir", "out",
                                                   "--threads", "2"), 2, ("--merge-from", "--threads"), {"parts/": ""}),
    Cli("benchmark-verdicts-with-a-run-option", ("benchmark", "--verdicts", "--seed", "3"), 2, ("--verdicts", "--seed")),
    Cli("benchmark-paper-table-names-another-dataset", ("benchmark", "--suite", "s.toml", "--output-dir", "out"), 2,
        ("paper", "'mr'", "tiny.csv"),
        {"s.toml": suite_toml(model="tfidf-lr") + 'paper = {mr = 80.0}\npaper_source = "a table"\n'}),
    Cli("benchmark-notes-not-text", ("benchmark", "--suite", "s.toml", "--output-dir", "out"), 2, ("notes",),
        {"s.toml": suite_toml(model="tfidf-lr") + "notes = 5\n"}),
    Cli("benchmark-only-matches-nothing", ("benchmark", "--suite", "s.toml", "--only", "nomatch", "--output-dir",
                                           "out"), 2, ("nomatch",), {"s.toml": suite_toml()}),
    Cli("benchmark-render-a-damaged-report-writes-nothing", ("benchmark", "--suite", "kv.toml", "--render",
                                                            "--output-dir", "out"), 2,
        ("out/kim_vectors.json", "cannot be shown", "git checkout"), setup=damaged_committed_report,
        check=damaged_report_kept),
    Cli("benchmark-render-without-results", ("benchmark", "--suite", "s.toml", "--render", "--output-dir", "out"), 2,
        ("mysuite",), {"s.toml": suite_toml()}),
    Cli("benchmark-default-output-keeps-benchmarks-results", ("benchmark", "--suite", "s.toml", "--no-progress"), 1,
        ("header.csv:tfidf-lr", "failed"), {"s.toml": suite_toml(model="tfidf-lr", dataset="header.csv"),
                                             "header.csv": "text,label\n"},
        setup=existing_report, check=report_kept),
    Cli("benchmark-unknown-model-fails-before-any-run", ("benchmark", "--suite", "s.toml", "--output-dir", "out"), 2,
        ("s.toml", "tiny.csv:no-such-model", "unknown model"), {"s.toml": suite_toml()},
        check=lambda ctx, out, err: assert_absent(ctx.tmp / "out")),
    Cli("benchmark-unknown-dataset-fails-before-any-run", ("benchmark", "--suite", "s.toml", "--output-dir", "out"), 2,
        ("s.toml", "nosuchdata"), {"s.toml": suite_toml(model="tfidf-lr", dataset="nosuchdata")},
        check=lambda ctx, out, err: assert_absent(ctx.tmp / "out")),
    Cli("benchmark-suite-is-a-folder", ("benchmark", "--suite", "s.toml", "--output-dir", "out"), 2,
        ("s.toml", "folder"), {"s.toml/": ""}),
    Cli("benchmark-bad-seeds-in-defaults", ("benchmark", "--suite", "s.toml", "--output-dir", "out"), 2,
        ("[defaults]", "seeds"), {"s.toml": suite_toml(defaults='[defaults]\nseeds = "zero"\n')}),
    Cli("list-models-extra-argument", ("list-models", "extra"), 2, ("extra",)),
    Cli("list-datasets-unknown-option", ("list-datasets", "--bogus"), 2, ("--bogus",)),
]


# ---------------------------------------------------------------------------------------
# The Python API corpus


@dataclass(frozen=True)
class Api:
    id: str
    call: Callable[[Ctx], Any]
    error: type | None  # None: the call must work (then ``check`` its result)
    expect: tuple = ()
    index: int | None = None  # TextclsError.index: the bad text's / label's position
    files: dict = field(default_factory=dict)
    check: Callable[[Any], None] | None = None


def _not_fitted() -> type:
    from sklearn.exceptions import NotFittedError

    return NotFittedError


TEXTS = [t for t, _ in rows(20)]
LABELS = [c for _, c in rows(20)]


def class_named_pos(ds) -> None:
    assert ds.label_names == ["pos"], ds.label_names  # the stem, not the suffix 'txt'


def pd_frame(columns: dict):
    import pandas as pd

    return pd.DataFrame(columns)


def hf_dataset(columns: dict):
    import datasets

    return datasets.Dataset.from_dict(columns)


def fit(X, y, model="tfidf-lr", **kw):
    return lambda ctx: textcls.Classifier(model, **kw).fit(X, y)


def loaded(which: str, method: str, *args, **kwargs):
    return lambda ctx: getattr(textcls.Classifier.from_pretrained(ctx.trained[which]), method)(*args, **kwargs)


def evaluate_on_single_labels(ctx: Ctx):
    import datasets

    clf = textcls.Classifier("tfidf-lr").fit(TEXTS, [[c] if i % 3 else [c, "film"] for i, c in enumerate(LABELS)])
    return clf.evaluate(datasets.Dataset.from_dict({"text": TEXTS, "label": LABELS}))


def unfitted(method: str, *args):
    return lambda ctx: getattr(textcls.Classifier("tfidf-lr"), method)(*args)


def from_broken(which: str, mutate):
    def call(ctx: Ctx):
        run = ctx.copy_run(which, "r")
        mutate(run)
        return textcls.Classifier.from_pretrained(run)
    return call


def nan_after_load(ctx: Ctx):
    import torch

    clf = textcls.Classifier.from_pretrained(ctx.trained["nrun"])
    with torch.no_grad():
        for p in clf.model_.parameters():
            p.fill_(float("nan"))
    return clf.predict_proba(["good film", "bad film"])


def load(source, **kw):
    return lambda ctx: textcls.load_dataset(source, **kw)


def with_label(i: int, value) -> list:
    y = list(LABELS)
    y[i] = value
    return y


def with_text(i: int, value) -> list:
    X = list(TEXTS)
    X[i] = value
    return X


def clean_labels(ds) -> None:
    assert ds.label_names == ["neg", "pos"], ds.label_names
    texts = [t for split in ds.splits.values() for t in split["text"]]
    assert len(texts) == 40 and not any("\r" in t or "\ufeff" in t for t in texts)


API_CASES = [
    # ---------------------------------------------------------------- fit
    Api("fit-none-label", fit(TEXTS, with_label(3, None)), TextclsError, ("label",), index=3),
    Api("fit-nan-label", fit(TEXTS, with_label(2, float("nan"))), TextclsError, ("label",), index=2),
    Api("fit-empty-string-label", fit(TEXTS, with_label(1, "")), TextclsError, ("label",), index=1),
    Api("fit-labels-mix-lists-and-names", fit(TEXTS, [["pos"], "neg"] + [[c] for c in LABELS[2:]]), TextclsError,
        ("label",), index=1),
    Api("fit-empty-text", fit(with_text(4, ""), LABELS), TextclsError, ("text",), index=4),
    Api("fit-number-as-text", fit(with_text(0, 12345), LABELS), TextclsError, ("text",), index=0),
    Api("fit-bare-string-as-texts", fit("good film", LABELS[:9]), TextclsError, (("list", "sequence", "string"),)),
    Api("fit-length-mismatch", fit(TEXTS, LABELS[:5]), TextclsError, ("20", "5")),
    Api("fit-no-texts", fit([], []), TextclsError, ("text",)),
    Api("fit-one-class-only", fit(TEXTS, ["pos"] * 20), TextclsError, ("class",)),
    Api("fit-multi-label-every-record-the-same-classes", fit(TEXTS[:20], [["pos", "neg"]] * 20), TextclsError,
        ("same classes", "neg, pos")),
    Api("fit-bytes-labels", fit(TEXTS, [b"pos", b"neg"] * 10), TextclsError, ("bytes", "decode"), index=0),
    Api("fit-infinite-label", fit(TEXTS, LABELS[:5] + [float("inf")] + LABELS[6:]), TextclsError, ("inf",), index=5),
    Api("fit-bool-and-int-labels-would-merge", fit(TEXTS, [True, 1] * 10), TextclsError, ("bool", "int"), index=1),
    Api("fit-int-and-float-labels-would-merge", fit(TEXTS, [1, 1.0] * 10), TextclsError, ("int", "float"), index=1),
    Api("fit-multi-label-int-and-str-names-would-merge", fit(TEXTS, [[1, "1"]] + [["neg"]] * 19), TextclsError,
        ("int", "str"), index=0),
    Api("fit-multi-label-all-empty", fit(TEXTS, [[]] * 20), TextclsError, ("label 0 is an empty list (missing)",),
        index=0),
    Api("fit-dataset-not-a-dataset", lambda ctx: textcls.Classifier("tfidf-lr").fit_dataset(TEXTS), TextclsError,
        ("TextDataset", "fit(X, y)")),
    Api("fit-dataset-run-dir-under-a-file",
        lambda ctx: textcls.Classifier("tfidf-lr").fit_dataset(textcls.load_dataset("tiny.csv"), run_dir="tiny.csv/r"),
        TextclsError, ("run_dir", "tiny.csv", "not a folder")),
    Api("evaluate-single-label-data-on-multi-label-model", evaluate_on_single_labels, TextclsError,
        ("multi-label", "one label")),
    Api("fit-device-cuda-without-gpu", fit(TEXTS, LABELS, model="fasttext-bag-unigram", device="cuda"), TextclsError,
        ("device", "no CUDA GPU")),
    Api("fit-unknown-model", fit(TEXTS, LABELS, model="kim-cnn-nonstatc"), TextclsError, ("kim-cnn-nonstatic",)),
    Api("fit-unknown-param", fit(TEXTS, LABELS, params={"bogus_param": 1}), TextclsError, ("bogus_param",)),
    Api("fit-negative-epochs", fit(TEXTS, LABELS, model="fasttext-bag-unigram", epochs=-1), TextclsError,
        ("epochs",)),
    Api("fit-lr-zero", fit(TEXTS, LABELS, model="fasttext-bag-unigram", lr=0), TextclsError, ("lr",)),
    Api("fit-device-bogus", fit(TEXTS, LABELS, model="fasttext-bag-unigram", epochs=1, device="tpu"), TextclsError,
        ("tpu",)),
    # ---------------------------------------------------------------- unfitted
    Api("unfitted-predict", unfitted("predict", ["good film"]), _not_fitted(), ("fit",)),
    Api("unfitted-predict-proba", unfitted("predict_proba", ["good film"]), _not_fitted(), ("fit",)),
    Api("unfitted-save-pretrained", unfitted("save_pretrained", "somewhere"), _not_fitted(), ("fit",)),
    # ---------------------------------------------------------------- predict
    Api("predict-bare-string", loaded("run", "predict", "a good film"), TextclsError,
        (("list", "sequence", "string"),)),
    Api("predict-proba-bare-string", loaded("nrun", "predict_proba", "a good film"), TextclsError,
        (("list", "sequence", "string"),)),
    Api("predict-empty-text", loaded("run", "predict", ["good film", ""]), TextclsError, ("text",), index=1),
    Api("predict-whitespace-text", loaded("nrun", "predict", ["good film", "bad film", " \t\n "]), TextclsError,
        ("text",), index=2),
    Api("predict-none-text", loaded("run", "predict", [None]), TextclsError, ("text",), index=0),
    Api("predict-number-text", loaded("run", "predict", ["good film", 3.5]), TextclsError, ("text",), index=1),
    Api("predict-a-set-has-no-order", loaded("run", "predict", {"good film", "bad film"}), TextclsError, ("set", "order")),
    Api("predict-a-dataframe", loaded("run", "predict", pd_frame({"text": ["good film", "bad film", "fine film"]})),
        TextclsError, ("DataFrame", "df['text']")),
    Api("fit-texts-a-set", fit({f"film {i}" for i in range(4)}, ["pos", "neg"] * 2), TextclsError, ("set", "order")),
    Api("score-length-mismatch", loaded("run", "score", ["good film", "bad film", "dull film"], ["pos", "neg"]),
        TextclsError, ("3 texts", "2 labels")),
    Api("score-unknown-label", loaded("run", "score", ["good film", "bad film"], ["pos", "meh"]), TextclsError,
        ("'meh'", "does not know"), index=1),
    Api("score-nothing", loaded("run", "score", [], []), TextclsError, ("0 texts",)),
    Api("score-labels-none", loaded("run", "score", ["good film"], None), TextclsError, ("y",)),
    Api("evaluate-a-list", loaded("run", "evaluate", ["good film"]), TextclsError, ("datasets.Dataset", "score(X, y)")),
    Api("evaluate-without-a-text-column", lambda ctx: textcls.Classifier.from_pretrained(ctx.trained["run"]).evaluate(
        hf_dataset({"sentence": ["good film"], "label": ["pos"]})), TextclsError, ("'text'", "sentence")),
    Api("classifier-model-none", fit(TEXTS, LABELS, model=None), TextclsError, ("model", "None")),
    Api("classifier-seed-negative", fit(TEXTS, LABELS, seed=-1), TextclsError, ("seed",)),
    Api("classifier-params-not-a-dict", fit(TEXTS, LABELS, params="dropout"), TextclsError, ("params",)),
    Api("classifier-progress-not-a-bool", fit(TEXTS, LABELS, progress="yes"), TextclsError, ("progress",)),
    Api("classifier-device-unknown-on-a-classic-model", fit(TEXTS, LABELS, device="tpu"), TextclsError,
        ("device", "tpu")),
    Api("classifier-set-params-unknown", lambda ctx: textcls.Classifier("tfidf-lr").set_params(bogus=1), TextclsError,
        ("bogus",)),
    Api("create-model-nan-vectors", lambda ctx: create_model("kim-cnn-static", num_classes=2,
                                                           embeddings=np.full((10, 50), np.nan)), TextclsError,
        ("row 1", "nan")),
    Api("predict-tasks-on-single-task-model", loaded("run", "predict", ["good film"], tasks=["books"]), TextclsError,
        ("tasks",)),
    Api("predict-non-finite-probabilities", nan_after_load, TextclsError, (("nan", "finite"),)),
    # ---------------------------------------------------------------- from_pretrained
    Api("from-pretrained-no-such-dir", lambda ctx: textcls.Classifier.from_pretrained("no/such/run"), TextclsError,
        ("no/such/run",)),
    Api("from-pretrained-flipped-bits", from_broken("run", flip_bits), TextclsError, ("model.safetensors",)),
    Api("from-pretrained-nan-weights", from_broken("nrun", nan_weights), TextclsError, ("model.safetensors", "nan")),
    Api("from-pretrained-truncated-weights", from_broken("nrun", truncate_weights), TextclsError,
        ("model.safetensors",)),
    Api("from-pretrained-newer-format", from_broken("run", edit_config(lambda c: c.update(format_version=99))),
        TextclsError, ("config.json", "upgrade")),
    Api("from-pretrained-missing-tokenizer", from_broken("nrun", remove("tokenizer.json")), TextclsError,
        ("tokenizer.json",)),
    Api("from-pretrained-config-is-a-list", from_broken("run", write_file("config.json", "[1, 2]")), TextclsError,
        ("config.json",)),
    Api("from-pretrained-none", lambda ctx: textcls.Classifier.from_pretrained(None), TextclsError, ("run_dir",)),
    Api("from-pretrained-format-version-not-a-number",
        from_broken("run", edit_config(lambda c: c.update(format_version="2"))), TextclsError,
        ("config.json", "format_version")),
    Api("from-pretrained-recipe-not-an-object", from_broken("nrun", edit_config(lambda c: c.update(recipe="x"))),
        TextclsError, ("config.json", "recipe")),
    Api("from-pretrained-fewer-label-names-than-the-model-has",
        from_broken("nrun", edit_config(lambda c: c.update(label_names=c["label_names"][:1],
                                                         label_values=c["label_values"][:1]))),
        TextclsError, ("config.json", "1 classes", "2 classes")),
    Api("from-pretrained-label-names-twice",
        from_broken("run", edit_config(lambda c: c.update(label_names=[c["label_names"][0]] * 2))), TextclsError,
        ("config.json", "distinct")),
    Api("from-pretrained-multi-label-not-a-bool", from_broken("nrun", edit_config(lambda c: c.update(multi_label="yes"))),
        TextclsError, ("config.json", "multi_label")),
    # ---------------------------------------------------------------- save_pretrained and export_onnx
    Api("save-pretrained-to-a-file", loaded("nrun", "save_pretrained", "tiny.csv"), TextclsError,
        ("tiny.csv", "not a folder")),
    Api("save-pretrained-under-a-file", loaded("run", "save_pretrained", "tiny.csv/run"), TextclsError,
        ("tiny.csv", "not a folder")),
    Api("save-pretrained-empty-path", loaded("run", "save_pretrained", ""), TextclsError, ("run_dir",)),
    Api("save-pretrained-none", loaded("run", "save_pretrained", None), TextclsError, ("run_dir",)),
    Api("export-onnx-none-output", lambda ctx: export_onnx(ctx.trained["nrun"], None), TextclsError,
        ("out_path",)),
    Api("export-onnx-output-under-a-file", lambda ctx: export_onnx(ctx.trained["nrun"], "tiny.csv/onnx"),
        TextclsError, ("tiny.csv", "not a folder")),
    # ---------------------------------------------------------------- load_dataset
    Api("load-dataset-unknown-name", load("imbd"), TextclsError, ("imbd", "imdb")),
    Api("load-dataset-test-fraction-1.5", load("tiny.csv", test_fraction=1.5), TextclsError, ("test_fraction",)),
    Api("load-dataset-max-per-split-zero", load("tiny.csv", max_per_split=0), TextclsError, ("max_per_split",)),
    Api("load-dataset-on-bad-record-bogus", load("tiny.csv", on_bad_record="bogus"), TextclsError,
        ("on_bad_record",)),
    Api("load-dataset-format-bogus", load("tiny.csv", format="xml"), TextclsError, ("format", "xml")),
    Api("load-dataset-unknown-encoding", load("tiny.csv", encoding="klingon-8"), TextclsError, ("klingon-8",)),
    Api("load-dataset-unterminated-quote", load("quote.csv"), TextclsError, (("quote.csv:12", "line 12"),),
        files={"quote.csv": QUOTE_MERGES_RECORDS}),
    Api("load-dataset-truncated-gz", load("cut.jsonl.gz"), TextclsError, ("cut.jsonl.gz",),
        files={"cut.jsonl.gz": gz_truncated(jsonl_text(good_records(400)))}),
    Api("works-load-dataset-utf16-bom", load("utf16.csv"), None, files={"utf16.csv": TINY_CSV.encode("utf-16")},
        check=clean_labels),
    Api("load-dataset-directory-as-file-list", load(["tiny.csv", "folder"]), TextclsError, ("folder",),
        files={"folder/": ""}),
    Api("load-dataset-text-column-is-the-label-column", load("tiny.csv", text_columns="label", label_column="label"),
        TextclsError, ("label", "both")),
    Api("load-dataset-header-as-a-string", load("tiny.csv", header="no"), TextclsError, ("header", "true or false")),
    Api("load-dataset-split-seed-negative", load("tiny.csv", split_seed=-1), TextclsError, ("split_seed",)),
    Api("load-dataset-split-seed-a-string", load("tiny.csv", split_seed="3"), TextclsError, ("split_seed", "'3'")),
    Api("load-dataset-text-column-a-float", load("tiny.csv", text_columns=1.5), TextclsError, ("text_columns", "1.5")),
    Api("load-dataset-one-class-file-is-named-by-its-stem", load(["cls/pos.txt"]), None,
        files={"cls/pos.txt": "good film\ngreat film\nfine film\n"}, check=class_named_pos),
    Api("works-load-dataset-crlf", load("crlf.csv"), None, files={"crlf.csv": csv_text(eol="\r\n")},
        check=clean_labels),
    Api("works-load-dataset-bom", load("bom.csv"), None, files={"bom.csv": "\ufeff" + TINY_CSV}, check=clean_labels),
]


# ---------------------------------------------------------------------------------------
# Fixtures and runners


@pytest.fixture(scope="session")
def trained(tmp_path_factory) -> dict:
    """One tiny trained run of each kind, shared by every row (rows corrupt copies only)."""
    from textcls.cli import main

    root = tmp_path_factory.mktemp("bad_inputs_runs")
    data = root / "tiny.csv"
    data.write_text(TINY_CSV)
    out = {}
    for key, model in (("run", ("--model", "tfidf-lr")), ("nrun", ("--model", "fasttext-bag-unigram", "--epochs", "1"))):
        run_dir = root / key
        try:
            main(["train", *model, "--data", str(data), "--run-dir", str(run_dir), "--no-progress"])
        except SystemExit as exc:
            assert not exc.code, f"training the shared {key} failed with status {exc.code}"
        assert (run_dir / "config.json").is_file()
        out[key] = run_dir
    return out


def write_files(root: Path, files: dict) -> None:
    for name, content in files.items():
        path = root / name
        if name.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)


def run_cli(argv: list[str], stdin: bytes | None, capsys, monkeypatch) -> tuple[int, str, str]:
    """``textcls <argv>`` in this process: (exit status, stdout, stderr), as a shell would see them."""
    from textcls.cli import main

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin or b""), encoding="utf-8"))
    capsys.readouterr()
    tail = ""
    try:
        main(argv)
        status = 0
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            status = exc.code or 0
        else:
            status, tail = 1, f"{exc.code}\n"
    except BaseException:  # what escapes main() reaches the user as a traceback and status 1
        status, tail = 1, traceback.format_exc()
    captured = capsys.readouterr()
    return status, captured.out, captured.err + tail


def _log(case_id: str, **fields) -> None:
    path = os.environ.get("BAD_INPUTS_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"id": case_id, **fields}) + "\n")


def _matches(text: str, expect: tuple) -> list:
    """The expected substrings (or groups of alternatives) missing from ``text``."""
    low = text.lower()
    missing = []
    for item in expect:
        alternatives = item if isinstance(item, tuple) else (item,)
        if not any(a.lower() in low for a in alternatives):
            missing.append(item)
    return missing


def _leftover_runs(root: Path, argv: list[str]) -> list[str]:
    found = [p for p in (root / "runs").glob("*")] if (root / "runs").is_dir() else []
    found += [p for pattern in ("*.partial", "*.partial.lock") for p in root.rglob(pattern)]
    if "--run-dir" in argv:
        run_dir = root / argv[argv.index("--run-dir") + 1]
        if (run_dir / "config.json").exists() or (run_dir / "model.safetensors").exists():
            found.append(run_dir)
    return sorted(str(p.relative_to(root)) for p in found)


@pytest.mark.parametrize("case", CLI_CASES, ids=[c.id for c in CLI_CASES])
def test_cli_bad_input(case: Cli, trained, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    write_files(tmp_path, {"tiny.csv": TINY_CSV, **case.files})
    ctx = Ctx(tmp_path, trained, monkeypatch)
    argv = [a.replace("{run}", str(trained["run"])).replace("{nrun}", str(trained["nrun"])) for a in case.argv]
    try:
        if case.setup is not None:
            case.setup(ctx)
        status, out, err = run_cli(argv, case.stdin, capsys, monkeypatch)
    finally:
        for cleanup in reversed(ctx.cleanups):
            cleanup()
    lines = err.strip().splitlines()
    message = lines[0] if len(lines) == 1 else err.strip()[-600:]
    _log(case.id, expected=case.status, status=status, stderr=err.strip()[-1500:], stdout=out.strip()[-300:])
    shown = f"textcls {' '.join(case.argv)}\nstatus {status}, stderr:\n{err.strip()[-1500:]}\nstdout tail:\n{out[-400:]}"
    assert "Traceback" not in err, shown
    if case.status == 0:
        assert status == 0, shown
        assert not [l for l in lines if l.startswith("error:")], shown
        haystack = out + err
    else:
        assert status == case.status, shown
        assert len(lines) == 1 and lines[0].startswith("error: "), f"want one 'error: ' line\n{shown}"
        haystack = message
    missing = _matches(haystack, case.expect)
    assert not missing, f"message lacks {missing}\n{shown}"
    unwanted = [r for r in case.refuse if r.lower() in haystack.lower()]
    assert not unwanted, f"message holds {unwanted}\n{shown}"
    if case.argv[0] == "train" and case.status != 0 and not case.leftovers_ok:
        left = _leftover_runs(tmp_path, argv)
        assert not left, f"a failed train left run folders behind: {left}\n{shown}"
    if case.check is not None:
        case.check(ctx, out, err)


@pytest.mark.parametrize("case", API_CASES, ids=[c.id for c in API_CASES])
def test_api_bad_input(case: Api, trained, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_files(tmp_path, {"tiny.csv": TINY_CSV, **case.files})
    ctx = Ctx(tmp_path, trained, monkeypatch)
    if case.error is None:
        try:
            result = case.call(ctx)
        except BaseException as exc:
            _log(case.id, expected="works", raised=f"{type(exc).__name__}: {exc}")
            raise
        _log(case.id, expected="works", raised=None)
        if case.check is not None:
            case.check(result)
        return
    try:
        result = case.call(ctx)
    except BaseException as exc:  # noqa: BLE001 - the row says what it must be
        caught = exc
    else:
        _log(case.id, expected=case.error.__name__, raised=None, returned=repr(result)[:300])
        pytest.fail(f"no error; returned {repr(result)[:300]}")
    detail = f"{type(caught).__module__}.{type(caught).__name__}: {caught}"
    _log(case.id, expected=case.error.__name__, raised=detail, index=getattr(caught, "index", None))
    shown = "".join(traceback.format_exception(caught))[-2500:]
    assert isinstance(caught, case.error), f"want {case.error.__name__}, got\n{shown}"
    assert isinstance(caught, TextclsError) and isinstance(caught, ValueError), f"not a TextclsError:\n{shown}"
    assert "\n" not in str(caught), f"message is not one line: {caught!r}"
    missing = _matches(str(caught), case.expect)
    assert not missing, f"message lacks {missing}: {detail}"
    if case.index is not None:
        assert getattr(caught, "index", None) == case.index, f"want index={case.index}, got " \
            f"{getattr(caught, 'index', None)!r}: {detail}"


def test_the_corpus_is_large_and_ids_are_unique():
    ids = [c.id for c in CLI_CASES] + [c.id for c in API_CASES]
    assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1]
    assert len(ids) >= 70
