"""The session formats procmem reads, and per-item validation.

Formats (docs/design.md "Sessions and mining"; details in docs/api.md):
- ``procmem``: one finished session per object: ``{"session_id", "agent", "intent", "task",
  "outcome": {"resolved", "escalated", "rating"}, "tool_calls": [{"name", "args", "ok"}],
  "injected": [{"id", "version", "arm"?}], "instruction_chars", "model", "ended_at"}`` (+ optional ``"reply"``).
- ``openai``: OpenAI chat messages with ``tool_calls`` — tau-bench's historical trajectories
  ``{task_id, trial, reward, info, traj}`` or ``{"session_id", "messages", "reward"|"outcome"}``.
  ``reward == 1.0`` means resolved; calling an escalation tool (``transfer_to_human_agents``) means escalated.
- ``adk``: a Google ADK session ``{"id", "state", "events": [{"author", "content": {"parts": [...]}}]}``;
  outcome, intent and the injected procedures come from ``state`` (the procmem client's instruction
  provider records ``state["procmem:injected"]``).
- ``mini-swe-agent`` (trajectories) and ``trace`` (the trace hook's minimal format): coding agents; each
  call carries its activity class and generalised target.

Every parser returns a `SessionIn` or raises `ItemInvalid` with the offending field paths; the two
chat formats differ only in how one message reads, and share the walk over the conversation.
Nothing here touches the database: `library.ingest.store` redacts and stores what parses.

One module per format family: procmem.py, chat.py (openai, adk), coding.py (mini-swe-agent,
trace); fields.py holds what they share (`SessionIn`, `ImportOptions`, the field checks). This
module picks the parser of an item.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ... import safe_json
from ...tool_names import normalise_tool_name
from ..session_fields import (
    CODING_FORMATS,
    INTENT_DERIVATIONS,
    FieldError,
    ImportOptions,
    ItemInvalid,
    SessionIn,
    taubench_intent,
)

# the parsers, and what callers import from library.ingest.formats besides parse_item
from .chat import parse_adk, parse_openai
from .coding import MAX_OUTPUT_CHARS, outcomes_from_results, parse_mini_swe_agent, parse_trace
from .procmem import parse_procmem

FORMATS = ("procmem", "openai", "adk", "mini-swe-agent", "trace")


PARSERS: dict[str, Callable[[Any, ImportOptions | None], SessionIn]] = {
    "procmem": parse_procmem,
    "openai": parse_openai,
    "adk": parse_adk,
    "mini-swe-agent": parse_mini_swe_agent,
    "trace": parse_trace,
}


def detect_format(item: Any) -> str:
    if isinstance(item, Mapping):
        if str(item.get("trajectory_format", "")).startswith("mini-swe-agent") or (
            "instance_id" in item and "messages" in item
        ):
            return "mini-swe-agent"
        if "actions" in item and "tool_calls" not in item:
            return "trace"
        if "traj" in item or "messages" in item:
            return "openai"
        if "events" in item:
            return "adk"
    return "procmem"


def parse_item(
    item: Any, *, fmt: str = "auto", options: ImportOptions | None = None, texts_checked: bool = False
) -> SessionIn:
    """One session from one item, or ItemInvalid naming every problem. The item first passes the
    storable-value check of library/safe_json.py (no NUL, no lone surrogate, finite numbers, 64-bit
    integers, nesting of at most 64 levels), so nothing the parsers keep can fail in the database.
    `texts_checked`: the item's strings are known to be storable (reader.ReadItem.texts_checked)."""
    try:
        safe_json.check(item, texts_checked=texts_checked)
    except safe_json.JsonRefused as exc:
        session_id = item.get("session_id") if isinstance(item, Mapping) else None
        raise ItemInvalid(
            [FieldError(exc.path or "(item)", exc.message)],
            session_id if isinstance(session_id, str) and not safe_json.text_problem(session_id) else None,
        ) from None
    if fmt == "auto":
        fmt = detect_format(item)
    if fmt not in PARSERS:
        raise ItemInvalid([FieldError("format", f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")])
    return PARSERS[fmt](item, options)
