"""No function in src/ is longer than a screen (80 lines), except the few listed here with why.

A function's length runs from its ``def`` line to its last line (docstring and comments
included, decorators not). Cut a long function into steps that each fit on a screen; add it to
``ALLOWED`` only with a comment that says why it reads better whole.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "textcls"
MAX_LINES = 80

# "<path under src/textcls>:<function>" -> the longest it may be.
ALLOWED: dict[str, int] = {}


def function_lengths(root: Path = SRC) -> dict[str, int]:
    """``{"<file>:<qualified name>": lines}`` for every function and method under ``root``."""
    lengths = {}
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        _visit(tree, path.relative_to(root).as_posix(), "", lengths)
    return lengths


def _visit(node: ast.AST, where: str, prefix: str, out: dict[str, int]) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = prefix + child.name
            out[f"{where}:{name}"] = child.end_lineno - child.lineno + 1
            _visit(child, where, name + ".", out)
        elif isinstance(child, ast.ClassDef):
            _visit(child, where, prefix + child.name + ".", out)
        else:
            _visit(child, where, prefix, out)


def test_no_function_is_longer_than_a_screen():
    lengths = function_lengths()
    too_long = {name: n for name, n in lengths.items() if n > ALLOWED.get(name, MAX_LINES)}
    assert not too_long, f"functions over {MAX_LINES} lines (cut them into steps): {too_long}"


def test_the_allow_list_names_functions_that_exist():
    lengths = function_lengths()
    assert not [name for name in ALLOWED if name not in lengths]


def test_the_counter_counts_methods_and_nested_functions(tmp_path):
    (tmp_path / "m.py").write_text(
        "class A:\n"
        "    def f(self):\n"
        "        def g():\n"
        "            return 1\n"
        "        return g()\n"
        "\n"
        "def h(\n"
        "    x,\n"
        "):\n"
        "    return x\n",
        encoding="utf-8",
    )
    assert function_lengths(tmp_path) == {"m.py:A.f": 4, "m.py:A.f.g": 2, "m.py:h": 4}
