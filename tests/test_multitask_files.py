"""Multi-task data of the user's own files through the CLI: a JSON line's "task" field or a CSV
"task" column trains one head per task (fcsr-mtl), and predict and evaluate read each record's
task the same way, or take --task for data that names none."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

CLI = [sys.executable, "-m", "textcls.cli"]
TASKS = ("books", "dvd", "kitchen")
WORDS = {"positive": "great superb lovely fine".split(), "negative": "awful dull poor bad".split()}


def run(*args, cwd=None):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run(CLI + list(args), capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


def task_records(n: int = 120) -> list[dict]:
    out = []
    for i in range(n):
        label = ("positive", "negative")[i % 2]
        task = TASKS[(i // 2) % len(TASKS)]
        words = WORDS[label]
        out.append({"text": f"a {task} item, {words[i % 4]} and {words[(i + 1) % 4]}", "label": label, "task": task})
    return out


@pytest.fixture(scope="module")
def mtl_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mtl")
    data = folder / "mtl.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in task_records()))
    out = run("train", "--model", "fcsr-mtl", "--data", str(data), "--epochs", "1", "--run-dir",
              str(folder / "run"), "--no-progress")
    assert out.returncode == 0, out.stderr
    return folder


def test_a_task_field_trains_one_head_per_task(mtl_run):
    """The "task" field was dropped without a word: a one-head model, config task_names null."""
    config = json.loads((mtl_run / "run" / "config.json").read_text())
    assert config["task_names"] == list(TASKS) and config["arch"]["num_tasks"] == len(TASKS)


def predictions(out) -> list[dict]:
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_predict_reads_a_csv_task_column_as_a_json_lines_task_field(mtl_run):
    """A CSV row's task was ignored: every row predicted with the --task head, silently wrong."""
    run_dir = str(mtl_run / "run")
    rows = [("a great book", "books"), ("an awful dvd", "dvd"), ("a fine pan", "")]
    (mtl_run / "p.csv").write_text("text,task\n" + "".join(f"{t},{k}\n" for t, k in rows))
    (mtl_run / "p.jsonl").write_text("".join(json.dumps({"text": t, **({"task": k} if k else {})}) + "\n"
                                             for t, k in rows))
    from_csv = predictions(run("predict", run_dir, "--input", str(mtl_run / "p.csv"), "--task", "kitchen"))
    from_jsonl = predictions(run("predict", run_dir, "--input", str(mtl_run / "p.jsonl"), "--task", "kitchen"))
    assert [r["task"] for r in from_csv] == ["books", "dvd", "kitchen"]  # an empty cell takes --task
    assert from_csv == from_jsonl
    # A JSON line's task is read as the training reader reads it: trimmed, a blank one is none.
    (mtl_run / "s.jsonl").write_text("".join(json.dumps({"text": t, "task": f" {k} "}) + "\n" for t, k in rows))
    assert predictions(run("predict", run_dir, "--input", str(mtl_run / "s.jsonl"), "--task", "kitchen")) == from_csv
    # Each head answers: the same text under another task's head gets that head's probabilities.
    books = predictions(run("predict", run_dir, "--input", str(mtl_run / "p.jsonl"), "--task", "books"))
    assert from_csv[2]["probabilities"] != books[2]["probabilities"]
    out = run("predict", run_dir, "--input", str(mtl_run / "p.csv"))
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip().splitlines() == [
        f"error: {mtl_run / 'p.csv'}:4: no task; fcsr-mtl has one head per task (books, dvd, kitchen): pass --task "
        "NAME, a \"task\" field per JSON line or a task column of a CSV/TSV file"]


@pytest.fixture(scope="module")
def pooled_run(mtl_run):
    """A model without per-task heads trained on the same multi-task file: the tasks pooled."""
    pooled = mtl_run / "pooled"
    out = run("train", "--model", "tfidf-lr", "--data", str(mtl_run / "mtl.jsonl"), "--run-dir", str(pooled),
              "--no-progress")
    assert out.returncode == 0, out.stderr
    return pooled


@pytest.mark.parametrize("name, content", [
    ("q.csv", "text,task\na great book,\nan awful dvd,dvd\n"),
    ("q.jsonl", '{"text": "a great book"}\n{"text": "an awful dvd", "task": "dvd"}\n'),
])
def test_a_run_without_task_heads_reads_no_task_from_its_input_and_says_so_once(mtl_run, pooled_run, name, content):
    """A pooled run trained on a multi-task file predicts that file: its tasks (a CSV column, a
    JSON line's field) are not read, one stderr line says so, and the output names no task (it
    refused the file before: a CSV column cannot be dropped without editing the file)."""
    (mtl_run / name).write_text(content)
    out = run("predict", str(pooled_run), "--input", str(mtl_run / name))
    assert out.returncode == 0, out.stderr
    line = 3 if name.endswith(".csv") else 2  # the first record that names a task (a CSV has its header)
    assert out.stderr.strip().splitlines() == [
        f"{mtl_run / name}:{line}: the input's tasks are not read: tfidf-lr was trained with no head per task "
        "(one model for all tasks)"]
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    plain = run("predict", str(pooled_run), "a great book", "an awful dvd")
    assert rows == [json.loads(line) for line in plain.stdout.splitlines()]
    assert all("task" not in row for row in rows)
    # An explicit --task is still refused: the user asked for a head the run lacks.
    assert "drop --task" in one_error(run("predict", str(pooled_run), "--task", "dvd", "--input", str(mtl_run / name)))


def one_error(out) -> str:
    assert out.returncode == 2 and out.stdout == "", (out.returncode, out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), out.stderr
    return lines[0]


def test_evaluate_takes_the_task_of_data_without_one_from_task(mtl_run, pooled_run):
    """evaluate on data without tasks advised "pass tasks=", a Python argument the CLI has no option for."""
    run_dir = str(mtl_run / "run")
    records = [r for r in task_records(30) if r["task"] == "dvd"]
    (mtl_run / "dvd.jsonl").write_text("".join(json.dumps({"text": r["text"], "label": r["label"]}) + "\n"
                                               for r in records))
    (mtl_run / "dvd_tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    message = one_error(run("evaluate", run_dir, "--data", str(mtl_run / "dvd.jsonl")))
    assert "pass --task NAME" in message and "tasks=" not in message
    out = run("evaluate", run_dir, "--data", str(mtl_run / "dvd.jsonl"), "--task", "dvd",
              "--output", str(mtl_run / "m1.json"))
    assert out.returncode == 0, out.stderr
    out = run("evaluate", run_dir, "--data", str(mtl_run / "dvd_tasks.jsonl"), "--output", str(mtl_run / "m2.json"))
    assert out.returncode == 0, out.stderr
    given, own = (json.loads((mtl_run / name).read_text()) for name in ("m1.json", "m2.json"))
    assert given["accuracy"] == own["accuracy"] and given["roc_auc_macro"] == own["roc_auc_macro"]
    assert list(own["per_task"]["tasks"]) == ["dvd"] and "per_task" not in given
    # --task where the data names each record's task, a task the run lacks, and a run without heads.
    assert "drop --task" in one_error(run("evaluate", run_dir, "--data", str(mtl_run / "dvd_tasks.jsonl"),
                                          "--task", "dvd"))
    assert "was not trained on that task" in one_error(run("evaluate", run_dir, "--data", str(mtl_run / "dvd.jsonl"),
                                                           "--task", "garden"))
    assert "not trained with one head per task" in one_error(
        run("evaluate", str(pooled_run), "--data", str(mtl_run / "dvd.jsonl"), "--task", "dvd"))
    (mtl_run / "garden.jsonl").write_text("".join(json.dumps({**r, "task": "garden" if i == 2 else r["task"]}) + "\n"
                                                  for i, r in enumerate(records)))
    assert one_error(run("evaluate", run_dir, "--data", str(mtl_run / "garden.jsonl"))) == (
        f"error: {mtl_run / 'garden.jsonl'}:3: task 'garden' is not one fcsr-mtl was trained on; give one of: "
        "books, dvd, kitchen, or pass on_bad_record=\"skip\" (CLI: --on-bad-record skip) to skip and count it")
    # A bad record like one with an unknown label: skipped and counted with --on-bad-record skip.
    out = run("evaluate", run_dir, "--data", str(mtl_run / "garden.jsonl"), "--on-bad-record", "skip",
              "--output", str(mtl_run / "m3.json"))
    assert out.returncode == 0, out.stderr
    assert out.stderr.strip().splitlines() == [
        f"skipped 1 record of a task the model was not trained on (first: {mtl_run / 'garden.jsonl'}:3: task "
        f"'garden' is not one fcsr-mtl was trained on); the metrics are over the other {len(records) - 1}"]
    skipped = json.loads((mtl_run / "m3.json").read_text())
    assert skipped["skipped"] == 1 and skipped["per_task"]["tasks"].keys() == {r["task"] for r in records}
    # A record of an unknown task and one of an unknown label: each note counts the records left after both.
    with (mtl_run / "garden.jsonl").open("a") as f:
        f.write(json.dumps({**records[0], "label": "meh"}) + "\n")
    out = run("evaluate", run_dir, "--data", str(mtl_run / "garden.jsonl"), "--on-bad-record", "skip")
    assert out.returncode == 0, out.stderr
    notes = out.stderr.strip().splitlines()
    assert len(notes) == 2 and all(n.endswith(f"the metrics are over the other {len(records) - 1}") for n in notes)


def metadata_file(path):
    """The practitioner's file: 200 single-task records, some with a "task" field that is metadata."""
    rows = [{"text": ("good great" if i % 2 else "bad awful") + f" item {i}", "label": "pos" if i % 2 else "neg",
             **({"task": "meta"} if i % 7 == 0 else {})} for i in range(200)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_no_task_column_trains_a_pooled_run_on_a_file_whose_task_field_is_metadata(tmp_path):
    """Such a file could not be trained on at all: its records without a task were refused, and the
    only advice dropped them."""
    data = metadata_file(tmp_path / "e.jsonl")
    message = one_error(run("train", "--model", "tfidf-lr", "--data", str(data), "--run-dir", str(tmp_path / "r0"),
                            "--no-progress"))
    assert message.startswith(f"error: {data}:2: missing or empty task;") and "(CLI: --no-task-column)" in message
    assert not (tmp_path / "r0").exists()
    run_dir = tmp_path / "run"
    out = run("train", "--model", "tfidf-lr", "--data", str(data), "--run-dir", str(run_dir), "--no-progress",
              "--no-task-column")
    assert out.returncode == 0, out.stderr
    assert json.loads((run_dir / "config.json").read_text())["task_names"] is None
    dataset = json.loads((run_dir / "metrics.json").read_text())["dataset"]
    assert dataset["splits"] == {"train": 180, "test": 20} and dataset["skipped"] == 0  # no record dropped
    out = run("evaluate", str(run_dir), "--data", str(data), "--no-task-column", "--output", str(tmp_path / "m.json"))
    assert out.returncode == 0, out.stderr
    metrics = json.loads((tmp_path / "m.json").read_text())
    assert metrics["n"] == 200 and "per_task" not in metrics
    out = run("predict", str(run_dir), "--input", str(data), "--no-task-column")
    assert out.returncode == 0 and out.stderr == "", out.stderr  # no note about tasks it does not read
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(rows) == 200 and all("task" not in row for row in rows)


def test_a_named_task_column_trains_one_head_per_task_of_that_field(tmp_path):
    """--task-column domain: the tasks are the "domain" field's; a "task" field beside it is data."""
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"text": r["text"], "label": r["label"], "domain": r["task"], "task": i}) + "\n"
                            for i, r in enumerate(task_records())))
    out = run("train", "--model", "fcsr-mtl", "--data", str(data), "--epochs", "1", "--run-dir", str(tmp_path / "run"),
              "--no-progress", "--task-column", "domain")
    assert out.returncode == 0, out.stderr
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["task_names"] == list(TASKS) and config["arch"]["num_tasks"] == len(TASKS)


def test_predict_reads_the_task_from_the_task_column_named_or_none(mtl_run):
    """predict read a JSON line's "task" field and a CSV "task" column whatever the options: a file
    whose tasks are in another column, or whose "task" column is no task, could not be predicted."""
    run_dir = str(mtl_run / "run")
    rows = [("a great book", "books"), ("an awful dvd", "dvd"), ("a fine pan", "kitchen")]
    (mtl_run / "named.csv").write_text("text,task,domain\n" + "".join(f"{t},x{i},{k}\n" for i, (t, k) in enumerate(rows)))
    (mtl_run / "named.jsonl").write_text("".join(json.dumps({"text": t, "task": i, "domain": k}) + "\n"
                                                 for i, (t, k) in enumerate(rows)))
    (mtl_run / "own.jsonl").write_text("".join(json.dumps({"text": t, "task": k}) + "\n" for t, k in rows))
    own = predictions(run("predict", run_dir, "--input", str(mtl_run / "own.jsonl")))
    for name in ("named.csv", "named.jsonl"):
        named = predictions(run("predict", run_dir, "--input", str(mtl_run / name), "--task-column", "domain"))
        assert [r["task"] for r in named] == [k for _, k in rows] and named == own, name
        # --no-task-column: the "task" column or field is not read; --task gives every text its task.
        none = predictions(run("predict", run_dir, "--input", str(mtl_run / name), "--no-task-column", "--task", "dvd"))
        assert [r["task"] for r in none] == ["dvd"] * 3, name
        # Without the option, the "task" column or field (x0, 0, ...) is read as the task.
        assert run("predict", run_dir, "--input", str(mtl_run / name)).returncode == 2
    dvd = predictions(run("predict", run_dir, "--input", str(mtl_run / "own.jsonl"), "--task", "dvd",
                          "--no-task-column"))
    assert dvd == none
    assert one_error(run("predict", run_dir, "--input", str(mtl_run / "named.csv"), "--task-column", "area")) == (
        f"error: {mtl_run / 'named.csv'}: no column 'area'; the columns are: text, task, domain; pass task_column= "
        "(CLI: --task-column NAME) naming the column of each record's task, or task_column=None (CLI: "
        "--no-task-column) to read no task")
    assert one_error(run("predict", run_dir, "--input", str(mtl_run / "named.jsonl"))) == (
        f"error: {mtl_run / 'named.jsonl'}:1: field \"task\" is int, not a task name; write the task's name as a "
        "string, or pass --no-task-column if the field is not a task")
    assert one_error(run("predict", run_dir, "--input", str(mtl_run / "named.csv"), "--task-column", "domain",
                         "--no-task-column")) == (
        "error: --task-column domain and --no-task-column contradict each other; give one of them")
    assert one_error(run("predict", run_dir, "a great book", "--no-task-column")) == (
        "error: --no-task-column applies to --input files; texts given as arguments are one text each: drop "
        "--no-task-column")
    (mtl_run / "plain.txt").write_text("a great book\n")
    assert one_error(run("predict", run_dir, "--input", str(mtl_run / "plain.txt"), "--task-column", "domain")) == (
        f"error: --task-column applies to csv, tsv, jsonl input, and {mtl_run / 'plain.txt'} is read as text: drop "
        "--task-column, or pass --format csv")


@pytest.fixture(scope="module")
def domain_run(tmp_path_factory):
    """fcsr-mtl trained with --task-column domain on a file whose "task" field is annotation metadata."""
    folder = tmp_path_factory.mktemp("domain")
    data = folder / "meta.jsonl"
    data.write_text("".join(json.dumps({"text": r["text"], "label": r["label"], "domain": r["task"],
                                        "task": f"annot-{'ab'[i % 2]}"}) + "\n" for i, r in enumerate(task_records())))
    out = run("train", "--model", "fcsr-mtl", "--data", str(data), "--epochs", "1", "--run-dir", str(folder / "run"),
              "--no-progress", "--task-column", "domain")
    assert out.returncode == 0, out.stderr
    return folder


def test_a_run_records_its_task_column_and_evaluate_and_predict_read_it(domain_run):
    """evaluate read the "task" metadata again (refused, advising --no-task-column, which failed too,
    never naming --task-column): the run did not record the column it was trained with."""
    run_dir, data = domain_run / "run", domain_run / "meta.jsonl"
    assert json.loads((run_dir / "config.json").read_text())["task_column"] == "domain"
    out = run("evaluate", str(run_dir), "--data", str(data), "--output", str(domain_run / "m.json"))
    assert out.returncode == 0, out.stderr
    assert list(json.loads((domain_run / "m.json").read_text())["per_task"]["tasks"]) == list(TASKS)
    rows = predictions(run("predict", str(run_dir), "--input", str(data)))
    assert [r["task"] for r in rows] == [r["task"] for r in task_records()]
    # An explicit option still wins, and a refusal that follows names the run's column.
    hint = f"; {run_dir} read its tasks from 'domain': pass --task-column domain"
    assert one_error(run("evaluate", str(run_dir), "--data", str(data), "--task-column", "task")).endswith(
        "is not one fcsr-mtl was trained on; give one of: books, dvd, kitchen, or pass on_bad_record=\"skip\" (CLI: "
        "--on-bad-record skip) to skip and count it" + hint)
    assert one_error(run("evaluate", str(run_dir), "--data", str(data), "--no-task-column")) == (
        f"error: {data}: names no task, and {run_dir} has one head per task (books, dvd, kitchen): pass --task NAME "
        "(the task of every record), or read each record's task with --task-column NAME (--no-task-column reads "
        "none)" + hint)
    assert one_error(run("predict", str(run_dir), "--input", str(data), "--no-task-column")) == (
        f"error: {data}:1: no task; fcsr-mtl has one head per task (books, dvd, kitchen): pass --task NAME, or read "
        "each record's task with --task-column NAME (--no-task-column reads none)" + hint)
    # A file without the run's column is predicted with --task, as one without a "task" field is.
    (domain_run / "plain.jsonl").write_text(json.dumps({"text": "a great book"}) + "\n")
    (domain_run / "plain.csv").write_text("text\na great book\n")
    for name in ("plain.jsonl", "plain.csv"):
        assert [r["task"] for r in predictions(run("predict", str(run_dir), "--input", str(domain_run / name),
                                                   "--task", "dvd"))] == ["dvd"], name


def test_only_a_refused_task_gets_the_run_task_column_hint(domain_run, tmp_path):
    """The hint was added to any refusal whose wording held "trained on": here a label of that name."""
    run_dir, data = domain_run / "run", domain_run / "meta.jsonl"
    records = [json.loads(line) for line in data.read_text().splitlines()]
    records[3]["label"] = "not trained on"
    odd = tmp_path / "odd.jsonl"
    odd.write_text("".join(json.dumps(r) + "\n" for r in records))
    error = one_error(run("evaluate", str(run_dir), "--data", str(odd), "--no-task-column", "--task", "books"))
    assert error.startswith(f"error: {odd}:4: ") and "'not trained on'" in error, error
    assert "read its tasks from" not in error


def test_a_pooled_run_trained_with_no_task_column_evaluates_without_tasks(tmp_path):
    """evaluate on the same file printed per-task metrics of the metadata values, silently."""
    data = metadata_file(tmp_path / "e.jsonl")
    run_dir = tmp_path / "run"
    out = run("train", "--model", "tfidf-lr", "--data", str(data), "--run-dir", str(run_dir), "--no-progress",
              "--no-task-column")
    assert out.returncode == 0, out.stderr
    assert json.loads((run_dir / "config.json").read_text())["task_column"] is None
    out = run("evaluate", str(run_dir), "--data", str(data), "--output", str(tmp_path / "m.json"))
    assert out.returncode == 0, out.stderr
    assert "per_task" not in json.loads((tmp_path / "m.json").read_text()) and "meta" not in out.stdout
    # A run trained with the default task column leaves the key out (its config is as before).
    out = run("train", "--model", "tfidf-lr", "--data", str(data), "--run-dir", str(tmp_path / "r2"), "--no-progress",
              "--on-bad-record", "skip")
    assert out.returncode == 0, out.stderr
    assert "task_column" not in json.loads((tmp_path / "r2" / "config.json").read_text())


def test_predict_refuses_a_task_field_the_first_json_line_lacks_or_the_text(domain_run):
    """A misspelt --task-column on JSON Lines predicted every record with --task's task, silently
    (a CSV refused it); --task-column text was read as the task."""
    run_dir, data = str(domain_run / "run"), domain_run / "meta.jsonl"
    assert one_error(run("predict", run_dir, "--input", str(data), "--task-column", "domian", "--task", "books")) == (
        f"error: the first record ({data}:1) has no field 'domian', and it decides the file's fields; its fields "
        "are: text, label, domain, task; pass --task-column NAME naming the field of each record's task, or "
        "--no-task-column to read no task")
    assert one_error(run("predict", run_dir, "--input", str(data), "--task-column", "Domain")).startswith(
        f"error: the first record ({data}:1) has no field 'Domain' (did you mean 'domain'? a named field is matched "
        "exactly)")
    assert one_error(run("predict", run_dir, "--input", str(data), "--task-column", "text")) == (
        f"error: {data}:1: field 'text' is read as the text, so it cannot be the task field too; pass --task-column "
        "NAME naming the field of each record's task, or --no-task-column to read no task")


def test_predict_from_stdin_advises_an_option_that_works(domain_run):
    """The advice was --format csv, which stdin refuses (--format csv reads a file)."""
    first = (domain_run / "meta.jsonl").read_text().splitlines()[0] + "\n"
    env = dict(os.environ, OMP_NUM_THREADS="1")

    def piped(*args):
        return subprocess.run(CLI + ["predict", str(domain_run / "run"), "--input", "-", *args], input=first,
                              capture_output=True, text=True, env=env, timeout=300)

    for flag in (["--task-column", "domain"], ["--text-column", "text"]):
        assert one_error(piped(*flag)) == (
            f"error: {flag[0]} applies to csv, tsv, jsonl input, and stdin is read as text: drop {flag[0]}, or pass "
            "--format jsonl")
        assert predictions(piped(*flag, "--format", "jsonl"))[0]["task"] == "books"
    assert one_error(piped("--delimiter", ";")) == (
        "error: --delimiter applies to csv, tsv input, and stdin is read as text: drop --delimiter, or pass --input "
        "FILE.csv (a CSV/TSV file, not stdin)")
