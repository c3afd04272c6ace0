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
the caller); its ranking for a task text is the client's (procmem_client.task_files.TaskFileIndex, one
implementation for the server, the client's local ranking and the measure). The recall pointer names
the first TASK_FILES of them before the family's own files (`task_pointer`).

Only repository-relative source paths and Python identifiers are kept (promise 4: nothing personal
leaves the server): a path written absolute outside the checkout (``/home/alice/…``, ``~/…``,
``/usr/lib/python3/…``), relative above it (``../``), or through a hidden, virtualenv or
site-packages directory is not the repository's and is dropped (`repository_path`).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from procmem_client.coding import target_role
from procmem_client.task_files import MIN_LETTERS, PATH_RE, PATH_WEIGHT, TASK_FILES, TaskFileIndex, checkout_path

__all__ = ["MIN_LETTERS", "PATH_WEIGHT", "TASK_FILES", "FileIndex", "Observations", "observations", "repository_path"]

_GREP_DEF_RE = re.compile(r"^(?:\./)?((?:[\w.-]+/)+[\w-]+\.py):(?:\d+[:-])?\s*(?:class|def)\s+([A-Za-z_]\w*)", re.M)
_DEF_RE = re.compile(r"^\s*(?:\d+\s+)?(?:class|def)\s+([A-Za-z_]\w*)", re.M)
_PRINTS_FILE_RE = re.compile(
    r"^\s*(?:cd /testbed && )?(?:cat|sed -n \S+|head(?: -n ?\d+| -\d+)?|tail(?: -n ?\d+)?|nl(?: -ba)?)\s+"
    r"((?:[\w.-]+/)+[\w-]+\.py)"
)
# directories that are not a repository's own source: an environment's packages, a user's home
_NOT_THE_REPOSITORY = frozenset(
    {"site-packages", "dist-packages", "venv", "virtualenv", "node_modules", "home", "users"}
)


# Cached: a session names the same few files again and again (7,900 look-ups of 140 sessions' calls,
# mostly repeats); a function of its arguments alone.
@lru_cache(maxsize=8192)
def repository_path(raw: str, *, absolute: bool = False) -> str | None:
    """`raw` as a repository-relative source path, or None when it is not one: written absolute
    (`absolute`: the text had ``/`` or ``~`` before it) anywhere but the checkout (``/testbed/``), above
    the checkout (``..``), through a hidden directory (``.venv``, ``.tox``) or one of an environment's
    packages or a user's home, or not a source file."""
    if absolute and not raw.startswith("testbed/"):
        return None
    path = checkout_path(raw)
    parts = path.split("/")
    if any(not part or part.startswith((".", "~")) or part.lower() in _NOT_THE_REPOSITORY for part in parts[:-1]):
        return None
    return path if target_role(path) == "source" else None


def _paths(text: str) -> list[str]:
    """The repository-relative source paths `text` names."""
    if ".py" not in text:  # every path PATH_RE finds ends in .py: most outputs name none
        return []
    found = []
    for match in PATH_RE.finditer(text):
        before = text[match.start() - 1] if match.start() else ""
        path = repository_path(match.group(1), absolute=before in ("/", "~"))
        if path is not None:
            found.append(path)
    return found


def _grep_definitions(output: str) -> list[tuple[str, str]]:
    if ".py:" not in output:  # every grep line _GREP_DEF_RE reads has a path ending in .py:
        return []
    found = []
    for match in _GREP_DEF_RE.finditer(output):
        before = output[match.start() - 1] if match.start() else ""
        path = repository_path(match.group(1), absolute=before in ("/", "~"))
        if path is not None:
            found.append((path, match.group(2)))
    return found


@dataclass
class Observations:
    """What one session saw: the source files it named, the symbols it saw defined in them."""

    files: set[str] = field(default_factory=set)
    definitions: dict[str, set[str]] = field(default_factory=dict)


def observations(calls: Sequence[Mapping[str, Any]]) -> Observations:
    """The repository's source files a session's tool calls named and the definitions their outputs showed."""
    seen = Observations()
    definitions: dict[str, set[str]] = defaultdict(set)
    for call in calls:
        args = call.get("args") if isinstance(call, Mapping) else None
        if not isinstance(args, Mapping):
            continue
        command = args.get("command") if isinstance(args.get("command"), str) else ""
        output = args.get("output") if isinstance(args.get("output"), str) else ""
        seen.files.update(_paths(command))
        seen.files.update(_paths(output))
        for path, name in _grep_definitions(output):
            definitions[name].add(path)
        printed = _PRINTS_FILE_RE.match(command)
        if printed and output:
            before = command[printed.start(1) - 1]
            path = repository_path(printed.group(1), absolute=before in ("/", "~"))
            if path is not None:
                for name in _DEF_RE.findall(output):
                    definitions[name].add(path)
    seen.definitions = dict(definitions)
    seen.files.update(path for paths in definitions.values() for path in paths)
    return seen


class FileIndex(TaskFileIndex):
    """The pooled observations of some sessions (and the files they edited): the client's index,
    `files_for(task)` ranking their source files for a task."""

    def __init__(
        self,
        seen: Iterable[Observations],
        *,
        edited: Iterable[str] = (),
        min_letters: int = MIN_LETTERS,
        path_weight: float = PATH_WEIGHT,
    ) -> None:
        definitions: dict[str, set[str]] = defaultdict(set)
        files: set[str] = {path for path in (repository_path(p) for p in edited) if path is not None}
        for one in seen:
            files |= one.files
            for name, paths in one.definitions.items():
                definitions[name] |= paths
        super().__init__(files, definitions, min_letters=min_letters, path_weight=path_weight)
