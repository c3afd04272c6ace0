"""The audit log as the operations pages read it: filtered events, what each event changed, and
the CSV export (cells a spreadsheet will not evaluate)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

from django.db.models import Q, QuerySet

from library import formatting
from library.models import AuditEvent

from .access import operable_agents
from .key_words import figure_items, key_words

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


# Keys of the audit snapshots that the record's tables (key_words) do not know: the regression case's
# columns (library/evals/cases.py CASE_FIELDS) and a session's label (library/ingest/outcomes.py).
AUDIT_KEY_LABELS = {
    "expected_tools": "expected tools",
    "forbidden_tools": "forbidden tools",
    "reply_must_match": "reply must match",
    "reply_must_not_match": "reply must not match",
    "tool_results": "tool results",
    "is_active": "active",
    "pendingUntil": "label final after",
    "closed_by_customer": "closed by customer",
}
_FOCUS = 60  # characters of a long text shown around where before and after start to differ
_LONGEST = 160  # a value shown alone (a field set or removed) is cut here; the CSV export has it whole


def field_words(key) -> str:
    """A snapshot's field key in words: the tables' words, else its humps or underscores as spaces."""
    key = str(key)
    if key in AUDIT_KEY_LABELS:
        return AUDIT_KEY_LABELS[key]
    return key_words(key).replace("_", " ")


def shown(value) -> str:
    """A recorded value as a page shows it: identifiers, tool names and text verbatim (never split
    into words), truth values as yes/no, numbers as written, lists joined, objects as compact JSON."""
    if value is None:
        return "(none)"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)) and all(not isinstance(v, (dict, list, tuple)) for v in value):
        return ", ".join(shown(v) for v in value) or "(none)"
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    return str(value)


def focused(before: str, after: str) -> tuple[str, str]:
    """Two long texts cut to where they differ ("…" marks what is left out), so a change deep in a
    long value is visible and both sides are not the same prefix."""
    if len(before) <= _FOCUS and len(after) <= _FOCUS:
        return before, after
    common = 0
    for a, b in zip(before, after):
        if a != b:
            break
        common += 1
    start = max(0, common - 15)

    def cut(text: str) -> str:
        piece = text[start : start + _FOCUS]
        return ("…" if start else "") + piece + ("…" if start + _FOCUS < len(text) else "")

    return cut(before), cut(after)


def _cut(text: str) -> str:
    return text if len(text) <= _LONGEST else text[: _LONGEST - 1] + "…"


def _leaves(snapshot: dict, *, record_ids: bool) -> dict[tuple[str, str], object]:
    """(identifier, field) -> value: a top-level value that is an object on either side is a
    record named by its key, its keys its fields; other keys are fields. `record_ids`: the top-level
    keys are records' identifiers (a session id), shown verbatim; otherwise they are field names
    too (a run's "counts"), shown in words."""
    leaves = {}
    for key, value in snapshot.items():
        if isinstance(value, dict):
            ident = str(key) if record_ids else field_words(key)
            for field, inner in value.items():
                leaves[(ident, str(field))] = inner
        else:
            leaves[("", str(key))] = value
    return leaves


def _said(text: str) -> tuple[str, str, str]:
    """A change that reads as a whole phrase ("1 version proposed"): no field label, shown once."""
    return ("", text, text)


def _mining_run_changes(after: dict) -> list[tuple[str, str, str]]:
    """A mining run (library/mining/mining_runs.py, coding_runs.py): its number, how many versions it
    proposed and its counts, each with its noun ("12 sessions", "3 without an intent (not mined)")."""
    rest = dict(after)
    rows = []
    if "miningRun" in rest:
        rows.append(("mining run", "", shown(rest.pop("miningRun"))))
    versions = rest.pop("versions", None)
    if isinstance(versions, list):
        rows.append(_said(formatting.count(len(versions), "versions proposed")))
    counts = rest.pop("counts", None)
    if isinstance(counts, dict):
        # the sessions read on a line of their own, the other counts as one sentence: a reviewer reads
        # the run at a glance (the review pass found 19 lines folded as "15 more fields"); a count of
        # zero records nothing and is left out (the CSV export and the run's page have every count)
        counts = dict(counts)
        if "sessions" in counts:
            rows.append(_said(formatting.count(counts.pop("sessions"), "sessions")))
        said = figure_items({key: value for key, value in counts.items() if value != 0})
        if said:
            rows.append(_said(", ".join(said)))
    return rows + _field_changes({}, rest, record_ids=False)


def _eval_totals_changes(after: dict) -> list[tuple[str, str, str]]:
    """A finished eval run's totals (library/evals/verdict.py) as a reviewer reads them: the
    cases, the passes without and with the candidate of the paired ones, what changed."""
    rest = dict(after)
    totals = rest.pop("totals", None)
    rows = _field_changes({}, rest, record_ids=False)
    if not isinstance(totals, dict):
        return rows
    figures = {k: totals.get(k) for k in ("cases", "paired", "baseline_passed", "candidate_passed")}
    if all(isinstance(v, int) for v in figures.values()):
        rows.append(_said(formatting.count(figures["cases"], "cases")))
        rows.append(_said(f"passed without the candidate: {figures['baseline_passed']} of {figures['paired']} paired"))
        rows.append(_said(f"passed with it: {figures['candidate_passed']} of {figures['paired']} paired"))
        totals = {k: v for k, v in totals.items() if k not in figures}
    for key, noun in (("improved", "improved"), ("regressed", "regressed"), ("errors", "errors")):
        if isinstance(totals.get(key), int):
            rows.append(_said(formatting.count(totals.pop(key), noun)))
    return rows + _field_changes({}, {"totals": totals} if totals else {}, record_ids=False)


# Actions whose snapshot has a known shape, read in words; any other falls back to its fields.
_ACTION_CHANGES = {
    AuditEvent.Action.MINE: _mining_run_changes,
    AuditEvent.Action.EVAL_FINISH: _eval_totals_changes,
}
# Actions whose snapshot's top-level keys are records' identifiers (library/ingest/outcomes.py).
_RECORD_KEYED = {AuditEvent.Action.OUTCOMES}


def audit_changes(event: AuditEvent) -> list[tuple[str, str, str]]:
    """(what, before, after) of an event: a known action's change in words (a mining run's counts
    with their nouns), else the fields whose value changed, each key in words and a record's
    identifier verbatim ("hA-otel-1 · rating"); a field that did not change is shown once
    (before == after) when it names the record (a version number, an intent), left out when it is
    one of a nested record's unchanged fields. A side that lacks the field shows as an empty string;
    an empty `what` is a change that reads as a whole phrase."""
    reader = _ACTION_CHANGES.get(event.action)
    if reader is not None and not event.before and isinstance(event.after, dict):
        return reader(event.after)
    return _field_changes(event.before or {}, event.after or {}, record_ids=event.action in _RECORD_KEYED)


SHOWN_CHANGES = 4  # a row shows this many changes when it has more than one more; the rest fold away


@dataclass(frozen=True)
class FoldedChanges:
    """An event's changes as its audit row shows them: the first ones, and the rest behind a
    disclosure whose summary names what it holds ("also active, name, task and 3 other fields")."""

    shown: list[tuple[str, str, str]]
    folded: list[tuple[str, str, str]]

    @property
    def folded_summary(self) -> str:
        names = [what for what, _, _ in self.folded if what]
        phrases = len(self.folded) - len(names)
        parts = names[:SHOWN_CHANGES]
        if len(names) > SHOWN_CHANGES:
            parts.append(formatting.count(len(names) - SHOWN_CHANGES, "other fields"))
        if phrases:
            parts.append(formatting.count(phrases, "more figures"))
        return "also " + (", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0])


def fold_changes(changes: list[tuple[str, str, str]]) -> FoldedChanges:
    """An event's changes (`audit_changes`), the first SHOWN_CHANGES shown and the rest folded
    (never a single one folded: it takes the summary's line anyway)."""
    if len(changes) <= SHOWN_CHANGES + 1:
        return FoldedChanges(changes, [])
    return FoldedChanges(changes[:SHOWN_CHANGES], changes[SHOWN_CHANGES:])


def _field_changes(before_snapshot: dict, after_snapshot: dict, *, record_ids: bool) -> list[tuple[str, str, str]]:
    before = _leaves(before_snapshot, record_ids=record_ids)
    after = _leaves(after_snapshot, record_ids=record_ids)
    changes = []
    for ident, field in sorted({*before, *after}):
        old = shown(before[(ident, field)]) if (ident, field) in before else ""
        new = shown(after[(ident, field)]) if (ident, field) in after else ""
        if ident and old == new:
            continue
        if old and new and old != new:
            old, new = focused(old, new)
        else:
            old, new = _cut(old), _cut(new)
        label = f"{ident} · {field_words(field)}" if ident else field_words(field)
        changes.append((label, old, new))
    return changes


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
