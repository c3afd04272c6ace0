"""How a decision writes: the lock order (agent, procedure, versions), the transaction that turns
a lost race into a DecisionConflict, and the conditional status UPDATE under the row lock."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.db import IntegrityError, OperationalError, transaction
from django.utils import timezone

from ..models import Agent, Procedure, ProcedureVersion
from .errors import DecisionConflict, LifecycleError
from .events import _status_snapshot, audit

logger = logging.getLogger("library.services")

try:  # PostgreSQL's "you lost a race" errors; SQLite serialises writers and has none
    from psycopg import errors as _pg_errors

    _LOST_RACE_ERRORS: tuple[type[BaseException], ...] = (
        _pg_errors.DeadlockDetected,
        _pg_errors.SerializationFailure,
        _pg_errors.LockNotAvailable,
    )
except ImportError:  # pragma: no cover
    _LOST_RACE_ERRORS = ()


def _set_status(
    version: ProcedureVersion,
    new_status: str,
    *,
    user,
    reason: str,
    action: str,
    note: dict[str, Any] | None = None,
    **extra,
) -> None:
    """Caller holds the row lock. A conditional UPDATE so that a racing writer is refused, not merged.
    `note`: more facts for the audit row's `after` (e.g. the eval a retirement rests on)."""
    before = _status_snapshot(version)
    now = timezone.now()
    updated = ProcedureVersion.objects.filter(pk=version.pk, status=version.status).update(
        status=new_status, status_reason=reason, status_changed_at=now, **extra
    )
    if updated != 1:
        raise LifecycleError(f"{version} changed while you were deciding; reload and try again.")
    version.status = new_status
    version.status_reason = reason
    version.status_changed_at = now
    for field, value in extra.items():
        setattr(version, field, value)
    audit(
        action=action,
        actor=user,
        version=version,
        reason=reason,
        before=before,
        after={**_status_snapshot(version), **(note or {})},
    )


def _lock_procedure(version: ProcedureVersion, *, agent_too: bool) -> None:
    """Serialises decisions: locks the procedure row before any version row, and first the agent
    row for decisions that change the active set. Every writer takes these locks in one order
    (agent, procedure, versions; mining and the rights services lock the agent first too), so two
    decisions never deadlock, and the loser of a race re-reads the state the winner committed and
    re-checks its blockers against it. The agent lock matters because an eval's baseline is the
    agent's whole active set: two approvals of two procedures of one agent must not both pass on
    one baseline. Caller holds a transaction."""
    if agent_too:
        agent_id = Procedure.objects.filter(pk=version.procedure_id).values_list("agent_id", flat=True).first()
        Agent.objects.select_for_update().filter(pk=agent_id).values_list("pk", flat=True).first()
    Procedure.objects.select_for_update().filter(pk=version.procedure_id).values_list("pk", flat=True).first()


def _decision(callback: Callable[[], ProcedureVersion]) -> ProcedureVersion:
    """Runs a decision in one transaction. The locks make a lost race a LifecycleError; should the
    database's own invariants (one ACTIVE version per procedure, the transition trigger) still refuse
    a write, that is a lost race too and is reported as one, never as a server error."""
    try:
        with transaction.atomic():
            return callback()
    except (IntegrityError, OperationalError) as exc:
        if isinstance(exc, OperationalError) and not isinstance(exc.__cause__, _LOST_RACE_ERRORS):
            raise
        logger.warning("decision refused by the database: %s", exc)
        raise DecisionConflict(
            "Another decision on this procedure was made at the same time; reload and try again."
        ) from exc


def _lock_version(version: ProcedureVersion) -> ProcedureVersion:
    return (
        ProcedureVersion.objects.select_for_update(of=("self",))
        .select_related("procedure__agent", "procedure__intent")
        .get(pk=version.pk)
    )
