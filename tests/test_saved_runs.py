"""A run saved by an earlier textcls still loads and predicts what it predicted then.

``tests/fixtures/runs/v<N>/`` holds tiny runs of run-folder format version N (made by
``tests/fixtures/runs/make_runs.py``) and ``expected.json``, the labels and probabilities
they gave when they were saved.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from textcls import Classifier
from tolerance import KERNEL

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "runs"
RUNS = [(version.name, run.name) for version in sorted(FIXTURES.glob("v*")) for run in sorted(version.iterdir())
        if run.is_dir()]


def test_there_is_a_fixture_of_every_format_version():
    from textcls.artifacts import FORMAT_VERSION

    assert {version for version, _ in RUNS} == {f"v{n}" for n in range(1, FORMAT_VERSION + 1)}


@pytest.mark.parametrize("version, run", RUNS)
def test_a_saved_run_loads_and_predicts_as_it_did(version, run):
    expected = json.loads((FIXTURES / version / "expected.json").read_text(encoding="utf-8"))[run]
    clf = Classifier.from_pretrained(FIXTURES / version / run)
    assert [str(label) for label in clf.predict(expected["texts"])] == expected["labels"]
    probs = clf.predict_proba(expected["texts"])
    np.testing.assert_allclose(probs, np.array(expected["probabilities"]), **KERNEL)


@pytest.mark.parametrize("run", ["tfidf-lr", "fasttext-bag"])
def test_a_run_loads_after_its_preset_is_renamed(run, tmp_path):
    """config.json is the preset's own to_dict(): the model is rebuilt from its family and
    architecture, so a preset renamed (or removed) since the run was saved does not matter."""
    import shutil

    from textcls.artifacts import FORMAT_VERSION

    version = f"v{FORMAT_VERSION}"
    expected = json.loads((FIXTURES / version / "expected.json").read_text(encoding="utf-8"))[run]
    copy = shutil.copytree(FIXTURES / version / run, tmp_path / run)
    config = json.loads((copy / "config.json").read_text(encoding="utf-8"))
    assert config["name"] == config["model"] == run and config["family"] and config["arch"] is not None
    config.update(model="no-such-preset", name="no-such-preset")
    config["estimator"]["model"] = "no-such-preset"
    (copy / "config.json").write_text(json.dumps(config), encoding="utf-8")
    clf = Classifier.from_pretrained(copy)
    assert clf.model == clf.preset_.name == "no-such-preset"
    assert [str(label) for label in clf.predict(expected["texts"])] == expected["labels"]
