"""Storing sessions: redaction before the row exists, one transaction per batch, idempotent by
session id; the purge of raw text after the retention window; and redacting stored excerpts again
after the rules grew."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

import psycopg
import pydantic_core
from django.conf import settings
from django.db import connection, models, transaction
from django.utils import timezone

from .. import safe_json
from ..models import Agent, AgentSession, Intent
from ..redaction.echo import RedactionCache
from ..redaction.literals import is_safe_literal
from ..redaction.redactor import Redactor, redactor_for_session, strings_in
from .formats import SessionIn
from .outcomes import pending_until_at_ingest

EXCERPT_CALLS = 40
EXCERPT_TEXT_CHARS = 400
EXCERPT_ARG_CHARS = 200
REDACTION_MARGIN_CHARS = 60  # longer than an e-mail address, an IBAN or a card number
RESULT_SUMMARY_KEYS = 12
RESULT_SUMMARY_DEPTH = 3
RESULT_KEY_RE = re.compile(r"^[A-Za-z][A-Za-z_]{0,39}$")


def result_summary(result: Any, redactor: Redactor) -> dict[str, Any]:
    """What the excerpt keeps of a tool result: its scalar fields by key path (``status``,
    ``reservation.cabin``), only enum-like values — true/false, and safe literals (a word or short
    phrase without digits, not an all-caps code, not a placeholder) that redaction leaves as they
    are — at most RESULT_SUMMARY_KEYS of them, RESULT_SUMMARY_DEPTH objects deep; lists are not
    entered (their items are a customer's records). Ids, amounts, dates, names and free text never
    pass. A string result is read as JSON when it is one; anything else gives nothing."""
    if result is None:  # (a coding session's calls have no result: 4,913 of 4,913)
        return {}
    if isinstance(result, str):
        try:
            result = safe_json.parse(result) if result.lstrip().startswith("{") else None
        except safe_json.JsonRefused:
            return {}
    summary: dict[str, Any] = {}

    def walk(value: Any, path: str, depth: int) -> None:
        for key, item in value.items():
            if len(summary) >= RESULT_SUMMARY_KEYS:
                return
            if not isinstance(key, str) or not RESULT_KEY_RE.match(key):  # keys that are ids or data: skipped
                continue
            where = f"{path}.{key}" if path else key
            if isinstance(item, Mapping):
                if depth < RESULT_SUMMARY_DEPTH:
                    walk(item, where, depth + 1)
            elif isinstance(item, bool):
                summary[where] = item
            elif is_safe_literal(item) and redactor.text(item) == item:
                summary[where] = item

    if isinstance(result, Mapping):
        walk(result, "", 1)
    return summary


_KEPT_AS_IS = (str, int, float, bool, type(None))


def build_excerpt(session: SessionIn, redactor: Redactor, *, redacted_task: str | None = None) -> list[dict[str, Any]]:
    """What a reviewer may read of a session: the opening request, the tool calls with redacted
    arguments and a summary of their results (result_summary: enum-like values only), and the last
    reply, all redacted and shortened. Tool results themselves are never included.
    `redacted_task`: the task already redacted by this redactor (the store needs it for the task key too)."""

    def short(text: str, limit: int) -> str:
        return text if len(text) <= limit else text[: limit - 1] + "…"

    def short_args(value: Any, limit: int = EXCERPT_ARG_CHARS) -> Any:
        if isinstance(value, str):
            return short(value, limit)
        if isinstance(value, Mapping):
            # a short string or a number stays as it is: no call for each (every command has 8 arguments)
            return {
                k: v if type(v) in _KEPT_AS_IS and (type(v) is not str or len(v) <= limit) else short_args(v, limit)
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [short_args(v, limit) for v in value[:20]]
        return value

    excerpt: list[dict[str, Any]] = []
    if session.task:
        task = redactor.text(session.task) if redacted_task is None else redacted_task
        excerpt.append({"role": "user", "text": short(task, EXCERPT_TEXT_CHARS)})
    for call in session.tool_calls[:EXCERPT_CALLS]:
        # Cut long strings (a command's output) before redacting, with a margin: a personal value
        # that starts inside the shown part is whole in what the redactor reads.
        # a flat object of texts and numbers (every coding command's arguments) in one pass
        args = redactor.shown_arguments(call["args"], EXCERPT_ARG_CHARS + REDACTION_MARGIN_CHARS, EXCERPT_ARG_CHARS)
        if args is None:
            args = short_args(redactor.value(short_args(call["args"], EXCERPT_ARG_CHARS + REDACTION_MARGIN_CHARS)))
        entry = {"role": "tool_call", "tool": call["name"], "args": args, "ok": call["ok"]}
        summary = result_summary(call.get("result"), redactor)
        if summary:
            entry["result"] = summary
        excerpt.append(entry)
    if len(session.tool_calls) > EXCERPT_CALLS:
        excerpt.append({"role": "note", "text": f"{len(session.tool_calls) - EXCERPT_CALLS} more tool calls"})
    if session.reply:
        excerpt.append({"role": "assistant", "text": short(redactor.text(session.reply), EXCERPT_TEXT_CHARS)})
    return excerpt


def redactor_for(session: SessionIn, redaction_patterns: Any = None, cache: RedactionCache | None = None) -> Redactor:
    """The session's redactor (`redaction_patterns`: its agent's); `cache` is shared by the sessions
    of one batch (same result without)."""
    structured: list[Any] = [call["result"] for call in session.tool_calls if call.get("result") is not None]
    structured.extend(session.structured)
    return redactor_for_session(
        arguments=[call["args"] for call in session.tool_calls],
        structured=structured,
        texts=[session.task, session.reply],
        agent_patterns=redaction_patterns,
        cache=cache,
    )


def raw_retention_days() -> int:
    return int(getattr(settings, "PROCMEM_RAW_RETENTION_DAYS", 30))


def task_key_for(session: SessionIn, redactor: Redactor, *, redacted_task: str | None = None) -> str:
    """The reported task key, else a hash of the redacted opening request (so that the same request
    from the same customer, retried, counts once), else empty (the session is its own task)."""
    if session.task_key:
        return session.task_key
    if not session.task.strip():
        return ""
    redacted = " ".join((redactor.text(session.task) if redacted_task is None else redacted_task).split()).lower()
    return "request:" + hashlib.sha256(redacted.encode("utf-8")).hexdigest()[:32]


@dataclass
class PreparedSession:
    """A session made ready to store: redacted, and its row's fields but the agent and the intent
    (those need the database). Plain data: an import's worker processes build them."""

    intent: str | None
    tool_names: list[str]
    fields: dict[str, Any]

    @property
    def session_id(self) -> str:
        return self.fields["session_id"]


class JsonText(bytes):
    """A jsonb field's value written already by _json_bytes, stored as it is (PostgreSQL only)."""


# the session row's jsonb fields
JSON_FIELDS = tuple(f.name for f in AgentSession._meta.concrete_fields if isinstance(f, models.JSONField))


def prepared_json_written(prepared: PreparedSession) -> PreparedSession:
    """`prepared` with its jsonb fields written as JSON (JsonText), as _insert_sessions would write
    them on PostgreSQL. An import's worker processes do it: the command then passes the bytes on
    instead of unpickling the values and writing them again (0.02 s of unpickling and 0.015-0.05 s
    of writing out of the command, whose last batch is stored after the workers are done). The
    stored values are the same: the same function writes the same values."""
    fields = dict(prepared.fields)
    for name in JSON_FIELDS:
        fields[name] = JsonText(_json_bytes(fields[name]))
    return replace(prepared, fields=fields)


def session_prepare(
    session: SessionIn,
    *,
    redaction_patterns: Any = None,
    keep_raw: bool | None = None,
    cache: RedactionCache | None = None,
) -> PreparedSession:
    """Redacts one session (its excerpt and task key, before any row exists) and builds its row's
    fields. `redaction_patterns`: the agent's; `keep_raw`: None reads PROCMEM_RAW_RETENTION_DAYS;
    `cache`: shared by the sessions of a batch (the result is the same without)."""
    keep_raw = raw_retention_days() > 0 if keep_raw is None else keep_raw
    redactor = redactor_for(session, redaction_patterns, cache)
    redacted_task = redactor.text(session.task) if session.task else ""  # once, for the excerpt and the task key
    excerpt = build_excerpt(session, redactor, redacted_task=redacted_task)
    return PreparedSession(
        intent=session.intent,
        tool_names=session.tool_names,
        fields=dict(
            task_key=task_key_for(session, redactor, redacted_task=redacted_task),
            session_id=session.session_id,
            task=session.task if keep_raw else "",
            resolved=session.resolved,
            escalated=session.escalated,
            rating=session.rating,
            skeleton=session.skeleton,
            # a tool's result is never stored whole: its summary is in the excerpt
            tool_calls=[{k: v for k, v in c.items() if k != "result"} for c in session.tool_calls]
            if keep_raw
            else [{"name": c["name"], "ok": c["ok"]} for c in session.tool_calls],
            redacted_excerpt=excerpt,
            injected=session.injected,
            instruction_chars=session.instruction_chars,
            model=session.model,
            ended_at=session.ended_at,
            raw_purged=not keep_raw,
            source_format=session.source_format,
        ),
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


def sessions_store(
    *, agent: Agent, sessions: list[SessionIn], channel: str = "", savepoint: bool = True
) -> StoreResult:
    """Stores validated sessions of one agent in one transaction. Idempotent by session id: a session
    already stored (or repeated in the batch) is reported as duplicate and changes nothing.

    Redaction happens here, before the row exists: the excerpt a reviewer sees is built from the
    session's own personal values plus the agent's and the built-in patterns. With
    PROCMEM_RAW_RETENTION_DAYS=0 the raw task and arguments are never stored. Only sessions not
    stored yet are redacted (a resent batch costs a look-up). `channel`: how they reached procmem
    (AgentSession.Channel: client, file, otlp, hook). `savepoint=False`: the caller's transaction
    is all there is to roll back (it lets an error propagate), so no savepoint is set inside it."""
    return _store(agent, sessions, lambda fresh: _prepare_all(agent, fresh), channel, savepoint=savepoint)


def prepared_store(*, agent: Agent, prepared: list[PreparedSession], channel: str = "") -> StoreResult:
    """sessions_store for sessions prepared already (session_prepare, e.g. in an import's worker
    processes): the same checks, the same transaction."""
    return _store(agent, prepared, lambda fresh: fresh, channel)


def _prepare_all(agent: Agent, sessions: list[SessionIn]) -> list[PreparedSession]:
    keep_raw = raw_retention_days() > 0
    cache = RedactionCache()  # commands, outputs and requests recur across the sessions of a batch
    return [
        session_prepare(s, redaction_patterns=agent.redaction_patterns, keep_raw=keep_raw, cache=cache)
        for s in sessions
    ]


def _store(
    agent: Agent,
    sessions: list,
    prepare: Callable[[list], list[PreparedSession]],
    channel: str,
    *,
    savepoint: bool = True,
) -> StoreResult:
    result = StoreResult()
    unique: dict[str, Any] = {}
    for session in sessions:
        if session.session_id in unique:
            result.duplicate.append(session.session_id)
        else:
            unique[session.session_id] = session
    if not unique:
        return result
    with transaction.atomic(savepoint=savepoint):
        existing = set(
            AgentSession.objects.filter(agent=agent, session_id__in=list(unique)).values_list("session_id", flat=True)
        )
        fresh = prepare([s for sid, s in unique.items() if sid not in existing])
        result.duplicate.extend(sid for sid in unique if sid in existing)
        intent_ids = intents_ensure(agent=agent, names={s.intent for s in fresh if s.intent})
        now = timezone.now()
        rows = [
            AgentSession(
                agent=agent,
                intent_id=intent_ids.get(s.intent) if s.intent else None,
                channel=channel,
                # the agent's complaint window: the label is final only when it has passed (library/ingest/outcomes.py)
                label_pending_until=pending_until_at_ingest(agent, s.fields["ended_at"], now),
                **s.fields,
            )
            for s in fresh
        ]
        for start in range(0, len(rows), INSERT_BATCH):
            _insert_sessions(rows[start : start + INSERT_BATCH])
        result.stored.extend(s.session_id for s in fresh)
    return result


INSERT_BATCH = 500


def _insert_sessions(rows: list[AgentSession]) -> None:
    """Inserts new session rows; a row whose (agent, session id) exists already is skipped: a
    concurrent request with the same session id wins the race, and this one then changes nothing,
    which is what a resend must do.

    On PostgreSQL the parameters are bound by the server (psycopg's plain cursor), not quoted into
    the SQL text as Django's client-side cursor does: the JSON of a batch of coding sessions is
    megabytes, and quoting it in Python cost more than parsing it (docs/benchmarks.md)."""
    if not rows:
        return
    if connection.vendor != "postgresql":
        AgentSession.objects.bulk_create(rows, ignore_conflicts=True)
        return

    fields = [f for f in AgentSession._meta.concrete_fields if not f.primary_key]
    values = [tuple(_fast_json(f.get_db_prep_save(f.pre_save(row, True), connection)) for f in fields) for row in rows]
    quote = connection.ops.quote_name
    sql = (
        f"INSERT INTO {quote(AgentSession._meta.db_table)} ({', '.join(quote(f.column) for f in fields)}) "
        f"VALUES ({', '.join(['%s'] * len(fields))}) ON CONFLICT DO NOTHING"
    )
    connection.ensure_connection()
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.executemany(sql, values)


def _json_bytes(value: Any) -> bytes:
    """JSON-like data (dicts, lists, strings, numbers, booleans, None) as JSON with the value
    json.dumps writes, in another form (no \\u escapes, no spaces): PostgreSQL's jsonb stores the
    same value either way. NaN and infinities are written as json.dumps writes them (which
    PostgreSQL refuses, as before). pydantic-core (the input layer's parser) writes the excerpts and
    calls of a batch of coding sessions in a fraction of json.dumps' time."""
    return pydantic_core.to_json(value, inf_nan_mode="constants")


def _fast_json(value: Any) -> Any:
    """A jsonb parameter that Django made with json.dumps, written by _json_bytes instead (or
    as it is, when it was written already: JsonText)."""
    if isinstance(value, psycopg.types.json.Jsonb) and value.dumps is json.dumps:
        return psycopg.types.json.Jsonb(value.obj, dumps=_as_written if type(value.obj) is JsonText else _json_bytes)
    return value


def _as_written(value: JsonText) -> bytes:
    return value


def sessions_purge_raw(
    *, agent: Agent | None = None, older_than_days: int | None = None, batch_size: int = 2000
) -> int:
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
            batch = list(
                queryset.select_for_update(skip_locked=True).order_by("pk").values_list("pk", "tool_calls")[:batch_size]
            )
            if not batch:
                return purged
            rows = [
                AgentSession(
                    pk=pk,
                    task="",
                    raw_purged=True,
                    tool_calls=[
                        {"name": c.get("name"), "ok": c.get("ok")} for c in (calls or []) if isinstance(c, Mapping)
                    ],
                )
                for pk, calls in batch
            ]
            AgentSession.objects.bulk_update(rows, ["task", "raw_purged", "tool_calls"])
            purged += len(rows)


def sessions_redact_again(*, agent: Agent | None = None, batch_size: int = 500) -> int:
    """Applies the current redaction rules to excerpts stored under older ones (run after an upgrade
    that widened the rules). Each excerpt is redacted again with what its own session says is
    personal: its raw task and arguments where retention still keeps them, and its excerpt.
    Placeholders stay as they are, so a second run changes nothing. Returns how many excerpts
    changed; one short transaction per batch."""
    queryset = AgentSession.objects.all()
    if agent is not None:
        queryset = queryset.filter(agent=agent)
    patterns = dict(Agent.objects.values_list("pk", "redaction_patterns"))
    changed = 0
    last_pk = 0
    while True:
        with transaction.atomic():
            batch = list(
                queryset.filter(pk__gt=last_pk)
                .select_for_update(skip_locked=True)
                .order_by("pk")
                .values_list("pk", "agent_id", "task", "tool_calls", "redacted_excerpt")[:batch_size]
            )
            if not batch:
                return changed
            last_pk = batch[-1][0]
            rows = []
            for pk, agent_id, task, calls, excerpt in batch:
                args = [c.get("args") for c in calls or [] if isinstance(c, Mapping) and c.get("args") is not None]
                results = [
                    c.get("result") for c in calls or [] if isinstance(c, Mapping) and c.get("result") is not None
                ]
                redactor = redactor_for_session(
                    structured=[*args, *results, excerpt],
                    texts=[task or "", *strings_in(excerpt)],
                    agent_patterns=patterns.get(agent_id),
                )
                redacted = redactor.value(excerpt or [])
                if redacted != excerpt:
                    rows.append(AgentSession(pk=pk, redacted_excerpt=redacted))
            AgentSession.objects.bulk_update(rows, ["redacted_excerpt"])
            changed += len(rows)
