"""What the top bar shows: the user's role and counts of what waits for them."""

from __future__ import annotations

from dataclasses import dataclass

from library.models import ProcedureVersion, Status
from library.permissions import user_is_reviewer


@dataclass(frozen=True)
class Navigation:
    """waiting_for_review and waiting_for_me stop at reviews.selectors.COUNT_CAP + 1 (shown as
    "1,000+" by the count_label filter) rather than count a large queue on every page."""

    role: str
    waiting_for_review: int
    unread_notifications: int
    # candidates this user could decide as approver (permission held, not proposer nor last editor)
    waiting_for_me: int = 0
    can_review: bool = False
    refused_at_load: int = 0  # ACTIVE versions agents do not receive: their tools are missing


def role_of(user) -> str:
    from reviews.selectors import holds_any_approve_right

    if user.is_superuser:
        return "admin"
    if holds_any_approve_right(user):
        return "approver"
    if user_is_reviewer(user):
        return "reviewer"
    return "viewer"


def navigation_for(user) -> Navigation:
    from reviews.models import Notification
    from reviews.selectors import capped_count, waiting_for_approver

    role = role_of(user)
    can_review = user_is_reviewer(user)
    waiting = capped_count(ProcedureVersion.objects.filter(status=Status.CANDIDATE)) if can_review else 0
    for_me = capped_count(waiting_for_approver(user)) if role in {"approver", "admin"} else 0  # scope is cached
    unread = Notification.objects.filter(user=user, read_at__isnull=True).count()
    return Navigation(
        role=role,
        waiting_for_review=waiting,
        unread_notifications=unread,
        waiting_for_me=for_me,
        can_review=can_review,
        refused_at_load=refused_count(user),
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
