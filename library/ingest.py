"""Session ingestion: the three input formats, per-item validation, redaction, and the store service.

Formats (DESIGN.md, "Sessions and mining"):
- ``procmem``: one finished session per object: ``{"session_id", "agent", "intent", "task",
  "outcome": {"resolved", "escalated", "rating"}, "tool_calls": [{"name", "args", "ok"}],
  "injected": [{"id", "version"}], "instruction_chars", "model", "ended_at"}`` (+ optional ``"reply"``).
- ``openai``: OpenAI chat messages with ``tool_calls`` — tau-bench's historical trajectories
  ``{task_id, trial, reward, info, traj}`` or ``{"session_id", "messages", "reward"|"outcome"}``.
  ``reward == 1.0`` means resolved; calling an escalation tool (``transfer_to_human_agents``) means escalated.
- ``adk``: a Google ADK session ``{"id", "state", "events": [{"author", "content": {"parts": [...]}}]}``;
  outcome, intent and the injected procedures come from ``state`` (the procmem client's instruction
  provider records ``state["procmem:injected"]``).

Every parser returns a `SessionIn` or raises `ItemInvalid` with the offending field paths. Nothing of a
bad item is stored; `sessions_store` writes the good items of a batch in one transaction and reports
stored, duplicate (idempotent by session id) and refused.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from datetime import timezone as dt_timezone
from typing import IO, Any, Callable, Iterable, Iterator, Mapping

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from .models import Agent, AgentSession, Intent
from .redaction import Redactor, redactor_for_session, strings_in

FORMATS = ("procmem", "openai", "adk")
INTENT_DERIVATIONS = ("taubench-actions",)
INTENT_RE = re.compile(r"^[a-z][a-z0-9_\-]*$")
TOOL_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,127}$")
MAX_TOOL_CALLS = 500
EXCERPT_CALLS = 40
EXCERPT_TEXT_CHARS = 400
EXCERPT_ARG_CHARS = 200
DEFAULT_ESCALATION_TOOLS = ("transfer_to_human_agents", "transfer_to_human", "escalate_to_human")
# tau-bench's read-only tools: the intent derivation uses the gold *write* actions only.
TAUBENCH_READ_PREFIXES = ("get_", "search_", "list_", "calculate", "think")


@dataclass(frozen=True)
class FieldError:
    field: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"field": self.field, "message": self.message}


class ItemInvalid(Exception):
    def __init__(self, errors: list[FieldError], session_id: str | None = None):
        self.errors = errors
        self.session_id = session_id
        super().__init__("; ".join(f"{e.field}: {e.message}" for e in errors))


@dataclass
class SessionIn:
    """A validated session, in any input format, before redaction and storage."""

    session_id: str
    intent: str | None
    task: str
    resolved: bool | None
    escalated: bool | None
    rating: float | None
    tool_calls: list[dict[str, Any]]
    injected: list[dict[str, Any]]
    instruction_chars: int | None
    model: str
    ended_at: datetime | None
    source_format: str
    reply: str = ""
    # Repeated trials of one task share it; empty = a hash of the redacted opening request (store).
    task_key: str = ""
    # Tool results and other structured data: read for known personal values, never stored.
    structured: list[Any] = field(default_factory=list)

    @property
    def skeleton(self) -> list[str]:
        return [call["name"] for call in self.tool_calls]


@dataclass
class ImportOptions:
    """How to read files that do not carry everything procmem needs (intent, ids, model)."""

    intent_field: str | None = None  # dotted path into the raw item, e.g. "info.task.intent"
    intent_map: dict[str, str] | None = None  # the field's value (or the session id) → intent name
    intent_from: str | None = None  # a named derivation, e.g. "taubench-actions"
    id_prefix: str = ""
    model: str = ""
    escalation_tools: tuple[str, ...] = DEFAULT_ESCALATION_TOOLS
    adk_author: str = ""  # the ADK agent whose calls are the session's; default: the first non-user author


# ---------------------------------------------------------------------------------------------- helpers


def _dig(item: Any, path: str) -> Any:
    current = item
    for part in path.split("."):
        if isinstance(current, Mapping) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            return None
    return current


def normalise_intent(value: Any, errors: list[FieldError], field_name: str = "intent") -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        errors.append(FieldError(field_name, f"must be a string, got {type(value).__name__}"))
        return None
    name = re.sub(r"[\s.]+", "_", value.strip().lower())
    if not INTENT_RE.match(name) or len(name) > 100:
        errors.append(FieldError(field_name, f"{value!r} is not an intent name (lower-case letters, digits, _ and -; at most 100)"))
        return None
    return name


def _bool_or_none(value: Any, field_name: str, errors: list[FieldError]) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    errors.append(FieldError(field_name, f"must be true, false or null, got {value!r}"))
    return None


def _parse_ended_at(value: Any, errors: list[FieldError], field_name: str = "ended_at") -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(float(value), tz=dt_timezone.utc)
        except (OverflowError, OSError, ValueError):
            errors.append(FieldError(field_name, f"{value!r} is not a Unix time"))
            return None
    if not isinstance(value, str):
        errors.append(FieldError(field_name, "must be an ISO 8601 date-time string"))
        return None
    try:
        parsed = parse_datetime(value.replace("Z", "+00:00"))
    except ValueError:
        parsed = None
    if parsed is None:
        errors.append(FieldError(field_name, f"{value!r} is not an ISO 8601 date-time"))
        return None
    if timezone.is_naive(parsed):
        parsed = timezone.make_aware(parsed, dt_timezone.utc)
    return parsed


def _clean_session_id(value: Any, errors: list[FieldError], field_name: str = "session_id") -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        errors.append(FieldError(field_name, "is required: a non-empty string that identifies the session"))
        return ""
    value = value.strip()
    if len(value) > 200:
        errors.append(FieldError(field_name, "is longer than 200 characters"))
    return value


def _clean_tool_calls(value: Any, errors: list[FieldError], field_name: str = "tool_calls") -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        errors.append(FieldError(field_name, f"must be a list of {{name, args, ok}}, got {type(value).__name__}"))
        return []
    if len(value) > MAX_TOOL_CALLS:
        errors.append(FieldError(field_name, f"has {len(value)} calls; at most {MAX_TOOL_CALLS} are accepted"))
        return []
    calls: list[dict[str, Any]] = []
    for index, call in enumerate(value):
        where = f"{field_name}[{index}]"
        if not isinstance(call, Mapping):
            errors.append(FieldError(where, "must be an object {name, args, ok}"))
            continue
        name = call.get("name")
        if not isinstance(name, str) or not TOOL_NAME_RE.match(name):
            errors.append(FieldError(f"{where}.name", f"must be a tool name (letters, digits, _ . -), got {name!r}"))
            continue
        args = call.get("args", {})
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except ValueError:
                errors.append(FieldError(f"{where}.args", "is a string that is not JSON"))
                continue
        if args is None:
            args = {}
        if not isinstance(args, Mapping):
            errors.append(FieldError(f"{where}.args", f"must be an object, got {type(args).__name__}"))
            continue
        ok = call.get("ok", True)
        if ok is not None and not isinstance(ok, bool):
            errors.append(FieldError(f"{where}.ok", f"must be true, false or null, got {ok!r}"))
            continue
        calls.append({"name": name, "args": dict(args), "ok": ok})
    return calls


def _clean_injected(value: Any, errors: list[FieldError], field_name: str = "injected") -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        errors.append(FieldError(field_name, "must be a list of {id, version}"))
        return []
    injected = []
    for index, entry in enumerate(value):
        where = f"{field_name}[{index}]"
        if not isinstance(entry, Mapping):
            errors.append(FieldError(where, "must be an object {id, version}"))
            continue
        key, version = entry.get("id"), entry.get("version")
        if not isinstance(key, str) or not key:
            errors.append(FieldError(f"{where}.id", "must be a procedure id such as refund.over_limit"))
            continue
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            errors.append(FieldError(f"{where}.version", f"must be a positive integer, got {version!r}"))
            continue
        injected.append({"id": key, "version": version})
    return injected


def _clean_instruction_chars(value: Any, errors: list[FieldError], field_name: str = "instruction_chars") -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        errors.append(FieldError(field_name, f"must be a non-negative integer, got {value!r}"))
        return None
    return value


def _clean_text(value: Any, field_name: str, errors: list[FieldError], *, max_chars: int = 20000) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        errors.append(FieldError(field_name, f"must be a string, got {type(value).__name__}"))
        return ""
    return value[:max_chars]


def _clean_model(value: Any, errors: list[FieldError], field_name: str = "model") -> str:
    text = _clean_text(value, field_name, errors)
    if len(text) > 128:
        errors.append(FieldError(field_name, "is longer than 128 characters"))
    return text


def _clean_task_key(value: Any, errors: list[FieldError], field_name: str = "task_key") -> str:
    if value is None or value == "":
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        errors.append(FieldError(field_name, f"must be a string, got {type(value).__name__}"))
        return ""
    text = str(value).strip()
    if len(text) > 200:
        errors.append(FieldError(field_name, "is longer than 200 characters"))
        return ""
    return text


def _intent_from_options(item: Any, session_id: str, options: ImportOptions, errors: list[FieldError], fallback: Any) -> str | None:
    if options.intent_from == "taubench-actions":
        actions = _dig(item, "info.task.actions")
        if not isinstance(actions, list):
            errors.append(FieldError("info.task.actions", "is needed for --intent-from taubench-actions"))
            return None
        return taubench_intent(actions)
    raw = _dig(item, options.intent_field) if options.intent_field else fallback
    if options.intent_map is not None:
        key = raw if raw is not None else session_id
        mapped = options.intent_map.get(str(key)) if key is not None else None
        raw = mapped if mapped is not None else (raw if options.intent_field else None)
    return normalise_intent(raw, errors, options.intent_field or "intent")


def taubench_intent(actions: list[Any]) -> str:
    """The intent label of a tau-bench task: the set of its gold *write* actions, sorted and joined
    with "-" (e.g. ``cancel_reservation``, ``cancel_reservation-update_reservation_flights``), or
    ``no_write_action``. A stand-in for a router's label; never mining input."""
    names = sorted(
        {a.get("name") for a in actions if isinstance(a, Mapping) and isinstance(a.get("name"), str)}
        - {None}
    )
    writes = [n for n in names if not n.startswith(TAUBENCH_READ_PREFIXES)]
    return "-".join(writes) if writes else "no_write_action"


# ---------------------------------------------------------------------------------------------- parsers


def parse_procmem(item: Any, options: ImportOptions | None = None) -> SessionIn:
    options = options or ImportOptions()
    if not isinstance(item, Mapping):
        raise ItemInvalid([FieldError("(item)", f"must be a JSON object, got {type(item).__name__}")])
    errors: list[FieldError] = []
    session_id = _clean_session_id(item.get("session_id"), errors)
    if session_id and options.id_prefix:
        session_id = options.id_prefix + session_id
    outcome = item.get("outcome")
    resolved = escalated = None
    rating = None
    if outcome is not None:
        if not isinstance(outcome, Mapping):
            errors.append(FieldError("outcome", "must be an object {resolved, escalated, rating}"))
        else:
            resolved = _bool_or_none(outcome.get("resolved"), "outcome.resolved", errors)
            escalated = _bool_or_none(outcome.get("escalated"), "outcome.escalated", errors)
            rating_raw = outcome.get("rating")
            if rating_raw is not None:
                if isinstance(rating_raw, bool) or not isinstance(rating_raw, (int, float)):
                    errors.append(FieldError("outcome.rating", f"must be a number, got {rating_raw!r}"))
                else:
                    rating = float(rating_raw)
    tool_calls = _clean_tool_calls(item.get("tool_calls"), errors)
    intent = _intent_from_options(item, session_id, options, errors, item.get("intent"))
    session = SessionIn(
        session_id=session_id,
        intent=intent,
        task=_clean_text(item.get("task"), "task", errors),
        resolved=resolved,
        escalated=escalated,
        rating=rating,
        tool_calls=tool_calls,
        injected=_clean_injected(item.get("injected"), errors),
        instruction_chars=_clean_instruction_chars(item.get("instruction_chars"), errors),
        model=_clean_model(item.get("model") or options.model, errors),
        ended_at=_parse_ended_at(item.get("ended_at"), errors),
        source_format="procmem",
        reply=_clean_text(item.get("reply"), "reply", errors),
        task_key=_clean_task_key(item.get("task_key"), errors),
        structured=[item.get("tool_results")] if item.get("tool_results") is not None else [],
    )
    if errors:
        raise ItemInvalid(errors, session_id or None)
    return session


def parse_openai(item: Any, options: ImportOptions | None = None) -> SessionIn:
    options = options or ImportOptions()
    if not isinstance(item, Mapping):
        raise ItemInvalid([FieldError("(item)", f"must be a JSON object, got {type(item).__name__}")])
    errors: list[FieldError] = []
    messages_key = "traj" if "traj" in item else "messages"
    messages = item.get(messages_key)
    if not isinstance(messages, list):
        raise ItemInvalid([FieldError(messages_key, "must be a list of OpenAI chat messages")])
    if item.get("session_id") is not None:
        session_id = _clean_session_id(item.get("session_id"), errors)
    elif item.get("task_id") is not None:
        session_id = f"task{item.get('task_id')}-trial{item.get('trial', 0)}"
    else:
        session_id = _clean_session_id(None, errors)
    if session_id and options.id_prefix:
        session_id = options.id_prefix + session_id
    task = ""
    reply = ""
    raw_calls: list[dict[str, Any]] = []
    structured: list[Any] = []
    for index, message in enumerate(messages):
        where = f"{messages_key}[{index}]"
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            errors.append(FieldError(where, "must be a chat message with a role"))
            continue
        role = message["role"]
        content = message.get("content")
        if role == "user" and not task and isinstance(content, str):
            task = content
        elif role == "assistant":
            if isinstance(content, str) and content.strip():
                reply = content
            for call_index, call in enumerate(message.get("tool_calls") or []):
                function = call.get("function") if isinstance(call, Mapping) else None
                if not isinstance(function, Mapping):
                    errors.append(FieldError(f"{where}.tool_calls[{call_index}]", "has no function {name, arguments}"))
                    continue
                raw_calls.append({"name": function.get("name"), "args": function.get("arguments") or {}, "ok": True})
        elif role == "tool":
            structured.append(content)
            if raw_calls and isinstance(content, str) and content.lower().startswith("error"):
                raw_calls[-1]["ok"] = False
    tool_calls = _clean_tool_calls(raw_calls, errors, f"{messages_key}.tool_calls")
    reward = item.get("reward")
    outcome = item.get("outcome") if isinstance(item.get("outcome"), Mapping) else {}
    resolved: bool | None
    if reward is not None:
        if isinstance(reward, bool) or not isinstance(reward, (int, float)):
            errors.append(FieldError("reward", f"must be a number, got {reward!r}"))
            resolved = None
        else:
            resolved = float(reward) == 1.0
    else:
        resolved = _bool_or_none(outcome.get("resolved"), "outcome.resolved", errors)
    escalated = any(call["name"] in options.escalation_tools for call in tool_calls)
    if outcome.get("escalated") is not None:
        escalated = bool(_bool_or_none(outcome.get("escalated"), "outcome.escalated", errors)) or escalated
    intent = _intent_from_options(item, session_id, options, errors, item.get("intent"))
    if item.get("task_key") is not None:
        task_key = _clean_task_key(item.get("task_key"), errors)
    elif item.get("task_id") is not None:  # tau-bench: the trials of one task share its id
        task_key = "task:" + _clean_task_key(item.get("task_id"), errors, "task_id")
    else:
        task_key = ""
    session = SessionIn(
        session_id=session_id,
        intent=intent,
        task=task[:20000],
        resolved=resolved,
        escalated=escalated,
        rating=float(reward) if isinstance(reward, (int, float)) and not isinstance(reward, bool) else None,
        tool_calls=tool_calls,
        injected=_clean_injected(item.get("injected"), errors),
        instruction_chars=_clean_instruction_chars(item.get("instruction_chars"), errors),
        model=_clean_model(item.get("model") or options.model, errors),
        ended_at=_parse_ended_at(item.get("ended_at"), errors),
        source_format="openai",
        reply=reply[:20000],
        task_key=task_key,
        structured=structured,
    )
    if errors:
        raise ItemInvalid(errors, session_id or None)
    return session


def parse_adk(item: Any, options: ImportOptions | None = None) -> SessionIn:
    options = options or ImportOptions()
    if not isinstance(item, Mapping):
        raise ItemInvalid([FieldError("(item)", f"must be a JSON object, got {type(item).__name__}")])
    errors: list[FieldError] = []
    events = item.get("events")
    if not isinstance(events, list):
        raise ItemInvalid([FieldError("events", "must be a list of ADK events")])
    state = item.get("state") if isinstance(item.get("state"), Mapping) else {}
    session_id = _clean_session_id(item.get("id", item.get("session_id")), errors, "id")
    if session_id and options.id_prefix:
        session_id = options.id_prefix + session_id
    task = ""
    reply = ""
    raw_calls: list[dict[str, Any]] = []
    structured: list[Any] = []
    # Only the session's own agent's calls make its skeleton; a sub-agent's calls are its own
    # procedure (they still feed redaction, as structured data).
    own_author = options.adk_author or state.get("procmem:author") or next(
        (e.get("author") for e in events if isinstance(e, Mapping) and e.get("author") not in (None, "user")), None
    )
    for index, event in enumerate(events):
        where = f"events[{index}]"
        if not isinstance(event, Mapping):
            errors.append(FieldError(where, "must be an object"))
            continue
        author = event.get("author")
        content = event.get("content") or {}
        parts = content.get("parts") if isinstance(content, Mapping) else None
        if parts is None:
            continue
        if not isinstance(parts, list):
            errors.append(FieldError(f"{where}.content.parts", "must be a list"))
            continue
        for part_index, part in enumerate(parts):
            if not isinstance(part, Mapping):
                continue
            call = part.get("functionCall") or part.get("function_call")
            response = part.get("functionResponse") or part.get("function_response")
            text = part.get("text")
            if call is not None:
                if not isinstance(call, Mapping):
                    errors.append(FieldError(f"{where}.content.parts[{part_index}].functionCall", "must be an object"))
                    continue
                if author != own_author:
                    structured.append(call.get("args"))
                    continue
                raw_calls.append({"name": call.get("name"), "args": call.get("args") or {}, "ok": True})
            elif response is not None:
                structured.append(response.get("response") if isinstance(response, Mapping) else response)
                result = response.get("response") if isinstance(response, Mapping) else None
                if author == own_author and raw_calls and isinstance(result, Mapping) and (result.get("error") or result.get("status") == "error"):
                    raw_calls[-1]["ok"] = False
            elif isinstance(text, str) and text.strip():
                if author == "user":
                    task = task or text
                else:
                    reply = text
    tool_calls = _clean_tool_calls(raw_calls, errors, "events.functionCall")
    outcome = state.get("outcome") if isinstance(state.get("outcome"), Mapping) else item.get("outcome")
    outcome = outcome if isinstance(outcome, Mapping) else {}
    resolved = _bool_or_none(outcome.get("resolved"), "state.outcome.resolved", errors)
    escalated = _bool_or_none(outcome.get("escalated"), "state.outcome.escalated", errors)
    if any(call["name"] in options.escalation_tools for call in tool_calls):
        escalated = True
    injected = state.get("procmem:injected", state.get("procmem_injected", item.get("injected")))
    intent_fallback = state.get("intent", item.get("intent"))
    intent = _intent_from_options(item, session_id, options, errors, intent_fallback)
    ended = item.get("lastUpdateTime", item.get("last_update_time", item.get("ended_at")))
    session = SessionIn(
        session_id=session_id,
        intent=intent,
        task=task[:20000],
        resolved=resolved,
        escalated=escalated,
        rating=None,
        tool_calls=tool_calls,
        injected=_clean_injected(injected, errors, "state.procmem:injected"),
        instruction_chars=_clean_instruction_chars(state.get("procmem:instruction_chars", item.get("instruction_chars")), errors),
        model=_clean_model(state.get("model") or item.get("model") or options.model, errors),
        ended_at=_parse_ended_at(ended, errors, "lastUpdateTime"),
        source_format="adk",
        reply=reply[:20000],
        task_key=_clean_task_key(state.get("task_key", item.get("task_key")), errors, "state.task_key"),
        structured=structured,
    )
    if errors:
        raise ItemInvalid(errors, session_id or None)
    return session


PARSERS: dict[str, Callable[[Any, ImportOptions | None], SessionIn]] = {
    "procmem": parse_procmem,
    "openai": parse_openai,
    "adk": parse_adk,
}


def detect_format(item: Any) -> str:
    if isinstance(item, Mapping):
        if "traj" in item or "messages" in item:
            return "openai"
        if "events" in item:
            return "adk"
    return "procmem"


def parse_item(item: Any, *, fmt: str = "auto", options: ImportOptions | None = None) -> SessionIn:
    if fmt == "auto":
        fmt = detect_format(item)
    if fmt not in PARSERS:
        raise ItemInvalid([FieldError("format", f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")])
    return PARSERS[fmt](item, options)


# ---------------------------------------------------------------------------------------------- streaming files


def iter_json_items(stream: IO[bytes], *, chunk_size: int = 1 << 20, on_bytes: Callable[[int], None] | None = None) -> Iterator[Any]:
    """Yields the items of a JSON list, of JSON Lines, or a single JSON object, reading `stream` in
    chunks: memory holds one chunk plus the item being decoded, whatever the file's size.

    Raises ValueError naming the item index and byte-independent position on malformed input."""
    decoder = json.JSONDecoder()
    text_decoder = codecs.getincrementaldecoder("utf-8-sig")()
    buffer = ""
    eof = False
    in_list: bool | None = None
    index = 0

    def more() -> bool:
        nonlocal buffer, eof
        if eof:
            return False
        chunk = stream.read(chunk_size)
        if on_bytes is not None and chunk:
            on_bytes(len(chunk))
        if not chunk:
            eof = True
            buffer += text_decoder.decode(b"", final=True)
            return False
        buffer += text_decoder.decode(chunk)
        return True

    position = 0
    while True:
        # skip whitespace and separators
        while True:
            while position < len(buffer) and buffer[position] in " \t\r\n":
                position += 1
            if position < len(buffer):
                break
            buffer, position = "", 0
            if not more():
                break
        if position >= len(buffer):
            if in_list:
                raise ValueError(f"the JSON list is not closed (after item {index})")
            return
        char = buffer[position]
        if in_list is None:
            in_list = char == "["
            if in_list:
                position += 1
                continue
        if in_list and char == "]":
            return
        if in_list and char == ",":
            position += 1
            continue
        while True:
            try:
                value, end = decoder.raw_decode(buffer, position)
                # a number or literal at the very end of a chunk may be cut; an object/list never ends early
                if end == len(buffer) and not eof and buffer[position] not in "{[\"":
                    raise json.JSONDecodeError("maybe truncated", buffer, end)
                break
            except json.JSONDecodeError as exc:
                if more():
                    continue
                raise ValueError(f"item {index}: invalid JSON: {exc.msg}") from None
        yield value
        index += 1
        buffer, position = buffer[end:], 0


# ---------------------------------------------------------------------------------------------- redaction & storage


def build_excerpt(session: SessionIn, redactor: Redactor) -> list[dict[str, Any]]:
    """What a reviewer may read of a session: the opening request, the tool calls with redacted
    arguments, and the last reply, all redacted and shortened. Tool results are never included."""

    def short(text: str, limit: int) -> str:
        return text if len(text) <= limit else text[: limit - 1] + "…"

    def short_args(value: Any) -> Any:
        if isinstance(value, str):
            return short(value, EXCERPT_ARG_CHARS)
        if isinstance(value, Mapping):
            return {k: short_args(v) for k, v in value.items()}
        if isinstance(value, list):
            return [short_args(v) for v in value[:20]]
        return value

    excerpt: list[dict[str, Any]] = []
    if session.task:
        excerpt.append({"role": "user", "text": short(redactor.text(session.task), EXCERPT_TEXT_CHARS)})
    for call in session.tool_calls[:EXCERPT_CALLS]:
        excerpt.append({"role": "tool_call", "tool": call["name"], "args": short_args(redactor.value(call["args"])), "ok": call["ok"]})
    if len(session.tool_calls) > EXCERPT_CALLS:
        excerpt.append({"role": "note", "text": f"{len(session.tool_calls) - EXCERPT_CALLS} more tool calls"})
    if session.reply:
        excerpt.append({"role": "assistant", "text": short(redactor.text(session.reply), EXCERPT_TEXT_CHARS)})
    return excerpt


def redactor_for(session: SessionIn, agent: Agent) -> Redactor:
    structured: list[Any] = [call["args"] for call in session.tool_calls]
    structured.extend(session.structured)
    texts = [session.task, session.reply, *strings_in([call["args"] for call in session.tool_calls])]
    return redactor_for_session(structured=structured, texts=texts, agent_patterns=agent.redaction_patterns)


def raw_retention_days() -> int:
    return int(getattr(settings, "PROCMEM_RAW_RETENTION_DAYS", 30))


def task_key_for(session: SessionIn, redactor: Redactor) -> str:
    """The reported task key, else a hash of the redacted opening request (so that the same request
    from the same customer, retried, counts once), else empty (the session is its own task)."""
    if session.task_key:
        return session.task_key
    if not session.task.strip():
        return ""
    redacted = " ".join(redactor.text(session.task).split()).lower()
    return "request:" + hashlib.sha256(redacted.encode("utf-8")).hexdigest()[:32]


def _to_row(agent: Agent, session: SessionIn, intent_ids: dict[str, int], keep_raw: bool) -> AgentSession:
    redactor = redactor_for(session, agent)
    excerpt = build_excerpt(session, redactor)
    return AgentSession(
        task_key=task_key_for(session, redactor),
        agent=agent,
        session_id=session.session_id,
        intent_id=intent_ids.get(session.intent) if session.intent else None,
        task=session.task if keep_raw else "",
        resolved=session.resolved,
        escalated=session.escalated,
        rating=session.rating,
        skeleton=session.skeleton,
        tool_calls=session.tool_calls if keep_raw else [{"name": c["name"], "ok": c["ok"]} for c in session.tool_calls],
        redacted_excerpt=excerpt,
        injected=session.injected,
        instruction_chars=session.instruction_chars,
        model=session.model,
        ended_at=session.ended_at,
        raw_purged=not keep_raw,
        source_format=session.source_format,
    )


@dataclass
class StoreResult:
    stored: list[str] = field(default_factory=list)
    duplicate: list[str] = field(default_factory=list)


def intents_ensure(*, agent: Agent, names: Iterable[str]) -> dict[str, int]:
    """Intent name → id for the agent, creating the intents that do not exist yet. Intents are the
    agent's router labels: a session reporting a new label creates it."""
    wanted = set(names)
    if not wanted:
        return {}
    found = dict(Intent.objects.filter(agent=agent, name__in=wanted).values_list("name", "id"))
    missing = wanted - set(found)
    if missing:
        Intent.objects.bulk_create([Intent(agent=agent, name=name) for name in sorted(missing)], ignore_conflicts=True)
        found = dict(Intent.objects.filter(agent=agent, name__in=wanted).values_list("name", "id"))
    return found


def sessions_store(*, agent: Agent, sessions: list[SessionIn]) -> StoreResult:
    """Stores validated sessions of one agent in one transaction. Idempotent by session id: a session
    already stored (or repeated in the batch) is reported as duplicate and changes nothing.

    Redaction happens here, before the row exists: the excerpt a reviewer sees is built from the
    session's own personal values plus the agent's and the built-in patterns. With
    PROCMEM_RAW_RETENTION_DAYS=0 the raw task and arguments are never stored."""
    result = StoreResult()
    unique: dict[str, SessionIn] = {}
    for session in sessions:
        if session.session_id in unique:
            result.duplicate.append(session.session_id)
        else:
            unique[session.session_id] = session
    if not unique:
        return result
    keep_raw = raw_retention_days() > 0
    with transaction.atomic():
        existing = set(
            AgentSession.objects.filter(agent=agent, session_id__in=list(unique)).values_list("session_id", flat=True)
        )
        fresh = [s for sid, s in unique.items() if sid not in existing]
        result.duplicate.extend(sid for sid in unique if sid in existing)
        intent_ids = intents_ensure(agent=agent, names={s.intent for s in fresh if s.intent})
        rows = [_to_row(agent, s, intent_ids, keep_raw) for s in fresh]
        # ignore_conflicts: a concurrent request with the same session id wins the race; this one
        # then changes nothing, which is what a resend must do.
        AgentSession.objects.bulk_create(rows, ignore_conflicts=True, batch_size=500)
        result.stored.extend(s.session_id for s in fresh)
    return result


def sessions_purge_raw(*, agent: Agent | None = None, older_than_days: int | None = None, batch_size: int = 2000) -> int:
    """Drops the raw task text and tool-call arguments of sessions received more than the retention
    window ago (tool names and order, the outcome and the redacted excerpt stay: mining needs no
    more). Returns how many sessions were purged. Batched, one short transaction per batch."""
    days = raw_retention_days() if older_than_days is None else older_than_days
    cutoff = timezone.now() - timedelta(days=days)
    queryset = AgentSession.objects.filter(raw_purged=False, received_at__lt=cutoff)
    if agent is not None:
        queryset = queryset.filter(agent=agent)
    purged = 0
    while True:
        with transaction.atomic():
            batch = list(queryset.select_for_update(skip_locked=True).order_by("pk").values_list("pk", "tool_calls")[:batch_size])
            if not batch:
                return purged
            rows = [
                AgentSession(pk=pk, task="", raw_purged=True, tool_calls=[{"name": c.get("name"), "ok": c.get("ok")} for c in (calls or []) if isinstance(c, Mapping)])
                for pk, calls in batch
            ]
            AgentSession.objects.bulk_update(rows, ["task", "raw_purged", "tool_calls"])
            purged += len(rows)
