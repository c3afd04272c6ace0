"""The rulebook: who may read and do what, in one module (views, the API, services and tasks ask
it; nothing else decides a right). Object permissions go through django-guardian (per procedure,
per agent for all of its procedures, or per namespace for every procedure in it, of any agent);
roles are model permissions held through groups (see seed_demo). Granting rights is
reviews/rights.py; the four-eyes rule, which is about a version's authors, is
library/services/approval.py's `four_eyes_blockers`.

- reviewer: `library.review_procedureversion` (model permission): edit, comment, reject, start evals
  on every procedure; or `review_namespace_procedures` on a namespace: the same on its procedures;
- approver: a reviewer who also holds `approve_procedure` on the procedure,
  `approve_agent_procedures` on its agent or `approve_namespace_procedures` on its namespace;
- admin: `manage_procedure` / `manage_agent_procedures` / `manage_namespace_procedures` (retire,
  roll back, change the scope; a move to another namespace needs `manage_namespace_procedures` on
  both namespaces), `promote_procedure` / `promote_agent_procedures` (promotion between
  environments, rollouts) and `manage_agent` (tools, tokens, approver rights); superusers hold
  every permission. Namespaces are created and their rights granted by holders of the model
  permissions `library.add_namespace` and `library.change_namespace` (superusers).
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.db.models import Q, QuerySet
from guardian.core import ObjectPermissionChecker
from guardian.shortcuts import get_objects_for_user

from .models import (
    Agent,
    AgentGroupObjectPermission,
    AgentUserObjectPermission,
    Namespace,
    NamespaceGroupObjectPermission,
    NamespaceUserObjectPermission,
    Procedure,
    ProcedureGroupObjectPermission,
    ProcedureUserObjectPermission,
)

REVIEW_PERM = "library.review_procedureversion"
REVIEWERS_GROUP = "reviewers"


def ensure_reviewers_group():
    """The `reviewers` group holds the review permission; adding a user to it makes a reviewer.
    Created after every `migrate` (library/apps.py), so a fresh production install has it."""
    from django.contrib.auth.models import Group, Permission

    group, _ = Group.objects.get_or_create(name=REVIEWERS_GROUP)
    group.permissions.add(Permission.objects.get(codename="review_procedureversion", content_type__app_label="library"))
    return group


def user_is_reviewer(user) -> bool:
    return bool(user and user.is_authenticated and user.is_active and user.has_perm(REVIEW_PERM))


def _active(user) -> bool:
    return bool(user and user.is_authenticated and user.is_active)


def user_can_review(user, procedure: Procedure) -> bool:
    """A reviewer of every procedure, or of the procedure's namespace."""
    return user_is_reviewer(user) or (
        _active(user) and user.has_perm("library.review_namespace_procedures", procedure.namespace)
    )


def user_can_approve(user, procedure: Procedure, *, namespace: Namespace | None = None) -> bool:
    """`namespace`: judge as if the procedure were in that namespace (a move's destination)."""
    if not _active(user):
        return False
    return (
        user.has_perm("library.approve_procedure", procedure)
        or user.has_perm("library.approve_agent_procedures", procedure.agent)
        or user.has_perm("library.approve_namespace_procedures", namespace or procedure.namespace)
    )


def approval_holds_in(version, namespace: Namespace) -> bool:
    """Whether `version`'s approval would pass the approve gate of `namespace`: the person who
    approved it holds the approve right on its procedure judged there (the procedure's and the
    agent's rights travel with the procedure; a namespace's right holds in that namespace only).
    No recorded approver, or one who is no longer active, does not hold."""
    approver = version.approved_by
    return approver is not None and user_can_approve(approver, version.procedure, namespace=namespace)


def user_can_manage_procedure(user, procedure: Procedure, *, namespace: Namespace | None = None) -> bool:
    """`namespace`: judge as if the procedure were in that namespace (a move's destination)."""
    if not _active(user):
        return False
    return (
        user.has_perm("library.manage_procedure", procedure)
        or user.has_perm("library.manage_agent_procedures", procedure.agent)
        or user.has_perm("library.manage_namespace_procedures", namespace or procedure.namespace)
    )


def user_can_move_procedure(user, procedure: Procedure, namespace: Namespace) -> bool:
    """Moving a procedure between namespaces (a change of tenant) needs the manage right on both
    sides: `manage_namespace_procedures` on the namespace it is in and on the one it goes to. The
    procedure's and the agent's manage rights travel with the procedure, so they count for neither
    side: otherwise a right on an agent would open every namespace to its procedures (issue 42).
    Whether its approved versions may go along is the scope service's gate (`approval_holds_in`)."""
    return (
        _active(user)
        and user.has_perm("library.manage_namespace_procedures", procedure.namespace)
        and user.has_perm("library.manage_namespace_procedures", namespace)
    )


def manage_checker(user, procedures: list[Procedure]) -> Callable[[Procedure], bool]:
    """`user_can_manage_procedure` for many procedures of a page at once: the object permissions on
    the procedures, their agents and their namespaces are read in one query per kind (guardian's
    prefetch), then each answer is a lookup. Procedures not in `procedures` are asked directly."""
    if not _active(user):
        return lambda procedure: False
    checker = ObjectPermissionChecker(user)
    if procedures:
        checker.prefetch_perms(procedures)
        checker.prefetch_perms(list({p.agent_id: p.agent for p in procedures}.values()))
        checker.prefetch_perms(list({p.namespace_id: p.namespace for p in procedures}.values()))
    known = {p.pk for p in procedures}

    def may_manage(procedure: Procedure) -> bool:
        if procedure.pk not in known:
            return user_can_manage_procedure(user, procedure)
        return (
            checker.has_perm("manage_procedure", procedure)
            or checker.has_perm("manage_agent_procedures", procedure.agent)
            or checker.has_perm("manage_namespace_procedures", procedure.namespace)
        )

    return may_manage


def agents_managed_by(user) -> QuerySet[Agent]:
    """The agents `user` administers (`manage_agent`; superusers every one): their tools, tokens,
    approver rights, and the refusals at load they are told about."""
    if not _active(user):
        return Agent.objects.none()
    if user.is_superuser:
        return Agent.objects.all()
    return get_objects_for_user(user, "library.manage_agent", klass=Agent)


def user_can_create_namespaces(user) -> bool:
    return _active(user) and user.has_perm("library.add_namespace")


def user_can_grant_namespace_rights(user, namespace: Namespace | None = None) -> bool:
    """Who grants and revokes the rights on namespaces: holders of the model permission (a global
    admin; superusers). A namespace's managers do not hand out its rights themselves."""
    return _active(user) and user.has_perm("library.change_namespace")


def user_can_manage_agent(user, agent: Agent) -> bool:
    if not (user and user.is_authenticated and user.is_active):
        return False
    return user.has_perm("library.manage_agent", agent)


def user_can_promote(user, procedure: Procedure) -> bool:
    """Promote an APPROVED version between environments and run its production rollout (start,
    complete, roll back): `promote_procedure` on the procedure or `promote_agent_procedures` on its
    agent — a right of its own, apart from approving (what may be served) and managing (retire)."""
    if not _active(user):
        return False
    return user.has_perm("library.promote_procedure", procedure) or user.has_perm(
        "library.promote_agent_procedures", procedure.agent
    )


# ---------------------------------------------------------------------------------------------- reading


def reads_are_isolated() -> bool:
    """Read isolation by namespace (PROCMEM_NAMESPACE_READ_ISOLATION, off by default)."""
    return bool(getattr(settings, "NAMESPACE_READ_ISOLATION", False))


def reads_every_namespace(user) -> bool:
    """Whether `user` (signed in) reads every agent: always with isolation off; with it on, only
    superusers and global reviewers (the `reviewers` group's model permission)."""
    return not reads_are_isolated() or user.is_superuser or (user.is_active and user.has_perm(REVIEW_PERM))


def _held(user) -> tuple[QuerySet[Namespace], QuerySet[Agent], QuerySet[Procedure]]:
    """The namespaces, agents and procedures `user` holds an object permission on, directly or
    through a group (any permission: review, approve, manage, promote), as subqueries."""
    groups = user.groups.all()
    namespaces = Namespace.objects.filter(
        Q(pk__in=NamespaceUserObjectPermission.objects.filter(user=user).values("content_object_id"))
        | Q(pk__in=NamespaceGroupObjectPermission.objects.filter(group__in=groups).values("content_object_id"))
    )
    agents = Agent.objects.filter(
        Q(pk__in=AgentUserObjectPermission.objects.filter(user=user).values("content_object_id"))
        | Q(pk__in=AgentGroupObjectPermission.objects.filter(group__in=groups).values("content_object_id"))
    )
    procedures = Procedure.objects.filter(
        Q(pk__in=ProcedureUserObjectPermission.objects.filter(user=user).values("content_object_id"))
        | Q(pk__in=ProcedureGroupObjectPermission.objects.filter(group__in=groups).values("content_object_id"))
    )
    return namespaces, agents, procedures


def agents_with_a_right(user) -> QuerySet[Agent]:
    """Agents on which `user` holds a right: on the agent, one of its procedures, its namespace or
    a namespace one of its procedures is in (the operations pages' audience, reviews.access)."""
    namespaces, agents, procedures = _held(user)
    held_namespaces = namespaces.values("pk")
    return Agent.objects.filter(
        Q(pk__in=agents.values("pk"))
        | Q(pk__in=procedures.values("agent_id"))
        | Q(namespace__in=held_namespaces)
        | Q(pk__in=Procedure.objects.filter(namespace__in=held_namespaces).values("agent_id"))
    )


def namespaces_with_a_right(user) -> QuerySet[Namespace]:
    """Namespaces `user` holds a right in: a right on the namespace, on an agent in it or on a
    procedure in it."""
    namespaces, agents, procedures = _held(user)
    return Namespace.objects.filter(
        Q(pk__in=namespaces.values("pk"))
        | Q(pk__in=agents.values("namespace_id"))
        | Q(pk__in=procedures.values("namespace_id"))
    )


def agents_readable_under_isolation(user) -> QuerySet[Agent]:
    """With read isolation on, the agents a user who does not read everything may read: every agent
    of a namespace they hold a right in, and every agent they hold a right on (through one of its
    procedures, possibly scoped to another namespace)."""
    return Agent.objects.filter(
        Q(namespace__in=namespaces_with_a_right(user).values("pk")) | Q(pk__in=agents_with_a_right(user).values("pk"))
    )


def agents_visible_to(user) -> QuerySet[Agent]:
    """The agents `user` may read. Anonymous users: none. By default every signed-in member of
    the library reads every agent (the table unfiltered: reviews.access.every_agent's fast path).
    With read isolation by namespace on (settings.NAMESPACE_READ_ISOLATION), a user who is neither
    a superuser nor a global reviewer reads only the agents of the namespaces they hold a right in
    (agents_readable_under_isolation). Approve/retire rights are object permissions, checked per
    action."""
    if user is None or not user.is_authenticated:
        return Agent.objects.none()
    if reads_every_namespace(user):
        return Agent.objects.all()
    return Agent.objects.filter(pk__in=agents_readable_under_isolation(user).values("pk"))


def operable_agents(user) -> QuerySet[Agent]:
    """Agents whose operations pages `user` may see: superusers and reviewers every visible one;
    others those they hold a right on (agents_with_a_right)."""
    agents = agents_visible_to(user)
    if not user.is_authenticated:
        return agents.none()
    if user.is_superuser or user_is_reviewer(user):
        return agents
    # a subquery, not a join: callers annotate counts over procedures, which a join would skew
    return agents.filter(pk__in=agents_with_a_right(user).values("pk"))


def readable_namespaces(user) -> QuerySet[Namespace]:
    """The namespaces `user` may read about (their names, agents, procedure counts): every one when
    they read every namespace, else those they hold a right in; anonymous users none."""
    if user is None or not user.is_authenticated:
        return Namespace.objects.none()
    if reads_every_namespace(user):
        return Namespace.objects.all()
    return Namespace.objects.filter(pk__in=namespaces_with_a_right(user).values("pk"))
