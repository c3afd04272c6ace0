"""Figures of the review decisions, from the audit log (append-only, so they never drift): each
reviewer's approval rate and median time to decision, and the bad-write escape rate.

- A decision is an `approve` or `reject` audit row by a person on one of the agent's versions, made
  in the window; time to decision runs from the version's creation (the candidate) to that row. A
  candidate rejected because someone edited it ("Superseded by vN": version_revise writes the new
  version, based on it, and the rejection in one transaction) is not a decision.
- A bad write escaped when a version approved in the window was retired, rolled back (the version
  a rollback replaced: its `auto_retire` row is followed by the procedure's `rollback` row, where
  a newer approval's is followed by an `approve` row) or erased
  within ESCAPE_DAYS of its approval. The rate counts approvals at least ESCAPE_DAYS old (earlier
  ones may still escape); younger ones are reported as pending, and escapes among them listed.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Any

from django.db.models import Exists, OuterRef, Subquery
from django.utils import timezone

from library.models import Agent, AuditEvent, ProcedureVersion

from .quality import rate_dict
from .rates import Rate

ESCAPE_DAYS = 14
# version_revise writes the new version and the superseded candidate's rejection in one
# transaction; the audit row follows the new version's creation by milliseconds.
SUPERSEDED_WITHIN = timedelta(seconds=60)
REMOVALS = (AuditEvent.Action.RETIRE, AuditEvent.Action.ERASE, AuditEvent.Action.AUTO_RETIRE)
ACTIVATIONS = (AuditEvent.Action.APPROVE, AuditEvent.Action.ROLLBACK)


def _bounds(start: date, end: date) -> tuple[datetime, datetime]:
    return (
        timezone.make_aware(datetime.combine(start, time.min)),
        timezone.make_aware(datetime.combine(end + timedelta(days=1), time.min)),
    )


@dataclass
class ReviewerFigures:
    user: str
    approval: Rate  # approvals of decisions
    median_hours: float | None

    @property
    def approved(self) -> int:
        return self.approval.hits

    @property
    def rejected(self) -> int:
        return self.approval.total - self.approval.hits

    def to_dict(self) -> dict[str, Any]:
        return {
            "user": self.user,
            "decisions": self.approval.total,
            "approved": self.approved,
            "rejected": self.rejected,
            "approvalRate": rate_dict(self.approval),
            "medianHoursToDecision": self.median_hours,
        }


def reviewer_figures(agent: Agent, start: date, end: date) -> list[ReviewerFigures]:
    """Per person who decided on the agent's candidates in [start, end], most decisions first (one query)."""
    low, high = _bounds(start, end)
    superseded = ProcedureVersion.objects.filter(
        based_on_id=OuterRef("version_id"),
        created_at__lte=OuterRef("at"),
        created_at__gte=OuterRef("at") - SUPERSEDED_WITHIN,
    )
    rows = (
        AuditEvent.objects.filter(
            agent=agent,
            action__in=(AuditEvent.Action.APPROVE, AuditEvent.Action.REJECT),
            actor__isnull=False,
            version__isnull=False,
            at__gte=low,
            at__lt=high,
        )
        .annotate(superseded=Exists(superseded))
        .values_list("actor__username", "action", "at", "version__created_at", "superseded")
    )
    decided: dict[str, list[tuple[bool, float]]] = defaultdict(list)
    for username, action, at, created_at, was_superseded in rows:
        if action == AuditEvent.Action.REJECT and was_superseded:
            continue
        decided[username].append((action == AuditEvent.Action.APPROVE, (at - created_at).total_seconds() / 3600))
    figures = [
        ReviewerFigures(
            user=username,
            approval=Rate(sum(approved for approved, _ in decisions), len(decisions)),
            median_hours=statistics.median(hours for _, hours in decisions),
        )
        for username, decisions in decided.items()
    ]
    return sorted(figures, key=lambda f: (-f.approval.total, f.user))


@dataclass(frozen=True)
class Escape:
    version_id: int
    label: str
    approved_at: datetime
    removed_at: datetime
    how: str  # retired, rolled back, erased

    @property
    def days_after(self) -> float:
        return (self.removed_at - self.approved_at).total_seconds() / 86400

    def to_dict(self) -> dict[str, Any]:
        return {
            "versionPk": self.version_id,
            "version": self.label,
            "how": self.how,
            "approvedAt": self.approved_at.isoformat(),
            "removedAt": self.removed_at.isoformat(),
            "daysAfterApproval": round(self.days_after, 2),
        }


@dataclass
class EscapeFigures:
    rate: Rate  # escaped of the approvals at least ESCAPE_DAYS old
    pending: int  # approvals younger than ESCAPE_DAYS that have not escaped (yet)
    escapes: list[Escape] = field(default_factory=list)  # every escape of an approval in the window

    def to_dict(self) -> dict[str, Any]:
        return {
            **rate_dict(self.rate),
            "withinDays": ESCAPE_DAYS,
            "pending": self.pending,
            "escapes": [e.to_dict() for e in self.escapes],
        }


def escape_figures(agent: Agent, start: date, end: date, *, now: datetime | None = None) -> EscapeFigures:
    """The bad-write escape rate of the approvals made in [start, end] (two queries)."""
    now = now or timezone.now()
    low, high = _bounds(start, end)
    approvals = {
        version_id: (at, f"{key} v{number}")
        for version_id, at, key, number in AuditEvent.objects.filter(
            agent=agent, action=AuditEvent.Action.APPROVE, version__isnull=False, at__gte=low, at__lt=high
        ).values_list("version_id", "at", "version__procedure__key", "version__number")
    }
    # what made the procedure's next version ACTIVE: the services retire the current version and
    # activate the next one in one transaction, so it is the next activation row of the procedure
    next_activation = (
        AuditEvent.objects.filter(procedure_id=OuterRef("procedure_id"), action__in=ACTIVATIONS, id__gt=OuterRef("id"))
        .order_by("id")
        .values("action")[:1]
    )
    first_removal: dict[int, tuple[datetime, str]] = {}
    for version_id, action, at, replaced_by in (
        AuditEvent.objects.filter(version_id__in=approvals, action__in=REMOVALS, at__gte=low)
        .annotate(replaced_by=Subquery(next_activation))
        .order_by("at", "id")
        .values_list("version_id", "action", "at", "replaced_by")
    ):
        if action == AuditEvent.Action.AUTO_RETIRE and replaced_by != AuditEvent.Action.ROLLBACK:
            continue  # replaced by a newer approval: not a bad write
        if version_id not in first_removal and at >= approvals[version_id][0]:
            how = {AuditEvent.Action.RETIRE: "retired", AuditEvent.Action.ERASE: "erased"}.get(action, "rolled back")
            first_removal[version_id] = (at, how)
    matured = escaped = pending = 0
    escapes: list[Escape] = []
    for version_id, (approved_at, label) in approvals.items():
        removal = first_removal.get(version_id)
        escaped_now = removal is not None and removal[0] - approved_at <= timedelta(days=ESCAPE_DAYS)
        if escaped_now:
            escapes.append(Escape(version_id, label, approved_at, removal[0], removal[1]))
        if now - approved_at >= timedelta(days=ESCAPE_DAYS):
            matured += 1
            escaped += escaped_now
        elif not escaped_now:
            pending += 1
    escapes.sort(key=lambda e: e.approved_at)
    return EscapeFigures(rate=Rate(escaped, matured), pending=pending, escapes=escapes)
