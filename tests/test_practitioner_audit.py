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


def test_class_folders_and_class_files_refuse_the_options_they_cannot_read(tmp_path, capsys):
    """--text-column, --label-column, --delimiter, --header, --task-column and --format jsonl on a
    folder of class folders (or of class files) were ignored: the run trained, rc 0, on a reading
    the user had not asked for."""
    folders, files = tmp_path / "folders", tmp_path / "files"
    for label, words in (("pos", "good fine"), ("neg", "bad poor")):
        for i in range(4):
            write(folders / label / f"{i}.txt", f"{words} {i}\n")
        write(files / f"{label}.txt", "".join(f"{words} {i}\n" for i in range(4)))
    layouts = {folders: "class folders (one folder of documents per class)",
               files: "class files (one file of documents a line per class)"}
    for source, layout in layouts.items():
        for keyword, value, flag in (("text_columns", ["body"], "--text-column"), ("label_column", "y", "--label-column"),
                                     ("delimiter", ";", "--delimiter"), ("header", True, "--header/--no-header"),
                                     ("task_column", "domain", "--task-column")):
            with pytest.raises(ConfigError) as err:
                load_dataset(str(source), **{keyword: value})
            assert str(err.value) == f"{source}: the option {keyword}= (CLI: {flag}) does not apply to {layout}; leave it out"
        read = load_dataset(str(source), task_column=None, encoding="latin-1")  # asks for nothing it lacks
        assert sum(map(len, read.splits.values())) == 8
    with pytest.raises(ConfigError) as err:
        load_dataset(str(folders), format="jsonl")
    assert str(err.value) == (f"{folders}: read as {layouts[folders]}, not as jsonl; leave out format= (CLI: --format) "
                              "or pass format='class-folders', or pass one jsonl file")
    with pytest.raises(ConfigError) as err:
        load_dataset(str(folders), format="class-files")
    assert str(err.value) == (f"{folders}: read as {layouts[folders]}, not as {layouts[files]}; leave out format= (CLI: "
                              "--format) or pass format='class-folders'")
    assert sum(map(len, load_dataset(str(folders), format="class-folders").splits.values())) == 8
    for source, option in ((folders, ["--text-column", "body"]), (files, ["--format", "jsonl"])):
        status, _, err = run_cli(["train", "-m", "tfidf-lr", "-d", str(source), *option, "--run-dir",
                                  str(tmp_path / "run")], capsys)
        assert status == 2 and err.startswith(f"error: {source}: ") and err.count("\n") == 1, err
        assert not (tmp_path / "run").exists()


def test_an_encoding_is_refused_where_nothing_is_decoded(tmp_path):
    """--encoding on a parquet file or an hf: dataset (UTF-8 strings, never decoded by textcls) was ignored."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    parquet = tmp_path / "d.parquet"
    pq.write_table(pa.table({"text": ["good", "bad", "fine", "poor"], "label": ["p", "n", "p", "n"]}), parquet)
    with pytest.raises(ConfigError) as err:
        load_dataset(str(parquet), encoding="latin-1")
    assert str(err.value) == f"{parquet}: the option encoding= (CLI: --encoding) does not apply to a parquet file; leave it out"
    with pytest.raises(ConfigError, match=r"^parameter 'encoding' applies to text files, not to 'hf:someone/x' "):
        load_dataset("hf:someone/x", encoding="latin-1")
    fasttext = write(tmp_path / "d.ft", "__label__p caf\u00e9 good\n__label__n bad\n__label__p fine\n__label__n poor\n")
    read = load_dataset(str(fasttext), encoding="latin-1")  # a text file: decoded as asked
    assert "cafÃ© good" in [text for split in read.splits.values() for text in split["text"]]


# -- 6: a public model card never carries a local path ---------------------------------------------
CARD_CONFIG = {"model": "tfidf-lr", "family": "tfidf", "kind": "classic", "label_names": ["a", "b"],
               "multi_label": False, "recipe": {}}


def _card(dataset: str) -> tuple[dict, str]:
    import yaml

    from textcls.model_hub import model_card

    metrics = {"test": {"accuracy": 0.75, "n": 8},
               "dataset": {"name": dataset, "splits": {"train": 72, "test": 8},
                           "split_notes": {"test": "seeded stratified 10% of train"}}}
    card = model_card({**CARD_CONFIG, "dataset": dataset}, metrics, "me/news")
    return yaml.safe_load(card.split("---\n")[1]), card.split("---\n", 2)[2]


def test_model_card_of_a_local_file_names_the_file_without_its_folder():
    meta, body = _card("/tmp/audit_prac/news.csv")
    card = f"{meta}\n{body}"
    assert "/tmp" not in card and "audit_prac" not in card, card
    assert "datasets" not in meta
    assert meta["model-index"][0]["results"][0]["dataset"]["name"] == "news.csv"
    assert "a local file, `news.csv`" in body and "list-datasets" not in body


def test_model_card_of_a_catalogue_or_hub_dataset_lists_it():
    meta, body = _card("trec")
    assert meta["datasets"] == ["trec"] and "`trec` (`textcls list-datasets`)" in body
    meta, body = _card("hf:someone/news:default")
    assert meta["datasets"] == ["someone/news"] and "list-datasets" not in body


# -- 5: offline, a named dataset fails at once in one line ----------------------------------------
PROXY_VARIABLES = tuple(v for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy")
                        for v in (name, name.upper()))


@pytest.fixture
def no_network(tmp_path, monkeypatch):
    """No TEXTCLS_DATA_DIR, an empty home (so no default data folder), empty hub caches, no socket
    that connects, and datasets.load_dataset allowed to run only in offline mode: the internet is
    never touched, whatever the code under test does."""
    import socket

    import datasets
    import huggingface_hub.constants as hub_constants

    for var in ("TEXTCLS_DATA_DIR", "TEXTCLS_HUB_DIR", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE",
                "HF_ENDPOINT", "REQUEST_METHOD", *PROXY_VARIABLES):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf-datasets"))
    monkeypatch.setattr(hub_constants, "HF_HUB_CACHE", str(tmp_path / "hf-hub"))
    probes = []

    def refuse(address, *args, **kwargs):
        probes.append(address)
        raise OSError(-2, "Name or service not known")

    monkeypatch.setattr(socket, "create_connection", refuse)
    real = datasets.load_dataset
    calls = []

    def offline_only(*args, **kwargs):
        calls.append(bool(datasets.config.HF_HUB_OFFLINE and hub_constants.HF_HUB_OFFLINE))
        if not calls[-1]:
            raise AssertionError("datasets.load_dataset called online")
        return real(*args, **kwargs)

    monkeypatch.setattr(datasets, "load_dataset", offline_only)
    return probes, calls


def test_unreachable_hub_fails_fast_in_one_line_naming_the_default_data_folder(no_network, capfd):
    import time

    import datasets

    probes, calls = no_network
    start = time.perf_counter()
    with pytest.raises(DataError) as err:
        load_dataset("trec")
    assert time.perf_counter() - start < 5
    message = str(err.value)
    assert "\n" not in message
    assert "the Hugging Face hub is unreachable (cannot connect to huggingface.co:443" in message
    assert "(the default data folder; TEXTCLS_DATA_DIR is not set)" in message
    assert "set TEXTCLS_DATA_DIR (CLI: --data-dir) to the folder that holds 'trec'" in message
    assert probes and calls == [True]
    out, logged = capfd.readouterr()
    assert "Retry" not in logged and "thrown while requesting" not in logged, logged
    assert datasets.config.HF_HUB_OFFLINE is False  # the offline switch is put back


def test_overlapping_offline_loads_put_the_online_switch_back_once_both_end():
    """Two loads from threads overlap in offline mode: each saving and restoring the switch on its
    own, the second saved True and put it back last, leaving the process offline for good."""
    import threading

    import datasets
    import huggingface_hub.constants as hub_constants

    from textcls.data.hub import _offline_and_quiet

    def switches():
        return hub_constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE, datasets.config.HF_DATASETS_OFFLINE

    before = switches()
    hub_constants.HF_HUB_OFFLINE = datasets.config.HF_HUB_OFFLINE = datasets.config.HF_DATASETS_OFFLINE = False
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen = []

    def first():
        with _offline_and_quiet():
            first_in.set()
            second_in.wait(10)
        first_out.set()

    def second():
        first_in.wait(10)
        with _offline_and_quiet():
            second_in.set()
            first_out.wait(10)
            seen.append(hub_constants.HF_HUB_OFFLINE)  # the first ended: this load is still offline

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    after = switches()
    hub_constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE, datasets.config.HF_DATASETS_OFFLINE = before
    assert seen == [True] and after == (False, False, False)


@pytest.mark.parametrize("variable", ["HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"])
def test_offline_variable_skips_the_network_check(no_network, monkeypatch, variable):
    probes, calls = no_network
    monkeypatch.setenv(variable, "1")
    with pytest.raises(DataError, match=rf"the Hugging Face hub is unreachable \({variable} is set\)"):
        load_dataset("trec")
    assert probes == [] and calls == [True]


@pytest.fixture
def probe(monkeypatch):
    """hub_unreachable with no offline variable, no proxy variable and no endpoint set, every
    connection recorded and none made: (probes, the call's outcome)."""
    import socket

    from textcls.data import hub

    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_ENDPOINT", "REQUEST_METHOD",
                *PROXY_VARIABLES):
        monkeypatch.delenv(var, raising=False)
    probes = []

    class Opened:
        def close(self):
            pass

    def connect(address, *args, **kwargs):
        probes.append(address)
        if address[0].startswith("dead"):
            raise ConnectionRefusedError(111, "Connection refused")
        return Opened()

    monkeypatch.setattr(socket, "create_connection", connect)
    return probes, hub.hub_unreachable


def test_the_probe_goes_direct_to_a_mirror_that_no_proxy_lists(probe, monkeypatch):
    """A mirror listed in NO_PROXY is reached directly, as the request would be: a dead HTTPS
    proxy does not make the hub unreachable."""
    probes, unreachable = probe
    monkeypatch.setenv("HF_ENDPOINT", "https://mirror.example.org:8443")
    monkeypatch.setenv("HTTPS_PROXY", "http://deadproxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "localhost,.example.org")
    assert unreachable() is None and probes == [("mirror.example.org", 8443)]
    monkeypatch.setenv("no_proxy", "mirror.example.org")  # the lower-case name, as the libraries read it
    monkeypatch.delenv("NO_PROXY")
    assert unreachable() is None and probes[-1] == ("mirror.example.org", 8443)
    # Not listed: the proxy is what the request meets first, and it is dead.
    monkeypatch.delenv("no_proxy")
    assert unreachable() == "cannot connect to the HTTPS proxy deadproxy.example:3128: Connection refused"


def test_the_probe_picks_the_proxy_by_the_endpoints_scheme(probe, monkeypatch):
    probes, unreachable = probe
    monkeypatch.setenv("HF_ENDPOINT", "http://mirror.internal:8080")
    monkeypatch.setenv("HTTP_PROXY", "http://deadproxy.internal:3128")
    monkeypatch.setenv("HTTPS_PROXY", "http://live-https-proxy.internal:3129")
    assert unreachable() == "cannot connect to the HTTP proxy deadproxy.internal:3128: Connection refused"
    assert probes == [("deadproxy.internal", 3128)]
    # An https endpoint with only an HTTP proxy set goes direct; ALL_PROXY serves any scheme.
    monkeypatch.setenv("HF_ENDPOINT", "https://hub.internal")
    monkeypatch.delenv("HTTPS_PROXY")
    assert unreachable() is None and probes[-1] == ("hub.internal", 443)
    monkeypatch.setenv("ALL_PROXY", "socks5://all-proxy.internal:1080")
    assert unreachable() is None and probes[-1] == ("all-proxy.internal", 1080)
    # all_proxy's proxy is named as such, not as the endpoint scheme's (HTTPS) proxy.
    monkeypatch.setenv("ALL_PROXY", "socks5://deadproxy.internal:1080")
    assert unreachable() == "cannot connect to the proxy of all_proxy deadproxy.internal:1080: Connection refused"


def test_the_whole_probe_is_bounded_by_its_seconds(probe, monkeypatch):
    """Name resolution has no time limit of its own, and create_connection tries every address
    for the whole timeout: the probe as a whole still ends within HUB_PROBE_SECONDS."""
    import socket
    import threading
    import time

    from textcls.data import hub

    _, unreachable = probe
    release = threading.Event()

    def hangs(address, *args, **kwargs):  # a resolver that does not answer
        release.wait(5)
        return type("Opened", (), {"close": lambda self: None})()

    monkeypatch.setattr(socket, "create_connection", hangs)
    monkeypatch.setattr(hub, "HUB_PROBE_SECONDS", 0.3)
    start = time.perf_counter()
    try:
        why = unreachable()
    finally:
        release.set()
    assert time.perf_counter() - start < 1.5
    assert why == "cannot connect to huggingface.co:443: no answer within 0.3 s"


# -- 1: a numeric score column is refused, numeric class ids load ---------------------------------
def _numeric_csv(path, labels):
    lines = ["text,score"] + [f"document number {i} with some words,{label}" for i, label in enumerate(labels)]
    return write(path, "\n".join(lines) + "\n")


def test_a_score_column_is_refused_as_a_regression_target(tmp_path):
    import random

    rng = random.Random(0)
    path = _numeric_csv(tmp_path / "score.csv", [f"{rng.random():.3f}" for _ in range(300)])
    with pytest.raises(DataError) as err:
        load_dataset(str(path))
    message = str(err.value)
    assert message.startswith(f"{path}: the label column 'score' holds numbers, ")
    assert "textcls classifies: bin the scores into a few classes" in message
    assert "label_column= (CLI: --label-column NAME)" in message and "\n" not in message
    # Two decimals: fewer distinct values (about 100 of 300), still a score.
    two = _numeric_csv(tmp_path / "two.csv", [f"{rng.random():.2f}" for _ in range(300)])
    with pytest.raises(DataError, match="holds numbers"):
        load_dataset(str(two))
    # Integers nearly all distinct (a count, a price): a regression target too.
    ints = _numeric_csv(tmp_path / "ints.csv", [str(rng.randrange(10_000)) for _ in range(300)])
    with pytest.raises(DataError, match="holds numbers"):
        load_dataset(str(ints))


def test_a_score_column_exits_2_on_the_command_line(tmp_path, capsys):
    path = _numeric_csv(tmp_path / "score.csv", [f"{i / 300:.4f}" for i in range(300)])
    status, _, err = run_cli(["train", "-m", "tfidf-lr", "-d", str(path), "--run-dir", str(tmp_path / "run")], capsys)
    assert status == 2 and "holds numbers" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("labels", [
    [str(1 + i % 5) for i in range(500)],                      # yelp-style 1..5 stars
    [str(i % 20) for i in range(400)],                         # 20 integer class ids
    [str(i % 2) for i in range(300)],                          # fdu_mtl-style 0/1
    [f"{1 + (i % 9) / 2:.1f}" for i in range(300)],            # half-star ratings 1.0 .. 5.0
    [str(i % 100) for i in range(3000)],                       # a hundred integer ids
    [f"{i % 2}.0" for i in range(300)],                        # ids written as floats
    [str(i % 100) for i in range(200)],                        # few-shot: 100 ids, 2 records each
    [f"{100 + (i * 37) % 726 / 10:.1f}" for i in range(2000)],  # decimal codes (ICD-9-like), 726 of them
], ids=["stars", "20-ids", "binary", "half-stars", "100-ids", "float-ids", "few-shot", "decimal-codes"])
def test_numeric_class_ids_still_load(tmp_path, labels):
    ds = load_dataset(str(_numeric_csv(tmp_path / "ids.csv", labels)))
    assert set(ds.label_names) == set(labels)


@pytest.mark.parametrize("name", [lambda i: str(i), lambda i: f"topic {i}"], ids=["numeric-ids", "names"])
def test_a_test_file_with_one_record_a_class_loads_beside_its_train_file(tmp_path, name):
    """A held-out split's file is not judged by how many distinct labels it holds: a test set of
    one record a class (80 classes) was refused as a score column or as text."""
    folder = tmp_path / "split"
    folder.mkdir()
    train = ["text,label"] + [f"words of document {i} here,{name(i % 80)}" for i in range(1600)]
    test = ["text,label"] + [f"words of test document {i},{name(i)}" for i in range(80)]
    (folder / "train.csv").write_text("\n".join(train) + "\n", encoding="utf-8")
    (folder / "test.csv").write_text("\n".join(test) + "\n", encoding="utf-8")
    ds = load_dataset(str(folder))
    assert ds.splits["test"].num_rows == 80 and len(ds.label_names) == 80
    # The same labels as a lone file are still judged: nearly every record its own class.
    lone = tmp_path / "lone.csv"
    lone.write_text("\n".join(test) + "\n", encoding="utf-8")
    with pytest.raises(DataError):
        load_dataset(str(lone))


# -- 2: a class only dev or test holds is warned about where the label set is learned -------------
CLASSES = ["Sports", "Tech", "Arts", "Food", "Travel"]


def _split_folder(root, extra_test: str = "politics vote election,Politics\n"):
    words = "alpha beta gamma delta epsilon zeta eta theta".split()
    rows = lambda n: "".join(f"{CLASSES[i % 5].lower()} {words[i % 8]} {words[(i * 3) % 8]},{CLASSES[i % 5]}\n"
                             for i in range(n))
    write(root / "train.csv", "text,label\n" + rows(100))
    write(root / "test.csv", "text,label\n" + rows(20) + extra_test)
    return root


def test_a_class_only_the_test_split_holds_is_warned_about_in_python(tmp_path, caplog):
    from textcls import Classifier

    ds = load_dataset(str(_split_folder(tmp_path / "split2")))
    with caplog.at_level("WARNING", logger="textcls"):
        clf = Classifier("tfidf-lr").fit_dataset(ds)
    lines = [r.getMessage() for r in caplog.records if "no training record" in r.getMessage()]
    assert lines == [f"{ds.name}: class 'Politics' has 1 test record and no training record; the model cannot learn "
                     "it (add training records of it, or leave it out of the evaluation data)"]
    assert clf.estimator_.untrained_classes_ == {"Politics": {"test": 1}}


def test_several_untrained_classes_are_one_line_and_a_clean_split_says_nothing(tmp_path, caplog):
    from textcls import Classifier

    ds = load_dataset(str(_split_folder(tmp_path / "two", "a vote,Politics\nb vote,Politics\nlaw court,Law\n")))
    with caplog.at_level("WARNING", logger="textcls"):
        Classifier("tfidf-lr").fit_dataset(ds)
    lines = [r.getMessage() for r in caplog.records if "no training record" in r.getMessage()]
    assert len(lines) == 1
    assert "classes 'Law' (1 test record), 'Politics' (2 test records) have no training record" in lines[0]
    caplog.clear()
    clean = load_dataset(str(_split_folder(tmp_path / "clean", "")))
    with caplog.at_level("WARNING", logger="textcls"):
        Classifier("tfidf-lr").fit_dataset(clean)
    assert not [r for r in caplog.records if "no training record" in r.getMessage()]


def test_the_cli_prints_the_untrained_class_warning_once(tmp_path):
    """In a process of its own: pytest's log capture would take the line from stderr."""
    import os
    import subprocess

    folder = _split_folder(tmp_path / "split2")
    done = subprocess.run([sys.executable, "-c", "from textcls.cli import main; main()", "train", "-m", "tfidf-lr",
                           "-d", str(folder), "--run-dir", str(tmp_path / "run")],
                          capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=300)
    assert done.returncode == 0, done.stderr
    err = done.stderr
    assert err.count("class 'Politics' has 1 test record and no training record; the model cannot learn it") == 1, err


# -- 3: an unknown label at evaluate is named by file and line, and is a bad record ---------------
@pytest.fixture(scope="module")
def five_class_run(tmp_path_factory):
    from textcls import Classifier

    root = tmp_path_factory.mktemp("clean")
    _split_folder(root / "clean", "")
    clf = Classifier("tfidf-lr").fit_dataset(load_dataset(str(root / "clean")))
    clf.save_pretrained(root / "run")
    return clf, root / "run"


def _unknown_csv(path):
    rows = "".join(f"{c.lower()} alpha beta,{c}\n" for c in CLASSES * 2)
    return write(path, "text,label\nvote politics,Politics\n" + rows)


def test_an_unknown_label_at_evaluate_names_the_file_and_line(five_class_run, tmp_path):
    from textcls.data import ReadOptions, read_path

    clf, _ = five_class_run
    path = _unknown_csv(tmp_path / "unk1.csv")
    records = read_path(path, ReadOptions())["train"]
    with pytest.raises(DataError) as err:
        clf.evaluate(records, where="unk1.csv")
    assert str(err.value).startswith(f"{path}:2: label 'Politics' is not one the model knows (known: ")
    assert 'on_bad_record="skip" (CLI: --on-bad-record skip)' in str(err.value)


def test_records_keep_their_lines_through_carved_and_subsampled_splits(tmp_path):
    from textcls.data import subsample
    from textcls.data.records import record_place

    path = write(tmp_path / "lines.csv", "text,label\n" + "".join(f"line {i + 2},{'ab'[i % 2]}\n" for i in range(40)))
    ds = subsample(load_dataset(str(path)), 10, 0)
    for split in ds.splits.values():
        for row, text in enumerate(split["text"]):
            assert record_place(split, row) == f"{path}:{text.split()[1]}"
    # A split changed by hand (datasets' own select) has no places: never a stale line.
    assert record_place(ds["train"].select([0]), 0) is None


def test_skip_leaves_out_and_counts_records_with_unknown_labels(five_class_run, tmp_path):
    from textcls.data import ReadOptions, read_path

    clf, _ = five_class_run
    path = _unknown_csv(tmp_path / "unk1.csv")
    metrics = clf.evaluate(read_path(path, ReadOptions())["train"], where="unk1.csv", on_bad_record="skip")
    assert metrics["skipped"] == 1 and metrics["n"] == 10
    assert metrics["notes"][0].startswith(f"skipped 1 record with a label the model does not know (first: {path}:2: ")
    # The records' own policy, as --on-bad-record skip reads them, is followed too.
    skipping = read_path(path, ReadOptions(on_bad_record="skip"))["train"]
    assert clf.evaluate(skipping, where="unk1.csv")["skipped"] == 1
    with pytest.raises(DataError, match="is not one the model knows"):
        clf.evaluate(skipping, where="unk1.csv", on_bad_record="error")
    with pytest.raises(ConfigError, match="on_bad_record"):
        clf.evaluate(skipping, on_bad_record="drop")


def test_records_skipped_at_evaluate_are_logged_as_a_warning(five_class_run, tmp_path, caplog):
    """Records read with skip are skipped at evaluate by default; the metrics' note alone left a
    Python caller unaware: one warning line on the textcls logger, in the note's words."""
    from textcls.data import ReadOptions, read_path

    clf, _ = five_class_run
    path = _unknown_csv(tmp_path / "unk1.csv")
    skipping = read_path(path, ReadOptions(on_bad_record="skip"))["train"]
    with caplog.at_level("WARNING", logger="textcls"):
        metrics = clf.evaluate(skipping, where="unk1.csv")
    logged = [(r.name, r.levelname, r.getMessage()) for r in caplog.records if "skipped" in r.getMessage()]
    assert logged == [("textcls", "WARNING", metrics["notes"][0])]
    assert logged[0][2].startswith(f"skipped 1 record with a label the model does not know (first: {path}:2: ")
    caplog.clear()
    with caplog.at_level("WARNING", logger="textcls"):
        clf.evaluate(read_path(write(tmp_path / "known.csv", "text,label\nhello world,Sports\n"),
                               ReadOptions(on_bad_record="skip"))["train"])
    assert not [r for r in caplog.records if "skipped" in r.getMessage()]


def test_evaluate_on_the_command_line_names_the_line_and_skips_with_a_count(five_class_run, tmp_path, capsys,
                                                                           monkeypatch):
    _, run = five_class_run
    monkeypatch.chdir(tmp_path)
    _unknown_csv(tmp_path / "unk1.csv")
    status, _, err = run_cli(["evaluate", str(run), "--data", "unk1.csv"], capsys)
    assert status == 2 and err.startswith("error: unk1.csv:2: label 'Politics' is not one the model knows"), err
    status, out, err = run_cli(["evaluate", str(run), "--data", "unk1.csv", "--on-bad-record", "skip"], capsys)
    assert status == 0, err
    assert "skipped 1 record with a label the model does not know (first: unk1.csv:2: " in out + err


def test_the_command_line_says_records_skipped_at_evaluate_once(five_class_run, tmp_path):
    """In a real process (no test logging handlers), the CLI's own line and a logged warning of
    the same words would both reach stderr: the CLI passes --on-bad-record, so evaluate logs none."""
    import subprocess

    _, run = five_class_run
    _unknown_csv(tmp_path / "unk1.csv")
    done = subprocess.run([sys.executable, "-m", "textcls.cli", "evaluate", str(run), "--data", "unk1.csv",
                           "--on-bad-record", "skip"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if "with a label the model does not know" in line]
    assert len(said) == 1 and said[0].startswith("skipped 1 record with a label the model does not know"), done.stderr


def test_record_places_come_back_exactly():
    from textcls.data.records import RecordPlaces

    places = ["a.csv:12", "a.csv:3", "/d/pos/doc007", "/d/pos/123", "hf:x train: record 0", "99",
              "b.csv:1234567890123456789012", "a:1\u0663", "a:1", "x\u06635", "/d/neg/12_3.txt", "/d/neg/13_4.txt",
              "/d/neg/a:b.txt", "/d/neg/doc9", "/d/neg/x\x00.txt", "/d/neg/x/1.txt", "/d/neg/", "",
              "C:\\d\\pos\\1_2.txt", "/d/pos/caf\u00e9 \udcff.txt", "/d/pos/a\x00b"]
    kept = RecordPlaces()
    for place in places:
        kept.append(place)
    assert [kept[i] for i in range(len(places))] == places
    assert [kept.take([1, 0])[i] for i in range(2)] == ["a.csv:3", "a.csv:12"]


def test_places_of_one_file_a_record_are_compact():
    """Class folders (a file a record): each path was a prefix of its own (82 MB at 500,000)."""
    import tracemalloc

    from textcls.data.records import RecordPlaces

    n = 20_000
    paths = [f"/data/aclImdb/train/{'pos' if i % 2 else 'neg'}/{i}_{i % 10}.txt" for i in range(n)]
    tracemalloc.start()
    kept = RecordPlaces()
    for path in paths:
        kept.append(path)
    size = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert size / n < 40, f"{size / n:.0f} bytes a record"
    assert [kept[i] for i in range(n)] == paths


def test_places_attached_to_a_split_are_not_copied_with_it():
    """Dataset.with_format (and other datasets calls) deep-copy the split, its places too:
    0.31 s a call at 500,000 records."""
    import copy

    import datasets
    import numpy as np

    from textcls.data.records import RecordPlaces, attach_places, record_place, select_records

    n = 20_000
    paths = [f"/data/aclImdb/train/{'pos' if i % 2 else 'neg'}/{i}_{i % 10}.txt" for i in range(n)]
    kept = RecordPlaces()
    for path in paths:
        kept.append(path)
    split = attach_places(datasets.Dataset.from_dict({"text": ["x"] * n, "label": ["a"] * n}), kept, "skip")
    assert copy.deepcopy(kept) is kept  # attached, so frozen: copies share it
    shown = split.with_format("arrow")
    assert getattr(shown, "_textcls_places") is kept and record_place(shown, 7) == paths[7]
    with pytest.raises(RuntimeError):
        kept.append("/data/x.txt")
    chosen = select_records(split, np.array([n - 1, 3]))
    assert [record_place(chosen, r) for r in range(2)] == [paths[-1], paths[3]]
    assert [record_place(select_records(split, range(2)), r) for r in range(2)] == paths[:2]


def test_evaluate_skipping_selects_the_kept_rows_by_an_array(five_class_run, tmp_path, monkeypatch):
    """datasets hashes a list of row numbers int by int (0.42 s at 500,000 against 0.10 s)."""
    import numpy as np

    from textcls import api
    from textcls.data import ReadOptions, read_path

    clf, _ = five_class_run
    seen = []
    real = api.select_records

    def spy(split, rows):
        seen.append(rows)
        return real(split, rows)

    monkeypatch.setattr(api, "select_records", spy)
    path = _unknown_csv(tmp_path / "unk1.csv")
    metrics = clf.evaluate(read_path(path, ReadOptions())["train"], on_bad_record="skip")
    assert metrics["skipped"] == 1 and len(seen) == 1
    assert isinstance(seen[0], np.ndarray) and seen[0].tolist() == list(range(1, 11))
