"""The explain pages of docs/explain.md and the README: four attention models (DASA, CSPAN, HAN,
HCAN) trained on fdu_mtl/camera_photo, one review explained by `textcls explain`, and each page
screenshot by headless chromium into docs/img/explain_<preset>.png.

    OMP_NUM_THREADS=1 TEXTCLS_DATA_DIR=... python benchmarks/explain_pages.py

Runs already in runs/explain/<preset> are reused (delete them to retrain). Writes the pages and
PNGs of `textcls explain` to benchmarks/results/explain/<preset>/, and
benchmarks/results/explain/runs.json: the commands, each run's test accuracy and training time,
the machine (benchmark/system.machine_info).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from textcls import artifacts
from textcls.benchmark.system import git_info, machine_info

ROOT = Path(__file__).resolve().parents[1]
PRESETS = ("dasa", "cspan-base", "han-cpu", "hcan-cpu")
DATA = "fdu_mtl/camera_photo"
EPOCHS = 5
TEXTS = ("The pictures are sharp and the battery lasts all day. The zoom is slow and the menus are confusing. "
         "For the price, it is an excellent camera!",
         "The lens cap broke after a week. Customer service never answered my emails, so I returned it.")
WIDTH = 1200
HEIGHT_PROBE = ("<script>document.body.insertAdjacentHTML('beforeend', '<pre id=\"page-height\">' + "
                "document.documentElement.scrollHeight + '</pre>');</script>")


def train_command(preset: str) -> list[str]:
    return ["textcls", "train", "--model", preset, "--data", DATA, "--epochs", str(EPOCHS),
            "--run-dir", f"runs/explain/{preset}", "--no-progress"]


def explain_command(preset: str) -> list[str]:
    return ["textcls", "explain", f"runs/explain/{preset}", *TEXTS, "--output", f"benchmarks/results/explain/{preset}"]


def chromium(*args: str) -> str:
    binary = shutil.which("chromium") or sys.exit("chromium is not installed: apt-get install chromium")
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run([binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                               "--force-device-scale-factor=1", f"--user-data-dir={profile}", *args],
                              capture_output=True, text=True, check=True, timeout=120).stdout


def screenshot(page: Path, png: Path) -> list[str]:
    """Screenshot ``page`` whole (its height measured first by the browser); returns the command."""
    with tempfile.TemporaryDirectory() as folder:
        probe = Path(folder) / page.name
        probe.write_text(page.read_text(encoding="utf-8").replace("</body>", HEIGHT_PROBE + "</body>"), encoding="utf-8")
        # A short window, so that scrollHeight is the page's height, not the window's.
        dom = chromium(f"--window-size={WIDTH},100", "--dump-dom", probe.as_uri())
    height = int(re.search(r'<pre id="page-height">(\d+)</pre>', dom).group(1))
    png.parent.mkdir(parents=True, exist_ok=True)  # chromium does not create it
    args = [f"--window-size={WIDTH},{height}", f"--screenshot={png}", page.as_uri()]
    chromium(*args)
    return ["chromium", "--headless", "--no-sandbox", "--hide-scrollbars", "--force-device-scale-factor=1",
            f"--window-size={WIDTH},{height}", f"--screenshot={png.relative_to(ROOT)}",
            str(page.relative_to(ROOT))]


def main() -> None:
    runs = []
    for preset in PRESETS:
        run = ROOT / "runs" / "explain" / preset
        if not (run / artifacts.CONFIG).is_file():
            subprocess.run(train_command(preset), cwd=ROOT, check=True)
        subprocess.run(explain_command(preset), cwd=ROOT, check=True)
        page = ROOT / "benchmarks" / "results" / "explain" / preset / "explain_1.html"
        shot = screenshot(page, ROOT / "docs" / "img" / f"explain_{preset}.png")
        metrics = artifacts.read_json(run / artifacts.METRICS)
        runs.append({"preset": preset, "train": " ".join(train_command(preset)),
                     "explain": " ".join(explain_command(preset)), "screenshot": " ".join(shot),
                     "test_accuracy": metrics["test"]["accuracy"], "train_seconds": metrics.get("train_seconds"),
                     "best_epoch": metrics.get("best_epoch")})
    report = {"data": DATA, "epochs": EPOCHS, "texts": list(TEXTS), "runs": runs, "git": git_info(ROOT),
              "machine": machine_info()}
    artifacts.write_json(ROOT / "benchmarks" / "results" / "explain" / "runs.json", report)


if __name__ == "__main__":
    main()
