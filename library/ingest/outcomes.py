"""Outcomes that arrive after the session: POST /api/v1/sessions/outcomes, the client's
`report_outcome`, `manage.py import_outcomes` (docs/api.md "Outcomes that arrive later").

An outcome names a session of the agent and says any of: resolved, escalated, rating, complaint,
closed_by_customer, with when it happened (`at`) and what reported it (`source`). Each one is kept as
a `SessionLabel` row — the session's label history; the first row (source "session") is what the
session itself reported — and the session's resolved / escalated / rating, the columns the miner and
the metrics read, are derived again from the whole history by the agent's **label rule**:

- resolved: the latest outcome that says resolved or not; without one, a ticket closed by the customer
  counts as resolved (`closed_by_customer_resolves`), and without that a rating at or above
  `min_rating` as resolved, below as failed (when the agent sets `min_rating`);
- a complaint made within `complaint_window_days` of the session's end (its end time, else when it was
  received) makes it failed, whatever else was said;
- escalated and rating: the latest that says one.

A session's label is **final** when the complaint window has passed (or a complaint already failed
it); before that `label_pending_until` holds the moment it becomes final, and mining leaves the
session out (library/mining/mining_runs.py counts and names them in the run report). A session with no
resolved at all is final but has no outcome: mining leaves it out as "without outcome".
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from .. import formatting, safe_json
from ..models import Agent, AgentSession, AuditEvent, SessionLabel
from .session_fields import FieldError, parse_ended_at

OUTCOME_FIELDS = ("session_id", "resolved", "escalated", "rating", "complaint", "closed_by_customer", "at", "source")
FLAGS = ("resolved", "escalated", "complaint", "closed_by_customer")
MAX_RATING = 1e6
MAX_SOURCE = 100
WAITING_NAMED = 20  # session ids a mining run report names


@dataclass(frozen=True)
class OutcomeIn:
    session_id: str
    at: datetime
    resolved: bool | None = None
    escalated: bool | None = None
    rating: float | None = None
    complaint: bool | None = None
    closed_by_customer: bool | None = None
    source: str = ""
    at_given: bool = True  # False: `at` is when it was received (a resend without `at` is still a resend)

    def key(self) -> tuple:
        return (self.resolved, self.escalated, self.rating, self.complaint, self.closed_by_customer, self.source)


class OutcomeInvalid(ValueError):
    def __init__(self, errors: list[FieldError], session_id: str | None):
        super().__init__("; ".join(f"{e.field}: {e.message}" for e in errors))
        self.errors = errors
        self.session_id = session_id


def parse_outcome(item: Any, *, now: datetime | None = None) -> OutcomeIn:
    """One outcome object, or OutcomeInvalid naming every bad field. `at` defaults to now."""
    if not isinstance(item, Mapping):
        raise OutcomeInvalid(
            [FieldError("(item)", f"must be an object {{{', '.join(OUTCOME_FIELDS)}}}, got {type(item).__name__}")],
            None,
        )
    try:
        safe_json.check(item)
    except safe_json.JsonRefused as exc:
        raise OutcomeInvalid([FieldError(exc.path or "(item)", exc.message)], None) from None
    errors: list[FieldError] = []
    unknown = sorted(set(item) - set(OUTCOME_FIELDS))
    if unknown:
        errors.append(FieldError(unknown[0], f"is not an outcome field (use {', '.join(OUTCOME_FIELDS)})"))
    session_id = item.get("session_id")
    if isinstance(session_id, int) and not isinstance(session_id, bool):
        session_id = str(session_id)
    if not isinstance(session_id, str) or not session_id.strip() or len(session_id) > 200:
        errors.append(FieldError("session_id", "is required: the session's id (a string of at most 200 characters)"))
        session_id = None
    else:
        session_id = session_id.strip()
    values: dict[str, Any] = {}
    for name in FLAGS:
        value = item.get(name)
        if value is not None and not isinstance(value, bool):
            errors.append(FieldError(name, f"must be true, false or null, got {value!r:.40}"))
        values[name] = value if isinstance(value, bool) else None
    rating = item.get("rating")
    if rating is not None:
        if (
            isinstance(rating, bool)
            or not isinstance(rating, (int, float))
            or not math.isfinite(rating)
            or abs(rating) > MAX_RATING
        ):
            errors.append(
                FieldError("rating", f"must be a finite number of at most {MAX_RATING:g}, got {rating!r:.40}")
            )
            rating = None
        else:
            rating = float(rating)
    source = item.get("source") or ""
    if not isinstance(source, str) or len(source) > MAX_SOURCE:
        errors.append(FieldError("source", f"must be a string of at most {MAX_SOURCE} characters"))
        source = ""
    at = parse_ended_at(item.get("at"), errors, "at") if item.get("at") not in (None, "") else (now or timezone.now())
    if not errors and rating is None and not any(values[name] is not None for name in FLAGS):
        errors.append(
            FieldError(
                "(item)",
                "says nothing: give at least one of resolved, escalated, rating, complaint, closed_by_customer",
            )
        )
    if errors:
        raise OutcomeInvalid(errors, session_id)
    return OutcomeIn(
        session_id=session_id,
        at=at,
        rating=rating,
        source=source.strip(),
        at_given=item.get("at") not in (None, ""),
        **values,
    )


# ---------------------------------------------------------------------------------------------- the label rule


@dataclass(frozen=True)
class Label:
    resolved: bool | None
    escalated: bool | None
    rating: float | None
    pending_until: datetime | None


def _session_end(session: AgentSession) -> datetime:
    return session.ended_at or session.received_at or timezone.now()


def final_label(agent: Agent, session: AgentSession, history: Iterable[SessionLabel | OutcomeIn]) -> Label:
    """The session's label under the agent's rule (module docstring), from its history in any order."""
    entries = sorted(history, key=lambda e: e.at)

    def latest(name: str) -> Any:
        return next((getattr(e, name) for e in reversed(entries) if getattr(e, name) is not None), None)

    resolved = latest("resolved")
    if resolved is None and agent.closed_by_customer_resolves and any(e.closed_by_customer for e in entries):
        resolved = True
    rating = latest("rating")
    if resolved is None and agent.min_rating is not None and rating is not None:
        resolved = rating >= agent.min_rating
    pending_until = None
    if agent.complaint_window_days:
        window_end = _session_end(session) + timedelta(days=agent.complaint_window_days)
        if any(e.complaint and e.at <= window_end for e in entries):
            resolved = False
        else:
            pending_until = window_end
    return Label(resolved=resolved, escalated=latest("escalated"), rating=rating, pending_until=pending_until)


def pending_until_at_ingest(agent: Agent, ended_at: datetime | None, now: datetime) -> datetime | None:
    """label_pending_until of a session stored now (no history yet beyond its own report)."""
    if not agent.complaint_window_days:
        return None
    return (ended_at or now) + timedelta(days=agent.complaint_window_days)


# ---------------------------------------------------------------------------------------------- services


@dataclass
class OutcomesResult:
    applied: list[str] = field(default_factory=list)
    duplicate: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)


def session_own_label(session: AgentSession) -> SessionLabel:
    """The history's first row, source "session": what the session itself reported (unsaved). It is
    stored with the first outcome that arrives later; until then the session's columns are exactly
    this report, so the sessions page shows it from them."""
    return SessionLabel(
        session=session,
        resolved=session.resolved,
        escalated=session.escalated,
        rating=session.rating,
        at=_session_end(session),
        source="session",
        via=session.channel or "",
    )


def outcomes_record(
    *, agent: Agent, outcomes: list[OutcomeIn], via: str, actor_label: str, user=None
) -> OutcomesResult:
    """Adds outcomes to their sessions' label histories and derives each session's label again, in
    one transaction (the sessions' rows locked). An outcome naming a session the agent does not have
    is reported under `unknown`; one identical to a row already in the history (a resend) under
    `duplicate` and changes nothing. One audit row says which labels changed, before and after."""
    result = OutcomesResult()
    if not outcomes:
        return result
    with transaction.atomic():
        sessions = {
            s.session_id: s
            for s in AgentSession.objects.select_for_update().filter(
                agent=agent, session_id__in={o.session_id for o in outcomes}
            )
        }
        histories: dict[int, list[SessionLabel]] = {}
        for label in SessionLabel.objects.filter(session__in=list(sessions.values())):
            histories.setdefault(label.session_id, []).append(label)
        new_rows: list[SessionLabel] = []
        touched: dict[str, AgentSession] = {}
        for outcome in outcomes:
            session = sessions.get(outcome.session_id)
            if session is None:
                result.unknown.append(outcome.session_id)
                continue
            history = histories.setdefault(session.pk, [])
            if not history:
                own = session_own_label(session)
                history.append(own)
                new_rows.append(own)
            # the same outcome again (at the same time, or with no time of its own): a resend
            same = [
                h
                for h in history
                if (h.resolved, h.escalated, h.rating, h.complaint, h.closed_by_customer, h.source) == outcome.key()
            ]
            if any(h.at == outcome.at or not outcome.at_given for h in same):
                result.duplicate.append(outcome.session_id)
                continue
            row = SessionLabel(
                session=session,
                resolved=outcome.resolved,
                escalated=outcome.escalated,
                rating=outcome.rating,
                complaint=outcome.complaint,
                closed_by_customer=outcome.closed_by_customer,
                at=outcome.at,
                source=outcome.source,
                via=via[:100],
            )
            history.append(row)
            new_rows.append(row)
            touched[session.session_id] = session
            result.applied.append(outcome.session_id)
        SessionLabel.objects.bulk_create(new_rows)
        before: dict[str, dict[str, Any]] = {}
        after: dict[str, dict[str, Any]] = {}
        changed: list[AgentSession] = []
        for session_id, session in touched.items():
            label = final_label(agent, session, histories[session.pk])
            old = {
                "resolved": session.resolved,
                "escalated": session.escalated,
                "rating": session.rating,
                "pendingUntil": session.label_pending_until.isoformat() if session.label_pending_until else None,
            }
            new = {
                "resolved": label.resolved,
                "escalated": label.escalated,
                "rating": label.rating,
                "pendingUntil": label.pending_until.isoformat() if label.pending_until else None,
            }
            if old != new:
                session.resolved, session.escalated, session.rating = label.resolved, label.escalated, label.rating
                session.label_pending_until = label.pending_until
                changed.append(session)
                before[session_id], after[session_id] = old, new
        AgentSession.objects.bulk_update(changed, ["resolved", "escalated", "rating", "label_pending_until"])
        if result.applied:
            AuditEvent.objects.create(
                action=AuditEvent.Action.OUTCOMES,
                actor=user,
                actor_label=actor_label[:150],
                agent=agent,
                reason=f"{formatting.count(len(result.applied), 'outcomes')} via {via}: {formatting.count(len(changed), 'labels')} changed",
                before=dict(list(before.items())[:200]),
                after=dict(list(after.items())[:200]),
            )
    return result


def session_labels_recompute(*, agent: Agent) -> int:
    """Derives every session's label of the agent again (after its label rule changed). Sessions
    without a history get the complaint window's pending time; the others their whole history's
    label. Returns how many sessions changed. The caller holds the agent's row lock."""
    changed = 0
    no_history = AgentSession.objects.filter(agent=agent, labels__isnull=True)
    if agent.complaint_window_days:
        window = timedelta(days=agent.complaint_window_days)
        rows = []
        for session in no_history.only("pk", "ended_at", "received_at", "label_pending_until"):
            pending = _session_end(session) + window
            if session.label_pending_until != pending:
                session.label_pending_until = pending
                rows.append(session)
        AgentSession.objects.bulk_update(rows, ["label_pending_until"], batch_size=1000)
        changed += len(rows)
    else:
        changed += no_history.exclude(label_pending_until=None).update(label_pending_until=None)
    histories: dict[int, list[SessionLabel]] = {}
    for label in SessionLabel.objects.filter(session__agent=agent):
        histories.setdefault(label.session_id, []).append(label)
    rows = []
    for session in AgentSession.objects.filter(pk__in=list(histories)):
        label = final_label(agent, session, histories[session.pk])
        if (session.resolved, session.escalated, session.rating, session.label_pending_until) != (
            label.resolved,
            label.escalated,
            label.rating,
            label.pending_until,
        ):
            session.resolved, session.escalated, session.rating = label.resolved, label.escalated, label.rating
            session.label_pending_until = label.pending_until
            rows.append(session)
    AgentSession.objects.bulk_update(rows, ["resolved", "escalated", "rating", "label_pending_until"], batch_size=1000)
    return changed + len(rows)


# ---------------------------------------------------------------------------------------------- mining


def label_final_q(now: datetime) -> Q:
    """Sessions whose label is final at `now` (the miner reads only these)."""
    return Q(label_pending_until__isnull=True) | Q(label_pending_until__lte=now)


def sessions_waiting(agent: Agent, now: datetime) -> dict[str, Any]:
    """What a mining run reports of the sessions it left out for their label: how many wait for the
    complaint window to close, how many have no outcome at all, and the first ids of each."""
    pending = AgentSession.objects.filter(agent=agent, label_pending_until__gt=now)
    unlabelled = AgentSession.objects.filter(agent=agent, resolved__isnull=True).filter(label_final_q(now))
    return {
        "awaitingLabel": pending.count(),
        "awaitingLabelSessions": list(
            pending.order_by("label_pending_until", "pk").values_list("session_id", flat=True)[:WAITING_NAMED]
        ),
        "withoutOutcome": unlabelled.count(),
        "withoutOutcomeSessions": list(
            unlabelled.order_by("-ended_at", "-pk").values_list("session_id", flat=True)[:WAITING_NAMED]
        ),
    }


def waiting_report_entry(waiting: Mapping[str, Any]) -> dict[str, Any] | None:
    """The run report's line (for the whole agent) naming the sessions left out for their label."""
    pending, unlabelled = waiting["awaitingLabelSessions"], waiting["withoutOutcomeSessions"]
    if not pending and not unlabelled:
        return None
    parts = []
    if pending:
        more = waiting["awaitingLabel"] - len(pending)
        parts.append(
            f"{waiting['awaitingLabel']} wait for the complaint window to close: {', '.join(pending)}"
            + (f" and {more} more" if more > 0 else "")
        )
    if unlabelled:
        without = waiting.get("withoutOutcome", len(unlabelled))
        more = without - len(unlabelled)
        parts.append(
            f"{without} have no outcome at all yet (newest first): {', '.join(unlabelled)}"
            + (f" and {more} more" if more > 0 else "")
        )
    figures = {"awaitingLabel": waiting["awaitingLabel"], "withoutOutcome": waiting.get("withoutOutcome", 0)}
    return {
        "intent": None,
        "status": "not mined: no final label",
        "reason": "Sessions without a final label are not mined; " + "; ".join(parts) + ".",
        # the counts the line names, each only when there is one (never "0 waiting" beside a list)
        "figures": {key: count for key, count in figures.items() if count},
    }
