"""What a benchmark ran on: git commit, library versions, CPU, threads, peak memory.

Everything here is best effort and never raises: a missing ``git`` or an unreadable
``/proc/cpuinfo`` gives ``None`` in the report, not a failed benchmark.
"""

from __future__ import annotations

import os
import platform
import resource
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from ..hardware import cpu_flags, cpuinfo_fields

# Distribution names on PyPI, keyed by the name the report shows.
LIBRARIES = {
    "textcls": "textcls",
    "torch": "torch",
    "numpy": "numpy",
    "sklearn": "scikit-learn",
    "datasets": "datasets",
    "tokenizers": "tokenizers",
    "fasttext": "fasttext",
    "sentence-transformers": "sentence-transformers",
    "transformers": "transformers",
    "matplotlib": "matplotlib",
}


def _git(args: list[str], cwd: Path) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def source_dir() -> Path:
    """The folder the running textcls package was imported from."""
    return Path(__file__).resolve().parents[1]


def git_info(cwd: str | Path | None = None) -> dict:
    """``{"commit", "dirty", "changed_files"}`` of the repository holding the textcls sources.

    ``dirty`` counts changes to tracked files only: untracked files (results, runs) are
    not code that the commit fails to describe. ``commit`` is None outside a git checkout
    (a wheel install).
    """
    cwd = Path(cwd) if cwd is not None else source_dir()
    commit = _git(["rev-parse", "HEAD"], cwd)
    if commit is None:
        return {"commit": None, "dirty": None, "changed_files": None}
    status = _git(["status", "--porcelain", "--untracked-files=no"], cwd) or ""
    changed = [line for line in status.split("\n") if line.strip()]
    return {"commit": commit.strip(), "dirty": bool(changed), "changed_files": len(changed)}


def library_versions() -> dict:
    """Installed versions of the libraries a result depends on (None = not installed)."""
    versions = {"python": platform.python_version()}
    for shown, dist in LIBRARIES.items():
        try:
            versions[shown] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[shown] = None
    return versions


def cpu_model() -> str | None:
    """The CPU's marketing name from /proc/cpuinfo (Linux), else what platform reports."""
    return cpuinfo_fields().get("model name") or platform.processor() or None


def cpu_generation() -> str | None:
    """The vendor, family and model numbers ("AuthenticAMD family 26 model 2"), or None off Linux.
    A virtual machine may show one marketing name for several generations (this workplace's
    "AMD EPYC" is a Zen 3 on some machines and a Zen 5 on others, family 25 and 26), and their
    seconds do not compare, so a benchmark records the numbers beside the name."""
    fields = cpuinfo_fields()
    if "cpu family" not in fields:
        return None
    return f"{fields.get('vendor_id', 'unknown vendor')} family {fields['cpu family']} model {fields.get('model', '?')}"


# The vector extensions that decide which kernels PyTorch and oneDNN run: the CPUs here differ
# (AMD EPYC with AVX2, Intel Xeon with AVX-512 and, on some, AMX, where bf16 matmul is several
# times faster), so every benchmark records which of them the machine has.
SIMD_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16",
              "amx_tile", "amx_bf16", "amx_int8")


def cpu_simd() -> list[str]:
    """The SIMD_FLAGS this CPU reports, in that order."""
    flags = set(cpu_flags())
    return [f for f in SIMD_FLAGS if f in flags]


def available_cpus() -> int:
    """CPUs this process may run on (the affinity mask, which containers restrict)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def total_memory_gb() -> float | None:
    try:
        with open("/proc/meminfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024**2, 1)
    except (OSError, ValueError):
        pass
    return None


def machine_info() -> dict:
    return {
        "cpu_model": cpu_model(),
        "cpu_generation": cpu_generation(),
        "cpu_simd": cpu_simd(),
        "cpu_count": os.cpu_count(),
        "cpus_available": available_cpus(),
        "memory_gb": total_memory_gb(),
        "platform": platform.platform(),
        "hostname": platform.node(),
    }


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MiB (ru_maxrss)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports kibibytes, macOS bytes.
    return peak / (1024**2 if sys.platform == "darwin" else 1024)


def device_name(device: str) -> str:
    """What a run trained on: ``"cpu"``, or the accelerator's name (``"cuda: NVIDIA H100 80GB HBM3"``),
    so a result says whether its speed figures are comparable with the CPU runs beside it."""
    if not str(device).startswith("cuda"):
        return str(device)
    import torch

    return f"{device}: {torch.cuda.get_device_name(torch.device(device))}"


def die_with_parent(parent_pid: int) -> None:
    """Have the kernel kill this process when ``parent_pid`` (its parent) dies (Linux'
    ``PR_SET_PDEATHSIG``; elsewhere nothing), so that a benchmark stopped by killing its
    process leaves no run training on: an orphan would hold a core and keep writing the
    checkpoint that the run made again resumes from. SIGKILL, as a checkpoint is written
    atomically and needs no cleanup. The kernel watches the thread that started the child,
    which must outlive it (``runner._run_in_child`` waits for the child in that thread)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    pr_set_pdeathsig = 1
    try:
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGKILL))
    except (OSError, AttributeError):  # no prctl in this libc: nothing to arrange
        return
    if os.getppid() != parent_pid:  # the parent died before the request took effect
        os._exit(1)
