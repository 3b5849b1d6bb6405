import importlib.util
import os
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = (REPO / ".." / "shared" / "datasets").resolve()

# Tests read the real shared datasets; a user may point elsewhere before running pytest.
os.environ.setdefault("TEXTCLS_DATA_DIR", str(SHARED_DATA))
# The test models are tiny: a second intra-op thread barely speeds them up, and on a shared
# 2-core machine OpenMP threads spinning against other processes made test files 5-10x slower.
torch.set_num_threads(1)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return Path(os.environ["TEXTCLS_DATA_DIR"])


@pytest.fixture(scope="session")
def static_vectors():
    """The distilled MiniLM vectors ``(tokenizer_json, vectors, unk_id, info)``, read from the
    user cache (distilled once, 25-45 s, on a fresh machine)."""
    from textcls.text.embeddings import static_sentence_vectors

    return static_sentence_vectors("minilm-static")


@pytest.fixture(scope="session")
def trec_600():
    """TREC, at most 600 documents a split: enough for a learning signal in seconds."""
    import textcls

    return textcls.load_dataset("trec", max_per_split=600)


def load_benchmark_script(name: str):
    """``benchmarks/<name>.py`` imported as a module (the scripts are not a package)."""
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_ways_script(tmp_path, name: str, entry: str, batches: int = 2):
    """Run ``benchmarks/<name>.py`` (a ``time_epochs.time_ways`` comparison) on a 200-document toy
    suite holding ``entry`` ("dataset:model"); returns (the module, its JSON result, the entry's row)."""
    import json

    dataset, model = entry.split(":")
    suite = tmp_path / "toy.toml"
    suite.write_text('[suite]\nname = "toy"\ndescription = "t"\n[defaults]\nmax_per_split = 200\n'
                     f'[[entry]]\ndataset = "{dataset}"\nmodel = "{model}"\n', encoding="utf-8")
    script = load_benchmark_script(name)
    assert script.main(["--suite", str(suite), "--entries", entry, "--batches", str(batches),
                        "--output", str(tmp_path / name)]) == 0
    result = json.loads((tmp_path / f"{name}.json").read_text())
    row = result["runs"][entry]
    assert row["train_batches_timed"] == batches < row["train_batches"]
    assert f"| `{entry}` | {batches} / " in (tmp_path / f"{name}.md").read_text()
    assert result["command"].startswith(f"OMP_NUM_THREADS=1 python benchmarks/{name}.py --suite")
    return script, result, row


def open_lock_files():
    """The paths of the staging lock files this process has open (as /proc/self/fd reads them; a
    deleted one ends in ' (deleted)')."""
    from textcls.artifacts import STAGING_LOCK

    paths = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # the fd listdir itself used, closed by now
        if f"/{STAGING_LOCK}" in target:
            paths.append(target)
    return paths
