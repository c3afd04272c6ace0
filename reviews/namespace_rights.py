"""Rights per namespace: `review`, `approve` or `manage` granted on a namespace hold for every
procedure in it, of any agent (django-guardian object permissions on `Namespace`, held by a user or
a group; `library.permissions` and `reviews.access` honour them).

Only holders of the model permission `library.change_namespace` (superusers) grant and revoke; a
namespace's managers do not hand out its rights. Each change is atomic, serialised per namespace by
a row lock, and audited (GRANT / REVOKE, `on: namespace <name>`).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from guardian.shortcuts import assign_perm, remove_perm

from library.models import AuditEvent, Namespace, NamespaceGroupObjectPermission, NamespaceUserObjectPermission
from library.permissions import user_can_grant_namespace_rights
from library.services import audit

from .rights import refuse_self_grant

# what a person grants → the object permission on the namespace
NAMESPACE_PERMS = {
    "review": "review_namespace_procedures",
    "approve": "approve_namespace_procedures",
    "manage": "manage_namespace_procedures",
}


def _who(grantee) -> dict[str, str]:
    return {"group": grantee.name} if isinstance(grantee, Group) else {"user": grantee.get_username()}


def _describe(grantee) -> str:
    return f"group {grantee.name}" if isinstance(grantee, Group) else grantee.get_username()


def _holds(grantee, codename: str, namespace: Namespace) -> bool:
    """Directly assigned to this user or group (not through a group, not as a superuser)."""
    if isinstance(grantee, Group):
        rows = NamespaceGroupObjectPermission.objects.filter(group=grantee)
    else:
        rows = NamespaceUserObjectPermission.objects.filter(user=grantee)
    return rows.filter(content_object=namespace, permission__codename=codename).exists()


def _checked(*, namespace: Namespace, right: str, by) -> str:
    if not user_can_grant_namespace_rights(by, namespace):
        raise PermissionDenied("Only library admins may grant or revoke rights on namespaces.")
    if right not in NAMESPACE_PERMS:
        raise ValidationError({"right": f"choose one of {', '.join(NAMESPACE_PERMS)}, not {str(right)[:40]!r}"})
    return NAMESPACE_PERMS[right]


def namespace_right_grant(*, namespace: Namespace, grantee, right: str, by, reason: str = "") -> None:
    """Grants `right` ("review", "approve" or "manage") on every procedure in `namespace` to a user
    or group. Refuses a right already held, a deactivated user and a grant to oneself
    (reviews.rights.refuse_self_grant)."""
    codename = _checked(namespace=namespace, right=right, by=by)
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
            after={"permission": codename, "on": f"namespace {locked.name}", **_who(grantee)},
        )


def namespace_right_revoke(*, namespace: Namespace, grantee, right: str, by, reason: str = "") -> None:
    """Revokes a directly held right on the namespace. Refuses a right that is not held."""
    codename = _checked(namespace=namespace, right=right, by=by)
    with transaction.atomic():
        locked = Namespace.objects.select_for_update().get(pk=namespace.pk)
        if not _holds(grantee, codename, locked):
            raise ValidationError({"grantee": f"{_describe(grantee)} does not hold {right} on {locked.name}"})
        remove_perm(f"library.{codename}", grantee, locked)
        audit(
            action=AuditEvent.Action.REVOKE,
            actor=by,
            reason=reason,
            before={"permission": codename, "on": f"namespace {locked.name}", **_who(grantee)},
            after={},
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
