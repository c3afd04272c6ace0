"""The rulebook: who may read and do what, in one module (views, the API, services and tasks ask
it; nothing else decides a right). Object permissions go through django-guardian (per procedure,
per agent for all of its procedures, or per namespace for every procedure in it, of any agent);
roles are model permissions held through groups (see seed_demo). Granting rights is
reviews/rights.py; the four-eyes rule, which is about a version's authors, is
library/services/approval.py's `four_eyes_blockers`. Besides the checks for one user and one object,
the same rules for many at once: where a user may approve (`approve_scope`, one statement for the
queue and the navigation), and who is told (`active_reviewers`, `agent_admins`,
`procedure_approvers`, `user_can_read_agent`: the recipients of reviews/notifications.py).

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
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.db import connections
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
    ProcedureVersion,
)

REVIEW_PERM = "library.review_procedureversion"
REVIEWERS_GROUP = "reviewers"


def ensure_reviewers_group():
    """The `reviewers` group holds the review permission; adding a user to it makes a reviewer.
    Created after every `migrate` (library/apps.py), so a fresh production install has it."""

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


# ---------------------------------------------------------------------------------------------- approving, page-wide


@dataclass(frozen=True)
class ApproveScope:
    """Where a user holds the approve right: every procedure (superuser), or these procedures,
    every procedure of these agents and every procedure in these namespaces — object permissions
    held directly or through a group, the
    same rules as `library.permissions.user_can_approve` (guardian checks object permissions only;
    a model-wide permission does not count)."""

    everything: bool
    procedure_ids: frozenset[int]
    agent_ids: frozenset[int]
    namespace_ids: frozenset[int] = frozenset()

    @property
    def is_empty(self) -> bool:
        return not (self.everything or self.procedure_ids or self.agent_ids or self.namespace_ids)

    def covers(self, procedure: Procedure) -> bool:
        """`user_can_approve(user, procedure)`, from the rights already read."""
        return (
            self.everything
            or procedure.pk in self.procedure_ids
            or procedure.agent_id in self.agent_ids
            or procedure.namespace_id in self.namespace_ids
        )

    def as_q(self) -> Q:
        """For a ProcedureVersion queryset. Id lists, not OR-ed subqueries: an approver holds few
        rights, and PostgreSQL plans `procedure_id IN (…)` far better than four correlated IN
        subqueries joined by OR over a large queue."""
        if self.everything:
            return Q()
        if self.is_empty:
            return Q(pk__in=[])
        # only the kinds held: an empty list matches nothing, but its lookup would still join the
        # procedures (every page's navigation counts with this)
        held = [
            Q(**{lookup: sorted(ids)})
            for lookup, ids in (
                ("procedure_id__in", self.procedure_ids),
                ("procedure__agent_id__in", self.agent_ids),
                ("procedure__namespace_id__in", self.namespace_ids),
            )
            if ids
        ]
        condition = held[0]
        for q in held[1:]:
            condition |= q
        return condition


def approve_scope(user) -> ApproveScope:
    """Where `user` may approve (`user_can_approve` for every procedure at once, for the queue's
    "waiting for me" filter, the navigation's role and the candidate page): one query, remembered
    on the user object for the rest of the request."""
    if not (user and user.is_authenticated and user.is_active):
        return ApproveScope(False, frozenset(), frozenset())
    cached = getattr(user, "_procmem_approve_scope", None)
    if cached is not None:
        return cached
    if user.is_superuser:
        scope = ApproveScope(True, frozenset(), frozenset())
    else:
        held: dict[str, set[int]] = {kind: set() for kind in _APPROVE_RIGHTS}
        sql, params = _approve_rights_sql(user.pk)
        with connections[ProcedureVersion.objects.db].cursor() as cursor:
            cursor.execute(sql, params)
            for kind, object_id in cursor.fetchall():
                held[kind].add(object_id)
        scope = ApproveScope(
            False, frozenset(held["procedure"]), frozenset(held["agent"]), frozenset(held["namespace"])
        )
    user._procmem_approve_scope = scope
    return scope


def _approve_rights_models():
    return {
        "procedure": (ProcedureUserObjectPermission, ProcedureGroupObjectPermission),
        "agent": (AgentUserObjectPermission, AgentGroupObjectPermission),
        "namespace": (NamespaceUserObjectPermission, NamespaceGroupObjectPermission),
    }


# the approve right on each kind of object (guardian object permissions of app "library")
_APPROVE_RIGHTS = {
    "procedure": "approve_procedure",
    "agent": "approve_agent_procedures",
    "namespace": "approve_namespace_procedures",
}


def _approve_rights_sql(user_id: int) -> tuple[str, list]:
    """`(kind, object id)` of every approve right the user holds, directly or through a group, as
    one statement: every page's navigation asks, and six ORM querysets joined to the permission
    and content-type tables cost more to build and plan than to run. The same rows as guardian's
    `user.has_perm(codename, obj)`, which `user_can_approve` asks. The three
    permissions and the user's groups are read once (WITH), not once per table."""

    memberships = get_user_model().groups.through._meta
    codenames = list(_APPROVE_RIGHTS.values())
    sql = (
        f"WITH rights AS (SELECT p.{Permission._meta.pk.column} AS id, p.codename FROM {Permission._meta.db_table} p"
        f" JOIN {ContentType._meta.db_table} ct ON ct.{ContentType._meta.pk.column} = p.{Permission._meta.get_field('content_type').column}"
        f" WHERE ct.app_label = %s AND p.codename IN ({', '.join(['%s'] * len(codenames))})),"
        f" memberships AS (SELECT {memberships.get_field('group').column} AS group_id FROM {memberships.db_table}"
        f" WHERE {memberships.get_field('user').column} = %s) "
    )
    params: list = ["library", *codenames, user_id]
    parts = []
    for kind, (by_user, by_group) in _approve_rights_models().items():
        for model, holder in ((by_user, "user"), (by_group, "group")):
            meta = model._meta
            held_by = (
                f"o.{meta.get_field('user').column} = %s"
                if holder == "user"
                else f"o.{meta.get_field('group').column} IN (SELECT group_id FROM memberships)"
            )
            # `kind` is one of the fixed keys of _APPROVE_RIGHTS, never input
            parts.append(
                f"SELECT '{kind}', o.{meta.get_field('content_object').column} FROM {meta.db_table} o"
                f" JOIN rights r ON r.id = o.{meta.get_field('permission').column} AND r.codename = %s WHERE {held_by}"
            )
            params += [_APPROVE_RIGHTS[kind], *([user_id] if holder == "user" else [])]
    return sql + " UNION ALL ".join(parts), params


def holds_any_approve_right(user) -> bool:
    """Whether `user` may approve anything at all (the navigation's "approver" role)."""
    return not approve_scope(user).is_empty


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


# ---------------------------------------------------------------------------------------------- who is told

MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"


def active_reviewers() -> QuerySet:
    """Active users holding the review permission (directly, through a group, or as superusers): who
    is told of new candidates and finished eval runs, and whom a mention may reach."""
    return get_user_model().objects.with_perm(REVIEW_PERM, backend=MODEL_BACKEND).filter(is_active=True)


def _object_perm_users(
    agent: Agent, agent_perms: list[str], procedure_perms: list[str], procedure_id: int | None
) -> QuerySet:
    """Active users holding one of the agent permissions on `agent` or one of the procedure
    permissions on the procedure, directly or through a group, plus the superusers."""
    User = get_user_model()
    condition = Q(is_superuser=True)
    condition |= Q(
        pk__in=AgentUserObjectPermission.objects.filter(
            content_object=agent, permission__codename__in=agent_perms
        ).values("user_id")
    )
    condition |= Q(
        groups__in=AgentGroupObjectPermission.objects.filter(
            content_object=agent, permission__codename__in=agent_perms
        ).values("group_id")
    )
    if procedure_id is not None and procedure_perms:
        condition |= Q(
            pk__in=ProcedureUserObjectPermission.objects.filter(
                content_object_id=procedure_id, permission__codename__in=procedure_perms
            ).values("user_id")
        )
        condition |= Q(
            groups__in=ProcedureGroupObjectPermission.objects.filter(
                content_object_id=procedure_id, permission__codename__in=procedure_perms
            ).values("group_id")
        )
    return User.objects.filter(condition, is_active=True).distinct()


def agent_admins(agent: Agent, procedure_id: int | None = None) -> QuerySet:
    """Who is told that a procedure was refused at load, and of a metric warning: the superusers and
    the holders of manage_agent or manage_agent_procedures on the agent, or of manage_procedure on
    the procedure (directly or through a group). A namespace's managers are not among them."""
    return _object_perm_users(agent, ["manage_agent", "manage_agent_procedures"], ["manage_procedure"], procedure_id)


def procedure_approvers(agent: Agent, procedure_id: int) -> QuerySet:
    """Who is told of a metric warning besides the admins: the superusers and the holders of
    approve_agent_procedures on the agent or approve_procedure on the procedure (directly or through
    a group). A namespace's approvers are not among them."""
    return _object_perm_users(agent, ["approve_agent_procedures"], ["approve_procedure"], procedure_id)


def user_can_read_agent(user, agent: Agent) -> bool:
    """Whether `user` may read about `agent` (agents_visible_to, for one agent): a notification or a
    mention about an agent reaches only those who may read it."""
    if user is None or not user.is_authenticated:
        return False
    return reads_every_namespace(user) or agents_visible_to(user).filter(pk=agent.pk).exists()
