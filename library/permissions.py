"""Who may do what. Object permissions go through django-guardian (per procedure, or per agent for
all of its procedures); roles are model permissions held through groups (see seed_demo).

- reviewer: `library.review_procedureversion` (model permission): edit, comment, reject, start evals;
- approver: a reviewer who also holds `approve_procedure` on the procedure or
  `approve_agent_procedures` on its agent;
- admin: `manage_procedure` / `manage_agent_procedures` (retire, roll back), `promote_procedure` /
  `promote_agent_procedures` (promotion between environments, rollouts) and `manage_agent`
  (tools, tokens, approver rights); superusers hold every permission.
"""

from __future__ import annotations

from .models import Agent, Procedure

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


def user_can_approve(user, procedure: Procedure) -> bool:
    if not (user and user.is_authenticated and user.is_active):
        return False
    return user.has_perm("library.approve_procedure", procedure) or user.has_perm(
        "library.approve_agent_procedures", procedure.agent
    )


def user_can_manage_procedure(user, procedure: Procedure) -> bool:
    if not (user and user.is_authenticated and user.is_active):
        return False
    return user.has_perm("library.manage_procedure", procedure) or user.has_perm(
        "library.manage_agent_procedures", procedure.agent
    )


def user_can_manage_agent(user, agent: Agent) -> bool:
    if not (user and user.is_authenticated and user.is_active):
        return False
    return user.has_perm("library.manage_agent", agent)


def user_can_promote(user, procedure: Procedure) -> bool:
    """Promote an APPROVED version between environments and run its production rollout (start,
    complete, roll back): `promote_procedure` on the procedure or `promote_agent_procedures` on its
    agent — a right of its own, apart from approving (what may be served) and managing (retire)."""
    if not (user and user.is_authenticated and user.is_active):
        return False
    return user.has_perm("library.promote_procedure", procedure) or user.has_perm(
        "library.promote_agent_procedures", procedure.agent
    )
