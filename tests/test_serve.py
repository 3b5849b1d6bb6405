"""textcls.serve: every endpoint, every malformed request (a 4xx with a one-line JSON error,
and the server still up), micro-batching (fewer model calls than requests, same answers as
one at a time), per-task heads, the multi-label threshold, and a real uvicorn socket."""

import asyncio
import gc
import gzip
import json
import shutil
import socket
import threading
import time

import httpx
import numpy as np
import pytest
import torch
from fastapi.testclient import TestClient
from tiny_runs import save_tiny_multitask_run
from tolerance import KERNEL

import textcls
from textcls import Classifier, artifacts
from textcls.data import load_dataset
from textcls.errors import CheckpointError, ConfigError, DataError, ModelError
from textcls.serve import ENV_RUN, MicroBatcher, app_from_env, create_app



def make_app(run, **settings):
    """create_app without gc.freeze(): a frozen pytest process would keep every cycle made
    before it alive for the rest of the session (test_startup_freezes_the_loaded_objects checks
    the default)."""
    return create_app(run, freeze_gc=False, **settings)


QUESTIONS = ["what is the capital of france ?", "who wrote hamlet ?", "how many feet are in a mile ?",
             "what does nasa stand for ?", "where is the eiffel tower ?", "why is the sky blue ?"]


# --------------------------------------------------------------------------- runs


@pytest.fixture(scope="session")
def trec_run(tmp_path_factory):
    """fasttext-bag on 500 trec questions, saved with a metrics.json like `textcls train` writes."""
    ds = load_dataset("trec", max_per_split=500)
    clf = Classifier("fasttext-bag", epochs=3).fit(list(ds["train"]["text"]), list(ds["train"]["label"]))
    run = tmp_path_factory.mktemp("trec_run")
    clf.save_pretrained(run)
    test = clf.evaluate(ds["test"])
    artifacts.write_json(run / artifacts.METRICS, {"dataset": ds.summary(), "train_seconds": 1.5, "test": test})
    return run, Classifier.from_pretrained(run), test


@pytest.fixture(scope="session")
def mtl_run(tmp_path_factory):
    """fcsr-mtl (one head per task, attention maps) on a tiny two-task set, no GloVe."""
    run = save_tiny_multitask_run(tmp_path_factory.mktemp("mtl_run"), ["books", "dvd"])
    return run, Classifier.from_pretrained(run)


@pytest.fixture(scope="session")
def multi_label_run(tmp_path_factory):
    texts = ["red apple", "green apple", "red car", "blue car", "red green thing", "blue thing"] * 4
    labels = [["red", "fruit"], ["green", "fruit"], ["red"], ["blue"], ["red", "green"], ["blue"]] * 4
    clf = Classifier("fasttext-bag", epochs=2).fit(texts, labels)
    run = tmp_path_factory.mktemp("ml_run")
    clf.save_pretrained(run)
    return run, Classifier.from_pretrained(run)


@pytest.fixture(scope="session")
def client(trec_run):
    with TestClient(make_app(trec_run[0])) as c:
        yield c


@pytest.fixture(scope="session")
def small_client(trec_run):
    """Small limits, so every limit is cheap to cross."""
    app = make_app(trec_run[0], max_texts=4, max_text_bytes=100, max_body_bytes=8000)
    with TestClient(app) as c:
        yield c


@pytest.fixture(scope="session")
def mtl_client(mtl_run):
    with TestClient(make_app(mtl_run[0])) as c:
        yield c


def assert_error(response, status: int, match: str):
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}, body
    message = body["error"]
    assert isinstance(message, str) and message and "\n" not in message
    assert match in message, message
    return message


# --------------------------------------------------------------------------- endpoints


def test_predict_one_text_and_many_match_the_classifier(client, trec_run):
    _, clf, _ = trec_run
    one = client.post("/predict", json={"text": QUESTIONS[0]})
    assert one.status_code == 200
    body = one.json()
    assert body["model"] == "fasttext-bag" and len(body["predictions"]) == 1
    many = client.post("/predict", json={"texts": QUESTIONS}).json()["predictions"]
    expected = clf.predict_proba(QUESTIONS)
    labels = [str(c) for c in clf.classes_]
    for pred, row, name in zip(many, expected, clf.predict(QUESTIONS)):
        assert list(pred["probabilities"]) == labels
        np.testing.assert_allclose([pred["probabilities"][k] for k in labels], row, **KERNEL)
        assert pred["label"] == name
    assert body["predictions"][0] == many[0] or body["predictions"][0]["label"] == many[0]["label"]


def test_health_counts_requests_and_model_calls(client):
    before = client.get("/health").json()
    client.post("/predict", json={"texts": QUESTIONS[:2]})
    after = client.get("/health")
    assert after.status_code == 200
    body = after.json()
    assert body["status"] == "ok" and body["model"] == "fasttext-bag"
    assert body["requests"] == before["requests"] + 1 and body["texts"] == before["texts"] + 2
    assert body["model_calls"] == before["model_calls"] + 1


def test_metadata_names_the_preset_labels_dataset_metrics_and_version(client, trec_run):
    _, clf, test = trec_run
    meta = client.get("/metadata").json()
    assert meta["preset"] == "fasttext-bag" and meta["family"] == "fasttext-bag" and meta["kind"] == "neural"
    assert meta["labels"] == [str(c) for c in clf.classes_]
    assert meta["multi_label"] is False and meta["tasks"] is None and meta["threshold"] is None
    assert meta["dataset"] == "user-data" and meta["dataset_summary"]["name"] == "trec"
    assert meta["metrics"]["test"]["accuracy"] == test["accuracy"]
    assert "confusion_matrix" not in meta["metrics"]["test"]
    assert meta["textcls_version"] == textcls.__version__ and meta["explain"] is False
    assert meta["limits"] == {"max_texts": 64, "max_text_bytes": 50_000, "max_body_bytes": 4 * 1024 * 1024}
    assert meta["parameters"]["total"] > 0 and meta["torch_threads"] == 1


def test_explain_on_a_model_without_attention_maps_is_a_422(client):
    assert_error(client.post("/explain", json={"text": QUESTIONS[0]}), 422, "has no attention maps")


def test_unknown_path_and_method_are_json_errors(client):
    assert_error(client.get("/nope"), 404, "the endpoints are POST /predict")
    assert_error(client.get("/predict"), 405, "method GET is not allowed on /predict")
    assert_error(client.post("/health"), 405, "not allowed")


# --------------------------------------------------------------------------- malformed requests

LONG = "word " * 30  # 150 bytes, over small_client's 100
MALFORMED = [
    # (id, body bytes, status, part of the message)
    ("malformed-json", b'{"text": ', 400, "not valid JSON"),
    ("trailing-garbage", b'{"text": "a"} x', 400, "not valid JSON"),
    ("empty-body", b"", 400, "request body is empty"),
    ("not-utf8", b'{"text": "caf\xe9"}', 400, "not UTF-8"),
    ("deep-nesting", b"[" * 1999, 400, "nested too deeply"),
    ("huge-integer", b'{"text": ' + b"1" * 5000 + b"}", 400, "4300 digits"),
    # Until stop 63 the first list was dropped without a word (json.loads keeps the last value).
    ("repeated-key", b'{"texts": ["good film"], "texts": ["bad"]}', 400, "names the key 'texts' twice"),
    ("array-body", b'["a", "b"]', 422, "not a JSON object"),
    ("string-body", b'"hello"', 422, "not a JSON object"),
    ("missing-field", b"{}", 422, "missing field 'texts'"),
    ("unknown-field", b'{"txt": "hello"}', 422, "unknown field 'txt'"),
    ("text-and-texts", b'{"text": "a", "texts": ["b"]}', 422, "not both"),
    ("text-not-string", b'{"text": 5}', 422, "field 'text' is a number, not a string"),
    ("text-null", b'{"text": null}', 422, "field 'text' is null"),
    ("texts-a-string", b'{"texts": "hello"}', 422, "not a list of strings"),
    ("texts-an-object", b'{"texts": {"a": 1}}', 422, "field 'texts' is an object"),
    ("texts-item-not-string", b'{"texts": ["a", ["b"]]}', 422, "texts[1] is an array, not a string"),
    ("texts-item-bool", b'{"texts": [true]}', 422, "texts[0] is a boolean"),
    ("texts-empty-list", b'{"texts": []}', 422, "empty list"),
    ("empty-text", b'{"text": ""}', 422, "field 'text' is empty"),
    ("blank-text", b'{"texts": ["ok", " \\n\\t "]}', 422, "texts[1] is only whitespace"),
    ("lone-surrogate", b'{"text": "a\\ud800b"}', 422, "unpaired surrogate"),
    ("too-many-texts", json.dumps({"texts": ["a"] * 5}).encode(), 413, "5 texts, more than the limit of 4"),
    ("text-too-long", json.dumps({"texts": ["ok", LONG]}).encode(), 413, "texts[1] is 150 bytes"),
    ("body-too-large", json.dumps({"text": "a" * 9000}).encode(), 413, "limit of 8000"),
    ("task-on-single-task-model", b'{"text": "a", "task": "books"}', 422, "no per-task heads"),
]


@pytest.mark.parametrize("body,status,match", [c[1:] for c in MALFORMED], ids=[c[0] for c in MALFORMED])
def test_a_malformed_request_is_a_one_line_4xx_and_the_server_stays_up(small_client, body, status, match):
    response = small_client.post("/predict", content=body, headers={"content-type": "application/json"})
    assert_error(response, status, match)
    assert small_client.get("/health").json()["status"] == "ok"
    assert small_client.post("/predict", json={"text": "who are you ?"}).status_code == 200


class _CountingStr(str):
    """A text that counts its UTF-8 encodings."""

    encodes = 0

    def encode(self, *args, **kwargs):
        type(self).encodes += 1
        return super().encode(*args, **kwargs)


def test_a_valid_text_is_encoded_once():
    """Until stop 65 every valid text was encoded twice: once to look for a lone surrogate, once
    to measure its size."""
    from textcls.serve import Limits, RequestError, _check_text

    _CountingStr.encodes = 0
    assert _check_text(_CountingStr("who wrote hamlet ?"), "field 'text'", Limits()) == "who wrote hamlet ?"
    assert _CountingStr.encodes == 1
    # The same answers as before, in the same order: a surrogate before the size.
    with pytest.raises(RequestError) as err:
        _check_text("a\ud800" + "b" * 200, "texts[1]", Limits(max_text_bytes=100))
    assert (err.value.status, err.value.message) == (422, "texts[1] holds an unpaired surrogate ('\\ud800' at character 1); "
                                                       "send valid Unicode text")


def test_a_query_string_on_a_post_route_or_a_compressed_body_is_refused_not_ignored(small_client):
    """Until stop 63 `POST /predict?threshold=0.9` answered 200 as if the parameter were not there,
    and a gzip body was 'not UTF-8 (byte 1)'."""
    assert_error(small_client.post("/predict?threshold=0.9", json={"text": "who are you ?"}), 422,
                 "query parameter 'threshold' is not read")
    # The GET routes take no input: a monitor's cache-buster is no mistake there.
    assert small_client.get("/health?_=1733480000").status_code == 200
    assert small_client.get("/metadata?_=1733480000").status_code == 200
    packed = gzip.compress(b'{"text": "who are you ?"}')
    assert_error(small_client.post("/predict", content=packed, headers={"content-type": "application/json",
                                                                        "content-encoding": "gzip"}),
                 415, "Content-Encoding 'gzip'")
    assert small_client.post("/predict", json={"text": "who are you ?"}, headers={"content-encoding": "identity"}
                             ).status_code == 200


def test_explain_takes_one_text(mtl_client):
    assert_error(mtl_client.post("/explain", json={"texts": ["a"], "task": "dvd"}), 422, "takes one text")
    assert_error(mtl_client.post("/explain", json={"task": "dvd"}), 422, "missing field 'text'")


def test_a_textcls_error_from_the_model_is_a_422_with_its_message(trec_run, monkeypatch):
    app = make_app(trec_run[0])

    def refuse(texts, tasks):
        raise DataError("text 0 is odd; do something else", index=0)

    monkeypatch.setattr(app.state.batcher, "predict", refuse)
    with TestClient(app) as c:
        assert_error(c.post("/predict", json={"text": "hello"}), 422, "text 0 is odd; do something else")
        assert c.get("/health").json()["status"] == "ok"


def test_a_broken_model_is_a_500_json_error_not_a_crash(trec_run, monkeypatch):
    app = make_app(trec_run[0])

    def broken(texts, tasks):
        raise ModelError("the model produced NaN or Inf probabilities for text 0", index=0)

    monkeypatch.setattr(app.state.batcher, "predict", broken)
    with TestClient(app, raise_server_exceptions=False) as c:
        assert_error(c.post("/predict", json={"text": "hello"}), 500, "NaN or Inf")
        assert c.get("/health").json()["status"] == "ok"


# --------------------------------------------------------------------------- per-task heads


def test_a_multi_task_model_needs_a_known_task_per_text(mtl_client, mtl_run):
    _, clf = mtl_run
    texts = ["this one is great", "this one is awful", "fine and poor"]
    one = mtl_client.post("/predict", json={"texts": texts, "task": "dvd"}).json()["predictions"]
    per = mtl_client.post("/predict", json={"texts": texts, "tasks": ["books", "dvd", "books"]}).json()["predictions"]
    for preds, tasks in ((one, ["dvd"] * 3), (per, ["books", "dvd", "books"])):
        expected = clf.predict_proba(texts, tasks=tasks)
        np.testing.assert_allclose([[p["probabilities"][k] for k in ("negative", "positive")] for p in preds],
                                   expected, **KERNEL)
    assert mtl_client.get("/metadata").json()["tasks"] == ["books", "dvd"]
    assert_error(mtl_client.post("/predict", json={"text": "x"}), 422, "missing field 'task'")
    assert_error(mtl_client.post("/predict", json={"text": "x", "task": "garden"}), 422,
                 "field 'task' is 'garden', a task the model was not trained on (tasks: books, dvd)")
    assert_error(mtl_client.post("/predict", json={"texts": ["x", "y"], "tasks": ["dvd", "toys"]}), 422, "tasks[1]")
    assert_error(mtl_client.post("/predict", json={"texts": ["x", "y"], "tasks": ["dvd"]}), 422, "1 tasks for 2 texts")
    assert_error(mtl_client.post("/predict", json={"text": "x", "task": 3}), 422, "field 'task' is a number")
    assert_error(mtl_client.post("/predict", json={"text": "x", "tasks": "dvd"}), 422, "field 'tasks' is a string")
    assert_error(mtl_client.post("/predict", json={"text": "x", "task": "dvd", "tasks": ["dvd"]}), 422, "not both")
    assert mtl_client.get("/health").json()["status"] == "ok"


def test_explain_returns_the_attention_maps_and_tokens(mtl_client, mtl_run):
    _, clf = mtl_run
    response = mtl_client.post("/explain", json={"text": "this one is great and unheard", "task": "books"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["tokens"] == ["this", "one", "is", "great", "and", "[UNK]"]
    feature = body["attentions"]["feature"]
    values = np.asarray(feature["values"])
    assert list(values.shape) == feature["shape"] and values.size > 0 and np.isfinite(values).all()
    expected = clf.predict_proba(["this one is great and unheard"], tasks=["books"])[0]
    np.testing.assert_allclose([body["probabilities"][k] for k in ("negative", "positive")], expected, **KERNEL)
    assert mtl_client.get("/metadata").json()["explain"] is True
    assert_error(mtl_client.post("/explain", json={"text": "x", "task": "toys"}), 422, "not trained on")


def test_a_model_with_no_word_maps_explains_over_http_and_the_cli_says_where(mtl_run, mtl_client, tmp_path, capsys):
    """FCSR's maps are over features: POST /explain answers 200 with the raw map and no rows, as
    docs/serve.md promises; `textcls explain` cannot draw a page of no rows, so it refuses in one
    line that says where the raw maps are (it once said only that there was no page), writing nothing."""
    from textcls.cli import _run

    body = mtl_client.post("/explain", json={"text": "this one is great", "task": "books"}).json()
    assert body["word_attention"] == [] and body["sentence_attention"] == [] and "feature" in body["attentions"]
    capsys.readouterr()
    code = _run(["explain", str(mtl_run[0]), "this one is great", "--task", "books", "-o", str(tmp_path / "ex")])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert err.startswith("error: model 'fcsr-mtl' has attention maps, but none over the words (a map of features), "
                          "so there is no page to draw; its raw maps are in Classifier.explain's and POST /explain's "
                          "'attentions'"), err
    assert not (tmp_path / "ex").exists()


def test_explain_on_a_hierarchical_model_gives_tokens_and_maps_per_sentence(tmp_path):
    texts = ["a tender, funny film. i loved it!", "dull and boring. bad acting."] * 6  # min_freq 5
    clf = Classifier("han-cpu", epochs=1, params={"embeddings": None}).fit(texts, ["pos", "neg"] * 6)
    clf.save_pretrained(tmp_path)
    with TestClient(make_app(tmp_path)) as c:
        body = c.post("/explain", json={"text": "A funny film. I loved its zebra!"}).json()
    assert body["tokens"] == [["a", "funny", "film", "."], ["i", "loved", "[UNK]", "[UNK]", "!"]]
    word, sentence = body["attentions"]["word"], body["attentions"]["sentence"]
    assert word["shape"] == [2, 5] and sentence["shape"] == [2]
    assert np.asarray(word["values"])[0, 4] == 0  # padding of the shorter sentence
    np.testing.assert_allclose(np.asarray(word["values"]).sum(axis=1), [1, 1], **KERNEL)
    np.testing.assert_allclose(sum(sentence["values"]), 1, **KERNEL)


# --------------------------------------------------------------------------- multi-label


def test_multi_label_answers_the_labels_over_the_saved_threshold(multi_label_run, tmp_path):
    run, clf = multi_label_run
    with TestClient(make_app(run)) as c:
        body = c.post("/predict", json={"texts": ["red apple", "blue car"]}).json()
        assert body["threshold"] == 0.5
        for pred, row in zip(body["predictions"], clf.predict_proba(["red apple", "blue car"])):
            expected = [str(name) for name, p in zip(clf.classes_, row) if p >= 0.5]
            assert pred["labels"] == expected and "label" not in pred
    for threshold, everything in ((1e-9, True), (1.0, False)):  # 0 is refused (tests/test_threshold.py)
        copy = tmp_path / f"t{threshold}"
        shutil.copytree(run, copy)
        config = json.loads((copy / "config.json").read_text())
        config["threshold"] = threshold
        (copy / "config.json").write_text(json.dumps(config))
        with TestClient(make_app(copy)) as c:
            assert c.get("/metadata").json()["threshold"] == threshold
            labels = c.post("/predict", json={"text": "red apple"}).json()["predictions"][0]["labels"]
            assert labels == ([str(x) for x in clf.classes_] if everything else [])


# --------------------------------------------------------------------------- micro-batching


def test_concurrent_requests_share_model_calls_and_get_the_one_by_one_answers(trec_run):
    _, clf, _ = trec_run
    app = make_app(trec_run[0], batch_window_ms=100)
    requests = [{"text": q} for q in QUESTIONS] + [{"texts": QUESTIONS[i:i + 3]} for i in range(4)] * 3
    calls = []
    predict = app.state.batcher.predict
    app.state.batcher.predict = lambda texts, tasks: calls.append(len(texts)) or predict(texts, tasks)

    async def main():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as ac:
            return await asyncio.gather(*(ac.post("/predict", json=r) for r in requests))

    responses = asyncio.run(main())
    assert all(r.status_code == 200 for r in responses)
    assert 1 <= len(calls) < len(requests) and max(app.state.batcher.batch_sizes) > 1
    assert sum(calls) == sum(len(r.get("texts", [0])) for r in requests)
    labels = [str(c) for c in clf.classes_]
    for request, response in zip(requests, responses):
        texts = request.get("texts", [request.get("text")])
        alone = np.concatenate([clf.predict_proba([t]) for t in texts])
        got = [[p["probabilities"][k] for k in labels] for p in response.json()["predictions"]]
        np.testing.assert_allclose(got, alone, **KERNEL)


def _run_batcher(predict, items, *, window_ms=50.0, max_batch=256):
    async def main():
        import concurrent.futures

        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            batcher = MicroBatcher(predict, pool, window_ms=window_ms, max_batch=max_batch)
            results = await asyncio.gather(*(batcher.submit(t, None) for t in items), return_exceptions=True)
            await batcher.stop()
            return batcher, results

    return asyncio.run(main())


def _fake_predict(calls):
    def predict(texts, tasks):
        calls.append(list(texts))
        if "bad" in texts:
            raise DataError(f"text {texts.index('bad')} is bad", index=texts.index("bad"))
        return np.array([[len(t), 0.0] for t in texts])
    return predict


def test_one_bad_request_in_a_batch_fails_alone():
    calls = []
    items = [["a"], ["bb", "ccc"], ["bad"], ["dddd"]]
    batcher, results = _run_batcher(_fake_predict(calls), items)
    assert isinstance(results[2], DataError)
    for item, result in zip(items[:2] + items[3:], results[:2] + results[3:]):
        assert result[:, 0].tolist() == [len(t) for t in item]
    assert calls[0] == ["a", "bb", "ccc", "bad", "dddd"] and batcher.stats["retried_batches"] == 1


def test_max_batch_caps_the_texts_per_model_call():
    calls = []
    items = [["a", "b", "c"]] * 5
    batcher, results = _run_batcher(_fake_predict(calls), items, max_batch=7)
    assert all(len(c) <= 7 for c in calls) and sum(map(len, calls)) == 15 and len(calls) == 3
    assert all(r[:, 0].tolist() == [1, 1, 1] for r in results)
    batcher, results = _run_batcher(_fake_predict(calls := []), [["x"] * 9], max_batch=4)
    assert calls == [["x"] * 9]  # a request over max_batch runs alone, whole


def test_window_zero_still_batches_what_is_already_queued():
    calls = []
    batcher, results = _run_batcher(_fake_predict(calls), [["a"]] * 6, window_ms=0)
    assert sum(map(len, calls)) == 6 and len(calls) < 6


# --------------------------------------------------------------------------- settings


def test_threads_default_to_one_in_the_worker_and_its_model_thread(trec_run):
    torch.set_num_threads(2)
    try:
        app = make_app(trec_run[0])
        assert torch.get_num_threads() == 1
        assert app.state.executor.submit(torch.get_num_threads).result() == 1
    finally:
        torch.set_num_threads(1)


@pytest.mark.parametrize("setting", [{"max_texts": 0}, {"max_text_bytes": -1}, {"max_body_bytes": 1.5},
                                     {"batch_window_ms": -1}, {"max_batch": 0}, {"torch_threads": 0}])
def test_bad_settings_are_config_errors(trec_run, setting):
    with pytest.raises(ConfigError, match=list(setting)[0]):
        make_app(trec_run[0], **setting)


def test_a_text_limit_no_request_could_reach_is_refused_and_the_body_limit_can_be_raised(trec_run):
    """--max-text-bytes 10000000 was accepted while every body over 4 MiB got a 413, and the CLI
    had no option to raise that limit."""
    with pytest.raises(ConfigError, match=r"^max_text_bytes = 10000000 is more than max_body_bytes = 4194304, the "
                                          r"size of a whole request, so no request could carry a text that long; "
                                          r"raise max_body_bytes \(CLI: --max-body-bytes\)"):
        make_app(trec_run[0], max_text_bytes=10_000_000)
    text = "what is " * 700_000  # 5.6 MB
    with TestClient(make_app(trec_run[0], max_text_bytes=6_000_000, max_body_bytes=8_000_000)) as c:
        assert c.post("/predict", json={"text": text}).status_code == 200


def test_a_bad_run_directory_is_a_checkpoint_error(tmp_path):
    with pytest.raises(CheckpointError, match="no such run directory"):
        make_app(tmp_path / "missing")


def test_startup_freezes_the_loaded_objects(trec_run):
    # Full collections walking torch's and the model's objects paused a loaded server for
    # 150-250 ms every few seconds; gc.freeze() at startup takes them out of the collector.
    gc.unfreeze()
    try:
        with TestClient(create_app(trec_run[0])) as c:
            assert gc.get_freeze_count() > 10_000
            assert c.get("/health").status_code == 200
    finally:
        gc.unfreeze()


def test_app_from_env_reads_the_run_and_settings(trec_run, monkeypatch):
    monkeypatch.setenv(ENV_RUN, str(trec_run[0]))
    monkeypatch.setenv("TEXTCLS_SERVE_MAX_TEXTS", "3")
    monkeypatch.setenv("TEXTCLS_SERVE_BATCH_WINDOW_MS", "0.5")
    monkeypatch.setenv("TEXTCLS_SERVE_FREEZE_GC", "0")
    with TestClient(app_from_env()) as c:
        meta = c.get("/metadata").json()
        assert meta["limits"]["max_texts"] == 3 and meta["batching"]["batch_window_ms"] == 0.5
    assert gc.get_freeze_count() == 0
    monkeypatch.setenv("TEXTCLS_SERVE_MAX_TEXTS", "three")
    with pytest.raises(ConfigError, match="TEXTCLS_SERVE_MAX_TEXTS"):
        app_from_env()
    monkeypatch.delenv(ENV_RUN)
    with pytest.raises(ConfigError, match=ENV_RUN):
        app_from_env()


# --------------------------------------------------------------------------- a real socket


def test_uvicorn_refuses_a_chunked_body_over_the_limit_and_stays_up(trec_run):
    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    app = make_app(trec_run[0], max_text_bytes=900, max_body_bytes=1000)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.time() + 20
        while not server.started and time.time() < deadline:
            time.sleep(0.05)
        assert server.started
        base = f"http://127.0.0.1:{port}"

        def chunks():  # no Content-Length: the limit is enforced while reading
            yield b'{"text": "'
            for _ in range(20):
                yield b"a" * 100
            yield b'"}'

        with httpx.Client(base_url=base, timeout=10) as http:
            assert_error(http.post("/predict", content=chunks()), 413, "over the limit of 1000 bytes")
            ok = http.post("/predict", json={"text": QUESTIONS[1]})
            assert ok.status_code == 200 and ok.json()["predictions"][0]["label"]
            assert http.get("/health").json()["status"] == "ok"
    finally:
        server.should_exit = True
        thread.join(10)


def test_the_serve_command_defaults_match_the_module_and_a_bad_run_is_one_line(tmp_path, capsys):
    import inspect

    from textcls import cli, serve

    options = inspect.signature(cli.serve).parameters
    assert options["max_texts"].default.default == serve.DEFAULT_MAX_TEXTS
    assert options["max_text_bytes"].default.default == serve.DEFAULT_MAX_TEXT_BYTES
    assert options["batch_window_ms"].default.default == serve.DEFAULT_BATCH_WINDOW_MS
    assert options["max_body_bytes"].default.default == serve.DEFAULT_MAX_BODY_BYTES
    with pytest.raises(SystemExit) as done:
        cli.main(["serve", str(tmp_path / "no-such-run"), "--port", "0"])
    err = capsys.readouterr().err
    assert done.value.code == 2 and "no-such-run" in err and len(err.strip().split("\n")) == 1, err


def test_several_workers_on_a_run_whose_weights_do_not_load_is_one_line_before_uvicorn(trec_run, tmp_path, capsys,
                                                                                       monkeypatch):
    """Until stop 63 only config.json was read before the workers started: each worker then died
    on the weights with a traceback and uvicorn started it again, for ever."""
    import shutil

    import uvicorn

    from textcls import cli

    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: pytest.fail("uvicorn started on a broken run"))
    broken = tmp_path / "broken"
    shutil.copytree(trec_run[0], broken)
    (broken / "model.safetensors").write_bytes(b"garbage")
    with pytest.raises(SystemExit) as done:
        cli.main(["serve", str(broken), "--workers", "2", "--port", "0"])
    err = capsys.readouterr().err
    assert done.value.code == 2 and len(err.strip().split("\n")) == 1 and "model.safetensors" in err, err


def test_a_port_in_use_or_an_unknown_host_is_one_line_before_uvicorn_starts(trec_run, capsys, monkeypatch):
    import socket

    import uvicorn

    from textcls import cli

    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: pytest.fail("uvicorn started on a bad address"))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for argv, words in ((["--port", str(port)], (f"127.0.0.1:{port}", "--port")),
                            (["--host", "no-such-host.invalid"], ("--host no-such-host.invalid",))):
            with pytest.raises(SystemExit) as done:
                cli.main(["serve", str(trec_run[0]), *argv])
            err = capsys.readouterr().err
            assert done.value.code == 2 and len(err.strip().split("\n")) == 1, err
            assert all(word in err for word in words), err
    started = []
    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: started.append(k["port"]))
    cli.main(["serve", str(trec_run[0]), "--port", str(port)])  # freed: the check lets it through
    assert started == [port]


def test_labels_fitted_as_ints_are_answered_as_numbers_as_the_cli_writes_them(tmp_path):
    """POST /predict answered "3" where `textcls predict` writes 3 for a run fitted with int labels;
    probabilities stay keyed by name (JSON keys are strings)."""
    texts = ["a good film", "a bad film", "so good", "so bad", "good acting", "bad acting"] * 4
    clf = Classifier("tfidf-lr").fit(texts, [3, 1] * 12)
    clf.save_pretrained(tmp_path / "run")
    with TestClient(make_app(tmp_path / "run")) as c:
        body = c.post("/predict", json={"texts": ["a good film"]}).json()
    prediction = body["predictions"][0]
    assert prediction["label"] == clf.predict(["a good film"])[0] == 3 and type(prediction["label"]) is int
    assert set(prediction["probabilities"]) == {"1", "3"}
