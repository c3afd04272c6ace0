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

Every parser returns a `SessionIn` or raises `ItemInvalid` with the offending field paths; the two
chat formats differ only in how one message reads, and share the walk over the conversation.
Nothing here touches the database: `library.ingest.store` redacts and stores what parses.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from datetime import timezone as dt_timezone
from typing import Any

from django.utils import timezone
from django.utils.dateparse import parse_datetime

from .. import safe_json
from ..coding.activities import Action, classify_command, classify_tool

FORMATS = ("procmem", "openai", "adk", "mini-swe-agent", "trace")
# formats of coding agents: each call carries its activity class and generalised target, and the
# session's skeleton is the sequence of activity steps (library/coding/activities.py)
CODING_FORMATS = ("mini-swe-agent", "trace")
DEFAULT_CODING_INTENT = "resolve_issue"
MAX_COMMAND_CHARS = 2000
MAX_OUTPUT_CHARS = 500  # a head of the output, enough to see the error; tool results of other formats are never stored
INTENT_DERIVATIONS = ("taubench-actions",)
INTENT_RE = re.compile(r"^[a-z][a-z0-9_\-]*$")
TOOL_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,127}$")
_TOOL_NAME_OTHER = re.compile(r"[^A-Za-z0-9_.\-]+")
MAX_TOOL_CALLS = 500  # per session; docs/api.md "Limits"
INJECTED_ARMS = ("rollout", "control")  # library.models.Rollout.Arm; formats import no models
MAX_COUNT = 2**31 - 1  # integer fields stored in 32-bit columns (instruction_chars, injected versions)
MAX_RATING = 1e6
DEFAULT_ESCALATION_TOOLS = ("transfer_to_human_agents", "transfer_to_human", "escalate_to_human")
# tau-bench's read-only tools: the intent derivation uses the gold *write* actions only.
TAUBENCH_READ_PREFIXES = ("get_", "find_", "search_", "list_", "calculate", "think")


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
        """Tool names in order; for coding agents the activity steps (search, read:source, edit:source…)."""
        if self.source_format in CODING_FORMATS:
            return [call["args"].get("step", "other") for call in self.tool_calls]
        return [call["name"] for call in self.tool_calls]

    @property
    def tool_names(self) -> list[str]:
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
    # session id (before the prefix) → resolved, e.g. SWE-bench's results.json; see outcomes_from_results
    outcomes: dict[str, bool] | None = None
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


# When a session may have ended: not before agents of this kind existed, not in the future beyond clock
# skew. Outside it a time is a bug or an attack, and far-future times broke the metrics days.
EARLIEST_ENDED_AT = datetime(2000, 1, 1, tzinfo=dt_timezone.utc)
ENDED_AT_SKEW = timedelta(days=1)


def _parse_ended_at(value: Any, errors: list[FieldError], field_name: str = "ended_at") -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return _in_window(datetime.fromtimestamp(float(value), tz=dt_timezone.utc), value, errors, field_name)
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
    try:
        parsed = parsed.astimezone(dt_timezone.utc)  # an offset can carry year 1 or 9999 past the range
    except OverflowError:
        errors.append(FieldError(field_name, f"{value!r} is outside the dates a session can have ended"))
        return None
    return _in_window(parsed, value, errors, field_name)


def _in_window(at: datetime, value: Any, errors: list[FieldError], field_name: str) -> datetime | None:
    latest = timezone.now() + ENDED_AT_SKEW
    if EARLIEST_ENDED_AT <= at <= latest:
        return at
    errors.append(FieldError(
        field_name, f"{value!r} is outside the dates a session can have ended (from {EARLIEST_ENDED_AT:%Y-%m-%d} to one day from now)"
    ))
    return None


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


def normalise_tool_name(name: Any) -> str | None:
    """The tool name procmem stores for a name as an agent wrote it, or None when nothing usable is
    left. Names as agents write HTTP-style calls are kept readable: every run of characters other
    than letters, digits, `_`, `.` and `-` becomes one `_`, and `_` at either end is dropped
    (`GET Observation` → `GET_Observation`, `POST /Patient/$match` → `POST_Patient_match`); a name
    that then starts with a digit, `.` or `-` gets a leading `_`. At most 128 characters."""
    if not isinstance(name, str):
        return None
    cleaned = _TOOL_NAME_OTHER.sub("_", name.strip()).strip("_")
    if cleaned and not (cleaned[0].isalpha() or cleaned[0] == "_"):
        cleaned = "_" + cleaned
    return cleaned if TOOL_NAME_RE.match(cleaned) else None


def _call_entries(value: Any, errors: list[FieldError], field_name: str, *, shape: str, noun: str) -> Iterator[tuple[str, Mapping]]:
    """The objects of a session's list of calls with where each stands (`tool_calls[3]`); errors for
    a value that is not a list, a list longer than MAX_TOOL_CALLS, and an entry that is not an object."""
    if not isinstance(value, list):
        errors.append(FieldError(field_name, f"must be a list of {shape}, got {type(value).__name__}"))
        return
    if len(value) > MAX_TOOL_CALLS:
        errors.append(FieldError(field_name, f"has {len(value)} {noun}; at most {MAX_TOOL_CALLS} are accepted"))
        return
    for index, entry in enumerate(value):
        where = f"{field_name}[{index}]"
        if not isinstance(entry, Mapping):
            errors.append(FieldError(where, f"must be an object {shape}"))
            continue
        yield where, entry


def _clean_tool_calls(value: Any, errors: list[FieldError], field_name: str = "tool_calls") -> list[dict[str, Any]]:
    if value is None:
        return []
    calls: list[dict[str, Any]] = []
    for where, call in _call_entries(value, errors, field_name, shape="{name, args, ok}", noun="calls"):
        name = normalise_tool_name(call.get("name"))
        if name is None:
            errors.append(FieldError(
                f"{where}.name", f"must be a tool name of at most 128 letters, digits, _ . - (after normalisation), got {call.get('name')!r:.80}"
            ))
            continue
        args = call.get("args", {})
        if isinstance(args, str):
            try:
                args = safe_json.parse(args) if args.strip() else {}
            except safe_json.JsonRefused as exc:
                errors.append(FieldError(f"{where}.args", f"is a string that {exc.message}"))
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
        cleaned = {"name": name, "args": dict(args), "ok": ok}
        if call.get("result") is not None:
            # what the tool answered: read for personal values and summarised (store), never stored whole
            cleaned["result"] = call["result"]
        calls.append(cleaned)
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
        if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= MAX_COUNT:
            errors.append(FieldError(f"{where}.version", f"must be a positive integer, got {version!r}"))
            continue
        arm = entry.get("arm")
        if arm is None:
            injected.append({"id": key, "version": version})
        elif arm in INJECTED_ARMS:
            injected.append({"id": key, "version": version, "arm": arm})  # the rollout arm the session got
        else:
            errors.append(FieldError(f"{where}.arm", f"must be one of {', '.join(INJECTED_ARMS)} (the arm the agent API served), got {str(arm)[:40]!r}"))
    return injected


def _clean_instruction_chars(value: Any, errors: list[FieldError], field_name: str = "instruction_chars") -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_COUNT:
        errors.append(FieldError(field_name, f"must be an integer from 0 to {MAX_COUNT}, got {value!r:.40}"))
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


def _json_object(item: Any) -> Mapping[str, Any]:
    if not isinstance(item, Mapping):
        raise ItemInvalid([FieldError("(item)", f"must be a JSON object, got {type(item).__name__}")])
    return item


def _with_prefix(session_id: str, options: ImportOptions) -> str:
    return options.id_prefix + session_id if session_id and options.id_prefix else session_id


def _reported(
    errors: list[FieldError], *, injected: Any, instruction_chars: Any, model: Any, ended_at: Any,
    injected_field: str = "injected", ended_field: str = "ended_at",
) -> dict[str, Any]:
    """What a session says about how it ran: the procedures injected, the instruction size, the model
    and when it ended, each validated under the field name of its format."""
    return {
        "injected": _clean_injected(injected, errors, injected_field),
        "instruction_chars": _clean_instruction_chars(instruction_chars, errors),
        "model": _clean_model(model, errors),
        "ended_at": _parse_ended_at(ended_at, errors, ended_field),
    }


def _valid(session: SessionIn, errors: list[FieldError]) -> SessionIn:
    """The session, or ItemInvalid naming every error found while reading its item."""
    if errors:
        raise ItemInvalid(errors, session.session_id or None)
    return session


def parse_procmem(item: Any, options: ImportOptions | None = None) -> SessionIn:
    options = options or ImportOptions()
    item = _json_object(item)
    errors: list[FieldError] = []
    session_id = _with_prefix(_clean_session_id(item.get("session_id"), errors), options)
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
                if (
                    isinstance(rating_raw, bool)
                    or not isinstance(rating_raw, (int, float))
                    or not math.isfinite(rating_raw)
                    or abs(rating_raw) > MAX_RATING
                ):
                    errors.append(FieldError("outcome.rating", f"must be a finite number of at most {MAX_RATING:g}, got {rating_raw!r:.40}"))
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
        **_reported(
            errors, injected=item.get("injected"), instruction_chars=item.get("instruction_chars"),
            model=item.get("model") or options.model, ended_at=item.get("ended_at"),
        ),
        source_format="procmem",
        reply=_clean_text(item.get("reply"), "reply", errors),
        task_key=_clean_task_key(item.get("task_key"), errors),
        structured=[item.get("tool_results")] if item.get("tool_results") is not None else [],
    )
    return _valid(session, errors)


# ---------------------------------------------------------------------------------------------- chat formats


@dataclass
class Conversation:
    """What procmem keeps of a chat, whatever its format: the customer's opening request, the
    agent's last reply, the tool calls in order (validated afterwards), and what the tools answered
    (read for personal values, never stored)."""

    task: str = ""
    reply: str = ""
    calls: list[dict[str, Any]] = field(default_factory=list)
    results: list[Any] = field(default_factory=list)
    answered: int = 0  # calls answered so far: chat formats answer the calls in order

    def user_said(self, text: str) -> None:
        self.task = self.task or text

    def agent_said(self, text: str) -> None:
        self.reply = text

    def tool_called(self, name: Any, args: Any) -> None:
        self.calls.append({"name": name, "args": args or {}, "ok": True})

    def tool_answered(self, result: Any, *, failed: bool) -> None:
        # A failed answer marks the call before it: chat formats answer the calls in order.
        self.results.append(result)
        if self.answered < len(self.calls):
            self.calls[self.answered]["result"] = result
            self.answered += 1
        if failed and self.calls:
            self.calls[-1]["ok"] = False


# How one chat format reads one of its messages (at `where`) into the conversation.
MessageReader = Callable[[Any, str, Conversation, list[FieldError]], None]


def walk_chat(messages: list[Any], key: str, read: MessageReader, errors: list[FieldError]) -> Conversation:
    """Walks the messages of a chat in order with the format's reader; errors name ``key[index]``."""
    conversation = Conversation()
    for index, message in enumerate(messages):
        read(message, f"{key}[{index}]", conversation, errors)
    return conversation


def _read_openai_message(message: Any, where: str, chat: Conversation, errors: list[FieldError]) -> None:
    if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
        errors.append(FieldError(where, "must be a chat message with a role"))
        return
    role = message["role"]
    content = message.get("content")
    if role == "user" and isinstance(content, str):
        chat.user_said(content)
    elif role == "assistant":
        if isinstance(content, str) and content.strip():
            chat.agent_said(content)
        for call_index, call in enumerate(message.get("tool_calls") or []):
            function = call.get("function") if isinstance(call, Mapping) else None
            if not isinstance(function, Mapping):
                errors.append(FieldError(f"{where}.tool_calls[{call_index}]", "has no function {name, arguments}"))
                continue
            chat.tool_called(function.get("name"), function.get("arguments"))
    elif role == "tool":
        chat.tool_answered(content, failed=isinstance(content, str) and content.lower().startswith("error"))


def _adk_reader(own_author: Any) -> MessageReader:
    """The ADK event reader for a session whose own agent is `own_author`: another author's (a
    sub-agent's) calls and answers are kept as tool data only, never as the session's calls."""

    def read(event: Any, where: str, chat: Conversation, errors: list[FieldError]) -> None:
        if isinstance(event, Mapping) and event.get("author") not in (own_author, "user"):
            _read_adk_event(event, where, _SubAgentConversation(chat), errors)
        else:
            _read_adk_event(event, where, chat, errors)

    return read


class _SubAgentConversation:
    """A view of a conversation for a sub-agent's events: its calls' arguments and its answers go to
    the tool data; its text is not the agent's reply."""

    def __init__(self, chat: Conversation):
        self.chat = chat

    def user_said(self, text: str) -> None:
        self.chat.user_said(text)

    def agent_said(self, text: str) -> None:
        pass

    def tool_called(self, name: Any, args: Any) -> None:
        self.chat.results.append(args)

    def tool_answered(self, result: Any, *, failed: bool) -> None:
        self.chat.results.append(result)


def _read_adk_event(event: Any, where: str, chat: Conversation, errors: list[FieldError]) -> None:
    if not isinstance(event, Mapping):
        errors.append(FieldError(where, "must be an object"))
        return
    content = event.get("content") or {}
    parts = content.get("parts") if isinstance(content, Mapping) else None
    if parts is None:
        return
    if not isinstance(parts, list):
        errors.append(FieldError(f"{where}.content.parts", "must be a list"))
        return
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
            chat.tool_called(call.get("name"), call.get("args"))
        elif response is not None:
            result = response.get("response") if isinstance(response, Mapping) else response
            failed = isinstance(result, Mapping) and bool(result.get("error") or result.get("status") == "error")
            chat.tool_answered(result, failed=failed)
        elif isinstance(text, str) and text.strip():
            if event.get("author") == "user":
                chat.user_said(text)
            else:
                chat.agent_said(text)


def parse_openai(item: Any, options: ImportOptions | None = None) -> SessionIn:
    options = options or ImportOptions()
    item = _json_object(item)
    messages_key = "traj" if "traj" in item else "messages"
    messages = item.get(messages_key)
    if not isinstance(messages, list):
        raise ItemInvalid([FieldError(messages_key, "must be a list of OpenAI chat messages")])
    errors: list[FieldError] = []
    if item.get("session_id") is not None:
        session_id = _clean_session_id(item.get("session_id"), errors)
    elif item.get("task_id") is not None:
        session_id = f"task{item.get('task_id')}-trial{item.get('trial', 0)}"
    else:
        session_id = _clean_session_id(None, errors)
    session_id = _with_prefix(session_id, options)
    chat = walk_chat(messages, messages_key, _read_openai_message, errors)
    tool_calls = _clean_tool_calls(chat.calls, errors, f"{messages_key}.tool_calls")
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
    if item.get("task_key") is not None:
        task_key = _clean_task_key(item.get("task_key"), errors)
    elif item.get("task_id") is not None:  # tau-bench: the trials of one task share its id
        task_key = "task:" + _clean_task_key(item.get("task_id"), errors, "task_id")
    else:
        task_key = ""
    session = SessionIn(
        session_id=session_id,
        intent=_intent_from_options(item, session_id, options, errors, item.get("intent")),
        task=chat.task[:20000],
        resolved=resolved,
        escalated=escalated,
        rating=float(reward) if isinstance(reward, (int, float)) and not isinstance(reward, bool) else None,
        tool_calls=tool_calls,
        **_reported(
            errors, injected=item.get("injected"), instruction_chars=item.get("instruction_chars"),
            model=item.get("model") or options.model, ended_at=item.get("ended_at"),
        ),
        source_format="openai",
        reply=chat.reply[:20000],
        task_key=task_key,
        structured=chat.results,
    )
    return _valid(session, errors)


def parse_adk(item: Any, options: ImportOptions | None = None) -> SessionIn:
    options = options or ImportOptions()
    item = _json_object(item)
    events = item.get("events")
    if not isinstance(events, list):
        raise ItemInvalid([FieldError("events", "must be a list of ADK events")])
    state = item.get("state") if isinstance(item.get("state"), Mapping) else {}
    errors: list[FieldError] = []
    session_id = _with_prefix(_clean_session_id(item.get("id", item.get("session_id")), errors, "id"), options)
    # Only the session's own agent's calls make its skeleton; a sub-agent's calls are its own
    # procedure (they are still read for personal values).
    own_author = options.adk_author or state.get("procmem:author") or next(
        (e.get("author") for e in events if isinstance(e, Mapping) and e.get("author") not in (None, "user")), None
    )
    chat = walk_chat(events, "events", _adk_reader(own_author), errors)
    tool_calls = _clean_tool_calls(chat.calls, errors, "events.functionCall")
    outcome = state.get("outcome") if isinstance(state.get("outcome"), Mapping) else item.get("outcome")
    outcome = outcome if isinstance(outcome, Mapping) else {}
    resolved = _bool_or_none(outcome.get("resolved"), "state.outcome.resolved", errors)
    escalated = _bool_or_none(outcome.get("escalated"), "state.outcome.escalated", errors)
    if any(call["name"] in options.escalation_tools for call in tool_calls):
        escalated = True
    session = SessionIn(
        session_id=session_id,
        intent=_intent_from_options(item, session_id, options, errors, state.get("intent", item.get("intent"))),
        task=chat.task[:20000],
        resolved=resolved,
        escalated=escalated,
        rating=None,
        tool_calls=tool_calls,
        **_reported(
            errors,
            injected=state.get("procmem:injected", state.get("procmem_injected", item.get("injected"))),
            instruction_chars=state.get("procmem:instruction_chars", item.get("instruction_chars")),
            model=state.get("model") or item.get("model") or options.model,
            ended_at=item.get("lastUpdateTime", item.get("last_update_time", item.get("ended_at"))),
            injected_field="state.procmem:injected",
            ended_field="lastUpdateTime",
        ),
        source_format="adk",
        reply=chat.reply[:20000],
        task_key=_clean_task_key(state.get("task_key", item.get("task_key")), errors, "state.task_key"),
        structured=chat.results,
    )
    return _valid(session, errors)


# ---------------------------------------------------------------------------------------------- coding agents


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def coding_call(action: Action, *, command: str, returncode: int | None, output: str = "") -> dict[str, Any]:
    """One coding action as a tool call: the program (or tool) as its name; the command, the
    activity, the step, the target (as named and generalised with its role), the return code and a
    truncated output as its args. ok is the return code 0 (None when unknown)."""
    name = action.program if action.program and TOOL_NAME_RE.match(action.program) else "shell"
    args: dict[str, Any] = {"activity": action.activity, "step": action.step()}
    if command:
        args["command"] = _short(command, MAX_COMMAND_CHARS)
    if action.path:
        args.update(path=action.path, target=action.target, role=action.role)
    if returncode is not None:
        args["returncode"] = returncode
    if output:
        args["output"] = _short(output, MAX_OUTPUT_CHARS)
    return {"name": name, "args": args, "ok": None if returncode is None else returncode == 0}


def _coding_outcome(item: Mapping[str, Any], session_key: str, options: ImportOptions, errors: list[FieldError]) -> bool | None:
    """resolved from the outcome file (SWE-bench results.json) or the item's own outcome."""
    if options.outcomes is not None and session_key in options.outcomes:
        return options.outcomes[session_key]
    outcome = item.get("outcome")
    if isinstance(outcome, Mapping):
        return _bool_or_none(outcome.get("resolved"), "outcome.resolved", errors)
    if outcome is not None:
        errors.append(FieldError("outcome", "must be an object {resolved}"))
    return _bool_or_none(item.get("resolved"), "resolved", errors)


def outcomes_from_results(data: Any) -> dict[str, bool]:
    """instance id → resolved from a SWE-bench results file: ``{"instances": [{instance_id,
    resolved}]}``, ``{"resolved": [ids], "unresolved": [ids]}`` (the harness report) or ``{id: bool}``."""
    if isinstance(data, Mapping) and isinstance(data.get("instances"), list):
        result = {}
        for index, entry in enumerate(data["instances"]):
            if not isinstance(entry, Mapping) or not isinstance(entry.get("instance_id"), str) or not isinstance(entry.get("resolved"), bool):
                raise ValueError(f"instances[{index}] must be {{instance_id: string, resolved: true|false}}")
            result[entry["instance_id"]] = entry["resolved"]
        return result
    if isinstance(data, Mapping) and isinstance(data.get("resolved"), list):
        result = {str(i): False for i in data.get("unresolved", []) or []}
        result.update({str(i): True for i in data["resolved"]})
        return result
    if isinstance(data, Mapping) and all(isinstance(v, bool) for v in data.values()):
        return {str(k): v for k, v in data.items()}
    raise ValueError('not an outcome file: expected {"instances": [{"instance_id", "resolved"}]}, {"resolved": [ids]} or {id: true|false}')


# As mini-swe-agent reads its actions (```bash\s*\n(.*?)\n```) and the outputs in its replies
# (<output>\n?(.*?)</output>), the lazy (.*?) unrolled: the engine runs through a line, or to the
# next "<", instead of trying the end marker after every character (outputs are up to megabytes).
_BASH_BLOCK_RE = re.compile(r"```bash\s*\n([^\n]*(?:\n(?!```)[^\n]*)*)\n```")
_RETURNCODE_RE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")
_OUTPUT_RE = re.compile(r"<output(?:_head|_tail)?>\n?([^<]*(?:<(?!/output(?:_head|_tail)?>)[^<]*)*)</output(?:_head|_tail)?>")
_PR_RE = re.compile(r"<pr_description>(.*?)</pr_description>", re.S)


_DIFF_FILE_RE = re.compile(r"^diff --git a/\S+ b/(\S+)", re.M)
MAX_SUBMITTED_FILES = 50


def submitted_files(patch: str) -> list[str]:
    """The files a unified git diff changes (``diff --git a/x b/x``), in order, at most MAX_SUBMITTED_FILES."""
    return list(dict.fromkeys(_DIFF_FILE_RE.findall(patch or "")))[:MAX_SUBMITTED_FILES]


def _message_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # [{"type": "text", "text": ...}]
        return "\n".join(part.get("text", "") for part in content if isinstance(part, Mapping) and isinstance(part.get("text"), str))
    return ""


def parse_mini_swe_agent(item: Any, options: ImportOptions | None = None) -> SessionIn:
    """A mini-swe-agent trajectory (``.traj.json``, format mini-swe-agent-1): ``{instance_id, info:
    {exit_status, submission}, messages: [{role, content}]}``. Each assistant message holds one
    fenced bash command; the next user message its ``<returncode>`` and ``<output>``. A message
    with no or several commands was refused by the agent's loop (a format error) and ran nothing;
    the submit command's reply is the final patch, kept as the session's reply."""
    options = options or ImportOptions()
    item = _json_object(item)
    messages = item.get("messages")
    if not isinstance(messages, list):
        raise ItemInvalid([FieldError("messages", "must be a list of chat messages {role, content}")])
    errors: list[FieldError] = []
    raw_id = _clean_session_id(item.get("instance_id", item.get("session_id")), errors, "instance_id")
    session_id = _with_prefix(raw_id, options)
    info = item.get("info") if isinstance(item.get("info"), Mapping) else {}
    task = ""
    calls: list[dict[str, Any]] = []
    pending: tuple[str, Action] | None = None
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            errors.append(FieldError(where, "must be a chat message with a role"))
            continue
        role, text = message["role"], _message_text(message.get("content"))
        if role == "user" and pending is None and not task:
            match = _PR_RE.search(text)
            task = (match.group(1) if match else text).strip()
            if match and "Consider the following PR description:" in task:
                task = task.split("Consider the following PR description:", 1)[1].strip()
            continue
        if role == "assistant":
            blocks = _BASH_BLOCK_RE.findall(text)
            pending = (blocks[0].strip(), classify_command(blocks[0])) if len(blocks) == 1 else None
            continue
        if role in ("user", "tool") and pending is not None:
            command, action = pending
            pending = None
            code = _RETURNCODE_RE.search(text)
            if code is None and action.activity != "submit":
                continue  # the loop's format or timeout message: the command did not run
            output = "\n".join(_OUTPUT_RE.findall(text)) if code else ""
            if action.activity == "submit":
                output = ""  # the final patch: kept once, as the reply
            calls.append(coding_call(action, command=command, returncode=int(code.group(1)) if code else None, output=output))
    if pending is not None:
        command, action = pending
        calls.append(coding_call(action, command=command, returncode=None))
    submission = info.get("submission") if isinstance(info.get("submission"), str) else ""
    changed = submitted_files(submission)
    if changed and calls and calls[-1]["args"].get("activity") == "submit":
        # the files the final patch changes: the task family's area (library/coding/families.py),
        # kept on the submit call because the patch itself is kept only as a redacted excerpt
        calls[-1]["args"]["files"] = changed
    tool_calls = _clean_tool_calls(calls, errors, "messages.command")
    intent = _intent_from_options(item, session_id, options, errors, item.get("intent") or DEFAULT_CODING_INTENT)
    model_stats = info.get("model_stats") if isinstance(info.get("model_stats"), Mapping) else {}
    session = SessionIn(
        session_id=session_id,
        intent=intent,
        task=task[:20000],
        resolved=_coding_outcome(item, raw_id, options, errors),
        escalated=False,
        rating=None,
        tool_calls=tool_calls,
        **_reported(
            errors, injected=item.get("injected"), instruction_chars=item.get("instruction_chars"),
            model=item.get("model") or model_stats.get("model") or options.model, ended_at=item.get("ended_at"),
        ),
        source_format="mini-swe-agent",
        reply=submission[:20000],
        # one SWE-bench instance is one task: several runs (models, attempts) of it count once
        task_key=_clean_task_key(item.get("task_key", raw_id), errors),
        # the outputs are in the calls' args already (cut to MAX_OUTPUT_CHARS): read once for redaction
    )
    return _valid(session, errors)


def _clean_trace_actions(value: Any, errors: list[FieldError], field_name: str = "actions") -> list[dict[str, Any]]:
    """The trace hook's actions: ``{"tool": name, "target": path|module|test, "result": exit code}``
    (or ``"command"``: a shell line instead of a tool name). Nothing else is read."""
    calls: list[dict[str, Any]] = []
    for where, entry in _call_entries(value, errors, field_name, shape="{tool or command, target, result}", noun="actions"):
        unknown = sorted(set(entry) - {"tool", "command", "target", "result"})
        if unknown:
            errors.append(FieldError(where, f"has fields the trace format does not carry: {', '.join(unknown)} (only tool or command, target, result)"))
            continue
        tool, command, target, result = entry.get("tool"), entry.get("command"), entry.get("target"), entry.get("result")
        if tool is not None and (not isinstance(tool, str) or not TOOL_NAME_RE.match(tool)):
            errors.append(FieldError(f"{where}.tool", f"must be a tool or command name (letters, digits, _ . -), got {tool!r}"))
            continue
        if command is not None and (not isinstance(command, str) or not command.strip()):
            errors.append(FieldError(f"{where}.command", "must be a non-empty shell command line"))
            continue
        if tool is None and command is None:
            errors.append(FieldError(where, "needs a tool name or a command"))
            continue
        if target is not None and (not isinstance(target, str) or len(target) > 1000):
            errors.append(FieldError(f"{where}.target", "must be a path, module or test name (a string of at most 1000 characters)"))
            continue
        if result is not None and (isinstance(result, bool) or not isinstance(result, int)):
            if isinstance(result, bool):
                result = 0 if result else 1
            else:
                errors.append(FieldError(f"{where}.result", f"must be the exit code (an integer; 0 = success), true/false or null, got {result!r}"))
                continue
        action = classify_tool(tool or "", target or "", command or "")
        call = coding_call(action, command=command or "", returncode=result)
        if tool:
            call["name"] = tool
        calls.append(call)
    return calls


def parse_trace(item: Any, options: ImportOptions | None = None) -> SessionIn:
    """The minimal trace-hook format for any coding agent (docs/api.md "Trace format"):
    ``{"session_id", "task", "intent", "outcome": {"resolved"}, "model", "ended_at", "injected",
    "actions": [{"tool" | "command", "target", "result"}]}``: per action the tool or command, what
    it acted on and its exit code — no arguments, no outputs."""
    options = options or ImportOptions()
    item = _json_object(item)
    errors: list[FieldError] = []
    raw_id = _clean_session_id(item.get("session_id"), errors)
    session_id = _with_prefix(raw_id, options)
    calls = _clean_trace_actions(item.get("actions"), errors)
    session = SessionIn(
        session_id=session_id,
        intent=_intent_from_options(item, session_id, options, errors, item.get("intent") or DEFAULT_CODING_INTENT),
        task=_clean_text(item.get("task"), "task", errors),
        resolved=_coding_outcome(item, raw_id, options, errors),
        escalated=False,
        rating=None,
        tool_calls=_clean_tool_calls(calls, errors, "actions") if not errors else calls,
        **_reported(
            errors, injected=item.get("injected"), instruction_chars=item.get("instruction_chars"),
            model=item.get("model") or options.model, ended_at=item.get("ended_at"),
        ),
        source_format="trace",
        task_key=_clean_task_key(item.get("task_key"), errors),
    )
    return _valid(session, errors)


PARSERS: dict[str, Callable[[Any, ImportOptions | None], SessionIn]] = {
    "procmem": parse_procmem,
    "openai": parse_openai,
    "adk": parse_adk,
    "mini-swe-agent": parse_mini_swe_agent,
    "trace": parse_trace,
}


def detect_format(item: Any) -> str:
    if isinstance(item, Mapping):
        if str(item.get("trajectory_format", "")).startswith("mini-swe-agent") or ("instance_id" in item and "messages" in item):
            return "mini-swe-agent"
        if "actions" in item and "tool_calls" not in item:
            return "trace"
        if "traj" in item or "messages" in item:
            return "openai"
        if "events" in item:
            return "adk"
    return "procmem"


def parse_item(item: Any, *, fmt: str = "auto", options: ImportOptions | None = None) -> SessionIn:
    """One session from one item, or ItemInvalid naming every problem. The item first passes the
    storable-value check of library/safe_json.py (no NUL, no lone surrogate, finite numbers, 64-bit
    integers, nesting of at most 64 levels), so nothing the parsers keep can fail in the database."""
    try:
        safe_json.check(item)
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
