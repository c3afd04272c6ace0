"""Checking one replayed case against its expectations. Pure Python: no Django.

A case's checks:
- `expected_tools`: the calls that must happen, in this order (other calls may come between).
  An item is a tool name, or `{"name": ..., "args": {...}}` where the given args must be equal in
  the actual call (a subset match: the call may carry more args).
- `forbidden_tools`: calls that must not happen. A tool name, or `{"name", "args"?, "before"?}`:
  with `before`, the call is forbidden only until a call of that tool happened (e.g. promising a
  refund before `createApproval`).
- `reply_must_match` / `reply_must_not_match`: regular expressions searched in the final reply.

The result is a list of failures in plain words; an empty list means the case passed.
"""

from __future__ import annotations

import re
from typing import Any


class CheckSpecError(ValueError):
    """A case's checks are malformed (raised at validation, so that an import names the field)."""


def normalise_call(item: Any) -> dict:
    """A tool call as `{"name": str, "args": dict}`; accepts a bare name."""
    if isinstance(item, str):
        return {"name": item, "args": {}}
    if isinstance(item, dict) and isinstance(item.get("name"), str):
        args = item.get("args", item.get("arguments", {}))
        return {"name": item["name"], "args": args if isinstance(args, dict) else {}}
    raise CheckSpecError(f"a tool call must be a name or an object with a name, got {item!r}")


def validate_checks(
    *, expected_tools: Any, forbidden_tools: Any, reply_must_match: Any, reply_must_not_match: Any
) -> None:
    """Raises CheckSpecError naming the field when a check cannot be evaluated."""
    for field, value in (("expected_tools", expected_tools), ("forbidden_tools", forbidden_tools)):
        if not isinstance(value, list):
            raise CheckSpecError(f"{field}: must be a list, got {type(value).__name__}")
        for index, item in enumerate(value):
            try:
                call = normalise_call(item)
            except CheckSpecError as exc:
                raise CheckSpecError(f"{field}[{index}]: {exc}") from None
            if isinstance(item, dict) and "args" in item and not isinstance(item["args"], dict):
                raise CheckSpecError(f"{field}[{index}].args: must be an object")
            if (
                field == "forbidden_tools"
                and isinstance(item, dict)
                and "before" in item
                and not isinstance(item["before"], str)
            ):
                raise CheckSpecError(f"{field}[{index}].before: must be a tool name")
            if not call["name"].strip():
                raise CheckSpecError(f"{field}[{index}]: the tool name is empty")
    for field, value in (("reply_must_match", reply_must_match), ("reply_must_not_match", reply_must_not_match)):
        if not isinstance(value, list):
            raise CheckSpecError(f"{field}: must be a list of regular expressions, got {type(value).__name__}")
        for index, pattern in enumerate(value):
            if not isinstance(pattern, str):
                raise CheckSpecError(f"{field}[{index}]: must be a string")
            try:
                re.compile(pattern)
            except re.error as exc:
                raise CheckSpecError(f"{field}[{index}]: not a regular expression ({exc})") from None


def _matches(call: dict, expected: dict) -> bool:
    if call["name"] != expected["name"]:
        return False
    args = call.get("args") or {}
    return all(key in args and args[key] == value for key, value in expected["args"].items())


def _describe(call: dict) -> str:
    if call["args"]:
        return f"{call['name']}({', '.join(f'{k}={v!r}' for k, v in call['args'].items())})"
    return call["name"]


def check_case(
    *,
    expected_tools: list,
    forbidden_tools: list,
    reply_must_match: list[str],
    reply_must_not_match: list[str],
    tool_calls: list[dict],
    reply: str,
) -> list[str]:
    calls = [normalise_call(c) for c in tool_calls]
    failures: list[str] = []

    position = 0
    for raw in expected_tools:
        expected = normalise_call(raw)
        start = position
        while position < len(calls) and not _matches(calls[position], expected):
            position += 1
        if position == len(calls):
            called_anywhere = any(_matches(c, expected) for c in calls)
            failures.append(
                f"expected call {_describe(expected)} " + ("came out of order" if called_anywhere else "was not made")
            )
            position = start  # judge the rest from where the order held
            continue
        position += 1

    for raw in forbidden_tools:
        forbidden = normalise_call(raw)
        until = raw.get("before") if isinstance(raw, dict) else None
        for call in calls:
            if until and call["name"] == until:
                break
            if _matches(call, forbidden):
                failures.append(
                    f"forbidden call {_describe(forbidden)} was made" + (f" before {until}" if until else "")
                )
                break

    for pattern in reply_must_match:
        if not re.search(pattern, reply or ""):
            failures.append(f"the reply does not match /{pattern}/")
    for pattern in reply_must_not_match:
        if re.search(pattern, reply or ""):
            failures.append(f"the reply matches the forbidden pattern /{pattern}/")
    return failures
