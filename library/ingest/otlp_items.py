"""What an OTLP session's spans become (library/ingest/otlp.py): `SpanIn`, one span as read, and
`session_item`, the procmem-format item of a complete session — its tool calls, task, reply,
model, intent, task key and outcome, read from the GenAI semantic conventions', OpenLLMetry's and
OpenInference's attributes (docs/api.md "OpenTelemetry traces")."""

from __future__ import annotations

import hashlib
import hmac
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.conf import settings

from .. import safe_json
from ..models import OtlpSpan
from ..redaction.identifiers import personal_in_identifier, redacted_identifier
from .formats import normalise_tool_name

# chat messages recorded one attribute per field (OpenLLMetry, OpenInference)
INDEXED_MESSAGE_PREFIXES = ("gen_ai.prompt.", "gen_ai.completion.", "llm.input_messages.", "llm.output_messages.")
MAX_INDEX_DIGITS = 6  # gen_ai.prompt.N.*: a message index past 999999 is not a message


@dataclass
class SpanIn:
    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    start_ns: int
    end_ns: int
    failed: bool
    attributes: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)
    normalised_tool: str | None = None  # a tool span's name as stored (set when the span is read)
    notes: list[str] = field(default_factory=list)  # identifiers replaced or dropped (screen_identifiers)

    @property
    def conversation_id(self) -> str:
        value = self.attributes.get("gen_ai.conversation.id", self.attributes.get("session.id"))
        return str(value).strip()[:200] if isinstance(value, (str, int)) and not isinstance(value, bool) else ""

    @property
    def is_tool(self) -> bool:
        return (
            self.attributes.get("gen_ai.operation.name") == "execute_tool"
            or str(self.attributes.get("openinference.span.kind", "")).upper() == "TOOL"
        )

    @property
    def tool_name(self) -> Any:
        return self.attributes.get(
            "gen_ai.tool.name", self.attributes.get("tool.name", self.name.removeprefix("execute_tool ").strip())
        )


# ---------------------------------------------------------------------------------------------- identifiers

SESSION_ID_KEYS = ("gen_ai.conversation.id", "session.id")
# dropped when they look personal: a session without them is still a session
DROPPED_IF_PERSONAL = ("gen_ai.request.model", "gen_ai.response.model", "llm.model_name", "procmem.intent")
# replaced by a keyed digest: they group sessions, and the digest of a value still groups its sessions
DIGESTED_IF_PERSONAL = ("procmem.task_key",)


def personal_session_id(value: str) -> str:
    """The session id stored for a conversation id that looks personal: a keyed digest (the same
    for the same id, so a conversation's traces stay one session and an outcome sent with the
    original id still finds it; library/api/ingest.py)."""
    return "otlp-" + _digest("session", value)


def _digest(kind: str, value: str) -> str:
    return hmac.new(settings.SECRET_KEY.encode(), f"{kind}:{value}".encode(), hashlib.sha256).hexdigest()[:24]


def screen_identifiers(name: str, attributes: dict[str, Any]) -> tuple[str, list[str]]:
    """The span's name with what looks personal replaced by placeholders, and what was changed in
    `attributes` (in place): a conversation id that looks personal becomes `personal_session_id`,
    a model or intent is dropped, a task key becomes a digest (library/redaction/identifiers.py
    decides). Returns the name and one note per change, naming the key and the kind, never the value."""
    notes: list[str] = []
    for key in SESSION_ID_KEYS:
        value = attributes.get(key)
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            text = str(value).strip()[:200]
            found = personal_in_identifier(text)
            if found:
                attributes[key] = personal_session_id(text)
                notes.append(f"{key} looks personal ({', '.join(found)}): the session id is {attributes[key]}")
    for key in (*DROPPED_IF_PERSONAL, *DIGESTED_IF_PERSONAL):
        value = attributes.get(key)
        if isinstance(value, str):
            found = personal_in_identifier(value)
            if found:
                if key in DIGESTED_IF_PERSONAL:
                    attributes[key] = "k-" + _digest(key, value)
                    notes.append(f"{key} looks personal ({', '.join(found)}): stored as {attributes[key]}")
                else:
                    del attributes[key]
                    notes.append(f"{key} looks personal ({', '.join(found)}): dropped")
    screened = redacted_identifier(name)
    if screened != name:
        notes.append(
            f"the span name looks personal ({', '.join(personal_in_identifier(name))}): stored as {screened!r}"
        )
    return screened, notes


# ---------------------------------------------------------------------------------------------- the item


def _json_or_text(value: Any) -> Any:
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        try:
            return safe_json.parse(value)
        except safe_json.JsonRefused:
            return value
    return value


def _message_text(message: Any) -> str:
    """The text of one chat message in any of the shapes instrumentations record."""
    if not isinstance(message, Mapping):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = (
        message.get("parts") if isinstance(message.get("parts"), list) else content if isinstance(content, list) else []
    )
    texts = []
    for part in parts:
        if isinstance(part, Mapping) and part.get("type", "text") == "text":
            text = part.get("content", part.get("text"))
            if isinstance(text, str):
                texts.append(text)
    return "\n".join(texts)


def _messages(attributes: Mapping[str, Any], events: list[dict[str, Any]], *, output: bool) -> list[dict[str, Any]]:
    """The span's input (or output) messages as [{role, text}]: GenAI semconv's
    gen_ai.input.messages / gen_ai.output.messages, OpenLLMetry's gen_ai.prompt.N.* /
    gen_ai.completion.N.*, OpenInference's llm.input_messages.N.message.* / llm.output_messages.N.*,
    and the older gen_ai.user.message / gen_ai.choice events."""
    found: list[dict[str, Any]] = []
    whole = attributes.get("gen_ai.output.messages" if output else "gen_ai.input.messages")
    if whole is not None:
        whole = _json_or_text(whole)
        if isinstance(whole, list):
            found.extend({"role": m.get("role", ""), "text": _message_text(m)} for m in whole if isinstance(m, Mapping))
    if any(key.startswith(INDEXED_MESSAGE_PREFIXES) for key in attributes):
        found.extend(_indexed_messages(attributes, output=output))
    for event in events:
        names = ("gen_ai.choice", "gen_ai.assistant.message") if output else ("gen_ai.user.message",)
        if event["name"] in names:
            text = _message_text(_json_or_text(event["attributes"].get("message"))) or event["attributes"].get(
                "content"
            )
            found.append({"role": "assistant" if output else "user", "text": text if isinstance(text, str) else ""})
    return found


def _indexed_messages(attributes: Mapping[str, Any], *, output: bool) -> list[dict[str, Any]]:
    """OpenLLMetry's gen_ai.prompt.N.role/content (gen_ai.completion.N.*) and OpenInference's
    llm.input_messages.N.message.role/content (llm.output_messages.N.*), in N order."""
    found: list[dict[str, Any]] = []
    for prefix, role_key, content_key in (
        ("gen_ai.completion." if output else "gen_ai.prompt.", "role", "content"),
        ("llm.output_messages." if output else "llm.input_messages.", "message.role", "message.content"),
    ):
        indexed: dict[int, dict[str, Any]] = defaultdict(dict)
        for key, value in attributes.items():
            if key.startswith(prefix):
                index, _, rest = key[len(prefix) :].partition(".")
                # an index is ASCII digits only: str.isdigit() also admits "²" or "٣", which int()
                # refuses (issue 42: one such key stopped every session's flush); others are ignored
                if (
                    index.isascii()
                    and index.isdigit()
                    and len(index) <= MAX_INDEX_DIGITS
                    and rest in (role_key, content_key)
                ):
                    indexed[int(index)]["role" if rest == role_key else "text"] = value
        found.extend(
            {"role": m.get("role", ""), "text": m.get("text") if isinstance(m.get("text"), str) else ""}
            for _, m in sorted(indexed.items())
        )
    return found


def _first(spans: list[OtlpSpan], *keys: str) -> Any:
    for span in spans:
        for key in keys:
            value = span.attributes.get(key)
            if value not in (None, ""):
                return value
    return None


def _tool_call(span: OtlpSpan | SpanIn) -> dict[str, Any]:
    attributes = span.attributes
    args = _json_or_text(attributes.get("gen_ai.tool.call.arguments", attributes.get("input.value")))
    name = span.normalised_tool if isinstance(span, SpanIn) and span.normalised_tool else None
    call: dict[str, Any] = {
        "name": name
        or normalise_tool_name((span if isinstance(span, SpanIn) else SpanIn(**_span_fields(span))).tool_name),
        "args": args if isinstance(args, Mapping) else ({} if args in (None, "") else {"input": args}),
        "ok": not span.failed,
    }
    result = attributes.get("gen_ai.tool.call.result", attributes.get("output.value"))
    if result is not None:
        call["result"] = _json_or_text(result)
    return call


def _span_fields(span: OtlpSpan) -> dict[str, Any]:
    return dict(
        trace_id=span.trace_id,
        span_id=span.span_id,
        parent_span_id=span.parent_span_id,
        name=span.name,
        start_ns=span.start_ns,
        end_ns=span.end_ns,
        failed=span.failed,
        attributes=span.attributes,
        events=span.events,
    )


def _firsts(spans: list[OtlpSpan] | list[SpanIn], keys: tuple[str, ...]) -> dict[str, Any]:
    """Each key's first value (neither None nor "") in span order, in one pass over the spans:
    `_first(spans, key)` for each key."""
    found: dict[str, Any] = {}
    for span in spans:
        attributes = span.attributes
        for key in keys:
            if key not in found:
                value = attributes.get(key)
                if value not in (None, ""):
                    found[key] = value
        if len(found) == len(keys):
            break
    return found


OWN_KEYS = (
    "procmem.intent",
    "procmem.task_key",
    "procmem.outcome.resolved",
    "procmem.outcome.escalated",
    "procmem.outcome.rating",
)


def _outcome(own: Mapping[str, Any]) -> dict[str, Any] | None:
    outcome = {k: own.get(f"procmem.outcome.{k}") for k in ("resolved", "escalated", "rating")}
    return outcome if any(v is not None for v in outcome.values()) else None


def session_item(session_id: str, spans: list[OtlpSpan] | list[SpanIn]) -> dict[str, Any]:
    """The procmem-format item of one complete session: the tool calls of its execute_tool (or
    OpenInference TOOL) spans in start order, the task from the first user message, the model
    from gen_ai.request.model, the reply from the last assistant message, the end time from the
    last span's end."""
    spans = sorted(spans, key=lambda s: (s.start_ns, s.end_ns, s.span_id))
    task = reply = ""
    for span in spans:  # the first span with a user message
        task = next(
            (
                m["text"]
                for m in _messages(span.attributes, span.events, output=False)
                if m["role"] == "user" and m["text"]
            ),
            "",
        )
        if task:
            break
    for span in reversed(spans):  # the last span with an assistant message: its last one
        said = [
            m["text"]
            for m in _messages(span.attributes, span.events, output=True)
            if m["role"] in ("assistant", "") and m["text"]
        ]
        if said:
            reply = said[-1]
            break
    if not task:  # an OpenInference agent or chain span's input is the user's request
        root = next(
            (s for s in spans if not s.parent_span_id and isinstance(s.attributes.get("input.value"), str)), None
        )
        task = root.attributes["input.value"] if root is not None else ""
    ended = max((s.end_ns for s in spans), default=0)
    own = _firsts(spans, OWN_KEYS)
    item: dict[str, Any] = {
        "session_id": session_id,
        "task": task,
        "reply": reply,
        "tool_calls": [
            _tool_call(s)
            for s in spans
            if s.attributes.get("gen_ai.operation.name") == "execute_tool"
            or str(s.attributes.get("openinference.span.kind", "")).upper() == "TOOL"
        ],
        "model": _first(spans, "gen_ai.request.model", "llm.model_name", "gen_ai.response.model") or "",
        "intent": own.get("procmem.intent"),
        "task_key": own.get("procmem.task_key"),
        "ended_at": datetime.fromtimestamp(ended / 1e9, tz=UTC).isoformat() if ended else None,
    }
    outcome = _outcome(own)
    if outcome is not None:
        item["outcome"] = outcome
    return item
