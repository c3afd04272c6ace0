"""Which files of a repository a task's words point to, learned from what sessions of its other tasks
saw (pure Python, no model, no Django).

A family's pointer names the files its resolved sessions edited. In a repository where tasks seldom
edit the same file twice (sympy: a session's edited file was edited by another resolved session in 19
of 54) those lists cannot name the next task's file; but the sessions *saw* far more of the
repository than they edited: ``grep -rn "class Rational" sympy`` prints
``sympy/core/numbers.py:1483:class Rational(Number):``, ``cat sympy/core/numbers.py`` prints the
definitions it holds, tracebacks print paths. `observations` reads a session's stored tool calls (the
command and the head of its output, as import keeps them) for

- the source files it named (in a command or an output), and
- the symbols it saw defined in a file: a grep line ``path:NN:class Name`` / ``path:def name``, or a
  ``class``/``def`` line in the output of a command that printed one file (``cat``, ``sed -n``,
  ``head``, ``tail``, ``nl``).

`FileIndex` pools the observations of a set of sessions (a repository's, the task's own left out by
the caller) and ranks its known source files for a task text: each identifier the task writes (of at
least MIN_LETTERS letters, compared whole and case-sensitively: ``Rational``, ``Point3D``,
``_print_Pow``) adds its IDF over the known files, log(1 + files / files defining it), to every file
seen defining it; a known file the task names by path (``sympy/core/numbers.py``) or module
(``sympy.core.numbers``) adds PATH_WEIGHT. The recall pointer names the first TASK_FILES of them
before the family's own files (procmem_client.coding.recall_pointer's ``task_files``). The
parameters were chosen leaving one repository out (docs/mining.md).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from procmem_client.coding import target_role

TASK_FILES = 6  # files a pointer names for the task, before the family's own
MIN_LETTERS = 4  # shorter identifiers (``S``, ``Add``, ``arg``) name too many files to point anywhere
PATH_WEIGHT = 3.0  # a known file the task names by path or module

_PATH_RE = re.compile(r"(?<![\w.])((?:[\w.-]+/)+[\w-]+\.py)\b")
_MODULE_RE = re.compile(r"\b([a-z_]\w*(?:\.[a-z_]\w*)+)\b")
_GREP_DEF_RE = re.compile(r"^(?:\./)?((?:[\w.-]+/)+[\w-]+\.py):(?:\d+[:-])?\s*(?:class|def)\s+([A-Za-z_]\w*)", re.M)
_DEF_RE = re.compile(r"^\s*(?:\d+\s+)?(?:class|def)\s+([A-Za-z_]\w*)", re.M)
_PRINTS_FILE_RE = re.compile(
    r"^\s*(?:cd /testbed && )?(?:cat|sed -n \S+|head(?: -n ?\d+| -\d+)?|tail(?: -n ?\d+)?|nl(?: -ba)?)\s+"
    r"((?:[\w.-]+/)+[\w-]+\.py)"
)
_IDENTIFIER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _path(raw: str) -> str:
    return raw.removeprefix("/testbed/").removeprefix("./").removeprefix("testbed/")


def _source(path: str) -> bool:
    return target_role(path) == "source"


@dataclass
class Observations:
    """What one session saw: the source files it named, the symbols it saw defined in them."""

    files: set[str] = field(default_factory=set)
    definitions: dict[str, set[str]] = field(default_factory=dict)


def observations(calls: Sequence[Mapping[str, Any]]) -> Observations:
    """The source files a session's tool calls named and the definitions their outputs showed."""
    seen = Observations()
    definitions: dict[str, set[str]] = defaultdict(set)
    for call in calls:
        args = call.get("args") if isinstance(call, Mapping) else None
        if not isinstance(args, Mapping):
            continue
        command = args.get("command") if isinstance(args.get("command"), str) else ""
        output = args.get("output") if isinstance(args.get("output"), str) else ""
        for raw in _PATH_RE.findall(command) + _PATH_RE.findall(output):
            path = _path(raw)
            if _source(path):
                seen.files.add(path)
        for raw, name in _GREP_DEF_RE.findall(output):
            path = _path(raw)
            if _source(path):
                definitions[name].add(path)
        printed = _PRINTS_FILE_RE.match(command)
        if printed and output:
            path = _path(printed.group(1))
            if _source(path):
                for name in _DEF_RE.findall(output):
                    definitions[name].add(path)
    seen.definitions = dict(definitions)
    seen.files.update(path for paths in definitions.values() for path in paths)
    return seen


class FileIndex:
    """The pooled observations of some sessions: `files_for(task)` ranks their source files for a task."""

    def __init__(
        self,
        seen: Iterable[Observations],
        *,
        edited: Iterable[str] = (),
        min_letters: int = MIN_LETTERS,
        path_weight: float = PATH_WEIGHT,
    ) -> None:
        definitions: dict[str, set[str]] = defaultdict(set)
        files: set[str] = {path for path in edited if _source(path)}
        for one in seen:
            files |= one.files
            for name, paths in one.definitions.items():
                definitions[name] |= paths
        self.files = files
        self.definitions = dict(definitions)
        self.min_letters = min_letters
        self.path_weight = path_weight

    def scores(self, task: str) -> dict[str, float]:
        count = max(1, len(self.files))
        score: dict[str, float] = defaultdict(float)
        for name in set(_IDENTIFIER_RE.findall(task or "")):
            if len(name) < self.min_letters:
                continue
            paths = self.definitions.get(name)
            if paths:
                weight = math.log(1 + count / len(paths))
                for path in paths:
                    score[path] += weight
        named = {_path(raw) for raw in _PATH_RE.findall(task or "")}
        named |= {module.replace(".", "/") + ".py" for module in _MODULE_RE.findall(task or "")}
        for path in named & self.files:
            score[path] += self.path_weight
        return dict(score)

    def files_for(self, task: str, limit: int = TASK_FILES) -> list[str]:
        """The known source files the task's identifiers and paths point to, best first (ties by path)."""
        ranked = sorted(self.scores(task).items(), key=lambda item: (-item[1], item[0]))
        return [path for path, _score in ranked[: max(0, limit)]]
