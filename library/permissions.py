"""Who may do what. Object permissions go through django-guardian (per procedure, per agent for
all of its procedures, or per namespace for every procedure in it, of any agent); roles are model
permissions held through groups (see seed_demo).

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

from django.db.models import QuerySet

from .models import (  # noqa: F401 - who reads what lives beside Agent.objects.visible_to, read from here
    REVIEW_PERM,
    Agent,
    Namespace,
    Procedure,
    agents_readable_under_isolation,
    agents_with_a_right,
    namespaces_with_a_right,
    reads_are_isolated,
    reads_every_namespace,
)

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
# (reads_are_isolated, reads_every_namespace, agents_with_a_right, namespaces_with_a_right and
# agents_readable_under_isolation are in library/models/agents.py: Agent.objects.visible_to uses them)


def readable_namespaces(user) -> QuerySet[Namespace]:
    """The namespaces `user` may read about (their names, agents, procedure counts): every one when
    they read every namespace, else those they hold a right in; anonymous users none."""
    if user is None or not user.is_authenticated:
        return Namespace.objects.none()
    if reads_every_namespace(user):
        return Namespace.objects.all()
    return Namespace.objects.filter(pk__in=namespaces_with_a_right(user).values("pk"))
