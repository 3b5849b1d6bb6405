"""Benchmark reports: the raw JSON, a Markdown table per dataset, and an accuracy/time plot.

``write_report(result, output_dir)`` writes ``<suite>.json`` (``allow_nan=False``),
``<suite>.md`` and ``<suite>.png``, each atomically. The paper's number sits in its own
column, next to ours, and is never mixed into our numbers.
"""

from __future__ import annotations

import io
import json
import math
import os
import shlex
from collections import Counter
from pathlib import Path
from statistics import fmean
from typing import Callable, Sequence

from ..artifacts import atomic_write_bytes, write_figure, write_json as _write_json_file
from ..errors import ConfigError, DataError
from ..validate import check_folder_path

__all__ = ["write_report", "write_json", "start_script_result", "script_header", "write_script_result", "run_datasets",
           "dev_choice_table", "format_markdown", "format_tables", "format_summary",
           "plot_accuracy_vs_time", "accuracy_vs_time_figure", "read_committed"]

DASH = "–"
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p")
LEGEND_COLUMNS = 5


def read_committed(path: Path, parse: Callable[[str], object] = json.loads) -> dict:
    """A committed JSON (or, with ``parse=tomllib.loads``, TOML) file of the benchmarks, parsed;
    an empty, cut or hand-broken one is a one-line DataError naming it, not a parser's traceback."""
    try:
        data = parse(Path(path).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:  # JSONDecodeError and TOMLDecodeError are ValueErrors
        raise DataError(f"{path}: cannot be read ({type(exc).__name__}: {str(exc).splitlines()[0]}); restore it "
                        f"(git checkout -- {path}) or make it again") from None
    if not isinstance(data, dict):
        raise DataError(f"{path}: holds a {type(data).__name__}, not an object; restore it (git checkout -- {path}) "
                        "or make it again")
    return data


def start_script_result(script: str | Path, argv: Sequence[str], **fields) -> dict:
    """The opening of a one-thread benchmark script's result (``benchmarks/<script>.py``): the
    command that reruns it, the commit, the machine and the load average now, then ``fields``,
    and the empty ``runs`` that ``write_script_result`` fills and writes."""
    from .system import git_info, machine_info

    script = Path(script).resolve()
    return {"command": f"OMP_NUM_THREADS=1 python benchmarks/{script.name} " + shlex.join(argv),
            "git": git_info(script.parents[1]), "machine": machine_info(), **fields,
            "load_average_before": [round(x, 2) for x in os.getloadavg()], "runs": {}}


def script_header(title: str, result: dict) -> list[str]:
    """A script report's first Markdown lines: the title, then how to rerun it and where it ran."""
    machine = result["machine"]
    return [f"# {title}", "", f"- command: `{result['command']}`", f"- commit: `{result['git'].get('commit')}`",
            f"- machine: {machine['cpu_model']} ({', '.join(machine['cpu_simd'])}); one thread; load average "
            f"{result['load_average_before']} -> {result.get('load_average_after')}", ""]


def write_script_result(output: str | Path, result: dict, markdown: Callable[[dict], str]) -> dict:
    """Write a benchmark script's ``<output>.json`` and ``<output>.md`` after each dataset, so a
    stopped run keeps the datasets it finished: ``result["runs"]`` holds one key per finished
    dataset, which become ``"datasets"``, and the load average is taken now
    (``"load_average_after"``). Returns what was written."""
    result["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    done = {**result, "datasets": list(result["runs"])}
    _write_json_file(Path(f"{output}.json"), done)
    atomic_write_bytes(Path(f"{output}.md"), markdown(done).encode("utf-8"))
    return done


def run_datasets(result: dict, datasets: Sequence[str], seeds: Sequence[int], runs: Callable[[str, int], dict],
                 output: str | Path, markdown: Callable[[dict], str]) -> dict:
    """Fill ``result["runs"][dataset][seed]`` with ``runs(dataset, seed)``, writing the script's
    JSON and Markdown after each dataset (``write_script_result``); returns what was written last."""
    written = result
    for name in datasets:
        result["runs"][name] = {str(seed): runs(name, seed) for seed in seeds}
        written = write_script_result(output, result, markdown)
    print(f"wrote {output}.json and {output}.md")
    return written


def dev_choice_table(result: dict, candidates: Sequence[str]) -> list[str]:
    """Markdown lines comparing ``candidates`` by mean **dev** accuracy, the test accuracy beside
    it, for a benchmark script whose ``result["runs"][dataset][seed][candidate]`` hold ``dev``
    and ``test`` accuracies (0-1); the last line names the candidate of highest average dev
    accuracy (ties to the first listed)."""
    datasets, seeds = result["datasets"], [str(s) for s in result["seeds"]]
    lines = [f"Accuracy, % (mean over seeds {', '.join(seeds)}): **dev** (what chooses) / test (recorded, "
             "chooses nothing).", "",
             "| candidate | " + " | ".join(datasets) + " | average dev | average test |",
             "|---|" + "---|" * len(datasets) + "---:|---:|"]
    average_dev = {}
    for candidate in candidates:
        cells, devs, tests = [], [], []
        for name in datasets:
            runs = [result["runs"][name][seed][candidate] for seed in seeds]
            dev, test = 100 * fmean([r["dev"] for r in runs]), 100 * fmean([r["test"] for r in runs])
            devs.append(dev)
            tests.append(test)
            cells.append(f"{dev:.2f} / {test:.2f}")
        average_dev[candidate] = float(fmean(devs))
        lines.append(f"| {candidate} | " + " | ".join(cells) + f" | {fmean(devs):.2f} | {fmean(tests):.2f} |")
    best = max(candidates, key=lambda c: average_dev[c])
    return lines + ["", f"Highest average dev accuracy: **{best}**.", ""]


def _stem(result: dict) -> str:
    return result.get("report_name") or result["suite"]


def write_json(result: dict, output_dir: str | Path) -> Path:
    path = Path(output_dir) / f"{_stem(result)}.json"
    _write_json_file(path, result)
    return path


def write_report(result: dict, output_dir: str | Path) -> dict:
    """Write the JSON, Markdown and PNG of a suite result; returns their paths as strings."""
    output_dir = Path(output_dir)
    stem = _stem(result)
    paths = {
        "json": output_dir / f"{stem}.json",
        "markdown": output_dir / f"{stem}.md",
        "plot": output_dir / f"{stem}.png",
    }
    files = {k: str(v) for k, v in paths.items()}
    result["files"] = files
    # All or nothing: every file is made in memory and every target checked before the first is
    # written, so a result the tables cannot show (a summary cell that is not a number), a value
    # JSON cannot hold (NaN) or a target that is a folder leaves the old files as they were, not a
    # new JSON beside an old table.
    markdown = format_markdown(result).encode("utf-8")
    try:
        data = (json.dumps(result, indent=2, allow_nan=False) + "\n").encode()
    except ValueError as exc:
        raise ConfigError(f"{paths['json']}: the result holds a number JSON cannot hold ({exc}); nothing was "
                          "written: rerun the entries whose figures are not finite") from None
    buffer = io.BytesIO()
    accuracy_vs_time_figure(result).savefig(buffer, format="png")
    check_folder_path("--output-dir", output_dir)
    for path in paths.values():
        if path.is_dir():
            raise ConfigError(f"{path}: is a folder, so the report cannot be written there; nothing was written: "
                              "move the folder away or pass another --output-dir")
    atomic_write_bytes(paths["json"], data)
    atomic_write_bytes(paths["markdown"], markdown)
    atomic_write_bytes(paths["plot"], buffer.getvalue())
    return files


# --------------------------------------------------------------------------- formatting


def _pct(summary: dict, key: str) -> str:
    stat = summary.get(key)
    if stat is None:
        return DASH
    if stat["n"] > 1:
        return f"{100 * stat['mean']:.2f} ± {100 * stat['std']:.2f}"
    return f"{100 * stat['mean']:.2f}"


def _number(summary: dict, key: str, digits: int = 1) -> str:
    stat = summary.get(key)
    if stat is None:
        return DASH
    value = stat["mean"]
    if digits == 0:
        return f"{value:,.0f}"
    return f"{value:,.{digits}f}"


def _auc(summary: dict) -> str:
    macro, micro = summary.get("roc_auc_macro"), summary.get("roc_auc_micro")
    if macro is None and micro is None:
        return DASH
    shown = [f"{stat['mean']:.4f}" if stat is not None else DASH for stat in (macro, micro)]
    return " / ".join(shown)


def _epoch(summary: dict) -> str:
    stat = summary.get("best_epoch")
    if stat is None:
        return DASH
    if stat["n"] > 1 and stat["min"] != stat["max"]:
        return f"{stat['mean']:.1f} ({stat['min']:.0f}–{stat['max']:.0f})"
    return f"{stat['mean']:.0f}"


def human_count(n: int | float | None) -> str:
    if n is None:
        return DASH
    n = float(n)
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "K")):
        if abs(n) >= limit:
            return f"{n / limit:.3g}{suffix}"
    return f"{n:.0f}"


def _params(params: dict | None) -> str:
    if not params:
        return DASH
    text = f"{human_count(params['trainable'])} / {human_count(params['total'])}"
    if params.get("embedding"):
        text += f" ({human_count(params['embedding'])} emb)"
    return text


# What the vectors column says for the kinds that read no pretrained vectors themselves.
VECTORS_OF_KIND = {"classic": "none (TF-IDF)", "ensemble": "its members'"}


def vectors_without_info(entry: dict) -> str | None:
    """What the vectors column says for an entry whose runs report no pretrained vectors: the
    static vectors of a classic preset (static-lr: frozen; static-finetune: fine-tuned), its
    kind's label, else None (random init)."""
    settings = next((run.get("settings") for run in entry.get("runs") or [] if run.get("settings")), None) or {}
    arch = (settings.get("arch") or {}) if settings.get("kind") == "classic" else {}
    if arch.get("vectors"):
        return f"{arch['vectors']} ({'fine-tuned' if arch.get('tune_vectors') else 'frozen'} sentence vectors)"
    return VECTORS_OF_KIND.get(entry.get("kind"))


def _embeddings(entry: dict) -> str:
    info = entry.get("embeddings")
    if not info:
        label = vectors_without_info(entry)
        if label:
            return label
        return "random init" if entry.get("status") != "failed" else DASH
    text = str(info.get("source"))
    if info.get("dim"):
        text += f" {info['dim']}-d"
    parts = []
    if info.get("coverage") is not None:
        parts.append(f"vocab {100 * info['coverage']:.1f}%")
    if info.get("token_coverage") is not None:
        parts.append(f"tokens {100 * info['token_coverage']:.1f}%")
    return f"{text} ({', '.join(parts)})" if parts else text


def _shown_name(entry: dict) -> str:
    """The entry's name: its model, or the ``name`` the suite gave it."""
    return entry.get("name") or entry["model"]


def _model_cell(entry: dict) -> str:
    text = entry["model"]
    name = _shown_name(entry)
    if name != entry["model"]:
        text = f"{name} [{entry['model']}]"
    if entry.get("overrides"):
        text += " (" + ", ".join(f"{k}={v}" for k, v in entry["overrides"].items()) + ")"
    if entry.get("kind") == "peer":
        text += " †"
    return text


FEATURES_CACHED = "features cached"
SHARED_CORES = "shared cores"


def timed_on_cpu(run: dict) -> bool:
    """Whether a run's seconds are CPU seconds of its own work: it trained on the CPU (a record
    without ``device`` predates the field and ran there) and did not read its features from a
    cache. Only such runs are compared on time."""
    return str(run.get("device", "cpu")).split(":")[0] == "cpu" and not run.get("features_cached")


# The share of its cores a CPU run must have had to be compared on time. A run whose process got
# less shared them with more jobs than the machine has cores, and its wall seconds measure that
# load as much as the model: in fcsr_fdu_full, runs of one thread beside one other worker got
# 0.92-1.00 of a core, while seed 1 of `fcsr-rerun` on 8 domains (stop 40) got 0.38-0.59 and the
# Transformer's toys_games run beside three other jobs (stop 33) 0.19, at 222 s an epoch against
# 20 s for the same preset alone on apparel.
MIN_CPU_SHARE = 0.8


def cpu_share(run: dict) -> float | None:
    """The fit's CPU seconds over its wall seconds x threads: the share of its cores the run
    got. A resumed run counts the seconds of its last process only (its earlier processes'
    CPU seconds are not recorded). None where the record lacks either figure (runs made
    before ``train_cpu_seconds`` was recorded)."""
    cpu, wall = run.get("train_cpu_seconds"), run.get("train_seconds")
    if not isinstance(cpu, (int, float)) or not isinstance(wall, (int, float)):
        return None
    wall -= (run.get("resumed") or {}).get("seconds_before", 0.0)
    return cpu / (wall * max(int(run.get("threads") or 1), 1)) if wall > 0 else None


def timed_alone(run: dict) -> bool:
    """Whether a CPU run had its cores to itself (``cpu_share`` at least ``MIN_CPU_SHARE``), so
    that its seconds compare with other runs'. A record that cannot tell counts as alone: the
    older suites' runs did not record their CPU seconds."""
    share = cpu_share(run)
    return share is None or share >= MIN_CPU_SHARE


def timed_alone_on_cpu(run: dict) -> bool:
    """A run whose seconds compare with other runs': made on the CPU (``timed_on_cpu``) with its
    cores to itself (``timed_alone``)."""
    return timed_on_cpu(run) and timed_alone(run)


def timed_settings(dataset, model, overrides, max_per_split) -> tuple:
    """What benchmarks/time_epochs.py times once, and what a time claim counts as the same preset
    run again: entries that agree on these share one epoch row (rows written before they recorded
    max_per_split were all of full-data entries)."""
    return dataset, model, json.dumps(overrides or {}, sort_keys=True, default=str), max_per_split


def timing_cpu(result: dict, entry: dict, run: dict) -> str | None:
    """The CPU model that timed ``run`` (of ``entry`` in the suite report ``result``), or None
    when the report cannot tell. A report merged from runs made apart (``--merge-from``) holds
    runs of several machines, and seconds compare only on one CPU model.

    Runs record it since stop 49 (``cpu_model``; ``benchmarks/backfill_cpu_model.py`` wrote it into
    older runs from the results' git history where that history tells). Without it, a run of an
    entry that no rerun record names was made by the report's first run, on its ``machine``; any
    other run could have come from either, so it is not known.

    The marketing name is the key, not ``cpu_generation`` (recorded since stop 53): the runs
    before it cannot tell a Zen 3 "AMD EPYC" from a Zen 5 one, and keying on the generation would
    set all of them aside. Where both generations timed one claim, the claim's note says so."""
    if run.get("cpu_model"):
        return run["cpu_model"]
    if any(entry.get("id") in (r.get("entries") or []) for r in result.get("reruns") or []):
        return None
    return (result.get("machine") or {}).get("cpu_model")


def _run_timing(run: dict) -> str:
    """What timed a run: its device (``cpu``, ``cuda``), or why its CPU seconds do not compare."""
    if run.get("features_cached"):
        return FEATURES_CACHED
    device = str(run.get("device", "cpu")).split(":")[0]
    return SHARED_CORES if device == "cpu" and not timed_alone(run) else device


def _timing_mark(entry: dict, cpus: tuple[dict, str] | None = None) -> str:
    """`` (cuda)``, `` (cuda: 3 of 5 seeds)``, `` (features cached)`` or `` (shared cores)``, when
    the entry's runs trained off the CPU, read their features from a cache (MiniLM + LR's
    ``cache_features``) or shared their cores with other jobs (``timed_alone``): their seconds
    sit beside CPU rows in one table and cannot be compared with them. With
    ``cpus`` (``timing_cpus``: a report timed on several CPU models) a CPU other than the one
    that timed most runs follows, as `` (Intel Xeon)`` or `` (cuda: 2 of 5 seeds; Intel Xeon: 3)``."""
    runs = [run for run in entry.get("runs", []) if run.get("status", "ok") == "ok"]
    marked = [m for m in map(_run_timing, runs) if m != "cpu"]
    parts = []
    if marked:
        kinds = ", ".join(sorted(set(marked)))
        parts.append(kinds if len(marked) == len(runs) else f"{kinds}: {len(marked)} of {len(runs)} seeds")
    if cpus is not None:
        names, usual = cpus
        other = Counter(names.get(id(run)) or CPU_UNKNOWN for run in runs if timed_on_cpu(run))
        other.pop(usual, None)
        for name, count in sorted(other.items()):
            parts.append(name if count == len(runs) else f"{name}: {count}" + ("" if parts else f" of {len(runs)} seeds"))
    return f" ({'; '.join(parts)})" if parts else ""


CPU_UNKNOWN = "CPU unknown"


def _short_cpu(model: str) -> str:
    words = [w for w in model.replace("(R)", "").replace("(TM)", "").split() if w not in ("Processor", "CPU")]
    return " ".join(words) or model


def timing_cpus(result: dict) -> tuple[dict, str] | None:
    """For a report whose CPU runs were timed on more than one CPU model: id(run) -> the short
    name of the CPU model that timed it (``timing_cpu``; None where not known), and the name that
    timed most of them (its rows go unmarked). None for one CPU model: the header names it."""
    names = {id(run): _short_cpu(cpu) if (cpu := timing_cpu(result, entry, run)) else None
             for entry in result.get("entries", []) for run in entry.get("runs", []) if timed_on_cpu(run)}
    known = Counter(n for n in names.values() if n)
    if len(known) < 2:
        return None
    return names, min(known, key=lambda n: (-known[n], n))


TIMING_NOTE = ("a mark after the seconds, as in 12.0 (cuda): those runs trained on that device (the header's rerun "
               "lines name it), read their features from a cache (features cached: no throughput is recorded "
               "for them), or shared their cores with other jobs (shared cores: less than "
               f"{MIN_CPU_SHARE:.0%} of a core, their CPU seconds over wall seconds x threads), so the row's "
               "seconds and docs/s are not comparable with the CPU rows beside it.")


def _timing_note(cpus: tuple[dict, str] | None) -> str:
    if cpus is None:
        return TIMING_NOTE
    return (TIMING_NOTE + f" The CPU runs were timed on several CPU models: unmarked ones on {cpus[1]}, the others on "
            f"the CPU their mark names ({CPU_UNKNOWN}: merged before runs recorded it); seconds compare only on one.")


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _datasets(result: dict) -> list[str]:
    order = []
    for entry in result["entries"]:
        if entry["dataset"] not in order:
            order.append(entry["dataset"])
    return order


def _dataset_line(entries: list[dict]) -> str:
    summary = next((e["dataset_summary"] for e in entries if e.get("dataset_summary")), None)
    if not summary:
        return ""
    splits = " / ".join(f"{name} {count:,}" for name, count in summary["splits"].items())
    line = f"{summary['classes']} classes; {splits} documents"
    if summary.get("multi_label"):
        line += "; multi-label (accuracy = subset accuracy)"
    return line


def format_tables(result: dict) -> str:
    """One Markdown table per dataset (what the CLI prints)."""
    blocks = []
    cpus = timing_cpus(result)
    for dataset in _datasets(result):
        entries = [e for e in result["entries"] if e["dataset"] == dataset]
        with_paper = any(e.get("paper") is not None for e in entries)
        header = ["model", "accuracy %"] + (["paper %"] if with_paper else []) + [
            "macro-F1 %", "ROC-AUC macro / micro", "best epoch", "train s", "s / epoch", "train ms / doc",
            "train docs/s", "infer docs/s b1", "infer docs/s b256",
            "params trainable / total", "peak RSS MB", "embeddings", "precision", "seeds"]
        rows = []
        for entry in entries:
            s = entry.get("summary", {})
            # The seeds that have a run: a part cut off after some of its seeds plans more.
            seeds = len({run["seed"] for run in entry.get("runs", [])})
            failed = sum(1 for r in entry.get("runs", []) if r.get("status") != "ok")
            accuracy = "FAILED" if entry["status"] == "failed" else _pct(s, "accuracy")
            seed_cell = f"{seeds}" + (f" ({failed} failed)" if failed else "")
            row = [_model_cell(entry), accuracy]
            if with_paper:
                row.append(f"{entry['paper']:.2f}" if entry.get("paper") is not None else DASH)
            row += [_pct(s, "macro_f1"), _auc(s), _epoch(s), _number(s, "train_seconds") + _timing_mark(entry, cpus),
                    _number(s, "epoch_seconds", 2), _number(s, "train_ms_per_document", 3),
                    _number(s, "train_docs_per_second", 0), _number(s, "infer_docs_per_second_b1", 0),
                    _number(s, "infer_docs_per_second_b256", 0), _params(entry.get("parameters")),
                    _number(s, "peak_rss_mb", 0), _embeddings(entry), entry.get("precision") or DASH, seed_cell]
            rows.append(row)
        per_task = _per_task_table(entries)
        lines = [f"### {dataset}", ""]
        described = _dataset_line(entries)
        note = (result.get("dataset_notes") or {}).get(dataset)
        if note:
            described = f"{described}. {note}" if described else note
        if described:
            lines += [_cell(described), ""]
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "|".join("---" for _ in header) + "|")
        lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
        footnotes = []
        sources = {}
        for entry in entries:
            if entry.get("paper") is not None or entry.get("paper_per_task"):
                sources.setdefault(entry["paper_source"], []).append(entry["model"])
        for source, models in sources.items():
            footnotes.append(f"paper %: {source} ({', '.join(models)}); the paper's number, not ours.")
        placed = {}
        for entry in entries:
            if entry.get("paper") is None and not entry.get("paper_per_task") and entry.get("paper_source"):
                placed.setdefault(entry["paper_source"], []).append(entry.get("name") or entry["model"])
        for source, models in placed.items():
            footnotes.append(f"source: {source} ({', '.join(models)}); no figure of the paper's in this table.")
        views = {}
        for entry in entries:
            if entry.get("label_view"):
                views.setdefault(entry["label_view"], []).append(entry["model"])
        for view, models in views.items():
            footnotes.append(f"labels: {view} ({', '.join(models)})")
        sliced = sorted({e["max_per_split"] for e in entries if e.get("max_per_split")})
        if sliced:
            footnotes.append(f"max_per_split: at most {', '.join(map(str, sliced))} documents per split "
                             "(seeded stratified subsample)")
        for entry in entries:
            for error in entry.get("errors", []):
                footnotes.append(f"FAILED {entry['id']}: {error}")
        if any(e.get("kind") == "peer" for e in entries):
            footnotes.append("† a peer (another tool), not a textcls model.")
        if any(_timing_mark(e, cpus) for e in entries):
            footnotes.append(_timing_note(cpus))
        if footnotes:
            lines.append("")
            lines += [f"- {_cell(f)}" for f in footnotes]
        if per_task:
            lines += ["", per_task]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def _per_task_table(entries: list[dict]) -> str:
    """Multi-task data: test accuracy per task (mean over seeds), one column per entry, and
    the paper's figure per task beside an entry that gives ``paper_per_task``."""
    columns = []
    for entry in entries:
        runs = [r for r in entry.get("runs", []) if r.get("status") == "ok" and r.get("per_task_accuracy")]
        if runs:
            columns.append((entry, runs))
    if not columns:
        return ""
    tasks = list(columns[0][1][0]["per_task_accuracy"])
    header = ["task"]
    for entry, runs in columns:
        header.append(_shown_name(entry) + (" (per-task heads)" if runs[0].get("per_task_heads") else " (pooled)"))
        if entry.get("paper_per_task"):
            header.append(f"{_shown_name(entry)}: paper %")
    lines = ["Test accuracy % per task (mean over seeds):", "",
             "| " + " | ".join(_cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    for task in tasks:
        row = [task]
        for entry, runs in columns:
            values = [r["per_task_accuracy"].get(task) for r in runs if r["per_task_accuracy"].get(task) is not None]
            row.append(f"{100 * sum(values) / len(values):.2f}" if values else DASH)
            if entry.get("paper_per_task"):
                paper = entry["paper_per_task"].get(task)
                row.append(f"{paper:.2f}" if paper is not None else DASH)
        lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
    means = []
    for entry, runs in columns:
        per_run = [sum(r["per_task_accuracy"].values()) / len(r["per_task_accuracy"]) for r in runs]
        means.append(f"{100 * sum(per_run) / len(per_run):.2f}")
        if entry.get("paper_per_task"):
            papers = list(entry["paper_per_task"].values())
            means.append(f"{sum(papers) / len(papers):.2f}")
    lines.append("| **average over tasks** | " + " | ".join(means) + " |")
    return "\n".join(lines)


AVERAGE_COLUMN = "average (datasets)"
MIN_DATASETS_FOR_AVERAGE = 3


def format_summary(result: dict) -> str:
    """Two compact pivots (model x dataset): test accuracy, and training seconds.

    Each cell is the mean over seeds (± std when there are several); a paper's figure follows
    in brackets where the suite gives one. With three datasets or more, the accuracy pivot ends
    in each model's average over the datasets it ran on (two at least), with their count and the
    paper's average where the suite gives the paper's figure for every one of them. This is what
    the README shows."""
    datasets = _datasets(result)
    models = []
    for entry in result["entries"]:
        if _shown_name(entry) not in models:
            models.append(_shown_name(entry))
    cells = {(_shown_name(e), e["dataset"]): e for e in result["entries"]}
    peer_rows = any(e.get("kind") == "peer" for e in result["entries"])
    cpus = timing_cpus(result)

    def table(title: str, render, average=None) -> list[str]:
        extra = [AVERAGE_COLUMN] if average else []
        out = [f"**{title}**", "", "| model | " + " | ".join(datasets + extra) + " |",
               "|---|" + "---|" * (len(datasets) + len(extra))]
        for model in models:
            row = [render(cells.get((model, d))) for d in datasets]
            if average:
                row.append(average([cells.get((model, d)) for d in datasets]))
            peer = any(e.get("kind") == "peer" for (m, _), e in cells.items() if m == model)
            out.append(f"| {model}{' †' if peer else ''} | " + " | ".join(row) + " |")
        return out + ["", "† a peer (another tool), not a textcls model.", ""] if peer_rows else out + [""]

    def accuracy(entry):
        if entry is None or not entry.get("summary"):
            return DASH if entry is None else "failed"
        text = _pct(entry["summary"], "accuracy")
        if entry.get("paper") is not None:
            text += f" [{entry['paper']:.2f}]"
        return text

    def seconds(entry):
        if entry is None or not entry.get("summary"):
            return DASH
        return _number(entry["summary"], "train_seconds") + _timing_mark(entry, cpus)

    def mean_accuracy(entries):
        # Like the papers' "Average" rows (FCSR Table 4), over the datasets the model ran on,
        # with their count, since a partial row's average is not comparable to a full one.
        ran = [e for e in entries if e is not None and e.get("summary")]
        if len(ran) < 2:
            return DASH
        text = f"{100 * sum(e['summary']['accuracy']['mean'] for e in ran) / len(ran):.2f}"
        if all(e.get("paper") is not None for e in ran):
            text += f" [{sum(e['paper'] for e in ran) / len(ran):.2f}]"
        return f"{text} ({len(ran)})"

    lines = table("Test accuracy, % (mean ± std over seeds) [paper's figure]", accuracy,
                  mean_accuracy if len(datasets) >= MIN_DATASETS_FOR_AVERAGE else None)
    lines += table("Training seconds (mean over seeds; whole fit, including vocabulary and vectors)", seconds)
    if any(_timing_mark(e, cpus) for e in result["entries"]):
        lines += [f"- {_timing_note(cpus)}", ""]
    return "\n".join(lines)


def format_markdown(result: dict) -> str:
    git = result.get("git") or {}
    commit = git.get("commit") or "unknown (not a git checkout)"
    if git.get("dirty"):
        commit += f" + uncommitted changes to {git.get('changed_files')} tracked file(s)"
    machine = result.get("machine") or {}
    versions = result.get("versions") or {}
    shown_versions = ", ".join(f"{k} {v}" for k, v in versions.items() if v)
    lines = [
        f"# Benchmark suite `{result['suite']}`",
        "",
        result.get("description") or "",
        "",
        f"- commit: `{commit}`",
        f"- command: `{result.get('command')}`",
        f"- machine: {machine.get('cpu_model') or 'unknown CPU'} ({_simd(machine)}), {machine.get('cpus_available')} CPUs available "
        f"({machine.get('cpu_count')} in the machine), {machine.get('memory_gb')} GB RAM; "
        f"{result.get('threads')} threads per run",
        f"- date: {result.get('date')} (suite wall time {result.get('wall_seconds', 0) / 60:.1f} min)",
        f"- versions: {shown_versions}",
    ]
    if result.get("only"):
        lines.append(f"- only: {', '.join(result['only'])}")
    for rerun in result.get("reruns", []):
        rerun_commit = (rerun.get("git") or {}).get("commit") or "unknown"
        devices = [d for d in rerun.get("devices", []) if d != "cpu"]
        # Speed figures of runs on an accelerator are not comparable with the CPU runs beside them,
        # nor those of another CPU model.
        cpu = (rerun.get("machine") or {}).get("cpu_model")
        where = (f" on {', '.join(devices)} (its speed figures are not CPU figures)" if devices
                 else f" on {cpu}" if cpu else "")
        lines.append(f"- rerun on {rerun.get('date')} at commit `{rerun_commit}`{where} with `{rerun.get('command')}`: "
                     f"{', '.join(rerun['entries'])}")
    if not result.get("complete", True):
        lines.append("- **incomplete**: runs the suite file plans have no OK run here (the suite was interrupted, "
                     "a run failed, or runs made apart are not all merged yet); the tables hold the runs made")
    failed = result.get("failed_entries") or []
    if failed:
        lines.append(f"- **failed entries**: {', '.join(failed)}")
    lines += ["", "## Summary", "", format_summary(result).rstrip(), "", "## Per dataset", "",
              format_tables(result).rstrip(), "", "## How to read the tables", ""]
    lines += [f"- {note}" for note in result.get("notes", [])]
    lines += ["", f"![accuracy against training time]({_stem(result)}.png)", ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------- plot


def plot_accuracy_vs_time(result: dict, path: str | Path) -> Path:
    """Test accuracy against training seconds (log x), one panel per dataset, one marker per model."""
    return write_figure(Path(path), accuracy_vs_time_figure(result))


def accuracy_vs_time_figure(result: dict):
    """The figure of ``plot_accuracy_vs_time``, not yet written."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import NullFormatter

    datasets = _datasets(result) or ["(no entries)"]
    models = []
    for entry in result["entries"]:
        if _shown_name(entry) not in models:
            models.append(_shown_name(entry))
    colors = [f"C{i % 10}" for i in range(len(models))]
    style = {m: (colors[i], MARKERS[i % len(MARKERS)]) for i, m in enumerate(models)}

    cols = min(3, len(datasets))
    rows = math.ceil(len(datasets) / cols)
    fig = Figure(figsize=(5.2 * cols, 4.0 * rows + 0.8), dpi=110)
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=False)
    drawn = set()
    for index, dataset in enumerate(datasets):
        ax = axes[index // cols][index % cols]
        plotted = 0
        for entry in result["entries"]:
            s = entry.get("summary", {})
            if entry["dataset"] != dataset or "accuracy" not in s or "train_seconds" not in s:
                continue
            shown = _shown_name(entry)
            color, marker = style[shown]
            x = max(s["train_seconds"]["mean"], 1e-3)
            y = 100 * s["accuracy"]["mean"]
            yerr = 100 * s["accuracy"]["std"] if s["accuracy"]["n"] > 1 else None
            label = shown if shown not in drawn else None
            # Hollow: its seconds are a GPU's or a cache's, so its x is not on the CPU rows' scale.
            face = "none" if _timing_mark(entry) else color
            ax.errorbar([x], [y], yerr=None if yerr is None else [yerr], fmt=marker, color=color,
                        markerfacecolor=face, markersize=7, capsize=3, label=label)
            drawn.add(shown)
            plotted += 1
        ax.set_xscale("log")
        # Within one decade matplotlib labels the minor ticks too, and they collide; the grid keeps them.
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_title(dataset)
        ax.set_xlabel("training seconds (log scale)")
        ax.set_ylabel("test accuracy %")
        ax.grid(True, which="both", alpha=0.3)
        if not plotted:
            ax.text(0.5, 0.5, "no successful run", ha="center", va="center", transform=ax.transAxes)
    for index in range(len(datasets), rows * cols):
        axes[index // cols][index % cols].set_visible(False)
    handles, labels = [], []
    for ax in axes.flat:
        h, l = ax.get_legend_handles_labels()
        handles += h
        labels += l
    legend_inches = 0.0
    if handles:
        fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), LEGEND_COLUMNS), frameon=False)
        # Its rows (about a quarter inch each) are kept clear of the lowest panels' axis labels.
        legend_inches = 0.3 + 0.25 * math.ceil(len(labels) / LEGEND_COLUMNS)
    title = f"suite {result['suite']}: accuracy against training time"
    if any(_timing_mark(e) for e in result["entries"]):
        title += ("\n(hollow markers trained on a GPU, read cached features or shared their cores: "
                  "their seconds are not comparable)")
    fig.suptitle(title)
    fig.tight_layout(rect=(0, legend_inches / fig.get_figheight(), 1, 0.95))
    return fig


def _simd(machine: dict) -> str:
    """The machine's vector extensions as recorded, or why they are not known (older JSON)."""
    simd = machine.get("cpu_simd")
    text = ", ".join(simd) if simd else "SIMD flags not recorded"
    return f"{machine['cpu_generation']}; {text}" if machine.get("cpu_generation") else text
