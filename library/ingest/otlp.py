"""OpenTelemetry traces in: POST /api/otlp/v1/traces (OTLP/HTTP, docs/api.md "OpenTelemetry traces").

What an OTLP request becomes:

1. `decode_request`: the body, protobuf (`application/x-protobuf`) or JSON (`application/json`,
   OTLP's JSON mapping: ids as hex), into the `ExportTraceServiceRequest` of the maintained
   definitions (the `opentelemetry-proto` package). A body that is neither is refused whole.
2. `spans_of`: every span read on its own into a `SpanIn` — its ids, times, status, and only its
   GenAI-semconv and OpenInference attributes (everything else a trace carries, HTTP and database
   attributes, is never kept). A span with none of them, with invalid ids, with a tool name that does
   not normalise, or with values PostgreSQL cannot hold is rejected with its reason (the response's
   partial success counts them).
3. `spans_stage`: accepted spans wait in `OtlpSpan` rows, idempotently by (trace id, span id).
4. `sessions_flush`: a session is complete when (a) a root span (one without a parent) of each of
   its traces has arrived and no span of it came for PROCMEM_OTLP_QUIET_SECONDS, or (b) no span of
   it came for PROCMEM_OTLP_MAX_WAIT_SECONDS (a trace whose root was never sent). It is then built
   (`session_item`, library/ingest/otlp_items.py) into a procmem-format item and stored through the
   same parser, limits, tool-name rules and redaction as POST /api/v1/sessions. New spans of a
   session already stored are rejected as late; a span resent unchanged is a duplicate and changes
   nothing. A session whose building or storing raises is retried with back-off and dead-lettered
   without stopping the others (library/ingest/otlp_failures.py).

The session id is `gen_ai.conversation.id` (OpenInference: `session.id`) when a span of the trace
carries one, else the trace id in hex; a conversation's traces (one per turn) make one session.
"""

from __future__ import annotations

import base64
import logging
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models import Count, Max, Min, Q
from django.utils import timezone
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from .. import formatting, safe_json
from ..models import Agent, AgentSession, OtlpSpan
from . import otlp_failures
from .formats import ImportOptions, ItemInvalid, normalise_tool_name, parse_item
from .otlp_items import SpanIn, screen_identifiers, session_item
from .otlp_outcomes import held_outcomes_apply, lock_sessions
from .store import StoreResult, sessions_store

logger = logging.getLogger(__name__)

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
# attribute names kept from a span: the GenAI semantic conventions, OpenInference's, OpenLLMetry's
# prompt/completion attributes (gen_ai.prompt.N.*), and procmem's own (procmem.intent, procmem.outcome.*)
KEPT_PREFIXES = ("gen_ai.", "llm.", "tool.", "tool_call.", "input.", "output.", "openinference.", "procmem.")
KEPT_NAMES = {"session.id", "error.type"}
# what marks a span as one of an agent's: any of these
GENAI_PREFIXES = ("gen_ai.", "llm.", "tool.", "openinference.")
MAX_VALUE_DEPTH = 16
KEEP_STORED_SPANS = timedelta(days=1)
_ID_KEYS = {"traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"}


class OtlpRefused(Exception):
    """A request refused whole: the HTTP status and what was wrong (sent as a google.rpc.Status)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


# ---------------------------------------------------------------------------------------------- decoding


def _ids_to_base64(value: Any, path: str) -> None:
    """OTLP/JSON writes trace and span ids as hex, where protobuf's JSON mapping expects base64:
    rewrites them in place (spans and their links), refusing one that is not hex."""
    if isinstance(value, list):
        for index, item in enumerate(value):
            _ids_to_base64(item, f"{path}[{index}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            if key in _ID_KEYS and isinstance(item, str):
                try:
                    value[key] = base64.b64encode(bytes.fromhex(item)).decode("ascii")
                except ValueError:
                    raise OtlpRefused(400, f"{path}.{key} must be a hex id, got {item[:40]!r}") from None
            elif isinstance(item, (list, dict)) and key not in ("attributes", "resource"):
                _ids_to_base64(item, f"{path}.{key}" if path else key)


def decode_request(body: bytes, content_type: str) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    if content_type == PROTOBUF:
        try:
            request.ParseFromString(body)
        except (DecodeError, RecursionError, ValueError) as exc:
            raise OtlpRefused(400, f"The body is not an ExportTraceServiceRequest in protobuf: {exc}") from None
        return request
    if content_type == JSON:
        try:
            payload = safe_json.parse(body or b"null", check_values=False)
        except safe_json.JsonRefused as exc:
            raise OtlpRefused(400, f"The body {exc.message}.") from None
        if not isinstance(payload, dict):
            raise OtlpRefused(400, 'The body must be an ExportTraceServiceRequest object: {"resourceSpans": [...]}.')
        _ids_to_base64(payload, "")
        try:
            json_format.ParseDict(payload, request, ignore_unknown_fields=True)
        except (json_format.ParseError, RecursionError, ValueError, TypeError) as exc:
            raise OtlpRefused(
                400, f"The body is not an ExportTraceServiceRequest in OTLP/JSON: {str(exc)[:300]}"
            ) from None
        return request
    raise OtlpRefused(415, f"Content-Type must be {PROTOBUF} or {JSON}, not {content_type or 'none'!r}.")


def _value(value: AnyValue, depth: int = 0) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if depth >= MAX_VALUE_DEPTH:
        raise ValueError(f"nested deeper than {MAX_VALUE_DEPTH} levels")
    if kind == "array_value":
        return [_value(v, depth + 1) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value, depth + 1) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return None  # binary payloads (images, audio) are never kept
    return getattr(value, kind)


def _kept_attributes(pairs: Iterable[Any]) -> dict[str, Any]:
    """The pairs whose key is kept, converted; every other value is never read (a span's HTTP and
    database attributes, a message's binary parts)."""
    kept: dict[str, Any] = {}
    for pair in pairs:
        key = pair.key
        if key.startswith(KEPT_PREFIXES) or key in KEPT_NAMES:
            value = pair.value
            text = value.string_value  # nearly all of them: read as it is, no conversion
            if text:
                kept[key] = text
                continue
            found = _value(value)
            if found is not None:
                kept[key] = found
    return kept


# ---------------------------------------------------------------------------------------------- one span


@dataclass
class Rejected:
    span: str  # where: resourceSpans[0].scopeSpans[1].spans[3]
    message: str


def _hex_id(raw: bytes, size: int) -> str | None:
    return raw.hex() if len(raw) == size and any(raw) else None


def _read_span(span: Span) -> SpanIn | str:
    """The span, or why it is rejected. Each field of the protobuf span is read once (every read of
    a field builds a new Python object)."""
    trace_id, span_id = _hex_id(span.trace_id, 16), _hex_id(span.span_id, 8)
    if trace_id is None or span_id is None:
        return "has an invalid trace or span id (16 and 8 bytes, not all zero)"
    parent = span.parent_span_id
    if parent and _hex_id(parent, 8) is None:
        return "has an invalid parent span id"
    try:
        attributes = _kept_attributes(span.attributes)
        span_events = span.events
        events = (
            [
                {
                    "name": event.name,
                    "attributes": _kept_attributes(event.attributes)
                    or {
                        kv.key: _value(kv.value) for kv in event.attributes if kv.key in ("content", "role", "message")
                    },
                }
                for event in span_events
                if event.name.startswith("gen_ai.")
            ]
            if span_events
            else []
        )
    except ValueError as exc:
        return f"has an attribute {exc}"
    if not any(key.startswith(GENAI_PREFIXES) for key in attributes):
        return "has no GenAI (gen_ai.*) or OpenInference attribute: not a span of an agent"
    start, end = span.start_time_unix_nano, span.end_time_unix_nano
    if end and end < start:
        return "ends before it starts"
    # identifiers that look personal are replaced or dropped before anything keeps them (issue 42)
    name, notes = screen_identifiers(span.name[:200], attributes)
    found = SpanIn(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent.hex() if parent else "",
        name=name,
        start_ns=min(start, 2**63 - 1),
        end_ns=min(end, 2**63 - 1),
        failed=span.status.code == Status.STATUS_CODE_ERROR or "error.type" in attributes,
        attributes=attributes,
        events=events,
        notes=notes,
    )
    if found.is_tool:
        found.normalised_tool = normalise_tool_name(found.tool_name)
        if found.normalised_tool is None:
            return f"is a tool call whose name {str(found.tool_name)[:80]!r} is not a tool name (letters, digits, _ . -, at most 128)"
    return found


def spans_of(request: ExportTraceServiceRequest) -> tuple[list[SpanIn], list[Rejected]]:
    accepted: list[SpanIn] = []
    rejected: list[Rejected] = []
    for r, resource_spans in enumerate(request.resource_spans):
        for s, scope_spans in enumerate(resource_spans.scope_spans):
            for i, span in enumerate(scope_spans.spans):
                read = _read_span(span)
                if isinstance(read, str):
                    rejected.append(Rejected(f"resourceSpans[{r}].scopeSpans[{s}].spans[{i}]", read))
                else:
                    accepted.append(read)
    return accepted, rejected


# ---------------------------------------------------------------------------------------------- staging


def _unstorable(span: SpanIn) -> str:
    """Why the span's kept values cannot wait in the database (a NUL, a lone surrogate, an integer
    past 64 bits), or "". Spans stored straight from their request are checked by the parser."""
    try:
        safe_json.check({"name": span.name, "attributes": span.attributes, "events": span.events})
    except safe_json.JsonRefused as exc:
        return f"has a value that cannot be stored at {exc.path or 'its name'}: {exc.message}"
    return ""


def spans_stage(*, agent: Agent, spans: list[SpanIn], now: datetime | None = None) -> list[Rejected]:
    """Stores the accepted spans of one request as pending OtlpSpan rows, in one transaction.
    Returns the spans rejected: new spans of a session stored already (late), and spans with a value
    that cannot be stored. A span received before (the same trace and span id) is a duplicate:
    nothing changes."""
    now = now or timezone.now()
    if not spans:
        return []
    trace_ids = {s.trace_id for s in spans}
    known: dict[tuple[str, str], str] = {}
    closed_traces: dict[str, str] = {}
    dead: set[str] = set()
    for trace_id, span_id, state, session_id in OtlpSpan.objects.filter(
        agent=agent, trace_id__in=trace_ids
    ).values_list("trace_id", "span_id", "state", "session_id"):
        known[(trace_id, span_id)] = state
        if state != OtlpSpan.State.PENDING:
            closed_traces[trace_id] = session_id or trace_id
            if state == OtlpSpan.State.DEAD:
                dead.add(session_id or trace_id)
    # a trace first seen now, whose conversation is stored already
    keys = {s.conversation_id for s in spans if s.conversation_id} | trace_ids
    stored = set(AgentSession.objects.filter(agent=agent, session_id__in=keys).values_list("session_id", flat=True))
    dead |= otlp_failures.dead_lettered(agent, keys)
    stored |= dead
    waiting = _waiting_counts(agent, spans)
    limit = max_spans_per_session()
    late: list[Rejected] = []
    rows: list[OtlpSpan] = []
    seen: set[tuple[str, str]] = set()
    for span in spans:
        key = (span.trace_id, span.span_id)
        if key in known or key in seen:
            continue
        seen.add(key)
        problem = _unstorable(span)
        if problem:
            late.append(Rejected(f"span {span.span_id} of trace {span.trace_id}", problem))
            continue
        session = closed_traces.get(span.trace_id) or (
            (span.conversation_id or span.trace_id) if (span.conversation_id or span.trace_id) in stored else ""
        )
        if session:
            late.append(
                Rejected(
                    f"span {span.span_id} of trace {span.trace_id}",
                    f"belongs to session {session!r}, which is dead-lettered (storing it kept failing; an "
                    "operator can retry it); spans are not added to it"
                    if session in dead
                    else f"arrived after its session {session!r} was stored; late spans are not added",
                )
            )
            continue
        session_key = span.conversation_id or span.trace_id
        if waiting[session_key] >= limit:
            late.append(
                Rejected(
                    f"span {span.span_id} of trace {span.trace_id}",
                    f"belongs to session {session_key!r}, which has {limit} spans waiting already "
                    "(PROCMEM_OTLP_MAX_SPANS_PER_SESSION); no more are kept",
                )
            )
            continue
        waiting[session_key] += 1
        rows.append(
            OtlpSpan(
                agent=agent,
                trace_id=span.trace_id,
                span_id=span.span_id,
                parent_span_id=span.parent_span_id,
                conversation_id=span.conversation_id,
                name=span.name,
                start_ns=span.start_ns,
                end_ns=span.end_ns,
                failed=span.failed,
                attributes=span.attributes,
                events=span.events,
                received_at=now,
            )
        )
    if rows:
        OtlpSpan.objects.bulk_create(rows, ignore_conflicts=True)
    return late


def _waiting_counts(agent: Agent, spans: list[SpanIn]) -> Counter:
    """Spans waiting now per session of these spans (a conversation id, else a trace id)."""
    counts: Counter = Counter()
    pending = OtlpSpan.objects.filter(agent=agent, state=OtlpSpan.State.PENDING)
    conversations = sorted({s.conversation_id for s in spans if s.conversation_id})
    plain = sorted({s.trace_id for s in spans if not s.conversation_id})
    with _index_scans():
        if conversations:
            counts.update(
                dict(
                    pending.filter(conversation_id__in=conversations)
                    .values_list("conversation_id")
                    .annotate(n=Count("id"))
                    .order_by()
                )
            )
        if plain:
            counts.update(
                dict(
                    pending.filter(trace_id__in=plain, conversation_id="")
                    .values_list("trace_id")
                    .annotate(n=Count("id"))
                    .order_by()
                )
            )
    return counts


def max_spans_per_request() -> int:
    return int(getattr(settings, "PROCMEM_OTLP_MAX_SPANS_PER_REQUEST", 10_000))


def max_spans_per_session() -> int:
    return int(getattr(settings, "PROCMEM_OTLP_MAX_SPANS_PER_SESSION", 5_000))


# ---------------------------------------------------------------------------------------------- sessions


def quiet_seconds() -> float:
    return float(getattr(settings, "PROCMEM_OTLP_QUIET_SECONDS", 60))


def max_wait_seconds() -> float:
    return float(getattr(settings, "PROCMEM_OTLP_MAX_WAIT_SECONDS", 3600))


@dataclass
class FlushResult:
    stored: list[str] = field(default_factory=list)
    duplicate: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)  # session id → why
    failed: dict[str, str] = field(default_factory=dict)  # session id → the fault (otlp_failures), retried
    dead: list[str] = field(default_factory=list)  # dead-lettered by this flush


@contextmanager
def _index_scans() -> Iterator[None]:
    """PostgreSQL: the completion look-ups below are planned with the indexes made for them whatever
    the table's statistics say. On a table without fresh statistics the planner once joined the
    spans of one 20,000-span trace with themselves row by row (issue 42: over 120 s); the look-ups
    have no join any more, and this keeps each one an index scan. Local to the caller's transaction
    and undone after."""
    if connection.vendor != "postgresql":
        yield
        return
    if not connection.in_atomic_block:  # the setting is local to a transaction
        with transaction.atomic(), _index_scans():
            yield
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('enable_seqscan'), set_config('enable_seqscan', 'off', true)")
        previous = cursor.fetchone()[0]
    try:
        yield
    finally:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT set_config('enable_seqscan', %s, true)", [previous])
        except DatabaseError:  # the transaction failed: its rollback undoes the setting anyway
            pass


def _due_sessions(agent: Agent, now: datetime, touched: list[SpanIn] | None) -> dict[str, list[str]]:
    """Session id → its trace ids, for the agent's pending sessions that are complete now (with
    `touched`: only those of these spans' traces and conversations). Two flat look-ups, each on its
    index (OtlpSpan's Meta): the traces of the touched conversations, then one row per trace."""
    traces: dict[str, dict[str, Any]] = {}
    pending = OtlpSpan.objects.filter(agent=agent, state=OtlpSpan.State.PENDING)
    with _index_scans():
        if touched is not None:
            trace_ids = {s.trace_id for s in touched}
            conversations = sorted({s.conversation_id for s in touched if s.conversation_id})
            if conversations:
                # every pending trace of those conversations, also the ones whose spans carry no conversation id
                trace_ids |= set(
                    pending.filter(conversation_id__in=conversations).values_list("trace_id", flat=True).distinct()
                )
            pending = pending.filter(trace_id__in=sorted(trace_ids))
        per_trace = (
            pending.values("trace_id")
            .annotate(conversation=Max("conversation_id"), first_parent=Min("parent_span_id"), last=Max("received_at"))
            .order_by()
        )
        for row in per_trace:
            # a root is a span without a parent: "" is the smallest parent id of a trace that has one
            traces[row["trace_id"]] = {
                "conversation": row["conversation"],
                "root": row["first_parent"] == "",
                "last": row["last"],
            }
    sessions: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for trace_id, trace in traces.items():
        sessions[trace["conversation"] or trace_id].append({"id": trace_id, **trace})
    due: dict[str, list[str]] = {}
    quiet, longest = timedelta(seconds=quiet_seconds()), timedelta(seconds=max_wait_seconds())
    for session_id, its in sessions.items():
        last = max(t["last"] for t in its)
        if (all(t["root"] for t in its) and now - last >= quiet) or now - last >= longest:
            due[session_id] = [t["id"] for t in its]
    # a session that failed waits for its next attempt (library/ingest/otlp_failures.py)
    for session_id in otlp_failures.in_backoff(agent, due, now):
        del due[session_id]
    return due


def _failed(agent: Agent, session_id: str, exc: BaseException, result: FlushResult) -> None:
    result.failed[session_id] = otlp_failures.failure_text(exc)
    logger.exception("OTLP session %s of agent %s could not be stored", session_id, agent.name)


def _items(agent: Agent, spans: Mapping[str, list[OtlpSpan]] | Mapping[str, list[SpanIn]], result: FlushResult):
    """Each session's procmem-format item; a session whose item cannot be built (a fault) is
    counted in `result.failed` and the others go on."""
    items: dict[str, Any] = {}
    for session_id, its in spans.items():
        try:
            items[session_id] = session_item(session_id, its)
        except Exception as exc:  # one session's fault must not stop the others (issue 42)
            _failed(agent, session_id, exc, result)
    return items


def _store_items(agent: Agent, items: dict[str, Any], result: FlushResult) -> None:
    """Parses each complete session's item (the procmem format's rules and limits) and stores the
    good ones in one sessions_store call; a refused one is logged with the reason. When storing them
    together fails, each is stored on its own (a savepoint each) and only the faulty ones are counted
    in `result.failed`. The caller holds a transaction (and the sessions' locks)."""
    good: list[tuple[str, Any]] = []
    for session_id, item in items.items():
        try:
            good.append((session_id, parse_item(item, fmt="procmem", options=ImportOptions())))
        except ItemInvalid as exc:
            result.refused[session_id] = str(exc)[:300]
            logger.warning("OTLP session %s of agent %s refused: %s", session_id, agent.name, exc)
        except Exception as exc:
            _failed(agent, session_id, exc, result)
    if not good:
        return
    try:
        with transaction.atomic():  # a savepoint: a fault undoes this store only
            stored = _store(agent, [session for _, session in good])
    except Exception:
        logger.warning("Storing %d OTLP sessions of agent %s together failed; one by one", len(good), agent.name)
        stored = StoreResult()
        for session_id, session in good:
            try:
                with transaction.atomic():
                    one = _store(agent, [session])
            except Exception as exc:
                _failed(agent, session_id, exc, result)
            else:
                stored.stored += one.stored
                stored.duplicate += one.duplicate
    result.stored.extend(stored.stored)
    result.duplicate.extend(stored.duplicate)
    # outcomes sent while these sessions waited (library/ingest/otlp_outcomes.py)
    held_outcomes_apply(agent=agent, session_ids=stored.stored)


def _store(agent: Agent, sessions: list) -> StoreResult:
    return sessions_store(agent=agent, sessions=sessions, channel=AgentSession.Channel.OTLP, savepoint=False)


def sessions_flush(*, agent: Agent, now: datetime | None = None, touched: list[SpanIn] | None = None) -> FlushResult:
    """Stores the agent's complete sessions (the rule in the module docstring), each through the
    procmem parser and sessions_store; marks their spans stored (or refused, with the reason) and
    drops spans of sessions closed more than a day ago. One transaction. `touched`: only the
    sessions of these spans (the request that brought them; the periodic flush takes all).
    A session that fails to be built or stored is counted (`failed`), its spans wait for the next
    attempt, and after the last it is dead-lettered (library/ingest/otlp_failures.py); the other
    sessions are stored."""
    now = now or timezone.now()
    result = FlushResult()
    with transaction.atomic():
        due = _due_sessions(agent, now, touched)
        if due:
            lock_sessions(agent, due)
            by_trace = {trace_id: session_id for session_id, ids in due.items() for trace_id in ids}
            spans: dict[str, list[OtlpSpan]] = defaultdict(list)
            # still pending once the locks are held: another request may have stored some meanwhile
            for span in OtlpSpan.objects.filter(agent=agent, state=OtlpSpan.State.PENDING, trace_id__in=list(by_trace)):
                spans[by_trace[span.trace_id]].append(span)
            _store_items(agent, _items(agent, spans, result), result)
            closed = {t: sid for t, sid in by_trace.items() if sid not in result.failed}
            refused_traces = [t for t, session_id in closed.items() if session_id in result.refused]
            OtlpSpan.objects.filter(
                agent=agent,
                state=OtlpSpan.State.PENDING,
                trace_id__in=[t for t in closed if t not in set(refused_traces)],
            ).update(
                state=OtlpSpan.State.STORED,
            )
            if refused_traces:
                OtlpSpan.objects.filter(agent=agent, state=OtlpSpan.State.PENDING, trace_id__in=refused_traces).update(
                    state=OtlpSpan.State.REFUSED
                )
            # which session each span became part of (one statement per session only where it is not the trace id)
            for session_id, ids in due.items():
                if session_id not in result.failed and (ids != [session_id] or session_id in result.refused):
                    OtlpSpan.objects.filter(agent=agent, trace_id__in=ids).update(
                        session_id=session_id, note=result.refused.get(session_id, "")
                    )
            result.dead = otlp_failures.failures_record(agent=agent, failed=result.failed, traces=due, now=now)
            otlp_failures.failures_clear(agent=agent, session_ids=[sid for sid in due if sid not in result.failed])
        if touched is None:
            OtlpSpan.objects.filter(agent=agent, received_at__lt=now - KEEP_STORED_SPANS).exclude(
                state__in=(OtlpSpan.State.PENDING, OtlpSpan.State.DEAD)
            ).delete()
    return result


def spans_accept(
    *, agent: Agent, spans: list[SpanIn], now: datetime | None = None
) -> tuple[list[Rejected], FlushResult]:
    """What one request's accepted spans become. With PROCMEM_OTLP_QUIET_SECONDS = 0, a session
    whose spans all came in this request — every trace of it with its root, nothing of it waiting
    from earlier requests — is complete now: it is stored from the request's spans without waiting
    rows. Every other span waits (spans_stage), and the sessions it completes are stored
    (sessions_flush). Returns the spans rejected as late and what was stored."""
    result = FlushResult()
    if not spans:
        return [], result
    rest = spans
    late: list[Rejected] = []
    if quiet_seconds() == 0:
        rest = _store_complete(agent, spans, result)
        waiting = {id(s) for s in rest}
        late += refused_spans(result, [s for s in spans if id(s) not in waiting])
    late += spans_stage(agent=agent, spans=rest, now=now)
    if rest:
        flushed = sessions_flush(agent=agent, now=now, touched=rest)
        result.stored += flushed.stored
        result.duplicate += flushed.duplicate
        result.refused.update(flushed.refused)
        result.failed.update(flushed.failed)
        result.dead += flushed.dead
    return late, result


def _store_complete(agent: Agent, spans: list[SpanIn], result: FlushResult) -> list[SpanIn]:
    """Stores the sessions complete within these spans (spans_accept); returns the other spans."""
    conversation_of: dict[str, str] = {}
    for span in spans:
        if span.conversation_id:
            conversation_of.setdefault(span.trace_id, span.conversation_id)
    sessions: dict[str, list[SpanIn]] = defaultdict(list)
    for span in spans:
        sessions[conversation_of.get(span.trace_id) or span.trace_id].append(span)
    complete = {
        session_id: its
        for session_id, its in sessions.items()
        if all(any(not s.parent_span_id for s in its if s.trace_id == t) for t in {s.trace_id for s in its})
    }
    if not complete:
        return spans
    traces = {s.trace_id for its in complete.values() for s in its}
    with transaction.atomic():
        lock_sessions(agent, complete)
        # sessions with spans waiting from earlier requests (by trace or conversation): one query
        busy: set[str] = set()
        waiting = OtlpSpan.objects.filter(agent=agent).filter(
            Q(trace_id__in=traces) | Q(conversation_id__in=list(complete))
        )
        for trace_id, conversation_id in waiting.values_list("trace_id", "conversation_id").distinct():
            busy.add(conversation_of.get(trace_id) or trace_id)
            if conversation_id:
                busy.add(conversation_id)
        ready = {sid: its for sid, its in complete.items() if sid not in busy}
        # A session stored already (a resent request) is found by sessions_store's own look-up, which
        # stores nothing for it: its spans go on to spans_stage, which rejects them as late (or, sent
        # before as waiting spans, as duplicates), as if they had never been ready.
        before = len(result.duplicate)
        _store_items(agent, _items(agent, ready, result), result)
        stored_before = {sid for sid in result.duplicate[before:] if sid in ready}
        result.duplicate[before:] = [sid for sid in result.duplicate[before:] if sid not in stored_before]
        # a session that failed waits like any other: the flush that follows counts its attempt
        wait = stored_before | set(result.failed)
        result.failed.clear()
    return [s for sid, its in sessions.items() if sid not in ready or sid in wait for s in its]


def refused_spans(result: FlushResult, spans: list[SpanIn]) -> list[Rejected]:
    """The spans of sessions the parser refused (stored straight from the request), as rejected."""
    if not result.refused:
        return []
    return [
        Rejected(
            f"span {s.span_id} of trace {s.trace_id}", f"belongs to session {key!r}, refused: {result.refused[key]}"
        )
        for s in spans
        for key in (s.conversation_id or s.trace_id,)
        if key in result.refused
    ]


def agents_with_pending_spans() -> list[int]:
    return list(OtlpSpan.objects.filter(state=OtlpSpan.State.PENDING).values_list("agent_id", flat=True).distinct())


def partial_success_message(rejected: list[Rejected], limit: int = 5, *, notes: Iterable[str] = ()) -> str:
    """The response's error_message: how many spans were rejected and why, the first few named;
    then what was changed of the accepted spans (identifiers that looked personal), each once."""
    parts = []
    if rejected:
        named = "; ".join(f"{r.span} {r.message}" for r in rejected[:limit])
        more = f"; and {len(rejected) - limit} more" if len(rejected) > limit else ""
        parts.append(f"{formatting.count(len(rejected), 'spans')} rejected: {named}{more}")
    changed = list(dict.fromkeys(notes))
    if changed:
        more = f"; and {len(changed) - limit} more" if len(changed) > limit else ""
        parts.append("Accepted with changes: " + "; ".join(changed[:limit]) + more)
    return ". ".join(parts)


__all__ = [
    "OtlpRefused",
    "SpanIn",
    "Rejected",
    "FlushResult",
    "decode_request",
    "spans_of",
    "spans_stage",
    "sessions_flush",
    "session_item",
    "partial_success_message",
    "agents_with_pending_spans",
]
