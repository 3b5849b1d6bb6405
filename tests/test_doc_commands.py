"""Every ``textcls`` command line the documentation shows parses with the CLI as it is.

The README, ARCHITECTURE.md and docs/ show commands in fenced blocks and inline code. A renamed
option, a new required one (``textcls speed`` gained ``-o``) or a value of the wrong type makes a copied
command fail, and nothing else would notice. Each command is parsed by the CLI's own parser,
without running it. Lines that are a synopsis or carry placeholders (``<run>``, ``...``,
``[--opset N]``) and bare command names in prose (``textcls predict``) are not commands to copy,
and are left out.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import typer

from textcls.cli import app

ROOT = Path(__file__).resolve().parents[1]
DOC_FILES = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", *sorted((ROOT / "docs").rglob("*.md"))]
ENV_PREFIX = r"(?:[A-Z_][A-Z0-9_]*=\S+\s+)*"
PLACEHOLDERS = ("<", "...", "\u2026", " [")


def documented_commands(text: str) -> list[tuple[int, str]]:
    """``(line, command)`` for each ``textcls ...`` in a fenced block or an inline code span;
    a fenced command continued with ``\\`` is joined, an environment prefix dropped."""
    found, fenced = [], False
    lines = text.splitlines()
    for number, line in enumerate(lines, 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            command, following = line.strip(), number
            while command.endswith("\\") and following < len(lines):
                command = command[:-1] + " " + lines[following].strip()
                following += 1
            match = re.match(rf"^{ENV_PREFIX}(textcls\s.*)$", command)
            if match:
                found.append((number, match.group(1)))
        else:
            found += [(number, m.group(1)) for m in re.finditer(rf"`{ENV_PREFIX}(textcls [^`]+)`", line)]
    return found


def command_arguments(command: str) -> list[str] | None:
    """The arguments after ``textcls`` of one shell command (comment, pipe, chain and
    redirection cut off), or None for a synopsis, a placeholder or a bare command name."""
    command = re.sub(r"\s+#.*$", "", command)
    for separator in (" | ", " && ", " ; ", " > ", " 2>"):
        command = command.split(separator)[0]
    if any(mark in command for mark in PLACEHOLDERS):
        return None
    arguments = shlex.split(command)[1:]
    return arguments if len(arguments) >= 2 and not arguments[0].startswith("-") else None


def parse_error(arguments: list[str]) -> str | None:
    """What the CLI's parser says against these arguments, or None when they parse."""
    group = typer.main.get_command(app)
    parent = group.make_context("textcls", [], resilient_parsing=True)
    command = group.get_command(parent, arguments[0])
    if command is None:
        return f"no command {arguments[0]!r}"
    try:
        command.make_context(arguments[0], arguments[1:], parent=parent)
    except Exception as error:  # click's exceptions, which typer vendors under its own module
        if type(error).__name__ == "Exit":
            return None
        if not hasattr(error, "format_message"):
            raise
        return error.format_message()
    return None


def doc_errors(path: Path) -> list[str]:
    errors = []
    for number, command in documented_commands(path.read_text(encoding="utf-8")):
        arguments = command_arguments(command)
        error = arguments and parse_error(arguments)
        if error:
            errors.append(f"{path.relative_to(ROOT)}:{number}: {command}\n    -> {error}")
    return errors


@pytest.mark.parametrize("path", DOC_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_documented_commands_parse(path):
    assert doc_errors(path) == []


def test_the_docs_show_commands_to_check():
    shown = [c for path in DOC_FILES for _, c in documented_commands(path.read_text(encoding="utf-8"))]
    assert sum(command_arguments(c) is not None for c in shown) >= 50


def test_checker_catches_a_missing_required_option_an_unknown_option_and_a_bad_value(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text(
        "Run `OMP_NUM_THREADS=1 textcls speed -m fcsr -l 64` and\n"
        "```bash\n"
        "textcls train -m kim-cnn-rand --data mr \\\n"
        "    --no-such-option 3   # a comment\n"
        "textcls train -m kim-cnn-rand --data mr --epochs many\n"
        "textcls export RUN --format onnx [--opset N] --output DIR\n"
        "textcls predict <run> \"a text\"\n"
        "```\n"
        "and `textcls predict` on its own in prose.\n", encoding="utf-8")
    commands = documented_commands(doc.read_text(encoding="utf-8"))
    assert [number for number, _ in commands] == [1, 3, 5, 6, 7, 9]
    assert [command_arguments(c) is not None for _, c in commands] == [True, True, True, False, False, False]
    errors = [parse_error(command_arguments(c)) for _, c in commands[:3]]
    assert "--output" in errors[0]
    assert "--no-such-option" in errors[1]
    assert "--epochs" in errors[2] and "integer" in errors[2]
    assert parse_error(["train", "-m", "kim-cnn-rand", "--data", "mr", "--epochs", "3"]) is None
    assert parse_error(["no-such-command", "x"]) == "no command 'no-such-command'"
