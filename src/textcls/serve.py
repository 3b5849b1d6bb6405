"""``textcls serve RUN``: a trained run behind an HTTP API (FastAPI + uvicorn).

    >>> app = create_app("runs/fasttext-bag_trec")      # any ASGI server can run it
    >>> run_server("runs/fasttext-bag_trec", port=8000)  # or let uvicorn do it

Endpoints (docs/serve.md has curl examples):

- ``POST /predict``: ``{"text": "..."}`` or ``{"texts": [...]}``, plus ``"task"`` (one for
  every text) or ``"tasks"`` (one per text) for a model with one head per task. Answers
  ``{"predictions": [{"label": ..., "probabilities": {...}}, ...]}`` (multi-label: ``"labels"``,
  the classes at or over the threshold, and ``"threshold"``).
- ``POST /explain``: ``{"text": "..."}``: ``Classifier.explain`` of that text (the prediction,
  the words, one row of attention weights per head or axis, the raw maps); a model without
  attention maps answers 422.
- ``GET /health``: ``{"status": "ok", ...}`` with request and model-call counters.
- ``GET /metadata``: preset, family, labels, tasks, dataset, metrics.json's scalars, versions,
  limits.

**Micro-batching.** Requests are not run one model call each: every request puts its texts
on an ``asyncio.Queue``; one worker task takes the first waiting request, gathers whatever
else arrives within ``batch_window_ms`` (up to ``max_batch`` texts), makes ONE
``predict_proba`` call for all of them in a dedicated thread (so the event loop keeps
accepting requests) and hands every request its rows back. While the model runs, new
requests queue up and form the next batch, so under load the batches grow by themselves.

**Errors.** Every problem with a request is a 4xx answer ``{"error": "<one line>"}``: 400
(malformed JSON, body not UTF-8), 413 (body, text count or text size over a limit), 422 (a
missing, unknown or mistyped field, an empty text, an unknown task; a ``TextclsError`` from
the model with its own one-line message), 404/405 (no such endpoint or method). A 500 is a
bug in textcls (or a broken model: ``ModelError``, NaN probabilities), never bad input.

**Threads.** A worker sets ``torch.set_num_threads(torch_threads)`` (default 1) in the
process and in its model thread: several workers on a small machine otherwise fight over
the cores (OpenMP threads spinning against each other made small models 10-20x slower,
see ARCHITECTURE.md). Scale with processes: ``run_server(..., workers=N)`` or
``uvicorn --factory textcls.serve:app_from_env --workers N`` (settings from ``TEXTCLS_SERVE_*``
environment variables, see ``app_from_env``).

**Garbage collector.** At startup the app runs ``gc.freeze()`` (``freeze_gc=True``): torch,
the model and the libraries hold hundreds of thousands of objects that live as long as the
process, and the collector's full passes over them paused a loaded worker for 150-250 ms every
few seconds (benchmarks/serve_load.py found them as a p99 of 600 ms at 64 clients).
"""

# No ``from __future__ import annotations``: FastAPI reads the endpoints' annotations
# (``Request``, imported inside create_app) as objects.

import asyncio
import collections
import concurrent.futures
import gc
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from . import __version__
from .errors import CheckpointError, ConfigError, ModelError, TextclsError
from .validate import RepeatedJSONKey, check_int, json_object_with_unique_keys, range_check

log = logging.getLogger("textcls.serve")

DEFAULT_MAX_TEXTS = 64
DEFAULT_MAX_TEXT_BYTES = 50_000
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
DEFAULT_BATCH_WINDOW_MS = 2.0
DEFAULT_MAX_BATCH = 256

ENDPOINTS = "POST /predict, POST /explain, GET /health, GET /metadata"

# Environment variables read by app_from_env (uvicorn --factory / --workers N, gunicorn).
ENV_RUN = "TEXTCLS_SERVE_RUN"
ENV_SETTINGS = {
    "max_texts": ("TEXTCLS_SERVE_MAX_TEXTS", int),
    "max_text_bytes": ("TEXTCLS_SERVE_MAX_TEXT_BYTES", int),
    "max_body_bytes": ("TEXTCLS_SERVE_MAX_BODY_BYTES", int),
    "batch_window_ms": ("TEXTCLS_SERVE_BATCH_WINDOW_MS", float),
    "max_batch": ("TEXTCLS_SERVE_MAX_BATCH", int),
    "torch_threads": ("TEXTCLS_SERVE_TORCH_THREADS", int),
    "freeze_gc": ("TEXTCLS_SERVE_FREEZE_GC", "bool"),
}
_BOOLS = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}


# --------------------------------------------------------------------------- errors


class RequestError(Exception):
    """A request the server refuses: HTTP ``status`` and a one-line ``message``."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = _one_line(message)


def _one_line(message: Any) -> str:
    return " ".join(str(message).split()) or "error"


def _error(status: int, message: str, headers: dict | None = None):
    from fastapi.responses import JSONResponse

    return JSONResponse({"error": _one_line(message)}, status_code=status, headers=headers)


def _json_type(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _short(value: str, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 4] + "...'"


# --------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class Limits:
    """What one request may hold."""

    max_texts: int = DEFAULT_MAX_TEXTS
    max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES

    def __post_init__(self):
        _check_positive_int("max_texts", self.max_texts)
        _check_positive_int("max_text_bytes", self.max_text_bytes)
        _check_positive_int("max_body_bytes", self.max_body_bytes)
        if self.max_text_bytes > self.max_body_bytes:  # else accepted, and no request could carry such a text
            raise ConfigError(f"max_text_bytes = {self.max_text_bytes} is more than max_body_bytes = "
                              f"{self.max_body_bytes}, the size of a whole request, so no request could carry a text "
                              "that long; raise max_body_bytes (CLI: --max-body-bytes) or lower max_text_bytes")


def _check_positive_int(name: str, value) -> None:
    check_int(name, value, 1, None)


def _check_window(value) -> float:
    range_check("batch_window_ms", value, 0, 10_000)  # milliseconds
    return float(value)


# --------------------------------------------------------------------------- request parsing


async def read_body(request, limit: int) -> bytes:
    """The request body, refused with 413 as soon as it is known to exceed ``limit`` bytes
    (from Content-Length before reading, else while streaming)."""
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        raise RequestError(415, f"request body has Content-Encoding {encoding!r}, which this server does not "
                                "decode; send the JSON uncompressed")
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            size = int(declared)
        except ValueError:
            raise RequestError(400, f"Content-Length header {declared!r} is not a number") from None
        if size > limit:
            raise RequestError(413, f"request body is {size} bytes, more than the limit of {limit}; "
                                    "send fewer or shorter texts per request")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise RequestError(413, f"request body is over the limit of {limit} bytes; "
                                    "send fewer or shorter texts per request")
        chunks.append(chunk)
    return b"".join(chunks)


def refuse_query(request) -> None:
    """422 for a query string on a POST route: they read their input from the JSON body alone, so
    ``/predict?threshold=0.9`` would otherwise be answered as if the parameter were not there."""
    if request.query_params:
        name = next(iter(request.query_params.keys()))
        raise RequestError(422, f"query parameter {_short(name)} is not read by this endpoint; send every field in "
                                "the JSON body")


def parse_json(body: bytes) -> dict:
    """The JSON object in ``body``; 400 for an empty, non-UTF-8 or malformed body, 422 for
    JSON that is not an object."""
    if not body.strip():
        raise RequestError(400, 'request body is empty; send a JSON object such as {"text": "..."}')
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RequestError(400, f"request body is not UTF-8 (byte {exc.start}); send UTF-8 encoded JSON") from None
    try:
        payload = json.loads(text, object_pairs_hook=json_object_with_unique_keys)
    except RepeatedJSONKey as exc:
        raise RequestError(400, f"request body names the key {exc.args[0]!r} twice in one object; send it once "
                                "(a JSON parser would keep only the last value)") from None
    except json.JSONDecodeError as exc:
        raise RequestError(400, f"request body is not valid JSON ({exc.msg} at line {exc.lineno} "
                                f"column {exc.colno})") from None
    except RecursionError:
        raise RequestError(400, "request body is not valid JSON (nested too deeply)") from None
    except ValueError:  # an integer of more than 4300 digits: Python's own advice means nothing to a client
        raise RequestError(400, "request body is not valid JSON for this server (a number with more than 4300 "
                                "digits); send texts as JSON strings") from None
    if not isinstance(payload, dict):
        raise RequestError(422, f'request body is {_json_type(payload)}, not a JSON object; '
                                'send {"text": "..."} or {"texts": ["...", ...]}')
    return payload


def _check_text(value, where: str, limits: Limits) -> str:
    if not isinstance(value, str):
        raise RequestError(422, f"{where} is {_json_type(value)}, not a string")
    if not value or value.isspace():
        raise RequestError(422, f"{where} is {'empty' if not value else 'only whitespace'}; "
                                "a model cannot classify it, drop it or give it content")
    # One encode both finds a lone surrogate (as validate.find_lone_surrogate would) and gives the size.
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise RequestError(422, f"{where} holds an unpaired surrogate ({value[exc.start]!r} at character "
                                f"{exc.start}); send valid Unicode text") from None
    if size > limits.max_text_bytes:
        raise RequestError(413, f"{where} is {size} bytes (UTF-8), more than the limit of "
                                f"{limits.max_text_bytes}; shorten it")
    return value


def parse_texts(payload: dict, limits: Limits, *, fields: Sequence[str], one_text: bool = False) -> tuple[list[str], bool]:
    """(texts, whether the request sent one ``text``) from a parsed body; 4xx on anything else."""
    if one_text and "texts" in payload:
        raise RequestError(422, "this endpoint takes one text; send {\"text\": \"...\"}")
    unknown = [k for k in payload if k not in fields]
    if unknown:
        raise RequestError(422, f"unknown field {_short(unknown[0])}; the fields are {', '.join(fields)}")
    if "text" in payload and "texts" in payload:
        raise RequestError(422, "send either 'text' (one string) or 'texts' (a list of strings), not both")
    if "texts" in payload:
        texts = payload["texts"]
        if not isinstance(texts, list):
            hint = '; send {"text": "..."} for one text' if isinstance(texts, str) else ""
            raise RequestError(422, f"field 'texts' is {_json_type(texts)}, not a list of strings{hint}")
        if not texts:
            raise RequestError(422, "field 'texts' is an empty list; send at least one text")
        if len(texts) > limits.max_texts:
            raise RequestError(413, f"field 'texts' holds {len(texts)} texts, more than the limit of "
                                    f"{limits.max_texts} per request; split them over several requests")
        return [_check_text(t, f"texts[{i}]", limits) for i, t in enumerate(texts)], False
    if "text" in payload:
        return [_check_text(payload["text"], "field 'text'", limits)], True
    wanted = "'text' (a string)" if one_text else "'texts' (a list of strings) or 'text' (a string)"
    raise RequestError(422, f"missing field {wanted}")


def parse_tasks(payload: dict, n: int, task_names: list[str] | None) -> list[str] | None:
    """One task per text from ``task`` or ``tasks``, checked against the model's tasks;
    None for a model without per-task heads (which refuses both fields)."""
    has_task, has_tasks = "task" in payload, "tasks" in payload
    if not task_names:
        if has_task or has_tasks:
            raise RequestError(422, f"field '{'task' if has_task else 'tasks'}' was sent, but the model has no "
                                    "per-task heads; drop it")
        return None
    shown = ", ".join(task_names)
    if has_task and has_tasks:
        raise RequestError(422, "send either 'task' (one for every text) or 'tasks' (one per text), not both")
    if not (has_task or has_tasks):
        raise RequestError(422, f"missing field 'task' (or 'tasks', one per text): the model has one head per "
                                f"task ({shown})")
    if has_task:
        task = payload["task"]
        if not isinstance(task, str):
            raise RequestError(422, f"field 'task' is {_json_type(task)}, not a string (one of: {shown})")
        tasks, where = [task] * n, lambda i: "field 'task'"
    else:
        tasks = payload["tasks"]
        if not isinstance(tasks, list):
            raise RequestError(422, f"field 'tasks' is {_json_type(tasks)}, not a list of task names")
        if len(tasks) != n:
            raise RequestError(422, f"field 'tasks' holds {len(tasks)} tasks for {n} texts; send one task per text")
        where = lambda i: f"tasks[{i}]"  # noqa: E731
    known = set(task_names)
    for i, task in enumerate(tasks):
        if not isinstance(task, str):
            raise RequestError(422, f"{where(i)} is {_json_type(task)}, not a string (one of: {shown})")
        if task not in known:
            raise RequestError(422, f"{where(i)} is {_short(task)}, a task the model was not trained on "
                                    f"(tasks: {shown})")
    return list(tasks)


# --------------------------------------------------------------------------- micro-batching


@dataclass
class _Pending:
    texts: list[str]
    tasks: list[str] | None
    future: asyncio.Future


class MicroBatcher:
    """Gathers concurrent requests into one model call.

    ``predict(texts, tasks)`` (``Classifier.predict_proba``) runs in ``executor`` (one thread:
    the model is never called from two threads at once). ``stats`` counts requests, texts and
    model calls; ``batch_sizes`` the requests per call (the last 10,000 calls)."""

    def __init__(self, predict, executor: concurrent.futures.Executor, *, window_ms: float, max_batch: int):
        self.predict = predict
        self.executor = executor
        self.window = _check_window(window_ms) / 1000.0
        _check_positive_int("max_batch", max_batch)
        self.max_batch = max_batch
        self.stats = {"requests": 0, "texts": 0, "model_calls": 0, "retried_batches": 0}
        self.batch_sizes: collections.deque[int] = collections.deque(maxlen=10_000)
        self._queue: asyncio.Queue | None = None
        self._task: asyncio.Task | None = None
        self._loop = None
        self._carry: _Pending | None = None

    # The worker is bound to the running event loop; it starts on first use (and again if a
    # test client runs each request in a new loop) as well as from the app's lifespan.
    def start(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is loop and self._task is not None and not self._task.done():
            return
        self._loop = loop
        self._queue = asyncio.Queue()
        self._carry = None
        self._task = loop.create_task(self._run(), name="textcls-microbatcher")

    async def stop(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        self._task = None

    @property
    def alive(self) -> bool:
        return self._task is None or not self._task.done()

    async def submit(self, texts: list[str], tasks: list[str] | None) -> np.ndarray:
        """The probabilities of ``texts`` (rows in order), computed together with whatever
        other requests arrive at the same time."""
        self.start()
        future = self._loop.create_future()
        self.stats["requests"] += 1
        self.stats["texts"] += len(texts)
        self._queue.put_nowait(_Pending(texts, tasks, future))
        return await future

    async def _next(self) -> _Pending:
        if self._carry is not None:
            item, self._carry = self._carry, None
            return item
        return await self._queue.get()

    async def _gather(self) -> list[_Pending]:
        first = await self._next()
        batch, size = [first], len(first.texts)
        deadline = self._loop.time() + self.window
        while size < self.max_batch:
            try:
                item = self._queue.get_nowait()
            except asyncio.QueueEmpty:
                remaining = deadline - self._loop.time()
                if remaining <= 0:
                    break
                try:
                    item = await asyncio.wait_for(self._queue.get(), remaining)
                except asyncio.TimeoutError:
                    break
            if size + len(item.texts) > self.max_batch:
                self._carry = item  # first in the next batch
                break
            batch.append(item)
            size += len(item.texts)
        return batch

    async def _run(self) -> None:
        while True:
            batch = await self._gather()
            batch = [p for p in batch if not p.future.done()]  # clients that went away
            if not batch:
                continue
            try:
                await self._serve(batch)
            except asyncio.CancelledError:
                for p in batch:
                    if not p.future.done():
                        p.future.set_exception(RequestError(503, "the server is shutting down; retry"))
                raise
            except BaseException as exc:  # a bug: answer every request (500), keep the worker alive
                log.exception("model call failed")
                for p in batch:
                    if not p.future.done():
                        p.future.set_exception(exc)

    async def _call(self, texts: list[str], tasks: list[str] | None) -> np.ndarray:
        self.stats["model_calls"] += 1
        return await self._loop.run_in_executor(self.executor, self.predict, texts, tasks)

    async def _serve(self, batch: list[_Pending]) -> None:
        texts = [t for p in batch for t in p.texts]
        # parse_tasks gives every request of a model tasks, or none of them.
        tasks = [t for p in batch for t in p.tasks] if batch[0].tasks is not None else None
        try:
            probs = await self._call(texts, tasks)
        except (TextclsError, ValueError) as exc:
            if len(batch) == 1:
                _settle(batch[0].future, exc=exc)
                return
            # One request's texts failed the whole call: run each alone so only it gets the error.
            self.stats["retried_batches"] += 1
            for p in batch:
                try:
                    _settle(p.future, await self._call(p.texts, p.tasks))
                except (TextclsError, ValueError) as one:
                    _settle(p.future, exc=one)
            return
        self.batch_sizes.append(len(batch))
        start = 0
        for p in batch:
            _settle(p.future, probs[start:start + len(p.texts)])
            start += len(p.texts)


def _settle(future: asyncio.Future, value=None, *, exc: BaseException | None = None) -> None:
    if future.done():
        return
    if exc is not None:
        future.set_exception(exc)
    else:
        future.set_result(value)


# --------------------------------------------------------------------------- the model


def _scalars(metrics) -> dict | None:
    if not isinstance(metrics, dict):
        return None
    return {k: v for k, v in metrics.items() if v is None or isinstance(v, (int, float, str, bool))}


def _read_metrics(run_dir: Path) -> tuple[dict | None, str | None]:
    from . import artifacts

    path = run_dir / artifacts.METRICS
    if not path.is_file():
        return None, None
    try:
        metrics = artifacts.read_json(path)
    except CheckpointError as exc:
        return None, str(exc)
    return (metrics if isinstance(metrics, dict) else None), None


class ServedModel:
    """A loaded run and what the endpoints need to know about it."""

    def __init__(self, run_dir: str | Path):
        from . import artifacts
        from .api import Classifier

        self.run_dir = Path(run_dir)
        self.config = artifacts.read_config(self.run_dir)
        self.classifier = Classifier.from_pretrained(self.run_dir)
        self.labels = [str(c) for c in self.config["label_names"]]
        # A label is answered as the run's class value (an int for int labels), as `textcls predict`
        # writes it; probabilities are keyed by name (JSON keys are strings).
        self.values = dict(zip(self.labels, self.classifier.classes_.tolist()))
        self.multi_label = bool(self.classifier.multi_label_)
        self.threshold = self.classifier.threshold_  # artifacts.run_threshold, checked by read_config
        self.task_names = list(self.classifier.task_names_) if self.classifier.uses_tasks else None
        self.metrics, self.metrics_error = _read_metrics(self.run_dir)
        self.has_attention, self.no_attention = self._probe_attention()

    # -- prediction
    def predict_proba(self, texts: list[str], tasks: list[str] | None) -> np.ndarray:
        return self.classifier.predict_proba(texts, tasks=tasks)

    def prediction(self, row: np.ndarray) -> dict:
        probabilities = {name: float(p) for name, p in zip(self.labels, row)}
        if self.multi_label:
            on = [self.values[name] for name, p in zip(self.labels, row) if p >= self.threshold]
            return {"labels": on, "probabilities": probabilities}
        return {"label": self.values[self.labels[int(np.argmax(row))]], "probabilities": probabilities}

    # -- attention maps (Classifier.explain)
    def _probe_attention(self) -> tuple[bool, str | None]:
        """(whether /explain works, the one-line reason when it does not), from one probe text."""
        task = [self.task_names[0]] if self.task_names else None
        try:
            self.classifier.explain(["probe"], tasks=task)
        except ModelError as exc:
            return False, str(exc)
        except Exception:  # noqa: BLE001 - a model that cannot run the probe cannot explain either
            log.warning("attention probe failed; /explain is off", exc_info=True)
            return False, f"model '{self.config['model']}' failed to explain a probe text; /explain is off"
        return True, None

    def explain(self, text: str, task: str | None) -> dict:
        """``Classifier.explain`` of one text: the same JSON (prediction, words, rows, raw maps)."""
        if not self.has_attention:
            raise RequestError(422, self.no_attention)
        return self.classifier.explain([text], tasks=[task] if task is not None else None)[0]

    # -- metadata
    def metadata(self) -> dict:
        config, metrics = self.config, self.metrics or {}
        dataset = config.get("dataset")
        if dataset is None and isinstance(metrics.get("dataset"), dict):
            dataset = metrics["dataset"].get("name")
        return {
            "preset": config["model"],
            "family": config.get("family"),
            "kind": config.get("kind"),
            "labels": self.labels,
            "multi_label": self.multi_label,
            "threshold": self.threshold if self.multi_label else None,
            "tasks": self.task_names,
            "dataset": dataset,
            "dataset_summary": metrics.get("dataset"),
            "metrics": {"test": _scalars(metrics.get("test")), "dev": _scalars(metrics.get("dev")),
                        "best_epoch": metrics.get("best_epoch"), "train_seconds": metrics.get("train_seconds")}
            if self.metrics else None,
            "metrics_error": self.metrics_error,
            "parameters": self.classifier.num_parameters(),
            "explain": self.has_attention,
            "textcls_version": __version__,
            "trained_with_textcls": config.get("textcls_version"),
            "run_dir": str(self.run_dir),
        }


# --------------------------------------------------------------------------- the app


def set_torch_threads(threads: int | None) -> None:
    """``torch.set_num_threads(threads)`` (and one inter-op thread), where not None."""
    if threads is None:
        return
    _check_positive_int("torch_threads", threads)
    import torch

    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass  # only allowed before the first parallel work; already set, or work already ran


def create_app(run_dir: str | Path, *, max_texts: int = DEFAULT_MAX_TEXTS,
               max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
               batch_window_ms: float = DEFAULT_BATCH_WINDOW_MS, max_batch: int = DEFAULT_MAX_BATCH,
               torch_threads: int | None = 1, freeze_gc: bool = True):
    """A FastAPI app serving the run in ``run_dir`` (see the module docstring).

    ``max_texts``: texts per request; ``max_text_bytes``: UTF-8 bytes per text;
    ``max_body_bytes``: bytes per request body; ``batch_window_ms``: how long the batcher
    waits for more requests after the first (0: only what is already queued); ``max_batch``:
    texts per model call; ``torch_threads``: ``torch.set_num_threads`` for this worker (None
    leaves torch's setting); ``freeze_gc``: at startup, ``gc.freeze()`` what is loaded by then
    (torch, the model: millions of objects that never die), so that the garbage collector's
    full passes stop walking them: without it they paused a worker for 150-250 ms every few
    seconds under load (benchmarks/serve_load.py). A bad run directory raises ``CheckpointError``, a bad setting
    ``ConfigError``, before anything is served."""
    from contextlib import asynccontextmanager

    try:
        from fastapi import FastAPI
    except ImportError:
        raise ConfigError("serving needs FastAPI and uvicorn, which are not installed; "
                          "pip install 'textcls[serve]'") from None

    limits = Limits(max_texts, max_text_bytes, max_body_bytes)
    window = _check_window(batch_window_ms)
    _check_positive_int("max_batch", max_batch)
    if torch_threads is not None:
        _check_positive_int("torch_threads", torch_threads)
    set_torch_threads(torch_threads)
    served = ServedModel(run_dir)
    executor = concurrent.futures.ThreadPoolExecutor(
        max_workers=1, thread_name_prefix="textcls-model",
        initializer=set_torch_threads if torch_threads is not None else None,
        initargs=(torch_threads,) if torch_threads is not None else ())
    batcher = MicroBatcher(served.predict_proba, executor, window_ms=window, max_batch=max_batch)

    @asynccontextmanager
    async def lifespan(app):
        if freeze_gc:
            gc.collect()
            gc.freeze()
        batcher.start()
        try:
            yield
        finally:
            await batcher.stop()

    app = FastAPI(title="textcls", version=__version__, lifespan=lifespan,
                  description=f"{served.config['model']} trained on {served.config.get('dataset')}")
    app.state.served = served
    app.state.batcher = batcher
    app.state.limits = limits
    app.state.executor = executor
    _add_error_handlers(app)
    _add_model_routes(app, served, batcher, executor, limits)
    settings = {"batching": {"batch_window_ms": window, "max_batch": max_batch},
                "torch_threads": torch_threads, "freeze_gc": freeze_gc}
    _add_status_routes(app, served, batcher, limits, settings, started=time.time())
    return app


def _add_error_handlers(app) -> None:
    """Every error as one JSON line ``{"error": ...}`` with its status (see the module docstring)."""
    from fastapi import Request
    from fastapi.exceptions import RequestValidationError
    from starlette.exceptions import HTTPException as StarletteHTTPException

    @app.exception_handler(RequestError)
    async def _request_error(request: Request, exc: RequestError):
        return _error(exc.status, exc.message)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException):
        if exc.status_code == 404:
            return _error(404, f"no endpoint {request.url.path}; the endpoints are {ENDPOINTS}")
        if exc.status_code == 405:
            allowed = exc.headers.get("Allow", "") if exc.headers else ""
            return _error(405, f"method {request.method} is not allowed on {request.url.path}"
                               f"{'; use ' + allowed if allowed else ''}", headers=exc.headers)
        return _error(exc.status_code, exc.detail)

    @app.exception_handler(Exception)
    async def _internal_error(request: Request, exc: Exception):
        # Reached only by a bug in textcls or a broken model (ModelError), never by bad input.
        log.error("%s %s failed: %s: %s", request.method, request.url.path, type(exc).__name__, exc)
        return _error(500, f"internal error ({type(exc).__name__}): {exc}")

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError):
        errors = exc.errors()
        first = errors[0] if errors else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        return _error(422, f"{where}: {first.get('msg', 'invalid request')}")


_BODY_SCHEMA = {"requestBody": {"required": True, "content": {"application/json": {"schema": {
    "type": "object",
    "properties": {"text": {"type": "string"}, "texts": {"type": "array", "items": {"type": "string"}},
                   "task": {"type": "string"}, "tasks": {"type": "array", "items": {"type": "string"}}},
}}}}}


def _add_model_routes(app, served: "ServedModel", batcher: "MicroBatcher", executor, limits: "Limits") -> None:
    """POST /predict (through the micro-batcher) and POST /explain (on the model's thread)."""
    from fastapi import Request
    from fastapi.responses import JSONResponse

    async def payload_of(request: Request) -> dict:
        refuse_query(request)
        return parse_json(await read_body(request, limits.max_body_bytes))

    @app.post("/predict", openapi_extra=_BODY_SCHEMA)
    async def predict(request: Request):
        payload = await payload_of(request)
        texts, _ = parse_texts(payload, limits, fields=("text", "texts", "task", "tasks"))
        tasks = parse_tasks(payload, len(texts), served.task_names)
        try:
            probs = await batcher.submit(texts, tasks)
        except ModelError:
            raise  # a broken model: 500, not the client's fault
        except TextclsError as exc:
            raise RequestError(422, str(exc)) from None
        out = {"model": served.config["model"], "predictions": [served.prediction(row) for row in probs]}
        if served.multi_label:
            out["threshold"] = served.threshold
        return JSONResponse(out)

    @app.post("/explain", openapi_extra=_BODY_SCHEMA)
    async def explain(request: Request):
        payload = await payload_of(request)
        texts, _ = parse_texts(payload, limits, fields=("text", "task", "tasks"), one_text=True)
        tasks = parse_tasks(payload, 1, served.task_names)
        try:
            result = await asyncio.get_running_loop().run_in_executor(
                executor, served.explain, texts[0], tasks[0] if tasks else None)
        except ModelError:
            raise
        except TextclsError as exc:
            raise RequestError(422, str(exc)) from None
        return JSONResponse({"model": served.config["model"], **result})


def _add_status_routes(app, served: "ServedModel", batcher: "MicroBatcher", limits: "Limits", settings: dict, *,
                       started: float) -> None:
    """GET /health (the batching worker alive, its counters) and GET /metadata (the run, the
    limits and ``settings``: batching, threads, gc)."""
    from fastapi.responses import JSONResponse

    # A query string is not refused here as it is on the POST routes: monitors add cache-busters
    # (?_=<time>) to GET checks, and these routes take no input to misread.
    @app.get("/health")
    async def health():
        ok = batcher.alive
        body = {"status": "ok" if ok else "error", "model": served.config["model"],
                "uptime_s": round(time.time() - started, 3), "pid": os.getpid(), **batcher.stats}
        if not ok:
            body["error"] = "the batching worker has stopped; restart the server"
        return JSONResponse(body, status_code=200 if ok else 503)

    @app.get("/metadata")
    async def metadata():
        return JSONResponse({**served.metadata(),
                             "limits": {"max_texts": limits.max_texts, "max_text_bytes": limits.max_text_bytes,
                                        "max_body_bytes": limits.max_body_bytes},
                             **settings})


def _env_settings() -> dict:
    settings = {}
    for name, (var, kind) in ENV_SETTINGS.items():
        raw = os.environ.get(var)
        if raw is None or raw == "":
            continue
        if name == "torch_threads" and raw.lower() == "none":
            settings[name] = None  # leave torch's own setting
            continue
        if kind == "bool":
            if raw.lower() not in _BOOLS:
                raise ConfigError(f"environment variable {var}={raw!r} is not one of 1, 0, true, false")
            settings[name] = _BOOLS[raw.lower()]
            continue
        try:
            settings[name] = kind(raw)
        except ValueError:
            what = "an integer" if kind is int else "a number"
            raise ConfigError(f"environment variable {var}={raw!r} is not {what}") from None
    return settings


def app_from_env():
    """The app for ``uvicorn --factory textcls.serve:app_from_env`` (and each of its
    ``--workers``): the run from ``TEXTCLS_SERVE_RUN``, settings from ``TEXTCLS_SERVE_MAX_TEXTS``,
    ``_MAX_TEXT_BYTES``, ``_MAX_BODY_BYTES``, ``_BATCH_WINDOW_MS``, ``_MAX_BATCH``, ``_TORCH_THREADS``
    (``none``: leave torch's setting), ``_FREEZE_GC`` (1 or 0)."""
    run = os.environ.get(ENV_RUN)
    if not run:
        raise ConfigError(f"environment variable {ENV_RUN} is not set; set it to the run directory to serve")
    return create_app(run, **_env_settings())


def _build_in_a_child(run_dir, settings: dict) -> None:
    """``create_app(run_dir, **settings)`` in a spawned process; its TextclsError raised here."""
    import multiprocessing

    from . import errors

    with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        try:
            problem = pool.submit(_build_and_drop, str(run_dir), settings).result()
        except concurrent.futures.process.BrokenProcessPool:
            raise ModelError(f"{run_dir}: the process that loads the run to check it died (out of memory?); "
                             "serve it with one worker to see why") from None
    if problem is not None:
        kind, message = problem
        error = getattr(errors, kind, None)
        raise (error if isinstance(error, type) and issubclass(error, TextclsError) else ConfigError)(message)


def _build_and_drop(run_dir: str, settings: dict) -> tuple[str, str] | None:
    """In the check process: None when the app builds, else the error's class name and message."""
    try:
        create_app(run_dir, **settings)
    except TextclsError as exc:
        return type(exc).__name__, str(exc)
    return None


def check_address(host: str, port: int) -> None:
    """A ConfigError when ``host:port`` cannot be listened on (an unknown host, a port in use),
    found by binding a socket as uvicorn will, so that the user reads one line, not uvicorn's log
    and its exit status 3."""
    import errno
    import socket

    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as err:
        raise ConfigError(f"--host {host}: {err.strerror}; give an address of this machine "
                          "(127.0.0.1, 0.0.0.0 for every interface) or a name that resolves to one") from None
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as err:
            fix = ("stop what uses it or pick another --port" if err.errno == errno.EADDRINUSE
                   else "pick another --host or --port (ports under 1024 need root)")
            raise ConfigError(f"cannot listen on {host}:{port}: {err.strerror}; {fix}") from None


def run_server(run_dir: str | Path, host: str = "127.0.0.1", port: int = 8000, workers: int = 1, *,
               max_texts: int = DEFAULT_MAX_TEXTS, max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES,
               max_body_bytes: int = DEFAULT_MAX_BODY_BYTES, batch_window_ms: float = DEFAULT_BATCH_WINDOW_MS,
               max_batch: int = DEFAULT_MAX_BATCH, torch_threads: int | None = 1, freeze_gc: bool = True,
               log_level: str = "info", access_log: bool = True) -> None:
    """Serve ``run_dir`` with uvicorn until interrupted. ``workers > 1`` starts that many
    processes (each loads the model and runs its own batcher with ``torch_threads`` threads).
    The run and the settings are checked first, so a mistake fails before the port is bound."""
    try:
        import uvicorn
    except ImportError:
        raise ConfigError("serving needs FastAPI and uvicorn, which are not installed; "
                          "pip install 'textcls[serve]'") from None

    _check_positive_int("workers", workers)
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ConfigError(f"parameter 'port' = {port!r} must be an integer in [0, 65535]")
    settings = dict(max_texts=max_texts, max_text_bytes=max_text_bytes, max_body_bytes=max_body_bytes,
                    batch_window_ms=batch_window_ms, max_batch=max_batch, torch_threads=torch_threads,
                    freeze_gc=freeze_gc)
    options = dict(host=host, port=port, log_level=log_level, access_log=access_log)
    if workers == 1:
        app = create_app(run_dir, **settings)
        check_address(host, port)
        uvicorn.run(app, **options)
        return
    # Built once in a short-lived process first: a run whose weights or tokenizer do not load, or a
    # bad setting, then fails with one line, where each worker would die with a traceback that
    # uvicorn answers by starting it again, for ever. Not in this process: uvicorn's supervisor
    # would keep a copy of the model (FastAPI's caches hold the routes) beside every worker's.
    _build_in_a_child(run_dir, settings)
    check_address(host, port)
    os.environ[ENV_RUN] = str(Path(run_dir).resolve())
    for name, (var, _) in ENV_SETTINGS.items():
        if settings[name] is None:
            os.environ[var] = "none"
        elif isinstance(settings[name], bool):
            os.environ[var] = "1" if settings[name] else "0"
        else:
            os.environ[var] = str(settings[name])
    uvicorn.run("textcls.serve:app_from_env", factory=True, workers=workers, **options)
