"""Outcomes sent while their OTLP session still waits (docs/api.md "Outcomes that arrive later").

An OTLP session is stored only after its quiet period (library/ingest/otlp.py), so an outcome sent
right after the session — the usual order for a rating or a resolution — names a session procmem
does not have yet. Such an outcome is **held** (`HeldOutcome`) when spans of that session are
waiting, and applied through `outcomes_record` in the transaction that stores the session, as if it
had just arrived. A held outcome is dropped after PROCMEM_OTLP_HOLD_OUTCOME_SECONDS (default: the
longest wait plus ten minutes) if its session is never stored (refused, dead-lettered); the answer
to the sender says it was held, not applied.

The session's advisory lock (`lock_sessions`, also taken by the flush) orders the two: an outcome
either finds the session stored (applied at once) or is held before the flush can store it.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from .. import formatting
from ..models import Agent, AgentSession, HeldOutcome, OtlpSpan
from .outcomes import OutcomeIn, outcomes_record

logger = logging.getLogger(__name__)


def hold_seconds() -> float:
    return float(getattr(settings, "PROCMEM_OTLP_HOLD_OUTCOME_SECONDS", 0)) or (
        float(getattr(settings, "PROCMEM_OTLP_MAX_WAIT_SECONDS", 3600)) + 600
    )


def lock_sessions(agent: Agent, session_ids: Iterable[str]) -> None:
    """Transaction advisory locks on these sessions of the agent (PostgreSQL), taken in one order:
    two requests that complete the same session store it one after the other; different sessions
    do not wait for each other."""
    if connection.vendor != "postgresql":
        return
    ordered = sorted(session_ids)
    if not ordered:
        return
    with connection.cursor() as cursor:  # one statement, the locks taken in the ids' order
        cursor.execute(
            "SELECT count(pg_advisory_xact_lock(%s, hashtext(x))) FROM (SELECT unnest(%s::text[]) AS x ORDER BY 1) ids",
            [agent.pk, ordered],
        )


def waiting_sessions(agent: Agent, session_ids: Iterable[str]) -> set[str]:
    """Of these session ids, those with spans waiting: a conversation id, or the id of a trace
    whose spans carry none."""
    ids = sorted({s for s in session_ids if s})
    if not ids:
        return set()
    pending = OtlpSpan.objects.filter(agent=agent, state=OtlpSpan.State.PENDING)
    found = set(pending.filter(conversation_id__in=ids).values_list("conversation_id", flat=True).distinct())
    traces = [s for s in ids if s not in found and len(s) == 32]
    if traces:
        found |= set(
            pending.filter(trace_id__in=traces, conversation_id="").values_list("trace_id", flat=True).distinct()
        )
    return found


@dataclass
class HoldResult:
    held: list[str] = field(default_factory=list)
    applied: list[str] = field(default_factory=list)
    duplicate: list[str] = field(default_factory=list)


def outcomes_hold(
    *, agent: Agent, outcomes: list[OutcomeIn], via: str, actor_label: str, now: datetime | None = None
) -> HoldResult:
    """For outcomes whose session the agent does not have: those whose session was stored meanwhile
    are applied, those whose spans wait are held; the rest are neither (unknown)."""
    result = HoldResult()
    if not outcomes:
        return result
    now = now or timezone.now()
    ids = {o.session_id for o in outcomes}
    with transaction.atomic():
        lock_sessions(agent, ids)
        stored = set(AgentSession.objects.filter(agent=agent, session_id__in=ids).values_list("session_id", flat=True))
        if stored:
            done = outcomes_record(
                agent=agent,
                outcomes=[o for o in outcomes if o.session_id in stored],
                via=via,
                actor_label=actor_label,
            )
            result.applied, result.duplicate = done.applied, done.duplicate
        waiting = waiting_sessions(agent, ids - stored)
        rows = [
            HeldOutcome(
                agent=agent,
                session_id=o.session_id,
                outcome={**asdict(o), "at": o.at.isoformat()},
                via=via[:100],
                actor_label=actor_label[:150],
                received_at=now,
                hold_until=now + timedelta(seconds=hold_seconds()),
            )
            for o in outcomes
            if o.session_id in waiting
        ]
        HeldOutcome.objects.bulk_create(rows)
        result.held = list(dict.fromkeys(r.session_id for r in rows))
    return result


def held_outcomes_apply(*, agent: Agent, session_ids: Iterable[str]) -> int:
    """Applies the outcomes held for these sessions, just stored, and drops them. The caller holds
    the transaction that stored the sessions and their locks. Returns how many were applied."""
    ids = [s for s in session_ids if s]
    if not ids:
        return 0
    rows = list(HeldOutcome.objects.filter(agent=agent, session_id__in=ids).order_by("received_at", "pk"))
    if not rows:
        return 0
    groups: dict[tuple[str, str], list[OutcomeIn]] = defaultdict(list)
    for row in rows:
        data = dict(row.outcome)
        data["at"] = datetime.fromisoformat(data["at"])
        groups[(row.via, row.actor_label)].append(OutcomeIn(**data))
    applied = 0
    for (via, actor_label), outcomes in groups.items():
        applied += len(outcomes_record(agent=agent, outcomes=outcomes, via=via, actor_label=actor_label).applied)
    HeldOutcome.objects.filter(pk__in=[r.pk for r in rows]).delete()
    return applied


def held_outcomes_expire(now: datetime | None = None) -> int:
    """Drops the outcomes held past their time (their session was never stored)."""
    dropped = HeldOutcome.objects.filter(hold_until__lt=now or timezone.now()).delete()[0]
    if dropped:
        logger.warning(
            "Dropped %s held for OTLP sessions that were never stored", formatting.count(dropped, "outcomes")
        )
    return dropped
