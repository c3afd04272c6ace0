"""What the top bar shows: the user's role and counts of what waits for them."""

from __future__ import annotations

from dataclasses import dataclass

from library.models import ProcedureVersion, Status
from library.permissions import user_is_reviewer


@dataclass(frozen=True)
class Navigation:
    role: str
    waiting_for_review: int
    unread_notifications: int
    refused_at_load: int = 0  # ACTIVE versions agents do not receive: their tools are missing


def role_of(user) -> str:
    if user.is_superuser:
        return "admin"
    from guardian.shortcuts import get_objects_for_user

    if get_objects_for_user(user, ["library.approve_procedure"], accept_global_perms=False).exists() or get_objects_for_user(
        user, ["library.approve_agent_procedures"], accept_global_perms=False
    ).exists():
        return "approver"
    if user_is_reviewer(user):
        return "reviewer"
    return "viewer"


def navigation_for(user) -> Navigation:
    from reviews.models import Notification

    waiting = ProcedureVersion.objects.filter(status=Status.CANDIDATE).count() if user_is_reviewer(user) else 0
    unread = Notification.objects.filter(user=user, read_at__isnull=True).count()
    return Navigation(
        role=role_of(user), waiting_for_review=waiting, unread_notifications=unread, refused_at_load=refused_count(user)
    )


def refused_count(user) -> int:
    """Unresolved refusals at load on the agents this user manages (superusers: all agents)."""
    from guardian.shortcuts import get_objects_for_user

    from library.models import Agent, LoadRefusal
    from library.serving import unresolved_refusals

    if not LoadRefusal.objects.exists():  # the common case costs one cheap query
        return 0
    agents = Agent.objects.all() if user.is_superuser else get_objects_for_user(user, "library.manage_agent", klass=Agent)
    return len(unresolved_refusals(agents=agents))
