"""Training speed: fasttext-bag against fastText, and the CNNs' share of the matmul peak.

    OMP_NUM_THREADS=1 python benchmarks/train_speed.py [--datasets mr 20news] [--repeats 3]
        [--steps 30] [--warmup 5] [--parts fasttext cnn] [--output benchmarks/results/train_speed]

Two parts, both at one thread, in one process (issue 17):

1. **fasttext-bag vs fastText** (PyPI ``fasttext``, the tutorial's settings: ``epoch 25, lr 1.0,
   wordNgrams 2``, as the ``fasttext-tutorial`` entries of ``benchmarks/suites/practitioner.toml``
   run it through ``benchmark/peers.py``). For each dataset (whole training and test splits),
   ``--repeats`` rounds; in each round both are trained with the round's seed, taking turns (the
   one that starts alternates), and scored on the test split. Training documents per second =
   training documents x epochs / seconds:

   - fastText: its training documents (the whole train split) x 25 epochs over the wall clock of
     ``FastTextPeer.fit_texts`` (writing its input file, reading it, the dictionary, the 2**21 x
     100 matrices and the epochs: everything ``fasttext.train_supervised`` does);
   - fasttext-bag, as the preset ships (fastText's per-document loop since commit fb324fe, the
     engine's batched steps with sparse table gradients before; epochs and lr chosen from the
     corpus by its recipe rule; 2**21 buckets): its training documents (train less the 10 % dev
     split it carves out) x epochs run, over (a) the wall clock of ``Classifier.fit_dataset``
     (tokenizer, encoding, model, every epoch's dev evaluation) and (b) the training passes alone
     (the engine's ``train_seconds``, the loader included, dev evaluation not).

   A warm-up fit of each on 300 documents comes first, so that no timed fit pays for imports.

2. **Share of the matmul peak** reached by the training steps of ``spe-cnn``,
   ``kim-cnn-static`` and ``kim-cnn-nonstatic`` in fp32 and under bf16 autocast (the recipe's
   ``precision``): the FLOPs of one step's forward and backward on a real MR training batch at
   the preset's batch size (``torch.utils.flop_counter.FlopCounterMode``), the median time of
   ``--steps`` whole steps on that batch (the engine's ``training_step``: forward, loss, backward,
   optimiser step, the model's hook) after ``--warmup``, and the single-thread peak of
   ``torch.mm`` on large square matrices in the same dtype, measured just before each preset.
   A torch profile of 10 steps gives where the rest of the step goes.

``--parts`` runs one of the two (both by default); the output then has that part only.

The machine is shared (other engineers' jobs, background benchmarks at nice 10), so absolute
rates move with its load; only the ratios within one run, measured interleaved, mean anything.
The load average is recorded before and after. Writes <output>.json and <output>.md.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from torch.utils.flop_counter import FlopCounterMode

from textcls import Classifier, load_dataset
from textcls.artifacts import write_report
from textcls.benchmark.peers import FastTextPeer
from textcls.benchmark.system import cpu_flags, git_info, library_versions, machine_info
from textcls.data.prepare import label_targets, prepare, resolve_recipe
from textcls.data.splits import ensure_dev, subsample
from textcls.hardware import NATIVE_BF16_FLAGS
from textcls.models.registry import create_model, get_preset
from textcls.train import engine, training_step
from textcls.train.optim import build_optimizer

REPO = Path(__file__).resolve().parents[1]
FASTTEXT_TUTORIAL = {"epoch": 25, "lr": 1.0}  # + FastTextPeer's wordNgrams 2, one thread
CNN_PRESETS = ("spe-cnn", "kim-cnn-static", "kim-cnn-nonstatic")
PRECISIONS = ("fp32", "bf16")
PEAK_SIZE = 2048  # square matrices: 17 GFLOP a product, well past any cache
PEAK_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
MATMUL_OPS = ("mm", "addmm", "bmm", "convolution", "conv1d", "mkldnn", "linear", "matmul")
CPU_FEATURES = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_tile", "amx_int8")


# ------------------------------------------------------------------ part 1: fastText vs fasttext-bag


def _fit_fasttext(dataset, test_y: list, seed: int) -> dict:
    train, test = dataset["train"], dataset["test"]
    peer = FastTextPeer(seed=seed, **FASTTEXT_TUTORIAL).fit_texts(list(train["text"]), list(train["label"]))
    accuracy = float(np.mean(peer.predict(list(test["text"])) == np.asarray(test_y, dtype=object)))
    docs, epochs = len(train), int(peer.epochs_run_)
    return {"model": "fasttext", "seed": seed, "train_documents": docs, "epochs": epochs,
            "fit_seconds": peer.train_seconds_, "fit_docs_per_second": docs * epochs / peer.train_seconds_,
            "test_accuracy": accuracy}


def _fit_bag(dataset, test_targets: np.ndarray, seed: int) -> dict:
    preset = get_preset("fasttext-bag")
    train_docs = len(ensure_dev(dataset, fraction=preset.recipe.dev_fraction, seed=seed)["train"])
    start = time.perf_counter()
    clf = Classifier("fasttext-bag", seed=seed).fit_dataset(dataset)
    fit_seconds = time.perf_counter() - start
    estimator = clf.estimator_
    history = estimator.fit_result_.history
    passes = sum(row["train_seconds"] for row in history)
    accuracy = float((clf.predict_proba(list(dataset["test"]["text"])).argmax(1) == test_targets).mean())
    epochs, recipe = len(history), estimator.preset.recipe
    return {"model": "fasttext-bag", "seed": seed, "train_documents": train_docs, "epochs": epochs,
            "best_epoch": estimator.best_epoch_, "lr": recipe.lr, "batch_size": recipe.batch_size,
            "fit_seconds": fit_seconds, "fit_docs_per_second": train_docs * epochs / fit_seconds,
            "train_pass_seconds": passes, "train_pass_docs_per_second": train_docs * epochs / passes,
            "test_accuracy": accuracy}


def _warm_up(dataset) -> None:
    """One small fit of each, so the timed fits pay for no import (torch's optimiser code
    imports torch._dynamo on first use: seconds)."""
    small = subsample(dataset, 300)
    _fit_fasttext(small, list(small["test"]["label"]), 0)
    Classifier("fasttext-bag", seed=0, epochs=1).fit_dataset(small)


def fasttext_rounds(name: str, repeats: int) -> dict:
    dataset = load_dataset(name)
    test = dataset["test"]
    test_targets = np.asarray(label_targets(test, dataset.label_names, False, f"{name}/test"))
    rounds = []
    for seed in range(repeats):
        order = (_fit_fasttext, _fit_bag) if seed % 2 == 0 else (_fit_bag, _fit_fasttext)
        rows = {}
        for fit in order:
            row = fit(dataset, list(test["label"]) if fit is _fit_fasttext else test_targets, seed)
            rows[row["model"]] = row
            print(f"{name} seed {seed} {row['model']}: {row['fit_docs_per_second']:,.0f} docs/s, "
                  f"acc {row['test_accuracy']:.4f}", flush=True)
        ft, bag = rows["fasttext"], rows["fasttext-bag"]
        rounds.append({"seed": seed, "first": order[0] is _fit_fasttext and "fasttext" or "fasttext-bag",
                       "fasttext": ft, "fasttext-bag": bag,
                       "fit_ratio": bag["fit_docs_per_second"] / ft["fit_docs_per_second"],
                       "train_pass_ratio": bag["train_pass_docs_per_second"] / ft["fit_docs_per_second"]})
    return {"dataset": name, "rounds": rounds, "summary": _summary(rounds)}


def _summary(rounds: list[dict]) -> dict:
    def med(key, model=None):
        return statistics.median(r[model][key] if model else r[key] for r in rounds)

    return {"fasttext_docs_per_second": med("fit_docs_per_second", "fasttext"),
            "bag_fit_docs_per_second": med("fit_docs_per_second", "fasttext-bag"),
            "bag_train_pass_docs_per_second": med("train_pass_docs_per_second", "fasttext-bag"),
            "fit_ratio_median": med("fit_ratio"), "train_pass_ratio_median": med("train_pass_ratio"),
            "fasttext_accuracy_mean": statistics.mean(r["fasttext"]["test_accuracy"] for r in rounds),
            "bag_accuracy_mean": statistics.mean(r["fasttext-bag"]["test_accuracy"] for r in rounds)}


# ------------------------------------------------------------------ part 2: the CNNs and the matmul peak


def matmul_peak(dtype: torch.dtype, repeats: int = 3) -> float:
    """GFLOP/s of the best of ``repeats`` ``torch.mm`` of two PEAK_SIZE-square matrices."""
    a, b = torch.randn(PEAK_SIZE, PEAK_SIZE).to(dtype), torch.randn(PEAK_SIZE, PEAK_SIZE).to(dtype)
    torch.mm(a, b)  # warm-up: oneDNN/MKL pick and cache their kernel
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - start)
    return 2 * PEAK_SIZE**3 / best / 1e9


class _CnnStep:
    """One preset's model, optimiser, loss and a real MR training batch, ready to step."""

    def __init__(self, preset_name: str, dataset, precision: str):
        preset = get_preset(preset_name)
        dataset = ensure_dev(dataset, fraction=preset.recipe.dev_fraction, seed=preset.recipe.seed)
        prepared = prepare(dataset, preset.inputs, seed=preset.recipe.seed)
        self.recipe = recipe = replace(resolve_recipe(preset.recipe, prepared), precision=precision)
        matrix = prepared.embeddings.matrix if prepared.embeddings is not None else None
        torch.manual_seed(recipe.seed)
        self.model = create_model(replace(preset, recipe=recipe), num_classes=prepared.num_classes,
                                  vocab_size=prepared.pipeline.vocab_size, embeddings=matrix)
        loader = prepared.loader("train", recipe.batch_size, shuffle=True, seed=recipe.seed)
        self.batch = next(iter(loader))
        self.device = torch.device("cpu")
        loss_weights = engine._loss_weights(recipe, False, prepared.num_classes, prepared.class_counts(), loader)
        self.criterion = engine._make_criterion(False, loss_weights, self.device)
        self.optimizer = build_optimizer(self.model, recipe)
        self._step = training_step(self.model, self.optimizer, recipe, device=self.device, loss_weights=loss_weights)
        self.model.train()

    def step(self) -> None:
        self._step(self.batch)

    def flops(self) -> int:
        """FLOPs of one forward + backward (the loss in fp32, as the engine computes it)."""
        with FlopCounterMode(display=False) as counter:
            with engine._autocast(self.recipe.precision, self.device):
                output = self.model(self.batch)
            self.criterion(engine._logits(output).float(), self.batch["labels"]).backward()
        self.optimizer.zero_grad(set_to_none=True)
        return int(counter.get_total_flops())

    def top_ops(self, steps: int = 10, top: int = 8) -> tuple[list, float]:
        """The ops with the most self CPU time over ``steps`` steps (name, share), and the
        share of the ops that multiply matrices (mm, addmm, convolutions)."""
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            for _ in range(steps):
                self.step()
        events = [e for e in prof.key_averages() if e.self_cpu_time_total > 0]
        total = sum(e.self_cpu_time_total for e in events)
        ranked = sorted(events, key=lambda e: -e.self_cpu_time_total)
        matmul = sum(e.self_cpu_time_total for e in events if any(op in e.key for op in MATMUL_OPS))
        return [(e.key, e.self_cpu_time_total / total) for e in ranked[:top]], matmul / total


def cnn_case(preset_name: str, dataset, steps: int, warmup: int) -> dict:
    rows = []
    for precision in PRECISIONS:
        peak = matmul_peak(PEAK_DTYPES[precision])
        case = _CnnStep(preset_name, dataset, precision)
        flops = case.flops()
        for _ in range(warmup):
            case.step()
        times = []
        for _ in range(steps):
            start = time.perf_counter()
            case.step()
            times.append(time.perf_counter() - start)
        median = statistics.median(times)
        top, matmul_share = case.top_ops()
        rows.append({"precision": precision, "batch_size": case.recipe.batch_size,
                     "batch_tokens": int(case.batch["mask"].sum()) if "mask" in case.batch else None,
                     "padded_shape": list(case.batch["input_ids"].shape), "flops_per_step": flops,
                     "step_seconds_median": median, "step_seconds_min": min(times), "steps_timed": steps,
                     "achieved_gflops": flops / median / 1e9, "peak_gflops": peak,
                     "share_of_peak": flops / median / 1e9 / peak, "sentences_per_second": case.recipe.batch_size / median,
                     "profile_top_ops": top, "profile_matmul_share": matmul_share})
        print(f"{preset_name} {precision}: {flops / 1e6:.1f} MFLOP/step, {median * 1e3:.2f} ms, "
              f"{flops / median / 1e9:.1f} GFLOP/s of {peak:.1f} peak", flush=True)
    return {"preset": preset_name, "rows": rows}


# ------------------------------------------------------------------ output


def _markdown(result: dict) -> str:
    m = result["machine"]
    lines = ["# Training speed: fasttext-bag vs fastText, and the CNNs' share of the matmul peak", "",
             f"Command: `{result['command']}` at commit {(result['git'].get('commit') or '?')[:7]}"
             f"{' (with uncommitted changes)' if result['git'].get('dirty') else ''}; torch {result['torch']}, "
             f"{result['threads']} thread.",
             f"CPU: {m.get('cpu_model')} ({m.get('cpus_available')} CPUs available); features: "
             f"{', '.join(f'{k} {v}' for k, v in result['cpu_features'].items())}.",
             f"AMX (amx_bf16 / amx_tile): {'present' if result['cpu_features']['amx_bf16'] else 'absent'}; "
             f"AVX-512 BF16: {'present' if result['cpu_features']['avx512_bf16'] else 'absent'}, so bf16 matmuls "
             f"{'have' if any(result['cpu_features'].get(f) for f in NATIVE_BF16_FLAGS) else 'have no'} "
             "native instructions here.",
             f"The machine is shared (other engineers, background benchmarks at nice 10): load average "
             f"{result['load_before'][0]:.1f} before, {result['load_after'][0]:.1f} after. Absolute rates move with "
             "the load; only the ratios within this run, measured interleaved, mean anything.", ""]
    parts = [part(result[key]) for key, part in (("fasttext", _markdown_fasttext), ("cnn", _markdown_cnn))
             if result[key]]
    lines += [line for i, part in enumerate(parts) for line in ([""] if i else []) + part]
    return "\n".join(lines) + "\n"


def _markdown_fasttext(cases: list[dict]) -> list[str]:
    lines = ["## fasttext-bag vs fastText: training documents per second", "",
             "Training documents x epochs / seconds; fastText: the tutorial's settings (epoch 25, lr 1.0, "
             "wordNgrams 2, dim 100, 2**21 buckets), its whole `train_supervised`; fasttext-bag: the preset as it "
             "ships (fastText's per-document loop since fb324fe, epochs and lr from its recipe rule, 10-d, 2**21 "
             "buckets), its whole "
             "`fit_dataset` (fit) and its training passes alone (passes). Rounds alternate which one trains first; "
             "ratios are per round, then the median.", "",
             "| dataset | seed | fastText docs/s | fastText acc. | bag epochs | bag fit docs/s | bag passes docs/s "
             "| bag acc. | fit ratio | passes ratio |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for case in cases:
        for r in case["rounds"]:
            ft, bag = r["fasttext"], r["fasttext-bag"]
            lines.append(f"| {case['dataset']} | {r['seed']} | {ft['fit_docs_per_second']:,.0f} | "
                         f"{ft['test_accuracy']:.4f} | {bag['epochs']} | {bag['fit_docs_per_second']:,.0f} | "
                         f"{bag['train_pass_docs_per_second']:,.0f} | {bag['test_accuracy']:.4f} | "
                         f"{r['fit_ratio']:.2f} | {r['train_pass_ratio']:.2f} |")
    lines += ["", "| dataset | fit ratio (median) | passes ratio (median) | fastText acc. (mean) | bag acc. (mean) |",
              "|---|---:|---:|---:|---:|"]
    for case in cases:
        s = case["summary"]
        lines.append(f"| {case['dataset']} | {s['fit_ratio_median']:.2f} | {s['train_pass_ratio_median']:.2f} | "
                     f"{s['fasttext_accuracy_mean']:.4f} | {s['bag_accuracy_mean']:.4f} |")
    lines += ["", "Issue 17's target (training docs/s at 50 % or more of fastText's, accuracy at least fastText's):", ""]
    for case in cases:
        s = case["summary"]
        accuracy = "reached" if s["bag_accuracy_mean"] >= s["fasttext_accuracy_mean"] else "below"
        lines.append(f"- {case['dataset']}: passes {'met' if s['train_pass_ratio_median'] >= 0.5 else 'missed'} "
                     f"({s['train_pass_ratio_median']:.2f}), whole fit {'met' if s['fit_ratio_median'] >= 0.5 else 'missed'} "
                     f"({s['fit_ratio_median']:.2f}); accuracy {accuracy} ({s['bag_accuracy_mean']:.4f} vs "
                     f"{s['fasttext_accuracy_mean']:.4f}, mean over the seeds)")
    return lines


def _markdown_cnn(cases: list[dict]) -> list[str]:
    lines = ["## CNN training steps: share of the single-thread matmul peak", "",
             "FLOPs of one forward + backward on a real MR training batch (FlopCounterMode); the median of the "
             "timed whole steps (forward, loss, backward, optimiser step); the peak of `torch.mm` on "
             f"{PEAK_SIZE}x{PEAK_SIZE} matrices in the same dtype, measured just before.", "",
             "| preset | precision | batch x padded length | MFLOP/step | step ms | GFLOP/s | peak GFLOP/s | share of peak "
             "| sentences/s | matmul ops' share of step time |", "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for case in cases:
        for r in case["rows"]:
            lines.append(f"| {case['preset']} | {r['precision']} | {'x'.join(map(str, r['padded_shape']))} | "
                         f"{r['flops_per_step'] / 1e6:.1f} | {r['step_seconds_median'] * 1e3:.2f} | "
                         f"{r['achieved_gflops']:.1f} | {r['peak_gflops']:.1f} | {r['share_of_peak']:.1%} | "
                         f"{r['sentences_per_second']:,.0f} | {r['profile_matmul_share']:.0%} |")
    lines += ["", "Top ops by self CPU time (torch profiler, 10 steps):", ""]
    for case in cases:
        for r in case["rows"]:
            ops = ", ".join(f"{name} {share:.0%}" for name, share in r["profile_top_ops"][:6])
            lines.append(f"- {case['preset']} {r['precision']}: {ops}")
    return lines


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["mr", "20news"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=30, help="timed CNN training steps (median)")
    parser.add_argument("--warmup", type=int, default=5, help="CNN steps before timing")
    parser.add_argument("--parts", nargs="+", choices=("fasttext", "cnn"), default=["fasttext", "cnn"],
                        help="which parts to run (both by default)")
    parser.add_argument("--output", default=str(REPO / "benchmarks" / "results" / "train_speed"))
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    flags = set(cpu_flags())
    load_before = os.getloadavg()
    fasttext, cnn = [], []
    if "fasttext" in args.parts:
        _warm_up(load_dataset(args.datasets[0]))
        fasttext = [fasttext_rounds(name, args.repeats) for name in args.datasets]
    if "cnn" in args.parts:
        mr = load_dataset("mr")
        cnn = [cnn_case(name, mr, args.steps, args.warmup) for name in CNN_PRESETS]
    result = {"command": ("OMP_NUM_THREADS=1 python benchmarks/train_speed.py "
                          + shlex.join(sys.argv[1:] if argv is None else argv)).rstrip(),
              "git": git_info(), "machine": machine_info(), "versions": library_versions(),
              "torch": torch.__version__, "threads": torch.get_num_threads(),
              "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
              "cpu_features": {f: f in flags for f in CPU_FEATURES},
              "load_before": load_before, "load_after": os.getloadavg(), "fasttext": fasttext, "cnn": cnn}
    write_report(Path(args.output), result, _markdown(result))
    print(_markdown(result))


if __name__ == "__main__":
    main()
