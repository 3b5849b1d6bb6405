"""Start-up: the CLI imports libraries only when a command needs them.

Importing torch takes about 1.4 s, scikit-learn (with scipy.stats) and ``datasets`` about a
second each. ``textcls --help`` needs none of them; ``textcls predict RUN TEXT`` needs no
scikit-learn, ``datasets``, matplotlib or benchmark code for a neural run, and no torch for a
fasttext-bag run (NumPy predicts it). Each case runs in a fresh interpreter and lists
``sys.modules`` afterwards: this is the property, not a timing (docs/speed.md has those).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FASTTEXT_RUN = REPO / "tests" / "fixtures" / "runs" / "v2" / "fasttext-bag"
EXPECTED = json.loads((FASTTEXT_RUN.parent / "expected.json").read_text())["fasttext-bag"]
TEXT, LABEL = EXPECTED["texts"][0], EXPECTED["labels"][0]  # what the run predicted when it was saved
NEVER_TO_PREDICT = ("datasets", "matplotlib", "sklearn", "scipy", "pandas", "textcls.benchmark")


def _modules_after(code: str) -> tuple[set[str], str]:
    """The modules loaded by ``code`` in a fresh interpreter, and what it printed first."""
    script = code + "\nimport sys, json\nprint('\\nMODULES ' + json.dumps(sorted(sys.modules)))\n"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stderr
    head, _, modules = out.stdout.rpartition("\nMODULES ")
    return set(json.loads(modules)), head


def _loaded(modules: set[str], prefixes) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes))


def test_importing_the_cli_loads_no_library():
    modules, _ = _modules_after("import textcls.cli")
    assert _loaded(modules, NEVER_TO_PREDICT + ("torch", "tokenizers", "numpy")) == []


def test_help_loads_no_library():
    modules, printed = _modules_after("from textcls.cli import _run\n_run(['--help'])")
    assert "predict" in printed
    assert _loaded(modules, NEVER_TO_PREDICT + ("torch",)) == []


def test_predict_with_a_fasttext_bag_run_loads_no_torch():
    modules, printed = _modules_after(f"from textcls.cli import _run\n"
                                      f"assert _run(['predict', {str(FASTTEXT_RUN)!r}, {TEXT!r}]) == 0")
    assert json.loads(printed.strip())["label"] == LABEL
    assert _loaded(modules, NEVER_TO_PREDICT + ("torch",)) == []


def test_predict_with_a_torch_model_loads_no_scikit_learn_or_datasets():
    # --device auto takes the Estimator (torch) path even for fasttext-bag.
    modules, printed = _modules_after(f"from textcls.cli import _run\n"
                                      f"assert _run(['predict', {str(FASTTEXT_RUN)!r}, {TEXT!r}, '--device', 'auto']) == 0")
    assert json.loads(printed.strip())["label"] == LABEL
    assert "torch" in modules
    assert _loaded(modules, NEVER_TO_PREDICT) == []


def test_training_fasttext_bag_and_static_finetune_builds_no_torch_optimiser(static_vectors, tmp_path):
    # Building any torch optimiser imports torch._dynamo: 1.0-1.7 s, more than fastText's whole
    # fit on trec. The ensemble's two trained members step their own parameters instead
    # (train.optim.EpochRate, models.static_finetune.HeadAdam); its run directory included.
    modules, printed = _modules_after(
        "import textcls\n"
        "data = textcls.load_dataset('trec', max_per_split=300)\n"
        f"bag = textcls.Classifier('fasttext-bag', seed=0).fit_dataset(data, run_dir={str(tmp_path / 'bag')!r})\n"
        "static = textcls.Classifier('static-finetune', seed=0).fit_dataset(data)\n"
        "print(bag.evaluate(data['test'])['accuracy'], static.evaluate(data['test'])['accuracy'])")
    assert all(float(a) > 0.4 for a in printed.split()), printed  # both learnt: 6 classes, the largest 23 %
    assert "torch" in modules and _loaded(modules, ("torch._dynamo",)) == []


def test_the_minilm_encoder_encodes_without_importing_transformers():
    # Importing transformers' BertModel took 2-3 s, more than fastText's whole fit on trec; the
    # ensemble's small-corpus member pays it on every fit and every prediction of its runs.
    modules, printed = _modules_after(
        "from textcls.models.minilm_encoder_lr import MiniLMSentenceFeatures\n"
        "from textcls.text.embeddings import minilm_encoder\n"
        "tokenizer, encoder, _ = minilm_encoder(2)\n"
        "rows = MiniLMSentenceFeatures(tokenizer, encoder, max_seq_length=32, batch=8).transform(['a fine film', 'dull'])\n"
        "print(rows.shape)")
    assert printed.strip() == "(2, 384)"
    assert _loaded(modules, ("transformers", "sentence_transformers", "sklearn", "datasets")) == []
