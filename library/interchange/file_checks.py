"""Reading procedure files for import (library/interchange/procedure_files.py) so that no file can stop the run:
each check here raises `ImportFileError` naming the file, where in it, and why, and the import
reports it and goes on with the others (issue 42 finding 5).

- symbolic links are refused, given or found in a directory: a repository of procedures holds
  files, and a link could make the import read anything the process can (`os.walk` here never
  follows one);
- a file over `MAX_FILE_BYTES` is refused before it is read (a 150 MB file took 510 MB of memory);
- what the project's one JSON validation layer refuses (library/safe_json.py), with its JSON path:
  nesting deeper than 64 levels (100,000 levels raised RecursionError in the parser), a NUL
  (PostgreSQL's text and jsonb cannot hold it: DataError), a lone surrogate (not UTF-8:
  UnicodeEncodeError when stored), NaN, integers beyond 64 bits.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from .. import safe_json

# An exported procedure file is a few kilobytes (its versions' text and evidence); a mined one
# with every supporting session's facts stays far below this.
MAX_FILE_BYTES = 5 * 1024 * 1024


class ImportFileError(Exception):
    def __init__(self, path: Path, field: str, message: str, *, agent: str | None = None):
        self.path, self.field, self.message = path, field, message
        self.agent = agent  # the agent directory the file lies in, when it lies in one
        super().__init__(f"{path}: {field}: {message}")


def collect_files(paths: list[Path]) -> tuple[list[tuple[Path, str | None]], list[ImportFileError]]:
    """The procedure files under `paths`, each with the agent directory it lies in (None for a file
    given directly), and the refused paths (symbolic links; paths that do not exist)."""
    found: list[tuple[Path, str | None]] = []
    refused: list[ImportFileError] = []
    for root in map(Path, paths):
        if root.is_symlink():
            refused.append(ImportFileError(root, "(path)", "is a symbolic link; give the file or directory itself"))
        elif root.is_file():
            found.append((root, None))
        elif root.is_dir():
            # <dir>/<agent>/<id>.json, or an agent's own directory given directly
            for folder, directories, files in os.walk(root, followlinks=False):
                here = Path(folder)
                for name in sorted(directories):
                    if (here / name).is_symlink():
                        refused.append(
                            ImportFileError(here / name, "(path)", "is a symbolic link to a directory; not followed")
                        )
                for name in sorted(files):
                    if not name.endswith(".json"):
                        continue
                    path = here / name
                    if path.is_symlink():
                        refused.append(
                            ImportFileError(path, "(path)", "is a symbolic link; not followed", agent=here.name)
                        )
                    else:
                        found.append((path, here.name))
        else:
            refused.append(ImportFileError(root, "(path)", "does not exist"))
    found.sort(key=lambda item: str(item[0]))
    return found, refused


def read_json(path: Path, *, agent: str | None = None) -> Any:
    """The JSON document in `path`, checked as the module's docstring says."""
    try:
        info = path.lstat()
    except OSError as exc:
        raise ImportFileError(path, "(file)", f"cannot be read: {exc.strerror}", agent=agent) from None
    if stat.S_ISLNK(info.st_mode):
        raise ImportFileError(path, "(path)", "is a symbolic link; not followed", agent=agent)
    if not stat.S_ISREG(info.st_mode):
        raise ImportFileError(path, "(file)", "is not a regular file", agent=agent)
    if info.st_size > MAX_FILE_BYTES:
        raise ImportFileError(
            path, "(file)", f"is {info.st_size:,} bytes; a procedure file may hold {MAX_FILE_BYTES:,}", agent=agent
        )
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ImportFileError(path, "(file)", f"cannot be read: {exc.strerror}", agent=agent) from None
    if len(raw) > MAX_FILE_BYTES:  # it grew after the stat
        raise ImportFileError(path, "(file)", f"holds more than {MAX_FILE_BYTES:,} bytes", agent=agent)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ImportFileError(path, "(file)", f"is not UTF-8 text: {exc}", agent=agent) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportFileError(
            path, "(file)", f"is not valid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}", agent=agent
        ) from None
    except RecursionError:  # the parser recurses once per level: 100,000 levels end here, cheaply
        raise ImportFileError(
            path, "(file)", f"is nested too deep to read (deeper than {safe_json.MAX_DEPTH} levels)", agent=agent
        ) from None
    try:
        safe_json.check(data)  # NUL, lone surrogates, NaN, 64-bit integers, depth: with the JSON path
    except safe_json.JsonRefused as exc:
        raise ImportFileError(path, exc.path or "(file)", exc.message, agent=agent) from None
    return data
