"""Seconds of one training epoch (and one dev pass) of each neural entry of a benchmark suite.

    OMP_NUM_THREADS=1 python benchmarks/time_epochs.py --suite benchmarks/suites/cspan_full.toml
        [--batches 30] [--only <entry id substring> ...] [--exact] [--merge]
        [--output benchmarks/results/epoch_times/<suite>.json]

Sizes a full-tier suite before it runs. For each distinct (dataset, model, overrides) of the
suite's neural entries:
- the data are loaded and split as `textcls benchmark` does for seed 0 (load_dataset with the
  entry's max_per_split, then ensure_dev), and the text pipeline, vectors and model are built as
  `NeuralEstimator.fit` builds them (entries on the same data share its encoding);
- ``--batches`` optimiser steps of the recipe (its optimiser, lr, batch size, shuffled,
  length-bucketed loader) are timed after one untimed warm-up step, and the epoch is that time
  times (batches in the epoch / batches timed); the dev pass is timed whole, after an untimed
  one: its batches are sorted by length and bounded in padded tokens (``EVAL_MAX_PIECES``), so
  its first batches are its cheapest and would not extrapolate;
- times are CPU seconds of the process, the figure the suites' tables use: on a shared machine
  the wall clock (also recorded) counts the time other jobs hold the core as well.
One thread (set OMP_NUM_THREADS=1). Peers and TF-IDF are not timed: they do not train by epochs.
The JSON is rewritten after every entry. Each row carries the command, the machine (CPU and its
features) and the load average it was timed under, so that ``--merge``, which keeps an earlier
run's rows for the entries this one does not time, never credits an earlier machine's rows to
this one (the session machines are AMD EPYC or Intel Xeon with AVX-512).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from pathlib import Path

import torch

from textcls.benchmark.report import read_committed
from textcls.errors import TextclsError

# The key under which a row timed before rows carried their machine keeps its file's old header.
LEGACY_HEADER = "file_header_before_rows_had_machines"


def _entry_rows(suite, only: list[str], exact: bool = False) -> list:
    """One entry per distinct (dataset, model, overrides, max_per_split) among the neural ones;
    with ``only``, those whose id contains one of its strings (``exact``: equals one)."""
    from textcls.benchmark.peers import PEERS
    from textcls.benchmark.progress import entry_settings
    from textcls.models.registry import get_preset

    seen, rows = set(), []
    for entry in suite.entries:
        if only and not any(o == entry.id if exact else o in entry.id for o in only):
            continue
        if entry.model in PEERS or get_preset(entry.model).kind != "neural":  # TF-IDF fits once, no epochs
            continue
        key = entry_settings(entry)
        if key not in seen:
            seen.add(key)
            rows.append(entry)
    return rows


# (dataset, max_per_split) -> records and (dataset, max_per_split, inputs) -> prepared data, shared
# by the entries that match
_PREPARED: dict = {}


def _prepared_model(entry, data_dir):
    """(model, prepared data, recipe, documents) as `textcls benchmark` builds them for seed 0."""
    from textcls.benchmark.runner import create_estimator
    from textcls.data import load_dataset
    from textcls.data.prepare import prepare, resolve_recipe
    from textcls.data.splits import ensure_dev
    from textcls.models.registry import create_model

    source = (entry.dataset, entry.max_per_split)
    if any(key[:2] != source for key in _PREPARED):
        _PREPARED.clear()  # one dataset's encodings at a time: the entries come grouped by dataset
    if source not in _PREPARED:
        _PREPARED[source] = load_dataset(entry.dataset, data_dir=data_dir, max_per_split=entry.max_per_split)
    estimator = create_estimator(entry.model, seed=0, overrides=entry.overrides)
    dataset = ensure_dev(_PREPARED[source], fraction=estimator.dev_fraction, seed=0)
    preset = estimator._preset_for(dataset)
    key = (*source, repr(sorted(preset.inputs.items())))
    if key not in _PREPARED:
        _PREPARED[key] = prepare(dataset, preset.inputs, seed=0)
    prepared = _PREPARED[key]
    recipe = resolve_recipe(preset.recipe, prepared)
    matrix = prepared.embeddings.matrix if prepared.embeddings is not None else None
    torch.manual_seed(0)
    model = create_model(preset, num_classes=prepared.num_classes, vocab_size=prepared.pipeline.vocab_size,
                         embeddings=matrix)
    sizes = {name: len(dataset[name]) for name in dataset.splits}
    return model, prepared, recipe, sizes, bool(dataset.multi_label)


def _time_batches(loader, batches: int, step) -> tuple[float, float, int, int]:
    """CPU and wall seconds of ``batches`` calls of ``step`` after one untimed warm-up call (of the
    one call when the loader holds a single batch), and
    how many batches were timed out of how many the loader holds. CPU time (one thread) is what
    the tables use: on a shared machine the wall clock also counts the time other jobs hold the
    core, which varied 3x between two entries here."""
    total = len(loader)
    iterator = iter(loader)
    cpu, wall = time.process_time(), time.perf_counter()
    step(next(iterator))
    if total == 1:  # a one-batch loader (a small dev set): its only call is the figure
        return time.process_time() - cpu, time.perf_counter() - wall, 1, total
    timed, cpu, wall = 0, time.process_time(), time.perf_counter()
    for batch in iterator:
        if timed >= batches:
            break
        step(batch)
        timed += 1
    return time.process_time() - cpu, time.perf_counter() - wall, timed, total


def time_ways(entry, data_dir, batches: int, ways: dict) -> dict:
    """Training seconds of an epoch of ``entry``'s model (seed 0) done several ways on the same
    batches: ``ways`` maps a name to a factory of the context manager its steps run in (a patch of
    the code path being compared).

    Each way trains its own copy of the one model (the same weights) with the recipe's optimiser
    through ``training_step``. Before any step, each way's logits on the first batch are taken
    (eval mode, inside its context). Then every batch of the shuffled, length-bucketed loader is one
    step of each copy, taking turns which goes first, after one untimed warm-up step each, with
    torch's generator seeded from the step number before every step, so the copies draw the same
    dropout masks: what differs between their weights at the end is the ways' arithmetic alone.
    CPU seconds of the process (one thread), extrapolated to the epoch. Returns the entry's sizes,
    ``epoch_seconds`` by way, and the largest absolute differences from the first way in logits
    (before training) and in weights (after the timed steps)."""
    import copy

    from textcls.train import build_optimizer, training_step

    model, prepared, recipe, sizes, multi_label = _prepared_model(entry, data_dir)
    names = list(ways)
    copies = {name: model if i == 0 else copy.deepcopy(model) for i, name in enumerate(names)}
    steps = {name: training_step(net, build_optimizer(net, recipe), recipe, multi_label=multi_label)
             for name, net in copies.items()}

    def step(name: str, batch, number: int) -> None:
        torch.manual_seed(number)
        with ways[name]():
            steps[name](batch)

    loader = prepared.loader("train", recipe.batch_size, shuffle=True, seed=0)
    iterator = iter(loader)
    first = next(iterator)
    logits = {}
    for name, net in copies.items():
        net.eval()
        with torch.no_grad(), ways[name]():
            logits[name] = net(first).logits
        net.train()
    for name in names:
        step(name, first, 0)  # warm-up, untimed
    seconds, timed = dict.fromkeys(names, 0.0), 0
    for batch in iterator:
        if timed >= batches:
            break
        for name in names if timed % 2 == 0 else names[::-1]:
            start = time.process_time()
            step(name, batch, timed + 1)
            seconds[name] += time.process_time() - start
        timed += 1
    scale = len(loader) / max(timed, 1)
    base = names[0]

    def largest_weight_difference(net) -> float:
        pairs = zip(copies[base].state_dict().values(), net.state_dict().values())
        return max((float((a.float() - b.float()).abs().max()) for a, b in pairs if a.numel()), default=0.0)

    return {"entry": entry.id, "model": entry.model, "documents": sizes, "batch_size": recipe.batch_size,
            "train_batches": len(loader), "train_batches_timed": timed,
            "epoch_seconds": {name: value * scale for name, value in seconds.items()},
            "largest_logit_difference": {name: float((logits[name] - logits[base]).abs().max()) for name in names[1:]},
            "largest_weight_difference": {name: largest_weight_difference(copies[name]) for name in names[1:]}}


def ways_report(title: str, slow: str, fast: str, difference: str, difference_note: str):
    """(markdown, summary) for a script that times two ways with ``time_ways``: its rows hold
    ``<way>_epoch_seconds``, ``<slow>_over_<fast>`` and ``largest_<difference>_difference``."""
    ratio, largest = f"{slow}_over_{fast}", f"largest_{difference}_difference"

    def markdown(result: dict) -> str:
        from textcls.benchmark.report import script_header

        lines = script_header(title, result)
        lines += [f"CPU seconds of one training epoch (extrapolated from the timed batches), the same model and "
                  f"batches both ways; the last column is the largest difference between the two ways' "
                  f"{difference_note}.", "",
                  f"| entry | batches timed | {slow} s | {fast} s | {slow} / {fast} | largest {difference} difference |",
                  "|---|---:|---:|---:|---:|---:|"]
        for row in result["runs"].values():
            lines.append(f"| `{row['entry']}` | {row['train_batches_timed']} / {row['train_batches']} | "
                         f"{row[f'{slow}_epoch_seconds']:.1f} | {row[f'{fast}_epoch_seconds']:.1f} | "
                         f"{row[ratio]:.2f}x | {row[largest]:.1e} |")
        return "\n".join(lines) + "\n"

    def summary(row: dict) -> str:
        return (f"{row['entry']:<40} {slow} {row[f'{slow}_epoch_seconds']:8.1f} s  {fast} "
                f"{row[f'{fast}_epoch_seconds']:8.1f} s  ({row[ratio]:.2f}x; {difference}s differ by {row[largest]:.1e})")

    return markdown, summary


def ways_row(timed: dict, slow: str, fast: str) -> dict:
    """``time_ways``' result for two ways, flattened into one report row."""
    epoch = timed["epoch_seconds"]
    row = {k: v for k, v in timed.items() if k != "epoch_seconds" and not k.startswith("largest")}
    row.update({f"{slow}_epoch_seconds": epoch[slow], f"{fast}_epoch_seconds": epoch[fast],
                f"{slow}_over_{fast}": epoch[slow] / epoch[fast] if epoch[fast] > 0 else None})
    # Two ways: one difference each, the second way's from the first.
    row.update({key: next(iter(value.values())) for key, value in timed.items() if key.startswith("largest")})
    return row


def compare_ways_main(argv, script: str, doc: str, default_output: str, time_entry, markdown, summary) -> int:
    """The command line of a script that times an epoch several ways (``time_ways``):
    ``--suite``, whole ``--entries`` ids, ``--batches`` and ``--output``; one row per entry from
    ``time_entry(entry, data_dir, batches)``, the JSON and Markdown (``markdown(result)``)
    rewritten after each, and ``summary(row)`` printed. A misspelt id: one line, exit 2."""
    from textcls.benchmark.report import start_script_result, write_script_result
    from textcls.benchmark.runner import load_suite
    from textcls.data.loaders import data_dir

    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--suite", required=True)
    parser.add_argument("--entries", nargs="+", required=True, help="whole entry ids of the suite")
    parser.add_argument("--batches", type=int, default=30, help="training batches timed per way")
    parser.add_argument("--output", default=default_output)
    args = parser.parse_args(argv)
    suite = load_suite(args.suite)
    by_id = {entry.id: entry for entry in suite.entries}
    unknown = [e for e in args.entries if e not in by_id]
    if unknown:
        print(f"error: {args.suite} has no entry {unknown[0]!r}; give whole ids such as {suite.entries[0].id!r}",
              file=sys.stderr)
        return 2
    result = start_script_result(script, sys.argv[1:] if argv is None else argv, suite=suite.name,
                                 batches=args.batches)
    for entry_id in args.entries:
        row = time_entry(by_id[entry_id], data_dir(), args.batches)
        result["runs"][entry_id] = row
        write_script_result(args.output, result, markdown)
        print(summary(row), flush=True)
    return 0


def time_entry(entry, data_dir, batches: int) -> dict:
    """Extrapolated seconds of one training epoch and one dev pass of ``entry`` (seed 0)."""
    from textcls.data.padding import EVAL_MAX_PIECES
    from textcls.estimators import eval_batch
    from textcls.train import build_optimizer, training_step

    model, prepared, recipe, sizes, multi_label = _prepared_model(entry, data_dir)
    train_step = training_step(model, build_optimizer(model, recipe), recipe, multi_label=multi_label)

    def dev_step(batch):
        with torch.inference_mode():
            model(batch)

    model.train()
    train = _time_batches(prepared.loader("train", recipe.batch_size, shuffle=True, seed=0), batches, train_step)
    model.eval()
    dev_loader = prepared.loader("dev", eval_batch(recipe.batch_size), max_pieces=EVAL_MAX_PIECES)
    for batch in dev_loader:  # an untimed pass warms up every batch shape
        dev_step(batch)
    cpu, wall = time.process_time(), time.perf_counter()
    for batch in dev_loader:
        dev_step(batch)
    dev = (time.process_time() - cpu, time.perf_counter() - wall, len(dev_loader), len(dev_loader))
    scale_train, scale_dev = train[3] / max(train[2], 1), dev[3] / max(dev[2], 1)
    return {"entry": entry.id, "dataset": entry.dataset, "model": entry.model, "overrides": entry.overrides,
            "max_per_split": entry.max_per_split, "documents": sizes, "batch_size": recipe.batch_size,
            "epochs_cap": recipe.epochs,
            "patience": recipe.patience, "train_batches": train[3], "train_batches_timed": train[2],
            "train_epoch_seconds": train[0] * scale_train, "train_epoch_wall_seconds": train[1] * scale_train,
            "dev_batches": dev[3], "dev_batches_timed": dev[2], "dev_seconds": dev[0] * scale_dev,
            "dev_wall_seconds": dev[1] * scale_dev}


def main(argv: list[str] | None = None) -> int:
    from textcls.benchmark.runner import load_suite
    from textcls.benchmark.system import git_info, machine_info
    from textcls.data.loaders import data_dir as default_data_dir

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", required=True)
    parser.add_argument("--batches", type=int, default=30, help="training batches timed per entry (after one warm-up)")
    parser.add_argument("--only", nargs="*", default=[], help="substrings of the entry ids to time")
    parser.add_argument("--exact", action="store_true",
                        help="--only names whole entry ids (fdu_mtl/dvd:fcsr, not fdu_mtl/dvd:fcsr-rerun too)")
    parser.add_argument("--output", help="JSON to write (default benchmarks/results/epoch_times/<suite>.json)")
    parser.add_argument("--merge", action="store_true",
                        help="keep the rows of an existing --output for the entries this run does not time")
    args = parser.parse_args(argv)
    if args.batches < 1:
        parser.error(f"--batches {args.batches}: time at least 1 batch")
    try:
        suite = load_suite(args.suite)
        output = Path(args.output or f"benchmarks/results/epoch_times/{suite.name}.json")
        rows = _kept_rows(output, suite, args.only, args.exact) if args.merge else []
    except TextclsError as exc:  # one line and exit status 2, as the textcls commands
        print(f"error: {exc}", file=sys.stderr)
        return 2
    command = ["python", "benchmarks/time_epochs.py"] + (sys.argv[1:] if argv is None else argv)
    timed_on = {"command": shlex.join(command), "machine": machine_info(), "git": git_info(),
                "threads": torch.get_num_threads()}
    entries = sorted(_entry_rows(suite, args.only, args.exact), key=lambda e: (e.dataset, e.max_per_split or 0))
    if not entries and not args.merge:  # with --merge, timing nothing still rewrites the kept rows
        print(f"error: no neural entry of {args.suite} matches --only {' '.join(args.only) or '(none given)'}; "
              "nothing to time", file=sys.stderr)
        return 2
    for entry in entries:
        load_before = os.getloadavg()
        row = time_entry(entry, default_data_dir(), args.batches)
        # The machine is shared: its load says how busy it was (CPU seconds are the figure).
        rows.append({**row, **timed_on, "load_average_1_5_15": {"before": list(load_before),
                                                                 "after": list(os.getloadavg())}})
        _write(output, suite.name, rows)  # after every entry: a stopped run keeps its rows
        print(f"{row['dataset']:<16} {row['entry'].split(':', 1)[1]:<34} train {row['train_epoch_seconds']:8.1f} s cpu "
              f"{row['train_epoch_wall_seconds']:8.1f} s wall ({row['train_batches_timed']}/{row['train_batches']} "
              f"batches)  dev {row['dev_seconds']:6.1f} s cpu", flush=True)
    return 0


def _kept_rows(output: Path, suite, only: list[str], exact: bool) -> list[dict]:
    """The rows of an earlier run's JSON whose entries this run does not time again, each with
    the command, machine and load it was timed under."""
    if not output.is_file():
        return []
    earlier = read_committed(output)
    retimed = {entry.id for entry in _entry_rows(suite, only, exact)}
    # Files written before rows carried their machine had one header for all rows: the machine
    # and load of their last command only, so a row keeps that header whole rather than claim it.
    # (A row merged before keeps the header it was given then.)
    header = {key: earlier[key] for key in ("command", "commands", "machine", "load_average_1_5_15", "threads")
              if key in earlier}
    return [row if "machine" in row or LEGACY_HEADER in row else {**row, LEGACY_HEADER: header}
            for row in earlier["rows"] if row["entry"] not in retimed]


def _write(output: Path, suite: str, rows: list[dict]) -> None:
    from textcls.artifacts import write_json

    write_json(output, {"suite": suite, "rows": rows})


if __name__ == "__main__":
    raise SystemExit(main())
