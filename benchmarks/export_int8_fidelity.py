"""ONNX int8 export against fp32 and PyTorch: the two tables of docs/export.md's int8 section.

    OMP_NUM_THREADS=1 python benchmarks/export_int8_fidelity.py [--table tiny|trec|both] [--repeats 7]
        [--output benchmarks/results/export_int8_fidelity]

``export_onnx(run, folder, quantize="int8")`` quantises with onnxruntime's dynamic quantisation,
per channel, with 7-bit weights (``reduce_range=True``, see ``textcls.export._quantize_int8``);
the JSON records the range of the int8 weights actually found in every quantised graph.

``--table tiny``: the test models of ``tests/test_export.py`` (the same presets, overrides and
data: one epoch, batch 32, on 200 documents a split of TREC / Reuters / FDU-MTL), each saved,
exported fp32 and int8, and run by ``OnnxClassifier`` (one thread) on the same 59 real texts
as the tests (TREC questions, Reuters articles, runs of questions, one text longer than every
``max_length``, texts that normalise to nothing). Max |Δp| is against PyTorch
(``Classifier.from_pretrained(run).predict_proba``); "argmax =" is the share of texts where
int8 and PyTorch pick the same class (for the multi-label Reuters run, the same top label; the
JSON also gives the share whose 0.5-thresholded label sets are equal).

``--table trec``: five presets at their own sizes (no pretrained vectors for bilstm and HCAN;
fastText with its 2^21-bucket table), trained (seed 0, one thread, the preset's recipe) on a
stratified 1,500 of TREC's training questions and scored on the 500 TREC test questions,
fp32 and int8 ONNX. Times are onnxruntime on one thread over all 500 texts, tokenisation
included, the best of ``--repeats`` passes; fp32 and int8 take turns in every pass, so a change
in the load of the (shared) machine hits both alike. The load average before and after each
table is recorded.

Writes <output>.json (all numbers, the machine, the command) and <output>.md.
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
import onnx
import onnxruntime
import torch
from onnx import numpy_helper

from textcls import Classifier, load_dataset
from textcls.artifacts import write_report
from textcls.benchmark.speed import interleaved_best
from textcls.benchmark.system import git_info, library_versions, machine_info
from textcls.data.prepare import label_targets
from textcls.export import export_onnx
from textcls.onnx_predictor import ONNX_FILE, OnnxClassifier, read_sidecar

REPO = Path(__file__).resolve().parents[1]

# The test models: tests/test_export.py reads these cases and texts from here (and trains each
# as _tiny_case does: epochs 1, batches of 32). Tiny widths, no pretrained vectors (GloVe /
# Word2Vec would only add load time; the graph is the same).
_ATTENTION = {"embedding_dim": 16, "hidden_dim": 16, "bigram_buckets": 512}
_HCAN = {"embeddings": None, "embedding_dim": 16, "d_model": 16, "heads": 2}
TINY_CASES = [
    # More epochs where one leaves the probabilities nearly uniform (the tests check the spread).
    ("fasttext-bag", "trec", {"embedding_dim": 8, "bigram_buckets": 4096, "epochs": 20}),
    ("kim-cnn-rand", "trec", {"embedding_dim": 16, "feature_maps": 8}),
    ("spe-cnn", "trec", {"embeddings": None, "embedding_dim": 16, "filters": 8}),  # dense, positions
    ("single-cnn-bow", "trec", {"filters": 8}),  # one-hot convolution table
    # max_length 300: [B, L, L] attention over 1,000 tokens for both runtimes took 10-15 s.
    ("cspan-base", "trec", {"embeddings": None, "embedding_dim": 16, "queries": 4, "max_length": 300}),
    ("cspan-fusion-relative", "trec", {"embeddings": None, "embedding_dim": 16, "queries": 4, "max_length": 300}),
    ("dasa", "trec", _ATTENTION),
    ("self-attention-additive", "trec", _ATTENTION),
    ("self-attention-scaled-dot", "trec", _ATTENTION),  # fused SDPA path
    ("disan-t2t", "trec", _ATTENTION),
    ("hcan-flat-two-sa-target-cpu", "trec", _HCAN),
    ("hcan-cpu", "reuters", _HCAN),  # hierarchical, multi-label
    ("han-cpu", "reuters", {"embeddings": None, "embedding_dim": 16, "hidden_size": 8, "attention_dim": 8}),
    ("fcsr", "trec", {"embeddings": None, "embedding_dim": 16, "epochs": 3, "lr": 0.01}),
    ("fcsr-mtl", "fdu_mtl", {"embeddings": None, "embedding_dim": 16, "epochs": 3, "lr": 0.01}),  # a head per task
    ("bilstm", "trec", {"embeddings": None, "embedding_dim": 16, "hidden_size": 8}),
    ("transformer-1l-2h", "trec", {"embeddings": None, "embedding_dim": 16, "d_model": 16, "ffn_dim": 32}),
]
TREC_CASES = [("fasttext-bag", {}), ("kim-cnn-rand", {}), ("dasa", {}), ("bilstm", {"embeddings": None}),
              ("hcan-flat-two-sa-target-cpu", {"embeddings": None})]


def tiny_texts(datasets: dict) -> list[str]:
    """59 real texts of every length: questions, articles, runs of questions (many sentences),
    texts longer than every max_length, and texts with nothing left after normalisation."""
    trec = list(datasets["trec"]["test"]["text"])
    reuters = list(datasets["reuters"]["test"]["text"])
    chosen = trec[:40] + reuters[:12]
    chosen += [" ".join(trec[i:i + 25]) for i in (40, 70)]  # ~250 tokens, ~25 sentences
    chosen.append(" ".join(trec[:400]))  # ~4,000 tokens: truncated by every max_length
    chosen += ["***", "?", "WHO painted THE Mona Lisa ?!", "Où est la gare ... demain ?"]
    return chosen


def _int8_weight_range(path: Path) -> list[int] | None:
    """Smallest and largest value of the graph's int8 initialisers (7-bit weights: within [-64, 64])."""
    values = [numpy_helper.to_array(t) for t in onnx.load(str(path)).graph.initializer
              if t.data_type == onnx.TensorProto.INT8]
    values = [v for v in values if v.size]
    return [int(min(v.min() for v in values)), int(max(v.max() for v in values))] if values else None


def _export_both(run: Path, work: Path) -> dict:
    """fp32 and int8 exports of ``run``: folders, sidecars, file sizes."""
    out = {}
    for kind, quantize in (("fp32", None), ("int8", "int8")):
        folder = work / kind
        export_onnx(run, folder, quantize=quantize)
        out[kind] = {"folder": folder, "sidecar": read_sidecar(folder),
                     "bytes": (folder / ONNX_FILE).stat().st_size}
    return out


def _exporter(sidecar: dict) -> str:
    return "torch.export" if "dynamo=True" in sidecar["exporter"]["method"] else "legacy"


def _flips(probs: np.ndarray, expected: np.ndarray) -> dict:
    """Texts whose argmax differs from PyTorch's, and the largest PyTorch top-two margin among them."""
    flipped = probs.argmax(1) != expected.argmax(1)
    top2 = np.sort(expected, axis=1)[:, -2:]
    margins = (top2[:, 1] - top2[:, 0])[flipped]
    return {"argmax_flips": int(flipped.sum()), "flipped_max_torch_margin": float(margins.max()) if flipped.any() else None}


def _tiny_case(preset: str, dataset, params: dict, texts: list[str], work: Path) -> dict:
    # The cases' own epochs (params) win over the quick default, one setting each.
    clf = Classifier(preset, params={"epochs": 1, "batch_size": 32, **params}).fit_dataset(dataset)
    run = clf.save_pretrained(work / "run")
    reference = Classifier.from_pretrained(run)
    tasks = ([reference.task_names_[i % len(reference.task_names_)] for i in range(len(texts))]
             if reference.uses_tasks else None)
    expected = reference.predict_proba(texts, tasks)
    exports = _export_both(run, work)
    probs = {kind: OnnxClassifier.load(e["folder"], threads=1).predict_proba(texts, tasks)
             for kind, e in exports.items()}
    int8, on_batches = probs["int8"], exports["int8"]["sidecar"]["int8_max_abs_diff"]
    row = {"preset": preset, "dataset": dataset.name, "family": exports["fp32"]["sidecar"]["family"],
           "multi_label": bool(reference.multi_label_), "texts": len(texts), "params": params,
           "probability_spread": float(np.ptp(expected, axis=0).max()),
           "exporter": _exporter(exports["fp32"]["sidecar"]),
           "fp32_max_abs_diff_vs_torch": float(np.abs(probs["fp32"] - expected).max()),
           "fp32_bytes": exports["fp32"]["bytes"], "int8_bytes": exports["int8"]["bytes"],
           "int8_max_abs_diff_vs_torch": float(np.abs(int8 - expected).max()),
           "int8_argmax_agreement": float((int8.argmax(1) == expected.argmax(1)).mean()), **_flips(int8, expected),
           "legacy_failure": exports["fp32"]["sidecar"]["exporter"].get("legacy_failure"),
           # export_onnx's own figure, on its synthetic verification batches ("inf": a non-finite output)
           "int8_max_abs_diff_on_export_batches": on_batches if np.isfinite(on_batches) else str(on_batches),
           "int8_weight_range": _int8_weight_range(exports["int8"]["folder"] / ONNX_FILE)}
    if reference.multi_label_:
        row["int8_label_sets_equal"] = float(((int8 >= 0.5) == (expected >= 0.5)).all(axis=1).mean())
    return row


def _tiny_table(work: Path) -> dict:
    datasets = {name: load_dataset(name, max_per_split=200) for name in ("trec", "reuters", "fdu_mtl")}
    texts = tiny_texts(datasets)
    rows = []
    for i, (preset, dataset, params) in enumerate(TINY_CASES):
        print(f"[tiny {i + 1}/{len(TINY_CASES)}] {preset}", flush=True)
        folder = work / f"tiny_{preset}"
        folder.mkdir()
        rows.append(_tiny_case(preset, datasets[dataset], params, texts, folder))
    return {"texts": len(texts), "rows": rows}


def _trec_table(repeats: int, work: Path) -> dict:
    dataset = load_dataset("trec", max_per_split=1500)
    test = dataset["test"]
    texts = list(test["text"])
    y = np.asarray(label_targets(test, dataset.label_names, False, "trec/test"))
    rows = []
    load_before = os.getloadavg()
    for i, (preset, params) in enumerate(TREC_CASES):
        print(f"[trec {i + 1}/{len(TREC_CASES)}] {preset}", flush=True)
        folder = work / f"trec_{preset}"
        start = time.perf_counter()
        clf = Classifier(preset, seed=0, params=params or None).fit_dataset(dataset)
        train_seconds = time.perf_counter() - start
        run = clf.save_pretrained(folder / "run")
        expected = Classifier.from_pretrained(run).predict_proba(texts)
        exports = _export_both(run, folder)
        predictors = {kind: OnnxClassifier.load(e["folder"], threads=1).predict_proba for kind, e in exports.items()}
        best, probs = interleaved_best(repeats, predictors, texts)  # fp32 and int8 take turns in every pass
        fp32, int8 = probs["fp32"], probs["int8"]
        rows.append({
            "preset": preset, "params": params, "train_documents": len(dataset["train"]), "test_documents": len(texts),
            "vocab_size": clf.pipeline_.vocab_size, "train_seconds": train_seconds,
            "epochs_run": clf.fit_result_.epochs_run if clf.fit_result_ else None,
            "torch_accuracy": float((expected.argmax(1) == y).mean()),
            "fp32_accuracy": float((fp32.argmax(1) == y).mean()), "int8_accuracy": float((int8.argmax(1) == y).mean()),
            "fp32_max_abs_diff_vs_torch": float(np.abs(fp32 - expected).max()),
            "int8_max_abs_diff_vs_torch": float(np.abs(int8 - expected).max()),
            "int8_max_abs_diff_vs_fp32_onnx": float(np.abs(int8 - fp32).max()),
            "int8_argmax_agreement": float((int8.argmax(1) == expected.argmax(1)).mean()), **_flips(int8, expected),
            "fp32_bytes": exports["fp32"]["bytes"], "int8_bytes": exports["int8"]["bytes"],
            "exporter": _exporter(exports["fp32"]["sidecar"]),
            "fp32_seconds": best["fp32"], "int8_seconds": best["int8"],
            "int8_weight_range": _int8_weight_range(exports["int8"]["folder"] / ONNX_FILE)})
    return {"dataset": "trec", "split_notes": dataset.split_notes, "repeats": repeats,
            "load_before": load_before, "load_after": os.getloadavg(), "rows": rows}


def _cpu_family_model() -> str | None:
    """``family/model`` from /proc/cpuinfo (AMD family 25 model 1: Zen 3), where there is one."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()[:12]
    except OSError:
        return None
    fields = {key.strip(): value.strip() for key, _, value in (line.partition(":") for line in lines)}
    return f"{fields.get('cpu family', '?')}/{fields.get('model', '?')}"


def _kib(n: int) -> str:
    return f"{n / 1024:.0f}"


def _markdown(result: dict) -> str:
    machine = result["machine"]
    lines = ["# ONNX int8 export against fp32 and PyTorch", "",
             f"Command: `{result['command']}` at commit {(result['git'].get('commit') or '?')[:7]}"
             f"{' (with uncommitted changes)' if result['git'].get('dirty') else ''}.",
             f"CPU: {machine.get('cpu_model')} (family/model {result['cpu_family_model']}; "
             f"{', '.join(machine.get('cpu_simd') or [])}), {machine.get('cpu_count')} CPUs; one thread; "
             f"onnxruntime {result['versions']['onnxruntime']}, torch {result['versions']['torch']}.",
             f"int8: {result['int8_weights']}.", ""]
    if "tiny" in result:
        tiny = result["tiny"]
        lines += [f"## Test models (tests/test_export.py's runs), {tiny['texts']} real texts", "",
                  f"Load average {tiny['load_before'][0]:.1f} before, {tiny['load_after'][0]:.1f} after.", "",
                  "| preset | family | fp32 max \\|Δp\\| vs PyTorch | exporter | int8 size (vs fp32) "
                  "| int8 max \\|Δp\\| | int8 argmax = | int8 weights |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in tiny["rows"]:
            name = r["preset"] + (" (hierarchical)" if r["preset"] == "hcan-cpu" else "")
            lines.append(f"| {name} | {r['family']} | {r['fp32_max_abs_diff_vs_torch']:.1e} | {r['exporter']} | "
                         f"{_kib(r['fp32_bytes'])} → {_kib(r['int8_bytes'])} KiB ({r['int8_bytes'] / r['fp32_bytes']:.2f}) | "
                         f"{r['int8_max_abs_diff_vs_torch']:.1e} | {r['int8_argmax_agreement']:.1%} | "
                         f"{r['int8_weight_range']} |")
        for r in tiny["rows"]:
            if r["legacy_failure"]:
                lines.append(f"\n{r['preset']}: the TorchScript trace failed the export's check, so torch.export "
                             f"made the graph ({r['legacy_failure']}).")
        flips = [f"{r['preset']} {r['argmax_flips']} ({r['flipped_max_torch_margin']:.1e})" for r in tiny["rows"]
                 if r["argmax_flips"]]
        lines.append("\nTexts whose int8 argmax differs from PyTorch's (the largest PyTorch top-two margin among them): "
                     + (", ".join(flips) or "none") + ".")
        for r in tiny["rows"]:
            if r["multi_label"]:
                lines.append(f"\n{r['preset']} is multi-label: argmax = is the top label; the 0.5-thresholded label "
                             f"sets are equal on {r['int8_label_sets_equal']:.1%} of the texts.")
        lines.append("")
    if "trec" in result:
        trec = result["trec"]
        lines += [f"## Preset sizes, {trec['rows'][0]['train_documents']} TREC training questions, "
                  f"{trec['rows'][0]['test_documents']} test questions", "",
                  f"Times: onnxruntime, one thread, all test texts, tokenisation included, best of {trec['repeats']} "
                  f"passes (fp32 and int8 take turns); load average {trec['load_before'][0]:.1f} before, "
                  f"{trec['load_after'][0]:.1f} after.", "",
                  "| preset | model.onnx fp32 → int8 | int8 max \\|Δp\\| | argmax = | accuracy fp32 / int8 "
                  "| ORT fp32 / int8 | int8 weights |",
                  "|---|---|---|---|---|---|---|"]
        for r in trec["rows"]:
            lines.append(f"| {r['preset']} | {r['fp32_bytes'] / 1e6:.2f} → {r['int8_bytes'] / 1e6:.2f} MB "
                         f"({r['int8_bytes'] / r['fp32_bytes']:.2f}) | {r['int8_max_abs_diff_vs_torch']:.1e} | "
                         f"{r['int8_argmax_agreement']:.1%} | {r['fp32_accuracy']:.3f} / {r['int8_accuracy']:.3f} | "
                         f"{1000 * r['fp32_seconds']:.0f} / {1000 * r['int8_seconds']:.0f} ms | {r['int8_weight_range']} |")
        flips = [f"{r['preset']} {r['argmax_flips']} ({r['flipped_max_torch_margin']:.1e})" for r in trec["rows"]
                 if r["argmax_flips"]]
        lines += ["", "Texts whose int8 argmax differs from PyTorch's (the largest PyTorch top-two margin among them): "
                  + (", ".join(flips) or "none") + ".", ""]
        lines += ["PyTorch accuracy / vocabulary / epochs run / training seconds: "
                  + ", ".join(f"{r['preset']} {r['torch_accuracy']:.3f} / {r['vocab_size']:,} / {r['epochs_run']} / "
                              f"{r['train_seconds']:.0f} s"
                              for r in trec["rows"]) + ".", ""]
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--table", choices=("tiny", "trec", "both"), default="both")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--output", default=str(REPO / "benchmarks" / "results" / "export_int8_fidelity"))
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    result = {"command": ("OMP_NUM_THREADS=1 python benchmarks/export_int8_fidelity.py "
                          + shlex.join(sys.argv[1:] if argv is None else argv)).rstrip(),
              "git": git_info(), "machine": machine_info(), "cpu_family_model": _cpu_family_model(),
              "versions": {**library_versions(), "onnxruntime": onnxruntime.__version__, "onnx": onnx.__version__},
              "threads": torch.get_num_threads(),
              "int8_weights": "onnxruntime quantize_dynamic, QInt8 per channel, 7-bit (reduce_range=True), "
                              "MatMul/Gemm/Gather/Conv/LSTM",
              "int8_reduce_range": True}
    with tempfile.TemporaryDirectory(prefix="textcls-export-int8-") as work:
        if args.table in ("tiny", "both"):
            load_before = os.getloadavg()
            result["tiny"] = {**_tiny_table(Path(work)), "load_before": load_before, "load_after": os.getloadavg()}
        if args.table in ("trec", "both"):
            result["trec"] = _trec_table(args.repeats, Path(work))
    write_report(Path(args.output), result, _markdown(result))
    print(_markdown(result))


if __name__ == "__main__":
    main()
