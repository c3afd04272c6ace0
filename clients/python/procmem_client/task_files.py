"""The files a coding task's own words point to, and the recall pointer that names them first (pure
Python: the server's select endpoint, the client's local ranking and `manage.py measure_coding` all
call `task_pointer`, so the pointer an agent receives is the one measured).

An index (`TaskFileIndex`) holds, for one repository, the source files the agent's stored sessions
named and the symbols they saw defined in each (built on the server from the sessions' tool calls,
library/coding/file_index.py; served by ``GET /api/v1/agents/{agent}/file-index``). It ranks its files
for a task text: each identifier the task writes (of at least MIN_LETTERS letters, compared whole and
case-sensitively: ``Rational``, ``Point3D``, ``_print_Pow``) adds its IDF over the known files,
log(1 + files / files defining it), to every file seen defining it; a known file the task names by path
(``sympy/core/numbers.py``) or module (``sympy.core.numbers``) adds PATH_WEIGHT. `task_pointer` names the
first TASK_FILES of them before the family's own files, from the index of the procedure's repository
(`coding.record_repository`; a procedure that records none uses the index of sessions without one).
The parameters were chosen leaving one repository out (docs/mining.md).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .coding import is_coding, recall_pointer, record_repository

TASK_FILES = 6  # files a pointer names for the task, before the family's own
MIN_LETTERS = 4  # shorter identifiers (``S``, ``Add``, ``arg``) name too many files to point anywhere
PATH_WEIGHT = 3.0  # a known file the task names by path or module

PATH_RE = re.compile(r"(?<![\w.])((?:[\w.-]+/)+[\w-]+\.py)\b")
_MODULE_RE = re.compile(r"\b([a-z_]\w*(?:\.[a-z_]\w*)+)\b")
_IDENTIFIER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def checkout_path(raw: str) -> str:
    """A path as the checkout names it (``/testbed/pkg/mod.py``, ``./pkg/mod.py`` → ``pkg/mod.py``)."""
    return raw.removeprefix("/testbed/").removeprefix("./").removeprefix("testbed/")


class TaskFileIndex:
    """One repository's known source files and the files each symbol was seen defined in:
    `files_for(task)` ranks the files for a task."""

    def __init__(
        self,
        files: Iterable[str],
        definitions: Mapping[str, Iterable[str]],
        *,
        min_letters: int = MIN_LETTERS,
        path_weight: float = PATH_WEIGHT,
    ) -> None:
        self.files = set(files)
        self.definitions = {name: set(paths) for name, paths in definitions.items()}
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
        named = {checkout_path(raw) for raw in PATH_RE.findall(task or "")}
        named |= {module.replace(".", "/") + ".py" for module in _MODULE_RE.findall(task or "")}
        for path in named & self.files:
            score[path] += self.path_weight
        return dict(score)

    def files_for(self, task: str, limit: int = TASK_FILES) -> list[str]:
        """The known source files the task's identifiers and paths point to, best first (ties by path)."""
        ranked = sorted(self.scores(task).items(), key=lambda item: (-item[1], item[0]))
        return [path for path, _score in ranked[: max(0, limit)]]

    def to_dict(self) -> dict[str, Any]:
        """The served form: the files sorted, each symbol's files as positions in that list (a path is
        written once however many symbols it defines)."""
        files = sorted(self.files)
        position = {path: i for i, path in enumerate(files)}
        return {
            "files": files,
            "definitions": {
                name: sorted(position[path] for path in paths if path in position)
                for name, paths in sorted(self.definitions.items())
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], **parameters: Any) -> TaskFileIndex:
        """The served form back (`to_dict`); ValueError when it is not one."""
        files = data.get("files")
        definitions = data.get("definitions")
        if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
            raise ValueError("an index's files must be a list of paths")
        if not isinstance(definitions, Mapping):
            raise ValueError("an index's definitions must be an object")
        named: dict[str, list[str]] = {}
        for name, positions in definitions.items():
            if not isinstance(positions, list) or not all(
                isinstance(p, int) and not isinstance(p, bool) and 0 <= p < len(files) for p in positions
            ):
                raise ValueError(f"the definitions of {str(name)[:80]!r} must be positions in files")
            named[str(name)] = [files[p] for p in positions]
        return cls(files, named, **parameters)


def indexes_from_response(data: Any) -> dict[str, TaskFileIndex]:
    """The file-index endpoint's answer as {repository: index}; ValueError when it is not one."""
    if not isinstance(data, Mapping) or not isinstance(data.get("indexes"), list):
        raise ValueError("the response is not a file index")
    parameters = {
        "min_letters": int(data.get("minLetters", MIN_LETTERS)),
        "path_weight": float(data.get("pathWeight", PATH_WEIGHT)),
    }
    indexes: dict[str, TaskFileIndex] = {}
    for entry in data["indexes"]:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("repository"), str):
            raise ValueError("each index names its repository")
        indexes[entry["repository"].strip().lower()] = TaskFileIndex.from_dict(entry, **parameters)
    return indexes


def task_pointer(
    record: Mapping[str, Any],
    task: str,
    indexes: Mapping[str, TaskFileIndex],
    *,
    limit: int = TASK_FILES,
) -> dict[str, Any]:
    """`coding.recall_pointer(record, task_files=…)` with the files `task` points to in the index of
    the record's repository (none when there is no such index: the pointer as served without them)."""
    index = indexes.get(record_repository(record))
    files: Sequence[str] = index.files_for(task, limit) if index is not None else ()
    return recall_pointer(record, task_files=files)


def with_task_files(
    records: Sequence[Mapping[str, Any]], task: str, indexes: Mapping[str, TaskFileIndex]
) -> list[dict[str, Any]]:
    """Selected records with each coding procedure's `recallPointer` naming first the files `task` points
    to (`task_pointer`); the others as they are. What the select endpoint's `taskFiles` answers, and what
    the client's local ranking gives with the fetched indexes."""
    return [
        {**record, "recallPointer": task_pointer(record, task, indexes)} if is_coding(record) else dict(record)
        for record in records
    ]
