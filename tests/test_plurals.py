"""No "(s)" plural in what the project writes for people ("3 candidate(s)"): counts go through
library.formatting.count ("1 candidate", "3 candidates"), or, in procmem_client (which imports
nothing of the server), a plural written out there. Read from the source, nothing is imported.

Checked: every string literal of the server's and the client's Python (f-strings with each
placeholder read as a word, so f"{noun}(s)" is caught too) and every template. Not checked, because
they are not text for people: docstrings and comments, and the patterns given to `re` ("order(s)?").
"http(s)" names a URL scheme, not a count.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TREES = ["library", "reviews", "procmem_site", "bench", "clients/python/procmem_client"]
PLURAL = re.compile(r"(?<!\bhttp)(?<=[A-Za-z])\(s\)")
_REGEX_CALLS = {"compile", "search", "match", "fullmatch", "findall", "finditer", "sub", "subn", "split"}


def _files(suffix: str) -> list[Path]:
    return sorted(
        path for tree in TREES for path in (ROOT / tree).rglob(f"*{suffix}") if "node_modules" not in path.parts
    )


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _regex_arguments(tree: ast.AST) -> set[int]:
    """The literals handed to re.compile, re.sub, … (directly or as an f-string's parts)."""
    found = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in {"re", "regex"}
            and node.func.attr in _REGEX_CALLS
        ):
            for argument in [*node.args, *(k.value for k in node.keywords)]:
                found.update(id(inner) for inner in ast.walk(argument))
    return found


def _texts(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, text) of every string literal; an f-string as one text, its placeholders as "n"."""
    skip = _docstrings(tree) | _regex_arguments(tree)
    texts, parts = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and id(node) not in skip:
            parts.update(id(value) for value in node.values)
            joined = "".join(v.value if isinstance(v, ast.Constant) else "n" for v in node.values)
            texts.append((node.lineno, joined))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip | parts:
            texts.append((node.lineno, node.value))
    return texts


def python_plurals(source: str, name: str = "<source>") -> list[str]:
    tree = ast.parse(source, filename=name)
    return [f"{name}:{line}: {text!r}" for line, text in _texts(tree) if PLURAL.search(text)]


def test_no_parenthesised_plural_in_the_python_sources():
    found = [
        hit
        for path in _files(".py")
        for hit in python_plurals(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    ]
    assert found == [], "write the count with library.formatting.count:\n" + "\n".join(found)


def test_no_parenthesised_plural_in_the_templates():
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in _files(".html")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if PLURAL.search(line)
    ]
    assert found == [], "\n".join(found)


@pytest.mark.parametrize(
    "source, caught",
    [
        ('print(f"{n} candidate(s)")', True),
        ('raise CommandError("%d item(s) refused" % n)', True),
        ('label = f"{noun}(s)"', True),
        ('"""Docstring about order(s)."""', False),
        ("# a comment about session(s)\nx = 1", False),
        ('ORDERS = re.compile(r"\\border(s)?\\b")', False),
        ('msg = "must be an http(s) URL"', False),
        ('header = "| time (s) | sessions/s |"', False),
        ("_tool_call(s)", False),
    ],
)
def test_the_check_tells_plurals_from_code(source, caught):
    assert bool(python_plurals(source)) is caught
