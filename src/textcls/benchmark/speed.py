"""Controlled speed and memory comparison of presets at fixed batch size and sequence length.

The suites measure models on real data, where documents differ in length and early stopping
differs in epochs. The papers' speed claims (CSPAN vs a Bi-LSTM, HCAN vs HAN, FCSR's linear
growth, DASA vs DiSAN) compare models at the *same* batch size and length, so this module
times exactly that: for each (preset, length), a fresh ``spawn`` child builds the model from
the registry, feeds it synthetic batches of the preset's input shape (random token ids,
every position real, the worst case at that length), and times ``steps`` training steps
(forward, loss, backward, optimiser step, the preset's own optimiser) after ``warmup`` steps,
plus inference batches. Each child's peak resident memory is its own; the report gives it
and the peak minus the memory held before the first step (imports, model and optimiser
state), which is what the forward/backward pass adds.

Timings on shared machines are noisy: compare ratios measured in one run, never absolute
numbers across runs. The timed steps of one child are repeated measurements of one process: how
much they vary says little about how much a rerun would, which starts a new process on a machine
in another state. ``repeats`` (``textcls speed --repeats R``) times every cell in R rounds, a fresh
child each, so the process is the unit replicated: each row keeps each round's median
(``train_ms_per_batch_rounds``), and the speed verdicts test over those rounds.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..artifacts import atomic_write_bytes, write_figure
from ..errors import ConfigError
from ..validate import check_int, range_check
from . import system

DEFAULT_VOCAB = 20_000
# Words per sentence of a hierarchical preset's synthetic batch, where run_speed is given none.
DEFAULT_SENTENCE_LENGTH = 25
DEFAULT_CLASSES = 4


def synthetic_batch(preset, batch_size: int, length: int, vocab_size: int, num_classes: int,
                    sentence_length: int, generator):
    """A batch of random ids in the preset's input shape; every position is real.

    Hierarchical presets get ``ceil(length / sentence_length)`` sentences of
    ``sentence_length`` words (``length`` words in all); presets with hashed bigrams get one
    bigram per adjacent pair.
    """
    import torch

    inputs = preset.inputs
    labels = torch.randint(0, num_classes, (batch_size,), generator=generator)
    if inputs.get("shape") == "hierarchical":
        sentences = math.ceil(length / sentence_length)
        ids = torch.randint(2, vocab_size, (batch_size, sentences, sentence_length), generator=generator)
        return {"input_ids": ids, "word_mask": torch.ones_like(ids, dtype=torch.bool),
                "sentence_mask": torch.ones(batch_size, sentences, dtype=torch.bool), "labels": labels}
    ids = torch.randint(2, vocab_size, (batch_size, length), generator=generator)
    batch = {"input_ids": ids, "mask": torch.ones_like(ids, dtype=torch.bool), "labels": labels}
    buckets = int(inputs.get("bigram_buckets") or 0)
    if buckets > 0:
        bigrams = torch.randint(1, buckets + 1, (batch_size, max(length - 1, 1)), generator=generator)
        batch["bigram_ids"] = bigrams
        batch["bigram_mask"] = torch.ones_like(bigrams, dtype=torch.bool)
    return batch


def _measure(job: dict) -> dict:
    """One (preset, length) measurement; runs inside the spawned child."""
    import numpy as np
    import torch

    from ..models.registry import create_model, get_preset
    from ..train.engine import training_step
    from ..train.optim import build_optimizer

    torch.set_num_threads(job["threads"])
    torch.manual_seed(0)
    preset = get_preset(job["model"]).with_overrides(**job["overrides"])
    if preset.kind != "neural":
        raise ConfigError(f"model '{preset.name}' is not a neural model (kind {preset.kind}); the speed comparison "
                          "takes neural presets")
    vocab, classes = job["vocab_size"], job["num_classes"]
    embeddings = None
    if preset.inputs.get("embeddings"):
        dim = int(preset.inputs.get("embedding_dim") or 300)
        embeddings = np.random.default_rng(0).normal(0, 0.3, (vocab, dim)).astype(np.float32)
        embeddings[0] = 0
    model = create_model(preset, num_classes=classes, vocab_size=vocab, embeddings=embeddings)
    step = training_step(model, build_optimizer(model, preset.recipe), preset.recipe)
    generator = torch.Generator().manual_seed(0)
    batches = [synthetic_batch(preset, job["batch_size"], job["length"], vocab, classes,
                               job["sentence_length"], generator) for _ in range(2)]

    model.train()
    rss_before = system.peak_rss_mb()
    train_ms = []
    for i in range(job["warmup"] + job["steps"]):
        started = time.perf_counter()
        step(batches[i % 2])
        if i >= job["warmup"]:
            train_ms.append(1000 * (time.perf_counter() - started))
    rss_train = system.peak_rss_mb()
    model.eval()
    infer_ms = []
    with torch.inference_mode():
        for i in range(job["warmup"] + job["steps"]):
            started = time.perf_counter()
            model(batches[i % 2])
            if i >= job["warmup"]:
                infer_ms.append(1000 * (time.perf_counter() - started))
    ms = statistics.median(train_ms)
    return {
        "model": job["model"], "length": job["length"], "batch_size": job["batch_size"], "status": "ok",
        "train_ms_per_batch": ms, "train_ms_per_batch_all": train_ms,
        "train_docs_per_second": 1000 * job["batch_size"] / ms,
        "infer_ms_per_batch": statistics.median(infer_ms), "infer_ms_per_batch_all": infer_ms,
        "peak_rss_mb": rss_train, "rss_before_first_step_mb": rss_before,
        "training_peak_added_mb": rss_train - rss_before,
        "parameters": model.num_parameters(), "trainable_parameters": model.num_parameters(trainable_only=True),
        "input_shape": preset.inputs.get("shape", "flat"), "threads": torch.get_num_threads(),
        "overrides": job["overrides"],
    }


def _child(job: dict, conn) -> None:
    try:
        result = _measure(job)
    except BaseException as exc:  # noqa: BLE001 -- any failure is this measurement's error record
        result = {"model": job["model"], "length": job["length"], "status": "failed",
                  "error": f"{type(exc).__name__}: {' '.join(str(exc).split())}"}
    conn.send(result)
    conn.close()


def _run_child(job: dict, timeout: float) -> dict:
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_child, args=(job, child), daemon=True)
    process.start()
    child.close()
    try:
        if not parent.poll(timeout):
            process.terminate()
            return {"model": job["model"], "length": job["length"], "status": "failed",
                    "error": f"took longer than {timeout:g} s (timeout); lower the length, batch or steps"}
        try:
            return parent.recv()
        except EOFError:
            process.join()
            why = " (killed by the system: out of memory?)" if process.exitcode == -9 else ""
            return {"model": job["model"], "length": job["length"], "status": "failed",
                    "error": f"the child process died with exit code {process.exitcode}{why}"}
    finally:
        process.join(5)
        parent.close()


# The longest a (model, length) measurement may be given: a week. Beyond it a timeout is a slip
# (or inf, which the child's poll cannot take), not a wish to wait.
MAX_TIMEOUT = 7 * 24 * 3600.0


# The most rounds ``repeats`` may ask for: each round times every cell again, in minutes.
MAX_REPEATS = 1_000


def _check_settings(lengths: list[int], *, batch_size, steps, warmup, repeats, threads, vocab_size, num_classes,
                    sentence_length, timeout) -> None:
    """Every numeric setting of ``run_speed``, before any child starts: a bad one would otherwise
    be timed (a negative warmup times fewer steps than the report says; no timed step fails
    every measurement) or fail deep in a child (a NaN or infinite timeout)."""
    for what, value, lo, hi in (("batch_size", batch_size, 1, 1 << 16), ("steps", steps, 1, 10_000),
                                ("warmup", warmup, 0, 10_000), ("repeats", repeats, 1, MAX_REPEATS),
                                ("sentence_length", sentence_length, 1, 1 << 16), ("vocab_size", vocab_size, 1, 1 << 24),
                                ("num_classes", num_classes, 1, 1 << 16)):
        check_int(what, value, lo, hi)
    check_int("threads", threads, 1, 1 << 16, optional=True)
    if vocab_size < 3:
        raise ConfigError(f"parameter 'vocab_size' = {vocab_size} must be at least 3 (PAD, UNK and one word)")
    for length in lengths:
        check_int("lengths", length, 1, 1 << 20)  # the parameter's name, which the CLI maps to --length
    range_check("timeout", timeout, 0, MAX_TIMEOUT, low_open=True)


def run_speed(models: list[str], lengths: list[int], *, batch_size: int = 32, steps: int = 5, warmup: int = 2,
              repeats: int = 1, threads: int | None = None, vocab_size: int = DEFAULT_VOCAB,
              num_classes: int = DEFAULT_CLASSES, sentence_length: int | None = None,
              overrides: dict[str, dict] | None = None, timeout: float = 900.0, progress: bool = True) -> dict:
    """Time every model at every length (see the module docstring); returns the report dict.

    ``repeats`` rounds each time every (model, length) cell once, in a fresh child (``round_order``);
    a row pools its cell's rounds (``merge_rounds``). ``overrides`` maps a model name to preset
    overrides for it (e.g. a CPU-sized ``d``). ``sentence_length`` (default 25) shapes the
    hierarchical presets' batches only, so it is refused where none is timed.
    """
    from ..models.registry import get_preset

    if not models or not lengths:
        raise ConfigError("give at least one model and one length")
    overrides = overrides or {}
    presets = [get_preset(name).with_overrides(**overrides.get(name, {})) for name in models]  # unknown names fail here
    if sentence_length is None:
        sentence_length = DEFAULT_SENTENCE_LENGTH
    elif not any(p.inputs.get("shape") == "hierarchical" for p in presets):
        raise ConfigError(f"parameter 'sentence_length' = {sentence_length}: none of the timed presets "
                          f"({', '.join(models)}) reads sentences, so it would change nothing; leave it out, or "
                          "time a hierarchical preset (han, hcan, ...)")
    for name in overrides:
        if name not in models:
            raise ConfigError(f"overrides given for '{name}', which is not among the models {', '.join(models)}")
    _check_settings(lengths, batch_size=batch_size, steps=steps, warmup=warmup, repeats=repeats, threads=threads,
                    vocab_size=vocab_size, num_classes=num_classes, sentence_length=sentence_length, timeout=timeout)
    threads = threads or system.available_cpus()
    timed: dict[tuple[int, int], list[dict]] = {}
    for round_index in range(repeats):
        for li, mi in round_order(len(models), len(lengths), round_index):
            done = timed.setdefault((li, mi), [])
            if done and done[-1]["status"] != "ok":
                continue  # a failure (out of memory, a timeout) would recur, and costs as long as it took
            job = {"model": models[mi], "length": lengths[li], "batch_size": batch_size, "steps": steps,
                   "warmup": warmup, "threads": threads, "vocab_size": vocab_size, "num_classes": num_classes,
                   "sentence_length": sentence_length, "overrides": overrides.get(models[mi], {})}
            done.append(_run_child(job, timeout))
            if progress:
                _show_progress(done[-1], round_index, repeats)
    rows = [merge_rounds(timed[(li, mi)]) for li in range(len(lengths)) for mi in range(len(models))]
    return {
        "kind": "speed", "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "settings": {"models": models, "lengths": lengths, "batch_size": batch_size, "steps": steps,
                     "warmup": warmup, "repeats": repeats, "threads": threads, "vocab_size": vocab_size,
                     "num_classes": num_classes, "sentence_length": sentence_length, "overrides": overrides},
        "machine": system.machine_info(), "git": system.git_info(), "libraries": system.library_versions(),
        "rows": rows,
    }


def round_order(n_models: int, n_lengths: int, round_index: int) -> list[tuple[int, int]]:
    """The (length index, model index) cells of one round, in the order they are timed: the lengths
    one after another, reversed in every other round, and at each length the models rotated by one
    place a round.

    A long timing drifts (the CPU heats and throttles, other jobs start and stop on a shared
    machine). With one fixed order the same model would always run first at a length and the
    longest length always last, so a drift would fall on the same cells in every round, and the
    test over rounds would read it as the models' (or the lengths') difference. Rotated, each model
    takes every place in turn (evenly when the rounds are a multiple of the models), and the two
    lengths of an exponent alternate which comes first."""
    shift = round_index % n_models
    models = list(range(shift, n_models)) + list(range(shift))
    lengths = range(n_lengths) if round_index % 2 == 0 else reversed(range(n_lengths))
    return [(li, mi) for li in lengths for mi in models]


def merge_rounds(rounds: list[dict]) -> dict:
    """One report row from a cell's rounds (one child each, in round order).

    ``train_ms_per_batch_all`` (and ``infer_ms_per_batch_all``) hold every timed step of every
    round, round after round, and ``train_ms_per_batch`` (``infer_ms_per_batch``) their median, so
    a one-round row has the values it had before rounds existed; ``train_ms_per_batch_rounds`` holds each
    round's median, one per process, the unit a rerun repeats. The memory figures are those of the
    round with the highest peak (the most a user must provide), so that peak and added are of one process.
    A round that failed makes the row failed: the rounds no longer time the same cells."""
    last = rounds[-1]
    if last["status"] != "ok":
        return last if len(rounds) == 1 else {**last, "error": f"round {len(rounds)}: {last['error']}"}
    train = [ms for r in rounds for ms in r["train_ms_per_batch_all"]]
    infer = [ms for r in rounds for ms in r["infer_ms_per_batch_all"]]
    worst = max(rounds, key=lambda r: r["peak_rss_mb"])
    ms = statistics.median(train)
    return {**worst, "train_ms_per_batch": ms, "train_ms_per_batch_all": train,
            "train_docs_per_second": 1000 * worst["batch_size"] / ms, "infer_ms_per_batch": statistics.median(infer),
            "infer_ms_per_batch_all": infer, "train_ms_per_batch_rounds": [r["train_ms_per_batch"] for r in rounds]}


def _show_progress(row: dict, round_index: int, repeats: int) -> None:
    shown = (f"{row['train_ms_per_batch']:.1f} ms/batch, peak {row['peak_rss_mb']:.0f} MB"
             if row["status"] == "ok" else f"FAILED: {row['error']}")
    where = f" round {round_index + 1}/{repeats}" if repeats > 1 else ""
    print(f"[speed]{where} {row['model']} L={row['length']}: {shown}", file=sys.stderr, flush=True)


def interleaved_best(repeats: int, predictors: dict, texts: list) -> tuple[dict, dict]:
    """Best wall time of each ``predictors[kind](texts)`` over ``repeats`` rounds, the predictors
    taking turns in every round, so a change in the machine's load (it is shared) hits all of
    them alike; and each one's last output."""
    best = {kind: float("inf") for kind in predictors}
    outputs = {}
    for _ in range(repeats):
        for kind, predict in predictors.items():
            start = time.perf_counter()
            outputs[kind] = predict(texts)
            best[kind] = min(best[kind], time.perf_counter() - start)
    return best, outputs


def format_speed_markdown(result: dict, command: str | None = None) -> str:
    """A table per length: ms per training batch and its ratio to the first model's (train x first),
    docs/s, memory and the ratio of the memory added to the first model's (added MB x first); with
    2+ rounds (``repeats``), beside them the range of the rounds' medians and of their ratios."""
    settings = result["settings"]
    repeats = int(settings.get("repeats") or 1)
    lines = [f"# Speed: {', '.join(settings['models'])}", ""]
    if command:
        lines += [f"Command: `{command}`", ""]
    machine = result["machine"]
    lines += [f"Batch {settings['batch_size']}, {_timing_text(settings, repeats)}, {settings['threads']} threads, "
              f"synthetic batches (every position real), vocabulary {settings['vocab_size']}, "
              f"{settings['num_classes']} classes. "
              f"Machine: {machine.get('cpu_model')} ({', '.join(machine.get('cpu_simd') or []) or 'SIMD flags not recorded'}), "
              f"{machine.get('cpus_available')} CPUs. "
              f"Commit {(result['git'].get('commit') or 'unknown')[:10]}. Ratios ('x first') are to the first model at "
              "the same length: 'train x first' of training time, 'added MB x first' of added memory; peak memory "
              "is the child process's ru_maxrss, 'added' is the peak minus the memory held before the first step.",
              ""]
    columns = ["model", "train ms/batch", "train x first", "train docs/s", "infer ms/batch", "peak MB", "added MB",
               "added MB x first", "params trainable / total"]
    if repeats > 1:
        columns[2:2], columns[4:4] = ["rounds: ms min-max"], ["rounds: x first min-max"]
    by_length: dict[int, list[dict]] = {}
    for row in result["rows"]:
        by_length.setdefault(row["length"], []).append(row)
    for length, rows in by_length.items():
        lines += [f"## Length {length}", "", "| " + " | ".join(columns) + " |", "|---|" + "---:|" * (len(columns) - 1)]
        base = next((r for r in rows if r["status"] == "ok"), None)
        for r in rows:
            if r["status"] != "ok":
                lines.append(f"| {r['model']} | failed: {r['error']} |" + "  |" * (len(columns) - 2))
                continue
            ratio = r["train_ms_per_batch"] / base["train_ms_per_batch"]
            mem_ratio = r["training_peak_added_mb"] / max(base["training_peak_added_mb"], 1e-9)
            cells = [r["model"], f"{r['train_ms_per_batch']:.1f}", f"{ratio:.2f}", f"{r['train_docs_per_second']:.1f}",
                     f"{r['infer_ms_per_batch']:.1f}", f"{r['peak_rss_mb']:.0f}", f"{r['training_peak_added_mb']:.0f}",
                     f"{mem_ratio:.2f}", f"{r['trainable_parameters']:,} / {r['parameters']:,}"]
            if repeats > 1:
                cells[2:2], cells[4:4] = [_rounds_range(r)], [_ratios_range(r, base)]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def _timing_text(settings: dict, repeats: int) -> str:
    steps, warmup = settings["steps"], settings["warmup"]
    if repeats == 1:
        return f"median of {steps} training steps after {warmup} warm-up steps"
    return (f"{repeats} rounds, each timing every (model, length) in a fresh process ({steps} training steps after "
            f"{warmup} warm-up steps), the models' order rotated each round: 'train ms/batch' is the median of all "
            f"{repeats * steps} timed steps, 'rounds: ms' the range of the {repeats} rounds' medians and 'rounds: x "
            "first' of their ratios to the first model's, round by round (the spread a rerun shows)")


def _rounds_range(row: dict) -> str:
    mine = row.get("train_ms_per_batch_rounds") or []
    return f"{min(mine):.1f}-{max(mine):.1f}" if mine else "–"


def _ratios_range(row: dict, base: dict) -> str:
    """The range of the row's round medians over ``base``'s, round by round: both cells were timed
    in each round, close in time, so a round's ratio is what one rerun would report."""
    mine, theirs = row.get("train_ms_per_batch_rounds") or [], base.get("train_ms_per_batch_rounds") or []
    ratios = [a / b for a, b in zip(mine, theirs)] if mine and len(mine) == len(theirs) else []
    return f"{min(ratios):.2f}-{max(ratios):.2f}" if ratios else "–"


def plot_speed(result: dict, path: str | Path) -> Path | None:
    """Training ms per batch against length, log-log, one line per model (needs 2+ lengths)."""
    if len(result["settings"]["lengths"]) < 2:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for name in result["settings"]["models"]:
        rows = [r for r in result["rows"] if r["model"] == name and r["status"] == "ok"]
        if rows:
            ax.plot([r["length"] for r in rows], [r["train_ms_per_batch"] for r in rows], marker="o", label=name)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("sequence length (tokens)")
    ax.set_ylabel(f"training ms per batch of {result['settings']['batch_size']}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    try:
        return write_figure(Path(path), fig, dpi=120)
    finally:
        plt.close(fig)


def report_stem(output: str | Path, name: str, suffixes: tuple[str, ...]) -> Path:
    """The path stem of a report's files: ``output`` less one of their ``suffixes``
    (``speed.json`` -> ``speed``), or ``<output>/<name>`` where ``output`` is a folder that exists
    or a string ending in a path separator (``-o out/``: a folder to make; ``Path`` drops the slash).
    Such a folder is written into rather than refused: ``-o results`` can only mean "put the report
    there", and the ``results.json`` beside the folder that a stem gives was never what was asked."""
    stem = Path(output)
    if stem.is_dir() or str(output).endswith((os.sep, os.altsep or os.sep)):
        return stem / name
    return stem.with_suffix("") if stem.suffix in suffixes else stem


def write_speed_report(result: dict, output: str | Path, command: str | None = None) -> dict[str, Path]:
    """``output`` is a path stem (``report_stem``; a folder gets ``speed.*``): writes ``<stem>.json``,
    ``<stem>.md`` and, with 2+ lengths, ``<stem>.png``."""
    stem = report_stem(output, "speed", (".json", ".md", ".png"))
    result = {**result, "command": command}
    files = {"json": stem.with_suffix(".json"), "markdown": stem.with_suffix(".md")}
    atomic_write_bytes(files["json"], (json.dumps(result, indent=1) + "\n").encode("utf-8"))
    atomic_write_bytes(files["markdown"], format_speed_markdown(result, command).encode("utf-8"))
    plot = plot_speed(result, stem.with_suffix(".png"))
    if plot is not None:
        files["plot"] = plot
    return files


def parse_overrides(pairs: list[str]) -> dict[str, dict[str, Any]]:
    """``["cspan-base:d=64", ...]`` -> ``{"cspan-base": {"d": 64}}``; values are JSON, else strings."""
    out: dict[str, dict[str, Any]] = {}
    for pair in pairs:
        model, sep, setting = pair.partition(":")
        key, eq, raw = setting.partition("=")
        if not sep or not eq or not model or not key:
            raise ConfigError(f"--set '{pair}' must look like MODEL:KEY=VALUE, e.g. hcan:d=64")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        out.setdefault(model, {})[key] = value
    return out
