"""What every session format yields (library/ingest/formats reads the formats), and the checks of its fields: `SessionIn`, `ImportOptions`,
`FieldError` and `ItemInvalid`, and the validation each parser applies to what it read (session
ids, tool calls, injected procedures, times, intents). Nothing here touches the database."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.utils import timezone
from django.utils.dateparse import parse_datetime

from .. import safe_json
from ..tool_names import normalise_tool_name

# formats of coding agents: each call carries its activity class and generalised target, and the
# session's skeleton is the sequence of activity steps (library/coding/activities.py)
CODING_FORMATS = ("mini-swe-agent", "trace")
INTENT_DERIVATIONS = ("taubench-actions",)
INTENT_RE = re.compile(r"^[a-z][a-z0-9_\-]*$")
MAX_TOOL_CALLS = 500  # per session; docs/api.md "Limits"
INJECTED_ARMS = ("rollout", "control")  # library.models.Rollout.Arm; formats import no models
MAX_COUNT = 2**31 - 1  # integer fields stored in 32-bit columns (instruction_chars, injected versions)
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
        errors.append(
            FieldError(
                field_name, f"{value!r} is not an intent name (lower-case letters, digits, _ and -; at most 100)"
            )
        )
        return None
    return name


def bool_or_none(value: Any, field_name: str, errors: list[FieldError]) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    errors.append(FieldError(field_name, f"must be true, false or null, got {value!r}"))
    return None


# When a session may have ended: not before agents of this kind existed, not in the future beyond clock
# skew. Outside it a time is a bug or an attack, and far-future times broke the metrics days.
EARLIEST_ENDED_AT = datetime(2000, 1, 1, tzinfo=UTC)
ENDED_AT_SKEW = timedelta(days=1)


def parse_ended_at(value: Any, errors: list[FieldError], field_name: str = "ended_at") -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return _in_window(datetime.fromtimestamp(float(value), tz=UTC), value, errors, field_name)
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
        parsed = timezone.make_aware(parsed, UTC)
    try:
        parsed = parsed.astimezone(UTC)  # an offset can carry year 1 or 9999 past the range
    except OverflowError:
        errors.append(FieldError(field_name, f"{value!r} is outside the dates a session can have ended"))
        return None
    return _in_window(parsed, value, errors, field_name)


def _in_window(at: datetime, value: Any, errors: list[FieldError], field_name: str) -> datetime | None:
    latest = timezone.now() + ENDED_AT_SKEW
    if EARLIEST_ENDED_AT <= at <= latest:
        return at
    errors.append(
        FieldError(
            field_name,
            f"{value!r} is outside the dates a session can have ended (from {EARLIEST_ENDED_AT:%Y-%m-%d} to one day from now)",
        )
    )
    return None


def clean_session_id(value: Any, errors: list[FieldError], field_name: str = "session_id") -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        errors.append(FieldError(field_name, "is required: a non-empty string that identifies the session"))
        return ""
    value = value.strip()
    if len(value) > 200:
        errors.append(FieldError(field_name, "is longer than 200 characters"))
    return value


def call_entries(
    value: Any, errors: list[FieldError], field_name: str, *, shape: str, noun: str
) -> Iterator[tuple[str, Mapping]]:
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
        # a dict is a Mapping: asked first, as the ABC's check costs ten times more
        if not (type(entry) is dict or isinstance(entry, Mapping)):
            errors.append(FieldError(where, f"must be an object {shape}"))
            continue
        yield where, entry


def clean_tool_calls(value: Any, errors: list[FieldError], field_name: str = "tool_calls") -> list[dict[str, Any]]:
    if value is None:
        return []
    calls: list[dict[str, Any]] = []
    # a session's calls repeat a few names (the other repositories' 6,405 calls): each normalised once
    names: dict[str, str | None] = {}
    for where, call in call_entries(value, errors, field_name, shape="{name, args, ok}", noun="calls"):
        raw_name = call.get("name")
        if type(raw_name) is str:
            name = names[raw_name] if raw_name in names else names.setdefault(raw_name, normalise_tool_name(raw_name))
        else:
            name = normalise_tool_name(raw_name)
        if name is None:
            errors.append(
                FieldError(
                    f"{where}.name",
                    f"must be a tool name of at most 128 letters, digits, _ . - (after normalisation), got {call.get('name')!r:.80}",
                )
            )
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
        if not (type(args) is dict or isinstance(args, Mapping)):
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
            errors.append(
                FieldError(
                    f"{where}.arm",
                    f"must be one of {', '.join(INJECTED_ARMS)} (the arm the agent API served), got {str(arm)[:40]!r}",
                )
            )
    return injected


def _clean_instruction_chars(value: Any, errors: list[FieldError], field_name: str = "instruction_chars") -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_COUNT:
        errors.append(FieldError(field_name, f"must be an integer from 0 to {MAX_COUNT}, got {value!r:.40}"))
        return None
    return value


def clean_text(value: Any, field_name: str, errors: list[FieldError], *, max_chars: int = 20000) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        errors.append(FieldError(field_name, f"must be a string, got {type(value).__name__}"))
        return ""
    return value[:max_chars]


def _clean_model(value: Any, errors: list[FieldError], field_name: str = "model") -> str:
    text = clean_text(value, field_name, errors)
    if len(text) > 128:
        errors.append(FieldError(field_name, "is longer than 128 characters"))
    return text


def clean_task_key(value: Any, errors: list[FieldError], field_name: str = "task_key") -> str:
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


def intent_from_options(
    item: Any, session_id: str, options: ImportOptions, errors: list[FieldError], fallback: Any
) -> str | None:
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
        {a.get("name") for a in actions if isinstance(a, Mapping) and isinstance(a.get("name"), str)} - {None}
    )
    writes = [n for n in names if not n.startswith(TAUBENCH_READ_PREFIXES)]
    return "-".join(writes) if writes else "no_write_action"


def json_object(item: Any) -> Mapping[str, Any]:
    if not isinstance(item, Mapping):
        raise ItemInvalid([FieldError("(item)", f"must be a JSON object, got {type(item).__name__}")])
    return item


def with_prefix(session_id: str, options: ImportOptions) -> str:
    return options.id_prefix + session_id if session_id and options.id_prefix else session_id


def reported(
    errors: list[FieldError],
    *,
    injected: Any,
    instruction_chars: Any,
    model: Any,
    ended_at: Any,
    injected_field: str = "injected",
    ended_field: str = "ended_at",
) -> dict[str, Any]:
    """What a session says about how it ran: the procedures injected, the instruction size, the model
    and when it ended, each validated under the field name of its format."""
    return {
        "injected": _clean_injected(injected, errors, injected_field),
        "instruction_chars": _clean_instruction_chars(instruction_chars, errors),
        "model": _clean_model(model, errors),
        "ended_at": parse_ended_at(ended_at, errors, ended_field),
    }


def valid_session(session: SessionIn, errors: list[FieldError]) -> SessionIn:
    """The session, or ItemInvalid naming every error found while reading its item."""
    if errors:
        raise ItemInvalid(errors, session.session_id or None)
    return session
