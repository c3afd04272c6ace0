"""The one validation layer for JSON that comes from outside (agent API bodies, JSON Lines files,
JSON typed into forms). Whatever passes can be stored in PostgreSQL and walked by our code without
an error: no NUL (PostgreSQL text and jsonb cannot hold it), no lone surrogate (not encodable as
UTF-8), no NaN or Infinity, integers inside 64 bits, and at most MAX_DEPTH levels of nesting
(the redactor and the renderers walk values recursively).

Parsing is pydantic-core's `from_json` (Rust, about twice as fast as `json.loads` here), which
already refuses NaN/Infinity literals, lone surrogate escapes, invalid UTF-8 and nesting deeper than
its own recursion limit (~200); `check` adds the rest in one iterative walk. Every refusal names
where: a JSON path such as `tool_calls[3].args.query`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from typing import Any

from pydantic_core import from_json

MAX_DEPTH = 64
INT_MIN, INT_MAX = -(2**63), 2**63 - 1


class JsonRefused(ValueError):
    """JSON we do not accept; `path` says where (empty: the whole document)."""

    def __init__(self, message: str, path: str = ""):
        super().__init__(f"{path}: {message}" if path else message)
        self.message = message
        self.path = path

    def to_dict(self) -> dict[str, str]:
        return {"field": self.path or "(body)", "message": self.message}


def _join(path: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def text_problem(value: str) -> str | None:
    """Why a string cannot be stored, or None."""
    if "\x00" in value:
        return "contains a NUL character"
    if value.isascii():  # a flag of the string object: no lone surrogate, no need to encode
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "contains a lone surrogate (not valid Unicode)"
    return None


def _path(where: Any) -> str:
    """The JSON path of a place in `check`'s walk: (parent, key) pairs down from the start path,
    joined only when a refusal names it (a large item has hundreds of thousands of places)."""
    keys = []
    while isinstance(where, tuple):
        where, key = where
        keys.append(key)
    path = where
    for key in reversed(keys):
        path = _join(path, key)
    return path


def texts_storable(data: bytes) -> bool:
    """True when every string (and object key) `from_json` reads from the JSON text `data` can be
    stored. from_json refuses raw control characters, invalid UTF-8 and lone surrogate escapes, so
    only the escape \\u0000 can put a NUL into a string; a text without it has none. (A text with
    it may still have none, as in "\\\\u0000": then `check` looks at the strings.)"""
    return b"\\u0000" not in data


def check(value: Any, *, path: str = "", max_depth: int = MAX_DEPTH, texts_checked: bool = False) -> None:
    """Raises JsonRefused for the first value that cannot be stored. Iterative: any depth is safe.
    `texts_checked`: the value is what from_json read from a text of which texts_storable is true,
    so its strings and keys are storable and only the numbers and the depth are looked at (the
    walk then skips the other repositories' 345,000 strings: 0.05 -> 0.03 s of CPU for 140 files);
    what is refused, and the message, are the same."""
    if _storable(value, max_depth) if not texts_checked else _numbers_storable(value, max_depth):
        return
    # something is wrong: walk again, keeping track of where, to say what and where
    stack: list[tuple[Any, Any, int]] = [(value, path, 0)]
    while stack:
        item, where, depth = stack.pop()
        if isinstance(item, str):
            problem = text_problem(item)
            if problem:
                raise JsonRefused(problem, _path(where))
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int):
            if not INT_MIN <= item <= INT_MAX:
                raise JsonRefused("is an integer outside the 64-bit range", _path(where))
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise JsonRefused("is not a finite number (NaN and Infinity are refused)", _path(where))
        elif isinstance(item, dict):
            if depth >= max_depth:
                raise JsonRefused(f"is nested deeper than {max_depth} levels", _path(where))
            for key, child in item.items():
                problem = text_problem(key)
                if problem:
                    raise JsonRefused(f"has a key that {problem}", _path(where))
                stack.append((child, (where, key), depth + 1))
        elif isinstance(item, list):
            if depth >= max_depth:
                raise JsonRefused(f"is nested deeper than {max_depth} levels", _path(where))
            for index, child in enumerate(item):
                stack.append((child, (where, index), depth + 1))
        else:  # pragma: no cover - from_json yields only the types above
            raise JsonRefused(f"has an unexpected type {type(item).__name__}", _path(where))


def _storable(value: Any, max_depth: int) -> bool:
    """True when `check` finds nothing (False may also mean: let `check` walk it). Level by level,
    without the places' paths: an imported trajectory has hundreds of thousands of values."""
    level = [value]
    depth = 0
    while level:
        following: list[Any] = []
        for item in level:
            kind = type(item)
            if kind is str:
                if "\x00" in item or (not item.isascii() and text_problem(item)):
                    return False
            elif kind is dict:
                if depth >= max_depth:
                    return False
                try:
                    keys = "".join(item)
                except TypeError:
                    return False
                if "\x00" in keys or (not keys.isascii() and text_problem(keys)):
                    return False
                following.extend(item.values())
            elif kind is list:
                if depth >= max_depth:
                    return False
                following.extend(item)
            elif kind is int:
                if not INT_MIN <= item <= INT_MAX:
                    return False
            elif kind is float:
                if not math.isfinite(item):
                    return False
            elif item is not None and kind is not bool:
                return False
        level = following
        depth += 1
    return True


def _numbers_storable(value: Any, max_depth: int) -> bool:
    """_storable for a value whose strings and keys are known to be storable: the numbers and the
    nesting only."""
    level = [value]
    depth = 0
    while level:
        following: list[Any] = []
        for item in level:
            kind = type(item)
            if kind is str:
                continue
            if kind is dict:
                if depth >= max_depth:
                    return False
                following.extend(item.values())
            elif kind is list:
                if depth >= max_depth:
                    return False
                following.extend(item)
            elif kind is int:
                if not INT_MIN <= item <= INT_MAX:
                    return False
            elif kind is float:
                if not math.isfinite(item):
                    return False
            elif item is not None and kind is not bool:
                return False
        level = following
        depth += 1
    return True


def parse(data: bytes | str, *, check_values: bool = True, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON value in `data`. Raises JsonRefused (a ValueError) when it is not JSON, or (unless
    `check_values` is False, for callers that check item by item) when a value cannot be stored."""
    if isinstance(data, str):
        problem = text_problem(data)  # from_json would fail on encoding with a less useful message
        if problem == "contains a lone surrogate (not valid Unicode)":
            raise JsonRefused(f"is not JSON: the text {problem}")
    try:
        value = from_json(data, allow_inf_nan=False)
    except ValueError as exc:
        message = str(exc)
        if "recursion limit" in message:
            message = f"nested too deep ({message})"
        raise JsonRefused(f"is not JSON: {message}") from None
    if check_values:
        check(value, max_depth=max_depth)
    return value


class JsonLineError(ValueError):
    """A line of a JSON-lines file that is not a JSON object; `where` is `file:line`."""

    def __init__(self, where: str, message: str):
        super().__init__(f"{where}: {message}")
        self.where, self.message = where, message


def jsonl_objects(lines: Iterable[str], *, source: str) -> Iterator[tuple[int, str, dict]]:
    """(line number, `source:number`, object) for each non-blank line of a JSON-lines file; raises
    JsonLineError at the first line that is not JSON or not an object."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise JsonLineError(where, f"not valid JSON: {exc.msg} (column {exc.colno})") from None
        except RecursionError:
            raise JsonLineError(where, "not valid JSON: nested too deep") from None
        if not isinstance(item, dict):
            raise JsonLineError(where, "must be a JSON object")
        yield number, where, item
