"""The ``textcls`` command line.

Every user error (``TextclsError``, a bad option) is printed as ONE line on stderr and
the process exits with status 2, without a traceback.
"""

from __future__ import annotations

import json
import os
import shutil
import shlex
import sys
import time
from pathlib import Path
from typing import List, Optional

import typer

try:  # typer >= 0.25 vendors its own copy of click; its exceptions are the ones raised
    from typer._click import exceptions as click_exceptions
except ImportError:  # pragma: no cover - older typer uses the click package
    from click import exceptions as click_exceptions

from .errors import ConfigError, DataError, TextclsError

app = typer.Typer(add_completion=False, no_args_is_help=False, pretty_exceptions_enable=False,
                  help="Compact neural text classifiers, reproduced from their papers.")

DEFAULT_DATA = "fine-food"


def _parse_sets(pairs: List[str]) -> dict:
    """``--set key=value`` pairs; values are JSON when they parse as JSON, else strings."""
    out = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise ConfigError(f"--set '{pair}' is not key=value; write for example --set num_filters=50")
        key, value = pair.split("=", 1)
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out


def _echo_metrics(title: str, metrics: dict) -> None:
    from .eval.metrics import format_report

    typer.echo(f"== {title}")
    typer.echo(format_report(metrics))


@app.command()
def train(
    model: str = typer.Option(None, "--model", "-m", help="Preset name (textcls list-models). Default: the default preset."),
    data: str = typer.Option(DEFAULT_DATA, "--data", "-d", help="Dataset name (textcls list-datasets), a local file or folder, or hf:<hub id>."),
    run_dir: Optional[Path] = typer.Option(None, "--run-dir", help="Where to save the run. Default: runs/<model>_<data>_<time>."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Folder of the named datasets (default: $TEXTCLS_DATA_DIR)."),
    epochs: Optional[int] = typer.Option(None, help="Override the preset's number of epochs."),
    lr: Optional[float] = typer.Option(None, help="Override the preset's learning rate."),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", help="Override the preset's (global) batch size."),
    embeddings: Optional[str] = typer.Option(None, help="glove-6b-50d, word2vec, or a vectors file."),
    precision: Optional[str] = typer.Option(None, help="fp32 or bf16 (autocast)."),
    seed: int = typer.Option(0, help="Seed of initialisation, dev split and batch order."),
    sets: List[str] = typer.Option([], "--set", help="Any other preset override, key=value (repeatable)."),
    max_per_split: Optional[int] = typer.Option(None, "--max-per-split", help="Use a seeded stratified sample of at most N records per split."),
    encoding: Optional[str] = typer.Option(None, help="Text encoding of a local file (e.g. latin-1)."),
    text_column: List[str] = typer.Option([], "--text-column", help="Text column(s) of a CSV/JSONL file (repeatable; joined)."),
    label_column: Optional[str] = typer.Option(None, "--label-column", help="Label column of a CSV/JSONL file."),
    file_format: Optional[str] = typer.Option(None, "--format", help="Format of a local file when its extension does not say (csv, tsv, jsonl, parquet, fasttext, ...)."),
    header: Optional[bool] = typer.Option(None, "--header/--no-header", help="Whether a CSV/TSV file has a header row."),
    delimiter: Optional[str] = typer.Option(None, help="Field delimiter of a CSV-like file."),
    test_fraction: Optional[float] = typer.Option(None, "--test-fraction", help="Held-out test share when the data has no test split."),
    split_seed: int = typer.Option(0, "--split-seed", help="Seed of the test split drawn when the data has none."),
    on_bad_record: str = typer.Option("error", "--on-bad-record", help="error (stop) or skip (skip and count)."),
    device: str = typer.Option("cpu", help="cpu, cuda or auto."),
    resume: bool = typer.Option(False, help="Resume the interrupted run in --run-dir."),
    confusion_png: bool = typer.Option(False, "--confusion-png", help="Also write confusion_matrix.png."),
    progress: bool = typer.Option(True, help="Show progress bars."),
):
    """Train a model, evaluate it on the test split and save the run. With no options: the quick start."""
    from . import artifacts
    from .api import DEFAULT_MODEL, Classifier
    from .data import load_dataset
    from .train import distributed

    model = model or DEFAULT_MODEL
    if on_bad_record not in ("error", "skip"):
        raise ConfigError(f"--on-bad-record '{on_bad_record}' is not one of error, skip")
    reader_options = {"encoding": encoding, "label_column": label_column,
                      "text_columns": list(text_column) or None, "format": file_format,
                      "header": header, "delimiter": delimiter, "test_fraction": test_fraction}
    dataset = load_dataset(data, data_dir=data_dir, on_bad_record=on_bad_record,
                           max_per_split=max_per_split, split_seed=split_seed,
                           **{k: v for k, v in reader_options.items() if v is not None})
    if dataset.skipped:
        typer.echo(f"skipped {len(dataset.skipped)} bad records (first: {dataset.skipped[0]})", err=True)
    if "test" not in dataset.splits:
        raise DataError(f"dataset '{dataset.name}' has no test split; give a file with a test split")
    clf = Classifier(model, epochs=epochs, lr=lr, batch_size=batch_size, embeddings=embeddings,
                     precision=precision, params=_parse_sets(sets), seed=seed, device=device,
                     progress=progress)
    if run_dir is None:
        safe_data = Path(str(data)).name.replace("/", "-").replace(":", "-")
        run_dir = Path("runs") / f"{model}_{safe_data}_{time.strftime('%Y%m%d-%H%M%S')}"
    # Train in a partial directory and rename at the end: a crash never leaves a run that looks
    # complete, and the partial directory holds the checkpoint that --resume continues from.
    partial = run_dir.with_name(run_dir.name + ".partial")
    if run_dir.exists():
        raise ConfigError(f"{run_dir}: run directory already exists; choose another --run-dir")
    if resume and not partial.exists():
        raise ConfigError(f"{partial}: no interrupted run to resume; drop --resume to start one")
    if partial.exists() and not resume:
        raise ConfigError(f"{partial}: an interrupted run is there; pass --resume to continue it or delete it")
    work_dir = partial
    distributed.init_from_env()
    start = time.perf_counter()
    clf.fit_dataset(dataset, run_dir=work_dir, resume=resume)
    seconds = time.perf_counter() - start
    if not distributed.is_main():
        distributed.cleanup()
        return
    test = clf.evaluate(dataset["test"], where=f"{dataset.name}/test")
    result = {"dataset": dataset.summary(), "train_seconds": seconds, "test": test,
              "parameters": clf.num_parameters(), "data_report": getattr(clf, "data_report_", {})}
    if clf.fit_result_ is not None:
        result["best_epoch"] = clf.fit_result_.best_epoch
        result["dev"] = clf.fit_result_.best_metrics
    work_dir.mkdir(parents=True, exist_ok=True)
    # The resume checkpoint has served its purpose once training finished; the run keeps only
    # what loading and reading it need.
    shutil.rmtree(work_dir / "checkpoint", ignore_errors=True)
    clf.save_pretrained(work_dir)
    artifacts.write_json(work_dir / artifacts.METRICS, result)
    if confusion_png:
        from .eval.plots import plot_confusion_matrix

        plot_confusion_matrix(test["confusion_matrix"], dataset.label_names, work_dir / "confusion_matrix.png")
    if work_dir != run_dir:
        if run_dir.exists():
            shutil.rmtree(run_dir)
        os.replace(work_dir, run_dir)
    distributed.cleanup()
    _echo_metrics(f"{model} on {dataset.name} (test, {len(dataset['test'])} documents)", test)
    typer.echo(f"trained in {seconds:.1f} s; run saved to {run_dir}")


@app.command()
def evaluate(
    run_dir: Path = typer.Argument(..., help="A run directory made by textcls train."),
    data: str = typer.Option(..., "--data", "-d", help="Dataset name, local file or folder."),
    split: str = typer.Option("test", help="Which split to evaluate."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir"),
    max_per_split: Optional[int] = typer.Option(None, "--max-per-split"),
    output: Optional[Path] = typer.Option(None, help="Also write the metrics JSON here."),
    confusion_png: Optional[Path] = typer.Option(None, "--confusion-png", help="Write a confusion-matrix PNG here."),
):
    """Evaluate a saved run on a dataset split."""
    from . import artifacts
    from .api import Classifier
    from .data import load_dataset

    clf = Classifier.from_pretrained(run_dir)
    dataset = load_dataset(data, data_dir=data_dir, max_per_split=max_per_split)
    metrics = clf.evaluate(dataset[split], where=f"{dataset.name}/{split}")
    if output:
        artifacts.write_json(output, metrics)
    if confusion_png and "confusion_matrix" in metrics:
        from .eval.plots import plot_confusion_matrix

        plot_confusion_matrix(metrics["confusion_matrix"], [str(c) for c in clf.classes_], confusion_png)
    _echo_metrics(f"{clf.model} on {dataset.name}/{split} ({len(dataset[split])} documents)", metrics)


@app.command()
def predict(
    run_dir: Path = typer.Argument(..., help="A run directory made by textcls train."),
    texts: List[str] = typer.Argument(None, help="Texts to classify. None: read --file, or stdin."),
    file: Optional[Path] = typer.Option(None, "--file", "-f", help="One text per line ('-' = stdin)."),
):
    """Classify texts; writes JSON Lines: text, label and class probabilities."""
    from .api import Classifier

    clf = Classifier.from_pretrained(run_dir)
    if texts:
        items = list(texts)
    else:
        if file is not None and str(file) != "-":
            if not file.is_file():
                raise DataError(f"{file}: no such file; pass a text file with one text per line")
            try:
                items = file.read_text(encoding="utf-8").split("\n")
            except UnicodeDecodeError as exc:
                raise DataError(f"{file}: not UTF-8 (byte {exc.start}); convert it to UTF-8 first")
        else:
            items = sys.stdin.read().split("\n")
        if items and items[-1] == "":
            items.pop()  # the newline that ends the last line is not an empty record
    probs = clf.predict_proba(items) if items else []
    names = [str(c) for c in clf.classes_]
    for text, row in zip(items, probs):
        record = {"text": text, "probabilities": {n: round(float(p), 6) for n, p in zip(names, row)}}
        if clf.multi_label_:
            record["labels"] = [n for n, p in zip(names, row) if p >= 0.5]
        else:
            record["label"] = names[int(row.argmax())]
        typer.echo(json.dumps(record, ensure_ascii=False))


@app.command("list-models")
def list_models_cmd():
    """List the registered presets."""
    from .models.registry import get_preset, list_models

    for name in list_models():
        preset = get_preset(name)
        typer.echo(f"{name:36s} {preset.kind:8s} {preset.description}")


@app.command("list-datasets")
def list_datasets_cmd():
    """List the named datasets and whether a local copy is found."""
    from .data import list_datasets

    for info in list_datasets():
        local = "local" if info.local else "hub"
        typer.echo(f"{info.name:28s} {info.classes:>3} classes  {local:5s}  {info.description}")


@app.command()
def benchmark(
    suite: str = typer.Option(..., "--suite", "-s", help="Suite name (benchmarks/suites/<name>.toml) or a .toml file."),
    output_dir: Path = typer.Option(Path("benchmarks/results"), "--output-dir", help="Where <suite>.json, .md and .png go."),
    only: List[str] = typer.Option([], "--only", help="Run only the entries of this model, dataset or entry id (repeatable)."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Folder of the named datasets (default: $TEXTCLS_DATA_DIR)."),
    threads: Optional[int] = typer.Option(None, "--threads", help="Torch/BLAS threads per run (default: every available CPU)."),
    progress: bool = typer.Option(True, help="Print one line per run on stderr."),
    merge: bool = typer.Option(False, help="With --only: put the rerun entries into the suite's full report (recorded there as a rerun)."),
    render: bool = typer.Option(False, "--render", help="Run nothing: rewrite <suite>.md and .png from the existing <suite>.json."),
):
    """Run a benchmark suite: textcls models and peers side by side on the same splits."""
    from .benchmark import render_report, run_suite
    from .benchmark.report import format_tables

    if render:
        if only or merge:
            raise ConfigError("--render rewrites the whole report from its JSON; drop --only and --merge")
        files = render_report(suite, output_dir=output_dir)["files"]
        typer.echo(f"wrote {files['markdown']} and {files['plot']} from {files['json']}")
        return
    result = run_suite(suite, output_dir=output_dir, data_dir=data_dir, only=list(only) or None,
                       progress=progress, threads=threads, merge=merge)
    typer.echo(format_tables(result))
    files = result["files"]
    typer.echo(f"wrote {files['json']}, {files['markdown']} and {files['plot']}")
    if result["failed"]:
        typer.echo(f"error: {result['failed']} entr{'y' if result['failed'] == 1 else 'ies'} failed: "
                   f"{', '.join(result['failed_entries'])} (errors in {files['markdown']})", err=True)
        raise typer.Exit(1)


@app.command()
def speed(
    models: List[str] = typer.Option(..., "--model", "-m", help="Preset to time (repeatable); ratios are to the first."),
    lengths: List[int] = typer.Option([256], "--length", "-l", help="Tokens per document (repeatable)."),
    output: Path = typer.Option(..., "--output", "-o", help="Path stem: writes <stem>.json, <stem>.md (and <stem>.png with 2+ lengths)."),
    batch_size: int = typer.Option(32, "--batch-size", "-b"),
    steps: int = typer.Option(5, help="Timed training steps per (model, length); the median is reported."),
    warmup: int = typer.Option(2, help="Untimed steps first."),
    threads: Optional[int] = typer.Option(None, "--threads", help="Torch threads (default: every available CPU)."),
    sentence_length: int = typer.Option(25, help="Words per sentence for hierarchical presets."),
    vocab_size: int = typer.Option(20_000, help="Vocabulary size (a fine-tuned embedding table's update cost grows with it)."),
    num_classes: int = typer.Option(4, help="Number of classes."),
    sets: List[str] = typer.Option([], "--set", help="MODEL:KEY=VALUE preset override, e.g. hcan:d=64 (repeatable)."),
    timeout: float = typer.Option(900.0, help="Seconds allowed per (model, length) before it is recorded as failed."),
):
    """Time presets at a fixed batch size and length on synthetic batches (training and inference ms, peak memory)."""
    from .benchmark.speed import format_speed_markdown, parse_overrides, run_speed, write_speed_report

    result = run_speed(list(models), list(lengths), batch_size=batch_size, steps=steps, warmup=warmup,
                       threads=threads, sentence_length=sentence_length, overrides=parse_overrides(list(sets)),
                       vocab_size=vocab_size, num_classes=num_classes,
                       timeout=timeout)
    command = "textcls speed " + " ".join(shlex.quote(a) for a in sys.argv[2:]) if len(sys.argv) > 2 else None
    files = write_speed_report(result, output, command)
    typer.echo(format_speed_markdown(result, command))
    typer.echo("wrote " + ", ".join(str(p) for p in files.values()))
    failed = [f"{r['model']}@{r['length']}" for r in result["rows"] if r["status"] != "ok"]
    if failed:
        typer.echo(f"error: {len(failed)} measurement(s) failed: {', '.join(failed)}", err=True)
        raise typer.Exit(1)


def main(argv: Optional[List[str]] = None) -> None:
    try:
        app(args=argv, standalone_mode=False)
    except TextclsError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        typer.echo("error: interrupted", err=True)
        sys.exit(130)
    except click_exceptions.ClickException as exc:
        typer.echo(f"error: {' '.join(exc.format_message().split())}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        typer.echo("error: interrupted", err=True)
        sys.exit(130)


if __name__ == "__main__":
    main()
