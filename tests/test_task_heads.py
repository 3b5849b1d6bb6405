"""A run with one head per task whose config.json lacks its task names (or holds the wrong
number) is refused when it loads, by every path, in one line naming config.json; an export of
it writes nothing (before the check it wrote a folder its own loader called corrupt)."""

import json
import shutil

import pytest
from tiny_runs import save_tiny_multitask_run

from textcls import Classifier
from textcls.errors import CheckpointError
from textcls.export import export_onnx
from textcls.predictor import Predictor
from textcls.serve import create_app


@pytest.fixture(scope="module")
def mtl_run(tmp_path_factory):
    return save_tiny_multitask_run(tmp_path_factory.mktemp("mtl") / "run", ["books", "dvd", "music"])


def _edited(run, tmp_path, edit):
    copy = tmp_path / "edited"
    shutil.copytree(run, copy)
    config = json.loads((copy / "config.json").read_text())
    edit(config)
    (copy / "config.json").write_text(json.dumps(config))
    return copy


@pytest.mark.parametrize("edit, said", [
    (lambda c: c.pop("task_names"), "'task_names' is missing"),
    (lambda c: c.__setitem__("task_names", None), "'task_names' is missing"),
    (lambda c: c["task_names"].pop(), r"'task_names' holds 2 names \(2 distinct\)"),
    (lambda c: c.__setitem__("task_names", ["books", "books", "dvd"]), r"'task_names' holds 3 names \(2 distinct\)"),
], ids=["missing", "null", "short", "repeated"])
def test_task_names_that_do_not_match_the_heads_are_refused_by_every_path(mtl_run, tmp_path, edit, said):
    copy = _edited(mtl_run, tmp_path, edit)
    match = (f"{copy / 'config.json'}: {said}, but the model has one head per task for 3 tasks "
             r"\('arch' num_tasks\); the file is corrupt or was changed")
    for load in (Classifier.from_pretrained, Predictor.load, lambda r: create_app(r, freeze_gc=False)):
        with pytest.raises(CheckpointError, match=match):
            load(copy)
    with pytest.raises(CheckpointError, match=match):
        export_onnx(copy, tmp_path / "onnx")
    assert not (tmp_path / "onnx").exists()


def test_a_run_with_its_task_names_loads(mtl_run):
    clf = Classifier.from_pretrained(mtl_run)
    assert clf.task_names_ == ["books", "dvd", "music"] and clf.uses_tasks
    assert Predictor.load(mtl_run).task_names == ["books", "dvd", "music"]


def test_a_runs_task_column_loads_and_saves_and_a_bad_one_is_refused(mtl_run, tmp_path):
    """config.json "task_column": the field the run's tasks were read from (left out for the default
    "task"; null: none read), on the loaded Classifier and Predictor, kept by a save; a value that
    is no name is refused as a corrupt config, by name."""
    clf = Classifier.from_pretrained(mtl_run)
    assert clf.task_column_ == "task" and Predictor.load(mtl_run).task_column == "task"
    assert "task_column" not in json.loads((mtl_run / "config.json").read_text())
    named = _edited(mtl_run, tmp_path, lambda c: c.__setitem__("task_column", "domain"))
    clf = Classifier.from_pretrained(named)
    assert clf.task_column_ == "domain" and Predictor.load(named).task_column == "domain"
    clf.save_pretrained(tmp_path / "again")
    assert json.loads((tmp_path / "again" / "config.json").read_text())["task_column"] == "domain"
    for bad in ("", 3, ["domain"]):
        copy = _edited(mtl_run, tmp_path / str(len(str(bad))), lambda c: c.__setitem__("task_column", bad))
        for load in (Classifier.from_pretrained, Predictor.load):
            with pytest.raises(CheckpointError, match=r"'task_column' = .* should be null or the name of the field"):
                load(copy)
