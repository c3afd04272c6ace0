"""Scope: namespaces (teams or tenants) and a procedure's governance metadata — its namespace, the
roles it is limited to, its priority and its confidence.

Scope is not content: changing it makes no new version, needs no eval and never changes a status
(nothing here can make a version ACTIVE). It does change what agents are served (namespace, roles)
and how selection breaks near-ties (priority), so every change is a named person's, row-locked and
audited, and the served sets see it at once (their fingerprint reads the scope columns).
"""

from __future__ import annotations

import re
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from ..models import (
    MAX_ROLES,
    PRIORITY_MAX,
    PRIORITY_MIN,
    ROLE_RE,
    Agent,
    AuditEvent,
    Confidence,
    Namespace,
    Procedure,
    ProcedureVersion,
    Status,
    slug_validator,
)
from ..permissions import (
    approval_holds_in,
    user_can_create_namespaces,
    user_can_grant_namespace_rights,
    user_can_manage_procedure,
    user_can_move_procedure,
)
from .errors import LifecycleError
from .events import active_set_changed_on_commit, audit, required_reason

MAX_DESCRIPTION_CHARS = 2000


def clean_roles(value: Any) -> list[str]:
    """A list of role names (lower-case slugs, at most 64 characters, at most MAX_ROLES), without
    repeats, sorted; empty means every role. A comma-separated string is read as the list."""
    if isinstance(value, str):
        value = [part for part in (p.strip() for p in value.split(",")) if part]
    if not isinstance(value, (list, tuple)):
        raise ValidationError({"roles": f"must be a list of role names, got {type(value).__name__}"})
    roles: set[str] = set()
    for index, item in enumerate(value, start=1):
        if not isinstance(item, str) or not re.fullmatch(ROLE_RE, item.strip()):
            shown = item[:80] if isinstance(item, str) else type(item).__name__
            raise ValidationError(
                {
                    "roles": f"role {index} ({shown!r}) is not a role name: lower-case letters, digits, _ and -, starting with a letter, at most 64"
                }
            )
        roles.add(item.strip())
    if len(roles) > MAX_ROLES:
        raise ValidationError({"roles": f"has {len(roles)} roles; at most {MAX_ROLES}"})
    return sorted(roles)


def clean_priority(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValidationError({"priority": f"must be a whole number from {PRIORITY_MIN} to {PRIORITY_MAX}"})
    try:
        number = int(value)
    except ValueError:
        raise ValidationError(
            {"priority": f"must be a whole number from {PRIORITY_MIN} to {PRIORITY_MAX}, got {str(value)[:40]!r}"}
        ) from None
    if not PRIORITY_MIN <= number <= PRIORITY_MAX:
        raise ValidationError({"priority": f"must be from {PRIORITY_MIN} to {PRIORITY_MAX}, got {number}"})
    return number


def clean_confidence(value: Any) -> str:
    if value not in Confidence.values:
        raise ValidationError({"confidence": f"must be one of {', '.join(Confidence.values)}, got {str(value)[:40]!r}"})
    return value


def _scope_snapshot(procedure: Procedure) -> dict[str, Any]:
    return {
        "namespace": procedure.namespace.name,
        "roles": list(procedure.roles),
        "priority": procedure.priority,
        "confidence": procedure.confidence,
    }


def _refuse_approvals_that_do_not_hold(procedure: Procedure, namespace: Namespace) -> None:
    """The approve gate of the namespace a procedure moves into: every version that is served or may
    be served without a new approval (ACTIVE, APPROVED) must have been approved by someone holding
    the approve right there; otherwise the move is refused, naming each. Caller holds the procedure's
    row lock (every status change takes it first, so no version changes status meanwhile). Retired
    versions are checked when someone rolls back to one (services.version_rollback)."""
    stranded = [
        version
        for version in ProcedureVersion.objects.filter(
            procedure=procedure, status__in=[Status.ACTIVE, Status.APPROVED]
        ).select_related("approved_by")
        if not approval_holds_in(version, namespace)
    ]
    if stranded:
        listed = "; ".join(
            f"v{v.number} is {v.get_status_display().lower()}, approved by {v.approved_by.get_username() if v.approved_by else 'nobody recorded'}"
            for v in sorted(stranded, key=lambda v: v.number)
        )
        raise LifecycleError(
            f"{procedure.key} cannot move into namespace {namespace.name}: {listed}, who does not hold the approve "
            f"right in {namespace.name}, so it would be served there without passing that namespace's approval. "
            "Retire or withdraw it first (an approver of the new namespace approves a new version after the move)."
        )


def procedure_scope_update(
    *, procedure: Procedure, user, namespace: Namespace, roles: Any, priority: Any, confidence: Any, reason: str
) -> Procedure:
    """Sets a procedure's namespace, roles, priority and confidence (all four, as given). The user
    manages the procedure; a move to another namespace needs `manage_namespace_procedures` on both
    namespaces (`user_can_move_procedure`: PermissionDenied), and is refused (LifecycleError) while
    an ACTIVE or APPROVED version's approver does not hold the approve right in the new namespace.
    Refuses an unchanged scope and an empty reason. A procedure moved out of its agent's namespace
    is no longer served to that agent (its versions keep their status). The audit row names both
    namespaces (before and after)."""
    reason = required_reason(reason, "A scope change")
    cleaned = {
        "roles": clean_roles(roles),
        "priority": clean_priority(priority),
        "confidence": clean_confidence(confidence),
    }
    if not isinstance(namespace, Namespace) or namespace.pk is None:
        raise ValidationError({"namespace": "must be an existing namespace"})
    with transaction.atomic():
        locked = Procedure.objects.select_for_update().select_related("agent", "namespace").get(pk=procedure.pk)
        if not user_can_manage_procedure(user, locked):
            raise PermissionDenied(f"You may not change the scope of {locked.key}.")
        if namespace.pk != locked.namespace_id:
            if not user_can_move_procedure(user, locked, namespace):
                raise PermissionDenied(
                    f"Moving {locked.key} from namespace {locked.namespace.name} into namespace {namespace.name} needs the "
                    "manage right on both namespaces."
                )
            _refuse_approvals_that_do_not_hold(locked, namespace)
        before = _scope_snapshot(locked)
        locked.namespace = namespace
        locked.roles, locked.priority, locked.confidence = cleaned["roles"], cleaned["priority"], cleaned["confidence"]
        after = _scope_snapshot(locked)
        if after == before:
            raise ValidationError({"__all__": "Nothing changed: the scope is already this."})
        locked.save(update_fields=["namespace", "roles", "priority", "confidence"])
        audit(action=AuditEvent.Action.SCOPE, actor=user, procedure=locked, reason=reason, before=before, after=after)
        active_set_changed_on_commit(locked.agent_id)
    procedure.namespace, procedure.roles = locked.namespace, locked.roles
    procedure.priority, procedure.confidence = locked.priority, locked.confidence
    return locked


def namespace_create(*, name: Any, description: Any = "", user, reason: str = "") -> Namespace:
    """A new namespace (slug name, unique). Holders of `library.add_namespace` (superusers) only."""
    if not user_can_create_namespaces(user):
        raise PermissionDenied("Only library admins may create namespaces.")
    if not isinstance(name, str) or not name.strip():
        raise ValidationError({"name": "A namespace needs a name."})
    name = name.strip()
    if len(name) > 64:
        raise ValidationError({"name": "is longer than 64 characters"})
    try:
        slug_validator(name)
    except ValidationError as exc:
        raise ValidationError({"name": exc.messages}) from None
    description = description.strip() if isinstance(description, str) else ""
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise ValidationError({"description": f"is longer than {MAX_DESCRIPTION_CHARS} characters"})
    with transaction.atomic():
        if Namespace.objects.select_for_update().filter(name=name).exists():
            raise ValidationError({"name": f"A namespace named {name!r} exists."})
        namespace = Namespace.objects.create(name=name, description=description)
        audit(
            action=AuditEvent.Action.NAMESPACE_CREATE,
            actor=user,
            reason=reason,
            after={"namespace": namespace.name, "description": description},
        )
    return namespace


def agent_namespace_set(*, agent, namespace: Namespace, user, reason: str) -> int:
    """Moves an agent into `namespace` (library admins: `library.change_namespace`), and with it
    its procedures that were in its old namespace, so the agent keeps being served what it was;
    procedures it had in other namespaces stay where they are. Returns how many procedures moved.
    One transaction, the agent row locked, one audit row."""
    if not user_can_grant_namespace_rights(user, namespace):
        raise PermissionDenied("Only library admins may move an agent into another namespace.")
    reason = required_reason(reason, "Moving an agent")
    with transaction.atomic():
        locked = Agent.objects.select_for_update().select_related("namespace").get(pk=agent.pk)
        old = locked.namespace
        if old.pk == namespace.pk:
            raise ValidationError({"namespace": f"{locked.name} is already in {namespace.name}."})
        moving = Procedure.objects.select_for_update().filter(agent=locked, namespace=old)
        keys = sorted(moving.values_list("key", flat=True))
        moved = moving.update(namespace=namespace)
        locked.namespace = namespace
        locked.save(update_fields=["namespace"])
        audit(
            action=AuditEvent.Action.SCOPE,
            actor=user,
            agent=locked,
            reason=reason,
            before={"agentNamespace": old.name},
            after={"agentNamespace": namespace.name, "proceduresMoved": keys},
        )
        active_set_changed_on_commit(locked.pk)
    agent.namespace = namespace
    return moved
