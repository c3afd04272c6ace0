"""OTLP sessions whose storing fails: retried with back-off, then dead-lettered (docs/operations.md
"OTLP sessions that fail").

A session fails when building or storing it raises (a fault of ours or of the database, not a
refusal: a session the parser refuses is marked refused at once and never retried). The flush
(library/ingest/otlp.py `sessions_flush`) catches the fault per session, so the agent's other
sessions, and every other agent's, are stored. The failure is an `OtlpFlushFailure` row:

- attempt n failed → the session is tried again after PROCMEM_OTLP_FLUSH_RETRY_SECONDS × 2^(n-1)
  (at most an hour); its spans keep waiting meanwhile;
- after PROCMEM_OTLP_FLUSH_MAX_ATTEMPTS attempts it is **dead-lettered**: its spans leave the
  waiting set (state `dead`), new spans of it are rejected, and it stays until an operator retries
  it (`session_retry`: the ops page's OTLP panel, `manage.py otlp_dead_letters --retry`) once the
  cause is fixed; a retry starts the attempts again;
- stored (or refused) at last → the row goes.

An agent whose whole flush fails (outside any one session) gets a row with an empty session id,
the same back-off, never dead-lettered. `error` holds the exception's class and the place it was
raised, never a value from the spans; the traceback goes to the log.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from .. import formatting
from ..models import Agent, AuditEvent, OtlpFlushFailure, OtlpSpan
from ..permissions import user_can_manage_agent
from ..services.events import audit

logger = logging.getLogger(__name__)

LONGEST_RETRY_DELAY = timedelta(hours=1)
AGENT_FLUSH = ""  # the session id of an agent's whole-flush failure


class RetryRefused(Exception):
    """The failure cannot be retried (it is not dead-lettered, or is gone)."""


def max_attempts() -> int:
    return int(getattr(settings, "PROCMEM_OTLP_FLUSH_MAX_ATTEMPTS", 5))


def retry_delay(attempts: int) -> timedelta:
    """The wait after the `attempts`-th failure: the base doubled per earlier failure, at most an hour."""
    base = float(getattr(settings, "PROCMEM_OTLP_FLUSH_RETRY_SECONDS", 60))
    return min(timedelta(seconds=base * 2 ** max(0, min(attempts - 1, 20))), LONGEST_RETRY_DELAY)


def failure_text(exc: BaseException) -> str:
    """The exception's class and the innermost place of ours that raised it: what an operator needs
    to find the fault, with none of the span's values (an exception's message may quote them)."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/library/" in f.filename or "/procmem_site/" in f.filename] or frames
    where = ""
    if ours:
        frame = ours[-1]
        where = f" in {frame.name} ({Path(frame.filename).name}:{frame.lineno})"
    return f"{type(exc).__module__}.{type(exc).__qualname__}{where}"[:300]


def in_backoff(agent: Agent, session_ids: Iterable[str], now: datetime) -> set[str]:
    """The sessions among these that wait for their next attempt, or are dead-lettered."""
    ids = [s for s in session_ids if s]
    if not ids:
        return set()
    return set(
        OtlpFlushFailure.objects.filter(agent=agent, session_id__in=ids)
        .filter(Q(state=OtlpFlushFailure.State.DEAD) | Q(next_attempt_at__gt=now))
        .values_list("session_id", flat=True)
    )


def dead_lettered(agent: Agent, session_ids: Iterable[str]) -> set[str]:
    ids = [s for s in session_ids if s]
    if not ids:
        return set()
    return set(
        OtlpFlushFailure.objects.filter(agent=agent, session_id__in=ids, state=OtlpFlushFailure.State.DEAD).values_list(
            "session_id", flat=True
        )
    )


def failures_record(
    *, agent: Agent, failed: Mapping[str, str], traces: Mapping[str, list[str]], now: datetime
) -> list[str]:
    """Counts one failed attempt for each of these sessions (session id → failure_text), sets its
    next attempt, and dead-letters the ones out of attempts (their spans: state dead). Returns the
    sessions dead-lettered now. The caller holds the sessions' locks inside its transaction."""
    if not failed:
        return []
    existing = {
        f.session_id: f
        for f in OtlpFlushFailure.objects.select_for_update().filter(agent=agent, session_id__in=list(failed))
    }
    dead: list[str] = []
    limit = max_attempts()
    for session_id, error in failed.items():
        row = existing.get(session_id) or OtlpFlushFailure(
            agent=agent, session_id=session_id, first_failed_at=now, attempts=0
        )
        row.attempts += 1
        row.error = error[:300]
        row.last_failed_at = now
        row.trace_ids = sorted(set(row.trace_ids or []) | set(traces.get(session_id, [])))
        if row.attempts >= limit:
            row.state, row.next_attempt_at = OtlpFlushFailure.State.DEAD, None
            dead.append(session_id)
        else:
            row.state, row.next_attempt_at = OtlpFlushFailure.State.RETRYING, now + retry_delay(row.attempts)
        row.save()
        logger.error(
            "OTLP session %s of agent %s failed to be stored (attempt %d of %d): %s%s",
            session_id,
            agent.name,
            row.attempts,
            limit,
            row.error,
            "; dead-lettered" if session_id in dead else f"; next attempt at {row.next_attempt_at:%H:%M:%S}",
        )
        if session_id in dead:
            OtlpSpan.objects.filter(agent=agent, trace_id__in=row.trace_ids, state=OtlpSpan.State.PENDING).update(
                state=OtlpSpan.State.DEAD, session_id=session_id, note=f"dead-lettered: {row.error}"[:300]
            )
    return dead


def failures_clear(*, agent: Agent, session_ids: Iterable[str]) -> int:
    """Drops the failure rows of sessions stored (or refused) at last."""
    ids = [s for s in session_ids if s]
    if not ids:
        return 0
    return OtlpFlushFailure.objects.filter(agent=agent, session_id__in=ids).delete()[0]


# ---------------------------------------------------------------------------------------------- whole agents


def agents_failing() -> dict[int, datetime | None]:
    """Agents whose whole flush failed last time → when it is tried again."""
    return dict(OtlpFlushFailure.objects.filter(session_id=AGENT_FLUSH).values_list("agent_id", "next_attempt_at"))


def agent_flush_failed(*, agent_id: int, exc: BaseException, now: datetime) -> OtlpFlushFailure:
    """Counts a failure of an agent's whole flush (logged with its traceback by the caller)."""
    with transaction.atomic():
        row, created = OtlpFlushFailure.objects.select_for_update().get_or_create(
            agent_id=agent_id,
            session_id=AGENT_FLUSH,
            defaults={"first_failed_at": now, "last_failed_at": now, "attempts": 0},
        )
        row.attempts += 1
        row.error = failure_text(exc)
        row.last_failed_at = now
        row.next_attempt_at = now + retry_delay(row.attempts)
        row.save()
    return row


def agent_flush_ok(agent_id: int) -> None:
    OtlpFlushFailure.objects.filter(agent_id=agent_id, session_id=AGENT_FLUSH).delete()


# ---------------------------------------------------------------------------------------------- operators


def failures_for(agents) -> list[OtlpFlushFailure]:
    """The failure rows of these agents (a queryset or list), dead-lettered first, for the ops page."""
    return list(
        OtlpFlushFailure.objects.filter(agent__in=agents)
        .select_related("agent")
        .order_by(F("state").desc(), "agent__name", "-last_failed_at")
    )


def session_retry(*, failure: OtlpFlushFailure, user=None, actor_label: str = "") -> OtlpFlushFailure:
    """Puts a dead-lettered session back among the waiting ones, with its attempts counted from
    zero, for the next flush (the caller may flush at once). Who may not manage the agent gets
    PermissionDenied; a session no longer dead-lettered, RetryRefused. One audit row."""

    if user is not None and not user_can_manage_agent(user, failure.agent):
        raise PermissionDenied(f"You may not retry OTLP sessions of {failure.agent.name}.")
    with transaction.atomic():
        row = OtlpFlushFailure.objects.select_for_update().filter(pk=failure.pk).first()
        if row is None or row.state != OtlpFlushFailure.State.DEAD:
            raise RetryRefused(
                f"OTLP session {failure.session_id!r} of {failure.agent.name} is not dead-lettered (any more)."
            )
        before = {"session": row.session_id, "attempts": row.attempts, "error": row.error}
        spans = OtlpSpan.objects.filter(agent_id=row.agent_id, trace_id__in=row.trace_ids, state=OtlpSpan.State.DEAD)
        count = spans.update(state=OtlpSpan.State.PENDING, note="")
        row.state, row.attempts, row.next_attempt_at = OtlpFlushFailure.State.RETRYING, 0, timezone.now()
        row.save(update_fields=["state", "attempts", "next_attempt_at"])
        audit(
            action=AuditEvent.Action.OTLP_RETRY,
            actor=user,
            actor_label=actor_label,
            agent=row.agent,
            reason=f"OTLP session {row.session_id} retried ({formatting.count(count, 'spans')} waiting again)",
            before=before,
            after={"session": row.session_id, "spans": count},
        )
    return row


__all__ = [
    "RetryRefused",
    "failure_text",
    "failures_record",
    "failures_clear",
    "in_backoff",
    "dead_lettered",
    "agents_failing",
    "agent_flush_failed",
    "agent_flush_ok",
    "failures_for",
    "session_retry",
]
