"""The audit log as the operations pages read it: filtered events, what each event changed, and
the CSV export (cells a spreadsheet will not evaluate)."""

from __future__ import annotations

import json
from collections.abc import Iterator

from django.db.models import Q, QuerySet

from library.models import AuditEvent

from .access import operable_agents
from .key_words import key_words, value_words

AUDIT_FILTERS = ("agent", "procedure", "user", "action")


def audit_events(user, filters: dict[str, str]) -> QuerySet[AuditEvent]:
    """The events the user may see (a superuser every one; others those of the agents they may
    operate), narrowed by the non-empty `filters` (AUDIT_FILTERS), newest first."""
    events = AuditEvent.objects.select_related("actor", "agent", "procedure", "version")
    if not user.is_superuser:
        events = events.filter(agent__in=operable_agents(user))
    if filters.get("agent"):
        events = events.filter(agent__name=filters["agent"])
    if filters.get("procedure"):
        events = events.filter(procedure__key=filters["procedure"])
    if filters.get("user"):
        events = events.filter(Q(actor__username=filters["user"]) | Q(actor_label=filters["user"]))
    if filters.get("action"):
        events = events.filter(action=filters["action"])
    return events.order_by("-at", "-id")


def _short(value) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value) or "(none)"
    return "" if value is None else value_words(value)


def audit_changes(event: AuditEvent) -> list[tuple[str, str, str]]:
    """(field in words, before, after) for each key of the event's before/after snapshots, sorted by key (a
    jsonb column does not keep key order); a side that lacks the key shows as an empty string."""
    before, after = event.before or {}, event.after or {}
    keys = sorted({*before, *after})
    return [
        (key_words(k), _short(before.get(k)) if k in before else "", _short(after.get(k)) if k in after else "")
        for k in keys
    ]


FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value) -> str:
    """A CSV cell that a spreadsheet will not evaluate: text starting with =, +, -, @, a tab or a
    carriage return gets a leading apostrophe (OWASP's advice for CSV injection)."""
    if value is None:
        return ""
    text = (
        value
        if isinstance(value, str)
        else json.dumps(value, ensure_ascii=False, sort_keys=True)
        if isinstance(value, (dict, list))
        else str(value)
    )
    if text.startswith(FORMULA_PREFIXES):
        return "'" + text
    return text


AUDIT_CSV_COLUMNS = ["at", "action", "who", "agent", "procedure", "version", "reason", "before", "after"]


def audit_csv_rows(events: QuerySet[AuditEvent]) -> Iterator[list[str]]:
    yield AUDIT_CSV_COLUMNS
    for event in events.iterator(chunk_size=2000):
        yield [
            csv_cell(event.at.isoformat()),
            csv_cell(event.action),
            csv_cell(event.who),
            csv_cell(event.agent.name if event.agent_id else ""),
            csv_cell(event.procedure.key if event.procedure_id else ""),
            csv_cell(event.version.number if event.version_id else ""),
            csv_cell(event.reason),
            csv_cell(event.before or ""),
            csv_cell(event.after or ""),
        ]
