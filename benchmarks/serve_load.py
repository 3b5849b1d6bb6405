"""Load test of ``textcls serve``: throughput, latency, memory and bad requests over a real socket.

    python benchmarks/serve_load.py [--run-fasttext DIR] [--run-spe DIR] [--soak-requests 100000]

For a fasttext-bag run and a spe-cnn run on MR (trained here with small budgets unless given
with ``--run-*``), the script starts ``python -m uvicorn --factory textcls.serve:app_from_env``
in a subprocess on 127.0.0.1 (a free port, one worker, one torch thread) and:

1. measures throughput and p50/p90/p99 latency of single-text ``POST /predict`` requests with
   1, 8 and 64 concurrent clients (closed loop: each client sends its next request when the
   last one is answered), each level bounded by ``--level-requests`` and ``--level-seconds``;
   MR test sentences, cycled. Any answer but 200 counts as a failure; the script fails if there
   is one;
2. sends every kind of malformed request (bad JSON, wrong types, limits, unknown task, a body
   over the limit with and without Content-Length, broken HTTP) and checks each is answered
   with a 4xx (a one-line ``{"error": ...}`` JSON from the app; uvicorn itself answers broken
   HTTP) and that ``GET /health`` still answers after each;
3. soaks the server with ``--soak-requests`` requests (8 clients; one in ten sends 8 texts,
   one in a hundred is malformed) and samples its resident memory (VmRSS) every second, to
   show that it stays flat.

The clients are asyncio coroutines speaking HTTP/1.1 keep-alive over raw streams (cheaper than
an HTTP library, so the client steals less CPU from the server: both share the machine). The
results go to ``benchmarks/results/serve_load.{json,md}``, with the exact command at the top.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import socket
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from textcls.artifacts import write_report
from textcls.benchmark.system import SIMD_FLAGS as SIMD
from textcls.benchmark.system import cpu_flags

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
LEVELS = (1, 8, 64)


# --------------------------------------------------------------------------- machine


def rss_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        return None
    return None


def load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


# --------------------------------------------------------------------------- runs


def train_run(preset: str, run_dir: Path, overrides: dict) -> dict:
    """Train ``preset`` on MR and save it (with metrics.json) as `textcls train` would."""
    import torch

    from textcls import Classifier, artifacts
    from textcls.data import load_dataset

    torch.set_num_threads(1)
    dataset = load_dataset("mr")
    started = time.perf_counter()
    clf = Classifier(preset, **overrides).fit_dataset(dataset)
    seconds = time.perf_counter() - started
    test = clf.evaluate(dataset["test"], where="mr/test")
    clf.save_pretrained(run_dir)
    result = {"dataset": dataset.summary(), "train_seconds": seconds, "test": test,
              "parameters": clf.num_parameters()}
    if clf.fit_result_ is not None:
        result["best_epoch"] = clf.fit_result_.best_epoch
        result["dev"] = clf.fit_result_.best_metrics
    artifacts.write_json(run_dir / artifacts.METRICS, result)
    return {"preset": preset, "overrides": overrides, "train_seconds": round(seconds, 1),
            "test_accuracy": test["accuracy"], "trained_here": True}


def request_texts(limit: int = 2000) -> list[str]:
    from textcls.data import load_dataset

    return list(load_dataset("mr")["test"]["text"])[:limit]


# --------------------------------------------------------------------------- HTTP client


class Connection:
    """One HTTP/1.1 keep-alive connection; reopens itself after the server closes it."""

    def __init__(self, port: int):
        self.port = port
        self.reader = self.writer = None

    async def close(self):
        if self.writer is not None:
            self.writer.close()
            try:
                await self.writer.wait_closed()
            except OSError:
                pass
        self.reader = self.writer = None

    async def request(self, method: str, path: str, body: bytes | None = None,
                      headers: dict | None = None) -> tuple[int, dict, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        head = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1"]
        if body is not None:
            head += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
        head += [f"{k}: {v}" for k, v in (headers or {}).items()]
        self.writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + (body or b""))
        await self.writer.drain()
        return await self.read_response()

    async def read_response(self) -> tuple[int, dict, bytes]:
        status_line = await self.reader.readline()
        if not status_line:
            await self.close()
            raise ConnectionError("the server closed the connection without an answer")
        status = int(status_line.split()[1])
        headers = {}
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        if "content-length" in headers:
            body = await self.reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int((await self.reader.readline()).split(b";")[0], 16)
                if size == 0:
                    await self.reader.readline()
                    break
                parts.append(await self.reader.readexactly(size))
                await self.reader.readline()
            body = b"".join(parts)
        else:
            body = await self.reader.read()
        if headers.get("connection", "").lower() == "close":
            await self.close()
        return status, headers, body


async def get_json(port: int, path: str) -> tuple[int, dict]:
    conn = Connection(port)
    try:
        status, _, body = await conn.request("GET", path)
        return status, json.loads(body)
    finally:
        await conn.close()


# --------------------------------------------------------------------------- server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``python -m uvicorn --factory textcls.serve:app_from_env`` on a free local port."""

    def __init__(self, run_dir: Path, log_path: Path, window_ms: float | None, extra_env: dict | None = None):
        self.port = free_port()
        self.command = [sys.executable, "-m", "uvicorn", "--factory", "textcls.serve:app_from_env",
                        "--host", "127.0.0.1", "--port", str(self.port), "--workers", "1",
                        "--no-access-log", "--log-level", "warning"]
        env = {**os.environ, "TEXTCLS_SERVE_RUN": str(run_dir), "TEXTCLS_SERVE_TORCH_THREADS": "1",
               "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
        if window_ms is not None:
            env["TEXTCLS_SERVE_BATCH_WINDOW_MS"] = str(window_ms)
        env.update(extra_env or {})
        self.log = open(log_path, "w")
        started = time.perf_counter()
        self.proc = subprocess.Popen(self.command, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                     cwd=REPO)
        deadline = time.time() + 300
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited with {self.proc.returncode}; see {log_path}")
            try:
                status, body = asyncio.run(get_json(self.port, "/health"))
                if status == 200:
                    break
            except OSError:
                pass
            time.sleep(0.2)
        else:
            self.stop()
            raise RuntimeError(f"the server did not answer /health in 300 s; see {log_path}")
        self.startup_seconds = round(time.perf_counter() - started, 2)

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def rss(self) -> float | None:
        return rss_mb(self.proc.pid)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


# --------------------------------------------------------------------------- load


def summarize(latencies: list[float], failures: list[str], seconds: float, clients: int) -> dict:
    lat = np.asarray(latencies) * 1000.0
    return {
        "clients": clients,
        "requests": int(lat.size),
        "failed": len(failures),
        "first_failures": failures[:5],
        "seconds": round(seconds, 2),
        "throughput_rps": round(lat.size / seconds, 1) if seconds > 0 else None,
        "latency_ms": {
            "p50": round(float(np.percentile(lat, 50)), 2) if lat.size else None,
            "p90": round(float(np.percentile(lat, 90)), 2) if lat.size else None,
            "p99": round(float(np.percentile(lat, 99)), 2) if lat.size else None,
            "max": round(float(lat.max()), 2) if lat.size else None,
            "mean": round(float(lat.mean()), 2) if lat.size else None,
        },
    }


async def closed_loop(port: int, clients: int, max_requests: int, max_seconds: float, make_body,
                      on_progress=None, counts: dict | None = None,
                      connections: list | None = None) -> tuple[list[float], list[str], float]:
    """``clients`` coroutines, each sending its next request when its last one is answered,
    until ``max_requests`` were sent or ``max_seconds`` passed. ``make_body(i)`` -> (body,
    expected status). Returns the latencies of the 200s, the failures and the seconds;
    ``counts`` (if given) gets ``sent`` and ``expected_4xx`` (refusals that were expected).
    ``connections``: one open Connection per client, kept open (else each client opens its own)."""
    latencies: list[float] = []
    failures: list[str] = []
    counter = {"next": 0}
    counts = counts if counts is not None else {}
    counts.update(sent=0, expected_4xx=0)
    started = time.perf_counter()
    deadline = started + max_seconds

    async def client(conn, own):
        try:
            while counter["next"] < max_requests and time.perf_counter() < deadline:
                i = counter["next"]
                counter["next"] += 1
                counts["sent"] += 1
                body, expected = make_body(i)
                t0 = time.perf_counter()
                try:
                    status, _, answer = await conn.request("POST", "/predict", body)
                except (OSError, ConnectionError, asyncio.IncompleteReadError, ValueError) as exc:
                    failures.append(f"request {i}: {type(exc).__name__}: {exc}")
                    await conn.close()
                    continue
                elapsed = time.perf_counter() - t0
                if status != expected:
                    failures.append(f"request {i}: status {status}: {answer[:200]!r}")
                elif expected == 200:
                    latencies.append(elapsed)
                else:
                    counts["expected_4xx"] += 1
                if on_progress is not None:
                    on_progress(i)
        finally:
            if own:
                await conn.close()

    if connections is None:
        await asyncio.gather(*(client(Connection(port), True) for _ in range(clients)))
    else:
        await asyncio.gather(*(client(c, False) for c in connections[:clients]))
    return latencies, failures, time.perf_counter() - started


def run_levels(server: Server, texts: list[str], args) -> list[dict]:
    bodies = [json.dumps({"text": t}).encode() for t in texts]
    out = []
    for clients in LEVELS:
        async def level():
            # The clients connect and warm up first (a new connection's first request, and a
            # fresh process's first calls, are slower), then the measured requests follow on
            # the same keep-alive connections.
            conns = [Connection(server.port) for _ in range(clients)]
            try:
                await closed_loop(server.port, clients, 4 * clients + 20, 30,
                                  lambda i: (bodies[i % len(bodies)], 200), connections=conns)
                _, before = await get_json(server.port, "/health")
                measured = await closed_loop(server.port, clients, args.level_requests, args.level_seconds,
                                             lambda i: (bodies[(i * 7919) % len(bodies)], 200), connections=conns)
                _, after = await get_json(server.port, "/health")
            finally:
                for c in conns:
                    await c.close()
            return before, measured, after

        before, (lat, fail, secs), after = asyncio.run(level())
        row = summarize(lat, fail, secs, clients)
        calls = after["model_calls"] - before["model_calls"]
        row["model_calls"] = calls
        row["texts_per_model_call"] = round((after["texts"] - before["texts"]) / calls, 2) if calls else None
        row["load_average"] = load_average()
        print(f"  {clients:>2} clients: {row['throughput_rps']} req/s, p50 {row['latency_ms']['p50']} ms, "
              f"p99 {row['latency_ms']['p99']} ms, {row['texts_per_model_call']} texts/call, "
              f"{row['failed']} failed", flush=True)
        out.append(row)
    return out


# --------------------------------------------------------------------------- malformed requests


def malformed_cases() -> list[dict]:
    """(name, raw body or raw bytes, expected status). ``raw`` cases are sent as they are."""
    big = "word " * 10_001  # 50,005 bytes, over the default 50,000
    cases = [
        ("malformed JSON", b'{"text": ', 400),
        ("trailing garbage", b'{"text": "a"} x', 400),
        ("empty body", b"", 400),
        ("not UTF-8", b'{"text": "caf\xe9"}', 400),
        ("nested too deeply", b"[" * 5000, 400),
        ("integer of 5000 digits", b'{"text": ' + b"1" * 5000 + b"}", 400),
        ("JSON array body", b'["a"]', 422),
        ("missing field", b"{}", 422),
        ("unknown field", b'{"txt": "a"}', 422),
        ("text and texts", b'{"text": "a", "texts": ["b"]}', 422),
        ("text is a number", b'{"text": 5}', 422),
        ("texts is a string", b'{"texts": "abc"}', 422),
        ("texts item is null", b'{"texts": ["a", null]}', 422),
        ("texts is empty", b'{"texts": []}', 422),
        ("empty text", b'{"text": ""}', 422),
        ("whitespace text", b'{"text": " \\t "}', 422),
        ("unpaired surrogate", b'{"text": "\\udc00"}', 422),
        ("too many texts", json.dumps({"texts": ["a"] * 65}).encode(), 413),
        ("text too long", json.dumps({"text": big}).encode(), 413),
        ("unknown task", b'{"text": "a", "task": "no-such-task"}', 422),
    ]
    return [{"name": n, "body": b, "status": s} for n, b, s in cases]


async def send_raw(port: int, data: bytes, trickle: list[bytes] | None = None) -> tuple[int, dict, bytes]:
    """Write ``data`` (and then ``trickle`` chunks, while the answer may already come) and read
    one response."""
    conn = Connection(port)
    conn.reader, conn.writer = await asyncio.open_connection("127.0.0.1", port)

    async def feed():
        for piece in trickle or []:
            conn.writer.write(piece)
            await conn.writer.drain()

    try:
        conn.writer.write(data)
        await conn.writer.drain()
        feeder = asyncio.create_task(feed())
        try:
            return await asyncio.wait_for(conn.read_response(), 30)
        finally:
            feeder.cancel()
            try:
                await feeder
            except (asyncio.CancelledError, OSError):
                pass
    finally:
        await conn.close()


def check_malformed(server: Server) -> list[dict]:
    port = server.port
    rows = []

    def record(name, expect, status, body, app_json=True):
        one_line_json = False
        message = body[:200].decode("utf-8", "replace")
        try:
            parsed = json.loads(body)
            one_line_json = set(parsed) == {"error"} and "\n" not in parsed["error"]
            message = parsed.get("error", message)
        except (ValueError, AttributeError, TypeError):
            pass
        health, _ = asyncio.run(get_json(port, "/health"))
        ok = (status == expect if expect else 400 <= status < 500) and (one_line_json or not app_json) \
            and health == 200 and server.alive
        rows.append({"case": name, "status": status, "expected": expect or "4xx", "error": message,
                     "json_error": one_line_json, "health_after": health, "ok": ok})

    for case in malformed_cases():
        status, _, body = asyncio.run(send_raw(port, (
            f"POST /predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(case['body'])}\r\n\r\n").encode() + case["body"]))
        record(case["name"], case["status"], status, body)
    # Limits on the body itself (default 4 MiB): declared, and streamed without a length.
    status, _, body = asyncio.run(send_raw(port, (
        "POST /predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Content-Length: 5000000\r\n\r\n").encode() + b'{"text": "'))
    record("body over 4 MiB (Content-Length)", 413, status, body)
    chunk = b"a" * 65536
    pieces = [f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"] * 80
    status, _, body = asyncio.run(send_raw(port, (
        "POST /predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\n\r\n").encode() + b'a\r\n{"text": "\r\n', pieces))
    record("body over 4 MiB (chunked)", 413, status, body)
    status, _, body = asyncio.run(send_raw(port, b"GET /predict HTTP/1.1\r\nHost: x\r\n\r\n"))
    record("GET /predict", 405, status, body)
    status, _, body = asyncio.run(send_raw(port, b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n"))
    record("unknown path", 404, status, body)
    status, _, body = asyncio.run(send_raw(port, b'POST /explain HTTP/1.1\r\nHost: x\r\nContent-Length: 13\r\n\r\n{"text": "a"}'))
    record("/explain on a model without attention", 422, status, body)
    # Broken HTTP is answered by uvicorn before the app sees it (plain text, not our JSON).
    status, _, body = asyncio.run(send_raw(port, b"POST /predict HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n"))
    record("Content-Length not a number (uvicorn)", None, status, body, app_json=False)
    status, _, body = asyncio.run(send_raw(port, b"THIS IS NOT HTTP\r\n\r\n"))
    record("not HTTP at all (uvicorn)", None, status, body, app_json=False)
    bad = [r for r in rows if not r["ok"]]
    print(f"  malformed requests: {len(rows) - len(bad)}/{len(rows)} answered as expected", flush=True)
    for r in bad:
        print(f"    FAILED {r['case']}: {r['status']} (expected {r['expected']}) {r['error']}", flush=True)
    return rows


# --------------------------------------------------------------------------- soak


def soak(server: Server, texts: list[str], n: int, max_seconds: float) -> dict:
    singles = [json.dumps({"text": t}).encode() for t in texts]
    eights = [json.dumps({"texts": texts[i:i + 8]}).encode() for i in range(0, len(texts) - 8, 8)]
    bad = [(b'{"text": ""}', 422), (b'{"texts": "x"}', 422), (b'{"text": ', 400)]

    def make_body(i):
        if i % 100 == 99:
            return bad[(i // 100) % len(bad)]
        if i % 10 == 9:
            return eights[i % len(eights)], 200
        return singles[(i * 7919) % len(singles)], 200

    samples = [(0, 0.0, server.rss())]
    started = time.perf_counter()
    last = {"t": started}

    def progress(i):
        now = time.perf_counter()
        if now - last["t"] >= 1.0:
            last["t"] = now
            samples.append((i, round(now - started, 1), server.rss()))
            if i and i % 10_000 < 8:
                print(f"    {i} requests, RSS {samples[-1][2]:.1f} MiB", flush=True)

    counts: dict = {}
    lat, fail, secs = asyncio.run(closed_loop(server.port, 8, n, max_seconds, make_body, progress, counts))
    samples.append((counts["sent"], round(time.perf_counter() - started, 1), server.rss()))
    rss = [s[2] for s in samples if s[2] is not None]
    row = summarize(lat, fail, secs, 8)
    # Drop the noisy first seconds from the slope: the allocator settles while caches fill.
    tail = [s for s in samples if s[2] is not None and s[1] >= 10]
    slope = None
    if len(tail) >= 3:
        slope = float(np.polyfit([s[0] for s in tail], [s[2] for s in tail], 1)[0]) * 10_000
    row.update({
        "requests_planned": n,
        "requests_sent": counts["sent"],
        "refused_as_expected": counts["expected_4xx"],
        "throughput_all_rps": round(counts["sent"] / secs, 1) if secs > 0 else None,
        "mix": "89% one text, 10% eight texts, 1% malformed (expected 4xx)",
        "rss_mb": {"start": round(rss[0], 1), "end": round(rss[-1], 1), "max": round(max(rss), 1),
                   "min": round(min(rss), 1), "slope_per_10k_requests_after_10s": round(slope, 3) if slope is not None else None},
        "rss_samples": [[int(i), t, round(r, 1)] for i, t, r in samples if r is not None],
        "server_alive": server.alive,
    })
    print(f"  soak: {row['requests']} ok requests in {row['seconds']} s, RSS start {row['rss_mb']['start']} "
          f"end {row['rss_mb']['end']} max {row['rss_mb']['max']} MiB, {row['failed']} failed", flush=True)
    return row


# --------------------------------------------------------------------------- report


def markdown(report: dict) -> str:
    m = report["machine"]
    lines = [
        "# Load test of `textcls serve`",
        "",
        f"- command: `{report['command']}`",
        f"- date: {report['date']}; commit `{report['git']['commit']}`"
        f"{' (dirty tree)' if report['git']['dirty'] else ''}",
        f"- machine: {m['cpu_model']}, {m['cpus_available']} CPUs available, {m['memory_gb']} GB RAM; "
        f"SIMD flags: {', '.join(report['cpu_simd_flags']) or 'unknown'}",
        f"- load average (1/5/15 min) at start {report['load_average_start']}, at end "
        f"{report['load_average_end']}: the machine is shared, so the server competed with other work "
        "and with the load-generating client itself",
        f"- server: `{' '.join(report['server_command'])}` (one uvicorn worker, one torch thread, "
        f"batch window {report['batch_window_ms']} ms); client: asyncio HTTP/1.1 keep-alive, closed loop",
        "- versions: " + ", ".join(f"{k} {v}" for k, v in report["versions"].items() if v),
        "",
    ]
    for run in report["runs"]:
        info = run["run"]
        accuracy = info.get("test_accuracy")
        accuracy = f"{100 * accuracy:.2f} %" if isinstance(accuracy, float) and accuracy == accuracy else "not recorded"
        lines += [f"## {info['preset']} on {info.get('dataset')}", "",
                  f"Run: `{info['run_dir']}` ({'trained here' if info.get('trained_here') else 'given'}"
                  + (f", {info['train_seconds']} s, overrides {info['overrides']}" if info.get('trained_here') else "")
                  + f"); test accuracy {accuracy}; server up in {run['startup_seconds']} s, "
                  f"RSS {run['rss_mb_after_start']:.1f} MiB before the first request.",
                  "", "| clients | requests | req/s | p50 ms | p90 ms | p99 ms | max ms | texts per model call | failed |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for row in run["levels"]:
            lat = row["latency_ms"]
            lines.append(f"| {row['clients']} | {row['requests']} | {row['throughput_rps']} | {lat['p50']} | "
                         f"{lat['p90']} | {lat['p99']} | {lat['max']} | {row['texts_per_model_call']} | {row['failed']} |")
        ok = sum(r["ok"] for r in run["malformed"])
        lines += ["", f"Malformed requests: {ok} of {len(run['malformed'])} answered as expected, "
                      "the server up after each.", "",
                  "| case | status | error |", "|---|---|---|"]
        for r in run["malformed"]:
            mark = "" if r["ok"] else " **(unexpected)**"
            lines.append(f"| {r['case']} | {r['status']}{mark} | {r['error'].replace('|', '/')[:160]} |")
        if run.get("soak"):
            s = run["soak"]
            rss = s["rss_mb"]
            lines += ["", f"Soak: {s['requests_sent']} requests ({s['requests']} answered 200, "
                          f"{s['refused_as_expected']} malformed refused as expected) in {s['seconds']} s "
                          f"({s['throughput_rps']} req/s, p50 {s['latency_ms']['p50']} ms, p99 {s['latency_ms']['p99']} ms) "
                          f"with 8 clients, {s['mix']}; {s['failed']} failed. Server RSS: start {rss['start']} MiB, "
                          f"end {rss['end']} MiB, max {rss['max']} MiB, min {rss['min']} MiB "
                          f"(slope after the first 10 s: {rss['slope_per_10k_requests_after_10s']} MiB per 10,000 requests)."]
        if run.get("control_soak"):
            c = run["control_soak"]
            rss = c["rss_mb"]
            env = " ".join(f"{k}={v}" for k, v in c["env"].items())
            lines += ["", f"Control soak with `{env}` (no compiled convolution kept per input shape): "
                          f"{c['requests_sent']} requests in {c['seconds']} s ({c['throughput_rps']} req/s, "
                          f"p50 {c['latency_ms']['p50']} ms, p99 {c['latency_ms']['p99']} ms), {c['failed']} failed; "
                          f"RSS start {rss['start']} MiB, end {rss['end']} MiB, max {rss['max']} MiB "
                          f"(slope after the first 10 s: {rss['slope_per_10k_requests_after_10s']} MiB per 10,000 requests)."]
        lines.append("")
    lines += ["Failures anywhere: **" + str(report["total_failed"]) + "**.", ""]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-fasttext", type=Path, default=None, help="A fasttext-bag run to serve (else trained on MR).")
    parser.add_argument("--run-spe", type=Path, default=None, help="A spe-cnn run to serve (else trained on MR).")
    parser.add_argument("--work-dir", type=Path, default=REPO / "runs" / "serve_load",
                        help="Where runs trained here and the server logs go.")
    parser.add_argument("--level-requests", type=int, default=3000, help="Requests per concurrency level at most.")
    parser.add_argument("--level-seconds", type=float, default=30.0, help="Seconds per concurrency level at most.")
    parser.add_argument("--soak-requests", type=int, default=100_000, help="Requests of the RSS soak (0: none).")
    parser.add_argument("--soak-seconds", type=float, default=900.0, help="Seconds of the soak at most.")
    parser.add_argument("--soak-runs", default="all", help="Comma-separated presets to soak, or all.")
    parser.add_argument("--control-soak", type=int, default=100_000,
                        help="Requests of the spe-cnn control soak with oneDNN's primitive caches off (0: none).")
    parser.add_argument("--batch-window-ms", type=float, default=None, help="Server batch window (default: serve's).")
    parser.add_argument("--output", type=Path, default=RESULTS / "serve_load", help="Output path without suffix.")
    args = parser.parse_args()
    command = "python " + " ".join(shlex.quote(a) for a in [os.path.relpath(sys.argv[0], REPO), *sys.argv[1:]])

    from textcls import __version__
    from textcls.benchmark.system import git_info, library_versions, machine_info
    from textcls.serve import DEFAULT_BATCH_WINDOW_MS

    os.environ.setdefault("TEXTCLS_DATA_DIR", str(REPO.parent / "shared" / "datasets"))
    args.work_dir.mkdir(parents=True, exist_ok=True)
    report = {
        "command": command,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "git": git_info(REPO),
        "machine": machine_info(),
        "cpu_simd_flags": [f for f in SIMD if f in set(cpu_flags())],
        "cpu_flags": cpu_flags(),
        "versions": {**library_versions(), "fastapi": _version("fastapi"), "uvicorn": _version("uvicorn")},
        "textcls_version": __version__,
        "load_average_start": load_average(),
        "batch_window_ms": args.batch_window_ms if args.batch_window_ms is not None else DEFAULT_BATCH_WINDOW_MS,
        "levels": list(LEVELS),
        "level_bounds": {"requests": args.level_requests, "seconds": args.level_seconds},
        "runs": [],
    }
    specs = [("fasttext-bag", args.run_fasttext, {}),
             ("spe-cnn", args.run_spe, {"epochs": 5, "lr": 1e-3, "patience": 2})]
    soak_runs = {p for p, _, _ in specs} if args.soak_runs == "all" else set(args.soak_runs.split(","))
    texts = request_texts()
    total_failed = 0
    for preset, given, overrides in specs:
        if given is None:
            run_dir = args.work_dir / f"{preset}_mr"
            print(f"training {preset} on mr -> {run_dir}", flush=True)
            info = train_run(preset, run_dir, overrides)
        else:
            run_dir = given
            metrics = json.loads((run_dir / "metrics.json").read_text()) if (run_dir / "metrics.json").is_file() else {}
            info = {"preset": json.loads((run_dir / "config.json").read_text())["model"], "trained_here": False,
                    "test_accuracy": (metrics.get("test") or {}).get("accuracy")}
        info["dataset"] = json.loads((run_dir / "config.json").read_text()).get("dataset")
        info["run_dir"] = os.path.relpath(run_dir, REPO) if run_dir.resolve().is_relative_to(REPO) else str(run_dir)
        print(f"serving {info['preset']}", flush=True)
        server = Server(run_dir.resolve(), args.work_dir / f"{preset}_server.log", args.batch_window_ms)
        report["server_command"] = [Path(server.command[0]).name, *server.command[1:]]
        entry = {"run": info, "startup_seconds": server.startup_seconds, "rss_mb_after_start": server.rss()}
        try:
            entry["levels"] = run_levels(server, texts, args)
            entry["malformed"] = check_malformed(server)
            if args.soak_requests > 0 and preset in soak_runs:
                entry["soak"] = soak(server, texts, args.soak_requests, args.soak_seconds)
            entry["malformed_after_soak_ok"] = all(r["ok"] for r in check_malformed(server))
            entry["alive_at_end"] = server.alive
        finally:
            server.stop()
        failed = sum(r["failed"] for r in entry["levels"]) + sum(not r["ok"] for r in entry["malformed"])
        failed += entry.get("soak", {}).get("failed", 0) + (not entry["malformed_after_soak_ok"]) + (not entry["alive_at_end"])
        if preset == "spe-cnn" and args.control_soak > 0:
            # Control: torch's oneDNN convolutions keep one compiled primitive per input shape
            # (ideep's LRU cache, LRU_CACHE_CAPACITY, and oneDNN's own, both 1024 entries by
            # default); batches of new (texts, length) shapes grow RSS until they are full.
            # With both off, RSS should stay flat.
            control_env = {"LRU_CACHE_CAPACITY": "1", "ONEDNN_PRIMITIVE_CACHE_CAPACITY": "0"}
            print(f"serving {preset} with {control_env}", flush=True)
            control = Server(run_dir.resolve(), args.work_dir / f"{preset}_control_server.log",
                             args.batch_window_ms, control_env)
            try:
                entry["control_soak"] = {"env": control_env, "rss_mb_after_start": control.rss(),
                                         **soak(control, texts, args.control_soak, args.soak_seconds)}
                entry["control_soak"]["alive_at_end"] = control.alive
            finally:
                control.stop()
            failed += entry["control_soak"]["failed"] + (not entry["control_soak"]["alive_at_end"])
        entry["failed"] = failed
        total_failed += failed
        report["runs"].append(entry)
    report["load_average_end"] = load_average()
    report["total_failed"] = total_failed
    write_report(args.output, report, markdown(report))
    print(f"wrote {args.output}.json and .md; {total_failed} failures", flush=True)
    return 1 if total_failed else 0


def _version(dist: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


if __name__ == "__main__":
    sys.exit(main())
