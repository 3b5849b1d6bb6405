"""int8 dynamic quantisation against fp32: accuracy and prediction speed, PyTorch and ONNX.

    OMP_NUM_THREADS=1 python benchmarks/int8.py [--repeats 3] [--output benchmarks/results/int8]

For each (dataset, preset) of ``CASES`` one fp32 model is trained (seed 0, one thread) and
scored on the whole test split four ways:

- ``torch fp32``: ``Classifier.predict_proba``;
- ``torch int8``: the same run after ``Classifier.quantize("int8")`` (torch.ao dynamic
  quantisation of Linear/LSTM/GRU), saved and loaded again (``from_pretrained`` quantises it
  again; the reloaded probabilities must equal the ones before saving, bit for bit);
- ``onnx fp32`` / ``onnx int8``: ``export_onnx`` (and ``quantize="int8"``: onnxruntime dynamic
  quantisation of MatMul/Gemm/Gather/Conv/LSTM) run by ``OnnxClassifier`` with one thread.

Times are the best of ``--repeats`` passes over the whole test split, tokenisation included
(what ``predict_proba`` costs a user), in one process with one thread; the four runtimes take
turns in every round, so a change in the load of the (shared) machine hits them alike. The
load average before and after is recorded. Sizes are the files a
user ships (``model.safetensors`` holds float weights in both torch rows). Writes
<output>.json (all numbers, the machine, the command) and <output>.md.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from textcls import Classifier, load_dataset
from textcls.artifacts import atomic_write_bytes, write_json
from textcls.benchmark.speed import interleaved_best
from textcls.benchmark.system import git_info, machine_info
from textcls.data.prepare import label_targets
from textcls.export import export_onnx
from textcls.onnx_predictor import OnnxClassifier

REPO = Path(__file__).resolve().parents[1]
CASES = (("mr", "fasttext-bag"), ("mr", "spe-cnn"), ("20news", "fasttext-bag"))


def _row(kind: str, probs: np.ndarray, y: np.ndarray, seconds: float, size: int, reference: np.ndarray) -> dict:
    return {"kind": kind, "accuracy": float((probs.argmax(1) == y).mean()), "seconds": seconds,
            "docs_per_second": len(y) / seconds, "file_bytes": size,
            "argmax_agreement_with_fp32": float((probs.argmax(1) == reference.argmax(1)).mean()),
            "max_abs_diff_from_fp32": float(np.abs(probs - reference).max())}


def _case(dataset_name: str, preset: str, repeats: int, work: Path) -> dict:
    dataset = load_dataset(dataset_name)
    test = dataset["test"]
    texts = list(test["text"])
    y = np.asarray(label_targets(test, dataset.label_names, False, f"{dataset_name}/test"))
    start = time.perf_counter()
    clf = Classifier(preset, seed=0).fit_dataset(dataset)
    train_seconds = time.perf_counter() - start
    fp32_run, int8_run = work / f"{dataset_name}_{preset}", work / f"{dataset_name}_{preset}_int8"
    clf.save_pretrained(fp32_run)
    quantized = Classifier.from_pretrained(fp32_run).quantize("int8")
    quantized.save_pretrained(int8_run)
    predictors = {"torch fp32": clf.predict_proba, "torch int8": quantized.predict_proba}
    sizes = {"torch fp32": (fp32_run / "model.safetensors").stat().st_size,
             "torch int8": (int8_run / "model.safetensors").stat().st_size}
    for kind, quantize in (("onnx fp32", None), ("onnx int8", "int8")):
        folder = work / f"{dataset_name}_{preset}_{kind.replace(' ', '_')}"
        export_onnx(fp32_run, folder, quantize=quantize)
        predictors[kind] = OnnxClassifier.load(folder, threads=1).predict_proba
        sizes[kind] = (folder / "model.onnx").stat().st_size
    seconds, probs = interleaved_best(repeats, predictors, texts)
    fp32 = probs["torch fp32"]
    rows = [_row(kind, probs[kind], y, seconds[kind], sizes[kind], fp32) for kind in predictors]
    reloaded = Classifier.from_pretrained(int8_run).predict_proba(texts)
    rows[1]["reloaded_equal"] = bool(np.array_equal(reloaded, probs["torch int8"]))
    return {"dataset": dataset_name, "preset": preset, "test_documents": len(texts),
            "train_seconds": train_seconds, "rows": rows}


def _markdown(result: dict) -> str:
    lines = ["# int8 dynamic quantisation vs fp32: accuracy and prediction speed", "",
             f"Command: `{result['command']}` at commit {(result['git'].get('commit') or '?')[:7]}"
             f"{' (with uncommitted changes)' if result['git'].get('dirty') else ''}.",
             f"CPU: {result['machine'].get('cpu_model')} ({', '.join(result['machine'].get('cpu_simd') or [])}), "
             f"one thread; times are the best of {result['repeats']} passes over the whole test split "
             f"(the four runtimes take turns), tokenisation included; load average {result['load_before'][0]:.1f} "
             f"before, {result['load_after'][0]:.1f} after, on {result['machine'].get('cpu_count')} CPUs.", "",
             "| dataset | preset | runtime | accuracy | Δ acc. vs torch fp32 | argmax = fp32 | max abs Δp | docs/s | speed vs its fp32 | file |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for case in result["cases"]:
        by_kind = {row["kind"]: row for row in case["rows"]}
        for row in case["rows"]:
            base = by_kind[row["kind"].split()[0] + " fp32"]
            lines.append(
                f"| {case['dataset']} ({case['test_documents']}) | {case['preset']} | {row['kind']} | "
                f"{row['accuracy']:.4f} | {row['accuracy'] - case['rows'][0]['accuracy']:+.4f} | "
                f"{row['argmax_agreement_with_fp32']:.2%} | {row['max_abs_diff_from_fp32']:.1e} | "
                f"{row['docs_per_second']:,.0f} | {base['seconds'] / row['seconds']:.2f}x | "
                f"{row['file_bytes'] / 2**20:.1f} MiB |")
    lines += ["", "torch int8 rows: saved and loaded again; the reloaded probabilities equal the ones before saving: "
              + ", ".join(f"{c['dataset']}/{c['preset']} {c['rows'][1]['reloaded_equal']}" for c in result["cases"]), ""]
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--output", default=str(REPO / "benchmarks" / "results" / "int8"))
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="textcls-int8-") as work:
        cases = [_case(name, preset, args.repeats, Path(work)) for name, preset in CASES]
    result = {"command": ("OMP_NUM_THREADS=1 python benchmarks/int8.py " + shlex.join(sys.argv[1:] if argv is None else argv)).rstrip(),
              "git": git_info(), "machine": machine_info(), "threads": torch.get_num_threads(),
              "repeats": args.repeats, "load_before": load_before, "load_after": os.getloadavg(), "cases": cases}
    output = Path(args.output)
    write_json(output.with_suffix(".json"), result)
    atomic_write_bytes(output.with_suffix(".md"), _markdown(result).encode("utf-8"))
    print(_markdown(result))


if __name__ == "__main__":
    main()
