"""What every lifecycle change leaves behind: the audit row (with its required reason) and the
signals sent after commit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from ..models import Agent, AuditEvent, Procedure, ProcedureVersion
from ..signals import active_set_changed, version_status_changed


def audit(
    *,
    action: str,
    actor=None,
    actor_label: str = "",
    agent: Agent | None = None,
    procedure: Procedure | None = None,
    version: ProcedureVersion | None = None,
    reason: str = "",
    before: dict | None = None,
    after: dict | None = None,
) -> AuditEvent:
    if version is not None and procedure is None:
        procedure = version.procedure
    if procedure is not None and agent is None:
        agent = procedure.agent
    return AuditEvent.objects.create(
        action=action,
        actor=actor if actor is not None and getattr(actor, "is_authenticated", False) else None,
        actor_label=actor_label,
        agent=agent,
        procedure=procedure,
        version=version,
        reason=reason,
        before=before or {},
        after=after or {},
    )


def _status_snapshot(version: ProcedureVersion) -> dict[str, Any]:
    return {"version": version.number, "status": version.status}


def _on_commit(callback: Callable[[], None]) -> None:
    transaction.on_commit(callback, robust=True)


def _notify_active_set_changed(agent_id: int) -> None:
    # The agent API computes its ETag from the rows, so there is no cache to bust; hooks that other
    # parts register (notifications, metrics) listen to this signal.

    active_set_changed.send(sender=Agent, agent_id=agent_id)


def active_set_changed_on_commit(agent_id: int) -> None:
    """After commit, tells the listeners (`active_set_changed`) that what `agent_id` is served may
    have changed: for writes that change no status but the served set (scope, agent settings)."""
    _on_commit(lambda: _notify_active_set_changed(agent_id))


def _notify_status_changed(version_id: int, action: str, user, reason: str) -> None:
    user_id = user.pk if user is not None and getattr(user, "is_authenticated", False) else None
    version_status_changed.send(
        sender=ProcedureVersion, version_id=version_id, action=action, user_id=user_id, reason=reason
    )


def required_reason(reason: str | None, what: str) -> str:
    """The reason of a decision, stripped; refused (a ValidationError on `reason`) when empty."""
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": f"{what} needs a reason."})
    return reason


def _notify_after_commit(locked: ProcedureVersion, action: str, user, reason: str) -> None:
    """After commit: the agent's served set changed, and `locked` changed status by `action`."""
    agent_id, version_id = locked.procedure.agent_id, locked.pk
    _on_commit(lambda: _notify_active_set_changed(agent_id))
    _on_commit(lambda: _notify_status_changed(version_id, action, user, reason))
