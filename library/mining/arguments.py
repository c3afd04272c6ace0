"""A step's calls and the argument values it may name (pure Python, no Django): the calls of a
session excerpt by skeleton step, and the rule that keeps a value literal (a word or short phrase
shared by most tasks) or makes it a typed placeholder (ids, codes, amounts, dates, names). The
literal rule itself is library/redaction/literals.py, shared with the ingest store."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..redaction.literals import PLACEHOLDER_RE, is_safe_literal
from .skeletons import DEFAULT_TERMINAL_TOOLS, Skeleton


def _snake(name: str) -> str:
    name = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    return re.sub(r"[^a-z0-9_]+", "_", name.lower()).strip("_") or "value"


def reduced_calls(
    excerpt: Sequence[Mapping[str, Any]], ignored: Iterable[str], terminal: Iterable[str] = DEFAULT_TERMINAL_TOOLS
) -> tuple[Skeleton, list[Mapping[str, Any]]]:
    """A session excerpt's reduced skeleton and, per step, the excerpt entry of its first call (args,
    and the summary of its result where the store kept one)."""
    ignored_set, terminal_set = set(ignored), set(terminal)
    entries: list[Mapping[str, Any]] = []
    names: list[str] = []
    for entry in excerpt:
        if entry.get("role") != "tool_call":
            continue
        name = entry.get("tool")
        if name in ignored_set:
            continue
        if names and names[-1] == name:
            continue
        names.append(name)
        entries.append(entry)
        if name in terminal_set:
            break
    return tuple(names), entries


def calls_by_step(
    excerpt: Sequence[Mapping[str, Any]],
    skeleton: Skeleton,
    ignored: Iterable[str],
    terminal: Iterable[str] = DEFAULT_TERMINAL_TOOLS,
) -> list[dict[str, Any]] | None:
    """The args of the first call of each skeleton step in one session's excerpt, or None when the
    excerpt does not reduce to `skeleton` (e.g. it was cut short)."""
    names, entries = reduced_calls(excerpt, ignored, terminal)
    if names != skeleton:
        return None
    return [entry.get("args") if isinstance(entry.get("args"), Mapping) else {} for entry in entries]


def first_call_args(excerpt: Sequence[Mapping[str, Any]], tool: str) -> Mapping[str, Any] | None:
    for entry in excerpt:
        if entry.get("role") == "tool_call" and entry.get("tool") == tool:
            args = entry.get("args")
            return args if isinstance(args, Mapping) else {}
    return None


def _arg_order(key: str) -> tuple[bool, str]:
    snake = _snake(key)
    return (not (snake == "id" or snake.endswith("_id")), snake)


GENERIC_KEYS = {"value", "values", "arg", "args", "input", "text", "query", "q", "id", "data", "param", "params"}
VALUE_TYPES = [
    (re.compile(r"^\{\{([a-z_]+)\}\}$"), None),  # a redaction placeholder keeps its own type
    (re.compile(r"^[^@\s]+@[^@\s]+\.[a-z]{2,}$", re.I), "email_address"),
    (re.compile(r"^\d{4}-\d{2}-\d{2}"), "date"),
    (re.compile(r"^[A-Z]{3}$"), "code"),
    (re.compile(r"^-?\d+(\.\d+)?$"), "number"),
]


def placeholder_for(key: str, values: Sequence[Any]) -> str:
    """The typed placeholder of an argument: by key when the key says what it is (reservation_id,
    contract_ref, first_name), else by the pattern of its values (a redaction placeholder's own type,
    an e-mail address, a date, a code, a number, else "value")."""
    snake = _snake(key)
    if snake not in GENERIC_KEYS:
        return "{{" + snake + "}}"
    for value in values:
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            continue
        text = str(value)
        for pattern, label in VALUE_TYPES:
            match = pattern.match(text)
            if match:
                return "{{" + (label or match.group(1)) + "}}"
    return "{{" + ("id" if snake == "id" else "value") + "}}"


def _hashable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool)) or value is None else repr(value)


def generalise_args(
    samples: Sequence[tuple[Any, Mapping[str, Any]]], literal_share: float = 0.8, min_tasks: int = 2
) -> list[tuple[str, str]]:
    """(key, rendered value) for the most common argument keys of one step across sessions, from
    (task, args) samples. A value stays literal only when it is a safe literal (is_safe_literal) and
    shared by at least `literal_share` of the distinct tasks and by at least `min_tasks` of them;
    everything else becomes a typed placeholder (placeholder_for)."""
    if not samples:
        return []
    # Argument order: ids first, then alphabetical. Not the call's own order, because PostgreSQL's
    # jsonb does not keep key order and the same sessions must give the same draft on every database.
    key_sets = Counter(tuple(sorted(args.keys(), key=_arg_order)) for _, args in samples)
    keys = sorted(key_sets.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
    rendered: list[tuple[str, str]] = []
    for key in keys:
        tasks_by_value: dict[Any, set] = {}
        tasks: set = set()
        values: list[Any] = []
        for task, args in samples:
            if key in args:
                value = _hashable(args[key])
                values.append(value)
                tasks.add(task)
                tasks_by_value.setdefault(value, set()).add(task)
        common, common_tasks = max(
            tasks_by_value.items(), key=lambda kv: (len(kv[1]), str(kv[0])), default=(None, set())
        )
        shared = len(common_tasks) / max(1, len(tasks)) >= literal_share
        if isinstance(common, str) and PLACEHOLDER_RE.match(common) and shared:
            rendered.append((key, common))  # redaction already typed it ({{email_address}})
        elif is_safe_literal(common) and len(common_tasks) >= min_tasks and shared:
            rendered.append((key, f"'{common}'"))
        else:
            rendered.append((key, placeholder_for(key, values)))
    return rendered
