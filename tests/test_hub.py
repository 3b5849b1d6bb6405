"""Runs on the Hugging Face hub: push_to_hub / textcls push and from_pretrained("owner/name"),
online through huggingface_hub's HTTP client and offline from its cache. No network.

The hub is played by ``FakeHub``: a local folder (one sub-folder of files per commit) behind
the few hub API routes that ``huggingface_hub`` calls to create a repository, commit files,
list a revision and download it. It is plugged in with huggingface_hub's own hook for its
HTTP client, ``set_client_factory``, as an ``httpx.MockTransport``: every request the library
makes reaches it in-process, nothing opens a socket, and the library's own code does the rest
(upload modes, the NDJSON commit, ``snapshot_download``'s cache layout, refs and offline
fallback). A request the fake does not know fails the test. docs/hub.md says why this and not
a local HTTP server or a pre-filled cache.
"""

import base64
import hashlib
import json
import shutil
from pathlib import Path

import httpx
import numpy as np
import pytest
import yaml
from huggingface_hub import constants, set_client_factory
from huggingface_hub.utils._http import hf_request_event_hook

import textcls
from textcls import Classifier
from textcls.cli import main
from textcls.errors import CheckpointError, ConfigError, RunFolderError
from textcls.model_hub import hub_repo_id, push_run

ENDPOINT = "https://hub.test"


class FakeHub:
    """A hub in a folder: ``root/<owner>/<name>/<commit sha>/<files>`` and ``refs/main``."""

    def __init__(self, root: Path):
        self.root = root
        self.requests: list[str] = []
        self.unknown: list[str] = []

    # -- storage
    def _repo(self, repo_id: str) -> Path:
        return self.root / repo_id

    def head(self, repo_id: str, revision: str = "main") -> str | None:
        ref = self._repo(repo_id) / "refs" / revision
        if ref.is_file():
            return ref.read_text()
        return revision if (self._repo(repo_id) / revision).is_dir() else None

    def files(self, repo_id: str, revision: str = "main") -> dict[str, bytes]:
        sha = self.head(repo_id, revision)
        folder = self._repo(repo_id) / sha
        return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}

    def _commit(self, repo_id: str, added: dict[str, bytes]) -> str:
        current = self.files(repo_id) if self.head(repo_id) else {}
        current.update(added)
        sha = hashlib.sha1(json.dumps(sorted((k, hashlib.sha1(v).hexdigest()) for k, v in current.items()))
                           .encode()).hexdigest()
        for path, data in current.items():
            target = self._repo(repo_id) / sha / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        (self._repo(repo_id) / "refs").mkdir(parents=True, exist_ok=True)
        (self._repo(repo_id) / "refs" / "main").write_text(sha)
        return sha

    # -- the API routes
    def __call__(self, request: httpx.Request) -> httpx.Response:
        path, method = request.url.path, request.method
        self.requests.append(f"{method} {path}")
        parts = path.strip("/").split("/")
        if method == "POST" and path == "/api/repos/create":
            body = json.loads(request.content)
            repo_id = f"{body.get('organization') or 'me'}/{body['name']}"
            self._repo(repo_id).mkdir(parents=True, exist_ok=True)
            return httpx.Response(200, json={"url": f"{ENDPOINT}/{repo_id}"})
        if path == "/api/agent-harnesses":
            # huggingface_hub's user-agent detection fetches this registry; it copes with none.
            return httpx.Response(404, json={"error": "not served"})
        if method == "POST" and path == "/api/validate-yaml":
            # The hub checks a README's metadata before a commit; here: that it is a YAML mapping.
            front = json.loads(request.content)["content"].split("---\n")
            valid = len(front) >= 3 and isinstance(yaml.safe_load(front[1]), dict)
            return httpx.Response(200 if valid else 400, json={} if valid else {"error": "bad YAML metadata"})
        if parts[:2] == ["api", "models"] and len(parts) >= 6 and parts[4] == "preupload":
            files = json.loads(request.content)["files"]
            return httpx.Response(200, json={"files": [{"path": f["path"], "uploadMode": "regular",
                                                        "shouldIgnore": False} for f in files]})
        if parts[:2] == ["api", "models"] and len(parts) >= 6 and parts[4] == "commit" and method == "POST":
            return self._receive_commit("/".join(parts[2:4]), request)
        if parts[:2] == ["api", "models"] and len(parts) >= 6 and parts[4] in ("revision", "tree"):
            return self._describe("/".join(parts[2:4]), parts[5], parts[4])
        if len(parts) >= 5 and parts[2] == "resolve":
            return self._resolve("/".join(parts[:2]), parts[3], "/".join(parts[4:]), method)
        self.unknown.append(f"{method} {request.url}")
        return httpx.Response(501, json={"error": f"the fake hub does not serve {method} {path}"})

    def _receive_commit(self, repo_id: str, request: httpx.Request) -> httpx.Response:
        added = {}
        for line in request.content.decode().splitlines():
            item = json.loads(line)
            if item["key"] == "file":
                value = item["value"]
                assert value["encoding"] == "base64"
                added[value["path"]] = base64.b64decode(value["content"])
        sha = self._commit(repo_id, added)
        return httpx.Response(200, json={"commitUrl": f"{ENDPOINT}/{repo_id}/commit/{sha}", "commitOid": sha,
                                         "pullRequestUrl": None})

    def _describe(self, repo_id: str, revision: str, what: str) -> httpx.Response:
        sha = self.head(repo_id, revision)
        if sha is None:
            return httpx.Response(404, headers={"X-Error-Code": "RepoNotFound"}, json={"error": "Repository not found"})
        files = self.files(repo_id, sha)
        if what == "revision":
            return httpx.Response(200, json={"id": repo_id, "sha": sha, "private": False,
                                             "siblings": [{"rfilename": name} for name in files]})
        return httpx.Response(200, json=[{"type": "file", "path": name, "size": len(data),
                                          "oid": hashlib.sha1(data).hexdigest()} for name, data in files.items()])

    def _resolve(self, repo_id: str, revision: str, filename: str, method: str) -> httpx.Response:
        sha = self.head(repo_id, revision)
        data = self.files(repo_id, sha).get(filename) if sha else None
        if data is None:
            return httpx.Response(404, headers={"X-Error-Code": "EntryNotFound"}, json={"error": "Entry not found"})
        headers = {"X-Repo-Commit": sha, "ETag": f'"{hashlib.sha1(data).hexdigest()}"',
                   "Content-Length": str(len(data))}
        return httpx.Response(200, headers=headers, content=b"" if method == "HEAD" else data)


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """The fake hub behind huggingface_hub's client, a fresh cache, and offline mode off."""
    fake = FakeHub(tmp_path / "hub")
    monkeypatch.setattr(constants, "ENDPOINT", ENDPOINT)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "AGENT_HARNESSES_PATH", str(tmp_path / "agent_harnesses.json"))
    monkeypatch.setenv("HF_TOKEN", "hf_test_token")  # what a logged-in user sends; the fake accepts it
    # The library's own request hook stays in (it is what refuses requests in offline mode).
    set_client_factory(lambda: httpx.Client(transport=httpx.MockTransport(fake), follow_redirects=True,
                                            event_hooks={"request": [hf_request_event_hook]}))
    yield fake
    from huggingface_hub.utils._http import default_client_factory

    set_client_factory(default_client_factory)
    assert not fake.unknown, f"requests the fake hub does not serve: {fake.unknown}"


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A small fasttext-bag run folder made by `textcls train` (with metrics.json)."""
    run = tmp_path_factory.mktemp("runs") / "fasttext-bag_trec"
    main(["train", "-m", "fasttext-bag", "-d", "trec", "--max-per-split", "300", "--epochs", "2",
          "--set", "bigram_buckets=1024", "--run-dir", str(run), "--no-progress"])
    return run


TEXTS = ["What is the capital of Peru ?", "Who wrote Hamlet ?", "How many feet are in a mile ?"]


def test_push_then_from_pretrained_round_trips_through_the_hub(hub, trained, capsys):
    main(["push", str(trained), "me/fasttext-bag-trec"])
    assert "me/fasttext-bag-trec" in capsys.readouterr().out
    stored = hub.files("me/fasttext-bag-trec")
    assert set(stored) == {"README.md", "config.json", "model.safetensors", "tokenizer.json", "metrics.json",
                           "epochs.csv"}
    assert stored["model.safetensors"] == (trained / "model.safetensors").read_bytes()

    loaded = Classifier.from_pretrained("me/fasttext-bag-trec")
    local = Classifier.from_pretrained(trained)
    np.testing.assert_array_equal(loaded.predict_proba(TEXTS), local.predict_proba(TEXTS))
    # It came through huggingface_hub's resolution into its cache, not from the run folder.
    assert any(r.startswith("GET /api/models/me/fasttext-bag-trec/revision/main") for r in hub.requests)
    cached = Path(constants.HF_HUB_CACHE) / "models--me--fasttext-bag-trec" / "snapshots"
    assert {p.name for p in next(cached.iterdir()).iterdir()} >= {"config.json", "model.safetensors"}
    # "hf:owner/name" names the hub explicitly.
    np.testing.assert_array_equal(Classifier.from_pretrained("hf:me/fasttext-bag-trec").predict_proba(TEXTS),
                                  local.predict_proba(TEXTS))


def test_offline_loads_from_the_cache_without_a_request(hub, trained, monkeypatch):
    Classifier.from_pretrained(trained).push_to_hub("me/offline")
    expected = Classifier.from_pretrained("me/offline").predict_proba(TEXTS)  # fills the cache
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    before = len(hub.requests)
    np.testing.assert_array_equal(Classifier.from_pretrained("me/offline").predict_proba(TEXTS), expected)
    assert len(hub.requests) == before  # the library's offline hook stopped every request
    with pytest.raises(CheckpointError, match="me/never-pushed: not in the Hugging Face cache .* HF_HUB_OFFLINE"):
        Classifier.from_pretrained("me/never-pushed")


def test_a_new_push_is_what_the_next_load_gets(hub, trained, tmp_path):
    clf = Classifier.from_pretrained(trained)
    clf.push_to_hub("me/moving")
    first = Classifier.from_pretrained("me/moving").predict_proba(TEXTS)
    retrained = Classifier("fasttext-bag", epochs=1, seed=5, params={"bigram_buckets": 1024}).fit_dataset(
        textcls.load_dataset("trec", max_per_split=200))
    retrained.push_to_hub("me/moving")
    second = Classifier.from_pretrained("me/moving").predict_proba(TEXTS)
    np.testing.assert_array_equal(second, retrained.predict_proba(TEXTS))
    assert not np.array_equal(first, second)


def test_the_model_card_describes_the_run(hub, trained):
    main(["push", str(trained), "me/card"])
    card = hub.files("me/card")["README.md"].decode()
    assert card.startswith("---\n")
    meta = yaml.safe_load(card.split("---\n")[1])
    assert meta["library_name"] == "textcls" and meta["pipeline_tag"] == "text-classification"
    assert {"textcls", "text-classification", "fasttext-bag"} <= set(meta["tags"])
    assert meta["datasets"] == ["trec"] and "accuracy" in meta["metrics"]
    test_metrics = json.loads((trained / "metrics.json").read_text())["test"]
    result = meta["model-index"][0]["results"][0]
    assert result["dataset"]["name"] == "trec"
    assert result["metrics"][0] == {"type": "accuracy", "value": round(test_metrics["accuracy"], 4),
                                    "name": "Accuracy"}
    body = card.split("---\n", 2)[2]
    for needed in ("`fasttext-bag`", "Joulin et al. 2017", "## Data", "`trec`", "## Metrics",
                   f"| accuracy | {test_metrics['accuracy']:.4f} |", 'Classifier.from_pretrained("me/card")'):
        assert needed in body, needed


def test_missing_repositories_and_bad_ids_are_one_line_errors(hub, trained, tmp_path, capsys):
    with pytest.raises(CheckpointError, match="no such local run folder, and no model repository 'me/absent'"):
        Classifier.from_pretrained("me/absent")
    assert main_code(["push", str(tmp_path / "no-run"), "me/x"]) == 2
    assert "no such run directory" in capsys.readouterr().err
    assert main_code(["push", str(trained), "not a repo id"]) == 2
    assert "is not a hub model id" in capsys.readouterr().err


def test_local_folders_win_and_paths_are_never_hub_ids(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert hub_repo_id("owner/name") == "owner/name"
    assert hub_repo_id("hf:owner/name") == "owner/name"
    (tmp_path / "owner" / "name").mkdir(parents=True)
    assert hub_repo_id("owner/name") is None  # the local folder of that name
    assert hub_repo_id(Path("other/name")) is None
    assert hub_repo_id("/abs/run") is None and hub_repo_id("run") is None and hub_repo_id("./a/b") is None


def main_code(argv) -> int:
    try:
        main(argv)
    except SystemExit as exc:
        return exc.code
    return 0


# --------------------------------------------------------------------------- no connection, bad arguments


@pytest.fixture
def unreachable(tmp_path, monkeypatch):
    """huggingface_hub's own HTTP client, pointed at a local port where nothing listens."""
    import socket

    from huggingface_hub.utils._http import default_client_factory

    with socket.socket() as sock:  # a free port, closed again: connecting is refused at once
        sock.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{sock.getsockname()[1]}"
    set_client_factory(default_client_factory)
    monkeypatch.setattr(constants, "ENDPOINT", endpoint)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "AGENT_HARNESSES_PATH", str(tmp_path / "agent_harnesses.json"))
    monkeypatch.setenv("HF_TOKEN", "hf_test_token")
    return endpoint


def test_an_unreachable_hub_is_a_one_line_error_when_pushing(unreachable, trained, capsys):
    assert main_code(["push", str(trained), "me/x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    assert f"the hub at {unreachable} could not be reached" in err and "HF_ENDPOINT" in err
    with pytest.raises(RunFolderError, match=f"the hub at {unreachable} could not be reached .*check the network"):
        Classifier.from_pretrained(trained).push_to_hub("me/x")


def test_pushing_offline_says_HF_HUB_OFFLINE_is_set(hub, trained, monkeypatch, capsys):
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    assert main_code(["push", str(trained), "me/x"]) == 2
    err = capsys.readouterr().err
    assert "pushing needs the network and HF_HUB_OFFLINE is set; unset it" in err
    assert "check the path and the disk" not in err and "Traceback" not in err
    with pytest.raises(RunFolderError, match="HF_HUB_OFFLINE is set"):
        Classifier.from_pretrained(trained).push_to_hub("me/x")
    assert not hub.requests  # the library's offline hook stopped them all


def test_bad_revisions_are_config_errors_and_a_missing_cached_revision_is_named(hub, trained, monkeypatch, capsys):
    for bad in ("", "  ", 5):
        with pytest.raises(ConfigError, match=r"revision=.*: must be a non-empty string, a branch, tag or commit"):
            Classifier.from_pretrained("hf:me/rev", revision=bad)
        with pytest.raises(ConfigError, match=r"revision=.*: must be a non-empty string"):
            push_run(trained, "me/rev", revision=bad)
    assert main_code(["push", str(trained), "me/rev", "--revision", ""]) == 2
    assert "revision='': must be a non-empty string" in capsys.readouterr().err
    assert not hub.requests

    Classifier.from_pretrained(trained).push_to_hub("me/rev")
    Classifier.from_pretrained("me/rev")  # main is now in the cache
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(CheckpointError, match="me/rev: revision 'v9' is not in the Hugging Face cache"):
        Classifier.from_pretrained("me/rev", revision="v9")
    # A commit id asks the hub for its file tree, which offline raised huggingface_hub's own
    # OfflineModeIsEnabled, not the one-line error a branch name gets.
    with pytest.raises(CheckpointError, match=f"me/rev: revision '{'b' * 40}' is not in the Hugging Face cache"):
        Classifier.from_pretrained("me/rev", revision="b" * 40)


def test_hub_options_for_a_local_folder_are_refused(trained):
    """revision=, cache_dir= and token= were ignored for a local folder, which wins over the hub."""
    for option, value in (("revision", "v9"), ("cache_dir", "/tmp/elsewhere"), ("token", "hf_x")):
        with pytest.raises(ConfigError, match=rf"^{option}= applies to a model on the Hugging Face hub, and "
                                              rf"{trained} is a local folder, which is loaded as it is; drop {option}="):
            Classifier.from_pretrained(trained, **{option: value})


def test_the_card_of_a_model_fitted_on_lists_says_so(hub):
    """The card of Classifier.fit(X, y) on TF-IDF said 'Dataset: a local folder, `user-data`' and
    'Training: adam lr 0.001, 1 epochs, batch 50', a recipe the model never used."""
    Classifier("tfidf-lr").fit(TEXTS * 4, ["a", "b", "c"] * 4).push_to_hub("me/lists")
    body = hub.files("me/lists")["README.md"].decode().split("---\n", 2)[2]
    assert "- Dataset: texts and labels given to `Classifier.fit` (not published with the model)" in body
    assert "- Training: fitted by its own solver (TF-IDF, static vectors: no epochs or batches of a recipe)" in body
    assert "local folder" not in body and "epochs, batch" not in body


def test_metrics_that_are_not_metrics_json_are_refused_before_any_request(hub, trained, tmp_path, capsys):
    clf = Classifier.from_pretrained(trained)
    with pytest.raises(ConfigError, match="push_to_hub: metrics is a str, not a dict; pass a dict"):
        clf.push_to_hub("me/x", metrics="x")
    with pytest.raises(ConfigError, match=r'push_to_hub: metrics\["test"\] is a list, not a dict'):
        clf.push_to_hub("me/x", metrics={"test": [0.9]})
    with pytest.raises(ConfigError, match="push_to_hub: metrics cannot be written as JSON .* no NaN"):
        clf.push_to_hub("me/x", metrics={"test": {"accuracy": float("nan")}})
    assert not hub.requests
    run = tmp_path / "run"
    shutil.copytree(trained, run)
    (run / "metrics.json").write_text("[1, 2]")
    assert main_code(["push", str(run), "me/x"]) == 2
    err = capsys.readouterr().err
    assert f"{run / 'metrics.json'}: metrics is a list, not a dict; the run directory is corrupt" in err
    assert not hub.requests


# --------------------------------------------------------------------------- the card's commands


def _tiny_multi_task():
    import datasets

    from textcls.data.records import TextDataset

    good, bad = ["great", "good", "lovely", "fine"], ["bad", "awful", "poor", "broken"]
    texts = [f"this one is {(good if i % 2 == 0 else bad)[i % 4]} and {(good + bad)[i % 8]}" for i in range(64)]
    labels = ["positive" if i % 2 == 0 else "negative" for i in range(64)]
    tasks = [["home & kitchen", "dvd"][(i // 2) % 2] for i in range(64)]
    splits = datasets.DatasetDict({"train": datasets.Dataset.from_dict({"text": texts, "label": labels, "task": tasks})})
    return TextDataset("tiny-mtl", splits, ["negative", "positive"], task_names=["home & kitchen", "dvd"])


@pytest.mark.parametrize("preset, params, heads", [("fcsr-mtl", {"embeddings": None, "epochs": 1, "batch_size": 16}, True),
                                                   ("tfidf-lr", {}, False)])
def test_the_cards_commands_run_on_a_multi_task_run(tmp_path, monkeypatch, capsys, preset, params, heads):
    """The card of a run with one head per task said `textcls predict run "a text"`, which fails
    (no task); one of a model that pools the tasks passed a task, which that model refuses."""
    import shlex

    from textcls import artifacts, cli
    from textcls.model_hub import model_card

    clf = Classifier(preset, params=params).fit_dataset(_tiny_multi_task())
    assert clf.uses_tasks is heads
    clf.save_pretrained(tmp_path / "run")
    card = model_card(artifacts.read_config(tmp_path / "run"), None, "me/mtl")
    python = next(line for line in card.splitlines() if line.startswith("clf.predict("))
    command = next(line for line in card.splitlines() if line.startswith("textcls predict "))
    assert ('--task "home & kitchen"' in command or "--task 'home & kitchen'" in command) is heads
    assert ('tasks=["home & kitchen"]' in python) is heads
    predicted = eval(python, {"clf": Classifier.from_pretrained(tmp_path / "run")})
    assert len(predicted) == 1
    monkeypatch.chdir(tmp_path)  # the card's `hf download ... --local-dir run` put the run here
    capsys.readouterr()
    assert cli._run(shlex.split(command)[1:]) == 0, capsys.readouterr().err
    assert json.loads(capsys.readouterr().out)["label"] == predicted[0]


def test_the_card_of_a_run_trained_with_a_named_task_column_names_it(tmp_path):
    """config.json "task_column": the card says which field of the data held the tasks."""
    from textcls import artifacts
    from textcls.model_hub import model_card

    clf = Classifier("tfidf-lr").fit_dataset(_tiny_multi_task())
    clf.save_pretrained(tmp_path / "run")
    assert "task_column" not in model_card(artifacts.read_config(tmp_path / "run"), None, "me/mtl")
    clf.task_column_ = "domain"
    clf.save_pretrained(tmp_path / "named")
    card = model_card(artifacts.read_config(tmp_path / "named"), None, "me/mtl")
    assert "- The tasks were read from the data's `domain` field or column (`task_column=\"domain\"`)" in card
