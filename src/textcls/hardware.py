"""What the CPU can do, read once from the operating system (no torch).

The machines vary (AMD EPYC with AVX2 and, on Zen 4, AVX-512 BF16; Intel Xeon with AVX-512 and,
on some, AMX), and whether bf16 pays depends on it: with native bf16 matmul instructions
(AMX or AVX-512 BF16) bf16 autocast made the CNNs' training steps 1.1-1.5x faster
(benchmarks/results/train_speed_cnn_amd.md; with AMX 1.06-1.31x, though its bf16 matmul peak
is 6x fp32's: train_speed_cnn_amx.md), without them 1.6-2.2x slower (train_speed.md).
"""

from __future__ import annotations

import functools
from pathlib import Path

# CPU flags (Linux /proc/cpuinfo names) of native bf16 matrix instructions.
NATIVE_BF16_FLAGS = ("amx_bf16", "avx512_bf16")


CPUINFO = Path("/proc/cpuinfo")


def cpuinfo_fields() -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo (Linux), keys lower-cased; {} elsewhere."""
    fields: dict[str, str] = {}
    try:
        with open(CPUINFO, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if not line.strip():
                    break
                key, sep, value = line.partition(":")
                if sep:
                    fields[key.strip().lower()] = value.strip()
    except OSError:
        pass
    return fields


@functools.lru_cache(maxsize=1)
def cpu_flags() -> tuple[str, ...]:
    """The flags of the first CPU in /proc/cpuinfo (Linux); () elsewhere."""
    return tuple(cpuinfo_fields().get("flags", "").split())


def cpu_has_native_bf16() -> bool:
    """Whether the CPU multiplies bf16 matrices in hardware (AMX or AVX-512 BF16)."""
    return any(flag in cpu_flags() for flag in NATIVE_BF16_FLAGS)
