"""The map in ARCHITECTURE.md is true: it names every file of src/, in an order no import runs against.

The map lists the files from the foundation (``errors.py``) to the interfaces (``cli.py``); a file
may import only files listed before it. Every import counts, including those inside functions
(the lazy imports that keep ``textcls --help`` fast) and under ``if TYPE_CHECKING:``. Importing a
package (``from ..data import load_dataset``) counts as importing its ``__init__.py``.
"""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PACKAGE = "textcls"
MAP_FILE = ROOT / "ARCHITECTURE.md"
MAP_HEADING = "## The map"


# ----------------------------------------------------------------------------- the checker


def module_name(path: Path, src: Path = SRC) -> str:
    """``src/textcls/data/catalog.py`` -> ``textcls.data.catalog``; a package's ``__init__.py`` -> the package."""
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_files(src: Path = SRC, package: str = PACKAGE) -> dict[str, Path]:
    """Every module of the package under ``src``, by dotted name."""
    return {module_name(p, src): p for p in sorted((src / package).rglob("*.py"))}


def imports_of(path: Path, name: str, known: set[str]) -> list[tuple[int, str]]:
    """``(line, module)`` for every import in ``path`` of a module in ``known``, wherever it is
    written (module level, inside a function, under ``if TYPE_CHECKING``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package[: len(package) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            # `from pkg import sub` imports the module pkg.sub when there is one, else pkg.
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        for target in targets:
            resolved = _longest_known(target, known)
            if resolved is not None and resolved != name:
                found.append((node.lineno, resolved))
    return sorted(set(found))


def _longest_known(target: str, known: set[str]) -> str | None:
    parts = target.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in known:
            return candidate
        parts.pop()
    return None


def back_imports(order: list[str], graph: dict[str, list[tuple[int, str]]]) -> list[str]:
    """Every import of a module listed at or after the importing one: ``"a (line 3) imports b"``."""
    position = {name: i for i, name in enumerate(order)}
    found = []
    for name in order:
        for line, target in graph.get(name, ()):
            if position[target] >= position[name]:
                found.append(f"{name} (line {line}) imports {target}, which the map lists after it")
    return found


def map_paths(text: str) -> list[str]:
    """The file paths of the map: the first code block after ``## The map``, one file a line
    (its first word; lines that start with a space continue the line above, ``#`` lines are headers)."""
    section = text.split(MAP_HEADING, 1)[1]
    block = re.search(r"```[a-z]*\n(.*?)```", section, re.S).group(1)
    paths = []
    for line in block.splitlines():
        if not line.strip() or line[0].isspace() or line.startswith("#"):
            continue
        paths.append(line.split()[0])
    return paths


def map_order(text: str, package: str = PACKAGE) -> list[str]:
    """The map's paths (relative to ``src/<package>/``) as module names, in the map's order."""
    return [module_name(Path("src", package, p), Path("src")) for p in map_paths(text)]


# ----------------------------------------------------------------------------- the real code


@pytest.fixture(scope="module")
def order():
    return map_order(MAP_FILE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def files():
    return source_files()


def test_the_map_names_every_file_of_src_once(order, files):
    doubled = sorted({m for m in order if order.count(m) > 1})
    assert not doubled, f"ARCHITECTURE.md names these twice: {doubled}"
    missing = sorted(set(files) - set(order))
    assert not missing, f"ARCHITECTURE.md's map does not name: {[str(files[m].relative_to(SRC)) for m in missing]}"
    gone = sorted(set(order) - set(files))
    assert not gone, f"ARCHITECTURE.md's map names files that do not exist: {gone}"


def test_no_import_runs_back_up_the_map(order, files):
    known = set(files)
    graph = {name: imports_of(path, name, known) for name, path in files.items()}
    assert back_imports(order, graph) == []


# ----------------------------------------------------------------------------- the checker itself


def _write_package(tmp_path: Path, modules: dict[str, str]) -> dict[str, Path]:
    for rel, body in modules.items():
        path = tmp_path / "pkg" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(body), encoding="utf-8")
    return source_files(tmp_path, "pkg")


def test_the_checker_catches_a_deliberate_back_import(tmp_path):
    files = _write_package(tmp_path, {
        "__init__.py": "",
        "errors.py": "",
        "low/__init__.py": "from .base import Base\n",
        "low/base.py": "from ..errors import *\n",
        "low/lazy.py": """
            from .base import Base

            def load():
                from ..high import api  # a lazy back-import: still a back-import
                return api
            """,
        "high/__init__.py": "",
        "high/api.py": "import pkg.low.base\nfrom pkg.low import lazy\nfrom .. import errors\n",
    })
    known = set(files)
    graph = {name: imports_of(path, name, known) for name, path in files.items()}
    assert graph["pkg.low.lazy"] == [(2, "pkg.low.base"), (5, "pkg.high.api")]
    assert graph["pkg.high.api"] == [(1, "pkg.low.base"), (2, "pkg.low.lazy"), (3, "pkg.errors")]
    assert graph["pkg.low"] == [(1, "pkg.low.base")]
    order = ["pkg", "pkg.errors", "pkg.low.base", "pkg.low", "pkg.low.lazy", "pkg.high", "pkg.high.api"]
    assert back_imports(order, graph) == [
        "pkg.low.lazy (line 5) imports pkg.high.api, which the map lists after it"]
    # Without the lazy import the same order is clean; listing a module before what it imports is not.
    graph["pkg.low.lazy"] = graph["pkg.low.lazy"][:1]
    assert back_imports(order, graph) == []
    swapped = ["pkg", "pkg.errors", "pkg.low", "pkg.low.base", "pkg.low.lazy", "pkg.high", "pkg.high.api"]
    assert back_imports(swapped, graph) == ["pkg.low (line 1) imports pkg.low.base, which the map lists after it"]


def test_a_back_import_added_to_the_real_code_fails(order, files):
    known = set(files)
    graph = {name: imports_of(path, name, known) for name, path in files.items()}
    graph["textcls.errors"] = [(1, "textcls.cli")]  # errors.py importing the CLI
    assert back_imports(order, graph) == ["textcls.errors (line 1) imports textcls.cli, which the map lists after it"]


def test_the_map_is_read_line_by_line():
    text = textwrap.dedent("""\
        # x

        ## The map

        ```
        # foundation
        errors.py        one-line errors
                         (continued)
        data/__init__.py facade
        ```
        """)
    assert map_paths(text) == ["errors.py", "data/__init__.py"]
    assert map_order(text) == ["textcls.errors", "textcls.data"]
