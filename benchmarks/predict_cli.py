"""``textcls predict`` from a shell: start-up time, and peak memory on a 1 GB stdin stream.

    python benchmarks/predict_cli.py [--run DIR] [--gigabytes 1.0] [--repeats 10]

With a fasttext-bag run on MR (trained here with ``textcls train -m fasttext-bag -d mr`` unless
given with ``--run``):

1. **start-up**: the wall clock of ``textcls predict RUN "one text"`` as a shell runs it (a new
   process each time, ``--repeats`` times), beside ``python -c "import torch"`` and
   ``python -c "pass"`` timed the same way; and one ``python -X importtime`` of the predict
   command: the modules it loaded and the slowest imports;
2. **stream**: ``/usr/bin/time -v textcls predict RUN --input -`` fed ``--gigabytes`` of MR
   sentences (cycled) on stdin while its output is read and counted: every line answered,
   peak resident memory ("Maximum resident set size") and wall clock.

Writes ``benchmarks/results/predict_cli.{json,md}`` with the command and the machine. The
machine is shared: the load average is recorded beside the timings.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

from textcls.artifacts import atomic_write_bytes
from textcls.benchmark import system

RESULTS = Path(__file__).resolve().parent / "results"
TEXT = "a gorgeous, witty, seductive movie."


def _wall(args: list[str], repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run(args, check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return times


def startup(run: Path, repeats: int) -> dict:
    textcls = [sys.executable, "-m", "textcls.cli"]
    predict = _wall(textcls + ["predict", str(run), TEXT], repeats)
    torch_import = _wall([sys.executable, "-c", "import torch"], repeats)
    api_import = _wall([sys.executable, "-c", "import textcls.api"], repeats)  # the Classifier: torch, scikit-learn, datasets
    bare = _wall([sys.executable, "-c", "pass"], repeats)
    out = subprocess.run([sys.executable, "-X", "importtime", "-m", "textcls.cli", "predict", str(run), TEXT],
                         check=True, capture_output=True, text=True)
    rows = [re.match(r"import time:\s+(\d+) \|\s+(\d+) \| (\s*)(\S+)", line) for line in out.stderr.splitlines()]
    rows = [(m.group(4), int(m.group(2)) / 1e6, len(m.group(3)) // 2) for m in rows if m]
    loaded = {name for name, _, _ in rows}
    heavy = ("torch", "sklearn", "datasets", "matplotlib", "scipy", "pandas", "textcls.benchmark")
    return {"command": f"textcls predict RUN {shlex.quote(TEXT)}", "repeats": repeats,
            "predict_seconds": predict, "predict_median_s": statistics.median(predict),
            "import_torch_median_s": statistics.median(torch_import),
            "import_textcls_api_median_s": statistics.median(api_import), "python_bare_median_s": statistics.median(bare),
            "slowest_top_level_imports": sorted(((n, s) for n, s, depth in rows if depth == 0), key=lambda r: -r[1])[:8],
            "imported_of_heavy": sorted(h for h in heavy if h in loaded), "prediction": out.stdout.strip()}


def stream(run: Path, gigabytes: float) -> dict:
    from textcls import load_dataset

    dataset = load_dataset("mr")
    lines = [(t + "\n").encode() for t in list(dataset["train"]["text"]) + list(dataset["test"]["text"])]
    target = int(gigabytes * 1e9)
    child = subprocess.Popen(["/usr/bin/time", "-v", sys.executable, "-m", "textcls.cli", "predict", str(run),
                              "--input", "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    sent = {"bytes": 0, "lines": 0}

    def feed():
        block, i = [], 0
        while sent["bytes"] < target:
            line = lines[i % len(lines)]
            block.append(line)
            sent["bytes"] += len(line)
            sent["lines"] += 1
            i += 1
            if len(block) == 4096:
                child.stdin.write(b"".join(block))
                block = []
        child.stdin.write(b"".join(block))
        child.stdin.close()

    started = time.perf_counter()
    writer = threading.Thread(target=feed)
    writer.start()
    answered = out_bytes = 0
    last = b""
    for chunk in iter(lambda: child.stdout.read(1 << 20), b""):
        answered += chunk.count(b"\n")
        out_bytes += len(chunk)
        last = chunk[-300:]
    writer.join()
    err = child.stderr.read().decode()
    code = child.wait()
    seconds = time.perf_counter() - started
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", err)
    return {"command": "textcls predict RUN --input - < (MR sentences, cycled)", "exit_code": code,
            "input_bytes": sent["bytes"], "input_lines": sent["lines"], "output_lines": answered,
            "output_bytes": out_bytes, "every_line_answered": answered == sent["lines"],
            "peak_rss_mb": int(peak.group(1)) / 1024 if peak else None, "wall_seconds": seconds,
            "lines_per_second": sent["lines"] / seconds, "last_output": last.decode(errors="replace").splitlines()[-1:],
            "stderr_tail": err.strip().splitlines()[-3:] if code else []}


def _when(part: dict) -> str:
    return (f"Command: `{part['script_command']}`, {part['date']}; load average {part['load_average_before'][0]:.1f} "
            f"before, {part['load_average_after'][0]:.1f} after (2 CPUs).\n")


def markdown(result: dict) -> str:
    lines = ["# `textcls predict` from a shell: start-up and a 1 GB stream", "",
             f"Commit {(result['git'].get('commit') or '?')[:10]}; {result['machine']['cpu_model']}, "
             f"{result['machine']['cpus_available']} CPUs, shared with other work (the load averages below). Run: "
             f"fasttext-bag trained on MR ({result['run']}).", ""]
    if "startup" in result:
        lines += _startup_markdown(result["startup"])
    m = result.get("stream")
    if m:
        lines += ["", "## A 1 GB stream on stdin", "", _when(m),
                  f"`/usr/bin/time -v {m['command']}`: {m['input_bytes'] / 1e9:.2f} GB, {m['input_lines']:,} lines in; "
                  f"{m['output_lines']:,} JSON lines out (every line answered: {m['every_line_answered']}); exit "
                  f"{m['exit_code']}. Peak resident memory **{m['peak_rss_mb']:.0f} MiB**; {m['wall_seconds']:.0f} s "
                  f"({m['lines_per_second']:,.0f} lines/s, JSON output included)."]
    return "\n".join(lines) + "\n"


def _startup_markdown(s: dict) -> list[str]:
    lines = ["## Start-up", "", _when(s),
             f"`{s['command']}`, a new process each time, {s['repeats']} times: median **{s['predict_median_s']:.2f} s** "
             f"(min {min(s['predict_seconds']):.2f} s, max {max(s['predict_seconds']):.2f} s). Beside it, "
             f"`python -c \"import torch\"`: {s['import_torch_median_s']:.2f} s; `python -c \"import textcls.api\"` (the "
             f"Classifier: torch, scikit-learn, datasets): {s['import_textcls_api_median_s']:.2f} s; `python -c pass`: "
             f"{s['python_bare_median_s']:.2f} s.", "",
             f"Heavy libraries the predict command imported: {', '.join(s['imported_of_heavy']) or 'none'} "
             "(checked: torch, scikit-learn, scipy, datasets, pandas, matplotlib, the benchmark code).", "",
             "Slowest top-level imports (`python -X importtime`, cumulative s):", ""]
    return lines + [f"- `{name}`: {seconds:.3f}" for name, seconds in s["slowest_top_level_imports"]]


def _measured(part: dict, load_before, command: str) -> dict:
    """A part of the result with its own date, command and load average (parts are rerun alone)."""
    return {**part, "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "script_command": command,
            "load_average_before": list(load_before), "load_average_after": list(os.getloadavg())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, help="a fasttext-bag run (default: trained here on MR)")
    parser.add_argument("--gigabytes", type=float, default=1.0, help="0: no stream (keep the last one's result)")
    parser.add_argument("--repeats", type=int, default=10, help="0: no start-up timing (keep the last one's result)")
    args = parser.parse_args()
    command = "python benchmarks/predict_cli.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    path = RESULTS / "predict_cli.json"
    result = json.loads(path.read_text()) if path.is_file() else {}
    with tempfile.TemporaryDirectory(prefix="textcls-predict-cli-") as tmp:
        run = args.run
        if run is None:
            run = Path(tmp) / "fasttext-bag_mr"
            subprocess.run([sys.executable, "-m", "textcls.cli", "train", "-m", "fasttext-bag", "-d", "mr",
                            "--run-dir", str(run), "--no-progress"], check=True, capture_output=True)
        result.update({"git": system.git_info(), "machine": system.machine_info(), "versions": system.library_versions(),
                       "run": "given" if args.run else "textcls train -m fasttext-bag -d mr"})
        if args.repeats > 0:
            load = os.getloadavg()
            result["startup"] = _measured(startup(run, args.repeats), load, command)
            print(json.dumps(result["startup"], indent=1), flush=True)
        if args.gigabytes > 0:
            load = os.getloadavg()
            result["stream"] = _measured(stream(run, args.gigabytes), load, command)
    atomic_write_bytes(path, (json.dumps(result, indent=1) + "\n").encode())
    atomic_write_bytes(RESULTS / "predict_cli.md", markdown(result).encode())
    print(markdown(result))


if __name__ == "__main__":
    main()
