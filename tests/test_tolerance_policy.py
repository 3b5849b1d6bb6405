"""No float tolerance in the tests is tighter than float32 allows (issue: the README's test
command failed on Intel Xeon because one check allowed 1e-7 at 1.0, under one ulp).

Any ``atol``/``rtol``/``abs``/``rel`` constant below ``tolerance.FEW_OPS`` (16 float32 ulps)
must compare float64 values, and say so with a ``# float64`` comment on its line or the line
before.
"""

import ast
from pathlib import Path

from tolerance import FEW_OPS

TESTS = Path(__file__).resolve().parent
FLOOR = FEW_OPS["rtol"]
KEYWORDS = {"atol", "rtol", "abs", "rel"}


def tight_tolerances(source: str) -> list[tuple[int, str, float]]:
    """(line, keyword, value) of every positive tolerance constant below the float32 floor
    whose line (or the line before) does not say ``# float64``."""
    lines = source.split("\n")
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        for kw in node.keywords:
            if kw.arg in KEYWORDS and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, (int, float)):
                value = float(kw.value.value)
                if 0 < value < FLOOR:
                    here = lines[kw.value.lineno - 1]
                    before = lines[kw.value.lineno - 2] if kw.value.lineno > 1 else ""
                    if "# float64" not in here and "# float64" not in before:
                        found.append((kw.value.lineno, kw.arg, value))
    return found


def test_the_checker_flags_a_sub_ulp_float32_tolerance_and_accepts_a_float64_one():
    bad = "torch.testing.assert_close(a, b, atol=1e-7, rtol=0)\n"
    assert tight_tolerances(bad) == [(1, "atol", 1e-7)]
    marked = "# float64: Python floats on both sides\nassert x == pytest.approx(y, rel=1e-12)\n"
    assert tight_tolerances(marked) == []
    assert tight_tolerances("torch.testing.assert_close(a, b, atol=1e-5, rtol=0)\n") == []


def test_no_test_uses_a_tolerance_below_float32_precision():
    offenders = [f"{path.name}:{line} {kw}={value:g}"
                 for path in sorted(TESTS.glob("*.py"))
                 for line, kw, value in tight_tolerances(path.read_text())]
    assert offenders == [], "tolerances tighter than float32 allows (see tests/tolerance.py): " + ", ".join(offenders)
