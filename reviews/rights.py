"""Granting rights: the one module that hands out and takes back object permissions (who may hold
what is the rulebook's, library/permissions.py).

- Approver rights on an agent: `approve_procedure` on one procedure, or `approve_agent_procedures`
  on an agent (every procedure of it, present and future), held by a user or by a group. Only a
  user with `manage_agent` on the agent (or a superuser) grants or revokes; serialised per agent.
- Rights on a namespace: `review`, `approve` or `manage` granted on a namespace hold for every
  procedure in it, of any agent. Only holders of the model permission `library.change_namespace`
  (superusers) grant and revoke; a namespace's managers do not hand out its rights; serialised per
  namespace.

Each change is atomic, row-locked, refuses a grant to oneself (`refuse_self_grant`) and is audited
(GRANT / REVOKE, `on: procedure <key>`, `agent <name>` or `namespace <name>`).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from guardian.shortcuts import assign_perm, remove_perm

from library.models import (
    Agent,
    AgentGroupObjectPermission,
    AgentUserObjectPermission,
    AuditEvent,
    Namespace,
    NamespaceGroupObjectPermission,
    NamespaceUserObjectPermission,
    Procedure,
    ProcedureGroupObjectPermission,
    ProcedureUserObjectPermission,
    ProcedureVersion,
    Status,
)
from library.permissions import user_can_grant_namespace_rights, user_can_manage_agent
from library.services import audit

PROCEDURE_PERM = "approve_procedure"
AGENT_PERM = "approve_agent_procedures"
# what a person grants on a namespace → the object permission
NAMESPACE_PERMS = {
    "review": "review_namespace_procedures",
    "approve": "approve_namespace_procedures",
    "manage": "manage_namespace_procedures",
}


def _grantee_label(grantee) -> dict[str, str]:
    if isinstance(grantee, Group):
        return {"group": grantee.name}
    return {"user": grantee.get_username()}


def _check(*, agent: Agent, procedure: Procedure | None, by) -> None:
    if procedure is not None and procedure.agent_id != agent.pk:
        raise ValidationError({"procedure": f"{procedure.key} belongs to another agent"})
    if not user_can_manage_agent(by, agent):
        raise PermissionDenied(f"You may not change approver rights of {agent.name}.")


def refuse_self_grant(*, grantee, by, where: str) -> None:
    """With PROCMEM_NO_SELF_GRANT (on unless DEBUG), nobody grants a right to themselves, directly or
    to a group they belong to: another admin must. That admin's grant is audited with both people,
    the admin as the actor and the grantee in the row."""
    if not getattr(settings, "PROCMEM_NO_SELF_GRANT", True):
        return
    if isinstance(grantee, Group):
        if by.groups.filter(pk=grantee.pk).exists():
            raise ValidationError(
                {
                    "grantee": (
                        f"You belong to group {grantee.name}: a right is never granted by its own grantee; "
                        f"another admin of {where} must grant it (PROCMEM_NO_SELF_GRANT)"
                    )
                }
            )
    elif grantee.pk == by.pk:
        raise ValidationError(
            {
                "grantee": (
                    f"A right is never granted by its own grantee: another admin of {where} must grant it to you (PROCMEM_NO_SELF_GRANT)"
                )
            }
        )


def _holds(grantee, perm: str, target) -> bool:
    """Directly assigned to this user or group (not through a group, not as a superuser)."""
    group = isinstance(grantee, Group)
    if isinstance(target, Procedure):
        model = ProcedureGroupObjectPermission if group else ProcedureUserObjectPermission
    elif isinstance(target, Namespace):
        model = NamespaceGroupObjectPermission if group else NamespaceUserObjectPermission
    else:
        model = AgentGroupObjectPermission if group else AgentUserObjectPermission
    who = {"group": grantee} if group else {"user": grantee}
    return model.objects.filter(content_object=target, permission__codename=perm, **who).exists()


def approver_right_grant(*, agent: Agent, grantee, by, procedure: Procedure | None = None, reason: str = "") -> None:
    """Grants `approve_procedure` on `procedure`, or `approve_agent_procedures` on `agent` when no
    procedure is given, to a user or group. Refuses a right that is already held, and one granted
    to oneself (`refuse_self_grant`)."""
    _check(agent=agent, procedure=procedure, by=by)
    refuse_self_grant(grantee=grantee, by=by, where=agent.name)
    if not isinstance(grantee, Group) and not grantee.is_active:
        raise ValidationError({"grantee": f"{grantee.get_username()} is deactivated"})
    target = procedure if procedure is not None else agent
    perm = PROCEDURE_PERM if procedure is not None else AGENT_PERM
    with transaction.atomic():
        Agent.objects.select_for_update().filter(pk=agent.pk).first()
        if _holds(grantee, perm, target):
            raise ValidationError({"grantee": f"{_describe(grantee)} already holds this right"})
        assign_perm(f"library.{perm}", grantee, target)
        audit(
            action=AuditEvent.Action.GRANT,
            actor=by,
            agent=agent,
            procedure=procedure,
            reason=reason,
            before={},
            after={"permission": perm, "on": _target_label(target), **_grantee_label(grantee)},
        )


def approver_right_revoke(*, agent: Agent, grantee, by, procedure: Procedure | None = None, reason: str = "") -> None:
    """Revokes a directly held approver right. Refuses a right that is not held."""
    _check(agent=agent, procedure=procedure, by=by)
    target = procedure if procedure is not None else agent
    perm = PROCEDURE_PERM if procedure is not None else AGENT_PERM
    with transaction.atomic():
        Agent.objects.select_for_update().filter(pk=agent.pk).first()
        if not _holds(grantee, perm, target):
            raise ValidationError({"grantee": f"{_describe(grantee)} does not hold this right"})
        remove_perm(f"library.{perm}", grantee, target)
        audit(
            action=AuditEvent.Action.REVOKE,
            actor=by,
            agent=agent,
            procedure=procedure,
            reason=reason,
            before={"permission": perm, "on": _target_label(target), **_grantee_label(grantee)},
            after={},
        )


def _describe(grantee) -> str:
    return f"group {grantee.name}" if isinstance(grantee, Group) else grantee.get_username()


def _target_label(target) -> str:
    if isinstance(target, Procedure):
        return f"procedure {target.key}"
    if isinstance(target, Namespace):
        return f"namespace {target.name}"
    return f"agent {target.name}"


# ---------------------------------------------------------------------------------------------- namespaces


def _namespace_perm(*, namespace: Namespace, right: str, by) -> str:
    if not user_can_grant_namespace_rights(by, namespace):
        raise PermissionDenied("Only library admins may grant or revoke rights on namespaces.")
    if right not in NAMESPACE_PERMS:
        raise ValidationError({"right": f"choose one of {', '.join(NAMESPACE_PERMS)}, not {str(right)[:40]!r}"})
    return NAMESPACE_PERMS[right]


def namespace_right_grant(*, namespace: Namespace, grantee, right: str, by, reason: str = "") -> None:
    """Grants `right` ("review", "approve" or "manage") on every procedure in `namespace` to a user
    or group. Refuses a right already held, a deactivated user and a grant to oneself
    (`refuse_self_grant`)."""
    codename = _namespace_perm(namespace=namespace, right=right, by=by)
    refuse_self_grant(grantee=grantee, by=by, where=f"namespace {namespace.name}")
    if not isinstance(grantee, Group) and not grantee.is_active:
        raise ValidationError({"grantee": f"{grantee.get_username()} is deactivated"})
    with transaction.atomic():
        locked = Namespace.objects.select_for_update().get(pk=namespace.pk)
        if _holds(grantee, codename, locked):
            raise ValidationError({"grantee": f"{_describe(grantee)} already holds {right} on {locked.name}"})
        assign_perm(f"library.{codename}", grantee, locked)
        audit(
            action=AuditEvent.Action.GRANT,
            actor=by,
            reason=reason,
            after={"permission": codename, "on": _target_label(locked), **_grantee_label(grantee)},
        )


def namespace_right_revoke(*, namespace: Namespace, grantee, right: str, by, reason: str = "") -> None:
    """Revokes a directly held right on the namespace. Refuses a right that is not held."""
    codename = _namespace_perm(namespace=namespace, right=right, by=by)
    with transaction.atomic():
        locked = Namespace.objects.select_for_update().get(pk=namespace.pk)
        if not _holds(grantee, codename, locked):
            raise ValidationError({"grantee": f"{_describe(grantee)} does not hold {right} on {locked.name}"})
        remove_perm(f"library.{codename}", grantee, locked)
        audit(
            action=AuditEvent.Action.REVOKE,
            actor=by,
            reason=reason,
            before={"permission": codename, "on": _target_label(locked), **_grantee_label(grantee)},
            after={},
        )


# ---------------------------------------------------------------------------------------------- selectors


@dataclass(frozen=True)
class Right:
    """One directly held right: `scope` is "agent" or "procedure"."""

    scope: str
    procedure: Procedure | None
    user: object | None
    group: Group | None

    @property
    def holder(self) -> str:
        return f"group {self.group.name}" if self.group else self.user.get_username()

    @property
    def kind(self) -> str:
        return "group" if self.group else "user"

    @property
    def name(self) -> str:
        return self.group.name if self.group else self.user.get_username()


@dataclass(frozen=True)
class NamedApprover:
    """A person who may approve, and through what."""

    user: object
    via: list[str]


def approver_rights(agent: Agent) -> list[Right]:
    """Every approver right held directly on the agent or on one of its procedures."""
    rights: list[Right] = []
    for row in AgentUserObjectPermission.objects.filter(
        content_object=agent, permission__codename=AGENT_PERM
    ).select_related("user"):
        rights.append(Right("agent", None, row.user, None))
    for row in AgentGroupObjectPermission.objects.filter(
        content_object=agent, permission__codename=AGENT_PERM
    ).select_related("group"):
        rights.append(Right("agent", None, None, row.group))
    for row in ProcedureUserObjectPermission.objects.filter(
        content_object__agent=agent, permission__codename=PROCEDURE_PERM
    ).select_related("user", "content_object"):
        rights.append(Right("procedure", row.content_object, row.user, None))
    for row in ProcedureGroupObjectPermission.objects.filter(
        content_object__agent=agent, permission__codename=PROCEDURE_PERM
    ).select_related("group", "content_object"):
        rights.append(Right("procedure", row.content_object, None, row.group))
    rights.sort(key=lambda r: (r.scope != "agent", r.procedure.key if r.procedure else "", r.kind, r.name))
    return rights


def named_approvers(agent: Agent, rights: list[Right] | None = None) -> dict[str | None, list[NamedApprover]]:
    """Per procedure key (None: the whole agent): the active users who may approve, with how they
    got the right (directly, through a group, as a superuser). Group rights are expanded to members."""
    rights = approver_rights(agent) if rights is None else rights
    User = get_user_model()
    group_ids = {r.group.pk for r in rights if r.group}
    members: dict[int, list] = {}
    if group_ids:
        for user in User.objects.filter(groups__in=group_ids, is_active=True).prefetch_related("groups").distinct():
            for group in user.groups.all():
                if group.pk in group_ids:
                    members.setdefault(group.pk, []).append(user)
    result: dict[str | None, dict[int, NamedApprover]] = {}
    for right in rights:
        key = right.procedure.key if right.procedure else None
        bucket = result.setdefault(key, {})
        holders = members.get(right.group.pk, []) if right.group else ([right.user] if right.user.is_active else [])
        for user in holders:
            via = f"group {right.group.name}" if right.group else "directly"
            entry = bucket.setdefault(user.pk, NamedApprover(user=user, via=[]))
            if via not in entry.via:
                entry.via.append(via)
    superusers = list(User.objects.filter(is_superuser=True, is_active=True).order_by("username"))
    agent_bucket = result.setdefault(None, {})
    for user in superusers:
        agent_bucket.setdefault(user.pk, NamedApprover(user=user, via=[])).via.append("superuser")
    return {key: sorted(bucket.values(), key=lambda a: a.user.get_username()) for key, bucket in result.items()}


def active_approvals(agent: Agent):
    """The ACTIVE versions of the agent with who approved them, when, and on which eval run."""
    return (
        ProcedureVersion.objects.filter(procedure__agent=agent, status=Status.ACTIVE)
        .select_related("procedure__intent", "approved_by", "approval_eval_run")
        .order_by("procedure__key")
    )


@dataclass(frozen=True)
class NamespaceRight:
    namespace: Namespace
    right: str  # review, approve, manage
    kind: str  # user, group
    name: str


def namespace_rights() -> list[NamespaceRight]:
    """Every right held directly on a namespace, by namespace, right and holder (two queries)."""
    right_of = {codename: right for right, codename in NAMESPACE_PERMS.items()}
    rows: list[NamespaceRight] = []
    for row in NamespaceUserObjectPermission.objects.filter(permission__codename__in=right_of).select_related(
        "content_object", "permission", "user"
    ):
        rows.append(
            NamespaceRight(row.content_object, right_of[row.permission.codename], "user", row.user.get_username())
        )
    for row in NamespaceGroupObjectPermission.objects.filter(permission__codename__in=right_of).select_related(
        "content_object", "permission", "group"
    ):
        rows.append(NamespaceRight(row.content_object, right_of[row.permission.codename], "group", row.group.name))
    order = list(NAMESPACE_PERMS)
    rows.sort(key=lambda r: (r.namespace.name, order.index(r.right), r.kind, r.name))
    return rows
